//! The runtime surface a numeric Rust user expects of tensors and views: constructors, element
//! access, iteration, reshaping, slicing with steps, broadcasting, splitting, formatting and
//! equality, with ndarray's names where they fit.

use tensor_dsl::{tensor, ShapeErrorKind, Tensor, TensorView, TensorViewMut};

fn counting(shape: &[usize]) -> Tensor<f64> {
    let mut next = -1.0;
    Tensor::from_fn(shape, |_| {
        next += 1.0;
        next
    })
}

fn elements(view: &TensorView<'_, f64>) -> Vec<f64> {
    view.iter().copied().collect()
}

// Constructors and whole-tensor operations.

#[test]
fn constructors() {
    assert_eq!(Tensor::<f64>::ones([2, 2]).as_slice(), &[1.0; 4]);
    assert_eq!(Tensor::full([3], 2.5f32).as_slice(), &[2.5; 3]);
    assert_eq!(
        Tensor::<f32>::eye(3).as_slice(),
        &[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
    );
    assert_eq!(Tensor::<f64>::eye(0).shape(), &[0, 0]);
    let f = Tensor::<f64>::from_shape_fn([2, 3], |ix| (ix[0] * 3 + ix[1]) as f64);
    assert_eq!(f, counting(&[2, 3]));
    // Rank 0 and zero-size.
    let scalar = Tensor::full([0usize; 0], 7.0f64);
    assert_eq!((scalar.len(), scalar[[]]), (1, 7.0));
    assert!(Tensor::<f64>::ones([2, 0, 3]).is_empty());
}

#[test]
fn fill_map_mapv() {
    let mut t = counting(&[2, 2]);
    let squares = t.map(|x| x * x);
    assert_eq!(squares.as_slice(), &[0.0, 1.0, 4.0, 9.0]);
    let labels: Tensor<String> = t.map(|x| format!("{x}"));
    assert_eq!(labels[[1, 1]], "3");
    assert_eq!(t.mapv(|x| x + 1.0).as_slice(), &[1.0, 2.0, 3.0, 4.0]);
    assert_eq!(t.mapv(|x| x as i32).as_slice(), &[0, 1, 2, 3]);
    t.mapv_inplace(|x| -x);
    assert_eq!(t.as_slice(), &[0.0, -1.0, -2.0, -3.0]);
    t.fill(5.0);
    assert_eq!(t.as_slice(), &[5.0; 4]);
    let mut empty = Tensor::<f64>::zeros([0, 4]);
    empty.fill(1.0);
    assert_eq!(empty.map(|x| x * 2.0).shape(), &[0, 4]);
}

#[test]
fn iteration_is_row_major() {
    let mut t = counting(&[2, 3]);
    assert_eq!(t.iter().copied().collect::<Vec<_>>(), t.as_slice());
    for x in &mut t {
        *x *= 10.0;
    }
    for x in t.iter_mut() {
        *x += 1.0;
    }
    let mut total = 0.0;
    for x in &t {
        total += x;
    }
    assert_eq!(total, 156.0);
    // Views iterate in row-major order of their own indices, not of the buffer.
    let transposed = t.view().permuted_axes(&[1, 0]);
    assert_eq!(elements(&transposed), [1.0, 31.0, 11.0, 41.0, 21.0, 51.0]);
    let mut seen = Vec::new();
    for x in &transposed {
        seen.push(*x);
    }
    assert_eq!(seen, elements(&transposed));
    let iter = transposed.iter();
    assert_eq!(iter.len(), 6);
    assert_eq!(iter.skip(4).len(), 2);
    // Rank 0 yields its element once; a zero-size view yields nothing.
    let scalar = Tensor::full([0usize; 0], 3.0f64);
    assert_eq!(elements(&scalar.view()), [3.0]);
    let empty = Tensor::<f64>::zeros([3, 0]);
    assert_eq!(empty.view().iter().count(), 0);
}

// Element access.

#[test]
fn indexing_by_array_and_slice() {
    let mut t = counting(&[2, 3]);
    assert_eq!(t[[1, 2]], 5.0);
    assert_eq!(t[&[1, 2][..]], 5.0);
    t[&[0, 1][..]] = -1.0;
    t[[0, 2]] = -2.0;
    assert_eq!(t.get(&[0, 1]), Some(&-1.0));
    *t.get_mut(&[0, 2]).unwrap() -= 1.0;
    assert_eq!(t[[0, 2]], -3.0);
    assert_eq!(t.get(&[2, 0]), None);
    assert_eq!(t.get(&[0]), None);

    let v = t.view().permuted_axes(&[1, 0]);
    assert_eq!(v[[2, 1]], 5.0);
    assert_eq!(v[&[1, 0][..]], -1.0);
    assert_eq!(v.get(&[2, 1]), Some(&5.0));
    assert_eq!(v.get(&[3, 0]), None);

    let mut w = t.view_mut().permuted_axes(&[1, 0]);
    assert_eq!(w.get(&[2, 1]), Some(5.0));
    *w.get_mut(&[2, 1]).unwrap() = 50.0;
    assert!(w.get_mut(&[0, 2]).is_none());
    assert_eq!(t[[1, 2]], 50.0);
}

#[test]
#[should_panic(expected = "index [0, 2] is outside shape [3, 2]")]
fn view_index_out_of_range_panics() {
    let t = counting(&[2, 3]);
    let v = t.view().permuted_axes(&[1, 0]);
    let _ = v[[0, 2]];
}

#[test]
#[should_panic(expected = "outside shape")]
fn tensor_slice_index_of_wrong_rank_panics() {
    let t = counting(&[2, 3]);
    let _ = t[&[1][..]];
}

// Views over user slices.

#[test]
fn views_over_slices() {
    let data = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0];
    let v = TensorView::from_slice([3, 2], &data).unwrap();
    assert_eq!(v, counting(&[3, 2]));
    let error = TensorView::from_slice(vec![4, 2], &data).unwrap_err();
    assert_eq!(error.kind(), ShapeErrorKind::DataLength);
    let scalar = TensorView::from_slice([0usize; 0], &data[..1]).unwrap();
    assert_eq!(scalar[[]], 0.0);
    let empty = TensorView::<f64>::from_slice([0, 5], &[]).unwrap();
    assert_eq!((empty.len(), empty.shape()), (0, &[0, 5][..]));
    assert!(TensorView::<f64>::from_slice([0usize; 0], &[]).is_err());

    let mut buffer = [0.0f64; 6];
    let target = TensorViewMut::from_slice_mut([2, 3], &mut buffer).unwrap();
    let a = counting(&[3, 2]);
    tensor! { target[i, j] = a[j, i] + 1; }
    assert_eq!(buffer, [1.0, 3.0, 5.0, 2.0, 4.0, 6.0]);
    assert!(TensorViewMut::from_slice_mut([7], &mut buffer).is_err());
}

// Reshaping.

#[test]
fn reshape_tensors_and_views() {
    let t = counting(&[2, 3, 2]);
    let v = t.reshape([3, 4]).unwrap();
    assert_eq!(v.strides(), &[4, 1]);
    assert_eq!(v[[2, 1]], 9.0);
    // A contiguous slice of a contiguous view reshapes in place.
    let rows = t.view().slice_axis(0, 1..2).reshape([2, 3]).unwrap();
    assert_eq!(elements(&rows), [6.0, 7.0, 8.0, 9.0, 10.0, 11.0]);
    // Axes of extent 1 may have any stride.
    let one = t
        .view()
        .slice_axis(2, 1..2)
        .index_axis(0, 0)
        .permuted_axes(&[1, 0]);
    assert_eq!(one.shape(), &[1, 3]);
    assert_eq!(elements(&one), [1.0, 3.0, 5.0]);
    assert!(
        one.reshape([3]).is_err(),
        "strides [1, 2] are not contiguous"
    );
    let column = t.view().slice_axis(0, 0..1).slice_axis(1, 0..1);
    assert_eq!(elements(&column.reshape([2]).unwrap()), [0.0, 1.0]);

    let owned = t.clone().into_shape([12]).unwrap();
    assert_eq!(owned.as_slice(), t.as_slice());
    assert_eq!(owned.shape(), &[12]);
    assert_eq!(
        Tensor::full([0usize; 0], 1.0f64)
            .into_shape([1, 1, 1])
            .unwrap()
            .shape(),
        &[1, 1, 1]
    );
    assert_eq!(
        Tensor::<f64>::zeros([0, 3])
            .into_shape([5, 0])
            .unwrap()
            .shape(),
        &[5, 0]
    );

    // Writable views reshape too and write the right elements.
    let mut w = Tensor::<f64>::zeros([2, 2]);
    let flat = w.view_mut().reshape([4]).unwrap();
    tensor! { flat[i] = 1; }
    assert_eq!(w.as_slice(), &[1.0; 4]);
}

#[test]
fn reshape_errors() {
    let t = counting(&[2, 3]);
    let wrong_count = t.reshape([4]).unwrap_err();
    assert_eq!(wrong_count.kind(), ShapeErrorKind::IncompatibleShape);
    assert!(wrong_count.to_string().contains("[2, 3]"), "{wrong_count}");
    let wrong_count = t.clone().into_shape([7]).unwrap_err();
    assert_eq!(wrong_count.kind(), ShapeErrorKind::IncompatibleShape);
    let overflow = t.clone().into_shape([usize::MAX, 2]).unwrap_err();
    assert_eq!(overflow.kind(), ShapeErrorKind::Overflow);

    let transposed = t.view().permuted_axes(&[1, 0]);
    let not_contiguous = transposed.clone().reshape([6]).unwrap_err();
    assert_eq!(not_contiguous.kind(), ShapeErrorKind::IncompatibleLayout);
    assert!(
        not_contiguous.to_string().contains("to_owned()"),
        "{not_contiguous}"
    );
    // The advice works.
    assert_eq!(
        elements(&transposed.to_owned().view().reshape([6]).unwrap()),
        [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
    );
    let strided = t.view().slice_axis(1, 0..2);
    assert_eq!(
        strided.reshape([4]).unwrap_err().kind(),
        ShapeErrorKind::IncompatibleLayout
    );
    let stepped = t.view().slice_axis_step(1, 0..3, 2);
    assert_eq!(
        stepped.reshape([4]).unwrap_err().kind(),
        ShapeErrorKind::IncompatibleLayout
    );
    let broadcast = t.broadcast([2, 2, 3]).unwrap();
    assert_eq!(
        broadcast.reshape([12]).unwrap_err().kind(),
        ShapeErrorKind::IncompatibleLayout
    );
    // A view with no elements reshapes whatever its strides.
    let empty = t.view().permuted_axes(&[1, 0]).slice_axis(0, 1..1);
    assert_eq!(empty.reshape([0, 7]).unwrap().shape(), &[0, 7]);
}

// Slicing with steps, indexing an axis away.

#[test]
fn slice_axis_step_forwards_and_backwards() {
    let t = counting(&[10]);
    let v = t.view();
    let forwards = v.clone().slice_axis_step(0, 1..8, 3);
    assert_eq!(elements(&forwards), [1.0, 4.0, 7.0]);
    assert_eq!(forwards.strides(), &[3]);
    // Negative steps start from the last index of the range (ndarray's rule).
    let backwards = v.clone().slice_axis_step(0, 1..8, -3);
    assert_eq!(elements(&backwards), [7.0, 4.0, 1.0]);
    assert_eq!(backwards.strides(), &[-3]);
    let reversed = v.clone().slice_axis_step(0, 0..10, -1);
    assert_eq!(
        elements(&reversed),
        [9.0, 8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0, 0.0]
    );
    // Reversing twice is the identity; a step past the range takes one element.
    assert_eq!(reversed.clone().slice_axis_step(0, 0..10, -1), t);
    assert_eq!(elements(&v.clone().slice_axis_step(0, 2..9, 100)), [2.0]);
    assert_eq!(
        elements(&v.clone().slice_axis_step(0, 2..9, isize::MIN)),
        [8.0]
    );
    assert_eq!(v.clone().slice_axis_step(0, 4..4, -2).len(), 0);
    assert_eq!(v.clone().slice_axis_step(0, 10..10, 1).len(), 0);
    // Views of views: a reversed slice of a transposed slice.
    let m = counting(&[4, 5]);
    let view = m
        .view()
        .permuted_axes(&[1, 0])
        .slice_axis(1, 1..4)
        .slice_axis_step(0, 0..5, -2)
        .slice_axis_step(1, 0..3, -1);
    assert_eq!(view.shape(), &[3, 3]);
    for r in 0..3 {
        for c in 0..3 {
            assert_eq!(view[[r, c]], m[[3 - c, 4 - 2 * r]]);
        }
    }
    // Read by the macro.
    tensor! { let total = view[r, c]; }
    assert_eq!(total, elements(&view).iter().sum::<f64>());
}

#[test]
fn writable_views_with_negative_steps() {
    let mut t = Tensor::<f64>::zeros([3, 4]);
    let v = t.view_mut().slice_axis_step(1, 0..4, -2);
    assert_eq!(v.shape(), &[3, 2]);
    let a = counting(&[3, 2]);
    tensor! { v[i, j] = a[i, j] + 1; }
    assert_eq!(
        t.as_slice(),
        &[0.0, 2.0, 0.0, 1.0, 0.0, 4.0, 0.0, 3.0, 0.0, 6.0, 0.0, 5.0]
    );
}

#[test]
#[should_panic(expected = "must not be zero")]
fn zero_step_panics() {
    let t = counting(&[4]);
    let _ = t.view().slice_axis_step(0, 0..4, 0);
}

#[test]
#[should_panic(expected = "outside axis 0")]
fn stepped_range_past_the_end_panics() {
    let t = counting(&[4]);
    let _ = t.view().slice_axis_step(0, 2..5, -1);
}

#[test]
fn index_axis_drops_an_axis() {
    let t = counting(&[2, 3, 4]);
    let plane = t.view().index_axis(1, 2);
    assert_eq!(plane.shape(), &[2, 4]);
    assert_eq!(plane[[1, 3]], t[[1, 2, 3]]);
    let line = plane.clone().index_axis(0, 1);
    assert_eq!(elements(&line), [20.0, 21.0, 22.0, 23.0]);
    let point = line.index_axis(0, 3);
    assert_eq!((point.ndim(), point[[]]), (0, 23.0));
    assert_eq!(point.to_string(), "23");
    // Of a reversed view, and of a writable one.
    let reversed = t.view().slice_axis_step(2, 0..4, -1).index_axis(2, 0);
    assert_eq!(reversed, t.view().index_axis(2, 3));
    let mut w = Tensor::<f64>::zeros([2, 3]);
    let row = w.view_mut().index_axis(0, 1);
    tensor! { row[j] = 7; }
    assert_eq!(w.as_slice(), &[0.0, 0.0, 0.0, 7.0, 7.0, 7.0]);
    // An axis of extent zero elsewhere leaves nothing.
    let empty = Tensor::<f64>::zeros([3, 0]);
    assert!(empty.view().index_axis(0, 2).is_empty());
}

#[test]
#[should_panic(expected = "index 3 is outside axis 1 of extent 3")]
fn index_axis_out_of_range_panics() {
    let t = counting(&[2, 3]);
    let _ = t.view().index_axis(1, 3);
}

// Broadcasting.

#[test]
fn broadcast_follows_numpy() {
    let row = counting(&[3]);
    let grid = row.broadcast([2, 4, 3]).unwrap();
    assert_eq!(grid.strides(), &[0, 0, 1]);
    assert_eq!(grid.len(), 24);
    assert_eq!(grid[[1, 3, 2]], 2.0);
    let column = counting(&[2, 1]);
    let wide = column.view().broadcast([2, 3]).unwrap();
    assert_eq!(elements(&wide), [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]);
    assert_eq!(wide.to_owned().shape(), &[2, 3]);
    // Same shape, a scalar everywhere, an axis of extent 1 to zero.
    assert_eq!(column.broadcast([2, 1]).unwrap(), column);
    let scalar = Tensor::full([0usize; 0], 4.0f64);
    assert_eq!(scalar.broadcast([2, 2]).unwrap(), Tensor::full([2, 2], 4.0));
    assert!(column.broadcast([2, 0]).unwrap().is_empty());
    // Of a view of a view.
    let t = counting(&[3, 4]);
    let last_column_reversed = t.view().slice_axis_step(0, 0..3, -1).slice_axis(1, 3..4);
    let b = last_column_reversed.broadcast([2, 3, 2]).unwrap();
    assert_eq!(b.shape(), &[2, 3, 2]);
    assert_eq!(
        elements(&b.clone().index_axis(0, 1)),
        [11.0, 11.0, 7.0, 7.0, 3.0, 3.0]
    );
    assert_eq!(b.to_owned(), b);
    // Broadcast views are operands.
    let bias = counting(&[3]);
    let bias_rows = bias.broadcast([2, 3]).unwrap();
    let x = Tensor::<f64>::ones([2, 3]);
    tensor! { let y[i, j] = x[i, j] + bias_rows[i, j]; }
    assert_eq!(y.as_slice(), &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
}

#[test]
fn broadcast_errors() {
    let t = counting(&[2, 3]);
    for shape in [vec![3, 3], vec![3], vec![2, 3, 1], vec![2, 0]] {
        let error = t.broadcast(&shape).unwrap_err();
        assert_eq!(error.kind(), ShapeErrorKind::IncompatibleShape, "{shape:?}");
        assert!(error.to_string().contains("[2, 3]"), "{error}");
    }
    let empty = Tensor::<f64>::zeros([0]);
    assert!(empty.broadcast([1]).is_err());
    assert!(empty.broadcast([4, 0]).is_ok());
    assert_eq!(
        t.broadcast([usize::MAX, 2, 3]).unwrap_err().kind(),
        ShapeErrorKind::Overflow
    );
}

// Splitting writable views.

#[test]
fn split_at_mut_gives_disjoint_views() {
    let mut t = Tensor::<f64>::zeros([4, 6]);
    let (top, bottom) = t.view_mut().split_at_mut(0, 1);
    assert_eq!((top.shape(), bottom.shape()), (&[1, 6][..], &[3, 6][..]));
    // Writing one through the macro leaves the other alone, even where their address ranges
    // interleave (a column split).
    let (left, right) = bottom.split_at_mut(1, 2);
    tensor! { left[i, j] = 1; }
    tensor! { right[i, j] = 2 + left[i, 0]; }
    tensor! { top[i, j] = 9; }
    let expected: Vec<f64> = (0..24)
        .map(|k| match (k / 6, k % 6) {
            (0, _) => 9.0,
            (_, 0 | 1) => 1.0,
            _ => 3.0,
        })
        .collect();
    assert_eq!(t.as_slice(), &expected[..]);

    // Every element of the whole belongs to exactly one part, also for reversed and
    // transposed views.
    let mut marks = Tensor::<f64>::zeros([3, 5]);
    let view = marks
        .view_mut()
        .permuted_axes(&[1, 0])
        .slice_axis_step(0, 0..5, -1);
    let (mut a, mut b) = view.split_at_mut(0, 2);
    for (part, value) in [(&mut a, 1.0), (&mut b, 10.0)] {
        let shape = part.shape().to_vec();
        for i in 0..shape[0] {
            for j in 0..shape[1] {
                *part.get_mut(&[i, j]).unwrap() += value;
            }
        }
    }
    let expected: Vec<f64> = (0..15)
        .map(|k| if k % 5 >= 3 { 1.0 } else { 10.0 })
        .collect();
    assert_eq!(marks.as_slice(), &expected[..]);

    // Splits at either end leave one part empty.
    let mut u = Tensor::<f64>::zeros([2, 2]);
    let (none, all) = u.view_mut().split_at_mut(1, 0);
    assert!(none.is_empty());
    assert_eq!(all.shape(), &[2, 2]);
    let (all, none) = all.split_at_mut(0, 2);
    assert!(none.is_empty() && all.len() == 4);
}

#[test]
fn split_halves_run_on_threads() {
    let mut t = Tensor::<f64>::zeros([64, 64]);
    let a = counting(&[64, 64]);
    let b = Tensor::<f64>::eye(64);
    let (top, bottom) = t.view_mut().split_at_mut(0, 32);
    let (a_top, a_bottom) = a.view().split_at(0, 32);
    let b = &b;
    std::thread::scope(|s| {
        s.spawn(move || tensor! { top[i, j] = a_top[i, k] * b[k, j]; });
        s.spawn(move || tensor! { bottom[i, j] = a_bottom[i, k] * b[k, j]; });
    });
    assert_eq!(t, a);
}

#[test]
#[should_panic(expected = "split index 3 is outside axis 0 of extent 2")]
fn split_past_the_end_panics() {
    let mut t = Tensor::<f64>::zeros([2, 2]);
    let _ = t.view_mut().split_at_mut(0, 3);
}

// Formatting.

#[test]
fn display_nested_brackets() {
    let t = counting(&[2, 3]);
    assert_eq!(t.to_string(), "[[0, 1, 2],\n [3, 4, 5]]");
    assert_eq!(
        t.view().permuted_axes(&[1, 0]).to_string(),
        "[[0, 3],\n [1, 4],\n [2, 5]]"
    );
    assert_eq!(
        counting(&[2, 2, 1]).to_string(),
        "[[[0],\n  [1]],\n\n [[2],\n  [3]]]"
    );
    assert_eq!(
        counting(&[2, 1, 1, 1]).to_string(),
        "[[[[0]]],\n\n\n [[[1]]]]"
    );
    assert_eq!(format!("{:.2}", counting(&[2])), "[0.00, 1.00]");
    assert_eq!(format!("{:>3}", counting(&[2])), "[  0,   1]");
    assert_eq!(Tensor::full([0usize; 0], -1.5f64).to_string(), "-1.5");
    assert_eq!(Tensor::<f64>::zeros([0]).to_string(), "[]");
    assert_eq!(Tensor::<f64>::zeros([2, 0]).to_string(), "[[],\n []]");
    assert_eq!(Tensor::<f64>::zeros([0, 2]).to_string(), "[]");
    let mut w = counting(&[2, 2]);
    let view = w.view_mut();
    assert_eq!(view.to_string(), "[[0, 1],\n [2, 3]]");
}

#[test]
fn display_elides_long_axes() {
    assert_eq!(counting(&[6]).to_string(), "[0, 1, 2, 3, 4, 5]");
    assert_eq!(counting(&[7]).to_string(), "[0, 1, 2, ..., 4, 5, 6]");
    assert_eq!(format!("{:#}", counting(&[7])), "[0, 1, 2, 3, 4, 5, 6]");
    let tall = counting(&[8, 2]);
    assert_eq!(
        tall.to_string(),
        "[[0, 1],\n [2, 3],\n [4, 5],\n ...,\n [10, 11],\n [12, 13],\n [14, 15]]"
    );
    let t = counting(&[7, 7]);
    let text = t.view().slice_axis_step(1, 0..7, -1).to_string();
    assert!(
        text.starts_with("[[6, 5, 4, ..., 2, 1, 0],\n [13, 12, 11, ..., 9, 8, 7],\n"),
        "{text}"
    );
    assert!(text.contains(",\n ...,\n"), "{text}");
    assert_eq!(text.lines().count(), 7);
    let huge = Tensor::<f32>::zeros([1000, 1000]);
    assert!(huge.to_string().len() < 300);
}

// Equality, cloning, debug output.

#[test]
fn equality_across_tensors_and_views() {
    let t = counting(&[2, 3]);
    let copy = t.view().permuted_axes(&[1, 0]).to_owned();
    let back = copy.view().permuted_axes(&[1, 0]);
    assert_eq!(back, t);
    assert_eq!(t, back);
    assert_eq!(back, t.view());
    assert_ne!(copy, t.view().permuted_axes(&[1, 0]).slice_axis(0, 0..2));
    // Same elements, different shape: not equal.
    assert_ne!(t.view(), counting(&[3, 2]).view());
    assert_ne!(
        t,
        Tensor::from_shape_vec([6], t.as_slice().to_vec()).unwrap()
    );
    // Writable views compare too.
    let mut other = t.clone();
    let w = other.view_mut();
    assert_eq!(w, t);
    assert_eq!(t, w);
    assert_eq!(t.view(), w);
    assert_eq!(w, t.view());
    let mut third = t.clone();
    assert_eq!(w, third.view_mut());
    third[[1, 1]] = -1.0;
    assert_ne!(t.view(), third.view());
    // Zero-size and rank 0.
    assert_eq!(
        Tensor::<f64>::zeros([0, 3]).view(),
        Tensor::<f64>::ones([0, 3])
    );
    assert_ne!(
        Tensor::<f64>::zeros([0, 3]).view(),
        Tensor::<f64>::zeros([3, 0])
    );
    assert_eq!(
        Tensor::full([0usize; 0], 1.0f64),
        TensorView::from_slice([0usize; 0], &[1.0]).unwrap()
    );
}

#[test]
fn clone_and_debug() {
    let t = counting(&[2, 2]);
    let view = t.view();
    let cloned = view.clone().slice_axis(0, 0..1);
    assert_eq!(view.shape(), &[2, 2]);
    assert_eq!(cloned.shape(), &[1, 2]);
    assert_eq!(
        format!("{view:?}"),
        "TensorView { shape: [2, 2], strides: [2, 1] }"
    );
    assert!(format!("{t:?}").contains("shape: [2, 2]"));
    assert!(format!("{:?}", view.iter()).contains("remaining: 4"));
}

// Thread safety, checked at compile time.

fn assert_send<T: Send>() {}
fn assert_sync<T: Sync>() {}

#[test]
fn send_and_sync() {
    assert_send::<Tensor<f64>>();
    assert_sync::<Tensor<f64>>();
    assert_send::<TensorView<'static, f32>>();
    assert_sync::<TensorView<'static, f32>>();
    assert_send::<TensorViewMut<'static, f64>>();
    assert_send::<tensor_dsl::iter::Iter<'static, f64>>();
    assert_sync::<tensor_dsl::iter::Iter<'static, f64>>();
    // `TensorViewMut` is deliberately not `Sync` (generated code writes through `&self`):
    // the doctest on `TensorViewMut` checks that this does not compile.
}

// Empty shapes: any zero extent means zero elements, whatever the other extents and their order.

#[test]
fn empty_shapes_are_valid_in_any_axis_order() {
    let big = usize::MAX / 2;
    for shape in [[0, big, 4], [big, 4, 0], [4, 0, big], [big, 0, big]] {
        let t = Tensor::<f32>::zeros(shape);
        assert_eq!((t.shape(), t.len()), (&shape[..], 0));
        assert_eq!(Tensor::<f64>::from_fn(shape, |_| 1.0).len(), 0);
        assert!(Tensor::from_shape_vec(shape, Vec::<f32>::new()).is_ok());
        // Every order of the same empty view copies, and `tensor!` reads and makes it.
        for axes in [[0, 1, 2], [1, 2, 0], [2, 0, 1], [2, 1, 0]] {
            let v = t.view().permuted_axes(&axes);
            let owned = v.to_owned();
            assert_eq!((owned.shape(), owned.len()), (v.shape(), 0));
            tensor! { let c[i, j, k] = v[i, j, k]; }
            assert_eq!((c.shape(), c.len()), (v.shape(), 0));
            tensor! { let s = v[i, j, k] * 2.0; }
            assert_eq!(s, 0.0);
        }
    }
    // A sum over an empty loop beside a huge one is 0 at every target point, at once (the
    // `+ 1`, a term of its own, sums nothing).
    let w = Tensor::<f64>::zeros([3, big, 0]);
    let wt = w.view().permuted_axes(&[0, 2, 1]);
    tensor! {
        let r[i] = w[i, j, k];
        let q[i] = wt[i, k, j] + 1;
    }
    assert_eq!((r.as_slice(), q.as_slice()), (&[0.0; 3][..], &[1.0; 3][..]));
}

// serde (feature `serde`).

#[cfg(feature = "serde")]
#[test]
fn serde_round_trips_and_validates() {
    for t in [
        counting(&[2, 3]),
        Tensor::full([0usize; 0], 2.5),
        Tensor::<f64>::zeros([3, 0]),
    ] {
        let json = serde_json::to_string(&t).unwrap();
        assert_eq!(serde_json::from_str::<Tensor<f64>>(&json).unwrap(), t);
    }
    // An empty shape holds no data in any axis order, however large its other extents.
    for empty in [
        r#"{"shape":[0,18446744073709551615,4],"data":[]}"#,
        r#"{"shape":[18446744073709551615,4,0],"data":[]}"#,
    ] {
        assert_eq!(serde_json::from_str::<Tensor<f64>>(empty).unwrap().len(), 0);
    }
    assert_eq!(
        serde_json::to_string(&Tensor::<f32>::eye(2)).unwrap(),
        r#"{"shape":[2,2],"data":[1.0,0.0,0.0,1.0]}"#
    );
    for bad in [
        r#"{"shape":[2,2],"data":[1.0,2.0,3.0]}"#,
        r#"{"shape":[],"data":[]}"#,
        r#"{"shape":[18446744073709551615,2],"data":[]}"#,
        r#"{"shape":[2],"data":[1.0,2.0],"strides":[1]}"#,
        r#"{"data":[1.0]}"#,
        r#"[1.0]"#,
    ] {
        assert!(serde_json::from_str::<Tensor<f64>>(bad).is_err(), "{bad}");
    }
}

#[cfg(feature = "serde")]
#[test]
fn serde_round_trips_complex_and_integer_tensors() {
    use tensor_dsl::c64;
    let z = Tensor::from_fn([2, 2], |ix| c64::new(ix[0] as f64, -(ix[1] as f64) - 0.5));
    let json = serde_json::to_string(&z).unwrap();
    // num_complex writes a complex number as its two parts.
    assert_eq!(
        json,
        r#"{"shape":[2,2],"data":[[0.0,-0.5],[0.0,-1.5],[1.0,-0.5],[1.0,-1.5]]}"#
    );
    assert_eq!(serde_json::from_str::<Tensor<c64>>(&json).unwrap(), z);
    let n = Tensor::from_fn([3], |ix| ix[0] as i64 - 1);
    let json = serde_json::to_string(&n).unwrap();
    assert_eq!(serde_json::from_str::<Tensor<i64>>(&json).unwrap(), n);
    assert!(serde_json::from_str::<Tensor<c64>>(r#"{"shape":[1],"data":[1.0]}"#).is_err());
}

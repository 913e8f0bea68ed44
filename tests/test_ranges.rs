//! Ranges of positions inside statements (`x[i in 1..n]`): views read without a copy, end to
//! end against naive loops: differences, contractions past the GEMM threshold over views of
//! both operands, open ends, computed bounds, views of a block's own `let`, nested arrays, a
//! Rust-expression base, empty ranges, and bounds refused before anything is written.

mod common;

use common::{assert_close, at, data, reference, sum_over};
use tensor_dsl::{tensor, try_tensor, ShapeError, ShapeErrorKind, Tensor};

#[test]
fn forward_differences_of_a_vector() {
    for n in [1, 2, 7, 13, 1000] {
        let x = data::<f64>(&[n], 1);
        tensor! { let d[i] = x[i in 1..n] - x[i in ..{ n - 1 }]; }
        let expected = reference(&[n - 1], |ix| at(&x, &[ix[0] + 1]) - at(&x, &[ix[0]]));
        assert_close(&d, &expected, 1e-15);
    }
}

#[test]
fn contractions_over_views_of_both_operands() {
    for (m, k, n) in [(7, 5, 13), (70, 90, 65), (1, 1, 1)] {
        let a = data::<f64>(&[m + 3, k], 2);
        let b = data::<f64>(&[k, n + 2], 3);
        // Rows 3.. of a, columns ..n of b: a GEMM over two strided views.
        tensor! { let c[i, j] = a[i in 3.., l] * b[l, j in ..n]; }
        let expected = reference(&[m, n], |ix| {
            sum_over(&[k], |kx| {
                at(&a, &[ix[0] + 3, kx[0]]) * at(&b, &[kx[0], ix[1]])
            })
        });
        assert_close(&c, &expected, 1e-13);
    }
}

#[test]
fn ranges_of_lets_arrays_and_rust_expressions() {
    let x = data::<f64>(&[9], 4);
    let lo = 2usize;
    tensor! {
        let y[i] = 2 * x[i];
        let z[i] = y[i in lo..{ lo + 4 }] + x[i in 5..];
    }
    let expected = reference(&[4], |ix| 2.0 * at(&x, &[ix[0] + 2]) + at(&x, &[ix[0] + 5]));
    assert_close(&z, &expected, 1e-15);

    let grid = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]];
    tensor! { let inner = grid[i in 1.., j in 1..]; }
    assert_eq!(inner, 5.0 + 6.0 + 8.0 + 9.0);

    tensor! { let s = { x.view().permuted_axes(&[0]) }[i in 3..6]; }
    let expected: f64 = (3..6).map(|k| at(&x, &[k])).sum();
    assert!((s - expected).abs() < 1e-15);

    // Empty ranges: an empty view, a sum of nothing.
    tensor! { let none[i] = x[i in 4..4]; let zero = x[i in 9..]; }
    assert_eq!((none.shape(), zero), (&[0][..], 0.0));
}

fn shifted(x: &Tensor<f64>, c: &mut Tensor<f64>, hi: usize) -> Result<(), ShapeError> {
    try_tensor! {
        c[i] = 1;
        let d[i] = x[i in 1..hi];
    }
    let _ = d;
    Ok(())
}

#[test]
fn ranges_outside_their_axis_are_errors_before_any_write() {
    let x = data::<f64>(&[5], 5);
    let mut c = Tensor::full([4], 7.0);
    let error = shifted(&x, &mut c, 6).unwrap_err();
    assert_eq!(error.kind(), ShapeErrorKind::OutOfBounds);
    assert_eq!(
        error.to_string(),
        "the range 1..6 on axis 0 of `x[i in 1..hi]` is out of bounds: the axis has extent 5"
    );
    assert!(c.iter().all(|&v| v == 7.0), "nothing was written");
    let error = shifted(&x, &mut c, 0).unwrap_err();
    assert_eq!(error.kind(), ShapeErrorKind::OutOfBounds);
    shifted(&x, &mut c, 5).unwrap();
    assert!(c.iter().all(|&v| v == 1.0));
}

#[test]
fn a_view_writes_into_another_tensor_and_extents_are_checked() {
    let x = data::<f64>(&[10, 3], 6);
    let mut out = Tensor::<f64>::zeros([4, 3]);
    tensor! { out[i, j] = x[i in 6.., j]; }
    let expected = reference(&[4, 3], |ix| at(&x, &[ix[0] + 6, ix[1]]));
    assert_close(&out, &expected, 0.0);
    // A range whose length disagrees with the target's extent is an extent error.
    let result = (|| -> Result<(), ShapeError> {
        try_tensor! { out[i, j] = x[i in 5.., j]; }
        Ok(())
    })();
    assert_eq!(result.unwrap_err().kind(), ShapeErrorKind::ExtentMismatch);
}

#[test]
fn ranges_of_targets_write_only_those_positions() {
    for (m, k, n) in [(3, 4, 5), (70, 90, 65)] {
        let a = data::<f64>(&[m, k], 7);
        let b = data::<f64>(&[k, n], 8);
        let mut c = Tensor::<f64>::full([m + 2, n], 9.0);
        // A GEMM into rows 1..m+1; rows 0 and m+1 stay as they were.
        tensor! { c[i in 1..{ m + 1 }, j] = a[i, l] * b[l, j]; }
        let product =
            |i: usize, j: usize| sum_over(&[k], |kx| at(&a, &[i, kx[0]]) * at(&b, &[kx[0], j]));
        let expected = reference(&[m + 2, n], |ix| {
            if ix[0] == 0 || ix[0] == m + 1 {
                9.0
            } else {
                product(ix[0] - 1, ix[1])
            }
        });
        assert_close(&c, &expected, 1e-13);
        // `+=` and `*=` on a range; `*=` reads the very view it writes.
        tensor! {
            c[i in ..1, j] += a[i in ..1, l] * b[l, j];
            c[i in { m + 1 }.., j] *= 2;
        }
        for j in 0..n {
            assert!((at(&c, &[0, j]) - (9.0 + product(0, j))).abs() < 1e-12);
            assert_eq!(at(&c, &[m + 1, j]), 18.0);
        }
    }
    // A writable view's range, and an out-of-bounds target range refused before any write.
    let mut buffer = Tensor::<f64>::zeros([4, 6]);
    let view = buffer.view_mut().slice_axis(1, 1..5); // 4 × 4
    let x = data::<f64>(&[2, 2], 9);
    tensor! { view[i in 1..3, j in 2..] = x[i, j]; }
    for (i, j) in [(1usize, 3usize), (1, 4), (2, 3), (2, 4)] {
        assert_eq!(at(&buffer, &[i, j]), at(&x, &[i - 1, j - 3]));
    }
    assert_eq!(buffer.iter().filter(|&&v| v != 0.0).count(), 4);
    let result = (|| -> Result<(), ShapeError> {
        try_tensor! {
            buffer[i, j] = 1;
            buffer[i in 3..5, j] = 2;
        }
        Ok(())
    })();
    assert_eq!(result.unwrap_err().kind(), ShapeErrorKind::OutOfBounds);
    assert_eq!(
        buffer.iter().filter(|&&v| v == 1.0).count(),
        0,
        "nothing was written"
    );
}

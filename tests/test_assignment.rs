//! `=`, `+=` and `-=` into owned tensors, `&mut` tensors and strided views; broadcast; several
//! statements per block with shadowing; scalars evaluated once per statement.

mod common;

use common::{assert_close, at, data, reference, sum_over};
use tensor_dsl::{tensor, Tensor};

#[test]
fn assign_add_and_subtract_into_existing_tensors() {
    let a = data::<f64>(&[7, 5], 0);
    let b = data::<f64>(&[5, 13], 1);
    let before = data::<f64>(&[7, 13], 2);
    let product =
        |ix: &[usize]| sum_over(&[5], |r| at(&a, &[ix[0], r[0]]) * at(&b, &[r[0], ix[1]]));

    let mut c = before.clone();
    tensor! { c[i, j] = a[i, k] * b[k, j]; }
    assert_close(&c, &reference(&[7, 13], product), 1e-12);

    let mut c = before.clone();
    tensor! { c[i, j] += a[i, k] * b[k, j]; }
    assert_close(
        &c,
        &reference(&[7, 13], |ix| at(&before, ix) + product(ix)),
        1e-12,
    );

    let mut c = before.clone();
    let c_ref = &mut c;
    tensor! { c_ref[i, j] -= a[i, k] * b[k, j] - 3 * b[k, j] * a[i, k] + 1; }
    let expected = reference(&[7, 13], |ix| {
        at(&before, ix) - (product(ix) - 3.0 * product(ix) + 1.0)
    });
    assert_close(&c, &expected, 1e-12);
}

#[test]
fn broadcast_of_left_hand_indices() {
    let w = data::<f32>(&[4, 3], 0);
    let x = data::<f32>(&[5, 3], 1);
    let bias = data::<f32>(&[4], 2);
    let mut y = Tensor::<f32>::zeros([5, 4]);
    tensor! { y[b, o] = w[o, k] * x[b, k] + bias[o]; }
    let expected = reference(&[5, 4], |ix| {
        sum_over(&[3], |r| at(&w, &[ix[1], r[0]]) * at(&x, &[ix[0], r[0]])) + at(&bias, &[ix[1]])
    });
    assert_close(&y, &expected, 1e-5);

    // A term with no tensor at all fills every element.
    tensor! { y[b, o] = 0.5; }
    assert!(y.as_slice().iter().all(|&v| v == 0.5));
}

#[test]
fn later_statements_read_earlier_lets_and_shadowing_reads_the_old_binding() {
    let a = data::<f64>(&[3, 4], 0);
    let x = data::<f64>(&[4], 1);
    tensor! {
        let y[i] = a[i, k] * x[k];
        let y[i] = 2 * y[i] + 1;        // the right-hand side sees the first `y`
        let s = y[i] * y[i];
        let mut z[j] = a[i, j] * y[i];
        z[j] += x[j];
    }
    let y0 = reference(&[3], |ix| {
        sum_over(&[4], |r| at(&a, &[ix[0], r[0]]) * at(&x, r))
    });
    let y1 = reference(&[3], |ix| 2.0 * at(&y0, ix) + 1.0);
    assert_close(&y, &y1, 1e-12);
    common::assert_close_scalar(s, sum_over(&[3], |r| at(&y1, r).powi(2)), 1e-12);
    let expected = reference(&[4], |ix| {
        sum_over(&[3], |r| at(&a, &[r[0], ix[0]]) * at(&y1, r)) + at(&x, ix)
    });
    assert_close(&z, &expected, 1e-12);
}

#[test]
fn scalars_literals_and_rust_expressions() {
    let a = data::<f64>(&[6], 0);
    let alpha = 0.25;
    let mut calls = 0;
    let mut next = || {
        calls += 1;
        3.0
    };
    struct Config {
        scale: f64,
    }
    let config = Config { scale: -2.0 };
    tensor! {
        let b[i] = alpha * a[i] * { next() } + config.scale / 4 + 1 / 2 + 2.5e-1;
    }
    assert_eq!(calls, 1, "a `{{ expr }}` scalar runs once per statement");
    let expected = reference(&[6], |ix| 0.25 * at(&a, ix) * 3.0 - 0.5 + 0.5 + 0.25);
    assert_close(&b, &expected, 1e-12);

    let c = data::<f32>(&[3], 1);
    tensor! { let d[i] = 2.0f32 * c[i] - -c[i]; }
    assert_close(&d, &reference(&[3], |ix| 3.0 * at(&c, ix)), 1e-6);
}

#[test]
fn targets_and_operands_as_permuted_and_sliced_views() {
    let a = data::<f64>(&[5, 7], 0);
    let b = data::<f64>(&[7, 6], 1);
    let mut out = data::<f64>(&[6, 9], 2);
    let before = out.clone();
    {
        // A transposed operand, a sliced operand, and a transposed window of `out` as target.
        let a_t = a.view().permuted_axes(&[1, 0]); // [7, 5]
        let b_part = b.view().slice_axis(1, 1..5); // [7, 4]
        let mut window = out.view_mut().slice_axis(0, 1..5).slice_axis(1, 2..7);
        let target = window.reborrow().permuted_axes(&[1, 0]); // [5, 4]
        tensor! { target[i, j] = a_t[k, i] * b_part[k, j] + 1; }
    }
    for r in 0..6 {
        for c in 0..9 {
            let got = at(&out, &[r, c]);
            if (1..5).contains(&r) && (2..7).contains(&c) {
                let (i, j) = (c - 2, r - 1);
                let expected =
                    sum_over(&[7], |k| at(&a, &[i, k[0]]) * at(&b, &[k[0], j + 1])) + 1.0;
                assert!((got - expected).abs() < 1e-12, "({r}, {c})");
            } else {
                assert_eq!(got, at(&before, &[r, c]), "outside the window is untouched");
            }
        }
    }
}

#[test]
fn view_targets_need_no_mut_binding() {
    let a = data::<f64>(&[4, 3], 0);
    let mut storage = Tensor::<f64>::zeros([3, 4]);
    let target = storage.view_mut();
    tensor! {
        target[j, i] = a[i, j];
        target[j, i] += a[i, j];
    }
    let expected = reference(&[3, 4], |ix| 2.0 * at(&a, &[ix[1], ix[0]]));
    assert_close(&storage, &expected, 1e-12);
}

#[test]
fn a_block_without_let_is_an_expression() {
    let a = data::<f64>(&[5], 0);
    let mut c = Tensor::<f64>::zeros([5]);
    (0..3).for_each(|_| tensor! { c[i] += a[i]; });
    let add_twice = |c: &mut Tensor<f64>| tensor! { c[i] += 2 * a[i]; };
    add_twice(&mut c);
    assert_close(&c, &reference(&[5], |ix| 5.0 * at(&a, ix)), 1e-12);
}

#[test]
fn a_let_mut_is_written_by_later_statements_with_or_without_the_optimizing_passes() {
    let a = data::<f64>(&[5, 5], 0);
    let x = data::<f64>(&[5], 1);
    let twice = reference(&[5], |ix| 2.0 * at(&x, ix));
    let product = reference(&[5], |ix| {
        at(&x, ix) + sum_over(&[5], |r| at(&a, &[ix[0], r[0]]) * at(&x, r))
    });

    // Element-wise: the optimizing passes fuse the two statements.
    tensor! {
        let mut c[i] = x[i];
        c[i] += x[i];
    }
    assert_close(&c, &twice, 0.0);
    tensor_dsl::__tensor_unoptimized! {
        let mut c[i] = x[i];
        c[i] += x[i];
    }
    assert_close(&c, &twice, 0.0);

    // A contraction: two statements either way.
    tensor! {
        let mut d[i] = x[i];
        d[i] += a[i, j] * x[j];
    }
    assert_close(&d, &product, 1e-12);
    tensor_dsl::__tensor_unoptimized! {
        let mut d[i] = x[i];
        d[i] += a[i, j] * x[j];
    }
    assert_close(&d, &product, 1e-12);
}

/// `*=` and `/=` combine the target with the value of the right-hand side, on tensors, views,
/// fixed positions and scalars; a product that sums is fine (distributivity).
#[test]
fn multiply_and_divide_assign() {
    let a = data::<f64>(&[7, 13], 1);
    let x = data::<f64>(&[13], 2);
    let mut c = data::<f64>(&[7], 3);
    let before = c.clone();
    tensor! {
        c[i] *= a[i, k] * x[k];
        c[i] /= 2 + abs(a[i, 0]);
    }
    let expected = reference(&[7], |ix| {
        let i = ix[0];
        at(&before, ix) * sum_over(&[13], |r| at(&a, &[i, r[0]]) * at(&x, r))
            / (2.0 + at(&a, &[i, 0]).abs())
    });
    assert_close(&c, &expected, 1e-12);

    let mut m = data::<f64>(&[7, 13], 4);
    let m0 = m.clone();
    let z = data::<f64>(&[7], 10);
    let column = m.view_mut().slice_axis(1, 2..5);
    tensor! { column[i, 1] *= -z[i] - 1; }
    let expected = reference(&[7, 13], |ix| {
        let (i, j) = (ix[0], ix[1]);
        let value = at(&m0, ix);
        if j == 3 {
            value * (-at(&z, &[i]) - 1.0)
        } else {
            value
        }
    });
    assert_close(&m, &expected, 1e-12);

    let mut s = 3.0;
    tensor! { s *= x[k] * x[k]; s /= 2; }
    let expected = 3.0 * x.as_slice().iter().map(|v| v * v).sum::<f64>() / 2.0;
    assert!((s - expected).abs() < 1e-12 * expected.abs());
}

/// A diagonal is a target too: `c[i, i] += …` writes it and leaves the rest.
#[test]
fn diagonal_targets() {
    let mut c = data::<f64>(&[13, 13], 5);
    let before = c.clone();
    let v = data::<f64>(&[13], 6);
    tensor! { c[i, i] += 1 + v[i]; }
    let expected = reference(&[13, 13], |ix| {
        at(&before, ix)
            + if ix[0] == ix[1] {
                1.0 + at(&v, &[ix[0]])
            } else {
                0.0
            }
    });
    assert_close(&c, &expected, 1e-12);
    let mut w = data::<f64>(&[3, 4, 3], 7);
    let w0 = w.clone();
    let m = data::<f64>(&[4, 5], 8);
    let y = data::<f64>(&[5], 9);
    tensor! { w[i, j, i] = m[j, k] * y[k]; }
    let expected = reference(&[3, 4, 3], |ix| {
        if ix[0] == ix[2] {
            sum_over(&[5], |r| at(&m, &[ix[1], r[0]]) * at(&y, r))
        } else {
            at(&w0, ix)
        }
    });
    assert_close(&w, &expected, 1e-12);
}

#[test]
fn rank_zero_tensors_are_accessed_with_empty_brackets() {
    let a = data::<f64>(&[7], 0);
    let m = data::<f64>(&[5, 5], 1);
    let dot = sum_over(&[7], |r| at(&a, r) * at(&a, r));
    let mut t = Tensor::<f64>::zeros([]);
    tensor! { t[] = a[i] * a[i]; }
    assert_close(&t, &reference(&[], |_| dot), 1e-12);
    tensor! { t[] += 1; t[] *= 2; }
    assert_close(&t, &reference(&[], |_| 2.0 * (dot + 1.0)), 1e-12);
    // A rank-0 result, read by later statements and by a contraction.
    tensor! {
        let trace[] = m[i, i];
        let shifted[i] = a[i] - trace[];
        let total = shifted[i] * t[];
    }
    let trace_value = sum_over(&[5], |r| at(&m, &[r[0], r[0]]));
    assert_eq!(trace.shape(), &[] as &[usize]);
    assert_close(&trace, &reference(&[], |_| trace_value), 1e-12);
    assert_close(
        &shifted,
        &reference(&[7], |ix| at(&a, ix) - trace_value),
        1e-12,
    );
    let expected = sum_over(&[7], |r| (at(&a, r) - trace_value) * 2.0 * (dot + 1.0));
    assert!((total - expected).abs() < 1e-9 * expected.abs().max(1.0));
    // The sum over an empty axis is zero.
    let empty = Tensor::<f64>::zeros([0]);
    tensor! { t[] = empty[i]; }
    assert_eq!(t.as_slice(), &[0.0]);
}

#[test]
fn a_rank_zero_access_of_a_tensor_with_axes_is_a_shape_error() {
    let a = data::<f64>(&[3], 0);
    let caught = std::panic::catch_unwind(|| {
        tensor! { let s = a[]; }
        s
    });
    let message = *caught.unwrap_err().downcast::<String>().unwrap();
    assert!(message.contains("a[]"), "{message}");
}

#[test]
fn a_dereferenced_scalar_is_a_target() {
    fn accumulate(norm: &mut f64, a: &Tensor<f64>) {
        tensor! { *norm += a[i] * a[i]; }
    }
    let a = data::<f64>(&[13], 2);
    let dot = sum_over(&[13], |r| at(&a, r) * at(&a, r));
    let mut norm = 1.0;
    accumulate(&mut norm, &a);
    assert!((norm - (1.0 + dot)).abs() < 1e-12);
    let r = &mut norm;
    tensor! { *r *= 2; *r -= a[i]; }
    let expected = 2.0 * (1.0 + dot) - sum_over(&[13], |r| at(&a, r));
    assert!((norm - expected).abs() < 1e-12);
    let mut boxed = Box::new(0.0f64);
    let handle = &mut boxed;
    tensor! { **handle = a[i]; }
    assert!((*boxed - sum_over(&[13], |r| at(&a, r))).abs() < 1e-12);
}

#[test]
fn an_empty_block_is_an_expression() {
    let unit: () = tensor! {};
    let closure = || tensor! {};
    assert_eq!((unit, closure()), ((), ()));
}

/// `t[perm] = a[i, j, k]` for the permutations of a rank-3 tensor, every element compared
/// exactly with `a`'s: four-, eight- and sixteen-byte elements (each size its own copy
/// kernel, or none), extents below, at and past the copy's 64-wide tiles and 8- or 4-wide
/// blocks, an empty axis, operands that are reversed or sliced views, a target whose rows are
/// apart, and the statements a copy kernel must not take (`+=`, a scale).
macro_rules! permuted_copies_are_exact {
    ($name:ident, $t:ty, $value:expr) => {
        #[test]
        fn $name() {
            let value: fn(usize) -> $t = $value;
            for shape in [
                [1, 1, 1],
                [7, 13, 3],
                [3, 70, 67],
                [2, 129, 65],
                [0, 5, 70],
                [33, 17, 9],
                [4, 200, 160],
            ] {
                let [n0, n1, n2] = shape;
                let a = Tensor::<$t>::from_fn(shape, |ix| value((ix[0] * n1 + ix[1]) * n2 + ix[2]));
                tensor! {
                    let kji[k, j, i] = a[i, j, k];
                    let ikj[i, k, j] = a[i, j, k];
                    let jik[j, i, k] = a[i, j, k];
                    let kij[k, i, j] = a[i, j, k];
                    let jki[j, k, i] = a[i, j, k];
                }
                // A reversed and a sliced operand; a target with four spare columns per row.
                let reversed = a.view().slice_axis_step(1, 0..n1, -1);
                let sliced = a.view().slice_axis(2, 0..n2.saturating_sub(1));
                let mut padded = Tensor::<$t>::from_fn([n2, n1 + 4, n0], |_| value(7));
                let into = padded.view_mut().slice_axis(1, 0..n1);
                tensor! {
                    let from_reversed[k, j, i] = reversed[i, j, k];
                    let from_sliced[k, j, i] = sliced[i, j, k];
                    into[k, j, i] = a[i, j, k];
                }
                let mut doubled = Tensor::<$t>::from_fn([n2, n1, n0], |_| value(3));
                let start = doubled.clone();
                tensor! {
                    doubled[k, j, i] += a[i, j, k];
                    let scaled[k, j, i] = 2 * a[i, j, k];
                }
                for i in 0..n0 {
                    for j in 0..n1 {
                        for k in 0..n2 {
                            let x = a.get(&[i, j, k]);
                            let at = format!("{shape:?} at ({i}, {j}, {k})");
                            assert_eq!(kji.get(&[k, j, i]), x, "kji {at}");
                            assert_eq!(ikj.get(&[i, k, j]), x, "ikj {at}");
                            assert_eq!(jik.get(&[j, i, k]), x, "jik {at}");
                            assert_eq!(kij.get(&[k, i, j]), x, "kij {at}");
                            assert_eq!(jki.get(&[j, k, i]), x, "jki {at}");
                            let x_reversed = a.get(&[i, n1 - 1 - j, k]);
                            assert_eq!(from_reversed.get(&[k, j, i]), x_reversed, "{at}");
                            if k + 1 < n2 {
                                assert_eq!(from_sliced.get(&[k, j, i]), x, "sliced {at}");
                            }
                            assert_eq!(padded.get(&[k, j, i]), x, "padded {at}");
                            let x = *x.unwrap();
                            let before = *start.get(&[k, j, i]).unwrap();
                            assert_eq!(*doubled.get(&[k, j, i]).unwrap(), before + x, "{at}");
                            assert_eq!(*scaled.get(&[k, j, i]).unwrap(), x + x, "{at}");
                        }
                    }
                }
                for k in 0..n2 {
                    for j in n1..n1 + 4 {
                        for i in 0..n0 {
                            let spare = padded.get(&[k, j, i]).unwrap();
                            assert_eq!(*spare, value(7), "spare column written");
                        }
                    }
                }
            }
        }
    };
}

permuted_copies_are_exact!(permuted_copies_of_f32_are_exact, f32, |n| n as f32 * 0.25
    - 3.0);
permuted_copies_are_exact!(permuted_copies_of_f64_are_exact, f64, |n| n as f64 * 0.5
    - 1e3);
permuted_copies_are_exact!(permuted_copies_of_i32_are_exact, i32, |n| n as i32 * 3 - 7);
permuted_copies_are_exact!(permuted_copies_of_i64_are_exact, i64, |n| -(n as i64) << 20);
permuted_copies_are_exact!(permuted_copies_of_c32_are_exact, tensor_dsl::c32, |n| {
    tensor_dsl::c32::new(n as f32, -(n as f32) * 0.5)
});
permuted_copies_are_exact!(permuted_copies_of_c64_are_exact, tensor_dsl::c64, |n| {
    tensor_dsl::c64::new(n as f64 + 0.5, -(n as f64))
});

/// Transposes past the size from which copies stream their stores around the caches (8 MiB
/// of target), with rows that are not a whole number of cache lines apart (odd extents, and a
/// view whose rows start off the lines): every element lands where a naive copy puts it, and
/// nothing outside the view changes.
#[test]
fn transposes_past_the_streaming_size_with_rows_off_the_cache_lines() {
    // 3001 × 701 f32 and 1501 × 701 f64: just past 8 MiB each.
    let s = Tensor::<f32>::from_fn([3001, 701], |ix| (ix[0] * 701 + ix[1]) as f32);
    let mut t = Tensor::<f32>::zeros([701, 3001]);
    tensor! { t[j, i] = s[i, j]; }
    assert!(t == Tensor::from_fn([701, 3001], |ix| s[[ix[1], ix[0]]]));

    let s = Tensor::<f64>::from_fn([701, 1501], |ix| (ix[0] * 1501 + ix[1]) as f64 - 0.5);
    let mut wide = Tensor::<f64>::from_fn([1501, 709], |ix| -((ix[0] + ix[1]) as f64));
    let before = wide.clone();
    {
        // Rows 709 elements apart, the view three in.
        let view = wide.view_mut().slice_axis(1, 3..704);
        tensor! { view[j, i] = s[i, j]; }
    }
    let expected = Tensor::from_fn([1501, 709], |ix| {
        if (3..704).contains(&ix[1]) {
            s[[ix[1] - 3, ix[0]]]
        } else {
            before[[ix[0], ix[1]]]
        }
    });
    assert!(wide == expected);
}

/// Permutations whose step-by-one axes are short and differ between the two sides (a
/// reversal of five small axes, `c[k, j, i] = a[i, j, k]` with `i` two long, a reversed
/// source view), copied in tiles of joined axes: every element lands where a naive copy puts
/// it, at odd extents, past the threads' split and past the streaming size.
#[test]
fn permutations_of_short_axes_match_a_naive_copy() {
    let s = Tensor::<f32>::from_fn([7, 13, 5, 9, 6], |ix| {
        ix.iter().fold(0, |n, &i| n * 16 + i) as f32
    });
    let mut t = Tensor::<f32>::zeros([6, 9, 5, 13, 7]);
    tensor! { t[e, d, c, b, a] = s[a, b, c, d, e]; }
    assert!(
        t == Tensor::from_fn([6, 9, 5, 13, 7], |ix| s
            [[ix[4], ix[3], ix[2], ix[1], ix[0]]])
    );

    // 2 × 1100 × 1000 f32: past 8 MiB, streamed; the source read through a reversed view.
    let s = Tensor::<f32>::from_fn([2, 1100, 1000], |ix| {
        (ix[0] * 1_100_000 + ix[1] * 1000 + ix[2]) as f32
    });
    let reversed = s.view().slice_axis_step(1, 0..1100, -1);
    let mut t = Tensor::<f32>::zeros([1000, 1100, 2]);
    tensor! { t[k, j, i] = reversed[i, j, k]; }
    assert!(t == Tensor::from_fn([1000, 1100, 2], |ix| s[[ix[2], 1099 - ix[1], ix[0]]]));

    let s = Tensor::<f64>::from_fn([24, 24, 24, 24], |ix| {
        ix.iter().fold(0, |n, &i| n * 32 + i) as f64
    });
    let mut t = Tensor::<f64>::zeros([24, 24, 24, 24]);
    tensor! { t[a, c, d, b] = s[a, b, c, d]; }
    assert!(t == Tensor::from_fn([24, 24, 24, 24], |ix| s[[ix[0], ix[3], ix[1], ix[2]]]));

    // `i` short, joined to `j` in the target, whose rows (`k`) lie whole pages apart (48 × 64
    // elements: 12 and 24 KiB), which go to the loop nest instead of joined tiles; and 40 ×
    // 100 × 80, rows not on pages, which stays joined. With one and two threads.
    for (ni, nj, nk) in [(48, 64, 96), (40, 100, 80)] {
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let s = Tensor::<f32>::from_fn([ni, nj, nk], |ix| {
                (ix[0] * nj * nk + ix[1] * nk + ix[2]) as f32
            });
            let s64 = s.map(|&x| f64::from(x) - 0.5);
            let (mut t, mut t64) = (
                Tensor::<f32>::zeros([nk, nj, ni]),
                Tensor::zeros([nk, nj, ni]),
            );
            pool.install(|| {
                tensor! { t[k, j, i] = s[i, j, k]; }
                tensor! { t64[k, j, i] = s64[i, j, k]; }
            });
            assert!(t == Tensor::from_fn([nk, nj, ni], |ix| s[[ix[2], ix[1], ix[0]]]));
            assert!(t64 == Tensor::from_fn([nk, nj, ni], |ix| s64[[ix[2], ix[1], ix[0]]]));
        }
    }
}

/// Transposes of tall matrices of five to a few dozen columns (records of a few fields split
/// into one row per field) and their converse (the fields gathered into records), in the
/// caches and past the streaming size, on one and two threads: every element where a naive
/// copy puts it.
#[test]
fn transposes_of_few_rows_or_columns_match_a_naive_copy() {
    // 300,007 × 8 f32 and × 7 f64: past 8 MiB, streamed; an odd count of records, so the
    // target's rows start off the lines. 100,003 × 23 and × 40 f32 (× 7 f64): past it too,
    // records of 23 and 40 fields (92 and 160 bytes, off the lines) gathered a vector's worth
    // at a time.
    for (records, fields) in [
        (1001, 5),
        (1001, 13),
        (300_007, 8),
        (100_003, 23),
        (100_003, 40),
    ] {
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            let s = Tensor::<f32>::from_fn([records, fields], |ix| (ix[0] * fields + ix[1]) as f32);
            let narrow = fields.min(7);
            let s64 = Tensor::<f64>::from_fn([records, narrow], |ix| {
                (ix[0] * narrow + ix[1]) as f64 - 0.5
            });
            let (mut t, mut back) = (
                Tensor::zeros([fields, records]),
                Tensor::zeros([records, fields]),
            );
            let (mut t64, mut back64) = (
                Tensor::zeros([narrow, records]),
                Tensor::zeros([records, narrow]),
            );
            pool.install(|| {
                tensor! {
                    t[j, i] = s[i, j];
                    back[i, j] = t[j, i];
                    t64[j, i] = s64[i, j];
                    back64[i, j] = t64[j, i];
                }
            });
            assert!(t == Tensor::from_fn([fields, records], |ix| s[[ix[1], ix[0]]]));
            assert!(t64 == Tensor::from_fn([narrow, records], |ix| s64[[ix[1], ix[0]]]));
            assert!(
                back == s && back64 == s64,
                "{records} × {fields}, {threads} threads"
            );
        }
    }
}

/// Streamed transposes whose target rows are off the cache lines and few (a matrix of a few
/// dozen long rows, or a strip of a few hundred rows per point of an outer loop), in strips
/// whose row count is not a whole number of the kernel's blocks, on one and two threads:
/// every element where a naive copy puts it.
#[test]
fn transposes_into_few_rows_off_the_lines_match_a_naive_copy() {
    // 120,011 records of 23 `f32` and 13 `f64` fields (past 8 MiB): 23 and 13 target rows,
    // neither a whole number of blocks (16 and 8), 120,011 elements apart (off the lines).
    let (records, fields, fields64) = (120_011, 23, 13);
    let s = Tensor::<f32>::from_fn([records, fields], |ix| (ix[0] * fields + ix[1]) as f32);
    let s64 = Tensor::<f64>::from_fn([records, fields64], |ix| {
        (ix[0] * fields64 + ix[1]) as f64 + 0.5
    });
    // `t[k, i, j] = x[i, j, k]` over 101 × 131 × 211 `f32`: a strip of 211 target rows of 131
    // elements (past the 128 from which such strips stream) per point of `i`.
    let x = Tensor::<f32>::from_fn([101, 131, 211], |ix| {
        (ix[0] * 131 * 211 + ix[1] * 211 + ix[2]) as f32
    });
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        let mut t = Tensor::zeros([fields, records]);
        let mut t64 = Tensor::zeros([fields64, records]);
        let mut y = Tensor::zeros([211, 101, 131]);
        pool.install(|| {
            tensor! {
                t[j, i] = s[i, j];
                t64[j, i] = s64[i, j];
                y[k, i, j] = x[i, j, k];
            }
        });
        assert!(
            t == Tensor::from_fn([fields, records], |ix| s[[ix[1], ix[0]]]),
            "{threads} threads"
        );
        assert!(t64 == Tensor::from_fn([fields64, records], |ix| s64[[ix[1], ix[0]]]));
        assert!(y == Tensor::from_fn([211, 101, 131], |ix| x[[ix[1], ix[2], ix[0]]]));
    }
}

/// Images of three channels transposed (`t[w, h, c] = s[h, w, c]`), in the caches and past
/// the streaming size, their target rows on the cache lines or off them, with heights and
/// widths that cut the kernels' blocks short, on one and two threads: every element where a
/// naive copy puts it.
#[test]
fn images_of_three_channels_transposed_match_a_naive_copy() {
    fn check<T: tensor_dsl::Element + std::fmt::Debug>(
        [h, w]: [usize; 2],
        threads: usize,
        value: fn(usize) -> T,
    ) {
        let s = Tensor::<T>::from_fn([h, w, 3], |ix| value((ix[0] * w + ix[1]) * 3 + ix[2]));
        let mut t = Tensor::<T>::zeros([w, h, 3]);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| tensor! { t[j, i, k] = s[i, j, k]; });
        assert!(
            t == Tensor::from_fn([w, h, 3], |ix| s[[ix[1], ix[0], ix[2]]]),
            "{h} × {w} × 3, {threads} threads"
        );
    }
    for threads in [1, 2] {
        // In the caches: 37 × 45 and 150 × 171 (blocks cut short), 64 × 64 (whole blocks).
        for shape in [[37, 45], [150, 171], [64, 64]] {
            check(shape, threads, |n| n as f32 + 0.5);
            check(shape, threads, |n| n as f64 - 0.25);
        }
        // Past 8 MiB, streamed: target rows of 1024 `f32` runs and 512 `f64` runs (whole lines,
        // streamed), 1000 `f32` and 700 `f64` (off the lines, stored the cached way); an odd
        // number of them.
        check([1024, 1023], threads, |n| n as f32);
        check([1000, 1001], threads, |n| n as f32);
        check([512, 1025], threads, |n| n as f64);
        check([700, 701], threads, |n| n as f64);
    }
}

/// Reversals of two, three and four axes past the streaming size, their tiles (a cache line
/// of each target row) moved in bricks (a brick of points of the loop outside them at a time,
/// or, for a matrix, of tiles side by side), at extents that leave a short last brick and
/// rows past the kernels' last whole block: every element where a naive copy puts it.
#[test]
fn reversals_moved_in_bricks_match_a_naive_copy() {
    // 160 × 101 × 130 f32: just past 8 MiB; 101 points of `j`, not a multiple of a brick.
    let s = Tensor::<f32>::from_fn([160, 101, 130], |ix| {
        (ix[0] * 101 * 130 + ix[1] * 130 + ix[2]) as f32
    });
    let mut t = Tensor::<f32>::zeros([130, 101, 160]);
    tensor! { t[k, j, i] = s[i, j, k]; }
    assert!(t == Tensor::from_fn([130, 101, 160], |ix| s[[ix[2], ix[1], ix[0]]]));

    let s = Tensor::<f64>::from_fn([24, 37, 33, 40], |ix| {
        ix.iter().fold(0, |n, &i| n * 64 + i) as f64 - 0.5
    });
    let mut t = Tensor::<f64>::zeros([40, 33, 37, 24]);
    tensor! { t[l, k, j, i] = s[i, j, k, l]; }
    assert!(t == Tensor::from_fn([40, 33, 37, 24], |ix| s[[ix[3], ix[2], ix[1], ix[0]]]));

    // `j` three long, too short for a brick: each of its points' tiles side by side in
    // bricks (rows of 63 lines: one brick of 32, one of 31).
    let s = Tensor::<f32>::from_fn([1008, 3, 800], |ix| {
        (ix[0] * 2400 + ix[1] * 800 + ix[2]) as f32
    });
    let mut t = Tensor::<f32>::zeros([800, 3, 1008]);
    tensor! { t[k, j, i] = s[i, j, k]; }
    assert!(t == Tensor::from_fn([800, 3, 1008], |ix| s[[ix[2], ix[1], ix[0]]]));

    // A matrix's transpose: its target rows' whole lines in bricks side by side (125 lines a
    // row: three bricks and one of 29), 1100 rows in blocks of a tile's 256 and a rest.
    let s = Tensor::<f32>::from_fn([2000, 1100], |ix| (ix[0] * 1100 + ix[1]) as f32);
    let mut t = Tensor::<f32>::zeros([1100, 2000]);
    tensor! { t[j, i] = s[i, j]; }
    assert!(t == Tensor::from_fn([1100, 2000], |ix| s[[ix[1], ix[0]]]));
}

/// Copies that keep a short last axis while the axes before it swap (`t[j, i, k] = s[i, j,
/// k]`, `t[a, b, e, f] = s[a, e, b, f]`), past the streaming size: the target's rows gathered
/// run by run and streamed, every element where a naive copy puts it.
#[test]
fn short_runs_kept_while_axes_swap_match_a_naive_copy() {
    // Rows of (i, k) past the gathering buffer, cut into chunks; bands along j cut short.
    let s = Tensor::<f32>::from_fn([1000, 301, 7], |ix| {
        (ix[0] * 10_000 + ix[1] * 10 + ix[2]) as f32
    });
    let mut t = Tensor::<f32>::zeros([301, 1000, 7]);
    tensor! { t[j, i, k] = s[i, j, k]; }
    assert!(t == Tensor::from_fn([301, 1000, 7], |ix| s[[ix[1], ix[0], ix[2]]]));

    let s = Tensor::<f64>::from_fn([60, 12, 131, 12], |ix| {
        ix.iter().fold(0, |n, &i| n * 256 + i) as f64
    });
    let mut t = Tensor::<f64>::zeros([60, 131, 12, 12]);
    tensor! { t[a, b, e, f] = s[a, e, b, f]; }
    assert!(t == Tensor::from_fn([60, 131, 12, 12], |ix| s[[ix[0], ix[2], ix[1], ix[3]]]));
}

/// Transposes of sixteen-byte elements (`c64`), past the streaming size and with two-long
/// runs of `f64`s kept while the axes around them swap: every element where a naive copy
/// puts it.
#[test]
fn sixteen_byte_transposes_match_a_naive_copy() {
    use tensor_dsl::c64;
    let s = Tensor::<c64>::from_fn([1100, 601], |ix| c64::new(ix[0] as f64, -(ix[1] as f64)));
    let mut t = Tensor::<c64>::zeros([601, 1100]);
    tensor! { t[j, i] = s[i, j]; }
    assert!(t == Tensor::from_fn([601, 1100], |ix| s[[ix[1], ix[0]]]));

    let s = Tensor::<f64>::from_fn([700, 800, 2], |ix| {
        (ix[0] * 1600 + ix[1] * 2 + ix[2]) as f64
    });
    let mut t = Tensor::<f64>::zeros([800, 700, 2]);
    tensor! { t[j, i, k] = s[i, j, k]; }
    assert!(t == Tensor::from_fn([800, 700, 2], |ix| s[[ix[1], ix[0], ix[2]]]));
}

//! Contractions end to end against naive loops: matmul, the seed contraction, batched and
//! many-operand terms, outer products, odd and zero extents, f32 and f64.

mod common;

use common::{assert_close, at, data, reference, sum_over};
use tensor_dsl::{tensor, Tensor};

#[test]
fn seed_contraction_over_odd_extents() {
    for &(ni, nj, nk, nl) in &[(7, 13, 5, 3), (1, 1, 1, 1), (13, 7, 1, 7), (3, 4, 0, 2)] {
        let a = data::<f64>(&[ni, nk, nl], 0);
        let b = data::<f64>(&[nk, nj, nl], 1);
        tensor! { let c[i, j] = a[i, k, l] * b[k, j, l]; }
        let expected = reference(&[ni, nj], |ix| {
            sum_over(&[nk, nl], |r| {
                at(&a, &[ix[0], r[0], r[1]]) * at(&b, &[r[0], ix[1], r[1]])
            })
        });
        assert_close(&c, &expected, 1e-12);
    }
}

#[test]
fn contractions_whose_index_groups_do_not_merge_are_copied_then_one_gemm() {
    // `b[k, j, l]` keeps k and l apart, so the GEMM would be one call per l; above the copy
    // threshold the runtime copies b into (k, l, j) order first. Odd extents, a permuted and
    // a sliced operand, every assignment mode, NaN in a target that `=` must not read.
    let (ni, nj, nk, nl) = (41, 37, 19, 13);
    let a = data::<f64>(&[ni, nk, nl], 0);
    let b_stored = data::<f64>(&[nl, nk, nj], 1);
    let b = b_stored.view().permuted_axes(&[1, 2, 0]);
    let a_padded = data::<f64>(&[ni + 3, nk, nl + 2], 2);
    let a_sliced = a_padded
        .view()
        .slice_axis(0, 1..ni + 1)
        .slice_axis(2, 2..nl + 2);
    let expected = |a: &dyn Fn(usize, usize, usize) -> f64| {
        reference(&[ni, nj], |ix| {
            sum_over(&[nk, nl], |r| {
                a(ix[0], r[0], r[1]) * at(&b_stored, &[r[1], r[0], ix[1]])
            })
        })
    };
    let plain = expected(&|i, k, l| at(&a, &[i, k, l]));
    let mut c = Tensor::<f64>::from_fn(&[ni, nj], |_| f64::NAN);
    tensor! { c[i, j] = a[i, k, l] * b[k, j, l]; }
    assert_close(&c, &plain, 1e-12);
    let before = c.clone();
    tensor! { c[i, j] += 2 * a[i, k, l] * b[k, j, l]; }
    assert_close(&c, &reference(&[ni, nj], |ix| 3.0 * at(&before, ix)), 1e-12);
    tensor! { c[i, j] = 0.5 * c[i, j] - a[i, k, l] * b[k, j, l]; }
    assert_close(&c, &reference(&[ni, nj], |ix| 0.5 * at(&before, ix)), 1e-12);
    tensor! { let d[i, j] = a_sliced[i, k, l] * b[k, j, l]; }
    let sliced = expected(&|i, k, l| at(&a_padded, &[i + 1, k, l + 2]));
    assert_close(&d, &sliced, 1e-12);
    // f32, and a target that is itself a transposed view.
    let (a32, b32) = (data::<f32>(&[ni, nk, nl], 0), data::<f32>(&[nl, nk, nj], 1));
    let b32 = b32.view().permuted_axes(&[1, 2, 0]);
    let mut stored = Tensor::<f32>::zeros([nj, ni]);
    let transposed = stored.view_mut().permuted_axes(&[1, 0]);
    tensor! { transposed[i, j] = a32[i, k, l] * b32[k, j, l]; }
    let back = stored.view().permuted_axes(&[1, 0]).to_tensor();
    assert_close(&back, &plain, 1e-4);
}

#[test]
fn contractions_whose_target_groups_do_not_merge_copy_the_target_too() {
    // `w[a, b, c, d] = x[d, b, e, a] · y[e, c]`: the rows (a, b, d) are apart in w (c between
    // them) and out of order in x, so the GEMM would be a call per (a, b); above the copy
    // threshold x and w are copied into (d, b, a) order, one GEMM fills the copy of w, which
    // is then combined into w as the statement says. Odd extents, every assignment mode, NaN
    // in a target that `=` must not read, a target that is a permuted view; and
    // `z[a, b, c] = x[a, d, e, c] · y[e, b, d]` (contracted loops out of order too).
    let (na, nb, nc, nd, ne) = (17, 3, 40, 16, 64);
    let x = data::<f64>(&[nd, nb, ne, na], 0);
    let y = data::<f64>(&[ne, nc], 1);
    let product = reference(&[na, nb, nc, nd], |ix| {
        sum_over(&[ne], |r| {
            at(&x, &[ix[3], ix[1], r[0], ix[0]]) * at(&y, &[r[0], ix[2]])
        })
    });
    let mut w = Tensor::<f64>::from_fn(&[na, nb, nc, nd], |_| f64::NAN);
    tensor! { w[a, b, c, d] = x[d, b, e, a] * y[e, c]; }
    assert_close(&w, &product, 1e-12);
    tensor! { w[a, b, c, d] += 2 * x[d, b, e, a] * y[e, c]; }
    assert_close(
        &w,
        &reference(&[na, nb, nc, nd], |ix| 3.0 * at(&product, ix)),
        1e-12,
    );
    tensor! { w[a, b, c, d] = 0.5 * w[a, b, c, d] - x[d, b, e, a] * y[e, c]; }
    assert_close(
        &w,
        &reference(&[na, nb, nc, nd], |ix| 0.5 * at(&product, ix)),
        1e-12,
    );
    let mut stored = Tensor::<f64>::zeros([nd, nc, nb, na]);
    let reversed = stored.view_mut().permuted_axes(&[3, 2, 1, 0]);
    tensor! { reversed[a, b, c, d] = x[d, b, e, a] * y[e, c]; }
    let back = stored.view().permuted_axes(&[3, 2, 1, 0]).to_tensor();
    assert_close(&back, &product, 1e-12);

    let (na, nb, nc, nd, ne) = (33, 29, 17, 9, 11);
    let x = data::<f32>(&[na, nd, ne, nc], 2);
    let y = data::<f32>(&[ne, nb, nd], 3);
    tensor! { let z[a, b, c] = x[a, d, e, c] * y[e, b, d]; }
    let expected = reference(&[na, nb, nc], |ix| {
        sum_over(&[nd, ne], |r| {
            at(&x, &[ix[0], r[0], r[1], ix[2]]) * at(&y, &[r[1], ix[1], r[0]])
        })
    });
    assert_close(&z, &expected, 1e-4);
}

#[test]
fn contractions_whose_calls_would_scatter_the_target_run_in_panels() {
    // `z[a, b, c, d, e, f] = x[d, e, g, a] · y[g, f, b, c]` (TCCG's abcdef-dega-gfbc): every
    // GEMM call would have C's rows and columns apart, and C's runs (f) are too short to copy
    // C for, so the host packs panels of x and y and writes each tile where it lies. Odd
    // extents, every assignment mode, NaN in a target that `=` must not read, a target that is
    // a permuted view, `f32` and `f64`.
    fn check<T: tensor_dsl::Real>(rtol: f64) {
        let (n, ng) = ([5, 7, 6, 3, 4, 9], 40);
        let x = data::<T>(&[n[3], n[4], ng, n[0]], 0);
        let y = data::<T>(&[ng, n[5], n[1], n[2]], 1);
        let product = reference(&n, |ix| {
            sum_over(&[ng], |r| {
                at(&x, &[ix[3], ix[4], r[0], ix[0]]) * at(&y, &[r[0], ix[5], ix[1], ix[2]])
            })
        });
        let mut z = Tensor::<T>::from_fn(&n, |_| T::from_f64(f64::NAN));
        tensor! { z[a, b, c, d, e, f] = x[d, e, g, a] * y[g, f, b, c]; }
        assert_close(&z, &product, rtol);
        tensor! { z[a, b, c, d, e, f] += 2 * x[d, e, g, a] * y[g, f, b, c]; }
        assert_close(&z, &reference(&n, |ix| 3.0 * at(&product, ix)), rtol);
        let half = T::from_f64(0.5);
        tensor! { z[a, b, c, d, e, f] = half * z[a, b, c, d, e, f] - x[d, e, g, a] * y[g, f, b, c]; }
        assert_close(&z, &reference(&n, |ix| 0.5 * at(&product, ix)), rtol);
        let mut stored = Tensor::<T>::zeros([n[5], n[4], n[3], n[2], n[1], n[0]]);
        let reversed = stored.view_mut().permuted_axes(&[5, 4, 3, 2, 1, 0]);
        tensor! { reversed[a, b, c, d, e, f] = x[d, e, g, a] * y[g, f, b, c]; }
        let back = stored.view().permuted_axes(&[5, 4, 3, 2, 1, 0]).to_tensor();
        assert_close(&back, &product, rtol);
    }
    check::<f64>(1e-12);
    check::<f32>(1e-4);
}

#[test]
fn matmul_f32_and_zero_sized_results() {
    for &(m, n, k) in &[(7, 13, 1), (0, 3, 4), (5, 0, 2), (13, 7, 13)] {
        let a = data::<f32>(&[m, k], 2);
        let b = data::<f32>(&[k, n], 3);
        tensor! { let c[i, j] = a[i, p] * b[p, j]; }
        let expected = reference(&[m, n], |ix| {
            sum_over(&[k], |r| at(&a, &[ix[0], r[0]]) * at(&b, &[r[0], ix[1]]))
        });
        assert_close(&c, &expected, 1e-5);
    }
}

#[test]
fn batched_matmul_and_outer_product() {
    let a = data::<f64>(&[3, 4, 5], 0);
    let b = data::<f64>(&[3, 5, 2], 1);
    let u = data::<f64>(&[4], 2);
    let v = data::<f64>(&[7], 3);
    tensor! {
        let c[n, i, j] = a[n, i, k] * b[n, k, j];
        let outer[i, j] = u[i] * v[j];
    }
    let expected = reference(&[3, 4, 2], |ix| {
        sum_over(&[5], |r| {
            at(&a, &[ix[0], ix[1], r[0]]) * at(&b, &[ix[0], r[0], ix[2]])
        })
    });
    assert_close(&c, &expected, 1e-12);
    let expected = reference(&[4, 7], |ix| at(&u, &[ix[0]]) * at(&v, &[ix[1]]));
    assert_close(&outer, &expected, 1e-12);
}

#[test]
fn four_index_transform_with_five_factors() {
    let n = 3;
    let c = data::<f64>(&[n, n], 0);
    let g = data::<f64>(&[n, n, n, n], 1);
    tensor! { let d[p, q, r, s] = c[p, a] * c[q, b] * c[r, e] * c[s, f] * g[a, b, e, f]; }
    let expected = reference(&[n, n, n, n], |ix| {
        sum_over(&[n, n, n, n], |r| {
            at(&c, &[ix[0], r[0]])
                * at(&c, &[ix[1], r[1]])
                * at(&c, &[ix[2], r[2]])
                * at(&c, &[ix[3], r[3]])
                * at(&g, &[r[0], r[1], r[2], r[3]])
        })
    });
    assert_close(&d, &expected, 1e-12);
}

#[test]
fn four_index_transforms_past_the_gemm_threshold_reuse_their_temporaries() {
    // Extents past the GEMM threshold, so each stage is a GEMM over temporaries laid out for
    // it; run in sequence, so later runs get the earlier runs' temporaries back with stale
    // contents; and once into a permuted view, which changes the layouts chosen. At 17 the
    // host lays the temporaries out in place (each stage in the order a user would write it)
    // rather than as one call per stage.
    for (n, seed) in [(9, 0), (7, 1), (10, 2), (17, 3)] {
        let c = data::<f64>(&[n, n], seed);
        let g = data::<f64>(&[n, n, n, n], seed + 1);
        let mut d = Tensor::<f64>::zeros([n, n, n, n]);
        let transposed = d.view_mut().permuted_axes(&[3, 1, 0, 2]);
        tensor! {
            let e[p, q, r, s] = c[p, a] * c[q, b] * c[r, x] * c[s, f] * g[a, b, x, f];
            transposed[p, q, r, s] = c[p, a] * c[q, b] * c[r, x] * c[s, f] * g[a, b, x, f];
        }
        // The naive reference one index at a time (n⁵ per stage rather than n⁸ at once):
        // each stage replaces one index of g by its transform.
        let mut expected = reference(&[n, n, n, n], |ix| at(&g, ix));
        for axis in 0..4 {
            let previous = expected.clone();
            expected = reference(&[n, n, n, n], |ix| {
                sum_over(&[n], |r| {
                    let mut from = ix.to_vec();
                    from[axis] = r[0];
                    at(&c, &[ix[axis], r[0]]) * at(&previous, &from)
                })
            });
        }
        assert_close(&e, &expected, 1e-10);
        let back = d.view().permuted_axes(&[3, 1, 0, 2]).to_tensor();
        assert_close(&back, &expected, 1e-10);
    }
}

#[test]
fn scalar_results_and_scalar_targets() {
    let x = data::<f64>(&[13], 0);
    let y = data::<f64>(&[13], 1);
    let m = data::<f64>(&[7, 7], 2);
    let mut total = 1.5;
    tensor! {
        let dot = x[i] * y[i];
        let mut trace: f64 = m[i, i];
        total += 2 * x[i] * y[i];
    }
    let expected_dot = sum_over(&[13], |r| at(&x, r) * at(&y, r));
    common::assert_close_scalar(dot, expected_dot, 1e-12);
    common::assert_close_scalar(total, 1.5 + 2.0 * expected_dot, 1e-12);
    let expected_trace = sum_over(&[7], |r| at(&m, &[r[0], r[0]]));
    common::assert_close_scalar(trace, expected_trace, 1e-12);
    trace += 1.0;
    assert!(trace > expected_trace);

    let empty = Tensor::<f64>::zeros([0]);
    tensor! { let nothing = empty[i] * empty[i]; }
    assert_eq!(nothing, 0.0);
}

#[test]
fn operands_as_references_and_fields() {
    struct Layer {
        weight: Tensor<f64>,
        bias: Tensor<f64>,
    }
    let layer = Layer {
        weight: data(&[4, 3], 0),
        bias: data(&[4], 1),
    };
    let x = data::<f64>(&[2, 3], 2);
    let x_ref = &x;
    let model = (layer,);
    tensor! { let y[b, o] = model.0.weight[o, k] * x_ref[b, k] + model.0.bias[o]; }
    let expected = reference(&[2, 4], |ix| {
        sum_over(&[3], |r| {
            at(&model.0.weight, &[ix[1], r[0]]) * at(&x, &[ix[0], r[0]])
        }) + at(&model.0.bias, &[ix[1]])
    });
    assert_close(&y, &expected, 1e-12);
}

/// Shapes large enough for the GEMM path (more than 32³ multiply-adds per call), with strided,
/// transposed, sliced and diagonal operands, batches, and every way of writing the target.
#[test]
fn gemm_sized_contractions_over_strided_views() {
    let (m, n, k) = (37, 29, 41);
    let a = data::<f64>(&[k, m], 0); // used transposed
    let b_wide = data::<f64>(&[k, n + 6], 1); // used sliced
    let a_t = a.view().permuted_axes(&[1, 0]);
    let b = b_wide.view().slice_axis(1, 3..3 + n);
    let before = data::<f64>(&[m, n], 2);
    let product =
        |i: usize, j: usize| sum_over(&[k], |r| at(&a, &[r[0], i]) * at(&b_wide, &[r[0], j + 3]));

    let mut c = before.clone();
    let beta = 0.25;
    tensor! { c[i, j] = beta * c[i, j] - 2 * a_t[i, p] * b[p, j]; }
    assert_close(
        &c,
        &reference(&[m, n], |ix| {
            0.25 * at(&before, ix) - 2.0 * product(ix[0], ix[1])
        }),
        1e-12,
    );

    // Into a transposed view of the target, accumulating.
    let mut storage = before.clone();
    let target = storage.view_mut().permuted_axes(&[1, 0]);
    tensor! { target[j, i] += a_t[i, p] * b[p, j]; }
    drop(target);
    assert_close(
        &storage,
        &reference(&[m, n], |ix| at(&before, ix) + product(ix[0], ix[1])),
        1e-12,
    );

    // Batched, with the batch index in different positions, and a diagonal operand.
    let x = data::<f32>(&[3, 40, 35], 3);
    let y = data::<f32>(&[35, 3, 33], 4);
    tensor! { let z[i, bt, j] = x[bt, i, p] * y[p, bt, j]; }
    let expected = reference(&[40, 3, 33], |ix| {
        sum_over(&[35], |r| {
            at(&x, &[ix[1], ix[0], r[0]]) * at(&y, &[r[0], ix[1], ix[2]])
        })
    });
    assert_close(&z, &expected, 1e-5);
    let d = data::<f64>(&[40, 40, 50], 5);
    let e = data::<f64>(&[50, 45], 6);
    tensor! { let f[i, j] = d[i, i, p] * e[p, j]; }
    let expected = reference(&[40, 45], |ix| {
        sum_over(&[50], |r| {
            at(&d, &[ix[0], ix[0], r[0]]) * at(&e, &[r[0], ix[1]])
        })
    });
    assert_close(&f, &expected, 1e-12);
}

/// Small square products (m, n and k all at least 8, fewer than 32³ multiply-adds) are GEMM
/// calls too, thin ones (a matrix times a vector, a side below 8) loop nests: both through
/// transposed views and every way of writing the target, batched, against naive loops.
#[test]
fn small_square_and_thin_contractions_over_views() {
    for (m, n, k) in [
        (8, 8, 8),
        (13, 9, 17),
        (24, 24, 24),
        (31, 7, 31),
        (40, 1, 33),
    ] {
        let a = data::<f64>(&[k, m], 0); // used transposed
        let a_t = a.view().permuted_axes(&[1, 0]);
        let b = data::<f64>(&[k, n], 1);
        let before = data::<f64>(&[m, n], 2);
        let product =
            |i: usize, j: usize| sum_over(&[k], |r| at(&a, &[r[0], i]) * at(&b, &[r[0], j]));
        let (mut assigned, mut added, mut scaled) =
            (before.clone(), before.clone(), before.clone());
        let mut storage = before.clone();
        let transposed = storage.view_mut().permuted_axes(&[1, 0]);
        tensor! {
            assigned[i, j] = a_t[i, p] * b[p, j];
            added[i, j] += 2 * a_t[i, p] * b[p, j];
            scaled[i, j] = 0.5 * scaled[i, j] - a_t[i, p] * b[p, j];
            transposed[j, i] = a[p, i] * b[p, j];
        }
        drop(transposed);
        let shape = [m, n];
        assert_close(
            &assigned,
            &reference(&shape, |ix| product(ix[0], ix[1])),
            1e-12,
        );
        let expected = reference(&shape, |ix| at(&before, ix) + 2.0 * product(ix[0], ix[1]));
        assert_close(&added, &expected, 1e-12);
        let expected = reference(&shape, |ix| 0.5 * at(&before, ix) - product(ix[0], ix[1]));
        assert_close(&scaled, &expected, 1e-12);
        assert_close(
            &storage,
            &reference(&shape, |ix| product(ix[0], ix[1])),
            1e-12,
        );
        // Batched: a GEMM per batch.
        let x = data::<f32>(&[5, m, k], 3);
        let y = data::<f32>(&[5, k, n], 4);
        tensor! { let z[bt, i, j] = x[bt, i, p] * y[bt, p, j]; }
        let expected = reference(&[5, m, n], |ix| {
            sum_over(&[k], |r| {
                at(&x, &[ix[0], ix[1], r[0]]) * at(&y, &[ix[0], r[0], ix[2]])
            })
        });
        assert_close(&z, &expected, 1e-5);
    }
}

/// BLAS's convention on every path: with β = 0 the target is not read, so NaN already there
/// does not reach the result (below the GEMM threshold, a loop nest; above it, a GEMM).
#[test]
fn beta_zero_does_not_read_the_target() {
    for (m, n, k) in [(3, 7, 5), (40, 33, 37)] {
        let a = data::<f64>(&[m, k], 0);
        let b = data::<f64>(&[k, n], 1);
        let mut c = Tensor::from_fn([m, n], |_| f64::NAN);
        let beta = 0.0;
        tensor! { c[i, j] = beta * c[i, j] + a[i, p] * b[p, j]; }
        let expected = reference(&[m, n], |ix| {
            sum_over(&[k], |r| at(&a, &[ix[0], r[0]]) * at(&b, &[r[0], ix[1]]))
        });
        assert_close(&c, &expected, 1e-12);
    }
}

/// The README's rule, for every form of statement: a `β · target` term with β = 0 does not read
/// the target, whatever else the statement holds, so NaN already there stays out; a β other
/// than 0 still reads it.
#[test]
fn beta_zero_does_not_read_the_target_in_any_form() {
    let beta = 0.0;
    for (m, n, k) in [(3, 7, 5), (40, 33, 37)] {
        let (a, b) = (data::<f64>(&[m, k], 0), data::<f64>(&[k, n], 1));
        let (d, e) = (data::<f64>(&[m, n], 2), data::<f64>(&[m, n], 3));
        let nan = || Tensor::from_fn([m, n], |_| f64::NAN);
        let product =
            |ix: &[usize]| sum_over(&[k], |r| at(&a, &[ix[0], r[0]]) * at(&b, &[r[0], ix[1]]));
        // With an extra term: the GEMM and a point-wise step (the README's `explain` example).
        let mut c = nan();
        tensor! { c[i, j] = beta * c[i, j] + a[i, p] * b[p, j] + d[i, j]; }
        assert_close(
            &c,
            &reference(&[m, n], |ix| product(ix) + at(&d, ix)),
            1e-12,
        );
        let mut c = nan();
        tensor! { c[i, j] = d[i, j] + beta * c[i, j] - a[i, p] * b[p, j]; }
        assert_close(
            &c,
            &reference(&[m, n], |ix| at(&d, ix) - product(ix)),
            1e-12,
        );
        // Point-wise: an element-wise product, a copy, the target alone.
        let mut c = nan();
        tensor! { c[i, j] = beta * c[i, j] + d[i, j] * e[i, j]; }
        assert_close(&c, &reference(&[m, n], |ix| at(&d, ix) * at(&e, ix)), 1e-12);
        let mut c = nan();
        tensor! { c[i, j] = beta * c[i, j] + d[i, j]; }
        assert_close(&c, &d, 0.0);
        let mut c = nan();
        tensor! { c[i, j] = beta * c[i, j]; }
        assert!(c.iter().all(|&x| x == 0.0));
        // A β other than zero reads the target.
        let (two, mut c) = (2.0, d.clone());
        tensor! { c[i, j] = two * c[i, j] + e[i, j]; }
        assert_close(
            &c,
            &reference(&[m, n], |ix| 2.0 * at(&d, ix) + at(&e, ix)),
            1e-12,
        );
    }
    // Nested arrays: the written-out loops follow the same rule.
    let mut s = [[f64::NAN; 3]; 2];
    let x = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    tensor! { s[i, j] = beta * s[i, j] + x[i, j] * x[i, j]; }
    assert_eq!(s, [[1.0, 4.0, 9.0], [16.0, 25.0, 36.0]]);
}

/// Dividing by Rust scalars (attention scaling, a temperature) folds into α: the statement
/// stays a GEMM (see the `fold_scalars` snapshot) and divides once per result element.
#[test]
fn division_by_rust_scalars_at_gemm_size() {
    let (m, n, d) = (40, 36, 64);
    let q = data::<f32>(&[m, d], 0);
    let k = data::<f32>(&[n, d], 1);
    let temperature = 0.7f32;
    tensor! { let s[i, j] = q[i, p] * k[j, p] / { (d as f32).sqrt() } / temperature; }
    let expected = reference(&[m, n], |ix| {
        sum_over(&[d], |r| at(&q, &[ix[0], r[0]]) * at(&k, &[ix[1], r[0]]))
            / (d as f64).sqrt()
            / f64::from(temperature)
    });
    assert_close(&s, &expected, 1e-5);

    // An empty sum stays exactly zero though its folded scale 1/0 is infinite.
    let empty = data::<f64>(&[4, 0], 2);
    let zero = 0.0;
    tensor! { let t[i] = empty[i, l] * 0.5 / zero; }
    assert_eq!(t.as_slice(), [0.0; 4]);
}

#[test]
fn seed_contraction_at_gemm_size() {
    let (ni, nj, nk, nl) = (48, 40, 24, 10);
    let a = data::<f32>(&[ni, nk, nl], 0);
    let b = data::<f32>(&[nk, nj, nl], 1);
    tensor! { let c[i, j] = a[i, k, l] * b[k, j, l]; }
    let expected = reference(&[ni, nj], |ix| {
        sum_over(&[nk, nl], |r| {
            at(&a, &[ix[0], r[0], r[1]]) * at(&b, &[r[0], ix[1], r[1]])
        })
    });
    assert_close(&c, &expected, 1e-5);
}

#[test]
fn products_of_many_tensors_in_a_chosen_order() {
    // A matrix chain whose good order is 250× cheaper than the bad one.
    let a = data::<f64>(&[200, 10], 0);
    let b = data::<f64>(&[10, 200], 1);
    let c = data::<f64>(&[200, 10], 2);
    tensor! { let x[i, j] = a[i, k] * b[k, l] * c[l, j]; }
    let bc = reference(&[10, 10], |ix| {
        sum_over(&[200], |r| at(&b, &[ix[0], r[0]]) * at(&c, &[r[0], ix[1]]))
    });
    let expected = reference(&[200, 10], |ix| {
        sum_over(&[10], |r| at(&a, &[ix[0], r[0]]) * at(&bc, &[r[0], ix[1]]))
    });
    assert_close(&x, &expected, 1e-12);

    // The trace of a product of nine matrices: more factors than the exhaustive planner takes.
    let m: Vec<Tensor<f64>> = (0..9).map(|seed| data(&[4, 4], seed)).collect();
    let (m0, m1, m2, m3, m4, m5, m6, m7, m8) = (
        &m[0], &m[1], &m[2], &m[3], &m[4], &m[5], &m[6], &m[7], &m[8],
    );
    tensor! {
        let trace = m0[a, b] * m1[b, c] * m2[c, d] * m3[d, e] * m4[e, f] * m5[f, g] * m6[g, h]
            * m7[h, p] * m8[p, a];
    }
    let mut product = m[0].clone();
    for next in &m[1..] {
        product = reference(&[4, 4], |ix| {
            sum_over(&[4], |r| {
                at(&product, &[ix[0], r[0]]) * at(next, &[r[0], ix[1]])
            })
        });
    }
    let expected = sum_over(&[4], |r| at(&product, &[r[0], r[0]]));
    common::assert_close_scalar(trace, expected, 1e-12);

    // A network with a broadcast output index, a diagonal and a fixed position.
    let u = data::<f64>(&[6, 6, 5], 3);
    let v = data::<f64>(&[5, 7], 4);
    let w = data::<f64>(&[7, 3], 5);
    let mut out = Tensor::<f64>::zeros([6, 2, 3]);
    tensor! { out[i, z, j] += u[i, i, k] * v[k, l] * w[l, 1] * w[l, j]; }
    let expected = reference(&[6, 2, 3], |ix| {
        sum_over(&[5, 7], |r| {
            at(&u, &[ix[0], ix[0], r[0]])
                * at(&v, &[r[0], r[1]])
                * at(&w, &[r[1], 1])
                * at(&w, &[r[1], ix[2]])
        })
    });
    assert_close(&out, &expected, 1e-12);
}

/// Products of three or more tensors whose pairs are small run as written-out loops, pair by
/// pair through temporaries (one nest over every index would visit the product of all their
/// extents): each form of target, α, mode, an empty sum, scalar temporaries, nested arrays and
/// integers, at extents on both sides of the written-out limit.
#[test]
fn small_networks_contract_pair_by_pair() {
    let rotated = |q: &Tensor<f64>, t: &Tensor<f64>, n: usize| {
        reference(&[n, n, n], |ix| {
            sum_over(&[n, n, n], |r| {
                at(q, &[ix[0], r[0]])
                    * at(q, &[ix[1], r[1]])
                    * at(q, &[ix[2], r[2]])
                    * at(t, &[r[0], r[1], r[2]])
            })
        })
    };
    // 4: each pair 256 points, written out; 7: each pair 2401, the network kernel.
    for n in [1, 2, 3, 4, 5, 7] {
        let q = data::<f64>(&[n, n], 1);
        let t = data::<f64>(&[n, n, n], 2);
        tensor! { let r[i, j, k] = q[i, a] * q[j, b] * q[k, c] * t[a, b, c]; }
        let expected = rotated(&q, &t, n);
        assert_close(&r, &expected, 1e-12);
        // α, and accumulating modes into an existing target.
        let mut s = data::<f64>(&[n, n, n], 3);
        let before = s.clone();
        tensor! {
            s[i, j, k] -= 0.5 * q[i, a] * q[j, b] * q[k, c] * t[a, b, c];
            s[i, j, k] += 2 * t[a, b, c] * q[k, c] * q[j, b] * q[i, a];
        }
        let expected = reference(&[n, n, n], |ix| at(&before, ix) + 1.5 * at(&expected, ix));
        assert_close(&s, &expected, 1e-12);
    }

    // Nested arrays: a rank-4 rotation, five factors over 3⁸ points.
    let q: [[f64; 3]; 3] =
        std::array::from_fn(|i| std::array::from_fn(|j| (i * 3 + j) as f64 - 3.5));
    let t: [[[[f64; 3]; 3]; 3]; 3] = std::array::from_fn(|h| {
        std::array::from_fn(|i| {
            std::array::from_fn(|j| {
                std::array::from_fn(|k| ((h * 27 + i * 9 + j * 3 + k) % 11) as f64)
            })
        })
    });
    tensor! { let r[h, i, j, k] = q[h, d] * q[i, a] * q[j, b] * q[k, c] * t[d, a, b, c]; }
    let r: [[[[f64; 3]; 3]; 3]; 3] = r;
    for (h, i, j, k) in (0..81).map(|p| (p / 27, p / 9 % 3, p / 3 % 3, p % 3)) {
        let mut expected = 0.0;
        for p in 0..81 {
            let (d, a, b, c) = (p / 27, p / 9 % 3, p / 3 % 3, p % 3);
            expected += q[h][d] * q[i][a] * q[j][b] * q[k][c] * t[d][a][b][c];
        }
        // Integer-valued terms: every order of summation gives the same value.
        assert_eq!(r[h][i][j][k], expected, "r[{h}, {i}, {j}, {k}]");
    }

    // Pairs contracted to scalars, and a chain into a scalar.
    let (a, b, c, d) = (
        data::<f64>(&[5], 4),
        data::<f64>(&[5], 5),
        data::<f64>(&[6], 6),
        data::<f64>(&[6], 7),
    );
    tensor! { let s = a[i] * b[i] * c[j] * d[j]; }
    let expected =
        sum_over(&[5], |r| at(&a, r) * at(&b, r)) * sum_over(&[6], |r| at(&c, r) * at(&d, r));
    common::assert_close_scalar(s, expected, 1e-12);
    let (x, y, z) = (
        data::<f64>(&[4, 6], 8),
        data::<f64>(&[6, 5], 9),
        data::<f64>(&[5, 4], 10),
    );
    tensor! { let trace = x[i, j] * y[j, k] * z[k, i]; }
    let expected = sum_over(&[4, 6, 5], |r| {
        at(&x, &[r[0], r[1]]) * at(&y, &[r[1], r[2]]) * at(&z, &[r[2], r[0]])
    });
    common::assert_close_scalar(trace, expected, 1e-12);

    // An empty sum is exactly zero, even scaled by 1/0, whichever pair holds it.
    let (e, f) = (Tensor::<f64>::zeros([3, 0]), data::<f64>(&[0, 4], 11));
    let g = data::<f64>(&[4, 2], 12);
    let zero = 0.0;
    let mut out = Tensor::from_fn([3, 2], |_| f64::NAN);
    tensor! { out[i, m] = e[i, k] * f[k, l] * g[l, m] / zero; }
    assert_eq!(out.as_slice(), [0.0; 6]);

    // Integers wrap in any order of pairs.
    let qi = Tensor::<i64>::from_fn([3, 3], |ix| (ix[0] * 3 + ix[1]) as i64 * 1_000_003 - 4);
    let ti = Tensor::<i64>::from_fn([3, 3, 3], |ix| {
        (ix[0] * 9 + ix[1] * 3 + ix[2]) as i64 * 7_000_001_123
    });
    tensor! { let ri[i, j, k] = qi[i, a] * qi[j, b] * qi[k, c] * ti[a, b, c]; }
    for p in 0..27 {
        let (i, j, k) = (p / 9, p / 3 % 3, p % 3);
        let mut expected = 0i64;
        for r in 0..27 {
            let (a, b, c) = (r / 9, r / 3 % 3, r % 3);
            let term = qi[[i, a]]
                .wrapping_mul(qi[[j, b]])
                .wrapping_mul(qi[[k, c]])
                .wrapping_mul(ti[[a, b, c]]);
            expected = expected.wrapping_add(term);
        }
        assert_eq!(ri[[i, j, k]], expected, "ri[{i}, {j}, {k}]");
    }
}

/// Contractions large enough to split across threads: by batch, and by rows of one GEMM.
#[test]
fn gemm_split_across_threads() {
    let (m, n, k) = (150, 140, 130);
    let a = data::<f64>(&[m, k], 0);
    let b = data::<f64>(&[k, n], 1);
    tensor! { let c[i, j] = a[i, p] * b[p, j]; }
    let expected = reference(&[m, n], |ix| {
        sum_over(&[k], |r| at(&a, &[ix[0], r[0]]) * at(&b, &[r[0], ix[1]]))
    });
    assert_close(&c, &expected, 1e-12);

    let x = data::<f32>(&[9, 64, 80], 2);
    let y = data::<f32>(&[9, 80, 70], 3);
    let mut z = data::<f32>(&[9, 64, 70], 4);
    let before = z.clone();
    tensor! { z[q, i, j] -= x[q, i, p] * y[q, p, j]; }
    let expected = reference(&[9, 64, 70], |ix| {
        at(&before, ix)
            - sum_over(&[80], |r| {
                at(&x, &[ix[0], ix[1], r[0]]) * at(&y, &[ix[0], r[0], ix[2]])
            })
    });
    assert_close(&z, &expected, 1e-4);
}

/// Small summing statements run as written-out loops that take the target's last index in
/// chunks of eight and four points, then one at a time. Each point still sums its terms in
/// order, so every result equals, bit for bit, a sequential sum in the statement's element
/// type: at every width around the chunks, over operands that step along that index by one,
/// by a row (`b[j, k]`), by two axes at once (`e[j, j, k]`), not at all (`d[k]`), or past a
/// fixed position, into every mode, for real, complex and integer elements, on tensors and
/// on nested arrays. The chunks run where the runtime is optimized (CI runs this file in
/// release); an unoptimized build takes every point one at a time, which this checks too.
#[test]
fn small_sums_in_chunks_equal_sequential_sums() {
    use tensor_dsl::c32;
    fn sequential<T: Copy + std::ops::Add<Output = T> + std::ops::Mul<Output = T>>(
        zero: T,
        terms: impl Iterator<Item = (T, T)>,
    ) -> T {
        terms.fold(zero, |sum, (x, y)| sum + x * y)
    }
    let (m, l) = (3, 5);
    for n in [0, 1, 3, 4, 5, 7, 8, 9, 12, 13, 17] {
        let a = data::<f32>(&[m, l], 0);
        let b = data::<f32>(&[l, n], 1);
        let bt = data::<f32>(&[n, l], 2);
        let d = data::<f32>(&[l], 3);
        let e = data::<f32>(&[n, n, l], 4);
        let f = data::<f32>(&[l, 2, n], 5);
        let old = data::<f32>(&[m, n], 6);
        let g = |t: &Tensor<f32>, ix: &[usize]| t.get(ix).copied().unwrap();
        let expect =
            |value: &dyn Fn(usize, usize) -> f32| Tensor::from_fn([m, n], |ix| value(ix[0], ix[1]));
        let seq = |i: usize, y: &dyn Fn(usize) -> f32| {
            sequential(0.0f32, (0..l).map(|k| (g(&a, &[i, k]), y(k))))
        };

        let mut c = Tensor::<f32>::zeros([m, n]);
        tensor! { c[i, j] = a[i, k] * b[k, j]; }
        assert_eq!(
            c,
            expect(&|i, j| seq(i, &|k| g(&b, &[k, j]))),
            "a b, n = {n}"
        );

        let mut c = old.clone();
        tensor! { c[i, j] += 2.0 * a[i, k] * bt[j, k]; }
        let plus = |i: usize, j: usize| g(&old, &[i, j]) + 2.0 * seq(i, &|k| g(&bt, &[j, k]));
        assert_eq!(c, expect(&plus), "+= 2 a b^T, n = {n}");

        let mut c = old.clone();
        tensor! { c[i, j] = 0.5 * c[i, j] + a[i, k] * e[j, j, k]; }
        let scaled = |i: usize, j: usize| 0.5 * g(&old, &[i, j]) + seq(i, &|k| g(&e, &[j, j, k]));
        assert_eq!(c, expect(&scaled), "β c + a e, n = {n}");

        // Three factors: the grouping of each product is the compiler's, so compare closely.
        tensor! { let c3[i, j] = a[i, k] * d[k] * e[j, j, k]; }
        let three = |i: usize, j: usize| seq(i, &|k| g(&d, &[k]) * g(&e, &[j, j, k]));
        assert_close(&c3, &expect(&three).map(|x| f64::from(*x)), 1e-6);

        // A target with a fixed position: its other row stays as it was.
        let mut w = Tensor::<f32>::zeros([m, 2, n]);
        tensor! { w[i, 1, j] -= a[i, k] * b[k, j]; }
        let fixed_target = Tensor::from_fn([m, 2, n], |ix| match ix[1] {
            1 => -seq(ix[0], &|k| g(&b, &[k, ix[2]])),
            _ => 0.0,
        });
        assert_eq!(w, fixed_target, "-= into w[i, 1, j], n = {n}");

        let mut c = Tensor::<f32>::zeros([m, n]);
        tensor! { c[i, j] = a[i, k] * f[k, 1, j]; }
        assert_eq!(
            c,
            expect(&|i, j| seq(i, &|k| g(&f, &[k, 1, j]))),
            "fixed, n = {n}"
        );

        tensor! { let s[j] = f[k, i, j]; }
        let sums = Tensor::from_fn([n], |ix| {
            (0..l).fold(0.0f32, |sum, k| {
                (0..2).fold(sum, |sum, i| sum + g(&f, &[k, i, ix[0]]))
            })
        });
        assert_eq!(s, sums, "sums, n = {n}");

        let ca = Tensor::from_fn([m, l], |ix| c32::new(g(&a, ix), g(&d, &[ix[1]])));
        let cb = Tensor::from_fn([l, n], |ix| c32::new(g(&b, ix), -g(&b, ix)));
        tensor! { let cc[i, j] = ca[i, k] * cb[k, j]; }
        let complex = Tensor::from_fn([m, n], |ix| {
            sequential(
                c32::new(0.0, 0.0),
                (0..l).map(|k| {
                    (
                        ca.get(&[ix[0], k]).copied().unwrap(),
                        cb.get(&[k, ix[1]]).copied().unwrap(),
                    )
                }),
            )
        });
        assert_eq!(cc, complex, "complex, n = {n}");

        let ia = Tensor::from_fn([m, l], |ix| (ix[0] * 7 + ix[1] * 3) as i32 - 9);
        let ib = Tensor::from_fn([l, n], |ix| (ix[0] * 5 + ix[1] * 11) as i32 % 13 - 6);
        tensor! { let ic[i, j] = ia[i, k] * ib[k, j]; }
        let integer = Tensor::from_fn([m, n], |ix| {
            sequential(
                0i32,
                (0..l).map(|k| {
                    (
                        ia.get(&[ix[0], k]).copied().unwrap(),
                        ib.get(&[k, ix[1]]).copied().unwrap(),
                    )
                }),
            )
        });
        assert_eq!(ic, integer, "integer, n = {n}");
    }

    // Nested arrays: twelve points a row (a chunk of eight, one of four) and nine (eight, one).
    fn arrays<const N: usize>() {
        let a: [[f64; 5]; 3] =
            std::array::from_fn(|i| std::array::from_fn(|k| (i * 5 + k) as f64 * 0.37 - 1.0));
        let b: [[f64; N]; 5] =
            std::array::from_fn(|k| std::array::from_fn(|j| (k * N + j) as f64 * 0.11 - 0.5));
        let mut c = [[1.0f64; N]; 3];
        tensor! { c[i, j] -= a[i, k] * b[k, j]; }
        for i in 0..3 {
            for j in 0..N {
                let sum = (0..5).fold(0.0, |sum, k| sum + a[i][k] * b[k][j]);
                assert_eq!(c[i][j], 1.0 - sum, "arrays, N = {N}");
            }
        }
    }
    arrays::<12>();
    arrays::<9>();
}

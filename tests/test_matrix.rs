//! Matrix statements (`cholesky`, `solve`, `eigh`, `svd`, `qr`, `matpow`) end to end: each
//! result checked by what defines it (reconstructions, orthonormality, triangularity, order of
//! values), against direct `faer` calls on the matricized data, for ranks 2 to 6 and several
//! groupings, extents 0, 1, 7 and 13, views read in place and through a copy, Rust-expression
//! operands, `f32` and `c64`; and every failure an `Err` before anything is bound or written.

mod common;

use common::data;
use tensor_dsl::matrix::faer;
use tensor_dsl::{c64, tensor, try_tensor, ShapeError, ShapeErrorKind, Tensor};

/// The largest absolute difference between two tensors of one shape.
fn max_diff(got: &Tensor<f64>, expected: &Tensor<f64>) -> f64 {
    assert_eq!(got.shape(), expected.shape(), "shapes differ");
    got.iter()
        .zip(expected.iter())
        .fold(0.0, |m, (g, e)| m.max((g - e).abs()))
}

#[track_caller]
fn assert_near(got: &Tensor<f64>, expected: &Tensor<f64>, tol: f64) {
    let diff = max_diff(got, expected);
    assert!(
        diff <= tol,
        "differ by {diff} (tolerance {tol}), shape {:?}",
        got.shape()
    );
}

/// The n × n identity.
fn eye(n: usize) -> Tensor<f64> {
    Tensor::eye(n)
}

/// A symmetric positive definite n × n matrix: m mᵀ + n·I.
fn spd(n: usize, seed: usize) -> Tensor<f64> {
    let m = data::<f64>(&[n, n], seed);
    let id = eye(n);
    tensor! { let a[i, j] = m[i, k] * m[j, k] + {n as f64} * id[i, j]; }
    a
}

/// The matrix of `t` with rows `rows` and columns `cols` (axis lists), row-major, for `faer`.
fn matricize(t: &Tensor<f64>, rows: &[usize], cols: &[usize]) -> faer::Mat<f64> {
    let order: Vec<usize> = rows.iter().chain(cols).copied().collect();
    let p = t.view().permuted_axes(&order).to_tensor();
    let m: usize = rows.iter().map(|&a| t.shape()[a]).product();
    let n: usize = cols.iter().map(|&a| t.shape()[a]).product();
    faer::MatRef::from_row_major_slice(p.as_slice(), m, n).to_owned()
}

#[test]
fn cholesky_of_a_matrix_is_lower_and_reconstructs_it() {
    for n in [0, 1, 7, 13, 64] {
        let a = spd(n, 1);
        tensor! {
            let l[i, j] = cholesky(a[i, j]);
            let back[i, j] = l[i, k] * l[j, k];
        }
        assert_near(&back, &a, 1e-12 * n as f64);
        for i in 0..n {
            for j in i + 1..n {
                assert_eq!(l.get(&[i, j]), Some(&0.0), "L is lower triangular");
            }
        }
        // The same factor as `faer` itself.
        if n > 0 {
            let direct = faer::linalg::solvers::Llt::new(
                matricize(&a, &[0], &[1]).as_ref(),
                faer::Side::Lower,
            )
            .unwrap();
            for i in 0..n {
                for j in 0..n {
                    assert!((l.get(&[i, j]).unwrap() - direct.L().get(i, j)).abs() < 1e-12);
                }
            }
        }
    }
}

#[test]
fn cholesky_of_a_four_index_tensor_groups_halves_and_places_the_result() {
    // a[i, j, k, l] positive definite as the (i, j) × (k, l) matrix.
    let (ni, nj) = (3, 5);
    let m = data::<f64>(&[ni, nj, ni, nj], 2);
    let id = eye(ni * nj).into_shape([ni, nj, ni, nj]).unwrap();
    tensor! {
        let a[i, j, k, l] = m[i, j, p, q] * m[k, l, p, q] + 4 * id[i, j, k, l];
        let f[i, j, k, l] = cholesky(a[i, j, k, l]);
        let back[i, j, k, l] = f[i, j, p, q] * f[k, l, p, q];
        // The result in another order is the same factor, permuted.
        let g[k, l, i, j] = cholesky(a[i, j, k, l]);
        let h[i, j, k, l] = g[k, l, i, j];
    }
    assert_near(&back, &a, 1e-12);
    assert_near(&h, &f, 0.0);
}

#[test]
fn views_are_read_in_place_or_through_one_copy() {
    let n = 13;
    let a = spd(n, 3);
    tensor! { let expected[i, j] = cholesky(a[i, j]); }
    // A transposed view of a symmetric matrix: strides (1, n), read in place.
    let transposed = a.view().permuted_axes(&[1, 0]);
    // A strided view from a larger tensor: every other row and column of a 2n × 2n buffer.
    let big = Tensor::from_fn([2 * n, 2 * n], |ix| {
        if ix[0] % 2 == 0 && ix[1] % 2 == 0 {
            *a.get(&[ix[0] / 2, ix[1] / 2]).unwrap()
        } else {
            f64::NAN
        }
    });
    let strided = big
        .view()
        .slice_axis_step(0, 0..2 * n, 2)
        .slice_axis_step(1, 0..2 * n, 2);
    // A rank-3 view whose two leading axes are one row group only through a copy.
    let split = a.view().reshape([1, n, n]).unwrap();
    tensor! {
        let l1[i, j] = cholesky(transposed[i, j]);
        let l2[i, j] = cholesky(strided[i, j]);
        let l3[i, j] = cholesky({ &a }[i, j]);
        let l4[i, j] = cholesky({ split.clone().index_axis(0, 0) }[i, j]);
    }
    for got in [&l1, &l2, &l3, &l4] {
        assert_near(got, &expected, 1e-12);
    }
}

#[test]
fn solve_reads_a_x_equals_b_in_einstein_notation() {
    for (n, r) in [(0, 3), (1, 1), (7, 2), (13, 5), (40, 0)] {
        let a = data::<f64>(&[n, n], 4);
        let id = eye(n);
        tensor! { let a[i, j] = a[i, j] + {n as f64} * id[i, j]; }
        let b = data::<f64>(&[n, r], 5);
        tensor! {
            // a[i, j] x[j, q] = b[i, q]: the usual A X = B.
            let x[j, q] = solve(a[i, j], b[i, q]);
            let ax[i, q] = a[i, j] * x[j, q];
            // a[i, j] y[i, q] = b[j, q]: Aᵀ Y = B, from the same names.
            let y[i, q] = solve(a[i, j], b[j, q]);
            let aty[j, q] = a[i, j] * y[i, q];
        }
        assert_near(&ax, &b, 1e-12);
        assert_near(&aty, &b, 1e-12);
        if n > 0 && r > 0 {
            use faer::linalg::solvers::Solve;
            let lu = faer::linalg::solvers::PartialPivLu::new(matricize(&a, &[0], &[1]).as_ref());
            let direct = lu.solve(matricize(&b, &[0], &[1]).as_ref());
            for i in 0..n {
                for q in 0..r {
                    assert!((x.get(&[i, q]).unwrap() - direct.get(i, q)).abs() < 1e-12);
                }
            }
        }
    }
}

#[test]
fn solve_groups_several_indices_on_each_side() {
    // a[i, k, j, l] x[j, l, r] = b[i, k, r]: a 6 × 6 system (i, k) by (j, l), three columns.
    let (ni, nk) = (2, 3);
    let noise = data::<f64>(&[ni, nk, ni, nk], 6);
    let id = eye(ni * nk).into_shape([ni, nk, ni, nk]).unwrap();
    let b = data::<f64>(&[ni, nk, 3], 7);
    tensor! {
        let a[i, k, j, l] = noise[i, k, j, l] + 3 * id[i, k, j, l];
        let x[r, l, j] = solve(a[i, k, j, l], b[i, k, r]);
        let ax[i, k, r] = a[i, k, j, l] * x[r, l, j];
    }
    assert_eq!(x.shape(), &[3, nk, ni]);
    assert_near(&ax, &b, 1e-12);
}

#[test]
fn eigh_gives_ascending_values_and_orthonormal_vectors() {
    for n in [0, 1, 7, 13, 50] {
        let m = data::<f64>(&[n, n], 8);
        tensor! { let h[i, j] = m[i, j] + m[j, i]; }
        tensor! {
            let (w[s], v[i, s]) = eigh(h[i, j]);
            let hv[i, s] = h[i, j] * v[j, s];
            let vw[i, s] = v[i, s] * w[s];
            let vtv[s, t] = v[i, s] * v[i, t];
            // Results compose with ordinary statements: the projector on the lowest three.
            let rho[i, j] = v[i, s] * v[j, s];
        }
        assert_near(&hv, &vw, 1e-11);
        assert_near(&vtv, &eye(n), 1e-12);
        assert_near(&rho, &eye(n), 1e-12);
        let values = w.as_slice();
        assert!(
            values.windows(2).all(|pair| pair[0] <= pair[1]),
            "ascending: {values:?}"
        );
        if n > 0 {
            let direct = matricize(&h, &[0], &[1])
                .self_adjoint_eigenvalues(faer::Side::Lower)
                .unwrap();
            for (got, expected) in values.iter().zip(&direct) {
                assert!((got - expected).abs() < 1e-11);
            }
        }
    }
}

#[test]
fn eigh_of_a_four_index_tensor_and_of_a_hermitian_matrix() {
    // h[i, j, k, l] symmetric under (i, j) ↔ (k, l); vectors v[i, j, s].
    let m = data::<f64>(&[3, 4, 3, 4], 9);
    tensor! {
        let h[i, j, k, l] = m[i, j, k, l] + m[k, l, i, j];
        let (w[s], v[i, j, s]) = eigh(h[i, j, k, l]);
        let hv[i, j, s] = h[i, j, k, l] * v[k, l, s];
        let vw[i, j, s] = v[i, j, s] * w[s];
    }
    assert_eq!(w.shape(), &[12]);
    assert_near(&hv, &vw, 1e-11);
    // A `mut` result is written by a later statement of the block.
    let twice = w.clone();
    tensor! {
        let (mut w2[s], _v2[i, j, s]) = eigh(h[i, j, k, l]);
        w2[s] *= 2;
    }
    for (got, once) in w2.iter().zip(twice.iter()) {
        assert!((got - 2.0 * once).abs() < 1e-12);
    }

    // A complex Hermitian matrix: real eigenvalues, unitary vectors.
    let n = 9;
    let re = data::<f64>(&[n, n], 10);
    let im = data::<f64>(&[n, n], 11);
    let z = Tensor::from_fn([n, n], |ix| {
        c64::new(*re.get(ix).unwrap(), *im.get(ix).unwrap())
    });
    tensor! {
        let h[i, j] = z[i, j] + conj(z[j, i]);
        let (w[s], v[i, s]) = eigh(h[i, j]);
        let hv[i, s] = h[i, j] * v[j, s];
        let vw[i, s] = v[i, s] * w[s];
        let vhv[s, t] = conj(v[i, s]) * v[i, t];
    }
    let w: &Tensor<f64> = &w;
    assert!(w.as_slice().windows(2).all(|pair| pair[0] <= pair[1]));
    for (got, expected) in hv.iter().zip(vw.iter()) {
        assert!((got - expected).norm() < 1e-11);
    }
    for s in 0..n {
        for t in 0..n {
            let expected = if s == t { 1.0 } else { 0.0 };
            assert!((vhv.get(&[s, t]).unwrap() - expected).norm() < 1e-12);
        }
    }
}

/// Checks an SVD's defining properties: descending non-negative values, orthonormal U
/// columns (as a matrix m × k) and Vᴴ rows, and `faer`'s singular values of the same matrix.
#[track_caller]
fn check_svd_values(sv: &Tensor<f64>, direct: &faer::Mat<f64>) {
    let values = sv.as_slice();
    assert!(
        values.windows(2).all(|pair| pair[0] >= pair[1]),
        "descending: {values:?}"
    );
    assert!(values.iter().all(|&s| s >= 0.0));
    let expected = direct.singular_values().unwrap();
    assert_eq!(values.len(), expected.len());
    for (got, expected) in values.iter().zip(&expected) {
        assert!((got - expected).abs() < 1e-12, "{got} vs {expected}");
    }
}

#[test]
fn svd_of_ranks_two_to_six_in_several_groupings() {
    for (m, n) in [(7, 13), (13, 7), (1, 5), (6, 1), (0, 4), (3, 0)] {
        let t = data::<f64>(&[m, n], 12);
        tensor! {
            let (u[i, s], sv[s], vt[s, j]) = svd(t[i, j]);
            let back[i, j] = u[i, s] * sv[s] * vt[s, j];
            let utu[s, r] = u[i, s] * u[i, r];
            let vvt[s, r] = vt[s, j] * vt[r, j];
        }
        let k = m.min(n);
        assert_near(&back, &t, 1e-12);
        assert_near(&utu, &eye(k), 1e-12);
        assert_near(&vvt, &eye(k), 1e-12);
        check_svd_values(&sv, &matricize(&t, &[0], &[1]));
    }

    // Rank 3, rows (i, k) around a column j: the grouping is not contiguous, so one copy.
    let t3 = data::<f64>(&[4, 5, 3], 13);
    tensor! {
        let (u[k, s, i], sv[s], vt[j, s]) = svd(t3[i, j, k]);
        let back[i, j, k] = u[k, s, i] * sv[s] * vt[j, s];
    }
    assert_eq!(u.shape(), &[3, 5, 4]); // k = min(4 · 3, 5)
    assert_near(&back, &t3, 1e-12);
    check_svd_values(&sv, &matricize(&t3, &[0, 2], &[1]));

    // Rank 4, the tensor-network case: (i, j) × (k, l).
    let t4 = data::<f64>(&[2, 3, 4, 5], 14);
    tensor! {
        let (u[i, j, s], sv[s], vt[s, k, l]) = svd(t4[i, j, k, l]);
        let back[i, j, k, l] = u[i, j, s] * sv[s] * vt[s, k, l];
    }
    assert_near(&back, &t4, 1e-12);
    check_svd_values(&sv, &matricize(&t4, &[0, 1], &[2, 3]));

    // Rank 5, rows (a, c, e) × columns (b, d), results in their own orders.
    let t5 = data::<f64>(&[2, 3, 2, 1, 3], 15);
    tensor! {
        let (u[s, e, a, c], sv[s], vt[d, s, b]) = svd(t5[a, b, c, d, e]);
        let back[a, b, c, d, e] = u[s, e, a, c] * sv[s] * vt[d, s, b];
    }
    assert_near(&back, &t5, 1e-12);
    check_svd_values(&sv, &matricize(&t5, &[0, 2, 4], &[1, 3]));

    // Rank 6, rows (b, d, f) × columns (a, c, e), from a permuted view.
    let t6 = data::<f64>(&[2, 2, 3, 2, 2, 3], 16);
    let view = t6.view().permuted_axes(&[5, 4, 3, 2, 1, 0]);
    tensor! {
        let (u[b, d, f, s], sv[s], vt[s, a, c, e]) = svd(view[a, b, c, d, e, f]);
        let back[a, b, c, d, e, f] = u[b, d, f, s] * sv[s] * vt[s, a, c, e];
    }
    assert_near(&back, &view.to_tensor(), 1e-12);
    check_svd_values(&sv, &matricize(&view.to_tensor(), &[1, 3, 5], &[0, 2, 4]));
}

#[test]
fn truncated_svd_reports_the_discarded_weight() {
    let t = data::<f64>(&[4, 6, 5, 3], 17);
    let norm2: f64 = t.iter().map(|x| x * x).sum();
    let chi = 7usize;
    tensor! {
        let (u[i, j, s], sv[s], vt[s, k, l], full) = svd(t[i, j, k, l]);
        let (uc[i, j, s], svc[s], vtc[s, k, l], err) = svd(t[i, j, k, l], max_rank = chi);
        let back[i, j, k, l] = uc[i, j, s] * svc[s] * vtc[s, k, l];
        let residual[i, j, k, l] = t[i, j, k, l] - back[i, j, k, l];
        let lost = residual[i, j, k, l] * residual[i, j, k, l];
    }
    assert_eq!(full, 0.0);
    assert_eq!(sv.shape(), &[15]);
    assert_eq!(
        (uc.shape(), svc.shape(), vtc.shape()),
        (&[4, 6, chi][..], &[chi][..], &[chi, 5, 3][..])
    );
    let discarded: f64 = sv.as_slice()[chi..].iter().map(|s| s * s).sum();
    assert!(
        (err - discarded / norm2).abs() < 1e-12,
        "{err} vs {}",
        discarded / norm2
    );
    // The truncation error is the relative squared distance of the truncated reconstruction.
    assert!((lost / norm2 - err).abs() < 1e-12);
    let _ = (u, vt);

    // A cutoff keeps the fewest values whose discarded weight stays within it.
    let weights: Vec<f64> = sv.as_slice().iter().map(|s| s * s / norm2).collect();
    for cutoff in [0.0, 1e-3, 0.05, 0.3, 1.0] {
        tensor! { let (_u[i, j, s], kept[s], _vt[s, k, l], err) = svd(t[i, j, k, l], cutoff = cutoff); }
        let r = kept.len();
        let tail: f64 = weights[r..].iter().sum();
        assert!(tail <= cutoff + 1e-15 && (err - tail).abs() < 1e-12);
        assert!(r >= 1, "keeps at least one value");
        if r > 1 {
            assert!(tail + weights[r - 1] > cutoff, "keeps no more than needed");
        }
    }
    // Both: the smaller cut wins.
    tensor! { let (_u[i, j, s], kept[s], _vt[s, k, l]) = svd(t[i, j, k, l], max_rank = 2, cutoff = 1e-9); }
    assert_eq!(kept.len(), 2);
}

#[test]
fn qr_gives_orthonormal_q_and_triangular_r() {
    for (m, n) in [(9, 4), (4, 9), (7, 7), (1, 3), (0, 2)] {
        let t = data::<f64>(&[m, n], 18);
        tensor! {
            let (q[i, s], r[s, j]) = qr(t[i, j]);
            let back[i, j] = q[i, s] * r[s, j];
            let qtq[s, p] = q[i, s] * q[i, p];
        }
        let k = m.min(n);
        assert_eq!((q.shape(), r.shape()), (&[m, k][..], &[k, n][..]));
        assert_near(&back, &t, 1e-12);
        assert_near(&qtq, &eye(k), 1e-12);
        for s in 0..k {
            for j in 0..s.min(n) {
                assert_eq!(r.get(&[s, j]), Some(&0.0), "R is upper triangular");
            }
        }
    }
    // Rank 3 with rows (i, k).
    let t = data::<f64>(&[3, 4, 5], 19);
    tensor! {
        let (q[i, k, s], r[s, j]) = qr(t[i, j, k]);
        let back[i, j, k] = q[i, k, s] * r[s, j];
    }
    assert_near(&back, &t, 1e-12);
}

#[test]
fn matpow_multiplies_and_inverts() {
    let n = 6;
    let noise = data::<f64>(&[n, n], 20);
    let id = eye(n);
    tensor! { let a[i, j] = noise[i, j] + 2 * id[i, j]; }
    tensor! {
        let a0[i, j] = matpow(a[i, j], 0);
        let a1[i, j] = matpow(a[i, j], 1);
        let a5[i, j] = matpow(a[i, j], 5);
        let a2[i, j] = a[i, k] * a[k, j];
        let a4[i, j] = a2[i, k] * a2[k, j];
        let expected5[i, j] = a4[i, k] * a[k, j];
        let inverse[i, j] = matpow(a[i, j], -1);
        let should_be_one[i, j] = a[i, k] * inverse[k, j];
        let transposed[j, i] = matpow(a[i, j], 2);
    }
    assert_near(&a0, &id, 0.0);
    assert_near(&a1, &a, 0.0);
    assert_near(
        &a5,
        &expected5,
        1e-10 * max_diff(&expected5, &Tensor::zeros([n, n])),
    );
    assert_near(&should_be_one, &id, 1e-12);
    let power = 2;
    tensor! { let squared[i, j] = matpow(a[i, j], power); let back[i, j] = transposed[j, i]; }
    assert_near(&squared, &a2, 1e-12);
    assert_near(&back, &a2, 1e-12);
    // Rank 4: the (i, j) × (k, l) matrix squared.
    let t = data::<f64>(&[2, 3, 2, 3], 21);
    tensor! {
        let p[i, j, k, l] = matpow(t[i, j, k, l], 2);
        let q[i, j, k, l] = t[i, j, a, b] * t[a, b, k, l];
    }
    assert_near(&p, &q, 1e-12);
}

#[test]
fn f32_and_c64_elements() {
    let n = 8;
    let m = data::<f32>(&[n, n], 22);
    let id = Tensor::<f32>::eye(n);
    tensor! {
        let a[i, j] = m[i, k] * m[j, k] + 8 * id[i, j];
        let l[i, j] = cholesky(a[i, j]);
        let back[i, j] = l[i, k] * l[j, k];
        let (u[i, s], sv[s], vt[s, j]) = svd(a[i, j]);
        let back2[i, j] = u[i, s] * sv[s] * vt[s, j];
    }
    for (got, expected) in back.iter().zip(a.iter()).chain(back2.iter().zip(a.iter())) {
        assert!((got - expected).abs() < 1e-4);
    }
    let sv: &Tensor<f32> = &sv;
    assert_eq!(sv.len(), n);

    // A complex SVD: real singular values, T = U Σ Vᴴ.
    let t = Tensor::from_fn([5, 3], |ix| {
        c64::new(ix[0] as f64 - 1.5, (ix[1] * ix[0]) as f64 * 0.25 + 0.5)
    });
    let b = Tensor::from_fn([5, 5], |ix| {
        c64::new(
            if ix[0] == ix[1] { 4.0 } else { 0.5 },
            ix[0] as f64 - ix[1] as f64,
        )
    });
    tensor! {
        let (u[i, s], sv[s], vt[s, j]) = svd(t[i, j]);
        let back[i, j] = u[i, s] * sv[s] * vt[s, j];
        let x[j, r] = solve(b[i, j], t[i, r]);
        let bx[i, r] = b[i, j] * x[j, r];
    }
    let sv: &Tensor<f64> = &sv;
    assert_eq!(sv.len(), 3);
    for (got, expected) in back.iter().zip(t.iter()).chain(bx.iter().zip(t.iter())) {
        assert!((got - expected).norm() < 1e-12);
    }
}

/// A statement whose matrix fails returns an error before binding anything, and the
/// statements after it write nothing.
fn failing(a: &Tensor<f64>, c: &mut Tensor<f64>) -> Result<(), ShapeError> {
    try_tensor! {
        let l[i, j] = cholesky(a[i, j]);
        c[i, j] = l[i, j];
    }
    Ok(())
}

#[test]
fn failures_are_errors_before_any_result_or_write() {
    let mut c = Tensor::full([3, 3], 7.0);
    let not_pd =
        Tensor::from_shape_vec([3, 3], vec![1.0, 2.0, 0.0, 2.0, 1.0, 0.0, 0.0, 0.0, 1.0]).unwrap();
    let error = failing(&not_pd, &mut c).unwrap_err();
    assert_eq!(error.kind(), ShapeErrorKind::NotPositiveDefinite);
    assert!(error.to_string().contains("`a[i, j]`"), "{error}");
    assert!(c.iter().all(|&x| x == 7.0), "the target is untouched");

    let wide = Tensor::<f64>::zeros([3, 4]);
    let error = failing_solve(&wide, &Tensor::zeros([3, 1])).unwrap_err();
    assert_eq!(error.kind(), ShapeErrorKind::NotSquare);
    assert!(
        error
            .to_string()
            .contains("3 rows (i: 3) and 4 columns (j: 4)"),
        "{error}"
    );

    let singular = Tensor::from_shape_vec([2, 2], vec![1.0, 2.0, 2.0, 4.0]).unwrap();
    let error = failing_solve(&singular, &Tensor::zeros([2, 1])).unwrap_err();
    assert_eq!(error.kind(), ShapeErrorKind::Singular);

    let error = failing_solve(&Tensor::eye(3), &Tensor::zeros([4, 1])).unwrap_err();
    assert_eq!(error.kind(), ShapeErrorKind::ExtentMismatch);
    assert!(error.to_string().contains("index `i`"), "{error}");

    let error = failing_solve(&Tensor::zeros([3, 3, 1]), &Tensor::zeros([3, 1])).unwrap_err();
    assert_eq!(error.kind(), ShapeErrorKind::RankMismatch);

    let nan = Tensor::full([4, 4], f64::NAN);
    let error = (|| -> Result<(), ShapeError> {
        try_tensor! { let (_w[s], _v[i, s]) = eigh(nan[i, j]); }
        Ok(())
    })()
    .unwrap_err();
    assert!(
        matches!(error.kind(), ShapeErrorKind::NoConvergence),
        "{error}"
    );

    let error = (|| -> Result<(), ShapeError> {
        try_tensor! { let _p[i, j] = matpow(singular[i, j], -2); }
        Ok(())
    })()
    .unwrap_err();
    assert_eq!(error.kind(), ShapeErrorKind::Singular);
}

fn failing_solve(a: &Tensor<f64>, b: &Tensor<f64>) -> Result<Tensor<f64>, ShapeError> {
    try_tensor! { let x[j, r] = solve(a[i, j], b[i, r]); }
    Ok(x)
}

#[test]
#[should_panic(expected = "is not positive definite")]
fn tensor_panics_with_the_same_message() {
    let a = Tensor::from_shape_vec([2, 2], vec![-1.0, 0.0, 0.0, 1.0]).unwrap();
    tensor! { let _l[i, j] = cholesky(a[i, j]); }
}

#[test]
fn empty_matrices_of_any_layout() {
    // Zero rows under a grouping whose axes do not step as one stride, and an empty view whose
    // start lies past its buffer's end.
    let t = Tensor::<f64>::zeros([0, 3, 2, 3]);
    let square = Tensor::<f64>::zeros([0, 3, 0, 3]);
    let view = square.view().permuted_axes(&[0, 3, 2, 1]);
    tensor! {
        let p[i, j, k, l] = matpow(view[i, j, k, l], 2);
        let (u[i, k, s], sv[s], vt[s, j, l]) = svd(t[i, j, k, l]);
    }
    assert_eq!((p.shape(), sv.shape()), (&[0, 3, 0, 3][..], &[0][..]));
    assert_eq!((u.shape(), vt.shape()), (&[0, 2, 0][..], &[0, 3, 3][..]));
    let big = Tensor::<f64>::zeros([4, 4]);
    let corner = big.view().slice_axis(0, 4..4).slice_axis(1, 4..4);
    tensor! { let e[i, j] = matpow(corner[i, j], 3); }
    assert_eq!(e.shape(), &[0, 0]);
}

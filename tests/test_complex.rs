//! Complex elements (`c32`, `c64`) end to end against naive loops: element-wise arithmetic and
//! functions with their complex meaning, sums, contractions with `conj` on either factor past
//! the GEMM threshold (one GEMM, no conjugated temporary: the allocations are counted), the
//! seed contraction, permuted views, nested arrays, `Vec`s, and a run-time error through
//! `try_tensor!`.

use tensor_dsl::{c32, c64, tensor, try_tensor, ShapeError, Tensor};

#[path = "common/counting_allocator.rs"]
mod counting_allocator;

use counting_allocator::{allocations, CountingAllocator};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Deterministic values in (-0.5, 0.5) + (-0.5, 0.5)i.
fn values(shape: &[usize], seed: usize) -> Tensor<c64> {
    let mut t = 0usize;
    Tensor::from_fn(shape, |_| {
        let part =
            |salt: usize| ((t * 7919 + (seed + salt) * 104_729) % 1009) as f64 / 1009.0 - 0.5;
        let value = c64::new(part(1), part(2));
        t += 1;
        value
    })
}

fn assert_close(got: &Tensor<c64>, expected: &Tensor<c64>, rtol: f64) {
    assert_eq!(got.shape(), expected.shape());
    let scale = expected.iter().map(|x| x.norm()).fold(1.0, f64::max);
    for (index, (x, y)) in got.iter().zip(expected.iter()).enumerate() {
        assert!(
            (x - y).norm() <= rtol * scale,
            "element {index}: {x} against {y} (shape {:?})",
            got.shape()
        );
    }
}

/// `Σ_l op(a)[i, l] · op(b)[l, j]` by hand, `op` conjugating where asked.
fn matmul(a: &Tensor<c64>, b: &Tensor<c64>, conj: [bool; 2]) -> Tensor<c64> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    let op = |x: c64, flag: bool| if flag { x.conj() } else { x };
    Tensor::from_fn([m, n], |ix| {
        (0..k)
            .map(|l| op(a[[ix[0], l]], conj[0]) * op(b[[l, ix[1]]], conj[1]))
            .sum()
    })
}

#[test]
fn element_wise_complex_statements_have_their_complex_meaning() {
    for n in [0, 1, 7, 13] {
        let a = values(&[n, 3], 1);
        let b = values(&[n, 3], 2);
        tensor! {
            let c[i, j] = conj(a[i, j]) * b[i, j] + re(a[i, j]) - 2 * im(b[i, j]) + abs(a[i, j]) - 0.5;
            let d[i, j] = exp(a[i, j]) / (b[i, j] + 3) + sqrt(b[i, j]) * ln(a[i, j]) + powi(a[i, j], 3);
            let e[i, j] = sin(a[i, j]) + cos(b[i, j]) * tanh(a[i, j]) - tan(b[i, j]) + sigmoid(a[i, j]);
        }
        let pick = |t: &Tensor<c64>, ix: &[usize]| t[[ix[0], ix[1]]];
        let c_expected = Tensor::from_fn([n, 3], |ix| {
            let (x, y) = (pick(&a, ix), pick(&b, ix));
            x.conj() * y + x.re - 2.0 * y.im + x.norm() - 0.5
        });
        let d_expected = Tensor::from_fn([n, 3], |ix| {
            let (x, y) = (pick(&a, ix), pick(&b, ix));
            x.exp() / (y + 3.0) + y.sqrt() * x.ln() + x.powi(3)
        });
        let e_expected = Tensor::from_fn([n, 3], |ix| {
            let (x, y) = (pick(&a, ix), pick(&b, ix));
            x.sin() + y.cos() * x.tanh() - y.tan() + 1.0 / (1.0 + (-x).exp())
        });
        assert_close(&c, &c_expected, 1e-14);
        assert_close(&d, &d_expected, 1e-13);
        assert_close(&e, &e_expected, 1e-13);
    }
}

#[test]
fn conj_on_either_factor_of_a_contraction_past_the_gemm_threshold() {
    for (m, k, n) in [(1, 1, 1), (7, 13, 5), (40, 50, 60), (130, 70, 90)] {
        let a = values(&[m, k], 3);
        let b = values(&[k, n], 4);
        let at = values(&[k, m], 5);
        tensor! {
            let plain[i, j] = a[i, l] * b[l, j];
            let left[i, j] = conj(a[i, l]) * b[l, j];
            let right[i, j] = a[i, l] * conj(b[l, j]);
            let both[i, j] = conj(a[i, l]) * conj(b[l, j]);
            // The adjoint of a stored transpose: A^H B with A^H read through `at`'s strides.
            let adjoint[i, j] = conj(at[l, i]) * b[l, j];
        }
        assert_close(&plain, &matmul(&a, &b, [false, false]), 1e-13);
        assert_close(&left, &matmul(&a, &b, [true, false]), 1e-13);
        assert_close(&right, &matmul(&a, &b, [false, true]), 1e-13);
        assert_close(&both, &matmul(&a, &b, [true, true]), 1e-13);
        let a_from_at = Tensor::from_fn([m, k], |ix| at[[ix[1], ix[0]]]);
        assert_close(&adjoint, &matmul(&a_from_at, &b, [true, false]), 1e-13);
    }
}

#[test]
fn conj_in_a_gemm_allocates_nothing_a_plain_gemm_does_not() {
    // Past the GEMM threshold (32³ multiply-adds) and below the threads' (128³): one call on
    // this thread, whose allocations are counted.
    let (a, b) = (values(&[64, 64], 6), values(&[64, 64], 7));
    let mut c = Tensor::<c64>::zeros([64, 64]);
    // The first GEMM of a thread sets up the kernels' buffers and CPU detection.
    tensor! { c[i, j] = a[k, i] * b[k, j]; }
    let plain = allocations(|| tensor! { c[i, j] = a[k, i] * b[k, j]; });
    let expected_plain = matmul(
        &Tensor::from_fn([64, 64], |ix| a[[ix[1], ix[0]]]),
        &b,
        [false; 2],
    );
    assert_close(&c, &expected_plain, 1e-13);
    let conjugated = allocations(|| tensor! { c[i, j] = conj(a[k, i]) * b[k, j]; });
    let expected = matmul(
        &Tensor::from_fn([64, 64], |ix| a[[ix[1], ix[0]]]),
        &b,
        [true, false],
    );
    assert_close(&c, &expected, 1e-13);
    assert_eq!(
        conjugated, plain,
        "a conjugated factor must not be copied: {conjugated} allocations against {plain}"
    );
    // The counter is live: a `let` allocates its result.
    assert!(
        allocations(|| {
            tensor! { let fresh[i, j] = conj(a[k, i]) * b[k, j]; }
            assert_eq!(fresh.shape(), &[64, 64]);
        }) > plain
    );
}

#[test]
fn seed_contraction_with_conj_and_permuted_views() {
    let (ni, nj, nk, nl) = (9, 11, 13, 7);
    let a = values(&[ni, nk, nl], 8);
    let b = values(&[nk, nj, nl], 9);
    // `bp` holds `b` with its axes reversed; its permuted view reads as `b` again.
    let bp = Tensor::from_fn([nl, nj, nk], |ix| b[[ix[2], ix[1], ix[0]]]);
    let b_view = bp.view().permuted_axes(&[2, 1, 0]);
    tensor! {
        let c[i, j] = conj(a[i, k, l]) * b[k, j, l];
        let v[i, j] = conj(a[i, k, l]) * b_view[k, j, l];
    }
    let expected = Tensor::from_fn([ni, nj], |ix| {
        let mut total = c64::new(0.0, 0.0);
        for k in 0..nk {
            for l in 0..nl {
                total += a[[ix[0], k, l]].conj() * b[[k, ix[1], l]];
            }
        }
        total
    });
    assert_close(&c, &expected, 1e-13);
    assert_close(&v, &expected, 1e-13);
}

#[test]
fn complex_sums_scalars_and_literals() {
    for n in [0, 1, 7, 1000] {
        let x = values(&[n], 10);
        let alpha = c64::new(0.5, -2.0);
        tensor! {
            let norm2 = conj(x[i]) * x[i];
            let total = x[i];
            let scaled[i] = alpha * x[i] + 1.5 * conj(x[i]);
        }
        let expected_norm2: f64 = x.iter().map(|v| v.norm_sqr()).sum();
        assert!((norm2.re - expected_norm2).abs() <= 1e-12 * expected_norm2.max(1.0));
        assert!(norm2.im.abs() <= 1e-12 * expected_norm2.max(1.0));
        let expected_total: c64 = x.iter().sum();
        assert!((total - expected_total).norm() <= 1e-12 * (n as f64).max(1.0));
        let expected = Tensor::from_fn([n], |ix| alpha * x[[ix[0]]] + 1.5 * x[[ix[0]]].conj());
        assert_close(&scaled, &expected, 1e-15);
    }
}

#[test]
fn single_precision_complex_contractions() {
    let (m, k, n) = (45, 50, 40);
    let a64 = values(&[m, k], 11);
    let b64 = values(&[k, n], 12);
    let narrow = |t: &Tensor<c64>| t.map(|x| c32::new(x.re as f32, x.im as f32));
    let (a, b) = (narrow(&a64), narrow(&b64));
    tensor! { let c[i, j] = conj(a[i, l]) * b[l, j]; }
    let expected = matmul(&a64, &b64, [true, false]);
    let widened = c.map(|x| c64::new(x.re.into(), x.im.into()));
    assert_close(&widened, &expected, 1e-5);
}

#[test]
fn nested_arrays_and_vecs_of_complex_numbers() {
    let i = c64::i();
    let rotation = [[c64::new(0.0, 0.0), -i], [i, c64::new(0.0, 0.0)]];
    let state = vec![c64::new(1.0, 0.0), c64::new(0.0, 1.0)];
    let mut out = [c64::new(0.0, 0.0); 2];
    tensor! {
        out[r] = rotation[r, s] * state[s];
        let expectation = conj(state[r]) * rotation[r, s] * state[s];
    }
    assert_eq!(out, [c64::new(1.0, 0.0), c64::new(0.0, 1.0)]);
    assert_eq!(expectation, c64::new(2.0, 0.0));
}

#[test]
fn shape_errors_over_complex_tensors_are_errors_and_write_nothing() {
    let a = values(&[3, 4], 13);
    let b = values(&[5, 2], 14);
    let mut c = Tensor::from_fn([3, 2], |_| c64::new(7.0, 7.0));
    let outcome = (|| -> Result<(), ShapeError> {
        try_tensor! { c[i, j] = conj(a[i, k]) * b[k, j]; }
        Ok(())
    })();
    let error = outcome.expect_err("k is 4 in `a` and 5 in `b`");
    assert!(error.to_string().contains('k'), "{error}");
    assert!(c.iter().all(|&x| x == c64::new(7.0, 7.0)));
}

#[test]
fn conj_in_products_of_three_or_more_runs_pairwise_without_copies() {
    // h_mo[i, j] = Σ conj(c[p, i]) h[p, q] c[q, j]: the basis change of quantum chemistry.
    for n in [1, 7, 13, 48] {
        let c = values(&[n, n], 12);
        let h = values(&[n, n], 13);
        let adjoint = Tensor::from_fn([n, n], |ix| c[[ix[1], ix[0]]]);
        let expected = matmul(&matmul(&adjoint, &h, [true, false]), &c, [false; 2]);
        tensor! { let h_mo[i, j] = conj(c[p, i]) * h[p, q] * c[q, j]; }
        assert_close(&h_mo, &expected, 1e-13);
        // Conjugation on two of four factors, one of them last.
        let d = values(&[n, n], 14);
        tensor! { let four[i, j] = conj(c[p, i]) * h[p, q] * d[q, r] * conj(c[j, r]); }
        let right = Tensor::from_fn([n, n], |ix| c[[ix[1], ix[0]]]);
        let expected = matmul(
            &matmul(&matmul(&adjoint, &h, [true, false]), &d, [false; 2]),
            &right,
            [false, true],
        );
        assert_close(&four, &expected, 1e-13);
    }
    // Past the GEMM threshold, the conjugated product allocates what the plain one does.
    let n = 64;
    let (c, h) = (values(&[n, n], 15), values(&[n, n], 16));
    let mut out = Tensor::<c64>::zeros([n, n]);
    tensor! { out[i, j] = c[p, i] * h[p, q] * c[q, j]; }
    let plain = allocations(|| tensor! { out[i, j] = c[p, i] * h[p, q] * c[q, j]; });
    let conjugated = allocations(|| tensor! { out[i, j] = conj(c[p, i]) * h[p, q] * c[q, j]; });
    assert_eq!(
        conjugated, plain,
        "a conjugated factor must not be copied: {conjugated} allocations against {plain}"
    );
    let adjoint = Tensor::from_fn([n, n], |ix| c[[ix[1], ix[0]]]);
    let expected = matmul(&matmul(&adjoint, &h, [true, false]), &c, [false; 2]);
    assert_close(&out, &expected, 1e-13);
}

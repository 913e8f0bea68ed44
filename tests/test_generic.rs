//! `tensor!` inside generic numeric code (`fn f<T: Real + Fractional>`), instantiated for f32 and f64, and
//! long reductions as accurate as pairwise summation.

mod common;

use common::{assert_close, assert_close_scalar, at, data, reference, sum_over};
use tensor_dsl::{tensor, Fractional, Real, Tensor, TensorView};

fn matmul<T: Real + Fractional>(a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
    tensor! { let c[i, j] = a[i, k] * b[k, j]; }
    c
}

fn scaled_update<T: Real + Fractional>(c: &mut Tensor<T>, a: &Tensor<T>, alpha: T) {
    tensor! { c[i] += alpha * a[i] * 2 + 1; }
}

fn total<T: Real + Fractional>(a: &TensorView<'_, T>) -> T {
    tensor! { let s = a[i, j]; }
    s
}

fn chain<T: Real + Fractional>(a: &Tensor<T>, b: &Tensor<T>, x: &Tensor<T>) -> Tensor<T> {
    tensor! { let c[i, j] = a[i, k] * b[k, l] * exp(x[l, j]) / 3; }
    c
}

fn generic_functions_agree_with_naive_loops<T: Real + Fractional>(rtol: f64) {
    for n in [1, 7, 40] {
        let a = data::<T>(&[n, n + 1], 0);
        let b = data::<T>(&[n + 1, 13], 1);
        let expected = reference(&[n, 13], |ix| {
            sum_over(&[n + 1], |r| {
                at(&a, &[ix[0], r[0]]) * at(&b, &[r[0], ix[1]])
            })
        });
        assert_close(&matmul(&a, &b), &expected, rtol);

        let x = data::<T>(&[13, 13], 2);
        let expected = reference(&[n, 13], |ix| {
            sum_over(&[n + 1, 13], |r| {
                at(&a, &[ix[0], r[0]]) * at(&b, &[r[0], r[1]]) * at(&x, &[r[1], ix[1]]).exp() / 3.0
            })
        });
        assert_close(&chain(&a, &b, &x), &expected, rtol);

        let mut c = data::<T>(&[n], 3);
        let before = c.clone();
        let v = data::<T>(&[n], 4);
        scaled_update(&mut c, &v, T::from_f64(0.5));
        let expected = reference(&[n], |ix| at(&before, ix) + at(&v, ix) + 1.0);
        assert_close(&c, &expected, rtol);

        let s = total(&a.view().permuted_axes(&[1, 0]));
        let expected = sum_over(&[n, n + 1], |ix| at(&a, ix));
        assert_close_scalar(s.to_f64(), expected, rtol);
    }
}

#[test]
fn generic_code_compiles_and_runs_for_f32_and_f64() {
    generic_functions_agree_with_naive_loops::<f32>(1e-5);
    generic_functions_agree_with_naive_loops::<f64>(1e-12);
}

#[test]
fn long_f32_sums_are_as_accurate_as_numpy() {
    // 4·10⁷ values alternating 1e4 and 1e-3: naive accumulation in f32 is off by ~1e-3
    // relative; pairwise summation (numpy's) by ~1e-7.
    let n = 40_000_000;
    let x = Tensor::<f32>::from_fn([n], |ix| if ix[0] % 2 == 0 { 1e4 } else { 1e-3 });
    let exact = (n / 2) as f64 * (1e4 + f64::from(1e-3f32));
    tensor! { let s = x[i]; }
    let error = (f64::from(s) - exact).abs() / exact;
    assert!(error < 1e-6, "relative error {error}");
    // The same values as rows of a matrix, summed per row and in total.
    let m = Tensor::from_shape_vec([4, n / 4], x.into_vec()).unwrap();
    tensor! {
        let rows[i] = m[i, j];
        let all = m[i, j];
    }
    for row in rows.as_slice() {
        let error = (f64::from(*row) - exact / 4.0).abs() / (exact / 4.0);
        assert!(error < 1e-6, "row: relative error {error}");
    }
    let error = (f64::from(all) - exact).abs() / exact;
    assert!(error < 1e-6, "total: relative error {error}");
}

/// `Σ_k x[i, k] · y[k, j]` in f64, the reference for f32 contractions.
fn exact_product(x: &Tensor<f32>, y: &Tensor<f32>, i: usize, j: usize) -> f64 {
    (0..x.shape()[1])
        .map(|k| f64::from(x[[i, k]]) * f64::from(y[[k, j]]))
        .sum()
}

#[test]
fn long_f32_contractions_are_as_accurate_on_the_gemm_path() {
    // A matrix product whose inner dimension is 10⁷ long runs as GEMM calls; summed straight
    // into C, one block of the inner dimension after another, it was off by ~1e-5 relative.
    let n = 10_000_000;
    let x = Tensor::<f32>::from_fn([2, n], |ix| if ix[1] % 2 == 0 { 1e4 } else { 1e-3 });
    let y = Tensor::<f32>::from_fn([n, 3], |ix| 1.0 + (ix[0] % 7 + ix[1]) as f32 * 1e-3);
    tensor! { let c[i, j] = x[i, k] * y[k, j]; }
    for (i, j) in [(0, 0), (0, 2), (1, 1)] {
        let exact = exact_product(&x, &y, i, j);
        let error = (f64::from(c[[i, j]]) - exact).abs() / exact;
        assert!(error < 1e-6, "c[{i}, {j}]: relative error {error}");
    }
    // Contracted loops that do not merge into one (k and l apart in b) are summed by many
    // calls, grouped the same way.
    let (k, l) = (3000, 1500);
    let a = Tensor::<f32>::from_fn([2, k, l], |ix| if ix[2] % 2 == 0 { 1e4 } else { 1e-3 });
    let b = Tensor::<f32>::from_fn([k, 2, l], |ix| 1.0 + (ix[0] % 5) as f32 * 1e-3);
    tensor! { let d[i, j] = a[i, k, l] * b[k, j, l]; }
    for (i, j) in [(0, 0), (1, 1)] {
        let exact: f64 = (0..k)
            .flat_map(|kk| (0..l).map(move |ll| (kk, ll)))
            .map(|(kk, ll)| f64::from(a[[i, kk, ll]]) * f64::from(b[[kk, j, ll]]))
            .sum();
        let error = (f64::from(d[[i, j]]) - exact).abs() / exact;
        assert!(error < 1e-6, "d[{i}, {j}]: relative error {error}");
    }
}

#[test]
fn long_gemm_sums_keep_every_form_of_the_statement() {
    // C larger than one band of the grouped sum, and an inner dimension past one group, in the
    // three modes: `+=`, `β·c +` with β = 0 over NaN (not read), and `β·c +` with β = 2.
    let (m, k, n) = (520, 5000, 530);
    let a = Tensor::<f32>::from_fn([m, k], |ix| ((ix[0] * 7 + ix[1] * 3) % 11) as f32 - 5.0);
    let b = Tensor::<f32>::from_fn([k, n], |ix| ((ix[0] * 5 + ix[1]) % 13) as f32 * 0.25);
    let start = Tensor::<f32>::from_fn([m, n], |ix| (ix[0] + ix[1]) as f32);
    let mut added = start.clone();
    let mut not_read = Tensor::<f32>::from_fn([m, n], |_| f32::NAN);
    let mut scaled = start.clone();
    let (zero, two) = (0.0f32, 2.0f32);
    tensor! {
        added[i, j] += a[i, k] * b[k, j];
        not_read[i, j] = zero * not_read[i, j] + a[i, k] * b[k, j];
        scaled[i, j] = two * scaled[i, j] + a[i, k] * b[k, j];
    }
    for (i, j) in [(0, 0), (1, 529), (260, 17), (519, 0), (519, 529)] {
        let product = exact_product(&a, &b, i, j);
        let old = f64::from(start[[i, j]]);
        for (what, got, want) in [
            ("+=", added[[i, j]], old + product),
            ("β = 0", not_read[[i, j]], product),
            ("β = 2", scaled[[i, j]], 2.0 * old + product),
        ] {
            let error = (f64::from(got) - want).abs() / want.abs().max(1.0);
            assert!(error < 1e-6, "{what} at [{i}, {j}]: {got} against {want}");
        }
    }
}

//! `tensor!` inside generic numeric code (`fn f<T: Element>`), instantiated for f32 and f64, and
//! long reductions as accurate as pairwise summation.

mod common;

use common::{assert_close, assert_close_scalar, at, data, reference, sum_over};
use tensor_dsl::{tensor, Element, Tensor, TensorView};

fn matmul<T: Element>(a: &Tensor<T>, b: &Tensor<T>) -> Tensor<T> {
    tensor! { let c[i, j] = a[i, k] * b[k, j]; }
    c
}

fn scaled_update<T: Element>(c: &mut Tensor<T>, a: &Tensor<T>, alpha: T) {
    tensor! { c[i] += alpha * a[i] * 2 + 1; }
}

fn total<T: Element>(a: &TensorView<'_, T>) -> T {
    tensor! { let s = a[i, j]; }
    s
}

fn chain<T: Element>(a: &Tensor<T>, b: &Tensor<T>, x: &Tensor<T>) -> Tensor<T> {
    tensor! { let c[i, j] = a[i, k] * b[k, l] * exp(x[l, j]) / 3; }
    c
}

fn generic_functions_agree_with_naive_loops<T: Element>(rtol: f64) {
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

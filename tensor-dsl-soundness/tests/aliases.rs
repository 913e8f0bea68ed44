//! A writable view read under a second name (`let r = &v`, `{ &v }`, a function handed one view
//! twice, a raw identifier) is read as it was before the statement wrote anything, in every
//! kernel (loop nest, GEMM, network) and with 1, 2 and 4 threads. Sized past the threading and
//! GEMM thresholds, so a missed overlap is a data race (ThreadSanitizer) or a wrong result.

use tensor_dsl::{tensor, Tensor, TensorViewMut};
#[path = "../../tests/common/mod.rs"]
mod common;

use common::{assert_close, data};
use tensor_dsl_soundness::{in_pools, matmul};

#[test]
fn a_second_reference_to_the_target_is_read_before_the_write() {
    in_pools(|threads| {
        // v[i] = Σj r[j] with r = &v: every element becomes the sum of the old elements.
        let n = 1024;
        let mut storage = data::<f64>(&[n], threads);
        let before = storage.clone();
        let v = storage.view_mut();
        let r = &v;
        tensor! { v[i] = r[j]; }
        let total: f64 = before.as_slice().iter().sum();
        assert_close(&storage, &Tensor::from_fn([n], |_| total), 1e-12);
    });
}

#[test]
fn a_braced_operand_naming_the_target_is_read_before_the_write() {
    in_pools(|threads| {
        let n = 768;
        let mut storage = data::<f32>(&[n, n], threads);
        let before = storage.clone();
        let v = storage.view_mut();
        tensor! { v[i, j] = 2 * { &v }[j, i]; }
        let expected = Tensor::from_fn([n, n], |ix| 2.0 * f64::from(before[[ix[1], ix[0]]]));
        assert_close(&storage, &expected, 1e-6);
    });
}

fn transpose_into(out: &TensorViewMut<'_, f64>, input: &TensorViewMut<'_, f64>) {
    tensor! { out[i, j] = input[j, i] + out[i, j]; }
}

#[test]
fn a_function_handed_one_view_twice_reads_a_copy() {
    in_pools(|threads| {
        let n = 700;
        let mut storage = data::<f64>(&[n, n], threads);
        let before = storage.clone();
        let v = storage.view_mut();
        transpose_into(&v, &v);
        let expected =
            Tensor::from_fn([n, n], |ix| before[[ix[1], ix[0]]] + before[[ix[0], ix[1]]]);
        assert_close(&storage, &expected, 1e-12);
    });
}

#[test]
fn a_raw_identifier_is_the_same_tensor() {
    in_pools(|threads| {
        let n = 600;
        let mut storage = data::<f64>(&[n, n], threads);
        let before = storage.clone();
        let v = storage.view_mut();
        tensor! { v[i, j] = r#v[j, i]; }
        let expected = Tensor::from_fn([n, n], |ix| before[[ix[1], ix[0]]]);
        assert_close(&storage, &expected, 1e-12);
    });
}

#[test]
fn a_gemm_whose_output_is_also_an_input_reads_a_copy() {
    in_pools(|threads| {
        for n in [33, 160] {
            let mut storage = data::<f64>(&[n, n], threads);
            let w = data::<f64>(&[n, n], 7);
            let before = storage.clone();
            let v = storage.view_mut();
            let r = &v;
            tensor! { v[i, j] = r[i, k] * w[k, j]; }
            assert_close(&storage, &matmul(&before, &w), 1e-12);

            // The GEMM update form, with β reading the target in place and an alias as A.
            let mut storage = before.clone();
            let v = storage.view_mut();
            let r = &v;
            tensor! { v[i, j] = 0.5 * v[i, j] + r[i, k] * w[k, j]; }
            let product = matmul(&before, &w);
            let expected = Tensor::from_fn([n, n], |ix| {
                0.5 * before[[ix[0], ix[1]]] + product[[ix[0], ix[1]]]
            });
            assert_close(&storage, &expected, 1e-12);
        }
    });
}

#[test]
fn a_network_reading_the_target_under_another_name_reads_a_copy() {
    in_pools(|threads| {
        let n = 96;
        let mut storage = data::<f64>(&[n, n], threads);
        let w = data::<f64>(&[n, n], 5);
        let x = data::<f64>(&[n, n], 6);
        let before = storage.clone();
        let v = storage.view_mut();
        let r = &v;
        tensor! { v[i, j] = r[i, k] * w[k, l] * x[l, j]; }
        let product = matmul(&before, &w);
        let expected = matmul(
            &Tensor::from_shape_vec([n, n], product.into_vec()).unwrap(),
            &x,
        );
        assert_close(&storage, &expected, 1e-10);
    });
}

#[test]
fn point_wise_reads_under_another_name_and_in_place_agree() {
    in_pools(|threads| {
        let n = 1 << 18;
        let mut storage = data::<f32>(&[n], threads);
        let before = storage.clone();
        let v = storage.view_mut();
        let r = &v;
        tensor! {
            v[i] = 2 * r[i] + v[i];
            v[i] += r[i];
        }
        let expected = Tensor::from_fn([n], |ix| 6.0 * f64::from(before[[ix[0]]]));
        assert_close(&storage, &expected, 1e-6);
    });
}

//! Rust slices and `Vec`s as rank-1 operands and targets, end to end against naive loops: read
//! and written in place, beside tensors, in contractions past the GEMM threshold, sub-slices,
//! odd and zero lengths, in-place reads, and length mismatches refused before any write.

mod common;

use common::{assert_close, assert_close_scalar, at, data, reference, sum_over};
use tensor_dsl::{tensor, try_tensor, Element, ShapeErrorKind, Tensor};

fn values(n: usize, seed: usize) -> Vec<f64> {
    data::<f64>(&[n], seed).into_vec()
}

fn as_tensor(v: &[f64]) -> Tensor<f64> {
    Tensor::from_shape_vec([v.len()], v.to_vec()).unwrap()
}

#[test]
fn slices_and_vecs_are_read_and_written_at_every_length() {
    for n in [0, 1, 7, 13, 1000] {
        let x = values(n, 1);
        let y = values(n, 2);
        let xs: &[f64] = &x;
        // A `Vec` target, a slice and a `Vec` operand, a scalar.
        let mut z = vec![f64::NAN; n];
        tensor! { z[i] = 2 * xs[i] + y[i]; }
        let expected = reference(&[n], |ix| 2.0 * x[ix[0]] + y[ix[0]]);
        assert_close(&as_tensor(&z), &expected, 1e-15);
        // A `&mut [T]` target needs no `mut` binding; it reads itself in place.
        let target: &mut [f64] = &mut z;
        tensor! { target[i] = 0.5 * target[i] - x[i]; }
        let expected = reference(&[n], |ix| 0.5 * at(&expected, ix) - x[ix[0]]);
        assert_close(&as_tensor(&z), &expected, 1e-15);
        // A scalar result, and a `let` result from slice operands (a `Tensor`).
        tensor! {
            let dot = x[i] * y[i];
            let outer[i, j] = x[i] * y[j];
        }
        assert_close_scalar(dot, sum_over(&[n], |ix| x[ix[0]] * y[ix[0]]), 1e-12);
        assert_close(&outer, &reference(&[n, n], |ix| x[ix[0]] * y[ix[1]]), 1e-15);
    }
}

#[test]
fn slices_meet_tensors_in_contractions_past_the_gemm_threshold() {
    for (m, k) in [(7, 13), (300, 400)] {
        let a = data::<f64>(&[m, k], 3);
        let v = values(k, 4);
        let mut w = vec![0.0; m];
        tensor! { w[i] = a[i, k] * v[k]; }
        let expected = reference(&[m], |ix| {
            sum_over(&[k], |r| at(&a, &[ix[0], r[0]]) * v[r[0]])
        });
        assert_close(&as_tensor(&w), &expected, 1e-12);
        // A sub-slice, `+=`, and a tensor target fed by slices.
        let mut head = v[..m.min(k)].to_vec();
        let part: &[f64] = &w[..m.min(k)];
        tensor! {
            head[i] += part[i];
            let g[i, j] = a[i, j] * v[j] * w[i];
        }
        for (i, h) in head.iter().enumerate() {
            assert_close_scalar(*h, v[i] + w[i], 1e-12);
        }
        let expected = reference(&[m, k], |ix| at(&a, ix) * v[ix[1]] * w[ix[0]]);
        assert_close(&g, &expected, 1e-12);
    }
}

#[test]
fn a_fixed_position_of_a_slice_is_read() {
    let x = values(9, 5);
    let y = values(4, 6);
    let mut z = vec![0.0; 4];
    tensor! { z[i] = x[3] * y[i] + x[{ 8 }]; }
    for (i, value) in z.iter().enumerate() {
        assert_close_scalar(*value, x[3] * y[i] + x[8], 1e-15);
    }
}

#[test]
fn slice_lengths_that_disagree_are_refused_before_any_write() {
    let x = values(5, 7);
    let y = values(6, 8);
    let mut z = vec![1.0; 5];
    let update = |z: &mut [f64]| -> Result<(), tensor_dsl::ShapeError> {
        try_tensor! {
            z[i] = x[i];
            z[i] = x[i] + y[i];
        }
        Ok(())
    };
    let error = update(&mut z).expect_err("lengths 5 and 6 disagree");
    assert_eq!(error.kind(), ShapeErrorKind::ExtentMismatch);
    assert!(error.to_string().contains('i'), "{error}");
    assert_eq!(z, vec![1.0; 5], "nothing was written");
}

/// Generic code over the element type reads and writes slices with no further bound.
fn axpy<T: Element>(alpha: T, x: &[T], y: &mut [T]) {
    tensor! { y[i] += alpha * x[i]; }
}

#[test]
fn generic_code_reads_and_writes_slices() {
    let x = values(13, 9);
    let mut y = values(13, 10);
    let before = y.clone();
    axpy(3.0, &x, &mut y);
    for k in 0..13 {
        assert_close_scalar(y[k], before[k] + 3.0 * x[k], 1e-15);
    }
    let (x32, mut y32) = (vec![1.0f32, 2.0], vec![0.5f32, 0.25]);
    axpy(2.0f32, &x32, &mut y32);
    assert_eq!(y32, [2.5, 4.25]);
}

//! Naive reference evaluation and comparison helpers shared by the end-to-end tests.
#![allow(dead_code)]

use tensor_dsl::{Real, Tensor};

/// Deterministic, irregular test data: row-major element `t` of operand number `seed` is
/// `((t·7919 + (seed+1)·104729) mod 1009) / 1009 − 0.5`, the acceptance corpus's input rule.
pub fn data<T: Real>(shape: &[usize], seed: usize) -> Tensor<T> {
    let mut t = 0usize;
    Tensor::from_fn(shape, |_| {
        let value = ((t * 7919 + (seed + 1) * 104_729) % 1009) as f64 / 1009.0 - 0.5;
        t += 1;
        T::from_f64(value)
    })
}

/// Σ over every multi-index of `extents` of `f(index)`; 0 for an empty range.
pub fn sum_over(extents: &[usize], mut f: impl FnMut(&[usize]) -> f64) -> f64 {
    let mut total = 0.0;
    if extents.contains(&0) {
        return 0.0;
    }
    let mut index = vec![0usize; extents.len()];
    loop {
        total += f(&index);
        let mut axis = extents.len();
        loop {
            if axis == 0 {
                return total;
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < extents[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

/// A reference result: `f(index)` at every multi-index of `shape`, in f64.
pub fn reference(shape: &[usize], f: impl FnMut(&[usize]) -> f64) -> Tensor<f64> {
    Tensor::from_fn(shape, f)
}

/// Element `index` of `tensor` widened to f64.
pub fn at<T: Real>(tensor: &Tensor<T>, index: &[usize]) -> f64 {
    tensor.get(index).expect("index inside the shape").to_f64()
}

/// Asserts equal shapes and every element within `rtol` relative to the largest reference
/// magnitude (so values that cancel to near zero are compared sensibly).
#[track_caller]
pub fn assert_close<T: Real>(got: &Tensor<T>, expected: &Tensor<f64>, rtol: f64) {
    assert_eq!(got.shape(), expected.shape(), "shapes differ");
    let scale = expected
        .as_slice()
        .iter()
        .fold(1.0f64, |m, v| m.max(v.abs()));
    for (k, (g, e)) in got.as_slice().iter().zip(expected.as_slice()).enumerate() {
        let g = g.to_f64();
        assert!(
            (g - e).abs() <= rtol * scale,
            "element {k}: got {g}, expected {e} (shape {:?})",
            got.shape()
        );
    }
}

#[track_caller]
pub fn assert_close_scalar(got: f64, expected: f64, rtol: f64) {
    assert!(
        (got - expected).abs() <= rtol * expected.abs().max(1.0),
        "got {got}, expected {expected}"
    );
}

//! What the numbered examples share: deterministic data and a check that prints its result.
#![allow(dead_code)]

use tensor_dsl::Tensor;

/// Deterministic, irregular data in [-0.5, 0.5): no random-number dependency needed.
pub fn data(shape: &[usize], seed: u64) -> Tensor<f64> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    Tensor::from_fn(shape, |_| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    })
}

/// Prints `what` with the largest difference between `got` and `expected`, and panics if it
/// exceeds `tolerance` relative to the largest expected magnitude.
pub fn check(what: &str, got: &[f64], expected: &[f64], tolerance: f64) {
    assert_eq!(got.len(), expected.len(), "{what}: lengths differ");
    let scale = expected.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    let worst = got
        .iter()
        .zip(expected)
        .fold(0.0f64, |m, (g, e)| m.max((g - e).abs()));
    println!(
        "checked {what}: {} elements, largest difference {worst:.1e}",
        got.len()
    );
    assert!(
        worst <= tolerance * scale,
        "{what}: difference {worst} too large"
    );
}

/// Σ over every multi-index of `extents` of `f(index)`.
pub fn sum_over(extents: &[usize], mut f: impl FnMut(&[usize]) -> f64) -> f64 {
    if extents.contains(&0) {
        return 0.0;
    }
    let mut index = vec![0; extents.len()];
    let mut total = 0.0;
    'points: loop {
        total += f(&index);
        for axis in (0..extents.len()).rev() {
            index[axis] += 1;
            if index[axis] < extents[axis] {
                continue 'points;
            }
            index[axis] = 0;
        }
        return total;
    }
}

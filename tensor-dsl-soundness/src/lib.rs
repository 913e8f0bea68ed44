//! Shared helpers of the soundness tests: deterministic data, naive reference loops, and running
//! a closure under rayon pools of a fixed number of threads.
//!
//! The tests of this crate exist to be run under sanitizers (`.ci/sanitizers`), so they use
//! nothing but `tensor-dsl` and `rayon`: every crate they build is instrumented cheaply.

use tensor_dsl::{Element, Tensor};

/// Deterministic, irregular data in `[-0.5, 0.5)` (the acceptance corpus's input rule).
pub fn data<T: Element>(shape: &[usize], seed: usize) -> Tensor<T> {
    let mut t = 0usize;
    Tensor::from_fn(shape, |_| {
        let value = ((t * 7919 + (seed + 1) * 104_729) % 1009) as f64 / 1009.0 - 0.5;
        t += 1;
        T::from_f64(value)
    })
}

/// Runs `f` once in each of a 1-, 2- and 4-thread rayon pool, so work split across threads is
/// exercised whatever machine runs the tests.
pub fn in_pools(mut f: impl FnMut(usize) + Send) {
    for threads in [1, 2, 4] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool");
        pool.install(|| f(threads));
    }
}

/// Asserts equal shapes and every element within `rtol` of the largest reference magnitude.
#[track_caller]
pub fn assert_close<T: Element>(got: &Tensor<T>, expected: &Tensor<f64>, rtol: f64) {
    assert_eq!(got.shape(), expected.shape(), "shapes differ");
    assert_eq!(got.len(), expected.len(), "lengths differ");
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

/// `a · b` for row-major matrices, naively, in f64.
pub fn matmul<T: Element>(a: &Tensor<T>, b: &Tensor<T>) -> Tensor<f64> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    Tensor::from_fn([m, n], |ix| {
        (0..k)
            .map(|p| a[[ix[0], p]].to_f64() * b[[p, ix[1]]].to_f64())
            .sum()
    })
}

//! Shared helpers of the soundness tests: running a closure under rayon pools of a fixed number of
//! threads, and a naive matrix product. Data and comparisons come from the top-level tests'
//! `tests/common`, which the test files include by path.
//!
//! The tests of this crate exist to be run under sanitizers (`.ci/sanitizers`), so they use
//! nothing but `tensor-dsl` and `rayon`: every crate they build is instrumented cheaply.

use tensor_dsl::{Real, Tensor};

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

/// `a · b` for row-major matrices, naively, in f64.
pub fn matmul<T: Real>(a: &Tensor<T>, b: &Tensor<T>) -> Tensor<f64> {
    let (m, k, n) = (a.shape()[0], a.shape()[1], b.shape()[1]);
    Tensor::from_fn([m, n], |ix| {
        (0..k)
            .map(|p| a[[ix[0], p]].to_f64() * b[[p, ix[1]]].to_f64())
            .sum()
    })
}

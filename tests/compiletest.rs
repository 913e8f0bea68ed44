//! Compile-fail tests: each file under `tests/ui/` breaks one rule, and its `.stderr` shows
//! the message and the tokens it underlines. The expected output follows rustc's wording, so
//! the test exists only on the compiler the files were written with.

#[rustversion::stable(1.95)]
#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/**/*.rs");
    // Host and device tensors in one statement (the CUDA backend's type-level divide).
    #[cfg(feature = "cuda")]
    cases.compile_fail("tests/ui_cuda/*.rs");
    // Fixed-rank ndarray arrays: their rank is checked at compile time.
    #[cfg(feature = "ndarray")]
    cases.compile_fail("tests/ui_ndarray/*.rs");
}

//! Compile-fail tests: each file under `tests/ui/` breaks one rule, and its `.stderr` shows
//! the message and the tokens it underlines. The expected output follows rustc's wording, so
//! the test exists only on the compiler the files were written with.

#[rustversion::stable(1.95)]
#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    // rustc lists the operand types it knows in some messages, and feature `ndarray` adds
    // ndarray's: the general cases are written without it. With `cuda` or `mpi` only those
    // features' cases run: the general ones ran on the default features, and each case is a
    // build of its own.
    #[cfg(not(any(feature = "ndarray", feature = "cuda", feature = "mpi")))]
    cases.compile_fail("tests/ui/**/*.rs");
    // Messages that list every operand type: without optional features only.
    #[cfg(not(any(feature = "cuda", feature = "ndarray", feature = "mpi")))]
    cases.compile_fail("tests/ui_default/**/*.rs");
    // Host and device tensors in one statement (the CUDA backend's type-level divide).
    #[cfg(feature = "cuda")]
    cases.compile_fail("tests/ui_cuda/*.rs");
    // Host and distributed tensors in one statement (`.ci/run --full`).
    #[cfg(feature = "mpi")]
    cases.compile_fail("tests/ui_mpi/*.rs");
    // Fixed-rank ndarray arrays: their rank is checked at compile time.
    #[cfg(feature = "ndarray")]
    cases.compile_fail("tests/ui_ndarray/*.rs");
}

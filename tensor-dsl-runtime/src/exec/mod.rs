//! How a statement runs: the [`Step`](step::Step) proof, the only door to the engines (loop
//! nests, GEMM calls, networks of pairwise contractions), and the `Backend` trait through which
//! generated code sends each step to the host or to a device; beside them the matrix
//! operations (`matrix.rs`, on `faer`, feature `matrix`). Imports `tensor` and `operand`.

pub(crate) mod backend;
pub(crate) mod gemm;
pub(crate) mod loop_nest;
#[cfg(feature = "matrix")]
pub(crate) mod matrix;
pub mod network;
pub(crate) mod scratch;
pub(crate) mod step;

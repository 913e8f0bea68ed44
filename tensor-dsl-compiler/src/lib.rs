//! The `tensor!` compiler as a library: `proc_macro2` tokens in, Rust tokens out. The
//! procedural macro crate is a thin shim over [`expand`]; tests and tools call it directly.
//!
//! Pipeline (see `ARCHITECTURE.md`): `syntax` parses, `check` resolves and reports every user
//! error, `passes` rewrite the IR, `lower` plans each statement, `emit` writes Rust (and, in [`cuda`], a CUDA C module
//! per plan step).

mod check;
mod compile;
mod diagnostics;
mod emit;
pub mod ir;
pub mod lower;
mod passes;
mod syntax;

pub use compile::{
    check_block, expand, expand_with, front_end, trace, trace_block, Config, Segment, Trace, Traced,
};
pub use emit::cuda;
pub use emit::Flavor;

#[cfg(test)]
mod tests;

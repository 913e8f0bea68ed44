//! `#[proc_macro]` shims over `tensor_dsl_compiler::expand`; all logic lives in the compiler.

use proc_macro::TokenStream;
use tensor_dsl_compiler::{expand, expand_with, Config, Flavor};

/// Tensor algebra in Einstein notation; see the `tensor-dsl` crate documentation.
#[proc_macro]
pub fn tensor(input: TokenStream) -> TokenStream {
    expand(input.into(), Flavor::Panic).into()
}

/// Like `tensor!`, but run-time shape errors `return Err(ShapeError.into())` from the enclosing
/// function instead of panicking.
#[proc_macro]
pub fn try_tensor(input: TokenStream) -> TokenStream {
    expand(input.into(), Flavor::Fallible).into()
}

/// `tensor!` with only the passes correctness needs: the reference the optimizing passes are
/// tested against. Not part of the public API.
#[doc(hidden)]
#[proc_macro]
pub fn __tensor_unoptimized(input: TokenStream) -> TokenStream {
    let config = Config {
        flavor: Flavor::Panic,
        optimize: false,
    };
    expand_with(input.into(), config).into()
}

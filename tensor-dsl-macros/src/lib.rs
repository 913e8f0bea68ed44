//! `#[proc_macro]` shims over `tensor_dsl_compiler::expand_with`; all logic lives in the
//! compiler. The shim only finds what the compiler cannot: the name under which the crate
//! being compiled depends on `tensor-dsl`.

use proc_macro::TokenStream;
use proc_macro2::{Ident, Span};
use proc_macro_crate::{crate_name, FoundCrate};
use tensor_dsl_compiler::{expand_with, Config, Flavor};

/// Tensor algebra in Einstein notation; see the `tensor-dsl` crate documentation.
#[proc_macro]
pub fn tensor(input: TokenStream) -> TokenStream {
    expand_with(input.into(), config(Flavor::Panic)).into()
}

/// Like `tensor!`, but run-time shape errors `return Err(ShapeError.into())` from the enclosing
/// function instead of panicking.
#[proc_macro]
pub fn try_tensor(input: TokenStream) -> TokenStream {
    expand_with(input.into(), config(Flavor::Fallible)).into()
}

/// `tensor!` with only the passes correctness needs and no written-out loops: the reference
/// the optimizing passes are tested against. Not part of the public API.
#[doc(hidden)]
#[proc_macro]
pub fn __tensor_unoptimized(input: TokenStream) -> TokenStream {
    let config = Config {
        optimize: false,
        written_out: false,
        ..config(Flavor::Panic)
    };
    expand_with(input.into(), config).into()
}

/// `tensor!` without written-out loops, every step on the general path: what a build whose
/// runtime is unoptimized (Cargo's debug profile) runs, for tests that compare it with
/// `tensor!` where the loops are kept. Not part of the public API.
#[doc(hidden)]
#[proc_macro]
pub fn __tensor_general(input: TokenStream) -> TokenStream {
    let config = Config {
        written_out: false,
        ..config(Flavor::Panic)
    };
    expand_with(input.into(), config).into()
}

fn config(flavor: Flavor) -> Config {
    Config {
        runtime: runtime_crate(),
        cuda: cfg!(feature = "cuda"),
        dist: cfg!(feature = "mpi"),
        matrix: cfg!(feature = "matrix"),
        ..Config::new(flavor)
    }
}

/// The name the crate being compiled gives the `tensor-dsl` package in its `Cargo.toml`
/// (`tdsl = { package = "tensor-dsl", .. }` → `tdsl`).
fn runtime_crate() -> Ident {
    let name = match crate_name("tensor-dsl") {
        Ok(FoundCrate::Name(name)) => name,
        // `tensor-dsl` itself (its doctests and examples): the facade declares
        // `extern crate self as tensor_dsl`, so the usual name resolves there too. Without a
        // manifest that names the package (a crate depending on this one directly), the usual
        // name is the best guess.
        Ok(FoundCrate::Itself) | Err(_) => "tensor_dsl".to_owned(),
    };
    Ident::new(&name, Span::call_site())
}

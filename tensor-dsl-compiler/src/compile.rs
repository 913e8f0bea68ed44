//! The `tensor!` compiler front to back: syntax → check → passes → lower → emit. Only the first
//! two stages can fail; their errors are all reported together with a stub expansion.

use proc_macro2::TokenStream;

use crate::diagnostics::Errors;
use crate::emit::{self, Flavor};
use crate::{check, ir, lower, passes, syntax};

/// Expands the body of a `tensor!` (or, with `Flavor::Fallible`, `try_tensor!`) call.
pub fn expand(input: TokenStream, flavor: Flavor) -> TokenStream {
    let mut errors = Errors::new();
    let parsed = syntax::parse_block(input, &mut errors);
    let program = check::check(&parsed, &mut errors);
    if let Err(error) = errors.into_result() {
        return emit::fallback(&parsed, error);
    }
    let program = passes::run(program, true);
    let plan = lower::lower(program);
    emit::emit(&plan, flavor)
}

/// Parses and checks a block: the IR in einsum notation, or every error of the block.
pub fn front_end(input: TokenStream) -> syn::Result<ir::Program> {
    let mut errors = Errors::new();
    let parsed = syntax::parse_block(input, &mut errors);
    let program = check::check(&parsed, &mut errors);
    errors.into_result().map(|()| program)
}

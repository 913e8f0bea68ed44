//! Plan → Rust tokens. The expansion runs, in order: Rust-expression operands and computed
//! positions (`prelude`), every shape check of the block (`checks`), then each statement
//! (`cpu`), followed by the proofs that names grouped by their text are one variable
//! (`checks::binding_proofs`, which only type-check). Generated code names the runtime only as
//! `::tensor_dsl::__private` (or by the name the user's crate gives the dependency), and its
//! own locals carry `Span::mixed_site()` so they never clash with user names.

/// `quote!` with every token the template itself writes spanned `Span::mixed_site()`, so
/// generated locals are hygienic; interpolated user tokens keep their own spans.
macro_rules! hygienic {
    ($($tokens:tt)*) => {
        quote::quote_spanned!(proc_macro2::Span::mixed_site()=> $($tokens)*)
    };
}

mod checks;
mod cpu;
pub mod cuda;
mod fallback;

use std::cell::RefCell;

use proc_macro2::{Ident, Span, TokenStream};
use quote::format_ident;

use crate::ir::{Target, TensorId, TensorOrigin};
use crate::lower::Plan;
use crate::syntax::Parsed;

/// How run-time shape errors surface.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flavor {
    /// `tensor!`: panic at the user's macro call.
    Panic,
    /// `try_tensor!`: `return Err(From::from(shape_error))` from the enclosing function.
    Fallible,
}

/// The expansion of a checked block; generated code names the runtime `::runtime::__private`.
pub fn emit(plan: &Plan, flavor: Flavor, runtime: &Ident, cuda: bool) -> TokenStream {
    with_runtime(runtime, || emit_plan(plan, flavor, cuda))
}

/// The expansion of a block that failed to check (see `fallback`).
pub fn fallback(parsed: &[Parsed], error: syn::Error, runtime: &Ident) -> TokenStream {
    with_runtime(runtime, || fallback::fallback(parsed, error))
}

fn emit_plan(plan: &Plan, flavor: Flavor, cuda: bool) -> TokenStream {
    let checks = checks::emit_checks(&plan.program, flavor);
    let statements = plan
        .statements
        .iter()
        .map(|statement| cpu::emit_statement(plan, statement, &checks.extents, cuda));
    let prelude = checks.tokens;
    let proofs = checks::binding_proofs(&plan.program);
    let binds_user_names =
        plan.program
            .statements
            .iter()
            .any(|statement| match &statement.target {
                Target::NewTensor { .. } => !plan.program.makes_temporary(statement),
                Target::NewScalar { .. } => true,
                Target::Tensor { .. } | Target::Scalar { .. } => false,
            });
    if binds_user_names {
        // The `let`s must stay in the caller's scope: the macro is then a statement.
        hygienic! {
            #prelude
            #(#statements)*
            #proofs
        }
    } else {
        // One block: usable as a statement and as an expression (`|| tensor! { … }`).
        hygienic! {
            {
                #prelude
                #(#statements)*
                #proofs
            }
        }
    }
}

thread_local! {
    /// The runtime crate's name for the expansion being written, read by `private()`. Every
    /// emitter names the runtime, many calls below `emit`; setting the name here once, for the
    /// duration of `emit` or `fallback`, spares each of them a parameter. Cleared when they
    /// return, so no token outlives the macro call it belongs to.
    static RUNTIME: RefCell<Option<Ident>> = const { RefCell::new(None) };
}

/// Runs `write` with `private()` naming `runtime`, then restores what was set before (also
/// when `write` panics).
fn with_runtime<R>(runtime: &Ident, write: impl FnOnce() -> R) -> R {
    struct Restore(Option<Ident>);
    impl Drop for Restore {
        fn drop(&mut self) {
            RUNTIME.with(|current| *current.borrow_mut() = self.0.take());
        }
    }
    let _restore = Restore(RUNTIME.with(|current| current.replace(Some(runtime.clone()))));
    write()
}

/// The path generated code reaches the runtime through: `::tensor_dsl::__private`, or the
/// crate name `emit` was given.
fn private() -> TokenStream {
    let mut runtime = RUNTIME
        .with(|current| current.borrow().clone())
        .unwrap_or_else(|| Ident::new("tensor_dsl", Span::call_site()));
    runtime.set_span(Span::mixed_site());
    hygienic!(::#runtime::__private)
}

/// `private()` with its tokens located at `span` (hygiene unchanged), so a call through it
/// that rustc reports as a whole is reported on the user's tokens there.
fn private_at(span: Span) -> TokenStream {
    private()
        .into_iter()
        .map(|mut token| {
            token.set_span(Span::mixed_site().located_at(span));
            token
        })
        .collect()
}

/// A generated local: invisible to (and unable to shadow) user code.
fn hidden(name: &str) -> Ident {
    Ident::new(name, Span::mixed_site())
}

fn hidden_numbered(prefix: &str, number: usize) -> Ident {
    format_ident!("{}_{}", prefix, number, span = Span::mixed_site())
}

/// The expression of a tensor binding, to borrow for shapes and operand accesses.
fn tensor_expr(plan_tensors: &[crate::ir::Tensor], tensor: TensorId) -> TokenStream {
    match &plan_tensors[tensor].origin {
        TensorOrigin::External(tokens) => tokens.clone(),
        TensorOrigin::Rust(_) => hidden_numbered("__tensor", tensor).into_token_stream(),
        TensorOrigin::Let { name, .. } => name.clone().into_token_stream(),
    }
}

use quote::ToTokens;

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
mod matrix;

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

/// Which backends besides the host a build's steps may go to (the runtime's features).
#[derive(Clone, Copy, Debug, Default)]
pub struct Backends {
    /// CUDA devices: each step also carries its CUDA modules.
    pub cuda: bool,
    /// Distributed tensors over MPI.
    pub dist: bool,
}

/// The expansion of a checked block; generated code names the runtime `::runtime::__private`.
///
/// `written_out`: small dense steps also get written-out loops, where the runtime's build
/// keeps them (`__private::by_build`); off, every step takes the general path (what
/// `__tensor_general!` and `__tensor_unoptimized!` expand to).
pub fn emit(
    plan: &Plan,
    flavor: Flavor,
    runtime: &Ident,
    backends: Backends,
    written_out: bool,
) -> TokenStream {
    let mut cx = Context::new(runtime, flavor, backends);
    cx.written_out = written_out;
    emit_plan(plan, &cx)
}

/// The expansion of a checked matrix statement (see `matrix`).
pub fn emit_matrix(
    statement: &crate::ir::matrix::MatrixStatement,
    flavor: Flavor,
    runtime: &Ident,
    backends: Backends,
) -> TokenStream {
    matrix::emit_matrix(statement, &Context::new(runtime, flavor, backends))
}

/// The expansion of a block that failed to check (see `fallback`).
pub fn fallback(parsed: &[Parsed], error: syn::Error, runtime: &Ident) -> TokenStream {
    fallback::fallback(
        parsed,
        error,
        &Context::new(runtime, Flavor::Panic, Backends::default()),
    )
}

/// What every emitter is given beside the IR: the path generated code reaches the runtime
/// through, how run-time shape errors surface, and whether steps dispatch on the tensors'
/// backend. One value per expansion, handed down, so no emitter reads hidden state.
pub(crate) struct Context {
    runtime: Ident,
    flavor: Flavor,
    /// Steps carry CUDA modules.
    cuda: bool,
    /// Steps go through the statement's backend (`__backend`), not straight to host kernels.
    dispatch: bool,
    /// Small dense steps also get written-out loops (see `emit`).
    written_out: bool,
}

impl Context {
    fn new(runtime: &Ident, flavor: Flavor, backends: Backends) -> Self {
        let mut runtime = runtime.clone();
        runtime.set_span(Span::mixed_site());
        Context {
            runtime,
            flavor,
            cuda: backends.cuda,
            dispatch: backends.cuda || backends.dist,
            written_out: true,
        }
    }

    /// A call returning `Result<_, ShapeError>` as its value, its error surfacing as the
    /// flavor says: a panic at the user's macro call, or an early `return Err(From::from(…))`.
    fn surface(&self, call: TokenStream) -> TokenStream {
        let p = self.private();
        match self.flavor {
            Flavor::Panic => hygienic!(#p::expect(#call)),
            Flavor::Fallible => hygienic! {
                match #call {
                    ::core::result::Result::Ok(value) => value,
                    ::core::result::Result::Err(error) => {
                        return ::core::result::Result::Err(::core::convert::From::from(error))
                    }
                }
            },
        }
    }

    /// The path generated code reaches the runtime through: `::tensor_dsl::__private`, or the
    /// crate name the expansion was given.
    fn private(&self) -> TokenStream {
        let runtime = &self.runtime;
        hygienic!(::#runtime::__private)
    }

    /// [`private`](Self::private) with its tokens located at `span` (hygiene unchanged), so a
    /// call through it that rustc reports as a whole is reported on the user's tokens there.
    fn private_at(&self, span: Span) -> TokenStream {
        self.private()
            .into_iter()
            .map(|mut token| {
                token.set_span(Span::mixed_site().located_at(span));
                token
            })
            .collect()
    }
}

fn emit_plan(plan: &Plan, cx: &Context) -> TokenStream {
    let checks = checks::emit_checks(&plan.program, cx);
    let statements = plan
        .statements
        .iter()
        .map(|statement| cpu::emit_statement(cx, plan, statement, &checks.extents));
    let prelude = checks.tokens;
    let proofs = checks::binding_proofs(&plan.program, cx);
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
        // Made where the statement starts (`cpu.rs`'s `slices`).
        TensorOrigin::Slice { .. } => hidden_numbered("__slice", tensor).into_token_stream(),
    }
}

use quote::ToTokens;

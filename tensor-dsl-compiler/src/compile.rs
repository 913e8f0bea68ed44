//! The `tensor!` compiler front to back: syntax → check → passes → lower → emit. Only the first
//! two stages can fail; their errors are all reported together with a stub expansion.

use proc_macro2::{Ident, Span, TokenStream};

use crate::diagnostics::Errors;
use crate::emit::{self, Flavor};
use crate::lower::Plan;
use crate::{check, ir, lower, passes, syntax};

/// How to compile a block.
#[derive(Clone, Debug)]
pub struct Config {
    pub flavor: Flavor,
    /// Runs the optimizing passes; off, only the passes needed for correct code run.
    pub optimize: bool,
    /// The name the expanding crate gives the `tensor-dsl` package: `tensor_dsl`, or a renamed
    /// dependency's (`tdsl = { package = "tensor-dsl", .. }`). Generated code reaches the
    /// runtime through `::name::__private`.
    pub runtime: Ident,
    /// Also writes each step's CUDA module and dispatches on the tensors' backend, so blocks
    /// over `CudaTensor`s run on their device (the runtime's `cuda` feature).
    pub cuda: bool,
    /// Dispatches on the tensors' backend (without CUDA modules unless `cuda`), so blocks over
    /// `DistTensor`s run distributed (the runtime's `mpi` feature).
    pub dist: bool,
}

impl Config {
    /// The backends steps dispatch to.
    fn backends(&self) -> emit::Backends {
        emit::Backends {
            cuda: self.cuda,
            dist: self.dist,
        }
    }

    /// Every pass on, the runtime reached as `::tensor_dsl`.
    pub fn new(flavor: Flavor) -> Self {
        Config {
            flavor,
            optimize: true,
            runtime: Ident::new("tensor_dsl", Span::call_site()),
            cuda: false,
            dist: false,
        }
    }
}

/// Expands the body of a `tensor!` (or, with `Flavor::Fallible`, `try_tensor!`) call, for a
/// crate that knows the runtime as `tensor_dsl`.
pub fn expand(input: TokenStream, flavor: Flavor) -> TokenStream {
    expand_with(input, Config::new(flavor))
}

/// Expands a block with an explicit configuration.
pub fn expand_with(input: TokenStream, config: Config) -> TokenStream {
    let (parsed, checked) = parse_and_check(input);
    let program = match checked {
        Ok(program) => program,
        Err(error) => return emit::fallback(&parsed, error, &config.runtime),
    };
    let warnings = check::lints(&program);
    let program = passes::run(program, config.optimize);
    let plan = lower::lower(program);
    let code = emit::emit(&plan, config.flavor, &config.runtime, config.backends());
    quote::quote! { #(#warnings)* #code }
}

/// Parses and checks a block: the IR in einsum notation, or every error of the block.
pub fn front_end(input: TokenStream) -> syn::Result<ir::Program> {
    parse_and_check(input).1
}

/// The two stages that can fail, run once: what was parsed (a failed block's stub expansion
/// is made from it) and the checked IR, or every error of both stages together.
fn parse_and_check(input: TokenStream) -> (Vec<syntax::Parsed>, syn::Result<ir::Program>) {
    let mut errors = Errors::new();
    let parsed = syntax::parse_block(input, &mut errors);
    let program = check::check(&parsed, &mut errors);
    let checked = errors.into_result().map(|()| program);
    (parsed, checked)
}

/// Every stage's output for one block, for the `explain` tool and snapshot tests.
pub struct Trace {
    /// The IR as checked, then after each pass (by name).
    pub stages: Vec<(&'static str, ir::Program)>,
    pub plan: Plan,
    /// What `expand` emits: the warnings, then the code.
    pub rust: TokenStream,
}

/// Compiles a block keeping every intermediate result.
pub fn trace(input: TokenStream, config: Config) -> syn::Result<Trace> {
    let mut program = front_end(input)?;
    let warnings = check::lints(&program);
    let mut stages = vec![("check", program.clone())];
    for pass in passes::selected(config.optimize) {
        program = passes::apply(program, pass);
        stages.push((pass.name, program.clone()));
    }
    let plan = lower::lower(program);
    let code = emit::emit(&plan, config.flavor, &config.runtime, config.backends());
    let rust = quote::quote! { #(#warnings)* #code };
    Ok(Trace { stages, plan, rust })
}

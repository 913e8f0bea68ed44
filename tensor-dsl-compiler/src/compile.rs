//! The `tensor!` compiler front to back: syntax → check → passes → lower → emit. Only the first
//! two stages can fail; their errors are all reported together with a stub expansion. A
//! block's matrix statements (`svd`, `solve`, …) split it: each run of Einstein statements
//! between them is checked, rewritten, planned and emitted as a block of its own, so no pass
//! moves work across a factorization, and the statements after one check their shapes once it
//! has run (a truncated `svd`'s rank is known only then).

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
    /// Writes small steps out as loops beside the general path, for the runtime's build to
    /// keep or drop (`__private::by_build!`); off, every step takes the general path, as an
    /// unoptimized build's does.
    pub written_out: bool,
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
    /// Matrix statements (`svd`, `eigh`, …) compile (the runtime's `matrix` feature, on by
    /// default); off, each is an error on its function's name saying how to turn it on.
    pub matrix: bool,
}

impl Config {
    /// The backends steps dispatch to.
    fn backends(&self) -> emit::Backends {
        emit::Backends {
            cuda: self.cuda,
            dist: self.dist,
        }
    }

    /// Every pass and the written-out loops on, the runtime reached as `::tensor_dsl`.
    pub fn new(flavor: Flavor) -> Self {
        Config {
            flavor,
            optimize: true,
            written_out: true,
            runtime: Ident::new("tensor_dsl", Span::call_site()),
            cuda: false,
            dist: false,
            matrix: true,
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
    let (parsed, checked) = parse_and_check(input, config.matrix);
    let mut segments = match checked {
        Ok(segments) => segments,
        Err(error) => return emit::fallback(&parsed, error, &config.runtime),
    };
    if segments.is_empty() {
        // An empty block is still an expression (`()`), as a block of statements is.
        segments.push(Segment::Statements(empty_program()));
    }
    let mut code = TokenStream::new();
    for segment in segments {
        match segment {
            Segment::Statements(program) => {
                let warnings = check::lints(&program);
                let program = passes::run(program, config.optimize);
                let plan = lower::lower(program);
                let emitted = emit::emit(
                    &plan,
                    config.flavor,
                    &config.runtime,
                    config.backends(),
                    config.written_out,
                );
                code.extend(quote::quote! { #(#warnings)* #emitted });
            }
            Segment::Matrix(statement) => code.extend(emit::emit_matrix(
                &statement,
                config.flavor,
                &config.runtime,
                config.backends(),
            )),
        }
    }
    code
}

/// A checked part of a block: a run of Einstein statements, or one matrix statement.
pub enum Segment {
    Statements(ir::Program),
    Matrix(ir::matrix::MatrixStatement),
}

/// Parses and checks a block of Einstein statements only: the IR in einsum notation, or every
/// error of the block (a block with matrix statements is checked part by part: `check_block`).
pub fn front_end(input: TokenStream) -> syn::Result<ir::Program> {
    let mut segments = parse_and_check(input, true).1?;
    match segments.pop() {
        None => Ok(empty_program()),
        Some(Segment::Statements(program)) if segments.is_empty() => Ok(program),
        Some(_) => Err(syn::Error::new(
            Span::call_site(),
            "this block has matrix statements: `check_block` returns each part",
        )),
    }
}

/// Parses and checks a block: its parts in order, or every error of the block.
pub fn check_block(input: TokenStream) -> syn::Result<Vec<Segment>> {
    parse_and_check(input, true).1
}

fn empty_program() -> ir::Program {
    ir::Program {
        tensors: Vec::new(),
        positions: Vec::new(),
        statements: Vec::new(),
        same_bindings: Vec::new(),
    }
}

/// The two stages that can fail, run once: what was parsed (a failed block's stub expansion
/// is made from it) and the checked parts, or every error of both stages together. Without
/// `matrix` (the runtime built without its `matrix` feature), each matrix statement is one.
fn parse_and_check(
    input: TokenStream,
    matrix_feature: bool,
) -> (Vec<syntax::Parsed>, syn::Result<Vec<Segment>>) {
    let mut errors = Errors::new();
    let parsed = syntax::parse_block(input, &mut errors);
    let mut segments = Vec::new();
    let mut start = 0;
    for (at, statement) in parsed.iter().enumerate() {
        if let syntax::Parsed::Ok(statement) = statement {
            if let syntax::Statement::Matrix(matrix) = &**statement {
                push_statements(&parsed[start..at], &mut segments, &mut errors);
                start = at + 1;
                if !matrix_feature {
                    errors.error(
                        matrix.function.span(),
                        format!(
                            "matrix statements (`{}`) need tensor-dsl's `matrix` feature, which \
                             is on by default: drop `default-features = false` from the \
                             dependency, or add `features = [\"matrix\"]`",
                            matrix.function
                        ),
                    );
                } else if let Some(checked) = check::check_matrix(matrix, &mut errors) {
                    segments.push(Segment::Matrix(checked));
                }
            }
        }
    }
    push_statements(&parsed[start..], &mut segments, &mut errors);
    check::check_result_ranks(&parsed, &mut errors);
    let checked = errors.into_result().map(|()| segments);
    (parsed, checked)
}

/// Checks a run of Einstein statements as a part of its own, if it has any.
fn push_statements(run: &[syntax::Parsed], segments: &mut Vec<Segment>, errors: &mut Errors) {
    let program = check::check(run, errors);
    if !program.statements.is_empty() {
        segments.push(Segment::Statements(program));
    }
}

/// Every stage's output for one block, for the `explain` tool and snapshot tests.
pub struct Trace {
    /// The IR as checked, then after each pass (by name).
    pub stages: Vec<(&'static str, ir::Program)>,
    pub plan: Plan,
    /// What `expand` emits: the warnings, then the code.
    pub rust: TokenStream,
}

/// A part of a block as `explain` shows it.
pub enum Traced {
    Statements(Trace),
    /// A matrix statement, described line by line.
    Matrix(Vec<String>),
}

/// Compiles a block keeping every intermediate result of each of its parts.
pub fn trace_block(input: TokenStream, config: Config) -> syn::Result<Vec<Traced>> {
    let segments = check_block(input)?;
    Ok(segments
        .into_iter()
        .map(|segment| match segment {
            Segment::Statements(program) => Traced::Statements(trace_program(program, &config)),
            Segment::Matrix(statement) => Traced::Matrix(statement.describe()),
        })
        .collect())
}

/// Compiles a block of Einstein statements keeping every intermediate result.
pub fn trace(input: TokenStream, config: Config) -> syn::Result<Trace> {
    Ok(trace_program(front_end(input)?, &config))
}

fn trace_program(mut program: ir::Program, config: &Config) -> Trace {
    let warnings = check::lints(&program);
    let mut stages = vec![("check", program.clone())];
    for pass in passes::selected(config.optimize) {
        program = passes::apply(program, pass);
        stages.push((pass.name, program.clone()));
    }
    let plan = lower::lower(program);
    let code = emit::emit(
        &plan,
        config.flavor,
        &config.runtime,
        config.backends(),
        config.written_out,
    );
    let rust = quote::quote! { #(#warnings)* #code };
    Trace { stages, plan, rust }
}

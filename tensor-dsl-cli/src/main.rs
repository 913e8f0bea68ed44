//! `tensor-dsl explain '<block>' [--extent i=256 ...] [--no-optimize] [--cuda f32|f64|i32|i64|c32|c64] [--ranks P]`: the
//! tensor! compiler's work on a block, stage by stage — the checked IR, the IR after each pass,
//! the plan of each statement in loop notation, the generated Rust, with extents its FLOPs and
//! temporaries, with `--cuda` the CUDA module of each plan step, and with `--ranks` how each
//! step runs over distributed tensors.
//! Errors print as the macro reports them, with a caret under the offending tokens.

use std::collections::HashMap;
use std::process::ExitCode;

use proc_macro2::TokenStream;
use tensor_dsl_compiler::{cuda, lower, trace_block, Config, Flavor, Trace, Traced};

const USAGE: &str = "\
usage: tensor-dsl explain '<statements>' [--extent INDEX=N]... [--no-optimize] [--cuda f32|f64|i32|i64|c32|c64] [--ranks P]

Shows what tensor! does with a block: the checked IR, the IR after each pass, the plan of
each statement, and the generated Rust; for a matrix statement (`svd`, `cholesky`, …), how
each operand is grouped into rows and columns. With --extent for every index, also the FLOP count
and the memory of temporaries (products of three or more tensors pair by pair, in the order
the run-time planner picks for those extents); with --cuda, the CUDA C module of each plan step;
with --ranks and every extent, how each step runs over `DistTensor`s on P MPI ranks if every
tensor is spread as a `let` spreads it (which loops are split, which operands move, how the
target is written, and the elements a rank receives).

example: tensor-dsl explain 'let c[i, j] = a[i, k, l] * b[k, j, l];' --extent i=256 \\
             --extent j=256 --extent k=64 --extent l=32";

struct Options {
    source: String,
    extents: HashMap<String, usize>,
    optimize: bool,
    cuda: Option<cuda::DeviceType>,
    ranks: Option<usize>,
}

fn parse_args(args: &[String]) -> Result<Options, String> {
    let mut args = args.iter();
    match args.next().map(String::as_str) {
        Some("explain") => {}
        Some(other) => return Err(format!("unknown command `{other}`")),
        None => return Err("missing command".to_owned()),
    }
    let mut options = Options {
        source: String::new(),
        extents: HashMap::new(),
        optimize: true,
        cuda: None,
        ranks: None,
    };
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--no-optimize" => options.optimize = false,
            "--cuda" => {
                options.cuda = match args.next().map(String::as_str) {
                    Some("f32") => Some(cuda::DeviceType::F32),
                    Some("f64") => Some(cuda::DeviceType::F64),
                    Some("i32") => Some(cuda::DeviceType::I32),
                    Some("i64") => Some(cuda::DeviceType::I64),
                    Some("c32") => Some(cuda::DeviceType::C32),
                    Some("c64") => Some(cuda::DeviceType::C64),
                    _ => {
                        return Err(
                            "`--cuda` needs the element type: f32, f64, i32, i64, c32 or c64"
                                .to_owned(),
                        )
                    }
                }
            }
            "--extent" => {
                let value = args.next().ok_or("`--extent` needs INDEX=N")?;
                let (index, extent) = value
                    .split_once('=')
                    .ok_or_else(|| format!("`--extent {value}`: expected INDEX=N"))?;
                let extent = extent
                    .parse()
                    .map_err(|_| format!("`--extent {value}`: `{extent}` is not a size"))?;
                options.extents.insert(index.trim().to_owned(), extent);
            }
            "--ranks" => {
                let value = args.next().ok_or("`--ranks` needs a number of ranks")?;
                options.ranks = match value.parse() {
                    Ok(ranks) if ranks > 0 => Some(ranks),
                    _ => return Err(format!("`--ranks {value}`: expected at least 1 rank")),
                };
            }
            "-h" | "--help" => return Err(String::new()),
            source if options.source.is_empty() => options.source = source.to_owned(),
            other => return Err(format!("unexpected argument `{other}`")),
        }
    }
    if options.source.is_empty() {
        return Err("missing the statements to explain".to_owned());
    }
    Ok(options)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let options = match parse_args(&args) {
        Ok(options) => options,
        Err(message) => {
            if !message.is_empty() {
                eprintln!("error: {message}\n");
            }
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match explain(&options) {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(report) => {
            eprint!("{report}");
            ExitCode::FAILURE
        }
    }
}

/// The whole report, or the rendered errors.
fn explain(options: &Options) -> Result<String, String> {
    let tokens: TokenStream = options
        .source
        .parse()
        .map_err(|error: proc_macro2::LexError| {
            render(&options.source, error.span(), &error.to_string())
        })?;
    let config = Config {
        optimize: options.optimize,
        ..Config::new(Flavor::Panic)
    };
    let parts = trace_block(tokens, config).map_err(|error| {
        error
            .into_iter()
            .map(|error| render(&options.source, error.span(), &error.to_string()))
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    if let [Traced::Statements(trace)] = parts.as_slice() {
        return explain_statements(trace, options);
    }
    // A block with matrix statements: each part on its own, in order.
    let mut out = String::new();
    for (k, part) in parts.iter().enumerate() {
        if k > 0 {
            out.push('\n');
        }
        match part {
            Traced::Statements(trace) => {
                out.push_str(&format!("== part {k}: Einstein statements ==\n"));
                out.push_str(&explain_statements(trace, options)?);
            }
            Traced::Matrix(lines) => {
                out.push_str(&format!(
                    "== part {k}: matrix statement (faer, on the host) ==\n"
                ));
                for line in lines {
                    out.push_str(&format!("{line}\n"));
                }
            }
        }
    }
    Ok(out)
}

/// The report of one run of Einstein statements: the IR after each stage, the plan, costs,
/// CUDA modules and the generated Rust.
fn explain_statements(trace: &Trace, options: &Options) -> Result<String, String> {
    let mut out = String::new();
    for (stage, program) in &trace.stages {
        let heading = if *stage == "check" {
            "parsed and checked (einsum notation)".to_owned()
        } else {
            format!("after {stage}")
        };
        out.push_str(&format!("{heading}:\n"));
        for statement in &program.statements {
            out.push_str(&format!("  {statement}\n"));
        }
    }
    out.push_str("\nplan:\n");
    for statement_plan in &trace.plan.statements {
        for line in statement_plan.describe(&trace.plan.program) {
            out.push_str(&format!("  {line}\n"));
        }
    }
    let legend = scalar_legend(&trace.plan);
    if !legend.is_empty() {
        out.push_str(&format!("\nscalars:\n{legend}"));
    }
    if !options.extents.is_empty() || options.ranks.is_some() {
        out.push_str(&cost_report(&trace.plan, &options.extents)?);
    }
    if let Some(ranks) = options.ranks {
        out.push_str(&distributed_report(&trace.plan, &options.extents, ranks));
    }
    if let Some(real) = options.cuda {
        for (s, steps) in cuda::modules(&trace.plan, real).iter().enumerate() {
            for (k, (_, text)) in steps.iter().enumerate() {
                let text = if text.is_empty() {
                    "(none: a statement of this element type cannot hold this step, such as a `/` \
                     over integers, and tensor! refuses it at compile time)\n"
                } else {
                    text.as_str()
                };
                out.push_str(&format!("\nCUDA module, statement {s}, step {k}:\n{text}"));
            }
        }
    }
    out.push_str("\ngenerated Rust:\n");
    let rust = &trace.rust;
    let file: syn::File = syn::parse2(quote_fn(rust.clone()))
        .map_err(|error| format!("internal error: the expansion is not valid Rust: {error}\n"))?;
    out.push_str(&prettyplease::unparse(&file));
    Ok(out)
}

/// `$k = tokens` for each Rust scalar and `#k = tokens` for each computed `powi` exponent of
/// each statement, as the IR and plan name them.
fn scalar_legend(plan: &lower::Plan) -> String {
    let mut out = String::new();
    for (s, statement) in plan.program.statements.iter().enumerate() {
        for (k, scalar) in statement.scalars.iter().enumerate() {
            let tokens = scalar.tokens.to_string();
            out.push_str(&format!("  statement {s}: ${k} = {tokens}\n"));
        }
        for (k, exponent) in statement.exponents.iter().enumerate() {
            let tokens = exponent.tokens.to_string();
            out.push_str(&format!(
                "  statement {s}: #{k} = {tokens} (a powi exponent)\n"
            ));
        }
    }
    out
}

/// FLOPs and temporaries at the given extents, products pair by pair in the order the
/// run-time planner picks; an error if an index has no extent or an extent names no index.
fn cost_report(plan: &lower::Plan, extents: &HashMap<String, usize>) -> Result<String, String> {
    let planner = |extents: &[usize], factors: &[u64], out: u64| {
        tensor_dsl_runtime::network::planned_pairs(extents, factors, out)
            .into_iter()
            .map(|pair| (pair.left, pair.right, pair.kept))
            .collect()
    };
    let cost = lower::cost(plan, extents, &planner);
    if !cost.unknown.is_empty() {
        return Err(format!(
            "error: no --extent for {} (give one for every index: {})\n",
            cost.unknown.join(", "),
            cost.indices.join(", ")
        ));
    }
    let mut stray: Vec<&String> = extents
        .keys()
        .filter(|name| !cost.indices.contains(name))
        .collect();
    stray.sort();
    if let Some(name) = stray.first() {
        return Err(format!(
            "error: --extent {name}=…: the block has no index `{name}` (its indices: {})\n",
            cost.indices.join(", ")
        ));
    }
    let mut out = String::from("\ncost:\n");
    for network in &cost.networks {
        out.push_str(&format!(
            "  statement {}, step {}: pairwise, in the planner's order:\n",
            network.statement, network.step
        ));
        for pair in &network.pairs {
            let temporary = match pair.temporary {
                Some(elements) => format!(", temporary of {elements} elements"),
                None => String::new(),
            };
            out.push_str(&format!(
                "    {} = {} * {}: {} FLOP{temporary}\n",
                pair.result, pair.left, pair.right, pair.flops
            ));
        }
    }
    out.push_str(&format!("  {} FLOP\n", cost.flops));
    out.push_str(&format!(
        "  temporaries: {} elements ({} bytes as f32, {} as f64)\n",
        cost.temporary_elements,
        cost.temporary_elements * 4,
        cost.temporary_elements * 8
    ));
    Ok(out)
}

/// How each step runs over distributed tensors on `ranks` ranks, every tensor spread as a
/// `let` spreads it (`Distribution::spread`), by the backend's own planner. Every index has an
/// extent (`cost_report` checked).
fn distributed_report(
    plan: &lower::Plan,
    extents: &HashMap<String, usize>,
    ranks: usize,
) -> String {
    use tensor_dsl_compiler::ir::Slot;
    use tensor_dsl_runtime::__private::Axis;
    use tensor_dsl_runtime::dist::plan::{plan as plan_step, Placed};
    use tensor_dsl_runtime::dist::Distribution;

    let mut out = format!(
        "\ndistributed over {ranks} ranks (every tensor spread as a `let` spreads it; a fixed \
         position's axis counted as extent 1):\n"
    );
    for (s, statement_plan) in plan.statements.iter().enumerate() {
        let statement = &plan.program.statements[statement_plan.statement];
        for (k, step) in statement_plan.steps.iter().enumerate() {
            let loops: Vec<_> = statement.lhs_vars().chain(&step.reduction).collect();
            let extent = |name: &str| extents.get(name).copied().unwrap_or(1);
            let loop_extents: Vec<usize> = loops.iter().map(|var| extent(&var.name)).collect();
            let layout = |slots: &[Slot]| -> (Vec<usize>, Vec<Axis>) {
                slots
                    .iter()
                    .map(|slot| match slot {
                        Slot::Var(var) => {
                            let at = loops.iter().position(|l| *l == var).unwrap_or(0);
                            (extent(&var.name), Axis::Loop(at))
                        }
                        Slot::Fixed(_) => (1, Axis::Fixed(0)),
                    })
                    .unzip()
            };
            let mut names = Vec::new();
            let mut layouts = Vec::new();
            for term in &step.terms {
                term.expr.visit_accesses(&mut |access| {
                    names.push(access.name.clone());
                    layouts.push(layout(&access.slots));
                });
            }
            let (target_shape, target_axes) = layout(&statement.lhs);
            let distributions: Vec<Distribution> = layouts
                .iter()
                .map(|(shape, _)| Distribution::spread(shape.len(), ranks))
                .collect();
            let target_distribution = Distribution::spread(target_shape.len(), ranks);
            let operands: Vec<Placed<'_>> = layouts
                .iter()
                .zip(&distributions)
                .map(|((shape, axes), distribution)| Placed {
                    shape,
                    distribution,
                    axes,
                })
                .collect();
            let target = (!statement.lhs.is_empty()).then(|| Placed {
                shape: &target_shape,
                distribution: &target_distribution,
                axes: &target_axes,
            });
            let n_out = statement.lhs_vars().count();
            let chosen = plan_step(target, &operands, &loop_extents, n_out, ranks);
            let split: Vec<String> = loops
                .iter()
                .zip(chosen.split.loops())
                .map(|(var, axis)| match axis {
                    Some(g) => format!(
                        "{} in blocks over grid axis {g} ({} ranks)",
                        var.name,
                        chosen.split.grid()[*g]
                    ),
                    None => format!("{} whole", var.name),
                })
                .collect();
            out.push_str(&format!(
                "  statement {s}, step {k}: on a {:?} grid, {}\n",
                chosen.split.grid(),
                split.join(", ")
            ));
            for (name, moved) in names.iter().zip(&chosen.moves) {
                match moved {
                    Some(to) => out.push_str(&format!(
                        "    {name} moves (one all-to-all) to {:?} over {:?}\n",
                        to.splits(),
                        to.grid()
                    )),
                    None => out.push_str(&format!("    {name} stays where it is\n")),
                }
            }
            out.push_str(if chosen.direct {
                "    each rank writes its own block of the target (owner computes)\n"
            } else {
                "    each rank computes partial results, summed into the target's holders by one all-to-all\n"
            });
            out.push_str(&format!(
                "    moves and sums fill at most {} elements of a rank's blocks, its own part included ({} bytes as f64)\n",
                chosen.received,
                chosen.received * 8
            ));
        }
    }
    out
}

/// The expansion as the body of a function, so it pretty-prints as a file.
fn quote_fn(body: TokenStream) -> TokenStream {
    let mut tokens: TokenStream = "fn expansion()".parse().expect("valid tokens");
    tokens.extend(std::iter::once(proc_macro2::TokenTree::Group(
        proc_macro2::Group::new(proc_macro2::Delimiter::Brace, body),
    )));
    tokens
}

/// `error: message` with the source line and a caret under the span, as rustc prints it.
fn render(source: &str, span: proc_macro2::Span, message: &str) -> String {
    let (start, end) = (span.start(), span.end());
    let Some(line) = source.lines().nth(start.line.saturating_sub(1)) else {
        return format!("error: {message}\n");
    };
    let width = if end.line == start.line {
        end.column.saturating_sub(start.column).max(1)
    } else {
        line.chars().count().saturating_sub(start.column).max(1)
    };
    let number = start.line.to_string();
    let pad = " ".repeat(number.len());
    format!(
        "error: {message}\n{pad}--> <input>:{}:{}\n{pad} |\n{number} | {line}\n{pad} | {}{}\n",
        start.line,
        start.column + 1,
        " ".repeat(start.column),
        "^".repeat(width)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(source: &str, extents: &[(&str, usize)]) -> Options {
        Options {
            source: source.to_owned(),
            extents: extents.iter().map(|&(k, v)| (k.to_owned(), v)).collect(),
            optimize: true,
            cuda: None,
            ranks: None,
        }
    }

    #[test]
    fn explains_the_seed_statement() {
        let report = explain(&options(
            "let c[i, j] = a[i, k, l] * b[k, j, l];",
            &[("i", 256), ("j", 256), ("k", 64), ("l", 32)],
        ))
        .expect("valid input");
        assert!(
            report.contains("let c[i,j] = Σk,l (a[i,k,l]*b[k,j,l])"),
            "{report}"
        );
        assert!(
            report.contains("∀i ∀j ∀k ∀l c[i,j] += a[i,k,l]*b[k,j,l]"),
            "{report}"
        );
        assert!(
            report.contains(&format!("{} FLOP", 2u64 * 256 * 256 * 64 * 32)),
            "{report}"
        );
        assert!(report.contains("fn expansion()"), "{report}");
    }

    #[test]
    fn explains_a_matrix_statement_and_the_statements_around_it() {
        let report = explain(&options(
            "let t[i, j, k, l] = a[i, j, k, l]; \
             let (u[i, j, s], sv[s], vt[s, k, l]) = svd(t[i, j, k, l], max_rank = 8); \
             let rho[i, j] = u[i, j, s] * u[i, j, s];",
            &[],
        ))
        .expect("valid input");
        assert!(
            report.contains("== part 0: Einstein statements =="),
            "{report}"
        );
        assert!(
            report.contains("rows (i,j) × columns (k,l)") && report.contains("max_rank = 8"),
            "{report}"
        );
        assert!(
            report.contains("== part 2: Einstein statements =="),
            "{report}"
        );
    }

    #[test]
    fn errors_have_a_caret_under_the_token() {
        let error = explain(&options("let c[i, i] = a[i];", &[])).unwrap_err();
        assert_eq!(
            error,
            "error: index `i` appears twice in this `let`; each index names a different axis of the new tensor, so use a new index name here (an existing tensor's diagonal can be written: `c[i, i] += …`)\n \
             --> <input>:1:10\n  |\n1 | let c[i, i] = a[i];\n  |          ^\n"
        );
    }

    #[test]
    fn products_are_costed_in_the_planners_order() {
        // 1000 × 10 · 10 × 1000 · 1000 × 10: the planner contracts b·c first (10 × 10), into a
        // temporary laid out in loop order (l before j).
        let report = explain(&options(
            "let d[i, l] = a[i, j] * b[j, k] * c[k, l];",
            &[("i", 1000), ("j", 10), ("k", 1000), ("l", 10)],
        ))
        .expect("valid input");
        assert!(
            report.contains("t0[l,j] = b[j,k] * c[k,l]: 200000 FLOP, temporary of 100 elements"),
            "{report}"
        );
        assert!(
            report.contains("d[i,l] = a[i,j] * t0[l,j]: 200000 FLOP"),
            "{report}"
        );
        assert!(report.contains("  400000 FLOP\n"), "{report}");
        assert!(report.contains("temporaries: 100 elements"), "{report}");
    }

    #[test]
    fn missing_and_stray_extents_are_errors_and_scalars_have_a_legend() {
        let block = "let c[i, j] = a[i, k] * b[k, j] / { d.sqrt() } * beta;";
        let error = explain(&options(block, &[("i", 2), ("j", 3)])).unwrap_err();
        assert!(error.contains("no --extent for k"), "{error}");
        let error = explain(&options(block, &[("i", 2), ("j", 3), ("k", 4), ("q", 5)]));
        let error = error.unwrap_err();
        assert!(error.contains("the block has no index `q`"), "{error}");
        let report = explain(&options(block, &[("i", 2), ("j", 3), ("k", 4)])).unwrap();
        assert!(
            report.contains("statement 0: $0 = { d . sqrt () }"),
            "{report}"
        );
        assert!(report.contains("statement 0: $1 = beta"), "{report}");
        let report = explain(&options("let p[i] = powi(a[i], -n);", &[])).unwrap();
        assert!(report.contains("powi(a[i], #0)"), "{report}");
        assert!(
            report.contains("statement 0: #0 = - (n) (a powi exponent)"),
            "{report}"
        );
    }

    #[test]
    fn distributed_plans_follow_the_backend() {
        // On a 2 × 2 grid: c's blocks are written where they are; a's rows and b's columns
        // are gathered, (mk + kn)/2 elements a rank, SUMMA's volume.
        let gemm = Options {
            ranks: Some(4),
            ..options(
                "let c[i, j] = a[i, k] * b[k, j];",
                &[("i", 64), ("j", 32), ("k", 16)],
            )
        };
        let report = explain(&gemm).expect("valid input");
        assert!(
            report.contains("on a [2, 2] grid, i in blocks over grid axis 0 (2 ranks), j in blocks over grid axis 1 (2 ranks), k whole"),
            "{report}"
        );
        assert!(
            report.contains("each rank writes its own block of the target"),
            "{report}"
        );
        let received = (64 * 16 + 16 * 32) / 2;
        assert!(
            report.contains(&format!("fill at most {received} elements")),
            "{report}"
        );
        // A scalar: partial sums, one element each.
        let scalar = Options {
            ranks: Some(2),
            ..options("let s = x[i, j] * y[i, j];", &[("i", 10), ("j", 6)])
        };
        let report = explain(&scalar).expect("valid input");
        assert!(report.contains("partial results"), "{report}");
        assert!(report.contains("x stays where it is"), "{report}");
    }

    #[test]
    fn arguments() {
        let args: Vec<String> = ["explain", "s = x[i];", "--extent", "i=3", "--no-optimize"]
            .iter()
            .map(ToString::to_string)
            .collect();
        let parsed = parse_args(&args).expect("valid arguments");
        assert_eq!(parsed.extents["i"], 3);
        assert!(!parsed.optimize);
        assert!(parse_args(&args[..1]).is_err());
        assert!(
            parse_args(&["explain".into(), "x".into(), "--extent".into(), "i".into()]).is_err()
        );
    }
}

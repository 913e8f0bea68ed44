//! Fuzzing support for tensor-dsl, shared by the `cargo fuzz` targets and the fixed-seed tests
//! (`cargo test` in this directory):
//!
//! * [`tokens`]: any token stream → the compiler must not panic, must emit valid Rust, and must
//!   emit `compile_error!`s when the front end reports errors (target `compile_tokens`).
//! * [`block`], [`naive`], [`plan`]: random valid blocks, run two ways — the lowered plan
//!   through the real runtime kernels exactly as the generated code would call them, and a
//!   naive interpreter of the checked IR — and compared (target `plan_matches_naive`).

pub mod block;
pub mod memory;
pub mod naive;
pub mod numeric;
pub mod plan;
pub mod tokens;

use std::fmt::Write as _;
use std::sync::{Mutex, Once};

use proc_macro2::TokenStream;
use tensor_dsl_compiler::{Config, Flavor, Trace};

use block::Block;
use numeric::{ElementType, Fuzzed};
use tensor_dsl_runtime::c64;

/// Why a generated block was not compared.
#[derive(Clone, Debug, PartialEq)]
pub enum Skip {
    /// The front end reported an error.
    Rejected(String),
    /// A run-time shape or position check would fail before anything is written.
    ShapeCheck(String),
    /// More naive work than [`naive::BUDGET`].
    TooCostly,
    /// Something the interpreters do not model.
    Unsupported(String),
    /// A panic listed in [`IGNORE_VARIABLE`].
    KnownBug(String),
}

/// What checking one block found (a mismatch panics instead).
#[derive(Clone, Debug, PartialEq)]
pub enum Verdict {
    /// Both configurations agreed with the naive interpreter on this many values.
    Agreed {
        compared: usize,
        steps: usize,
    },
    Skipped(Skip),
}

/// Relative tolerance, against the larger of the value and its error magnitude.
pub const TOLERANCE: f64 = 1e-9;

/// Compiles `block` with and without the optimizing passes, runs each plan through the
/// runtime in the block's element type, and compares every tensor and scalar with the naive
/// interpreter of the checked IR.
///
/// # Panics
/// On any disagreement, with the block, the IR, the plan and the differing values.
pub fn check_block(block: &Block) -> Verdict {
    guarded(block.describe(), || match block.element {
        ElementType::F64 => check_block_in::<f64>(block),
        ElementType::I64 => check_block_in::<i64>(block),
        ElementType::C64 => check_block_in::<c64>(block),
    })
    .unwrap_or_else(|message| Verdict::Skipped(Skip::KnownBug(message)))
}

fn check_block_in<T: plan::Dispatched>(block: &Block) -> Verdict {
    let text = block.text();
    let tokens: TokenStream = text.parse().expect("generated blocks lex");
    let mut compared = 0;
    let mut steps = 0;
    let mut reference: Option<naive::Outcome<T>> = None;
    for optimize in [true, false] {
        let mut config = Config::new(Flavor::Panic);
        config.optimize = optimize;
        let trace = match tensor_dsl_compiler::trace(tokens.clone(), config) {
            Ok(trace) => trace,
            Err(error) => {
                let messages: Vec<String> = error.into_iter().map(|e| e.to_string()).collect();
                return Verdict::Skipped(Skip::Rejected(messages.join("; ")));
            }
        };
        let expected = match &reference {
            Some(expected) => expected.clone(),
            None => match naive::run::<T>(&trace.stages[0].1, block) {
                Ok(outcome) => {
                    reference = Some(outcome.clone());
                    outcome
                }
                Err(skip) => return Verdict::Skipped(skip),
            },
        };
        let got = match plan::run::<T>(&trace.plan, block) {
            Ok(outcome) => outcome,
            Err(skip) => return Verdict::Skipped(skip),
        };
        steps += trace
            .plan
            .statements
            .iter()
            .map(|s| s.steps.len())
            .sum::<usize>();
        match compare(&got, &expected) {
            Ok(count) => compared += count,
            Err(difference) => panic!("{}", report::<T>(block, &trace, optimize, &difference)),
        }
    }
    Verdict::Agreed { compared, steps }
}

/// The number of values compared, or what differs.
fn compare<T: Fuzzed>(
    got: &plan::Outcome<T>,
    expected: &naive::Outcome<T>,
) -> Result<usize, String> {
    let mut count = 0;
    let mut values = |what: &str, got: &[T], expected: &[T], magnitudes: &[f64]| {
        if got.len() != expected.len() {
            return Err(format!(
                "{what}: {} elements, expected {}",
                got.len(),
                expected.len()
            ));
        }
        let wrong: Vec<usize> = (0..got.len())
            .filter(|&k| !T::close(got[k], expected[k], magnitudes[k]))
            .collect();
        count += got.len();
        if wrong.is_empty() {
            return Ok(());
        }
        let mut message = format!("{what}: {} of {} elements differ", wrong.len(), got.len());
        for &k in wrong.iter().take(8) {
            let _ = write!(
                message,
                "\n  [{k}] plan {}, naive {} (magnitude {:e})",
                got[k], expected[k], magnitudes[k]
            );
        }
        let _ = write!(message, "\n  plan:  {got:?}\n  naive: {expected:?}");
        Err(message)
    };
    for (k, (got, expected)) in got.inputs.iter().zip(&expected.inputs).enumerate() {
        if let (Some(got), Some((expected, magnitudes))) = (got, expected) {
            values(&format!("input #{k}'s buffer"), got, expected, magnitudes)?;
        }
    }
    if got.lets.len() != expected.lets.len() {
        return Err(format!(
            "{} user `let`s made, expected {}",
            got.lets.len(),
            expected.lets.len()
        ));
    }
    for (got, expected) in got.lets.iter().zip(&expected.lets) {
        match (got, expected) {
            (
                plan::Made::Tensor {
                    name,
                    shape,
                    values: got,
                },
                naive::Made::Tensor {
                    name: expected_name,
                    shape: expected_shape,
                    values: expected,
                    magnitudes,
                },
            ) if name == expected_name => {
                if shape != expected_shape {
                    return Err(format!(
                        "`let {name}` has shape {shape:?}, expected {expected_shape:?}"
                    ));
                }
                values(&format!("`let {name}`"), got, expected, magnitudes)?;
            }
            (
                plan::Made::Scalar { name, value },
                naive::Made::Scalar {
                    name: expected_name,
                    value: (expected, magnitude),
                },
            ) if name == expected_name => {
                values(
                    &format!("`let {name}`"),
                    &[*value],
                    &[*expected],
                    &[*magnitude],
                )?;
            }
            (got, expected) => {
                return Err(format!("made {got:?}, expected {expected:?}"));
            }
        }
    }
    let names = |scalars: &[(String, T)]| scalars.iter().map(|s| s.0.clone()).collect::<Vec<_>>();
    let expected_names: Vec<String> = expected.scalars.iter().map(|s| s.0.clone()).collect();
    if names(&got.scalars) != expected_names {
        return Err(format!(
            "scalars {:?}, expected {expected_names:?}",
            names(&got.scalars)
        ));
    }
    for ((name, got), (_, (expected, magnitude))) in got.scalars.iter().zip(&expected.scalars) {
        values(
            &format!("scalar `{name}`"),
            &[*got],
            &[*expected],
            &[*magnitude],
        )?;
    }
    Ok(count)
}

fn report<T: Fuzzed>(block: &Block, trace: &Trace, optimize: bool, difference: &str) -> String {
    let mut out = format!(
        "plan and naive interpreter disagree ({}):\n{difference}\n\nblock:\n{}\n",
        if optimize { "optimized" } else { "unoptimized" },
        block.describe()
    );
    for (name, program) in &trace.stages {
        let _ = writeln!(out, "{name}:");
        for statement in &program.statements {
            let _ = writeln!(out, "  {statement}");
        }
    }
    let _ = writeln!(out, "plan:");
    for statement in &trace.plan.statements {
        for line in statement.describe(&trace.plan.program) {
            let _ = writeln!(out, "  {line}");
        }
    }
    // Which stage's meaning first differs (the naive interpreter reads every stage).
    if let Ok(reference) = naive::run::<T>(&trace.stages[0].1, block) {
        for (name, program) in &trace.stages[1..] {
            match naive::run::<T>(program, block) {
                Ok(outcome) => {
                    let as_plan = plan::Outcome {
                        inputs: outcome
                            .inputs
                            .iter()
                            .map(|b| b.as_ref().map(|b| b.0.clone()))
                            .collect(),
                        lets: outcome
                            .lets
                            .iter()
                            .map(|made| match made {
                                naive::Made::Tensor {
                                    name,
                                    shape,
                                    values,
                                    ..
                                } => plan::Made::Tensor {
                                    name: name.clone(),
                                    shape: shape.clone(),
                                    values: values.clone(),
                                },
                                naive::Made::Scalar { name, value } => plan::Made::Scalar {
                                    name: name.clone(),
                                    value: value.0,
                                },
                            })
                            .collect(),
                        scalars: outcome
                            .scalars
                            .iter()
                            .map(|(name, value)| (name.clone(), value.0))
                            .collect(),
                    };
                    if let Err(difference) = compare(&as_plan, &reference) {
                        let _ = writeln!(
                            out,
                            "first stage whose IR means something else: {name}\n{difference}"
                        );
                        return out;
                    }
                }
                Err(skip) => {
                    let _ = writeln!(out, "naive interpreter cannot run stage {name}: {skip:?}");
                    return out;
                }
            }
        }
        let _ = writeln!(
            out,
            "every stage's IR means the same: the difference is in lowering or the runtime"
        );
    }
    out
}

/// The input being checked, printed by the panic hook (libFuzzer aborts inside the hook, so
/// the message is the only place it appears).
static CURRENT: Mutex<Option<String>> = Mutex::new(None);
/// The message of the last panic the hook let through without aborting (a known bug).
static IGNORED: Mutex<Option<String>> = Mutex::new(None);
static HOOK: Once = Once::new();

/// The environment variable listing known bugs to step over: panic messages containing any of
/// its `|`-separated parts skip the input instead of failing (so a long fuzz run can look past
/// a bug that is reported but not yet fixed).
pub const IGNORE_VARIABLE: &str = "TENSOR_DSL_FUZZ_IGNORE";

fn ignored_parts() -> Vec<String> {
    std::env::var(IGNORE_VARIABLE)
        .map(|value| {
            value
                .split('|')
                .filter(|part| !part.is_empty())
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

fn install_hook() {
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        let ignored = ignored_parts();
        std::panic::set_hook(Box::new(move |info| {
            let message = match info.payload().downcast_ref::<&str>() {
                Some(message) => (*message).to_owned(),
                None => info
                    .payload()
                    .downcast_ref::<String>()
                    .cloned()
                    .unwrap_or_default(),
            };
            if ignored.iter().any(|part| message.contains(part.as_str())) {
                *IGNORED.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(message);
                return;
            }
            let current = CURRENT
                .lock()
                .unwrap_or_else(|poison| poison.into_inner())
                .clone();
            if let Some(input) = current {
                eprintln!("==== while checking:\n{input}\n====");
            }
            previous(info);
        }));
    });
}

/// Runs `check` on an input described by `description`: a panic prints the description, and
/// one whose message names a known bug (see [`IGNORE_VARIABLE`]) returns its message instead.
pub fn guarded<R>(description: String, check: impl FnOnce() -> R) -> Result<R, String> {
    install_hook();
    *CURRENT.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(description);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(check));
    *CURRENT.lock().unwrap_or_else(|poison| poison.into_inner()) = None;
    match result {
        Ok(value) => Ok(value),
        Err(payload) => match IGNORED
            .lock()
            .unwrap_or_else(|poison| poison.into_inner())
            .take()
        {
            Some(message) => Err(message),
            None => std::panic::resume_unwind(payload),
        },
    }
}

//! Surface tree → IR in einsum notation, and the only stage that reports user errors: names
//! are resolved (`resolve`), then every language rule runs (`rules`), so a block reports all of
//! its mistakes at once. After `check` succeeds, no later stage can fail. `lints` finds what
//! compiles but is likely a typo, as warnings.

mod lints;
mod matrix;
mod resolve;
mod rules;

pub use lints::lints;
pub use matrix::{check_matrix, check_result_ranks};

use crate::diagnostics::Errors;
use crate::ir::Program;
use crate::syntax::{Parsed, Statement};

/// Resolves and checks a parsed block. Statements that failed to parse or resolve are left
/// out of the program; their errors are already in `errors`.
pub fn check(parsed: &[Parsed], errors: &mut Errors) -> Program {
    let statements: Vec<&Statement> = parsed
        .iter()
        .filter_map(|parsed| match parsed {
            Parsed::Ok(statement) => Some(&**statement),
            Parsed::Failed { .. } => None,
        })
        .collect();
    let program = resolve::resolve(&statements, errors);
    rules::check_rules(&program, errors);
    program
}

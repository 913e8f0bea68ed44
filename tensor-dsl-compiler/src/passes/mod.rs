//! IR → IR rewrites, infallible and semantics-preserving, applied in the order listed in
//! `optimize`. Input: einsum notation from `check`; output: reduction notation.

mod make_reductions_explicit;

use crate::ir::Program;

/// Runs every pass, in order.
pub fn optimize(program: Program) -> Program {
    make_reductions_explicit::make_reductions_explicit(program)
}

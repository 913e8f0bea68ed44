//! IR → IR rewrites, infallible and semantics-preserving, applied in the order listed in
//! `PASSES`. Input: einsum notation from `check`; output: reduction notation whose updates
//! `lower` turns into kernels one by one.

mod introduce_temporaries;
mod make_reductions_explicit;

use crate::ir::Program;

/// A named rewrite.
pub struct Pass {
    pub name: &'static str,
    pub run: fn(Program) -> Program,
    /// Required passes make the IR lowerable and keep self-reads correct; the others only
    /// make it faster and can be switched off (to compare results with and without them).
    pub required: bool,
}

/// Every pass, in the order it runs.
pub const PASSES: &[Pass] = &[
    Pass {
        name: "make_reductions_explicit",
        run: make_reductions_explicit::make_reductions_explicit,
        required: true,
    },
    Pass {
        name: "introduce_temporaries",
        run: introduce_temporaries::introduce_temporaries,
        required: true,
    },
];

/// Runs the passes in order: all of them, or with `optimize` off only the required ones.
pub fn run(program: Program, optimize: bool) -> Program {
    PASSES
        .iter()
        .filter(|pass| optimize || pass.required)
        .fold(program, |program, pass| (pass.run)(program))
}

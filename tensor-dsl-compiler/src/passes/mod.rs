//! IR → IR rewrites, infallible and semantics-preserving, applied in the order listed in
//! `PASSES`. Input: einsum notation from `check`; output: reduction notation whose updates
//! `lower` turns into kernels one by one.

mod eliminate_common_subexpressions;
mod fold_scalars;
mod fuse_elementwise;
mod introduce_temporaries;
mod make_reductions_explicit;
mod move_products_right;
mod reassociate_sums;
mod recognize_gemm_update;

use crate::ir::invariants::Dialect;
use crate::ir::Program;

/// A named rewrite from one IR dialect to another.
pub struct Pass {
    pub name: &'static str,
    pub run: fn(Program) -> Program,
    /// The dialect the pass takes, and the one it makes (checked around it in debug builds).
    pub input: Dialect,
    pub output: Dialect,
    /// Required passes make the IR lowerable and keep self-reads correct; the others only
    /// make it faster and can be switched off (to compare results with and without them).
    pub required: bool,
}

/// Every pass, in the order it runs.
pub const PASSES: &[Pass] = &[
    Pass {
        name: "make_reductions_explicit",
        run: make_reductions_explicit::make_reductions_explicit,
        input: Dialect::Einsum,
        output: Dialect::Reduction,
        required: true,
    },
    Pass {
        name: "introduce_temporaries",
        run: introduce_temporaries::introduce_temporaries,
        input: Dialect::Reduction,
        output: Dialect::Reduction,
        required: true,
    },
    Pass {
        name: "fold_scalars",
        run: fold_scalars::fold_scalars,
        input: Dialect::Reduction,
        output: Dialect::Reduction,
        required: false,
    },
    Pass {
        name: "move_products_right",
        run: move_products_right::move_products_right,
        input: Dialect::Reduction,
        output: Dialect::Reduction,
        required: false,
    },
    Pass {
        name: "reassociate_sums",
        run: reassociate_sums::reassociate_sums,
        input: Dialect::Reduction,
        output: Dialect::Reduction,
        required: false,
    },
    Pass {
        name: "recognize_gemm_update",
        run: recognize_gemm_update::recognize_gemm_update,
        input: Dialect::Reduction,
        output: Dialect::Reduction,
        required: false,
    },
    Pass {
        name: "eliminate_common_subexpressions",
        run: eliminate_common_subexpressions::eliminate_common_subexpressions,
        input: Dialect::Reduction,
        output: Dialect::Reduction,
        required: false,
    },
    Pass {
        name: "fuse_elementwise",
        run: fuse_elementwise::fuse_elementwise,
        input: Dialect::Reduction,
        output: Dialect::Reduction,
        required: false,
    },
];

/// The passes that run: all of them, or with `optimize` off only the required ones.
pub fn selected(optimize: bool) -> impl Iterator<Item = &'static Pass> {
    PASSES.iter().filter(move |pass| optimize || pass.required)
}

/// Runs the selected passes in order.
pub fn run(program: Program, optimize: bool) -> Program {
    selected(optimize).fold(program, apply)
}

/// Runs one pass; in debug builds, checks the dialect it promises before and after.
pub fn apply(program: Program, pass: &Pass) -> Program {
    let check = |program: &Program, dialect: Dialect, when: &str| {
        if let Err(reason) = dialect.check(program) {
            panic!("tensor-dsl bug: IR {when} pass `{}`: {reason}", pass.name);
        }
    };
    if cfg!(debug_assertions) {
        check(&program, pass.input, "before");
    }
    let program = (pass.run)(program);
    if cfg!(debug_assertions) {
        check(&program, pass.output, "after");
    }
    program
}

/// Snapshot text for one pass: the block's IR before and after it, one statement per line.
#[cfg(test)]
pub(crate) fn before_and_after(input: proc_macro2::TokenStream, pass: &str) -> String {
    let config = crate::Config::new(crate::Flavor::Panic);
    let trace = crate::trace(input, config).expect("valid input");
    let position = trace
        .stages
        .iter()
        .position(|(name, _)| *name == pass)
        .expect("a pass of that name");
    let show = |program: &Program| -> String {
        program
            .statements
            .iter()
            .map(|statement| format!("  {statement}\n"))
            .collect()
    };
    format!(
        "before:\n{}after:\n{}",
        show(&trace.stages[position - 1].1),
        show(&trace.stages[position].1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pass_takes_the_dialect_the_one_before_makes() {
        assert_eq!(PASSES[0].input, Dialect::Einsum);
        for pair in PASSES.windows(2) {
            assert_eq!(
                pair[0].output, pair[1].input,
                "`{}` feeds `{}`",
                pair[0].name, pair[1].name
            );
        }
        // `lower` takes reduction notation, with or without the optimizing passes.
        for optimize in [false, true] {
            let last = selected(optimize).last().expect("some pass runs");
            assert_eq!(last.output, Dialect::Reduction);
        }
    }
}

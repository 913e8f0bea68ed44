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

use crate::ir::{invariants, Program};

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
    Pass {
        name: "fold_scalars",
        run: fold_scalars::fold_scalars,
        required: false,
    },
    Pass {
        name: "move_products_right",
        run: move_products_right::move_products_right,
        required: false,
    },
    Pass {
        name: "reassociate_sums",
        run: reassociate_sums::reassociate_sums,
        required: false,
    },
    Pass {
        name: "recognize_gemm_update",
        run: recognize_gemm_update::recognize_gemm_update,
        required: false,
    },
    Pass {
        name: "eliminate_common_subexpressions",
        run: eliminate_common_subexpressions::eliminate_common_subexpressions,
        required: false,
    },
    Pass {
        name: "fuse_elementwise",
        run: fuse_elementwise::fuse_elementwise,
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
    let check = |program: &Program, when: &str| {
        let result = if pass.name == "make_reductions_explicit" && when == "before" {
            invariants::is_einsum_notation(program)
        } else {
            invariants::is_reduction_notation(program)
        };
        if let Err(reason) = result {
            panic!("tensor-dsl bug: IR {when} pass `{}`: {reason}", pass.name);
        }
    };
    if cfg!(debug_assertions) {
        check(&program, "before");
    }
    let program = (pass.run)(program);
    if cfg!(debug_assertions) {
        check(&program, "after");
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

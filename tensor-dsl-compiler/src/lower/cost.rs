//! A plan and index extents → its arithmetic and temporary memory: what `explain --extent`
//! prints. Counts one FLOP per binary operation and function call at every point a step
//! visits, plus one addition per summed point, so `Σk a[i,k]*b[k,j]` costs 2·i·j·k.

use std::collections::HashMap;

use super::{Plan, Step};
use crate::ir::{Expr, IndexVar};

/// What a plan costs at given extents.
#[derive(Debug, PartialEq, Eq)]
pub struct Cost {
    pub flops: u128,
    /// Elements held by temporaries the compiler introduced.
    pub temporary_elements: u128,
    /// Indices whose extent was not given (their cost is left out).
    pub unknown: Vec<String>,
}

pub fn cost(plan: &Plan, extents: &HashMap<String, usize>) -> Cost {
    let mut cost = Cost {
        flops: 0,
        temporary_elements: 0,
        unknown: Vec::new(),
    };
    let size = |vars: &mut dyn Iterator<Item = &IndexVar>, unknown: &mut Vec<String>| {
        vars.map(|var| match extents.get(&var.name) {
            Some(&extent) => extent as u128,
            None => {
                if !unknown.contains(&var.name) {
                    unknown.push(var.name.clone());
                }
                0
            }
        })
        .product::<u128>()
    };
    for statement_plan in &plan.statements {
        let statement = &plan.program.statements[statement_plan.statement];
        for step in &statement_plan.steps {
            let mut loops = statement.lhs_vars().chain(&step.reduction);
            let points = size(&mut loops, &mut cost.unknown);
            cost.flops += points * flops_per_point(step);
        }
        if plan.program.makes_temporary(statement) {
            cost.temporary_elements += size(&mut statement.lhs_vars(), &mut cost.unknown);
        }
    }
    cost
}

fn flops_per_point(step: &Step) -> u128 {
    let body: u128 = step.terms.iter().map(|term| operations(&term.expr)).sum();
    let joins = step.terms.len() as u128 - 1;
    let accumulate = u128::from(!step.reduction.is_empty());
    body + joins + accumulate
}

fn operations(expr: &Expr) -> u128 {
    match expr {
        Expr::Access(_) | Expr::Literal(_) | Expr::Scalar(_) => 0,
        Expr::Neg(operand) => operations(operand),
        Expr::Binary(_, left, right) => 1 + operations(left) + operations(right),
        Expr::Call(_, args) => 1 + args.iter().map(operations).sum::<u128>(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{trace, Config, Flavor};
    use quote::quote;

    fn cost_of(input: proc_macro2::TokenStream, extents: &[(&str, usize)]) -> Cost {
        let plan = trace(input, Config::new(Flavor::Panic))
            .expect("valid input")
            .plan;
        let extents = extents.iter().map(|&(k, v)| (k.to_owned(), v)).collect();
        cost(&plan, &extents)
    }

    #[test]
    fn matmul_is_two_flops_per_multiply_add() {
        let cost = cost_of(
            quote! { let c[i, j] = a[i, k] * b[k, j]; },
            &[("i", 4), ("j", 5), ("k", 6)],
        );
        assert_eq!(cost.flops, 2 * 4 * 5 * 6);
        assert_eq!(cost.temporary_elements, 0);
    }

    #[test]
    fn temporaries_and_unknown_extents() {
        let cost = cost_of(
            quote! { c[i, j] = c[j, i] + d[i, k] * e[k, j]; },
            &[("i", 3), ("j", 3)],
        );
        assert_eq!(cost.temporary_elements, 9);
        assert_eq!(cost.unknown, ["k"]);
    }
}

//! A plan and index extents → its arithmetic and temporary memory: what `explain --extent`
//! prints. Counts one FLOP per binary operation and function call at every point a step
//! visits, plus one addition per summed point, so `Σk a[i,k]*b[k,j]` costs 2·i·j·k. A product
//! of three or more tensors is costed as the pairwise contractions the run-time planner picks
//! for these extents (passed in, so the figures are the planner's own).

use std::collections::HashMap;

use super::{Kernel, Plan, Step};
use crate::ir::{Expr, IndexVar};

/// The pairwise contractions of a product, as the run-time planner orders them: given each
/// loop's extent, each factor's loops and the result's (bit masks), the `(left, right, kept)`
/// of each contraction, intermediates numbered factors first.
pub type NetworkPlanner<'a> = &'a dyn Fn(&[usize], &[u64], u64) -> Vec<(usize, usize, u64)>;

/// What a plan costs at given extents.
#[derive(Debug, PartialEq, Eq)]
pub struct Cost {
    pub flops: u128,
    /// Elements held by temporaries: the compiler's, and products' pairwise intermediates.
    pub temporary_elements: u128,
    /// Indices whose extent was not given (their cost is left out).
    pub unknown: Vec<String>,
    /// Every index of the plan, in first-use order.
    pub indices: Vec<String>,
    /// Products of three or more tensors, contraction by contraction.
    pub networks: Vec<NetworkCost>,
}

/// A product step's pairwise contractions at the given extents.
#[derive(Debug, PartialEq, Eq)]
pub struct NetworkCost {
    /// Which statement of the plan, and which of its steps.
    pub statement: usize,
    pub step: usize,
    pub pairs: Vec<PairCost>,
}

/// One pairwise contraction: `result = Σ left * right`.
#[derive(Debug, PartialEq, Eq)]
pub struct PairCost {
    pub left: String,
    pub right: String,
    /// `t0[j,l]` for a temporary, the step's target for the last contraction.
    pub result: String,
    pub flops: u128,
    /// Elements of the temporary it writes (`None` for the last, which writes the target).
    pub temporary: Option<u128>,
}

pub fn cost(plan: &Plan, extents: &HashMap<String, usize>, planner: NetworkPlanner<'_>) -> Cost {
    let mut cost = Cost {
        flops: 0,
        temporary_elements: 0,
        unknown: Vec::new(),
        indices: Vec::new(),
        networks: Vec::new(),
    };
    let size = |vars: &mut dyn Iterator<Item = &IndexVar>, cost: &mut Cost| {
        vars.map(|var| {
            if !cost.indices.contains(&var.name) {
                cost.indices.push(var.name.clone());
            }
            match extents.get(&var.name) {
                Some(&extent) => extent as u128,
                None => {
                    if !cost.unknown.contains(&var.name) {
                        cost.unknown.push(var.name.clone());
                    }
                    0
                }
            }
        })
        .product::<u128>()
    };
    for (s, statement_plan) in plan.statements.iter().enumerate() {
        let statement = &plan.program.statements[statement_plan.statement];
        for (k, step) in statement_plan.steps.iter().enumerate() {
            let loops: Vec<&IndexVar> = statement.lhs_vars().chain(&step.reduction).collect();
            let points = size(&mut loops.iter().copied(), &mut cost);
            let known: Option<Vec<usize>> = loops
                .iter()
                .map(|var| extents.get(&var.name).copied())
                .collect();
            match (&step.kernel, known) {
                (Kernel::Network(factors), Some(known)) => {
                    let lhs = statement.lhs_vars().count();
                    let mut pairs = pairs(step, factors, &loops, &known, lhs, planner);
                    if let Some(last) = pairs.last_mut() {
                        last.result = statement.target_text();
                        last.temporary = None;
                    }
                    for pair in &pairs {
                        cost.flops += pair.flops;
                        cost.temporary_elements += pair.temporary.unwrap_or(0);
                    }
                    cost.networks.push(NetworkCost {
                        statement: s,
                        step: k,
                        pairs,
                    });
                }
                _ => cost.flops += points * flops_per_point(step),
            }
        }
        if plan.program.makes_temporary(statement) {
            cost.temporary_elements += size(&mut statement.lhs_vars(), &mut cost);
        }
    }
    cost
}

/// A product's pairwise contractions as `planner` orders them over loops with `extents` (the
/// first `lhs` the result's), each writing a temporary `tK[…]`.
fn pairs(
    step: &Step,
    factors: &[Vec<usize>],
    loops: &[&IndexVar],
    extents: &[usize],
    lhs: usize,
    planner: NetworkPlanner<'_>,
) -> Vec<PairCost> {
    let mask = |vars: &mut dyn Iterator<Item = usize>| vars.fold(0u64, |mask, var| mask | 1 << var);
    let factor_masks: Vec<u64> = factors
        .iter()
        .map(|vars| mask(&mut vars.iter().copied()))
        .collect();
    let out = mask(&mut (0..lhs));
    let size = |mask: u64| -> u128 {
        (0..loops.len())
            .filter(|&var| mask >> var & 1 == 1)
            .map(|var| extents[var] as u128)
            .product()
    };
    // Each intermediate's name and loops: the factors', then one per contraction.
    let mut names: Vec<String> = Vec::new();
    if let Some(term) = step.terms.first() {
        term.expr
            .visit_accesses(&mut |access| names.push(Expr::Access(access.clone()).to_string()));
    }
    let mut vars = factor_masks.clone();
    planner(extents, &factor_masks, out)
        .into_iter()
        .enumerate()
        .map(|(k, (left, right, kept))| {
            let involved = vars[left] | vars[right];
            let summed = involved & !kept != 0;
            let slots: Vec<&str> = (0..loops.len())
                .filter(|&var| kept >> var & 1 == 1)
                .map(|var| loops[var].name.as_str())
                .collect();
            let pair = PairCost {
                left: names[left].clone(),
                right: names[right].clone(),
                result: format!("t{k}[{}]", slots.join(",")),
                flops: size(involved) * (1 + u128::from(summed)),
                temporary: Some(size(kept)),
            };
            vars.push(kept);
            names.push(pair.result.clone());
            pair
        })
        .collect()
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
        Expr::Call(_, args, _) => 1 + args.iter().map(operations).sum::<u128>(),
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
        cost(&plan, &extents, &left_to_right)
    }

    /// Contracts the factors in the order written (the runtime's planner is not a dependency
    /// of the compiler).
    fn left_to_right(_extents: &[usize], factors: &[u64], out: u64) -> Vec<(usize, usize, u64)> {
        let n = factors.len();
        let mut used = factors[0];
        (1..n)
            .map(|k| {
                let later = factors[k + 1..].iter().fold(out, |mask, f| mask | f);
                used |= factors[k];
                let kept = if k + 1 == n { out } else { used & later };
                let left = if k == 1 { 0 } else { n + k - 2 };
                used = kept;
                (left, k, kept)
            })
            .collect()
    }

    #[test]
    fn a_product_of_three_is_costed_pair_by_pair() {
        // 1000 × 10 · 10 × 1000 · 1000 × 10, left to right: (a·b) is 1000 × 1000, 2·10⁷ FLOP.
        let cost = cost_of(
            quote! { let d[i, l] = a[i, j] * b[j, k] * c[k, l]; },
            &[("i", 1000), ("j", 10), ("k", 1000), ("l", 10)],
        );
        let pairs = &cost.networks[0].pairs;
        assert_eq!(pairs.len(), 2);
        assert_eq!(
            (pairs[0].left.as_str(), pairs[0].right.as_str()),
            ("a[i,j]", "b[j,k]")
        );
        assert_eq!(pairs[0].result, "t0[i,k]");
        assert_eq!(pairs[0].flops, 2 * 1000 * 10 * 1000);
        assert_eq!(pairs[0].temporary, Some(1000 * 1000));
        assert_eq!(pairs[1].result, "d[i,l]");
        assert_eq!(pairs[1].temporary, None);
        assert_eq!(cost.flops, 2 * 1000 * 10 * 1000 + 2 * 1000 * 1000 * 10);
        assert_eq!(cost.temporary_elements, 1000 * 1000);
        assert_eq!(cost.indices, ["i", "l", "j", "k"]);
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

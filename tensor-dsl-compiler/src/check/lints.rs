//! Checked statements → warnings for what compiles but is likely a typo (a summed index that
//! occurs once in a product, a sum of maxima); never errors, and nothing is changed.

use proc_macro2::Span;

use super::rules::flatten;
use crate::diagnostics::{Lint, Warning};
use crate::ir::{Access, Expr, Function, IndexVar, Program, Slot, Statement, Target};

pub fn lints(program: &Program) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for statement in &program.statements {
        summed_alone(statement, &mut warnings);
        sum_of_maxima(statement, &mut warnings);
    }
    warnings
}

// `y[i] = a[i, j] * x[k]` is (Σⱼ aᵢⱼ)(Σₖ xₖ): an index that occurs once in a product of two or
// more factors is summed over its own factor alone, which is rarely meant (`x[j]` was).
// Single-factor sums (`s[i] = a[i, j]`), sums inside one function (`exp(a[i, j] + b[i])`)
// and sums scaled by factors without indices (`x[i] * t[]`) are plainly meant and not warned
// about.
fn summed_alone(statement: &Statement, warnings: &mut Vec<Warning>) {
    let lhs: Vec<&IndexVar> = statement.lhs_vars().collect();
    for term in statement.terms() {
        let mut factors = Vec::new();
        flatten(&term.expr, true, &mut factors);
        // Factors without indices (`t[]`, `a[0, 1]`, scalars) only scale the sum.
        let indexed = factors
            .iter()
            .filter(|factor| !factor.vars().is_empty())
            .count();
        if indexed < 2 {
            continue;
        }
        let mut accesses = Vec::new();
        term.expr
            .visit_accesses(&mut |access| accesses.push(access));
        for var in term.expr.vars_summed_against(&lhs) {
            let var = &var;
            let uses: Vec<(&Access, &IndexVar)> = accesses
                .iter()
                .flat_map(|access| {
                    access.slots.iter().filter_map(move |slot| match slot {
                        Slot::Var(used) if used == var => Some((*access, used)),
                        _ => None,
                    })
                })
                .collect();
            if let [(access, used)] = uses[..] {
                warnings.push(Warning {
                    lint: Lint::SummedAlone,
                    span: used.span,
                    message: format!(
                        "index `{0}` occurs only once in this product, so it is summed over `{1}` alone (the term is Σ{0} {1} times the other factors); if a contraction was meant, use an index of another factor here; if the sum is meant, compute it in a statement of its own (`let s… = {1};`)",
                        var.name, access.text
                    ),
                });
            }
        }
    }
}

// `m[i] = max(m[i], a[i, j])` reads like a running maximum over `j`, but `max` is point-wise
// and the term is summed over `j`: Σⱼ max(mᵢ, aᵢⱼ). A target read inside `max`/`min` in a term
// that sums is that idiom; `s[i] = max(a[i, j], 0)` (a sum of ReLUs) is not warned about.
fn sum_of_maxima(statement: &Statement, warnings: &mut Vec<Warning>) {
    let target = match &statement.target {
        Target::Tensor { access } => access.name.as_str(),
        Target::NewTensor { .. } | Target::NewScalar { .. } | Target::Scalar { .. } => return,
    };
    let lhs: Vec<&IndexVar> = statement.lhs_vars().collect();
    for term in statement.terms() {
        let summed = term.expr.vars_summed_against(&lhs);
        let Some(first) = summed.first() else {
            continue;
        };
        let mut found: Vec<(Function, Span)> = Vec::new();
        find_target_in_extremum(&term.expr, target, None, &mut found);
        for (function, span) in found {
            let name = function.name();
            warnings.push(Warning {
                lint: Lint::SumOfMaxima,
                span,
                message: format!(
                    "`{name}` is point-wise, so this term adds up `{name}(…)` over `{0}`: a sum, not the {1} over `{0}`; reductions by `max`/`min` are not in the language yet (reduce in Rust, e.g. with `fold`); if the sum is meant, compute the point-wise values in a statement of their own",
                    first.name,
                    if function == Function::Max { "maximum" } else { "minimum" },
                ),
            });
        }
    }
}

/// Reads of `target` inside a `max` or `min` argument, with the innermost such function.
fn find_target_in_extremum(
    expr: &Expr,
    target: &str,
    inside: Option<Function>,
    found: &mut Vec<(Function, Span)>,
) {
    match expr {
        Expr::Access(access) => {
            if let Some(function) = inside.filter(|_| access.name == target) {
                found.push((function, access.span));
            }
        }
        Expr::Literal(_) | Expr::Scalar(_) => {}
        Expr::Neg(operand) => find_target_in_extremum(operand, target, inside, found),
        Expr::Binary(_, left, right) => {
            find_target_in_extremum(left, target, inside, found);
            find_target_in_extremum(right, target, inside, found);
        }
        Expr::Call(function, args, _) => {
            let inside = match function {
                Function::Max | Function::Min => Some(*function),
                _ => inside,
            };
            for arg in args {
                find_target_in_extremum(arg, target, inside, found);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use quote::quote;

    use super::*;
    use crate::front_end;

    fn warned(block: proc_macro2::TokenStream) -> Vec<(Lint, String)> {
        let program = front_end(block).expect("a valid block");
        let warnings = lints(&program);
        let text = |w: &Warning| w.message.split('`').nth(1).unwrap_or("").to_string();
        warnings.iter().map(|w| (w.lint, text(w))).collect()
    }

    #[test]
    fn an_index_summed_over_one_factor_of_a_product_is_warned_about() {
        let found = warned(quote! { let y[i] = a[i, j] * x[k] + b[i, l]; });
        assert_eq!(
            found,
            [
                (Lint::SummedAlone, "j".into()),
                (Lint::SummedAlone, "k".into())
            ]
        );
        // A contraction, a trace, a sum scaled by an index-free factor, a sum inside one
        // function: meant, not warned about.
        for block in [
            quote! { let y[i] = a[i, j] * x[j]; },
            quote! { let s = a[i, i] * b[j, j]; },
            quote! { let s[i] = a[i, j] * t[] * 2; },
            quote! { let s[i] = exp(a[i, j] + b[i]); },
            quote! { let s[i] = a[i, j]; },
        ] {
            assert_eq!(warned(block.clone()), [], "{block}");
        }
    }

    #[test]
    fn a_target_inside_max_in_a_summing_term_is_warned_about() {
        let found = warned(quote! { m[i] = min(2 * m[i], a[i, j]); });
        assert_eq!(found, [(Lint::SumOfMaxima, "min".into())]);
        for block in [
            quote! { m[i] = max(m[i], a[i]); },
            quote! { let s[i] = max(a[i, j], 0); },
            quote! { m[i] = max(a[i, j], 0); },
        ] {
            assert_eq!(warned(block.clone()), [], "{block}");
        }
    }
}

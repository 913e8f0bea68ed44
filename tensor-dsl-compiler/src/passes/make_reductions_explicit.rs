//! Einsum notation → reduction notation: each term sums over the indices it uses that are not
//! on the left-hand side (the generalized Einstein convention), listed in first-use order.

use crate::ir::{IndexVar, Program};

pub fn make_reductions_explicit(mut program: Program) -> Program {
    for statement in &mut program.statements {
        let lhs: Vec<IndexVar> = statement.lhs_vars().cloned().collect();
        let lhs: Vec<&IndexVar> = lhs.iter().collect();
        for term in statement.terms_mut() {
            term.reduction = Some(term.expr.vars_summed_against(&lhs));
        }
    }
    program
}

#[cfg(test)]
mod tests {
    use crate::passes::before_and_after;
    use quote::quote;

    #[test]
    fn sums_every_index_missing_from_the_left() {
        insta::assert_snapshot!(before_and_after(
            quote! {
                let c[i, j] = a[i, k, l] * b[k, j, l];
                d[i] += 2.0 * c[i, j] - e[i, i];
                let s = c[i, j] * c[i, j];
            },
            "make_reductions_explicit"
        ));
    }

    #[test]
    fn functions_and_divisors_stay_inside_the_sum() {
        insta::assert_snapshot!(before_and_after(
            quote! { s[i] = exp(a[i, j] + b[i]) / w[j] + 1; },
            "make_reductions_explicit"
        ));
    }
}

//! Within each update, terms that sum nothing move before terms that sum (Eigen's
//! `TreeOptimizer` moving products to the right of sums): `R = A + B*C + D` → `R = A + D + B*C`.
//! Addition commutes, so the value is unchanged; `reassociate_sums` then evaluates the
//! point-wise part in one fused pass and adds each product into the target.

use crate::ir::Program;

pub fn move_products_right(mut program: Program) -> Program {
    for statement in &mut program.statements {
        for update in &mut statement.updates {
            // A stable sort: the order within each group is the user's.
            update.terms.sort_by_key(|term| !term.is_pointwise());
        }
    }
    program
}

#[cfg(test)]
mod tests {
    use crate::passes::before_and_after;
    use quote::quote;

    #[test]
    fn products_after_point_wise_terms() {
        insta::assert_snapshot!(before_and_after(
            quote! { r[i, j] = a[i, j] + b[i, k] * c[k, j] + d[i, j] - e[i, l] * f[l, j] + g[i, j]; },
            "move_products_right"
        ));
    }
}

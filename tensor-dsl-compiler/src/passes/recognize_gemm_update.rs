//! `c[i, j] = β·c[i, j] + α·Σk a[i, k]*b[k, j]`, after `reassociate_sums` the two updates
//! `c = β·c; c += α·Σ…`, → one update `c ← β·c + α·Σ…` that reads `c` in place while it sums:
//! GEMM's `C ← αAB + βC`, one pass over `c` instead of two. With β = 1 it is just `c += α·Σ…`.

use crate::ir::{AssignOp, Expr, Program, Target, Update};

pub fn recognize_gemm_update(mut program: Program) -> Program {
    for statement in &mut program.statements {
        let Target::Tensor { access } = &statement.target else {
            continue;
        };
        let [first, second] = &statement.updates[..] else {
            continue;
        };
        let scales_target_in_place = first.op == AssignOp::Assign
            && first.beta.is_none()
            && matches!(&first.terms[..], [term]
                if term.is_pointwise()
                    && matches!(&term.expr, Expr::Access(read)
                        if read.tensor == access.tensor && read.slots == statement.lhs));
        let sums_without_target = second.op == AssignOp::Add
            && second.beta.is_none()
            && matches!(&second.terms[..], [term] if !term.is_pointwise() && !reads(&term.expr, access.tensor));
        if !(scales_target_in_place && sums_without_target) {
            continue;
        }
        let beta = first.terms[0].scale.clone();
        let terms = second.terms.clone();
        statement.updates = vec![if beta.is_one() {
            Update {
                op: AssignOp::Add,
                beta: None,
                terms,
            }
        } else {
            Update {
                op: AssignOp::Assign,
                beta: Some(beta),
                terms,
            }
        }];
    }
    program
}

fn reads(expr: &Expr, tensor: usize) -> bool {
    let mut found = false;
    expr.visit_accesses(&mut |access| found |= access.tensor == tensor);
    found
}

#[cfg(test)]
mod tests {
    use crate::passes::before_and_after;
    use quote::quote;

    #[test]
    fn gemm_update_with_alpha_and_beta() {
        insta::assert_snapshot!(before_and_after(
            quote! { c[i, j] = beta * c[i, j] + alpha * a[i, k] * b[k, j]; },
            "recognize_gemm_update"
        ));
    }

    #[test]
    fn beta_one_is_an_accumulation() {
        insta::assert_snapshot!(before_and_after(
            quote! { c[i, j] = c[i, j] + a[i, k] * b[k, j]; d[i, j] = 2 * d[i, j] + 3 * e[i, j]; },
            "recognize_gemm_update"
        ));
    }
}

//! One update per kernel: `R = A + D + E + B*C + F*G` → `R = A + D + E; R += B*C; R += F*G`
//! (Eigen's `TreeOptimizer`), so no term needs a temporary: the point-wise terms run first in
//! one fused pass (the only pass that may read `R` in place, which `introduce_temporaries`
//! guarantees), then each summing term accumulates into `R`.

use crate::ir::{AssignOp, Program, Update};

pub fn reassociate_sums(mut program: Program) -> Program {
    for statement in &mut program.statements {
        let updates = std::mem::take(&mut statement.updates);
        statement.updates = updates.into_iter().flat_map(split).collect();
    }
    program
}

fn split(update: Update) -> Vec<Update> {
    let (pointwise, summing): (Vec<_>, Vec<_>) = update
        .terms
        .into_iter()
        .partition(|term| term.is_pointwise());
    let mut updates = Vec::new();
    if !pointwise.is_empty() {
        updates.push(Update {
            op: update.op,
            beta: update.beta.clone(),
            terms: pointwise,
        });
    }
    for term in summing {
        let (op, beta) = if updates.is_empty() {
            (update.op, update.beta.clone())
        } else {
            // After the first update, the rest accumulate: `-=` keeps subtracting.
            let op = match update.op {
                AssignOp::Sub => AssignOp::Sub,
                AssignOp::Assign | AssignOp::Add => AssignOp::Add,
            };
            (op, None)
        };
        updates.push(Update {
            op,
            beta,
            terms: vec![term],
        });
    }
    updates
}

#[cfg(test)]
mod tests {
    use crate::passes::before_and_after;
    use quote::quote;

    #[test]
    fn eigen_example_runs_without_a_temporary() {
        insta::assert_snapshot!(before_and_after(
            quote! { r[i, j] = a[i, j] + b[i, k] * c[k, j] + d[i, j] + e[i, j]; },
            "reassociate_sums"
        ));
    }

    #[test]
    fn subtracting_and_scalar_statements() {
        insta::assert_snapshot!(before_and_after(
            quote! { r[i] -= a[i] + b[i, k] * x[k] + c[i, k] * x[k]; s += x[k] * x[k] + 1; },
            "reassociate_sums"
        ));
    }
}

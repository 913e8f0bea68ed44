//! A target read on its own right-hand side other than point-wise in place
//! (`c[i, j] = c[j, i]`, `c[i, j] = a[i, k] * c[k, j]`) → the right-hand side goes into a
//! temporary first: `let tmp[i, j] = …; c[i, j] = tmp[i, j]`. Afterwards every remaining
//! self-read is the target's own access in a term that sums nothing, which later passes and
//! `lower` may evaluate in place.

use crate::ir::{
    Access, AssignOp, Expr, IndexVar, Program, Scale, Slot, Statement, Target, TensorId, Term,
    Update,
};

pub fn introduce_temporaries(mut program: Program) -> Program {
    let mut index = 0;
    while index < program.statements.len() {
        let statement = &program.statements[index];
        let needs_temporary = match &statement.target {
            Target::Tensor { access } => !reads_only_in_place(statement, access.tensor),
            _ => false,
        };
        if needs_temporary {
            split_off_right_hand_side(&mut program, index);
            index += 1;
        }
        index += 1;
    }
    program
}

/// Whether every read of `target` is exactly the target's own access, in a term that sums
/// nothing: such a read sees each element before anything is written to it.
pub(super) fn reads_only_in_place(statement: &Statement, target: TensorId) -> bool {
    statement.terms().all(|term| {
        let mut in_place = true;
        term.expr.visit_accesses(&mut |access| {
            if access.tensor == target && !(term.is_pointwise() && access.slots == statement.lhs) {
                in_place = false;
            }
        });
        in_place
    })
}

fn split_off_right_hand_side(program: &mut Program, index: usize) {
    let statement = &mut program.statements[index];
    // The temporary has an axis for each left-hand index the right-hand side uses; the others
    // are broadcast by the copy (and a `let` could not know their extents).
    let used: Vec<IndexVar> = statement
        .terms()
        .flat_map(|term| term.expr.vars())
        .collect();
    let lhs_vars: Vec<Slot> = statement
        .lhs_vars()
        .filter(|var| used.contains(var))
        .cloned()
        .map(Slot::Var)
        .collect();
    let op = statement.op();
    let span = statement.span;
    // Run-time messages name the temporary by what it holds.
    let text = match &statement.target {
        Target::Tensor { access } => format!("right-hand side of {}", access.text),
        _ => unreachable!("only existing tensors are read on their own right-hand side"),
    };
    // The temporary holds the right-hand side's value, whatever the statement's operator: its
    // first update sets it, the others add (a `-=` statement subtracts only in the copy).
    let mut updates = std::mem::take(&mut statement.updates);
    for (k, update) in updates.iter_mut().enumerate() {
        update.op = if k == 0 {
            AssignOp::Assign
        } else {
            AssignOp::Add
        };
    }
    let scalars = std::mem::take(&mut statement.scalars);
    let exponents = std::mem::take(&mut statement.exponents);
    let rank = lhs_vars.len();
    let tensor = program.insert_temporary(index, rank, |tensor, name| Statement {
        target: Target::NewTensor {
            name,
            mutable: false,
            ty: None,
            tensor,
        },
        lhs: lhs_vars.clone(),
        updates,
        scalars,
        exponents,
        // The statement keeps asking for them (it is emitted, as a copy, over the same type).
        needs: Vec::new(),
        span,
    });
    let copy = Term {
        scale: Scale::one(),
        expr: Expr::Access(Access {
            tensor,
            name: program.tensors[tensor].name.clone(),
            text,
            slots: lhs_vars,
            span,
        }),
        reduction: Some(Vec::new()),
    };
    program.statements[index + 1].updates = vec![Update {
        op,
        beta: None,
        terms: vec![copy],
    }];
}

#[cfg(test)]
mod tests {
    use crate::passes::before_and_after;
    use quote::quote;

    #[test]
    fn transposed_and_contracted_self_reads() {
        insta::assert_snapshot!(before_and_after(
            quote! { c[i, j] = c[j, i]; d[i, j] -= a[i, k] * d[k, j] + 2 * d[i, j]; },
            "introduce_temporaries"
        ));
    }

    #[test]
    fn point_wise_self_reads_stay_in_place() {
        insta::assert_snapshot!(before_and_after(
            quote! { c[i, j] = 2 * c[i, j] + a[i, k] * b[k, j] - c[i, j] / 4; },
            "introduce_temporaries"
        ));
    }
}

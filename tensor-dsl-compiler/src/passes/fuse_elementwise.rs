//! Consecutive element-wise updates of one target fuse into one pass over it:
//! `c[i] = a[i] + 1; c[i] += b[i]` → `c[i] = a[i] + 1 + b[i]`. Legal when the second statement
//! writes the same tensor at the same indices with `+=`/`-=`, sums nothing, reads nothing the
//! first one writes (it would have to see the first statement's result: the target, or for a
//! target the block did not make, any other tensor the block did not make, which may be the
//! target under another name), and has no Rust scalars (they are evaluated when their
//! statement starts).

use crate::ir::{AssignOp, Program, Statement, Target};

pub fn fuse_elementwise(mut program: Program) -> Program {
    let mut index = 0;
    while index + 1 < program.statements.len() {
        if can_fuse(
            &program,
            &program.statements[index],
            &program.statements[index + 1],
        ) {
            let second = program.remove_statement(index + 1);
            let first = &mut program.statements[index];
            let update = &mut first.updates[0];
            // The merged terms are added to (or subtracted from) the first update's value.
            let flip = (second.op() == AssignOp::Sub) != (update.op == AssignOp::Sub);
            for mut term in second.updates.into_iter().flat_map(|update| update.terms) {
                if flip {
                    term.scale.coefficient = -term.scale.coefficient;
                }
                update.terms.push(term);
            }
        } else {
            index += 1;
        }
    }
    program
}

fn can_fuse(program: &Program, first: &Statement, second: &Statement) -> bool {
    let (Some(target), Target::Tensor { access }) = (first.target_tensor(), &second.target) else {
        return false;
    };
    let first_is_pointwise = first.updates.first().is_some_and(|update| {
        update.beta.is_none() && update.terms.iter().all(|term| term.is_pointwise())
    });
    let second_is_pointwise_update = matches!(second.op(), AssignOp::Add | AssignOp::Sub)
        && second.updates.iter().all(|update| update.beta.is_none())
        && second.terms().all(|term| term.is_pointwise());
    let second_reads_target = second.terms().any(|term| {
        let mut reads = false;
        term.expr
            .visit_accesses(&mut |read| reads |= program.may_alias(target, read.tensor));
        reads
    });
    access.tensor == target
        && first.lhs == second.lhs
        && first_is_pointwise
        && second_is_pointwise_update
        && !second_reads_target
        && second.scalars.is_empty()
        && second.exponents.is_empty()
        && matches!(
            first.target,
            Target::Tensor { .. } | Target::NewTensor { .. }
        )
}

#[cfg(test)]
mod tests {
    use crate::passes::before_and_after;
    use quote::quote;

    #[test]
    fn consecutive_updates_of_one_target() {
        insta::assert_snapshot!(before_and_after(
            quote! { let mut c[i] = a[i] + 1; c[i] += b[i]; c[i] -= 2 * d[i]; e[i] = a[i]; e[i] += e[i]; },
            "fuse_elementwise"
        ));
    }

    #[test]
    fn an_outside_target_fuses_only_with_updates_that_read_no_other_outside_tensor() {
        // `r` may be `v` under another name (`let r = &v;`), so `v[i] += r[i]` must see the
        // first statement's result; `c` is fresh, so no other name reaches it.
        insta::assert_snapshot!(before_and_after(
            quote! { v[i] = a[i]; v[i] += r[i]; v[i] -= 2; let mut c[i] = a[i]; c[i] += r[i]; },
            "fuse_elementwise"
        ));
    }
}

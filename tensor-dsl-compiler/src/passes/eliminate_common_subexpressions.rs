//! A sum computed twice in one block is computed once. When a later term equals the whole
//! right-hand side of an earlier `let x[..] = Σ…`, it reads `x` instead; when two terms
//! share a sum otherwise, a temporary `let tmp[..] = Σ…` is inserted before the first and
//! both read it. Terms qualify when they sum something, use no Rust scalar (those are
//! evaluated per statement) and no tensor they read is written in between.

use std::collections::HashMap;

use crate::ir::{
    Access, AssignOp, Expr, IndexVar, Program, Scale, Slot, Statement, Target, TensorId, Term,
    Update,
};

pub fn eliminate_common_subexpressions(mut program: Program) -> Program {
    // Each round removes one duplicate; a block has few statements, so rounds are cheap.
    while let Some(duplicate) = find_duplicate(&program) {
        share(&mut program, duplicate);
    }
    program
}

/// A term's sum with its indices renamed by role (free in first-use order, then summed), so
/// equal sums in statements that name their indices differently compare equal.
#[derive(PartialEq)]
struct Key(String);

/// `(statement, update, term)`.
type Location = (usize, usize, usize);

struct Duplicate {
    first: Location,
    second: Location,
}

fn key(term: &Term) -> Option<Key> {
    let reduction = term.reduction.as_ref()?;
    if reduction.is_empty() || has_scalar(&term.expr) {
        return None;
    }
    let free: Vec<IndexVar> = term
        .expr
        .vars()
        .into_iter()
        .filter(|var| !reduction.contains(var))
        .collect();
    let rename: HashMap<&str, String> = free
        .iter()
        .enumerate()
        .map(|(k, var)| (var.name.as_str(), format!("f{k}")))
        .chain(
            reduction
                .iter()
                .enumerate()
                .map(|(k, var)| (var.name.as_str(), format!("r{k}"))),
        )
        .collect();
    let mut renamed = term.expr.clone();
    rename_vars(&mut renamed, &rename);
    Some(Key(format!("{renamed}|{}", reduction.len())))
}

fn rename_vars(expr: &mut Expr, rename: &HashMap<&str, String>) {
    match expr {
        Expr::Access(access) => {
            for slot in &mut access.slots {
                if let Slot::Var(var) = slot {
                    var.name = rename[var.name.as_str()].clone();
                }
            }
        }
        Expr::Literal(_) | Expr::Scalar(_) => {}
        Expr::Neg(operand) => rename_vars(operand, rename),
        Expr::Binary(_, left, right) => {
            rename_vars(left, rename);
            rename_vars(right, rename);
        }
        Expr::Call(_, args) => args.iter_mut().for_each(|arg| rename_vars(arg, rename)),
    }
}

fn has_scalar(expr: &Expr) -> bool {
    match expr {
        Expr::Scalar(_) => true,
        Expr::Access(_) | Expr::Literal(_) => false,
        Expr::Neg(operand) => has_scalar(operand),
        Expr::Binary(_, left, right) => has_scalar(left) || has_scalar(right),
        Expr::Call(_, args) => args.iter().any(has_scalar),
    }
}

fn locations(program: &Program) -> Vec<(Location, Key)> {
    let mut found = Vec::new();
    for (s, statement) in program.statements.iter().enumerate() {
        for (u, update) in statement.updates.iter().enumerate() {
            for (t, term) in update.terms.iter().enumerate() {
                if let Some(key) = key(term) {
                    found.push(((s, u, t), key));
                }
            }
        }
    }
    found
}

fn find_duplicate(program: &Program) -> Option<Duplicate> {
    let found = locations(program);
    for (a, (first, key)) in found.iter().enumerate() {
        for (second, other) in &found[a + 1..] {
            if key == other && !written_between(program, *first, *second) {
                return Some(Duplicate {
                    first: *first,
                    second: *second,
                });
            }
        }
    }
    None
}

/// Whether a tensor the first term reads is written from its statement up to (not including)
/// the second's, or the second's statement is the first's.
fn written_between(program: &Program, first: Location, second: Location) -> bool {
    let term = &program.statements[first.0].updates[first.1].terms[first.2];
    let mut read: Vec<TensorId> = Vec::new();
    term.expr
        .visit_accesses(&mut |access| read.push(access.tensor));
    first.0 == second.0
        || program.statements[first.0..second.0]
            .iter()
            .any(|statement| match &statement.target {
                Target::Tensor { access } => read.contains(&access.tensor),
                _ => false,
            })
}

fn share(program: &mut Program, duplicate: Duplicate) {
    let (s, u, t) = duplicate.first;
    let first_statement = &program.statements[s];
    let reuse_let = match &first_statement.target {
        Target::NewTensor { tensor, .. }
            if first_statement.updates.len() == 1
                && first_statement.updates[0].terms.len() == 1
                && first_statement.updates[0].op == AssignOp::Assign
                && first_statement.updates[0].terms[0].scale.is_one()
                && free_vars(&first_statement.updates[0].terms[0])
                    == first_statement.lhs_vars().cloned().collect::<Vec<_>>() =>
        {
            Some(*tensor)
        }
        _ => None,
    };
    // The `let` result itself must still hold the sum when the second term runs.
    let reuse_let = reuse_let.filter(|&tensor| {
        !program.statements[s + 1..duplicate.second.0]
            .iter()
            .any(|statement| statement.target_tensor() == Some(tensor))
    });
    match reuse_let {
        Some(tensor) => replace_with_read(program, duplicate.second, tensor),
        None => {
            let term = program.statements[s].updates[u].terms[t].clone();
            let free = free_vars(&term);
            let span = program.statements[s].span;
            let tensor = program.insert_temporary(s, free.len(), |tensor, name| Statement {
                target: Target::NewTensor {
                    name,
                    mutable: false,
                    ty: None,
                    tensor,
                },
                lhs: free.iter().cloned().map(Slot::Var).collect(),
                updates: vec![Update {
                    op: AssignOp::Assign,
                    beta: None,
                    terms: vec![Term {
                        scale: Scale::one(),
                        ..term
                    }],
                }],
                scalars: Vec::new(),
                span,
            });
            let shift = |(s, u, t): Location| (s + 1, u, t);
            replace_with_read(program, shift(duplicate.first), tensor);
            replace_with_read(program, shift(duplicate.second), tensor);
        }
    }
}

/// The term's indices that are not summed, in first-use order.
fn free_vars(term: &Term) -> Vec<IndexVar> {
    let reduction = term.reduction.clone().unwrap_or_default();
    term.expr
        .vars()
        .into_iter()
        .filter(|var| !reduction.contains(var))
        .collect()
}

/// Replaces the term at `location` by its scale times a point-wise read of `tensor`.
fn replace_with_read(program: &mut Program, (s, u, t): Location, tensor: TensorId) {
    let name = program.tensors[tensor].name.clone();
    let text = format!("{name}[..]");
    let statement_span = program.statements[s].span;
    let term = &mut program.statements[s].updates[u].terms[t];
    let free = free_vars(term);
    let span = match &term.expr {
        Expr::Access(access) => access.span,
        _ => statement_span,
    };
    term.expr = Expr::Access(Access {
        tensor,
        name,
        slots: free.into_iter().map(Slot::Var).collect(),
        text,
        span,
    });
    term.reduction = Some(Vec::new());
}

#[cfg(test)]
mod tests {
    use crate::passes::before_and_after;
    use quote::quote;

    #[test]
    fn a_later_term_reads_an_earlier_let() {
        insta::assert_snapshot!(before_and_after(
            quote! { let x[i] = a[i, j] * b[j]; let y[p] = 2 * a[p, q] * b[q] + 1; },
            "eliminate_common_subexpressions"
        ));
    }

    #[test]
    fn shared_sums_get_one_temporary() {
        insta::assert_snapshot!(before_and_after(
            quote! { let s[i] = a[i, j] * b[j] + 1; let t[i] = 3 * a[i, j] * b[j] - c[i]; },
            "eliminate_common_subexpressions"
        ));
    }

    #[test]
    fn writes_in_between_and_scalars_block_sharing() {
        insta::assert_snapshot!(before_and_after(
            quote! { let s[i] = a[i, j] * b[j] + 1; a[i, j] += 1; let t[i] = a[i, j] * b[j] + 1; let u[i] = {w} * c[i, j] + 1; let v[i] = {w} * c[i, j] + 1; },
            "eliminate_common_subexpressions"
        ));
    }
}

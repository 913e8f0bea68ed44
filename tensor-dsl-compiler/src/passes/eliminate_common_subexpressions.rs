//! A sum computed twice in one block is computed once. When a later term equals the whole
//! right-hand side of an earlier `let x[..] = Σ…`, it reads `x` instead; when two terms
//! share a sum otherwise, a temporary `let tmp[..] = Σ…` is inserted before the first and
//! both read it. Terms qualify when they sum something, use no Rust scalar (those are
//! evaluated per statement) and no tensor they read is written in between. Two sums are the
//! same when they read the same tensor bindings (by id, never by name) in the same shape.

use crate::ir::{
    Access, AssignOp, BinaryOp, Exponent, Expr, Function, IndexVar, Position, Program, Scale, Slot,
    Statement, Target, TensorId, Term, Update,
};

pub fn eliminate_common_subexpressions(mut program: Program) -> Program {
    // Each round removes one duplicate; a block has few statements, so rounds are cheap.
    while let Some(duplicate) = find_duplicate(&program) {
        share(&mut program, duplicate);
    }
    program
}

/// A term's sum as a value: tensors by id (so sums over two bindings of one name, before and
/// after a `let` shadows it, differ) and indices by role, free in first-use order then summed
/// (so equal sums in statements that name their indices differently compare equal).
#[derive(PartialEq)]
struct Key(KeyExpr);

#[derive(PartialEq)]
enum KeyExpr {
    Access(TensorId, Vec<KeySlot>),
    /// The literal's value as bits: `0.0` and `-0.0` divide differently.
    Literal(u64),
    Neg(Box<KeyExpr>),
    Binary(BinaryOp, Box<KeyExpr>, Box<KeyExpr>),
    Call(Function, Vec<KeyExpr>),
}

#[derive(PartialEq)]
enum KeySlot {
    Free(usize),
    Summed(usize),
    Fixed(Position),
}

/// `(statement, update, term)`.
type Location = (usize, usize, usize);

struct Duplicate {
    first: Location,
    second: Location,
}

fn key(term: &Term) -> Option<Key> {
    let reduction = term.reduction.as_ref()?;
    if reduction.is_empty() {
        return None;
    }
    let free: Vec<IndexVar> = term
        .expr
        .vars()
        .into_iter()
        .filter(|var| !reduction.contains(var))
        .collect();
    let role = |var: &IndexVar| match reduction.iter().position(|summed| summed == var) {
        Some(k) => KeySlot::Summed(k),
        None => KeySlot::Free(
            free.iter()
                .position(|other| other == var)
                .expect("an index a term does not sum is free"),
        ),
    };
    key_expr(&term.expr, &role).map(Key)
}

/// The expression as a key; none when it uses a Rust scalar or exponent, which is evaluated anew
/// by each statement.
fn key_expr(expr: &Expr, role: &impl Fn(&IndexVar) -> KeySlot) -> Option<KeyExpr> {
    Some(match expr {
        Expr::Access(access) => KeyExpr::Access(
            access.tensor,
            access
                .slots
                .iter()
                .map(|slot| match slot {
                    Slot::Var(var) => role(var),
                    Slot::Fixed(position) => KeySlot::Fixed(*position),
                })
                .collect(),
        ),
        Expr::Literal(literal) => KeyExpr::Literal(literal.value.to_bits()),
        Expr::Scalar(_) | Expr::Call(Function::Powi(Exponent::Computed(_)), ..) => return None,
        Expr::Neg(operand) => KeyExpr::Neg(Box::new(key_expr(operand, role)?)),
        Expr::Binary(op, left, right) => KeyExpr::Binary(
            *op,
            Box::new(key_expr(left, role)?),
            Box::new(key_expr(right, role)?),
        ),
        Expr::Call(function, args, _) => KeyExpr::Call(
            *function,
            args.iter()
                .map(|arg| key_expr(arg, role))
                .collect::<Option<_>>()?,
        ),
    })
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

/// Whether a tensor the first term reads may be written from its statement up to (not
/// including) the second's, or the second's statement is the first's. A write to a tensor the
/// block did not make may reach any other such tensor (`Program::may_alias`).
fn written_between(program: &Program, first: Location, second: Location) -> bool {
    let term = &program.statements[first.0].updates[first.1].terms[first.2];
    let mut read: Vec<TensorId> = Vec::new();
    term.expr
        .visit_accesses(&mut |access| read.push(access.tensor));
    first.0 == second.0
        || program.statements[first.0..second.0]
            .iter()
            .filter_map(Statement::target_tensor)
            .any(|written| {
                read.iter()
                    .any(|&tensor| program.may_alias(written, tensor))
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
    // The `let` result itself must still hold the sum when the second term runs, and the
    // second term's own statement must not write it: its updates run one after another, so
    // `w[i] = c[i] + Σ…` reading `w` would see `c` in place of the sum.
    let reuse_let = reuse_let.filter(|&tensor| {
        !program.statements[s + 1..=duplicate.second.0]
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
                exponents: Vec::new(),
                // The statement the term came from keeps asking for them.
                needs: Vec::new(),
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

    #[test]
    fn a_let_that_shadows_an_operand_starts_a_new_sum() {
        // Both sums print as `Σj (a[i,j]*b[j])`, but the second reads the new `a`.
        insta::assert_snapshot!(before_and_after(
            quote! { let s[i] = a[i, j] * b[j] + 1; let a[i, j] = c[i, j] + 1; let t[i] = a[i, j] * b[j] + 1; },
            "eliminate_common_subexpressions"
        ));
    }

    #[test]
    fn a_write_to_an_outside_tensor_blocks_sharing_sums_over_outside_tensors() {
        // `v` may be `r` under another name; `e` is fresh, so writing it changes no sum.
        insta::assert_snapshot!(before_and_after(
            quote! {
                let s[i] = m[i, j] * r[j] + 1;
                v[i] = a[i];
                let u[i] = m[i, j] * r[j] + 1;
                let mut e[i] = a[i];
                e[i] += 1;
                let w[i] = 2 * m[i, j] * r[j];
            },
            "eliminate_common_subexpressions"
        ));
    }

    #[test]
    fn a_statement_that_overwrites_the_let_gets_a_temporary() {
        // Reading `w` for the sum would see `c[i]`, written by the statement's first update.
        insta::assert_snapshot!(before_and_after(
            quote! { let mut w[i] = a[i, k] * b[k]; w[i] = c[i] + a[i, k] * b[k]; },
            "eliminate_common_subexpressions"
        ));
    }
}

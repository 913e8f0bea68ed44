//! The language rules over resolved statements, one function each, run in the order listed in
//! `check_rules`; each records its errors and lets the others run.

use proc_macro2::Span;

use crate::diagnostics::Errors;
use crate::ir::{Access, BinaryOp, Expr, IndexVar, Program, Slot, Statement, Target};

pub fn check_rules(program: &Program, errors: &mut Errors) {
    for statement in &program.statements {
        check_repeated_left_index(statement, errors);
        check_let_extents_known(statement, errors);
        check_nested_sums(statement, errors);
    }
    check_consistent_ranks(program, errors);
    check_written_lets_are_mutable(program, errors);
}

// Each index of a `let` names a different axis of the new tensor: `let c[i, i] = …` is an
// error (its extents would be ambiguous). Writing an existing tensor's diagonal, `c[i, i] += …`,
// is allowed: the repeated index is one loop.
fn check_repeated_left_index(statement: &Statement, errors: &mut Errors) {
    if !matches!(statement.target, Target::NewTensor { .. }) {
        return;
    }
    let vars: Vec<&IndexVar> = statement
        .lhs
        .iter()
        .filter_map(|slot| match slot {
            Slot::Var(var) => Some(var),
            Slot::Fixed(_) => None,
        })
        .collect();
    for (k, var) in vars.iter().enumerate() {
        if vars[..k].contains(var) {
            errors.error(
                var.span,
                format!(
                    "index `{}` appears twice in this `let`; each index names a different axis of the new tensor, so use a new index name here (an existing tensor's diagonal can be written: `c[i, i] += …`)",
                    var.name
                ),
            );
        }
    }
}

// A `let` result takes its extents from the right-hand side, so each of its indices must occur
// there: `let c[i, j] = a[i]` leaves the extent of `j` unknown.
fn check_let_extents_known(statement: &Statement, errors: &mut Errors) {
    let Target::NewTensor { name, .. } = &statement.target else {
        return;
    };
    let used: Vec<IndexVar> = statement
        .terms()
        .flat_map(|term| term.expr.vars())
        .collect();
    for var in statement.lhs_vars() {
        if !used.contains(var) {
            errors.error(
                var.span,
                format!(
                    "index `{0}` of `let {name}[..]` does not occur on the right-hand side, so its extent is unknown; use `{0}` on the right-hand side or assign into an existing tensor",
                    var.name
                ),
            );
        }
    }
}

// A parenthesised sum inside a product is point-wise. If the term sums over an index that some
// of the sum's terms use and others do not, the meaning is ambiguous: in
// `c[i] = (a[i, j] + b[i]) * y[j]`, is `b[i]` multiplied by every `y[j]`? Inside a function
// argument the sum is plainly point-wise and allowed, and so is a constant addend (no tensor
// at all, as in `a[i, j] / (b[j] + eps)`): it has no index that could have been meant to sum.
fn check_nested_sums(statement: &Statement, errors: &mut Errors) {
    let lhs: Vec<&IndexVar> = statement.lhs_vars().collect();
    for term in statement.terms() {
        let summed = term.expr.vars_summed_against(&lhs);
        if !summed.is_empty() {
            check_sums_in(&term.expr, &summed, statement, errors);
        }
    }
}

fn check_sums_in(expr: &Expr, summed: &[IndexVar], statement: &Statement, errors: &mut Errors) {
    match expr {
        Expr::Binary(BinaryOp::Add | BinaryOp::Sub, ..) => {
            let mut addends = Vec::new();
            flatten(expr, false, &mut addends);
            for var in summed {
                let uses: Vec<Option<bool>> = addends
                    .iter()
                    .map(|addend| has_access(addend).then(|| addend.vars().contains(var)))
                    .collect();
                if uses.contains(&Some(true)) {
                    if let Some(lacking) = uses.iter().position(|&used| used == Some(false)) {
                        errors.error(
                            expr_span(addends[lacking], statement),
                            format!(
                                "ambiguous nested sum: the term sums over `{0}`, but `{1}` in this parenthesised sum does not use `{0}`; multiply the sum out into separate terms, or compute it in a statement of its own",
                                var.name, addends[lacking]
                            ),
                        );
                    }
                }
            }
            for addend in addends {
                check_sums_in(addend, summed, statement, errors);
            }
        }
        Expr::Binary(_, left, right) => {
            check_sums_in(left, summed, statement, errors);
            check_sums_in(right, summed, statement, errors);
        }
        Expr::Neg(operand) => check_sums_in(operand, summed, statement, errors),
        Expr::Access(_) | Expr::Literal(_) | Expr::Scalar(_) | Expr::Call(..) => {}
    }
}

fn has_access(expr: &Expr) -> bool {
    let mut found = false;
    expr.visit_accesses(&mut |_| found = true);
    found
}

/// The operands of a chain of `+`/`-` (`*`/`/` with `products`), unary minus flattened too.
pub(super) fn flatten<'e>(expr: &'e Expr, products: bool, parts: &mut Vec<&'e Expr>) {
    match expr {
        Expr::Binary(op, left, right)
            if matches!(op, BinaryOp::Mul | BinaryOp::Div) == products =>
        {
            flatten(left, products, parts);
            flatten(right, products, parts);
        }
        Expr::Neg(operand) => flatten(operand, products, parts),
        _ => parts.push(expr),
    }
}

fn expr_span(expr: &Expr, statement: &Statement) -> Span {
    match expr {
        Expr::Access(access) => access.span,
        Expr::Literal(literal) => literal.span,
        Expr::Scalar(id) => statement
            .scalars
            .get(*id)
            .map_or(statement.span, |scalar| scalar.span),
        Expr::Neg(operand) => expr_span(operand, statement),
        Expr::Binary(_, left, _) => expr_span(left, statement),
        Expr::Call(_, args, _) => args
            .first()
            .map_or(statement.span, |arg| expr_span(arg, statement)),
    }
}

// Every access of one tensor binding uses as many indices as it has axes; a `let` of the block
// fixes the rank of the tensor it makes.
fn check_consistent_ranks(program: &Program, errors: &mut Errors) {
    let mut check = |access: &Access| {
        let Some(tensor) = program.tensors.get(access.tensor) else {
            return;
        };
        if access.slots.len() != tensor.rank {
            errors.error(
                access.span,
                format!(
                    "`{}` is accessed with {} {} here but with {} in `{}`; use one index per axis in every access",
                    tensor.name,
                    access.slots.len(),
                    if access.slots.len() == 1 { "index" } else { "indices" },
                    tensor.rank,
                    tensor.first_access
                ),
            );
        }
    };
    for statement in &program.statements {
        if let Target::Tensor { access } = &statement.target {
            check(access);
        }
        for term in statement.terms() {
            term.expr.visit_accesses(&mut check);
        }
    }
}

// A later statement of the block writes a tensor a `let` made only when that `let` says `mut`,
// as in Rust. The language decides, not the passes: `let c[i] = x[i]; c[i] += x[i];` must not
// compile just because `fuse_elementwise` happens to merge the two statements into one.
fn check_written_lets_are_mutable(program: &Program, errors: &mut Errors) {
    for statement in &program.statements {
        let Target::NewTensor {
            name,
            mutable: false,
            tensor,
            ..
        } = &statement.target
        else {
            continue;
        };
        let written = program.statements.iter().any(
            |later| matches!(&later.target, Target::Tensor { access } if access.tensor == *tensor),
        );
        if written {
            errors.error(
                name.span(),
                format!(
                    "`{name}` is written by a later statement of this block, so it must be mutable: write `let mut {name}[..]`"
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::compile::front_end;
    use proc_macro2::TokenStream;
    use quote::quote;

    fn errors(input: TokenStream) -> Vec<String> {
        match front_end(input) {
            Ok(_) => Vec::new(),
            Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
        }
    }

    #[test]
    fn valid_blocks_have_no_errors() {
        assert!(errors(quote! {
            let c[i, j] = a[i, k, l] * b[k, j, l];
            d[i, j] += 2.0 * alpha * c[i, k] * e[k, j];
            let s = c[i, j] * c[i, j];
            let t[i] = exp(a[i, j, 0] + c[i, i]) / (w[j] + 1e-9);
        })
        .is_empty());
    }

    #[test]
    fn repeated_left_index() {
        assert_eq!(
            errors(quote! { let d[i, j, i] = a[i, j]; }),
            ["index `i` appears twice in this `let`; each index names a different axis of the new tensor, so use a new index name here (an existing tensor's diagonal can be written: `c[i, i] += …`)"]
        );
        // Writing an existing tensor's diagonal is no error.
        assert!(errors(quote! { d[i, j, i] += a[i, j]; }).is_empty());
    }

    #[test]
    fn let_index_with_unknown_extent() {
        let found = errors(quote! { let c[i, j, k] = a[i] + b[k]; });
        assert_eq!(found.len(), 1);
        assert!(found[0].starts_with("index `j` of `let c[..]` does not occur"));
    }

    #[test]
    fn inconsistent_rank_across_statements_and_shadowing() {
        let found = errors(quote! {
            let c[i] = a[i, j] * x[j];
            let d = c[i, i];
            let c[i, j] = a[i, j];
            let e = c[i, i];
        });
        assert_eq!(
            found,
            ["`c` is accessed with 2 indices here but with 1 in `c[i]`; use one index per axis in every access"]
        );
    }

    #[test]
    fn ambiguous_nested_sums_but_not_inside_functions() {
        let found = errors(quote! { c[i] = (a[i, j] + b[i]) * y[j]; });
        assert_eq!(found.len(), 1);
        assert!(found[0].contains("`b[i]` in this parenthesised sum does not use `j`"));
        assert!(errors(quote! { s[i] = exp(a[i, j] + b[i]); }).is_empty());
        assert!(errors(quote! { s[i] = (a[i, j] + 1) * y[j]; }).is_empty());
        assert!(errors(quote! { s[i] = (a[i] + b[i]) * y[j]; }).is_empty());
        assert!(
            errors(quote! { s[i] = -(a[i, j] + b[i]); }).is_empty(),
            "flattened"
        );
    }

    #[test]
    fn names_used_as_index_and_value() {
        let found = errors(quote! { c[i] = a[i, j] * j[i] + i; });
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found
            .iter()
            .all(|m| m.contains("used both as an index and as a tensor or scalar")));
    }

    #[test]
    fn functions() {
        assert_eq!(
            errors(
                quote! { c[i] = exp(a[i], b[i]) + foo(a[i]) + powi(a[i], b[i]) + powi(a[i], -n); }
            ),
            [
                "`exp` takes 1 argument but 2 were given",
                "unknown function `foo`; the element-wise functions are exp, ln (or log), sqrt, abs, sin, cos, tan, tanh, sigmoid, max, min, pow, powi, conj, re and im",
                "the exponent of `powi` must be an integer: a literal such as `powi(x[i], 3)`, or a Rust `i32` such as `powi(x[i], n)` or `powi(x[i], {n + 1})`; for a real exponent write `pow(x[i], 2.5)`",
            ]
        );
    }

    #[test]
    fn a_let_written_later_must_be_mut() {
        let message =
            "`c` is written by a later statement of this block, so it must be mutable: write `let mut c[..]`";
        assert_eq!(errors(quote! { let c[i] = x[i]; c[i] += x[i]; }), [message]);
        assert_eq!(
            errors(quote! { let c[i] = x[i]; c[i] += a[i, j] * x[j]; c[i] -= x[i]; }),
            [message],
            "one error per `let`"
        );
        assert!(errors(quote! { let mut c[i] = x[i]; c[i] += a[i, j] * x[j]; }).is_empty());
        assert_eq!(
            errors(quote! { let c[i] = x[i]; let c[i] = 2 * c[i]; c[i] += x[i]; }),
            [message],
            "only the `let` whose tensor is written"
        );
        assert!(errors(quote! { let c[i] = x[i]; d[i] = c[i]; }).is_empty());
    }

    #[test]
    fn every_error_of_a_block_is_reported() {
        let found = errors(quote! {
            let b[i, i] = a[i, i];
            let c[i] = a[i, j] +;
            let s = a[i, j] * a[i];
            let t[k] = a[i, i];
        });
        assert_eq!(found.len(), 4, "{found:?}");
    }
}

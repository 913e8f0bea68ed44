//! Constant factors of a term → its scale (TiledArray's `ScalExpr`): literal arithmetic is
//! folded (`2*(3*a)` → `6*a`, `1/2` → `0.5`), double negations cancel, and the literal and
//! Rust-scalar factors and divisors of a term's product move out of its sum (`a·b / β` has
//! α = 1/β), so they are applied once per result element instead of once per summed element,
//! and a GEMM stays a GEMM. Literals with a type suffix stay put, so rustc still checks their
//! type.

use crate::ir::{BinaryOp, Expr, Literal, Program, Scale, Term};

pub fn fold_scalars(mut program: Program) -> Program {
    for statement in &mut program.statements {
        for term in statement.terms_mut() {
            let folded = fold_term(term);
            // A product of huge literals could overflow; such a term is left as written.
            if folded.scale.coefficient.is_finite() {
                *term = folded;
            }
        }
    }
    program
}

fn fold_term(term: &Term) -> Term {
    let expr = fold_constants(term.expr.clone());
    let mut scale = term.scale.clone();
    let mut multipliers = Vec::new();
    let mut divisors = Vec::new();
    factor(expr, false, &mut scale, &mut multipliers, &mut divisors);
    let expr = rebuild(multipliers, divisors);
    // Divisors move behind the multipliers (`2 / c[n] * e[k]` → `e[k] / c[n]`), so the summed
    // indices are listed again in their new first-use order, as reduction notation requires.
    let reduction = term.reduction.as_ref().map(|summed| {
        expr.vars()
            .into_iter()
            .filter(|var| summed.contains(var))
            .collect()
    });
    Term {
        scale,
        expr,
        reduction,
    }
}

/// Splits a product into constant factors (into `scale`) and the rest, keeping their order.
fn factor(
    expr: Expr,
    divisor: bool,
    scale: &mut Scale,
    multipliers: &mut Vec<Expr>,
    divisors: &mut Vec<Expr>,
) {
    match expr {
        Expr::Binary(BinaryOp::Mul, left, right) if !divisor => {
            factor(*left, false, scale, multipliers, divisors);
            factor(*right, false, scale, multipliers, divisors);
        }
        Expr::Binary(BinaryOp::Div, left, right) if !divisor => {
            factor(*left, false, scale, multipliers, divisors);
            factor(*right, true, scale, multipliers, divisors);
        }
        Expr::Neg(operand) => {
            scale.coefficient = -scale.coefficient;
            factor(*operand, divisor, scale, multipliers, divisors);
        }
        Expr::Literal(literal)
            if literal.suffixed.is_none() && !(divisor && literal.value == 0.0) =>
        {
            if divisor {
                scale.coefficient /= literal.value;
            } else {
                scale.coefficient *= literal.value;
            }
        }
        Expr::Scalar(id) if divisor => scale.divisors.push(id),
        Expr::Scalar(id) => scale.scalars.push(id),
        other if divisor => divisors.push(other),
        other => multipliers.push(other),
    }
}

/// The product `m₀ * m₁ * … / d₀ / d₁ …`, or `1` when nothing is left.
fn rebuild(multipliers: Vec<Expr>, divisors: Vec<Expr>) -> Expr {
    let mut factors = multipliers.into_iter();
    let first = factors.next().unwrap_or_else(|| {
        Expr::Literal(Literal {
            value: 1.0,
            suffixed: None,
            span: proc_macro2::Span::call_site(),
        })
    });
    let product = factors.fold(first, |product, factor| {
        Expr::Binary(BinaryOp::Mul, Box::new(product), Box::new(factor))
    });
    divisors.into_iter().fold(product, |quotient, divisor| {
        Expr::Binary(BinaryOp::Div, Box::new(quotient), Box::new(divisor))
    })
}

/// Bottom-up constant folding: literal arithmetic and double negation, anywhere in the tree.
fn fold_constants(expr: Expr) -> Expr {
    match expr {
        Expr::Neg(operand) => match fold_constants(*operand) {
            Expr::Neg(inner) => *inner,
            Expr::Literal(literal) if literal.suffixed.is_none() => Expr::Literal(Literal {
                value: -literal.value,
                ..literal
            }),
            operand => Expr::Neg(Box::new(operand)),
        },
        Expr::Binary(op, left, right) => {
            let (left, right) = (fold_constants(*left), fold_constants(*right));
            match (&left, &right) {
                (Expr::Literal(a), Expr::Literal(b))
                    if a.suffixed.is_none() && b.suffixed.is_none() =>
                {
                    let value = match op {
                        BinaryOp::Add => a.value + b.value,
                        BinaryOp::Sub => a.value - b.value,
                        BinaryOp::Mul => a.value * b.value,
                        BinaryOp::Div => a.value / b.value,
                    };
                    if value.is_finite() {
                        return Expr::Literal(Literal { value, ..a.clone() });
                    }
                }
                _ => {}
            }
            Expr::Binary(op, Box::new(left), Box::new(right))
        }
        Expr::Call(function, args, span) => Expr::Call(
            function,
            args.into_iter().map(fold_constants).collect(),
            span,
        ),
        leaf @ (Expr::Access(_) | Expr::Literal(_) | Expr::Scalar(_)) => leaf,
    }
}

#[cfg(test)]
mod tests {
    use crate::passes::before_and_after;
    use quote::quote;

    #[test]
    fn literals_double_negation_and_scalars_leave_the_sum() {
        insta::assert_snapshot!(before_and_after(
            quote! { let c[i, j] = 2 * (3 * a[i, k]) * alpha * b[k, j] / 4 - -(1 / 2) * --d[i, j] + exp(-(-a[i, j])); },
            "fold_scalars"
        ));
    }

    #[test]
    fn suffixed_literals_and_zero_divisors_stay_scalar_divisors_move() {
        insta::assert_snapshot!(before_and_after(
            quote! { let c[i] = 2.0f32 * a[i] / beta + 1 / 0 * a[i]; },
            "fold_scalars"
        ));
    }

    /// Attention scaling: a GEMM divided by a Rust scalar keeps its GEMM, with α = 1/√d.
    #[test]
    fn scalar_divisors_join_the_scale() {
        insta::assert_snapshot!(before_and_after(
            quote! { let s[i, j] = q[i, d] * k[j, d] / { dim.sqrt() } / temperature; },
            "fold_scalars"
        ));
    }

    #[test]
    fn moving_a_divisor_back_relists_the_summed_indices() {
        insta::assert_snapshot!(before_and_after(
            quote! { let x = 2 / c[n] * e[k]; },
            "fold_scalars"
        ));
    }
}

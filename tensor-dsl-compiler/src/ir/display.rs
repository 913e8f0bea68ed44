//! IR → compact text (`let c[i,j] = Σk,l a[i,k,l]*b[k,j,l]`), for tests and the docs; scalars
//! print as `$0`, `$1`, … in evaluation order.

use std::fmt;

use super::{AssignOp, BinaryOp, Expr, Function, Position, Scale, Slot, Statement, Target, Term};

impl fmt::Display for Slot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Slot::Var(var) => f.write_str(&var.name),
            Slot::Fixed(Position::Literal(position)) => write!(f, "{position}"),
            Slot::Fixed(Position::Computed(id)) => write!(f, "{{p{id}}}"),
        }
    }
}

fn write_slots(f: &mut fmt::Formatter<'_>, slots: &[Slot]) -> fmt::Result {
    f.write_str("[")?;
    for (k, slot) in slots.iter().enumerate() {
        if k > 0 {
            f.write_str(",")?;
        }
        write!(f, "{slot}")?;
    }
    f.write_str("]")
}

impl fmt::Display for Expr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expr::Access(access) => {
                f.write_str(&access.name)?;
                write_slots(f, &access.slots)
            }
            Expr::Literal(literal) => write!(f, "{}", literal.value),
            Expr::Scalar(id) => write!(f, "${id}"),
            Expr::Neg(operand) => write!(f, "-{operand}"),
            Expr::Binary(op, left, right) => {
                let symbol = match op {
                    BinaryOp::Add => "+",
                    BinaryOp::Sub => "-",
                    BinaryOp::Mul => "*",
                    BinaryOp::Div => "/",
                };
                // Sums print parenthesised so the printed form reads back with the same tree.
                match op {
                    BinaryOp::Add | BinaryOp::Sub => write!(f, "({left} {symbol} {right})"),
                    BinaryOp::Mul | BinaryOp::Div => write!(f, "{left}{symbol}{right}"),
                }
            }
            Expr::Call(function, args, _) => {
                write!(f, "{}(", function.name())?;
                for (k, arg) in args.iter().enumerate() {
                    if k > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{arg}")?;
                }
                if let Function::Powi(exponent) = function {
                    write!(f, ", {exponent}")?;
                }
                f.write_str(")")
            }
        }
    }
}

impl fmt::Display for Scale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut factors: Vec<String> = self.scalars.iter().map(|id| format!("${id}")).collect();
        if self.coefficient != 1.0 || factors.is_empty() {
            factors.insert(0, self.coefficient.to_string());
        }
        f.write_str(&factors.join("*"))?;
        self.divisors.iter().try_for_each(|id| write!(f, "/${id}"))
    }
}

impl Term {
    /// The magnitude of the term's scale as a prefix (`2*`, `$0*`), or nothing for one; the
    /// sign is printed by the enclosing sum.
    fn scale_prefix(&self) -> String {
        let magnitude = Scale {
            coefficient: self.scale.coefficient.abs(),
            scalars: self.scale.scalars.clone(),
            divisors: self.scale.divisors.clone(),
        };
        if magnitude.is_one() {
            String::new()
        } else {
            format!("{magnitude}*")
        }
    }

    /// The term without its sum sign: `2*a[i,k]*b[k,j]`, as written inside a loop nest.
    pub fn summand(&self) -> String {
        format!("{}{}", self.scale_prefix(), self.expr)
    }
}

impl fmt::Display for Term {
    /// `2*Σk (a[i,k]*b[k,j])`: the scale outside the sum, as it is evaluated.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.reduction {
            Some(reduction) if !reduction.is_empty() => {
                let names: Vec<&str> = reduction.iter().map(|var| var.name.as_str()).collect();
                write!(
                    f,
                    "{}Σ{} ({})",
                    self.scale_prefix(),
                    names.join(","),
                    self.expr
                )
            }
            _ => f.write_str(&self.summand()),
        }
    }
}

/// `t0 + t1 - t2`: terms joined by their signs.
pub(crate) fn write_sum<'t>(
    f: &mut impl fmt::Write,
    terms: impl IntoIterator<Item = &'t Term>,
    show: impl Fn(&Term) -> String,
) -> fmt::Result {
    for (n, term) in terms.into_iter().enumerate() {
        let negative = term.scale.coefficient < 0.0;
        match (n, negative) {
            (0, false) => {}
            (0, true) => f.write_str("-")?,
            (_, false) => f.write_str(" + ")?,
            (_, true) => f.write_str(" - ")?,
        }
        f.write_str(&show(term))?;
    }
    Ok(())
}

impl Statement {
    /// The target as written on the left: `c[i,j]`, `s`, `self.total`.
    pub fn target_text(&self) -> String {
        let name = match &self.target {
            Target::NewTensor { name, .. } | Target::NewScalar { name, .. } => name.to_string(),
            Target::Tensor { access } => access.name.clone(),
            Target::Scalar { place, .. } => place.to_string().replace(' ', ""),
        };
        if self.lhs.is_empty() {
            return name;
        }
        let slots: Vec<String> = self.lhs.iter().map(ToString::to_string).collect();
        format!("{name}[{}]", slots.join(","))
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Target::NewTensor { .. } | Target::NewScalar { .. } = self.target {
            f.write_str("let ")?;
        }
        let target = self.target_text();
        for (k, update) in self.updates.iter().enumerate() {
            if k > 0 {
                f.write_str("; ")?;
            }
            let op = match (&update.beta, update.op) {
                (Some(_), _) => "←",
                (None, AssignOp::Assign) => "=",
                (None, AssignOp::Add) => "+=",
                (None, AssignOp::Sub) => "-=",
            };
            write!(f, "{target} {op} ")?;
            if let Some(beta) = &update.beta {
                write!(f, "{beta}·{target} + ")?;
            }
            write_sum(f, &update.terms, ToString::to_string)?;
        }
        Ok(())
    }
}

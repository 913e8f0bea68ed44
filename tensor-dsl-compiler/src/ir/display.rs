//! IR → compact text (`let c[i,j] = Σk,l a[i,k,l]*b[k,j,l]`), for tests and the docs; scalars
//! print as `$0`, `$1`, … in evaluation order.

use std::fmt;

use super::{AssignOp, BinaryOp, Expr, Function, Position, Slot, Statement, Target, Term};

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
                let name = access.text.split('[').next().unwrap_or_default();
                f.write_str(name)?;
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
            Expr::Call(function, args) => {
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

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(reduction) = &self.reduction {
            if !reduction.is_empty() {
                let names: Vec<&str> = reduction.iter().map(|var| var.name.as_str()).collect();
                write!(f, "Σ{} ", names.join(","))?;
            }
        }
        write!(f, "{}", self.expr)
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            Target::NewTensor { name, .. } | Target::NewScalar { name, .. } => {
                write!(f, "let {name}")?
            }
            Target::Tensor { access } => {
                f.write_str(access.text.split('[').next().unwrap_or_default())?
            }
            Target::Scalar { place, .. } => write!(f, "{}", place.to_string().replace(' ', ""))?,
        }
        if !self.lhs.is_empty() {
            write_slots(f, &self.lhs)?;
        }
        let op = match self.op {
            AssignOp::Assign => "=",
            AssignOp::Add => "+=",
            AssignOp::Sub => "-=",
        };
        write!(f, " {op} ")?;
        for (k, term) in self.terms.iter().enumerate() {
            match (k, term.negated) {
                (0, false) => {}
                (0, true) => f.write_str("-")?,
                (_, false) => f.write_str(" + ")?,
                (_, true) => f.write_str(" - ")?,
            }
            write!(f, "{term}")?;
        }
        Ok(())
    }
}

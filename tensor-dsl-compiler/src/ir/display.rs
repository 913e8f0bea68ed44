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

impl fmt::Display for Scale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.coefficient)?;
        for id in &self.scalars {
            write!(f, "*${id}")?;
        }
        Ok(())
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The sign is printed by the enclosing sum; a magnitude of one is left implicit.
        let magnitude = Scale {
            coefficient: self.scale.coefficient.abs(),
            scalars: self.scale.scalars.clone(),
        };
        if !magnitude.is_one() {
            write!(f, "{magnitude}*")?;
        }
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
        let mut target = String::new();
        match &self.target {
            Target::NewTensor { name, .. } | Target::NewScalar { name, .. } => {
                write!(f, "let ")?;
                target.push_str(&name.to_string());
            }
            Target::Tensor { access } => {
                target.push_str(access.text.split('[').next().unwrap_or_default())
            }
            Target::Scalar { place, .. } => target.push_str(&place.to_string().replace(' ', "")),
        }
        if !self.lhs.is_empty() {
            let slots: Vec<String> = self.lhs.iter().map(ToString::to_string).collect();
            target = format!("{target}[{}]", slots.join(","));
        }
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
            for (n, term) in update.terms.iter().enumerate() {
                let negative = term.scale.coefficient < 0.0;
                match (n, negative) {
                    (0, false) => {}
                    (0, true) => f.write_str("-")?,
                    (_, false) => f.write_str(" + ")?,
                    (_, true) => f.write_str(" - ")?,
                }
                write!(f, "{term}")?;
            }
        }
        Ok(())
    }
}

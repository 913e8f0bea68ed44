//! Checkers for the IR dialects (TACO's `isEinsumNotation`/`isReductionNotation`): run between
//! passes in debug builds, so a pass that breaks the IR's shape fails at once, by name.

use super::{IndexVar, Program, Slot, Target};

/// A dialect of the IR a program can be in (the loop notation of plans is checked by
/// `lower::is_loop_notation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dialect {
    /// What `check` makes: sums implicit.
    Einsum,
    /// Every term lists its sum.
    Reduction,
}

impl Dialect {
    /// Whether `program` is in this dialect, and if not, why.
    pub fn check(self, program: &Program) -> Result<(), String> {
        match self {
            Dialect::Einsum => is_einsum_notation(program),
            Dialect::Reduction => is_reduction_notation(program),
        }
    }
}

/// Einsum notation: sums are implicit, no term lists its reduction yet.
pub fn is_einsum_notation(program: &Program) -> Result<(), String> {
    common(program)?;
    match program
        .statements
        .iter()
        .flat_map(|statement| statement.terms())
        .find(|term| term.reduction.is_some())
    {
        Some(term) => Err(format!("`{term}` lists its reduction in einsum notation")),
        None => Ok(()),
    }
}

/// Reduction notation: every term sums exactly over the indices it uses that are not on its
/// statement's left-hand side.
pub fn is_reduction_notation(program: &Program) -> Result<(), String> {
    common(program)?;
    for statement in &program.statements {
        let lhs: Vec<&IndexVar> = statement.lhs_vars().collect();
        for term in statement.terms() {
            let Some(reduction) = &term.reduction else {
                return Err(format!(
                    "`{term}` in `{statement}` has no explicit reduction"
                ));
            };
            let expected = term.expr.vars_summed_against(&lhs);
            if *reduction != expected {
                return Err(format!(
                    "`{term}` in `{statement}` sums over the wrong indices"
                ));
            }
        }
    }
    Ok(())
}

/// What every dialect keeps: updates have terms, left-hand indices are distinct, tensors and
/// statement numbers resolve, and a new tensor's indices are all variables.
fn common(program: &Program) -> Result<(), String> {
    for (index, statement) in program.statements.iter().enumerate() {
        if statement.updates.is_empty() || statement.updates.iter().any(|u| u.terms.is_empty()) {
            return Err(format!("statement {index} has an empty update"));
        }
        let vars: Vec<&IndexVar> = statement.lhs_vars().collect();
        if vars
            .iter()
            .enumerate()
            .any(|(k, var)| vars[..k].contains(var))
        {
            return Err(format!("`{statement}` repeats a left-hand index"));
        }
        if let Target::NewTensor { tensor, .. } = &statement.target {
            if statement
                .lhs
                .iter()
                .any(|slot| matches!(slot, Slot::Fixed(_)))
            {
                return Err(format!(
                    "`{statement}` makes a tensor with a fixed position"
                ));
            }
            match program.tensors.get(*tensor).map(|t| &t.origin) {
                Some(super::TensorOrigin::Let { statement: s, .. }) if *s == index => {}
                _ => {
                    return Err(format!(
                        "`{statement}` makes a tensor that names another statement"
                    ))
                }
            }
        }
        for term in statement.terms() {
            let mut dangling = false;
            term.expr
                .visit_accesses(&mut |access| dangling |= access.tensor >= program.tensors.len());
            if dangling {
                return Err(format!("`{term}` reads an unknown tensor"));
            }
        }
    }
    Ok(())
}

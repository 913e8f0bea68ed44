//! Reduction notation → an execution plan per statement: the kernel steps that compute each
//! update, in order. Invariant: a step that reads its target in place (point-wise) is the
//! first step of its statement, so every element is read before anything is summed into it.
//!
//! Each step names its kernel (`Kernel`); today every step is a fused loop nest, and a GEMM
//! call or a device kernel becomes another variant without changing the plan's shape.

use crate::ir::{AssignOp, IndexVar, Program, Scale, Term, Update};

/// The program with one plan per statement, in order.
pub struct Plan {
    pub program: Program,
    pub statements: Vec<StatementPlan>,
}

pub struct StatementPlan {
    /// Index into `program.statements`.
    pub statement: usize,
    /// The steps that write the statement's target (or its accumulator), in order.
    pub steps: Vec<Step>,
}

/// `target (=|+=|← β·target +) α · Σ_reduction (terms)` — one kernel.
pub struct Step {
    pub mode: Mode,
    /// Negates the step's value (a `-=` statement).
    pub negate: bool,
    /// Summed point-wise. A single term's scale is hoisted out of the sum as the step's α.
    pub terms: Vec<Term>,
    /// The indices summed over, in loop order (after the left-hand ones).
    pub reduction: Vec<IndexVar>,
    pub kernel: Kernel,
}

/// How a step combines its value with the target.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    Assign,
    Add,
    /// `target = β · target + value`.
    Scale(Scale),
}

/// How a step is executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// A fused loop nest over the left-hand indices, then the summed ones.
    LoopNest,
}

pub fn lower(program: Program) -> Plan {
    let statements = program
        .statements
        .iter()
        .enumerate()
        .map(|(index, statement)| StatementPlan {
            statement: index,
            steps: statement.updates.iter().flat_map(steps).collect(),
        })
        .collect();
    Plan {
        program,
        statements,
    }
}

/// The kernel steps of one update: its point-wise terms fused into a first step, then one step
/// per summing term, adding. After `reassociate_sums` every update is already one step.
fn steps(update: &Update) -> Vec<Step> {
    let negate = update.op == AssignOp::Sub;
    let first_mode = match (&update.beta, update.op) {
        (Some(beta), _) => Mode::Scale(beta.clone()),
        (None, AssignOp::Assign) => Mode::Assign,
        (None, AssignOp::Add | AssignOp::Sub) => Mode::Add,
    };
    let (pointwise, summing): (Vec<&Term>, Vec<&Term>) =
        update.terms.iter().partition(|term| term.is_pointwise());
    let mut steps = Vec::new();
    if !pointwise.is_empty() {
        steps.push(Step {
            mode: first_mode.clone(),
            negate,
            terms: pointwise.into_iter().cloned().collect(),
            reduction: Vec::new(),
            kernel: Kernel::LoopNest,
        });
    }
    for term in summing {
        let mode = if steps.is_empty() {
            first_mode.clone()
        } else {
            Mode::Add
        };
        steps.push(Step {
            mode,
            negate,
            terms: vec![term.clone()],
            reduction: term.reduction.clone().unwrap_or_default(),
            kernel: Kernel::LoopNest,
        });
    }
    steps
}

//! Reduction notation → an execution plan per statement: which kernel computes which terms
//! into which target, in which order. Invariant: a plan reads its target in place only
//! point-wise, in steps that run before any step sums into it, so the result always equals
//! evaluating the right-hand side first.
//!
//! Each step names its kernel (`Kernel`); today every step is a fused loop nest, and a GEMM
//! call or a device kernel becomes another variant without changing the plan's shape.

use crate::ir::{AssignOp, Expr, IndexVar, Program, Slot, Target, TensorId, TensorOrigin, Term};

/// The program with one plan per statement, in order.
pub struct Plan {
    pub program: Program,
    pub statements: Vec<StatementPlan>,
}

pub struct StatementPlan {
    /// Index into `program.statements`.
    pub statement: usize,
    /// Set when the target is read other than point-wise: the right-hand side is first
    /// evaluated into this zero-initialised temporary (axes: the left-hand index variables).
    pub temporary: Option<Temporary>,
    /// The steps that write the statement's target (or its accumulator), in order.
    pub steps: Vec<Step>,
}

pub struct Temporary {
    pub steps: Vec<Step>,
}

/// `target[lhs] (=|+=) Σ_reduction (±term ± term …)`.
pub struct Step {
    pub overwrite: bool,
    /// Terms summed point-wise; their signs already include a `-=` of the statement.
    pub terms: Vec<Term>,
    /// The indices summed over, in loop order (after the left-hand ones).
    pub reduction: Vec<IndexVar>,
    pub kernel: Kernel,
}

/// How a step is executed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// A fused loop nest over the left-hand indices, then the summed ones.
    LoopNest,
}

pub fn lower(mut program: Program) -> Plan {
    let mut statements = Vec::new();
    for index in 0..program.statements.len() {
        let statement = &program.statements[index];
        let target_tensor = match &statement.target {
            Target::Tensor { access } => Some(access.tensor),
            _ => None,
        };
        let needs_temporary =
            target_tensor.is_some_and(|tensor| !reads_only_in_place(statement, tensor));
        let plan = if needs_temporary {
            let lhs: Vec<Slot> = statement.lhs_vars().cloned().map(Slot::Var).collect();
            let tensor = program.tensors.len();
            let text = format!("(right-hand side of `{}`)", statement);
            program.tensors.push(crate::ir::Tensor {
                origin: TensorOrigin::Temporary { statement: index },
                name: text.clone(),
                rank: lhs.len(),
                first_access: text.clone(),
            });
            let statement = &program.statements[index];
            let temporary = Temporary {
                steps: steps(&statement.terms, AssignOp::Add),
            };
            let copy = Term {
                negated: false,
                expr: Expr::Access(crate::ir::Access {
                    tensor,
                    slots: lhs,
                    text,
                    span: statement.span,
                }),
                reduction: Some(Vec::new()),
            };
            StatementPlan {
                statement: index,
                temporary: Some(temporary),
                steps: steps(&[copy], statement.op),
            }
        } else {
            // New tensors start at zero and scalars accumulate into a zero that the statement's
            // operator is applied to afterwards, so only existing tensors are overwritten.
            let op = match statement.target {
                Target::Tensor { .. } => statement.op,
                _ => AssignOp::Add,
            };
            StatementPlan {
                statement: index,
                temporary: None,
                steps: steps(&statement.terms, op),
            }
        };
        statements.push(plan);
    }
    Plan {
        program,
        statements,
    }
}

/// Whether every read of `target` on the right-hand side is exactly the target's own access,
/// in a term that sums over nothing: such reads see each element before it is written.
fn reads_only_in_place(statement: &crate::ir::Statement, target: TensorId) -> bool {
    statement.terms.iter().all(|term| {
        let sums_nothing = term.reduction.as_ref().is_some_and(Vec::is_empty);
        let mut in_place = true;
        term.expr.visit_accesses(&mut |access| {
            if access.tensor == target && !(sums_nothing && access.slots == statement.lhs) {
                in_place = false;
            }
        });
        in_place
    })
}

/// Element-wise terms (nothing summed) fused into one first step, then one step per summing
/// term. The first step overwrites for `=`; every later one adds.
fn steps(terms: &[Term], op: AssignOp) -> Vec<Step> {
    let negate = op == AssignOp::Sub;
    let signed = |term: &Term| Term {
        negated: term.negated ^ negate,
        ..term.clone()
    };
    let reduction = |term: &Term| term.reduction.clone().unwrap_or_default();
    let (pointwise, summing): (Vec<&Term>, Vec<&Term>) =
        terms.iter().partition(|term| reduction(term).is_empty());
    let mut steps = Vec::new();
    if !pointwise.is_empty() {
        steps.push(Step {
            overwrite: false,
            terms: pointwise.into_iter().map(signed).collect(),
            reduction: Vec::new(),
            kernel: Kernel::LoopNest,
        });
    }
    for term in summing {
        steps.push(Step {
            overwrite: false,
            terms: vec![signed(term)],
            reduction: reduction(term),
            kernel: Kernel::LoopNest,
        });
    }
    if let (Some(first), AssignOp::Assign) = (steps.first_mut(), op) {
        first.overwrite = true;
    }
    steps
}

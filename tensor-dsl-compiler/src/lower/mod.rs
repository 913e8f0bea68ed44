//! Reduction notation → an execution plan per statement: the kernel steps that compute each
//! update, in order. Invariant: a step that reads its target in place (point-wise) is the
//! first step of its statement, so every element is read before anything is summed into it.
//!
//! Each step names its kernel (`Kernel`, the engine that runs it): a fused loop nest, GEMM calls
//! for a summed product of two tensors, or pairwise contractions for a product of more. The
//! plan is backend-neutral: on a device the same kinds become a generated module, cuBLAS calls
//! or pairwise cuBLAS calls, chosen at run time by the tensors' backend, so no kind has a
//! device variant.

mod cost;
mod stages;

pub use cost::{cost, Cost, NetworkCost, NetworkPlanner, PairCost};
pub use stages::{written_stages, Stage, StageInput};

use crate::ir::display::write_sum;
use crate::ir::{AssignOp, BinaryOp, Expr, Function, IndexVar, Program, Scale, Term, Update};

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
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kernel {
    /// A fused loop nest over the left-hand indices, then the summed ones.
    LoopNest,
    /// `Σ a*b` of two tensors as GEMM calls on their strides; one role per loop (left-hand
    /// indices, then the summed ones). Small problems still run as a loop nest at run time.
    Gemm(Vec<Role>),
    /// A product of three or more tensors, contracted pairwise through temporaries in an order
    /// picked at run time from the extents (written-out loops for small ones take an order
    /// fixed at compile time: `written_stages`). Holds each factor's loops.
    Network(Vec<Vec<usize>>),
}

/// What a loop index is in a two-tensor contraction `C = Σ A·B`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// In A, B and C.
    Batch,
    /// In A and C.
    Left,
    /// In B and C.
    Right,
    /// In A and B, summed.
    Contracted,
}

pub fn lower(program: Program) -> Plan {
    let statements = program
        .statements
        .iter()
        .enumerate()
        .map(|(index, statement)| {
            let lhs: Vec<&IndexVar> = statement.lhs_vars().collect();
            let mut steps: Vec<Step> = statement.updates.iter().flat_map(steps).collect();
            for step in &mut steps {
                if let Some(roles) = gemm_roles(step, &lhs) {
                    step.kernel = Kernel::Gemm(roles);
                } else if let Some(factors) = network_factors(step, &lhs) {
                    step.kernel = Kernel::Network(factors);
                }
            }
            StatementPlan {
                statement: index,
                steps,
            }
        })
        .collect();
    let plan = Plan {
        program,
        statements,
    };
    if cfg!(debug_assertions) {
        if let Err(reason) = is_loop_notation(&plan) {
            panic!("tensor-dsl bug: lowered plan: {reason}");
        }
    }
    plan
}

/// Loop notation: each step's loops are the left-hand indices then its reduction, they bind
/// every index its terms use, and only a statement's first step reads its target in place.
pub fn is_loop_notation(plan: &Plan) -> Result<(), String> {
    for statement_plan in &plan.statements {
        let statement = &plan.program.statements[statement_plan.statement];
        let lhs: Vec<&IndexVar> = statement.lhs_vars().collect();
        let target = match &statement.target {
            crate::ir::Target::Tensor { access } => Some(access.tensor),
            _ => None,
        };
        for (k, step) in statement_plan.steps.iter().enumerate() {
            if step.reduction.iter().any(|var| lhs.contains(&var)) {
                return Err(format!(
                    "a step of `{statement}` sums over a left-hand index"
                ));
            }
            for term in &step.terms {
                let unbound = term
                    .expr
                    .vars()
                    .into_iter()
                    .find(|var| !lhs.contains(&var) && !step.reduction.contains(var));
                if let Some(var) = unbound {
                    return Err(format!("index `{}` of `{term}` has no loop", var.name));
                }
                let mut reads_target = false;
                term.expr
                    .visit_accesses(&mut |access| reads_target |= Some(access.tensor) == target);
                if reads_target && (k > 0 || !step.reduction.is_empty()) {
                    return Err(format!("`{statement}` reads its target after writing it"));
                }
            }
        }
    }
    Ok(())
}

impl StatementPlan {
    /// The plan in loop notation, one line per step, e.g.
    /// `loop nest: ∀i ∀j ∀k c[i,j] += a[i,k]*b[k,j]`.
    pub fn describe(&self, program: &Program) -> Vec<String> {
        let statement = &program.statements[self.statement];
        let target = statement.target_text();
        let lhs: Vec<&IndexVar> = statement.lhs_vars().collect();
        self.steps
            .iter()
            .map(|step| {
                let loops: String = lhs
                    .iter()
                    .copied()
                    .chain(&step.reduction)
                    .map(|var| format!("∀{} ", var.name))
                    .collect();
                let (prologue, op) = match &step.mode {
                    Mode::Assign if step.reduction.is_empty() => (String::new(), "="),
                    Mode::Assign => (format!("{target} = 0; "), "+="),
                    Mode::Add => (String::new(), "+="),
                    Mode::Scale(beta) => (format!("{target} *= {beta}; "), "+="),
                };
                let op = match (op, step.negate) {
                    ("+=", true) => "-=",
                    ("=", true) => "= -",
                    (op, _) => op,
                };
                let mut value = String::new();
                write_sum(&mut value, &step.terms, Term::summand).expect("writing to a String");
                let kernel = match step.kernel {
                    Kernel::LoopNest => "loop nest".to_owned(),
                    Kernel::Gemm(ref roles) => {
                        let roles: Vec<&str> = roles
                            .iter()
                            .map(|role| match role {
                                Role::Batch => "batch",
                                Role::Left => "m",
                                Role::Right => "n",
                                Role::Contracted => "k",
                            })
                            .collect();
                        format!("gemm ({})", roles.join(" "))
                    }
                    Kernel::Network(ref factors) => {
                        format!("pairwise contraction of {} factors", factors.len())
                    }
                };
                format!("{kernel}: {prologue}{loops}{target} {op} {value}")
            })
            .collect()
    }
}

/// The two factors of a step whose one term is a product of two tensors, each perhaps
/// conjugated (`conj(a[k, i]) * b[k, j]`): the access and whether the GEMM conjugates it.
pub fn gemm_factors(step: &Step) -> Option<[(&crate::ir::Access, bool); 2]> {
    let [term] = &step.terms[..] else {
        return None;
    };
    let Expr::Binary(BinaryOp::Mul, left, right) = &term.expr else {
        return None;
    };
    Some([gemm_factor(left)?, gemm_factor(right)?])
}

fn gemm_factor(expr: &Expr) -> Option<(&crate::ir::Access, bool)> {
    match expr {
        Expr::Access(access) => Some((access, false)),
        Expr::Call(Function::Conj, arguments, _) => match &arguments[..] {
            [Expr::Access(access)] => Some((access, true)),
            _ => None,
        },
        _ => None,
    }
}

/// The roles of a step's loops when it is a GEMM: one summing term that is the product of two
/// tensors (each perhaps conjugated), every loop index in exactly one role, and a matrix on at
/// least one side.
fn gemm_roles(step: &Step, lhs: &[&IndexVar]) -> Option<Vec<Role>> {
    let [(a, _), (b, _)] = gemm_factors(step)?;
    if step.reduction.is_empty() {
        return None;
    }
    let uses = |access: &crate::ir::Access, var: &IndexVar| access.vars().any(|v| v == var);
    let roles: Vec<Role> = lhs
        .iter()
        .copied()
        .chain(&step.reduction)
        .map(|var| {
            let out = lhs.contains(&var);
            match (uses(a, var), uses(b, var), out) {
                (true, true, true) => Some(Role::Batch),
                (true, false, true) => Some(Role::Left),
                (false, true, true) => Some(Role::Right),
                (true, true, false) => Some(Role::Contracted),
                _ => None,
            }
        })
        .collect::<Option<_>>()?;
    let has_matrix_side = roles
        .iter()
        .any(|role| matches!(role, Role::Left | Role::Right));
    has_matrix_side.then_some(roles)
}

/// The loops of each factor when a step sums a product of three or more tensors (and nothing
/// else), which pairwise contraction in a good order beats by orders of magnitude.
fn network_factors(step: &Step, lhs: &[&IndexVar]) -> Option<Vec<Vec<usize>>> {
    if step.reduction.is_empty() {
        return None;
    }
    let factors = product_factors(step)?;
    let loops: Vec<&IndexVar> = lhs.iter().copied().chain(&step.reduction).collect();
    if factors.len() < 3 || loops.len() > 64 {
        return None;
    }
    Some(
        factors
            .iter()
            .map(|(access, _)| {
                let mut uses: Vec<usize> = access
                    .vars()
                    .map(|var| {
                        loops
                            .iter()
                            .position(|l| *l == var)
                            .expect("a loop per index")
                    })
                    .collect();
                uses.sort_unstable();
                uses.dedup();
                uses
            })
            .collect(),
    )
}

/// The factors of a step whose one term is a product of tensors, each perhaps conjugated
/// (`conj(c[p, i]) * h[p, q] * c[q, j]`), in reading order: each access and whether it is
/// conjugated (a flag of the pairwise GEMM that reads it, as for [`gemm_factors`]).
pub fn product_factors(step: &Step) -> Option<Vec<(&crate::ir::Access, bool)>> {
    let [term] = &step.terms[..] else {
        return None;
    };
    let mut factors = Vec::new();
    product_of_accesses(&term.expr, &mut factors).then_some(factors)
}

fn product_of_accesses<'e>(
    expr: &'e Expr,
    factors: &mut Vec<(&'e crate::ir::Access, bool)>,
) -> bool {
    match expr {
        Expr::Binary(BinaryOp::Mul, left, right) => {
            product_of_accesses(left, factors) && product_of_accesses(right, factors)
        }
        _ => match gemm_factor(expr) {
            Some(factor) => {
                factors.push(factor);
                true
            }
            None => false,
        },
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

//! The system under test, without rustc: walks a lowered `Plan` and makes exactly the runtime
//! calls `emit/cpu.rs` writes for it — operand accesses (detached from the target where their
//! memory overlaps it), the target's own read for in-place operands, one proven
//! `__private::Step::new(target.at(&axes), mode, α, extents, n_out, [operand.at(&axes), …])`
//! per step, then `evaluate(step, body)`, `contract(step)` or `contract_network(step, &cache)`
//! as the step's kernel says. The body is an interpreter of the step's terms over the operand
//! values, operands numbered in the order emit numbers them.
//!
//! Inputs are real runtime tensors: owned ones, and views (`slice_axis`, `permuted_axes`) of
//! padded backing tensors, with a second name for a writable view passed as the same view.

use std::collections::HashMap;

use tensor_dsl_compiler::ir::{
    AssignOp, BinaryOp, Expr, Function, Position, Program, Scale, Slot, Statement, Target,
    TensorId, TensorOrigin,
};
use tensor_dsl_compiler::lower::{Kernel, Mode, Plan, Step};
use tensor_dsl_runtime::__private::{
    self as rt, Access, Axis, Detached, Operand, PlanCache, TargetAccess, TargetOwned, TargetShared,
};
use tensor_dsl_runtime::{Tensor, TensorView, TensorViewMut};

use crate::block::{Block, InputKind, ViewSpec};
use crate::memory::{self, literal_value};
use crate::Skip;

/// Calls `$f::<L, N>($call)` for the run-time `l ≤ MAX_LOOPS` and `n`, one of `$ns`.
macro_rules! dispatch {
    ($f:ident, $l:expr, $n:expr, $call:expr; $($ns:literal)*) => {
        dispatch!(@loops $f, $l, $n, $call; [$($ns)*]; 0 1 2 3 4 5 6 7 8)
    };
    (@loops $f:ident, $l:expr, $n:expr, $call:expr; $ns:tt; $($ls:literal)*) => {
        match $l {
            $($ls => dispatch!(@operands $f, $ls, $n, $call; $ns),)*
            _ => unreachable!("loop count checked"),
        }
    };
    (@operands $f:ident, $l:literal, $n:expr, $call:expr; [$($ns:literal)*]) => {
        match $n {
            $($ns => $f::<$l, $ns>($call),)*
            _ => unreachable!("operand count checked"),
        }
    };
}

/// Calls `$f::<L>($call)` for the run-time `l`.
macro_rules! dispatch_loops {
    ($f:ident, $l:expr, $call:expr) => {
        dispatch_loops!(@loops $f, $l, $call; 0 1 2 3 4 5 6 7 8)
    };
    (@loops $f:ident, $l:expr, $call:expr; $($ls:literal)*) => {
        match $l {
            $($ls => $f::<$ls>($call),)*
            _ => unreachable!("loop count checked"),
        }
    };
}

/// How many steps of each kind ran (for the tests' statistics): loop nests, GEMM steps,
/// pairwise contractions, and the steps big enough for the runtime's GEMM calls (at least 32³
/// multiply-adds) or for its threads (at least 2¹⁸ element visits).
pub static STEPS: [std::sync::atomic::AtomicUsize; 5] = [
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
    std::sync::atomic::AtomicUsize::new(0),
];

fn count(kind: usize) {
    STEPS[kind].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

/// The most loops and operands one step may have here (const generics are dispatched over
/// `0..=MAX_LOOPS` × `0..=MAX_OPERANDS`).
pub const MAX_LOOPS: usize = 8;
pub const MAX_OPERANDS: usize = 6;

/// What a block leaves behind, for comparison.
#[derive(Clone, Debug)]
pub struct Outcome {
    /// Per input: its backing buffer's elements (`None` for an alias).
    pub inputs: Vec<Option<Vec<f64>>>,
    /// The user's `let`s in order: tensors as at the end of the block, scalars as made.
    pub lets: Vec<Made>,
    /// Every scalar variable at the end, by name.
    pub scalars: Vec<(String, f64)>,
}

#[derive(Clone, Debug)]
pub enum Made {
    Tensor {
        name: String,
        shape: Vec<usize>,
        values: Vec<f64>,
    },
    Scalar {
        name: String,
        value: f64,
    },
}

/// Where a tensor binding's elements are: a buffer, seen whole or through a view.
#[derive(Clone, Debug)]
struct Handle {
    buffer: usize,
    view: Option<ViewSpec>,
    shape: Vec<usize>,
}

struct State<'p> {
    program: &'p Program,
    block: &'p Block,
    /// One tensor per buffer: inputs first (`None` for aliases), then `let` results. The
    /// target's is taken out while its statement runs.
    buffers: Vec<Option<Tensor<f64>>>,
    handles: HashMap<TensorId, Handle>,
    input_handles: Vec<Handle>,
    scalars: HashMap<String, f64>,
    lets: Vec<(String, Result<usize, f64>)>,
}

pub fn run(plan: &Plan, block: &Block) -> Result<Outcome, Skip> {
    let (backings, layouts) = memory::inputs(block);
    let mut buffers = Vec::new();
    let mut input_handles = Vec::new();
    for (k, (backing, input)) in backings.iter().zip(&block.inputs).enumerate() {
        buffers.push(backing.as_ref().map(|backing| {
            Tensor::from_shape_vec(backing.shape.clone(), backing.data.clone())
                .expect("a backing buffer holds its elements")
        }));
        let (buffer, view) = match &input.kind {
            InputKind::Owned => (k, None),
            InputKind::View(spec) | InputKind::ViewMut(spec) => (k, Some(spec.clone())),
            InputKind::AliasOf(of) => match &block.inputs[*of].kind {
                InputKind::ViewMut(spec) => (*of, Some(spec.clone())),
                _ => return Err(Skip::Unsupported("alias of a non-view".into())),
            },
        };
        input_handles.push(Handle {
            buffer,
            view,
            shape: input.shape.clone(),
        });
    }
    let mut state = State {
        program: &plan.program,
        block,
        buffers,
        handles: HashMap::new(),
        input_handles,
        scalars: block.scalars.iter().cloned().collect(),
        lets: Vec::new(),
    };
    // The views must address what the naive interpreter's layouts address.
    for (k, handle) in state.input_handles.iter().enumerate() {
        // (Strides of an empty view are whatever the runtime picks: nothing is addressed.)
        if let (Some(spec), false) = (&handle.view, handle.shape.contains(&0)) {
            let tensor = state.buffers[handle.buffer].as_ref().expect("a buffer");
            let view = make_view(tensor, spec);
            let expected: Vec<isize> = layouts[k].strides.iter().map(|&s| s as isize).collect();
            assert_eq!(view.shape(), &layouts[k].shape[..], "harness: view shape");
            assert_eq!(view.strides(), &expected[..], "harness: view strides");
        }
    }
    for statement_plan in &plan.statements {
        let statement = &plan.program.statements[statement_plan.statement];
        state.statement(statement, &statement_plan.steps)?;
    }
    let inputs = block
        .inputs
        .iter()
        .enumerate()
        .map(|(k, input)| match input.kind {
            InputKind::AliasOf(_) => None,
            _ => Some(
                state.buffers[k]
                    .as_ref()
                    .expect("a buffer")
                    .as_slice()
                    .to_vec(),
            ),
        })
        .collect();
    let lets = state
        .lets
        .iter()
        .map(|(name, made)| match made {
            Ok(buffer) => {
                let tensor = state.buffers[*buffer].as_ref().expect("a buffer");
                Made::Tensor {
                    name: name.clone(),
                    shape: tensor.shape().to_vec(),
                    values: tensor.as_slice().to_vec(),
                }
            }
            Err(value) => Made::Scalar {
                name: name.clone(),
                value: *value,
            },
        })
        .collect();
    let mut scalars: Vec<(String, f64)> = state.scalars.into_iter().collect();
    scalars.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Outcome {
        inputs,
        lets,
        scalars,
    })
}

fn make_view<'t>(tensor: &'t Tensor<f64>, spec: &ViewSpec) -> TensorView<'t, f64> {
    let mut view = tensor.view();
    let shape = tensor.shape().to_vec();
    for (q, &backing) in shape.iter().enumerate() {
        let extent = backing - spec.pad_lo[q] - spec.pad_hi[q];
        view = view.slice_axis(q, spec.pad_lo[q]..spec.pad_lo[q] + extent);
    }
    view.permuted_axes(&spec.inverse())
}

fn make_view_mut<'t>(tensor: &'t mut Tensor<f64>, spec: &ViewSpec) -> TensorViewMut<'t, f64> {
    let shape = tensor.shape().to_vec();
    let mut view = tensor.view_mut();
    for (q, &backing) in shape.iter().enumerate() {
        let extent = backing - spec.pad_lo[q] - spec.pad_hi[q];
        view = view.slice_axis(q, spec.pad_lo[q]..spec.pad_lo[q] + extent);
    }
    view.permuted_axes(&spec.inverse())
}

/// A step's value at one point, over its operands' elements (`__x` in the emitted closure).
#[derive(Debug)]
pub enum Body {
    Operand(usize),
    Constant(f64),
    Neg(Box<Body>),
    Binary(BinaryOp, Box<Body>, Box<Body>),
    Call(Function, Vec<Body>),
}

impl Body {
    pub fn eval(&self, x: &[f64]) -> f64 {
        match self {
            Body::Operand(k) => x[*k],
            Body::Constant(value) => *value,
            Body::Neg(operand) => -operand.eval(x),
            Body::Binary(op, left, right) => {
                let (a, b) = (left.eval(x), right.eval(x));
                match op {
                    BinaryOp::Add => a + b,
                    BinaryOp::Sub => a - b,
                    BinaryOp::Mul => a * b,
                    BinaryOp::Div => a / b,
                }
            }
            Body::Call(function, args) => {
                let a = args[0].eval(x);
                match function {
                    Function::Exp => a.exp(),
                    Function::Ln => a.ln(),
                    Function::Sqrt => a.sqrt(),
                    Function::Abs => a.abs(),
                    Function::Sin => a.sin(),
                    Function::Cos => a.cos(),
                    Function::Tan => a.tan(),
                    Function::Tanh => a.tanh(),
                    Function::Sigmoid => 1.0 / (1.0 + (-a).exp()),
                    Function::Max => a.max(args[1].eval(x)),
                    Function::Min => a.min(args[1].eval(x)),
                    Function::Pow => a.powf(args[1].eval(x)),
                    Function::Powi(n) => a.powi(crate::memory::literal_exponent(*n)),
                    Function::Conj | Function::Re => a,
                    Function::Im => 0.0,
                }
            }
        }
    }
}

/// Where an operand of a statement is read from.
enum Source<'v> {
    Tensor(&'v Tensor<f64>),
    View(TensorView<'v, f64>),
    /// The target's own writable view under another name (`let ra = &a;`).
    TargetView,
}

/// Everything one kernel call needs (the arguments of `Step::new` and the kernel).
struct Call<'a> {
    target: &'a TargetAccess<'a, f64>,
    target_axes: Vec<Axis>,
    mode: rt::Mode<f64>,
    alpha: f64,
    extents: Vec<usize>,
    n_out: usize,
    operands: Vec<(Access<'a, f64>, Vec<Axis>)>,
    body: &'a Body,
}

impl State<'_> {
    fn handle(&self, tensor: TensorId) -> Result<Handle, Skip> {
        if let Some(handle) = self.handles.get(&tensor) {
            return Ok(handle.clone());
        }
        match &self.program.tensors[tensor].origin {
            TensorOrigin::External(tokens) => {
                let name = tokens.to_string();
                let k = self
                    .block
                    .inputs
                    .iter()
                    .position(|input| input.name == name)
                    .ok_or_else(|| Skip::Unsupported(format!("unknown tensor `{name}`")))?;
                Ok(self.input_handles[k].clone())
            }
            TensorOrigin::Rust(tokens) => Err(Skip::Unsupported(format!(
                "Rust-expression tensor {tokens}"
            ))),
            TensorOrigin::Let { name, .. } => {
                panic!("plan reads `{name}` (tensor {tensor}) before the statement making it ran")
            }
        }
    }

    fn scalar(&self, text: &str) -> f64 {
        literal_value(text)
            .or_else(|| self.scalars.get(text.trim()).copied())
            .unwrap_or_else(|| panic!("plan reads unknown scalar `{text}`"))
    }

    fn position(&self, position: Position) -> usize {
        match position {
            Position::Literal(p) => p,
            Position::Computed(k) => {
                literal_value(&self.program.positions[k].to_string()).expect("a position") as usize
            }
        }
    }

    /// The extent of each index of the statement, from the shapes of what it accesses (the
    /// prelude's `unify`).
    fn extents(&self, statement: &Statement) -> Result<HashMap<String, usize>, Skip> {
        let mut extents = HashMap::new();
        let mut accesses = Vec::new();
        if let Target::Tensor { access } = &statement.target {
            accesses.push(access);
        }
        for term in statement.terms() {
            term.expr
                .visit_accesses(&mut |access| accesses.push(access));
        }
        for access in accesses {
            let handle = self.handle(access.tensor)?;
            assert_eq!(
                handle.shape.len(),
                access.slots.len(),
                "plan accesses {} with the wrong rank",
                access.text
            );
            for (slot, &extent) in access.slots.iter().zip(&handle.shape) {
                match slot {
                    Slot::Var(var) => {
                        let known = *extents.entry(var.name.clone()).or_insert(extent);
                        assert_eq!(
                            known, extent,
                            "plan needs two extents for `{}` (in {})",
                            var.name, access.text
                        );
                    }
                    Slot::Fixed(position) => assert!(
                        self.position(*position) < extent,
                        "plan reads position out of bounds in {}",
                        access.text
                    ),
                }
            }
        }
        Ok(extents)
    }

    fn statement(&mut self, statement: &Statement, steps: &[Step]) -> Result<(), Skip> {
        let scalars: Vec<f64> = statement
            .scalars
            .iter()
            .map(|scalar| self.scalar(&scalar.tokens.to_string()))
            .collect();
        let extents = self.extents(statement)?;
        // The tensors the steps read, in first-read order (emit's `operand_accesses`).
        let mut read: Vec<TensorId> = Vec::new();
        for term in steps.iter().flat_map(|step| &step.terms) {
            term.expr.visit_accesses(&mut |access| {
                if !read.contains(&access.tensor) {
                    read.push(access.tensor);
                }
            });
        }
        let mut handles = HashMap::new();
        for &tensor in &read {
            handles.insert(tensor, self.handle(tensor)?);
        }
        match &statement.target {
            Target::NewTensor { name, tensor, .. } => {
                let shape: Vec<usize> =
                    statement.lhs_vars().map(|var| extents[&var.name]).collect();
                let mut result = Tensor::<f64>::zeros(shape.clone());
                {
                    let sources = self.sources(&read, &handles, None);
                    let accesses = accesses(&read, &sources, None);
                    let target = TargetOwned::__tdsl_target(&mut result);
                    for step in steps {
                        self.step(
                            statement,
                            step,
                            &statement.lhs,
                            &target,
                            None,
                            &accesses,
                            &extents,
                            &scalars,
                        )?;
                    }
                }
                let buffer = self.buffers.len();
                self.buffers.push(Some(result));
                self.handles.insert(
                    *tensor,
                    Handle {
                        buffer,
                        view: None,
                        shape,
                    },
                );
                if !self.program.makes_temporary(statement) {
                    self.lets.push((name.to_string(), Ok(buffer)));
                }
            }
            Target::NewScalar { .. } | Target::Scalar { .. } => {
                let mut sum = 0.0f64;
                {
                    let sources = self.sources(&read, &handles, None);
                    let accesses = accesses(&read, &sources, None);
                    let target = TargetAccess::scalar(&mut sum);
                    for step in steps {
                        self.step(
                            statement,
                            step,
                            &[],
                            &target,
                            None,
                            &accesses,
                            &extents,
                            &scalars,
                        )?;
                    }
                }
                match &statement.target {
                    Target::NewScalar { name, .. } => {
                        self.scalars.insert(name.to_string(), sum);
                        self.lets.push((name.to_string(), Err(sum)));
                    }
                    Target::Scalar { place, .. } => {
                        let place = place.to_string();
                        let value = self.scalars.get_mut(&place).expect("a scalar target");
                        // The steps already negate for `-=`.
                        match statement.op() {
                            AssignOp::Assign => *value = sum,
                            AssignOp::Add | AssignOp::Sub => *value += sum,
                        }
                    }
                    _ => unreachable!(),
                }
            }
            Target::Tensor { access } => {
                let handle = self.handle(access.tensor)?;
                let operands: Vec<TensorId> = read
                    .iter()
                    .copied()
                    .filter(|&tensor| tensor != access.tensor)
                    .collect();
                let mut taken = self.buffers[handle.buffer]
                    .take()
                    .expect("the target's buffer");
                let result = match &handle.view {
                    Some(spec) => {
                        let view = make_view_mut(&mut taken, spec);
                        let target = TargetShared::__tdsl_target(&view);
                        self.tensor_steps(
                            statement,
                            steps,
                            &target,
                            Some((handle.buffer, &view)),
                            &operands,
                            &handles,
                            &extents,
                            &scalars,
                        )
                    }
                    None => {
                        let target = TargetOwned::__tdsl_target(&mut taken);
                        self.tensor_steps(
                            statement, steps, &target, None, &operands, &handles, &extents,
                            &scalars,
                        )
                    }
                };
                self.buffers[handle.buffer] = Some(taken);
                result?;
            }
        }
        Ok(())
    }

    /// The steps of a statement writing an existing tensor: operands detached from the
    /// target where they overlap it (emit's `detach_operands`), the target's own elements read
    /// in place.
    #[allow(clippy::too_many_arguments)]
    fn tensor_steps(
        &self,
        statement: &Statement,
        steps: &[Step],
        target: &TargetAccess<'_, f64>,
        target_view: Option<(usize, &TensorViewMut<'_, f64>)>,
        operands: &[TensorId],
        handles: &HashMap<TensorId, Handle>,
        extents: &HashMap<String, usize>,
        scalars: &[f64],
    ) -> Result<(), Skip> {
        let sources = self.sources(operands, handles, target_view.map(|(buffer, _)| buffer));
        let plain = accesses(operands, &sources, target_view.map(|(_, view)| view));
        let detached: Vec<(TensorId, Detached<'_, f64>)> = plain
            .iter()
            .map(|(tensor, access)| (*tensor, target.detach(*access)))
            .collect();
        let accesses: Vec<(TensorId, Access<'_, f64>)> = detached
            .iter()
            .map(|(tensor, held)| (*tensor, held.access()))
            .collect();
        let Target::Tensor { access } = &statement.target else {
            unreachable!()
        };
        for step in steps {
            self.step(
                statement,
                step,
                &statement.lhs,
                target,
                Some(access.tensor),
                &accesses,
                extents,
                scalars,
            )?;
        }
        Ok(())
    }

    /// What each read tensor is read from; `target_buffer` is taken out (its other names read
    /// the target's view).
    fn sources<'s>(
        &'s self,
        tensors: &[TensorId],
        handles: &HashMap<TensorId, Handle>,
        target_buffer: Option<usize>,
    ) -> Vec<Source<'s>> {
        tensors
            .iter()
            .map(|tensor| {
                let handle = &handles[tensor];
                if Some(handle.buffer) == target_buffer {
                    return Source::TargetView;
                }
                let backing = self.buffers[handle.buffer]
                    .as_ref()
                    .expect("an operand's buffer");
                match &handle.view {
                    Some(spec) => Source::View(make_view(backing, spec)),
                    None => Source::Tensor(backing),
                }
            })
            .collect()
    }

    /// One kernel call, as emit's `step` writes it.
    #[allow(clippy::too_many_arguments)]
    fn step(
        &self,
        statement: &Statement,
        step: &Step,
        lhs: &[Slot],
        target: &TargetAccess<'_, f64>,
        in_place: Option<TensorId>,
        accesses: &[(TensorId, Access<'_, f64>)],
        extents: &HashMap<String, usize>,
        scalars: &[f64],
    ) -> Result<(), Skip> {
        let lhs_vars: Vec<&str> = statement.lhs_vars().map(|v| v.name.as_str()).collect();
        let loops: Vec<&str> = lhs_vars
            .iter()
            .copied()
            .chain(step.reduction.iter().map(|v| v.name.as_str()))
            .collect();
        let axes = |slots: &[Slot]| -> Vec<Axis> {
            slots
                .iter()
                .map(|slot| match slot {
                    Slot::Var(var) => Axis::Loop(
                        loops
                            .iter()
                            .position(|l| *l == var.name)
                            .expect("every index of a step is one of its loops"),
                    ),
                    Slot::Fixed(position) => Axis::Fixed(self.position(*position)),
                })
                .collect()
        };
        let read = target.read();
        let mut operands: Vec<(Access<'_, f64>, Vec<Axis>)> = Vec::new();
        let mut element = |access: &tensor_dsl_compiler::ir::Access| -> Body {
            let handle = if Some(access.tensor) == in_place {
                read
            } else {
                accesses
                    .iter()
                    .find(|(tensor, _)| *tensor == access.tensor)
                    .expect("an operand access")
                    .1
            };
            operands.push((handle, axes(&access.slots)));
            Body::Operand(operands.len() - 1)
        };
        let (alpha, body) = match &step.terms[..] {
            [term] => (
                scale(&term.scale, step.negate, scalars),
                body(&term.expr, &mut element, scalars),
            ),
            terms => {
                let mut sum: Option<Body> = None;
                for term in terms {
                    let scale = Body::Constant(scale(&term.scale, false, scalars));
                    let value = body(&term.expr, &mut element, scalars);
                    let product = Body::Binary(BinaryOp::Mul, Box::new(scale), Box::new(value));
                    sum = Some(match sum {
                        None => product,
                        Some(sum) => Body::Binary(BinaryOp::Add, Box::new(sum), Box::new(product)),
                    });
                }
                (
                    scale(&Scale::one(), step.negate, scalars),
                    sum.expect("a step has terms"),
                )
            }
        };
        let mode = match &step.mode {
            Mode::Assign => rt::Mode::Assign,
            Mode::Add => rt::Mode::Add,
            Mode::Scale(beta) => rt::Mode::Scale(scale(beta, false, scalars)),
        };
        let call = Call {
            target,
            target_axes: axes(lhs),
            mode,
            alpha,
            extents: loops.iter().map(|l| extents[*l]).collect(),
            n_out: lhs_vars.len(),
            operands,
            body: &body,
        };
        let (l, n) = (call.extents.len(), call.operands.len());
        if l > MAX_LOOPS || n > MAX_OPERANDS {
            return Err(Skip::Unsupported(format!(
                "a step with {l} loops and {n} operands"
            )));
        }
        let visits: usize = call.extents.iter().product();
        if visits >= 1 << 15 && !matches!(step.kernel, Kernel::LoopNest) {
            count(3);
        }
        if visits * (n + 1) >= 1 << 18 {
            count(4);
        }
        match &step.kernel {
            Kernel::LoopNest => count(0),
            Kernel::Gemm(_) => count(1),
            Kernel::Network(_) => count(2),
        }
        match &step.kernel {
            Kernel::LoopNest => dispatch!(evaluate_step, l, n, &call; 0 1 2 3 4 5 6),
            Kernel::Network(_) => {
                assert!(
                    n >= 3,
                    "tensor-dsl bug: a pairwise contraction of {n} factors"
                );
                dispatch!(network_step, l, n, &call; 3 4 5 6)
            }
            Kernel::Gemm(_) => {
                assert_eq!(n, 2, "tensor-dsl bug: a GEMM step with {n} operands");
                dispatch_loops!(gemm_step, l, &call)
            }
        }
        Ok(())
    }
}

/// The runtime access of each read tensor.
fn accesses<'s>(
    tensors: &[TensorId],
    sources: &'s [Source<'s>],
    target_view: Option<&'s TensorViewMut<'_, f64>>,
) -> Vec<(TensorId, Access<'s, f64>)> {
    tensors
        .iter()
        .zip(sources)
        .map(|(&tensor, source)| {
            let access = match source {
                Source::Tensor(tensor) => Operand::__tdsl_operand(*tensor),
                Source::View(view) => Operand::__tdsl_operand(view),
                Source::TargetView => {
                    Operand::__tdsl_operand(target_view.expect("the target's view"))
                }
            };
            (tensor, access)
        })
        .collect()
}

/// A scale as emit computes it: `lit(coefficient) * scalar * … / divisor / …`, negated for
/// `-=`.
fn scale(scale: &Scale, negate: bool, scalars: &[f64]) -> f64 {
    let coefficient = if negate {
        -scale.coefficient
    } else {
        scale.coefficient
    };
    let product = scale
        .scalars
        .iter()
        .fold(coefficient, |product, &k| product * scalars[k]);
    scale
        .divisors
        .iter()
        .fold(product, |quotient, &k| quotient / scalars[k])
}

/// The body of a term, numbering operands through `element` in emit's order.
fn body(
    expr: &Expr,
    element: &mut dyn FnMut(&tensor_dsl_compiler::ir::Access) -> Body,
    scalars: &[f64],
) -> Body {
    match expr {
        Expr::Access(access) => element(access),
        Expr::Literal(literal) => Body::Constant(literal.value),
        Expr::Scalar(k) => Body::Constant(scalars[*k]),
        Expr::Neg(operand) => Body::Neg(Box::new(body(operand, element, scalars))),
        Expr::Binary(op, left, right) => {
            let left = body(left, element, scalars);
            let right = body(right, element, scalars);
            Body::Binary(*op, Box::new(left), Box::new(right))
        }
        Expr::Call(function, args, _) => Body::Call(
            *function,
            args.iter().map(|arg| body(arg, element, scalars)).collect(),
        ),
    }
}

fn proven<'a, const L: usize, const N: usize>(call: &'a Call<'a>) -> rt::Step<'a, f64, L, N> {
    let extents: [usize; L] = call.extents.as_slice().try_into().expect("L loops");
    let uses: Vec<rt::Use<'a, f64>> = call
        .operands
        .iter()
        .map(|(access, axes)| access.at(axes))
        .collect();
    let Ok(uses) = <[rt::Use<'a, f64>; N]>::try_from(uses) else {
        unreachable!("N operands")
    };
    rt::Step::new(
        call.target.at(&call.target_axes),
        call.mode,
        call.alpha,
        extents,
        call.n_out,
        uses,
    )
}

fn evaluate_step<const L: usize, const N: usize>(call: &Call) {
    let body = call.body;
    rt::evaluate(proven::<L, N>(call), move |x: [f64; N]| body.eval(&x));
}

fn network_step<const L: usize, const N: usize>(call: &Call) {
    // emit keeps one cache per call site; a fresh one plans the same order.
    let cache = PlanCache::new();
    // The fuzzed elements are f64, each its own conjugate: no factor's flag changes anything.
    rt::contract_network(proven::<L, N>(call), [false; N], &cache);
}

fn gemm_step<const L: usize>(call: &Call) {
    // The fuzzed elements are f64, each its own conjugate: a `conj` flag changes nothing.
    rt::contract(proven::<L, 2>(call), [false; 2]);
}

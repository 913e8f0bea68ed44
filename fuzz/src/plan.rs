//! The system under test, without rustc: walks a lowered `Plan` and makes exactly the runtime
//! calls `emit/cpu.rs` writes for it — operand accesses (detached from the target where their
//! memory overlaps it), the target's own read for in-place operands, one proven
//! `__private::Step::new(target.at(&axes), mode, α, extents, n_out, [operand.at(&axes), …])`
//! per step, then `evaluate(step, body, paths)`, `contract(step)` or
//! `contract_network(step, &cache)` as the step's kernel says. The body is an interpreter of
//! the step's terms over the operand values, operands numbered in the order emit numbers them.
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
use tensor_dsl_runtime::{c64, Tensor, TensorView, TensorViewMut};

use crate::block::{Block, InputKind, ViewSpec};
use crate::memory::{self, literal_value};
use crate::numeric::Fuzzed;
use crate::Skip;

/// Calls `$f::<_, L, N>($call)` for the run-time `l`, one of `$ls`, and `n`, one of `$ns`.
macro_rules! dispatch {
    ($f:ident, $l:expr, $n:expr, $call:expr; [$($ls:literal)*] [$($ns:literal)*]) => {
        dispatch!(@loops $f, $l, $n, $call; [$($ns)*]; $($ls)*)
    };
    (@loops $f:ident, $l:expr, $n:expr, $call:expr; $ns:tt; $($ls:literal)*) => {
        match $l {
            $($ls => dispatch!(@operands $f, $ls, $n, $call; $ns),)*
            _ => unreachable!("loop count checked"),
        }
    };
    (@operands $f:ident, $l:literal, $n:expr, $call:expr; [$($ns:literal)*]) => {
        match $n {
            $($ns => $f::<_, $l, $ns>($call),)*
            _ => unreachable!("operand count checked"),
        }
    };
}

/// Calls `$f::<_, L>($call)` for the run-time `l`, one of `$ls`.
macro_rules! dispatch_loops {
    ($f:ident, $l:expr, $call:expr; [$($ls:literal)*]) => {
        dispatch_loops!(@loops $f, $l, $call; $($ls)*)
    };
    (@loops $f:ident, $l:expr, $call:expr; $($ls:literal)*) => {
        match $l {
            $($ls => $f::<_, $ls>($call),)*
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

/// The most loops and operands one step of an `f64` block may have here (const generics are
/// dispatched over `0..=MAX_LOOPS` × `0..=MAX_OPERANDS`).
pub const MAX_LOOPS: usize = 8;
pub const MAX_OPERANDS: usize = 6;

/// The most loops for the other element types: each type instantiates every engine once per
/// (loops, operands) pair, and the full range in three types tripled the crate's build (past
/// 15 min in release), so their blocks use only this many index letters
/// ([`crate::numeric::ElementType::letters`]); the `f64` blocks cover wider steps.
pub const TYPED_MAX_LOOPS: usize = 5;

/// An element type a plan runs in, with the reach of its const-generic dispatch.
pub trait Dispatched: Fuzzed {
    /// The most loops and operands a step may have.
    const REACH: (usize, usize);
    /// Runs `call` with the kernel `kernel`, `l` loops and `n` operands, within [`Self::REACH`].
    fn run_kernel(kernel: &Kernel, l: usize, n: usize, call: &Call<'_, Self>);
}

/// Implements [`Dispatched`] for a type over the loop counts `$ls` and operand counts `$ns`
/// (of which the network steps take those from 3).
macro_rules! dispatched {
    ($t:ty, [$($ls:literal)*], [$($ns:literal)*], [$($nets:literal)*]) => {
        impl Dispatched for $t {
            const REACH: (usize, usize) = (
                [$($ls),*][[$($ls),*].len() - 1],
                [$($ns),*][[$($ns),*].len() - 1],
            );
            fn run_kernel(kernel: &Kernel, l: usize, n: usize, call: &Call<'_, Self>) {
                match kernel {
                    Kernel::LoopNest => dispatch!(evaluate_step, l, n, call; [$($ls)*] [$($ns)*]),
                    Kernel::Network(_) => {
                        assert!(n >= 3, "tensor-dsl bug: a pairwise contraction of {n} factors");
                        dispatch!(network_step, l, n, call; [$($ls)*] [$($nets)*])
                    }
                    Kernel::Gemm(_) => {
                        assert_eq!(n, 2, "tensor-dsl bug: a GEMM step with {n} operands");
                        dispatch_loops!(gemm_step, l, call; [$($ls)*])
                    }
                }
            }
        }
    };
}

dispatched!(f64, [0 1 2 3 4 5 6 7 8], [0 1 2 3 4 5 6], [3 4 5 6]);
dispatched!(i64, [0 1 2 3 4 5], [0 1 2 3 4 5 6], [3 4 5 6]);
dispatched!(c64, [0 1 2 3 4 5], [0 1 2 3 4 5 6], [3 4 5 6]);
const _: () = assert!(<i64 as Dispatched>::REACH.0 == TYPED_MAX_LOOPS);
const _: () = assert!(<c64 as Dispatched>::REACH.0 == TYPED_MAX_LOOPS);

/// What a block leaves behind, for comparison.
#[derive(Clone, Debug)]
pub struct Outcome<T> {
    /// Per input: its backing buffer's elements (`None` for an alias).
    pub inputs: Vec<Option<Vec<T>>>,
    /// The user's `let`s in order: tensors as at the end of the block, scalars as made.
    pub lets: Vec<Made<T>>,
    /// Every scalar variable at the end, by name.
    pub scalars: Vec<(String, T)>,
}

#[derive(Clone, Debug)]
pub enum Made<T> {
    Tensor {
        name: String,
        shape: Vec<usize>,
        values: Vec<T>,
    },
    Scalar {
        name: String,
        value: T,
    },
}

/// Where a tensor binding's elements are: a buffer, seen whole or through a view.
#[derive(Clone, Debug)]
struct Handle {
    buffer: usize,
    view: Option<ViewSpec>,
    shape: Vec<usize>,
}

struct State<'p, T> {
    program: &'p Program,
    block: &'p Block,
    /// One tensor per buffer: inputs first (`None` for aliases), then `let` results. The
    /// target's is taken out while its statement runs.
    buffers: Vec<Option<Tensor<T>>>,
    handles: HashMap<TensorId, Handle>,
    input_handles: Vec<Handle>,
    scalars: HashMap<String, T>,
    lets: Vec<(String, Result<usize, T>)>,
}

/// Runs `plan` in `T` (the block's element type).
pub fn run<T: Dispatched>(plan: &Plan, block: &Block) -> Result<Outcome<T>, Skip> {
    let (backings, layouts) = memory::inputs::<T>(block);
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
        scalars: (block.scalars.iter())
            .map(|(name, value)| (name.clone(), T::from_sample(*value)))
            .collect(),
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
    let mut scalars: Vec<(String, T)> = state.scalars.into_iter().collect();
    scalars.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Outcome {
        inputs,
        lets,
        scalars,
    })
}

fn make_view<'t, T>(tensor: &'t Tensor<T>, spec: &ViewSpec) -> TensorView<'t, T> {
    let mut view = tensor.view();
    let shape = tensor.shape().to_vec();
    for (q, &backing) in shape.iter().enumerate() {
        let extent = backing - spec.pad_lo[q] - spec.pad_hi[q];
        view = view.slice_axis(q, spec.pad_lo[q]..spec.pad_lo[q] + extent);
    }
    view.permuted_axes(&spec.inverse())
}

fn make_view_mut<'t, T>(tensor: &'t mut Tensor<T>, spec: &ViewSpec) -> TensorViewMut<'t, T> {
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
pub enum Body<T> {
    Operand(usize),
    Constant(T),
    Neg(Box<Body<T>>),
    Binary(BinaryOp, Box<Body<T>>, Box<Body<T>>),
    Call(Function, Vec<Body<T>>),
}

impl<T: Fuzzed> Body<T> {
    pub fn eval(&self, x: &[T]) -> T {
        match self {
            Body::Operand(k) => x[*k],
            Body::Constant(value) => *value,
            Body::Neg(operand) => operand.eval(x).negated(),
            Body::Binary(op, left, right) => {
                let (a, b) = (left.eval(x), right.eval(x));
                match op {
                    BinaryOp::Add => a.plus(b),
                    BinaryOp::Sub => a.minus(b),
                    BinaryOp::Mul => a.times(b),
                    BinaryOp::Div => T::over(a, b),
                }
            }
            Body::Call(function, args) => {
                // No allocation per point: functions take one or two arguments.
                let values = [args[0].eval(x), args.get(1).map_or(T::ZERO, |b| b.eval(x))];
                T::call(*function, &values[..args.len()])
            }
        }
    }
}

/// Where an operand of a statement is read from.
enum Source<'v, T> {
    Tensor(&'v Tensor<T>),
    View(TensorView<'v, T>),
    /// The target's own writable view under another name (`let ra = &a;`).
    TargetView,
}

/// Everything one kernel call needs (the arguments of `Step::new` and the kernel).
pub struct Call<'a, T> {
    target: &'a TargetAccess<'a, T>,
    target_axes: Vec<Axis>,
    mode: rt::Mode<T>,
    alpha: T,
    extents: Vec<usize>,
    n_out: usize,
    operands: Vec<(Access<'a, T>, Vec<Axis>)>,
    body: &'a Body<T>,
    /// Which factors a GEMM or pairwise step conjugates (emit's `conjugated`).
    conj: Vec<bool>,
}

impl<T: Dispatched> State<'_, T> {
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
            TensorOrigin::Slice { .. } => Err(Skip::Unsupported(
                "a view of a range (`x[i in lo..hi]`)".to_owned(),
            )),
            TensorOrigin::Let { name, .. } => {
                panic!("plan reads `{name}` (tensor {tensor}) before the statement making it ran")
            }
        }
    }

    fn scalar(&self, text: &str) -> T {
        literal_value(text)
            .map(T::from_f64)
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
        let scalars: Vec<T> = statement
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
                let mut result = Tensor::<T>::zeros(shape.clone());
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
                let mut sum = T::ZERO;
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
                            AssignOp::Add | AssignOp::Sub => *value = value.plus(sum),
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
        target: &TargetAccess<'_, T>,
        target_view: Option<(usize, &TensorViewMut<'_, T>)>,
        operands: &[TensorId],
        handles: &HashMap<TensorId, Handle>,
        extents: &HashMap<String, usize>,
        scalars: &[T],
    ) -> Result<(), Skip> {
        let sources = self.sources(operands, handles, target_view.map(|(buffer, _)| buffer));
        let plain = accesses(operands, &sources, target_view.map(|(_, view)| view));
        let detached: Vec<(TensorId, Detached<'_, T>)> = plain
            .iter()
            .map(|(tensor, access)| (*tensor, target.detach(*access)))
            .collect();
        let accesses: Vec<(TensorId, Access<'_, T>)> = detached
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
    ) -> Vec<Source<'s, T>> {
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
        target: &TargetAccess<'_, T>,
        in_place: Option<TensorId>,
        accesses: &[(TensorId, Access<'_, T>)],
        extents: &HashMap<String, usize>,
        scalars: &[T],
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
        let mut operands: Vec<(Access<'_, T>, Vec<Axis>)> = Vec::new();
        let mut element = |access: &tensor_dsl_compiler::ir::Access| -> Body<T> {
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
                let mut sum: Option<Body<T>> = None;
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
        let conj = match &step.kernel {
            Kernel::LoopNest => Vec::new(),
            Kernel::Gemm(_) => tensor_dsl_compiler::lower::gemm_factors(step)
                .expect("a GEMM step's two factors")
                .map(|(_, conjugated)| conjugated)
                .to_vec(),
            Kernel::Network(_) => tensor_dsl_compiler::lower::product_factors(step)
                .expect("a network step is a product of tensors")
                .into_iter()
                .map(|(_, conjugated)| conjugated)
                .collect(),
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
            conj,
        };
        let (l, n) = (call.extents.len(), call.operands.len());
        if l > T::REACH.0 || n > T::REACH.1 {
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
        T::run_kernel(&step.kernel, l, n, &call);
        Ok(())
    }
}

/// The runtime access of each read tensor.
fn accesses<'s, T: Fuzzed>(
    tensors: &[TensorId],
    sources: &'s [Source<'s, T>],
    target_view: Option<&'s TensorViewMut<'_, T>>,
) -> Vec<(TensorId, Access<'s, T>)> {
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
fn scale<T: Fuzzed>(scale: &Scale, negate: bool, scalars: &[T]) -> T {
    let coefficient = if negate {
        -scale.coefficient
    } else {
        scale.coefficient
    };
    let product = scale
        .scalars
        .iter()
        .fold(T::from_f64(coefficient), |product, &k| {
            product.times(scalars[k])
        });
    scale
        .divisors
        .iter()
        .fold(product, |quotient, &k| T::over(quotient, scalars[k]))
}

/// The body of a term, numbering operands through `element` in emit's order.
fn body<T: Fuzzed>(
    expr: &Expr,
    element: &mut dyn FnMut(&tensor_dsl_compiler::ir::Access) -> Body<T>,
    scalars: &[T],
) -> Body<T> {
    match expr {
        Expr::Access(access) => element(access),
        Expr::Literal(literal) => Body::Constant(T::from_f64(literal.value)),
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

fn proven<'a, T: Fuzzed, const L: usize, const N: usize>(
    call: &'a Call<'a, T>,
) -> rt::Step<'a, T, L, N> {
    let extents: [usize; L] = call.extents.as_slice().try_into().expect("L loops");
    let uses: Vec<rt::Use<'a, T>> = call
        .operands
        .iter()
        .map(|(access, axes)| access.at(axes))
        .collect();
    let Ok(uses) = <[rt::Use<'a, T>; N]>::try_from(uses) else {
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

fn evaluate_step<T: Fuzzed, const L: usize, const N: usize>(call: &Call<T>) {
    let body = call.body;
    let body = move |x: [T; N]| body.eval(&x);
    // The marker the emitter writes: point-wise where the target takes every loop.
    if call.n_out == L {
        rt::evaluate(proven::<T, L, N>(call), body, rt::PointWise);
    } else {
        rt::evaluate(proven::<T, L, N>(call), body, rt::Summing);
    }
}

fn network_step<T: Fuzzed, const L: usize, const N: usize>(call: &Call<T>) {
    // emit keeps one cache per call site; a fresh one plans the same order.
    let cache = PlanCache::new();
    let conj: [bool; N] = call.conj.as_slice().try_into().expect("a flag per factor");
    rt::contract_network(proven::<T, L, N>(call), conj, &cache);
}

fn gemm_step<T: Fuzzed, const L: usize>(call: &Call<T>) {
    let conj: [bool; 2] = call.conj.as_slice().try_into().expect("a flag per factor");
    rt::contract(proven::<T, L, 2>(call), conj);
}

//! The reference: a direct interpreter of the IR (meant for the checked, einsum-notation
//! program, but it reads any stage). Statements run in order; each computes its whole
//! right-hand side from the current memory, summing every term over its summed indices (those
//! it lists, or in einsum notation every index not on the left), then writes with `=`, `+=`,
//! `-=` or `β·target +`. So self-reads see the old values, and so do reads of the same memory
//! under another name.
//!
//! Alongside each value it carries a magnitude `M` with `|rounding error| ≲ c·ε·M` (first-order
//! error propagation), which sets the comparison's tolerance: sums that cancel, divisions by
//! small numbers and steep functions get the slack their conditioning needs.

use std::collections::HashMap;

use tensor_dsl_compiler::ir::{
    AssignOp, BinaryOp, Expr, Function, Position, Program, Scale, Slot, Statement, Target,
    TensorId, TensorOrigin,
};

use crate::block::Block;
use crate::memory::{for_each_index, literal_value, Layout};
use crate::numeric::{Fuzzed, Value};
use crate::Skip;

/// What a block leaves behind, for comparison.
#[derive(Clone, Debug)]
pub struct Outcome<V> {
    /// Per input: its backing buffer's elements and magnitudes (`None` for an alias).
    pub inputs: Vec<Option<(Vec<V>, Vec<f64>)>>,
    /// The user's `let`s in order: tensors as they are at the end of the block, scalars as
    /// made.
    pub lets: Vec<Made<V>>,
    /// Every scalar variable at the end, by name.
    pub scalars: Vec<(String, Value<V>)>,
}

#[derive(Clone, Debug)]
pub enum Made<V> {
    Tensor {
        name: String,
        shape: Vec<usize>,
        values: Vec<V>,
        magnitudes: Vec<f64>,
    },
    Scalar {
        name: String,
        value: Value<V>,
    },
}

/// Naive work allowed per block (points visited, summed over terms).
pub const BUDGET: usize = 1_500_000;

/// What a user `let` made: a buffer and its shape, or a scalar.
type LetMade<V> = Result<(usize, Vec<usize>), Value<V>>;

struct State<'p, V> {
    program: &'p Program,
    block: &'p Block,
    buffers: Vec<Vec<V>>,
    magnitudes: Vec<Vec<f64>>,
    layouts: HashMap<TensorId, Layout>,
    input_layouts: Vec<Layout>,
    scalars: HashMap<String, Value<V>>,
    /// User `let`s: a buffer and its shape, or a scalar.
    lets: Vec<(String, LetMade<V>)>,
}

/// Runs the block's `program` in `V` (its element type).
pub fn run<V: Fuzzed>(program: &Program, block: &Block) -> Result<Outcome<V>, Skip> {
    let (backings, input_layouts) = crate::memory::inputs::<V>(block);
    let mut state = State {
        program,
        block,
        buffers: Vec::new(),
        magnitudes: Vec::new(),
        layouts: HashMap::new(),
        input_layouts,
        scalars: block
            .scalars
            .iter()
            .map(|(name, value)| {
                let value = V::from_sample(*value);
                (name.clone(), (value, value.norm()))
            })
            .collect(),
        lets: Vec::new(),
    };
    for backing in &backings {
        let data = backing.as_ref().map_or(Vec::new(), |b| b.data.clone());
        state
            .magnitudes
            .push(data.iter().map(|v| v.norm()).collect());
        state.buffers.push(data);
    }
    let mut work = 0;
    for statement in &program.statements {
        state.statement(statement, &mut work)?;
    }
    let inputs = backings
        .iter()
        .enumerate()
        .map(|(k, backing)| {
            backing
                .as_ref()
                .map(|_| (state.buffers[k].clone(), state.magnitudes[k].clone()))
        })
        .collect();
    let lets = state
        .lets
        .iter()
        .map(|(name, made)| match made {
            Ok((buffer, shape)) => Made::Tensor {
                name: name.clone(),
                shape: shape.clone(),
                values: state.buffers[*buffer].clone(),
                magnitudes: state.magnitudes[*buffer].clone(),
            },
            Err(value) => Made::Scalar {
                name: name.clone(),
                value: *value,
            },
        })
        .collect();
    let mut scalars: Vec<(String, Value<V>)> = state.scalars.into_iter().collect();
    scalars.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Outcome {
        inputs,
        lets,
        scalars,
    })
}

/// An expression over the statement's point (one coordinate per index variable).
enum Compiled<V> {
    Read {
        buffer: usize,
        base: usize,
        /// (variable, stride) per axis addressed by a variable.
        strides: Vec<(usize, usize)>,
    },
    Constant(Value<V>),
    Neg(Box<Compiled<V>>),
    Binary(BinaryOp, Box<Compiled<V>>, Box<Compiled<V>>),
    Call(Function, Vec<Compiled<V>>),
}

/// A literal's value in `V` (whole literals in integer blocks: the generator writes no
/// others there).
fn literal<V: Fuzzed>(value: f64) -> Value<V> {
    let value = V::from_f64(value);
    (value, value.norm())
}

impl<V: Fuzzed> State<'_, V> {
    fn layout(&self, tensor: TensorId) -> Result<Layout, Skip> {
        if let Some(layout) = self.layouts.get(&tensor) {
            return Ok(layout.clone());
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
                Ok(self.input_layouts[k].clone())
            }
            TensorOrigin::Rust(tokens) => Err(Skip::Unsupported(format!(
                "Rust-expression tensor {tokens}"
            ))),
            TensorOrigin::Slice { .. } => Err(Skip::Unsupported(
                "a view of a range (`x[i in lo..hi]`)".to_owned(),
            )),
            TensorOrigin::Let { name, .. } => Err(Skip::Unsupported(format!(
                "`{name}` read before its statement ran"
            ))),
        }
    }

    fn scalar(&self, text: &str) -> Result<Value<V>, Skip> {
        if let Some(value) = literal_value(text) {
            return Ok(literal(value));
        }
        self.scalars
            .get(text.trim())
            .copied()
            .ok_or_else(|| Skip::Unsupported(format!("unknown scalar `{text}`")))
    }

    fn position(&self, position: Position) -> Result<usize, Skip> {
        match position {
            Position::Literal(p) => Ok(p),
            Position::Computed(k) => {
                let text = self.program.positions[k].to_string();
                literal_value(&text)
                    .filter(|v| *v >= 0.0 && v.fract() == 0.0)
                    .map(|v| v as usize)
                    .ok_or_else(|| Skip::Unsupported(format!("position {text}")))
            }
        }
    }

    fn statement(&mut self, statement: &Statement, work: &mut usize) -> Result<(), Skip> {
        // Scalars, once, before anything is written.
        let scalars: Vec<Value<V>> = statement
            .scalars
            .iter()
            .map(|scalar| self.scalar(&scalar.tokens.to_string()))
            .collect::<Result<_, _>>()?;
        let vars: Vec<String> = statement
            .all_vars()
            .into_iter()
            .map(|var| var.name)
            .collect();
        let var_index = |name: &str| vars.iter().position(|v| v == name).expect("a variable");

        // Extents: every occurrence of an index agrees (the run-time check), positions in
        // bounds.
        let mut extents: Vec<Option<usize>> = vec![None; vars.len()];
        let mut accesses = Vec::new();
        if let Target::Tensor { access } = &statement.target {
            accesses.push(access);
        }
        for term in statement.terms() {
            term.expr
                .visit_accesses(&mut |access| accesses.push(access));
        }
        for access in &accesses {
            let layout = self.layout(access.tensor)?;
            if layout.shape.len() != access.slots.len() {
                return Err(Skip::ShapeCheck(format!("rank of {}", access.text)));
            }
            for (axis, slot) in access.slots.iter().enumerate() {
                let extent = layout.shape[axis];
                match slot {
                    Slot::Var(var) => {
                        let known = &mut extents[var_index(&var.name)];
                        match known {
                            Some(known) if *known != extent => {
                                return Err(Skip::ShapeCheck(format!(
                                    "extent of `{}` in {}",
                                    var.name, access.text
                                )))
                            }
                            _ => *known = Some(extent),
                        }
                    }
                    Slot::Fixed(position) => {
                        if self.position(*position)? >= extent {
                            return Err(Skip::ShapeCheck(format!("position in {}", access.text)));
                        }
                    }
                }
            }
        }
        let extents: Vec<usize> = extents
            .into_iter()
            .map(|extent| extent.ok_or_else(|| Skip::Unsupported("index without extent".into())))
            .collect::<Result<_, _>>()?;

        let lhs: Vec<usize> = statement
            .lhs_vars()
            .map(|var| var_index(&var.name))
            .collect();
        let out_shape: Vec<usize> = lhs.iter().map(|&v| extents[v]).collect();
        let points: usize = out_shape.iter().product();

        // Where the statement writes.
        let target = match &statement.target {
            Target::Tensor { access } => {
                let layout = self.layout(access.tensor)?;
                let mut base = layout.offset;
                let mut strides = Vec::new();
                for (axis, slot) in access.slots.iter().enumerate() {
                    match slot {
                        Slot::Var(var) => {
                            strides.push((var_index(&var.name), layout.strides[axis]))
                        }
                        Slot::Fixed(position) => {
                            base += self.position(*position)? * layout.strides[axis]
                        }
                    }
                }
                Some((layout.buffer, base, strides))
            }
            Target::NewTensor { .. } => {
                let buffer = self.buffers.len();
                let count = out_shape.iter().product();
                self.buffers.push(vec![V::ZERO; count]);
                self.magnitudes.push(vec![0.0; count]);
                let layout = Layout::contiguous(buffer, &out_shape);
                let strides = lhs.iter().copied().zip(layout.strides).collect();
                Some((buffer, 0, strides))
            }
            Target::NewScalar { .. } => None,
            Target::Scalar { place, .. } => {
                let name = place.to_string();
                if !self.scalars.contains_key(&name) {
                    return Err(Skip::Unsupported(format!("unknown scalar target `{name}`")));
                }
                None
            }
        };
        let mut scalar_value: Value<V> = match &statement.target {
            Target::Scalar { place, .. } => self.scalars[&place.to_string()],
            _ => (V::ZERO, 0.0),
        };

        for update in &statement.updates {
            // The whole right-hand side first.
            let mut values: Vec<Value<V>> = vec![(V::ZERO, 0.0); points];
            for term in &update.terms {
                let summed: Vec<usize> = match &term.reduction {
                    Some(reduction) => reduction.iter().map(|var| var_index(&var.name)).collect(),
                    None => {
                        let lhs_vars: Vec<_> = statement.lhs_vars().collect();
                        term.expr
                            .vars_summed_against(&lhs_vars)
                            .iter()
                            .map(|var| var_index(&var.name))
                            .collect()
                    }
                };
                let summed_shape: Vec<usize> = summed.iter().map(|&v| extents[v]).collect();
                let visits = points.saturating_mul(summed_shape.iter().product::<usize>().max(1));
                *work = work.saturating_add(visits);
                if *work > BUDGET {
                    return Err(Skip::TooCostly);
                }
                let expr = self.compile(&term.expr, &var_index, &scalars)?;
                let mut scale = scale_value(&term.scale, &scalars);
                // A non-finite scalar makes the term undefined even where its sum is empty
                // (the passes may move the scalar out of the sum: `∞·Σ∅` is NaN, `Σ∅ ∞·x` 0).
                let mut used = term.scale.scalars.clone();
                used.extend(scalars_of(&term.expr));
                if used
                    .iter()
                    .any(|&k| !scalars[k].0.is_finite() || !scalars[k].1.is_finite())
                {
                    scale.1 = f64::INFINITY;
                }
                let mut point = vec![0usize; vars.len()];
                let mut k = 0;
                for_each_index(&out_shape, |out| {
                    for (slot, &v) in out.iter().zip(&lhs) {
                        point[v] = *slot;
                    }
                    let mut sum: Value<V> = (V::ZERO, 0.0);
                    for_each_index(&summed_shape, |inner| {
                        for (slot, &v) in inner.iter().zip(&summed) {
                            point[v] = *slot;
                        }
                        let value = self.eval(&expr, &point);
                        sum = V::naive_binary(BinaryOp::Add, sum, value);
                    });
                    let term_value = V::naive_binary(BinaryOp::Mul, scale, sum);
                    values[k] = V::naive_binary(BinaryOp::Add, values[k], term_value);
                    k += 1;
                });
                if points == 0 {
                    continue;
                }
            }
            let beta = update.beta.as_ref().map(|beta| scale_value(beta, &scalars));
            let combine = |old: Value<V>, value: Value<V>| -> Value<V> {
                let value = match update.op {
                    AssignOp::Sub => (value.0.negated(), value.1),
                    AssignOp::Assign | AssignOp::Add => value,
                };
                match (beta, update.op) {
                    (Some(beta), _) => {
                        let scaled = V::naive_binary(BinaryOp::Mul, beta, old);
                        V::naive_binary(BinaryOp::Add, scaled, value)
                    }
                    (None, AssignOp::Assign) => value,
                    (None, AssignOp::Add | AssignOp::Sub) => {
                        V::naive_binary(BinaryOp::Add, old, value)
                    }
                }
            };
            match &target {
                Some((buffer, base, strides)) => {
                    let mut k = 0;
                    for_each_index(&out_shape, |out| {
                        let mut at = *base;
                        for (var, stride) in strides {
                            let position = lhs.iter().position(|v| v == var).expect("a left index");
                            at += out[position] * stride;
                        }
                        let old = (self.buffers[*buffer][at], self.magnitudes[*buffer][at]);
                        let new = combine(old, values[k]);
                        self.buffers[*buffer][at] = new.0;
                        self.magnitudes[*buffer][at] = new.1;
                        k += 1;
                    });
                }
                None => scalar_value = combine(scalar_value, values[0]),
            }
        }

        match &statement.target {
            Target::NewTensor { name, tensor, .. } => {
                let (buffer, _, _) = target.expect("a buffer");
                self.layouts
                    .insert(*tensor, Layout::contiguous(buffer, &out_shape));
                if !self.program.makes_temporary(statement) {
                    self.lets
                        .push((name.to_string(), Ok((buffer, out_shape.clone()))));
                }
            }
            Target::NewScalar { name, .. } => {
                self.scalars.insert(name.to_string(), scalar_value);
                self.lets.push((name.to_string(), Err(scalar_value)));
            }
            Target::Scalar { place, .. } => {
                self.scalars.insert(place.to_string(), scalar_value);
            }
            Target::Tensor { .. } => {}
        }
        Ok(())
    }

    fn compile(
        &self,
        expr: &Expr,
        var_index: &dyn Fn(&str) -> usize,
        scalars: &[Value<V>],
    ) -> Result<Compiled<V>, Skip> {
        Ok(match expr {
            Expr::Access(access) => {
                let layout = self.layout(access.tensor)?;
                let mut base = layout.offset;
                let mut strides = Vec::new();
                for (axis, slot) in access.slots.iter().enumerate() {
                    match slot {
                        Slot::Var(var) => {
                            strides.push((var_index(&var.name), layout.strides[axis]))
                        }
                        Slot::Fixed(position) => {
                            base += self.position(*position)? * layout.strides[axis]
                        }
                    }
                }
                Compiled::Read {
                    buffer: layout.buffer,
                    base,
                    strides,
                }
            }
            Expr::Literal(value) => Compiled::Constant(literal(value.value)),
            Expr::Scalar(k) => Compiled::Constant(scalars[*k]),
            Expr::Neg(operand) => {
                Compiled::Neg(Box::new(self.compile(operand, var_index, scalars)?))
            }
            Expr::Binary(op, left, right) => Compiled::Binary(
                *op,
                Box::new(self.compile(left, var_index, scalars)?),
                Box::new(self.compile(right, var_index, scalars)?),
            ),
            Expr::Call(function, args, _) => Compiled::Call(
                *function,
                args.iter()
                    .map(|arg| self.compile(arg, var_index, scalars))
                    .collect::<Result<_, _>>()?,
            ),
        })
    }

    fn eval(&self, expr: &Compiled<V>, point: &[usize]) -> Value<V> {
        match expr {
            Compiled::Read {
                buffer,
                base,
                strides,
            } => {
                let at = base + strides.iter().map(|&(v, s)| point[v] * s).sum::<usize>();
                (self.buffers[*buffer][at], self.magnitudes[*buffer][at])
            }
            Compiled::Constant(value) => *value,
            Compiled::Neg(operand) => {
                let (v, m) = self.eval(operand, point);
                (v.negated(), m)
            }
            Compiled::Binary(op, left, right) => {
                let a = self.eval(left, point);
                let b = self.eval(right, point);
                V::naive_binary(*op, a, b)
            }
            Compiled::Call(function, args) => {
                let values: Vec<Value<V>> = args.iter().map(|arg| self.eval(arg, point)).collect();
                V::naive_call(*function, &values)
            }
        }
    }
}

/// The scalars an expression reads.
fn scalars_of(expr: &Expr) -> Vec<usize> {
    match expr {
        Expr::Scalar(k) => vec![*k],
        Expr::Access(_) | Expr::Literal(_) => Vec::new(),
        Expr::Neg(operand) => scalars_of(operand),
        Expr::Binary(_, left, right) => {
            let mut all = scalars_of(left);
            all.extend(scalars_of(right));
            all
        }
        Expr::Call(_, args, _) => args.iter().flat_map(scalars_of).collect(),
    }
}

/// A scale's value: its coefficient times its scalars, left to right.
pub fn scale_value<V: Fuzzed>(scale: &Scale, scalars: &[Value<V>]) -> Value<V> {
    scale
        .scalars
        .iter()
        .fold(literal(scale.coefficient), |product, &k| {
            V::naive_binary(BinaryOp::Mul, product, scalars[k])
        })
}

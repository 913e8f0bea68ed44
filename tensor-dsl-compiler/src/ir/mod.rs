//! Resolved index notation (TACO's vocabulary): tensors are ids, indices are `IndexVar`s, every
//! node that can be blamed keeps its span. Built only by `check`, so everything here is valid:
//! ranks agree, left-hand indices are distinct, nested sums are unambiguous.
//!
//! Dialects: `check` produces *einsum notation* (each `Term::reduction` is `None`, sums are
//! implicit); `passes::make_reductions_explicit` turns it into *reduction notation* (every term
//! lists the indices it sums over).

pub(crate) mod display;
pub mod invariants;
pub mod matrix;

use proc_macro2::{Ident, Span, TokenStream};

/// One `tensor!` block.
#[derive(Clone, Debug)]
pub struct Program {
    /// Every tensor binding the block reads or writes.
    pub tensors: Vec<Tensor>,
    /// Fixed positions computed by Rust (`a[{k}, i]`), evaluated once when the block starts.
    pub positions: Vec<TokenStream>,
    pub statements: Vec<Statement>,
    /// Tokens `check` took for one tensor because their text is equal, which macro hygiene may
    /// still bind to different variables: the expansion has rustc prove each pair is one.
    pub same_bindings: Vec<SameBinding>,
}

/// Two tokens of one name that must resolve to one binding: the tensor's first token (a
/// `let`'s name, or the first occurrence of an outside tensor's root identifier) and a later
/// occurrence. Generated code reaches the tensor through `first` only.
#[derive(Clone, Debug)]
pub struct SameBinding {
    pub first: Ident,
    pub later: Ident,
}

impl Program {
    /// Removes statement `at`, which must not make a tensor, keeping every `let`'s statement
    /// number true.
    pub fn remove_statement(&mut self, at: usize) -> Statement {
        for tensor in &mut self.tensors {
            if let TensorOrigin::Let { statement, .. } = &mut tensor.origin {
                debug_assert_ne!(*statement, at, "removing the statement that makes a tensor");
                if *statement > at {
                    *statement -= 1;
                }
            }
        }
        self.statements.remove(at)
    }

    /// Inserts a statement that makes a temporary before statement `at`: `make` receives the
    /// temporary's tensor id and hidden name and builds the statement. Keeps every `let`'s
    /// statement number true. The only place a tensor is marked `temporary`.
    pub fn insert_temporary(
        &mut self,
        at: usize,
        rank: usize,
        make: impl FnOnce(TensorId, Ident) -> Statement,
    ) -> TensorId {
        for tensor in &mut self.tensors {
            if let TensorOrigin::Let { statement, .. } = &mut tensor.origin {
                if *statement >= at {
                    *statement += 1;
                }
            }
        }
        let tensor = self.tensors.len();
        let name = Ident::new(&format!("{TEMPORARY_PREFIX}{tensor}"), Span::mixed_site());
        self.tensors.push(Tensor {
            origin: TensorOrigin::Let {
                statement: at,
                name: name.clone(),
            },
            name: name.to_string(),
            rank,
            first_access: name.to_string(),
            temporary: true,
        });
        self.statements.insert(at, make(tensor, name));
        tensor
    }

    /// Whether writing tensor `written` may change what a read of tensor `read` sees. Tensors
    /// the block did not make may share memory under different names (`let r = &v;` for a
    /// writable view `v`), so a write to any of them counts as a write to all of them; a
    /// tensor a `let` of the block made is fresh memory and aliases nothing else.
    pub fn may_alias(&self, written: TensorId, read: TensorId) -> bool {
        // A slice is its base's memory.
        let (written, read) = (self.memory_of(written), self.memory_of(read));
        written == read || (!self.tensors[written].is_fresh() && !self.tensors[read].is_fresh())
    }

    /// The tensor whose memory `tensor` is: itself, or a slice's base.
    pub fn memory_of(&self, tensor: TensorId) -> TensorId {
        match self.tensors[tensor].origin {
            TensorOrigin::Slice { base, .. } => self.memory_of(base),
            _ => tensor,
        }
    }

    /// Whether `statement` makes a temporary the compiler introduced (never a user's `let`,
    /// whatever its name).
    pub fn makes_temporary(&self, statement: &Statement) -> bool {
        matches!(
            &statement.target,
            Target::NewTensor { tensor, .. } if self.tensors[*tensor].temporary
        )
    }
}

pub type TensorId = usize;

/// How the names of compiler-made temporaries start (`__tmp3`), for display only: whether a
/// tensor is a temporary is `Tensor::temporary`, and the name's mixed-site span keeps it apart
/// from any user name.
const TEMPORARY_PREFIX: &str = "__tmp";

/// A tensor binding: one name until a `let` of the block shadows it.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub origin: TensorOrigin,
    /// The name as written (`a`, `self.w`) or `{…}` for a Rust expression.
    pub name: String,
    pub rank: usize,
    /// The first access as written, named in run-time rank errors.
    pub first_access: String,
    /// A temporary the compiler introduced (`Program::insert_temporary`): made and read only
    /// inside the block, never bound after it.
    pub temporary: bool,
}

impl Tensor {
    /// Whether the block made the tensor (a `let` or a temporary): memory no other name reaches.
    pub fn is_fresh(&self) -> bool {
        matches!(self.origin, TensorOrigin::Let { .. })
    }
}

#[derive(Clone, Debug)]
pub enum TensorOrigin {
    /// A Rust place bound outside the block: its shape is known only at run time.
    External(TokenStream),
    /// `{ expr }[…]`: a Rust expression evaluated once when the block starts.
    Rust(TokenStream),
    /// The result of the `let` of statement `statement` of this block (the user's, or a
    /// temporary a pass introduced).
    Let { statement: usize, name: Ident },
    /// `x[i in 1..n]`: the view of some positions of tensor `base`'s axes, made where a
    /// statement reads it; its bounds are checked with the block's other checks.
    Slice {
        base: TensorId,
        ranges: Vec<SliceRange>,
    },
}

/// The positions `lo..hi` of one axis (`hi` none: to the axis's end).
#[derive(Clone, Debug)]
pub struct SliceRange {
    pub axis: usize,
    pub lo: Position,
    pub hi: Option<Position>,
}

/// An index variable; two are the same index when their names are equal.
#[derive(Clone, Debug)]
pub struct IndexVar {
    pub name: String,
    pub span: Span,
}

impl PartialEq for IndexVar {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for IndexVar {}

/// One position of an access: an index variable or a fixed position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    Var(IndexVar),
    Fixed(Position),
}

/// A fixed position along one axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    Literal(usize),
    /// Entry of `Program::positions`.
    Computed(usize),
}

/// `a[i, k]`: one tensor read or written at some indices.
#[derive(Clone, Debug)]
pub struct Access {
    pub tensor: TensorId,
    /// The tensor's name as written (`a`, `self.w`, `{..}`) or a temporary's.
    pub name: String,
    pub slots: Vec<Slot>,
    /// The access as written, for run-time messages.
    pub text: String,
    pub span: Span,
}

impl Access {
    pub fn vars(&self) -> impl Iterator<Item = &IndexVar> {
        self.slots.iter().filter_map(|slot| match slot {
            Slot::Var(var) => Some(var),
            Slot::Fixed(_) => None,
        })
    }
}

#[derive(Clone, Debug)]
pub enum Expr {
    Access(Access),
    Literal(Literal),
    /// Entry of `Statement::scalars`.
    Scalar(usize),
    Neg(Box<Expr>),
    Binary(BinaryOp, Box<Expr>, Box<Expr>),
    /// A function, its arguments, and the function name's token (where a type error about
    /// the element type lands).
    Call(Function, Vec<Expr>, Span),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
}

/// An element-wise function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Function {
    Exp,
    Ln,
    Sqrt,
    Abs,
    Sin,
    Cos,
    Tan,
    Tanh,
    /// `1 / (1 + exp(-x))`.
    Sigmoid,
    Max,
    Min,
    /// A real power, `pow(x, y)`: both arguments are values.
    Pow,
    /// Integer power; the exponent is part of the function, its one argument the base.
    Powi(Exponent),
    /// The complex conjugate (a real number's is itself).
    Conj,
    /// The real part.
    Re,
    /// The imaginary part (zero for a real number).
    Im,
}

/// What a function or operator asks of the element type: the runtime trait generated code
/// calls it through, so a type without it is a type error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Capability {
    /// Every element type (`Element`).
    Any,
    /// Ordered types (`Real`): floats and integers.
    Order,
    /// Division and the transcendental functions (`Fractional`): floats.
    Division,
    /// A literal that is not a whole number (`HoldsFractions`): floats.
    Fraction,
    /// A whole-number literal past `i32`'s range (`HoldsWide`): floats and `i64`.
    Wide,
}

impl Capability {
    /// What an unsuffixed literal of this value asks of the element type it takes: a fraction
    /// (or a whole number past `i64`'s range) a fractional type, a whole number past `i32`'s
    /// range a wide one.
    pub fn of_literal(value: f64) -> Capability {
        if value.fract() != 0.0 || value.abs() >= 2f64.powi(63) {
            Capability::Fraction
        } else if value < f64::from(i32::MIN) || value > f64::from(i32::MAX) {
            Capability::Wide
        } else {
            Capability::Any
        }
    }
}

/// The exponent of `powi`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exponent {
    Literal(i32),
    /// Entry of `Statement::exponents`: a Rust `i32`, evaluated once per statement.
    Computed(usize),
}

impl std::fmt::Display for Exponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exponent::Literal(value) => write!(f, "{value}"),
            Exponent::Computed(k) => write!(f, "#{k}"),
        }
    }
}

impl Function {
    pub fn name(self) -> &'static str {
        match self {
            Function::Exp => "exp",
            Function::Ln => "ln",
            Function::Sqrt => "sqrt",
            Function::Abs => "abs",
            Function::Sin => "sin",
            Function::Cos => "cos",
            Function::Tan => "tan",
            Function::Tanh => "tanh",
            Function::Sigmoid => "sigmoid",
            Function::Max => "max",
            Function::Min => "min",
            Function::Pow => "pow",
            Function::Powi(_) => "powi",
            Function::Conj => "conj",
            Function::Re => "re",
            Function::Im => "im",
        }
    }

    /// What the function asks of the element type.
    pub fn capability(self) -> Capability {
        match self {
            Function::Abs | Function::Conj | Function::Re | Function::Im => Capability::Any,
            Function::Max | Function::Min => Capability::Order,
            Function::Exp
            | Function::Ln
            | Function::Sqrt
            | Function::Sin
            | Function::Cos
            | Function::Tan
            | Function::Tanh
            | Function::Sigmoid
            | Function::Pow
            | Function::Powi(_) => Capability::Division,
        }
    }
}

/// A numeric literal.
#[derive(Clone, Debug)]
pub struct Literal {
    pub value: f64,
    /// A literal with a type suffix (`2.0f32`) is emitted as written, so rustc checks its type.
    pub suffixed: Option<TokenStream>,
    pub span: Span,
}

/// A Rust scalar (`alpha`, `self.scale`, `{ expr }`), evaluated once per statement.
#[derive(Clone, Debug)]
pub struct Scalar {
    pub tokens: TokenStream,
    pub span: Span,
}

/// A constant factor: a coefficient times Rust scalars, evaluated once per statement (TiledArray's
/// `ScalExpr`). Applied after a term's sum, so it is also a GEMM's α or β.
#[derive(Clone, Debug, PartialEq)]
pub struct Scale {
    pub coefficient: f64,
    /// Entries of `Statement::scalars`, multiplied in.
    pub scalars: Vec<usize>,
    /// Entries of `Statement::scalars` divided by (`a[i, k] * b[k, j] / beta`).
    pub divisors: Vec<usize>,
}

impl Scale {
    pub fn one() -> Self {
        Scale {
            coefficient: 1.0,
            scalars: Vec::new(),
            divisors: Vec::new(),
        }
    }

    /// `+1` or `-1`.
    pub fn sign(negated: bool) -> Self {
        Scale {
            coefficient: if negated { -1.0 } else { 1.0 },
            scalars: Vec::new(),
            divisors: Vec::new(),
        }
    }

    pub fn is_one(&self) -> bool {
        self.coefficient == 1.0 && self.scalars.is_empty() && self.divisors.is_empty()
    }
}

/// A top-level term of a right-hand side: `scale · Σ_reduction expr`.
#[derive(Clone, Debug)]
pub struct Term {
    pub scale: Scale,
    pub expr: Expr,
    /// `None` in einsum notation; the summed indices, in first-use order, after
    /// `make_reductions_explicit`.
    pub reduction: Option<Vec<IndexVar>>,
}

impl Term {
    /// Whether the term sums over nothing (reduction notation only).
    pub fn is_pointwise(&self) -> bool {
        self.reduction.as_ref().is_some_and(Vec::is_empty)
    }
}

/// One update of a statement's target: `target op Σ terms`, or with `beta`,
/// `target = beta · target + Σ terms` (the GEMM update form).
#[derive(Clone, Debug)]
pub struct Update {
    pub op: AssignOp,
    pub beta: Option<Scale>,
    pub terms: Vec<Term>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AssignOp {
    Assign,
    Add,
    Sub,
}

#[derive(Clone, Debug)]
pub enum Target {
    /// `let name[…] = …`
    NewTensor {
        name: Ident,
        mutable: bool,
        ty: Option<TokenStream>,
        tensor: TensorId,
    },
    /// `let name = …` (every index summed)
    NewScalar {
        name: Ident,
        mutable: bool,
        ty: Option<TokenStream>,
    },
    /// `place[…] op …` into an existing tensor.
    Tensor { access: Access },
    /// `place op …` into an existing scalar variable.
    Scalar { place: TokenStream, span: Span },
}

#[derive(Clone, Debug)]
pub struct Statement {
    pub target: Target,
    /// The left-hand indices (empty for scalar results).
    pub lhs: Vec<Slot>,
    /// The updates computing the statement, applied in order. `check` makes one holding every
    /// term; `reassociate_sums` splits it so that each update is one kernel.
    pub updates: Vec<Update>,
    pub scalars: Vec<Scalar>,
    /// Rust `i32` exponents of `powi` (`Exponent::Computed`), evaluated once per statement.
    pub exponents: Vec<Scalar>,
    /// What the statement's `/` and functions ask of its element type, each at its token
    /// (kept apart from the expressions, which passes fold: `a / 2` becomes `0.5 · a`).
    pub needs: Vec<(Capability, Span)>,
    pub span: Span,
}

impl Statement {
    /// The distinct left-hand index variables, in order.
    pub fn lhs_vars(&self) -> impl Iterator<Item = &IndexVar> {
        // A repeated index (a diagonal target, `c[i, i]`) is one loop.
        self.lhs
            .iter()
            .enumerate()
            .filter_map(|(k, slot)| match slot {
                Slot::Var(var) if !self.lhs[..k].contains(slot) => Some(var),
                Slot::Var(_) | Slot::Fixed(_) => None,
            })
    }

    /// Every term of every update.
    pub fn terms(&self) -> impl Iterator<Item = &Term> {
        self.updates.iter().flat_map(|update| &update.terms)
    }

    /// Every term of every update, mutably.
    pub fn terms_mut(&mut self) -> impl Iterator<Item = &mut Term> {
        self.updates.iter_mut().flat_map(|update| &mut update.terms)
    }

    /// The operator the statement was written with.
    pub fn op(&self) -> AssignOp {
        self.updates
            .first()
            .map_or(AssignOp::Assign, |update| update.op)
    }

    /// The tensor the statement writes, if it writes an existing one or makes one.
    pub fn target_tensor(&self) -> Option<TensorId> {
        match &self.target {
            Target::Tensor { access } => Some(access.tensor),
            Target::NewTensor { tensor, .. } => Some(*tensor),
            Target::NewScalar { .. } | Target::Scalar { .. } => None,
        }
    }

    /// Every index variable of the statement, left-hand ones first, then in first-use order.
    pub fn all_vars(&self) -> Vec<IndexVar> {
        let mut vars: Vec<IndexVar> = self.lhs_vars().cloned().collect();
        for term in self.terms() {
            for var in term.expr.vars() {
                if !vars.contains(&var) {
                    vars.push(var);
                }
            }
        }
        vars
    }
}

impl Expr {
    /// Calls `f` on every access, left to right.
    pub fn visit_accesses<'a>(&'a self, f: &mut impl FnMut(&'a Access)) {
        match self {
            Expr::Access(access) => f(access),
            Expr::Literal(_) | Expr::Scalar(_) => {}
            Expr::Neg(operand) => operand.visit_accesses(f),
            Expr::Binary(_, left, right) => {
                left.visit_accesses(f);
                right.visit_accesses(f);
            }
            Expr::Call(_, args, _) => args.iter().for_each(|arg| arg.visit_accesses(f)),
        }
    }

    /// The index variables of the expression not in `lhs`, in first-use order: what a term
    /// with this expression sums over.
    pub fn vars_summed_against(&self, lhs: &[&IndexVar]) -> Vec<IndexVar> {
        self.vars()
            .into_iter()
            .filter(|var| !lhs.contains(&var))
            .collect()
    }

    /// The distinct index variables of the expression, in first-use order.
    pub fn vars(&self) -> Vec<IndexVar> {
        let mut vars = Vec::new();
        self.visit_accesses(&mut |access| {
            for var in access.vars() {
                if !vars.contains(var) {
                    vars.push(var.clone());
                }
            }
        });
        vars
    }
}

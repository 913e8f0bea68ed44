//! Resolved index notation (TACO's vocabulary): tensors are ids, indices are `IndexVar`s, every
//! node that can be blamed keeps its span. Built only by `check`, so everything here is valid:
//! ranks agree, left-hand indices are distinct, nested sums are unambiguous.
//!
//! Dialects: `check` produces *einsum notation* (each `Term::reduction` is `None`, sums are
//! implicit); `passes::make_reductions_explicit` turns it into *reduction notation* (every term
//! lists the indices it sums over).

mod display;

use proc_macro2::{Ident, Span, TokenStream};

/// One `tensor!` block.
#[derive(Clone, Debug)]
pub struct Program {
    /// Every tensor binding the block reads or writes.
    pub tensors: Vec<Tensor>,
    /// Fixed positions computed by Rust (`a[{k}, i]`), evaluated once when the block starts.
    pub positions: Vec<TokenStream>,
    pub statements: Vec<Statement>,
}

pub type TensorId = usize;

/// A tensor binding: one name until a `let` of the block shadows it.
#[derive(Clone, Debug)]
pub struct Tensor {
    pub origin: TensorOrigin,
    /// The name as written (`a`, `self.w`) or `{…}` for a Rust expression.
    pub name: String,
    pub rank: usize,
    /// The first access as written, named in run-time rank errors.
    pub first_access: String,
}

#[derive(Clone, Debug)]
pub enum TensorOrigin {
    /// A Rust place bound outside the block: its shape is known only at run time.
    External(TokenStream),
    /// `{ expr }[…]`: a Rust expression evaluated once when the block starts.
    Rust(TokenStream),
    /// The result of the `let` of statement `statement` of this block.
    Let { statement: usize, name: Ident },
    /// A right-hand side evaluated before its statement's target is written (see `lower`).
    Temporary { statement: usize },
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
    Call(Function, Vec<Expr>),
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
    Tanh,
    Max,
    Min,
    /// Integer power; the exponent is part of the function, its one argument the base.
    Powi(i32),
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
            Function::Tanh => "tanh",
            Function::Max => "max",
            Function::Min => "min",
            Function::Powi(_) => "powi",
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

/// A top-level term of a right-hand side: summed over `reduction` (reduction notation) and
/// added or subtracted.
#[derive(Clone, Debug)]
pub struct Term {
    pub negated: bool,
    pub expr: Expr,
    /// `None` in einsum notation; the summed indices, in first-use order, after
    /// `make_reductions_explicit`.
    pub reduction: Option<Vec<IndexVar>>,
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
    pub op: AssignOp,
    /// The left-hand indices (empty for scalar results).
    pub lhs: Vec<Slot>,
    pub terms: Vec<Term>,
    pub scalars: Vec<Scalar>,
    pub span: Span,
}

impl Statement {
    /// The left-hand index variables, in order.
    pub fn lhs_vars(&self) -> impl Iterator<Item = &IndexVar> {
        self.lhs.iter().filter_map(|slot| match slot {
            Slot::Var(var) => Some(var),
            Slot::Fixed(_) => None,
        })
    }

    /// Every index variable of the statement, left-hand ones first, then in first-use order.
    pub fn all_vars(&self) -> Vec<IndexVar> {
        let mut vars: Vec<IndexVar> = self.lhs_vars().cloned().collect();
        for term in &self.terms {
            term.expr.visit_accesses(&mut |access| {
                for var in access.vars() {
                    if !vars.contains(var) {
                        vars.push(var.clone());
                    }
                }
            });
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
            Expr::Call(_, args) => args.iter().for_each(|arg| arg.visit_accesses(f)),
        }
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

//! Tokens → surface tree: exactly what the user wrote, every name and index its own token with
//! its span. No meaning is attached here; `check` resolves names and indices.

mod parse;

pub use parse::{parse_block, Parsed};

use proc_macro2::{Span, TokenStream};
use syn::token;

/// One statement of a `tensor!` block.
#[derive(Clone, Debug)]
pub enum Statement {
    /// `let mut? name[indices]? (: Type)? = expr`
    Let(LetStatement),
    /// `place[indices]? (= | += | -= | *= | /=) expr`
    Assign(AssignStatement),
    /// `let (name[indices], …) = svd(t[indices], option = value, …)`: a matrix operation.
    Matrix(MatrixStatement),
}

/// The functions a matrix statement calls (`let l[i, j] = cholesky(a[i, j])`).
pub const MATRIX_FUNCTIONS: [&str; 6] = ["cholesky", "solve", "eigh", "svd", "qr", "matpow"];

/// `let results = function(args, option = value, …)`, where `results` is one result or a
/// parenthesized tuple of them.
#[derive(Clone, Debug)]
pub struct MatrixStatement {
    pub let_token: token::Let,
    pub results: Vec<MatrixResult>,
    pub function: syn::Ident,
    /// The positional arguments: accesses, or a power.
    pub args: Vec<Expr>,
    /// `name = value` arguments (`max_rank = 8`).
    pub options: Vec<(syn::Ident, Expr)>,
}

/// One result of a matrix statement: `mut? name[indices]?` (a scalar without indices).
#[derive(Clone, Debug)]
pub struct MatrixResult {
    pub mutability: Option<token::Mut>,
    pub name: syn::Ident,
    pub indices: Option<IndexList>,
}

#[derive(Clone, Debug)]
pub struct LetStatement {
    pub let_token: token::Let,
    pub mutability: Option<token::Mut>,
    pub name: syn::Ident,
    pub indices: Option<IndexList>,
    pub ty: Option<Box<syn::Type>>,
    pub value: Expr,
}

#[derive(Clone, Debug)]
pub struct AssignStatement {
    pub place: Place,
    pub indices: Option<IndexList>,
    pub op: AssignOp,
    pub value: Expr,
}

/// The operator of an assignment to an existing tensor or scalar.
#[derive(Clone, Copy, Debug)]
pub enum AssignOp {
    Assign,
    AddAssign,
    SubAssign,
    /// `*=`: the target times the right-hand side's value.
    MulAssign(Span),
    /// `/=`: the target divided by the right-hand side's value.
    DivAssign(Span),
}

/// A Rust place naming a tensor or scalar: `a`, `self.w`, `model.layers.0`.
#[derive(Clone, Debug)]
pub struct Place {
    /// The tokens as written, re-emitted verbatim so they resolve like user code.
    pub tokens: TokenStream,
    /// The place as text without spaces or raw-identifier prefixes (`self.w`, `r#v` → `v`):
    /// what `check` groups occurrences by. Text cannot see macro hygiene, so the expansion
    /// proves through `root` that the occurrences of one text name one binding.
    pub text: String,
    /// The first token's span, where diagnostics about the place point.
    pub span: Span,
    /// The first identifier (`a` in `a.w`, or `self`), with its hygiene.
    pub root: syn::Ident,
    /// The first identifier when the place is a bare name (`a`), for index/name clashes.
    pub bare_name: Option<syn::Ident>,
}

/// `[i, k, 0]`: the indices of one access.
#[derive(Clone, Debug)]
pub struct IndexList {
    pub indices: Vec<Index>,
}

/// One entry of an index list.
#[derive(Clone, Debug)]
pub enum Index {
    /// An index variable, `i`.
    Var(syn::Ident),
    /// A fixed position, `0`.
    Position(syn::LitInt),
    /// A fixed position computed by Rust, `{ k + 1 }`.
    Computed(token::Brace, TokenStream),
    /// An index over a range of the axis, `i in 1..n`: the access reads the view of those
    /// positions, `i` running from 0 over its length.
    Range(RangeIndex),
}

/// `i in lo..hi`, either bound left out (`i in 1..`, `i in ..n`).
#[derive(Clone, Debug)]
pub struct RangeIndex {
    pub var: syn::Ident,
    pub lo: Option<Bound>,
    pub hi: Option<Bound>,
}

/// A bound of a range: a number, a Rust `usize` variable, or an expression in braces.
#[derive(Clone, Debug)]
pub enum Bound {
    Literal(syn::LitInt),
    Name(syn::Ident),
    Computed(token::Brace, TokenStream),
}

/// A right-hand side expression.
#[derive(Clone, Debug)]
pub enum Expr {
    Binary {
        left: Box<Expr>,
        op: BinaryOp,
        right: Box<Expr>,
    },
    Neg {
        minus: token::Minus,
        operand: Box<Expr>,
    },
    Paren {
        paren: token::Paren,
        inner: Box<Expr>,
    },
    Access {
        tensor: TensorSource,
        indices: IndexList,
    },
    Literal(syn::Lit),
    /// A Rust scalar named by a place, `alpha`.
    Scalar(Place),
    /// A Rust scalar computed by an expression, `{ 1.0 / n as f64 }`.
    RustScalar(token::Brace, TokenStream),
    Call {
        function: syn::Ident,
        paren: token::Paren,
        args: Vec<Expr>,
    },
}

/// Where an accessed tensor comes from.
#[derive(Clone, Debug)]
pub enum TensorSource {
    Place(Place),
    /// `{ expr }[i, j]`: any Rust expression yielding a tensor or view.
    Rust(token::Brace, TokenStream),
}

#[derive(Clone, Copy, Debug)]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl Expr {
    /// The span of the expression's first token: where a diagnostic about it starts.
    pub fn span(&self) -> Span {
        match self {
            Expr::Binary { left, .. } => left.span(),
            Expr::Neg { minus, .. } => minus.span,
            Expr::Paren { paren, .. } => paren.span.open(),
            Expr::Access { tensor, .. } => tensor.span(),
            Expr::Literal(lit) => lit.span(),
            Expr::Scalar(place) => place.span,
            Expr::RustScalar(brace, _) => brace.span.open(),
            Expr::Call { function, .. } => function.span(),
        }
    }
}

impl TensorSource {
    pub fn span(&self) -> Span {
        match self {
            TensorSource::Place(place) => place.span,
            TensorSource::Rust(brace, _) => brace.span.open(),
        }
    }
}

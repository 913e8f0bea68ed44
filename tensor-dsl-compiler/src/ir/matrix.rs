//! A checked matrix statement (`let (u[i, s], sv[s], vt[s, j]) = svd(t[i, j])`): which axes of
//! each operand are the matrix's rows and which its columns, and where each result's axes come
//! from. Built only by `check::matrix`, so every grouping here is valid: each operand index is
//! a row or a column, never both, and each result axis is a row, a column or the new index.

use proc_macro2::{Ident, Span, TokenStream};

/// The matrix operations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MatrixOp {
    Cholesky,
    Solve,
    Eigh,
    Svd,
    Qr,
    Matpow,
}

impl MatrixOp {
    pub fn from_name(name: &str) -> Option<MatrixOp> {
        Some(match name {
            "cholesky" => MatrixOp::Cholesky,
            "solve" => MatrixOp::Solve,
            "eigh" => MatrixOp::Eigh,
            "svd" => MatrixOp::Svd,
            "qr" => MatrixOp::Qr,
            "matpow" => MatrixOp::Matpow,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            MatrixOp::Cholesky => "cholesky",
            MatrixOp::Solve => "solve",
            MatrixOp::Eigh => "eigh",
            MatrixOp::Svd => "svd",
            MatrixOp::Qr => "qr",
            MatrixOp::Matpow => "matpow",
        }
    }
}

/// An operand read as a matrix.
#[derive(Clone, Debug)]
pub struct MatrixOperand {
    /// The expression to borrow: a place, or a Rust expression in braces.
    pub tokens: TokenStream,
    /// The tensor's name as written (`t`, `self.w`, `{…}`).
    pub name: String,
    /// The access as written, `t[i, j]`.
    pub text: String,
    pub indices: Vec<String>,
    /// Each index's token.
    pub index_spans: Vec<Span>,
    /// The row axes and the column axes, each in the operand's order.
    pub rows: Vec<usize>,
    pub cols: Vec<usize>,
    pub span: Span,
}

/// One result: a tensor whose axis q is axis `order[q]` of the factor the runtime returns, or
/// (`order` none) a scalar.
#[derive(Clone, Debug)]
pub struct MatrixResult {
    pub name: Ident,
    pub mutable: bool,
    pub indices: Vec<String>,
    pub order: Option<Vec<usize>>,
}

#[derive(Clone, Debug)]
pub struct MatrixStatement {
    pub op: MatrixOp,
    /// The function's token, where a type error about the element type lands.
    pub function: Ident,
    pub operands: Vec<MatrixOperand>,
    /// In the order the runtime returns them; `svd`'s truncation error is `None` when the
    /// statement does not bind it.
    pub results: Vec<Option<MatrixResult>>,
    /// `matpow`'s power, `svd`'s `max_rank` and `cutoff`: Rust expressions as written.
    pub power: Option<TokenStream>,
    pub max_rank: Option<TokenStream>,
    pub cutoff: Option<TokenStream>,
    /// The new index of `svd`, `qr` and `eigh`: the factor dimension.
    pub new_index: Option<String>,
}

impl MatrixStatement {
    /// The statement as `explain` shows it: the operation, and each operand's grouping.
    pub fn describe(&self) -> Vec<String> {
        let results: Vec<String> = self
            .results
            .iter()
            .flatten()
            .map(|result| {
                if result.order.is_some() {
                    format!("{}[{}]", result.name, result.indices.join(","))
                } else {
                    result.name.to_string()
                }
            })
            .collect();
        let mut arguments: Vec<String> = self.operands.iter().map(|o| o.text.clone()).collect();
        let options = [
            ("", &self.power),
            ("max_rank = ", &self.max_rank),
            ("cutoff = ", &self.cutoff),
        ];
        for (label, value) in options {
            if let Some(value) = value {
                arguments.push(format!("{label}{value}"));
            }
        }
        let mut lines = vec![format!(
            "let ({}) = {}({})",
            results.join(", "),
            self.op.name(),
            arguments.join(", ")
        )];
        for operand in &self.operands {
            let names = |axes: &[usize]| {
                let names: Vec<&str> = axes.iter().map(|&a| operand.indices[a].as_str()).collect();
                names.join(",")
            };
            lines.push(format!(
                "  {} as a matrix: rows ({}) × columns ({})",
                operand.text,
                names(&operand.rows),
                names(&operand.cols)
            ));
        }
        if let Some(new) = &self.new_index {
            lines.push(format!("  new index {new}: the factor dimension"));
        }
        lines
    }
}

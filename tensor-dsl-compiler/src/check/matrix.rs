//! A parsed matrix statement → its checked form: each operand's indices split into rows and
//! columns by which result holds them, the new index found, each result's axes placed. Every
//! grouping mistake is an error on its token: an index on both sides, an index in no result, a
//! result index that is neither the operand's nor the new one, a wrong count of results or
//! arguments.

use std::collections::HashMap;

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;

use super::resolve::braced;
use crate::diagnostics::Errors;
use crate::ir::matrix::{MatrixOp, MatrixOperand, MatrixResult, MatrixStatement};
use crate::syntax::{self, Expr, Index, IndexList, TensorSource};

/// Checks one matrix statement; `None` after reporting its errors.
pub fn check_matrix(
    statement: &syntax::MatrixStatement,
    errors: &mut Errors,
) -> Option<MatrixStatement> {
    let mut cx = Checker {
        errors,
        failed: false,
    };
    let function = &statement.function;
    let op = MatrixOp::from_name(&function.to_string()).expect("parsed as a matrix function");
    let statement = cx.statement(op, statement);
    (!cx.failed).then_some(statement).flatten()
}

struct Checker<'e> {
    errors: &'e mut Errors,
    failed: bool,
}

/// An index list of variables only, as names with their spans.
type Names = Vec<(String, Span)>;

/// What each operation takes and returns, for arity messages.
fn signature(op: MatrixOp) -> &'static str {
    match op {
        MatrixOp::Cholesky => "`let l[i, j] = cholesky(a[i, j]);`",
        MatrixOp::Solve => "`let x[j, r] = solve(a[i, j], b[i, r]);` (a · x = b)",
        MatrixOp::Eigh => "`let (w[s], v[i, s]) = eigh(h[i, j]);`",
        MatrixOp::Svd => {
            "`let (u[i, s], sv[s], vt[s, j]) = svd(t[i, j]);`, optionally binding the truncation error as a fourth result"
        }
        MatrixOp::Qr => "`let (q[i, s], r[s, j]) = qr(t[i, j]);`",
        MatrixOp::Matpow => "`let p[i, j] = matpow(a[i, j], 3);`",
    }
}

impl Checker<'_> {
    fn error(&mut self, span: Span, message: impl std::fmt::Display) {
        self.errors.error(span, message);
        self.failed = true;
    }

    fn statement(
        &mut self,
        op: MatrixOp,
        statement: &syntax::MatrixStatement,
    ) -> Option<MatrixStatement> {
        let function = &statement.function;
        let name = op.name();
        let (accesses, scalars) = match op {
            MatrixOp::Solve => (2, 0),
            MatrixOp::Matpow => (1, 1),
            _ => (1, 0),
        };
        if statement.args.len() != accesses + scalars {
            self.error(
                function.span(),
                format!(
                    "`{name}` takes {} argument{}: {}",
                    accesses + scalars,
                    if accesses + scalars == 1 { "" } else { "s" },
                    signature(op)
                ),
            );
            return None;
        }
        let mut operands = Vec::new();
        for arg in &statement.args[..accesses] {
            operands.push(self.operand(name, arg)?);
        }
        let power = match op {
            MatrixOp::Matpow => Some(self.scalar(&statement.args[1], "the power")?),
            _ => None,
        };
        let (mut max_rank, mut cutoff) = (None, None);
        for (option, value) in &statement.options {
            let slot = match (op, option.to_string().as_str()) {
                (MatrixOp::Svd, "max_rank") => &mut max_rank,
                (MatrixOp::Svd, "cutoff") => &mut cutoff,
                (MatrixOp::Svd, _) => {
                    self.error(
                        option.span(),
                        format!("`svd` has no option `{option}`: its options are `max_rank` (a `usize`) and `cutoff` (an `f64`)"),
                    );
                    continue;
                }
                _ => {
                    self.error(
                        option.span(),
                        format!(
                            "`{name}` takes no options; only `svd` does (`max_rank`, `cutoff`)"
                        ),
                    );
                    continue;
                }
            };
            if slot.is_some() {
                self.error(option.span(), format!("`{option}` is given twice"));
            }
            *slot = Some(self.scalar(value, &format!("`{option}`"))?);
        }
        let results = self.results(statement)?;
        let (expected, plural) = match op {
            MatrixOp::Cholesky | MatrixOp::Solve | MatrixOp::Matpow => (1..=1, "one result"),
            MatrixOp::Eigh | MatrixOp::Qr => (2..=2, "two results"),
            MatrixOp::Svd => (3..=4, "three results, or four with the truncation error"),
        };
        if !expected.contains(&results.len()) {
            self.error(
                statement.let_token.span,
                format!(
                    "`{name}` binds {plural}, but this `let` binds {}: {}",
                    results.len(),
                    signature(op)
                ),
            );
            return None;
        }
        let mut checked = MatrixStatement {
            op,
            function: function.clone(),
            operands,
            results: Vec::new(),
            power,
            max_rank,
            cutoff,
            new_index: None,
        };
        match op {
            MatrixOp::Cholesky | MatrixOp::Matpow => self.square(&mut checked, &results[0])?,
            MatrixOp::Solve => self.solve(&mut checked, &results[0])?,
            MatrixOp::Eigh | MatrixOp::Svd | MatrixOp::Qr => {
                self.factors(&mut checked, &results)?
            }
        }
        Some(checked)
    }

    /// An operand: one access whose indices are distinct index variables.
    fn operand(&mut self, function: &str, arg: &Expr) -> Option<MatrixOperand> {
        let Expr::Access { tensor, indices } = arg else {
            self.error(
                arg.span(),
                format!("`{function}` takes a tensor access such as `a[i, j]` here; compute an expression into a tensor with a statement before it"),
            );
            return None;
        };
        let (tokens, name) = match tensor {
            TensorSource::Place(place) => (place.tokens.clone(), place.text.clone()),
            TensorSource::Rust(brace, tokens) => {
                (braced(tokens, brace.span.join()), "{…}".to_owned())
            }
        };
        let names = self.index_names(indices, &name)?;
        let text = format!(
            "{name}[{}]",
            names
                .iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        Some(MatrixOperand {
            tokens,
            name,
            text,
            index_spans: names.iter().map(|(_, span)| *span).collect(),
            indices: names.into_iter().map(|(n, _)| n).collect(),
            rows: Vec::new(),
            cols: Vec::new(),
            span: tensor.span(),
        })
    }

    /// The index variables of an access or result, distinct.
    fn index_names(&mut self, indices: &IndexList, name: &str) -> Option<Names> {
        let mut names: Names = Vec::new();
        let mut ok = true;
        for index in &indices.indices {
            match index {
                Index::Var(var) => {
                    let text = var.unraw().to_string();
                    if names.iter().any(|(seen, _)| *seen == text) {
                        self.error(
                            var.span(),
                            format!("index `{text}` is repeated in `{name}`: a matrix operation reads each axis of a tensor as a row or a column, so each index of one access is different"),
                        );
                        ok = false;
                    }
                    names.push((text, var.span()));
                }
                Index::Position(literal) => {
                    self.error(
                        literal.span(),
                        format!("a matrix operation takes whole axes: fix the position in a view first, such as `{{ {name}.view().index_axis(axis, {literal}) }}[..]`"),
                    );
                    ok = false;
                }
                Index::Computed(brace, _) => {
                    self.error(
                        brace.span.join(),
                        "a matrix operation takes whole axes: fix the position in a view first, with `index_axis`",
                    );
                    ok = false;
                }
                Index::Range(range) => {
                    self.error(
                        range.var.span(),
                        format!("a matrix operation takes whole axes: slice a view first, such as `{{ {name}.view().slice_axis(axis, lo..hi) }}[..]`"),
                    );
                    ok = false;
                }
            }
        }
        ok.then_some(names)
    }

    /// A Rust value as an argument: a literal, a place, or an expression in braces (perhaps
    /// negated or in parentheses).
    fn scalar(&mut self, arg: &Expr, what: &str) -> Option<TokenStream> {
        let tokens = expression_tokens(arg);
        if tokens.is_none() {
            self.error(
                arg.span(),
                format!("{what} is a Rust value: a literal, a variable, or an expression in braces such as `{{ n + 1 }}`"),
            );
        }
        tokens
    }

    /// The results as written: tensors with their indices, or a scalar.
    fn results(&mut self, statement: &syntax::MatrixStatement) -> Option<Vec<Written>> {
        let mut results: Vec<Written> = Vec::new();
        let mut ok = true;
        for result in &statement.results {
            let name = result.name.unraw().to_string();
            if results.iter().any(|seen| seen.name.unraw() == name) {
                self.error(
                    result.name.span(),
                    format!("`{name}` is bound twice by this `let`; give each result its own name"),
                );
                ok = false;
            }
            let indices = match &result.indices {
                Some(indices) => Some(self.index_names(indices, &name)?),
                None => None,
            };
            results.push(Written {
                name: result.name.clone(),
                mutable: result.mutability.is_some(),
                indices,
            });
        }
        ok.then_some(results)
    }

    /// A result that must be a tensor: its indices, or an error on its name.
    fn tensor_indices<'w>(&mut self, result: &'w Written, role: &str) -> Option<&'w Names> {
        if result.indices.is_none() {
            self.error(
                result.name.span(),
                format!(
                    "`{}` is {role}, a tensor: give it indices, such as `{}[i, s]`",
                    result.name, result.name
                ),
            );
        }
        result.indices.as_ref()
    }

    /// `cholesky` and `matpow`: the operand's first half of indices are the rows, its second
    /// half the columns; the result holds each of them once, in any order.
    fn square(&mut self, checked: &mut MatrixStatement, result: &Written) -> Option<()> {
        let name = checked.op.name();
        let operand = &mut checked.operands[0];
        let rank = operand.indices.len();
        if rank % 2 == 1 {
            let text = operand.text.clone();
            self.error(
                operand.span,
                format!("`{name}` reads `{text}` as a square matrix, its first half of indices the rows and its second half the columns, so it needs an even number of indices"),
            );
            return None;
        }
        operand.rows = (0..rank / 2).collect();
        operand.cols = (rank / 2..rank).collect();
        let indices = self.tensor_indices(result, &format!("the result of `{name}`"))?;
        let mut order = Vec::new();
        let operand = &checked.operands[0];
        for (index, span) in indices {
            match operand.indices.iter().position(|known| known == index) {
                Some(axis) => order.push(axis),
                None => self.error(
                    *span,
                    format!("`{index}` is not an index of `{}`: the result of `{name}` has the operand's indices, in any order", operand.text),
                ),
            }
        }
        for (axis, index) in operand.indices.iter().enumerate() {
            if !order.contains(&axis) {
                self.error(
                    result.name.span(),
                    format!("`{}` lacks index `{index}` of `{}`: the result of `{name}` has each of the operand's indices", result.name, operand.text),
                );
            }
        }
        checked.results = vec![Some(result.checked(order))];
        Some(())
    }

    /// `solve(a, b)` → x with a · x = b in Einstein notation: a's indices shared with b are the
    /// rows (the equations), those shared with x the columns (the unknowns); b's other indices
    /// are the right-hand sides, which x holds too.
    fn solve(&mut self, checked: &mut MatrixStatement, result: &Written) -> Option<()> {
        let x = self.tensor_indices(result, "the solution of `solve`")?;
        let [a, b] = [&checked.operands[0], &checked.operands[1]];
        let in_x = |index: &String| x.iter().any(|(n, _)| n == index);
        let (mut a_rows, mut a_cols, mut b_rows, mut b_cols) = (vec![], vec![], vec![], vec![]);
        for (axis, index) in a.indices.iter().enumerate() {
            let in_b = b.indices.iter().position(|known| known == index);
            match (in_b, in_x(index)) {
                (Some(b_axis), false) => {
                    a_rows.push(axis);
                    b_rows.push(b_axis);
                }
                (None, true) => a_cols.push(axis),
                (Some(_), true) => self.error(
                    a.index_spans[axis],
                    format!("index `{index}` of `{}` is in both `{}` and `{}`: `solve` reads `a · x = b`, each index of `a` shared with `b` (a row) or with `{}` (a column), not both", a.text, b.text, result.name, result.name),
                ),
                (None, false) => self.error(
                    a.index_spans[axis],
                    format!("index `{index}` of `{}` is in neither `{}` nor `{}`: `solve` reads `a · x = b`, so each index of `a` is shared with `b` (a row) or with `{}` (a column)", a.text, b.text, result.name, result.name),
                ),
            }
        }
        for (axis, index) in b.indices.iter().enumerate() {
            if !a.indices.contains(index) {
                if in_x(index) {
                    b_cols.push(axis);
                } else {
                    self.error(
                        b.index_spans[axis],
                        format!("index `{index}` of `{}` is in neither `{}` nor `{}`: each index of `b` is a row of `a` or a right-hand side that `{}` holds too", b.text, a.text, result.name, result.name),
                    );
                }
            }
        }
        // x's axes come back as (a's columns, b's columns).
        let source: Vec<&String> = a_cols
            .iter()
            .map(|&axis| &a.indices[axis])
            .chain(b_cols.iter().map(|&axis| &b.indices[axis]))
            .collect();
        let mut order = Vec::new();
        for (index, span) in x {
            match source.iter().position(|known| *known == index) {
                Some(at) => order.push(at),
                None if a.indices.contains(index) => {} // reported above: in both
                None => self.error(
                    *span,
                    format!("index `{index}` of `{}` is in neither `{}` nor `{}`: the solution holds the columns of `a` and the right-hand sides of `b`", result.name, a.text, b.text),
                ),
            }
        }
        let (a, b) = checked.operands.split_at_mut(1);
        (a[0].rows, a[0].cols) = (a_rows, a_cols);
        (b[0].rows, b[0].cols) = (b_rows, b_cols);
        checked.results = vec![Some(result.checked(order))];
        Some(())
    }

    /// `eigh`, `svd`, `qr`: a new index names the factor dimension; each operand index is a
    /// row (in the first factor) or a column (in the last), read from which result holds it.
    fn factors(&mut self, checked: &mut MatrixStatement, results: &[Written]) -> Option<()> {
        let op = checked.op;
        let name = op.name();
        let operand = checked.operands[0].clone();
        let known = |index: &String| operand.indices.contains(index);
        // The new index: the one index of the results that the operand lacks.
        let mut new: Option<String> = None;
        for result in results {
            for (index, span) in result.indices.iter().flatten() {
                if known(index) {
                    continue;
                }
                match &new {
                    None => new = Some(index.clone()),
                    Some(first) if first == index => {}
                    Some(first) => self.error(
                        *span,
                        format!("`{index}` is neither an index of `{}` nor the new index `{first}`: `{name}` makes one new index, the factor dimension", operand.text),
                    ),
                }
            }
        }
        let Some(new) = new else {
            self.error(
                checked.function.span(),
                format!(
                    "`{name}` needs a new index for the factor dimension, in each result: {}",
                    signature(op)
                ),
            );
            return None;
        };
        let (first, values, last) = match op {
            MatrixOp::Eigh => (None, Some(&results[0]), Some(&results[1])),
            MatrixOp::Svd => (Some(&results[0]), Some(&results[1]), Some(&results[2])),
            MatrixOp::Qr => (Some(&results[0]), None, Some(&results[1])),
            _ => unreachable!("not a factorization"),
        };
        if let Some(values) = values {
            let indices = self.tensor_indices(values, "a vector of values")?;
            if indices.len() != 1 || indices[0].0 != new {
                self.error(
                    values.name.span(),
                    format!("`{}` holds the {} values, one per value of the new index: write `{}[{new}]`", values.name, if op == MatrixOp::Svd { "singular" } else { "eigen" }, values.name),
                );
            }
        }
        // Each factor holds the new index once, and operand indices of its own side.
        let mut side_of = vec![None::<usize>; operand.indices.len()];
        let factors: Vec<(usize, &Written)> = match op {
            MatrixOp::Eigh => vec![(0, last.expect("eigh has vectors"))],
            _ => vec![
                (0, first.expect("a first factor")),
                (1, last.expect("a last factor")),
            ],
        };
        for &(side, factor) in &factors {
            let indices = self.tensor_indices(factor, "a factor")?;
            if !indices.iter().any(|(index, _)| *index == new) {
                self.error(
                    factor.name.span(),
                    format!(
                        "`{}` lacks the new index `{new}`: each factor of `{name}` holds it",
                        factor.name
                    ),
                );
            }
            for (index, span) in indices {
                let Some(axis) = operand.indices.iter().position(|known| known == index) else {
                    continue;
                };
                match side_of[axis] {
                    None => side_of[axis] = Some(side),
                    Some(_) => self.error(
                        *span,
                        format!("index `{index}` of `{}` is on both sides: each index of the operand is a row (in `{}`) or a column (in `{}`), not both", operand.text, factors[0].1.name, factors[factors.len() - 1].1.name),
                    ),
                }
            }
        }
        let (rows, cols): (Vec<usize>, Vec<usize>) = match op {
            // eigh: the rows are in v; the columns are the rest.
            MatrixOp::Eigh => {
                (0..operand.indices.len()).partition(|&axis| side_of[axis] == Some(0))
            }
            _ => {
                for (axis, side) in side_of.iter().enumerate() {
                    if side.is_none() {
                        self.error(
                            operand.index_spans[axis],
                            format!("index `{}` of `{}` is in no result: put it in `{}` (a row) or in `{}` (a column)", operand.indices[axis], operand.text, factors[0].1.name, factors[1].1.name),
                        );
                    }
                }
                (0..operand.indices.len()).partition(|&axis| side_of[axis] == Some(0))
            }
        };
        if op == MatrixOp::Eigh && (rows.is_empty() || cols.is_empty()) {
            let v = &factors[0].1.name;
            self.error(
                v.span(),
                format!("`{v}` must hold some but not all indices of `{}`: those it holds are the rows of the matrix, the others its columns", operand.text),
            );
            return None;
        }
        // The factors come back as (rows, new) and (new, columns).
        let place = |factor: &Written, source: Vec<&String>| {
            let order = factor
                .indices
                .iter()
                .flatten()
                .filter_map(|(index, _)| source.iter().position(|known| *known == index))
                .collect();
            factor.checked(order)
        };
        let row_names: Vec<&String> = rows.iter().map(|&a| &operand.indices[a]).collect();
        let col_names: Vec<&String> = cols.iter().map(|&a| &operand.indices[a]).collect();
        let first_source: Vec<&String> = row_names.iter().copied().chain([&new]).collect();
        let last_source: Vec<&String> = [&new]
            .into_iter()
            .chain(col_names.iter().copied())
            .collect();
        checked.results = match op {
            MatrixOp::Eigh => vec![
                Some(place(&results[0], vec![&new])),
                Some(place(&results[1], first_source)),
            ],
            MatrixOp::Svd => vec![
                Some(place(&results[0], first_source)),
                Some(place(&results[1], vec![&new])),
                Some(place(&results[2], last_source)),
                results.get(3).map(|error| {
                    if let Some(indices) = &error.indices {
                        let span = indices.first().map_or(error.name.span(), |(_, span)| *span);
                        self.error(
                            span,
                            format!(
                                "`{}` is the truncation error, a number: bind it without indices",
                                error.name
                            ),
                        );
                    }
                    error.scalar()
                }),
            ],
            _ => vec![
                Some(place(&results[0], first_source)),
                Some(place(&results[1], last_source)),
            ],
        };
        checked.operands[0].rows = rows;
        checked.operands[0].cols = cols;
        checked.new_index = Some(new);
        Some(())
    }
}

/// A result as written.
struct Written {
    name: syn::Ident,
    mutable: bool,
    indices: Option<Names>,
}

impl Written {
    fn checked(&self, order: Vec<usize>) -> MatrixResult {
        MatrixResult {
            name: self.name.clone(),
            mutable: self.mutable,
            indices: self
                .indices
                .iter()
                .flatten()
                .map(|(n, _)| n.clone())
                .collect(),
            order: Some(order),
        }
    }

    fn scalar(&self) -> MatrixResult {
        MatrixResult {
            name: self.name.clone(),
            mutable: self.mutable,
            indices: Vec::new(),
            order: None,
        }
    }
}

/// A literal, a Rust value or an expression in braces, perhaps negated or in parentheses, as
/// Rust tokens (`-3`, `(n)`); `None` for anything else.
fn expression_tokens(arg: &Expr) -> Option<TokenStream> {
    Some(match arg {
        Expr::Literal(literal) => literal.to_token_stream(),
        Expr::Scalar(place) => place.tokens.clone(),
        Expr::RustScalar(brace, tokens) => braced(tokens, brace.span.join()),
        Expr::Neg { minus, operand } => {
            let mut tokens = minus.to_token_stream();
            tokens.extend(expression_tokens(operand)?);
            tokens
        }
        Expr::Paren { paren, inner } => {
            let mut group = Group::new(Delimiter::Parenthesis, expression_tokens(inner)?);
            group.set_span(paren.span.join());
            TokenTree::Group(group).into()
        }
        Expr::Access { .. } | Expr::Binary { .. } | Expr::Call { .. } => return None,
    })
}

/// A matrix statement's tensor results have the rank its `let` gives them, and only a `mut`
/// one is written. The statements after it are checked as a part of their own, which sees the
/// results as outside tensors, so this walk over the whole block finds a later access with
/// another number of indices, or a write to a result bound without `mut`, at compile time.
pub fn check_result_ranks(parsed: &[syntax::Parsed], errors: &mut Errors) {
    /// A result's rank, the function that made it, and whether it is `mut`.
    type Results = HashMap<String, (usize, String, bool)>;
    let mut results: Results = HashMap::new();
    let check =
        |results: &Results, place: &syntax::Place, indices: &IndexList, errors: &mut Errors| {
            if place.bare_name.is_none() {
                return;
            }
            if let Some((rank, function, _)) = results.get(&place.text) {
                if *rank != indices.indices.len() {
                    errors.error(
                        place.span,
                        format!(
                        "`{}` has {rank} {} where `{function}` binds it, but this access uses {}",
                        place.text,
                        if *rank == 1 { "index" } else { "indices" },
                        indices.indices.len()
                    ),
                    );
                }
            }
        };
    for statement in parsed {
        let syntax::Parsed::Ok(statement) = statement else {
            continue;
        };
        match &**statement {
            syntax::Statement::Matrix(matrix) => {
                for arg in &matrix.args {
                    visit_accesses(arg, &mut |place, indices| {
                        check(&results, place, indices, errors)
                    });
                }
                for result in &matrix.results {
                    let name = result.name.unraw().to_string();
                    match &result.indices {
                        Some(indices) => {
                            let function = matrix.function.to_string();
                            let mutable = result.mutability.is_some();
                            results.insert(name, (indices.indices.len(), function, mutable));
                        }
                        None => {
                            results.remove(&name);
                        }
                    }
                }
            }
            syntax::Statement::Let(statement) => {
                visit_accesses(&statement.value, &mut |place, indices| {
                    check(&results, place, indices, errors)
                });
                results.remove(&statement.name.unraw().to_string());
            }
            syntax::Statement::Assign(statement) => {
                if let Some(indices) = &statement.indices {
                    check(&results, &statement.place, indices, errors);
                    let written = statement
                        .place
                        .bare_name
                        .as_ref()
                        .and_then(|_| results.get(&statement.place.text));
                    if let Some((_, function, false)) = written {
                        errors.error(
                            statement.place.span,
                            format!(
                                "`{}` is written here, but the `{function}` statement binds it without `mut`; write `mut {}[..]` in that `let`",
                                statement.place.text, statement.place.text
                            ),
                        );
                    }
                }
                visit_accesses(&statement.value, &mut |place, indices| {
                    check(&results, place, indices, errors)
                });
            }
        }
    }
}

/// Calls `f` on every access of a named tensor in `expr`.
fn visit_accesses(expr: &Expr, f: &mut impl FnMut(&syntax::Place, &IndexList)) {
    match expr {
        Expr::Access {
            tensor: TensorSource::Place(place),
            indices,
        } => f(place, indices),
        Expr::Access { .. } | Expr::Literal(_) | Expr::Scalar(_) | Expr::RustScalar(..) => {}
        Expr::Binary { left, right, .. } => {
            visit_accesses(left, f);
            visit_accesses(right, f);
        }
        Expr::Neg { operand, .. } => visit_accesses(operand, f),
        Expr::Paren { inner, .. } => visit_accesses(inner, f),
        Expr::Call { args, .. } => args.iter().for_each(|arg| visit_accesses(arg, f)),
    }
}

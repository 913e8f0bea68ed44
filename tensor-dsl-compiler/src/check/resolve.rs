//! Names → ids: each access gets the tensor binding it reads (a `let` of the block shadows the
//! name for later statements, as in Rust), scalars are numbered in evaluation order (then the
//! statement's computed `powi` exponents, evaluated after its scalars), top-level terms are
//! flattened. Reports the mistakes visible while resolving: unknown functions, wrong
//! arity, fixed positions on a `let`, a name used both as an index and as a tensor or scalar.
//!
//! A proc macro cannot compare hygiene, so names are grouped by their text (`r#v` is `v`), and
//! every later token of a group is recorded with the group's first token in
//! `Program::same_bindings`: the expansion makes rustc prove they name one variable.

use std::collections::HashMap;

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{quote_spanned, ToTokens};
use syn::ext::IdentExt;

use crate::diagnostics::Errors;
use crate::ir::{self, Position, Slot, TensorId, TensorOrigin};
use crate::syntax::{self, BinaryOp, Index, IndexList, TensorSource};

/// Resolves every statement; a statement with a resolution error is dropped after reporting.
pub fn resolve(statements: &[&syntax::Statement], errors: &mut Errors) -> ir::Program {
    let mut resolver = Resolver {
        errors,
        program: ir::Program {
            tensors: Vec::new(),
            positions: Vec::new(),
            statements: Vec::new(),
            same_bindings: Vec::new(),
        },
        bindings: HashMap::new(),
        first_tokens: Vec::new(),
    };
    for statement in statements {
        resolver.statement(statement);
    }
    resolver.program
}

struct Resolver<'e> {
    errors: &'e mut Errors,
    program: ir::Program,
    /// Place text → the binding it names at this point of the block.
    bindings: HashMap<String, TensorId>,
    /// Per tensor, the token generated code names it by (a `let`'s name, or the root of an
    /// outside tensor's first occurrence); none for `{ expr }` operands.
    first_tokens: Vec<Option<syn::Ident>>,
}

/// What one statement uses, gathered while resolving it.
#[derive(Default)]
struct StatementScope {
    scalars: Vec<ir::Scalar>,
    exponents: Vec<ir::Scalar>,
    /// Bare names used as tensors or scalars, for the index/name clash rule.
    names: Vec<(String, Span)>,
    /// What the statement's operators and functions ask of the element type, at their tokens.
    needs: Vec<(ir::Capability, Span)>,
    /// The views of ranges the statement reads or writes, by base and ranges: one binding each
    /// (`c[i in 1..] *= 2` reads the very view it writes).
    slices: Vec<(TensorId, String, TensorId)>,
    failed: bool,
}

impl Resolver<'_> {
    fn statement(&mut self, statement: &syntax::Statement) {
        let mut scope = StatementScope::default();
        let resolved = match statement {
            syntax::Statement::Let(let_statement) => self.let_statement(let_statement, &mut scope),
            syntax::Statement::Assign(assign) => self.assign_statement(assign, &mut scope),
            syntax::Statement::Matrix(_) => {
                unreachable!("`compile` splits a block at its matrix statements")
            }
        };
        check_index_name_clash(&resolved, &scope, self.errors);
        check_indices_in_positions(&resolved, &self.program.positions, self.errors);
        if !scope.failed {
            self.program.statements.push(resolved);
        }
    }

    fn let_statement(
        &mut self,
        statement: &syntax::LetStatement,
        scope: &mut StatementScope,
    ) -> ir::Statement {
        // The right-hand side still sees the binding this `let` shadows.
        let terms = self.terms(&statement.value, scope);
        let name = statement.name.clone();
        let mutable = statement.mutability.is_some();
        let ty = statement.ty.as_ref().map(ToTokens::to_token_stream);
        let (target, lhs) = match &statement.indices {
            Some(indices) => {
                let lhs = self.slots(indices, scope);
                for (slot, index) in lhs.iter().zip(&indices.indices) {
                    if let Index::Range(range) = index {
                        self.errors.error(
                            range.var.span(),
                            format!(
                                "a new tensor cannot have a range; the indices of `let {name}[..]` name its whole axes: a range belongs on an operand"
                            ),
                        );
                        scope.failed = true;
                    }
                    if let (Slot::Fixed(_), Index::Position(_) | Index::Computed(..)) =
                        (slot, index)
                    {
                        self.errors.error(
                            index_span(index),
                            format!(
                                "a new tensor cannot have a fixed position; the indices of `let {name}[..]` name its axes: use an index variable here"
                            ),
                        );
                        scope.failed = true;
                    }
                }
                let tensor = self.new_tensor(
                    ir::Tensor {
                        origin: TensorOrigin::Let {
                            statement: self.program.statements.len(),
                            name: name.clone(),
                        },
                        name: name_of(&name),
                        rank: lhs.len(),
                        first_access: access_text(&name_of(&name), indices),
                        temporary: false,
                    },
                    Some(name.clone()),
                );
                self.bindings.insert(name_of(&name), tensor);
                let target = ir::Target::NewTensor {
                    name,
                    mutable,
                    ty,
                    tensor,
                };
                (target, lhs)
            }
            None => {
                // A scalar `let` shadows any tensor of the same name for later statements.
                self.bindings.remove(&name_of(&name));
                (ir::Target::NewScalar { name, mutable, ty }, Vec::new())
            }
        };
        ir::Statement {
            target,
            lhs,
            updates: vec![ir::Update {
                op: ir::AssignOp::Assign,
                beta: None,
                terms,
            }],
            scalars: std::mem::take(&mut scope.scalars),
            exponents: std::mem::take(&mut scope.exponents),
            needs: std::mem::take(&mut scope.needs),
            span: statement.let_token.span,
        }
    }

    fn assign_statement(
        &mut self,
        statement: &syntax::AssignStatement,
        scope: &mut StatementScope,
    ) -> ir::Statement {
        let (op, value) = match statement.op {
            syntax::AssignOp::Assign => (ir::AssignOp::Assign, statement.value.clone()),
            syntax::AssignOp::AddAssign => (ir::AssignOp::Add, statement.value.clone()),
            syntax::AssignOp::SubAssign => (ir::AssignOp::Sub, statement.value.clone()),
            syntax::AssignOp::MulAssign(span) => {
                self.check_scaling_assignment(statement, span, "*=", scope);
                (
                    ir::AssignOp::Assign,
                    scaled_target(statement, BinaryOp::Mul),
                )
            }
            syntax::AssignOp::DivAssign(span) => {
                self.check_scaling_assignment(statement, span, "/=", scope);
                (
                    ir::AssignOp::Assign,
                    scaled_target(statement, BinaryOp::Div),
                )
            }
        };
        let (target, lhs) = match &statement.indices {
            Some(indices) => {
                let access = self.place_access(&statement.place, indices, scope);
                let lhs = access.slots.clone();
                (ir::Target::Tensor { access }, lhs)
            }
            None => {
                if let Some(name) = &statement.place.bare_name {
                    scope.names.push((name_of(name), name.span()));
                }
                let target = ir::Target::Scalar {
                    place: statement.place.tokens.clone(),
                    span: statement.place.span,
                };
                (target, Vec::new())
            }
        };
        let terms = self.terms(&value, scope);
        if let ir::Target::Tensor { access } = &target {
            self.check_target_not_sliced(access, &terms, scope);
        }
        ir::Statement {
            target,
            lhs,
            updates: vec![ir::Update {
                op,
                beta: None,
                terms,
            }],
            scalars: std::mem::take(&mut scope.scalars),
            exponents: std::mem::take(&mut scope.exponents),
            needs: std::mem::take(&mut scope.needs),
            span: statement.place.span,
        }
    }

    /// `c[..] *= rhs` and `c[..] /= rhs` combine the target with the value of `rhs`, which is
    /// what `c[..] = c[..] * rhs` means too, by distributivity, while `rhs` is one product
    /// (`Σⱼ c·t = c·Σⱼ t`, `c` using no summed index). A division by a sum, or a product with
    /// terms that sum apart, would need that value first: an error saying to compute it in a
    /// `let`.
    fn check_scaling_assignment(
        &mut self,
        statement: &syntax::AssignStatement,
        op_span: Span,
        op: &str,
        scope: &mut StatementScope,
    ) {
        let left: Vec<String> = statement
            .indices
            .iter()
            .flat_map(|indices| &indices.indices)
            .filter_map(|index| match index {
                Index::Var(var) => Some(name_of(var)),
                _ => None,
            })
            .collect();
        let mut summed: Vec<String> = Vec::new();
        index_names(&statement.value, &mut |name| {
            if !left.contains(&name) && !summed.contains(&name) {
                summed.push(name);
            }
        });
        let Some(first) = summed.first() else {
            return;
        };
        let several_terms = top_level_terms(&statement.value) > 1;
        let message = if op == "/=" {
            format!(
                "`/=` divides by the value of the right-hand side, which sums over `{first}`: compute that sum in a `let` first (`let s[..] = …;`) and divide by it"
            )
        } else if several_terms {
            format!(
                "`*=` multiplies by the whole right-hand side, but its terms are summed over `{first}` one by one: compute the right-hand side in a `let` first and multiply by it"
            )
        } else {
            return;
        };
        self.errors.error(op_span, message);
        scope.failed = true;
    }

    /// Splits a right-hand side into its top-level terms: parentheses around a whole term, and
    /// a minus in front of one, are flattened into the sum.
    fn terms(&mut self, expr: &syntax::Expr, scope: &mut StatementScope) -> Vec<ir::Term> {
        let mut terms = Vec::new();
        self.split_terms(expr, false, scope, &mut terms);
        terms
    }

    fn split_terms(
        &mut self,
        expr: &syntax::Expr,
        negated: bool,
        scope: &mut StatementScope,
        terms: &mut Vec<ir::Term>,
    ) {
        match expr {
            syntax::Expr::Binary {
                left,
                op: op @ (BinaryOp::Add | BinaryOp::Sub),
                right,
            } => {
                self.split_terms(left, negated, scope, terms);
                let flip = matches!(op, BinaryOp::Sub);
                self.split_terms(right, negated ^ flip, scope, terms);
            }
            syntax::Expr::Paren { inner, .. } => self.split_terms(inner, negated, scope, terms),
            syntax::Expr::Neg { operand, .. } => self.split_terms(operand, !negated, scope, terms),
            _ => {
                let expr = self.expr(expr, scope);
                terms.push(ir::Term {
                    scale: ir::Scale::sign(negated),
                    expr,
                    reduction: None,
                });
            }
        }
    }

    fn expr(&mut self, expr: &syntax::Expr, scope: &mut StatementScope) -> ir::Expr {
        match expr {
            syntax::Expr::Binary { left, op, right } => {
                let op = match op {
                    BinaryOp::Add => ir::BinaryOp::Add,
                    BinaryOp::Sub => ir::BinaryOp::Sub,
                    BinaryOp::Mul => ir::BinaryOp::Mul,
                    BinaryOp::Div => {
                        scope.needs.push((ir::Capability::Division, right.span()));
                        ir::BinaryOp::Div
                    }
                };
                let left = self.expr(left, scope);
                let right = self.expr(right, scope);
                ir::Expr::Binary(op, Box::new(left), Box::new(right))
            }
            syntax::Expr::Neg { operand, .. } => ir::Expr::Neg(Box::new(self.expr(operand, scope))),
            syntax::Expr::Paren { inner, .. } => self.expr(inner, scope),
            syntax::Expr::Access { tensor, indices } => {
                let access = match tensor {
                    TensorSource::Place(place) => self.place_access(place, indices, scope),
                    TensorSource::Rust(brace, tokens) => {
                        let text = access_text("{..}", indices);
                        let tensor = self.new_tensor(
                            ir::Tensor {
                                origin: TensorOrigin::Rust(braced(tokens, brace.span.join())),
                                name: "{..}".to_owned(),
                                rank: indices.indices.len(),
                                first_access: text.clone(),
                                temporary: false,
                            },
                            None,
                        );
                        let tensor = self.sliced(tensor, indices, &text, scope);
                        ir::Access {
                            tensor,
                            name: sliced_name("{..}", indices),
                            slots: self.slots(indices, scope),
                            text,
                            span: brace.span.open(),
                        }
                    }
                };
                ir::Expr::Access(access)
            }
            syntax::Expr::Literal(literal) => ir::Expr::Literal(self.literal(literal, scope)),
            syntax::Expr::Scalar(place) => {
                if let Some(name) = &place.bare_name {
                    scope.names.push((name_of(name), name.span()));
                }
                scope.scalars.push(ir::Scalar {
                    tokens: place.tokens.clone(),
                    span: place.span,
                });
                ir::Expr::Scalar(scope.scalars.len() - 1)
            }
            syntax::Expr::RustScalar(brace, tokens) => {
                scope.scalars.push(ir::Scalar {
                    tokens: braced(tokens, brace.span.join()),
                    span: brace.span.open(),
                });
                ir::Expr::Scalar(scope.scalars.len() - 1)
            }
            syntax::Expr::Call {
                function,
                paren,
                args,
            } => self.call(function, paren.span.join(), args, scope),
        }
    }

    fn call(
        &mut self,
        function: &syn::Ident,
        args_span: Span,
        args: &[syntax::Expr],
        scope: &mut StatementScope,
    ) -> ir::Expr {
        use ir::Function::*;
        let name = function.to_string();
        let (resolved, arity) = match name.as_str() {
            "exp" => (Exp, 1),
            // `log` is numpy's and C's name for the natural logarithm.
            "ln" | "log" => (Ln, 1),
            "sqrt" => (Sqrt, 1),
            "abs" => (Abs, 1),
            "sin" => (Sin, 1),
            "cos" => (Cos, 1),
            "tan" => (Tan, 1),
            "tanh" => (Tanh, 1),
            "sigmoid" => (Sigmoid, 1),
            "max" => (Max, 2),
            "min" => (Min, 2),
            "pow" => (Pow, 2),
            "powi" => (Powi(ir::Exponent::Literal(0)), 2),
            "conj" => (Conj, 1),
            "re" => (Re, 1),
            "im" => (Im, 1),
            _ => {
                let message = if crate::syntax::MATRIX_FUNCTIONS.contains(&name.as_str()) {
                    format!(
                        "`{name}` is a matrix operation: it is a whole statement that binds its results, such as `let l[i, j] = cholesky(a[i, j]);`, and cannot be part of an expression; bind it first, then use the result"
                    )
                } else {
                    format!(
                        "unknown function `{name}`; the element-wise functions are exp, ln (or log), sqrt, abs, sin, cos, tan, tanh, sigmoid, max, min, pow, powi, conj, re and im"
                    )
                };
                self.errors.error(function.span(), message);
                scope.failed = true;
                return ir::Expr::Call(Exp, Vec::new(), function.span());
            }
        };
        if args.len() != arity {
            let plural = if arity == 1 { "" } else { "s" };
            let given = match args.len() {
                1 => "1 was".to_owned(),
                n => format!("{n} were"),
            };
            self.errors.error(
                args_span,
                format!("`{name}` takes {arity} argument{plural} but {given} given"),
            );
            scope.failed = true;
            return ir::Expr::Call(resolved, Vec::new(), function.span());
        }
        if let Powi(_) = resolved {
            let exponent = match integer_literal(&args[1]) {
                Some(Ok(exponent)) => ir::Exponent::Literal(exponent),
                Some(Err(())) => {
                    self.errors.error(
                        args[1].span(),
                        "the exponent of `powi` must fit in `i32` (-2147483648 to 2147483647); \
                         for larger powers write `exp(y * ln(x))`",
                    );
                    scope.failed = true;
                    return ir::Expr::Call(resolved, Vec::new(), function.span());
                }
                None => match rust_exponent(&args[1]) {
                    Some((tokens, span, name)) => {
                        if let Some(name) = name {
                            scope.names.push((name_of(name), name.span()));
                        }
                        scope.exponents.push(ir::Scalar { tokens, span });
                        ir::Exponent::Computed(scope.exponents.len() - 1)
                    }
                    None => {
                        self.errors.error(
                            args[1].span(),
                            "the exponent of `powi` must be an integer: a literal such as \
                             `powi(x[i], 3)`, or a Rust `i32` such as `powi(x[i], n)` or \
                             `powi(x[i], {n + 1})`; for a real exponent write `pow(x[i], 2.5)`",
                        );
                        scope.failed = true;
                        return ir::Expr::Call(resolved, Vec::new(), function.span());
                    }
                },
            };
            scope
                .needs
                .push((ir::Capability::Division, function.span()));
            let base = self.expr(&args[0], scope);
            return ir::Expr::Call(Powi(exponent), vec![base], function.span());
        }
        if resolved.capability() != ir::Capability::Any {
            scope.needs.push((resolved.capability(), function.span()));
        }
        let args = args.iter().map(|arg| self.expr(arg, scope)).collect();
        ir::Expr::Call(resolved, args, function.span())
    }

    fn literal(&mut self, literal: &syn::Lit, scope: &mut StatementScope) -> ir::Literal {
        let (value, suffix) = match literal {
            syn::Lit::Int(int) => (int.base10_parse::<f64>(), int.suffix().to_owned()),
            syn::Lit::Float(float) => (float.base10_parse::<f64>(), float.suffix().to_owned()),
            _ => unreachable!("the parser accepts only numeric literals"),
        };
        let value = match value {
            Ok(value) if value.is_finite() => value,
            Ok(_) => {
                self.errors.error(
                    literal.span(),
                    "this number does not fit in a finite `f64`; write a smaller literal",
                );
                scope.failed = true;
                0.0
            }
            Err(error) => {
                self.errors.push(error);
                scope.failed = true;
                0.0
            }
        };
        // What an unsuffixed literal asks of the element type it takes (checked by rustc, on
        // the literal, since only it knows the type).
        let needed = ir::Capability::of_literal(value);
        if needed != ir::Capability::Any {
            scope.needs.push((needed, literal.span()));
        }
        if !matches!(suffix.as_str(), "" | "f32" | "f64" | "i32" | "i64") {
            self.errors.error(
                literal.span(),
                format!(
                    "`{literal}` has the type `{suffix}`, which is no element type (`f32`, `f64`, \
                     `i32`, `i64`): write the number without a suffix (`{value}`), which takes \
                     the statement's element type",
                    literal = literal.to_token_stream(),
                ),
            );
            scope.failed = true;
        }
        ir::Literal {
            value,
            suffixed: (!suffix.is_empty()).then(|| literal.to_token_stream()),
            span: literal.span(),
        }
    }

    fn place_access(
        &mut self,
        place: &syntax::Place,
        indices: &IndexList,
        scope: &mut StatementScope,
    ) -> ir::Access {
        if let Some(name) = &place.bare_name {
            scope.names.push((name_of(name), name.span()));
        }
        let text = access_text(&place.text, indices);
        let tensor = match self.bindings.get(&place.text) {
            Some(&tensor) => {
                self.prove_same_binding(tensor, &place.root);
                tensor
            }
            None => {
                let tensor = self.new_tensor(
                    ir::Tensor {
                        origin: TensorOrigin::External(place.tokens.clone()),
                        name: place.text.clone(),
                        rank: indices.indices.len(),
                        first_access: text.clone(),
                        temporary: false,
                    },
                    Some(place.root.clone()),
                );
                self.bindings.insert(place.text.clone(), tensor);
                tensor
            }
        };
        let tensor = self.sliced(tensor, indices, &text, scope);
        ir::Access {
            tensor,
            name: sliced_name(&place.text, indices),
            slots: self.slots(indices, scope),
            text,
            span: place.span,
        }
    }

    /// The tensor an access reads: `tensor` itself, or, where the access has ranges
    /// (`x[i in 1..n]`), a new binding for the view of those positions (`TensorOrigin::Slice`),
    /// its bounds numbered among the block's positions.
    fn sliced(
        &mut self,
        tensor: TensorId,
        indices: &IndexList,
        text: &str,
        scope: &mut StatementScope,
    ) -> TensorId {
        let mut ranges = Vec::new();
        for (axis, index) in indices.indices.iter().enumerate() {
            let Index::Range(range) = index else {
                continue;
            };
            let lo = match &range.lo {
                Some(bound) => self.bound(bound, scope),
                None => Position::Literal(0),
            };
            let hi = range.hi.as_ref().map(|bound| self.bound(bound, scope));
            ranges.push(ir::SliceRange { axis, lo, hi });
        }
        if ranges.is_empty() {
            return tensor;
        }
        let key = sliced_name("", indices);
        if let Some(&(_, _, slice)) = scope
            .slices
            .iter()
            .find(|(base, seen, _)| *base == tensor && *seen == key)
        {
            return slice;
        }
        let base = &self.program.tensors[tensor];
        let slice = ir::Tensor {
            origin: TensorOrigin::Slice {
                base: tensor,
                ranges,
            },
            name: base.name.clone(),
            rank: indices.indices.len(),
            first_access: text.to_owned(),
            temporary: false,
        };
        let slice = self.new_tensor(slice, None);
        scope.slices.push((tensor, key, slice));
        slice
    }

    /// A statement writes its target through a borrow of the target's tensor that no other
    /// view of it can share: reading a range of its own target (`x[i] = x[i in 1..n]`), or the
    /// tensor a range target cuts (`x[i in 0..2] = x[i]`), is refused with the way around it.
    fn check_target_not_sliced(
        &mut self,
        target: &ir::Access,
        terms: &[ir::Term],
        scope: &mut StatementScope,
    ) {
        let program = &self.program;
        let target_is_slice = matches!(
            program.tensors[target.tensor].origin,
            TensorOrigin::Slice { .. }
        );
        let mut refused = Vec::new();
        for term in terms {
            term.expr.visit_accesses(&mut |access| {
                if access.tensor == target.tensor
                    || program.memory_of(access.tensor) != program.memory_of(target.tensor)
                {
                    return;
                }
                let read_is_slice = matches!(
                    program.tensors[access.tensor].origin,
                    TensorOrigin::Slice { .. }
                );
                if read_is_slice || target_is_slice {
                    refused.push((access.span, access.text.clone()));
                }
            });
        }
        for (span, text) in refused {
            self.errors.error(
                span,
                format!(
                    "`{text}` reads the tensor this statement writes through `{}`, another view of it: read it into a `let` first, then write the target from that",
                    target.text
                ),
            );
            scope.failed = true;
        }
    }

    /// A range's bound as a position: a number, or a Rust value evaluated when the block starts.
    fn bound(&mut self, bound: &syntax::Bound, scope: &mut StatementScope) -> Position {
        let tokens = match bound {
            syntax::Bound::Literal(literal) => {
                return Position::Literal(literal.base10_parse::<usize>().unwrap_or_else(|error| {
                    self.errors.push(error);
                    scope.failed = true;
                    0
                }))
            }
            syntax::Bound::Name(name) => {
                scope.names.push((name_of(name), name.span()));
                name.to_token_stream()
            }
            syntax::Bound::Computed(brace, tokens) => braced(tokens, brace.span.join()),
        };
        self.program.positions.push(tokens);
        Position::Computed(self.program.positions.len() - 1)
    }

    fn new_tensor(&mut self, tensor: ir::Tensor, first_token: Option<syn::Ident>) -> TensorId {
        self.program.tensors.push(tensor);
        self.first_tokens.push(first_token);
        self.program.tensors.len() - 1
    }

    /// Records that `later`, grouped with `tensor` by its text, must name the variable the
    /// tensor's first token names. Names that a `let` cannot shadow are left out: `self`, and
    /// names starting with an uppercase letter (a `const` or `static` would turn the proof's
    /// `let` into a pattern).
    fn prove_same_binding(&mut self, tensor: TensorId, later: &syn::Ident) {
        let Some(Some(first)) = self.first_tokens.get(tensor) else {
            return;
        };
        let name = name_of(later);
        if name == "self" || name.starts_with(|c: char| c.is_uppercase()) {
            return;
        }
        self.program.same_bindings.push(ir::SameBinding {
            first: first.clone(),
            later: later.clone(),
        });
    }

    fn slots(&mut self, indices: &IndexList, scope: &mut StatementScope) -> Vec<Slot> {
        indices
            .indices
            .iter()
            .map(|index| match index {
                Index::Var(ident) | Index::Range(syntax::RangeIndex { var: ident, .. }) => {
                    Slot::Var(ir::IndexVar {
                        name: name_of(ident),
                        span: ident.span(),
                    })
                }
                Index::Position(literal) => {
                    let position = literal.base10_parse::<usize>().unwrap_or_else(|error| {
                        self.errors.push(error);
                        scope.failed = true;
                        0
                    });
                    Slot::Fixed(Position::Literal(position))
                }
                Index::Computed(brace, tokens) => {
                    self.program
                        .positions
                        .push(braced(tokens, brace.span.join()));
                    Slot::Fixed(Position::Computed(self.program.positions.len() - 1))
                }
            })
            .collect()
    }
}

// A name is either an index or a tensor/scalar within one statement, never both:
// `c[i] = a[i] * i` cannot mean anything sensible.
fn check_index_name_clash(statement: &ir::Statement, scope: &StatementScope, errors: &mut Errors) {
    let vars = statement.all_vars();
    for (name, span) in &scope.names {
        if vars.iter().any(|var| &var.name == name) {
            errors.error(
                *span,
                format!(
                    "`{name}` is used both as an index and as a tensor or scalar in this statement; rename the index or the variable"
                ),
            );
        }
    }
}

// A `{ … }` position is a Rust `usize` evaluated once when the block starts, so it cannot use
// the statement's indices: `x[{i + k}]` would be index arithmetic, which the language lacks
// (rustc would only say that `i` is no value in scope).
fn check_indices_in_positions(
    statement: &ir::Statement,
    positions: &[TokenStream],
    errors: &mut Errors,
) {
    let vars = statement.all_vars();
    let mut accesses = Vec::new();
    if let ir::Target::Tensor { access } = &statement.target {
        accesses.push(access);
    }
    for term in statement.terms() {
        term.expr
            .visit_accesses(&mut |access| accesses.push(access));
    }
    for access in accesses {
        for slot in &access.slots {
            let Slot::Fixed(Position::Computed(k)) = slot else {
                continue;
            };
            let mut idents = Vec::new();
            idents_in(positions[*k].clone(), &mut idents);
            if let Some(ident) = idents
                .into_iter()
                .find(|ident| vars.iter().any(|var| var.name == name_of(ident)))
            {
                errors.error(
                    ident.span(),
                    format!(
                        "`{ident}` is an index of this statement, but a `{{ … }}` position is a \
                         Rust `usize` computed once when the block starts, so it cannot use \
                         one: index arithmetic is not supported; shift the tensor instead, with \
                         a view written as a Rust expression in braces such as \
                         `{{ x.view().slice_axis(0, k..n) }}[{ident}]`"
                    ),
                );
            }
        }
    }
}

/// Every identifier in `tokens`, groups included.
fn idents_in(tokens: TokenStream, out: &mut Vec<proc_macro2::Ident>) {
    for token in tokens {
        match token {
            TokenTree::Ident(ident) => out.push(ident),
            TokenTree::Group(group) => idents_in(group.stream(), out),
            TokenTree::Punct(_) | TokenTree::Literal(_) => {}
        }
    }
}

/// A name as `check` compares it: its text without a raw-identifier prefix (`r#v` is `v`).
/// `target (op) (rhs)` for `*=` and `/=`: the target read where it is written, combined with
/// the right-hand side as one operand.
fn scaled_target(statement: &syntax::AssignStatement, op: BinaryOp) -> syntax::Expr {
    let target = match &statement.indices {
        Some(indices) => syntax::Expr::Access {
            tensor: TensorSource::Place(statement.place.clone()),
            indices: indices.clone(),
        },
        None => syntax::Expr::Scalar(statement.place.clone()),
    };
    syntax::Expr::Binary {
        left: Box::new(target),
        op,
        right: Box::new(statement.value.clone()),
    }
}

/// Calls `found` with the name of every index variable `expr` uses, repeats included.
fn index_names(expr: &syntax::Expr, found: &mut dyn FnMut(String)) {
    match expr {
        syntax::Expr::Binary { left, right, .. } => {
            index_names(left, found);
            index_names(right, found);
        }
        syntax::Expr::Neg { operand: inner, .. } | syntax::Expr::Paren { inner, .. } => {
            index_names(inner, found)
        }
        syntax::Expr::Access { indices, .. } => {
            for index in &indices.indices {
                if let Index::Var(var) = index {
                    found(name_of(var));
                }
            }
        }
        syntax::Expr::Call { args, .. } => args.iter().for_each(|arg| index_names(arg, found)),
        syntax::Expr::Literal(_) | syntax::Expr::Scalar(_) | syntax::Expr::RustScalar(..) => {}
    }
}

/// How many top-level terms `expr` has (as `Resolver::terms` splits them).
fn top_level_terms(expr: &syntax::Expr) -> usize {
    match expr {
        syntax::Expr::Binary {
            left,
            op: BinaryOp::Add | BinaryOp::Sub,
            right,
        } => top_level_terms(left) + top_level_terms(right),
        syntax::Expr::Paren { inner, .. } | syntax::Expr::Neg { operand: inner, .. } => {
            top_level_terms(inner)
        }
        _ => 1,
    }
}

fn name_of(ident: &syn::Ident) -> String {
    ident.unraw().to_string()
}

/// `{ tokens }` as one expression token, spanned like the user's braces.
pub(super) fn braced(tokens: &TokenStream, span: Span) -> TokenStream {
    let mut group = Group::new(Delimiter::Brace, tokens.clone());
    group.set_span(span);
    TokenTree::Group(group).into()
}

/// An integer literal (possibly negated or parenthesised) as an `i32`: `None` if `expr` is no
/// integer literal, `Some(Err(()))` if it is one outside `i32`'s range.
/// A `powi` exponent computed by Rust (a place or `{ expr }`, maybe negated or parenthesized):
/// its tokens, span and bare name, if it has one.
fn rust_exponent(expr: &syntax::Expr) -> Option<(TokenStream, Span, Option<&syn::Ident>)> {
    match expr {
        syntax::Expr::Scalar(place) => {
            Some((place.tokens.clone(), place.span, place.bare_name.as_ref()))
        }
        syntax::Expr::RustScalar(brace, tokens) => {
            Some((braced(tokens, brace.span.join()), brace.span.open(), None))
        }
        syntax::Expr::Neg { minus, operand } => {
            let (tokens, _, name) = rust_exponent(operand)?;
            let span = minus.span;
            Some((quote_spanned!(span=> -(#tokens)), span, name))
        }
        syntax::Expr::Paren { inner, .. } => rust_exponent(inner),
        _ => None,
    }
}

fn integer_literal(expr: &syntax::Expr) -> Option<Result<i32, ()>> {
    match expr {
        syntax::Expr::Literal(syn::Lit::Int(int)) => Some(
            int.base10_parse::<i64>()
                .ok()
                .and_then(|v| i32::try_from(v).ok())
                .ok_or(()),
        ),
        syntax::Expr::Neg { operand, .. } => integer_literal(operand)
            .map(|value| value.and_then(|value| value.checked_neg().ok_or(()))),
        syntax::Expr::Paren { inner, .. } => integer_literal(inner),
        _ => None,
    }
}

fn index_span(index: &Index) -> Span {
    match index {
        Index::Var(ident) => ident.span(),
        Index::Position(literal) => literal.span(),
        Index::Computed(brace, _) => brace.span.join(),
        Index::Range(range) => range.var.span(),
    }
}

/// The name an access shows in the IR: the tensor's, followed by its ranges where it has any
/// (`x[1..n, :]`), so `explain` shows which view a statement reads.
fn sliced_name(name: &str, indices: &IndexList) -> String {
    if !indices
        .indices
        .iter()
        .any(|index| matches!(index, Index::Range(_)))
    {
        return name.to_owned();
    }
    let axes: Vec<String> = indices
        .indices
        .iter()
        .map(|index| match index {
            Index::Range(range) => format!("{}..{}", bound_text(&range.lo), bound_text(&range.hi)),
            _ => ":".to_owned(),
        })
        .collect();
    format!("{name}[{}]", axes.join(", "))
}

fn bound_text(bound: &Option<syntax::Bound>) -> String {
    match bound {
        None => String::new(),
        Some(syntax::Bound::Literal(literal)) => literal.to_string(),
        Some(syntax::Bound::Name(name)) => name_of(name),
        Some(syntax::Bound::Computed(_, tokens)) => format!("{{{tokens}}}"),
    }
}

/// `name[i, k, {..}]`: an access as text for messages.
fn access_text(name: &str, indices: &IndexList) -> String {
    let slots: Vec<String> = indices
        .indices
        .iter()
        .map(|index| match index {
            Index::Var(ident) => name_of(ident),
            Index::Position(literal) => literal.to_string(),
            Index::Computed(_, tokens) => format!("{{{tokens}}}"),
            Index::Range(range) => format!(
                "{} in {}..{}",
                name_of(&range.var),
                bound_text(&range.lo),
                bound_text(&range.hi)
            ),
        })
        .collect();
    format!("{name}[{}]", slots.join(", "))
}

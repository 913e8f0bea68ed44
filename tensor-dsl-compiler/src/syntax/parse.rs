//! `impl`-free recursive descent over a `ParseStream`, one function per grammar rule of
//! LANGUAGE.md §2; `lookahead1` supplies the "expected one of …" messages. A statement that
//! fails to parse is skipped up to its `;` so the rest of the block is still parsed.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::{braced, bracketed, parenthesized, token, Token};

use super::{
    AssignOp, AssignStatement, BinaryOp, Bound, Expr, Index, IndexList, LetStatement, MatrixResult,
    MatrixStatement, Place, RangeIndex, Statement, TensorSource, MATRIX_FUNCTIONS,
};
use crate::diagnostics::Errors;

/// A statement as parsed: the tree, or what a failed one still tells about the `let` it makes.
#[derive(Debug)]
pub enum Parsed {
    Ok(Box<Statement>),
    /// The statement did not parse; if it began `let name`, the name is kept so the stub
    /// expansion still binds it and no "cannot find value" errors follow.
    Failed {
        let_name: Option<syn::Ident>,
    },
}

/// Parses a whole block, recording each statement's syntax error and carrying on after it.
pub fn parse_block(input: TokenStream, errors: &mut Errors) -> Vec<Parsed> {
    let parser = |stream: ParseStream| Ok(statements(stream, errors));
    // The closure above never fails: every error is recorded and parsing resumes.
    parser.parse2(input).unwrap_or_default()
}

fn statements(input: ParseStream, errors: &mut Errors) -> Vec<Parsed> {
    let mut parsed = Vec::new();
    while !input.is_empty() {
        if input.peek(Token![;]) {
            let _: Token![;] = input.parse().expect("peeked");
            continue;
        }
        let let_name = peek_let_name(input);
        match statement(input).and_then(|statement| end_of_statement(input).map(|()| statement)) {
            Ok(statement) => parsed.push(Parsed::Ok(Box::new(statement))),
            Err(error) => {
                errors.push(error);
                skip_past_semicolon(input);
                parsed.push(Parsed::Failed { let_name });
            }
        }
    }
    parsed
}

fn peek_let_name(input: ParseStream) -> Option<syn::Ident> {
    let fork = input.fork();
    fork.parse::<Token![let]>().ok()?;
    let _: Option<Token![mut]> = fork.parse().ok()?;
    fork.parse().ok()
}

fn end_of_statement(input: ParseStream) -> syn::Result<()> {
    if input.is_empty() {
        return Ok(());
    }
    let lookahead = input.lookahead1();
    if lookahead.peek(Token![;]) {
        let _: Token![;] = input.parse()?;
        return Ok(());
    }
    expect_operator(lookahead)
}

/// Fails with "expected one of: …" listing the binary operators (and whatever `lookahead`
/// already peeked): the tokens that could have continued an expression here.
fn expect_operator(lookahead: syn::parse::Lookahead1) -> syn::Result<()> {
    let _ = [
        lookahead.peek(Token![+]),
        lookahead.peek(Token![-]),
        lookahead.peek(Token![*]),
        lookahead.peek(Token![/]),
    ];
    Err(lookahead.error())
}

fn skip_past_semicolon(input: ParseStream) {
    let _ = input.step(|cursor| {
        let mut rest = *cursor;
        while let Some((tree, next)) = rest.token_tree() {
            rest = next;
            if matches!(&tree, TokenTree::Punct(punct) if punct.as_char() == ';') {
                break;
            }
        }
        Ok(((), rest))
    });
}

fn statement(input: ParseStream) -> syn::Result<Statement> {
    if input.peek(Token![let]) && is_matrix_statement(input) {
        return matrix_statement(input).map(Statement::Matrix);
    }
    if input.peek(Token![let]) {
        return let_statement(input).map(Statement::Let);
    }
    let dereferenced = input.peek(Token![*]);
    let place = target_place(input)?;
    let indices = if input.peek(token::Bracket) {
        if dereferenced {
            return Err(syn::Error::new(
                place.span,
                "a tensor is written without `*`: `tensor!` reads and writes through references \
                 itself, so write `t[i] = …` for `t: &mut Tensor<_>`",
            ));
        }
        Some(index_list(input)?)
    } else {
        None
    };
    let op = assign_op(input)?;
    let value = expr(input)?;
    Ok(Statement::Assign(AssignStatement {
        place,
        indices,
        op,
        value,
    }))
}

fn let_statement(input: ParseStream) -> syn::Result<LetStatement> {
    let let_token = input.parse()?;
    let MatrixResult {
        mutability,
        name,
        indices,
    } = binding(input)?;
    let lookahead = input.lookahead1();
    let ty = if lookahead.peek(Token![:]) {
        let _: Token![:] = input.parse()?;
        Some(input.parse()?)
    } else if lookahead.peek(Token![=]) {
        None
    } else {
        return Err(lookahead.error());
    };
    let _: Token![=] = input.parse()?;
    let value = expr(input)?;
    Ok(LetStatement {
        let_token,
        mutability,
        name,
        indices,
        ty,
        value,
    })
}

/// Whether the `let` ahead binds a tuple, or calls one of `MATRIX_FUNCTIONS` as its whole
/// right-hand side.
fn is_matrix_statement(input: ParseStream) -> bool {
    let fork = input.fork();
    let _: Token![let] = fork.parse().expect("peeked");
    let _: Option<Token![mut]> = fork.parse().unwrap_or(None);
    if fork.peek(token::Paren) {
        return true;
    }
    if fork.parse::<syn::Ident>().is_err() {
        return false;
    }
    if fork.peek(token::Bracket) && index_list(&fork).is_err() {
        return false;
    }
    if fork.parse::<Token![=]>().is_err() || fork.peek(Token![=]) {
        return false;
    }
    let function = fork.fork().parse::<syn::Ident>();
    function.is_ok_and(|name| MATRIX_FUNCTIONS.contains(&name.to_string().as_str()))
        && fork.peek2(token::Paren)
}

/// `'let' (result | '(' result (',' result)* ','? ')') '=' FUNCTION '(' margs ')'`
fn matrix_statement(input: ParseStream) -> syn::Result<MatrixStatement> {
    let let_token = input.parse()?;
    let results = if input.peek(token::Paren) {
        let content;
        parenthesized!(content in input);
        let results = whole_group(&content, |content| {
            content.parse_terminated(binding, Token![,])
        })?;
        results.into_iter().collect()
    } else {
        vec![binding(input)?]
    };
    let _: Token![=] = input.parse()?;
    let function: syn::Ident = input.parse()?;
    let content;
    parenthesized!(content in input);
    let (args, options) = whole_group(&content, matrix_arguments)?;
    Ok(MatrixStatement {
        let_token,
        results,
        function,
        args,
        options,
    })
}

/// `'mut'? NAME indices?`: what a `let` binds (a matrix statement, one or a tuple of them).
fn binding(input: ParseStream) -> syn::Result<MatrixResult> {
    let mutability = input.parse()?;
    let name = input.parse()?;
    let indices = if input.peek(token::Bracket) {
        Some(index_list(input)?)
    } else {
        None
    };
    Ok(MatrixResult {
        mutability,
        name,
        indices,
    })
}

/// `(IDENT '=' expr | expr) (',' …)* ','?`: positional arguments, then options by name.
type MatrixArguments = (Vec<Expr>, Vec<(syn::Ident, Expr)>);

fn matrix_arguments(input: ParseStream) -> syn::Result<MatrixArguments> {
    let (mut args, mut options) = (Vec::new(), Vec::new());
    while !input.is_empty() {
        if input.peek(syn::Ident) && input.peek2(Token![=]) && !input.peek2(Token![==]) {
            let name: syn::Ident = input.parse()?;
            let _: Token![=] = input.parse()?;
            options.push((name, expr(input)?));
        } else {
            args.push(expr(input)?);
        }
        if input.is_empty() {
            break;
        }
        let lookahead = input.lookahead1();
        if !lookahead.peek(Token![,]) {
            expect_operator(lookahead)?;
        }
        let _: Token![,] = input.parse()?;
    }
    Ok((args, options))
}

fn assign_op(input: ParseStream) -> syn::Result<AssignOp> {
    let lookahead = input.lookahead1();
    if lookahead.peek(Token![+=]) {
        let _: Token![+=] = input.parse()?;
        Ok(AssignOp::AddAssign)
    } else if lookahead.peek(Token![-=]) {
        let _: Token![-=] = input.parse()?;
        Ok(AssignOp::SubAssign)
    } else if lookahead.peek(Token![*=]) {
        let token: Token![*=] = input.parse()?;
        Ok(AssignOp::MulAssign(token.spans[0]))
    } else if lookahead.peek(Token![/=]) {
        let token: Token![/=] = input.parse()?;
        Ok(AssignOp::DivAssign(token.spans[0]))
    } else if lookahead.peek(Token![=]) && !input.peek(Token![==]) {
        let _: Token![=] = input.parse()?;
        Ok(AssignOp::Assign)
    } else {
        Err(lookahead.error())
    }
}

/// A statement's target: a place, or a dereferenced one (`*r += …` for `r: &mut f64`), kept in
/// parentheses so the expansion's method calls and borrows apply to the referent.
fn target_place(input: ParseStream) -> syn::Result<Place> {
    if !input.peek(Token![*]) {
        return place(input);
    }
    let star: Token![*] = input.parse()?;
    let referent = target_place(input)?;
    let mut tokens = star.to_token_stream();
    tokens.extend(referent.tokens);
    let mut group = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, tokens);
    group.set_span(star.span);
    Ok(Place {
        tokens: group.into_token_stream(),
        text: format!("*{}", referent.text),
        span: star.span,
        root: referent.root,
        bare_name: None,
    })
}

/// `IDENT ('.' (IDENT | INTEGER))*`, also starting with `self`.
fn place(input: ParseStream) -> syn::Result<Place> {
    let first: syn::Ident = if input.peek(Token![self]) {
        input.call(syn::Ident::parse_any)?
    } else {
        input.parse()?
    };
    let span = first.span();
    let mut tokens = first.to_token_stream();
    let mut text = first.unraw().to_string();
    let mut is_bare = true;
    while input.peek(Token![.]) && !input.peek(Token![..]) {
        is_bare = false;
        let dot: Token![.] = input.parse()?;
        dot.to_tokens(&mut tokens);
        text.push('.');
        let lookahead = input.lookahead1();
        if lookahead.peek(syn::Ident) {
            let field: syn::Ident = input.parse()?;
            text.push_str(&field.unraw().to_string());
            field.to_tokens(&mut tokens);
        } else if lookahead.peek(syn::LitInt) {
            let field: syn::LitInt = input.parse()?;
            tuple_fields(&field.to_string(), 1, field.span())?;
            text.push_str(&field.to_string());
            field.to_tokens(&mut tokens);
        } else if lookahead.peek(syn::LitFloat) {
            // `t.0.1` lexes as `t` `.` `0.1`: rustc accepts the float as two tuple fields.
            let fields: syn::LitFloat = input.parse()?;
            tuple_fields(&fields.to_string(), 2, fields.span())?;
            text.push_str(&fields.to_string());
            fields.to_tokens(&mut tokens);
        } else {
            return Err(lookahead.error());
        }
    }
    Ok(Place {
        tokens,
        text,
        span,
        root: first.clone(),
        bare_name: is_bare.then_some(first),
    })
}

fn index_list(input: ParseStream) -> syn::Result<IndexList> {
    let content;
    bracketed!(content in input);
    // `[]` is the access of a rank-0 tensor (one element).
    let indices = whole_group(&content, |content| {
        content.parse_terminated(index, Token![,])
    })?;
    Ok(IndexList {
        indices: indices.into_iter().collect(),
    })
}

fn index(input: ParseStream) -> syn::Result<Index> {
    if input.peek(Token![-]) {
        let minus: Token![-] = input.parse()?;
        return Err(syn::Error::new(
            minus.span,
            "a fixed position counts from 0 at the start of its axis, so it cannot be negative: \
             for the last element write the position as a Rust expression, such as `{n - 1}`",
        ));
    }
    if input.peek(Token![..]) {
        let dots = input.parse::<TokenStream>()?.into_iter().next();
        return Err(syn::Error::new(
            dots.map_or_else(proc_macro2::Span::call_site, |dots| dots.span()),
            "an ellipsis (`...`) over leading axes is not supported: a statement fixes each \
             tensor's rank, so name one index per axis, such as `x[b, h, i]`",
        ));
    }
    let lookahead = input.lookahead1();
    if lookahead.peek(syn::Ident) {
        let var: syn::Ident = input.parse()?;
        if input.peek(Token![+]) || input.peek(Token![-]) || input.peek(Token![*]) {
            return Err(syn::Error::new(
                var.span(),
                format!(
                    "index arithmetic such as `{var} + 1` is not supported: an index runs over a \
                     whole axis; shift the tensor instead, with a view written as a Rust \
                     expression in braces such as `{{ v.view().slice_axis(0, 1..n) }}[{var}]`"
                ),
            ));
        }
        if input.peek(Token![in]) {
            let _: Token![in] = input.parse()?;
            let lo = if input.peek(Token![..]) {
                None
            } else {
                Some(bound(input)?)
            };
            if input.peek(Token![..=]) {
                return Err(input.error(
                    "a range of positions is written `lo..hi`, the end left out, as in Rust slices",
                ));
            }
            let _: Token![..] = input.parse()?;
            let hi = if input.is_empty() || input.peek(Token![,]) {
                None
            } else {
                Some(bound(input)?)
            };
            return Ok(Index::Range(RangeIndex { var, lo, hi }));
        }
        Ok(Index::Var(var))
    } else if lookahead.peek(syn::LitInt) {
        let position: syn::LitInt = input.parse()?;
        position.base10_parse::<usize>().map_err(|_| {
            syn::Error::new(
                position.span(),
                "a fixed position must be a whole number that fits in `usize`, such as `a[i, 0]`",
            )
        })?;
        Ok(Index::Position(position))
    } else if lookahead.peek(token::Brace) {
        let content;
        let brace = braced!(content in input);
        Ok(Index::Computed(brace, content.parse()?))
    } else {
        Err(lookahead.error())
    }
}

/// A bound of a range: `INTEGER | IDENT | '{' rust-expression '}'`.
fn bound(input: ParseStream) -> syn::Result<Bound> {
    let lookahead = input.lookahead1();
    if lookahead.peek(syn::LitInt) {
        let literal: syn::LitInt = input.parse()?;
        literal.base10_parse::<usize>().map_err(|_| {
            syn::Error::new(
                literal.span(),
                "a range's bound is a position: a whole number that fits in `usize`",
            )
        })?;
        Ok(Bound::Literal(literal))
    } else if lookahead.peek(syn::Ident) {
        Ok(Bound::Name(input.parse()?))
    } else if lookahead.peek(token::Brace) {
        let content;
        let brace = braced!(content in input);
        Ok(Bound::Computed(brace, content.parse()?))
    } else {
        Err(lookahead.error())
    }
}

/// `term (('+' | '-') term)*`
fn expr(input: ParseStream) -> syn::Result<Expr> {
    let mut left = term(input)?;
    loop {
        let op = if input.peek(Token![+]) && !input.peek(Token![+=]) {
            {
                let _: Token![+] = input.parse()?;
                BinaryOp::Add
            }
        } else if input.peek(Token![-]) && !input.peek(Token![-=]) {
            {
                let _: Token![-] = input.parse()?;
                BinaryOp::Sub
            }
        } else {
            return Ok(left);
        };
        let right = term(input)?;
        left = Expr::Binary {
            left: Box::new(left),
            op,
            right: Box::new(right),
        };
    }
}

/// `unary (('*' | '/') unary)*`
fn term(input: ParseStream) -> syn::Result<Expr> {
    let mut left = unary(input)?;
    loop {
        let op = if input.peek(Token![*]) && !input.peek(Token![*=]) {
            {
                let _: Token![*] = input.parse()?;
                BinaryOp::Mul
            }
        } else if input.peek(Token![/]) && !input.peek(Token![/=]) {
            {
                let _: Token![/] = input.parse()?;
                BinaryOp::Div
            }
        } else {
            return Ok(left);
        };
        let right = unary(input)?;
        left = Expr::Binary {
            left: Box::new(left),
            op,
            right: Box::new(right),
        };
    }
}

/// `'-' unary | atom`
fn unary(input: ParseStream) -> syn::Result<Expr> {
    if input.peek(Token![-]) {
        let minus = input.parse()?;
        let operand = Box::new(unary(input)?);
        return Ok(Expr::Neg { minus, operand });
    }
    atom(input)
}

fn atom(input: ParseStream) -> syn::Result<Expr> {
    let lookahead = input.lookahead1();
    if lookahead.peek(token::Paren) {
        let content;
        let paren = parenthesized!(content in input);
        let inner = whole_group(&content, |content| {
            let inner = expr(content)?;
            expect_empty(content).map(|()| Box::new(inner))
        })?;
        Ok(Expr::Paren { paren, inner })
    } else if lookahead.peek(token::Brace) {
        let content;
        let brace = braced!(content in input);
        let tokens: TokenStream = content.parse()?;
        if input.peek(token::Bracket) {
            let indices = index_list(input)?;
            Ok(Expr::Access {
                tensor: TensorSource::Rust(brace, tokens),
                indices,
            })
        } else {
            Ok(Expr::RustScalar(brace, tokens))
        }
    } else if lookahead.peek(syn::LitInt) || lookahead.peek(syn::LitFloat) {
        input.parse().map(Expr::Literal)
    } else if lookahead.peek(syn::Ident) && input.peek2(token::Paren) {
        let function: syn::Ident = input.parse()?;
        let content;
        let paren = parenthesized!(content in input);
        let args = whole_group(&content, arguments)?;
        Ok(Expr::Call {
            function,
            paren,
            args,
        })
    } else if input.peek(syn::Ident) || lookahead.peek(Token![self]) {
        let place = place(input)?;
        if input.peek(token::Paren) {
            return Err(input.error(format!(
                "a method call cannot name a tensor inside `tensor!`: write it as a Rust \
                 expression in braces, such as `{{ {}(..) }}[i, j]`",
                place.text
            )));
        }
        if input.peek(token::Bracket) {
            let indices = index_list(input)?;
            no_second_bracket(input, &place.text)?;
            Ok(Expr::Access {
                tensor: TensorSource::Place(place),
                indices,
            })
        } else {
            Ok(Expr::Scalar(place))
        }
    } else {
        Err(lookahead.error())
    }
}

/// `layers[0][i]`: an access takes all its indices in one bracket; a Rust collection holding
/// tensors is indexed in a Rust expression.
fn no_second_bracket(input: ParseStream, name: &str) -> syn::Result<()> {
    if input.peek(token::Bracket) {
        return Err(input.error(format!(
            "an access takes all its indices in one bracket; to pick a tensor out of a Rust \
             collection first, write that as a Rust expression in braces, such as \
             `{{ &{name}[0] }}[i]`"
        )));
    }
    Ok(())
}

/// `expr (',' expr)* ','?`: a missing comma is reported with the operators that could have
/// continued the argument.
fn arguments(input: ParseStream) -> syn::Result<Vec<Expr>> {
    let mut args = Vec::new();
    while !input.is_empty() {
        args.push(expr(input)?);
        if input.is_empty() {
            break;
        }
        let lookahead = input.lookahead1();
        if !lookahead.peek(Token![,]) {
            expect_operator(lookahead)?;
        }
        let _: Token![,] = input.parse()?;
    }
    Ok(args)
}

/// Parses a delimited group's contents with `parse`; on an error, the rest of the group is
/// consumed, so the error stays this statement's (tokens left in a group would make syn fail
/// the whole block, and the statements after it would not be parsed).
fn whole_group<T>(
    content: ParseStream,
    parse: impl FnOnce(ParseStream) -> syn::Result<T>,
) -> syn::Result<T> {
    parse(content).inspect_err(|_| {
        let _ = content.parse::<TokenStream>();
    })
}

fn expect_empty(input: ParseStream) -> syn::Result<()> {
    if input.is_empty() {
        return Ok(());
    }
    expect_operator(input.lookahead1())
}

/// A tuple field (`t.0`) is a plain decimal integer, and `t.0.1` lexes its two fields as one
/// float: anything else (`t.1f32`, `t.1e5`, `t.1.`, `t.0x1`, `t.01`) is no Rust place, so it is
/// rejected here rather than emitted for rustc to trip over.
fn tuple_fields(text: &str, count: usize, span: proc_macro2::Span) -> syn::Result<()> {
    let is_field = |field: &str| {
        !field.is_empty()
            && field.bytes().all(|b| b.is_ascii_digit())
            && (field == "0" || !field.starts_with('0'))
    };
    let fields: Vec<&str> = text.split('.').collect();
    if fields.len() == count && fields.iter().all(|field| is_field(field)) {
        Ok(())
    } else {
        Err(syn::Error::new(
            span,
            format!("`{text}` is not a tuple field: write a field as a plain decimal integer, as in `t.0`"),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn parse(input: TokenStream) -> (Vec<Parsed>, Vec<String>) {
        let mut errors = Errors::new();
        let parsed = parse_block(input, &mut errors);
        let messages = match errors.into_result() {
            Ok(()) => Vec::new(),
            Err(error) => error.into_iter().map(|e| e.to_string()).collect(),
        };
        (parsed, messages)
    }

    #[test]
    fn precedence_is_rusts() {
        let (parsed, errors) = parse(quote! { c[i] = -a[i] * b[i] + d[i] / 2 - e[i]; });
        assert!(errors.is_empty(), "{errors:?}");
        let Parsed::Ok(statement) = &parsed[0] else {
            panic!("expected a statement")
        };
        let Statement::Assign(statement) = &**statement else {
            panic!("expected an assignment")
        };
        // ((-a * b) + (d / 2)) - e
        let Expr::Binary {
            left,
            op: BinaryOp::Sub,
            ..
        } = &statement.value
        else {
            panic!("top is `-`")
        };
        let Expr::Binary {
            left: product,
            op: BinaryOp::Add,
            right: quotient,
        } = &**left
        else {
            panic!("then `+`")
        };
        assert!(
            matches!(&**product, Expr::Binary { left, op: BinaryOp::Mul, .. }
            if matches!(&**left, Expr::Neg { .. }))
        );
        assert!(matches!(
            &**quotient,
            Expr::Binary {
                op: BinaryOp::Div,
                ..
            }
        ));
    }

    #[test]
    fn places_positions_and_rust_expressions() {
        let (parsed, errors) = parse(quote! {
            let mut y[b, o]: Tensor<f32> = self.layers.0.w[o, k] * { x.view() }[b, k] + {bias}
                + t.0.1 * a[b, 0, { n - 1 }];
        });
        assert!(errors.is_empty(), "{errors:?}");
        let Parsed::Ok(statement) = &parsed[0] else {
            panic!("expected a statement")
        };
        let Statement::Let(statement) = &**statement else {
            panic!("expected a let")
        };
        assert!(statement.mutability.is_some() && statement.ty.is_some());
        let text = format!("{:?}", statement.value);
        assert!(text.contains("self.layers.0.w"), "{text}");
        assert!(text.contains("t.0.1"), "{text}");
    }

    #[test]
    fn syntax_errors_say_what_was_expected_and_parsing_resumes() {
        let (parsed, errors) = parse(quote! {
            let c[i] = a[i] b[i];
            d[i] %= a[i];
            let e[i] = a[i];
            let f = a[-1];
            let g = exp(a[i] b[i]) + (a[i] b[i]);
            let h[i] = a[i];
        });
        assert_eq!(
            errors,
            [
                "expected one of: `;`, `+`, `-`, `*`, `/`",
                "expected one of: `+=`, `-=`, `*=`, `/=`, `=`",
                "a fixed position counts from 0 at the start of its axis, so it cannot be negative: for the last element write the position as a Rust expression, such as `{n - 1}`",
                "expected one of: `,`, `+`, `-`, `*`, `/`",
            ]
        );
        assert!(matches!(&parsed[0], Parsed::Failed { let_name: Some(name) } if name == "c"));
        assert!(matches!(&parsed[1], Parsed::Failed { let_name: None }));
        assert!(matches!(&parsed[2], Parsed::Ok(_)));
        assert!(matches!(&parsed[3], Parsed::Failed { let_name: Some(name) } if name == "f"));
        assert!(matches!(&parsed[4], Parsed::Failed { let_name: Some(name) } if name == "g"));
        assert!(matches!(&parsed[5], Parsed::Ok(_)));
    }

    #[test]
    fn tuple_fields_are_plain_decimal_integers() {
        for place in [
            quote!(s = t.1f32;),
            quote!(s = t.1e5;),
            quote!(s = t.1.;),
            quote!(s = t.0x1;),
            quote!(s = t.01;),
            quote!(s = t.0.1f64;),
        ] {
            let (_, errors) = parse(place.clone());
            assert_eq!(errors.len(), 1, "{place}: {errors:?}");
            assert!(
                errors[0].contains("is not a tuple field"),
                "{place}: {errors:?}"
            );
        }
        for place in [
            quote!(s = t.0;),
            quote!(s = t.10.2;),
            quote!(s = self.t.0.w;),
        ] {
            let (_, errors) = parse(place.clone());
            assert!(errors.is_empty(), "{place}: {errors:?}");
        }
    }
}

//! Failed block → its errors as `compile_error!`s plus a stub `let` for every binding the block
//! would have made, typed like one of its operands, so the user sees only the real mistakes
//! and no cascade of "cannot find value" or type errors after them.

use proc_macro2::TokenStream;
use quote::ToTokens;

use super::Context;
use crate::syntax::{Expr, LetStatement, MatrixStatement, Parsed, Statement, TensorSource};

pub fn fallback(parsed: &[Parsed], error: syn::Error, cx: &Context) -> TokenStream {
    let p = cx.private();
    let mut tokens = error.to_compile_error();
    for statement in parsed {
        match statement {
            Parsed::Ok(statement) => match &**statement {
                Statement::Let(statement) => tokens.extend(let_stub(cx, statement)),
                Statement::Matrix(statement) => tokens.extend(matrix_stub(cx, statement)),
                Statement::Assign(_) => {}
            },
            Parsed::Failed {
                let_name: Some(name),
            } => tokens.extend(hygienic!(let #name = #p::stub_any();)),
            Parsed::Failed { let_name: None } => {}
        }
    }
    tokens
}

/// `let name = stub;`, typed like the statement's first operand where it has one.
fn let_stub(cx: &Context, statement: &LetStatement) -> TokenStream {
    let p = cx.private();
    let name = &statement.name;
    let mutability = &statement.mutability;
    let ty = statement.ty.as_ref().map(|ty| hygienic!(: #ty));
    let value = match (first_place(&statement.value), &statement.indices) {
        (Some(operand), Some(_)) => hygienic!(#p::stub_tensor(&#operand)),
        (Some(operand), None) => hygienic!(#p::stub_scalar(&#operand)),
        (None, _) => hygienic!(#p::stub_any()),
    };
    hygienic!(let #mutability #name #ty = #value;)
}

/// `let (names) = stubs;` for a matrix statement, each tensor typed like its first operand.
fn matrix_stub(cx: &Context, statement: &MatrixStatement) -> TokenStream {
    let p = cx.private();
    let operand = statement.args.iter().find_map(first_place);
    let (names, values): (Vec<TokenStream>, Vec<TokenStream>) = statement
        .results
        .iter()
        .map(|result| {
            let name = &result.name;
            let mutability = &result.mutability;
            let value = match (&operand, &result.indices) {
                (Some(operand), Some(_)) => hygienic!(#p::stub_tensor(&#operand)),
                (Some(operand), None) => hygienic!(#p::stub_scalar(&#operand)),
                (None, _) => hygienic!(#p::stub_any()),
            };
            (hygienic!(#mutability #name), value)
        })
        .unzip();
    hygienic!(let (#(#names,)*) = (#(#values,)*);)
}

/// The first tensor named by a place in `expr`, to borrow a type from.
fn first_place(expr: &Expr) -> Option<TokenStream> {
    match expr {
        Expr::Access {
            tensor: TensorSource::Place(place),
            ..
        } => Some(place.tokens.clone()),
        Expr::Access {
            tensor: TensorSource::Rust(..),
            ..
        }
        | Expr::Literal(_)
        | Expr::Scalar(_)
        | Expr::RustScalar(..) => None,
        Expr::Binary { left, right, .. } => first_place(left).or_else(|| first_place(right)),
        Expr::Neg { operand, .. } => first_place(operand),
        Expr::Paren { inner, .. } => first_place(inner),
        Expr::Call { args, .. } => args.iter().find_map(first_place),
    }
    .map(|tokens| tokens.into_token_stream())
}

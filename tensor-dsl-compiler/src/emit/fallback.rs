//! Failed block → its errors as `compile_error!`s plus a stub `let` for every binding the block
//! would have made, typed like one of its operands, so the user sees only the real mistakes
//! and no cascade of "cannot find value" or type errors after them.

use proc_macro2::TokenStream;
use quote::ToTokens;

use super::private;
use crate::syntax::{Expr, Parsed, Statement, TensorSource};

pub fn fallback(parsed: &[Parsed], error: syn::Error) -> TokenStream {
    let p = private();
    let mut tokens = error.to_compile_error();
    for statement in parsed {
        let stub = match statement {
            Parsed::Ok(Statement::Let(statement)) => {
                let name = &statement.name;
                let mutability = &statement.mutability;
                let ty = statement.ty.as_ref().map(|ty| hygienic!(: #ty));
                let operand = first_place(&statement.value);
                let value = match (operand, &statement.indices) {
                    (Some(operand), Some(_)) => hygienic!(#p::stub_tensor(&#operand)),
                    (Some(operand), None) => hygienic!(#p::stub_scalar(&#operand)),
                    (None, _) => hygienic!(#p::stub_any()),
                };
                hygienic!(let #mutability #name #ty = #value;)
            }
            Parsed::Failed {
                let_name: Some(name),
            } => hygienic!(let #name = #p::stub_any();),
            Parsed::Ok(Statement::Assign(_)) | Parsed::Failed { let_name: None } => continue,
        };
        tokens.extend(stub);
    }
    tokens
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

//! A checked matrix statement → one call of the runtime's matrix operation, its results bound
//! by a `let` of the user's names. Nothing runs before the call's checks: the operation
//! returns every failure (rank, extents, a matrix not positive definite, …) before it makes any
//! result, and the error surfaces as the block's other errors do.

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote_spanned;

use super::checks::located;
use super::{hidden_numbered, Context};
use crate::ir::matrix::{MatrixOp, MatrixOperand, MatrixStatement};

pub fn emit_matrix(statement: &MatrixStatement, cx: &Context) -> TokenStream {
    let p = cx.private();
    let mut tokens = TokenStream::new();
    if cx.dispatch {
        // Matrix operations run on the host: another backend's tensor is a type error on it.
        tokens.extend(hygienic!(use #p::{HostBackend as _, OwnBackend as _};));
        for operand in &statement.operands {
            let expr = &operand.tokens;
            tokens.extend(quote_spanned!(operand.span=>
                #p::runs_matrix_operations(&(&&#p::Probe(&(#expr))).__tdsl_probe_backend());
            ));
        }
    }
    let function = &statement.function;
    let at = cx.private_at(function.span());
    let on_function_span = Span::mixed_site().located_at(function.span());
    let callee = quote_spanned!(on_function_span=> #at::#function);
    let name = statement.op.name();
    // Each argument is bound to a local first, on its own tokens (a value that is no tensor,
    // or a power that is no `i32`, is reported there); the call is made entirely of tokens on
    // the function's name, so an element type without matrix operations (`MatrixElement`) is
    // reported on it.
    let mut args: Vec<TokenStream> = Vec::new();
    for operand in &statement.operands {
        let expr = &operand.tokens;
        args.push(quote_spanned!(operand.span=> &(#expr)));
        args.push(grouped(cx, name, operand));
    }
    let orders = statement
        .results
        .iter()
        .flatten()
        .filter_map(|result| result.order.as_ref())
        .map(|order| hygienic!(&[#(#order),*]));
    match statement.op {
        MatrixOp::Cholesky | MatrixOp::Solve | MatrixOp::Eigh | MatrixOp::Qr => {
            // eigh's values come back as a vector, with no order to pass.
            let skip = usize::from(statement.op == MatrixOp::Eigh);
            args.extend(orders.skip(skip));
        }
        MatrixOp::Matpow => {
            let power = statement
                .power
                .as_ref()
                .expect("checked: matpow has a power");
            args.push(hygienic!({ let power: i32 = #power; power }));
            args.extend(orders);
        }
        MatrixOp::Svd => {
            // u's and vt's orders; sv is a vector.
            let orders: Vec<TokenStream> = orders.collect();
            args.push(orders[0].clone());
            args.push(orders[2].clone());
            let some = |value: &Option<TokenStream>| match value {
                Some(value) => hygienic!(::core::option::Option::Some(#value)),
                None => hygienic!(::core::option::Option::None),
            };
            let (max_rank, cutoff) = (some(&statement.max_rank), some(&statement.cutoff));
            args.push(hygienic!(#p::Truncation { max_rank: #max_rank, cutoff: #cutoff }));
        }
    }
    let locals: Vec<Ident> = (0..args.len())
        .map(|k| hidden_numbered("__matrix_argument", k))
        .collect();
    for (local, arg) in locals.iter().zip(&args) {
        tokens.extend(hygienic!(let #local = #arg;));
    }
    let on_function = locals.iter().map(|local| located(local, function.span()));
    let call = cx.surface(quote_spanned!(on_function_span=> #callee(#(#on_function),*)));
    let bindings: Vec<TokenStream> = statement
        .results
        .iter()
        .map(|result| match result {
            Some(result) => {
                let name = &result.name;
                let mutability = result.mutable.then(|| hygienic!(mut));
                hygienic!(#mutability #name)
            }
            None => hygienic!(_),
        })
        .collect();
    let pattern = match bindings.as_slice() {
        [one] => one.clone(),
        many => hygienic!((#(#many),*)),
    };
    tokens.extend(hygienic!(let #pattern = #call;));
    tokens
}

/// The operand's `Grouped`: how it was written and its rows and columns.
fn grouped(cx: &Context, function: &str, operand: &MatrixOperand) -> TokenStream {
    let p = cx.private();
    let (tensor, text, indices) = (&operand.name, &operand.text, &operand.indices);
    let (rows, cols) = (&operand.rows, &operand.cols);
    hygienic!(#p::Grouped {
        function: #function,
        tensor: #tensor,
        text: #text,
        indices: &[#(#indices),*],
        rows: &[#(#rows),*],
        cols: &[#(#cols),*],
    })
}

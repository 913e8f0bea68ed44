//! User-facing compile errors → one accumulator, so a block reports every mistake in one build;
//! stages hand it on and `into_result` combines what it holds into a single `syn::Error`.
//! Warnings → tokens that make rustc warn on the user's token.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote_spanned, ToTokens};
use std::fmt::Display;

/// What a warning is about; its name is the one rustc's message shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lint {
    /// A summed index that occurs once in a product of two or more factors.
    SummedAlone,
    /// A target read inside `max`/`min` in a term that sums: a sum of maxima.
    SumOfMaxima,
}

impl Lint {
    pub fn name(self) -> &'static str {
        match self {
            Lint::SummedAlone => "tensor_dsl_index_summed_alone",
            Lint::SumOfMaxima => "tensor_dsl_sum_of_maxima",
        }
    }
}

/// A warning at `span`. Stable Rust has no way for a macro to warn, so it is written as the
/// use of a deprecated constant whose note is the message: rustc prints it on the user's token
/// as `warning: use of deprecated constant `…::tensor_dsl_…`: <message>`, and `#[allow(deprecated)]`
/// silences it.
#[derive(Clone, Debug)]
pub struct Warning {
    pub lint: Lint,
    pub span: Span,
    pub message: String,
}

impl ToTokens for Warning {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        let name = format_ident!("{}", self.lint.name(), span = self.span);
        let message = &self.message;
        tokens.extend(quote_spanned! {self.span=>
            {
                #[deprecated(note = #message)]
                #[allow(non_upper_case_globals)]
                const #name: () = ();
                let () = #name;
            }
        });
    }
}

/// The errors of one `tensor!` block, in the order they were found.
#[derive(Debug, Default)]
pub struct Errors {
    errors: Vec<syn::Error>,
}

impl Errors {
    pub fn new() -> Self {
        Errors::default()
    }

    /// Records an error at `span`.
    pub fn error(&mut self, span: Span, message: impl Display) {
        self.errors.push(syn::Error::new(span, message));
    }

    /// Records an error already built (e.g. by syn's parser).
    pub fn push(&mut self, error: syn::Error) {
        self.errors.push(error);
    }

    /// All recorded errors as one, or `Ok(())` when there are none.
    pub fn into_result(self) -> syn::Result<()> {
        let mut errors = self.errors.into_iter();
        match errors.next() {
            None => Ok(()),
            Some(mut first) => {
                first.extend(errors);
                Err(first)
            }
        }
    }
}

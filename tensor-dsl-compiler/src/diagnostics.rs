//! User-facing compile errors → one accumulator, so a block reports every mistake in one build;
//! stages hand it on and `into_result` combines what it holds into a single `syn::Error`.

use proc_macro2::Span;
use std::fmt::Display;

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

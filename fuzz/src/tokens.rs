//! The compiler on arbitrary tokens: it must never panic, its expansion must always parse as
//! Rust statements, and when the front end reports errors the expansion must carry them as
//! `compile_error!`s. Inputs are either text (lexed by `proc_macro2`; what does not lex never
//! reaches a macro) or token trees built from the language's own alphabet, so that most reach
//! the parser and the checker.

use std::str::FromStr;

use arbitrary::{Result, Unstructured};
use proc_macro2::{Delimiter, Group, Ident, Literal, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::quote;
use tensor_dsl_compiler::{Config, Flavor};

/// Deeper nesting only tests the stack: rustc passes macros nothing like it.
pub const MAX_DEPTH: usize = 24;

/// Checks the compiler on one token stream (see the module docs).
///
/// # Panics
/// If the compiler panics or breaks a property.
pub fn check_tokens(tokens: TokenStream) {
    // A known bug (see `IGNORE_VARIABLE`) only skips the input.
    let _ = crate::guarded(format!("tokens: {tokens}"), || {
        check_tokens_unguarded(tokens.clone())
    });
}

fn check_tokens_unguarded(tokens: TokenStream) {
    // `{ … }` holds Rust the compiler passes through unchecked: only when that is valid can
    // the expansion be.
    let rust_inside_is_valid = braces_are_blocks(&tokens);
    let front = tensor_dsl_compiler::front_end(tokens.clone());
    let errors = front
        .as_ref()
        .err()
        .map_or(0, |error| error.into_iter().count());
    for flavor in [Flavor::Panic, Flavor::Fallible] {
        for (optimize, written_out) in [(true, true), (true, false), (false, false)] {
            let mut config = Config::new(flavor);
            config.optimize = optimize;
            config.written_out = written_out;
            let output = tensor_dsl_compiler::expand_with(tokens.clone(), config.clone());
            let text = output.to_string();
            let parsed = syn::parse2::<syn::Block>(quote!({ #output }))
                .and_then(|_| by_build_forms_parse(&output));
            if let (Err(error), true) = (parsed, rust_inside_is_valid) {
                panic!("expansion is not valid Rust: {error}\ninput: {tokens}\noutput: {text}");
            }
            if errors > 0 {
                let reported = text.matches("compile_error").count();
                assert!(
                    reported >= errors,
                    "{errors} errors but {reported} compile_error!s\ninput: {tokens}\noutput: {text}"
                );
            }
            match tensor_dsl_compiler::trace(tokens.clone(), config) {
                Ok(trace) => {
                    assert!(
                        errors == 0,
                        "trace accepted what the front end rejects: {tokens}"
                    );
                    assert_eq!(
                        trace.rust.to_string(),
                        text,
                        "trace and expand emit different code for {tokens}"
                    );
                    assert!(
                        !text.contains("compile_error")
                            || tokens.to_string().contains("compile_error"),
                        "accepted block expands to compile_error!: {tokens}\n{text}"
                    );
                }
                Err(error) => {
                    assert_eq!(
                        error.into_iter().count(),
                        errors,
                        "trace and front_end report different errors for {tokens}"
                    );
                }
            }
        }
    }
}

/// Each `by_build! { {…} {…} }` in `tokens` (the runtime's choice between a statement's two
/// forms) holds two blocks of Rust: syn sees a macro call's body as opaque tokens, so they are
/// parsed here.
fn by_build_forms_parse(tokens: &TokenStream) -> syn::Result<()> {
    let trees: Vec<TokenTree> = tokens.clone().into_iter().collect();
    for (k, tree) in trees.iter().enumerate() {
        let TokenTree::Group(group) = tree else {
            continue;
        };
        let called = k >= 2
            && matches!(
                (&trees[k - 2], &trees[k - 1]),
                (TokenTree::Ident(name), TokenTree::Punct(bang))
                    if name == "by_build" && bang.as_char() == '!'
            );
        if called {
            for form in group.stream() {
                syn::parse2::<syn::Block>(form.into())?;
            }
        }
        by_build_forms_parse(&group.stream())?;
    }
    Ok(())
}

/// Whether every `{ … }` group in `tokens` parses as a Rust block.
pub fn braces_are_blocks(tokens: &TokenStream) -> bool {
    tokens.clone().into_iter().all(|tree| match tree {
        TokenTree::Group(group) if group.delimiter() == Delimiter::Brace => {
            syn::parse2::<syn::Block>(TokenTree::Group(group).into()).is_ok()
        }
        TokenTree::Group(group) => braces_are_blocks(&group.stream()),
        _ => true,
    })
}

/// The nesting depth of a token stream's groups.
pub fn depth(tokens: &TokenStream) -> usize {
    tokens
        .clone()
        .into_iter()
        .map(|tree| match tree {
            TokenTree::Group(group) => 1 + depth(&group.stream()),
            _ => 0,
        })
        .max()
        .unwrap_or(0)
}

/// Text mode: the bytes as UTF-8 source, if they lex and nest no deeper than [`MAX_DEPTH`].
pub fn from_text(data: &[u8]) -> Option<TokenStream> {
    let text = std::str::from_utf8(data).ok()?;
    let tokens = TokenStream::from_str(text).ok()?;
    (depth(&tokens) <= MAX_DEPTH).then_some(tokens)
}

const IDENTS: &[&str] = &[
    "let", "mut", "a", "b", "c", "x", "s", "i", "j", "k", "l", "alpha", "self", "exp", "ln",
    "sqrt", "abs", "max", "min", "powi", "tanh", "sin", "foo", "f32", "f64", "Tensor", "w", "_",
    "r#a", "view", "as", "usize",
];

const PUNCTS: &[&str] = &[
    "=", "+=", "-=", "*=", "/=", "+", "-", "*", "/", ";", ",", ".", ":", "::", "==", "!", "&", "<",
    ">", "..", "#", "'", "@", "?", "$", "|",
];

const LITERALS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "0.5",
    "1.5",
    "2.0f32",
    "2f64",
    "1e-9",
    "1e999",
    "1e-400",
    "0x10",
    "1_000",
    "99999999999999999999999999",
    "4294967296",
    "2147483648",
    "3u8",
    "0b11",
    "\"s\"",
    "'c'",
    "b'x'",
    "1.",
    "7usize",
    "-1",
];

/// Token-tree mode: a stream built from the language's alphabet.
pub fn structured(u: &mut Unstructured) -> Result<TokenStream> {
    let count = u.int_in_range(0..=48)?;
    stream(u, count, 0)
}

fn stream(u: &mut Unstructured, count: usize, depth: usize) -> Result<TokenStream> {
    let mut out = TokenStream::new();
    for _ in 0..count {
        if u.is_empty() {
            break;
        }
        out.extend(tree(u, depth)?);
    }
    Ok(out)
}

fn tree(u: &mut Unstructured, depth: usize) -> Result<TokenStream> {
    let span = Span::call_site();
    Ok(match u.int_in_range(0..=9)? {
        0..=3 => {
            let name = *u.choose(IDENTS)?;
            let ident = match name.strip_prefix("r#") {
                Some(raw) => Ident::new_raw(raw, span),
                None => Ident::new(name, span),
            };
            TokenTree::Ident(ident).into()
        }
        4..=6 => {
            let punct = *u.choose(PUNCTS)?;
            let chars: Vec<char> = punct.chars().collect();
            let joint_tail = u.ratio(1, 8)?;
            chars
                .iter()
                .enumerate()
                .map(|(k, &c)| {
                    let spacing = if k + 1 < chars.len() || joint_tail {
                        Spacing::Joint
                    } else {
                        Spacing::Alone
                    };
                    TokenTree::Punct(Punct::new(c, spacing))
                })
                .collect()
        }
        7 => {
            let text = *u.choose(LITERALS)?;
            if let Some(negative) = text.strip_prefix('-') {
                // A negative literal token, as a macro_rules substitution can make.
                let value: i64 = negative.parse().expect("a number");
                TokenTree::Literal(Literal::i64_unsuffixed(-value)).into()
            } else {
                TokenTree::Literal(Literal::from_str(text).expect("a literal")).into()
            }
        }
        _ if depth >= 4 => TokenTree::Ident(Ident::new("a", span)).into(),
        kind => {
            let delimiter = match (kind, u.int_in_range(0..=7)?) {
                (8, 0) => Delimiter::None,
                (8, _) => Delimiter::Bracket,
                (_, 0..=3) => Delimiter::Parenthesis,
                _ => Delimiter::Brace,
            };
            let count = u.int_in_range(0..=8)?;
            let inner = stream(u, count, depth + 1)?;
            TokenTree::Group(Group::new(delimiter, inner)).into()
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_forms_of_each_by_build_are_parsed() {
        let valid = quote!(x::by_build! { { let a = 1; } { { f(); } } });
        assert!(by_build_forms_parse(&valid).is_ok());
        // An invalid form, nested in a block as generated statements are.
        let invalid = quote!({
            let c = {
                x::by_build! { { let a = 1; } { let = ; } }
            };
        });
        assert!(by_build_forms_parse(&invalid).is_err());
        let expanded =
            tensor_dsl_compiler::expand(quote!(c[i, j] = a[i, k] * b[k, j];), Flavor::Panic);
        assert!(expanded.to_string().contains("by_build"));
        assert!(by_build_forms_parse(&expanded).is_ok());
    }
}

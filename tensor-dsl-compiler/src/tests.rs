//! Whole-compiler tests on `proc_macro2` input: the expansion is valid Rust, and no input makes
//! the compiler panic.

use proc_macro2::TokenStream;
use proptest::prelude::*;
use quote::quote;

use crate::{expand, Flavor};

fn assert_valid_rust(input: TokenStream, flavor: Flavor) -> String {
    let output = expand(input, flavor);
    let file: syn::File = syn::parse2(quote!(fn expanded() { #output }))
        .unwrap_or_else(|error| panic!("expansion is not valid Rust: {error}\n{output}"));
    quote!(#file).to_string()
}

#[test]
fn expansions_are_valid_rust() {
    let blocks = [
        quote! { let c[i, j] = a[i, k, l] * b[k, j, l]; },
        quote! {
            let mut y[b, o] = w[o, k] * x[b, k] + bias[o];
            y[b, o] -= 2 * y[b, o];
            y[b, o] = y[o, b];
            let s: f32 = y[b, o] * { scale };
            total += s * x[b, k] * x[b, k];
        },
        quote! { out[i, 0] = a[i, { n }] + exp(a[i, i]) / max(b[i], 1) + powi(b[i], -2); },
    ];
    for block in blocks {
        let panicking = assert_valid_rust(block.clone(), Flavor::Panic);
        assert!(panicking.contains("expect"), "{panicking}");
        let fallible = assert_valid_rust(block, Flavor::Fallible);
        assert!(fallible.contains("return"), "{fallible}");
    }
}

#[test]
fn failed_blocks_expand_to_errors_and_stubs() {
    let output = expand(
        quote! {
            let c[i, i] = a[i, i];
            let d[i] = a[i] +;
            let s = a[i, j] * a[i];
        },
        Flavor::Panic,
    )
    .to_string();
    assert_eq!(output.matches("compile_error").count(), 3, "{output}");
    assert!(output.contains("stub_tensor"), "{output}");
    assert!(output.contains("stub_any"), "{output}");
    assert!(output.contains("stub_scalar"), "{output}");
}

#[test]
fn matrix_statements_without_the_matrix_feature_are_errors_on_the_function() {
    let block = quote! {
        let (u[i, s], sv[s], vt[s, j]) = svd(t[i, j]);
        let c[i, j] = u[i, s] * vt[s, j];
    };
    let config = crate::Config {
        matrix: false,
        ..crate::Config::new(Flavor::Panic)
    };
    let output = crate::expand_with(block.clone(), config).to_string();
    assert!(output.contains("compile_error"), "{output}");
    assert!(
        output.contains("matrix statements (`svd`) need tensor-dsl's `matrix` feature"),
        "{output}"
    );
    // With the feature (the default), the same block compiles.
    let output = expand(block, Flavor::Panic).to_string();
    assert!(!output.contains("compile_error"), "{output}");
}

#[test]
fn a_let_named_like_a_temporary_binds_in_the_callers_scope() {
    let output = expand(quote! { let __tmp_y[i] = a[i]; }, Flavor::Panic);
    let first = output.into_iter().next().expect("a non-empty expansion");
    assert!(
        !matches!(&first, proc_macro2::TokenTree::Group(group) if group.delimiter() == proc_macro2::Delimiter::Brace),
        "a user's `let` must not be wrapped in a block: {first}"
    );
}

#[test]
fn later_tokens_of_a_name_are_proved_to_name_its_first_binding() {
    let block = quote! {
        let mut c[i] = a[i] + r#a[i] + self.w[i] + W[i] + W[i] + self.w[i];
        c[i] += a[i] + x.y[i] + x.y[i];
    };
    let program = crate::front_end(block.clone()).expect("a valid block");
    let pairs: Vec<(String, String)> = program
        .same_bindings
        .iter()
        .map(|pair| (pair.first.to_string(), pair.later.to_string()))
        .collect();
    // `self` and uppercase names cannot be shadowed by a `let`, so they are left out.
    let expected = [("a", "r#a"), ("c", "c"), ("a", "a"), ("x", "x")];
    assert_eq!(pairs, expected.map(|(a, b)| (a.to_owned(), b.to_owned())));
    let output = expand(block, Flavor::Panic).to_string();
    assert_eq!(output.matches("same_binding (").count(), 4, "{output}");
}

#[test]
fn generated_code_names_the_runtime_by_the_configured_crate_name() {
    let config = crate::Config {
        runtime: proc_macro2::Ident::new("tdsl", proc_macro2::Span::call_site()),
        ..crate::Config::new(Flavor::Panic)
    };
    let valid = quote! { let mut c[i] = a[i, j] * b[j]; c[i] += a[i, i]; };
    let failed = quote! { let c[i, i] = a[i, i]; let d[i] = a[i] +; };
    for block in [valid, failed] {
        let output = crate::expand_with(block, config.clone()).to_string();
        assert!(output.contains(":: tdsl :: __private ::"), "{output}");
        assert!(!output.contains("tensor_dsl"), "{output}");
    }
    // Once the expansion is written, the usual name is back.
    let output = expand(quote! { let c[i] = a[i]; }, Flavor::Panic).to_string();
    assert!(output.contains(":: tensor_dsl :: __private ::"), "{output}");
}

/// Tokens the language uses, so random blocks come close to valid ones.
fn token_soup() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "let", "mut", "c", "a", "b", "i", "j", "k", "[", "]", "(", ")", "{", "}", ",", ";", "=",
        "+=", "-=", "+", "-", "*", "/", "2", "0", "1.5", "exp", "max", "powi", ".", "self", ":",
        "f32", "1e999", "2f32", "{ n }",
    ]);
    prop::collection::vec(atoms, 0..40).prop_map(|atoms| atoms.join(" "))
}

proptest! {
    #[test]
    fn no_input_makes_the_compiler_panic(source in token_soup()) {
        // Unbalanced delimiters do not lex; those never reach a macro.
        if let Ok(input) = source.parse::<TokenStream>() {
            let _ = expand(input.clone(), Flavor::Panic);
            let _ = expand(input, Flavor::Fallible);
        }
    }
}

#[test]
fn a_suffixed_tuple_field_is_a_syntax_error() {
    // Found by the `compile_tokens` fuzz target: `t.1EEEeE` was passed through as a place.
    let input: proc_macro2::TokenStream = "J = t.1EEEeE;".parse().unwrap();
    let output = crate::compile::expand(input, crate::emit::Flavor::Panic).to_string();
    assert!(output.contains("compile_error"), "{output}");
    assert!(output.contains("is not a tuple field"), "{output}");
}

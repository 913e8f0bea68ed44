//! Any token stream → `tensor!`'s compiler: no panic, valid Rust out, `compile_error!`s for
//! every front-end error. The first byte picks the mode: text lexed by `proc_macro2`, or token
//! trees built from the language's alphabet (most of which reach the parser and checker).

#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use tensor_dsl_fuzz::tokens::{check_tokens, from_text, structured};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let tokens = if mode % 2 == 0 {
        match from_text(rest) {
            Some(tokens) => tokens,
            None => return,
        }
    } else {
        match structured(&mut Unstructured::new(rest)) {
            Ok(tokens) => tokens,
            Err(_) => return,
        }
    };
    check_tokens(tokens);
});

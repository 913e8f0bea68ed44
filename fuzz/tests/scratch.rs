use std::str::FromStr;
#[test]
fn scratch() {
    for text in std::fs::read_to_string("/tmp/scratch/blocks.txt").unwrap().lines() {
        if text.trim().is_empty() { continue; }
        let tokens = proc_macro2::TokenStream::from_str(text).unwrap();
        let r = std::panic::catch_unwind(|| tensor_dsl_compiler::front_end(tokens.clone()).map(|p| p.statements.iter().map(|s| s.to_string()).collect::<Vec<_>>()).map_err(|e| e.to_string()));
        let r2 = std::panic::catch_unwind(|| { tensor_dsl_compiler::expand(tokens.clone(), tensor_dsl_compiler::Flavor::Panic); });
        println!("{text}\n   front: {:?}\n   expand ok: {}", r.ok(), r2.is_ok());
    }
}

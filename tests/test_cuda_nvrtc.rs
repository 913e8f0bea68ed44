//! CUDA modules the test suite's `tensor!` blocks generate compile with NVRTC to an `sm_90`
//! cubin without spilling registers: those of the real corpus on the simulator (f64) and of
//! the CUDA tests (f64, i64 and c64); with `TDSL_NVRTC_ALL_TYPES=1`, every file's blocks, in
//! f32 and f64 and, where a file runs them, in i32, i64, c32 and c64 (the integer and
//! complex corpora among them). Without NVRTC on the loader path the
//! test says so and stops, unless `REQUIRE_NVRTC=1` (as in CI), which turns a missing NVRTC
//! into a failure.
#![cfg(feature = "cuda")]

use std::collections::BTreeSet;

use rayon::prelude::*;
use tensor_dsl::cuda::nvrtc;
use tensor_dsl_compiler::cuda::{self, DeviceType};
use tensor_dsl_compiler::{trace, Config, Flavor};

/// The bodies of `tensor! { … }` and `try_tensor! { … }` calls in `text`.
fn blocks(text: &str) -> Vec<&str> {
    let mut found = Vec::new();
    for (start, _) in text.match_indices("tensor! {") {
        let body = &text[start + "tensor! {".len()..];
        let mut depth = 1usize;
        for (k, c) in body.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        found.push(&body[..k]);
                        break;
                    }
                }
                _ => {}
            }
        }
    }
    found
}

#[test]
fn every_generated_module_compiles_without_spills() {
    if !nvrtc::available() {
        assert!(
            std::env::var("REQUIRE_NVRTC").as_deref() != Ok("1"),
            "REQUIRE_NVRTC=1 but libnvrtc.so.13 is not on the loader path (see .ci/nvrtc)"
        );
        eprintln!("NVRTC not found: skipping (set REQUIRE_NVRTC=1 to make this a failure)");
        return;
    }
    let mut texts = BTreeSet::new();
    let mut statements = 0;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/ is readable")
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .collect();
    files.sort();
    for file in files {
        let text = std::fs::read_to_string(&file).expect("a readable test file");
        // Integer and complex modules differ from the float ones only in the element's
        // definition: they are compiled for the files that run device code in those types
        // (compiling every statement of the suite in six types took 8 min).
        let name = file
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or_default();
        // Without `TDSL_NVRTC_ALL_TYPES=1` (`.ci/run --full`): the files whose blocks run on a
        // device in every CI run (the real corpus on the simulator, the CUDA tests), one type
        // per kind, the wider one, whose values take more registers (a module of the narrower
        // type that spilled would spill there too). With it: every file's blocks, in every
        // type of each kind (the integer and complex corpora in theirs).
        let every = std::env::var("TDSL_NVRTC_ALL_TYPES").as_deref() == Ok("1");
        let types: &[DeviceType] = match (name, every) {
            ("test_acceptance_cuda_integer.rs", true) => &[DeviceType::I32, DeviceType::I64],
            ("test_acceptance_cuda_integer.rs", false) => &[],
            ("test_acceptance_cuda_complex.rs", true) => &[DeviceType::C32, DeviceType::C64],
            ("test_acceptance_cuda_complex.rs", false) => &[],
            ("test_cuda_simulator.rs" | "test_cuda_gpu.rs", true) => &DeviceType::ALL,
            ("test_cuda_simulator.rs" | "test_cuda_gpu.rs", false) => {
                &[DeviceType::F64, DeviceType::I64, DeviceType::C64]
            }
            ("test_acceptance_cuda.rs", false) => &[DeviceType::F64],
            (_, true) => &[DeviceType::F32, DeviceType::F64],
            (_, false) => &[],
        };
        for block in blocks(&text) {
            // Blocks that fail to compile on purpose, or hold macro variables, are skipped.
            let Ok(tokens) = block.parse::<proc_macro2::TokenStream>() else {
                continue;
            };
            let Ok(traced) = trace(tokens, Config::new(Flavor::Panic)) else {
                continue;
            };
            statements += traced.plan.statements.len();
            for &element in types {
                for steps in cuda::modules(&traced.plan, element) {
                    // A step its statement cannot have over a type (a `/` over integers) has
                    // no module.
                    let written = steps.into_iter().map(|(_, text)| text);
                    texts.extend(written.filter(|text| !text.is_empty()));
                }
            }
        }
    }
    assert!(texts.len() > 300, "only {} modules found", texts.len());
    let results: Vec<(String, Result<nvrtc::Cubin, _>)> = texts
        .into_par_iter()
        .map(|text| {
            let cubin = nvrtc::compile(&text, "sm_90");
            (text, cubin)
        })
        .collect();
    let mut max_registers = 0;
    let mut entries = 0;
    let mut unreported = Vec::new();
    for (text, cubin) in &results {
        let cubin = match cubin {
            Ok(cubin) => cubin,
            Err(error) => panic!("{error}\nmodule:\n{text}"),
        };
        if cubin.entries.is_empty() {
            unreported.push((text, cubin));
        }
        for entry in &cubin.entries {
            assert_eq!(
                entry.spill_bytes, 0,
                "{} spills:\n{}\n{text}",
                entry.name, cubin.log
            );
            max_registers = max_registers.max(entry.registers);
            entries += 1;
        }
    }
    if let Some((text, cubin)) = unreported.first() {
        panic!(
            "{} of {} modules compiled without a ptxas report; the first (a cubin of {} bytes, \
             log {:?}):\n{text}",
            unreported.len(),
            results.len(),
            cubin.image.len(),
            cubin.log
        );
    }
    eprintln!(
        "{} modules ({entries} entry points) from {statements} statements: no spills, at most \
         {max_registers} registers",
        results.len()
    );
}

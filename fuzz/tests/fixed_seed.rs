//! The fuzz targets' properties on fixed pseudo-random inputs, so plain `cargo test` (stable)
//! guards the harness and the compiler between fuzz runs.

use arbitrary::{Arbitrary, Unstructured};
use tensor_dsl_fuzz::block::{Block, Values};
use tensor_dsl_fuzz::numeric::ElementType;
use tensor_dsl_fuzz::tokens::{check_tokens, from_text, structured};
use tensor_dsl_fuzz::{check_block, Skip, Verdict};

fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut values = Values::new(seed);
    (0..len).map(|_| values.next_u64() as u8).collect()
}

#[test]
fn plans_match_the_naive_interpreter() {
    let (mut agreed, mut compared, mut steps) = (0, 0, 0);
    let types = [ElementType::F64, ElementType::I64, ElementType::C64];
    // Per element type: blocks generated, and blocks compared.
    let mut per_type = [(0usize, 0usize); 3];
    let mut rejected = Vec::new();
    let mut skipped = Vec::new();
    let blocks = 2000;
    for seed in 0..blocks {
        let data = bytes(seed, 512);
        let Ok(block) = Block::arbitrary(&mut Unstructured::new(&data)) else {
            continue;
        };
        let of_type = &mut per_type[types.iter().position(|&t| t == block.element).unwrap()];
        of_type.0 += 1;
        match check_block(&block) {
            Verdict::Agreed {
                compared: values,
                steps: count,
            } => {
                agreed += 1;
                of_type.1 += 1;
                compared += values;
                steps += count;
            }
            Verdict::Skipped(Skip::Rejected(error)) => rejected.push((block.text(), error)),
            Verdict::Skipped(skip) => skipped.push(skip),
        }
    }
    eprintln!(
        "{agreed} of {blocks} blocks agreed ({compared} values, {steps} steps); {} rejected, {} skipped",
        rejected.len(),
        skipped.len()
    );
    let kinds = [
        "loop nest",
        "gemm",
        "network",
        "big contraction",
        "threaded-size",
    ];
    for (kind, counter) in kinds.iter().zip(&tensor_dsl_fuzz::plan::STEPS) {
        eprintln!(
            "  {kind} steps: {}",
            counter.load(std::sync::atomic::Ordering::Relaxed)
        );
    }
    for (text, error) in rejected.iter().take(5) {
        eprintln!("rejected: {error}\n{text}");
    }
    let mut kinds: Vec<String> = skipped
        .iter()
        .map(|skip| {
            let text = format!("{skip:?}");
            text.chars().take(70).collect()
        })
        .collect();
    kinds.sort();
    kinds.dedup_by(|a, b| a[..a.len().min(12)] == b[..b.len().min(12)]);
    for kind in kinds {
        eprintln!("skipped, e.g.: {kind}");
    }
    for (element, (made, agreed)) in types.iter().zip(per_type) {
        eprintln!("  {}: {agreed} of {made} blocks agreed", element.name());
        // Every element type is generated often, and compared as often as the others.
        assert!(made * 8 >= blocks as usize, "few {} blocks", element.name());
        assert!(
            agreed * 10 >= made * 8,
            "too few {} blocks compared",
            element.name()
        );
    }
    // The generator is only useful while most of what it makes is compared.
    assert!(
        agreed * 10 >= blocks as usize * 8,
        "too few blocks compared"
    );
}

#[test]
fn the_compiler_survives_token_trees_and_text() {
    for seed in 0..3000 {
        let data = bytes(seed + 1_000_000, 256);
        if let Ok(tokens) = structured(&mut Unstructured::new(&data)) {
            check_tokens(tokens);
        }
    }
    // Text: generated blocks, cut at random places.
    for seed in 0..500 {
        let data = bytes(seed, 512);
        let Ok(block) = Block::arbitrary(&mut Unstructured::new(&data)) else {
            continue;
        };
        let text = block.text();
        let cut = (seed as usize * 7919) % (text.len() + 1);
        let cut = (0..=cut)
            .rev()
            .find(|&k| text.is_char_boundary(k))
            .unwrap_or(0);
        for part in [&text[..cut], &text[cut..], &text[..]] {
            if let Some(tokens) = from_text(part.as_bytes()) {
                check_tokens(tokens);
            }
        }
    }
}

//! Random valid blocks: every plan, run through the runtime kernels exactly as the generated
//! code calls them, must compute what the checked IR means (a naive interpreter), with and
//! without the optimizing passes.

#![no_main]

use libfuzzer_sys::fuzz_target;
use tensor_dsl_fuzz::block::Block;
use tensor_dsl_fuzz::check_block;

fuzz_target!(|block: Block| {
    check_block(&block);
});

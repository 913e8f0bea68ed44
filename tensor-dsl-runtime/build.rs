//! Cargo's optimization level → `cfg(tdsl_unoptimized)` at level 0. Generic engines are compiled
//! in the crate that calls them, at that crate's level, and without optimization nothing is
//! inlined: there the loop-nest engine takes each statement's body as a trait object, so it is
//! compiled once per element type and loop count instead of once per statement, and nothing is
//! forced inline (`cfg_attr(not(tdsl_unoptimized), inline(always))`), so each statement calls
//! the helpers rather than holding its own copy of each (about a quarter of a debug build's
//! cost per statement, `benches/compile_cost.py`), and generated code's written-out loops are
//! dropped before rustc checks them (`__private::by_build!`, half of what remained).

fn main() {
    println!("cargo::rustc-check-cfg=cfg(tdsl_unoptimized)");
    if std::env::var("OPT_LEVEL").is_ok_and(|level| level == "0") {
        println!("cargo::rustc-cfg=tdsl_unoptimized");
    }
    println!("cargo::rerun-if-changed=build.rs");
}

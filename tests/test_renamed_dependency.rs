//! A crate that depends on `tensor-dsl` under another name
//! (`tdsl = { package = "tensor-dsl", .. }`, in `tests/renamed/`) builds and runs: generated
//! code names the runtime by the name the dependency has in that crate.

use std::path::Path;
use std::process::Command;

#[test]
fn a_crate_that_renames_the_dependency_builds_and_runs() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/renamed/Cargo.toml");
    // This test's own target directory, so the dependencies built for it are reused.
    let target_dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .parent()
        .expect("the temporary directory lies in the target directory");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .args(["run", "--quiet", "--offline", "--manifest-path"])
        .arg(&manifest)
        .arg("--target-dir")
        .arg(target_dir)
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "building or running {} failed:\n{}",
        manifest.display(),
        String::from_utf8_lossy(&output.stderr)
    );
}

//! Starting the running test program again under `mpirun`, for the distributed tests: each is
//! its own `main` (no test harness, since MPI initialises once per process), which calls
//! [`spawn`] when started by `cargo test` and does its rank's work when started by `mpirun`
//! (the environment variable [`ROLE`] set).
#![allow(dead_code)] // each test program uses what it needs

use std::process::{Command, Output};
use std::time::{Duration, Instant};

/// Set in the ranks `mpirun` starts: what they do.
pub const ROLE: &str = "TDSL_MPI_ROLE";

/// Runs this program under `mpirun -np ranks` (ended after 120 s) with [`ROLE`] = `role`:
/// its output and how long it took.
pub fn spawn(ranks: usize, role: &str) -> (Output, Duration) {
    let program = std::env::current_exe().expect("the test's own path");
    let start = Instant::now();
    let output = Command::new("mpirun")
        .args(["--timeout", "120", "-np", &ranks.to_string()])
        .arg(&program)
        .env(ROLE, role)
        // Root in containers, and more ranks than cores: both are fine for correctness runs.
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
        .output()
        .expect("`mpirun` on the PATH (Open MPI's openmpi-bin)");
    (output, start.elapsed())
}

/// Runs `role` at 1 to 4 ranks, failing with the output of a run that fails.
pub fn spawn_at_1_to_4(role: &str) {
    for ranks in 1..=4 {
        let (output, took) = spawn(ranks, role);
        let text =
            String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "at {ranks} ranks:\n{text}");
        println!("{ranks} ranks: {} ({took:.1?})", text.trim());
    }
}

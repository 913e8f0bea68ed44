//! Distributed statements against single-process ones: a 2048² f64 GEMM and the seed
//! contraction `c[i, j] = a[i, k, l]·b[k, j, l]` (i, j 2048; k 64; l 32) over `DistTensor`s at
//! 1, 2 and 4 MPI ranks (one thread each), against the same statements over host `Tensor`s
//! on one thread, with the bytes each rank sent against SUMMA's formula. Prints the README's
//! table (efficiency at p ranks: single-process time ÷ (p × time at p ranks)).
//!
//!     cargo bench -p tensor-dsl-benches --features mpi --bench distributed
//!
//! Starts itself under `mpirun` (Open MPI). On a machine with fewer cores than ranks, the
//! larger runs measure the oversubscription, not the algorithm.

use std::process::Command;
use std::time::Instant;

use tensor_dsl::dist::{mpi, DistTensor, Distribution, Split, World};
use tensor_dsl::{tensor, Tensor};

const ROLE: &str = "TDSL_MPI_ROLE";

/// One distributed measurement: workload, seconds, bytes rank 0 sent, SUMMA's bytes.
struct Measured {
    name: String,
    seconds: f64,
    bytes: f64,
    formula: f64,
}

fn main() {
    if std::env::var(ROLE).is_ok() {
        return ranks();
    }
    let program = std::env::current_exe().expect("the bench's own path");
    let mut rows: Vec<(usize, Vec<Measured>)> = Vec::new();
    let mut single: Vec<(String, f64)> = Vec::new();
    for p in [1, 2, 4] {
        let output = Command::new("mpirun")
            .args(["--timeout", "600", "-np", &p.to_string()])
            .arg(&program)
            .env(ROLE, "bench")
            .env("RAYON_NUM_THREADS", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OMPI_MCA_rmaps_base_oversubscribe", "1")
            .output()
            .expect("`mpirun` on the PATH (Open MPI's openmpi-bin)");
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{text}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut measured = Vec::new();
        for line in text.lines() {
            let fields: Vec<&str> = line.split_whitespace().collect();
            match fields.as_slice() {
                ["single", name, seconds] => {
                    single.push((name.to_string(), seconds.parse().unwrap()))
                }
                ["dist", name, seconds, bytes, formula] => measured.push(Measured {
                    name: name.to_string(),
                    seconds: seconds.parse().unwrap(),
                    bytes: bytes.parse().unwrap(),
                    formula: formula.parse().unwrap(),
                }),
                _ => {}
            }
        }
        rows.push((p, measured));
    }
    println!("| workload | ranks | time | efficiency | bytes sent by rank 0 | SUMMA's formula |");
    println!("| --- | --- | --- | --- | --- | --- |");
    for (name, base) in &single {
        println!("| {name} | single process | {:.1} ms | | | |", base * 1e3);
        for (p, measured) in &rows {
            for m in measured.iter().filter(|m| &m.name == name) {
                println!(
                    "| {name} | {p} | {:.1} ms | {:.0} % | {:.1} MB | {:.1} MB |",
                    m.seconds * 1e3,
                    100.0 * base / (*p as f64 * m.seconds),
                    m.bytes / 1e6,
                    m.formula / 1e6
                );
            }
        }
    }
    println!();
    for (p, measured) in &rows {
        for m in measured.iter().filter(|m| m.name.starts_with("gemm-2048-")) {
            println!("{p} ranks, {}: {:.1} ms", m.name, m.seconds * 1e3);
        }
    }
}

/// The best of five runs of `f`, each started together on every rank and timed until every
/// rank is done.
fn best(world: &World, mut f: impl FnMut()) -> f64 {
    (0..5)
        .map(|_| {
            world.barrier();
            let start = Instant::now();
            f();
            world.barrier();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

/// Words a rank receives moving A's blocks to whole rows and B's to whole columns on a
/// pr × pc grid (the 2-D algorithm SUMMA pipelines), in bytes of f64.
fn summa_bytes(grid: &[usize], m: usize, k: usize, n: usize) -> f64 {
    let (pr, pc) = (grid[0] as f64, grid.get(1).copied().unwrap_or(1) as f64);
    let words = (m * k) as f64 / pr * (1.0 - 1.0 / pc) + (k * n) as f64 / pc * (1.0 - 1.0 / pr);
    words * 8.0
}

fn ranks() {
    let universe = mpi::initialize().expect("MPI starts");
    let world = World::new(universe.world());
    let p = world.size();
    let value = |index: &[usize]| index.iter().fold(0.0, |acc, &i| acc * 0.5 + i as f64) / 1e3;
    let report = |name: &str, seconds: f64, bytes: f64, formula: f64| {
        if world.rank() == 0 {
            println!("dist {name} {seconds} {bytes} {formula}");
        }
    };
    let n = 2048;
    // The GEMM.
    if p == 1 {
        let a = Tensor::from_fn([n, n], value);
        let b = Tensor::from_fn([n, n], value);
        let mut c = Tensor::<f64>::zeros([n, n]);
        let t = best(&world, || tensor! { c[i, j] = a[i, k] * b[k, j]; });
        println!("single gemm-2048 {t}");
    }
    let spread = Distribution::spread(2, p);
    let a = DistTensor::from_fn(&world, &[n, n], spread.clone(), value).unwrap();
    let b = DistTensor::from_fn(&world, &[n, n], spread.clone(), value).unwrap();
    let mut c = DistTensor::<f64>::zeros(&world, &[n, n], spread.clone()).unwrap();
    let before = world.traffic();
    let t = best(&world, || tensor! { c[i, j] = a[i, k] * b[k, j]; });
    let bytes = (world.traffic().bytes - before.bytes) as f64 / 5.0;
    report("gemm-2048", t, bytes, summa_bytes(spread.grid(), n, n, n));
    // Where its time goes: A's move alone, and each rank's share of the product alone.
    let rows = Distribution::new(spread.grid(), &[spread.splits()[0], Split::Whole]).unwrap();
    let t = best(&world, || drop(a.redistribute(rows.clone()).unwrap()));
    report("gemm-2048-move-of-a", t, 0.0, 0.0);
    let cols = n.div_ceil(spread.grid()[1]);
    let rows_here = n.div_ceil(spread.grid()[0]);
    let la = Tensor::from_fn([rows_here, n], value);
    let lb = Tensor::from_fn([n, cols], value);
    let mut lc = Tensor::<f64>::zeros([rows_here, cols]);
    let t = best(&world, || tensor! { lc[i, j] = la[i, k] * lb[k, j]; });
    report("gemm-2048-local-share", t, 0.0, 0.0);
    drop((a, b, c));
    // The seed contraction.
    let (ni, nk, nl) = (2048, 64, 32);
    if p == 1 {
        let a = Tensor::from_fn([ni, nk, nl], value);
        let b = Tensor::from_fn([nk, ni, nl], value);
        let mut c = Tensor::<f64>::zeros([ni, ni]);
        let t = best(&world, || tensor! { c[i, j] = a[i, k, l] * b[k, j, l]; });
        println!("single seed {t}");
    }
    let three = Distribution::spread(3, p);
    let a = DistTensor::from_fn(&world, &[ni, nk, nl], three.clone(), value).unwrap();
    let b = DistTensor::from_fn(&world, &[nk, ni, nl], three.clone(), value).unwrap();
    let mut c = DistTensor::<f64>::zeros(&world, &[ni, ni], spread.clone()).unwrap();
    let before = world.traffic();
    let t = best(&world, || tensor! { c[i, j] = a[i, k, l] * b[k, j, l]; });
    let bytes = (world.traffic().bytes - before.bytes) as f64 / 5.0;
    report(
        "seed",
        t,
        bytes,
        summa_bytes(spread.grid(), ni, nk * nl, ni),
    );
}

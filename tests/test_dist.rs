//! Distributed tensors under `mpirun` (feature `mpi`; Open MPI's `mpirun` on the PATH). Run
//! as a test, this program starts itself under `mpirun -np 1, 2, 3, 4` (each with a timeout)
//! and fails if any run does; started by `mpirun`, each process is one rank and checks, against
//! single-process tensors, every constructor, the gather, and the redistribution between every
//! pair of a set of distributions (rows, columns, 2-D grids that do not divide the extents,
//! block-cyclic, replicated), over extents 0, 1, 2, 3, 7 and 13 and element types f64, i64 and
//! c64; a root tensor of the wrong shape is an error on every rank; redistributing to the same
//! distribution sends nothing; one rank's panic fails `mpirun` instead of hanging it.
//!
//!     cargo test --features mpi --test test_dist

use std::process::Command;
use std::time::{Duration, Instant};

use tensor_dsl::dist::{mpi, DistTensor, Distribution, Split, Traffic, World};
use tensor_dsl::{c64, Element, Tensor};

/// Set in the ranks `mpirun` starts: what they do.
const ROLE: &str = "TDSL_MPI_ROLE";

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("checks") => checks(),
        Ok("panic") => panic_on_rank_one(),
        _ => spawn_all(),
    }
}

/// Runs this program under `mpirun` at 1–4 ranks, then one run whose rank 1 panics.
fn spawn_all() {
    let program = std::env::current_exe().expect("the test's own path");
    let run = |ranks: usize, role: &str| {
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
    };
    for ranks in 1..=4 {
        let (output, took) = run(ranks, "checks");
        let text =
            String::from_utf8_lossy(&output.stdout) + String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "at {ranks} ranks:\n{text}");
        println!("{ranks} ranks: {} ({took:.1?})", text.trim());
    }
    let (output, took) = run(3, "panic");
    assert!(
        !output.status.success(),
        "a rank panicked, yet mpirun succeeded"
    );
    // Its timeout is 120 s: the panic must end the job itself, at once.
    assert!(
        took < Duration::from_secs(60),
        "mpirun took {took:?} to end after a panic"
    );
    println!(
        "a panicking rank ends mpirun with {} ({took:.1?})",
        output.status
    );
}

/// Rank 1 panics while the others wait in a collective call.
fn panic_on_rank_one() {
    let universe = mpi::initialize().expect("MPI starts");
    let world = World::new(universe.world());
    if world.rank() == 1 {
        panic!("rank 1 fails on purpose");
    }
    world.barrier();
}

/// A value per global index, distinct across indices.
trait Sample: Element {
    fn at(global: &[usize]) -> Self;
}

fn key(global: &[usize]) -> usize {
    global.iter().fold(0, |acc, &i| acc * 31 + i + 1)
}

impl Sample for f64 {
    fn at(global: &[usize]) -> f64 {
        key(global) as f64 / 4.0
    }
}

impl Sample for i64 {
    fn at(global: &[usize]) -> i64 {
        -(key(global) as i64)
    }
}

impl Sample for c64 {
    fn at(global: &[usize]) -> c64 {
        c64::new(key(global) as f64, -(key(global) as f64) / 2.0)
    }
}

/// Distributions of a rank-2 tensor over `p` ranks.
fn distributions(p: usize) -> Vec<Distribution> {
    let mut out = vec![
        Distribution::replicated(2, p),
        Distribution::rows(2, p),
        Distribution::new(&[p], &[Split::Whole, Split::Block(0)]).unwrap(),
        Distribution::new(&[p], &[Split::Cyclic(0, 2), Split::Whole]).unwrap(),
        Distribution::new(&[p], &[Split::Whole, Split::Cyclic(0, 1)]).unwrap(),
    ];
    for rows in (1..=p).filter(|rows| p % rows == 0) {
        let grid = [rows, p / rows];
        out.push(Distribution::new(&grid, &[Split::Block(0), Split::Cyclic(1, 3)]).unwrap());
        out.push(Distribution::new(&grid, &[Split::Block(1), Split::Whole]).unwrap());
    }
    out
}

fn checks() {
    let universe = mpi::initialize().expect("MPI starts");
    let world = World::new(universe.world());
    check_type::<f64>(&world);
    check_type::<i64>(&world);
    check_type::<c64>(&world);
    // A root tensor of another shape than every rank names: an error on every rank.
    let p = world.size();
    let wrong = (world.rank() == 0).then(|| Tensor::<f64>::zeros([3, 3]));
    let made = DistTensor::from_root(&world, 0, wrong.as_ref(), &[3, 4], Distribution::rows(2, p));
    let message = made.err().expect("a shape mismatch").to_string();
    assert!(message.contains("[3, 4]"), "{message}");
    // A grid of another size than the world.
    assert!(DistTensor::<f64>::zeros(&world, &[2, 2], Distribution::rows(2, p + 1)).is_err());
    world.barrier();
    if world.rank() == 0 {
        println!("ok, rank 0 sent {:?}", world.traffic());
    }
}

fn check_type<T: Sample>(world: &World) {
    let p = world.size();
    let root = world.size() - 1;
    for shape in [[7, 13], [1, 1], [0, 5], [2, 3], [13, 0]] {
        let whole = Tensor::from_fn(shape, |global| T::at(global));
        for from in distributions(p) {
            let made = DistTensor::from_fn(world, &shape, from.clone(), T::at).unwrap();
            assert_eq!(made.shape(), shape);
            // Each element of the block is the one at its global index.
            let local = made.local();
            let mut at = 0;
            for_each(local.shape(), |index| {
                assert_eq!(local.as_slice()[at], T::at(&made.global_index(index)));
                at += 1;
            });
            let gathered = made.gather_to_root(root);
            match world.rank() == root {
                true => assert_eq!(gathered.as_ref(), Some(&whole), "gather of {from:?}"),
                false => assert!(gathered.is_none()),
            }
            let scattered = (world.rank() == root).then_some(&whole);
            let spread =
                DistTensor::from_root(world, root, scattered, &shape, from.clone()).unwrap();
            assert_eq!(spread.local(), made.local(), "from_root by {from:?}");
            for to in distributions(p) {
                let before = world.traffic();
                let moved = made.redistribute(to.clone()).unwrap();
                let direct = DistTensor::from_fn(world, &shape, to.clone(), T::at).unwrap();
                assert_eq!(moved.local(), direct.local(), "{from:?} → {to:?}");
                assert_eq!(moved.distribution(), &to);
                if from == to && is_split(&from) {
                    assert_eq!(world.traffic(), before, "{from:?} to itself sent data");
                }
            }
        }
    }
    let _: Traffic = world.traffic();
}

/// Whether every grid axis splits some tensor axis (no replicas, so nothing to send to
/// another rank when the distribution stays).
fn is_split(distribution: &Distribution) -> bool {
    (0..distribution.grid().len()).all(|g| {
        distribution
            .splits()
            .iter()
            .any(|split| matches!(*split, Split::Block(h) | Split::Cyclic(h, _) if h == g))
    })
}

fn for_each(shape: &[usize], mut f: impl FnMut(&[usize])) {
    let count: usize = shape.iter().product();
    let mut index = vec![0; shape.len()];
    for _ in 0..count {
        f(&index);
        for axis in (0..shape.len()).rev() {
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

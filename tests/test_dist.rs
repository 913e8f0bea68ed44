//! Distributed tensors under `mpirun` (feature `mpi`; Open MPI's `mpirun` on the PATH). Run
//! as a test, this program starts itself under `mpirun -np 1, 2, 3, 4` (each with a timeout)
//! and fails if any run does; started by `mpirun`, each process is one rank and checks, against
//! single-process tensors, every constructor, the gather, and the redistribution between every
//! pair of a set of distributions (rows, columns, 2-D grids that do not divide the extents,
//! block-cyclic, replicated), over extents 0, 1, 2, 3, 7 and 13 and element types f64, i64 and
//! c64; a root tensor of the wrong shape is an error on every rank; redistributing to the same
//! distribution sends nothing; one rank's panic fails `mpirun` instead of hanging it. Then
//! `tensor!` statements over distributed tensors (point-wise, transposes, sums, scalars,
//! contractions and their updates, products of three, diagonals, fixed positions, in-place
//! reads) against the same statements over whole tensors, for pairs of layouts; the bytes they
//! send (none where the operands are spread as the target needs, SUMMA's on a 2 × 2 grid);
//! shape errors on every rank before anything moves; and, in debug builds, ranks that reach
//! different statements end `mpirun` with both named.
//!
//!     cargo test --features mpi --test test_dist

use std::time::Duration;

use tensor_dsl::dist::{mpi, DistTensor, Distribution, Split, Traffic, World};
use tensor_dsl::{c64, tensor, try_tensor, Element, Tensor};

#[path = "common/mpirun.rs"]
mod mpirun;

use mpirun::{spawn, spawn_at_1_to_4, ROLE};

fn main() {
    match std::env::var(ROLE).as_deref() {
        Ok("checks") => checks(),
        Ok("panic") => panic_on_rank_one(),
        Ok("diverge") => diverge_on_rank_one(),
        _ => spawn_all(),
    }
}

/// Runs this program under `mpirun` at 1–4 ranks, then one run whose rank 1 panics, and (in
/// debug builds) one whose ranks run different statements.
fn spawn_all() {
    spawn_at_1_to_4("checks");
    let (output, took) = spawn(3, "panic");
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
    if cfg!(debug_assertions) {
        let (output, took) = spawn(2, "diverge");
        let text = String::from_utf8_lossy(&output.stderr);
        assert!(
            !output.status.success(),
            "ranks at different statements succeeded"
        );
        assert!(
            text.contains("reached different statements")
                && text.matches("test_dist.rs:").count() >= 2,
            "{text}"
        );
        assert!(
            took < Duration::from_secs(60),
            "mpirun took {took:?} to end"
        );
        println!("ranks at different statements end mpirun, naming both ({took:.1?})");
    }
}

/// Rank 1 runs another statement than rank 0 (debug builds check every step's plan).
fn diverge_on_rank_one() {
    let universe = mpi::initialize().expect("MPI starts");
    let world = World::new(universe.world());
    let p = world.size();
    let (a, _) = pair(&world, &[6, 6], Distribution::rows(2, p), 1);
    let (mut c, _) = pair(&world, &[6, 6], Distribution::rows(2, p), 2);
    if world.rank() == 1 {
        tensor! { c[i, j] = a[j, i]; }
    } else {
        tensor! { c[i, j] = a[i, k] * a[k, j]; }
    }
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
trait Sample: Element + std::fmt::Display {
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
    for rows in (1..=p).filter(|rows| p.is_multiple_of(*rows)) {
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
    statements(&world);
    other_types(&world);
    traffic(&world);
    errors(&world);
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
            // The block's global indices, axis by axis.
            let (block, indices) = made.to_local();
            assert_eq!(&block, made.local());
            for_each(block.shape(), |index| {
                let global: Vec<usize> = (0..index.len()).map(|a| indices[a][index[a]]).collect();
                assert_eq!(global, made.global_index(index));
            });
            let shown = made.to_string();
            assert!(shown.contains(&format!("{shape:?}")), "{shown}");
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

/// A distributed tensor of `shape` spread by `distribution`, with `Sample` values offset by
/// `seed`, and the same tensor whole.
fn pair(
    world: &World,
    shape: &[usize],
    distribution: Distribution,
    seed: usize,
) -> (DistTensor<f64>, Tensor<f64>) {
    let value = |global: &[usize]| f64::at(global) + seed as f64 / 8.0;
    let whole = Tensor::from_fn(shape, |global| value(global));
    let dist = DistTensor::from_fn(world, shape, distribution, value).unwrap();
    (dist, whole)
}

/// `dist` gathered equals `whole` on the root, and every rank got there.
#[track_caller]
fn same(dist: &DistTensor<f64>, whole: &Tensor<f64>, what: &str) {
    if let Some(gathered) = dist.gather_to_root(0) {
        assert_eq!(gathered.shape(), whole.shape(), "{what}");
        for (k, (x, y)) in gathered.as_slice().iter().zip(whole.as_slice()).enumerate() {
            assert_eq!(x, y, "{what}: element {k} of {:?}", whole.shape());
        }
    }
}

/// Rank-2 distributions for statements: two grids, each way round, cyclic, replicated.
fn layouts(p: usize) -> Vec<Distribution> {
    let q = grid_rows(p);
    vec![
        Distribution::rows(2, p),
        Distribution::new(&[p], &[Split::Whole, Split::Block(0)]).unwrap(),
        Distribution::new(&[q, p / q], &[Split::Block(0), Split::Block(1)]).unwrap(),
        Distribution::new(&[q, p / q], &[Split::Block(1), Split::Cyclic(0, 2)]).unwrap(),
        Distribution::replicated(2, p),
    ]
}

/// `tensor!` statements over distributed tensors equal the same statements over whole ones,
/// for every pairing of layouts and extents that do and do not divide the grid.
fn statements(world: &World) {
    let p = world.size();
    for (m, k, n) in [(7, 5, 13), (1, 1, 1), (0, 3, 2), (4, 0, 3), (12, 8, 6)] {
        for (x, lx) in layouts(p).into_iter().enumerate() {
            for (y, ly) in layouts(p).into_iter().enumerate() {
                let lz = layouts(p)[(x + y) % layouts(p).len()].clone();
                let what = format!("{m}×{k}×{n}, layouts {x} {y}");
                let (a, wa) = pair(world, &[m, k], lx.clone(), 1);
                let (b, wb) = pair(world, &[k, n], ly.clone(), 2);
                let (a2, wa2) = pair(world, &[m, k], ly.clone(), 3);
                let (mut c, mut wc) = pair(world, &[m, n], lz.clone(), 4);
                tensor! { wc[i, j] += wa[i, l] * wb[l, j]; }
                tensor! { c[i, j] += a[i, l] * b[l, j]; }
                same(&c, &wc, &format!("GEMM update, {what}"));
                if n > 0 {
                    tensor! { let we[i, l] = wa[i, l] + 2.0 * wa2[i, l] - wc[i, 0] * 0.5; }
                    tensor! { let e[i, l] = a[i, l] + 2.0 * a2[i, l] - c[i, 0] * 0.5; }
                    same(&e, &we, &format!("point-wise, {what}"));
                }
                tensor! { let wt[l, i] = wa[i, l]; }
                tensor! { let t[l, i] = a[i, l]; }
                same(&t, &wt, &format!("transpose, {what}"));
                tensor! { let ws[l] = wa[i, l]; }
                tensor! { let s[l] = a[i, l]; }
                same(&s, &ws, &format!("column sums, {what}"));
                tensor! { let wd = wa[i, l] * wa2[i, l]; }
                tensor! { let d = a[i, l] * a2[i, l]; }
                assert_eq!(d, wd, "scalar, {what}");
                tensor! { wc[i, j] = 0.5 * wc[i, j] - wt[l, i] * wb[l, j]; }
                tensor! { c[i, j] = 0.5 * c[i, j] - t[l, i] * b[l, j]; }
                same(&c, &wc, &format!("β update, {what}"));
                tensor! { let wnet[i, j] = wa[i, l] * wt[l, h] * wc[h, j]; }
                tensor! { let net[i, j] = a[i, l] * t[l, h] * c[h, j]; }
                same(&net, &wnet, &format!("three factors, {what}"));
                if m == k {
                    tensor! { let wg[i] = wa[i, i] + wa2[i, 0]; }
                    tensor! { let g[i] = a[i, i] + a2[i, 0]; }
                    same(&g, &wg, &format!("diagonal and fixed position, {what}"));
                }
                // In place, point-wise and transposed.
                let (mut q, mut wq) = pair(world, &[m, m], lx.clone(), 5);
                let (r, wr) = pair(world, &[m, m], ly.clone(), 6);
                tensor! { wq[i, j] = 2.0 * wq[i, j] + wr[i, j]; }
                tensor! { q[i, j] = 2.0 * q[i, j] + r[i, j]; }
                same(&q, &wq, &format!("in place, {what}"));
                tensor! { wq[i, j] = wq[j, i] - wr[i, j]; }
                tensor! { q[i, j] = q[j, i] - r[i, j]; }
                same(&q, &wq, &format!("transposed in place, {what}"));
            }
        }
    }
}

/// What statements send: nothing where every operand is spread as the target needs (a
/// point-wise statement over alike tensors, a batched product whose batch index is split
/// alike everywhere), and for a product on a √p × √p grid what SUMMA sends.
fn traffic(world: &World) {
    let p = world.size();
    let rows3 = Distribution::rows(3, p);
    let (a, wa) = pair(world, &[8, 6, 5], rows3.clone(), 1);
    let (b, wb) = pair(world, &[8, 5, 7], rows3.clone(), 2);
    let (mut c, mut wc) = pair(world, &[8, 6, 7], rows3.clone(), 3);
    let before = world.traffic();
    tensor! { c[z, i, j] = a[z, i, k] * b[z, k, j]; }
    tensor! { c[z, i, j] = 2.0 * c[z, i, j] + 1.0; }
    assert_eq!(
        world.traffic(),
        before,
        "batch-aligned statements sent data"
    );
    tensor! { wc[z, i, j] = wa[z, i, k] * wb[z, k, j]; }
    tensor! { wc[z, i, j] = 2.0 * wc[z, i, j] + 1.0; }
    same(&c, &wc, "batched product");
    let q = grid_rows(p);
    if q * q == p && p > 1 {
        // C[m, n] = A[m, k]·B[k, n], each in √p × √p blocks: every rank receives its row of
        // A's blocks and its column of B's but its own, (mk + kn)/√p · (1 − 1/√p) elements,
        // and sends as many.
        let (m, k, n) = (48, 40, 36);
        let grid = Distribution::new(&[q, q], &[Split::Block(0), Split::Block(1)]).unwrap();
        let (a, _) = pair(world, &[m, k], grid.clone(), 1);
        let (b, _) = pair(world, &[k, n], grid.clone(), 2);
        let (mut c, _) = pair(world, &[m, n], grid.clone(), 3);
        let before = world.traffic();
        tensor! { c[i, j] = a[i, l] * b[l, j]; }
        let sent = world.traffic().bytes - before.bytes;
        let q = q as f64;
        let formula = (m * k + k * n) as f64 / q * (1.0 - 1.0 / q) * 8.0;
        assert!(
            (sent as f64) <= 1.2 * formula && (sent as f64) >= formula / 1.2,
            "SUMMA on a {q}×{q} grid sent {sent} bytes, its formula {formula}"
        );
        if world.rank() == 0 {
            print!(
                "SUMMA {m}×{k}×{n} on {q}×{q}: {sent} bytes sent by rank 0, formula {formula}; "
            );
        }
    }
}

/// A shape error is found on every rank, with the same message, before anything is sent or
/// written.
fn errors(world: &World) {
    let p = world.size();
    let (a, _) = pair(world, &[4, 3], Distribution::rows(2, p), 1);
    let (b, _) = pair(world, &[4, 3], Distribution::rows(2, p), 2);
    let (mut c, _) = pair(world, &[4, 4], Distribution::rows(2, p), 3);
    let kept = c.local().clone();
    let before = world.traffic();
    let run = |a: &DistTensor<f64>, b: &DistTensor<f64>, c: &mut DistTensor<f64>| {
        try_tensor! { c[i, j] = a[i, k] * b[k, j]; }
        Ok::<(), tensor_dsl::ShapeError>(())
    };
    let message = run(&a, &b, &mut c)
        .expect_err("k is 3 in a and 4 in b")
        .to_string();
    assert!(
        message.contains('k') && message.contains('3') && message.contains('4'),
        "{message}"
    );
    assert_eq!(c.local(), &kept, "a failed statement wrote its target");
    assert_eq!(world.traffic(), before, "a failed statement sent data");
    // Every rank has the same message.
    let root = DistTensor::from_root(
        world,
        0,
        (world.rank() == 0)
            .then(|| {
                Tensor::from_shape_vec([message.len()], message.bytes().map(i64::from).collect())
                    .unwrap()
            })
            .as_ref(),
        &[message.len()],
        Distribution::replicated(1, p),
    );
    let root = root.expect("every rank's message has the root's length");
    let mine: Vec<i64> = message.bytes().map(i64::from).collect();
    assert_eq!(
        root.local().as_slice(),
        mine.as_slice(),
        "messages differ between ranks"
    );
}

/// The rows of the most nearly square grid of `p` ranks (`Distribution::spread`'s).
fn grid_rows(p: usize) -> usize {
    Distribution::spread(2, p).grid()[0]
}

/// Complex and integer statements: a conjugated product into a cyclic target, and an
/// integer sum over a split index (partial sums), exactly as on one process.
fn other_types(world: &World) {
    let p = world.size();
    let rows = Distribution::rows(2, p);
    let cyclic = Distribution::new(&[p], &[Split::Cyclic(0, 2), Split::Whole]).unwrap();
    let a = DistTensor::from_fn(world, &[9, 5], rows.clone(), c64::at).unwrap();
    let b = DistTensor::from_fn(world, &[9, 7], Distribution::spread(2, p), c64::at).unwrap();
    let wa = Tensor::from_fn([9, 5], c64::at);
    let wb = Tensor::from_fn([9, 7], c64::at);
    let mut c = DistTensor::<c64>::zeros(world, &[5, 7], cyclic).unwrap();
    tensor! { c[i, j] = conj(a[k, i]) * b[k, j]; }
    tensor! { let wc[i, j] = conj(wa[k, i]) * wb[k, j]; }
    if let Some(got) = c.gather_to_root(0) {
        assert_eq!(got, wc, "complex conjugated product");
    }
    let x = DistTensor::from_fn(world, &[11, 4], rows, i64::at).unwrap();
    let wx = Tensor::from_fn([11, 4], i64::at);
    tensor! { let s[j] = 3 * x[i, j]; let total = x[i, j] * x[i, j]; }
    tensor! { let ws[j] = 3 * wx[i, j]; let wtotal = wx[i, j] * wx[i, j]; }
    assert_eq!(total, wtotal, "integer scalar");
    if let Some(got) = s.gather_to_root(0) {
        assert_eq!(got, ws, "integer column sums");
    }
}

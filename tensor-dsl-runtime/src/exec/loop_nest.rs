//! Loop-nest engine: `target[out] (=|+=|= β·target +) α · Σ_red body(operands)` over `L` loop
//! variables, the first `n_out` of them the target's. Invariant: every element read or written
//! was proven in bounds before the first iteration, so the inner loops are unchecked; a large
//! scalar sum is cut into a fixed number of parts, so its bits do not depend on the threads.

use std::ops::Range;

use crate::element::Element;
use crate::operand::access::{stored_offset, stored_read, Mode};
use crate::tensor::memory::{shared_cache_bytes, LINE, PAGE};

use super::grouped::copy_grouped;
use super::joined::copy_joined;
use super::parallel::{for_each_part, map_parts};
use super::runs::copy_runs;
use super::scratch::Scratch;
use super::step::{with_detached, Step, Unproven};
use super::transpose::{
    brick, bricks, fence, gather_tile, gathers, line_lead, lines_apart, narrow_side, prefetch_run,
    rows_on_lines, stream_brick, stream_off_lines, stream_run, stream_tile, streams,
    streams_by_lines, streams_off_lines, transpose_tile, transposes,
};
use super::{address_range, meet, sort_loops};

/// Evaluates `target[out] (=|+=|= β·target +) α · Σ_red body(operands)`.
///
/// Loop variables `0..n_out` run over the target's points; `n_out..L` are summed for each
/// point (an empty sum is zero). Each operand's element at the current point is passed to
/// `body` in order; `alpha` scales the sum once per point.
///
/// The loops run in an order chosen from the strides (the smallest stride innermost; a large
/// copy follows its operand's where the two share that loop), point-wise loops that continue
/// one another run as one, inner runs over unit strides are unchecked slices the compiler
/// vectorizes, sums keep `LANES` partial sums, a point-wise copy that reads across the
/// target's rows is tiled, and a large copy's runs and its tiles' whole lines are written
/// around the caches.
///
/// `paths` says which of the engine's paths this instance holds ([`NestPaths`]).
#[inline]
pub fn evaluate<T: Element, const L: usize, const N: usize, P: NestPaths>(
    step: Step<'_, T, L, N>,
    body: impl Fn([T; N]) -> T + Sync,
    paths: P,
) {
    // Unoptimized builds (build.rs) inline nothing, so a call through a trait object costs
    // what a direct call does, and the engine is then compiled once per element type and loop
    // count instead of once per statement: the bulk of what a statement adds to a debug build.
    // That one instance holds every path.
    let _ = paths;
    #[cfg(tdsl_unoptimized)]
    {
        check_paths::<P, L>(step.extents(), step.n_out());
        let body: &DynBody<'_, T, N> = &body;
        evaluate_nest::<T, L, N, AnyNest>(step, body, false)
    }
    #[cfg(not(tdsl_unoptimized))]
    evaluate_nest::<T, L, N, P>(step, body, false)
}

/// Which of the loop-nest engine's paths an instance of it is compiled with. Whether a step
/// sums is known where it is written (its target takes every loop, or not), so a statement's
/// instance holds only the point-wise paths (runs, transposing tiles) or only the summing
/// ones (lanes, strips, cascades): about half the code rustc optimizes per statement. Steps
/// made at run time (a network's pairs and products, the GEMM engine's small steps) and
/// every step of a block whose steps dispatch (features `cuda` and `mpi`, through
/// `Backend::evaluate`) take [`AnyNest`], as do unoptimized builds, whose one instance per
/// element type serves every statement. Each marker only removes code: the paths it keeps
/// are the ones [`AnyNest`] takes for the same step, so the results are the same bits, except
/// that a [`Summing`] step whose summed loops all have extent one at run time is summed (one
/// term per point, added to zero: a product of `-0.0` becomes `0.0` in an optimized build,
/// as in the written-out loops of small statements) instead of written point-wise, and runs
/// at the summing paths' speed (a run of one per point; no such step sums much). Sealed:
/// only these three markers exist.
pub trait NestPaths: Copy + sealed::Sealed {
    /// Holds the point-wise paths: every loop the target's, or each summed loop of extent one.
    const POINT_WISE: bool;
    /// Holds the summing paths.
    const SUMMING: bool;
}

/// A step whose target takes every loop: only the point-wise paths.
#[derive(Clone, Copy, Debug)]
pub struct PointWise;

/// A step that sums over at least one loop: only the summing paths.
#[derive(Clone, Copy, Debug)]
pub struct Summing;

/// Every path: for steps whose loops are known only at run time.
#[derive(Clone, Copy, Debug)]
pub struct AnyNest;

mod sealed {
    /// Keeps [`super::NestPaths`] to the markers of this module: an implementation holding
    /// neither kind of path would be refused by nothing before the nest.
    pub trait Sealed {}
    impl Sealed for super::PointWise {}
    impl Sealed for super::Summing {}
    impl Sealed for super::AnyNest {}
}

impl NestPaths for PointWise {
    const POINT_WISE: bool = true;
    const SUMMING: bool = false;
}

impl NestPaths for Summing {
    const POINT_WISE: bool = false;
    const SUMMING: bool = true;
}

impl NestPaths for AnyNest {
    const POINT_WISE: bool = true;
    const SUMMING: bool = true;
}

/// Refuses, before anything is written, a step that takes paths an instance with `P` lacks
/// (generated code picks the marker from the step it writes, so this never fails there);
/// checked in unoptimized builds too, whose one instance has every path.
fn check_paths<P: NestPaths, const L: usize>(extents: &[usize; L], n_out: usize) {
    assert!(
        P::SUMMING
            || extents
                .get(n_out..)
                .unwrap_or(&[])
                .iter()
                .all(|&extent| extent == 1),
        "a point-wise loop nest was given a step that sums"
    );
    assert!(
        P::POINT_WISE || n_out < L,
        "a summing loop nest was given a step that sums nothing"
    );
}

/// [`evaluate`] for a step whose body is its one operand: `target[out] (=|+=|= β·target +)
/// α · operand`, a copy when point-wise. A point-wise copy that transposes (its operand runs
/// along one loop and the target along another) moves the elements through vector registers
/// (`transpose_tile`) where α is one and the mode assigns: bit for bit the operand's elements.
/// Such a copy into a target larger than the caches writes its contiguous runs (`stream_run`)
/// and its tiles' whole cache lines (`stream_tile`) around them.
/// The general path computes 1 · x, the same for every finite value; it would quiet a
/// signalling NaN, and give a complex number with an infinite part a NaN part.
#[inline]
pub fn copy<T: Element, const L: usize>(step: Step<'_, T, L, 1>) {
    let body = |[value]: [T; 1]| value;
    #[cfg(tdsl_unoptimized)]
    let body: &DynBody<'_, T, 1> = &body;
    // One instance per element type and few loop counts (no statement's closure in it, the
    // step padded: `in_few_loops`): every path.
    in_few_loops!(L, step, M => evaluate_nest::<T, M, 1, AnyNest>(step, body, true))
}

/// [`evaluate`] for a statement whose only step runs on the host, once the operands are
/// detached from the target and the step is proven (`step::with_detached`).
#[inline]
pub fn evaluate_detached<T: Element, const L: usize, const N: usize, P: NestPaths>(
    step: Unproven<'_, T, L, N>,
    body: impl Fn([T; N]) -> T + Sync,
    paths: P,
) {
    let _ = paths;
    // As in `evaluate`: unoptimized, one instance per element type, loop and operand count,
    // with every path.
    #[cfg(tdsl_unoptimized)]
    {
        check_paths::<P, L>(&step.extents, step.n_out);
        let body: &DynBody<'_, T, N> = &body;
        evaluate_detached_with::<T, L, N, _, AnyNest>(step, body);
    }
    #[cfg(not(tdsl_unoptimized))]
    evaluate_detached_with::<T, L, N, _, P>(step, body);
}

/// [`evaluate_detached`] for one type of body.
#[inline]
pub(super) fn evaluate_detached_with<T: Element, const L: usize, const N: usize, B, P>(
    step: Unproven<'_, T, L, N>,
    body: B,
) where
    B: Fn([T; N]) -> T + Sync,
    P: NestPaths,
{
    with_detached(step, |step| evaluate_nest::<T, L, N, P>(step, body, false));
}

/// [`copy`] for a statement whose only step runs on the host (see [`evaluate_detached`]).
#[inline]
pub fn copy_detached<T: Element, const L: usize>(step: Unproven<'_, T, L, 1>) {
    with_detached(step, copy);
}

/// A statement's body as a trait object: what unoptimized builds pass the engine.
#[cfg(tdsl_unoptimized)]
pub(super) type DynBody<'a, T, const N: usize> = dyn Fn([T; N]) -> T + Sync + 'a;

/// [`evaluate`] for one type of body; `copy`: the body is the identity of its one operand.
#[inline]
pub(super) fn evaluate_nest<T: Element, const L: usize, const N: usize, P: NestPaths>(
    step: Step<'_, T, L, N>,
    body: impl Fn([T; N]) -> T + Sync,
    copy: bool,
) {
    step.assert_on_host();
    check_paths::<P, L>(step.extents(), step.n_out());
    if step.extents()[..step.n_out()].contains(&0) {
        // No target element: nothing to write, however large the other loops.
        return;
    }
    // Copied out of the step, so the nest below works on values of its own.
    let operands = *step.operands();
    let target = step.target();
    let (target_data, target_base, target_strides) = (target.data, target.base, target.strides);
    let (mode, alpha, mut extents, n_out) =
        (step.mode(), step.alpha(), *step.extents(), step.n_out());
    if extents[n_out..].contains(&0) {
        // An empty summed loop empties the sum: no summed loop runs, so no walk over the
        // others' points, however many (fewer points than the step proved).
        extents[n_out..].fill(0);
    }
    let injective = step.injective();
    let operand_strides: [[isize; N]; L] =
        std::array::from_fn(|var| std::array::from_fn(|k| operands[k].strides[var]));
    // Summed loops of extent one sum nothing (a step renumbered for fewer loops than the
    // statement's has them): such a nest is point-wise, where this instance has those paths.
    let point_wise = P::POINT_WISE && extents[n_out..].iter().all(|&extent| extent == 1);
    let source_strides: [isize; L] =
        std::array::from_fn(|var| operand_strides[var].first().copied().unwrap_or(0));
    // Streamed only where the nest is point-wise and no two points write one element, so
    // each streamed element is written once.
    let stream = copy
        && N == 1
        && injective
        && matches!(mode, Mode::Assign)
        && alpha == T::ONE
        && operands.iter().all(|operand| !operand.part)
        && streams::<T>()
        && point_wise
        && (streamed_by_size::<T>(
            &extents[..n_out],
            &target_strides[..n_out],
            &source_strides[..n_out],
        ) || stream_always());
    // Saturating: a nest with an empty loop has no points, whatever the others' product.
    let points = extents
        .iter()
        .fold(1usize, |points, &e| points.saturating_mul(e));
    // Only a target whose points address distinct elements may be split between threads; the
    // pool is asked only for nests worth splitting (small ones run often).
    let worth_splitting = injective && points.saturating_mul(N + 1) >= PARALLEL_WORK;
    let threads = if worth_splitting {
        rayon::current_num_threads()
    } else {
        1
    };
    if let (true, true, true, Some(source)) = (
        copy && injective && point_wise,
        matches!(mode, Mode::Assign) && alpha == T::ONE,
        operands.iter().all(|operand| !operand.part),
        operands.first(),
    ) {
        // Runs of two to four elements shared by both sides, transposed as elements of their
        // own (`t[w, h, c] = s[h, w, c]`); then short step-by-one loops, differing between
        // the two sides, joined with the loops that continue them into tiles of whole lines;
        // then, streamed, shared runs under two lines gathered into the target's rows.
        let engines: [CopyEngine<T, L>; 3] = [copy_runs, copy_grouped, copy_joined];
        for engine in engines {
            // SAFETY: the step proved every element its extents and strides address in
            // bounds (the operand's for reads, the target's for writes), and its target
            // injective; a copy's operand is of the target's type, an element type (no
            // padding bytes).
            let copied = unsafe {
                engine(
                    (source.data.wrapping_offset(source.base), &source_strides),
                    (target_data.wrapping_offset(target_base), &target_strides),
                    &extents,
                    threads,
                    stream,
                )
            };
            if copied {
                return;
            }
        }
    }
    let order_strides =
        if stream && reads_in_operand_order(&extents[..n_out], &target_strides, &source_strides) {
            &source_strides
        } else {
            &target_strides
        };
    let mut order = loop_order(&extents, n_out, order_strides, &operand_strides);
    // A point-wise nest with summed loops runs as one with those loops first.
    let n_out = if point_wise {
        sort_loops(&mut order, &|var| extents[var] > 1);
        L
    } else {
        n_out
    };
    let tiled = if n_out == L {
        tile(&mut order, &operand_strides)
    } else {
        None
    };
    // Everything below addresses loops in the chosen order.
    let extents: [usize; L] = std::array::from_fn(|k| extents[order[k]]);
    let target_strides: [isize; L] = std::array::from_fn(|k| target_strides[order[k]]);
    let operand_strides: [[isize; N]; L] = std::array::from_fn(|k| operand_strides[order[k]]);
    // A point-wise nest's loops that continue one another in every access run as one loop:
    // longer runs, the same points in the same order (nothing is summed to reorder).
    // A summing nest's summed loops that continue one another in every operand likewise: each
    // point's sum adds the same values, in one longer run (blocks of `BLOCK` values, added
    // pairwise) instead of many short runs and a cascade of their sums. The grouping follows
    // the extents and strides alone, never the threads, so the bits do not depend on them.
    let extents = if n_out == L && tiled.is_none() {
        merged(extents, 0, &target_strides, &operand_strides)
    } else if n_out < L {
        merged(extents, n_out, &target_strides, &operand_strides)
    } else {
        extents
    };
    // Decided on the whole nest's rows, before threads split them: each thread's share of a
    // transpose goes in strips the same way the whole would.
    let off_lines = match (tiled, L.checked_sub(2)) {
        (Some(_), Some(outer)) if n_out == L => off_lines_rows::<T>(
            stream,
            [extents[outer], extents[outer + 1]],
            [target_strides[outer], target_strides[outer + 1]],
        ),
        _ => None,
    };
    let nest = Nest {
        data: std::array::from_fn(|k| Source {
            data: operands[k].data,
            part: operands[k].part,
        }),
        target: target_data,
        mode,
        alpha,
        body: &body,
        copy: copy && N == 1,
        stream,
        off_lines,
    };
    let start = Point {
        operands: std::array::from_fn(|k| operands[k].base),
        target: target_base,
    };
    let nest_ref = &nest;
    let run = |extents: [usize; L], start: Point<N>| {
        run_nest::<T, _, P, L, N>(
            &nest,
            tiled,
            n_out,
            &extents,
            &operand_strides,
            &target_strides,
            start,
        )
    };
    // Large nests split their outermost target loop across threads: every thread writes its
    // own target elements (`points`, `threads`: above; merging loops keeps their product).
    let split = (0..n_out).find(|&k| extents[k] > 1).map(|split| {
        // A transpose with no outer loop splits the longer of its two loops: each thread then
        // moves whole long runs of the side along which the other is contiguous, instead of
        // short pieces of every one of its runs (`t[j, i] = s[i, j]` over 20000 × 1000 `f32`,
        // two threads: 7.9–10 ms split along `j`, 3.1–4.5 along `i`; one thread 5.4).
        match (tiled, L.checked_sub(1)) {
            (Some(_), Some(inner)) if split + 1 == inner && extents[inner] > extents[split] => {
                inner
            }
            _ => split,
        }
    });
    let large = worth_splitting && threads > 1;
    if let (true, 0, Some(split)) = (worth_splitting, n_out, (0..L).find(|&k| extents[k] > 1)) {
        // A scalar result: one summed loop is cut into a fixed number of parts, whatever the
        // pool's size, each summed on whichever thread takes it, and the parts are added
        // pairwise in order (`Cascade`), so the sum has the same bits on any number of threads.
        let length = extents[split];
        let chunks = SUM_PARTS.min(length);
        let partials: Vec<T> = map_parts(chunks, &|chunk| {
            let (low, high) = (
                part_start(length, chunks, chunk),
                part_start(length, chunks, chunk + 1),
            );
            let mut part = extents;
            part[split] = high - low;
            let mut at = start;
            at.step(&operand_strides[split], 0, low as isize);
            let mut partial = T::ZERO;
            let local = Nest {
                target: &mut partial,
                mode: Mode::Assign,
                alpha: T::ONE,
                ..*nest_ref
            };
            at.target = 0;
            run_nest::<T, _, P, L, N>(
                &local,
                tiled,
                n_out,
                &part,
                &operand_strides,
                &target_strides,
                at,
            );
            partial
        });
        let mut sum = Cascade::new();
        partials.into_iter().for_each(|partial| sum.add(partial));
        nest.store(start.target, sum.total());
        return;
    }
    if let (true, Some(split)) = (large, split) {
        // Sums over an outer axis on two threads: each takes half of the rows, whole rows,
        // rather than half of each row (`strip_halves`). (With more threads the columns stay
        // cut among them all: measured only on two cores.)
        let strips = P::SUMMING && sums_in_strips(n_out, &extents, &operand_strides);
        let halves = (threads == 2 && split + 1 == n_out && strips)
            .then(|| strip_halves(n_out, &extents))
            .flatten();
        if let Some(halves) = halves {
            let shape = (n_out, &extents, &operand_strides, &target_strides);
            return sum_strips_in_halves(nest_ref, shape, start, halves);
        }
        let length = extents[split];
        // A strip reads each row once however narrow it is, and a transpose off the lines
        // streams its target a strip of rows at a time (`stream_off_lines`): as few parts as
        // threads keeps their rows long (3000² `f32` two threads: 2.5–3.5 ms in eight parts,
        // 1.8–2.6 in two).
        let long_parts = (split + 1 == n_out && strips) || nest.off_lines.is_some();
        let per_thread = if long_parts { 1 } else { 4 };
        let chunks = (threads * per_thread).min(length);
        for_each_part(chunks, &|chunk| {
            let (low, high) = (
                part_start(length, chunks, chunk),
                part_start(length, chunks, chunk + 1),
            );
            let mut part = extents;
            part[split] = high - low;
            let mut at = start;
            at.step(&operand_strides[split], target_strides[split], low as isize);
            run(part, at);
        });
    } else {
        run(extents, start);
    }
}

/// A copy engine tried before the loop nest (`copy_runs`, `copy_grouped`, `copy_joined`):
/// the source and the target with their strides, the extents, the threads it may use and
/// whether it streams; `false` where it declines, having touched nothing.
type CopyEngine<T, const L: usize> =
    unsafe fn((*const T, &[isize; L]), (*mut T, &[isize; L]), &[usize; L], usize, bool) -> bool;

/// Whether a streamed copy's loops (target loops with these extents) follow the operand's
/// strides instead of the target's: a streamed copy's stores go around the caches in
/// whatever order they come, so its reads may stream too, where the target and the operand
/// share their unit-stride loop, it is the operand's only one, and the operand walks every
/// loop (a loop it broadcasts along would sort innermost and be written a column at a time).
fn reads_in_operand_order(
    extents: &[usize],
    target_strides: &[isize],
    source_strides: &[isize],
) -> bool {
    let walked = |var: &usize| extents[*var] > 1;
    let mut units = (0..extents.len())
        .filter(walked)
        .filter(|&var| source_strides[var].unsigned_abs() == 1);
    let shared = matches!(
        (units.next(), units.next()),
        (Some(var), None) if source_strides[var] == 1 && target_strides[var] == 1
    );
    shared
        && (0..extents.len())
            .filter(walked)
            .all(|var| source_strides[var] != 0)
}

/// The extents of a point-wise nest (loops in execution order) with each loop that continues
/// the next inner one in every access (the target's and each operand's stride along it are
/// their stride along the inner loop times its extent) folded into that loop: the inner loop
/// takes the product of the two extents and the outer one an extent of 1. The points, and
/// the order they are visited in, are unchanged; runs get longer. Only loops `from..` merge
/// (a summing nest's summed loops, whose target strides are 0).
fn merged<const L: usize, const N: usize>(
    mut extents: [usize; L],
    from: usize,
    target_strides: &[isize; L],
    operand_strides: &[[isize; N]; L],
) -> [usize; L] {
    let Some(mut inner) = L.checked_sub(1) else {
        return extents;
    };
    for outer in (from..inner).rev() {
        if extents[outer] == 1 {
            // Walks nothing: no obstacle between the loops on either side.
            continue;
        }
        let reach = isize::try_from(extents[inner]).ok();
        let continues = |outer: isize, inner: isize| {
            reach.and_then(|reach| reach.checked_mul(inner)) == Some(outer)
        };
        let product = extents[inner].checked_mul(extents[outer]);
        if let (true, true, Some(product)) = (
            continues(target_strides[outer], target_strides[inner]),
            (0..N).all(|k| continues(operand_strides[outer][k], operand_strides[inner][k])),
            product,
        ) {
            extents[inner] = product;
            extents[outer] = 1;
        } else {
            inner = outer;
        }
    }
    extents
}

// Heuristic: a copy whose target has at least this many bytes writes its contiguous runs and
// its transposed tiles' whole lines with non-temporal stores (`Nest::stream`): more than a
// machine like ours caches (8 MiB of L3 for two cores), so the caches would only read each
// target line in before it is overwritten, a third of a copy's traffic. Measured on 256³ f32 with plain stores: 0.64×
// `copy_from_slice`, whose large copies stream.
const STREAM_BYTES: usize = 8 << 20;

/// Whether a copy into a target of these extents and strides (its loops'; the source's
/// `source`) streams by its size on this host ([`streams_in`] with
/// `memory::shared_cache_bytes`).
fn streamed_by_size<T>(extents: &[usize], strides: &[isize], source: &[isize]) -> bool {
    streams_in::<T>(extents, strides, source, shared_cache_bytes())
}

/// Whether a copy into a target of these extents and strides (the source's `source`) streams
/// by its size, next to a last-level cache of `cache` bytes (if known): from [`STREAM_BYTES`],
/// except where it transposes (the source steps otherwise than the target along some loop),
/// every running stride of the target is a power of two, one of them a page or more, and the
/// target takes less than half the cache. There the source and the target stay cached, and
/// plain stores measured
/// faster: streamed stores into rows a page apart contend for the same memory banks, which the
/// cache spares them. One thread, 32 MiB of L3: `c[k, j, i] = a[i, j, k]` over 128³ f32 (8 MiB)
/// streamed 26.5 GB/s, cached 34–36; `c[k, i, j]` 26.5 against 40–44; TCCG `abc-dca-bd`, whose
/// C is copied back over 128³ so, 179 → 211 GFLOP/s. Other targets stream faster: 140³ f32
/// 77–83 against 42–48; `c[k, j, i, l] = a[i, j, k, l]` over 96 × 40 × 96 × 8 f32 36 against 21;
/// all powers of two but half the cache, 16 MiB (TCCG `abcde-efbad-cf`'s C copied back), 55–57
/// against 43–46.
fn streams_in<T>(
    extents: &[usize],
    strides: &[isize],
    source: &[isize],
    cache: Option<usize>,
) -> bool {
    let bytes = target_bytes::<T>(extents);
    // A copy that only moves its runs (the same strides on both sides) has no tile rows.
    let transposes = (extents.iter().zip(strides).zip(source))
        .any(|((&extent, &target), &source)| extent > 1 && target != source);
    // The strides of the loops that run.
    let running = || {
        extents
            .iter()
            .zip(strides)
            .filter(|&(&extent, _)| extent > 1)
            .map(|(_, &stride)| stride.unsigned_abs())
    };
    let paged = running().all(usize::is_power_of_two)
        && running().any(|stride| stride.saturating_mul(size_of::<T>()) >= PAGE);
    let cached = transposes && paged && cache.is_some_and(|cache| bytes < cache / 2);
    bytes >= STREAM_BYTES && !cached
}

/// The bytes of a nest's target, whose loops have these extents.
fn target_bytes<T>(extents: &[usize]) -> usize {
    extents.iter().fold(size_of::<T>(), |bytes, &extent| {
        bytes.saturating_mul(extent)
    })
}

// Heuristic: below about this many element visits, handing work to other threads costs more
// than it saves.
pub(crate) const PARALLEL_WORK: usize = 1 << 18;

/// How many parts a large scalar sum is cut into (see `evaluate`): enough for every thread of
/// a machine like ours to take several, and fixed, so the parts do not depend on the pool.
const SUM_PARTS: usize = 64;

/// Where part `part` of `length` points cut into `parts` near-equal parts starts (`length`
/// for `part == parts`), without overflowing however long the loop.
fn part_start(length: usize, parts: usize, part: usize) -> usize {
    part * (length / parts) + part.min(length % parts)
}

/// Runs a loop nest (loops already in execution order) from `start`, compiled twice: for
/// the baseline x86-64 (two lanes of `f64` per instruction) and for AVX2 (four), the one the
/// CPU has chosen when it runs. Fused multiply-adds are enabled in neither, so both make the
/// same additions and products in the same order (a run's `LANES` partial sums are explicit):
/// the bits do not depend on the CPU's vectors.
#[allow(clippy::too_many_arguments)]
#[inline]
fn run_nest<T, F, P, const L: usize, const N: usize>(
    nest: &Nest<'_, T, F, N>,
    tiled: Option<usize>,
    n_out: usize,
    extents: &[usize; L],
    operand_strides: &[[isize; N]; L],
    target_strides: &[isize; L],
    start: Point<N>,
) where
    T: Element,
    F: Fn([T; N]) -> T,
    P: NestPaths,
{
    #[cfg(target_arch = "x86_64")]
    let avx2 = std::arch::is_x86_feature_detected!("avx2") && !baseline_only();
    #[cfg(not(target_arch = "x86_64"))]
    let avx2 = false;
    if avx2 {
        #[cfg(target_arch = "x86_64")]
        // SAFETY: the CPU has AVX2 (just detected), all a function compiled for it needs.
        unsafe {
            run_nest_avx2::<T, F, P, L, N>(
                nest,
                tiled,
                n_out,
                extents,
                operand_strides,
                target_strides,
                start,
            )
        };
    } else {
        nest_from::<T, F, P, L, N>(
            nest,
            tiled,
            n_out,
            extents,
            operand_strides,
            target_strides,
            start,
        );
    }
    if nest.stream {
        // The streamed runs' and tiles' stores (`Nest::write_run`, `Nest::move_tile`), before
        // the nest's part is done.
        fence();
    }
}

/// Whether this thread's loop nests must run the baseline compilation (a test comparing the
/// two sets it); never outside the tests.
#[cfg(not(test))]
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
fn baseline_only() -> bool {
    false
}

/// Whether this thread streams every copy it may, whatever its size (a test of the streamed
/// path on small tensors); never outside the tests.
#[cfg(not(test))]
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
fn stream_always() -> bool {
    false
}

#[cfg(test)]
use tests::{baseline_only, stream_always};

/// [`nest_from`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[allow(clippy::too_many_arguments)]
unsafe fn run_nest_avx2<T, F, P, const L: usize, const N: usize>(
    nest: &Nest<'_, T, F, N>,
    tiled: Option<usize>,
    n_out: usize,
    extents: &[usize; L],
    operand_strides: &[[isize; N]; L],
    target_strides: &[isize; L],
    start: Point<N>,
) where
    T: Element,
    F: Fn([T; N]) -> T,
    P: NestPaths,
{
    nest_from::<T, F, P, L, N>(
        nest,
        tiled,
        n_out,
        extents,
        operand_strides,
        target_strides,
        start,
    );
}

/// The loop nest itself (see [`run_nest`]), inlined into each of its compilations.
#[allow(clippy::too_many_arguments)]
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
fn nest_from<T, F, P, const L: usize, const N: usize>(
    nest: &Nest<'_, T, F, N>,
    tiled: Option<usize>,
    n_out: usize,
    extents: &[usize; L],
    operand_strides: &[[isize; N]; L],
    target_strides: &[isize; L],
    start: Point<N>,
) where
    T: Element,
    F: Fn([T; N]) -> T,
    P: NestPaths,
{
    let Some(inner) = L.checked_sub(1) else {
        // No loops at all: one point, nothing summed.
        let value = nest.sum_run(start, 1, &[0; N]);
        nest.store(start.target, value);
        return;
    };
    // The paths this instance lacks are constants `false` here, so they are not compiled.
    let point_wise = P::POINT_WISE && n_out == L;
    if let (true, Some(transposed)) = (point_wise, tiled) {
        let outer = inner - 1;
        // On a cache line, as a tensor's elements are: `stream_tile` starts its blocks on the
        // source's line boundaries, and a tile moved out of this buffer would otherwise
        // stream 12 of every 16 rows fewer (`f32`).
        let (rows, columns) = (extents[outer], extents[inner]);
        // The target's rows one run: whole rows gathered (`transpose::gathers`).
        let target_run = target_strides[outer] == columns as isize && target_strides[inner] == 1;
        let [tile_rows, tile_columns] =
            streamed_tile::<T>(nest.stream, [rows, columns], target_run);
        let off_lines = nest.off_lines;
        // The tiles' buffer, or the strips' staging: a line a row.
        let staging = off_lines.map_or(0, |rows| rows * LINE / size_of::<T>());
        let mut scratch = Scratch::<T>::with_lengths([(TILE * TILE).max(staging)]);
        let [buffer] = scratch.buffers();
        let tile_strides = [&operand_strides[outer], &operand_strides[inner]];
        let tile_target_strides = [target_strides[outer], target_strides[inner]];
        // The tiles at one point of the outer loops, in one block of columns: row blocks
        // innermost, so the next tile reads on down the same columns. With a brick (`(count,
        // operand strides, target stride)` of its third loop), each tile moved with the
        // brick's others (`Nest::write_brick`).
        macro_rules! row_blocks {
            (@write $corner:ident, $shape:ident) => {
                nest.write_tile(
                    buffer,
                    transposed,
                    $corner,
                    $shape,
                    tile_strides,
                    tile_target_strides,
                )
            };
            (@write $corner:ident, $shape:ident, $brick:expr) => {
                nest.write_brick(
                    buffer,
                    transposed,
                    $corner,
                    $shape,
                    tile_strides,
                    tile_target_strides,
                    $brick,
                )
            };
            ($point:expr, $column_block:expr, $next:expr $(, $brick:expr)?) => {
                for row_block in (0..rows).step_by(tile_rows) {
                    let mut corner = $point;
                    corner.step(tile_strides[0], tile_target_strides[0], row_block as isize);
                    corner.step(tile_strides[1], tile_target_strides[1], $column_block as isize);
                    let shape = [
                        rows.min(row_block + tile_rows) - row_block,
                        $next - $column_block,
                    ];
                    row_blocks!(@write corner, shape $(, $brick)?);
                }
            };
        }
        // A streamed copy's tiles start on the target's line boundaries after the first
        // (whose columns reach the first), so only the rows' ends (and the rows before the
        // source's first line boundary, `stream_tile`) are stored the cached way, not a line
        // at each tile's edge. Rows of one tile's width are not cut there (two narrow tiles
        // instead of one).
        let streams_lines = nest.stream
            && columns > tile_columns
            && lines_apart::<T>(target_strides[outer])
            && target_strides[inner] == 1;
        let lead_at = |point: &Point<N>| {
            if streams_lines {
                line_lead(nest.target.wrapping_offset(point.target)).min(columns)
            } else {
                0
            }
        };
        let next_block = |column_block: usize, lead: usize| {
            if column_block < lead {
                lead
            } else {
                columns.min(column_block + tile_columns)
            }
        };
        if let Some(strip) = off_lines {
            for point in Points::new(extents, 0..outer, operand_strides, target_strides, start) {
                for row_block in (0..rows).step_by(strip) {
                    let mut corner = point;
                    corner.step(
                        &operand_strides[outer],
                        target_strides[outer],
                        row_block as isize,
                    );
                    nest.write_off_lines(
                        buffer,
                        transposed,
                        corner,
                        [strip.min(rows - row_block), columns],
                        tile_strides,
                        tile_target_strides,
                    );
                }
            }
        } else if streams_lines
            && tile_columns * size_of::<T>() == LINE
            && (0..outer).all(|var| extents[var] <= 1 || lines_apart::<T>(target_strides[var]))
        {
            // Tiles one target line wide, and every outer loop's rows a whole number of lines
            // apart (so one lead for all). Where the innermost running outer loop (not of
            // extent one) has at least as many points as a brick or the rows have lines, its
            // points go [`BRICK`] at a time: each tile of the first point with those of the
            // next points (`Nest::write_brick`), the blocks of columns and of rows outside.
            let lead = lead_at(&start);
            let lines = columns / tile_columns;
            let mid = (0..outer).rev().find(|&var| extents[var] != 1);
            if let Some(mid) = mid.filter(|&mid| extents[mid] >= BRICK.min(lines)) {
                for point in Points::new(extents, 0..mid, operand_strides, target_strides, start) {
                    for first in (0..extents[mid]).step_by(BRICK) {
                        let count = BRICK.min(extents[mid] - first);
                        let mut brick = point;
                        brick.step(&operand_strides[mid], target_strides[mid], first as isize);
                        let mut column_block = 0;
                        while column_block < columns {
                            let next = next_block(column_block, lead);
                            let third = (count, &operand_strides[mid], target_strides[mid]);
                            row_blocks!(brick, column_block, next, third);
                            column_block = next;
                        }
                    }
                }
                return;
            }
            // No outer loop runs (a matrix's transpose), or too few of its points for a
            // brick (`c[k, j, i] = a[i, j, k]` with `j` three long: 0.42× → 0.78× a copy over
            // 512 × 3 × 4096 `f32`, the shapes above alike or slower this way): at each point
            // of the outer loops, the blocks of columns outermost, so each tile reads on along
            // the source's columns from where the one before stopped, and the whole lines'
            // tiles in bricks of `BRICK` side by side, each block of rows across all the
            // brick's tiles in turn: a block's target rows then take a run of lines each, not
            // one line each of every row of the tile (see [`BRICK`]).
            let line: [isize; N] =
                std::array::from_fn(|k| operand_strides[inner][k] * tile_columns as isize);
            let target_line = target_strides[inner] * tile_columns as isize;
            for point in Points::new(extents, 0..outer, operand_strides, target_strides, start) {
                let mut column_block = 0;
                while column_block < columns {
                    let next = next_block(column_block, lead);
                    let whole = if next - column_block == tile_columns {
                        BRICK.min((columns - column_block) / tile_columns)
                    } else {
                        0
                    };
                    if whole < 2 {
                        row_blocks!(point, column_block, next);
                        column_block = next;
                        continue;
                    }
                    let next = column_block + tile_columns;
                    row_blocks!(point, column_block, next, (whole, &line, target_line));
                    column_block += whole * tile_columns;
                }
            }
        } else if let Some(mid) = cached_brick_loop::<T, L, N>(
            nest,
            transposed,
            (outer, inner),
            extents,
            operand_strides,
            target_strides,
        ) {
            // Stored the cached way, with the tile's target rows a whole number of pages
            // apart: the tiles at one point of the loops outside `mid`, [`BRICK`] points of
            // `mid` at a time, block by block (`Nest::write_brick`), the blocks of columns and
            // of rows outside (see [`cached_brick_loop`]).
            for point in Points::new(extents, 0..mid, operand_strides, target_strides, start) {
                for first in (0..extents[mid]).step_by(BRICK) {
                    let count = BRICK.min(extents[mid] - first);
                    let mut brick = point;
                    brick.step(&operand_strides[mid], target_strides[mid], first as isize);
                    for column_block in (0..columns).step_by(tile_columns) {
                        let next = columns.min(column_block + tile_columns);
                        let third = (count, &operand_strides[mid], target_strides[mid]);
                        row_blocks!(brick, column_block, next, third);
                    }
                }
            }
        } else {
            for point in Points::new(extents, 0..outer, operand_strides, target_strides, start) {
                let lead = lead_at(&point);
                let mut column_block = 0;
                while column_block < columns {
                    let next = next_block(column_block, lead);
                    row_blocks!(point, column_block, next);
                    column_block = next;
                }
            }
        }
    } else if point_wise {
        // The loop outside the runs stepped here, not by `Points`: short runs (TCCG
        // `abcd-aebf-dfce`'s copies, 28 elements) would otherwise pay the odometer each.
        let (outer, rows) = match inner.checked_sub(1) {
            Some(outer) => (outer, extents[outer]),
            None => (0, 1),
        };
        let vars = 0..inner.saturating_sub(1);
        let (length, strides, target_stride) = (
            extents[inner],
            &operand_strides[inner],
            target_strides[inner],
        );
        let moved = nest.moves_runs(length, strides, target_stride);
        for point in Points::new(extents, vars, operand_strides, target_strides, start) {
            let mut at = point;
            for _ in 0..rows {
                match moved {
                    Some(source) => {
                        let from = source.data.wrapping_offset(at.operands[0]);
                        let to = nest.target.wrapping_offset(at.target);
                        // SAFETY: both runs lie inside the nest, which the step proved in
                        // bounds (the source's for reads, the target's for writes), both
                        // contiguous and aligned (elements of `T`). `ptr::copy` allows any
                        // overlap and moves what the element loop would: an operand sharing
                        // the target's memory reads each element at its own point (the step
                        // proved), so the two runs are the same elements or disjoint.
                        unsafe { std::ptr::copy(from, to, length) };
                    }
                    None => nest.write_run(at, length, strides, target_stride),
                }
                if inner > 0 {
                    at.step(&operand_strides[outer], target_strides[outer], 1);
                }
            }
        }
    } else if !P::SUMMING || n_out == L {
        // `evaluate_nest` refuses such a step before anything is written.
        unreachable!("a loop nest without the paths its step takes");
    } else if sums_in_strips(n_out, extents, operand_strides) {
        let kept = n_out - 1;
        let mut strip = Strip::new(STRIP.min(extents[kept]));
        for point in Points::new(extents, 0..kept, operand_strides, target_strides, start) {
            let length = extents[kept];
            let mut from = 0;
            while from < length {
                let mut at = point;
                at.step(&operand_strides[kept], target_strides[kept], from as isize);
                let width = STRIP.min(length - from);
                let sums = nest.sum_strip(&mut strip, at, width, n_out, extents, operand_strides);
                for (column, &sum) in sums.iter().enumerate() {
                    nest.store(at.target + column as isize * target_strides[kept], sum);
                }
                from += width;
            }
        }
    } else {
        let (length, strides) = (extents[inner], &operand_strides[inner]);
        // One run per point needs no cascade (small contractions call this per point).
        let one_run = (n_out..inner).all(|var| extents[var] == 1);
        for point in Points::new(extents, 0..n_out, operand_strides, target_strides, start) {
            let sum = if one_run {
                nest.sum_run(point, length, strides)
            } else {
                let mut sum = Cascade::new();
                for at in Points::new(
                    extents,
                    n_out..inner,
                    operand_strides,
                    target_strides,
                    point,
                ) {
                    sum.add(nest.sum_run(at, length, strides));
                }
                sum.total()
            };
            nest.store(point.target, sum);
        }
    }
}

/// Whether a summing nest adds whole strips of target points at once: the innermost target
/// loop (`n_out - 1`) runs along every operand contiguously or not at all (stride 0: a matrix
/// product's left factor along `j`) while the innermost summed loop does not run along every
/// operand contiguously (a sum over an outer axis, `s[j] = x[i, j]`; a product's right factor
/// down its rows, `b[k, j]`), so each summed point adds a contiguous row into the strip's sums
/// instead of each target point walking a column. Every
/// target point's sum is the same sequence of additions whatever strip it falls in, and the
/// choice depends only on the strides and the summed extents, neither on the target loop's
/// extent nor on how threads split it: the bits do not depend on the threads.
fn sums_in_strips<const L: usize, const N: usize>(
    n_out: usize,
    extents: &[usize; L],
    operand_strides: &[[isize; N]; L],
) -> bool {
    if n_out == 0 || n_out == L || N == 0 {
        return false;
    }
    let summed = extents[n_out..]
        .iter()
        .fold(1usize, |points, &e| points.saturating_mul(e));
    let along = &operand_strides[n_out - 1];
    along.iter().all(|&stride| stride == 0 || stride == 1)
        && along.contains(&1)
        && operand_strides[L - 1].iter().any(|&stride| stride != 1)
        && summed >= LANES
}

/// Where two threads may cut the rows a strip sums, keeping its bits: the summed loop (the only
/// one walked) and the rows before the cut, a power of two of blocks ([`STRIP_ROWS`]) that
/// leaves at least half as many rows after it (so neither thread has more than twice the
/// other's rows); `None` for other nests. Cut there, the two halves' cascades merge into the
/// one the whole builds ([`Strip::follow`]). In a harness (4096² `f32`), hand loops with two
/// threads on halves of the rows summed 24–26 GB/s where halves of each row, as threads cut
/// other nests, gave 16–18 and one thread 18; the runtime's strips went from 18–24 GB/s on two
/// threads (23–25 on one) to 32–35.
fn strip_halves<const L: usize>(n_out: usize, extents: &[usize; L]) -> Option<(usize, usize)> {
    let mut walked = (n_out..L).filter(|&var| extents[var] > 1);
    let (Some(summed), None) = (walked.next(), walked.next()) else {
        return None;
    };
    let rows = extents[summed];
    let blocks = rows.div_ceil(STRIP_ROWS);
    if blocks < 2 {
        return None;
    }
    let first = (1usize << (usize::BITS - 1 - (blocks - 1).leading_zeros())) * STRIP_ROWS;
    (2 * (rows - first) >= first).then_some((summed, first))
}

/// A summing nest's loops: the target loops' count, the extents, the operands' and the
/// target's strides.
type Shape<'a, const L: usize, const N: usize> =
    (usize, &'a [usize; L], &'a [[isize; N]; L], &'a [isize; L]);

/// The strips of a nest whose only walked target loop is the strip's (`sums_in_strips`), each
/// strip's rows cut at `(summed, rows)` ([`strip_halves`]) and its two halves summed on two of
/// the pool's threads: every point's sum the one bit for bit that the strip gives whole.
fn sum_strips_in_halves<T: Element, F: Fn([T; N]) -> T + Sync, const L: usize, const N: usize>(
    nest: &Nest<'_, T, F, N>,
    (n_out, extents, operand_strides, target_strides): Shape<'_, L, N>,
    start: Point<N>,
    (summed, rows): (usize, usize),
) {
    let kept = n_out - 1;
    let length = extents[kept];
    let mut first = *extents;
    first[summed] = rows;
    let mut second = *extents;
    second[summed] -= rows;
    let mut from = 0;
    while from < length {
        let mut at = start;
        at.step(&operand_strides[kept], target_strides[kept], from as isize);
        let width = STRIP.min(length - from);
        let mut halves = map_parts(2, &|half| {
            let mut strip = Strip::new(width);
            let (extents, start) = if half == 0 {
                (&first, at)
            } else {
                let mut later = at;
                later.step(&operand_strides[summed], 0, rows as isize);
                (&second, later)
            };
            fill_strip_here(
                nest,
                &mut strip,
                start,
                width,
                (n_out, extents, operand_strides),
            );
            strip
        });
        let mut sums = halves.pop().expect("two halves");
        sums.follow(&halves[0], width);
        for (column, &sum) in sums.total(width).iter().enumerate() {
            nest.store(at.target + column as isize * target_strides[kept], sum);
        }
        from += width;
    }
}

/// [`Nest::fill_strip`], compiled for AVX2 where the CPU has it, as [`run_nest`] runs nests.
fn fill_strip_here<T: Element, F: Fn([T; N]) -> T, const L: usize, const N: usize>(
    nest: &Nest<'_, T, F, N>,
    strip: &mut Strip<T>,
    start: Point<N>,
    width: usize,
    (n_out, extents, operand_strides): (usize, &[usize; L], &[[isize; N]; L]),
) {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") && !baseline_only() {
        // SAFETY: the CPU has AVX2 (just detected), all a function compiled for it needs.
        return unsafe {
            fill_strip_avx2(nest, strip, start, width, (n_out, extents, operand_strides))
        };
    }
    nest.fill_strip(strip, start, width, n_out, extents, operand_strides);
}

/// [`Nest::fill_strip`] compiled for AVX2.
///
/// # Safety
/// The CPU must have AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn fill_strip_avx2<T: Element, F: Fn([T; N]) -> T, const L: usize, const N: usize>(
    nest: &Nest<'_, T, F, N>,
    strip: &mut Strip<T>,
    start: Point<N>,
    width: usize,
    (n_out, extents, operand_strides): (usize, &[usize; L], &[[isize; N]; L]),
) {
    nest.fill_strip(strip, start, width, n_out, extents, operand_strides);
}

/// Target points a strip sums side by side (see [`sums_in_strips`]): rows of 16 or 32 KB,
/// read once each per strip, so a sum over an outer axis reads memory row by row. Narrower
/// strips (1024 points) kept the strip's sums in the first-level cache, but read a 4096-wide
/// f32 matrix as 4 KB pieces 16 KB apart: 0.6× ndarray's `sum_axis(Axis(0))`, against 0.8×
/// for whole rows.
const STRIP: usize = 4096;

/// Summed points a strip adds one after another before handing each target point's partial
/// sum to its cascade, as a summing run's lane does (`BLOCK / LANES`).
const STRIP_ROWS: usize = BLOCK / LANES;

/// The sums of one strip: the current block of rows, and a [`Cascade`] of the blocks' sums,
/// one per target point, its levels allocated as the sum grows (one per doubling).
struct Strip<T> {
    block: Vec<T>,
    levels: Vec<Vec<T>>,
    count: u64,
}

impl<T: Element> Strip<T> {
    fn new(width: usize) -> Self {
        Strip {
            block: vec![T::ZERO; width],
            levels: Vec::new(),
            count: 0,
        }
    }

    /// Starts a strip of `width` target points (at most the width it was made for).
    fn clear(&mut self, width: usize) {
        self.block[..width].fill(T::ZERO);
        self.count = 0;
    }

    /// Hands the block's sums to the cascade (as [`Cascade::add`], point by point) and starts
    /// a new block.
    fn flush(&mut self, width: usize) {
        let mut level = 0;
        while self.count >> level & 1 == 1 {
            for (carry, &other) in self.block[..width].iter_mut().zip(&self.levels[level]) {
                *carry = carry.plus(other);
            }
            level += 1;
        }
        if level == self.levels.len() {
            self.levels.push(vec![T::ZERO; self.block.len()]);
        }
        self.levels[level][..width].copy_from_slice(&self.block[..width]);
        self.block[..width].fill(T::ZERO);
        self.count += 1;
    }

    /// Makes this strip's cascade the one the blocks of `earlier` followed by this one's would
    /// have built: `earlier` holds a power of two of blocks, all summed into one level, and this
    /// strip at most as many, so the only step that met that level was this strip's last
    /// carry, if it holds as many blocks (the carry, then `earlier`'s level, as in `flush`).
    fn follow(&mut self, earlier: &Strip<T>, width: usize) {
        let level = earlier.count.trailing_zeros() as usize;
        assert!(
            earlier.count.is_power_of_two() && self.count <= earlier.count,
            "tensor-dsl bug: a strip follows one of a power of two of blocks, no fewer than its own"
        );
        let (target, carry) = if self.count == earlier.count {
            (level + 1, true)
        } else {
            (level, false)
        };
        while self.levels.len() <= target {
            self.levels.push(vec![T::ZERO; self.block.len()]);
        }
        for point in 0..width {
            let older = earlier.levels[level][point];
            self.levels[target][point] = if carry {
                self.levels[level][point].plus(older)
            } else {
                older
            };
        }
        self.count += earlier.count;
    }

    /// Each point's total (as [`Cascade::total`]), left in the block.
    fn total(&mut self, width: usize) -> &[T] {
        let levels = 64 - self.count.leading_zeros() as usize;
        self.block[..width].fill(T::ZERO);
        for level in (0..levels).filter(|&level| self.count >> level & 1 == 1) {
            for (total, &part) in self.block[..width].iter_mut().zip(&self.levels[level]) {
                *total = total.plus(part);
            }
        }
        &self.block[..width]
    }
}

/// Partial sums kept by a summing run, and the chunk length of a point-wise one: enough
/// independent lanes for the compiler to fill the widest vector registers.
pub const LANES: usize = 16;

/// Points a summing run adds in lanes before its blocks are added pairwise: long enough that
/// the pairwise step costs nothing measurable, short enough that each lane adds few values.
const BLOCK: usize = 32 * LANES;

/// The sum of `LANES` partial sums, added pairwise.
///
/// Out of line (it runs once per block): inlined, its tree of additions steers the vectorizer
/// to two-element vectors for the loop that fills the lanes.
#[inline(never)]
fn pairwise<T: Element>(mut lanes: [T; LANES]) -> T {
    let mut width = LANES;
    while width > 1 {
        width /= 2;
        for lane in 0..width {
            lanes[lane] = lanes[lane].plus(lanes[lane + width]);
        }
    }
    lanes[0]
}

/// Adds values pairwise as they arrive: level `k` holds the sum of `2^k` values while bit `k`
/// of `count` is set, like a binary counter. Sums of many runs (the outer loops of a reduction)
/// then keep the logarithmic error growth of each run's own pairwise sum.
struct Cascade<T> {
    levels: [T; 64],
    count: u64,
}

impl<T: Element> Cascade<T> {
    fn new() -> Self {
        Cascade {
            levels: [T::ZERO; 64],
            count: 0,
        }
    }

    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn add(&mut self, value: T) {
        let mut carry = value;
        let mut level = 0;
        while self.count >> level & 1 == 1 {
            carry = carry.plus(self.levels[level]);
            level += 1;
        }
        self.levels[level] = carry;
        self.count += 1;
    }

    fn total(&self) -> T {
        let levels = 64 - self.count.leading_zeros() as usize;
        (0..levels)
            .filter(|&level| self.count >> level & 1 == 1)
            .fold(T::ZERO, |total, level| total.plus(self.levels[level]))
    }
}

/// Levels of lane vectors a [`LaneCascade`] keeps before it reduces them to one value: runs of
/// up to 2^LANE_LEVELS blocks (32768 points) reduce their lanes once; few levels, as each run
/// past a block starts by zeroing them.
const LANE_LEVELS: usize = 6;

/// A [`Cascade`] whose first levels hold [`LANES`] partial sums each: blocks' lanes are added
/// pairwise lane by lane, and only a full top level's lanes (or, at the end, the levels'
/// lanes added from the lowest) are added pairwise to one value, which goes to a [`Cascade`]
/// of values. Each lane's sum and each value's keep the logarithmic error growth; the
/// grouping follows the run's length alone.
struct LaneCascade<T> {
    levels: [[T; LANES]; LANE_LEVELS],
    count: usize,
    values: Cascade<T>,
}

impl<T: Element> LaneCascade<T> {
    fn new() -> Self {
        LaneCascade {
            levels: [[T::ZERO; LANES]; LANE_LEVELS],
            count: 0,
            values: Cascade::new(),
        }
    }

    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn add_lanes(&mut self, lanes: [T; LANES]) {
        let mut carry = lanes;
        let mut level = 0;
        while self.count >> level & 1 == 1 {
            for (sum, &held) in carry.iter_mut().zip(&self.levels[level]) {
                *sum = sum.plus(held);
            }
            level += 1;
        }
        if level == LANE_LEVELS {
            self.values.add(pairwise(carry));
            self.count = 0;
        } else {
            self.levels[level] = carry;
            self.count += 1;
        }
    }

    /// A value summed apart (a block read element by element, a block's last points).
    fn add(&mut self, value: T) {
        self.values.add(value);
    }

    fn total(mut self) -> T {
        if self.count > 0 {
            let mut lanes = [T::ZERO; LANES];
            for level in (0..LANE_LEVELS).filter(|&level| self.count >> level & 1 == 1) {
                for (sum, &held) in lanes.iter_mut().zip(&self.levels[level]) {
                    *sum = sum.plus(held);
                }
            }
            self.values.add(pairwise(lanes));
        }
        self.values.total()
    }
}

// Heuristic: how many rows ahead a tile read through its buffer asks for the target's runs:
// four measured best against two and six (in a harness, `c[k, l, j] = 2 · b[k, j, l]` over
// 256³ f32 0.43–0.45× → 0.66–0.67× a copy of the same bytes, 8 × 512 × 512 0.50–0.51× →
// 0.59–0.62×, f64 128³ 0.59–0.63× → 0.69×).
const ROWS_AHEAD: usize = 4;

// Heuristic: the side of the tiles a transposing point-wise nest runs in (see
// `Nest::write_tile`); 64 measured faster than 32 and 16 (longer runs down the transposed
// operand), the tile's buffer staying in the second-level cache.
const TILE: usize = 64;

/// The rows and columns of the tiles a transposing point-wise nest runs in, for rows of
/// `columns` elements of the target: `TILE × TILE`, but for a streamed copy (`stream`) whose
/// rows are longer than two lines, where the kernels move whole lines (`streams_by_lines`), one
/// target line wide and `TILE · TILE / line` long: each tile then reads one line's worth of
/// the source's columns down long runs, which the core follows, instead of up to `TILE`
/// columns down short ones. In a harness (one thread, `copy_from_slice` in the same run, the
/// two shapes in turns): `c[k, j, i] = a[i, j, k]` over 256³ f32 0.56× → 0.59×, f64 0.59× →
/// 0.71×; two threads 0.97× → 1.04× and 0.96× → 1.22× the one-thread copy. Rows longer than two
/// lines but not than a tile, later, with tensors on cache lines: `c[z, x, w, y] = a[x, y, z,
/// w]` over 48⁴, one thread, f32 18–33 → 32–42 GB/s, f64 27–30 → 36–39 GB/s. Shorter rows keep
/// whole-row tiles, which a target off the lines streams as one run (`Nest::write_tile`).
/// Rows or columns of at most `narrow_side` elements (an image's three channels split off or
/// gathered in) take tiles that many wide and at most `TILE · TILE` elements (whole lines
/// along the long side), which
/// `transpose_tile` moves as one run split among its rows or gathered from its columns: a
/// tile of a line's width would be 32 elements (`t[i, k, j] = s[i, j, k]` over 4096 × 2048 × 2
/// `f32`, one thread: 1.4 → 25 GB/s, 0.06× → 1.02× `copy_from_slice` in the same run). So do
/// a streamed copy's rows of a few dozen elements off the lines, its target one run of them
/// (`target_run`), which `transpose::gathers` takes: each tile is gathered whole into the
/// buffer and streamed as one run (`Nest::write_tile`), rather than as strips of rows off the
/// lines (`t[j, i] = s[i, j]` over 40 × 500,000 `f32`, one thread: 0.33× → 0.78× a copy).
fn streamed_tile<T>(stream: bool, [rows, columns]: [usize; 2], target_run: bool) -> [usize; 2] {
    let line = LINE / size_of::<T>();
    let narrow = narrow_side::<T>();
    // The long side in whole lines, so each tile's target starts where the one before's left
    // off on a line (where the first did).
    let long = |short: usize| TILE * TILE / short.max(1) / line * line;
    if rows <= narrow {
        [rows, long(rows)]
    } else if columns <= narrow || stream && target_run && gathers::<T>(columns) {
        [long(columns), columns]
    } else if stream && columns > 2 * line && streams_by_lines::<T>() {
        [TILE * TILE / line, line]
    } else {
        [TILE, TILE]
    }
}

/// The rows of a streamed copy's strips where its target rows are not a whole number of
/// cache lines apart, or `None` where [`streamed_tile`]'s tiles serve. `stream_tile` streams
/// no line of such rows (each row's lines start at another column), so their tiles were
/// stored the cached way, each target line read in before it is overwritten (`t[j, i] = s[i,
/// j]` over 3000² `f32`, one thread: 0.26–0.43× a copy, against 1.0× at 3072²). A strip of
/// these rows, each whole, goes to `stream_off_lines` instead, which streams every whole
/// line of every row inside its blocks: [`OFF_LINES_ROWS`] rows at most, its staging (the tile buffer) a line
/// each.
fn off_lines_rows<T>(
    stream: bool,
    [rows, columns]: [usize; 2],
    target_strides: [isize; 2],
) -> Option<usize> {
    let line = LINE / size_of::<T>();
    let takes = stream
        && streams_off_lines::<T>()
        && target_strides[1] == 1
        && !lines_apart::<T>(target_strides[0])
        && (rows >= OFF_LINES_FROM || rows >= line && columns >= OFF_LINES_LONG)
        && columns > 2 * line
        && !(target_strides[0] == columns as isize && gathers::<T>(columns));
    takes.then_some(OFF_LINES_ROWS)
}

/// The fewest rows [`off_lines_rows`] takes whatever their length (more than two lines):
/// whole transposes of thousands of rows (above).
const OFF_LINES_FROM: usize = 1024;

/// The shortest rows [`off_lines_rows`] takes from a line's worth of them up. Strips of a few
/// rows (a strip per point of the outer loops, or a matrix of few long rows) measured slower
/// than the cached tiles while the kernel asked for nothing ahead (`t[k, i, j] = s[i, j, k]`
/// over 201 × 211 × 223 `f32`, one thread: 5.7–6.1 → 8.4–9.1 ms); asking for its source a
/// few kilobytes ahead (`transpose::stream_off_lines`), they measured faster: in a harness,
/// one thread, against `copy_from_slice` in the same run, the builds in turns, `f32` (`f64`)
/// `t[k, i, j] = s[i, j, k]` over 201 × 211 × 224 0.46× → 0.79–0.89× (0.57× → 0.98–1.06×),
/// 201 × 211 × 223 0.46× → 0.64–0.76× (0.55× → 0.98–1.01×), 50 × 1001 × 201 0.46× → 0.98–1.05×
/// (0.56× → 1.23–1.31×); `t[j, i] = s[i, j]` over 42,411 × 223 0.47× → 1.18–1.25× (0.60× →
/// 1.29×), 1,000,003 × 20 0.27× → 1.22–1.29× (0.30× → 1.15×), 300,007 × 100 0.55× →
/// 1.17× (0.58× → 1.08–1.11×), 100 × 100,000 0.72–0.79× → 0.82–0.87×. Rows of 48 or 64
/// elements measured a little slower than 128 (201 × 211 × 223 `f32` 0.63–0.65× against
/// 0.70–0.76×); others within the noise (rows of 50–79 `f64` 0.62–0.69× → 0.62–0.64×).
const OFF_LINES_LONG: usize = 128;

/// The rows of [`off_lines_rows`]' strips: each block of columns reads runs this long down
/// the source (8 KB of `f32`s), and the staging (a line a row, 128 KB) stays in the
/// second-level cache. Against 256, 1024 and 4096 (3000², 3001 × 2999, 9000 × 3000 and
/// 20000 × 1000 `f32`, one thread, one process): 256 0.75–0.84× a copy, 1024 0.99–1.01×,
/// 4096 1.00–1.18× on the short and 0.88× on the tall ones, 2048 1.01–1.05× on all.
const OFF_LINES_ROWS: usize = 2048;

/// How many points of a transposing copy's innermost running outer loop each of its tiles
/// (a line of each target row) is moved for before the next tile (see `nest_from`): the
/// tile at one point of `j` in `c[k, j, i] = a[i, j, k]` writes a line of each of its 256
/// rows, each row in another page; the same tile at the next 31 points of `j` writes the next
/// line of those pages (`j`'s stride, a row's length, apart) and reads the source lines next
/// to the ones before, so memory sees runs of a page's lines, not lines scattered over as
/// many pages as the tile has rows. In a harness (one thread, `copy_from_slice` of the same
/// bytes in the same process, the two orders in turns), `c[k, j, i] = a[i, j, k]`: over 240³
/// `f32` 0.50–0.58× → 0.97–1.02× a copy, f64 0.58–0.63× → 0.96–1.06×, 272³ likewise; over
/// 256³ (rows a power of two apart) f32 0.45–0.49× → 0.60–0.66×, f64 0.47–0.54× → 0.60–0.80×;
/// over 128 × 2048 × 128 0.47× → 0.75×; `c[l, k, j, i] = a[i, j, k, l]` over 64⁴ 0.36–0.39× →
/// 0.48–0.52×; two threads 0.77–1.03× → 0.91–1.27× on these. 16, 32, 64 and 128 points
/// measured alike within the noise (16 a little slower); 32 kept. A matrix's transpose has
/// no loop outside its tiles, and that loop may be shorter than a brick: then the tiles side
/// by side along the target's rows go in bricks of as many instead (each row of a block
/// then takes 32 lines in a row): `c[j, i] = a[i, j]` over 224 × 50176 `f32` 0.57× → 1.07×
/// (f64 0.66× → 1.02×), 3072 × 2048 0.45× → 0.74×, 4096² 0.49× → 0.71× (f64 0.50× →
/// 0.72×); 8 and 16 tiles measured slower on the long rows, 64 alike; on two threads within
/// the noise (±10 %: 4096² f64 0.88–1.11× both ways).
const BRICK: usize = 32;

/// The loop whose points a transposing copy stored the cached way moves its tiles in bricks
/// of (`Nest::write_brick`, with `transpose::brick`), or `None` where it moves them one by
/// one: the innermost outer loop that runs (the loops between it and the tile's run one
/// point), where the tile's target rows (`outer`) lie a whole number of pages apart and
/// `mid` steps the transposed operand at most [`BRICK_STEP_BYTES`]. Rows a page apart fall
/// in one cache set: a tile of 64 writes a line into each of 64 rows of one set, which evict
/// each other before the tile's next block writes their next lines; in a brick each block
/// writes its rows' lines at the next points of `mid` (a row's length on, other sets) before
/// the next block. In a harness (one thread, `f32` unless said, the two orders in one binary,
/// four rounds in turns), `c[k, j, i] = a[i, j, k]`: over 96³ 38–43 → 62–98 GB/s (f64 36–42
/// → 50–91), 64³ 45–58 → 57–84 (f64 47–59 → 77–86), 64 × 64 × 100 49–57 → 66–68, 160 × 32 ×
/// 96 f64 50–51 → 89–107, 48 × 160 × 7 f64 59–65 → 76–83; of 400 random permutations of
/// three axes between 64 KiB and 8 MiB, the four it takes 1.2–2.1× as fast, the others
/// unchanged.
fn cached_brick_loop<T: Element, const L: usize, const N: usize>(
    nest: &Nest<'_, T, impl Fn([T; N]) -> T, N>,
    transposed: usize,
    (outer, inner): (usize, usize),
    extents: &[usize; L],
    operand_strides: &[[isize; N]; L],
    target_strides: &[isize; L],
) -> Option<usize> {
    let bytes = |stride: isize| stride.unsigned_abs().saturating_mul(size_of::<T>());
    let rows_paged = bytes(target_strides[outer]).is_multiple_of(PAGE);
    let mid = (0..outer).rev().find(|&var| extents[var] != 1)?;
    let takes = !nest.stream
        && nest.copies_exactly(nest.data[transposed])
        && rows_paged
        && extents[inner] > 1
        && extents[mid] > 1
        && bytes(operand_strides[mid][transposed]) <= BRICK_STEP_BYTES
        && bricks::<T>();
    takes.then_some(mid)
}

// Heuristic: the longest step of the transposed operand between a cached brick's tiles (see
// `cached_brick_loop`); a brick whose tiles lie far apart in it reads its blocks' source lines
// from as many pages (`c[k, i, j] = a[i, j, k]` over 16 × 128 × 112 with `i` as the brick's
// loop, 56 KiB a step: 74–79 → 45–51 GB/s).
const BRICK_STEP_BYTES: usize = 1 << 10;

/// Loop order: the target's loops first, largest target stride outermost; then the summed
/// loops, largest operand strides outermost. Innermost loops then walk memory contiguously.
#[inline]
fn loop_order<const L: usize, const N: usize>(
    extents: &[usize; L],
    n_out: usize,
    target_strides: &[isize; L],
    operand_strides: &[[isize; N]; L],
) -> [usize; L] {
    let weight =
        |var: usize| -> usize { operand_strides[var].iter().map(|s| s.unsigned_abs()).sum() };
    use std::cmp::Reverse;
    let mut order: [usize; L] = std::array::from_fn(|var| var);
    // Loops of extent one cost nothing wherever they go; they stay outermost.
    sort_loops(&mut order[..n_out], &|var| {
        let stride = target_strides[var].unsigned_abs();
        (extents[var] > 1, Reverse(stride), Reverse(weight(var)))
    });
    sort_loops(&mut order[n_out..], &|var| {
        (extents[var] > 1, Reverse(weight(var)))
    });
    order
}

/// For a point-wise nest whose innermost loop reads some operand across its rows (a
/// transpose), moves the loop along which that operand is contiguous next to the innermost
/// one and returns that operand: the two loops are then run in tiles, the operand's tile read
/// through a buffer (or, for a copy, moved by `transpose_tile`). The loops outside the tile
/// then follow that operand's strides.
#[inline]
fn tile<const L: usize, const N: usize>(
    order: &mut [usize; L],
    strides: &[[isize; N]; L],
) -> Option<usize> {
    if L < 2 {
        return None;
    }
    let inner = order[L - 1];
    let worst = (0..N).max_by_key(|&k| strides[inner][k].unsigned_abs())?;
    if strides[inner][worst].unsigned_abs() <= 1 {
        return None;
    }
    let best = (0..L - 1)
        .filter(|&position| strides[order[position]][worst] != 0)
        .min_by_key(|&position| strides[order[position]][worst].unsigned_abs());
    match best {
        Some(position) if strides[order[position]][worst].unsigned_abs() == 1 => {
            order[position..L - 1].rotate_left(1);
            // Each tile reads that operand as one short run per column: loops outside the
            // tile ordered by its strides make one tile's runs continue the last one's, so
            // they stream (the target's tiles are whole blocks wherever they go).
            sort_loops(&mut order[..L - 2], &|var| {
                std::cmp::Reverse(strides[var][worst].unsigned_abs())
            });
            Some(worst)
        }
        _ => None,
    }
}

/// Where an operand's elements are read from: `T`s, or `T::Part`s each read as a `T` (a real
/// tensor in a complex statement, converted as it is loaded); offsets count what the buffer
/// holds.
#[derive(Clone, Copy)]
struct Source<T> {
    data: *const T,
    part: bool,
}

impl<T: Element> Source<T> {
    /// The source `count` elements on.
    ///
    /// # Safety
    /// As [`pointer::offset`], counting what the buffer holds.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    unsafe fn offset(self, count: isize) -> Self {
        // SAFETY: forwarded from the caller.
        let data = unsafe { stored_offset(self.data, self.part, count) };
        Source { data, ..self }
    }

    /// The element here, as a `T`.
    ///
    /// # Safety
    /// The element (a `T`, or a `T::Part` if `part`) must be valid for reads.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    unsafe fn read(self) -> T {
        // SAFETY: forwarded from the caller.
        unsafe { stored_read(self.data, self.part) }
    }
}

/// The parts of an `evaluate` call its inner runs need.
struct Nest<'b, T, F, const N: usize> {
    data: [Source<T>; N],
    target: *mut T,
    mode: Mode<T>,
    alpha: T,
    body: &'b F,
    /// `body` returns its one operand's element unchanged.
    copy: bool,
    /// A copy to an injective target larger than the caches: its contiguous runs and its
    /// tiles' whole lines go around them (`stream_run`, `stream_tile`), fenced at the end of
    /// `run_nest`.
    stream: bool,
    /// The rows of the strips a streamed transpose goes in where its target rows are off the
    /// cache lines ([`off_lines_rows`], decided on the whole nest), else `None`.
    off_lines: Option<usize>,
}

// SAFETY: threads share a `Nest` only to run disjoint parts of one loop nest: split along a
// target loop, so no element is written by two threads or read by one while another writes
// it (each part fences its streamed stores before it returns, see `run_nest`), or, for a
// scalar sum, split along a summed loop with each part writing only a local of
// its own (a copy of the `Nest` with its own target) and the shared target written once, on
// the calling thread, after all parts have returned, or, for sums in strips cut into halves
// of their rows (`sum_strips_in_halves`), each half writing only a `Strip` of its own and the
// target written on the calling thread after both have returned; the operands are only read.
unsafe impl<T: Sync, F: Sync, const N: usize> Sync for Nest<'_, T, F, N> {}

impl<T: Element, F: Fn([T; N]) -> T, const N: usize> Nest<'_, T, F, N> {
    /// Writes `α · value` into the target at `offset` according to the mode.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn store(&self, offset: isize, value: T) {
        // SAFETY: callers pass offsets of target elements proven in bounds by the step.
        unsafe { combine(self.mode, self.alpha, self.target.offset(offset), value) }
    }

    /// Σ over `length` points along one loop of the operands' elements mapped by `body`.
    ///
    /// Blocks of [`BLOCK`] points are summed in [`LANES`] partial sums; the blocks' lanes are
    /// added pairwise lane by lane, and the lanes pairwise (a [`LaneCascade`]), so the rounding
    /// error grows with the logarithm of the length, not with the length (numpy's pairwise
    /// summation), and the lanes are reduced to one value once per run (or per
    /// 2^[`LANE_LEVELS`] blocks), not once per block. A run whose operands are read
    /// element by element (strided) sums each block in order and its blocks pairwise.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn sum_run(&self, start: Point<N>, length: usize, strides: &[isize; N]) -> T {
        if length <= BLOCK {
            return self.sum_block(start, 0..length, strides);
        }
        // A loop over blocks, not a recursion: the lanes stay in vector registers.
        let mut sum = LaneCascade::new();
        let mut from = 0;
        while from < length {
            let to = length.min(from + BLOCK);
            match self.block_lanes(start, from..to, strides) {
                Some((lanes, end)) => {
                    sum.add_lanes(lanes);
                    if end < to {
                        // The last block's points after its whole chunks.
                        sum.add(self.sum_in_order(start, end..to, strides, T::ZERO));
                    }
                }
                // Read element by element (no lanes for these strides): in order.
                None => sum.add(self.sum_in_order(start, from..to, strides, T::ZERO)),
            }
            from = to;
        }
        sum.total()
    }

    /// The sum of a block of at most [`BLOCK`] points: its lanes pairwise, then the points
    /// after its whole chunks in order.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn sum_block(&self, start: Point<N>, range: Range<usize>, strides: &[isize; N]) -> T {
        let end = range.end;
        match self.block_lanes(start, range.clone(), strides) {
            Some((lanes, from)) => self.sum_in_order(start, from..end, strides, pairwise(lanes)),
            None => self.sum_in_order(start, range, strides, T::ZERO),
        }
    }

    /// `sum` plus the points of `range`, one after another.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn sum_in_order(
        &self,
        start: Point<N>,
        range: Range<usize>,
        strides: &[isize; N],
        mut sum: T,
    ) -> T {
        for k in range {
            // SAFETY: the step's proof covers every element of the loop nest, and a run stays
            // inside it.
            let values = std::array::from_fn(|o| unsafe {
                self.data[o]
                    .offset(start.operands[o] + k as isize * strides[o])
                    .read()
            });
            sum = sum.plus((self.body)(values));
        }
        sum
    }

    /// The [`LANES`] partial sums of a block's whole chunks of points (lane `l` adding points
    /// `l`, `l + LANES`, … from the block's start in order) and where those chunks end, where
    /// the block holds a chunk and every operand's stride is 1 or 0; `None` otherwise.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn block_lanes(
        &self,
        start: Point<N>,
        range: Range<usize>,
        strides: &[isize; N],
    ) -> Option<([T; LANES], usize)> {
        // SAFETY (whole function): the step's proof covers every element of the loop nest, and
        // a run stays inside it.
        let mut k = range.start;
        if range.len() < LANES {
            return None;
        }
        let mut lanes = [T::ZERO; LANES];
        if strides.iter().all(|&s| s == 1) {
            // Every operand contiguous: the chunks below with fixed starts, a loop the compiler
            // keeps in vector registers (it spills the lanes when each chunk's starts are
            // chosen anew). The same lanes add the same values in the same order.
            let sources: [Source<T>; N] =
                std::array::from_fn(|o| unsafe { self.data[o].offset(start.operands[o]) });
            while k + LANES <= range.end {
                for (lane, partial) in lanes.iter_mut().enumerate() {
                    let values = std::array::from_fn(|o| unsafe {
                        sources[o].offset((k + lane) as isize).read()
                    });
                    *partial = partial.plus((self.body)(values));
                }
                k += LANES;
            }
        } else {
            let broadcast = self.broadcast(start, strides)?;
            while k + LANES <= range.end {
                let source = self.chunk(start, strides, &broadcast, k);
                for (lane, partial) in lanes.iter_mut().enumerate() {
                    let values =
                        std::array::from_fn(|o| unsafe { source[o].offset(lane as isize).read() });
                    *partial = partial.plus((self.body)(values));
                }
                k += LANES;
            }
        }
        Some((lanes, k))
    }

    /// The sums over loops `n_out..L` of `width` (at most the strip's) target points along
    /// loop `n_out - 1`, from `start`, along which every operand has stride 1 or 0: each point's
    /// values are added in order in blocks of [`STRIP_ROWS`], and the blocks' sums pairwise,
    /// the error bound of a summing run.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn sum_strip<'s, const L: usize>(
        &self,
        strip: &'s mut Strip<T>,
        start: Point<N>,
        width: usize,
        n_out: usize,
        extents: &[usize; L],
        operand_strides: &[[isize; N]; L],
    ) -> &'s [T] {
        self.fill_strip(strip, start, width, n_out, extents, operand_strides);
        strip.total(width)
    }

    /// The blocks of [`Nest::sum_strip`] in `strip`'s cascade, not yet totalled.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn fill_strip<const L: usize>(
        &self,
        strip: &mut Strip<T>,
        start: Point<N>,
        width: usize,
        n_out: usize,
        extents: &[usize; L],
        operand_strides: &[[isize; N]; L],
    ) {
        strip.clear(width);
        let along = &operand_strides[n_out - 1];
        let mut rows = 0;
        let no_target = [0; L];
        for at in Points::new(extents, n_out..L, operand_strides, &no_target, start) {
            // SAFETY (whole loop body): the step's proof covers every element of the nest,
            // and the strip's `width` points along loop `n_out - 1` (stride 0 or 1 in
            // every operand) lie in it; a chunk read from `repeated` stays inside its
            // `LANES` elements, and one read from an operand's `data` (no operand holds
            // parts there, so its offsets count `T`s) covers points `done..done + LANES`,
            // at most `width`.
            let sources: [Source<T>; N] =
                std::array::from_fn(|o| unsafe { self.data[o].offset(at.operands[o]) });
            let sums = &mut strip.block[..width];
            if along.iter().all(|&stride| stride == 1) {
                for (column, sum) in sums.iter_mut().enumerate() {
                    let values = std::array::from_fn(|o| unsafe {
                        sources[o].offset(column as isize).read()
                    });
                    *sum = sum.plus((self.body)(values));
                }
            } else {
                let mut done = 0;
                if !sources.iter().any(|source| source.part) {
                    // An operand the strip's loop does not move (a matrix product's left
                    // factor, `a[i, k]` along `j`) reads its one element from a chunk of
                    // it repeated, so every operand of a chunk reads contiguously.
                    let repeated: [[T; LANES]; N] = std::array::from_fn(|o| {
                        if along[o] == 0 {
                            [unsafe { sources[o].read() }; LANES]
                        } else {
                            [T::ZERO; LANES]
                        }
                    });
                    while done + LANES <= width {
                        let from: [*const T; N] = std::array::from_fn(|o| {
                            if along[o] == 0 {
                                repeated[o].as_ptr()
                            } else {
                                unsafe { sources[o].offset(done as isize).data }
                            }
                        });
                        // Read into locals first: the compiler then knows no store to
                        // the sums changes them, and keeps the chunk in vector registers.
                        let inputs: [[T; LANES]; N] = std::array::from_fn(|o| {
                            std::array::from_fn(|lane| unsafe { from[o].add(lane).read() })
                        });
                        let block = &mut sums[done..done + LANES];
                        for (lane, sum) in block.iter_mut().enumerate() {
                            let values = std::array::from_fn(|o| inputs[o][lane]);
                            *sum = sum.plus((self.body)(values));
                        }
                        done += LANES;
                    }
                }
                for (column, sum) in sums.iter_mut().enumerate().skip(done) {
                    let values = std::array::from_fn(|o| unsafe {
                        sources[o].offset(column as isize * along[o]).read()
                    });
                    *sum = sum.plus((self.body)(values));
                }
            }
            rows += 1;
            if rows == STRIP_ROWS {
                strip.flush(width);
                rows = 0;
            }
        }
        if rows > 0 {
            strip.flush(width);
        }
    }

    /// For a run whose operands all have stride 0 or 1, a chunk of each stride-0 operand's one
    /// element repeated, so every operand of a chunk reads contiguously; `None` otherwise.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn broadcast(&self, start: Point<N>, strides: &[isize; N]) -> Option<[[T; LANES]; N]> {
        strides.iter().all(|&s| s == 0 || s == 1).then(|| {
            std::array::from_fn(|o| {
                if strides[o] == 0 {
                    // SAFETY: the run's first element is in bounds (the step's proof).
                    [unsafe { self.data[o].offset(start.operands[o]).read() }; LANES]
                } else {
                    [T::ZERO; LANES]
                }
            })
        })
    }

    /// Where each operand's `LANES` elements from point `k` of a run start.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn chunk(
        &self,
        start: Point<N>,
        strides: &[isize; N],
        broadcast: &[[T; LANES]; N],
        k: usize,
    ) -> [Source<T>; N] {
        std::array::from_fn(|o| {
            if strides[o] == 1 {
                // SAFETY: the chunk lies inside the run, which the step proved in bounds.
                unsafe { self.data[o].offset(start.operands[o] + k as isize) }
            } else {
                Source {
                    data: broadcast[o].as_ptr(),
                    part: false,
                }
            }
        })
    }

    /// The source whose runs of `length` elements (along the loop with these strides) a
    /// cached copy moves as they lie, by `ptr::copy`: runs of a line or more, which it moves
    /// in the widest vectors, where `write_run`'s loop takes runs shorter than four of its
    /// vectors element group by group (TCCG `abcd-aebf-dfce`'s copy of `x` into
    /// `[a, b, e, f]`, runs of 28 `f32`s: 170–213 → 76–98 µs with the runs stepped outside
    /// `Points`, one thread, hot caches).
    fn moves_runs(
        &self,
        length: usize,
        strides: &[isize; N],
        target_stride: isize,
    ) -> Option<Source<T>> {
        let source = *self.data.first()?;
        let runs =
            target_stride == 1 && strides[0] == 1 && length.saturating_mul(size_of::<T>()) >= LINE;
        // A streamed nest streams only runs of two lines or more (`write_run`).
        let cached = !self.stream || length.saturating_mul(size_of::<T>()) < 2 * LINE;
        (runs && cached && self.copies_exactly(source)).then_some(source)
    }

    /// Whether a point's target element is `source`'s element as it lies in memory: a copy
    /// that assigns with α = 1, of an operand of the target's own type.
    fn copies_exactly(&self, source: Source<T>) -> bool {
        self.copy && !source.part && matches!(self.mode, Mode::Assign) && self.alpha == T::ONE
    }

    /// [`Self::write_tile`] for `count` tiles of one shape along a third loop (its extent
    /// here, and the operands' and the target's strides along it): a copy's tiles moved
    /// together, each kernel block of every tile in turn, by `stream_brick` where the copy
    /// streams (see [`BRICK`]) and by `brick` where it does not (see [`cached_brick_loop`]),
    /// where they can be, else tile by tile. Straight from the source even where its
    /// columns are a multiple of a page apart (which `write_tile` moves through its buffer):
    /// each block loads each of its source lines once and uses it at once, so columns that
    /// share a cache set evict nothing still needed (`c[l, k, j, i] = a[i, j, k, l]` over 64⁴
    /// `f32`, one thread: 0.36–0.39× → 0.48–0.52× a copy).
    #[allow(clippy::too_many_arguments)]
    fn write_brick(
        &self,
        buffer: &mut [T],
        transposed: usize,
        corner: Point<N>,
        shape: [usize; 2],
        strides: [&[isize; N]; 2],
        target_strides: [isize; 2],
        (count, mid_strides, mid_target): (usize, &[isize; N], isize),
    ) {
        let source = self.data[transposed];
        let (down, across) = (strides[0][transposed], strides[1][transposed]);
        let mid = mid_strides[transposed];
        // Streamed where the copy streams, else stored the cached way (AVX-512 only).
        let kernel = if self.stream {
            transposes::<T>()
        } else {
            bricks::<T>()
        };
        if self.copies_exactly(source) && down == 1 && target_strides[1] == 1 && kernel {
            let from = source.data.wrapping_offset(corner.operands[transposed]);
            let to = self.target.wrapping_offset(corner.target);
            let [rows, columns] = shape;
            let apart = !meet(
                (from, &[1, across, mid]),
                (to, &[target_strides[0], 1, mid_target]),
                &[rows, columns, count],
            );
            let third = (count, mid, mid_target);
            // SAFETY: every element of the `count` tiles lies inside the nest, which the step
            // proved in bounds (the source's for reads, the target's for writes), and the
            // source's and the target's ranges of addresses do not meet; distinct points of
            // the injective target are distinct elements. Streamed: as in `write_tile` (no
            // later point touches these target elements; `run_nest` fences once the nest's
            // part is done).
            let moved = apart
                && unsafe {
                    if self.stream {
                        stream_brick(from, across, to, target_strides[0], shape, third)
                    } else {
                        brick(from, across, to, target_strides[0], shape, third)
                    }
                };
            if moved {
                #[cfg(test)]
                if self.stream {
                    tests::STREAMED_TILES.with(|tiles| tiles.set(tiles.get() + count));
                    tests::BRICKS.with(|bricks| bricks.set(bricks.get() + usize::from(count > 1)));
                } else {
                    tests::CACHED_BRICKS.with(|bricks| bricks.set(bricks.get() + 1));
                }
                return;
            }
        }
        for m in 0..count {
            let mut at = corner;
            at.step(mid_strides, mid_target, m as isize);
            self.write_tile(buffer, transposed, at, shape, strides, target_strides);
        }
    }

    /// [`Self::write_tile`] for a strip of whole target rows that are not a whole number of
    /// cache lines apart ([`off_lines_rows`]): a copy's strip streamed by `stream_off_lines`,
    /// through `buffer` as its staging, where it can be; else as `write_tile` does.
    fn write_off_lines(
        &self,
        buffer: &mut [T],
        transposed: usize,
        corner: Point<N>,
        shape: [usize; 2],
        strides: [&[isize; N]; 2],
        target_strides: [isize; 2],
    ) {
        let source = self.data[transposed];
        let (down, across) = (strides[0][transposed], strides[1][transposed]);
        let from = source.data.wrapping_offset(corner.operands[transposed]);
        let to = self.target.wrapping_offset(corner.target);
        if self.stream
            && self.copies_exactly(source)
            && down == 1
            && target_strides[1] == 1
            && apart(from, [1, across], to, [target_strides[0], 1], shape)
        {
            // SAFETY: the source's strip lies inside the nest, which the step proved in
            // bounds for reads, and the target's for writes; `apart` found no address in
            // both; the buffer is this call's own. Streamed: the elements are of a type (no
            // padding), no later point touches the strip's target elements (as for
            // `move_tile`), and `run_nest` fences once the nest's part is done.
            let streamed =
                unsafe { stream_off_lines(from, across, to, target_strides[0], shape, buffer) };
            if streamed {
                #[cfg(test)]
                tests::STREAMED_TILES.with(|tiles| tiles.set(tiles.get() + 1));
                return;
            }
        }
        self.write_tile(buffer, transposed, corner, shape, strides, target_strides);
    }

    /// Stores `body` at the `shape` points of a tile of two loops (rows, then columns, the
    /// target contiguous along the columns) from `corner`, where operand `transposed` is
    /// contiguous down the rows: its tile is first copied down the rows into `buffer` laid out
    /// along them, so each of its cache lines is read whole and at once instead of one element
    /// per row pass (rows a power of two apart share a cache set and would evict each other
    /// between passes), and the rows are then written as runs reading the buffer. A copy's
    /// tile goes to `transpose_tile` (`stream_tile` where the nest streams) instead where it
    /// can.
    fn write_tile(
        &self,
        buffer: &mut [T],
        transposed: usize,
        corner: Point<N>,
        shape: [usize; 2],
        strides: [&[isize; N]; 2],
        target_strides: [isize; 2],
    ) {
        let [rows, columns] = shape;
        let [down_strides, across] = strides;
        let source = self.data[transposed];
        let (down, across_step) = (down_strides[transposed], across[transposed]);
        let at = |row: usize, column: usize| {
            corner.operands[transposed] + row as isize * down + column as isize * across_step
        };
        if self.copies_exactly(source) && down == 1 && target_strides[1] == 1 && transposes::<T>() {
            // A copy, transposed in vector registers: straight from the source where the two
            // tiles do not overlap (the step's proof implies it; checked, as it costs nothing
            // against a tile), unless the source's columns are a multiple of a page apart:
            // those fall in one cache set and would evict each other, so their runs are first
            // copied into the buffer as they lie, and the buffer is transposed.
            let from = source.data.wrapping_offset(corner.operands[transposed]);
            let to = self.target.wrapping_offset(corner.target);
            // (Runs of at most `TILE`: the buffer holds one per `TILE` elements.)
            let page_apart = rows <= TILE
                && across_step
                    .unsigned_abs()
                    .wrapping_mul(size_of::<T>())
                    .is_multiple_of(PAGE);
            // A streamed tile whose target rows continue one another (one run of
            // `rows · columns` elements) but do not start on line boundaries (a view into a
            // tensor, or a buffer not aligned to a line): `stream_tile` streams no line of
            // rows that short, so the tile is transposed into the buffer as that run and the
            // run streamed whole. Likewise on line boundaries where the source's columns are
            // a page apart, which the direct path below would first copy through the buffer
            // run by run (TCCG-like 16 × 16 tiles of `xp[a, b, f, d, e] = x[e, f, b, a, d]`
            // into tensors on lines: 2.1–2.7 ms that way, 1.5–2.1 ms this one, a harness).
            // Straight from the source, unless its columns share a cache set and are read by
            // more than one load each (see below). Rows that `gather_tile` takes (a few dozen
            // elements off the lines, the tile whole rows: `streamed_tile`) go through it.
            if self.stream
                && target_strides[0] == columns as isize
                && rows * columns <= buffer.len()
                && (!rows_on_lines(to, target_strides[0]) || page_apart)
                && (!page_apart || rows * size_of::<T>() <= LINE)
                && apart(from, [1, across_step], to, [target_strides[0], 1], shape)
            {
                // SAFETY: the source's tile lies inside the nest, which the step proved in
                // bounds for reads; the buffer is this call's own, and holds the tile laid out
                // along its rows (`rows · columns` elements, checked); the target's tile
                // is the run of `rows · columns` elements from `to` (its rows `columns` apart),
                // inside the nest, so proved in bounds for writes, and not the buffer. Streamed:
                // as below.
                let streamed = unsafe {
                    let into = buffer.as_mut_ptr();
                    (gather_tile(from, across_step, into, columns as isize, shape)
                        || transpose_tile(from, across_step, into, columns as isize, shape))
                        && stream_run(buffer.as_ptr(), to, rows * columns)
                };
                if streamed {
                    #[cfg(test)]
                    tests::STREAMED_TILES.with(|tiles| tiles.set(tiles.get() + 1));
                    return;
                }
            }
            if !page_apart && apart(from, [1, across_step], to, [target_strides[0], 1], shape) {
                // SAFETY: every element of both tiles lies inside the nest, which the step
                // proved in bounds (the source's for reads, the target's for writes), and
                // `apart` found no address in both. Streamed (`self.stream`): the elements
                // are of a type (no padding), no later point touches the tile's target
                // elements (the target is injective, and the step proved that an operand
                // sharing its memory reads each element at its own point, as no transposed
                // operand does), and `run_nest` fences once the nest's part is done, before
                // anything else can.
                if unsafe { self.move_tile(from, across_step, to, target_strides[0], shape) } {
                    return;
                }
            }
            if self.in_pieces(buffer, transposed, corner, shape, strides, target_strides) {
                return;
            }
            for column in 0..columns {
                // SAFETY: the run is `rows` elements of the tile from its top, down the
                // source's unit stride, all inside the nest, which the step proved in bounds;
                // the buffer holds `TILE × TILE` elements and `rows ≤ TILE`; the buffer is
                // this call's own, so the two do not overlap.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        source.offset(at(0, column)).data,
                        buffer[column * TILE..][..rows].as_mut_ptr(),
                        rows,
                    )
                };
                // The next tile most often reads on down these columns (row blocks run
                // innermost, and the loops outside a tile follow this operand's strides):
                // its run is asked for now, to arrive while this tile is moved.
                prefetch_run(source.data.wrapping_offset(at(rows, column)), rows);
            }
            // SAFETY: the buffer holds the tile, column `c` from `c · TILE`; the target's tile
            // (rows `target_strides[0]` apart, unit steps across) lies inside the nest, so the
            // step proved every element of it in bounds for writes, and it is not the buffer.
            // Streamed: as above (the tile's source read already, into the buffer).
            let copied = unsafe {
                self.move_tile(
                    buffer.as_ptr(),
                    TILE as isize,
                    self.target.offset(corner.target),
                    target_strides[0],
                    shape,
                )
            };
            if copied {
                return;
            }
        }
        if self.in_pieces(buffer, transposed, corner, shape, strides, target_strides) {
            return;
        }
        // The operand's tile into the buffer along the target's rows: transposed in vector
        // registers where the operand holds `T`s contiguous down the rows, else element by
        // element.
        // SAFETY: the tile's source elements lie inside the nest, which the step proved in
        // bounds for reads; the buffer is this call's own (`TILE × TILE` elements, `rows` and
        // `columns` at most `TILE`), so no buffer element is a source element; element types
        // have no padding bytes.
        let transposed_in_registers = !source.part
            && down == 1
            && unsafe {
                transpose_tile(
                    source.data.wrapping_offset(at(0, 0)),
                    across_step,
                    buffer.as_mut_ptr(),
                    TILE as isize,
                    shape,
                )
            };
        if !transposed_in_registers {
            for column in 0..columns {
                for row in 0..rows {
                    // SAFETY: the tile lies inside the nest, every element of which the step
                    // proved in bounds.
                    buffer[row * TILE + column] = unsafe { source.offset(at(row, column)).read() };
                }
            }
        }
        let mut data = self.data;
        data[transposed] = Source {
            data: buffer.as_ptr(),
            part: false,
        };
        // The same nest reading the buffer: offsets `row * TILE + column`, all inside it.
        let local = Nest { data, ..*self };
        let mut run_strides = *across;
        run_strides[transposed] = 1;
        for row in 0..rows {
            let mut at = corner;
            at.step(down_strides, target_strides[0], row as isize);
            at.operands[transposed] = (row * TILE) as isize;
            // The target's run `ROWS_AHEAD` rows on is asked for now (past the tile's last
            // row, the next tile's first: row blocks run innermost), so its stores find their
            // lines in cache rather than each waiting on its own.
            let ahead = corner.target + (row + ROWS_AHEAD) as isize * target_strides[0];
            prefetch_run(self.target.wrapping_offset(ahead), columns);
            local.write_run(at, columns, &run_strides, target_strides[1]);
        }
    }

    /// `transpose_tile`, streamed (`stream_tile`) where this nest streams and the target's
    /// rows allow it.
    ///
    /// # Safety
    /// As `transpose_tile`, and, where this nest streams, as `stream_tile` (fenced by
    /// `run_nest`).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    unsafe fn move_tile(
        &self,
        source: *const T,
        source_stride: isize,
        target: *mut T,
        target_stride: isize,
        shape: [usize; 2],
    ) -> bool {
        // SAFETY: forwarded from the caller.
        unsafe {
            if self.stream && stream_tile(source, source_stride, target, target_stride, shape) {
                #[cfg(test)]
                tests::STREAMED_TILES.with(|tiles| tiles.set(tiles.get() + 1));
                return true;
            }
            transpose_tile(source, source_stride, target, target_stride, shape)
        }
    }

    /// A tile larger than the buffer's `TILE × TILE` (a streamed copy's narrow tiles, see
    /// [`streamed_tile`], which the kernels move whole where they can) as `write_tile` in
    /// pieces of at most that: returns whether it was one (and so written), else does
    /// nothing.
    fn in_pieces(
        &self,
        buffer: &mut [T],
        transposed: usize,
        corner: Point<N>,
        [rows, columns]: [usize; 2],
        strides: [&[isize; N]; 2],
        target_strides: [isize; 2],
    ) -> bool {
        if rows <= TILE && columns <= TILE {
            return false;
        }
        for row in (0..rows).step_by(TILE) {
            for column in (0..columns).step_by(TILE) {
                let mut at = corner;
                at.step(strides[0], target_strides[0], row as isize);
                at.step(strides[1], target_strides[1], column as isize);
                let shape = [TILE.min(rows - row), TILE.min(columns - column)];
                self.write_tile(buffer, transposed, at, shape, strides, target_strides);
            }
        }
        true
    }

    /// Stores `body` at `length` points along one loop (nothing is summed).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn write_run(
        &self,
        start: Point<N>,
        length: usize,
        strides: &[isize; N],
        target_stride: isize,
    ) {
        if let (true, 1, Some(&source), Some(&1)) = (
            self.stream,
            target_stride,
            self.data.first(),
            strides.first(),
        ) {
            let from = source.data.wrapping_offset(start.operands[0]);
            let to = self.target.wrapping_offset(start.target);
            // Runs shorter than two lines stay cached: streamed, each would write parts of
            // lines that the write-combining buffers flush half empty (`t[w, h, c] = s[h, w,
            // c]` over 2048² × 3 `f32`: 1.5 GB/s streamed).
            if length.saturating_mul(size_of::<T>()) >= 2 * LINE
                && self.copies_exactly(source)
                && apart(from, [1, 0], to, [1, 0], [length, 1])
            {
                // SAFETY: both runs lie inside the nest, which the step proved in bounds (the
                // source's for reads, the target's for writes), both contiguous, of an
                // element type (no padding), and `apart` found no address in both. No later
                // point touches the run's target elements (the target is injective, and the
                // step proved that an operand sharing its memory reads each element at its
                // own point: such runs are never apart), and `run_nest` fences once the
                // nest's part is done, before anything else can.
                if unsafe { stream_run(from, to, length) } {
                    #[cfg(test)]
                    tests::STREAMED_RUNS.with(|runs| runs.set(runs.get() + 1));
                    return;
                }
            }
        }
        // Each arm passes the mode as a constant, so the inlined run is specialised for the two
        // common modes instead of branching on the mode at every element.
        match self.mode {
            Mode::Assign => {
                self.write_run_with(start, length, strides, target_stride, Mode::Assign)
            }
            Mode::Add => self.write_run_with(start, length, strides, target_stride, Mode::Add),
            mode => self.write_run_with(start, length, strides, target_stride, mode),
        }
    }

    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn write_run_with(
        &self,
        start: Point<N>,
        length: usize,
        strides: &[isize; N],
        target_stride: isize,
        mode: Mode<T>,
    ) {
        // SAFETY (whole function): as in `sum_run`; the target's elements along the run are
        // distinct and proven in bounds.
        let mut k = 0;
        if target_stride == 1 && strides.iter().all(|&s| s == 1) {
            // Every access contiguous: one plain loop over fixed starts, which the compiler
            // vectorizes (checking at run time that the target's run overlaps no operand's,
            // as raw pointers leave that open; an in-place operand reads each element just
            // before it is written, which is what the scalar order does too).
            let target = unsafe { self.target.offset(start.target) };
            let sources: [Source<T>; N] =
                std::array::from_fn(|o| unsafe { self.data[o].offset(start.operands[o]) });
            for k in 0..length {
                let values =
                    std::array::from_fn(|o| unsafe { sources[o].offset(k as isize).read() });
                unsafe { combine(mode, self.alpha, target.add(k), (self.body)(values)) };
            }
            return;
        }
        if target_stride == 1 && length >= LANES {
            if let Some(broadcast) = self.broadcast(start, strides) {
                let target = unsafe { self.target.offset(start.target) };
                while k + LANES <= length {
                    let source = self.chunk(start, strides, &broadcast, k);
                    for lane in 0..LANES {
                        let values = std::array::from_fn(|o| unsafe {
                            source[o].offset(lane as isize).read()
                        });
                        let slot = unsafe { target.add(k + lane) };
                        unsafe { combine(mode, self.alpha, slot, (self.body)(values)) };
                    }
                    k += LANES;
                }
            }
        }
        while k < length {
            let values = std::array::from_fn(|o| unsafe {
                self.data[o]
                    .offset(start.operands[o] + k as isize * strides[o])
                    .read()
            });
            let slot = unsafe {
                self.target
                    .offset(start.target + k as isize * target_stride)
            };
            unsafe { combine(mode, self.alpha, slot, (self.body)(values)) };
            k += 1;
        }
    }
}

/// `*slot (=|+=|= β·slot +) α · value`.
///
/// # Safety
/// `slot` must be valid for reads and writes.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub(super) unsafe fn combine<T: Element>(mode: Mode<T>, alpha: T, slot: *mut T, value: T) {
    let value = alpha.times(value);
    // SAFETY: forwarded from the caller.
    unsafe {
        match mode {
            Mode::Assign => slot.write(value),
            Mode::Add => slot.write(slot.read().plus(value)),
            Mode::Scale(beta) => slot.write(beta.times(slot.read()).plus(value)),
        }
    }
}

/// Whether the `shape` tiles at `first` and `second` (strides down and across, in elements)
/// share no address: their ranges of addresses, lowest to highest element, do not meet.
fn apart<T>(
    first: *const T,
    first_strides: [isize; 2],
    second: *const T,
    second_strides: [isize; 2],
    shape: [usize; 2],
) -> bool {
    let (first, second) = (
        address_range(first, &first_strides, &shape),
        address_range(second, &second_strides, &shape),
    );
    first.1 <= second.0 || second.1 <= first.0
}

/// Offsets of every operand and of the target at one point of a loop nest.
#[derive(Clone, Copy)]
struct Point<const N: usize> {
    operands: [isize; N],
    target: isize,
}

impl<const N: usize> Point<N> {
    /// Moves `times` steps along one loop. Wrapping: an offset that is dereferenced is one the
    /// step proved, which fits, so wrapping changes nothing for it; an operand that addresses
    /// nothing (an empty loop elsewhere in its layout) may have strides whose multiples do not.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn step(&mut self, operand_strides: &[isize; N], target_stride: isize, times: isize) {
        for (offset, stride) in self.operands.iter_mut().zip(operand_strides) {
            *offset = offset.wrapping_add(stride.wrapping_mul(times));
        }
        self.target = self.target.wrapping_add(target_stride.wrapping_mul(times));
    }
}

/// Every point of loops `vars` (row-major: the last loop fastest), from `start`: none if one
/// of the loops is empty, `start` alone if `vars` is empty.
///
/// An iterator, not a function taking a closure, so that the loops run inside the function
/// that uses them: a closure is a function of its own, compiled for the baseline CPU even
/// when it is called from [`run_nest_avx2`], and a large one is not inlined.
struct Points<'a, const L: usize, const N: usize> {
    extents: &'a [usize; L],
    vars: std::ops::Range<usize>,
    operand_strides: &'a [[isize; N]; L],
    target_strides: &'a [isize; L],
    /// How far each loop of `vars` has gone (an odometer).
    counters: [usize; L],
    /// The point the next call returns, unless `done`.
    next: Point<N>,
    done: bool,
}

impl<'a, const L: usize, const N: usize> Points<'a, L, N> {
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn new(
        extents: &'a [usize; L],
        vars: std::ops::Range<usize>,
        operand_strides: &'a [[isize; N]; L],
        target_strides: &'a [isize; L],
        start: Point<N>,
    ) -> Self {
        let done = vars.clone().any(|var| extents[var] == 0);
        Points {
            extents,
            vars,
            operand_strides,
            target_strides,
            counters: [0; L],
            next: start,
            done,
        }
    }
}

impl<const L: usize, const N: usize> Iterator for Points<'_, L, N> {
    type Item = Point<N>;

    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn next(&mut self) -> Option<Point<N>> {
        if self.done {
            return None;
        }
        let point = self.next;
        // Bump the innermost loop, carry outwards; past the outermost, done.
        let mut var = self.vars.end;
        loop {
            if var == self.vars.start {
                self.done = true;
                break;
            }
            var -= 1;
            self.counters[var] += 1;
            self.next
                .step(&self.operand_strides[var], self.target_strides[var], 1);
            if self.counters[var] < self.extents[var] {
                break;
            }
            self.next.step(
                &self.operand_strides[var],
                self.target_strides[var],
                -(self.extents[var] as isize),
            );
            self.counters[var] = 0;
        }
        Some(point)
    }
}

#[cfg(test)]
mod tests {
    std::thread_local! {
        /// Set by a test on its own thread: its loop nests run the baseline compilation only.
        static BASELINE_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    pub(super) fn baseline_only() -> bool {
        BASELINE_ONLY.with(|flag| flag.get())
    }

    std::thread_local! {
        /// Set by a test on the thread that evaluates: its copies stream whatever their size.
        static STREAM_ALWAYS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    pub(super) fn stream_always() -> bool {
        STREAM_ALWAYS.with(|flag| flag.get())
    }

    std::thread_local! {
        /// How many runs this thread has streamed.
        pub(super) static STREAMED_RUNS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        /// How many transposed tiles this thread has streamed (or `stream_brick` accepted,
        /// its whole lines streamed).
        pub(super) static STREAMED_TILES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        /// How many bricks of more than one tile `stream_brick` accepted on this thread
        /// (`write_brick`; their whole lines streamed, the rest stored the cached way).
        pub(super) static BRICKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        /// How many bricks `transpose::brick` moved on this thread (`write_brick`, cached).
        pub(super) static CACHED_BRICKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    use super::*;
    use crate::element::Real;
    use crate::exec::step::Axis;
    use crate::operand::access::{Operand, TargetAccess, TargetOwned, TargetShared};
    use crate::tensor::Tensor;

    #[test]
    fn apart_tiles_share_no_address() {
        let buffer = [0u32; 64];
        let at = |offset: usize| buffer[offset..].as_ptr();
        // A 2 × 3 tile down rows of 8 from 0 reaches element 10; another from 11 is apart.
        assert!(apart(at(0), [8, 1], at(11), [8, 1], [2, 3]));
        assert!(!apart(at(0), [8, 1], at(10), [8, 1], [2, 3]));
        // Interleaved tiles share no element but do share a range: not apart.
        assert!(!apart(at(0), [8, 1], at(3), [8, 1], [2, 3]));
        // Negative strides reach below the start.
        assert!(!apart(at(20), [-8, 1], at(4), [1, 1], [3, 1]));
        assert!(apart(at(20), [-8, 1], at(3), [1, 1], [1, 1]));
        // A transposed tile against a row-major one.
        assert!(apart(at(0), [1, 4], at(16), [4, 1], [4, 4]));
        assert!(!apart(at(0), [1, 4], at(15), [4, 1], [4, 4]));
    }

    /// A tile larger than the buffer whose source and target ranges interleave in one
    /// allocation (no element shared, so `apart` cannot tell them apart): written in pieces
    /// the buffer holds, every target element its source element, nothing else touched.
    #[test]
    fn tiles_larger_than_the_buffer_go_in_pieces() {
        // Rows of 2 · C: the target's row r in the first half of row r, the source's column c
        // (contiguous down the tile's rows) in the second half of row c.
        let (rows, columns) = (3 * TILE + 5, 3 * TILE + 7);
        let width = 2 * columns;
        let mut memory: Vec<f32> = (0..columns * width).map(|n| n as f32).collect();
        let before = memory.clone();
        let base = memory.as_mut_ptr();
        let body = |[x]: [f32; 1]| x;
        let nest = Nest {
            data: [Source {
                data: base.cast_const(),
                part: false,
            }],
            target: base,
            mode: Mode::Assign,
            alpha: 1.0,
            body: &body,
            copy: true,
            stream: false,
            off_lines: None,
        };
        let corner = Point {
            operands: [columns as isize],
            target: 0,
        };
        let mut buffer = vec![0.0f32; TILE * TILE];
        nest.write_tile(
            &mut buffer,
            0,
            corner,
            [rows, columns],
            [&[1], &[width as isize]],
            [width as isize, 1],
        );
        for (at, &got) in memory.iter().enumerate() {
            let (row, column) = (at / width, at % width);
            let want = if row < rows && column < columns {
                before[columns + column * width + row]
            } else {
                before[at]
            };
            assert_eq!(got, want, "element {at} (row {row}, column {column})");
        }
    }

    #[test]
    fn matmul_with_a_transposed_operand() {
        let a = Tensor::<f64>::from_fn([3, 2], |ix| (ix[0] * 2 + ix[1]) as f64);
        let b = Tensor::<f64>::from_fn([3, 4], |ix| (ix[0] + ix[1]) as f64);
        let mut c = Tensor::<f64>::zeros([2, 4]);
        let extents = [2, 4, 3]; // i, j, k
        let target = c.__tdsl_target();
        let step = Step::new(
            target.at(&[Axis::Loop(0), Axis::Loop(1)]),
            Mode::Assign,
            1.0,
            extents,
            2,
            [
                a.__tdsl_operand().at(&[Axis::Loop(2), Axis::Loop(0)]),
                b.__tdsl_operand().at(&[Axis::Loop(2), Axis::Loop(1)]),
            ],
        );
        evaluate(step, |[x, y]| x * y, AnyNest);
        for i in 0..2 {
            for j in 0..4 {
                let expected: f64 = (0..3).map(|k| a[[k, i]] * b[[k, j]]).sum();
                assert_eq!(c[[i, j]], expected);
            }
        }
    }

    /// Each marker's instance gives the bits `AnyNest`'s gives for the steps generated code
    /// hands it (point-wise ones, transposing ones, sums into strips and into points, a scalar),
    /// and refuses, before writing anything, a step it lacks the paths for.
    #[test]
    fn each_instance_matches_every_path_and_refuses_what_it_lacks() {
        fn run<P: NestPaths>(
            paths: P,
            x: &Tensor<f64>,
            shape: [usize; 2],
            axes: [[Axis; 2]; 2],
            n_out: usize,
        ) -> Vec<u64> {
            let mut out = Tensor::<f64>::from_fn(shape, |ix| (ix[0] + 3 * ix[1]) as f64 * 0.25);
            let target = out.__tdsl_target();
            // A summing step writes the first column, a scalar one the first element.
            let axes_out: Vec<Axis> = (0..n_out)
                .map(Axis::Loop)
                .chain([Axis::Fixed(0); 2])
                .take(2)
                .collect();
            let step = Step::new(
                target.at(&axes_out),
                Mode::Scale(0.5),
                1.5,
                [shape[0], shape[1]],
                n_out,
                [
                    x.__tdsl_operand().at(&axes[0]),
                    x.__tdsl_operand().at(&axes[1]),
                ],
            );
            evaluate(step, |[a, b]| a * b - 0.125 * a, paths);
            out.as_slice().iter().map(|v| v.to_bits()).collect()
        }
        let (l0, l1) = (Axis::Loop(0), Axis::Loop(1));
        for n in [1, 7, 13, 40] {
            let x =
                Tensor::<f64>::from_fn([n, n], |ix| ((ix[0] * 7 + ix[1] * 3) % 11) as f64 - 4.5);
            // Point-wise: along the rows, and transposing one operand (tiled).
            for axes in [[[l0, l1], [l0, l1]], [[l0, l1], [l1, l0]]] {
                let every = run(AnyNest, &x, [n, n], axes, 2);
                assert_eq!(
                    run(PointWise, &x, [n, n], axes, 2),
                    every,
                    "{n}: point-wise"
                );
            }
            // Summing: rows into points (a run per point), columns into a strip, everything
            // into a scalar.
            for axes in [[[l0, l1], [l0, l1]], [[l1, l0], [l1, l0]]] {
                for n_out in [1, 0] {
                    let every = run(AnyNest, &x, [n, n], axes, n_out);
                    let summing = run(Summing, &x, [n, n], axes, n_out);
                    assert_eq!(summing, every, "{n}: summing into {n_out} loops");
                }
            }
        }
        // The refusals, with the target as it was.
        let x = Tensor::<f64>::from_fn([3, 3], |ix| ix[0] as f64 + 1.0);
        let along = [l0, l1];
        for (n_out, refuse) in [(1, true), (2, false)] {
            let mut out = Tensor::<f64>::from_fn([3, 3], |_| 9.0);
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let target = out.__tdsl_target();
                let axes: Vec<Axis> = (0..n_out).map(Axis::Loop).chain([Axis::Fixed(0)]).collect();
                let step = Step::new(
                    target.at(&axes[..2]),
                    Mode::Assign,
                    1.0,
                    [3, 3],
                    n_out,
                    [x.__tdsl_operand().at(&along)],
                );
                if refuse {
                    evaluate(step, |[v]| v, PointWise);
                } else {
                    evaluate(step, |[v]| v, Summing);
                }
            }));
            let message = caught.expect_err("refused");
            let message = message.downcast_ref::<&str>().copied().unwrap_or_default();
            let expected = if refuse {
                "a point-wise loop nest"
            } else {
                "a summing loop nest"
            };
            assert!(message.starts_with(expected), "{message}");
            assert!(out.as_slice().iter().all(|&v| v == 9.0));
        }
    }

    #[test]
    fn trace_and_empty_sum() {
        let a = Tensor::<f32>::from_fn([3, 3], |ix| (ix[0] * 3 + ix[1]) as f32);
        let mut total = 7.0f32;
        let target = TargetAccess::scalar(&mut total);
        let step = Step::new(
            target.at(&[]),
            Mode::Add,
            1.0,
            [3],
            0,
            [a.__tdsl_operand().at(&[Axis::Loop(0), Axis::Loop(0)])],
        );
        evaluate(step, |[x]| x, AnyNest);
        assert_eq!(total, 7.0 + 0.0 + 4.0 + 8.0);

        let empty = Tensor::<f32>::zeros([2, 0]);
        let mut sums = Tensor::<f32>::from_fn([2], |_| 5.0);
        let target = sums.__tdsl_target();
        let step = Step::new(
            target.at(&[Axis::Loop(0)]),
            Mode::Assign,
            1.0,
            [2, 0],
            1,
            [empty.__tdsl_operand().at(&[Axis::Loop(0), Axis::Loop(1)])],
        );
        evaluate(step, |[x]| x, AnyNest);
        assert_eq!(sums.as_slice(), &[0.0, 0.0]);
    }

    #[test]
    fn long_sums_are_as_accurate_as_pairwise_summation() {
        // Values alternating 1e4 and 1e-3: adding them one by one in f32 loses the small ones
        // once the sum is large; pairwise blocks keep the error near f32's epsilon.
        let n = 1 << 22;
        let values = Tensor::<f32>::from_fn([n], |ix| if ix[0] % 2 == 0 { 1e4 } else { 1e-3 });
        let exact = (n / 2) as f64 * (1e4 + f64::from(1e-3f32));
        for shape in [[n, 1], [n / 64, 64], [64, n / 64]] {
            let matrix = Tensor::from_shape_vec(shape, values.as_slice().to_vec()).unwrap();
            let mut total = 0.0f32;
            let target = TargetAccess::scalar(&mut total);
            let step = Step::new(
                target.at(&[]),
                Mode::Assign,
                1.0,
                shape,
                0,
                [matrix.__tdsl_operand().at(&[Axis::Loop(0), Axis::Loop(1)])],
            );
            evaluate(step, |[x]| x, AnyNest);
            let error = (f64::from(total) - exact).abs() / exact;
            assert!(error < 1e-6, "shape {shape:?}: relative error {error}");
        }
        // The same values down the columns of a matrix, summed in strips (each column's sum
        // over its rows, the outer axis).
        let columns = 16;
        let matrix =
            Tensor::<f32>::from_fn(
                [n / 4, columns],
                |ix| {
                    if ix[0] % 2 == 0 {
                        1e4
                    } else {
                        1e-3
                    }
                },
            );
        let exact = (n / 8) as f64 * (1e4 + f64::from(1e-3f32));
        let mut sums = Tensor::<f32>::zeros([columns]);
        let target = sums.__tdsl_target();
        let step = Step::new(
            target.at(&[Axis::Loop(0)]),
            Mode::Assign,
            1.0,
            [columns, n / 4],
            1,
            [matrix.__tdsl_operand().at(&[Axis::Loop(1), Axis::Loop(0)])],
        );
        evaluate(step, |[x]| x, AnyNest);
        for &total in sums.as_slice() {
            let error = (f64::from(total) - exact).abs() / exact;
            assert!(error < 1e-6, "column sums: relative error {error}");
        }
    }

    /// `s[j] (=|+=) α Σ_i x[i, j]`, run through `evaluate` on `threads` threads.
    fn column_sums(x: &Tensor<f64>, mode: Mode<f64>, sums: &mut Tensor<f64>, threads: usize) {
        let [rows, columns] = [x.shape()[0], x.shape()[1]];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let target = sums.__tdsl_target();
            let step = Step::new(
                target.at(&[Axis::Loop(0)]),
                mode,
                0.5,
                [columns, rows],
                1,
                [x.__tdsl_operand().at(&[Axis::Loop(1), Axis::Loop(0)])],
            );
            evaluate(step, |[v]| v, AnyNest);
        });
    }

    #[test]
    fn sums_over_an_outer_axis_run_in_strips_with_the_same_bits_on_any_threads() {
        // Rows past the strip path's minimum, columns around the strip's width, and a column
        // count past the threading threshold; values whose sums round.
        // Two threads cut the rows of (2048, 300), a carry across the cut, (1900, 257) and
        // (1600, 4200), two strips, and the columns of (1500, 300), too few rows after the
        // cut; three threads cut the columns.
        for (rows, columns) in [
            (128, 1),
            (128, 15),
            (129, 16),
            (300, 17),
            (1000, 33),
            (700, 1000),
            (129, 4097),
            (2048, 300),
            (1900, 257),
            (1500, 300),
            (1600, 4200),
        ] {
            let x = Tensor::<f64>::from_fn([rows, columns], |ix| {
                ((ix[0] * 31 + ix[1] * 17) % 97) as f64 / 7.0 + 1e6 * ((ix[0] % 3) as f64)
            });
            let expected: Vec<f64> = (0..columns)
                .map(|j| 0.5 * (0..rows).map(|i| x[[i, j]]).sum::<f64>())
                .collect();
            let mut first = Tensor::<f64>::zeros([columns]);
            column_sums(&x, Mode::Assign, &mut first, 1);
            for (j, (&got, &want)) in first.as_slice().iter().zip(&expected).enumerate() {
                assert!(
                    (got - want).abs() <= 1e-12 * want.abs(),
                    "{rows}×{columns}, column {j}: {got} vs {want}"
                );
            }
            for threads in [2, 3] {
                let mut again = Tensor::<f64>::zeros([columns]);
                column_sums(&x, Mode::Assign, &mut again, threads);
                assert_eq!(again.as_slice(), first.as_slice(), "{threads} threads");
            }
            for threads in [1, 2] {
                let mut added = Tensor::<f64>::from_fn([columns], |ix| ix[0] as f64);
                column_sums(&x, Mode::Add, &mut added, threads);
                for (j, (&got, &sum)) in added.as_slice().iter().zip(first.as_slice()).enumerate() {
                    assert_eq!(got, j as f64 + sum, "{threads} threads");
                }
            }
        }
    }

    #[test]
    fn strips_are_cut_between_threads_only_where_the_halves_merge_exactly() {
        // Blocks of 32 rows: 64 (1024 rows + 1024), 60 (1024 + 876), 47 (1024 + 476: too few
        // after the cut), 50 (1024 + 576), 2 (32 + 16; 32 + 1, too few), 1 (nothing to cut);
        // a second summed loop walked, none.
        assert_eq!(strip_halves(1, &[300, 2048]), Some((1, 1024)));
        assert_eq!(strip_halves(1, &[257, 1900]), Some((1, 1024)));
        assert_eq!(strip_halves(1, &[300, 1500]), None);
        assert_eq!(strip_halves(1, &[4200, 1600]), Some((1, 1024)));
        assert_eq!(strip_halves(1, &[9, 48]), Some((1, 32)));
        assert_eq!(strip_halves(1, &[9, 33]), None);
        assert_eq!(strip_halves(1, &[9, 32]), None);
        assert_eq!(strip_halves(1, &[300, 1, 2048]), Some((2, 1024)));
        assert_eq!(strip_halves(1, &[300, 2, 2048]), None);
        assert_eq!(strip_halves(2, &[3, 300]), None);
    }

    /// `body` over `operands` (rank 2, `[rows, columns]` each, read at `axes`), summing the
    /// loops past `n_out`, into a fresh target of `shape`, on this thread: the target's bits.
    fn bits_of(
        shape: &[usize],
        extents: [usize; 3],
        n_out: usize,
        operands: [(&Tensor<f32>, [usize; 2]); 2],
        body: impl Fn([f32; 2]) -> f32 + Sync,
    ) -> Vec<u32> {
        let mut c = Tensor::<f32>::zeros(shape.to_vec());
        let target = c.__tdsl_target();
        let target_axes: Vec<Axis> = (0..n_out).map(Axis::Loop).collect();
        let accesses = operands.map(|(x, _)| x.__tdsl_operand());
        let axes = operands.map(|(_, axes)| axes.map(Axis::Loop));
        let step = Step::new(
            target.at(&target_axes),
            Mode::Assign,
            0.7,
            extents,
            n_out,
            [accesses[0].at(&axes[0]), accesses[1].at(&axes[1])],
        );
        evaluate(step, body, AnyNest);
        c.as_slice().iter().map(|x| x.to_bits()).collect()
    }

    #[test]
    fn the_avx2_compilation_gives_the_baseline_bits() {
        // Sums whose roundings show any change of order: a dot product, column sums (strips),
        // a product whose left factor the strip does not move, and a point-wise quotient.
        // Where the CPU has no AVX2, both runs are the baseline's.
        let (m, n) = (150, 130);
        let x = Tensor::<f32>::from_fn([m, n], |ix| ((ix[0] * 31 + ix[1] * 17) % 97) as f32 / 7.3);
        let y = Tensor::<f32>::from_fn([m, n], |ix| 1.0 + ((ix[0] + ix[1] * 5) % 11) as f32 / 3.1);
        let yt = Tensor::<f32>::from_fn([n, m], |ix| 1.0 + ((ix[1] + ix[0] * 5) % 11) as f32 / 3.1);
        let runs = || {
            [
                bits_of(&[], [m, n, 1], 0, [(&x, [0, 1]), (&y, [0, 1])], |[a, b]| {
                    a * b
                }),
                bits_of(&[n], [n, m, 1], 1, [(&x, [1, 0]), (&y, [1, 0])], |[a, b]| {
                    a - b
                }),
                bits_of(
                    &[m, m],
                    [m, m, n],
                    2,
                    [(&x, [0, 2]), (&yt, [2, 1])],
                    |[a, b]| a * b,
                ),
                bits_of(
                    &[m, n],
                    [m, n, 1],
                    2,
                    [(&x, [0, 1]), (&y, [0, 1])],
                    |[a, b]| a / b,
                ),
            ]
        };
        let chosen = runs();
        BASELINE_ONLY.with(|flag| flag.set(true));
        let baseline = runs();
        BASELINE_ONLY.with(|flag| flag.set(false));
        for (k, (chosen, baseline)) in chosen.iter().zip(&baseline).enumerate() {
            assert_eq!(chosen, baseline, "nest {k}");
        }
    }

    #[test]
    fn products_with_a_factor_the_strip_does_not_move_match_a_naive_loop() {
        // `c[i, j] (=|+=) α Σ_k a[i, k] b[k, j]` below the GEMM threshold: the strip runs along
        // `j`, which `a` does not use (stride 0 there), in chunks and a remainder. Integer
        // values, so every order of addition gives the same sum.
        for (rows, columns, depth) in [(1, 1, 16), (3, 15, 16), (2, 16, 17), (5, 37, 40)] {
            let a = Tensor::<f64>::from_fn([rows, depth], |ix| ((ix[0] * 7 + ix[1]) % 5) as f64);
            let b = Tensor::<f64>::from_fn([depth, columns], |ix| {
                ((ix[0] * 3 + ix[1] * 11) % 9) as f64 - 4.0
            });
            let product =
                |i: usize, j: usize| (0..depth).map(|k| a[[i, k]] * b[[k, j]]).sum::<f64>();
            for (mode, threads) in [(Mode::Assign, 1), (Mode::Add, 1), (Mode::Assign, 2)] {
                let mut c = Tensor::<f64>::from_fn([rows, columns], |ix| ix[1] as f64);
                let before = c.clone();
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                pool.install(|| {
                    let target = c.__tdsl_target();
                    let step = Step::new(
                        target.at(&[Axis::Loop(0), Axis::Loop(1)]),
                        mode,
                        2.0,
                        [rows, columns, depth],
                        2,
                        [
                            a.__tdsl_operand().at(&[Axis::Loop(0), Axis::Loop(2)]),
                            b.__tdsl_operand().at(&[Axis::Loop(2), Axis::Loop(1)]),
                        ],
                    );
                    evaluate(step, |[x, y]| x * y, AnyNest);
                });
                for i in 0..rows {
                    for j in 0..columns {
                        let value = 2.0 * product(i, j);
                        let expected = match mode {
                            Mode::Add => before[[i, j]] + value,
                            _ => value,
                        };
                        assert_eq!(
                            c[[i, j]],
                            expected,
                            "{rows}×{columns}×{depth} at ({i}, {j})"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn transposes_in_tiles_match_a_naive_loop() {
        transposes_in_tiles::<f64>(|x| x);
        transposes_in_tiles::<f32>(|x| x as f32);
    }

    /// `c[j, i] (=|+=) α (a[i, j] + b[j, i])` with `a` transposed against the target (read
    /// through the tile's buffer, moved into it in vector registers) and `b` not, over
    /// extents around and past the tile's side and the kernels' blocks, `a` also read
    /// reversed along its rows (stride -1 down the tile: element by element); every value
    /// exact in either type.
    fn transposes_in_tiles<T: Real + std::fmt::Debug>(from: fn(f64) -> T) {
        let shapes = [
            (1, 1),
            (7, 13),
            (64, 64),
            (65, 130),
            (200, 3),
            (3, 200),
            (2, 1500),
            (4, 70),
            (33, 47),
        ];
        for (rows, columns) in shapes {
            let a = Tensor::<T>::from_fn([rows, columns], |ix| from((ix[0] * 1000 + ix[1]) as f64));
            let b = Tensor::<T>::from_fn([columns, rows], |ix| from((ix[0] * 7 + ix[1]) as f64));
            for reversed in [false, true] {
                let view = if reversed {
                    a.view().slice_axis_step(1, 0..columns, -1)
                } else {
                    a.view()
                };
                let read = |i: usize, j: usize| a[[i, if reversed { columns - 1 - j } else { j }]];
                for mode in [Mode::Assign, Mode::Add] {
                    let mut c = Tensor::<T>::from_fn([columns, rows], |ix| from(ix[1] as f64));
                    let before = c.clone();
                    let target = c.__tdsl_target();
                    let step = Step::new(
                        target.at(&[Axis::Loop(0), Axis::Loop(1)]),
                        mode,
                        from(2.0),
                        [columns, rows],
                        2,
                        [
                            view.__tdsl_operand().at(&[Axis::Loop(1), Axis::Loop(0)]),
                            b.__tdsl_operand().at(&[Axis::Loop(0), Axis::Loop(1)]),
                        ],
                    );
                    evaluate(step, |[x, y]: [T; 2]| x.plus(y), AnyNest);
                    for j in 0..columns {
                        for i in 0..rows {
                            let value = from(2.0).times(read(i, j).plus(b[[j, i]]));
                            let expected = match mode {
                                Mode::Add => before[[j, i]].plus(value),
                                _ => value,
                            };
                            assert_eq!(c[[j, i]], expected, "{rows}×{columns} at ({j}, {i})");
                        }
                    }
                }
            }
        }
    }

    /// Runs `run` on a pool of `threads` threads, its copies streamed whatever their size
    /// where `stream`, and returns how many runs or tiles (`counter`) the calling thread
    /// streamed (the others count on their own threads).
    fn count_streamed(
        threads: usize,
        stream: bool,
        counter: &'static std::thread::LocalKey<std::cell::Cell<usize>>,
        run: impl FnOnce() + Send,
    ) -> usize {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a pool");
        pool.install(|| {
            STREAM_ALWAYS.with(|flag| flag.set(stream));
            counter.with(|count| count.set(0));
            run();
            STREAM_ALWAYS.with(|flag| flag.set(false));
            counter.with(|count| count.get())
        })
    }

    /// `target[i, j] = source[j, i]` over `extents` (`[i, j]`), as a copy step.
    fn copy_transposed<T: Element>(
        target: &crate::tensor::TensorViewMut<'_, T>,
        source: &impl Operand<Elem = T>,
        extents: [usize; 2],
    ) {
        let target = TargetShared::__tdsl_target(target);
        copy(Step::new(
            target.at(&[Axis::Loop(0), Axis::Loop(1)]),
            Mode::Assign,
            T::ONE,
            extents,
            2,
            [source.__tdsl_operand().at(&[Axis::Loop(1), Axis::Loop(0)])],
        ));
    }

    /// `c[k, j, i] = a[i, j, k]` stored the cached way into a view of the first `columns` of
    /// rows 64 elements long (the target's `k` rows `64 · j-extent` elements apart: a whole
    /// number of pages for four- and eight-byte elements), with 1 and 2 threads: copies with
    /// α = 1 go in cached bricks where the CPU has their kernel, the others (added, scaled)
    /// tile by tile; every element matches, and none outside the view changes.
    fn check_cached_bricks<T: Element + std::fmt::Debug>(value: fn(usize) -> T) {
        // `j` runs 64 points (two bricks) past the threads' split; 16 points (a short brick)
        // in the small one; rows and columns cut short of the kernel's blocks.
        const { assert!(69 * 64 * 61 >= PARALLEL_WORK) };
        for [rows, middle, columns] in [[69, 64, 61], [64, 16, 64], [37, 16, 3]] {
            let a = Tensor::<T>::from_fn([columns, middle, rows], |ix| {
                value((ix[0] * middle + ix[1]) * rows + ix[2])
            });
            for (mode, alpha) in [(Mode::Assign, T::ONE), (Mode::Add, T::ONE.plus(T::ONE))] {
                for threads in [1, 2] {
                    let mut c = Tensor::<T>::from_fn([rows, middle, 64], |ix| value(ix[2] + 7));
                    let before = c.clone();
                    let moved = count_streamed(threads, false, &CACHED_BRICKS, || {
                        let view = c.view_mut().slice_axis(2, 0..columns);
                        let target = TargetShared::__tdsl_target(&view);
                        let axes = [Axis::Loop(0), Axis::Loop(1), Axis::Loop(2)];
                        let source = [Axis::Loop(2), Axis::Loop(1), Axis::Loop(0)];
                        copy(Step::new(
                            target.at(&axes),
                            mode,
                            alpha,
                            [rows, middle, columns],
                            3,
                            [a.__tdsl_operand().at(&source)],
                        ));
                    });
                    let case =
                        format!("{rows} × {middle} × {columns}, {mode:?}, {threads} threads");
                    if threads == 1 {
                        let copy = matches!(mode, Mode::Assign) && columns > 1;
                        assert_eq!(moved > 0, copy && bricks::<T>(), "{case}");
                    }
                    for k in 0..rows {
                        for j in 0..middle {
                            for i in 0..64 {
                                let old = before[[k, j, i]];
                                let want = if i >= columns {
                                    old
                                } else if matches!(mode, Mode::Assign) {
                                    a[[i, j, k]]
                                } else {
                                    old.plus(alpha.times(a[[i, j, k]]))
                                };
                                assert_eq!(c[[k, j, i]], want, "{case} at ({k}, {j}, {i})");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn transposes_with_rows_pages_apart_go_in_cached_bricks() {
        check_cached_bricks::<f32>(|n| (n % 1009) as f32);
        check_cached_bricks::<f64>(|n| n as f64 - 7.0);
        check_cached_bricks::<crate::element::c64>(|n| crate::element::c64::new(n as f64, 0.5));
    }

    /// `c[i, j] = a[j, i]` copied into a view `skip` columns into rows `skip + columns + pad`
    /// long, streamed whatever the size, with 1 and 2 threads: the tiles are streamed exactly
    /// where the target's rows are a whole number of cache lines apart (their first line
    /// boundary anywhere, as the view and the allocation place it), or, off the lines, in
    /// strips of whole rows (`stream_off_lines`: rows past the kernel's blocks, columns
    /// before each row's first line boundary and after its last whole line), every element
    /// matches the source, and no element outside the view changes.
    fn check_streamed_transpose<T: Element + std::fmt::Debug>(value: fn(usize) -> T) {
        // (1030, 70): one strip off the lines; (2100, 42): more rows than a strip (rows of 58
        // elements: off the lines for four- and eight-byte elements alike); both gathered
        // where the view is unpadded (`transpose::gathers`). Past the threads'
        // split (`PARALLEL_WORK`): (600, 520) cut along its rows, (300, 700) and (1030, 1040)
        // along its columns (the longer loop), the latter's parts in strips off the lines
        // each starting mid-row.
        const { assert!(1030 >= OFF_LINES_FROM && 1030 < OFF_LINES_ROWS && 2100 > OFF_LINES_ROWS) };
        const { assert!(300 * 700 * 2 >= PARALLEL_WORK) };
        let shapes = [
            (9, 16),
            (64, 48),
            (70, 131),
            (130, 64),
            (600, 520),
            (300, 700),
            (1030, 70),
            (2100, 42),
            (1030, 1040),
        ];
        for (rows, columns) in shapes {
            let a = Tensor::<T>::from_fn([columns, rows], |ix| value(ix[0] * rows + ix[1]));
            for (skip, pad) in [(0, 0), (1, 15), (3, 13), (0, 16), (5, 0), (8, 16)] {
                let wide = skip + columns + pad;
                // The large shape (past the threads' split) once, as it runs slowly under the
                // sanitizers.
                if (rows >= 600 || columns >= 600) && !matches!((skip, pad), (8, 16) | (3, 13)) {
                    continue;
                }
                if rows * columns > 1 << 20 && (skip, pad) != (3, 13) {
                    continue;
                }
                for threads in [1, 2] {
                    let mut c = Tensor::<T>::from_fn([rows, wide], |ix| value(ix[1] + 7));
                    let before = c.clone();
                    let streamed = count_streamed(threads, true, &STREAMED_TILES, || {
                        let view = c.view_mut().slice_axis(1, skip..skip + columns);
                        copy_transposed(&view, &a, [rows, columns]);
                    });
                    let case = format!("{rows} × {columns} in rows of {wide}, {threads} threads");
                    let whole_lines = (wide * size_of::<T>()).is_multiple_of(64);
                    let aligned =
                        (c.as_slice()[skip..].as_ptr() as usize).is_multiple_of(size_of::<T>());
                    if threads == 1 {
                        // (Other threads count on their own.) Rows off the lines in strips of
                        // whole rows, where `stream_off_lines` has a kernel.
                        // Rows of a few dozen elements off the lines, the target one run of
                        // them (the view unpadded), gathered and streamed as runs instead.
                        let line = LINE / size_of::<T>();
                        let gathered = wide == columns && gathers::<T>(columns);
                        let off_lines = streams_off_lines::<T>()
                            && (rows >= OFF_LINES_FROM
                                || rows >= line && columns >= OFF_LINES_LONG)
                            && columns > 2 * line
                            && !gathered;
                        let may = (whole_lines || off_lines || gathered)
                            && aligned
                            && streams::<T>()
                            && transposes::<T>();
                        assert_eq!(streamed > 0, may, "{case}");
                    }
                    for i in 0..rows {
                        for j in 0..wide {
                            let want = if (skip..skip + columns).contains(&j) {
                                a[[j - skip, i]]
                            } else {
                                before[[i, j]]
                            };
                            assert_eq!(c[[i, j]], want, "{case} at ({i}, {j})");
                        }
                    }
                }
            }
        }
    }

    /// `c[s, i, j] = a[s, j, i]` streamed whatever the size, one tile per `s`, each tile's
    /// target one run (rows `columns` apart) starting wherever `s · rows · columns` elements
    /// from the allocation put it, on a line boundary or off one: every tile is streamed
    /// through the buffer as its run (no row holds a whole line, so `stream_tile` could stream
    /// none), and every element matches the source.
    fn check_streamed_runs_off_the_lines<T: Element + std::fmt::Debug>(value: fn(usize) -> T) {
        // 13 · 12 elements of four bytes are 48 bytes past a line, of eight bytes 32: the
        // slots start at every offset from a line the allocation allows.
        let (slots, rows, columns) = (5, 13, 12);
        let a = Tensor::<T>::from_fn([slots, columns, rows], |ix| {
            value((ix[0] * columns + ix[1]) * rows + ix[2])
        });
        for threads in [1, 2] {
            let mut c = Tensor::<T>::zeros([slots, rows, columns]);
            let streamed = count_streamed(threads, true, &STREAMED_TILES, || {
                let target = TargetOwned::__tdsl_target(&mut c);
                copy(Step::new(
                    target.at(&[Axis::Loop(0), Axis::Loop(1), Axis::Loop(2)]),
                    Mode::Assign,
                    T::ONE,
                    [slots, rows, columns],
                    3,
                    [a.__tdsl_operand()
                        .at(&[Axis::Loop(0), Axis::Loop(2), Axis::Loop(1)])],
                ));
            });
            if threads == 1 && streams::<T>() && transposes::<T>() {
                // (Other threads count on their own.)
                assert_eq!(streamed, slots, "{threads} threads");
            }
            for s in 0..slots {
                for i in 0..rows {
                    for j in 0..columns {
                        assert_eq!(
                            c[[s, i, j]],
                            a[[s, j, i]],
                            "{threads} threads at {s}, {i}, {j}"
                        );
                    }
                }
            }
        }
    }

    /// `c[s, i, j] = a[s, j, i]` streamed whatever the size, rows longer than a tile (so, with
    /// AVX-512, tiles one target line wide) and every target row a whole number of lines
    /// apart: the blocks of columns run outermost, each over every `s`, with the first block
    /// up to the rows' first line boundary (a view `skip` elements into a wider tensor);
    /// every element matches the source and nothing outside the view is written.
    fn check_line_wide_tiles_across_outer_loops<T: Element + std::fmt::Debug>(
        value: fn(usize) -> T,
    ) {
        let (slots, rows, columns) = (3, 20, 80);
        let a = Tensor::<T>::from_fn([slots, columns, rows], |ix| {
            value((ix[0] * columns + ix[1]) * rows + ix[2])
        });
        // Rows of 96 elements: whole lines apart for four- and eight-byte elements.
        let wide = 96;
        for skip in [0, 3, 16] {
            for threads in [1, 2] {
                let mut c = Tensor::<T>::from_fn([slots, rows, wide], |ix| value(ix[2] + 7));
                let before = c.clone();
                count_streamed(threads, true, &STREAMED_TILES, || {
                    let view = c.view_mut().slice_axis(2, skip..skip + columns);
                    let target = TargetShared::__tdsl_target(&view);
                    copy(Step::new(
                        target.at(&[Axis::Loop(0), Axis::Loop(1), Axis::Loop(2)]),
                        Mode::Assign,
                        T::ONE,
                        [slots, rows, columns],
                        3,
                        [a.__tdsl_operand()
                            .at(&[Axis::Loop(0), Axis::Loop(2), Axis::Loop(1)])],
                    ));
                });
                for s in 0..slots {
                    for i in 0..rows {
                        for j in 0..wide {
                            let want = if (skip..skip + columns).contains(&j) {
                                a[[s, j - skip, i]]
                            } else {
                                before[[s, i, j]]
                            };
                            assert_eq!(
                                c[[s, i, j]],
                                want,
                                "skip {skip}, {threads} threads at {s}, {i}, {j}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// `c[p, s, i, j] = a[p, s, j, i]` streamed whatever the size, rows longer than a tile
    /// (tiles one target line wide, with AVX-512) and `s` of 70 points: each point of `p`
    /// moves its tiles a brick of `BRICK` points of `s` at a time (two whole bricks and one
    /// of six). The target is a view `skip` elements into rows of 48, the source a view
    /// `from` elements into columns of 48, so the source columns' first line boundary falls
    /// inside the tile (rows before it moved apart from the streamed blocks), and 37 rows
    /// leave some past the last whole block: every element matches the source and nothing
    /// outside the view is written.
    fn check_bricks<T: Element + std::fmt::Debug>(value: fn(usize) -> T) {
        // 70 of 72 slots of each side: a brick past the loop's end would read and write the
        // spare slots, which the check below finds changed.
        let (planes, slots, rows, columns, wide, all) = (2, 70, 37, 40, 48, 72);
        const { assert!(70 > 2 * BRICK && 70 % BRICK != 0) };
        let a = Tensor::<T>::from_fn([planes, all, columns, wide], |ix| {
            value(((ix[0] * all + ix[1]) * columns + ix[2]) * wide + ix[3])
        });
        for (skip, from) in [(0, 0), (5, 3), (8, 0), (0, 11)] {
            for threads in [1, 2] {
                let mut c = Tensor::<T>::from_fn([planes, all, rows, wide], |ix| value(ix[3] + 7));
                let before = c.clone();
                let source = a
                    .view()
                    .slice_axis(1, 0..slots)
                    .slice_axis(3, from..from + rows);
                let bricks = count_streamed(threads, true, &BRICKS, || {
                    let view = c
                        .view_mut()
                        .slice_axis(1, 0..slots)
                        .slice_axis(3, skip..skip + columns);
                    let target = TargetShared::__tdsl_target(&view);
                    let loops = [Axis::Loop(0), Axis::Loop(1), Axis::Loop(2), Axis::Loop(3)];
                    let transposed = [Axis::Loop(0), Axis::Loop(1), Axis::Loop(3), Axis::Loop(2)];
                    copy(Step::new(
                        target.at(&loops),
                        Mode::Assign,
                        T::ONE,
                        [planes, slots, rows, columns],
                        4,
                        [source.__tdsl_operand().at(&transposed)],
                    ));
                });
                let case = format!("skip {skip}, from {from}, {threads} threads");
                if threads == 1 && streams::<T>() && transposes::<T>() && streams_by_lines::<T>() {
                    // Two points of `p`, three bricks each, a call per block of columns:
                    // up to the rows' first line boundary, then a line each (other threads
                    // count on their own).
                    let line = LINE / size_of::<T>();
                    let lead = ((line - skip % line) % line).min(columns);
                    let blocks = usize::from(lead > 0) + (columns - lead).div_ceil(line);
                    assert_eq!(bricks, planes * 3 * blocks, "{case}");
                }
                for p in 0..planes {
                    for s in 0..all {
                        for i in 0..rows {
                            for j in 0..wide {
                                let want = if s < slots && (skip..skip + columns).contains(&j) {
                                    a[[p, s, j - skip, from + i]]
                                } else {
                                    before[[p, s, i, j]]
                                };
                                assert_eq!(c[[p, s, i, j]], want, "{case} at {p}, {s}, {i}, {j}");
                            }
                        }
                    }
                }
            }
        }
    }

    /// `c[i, j] = a[j, i]` streamed whatever the size, 37 rows of 600 columns in rows of 608
    /// (a view `skip` in), the source a view `from` rows into columns of 48: after the
    /// columns up to the first line boundary, the whole lines' tiles go in bricks of `BRICK`
    /// side by side (and one of the rest, where it holds two or more), the columns past the
    /// last whole line apart; every element matches and nothing outside the view changes.
    fn check_column_bricks<T: Element + std::fmt::Debug>(value: fn(usize) -> T) {
        let (rows, columns, wide, tall) = (37, 600, 608, 48);
        let a = Tensor::<T>::from_fn([columns, tall], |ix| value(ix[0] * tall + ix[1]));
        for (skip, from) in [(0, 0), (5, 3), (3, 11)] {
            for threads in [1, 2] {
                let mut c = Tensor::<T>::from_fn([rows, wide], |ix| value(ix[1] + 7));
                let before = c.clone();
                let source = a.view().slice_axis(1, from..from + rows);
                let bricks = count_streamed(threads, true, &BRICKS, || {
                    let view = c.view_mut().slice_axis(1, skip..skip + columns);
                    copy_transposed(&view, &source, [rows, columns]);
                });
                let case = format!("skip {skip}, from {from}, {threads} threads");
                if threads == 1 && streams::<T>() && transposes::<T>() && streams_by_lines::<T>() {
                    let line = LINE / size_of::<T>();
                    let lead = ((line - skip % line) % line).min(columns);
                    let lines = (columns - lead) / line;
                    let expected = lines / BRICK + usize::from(lines % BRICK >= 2);
                    assert_eq!(bricks, expected, "{case}");
                }
                for i in 0..rows {
                    for j in 0..wide {
                        let want = if (skip..skip + columns).contains(&j) {
                            a[[j - skip, from + i]]
                        } else {
                            before[[i, j]]
                        };
                        assert_eq!(c[[i, j]], want, "{case} at {i}, {j}");
                    }
                }
            }
        }
    }

    #[test]
    fn bricks_of_line_wide_tiles_match_their_source() {
        check_column_bricks::<f32>(|n| n as f32 + 0.5);
        check_column_bricks::<f64>(|n| n as f64 - 0.25);
        check_column_bricks::<crate::element::c32>(|n| {
            crate::element::c32::new(n as f32, -(n as f32))
        });
        check_bricks::<f32>(|n| n as f32 + 0.5);
        check_bricks::<f64>(|n| n as f64 - 0.25);
        check_bricks::<i32>(|n| 0x7f80_0001 + n as i32);
        check_bricks::<crate::element::c32>(|n| crate::element::c32::new(n as f32, -(n as f32)));
        check_bricks::<crate::element::c64>(|n| crate::element::c64::new(n as f64, 0.5 - n as f64));
    }

    #[test]
    fn line_wide_tiles_across_outer_loops_match_their_source() {
        check_line_wide_tiles_across_outer_loops::<f32>(|n| n as f32 + 0.5);
        check_line_wide_tiles_across_outer_loops::<f64>(|n| n as f64 - 0.25);
    }

    #[test]
    fn streamed_runs_off_the_lines_match_their_source() {
        check_streamed_runs_off_the_lines::<f32>(|n| n as f32 + 0.5);
        check_streamed_runs_off_the_lines::<f64>(|n| n as f64 - 0.25);
        check_streamed_runs_off_the_lines::<i32>(|n| 0x7f80_0001 + n as i32);
    }

    #[test]
    fn streamed_transposes_match_their_source() {
        // Both sizes the streamed tiles take, a real complex number (two four-byte parts),
        // and bits no arithmetic would keep (signalling NaNs as `f32`).
        check_streamed_transpose::<f32>(|n| n as f32 + 0.5);
        check_streamed_transpose::<f64>(|n| n as f64 - 0.25);
        check_streamed_transpose::<i32>(|n| 0x7f80_0001 + n as i32);
        check_streamed_transpose::<crate::element::c32>(|n| {
            crate::element::c32::new(n as f32, -(n as f32))
        });
    }

    #[test]
    fn loops_that_continue_one_another_merge() {
        // `c[i, j, k] = a[i, j, k]`, both contiguous: one loop of 24.
        let contiguous = [[12], [4], [1]];
        assert_eq!(merged([2, 3, 4], 0, &[12, 4, 1], &contiguous), [1, 1, 24]);
        // The operand continues only its last two loops, and a loop of one between changes
        // nothing.
        assert_eq!(
            merged([2, 1, 3, 4], 0, &[12, 12, 4, 1], &[[20], [5], [4], [1]]),
            [2, 1, 1, 12]
        );
        // Transposed operand: nothing merges.
        assert_eq!(
            merged([2, 3, 4], 0, &[12, 4, 1], &[[1], [2], [6]]),
            [2, 3, 4]
        );
        // Reversed in both, and an operand read along no loop: still continuous.
        assert_eq!(merged([3, 4], 0, &[-4, -1], &[[-4, 0], [-1, 0]]), [1, 12]);
        // Only loops from `from` on: a target loop of extent 2 whose stride happens to
        // continue the summed ones stays apart from them.
        assert_eq!(merged([2, 3, 4], 1, &[0, 0, 0], &contiguous), [2, 1, 12]);
        assert_eq!(merged([2, 3, 4], 0, &[0, 0, 0], &contiguous), [1, 1, 24]);
    }

    /// A point-wise copy `c[..] = α · a[..]` through `copy`, the source's axes the target's
    /// loops in `order`, into a target of its own or into a view of a wider tensor (rows out
    /// of step with any alignment), against the source's elements, with 1 and 2 threads;
    /// with `stream`, streamed whatever the size.
    fn check_copy<T: Element + std::fmt::Debug>(
        shape: [usize; 3],
        value: fn(usize) -> T,
        stream: bool,
    ) {
        let count: usize = shape.iter().product();
        let orders = [[1, 0, 2], [0, 1, 2], [2, 1, 0]];
        // Large tensors (slow under the sanitizers): the order that streams with the
        // operand's loop order only.
        let orders = if count > 1 << 16 {
            &orders[..1]
        } else {
            &orders
        };
        for &order in orders {
            let source_shape = order.map(|loop_| shape[loop_]);
            let a = Tensor::<T>::from_fn(source_shape, |ix| {
                value(ix[0] * source_shape[1] * source_shape[2] + ix[1] * source_shape[2] + ix[2])
            });
            let expected = |point: [usize; 3]| {
                let ix = order.map(|loop_| point[loop_]);
                a.as_slice()
                    [ix[0] * source_shape[1] * source_shape[2] + ix[1] * source_shape[2] + ix[2]]
            };
            let cases = [
                (Mode::Assign, T::ONE, 2),
                (Mode::Assign, T::ONE, 1),
                (Mode::Add, T::ONE, 1),
                (Mode::Assign, T::ONE.plus(T::ONE), 2),
            ];
            // Large tensors: the streamed case only.
            let cases = if count > 1 << 16 { &cases[..1] } else { &cases };
            for &(mode, alpha, threads) in cases {
                for in_view in [false, true] {
                    let wide = [shape[0], shape[1], shape[2] + in_view as usize];
                    let mut c = Tensor::<T>::from_fn(wide, |ix| value(ix[2] + 7));
                    let before = c.clone();
                    let streamed = count_streamed(threads, stream, &STREAMED_RUNS, || {
                        let view = c.view_mut().slice_axis(2, wide[2] - shape[2]..wide[2]);
                        let target = TargetShared::__tdsl_target(&view);
                        let axes = order.map(Axis::Loop);
                        copy(Step::new(
                            target.at(&[Axis::Loop(0), Axis::Loop(1), Axis::Loop(2)]),
                            mode,
                            alpha,
                            shape,
                            3,
                            [a.__tdsl_operand().at(&axes)],
                        ));
                    });
                    // Streamed where it may be: a plain copy (not transposed, which goes in
                    // tiles) with one thread (the others count on their own threads), of runs
                    // two lines long or more (all the loops merge into one unless the target
                    // is a view or the outer two are swapped).
                    let run = if order == [0, 1, 2] && !in_view {
                        count
                    } else {
                        shape[2]
                    };
                    let may = (stream || count * size_of::<T>() >= STREAM_BYTES)
                        && run * size_of::<T>() >= 2 * LINE
                        && streams::<T>()
                        && order != [2, 1, 0]
                        && matches!(mode, Mode::Assign)
                        && alpha == T::ONE;
                    if threads == 1 {
                        assert_eq!(streamed > 0, may, "order {order:?}, view {in_view}");
                    }
                    for at in 0..count {
                        let point = [
                            at / (shape[1] * shape[2]),
                            at / shape[2] % shape[1],
                            at % shape[2],
                        ];
                        let offset =
                            (point[0] * wide[1] + point[1]) * wide[2] + point[2] + in_view as usize;
                        let value = alpha.times(expected(point));
                        let want = match mode {
                            Mode::Add => before.as_slice()[offset].plus(value),
                            _ => value,
                        };
                        assert_eq!(
                            c.as_slice()[offset],
                            want,
                            "order {order:?}, {threads} threads, view {in_view}: {point:?}"
                        );
                    }
                    if in_view {
                        for row in 0..shape[0] * shape[1] {
                            let offset = row * wide[2];
                            assert_eq!(c.as_slice()[offset], before.as_slice()[offset]);
                        }
                    }
                }
            }
        }
    }

    /// `t[i, k, j] = s[i, j, k]` and `t[i, j, k] = s[i, k, j]` with `k` two to four (an
    /// image's channels split off and gathered in), streamed and not, on one and two threads:
    /// every element matches the source.
    fn check_narrow_copies<T: Element + std::fmt::Debug>(value: fn(usize) -> T) {
        // One pool per case of streaming and threads (pools are slow to make under the
        // sanitizers), every shape inside it.
        for (stream, threads) in [(false, 1), (true, 1), (true, 2)] {
            count_streamed(threads, stream, &STREAMED_TILES, || {
                for (outer, long) in [(1, 1), (7, 13), (3, 1500), (2, 4100)] {
                    for short in 1..=5 {
                        for split in [true, false] {
                            let source_shape = if split {
                                [outer, long, short]
                            } else {
                                [outer, short, long]
                            };
                            let s = Tensor::<T>::from_fn(source_shape, |ix| {
                                value((ix[0] * source_shape[1] + ix[1]) * source_shape[2] + ix[2])
                            });
                            let target_shape = [source_shape[0], source_shape[2], source_shape[1]];
                            let mut t = Tensor::<T>::zeros(target_shape);
                            let target = t.__tdsl_target();
                            copy(Step::new(
                                target.at(&[Axis::Loop(0), Axis::Loop(1), Axis::Loop(2)]),
                                Mode::Assign,
                                T::ONE,
                                target_shape,
                                3,
                                [s.__tdsl_operand().at(&[
                                    Axis::Loop(0),
                                    Axis::Loop(2),
                                    Axis::Loop(1),
                                ])],
                            ));
                            for i in 0..target_shape[0] {
                                for a in 0..target_shape[1] {
                                    for b in 0..target_shape[2] {
                                        assert_eq!(
                                            t[[i, a, b]],
                                            s[[i, b, a]],
                                            "{source_shape:?}, stream {stream}, {threads} \
                                             threads: ({i}, {a}, {b})"
                                        );
                                    }
                                }
                            }
                        }
                    }
                }
            });
        }
    }

    #[test]
    fn copies_keeping_short_runs_while_their_rows_and_columns_swap_match_their_source() {
        // `t[w, h, c] = s[h, w, c]`: runs of two to four go to `copy_runs`, the others the
        // nest's way; on one and two threads.
        for threads in [1, 2] {
            count_streamed(threads, false, &STREAMED_TILES, || {
                for c in 1..=5 {
                    for (h, w) in [(1, 9), (7, 13), (130, 67)] {
                        let s = Tensor::<f32>::from_fn([h, w, c], |ix| {
                            ((ix[0] * w + ix[1]) * c + ix[2]) as f32
                        });
                        let mut t = Tensor::<f32>::zeros([w, h, c]);
                        let target = t.__tdsl_target();
                        copy(Step::new(
                            target.at(&[Axis::Loop(0), Axis::Loop(1), Axis::Loop(2)]),
                            Mode::Assign,
                            1.0,
                            [w, h, c],
                            3,
                            [s.__tdsl_operand()
                                .at(&[Axis::Loop(1), Axis::Loop(0), Axis::Loop(2)])],
                        ));
                        for x in 0..w {
                            for y in 0..h {
                                for k in 0..c {
                                    assert_eq!(
                                        t[[x, y, k]],
                                        s[[y, x, k]],
                                        "{h} × {w} × {c}, {threads} threads"
                                    );
                                }
                            }
                        }
                    }
                }
            });
        }
    }

    #[test]
    fn narrow_copies_match_their_source() {
        check_narrow_copies::<f32>(|n| (n % 1009) as f32);
        check_narrow_copies::<f64>(|n| n as f64 - 7.0);
    }

    #[test]
    fn streamed_and_merged_copies_match_their_source() {
        // Streamed (where the mode assigns with α = 1) in both element sizes the streamed
        // stores take, and a real complex number (two four-byte parts), with runs shorter
        // and longer than a vector, and not; integer values, so every copy is exact.
        for stream in [true, false] {
            check_copy::<f32>([7, 13, 33], |n| (n % 1009) as f32, stream);
            check_copy::<f64>([3, 5, 9], |n| n as f64 - 7.0, stream);
            check_copy::<crate::element::c32>(
                [2, 3, 5],
                |n| crate::element::c32::new(n as f32, 1.0),
                stream,
            );
            check_copy::<i32>([1, 6, 2], |n| n as i32, stream);
        }
        // Past `STREAM_BYTES`: streamed by size.
        const { assert!(130 * 130 * 131 * 4 > STREAM_BYTES) };
        check_copy::<f32>([130, 130, 131], |n| (n % 1009) as f32, false);
    }

    #[test]
    fn copies_stream_by_size_unless_powers_of_two_fit_half_the_cache() {
        let row_major = |extents: &[usize]| -> Vec<isize> {
            let mut strides = vec![0; extents.len()];
            let mut count = 1;
            for (stride, &extent) in strides.iter_mut().zip(extents).rev() {
                *stride = count;
                count *= extent as isize;
            }
            strides
        };
        // Transposed: the source row-major over the loops reversed.
        let reversed = |extents: &[usize]| -> Vec<isize> {
            let reversed: Vec<usize> = extents.iter().rev().copied().collect();
            row_major(&reversed).into_iter().rev().collect()
        };
        let streams = |extents: &[usize], cache: Option<usize>| {
            streams_in::<f32>(extents, &row_major(extents), &reversed(extents), cache)
        };
        let l3 = Some(32 << 20);
        // 8 MiB, every stride a power of two: cached next to 32 MiB, streamed next to less or
        // where the cache is not known.
        assert!(!streams(&[128, 128, 128], l3));
        assert!(streams(&[128, 128, 128], Some(16 << 20)));
        assert!(streams(&[128, 128, 128], None));
        // Half the cache or more, strides not all powers of two, or under `STREAM_BYTES`.
        assert!(streams(&[16, 16, 64, 16, 16], l3));
        assert!(streams(&[256, 256, 256], l3));
        assert!(streams(&[140, 140, 140], l3));
        assert!(streams(&[96, 40, 96, 8], l3));
        assert!(!streams(&[64, 64, 64], None));
        // No stride of a page: transposed rows 2 KiB apart stream.
        assert!(streams(&[1 << 12, 512], l3));
        // A copy that moves its runs as they lie has no tiles: 8 MiB streams.
        let plain = row_major(&[2048, 1024]);
        assert!(streams_in::<f32>(&[2048, 1024], &plain, &plain, l3));
        // Loops of one point have no say, whatever their stride; reversed rows count by size.
        let mut strides = row_major(&[128, 1, 128, 128]);
        strides[1] = 7;
        strides[0] = -strides[0];
        let source = reversed(&[128, 1, 128, 128]);
        assert!(!streams_in::<f32>(
            &[128, 1, 128, 128],
            &strides,
            &source,
            l3
        ));
        assert!(streams_in::<f64>(
            &[128, 1, 128, 128],
            &strides,
            &source,
            l3
        ));
    }

    #[test]
    fn streamed_broadcasts_match_their_source() {
        // `c[i, j] = a[j]` and `c[i, j] = a[i]`, streamed: the operand's loop order would put
        // the loop it does not walk innermost; the target's order is kept.
        let a = Tensor::<f32>::from_fn([37], |ix| ix[0] as f32 + 0.5);
        for along in [0, 1] {
            let mut c = Tensor::<f32>::zeros([29, 37]);
            let target = c.__tdsl_target();
            STREAM_ALWAYS.with(|flag| flag.set(true));
            STREAMED_RUNS.with(|runs| runs.set(0));
            let axis = if along == 0 {
                Axis::Loop(1)
            } else {
                Axis::Loop(0)
            };
            let a = if along == 0 {
                a.clone()
            } else {
                Tensor::<f32>::from_fn([29], |ix| ix[0] as f32 - 3.0)
            };
            copy(Step::new(
                target.at(&[Axis::Loop(0), Axis::Loop(1)]),
                Mode::Assign,
                1.0,
                [29, 37],
                2,
                [a.__tdsl_operand().at(&[axis])],
            ));
            STREAM_ALWAYS.with(|flag| flag.set(false));
            // `a[j]` streams its rows (the target's order kept); `a[i]` has no run to stream.
            let streamed = STREAMED_RUNS.with(|runs| runs.get());
            assert_eq!(
                streamed > 0,
                along == 0 && streams::<f32>(),
                "along {along}"
            );
            for i in 0..29 {
                for j in 0..37 {
                    let want = a.as_slice()[if along == 0 { j } else { i }];
                    assert_eq!(c[[i, j]], want, "along {along} at ({i}, {j})");
                }
            }
        }
    }

    #[test]
    fn cascade_adds_pairwise() {
        let mut cascade = Cascade::<f64>::new();
        for value in 1..=1000 {
            cascade.add(f64::from(value));
        }
        assert_eq!(cascade.total(), 500_500.0);
        assert_eq!(pairwise([1.0f64; LANES]), LANES as f64);
    }

    #[test]
    fn lane_cascade_adds_lanes_pairwise() {
        // Past its top level twice, then a few blocks more, and values summed apart: every
        // lane and value counted once.
        let blocks = 2 * (1 << LANE_LEVELS) + 3;
        let mut cascade = LaneCascade::<f64>::new();
        for block in 0..blocks {
            cascade.add_lanes(std::array::from_fn(|lane| (block * LANES + lane) as f64));
        }
        cascade.add(0.5);
        let n = blocks * LANES;
        assert_eq!(cascade.total(), (n * (n - 1) / 2) as f64 + 0.5);
        // Pairwise, not in order: 2^20 lanes' worth of 0.1 in f32 (each lane 2^16 values),
        // added in order, drift by ~1e-4 relative; pairwise, by ~1e-7.
        let mut cascade = LaneCascade::<f32>::new();
        for _ in 0..1 << 16 {
            cascade.add_lanes([0.1; LANES]);
        }
        let exact = f64::from(0.1f32) * (1u64 << 20) as f64;
        let error = (f64::from(cascade.total()) - exact).abs() / exact;
        assert!(error < 1e-6, "relative error {error}");
    }
}

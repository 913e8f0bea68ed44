//! A point-wise step over runs (`DenseTarget::pointwise`: every access has the target's indices
//! in the target's order, each read as one run of its elements) → that loop, split between the
//! pool's threads where the step is large enough to share (`PARALLEL_WORK`, as for loop nests).
//! Invariant: a part writes only its own range of the target's offsets and reads the runs at
//! those offsets only, so no two threads touch one element unless both only read it.
//!
//! Generated code takes this path at every size where each access is dense (an owned tensor's
//! whole buffer always is), so a statement over owned tensors has no general path left for the
//! compiler to keep beside its loop (a 4 × 4 `c = a + b` on tensors takes half the time), but
//! for a step of one tensor's elements scaled or added (`c = a`, `c = 2·a`, `c += a`), which
//! past the threshold keeps the general kernel (its copy engines).

use crate::element::Element;
use crate::operand::access::Mode;
use crate::operand::dense::{DenseRun, DenseTarget};
use crate::operand::extents::ExtentsType;

use super::loop_nest::PARALLEL_WORK;
use super::parallel::for_each_part;

/// `DenseTarget::pointwise(runs, mode, alpha, body)` of `target`, on the pool's threads where
/// its points times its arrays reach `PARALLEL_WORK` and the pool has more than one; the same
/// operations on every element either way (each element is computed from its own offset
/// alone), so the bits do not depend on the split.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn pointwise<T: Element, E: ExtentsType, const N: usize>(
    target: &DenseTarget<'_, T, E>,
    runs: [DenseRun<'_, T>; N],
    mode: Mode<T>,
    alpha: T,
    body: impl Fn([T; N]) -> T + Sync,
) {
    if target.elements().saturating_mul(N + 1) < PARALLEL_WORK {
        return target.pointwise(runs, mode, alpha, body);
    }
    #[cfg(tdsl_unoptimized)]
    let body: &(dyn Fn([T; N]) -> T + Sync) = &body;
    // The whole target as a new value, so the statement's own never has its address taken
    // and stays in registers on the path above.
    in_parts(target.part(0..target.elements()), runs, mode, alpha, &body);
}

/// A large [`pointwise`]: one part a thread, each a range of offsets in all runs at once.
#[inline(never)]
fn in_parts<T: Element, E: ExtentsType, const N: usize>(
    target: DenseTarget<'_, T, E>,
    runs: [DenseRun<'_, T>; N],
    mode: Mode<T>,
    alpha: T,
    body: &(impl Fn([T; N]) -> T + Sync),
) {
    let elements = target.elements();
    let threads = rayon::current_num_threads();
    // Threads may share the work only if no run overlaps the target other than as its own
    // point-wise read (the same first element and length): generated code hands none other,
    // and one that did would have a thread read what another writes.
    let written = target.address_range();
    let apart = runs.iter().all(|run| {
        let read = run.address_range();
        read == written || read.end <= written.start || written.end <= read.start || read.is_empty()
    });
    if threads < 2 || !apart || runs.iter().any(|run| run.elements() != elements) {
        // One thread (a run of another length panics there, before anything is written).
        return target.pointwise_large(runs, mode, alpha, body);
    }
    // A whole number of lines per part: on a tensor made here, whose buffer starts on a line
    // once it is 4 KiB or more, no two threads write one line (elsewhere they may share the
    // lines at the parts' ends, which costs time only).
    let line = (64 / size_of::<T>().max(1)).max(1);
    let each = elements.div_ceil(threads).next_multiple_of(line);
    let parts = elements.div_ceil(each);
    let shared = Shared((&target, runs));
    for_each_part(parts, &|part| {
        let Shared((target, runs)) = &shared;
        let range = part * each..((part + 1) * each).min(elements);
        let runs = runs.map(|run| run.part(range.clone()));
        target.part(range).pointwise_large(runs, mode, alpha, body);
    });
}

/// The target and runs as the parts see them.
struct Shared<X>(X);

// SAFETY: a part uses the target and the runs only through `part`, at the offsets of its own
// range, disjoint from every other part's: the target's elements there are written by that
// part alone, and a run is either apart from the target (checked in `in_parts`, so only read,
// by any thread) or the target's own point-wise read, whose element at an offset only that
// offset's part reads, before writing it. The elements are `Element`s (`Send + Sync`), and
// every part ends before `in_parts` returns (`for_each_part` waits), inside the borrows.
unsafe impl<X> Sync for Shared<X> {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operand::access::{Access, RawAccess, TargetAccess};
    use crate::operand::extents::{Dynamic, StaticLayout};

    fn on_threads<R: Send>(threads: usize, f: impl FnOnce() -> R + Send) -> R {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("a thread pool")
            .install(f)
    }

    /// `buffer[k] = 2·buffer[k + shift] + 1` for `k` below `n` through `pointwise`, the run
    /// read at `shift` elements past the target's first (0: the target's own read).
    fn shifted(buffer: &mut [f64], n: usize, shift: isize, threads: usize) {
        on_threads(threads, || {
            let (shape, strides) = ([n], [1isize]);
            let (data, len) = (buffer.as_mut_ptr(), buffer.len());
            let layout = StaticLayout::<Dynamic>::claiming(&shape, 1);
            // SAFETY: `data` is `buffer`'s, borrowed mutably for this closure.
            let target =
                unsafe { TargetAccess::new(RawAccess::new(data, len, &shape[..], &strides, 0)) };
            let read = Access::new(RawAccess::new(data, len, &shape[..], &strides, shift));
            let target = target.as_dense(layout).unwrap();
            let read = read.as_dense(layout).unwrap();
            pointwise(&target, [read.run()], Mode::Assign, 1.0, |[x]| {
                2.0 * x + 1.0
            });
        });
    }

    /// Large enough to share between threads: parts of uneven length give each element the
    /// value one thread gives it; a run that overlaps the target elsewhere than in place (no
    /// statement hands one, a safe caller may) keeps the one thread, whose order it needs.
    #[test]
    fn parts_compute_what_one_thread_computes() {
        let n = PARALLEL_WORK / 2 + 1237;
        let start: Vec<f64> = (0..=n).map(|k| (k % 1000) as f64).collect();
        for shift in [0, 1] {
            let mut expected = start.clone();
            for k in 0..n {
                expected[k] = 2.0 * expected[k + shift] + 1.0;
            }
            for threads in [1, 2, 3, 5] {
                let mut buffer = start.clone();
                shifted(&mut buffer, n, shift as isize, threads);
                assert!(buffer == expected, "shift {shift}, {threads} threads");
            }
        }
    }
}

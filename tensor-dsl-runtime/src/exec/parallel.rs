//! Parts of a step → the pool's threads, through trait objects. Invariant: rayon's job
//! machinery is compiled once per element type at most, not once per engine instance (each
//! loop count, operand count and body type), which is most of what a statement would add to
//! a build otherwise; a part's work is large (a thread's share), so one dynamic call per part
//! costs nothing measurable.

use rayon::prelude::*;

/// Runs `work(part)` for every part in `0..parts`, on the pool's threads.
pub(crate) fn for_each_part(parts: usize, work: &(dyn Fn(usize) + Sync)) {
    (0..parts).into_par_iter().for_each(work);
}

/// `work(part)` for every part in `0..parts`, computed on the pool's threads, in part order.
pub(crate) fn map_parts<T: Send>(parts: usize, work: &(dyn Fn(usize) -> T + Sync)) -> Vec<T> {
    (0..parts).into_par_iter().map(work).collect()
}

/// Runs `work(part, chunk)` for the `size`-long chunks of `data` (the last may be shorter), on
/// the pool's threads: each part writes its own chunk.
pub(crate) fn for_each_chunk<T: Send>(
    data: &mut [T],
    size: usize,
    work: &(dyn Fn(usize, &mut [T]) + Sync),
) {
    data.par_chunks_mut(size)
        .enumerate()
        .for_each(|(part, chunk)| work(part, chunk));
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::{for_each_chunk, for_each_part, map_parts};

    #[test]
    fn every_part_runs_once() {
        let runs: Vec<AtomicUsize> = (0..37).map(|_| AtomicUsize::new(0)).collect();
        for_each_part(runs.len(), &|part| {
            runs[part].fetch_add(1, Ordering::Relaxed);
        });
        assert!(runs.iter().all(|count| count.load(Ordering::Relaxed) == 1));
        for_each_part(0, &|_| panic!("no part to run"));
    }

    #[test]
    fn parts_come_back_in_order() {
        assert_eq!(map_parts(5, &|part| part * part), [0, 1, 4, 9, 16]);
        assert!(map_parts(0, &|part| part).is_empty());
    }

    #[test]
    fn each_chunk_is_written_by_its_own_part() {
        let mut data = vec![0usize; 13];
        for_each_chunk(&mut data, 4, &|part, chunk| {
            assert!(chunk.len() == 4 || (part == 3 && chunk.len() == 1));
            chunk.fill(part + 1);
        });
        assert_eq!(data, [1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4]);
    }
}

//! A copy whose innermost loop is a run of two to four elements (or eight of four bytes)
//! contiguous in both its source and its target (an image's channels kept while its rows and
//! columns swap) → the target, each run moved as one element in tiles of the two loops along
//! which the source's runs and the target's follow one another. Invariant: every element named
//! is read once and written once, as it lies (as bytes, never computed on).

use super::parallel::for_each_part;
use super::transpose::{
    fence, prefetch_run, stream_tile, transpose_tile, transpose_triples, transposes,
};
use super::{meet, sort_loops};
use crate::tensor::memory::LINE;

/// The longest run moved as one element, but for runs of [`QUAD`] bytes.
const WIDEST: usize = 4;

/// The bytes of a run of eight four-byte elements, also moved as one element, where the CPU
/// has kernels for its size (`t[k, j, i, l] = s[i, j, k, l]` with `l` eight long, `f32`:
/// before, the loop nest gathered such runs at 0.37× a copy of the same bytes).
const QUAD: usize = 32;

/// A tile's side, in runs: 64 × 64 runs of up to 16 bytes, 32 × 32 of longer ones (up to
/// 64), stay in the second-level cache.
fn side<E>() -> usize {
    if size_of::<E>() <= 16 {
        64
    } else {
        32
    }
}

/// Copies `target[p] = source[p]` over the points `p` of `extents` (offsets `Σ p[v] ·
/// strides[v]` from each base) where one loop is a run of two to [`WIDEST`] elements (or of
/// eight making [`QUAD`] bytes, where the CPU transposes them) along
/// which both step by one element, every other loop steps whole runs in both, and the loops
/// that continue the runs differ between the two (the runs are transposed): the runs in
/// tiles, transposed by `transpose_tile` where it has kernels for their size (each tile's
/// whole target lines streamed around the caches by `stream_tile` where `stream`, each
/// thread's part fenced before it is done), runs of three by `transpose_triples` (streamed
/// likewise where the target rows start on lines), else run by run, on up to `threads`
/// threads.
/// Without those runs, or where the source's and the
/// target's elements could meet, returns `false` having touched nothing, and the caller
/// copies its own way; `true` once copied.
///
/// # Safety
/// Every element so addressed is valid, the source's for reads and the target's for writes;
/// the target's points address distinct elements (the runs go in another order than the
/// points); `T` has no padding bytes (as no element type has).
pub(super) unsafe fn copy_runs<T: Copy, const L: usize>(
    (source, source_strides): (*const T, &[isize; L]),
    (target, target_strides): (*mut T, &[isize; L]),
    extents: &[usize; L],
    threads: usize,
    stream: bool,
) -> bool {
    if extents.contains(&0) {
        // No point: nothing addressed, nothing to copy (the caller's loops say so too).
        return false;
    }
    let walked = |var: &usize| extents[*var] > 1;
    let Some(run) =
        (0..L).find(|&var| walked(&var) && source_strides[var] == 1 && target_strides[var] == 1)
    else {
        return false;
    };
    let width = extents[run];
    let others = || (0..L).filter(walked).filter(move |&var| var != run);
    let whole = |stride: isize| stride % width as isize == 0;
    let quad = width == 8 && width * size_of::<T>() == QUAD && transposes::<[T; 8]>();
    if !((2..=WIDEST).contains(&width) || quad)
        || others().any(|var| !whole(source_strides[var]) || !whole(target_strides[var]))
    {
        return false;
    }
    let follows = |strides: &[isize; L]| others().find(|&var| strides[var] == width as isize);
    let (Some(rows), Some(columns)) = (follows(source_strides), follows(target_strides)) else {
        return false;
    };
    if rows == columns || meet((source, source_strides), (target, target_strides), extents) {
        return false;
    }
    // In runs: strides divided by the width, the run loop gone.
    let mut loops = [Loop::default(); L];
    let mut outer = 0;
    let mut ranked: [usize; L] = std::array::from_fn(|var| var);
    sort_loops(&mut ranked, &|var| {
        std::cmp::Reverse(target_strides[var].unsigned_abs())
    });
    for var in ranked {
        if walked(&var) && var != run && var != rows && var != columns {
            loops[outer] = Loop::of(var, extents, source_strides, target_strides, width);
            outer += 1;
        }
    }
    let tile =
        [rows, columns].map(|var| Loop::of(var, extents, source_strides, target_strides, width));
    let copy = Runs {
        source: source.cast(),
        target: target.cast(),
        outer: loops,
        count: outer,
        tile,
        stream,
    };
    // SAFETY: the caller's elements, in runs of `width`; the tile's loops step one run along
    // the source (rows) and the target (columns), the others whole runs; the two sets of
    // elements do not meet (checked above).
    unsafe {
        match width {
            2 => copy.split::<[T; 2]>(threads),
            3 => copy.split::<[T; 3]>(threads),
            4 => copy.split::<[T; 4]>(threads),
            // Eight: `quad`, the only other width taken.
            _ => copy.split::<[T; 8]>(threads),
        }
    }
    true
}

/// One loop over runs: its extent, and its strides in runs.
#[derive(Clone, Copy, Default)]
struct Loop {
    extent: usize,
    source: isize,
    target: isize,
}

impl Loop {
    fn of<const L: usize>(
        var: usize,
        extents: &[usize; L],
        source_strides: &[isize; L],
        target_strides: &[isize; L],
        width: usize,
    ) -> Self {
        Loop {
            extent: extents[var],
            source: source_strides[var] / width as isize,
            target: target_strides[var] / width as isize,
        }
    }
}

/// The copy in runs: the bases (as bytes), the loops outside
/// the tiles (the first `count`, outermost first) and the tile's rows (one run apart in the
/// source) and columns (one run apart in the target).
struct Runs<const L: usize> {
    source: *const u8,
    target: *mut u8,
    outer: [Loop; L],
    count: usize,
    tile: [Loop; 2],
    /// Each tile's whole target lines streamed around the caches (`stream_tile`, or
    /// `transpose_triples`' streamed kernels), each part fenced before it is done.
    stream: bool,
}

// SAFETY: the threads that share a `Runs` (`Runs::split`) read its source and write disjoint
// parts of its target, as a copy's proof allows; the pointers are only read.
unsafe impl<const L: usize> Sync for Runs<L> {}

impl<const L: usize> Runs<L> {
    /// Copies every point, the first loop that walks cut into parts for up to `threads`
    /// threads (each part its own target elements).
    ///
    /// # Safety
    /// As [`copy_runs`], with runs of `E`.
    unsafe fn split<E: Copy>(&self, threads: usize) {
        let extent = |at: usize| {
            if at < self.count {
                self.outer[at].extent
            } else {
                self.tile[at - self.count].extent
            }
        };
        let Some(at) = (0..self.count + 2).find(|&at| extent(at) > 1) else {
            // SAFETY: forwarded (one point).
            return unsafe { self.fenced_part::<E>(0, 0..extent(0)) };
        };
        let length = extent(at);
        let parts = if threads > 1 {
            (threads * 4).min(length)
        } else {
            1
        };
        let start = |part: usize| length * part / parts;
        // SAFETY (each part): forwarded; the parts cut one loop into disjoint ranges, so each
        // writes target elements no other part does.
        for_each_part(parts, &|part| unsafe {
            self.fenced_part::<E>(at, start(part)..start(part + 1))
        });
    }

    /// [`Runs::part`], its streamed stores fenced.
    ///
    /// # Safety
    /// As [`Runs::split`].
    unsafe fn fenced_part<E: Copy>(&self, at: usize, range: std::ops::Range<usize>) {
        // SAFETY: forwarded.
        unsafe { self.part::<E>(at, range) };
        if self.stream {
            fence();
        }
    }

    /// Copies the points where loop `at` (the outer loops, then the tile's rows and columns)
    /// runs over `range`.
    ///
    /// # Safety
    /// As [`Runs::split`].
    unsafe fn part<E: Copy>(&self, at: usize, range: std::ops::Range<usize>) {
        let (mut outer, mut tile) = (self.outer, self.tile);
        let cut = if at < self.count {
            &mut outer[at]
        } else {
            &mut tile[at - self.count]
        };
        let size = size_of::<E>() as isize;
        // Wrapping: every address named is valid (the caller's proof), so the arithmetic
        // does not wrap for those.
        let skip = |stride: isize| {
            (range.start as isize)
                .wrapping_mul(stride)
                .wrapping_mul(size)
        };
        let source = self.source.wrapping_offset(skip(cut.source));
        let target = self.target.wrapping_offset(skip(cut.target));
        cut.extent = range.len();
        let outer = &outer[..self.count];
        if outer.iter().chain(&tile).any(|step| step.extent == 0) {
            return;
        }
        // An odometer over the outer loops.
        let mut counters = [0usize; L];
        loop {
            let (mut s, mut t) = (source, target);
            for (step, &counter) in outer.iter().zip(&counters) {
                s = s.wrapping_offset(
                    (counter as isize)
                        .wrapping_mul(step.source)
                        .wrapping_mul(size),
                );
                t = t.wrapping_offset(
                    (counter as isize)
                        .wrapping_mul(step.target)
                        .wrapping_mul(size),
                );
            }
            // SAFETY: a point of the caller's, in runs.
            unsafe { tiles::<E>(s.cast(), t.cast(), tile, self.stream) };
            let mut var = outer.len();
            loop {
                if var == 0 {
                    return;
                }
                var -= 1;
                counters[var] += 1;
                if counters[var] < outer[var].extent {
                    break;
                }
                counters[var] = 0;
            }
        }
    }
}

/// The runs of one point of the outer loops, in tiles of [`side`] × [`side`]: run `(r, c)`
/// from `source + r + c · columns.source` to `target + r · rows.target + c`, each tile's
/// whole target lines streamed where `stream` and `stream_tile` can (a tile's side is a whole
/// number of lines of runs, so its cached stores and the next tile's share no streamed line).
/// Runs of three (twelve or twenty-four bytes, which `transpose_tile` has no kernel for) go
/// to `transpose_triples`, streamed where the target rows start on cache lines (a tile's
/// side is then a whole number of lines too). Off the lines, they are stored the cached way:
/// staged a strip of rows at a time and streamed by `stream_run`, whose stores start and end
/// anywhere, they measured slower (`t[j, i, k] = s[i, j, k]` over 1000 × 1000 × 3 `f32`, one
/// thread: 0.30–0.33× a copy against 0.38–0.39×), each row's first and last lines written in
/// parts.
///
/// # Safety
/// Every run so addressed is valid (the source's for reads, the target's for writes), and no
/// target run is a source run. Where `stream`, the caller fences before anything else
/// touches the target.
unsafe fn tiles<E: Copy>(
    source: *const E,
    target: *mut E,
    [rows, columns]: [Loop; 2],
    stream: bool,
) {
    let side = side::<E>();
    for column in (0..columns.extent).step_by(side) {
        for row in (0..rows.extent).step_by(side) {
            let shape = [
                side.min(rows.extent - row),
                side.min(columns.extent - column),
            ];
            let from = source.wrapping_offset(row as isize + column as isize * columns.source);
            let to = target.wrapping_offset(row as isize * rows.target + column as isize);
            // SAFETY: the tile's runs, the caller's; `E` is an array of element types, with
            // no padding bytes; streamed stores fenced by the caller.
            if stream && unsafe { stream_tile(from, columns.source, to, rows.target, shape) } {
                continue;
            }
            // SAFETY: as above.
            if unsafe { transpose_tile(from, columns.source, to, rows.target, shape) } {
                continue;
            }
            // SAFETY: as above.
            if stream
                && unsafe { transpose_triples(from, columns.source, to, rows.target, shape, true) }
            {
                continue;
            }
            // SAFETY: as above.
            if unsafe { transpose_triples(from, columns.source, to, rows.target, shape, false) } {
                continue;
            }
            // Along the target's rows, each source column's line two lines ahead asked for
            // as the rows reach a new line.
            let per_line = (LINE / size_of::<E>()).max(1);
            for r in 0..shape[0] {
                if r % per_line == 0 {
                    for c in 0..shape[1] {
                        let run = from.wrapping_offset(c as isize * columns.source);
                        prefetch_run(run.wrapping_add(r + 2 * per_line), 1);
                    }
                }
                for c in 0..shape[1] {
                    // SAFETY: a run of the tile, the caller's.
                    unsafe {
                        to.wrapping_offset(r as isize * rows.target + c as isize)
                            .write(
                                from.wrapping_offset(r as isize + c as isize * columns.source)
                                    .read(),
                            )
                    };
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::copy_runs;

    /// `t[n, w, h, c] = s[n, h, w, c]` (target rows `pad` runs longer than needed) through
    /// `copy_runs` on `threads` threads of the calling pool, streamed where `stream`: whether
    /// it took the copy, and the target.
    fn swap<T: Copy + Default + Send + Sync>(
        [n, h, w, c]: [usize; 4],
        pad: usize,
        (threads, stream): (usize, bool),
        value: fn(usize) -> T,
    ) -> (bool, Vec<T>, Vec<T>) {
        let source: Vec<T> = (0..n * h * w * c).map(value).collect();
        let row = (h + pad) * c;
        let mut target = vec![T::default(); n * w * row];
        // Loops n, h, w, c.
        let source_strides = [(h * w * c) as isize, (w * c) as isize, c as isize, 1];
        let target_strides = [(w * row) as isize, c as isize, row as isize, 1];
        // SAFETY: every point's offsets lie in the two buffers (the target's rows `row` long
        // hold `h` runs of `c`), which are distinct; the target's points are distinct.
        let took = unsafe {
            copy_runs(
                (source.as_ptr(), &source_strides),
                (target.as_mut_ptr(), &target_strides),
                &[n, h, w, c],
                threads,
                stream,
            )
        };
        (took, source, target)
    }

    fn check<T: Copy + Default + Send + Sync + PartialEq + std::fmt::Debug>(value: fn(usize) -> T) {
        // One pool per number of threads (pools are slow to make under the sanitizers).
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a pool");
            pool.install(|| check_on::<T>(threads, value));
        }
    }

    fn check_on<T: Copy + Default + Send + Sync + PartialEq + std::fmt::Debug>(
        threads: usize,
        value: fn(usize) -> T,
    ) {
        // Runs of eight four-byte elements are taken only where the CPU transposes their
        // thirty-two bytes.
        let quads = size_of::<T>() == 4 && super::transposes::<[T; 8]>();
        for c in 1..=9 {
            // (2, 64, 40): target rows of 64 runs, whole lines for runs of 8, 12, 16 and 32
            // bytes.
            let shapes = [
                (1, 1, 1),
                (1, 7, 13),
                (3, 13, 7),
                (2, 70, 131),
                (1, 200, 3),
                (2, 64, 40),
            ];
            for (n, h, w) in shapes {
                // Streamed: each tile's whole target lines (rows of whole lines where unpadded
                // and the runs' bytes divide a line) around the caches.
                for (pad, stream) in [(0, false), (3, false), (0, true), (3, true)] {
                    let (took, source, target) = swap([n, h, w, c], pad, (threads, stream), value);
                    // Taken exactly where the runs are two to four long (or eight, above) and
                    // transposed (h and w both walked).
                    let expected = ((2..=4).contains(&c) || (c == 8 && quads)) && h > 1 && w > 1;
                    let case =
                        format!("{n} × {h} × {w} × {c}, pad {pad}, {threads} threads, {stream}");
                    assert_eq!(took, expected, "{case}");
                    if !took {
                        assert!(target.iter().all(|&x| x == T::default()), "{case}");
                        continue;
                    }
                    let row = (h + pad) * c;
                    for (at, &got) in target.iter().enumerate() {
                        let (image, rest) = (at / (w * row), at % (w * row));
                        let (x, y, k) = (rest / row, rest % row / c, rest % c);
                        let want = if y < h {
                            source[((image * h + y) * w + x) * c + k]
                        } else {
                            T::default()
                        };
                        assert_eq!(got, want, "{case}: element {at}");
                    }
                }
            }
        }
    }

    #[test]
    fn transposed_runs_match_their_source_and_nothing_else_changes() {
        check(|k| k as f32 + 1.0);
        check(|k| k as f64 - 0.5);
        check(|k| (k % 30_000) as i16 + 1);
        check(|k| (k as f32, 1.0f32));
    }

    #[test]
    fn outer_loops_in_any_order_and_direction_reach_every_run() {
        // `t[3 - 1 - b, a, w, h, c] = s[a, b, h, w, c]`: two loops outside the tiles, one of
        // them walking the target backwards, on one and two threads.
        let [na, nb, h, w, c] = [2, 3, 9, 11, 3];
        let source: Vec<f64> = (0..na * nb * h * w * c).map(|k| k as f64).collect();
        let source_strides = [
            (nb * h * w * c) as isize,
            (h * w * c) as isize,
            (w * c) as isize,
            c as isize,
            1,
        ];
        let target_strides = [
            (w * h * c) as isize,
            -((na * w * h * c) as isize),
            c as isize,
            (h * c) as isize,
            1,
        ];
        for threads in [1, 2] {
            let mut target = vec![-1.0f64; source.len()];
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a pool");
            // SAFETY: the target's base is its last `b` block, from which the negative stride
            // walks back to its first; every offset lies in the two distinct buffers, and the
            // target's points are distinct.
            let took = pool.install(|| unsafe {
                copy_runs(
                    (source.as_ptr(), &source_strides),
                    (
                        target.as_mut_ptr().add((nb - 1) * na * w * h * c),
                        &target_strides,
                    ),
                    &[na, nb, h, w, c],
                    threads,
                    false,
                )
            });
            assert!(took);
            for a in 0..na {
                for b in 0..nb {
                    for y in 0..h {
                        for x in 0..w {
                            for k in 0..c {
                                let from = (((a * nb + b) * h + y) * w + x) * c + k;
                                let to = ((((nb - 1 - b) * na + a) * w + x) * h + y) * c + k;
                                assert_eq!(target[to], source[from], "{threads} threads: {from}");
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn copies_that_could_meet_or_keep_their_order_are_declined() {
        let mut data: Vec<f32> = (0..2 * 3 * 2).map(|k| k as f32).collect();
        let before = data.clone();
        let at = data.as_mut_ptr();
        // In place, rows and columns swapped (the ranges meet), and a plain copy (the runs
        // continue along the same loop on both sides).
        let swapped = ([6, 2, 1], [2, 4, 1]);
        let plain = ([6, 2, 1], [6, 2, 1]);
        for (source_strides, target_strides) in [swapped, plain] {
            // SAFETY: every offset lies in `data`; nothing is written where declined.
            let took = unsafe {
                copy_runs(
                    (at.cast_const(), &source_strides),
                    (at, &target_strides),
                    &[2, 3, 2],
                    1,
                    false,
                )
            };
            assert!(!took);
        }
        assert_eq!(data, before);
    }
}

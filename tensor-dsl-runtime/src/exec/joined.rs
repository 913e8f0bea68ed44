//! A streamed copy whose source and target share a step-by-one run shorter than two cache
//! lines, which the target continues along other loops where the source does not (the last
//! axis kept while the ones before it swap: `t[a, b, e, f] = s[a, e, b, f]`, `t[j, i, k] =
//! s[i, j, k]` with `k` short, larger than the caches) → the target row by row: each of its
//! rows (the run and the loops that continue it in the target, cut to fit a buffer) gathered
//! run by run into a buffer, a band of neighbouring rows at once, then streamed whole around
//! the caches. Invariant: every element named is read once and written once, as it lies (as
//! bytes, never computed on).
//!
//! Why: the loop nest stores such runs the cached way (streamed one by one, each would leave
//! the write-combining buffers half full), so every target line is first read in and then
//! overwritten, a third more traffic than a copy; and it reads one run per row from lines
//! that the next rows need again. One thread, `f32`, ÷ a same-size `copy_from_slice`, both
//! ways in one process: `t[j, i, k] = s[i, j, k]` over 1000 × 1000 × 7 0.39 → 0.57, over 700
//! × 700 × 20 0.30 → 0.50–0.66; `t[a, b, e, f] = s[a, e, b, f]` over 200 × 12 × 200 × 12
//! `f64` 0.46 → 0.96–1.24.

use super::meet;
use super::parallel::for_each_part;
use super::transpose::{fence, prefetch_line, stream_run, streams};
use crate::tensor::memory::LINE;

/// The most bytes a gathered row holds: a longer one is cut into chunks.
const ROW_BYTES: usize = 16 << 10;

/// The fewest bytes a row is gathered for: shorter rows would be streamed in parts of lines.
const ROW_FROM: usize = 4 * LINE;

/// How many lines of the source a band's runs span where they can (bands of neighbouring
/// rows whose runs share lines), and how many lines on the runs asked for ahead lie.
const LINES_AHEAD: usize = 4;

/// A row's buffer, on a cache-line boundary.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Row([u8; ROW_BYTES]);

/// The most rows gathered at once (a band).
const BAND_MOST: usize = 16;

/// The most bytes a band's rows hold: their buffers stay in the first-level cache (`t[j, i,
/// k] = s[i, j, k]` over 1000 × 1000 × 7 `f32`, rows of 14 KB: ten of them at once 0.31×
/// a copy, two 0.57×).
const BAND_BYTES: usize = 32 << 10;

/// Rows gathered at once: how many, and how far apart their runs lie in the source and their
/// buffers (in elements).
#[derive(Clone, Copy)]
struct Band {
    rows: usize,
    source: isize,
    buffers: isize,
}

/// One loop of the copy: its extent and its strides in elements.
#[derive(Clone, Copy, Default)]
struct Loop {
    extent: usize,
    source: isize,
    target: isize,
}

/// The copy: the two bases, the shared run's length and a row's, the row's loops that gather
/// runs (innermost first) and the loops outside the rows (outermost first).
struct Joined<T, const L: usize> {
    source: *const T,
    target: *mut T,
    width: usize,
    length: usize,
    gathered: [Loop; L],
    gathers: usize,
    outer: [Loop; L],
    depth: usize,
    /// Rows gathered at once, along the innermost outer loop (the source's runs of
    /// neighbouring rows then lie in the same lines).
    band: usize,
    /// How many rows on along the innermost outer loop the runs asked for lie.
    ahead: isize,
}

// SAFETY: the threads that share a `Joined` read its source and write the rows of disjoint
// ranges of its outermost loop (see `copy_joined`); the pointers are only read.
unsafe impl<T, const L: usize> Sync for Joined<T, L> {}

/// Copies `target[p] = source[p]` over the points `p` of `extents` (offsets `Σ p[v] ·
/// strides[v]` from each base) row by row, where the copy streams (`stream`, which the caller
/// decides, and `stream_run` takes `T`), some loop steps one element on both sides, that run
/// (with the loops that continue it on both sides) is shorter than two lines, the target
/// continues it along other loops into rows of [`ROW_FROM`] bytes or more (a loop that would
/// take a row past [`ROW_BYTES`] cut into equal chunks), and the source's and the target's
/// elements cannot meet. The loops outside the rows run in the source's order; a band of
/// neighbouring rows along the innermost (their runs [`LINES_AHEAD`] lines long in the source
/// together where they can, at most [`BAND_BYTES`]) is gathered run by run into buffers, the
/// runs that far past the next band asked for, then each row streamed (`stream_run`; stored
/// the cached way where the target is not aligned for it). The outermost loop is cut across
/// up to `threads` threads, each part fencing its streamed stores. Otherwise returns `false`
/// having touched nothing, and the caller copies its own way; `true` once copied.
///
/// # Safety
/// Every element so addressed is valid, the source's for reads and the target's for writes;
/// the target's points address distinct elements; `T` has no padding bytes (as no element
/// type has).
pub(super) unsafe fn copy_joined<T: Copy, const L: usize>(
    (source, source_strides): (*const T, &[isize; L]),
    (target, target_strides): (*mut T, &[isize; L]),
    extents: &[usize; L],
    threads: usize,
    stream: bool,
) -> bool {
    let size = size_of::<T>();
    if !stream || size == 0 || extents.contains(&0) || !streams::<T>() {
        return false;
    }
    let walked = |var: usize| extents[var] > 1;
    let Some(first) =
        (0..L).find(|&var| walked(var) && source_strides[var] == 1 && target_strides[var] == 1)
    else {
        return false;
    };
    // The shared run: the loop that steps one element on both sides, and those continuing it
    // on both.
    let mut row = [first; L];
    let mut count = 1;
    let mut width = extents[first];
    let continuing = |row: &[usize], length: usize, strides: &[&[isize; L]]| {
        (0..L).find(|&var| {
            walked(var)
                && !row.contains(&var)
                && strides
                    .iter()
                    .all(|strides| strides[var] == length as isize)
        })
    };
    while let Some(next) = continuing(&row[..count], width, &[source_strides, target_strides]) {
        row[count] = next;
        count += 1;
        width = width.saturating_mul(extents[next]);
    }
    // Runs of two lines or more the nest streams itself (gathered, they measured slower:
    // `t[a, b, e, f] = s[a, e, b, f]` over 40 × 100 × 40 × 100 `f64`, 1.8 → 0.7× a copy).
    if width.saturating_mul(size) >= 2 * LINE {
        return false;
    }
    let shared = count;
    // The target's row: the run and the loops continuing it in the target alone, the last of
    // them cut into equal chunks (its extent's largest divisor that fits) where all of it
    // would not fit.
    let mut length = width;
    let mut chunked = None;
    while let Some(next) = continuing(&row[..count], length, &[target_strides]) {
        let fits = ROW_BYTES / (length * size);
        let chunk = (1..=fits.min(extents[next]))
            .rev()
            .find(|chunk| extents[next].is_multiple_of(*chunk))
            .unwrap_or(1);
        row[count] = next;
        count += 1;
        length *= chunk;
        if chunk < extents[next] {
            chunked = Some((next, chunk));
            break;
        }
    }
    if length * size < ROW_FROM || meet((source, source_strides), (target, target_strides), extents)
    {
        return false;
    }
    let step = |var: usize, extent: usize, times: usize| Loop {
        extent,
        source: source_strides[var].wrapping_mul(times as isize),
        target: target_strides[var].wrapping_mul(times as isize),
    };
    let mut gathered = [Loop::default(); L];
    for (slot, &var) in gathered.iter_mut().zip(&row[shared..count]) {
        let extent = match chunked {
            Some((cut, chunk)) if cut == var => chunk,
            _ => extents[var],
        };
        *slot = step(var, extent, 1);
    }
    // The loops outside the rows (the chunks of a cut loop among them), outermost first.
    let mut outer = [Loop::default(); L];
    let mut depth = 0;
    for var in (0..L).filter(|&var| walked(var) && !row[..count].contains(&var)) {
        outer[depth] = step(var, extents[var], 1);
        depth += 1;
    }
    if let Some((var, chunk)) = chunked {
        outer[depth] = step(var, extents[var] / chunk, chunk);
        depth += 1;
    }
    // Consecutive rows read neighbouring runs: the outer loops in the source's order.
    outer[..depth].sort_by_key(|step| std::cmp::Reverse(step.source.unsigned_abs()));
    // Bands of rows whose runs lie [`LINES_AHEAD`] lines long in the source, at most
    // [`BAND_MOST`]; the runs [`LINES_AHEAD`] lines past the next band asked for.
    let apart = match depth {
        0 => usize::MAX,
        _ => outer[depth - 1]
            .source
            .unsigned_abs()
            .saturating_mul(size)
            .max(1),
    };
    let band = (LINES_AHEAD * LINE)
        .div_ceil(apart)
        .min(BAND_BYTES / (length * size))
        .clamp(1, BAND_MOST);
    let copy = Joined {
        source,
        target,
        width,
        length,
        gathered,
        gathers: count - shared,
        outer,
        depth,
        band,
        ahead: band.max((LINES_AHEAD * LINE).div_ceil(apart)) as isize,
    };
    let cut = if depth > 0 { outer[0].extent } else { 1 };
    let parts = if threads > 1 {
        (threads * 4).min(cut)
    } else {
        1
    };
    let start = |part: usize| cut * part / parts;
    // SAFETY (each part): the caller's elements; the parts cut the outermost loop into
    // disjoint ranges, so each writes target elements no other part does.
    for_each_part(parts, &|part| unsafe {
        copy.part(start(part)..start(part + 1));
        fence();
    });
    true
}

impl<T: Copy, const L: usize> Joined<T, L> {
    /// The rows at the points of the outer loops where the outermost runs over `range` (all of
    /// them where there is no outer loop).
    ///
    /// # Safety
    /// As [`copy_joined`]'s; the caller fences before anything else touches the target.
    unsafe fn part(&self, range: std::ops::Range<usize>) {
        let outer = &self.outer[..self.depth];
        let mut counters = [0usize; L];
        if !outer.is_empty() {
            if range.is_empty() {
                return;
            }
            counters[0] = range.start;
        }
        let end = |at: usize| {
            if at == 0 {
                range.end
            } else {
                outer[at].extent
            }
        };
        let mut rows = vec![Row([0; ROW_BYTES]); self.band];
        let buffers = rows.as_mut_ptr().cast::<T>();
        let row_elements = (ROW_BYTES / size_of::<T>()) as isize;
        let innermost = outer.len().checked_sub(1);
        let avx512 = short_runs_in_vectors::<T>();
        loop {
            let (mut read, mut written) = (0isize, 0isize);
            for (step, &counter) in outer.iter().zip(&counters) {
                read = read.wrapping_add((counter as isize).wrapping_mul(step.source));
                written = written.wrapping_add((counter as isize).wrapping_mul(step.target));
            }
            let (from, to) = (
                self.source.wrapping_offset(read),
                self.target.wrapping_offset(written),
            );
            // This band's rows: the next ones along the innermost outer loop.
            let (band, across) = match innermost {
                Some(at) => (self.band.min(end(at) - counters[at]), outer[at]),
                None => (1, Loop::default()),
            };
            // SAFETY: the band's runs are points of the copy from this outer point on (its
            // rows along the innermost outer loop, not past its end), which the caller vouches
            // for; buffer `b < band ≤ self.band` is the `ROW_BYTES / size` elements from `b`
            // times that on, aligned for `T` (a `Row` is on a line, and `size` divides
            // `ROW_BYTES` for element types), this part's own, and holds `length` elements
            // (`length · size` is at most `ROW_BYTES`). `avx512` only where the CPU has it.
            unsafe {
                let band = Band {
                    rows: band,
                    source: across.source,
                    buffers: row_elements,
                };
                if avx512 {
                    self.gather_in_vectors(from, buffers, band)
                } else {
                    self.gather(from, buffers, band)
                }
            };
            for row in 0..band {
                // SAFETY: the buffer holds the row, every element written above (the row's
                // points cover its `length` elements once each); the target's row is
                // `length` contiguous elements from its start, the caller's, and does not
                // overlap the buffer; the caller fences.
                unsafe {
                    let (buffer, to) = (
                        buffers.offset(row as isize * row_elements).cast_const(),
                        to.wrapping_offset((row as isize).wrapping_mul(across.target)),
                    );
                    if !stream_run(buffer, to, self.length) {
                        std::ptr::copy_nonoverlapping(buffer, to, self.length);
                    }
                }
            }
            // The next outer point: the odometer (the innermost digit a band on), its
            // outermost digit stopping at the range's end.
            let mut at = outer.len();
            let mut by = band;
            loop {
                if at == 0 {
                    return;
                }
                at -= 1;
                counters[at] += by;
                by = 1;
                if counters[at] < end(at) {
                    break;
                }
                if at == 0 {
                    return;
                }
                counters[at] = 0;
            }
        }
    }

    /// The band's rows from `from` on into their buffers, run by run: at each point of the
    /// row's loops, the band's runs (`band.source` apart in the source, `band.buffers` apart
    /// in the buffers) in turn.
    ///
    /// # Safety
    /// As [`Joined::part`]'s for the band's rows; each buffer holds `length` elements.
    #[inline(always)]
    unsafe fn gather_with(
        &self,
        from: *const T,
        buffers: *mut T,
        band: Band,
        move_run: impl Fn(*const T, *mut T),
    ) {
        let loops = &self.gathered[..self.gathers];
        let mut counters = [0usize; L];
        let (mut read, mut written) = (0isize, 0isize);
        let ahead = band.source.wrapping_mul(self.ahead);
        loop {
            let run = from.wrapping_offset(read);
            let slot = buffers.wrapping_offset(written);
            for row in 0..band.rows as isize {
                let run = run.wrapping_offset(row.wrapping_mul(band.source));
                // The run's first and last bytes' lines (a run is under two lines).
                let later = run.wrapping_offset(ahead).cast::<i8>();
                prefetch_line(later);
                prefetch_line(later.wrapping_add(self.width * size_of::<T>() - 1));
                move_run(run, slot.wrapping_offset(row * band.buffers));
            }
            let mut at = 0;
            loop {
                if at == loops.len() {
                    return;
                }
                let step = loops[at];
                counters[at] += 1;
                read = read.wrapping_add(step.source);
                written = written.wrapping_add(step.target);
                if counters[at] < step.extent {
                    break;
                }
                let back = counters[at] as isize;
                read = read.wrapping_sub(back.wrapping_mul(step.source));
                written = written.wrapping_sub(back.wrapping_mul(step.target));
                counters[at] = 0;
                at += 1;
            }
        }
    }

    /// [`Joined::gather_with`], each run copied by `copy_nonoverlapping`.
    ///
    /// # Safety
    /// As [`Joined::gather_with`]'s.
    unsafe fn gather(&self, from: *const T, buffers: *mut T, band: Band) {
        let width = self.width;
        // SAFETY: each run is `width` elements of the caller's source and of a buffer.
        unsafe {
            self.gather_with(from, buffers, band, |run, slot| {
                std::ptr::copy_nonoverlapping(run, slot, width)
            })
        }
    }

    /// [`Joined::gather_with`], each run moved in two masked AVX-512 vectors at most.
    ///
    /// # Safety
    /// As [`Joined::gather_with`]'s; the CPU has AVX-512 F, and `T`'s size is a multiple of
    /// four bytes ([`short_runs_in_vectors`]).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx512f")]
    unsafe fn gather_in_vectors(&self, from: *const T, buffers: *mut T, band: Band) {
        use std::arch::x86_64::{_mm512_mask_storeu_epi32, _mm512_maskz_loadu_epi32};
        // A run is under two lines: at most 32 four-byte words, sixteen a vector.
        let words = self.width * size_of::<T>() / 4;
        let masks = [words.min(16), words.saturating_sub(16)].map(|n| ((1u32 << n) - 1) as u16);
        // SAFETY: the masked words are the run's bytes, in the caller's source and in the
        // buffer; masked-off words are neither read nor written (nor faulted on); the CPU has
        // AVX-512 F (this function's contract).
        unsafe {
            self.gather_with(from, buffers, band, |run, slot| {
                let (run, slot) = (run.cast::<i32>(), slot.cast::<i32>());
                let low = _mm512_maskz_loadu_epi32(masks[0], run);
                _mm512_mask_storeu_epi32(slot, masks[0], low);
                if masks[1] != 0 {
                    let high = _mm512_maskz_loadu_epi32(masks[1], run.add(16));
                    _mm512_mask_storeu_epi32(slot.add(16), masks[1], high);
                }
            })
        }
    }

    /// Never called: no CPU but x86-64 has the vectors (`short_runs_in_vectors`).
    #[cfg(not(target_arch = "x86_64"))]
    unsafe fn gather_in_vectors(&self, from: *const T, buffers: *mut T, band: Band) {
        // SAFETY: forwarded.
        unsafe { self.gather(from, buffers, band) }
    }
}

/// Whether runs of `T` are moved in masked AVX-512 vectors: the CPU has AVX-512 F and `T` is
/// a whole number of four-byte words.
fn short_runs_in_vectors<T>() -> bool {
    #[cfg(target_arch = "x86_64")]
    return size_of::<T>().is_multiple_of(4) && std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    false
}

#[cfg(test)]
mod tests {
    use super::{copy_joined, ROW_FROM};
    use crate::exec::copy_cases::{check as check_engine, Case};
    use crate::exec::transpose::streams;
    use crate::tensor::memory::LINE;

    /// `case` through `copy_joined`, which takes it where it streams, the shared run is `run`
    /// elements (under two lines) and its rows `rows` elements (0 where none is gathered).
    fn check<T: Copy + PartialEq + std::fmt::Debug + Send + Sync, const L: usize>(
        (case, [run, rows]): &(Case<L>, [usize; 2]),
        value: fn(usize) -> T,
        blank: T,
    ) {
        let size = size_of::<T>();
        let gathered = run * size < 2 * LINE && rows * size >= ROW_FROM && streams::<T>();
        check_engine(copy_joined, case, (value, blank), |stream| {
            gathered && stream
        });
    }

    fn case<const L: usize>(
        extents: [usize; L],
        order: [usize; L],
        (pad, reversed, target_pad): (usize, bool, usize),
        lengths: [usize; 2],
    ) -> (Case<L>, [usize; 2]) {
        let case = Case {
            extents,
            order,
            pad,
            reversed,
            target_pad,
        };
        (case, lengths)
    }

    fn check_all<T: Copy + PartialEq + std::fmt::Debug + Send + Sync>(
        value: fn(usize) -> T,
        blank: T,
    ) {
        // `t[a, b, e, f] = s[a, e, b, f]`, the target's (e, f) blocks padded so its rows end
        // there: bands along b (six `f32` rows, three `f64`), the last cut short at its end.
        check(
            &case([3, 7, 20, 12], [0, 2, 1, 3], (0, false, 5), [12, 84]),
            value,
            blank,
        );
        // One outer loop, cut across the threads' parts: bands of sixteen runs of four `f32`s
        // cut short at a part's end.
        check(
            &case([20, 40, 4], [1, 0, 2], (0, false, 3), [4, 80]),
            value,
            blank,
        );
        // A dense target: one row (of `ROW_BYTES` at most) for all of it.
        check(
            &case([3, 7, 5, 12], [0, 2, 1, 3], (0, false, 0), [12, 84]),
            value,
            blank,
        );
        // A padded source walked backwards along its outermost loop; a loop of one.
        check(
            &case([4, 9, 6, 10], [0, 2, 1, 3], (3, true, 0), [10, 90]),
            value,
            blank,
        );
        check(
            &case([3, 1, 7, 5, 12], [0, 1, 3, 2, 4], (0, false, 0), [12, 84]),
            value,
            blank,
        );
        // `t[j, i, k] = s[i, j, k]`: rows of (i, k) past `ROW_BYTES`, cut into equal chunks
        // (the chunks an outer loop of their own), bands along j.
        let chunk = 16384 / (7 * size_of::<T>());
        let chunk = (1..=chunk).rev().find(|c| 1000 % c == 0).unwrap_or(1);
        check(
            &case([1000, 5, 7], [1, 0, 2], (0, false, 0), [7, 7 * chunk]),
            value,
            blank,
        );
        // Not taken: a prime extent past `ROW_BYTES` leaves rows of one run; runs of 40; no
        // loop stepping one element on both sides.
        check(
            &case([1009, 3, 7], [1, 0, 2], (0, false, 0), [7, 7]),
            value,
            blank,
        );
        check(
            &case([5, 6, 40], [1, 0, 2], (0, false, 0), [40, 40]),
            value,
            blank,
        );
        check(
            &case([5, 6, 7], [0, 2, 1], (0, false, 0), [0, 0]),
            value,
            blank,
        );
    }

    #[test]
    fn gathered_rows_move_exactly() {
        // Four-, eight- and sixteen-byte elements as their bits (NaN patterns included), and
        // eight-byte elements aligned to two bytes only (streamed where the buffer happens to
        // be aligned for it, else stored the cached way).
        check_all(|n| 0x7FC0_0000u32 ^ n as u32, u32::MAX);
        check_all(|n| (n as u64) << 20 | 0x7FF8_0000_0000_0001, u64::MAX);
        check_all(|n| [n as u64, !(n as u64)], [0; 2]);
        check_all(|n| [n as u16; 4], [0; 4]);
    }
}

//! A copy whose source and target step by one element along different loops, at least one
//! of them short (a permutation of small axes: `t[e, d, c, b, a] = s[a, b, c, d, e]` over 24⁵)
//! → the target, as tiles whose columns are the target's innermost loops that continue one
//! another and whose rows the source's, each group grown to at least [`GROUP`] elements, moved
//! by `transpose_grouped` in blocks of one cache line by one. Invariant: every element named is
//! read once and written once, as it lies (as bytes, never computed on).
//!
//! Why groups: a tile of one loop by one (24 × 24 here) reads and writes each row's line or
//! two in parts, and rows a page apart fall in one cache set, so the line is gone before the
//! next tile writes its other part (`f32`, one thread: 0.16× a same-size `copy_from_slice`).
//! With the loops that continue a row joined to it, whole lines are read and written once.

use super::parallel::for_each_part;
use super::transpose::{fence, transpose_grouped, transposes_grouped};
use super::{meet, sort_loops};
use crate::tensor::memory::{LINE, PAGE};

/// The fewest elements a group of loops holds where the loops allow: the first loop of a
/// side's group is joined by the loops that continue it until the group holds this many.
const GROUP: usize = 64;

/// The most elements a group of loops holds: its offsets are tabulated (8 bytes each, 512 KB
/// at most), and a loop that would take it past this is not joined (a group spanning most of
/// a huge tensor would tabulate as many offsets as it has elements).
const GROUP_MOST: usize = 1 << 16;

/// The fewest points a copy takes tiles of groups for: below, the tables' allocation would
/// weigh on copies that small statements make often. From here on the groups measured faster
/// than the loop nest's tiles (one thread, in the caches: `t[e, d, c, b, a] = s[a, b, c, d,
/// e]` over 4⁵ `f32` 2.75 → 0.48 µs, 6⁵ 9.0 → 1.3 µs; `t[k, j, i] = s[i, j, k]` over 3 × 32
/// × 32 `f64` 2.5 → 0.8 µs; none slower among the shapes tried).
const GROUPED_FROM: usize = 1 << 8;

/// The columns of a tile one part of the work moves at a time (the tiles of one point of
/// the other loops are cut into pieces this wide): threads take pieces, and the rows of a
/// piece (the source's columns, one line each a block) stay in the first-level cache.
const PIECE: usize = 256;

/// The two bases, shared by the threads that take the pieces.
struct Bases<T> {
    source: *const T,
    target: *mut T,
}

// SAFETY: the threads that share the bases read the source and write the pieces' target
// elements, distinct for distinct pieces (see `copy_grouped`); the pointers are only read.
unsafe impl<T> Sync for Bases<T> {}

impl<T> Bases<T> {
    /// The bases moved `read` and `written` elements on.
    fn at(&self, read: isize, written: isize) -> (*const T, *mut T) {
        (
            self.source.wrapping_offset(read),
            self.target.wrapping_offset(written),
        )
    }
}

/// One side's group of loops: the loops, innermost first, and the elements they span.
struct Group<const L: usize> {
    loops: [usize; L],
    count: usize,
    length: usize,
}

impl<const L: usize> Group<L> {
    /// The loop `first` (stepping one element along `strides`) and the loops that continue it
    /// (each stepping as many elements as the loops before it span), none of `taken`, until
    /// they span [`GROUP`] elements, no loop continues them, or the next would take them past
    /// [`GROUP_MOST`].
    fn grown(first: usize, strides: &[isize; L], extents: &[usize; L], taken: &[usize]) -> Self {
        let mut group = Group {
            loops: [first; L],
            count: 1,
            length: extents[first],
        };
        while group.length < GROUP {
            let next = (0..L).find(|&var| {
                extents[var] > 1
                    && strides[var] == group.length as isize
                    && !taken.contains(&var)
                    && !group.loops[..group.count].contains(&var)
            });
            let Some(next) = next else { break };
            if group.length.saturating_mul(extents[next]) > GROUP_MOST {
                break;
            }
            group.loops[group.count] = next;
            group.count += 1;
            group.length *= extents[next];
        }
        group
    }

    fn loops(&self) -> &[usize] {
        &self.loops[..self.count]
    }

    /// The offsets along `strides` of the group's points, in the order in which they span
    /// its side (the first loop fastest).
    fn offsets(&self, strides: &[isize; L], extents: &[usize; L]) -> Vec<isize> {
        let mut offsets = Vec::with_capacity(self.length);
        offsets.push(0);
        for &var in self.loops() {
            let inner = offsets.len();
            for index in 1..extents[var] {
                for at in 0..inner {
                    offsets.push(offsets[at] + index as isize * strides[var]);
                }
            }
        }
        offsets
    }
}

/// Copies `target[p] = source[p]` over the points `p` of `extents` (offsets `Σ p[v] · strides[v]`
/// from each base) in tiles of loop groups, where it has a kernel (AVX-512, four-, eight- or
/// sixteen-byte elements), there are [`GROUPED_FROM`] points or more, the step-by-one loops of the
/// two sides differ, at least one of them is shorter than [`GROUP`] with a loop continuing it, each
/// group holds a cache line's worth of elements or more, and the source's and the target's elements
/// cannot meet; on up to `threads` threads, the target's whole lines streamed around the caches
/// where `stream` (fenced before returning). Otherwise returns `false` having touched nothing, and
/// the caller copies its own way; `true` once copied.
///
/// # Safety
/// Every element so addressed is valid, the source's for reads and the target's for writes;
/// the target's points address distinct elements; `T` has no padding bytes (as no element
/// type has).
pub(super) unsafe fn copy_grouped<T: Copy, const L: usize>(
    (source, source_strides): (*const T, &[isize; L]),
    (target, target_strides): (*mut T, &[isize; L]),
    extents: &[usize; L],
    threads: usize,
    stream: bool,
) -> bool {
    // Saturating: only compared (an injective target's points fit in memory anyway).
    let points = extents
        .iter()
        .fold(1usize, |points, &e| points.saturating_mul(e));
    if L < 3 || points < GROUPED_FROM || !transposes_grouped::<T>() {
        // (No point at all is fewer than `GROUPED_FROM` too.)
        return false;
    }
    let unit = |strides: &[isize; L]| (0..L).find(|&var| extents[var] > 1 && strides[var] == 1);
    let (Some(first_column), Some(first_row)) = (unit(target_strides), unit(source_strides)) else {
        return false;
    };
    if first_column == first_row {
        return false;
    }
    let columns = Group::grown(first_column, target_strides, extents, &[first_row]);
    let rows = Group::grown(first_row, source_strides, extents, columns.loops());
    // Taken wherever a side joins loops. (Where neither side's step-by-one loop splits
    // lines, the loop nest's tiles were faster on some shapes, `t[c, a, b, f, d, e] = s[a,
    // b, c, d, e, f]` over 16⁶ `f32` one thread 1.70× a copy against 1.34× here, slower on
    // others, `t[a, c, e, b, d] = s[a, b, c, d, e]` over 24⁵ `f64` 0.43× against 0.75×; no
    // rule found between them, and this one keeps every shape measured past 0.7×.)
    // Groups shorter than a line would leave most of each block's lanes masked off.
    let line = (LINE / size_of::<T>()).max(1);
    let takes = (columns.count > 1 || rows.count > 1) && columns.length.min(rows.length) >= line;
    // Rows of one loop a whole number of pages apart in the target (`t[k, j, i] = s[i, j, k]`
    // over 48 × 64 × 96, its rows 12 KiB apart) go to the loop nest, whose tiles move such
    // rows in cached bricks: one thread, `f32`, in the caches, 21 → 54 GB/s there, 16 × 64 ×
    // 256 20 → 47, 32³ 34 → 49, the same or faster on every such shape tried; rows of two
    // loops or more keep the groups (`t[e, d, c, b, a] = s[a, b, c, d, e]` over 24⁵, its rows
    // as far apart: 42 GB/s here against 6.5 in the nest's tiles).
    let paged_rows = rows.count == 1
        && target_strides[first_row]
            .unsigned_abs()
            .wrapping_mul(size_of::<T>())
            .is_multiple_of(PAGE);
    let takes = takes && !paged_rows;
    if !takes || meet((source, source_strides), (target, target_strides), extents) {
        return false;
    }
    // Each column's source offset, each row's target offset; along the other side, the
    // groups step one element (their loops continue one another).
    let columns_at = columns.offsets(source_strides, extents);
    let rows_at = rows.offsets(target_strides, extents);
    // The other loops, the source's largest stride outermost.
    let mut outer: [usize; L] = std::array::from_fn(|var| var);
    let grouped = |var: usize| columns.loops().contains(&var) || rows.loops().contains(&var);
    sort_loops(&mut outer, &|var| {
        (
            !grouped(var),
            std::cmp::Reverse(source_strides[var].unsigned_abs()),
        )
    });
    let outer = &outer[columns.count + rows.count..];
    let pieces = columns.length.div_ceil(PIECE);
    let work = outer.iter().map(|&var| extents[var]).product::<usize>() * pieces;
    let parts = if threads > 1 {
        (threads * 4).min(work)
    } else {
        1
    };
    let bases = Bases { source, target };
    let piece = |item: usize| {
        // The point of the outer loops (the last fastest) and the piece of its tile.
        let (mut point, from) = (item / pieces, item % pieces * PIECE);
        let (mut read, mut written) = (0isize, 0isize);
        for &var in outer.iter().rev() {
            let index = (point % extents[var]) as isize;
            point /= extents[var];
            read += index * source_strides[var];
            written += index * target_strides[var];
        }
        let to = columns.length.min(from + PIECE);
        let (source, target) = bases.at(read, written + from as isize);
        // SAFETY: each element the call names is a point's: column `p` of the piece and row
        // `q` are the groups' points `from + p` and `q` (their offsets along the source and
        // the target, and one element a step along the other side), with the outer loops'
        // point, so valid as the caller vouches; the source's elements and the target's do
        // not meet (checked). Streamed stores are fenced by this thread below.
        unsafe { transpose_grouped(source, &columns_at[from..to], target, &rows_at, stream) };
    };
    // Each part takes items in order; distinct items are distinct points of the outer
    // loops or distinct columns, so distinct target elements (the target is injective).
    for_each_part(parts, &|part| {
        (work * part / parts..work * (part + 1) / parts).for_each(piece);
        if stream {
            // The part's streamed stores, before it is done.
            fence();
        }
    });
    true
}

#[cfg(test)]
mod tests {
    use super::copy_grouped;
    use crate::exec::copy_cases::{check as check_engine, Case};
    use crate::exec::transpose::transposes_grouped;

    /// `case` through `copy_grouped`, which takes it, streamed or not, where `grouped` and the
    /// CPU has the kernels.
    fn check<T: Copy + PartialEq + std::fmt::Debug + Send + Sync, const L: usize>(
        (case, grouped): &(Case<L>, bool),
        value: fn(usize) -> T,
        blank: T,
    ) {
        let taken = *grouped && transposes_grouped::<T>();
        check_engine(copy_grouped, case, (value, blank), |_| taken);
    }

    fn case<const L: usize>(
        extents: [usize; L],
        order: [usize; L],
        pad: usize,
        reversed: bool,
        grouped: bool,
    ) -> (Case<L>, bool) {
        let case = Case {
            extents,
            order,
            pad,
            reversed,
            target_pad: 0,
        };
        (case, grouped)
    }

    fn check_all<T: Copy + PartialEq + std::fmt::Debug + Send + Sync>(
        value: fn(usize) -> T,
        blank: T,
    ) {
        // Reversals of rank 5 and 4 (both sides grouped; odd extents cut every block short
        // somewhere), a target whose step-by-one loop is two long (`c[k, j, i] = a[i, j, k]`),
        // a loop of one, a padded and a reversed source, sizes past a piece and the threads.
        check(
            &case([7, 13, 5, 9, 6], [4, 3, 2, 1, 0], 0, false, true),
            value,
            blank,
        );
        check(
            &case([16, 16, 16, 16], [3, 2, 1, 0], 0, false, true),
            value,
            blank,
        );
        check(
            &case([24, 24, 24, 24], [3, 2, 1, 0], 0, true, true),
            value,
            blank,
        );
        check(&case([2, 300, 40], [2, 1, 0], 0, false, true), value, blank);
        // Streamed tiles of 256 rows or more on lines, in pairs of blocks of columns: whole
        // pairs (16⁴, rows a line long), and pairs and rows cut short (289 rows of 75 columns,
        // each row padded to 80 elements, so every row starts on a line where the first
        // does); forwards and reversed.
        check(
            &case([16, 16, 16, 16], [3, 2, 1, 0], 0, true, true),
            value,
            blank,
        );
        for reversed in [false, true] {
            let cut_short = Case {
                target_pad: 5,
                ..case([5, 15, 17, 17], [3, 2, 1, 0], 0, reversed, true).0
            };
            check(&(cut_short, true), value, blank);
        }
        check(
            &case([3, 1, 5, 17, 20], [4, 2, 3, 1, 0], 0, false, true),
            value,
            blank,
        );
        check(&case([9, 11, 43], [2, 0, 1], 3, true, true), value, blank);
        check(&case([5, 33, 70], [2, 1, 0], 1, false, true), value, blank);
        check(&case([5, 70, 33], [1, 2, 0], 1, false, false), value, blank);
        // Not taken: one step-by-one loop on both sides; both long, nothing joined; the
        // source's group two long (shorter than a line); too few points; rows of one loop
        // whole pages apart in the target (1024 elements: 4, 8 and 16 KiB), which the loop
        // nest takes (rows of two loops as far apart stay grouped: the 16⁴ reversals above).
        check(
            &case([16, 64, 64], [2, 1, 0], 0, false, false),
            value,
            blank,
        );
        check(&case([40, 60, 3], [1, 0, 2], 0, false, false), value, blank);
        check(&case([3, 70, 80], [0, 2, 1], 0, false, false), value, blank);
        check(
            &case([3, 1000, 2], [2, 1, 0], 0, false, false),
            value,
            blank,
        );
        check(
            &case([3, 4, 5, 4], [3, 2, 1, 0], 0, false, false),
            value,
            blank,
        );
    }

    #[test]
    fn tiles_of_loop_groups_move_exactly() {
        // Four-, eight- and sixteen-byte elements as their bits (NaN patterns included), and
        // a size without a kernel.
        check_all(|n| 0x7FC0_0000u32 ^ n as u32, u32::MAX);
        check_all(|n| (n as u64) << 20 | 0x7FF8_0000_0000_0001, u64::MAX);
        check_all(|n| [n as u64, !(n as u64)], [0; 2]);
        check_all(|n| [n as u16; 3], [0; 3]);
    }
}

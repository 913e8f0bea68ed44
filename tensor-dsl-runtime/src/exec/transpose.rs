//! A tile of a copy whose source runs down the tile and whose target runs across it → the target,
//! in blocks transposed in vector registers (detected at run time: AVX-512's 16 × 16 blocks of
//! four-byte elements, 8 × 8 of eight-byte ones, 4 × 4 of sixteen-byte ones and 2 × 2 of
//! thirty-two-byte ones, one cache line of each target row; AVX's 8 × 8 and 4 × 4; the edges, with
//! AVX-512, in blocks cut short by masked loads and stores, else in the narrower kernels down to
//! SSE's 4 × 4 and 2 × 2, then element by element; a tile of a few rows, two up to a vector's
//! lanes less one, whose source is one run, or as many columns whose target is one run, by
//! kernels of its own, `narrow` and `few`), the AVX and AVX-512 blocks asking for their target
//! rows' lines ahead of their stores, for a target larger than the caches with its whole lines
//! streamed around them (`stream_tile`, or `stream_off_lines` where the rows are not whole lines
//! apart); tiles along a third loop, block by block across them all (`stream_brick`, and
//! `brick` stored the cached way); a tile whose rows and columns are groups of loops, each row
//! and column at its own offset (`transpose_grouped`, AVX-512); a tile of runs of three four-
//! or eight-byte elements, their components transposed in registers (`transpose_triples`,
//! AVX-512); a run of a copy, contiguous on both sides → the target, around the caches
//! (`stream_run`). Invariant: elements are moved as bytes, never computed on, so every element
//! type of those sizes is copied exactly, and every element named is written once (and read
//! once, but for `stream_off_lines`' last block of rows, which reads again the rows it
//! overlaps).

use crate::tensor::memory::LINE;

/// Copies the `rows × columns` elements of a tile: element (r, c) from
/// `source + r + c · source_stride` to `target + r · target_stride + c`. Returns `false`,
/// having touched nothing, where no kernel fits (another element size, or no AVX, or no AVX-512
/// for thirty-two-byte elements): the caller then copies its own way.
///
/// # Safety
/// Every source element named must be valid for reads and every target element for writes,
/// no target element may be a source element, and `T` must have no padding bytes (as no
/// element type has: its bytes pass through vector registers).
pub(crate) unsafe fn transpose_tile<T: Copy>(
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    shape: [usize; 2],
) -> bool {
    let Some(kernel) = kernel::<T>() else {
        return false;
    };
    // SAFETY (both): forwarded from the caller.
    if unsafe { narrow(source, source_stride, target, target_stride, shape) }
        || unsafe { few_tile(source, source_stride, target, target_stride, shape, false) }
    {
        return true;
    }
    // SAFETY: forwarded from the caller; the kernels were chosen for `T`'s size and this CPU.
    unsafe {
        match kernel.edges {
            Some(edges) => in_edged_blocks(
                kernel.tiers[0],
                edges,
                source,
                source_stride,
                target,
                target_stride,
                shape,
            ),
            None => in_blocks(
                kernel.tiers,
                source,
                source_stride,
                target,
                target_stride,
                shape,
            ),
        }
    };
    true
}

/// Copies a tile as `transpose_tile` says: its whole blocks by `full`, the rest (the columns
/// right of them, the rows below) in blocks of the same side cut short by `edges`, one call
/// each.
///
/// # Safety
/// As `transpose_tile`; both kernels must take elements of `T`'s size and run on this CPU,
/// `edges` any block of at most `side` rows and columns.
unsafe fn in_edged_blocks<T: Copy>(
    (side, full): (usize, Blocks),
    edges: Blocks,
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    [rows, columns]: [usize; 2],
) {
    let (block_rows, block_columns) = (rows / side * side, columns / side * side);
    let at = |row: usize, column: usize| {
        (
            source
                .wrapping_add(row)
                .wrapping_offset(column as isize * source_stride)
                .cast(),
            target
                .wrapping_offset(row as isize * target_stride)
                .wrapping_add(column)
                .cast(),
        )
    };
    // SAFETY: each call moves a block of the tile (a corner and a shape inside it, with its
    // strides), so the caller's guarantees hold for it; the edge blocks are at most `side`.
    unsafe {
        if block_rows > 0 && block_columns > 0 {
            let (from, to) = at(0, 0);
            full(
                from,
                source_stride,
                to,
                target_stride,
                [block_rows, block_columns],
            );
        }
        if columns > block_columns {
            for row in (0..block_rows).step_by(side) {
                let (from, to) = at(row, block_columns);
                edges(
                    from,
                    source_stride,
                    to,
                    target_stride,
                    [side, columns - block_columns],
                );
            }
        }
        if rows > block_rows {
            for column in (0..columns).step_by(side) {
                let (from, to) = at(block_rows, column);
                let shape = [rows - block_rows, side.min(columns - column)];
                edges(from, source_stride, to, target_stride, shape);
            }
        }
    }
}

/// Copies a tile as `transpose_tile` says where one side is two to four elements and the
/// tile is contiguous on that side's operand: rows that short with the source's columns
/// following one another (the source one run of interleaved rows: `t[c, p] = s[p, c]` for
/// three channels), or columns that short with the target's rows following one another (the
/// target one run: the converse). The blocks of `in_blocks` need at least four of each; here
/// each group of a run is split among (or gathered from) the rows in one loop the compiler
/// vectorizes with interleaved loads or stores. Returns `false`, having touched nothing,
/// where the tile is not such, the other side's rows would overlap, or the CPU lacks AVX2.
///
/// # Safety
/// As `transpose_tile`.
unsafe fn narrow<T: Copy>(
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    [rows, columns]: [usize; 2],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if rows == 0 || columns == 0 || !std::arch::is_x86_feature_detected!("avx2") {
            return false;
        }
        let short = |side: usize| (2..=4).contains(&side);
        let whole = |stride: isize, side: usize| stride == side as isize;
        // Rows of the other operand at least a row long apart: their elements never meet.
        let apart = |stride: isize, length: usize| stride >= length as isize;
        // SAFETY: the caller's tile (as `transpose_tile`'s contract); AVX2 detected.
        unsafe {
            if short(rows) && whole(source_stride, rows) && apart(target_stride, columns) {
                match rows {
                    2 => deinterleave::<T, 2>(source, target, target_stride, columns),
                    3 => deinterleave::<T, 3>(source, target, target_stride, columns),
                    _ => deinterleave::<T, 4>(source, target, target_stride, columns),
                }
                return true;
            }
            if short(columns) && whole(target_stride, columns) && apart(source_stride, rows) {
                match columns {
                    2 => interleave::<T, 2>(source, source_stride, target, rows),
                    3 => interleave::<T, 3>(source, source_stride, target, rows),
                    _ => interleave::<T, 4>(source, source_stride, target, rows),
                }
                return true;
            }
        }
    }
    let _ = (source, source_stride, target, target_stride, rows, columns);
    false
}

/// The most rows (or columns) of a tile whose source (target) is one run that `transpose_tile`
/// moves by splitting that run among its rows (gathering it from its columns): four, or a
/// vector's lanes less one where [`few`] has kernels for `T`'s size.
pub(crate) fn narrow_side<T>() -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        few::sides::<T>().end.saturating_sub(1).max(4)
    }
    #[cfg(not(target_arch = "x86_64"))]
    4
}

/// Whether a streamed copy's tile of `columns` whose target is one run (its rows `columns`
/// apart) goes to [`gather_tile`] (`few`): the nest then gives it tiles of whole rows, and
/// keeps it out of `stream_off_lines`' strips.
pub(crate) fn gathers<T>(columns: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        few::gathers::<T>(columns)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = columns;
        false
    }
}

/// As [`transpose_tile`], for a streamed copy's tile whose target is one run of rows that
/// [`gathers`] takes: each column of the tile read down its own run, a vector's worth of rows
/// at a time, the source asked for ahead; the stores are not streamed. Returns `false`, having
/// touched nothing, where the tile is not such.
///
/// # Safety
/// As [`transpose_tile`].
pub(crate) unsafe fn gather_tile<T: Copy>(
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    [rows, columns]: [usize; 2],
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: forwarded from the caller: the target's rows one run, the source's columns
        // at least a column long apart.
        rows > 0
            && target_stride == columns as isize
            && source_stride >= rows as isize
            && unsafe { few::gather(source, source_stride, target, [rows, columns]) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (source, source_stride, target, target_stride, rows, columns);
        false
    }
}

/// Moves a tile of five or more rows (columns) but fewer than a vector's lanes whose source
/// (target) is one run with the kernels of [`few`], streaming the target's whole lines where
/// `stream` (see [`stream_tile`]); returns `false`, having touched nothing, where the tile is
/// not such or no kernel takes it.
///
/// # Safety
/// As `transpose_tile`, and where `stream`, as `stream_tile`.
unsafe fn few_tile<T: Copy>(
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    [rows, columns]: [usize; 2],
    stream: bool,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        if rows == 0 || columns == 0 {
            return false;
        }
        // As in `narrow`: the run's side whole, the other operand's rows apart.
        // SAFETY: forwarded from the caller.
        unsafe {
            if source_stride == rows as isize
                && target_stride >= columns as isize
                && few::split(source, target, target_stride, [rows, columns], stream)
            {
                return true;
            }
            target_stride == columns as isize
                && source_stride >= rows as isize
                && few::join(source, source_stride, target, [rows, columns])
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = (
            source,
            source_stride,
            target,
            target_stride,
            rows,
            columns,
            stream,
        );
        false
    }
}

/// Element `(r, c)` of a tile `R` rows high, `columns` wide: from `source + c·R + r` to
/// `target + r·target_stride + c`.
///
/// # Safety
/// As `transpose_tile`'s, for that tile (`source_stride` `R`); the CPU has AVX2;
/// `target_stride ≥ columns`, so the target's rows do not overlap.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn deinterleave<E: Copy, const R: usize>(
    source: *const E,
    target: *mut E,
    target_stride: isize,
    columns: usize,
) {
    // SAFETY: the source's elements of the tile are these `columns · R`, contiguous; each
    // target row's are `columns` contiguous, and rows at least that far apart do not meet,
    // nor do they meet the source's (the caller's contract); all valid as the caller vouches.
    let (source, mut rows) = unsafe {
        (
            std::slice::from_raw_parts(source, columns * R),
            std::array::from_fn::<_, R, _>(|r| {
                std::slice::from_raw_parts_mut(
                    target.wrapping_offset(r as isize * target_stride),
                    columns,
                )
            }),
        )
    };
    for (c, group) in source.chunks_exact(R).enumerate() {
        for (row, &value) in rows.iter_mut().zip(group) {
            row[c] = value;
        }
    }
}

/// Element `(r, c)` of a tile `rows` high, `C` wide: from `source + r + c·source_stride` to
/// `target + r·C + c`.
///
/// # Safety
/// As `transpose_tile`'s, for that tile (`target_stride` `C`); the CPU has AVX2;
/// `source_stride ≥ rows`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn interleave<E: Copy, const C: usize>(
    source: *const E,
    source_stride: isize,
    target: *mut E,
    rows: usize,
) {
    // SAFETY: each source column's elements are `rows` contiguous; the target's are these
    // `rows · C`, contiguous, none of them a source element (the caller's contract); all
    // valid as the caller vouches.
    let (columns, target) = unsafe {
        (
            std::array::from_fn::<_, C, _>(|c| {
                std::slice::from_raw_parts(source.wrapping_offset(c as isize * source_stride), rows)
            }),
            std::slice::from_raw_parts_mut(target, rows * C),
        )
    };
    for (r, group) in target.chunks_exact_mut(C).enumerate() {
        for (slot, column) in group.iter_mut().zip(&columns) {
            *slot = column[r];
        }
    }
}

/// Tiles of more than four rows (columns) but fewer than a vector's lanes, the source
/// (target) one run: `narrow`'s tiles, longer on the short side. The 16 × 16 (8 × 8) blocks
/// would be cut short at every block, and the interleaved loops of `deinterleave` and
/// `interleave` run slower past four; these take the short side's elements of each point of
/// the long side as one masked vector (AVX-512, four- and eight-byte elements), streaming the
/// target's whole lines where asked (`stream_tile`). Also a streamed copy's rows of a vector's
/// lanes up to a few dozen elements off the lines, the target one run of them, gathered from
/// the tile's columns (`gather`, for `gather_tile`).
#[cfg(target_arch = "x86_64")]
mod few {
    use super::{avx512, line_lead, lines_apart};

    /// Calls the kernel for `$t`'s size (`$four` or `$eight`) whose short side is `$side`, one
    /// of [`sides`], with `$args`.
    macro_rules! on_side {
        ($t:ty, $side:expr, [$four:ident, $eight:ident], $args:tt) => {
            if size_of::<$t>() == 4 {
                on_side!(@each $side, $four, $args, 5 6 7 8 9 10 11 12 13 14 15)
            } else {
                on_side!(@each $side, $eight, $args, 5 6 7)
            }
        };
        (@each $side:expr, $kernel:ident, $args:tt, $($n:literal)*) => {
            match $side {
                $($n => on_side!(@call $kernel, $n, $args),)*
                _ => unreachable!("the sides are checked first"),
            }
        };
        (@call $kernel:ident, $n:literal, ($($arg:expr),*)) => {
            avx512::$kernel::<$n>($($arg),*)
        };
    }

    /// The short sides these kernels take for elements of `T`'s size on this CPU: five up to
    /// a vector's lanes less one, or none.
    pub(super) fn sides<T>() -> std::ops::Range<usize> {
        let lanes = match size_of::<T>() {
            4 => 16,
            8 => 8,
            _ => return 0..0,
        };
        if std::arch::is_x86_feature_detected!("avx512f") && !super::avx_only() {
            5..lanes
        } else {
            0..0
        }
    }

    /// Moves a tile of `rows` (within [`sides`]) whose source is one run, as
    /// `super::deinterleave`, streaming each row's whole lines where `stream` and the rows are
    /// a whole number of lines apart; returns `false`, having touched nothing, where it does
    /// not take the tile.
    ///
    /// # Safety
    /// As `super::deinterleave`'s for `R` = `rows`, without its CPU requirement; where
    /// `stream`, as `super::stream_tile`'s (a fence before the target is used again).
    pub(super) unsafe fn split<T>(
        source: *const T,
        target: *mut T,
        target_stride: isize,
        [rows, columns]: [usize; 2],
        stream: bool,
    ) -> bool {
        if !sides::<T>().contains(&rows) {
            return false;
        }
        #[cfg(test)]
        super::tests::FEW_TILES.with(|tiles| tiles.set(tiles.get() + 1));
        // Every row's lines start at the column the first row's do.
        let streamed = (
            line_lead(target),
            stream
                && lines_apart::<T>(target_stride)
                && (target as usize).is_multiple_of(size_of::<T>()),
        );
        #[cfg(test)]
        if streamed.1 {
            let (lead, lanes) = (streamed.0.min(columns), super::LINE / size_of::<T>());
            super::tests::STREAMED_LINES
                .with(|lines| lines.set(lines.get() + rows * ((columns - lead) / lanes)));
        }
        let (source, target) = (source.cast::<u8>(), target.cast::<u8>());
        // SAFETY: the caller's tile; `sides` checked AVX-512 F and the element size; a
        // streamed row's lines start `line_lead` in, below a vector's lanes.
        unsafe {
            on_side!(
                T,
                rows,
                [split_4, split_8],
                (source, target, target_stride, columns, streamed)
            )
        };
        true
    }

    /// Whether [`gather`] takes a tile of `columns` whose target is one run: rows past a
    /// vector's lanes (past [`sides`]) but at most [`GATHERED_ROW_BYTES`], and not a whole
    /// number of lines apart (whose tiles could not stream whole lines).
    pub(super) fn gathers<T>(columns: usize) -> bool {
        let sides = sides::<T>();
        !sides.is_empty()
            && columns >= sides.end
            && columns * size_of::<T>() <= GATHERED_ROW_BYTES
            && !lines_apart::<T>(columns as isize)
    }

    /// The longest rows, in bytes, that [`gather`] takes: a block of them is a vector's worth
    /// of rows, each column of the tile read down its own run. Streamed copies off the lines
    /// of 20 to 127 `f32`s and 10 to 50 `f64`s a row measured 1.1–2.6× as fast so (`t[j, i] =
    /// s[i, j]` from 20 × 10⁶ … 127 × 200,000, one thread), 100 `f64`s 0.9×; in the caches
    /// (3 MB) `f32`s 0.65–0.8×, so only streamed copies are gathered.
    pub(super) const GATHERED_ROW_BYTES: usize = 512;

    /// Moves a tile of `columns` within [`sides`] whose target is one run, as
    /// `super::interleave`; returns `false`, having touched nothing, where it does not take
    /// the tile. Never streams: its masked stores of a row each measured no slower than
    /// streaming whole blocks staged in the caches. Its kernels take the columns as a constant:
    /// `gather`'s, which takes them at run time, moved 8 × 10⁵ `f32`s in the caches at 0.51–0.58×
    /// a copy against these 0.80×.
    ///
    /// # Safety
    /// As `super::interleave`'s for `C` = `columns`, without its CPU requirement.
    pub(super) unsafe fn join<T>(
        source: *const T,
        source_stride: isize,
        target: *mut T,
        [rows, columns]: [usize; 2],
    ) -> bool {
        if !sides::<T>().contains(&columns) {
            return false;
        }
        #[cfg(test)]
        super::tests::FEW_TILES.with(|tiles| tiles.set(tiles.get() + 1));
        let (source, target) = (source.cast::<u8>(), target.cast::<u8>());
        // SAFETY: the caller's tile; `sides` checked AVX-512 F and the element size.
        unsafe {
            on_side!(
                T,
                columns,
                [join_4, join_8],
                (source, source_stride, target, rows)
            )
        };
        true
    }

    /// Moves a tile of `columns` that [`gathers`] takes, whose target is one run, a vector's
    /// worth of rows at a time; returns `false`, having touched nothing, where it does not
    /// take the tile.
    ///
    /// # Safety
    /// As `super::interleave`'s for `C` = `columns`, without its CPU requirement.
    pub(super) unsafe fn gather<T>(
        source: *const T,
        source_stride: isize,
        target: *mut T,
        [rows, columns]: [usize; 2],
    ) -> bool {
        if !gathers::<T>(columns) {
            return false;
        }
        #[cfg(test)]
        super::tests::FEW_TILES.with(|tiles| tiles.set(tiles.get() + 1));
        let (source, target) = (source.cast::<u8>(), target.cast::<u8>());
        // SAFETY: the caller's tile; `gathers` checked AVX-512 F (through `sides`) and the
        // element size.
        unsafe {
            if size_of::<T>() == 4 {
                avx512::gather_4(source, source_stride, target, [rows, columns]);
            } else {
                avx512::gather_8(source, source_stride, target, [rows, columns]);
            }
        }
        true
    }
}

/// A kernel's function: the whole `block × block` blocks of a tile (`transpose_tile`'s layout
/// and contract, strides in elements), elements of one size passed as bytes.
type Blocks = unsafe fn(*const u8, isize, *mut u8, isize, [usize; 2]);

/// Copies a tile as `transpose_tile` says: its whole blocks by the first kernel, the columns
/// right of them and the rows below them likewise by the other kernels, and what no kernel's
/// blocks cover element by element.
///
/// # Safety
/// As `transpose_tile`; each kernel must take elements of `T`'s size and run on this CPU.
unsafe fn in_blocks<T: Copy>(
    kernels: &[(usize, Blocks)],
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    [rows, columns]: [usize; 2],
) {
    let Some((&(block, run), rest)) = kernels.split_first() else {
        for row in 0..rows {
            for column in 0..columns {
                // SAFETY: an element of the tile, which the caller vouches for.
                unsafe {
                    target
                        .offset(row as isize * target_stride + column as isize)
                        .write(
                            source
                                .offset(row as isize + column as isize * source_stride)
                                .read(),
                        )
                };
            }
        }
        return;
    };
    let (block_rows, block_columns) = (rows / block * block, columns / block * block);
    // SAFETY: the kernel moves the tile's whole blocks, the calls below the sub-tiles right of
    // them and below them: parts of the caller's tile (a corner and a shape inside it, with
    // its strides), so the caller's guarantees hold for each.
    unsafe {
        if block_rows > 0 && block_columns > 0 {
            run(
                source.cast(),
                source_stride,
                target.cast(),
                target_stride,
                [block_rows, block_columns],
            );
        }
        if columns > block_columns {
            in_blocks(
                rest,
                source.wrapping_offset(block_columns as isize * source_stride),
                source_stride,
                target.wrapping_add(block_columns),
                target_stride,
                [block_rows, columns - block_columns],
            );
        }
        if rows > block_rows {
            in_blocks(
                rest,
                source.wrapping_add(block_rows),
                source_stride,
                target.wrapping_offset(block_rows as isize * target_stride),
                target_stride,
                [rows - block_rows, columns],
            );
        }
    }
}

/// As [`transpose_tile`], for a target larger than the caches: the target's whole cache lines
/// inside the tile's whole blocks are written with non-temporal stores, each line by one or
/// two vector stores in a row, so no line is read in before it is overwritten; the rest of the
/// tile (columns before the rows' first line boundary and after their last, rows before the
/// source columns' first line boundary where those are a whole number of lines apart, so
/// each block loads whole source lines, and rows below the last whole block) with ordinary
/// stores, so no line mixes the two (a tile narrower or shorter than that streams nothing and
/// is moved whole that way). Starting the blocks on the source's lines took `c[k, j, i] =
/// a[i, j, k]` over 256³ `f32` tensors (each 16 bytes past a line) from 0.48–0.58× to
/// 0.51–0.62× a copy on one thread, 0.84–1.04× to 0.96–1.25× on two (a harness, the two
/// builds in turns). A tile of a few rows whose source is one run (`few`) streams its rows'
/// whole lines instead, however short the tile; where its target is not aligned to `T`'s
/// size it is moved with ordinary stores. Returns `false`, having touched nothing, where the
/// target's rows are not a whole number of lines apart (their lines would start at different
/// columns; a stride of 0 among them), where the target is not aligned to `T`'s size (but for
/// such a tile of a few rows), or where `transpose_tile` would. Unfenced, like
/// [`stream_run`].
///
/// # Safety
/// As [`transpose_tile`], and `T` must have no padding bytes (as no element type has). This
/// thread must call [`fence`] before it reads or writes the target's elements again or lets
/// another thread see them.
pub(crate) unsafe fn stream_tile<T: Copy>(
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    shape: [usize; 2],
) -> bool {
    // SAFETY: forwarded from the caller (one tile).
    unsafe {
        // A few rows split from one run, streamed: rows a whole number of lines apart.
        if lines_apart::<T>(target_stride)
            && few_tile(source, source_stride, target, target_stride, shape, true)
        {
            return true;
        }
        stream_brick(
            source,
            source_stride,
            target,
            target_stride,
            shape,
            (1, 0, 0),
        )
    }
}

/// As [`stream_tile`], for `count` tiles of one shape along a third loop (`(count,
/// source_step, target_step)`: tile `m`'s corners `m` steps on, in elements), each kernel
/// block of all of them in turn before the next block: a tile whose target rows lie far apart
/// (a page or more) then writes each row's line in the same few pages as the tile before, not
/// one line in each of as many pages as it has rows (`c[k, j, i] = a[i, j, k]` with `j` the
/// third loop). Returns `false`, having touched nothing, where this CPU has no streaming
/// kernel for `T`, the target's rows are not a whole number of lines apart, the target is not
/// aligned to `T`, or the tiles' targets are not a whole number of lines apart (so their rows'
/// lines would start at other columns).
///
/// # Safety
/// As [`stream_tile`], for every one of the `count` tiles; moreover no tile's target element
/// may be any tile's source element or another tile's target element: the kernels move the
/// tiles block by block in turn, so a tile reading what another streamed before the fence
/// would read it unordered, and an element two tiles share would be written twice.
pub(crate) unsafe fn stream_brick<T: Copy>(
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    shape: [usize; 2],
    (count, source_step, target_step): (usize, isize, isize),
) -> bool {
    let [rows, columns] = shape;
    let (Some(kernel), size) = (kernel::<T>(), size_of::<T>()) else {
        return false;
    };
    if !lines_apart::<T>(target_stride)
        || !(target as usize).is_multiple_of(size)
        || (count > 1 && !lines_apart::<T>(target_step))
    {
        return false;
    }
    // Columns up to the rows' first line boundary (the same in every row of every tile), then
    // whole lines.
    let lead = columns.min(line_lead(target));
    let per_line = LINE / size;
    let lines = (columns - lead) / per_line;
    let (stream_rows, stream) = kernel.stream;
    // Rows from the source columns' first line boundary, where they all meet one at the same
    // row in every tile (the tiles' sources a whole number of lines apart too): each streamed
    // block then loads whole source lines, not two halves of each.
    let row_lead =
        if lines_apart::<T>(source_stride) && (count == 1 || lines_apart::<T>(source_step)) {
            rows.min(line_lead(source))
        } else {
            0
        };
    let whole_rows = (rows - row_lead) / stream_rows * stream_rows;
    let third = (count, source_step, target_step);
    if lines == 0 || whole_rows == 0 {
        // No whole line to stream (rows shorter than the columns up to their first line
        // boundary and a line past it): each tile whole in the widest blocks, not cut at
        // that boundary into narrower ones.
        let whole = [([0, 0], shape)];
        // SAFETY: forwarded from the caller (every tile, whole).
        unsafe { tile_parts(source, source_stride, target, target_stride, &whole, third) };
        return true;
    }
    #[cfg(test)]
    tests::STREAMED_LINES
        .with(|streamed| streamed.set(streamed.get() + count * whole_rows * lines));
    // SAFETY (whole block): each part below is a sub-tile of one of the caller's tiles (a
    // corner and a shape inside it), with its strides, so the caller's guarantees hold for
    // it. The streamed parts' rows start on a line boundary (`lead`, the rows a whole number
    // of lines apart, and the tiles too), as the stream kernels need, and hold whole lines
    // and whole blocks of theirs.
    unsafe {
        stream(
            source
                .wrapping_add(row_lead)
                .wrapping_offset(lead as isize * source_stride)
                .cast(),
            source_stride,
            target
                .wrapping_offset(row_lead as isize * target_stride)
                .wrapping_add(lead)
                .cast(),
            target_stride,
            [whole_rows, lines * per_line],
            third,
        );
        let (streamed_end, rows_end) = (lead + lines * per_line, row_lead + whole_rows);
        let rest = [
            ([0, 0], [rows, lead]),
            ([0, streamed_end], [rows, columns - streamed_end]),
            ([0, lead], [row_lead, streamed_end - lead]),
            ([rows_end, lead], [rows - rows_end, streamed_end - lead]),
        ];
        tile_parts(source, source_stride, target, target_stride, &rest, third);
    }
    true
}

/// Moves parts of `count` tiles by [`transpose_tile`]: each part of `parts` (its corner's row
/// and column in the tile, and its shape) of tile `m`, which lies `m·source_step` and
/// `m·target_step` on; empty parts are skipped.
///
/// # Safety
/// As [`transpose_tile`], for each part of every tile.
unsafe fn tile_parts<T: Copy>(
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    parts: &[([usize; 2], [usize; 2])],
    (count, source_step, target_step): (usize, isize, isize),
) {
    for m in 0..count as isize {
        let (source, target) = (
            source.wrapping_offset(m.wrapping_mul(source_step)),
            target.wrapping_offset(m.wrapping_mul(target_step)),
        );
        for &([row, column], shape) in parts {
            if shape.contains(&0) {
                continue;
            }
            // SAFETY: a part of tile `m` (a corner and a shape inside it, with its strides):
            // the caller's elements.
            unsafe {
                transpose_tile(
                    source.wrapping_offset(row as isize + column as isize * source_stride),
                    source_stride,
                    target.wrapping_offset(row as isize * target_stride + column as isize),
                    target_stride,
                    shape,
                )
            };
        }
    }
}

/// Copies `count` tiles as [`transpose_tile`] says, tile `m` from `source + m·source_step`
/// to `target + m·target_step`, stored the cached way: the tiles' whole blocks each in turn
/// across all the tiles, as [`stream_brick`] moves them, then each tile's edges. Returns
/// `false`, having touched nothing, where this CPU has no such kernel for `T` (AVX-512, four-
/// or eight-byte elements).
///
/// # Safety
/// As [`transpose_tile`], for every one of the `count` tiles; moreover no tile's target
/// element may be any tile's source element or another tile's target element.
pub(crate) unsafe fn brick<T: Copy>(
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    [rows, columns]: [usize; 2],
    (count, source_step, target_step): (usize, isize, isize),
) -> bool {
    let Some((side, blocks)) = cached_bricks::<T>() else {
        return false;
    };
    let (whole_rows, whole_columns) = (rows / side * side, columns / side * side);
    let third = (count, source_step, target_step);
    // SAFETY: the whole blocks of every tile, and each tile's edges (a corner and a shape
    // inside it, with its strides): the caller's elements.
    unsafe {
        if whole_rows > 0 && whole_columns > 0 {
            blocks(
                source.cast(),
                source_stride,
                target.cast(),
                target_stride,
                [whole_rows, whole_columns],
                third,
            );
        }
        let edges = [
            ([0, whole_columns], [rows, columns - whole_columns]),
            ([whole_rows, 0], [rows - whole_rows, whole_columns]),
        ];
        tile_parts(source, source_stride, target, target_stride, &edges, third);
    }
    true
}

/// The cached brick kernel for `T` on this CPU and the side of its blocks, if any.
fn cached_bricks<T>() -> Option<(usize, StreamBlocks)> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && !avx_only() {
        return match size_of::<T>() {
            4 => Some((16, avx512::cached_blocks_4 as StreamBlocks)),
            8 => Some((8, avx512::cached_blocks_8 as StreamBlocks)),
            _ => None,
        };
    }
    None
}

/// Whether [`brick`] has a kernel for `T` on this CPU.
pub(crate) fn bricks<T>() -> bool {
    cached_bricks::<T>().is_some()
}

/// Copies a tile as [`transpose_tile`] says, every whole cache line of every target row
/// inside the kernel's blocks (all but the rows and columns past its last whole blocks)
/// written by one non-temporal store, where the target's rows are not a whole number of lines
/// apart (so each row's lines start at another column, and [`stream_tile`], which streams
/// blocks of rows that start at one column, streams none). The tile goes a line's worth of
/// columns at a time, in blocks transposed in registers: each row's vector is joined to the
/// row's vector of the block before (kept in `staging`, a line a row) into the row's line
/// that ends in this block, which is streamed; each row's columns before its first line
/// boundary and after its last whole line in the blocks are stored the cached way, by masked
/// stores. Rows not a whole number of blocks take a last block that overlaps the one before
/// (each row written once: the overlap's rows are skipped there), so no row is left to the
/// cached way after the others (1,000,003 records of 20 `f32` fields split into a row per
/// field, one thread: 0.31× → 0.59–0.68× a copy, before the kernel asked for its source
/// ahead); fewer rows than a block, and the columns past the last whole block (fewer than a
/// line's worth), go to `transpose_tile`.
/// Returns `false`, having touched nothing, where this CPU streams no whole lines of `T`
/// (`streams_off_lines`: AVX-512, four- or eight-byte elements), the target is not aligned to
/// `T`, `staging` is not on a line or shorter than a line a row, or the rows are shorter
/// than a line.
///
/// # Safety
/// As [`transpose_tile`], and `T` must have no padding bytes (as no element type has).
/// `staging` must not overlap either tile. This thread must call [`fence`] before it reads or
/// writes the target's elements again or lets another thread see them.
pub(crate) unsafe fn stream_off_lines<T: Copy>(
    source: *const T,
    source_stride: isize,
    target: *mut T,
    target_stride: isize,
    [rows, columns]: [usize; 2],
    staging: &mut [T],
) -> bool {
    let (size, per_line) = (size_of::<T>(), LINE / size_of::<T>().max(1));
    // Every row where there are a block's worth (the kernel's last block then overlaps the
    // one before), else none.
    let (kernel_rows, blocks) = (if rows >= per_line { rows } else { 0 }, columns / per_line);
    if !streams_off_lines::<T>()
        || avx_only()
        || !(target as usize).is_multiple_of(size)
        || !(staging.as_ptr() as usize).is_multiple_of(LINE)
        || staging.len() < kernel_rows * per_line
        || blocks == 0
    {
        return false;
    }
    // SAFETY: the kernel's rows are the tile's (at least a line's side: `streams_off_lines`
    // is AVX-512, whose vector is a line, a block's side) and its columns the tile's first
    // whole blocks (at least one, checked); the staging holds a line per row (checked) on a
    // line boundary, and overlaps neither tile. The rows and columns it leaves are sub-tiles,
    // moved the cached way.
    unsafe {
        #[cfg(target_arch = "x86_64")]
        if kernel_rows > 0 {
            let kernel = if size == 4 {
                avx512::stream_off_lines_4
            } else {
                avx512::stream_off_lines_8
            };
            kernel(
                source.cast(),
                source_stride,
                target.cast(),
                target_stride,
                [kernel_rows, blocks * per_line],
                staging.as_mut_ptr().cast(),
            );
        }
        // The rows the kernel did not take, and the columns past its blocks in the others.
        let rest = [
            ([kernel_rows, 0], [rows - kernel_rows, columns]),
            (
                [0, blocks * per_line],
                [kernel_rows, columns - blocks * per_line],
            ),
        ];
        for ([row, column], shape) in rest {
            if shape.contains(&0) {
                continue;
            }
            transpose_tile(
                source.wrapping_offset(row as isize + column as isize * source_stride),
                source_stride,
                target.wrapping_offset(row as isize * target_stride + column as isize),
                target_stride,
                shape,
            );
        }
    }
    true
}

/// Whether rows `stride` elements of `T` apart are a whole number of cache lines apart (and
/// not the same row), so each row's lines start at the same column.
pub(crate) fn lines_apart<T>(stride: isize) -> bool {
    let whole = stride
        .unsigned_abs()
        .wrapping_mul(size_of::<T>())
        .is_multiple_of(LINE);
    stride != 0 && whole
}

/// Whether rows `stride` elements of `T` apart from `at` on each start on a cache line
/// boundary, as `stream_tile` streams them from their first element.
pub(crate) fn rows_on_lines<T>(at: *const T, stride: isize) -> bool {
    lines_apart::<T>(stride) && (at as usize).is_multiple_of(LINE)
}

/// How many elements from `at` the next cache line starts (0 on a boundary, and where `at`
/// is not aligned to `T`'s size, whose elements then never meet one).
pub(crate) fn line_lead<T>(at: *const T) -> usize {
    let (address, size) = (at as usize, size_of::<T>().max(1));
    if !address.is_multiple_of(size) || !LINE.is_multiple_of(size) {
        return 0;
    }
    (LINE - address % LINE) % LINE / size
}

/// Copies `length` elements from `source` to `target`, both contiguous, with non-temporal stores
/// only: for a target larger than the caches, which would otherwise read each of its lines in
/// before it is overwritten. Returns `false`, having touched nothing, where this CPU has no such
/// stores (no AVX) for `T`'s size (four, eight or sixteen bytes), or `target` is not aligned to it
/// (to eight bytes for sixteen-byte elements). The stores are not fenced (a fence per run measured
/// slower than plain stores on runs of 1 KB): the caller calls [`fence`] once done.
///
/// # Safety
/// The `length` elements from `source` must be valid for reads, those from `target` for
/// writes, the two runs must not overlap, and `T` must have no padding bytes (as no element
/// type has). This thread must call [`fence`] before it reads or writes the target's elements
/// again or lets another thread see them (non-temporal stores are ordered by nothing else).
pub(crate) unsafe fn stream_run<T: Copy>(source: *const T, target: *mut T, length: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    // Sixteen-byte elements (`c64`) as two of eight bytes each.
    let piece = size_of::<T>().min(8);
    if streams::<T>() && (target as usize).is_multiple_of(piece) {
        // SAFETY: the caller vouches for both runs, `length · size` bytes each, and for the
        // bytes being initialized; the target is aligned to `piece` (just checked), one of
        // the two sizes `stream` takes, which divides the element size; the CPU has AVX
        // (`streams` detected it), and AVX-512 F where its `stream` is called.
        unsafe {
            let (source, target, bytes) = (source.cast(), target.cast(), length * size_of::<T>());
            if std::arch::is_x86_feature_detected!("avx512f") && !avx_only() {
                avx512::stream(source, target, bytes, piece)
            } else {
                avx::stream(source, target, bytes, piece)
            }
        };
        return true;
    }
    let _ = (source, target, length);
    false
}

/// Asks for the cache lines of the `length` contiguous elements from `first` to be loaded
/// ahead of their reads. Only a hint: a prefetch reads nothing and never faults, so any
/// address may be named.
pub(crate) fn prefetch_run<T>(first: *const T, length: usize) {
    // Every line the run touches: from the one `first` lies in, so a run that starts inside
    // a line also has its last one asked for.
    let lead = first as usize % LINE;
    let start = first.cast::<i8>().wrapping_sub(lead);
    for line in 0..(lead + length * size_of::<T>()).div_ceil(LINE) {
        prefetch_line(start.wrapping_add(line * LINE));
    }
}

/// How far past a block the kernels ask for its target rows' lines: two lines, which
/// measured best (one arrives late, three or more are evicted before their stores).
const BYTES_AHEAD: usize = 2 * LINE;

/// Asks for the target's lines [`BYTES_AHEAD`] bytes past `at` in each of `rows` rows (`stride`
/// elements apart) to be loaded, so a kernel's stores, which each wait on their line when it
/// is not in the first-level cache, find them there. Only a hint: a prefetch reads nothing and
/// never faults, so any address may be named.
#[inline(always)]
fn prefetch_rows<T>(at: *const T, stride: isize, rows: usize) {
    for row in 0..rows {
        let row = at.wrapping_offset(row as isize * stride).cast::<i8>();
        prefetch_line(row.wrapping_add(BYTES_AHEAD));
    }
}

/// Asks for the cache line holding `at` to be loaded: a hint, which reads nothing and never
/// faults, so any address may be named.
#[inline(always)]
pub(crate) fn prefetch_line(at: *const i8) {
    // SAFETY: `prefetch` has no precondition: it loads no value and faults on no address
    // (SSE, which every x86-64 CPU has); older compilers declare it unsafe.
    #[cfg(target_arch = "x86_64")]
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

/// Orders this thread's earlier `stream_run` and `stream_tile` stores before its later stores
/// (and, with them, before whatever hands the target on).
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `sfence` has no precondition (SSE, which every x86-64 CPU has); older
    // compilers still declare it unsafe.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

/// Whether `stream_run` copies runs of `T` on this CPU (to a target aligned to `T`'s size,
/// or to eight bytes for sixteen-byte elements).
pub(crate) fn streams<T>() -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx") {
        return matches!(size_of::<T>(), 4 | 8 | 16);
    }
    false
}

/// Whether `stream_tile` writes each target line of a block of `T`s with one store (and
/// reads each source line with one load) on this CPU: AVX-512's kernels.
pub(crate) fn streams_by_lines<T>() -> bool {
    kernel::<T>().is_some_and(|kernel| kernel.stream.0 * size_of::<T>() == LINE)
}

/// Whether [`transpose_triples`] has a kernel for runs `E` on this CPU: twelve or twenty-four
/// bytes (three elements of four or eight), AVX-512 F.
pub(crate) fn transposes_triples<E>() -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") && !avx_only() {
        return matches!(size_of::<E>(), 12 | 24);
    }
    false
}

/// Copies the `rows × columns` runs of a tile as [`transpose_tile`] copies elements (run `(r,
/// c)` from `source + r + c · source_stride` to `target + r · target_stride + c`), where a run
/// `E` is three elements of four or eight bytes (an image's three channels) and the CPU has
/// AVX-512 F ([`transposes_triples`]): whole blocks of 16 × 16 (8 × 8) runs, each three
/// blocks of elements side by side transposed in registers, whose rows are then the runs'
/// components, each target row's runs interleaved back from its three; the runs past the
/// whole blocks one by one. Moved run by run, such runs measured 0.13–0.35× a copy of the same
/// bytes (`t[j, i, k] = s[i, j, k]` over 1000 × 1000 × 3 and 1024 × 1024 × 3 `f32`, one
/// thread). Where `stream`, the whole blocks' target lines are streamed around the caches,
/// which takes every target row of the tile starting on a cache line (else `false`, nothing
/// touched); the runs past them are stored the cached way, on lines of their own. Returns
/// `false`, having touched nothing, where there is no kernel.
///
/// # Safety
/// As [`transpose_tile`], for runs of `E` (strides in runs). Where `stream`, this thread
/// must call [`fence`] before it reads or writes the target's elements again or lets another
/// thread see them.
pub(crate) unsafe fn transpose_triples<E: Copy>(
    source: *const E,
    source_stride: isize,
    target: *mut E,
    target_stride: isize,
    [rows, columns]: [usize; 2],
    stream: bool,
) -> bool {
    if !transposes_triples::<E>() || stream && !rows_on_lines::<E>(target, target_stride) {
        return false;
    }
    let side = if size_of::<E>() == 12 { 16 } else { 8 };
    // SAFETY: the caller's runs; the kernel for `E`'s size, on a CPU with AVX-512 F
    // (`transposes_triples`), moving the whole blocks only; streamed, each row's blocks
    // start on a line (the row does, checked, and a block is three lines).
    #[cfg(target_arch = "x86_64")]
    unsafe {
        let kernel = match (side, stream) {
            (16, false) => avx512::triples_4,
            (16, true) => avx512::stream_triples_4,
            (_, false) => avx512::triples_8,
            (_, true) => avx512::stream_triples_8,
        };
        kernel(
            source.cast(),
            source_stride,
            target.cast(),
            target_stride,
            [rows, columns],
        );
    }
    let (whole_rows, whole_columns) = (rows / side * side, columns / side * side);
    for r in 0..rows {
        let first = if r < whole_rows { whole_columns } else { 0 };
        for c in first..columns {
            // SAFETY: a run of the tile past the kernel's blocks, the caller's.
            unsafe {
                let from = source.wrapping_offset(r as isize + c as isize * source_stride);
                let to = target.wrapping_offset(r as isize * target_stride + c as isize);
                to.write(from.read());
            }
        }
    }
    true
}

/// Whether [`stream_off_lines`] has a kernel for `T` on this CPU: as [`streams_by_lines`], for
/// four- and eight-byte elements.
pub(crate) fn streams_off_lines<T>() -> bool {
    matches!(size_of::<T>(), 4 | 8) && streams_by_lines::<T>()
}

/// Whether `transpose_tile` copies tiles of `T` on this CPU.
pub(crate) fn transposes<T>() -> bool {
    kernel::<T>().is_some()
}

/// Whether [`transpose_grouped`] has a kernel for elements of `T`'s size on this CPU.
pub(crate) fn transposes_grouped<T>() -> bool {
    kernel::<T>().is_some_and(|kernel| kernel.grouped.is_some())
}

/// Copies a tile whose rows and columns are groups of loops: element `(q, p)`, for `p <
/// columns_at.len()` and `q < rows_at.len()`, from `source + columns_at[p] + q` to `target +
/// rows_at[q] + p` (the source contiguous down each column, the target along each row, the rest
/// anywhere), in blocks of one cache line by one (16 × 16 four-byte elements, 8 × 8 eight-byte
/// ones, 4 × 4 sixteen-byte ones) cut short by masks at the edges, columns of blocks outermost so
/// each block reads on down the last one's source columns; streamed, with [`PAIRED_ROWS`] rows or
/// more each starting on a line, two blocks of columns at a time, each row's two lines stored one
/// after the other (four-, eight- and sixteen-byte elements). Where `stream`, each block's rows
/// that are a whole target line on a line boundary are written by non-temporal stores (no other
/// store touches such a line), unfenced, like [`stream_run`]. Returns `false`, having touched
/// nothing, where no kernel fits (another element size, or no AVX-512).
///
/// # Safety
/// Every source element named must be valid for reads and every target element for writes,
/// no target element may be a source element, and `T` must have no padding bytes (as no
/// element type has). Where `stream`, this thread must call [`fence`] before it reads or
/// writes the target's elements again or lets another thread see them.
pub(crate) unsafe fn transpose_grouped<T: Copy>(
    source: *const T,
    columns_at: &[isize],
    target: *mut T,
    rows_at: &[isize],
    stream: bool,
) -> bool {
    let Some(grouped) = kernel::<T>().and_then(|kernel| kernel.grouped) else {
        return false;
    };
    // SAFETY: forwarded from the caller; the kernel was chosen for `T`'s size and this CPU.
    unsafe { grouped(source.cast(), columns_at, target.cast(), rows_at, stream) };
    true
}

/// The fewest rows a streamed tile of [`transpose_grouped`], its rows each starting on a line, has
/// for its blocks of columns to go two at a time, each row's two lines stored one after the other
/// (`in_pairs` in the kernels). A block of columns stores one line in each of the tile's rows and
/// the next block the line after each: over hundreds of rows memory sees lines scattered over as
/// many places before their neighbours come, and takes them faster two in a row. One thread,
/// against `copy_from_slice` in the same process, the two builds in turns, `t[e, d, c, b, a] = s[a,
/// b, c, d, e]`: 24⁵ (576 rows) `f32` 26–27 → 39–44 GB/s, `f64` 25–26 → 38–43; 20⁵ (400) `f32` 55 →
/// 75, `f64` 29 → 52; 16⁵ (256) `f32` 15–16 → 34, `f64` 7–12 → 28. Not everywhere: `t[l, k, j, i] =
/// s[i, j, k, l]` over 20 × 100 × 30 × 200 (200 rows) `f32` 34–35 → 29–30 GB/s, hence not below 256
/// rows; with 600 rows `f32` 36 → 34, `f64` 35 → 41–42. Tiles of a few rows (`t[a, c, e, b, d] =
/// s[a, b, c, d, e]`, 24 and 40) measured slower in pairs (the next line of each row comes soon
/// anyway) and keep the single blocks.
const PAIRED_ROWS: usize = 256;

/// How many row blocks ahead a pair of blocks of columns asks for each column's line: a pair
/// reads twice the columns at once, more than the core follows on its own (`t[l, k, j, i] =
/// s[i, j, k, l]` over 20 × 100 × 30 × 200 `f32`, in pairs: 25 GB/s without, 35–37 two
/// blocks ahead, 31 four, 20 eight).
const READ_AHEAD: usize = 2;

/// How far ahead of its block a kernel of [`few`] splitting a run asks for the run's lines:
/// the core does not follow that run on its own (`t[j, i] = s[i, j]` over 1,000,000 × 8
/// `f32`, streamed, one thread: 19 GB/s asking for none, 41 one block ahead, 47 four, 50
/// eight (4 KiB), 52 thirty-two; a copy of the same bytes 53–56).
const FEW_AHEAD: usize = 4096;

/// How far down each column a kernel of [`few`] gathering a run asks for the column's
/// lines (`t[j, i] = s[i, j]` over 8 × 1,000,000 `f32`, one thread: 18 GB/s asking for none,
/// 34 four lines ahead, 36 eight, 38–39 sixteen and thirty-two; a copy 54–57).
const FEW_COLUMN_AHEAD: usize = 1024;

/// About how many bytes of the source ahead [`stream_off_lines`]' kernel asks for each
/// block's source lines, in whole blocks of columns (at least one). A block of columns reads
/// runs as long as the tile's rows are many, which the core follows on its own only where they
/// are long (`t[j, i] = s[i, j]` over 3000 × 3001 `f32`, strips of 2048 rows: 0.72× a copy
/// asking for nothing, 1.0× one block ahead, 0.88–1.01× four). Over 1,000,003 × 20 `f32`,
/// one thread, against a copy in the same run: 0.27× asking for nothing, 0.77× one block
/// ahead, 0.90× two, 1.12× four, 1.22–1.29× 8 KiB (six).
const OFF_LINES_AHEAD: usize = 8192;

/// How many blocks ahead down each source column [`transpose_triples`]' kernel asks for the
/// column's runs: a tile's 64 (32) columns, each three lines a block, are more than the core
/// follows on its own (`t[j, i, k] = s[i, j, k]` over 1000 × 1000 × 3 and 2000 × 2000 × 3,
/// one thread, against a copy in the same run: `f64` 0.41–0.59× asking for nothing, 0.61–0.68× one block ahead,
/// 0.69–0.75× two; `f32` within the noise, 0.29–0.60× all alike).
const TRIPLES_AHEAD: usize = 2;

/// The kernels for one element size: whole blocks in the widest registers the CPU has, then
/// for a tile's edges either the same blocks cut short (`edges`, AVX-512) or smaller ones,
/// down to SSE's.
#[derive(Clone, Copy)]
struct Kernel {
    /// Each kernel with the side of its blocks, widest first (with `edges`, only the first).
    tiers: &'static [(usize, Blocks)],
    /// For whole lines of the target, with non-temporal stores (`stream_tile`), and the rows it
    /// takes at a time (a tile's streamed rows are a multiple of them). With AVX-512 each target
    /// line is one store and each source line one load (16 × 16 blocks of four-byte elements, 8 × 8
    /// of eight-byte ones, 4 × 4 of sixteen-byte ones, 2 × 2 of thirty-two-byte ones), with AVX
    /// half a line each. (Sixteen rows at once once measured slower than AVX's eight on a Xeon, in
    /// 64 × 64 tiles; on the AMD host, in the tiles `Nest` now streams, they measured faster, see
    /// `loop_nest`'s `streamed_tile`.)
    stream: (usize, StreamBlocks),
    /// For the blocks cut short at a tile's edges, each in one call (masked loads and stores),
    /// where the CPU has them (AVX-512); else the narrower tiers take the edges. A 28 × 28
    /// tile of `f32`s was one 16 × 16 block and eleven of AVX's and SSE's, now four calls
    /// (`yq[c, d, e, f] = y[d, f, c, e]` over TCCG `abcd-aebf-dfce`'s extents, 28 × 28 tiles
    /// at 576 points, one thread, two builds in turns: 0.27–0.28 → 0.22–0.23 ms).
    edges: Option<Blocks>,
    /// For tiles whose rows and columns are groups of loops (`transpose_grouped`), where the
    /// CPU has AVX-512 (four-, eight- and sixteen-byte elements).
    grouped: Option<Grouped>,
}

/// A streaming kernel (`Kernel::stream`) over `count` tiles along a third loop (`(count,
/// source_step, target_step)`, steps in elements): each block of every tile in turn, the
/// tiles' blocks innermost.
type StreamBlocks = unsafe fn(*const u8, isize, *mut u8, isize, [usize; 2], (usize, isize, isize));

/// A kernel over a tile of loop groups, as `transpose_grouped` (bases as bytes), streaming
/// its whole target lines where the last argument says so.
type Grouped = unsafe fn(*const u8, &[isize], *mut u8, &[isize], bool);

/// The kernels for elements of `T`'s size on this CPU, if any.
fn kernel<T>() -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") && !avx_only() {
            return match size_of::<T>() {
                4 => Some(Kernel {
                    tiers: &[(16, avx512::blocks_4)],
                    stream: (16, avx512::stream_blocks_4),
                    edges: Some(avx512::edges_4),
                    grouped: Some(avx512::grouped_4),
                }),
                8 => Some(Kernel {
                    tiers: &[(8, avx512::blocks_8)],
                    stream: (8, avx512::stream_blocks_8),
                    edges: Some(avx512::edges_8),
                    grouped: Some(avx512::grouped_8),
                }),
                16 => Some(Kernel {
                    tiers: &[(4, avx512::blocks_16)],
                    stream: (4, avx512::stream_blocks_16),
                    edges: Some(avx512::edges_16),
                    grouped: Some(avx512::grouped_16),
                }),
                32 => Some(Kernel {
                    tiers: &[(2, avx512::blocks_32)],
                    stream: (2, avx512::stream_blocks_32),
                    edges: Some(avx512::edges_32),
                    grouped: None,
                }),
                _ => None,
            };
        }
        if std::arch::is_x86_feature_detected!("avx") {
            return match size_of::<T>() {
                4 => Some(Kernel {
                    tiers: &[(8, avx::blocks_4), (4, sse::blocks_4)],
                    stream: (8, avx::stream_blocks_4),
                    edges: None,
                    grouped: None,
                }),
                8 => Some(Kernel {
                    tiers: &[(4, avx::blocks_8), (2, sse::blocks_8)],
                    stream: (4, avx::stream_blocks_8),
                    edges: None,
                    grouped: None,
                }),
                _ => None,
            };
        }
    }
    None
}

/// Whether this thread's tests asked for AVX's kernels on a CPU with AVX-512 too.
#[cfg(test)]
fn avx_only() -> bool {
    tests::AVX_ONLY.with(std::cell::Cell::get)
}

#[cfg(not(test))]
#[inline(always)]
fn avx_only() -> bool {
    false
}

/// Kernels in SSE registers (every x86-64 CPU has SSE2), for the edges of a tile.
#[cfg(target_arch = "x86_64")]
mod sse {
    use std::arch::x86_64::*;

    /// The whole 4 × 4 blocks of a tile of four-byte elements, each as four loads, eight
    /// shuffles and four stores.
    ///
    /// # Safety
    /// As `transpose_tile`, for the blocks' elements.
    pub(super) unsafe fn blocks_4(
        source: *const u8,
        source_stride: isize,
        target: *mut u8,
        target_stride: isize,
        [rows, columns]: [usize; 2],
    ) {
        let (source, target) = (source.cast::<f32>(), target.cast::<f32>());
        for row in (0..rows / 4 * 4).step_by(4) {
            for column in (0..columns / 4 * 4).step_by(4) {
                let base = source.wrapping_offset(row as isize + column as isize * source_stride);
                // SAFETY: the four runs down source columns `column..column + 4` from row
                // `row` on, and the four along target rows `row..row + 4` from column
                // `column` on, are the block's elements, which the caller vouches for.
                // Unaligned loads and stores, and shuffles, move bits unchanged.
                unsafe {
                    let v0 = _mm_loadu_ps(base);
                    let v1 = _mm_loadu_ps(base.offset(source_stride));
                    let v2 = _mm_loadu_ps(base.offset(2 * source_stride));
                    let v3 = _mm_loadu_ps(base.offset(3 * source_stride));
                    let (t0, t1) = (_mm_unpacklo_ps(v0, v1), _mm_unpackhi_ps(v0, v1));
                    let (t2, t3) = (_mm_unpacklo_ps(v2, v3), _mm_unpackhi_ps(v2, v3));
                    let rows_out = [
                        _mm_movelh_ps(t0, t2),
                        _mm_movehl_ps(t2, t0),
                        _mm_movelh_ps(t1, t3),
                        _mm_movehl_ps(t3, t1),
                    ];
                    for (r, value) in rows_out.into_iter().enumerate() {
                        let to = (row + r) as isize * target_stride + column as isize;
                        _mm_storeu_ps(target.offset(to), value);
                    }
                }
            }
        }
    }

    /// The whole 2 × 2 blocks of a tile of eight-byte elements, each as two loads, two
    /// shuffles and two stores.
    ///
    /// # Safety
    /// As `blocks_4`.
    pub(super) unsafe fn blocks_8(
        source: *const u8,
        source_stride: isize,
        target: *mut u8,
        target_stride: isize,
        [rows, columns]: [usize; 2],
    ) {
        let (source, target) = (source.cast::<f64>(), target.cast::<f64>());
        for row in (0..rows / 2 * 2).step_by(2) {
            for column in (0..columns / 2 * 2).step_by(2) {
                let base = source.wrapping_offset(row as isize + column as isize * source_stride);
                // SAFETY: as in `blocks_4`, for 2 × 2 blocks.
                unsafe {
                    let v0 = _mm_loadu_pd(base);
                    let v1 = _mm_loadu_pd(base.offset(source_stride));
                    let to = target.offset(row as isize * target_stride + column as isize);
                    _mm_storeu_pd(to, _mm_unpacklo_pd(v0, v1));
                    _mm_storeu_pd(to.offset(target_stride), _mm_unpackhi_pd(v0, v1));
                }
            }
        }
    }
}

/// Generates an AVX-512 kernel moving the whole `$side × $side` blocks of `count` tiles along
/// a third loop, each target row's `$side` elements (one cache line) written by one `$store`:
/// non-temporal (streamed, unfenced) or plain (`brick`'s cached kernels, which need no
/// alignment). Columns of blocks outermost: each block reads on down the last one's source
/// columns.
#[cfg(target_arch = "x86_64")]
macro_rules! brick_blocks {
    (
        $(#[$doc:meta])*
        $name:ident, $t:ty, $side:literal, $rows:ident, $store:ident
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As `transpose_tile`, for the blocks' elements of each of the `count` tiles, with
        /// `rows` and `columns` multiples of the side and, where `$store` streams, every
        /// target row of every tile starting on a 64-byte boundary (the caller then fences as
        /// `stream_tile` says); no tile's target element is any tile's source element or
        /// another tile's target element; the CPU must have AVX-512 F.
        #[target_feature(enable = "avx512f")]
        pub(super) unsafe fn $name(
            source: *const u8,
            source_stride: isize,
            target: *mut u8,
            target_stride: isize,
            [rows, columns]: [usize; 2],
            (count, source_step, target_step): (usize, isize, isize),
        ) {
            let (source, target) = (source.cast::<$t>(), target.cast::<$t>());
            for column in (0..columns).step_by($side) {
                for row in (0..rows).step_by($side) {
                    for m in 0..count as isize {
                        let base = source.wrapping_offset(
                            m * source_step + row as isize + column as isize * source_stride,
                        );
                        let corner = target.wrapping_offset(m * target_step + column as isize);
                        // SAFETY: the block's runs down source columns `column..column + side`
                        // from row `row` on, and along target rows `row..row + side` from
                        // column `column` on, of tile `m`, are the tiles', which the caller
                        // vouches for; where the store streams, its 64 bytes start on a
                        // 64-byte boundary, as streaming stores need.
                        unsafe {
                            let rows_out = $rows!(base, source_stride);
                            for (r, value) in rows_out.into_iter().enumerate() {
                                let to = (row + r) as isize * target_stride;
                                $store(corner.offset(to), value);
                            }
                        }
                    }
                }
            }
        }
    };
}

/// Generates a function like `brick_blocks!`'s for target rows that are not a whole number
/// of cache lines apart (see `stream_off_lines`): each block's row vectors joined to the ones
/// before (kept in `staging`, a line a row) by `$permute` into the row's line that ends in the
/// block, streamed by `$stream`.
#[cfg(target_arch = "x86_64")]
macro_rules! stream_off_lines_blocks {
    (
        $(#[$doc:meta])*
        $name:ident, $t:ty, $side:literal, $rows:ident, $load:ident, $store:ident,
        $permute:ident, $index:ident, $stream:ident, $mask_store:ident, $mask:ty
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As `transpose_tile`, for the blocks' elements, with `rows` at least the side and
        /// `columns` a multiple of it, not 0; `staging` holds `rows` lines on line boundaries,
        /// overlapping neither tile; the CPU must have AVX-512 F; the caller fences as
        /// `stream_tile` says.
        #[target_feature(enable = "avx512f")]
        pub(super) unsafe fn $name(
            source: *const u8,
            source_stride: isize,
            target: *mut u8,
            target_stride: isize,
            [rows, columns]: [usize; 2],
            staging: *mut u8,
        ) {
            let (source, target) = (source.cast::<$t>(), target.cast::<$t>());
            let staging = staging.cast::<$t>();
            let size = std::mem::size_of::<$t>();
            // Blocks of columns ahead that make about `OFF_LINES_AHEAD` bytes of the source.
            let ahead = (OFF_LINES_AHEAD / (rows * size * $side).max(1)).max(1);
            for column in (0..columns).step_by($side) {
                for block in (0..rows).step_by($side) {
                    // Where the rows are not a whole number of blocks, the last block ends on
                    // the last row, and its first rows, the block before's, are skipped.
                    let row = block.min(rows - $side);
                    let skip = block - row;
                    let base =
                        source.wrapping_offset(row as isize + column as isize * source_stride);
                    // The same block `ahead` blocks of columns on (about `OFF_LINES_AHEAD`
                    // bytes) asked for: where the rows are few, a block of columns reads
                    // short runs the core does not follow on its own.
                    let next = base.wrapping_offset((ahead * $side) as isize * source_stride);
                    for c in 0..$side {
                        prefetch_line(next.wrapping_offset(c as isize * source_stride).cast());
                    }
                    // SAFETY: the block's runs down source columns `column..column + side`
                    // from row `row` on (`row + side ≤ rows`: `rows` is at least the side)
                    // are the tile's, which the caller vouches for; each row is written by
                    // one block per block of columns (the skipped rows are not); a row's
                    // staged line is the staging's line `row + r`, on a boundary. The line
                    // streamed starts on a line boundary (the row's first is `lead` elements
                    // in, and `column · size` is a whole number of lines), not before the
                    // row (checked), and ends in this block's columns: the tile's. The
                    // masked stores write the block's lanes before the row's first boundary
                    // (the first block) or after its last whole line (the last), the tile's.
                    unsafe {
                        let rows_out = $rows!(base, source_stride);
                        for (r, value) in rows_out.into_iter().enumerate().skip(skip) {
                            let staged = staging.add((row + r) * $side);
                            let at = target.offset((row + r) as isize * target_stride);
                            let lead = (LINE - at as usize % LINE) % LINE / size;
                            let from = if lead == 0 { $side } else { lead };
                            // The row's line that ends in this block (from its vector's
                            // lanes before `from` and the block before's after), on a line
                            // boundary.
                            let line = $permute($load(staged), $index(from), value);
                            let start = at.wrapping_add(column + from).wrapping_sub($side);
                            if column + from >= $side {
                                $stream(start, line);
                            } else {
                                // The first block, whose line starts before the row: its
                                // last `lead` lanes, the row's columns before its first line
                                // boundary, the cached way (one line: a store across two
                                // would take in the streamed one too).
                                let before = !(((1u32 << ($side - lead)) - 1) as $mask);
                                $mask_store(start, before, line);
                            }
                            if column + $side == columns && from < $side {
                                // The last block's lanes from `from` on, the row's columns
                                // after its last whole line, into that line.
                                let rest = $permute(value, $index(from), value);
                                let after = ((1u32 << ($side - from)) - 1) as $mask;
                                $mask_store(at.add(column + from), after, rest);
                            }
                            $store(staged, value);
                        }
                    }
                }
            }
        }
    };
}

/// Generates a function copying a run with non-temporal stores only: `$width`-byte vectors
/// between the target's first and last `$width`-byte boundaries, `movnti` element stores
/// outside them (see `avx::stream`).
#[cfg(target_arch = "x86_64")]
macro_rules! stream_vectors {
    (
        $(#[$doc:meta])*
        $name:ident, $feature:literal, $width:literal, $load:ident, $store:ident
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// Both runs must be valid (reads, writes) and initialized for `bytes` bytes and must
        /// not overlap; `size` is 4 or 8, divides `bytes`, and `target` is aligned to it; the
        /// CPU must have the feature; the caller fences as `stream_run` says.
        #[target_feature(enable = $feature)]
        pub(super) unsafe fn $name(source: *const u8, target: *mut u8, bytes: usize, size: usize) {
            let head = (($width - target as usize % $width) % $width).min(bytes);
            let vectors = (bytes - head) / $width;
            let tail = head + $width * vectors;
            let elements = |from: usize, to: usize| {
                for at in (from..to).step_by(size) {
                    // SAFETY: byte offsets `from..to` step `size` are whole elements of both
                    // runs (`head` and `tail` are multiples of `size`, the target being
                    // aligned to it), initialized, so read as integers of that size; `movnti`
                    // needs no more alignment than that.
                    unsafe {
                        if size == 4 {
                            let value = source.add(at).cast::<i32>().read_unaligned();
                            _mm_stream_si32(target.add(at).cast(), value);
                        } else {
                            let value = source.add(at).cast::<i64>().read_unaligned();
                            _mm_stream_si64(target.add(at).cast(), value);
                        }
                    }
                }
            };
            elements(0, head);
            for vector in 0..vectors {
                let at = head + $width * vector;
                // SAFETY: `$width` bytes of both runs, the target's on a `$width`-byte
                // boundary as streaming vector stores need; a load and a store move bits
                // unchanged.
                unsafe { $store(target.add(at).cast(), $load(source.add(at).cast())) };
            }
            elements(tail, bytes);
        }
    };
}

/// A kernel (`Blocks`) over a tile's whole `side × side` blocks of `$t`, compiled for
/// `$feature`: `$rows!` transposes a block in registers, `$store` writes each of its rows.
/// Rows of blocks outermost: `side` target rows are written whole before the next ones, so a
/// target whose rows are a power of two apart (one cache set) keeps them in cache; each
/// block first asks for its target rows' lines ahead (`prefetch_rows`).
macro_rules! blocks {
    (
        $(#[$doc:meta])*
        $name:ident, $feature:literal, $t:ty, $side:literal, $rows:ident, $store:ident
    ) => {
        $(#[$doc])*
        ///
        /// # Safety
        /// As `transpose_tile`, for the blocks' elements; the CPU must have the feature.
        #[target_feature(enable = $feature)]
        pub(super) unsafe fn $name(
            source: *const u8,
            source_stride: isize,
            target: *mut u8,
            target_stride: isize,
            [rows, columns]: [usize; 2],
        ) {
            let (source, target) = (source.cast::<$t>(), target.cast::<$t>());
            for row in (0..rows / $side * $side).step_by($side) {
                for column in (0..columns / $side * $side).step_by($side) {
                    let base =
                        source.wrapping_offset(row as isize + column as isize * source_stride);
                    // SAFETY: the `side` runs down source columns `column..column + side`
                    // from row `row` on, and the `side` along target rows `row..row + side`
                    // from column `column` on, are the block's elements, which the caller
                    // vouches for. Unaligned loads and stores, and shuffles, move bits
                    // unchanged; a prefetch reads nothing.
                    unsafe {
                        super::prefetch_rows(
                            target.wrapping_offset(row as isize * target_stride + column as isize),
                            target_stride,
                            $side,
                        );
                        let rows_out = $rows!(base, source_stride);
                        for (r, value) in rows_out.into_iter().enumerate() {
                            let to = (row + r) as isize * target_stride + column as isize;
                            $store(target.offset(to), value);
                        }
                    }
                }
            }
        }
    };
}

#[cfg(target_arch = "x86_64")]
mod avx {
    use std::arch::x86_64::*;

    /// The eight rows of the 8 × 8 block of `f32`s whose columns start at `base`, `stride`
    /// apart: eight loads and 24 shuffles. A macro, not a function: the caller's AVX is then
    /// the code's (a function without it would call each intrinsic, and one with it cannot be
    /// forced inline on the crates' Rust version).
    macro_rules! rows_of_8x8_ps {
        ($base:expr, $stride:expr) => {{
            let (base, stride): (*const f32, isize) = ($base, $stride);
            let v0 = _mm256_loadu_ps(base);
            let v1 = _mm256_loadu_ps(base.offset(stride));
            let v2 = _mm256_loadu_ps(base.offset(2 * stride));
            let v3 = _mm256_loadu_ps(base.offset(3 * stride));
            let v4 = _mm256_loadu_ps(base.offset(4 * stride));
            let v5 = _mm256_loadu_ps(base.offset(5 * stride));
            let v6 = _mm256_loadu_ps(base.offset(6 * stride));
            let v7 = _mm256_loadu_ps(base.offset(7 * stride));
            let (t0, t1) = (_mm256_unpacklo_ps(v0, v1), _mm256_unpackhi_ps(v0, v1));
            let (t2, t3) = (_mm256_unpacklo_ps(v2, v3), _mm256_unpackhi_ps(v2, v3));
            let (t4, t5) = (_mm256_unpacklo_ps(v4, v5), _mm256_unpackhi_ps(v4, v5));
            let (t6, t7) = (_mm256_unpacklo_ps(v6, v7), _mm256_unpackhi_ps(v6, v7));
            let s0 = _mm256_shuffle_ps::<0x44>(t0, t2);
            let s1 = _mm256_shuffle_ps::<0xEE>(t0, t2);
            let s2 = _mm256_shuffle_ps::<0x44>(t1, t3);
            let s3 = _mm256_shuffle_ps::<0xEE>(t1, t3);
            let s4 = _mm256_shuffle_ps::<0x44>(t4, t6);
            let s5 = _mm256_shuffle_ps::<0xEE>(t4, t6);
            let s6 = _mm256_shuffle_ps::<0x44>(t5, t7);
            let s7 = _mm256_shuffle_ps::<0xEE>(t5, t7);
            [
                _mm256_permute2f128_ps::<0x20>(s0, s4),
                _mm256_permute2f128_ps::<0x20>(s1, s5),
                _mm256_permute2f128_ps::<0x20>(s2, s6),
                _mm256_permute2f128_ps::<0x20>(s3, s7),
                _mm256_permute2f128_ps::<0x31>(s0, s4),
                _mm256_permute2f128_ps::<0x31>(s1, s5),
                _mm256_permute2f128_ps::<0x31>(s2, s6),
                _mm256_permute2f128_ps::<0x31>(s3, s7),
            ]
        }};
    }

    /// The four rows of the 4 × 4 block of `f64`s whose columns start at `base`, `stride`
    /// apart: four loads and eight shuffles (a macro, as `rows_of_8x8_ps`).
    macro_rules! rows_of_4x4 {
        ($base:expr, $stride:expr) => {{
            let (base, stride): (*const f64, isize) = ($base, $stride);
            let v0 = _mm256_loadu_pd(base);
            let v1 = _mm256_loadu_pd(base.offset(stride));
            let v2 = _mm256_loadu_pd(base.offset(2 * stride));
            let v3 = _mm256_loadu_pd(base.offset(3 * stride));
            let (t0, t1) = (_mm256_unpacklo_pd(v0, v1), _mm256_unpackhi_pd(v0, v1));
            let (t2, t3) = (_mm256_unpacklo_pd(v2, v3), _mm256_unpackhi_pd(v2, v3));
            [
                _mm256_permute2f128_pd::<0x20>(t0, t2),
                _mm256_permute2f128_pd::<0x20>(t1, t3),
                _mm256_permute2f128_pd::<0x31>(t0, t2),
                _mm256_permute2f128_pd::<0x31>(t1, t3),
            ]
        }};
    }

    blocks!(
        /// The whole 8 × 8 blocks of a tile of four-byte elements (`transpose_tile`'s layout,
        /// strides in elements), each as eight loads, 24 shuffles and eight stores.
        blocks_4, "avx", f32, 8, rows_of_8x8_ps, _mm256_storeu_ps
    );

    /// Generates an AVX kernel streaming a tile's blocks two side by side (`2 · $side` columns
    /// of `$t`, one cache line of each target row), each target row's line written by two
    /// non-temporal stores in a row; unfenced.
    macro_rules! stream_block_pairs {
        (
            $(#[$doc:meta])*
            $name:ident, $t:ty, $side:literal, $rows:ident, $store:ident
        ) => {
            $(#[$doc])*
            ///
            /// # Safety
            /// As the matching `blocks_` kernel, for each of the `count` tiles, with `rows` a
            /// multiple of the side, `columns` of twice it, every target row of every tile
            /// starting on a 64-byte boundary, and no tile's target element any tile's source
            /// element or another tile's target element; the caller fences as `stream_tile`
            /// says. (The loop nest takes line-wide tiles, and so bricks of more than one, only
            /// with AVX-512's kernels; these take them from `stream_brick`.)
            #[target_feature(enable = "avx")]
            pub(super) unsafe fn $name(
                source: *const u8,
                source_stride: isize,
                target: *mut u8,
                target_stride: isize,
                [rows, columns]: [usize; 2],
                (count, source_step, target_step): (usize, isize, isize),
            ) {
                let (source, target) = (source.cast::<$t>(), target.cast::<$t>());
                for row in (0..rows).step_by($side) {
                    for column in (0..columns).step_by(2 * $side) {
                        for m in 0..count as isize {
                            let base = source.wrapping_offset(
                                m * source_step + row as isize + column as isize * source_stride,
                            );
                            let corner = target.wrapping_offset(m * target_step + column as isize);
                            // SAFETY: as in the matching `blocks_` kernel, for tile `m`'s two
                            // blocks at columns `column` and `column + side`; each store's 32
                            // bytes start on a 32-byte boundary (a row's line starts on a
                            // 64-byte one), as streaming stores need.
                            unsafe {
                                let left = $rows!(base, source_stride);
                                let right = base.offset($side * source_stride);
                                let right = $rows!(right, source_stride);
                                for r in 0..$side {
                                    let to = corner.offset((row + r) as isize * target_stride);
                                    $store(to, left[r]);
                                    $store(to.add($side), right[r]);
                                }
                            }
                        }
                    }
                }
            }
        };
    }

    stream_block_pairs!(
        /// As `blocks_4`, two 8 × 8 blocks side by side (16 columns, one line of each target
        /// row).
        stream_blocks_4, f32, 8, rows_of_8x8_ps, _mm256_stream_ps
    );

    stream_vectors!(
        /// Copies `bytes` bytes from `source` to `target` with non-temporal stores only
        /// (elements of `size` bytes up to the target's first 32-byte boundary and after its
        /// last, 32-byte vectors between), so the run mixes no cached store into a streamed
        /// line; unfenced.
        stream, "avx", 32, _mm256_loadu_ps, _mm256_stream_ps
    );

    blocks!(
        /// The whole 4 × 4 blocks of a tile of eight-byte elements, each as four loads, eight
        /// shuffles and four stores.
        blocks_8, "avx", f64, 4, rows_of_4x4, _mm256_storeu_pd
    );

    stream_block_pairs!(
        /// As `blocks_8`, two 4 × 4 blocks side by side (eight columns, one line of each
        /// target row).
        stream_blocks_8, f64, 4, rows_of_4x4, _mm256_stream_pd
    );
}

/// Kernels in AVX-512 registers: one block is a cache line of each of its target rows.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{
        prefetch_line, FEW_AHEAD, FEW_COLUMN_AHEAD, LINE, OFF_LINES_AHEAD, PAIRED_ROWS, READ_AHEAD,
        TRIPLES_AHEAD,
    };
    use std::arch::x86_64::*;

    /// The sixteen rows of the 16 × 16 block of `f32`s whose columns start at `base`, `stride`
    /// apart: sixteen loads and 64 shuffles (a macro, as `avx`'s `rows_of_8x8_ps`).
    macro_rules! rows_of_16x16 {
        ($base:expr, $stride:expr) => {{
            let (base, stride): (*const f32, isize) = ($base, $stride);
            let v: [__m512; 16] =
                std::array::from_fn(|c| _mm512_loadu_ps(base.offset(c as isize * stride)));
            rows_of_16x16!(columns v)
        }};
        (columns $v:expr) => {{
            let v: [__m512; 16] = $v;
            // Pairs of columns interleaved: within each 128-bit lane `j`, elements `4j` and
            // `4j + 1` (`lo`), `4j + 2` and `4j + 3` (`hi`) of columns `2p` and `2p + 1`.
            let t: [__m512; 16] = std::array::from_fn(|i| {
                let (p, high) = (i / 2, i % 2 == 1);
                if high {
                    _mm512_unpackhi_ps(v[2 * p], v[2 * p + 1])
                } else {
                    _mm512_unpacklo_ps(v[2 * p], v[2 * p + 1])
                }
            });
            // Quads: `u[4g + q]` holds, in lane `j`, element `4j + q` of columns `4g..4g + 4`.
            let u: [__m512; 16] = std::array::from_fn(|i| {
                let (g, q) = (i / 4, i % 4);
                let (x, y) = (t[4 * g + q / 2], t[4 * g + 2 + q / 2]);
                if q % 2 == 0 {
                    _mm512_shuffle_ps::<0x44>(x, y)
                } else {
                    _mm512_shuffle_ps::<0xEE>(x, y)
                }
            });
            // Lanes gathered: `w[8h + 4s + q]` holds elements `4s + q` and `4s + q + 8` of
            // columns `8h..8h + 4`, then of `8h + 4..8h + 8`.
            let w: [__m512; 16] = std::array::from_fn(|i| {
                let (h, s, q) = (i / 8, i / 4 % 2, i % 4);
                let (x, y) = (u[8 * h + q], u[8 * h + 4 + q]);
                if s == 0 {
                    _mm512_shuffle_f32x4::<0x88>(x, y)
                } else {
                    _mm512_shuffle_f32x4::<0xDD>(x, y)
                }
            });
            // Row `r` (`r = 8e + 4s + q`): element `r` of all sixteen columns.
            let rows: [__m512; 16] = std::array::from_fn(|r| {
                let (e, s, q) = (r / 8, r / 4 % 2, r % 4);
                let (x, y) = (w[4 * s + q], w[8 + 4 * s + q]);
                if e == 0 {
                    _mm512_shuffle_f32x4::<0x88>(x, y)
                } else {
                    _mm512_shuffle_f32x4::<0xDD>(x, y)
                }
            });
            rows
        }};
    }

    /// The eight rows of the 8 × 8 block of `f64`s whose columns start at `base`, `stride`
    /// apart: eight loads and 24 shuffles (a macro, as `rows_of_16x16`).
    macro_rules! rows_of_8x8_pd {
        ($base:expr, $stride:expr) => {{
            let (base, stride): (*const f64, isize) = ($base, $stride);
            let v: [__m512d; 8] =
                std::array::from_fn(|c| _mm512_loadu_pd(base.offset(c as isize * stride)));
            rows_of_8x8_pd!(columns v)
        }};
        (columns $v:expr) => {{
            let v: [__m512d; 8] = $v;
            // Pairs of columns interleaved: within each 128-bit lane `j`, element `2j` (`lo`)
            // or `2j + 1` (`hi`) of columns `2p` and `2p + 1`.
            let t: [__m512d; 8] = std::array::from_fn(|i| {
                let (p, high) = (i / 2, i % 2 == 1);
                if high {
                    _mm512_unpackhi_pd(v[2 * p], v[2 * p + 1])
                } else {
                    _mm512_unpacklo_pd(v[2 * p], v[2 * p + 1])
                }
            });
            // `u[4h + 2s + q]`: elements `2s + q` and `2s + q + 4` of columns `4h..4h + 2`, then
            // of `4h + 2..4h + 4`.
            let u: [__m512d; 8] = std::array::from_fn(|i| {
                let (h, s, q) = (i / 4, i / 2 % 2, i % 2);
                let (x, y) = (t[4 * h + q], t[4 * h + 2 + q]);
                if s == 0 {
                    _mm512_shuffle_f64x2::<0x88>(x, y)
                } else {
                    _mm512_shuffle_f64x2::<0xDD>(x, y)
                }
            });
            // Row `r` (`r = 4e + 2s + q`): element `r` of all eight columns.
            let rows: [__m512d; 8] = std::array::from_fn(|r| {
                let (e, s, q) = (r / 4, r / 2 % 2, r % 2);
                let (x, y) = (u[2 * s + q], u[4 + 2 * s + q]);
                if e == 0 {
                    _mm512_shuffle_f64x2::<0x88>(x, y)
                } else {
                    _mm512_shuffle_f64x2::<0xDD>(x, y)
                }
            });
            rows
        }};
    }

    blocks!(
        /// The whole 16 × 16 blocks of a tile of four-byte elements, each as sixteen loads, 64
        /// shuffles and sixteen stores.
        blocks_4, "avx512f", f32, 16, rows_of_16x16, _mm512_storeu_ps
    );

    blocks!(
        /// The whole 8 × 8 blocks of a tile of eight-byte elements, each as eight loads, 24
        /// shuffles and eight stores.
        blocks_8, "avx512f", f64, 8, rows_of_8x8_pd, _mm512_storeu_pd
    );

    stream_vectors!(
        /// As `avx::stream`, in 64-byte vectors: one store per cache line.
        stream, "avx512f", 64, _mm512_loadu_ps, _mm512_stream_ps
    );

    /// Generates a kernel (`Blocks`) for one block of at most `$side` rows and columns of
    /// `$t`: the source's columns read by masked loads (lanes past the rows neither read
    /// nor faulted on; columns past the block zero), transposed by `$rows!`, and the
    /// target's rows written by masked stores of the block's columns.
    macro_rules! edges {
        (
            $(#[$doc:meta])*
            $name:ident, $t:ty, $side:literal, $per:literal, $rows:ident, $vector:ty,
            $mask:ty, $load:ident, $zero:ident, $store:ident
        ) => {
            $(#[$doc])*
            ///
            /// # Safety
            /// As `transpose_tile`, for the block's elements, with at most `$side` rows and
            /// columns; the CPU must have AVX-512 F.
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn $name(
                source: *const u8,
                source_stride: isize,
                target: *mut u8,
                target_stride: isize,
                [rows, columns]: [usize; 2],
            ) {
                let (source, target) = (source.cast::<$t>(), target.cast::<$t>());
                let (down, across) = (
                    ((1u32 << (rows * $per)) - 1) as $mask,
                    ((1u32 << (columns * $per)) - 1) as $mask,
                );
                // SAFETY: the masked lanes are elements of the block: column `c < columns`,
                // rows `0..rows` down the source, and row `r < rows`, columns `0..columns`
                // along the target, which the caller vouches for; masked-off lanes are
                // neither read nor written, nor faulted on.
                unsafe {
                    let v: [$vector; $side] = std::array::from_fn(|c| {
                        if c < columns {
                            $load(down, source.offset(c as isize * source_stride))
                        } else {
                            $zero()
                        }
                    });
                    let rows_out = $rows!(columns v);
                    for (r, value) in rows_out.into_iter().enumerate().take(rows) {
                        $store(target.offset(r as isize * target_stride), across, value);
                    }
                }
            }
        };
    }

    edges!(
        /// A block of `f32`s cut short at a tile's edge.
        edges_4, f32, 16, 1, rows_of_16x16, __m512, __mmask16, _mm512_maskz_loadu_ps,
        _mm512_setzero_ps, _mm512_mask_storeu_ps
    );

    edges!(
        /// A block of `f64`s cut short at a tile's edge.
        edges_8, f64, 8, 1, rows_of_8x8_pd, __m512d, __mmask8, _mm512_maskz_loadu_pd,
        _mm512_setzero_pd, _mm512_mask_storeu_pd
    );

    /// Generates the kernels of `super::few` for `$t`, `$side` of which fill a vector: a
    /// tile of fewer rows than that whose source is one run (`$split`), of fewer columns whose
    /// target is one run (`$join`), or of that many columns or more whose target is one run
    /// (`$gather`, a block of `$side` columns at a time). Each moves `$side` points of the long
    /// side at a time: the short side's elements of each as one masked load, the block
    /// transposed by `$rows!`, and each result stored whole along the long side (`$split`,
    /// with non-temporal stores of its rows' whole lines where asked to stream), or as one
    /// masked store of a row's elements straight into the target (`$join`, `$gather`).
    macro_rules! few {
        (
            $split:ident, $join:ident, $gather:ident, $t:ty, $side:literal, $rows:ident,
            $vector:ty, $mask:ty, $load:ident, $zero:ident, $store:ident, $storeu:ident,
            $stream:ident
        ) => {
            /// Element `(r, c)` of a tile `R` rows high and `columns` wide: from
            /// `source + c·R + r` to `target + r·target_stride + c`; the whole blocks from
            /// column `lead` on stored with non-temporal stores where `stream`.
            ///
            /// # Safety
            /// As `transpose_tile`'s, for that tile (`source_stride` `R`); the CPU has AVX-512
            /// F; `R` is below the vector's lanes. Where `stream`: each row's column `lead`
            /// starts a cache line, `lead` is below `$side`, and this thread fences before the
            /// target is read, written or handed on (as `stream_tile`).
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn $split<const R: usize>(
                source: *const u8,
                target: *mut u8,
                target_stride: isize,
                columns: usize,
                (lead, stream): (usize, bool),
            ) {
                let (source, target) = (source.cast::<$t>(), target.cast::<$t>());
                let down = ((1u32 << R) - 1) as $mask;
                // The block of columns `c..c + width` (`width ≤ $side`), stored masked.
                // SAFETY (both closures and the loops): column `c`'s elements are the `R` from
                // `source + c·R`, which the masked loads read (no lane past them); row `r`'s
                // are the `columns` from `target + r·target_stride`, which the stores write
                // (the partial blocks' masked to their columns); all valid as the caller
                // vouches. A streamed store's address starts a line (the caller's `lead`).
                let part = |c: usize, width: usize| unsafe {
                    let across = ((1u32 << width) - 1) as $mask;
                    let v: [$vector; $side] = std::array::from_fn(|i| {
                        if i < width {
                            $load(down, source.add((c + i) * R))
                        } else {
                            $zero()
                        }
                    });
                    let out = $rows!(columns v);
                    for (r, row) in out.into_iter().enumerate().take(R) {
                        $store(target.offset(r as isize * target_stride).add(c), across, row);
                    }
                };
                let lead = if stream { lead.min(columns) } else { 0 };
                if lead > 0 {
                    part(0, lead);
                }
                let whole = lead + (columns - lead) / $side * $side;
                let mut c = lead;
                macro_rules! blocks {
                    ($put:ident) => {
                        while c < whole {
                            // The block's `R` lines' worth, `FEW_AHEAD` bytes on, asked for.
                            let next = source.wrapping_add(c * R).cast::<i8>();
                            let next = next.wrapping_add(FEW_AHEAD);
                            for l in 0..R {
                                prefetch_line(next.wrapping_add(l * LINE));
                            }
                            let v: [$vector; $side] = std::array::from_fn(|i| unsafe {
                                $load(down, source.add((c + i) * R))
                            });
                            let out = $rows!(columns v);
                            for (r, row) in out.into_iter().enumerate().take(R) {
                                unsafe {
                                    $put(target.offset(r as isize * target_stride).add(c), row)
                                };
                            }
                            c += $side;
                        }
                    };
                }
                if stream {
                    blocks!($stream);
                } else {
                    blocks!($storeu);
                }
                if c < columns {
                    part(c, columns - c);
                }
            }

            /// Element `(r, c)` of a tile `rows` high and `C` wide: from `source + r +
            /// c·source_stride` to `target + r·C + c`.
            ///
            /// # Safety
            /// As `transpose_tile`'s, for that tile (`target_stride` `C`); the CPU has AVX-512
            /// F; `C` is below the vector's lanes.
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn $join<const C: usize>(
                source: *const u8,
                source_stride: isize,
                target: *mut u8,
                rows: usize,
            ) {
                let (source, target) = (source.cast::<$t>(), target.cast::<$t>());
                let across = ((1u32 << C) - 1) as $mask;
                let mut r = 0;
                // SAFETY: column `c`'s elements are the `rows` from `source +
                // c·source_stride`, which the loads read (the last block's masked to the rows
                // left); row `r`'s are the `C` from `target + r·C`, which the masked stores
                // write; all valid as the caller vouches. A prefetch reads nothing.
                unsafe {
                    while r < rows {
                        let height = (rows - r).min($side);
                        let down = ((1u32 << height) - 1) as $mask;
                        for c in 0..C {
                            let column = source.offset(c as isize * source_stride).add(r);
                            prefetch_line(column.cast::<i8>().wrapping_add(FEW_COLUMN_AHEAD));
                        }
                        let v: [$vector; $side] = std::array::from_fn(|c| {
                            if c < C {
                                $load(down, source.offset(c as isize * source_stride).add(r))
                            } else {
                                $zero()
                            }
                        });
                        let out = $rows!(columns v);
                        for (i, row) in out.into_iter().enumerate().take(height) {
                            $store(target.add((r + i) * C), across, row);
                        }
                        r += $side;
                    }
                }
            }

            /// As `$join`, for `columns` of at least `$side`: a vector's worth of rows at a
            /// time, in blocks of `$side` of its columns.
            ///
            /// # Safety
            /// As `transpose_tile`'s, for that tile (`target_stride` `columns`); the CPU has
            /// AVX-512 F.
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn $gather(
                source: *const u8,
                source_stride: isize,
                target: *mut u8,
                [rows, columns]: [usize; 2],
            ) {
                let (source, target) = (source.cast::<$t>(), target.cast::<$t>());
                let mut r = 0;
                // SAFETY: as `$join`'s, block of columns by block.
                unsafe {
                    while r < rows {
                        let height = (rows - r).min($side);
                        let down = ((1u32 << height) - 1) as $mask;
                        let mut first = 0;
                        while first < columns {
                            let width = (columns - first).min($side);
                            let across = ((1u32 << width) - 1) as $mask;
                            let column = |c: usize| {
                                source.offset((first + c) as isize * source_stride).add(r)
                            };
                            for c in 0..width {
                                let ahead = column(c).cast::<i8>();
                                prefetch_line(ahead.wrapping_add(FEW_COLUMN_AHEAD));
                            }
                            let v: [$vector; $side] = std::array::from_fn(|c| {
                                if c < width {
                                    $load(down, column(c))
                                } else {
                                    $zero()
                                }
                            });
                            let out = $rows!(columns v);
                            for (i, row) in out.into_iter().enumerate().take(height) {
                                $store(target.add((r + i) * columns + first), across, row);
                            }
                            first += $side;
                        }
                        r += $side;
                    }
                }
            }
        };
    }

    few!(
        split_4,
        join_4,
        gather_4,
        f32,
        16,
        rows_of_16x16,
        __m512,
        __mmask16,
        _mm512_maskz_loadu_ps,
        _mm512_setzero_ps,
        _mm512_mask_storeu_ps,
        _mm512_storeu_ps,
        _mm512_stream_ps
    );

    few!(
        split_8,
        join_8,
        gather_8,
        f64,
        8,
        rows_of_8x8_pd,
        __m512d,
        __mmask8,
        _mm512_maskz_loadu_pd,
        _mm512_setzero_pd,
        _mm512_mask_storeu_pd,
        _mm512_storeu_pd,
        _mm512_stream_pd
    );

    /// Generates a `Grouped` kernel for `$t` in `$side × $side` blocks (see
    /// `transpose_grouped`): whole blocks by unmasked loads and stores, streamed where asked
    /// and a row's line starts on a boundary; blocks at the edges by masked ones (lanes past
    /// the rows neither read nor faulted on, columns past the tile zero and not stored).
    macro_rules! grouped {
        (
            $(#[$doc:meta])*
            $name:ident, $t:ty, $side:literal, $per:literal, $rows:ident, $vector:ty,
            $mask:ty, $loadu:ident, $mask_load:ident, $zero:ident, $storeu:ident,
            $stream:ident, $mask_store:ident
        ) => {
            $(#[$doc])*
            ///
            /// # Safety
            /// As `transpose_grouped`; the CPU must have AVX-512 F.
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn $name(
                source: *const u8,
                columns_at: &[isize],
                target: *mut u8,
                rows_at: &[isize],
                stream: bool,
            ) {
                /// The tile as the kernel takes it, with `PAIRED_ROWS` rows or more: two
                /// blocks of columns at a time, the row blocks inside; where both blocks are
                /// whole, each row's two lines stored one after the other and each column's
                /// line `READ_AHEAD` blocks down asked for; the other blocks passed back to
                /// the kernel one by one (a block's rows are fewer than `PAIRED_ROWS`).
                ///
                /// # Safety
                /// As the kernel's.
                #[inline(never)]
                #[target_feature(enable = "avx512f")]
                unsafe fn in_pairs(
                    source: *const $t,
                    columns_at: &[isize],
                    target: *mut $t,
                    rows_at: &[isize],
                    stream: bool,
                ) {
                    for (pair, columns) in columns_at.chunks(2 * $side).enumerate() {
                        for (row, rows) in rows_at.chunks($side).enumerate() {
                            let (row, column) = (row * $side, pair * 2 * $side);
                            let (source, target) =
                                (source.wrapping_add(row), target.wrapping_add(column));
                            if rows.len() < $side || columns.len() < 2 * $side {
                                for (half, columns) in columns.chunks($side).enumerate() {
                                    // SAFETY: the block's elements are the tile's (its columns
                                    // and rows a part of the tile's, `source` and `target`
                                    // moved to its corner), which the caller vouches for.
                                    unsafe {
                                        $name(
                                            source.cast(),
                                            columns,
                                            target.wrapping_add(half * $side).cast(),
                                            rows,
                                            stream,
                                        )
                                    };
                                }
                                continue;
                            }
                            let ahead = (READ_AHEAD * $side) as isize;
                            if row + (READ_AHEAD * $side) < rows_at.len() {
                                for &at in columns {
                                    prefetch_line(source.wrapping_offset(at + ahead).cast());
                                }
                            }
                            let (left, right) = columns.split_at($side);
                            // SAFETY: both blocks whole (checked): column `c` of either is
                            // `side` elements from `source + left[c]` (or `right[c]`) on, row
                            // `r` is `2 · side` from `target + rows[r]` on, elements of the
                            // tile, which the caller vouches for. A block's side is a line, so
                            // where a row's first vector starts on a line boundary (checked)
                            // its second does too, as streaming stores need.
                            unsafe {
                                let v: [$vector; $side] = std::array::from_fn(|c| {
                                    $loadu(source.wrapping_offset(left[c]))
                                });
                                let left = $rows!(columns v);
                                let v: [$vector; $side] = std::array::from_fn(|c| {
                                    $loadu(source.wrapping_offset(right[c]))
                                });
                                let right = $rows!(columns v);
                                // Indexed, not zipped: zipping the two arrays measured slower.
                                for (r, &at) in rows.iter().enumerate() {
                                    let to = target.wrapping_offset(at);
                                    if stream && (to as usize).is_multiple_of(LINE) {
                                        $stream(to, left[r]);
                                        $stream(to.wrapping_add($side), right[r]);
                                    } else {
                                        $storeu(to, left[r]);
                                        $storeu(to.wrapping_add($side), right[r]);
                                    }
                                }
                            }
                        }
                    }
                }

                // Pairs only where every row's lines are streamed (each row on a line
                // boundary): stored the cached way, pairs measured slower (`t[e, d, c, b, a] =
                // s[a, b, c, d, e]` over 23⁵ and 25⁵, rows 92 and 100 bytes long: 25–27 →
                // 16–18 GB/s).
                let streamed_rows = || {
                    rows_at.iter().all(|&at| {
                        (target.cast::<$t>().wrapping_offset(at) as usize).is_multiple_of(LINE)
                    })
                };
                if stream && rows_at.len() >= PAIRED_ROWS && streamed_rows() {
                    // SAFETY: forwarded.
                    unsafe { in_pairs(source.cast(), columns_at, target.cast(), rows_at, stream) };
                    return;
                }
                let (source, target) = (source.cast::<$t>(), target.cast::<$t>());
                for (block, columns) in columns_at.chunks($side).enumerate() {
                    let (width, column) = (columns.len(), block * $side);
                    let across = ((1u32 << (width * $per)) - 1) as $mask;
                    for (row, rows) in rows_at.chunks($side).enumerate() {
                        let (height, row) = (rows.len(), (row * $side) as isize);
                        let down = ((1u32 << (height * $per)) - 1) as $mask;
                        // SAFETY: column `c` of the block is `height` elements from
                        // `source + columns_at[column + c] + row` on, row `r` is `width`
                        // from `target + rows_at[row + r] + column` on: elements of the
                        // tile, which the caller vouches for; masked-off lanes are neither
                        // read nor written, nor faulted on. A streamed store's 64 bytes
                        // start on a 64-byte boundary (checked), as streaming stores need.
                        unsafe {
                            let whole = width == $side && height == $side;
                            let v: [$vector; $side] = std::array::from_fn(|c| {
                                match columns.get(c) {
                                    Some(&at) if whole => {
                                        $loadu(source.wrapping_offset(at + row))
                                    }
                                    Some(&at) => {
                                        $mask_load(down, source.wrapping_offset(at + row))
                                    }
                                    None => $zero(),
                                }
                            });
                            let rows_out = $rows!(columns v);
                            for (&at, value) in rows.iter().zip(rows_out) {
                                // Wrapping: the contract vouches for the elements, not for the
                                // bases (which `in_pairs` moves to a block's corner).
                                let to = target.wrapping_offset(at).wrapping_add(column);
                                if width < $side {
                                    $mask_store(to, across, value);
                                } else if stream && (to as usize).is_multiple_of(LINE) {
                                    $stream(to, value);
                                } else {
                                    $storeu(to, value);
                                }
                            }
                        }
                    }
                }
            }
        };
    }

    grouped!(
        /// A tile of loop groups of four-byte elements, in 16 × 16 blocks.
        grouped_4, f32, 16, 1, rows_of_16x16, __m512, __mmask16, _mm512_loadu_ps,
        _mm512_maskz_loadu_ps, _mm512_setzero_ps, _mm512_storeu_ps, _mm512_stream_ps,
        _mm512_mask_storeu_ps
    );

    grouped!(
        /// A tile of loop groups of eight-byte elements, in 8 × 8 blocks.
        grouped_8, f64, 8, 1, rows_of_8x8_pd, __m512d, __mmask8, _mm512_loadu_pd,
        _mm512_maskz_loadu_pd, _mm512_setzero_pd, _mm512_storeu_pd, _mm512_stream_pd,
        _mm512_mask_storeu_pd
    );

    /// A sixteen-byte element (a `c64`, a run of two `f64`s or four `f32`s), moved as the
    /// bits of two `f64`s.
    pub(super) type Pair = [f64; 2];

    /// The four rows of the 4 × 4 block of `Pair`s whose columns start at `base`, `stride`
    /// apart: four loads and eight shuffles of 128-bit lanes (a macro, as `rows_of_16x16`).
    macro_rules! rows_of_4x4_pairs {
        ($base:expr, $stride:expr) => {{
            let (base, stride): (*const Pair, isize) = ($base, $stride);
            let v: [__m512d; 4] =
                std::array::from_fn(|c| loadu_wide(base.offset(c as isize * stride)));
            rows_of_4x4_pairs!(columns v)
        }};
        (columns $v:expr) => {{
            let v: [__m512d; 4] = $v;
            // Columns `2h` and `2h + 1`: their elements 0 and 1 (`t[2h]`), 2 and 3 (`t[2h + 1]`).
            let t = [
                _mm512_shuffle_f64x2::<0x44>(v[0], v[1]),
                _mm512_shuffle_f64x2::<0xEE>(v[0], v[1]),
                _mm512_shuffle_f64x2::<0x44>(v[2], v[3]),
                _mm512_shuffle_f64x2::<0xEE>(v[2], v[3]),
            ];
            // Row `r`: element `r` of the four columns.
            [
                _mm512_shuffle_f64x2::<0x88>(t[0], t[2]),
                _mm512_shuffle_f64x2::<0xDD>(t[0], t[2]),
                _mm512_shuffle_f64x2::<0x88>(t[1], t[3]),
                _mm512_shuffle_f64x2::<0xDD>(t[1], t[3]),
            ]
        }};
    }

    /// A line's worth of elements of a wide type (`Pair`s or `Quad`s) from `at`, unaligned, as
    /// the bits of eight `f64`s.
    ///
    /// # Safety
    /// Their 64 bytes are valid for reads; the CPU has AVX-512 F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn loadu_wide<E>(at: *const E) -> __m512d {
        // SAFETY: the caller's.
        unsafe { _mm512_loadu_pd(at.cast()) }
    }

    /// The lanes of a line's worth of wide elements from `at` that `mask` holds (the rest
    /// zero): whole elements, as `edges!` asks for them.
    ///
    /// # Safety
    /// The masked lanes are valid for reads; the CPU has AVX-512 F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn mask_load_wide<E>(mask: __mmask8, at: *const E) -> __m512d {
        // SAFETY: the caller's; masked-off lanes are neither read nor faulted on.
        unsafe { _mm512_maskz_loadu_pd(mask, at.cast()) }
    }

    /// A line's worth of wide elements to `to`, unaligned.
    ///
    /// # Safety
    /// Their 64 bytes are valid for writes; the CPU has AVX-512 F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn storeu_wide<E>(to: *mut E, value: __m512d) {
        // SAFETY: the caller's.
        unsafe { _mm512_storeu_pd(to.cast(), value) }
    }

    /// A line's worth of wide elements to `to` by a non-temporal store.
    ///
    /// # Safety
    /// As `storeu_wide`, with `to` on a 64-byte boundary.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn stream_wide<E>(to: *mut E, value: __m512d) {
        // SAFETY: the caller's.
        unsafe { _mm512_stream_pd(to.cast(), value) }
    }

    /// The lanes of `value` that `mask` holds, to `to`.
    ///
    /// # Safety
    /// The masked lanes are valid for writes; the CPU has AVX-512 F.
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn mask_store_wide<E>(to: *mut E, mask: __mmask8, value: __m512d) {
        // SAFETY: the caller's; masked-off lanes are neither written nor faulted on.
        unsafe { _mm512_mask_storeu_pd(to.cast(), mask, value) }
    }

    blocks!(
        /// The whole 4 × 4 blocks of a tile of sixteen-byte elements, each as four loads,
        /// eight shuffles and four stores.
        blocks_16, "avx512f", Pair, 4, rows_of_4x4_pairs, storeu_wide
    );

    brick_blocks!(
        /// As `blocks_16`, each target row's four elements (one cache line) written by one
        /// non-temporal store; unfenced.
        stream_blocks_16, Pair, 4, rows_of_4x4_pairs, stream_wide
    );

    edges!(
        /// A block of sixteen-byte elements cut short at a tile's edge (two mask bits an
        /// element).
        edges_16, Pair, 4, 2, rows_of_4x4_pairs, __m512d, __mmask8, mask_load_wide,
        _mm512_setzero_pd, mask_store_wide
    );

    grouped!(
        /// A tile of loop groups of sixteen-byte elements, in 4 × 4 blocks.
        grouped_16, Pair, 4, 2, rows_of_4x4_pairs, __m512d, __mmask8, loadu_wide,
        mask_load_wide, _mm512_setzero_pd, storeu_wide, stream_wide, mask_store_wide
    );

    /// A thirty-two-byte element (a run of four `f64`s or eight `f32`s), moved as the bits of
    /// four `f64`s.
    pub(super) type Quad = [f64; 4];

    /// The two rows of the 2 × 2 block of `Quad`s whose columns start at `base`, `stride`
    /// apart: two loads and two shuffles of 256-bit halves (a macro, as `rows_of_16x16`).
    macro_rules! rows_of_2x2_quads {
        ($base:expr, $stride:expr) => {{
            let (base, stride): (*const Quad, isize) = ($base, $stride);
            let v: [__m512d; 2] =
                std::array::from_fn(|c| loadu_wide(base.offset(c as isize * stride)));
            rows_of_2x2_quads!(columns v)
        }};
        (columns $v:expr) => {{
            let v: [__m512d; 2] = $v;
            // Row `r`: element `r` (half `r`) of either column.
            [
                _mm512_shuffle_f64x2::<0x44>(v[0], v[1]),
                _mm512_shuffle_f64x2::<0xEE>(v[0], v[1]),
            ]
        }};
    }

    blocks!(
        /// The whole 2 × 2 blocks of a tile of thirty-two-byte elements, each as two loads,
        /// two shuffles and two stores.
        blocks_32, "avx512f", Quad, 2, rows_of_2x2_quads, storeu_wide
    );

    brick_blocks!(
        /// As `blocks_32`, each target row's two elements (one cache line) written by one
        /// non-temporal store; unfenced.
        stream_blocks_32, Quad, 2, rows_of_2x2_quads, stream_wide
    );

    edges!(
        /// A block of thirty-two-byte elements cut short at a tile's edge (four mask bits an
        /// element).
        edges_32, Quad, 2, 4, rows_of_2x2_quads, __m512d, __mmask8, mask_load_wide,
        _mm512_setzero_pd, mask_store_wide
    );

    /// Lanes `from..from + 16` of two vectors of `f32`s laid end to end, as indices.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sixteen_from(from: usize) -> __m512i {
        _mm512_add_epi32(
            _mm512_set1_epi32(from as i32),
            _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
        )
    }

    /// Lanes `from..from + 8` of two vectors of `f64`s laid end to end, as indices.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn eight_from(from: usize) -> __m512i {
        _mm512_add_epi64(
            _mm512_set1_epi64(from as i64),
            _mm512_setr_epi64(0, 1, 2, 3, 4, 5, 6, 7),
        )
    }

    /// Generates a function moving the whole `side × side` blocks of runs of three `$t`s of a
    /// tile (run `(r, c)` from `source + r + c · source_stride` to `target + r ·
    /// target_stride + c`, strides in runs). A block's source column is its `side` runs,
    /// `3 · side` elements, three vectors: the block is three `side × side` blocks of elements
    /// side by side, each transposed in registers (`$rows`). Row `q` of the `m`-th transposed
    /// block holds element `side · m + q` of every column, which is component `k` of run `r`
    /// where `3r + k = side · m + q`: so target row `r`'s runs are the transposed rows `3r`,
    /// `3r + 1` and `3r + 2` (their components 0, 1, 2 for every column), interleaved by two
    /// permutes per vector.
    macro_rules! triples_blocks {
        (
            $(#[$doc:meta])*
            $name:ident, $t:ty, $vector:ty, $side:literal, $rows:ident, $index:ident,
            $zero:ident, $load:ident, $permute:ident, $store:ident
        ) => {
            $(#[$doc])*
            ///
            /// # Safety
            /// As `transpose_tile`, for the blocks' runs (of three `$t`s, strides in runs);
            /// the CPU must have AVX-512 F. Where `$store` streams, every target row of the
            /// tile starts on a 64-byte boundary, and the caller fences as `stream_tile` says.
            #[target_feature(enable = "avx512f")]
            pub(super) unsafe fn $name(
                source: *const u8,
                source_stride: isize,
                target: *mut u8,
                target_stride: isize,
                [rows, columns]: [usize; 2],
            ) {
                let (source, target) = (source.cast::<$t>(), target.cast::<$t>());
                // Lane `l` of output vector `o` is element `side · o + l = 3c + k` of the
                // target row: component `k` of column `c`, lane `c` of transposed row `3r + k`.
                // The first permute takes components 0 and 1 (rows `3r`, `3r + 1` end to
                // end), the second keeps those lanes and takes component 2.
                let mut first = [[0i64; $side]; 3];
                let mut second = [[0i64; $side]; 3];
                for o in 0..3 {
                    for l in 0..$side {
                        let (c, k) = (($side * o + l) / 3, ($side * o + l) % 3);
                        (first[o][l], second[o][l]) = if k < 2 {
                            ((c + $side * k) as i64, l as i64)
                        } else {
                            (0, ($side + c) as i64)
                        };
                    }
                }
                let first = [$index(&first[0]), $index(&first[1]), $index(&first[2])];
                let second = [$index(&second[0]), $index(&second[1]), $index(&second[2])];
                let zero = $zero();
                // The three transposed blocks' rows, `side · m + q` (overwritten each block).
                let mut transposed = [zero; 3 * $side];
                for column in (0..columns / $side * $side).step_by($side) {
                    for row in (0..rows / $side * $side).step_by($side) {
                        // SAFETY: the block's `side` runs down source columns `column..column
                        // + side` from run `row` on (three vectors each), and along target
                        // rows `row..row + side` from run `column` on (three vectors each),
                        // are the tile's, which the caller vouches for. Unaligned loads and
                        // stores, and shuffles, move bits unchanged; a prefetch reads nothing.
                        // (Loops, not closures: a closure would not share this function's
                        // target feature, and its intrinsics would be calls.)
                        unsafe {
                            for m in 0..3 {
                                let mut v = [zero; $side];
                                for (c, lane) in v.iter_mut().enumerate() {
                                    let at = source.wrapping_offset(
                                        3 * (row as isize + (column + c) as isize * source_stride),
                                    );
                                    *lane = $load(at.add(m * $side));
                                    if m == 0 {
                                        // The column's runs `TRIPLES_AHEAD` blocks on asked
                                        // for: the core does not follow so many columns.
                                        let next = at.wrapping_add(3 * $side * TRIPLES_AHEAD);
                                        for line in 0..3 {
                                            prefetch_line(next.cast::<i8>().wrapping_add(line * LINE));
                                        }
                                    }
                                }
                                let out: [$vector; $side] = $rows!(columns v);
                                for (q, vector) in out.into_iter().enumerate() {
                                    transposed[$side * m + q] = vector;
                                }
                            }
                            for r in 0..$side {
                                let to = target.wrapping_offset(
                                    3 * ((row + r) as isize * target_stride + column as isize),
                                );
                                let [x, y, z] =
                                    [transposed[3 * r], transposed[3 * r + 1], transposed[3 * r + 2]];
                                for o in 0..3 {
                                    let xy = $permute(x, first[o], y);
                                    $store(to.add(o * $side), $permute(xy, second[o], z));
                                }
                            }
                        }
                    }
                }
            }
        };
    }

    /// Sixteen indices as the lanes of a vector of `i32`s.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn sixteen_indices(indices: &[i64; 16]) -> __m512i {
        let mut lanes = [0i32; 16];
        for (lane, &index) in lanes.iter_mut().zip(indices) {
            *lane = index as i32;
        }
        // SAFETY: sixteen `i32`s, 64 bytes read unaligned.
        unsafe { _mm512_loadu_si512(lanes.as_ptr().cast()) }
    }

    /// Eight indices as the lanes of a vector of `i64`s.
    #[inline]
    #[target_feature(enable = "avx512f")]
    fn eight_indices(indices: &[i64; 8]) -> __m512i {
        // SAFETY: eight `i64`s, 64 bytes read unaligned.
        unsafe { _mm512_loadu_si512(indices.as_ptr().cast()) }
    }

    triples_blocks!(
        /// Runs of three `f32`s (an image's three channels), in blocks of 16 × 16 runs.
        triples_4, f32, __m512, 16, rows_of_16x16, sixteen_indices, _mm512_setzero_ps,
        _mm512_loadu_ps, _mm512_permutex2var_ps, _mm512_storeu_ps
    );

    triples_blocks!(
        /// Runs of three `f64`s, in blocks of 8 × 8 runs.
        triples_8, f64, __m512d, 8, rows_of_8x8_pd, eight_indices, _mm512_setzero_pd,
        _mm512_loadu_pd, _mm512_permutex2var_pd, _mm512_storeu_pd
    );

    triples_blocks!(
        /// As `triples_4`, each target row's three vectors streamed; unfenced.
        stream_triples_4, f32, __m512, 16, rows_of_16x16, sixteen_indices, _mm512_setzero_ps,
        _mm512_loadu_ps, _mm512_permutex2var_ps, _mm512_stream_ps
    );

    triples_blocks!(
        /// As `triples_8`, each target row's three vectors streamed; unfenced.
        stream_triples_8, f64, __m512d, 8, rows_of_8x8_pd, eight_indices, _mm512_setzero_pd,
        _mm512_loadu_pd, _mm512_permutex2var_pd, _mm512_stream_pd
    );

    stream_off_lines_blocks!(
        /// As `stream_blocks_4`, for target rows not a whole number of lines apart.
        stream_off_lines_4, f32, 16, rows_of_16x16, _mm512_load_ps, _mm512_store_ps,
        _mm512_permutex2var_ps, sixteen_from, _mm512_stream_ps, _mm512_mask_storeu_ps,
        __mmask16
    );

    stream_off_lines_blocks!(
        /// As `stream_blocks_8`, for target rows not a whole number of lines apart.
        stream_off_lines_8, f64, 8, rows_of_8x8_pd, _mm512_load_pd, _mm512_store_pd,
        _mm512_permutex2var_pd, eight_from, _mm512_stream_pd, _mm512_mask_storeu_pd,
        __mmask8
    );

    brick_blocks!(
        /// As `blocks_4`, each target row's sixteen elements (one cache line) written by one
        /// non-temporal store; unfenced.
        stream_blocks_4, f32, 16, rows_of_16x16, _mm512_stream_ps
    );

    brick_blocks!(
        /// As `blocks_8`, each target row's eight elements (one cache line) written by one
        /// non-temporal store; unfenced.
        stream_blocks_8, f64, 8, rows_of_8x8_pd, _mm512_stream_pd
    );

    brick_blocks!(
        /// As `stream_blocks_4`, stored the cached way (`brick`).
        cached_blocks_4, f32, 16, rows_of_16x16, _mm512_storeu_ps
    );

    brick_blocks!(
        /// As `stream_blocks_8`, stored the cached way (`brick`).
        cached_blocks_8, f64, 8, rows_of_8x8_pd, _mm512_storeu_pd
    );
}

#[cfg(test)]
mod tests {
    use super::{
        brick, fence, gather_tile, stream_brick, stream_off_lines, stream_tile, transpose_tile,
        transpose_triples, LINE,
    };

    std::thread_local! {
        /// How many target lines this thread's `stream_tile` calls have streamed.
        pub(super) static STREAMED_LINES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
        /// Whether `kernel` gives this thread AVX's kernels where the CPU has AVX-512 too.
        pub(super) static AVX_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
        /// How many tiles this thread's kernels of `few` have moved.
        pub(super) static FEW_TILES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
    }

    /// Runs `run` with AVX's kernels (and SSE's for their edges) on this thread, as on a CPU
    /// without AVX-512.
    fn with_avx_only(run: impl FnOnce()) {
        AVX_ONLY.with(|flag| flag.set(true));
        run();
        AVX_ONLY.with(|flag| flag.set(false));
    }

    #[test]
    fn avx_kernels_move_exactly() {
        if !std::arch::is_x86_feature_detected!("avx") {
            return;
        }
        with_avx_only(|| {
            check(|n| n as f32 * 0.5 + 1.0, -1.0);
            check(|n| 0x7f80_0001 + n as u32, 0);
            check(|n| n as f64 * 0.25 - 3.0, -1.0);
            check_stream(|n| n as f32 + 0.5, -1.0);
            check_stream(|n| n as f64 - 0.25, -1.0);
            check_bricks(|n| n as f32 + 0.5, -1.0);
            check_bricks(|n| n as f64 - 0.25, -1.0);
            check_runs(|n| n as f32 + 0.5, -1.0);
            check_runs(|n| n as f64 - 0.25, -1.0);
        });
    }

    /// `stream_tile` over every lead (the tile's first column 0 to a line's worth of
    /// elements past a line boundary), rows down and up (a negative target stride), tiles
    /// with and without whole blocks and lines: every element moved, nothing around it
    /// touched, and exactly the whole lines inside the whole blocks streamed.
    fn check_stream<T: Copy + PartialEq + std::fmt::Debug>(value: fn(usize) -> T, blank: T) {
        let size = size_of::<T>();
        let per_line = LINE / size;
        // The rows a stream kernel takes at a time: a line's worth of elements with AVX-512
        // (16 × 16 and 8 × 8 blocks), half that with AVX.
        let wide = std::arch::is_x86_feature_detected!("avx512f") && !super::avx_only();
        let block = if wide { per_line } else { per_line / 2 };
        for (rows, columns) in [(8, 40), (13, 37), (3, 50), (16, 5), (24, 64), (40, 48)] {
            // Target rows a whole number of lines apart, with room for any lead.
            let row_length = (columns + per_line).div_ceil(per_line) * per_line;
            // Source columns a whole number of lines apart (each met by a line boundary at
            // the same row, from which the streamed rows start) or not, from any element of
            // a line on.
            let whole = (rows + per_line).next_multiple_of(per_line);
            let late = 5.min(per_line - 1);
            for (source_stride, source_lead) in
                [(rows + 3, 0), (whole, 0), (whole, 1), (whole, late)]
            {
                let source: Vec<T> = (0..columns * source_stride + 2 * per_line)
                    .map(value)
                    .collect();
                let source_at = source.as_ptr().align_offset(LINE) + source_lead;
                let row_lead = if (source_stride * size).is_multiple_of(LINE) {
                    rows.min((per_line - source_lead) % per_line)
                } else {
                    0
                };
                for lead in 0..per_line {
                    for reversed in [false, true] {
                        // A buffer with a line to spare, its rows starting on a line boundary.
                        let mut target = vec![blank; (rows + 1) * row_length];
                        let aligned = target.as_ptr().align_offset(LINE);
                        assert!(aligned < per_line, "the buffer is aligned to its element");
                        let (first_row, stride) = if reversed {
                            (rows - 1, -(row_length as isize))
                        } else {
                            (0, row_length as isize)
                        };
                        let corner = aligned + first_row * row_length + lead;
                        STREAMED_LINES.with(|count| count.set(0));
                        // SAFETY: the tile's source elements lie in `source` (from
                        // `source_at`, less than a line in, with a line to spare after the
                        // tile); its target rows, `row_length` apart down or up from
                        // `corner`, lie in `target`, which is not `source`; elements of these
                        // types have no padding; fenced before the target is read.
                        let streamed = unsafe {
                            let to = target.as_mut_ptr().add(corner);
                            stream_tile(
                                source.as_ptr().add(source_at),
                                source_stride as isize,
                                to,
                                stride,
                                [rows, columns],
                            )
                        };
                        fence();
                        let case = format!(
                            "{rows} × {columns}, lead {lead}, source stride {source_stride} \
                             from {source_lead} past a line, reversed {reversed}"
                        );
                        assert!(streamed, "{case}");
                        let first_line = ((per_line - lead) % per_line).min(columns);
                        let lines = (columns - first_line) / per_line;
                        let expected_lines = (rows - row_lead) / block * block * lines;
                        assert_eq!(
                            STREAMED_LINES.with(|count| count.get()),
                            expected_lines,
                            "{case}"
                        );
                        for (at, &got) in target.iter().enumerate() {
                            let offset = at as isize - corner as isize;
                            let row = offset.div_euclid(stride.abs());
                            let row = if reversed { -row } else { row };
                            let column = offset.rem_euclid(stride.abs());
                            let inside =
                                (0..rows as isize).contains(&row) && column < columns as isize;
                            let expected = if inside {
                                source[source_at + row as usize + column as usize * source_stride]
                            } else {
                                blank
                            };
                            assert_eq!(got, expected, "{case}: element {at}");
                        }
                    }
                }
            }
        }
        // Rows not a whole number of lines apart: refused, nothing touched.
        let mut target = vec![blank; 64 * 64];
        // SAFETY: the 8 × 8 tile's elements lie in both buffers, which are distinct.
        let streamed = unsafe {
            let source: Vec<T> = (0..64 * 64).map(value).collect();
            stream_tile(
                source.as_ptr(),
                64,
                target.as_mut_ptr(),
                per_line as isize + 1,
                [8, 8],
            )
        };
        assert!(!streamed);
        assert!(target.iter().all(|&element| element == blank));
    }

    #[test]
    fn streamed_tiles_are_moved_exactly() {
        if !super::streams::<f32>() || !super::transposes::<f32>() {
            return;
        }
        check_stream(|n| n as f32 + 0.5, -1.0);
        check_stream(|n| 0x7f80_0001 + n as u32, 0);
        check_stream(|n| n as f64 - 0.25, -1.0);
        check_stream(|n| [n as f32, -(n as f32)], [0.0; 2]);
        check_bricks(|n| n as f32 + 0.5, -1.0);
        check_bricks(|n| n as f64 - 0.25, -1.0);
        check_bricks(|n| [n as f32, -(n as f32)], [0.0; 2]);
        if super::transposes::<[u64; 2]>() {
            check_stream(|n| [n as u64, !(n as u64)], [0; 2]);
            check_bricks(|n| [n as u64, !(n as u64)], [0; 2]);
        }
        if super::transposes::<Quad>() {
            let quad = |n: usize| Quad([n as u64, !(n as u64), 0x7ff0_0000_0000_0001, n as u64]);
            check_stream(quad, Quad([0; 4]));
            check_bricks(quad, Quad([0; 4]));
        }
    }

    /// `brick` over three tiles, anywhere against the lines on both sides (tiles a column and
    /// a few elements apart, rows an odd number of elements apart), with and without whole
    /// blocks and edges on either side: every element of every tile moved, nothing between
    /// them touched; where the CPU has no kernel for the size, refused with nothing touched.
    fn check_cached_bricks<T: Copy + PartialEq + std::fmt::Debug>(value: fn(usize) -> T, blank: T) {
        let count = 3;
        for (rows, columns) in [(13, 37), (32, 48), (16, 5), (40, 17), (1, 1)] {
            let source_stride = rows + 3;
            let row_length = columns + 5;
            let source_step = (columns + 1) * source_stride + 7;
            let target_step = (rows + 1) * row_length + 3;
            let source: Vec<T> = (0..count * source_step + 1).map(value).collect();
            let mut target = vec![blank; count * target_step + 2];
            // SAFETY: tile `m`'s source elements lie in `source` (`m · source_step` on from 1),
            // its target rows, `row_length` apart from `1 + m · target_step`, in `target`,
            // which is not `source`; tiles a row and a column apart share no element.
            let moved = unsafe {
                brick(
                    source.as_ptr().add(1),
                    source_stride as isize,
                    target.as_mut_ptr().add(1),
                    row_length as isize,
                    [rows, columns],
                    (count, source_step as isize, target_step as isize),
                )
            };
            assert_eq!(moved, super::bricks::<T>());
            for (at, &got) in target.iter().enumerate() {
                let offset = at as isize - 1;
                let (m, within) = (
                    offset.div_euclid(target_step as isize),
                    offset.rem_euclid(target_step as isize) as usize,
                );
                let (row, column) = (within / row_length, within % row_length);
                let inside =
                    moved && (0..count as isize).contains(&m) && row < rows && column < columns;
                let expected = if inside {
                    source[1 + m as usize * source_step + row + column * source_stride]
                } else {
                    blank
                };
                assert_eq!(got, expected, "{rows} × {columns}: element {at}");
            }
        }
    }

    /// `stream_off_lines` on tiles of a line's worth of rows or more, a whole number of blocks
    /// or not (the last block overlapping the one before), rows an odd number of elements
    /// apart on both sides, the target where the allocation puts it or three elements on: every
    /// element moved, nothing around the tile touched (fewer rows than a block moved the
    /// cached way); refused, with nothing touched, where the CPU has no kernel.
    fn check_off_lines<T: Copy + PartialEq + std::fmt::Debug>(value: fn(usize) -> T, blank: T) {
        let line = LINE / size_of::<T>();
        for (rows, columns) in [(16, 16), (17, 40), (20, 33), (31, 131), (70, 48), (9, 40)] {
            for lead in [0, 3] {
                let source_stride = rows + 5;
                let row_length = columns + 7;
                let source: Vec<T> = (0..columns * source_stride).map(value).collect();
                let mut target = vec![blank; lead + rows * row_length + line];
                // A line-aligned staging of a line a row, as the nest's tile buffer.
                let mut staging = vec![blank; (rows + 1) * line];
                let skip = staging.as_ptr().align_offset(LINE).min(line);
                // SAFETY: the tile's source (`rows` down, `columns` across, `source_stride`
                // apart) lies in `source`, its target rows (`row_length` apart from `lead`)
                // in `target`; the staging is a third buffer; the fence follows.
                let moved = unsafe {
                    let moved = stream_off_lines(
                        source.as_ptr(),
                        source_stride as isize,
                        target.as_mut_ptr().add(lead),
                        row_length as isize,
                        [rows, columns],
                        &mut staging[skip..],
                    );
                    fence();
                    moved
                };
                let kernel = super::streams_off_lines::<T>() && !super::avx_only();
                assert_eq!(moved, kernel, "{rows} × {columns}");
                for (at, &got) in target.iter().enumerate() {
                    let offset = at.wrapping_sub(lead);
                    let (row, column) = (offset / row_length, offset % row_length);
                    let inside = moved && at >= lead && row < rows && column < columns;
                    let expected = if inside {
                        source[row + column * source_stride]
                    } else {
                        blank
                    };
                    assert_eq!(
                        got, expected,
                        "{rows} × {columns} from {lead}: element {at}"
                    );
                }
            }
        }
    }

    #[test]
    fn rows_off_the_lines_are_streamed_exactly() {
        check_off_lines(|n| n as f32 + 0.5, -1.0);
        check_off_lines(|n| 0x7f80_0001 + n as u32, 0);
        check_off_lines(|n| n as f64 - 0.25, -1.0);
        check_off_lines(|n| n as u64 | 1 << 63, 0);
        // No kernel for sixteen-byte elements: refused.
        check_off_lines(|n| [n as f64, -(n as f64)], [0.0; 2]);
    }

    /// `transpose_triples` on tiles of runs of three elements, whole blocks or none, cut
    /// short both ways, its rows an odd number of runs apart in the source, and in the target
    /// either a whole number of lines apart from a line (streamed or not) or a run past one
    /// and an odd number of runs apart: every run moved, nothing around the tile touched;
    /// refused, with nothing touched, where there is no kernel for the run's size or a
    /// streamed tile's rows do not all start on lines (off the lines, or a whole number of
    /// lines apart from a run past one).
    fn check_triples<E: Copy + PartialEq + std::fmt::Debug>(value: fn(usize) -> E, blank: E) {
        for (rows, columns) in [
            (16usize, 16usize),
            (8, 24),
            (37, 21),
            (5, 40),
            (64, 64),
            (1, 1),
        ] {
            // (Rows a whole number of lines apart, the first on a line, streamed): a streamed
            // tile is refused unless both hold.
            let cases = [
                (true, true, false),
                (true, true, true),
                (false, false, false),
                (false, false, true),
                (true, false, true),
            ];
            for (apart, first_on_line, stream) in cases {
                let source_stride = rows + 3;
                // On the lines: rows sixteen runs' multiple apart (three lines, or six, for
                // runs of three four- or eight-byte elements).
                let row_length = if apart {
                    (columns + 1).next_multiple_of(16)
                } else {
                    columns + 5
                };
                let source: Vec<E> = (0..columns * source_stride).map(value).collect();
                let mut target = vec![blank; rows * row_length + 80];
                // The first run on a line boundary, or one run past it.
                let lead = target.as_ptr().align_offset(LINE).min(79) + usize::from(!first_on_line);
                // SAFETY: the tile's source (`rows` down, `columns` across, `source_stride`
                // apart) lies in `source`, its target rows (`row_length` apart from `lead`) in
                // `target`; the fence follows.
                let moved = unsafe {
                    let moved = transpose_triples(
                        source.as_ptr(),
                        source_stride as isize,
                        target.as_mut_ptr().add(lead),
                        row_length as isize,
                        [rows, columns],
                        stream,
                    );
                    fence();
                    moved
                };
                let expected =
                    super::transposes_triples::<E>() && (apart && first_on_line || !stream);
                let case = format!(
                    "{rows} × {columns}, rows apart {apart}, first on a line {first_on_line}, \
                     streamed {stream}"
                );
                assert_eq!(moved, expected, "{case}");
                for (at, &got) in target.iter().enumerate() {
                    let offset = at.wrapping_sub(lead);
                    let (row, column) = (offset / row_length, offset % row_length);
                    let inside = moved && at >= lead && row < rows && column < columns;
                    let want = if inside {
                        source[row + column * source_stride]
                    } else {
                        blank
                    };
                    assert_eq!(got, want, "{case}: element {at}");
                }
            }
        }
    }

    #[test]
    fn runs_of_three_are_moved_exactly() {
        // Three four- and eight-byte elements (NaN patterns included), as bits; and runs of
        // other sizes, which have no kernel.
        check_triples(|n| [n as f32 + 0.5, -(n as f32), 0.25], [-1.0; 3]);
        check_triples(|n| [0x7f80_0001 + n as u32, n as u32, !(n as u32)], [0; 3]);
        check_triples(|n| [n as f64 - 0.25, n as f64, 1.0], [-1.0; 3]);
        check_triples(|n| [n as u64 | 1 << 63, !(n as u64), 7], [0; 3]);
        check_triples(|n| [n as u16; 3], [0; 3]);
        check_triples(|n| [n as u32; 4], [0; 4]);
    }

    #[test]
    fn cached_bricks_move_exactly() {
        check_cached_bricks(|n| n as f32 + 0.5, -1.0);
        check_cached_bricks(|n| 0x7f80_0001 + n as u32, 0);
        check_cached_bricks(|n| n as f64 - 0.25, -1.0);
        check_cached_bricks(|n| 0x7ff0_0000_0000_0001 + n as u64, 0);
        // Sizes without a cached kernel: refused.
        check_cached_bricks(|n| [n as f32, -(n as f32)], [0.0; 2]);
        assert!(!super::bricks::<[f64; 2]>());
    }

    /// A thirty-two-byte element aligned to its size, so a buffer of them has elements on
    /// every cache line, as the streaming checks need (a vector of `[u64; 4]` may start
    /// sixteen bytes past one).
    #[derive(Clone, Copy, PartialEq, Debug)]
    #[repr(C, align(32))]
    struct Quad([u64; 4]);

    /// `stream_brick` over three tiles: the source's tiles a column and five elements apart
    /// (anywhere against the lines) or a column apart (a whole number of lines), the target's
    /// a whole number of lines apart, every lead,
    /// tiles with and without whole blocks: every element of every tile moved, nothing
    /// between them touched, each tile's whole lines inside its whole blocks streamed; and a
    /// target step off the lines refused with nothing touched.
    fn check_bricks<T: Copy + PartialEq + std::fmt::Debug>(value: fn(usize) -> T, blank: T) {
        let per_line = LINE / size_of::<T>();
        let wide = std::arch::is_x86_feature_detected!("avx512f") && !super::avx_only();
        let block = if wide { per_line } else { per_line / 2 };
        let count = 3;
        for (rows, columns) in [(13, 37), (24, 64), (16, 5), (40, 48)] {
            let row_length = (columns + per_line).div_ceil(per_line) * per_line;
            let source_stride = (rows + per_line).next_multiple_of(per_line);
            for off in [5, 0] {
                let source_step = (columns + 1) * source_stride + off;
                let source: Vec<T> = (0..count * source_step + 2 * per_line).map(value).collect();
                let source_at = source.as_ptr().align_offset(LINE) + 1;
                // The streamed rows start at the source columns' first line boundary where every
                // tile's columns meet one at the same row (tiles a whole number of lines apart).
                let row_lead = if off == 0 { rows.min(per_line - 1) } else { 0 };
                let target_step = (rows + 1) * row_length;
                for lead in 0..per_line {
                    let mut target = vec![blank; count * target_step + per_line];
                    let corner = target.as_ptr().align_offset(LINE) + lead;
                    STREAMED_LINES.with(|lines| lines.set(0));
                    // SAFETY: tile `m`'s source elements lie in `source` (`m · source_step` on
                    // from `source_at`, with a line to spare after the last); its target rows,
                    // `row_length` apart from `corner + m · target_step`, lie in `target`, which
                    // is not `source`; no padding; fenced before the target is read.
                    let streamed = unsafe {
                        stream_brick(
                            source.as_ptr().add(source_at),
                            source_stride as isize,
                            target.as_mut_ptr().add(corner),
                            row_length as isize,
                            [rows, columns],
                            (count, source_step as isize, target_step as isize),
                        )
                    };
                    fence();
                    let case = format!("{rows} × {columns}, lead {lead}");
                    assert!(streamed, "{case}");
                    let first_line = ((per_line - lead) % per_line).min(columns);
                    let lines = (columns - first_line) / per_line;
                    let expected_lines = count * ((rows - row_lead) / block * block * lines);
                    assert_eq!(STREAMED_LINES.with(|n| n.get()), expected_lines, "{case}");
                    for (at, &got) in target.iter().enumerate() {
                        let offset = at as isize - corner as isize;
                        let (m, within) = (
                            offset.div_euclid(target_step as isize),
                            offset.rem_euclid(target_step as isize) as usize,
                        );
                        let (row, column) = (within / row_length, within % row_length);
                        let inside =
                            (0..count as isize).contains(&m) && row < rows && column < columns;
                        let expected = if inside {
                            source[source_at
                                + m as usize * source_step
                                + row
                                + column * source_stride]
                        } else {
                            blank
                        };
                        assert_eq!(got, expected, "{case}: element {at}");
                    }
                }
            }
        }
        // Tiles not a whole number of lines apart in the target: refused, nothing touched.
        let source: Vec<T> = (0..4096).map(value).collect();
        let mut target = vec![blank; 4096];
        // SAFETY: the two 8 × 8 tiles' elements lie in both buffers, which are distinct.
        let streamed = unsafe {
            stream_brick(
                source.as_ptr(),
                per_line as isize,
                target.as_mut_ptr(),
                per_line as isize,
                [8, 8],
                (2, 512, 8 * per_line as isize + 1),
            )
        };
        assert!(!streamed);
        assert!(target.iter().all(|&element| element == blank));
    }

    /// Transposes a `rows × columns` tile out of a source with `pad` spare elements per
    /// column into a target with `pad` spare elements per row, and compares every element
    /// (and every spare one) with the copy made by hand.
    fn check<T: Copy + PartialEq + std::fmt::Debug>(value: fn(usize) -> T, blank: T) {
        for (rows, columns) in [
            (1, 1),
            (7, 13),
            (8, 8),
            (13, 7),
            (16, 9),
            // Edges of whole SSE blocks right of and below wider ones.
            (12, 20),
            (6, 10),
            (64, 64),
            (67, 65),
            // Whole blocks, then edges: AVX-512's cut-short blocks (`edges_4`, `edges_8`), or
            // AVX's, SSE's and single elements (`in_blocks`, AVX only).
            (24, 40),
            (33, 47),
            (16, 16),
            (31, 17),
            // Two to four rows or columns: unpadded, one run split among the rows (or
            // gathered from the columns) by `narrow`; padded, the blocks' edges.
            (2, 37),
            (3, 40),
            (4, 17),
            (3, 1),
            (45, 2),
            (33, 3),
            (20, 4),
            (3, 3),
        ] {
            for pad in [0, 3] {
                let (source_stride, target_stride) = (rows + pad, columns + pad);
                let source: Vec<T> = (0..columns * source_stride).map(value).collect();
                let mut target = vec![blank; rows * target_stride];
                // SAFETY: both buffers hold every element the strides name.
                let copied = unsafe {
                    transpose_tile(
                        source.as_ptr(),
                        source_stride as isize,
                        target.as_mut_ptr(),
                        target_stride as isize,
                        [rows, columns],
                    )
                };
                for row in 0..rows {
                    for column in 0..target_stride {
                        let got = target[row * target_stride + column];
                        let expected = if copied && column < columns {
                            source[row + column * source_stride]
                        } else {
                            blank
                        };
                        assert_eq!(
                            got, expected,
                            "{rows} × {columns}, pad {pad}: ({row}, {column})"
                        );
                    }
                }
            }
        }
    }

    /// Tiles of five to sixteen rows whose source is one run, through `transpose_tile` and
    /// `stream_tile` (target rows a whole number of lines apart or not, from the first, the
    /// second and the last element of a line), and of as many columns whose target is one run
    /// (source columns next to each other or not): every element moved, nothing around it
    /// touched, and the kernels of `few` taking exactly the sides they have (five up to a
    /// vector's lanes less one with AVX-512, none on AVX).
    fn check_few<T: Copy + PartialEq + std::fmt::Debug>(value: fn(usize) -> T, blank: T) {
        let per_line = LINE / size_of::<T>();
        let sides = super::few::sides::<T>();
        // Whether this CPU has kernels for `T` at all (else every call declines).
        let kernel = super::transposes::<T>();
        for short in 5..=16 {
            for long in [1, 15, 16, 17, 40, 100] {
                let taken = usize::from(sides.contains(&short));
                let source: Vec<T> = (0..short * (long + 3)).map(value).collect();
                for (stream, lines_apart) in [(false, false), (true, true), (true, false)] {
                    for lead in [0, 1, per_line - 1] {
                        let row_length = if lines_apart {
                            (long + per_line).next_multiple_of(per_line)
                        } else {
                            long + 3
                        };
                        let mut target = vec![blank; short * row_length + 2 * per_line];
                        let at = target.as_ptr().align_offset(LINE) + lead;
                        FEW_TILES.with(|tiles| tiles.set(0));
                        STREAMED_LINES.with(|lines| lines.set(0));
                        // SAFETY: the tile's source is the first `short · long` elements of
                        // `source`; its target rows, `row_length` apart from `at` (under two
                        // lines in), lie in `target`, which is not `source`; elements of these
                        // types have no padding; fenced before the target is read.
                        let moved = unsafe {
                            let to = target.as_mut_ptr().add(at);
                            let (from, stride) = (source.as_ptr(), row_length as isize);
                            let shape = [short, long];
                            if stream {
                                stream_tile(from, short as isize, to, stride, shape)
                            } else {
                                transpose_tile(from, short as isize, to, stride, shape)
                            }
                        };
                        fence();
                        let case = format!(
                            "{short} rows of {long}, stream {stream}, rows lines apart \
                             {lines_apart}, lead {lead}"
                        );
                        // `stream_tile` takes only rows a whole number of lines apart, and
                        // leaves to the caller what it has no kernel for.
                        let few = if stream && !lines_apart { 0 } else { taken };
                        assert!(moved || !kernel || stream && few == 0, "{case}");
                        assert!(moved || !kernel || !lines_apart || !stream, "{case}");
                        assert_eq!(FEW_TILES.with(|tiles| tiles.get()), few, "{case}");
                        // Streamed by the kernels: each row's whole lines after its lead.
                        if stream && few == 1 {
                            let first = ((per_line - lead) % per_line).min(long);
                            let lines = short * ((long - first) / per_line);
                            assert_eq!(STREAMED_LINES.with(|n| n.get()), lines, "{case}");
                        }
                        for (n, &got) in target.iter().enumerate() {
                            let (row, column) = (
                                (n.wrapping_sub(at)) / row_length,
                                (n.wrapping_sub(at)) % row_length,
                            );
                            let expected = if moved && n >= at && row < short && column < long {
                                source[row + column * short]
                            } else {
                                blank
                            };
                            assert_eq!(got, expected, "{case}: element {n}");
                        }
                    }
                }
                // The converse: `long` rows of `short` columns, the target one run (never
                // streamed: its rows are not a whole number of lines apart).
                for pad in [0, 3] {
                    let source_stride = long + pad;
                    let mut target = vec![blank; long * short + per_line];
                    FEW_TILES.with(|tiles| tiles.set(0));
                    // SAFETY: the tile's source columns, `source_stride` apart, lie in `source`
                    // (`short · (long + 3)` elements); its target is the first `long · short`
                    // elements of `target`, which is not `source`; elements of these types have
                    // no padding.
                    let moved = unsafe {
                        transpose_tile(
                            source.as_ptr(),
                            source_stride as isize,
                            target.as_mut_ptr(),
                            short as isize,
                            [long, short],
                        )
                    };
                    let case = format!("{long} rows of {short}, pad {pad}");
                    assert_eq!(moved, kernel, "{case}");
                    // (Rows of five up to a vector's lanes less one, one run when unpadded,
                    // are split by the same kernels first.)
                    let split = pad == 0 && sides.contains(&long);
                    if !split {
                        assert_eq!(FEW_TILES.with(|tiles| tiles.get()), taken, "{case}");
                    }
                    for (n, &got) in target.iter().enumerate() {
                        let expected = if n < long * short {
                            source[n / short + n % short * source_stride]
                        } else {
                            blank
                        };
                        assert_eq!(got, expected, "{case}: element {n}");
                    }
                }
            }
        }
    }

    /// `gather_tile` over rows of a vector's lanes up to past [`few::GATHERED_ROW_BYTES`], a
    /// whole number of lines apart or not, with source columns next to each other or not:
    /// exactly the rows off the lines up to that length taken, every element of those moved,
    /// nothing around them touched, and nothing at all touched where it declines.
    fn check_gather<T: Copy + PartialEq + std::fmt::Debug>(value: fn(usize) -> T, blank: T) {
        let (size, lanes) = (size_of::<T>(), LINE / size_of::<T>());
        let most = super::few::GATHERED_ROW_BYTES / size;
        let wide = !super::few::sides::<T>().is_empty();
        for columns in [
            lanes,
            lanes + 1,
            2 * lanes,
            20,
            33,
            most - 1,
            most,
            most + 1,
        ] {
            let takes = wide && columns <= most && !(columns * size).is_multiple_of(LINE);
            assert_eq!(super::gathers::<T>(columns), takes, "{columns} columns");
            for rows in [1, lanes - 1, lanes, lanes + 1, 100] {
                for pad in [0, 3] {
                    let source_stride = rows + pad;
                    let source: Vec<T> = (0..columns * source_stride).map(value).collect();
                    let mut target = vec![blank; rows * columns + lanes];
                    FEW_TILES.with(|tiles| tiles.set(0));
                    // SAFETY: the tile's source columns, `source_stride` apart, lie in
                    // `source`; its target is the first `rows · columns` elements of `target`,
                    // which is not `source`; elements of these types have no padding.
                    let moved = unsafe {
                        let (from, to) = (source.as_ptr(), target.as_mut_ptr());
                        let shape = [rows, columns];
                        gather_tile(from, source_stride as isize, to, columns as isize, shape)
                    };
                    let case = format!("{rows} rows of {columns}, pad {pad}");
                    assert_eq!(moved, takes, "{case}");
                    assert_eq!(
                        FEW_TILES.with(|tiles| tiles.get()),
                        usize::from(takes),
                        "{case}"
                    );
                    for (n, &got) in target.iter().enumerate() {
                        let expected = if moved && n < rows * columns {
                            source[n / columns + n % columns * source_stride]
                        } else {
                            blank
                        };
                        assert_eq!(got, expected, "{case}: element {n}");
                    }
                }
            }
        }
    }

    #[test]
    fn rows_off_the_lines_are_gathered_exactly() {
        check_gather(|n| n as f32 * 0.5 + 1.0, -1.0);
        check_gather(|n| 0x7f80_0001 + n as u32, 0);
        check_gather(|n| n as f64 * 0.25 - 3.0, -1.0);
        check_gather(|n| 0x7ff0_0000_0000_0001 + n as u64, 0);
        with_avx_only(|| check_gather(|n| n as f32 * 0.5 + 1.0, -1.0));
    }

    #[test]
    fn few_rows_or_columns_are_moved_exactly() {
        check_few(|n| n as f32 * 0.5 + 1.0, -1.0);
        check_few(|n| 0x7f80_0001 + n as u32, 0);
        check_few(|n| n as f64 * 0.25 - 3.0, -1.0);
        check_few(|n| 0x7ff0_0000_0000_0001 + n as u64, 0);
        // Other sizes have no such kernels: the tiles go to the blocks' edges.
        check_few(|n| [n as f64, -0.5], [0.0; 2]);
        with_avx_only(|| {
            check_few(|n| n as f32 * 0.5 + 1.0, -1.0);
            check_few(|n| n as f64 * 0.25 - 3.0, -1.0);
        });
    }

    #[test]
    fn four_byte_elements_are_moved_exactly() {
        check(|n| n as f32 * 0.5 + 1.0, -1.0);
        check(|n| n as i32 - 1000, i32::MIN);
        // Bits no arithmetic would keep, signalling NaNs as `f32`, compared as integers.
        check(|n| 0x7f80_0001 + n as u32, 0);
    }

    #[test]
    fn eight_byte_elements_are_moved_exactly() {
        check(|n| n as f64 * 0.25 - 3.0, -1.0);
        check(|n| [n as f32, -(n as f32)], [0.0; 2]);
        check(|n| 0x7ff0_0000_0000_0001 + n as u64, 0);
    }

    #[test]
    fn sixteen_byte_elements_are_moved_exactly() {
        // (Copied with AVX-512's 4 × 4 blocks; elsewhere left to the caller, as `check`
        // expects.)
        check(|n| [n as f64, -0.5], [0.0; 2]);
        check(|n| [0x7ff0_0000_0000_0001 + n as u64, !(n as u64)], [0; 2]);
        check(|n| [n as f32, 1.0, -(n as f32), f32::MIN], [0.0; 4]);
    }

    #[test]
    fn thirty_two_byte_elements_are_moved_exactly() {
        // (Copied with AVX-512's 2 × 2 blocks, runs of four `f64`s or eight `f32`s; elsewhere
        // left to the caller, as `check` expects.)
        check(|n| [n as f64, -0.5, n as f64 * 3.0, f64::MAX], [0.0; 4]);
        check(
            |n| [0x7ff0_0000_0000_0001 + n as u64, !(n as u64), 7, n as u64],
            [0; 4],
        );
        check(
            |n| std::array::from_fn::<f32, 8, _>(|k| (n * 8 + k) as f32),
            [0.0; 8],
        );
    }

    /// Runs of every length around a vector's, from every alignment of both sides: copied
    /// exactly by `stream_run` where it can, nothing around them touched.
    fn check_runs<T: Copy + PartialEq + std::fmt::Debug>(value: fn(usize) -> T, blank: T) {
        let source: Vec<T> = (0..64).map(value).collect();
        for length in [0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 40, 56] {
            for from in 0..4 {
                for to in 0..8 {
                    let mut target = [blank; 64];
                    // SAFETY: both runs lie in their buffers, which are distinct; the
                    // element types have no padding; fenced before the target is read.
                    let copied = unsafe {
                        super::stream_run(
                            source[from..].as_ptr(),
                            target[to..].as_mut_ptr(),
                            length,
                        )
                    };
                    super::fence();
                    // Every run is streamed where the CPU can and the target is aligned
                    // to the element's size.
                    let piece = size_of::<T>().min(8);
                    let aligned = (target[to..].as_ptr() as usize).is_multiple_of(piece);
                    assert_eq!(copied, super::streams::<T>() && aligned);
                    for (at, &got) in target.iter().enumerate() {
                        let expected = if copied && (to..to + length).contains(&at) {
                            source[from + at - to]
                        } else {
                            blank
                        };
                        assert_eq!(got, expected, "length {length}, from {from}, to {to}");
                    }
                }
            }
        }
    }

    #[test]
    fn streamed_runs_are_copied_exactly() {
        check_runs(|n| n as f32 + 0.5, -1.0);
        // Bits no arithmetic would keep, signalling NaNs as `f32`, compared as integers.
        check_runs(|n| 0x7f80_0001 + n as u32, 0);
        check_runs(|n| n as f64 - 0.25, -1.0);
        check_runs(|n| [n as u16; 4], [0; 4]);
        // Sixteen-byte elements as two of eight, aligned to eight bytes.
        check_runs(|n| [n as f64, 1.0], [0.0; 2]);
        check_runs(|n| [n as u32; 4], [0; 4]);
        // Other sizes are left to the caller.
        check_runs(|n| n as u16, 0);
        check_runs(|n| [n as u16; 3], [0; 3]);
    }

    #[test]
    fn other_sizes_are_left_to_the_caller() {
        check(|n| [n as f64, 1.0, 2.0], [0.0; 3]);
        check(|n| n as u16, 0);
        let source = [1u16; 4];
        let mut target = [0u16; 4];
        // SAFETY: both buffers hold the 2 × 2 tile.
        let copied = unsafe { transpose_tile(source.as_ptr(), 2, target.as_mut_ptr(), 2, [2, 2]) };
        assert!(!copied);
        assert_eq!(target, [0; 4]);
    }
}

//! Two-operand contraction steps whose matrices no GEMM call takes on their own strides →
//! panels packed from the operands as they lie and the thin kernel, C written where it lies
//! (GETT: no copy of C, no gathering per call). Invariant: every element of C is its terms
//! summed in the order of the flattened inner index by one kernel call over all of them
//! ([`Element::product_into_runs`], or [`Element::small_gemm`] into a tile), then combined
//! with C as the step's mode says: the same bits whatever block of rows, panel or thread
//! computes it.

use crate::element::Element;
use crate::operand::access::Mode;

use super::gemm::{Role, PARALLEL_GEMM_WORK};
use super::parallel::for_each_part;
use super::scratch::Scratch;
use super::sort_loops;
use super::step::Step;

/// The deepest inner dimension taken: one panel of the column operand (`DEEPEST` × the
/// kernel's columns) then stays in the first two cache levels while every block of rows
/// passes over it.
pub(super) const DEEPEST: usize = 512;

/// About how many bytes a block of the row operand takes: a block stays in the second cache
/// level while every panel passes over it.
const BLOCK_BYTES: usize = 96 << 10;

/// Blocks of rows per thread at least, where threads share the work: blocks of different
/// cost (the last one short) even out between them.
const SHARES: usize = 4;

/// Rows of a tile: three of the thin kernel's blocks where a row is two vectors (eight rows
/// each), a block of sixteen and one of eight where it is one; blocks of rows are multiples of
/// it. Twelve rows took two blocks (eight and a four, whose sums are half as many per load)
/// where a row is two vectors: TCCG `abcdef-dega-gfbc`, `f32`, one binary in turns, one
/// thread 6.23–6.41 → 6.01–6.07 ms, two 3.17–3.20 → 3.09–3.11 ms (sixteen rows: 6.06–6.24
/// and 3.24–3.35; thirty-two: 6.13–6.17 and 3.43–3.49).
const KERNEL_ROWS: usize = 24;

/// Each loop's offsets in `N` tensors, for every value of the loops `loops` (outermost first,
/// the last one stepping fastest): entry `i` of `offsets[t]` is `Σ value·stride` in tensor `t`.
fn flattened<const L: usize, const N: usize>(
    loops: &[usize],
    extents: &[usize; L],
    strides: [&[isize; L]; N],
) -> [Vec<isize>; N] {
    let mut offsets: [Vec<isize>; N] = std::array::from_fn(|_| vec![0]);
    for &var in loops {
        for (offsets, strides) in offsets.iter_mut().zip(strides) {
            *offsets = offsets
                .iter()
                .flat_map(|&offset| {
                    (0..extents[var] as isize).map(move |v| offset + v * strides[var])
                })
                .collect();
        }
    }
    offsets
}

/// The most rows, and the most columns, taken: each has a table of offsets (two `isize`s an
/// entry), so these cap their memory at 32 MiB.
const LONGEST_SIDE: usize = 1 << 20;

/// Whether a step whose rows, columns and inner dimension (the products of its left, right
/// and contracted extents) are `[rows, columns, inner]` can run in panels on the host: at most
/// [`DEEPEST`] deep, at most [`LONGEST_SIDE`] rows and columns, and the type has the thin
/// kernel.
pub(super) fn suits<T: Element>([rows, columns, inner]: [usize; 3]) -> bool {
    inner <= DEEPEST
        && rows <= LONGEST_SIDE
        && columns <= LONGEST_SIDE
        && T::tile_columns().is_some()
}

/// The raw pointers a part of the work needs, shareable between threads.
struct Panels<'p, T> {
    rows: *const T,
    c: *mut T,
    alpha: T,
    /// The step's mode as [`Element::combine_tile`] takes it: `None` assigns, one adds, any
    /// other β scales C first.
    beta: Option<T>,
    conj: [bool; 2],
    /// Offsets of each row in the row operand and in C.
    row_offsets: &'p [Vec<isize>; 2],
    /// Offsets of each step of the inner dimension in the row operand.
    inner_offsets: &'p [isize],
    /// The column operand packed: for each panel, `inner × width` row-major.
    packed: &'p [T],
    /// For each panel, the runs of its columns that lie next to each other in C: (first
    /// column in the panel, length, offset in C of the first).
    runs: &'p [Vec<(usize, usize, isize)>],
    width: usize,
    block: usize,
    /// Whether a block is packed a column at a time (the row operand's rows lie closer
    /// together than the steps of its inner dimension) rather than a row at a time.
    rows_along_rows: bool,
}

// SAFETY: parts run disjoint blocks of rows, so they write disjoint elements of C (the step's
// target is injective, which `roles` checked); the operands are only read.
unsafe impl<T: Sync> Sync for Panels<'_, T> {}

impl<T: Element> Panels<'_, T> {
    /// Rows `rows` of C: the row operand's block packed, then one kernel call per panel
    /// straight into C's runs (`Element::product_into_runs`), or into a tile combined into C
    /// run by run where the type has no such kernel.
    fn run(&self, rows: std::ops::Range<usize>) {
        let inner = self.inner_offsets.len();
        let width = self.width;
        let mut scratch = Scratch::<T>::with_lengths([self.block * inner, KERNEL_ROWS * width]);
        let [packed_rows, tile] = scratch.buffers();
        let mut start = rows.start;
        while start < rows.end {
            let height = (rows.end - start).min(self.block);
            let row_offsets = &self.row_offsets[0][start..start + height];
            // Column-major `height × inner`: the kernel broadcasts a column's rows in turn.
            // SAFETY: the step proved every offset its loops reach inside the row operand's
            // buffer; `row + step` is one (a row's and a step's offsets are sums of whole
            // loops' values times strides, from the operand's base).
            let read = |row: isize, step: isize| unsafe { self.rows.offset(row + step).read() };
            pack(
                packed_rows,
                height,
                [row_offsets, self.inner_offsets],
                self.rows_along_rows,
                read,
            );
            for (panel, runs) in self.runs.iter().enumerate() {
                let columns = runs.iter().map(|&(_, length, _)| length).sum::<usize>();
                let packed = &self.packed[panel * inner * width..(panel + 1) * inner * width];
                // The kernel's rows at a time, each tile combined into C before the next is
                // summed, so C's stores drain while the kernel runs.
                for first_row in (0..height).step_by(KERNEL_ROWS) {
                    let rows = (height - first_row).min(KERNEL_ROWS);
                    let c_rows = &self.row_offsets[1][start + first_row..][..rows];
                    // The tile's lines of C asked for (to be written) while the kernel sums
                    // it, so its stores find them in cache (TCCG `abcdef-dega-gfbc`, whose C
                    // is 12 MB written once in runs of 12: one thread 6.66–6.72 → 6.46–6.55
                    // ms, two 3.57 → 3.45, alternated in one process, min of 50).
                    for &row in c_rows {
                        for &(_, length, offset) in runs {
                            let first = self.c.wrapping_offset(row + offset);
                            prefetch_for_writing(first);
                            prefetch_for_writing(first.wrapping_add(length - 1));
                        }
                    }
                    let a = (packed_rows[first_row..].as_ptr(), 1, height as isize);
                    // Straight into C where the type's kernel can: the same bits as the tile
                    // combined below, without writing and reading the tile (TCCG
                    // `abcdef-dega-gfbc`, one binary in turns: one thread 168–173 → 180–189
                    // GFLOP/s, two 319–326 → 336–342).
                    // SAFETY: A is rows `first_row..` of the packed block (`height × inner`,
                    // column-major), B the panel (`inner × columns`, rows `width` apart): this
                    // function's own buffers; C's rows and runs as `combine_tile` below
                    // takes them (the step proved every offset inside the target, no other
                    // part writes these rows), overlapping neither.
                    let into_c = self.conj == [false, false]
                        && unsafe {
                            T::product_into_runs(
                                rows,
                                inner,
                                columns,
                                self.alpha,
                                a,
                                (packed.as_ptr(), width as isize),
                                self.beta,
                                (self.c, c_rows, runs),
                            )
                        };
                    if into_c {
                        continue;
                    }
                    // SAFETY: A is rows `first_row..` of the packed block (`height × inner`,
                    // column-major), B the panel (`inner × columns`, rows `width` apart), C the
                    // tile (`rows × columns`, rows `width` apart): all this function's own
                    // buffers, none overlapping another.
                    unsafe {
                        T::small_gemm(
                            rows,
                            inner,
                            columns,
                            self.alpha,
                            a,
                            (packed.as_ptr(), width as isize, 1),
                            T::ZERO,
                            (tile.as_mut_ptr(), width as isize, 1),
                            self.conj,
                        )
                    };
                    // SAFETY: the step proved every offset of the target over its loops
                    // inside its buffer, and a row's and a column's offsets are such sums; no
                    // other part writes these rows (disjoint blocks); the tile is this
                    // function's own, its runs inside its rows (a panel's columns).
                    unsafe { T::combine_tile(self.beta, self.c, c_rows, runs, tile, width) };
                }
            }
            start += height;
        }
    }
}

/// `packed[p·leading + i] = read(outer[i], inner[p])` for every `i` and `p`: a block of rows
/// (column-major) or a panel of columns (row-major), visited along `outer` (each `p` in turn)
/// where `along_outer`, else along `inner`, whichever reads the operand in the shorter steps.
fn pack<T>(
    packed: &mut [T],
    leading: usize,
    [outer, inner]: [&[isize]; 2],
    along_outer: bool,
    read: impl Fn(isize, isize) -> T,
) {
    if along_outer {
        for (p, &step) in inner.iter().enumerate() {
            for (slot, &offset) in packed[p * leading..].iter_mut().zip(outer) {
                *slot = read(offset, step);
            }
        }
    } else {
        for (i, &offset) in outer.iter().enumerate() {
            for (p, &step) in inner.iter().enumerate() {
                packed[p * leading + i] = read(offset, step);
            }
        }
    }
}

/// Runs a contraction step with `roles` ([`super::gemm::roles`]) in panels: the kernel's
/// columns run along C's shortest stride (A and B change places where that loop is a row of
/// the GEMM, unless the operand holding it would then be packed across its own shortest
/// stride), the other operand ("rows") is packed a block at a time and the column operand
/// once per batch, and each tile is combined into C where it lies. Blocks of rows go to the
/// pool's threads when the work is large; every element's arithmetic is the same either way.
///
/// # Panics
/// If the step's type has no thin kernel ([`suits`] says whether it has).
pub(super) fn contract<T: Element, const L: usize>(
    step: &Step<'_, T, L, 2>,
    roles: &[Role; L],
    conj: [bool; 2],
) {
    let width = T::tile_columns().expect("a contraction in panels needs the thin kernel");
    let extents = step.extents();
    let [a, b] = step.operands();
    let c = step.target();
    let loops = |role: Role| -> Vec<usize> {
        (0..L)
            .filter(|&var| roles[var] == role && extents[var] > 1)
            .collect()
    };
    let by = |loops: &mut Vec<usize>, strides: &[isize; L]| {
        sort_loops(loops, &|var| std::cmp::Reverse(strides[var].unsigned_abs()))
    };
    // The kernel's columns run along C's shortest stride among the GEMM's rows and columns
    // (runs of C written whole), unless the operand holding that loop would then be packed
    // from across its own shortest stride: A and B change places where that is a row.
    let orientation = |swapped: bool| {
        let (rows_of, columns_of, column_role) = if swapped {
            (b, a, Role::Left)
        } else {
            (a, b, Role::Right)
        };
        let mut column_loops = loops(column_role);
        by(&mut column_loops, &c.strides);
        let mut inner_loops = loops(Role::Contracted);
        by(&mut inner_loops, &rows_of.strides);
        (rows_of, columns_of, column_loops, inner_loops)
    };
    let unit = (0..L)
        .filter(|&var| matches!(roles[var], Role::Left | Role::Right) && extents[var] > 1)
        .min_by_key(|&var| c.strides[var].unsigned_abs());
    let mut swapped = unit.is_some_and(|var| roles[var] == Role::Left);
    let packed_across = |(_, columns_of, column_loops, inner_loops): &(
        &super::step::Bound<'_, T, L>,
        &super::step::Bound<'_, T, L>,
        Vec<usize>,
        Vec<usize>,
    )| {
        let shortest = |loops: &Vec<usize>| {
            loops
                .last()
                .map_or(usize::MAX, |&var| columns_of.strides[var].unsigned_abs())
        };
        let least = (0..L)
            .filter(|&var| columns_of.uses >> var & 1 == 1 && extents[var] > 1)
            .map(|var| columns_of.strides[var].unsigned_abs())
            .min()
            .unwrap_or(0);
        shortest(column_loops).min(shortest(inner_loops)) > least
    };
    if packed_across(&orientation(swapped)) && !packed_across(&orientation(!swapped)) {
        swapped = !swapped;
    }
    let (rows_of, columns_of, column_loops, inner_loops) = orientation(swapped);
    let row_role = if swapped { Role::Right } else { Role::Left };
    let conj = if swapped { [conj[1], conj[0]] } else { conj };
    // Rows in C's order: a tile's rows then lie close together in C, and its runs fill C's
    // lines a tile at a time (TCCG `abcdef-dega-gfbc`: a tile's 24 rows the 288 contiguous
    // elements of `z[a, b, c, d..d + 2, 0..12, 0..12]` for each `c`, against rows a megabyte
    // apart in the row operand's order). A block is packed once for every panel, so the order
    // it is read in matters less.
    let mut row_loops = loops(row_role);
    by(&mut row_loops, &c.strides);
    let row_offsets = flattened(&row_loops, extents, [&rows_of.strides, &c.strides]);
    let [column_in_operand, column_in_c] =
        flattened(&column_loops, extents, [&columns_of.strides, &c.strides]);
    let [inner_in_rows, inner_in_columns] = flattened(
        &inner_loops,
        extents,
        [&rows_of.strides, &columns_of.strides],
    );
    let batch_offsets = flattened(
        &loops(Role::Batch),
        extents,
        [&rows_of.strides, &columns_of.strides, &c.strides],
    );
    // Each operand packed along whichever of its loops lies closer together: the innermost of
    // its rows (columns) or of the inner dimension.
    let closer = |operand: &super::step::Bound<'_, T, L>, outer: &[usize]| {
        let innermost = |loops: &[usize]| {
            loops
                .last()
                .map_or(usize::MAX, |&var| operand.strides[var].unsigned_abs())
        };
        innermost(outer) <= innermost(&inner_loops)
    };
    let (rows_along_rows, columns_along_columns) = (
        closer(rows_of, &row_loops),
        closer(columns_of, &column_loops),
    );
    let (rows, columns, inner) = (row_offsets[0].len(), column_in_c.len(), inner_in_rows.len());
    let panels = columns.div_ceil(width);
    let runs: Vec<Vec<(usize, usize, isize)>> = (0..panels)
        .map(|panel| {
            let offsets = &column_in_c[panel * width..((panel + 1) * width).min(columns)];
            let mut runs: Vec<(usize, usize, isize)> = Vec::new();
            for (column, &offset) in offsets.iter().enumerate() {
                match runs.last_mut() {
                    Some((first, length, start))
                        if *start + *length as isize == offset && *first + *length == column =>
                    {
                        *length += 1
                    }
                    _ => runs.push((column, 1, offset)),
                }
            }
            runs
        })
        .collect();
    let threads = rayon::current_num_threads();
    let parallel =
        threads > 1 && rows.saturating_mul(columns).saturating_mul(inner) >= PARALLEL_GEMM_WORK;
    let block = {
        let fit = BLOCK_BYTES / (inner.max(1) * size_of::<T>());
        // With threads, at least `SHARES` blocks each, which the pool balances between them.
        let share = if parallel {
            rows.div_ceil(threads * SHARES)
        } else {
            rows
        };
        (fit.min(share) / KERNEL_ROWS * KERNEL_ROWS)
            .clamp(KERNEL_ROWS, rows.next_multiple_of(KERNEL_ROWS))
    };
    let blocks = rows.div_ceil(block);
    let mut packed = Scratch::<T>::with_lengths([panels * inner * width]);
    let [packed] = packed.buffers();
    let [rows_bases, columns_bases, c_bases] = &batch_offsets;
    for ((&rows_base, &columns_base), &c_base) in rows_bases.iter().zip(columns_bases).zip(c_bases)
    {
        // The column operand's panels: `inner × width` each, row-major.
        // SAFETY: `data` plus the base is where the step's offsets start in each buffer.
        let (rows_data, columns_data, c_data) = unsafe {
            (
                rows_of.data.offset(rows_of.base + rows_base),
                columns_of.data.offset(columns_of.base + columns_base),
                c.data.offset(c.base + c_base),
            )
        };
        // SAFETY: as for the row operand in `Panels::run`: a sum of whole loops' values times
        // strides from the base, which the step proved inside the buffer.
        let read =
            |column: isize, step: isize| unsafe { columns_data.offset(column + step).read() };
        for panel in 0..panels {
            let offsets = &column_in_operand[panel * width..((panel + 1) * width).min(columns)];
            let packed = &mut packed[panel * inner * width..(panel + 1) * inner * width];
            pack(
                packed,
                width,
                [offsets, &inner_in_columns],
                columns_along_columns,
                read,
            );
        }
        let work = Panels {
            rows: rows_data,
            c: c_data,
            alpha: step.alpha(),
            beta: match step.mode() {
                Mode::Assign => None,
                Mode::Add => Some(T::ONE),
                Mode::Scale(beta) => Some(beta),
            },
            conj,
            row_offsets: &row_offsets,
            inner_offsets: &inner_in_rows,
            packed: &packed[..],
            runs: &runs,
            width,
            block,
            rows_along_rows,
        };
        if parallel {
            for_each_part(blocks, &|number| {
                work.run(number * block..((number + 1) * block).min(rows))
            });
        } else {
            work.run(0..rows);
        }
    }
}

/// Asks for the cache line holding `at` to be loaded for writing: a hint, which reads nothing
/// and never faults, so any address may be named.
#[inline(always)]
fn prefetch_for_writing<T>(at: *const T) {
    // SAFETY: a prefetch (`prefetchw` where the build's target features have it, else a
    // plain one) loads no value and faults on no address; older compilers declare it unsafe.
    #[cfg(target_arch = "x86_64")]
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_ET0 }>(at.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = at;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::Real;
    use crate::exec::gemm::roles;
    use crate::exec::step::Axis;
    use crate::operand::access::{Operand, TargetOwned};
    use crate::tensor::Tensor;

    /// A tensor of values in [-0.5, 0.5), different for each `seed`.
    fn filled<T: Element>(shape: &[usize], seed: usize, from: fn(f64) -> T) -> Tensor<T> {
        let mut t = seed;
        Tensor::from_fn(shape, |_| {
            t = (t * 7919 + 104_729) % 1009;
            from(t as f64 / 1009.0 - 0.5)
        })
    }

    /// `z (mode) α · Σ x·y` over `extents` in panels on `threads` threads, the accesses' axes
    /// the loops given (the first `n_out` the target's), checked against a sum in `f64`;
    /// returns the target's elements.
    #[allow(clippy::too_many_arguments)]
    fn check<T: Real, const L: usize>(
        extents: [usize; L],
        n_out: usize,
        [x_loops, y_loops, z_loops]: [&[usize]; 3],
        z_shape: &[usize],
        mode: Mode<T>,
        alpha: T,
        threads: usize,
        from: fn(f64) -> T,
    ) -> Vec<T> {
        let shape = |loops: &[usize]| loops.iter().map(|&v| extents[v]).collect::<Vec<_>>();
        let x = filled(&shape(x_loops), 1, from);
        let y = filled(&shape(y_loops), 2, from);
        let start = filled(z_shape, 3, from);
        let mut z = match mode {
            // Assigned elements must not depend on what was there.
            Mode::Assign => Tensor::from_fn(z_shape, |_| from(f64::NAN)),
            _ => start.clone(),
        };
        let axes = |loops: &[usize]| loops.iter().map(|&v| Axis::Loop(v)).collect::<Vec<_>>();
        let (x_axes, y_axes, z_axes) = (axes(x_loops), axes(y_loops), axes(z_loops));
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
        pool.expect("a thread pool").install(|| {
            let target = z.__tdsl_target();
            let step = Step::new(
                target.at(&z_axes),
                mode,
                alpha,
                extents,
                n_out,
                [
                    x.__tdsl_operand().at(&x_axes),
                    y.__tdsl_operand().at(&y_axes),
                ],
            );
            let roles = roles(&step).expect("a contraction");
            contract(&step, &roles, [false; 2]);
        });
        let inner: usize = extents[n_out..].iter().product();
        let outer: usize = extents[..n_out].iter().product();
        let at = |loops: &[usize], point: &[usize; L]| -> Vec<usize> {
            loops.iter().map(|&v| point[v]).collect()
        };
        let mut sums = vec![0.0f64; outer];
        for (number, slot) in sums.iter_mut().enumerate() {
            let mut point = [0usize; L];
            let mut rest = number;
            for var in (0..n_out).rev() {
                point[var] = rest % extents[var];
                rest /= extents[var];
            }
            for summed in 0..inner {
                let mut rest = summed;
                for var in (n_out..L).rev() {
                    point[var] = rest % extents[var];
                    rest /= extents[var];
                }
                *slot += x[at(x_loops, &point).as_slice()].to_f64()
                    * y[at(y_loops, &point).as_slice()].to_f64();
            }
            let expected = alpha.to_f64() * *slot
                + match mode {
                    Mode::Assign => 0.0,
                    Mode::Add => start[at(z_loops, &point).as_slice()].to_f64(),
                    Mode::Scale(beta) => {
                        beta.to_f64() * start[at(z_loops, &point).as_slice()].to_f64()
                    }
                };
            let got = z[at(z_loops, &point).as_slice()].to_f64();
            let tolerance = 1e-4 * (1.0 + expected.abs()) * (inner as f64).sqrt();
            assert!(
                (got - expected).abs() <= tolerance,
                "{extents:?} {mode:?}: {point:?} holds {got}, expected {expected}"
            );
        }
        z.as_slice().to_vec()
    }

    /// Every case in `f64` and `f32`, every mode, one and two threads (the same bits).
    fn each_case<T: Real + std::fmt::Debug>(from: fn(f64) -> T) {
        if !suits::<T>([1; 3]) {
            // No thin kernel on this CPU: the host never runs a step in panels.
            return;
        }
        let modes = [Mode::Assign, Mode::Add, Mode::Scale(from(0.5))];
        for (number, mode) in modes.into_iter().enumerate() {
            let alpha = from(if number == 1 { 1.0 } else { 2.0 });
            let both = |threads| {
                // TCCG's abcdef-dega-gfbc at odd extents, one of them 1: C's shortest stride
                // is a column's (f, 13 long: one partial panel of runs of 13).
                [
                    check(
                        [3, 1, 5, 7, 4, 13, 9],
                        6,
                        [&[3, 4, 6, 0], &[6, 5, 1, 2], &[0, 1, 2, 3, 4, 5]],
                        &[3, 1, 5, 7, 4, 13],
                        mode,
                        alpha,
                        threads,
                        from,
                    ),
                    // C's shortest stride is a row's (z written transposed): A and B change
                    // places.
                    check(
                        [37, 19, 11],
                        2,
                        [&[0, 2], &[2, 1], &[1, 0]],
                        &[19, 37],
                        mode,
                        alpha,
                        threads,
                        from,
                    ),
                    // A batch loop, rows in several blocks, columns in several panels (the last
                    // partial), two contracted loops, a block packed a row at a time: past the
                    // work at which blocks go to threads.
                    check(
                        [2, 100, 70, 20, 15],
                        3,
                        [&[0, 1, 3, 4], &[4, 0, 2, 3], &[0, 1, 2]],
                        &[2, 100, 70],
                        mode,
                        alpha,
                        threads,
                        from,
                    ),
                ]
            };
            let (one, two) = (both(1), both(2));
            for (one, two) in one.iter().zip(&two) {
                for (x, y) in one.iter().zip(two) {
                    assert_eq!(x.to_f64().to_bits(), y.to_f64().to_bits(), "{mode:?}");
                }
            }
        }
    }

    #[test]
    fn contractions_in_panels_match_a_naive_sum_with_the_same_bits_on_any_threads() {
        each_case::<f64>(|x| x);
        each_case::<f32>(|x| x as f32);
    }
}

//! Thin matrix products → C, on one thread, in AVX-512: `C = α·A·B (+ β·C)` where each row of
//! C fits four vectors (n ≤ 64 `f32`s or 32 `f64`s; or each column, by the transposed
//! product), in passes of at most two vectors' columns, sixteen vectors of sums at once (16
//! rows of one vector or 8 of two). Invariant:
//! every element of C is its terms summed in increasing order of the inner index, each by one
//! fused multiply-add, then times α (and plus β times the old value where β ≠ 0): the same
//! bits whatever block of rows it falls in. Also tiles of sums → C where it lies, in masked
//! vectors (`combine_tile`), with the arithmetic of doing it element by element, and a
//! product's rows → C's runs where it lies with that same arithmetic (`product_into_runs`).

use super::{Element, Run, LINE};
use std::arch::x86_64::{
    __m512, __m512d, __mmask16, __mmask8, _mm512_add_pd, _mm512_add_ps, _mm512_fmadd_pd,
    _mm512_fmadd_ps, _mm512_mask_storeu_pd, _mm512_mask_storeu_ps, _mm512_maskz_loadu_pd,
    _mm512_maskz_loadu_ps, _mm512_mul_pd, _mm512_mul_ps, _mm512_set1_pd, _mm512_set1_ps,
    _mm512_setzero_pd, _mm512_setzero_ps,
};

/// An element type of which one AVX-512 vector holds `LANES`. Each function must be called
/// only where the CPU has AVX-512 F (they are inlined into [`product`] and
/// [`combine_vectors`], compiled for it).
pub(super) trait Lanes: Element {
    /// Elements in one vector.
    const LANES: usize;
    /// The vector.
    type Vector: Copy;
    /// A mask of the first lanes.
    type Mask: Copy;
    /// The first `n ≤ LANES` lanes.
    fn first(n: usize) -> Self::Mask;
    /// Lanes `from..to` (`from ≤ to ≤ LANES`).
    fn between(from: usize, to: usize) -> Self::Mask;
    /// Every lane zero.
    unsafe fn zero() -> Self::Vector;
    /// Every lane `x`.
    unsafe fn splat(x: Self) -> Self::Vector;
    /// The masked lanes from `p` on, zero elsewhere; only the masked lanes are read.
    unsafe fn load(mask: Self::Mask, p: *const Self) -> Self::Vector;
    /// The masked lanes to `p` on; only those are written.
    unsafe fn store(mask: Self::Mask, p: *mut Self, v: Self::Vector);
    /// `x·y + z` in each lane, rounded once.
    unsafe fn fma(x: Self::Vector, y: Self::Vector, z: Self::Vector) -> Self::Vector;
    /// `x·y` in each lane.
    unsafe fn mul_lanes(x: Self::Vector, y: Self::Vector) -> Self::Vector;
    /// `x + y` in each lane.
    unsafe fn add_lanes(x: Self::Vector, y: Self::Vector) -> Self::Vector;
}

macro_rules! lanes {
    ($t:ty, $lanes:literal, $vector:ty, $mask:ty, $setzero:ident, $set1:ident, $loadu:ident,
     $storeu:ident, $fmadd:ident, $mul:ident, $add:ident) => {
        impl Lanes for $t {
            const LANES: usize = $lanes;
            type Vector = $vector;
            type Mask = $mask;
            #[inline(always)]
            fn first(n: usize) -> $mask {
                ((1u32 << n.min($lanes)) - 1) as $mask
            }
            #[inline(always)]
            fn between(from: usize, to: usize) -> $mask {
                Self::first(to) & !Self::first(from)
            }
            // SAFETY (each function): the caller runs it on a CPU with AVX-512 F, all the
            // intrinsic needs, and for a load or store, the masked lanes' addresses are valid.
            #[inline(always)]
            unsafe fn zero() -> $vector {
                unsafe { $setzero() }
            }
            #[inline(always)]
            unsafe fn splat(x: Self) -> $vector {
                unsafe { $set1(x) }
            }
            #[inline(always)]
            unsafe fn load(mask: $mask, p: *const Self) -> $vector {
                unsafe { $loadu(mask, p) }
            }
            #[inline(always)]
            unsafe fn store(mask: $mask, p: *mut Self, v: $vector) {
                unsafe { $storeu(p, mask, v) }
            }
            #[inline(always)]
            unsafe fn fma(x: $vector, y: $vector, z: $vector) -> $vector {
                unsafe { $fmadd(x, y, z) }
            }
            #[inline(always)]
            unsafe fn mul_lanes(x: $vector, y: $vector) -> $vector {
                unsafe { $mul(x, y) }
            }
            #[inline(always)]
            unsafe fn add_lanes(x: $vector, y: $vector) -> $vector {
                unsafe { $add(x, y) }
            }
        }
    };
}

lanes!(
    f32,
    16,
    __m512,
    __mmask16,
    _mm512_setzero_ps,
    _mm512_set1_ps,
    _mm512_maskz_loadu_ps,
    _mm512_mask_storeu_ps,
    _mm512_fmadd_ps,
    _mm512_mul_ps,
    _mm512_add_ps
);
lanes!(
    f64,
    8,
    __m512d,
    __mmask8,
    _mm512_setzero_pd,
    _mm512_set1_pd,
    _mm512_maskz_loadu_pd,
    _mm512_mask_storeu_pd,
    _mm512_fmadd_pd,
    _mm512_mul_pd,
    _mm512_add_pd
);

/// `C = α·A·B (+ β·C)` (β = 0: C is not read) for an `m × k` A and a `k × n` B, each operand a
/// pointer and its row and column strides in elements, if the call is thin and the CPU has
/// AVX-512 F: C's rows (n ≤ 4·`LANES`) and B's rows contiguous, or, by `Cᵀ = Bᵀ·Aᵀ`, C's
/// columns (m ≤ 4·`LANES`) and A's columns. Returns whether it ran (otherwise nothing is
/// touched).
///
/// # Safety
/// As `Element::gemm`'s: every element the strides address is valid, A and B for reads, C for
/// reads and writes, C's elements distinct and overlapping neither A nor B.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn gemm<T: Lanes>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    (a, rsa, csa): (*const T, isize, isize),
    (b, rsb, csb): (*const T, isize, isize),
    beta: T,
    (c, rsc, csc): (*mut T, isize, isize),
) -> bool {
    if !std::arch::is_x86_feature_detected!("avx512f") {
        return false;
    }
    // SAFETY: the CPU has AVX-512 F; each call's elements are the ones this call addresses
    // (the second reads the same elements as the transposed product).
    unsafe {
        if n <= PASSES * WIDEST * T::LANES && csb == 1 && csc == 1 {
            in_passes(m, k, n, alpha, (a, rsa, csa), (b, rsb), beta, (c, rsc));
            true
        } else if m <= PASSES * WIDEST * T::LANES && rsa == 1 && rsc == 1 {
            in_passes(n, k, m, alpha, (b, csb, rsb), (a, csa), beta, (c, csc));
            true
        } else {
            false
        }
    }
}

/// The most passes over A a product takes, each for at most `WIDEST` vectors of C's columns.
const PASSES: usize = 2;

/// [`product`] for C's columns a pass of at most `WIDEST · LANES` at a time (B's and C's
/// columns from the pass's first on); each element is summed as in one pass.
///
/// # Safety
/// As [`product`]'s.
#[allow(clippy::too_many_arguments)]
unsafe fn in_passes<T: Lanes>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    a: (*const T, isize, isize),
    (b, rsb): (*const T, isize),
    beta: T,
    (c, rsc): (*mut T, isize),
) {
    let width = WIDEST * T::LANES;
    for first in (0..n).step_by(width) {
        let c = Target::Rows {
            c: c.wrapping_add(first),
            rsc,
            beta,
        };
        // SAFETY: columns `first..first + width` (at most `n`) of B and C, the caller's.
        unsafe {
            product(
                m,
                k,
                width.min(n - first),
                alpha,
                a,
                (b.wrapping_add(first), rsb),
                c,
            )
        };
    }
}

/// [`Element::combine_tile`] in masked vectors of `LANES`, if the CPU has AVX-512 F: each
/// element the same arithmetic as element by element (C added where β is one, else `β·C`
/// multiplied, then added). Returns whether it ran (otherwise nothing is touched).
///
/// # Safety
/// As [`Element::combine_tile`]'s.
pub(super) unsafe fn combine_tile<T: Lanes>(
    beta: Option<T>,
    c: *mut T,
    rows: &[isize],
    runs: &[(usize, usize, isize)],
    tile: &[T],
    width: usize,
) -> bool {
    if !std::arch::is_x86_feature_detected!("avx512f") {
        return false;
    }
    // SAFETY: the CPU has AVX-512 F; the caller vouches for the elements.
    unsafe { combine_vectors(beta, c, rows, runs, tile, width) };
    true
}

/// `α·A·B` (`m × k` times `k × n`, `n` at most [`columns`], B's rows contiguous) combined
/// straight into C where it lies, as [`combine_tile`] would combine the tile `gemm` makes of
/// it with β = 0, if the CPU has AVX-512 F: the same arithmetic, so the same bits, without
/// the tile. Row `i` of C is at `c + rows[i]` (`rows` at least `m` long), its runs `runs` as
/// `combine_tile` takes them, each inside the `n` columns. Returns whether it ran (otherwise
/// nothing is touched).
///
/// # Safety
/// As `gemm`'s for A and B, and as [`combine_tile`]'s for C.
#[allow(clippy::too_many_arguments)]
pub(super) unsafe fn product_into_runs<T: Lanes>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    a: (*const T, isize, isize),
    b: (*const T, isize),
    beta: Option<T>,
    (c, rows, runs): (*mut T, &[isize], &[Run]),
) -> bool {
    let inside = (runs.iter())
        .all(|&(first, length, _)| first.checked_add(length).is_some_and(|end| end <= n));
    if !std::arch::is_x86_feature_detected!("avx512f")
        || n > WIDEST * T::LANES
        || rows.len() < m
        || !inside
    {
        return false;
    }
    let mut pieces = Pieces::<T>::new();
    if !pieces.cut(runs) {
        return false;
    }
    let c = Target::Runs {
        c,
        rows: &rows[..m],
        pieces: &pieces,
        beta,
    };
    // SAFETY: the CPU has AVX-512 F; A, B and C's rows and runs are the caller's, the runs
    // inside the `n ≤ 2·LANES` columns and `m` rows named.
    unsafe { product(m, k, n, alpha, a, b, c) };
    true
}

/// [`combine_tile`]'s work.
///
/// # Safety
/// As [`combine_tile`]'s, and the CPU has AVX-512 F.
#[target_feature(enable = "avx512f")]
unsafe fn combine_vectors<T: Lanes>(
    beta: Option<T>,
    c: *mut T,
    rows: &[isize],
    runs: &[(usize, usize, isize)],
    tile: &[T],
    width: usize,
) {
    for (&row, sums) in rows.iter().zip(tile.chunks(width)) {
        for &(first, length, offset) in runs {
            let (values, slots) = (
                &sums[first..first + length],
                c.wrapping_offset(row + offset),
            );
            for start in (0..length).step_by(T::LANES) {
                let mask = T::first(length - start);
                // SAFETY: the masked lanes are elements `start..` of the run, inside `values`
                // and, as the caller vouches, inside C; masked-off lanes are neither read nor
                // written (nor faulted on).
                unsafe {
                    let value = T::load(mask, values.as_ptr().add(start));
                    combine_vector(beta, mask, slots.add(start), value)
                }
            }
        }
    }
}

/// `value`'s masked lanes combined into C's at `slot` as [`Element::combine_tile`] says:
/// stored as they are where `beta` is `None` (C is not read), added to C where β is one, else
/// added to `β·C` (multiplied, then added). [`combine_vectors`] and [`product_into_runs`]
/// both store through it, so their bits agree.
///
/// # Safety
/// The CPU has AVX-512 F; the masked lanes from `slot` on are valid for reads and writes
/// (masked-off lanes are neither read nor written, nor faulted on).
#[inline(always)]
unsafe fn combine_vector<T: Lanes>(beta: Option<T>, mask: T::Mask, slot: *mut T, value: T::Vector) {
    // SAFETY: the caller's.
    unsafe {
        let value = match beta {
            None => value,
            Some(beta) if beta == T::ONE => T::add_lanes(T::load(mask, slot), value),
            Some(beta) => T::add_lanes(T::mul_lanes(T::splat(beta), T::load(mask, slot)), value),
        };
        T::store(mask, slot, value);
    }
}

/// The widest C whose rows [`gemm`] takes in one pass on this CPU: two vectors, where it has
/// AVX-512 F.
pub(super) fn columns<T: Lanes>() -> Option<usize> {
    std::arch::is_x86_feature_detected!("avx512f").then_some(WIDEST * T::LANES)
}

/// The most vectors a row of C takes.
const WIDEST: usize = 2;

/// The vectors of sums a block holds: with B's row and a broadcast of A's element they fit
/// the 32 registers, and sixteen independent chains cover the multiply-adds' latency. Sixteen
/// rather than twelve: 64 rows of two vectors go in eight blocks of eight, not ten of six and
/// one of four (64 batched 64³ `f32` products, one thread, two builds in turns: 107.3–107.5 →
/// 109.1–109.7 GFLOP/s; TCCG `abcdef-dega-gfbc` unchanged, 6.68 against 6.70 ms at best).
const SUMS: usize = 16;

// Heuristic: how many of A's columns ahead a block asks for (see `Block::run`); 16 measured
// best against 8 (TCCG `abcd-dbea-ec`, 1024 calls of 32 × 32 × 256 reading A from memory).
const COLUMNS_AHEAD: isize = 16;

// Heuristic: the largest A (m × k, one dense block, row- or column-major) after which a call
// asks for as much again, in even shares over all its blocks' steps: consecutive calls on
// operands laid out batch after batch (a copied or contiguous batched A) then find theirs in
// cache rather than fetching it at the first block's pace, which memory cannot keep up with.
// Small, so a call with nothing after it, or another batch's A elsewhere, wastes little.
// Measured (one thread, f32, both ways in turns): TCCG `abcd-dbea-ec` (1024 calls of
// 32 × 32 × 256, A column-major, 32 KiB each) 151–160 → 221–229 GFLOP/s, 1024 batched
// 32 × 32 × 256 products 155–168 → 235–247 (245 with A in cache); other TCCG steps, the seed
// and single thin products unchanged.
const NEXT_A_BYTES: usize = 128 << 10;

/// How many elements of the next call's A each step of each of a call's blocks (of at most
/// `most` rows) asks for: enough that the blocks' `k` steps together cover `m × k` elements,
/// where A (strides `rsa`, `csa`) is one dense block of at most [`NEXT_A_BYTES`]; else 0.
/// A step asks for each cache line its share starts in or runs on to ([`share_lines`]).
fn next_a_share<T>(m: usize, k: usize, (rsa, csa): (isize, isize), most: usize) -> usize {
    let dense = (rsa == 1 && csa == m as isize) || (csa == 1 && rsa == k as isize);
    let small = m.saturating_mul(k).saturating_mul(size_of::<T>()) <= NEXT_A_BYTES;
    if dense && small && m > 0 {
        m.div_ceil(m.div_ceil(most))
    } else {
        0
    }
}

/// How many cache lines a step asks for to cover `share` elements from where it starts: the
/// one it starts in and as many more as the share's bytes run on to, short of the line the
/// next step starts in (the last step's share may end in a line no step asks for).
fn share_lines<T>(share: usize) -> usize {
    // At most two: `Block::run` asks for no more.
    share.saturating_mul(size_of::<T>()).div_ceil(LINE).min(2)
}

/// Asks for the cache line holding `at` (a hint: no address need be valid).
#[inline(always)]
fn prefetch<T>(at: *const T) {
    // SAFETY: a prefetch never faults, whatever the address (SSE, which every x86-64 CPU
    // has); older compilers still declare it unsafe.
    #[allow(unused_unsafe)]
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(at.cast())
    };
}

/// The most pieces a vector of a row is cut into: one a lane (runs are at least one column).
const MOST_PIECES: usize = 16;

/// A row's vectors cut along C's runs, once per call rather than per row: for vector `v`,
/// `counts[v]` pieces, each the lanes one run takes (`mask`) and where the vector's first
/// lane lands from the row's start in C (`at`), so a row's stores are one masked store a
/// piece, with no mask computed and no sum indexed by a run-time vector number (which made
/// the compiler keep a block's sums in memory).
struct Pieces<T: Lanes> {
    pieces: [[(T::Mask, isize); MOST_PIECES]; WIDEST],
    counts: [usize; WIDEST],
}

impl<T: Lanes> Pieces<T> {
    /// No pieces.
    #[inline(always)]
    fn new() -> Self {
        Pieces {
            pieces: [[(T::first(0), 0); MOST_PIECES]; WIDEST],
            counts: [0; WIDEST],
        }
    }

    /// Adds the pieces of `runs` (`(first column, length, offset in C)`, inside the row's
    /// `WIDEST` vectors); `false` where a vector would take more than [`MOST_PIECES`] (runs
    /// that overlap). Built in place: a call's pieces are half a kilobyte.
    fn cut(&mut self, runs: &[Run]) -> bool {
        let cut = self;
        for &(first, length, offset) in runs {
            for v in 0..WIDEST {
                // Vector `v` holds columns `v·LANES..`, of which the run's are `from..to`.
                let (from, to) = (
                    first.max(v * T::LANES),
                    (first + length).min((v + 1) * T::LANES),
                );
                if from >= to {
                    continue;
                }
                let Some(slot) = cut.pieces[v].get_mut(cut.counts[v]) else {
                    return false;
                };
                *slot = (
                    T::between(from - v * T::LANES, to - v * T::LANES),
                    offset
                        .wrapping_sub(first as isize)
                        .wrapping_add((v * T::LANES) as isize),
                );
                cut.counts[v] += 1;
            }
        }
        true
    }
}

/// Where [`product`] puts `α·A·B`'s rows, and how.
#[derive(Clone, Copy)]
enum Target<'t, T: Lanes> {
    /// Row `i` at `c + i·rsc`, its `n` elements contiguous: `α·A·B`, plus `β·C` where β ≠ 0.
    Rows { c: *mut T, rsc: isize, beta: T },
    /// Row `i` at `c + rows[i]`, its columns in runs as [`combine_tile`] takes them, cut
    /// into `pieces`, combined with C as `combine_tile` combines a tile of `α·A·B` (`beta`).
    Runs {
        c: *mut T,
        rows: &'t [isize],
        pieces: &'t Pieces<T>,
        beta: Option<T>,
    },
}

impl<T: Lanes> Target<'_, T> {
    /// The target of rows `from..` (of a block of rows at most `rows` long).
    fn from(self, from: usize, rows: usize) -> Self {
        match self {
            Target::Rows { c, rsc, beta } => Target::Rows {
                c: c.wrapping_offset((from as isize).wrapping_mul(rsc)),
                rsc,
                beta,
            },
            Target::Runs {
                c,
                rows: offsets,
                pieces,
                beta,
            } => Target::Runs {
                c,
                rows: &offsets[from..(from + rows).min(offsets.len())],
                pieces,
                beta,
            },
        }
    }
}

/// `α·A·B` into `c` as [`Target`] says, where B's rows are contiguous and `n ≤ 2·LANES`: A's
/// element `(i, p)` at `a + i·rsa + p·csa`, B's row `p` at `b + p·rsb`.
///
/// # Safety
/// The CPU has AVX-512 F; every element so addressed is valid (A and B for reads, C for reads
/// and writes), C's distinct and overlapping neither A nor B; a target's runs lie inside the
/// `n` columns, and it names `m` rows.
#[target_feature(enable = "avx512f")]
unsafe fn product<T: Lanes>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    (a, rsa, csa): (*const T, isize, isize),
    (b, rsb): (*const T, isize),
    c: Target<'_, T>,
) {
    let masks = [T::first(n), T::first(n.saturating_sub(T::LANES))];
    let wide = n > T::LANES;
    let most = if wide { SUMS / 2 } else { SUMS };
    let share = next_a_share::<T>(m, k, (rsa, csa), most);
    let lines = share_lines::<T>(share);
    let next = a.wrapping_add(m.wrapping_mul(k));
    let (mut i, mut number) = (0, 0usize);
    while i < m {
        let rows = (m - i).min(most);
        let block = Block {
            k,
            next: (
                next.wrapping_add(number.wrapping_mul(k).wrapping_mul(share)),
                share,
                lines,
            ),
            a: (a.wrapping_offset(i as isize * rsa), rsa, csa),
            b: (b, rsb),
            c: c.from(i, rows),
            masks,
            alpha,
        };
        // SAFETY: rows `i..i + rows` of A and C, all of them the caller's, and the vectors
        // their `n` elements take.
        unsafe {
            match (wide, rows) {
                (false, 16) => block.run::<16, 1>(),
                (false, 15) => block.run::<15, 1>(),
                (false, 14) => block.run::<14, 1>(),
                (false, 13) => block.run::<13, 1>(),
                (false, 12) => block.run::<12, 1>(),
                (false, 11) => block.run::<11, 1>(),
                (false, 10) => block.run::<10, 1>(),
                (false, 9) => block.run::<9, 1>(),
                (false, 8) => block.run::<8, 1>(),
                (false, 7) => block.run::<7, 1>(),
                (false, 6) => block.run::<6, 1>(),
                (false, 5) => block.run::<5, 1>(),
                (false, 4) => block.run::<4, 1>(),
                (false, 3) => block.run::<3, 1>(),
                (false, 2) => block.run::<2, 1>(),
                (false, _) => block.run::<1, 1>(),
                (true, 8) => block.run::<8, 2>(),
                (true, 7) => block.run::<7, 2>(),
                (true, 6) => block.run::<6, 2>(),
                (true, 5) => block.run::<5, 2>(),
                (true, 4) => block.run::<4, 2>(),
                (true, 3) => block.run::<3, 2>(),
                (true, 2) => block.run::<2, 2>(),
                (true, _) => block.run::<1, 2>(),
            }
        }
        i += rows;
        number += 1;
    }
}

/// Rows of C from `c` on and the rows of A they take (see [`product`]).
#[derive(Clone, Copy)]
struct Block<'t, T: Lanes> {
    k: usize,
    /// Where this block's share of the next call's A starts, how many elements of it each
    /// step asks for, and in how many cache lines (0: none).
    next: (*const T, usize, usize),
    a: (*const T, isize, isize),
    b: (*const T, isize),
    c: Target<'t, T>,
    /// The lanes of a row's first and second vector.
    masks: [T::Mask; WIDEST],
    alpha: T,
}

impl<T: Lanes> Block<'_, T> {
    /// Sums and writes its first `R` rows, `V` vectors each.
    ///
    /// # Safety
    /// As [`product`]'s, for these `R` rows; `V` vectors hold a row's `n` elements.
    #[inline(always)]
    unsafe fn run<const R: usize, const V: usize>(&self) {
        let Block {
            k,
            next: (next, share, lines),
            a: (a, rsa, csa),
            b: (b, rsb),
            c,
            masks,
            alpha,
        } = *self;
        // Lanes `v·LANES..` of a row, under vector `v`'s mask.
        let lanes = |row: *const T, v: usize| row.wrapping_add(v * T::LANES);
        // SAFETY: the CPU has AVX-512 F (the caller's promise); the masked lanes of B's row
        // `p < k` are its `n` elements, A's `(r, p)` and the masked lanes of C's row `r < R`
        // are the caller's.
        unsafe {
            let mut sums = [[T::zero(); V]; R];
            for p in 0..k {
                let row = b.wrapping_offset(p as isize * rsb);
                let row: [T::Vector; V] = std::array::from_fn(|v| T::load(masks[v], lanes(row, v)));
                let column = a.wrapping_offset(p as isize * csa);
                // A's column `COLUMNS_AHEAD` on, first and last row of the block, asked for
                // now (B's rows are reused by every block; A's are read once per call, often
                // from memory).
                let ahead = column.wrapping_offset(COLUMNS_AHEAD.wrapping_mul(csa));
                prefetch(ahead);
                prefetch(ahead.wrapping_offset((R as isize - 1).wrapping_mul(rsa)));
                // One or two lines (a share is at most 16 elements of at most 8 bytes), as
                // branches rather than a loop, which cost the kernel registers.
                if lines != 0 {
                    let share_from = next.wrapping_add(p.wrapping_mul(share));
                    prefetch(share_from);
                    if lines > 1 {
                        prefetch(share_from.wrapping_add(LINE / size_of::<T>()));
                    }
                }
                for (r, sums) in sums.iter_mut().enumerate() {
                    let x = T::splat(column.wrapping_offset(r as isize * rsa).read());
                    for (sum, &part) in sums.iter_mut().zip(&row) {
                        *sum = T::fma(x, part, *sum);
                    }
                }
            }
            let alpha = T::splat(alpha);
            match c {
                Target::Rows { c, rsc, beta } => {
                    for (r, sums) in sums.into_iter().enumerate() {
                        let slot = c.wrapping_offset(r as isize * rsc);
                        for (v, sum) in sums.into_iter().enumerate() {
                            let (mask, slot) = (masks[v], lanes(slot, v).cast_mut());
                            let mut value = T::mul_lanes(alpha, sum);
                            if beta != T::ZERO {
                                let old = T::mul_lanes(T::splat(beta), T::load(mask, slot));
                                value = T::add_lanes(old, value);
                            }
                            T::store(mask, slot, value);
                        }
                    }
                }
                Target::Runs {
                    c,
                    rows,
                    pieces,
                    beta,
                } => {
                    for (&row, sums) in rows.iter().zip(sums) {
                        let base = c.wrapping_offset(row);
                        for (v, sum) in sums.into_iter().enumerate() {
                            let value = T::mul_lanes(alpha, sum);
                            for &(mask, at) in &pieces.pieces[v][..pieces.counts[v]] {
                                // Only the masked lanes, a run's columns, are touched (and
                                // faulted on): C's elements the caller named.
                                combine_vector(beta, mask, base.wrapping_offset(at), value);
                            }
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An operand's element at a position.
    type At<'a, T> = &'a dyn Fn(usize, usize) -> T;

    /// C as the module's invariant says: each element's terms summed in order by fused
    /// multiply-adds, then times α, plus β times the old value where β ≠ 0.
    fn expected<T: Lanes + std::fmt::Debug>(
        [m, k, n]: [usize; 3],
        fma: fn(T, T, T) -> T,
        times: fn(T, T) -> T,
        plus: fn(T, T) -> T,
        (a, b, old): (At<'_, T>, At<'_, T>, &[T]),
        (alpha, beta): (T, T),
    ) -> Vec<T> {
        let mut c = Vec::with_capacity(m * n);
        for i in 0..m {
            for j in 0..n {
                let sum = (0..k).fold(T::ZERO, |sum, p| fma(a(i, p), b(p, j), sum));
                let value = times(alpha, sum);
                c.push(if beta == T::ZERO {
                    value
                } else {
                    plus(times(beta, old[i * n + j]), value)
                });
            }
        }
        c
    }

    /// Every shape, layout and β against `expected`, bit for bit, where the CPU has AVX-512
    /// F; elsewhere `gemm` must decline and touch nothing.
    fn check<T: Lanes + std::fmt::Debug>(
        value: fn(usize) -> T,
        fma: fn(T, T, T) -> T,
        times: fn(T, T) -> T,
        plus: fn(T, T) -> T,
        bits: fn(T) -> u64,
    ) {
        let lanes = T::LANES;
        let shapes = [
            [1, 1, 1],
            [1, 0, 3],
            [13, 7, lanes],
            [12, 1000, lanes.min(10)],
            [1000, 10, lanes.min(10)],
            [25, 13, lanes - 1],
            [7, 64, 1],
            [lanes, 33, 40],
            [3, 5, 200],
            [2 * lanes, 2 * lanes, 2 * lanes],
            [19, 21, lanes + 1],
            [100, 3, 2 * lanes - 3],
            [2 * lanes - 1, 40, 300],
            // Two passes: C's rows, then (by the transposed product) its columns.
            [4 * lanes - 1, 19, 4 * lanes - 3],
            [37, 21, 2 * lanes + 1],
            [4 * lanes - 2, 23, 300],
        ];
        for [m, k, n] in shapes {
            // A row-major with a gap after each row, or column-major; B and C with the thin
            // side contiguous where the product takes it (C's rows if n fits, else its
            // columns) and a gap between its lines.
            let rows_thin = n <= 4 * lanes;
            for a_column_major in [false, true] {
                let (rsa, csa) = if a_column_major {
                    (1, m as isize + 2)
                } else {
                    (k as isize + 3, 1)
                };
                let (rsb, csb) = if rows_thin {
                    (n as isize + 1, 1)
                } else {
                    (1, k as isize + 1)
                };
                let (rsc, csc) = if rows_thin {
                    (n as isize + 2, 1)
                } else {
                    (1, m as isize + 2)
                };
                if !rows_thin && !a_column_major {
                    continue;
                }
                let span = |rows: usize, columns: usize, rs: isize, cs: isize| {
                    ((rows.max(1) - 1) as isize * rs + (columns.max(1) - 1) as isize * cs + 1)
                        as usize
                };
                let a_data: Vec<T> = (0..span(m, k, rsa, csa)).map(value).collect();
                let b_data: Vec<T> = (0..span(k, n, rsb, csb))
                    .map(|x| value(x * 7 + 3))
                    .collect();
                let at =
                    |i: usize, p: usize| a_data[(i as isize * rsa + p as isize * csa) as usize];
                let bt =
                    |p: usize, j: usize| b_data[(p as isize * rsb + j as isize * csb) as usize];
                let c_len = span(m, n, rsc, csc);
                let c_at = |i: usize, j: usize| (i as isize * rsc + j as isize * csc) as usize;
                for (alpha, beta) in [
                    (value(1), T::ZERO),
                    (value(2), value(5)),
                    (value(4), value(9)),
                ] {
                    let mut c: Vec<T> = (0..c_len).map(|x| value(x * 5 + 1)).collect();
                    let old: Vec<T> = (0..m * n).map(|x| c[c_at(x / n, x % n)]).collect();
                    let before = c.clone();
                    // SAFETY: the strides address elements inside the three buffers, C's
                    // distinct; the buffers are apart.
                    let ran = unsafe {
                        gemm(
                            m,
                            k,
                            n,
                            alpha,
                            (a_data.as_ptr(), rsa, csa),
                            (b_data.as_ptr(), rsb, csb),
                            beta,
                            (c.as_mut_ptr(), rsc, csc),
                        )
                    };
                    if !std::arch::is_x86_feature_detected!("avx512f") {
                        assert!(!ran);
                        assert_eq!(
                            c.iter().map(|&x| bits(x)).collect::<Vec<_>>(),
                            before.iter().map(|&x| bits(x)).collect::<Vec<_>>()
                        );
                        continue;
                    }
                    assert!(ran, "{m}×{k}×{n} declined");
                    let want =
                        expected([m, k, n], fma, times, plus, (&at, &bt, &old), (alpha, beta));
                    for i in 0..m {
                        for j in 0..n {
                            assert_eq!(
                                bits(c[c_at(i, j)]),
                                bits(want[i * n + j]),
                                "{m}×{k}×{n}, A column-major {a_column_major}, β {beta:?}, at ({i}, {j})"
                            );
                        }
                    }
                    // Nothing between C's lines is written.
                    let written: std::collections::HashSet<usize> =
                        (0..m * n).map(|x| c_at(x / n, x % n)).collect();
                    for (x, (&now, &was)) in c.iter().zip(&before).enumerate() {
                        if !written.contains(&x) {
                            assert_eq!(bits(now), bits(was), "{m}×{k}×{n}: gap {x} written");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn thin_products_sum_in_order_with_fused_multiply_adds() {
        check::<f32>(
            |x| ((x * 37 % 101) as f32 - 50.0) * 0.013,
            f32::mul_add,
            |x, y| x * y,
            |x, y| x + y,
            |x| u64::from(x.to_bits()),
        );
        check::<f64>(
            |x| ((x * 53 % 211) as f64 - 100.0) * 0.0071,
            f64::mul_add,
            |x, y| x * y,
            |x, y| x + y,
            f64::to_bits,
        );
    }

    /// The cache lines (64 bytes each) of the next A that a call's blocks ask for, as
    /// `Block::run` computes their addresses, for an A of `m × k` elements of `T`.
    fn lines_asked<T>(m: usize, k: usize, most: usize) -> std::collections::BTreeSet<usize> {
        let share = next_a_share::<T>(m, k, (1, m as isize), most);
        let (lines, size) = (share_lines::<T>(share), size_of::<T>());
        let mut asked = std::collections::BTreeSet::new();
        for block in 0..m.div_ceil(most) {
            for p in 0..k {
                for line in 0..lines {
                    let at = (block * k * share + p * share + line * (LINE / size)) * size;
                    asked.insert(at / LINE);
                }
            }
        }
        asked
    }

    #[test]
    fn calls_ask_for_all_of_the_next_dense_a_and_nothing_else() {
        // TCCG `abcd-dbea-ec`'s calls: 32 × 256, column-major, blocks of eight rows.
        assert_eq!(next_a_share::<f32>(32, 256, (1, 32), 8), 8);
        for most in [8, 16] {
            for m in 1..70usize {
                for k in [1, 7, 256] {
                    let blocks = m.div_ceil(most);
                    for strides in [(1, m as isize), (k as isize, 1)] {
                        let share = next_a_share::<f32>(m, k, strides, most);
                        // Every element of the next A, and at most one more a block a step.
                        assert!(blocks * k * share >= m * k, "{m} × {k}");
                        assert!((share - 1) * blocks < m, "{m} × {k}");
                    }
                    // Every line of the next A but perhaps the last, and none past the
                    // element after the last share, in f32 and f64 (a share of 128 bytes).
                    fn check<T>(m: usize, k: usize, most: usize) {
                        let (bytes, size) = (m * k * size_of::<T>(), size_of::<T>());
                        let asked = lines_asked::<T>(m, k, most);
                        let share = next_a_share::<T>(m, k, (1, m as isize), most);
                        if bytes > NEXT_A_BYTES {
                            assert!(share == 0 && asked.is_empty(), "{m} × {k}");
                            return;
                        }
                        let end = m.div_ceil(most) * k * share * size;
                        for line in 0..bytes.div_ceil(LINE) - 1 {
                            assert!(asked.contains(&line), "{m} × {k}: line {line}");
                        }
                        assert!(asked.iter().all(|&line| line * LINE < end.max(size)));
                    }
                    check::<f32>(m, k, most);
                    check::<f64>(m, k, most);
                    // Not one dense block: a gap between columns or rows.
                    assert_eq!(next_a_share::<f32>(m, k, (1, m as isize + 1), most), 0);
                    assert_eq!(next_a_share::<f32>(m, k, (k as isize + 1, 1), most), 0);
                }
            }
        }
        // Past `NEXT_A_BYTES`: a lone large call would fetch as much again for nothing.
        let k = NEXT_A_BYTES / (64 * size_of::<f64>());
        assert_ne!(next_a_share::<f64>(64, k, (1, 64), 8), 0);
        assert_eq!(next_a_share::<f64>(64, k + 1, (1, 64), 8), 0);
        assert_eq!(next_a_share::<f32>(0, 5, (1, 0), 8), 0);
    }

    #[test]
    fn wide_calls_are_declined() {
        // Neither C's rows nor its columns fit four vectors: nothing is touched.
        let (a, b) = (vec![1.0f32; 70 * 70], vec![1.0f32; 70 * 70]);
        let mut c = vec![7.0f32; 70 * 70];
        // SAFETY: the strides address the buffers' own elements; C is apart.
        let ran = unsafe {
            gemm(
                70,
                70,
                70,
                1.0,
                (a.as_ptr(), 70, 1),
                (b.as_ptr(), 70, 1),
                0.0,
                (c.as_mut_ptr(), 70, 1),
            )
        };
        assert!(!ran);
        assert!(c.iter().all(|&x| x == 7.0));
    }

    /// Tiles combined in vectors hold the bits of the element-by-element combine, for every β
    /// (none: C is not read, so a NaN there goes), runs of every length up to two vectors at
    /// any offset, and nothing else in C is touched.
    fn check_combine<T: Lanes + std::fmt::Debug>(
        value: fn(usize) -> T,
        [nan, infinity]: [T; 2],
        bits: fn(T) -> u64,
    ) {
        let width = 2 * T::LANES;
        let tile: Vec<T> = (0..3 * width).map(value).collect();
        let rows = [0, 200, 97];
        let runs: Vec<(usize, usize, isize)> = (0..=width)
            .map(|length| (width - length, length, 3 + length as isize))
            .chain([(1, 5, 7), (9, 3, 150)])
            .collect();
        for beta in [None, Some(T::ONE), Some(value(5)), Some(T::ZERO)] {
            for run in &runs {
                // Where C is read, some of it infinite, NaN or a negative zero as well.
                let start: Vec<T> = (0..400)
                    .map(|at| match beta {
                        None => nan,
                        Some(_) if at % 7 == 0 => [nan, infinity, T::ZERO.negated()][at / 7 % 3],
                        Some(_) => value(at + 11),
                    })
                    .collect();
                let (mut vectors, mut in_order) = (start.clone(), start.clone());
                // SAFETY: every row offset plus the run's offset and length stays inside the
                // 400 elements of C (at most 200 + 150 + 3); the tile is another buffer and
                // holds three rows of `width`, each run inside them.
                let ran = unsafe {
                    let ran =
                        combine_tile(beta, vectors.as_mut_ptr(), &rows, &[*run], &tile, width);
                    crate::element::combine_tile_in_order(
                        beta,
                        in_order.as_mut_ptr(),
                        &rows,
                        &[*run],
                        &tile,
                        width,
                    );
                    ran
                };
                if !ran {
                    assert_eq!(
                        vectors.iter().map(|&x| bits(x)).collect::<Vec<_>>(),
                        start.iter().map(|&x| bits(x)).collect::<Vec<_>>()
                    );
                    return;
                }
                for (at, (x, y)) in vectors.iter().zip(&in_order).enumerate() {
                    assert_eq!(bits(*x), bits(*y), "{beta:?} {run:?}: element {at}");
                }
            }
        }
    }

    /// `product_into_runs` against `gemm` into a tile combined element by element, bit for
    /// bit, over C's whole buffer (elements outside the runs untouched), for every β; where
    /// the CPU lacks AVX-512 F, or a run lies past the `n` columns, C must be untouched.
    fn check_runs<T: Lanes + std::fmt::Debug>(
        value: fn(usize) -> T,
        [nan, infinity]: [T; 2],
        bits: fn(T) -> u64,
    ) {
        let width = WIDEST * T::LANES;
        let row = 3 * width;
        let alpha = value(3);
        for (m, k, n) in [
            (1, 1, 1),
            (7, 13, 5),
            (8, 0, width),
            (9, 4, T::LANES + 3),
            (24, 13, width),
            (17, 2, T::LANES),
        ] {
            // A column-major (as panels pack it) and row-major; B's rows `width` apart.
            let a: Vec<T> = (0..m * k).map(|at| value(at + 1)).collect();
            let b: Vec<T> = (0..k * width).map(|at| value(at + 1000)).collect();
            let rows: Vec<isize> = (0..m).map(|i| (i * row + i % 3) as isize).collect();
            // Runs of 3, 12, 1, 5, … columns, a gap before each, some across the vectors; and
            // runs of one column each (a vector's every lane a piece of its own).
            let runs_of = |lengths: &[usize]| {
                let mut runs = Vec::new();
                let (mut first, mut lengths) = (0, lengths.iter().cycle());
                while first < n {
                    let length = (*lengths.next().unwrap()).min(n - first);
                    runs.push((first, length, (2 * first + 1) as isize));
                    first += length;
                }
                runs
            };
            let (runs, single) = (runs_of(&[3, 12, 1, 5]), runs_of(&[1]));
            for ((rsa, csa), runs) in [(1, m as isize), (k as isize, 1)]
                .into_iter()
                .flat_map(|strides| [(strides, &runs), (strides, &single)])
            {
                for beta in [None, Some(T::ONE), Some(value(5)), Some(T::ZERO)] {
                    let start: Vec<T> = (0..m * row + 2)
                        .map(|at| match beta {
                            None => nan,
                            Some(_) if at % 7 == 0 => {
                                [nan, infinity, T::ZERO.negated()][at / 7 % 3]
                            }
                            Some(_) => value(at + 11),
                        })
                        .collect();
                    let (mut direct, mut expected) = (start.clone(), start.clone());
                    let mut tile = vec![T::ZERO; m.max(1) * width];
                    // SAFETY: A `m × k` and B `k × n` (rows `width` apart) inside their
                    // buffers; each row's runs end before `2n + 1 + n < 3·width` from the row,
                    // rows `3·width` apart, all inside C; the tile is its own buffer.
                    let ran = unsafe {
                        let ran = product_into_runs(
                            m,
                            k,
                            n,
                            alpha,
                            (a.as_ptr(), rsa, csa),
                            (b.as_ptr(), width as isize),
                            beta,
                            (direct.as_mut_ptr(), &rows, runs),
                        );
                        let tiled = gemm(
                            m,
                            k,
                            n,
                            alpha,
                            (a.as_ptr(), rsa, csa),
                            (b.as_ptr(), width as isize, 1),
                            T::ZERO,
                            (tile.as_mut_ptr(), width as isize, 1),
                        );
                        assert_eq!(ran, tiled);
                        crate::element::combine_tile_in_order(
                            beta,
                            expected.as_mut_ptr(),
                            &rows,
                            runs,
                            &tile,
                            width,
                        );
                        ran
                    };
                    let want = if ran { &expected } else { &start };
                    for (at, (x, y)) in direct.iter().zip(want).enumerate() {
                        assert_eq!(bits(*x), bits(*y), "{m}×{k}×{n} {beta:?}: element {at}");
                    }
                }
            }
            // Calls refused before anything is read or written: C untouched.
            let mut c: Vec<T> = (0..m * row + 2).map(value).collect();
            let before: Vec<u64> = c.iter().map(|&x| bits(x)).collect();
            let mut refused = |rows: &[isize], runs: &[Run]| {
                // SAFETY: refused before anything is read or written.
                let ran = unsafe {
                    product_into_runs(
                        m,
                        k,
                        n,
                        alpha,
                        (a.as_ptr(), 1, m as isize),
                        (b.as_ptr(), width as isize),
                        None,
                        (c.as_mut_ptr(), rows, runs),
                    )
                };
                !ran
            };
            // A run past the `n` columns; fewer rows named than the product has; a run's end
            // past `usize`; runs that overlap, more of them on a vector than it has lanes.
            assert!(refused(&rows, &[(n - 1, 2, 0)]));
            assert!(refused(&rows[..m - 1], &[(0, 1, 0)]));
            assert!(refused(&rows, &[(1, usize::MAX, 0)]));
            assert!(refused(&rows, &vec![(0, 1, 0); MOST_PIECES + 1]));
            assert_eq!(c.iter().map(|&x| bits(x)).collect::<Vec<_>>(), before);
        }
    }

    #[test]
    fn products_go_straight_into_runs_as_their_tiles_would() {
        check_runs::<f32>(
            |n| (n as f32 * 0.37).sin() * 1e3,
            [f32::NAN, f32::INFINITY],
            |x| x.to_bits().into(),
        );
        check_runs::<f64>(
            |n| (n as f64 * 0.37).sin() * 1e3,
            [f64::NAN, f64::INFINITY],
            f64::to_bits,
        );
    }

    #[test]
    fn tiles_combine_in_vectors_as_element_by_element() {
        check_combine::<f32>(
            |n| (n as f32 * 0.37).sin() * 1e3,
            [f32::NAN, f32::INFINITY],
            |x| x.to_bits().into(),
        );
        check_combine::<f64>(
            |n| (n as f64 * 0.37).sin() * 1e3,
            [f64::NAN, f64::INFINITY],
            f64::to_bits,
        );
    }
}

//! Two-operand contraction steps → GEMM calls (`C ← α A B + β C`) on the operands' own strides,
//! no copies: the loop variables of each role (batch, left, right, contracted) that form one
//! regular dimension in every operand are merged into the GEMM's m, n or k; the others become
//! loops around the call (contracted ones accumulating). Small problems run as loop nests.

use std::ops::Range;

use crate::element::Element;
use crate::operand::access::{stored_offset, Memory, Mode};
use crate::tensor::memory::{LINE, PAGE};

use super::loop_nest::{combine, copy, evaluate, AnyNest};
use super::parallel::{for_each_chunk, for_each_part};
use super::scratch::Scratch;
use super::step::{with_detached, Axis, Bound, BoundTarget, Step, Unproven};
use super::{sort_loops, LoopList};

/// What a loop variable of a contraction `C[..] = Σ A[..] B[..]` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Role {
    /// In A, B and C: one GEMM per value.
    Batch,
    /// In A and C: a row of the GEMM.
    Left,
    /// In B and C: a column of the GEMM.
    Right,
    /// In A and B, summed: the GEMM's inner dimension.
    Contracted,
}

// Heuristic: below this many multiply-adds per call, packing and call overhead outweigh the
// GEMM kernel's speed, and the fused loop nest wins (`cargo bench -p tensor-dsl-benches --bench workloads`)
// unless the call is no thinner than `SMALL_GEMM_SIDE` every way.
const GEMM_THRESHOLD: usize = 32 * 32 * 32;

// Heuristic: calls whose m, n and k are all at least this are GEMMs however small the product
// (from `SMALL_GEMM_SIDE`³ multiply-adds). Measured on `Tensor<f32>` products, one thread: 64
// batched 8³ GEMMs took 26 µs against the loop nest's 76 µs (6³: 45 µs against 39, so no
// smaller); single 12³ to 24³ products 1.2–2.4 µs against 3.5–18 µs, whichever operand is
// transposed. Thinner calls (a matrix times a vector) keep the loop nest below the threshold.
const SMALL_GEMM_SIDE: usize = 8;

/// Whether a product of these m, n and k is run as a GEMM rather than a loop nest.
fn worth_a_gemm(sides: [usize; 3]) -> bool {
    sides.iter().product::<usize>() >= GEMM_THRESHOLD
        || sides.iter().all(|&side| side >= SMALL_GEMM_SIDE)
}

/// [`contract`] for a statement whose only step runs on the host, once the operands are
/// detached from the target and the step is proven (`step::with_detached`). A small product
/// of two matrices goes straight to its one call instead (`small_product`).
#[inline]
pub fn contract_detached<T: Element, const L: usize>(step: Unproven<'_, T, L, 2>, conj: [bool; 2]) {
    if !small_product(&step, conj) {
        with_detached(step, |step| contract(step, conj));
    }
}

/// Runs `step` as its one [`Element::small_gemm`] call, and returns `true`, where it is a
/// product of two matrices `C[i, j] (=|+=|= β·C +) α·Σ_p A·B` that the general path would run
/// as exactly that call: three loops, each of extent at least two, the target's two each
/// taken by one operand and the third by both; every axis a loop of its own (no fixed
/// position); host memory, whole elements, no operand read in place; a small call
/// ([`small_calls`], no more than [`GROUP`] deep, worth a GEMM); a unit stride in each matrix
/// and along C's rows (nothing a copy would improve), or down C's columns where the thin
/// kernel takes the call the other way round (`Cᵀ = Bᵀ·Aᵀ`). It checks what `Step::new`
/// proves of such a step, in a few comparisons: every element the loops reach is inside its
/// buffer, no two points of C share an element, and C's elements share no address with A's
/// or B's (else the general path detaches the operand). The call is then the one `run_gemms`
/// makes for the step, with the same strides (or, the other way round, the one the thin
/// kernel makes of `run_gemms`'s transposed call), so the bits are the same. Otherwise it
/// touches nothing and returns `false`. Skipping the general path's detaching, proof and plan is
/// most of a 16 × 16 product's time.
fn small_product<T: Element, const L: usize>(
    step: &Unproven<'_, T, L, 2>,
    conj: [bool; 2],
) -> bool {
    if L != 3 || step.n_out != 2 {
        return false;
    }
    let extents = &step.extents;
    let [(a, a_axes), (b, b_axes)] = &step.operands;
    let accesses = [
        (&step.target.raw, step.target_axes, false),
        (&a.raw, *a_axes, a.in_place),
        (&b.raw, *b_axes, b.in_place),
    ];
    // Each access's stride along each loop, the loops it uses (a bit each), and the lowest
    // and highest offset it reaches.
    let mut strides = [[0isize; 3]; 3];
    let mut uses = [0u8; 3];
    let mut reach = [(0isize, 0isize); 3];
    for (which, (raw, axes, in_place)) in accesses.into_iter().enumerate() {
        if in_place
            || raw.part
            || raw.memory != Memory::Host
            || axes.len() != 2
            || raw.shape.len() != 2
            || raw.strides.len() != 2
        {
            return false;
        }
        let (mut low, mut high) = (raw.offset, raw.offset);
        for ((&axis, &extent), &stride) in axes.iter().zip(raw.shape.iter()).zip(raw.strides) {
            let Axis::Loop(var) = axis else {
                return false;
            };
            if var >= 3 || extent != extents[var] || extent < 2 || uses[which] >> var & 1 == 1 {
                return false;
            }
            uses[which] |= 1 << var;
            strides[which][var] = stride;
            let Some(span) = isize::try_from(extent - 1)
                .ok()
                .and_then(|last| last.checked_mul(stride))
            else {
                return false;
            };
            let moved = if span < 0 {
                low.checked_add(span).map(|low| (low, high))
            } else {
                high.checked_add(span).map(|high| (low, high))
            };
            let Some(moved) = moved else {
                return false;
            };
            (low, high) = moved;
        }
        if low < 0 || usize::try_from(high).map_or(true, |high| high >= raw.len) {
            return false;
        }
        reach[which] = (low, high);
    }
    // Roles: C takes loops 0 and 1, A one of them (its rows, m) and B the other (n), and both
    // A and B loop 2 (k).
    let m_var = match uses[1] {
        0b101 => 0,
        0b110 => 1,
        _ => return false,
    };
    let n_var = 1 - m_var;
    if uses[0] != 0b011 || uses[2] != 0b100 | 1 << n_var {
        return false;
    }
    let [c_strides, a_strides, b_strides] = strides;
    // With C's unit stride down its columns (the factors written the other way round,
    // `x[k, j] * w[i, k]`), the call is `Cᵀ = Bᵀ·Aᵀ`: B's rows are the call's rows. The general
    // path plans the transposed call, which the thin kernel runs as this one (its transposed
    // product), so only where the thin kernel takes it.
    let swapped = c_strides[m_var].unsigned_abs() == 1
        && c_strides[n_var].unsigned_abs() != 1
        && T::tile_columns().is_some_and(|columns| extents[m_var] <= columns);
    let (m_var, n_var, conj) = if swapped {
        (n_var, m_var, [conj[1], conj[0]])
    } else {
        (m_var, n_var, conj)
    };
    let (first, second, first_strides, second_strides, first_reach, second_reach) = if swapped {
        (b, a, b_strides, a_strides, 2, 1)
    } else {
        (a, b, a_strides, b_strides, 1, 2)
    };
    let (m, n, k) = (extents[m_var], extents[n_var], extents[2]);
    // The GEMM's dimensions as the plan would merge them (one loop each), strides in A, B, C.
    let dimension = |var: usize, extent: usize| Dimension {
        extent,
        strides: [first_strides[var], second_strides[var], c_strides[var]],
    };
    let (m_dim, n_dim, k_dim) = (dimension(m_var, m), dimension(n_var, n), dimension(2, k));
    // Nothing a copy would improve (`packed_layouts` settles at once): a unit stride in each
    // matrix, and C's along its rows.
    let settled = strided_matrices(m_dim, n_dim, k_dim) == 0 && n_dim.steps_by_one(2);
    if !(worth_a_gemm([m, n, k]) && small_call(m, n, k) && k <= GROUP && settled) {
        return false;
    }
    // Distinct points of C, distinct elements: along C's rows the stride is ±1 (checked
    // above), so its rows hold distinct elements, and its row stride passes a whole row.
    let (row, column) = (
        m_dim.strides[2].unsigned_abs(),
        n_dim.strides[2].unsigned_abs(),
    );
    if row < column.saturating_mul(n) {
        return false;
    }
    // C's addresses apart from A's and B's.
    let size = size_of::<T>().max(1);
    let bytes = |which: usize, data: *const T| {
        let (low, high) = reach[which];
        let start = data.wrapping_offset(low) as usize;
        let length = high.abs_diff(low).checked_add(1)?.checked_mul(size)?;
        Some((start, start.checked_add(length)?))
    };
    let (Some(c), Some(a_bytes), Some(b_bytes)) = (
        bytes(0, step.target.raw.data),
        bytes(first_reach, first.raw.data),
        bytes(second_reach, second.raw.data),
    ) else {
        return false;
    };
    let apart = |(start, end): (usize, usize)| end <= c.0 || c.1 <= start;
    if !apart(a_bytes) || !apart(b_bytes) {
        return false;
    }
    let beta = step.mode.beta();
    // SAFETY: every element the three layouts reach over the loops' extents lies inside its
    // buffer (each access's lowest and highest offset were checked against its length, and
    // its offset is an element's, so each pointer below is non-null and aligned); the
    // operands' are valid for reads while their borrows live, the target's for reads and
    // writes (a writable borrow); C's points address distinct elements, none of which is
    // A's or B's (checked above). β = 0 does not read C, as the general path's proof makes
    // of `Mode::Scale(0)`.
    unsafe {
        T::small_gemm(
            m,
            k,
            n,
            step.alpha,
            (
                first.raw.data.wrapping_offset(first.raw.offset),
                m_dim.strides[0],
                k_dim.strides[0],
            ),
            (
                second.raw.data.wrapping_offset(second.raw.offset),
                k_dim.strides[1],
                n_dim.strides[1],
            ),
            beta,
            (
                step.target
                    .data_mut()
                    .wrapping_offset(step.target.raw.offset),
                m_dim.strides[2],
                n_dim.strides[2],
            ),
            conj,
        );
    }
    true
}

/// `target (=|+=|← β·target +) α · Σ op(a)·op(b)`, as GEMM calls where the loops allow it,
/// `op` conjugating the operands `conj` names inside the GEMM kernel (no conjugated copy).
///
/// Same contract as [`evaluate`] with the body `op(a) * op(b)`. Each loop's role (batch, row, column,
/// contracted) is read off which accesses use it; a step that is no GEMM (a loop summed in one
/// operand only, a broadcast target loop, an in-place operand, a target whose points share
/// elements) or is too small runs as a loop nest.
///
/// A real operand of a complex step (a tensor of parts) is read where it lies: by real GEMMs on
/// the complex operand's and the target's parts where α and β are real (`gemm_with_parts`),
/// else by the loop nest, which converts each element as it loads it.
#[inline]
pub fn contract<T: Element, const L: usize>(step: Step<'_, T, L, 2>, conj: [bool; 2]) {
    in_few_loops!(L, step, M => contract_loops::<T, M>(step, conj))
}

/// [`contract`] over a step of a few loop counts (`in_few_loops`).
pub(super) fn contract_loops<T: Element, const L: usize>(step: Step<'_, T, L, 2>, conj: [bool; 2]) {
    step.assert_on_host();
    let parts = step.operands().map(|operand| operand.part);
    let real = |value: T| value.split_parts()[1] == T::Part::ZERO;
    let gemm_takes = match parts {
        [false, false] => true,
        [true, true] => false,
        _ => {
            real(step.alpha())
                && match step.mode() {
                    Mode::Scale(beta) => real(beta),
                    Mode::Assign | Mode::Add => true,
                }
        }
    };
    let Some(plan) = GemmPlan::planned(&step, worth_a_gemm, Merge::Longest).filter(|_| gemm_takes)
    else {
        // One body per case, so the loop nest's body has no branch.
        return match conj {
            [false, false] => evaluate(step, |[x, y]| x.times(y), AnyNest),
            [true, false] => evaluate(step, |[x, y]| x.conj().times(y), AnyNest),
            [false, true] => evaluate(step, |[x, y]| x.times(y.conj()), AnyNest),
            [true, true] => evaluate(step, |[x, y]| x.conj().times(y.conj()), AnyNest),
        };
    };
    // Packing would copy a real operand into complex numbers: its calls stay as they are.
    let packing =
        packed_layouts(&step, &plan, Weighing::HostTime, true).filter(|_| parts == [false, false]);
    if let Some(roles) = in_panels(&step, &plan, packing).filter(|_| parts == [false, false]) {
        return super::panels::contract(&step, &roles, conj);
    }
    match packing {
        Some(Packing {
            layouts: [None, None, None],
            merge,
        }) => {
            let plan = GemmPlan::planned(&step, |_| true, merge).expect("the step is a GEMM");
            run_gemms(step, &plan, conj)
        }
        Some(Packing { layouts, merge }) => contract_packed(step, layouts, merge, conj),
        None => run_gemms(step, &plan, conj),
    }
}

/// The loops' roles if the step runs in panels ([`super::panels`]) rather than as the GEMM
/// calls of `plan` after `packing`: where those calls would leave C where it lies without a
/// unit stride along their rows or columns (so each call gathers and scatters C element by
/// element, and no copy of C was worth its cost), and `panels::suits` the step's sides (an
/// inner dimension at most 512 deep, rows and columns its tables hold, a type with the thin
/// kernel). Measured (one thread, f32, AVX-512): the TCCG
/// benchmark `abcdef-dega-gfbc`, whose C is scattered by every call, ran 1.40× faster in
/// panels; the steps whose C is copied instead (`abcd-dbea-ec`, `abcde-efbad-cf`,
/// `abc-dca-bd`) and those with a unit-stride C (GEMMs, batched products) ran 0.25–0.57× as
/// fast in panels, so they keep the calls.
fn in_panels<T: Element, const L: usize>(
    step: &Step<'_, T, L, 2>,
    plan: &GemmPlan<L>,
    packing: Option<Packing<L>>,
) -> Option<[Role; L]> {
    // Calls that scatter C: neither C's rows nor its columns step by one element.
    let scatter = |plan: &GemmPlan<L>| !plan.m.steps_by_one(2) && !plan.n.steps_by_one(2);
    match packing {
        // Nothing copied: the calls are `plan`'s (asked first, as it costs nothing).
        None if !scatter(plan) => return None,
        // A copied C has unit strides.
        Some(Packing { layouts, .. }) if layouts[2].is_some() => return None,
        _ => {}
    }
    let roles = roles(step)?;
    let side = |role: Role| -> usize {
        (0..L)
            .filter(|&var| roles[var] == role)
            .map(|var| step.extents()[var])
            .product()
    };
    if !super::panels::suits::<T>([Role::Left, Role::Right, Role::Contracted].map(side)) {
        return None;
    }
    if let Some(Packing { layouts, merge }) = packing {
        let [a, b] = step.operands();
        let strides = [
            layouts[0].unwrap_or(a.strides),
            layouts[1].unwrap_or(b.strides),
            step.target().strides,
        ];
        let calls = GemmPlan::merged(
            &roles,
            step.extents(),
            strides,
            plan.work,
            plan.batches,
            merge,
        );
        if !scatter(&calls) {
            return None;
        }
    }
    Some(roles)
}

/// `C ← α op(A) op(B) + β C` as [`Element::gemm`], where one of A and B (`parts`) holds real
/// parts (a real matrix in a complex product; its pointer and strides count parts) and α and
/// β are real: the product of a real and a complex matrix is the real matrix times the real and
/// the imaginary parts of the other, so it runs as real GEMMs on the parts of the complex
/// operand and of C, half the arithmetic of a complex GEMM. Where the complex operand's and C's
/// columns (rows, for a complex A) are adjacent (or single), their parts interleave into one real matrix of
/// twice the columns (rows) and one call does it; otherwise one call per part. Conjugating the
/// complex operand negates its imaginary part's product.
///
/// # Safety
/// As [`Element::gemm`]'s, for the elements and parts the pointers address.
#[allow(clippy::too_many_arguments)]
unsafe fn gemm_with_parts<T: Element>(
    m: usize,
    k: usize,
    n: usize,
    alpha: T,
    a: (*const T, isize, isize),
    b: (*const T, isize, isize),
    beta: T,
    c: (*mut T, isize, isize),
    parts: [bool; 2],
    conj: [bool; 2],
    parallel: bool,
) {
    let ([alpha, _], [beta, _]) = (alpha.split_parts(), beta.split_parts());
    let real =
        |(data, rows, columns): (*const T, isize, isize)| (data.cast::<T::Part>(), rows, columns);
    // A complex matrix as the real matrix of its real parts (the imaginary parts one further).
    let re = |(data, rows, columns): (*const T, isize, isize)| {
        (data.cast::<T::Part>(), 2 * rows, 2 * columns)
    };
    let c_re = (c.0.cast::<T::Part>(), 2 * c.1, 2 * c.2);
    // Each call: (m, k, n, A, B, C) over parts, and whether the complex operand's parts in it
    // are conjugated imaginary parts (negated).
    let (first, second) = if parts[0] {
        // A real, B complex: C's parts are A times B's parts.
        let b_re = re(b);
        if (n == 1 || b.2 == 1 && c.2 == 1) && !conj[1] {
            let wide = ((b_re.0, b_re.1, 1), (c_re.0, c_re.1, 1));
            ((m, k, 2 * n, real(a), wide.0, wide.1, false), None)
        } else {
            // SAFETY: one part on is inside B's and C's first complex elements.
            let (b_im, c_im) = unsafe { (b_re.0.add(1), c_re.0.add(1)) };
            (
                (m, k, n, real(a), b_re, c_re, false),
                Some((
                    m,
                    k,
                    n,
                    real(a),
                    (b_im, b_re.1, b_re.2),
                    (c_im, c_re.1, c_re.2),
                    conj[1],
                )),
            )
        }
    } else {
        // A complex, B real: C's parts are A's parts times B.
        let a_re = re(a);
        if (m == 1 || a.1 == 1 && c.1 == 1) && !conj[0] {
            let tall = ((a_re.0, 1, a_re.2), (c_re.0, 1, c_re.2));
            ((2 * m, k, n, tall.0, real(b), tall.1, false), None)
        } else {
            // SAFETY: one part on is inside A's and C's first complex elements.
            let (a_im, c_im) = unsafe { (a_re.0.add(1), c_re.0.add(1)) };
            (
                (m, k, n, a_re, real(b), c_re, false),
                Some((
                    m,
                    k,
                    n,
                    (a_im, a_re.1, a_re.2),
                    real(b),
                    (c_im, c_re.1, c_re.2),
                    conj[0],
                )),
            )
        }
    };
    for (m, k, n, a, b, (c, rows, columns), negated) in std::iter::once(first).chain(second) {
        let alpha = if negated { alpha.negated() } else { alpha };
        // SAFETY: the parts of the complex operand and of C address the same memory as their
        // complex elements (`Complex<F>` is `repr(C)` of two `F`s), which the caller's
        // contract makes valid; C's parts are distinct because its elements are.
        unsafe {
            T::Part::gemm(
                m,
                k,
                n,
                alpha,
                a,
                b,
                beta,
                (c, rows, columns),
                [false, false],
                parallel,
            )
        };
    }
}

/// What copying one element into a GEMM-friendly temporary costs on the host, in
/// multiply-adds of a GEMM: about 1 ns against about 60 ps on one core of the machines
/// measured (f32; the seed and TCCG benchmarks, `cargo bench -p tensor-dsl-benches --bench
/// workloads`).
const PACKING_REUSE: usize = 16;

/// What a `gemm` crate call costs beyond its arithmetic, in multiply-adds: 0.2 to 2 µs per call
/// measured for unit-stride calls of 16³ to 128³ (about 1 µs ≈ 16 384 multiply-adds).
const CALL_COST: usize = 1 << 14;

/// What [`packed_layouts`] chose: the strides of the temporaries A, B or C are copied into
/// (`None`: used where it lies), and how the calls' dimensions are merged then.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Packing<const L: usize> {
    pub(crate) layouts: [Option<[isize; L]>; 3],
    pub(crate) merge: Merge,
}

/// What a matrix without a unit stride costs the `gemm` crate per element each call reads or
/// writes, in multiply-adds, where neighbouring elements lie a cache line or more apart
/// (about 10 ns per element, measured on a C whose elements lie 128 and 16 384 elements
/// apart); an eighth of it where they share lines.
const STRIDED_ELEMENT_COST: usize = 128;

/// How [`packed_layouts`] weighs copies against the calls they save.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Weighing {
    /// The fewest calls, among copies that do at least `reuse` multiply-adds per element
    /// copied (a device, where cuBLAS takes every call at its speed or not at all).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    FewestCalls { reuse: usize },
    /// The least time estimated for the host's `gemm` crate ([`GemmPlan::host_time`]): each
    /// element copied costs [`PACKING_REUSE`] multiply-adds, each call and each copy
    /// [`CALL_COST`], each element of a matrix without a unit stride in the call (A, B or C),
    /// which the crate gathers element by element, [`STRIDED_ELEMENT_COST`] per call (a
    /// strided C alone measured 0.4–0.6× the speed of the same calls on a unit-stride one;
    /// with A strided too, under 0.2×), and calls that sum into one C, a column-major C and
    /// thin calls their share. Copying nothing is a
    /// candidate too: calls on unit strides run at 0.9–1.0× one large GEMM's speed from 32³ up,
    /// so a copy of an operand that already has a unit stride rarely pays.
    HostTime,
}

/// Multiply-adds per call above which C is not copied to merge calls ([`packed_layouts`]).
const TARGET_PACKING_WORK: usize = 1 << 22;
/// The shortest runs a copy of C back into place may move ([`packed_layouts`]).
const TARGET_PACKING_RUN: usize = 16;

/// For a step whose loops do not all merge (so its GEMM is many calls) or whose matrices lack
/// a unit stride, new strides for A, B, C, or several of them, under which they would (TTGT:
/// transpose, then one large GEMM, then transpose C back): a copied C holds its batch loops
/// outermost, then its rows in A's order and its columns in B's, so that they merge in it and
/// in the operands left as they are (its outermost loop a line longer where a whole number of
/// pages would put a copy-back tile's columns in one cache set: [`off_the_pages`]); a copied
/// operand holds its batch loops outermost, then its
/// rows or columns in C's order (the copy's, if C is copied), and its contracted loops in the
/// other operand's order (A's, if both are copied), the GEMM's inner dimension innermost in A
/// and B alike. C is copied only if `target` (the caller can copy it back). Weighed as the host
/// weighs them, every candidate (copying nothing too) is planned with each [`Merge`]: the
/// longest merged dimensions may leave a matrix without a unit stride where a shorter one
/// keeps it. `None` where nothing is worth more than `plan` as `weighing` weighs it.
pub(crate) fn packed_layouts<T, const L: usize>(
    step: &Step<'_, T, L, 2>,
    plan: &GemmPlan<L>,
    weighing: Weighing,
    target: bool,
) -> Option<Packing<L>> {
    let extents = step.extents();
    let calls = plan.calls(extents);
    let roles = roles(step)?;
    let total_work = plan.work.saturating_mul(plan.batches);
    // What a plan costs after copying `copied` elements: the measure a copy must lower.
    let measure = |plan: &GemmPlan<L>, [copies, copied]: [usize; 2]| match weighing {
        Weighing::FewestCalls { .. } => plan.calls(extents),
        Weighing::HostTime => plan.host_time(extents, copies, copied, size_of::<T>()),
    };
    // One call per batch on unit strides (a column-major C's one call runs transposed, as
    // fast as a row-major one): nothing a copy could improve (asked before any candidate is
    // planned, so small products pay nothing for the question).
    let settled = match weighing {
        Weighing::FewestCalls { .. } => true,
        Weighing::HostTime => strided_matrices(plan.m, plan.n, plan.k) == 0,
    };
    if settled && calls <= plan.batches {
        return None;
    }
    let merges: &[Merge] = match weighing {
        Weighing::FewestCalls { .. } => &[Merge::Longest],
        Weighing::HostTime => &[Merge::Longest, Merge::UnitStride],
    };
    let unpacked = measure(plan, [0, 0]);
    let [a, b] = step.operands();
    let c = step.target();
    // Loops of `role`, outermost (largest stride in `by`) first.
    let ranked = |role: Role, by: &[isize; L]| -> Vec<usize> {
        let mut loops: Vec<usize> = (0..L).filter(|&var| roles[var] == role).collect();
        sort_loops(&mut loops, &|var| std::cmp::Reverse(by[var].unsigned_abs()));
        loops
    };
    // Cheapest first: a later candidate replaces an earlier one only with fewer calls.
    let candidates = [
        [true, false, false],
        [false, true, false],
        [true, true, false],
        [false, false, true],
        [true, false, true],
        [false, true, true],
        [true, true, true],
    ];
    // C's copy, if it may have one: rows in A's order, columns in B's.
    let c_layout = target
        .then(|| {
            let mut sequence = ranked(Role::Batch, &c.strides);
            sequence.extend(ranked(Role::Left, &a.strides));
            sequence.extend(ranked(Role::Right, &b.strides));
            sequence.retain(|&var| c.uses >> var & 1 == 1 && extents[var] > 1);
            sequence
        })
        .filter(|sequence| {
            // Copying C costs two passes over it: calls of more work each already run near
            // the GEMM's speed, and a copy back whose runs (along the copy's last loop, and
            // C's unit-stride one) are short moves too few bytes per run; neither was
            // measured to pay (the TCCG benchmarks).
            let per_call = plan.m.extent * plan.n.extent * plan.k.extent;
            let unit = (0..L).find(|&var| c.strides[var].abs() == 1 && extents[var] > 1);
            let run = |var: Option<&usize>| var.map_or(0, |&var| extents[var]);
            per_call <= TARGET_PACKING_WORK
                && run(sequence.last()).min(run(unit.as_ref())) >= TARGET_PACKING_RUN
        })
        .map(|sequence| {
            off_the_pages::<T, L>(
                row_major(extents, &sequence),
                &sequence,
                extents,
                [&a.strides, &b.strides],
            )
        });
    let mut best: Option<(usize, Packing<L>)> = None;
    for copy in [[false; 3]]
        .into_iter()
        .chain(candidates)
        .filter(|copy| !copy[2] || c_layout.is_some())
    {
        let mut layouts = [None; 3];
        let mut copied = 0usize;
        if copy[2] {
            layouts[2] = c_layout;
            copied = elements_over(extents, c.uses);
        }
        let c_order = layouts[2].unwrap_or(c.strides);
        // Contracted loops follow the operand left as it is (A's order if both are copied).
        let contracted_order = if copy[0] && !copy[1] {
            &b.strides
        } else {
            &a.strides
        };
        for (which, own_role) in [(0, Role::Left), (1, Role::Right)] {
            if !copy[which] {
                continue;
            }
            let operand = &step.operands()[which];
            let mut sequence = ranked(Role::Batch, &c_order);
            if which == 0 {
                sequence.extend(ranked(own_role, &c_order));
                sequence.extend(ranked(Role::Contracted, contracted_order));
            } else {
                sequence.extend(ranked(Role::Contracted, contracted_order));
                sequence.extend(ranked(own_role, &c_order));
            }
            sequence.retain(|&var| operand.uses >> var & 1 == 1);
            layouts[which] = Some(row_major(extents, &sequence));
            copied = copied.saturating_add(elements_over(extents, operand.uses));
        }
        if let Weighing::FewestCalls { reuse } = weighing {
            if copied.saturating_mul(reuse) > total_work {
                continue;
            }
        }
        let strides = [
            layouts[0].unwrap_or(a.strides),
            layouts[1].unwrap_or(b.strides),
            c_order,
        ];
        let copies = layouts.iter().flatten().count();
        for &merge in merges {
            let after = GemmPlan::merged(&roles, extents, strides, plan.work, plan.batches, merge);
            let after = measure(&after, [copies, copied]);
            if after < unpacked && best.as_ref().is_none_or(|(least, _)| after < *least) {
                best = Some((after, Packing { layouts, merge }));
            }
        }
    }
    best.map(|(_, packing)| packing)
}

/// How many elements a tensor that uses the loops of `uses` (one bit per loop) holds laid
/// out without gaps: the product of those loops' extents.
pub(crate) fn elements_over<const L: usize>(extents: &[usize; L], uses: u64) -> usize {
    (0..L)
        .filter(|&var| uses >> var & 1 == 1)
        .map(|var| extents[var])
        .product()
}

/// `strides` (a temporary's, row-major over `sequence`, outermost first) with the outermost
/// loop's stride one cache line longer where it is a whole number of 4 KiB pages, unless an
/// operand could merge that loop with the next one (a GEMM dimension the gap would split).
/// The copy back of C reads the temporary down that loop in a tile's columns: a page apart,
/// those all fall in one cache set and are first copied through a buffer (`loop_nest`'s
/// page-apart tiles). TCCG `abcde-efbad-cf` (C's 4096-row blocks a megabyte apart) went from
/// 9.0–9.4 to 8.4–8.9 ms (one thread, `f32`, one binary in turns with and without the gap).
fn off_the_pages<T, const L: usize>(
    mut strides: [isize; L],
    sequence: &[usize],
    extents: &[usize; L],
    operands: [&[isize; L]; 2],
) -> [isize; L] {
    let (Some(&outer), Some(&next)) = (sequence.first(), sequence.get(1)) else {
        return strides;
    };
    let paged = strides[outer]
        .unsigned_abs()
        .wrapping_mul(size_of::<T>())
        .is_multiple_of(PAGE);
    let merges = operands.iter().any(|operand| {
        operand[outer] != 0
            && operand[next] != 0
            && operand[outer] == (extents[next] as isize).wrapping_mul(operand[next])
    });
    if paged && !merges {
        strides[outer] += LINE.div_ceil(size_of::<T>().max(1)) as isize;
    }
    strides
}

/// How many elements a temporary with these strides over the loops of `uses` spans: its
/// highest offset plus one (0 if a loop is empty). Row-major strides span
/// [`elements_over`]; [`off_the_pages`]' gap adds one line per step of the outermost loop.
fn span<const L: usize>(extents: &[usize; L], strides: &[isize; L], uses: u64) -> usize {
    let used = (0..L).filter(|&var| uses >> var & 1 == 1);
    if used.clone().any(|var| extents[var] == 0) {
        return 0;
    }
    1 + used
        .map(|var| (extents[var] - 1) * strides[var].unsigned_abs())
        .sum::<usize>()
}

/// Row-major strides over `sequence` (outermost first); other loops get stride 0.
///
/// # Panics
/// If the element count overflows `isize` (no such buffer could be allocated anyway).
pub(crate) fn row_major<const L: usize>(extents: &[usize; L], sequence: &[usize]) -> [isize; L] {
    let mut strides = [0isize; L];
    let mut count = 1usize;
    for &var in sequence.iter().rev() {
        strides[var] = isize::try_from(count).expect("temporary too large");
        count = count
            .checked_mul(extents[var])
            .expect("a temporary has more elements than fit in usize");
    }
    strides
}

/// Copies the operands `layouts` names into temporaries laid out so, then runs the GEMMs on
/// those, into a temporary as well if `layouts` names C, which is then combined into the
/// target as the step's mode says: the copies cost one pass over each tensor, and the calls
/// they save are worth more ([`packed_layouts`]).
fn contract_packed<T: Element, const L: usize>(
    step: Step<'_, T, L, 2>,
    layouts: [Option<[isize; L]>; 3],
    merge: Merge,
    conj: [bool; 2],
) {
    let uses = [
        step.operands()[0].uses,
        step.operands()[1].uses,
        step.target().uses,
    ];
    let lengths = (0..3).filter_map(|which| {
        layouts[which].map(|strides| span(step.extents(), &strides, uses[which]))
    });
    // Alive until the GEMMs and the copy back below have run.
    let mut scratch = Scratch::<T>::with_lengths(lengths.collect::<Vec<_>>());
    let mut starts = scratch.starts().into_iter();
    let mut operands = *step.operands();
    for (operand, layout) in operands.iter_mut().zip(layouts) {
        let Some(strides) = layout else { continue };
        let (start, len) = starts.next().expect("one buffer per copied operand");
        let copied = step.derived(
            Some(BoundTarget::raw(start, len, strides, operand.uses)),
            [*operand],
            Memory::Host,
        );
        // Copied as they are: a conjugation stays the GEMM's.
        copy(copied);
        *operand = Bound::raw(start.cast_const(), len, strides, operand.uses);
    }
    let Some(strides) = layouts[2] else {
        let packed = step.with_operands(operands);
        let plan = GemmPlan::planned(&packed, |_| true, merge)
            .expect("copying operands keeps a step a GEMM");
        return run_gemms(packed, &plan, conj);
    };
    // C's temporary: the GEMMs assign the bare product to it (nothing there is read), and
    // the copy back applies α and the step's mode.
    let (start, len) = starts.next().expect("one buffer for the target");
    let product = step.derived(
        Some(BoundTarget::raw(start, len, strides, uses[2])),
        operands,
        Memory::Host,
    );
    let plan =
        GemmPlan::planned(&product, |_| true, merge).expect("copying tensors keeps a step a GEMM");
    run_gemms(product, &plan, conj);
    let back = step.derived(
        None,
        [Bound::raw(start.cast_const(), len, strides, uses[2])],
        Memory::Host,
    );
    copy(back);
}

/// Runs a step as the GEMM calls of `plan`, conjugating the operands `conj` names.
fn run_gemms<T: Element, const L: usize>(
    step: Step<'_, T, L, 2>,
    plan: &GemmPlan<L>,
    conj: [bool; 2],
) {
    let (extents, target, mode, alpha) =
        (*step.extents(), step.target(), step.mode(), step.alpha());
    let [a, b] = step.operands();
    let calls = Calls {
        a: a.data,
        b: b.data,
        c: target.data,
        bases: [a.base, b.base, target.base],
        alpha,
        mode,
        conj,
        parts: [a.part, b.part],
        plan,
        extents: &extents,
        small: small_calls(plan),
    };
    // Threads never split the inner dimension, so every element is computed by the same calls
    // in the same order on any number of threads: the same bits. Loops around the call (batch
    // and unmerged left/right variables) address distinct parts of C, so they split across
    // threads, whole calls each; with too few of them, the rows or the columns of each call
    // split where that leaves every element's arithmetic unchanged ([`split_exactly`]), and
    // otherwise each call shares out C's blocks on the `gemm` crate's own threads.
    let outer: usize = plan.outer.iter().map(|&var| extents[var]).product();
    let threads = rayon::current_num_threads();
    let parallel = threads > 1 && plan.work * plan.batches >= PARALLEL_GEMM_WORK;
    // Small calls run whole, each on one thread: a call cut into blocks would change their
    // shape, and with it the kernel and the bits ([`small_calls`]). Threads share whole
    // calls instead, however few, and the groups of a long inner dimension (`Calls::run`).
    let cut = parallel && !calls.small;
    let whole = Block {
        rows: 0..plan.m.extent,
        columns: 0..plan.n.extent,
    };
    if parallel && (outer >= threads || (calls.small && outer > 1)) {
        for_each_part(outer, &|index| calls.run(index, whole.clone(), false));
    } else if let Some(side) = (cut && calls.parts == [false, false])
        .then(|| split_exactly(plan, threads))
        .flatten()
    {
        // (Not for real GEMMs on parts: their calls are twice as wide or tall as the plan's,
        // which `split_exactly` does not judge.)
        for_each_part(threads, &|part| {
            let block = whole.part(side, part, threads);
            (0..outer).for_each(|index| calls.run(index, block.clone(), false));
        });
    } else {
        (0..outer).for_each(|index| calls.run(index, whole.clone(), parallel));
    }
}

/// The side up to which a call counts as thin and goes to the small-call kernels: a row of 64
/// `f32`s is four AVX-512 vectors, which the thin kernel takes in two passes. (`host_time`
/// weighs its own thinness, below 32, the `gemm` crate's blocks.) 64 rather than 32 measured 1.1–1.6× as fast on the calls it
/// moved (one thread, both from one binary in turns, medians of five: `f32` 40³ 51 → 82
/// GFLOP/s, 48³ 74 → 102, 64³ 88 → 100, 64³ with B transposed (`faer`'s kernel) 80 → 103;
/// `f64` 40³ 43 → 49, 64³ 49 → 53), larger calls unchanged.
const THIN_SIDE: usize = 64;

/// Whether a plan's calls go to [`Element::small_gemm`]: m or n at most [`THIN_SIDE`] and
/// less work per call than threads would share. Read off the whole call's shape, never a thread's
/// block of it, so the kernel, and so every element's bits, are the same on any number of
/// threads.
fn small_calls<const L: usize>(plan: &GemmPlan<L>) -> bool {
    small_call(plan.m.extent, plan.n.extent, plan.k.extent)
}

/// Whether a call of this m, n and k is small ([`small_calls`]).
fn small_call(m: usize, n: usize, k: usize) -> bool {
    m.min(n) <= THIN_SIDE && m.saturating_mul(n).saturating_mul(k) < PARALLEL_GEMM_WORK
}

/// A block of every call's C: a range of its rows and of its columns.
#[derive(Clone)]
struct Block {
    rows: Range<usize>,
    columns: Range<usize>,
}

/// Which side of C threads cut between them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Side {
    Rows,
    Columns,
}

impl Block {
    /// Part `part` of `parts` near-equal parts of this block, cut across `side`.
    fn part(&self, side: Side, part: usize, parts: usize) -> Block {
        let cut = |range: &Range<usize>| {
            let len = range.len();
            range.start + len * part / parts..range.start + len * (part + 1) / parts
        };
        match side {
            Side::Rows => Block {
                rows: cut(&self.rows),
                columns: self.columns.clone(),
            },
            Side::Columns => Block {
                rows: self.rows.clone(),
                columns: cut(&self.columns),
            },
        }
    }
}

/// Which side of C, if any, `parts` threads can cut every call of `plan` across so that the
/// `gemm` crate (0.19) computes each element of C with the same arithmetic as in one call: the
/// longer side first, as then each thread reads (and the `gemm` crate packs) only its share of
/// the operand on that side, not all of it (cutting the 32 rows of a 32 × 32 768 product
/// between two threads gained nothing; cutting its columns halved its time). Its choice of
/// kernel and its blocking of k depend on the call's m and n only through: a dot-product
/// kernel when m·n ≤ 256, a matrix-vector kernel when m or n is 1, and k blocks of 512 when m
/// and n are at most 64 (blocks balanced by cache sizes otherwise, which are 512 long as well
/// when k is). A cut is exact when every part makes the same choices as the whole
/// (`test_reproducible` has shapes on each side of these limits, both ways round).
fn split_exactly<const L: usize>(plan: &GemmPlan<L>, parts: usize) -> Option<Side> {
    let (m, n, k) = (plan.m.extent, plan.n.extent, plan.k.extent);
    let summed_in_one_call = plan.summed.is_empty() && k <= GROUP;
    // `cut` the side shared out, `kept` the other.
    let exact = |cut: usize, kept: usize| {
        let fewest = cut / parts;
        summed_in_one_call
            && fewest >= 2
            && kept >= 2
            && fewest * kept > 256
            && (k <= 512 || kept > 64 || cut <= 64 || fewest > 64)
    };
    let sides = if n > m {
        [Side::Columns, Side::Rows]
    } else {
        [Side::Rows, Side::Columns]
    };
    sides.into_iter().find(|&side| match side {
        Side::Rows => exact(m, n),
        Side::Columns => exact(n, m),
    })
}

/// Each loop's role, read off which accesses use it; `None` if the step is no GEMM: a loop of
/// extent above one used by the target and one operand only on the wrong side, summed in one
/// operand only or in none, an operand read in place, or a target whose points share elements.
pub(super) fn roles<T, const L: usize>(step: &Step<'_, T, L, 2>) -> Option<[Role; L]> {
    let [a, b] = step.operands();
    if a.in_place || b.in_place || !step.injective() {
        return None;
    }
    let mut roles = [Role::Batch; L];
    for (var, role) in roles.iter_mut().enumerate() {
        let uses = |mask: u64| mask >> var & 1 == 1;
        *role = match (uses(a.uses), uses(b.uses), var < step.n_out()) {
            (true, true, true) => Role::Batch,
            (true, false, true) => Role::Left,
            (false, true, true) => Role::Right,
            (true, true, false) => Role::Contracted,
            // A loop of extent one changes no address: any role that GEMM ignores.
            _ if step.extents()[var] <= 1 => Role::Batch,
            _ => return None,
        };
    }
    Some(roles)
}

// Heuristic: below about this many multiply-adds (a 128³ GEMM), one thread is as fast.
pub(super) const PARALLEL_GEMM_WORK: usize = 1 << 21;

/// The GEMM calls of one `contract`, shareable between threads.
struct Calls<'p, T, const L: usize> {
    a: *const T,
    b: *const T,
    c: *mut T,
    bases: [isize; 3],
    alpha: T,
    mode: Mode<T>,
    /// Which of A and B the kernels conjugate.
    conj: [bool; 2],
    /// Which of A and B holds real parts (see [`gemm_with_parts`]); offsets into it count
    /// parts.
    parts: [bool; 2],
    plan: &'p GemmPlan<L>,
    extents: &'p [usize; L],
    /// The calls go to [`Element::small_gemm`] ([`small_calls`]).
    small: bool,
}

// SAFETY: threads run calls for different outer indices or different blocks, which write
// disjoint elements of C because `contract` runs GEMMs only for injective targets (the step
// checked it), or for different groups of one call, each into a buffer of its own; A and B
// are only read and share no memory with C (the step checked it).
unsafe impl<T: Sync, const L: usize> Sync for Calls<'_, T, L> {}

// Accuracy: a GEMM sums its inner dimension in order, one block of it (the `gemm` crate's kc,
// 512 or more) after another, so an f32 sum of length 10⁷ added straight into C is off by
// ~1e-5 relative. Longer contractions are cut into groups of at most this length, each summed
// by the GEMM into a buffer of its own and the groups added with compensated (Kahan) summation:
// the error is then about that of one group, ~1e-7 relative for f32, whatever the length.
const GROUP: usize = 4096;

/// The most elements of C summed group by group at once: the `WAVE + 2` buffers it needs are
/// this long (1 MiB each for f32).
const BAND: usize = 1 << 18;

/// Groups summed at once, each into a buffer of its own (on threads of their own where there
/// are enough groups).
const WAVE: usize = 8;

/// `sum += group`, element by element, with Kahan's compensation: `lost` carries what each
/// addition rounded away, so the error stays that of one addition however many are made.
fn add_compensated<T: Element>(group: &[T], sum: &mut [T], lost: &mut [T]) {
    for ((sum, lost), &value) in sum.iter_mut().zip(lost.iter_mut()).zip(group) {
        let corrected = value.minus(*lost);
        let next = sum.plus(corrected);
        *lost = next.minus(*sum).minus(corrected);
        *sum = next;
    }
}

impl<T: Element, const L: usize> Calls<'_, T, L> {
    /// The calls for outer index `index` (mixed radix over `plan.outer`) restricted to `block`
    /// of C, summing over k and the unmerged contracted variables; each call on the pool's
    /// threads if `parallel`.
    fn run(&self, index: usize, block: Block, parallel: bool) {
        let plan = self.plan;
        let mut offsets = self.bases;
        let mut rest = index;
        for &var in plan.outer.iter().rev() {
            let value = (rest % self.extents[var]) as isize;
            rest /= self.extents[var];
            for (offset, strides) in offsets.iter_mut().zip(plan.strides) {
                *offset += strides[var] * value;
            }
        }
        let (first_row, first_column) = (block.rows.start as isize, block.columns.start as isize);
        offsets[0] += first_row * plan.m.strides[0];
        offsets[1] += first_column * plan.n.strides[1];
        offsets[2] += first_row * plan.m.strides[2] + first_column * plan.n.strides[2];
        let sums: usize = plan.summed.iter().map(|&var| self.extents[var]).product();
        // The inner dimension as pieces: each value of the unmerged contracted variables
        // times k cut into near-equal parts of at most `GROUP`.
        let k = plan.k.extent;
        let parts = k.div_ceil(GROUP).max(1);
        let pieces = || {
            (0..sums).flat_map(move |sum| {
                let mut at = offsets;
                let mut rest = sum;
                for &var in plan.summed.iter().rev() {
                    let value = (rest % self.extents[var]) as isize;
                    rest /= self.extents[var];
                    at[0] += plan.strides[0][var] * value;
                    at[1] += plan.strides[1][var] * value;
                }
                (0..parts).map(move |part| {
                    let depth = k * part / parts..k * (part + 1) / parts;
                    let start = depth.start as isize;
                    let mut piece = at;
                    piece[0] += start * plan.k.strides[0];
                    piece[1] += start * plan.k.strides[1];
                    (piece, depth.len())
                })
            })
        };
        let (m, n) = (block.rows.len(), block.columns.len());
        let c = (self.c, plan.m.strides[2], plan.n.strides[2]);
        if sums.saturating_mul(k) <= GROUP {
            let first = self.mode.beta();
            for (number, (at, depth)) in pieces().enumerate() {
                let beta = if number == 0 { first } else { T::ONE };
                // SAFETY: `at` comes from the walk above; C is this call's part of the target.
                unsafe { self.gemm_into(at, depth, m, n, c, at[2], beta, parallel) };
            }
            return;
        }
        // The groups: consecutive pieces, at most `GROUP` long in all unless one piece is.
        let mut groups: Vec<Vec<([isize; 3], usize)>> = Vec::new();
        let mut filled = 0;
        for (at, depth) in pieces() {
            match groups.last_mut() {
                Some(group) if filled + depth <= GROUP => group.push((at, depth)),
                _ => {
                    groups.push(vec![(at, depth)]);
                    filled = 0;
                }
            }
            filled += depth;
        }
        // Bands of C's rows (at most `BAND` elements, so the buffers stay small whatever C's
        // size). In each, `WAVE` groups at a time are summed into buffers of their own, on
        // threads of their own if there are enough of them (else each GEMM on the pool's
        // threads), and then added in order into `sum` with compensation `lost`: the same
        // calls and the same additions on any number of threads.
        let across = parallel && groups.len() >= rayon::current_num_threads();
        let bands = (m * n).div_ceil(BAND).min(m);
        let longest = m.div_ceil(bands) * n;
        let mut scratch = Scratch::<T>::with_lengths([WAVE * longest, longest, longest]);
        let [slots, sum, lost] = scratch.buffers();
        for band in 0..bands {
            let rows = m * band / bands..m * (band + 1) / bands;
            let (start, height) = (rows.start as isize, rows.len());
            let size = height * n;
            let (sum, lost) = (&mut sum[..size], &mut lost[..size]);
            sum.fill(T::ZERO);
            lost.fill(T::ZERO);
            for wave in groups.chunks(WAVE) {
                let slots = &mut slots[..wave.len() * size];
                let run = |group: &Vec<([isize; 3], usize)>, slot: &mut [T]| {
                    for (number, &(mut at, depth)) in group.iter().enumerate() {
                        at[0] += start * plan.m.strides[0];
                        let beta = if number > 0 { T::ONE } else { T::ZERO };
                        let tile = (slot.as_mut_ptr(), n as isize, 1);
                        // SAFETY: `at` comes from the walk above, moved to the band's first
                        // row (inside the m loop); the tile is this group's own row-major
                        // `height × n` buffer.
                        unsafe {
                            self.gemm_into(at, depth, height, n, tile, 0, beta, parallel && !across)
                        };
                    }
                };
                if across {
                    for_each_chunk(slots, size, &|number, slot| run(&wave[number], slot));
                } else {
                    for (group, slot) in wave.iter().zip(slots.chunks_mut(size)) {
                        run(group, slot);
                    }
                }
                for slot in slots.chunks(size) {
                    add_compensated(slot, sum, lost);
                }
            }
            for (row, (sum, lost)) in sum.chunks(n).zip(lost.chunks(n)).enumerate() {
                let row = offsets[2] + (start + row as isize) * plan.m.strides[2];
                for (column, (&sum, &lost)) in sum.iter().zip(lost).enumerate() {
                    let at = row + column as isize * plan.n.strides[2];
                    // SAFETY: as for the calls: the step proved every offset of the target over
                    // the loop nest inside its buffer, and no other call writes this element
                    // (an injective target).
                    unsafe { combine(self.mode, T::ONE, self.c.offset(at), sum.minus(lost)) };
                }
            }
        }
    }

    /// `C ← α A B + β C` for one piece of the inner dimension: A and B at offsets `at`,
    /// `depth` long, into the `m × n` matrix `c` at offset `base` (not read when β = 0).
    ///
    /// # Safety
    /// `at` must come from `run`'s walk (offsets the step proved inside A and B, within the
    /// loop extents), and `c` with `base` must address `m × n` distinct elements, valid for
    /// reads and writes, owned by this task and overlapping neither A nor B.
    #[allow(clippy::too_many_arguments)]
    unsafe fn gemm_into(
        &self,
        at: [isize; 3],
        depth: usize,
        m: usize,
        n: usize,
        (c, row_stride, column_stride): (*mut T, isize, isize),
        base: isize,
        beta: T,
        parallel: bool,
    ) {
        let plan = self.plan;
        // SAFETY: the step proved every offset reachable over the loop nest inside each
        // buffer, and each call addresses loop values within the extents (merged dimensions
        // are products of whole loops; tiles and pieces are ranges inside them); C's elements
        // are distinct and overlap neither A nor B (the caller's contract). The pointers are
        // offsets into those buffers (tensors, arrays, the crate's temporaries), so non-null
        // and aligned as `small_gemm` also asks.
        unsafe {
            let a = (
                stored_offset(self.a, self.parts[0], at[0]),
                plan.m.strides[0],
                plan.k.strides[0],
            );
            let b = (
                stored_offset(self.b, self.parts[1], at[1]),
                plan.k.strides[1],
                plan.n.strides[1],
            );
            let c = (c.offset(base), row_stride, column_stride);
            if self.parts != [false, false] {
                gemm_with_parts(
                    m, depth, n, self.alpha, a, b, beta, c, self.parts, self.conj, parallel,
                );
            } else if self.small {
                T::small_gemm(m, depth, n, self.alpha, a, b, beta, c, self.conj);
            } else if c.1.unsigned_abs() == 1 && c.2.unsigned_abs() != 1 {
                // C stepping by one element down its columns only: the `gemm` crate runs
                // `Cᵀ = Bᵀ·Aᵀ`, whose rows are contiguous, faster (1.5–2.4× on 33² to 64²
                // products).
                let transposed =
                    |(data, rows, columns): (*const T, isize, isize)| (data, columns, rows);
                let (a, b) = (transposed(a), transposed(b));
                let c = (c.0, c.2, c.1);
                T::gemm(
                    n,
                    depth,
                    m,
                    self.alpha,
                    b,
                    a,
                    beta,
                    c,
                    [self.conj[1], self.conj[0]],
                    parallel,
                );
            } else {
                T::gemm(m, depth, n, self.alpha, a, b, beta, c, self.conj, parallel);
            }
        }
    }
}

/// One merged GEMM dimension: its extent and its stride in A, B and C (0 where unused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dimension {
    pub(crate) extent: usize,
    pub(crate) strides: [isize; 3],
}

impl Dimension {
    const UNIT: Dimension = Dimension {
        extent: 1,
        strides: [0; 3],
    };

    /// Whether the dimension steps by one element in `matrix` (A 0, B 1, C 2), or spans at
    /// most one element, so a matrix it belongs to has a unit stride.
    fn steps_by_one(self, matrix: usize) -> bool {
        self.extent <= 1 || self.strides[matrix].unsigned_abs() == 1
    }
}

/// A two-operand step as GEMMs: merged m, n and k, and the loops around the calls.
pub(crate) struct GemmPlan<const L: usize> {
    pub(crate) m: Dimension,
    pub(crate) n: Dimension,
    pub(crate) k: Dimension,
    /// Batch and unmerged left/right variables, looped around the calls: outermost first, by
    /// how far a step of each moves through A, B and C together.
    pub(crate) outer: LoopList<L>,
    /// Unmerged contracted variables, summed by consecutive calls.
    pub(crate) summed: LoopList<L>,
    /// Each loop's stride in A, B and C.
    pub(crate) strides: [[isize; L]; 3],
    /// Multiply-adds per batch (all left, right and contracted loops).
    pub(crate) work: usize,
    /// Product of the batch loops' extents.
    pub(crate) batches: usize,
}

impl<const L: usize> GemmPlan<L> {
    /// The GEMM form of a step; `None` if it has none (see [`roles`]) or addresses nothing.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn of<T>(step: &Step<'_, T, L, 2>) -> Option<Self> {
        Self::planned(step, |_| true, Merge::Longest)
    }

    /// The GEMM form of a step for a BLAS that needs a unit stride in every matrix (cuBLAS):
    /// as [`GemmPlan::of`], but each merged dimension is one that steps by one element in an
    /// operand it spans, where there is such a one, before the longest.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn with_unit_strides<T>(step: &Step<'_, T, L, 2>) -> Option<Self> {
        Self::planned(step, |_| true, Merge::UnitStride)
    }

    /// As [`GemmPlan::of`], for steps whose m, n and k (each the product of its loops'
    /// extents) are `worth` a GEMM (asked before allocating, so small steps cost no
    /// allocation).
    fn planned<T>(
        step: &Step<'_, T, L, 2>,
        worth: impl Fn([usize; 3]) -> bool,
        prefer: Merge,
    ) -> Option<Self> {
        let extents = step.extents();
        let roles = roles(step).filter(|_| !extents.contains(&0))?;
        let size = |role: Role| -> usize {
            (0..L)
                .filter(|&var| roles[var] == role)
                .map(|var| extents[var])
                .product()
        };
        let sides = [size(Role::Left), size(Role::Right), size(Role::Contracted)];
        if !worth(sides) {
            return None;
        }
        let work = sides.iter().product::<usize>();
        let strides = [
            step.operands()[0].strides,
            step.operands()[1].strides,
            step.target().strides,
        ];
        Some(Self::merged(
            &roles,
            extents,
            strides,
            work,
            size(Role::Batch),
            prefer,
        ))
    }

    /// The plan for loops with these roles and strides (A, B, C).
    fn merged(
        roles: &[Role; L],
        extents: &[usize; L],
        strides: [[isize; L]; 3],
        work: usize,
        batches: usize,
        prefer: Merge,
    ) -> Self {
        let vars = |role: Role| -> LoopList<L> {
            (0..L)
                .filter(|&var| roles[var] == role && extents[var] > 1)
                .collect()
        };
        let refs = [&strides[0], &strides[1], &strides[2]];
        // Which of A (0), B (1), C (2) each role's variables live in.
        let (m, m_rest) = merge(&vars(Role::Left), extents, &refs, &[0, 2], prefer);
        let (n, n_rest) = merge(&vars(Role::Right), extents, &refs, &[1, 2], prefer);
        let (k, k_rest) = merge(&vars(Role::Contracted), extents, &refs, &[0, 1], prefer);
        let mut outer = vars(Role::Batch);
        outer.extend(m_rest.iter().copied());
        outer.extend(n_rest.iter().copied());
        // Outermost the loop that moves furthest through A, B and C together, so that
        // consecutive calls read and write neighbouring memory, which the hardware fetches
        // ahead (TCCG `abcd-dbea-ec`, one thread, f32: 1024 calls of 32 × 32 × 256, each A
        // 32 KiB; the batch loop whose A is a megabyte on innermost, as the statement
        // names it, 137–143 GFLOP/s, the one whose A is the next 32 KiB 176–179; the other
        // TCCG steps that loop around their calls 1.03–1.07× as fast). The calls address
        // disjoint parts of C, so their order changes no bits.
        outer.sort_by(&|var| {
            std::cmp::Reverse(
                strides
                    .iter()
                    .map(|strides| strides[var].unsigned_abs())
                    .fold(0usize, usize::saturating_add),
            )
        });
        GemmPlan {
            m,
            n,
            k,
            outer,
            summed: k_rest,
            strides,
            work,
            batches,
        }
    }

    /// The time the host's `gemm` crate is estimated to take for the plan's calls after
    /// `copies` tensors of `copied` elements in all were copied, in multiply-adds (see
    /// [`Weighing::HostTime`]).
    fn host_time(
        &self,
        extents: &[usize; L],
        copies: usize,
        copied: usize,
        element_bytes: usize,
    ) -> usize {
        let (m, n, k) = (self.m, self.n, self.k);
        let calls = self.calls(extents);
        let work = self.work.saturating_mul(self.batches);
        // Each copy, like each call, costs a fixed time besides its elements (a buffer, a
        // step of its own), which small products do not repay.
        let mut time = copied
            .saturating_mul(PACKING_REUSE)
            .saturating_add(calls.saturating_add(copies).saturating_mul(CALL_COST))
            .saturating_add(work);
        // A matrix without a unit stride is gathered (or C scattered) element by element,
        // each call over again: a cache line per element where even its shorter stride
        // leaves a line between neighbours.
        for (matrix, [rows, columns]) in [[m, k], [k, n], [m, n]].into_iter().enumerate() {
            if !rows.steps_by_one(matrix) && !columns.steps_by_one(matrix) {
                let elements = rows
                    .extent
                    .saturating_mul(columns.extent)
                    .saturating_mul(calls);
                let shorter = rows.strides[matrix]
                    .unsigned_abs()
                    .min(columns.strides[matrix].unsigned_abs());
                let cost = if shorter.saturating_mul(element_bytes) >= LINE {
                    STRIDED_ELEMENT_COST
                } else {
                    STRIDED_ELEMENT_COST / 8
                };
                time = time.saturating_add(elements.saturating_mul(cost));
            }
        }
        // Calls that sum into the same C (an unmerged contracted loop) read and write it
        // each time after the first.
        let summed: usize = self.summed.iter().map(|&var| extents[var]).product();
        let rewrites = (calls / summed.max(1)).saturating_mul(summed.saturating_sub(1));
        let c_elements = m.extent.saturating_mul(n.extent);
        time = time.saturating_add(
            rewrites
                .saturating_mul(c_elements)
                .saturating_mul(PACKING_REUSE / 2),
        );
        // A C stepping by one element only down its columns ran slower (0.8–0.9× on the same
        // calls with unit-stride rows). Such calls now run transposed (`Calls::gemm_into`),
        // but their operands are then read across their rows, which measured slower still
        // on TCCG's `abc-acd-db` (64 calls of 64 × 64 × 1024 with A column-major: 0.4×
        // the plan that copies C), so the weight stays.
        if self.c_by_columns() {
            time = time.saturating_add(work / 8);
        }
        // Calls thinner than the kernel's blocks leave part of each block idle: 0.6–0.85×
        // a large GEMM's speed for sides of 12 to 16 (each side short of 32 costs work ×
        // shortfall / 64).
        for side in [m.extent, n.extent] {
            let shortfall = 32usize.saturating_sub(side);
            time = time.saturating_add((work / 64).saturating_mul(shortfall));
        }
        time
    }

    /// Whether C steps by one element down its columns only (no unit stride along n).
    fn c_by_columns(&self) -> bool {
        !self.n.steps_by_one(2) && self.m.steps_by_one(2)
    }

    /// How many GEMM calls the plan makes.
    fn calls(&self, extents: &[usize; L]) -> usize {
        (self.outer.iter().chain(&self.summed))
            .map(|&var| extents[var])
            .product()
    }
}

/// What a contraction `C = Σ A·B` over these loops costs as GEMM calls: how many of the
/// matrices A, B and C have no unit stride (cuBLAS cannot take those, and the `gemm` crate
/// packs them), then how many calls it makes. The loops each of A, B and C uses (`uses`, bit
/// masks) give the roles, the strides which of them merge; every unmerged or batch loop
/// multiplies the calls. Loops of extent 1 cost nothing. This is the measure by which a
/// network's temporaries are laid out (`network::Pairing`) for a device, and first on the
/// host (which then weighs the in-place layout by [`network_time`]).
pub(crate) fn gemm_cost<const L: usize>(
    extents: &[usize; L],
    uses: [u64; 3],
    strides: &[[isize; L]; 3],
) -> (usize, usize) {
    let [a, b, c] = uses;
    let role_vars = |mask: u64| -> LoopList<L> {
        (0..L)
            .filter(|&var| mask >> var & 1 == 1 && extents[var] > 1)
            .collect()
    };
    let refs = [&strides[0], &strides[1], &strides[2]];
    let (m, m_rest) = merge(
        &role_vars(a & c & !b),
        extents,
        &refs,
        &[0, 2],
        Merge::Longest,
    );
    let (n, n_rest) = merge(
        &role_vars(b & c & !a),
        extents,
        &refs,
        &[1, 2],
        Merge::Longest,
    );
    let (k, k_rest) = merge(
        &role_vars(a & b & !c),
        extents,
        &refs,
        &[0, 1],
        Merge::Longest,
    );
    let strided = strided_matrices(m, n, k);
    let calls = role_vars(a & b & c)
        .iter()
        .chain(&m_rest)
        .chain(&n_rest)
        .chain(&k_rest)
        .map(|&var| extents[var])
        .product();
    (strided, calls)
}

/// What a small call ([`small_calls`]: the runtime's thin kernel, or `faer`'s) costs beyond its
/// arithmetic, in multiply-adds: about 60 ns, some 3 500 multiply-adds at a GEMM's speed (1024
/// calls of 32³, `f32`, one thread, took 0.68 ms against 0.615 ms for one call of the same
/// work).
const SMALL_CALL_COST: usize = 1 << 12;

/// The host's estimated time for a contraction `C = Σ A·B` over these loops as its calls
/// would run where nothing is copied, in multiply-adds: what a network on the host weighs its
/// in-place layout by against the one [`gemm_cost`] chose (`network::Pairing`). It is
/// [`GemmPlan::host_time`] with small calls at [`SMALL_CALL_COST`] each, plus a share of the
/// work for a thin call (one side of C at most [`THIN_SIDE`], the other at least four times
/// as long) unless, as it runs (transposed where C is column-major), its long operand is A and
/// is read along k: measured (the `gemm` crate, `f32`, one thread, a long operand of 2²⁰
/// elements, the short side 16 to 64, k from 16 to 512, each against that best case) a long A
/// read across k at 1.1–2.2× the time (half the work added), a long B read along its rows (n
/// contiguous) at 1.1–1.4× (a quarter), a long B read down its columns (k contiguous) at
/// 1.5–4.5× (the whole work); the steps of
/// a four-index transform (n = 32) that take a long operand other than as a long A along k
/// ran 0.9–1.1 ms against 0.62 ms. A step that is no GEMM (a loop used by one side only)
/// costs its points, whatever the layout.
pub(crate) fn network_time<const L: usize>(
    extents: &[usize; L],
    uses: [u64; 3],
    strides: &[[isize; L]; 3],
    element_bytes: usize,
) -> usize {
    let [a, b, c] = uses;
    let used = |var: usize| (a | b | c) >> var & 1 == 1;
    // Loops the step does not use change no address: extent one, so they merge and count
    // nowhere.
    let extents: [usize; L] = std::array::from_fn(|var| if used(var) { extents[var] } else { 1 });
    let mut roles = [Role::Batch; L];
    for (var, role) in roles.iter_mut().enumerate() {
        let bit = |mask: u64| mask >> var & 1 == 1;
        *role = match (bit(a), bit(b), bit(c)) {
            (true, true, true) => Role::Batch,
            (true, false, true) => Role::Left,
            (false, true, true) => Role::Right,
            (true, true, false) => Role::Contracted,
            _ if extents[var] <= 1 => Role::Batch,
            _ => return extents.iter().fold(1usize, |n, &e| n.saturating_mul(e)),
        };
    }
    let size = |role: Role| -> usize {
        (0..L)
            .filter(|&var| roles[var] == role)
            .fold(1usize, |n, var| n.saturating_mul(extents[var]))
    };
    let work = size(Role::Left)
        .saturating_mul(size(Role::Right))
        .saturating_mul(size(Role::Contracted));
    let batches = size(Role::Batch);
    // As `contract` plans it where it copies nothing: the better of the two merges.
    [Merge::Longest, Merge::UnitStride]
        .into_iter()
        .map(|merge| {
            let plan = GemmPlan::merged(&roles, &extents, *strides, work, batches, merge);
            plan.network_time(&extents, element_bytes)
        })
        .min()
        .unwrap_or(usize::MAX)
}

impl<const L: usize> GemmPlan<L> {
    /// [`network_time`] for this plan.
    fn network_time(&self, extents: &[usize; L], element_bytes: usize) -> usize {
        let mut time = self.host_time(extents, 0, 0, element_bytes);
        if small_calls(self) {
            let saved = self
                .calls(extents)
                .saturating_mul(CALL_COST - SMALL_CALL_COST);
            time = time.saturating_sub(saved);
        }
        // The call as it runs: transposed where C steps by one element down its columns only.
        let (m, n, k) = (self.m, self.n, self.k);
        let ((rows, a), (columns, b)) = if self.c_by_columns() {
            ((n.extent, 1), (m.extent, 0))
        } else {
            ((m.extent, 0), (n.extent, 1))
        };
        let total = self.work.saturating_mul(self.batches);
        if rows.min(columns) <= THIN_SIDE && rows.max(columns) >= 4 * rows.min(columns) {
            let penalty = if rows > columns {
                // A long: fast only read along k.
                if k.steps_by_one(a) {
                    0
                } else {
                    total / 2
                }
            } else if k.steps_by_one(b) {
                // B long with k contiguous: read down its columns.
                total
            } else {
                total / 4
            };
            time = time.saturating_add(penalty);
        }
        time
    }
}

/// How many of a call's matrices (A: m × k, B: k × n, C: m × n) have no unit stride: a matrix
/// has one if either dimension steps by one element or spans at most one.
fn strided_matrices(m: Dimension, n: Dimension, k: Dimension) -> usize {
    let unit = |rows: Dimension, cols: Dimension, matrix: usize| {
        rows.steps_by_one(matrix) || cols.steps_by_one(matrix)
    };
    [unit(m, k, 0), unit(k, n, 1), unit(m, n, 2)]
        .iter()
        .filter(|&&has_unit| !has_unit)
        .count()
}

/// Which chain of variables [`merge`] makes a GEMM dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Merge {
    /// The longest: the fewest calls, for a GEMM that takes any strides.
    Longest,
    /// One whose first variable steps by one element in an operand it spans, if any does, else
    /// the longest: a BLAS needs a unit stride in each matrix, and a longer chain without one
    /// would leave the step no call at all.
    UnitStride,
}

/// The best chain of `vars` (see [`Merge`]) that forms one regular dimension in every operand
/// of `used` (each next variable's stride is the chain's stride times its extent), and the
/// variables left to loop over. Every variable starts a chain once, and a chain grows by the
/// one variable that continues it, so this costs O(n³) for n variables instead of trying all
/// n! orders.
fn merge<const L: usize>(
    vars: &[usize],
    extents: &[usize; L],
    strides: &[&[isize; L]; 3],
    used: &[usize],
    prefer: Merge,
) -> (Dimension, LoopList<L>) {
    let rank = |dimension: &Dimension| {
        let unit = used.iter().any(|&o| dimension.strides[o] == 1);
        (prefer == Merge::UnitStride && unit, dimension.extent)
    };
    // The best chain so far, its loops as a bit mask (a step has at most 64 loops).
    let (mut best, mut best_chain) = (Dimension::UNIT, 0u64);
    for &first in vars {
        let mut merged = Dimension {
            extent: extents[first],
            strides: [0; 3],
        };
        for &o in used {
            merged.strides[o] = strides[o][first];
        }
        let mut chain = 1u64 << first;
        while let Some(&next) = vars.iter().find(|&&var| {
            chain >> var & 1 == 0
                && used.iter().all(|&o| {
                    merged.strides[o]
                        .checked_mul(merged.extent as isize)
                        .is_some_and(|stride| strides[o][var] == stride)
                })
        }) {
            merged.extent *= extents[next];
            chain |= 1 << next;
        }
        if rank(&merged) > rank(&best) {
            (best, best_chain) = (merged, chain);
        }
    }
    let rest = vars
        .iter()
        .copied()
        .filter(|&var| best_chain >> var & 1 == 0);
    (best, rest.collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::loop_nest::evaluate_nest;
    use crate::exec::network::{contract_network, network_loops, PlanCache};
    use crate::exec::step::Axis;
    use crate::operand::access::{Operand, RawAccess, TargetAccess, TargetOwned, TargetShared};
    use crate::tensor::{Tensor, TensorView};

    fn filled(shape: &[usize], seed: usize) -> Tensor<f64> {
        let mut t = seed;
        Tensor::from_fn(shape, |_| {
            t = (t * 7919 + 104_729) % 1009;
            t as f64 / 1009.0 - 0.5
        })
    }

    #[test]
    fn merges_what_is_regular_and_loops_over_the_rest() {
        // The seed contraction: c[i, j] = a[i, k, l] * b[k, j, l] with loops (i, j, k, l).
        let (ni, nj, nk, nl) = (40, 36, 20, 12);
        let a = filled(&[ni, nk, nl], 1);
        let b = filled(&[nk, nj, nl], 2);
        let mut c = filled(&[ni, nj], 3);
        let before = c.clone();
        let extents = [ni, nj, nk, nl];
        let target = c.__tdsl_target();
        let loops = |axes: &[usize]| axes.iter().map(|&v| Axis::Loop(v)).collect::<Vec<_>>();
        let (c_axes, a_axes, b_axes) = (loops(&[0, 1]), loops(&[0, 2, 3]), loops(&[2, 1, 3]));
        let step = Step::new(
            target.at(&c_axes),
            Mode::Scale(0.5),
            2.0,
            extents,
            2,
            [
                a.__tdsl_operand().at(&a_axes),
                b.__tdsl_operand().at(&b_axes),
            ],
        );
        assert_eq!(
            roles(&step),
            Some([Role::Left, Role::Right, Role::Contracted, Role::Contracted])
        );
        // In place, (k, l) merge in A but not in B: 12 calls, or one after copying B into
        // (k, l, j) order, which its 8640 elements are worth at 345 600 multiply-adds.
        let plan = GemmPlan::of(&step).unwrap();
        assert_eq!(plan.calls(&extents), 12);
        let layouts = packed_layouts(&step, &plan, Weighing::HostTime, true).unwrap();
        assert_eq!(
            layouts.layouts,
            [
                None,
                Some([0, 1, nl as isize * nj as isize, nj as isize]),
                None
            ]
        );
        contract(step, [false; 2]);
        for i in 0..ni {
            for j in 0..nj {
                let mut sum = 0.0;
                for k in 0..nk {
                    for l in 0..nl {
                        sum += a[[i, k, l]] * b[[k, j, l]];
                    }
                }
                let expected = 0.5 * before[[i, j]] + 2.0 * sum;
                assert!((c[[i, j]] - expected).abs() < 1e-10, "({i}, {j})");
            }
        }
    }

    /// `c[a, b, c, d] = x[d, b, e, a] · y[e, c]` (TCCG's abcd-dbea-ec) with the loops
    /// (a, b, c, d, e) at these extents, contracted through `contract` and checked against a
    /// sum in order; returns what the host's weighing chose.
    fn dbea(extents: [usize; 5]) -> Option<Packing<5>> {
        let [na, nb, nc, nd, ne] = extents;
        let x = filled(&[nd, nb, ne, na], 1);
        let y = filled(&[ne, nc], 2);
        let mut z = filled(&[na, nb, nc, nd], 3);
        let loops = |axes: &[usize]| axes.iter().map(|&v| Axis::Loop(v)).collect::<Vec<_>>();
        let (z_axes, x_axes, y_axes) = (loops(&[0, 1, 2, 3]), loops(&[3, 1, 4, 0]), loops(&[4, 2]));
        let target = z.__tdsl_target();
        let step = Step::new(
            target.at(&z_axes),
            Mode::Assign,
            1.0,
            extents,
            4,
            [
                x.__tdsl_operand().at(&x_axes),
                y.__tdsl_operand().at(&y_axes),
            ],
        );
        let plan = GemmPlan::of(&step).unwrap();
        let chosen = packed_layouts(&step, &plan, Weighing::HostTime, true);
        contract(step, [false; 2]);
        for (a, b, c, d) in (0..na).flat_map(|a| {
            (0..nb).flat_map(move |b| (0..nc).flat_map(move |c| (0..nd).map(move |d| (a, b, c, d))))
        }) {
            let sum: f64 = (0..ne).map(|e| x[[d, b, e, a]] * y[[e, c]]).sum();
            assert!(
                (z[[a, b, c, d]] - sum).abs() < 1e-10,
                "({a}, {b}, {c}, {d})"
            );
        }
        chosen
    }

    #[test]
    fn the_host_weighs_copies_against_strided_calls() {
        // C's unit stride (d) is a loop around the calls, and C has no other: copying C alone,
        // into (d, b, a, c) order, gives calls on unit strides everywhere, cheaper than also
        // copying all of x to merge (a, b, d) into one call; the calls' rows are a, the
        // one unit-stride loop of x, not the longer (b, d) that merges in x and the copy.
        let [na, nb, nc, nd, ne] = [32, 4, 32, 16, 64];
        let packing = dbea([na, nb, nc, nd, ne]).expect("C is worth copying");
        let [na, nb, nc] = [na, nb, nc].map(|n| n as isize);
        assert_eq!(
            packing,
            Packing {
                layouts: [None, None, Some([nc, nc * na, 1, nc * na * nb, 0])],
                merge: Merge::UnitStride,
            }
        );
        // Small: the same statement as it lies (and still the same values).
        dbea([3, 2, 5, 4, 7]);
    }

    #[test]
    fn a_copied_c_a_page_apart_down_its_outermost_loop_gets_a_gap() {
        // TCCG's abcde-efbad-cf, `z[a, b, c, d, e] = x[e, f, b, a, d] · y[c, f]`, loops
        // (a, b, c, d, e, f): C is copied with e outermost (x's largest stride) and each value
        // of e a block of (b, a, d, c) 4 · 4 · 16 · 64 elements, 128 KiB: one line longer, as x
        // cannot merge e with b (f lies between them). The values are still the sums.
        let [na, nb, nc, nd, ne, nf] = [4, 4, 64, 16, 16, 64];
        let x = filled(&[ne, nf, nb, na, nd], 1);
        let y = filled(&[nc, nf], 2);
        let mut z = filled(&[na, nb, nc, nd, ne], 3);
        let target = z.__tdsl_target();
        let (z_axes, x_axes, y_axes) = (
            loops(&[0, 1, 2, 3, 4]),
            loops(&[4, 5, 1, 0, 3]),
            loops(&[2, 5]),
        );
        let step = Step::new(
            target.at(&z_axes),
            Mode::Assign,
            1.0,
            [na, nb, nc, nd, ne, nf],
            5,
            [
                x.__tdsl_operand().at(&x_axes),
                y.__tdsl_operand().at(&y_axes),
            ],
        );
        let plan = GemmPlan::of(&step).unwrap();
        let packing = packed_layouts(&step, &plan, Weighing::HostTime, true);
        let block = (na * nb * nc * nd) as isize;
        let gap = (LINE / size_of::<f64>()) as isize;
        let c_layout = packing.and_then(|packing| packing.layouts[2]);
        assert_eq!(c_layout.map(|strides| strides[4]), Some(block + gap));
        contract(step, [false; 2]);
        for (a, b, c, d, e) in (0..na).flat_map(|a| {
            (0..nb).flat_map(move |b| {
                (0..nc).flat_map(move |c| {
                    (0..nd).flat_map(move |d| (0..ne).map(move |e| (a, b, c, d, e)))
                })
            })
        }) {
            let sum: f64 = (0..nf).map(|f| x[[e, f, b, a, d]] * y[[c, f]]).sum();
            assert!(
                (z[[a, b, c, d, e]] - sum).abs() < 1e-10,
                "({a}, {b}, {c}, {d}, {e})"
            );
        }
    }

    #[test]
    fn thin_calls_are_estimated_fastest_reading_a_long_a_along_k() {
        // C[i, j] = Σ_k A[i, k] B[k, j], loops (i, j, k), i = 4096 long, j and k 32.
        let extents = [4096, 32, 32];
        let uses = [0b101, 0b110, 0b011];
        let (row_major_c, column_major_c) = ([32, 1, 0], [1, 4096, 0]);
        let (a_along_k, a_across_k) = ([32, 0, 1], [1, 0, 4096]);
        let b = [0, 1, 32];
        let time = |a, c| network_time(&extents, uses, &[a, b, c], 4);
        let work = 4096 * 32 * 32;
        let best = time(a_along_k, row_major_c);
        assert!(time(a_across_k, row_major_c) >= best + work / 2);
        // Column-major C runs transposed: A is then the call's B, long either way.
        assert!(time(a_along_k, column_major_c) > best);
        assert!(time(a_across_k, column_major_c) > best);
        // Not thin (j as long as i): A read either way is estimated alike.
        let square = [512, 512, 32];
        let (b, c) = ([0, 1, 512], [512, 1, 0]);
        let time = |a| network_time(&square, uses, &[a, b, c], 4);
        assert_eq!(time([1, 0, 512]), time([32, 0, 1]));
    }

    #[test]
    fn gaps_go_only_where_pages_align_and_nothing_merges() {
        let extents = [4, 8, 16];
        // Row-major over (0, 1, 2): loop 0's stride 128 elements, 512 bytes of f32, 1024 of f64.
        let strides = row_major(&extents, &[0, 1, 2]);
        let unmerged: [&[isize; 3]; 2] = [&[1, 4, 0], &[0, 0, 1]];
        assert_eq!(
            off_the_pages::<f32, 3>(strides, &[0, 1, 2], &extents, unmerged),
            strides
        );
        // 64-byte elements: 8 KiB, two pages: one element longer.
        type Wide = [f64; 8];
        let gapped = off_the_pages::<Wide, 3>(strides, &[0, 1, 2], &extents, unmerged);
        assert_eq!(gapped, [129, 16, 1]);
        assert_eq!(span(&extents, &gapped, 0b111), 4 * 128 + 3);
        assert_eq!(span(&extents, &strides, 0b111), 4 * 8 * 16);
        // An operand in which loops 0 and 1 merge (stride 0 = 8 · stride 1): no gap.
        let merged: [&[isize; 3]; 2] = [&[64, 8, 0], &[0, 0, 1]];
        assert_eq!(
            off_the_pages::<Wide, 3>(strides, &[0, 1, 2], &extents, merged),
            strides
        );
        // An empty loop: nothing spanned.
        assert_eq!(span(&[4, 0, 16], &gapped, 0b111), 0);
    }

    /// Whether the host runs `z[a, b, c, d, e, f] = x[d, e, g, a] · y[g, f, b, c]` (TCCG's
    /// abcdef-dega-gfbc) at these extents of (a, …, f) and g in panels.
    fn dega_in_panels<T: Element>(n: [usize; 6], ng: usize) -> bool {
        let x = Tensor::<T>::zeros([n[3], n[4], ng, n[0]]);
        let y = Tensor::<T>::zeros([ng, n[5], n[1], n[2]]);
        let mut z = Tensor::<T>::zeros(n);
        let target = z.__tdsl_target();
        let (z_axes, x_axes, y_axes) = (
            loops(&[0, 1, 2, 3, 4, 5]),
            loops(&[3, 4, 6, 0]),
            loops(&[6, 5, 1, 2]),
        );
        let extents = [n[0], n[1], n[2], n[3], n[4], n[5], ng];
        let step = Step::new(
            target.at(&z_axes),
            Mode::Assign,
            T::ONE,
            extents,
            6,
            [
                x.__tdsl_operand().at(&x_axes),
                y.__tdsl_operand().at(&y_axes),
            ],
        );
        let plan = GemmPlan::of(&step).expect("a GEMM");
        let packing = packed_layouts(&step, &plan, Weighing::HostTime, true);
        in_panels(&step, &plan, packing).is_some()
    }

    #[test]
    fn steps_whose_calls_would_scatter_c_run_in_panels() {
        // Every call would address C's rows 12 apart and its columns 1728 apart, and C's runs
        // (f, 12 long) are too short to copy C for: in panels, where the type has the thin
        // kernel (so too the odd extents of `tests/test_contraction.rs`). The same with f 16
        // long is copied instead (a copy of C pays there), and one 600 deep is past the
        // panels' depth.
        assert_eq!(
            dega_in_panels::<f32>([12; 6], 90),
            f32::tile_columns().is_some()
        );
        assert_eq!(
            dega_in_panels::<f64>([5, 7, 6, 3, 4, 9], 40),
            f64::tile_columns().is_some()
        );
        assert!(!dega_in_panels::<f32>([12, 12, 12, 12, 12, 16], 90));
        assert!(!dega_in_panels::<f32>([12; 6], 600));
        // `abcd-dbea-ec`, whose C is copied: calls.
        let x = Tensor::<f64>::zeros([32, 32, 256, 32]);
        let y = Tensor::<f64>::zeros([256, 32]);
        let mut z = Tensor::<f64>::zeros([32; 4]);
        let target = z.__tdsl_target();
        let (z_axes, x_axes, y_axes) = (loops(&[0, 1, 2, 3]), loops(&[3, 1, 4, 0]), loops(&[4, 2]));
        let step = Step::new(
            target.at(&z_axes),
            Mode::Assign,
            1.0,
            [32, 32, 32, 32, 256],
            4,
            [
                x.__tdsl_operand().at(&x_axes),
                y.__tdsl_operand().at(&y_axes),
            ],
        );
        let plan = GemmPlan::of(&step).expect("a GEMM");
        let packing = packed_layouts(&step, &plan, Weighing::HostTime, true);
        assert!(packing.is_some_and(|packing| packing.layouts[2].is_some()));
        assert!(in_panels(&step, &plan, packing).is_none());
    }

    #[test]
    fn merge_prefers_the_largest_regular_dimension() {
        // k (extent 4) and l (extent 3): A has strides (3, 1) and merges (k, l); B has (30, 1).
        let extents = [4, 3];
        let a = [3, 1];
        let b = [30, 1];
        let c = [0, 0];
        let merged =
            |b: &[isize; 2], prefer| merge(&[0, 1], &extents, &[&a, b, &c], &[0, 1], prefer);
        let (dimension, rest) = merged(&b, Merge::Longest);
        assert_eq!(dimension.extent, 4);
        assert_eq!(dimension.strides, [3, 30, 0]);
        assert_eq!(*rest, [1]);
        let (dimension, rest) = merged(&a, Merge::Longest);
        assert_eq!((dimension.extent, rest.len()), (12, 0));
        // For a BLAS that needs unit strides, l (shorter, but stepping by one) comes first;
        // a chain with a unit stride still grows as long as it is regular.
        let (dimension, rest) = merged(&b, Merge::UnitStride);
        assert_eq!((dimension.extent, dimension.strides), (3, [1, 1, 0]));
        assert_eq!(*rest, [0]);
        let (dimension, rest) = merged(&a, Merge::UnitStride);
        assert_eq!((dimension.extent, rest.len()), (12, 0));
    }

    #[test]
    fn loops_around_the_calls_run_outermost_where_they_step_furthest() {
        // `z[a, b, c, d] = x[d, b, e, a] · y[e, c]`, loops (a, b, c, d, e), C copied in
        // (d, b, a, c) order: calls a × c × e, the batch loops b and d around them. d steps a
        // megabyte through x and C's copy, b 32 KiB: d goes outside, so the calls walk x in
        // order whatever order the statement names them in.
        let [na, nb, nc, nd, ne] = [32, 32, 32, 32, 256];
        let roles = [
            Role::Left,
            Role::Batch,
            Role::Right,
            Role::Batch,
            Role::Contracted,
        ];
        let x = row_major(&[na, nb, nc, nd, ne], &[3, 1, 4, 0]);
        let y = row_major(&[na, nb, nc, nd, ne], &[4, 2]);
        let z = row_major(&[na, nb, nc, nd, ne], &[3, 1, 0, 2]);
        let outer = |x: [isize; 5], z: [isize; 5]| {
            let extents = [na, nb, nc, nd, ne];
            let work = na * nc * ne;
            let batches = nb * nd;
            let plan = GemmPlan::merged(&roles, &extents, [x, y, z], work, batches, Merge::Longest);
            assert_eq!((plan.m.extent, plan.n.extent, plan.k.extent), (na, nc, ne));
            plan.outer.to_vec()
        };
        assert_eq!(outer(x, z), [3, 1]);
        // Laid out (b, d, …) instead, b goes outside.
        let x = row_major(&[na, nb, nc, nd, ne], &[1, 3, 4, 0]);
        let z = row_major(&[na, nb, nc, nd, ne], &[1, 3, 0, 2]);
        assert_eq!(outer(x, z), [1, 3]);
    }

    fn loops(vars: &[usize]) -> Vec<Axis> {
        vars.iter().map(|&var| Axis::Loop(var)).collect()
    }

    fn bits(tensor: &Tensor<f64>) -> Vec<u64> {
        tensor.as_slice().iter().map(|x| x.to_bits()).collect()
    }

    /// `c (mode) α Σ a·b` through `contract`, each tensor's axes the loops listed for it (C's
    /// the first ones).
    fn contract_into<const L: usize>(
        c: &mut Tensor<f64>,
        mode: Mode<f64>,
        alpha: f64,
        extents: [usize; L],
        [c_loops, a_loops, b_loops]: [&[usize]; 3],
        [a, b]: [&Tensor<f64>; 2],
    ) {
        let target = c.__tdsl_target();
        let (c_axes, a_axes, b_axes) = (loops(c_loops), loops(a_loops), loops(b_loops));
        let step = Step::new(
            target.at(&c_axes),
            mode,
            alpha,
            extents,
            c_loops.len(),
            [
                a.__tdsl_operand().at(&a_axes),
                b.__tdsl_operand().at(&b_axes),
            ],
        );
        contract(step, [false; 2]);
    }

    /// `run` on a pool of `threads` threads of its own.
    fn in_pool<R: Send>(threads: usize, run: impl FnOnce() -> R + Send) -> R {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build();
        pool.expect("a thread pool").install(run)
    }

    /// `target (mode) alpha · Σ a·b` over `extents` through `contract_detached` (`fast`) or
    /// through the general path alone; the accesses' axes are the loops given.
    fn detached_product(
        c: &mut Tensor<f64>,
        mode: Mode<f64>,
        [c_loops, a_loops, b_loops]: [&[usize]; 3],
        extents: [usize; 3],
        [a, b]: [&TensorView<'_, f64>; 2],
        fast: bool,
    ) -> bool {
        let target = c.__tdsl_target();
        let (c_axes, a_axes, b_axes) = (loops(c_loops), loops(a_loops), loops(b_loops));
        let step = || Unproven {
            target: &target,
            target_axes: &c_axes,
            mode,
            alpha: 1.5,
            extents,
            n_out: 2,
            operands: [
                (a.__tdsl_operand(), &a_axes[..]),
                (b.__tdsl_operand(), &b_axes[..]),
            ],
        };
        if fast {
            let taken = small_product(&step(), [false; 2]);
            if !taken {
                contract_detached(step(), [false; 2]);
            }
            taken
        } else {
            with_detached(step(), |step| contract(step, [false; 2]));
            false
        }
    }

    #[test]
    fn small_products_skip_to_the_call_the_general_path_makes() {
        // (m, n, k), whether the shortcut takes it with A and B row-major.
        for ((m, n, k), taken) in [
            ((16, 16, 16), true),
            ((7, 13, 9), false), // too little work for a GEMM: a loop nest
            ((9, 40, 13), true),
            ((32, 32, 32), true),
            ((33, 33, 8), true),
            ((65, 65, 8), false), // no side of 64 or less
            ((2, 300, 200), true),
            ((2, 30, 20), false), // a side under 8 and little work: a loop nest
            ((20, 20, 5000), false), // deeper than a group
            ((1000, 10, 10), true),
        ] {
            for (a_transposed, b_transposed) in [(false, false), (true, false), (false, true)] {
                let a_rows = filled(&[m, k], 1);
                let a_columns = filled(&[k, m], 1);
                let b_rows = filled(&[k, n], 2);
                let b_columns = filled(&[n, k], 2);
                let a_view = if a_transposed {
                    a_columns.view().permuted_axes(&[1, 0])
                } else {
                    a_rows.view()
                };
                let b_view = if b_transposed {
                    b_columns.view().permuted_axes(&[1, 0])
                } else {
                    b_rows.view()
                };
                let start = filled(&[m, n], 3);
                for mode in [Mode::Assign, Mode::Add, Mode::Scale(0.5), Mode::Scale(0.0)] {
                    // Both operand orders: A's rows are loop 0 or loop 1 of C. In the second,
                    // C's rows are the GEMM's columns, which the general path plans as the
                    // transposed call: the shortcut makes the call the other way round, where
                    // the thin kernel takes it (its rows, n here, fit its columns).
                    let thin = f64::tile_columns().is_some_and(|columns| n <= columns);
                    for swapped in [false, true] {
                        let (axes, operands): ([&[usize]; 3], [&TensorView<'_, f64>; 2]) =
                            if swapped {
                                ([&[0, 1], &[2, 1], &[0, 2]], [&b_view, &a_view])
                            } else {
                                ([&[0, 1], &[0, 2], &[2, 1]], [&a_view, &b_view])
                            };
                        let old = |mode: Mode<f64>| match mode {
                            Mode::Assign | Mode::Scale(0.0) => {
                                Tensor::from_fn([m, n], |_| f64::NAN)
                            }
                            _ => start.clone(),
                        };
                        let (mut fast, mut general) = (old(mode), old(mode));
                        let took =
                            detached_product(&mut fast, mode, axes, [m, n, k], operands, true);
                        detached_product(&mut general, mode, axes, [m, n, k], operands, false);
                        assert_eq!(
                            took,
                            taken && (!swapped || thin),
                            "{m}×{n}×{k}, swapped {swapped}"
                        );
                        assert_eq!(bits(&fast), bits(&general), "{m}×{n}×{k} {mode:?}");
                        let scale = match mode {
                            Mode::Assign | Mode::Scale(0.0) => 0.0,
                            Mode::Add => 1.0,
                            Mode::Scale(beta) => beta,
                        };
                        for i in 0..m {
                            for j in 0..n {
                                let a_at = |p: usize| {
                                    if a_transposed {
                                        a_columns[[p, i]]
                                    } else {
                                        a_rows[[i, p]]
                                    }
                                };
                                let b_at = |p: usize| {
                                    if b_transposed {
                                        b_columns[[j, p]]
                                    } else {
                                        b_rows[[p, j]]
                                    }
                                };
                                let sum: f64 = (0..k).map(|p| a_at(p) * b_at(p)).sum();
                                let old = if scale == 0.0 {
                                    0.0
                                } else {
                                    scale * start[[i, j]]
                                };
                                let want = old + 1.5 * sum;
                                let got = fast[[i, j]];
                                assert!(
                                    (got - want).abs() <= 1e-12 * (1.0 + want.abs()) * k as f64,
                                    "{m}×{n}×{k} {mode:?} at ({i}, {j}): {got} against {want}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn small_products_leave_what_they_cannot_prove_to_the_general_path() {
        let (m, n, k) = (16, 16, 16);
        let a = filled(&[m, k], 1);
        let b = filled(&[k, n], 2);
        let axes: [&[usize]; 3] = [&[0, 1], &[0, 2], &[2, 1]];
        // A target that shares its memory with an operand: the general path detaches it.
        let mut c = filled(&[m, n], 3);
        let before = c.clone();
        {
            let view = c.view_mut();
            let target = TargetShared::__tdsl_target(&view);
            let (c_axes, a_axes, b_axes) = (loops(axes[0]), loops(axes[1]), loops(axes[2]));
            let overlapping = Unproven {
                target: &target,
                target_axes: &c_axes,
                mode: Mode::Add,
                alpha: 1.0,
                extents: [m, n, k],
                n_out: 2,
                operands: [
                    (Operand::__tdsl_operand(&view), &a_axes[..]),
                    (b.__tdsl_operand(), &b_axes[..]),
                ],
            };
            assert!(!small_product(&overlapping, [false; 2]));
            contract_detached(overlapping, [false; 2]);
        }
        for i in 0..m {
            for j in 0..n {
                let want = before[[i, j]] + (0..k).map(|p| before[[i, p]] * b[[p, j]]).sum::<f64>();
                assert!((c[[i, j]] - want).abs() < 1e-12, "at ({i}, {j})");
            }
        }
        // Targets no safe operand makes, which the general path's proof refuses: rows that
        // share their elements (stride 0 down the rows), and a buffer shorter than the loops
        // reach. Refused here too, before anything is written.
        let (a_axes, b_axes, c_axes) = (loops(axes[1]), loops(axes[2]), loops(axes[0]));
        let shape = [m, n];
        for (strides, len) in [([0isize, 1], n), ([n as isize, 1], m * n - 1)] {
            let mut buffer = vec![7.0f64; m * n];
            let raw = RawAccess::new(buffer.as_mut_ptr(), len, &shape[..], &strides, 0);
            // SAFETY: the pointer comes from a writable borrow of at least `len` elements,
            // alive while the target is.
            let target = unsafe { TargetAccess::new(raw) };
            let refused = Unproven {
                target: &target,
                target_axes: &c_axes,
                mode: Mode::Assign,
                alpha: 1.0,
                extents: [m, n, k],
                n_out: 2,
                operands: [
                    (a.__tdsl_operand(), &a_axes[..]),
                    (b.__tdsl_operand(), &b_axes[..]),
                ],
            };
            assert!(
                !small_product(&refused, [false; 2]),
                "strides {strides:?}, {len} long"
            );
            assert!(buffer.iter().all(|&x| x == 7.0));
        }
    }

    #[test]
    fn small_calls_match_a_naive_sum_in_every_mode_on_any_number_of_threads() {
        // Thin and small products (a side of at most 32: `small_calls`), and one past the
        // line.
        for (ni, nj, nk) in [
            (16, 16, 16),
            (10, 10, 1000),
            (1000, 10, 10),
            (9, 40, 13),
            (32, 32, 8),
            (40, 20, 17),
            (33, 33, 8),
        ] {
            let a = filled(&[ni, nk], 1);
            let b = filled(&[nk, nj], 2);
            let start = filled(&[ni, nj], 3);
            for mode in [Mode::Assign, Mode::Add, Mode::Scale(0.5)] {
                let product = |threads: usize| {
                    in_pool(threads, || {
                        // `=` must not read the target: NaN there would spread.
                        let mut c = match mode {
                            Mode::Assign => Tensor::from_fn([ni, nj], |_| f64::NAN),
                            _ => start.clone(),
                        };
                        let axes: [&[usize]; 3] = [&[0, 1], &[0, 2], &[2, 1]];
                        contract_into(&mut c, mode, 2.0, [ni, nj, nk], axes, [&a, &b]);
                        c
                    })
                };
                let c = product(1);
                for i in 0..ni {
                    for j in 0..nj {
                        let sum: f64 = (0..nk).map(|k| a[[i, k]] * b[[k, j]]).sum();
                        let before = start[[i, j]];
                        let want = match mode {
                            Mode::Assign => 2.0 * sum,
                            Mode::Add => before + 2.0 * sum,
                            Mode::Scale(beta) => beta * before + 2.0 * sum,
                        };
                        let got = c[[i, j]];
                        assert!(
                            (got - want).abs() <= 1e-12 * (1.0 + want.abs()),
                            "{ni}×{nj}×{nk} {mode:?} at ({i}, {j}): {got} against {want}"
                        );
                    }
                }
                assert_eq!(bits(&c), bits(&product(2)), "{ni}×{nj}×{nk} {mode:?}");
            }
        }
    }

    #[test]
    fn small_calls_shared_by_threads_keep_their_bits() {
        // 512 batches of 16³ (2^21 multiply-adds: threads share whole calls), and 16 × 16
        // summed over 8 × 4096 (the long inner dimension's groups go to threads of their own).
        let cases: [([usize; 4], [&[usize]; 3]); 2] = [
            ([512, 16, 16, 16], [&[0, 1, 2], &[0, 1, 3], &[0, 3, 2]]),
            ([16, 16, 8, 4096], [&[0, 1], &[0, 2, 3], &[3, 2, 1]]),
        ];
        for (extents, [c_loops, a_loops, b_loops]) in cases {
            let shape = |loops: &[usize]| loops.iter().map(|&var| extents[var]).collect::<Vec<_>>();
            let (a, b) = (filled(&shape(a_loops), 1), filled(&shape(b_loops), 2));
            let axes = [c_loops, a_loops, b_loops];
            let run = || {
                let mut c = Tensor::<f64>::zeros(shape(c_loops));
                contract_into(&mut c, Mode::Assign, 1.0, extents, axes, [&a, &b]);
                c
            };
            let one = in_pool(1, run);
            assert_eq!(bits(&one), bits(&in_pool(2, run)), "{extents:?}");
            // A naive sum over every point, row-major offsets.
            let offset = |loops: &[usize], point: &[usize; 4]| {
                loops
                    .iter()
                    .fold(0, |at, &var| at * extents[var] + point[var])
            };
            let mut want = vec![0.0f64; one.as_slice().len()];
            for p0 in 0..extents[0] {
                for p1 in 0..extents[1] {
                    for p2 in 0..extents[2] {
                        for p3 in 0..extents[3] {
                            let point = [p0, p1, p2, p3];
                            want[offset(c_loops, &point)] += a.as_slice()[offset(a_loops, &point)]
                                * b.as_slice()[offset(b_loops, &point)];
                        }
                    }
                }
            }
            for (got, want) in one.as_slice().iter().zip(&want) {
                assert!(
                    (got - want).abs() <= 1e-10 * (1.0 + want.abs()),
                    "{extents:?}: {got} against {want}"
                );
            }
        }
    }

    /// `contract`, `contract_network` and `copy` run their step padded (`in_few_loops!`): the
    /// same bits as the engine at the step's own loop count, on the loop nest's paths (thin,
    /// odd, empty) and GEMM's, for a network's pairs, and for a transposing copy.
    #[test]
    fn padded_steps_write_the_same_bits() {
        for (ni, nj, nk) in [(7, 13, 5), (1, 7, 13), (13, 1, 0), (0, 3, 4), (40, 36, 30)] {
            let a = filled(&[ni, nk], 1);
            let b = filled(&[nj, nk], 2);
            let start = filled(&[ni, nj], 3);
            // c[i, j] = 0.5 c[i, j] + 2 a[i, k] b[j, k]: three loops, padded to four.
            let product = |padded: bool| {
                let mut c = start.clone();
                let target = c.__tdsl_target();
                let (c_axes, a_axes, b_axes) = (loops(&[0, 1]), loops(&[0, 2]), loops(&[1, 2]));
                let step = Step::new(
                    target.at(&c_axes),
                    Mode::Scale(0.5),
                    2.0,
                    [ni, nj, nk],
                    2,
                    [
                        a.__tdsl_operand().at(&a_axes),
                        b.__tdsl_operand().at(&b_axes),
                    ],
                );
                if padded {
                    contract(step, [false; 2]);
                } else {
                    contract_loops(step, [false; 2]);
                }
                bits(&c)
            };
            assert_eq!(product(true), product(false), "{ni}×{nj}×{nk}");
            // d[i, m] = a[i, k] b[l, k] e[l, m] f[m, m]: five loops, padded to eight.
            let e = filled(&[nj, 6], 4);
            let f = filled(&[6, 6], 5);
            let network = |padded: bool| {
                let mut d = Tensor::<f64>::zeros([ni, 6]);
                let target = d.__tdsl_target();
                let axes = [
                    loops(&[0, 1]),
                    loops(&[0, 2]),
                    loops(&[3, 2]),
                    loops(&[3, 1]),
                ];
                let f_axes = loops(&[1, 1]);
                let step = Step::new(
                    target.at(&axes[0]),
                    Mode::Assign,
                    1.0,
                    [ni, 6, nk, nj, 1],
                    2,
                    [
                        a.__tdsl_operand().at(&axes[1]),
                        b.__tdsl_operand().at(&axes[2]),
                        e.__tdsl_operand().at(&axes[3]),
                        f.__tdsl_operand().at(&f_axes),
                    ],
                );
                if padded {
                    contract_network(step, [false; 4], &PlanCache::new());
                } else {
                    network_loops(step, [false; 4], &PlanCache::new());
                }
                bits(&d)
            };
            assert_eq!(network(true), network(false), "network, {ni}×{nj}×{nk}");
        }
        // c[k, j, i] = a[i, j, k], through a copy's tiles: three loops, padded to four.
        let a = filled(&[70, 9, 66], 6);
        let permuted = |padded: bool| {
            let mut c = Tensor::<f64>::zeros([66, 9, 70]);
            let target = c.__tdsl_target();
            let (c_axes, a_axes) = (loops(&[2, 1, 0]), loops(&[0, 1, 2]));
            let step = Step::new(
                target.at(&c_axes),
                Mode::Assign,
                1.0,
                [70, 9, 66],
                3,
                [a.__tdsl_operand().at(&a_axes)],
            );
            if padded {
                copy(step);
            } else {
                evaluate_nest::<f64, 3, 1, AnyNest>(step, |[x]: [f64; 1]| x, true);
            }
            bits(&c)
        };
        assert_eq!(permuted(true), permuted(false));
    }
}

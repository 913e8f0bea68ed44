//! A proven two-operand contraction [`Step`] → cuBLAS `gemmStridedBatched` calls in cuBLAS's
//! column-major terms, reusing the host engine's GEMM analysis ([`GemmPlan`]); and the host
//! implementation of those calls' documented semantics that the simulator runs. Invariant: a
//! call is made only if every element it addresses is one the step proved inside its buffer
//! ([`Call::within`]), so neither cuBLAS nor the emulation can stray.

use crate::element::{Element, Kind};
use crate::exec::gemm::GemmPlan;
use crate::exec::step::Step;

use super::error::CudaError;
use super::stats::Counters;

/// `op(X)` of a cuBLAS call: the matrix as stored (column-major), its transpose, or its
/// conjugate transpose (cuBLAS has no conjugate without a transpose).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    N,
    T,
    C,
}

/// One matrix argument: where it starts (elements from the buffer's start), its leading
/// dimension, and the distance between consecutive batches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Matrix {
    pub(crate) offset: isize,
    pub(crate) ld: usize,
    pub(crate) stride: isize,
}

/// One `gemmStridedBatched` call: for each batch `p < batch`,
/// `C_p ← α op(A_p) op(B_p) + β C_p` with `C_p` m × n, `op(A_p)` m × k, `op(B_p)` k × n,
/// all column-major; β = 0 does not read C.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Call<T> {
    pub(crate) transa: Op,
    pub(crate) transb: Op,
    pub(crate) m: usize,
    pub(crate) n: usize,
    pub(crate) k: usize,
    pub(crate) alpha: T,
    pub(crate) beta: T,
    pub(crate) a: Matrix,
    pub(crate) b: Matrix,
    pub(crate) c: Matrix,
    pub(crate) batch: usize,
    /// Which of the step's operands are A and B (swapped for a row-major C).
    pub(crate) operands: [usize; 2],
}

// Heuristic: past this many calls, one launch of the step's loop-nest module beats a call per
// slice (the calls are serialised on one stream, each with its own launch overhead).
const MAX_CALLS: usize = 64;

/// How a strided `rows × cols` matrix is stored in cuBLAS's terms: column-major as is
/// (`Op::N`), or its transpose column-major (`Op::T`, the matrix row-major), with the leading
/// dimension; `None` if neither has unit stride with a leading dimension cuBLAS accepts.
fn storage(rows: usize, cols: usize, row_stride: isize, col_stride: isize) -> Option<(Op, usize)> {
    let ld = |stride: isize, other: usize, count: usize| -> Option<usize> {
        // A single column (row) never steps by the leading dimension: the smallest valid one.
        let ld = if count <= 1 {
            other.max(1)
        } else {
            usize::try_from(stride).ok()?
        };
        (ld >= other.max(1)).then_some(ld)
    };
    if rows <= 1 || row_stride == 1 {
        if let Some(ld) = ld(col_stride, rows, cols) {
            return Some((Op::N, ld));
        }
    }
    if cols <= 1 || col_stride == 1 {
        if let Some(ld) = ld(row_stride, cols, rows) {
            return Some((Op::T, ld));
        }
    }
    None
}

/// The cuBLAS calls of a step whose operands `conj` names are conjugated, in order
/// (consecutive calls over an unmerged contracted loop accumulate with β = 1); `None` if the
/// step is no GEMM, its layout is one cuBLAS cannot take (no unit stride in a matrix,
/// overlapping columns, sizes past `int`, a conjugated complex operand that cuBLAS would not
/// read transposed), its elements are integers, or it needs more than [`MAX_CALLS`] calls —
/// the step's loop-nest module runs it instead.
pub(crate) fn calls<T: Element, const L: usize>(
    step: &Step<'_, T, L, 2>,
    conj: [bool; 2],
) -> Option<Vec<Call<T>>> {
    // cuBLAS multiplies floats and complex numbers only: integer contractions run as their
    // modules. A real number is its own conjugate.
    let conj = match T::KIND {
        Kind::F32 | Kind::F64 => [false; 2],
        Kind::C32 | Kind::C64 => conj,
        Kind::I32 | Kind::I64 => return None,
    };
    // The host's plan (the longest merged dimensions, the fewest calls) where cuBLAS takes
    // it; else one whose dimensions step by one element where they can (the seed's depth is
    // `l`, not the longer `k` that has no unit stride in either operand).
    let host = GemmPlan::of(step)?;
    calls_of(step, conj, host).or_else(|| calls_of(step, conj, GemmPlan::with_unit_strides(step)?))
}

/// The calls of `plan`, a GEMM form of `step`, or `None` (see [`calls`]).
fn calls_of<T: Element, const L: usize>(
    step: &Step<'_, T, L, 2>,
    conj: [bool; 2],
    plan: GemmPlan<L>,
) -> Option<Vec<Call<T>>> {
    let (m, n, k) = (plan.m, plan.n, plan.k);
    // Strides per matrix (A: m × k, B: k × n, C: m × n) in row-major order of the indices.
    let (a, b, c) = (
        (m.strides[0], k.strides[0]),
        (k.strides[1], n.strides[1]),
        (m.strides[2], n.strides[2]),
    );
    // C column-major: C = A·B as it stands. C row-major: Cᵀ = Bᵀ·Aᵀ column-major, so the
    // operands swap and each matrix is read transposed.
    let (swapped, ldc) = match storage(m.extent, n.extent, c.0, c.1)? {
        (Op::N, ldc) => (false, ldc),
        // `storage` never answers `Op::C`: conjugation is the operands' only.
        (Op::T | Op::C, ldc) => (true, ldc),
    };
    let (rows, cols, depth, first, second) = if swapped {
        (
            n.extent,
            m.extent,
            k.extent,
            (1, (b.1, b.0)),
            (0, (a.1, a.0)),
        )
    } else {
        (m.extent, n.extent, k.extent, (0, a), (1, b))
    };
    // `op = C` conjugates as it transposes: a conjugated operand must be read transposed.
    let conjugated = |(op, ld): (Op, usize), operand: usize| match (conj[operand], op) {
        (false, _) => Some((op, ld)),
        (true, Op::T) => Some((Op::C, ld)),
        (true, _) => None,
    };
    let (transa, lda) = conjugated(storage(rows, depth, first.1 .0, first.1 .1)?, first.0)?;
    let (transb, ldb) = conjugated(storage(depth, cols, second.1 .0, second.1 .1)?, second.0)?;
    // The outer loop of largest extent becomes the batch; the other outer loops and the
    // unmerged contracted ones become separate calls.
    let batch_var = plan
        .outer
        .iter()
        .copied()
        .max_by_key(|&var| step.extents()[var]);
    let loops: Vec<usize> = plan
        .outer
        .iter()
        .copied()
        .filter(|&var| Some(var) != batch_var)
        .chain(plan.summed.iter().copied())
        .collect();
    let count: usize = loops.iter().map(|&var| step.extents()[var]).product();
    let batch = batch_var.map_or(1, |var| step.extents()[var]);
    let fits = |value: usize| i32::try_from(value).is_ok();
    if count > MAX_CALLS
        || ![rows, cols, depth, lda, ldb, ldc, batch]
            .into_iter()
            .all(fits)
    {
        return None;
    }
    let batch_stride = |matrix: usize| batch_var.map_or(0, |var| plan.strides[matrix][var]);
    let beta = step.mode().beta();
    let bases = [
        step.operands()[0].base,
        step.operands()[1].base,
        step.target().base,
    ];
    let summed_from = loops.len() - plan.summed.len();
    let mut out = Vec::with_capacity(count);
    for index in 0..count {
        let mut offsets = bases;
        let mut rest = index;
        let mut first_of_sum = true;
        for (position, &var) in loops.iter().enumerate().rev() {
            let value = rest % step.extents()[var];
            rest /= step.extents()[var];
            if position >= summed_from && value != 0 {
                first_of_sum = false;
            }
            for (offset, strides) in offsets.iter_mut().zip(&plan.strides) {
                *offset += strides[var] * value as isize;
            }
        }
        let matrix = |which: usize, ld: usize| Matrix {
            offset: offsets[which],
            ld,
            stride: batch_stride(which),
        };
        let call = Call {
            transa,
            transb,
            m: rows,
            n: cols,
            k: depth,
            alpha: step.alpha(),
            beta: if first_of_sum { beta } else { T::ONE },
            a: matrix(first.0, lda),
            b: matrix(second.0, ldb),
            c: matrix(2, ldc),
            batch,
            operands: [first.0, second.0],
        };
        let lens = [
            step.operands()[first.0].len,
            step.operands()[second.0].len,
            step.target().len,
        ];
        if !call.within(lens) {
            return None;
        }
        out.push(call);
    }
    Some(out)
}

impl<T: Element> Call<T> {
    /// The stored extents (rows, columns) of A, B and C.
    fn stored(&self) -> [(usize, usize); 3] {
        let shape = |op: Op, rows: usize, cols: usize| match op {
            Op::N => (rows, cols),
            Op::T | Op::C => (cols, rows),
        };
        [
            shape(self.transa, self.m, self.k),
            shape(self.transb, self.k, self.n),
            (self.m, self.n),
        ]
    }

    /// Whether every element the call addresses in A, B and C lies in buffers of these
    /// lengths, and its arguments are ones cuBLAS documents as valid (`ld ≥ max(1, rows)`).
    pub(crate) fn within(&self, lens: [usize; 3]) -> bool {
        let matrices = [self.a, self.b, self.c];
        self.stored()
            .into_iter()
            .zip(matrices)
            .zip(lens)
            .all(|(((rows, cols), matrix), len)| {
                if matrix.ld < rows.max(1) {
                    return false;
                }
                if rows == 0 || cols == 0 || self.batch == 0 {
                    return true;
                }
                let span = |count: usize, stride: isize| -> Option<(isize, isize)> {
                    let reach = stride.checked_mul(isize::try_from(count - 1).ok()?)?;
                    Some((reach.min(0), reach.max(0)))
                };
                let parts = [
                    span(rows, 1),
                    span(cols, isize::try_from(matrix.ld).ok().unwrap_or(isize::MAX)),
                    span(self.batch, matrix.stride),
                ];
                let (mut low, mut high) = (matrix.offset, matrix.offset);
                for part in parts {
                    let Some((down, up)) = part else { return false };
                    match (low.checked_add(down), high.checked_add(up)) {
                        (Some(l), Some(h)) => (low, high) = (l, h),
                        _ => return false,
                    }
                }
                low >= 0 && usize::try_from(high).is_ok_and(|high| high < len)
            })
    }

    /// The call on host memory, by cuBLAS's documented definition (what the simulator runs).
    ///
    /// # Safety
    /// `a`, `b` and `c` are the starts of buffers of the lengths [`Call::within`] accepted, `a`
    /// and `b` readable and `c` writable, and C's elements (over all batches) are distinct
    /// from each other and from A's and B's.
    pub(crate) unsafe fn on_host(&self, a: *const T, b: *const T, c: *mut T) {
        let at = |op: Op, matrix: &Matrix, row: usize, col: usize, p: usize| -> isize {
            let (r, s) = match op {
                Op::N => (row, col),
                Op::T | Op::C => (col, row),
            };
            matrix.offset + (r + s * matrix.ld) as isize + p as isize * matrix.stride
        };
        let value = |op: Op, x: T| if op == Op::C { x.conj() } else { x };
        for p in 0..self.batch {
            for j in 0..self.n {
                for i in 0..self.m {
                    let mut sum = T::ZERO;
                    for l in 0..self.k {
                        // SAFETY: (i, l), (l, j) lie within the stored extents, whose
                        // elements `within` proved inside the buffers.
                        unsafe {
                            sum += value(self.transa, *a.offset(at(self.transa, &self.a, i, l, p)))
                                * value(self.transb, *b.offset(at(self.transb, &self.b, l, j, p)));
                        }
                    }
                    // SAFETY: as above for C, whose elements nothing else aliases.
                    unsafe {
                        let element = c.offset(at(Op::N, &self.c, i, j, p));
                        *element = if self.beta == T::ZERO {
                            self.alpha * sum
                        } else {
                            self.alpha * sum + self.beta * *element
                        };
                    }
                }
            }
        }
    }
}

/// Runs `calls` (from [`calls`] on `step`) on the step's host memory.
pub(crate) fn on_host<T: Element, const L: usize>(
    step: &Step<'_, T, L, 2>,
    calls: &[Call<T>],
    counters: &Counters,
) -> Result<(), CudaError> {
    for call in calls {
        counters.gemm();
        let [a, b] = call.operands.map(|operand| &step.operands()[operand]);
        if !call.within([a.len, b.len, step.target().len]) {
            return Err(CudaError::Driver(format!(
                "cuBLAS call {call:?} leaves its buffers"
            )));
        }
        // SAFETY: `within` checked every address against the buffers' lengths; the step holds
        // their borrows, proved C's points distinct (GEMM plans need an injective target) and
        // disjoint from both operands (no in-place operands in GEMM plans).
        unsafe { call.on_host(a.data, b.data, step.target().data) };
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::c64;
    use crate::exec::step::Axis;
    use crate::operand::access::{Mode, Operand, TargetShared};
    use crate::tensor::{Tensor, TensorView};

    /// A small deterministic generator (xorshift), so failures reproduce from the case number.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            (self.0 % n as u64) as usize
        }

        fn shuffled(&mut self, mut items: Vec<usize>) -> Vec<usize> {
            for i in (1..items.len()).rev() {
                items.swap(i, self.below(i + 1));
            }
            items
        }
    }

    /// A tensor holding `vars` (loop numbers) in a random axis order, padded on every axis,
    /// and the axes to view it through so that view axis `k` is `vars[k]`.
    struct Layout {
        storage: Vec<usize>,
        padded: Vec<usize>,
        order: Vec<usize>,
    }

    impl Layout {
        fn random(rng: &mut Rng, vars: &[usize], extents: &[usize]) -> Layout {
            let storage = rng.shuffled(vars.to_vec());
            let padded = storage
                .iter()
                .map(|&var| extents[var] + [0, 0, 1, 3][rng.below(4)])
                .collect();
            let order = vars
                .iter()
                .map(|var| storage.iter().position(|v| v == var).unwrap())
                .collect();
            Layout {
                storage,
                padded,
                order,
            }
        }

        fn view<'t, T: Element>(
            &self,
            tensor: &'t Tensor<T>,
            extents: &[usize],
        ) -> TensorView<'t, T> {
            let mut view = tensor.view();
            for (axis, &var) in self.storage.iter().enumerate() {
                view = view.slice_axis(axis, 0..extents[var]);
            }
            view.permuted_axes(&self.order)
        }
    }

    /// An element type under test: how to make a value from two numbers, and when two
    /// results are the same up to rounding.
    trait Sample: Element {
        fn make(re: f64, im: f64) -> Self;
        fn close(self, other: Self) -> bool;
    }

    impl Sample for f64 {
        fn make(re: f64, _: f64) -> f64 {
            re
        }
        fn close(self, other: f64) -> bool {
            self == other
                || (self - other).abs() <= 1e-9 * other.abs().max(1.0)
                || (self.is_nan() && other.is_nan())
        }
    }

    impl Sample for c64 {
        fn make(re: f64, im: f64) -> c64 {
            c64::new(re, im)
        }
        fn close(self, other: c64) -> bool {
            self.re.close(other.re) && self.im.close(other.im)
        }
    }

    fn filled<T: Sample>(shape: &[usize], seed: usize) -> Tensor<T> {
        let mut t = seed;
        let mut next = move || {
            t = (t * 7919 + 104_729) % 1009;
            t as f64 / 64.0 - 8.0
        };
        Tensor::from_fn(shape, |_| T::make(next(), next()))
    }

    const L: usize = 8;

    /// One random contraction over random layouts, each operand conjugated at random: whether
    /// cuBLAS calls ran it (and if so, whether one read an operand through `op = C`), after
    /// checking they give what the host loop nest gives.
    fn case<T: Sample>(seed: u64) -> Option<bool> {
        let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
        // Loops 0..n_out are the target's: batch, left, right; then the contracted ones.
        let count = |rng: &mut Rng, most: usize| rng.below(most + 1);
        let (batch, left, right) = (count(&mut rng, 1), count(&mut rng, 2), count(&mut rng, 2));
        let contracted = 1 + count(&mut rng, 1);
        let n_out = batch + left + right;
        let used = n_out + contracted;
        let mut extents = [1usize; L];
        for extent in &mut extents[..used] {
            *extent = [1, 2, 3, 5, 7][rng.below(5)];
        }
        let range = |from: usize, count: usize| (from..from + count).collect::<Vec<_>>();
        let (b, l, r, k) = (
            range(0, batch),
            range(batch, left),
            range(batch + left, right),
            range(n_out, contracted),
        );
        let a_vars: Vec<usize> = [&b[..], &l, &k].concat();
        let b_vars: Vec<usize> = [&b[..], &r, &k].concat();
        let c_vars: Vec<usize> = range(0, n_out);
        let layouts =
            [&a_vars, &b_vars, &c_vars].map(|vars| Layout::random(&mut rng, vars, &extents));
        let a = filled::<T>(&layouts[0].padded, 1);
        let b_tensor = filled::<T>(&layouts[1].padded, 2);
        let mut c = filled::<T>(&layouts[2].padded, 3);
        let conj = [rng.below(2) == 1, rng.below(2) == 1];
        let mode = match rng.below(4) {
            0 => Mode::Assign,
            1 => Mode::Add,
            2 => Mode::Scale(T::make(0.5, -0.25)),
            _ => Mode::Scale(T::ZERO),
        };
        // β = 0 must not read C: a NaN there would show through.
        let beta_zero = match mode {
            Mode::Assign => true,
            Mode::Scale(beta) => beta == T::ZERO,
            Mode::Add => false,
        };
        if beta_zero && rng.below(2) == 0 {
            c.as_mut_slice().fill(T::make(f64::NAN, f64::NAN));
        }
        let loops = |vars: &[usize]| vars.iter().map(|&v| Axis::Loop(v)).collect::<Vec<_>>();
        let (a_axes, b_axes, c_axes) = (loops(&a_vars), loops(&b_vars), loops(&c_vars));
        let run = |c: &mut Tensor<T>, blas: bool| -> Option<bool> {
            let mut storage = c.view_mut();
            for (axis, &var) in layouts[2].storage.iter().enumerate() {
                storage = storage.slice_axis(axis, 0..extents[var]);
            }
            let target_view = storage.permuted_axes(&layouts[2].order);
            let target = target_view.__tdsl_target();
            let a_view = layouts[0].view(&a, &extents);
            let b_view = layouts[1].view(&b_tensor, &extents);
            let step = Step::new(
                target.at(&c_axes),
                mode,
                T::make(1.5, 0.5),
                extents,
                n_out,
                [
                    a_view.__tdsl_operand().at(&a_axes),
                    b_view.__tdsl_operand().at(&b_axes),
                ],
            );
            match calls(&step, conj).filter(|_| blas) {
                Some(calls) => {
                    on_host(&step, &calls, &Counters::default()).unwrap();
                    Some(
                        calls
                            .iter()
                            .any(|call| [call.transa, call.transb].contains(&Op::C)),
                    )
                }
                None => {
                    let value = |x: T, conj: bool| if conj { x.conj() } else { x };
                    crate::exec::loop_nest::evaluate(
                        step,
                        |[x, y]| value(x, conj[0]) * value(y, conj[1]),
                        crate::exec::loop_nest::AnyNest,
                    );
                    None
                }
            }
        };
        let mut expected = c.clone();
        run(&mut expected, false);
        let mapped = run(&mut c, true);
        for (index, (&got, &want)) in c.as_slice().iter().zip(expected.as_slice()).enumerate() {
            assert!(
                got.close(want),
                "case {seed} ({conj:?} conjugated): element {index}: cuBLAS mapping gave {got}, \
                 the loop nest {want}"
            );
        }
        mapped
    }

    /// How many of 600 random cases were cuBLAS calls, and how many read through `op = C`.
    fn layouts_match_the_loop_nest<T: Sample>() -> usize {
        let cases = 600;
        let outcomes: Vec<Option<bool>> = (0..cases).map(|seed| case::<T>(seed)).collect();
        let mapped = outcomes.iter().flatten().count();
        // Permuted and padded layouts: many have no unit stride in some matrix and fall back
        // (and for complex numbers, a conjugated operand not read transposed).
        assert!(
            mapped > cases as usize / 5,
            "only {mapped} of {cases} layouts mapped"
        );
        assert!(
            mapped < cases as usize,
            "every layout mapped: the fallback went untested"
        );
        outcomes.into_iter().flatten().filter(|&c| c).count()
    }

    #[test]
    fn random_strided_layouts_match_the_loop_nest() {
        // A real number is its own conjugate: never `op = C`.
        assert_eq!(layouts_match_the_loop_nest::<f64>(), 0);
    }

    #[test]
    fn random_complex_layouts_and_conjugations_match_the_loop_nest() {
        let conjugated = layouts_match_the_loop_nest::<c64>();
        assert!(
            conjugated > 20,
            "only {conjugated} cases read through op = C"
        );
    }

    /// `c[i, j] = op(a[k, i]) · op(b[k, j])`, all row-major, by its cuBLAS calls if it has
    /// them: the `op`s of the first call.
    fn transposed_product(
        a: &Tensor<c64>,
        b: &Tensor<c64>,
        c: &mut Tensor<c64>,
        conj: [bool; 2],
    ) -> Option<(Op, Op)> {
        let (ki, kj, ij) = (
            [Axis::Loop(2), Axis::Loop(0)],
            [Axis::Loop(2), Axis::Loop(1)],
            [Axis::Loop(0), Axis::Loop(1)],
        );
        let (a, b, c) = (a.view(), b.view(), c.view_mut());
        let (a, b, target) = (a.__tdsl_operand(), b.__tdsl_operand(), c.__tdsl_target());
        let step = Step::new(
            target.at(&ij),
            Mode::Assign,
            c64::ONE,
            [2, 2, 3, 1, 1, 1, 1, 1],
            2,
            [a.at(&ki), b.at(&kj)],
        );
        let found = calls(&step, conj)?;
        on_host(&step, &found, &Counters::default()).unwrap();
        Some((found[0].transa, found[0].transb))
    }

    #[test]
    fn the_seed_runs_as_calls_over_its_unit_stride_depth() {
        // c[i, j] = a[i, k, l] · b[k, j, l]: k is the longer contracted index, but only l
        // steps by one in A and B, so l is each call's depth and the calls sum over k.
        let (ni, nj, nk, nl) = (5, 4, 6, 3);
        let a = filled::<f64>(&[ni, nk, nl], 1);
        let b = filled::<f64>(&[nk, nj, nl], 2);
        let mut c = filled::<f64>(&[ni, nj], 3);
        let loops = |vars: &[usize]| vars.iter().map(|&v| Axis::Loop(v)).collect::<Vec<_>>();
        let (a_axes, b_axes, c_axes) = (loops(&[0, 2, 3]), loops(&[2, 1, 3]), loops(&[0, 1]));
        let (a_view, b_view) = (a.view(), b.view());
        let (a_op, b_op) = (a_view.__tdsl_operand(), b_view.__tdsl_operand());
        let c_view = c.view_mut();
        let target = c_view.__tdsl_target();
        let step = Step::new(
            target.at(&c_axes),
            Mode::Assign,
            1.0,
            [ni, nj, nk, nl, 1, 1, 1, 1],
            2,
            [a_op.at(&a_axes), b_op.at(&b_axes)],
        );
        let found = calls(&step, [false; 2]).expect("the seed maps to cuBLAS calls");
        assert_eq!(found.len(), nk);
        assert!(found.iter().all(|call| call.k == nl));
        on_host(&step, &found, &Counters::default()).unwrap();
        let want = Tensor::from_fn([ni, nj], |ij| {
            let mut sum = 0.0;
            for k in 0..nk {
                for l in 0..nl {
                    sum += a[[ij[0], k, l]] * b[[k, ij[1], l]];
                }
            }
            sum
        });
        for (x, y) in c.iter().zip(want.iter()) {
            assert!(x.close(*y), "{x} against {y}");
        }
    }

    #[test]
    fn a_conjugated_operand_is_read_through_op_c_only() {
        let a = Tensor::from_fn([3, 2], |ki| c64::new(ki[1] as f64, ki[0] as f64 + 1.0));
        let b = Tensor::from_fn([3, 2], |kj| c64::new(1.0, (kj[0] * kj[1]) as f64));
        let mut c = Tensor::<c64>::zeros([2, 2]);
        // Cᵀ = Bᵀ·conj(A) column-major: B as stored, then A (stored k × i row-major) read
        // transposed, which `op = C` conjugates.
        let ops = transposed_product(&a, &b, &mut c, [true, false]);
        assert_eq!(ops, Some((Op::N, Op::C)));
        let want = Tensor::from_fn([2, 2], |ij| {
            (0..3)
                .map(|k| a[[k, ij[0]]].conj() * b[[k, ij[1]]])
                .sum::<c64>()
        });
        assert_eq!(c, want);
        assert_eq!(
            transposed_product(&a, &b, &mut c, [false, false]),
            Some((Op::N, Op::T))
        );
        // Conjugating B, read as stored, has no cuBLAS operation: the module runs it.
        assert_eq!(transposed_product(&a, &b, &mut c, [false, true]), None);
    }

    #[test]
    fn row_major_c_swaps_the_operands_and_transposes() {
        // c[i, j] = a[i, k] · b[k, j], all row-major: Cᵀ = Bᵀ Aᵀ with both stored as is.
        assert_eq!(storage(4, 5, 5, 1), Some((Op::T, 5)));
        assert_eq!(storage(4, 5, 1, 4), Some((Op::N, 4)));
        // A column (or row) vector takes the smallest valid leading dimension.
        assert_eq!(storage(4, 1, 1, 0), Some((Op::N, 4)));
        assert_eq!(storage(1, 4, 0, 1), Some((Op::N, 1)));
        // Overlapping columns or no unit stride: not a cuBLAS matrix.
        assert_eq!(storage(4, 5, 1, 2), None);
        assert_eq!(storage(4, 5, 2, 10), None);
    }

    #[test]
    fn beta_zero_does_not_read_c() {
        let call = Call {
            transa: Op::N,
            transb: Op::N,
            m: 1,
            n: 1,
            k: 2,
            alpha: 1.0,
            beta: 0.0,
            a: Matrix {
                offset: 0,
                ld: 1,
                stride: 0,
            },
            b: Matrix {
                offset: 0,
                ld: 2,
                stride: 0,
            },
            c: Matrix {
                offset: 0,
                ld: 1,
                stride: 0,
            },
            batch: 1,
            operands: [0, 1],
        };
        let (a, b, mut c) = ([1.0, 2.0], [3.0, 4.0], [f64::NAN]);
        assert!(call.within([2, 2, 1]));
        assert!(!call.within([1, 2, 1]));
        // SAFETY: `within` accepted these lengths; the buffers are distinct.
        unsafe { call.on_host(a.as_ptr(), b.as_ptr(), c.as_mut_ptr()) };
        assert_eq!(c, [11.0]);
    }
}

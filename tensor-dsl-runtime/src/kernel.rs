//! Loop-nest kernel: `target[out] (=|+=) Σ_red body(operands)` over `L` loop variables, the
//! first `n_out` of them the target's. Invariant: every element read or written was proven in
//! bounds before the first iteration, so the inner loops are unchecked.

use std::marker::PhantomData;

use crate::access::{Access, TargetAccess};
use crate::element::Element;

/// How one axis of an access is addressed: by a loop variable, or at a fixed position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Axis {
    /// The axis follows loop variable number `0`.
    Loop(usize),
    /// The axis stays at this position.
    Fixed(usize),
}

/// How a kernel combines its value with the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode<T> {
    /// `target = value`
    Assign,
    /// `target += value`
    Add,
    /// `target = β · target + value` (the GEMM update)
    Scale(T),
}

/// An access bound to a loop nest: base offset plus one stride per loop variable.
///
/// A loop variable used on several axes (`a[i, i]`) gets the sum of their strides.
pub struct Bound<'a, T, const L: usize> {
    pub(crate) data: *const T,
    pub(crate) base: isize,
    pub(crate) strides: [isize; L],
    _borrow: PhantomData<&'a T>,
}

impl<T, const L: usize> Bound<'_, T, L> {
    /// An access already bound and proven in bounds by the caller.
    pub(crate) fn from_raw(data: *const T, base: isize, strides: [isize; L]) -> Self {
        Bound {
            data,
            base,
            strides,
            _borrow: PhantomData,
        }
    }
}

impl<T, const L: usize> BoundTarget<'_, T, L> {
    /// A target already bound and proven in bounds by the caller.
    pub(crate) fn from_raw(data: *mut T, base: isize, strides: [isize; L]) -> Self {
        BoundTarget {
            data,
            base,
            strides,
            _borrow: PhantomData,
        }
    }
}

/// Binds raw parts to a loop nest and proves every addressable offset lies in `0..len`.
///
/// # Panics
/// On a rank, extent or position mismatch: generated code checks these earlier with messages
/// for users, so reaching one of these panics is a bug in the compiler.
fn bind_parts<const L: usize>(
    len: usize,
    shape: &[usize],
    strides: &[isize],
    offset: isize,
    axes: &[Axis],
    extents: &[usize; L],
    checked_loops: std::ops::Range<usize>,
) -> (isize, [isize; L]) {
    assert_eq!(shape.len(), axes.len(), "tensor-dsl bug: rank not checked");
    let mut base = offset;
    let mut loop_strides = [0isize; L];
    for ((&axis, &extent), &stride) in axes.iter().zip(shape).zip(strides) {
        match axis {
            Axis::Loop(var) => {
                assert_eq!(extents[var], extent, "tensor-dsl bug: extent not checked");
                loop_strides[var] += stride;
            }
            Axis::Fixed(position) => {
                assert!(position < extent, "tensor-dsl bug: position not checked");
                base += position as isize * stride;
            }
        }
    }
    // Only loops that actually run can address memory; if one of them is empty, nothing is.
    if checked_loops.clone().all(|var| extents[var] > 0) {
        let (mut low, mut high) = (base, base);
        for var in checked_loops {
            let reach = (extents[var] as isize - 1) * loop_strides[var];
            if reach < 0 {
                low += reach;
            } else {
                high += reach;
            }
        }
        assert!(
            low >= 0 && (high as usize) < len,
            "tensor-dsl bug: access outside its buffer"
        );
    }
    (base, loop_strides)
}

impl<'a, T> Access<'a, T> {
    /// Binds this operand's axes to the loop variables of a nest with the given extents.
    pub fn bind<const L: usize>(&self, axes: &[Axis], extents: &[usize; L]) -> Bound<'a, T, L> {
        let (base, strides) = bind_parts(
            self.len,
            self.shape,
            self.strides,
            self.offset,
            axes,
            extents,
            0..L,
        );
        Bound {
            data: self.data,
            base,
            strides,
            _borrow: PhantomData,
        }
    }
}

/// A target bound to a loop nest (see [`Bound`]); loop variables past `n_out` have stride 0.
pub struct BoundTarget<'a, T, const L: usize> {
    pub(crate) data: *mut T,
    pub(crate) base: isize,
    pub(crate) strides: [isize; L],
    _borrow: PhantomData<&'a std::cell::Cell<T>>,
}

impl<'a, T> TargetAccess<'a, T> {
    /// Binds the target's axes to the first `n_out` loop variables of a nest.
    pub fn bind<const L: usize>(
        &self,
        axes: &[Axis],
        extents: &[usize; L],
        n_out: usize,
    ) -> BoundTarget<'a, T, L> {
        assert!(
            axes.iter().all(|axis| match axis {
                Axis::Loop(var) => *var < n_out,
                Axis::Fixed(_) => true,
            }),
            "tensor-dsl bug: target indexed by a reduction variable"
        );
        let (base, strides) = bind_parts(
            self.len,
            self.shape,
            self.strides,
            self.offset,
            axes,
            extents,
            0..n_out,
        );
        BoundTarget {
            data: self.data,
            base,
            strides,
            _borrow: PhantomData,
        }
    }
}

/// Evaluates `target[out] (=|+=|= β·target +) α · Σ_red body(operands)`.
///
/// Loop variables `0..n_out` run over the target's points; `n_out..L` are summed for each
/// point (an empty sum is zero). Each operand's element at the current point is passed to
/// `body` in order; `alpha` scales the sum once per point.
#[allow(clippy::too_many_arguments)]
pub fn evaluate<T: Element, const L: usize, const N: usize>(
    target: BoundTarget<'_, T, L>,
    mode: Mode<T>,
    alpha: T,
    extents: [usize; L],
    n_out: usize,
    operands: [Bound<'_, T, L>; N],
    body: impl Fn([T; N]) -> T,
) {
    let operand_strides: [[isize; N]; L] =
        std::array::from_fn(|var| std::array::from_fn(|k| operands[k].strides[var]));
    let start = Point {
        operands: std::array::from_fn(|k| operands[k].base),
        target: target.base,
    };
    visit(
        &extents,
        0..n_out,
        &operand_strides,
        &target.strides,
        start,
        |point| {
            let mut sum = T::ZERO;
            visit(
                &extents,
                n_out..L,
                &operand_strides,
                &target.strides,
                point,
                |inner| {
                    // SAFETY: `Access::bind` proved every offset reachable over `extents` in bounds.
                    let values = std::array::from_fn(|k| unsafe {
                        operands[k].data.offset(inner.operands[k]).read()
                    });
                    sum += body(values);
                },
            );
            // SAFETY: `TargetAccess::bind` proved every offset reachable over the first `n_out`
            // loops in bounds, and the target never moves along the summed loops.
            unsafe {
                let slot = target.data.offset(point.target);
                let value = alpha * sum;
                match mode {
                    Mode::Assign => slot.write(value),
                    Mode::Add => slot.write(slot.read() + value),
                    Mode::Scale(beta) => slot.write(beta * slot.read() + value),
                }
            }
        },
    );
}

/// Offsets of every operand and of the target at one point of a loop nest.
#[derive(Clone, Copy)]
struct Point<const N: usize> {
    operands: [isize; N],
    target: isize,
}

impl<const N: usize> Point<N> {
    fn step(&mut self, operand_strides: &[isize; N], target_stride: isize, times: isize) {
        for (offset, stride) in self.operands.iter_mut().zip(operand_strides) {
            *offset += stride * times;
        }
        self.target += target_stride * times;
    }
}

/// Calls `f` at every point of loops `vars` (row-major: the last loop fastest), starting at
/// `start`. Does nothing if one of the loops is empty; calls `f` once if `vars` is empty.
fn visit<const L: usize, const N: usize>(
    extents: &[usize; L],
    vars: std::ops::Range<usize>,
    operand_strides: &[[isize; N]; L],
    target_strides: &[isize; L],
    start: Point<N>,
    mut f: impl FnMut(Point<N>),
) {
    if vars.clone().any(|var| extents[var] == 0) {
        return;
    }
    let Some(innermost) = vars.clone().last() else {
        f(start);
        return;
    };
    let mut counters = [0usize; L];
    let mut row = start;
    loop {
        let mut point = row;
        for _ in 0..extents[innermost] {
            f(point);
            point.step(&operand_strides[innermost], target_strides[innermost], 1);
        }
        // Odometer over the outer loops: bump the innermost outer one, carry outwards.
        let mut var = innermost;
        loop {
            if var == vars.start {
                return;
            }
            var -= 1;
            counters[var] += 1;
            row.step(&operand_strides[var], target_strides[var], 1);
            if counters[var] < extents[var] {
                break;
            }
            row.step(
                &operand_strides[var],
                target_strides[var],
                -(extents[var] as isize),
            );
            counters[var] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{Operand, TargetOwned};
    use crate::tensor::Tensor;

    #[test]
    fn matmul_with_a_transposed_operand() {
        let a = Tensor::<f64>::from_fn([3, 2], |ix| (ix[0] * 2 + ix[1]) as f64);
        let b = Tensor::<f64>::from_fn([3, 4], |ix| (ix[0] + ix[1]) as f64);
        let mut c = Tensor::<f64>::zeros([2, 4]);
        let extents = [2, 4, 3]; // i, j, k
        let (ra, rb) = (a.__tdsl_operand(), b.__tdsl_operand());
        let target = c.__tdsl_target();
        evaluate(
            target.bind(&[Axis::Loop(0), Axis::Loop(1)], &extents, 2),
            Mode::Assign,
            1.0,
            extents,
            2,
            [
                ra.bind(&[Axis::Loop(2), Axis::Loop(0)], &extents),
                rb.bind(&[Axis::Loop(2), Axis::Loop(1)], &extents),
            ],
            |[x, y]| x * y,
        );
        for i in 0..2 {
            for j in 0..4 {
                let expected: f64 = (0..3).map(|k| a[[k, i]] * b[[k, j]]).sum();
                assert_eq!(c[[i, j]], expected);
            }
        }
    }

    #[test]
    fn trace_and_empty_sum() {
        let a = Tensor::<f32>::from_fn([3, 3], |ix| (ix[0] * 3 + ix[1]) as f32);
        let mut total = 7.0f32;
        let access = a.__tdsl_operand();
        let target = TargetAccess::scalar(&mut total);
        let extents = [3];
        evaluate(
            target.bind(&[], &extents, 0),
            Mode::Add,
            1.0,
            extents,
            0,
            [access.bind(&[Axis::Loop(0), Axis::Loop(0)], &extents)],
            |[x]| x,
        );
        assert_eq!(total, 7.0 + 0.0 + 4.0 + 8.0);

        let empty = Tensor::<f32>::zeros([2, 0]);
        let mut sums = Tensor::<f32>::from_fn([2], |_| 5.0);
        let extents = [2, 0];
        let access = empty.__tdsl_operand();
        let target = sums.__tdsl_target();
        evaluate(
            target.bind(&[Axis::Loop(0)], &extents, 1),
            Mode::Assign,
            1.0,
            extents,
            1,
            [access.bind(&[Axis::Loop(0), Axis::Loop(1)], &extents)],
            |[x]| x,
        );
        assert_eq!(sums.as_slice(), &[0.0, 0.0]);
    }

    #[test]
    #[should_panic(expected = "tensor-dsl bug")]
    fn binding_with_wrong_extents_is_caught() {
        let a = Tensor::<f64>::zeros([2, 2]);
        let _ = a
            .__tdsl_operand()
            .bind(&[Axis::Loop(0), Axis::Loop(0)], &[3]);
    }
}

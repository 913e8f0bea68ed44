//! `x[i in lo..hi]` → `Sliced`: an operand's view of some positions of its axes, itself an
//! operand, with no copy; `c[i in lo..hi] = …` → `SlicedTarget`, a target's. Invariant: it only moves the access's start and shortens its
//! extents; it never dereferences, so a wrong range can only make a statement's `Step::new`
//! refuse it, and the block's checks (`check_range`) find every wrong range first.

use crate::element::Element;

use super::access::{Access, Operand, ShapeRef, TargetAccess, TargetShared};
use super::extents::Dynamic;

/// The positions `lo..hi` of some axes of `base` (see [`slice`]).
pub struct Sliced<'a, X: ?Sized> {
    base: &'a X,
    shape: Vec<usize>,
    /// The positions cut off the start of each axis.
    starts: Vec<usize>,
}

/// The view of `base` at `ranges` (axis, start, end; `None` to the axis's end). The block's
/// checks have found every range inside its axis; one that is not (a bug) panics here.
pub fn slice<'a, X: Operand + ?Sized>(
    base: &'a X,
    ranges: &[(usize, usize, Option<usize>)],
) -> Sliced<'a, X> {
    let (shape, starts) = cut(base.__tdsl_shape().to_vec(), ranges);
    Sliced {
        base,
        shape,
        starts,
    }
}

/// A shape cut to `ranges`, and where each axis now starts.
fn cut(
    mut shape: Vec<usize>,
    ranges: &[(usize, usize, Option<usize>)],
) -> (Vec<usize>, Vec<usize>) {
    let mut starts = vec![0; shape.len()];
    for &(axis, lo, hi) in ranges {
        let hi = hi.unwrap_or(shape[axis]);
        assert!(
            lo <= hi && hi <= shape[axis],
            "tensor-dsl bug: the range {lo}..{hi} of axis {axis} was not checked"
        );
        shape[axis] = hi - lo;
        starts[axis] = lo;
    }
    (shape, starts)
}

/// The offset, in elements, of the first position of a cut view; 0 for an empty one.
fn start_offset(shape: &[usize], starts: &[usize], strides: &[isize]) -> isize {
    if shape.contains(&0) {
        return 0;
    }
    starts
        .iter()
        .zip(strides)
        .map(|(&start, &stride)| start as isize * stride)
        .sum()
}

/// `c[i in lo..hi] = …`: a target's access cut to a range of its positions, written as a
/// writable view is (`TargetShared`), on the backend `B` its tensor runs on.
pub struct SlicedTarget<'a, T, B> {
    target: TargetAccess<'a, T>,
    backend: B,
    shape: Vec<usize>,
    offset: isize,
}

/// The target `target` (of a tensor on `backend`) cut to `ranges` (see [`slice`]).
pub fn slice_target<'a, T, B>(
    backend: B,
    target: TargetAccess<'a, T>,
    ranges: &[(usize, usize, Option<usize>)],
) -> SlicedTarget<'a, T, B> {
    let (shape, starts) = cut(target.raw.shape.to_vec(), ranges);
    let offset = start_offset(&shape, &starts, target.raw.strides);
    SlicedTarget {
        target,
        backend,
        shape,
        offset,
    }
}

impl<T, B> SlicedTarget<'_, T, B> {
    /// The backend of the tensor the target is of.
    pub(crate) fn backend(&self) -> &B {
        &self.backend
    }
}

impl<T: Element, B> TargetShared for SlicedTarget<'_, T, B> {
    type Elem = T;
    fn __tdsl_target(&self) -> TargetAccess<'_, T> {
        self.target.cut(&self.shape, self.offset)
    }
}

impl<'a, X: ?Sized> Sliced<'a, X> {
    /// The tensor the view is of.
    pub(crate) fn base(&self) -> &'a X {
        self.base
    }
}

impl<X: Operand + ?Sized> Operand for Sliced<'_, X> {
    type Elem = X::Elem;
    type Extents = Dynamic;
    fn __tdsl_shape(&self) -> ShapeRef<'_> {
        self.shape.as_slice().into()
    }
    fn __tdsl_operand(&self) -> Access<'_, X::Elem> {
        let mut access = self.base.__tdsl_operand();
        let raw = &mut access.raw;
        raw.offset += start_offset(&self.shape, &self.starts, raw.strides);
        raw.shape = self.shape.as_slice().into();
        raw.row_major = false;
        access
    }
}

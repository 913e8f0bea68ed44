//! `x[i in lo..hi]` → `Sliced`: an operand's view of some positions of its axes, itself an
//! operand, with no copy. Invariant: it only moves the access's start and shortens its
//! extents; it never dereferences, so a wrong range can only make a statement's `Step::new`
//! refuse it, and the block's checks (`check_range`) find every wrong range first.

use super::access::{Access, Operand, ShapeRef};
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
    let mut shape = base.__tdsl_shape().to_vec();
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
    Sliced {
        base,
        shape,
        starts,
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
        if !raw.shape.contains(&0) && !self.shape.contains(&0) {
            // The element at the ranges' starts; none when the view is empty.
            for (&start, &stride) in self.starts.iter().zip(raw.strides) {
                raw.offset += start as isize * stride;
            }
        }
        raw.shape = self.shape.as_slice().into();
        access
    }
}

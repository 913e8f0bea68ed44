//! Shapes → layouts: row-major strides, checked element counts, and `RawLayout` (shape, strides,
//! start offset) with the operations views are made by. Every shape argument of the public API
//! goes through [`IntoShape`] so `[usize; N]`, `&[usize]` and `Vec<usize>` all work. Invariant:
//! a layout made from another addresses only offsets the other addresses, so a layout proven
//! inside a buffer stays inside it.

use std::ops::Range;

use smallvec::SmallVec;

use crate::error::{ShapeError, ShapeErrorKind};

/// The most axes a shape or strides hold in place (see [`Dims`]): every tensor the written-out
/// loops take (`MAX_STATIC_RANK`).
pub(crate) const INLINE_AXES: usize = 4;

/// A tensor's or view's extents: up to [`INLINE_AXES`] inside the value, more in a buffer, so
/// making a small tensor or any view of one allocates no shape.
pub type Dims = SmallVec<[usize; INLINE_AXES]>;

/// A tensor's or view's strides, held as its [`Dims`] are.
pub(crate) type Strides = SmallVec<[isize; INLINE_AXES]>;

/// Something that can be read as a list of extents, one per axis.
pub trait IntoShape {
    /// The extents, outermost axis first.
    fn into_shape(self) -> Vec<usize>;

    /// The extents as tensors hold them (see [`Dims`]): for arrays and slices without a
    /// `Vec` in between.
    #[doc(hidden)]
    fn __tdsl_dims(self) -> Dims
    where
        Self: Sized,
    {
        Dims::from_vec(self.into_shape())
    }
}

impl IntoShape for Vec<usize> {
    fn into_shape(self) -> Vec<usize> {
        self
    }
}

impl IntoShape for &Vec<usize> {
    fn into_shape(self) -> Vec<usize> {
        self.clone()
    }

    fn __tdsl_dims(self) -> Dims {
        dims_of(self)
    }
}

impl IntoShape for &[usize] {
    fn into_shape(self) -> Vec<usize> {
        self.to_vec()
    }

    fn __tdsl_dims(self) -> Dims {
        dims_of(self)
    }
}

impl<const N: usize> IntoShape for [usize; N] {
    fn into_shape(self) -> Vec<usize> {
        self.to_vec()
    }

    fn __tdsl_dims(self) -> Dims {
        dims_of(&self)
    }
}

impl<const N: usize> IntoShape for &[usize; N] {
    fn into_shape(self) -> Vec<usize> {
        self.to_vec()
    }

    fn __tdsl_dims(self) -> Dims {
        dims_of(self)
    }
}

/// The number of elements of `shape`, or an error if it overflows `usize`. Any zero extent
/// makes it 0, whatever the other extents and their order (`[usize::MAX, 4, 0]` holds nothing).
#[inline]
pub(crate) fn element_count(shape: &[usize]) -> Result<usize, ShapeError> {
    if shape.contains(&0) {
        return Ok(0);
    }
    shape
        .iter()
        .try_fold(1usize, |count, &extent| count.checked_mul(extent))
        .ok_or_else(|| {
            ShapeError::new(
                ShapeErrorKind::Overflow,
                format!("shape {shape:?} has more elements than fit in usize"),
            )
        })
}

/// Row-major strides in elements: the last axis has stride 1.
pub(crate) fn row_major_strides(shape: &[usize]) -> Strides {
    // Filled in place: collecting an iterator into a `SmallVec` took longer than the rest of
    // making a small tensor.
    let mut strides = Strides::from_elem(0, shape.len());
    let mut inner = 1isize;
    for (stride, &extent) in strides.iter_mut().zip(shape).rev() {
        *stride = inner;
        inner = inner.wrapping_mul(extent.max(1) as isize);
    }
    strides
}

/// `extents` as a [`Dims`]: copied word by word where they fit in place (a slice copy of
/// unknown length is a call to `memcpy`).
pub(crate) fn dims_of(extents: &[usize]) -> Dims {
    if extents.len() > INLINE_AXES {
        return Dims::from_slice(extents);
    }
    let mut held = [0; INLINE_AXES];
    for (slot, &extent) in held.iter_mut().zip(extents) {
        *slot = extent;
    }
    Dims::from_buf_and_len(held, extents.len())
}

/// Reorders `shape` and `strides` by `axes`, which must be a permutation of `0..rank`.
pub(crate) fn permute(
    shape: &[usize],
    strides: &[isize],
    axes: &[usize],
) -> Result<(Dims, Strides), ShapeError> {
    let rank = shape.len();
    let mut seen = vec![false; rank];
    let is_permutation = axes.len() == rank
        && axes
            .iter()
            .all(|&axis| axis < rank && !std::mem::replace(&mut seen[axis], true));
    if !is_permutation {
        return Err(ShapeError::new(
            ShapeErrorKind::InvalidPermutation,
            format!("axes {axes:?} are not a permutation of the {rank} axes of a tensor of shape {shape:?}"),
        ));
    }
    Ok((
        axes.iter().map(|&axis| shape[axis]).collect(),
        axes.iter().map(|&axis| strides[axis]).collect(),
    ))
}

/// The offset and new extent of `range` on `axis`, checked against the axis.
pub(crate) fn slice(
    shape: &[usize],
    strides: &[isize],
    axis: usize,
    range: std::ops::Range<usize>,
) -> Result<(isize, usize), ShapeError> {
    let out_of_bounds = |what: String| Err(ShapeError::new(ShapeErrorKind::OutOfBounds, what));
    let Some(&extent) = shape.get(axis) else {
        return out_of_bounds(format!(
            "axis {axis} does not exist in a tensor of shape {shape:?}"
        ));
    };
    if range.start > range.end || range.end > extent {
        return out_of_bounds(format!(
            "range {range:?} is outside axis {axis} of extent {extent} (shape {shape:?})"
        ));
    }
    // Wrapping: in a layout with elements the product is an offset inside its buffer, and in
    // one without (another axis of extent 0) it is never used to address anything.
    Ok((
        (range.start as isize).wrapping_mul(strides[axis]),
        range.end - range.start,
    ))
}

/// Shape, strides and start offset of a view into a buffer.
///
/// Every method that makes a new layout from an old one addresses only offsets the old one
/// addresses (a subset of its elements, possibly several times over for `broadcast`, or the
/// same contiguous run for `reshaped`), so a layout proven in bounds of a buffer stays so.
/// Offsets are computed with wrapping arithmetic: an offset that is ever dereferenced is the
/// offset of an element, which fits in `isize`, so wrapping changes nothing for it, while
/// layouts with no elements (whose start offset is never read) cannot panic on overflow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawLayout {
    pub(crate) shape: Dims,
    pub(crate) strides: Strides,
    pub(crate) offset: isize,
}

impl RawLayout {
    pub(crate) fn new(shape: impl Into<Dims>, strides: impl Into<Strides>, offset: isize) -> Self {
        RawLayout {
            shape: shape.into(),
            strides: strides.into(),
            offset,
        }
    }

    #[track_caller]
    pub(crate) fn permuted(self, axes: &[usize]) -> Self {
        // A `match`, not `unwrap_or_else`: a panic inside a closure would be reported here
        // instead of at the caller.
        match permute(&self.shape, &self.strides, axes) {
            Ok((shape, strides)) => RawLayout::new(shape, strides, self.offset),
            Err(error) => panic!("{error}"),
        }
    }

    /// The buffer offset of a multi-index, or `None` if it has the wrong length or is out of
    /// range.
    pub(crate) fn offset_of(&self, index: &[usize]) -> Option<isize> {
        flat_offset(&self.shape, &self.strides, self.offset, index)
    }

    /// The number of elements the layout addresses (counting a broadcast element once per
    /// position).
    pub(crate) fn element_count(&self) -> usize {
        // A layout with elements has a count that fits: a view addresses distinct elements of
        // its buffer, or is a broadcast, whose shape is checked when made. Without elements the
        // product of the other extents may overflow (permuting `[0, usize::MAX, 2]`).
        if self.shape.contains(&0) {
            return 0;
        }
        self.shape
            .iter()
            .try_fold(1usize, |count, &extent| count.checked_mul(extent))
            .expect("a view's elements are counted when it is made")
    }

    #[track_caller]
    pub(crate) fn sliced(mut self, axis: usize, range: Range<usize>) -> Self {
        let (shift, extent) = match slice(&self.shape, &self.strides, axis, range) {
            Ok(sliced) => sliced,
            Err(error) => panic!("{error}"),
        };
        self.offset = self.offset.wrapping_add(shift);
        self.shape[axis] = extent;
        self
    }

    /// Every `|step|`-th index of `range` on `axis`, from its start when `step` is positive
    /// and backwards from its last index when negative (ndarray's rule).
    #[track_caller]
    pub(crate) fn sliced_step(mut self, axis: usize, range: Range<usize>, step: isize) -> Self {
        if step == 0 {
            panic!("the step of a slice must not be zero");
        }
        let start = range.start;
        let (_, extent) = match slice(&self.shape, &self.strides, axis, range) {
            Ok(sliced) => sliced,
            Err(error) => panic!("{error}"),
        };
        let count = extent.div_ceil(step.unsigned_abs());
        // The first index taken: `start`, or the last index of the range walking backwards.
        let first = if step > 0 || extent == 0 {
            start
        } else {
            start + extent - 1
        };
        let stride = self.strides[axis];
        self.offset = self
            .offset
            .wrapping_add((first as isize).wrapping_mul(stride));
        self.shape[axis] = count;
        // With one element or none the stride is never multiplied by a non-zero index; keep
        // the old one rather than a product that may have wrapped.
        if count > 1 {
            self.strides[axis] = stride.wrapping_mul(step);
        }
        self
    }

    /// The layout with `axis` removed, its index fixed at `index`.
    #[track_caller]
    pub(crate) fn indexed(mut self, axis: usize, index: usize) -> Self {
        match self.shape.get(axis) {
            None => panic!(
                "axis {axis} does not exist in a view of shape {:?}",
                self.shape
            ),
            Some(&extent) if index >= extent => panic!(
                "index {index} is outside axis {axis} of extent {extent} (shape {:?})",
                self.shape
            ),
            Some(_) => {}
        }
        self.offset = self
            .offset
            .wrapping_add((index as isize).wrapping_mul(self.strides[axis]));
        self.shape.remove(axis);
        self.strides.remove(axis);
        self
    }

    /// The indices before `index` on `axis` and those from it on.
    #[track_caller]
    pub(crate) fn split(self, axis: usize, index: usize) -> (Self, Self) {
        let extent = match self.shape.get(axis) {
            Some(&extent) if index <= extent => extent,
            Some(&extent) => panic!(
                "split index {index} is outside axis {axis} of extent {extent} (shape {:?})",
                self.shape
            ),
            None => panic!(
                "axis {axis} does not exist in a view of shape {:?}",
                self.shape
            ),
        };
        (
            self.clone().sliced(axis, 0..index),
            self.sliced(axis, index..extent),
        )
    }

    /// The layout repeating this one's elements to `shape` by numpy's rules: axes are matched
    /// from the last; a matched axis keeps its extent or, of extent 1, is repeated with stride
    /// 0; missing leading axes are new ones with stride 0.
    pub(crate) fn broadcast(&self, shape: Dims) -> Result<Self, ShapeError> {
        element_count(&shape)?;
        let incompatible = || {
            ShapeError::new(
                ShapeErrorKind::IncompatibleShape,
                format!(
                    "a view of shape {:?} cannot be broadcast to shape {shape:?}",
                    self.shape
                ),
            )
        };
        let Some(lead) = shape.len().checked_sub(self.shape.len()) else {
            return Err(incompatible());
        };
        let mut strides = Strides::from_elem(0, shape.len());
        for (axis, (&extent, &stride)) in self.shape.iter().zip(&self.strides).enumerate() {
            let wanted = shape[lead + axis];
            if extent == wanted {
                strides[lead + axis] = stride;
            } else if extent != 1 {
                return Err(incompatible());
            }
        }
        Ok(RawLayout::new(shape, strides, self.offset))
    }

    /// Whether the layout is contiguous in row-major order: each axis of extent above 1 has
    /// the row-major stride (the strides of axes of extent 1, or of a layout with no elements,
    /// address nothing different).
    pub(crate) fn is_standard(&self) -> bool {
        if self.shape.contains(&0) {
            return true;
        }
        let mut expected = 1isize;
        for (&extent, &stride) in self.shape.iter().zip(&self.strides).rev() {
            if extent != 1 && stride != expected {
                return false;
            }
            expected = expected.wrapping_mul(extent as isize);
        }
        true
    }

    /// The same elements, in the same row-major order, under another shape.
    pub(crate) fn reshaped(&self, shape: Dims) -> Result<Self, ShapeError> {
        let count = element_count(&shape)?;
        let have = self.element_count();
        if count != have {
            return Err(ShapeError::new(
                ShapeErrorKind::IncompatibleShape,
                format!(
                    "a view of shape {:?} ({have} elements) cannot be reshaped to shape {shape:?} ({count} elements)",
                    self.shape
                ),
            ));
        }
        if !self.is_standard() {
            return Err(ShapeError::new(
                ShapeErrorKind::IncompatibleLayout,
                format!(
                    "a view of shape {:?} with strides {:?} is not contiguous in row-major order, so it cannot be reshaped in place; copy it with `to_owned()` first",
                    self.shape, self.strides
                ),
            ));
        }
        // A standard layout with elements addresses exactly `offset..offset + count`, as does
        // the row-major layout of any shape with `count` elements from the same offset.
        let strides = row_major_strides(&shape);
        Ok(RawLayout::new(shape, strides, self.offset))
    }
}

/// The buffer offset of a multi-index, or `None` if it has the wrong length (or the strides
/// do) or is out of range.
pub(crate) fn flat_offset(
    shape: &[usize],
    strides: &[isize],
    offset: isize,
    index: &[usize],
) -> Option<isize> {
    if index.len() != shape.len() || strides.len() != shape.len() {
        return None;
    }
    // A counted loop, not an iterator chain: indexing a tensor element by element is what
    // debug builds do most (tests' references, users' loops), and unoptimized iterator
    // adapters cost several calls per axis.
    let mut at = offset;
    #[allow(clippy::needless_range_loop)]
    for axis in 0..index.len() {
        if index[axis] >= shape[axis] {
            return None;
        }
        at += index[axis] as isize * strides[axis];
    }
    Some(at)
}

/// The offsets of a layout's elements, in row-major order of their multi-indices.
///
/// Yields exactly the offsets of the multi-indices inside the layout's shape, so for a layout
/// proven in bounds of a buffer every item is an offset into that buffer.
#[derive(Clone, Debug)]
pub(crate) struct Offsets {
    shape: Dims,
    strides: Strides,
    /// While `remaining > 0`: a multi-index inside `shape`, the next one to yield.
    index: Dims,
    /// The offset of `index`.
    at: isize,
    remaining: usize,
}

impl Offsets {
    pub(crate) fn new(layout: &RawLayout) -> Self {
        Offsets {
            shape: layout.shape.clone(),
            strides: layout.strides.clone(),
            index: Dims::from_elem(0, layout.shape.len()),
            at: layout.offset,
            remaining: layout.element_count(),
        }
    }
}

impl Iterator for Offsets {
    type Item = isize;

    fn next(&mut self) -> Option<isize> {
        if self.remaining == 0 {
            return None;
        }
        self.remaining -= 1;
        let at = self.at;
        // Row-major odometer: bump the last axis, carry into the ones before it. After the last
        // multi-index it wraps to all zeros, but then `remaining` is zero.
        for axis in (0..self.shape.len()).rev() {
            self.index[axis] += 1;
            self.at = self.at.wrapping_add(self.strides[axis]);
            if self.index[axis] < self.shape[axis] {
                break;
            }
            let span = self.strides[axis].wrapping_mul(self.shape[axis] as isize);
            self.at = self.at.wrapping_sub(span);
            self.index[axis] = 0;
        }
        Some(at)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl ExactSizeIterator for Offsets {}

/// The row-major layout of `shape` over a slice of `len` elements, checked to address exactly
/// them.
pub(crate) fn slice_layout(shape: Dims, len: usize) -> Result<RawLayout, ShapeError> {
    let count = element_count(&shape)?;
    if count != len {
        return Err(ShapeError::new(
            ShapeErrorKind::DataLength,
            format!("shape {shape:?} holds {count} elements but the slice has {len}"),
        ));
    }
    if count > isize::MAX as usize {
        // Only slices of zero-sized elements can be this long; offsets are `isize`.
        return Err(ShapeError::new(
            ShapeErrorKind::Overflow,
            format!("shape {shape:?} has more elements than a view can address"),
        ));
    }
    let strides = row_major_strides(&shape);
    Ok(RawLayout::new(shape, strides, 0))
}

/// Panics for an index outside a shape (the message of every indexing operator).
#[track_caller]
#[cold]
pub(crate) fn outside(index: &[usize], shape: &[usize]) -> ! {
    panic!("index {index:?} is outside shape {shape:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_are_row_major() {
        assert_eq!(row_major_strides(&[2, 3, 4])[..], [12, 4, 1]);
        assert_eq!(row_major_strides(&[])[..], [0isize; 0]);
        assert_eq!(row_major_strides(&[0, 3])[..], [3, 1]);
    }

    #[test]
    fn permute_rejects_repeats_and_wrong_length() {
        assert!(permute(&[2, 3], &[3, 1], &[0, 0]).is_err());
        assert!(permute(&[2, 3], &[3, 1], &[1]).is_err());
        assert_eq!(
            permute(&[2, 3], &[3, 1], &[1, 0]).unwrap(),
            (Dims::from_slice(&[3, 2]), Strides::from_slice(&[1, 3]))
        );
    }

    #[test]
    fn overflowing_shapes_are_errors() {
        let error = element_count(&[usize::MAX, 2]).unwrap_err();
        assert_eq!(error.kind(), ShapeErrorKind::Overflow);
    }

    /// Every layout one operation makes from `layout`, with whether it is one a writable view
    /// may have (all but broadcasts); splits of a `writable` layout are checked disjoint on the
    /// way.
    fn derived(layout: &RawLayout, writable: bool) -> Vec<(RawLayout, bool)> {
        let mut out = Vec::new();
        let rank = layout.shape.len();
        for axis in 0..rank {
            let extent = layout.shape[axis];
            for start in 0..=extent {
                for end in start..=extent {
                    for step in [-3, -2, -1, 1, 2, 3, isize::MIN, isize::MAX] {
                        out.push((layout.clone().sliced_step(axis, start..end, step), true));
                    }
                }
            }
            for index in 0..extent {
                out.push((layout.clone().indexed(axis, index), true));
            }
            for index in 0..=extent {
                let (first, second) = layout.clone().split(axis, index);
                let first_offsets: Vec<isize> = Offsets::new(&first).collect();
                if writable {
                    assert!(Offsets::new(&second).all(|at| !first_offsets.contains(&at)));
                }
                out.push((first, true));
                out.push((second, true));
            }
        }
        if rank >= 2 {
            let mut axes: Vec<usize> = (0..rank).collect();
            axes.swap(0, rank - 1);
            out.push((layout.clone().permuted(&axes), true));
        }
        if let Ok(flat) = layout.reshaped(Dims::from_slice(&[layout.element_count()])) {
            out.push((flat, true));
        }
        let mut wider = Dims::from_slice(&[2]);
        wider.extend_from_slice(&layout.shape);
        out.push((layout.broadcast(wider).unwrap(), false));
        out
    }

    #[test]
    fn derived_layouts_stay_in_bounds_and_writable_ones_distinct() {
        let shape = vec![3, 4, 2];
        let base = RawLayout::new(shape.clone(), row_major_strides(&shape), 0);
        let mut checked = 0;
        for (first, first_writable) in derived(&base, true) {
            for (layout, writable) in derived(&first, first_writable) {
                let offsets: Vec<isize> = Offsets::new(&layout).collect();
                assert_eq!(offsets.len(), layout.element_count());
                assert!(
                    offsets.iter().all(|&at| (0..24).contains(&at)),
                    "{layout:?}"
                );
                if first_writable && writable {
                    let mut sorted = offsets.clone();
                    sorted.sort();
                    sorted.dedup();
                    assert_eq!(sorted.len(), offsets.len(), "{layout:?}");
                }
                checked += 1;
            }
        }
        assert!(checked > 10_000);
    }

    #[test]
    fn empty_layouts_with_huge_extents() {
        let shape = vec![0, usize::MAX, 2];
        let layout =
            RawLayout::new(shape.clone(), row_major_strides(&shape), 0).permuted(&[1, 2, 0]);
        assert_eq!(layout.element_count(), 0);
        assert_eq!(Offsets::new(&layout).count(), 0);
        let indexed = layout.clone().indexed(0, usize::MAX - 1);
        assert_eq!(indexed.element_count(), 0);
        let stepped = layout.sliced_step(0, 0..usize::MAX, -1);
        assert_eq!(stepped.shape[..], [usize::MAX, 2, 0]);
    }
}

//! Shapes → row-major strides and checked element counts; every shape argument of the public API
//! goes through [`IntoShape`] so `[usize; N]`, `&[usize]` and `Vec<usize>` all work.

use crate::error::{ShapeError, ShapeErrorKind};

/// Something that can be read as a list of extents, one per axis.
pub trait IntoShape {
    /// The extents, outermost axis first.
    fn into_shape(self) -> Vec<usize>;
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
}

impl IntoShape for &[usize] {
    fn into_shape(self) -> Vec<usize> {
        self.to_vec()
    }
}

impl<const N: usize> IntoShape for [usize; N] {
    fn into_shape(self) -> Vec<usize> {
        self.to_vec()
    }
}

impl<const N: usize> IntoShape for &[usize; N] {
    fn into_shape(self) -> Vec<usize> {
        self.to_vec()
    }
}

/// The number of elements of `shape`, or an error if it overflows `usize`.
pub(crate) fn element_count(shape: &[usize]) -> Result<usize, ShapeError> {
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
pub(crate) fn row_major_strides(shape: &[usize]) -> Vec<isize> {
    let mut strides = vec![0isize; shape.len()];
    let mut stride = 1isize;
    for (axis, &extent) in shape.iter().enumerate().rev() {
        strides[axis] = stride;
        stride = stride.wrapping_mul(extent.max(1) as isize);
    }
    strides
}

/// Reorders `shape` and `strides` by `axes`, which must be a permutation of `0..rank`.
pub(crate) fn permute(
    shape: &[usize],
    strides: &[isize],
    axes: &[usize],
) -> Result<(Vec<usize>, Vec<isize>), ShapeError> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_are_row_major() {
        assert_eq!(row_major_strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(row_major_strides(&[]), Vec::<isize>::new());
        assert_eq!(row_major_strides(&[0, 3]), vec![3, 1]);
    }

    #[test]
    fn permute_rejects_repeats_and_wrong_length() {
        assert!(permute(&[2, 3], &[3, 1], &[0, 0]).is_err());
        assert!(permute(&[2, 3], &[3, 1], &[1]).is_err());
        assert_eq!(
            permute(&[2, 3], &[3, 1], &[1, 0]).unwrap(),
            (vec![3, 2], vec![1, 3])
        );
    }

    #[test]
    fn overflowing_shapes_are_errors() {
        let error = element_count(&[usize::MAX, 2]).unwrap_err();
        assert_eq!(error.kind(), ShapeErrorKind::Overflow);
    }
}

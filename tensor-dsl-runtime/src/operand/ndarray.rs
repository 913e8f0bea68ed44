//! ndarray arrays (feature `ndarray`) → operands and targets, in place: owned arrays, views and
//! mutable views in any layout (C or Fortran order, slices, negative strides; broadcast views
//! read-only), plus conversions between `Tensor` and `ArrayD`. Fixed-rank arrays (`Ix1` …
//! `Ix6`) carry their rank as a type, so `tensor!` checks it at compile time; their extents are
//! checked at run time like a `Tensor`'s.

use ndarray::{ArrayBase, ArrayD, Data, DataMut, Dimension, IxDyn, RawData};

use crate::element::Element;
use crate::tensor::Tensor;

use super::access::{
    Access, Operand, RawAccess, ReadOnlyTarget, ShapeRef, TargetAccess, TargetOwned, WritableView,
};
use super::extents::{Dynamic, StaticRank};

/// The extents type of an ndarray dimension: a fixed rank, or [`Dynamic`] for `IxDyn`.
pub trait NdExtents {
    /// [`StaticRank<R>`] or [`Dynamic`].
    type Extents: crate::operand::extents::ExtentsType;
}

macro_rules! fixed_rank {
    ($($dim:ident $rank:literal),+) => {
        $(impl NdExtents for ndarray::$dim {
            type Extents = StaticRank<$rank>;
        })+
    };
}

fixed_rank!(Ix0 0, Ix1 1, Ix2 2, Ix3 3, Ix4 4, Ix5 5, Ix6 6);

impl NdExtents for IxDyn {
    type Extents = Dynamic;
}

/// The lowest element's pointer, the number of elements from it to the highest, and the first
/// element's offset from the lowest: what an `Access` needs for any strides, negative ones
/// included. An array without elements spans nothing.
fn span<T>(first: *const T, shape: &[usize], strides: &[isize]) -> (*const T, usize, isize) {
    if shape.contains(&0) {
        return (first, 0, 0);
    }
    let (mut low, mut high) = (0isize, 0isize);
    for (&extent, &stride) in shape.iter().zip(strides) {
        // ndarray guarantees every element's offset from the first fits in `isize`.
        let reach = (extent - 1) as isize * stride;
        if reach < 0 {
            low += reach;
        } else {
            high += reach;
        }
    }
    // The lowest element is an element of the array, so this stays inside its allocation.
    (first.wrapping_offset(low), (high - low) as usize + 1, -low)
}

impl<S, D> Operand for ArrayBase<S, D>
where
    S: Data,
    S::Elem: Element,
    D: Dimension + NdExtents,
{
    type Elem = S::Elem;
    type Extents = D::Extents;
    fn __tdsl_shape(&self) -> ShapeRef<'_> {
        self.shape().into()
    }
    fn __tdsl_operand(&self) -> Access<'_, S::Elem> {
        let (data, len, offset) = span(self.as_ptr(), self.shape(), self.strides());
        Access::new(RawAccess::new(
            data,
            len,
            self.shape(),
            self.strides(),
            offset,
        ))
    }
}

impl<S, D> TargetOwned for ArrayBase<S, D>
where
    S: DataMut + RawData,
    S::Elem: Element,
    D: Dimension,
{
    type Elem = S::Elem;
    fn __tdsl_target(&mut self) -> TargetAccess<'_, S::Elem> {
        // `as_mut_ptr` first: for a shared (`ArcArray`) array it makes the data unique.
        let first = self.as_mut_ptr();
        let (data, len, offset) = span(first.cast_const(), self.shape(), self.strides());
        let raw = RawAccess::new(data, len, self.shape(), self.strides(), offset);
        // SAFETY: `data` comes from `as_mut_ptr` (the array is `DataMut` and borrowed mutably
        // with `self`), and spans exactly the elements its layout reaches.
        unsafe { TargetAccess::new(raw) }
    }
}

/// An `ArrayView` named as a target is a type error on its token (see [`ReadOnlyTarget`]).
impl<A: Element, D: Dimension> ReadOnlyTarget for ArrayBase<ndarray::ViewRepr<&A>, D> {
    type Elem = A;
    fn __tdsl_target(&self) -> TargetAccess<'_, A>
    where
        Self: WritableView,
    {
        unreachable!("no type implements WritableView")
    }
}

impl<T: Element> From<Tensor<T>> for ArrayD<T> {
    /// The tensor's elements in an array of the same shape (row-major, in the tensor's
    /// allocation: no copy, but a tensor of 4 KiB or more that the crate made first moves its
    /// elements to the front of it, one pass, as [`Tensor::into_vec`] does).
    fn from(tensor: Tensor<T>) -> Self {
        let shape = tensor.shape().to_vec();
        ArrayD::from_shape_vec(IxDyn(&shape), tensor.into_vec())
            .expect("a tensor holds exactly as many elements as its shape")
    }
}

impl<S, D> From<&ArrayBase<S, D>> for Tensor<S::Elem>
where
    S: Data,
    S::Elem: Element,
    D: Dimension,
{
    /// A row-major copy of the array's elements, whatever its layout.
    fn from(array: &ArrayBase<S, D>) -> Self {
        let data: Vec<S::Elem> = array.iter().copied().collect();
        Tensor::from_shape_vec(array.shape(), data)
            .expect("an array holds exactly as many elements as its shape")
    }
}

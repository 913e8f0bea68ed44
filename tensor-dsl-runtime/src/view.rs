//! Strided views → `TensorView` (shared, read-only) and `TensorViewMut` (writable); permuting and
//! slicing change only the layout, never copy. Invariant: every offset a view can address lies
//! inside the buffer it was made from.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

use crate::element::Element;
use crate::shape::{permute, slice};
use crate::tensor::Tensor;

/// Shape, strides and start offset of a view into a buffer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RawLayout {
    pub(crate) shape: Vec<usize>,
    pub(crate) strides: Vec<isize>,
    pub(crate) offset: isize,
}

impl RawLayout {
    pub(crate) fn new(shape: Vec<usize>, strides: Vec<isize>, offset: isize) -> Self {
        RawLayout {
            shape,
            strides,
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

    #[track_caller]
    pub(crate) fn sliced(mut self, axis: usize, range: Range<usize>) -> Self {
        let (shift, extent) = match slice(&self.shape, &self.strides, axis, range) {
            Ok(sliced) => sliced,
            Err(error) => panic!("{error}"),
        };
        self.offset += shift;
        self.shape[axis] = extent;
        self
    }
}

/// The buffer offset of a multi-index, or `None` if it has the wrong length or is out of range.
pub(crate) fn flat_offset(
    shape: &[usize],
    strides: &[isize],
    offset: isize,
    index: &[usize],
) -> Option<isize> {
    if index.len() != shape.len() {
        return None;
    }
    index
        .iter()
        .zip(shape)
        .zip(strides)
        .try_fold(offset, |at, ((&i, &extent), &stride)| {
            (i < extent).then(|| at + i as isize * stride)
        })
}

/// Visits every multi-index of `shape` in row-major order with its buffer offset.
pub(crate) fn for_each_offset(layout: &RawLayout, mut f: impl FnMut(isize)) {
    let RawLayout {
        shape,
        strides,
        offset,
    } = layout;
    if shape.contains(&0) {
        return;
    }
    let mut index = vec![0usize; shape.len()];
    let mut at = *offset;
    loop {
        f(at);
        let mut axis = shape.len();
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            at += strides[axis];
            if index[axis] < shape[axis] {
                break;
            }
            at -= strides[axis] * shape[axis] as isize;
            index[axis] = 0;
        }
    }
}

/// A read-only strided view of a tensor's elements (a transposed, permuted or sliced tensor).
///
/// Made by [`Tensor::view`]; [`permuted_axes`](Self::permuted_axes) and
/// [`slice_axis`](Self::slice_axis) return new views of the same elements without copying.
pub struct TensorView<'a, T> {
    data: *const T,
    len: usize,
    layout: RawLayout,
    _borrow: PhantomData<&'a [T]>,
}

// SAFETY: a `TensorView` is a shared borrow of `[T]` with a layout; it can cross threads exactly
// when `&[T]` can.
unsafe impl<T: Sync> Send for TensorView<'_, T> {}
unsafe impl<T: Sync> Sync for TensorView<'_, T> {}

impl<T> Clone for TensorView<'_, T> {
    fn clone(&self) -> Self {
        TensorView {
            data: self.data,
            len: self.len,
            layout: self.layout.clone(),
            _borrow: PhantomData,
        }
    }
}

impl<'a, T> TensorView<'a, T> {
    /// `data` must be valid for reads of `len` elements for `'a`, and every offset addressable
    /// through `layout` must lie in `0..len`.
    pub(crate) fn from_raw(data: *const T, len: usize, layout: RawLayout) -> Self {
        TensorView {
            data,
            len,
            layout,
            _borrow: PhantomData,
        }
    }

    pub(crate) fn raw(&self) -> (*const T, usize, &RawLayout) {
        (self.data, self.len, &self.layout)
    }

    /// The element at a multi-index, or `None` if the index is out of range.
    pub fn get(&self, index: &[usize]) -> Option<&'a T> {
        let at = self.layout.offset_of(index)?;
        // SAFETY: `offset_of` only returns offsets addressable through the layout, which the
        // constructor guarantees lie inside the borrowed buffer.
        Some(unsafe { &*self.data.offset(at) })
    }
}

/// A writable strided view of a tensor's elements, usable as a `tensor!` target or operand.
///
/// Made by [`Tensor::view_mut`]. A `tensor!` block writes through it without needing a `mut`
/// binding, so the view behaves like a `Cell`: it can move to another thread but not be shared
/// between threads, and reading methods return values, not references.
pub struct TensorViewMut<'a, T> {
    data: *mut T,
    len: usize,
    layout: RawLayout,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a `TensorViewMut` is an exclusive borrow of `[T]`; moving it to another thread moves
// that borrow. It is deliberately not `Sync`: generated code writes through `&TensorViewMut`.
unsafe impl<T: Send> Send for TensorViewMut<'_, T> {}

impl<'a, T> TensorViewMut<'a, T> {
    /// `data` must be valid for reads and writes of `len` elements for `'a` with no other
    /// access, and every offset addressable through `layout` must lie in `0..len`.
    pub(crate) fn from_raw(data: *mut T, len: usize, layout: RawLayout) -> Self {
        TensorViewMut {
            data,
            len,
            layout,
            _borrow: PhantomData,
        }
    }

    pub(crate) fn raw(&self) -> (*mut T, usize, &RawLayout) {
        (self.data, self.len, &self.layout)
    }

    /// A read-only view of the same elements, borrowing this one exclusively.
    pub fn view(&mut self) -> TensorView<'_, T> {
        TensorView::from_raw(self.data, self.len, self.layout.clone())
    }

    /// A shorter-lived writable view of the same elements.
    pub fn reborrow(&mut self) -> TensorViewMut<'_, T> {
        TensorViewMut::from_raw(self.data, self.len, self.layout.clone())
    }
}

impl<T: Copy> TensorViewMut<'_, T> {
    /// The element at a multi-index, or `None` if the index is out of range.
    pub fn get(&self, index: &[usize]) -> Option<T> {
        let at = self.layout.offset_of(index)?;
        // SAFETY: in-layout offsets lie inside the buffer; the view is not `Sync`, so no other
        // thread writes while this thread reads.
        Some(unsafe { self.data.offset(at).read() })
    }

    /// Writes the element at a multi-index; returns `false` (and writes nothing) if the index
    /// is out of range.
    pub fn set(&mut self, index: &[usize], value: T) -> bool {
        match self.layout.offset_of(index) {
            Some(at) => {
                // SAFETY: as in `get`, and `&mut self` excludes every other access.
                unsafe { self.data.offset(at).write(value) };
                true
            }
            None => false,
        }
    }
}

/// The layout methods both view kinds share: reading the layout, making new layouts over the
/// same elements, copying the elements out.
macro_rules! view_layout_methods {
    ($view:ident) => {
        impl<T> $view<'_, T> {
            /// The extent of each axis.
            pub fn shape(&self) -> &[usize] {
                &self.layout.shape
            }

            /// The stride of each axis, in elements (may be negative or zero).
            pub fn strides(&self) -> &[isize] {
                &self.layout.strides
            }

            /// The number of axes.
            pub fn ndim(&self) -> usize {
                self.layout.shape.len()
            }

            /// The same elements with axes reordered: axis `k` of the result is axis
            /// `axes[k]` of `self`.
            ///
            /// # Panics
            /// If `axes` is not a permutation of `0..ndim`.
            #[track_caller]
            pub fn permuted_axes(self, axes: &[usize]) -> Self {
                $view {
                    layout: self.layout.permuted(axes),
                    ..self
                }
            }

            /// The elements whose index on `axis` lies in `range`, renumbered from zero.
            ///
            /// # Panics
            /// If `axis` does not exist or `range` is not inside it.
            #[track_caller]
            pub fn slice_axis(self, axis: usize, range: Range<usize>) -> Self {
                $view {
                    layout: self.layout.sliced(axis, range),
                    ..self
                }
            }
        }

        impl<T: Element> $view<'_, T> {
            /// A contiguous row-major copy of the viewed elements.
            pub fn to_tensor(&self) -> Tensor<T> {
                let mut data = Vec::new();
                for_each_offset(&self.layout, |at| {
                    // SAFETY: offsets from the layout lie inside the buffer (type invariant);
                    // a writable view is not `Sync`, so nothing writes meanwhile.
                    data.push(unsafe { self.data.offset(at).read() })
                });
                Tensor::from_shape_vec(self.layout.shape.clone(), data)
                    .expect("a view holds exactly the product of its extents")
            }
        }

        impl<T> fmt::Debug for $view<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($view))
                    .field("shape", &self.layout.shape)
                    .field("strides", &self.layout.strides)
                    .finish()
            }
        }
    };
}

view_layout_methods!(TensorView);
view_layout_methods!(TensorViewMut);

#[cfg(test)]
mod tests {
    use super::*;

    fn counting(shape: [usize; 3]) -> Tensor<f64> {
        let mut next = 0.0;
        Tensor::from_fn(shape, |_| {
            next += 1.0;
            next
        })
    }

    #[test]
    fn permuted_and_sliced_views_address_the_right_elements() {
        let t = counting([2, 3, 4]);
        let v = t.view().permuted_axes(&[2, 0, 1]).slice_axis(2, 1..3);
        assert_eq!(v.shape(), &[4, 2, 2]);
        for l in 0..4 {
            for i in 0..2 {
                for j in 0..2 {
                    assert_eq!(v.get(&[l, i, j]), t.get(&[i, j + 1, l]));
                }
            }
        }
        let copy = v.to_tensor();
        assert_eq!(copy.get(&[3, 1, 1]), t.get(&[1, 2, 3]));
    }

    #[test]
    fn view_mut_writes_through() {
        let mut t = counting([2, 2, 2]);
        let mut v = t.view_mut().permuted_axes(&[2, 1, 0]);
        assert!(v.set(&[1, 0, 0], -1.0));
        assert!(!v.set(&[2, 0, 0], -1.0));
        assert_eq!(t[[0, 0, 1]], -1.0);
    }

    #[test]
    #[should_panic(expected = "outside axis 1")]
    fn slicing_past_the_end_panics() {
        let t = counting([2, 3, 4]);
        let _ = t.view().slice_axis(1, 2..4);
    }
}

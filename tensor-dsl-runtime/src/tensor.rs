//! `Tensor<T>`: an owned, contiguous, row-major tensor; the result type of every `let` in
//! `tensor!` and the simplest operand.

use std::ops::{Index, IndexMut};

use crate::element::Element;
use crate::error::{ShapeError, ShapeErrorKind};
use crate::shape::{element_count, row_major_strides, IntoShape};
use crate::view::{flat_offset, RawLayout, TensorView, TensorViewMut};

/// An owned tensor: elements stored contiguously in row-major order (last axis fastest).
///
/// Invariant: `data.len()` is the product of `shape`, and `strides` are the row-major strides of
/// `shape`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor<T> {
    data: Vec<T>,
    shape: Vec<usize>,
    strides: Vec<isize>,
}

impl<T: Element> Tensor<T> {
    /// A tensor of the given shape filled with zeros.
    ///
    /// # Panics
    /// If the element count overflows `usize`.
    #[track_caller]
    pub fn zeros(shape: impl IntoShape) -> Self {
        let shape = shape.into_shape();
        let count = match element_count(&shape) {
            Ok(count) => count,
            Err(error) => panic!("{error}"),
        };
        Self::from_parts(vec![T::ZERO; count], shape)
    }

    /// A tensor of the given shape whose element at each multi-index is `f(index)`, filled in
    /// row-major order.
    #[track_caller]
    pub fn from_fn(shape: impl IntoShape, mut f: impl FnMut(&[usize]) -> T) -> Self {
        let shape = shape.into_shape();
        let count = match element_count(&shape) {
            Ok(count) => count,
            Err(error) => panic!("{error}"),
        };
        let mut data = Vec::with_capacity(count);
        let mut index = vec![0usize; shape.len()];
        for _ in 0..count {
            data.push(f(&index));
            // Row-major odometer: bump the last axis, carry into the ones before it.
            for axis in (0..shape.len()).rev() {
                index[axis] += 1;
                if index[axis] < shape[axis] {
                    break;
                }
                index[axis] = 0;
            }
        }
        Self::from_parts(data, shape)
    }
}

impl<T> Tensor<T> {
    /// A tensor of the given shape holding `data` in row-major order.
    ///
    /// Fails with [`ShapeErrorKind::DataLength`] when `data.len()` differs from the product of
    /// the extents.
    pub fn from_shape_vec(shape: impl IntoShape, data: Vec<T>) -> Result<Self, ShapeError> {
        let shape = shape.into_shape();
        let count = element_count(&shape)?;
        if data.len() != count {
            return Err(ShapeError::new(
                ShapeErrorKind::DataLength,
                format!(
                    "shape {shape:?} holds {count} elements but {} were given",
                    data.len()
                ),
            ));
        }
        Ok(Self::from_parts(data, shape))
    }

    fn from_parts(data: Vec<T>, shape: Vec<usize>) -> Self {
        let strides = row_major_strides(&shape);
        Tensor {
            data,
            shape,
            strides,
        }
    }

    /// The extent of each axis.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The row-major strides, in elements.
    pub fn strides(&self) -> &[isize] {
        &self.strides
    }

    /// The number of axes.
    pub fn ndim(&self) -> usize {
        self.shape.len()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// Whether the tensor has no elements (some extent is zero).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The elements in row-major order.
    pub fn as_slice(&self) -> &[T] {
        &self.data
    }

    /// The elements in row-major order, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data
    }

    /// The elements in row-major order, by value.
    pub fn into_vec(self) -> Vec<T> {
        self.data
    }

    /// The element at a multi-index, or `None` when the index has the wrong length or lies
    /// outside the shape.
    pub fn get(&self, index: &[usize]) -> Option<&T> {
        let offset = flat_offset(&self.shape, &self.strides, 0, index)?;
        self.data.get(offset as usize)
    }

    /// The element at a multi-index, mutably.
    pub fn get_mut(&mut self, index: &[usize]) -> Option<&mut T> {
        let offset = flat_offset(&self.shape, &self.strides, 0, index)?;
        self.data.get_mut(offset as usize)
    }

    /// A read-only strided view of the whole tensor.
    pub fn view(&self) -> TensorView<'_, T> {
        let layout = RawLayout::new(self.shape.clone(), self.strides.clone(), 0);
        TensorView::from_raw(self.data.as_ptr(), self.data.len(), layout)
    }

    /// A writable strided view of the whole tensor.
    pub fn view_mut(&mut self) -> TensorViewMut<'_, T> {
        let layout = RawLayout::new(self.shape.clone(), self.strides.clone(), 0);
        TensorViewMut::from_raw(self.data.as_mut_ptr(), self.data.len(), layout)
    }
}

impl<T, const N: usize> Index<[usize; N]> for Tensor<T> {
    type Output = T;

    #[track_caller]
    fn index(&self, index: [usize; N]) -> &T {
        // A `match`, not `unwrap_or_else`: a panic inside a closure would be reported at the
        // closure, here, instead of at the caller's indexing expression.
        match flat_offset(&self.shape, &self.strides, 0, &index) {
            Some(offset) => &self.data[offset as usize],
            None => outside(&index, &self.shape),
        }
    }
}

impl<T, const N: usize> IndexMut<[usize; N]> for Tensor<T> {
    #[track_caller]
    fn index_mut(&mut self, index: [usize; N]) -> &mut T {
        match flat_offset(&self.shape, &self.strides, 0, &index) {
            Some(offset) => &mut self.data[offset as usize],
            None => outside(&index, &self.shape),
        }
    }
}

#[track_caller]
#[cold]
fn outside(index: &[usize], shape: &[usize]) -> ! {
    panic!("index {index:?} is outside shape {shape:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_shape_vec_checks_the_length() {
        let error = Tensor::from_shape_vec([2, 3], vec![0.0f64; 5]).unwrap_err();
        assert_eq!(error.kind(), ShapeErrorKind::DataLength);
        assert!(error.to_string().contains("[2, 3]"));
        let tensor = Tensor::from_shape_vec(vec![2, 3], vec![1.0f32; 6]).unwrap();
        assert_eq!(tensor.shape(), &[2, 3]);
    }

    #[test]
    fn from_fn_fills_row_major() {
        let tensor = Tensor::<f64>::from_fn(&[2, 3][..], |ix| (ix[0] * 10 + ix[1]) as f64);
        assert_eq!(tensor.as_slice(), &[0.0, 1.0, 2.0, 10.0, 11.0, 12.0]);
        assert_eq!(tensor[[1, 2]], 12.0);
        assert_eq!(tensor.get(&[2, 0]), None);
    }

    #[test]
    fn zero_extents_and_rank_zero() {
        let empty = Tensor::<f32>::zeros([3, 0]);
        assert!(empty.is_empty());
        let scalar = Tensor::<f32>::from_fn([0usize; 0], |_| 4.0);
        assert_eq!(scalar.as_slice(), &[4.0]);
    }
}

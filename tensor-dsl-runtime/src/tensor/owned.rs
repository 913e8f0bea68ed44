//! `Tensor<T>`: an owned, contiguous, row-major tensor; the result type of every `let` in
//! `tensor!` and the simplest operand.

use std::fmt;
use std::ops::{Index, IndexMut};

use crate::element::Element;
use crate::error::{ShapeError, ShapeErrorKind};

use super::layout::{
    element_count, flat_offset, outside, row_major_strides, Dims, IntoShape, RawLayout, Strides,
};
use super::memory::{advise_huge_pages, zeroed};
use super::view::{TensorView, TensorViewMut};

/// An owned tensor: elements stored contiguously in row-major order (last axis fastest).
///
/// Invariant: `data.len()` is the product of `shape`, and `strides` are the row-major strides of
/// `shape`.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor<T> {
    data: Vec<T>,
    shape: Dims,
    strides: Strides,
}

impl<T: Element> Tensor<T> {
    /// A tensor of the given shape filled with zeros.
    ///
    /// # Panics
    /// If the element count overflows `usize`.
    #[track_caller]
    pub fn zeros(shape: impl IntoShape) -> Self {
        let shape = shape.__tdsl_dims();
        let count = match element_count(&shape) {
            Ok(count) => count,
            Err(error) => panic!("{error}"),
        };
        // A large buffer is zeroed by the allocator, which for a real or integer type usually
        // maps fresh pages, not yet touched: the advice then reaches them before the first
        // write. Where it zeroes them itself (complex types, or a buffer from the heap), the
        // kernel may still move the pages to huge ones later.
        let data = zeroed(count);
        advise_huge_pages(&data);
        Self::from_parts(data, shape)
    }

    /// A tensor of the given shape whose element at each multi-index is `f(index)`, filled in
    /// row-major order.
    #[track_caller]
    pub fn from_fn(shape: impl IntoShape, mut f: impl FnMut(&[usize]) -> T) -> Self {
        let shape = shape.__tdsl_dims();
        let count = match element_count(&shape) {
            Ok(count) => count,
            Err(error) => panic!("{error}"),
        };
        let mut data = Vec::with_capacity(count);
        advise_huge_pages(&data);
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

    /// ndarray's name for [`from_fn`](Self::from_fn): the element at each multi-index is
    /// `f(index)`.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let t = Tensor::<f32>::from_shape_fn([2, 2], |ix| (ix[0] * 2 + ix[1]) as f32);
    /// assert_eq!(t.as_slice(), &[0.0, 1.0, 2.0, 3.0]);
    /// ```
    #[track_caller]
    pub fn from_shape_fn(shape: impl IntoShape, f: impl FnMut(&[usize]) -> T) -> Self {
        Self::from_fn(shape, f)
    }

    /// A tensor of the given shape filled with ones.
    ///
    /// # Panics
    /// If the element count overflows `usize`.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let t = Tensor::<f64>::ones([2, 3]);
    /// assert!(t.iter().all(|&x| x == 1.0));
    /// ```
    #[track_caller]
    pub fn ones(shape: impl IntoShape) -> Self {
        Self::full(shape, T::ONE)
    }

    /// The `n × n` identity matrix.
    ///
    /// # Panics
    /// If `n * n` overflows `usize`.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let i = Tensor::<f64>::eye(2);
    /// assert_eq!(i.as_slice(), &[1.0, 0.0, 0.0, 1.0]);
    /// ```
    #[track_caller]
    pub fn eye(n: usize) -> Self {
        let mut eye = Self::zeros([n, n]);
        let one = T::ONE;
        for k in 0..n {
            eye[[k, k]] = one;
        }
        eye
    }
}

impl<T: Clone> Tensor<T> {
    /// A tensor of the given shape with every element `value`.
    ///
    /// # Panics
    /// If the element count overflows `usize`.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let t = Tensor::full([2, 2], 0.5f32);
    /// assert_eq!(t.as_slice(), &[0.5; 4]);
    /// ```
    #[track_caller]
    pub fn full(shape: impl IntoShape, value: T) -> Self {
        let shape = shape.__tdsl_dims();
        let count = match element_count(&shape) {
            Ok(count) => count,
            Err(error) => panic!("{error}"),
        };
        let mut data = Vec::with_capacity(count);
        advise_huge_pages(&data);
        data.resize(count, value);
        Self::from_parts(data, shape)
    }

    /// Sets every element to `value`.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let mut t = Tensor::<f64>::zeros([3]);
    /// t.fill(2.0);
    /// assert_eq!(t.as_slice(), &[2.0; 3]);
    /// ```
    pub fn fill(&mut self, value: T) {
        self.data.fill(value);
    }

    /// A tensor of the same shape holding `f` of each element by value, in row-major order
    /// (ndarray's `mapv`).
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let t = Tensor::from_shape_vec([2], vec![1.0, 4.0]).unwrap();
    /// assert_eq!(t.mapv(f64::sqrt).as_slice(), &[1.0, 2.0]);
    /// assert_eq!(t.mapv(|x| x > 2.0).as_slice(), &[false, true]);
    /// ```
    pub fn mapv<U>(&self, mut f: impl FnMut(T) -> U) -> Tensor<U> {
        self.map(|x| f(x.clone()))
    }

    /// Replaces each element by `f` of it (ndarray's `mapv_inplace`).
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let mut t = Tensor::from_shape_vec([2], vec![1.0, -2.0]).unwrap();
    /// t.mapv_inplace(|x: f64| x.abs());
    /// assert_eq!(t.as_slice(), &[1.0, 2.0]);
    /// ```
    pub fn mapv_inplace(&mut self, mut f: impl FnMut(T) -> T) {
        for x in &mut self.data {
            *x = f(x.clone());
        }
    }
}

impl<T> Tensor<T> {
    /// A tensor of the given shape holding `data` in row-major order.
    ///
    /// Fails with [`ShapeErrorKind::DataLength`] when `data.len()` differs from the product of
    /// the extents.
    pub fn from_shape_vec(shape: impl IntoShape, data: Vec<T>) -> Result<Self, ShapeError> {
        let shape = shape.__tdsl_dims();
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

    fn from_parts(data: Vec<T>, shape: Dims) -> Self {
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

    /// The elements by reference, in row-major order.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let t = Tensor::<f64>::from_fn([2, 2], |ix| ix[1] as f64);
    /// assert_eq!(t.iter().sum::<f64>(), 2.0);
    /// ```
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.data.iter()
    }

    /// The elements by mutable reference, in row-major order.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let mut t = Tensor::<f64>::ones([2]);
    /// for (k, x) in t.iter_mut().enumerate() {
    ///     *x += k as f64;
    /// }
    /// assert_eq!(t.as_slice(), &[1.0, 2.0]);
    /// ```
    pub fn iter_mut(&mut self) -> std::slice::IterMut<'_, T> {
        self.data.iter_mut()
    }

    /// A tensor of the same shape holding `f` of each element by reference, in row-major
    /// order (ndarray's `map`).
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let t = Tensor::from_shape_vec([3], vec![1.0, 2.0, 3.0]).unwrap();
    /// let doubled: Tensor<f64> = t.map(|x| x * 2.0);
    /// assert_eq!(doubled.as_slice(), &[2.0, 4.0, 6.0]);
    /// ```
    pub fn map<U>(&self, f: impl FnMut(&T) -> U) -> Tensor<U> {
        let data: Vec<U> = self.data.iter().map(f).collect();
        Tensor::from_parts(data, self.shape.clone())
    }

    /// A view of the elements under another shape with as many elements, in the same row-major
    /// order (a tensor is contiguous, so this never copies).
    ///
    /// Fails with [`ShapeErrorKind::IncompatibleShape`] when the element counts differ.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let t = Tensor::<f64>::from_fn([2, 3], |ix| (3 * ix[0] + ix[1]) as f64);
    /// let v = t.reshape([3, 2]).unwrap();
    /// assert_eq!(v[[2, 0]], 4.0);
    /// assert!(t.reshape([4]).is_err());
    /// ```
    pub fn reshape(&self, shape: impl IntoShape) -> Result<TensorView<'_, T>, ShapeError> {
        self.view().reshape(shape)
    }

    /// The tensor under another shape with as many elements, its elements moved, not copied
    /// (the owned counterpart of [`reshape`](Self::reshape)).
    ///
    /// Fails with [`ShapeErrorKind::IncompatibleShape`] when the element counts differ.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let t = Tensor::<f64>::zeros([2, 3]).into_shape([6, 1]).unwrap();
    /// assert_eq!(t.shape(), &[6, 1]);
    /// ```
    pub fn into_shape(self, shape: impl IntoShape) -> Result<Tensor<T>, ShapeError> {
        let shape = shape.__tdsl_dims();
        let count = element_count(&shape)?;
        if count != self.data.len() {
            return Err(ShapeError::new(
                ShapeErrorKind::IncompatibleShape,
                format!(
                    "a tensor of shape {:?} ({} elements) cannot be reshaped to shape {shape:?} ({count} elements)",
                    self.shape,
                    self.data.len()
                ),
            ));
        }
        Ok(Self::from_parts(self.data, shape))
    }

    /// A read-only view repeating the elements to `shape` by numpy's broadcasting rules; see
    /// [`TensorView::broadcast`].
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let column = Tensor::from_shape_vec([2, 1], vec![1.0, 2.0]).unwrap();
    /// let b = column.broadcast([2, 3]).unwrap();
    /// assert_eq!(b.to_owned().as_slice(), &[1.0, 1.0, 1.0, 2.0, 2.0, 2.0]);
    /// ```
    pub fn broadcast(&self, shape: impl IntoShape) -> Result<TensorView<'_, T>, ShapeError> {
        self.view().broadcast(shape)
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

impl<T> Index<&[usize]> for Tensor<T> {
    type Output = T;

    #[track_caller]
    fn index(&self, index: &[usize]) -> &T {
        match flat_offset(&self.shape, &self.strides, 0, index) {
            Some(offset) => &self.data[offset as usize],
            None => outside(index, &self.shape),
        }
    }
}

impl<T> IndexMut<&[usize]> for Tensor<T> {
    #[track_caller]
    fn index_mut(&mut self, index: &[usize]) -> &mut T {
        match flat_offset(&self.shape, &self.strides, 0, index) {
            Some(offset) => &mut self.data[offset as usize],
            None => outside(index, &self.shape),
        }
    }
}

impl<'a, T> IntoIterator for &'a Tensor<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.data.iter()
    }
}

impl<'a, T> IntoIterator for &'a mut Tensor<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.data.iter_mut()
    }
}

/// ndarray's format, as for [`TensorView`]: nested brackets, rank 0 as the bare element, the
/// middle of an axis of more than six elements as `...` unless the format is alternate
/// (`{:#}`).
///
/// ```
/// use tensor_dsl_runtime::Tensor;
///
/// let t = Tensor::<f64>::from_fn([2, 2, 2], |ix| (4 * ix[0] + 2 * ix[1] + ix[2]) as f64);
/// assert_eq!(t.to_string(), "[[[0, 1],\n  [2, 3]],\n\n [[4, 5],\n  [6, 7]]]");
/// let long = Tensor::<f64>::from_fn([10], |ix| ix[0] as f64);
/// assert_eq!(long.to_string(), "[0, 1, 2, ..., 7, 8, 9]");
/// assert_eq!(format!("{long:#}"), "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]");
/// assert_eq!(Tensor::<f32>::full([0usize; 0], 2.5).to_string(), "2.5");
/// ```
impl<T: fmt::Display> fmt::Display for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.view(), f)
    }
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

//! `Tensor<T>`: an owned, contiguous, row-major tensor; the result type of every `let` in
//! `tensor!` and the simplest operand.

use std::fmt;
use std::ops::{Index, IndexMut};

use crate::element::Element;
use crate::error::{ShapeError, ShapeErrorKind};

use super::layout::{
    element_count, flat_offset, outside, row_major_strides, Dims, IntoShape, RawLayout, Strides,
};
use super::memory::{advise_huge_pages, line_buffer, line_padding, line_start, zeroed};
use super::view::{TensorView, TensorViewMut};

/// An owned tensor: elements stored contiguously in row-major order (last axis fastest).
///
/// Invariant: `data.len()` is `start` plus the product of `shape`, the tensor's elements are
/// `data[start..]`, and `strides` are the row-major strides of `shape`. The `start` elements
/// before them are padding (initialized values of `T`, never read as the tensor's), so that a
/// large tensor made here starts on a cache line (`memory::line_padding`).
pub struct Tensor<T> {
    data: Vec<T>,
    start: usize,
    shape: Dims,
    strides: Strides,
}

impl<T: Clone> Clone for Tensor<T> {
    /// A copy of the elements in a buffer of its own, starting on a cache line as a new tensor
    /// does.
    fn clone(&self) -> Self {
        let elements = self.as_slice();
        let (mut data, start) = line_buffer(elements.len());
        if let Some(first) = elements.first() {
            data.resize(start, first.clone());
        }
        data.extend_from_slice(elements);
        let start = data.len() - elements.len();
        Tensor {
            data,
            start,
            shape: self.shape.clone(),
            strides: self.strides.clone(),
        }
    }
}

impl<T: PartialEq> PartialEq for Tensor<T> {
    /// Equal shapes and equal elements (wherever each tensor's buffer starts them).
    fn eq(&self, other: &Self) -> bool {
        self.shape == other.shape && self.as_slice() == other.as_slice()
    }
}

impl<T: fmt::Debug> fmt::Debug for Tensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tensor")
            .field("data", &self.as_slice())
            .field("shape", &self.shape)
            .field("strides", &self.strides)
            .finish()
    }
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
        let padding = line_padding::<T>(count);
        let mut data = zeroed(count.saturating_add(padding));
        advise_huge_pages(&data);
        let start = line_start(data.as_ptr(), padding);
        data.truncate(start + count);
        Self::from_parts_at(data, start, shape)
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
        let (mut data, start) = line_buffer(count);
        data.resize(start, T::ZERO);
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
        Self::from_parts_at(data, start, shape)
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
        let (mut data, start) = line_buffer(count);
        data.resize(start + count, value);
        Self::from_parts_at(data, start, shape)
    }

    /// The tensor of `shape` holding `elements` in row-major order, as many as the extents
    /// multiply to, starting on a cache line as the constructors above do (a view's copy).
    ///
    /// # Panics
    /// If the element count overflows `usize`, or `elements` holds another number.
    pub(crate) fn from_elements(shape: &[usize], elements: impl IntoIterator<Item = T>) -> Self {
        let shape = shape.__tdsl_dims();
        let count = match element_count(&shape) {
            Ok(count) => count,
            Err(error) => panic!("{error}"),
        };
        let (mut data, start) = line_buffer(count);
        let mut elements = elements.into_iter().peekable();
        if let Some(first) = elements.peek() {
            data.resize(start, first.clone());
        }
        let start = data.len();
        data.extend(elements);
        assert_eq!(
            data.len(),
            start + count,
            "tensor-dsl bug: {count} elements expected"
        );
        Self::from_parts_at(data, start, shape)
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
        self.as_mut_slice().fill(value);
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
        for x in self.as_mut_slice() {
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
        Self::from_parts_at(data, 0, shape)
    }

    /// The tensor of `shape` whose elements are `data[start..]`.
    fn from_parts_at(data: Vec<T>, start: usize, shape: Dims) -> Self {
        let strides = row_major_strides(&shape);
        Tensor {
            data,
            start,
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
        self.data.len() - self.start
    }

    /// Whether the tensor has no elements (some extent is zero).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The elements in row-major order.
    pub fn as_slice(&self) -> &[T] {
        &self.data[self.start..]
    }

    /// The elements in row-major order, mutably.
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.data[self.start..]
    }

    /// The elements in row-major order, by value. A tensor built from a `Vec`
    /// ([`from_shape_vec`](Self::from_shape_vec)) gives it back as it was; one made here of 4 KiB
    /// or more starts its elements on a cache line, up to 60 bytes into its allocation, and
    /// those are moved to the front first (one pass over the elements).
    pub fn into_vec(self) -> Vec<T> {
        let mut data = self.data;
        data.drain(..self.start);
        data
    }

    /// The tensor's allocation, its padding included, for reuse as storage whose contents the
    /// taker overwrites (no element moved, unlike [`into_vec`](Self::into_vec)): distributed
    /// tensors' buffers, pooled between moves.
    #[cfg(feature = "mpi")]
    pub(crate) fn into_storage(self) -> Vec<T> {
        self.data
    }

    /// The element at a multi-index, or `None` when the index has the wrong length or lies
    /// outside the shape.
    pub fn get(&self, index: &[usize]) -> Option<&T> {
        let offset = flat_offset(&self.shape, &self.strides, 0, index)?;
        self.as_slice().get(offset as usize)
    }

    /// The element at a multi-index, mutably.
    pub fn get_mut(&mut self, index: &[usize]) -> Option<&mut T> {
        let offset = flat_offset(&self.shape, &self.strides, 0, index)?;
        self.as_mut_slice().get_mut(offset as usize)
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
        self.as_slice().iter()
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
        self.as_mut_slice().iter_mut()
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
        let data: Vec<U> = self.as_slice().iter().map(f).collect();
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
        if count != self.len() {
            return Err(ShapeError::new(
                ShapeErrorKind::IncompatibleShape,
                format!(
                    "a tensor of shape {:?} ({} elements) cannot be reshaped to shape {shape:?} ({count} elements)",
                    self.shape,
                    self.len()
                ),
            ));
        }
        Ok(Self::from_parts_at(self.data, self.start, shape))
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
        let elements = self.as_slice();
        TensorView::from_raw(elements.as_ptr(), elements.len(), layout)
    }

    /// A writable strided view of the whole tensor.
    pub fn view_mut(&mut self) -> TensorViewMut<'_, T> {
        let layout = RawLayout::new(self.shape.clone(), self.strides.clone(), 0);
        let elements = self.as_mut_slice();
        TensorViewMut::from_raw(elements.as_mut_ptr(), elements.len(), layout)
    }
}

impl<T, const N: usize> Index<[usize; N]> for Tensor<T> {
    type Output = T;

    #[track_caller]
    fn index(&self, index: [usize; N]) -> &T {
        // A `match`, not `unwrap_or_else`: a panic inside a closure would be reported at the
        // closure, here, instead of at the caller's indexing expression.
        match flat_offset(&self.shape, &self.strides, 0, &index) {
            Some(offset) => &self.as_slice()[offset as usize],
            None => outside(&index, &self.shape),
        }
    }
}

impl<T, const N: usize> IndexMut<[usize; N]> for Tensor<T> {
    #[track_caller]
    fn index_mut(&mut self, index: [usize; N]) -> &mut T {
        match flat_offset(&self.shape, &self.strides, 0, &index) {
            Some(offset) => &mut self.as_mut_slice()[offset as usize],
            None => outside(&index, &self.shape),
        }
    }
}

impl<T> Index<&[usize]> for Tensor<T> {
    type Output = T;

    #[track_caller]
    fn index(&self, index: &[usize]) -> &T {
        match flat_offset(&self.shape, &self.strides, 0, index) {
            Some(offset) => &self.as_slice()[offset as usize],
            None => outside(index, &self.shape),
        }
    }
}

impl<T> IndexMut<&[usize]> for Tensor<T> {
    #[track_caller]
    fn index_mut(&mut self, index: &[usize]) -> &mut T {
        match flat_offset(&self.shape, &self.strides, 0, index) {
            Some(offset) => &mut self.as_mut_slice()[offset as usize],
            None => outside(index, &self.shape),
        }
    }
}

impl<'a, T> IntoIterator for &'a Tensor<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl<'a, T> IntoIterator for &'a mut Tensor<T> {
    type Item = &'a mut T;
    type IntoIter = std::slice::IterMut<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_mut_slice().iter_mut()
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
    fn large_tensors_start_on_a_cache_line_and_keep_their_elements() {
        let on_line = |elements: &[f32]| (elements.as_ptr() as usize).is_multiple_of(64);
        // 1024 f32s: 4 KiB, the smallest padded size; 1023 are not padded.
        for count in [1024, 1025, 4099, 1 << 20] {
            let zeros = Tensor::<f32>::zeros([count]);
            let counted = Tensor::<f32>::from_fn([count], |ix| ix[0] as f32);
            let full = Tensor::<f32>::full([count], 0.5);
            let copy = counted.clone();
            for (what, tensor) in [("zeros", &zeros), ("from_fn", &counted), ("full", &full)] {
                assert!(on_line(tensor.as_slice()), "{what}, {count}");
                assert!(
                    on_line(tensor.view().to_owned().as_slice()),
                    "{what}, {count}"
                );
                assert_eq!(tensor.len(), count, "{what}");
            }
            assert!(on_line(copy.as_slice()), "clone, {count}");
            assert!(zeros.iter().all(|&x| x == 0.0));
            assert!(full.iter().all(|&x| x == 0.5));
            assert_eq!(copy, counted);
            // A tensor whose buffer starts elsewhere, with the same elements, is equal; its
            // `Vec` comes back as it was.
            let given = Tensor::from_shape_vec([count], counted.as_slice().to_vec()).unwrap();
            assert_eq!(given, counted);
            let expected: Vec<f32> = (0..count).map(|i| i as f32).collect();
            assert_eq!(given.into_vec(), expected);
            // The padding is never part of the elements: views, iteration, reshaping, writes.
            let mut reshaped = counted.into_shape([1, count]).unwrap();
            assert_eq!(reshaped.view().to_owned().as_slice(), &expected[..]);
            assert_eq!(reshaped.iter().count(), count);
            reshaped[[0, count - 1]] = -1.0;
            reshaped.as_mut_slice()[0] = -2.0;
            let back = reshaped.into_vec();
            assert_eq!(back.len(), count);
            assert_eq!((back[0], back[1], back[count - 1]), (-2.0, 1.0, -1.0));
        }
        // Small tensors are not padded: their `Vec` is exactly their elements.
        let small = Tensor::<f64>::from_fn([3, 3], |ix| ix[0] as f64);
        assert_eq!(small.start, 0);
        assert_eq!(small.data.len(), 9);
        assert_eq!(
            format!("{small:?}"),
            "Tensor { data: [0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0], shape: [3, 3], \
             strides: [3, 1] }"
        );
    }

    #[test]
    fn zero_extents_and_rank_zero() {
        let empty = Tensor::<f32>::zeros([3, 0]);
        assert!(empty.is_empty());
        let scalar = Tensor::<f32>::from_fn([0usize; 0], |_| 4.0);
        assert_eq!(scalar.as_slice(), &[4.0]);
    }
}

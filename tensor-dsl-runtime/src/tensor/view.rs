//! Strided views → `TensorView` (shared, read-only) and `TensorViewMut` (writable); permuting and
//! slicing change only the layout, never copy. Invariant: every offset a view can address lies
//! inside the buffer it was made from.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, Range};

use crate::element::Element;
use crate::error::ShapeError;

use super::layout::{outside, slice_layout, IntoShape, Offsets, RawLayout};
use super::owned::Tensor;

/// A read-only strided view of a tensor's elements (a transposed, permuted, sliced, indexed,
/// reshaped or broadcast tensor).
///
/// Made by [`Tensor::view`] or [`TensorView::from_slice`];
/// [`permuted_axes`](Self::permuted_axes), [`slice_axis`](Self::slice_axis),
/// [`slice_axis_step`](Self::slice_axis_step), [`index_axis`](Self::index_axis),
/// [`reshape`](Self::reshape) and [`broadcast`](Self::broadcast) return new views of the same
/// elements without copying. A broadcast view addresses one element at several positions
/// (stride 0), so views are read-only.
pub struct TensorView<'a, T> {
    data: *const T,
    len: usize,
    layout: RawLayout,
    _borrow: PhantomData<&'a [T]>,
}

// SAFETY: a `TensorView` is a shared borrow of `[T]` with a layout; it can cross threads exactly
// when `&[T]` can.
unsafe impl<T: Sync> Send for TensorView<'_, T> {}
// SAFETY: as for `Send`: sharing a `TensorView` shares only `&[T]`.
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

    /// A row-major view of `data` under `shape`, without copying.
    ///
    /// Fails with [`ShapeErrorKind::DataLength`](crate::ShapeErrorKind::DataLength) when `data.len()` differs from the product of
    /// the extents.
    ///
    /// ```
    /// use tensor_dsl_runtime::TensorView;
    ///
    /// let data = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    /// let v = TensorView::from_slice([2, 3], &data).unwrap();
    /// assert_eq!(v[[1, 0]], 4.0);
    /// assert!(TensorView::from_slice([4, 2], &data).is_err());
    /// ```
    pub fn from_slice(shape: impl IntoShape, data: &'a [T]) -> Result<Self, ShapeError> {
        let layout = slice_layout(shape.__tdsl_dims(), data.len())?;
        // The row-major layout of `data.len()` elements addresses `0..data.len()`, and `data`
        // is borrowed for `'a`.
        Ok(TensorView::from_raw(data.as_ptr(), data.len(), layout))
    }

    /// The element at a multi-index, or `None` if the index is out of range.
    pub fn get(&self, index: &[usize]) -> Option<&'a T> {
        let at = self.layout.offset_of(index)?;
        // SAFETY: `offset_of` only returns offsets addressable through the layout, which the
        // constructor guarantees lie inside the borrowed buffer.
        Some(unsafe { &*self.data.offset(at) })
    }

    /// The elements by reference, in row-major order of their multi-indices (ndarray's
    /// `iter`); a broadcast element is visited once per position.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let t = Tensor::from_shape_vec([2, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
    /// let transposed: Vec<f64> = t.view().permuted_axes(&[1, 0]).iter().copied().collect();
    /// assert_eq!(transposed, [1.0, 3.0, 2.0, 4.0]);
    /// ```
    pub fn iter(&self) -> Iter<'a, T> {
        Iter {
            data: self.data,
            offsets: Offsets::new(&self.layout),
            _borrow: PhantomData,
        }
    }

    /// The same elements repeated to `shape` by numpy's broadcasting rules, without copying:
    /// axes are matched from the last, an axis of extent 1 repeats its element along the
    /// matching axis (stride 0), and axes missing in front are added.
    ///
    /// Fails with [`ShapeErrorKind::IncompatibleShape`](crate::ShapeErrorKind::IncompatibleShape) when an axis differs from its match
    /// and is not of extent 1, or `shape` has fewer axes.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let row = Tensor::from_shape_vec([3], vec![1.0, 2.0, 3.0]).unwrap();
    /// let rows = row.view().broadcast([2, 3]).unwrap();
    /// assert_eq!(rows.strides(), &[0, 1]);
    /// assert_eq!(rows.to_owned().as_slice(), &[1.0, 2.0, 3.0, 1.0, 2.0, 3.0]);
    /// assert!(row.view().broadcast([3, 2]).is_err());
    /// ```
    pub fn broadcast(&self, shape: impl IntoShape) -> Result<TensorView<'a, T>, ShapeError> {
        let layout = self.layout.broadcast(shape.__tdsl_dims())?;
        // The broadcast layout addresses only offsets this view's layout addresses.
        Ok(TensorView::from_raw(self.data, self.len, layout))
    }

    /// The view split along `axis` before `index`: indices `..index` and `index..`.
    ///
    /// # Panics
    /// If `axis` does not exist or `index` is past its extent.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let t = Tensor::<f64>::from_fn([3, 2], |ix| ix[0] as f64);
    /// let (top, bottom) = t.view().split_at(0, 1);
    /// assert_eq!((top.shape(), bottom.shape()), (&[1, 2][..], &[2, 2][..]));
    /// assert_eq!(bottom[[0, 0]], 1.0);
    /// ```
    #[track_caller]
    pub fn split_at(self, axis: usize, index: usize) -> (Self, Self) {
        let (first, second) = self.layout.split(axis, index);
        (
            TensorView::from_raw(self.data, self.len, first),
            TensorView::from_raw(self.data, self.len, second),
        )
    }
}

/// An iterator over the elements of a [`TensorView`] by reference, in row-major order of their
/// multi-indices; made by [`TensorView::iter`].
pub struct Iter<'a, T> {
    data: *const T,
    /// Offsets of the view's layout, which lie inside the buffer `data` points to.
    offsets: Offsets,
    _borrow: PhantomData<&'a T>,
}

// SAFETY: an `Iter` hands out `&'a T` only; it can cross threads exactly when `&T` can.
unsafe impl<T: Sync> Send for Iter<'_, T> {}
// SAFETY: as for `Send`: sharing an `Iter` shares only `&T`.
unsafe impl<T: Sync> Sync for Iter<'_, T> {}

impl<T> Clone for Iter<'_, T> {
    fn clone(&self) -> Self {
        Iter {
            data: self.data,
            offsets: self.offsets.clone(),
            _borrow: PhantomData,
        }
    }
}

impl<T> fmt::Debug for Iter<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Iter")
            .field("remaining", &self.offsets.len())
            .finish()
    }
}

impl<'a, T> Iterator for Iter<'a, T> {
    type Item = &'a T;

    fn next(&mut self) -> Option<&'a T> {
        let at = self.offsets.next()?;
        // SAFETY: `offsets` yields offsets of the view's layout, which lie inside the buffer
        // the view borrows for `'a` (its type invariant); the view is read-only.
        Some(unsafe { &*self.data.offset(at) })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.offsets.size_hint()
    }
}

impl<T> ExactSizeIterator for Iter<'_, T> {}

impl<'a, T> IntoIterator for &TensorView<'a, T> {
    type Item = &'a T;
    type IntoIter = Iter<'a, T>;

    fn into_iter(self) -> Iter<'a, T> {
        self.iter()
    }
}

impl<T, const N: usize> Index<[usize; N]> for TensorView<'_, T> {
    type Output = T;

    #[track_caller]
    fn index(&self, index: [usize; N]) -> &T {
        // A `match`, not `unwrap_or_else`, so a panic is reported at the caller.
        match self.get(&index) {
            Some(element) => element,
            None => outside(&index, self.shape()),
        }
    }
}

impl<T> Index<&[usize]> for TensorView<'_, T> {
    type Output = T;

    #[track_caller]
    fn index(&self, index: &[usize]) -> &T {
        match self.get(index) {
            Some(element) => element,
            None => outside(index, self.shape()),
        }
    }
}

/// A writable strided view of a tensor's elements, usable as a `tensor!` target or operand.
///
/// Made by [`Tensor::view_mut`] or [`TensorViewMut::from_slice_mut`]. A `tensor!` block writes
/// through it without needing a `mut` binding, so the view behaves like a `Cell`: it can move to
/// another thread but not be shared between threads, and its reading methods that take `&self`
/// return values, not references (hence no `Index` impl; [`get_mut`](Self::get_mut) takes
/// `&mut self`).
///
/// Invariant: besides lying inside the buffer, the layout addresses distinct elements at
/// distinct multi-indices (nothing repeated, as a broadcast repeats), which is what makes
/// [`split_at_mut`](Self::split_at_mut) hand out disjoint elements. Every way of making one
/// keeps it: the row-major layouts of tensors and slices, and permuting, slicing, indexing and
/// reshaping, which address subsets or the same run of elements.
///
/// It is not `Sync`:
///
/// ```compile_fail
/// fn assert_sync<T: Sync>() {}
/// assert_sync::<tensor_dsl_runtime::TensorViewMut<'static, f64>>();
/// ```
pub struct TensorViewMut<'a, T> {
    data: *mut T,
    len: usize,
    layout: RawLayout,
    _borrow: PhantomData<&'a mut [T]>,
}

// SAFETY: a `TensorViewMut` is an exclusive borrow of the elements its layout addresses; moving
// it to another thread moves that borrow. It is deliberately not `Sync`: generated code writes
// through `&TensorViewMut`.
unsafe impl<T: Send> Send for TensorViewMut<'_, T> {}

impl<'a, T> TensorViewMut<'a, T> {
    /// `data` must be valid for reads and writes of `len` elements for `'a` with no other
    /// access to the elements `layout` addresses, every offset addressable through `layout`
    /// must lie in `0..len`, and distinct multi-indices must address distinct elements.
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

    /// A writable row-major view of `data` under `shape`, without copying.
    ///
    /// Fails with [`ShapeErrorKind::DataLength`](crate::ShapeErrorKind::DataLength) when `data.len()` differs from the product of
    /// the extents.
    ///
    /// ```
    /// use tensor_dsl_runtime::TensorViewMut;
    ///
    /// let mut data = [0.0f32; 6];
    /// let mut v = TensorViewMut::from_slice_mut([3, 2], &mut data).unwrap();
    /// v.set(&[2, 1], 7.0);
    /// assert_eq!(data[5], 7.0);
    /// ```
    pub fn from_slice_mut(shape: impl IntoShape, data: &'a mut [T]) -> Result<Self, ShapeError> {
        let layout = slice_layout(shape.__tdsl_dims(), data.len())?;
        // The row-major layout of `data.len()` elements addresses each of `0..data.len()`
        // once, and `data` is borrowed exclusively for `'a`.
        Ok(TensorViewMut::from_raw(
            data.as_mut_ptr(),
            data.len(),
            layout,
        ))
    }

    /// A read-only view of the same elements, borrowing this one exclusively.
    pub fn view(&mut self) -> TensorView<'_, T> {
        TensorView::from_raw(self.data, self.len, self.layout.clone())
    }

    /// A shorter-lived writable view of the same elements.
    pub fn reborrow(&mut self) -> TensorViewMut<'_, T> {
        TensorViewMut::from_raw(self.data, self.len, self.layout.clone())
    }

    /// The element at a multi-index by mutable reference, or `None` if the index is out of
    /// range.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let mut t = Tensor::<f64>::zeros([2, 2]);
    /// let mut v = t.view_mut().permuted_axes(&[1, 0]);
    /// *v.get_mut(&[1, 0]).unwrap() = 3.0;
    /// assert_eq!(t[[0, 1]], 3.0);
    /// ```
    pub fn get_mut(&mut self, index: &[usize]) -> Option<&mut T> {
        let at = self.layout.offset_of(index)?;
        // SAFETY: in-layout offsets lie inside the buffer, and no other borrow or view reaches
        // this view's elements (it borrows them exclusively; split views address disjoint
        // ones). `&mut self` excludes every access through this view, generated code's writes
        // through `&self` included, for as long as the reference lives.
        Some(unsafe { &mut *self.data.offset(at) })
    }

    /// The view split along `axis` before `index` into two writable views of disjoint
    /// elements: indices `..index` and `index..` (like ndarray's `split_at` on a mutable view).
    /// Each may go to its own thread.
    ///
    /// # Panics
    /// If `axis` does not exist or `index` is past its extent.
    ///
    /// ```
    /// use tensor_dsl_runtime::Tensor;
    ///
    /// let mut t = Tensor::<f64>::zeros([2, 3]);
    /// let (mut left, mut right) = t.view_mut().split_at_mut(1, 1);
    /// std::thread::scope(|s| {
    ///     s.spawn(move || left.set(&[1, 0], 1.0));
    ///     s.spawn(move || right.set(&[1, 1], 2.0));
    /// });
    /// assert_eq!(t.as_slice(), &[0.0, 0.0, 0.0, 1.0, 0.0, 2.0]);
    /// ```
    #[track_caller]
    pub fn split_at_mut(self, axis: usize, index: usize) -> (Self, Self) {
        let (first, second) = self.layout.split(axis, index);
        // The two layouts address the multi-indices of this one with index `< index` on `axis`
        // and those with index `>= index`: disjoint sets of multi-indices, hence (this layout
        // addressing distinct elements at distinct multi-indices) disjoint sets of elements,
        // each a subset of this view's, which it gives up by being moved in.
        (
            TensorViewMut::from_raw(self.data, self.len, first),
            TensorViewMut::from_raw(self.data, self.len, second),
        )
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

            /// The number of elements (positions, for a broadcast view).
            pub fn len(&self) -> usize {
                self.layout.element_count()
            }

            /// Whether the view has no elements (some extent is zero).
            pub fn is_empty(&self) -> bool {
                self.layout.shape.contains(&0)
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

            /// Every `|step|`-th element of `range` on `axis`, renumbered from zero: from
            /// `range.start` forwards when `step` is positive, from the last index of `range`
            /// backwards when it is negative (ndarray's rule for `s![a..b; step]`, not
            /// Python's). `slice_axis(axis, range)` is `slice_axis_step(axis, range, 1)`;
            /// ndarray's `Slice` type is not used, so `slice_axis` keeps taking a plain range.
            ///
            /// # Panics
            /// If `axis` does not exist, `range` is not inside it, or `step` is zero.
            ///
            /// ```
            /// use tensor_dsl_runtime::Tensor;
            ///
            /// let t = Tensor::<f64>::from_fn([6], |ix| ix[0] as f64);
            /// let every_other = t.view().slice_axis_step(0, 1..6, 2);
            /// assert_eq!(every_other.to_owned().as_slice(), &[1.0, 3.0, 5.0]);
            /// let reversed = t.view().slice_axis_step(0, 0..5, -2);
            /// assert_eq!(reversed.to_owned().as_slice(), &[4.0, 2.0, 0.0]);
            /// ```
            #[track_caller]
            pub fn slice_axis_step(self, axis: usize, range: Range<usize>, step: isize) -> Self {
                $view {
                    layout: self.layout.sliced_step(axis, range, step),
                    ..self
                }
            }

            /// The elements whose index on `axis` is `index`, that axis removed (one axis
            /// fewer; ndarray's `index_axis`).
            ///
            /// # Panics
            /// If `axis` does not exist or `index` is outside it.
            ///
            /// ```
            /// use tensor_dsl_runtime::Tensor;
            ///
            /// let t = Tensor::<f64>::from_fn([2, 3], |ix| (10 * ix[0] + ix[1]) as f64);
            /// let column = t.view().index_axis(1, 2);
            /// assert_eq!(column.shape(), &[2]);
            /// assert_eq!(column.to_owned().as_slice(), &[2.0, 12.0]);
            /// ```
            #[track_caller]
            pub fn index_axis(self, axis: usize, index: usize) -> Self {
                $view {
                    layout: self.layout.indexed(axis, index),
                    ..self
                }
            }

            /// The same elements under another shape with as many elements, in the same
            /// row-major order, without copying.
            ///
            /// Fails with [`ShapeErrorKind::IncompatibleShape`](crate::ShapeErrorKind::IncompatibleShape) when the element counts
            /// differ, and with [`ShapeErrorKind::IncompatibleLayout`](crate::ShapeErrorKind::IncompatibleLayout) when the view is not
            /// contiguous in row-major order (a transpose, a strided slice, a broadcast): copy
            /// it with [`to_owned`](Self::to_owned) first.
            ///
            /// ```
            /// use tensor_dsl_runtime::{ShapeErrorKind, Tensor};
            ///
            /// let t = Tensor::<f64>::from_fn([2, 3], |ix| (3 * ix[0] + ix[1]) as f64);
            /// let flat = t.view().reshape([6]).unwrap();
            /// assert_eq!(flat[[4]], 4.0);
            /// let transposed = t.view().permuted_axes(&[1, 0]);
            /// let error = transposed.clone().reshape([6]).unwrap_err();
            /// assert_eq!(error.kind(), ShapeErrorKind::IncompatibleLayout);
            /// assert_eq!(transposed.to_owned().view().reshape([6]).unwrap()[[1]], 3.0);
            /// ```
            pub fn reshape(self, shape: impl IntoShape) -> Result<Self, ShapeError> {
                let layout = self.layout.reshaped(shape.__tdsl_dims())?;
                // The new layout addresses the same elements as the old one, each once.
                Ok($view { layout, ..self })
            }
        }

        impl<T: Copy> $view<'_, T> {
            /// A contiguous row-major copy of the viewed elements (ndarray's name for
            /// [`to_tensor`](Self::to_tensor)).
            pub fn to_owned(&self) -> Tensor<T> {
                let elements = Offsets::new(&self.layout).map(|at| {
                    // SAFETY: offsets from the layout lie inside the buffer (type invariant);
                    // a writable view is not `Sync`, so nothing writes meanwhile.
                    unsafe { self.data.offset(at).read() }
                });
                Tensor::from_elements(&self.layout.shape[..], elements)
            }
        }

        impl<T: Element> $view<'_, T> {
            /// A contiguous row-major copy of the viewed elements; the same as
            /// [`to_owned`](Self::to_owned).
            pub fn to_tensor(&self) -> Tensor<T> {
                self.to_owned()
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

        impl<T> Compared<T> for $view<'_, T> {
            fn compared(&self) -> (*const T, Cow<'_, RawLayout>) {
                (self.data, Cow::Borrowed(&self.layout))
            }
        }
    };
}

view_layout_methods!(TensorView);
view_layout_methods!(TensorViewMut);

/// Elements per axis beyond which `Display` shows only the first and last [`EDGE`] of them.
const ELIDE_ABOVE: usize = 6;
const EDGE: usize = 3;

/// Writes `layout`'s elements as nested brackets, ndarray's way: `[[1, 2],\n [3, 4]]`, a blank
/// line between blocks of three or more axes, and the middle of an axis of more than six
/// elements as `...` unless the format is alternate (`{:#}`). `element` writes the element at
/// an offset; it is called only with offsets of `layout`'s elements.
fn format_layout(
    f: &mut fmt::Formatter<'_>,
    layout: &RawLayout,
    element: &mut dyn FnMut(&mut fmt::Formatter<'_>, isize) -> fmt::Result,
) -> fmt::Result {
    let elide = !f.alternate();
    format_axes(
        f,
        &layout.shape,
        &layout.strides,
        layout.offset,
        0,
        elide,
        element,
    )
}

fn format_axes(
    f: &mut fmt::Formatter<'_>,
    shape: &[usize],
    strides: &[isize],
    at: isize,
    depth: usize,
    elide: bool,
    element: &mut dyn FnMut(&mut fmt::Formatter<'_>, isize) -> fmt::Result,
) -> fmt::Result {
    let Some((&extent, inner)) = shape.split_first() else {
        // All axes fixed at indices inside their extents: `at` is an element's offset.
        return element(f, at);
    };
    let separator = if inner.is_empty() {
        ", ".to_owned()
    } else {
        format!(
            ",\n{}{}",
            "\n".repeat(inner.len() - 1),
            " ".repeat(depth + 1)
        )
    };
    let (head, tail) = if elide && extent > ELIDE_ABOVE {
        (0..EDGE, Some(extent - EDGE..extent))
    } else {
        (0..extent, None)
    };
    // `None` stands for the elided middle.
    let positions = head.map(Some).chain(
        tail.into_iter()
            .flat_map(|tail| std::iter::once(None).chain(tail.map(Some))),
    );
    f.write_str("[")?;
    for (k, position) in positions.enumerate() {
        if k > 0 {
            f.write_str(&separator)?;
        }
        match position {
            None => f.write_str("...")?,
            Some(index) => format_axes(
                f,
                inner,
                &strides[1..],
                at.wrapping_add((index as isize).wrapping_mul(strides[0])),
                depth + 1,
                elide,
                element,
            )?,
        }
    }
    f.write_str("]")
}

/// ndarray's format: nested brackets, rank 0 as the bare element, long axes elided with `...`
/// unless the format is alternate (`{:#}`); width and precision apply to each element.
///
/// ```
/// use tensor_dsl_runtime::Tensor;
///
/// let t = Tensor::from_shape_vec([2, 2], vec![1.0, 2.0, 3.0, 4.5]).unwrap();
/// assert_eq!(t.view().to_string(), "[[1, 2],\n [3, 4.5]]");
/// assert_eq!(format!("{:.1}", t.view()), "[[1.0, 2.0],\n [3.0, 4.5]]");
/// ```
impl<T: fmt::Display> fmt::Display for TensorView<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        format_layout(f, &self.layout, &mut |f, at| {
            // SAFETY: `format_layout` passes only offsets of the layout's elements, which lie
            // inside the borrowed buffer (type invariant).
            let value = unsafe { &*self.data.offset(at) };
            fmt::Display::fmt(value, f)
        })
    }
}

/// As for [`TensorView`]'s; elements are read by value.
impl<T: fmt::Display + Copy> fmt::Display for TensorViewMut<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        format_layout(f, &self.layout, &mut |f, at| {
            // SAFETY: offsets of the layout's elements lie inside the buffer (type invariant);
            // the view is not `Sync`, so no other thread writes while this one reads.
            let value = unsafe { self.data.offset(at).read() };
            fmt::Display::fmt(&value, f)
        })
    }
}

/// What equality compares of a tensor or view: a pointer and a layout proven in bounds of the
/// buffer it points to, borrowed with `self`.
pub(crate) trait Compared<T> {
    fn compared(&self) -> (*const T, Cow<'_, RawLayout>);
}

impl<T> Compared<T> for Tensor<T> {
    fn compared(&self) -> (*const T, Cow<'_, RawLayout>) {
        let layout = RawLayout::new(self.shape().to_vec(), self.strides().to_vec(), 0);
        (self.as_slice().as_ptr(), Cow::Owned(layout))
    }
}

/// Whether `a` and `b` have the same shape and equal elements at each multi-index.
fn same_elements<T: PartialEq + Copy>(a: &impl Compared<T>, b: &impl Compared<T>) -> bool {
    let ((a_data, a_layout), (b_data, b_layout)) = (a.compared(), b.compared());
    a_layout.shape == b_layout.shape
        && Offsets::new(&a_layout)
            .zip(Offsets::new(&b_layout))
            .all(|(a_at, b_at)| {
                // SAFETY: `Offsets` yields offsets of each layout's elements, which `compared`
                // promises lie inside its buffer, kept alive by the borrows of `a` and `b`.
                // Elements are read by value; a writable view is not `Sync` and this thread is
                // here, so nothing writes them meanwhile.
                let (x, y) = unsafe { (a_data.offset(a_at).read(), b_data.offset(b_at).read()) };
                x == y
            })
}

/// Equality across tensors and views: the same shape and equal elements at each multi-index
/// (strides may differ). `Tensor == Tensor` is derived.
macro_rules! impl_eq {
    ($([$($lt:lifetime),*] $a:ty, $b:ty;)*) => {$(
        impl<$($lt,)* T: PartialEq + Copy> PartialEq<$b> for $a {
            fn eq(&self, other: &$b) -> bool {
                same_elements(self, other)
            }
        }
    )*};
}

impl_eq! {
    ['a] Tensor<T>, TensorView<'a, T>;
    ['a] TensorView<'a, T>, Tensor<T>;
    ['a, 'b] TensorView<'a, T>, TensorView<'b, T>;
    ['a] Tensor<T>, TensorViewMut<'a, T>;
    ['a] TensorViewMut<'a, T>, Tensor<T>;
    ['a, 'b] TensorViewMut<'a, T>, TensorViewMut<'b, T>;
    ['a, 'b] TensorView<'a, T>, TensorViewMut<'b, T>;
    ['a, 'b] TensorViewMut<'a, T>, TensorView<'b, T>;
}

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

//! Operand and target types → uniform raw accesses (pointer, buffer length, layout) for the
//! kernels. Generated code reaches tensors only through these traits, so new operand kinds
//! (other crates' arrays, device tensors) plug in by implementing them.

use std::marker::PhantomData;

use crate::element::Element;
use crate::tensor::Tensor;
use crate::view::{TensorView, TensorViewMut};

/// Read access to the elements of an operand for the duration of one statement.
///
/// Holds a raw pointer: it may coexist with the [`TargetAccess`] of the same tensor (the
/// in-place reads of `c[i, j] = 2 * c[i, j] + ...`), and it never crosses threads.
pub struct Access<'a, T> {
    pub(crate) data: *const T,
    pub(crate) len: usize,
    pub(crate) shape: &'a [usize],
    pub(crate) strides: &'a [isize],
    pub(crate) offset: isize,
    _borrow: PhantomData<&'a T>,
}

impl<'a, T> Access<'a, T> {
    pub(crate) fn new(
        data: *const T,
        len: usize,
        shape: &'a [usize],
        strides: &'a [isize],
        offset: isize,
    ) -> Self {
        Access {
            data,
            len,
            shape,
            strides,
            offset,
            _borrow: PhantomData,
        }
    }

    /// The operand's extents.
    pub fn shape(&self) -> &'a [usize] {
        self.shape
    }
}

/// Write access to a target for the duration of one statement (see [`Access`] for why raw).
pub struct TargetAccess<'a, T> {
    pub(crate) data: *mut T,
    pub(crate) len: usize,
    pub(crate) shape: &'a [usize],
    pub(crate) strides: &'a [isize],
    pub(crate) offset: isize,
    _borrow: PhantomData<&'a std::cell::Cell<T>>,
}

impl<'a, T> TargetAccess<'a, T> {
    fn new(
        data: *mut T,
        len: usize,
        shape: &'a [usize],
        strides: &'a [isize],
        offset: isize,
    ) -> Self {
        TargetAccess {
            data,
            len,
            shape,
            strides,
            offset,
            _borrow: PhantomData,
        }
    }

    /// The target of a statement with no left-hand indices: one scalar.
    pub fn scalar(value: &'a mut T) -> Self {
        TargetAccess::new(value, 1, &[], &[], 0)
    }

    /// Reads of the target's own elements, for right-hand accesses that are point-wise in place.
    pub fn read(&self) -> Access<'_, T> {
        Access::new(self.data, self.len, self.shape, self.strides, self.offset)
    }

    /// The target's extents.
    pub fn shape(&self) -> &'a [usize] {
        self.shape
    }
}

/// The extents of a tensor whose shape is known only at run time.
///
/// Operands name their extents as a type so that statically shaped tensors can later carry
/// `Extent<N>` per axis and have mismatches reported by the type checker; every tensor today
/// is `Dynamic`, checked at run time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dynamic;

/// A tensor-like value `tensor!` can read: owned tensors, views, and references to them.
pub trait Operand {
    /// The element type.
    type Elem: Element;
    /// The extents as a type ([`Dynamic`] for run-time shapes).
    type Extents;
    /// The extents, outermost first.
    fn __tdsl_shape(&self) -> &[usize];
    /// Raw read access for one statement.
    fn __tdsl_operand(&self) -> Access<'_, Self::Elem>;
}

impl<T: Element> Operand for Tensor<T> {
    type Elem = T;
    type Extents = Dynamic;
    fn __tdsl_shape(&self) -> &[usize] {
        self.shape()
    }
    fn __tdsl_operand(&self) -> Access<'_, T> {
        let data = self.as_slice();
        Access::new(data.as_ptr(), data.len(), self.shape(), self.strides(), 0)
    }
}

impl<T: Element> Operand for TensorView<'_, T> {
    type Elem = T;
    type Extents = Dynamic;
    fn __tdsl_shape(&self) -> &[usize] {
        self.shape()
    }
    fn __tdsl_operand(&self) -> Access<'_, T> {
        let (data, len, layout) = self.raw();
        Access::new(data, len, &layout.shape, &layout.strides, layout.offset)
    }
}

impl<T: Element> Operand for TensorViewMut<'_, T> {
    type Elem = T;
    type Extents = Dynamic;
    fn __tdsl_shape(&self) -> &[usize] {
        self.shape()
    }
    fn __tdsl_operand(&self) -> Access<'_, T> {
        let (data, len, layout) = self.raw();
        Access::new(data, len, &layout.shape, &layout.strides, layout.offset)
    }
}

impl<X: Operand + ?Sized> Operand for &X {
    type Elem = X::Elem;
    type Extents = X::Extents;
    fn __tdsl_shape(&self) -> &[usize] {
        (**self).__tdsl_shape()
    }
    fn __tdsl_operand(&self) -> Access<'_, X::Elem> {
        (**self).__tdsl_operand()
    }
}

impl<X: Operand + ?Sized> Operand for &mut X {
    type Elem = X::Elem;
    type Extents = X::Extents;
    fn __tdsl_shape(&self) -> &[usize] {
        (**self).__tdsl_shape()
    }
    fn __tdsl_operand(&self) -> Access<'_, X::Elem> {
        (**self).__tdsl_operand()
    }
}

/// Targets written through `&mut self`: owned tensors. Method-call autoref makes
/// `c[i] = ...` borrow `c` mutably, so an immutable binding is rustc's own error on `c`, and a
/// `&mut Tensor<T>` binding is reborrowed.
pub trait TargetOwned {
    /// The element type.
    type Elem: Element;
    /// Raw write access for one statement.
    fn __tdsl_target(&mut self) -> TargetAccess<'_, Self::Elem>;
}

impl<T: Element> TargetOwned for Tensor<T> {
    type Elem = T;
    fn __tdsl_target(&mut self) -> TargetAccess<'_, T> {
        let len = self.len();
        let data = self.as_mut_slice().as_mut_ptr();
        TargetAccess::new(data, len, self.shape(), self.strides(), 0)
    }
}

/// Targets written through `&self`: writable views, which already hold an exclusive borrow, so
/// `let v = t.view_mut();` needs no `mut` to be a target.
pub trait TargetShared {
    /// The element type.
    type Elem: Element;
    /// Raw write access for one statement.
    fn __tdsl_target(&self) -> TargetAccess<'_, Self::Elem>;
}

impl<T: Element> TargetShared for TensorViewMut<'_, T> {
    type Elem = T;
    fn __tdsl_target(&self) -> TargetAccess<'_, T> {
        let (data, len, layout) = self.raw();
        TargetAccess::new(data, len, &layout.shape, &layout.strides, layout.offset)
    }
}

/// Anything that names the element type `T` of a statement, so literals can be made in `T`.
pub trait Witness {
    /// The element type.
    type Elem: Element;
}

impl<T: Element> Witness for Access<'_, T> {
    type Elem = T;
}

impl<T: Element> Witness for TargetAccess<'_, T> {
    type Elem = T;
}

impl Witness for f32 {
    type Elem = f32;
}

impl Witness for f64 {
    type Elem = f64;
}

//! Operand and target types → uniform raw accesses (pointer, buffer length, layout) for the
//! kernels. Generated code reaches tensors only through these traits, so new operand kinds
//! (other crates' arrays, device tensors) plug in by implementing them.

use std::marker::PhantomData;

use crate::element::Element;
use crate::tensor::layout::RawLayout;
use crate::tensor::Tensor;
use crate::tensor::{TensorView, TensorViewMut};

use super::extents::{Dynamic, ExtentsType};

/// How a kernel combines its value with the target.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode<T> {
    /// `target = value`
    Assign,
    /// `target += value`
    Add,
    /// `target = β · target + value` (the GEMM update)
    Scale(T),
}

impl<T: Element> Mode<T> {
    /// The β of `target = β · target + value` that this mode is: 0, 1 or its own.
    pub(crate) fn beta(self) -> T {
        match self {
            Mode::Assign => T::ZERO,
            Mode::Add => T::ONE,
            Mode::Scale(beta) => beta,
        }
    }
}

/// What every access of a statement holds: a pointer into a buffer of `len` elements, the
/// layout it is read or written through (`offset + Σ index·stride`), and the memory the buffer
/// is in. Nothing here is proven: `Step::new` checks every offset a loop nest reaches against
/// `len` before any element is touched.
pub(crate) struct RawAccess<'a, T> {
    pub(crate) data: *const T,
    pub(crate) len: usize,
    pub(crate) shape: ShapeRef<'a>,
    pub(crate) strides: &'a [isize],
    pub(crate) offset: isize,
    pub(crate) memory: Memory,
    /// The buffer holds `T::Part`s, each read as a `T` (a real tensor in a complex statement,
    /// see [`ElementsOf`](crate::checks::ElementsOf)): `data`, `len`, the strides and the
    /// offset count parts, not `T`s.
    pub(crate) part: bool,
    /// The access is an owned [`Tensor`]'s whole buffer as the tensor lays it out: offset 0,
    /// the row-major strides of `shape`, `len` their product (the tensor's invariant), so the
    /// written-out loops take it as dense without comparing its strides. Set only by
    /// [`row_major`](Self::row_major); every change of the shape or the offset clears it.
    pub(crate) row_major: bool,
}

impl<T> Clone for RawAccess<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for RawAccess<'_, T> {}

impl<'a, T> RawAccess<'a, T> {
    /// A layout over a host buffer of `len` elements from `data`.
    pub(crate) fn new(
        data: *const T,
        len: usize,
        shape: impl Into<ShapeRef<'a>>,
        strides: &'a [isize],
        offset: isize,
    ) -> Self {
        RawAccess {
            data,
            len,
            shape: shape.into(),
            strides,
            offset,
            memory: Memory::Host,
            part: false,
            row_major: false,
        }
    }

    /// This access, marked as an owned tensor's whole buffer (see the field).
    pub(crate) fn row_major(self) -> Self {
        RawAccess {
            row_major: true,
            ..self
        }
    }

    /// A view's layout over a host buffer of `len` elements from `data`.
    pub(crate) fn over(data: *const T, len: usize, layout: &'a RawLayout) -> Self {
        RawAccess::new(
            data,
            len,
            layout.shape.as_slice(),
            &layout.strides,
            layout.offset,
        )
    }

    /// The first and last byte address the whole layout can reach, or `None` if it has no
    /// elements.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn address_span(&self) -> Option<(usize, usize)> {
        if self.shape.contains(&0) {
            return None;
        }
        let (mut low, mut high) = (self.offset, self.offset);
        for (&extent, &stride) in self.shape.iter().zip(self.strides) {
            // Layouts come from tensors and their views, whose reach fits in `isize`.
            let reach = (extent - 1) as isize * stride;
            if reach < 0 {
                low += reach;
            } else {
                high += reach;
            }
        }
        let size = stored_size::<T>(self.part);
        let start = self.data as usize;
        Some((
            start.wrapping_add_signed(low * size as isize),
            start.wrapping_add_signed(high * size as isize),
        ))
    }
}

/// The size in bytes of what a buffer of `T`s, or of their parts if `part`, holds per element.
/// A part is half its complex number: `Complex<F>` is `repr(C)` of two `F`s, and only complex
/// types have parts of another type (for the others `part` is never set).
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub(crate) fn stored_size<T>(part: bool) -> usize {
    if part {
        std::mem::size_of::<T>() / 2
    } else {
        std::mem::size_of::<T>()
    }
}

/// Whether `part` is set and means something for `T`: only complex types have parts of another
/// type, so for the others this is a constant `false` and the tests it guards fold away.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
fn holds_parts<T: Element>(part: bool) -> bool {
    part && std::mem::size_of::<T::Part>() != std::mem::size_of::<T>()
}

/// `data` moved `count` elements on, counting `T::Part`s if `part` (see [`RawAccess::part`]).
///
/// # Safety
/// As [`pointer::offset`], counting what the buffer holds.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub(crate) unsafe fn stored_offset<T: Element>(
    data: *const T,
    part: bool,
    count: isize,
) -> *const T {
    // SAFETY: forwarded from the caller.
    unsafe {
        if holds_parts::<T>(part) {
            data.cast::<T::Part>().offset(count).cast::<T>()
        } else {
            data.offset(count)
        }
    }
}

/// The element at `data` as a `T`: a `T`, or a `T::Part` if `part` (see [`RawAccess::part`]).
///
/// # Safety
/// What is at `data` (a `T`, or a `T::Part` if `part`) must be valid for reads.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub(crate) unsafe fn stored_read<T: Element>(data: *const T, part: bool) -> T {
    // SAFETY: forwarded from the caller.
    unsafe {
        if holds_parts::<T>(part) {
            T::from_part(data.cast::<T::Part>().read())
        } else {
            data.read()
        }
    }
}

/// The extents of an operand: borrowed from the tensor that holds them, or one extent held
/// here (a Rust slice's or `Vec`'s length, which is in no memory a borrow could point to).
/// Reads (and prints) as a `&[usize]`.
#[derive(Clone, Copy)]
pub struct ShapeRef<'a>(Held<'a>);

#[derive(Clone, Copy)]
enum Held<'a> {
    Borrowed(&'a [usize]),
    One([usize; 1]),
}

impl<'a> ShapeRef<'a> {
    /// The shape of a rank-1 operand of `extent` elements.
    pub fn one(extent: usize) -> Self {
        ShapeRef(Held::One([extent]))
    }
}

impl<'a> From<&'a [usize]> for ShapeRef<'a> {
    fn from(shape: &'a [usize]) -> Self {
        ShapeRef(Held::Borrowed(shape))
    }
}

impl<'a, const R: usize> From<&'a [usize; R]> for ShapeRef<'a> {
    fn from(shape: &'a [usize; R]) -> Self {
        ShapeRef(Held::Borrowed(shape))
    }
}

impl std::fmt::Debug for ShapeRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl std::ops::Deref for ShapeRef<'_> {
    type Target = [usize];
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn deref(&self) -> &[usize] {
        match &self.0 {
            Held::Borrowed(shape) => shape,
            Held::One(extent) => extent,
        }
    }
}

/// Read access to the elements of an operand for the duration of one statement.
///
/// Holds a raw pointer: it may coexist with the [`TargetAccess`] of the same tensor (the
/// in-place reads of `c[i, j] = 2 * c[i, j] + ...`), and it never crosses threads.
pub struct Access<'a, T> {
    pub(crate) raw: RawAccess<'a, T>,
    /// Made by [`TargetAccess::read`]: the target's own elements.
    pub(crate) in_place: bool,
    _borrow: PhantomData<&'a T>,
}

/// Where an access's elements live. Host kernels dereference pointers, so they run only steps
/// over host memory; a device's pointers are only ever handed to that device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Memory {
    Host,
    /// A CUDA device's memory (the number tells devices apart).
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    Device(usize),
    /// Not elements at all: the pointer is a `DistTensor`'s address (feature `mpi`), which
    /// only the distributed backend reads, as that tensor (see `dist::backend`).
    #[cfg(feature = "mpi")]
    Dist,
}

impl Memory {
    /// A device memory no device made before has: each device, a GPU or a simulator, takes
    /// one, so accesses tell two devices apart even where both are in fact the host's memory.
    #[cfg(feature = "cuda")]
    pub(crate) fn fresh_device() -> Memory {
        static DEVICES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        Memory::Device(DEVICES.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

impl<T> Clone for Access<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Access<'_, T> {}

impl<'a, T> Access<'a, T> {
    /// Reads through `raw` for `'a` (its pointer from a borrow that lives as long).
    pub(crate) fn new(raw: RawAccess<'a, T>) -> Self {
        Access {
            raw,
            in_place: false,
            _borrow: PhantomData,
        }
    }

    /// The same access, its pointer being into `memory`.
    #[cfg(any(feature = "cuda", feature = "mpi"))]
    pub(crate) fn in_memory(mut self, memory: Memory) -> Self {
        self.raw.memory = memory;
        self
    }

    /// The operand's extents.
    pub fn shape(&self) -> &[usize] {
        &self.raw.shape
    }

    /// This access of a tensor of `W`'s parts, read as `W`s (a real tensor in a complex
    /// statement): the same buffer and layout, each element converted as it is loaded.
    pub(crate) fn as_parts_of<W: Element<Part = T>>(self) -> Access<'a, W> {
        debug_assert!(!self.raw.part, "an access of parts has no parts of its own");
        let raw = self.raw;
        Access {
            raw: RawAccess {
                data: raw.data.cast::<W>(),
                len: raw.len,
                shape: raw.shape,
                strides: raw.strides,
                offset: raw.offset,
                memory: raw.memory,
                part: true,
                row_major: raw.row_major,
            },
            in_place: self.in_place,
            _borrow: PhantomData,
        }
    }
}

/// Write access to a target for the duration of one statement (see [`Access`] for why raw).
pub struct TargetAccess<'a, T> {
    /// Its pointer came from a writable borrow (see [`TargetAccess::new`]).
    pub(crate) raw: RawAccess<'a, T>,
    /// Made from a `&mut` borrow of the whole tensor for the statement (see
    /// [`TargetAccess::exclusive`]).
    pub(crate) exclusive: bool,
    _borrow: PhantomData<&'a std::cell::Cell<T>>,
}

impl<'a, T> TargetAccess<'a, T> {
    /// Writes through `raw` for `'a`.
    ///
    /// # Safety
    /// `raw`'s pointer must come from a writable borrow of its `len` elements that lives for
    /// `'a` (an owned tensor's or an array's `&mut`, a writable view's, a device tensor's
    /// buffer), with write provenance: a target's elements are written through it.
    pub(crate) unsafe fn new(raw: RawAccess<'a, T>) -> Self {
        TargetAccess {
            raw,
            exclusive: false,
            _borrow: PhantomData,
        }
    }

    /// The same target, re-lent for a shorter borrow: a copy the general path of a statement
    /// takes by reference, so the statement's own access is never addressed and stays in
    /// registers for its written-out loops.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn relent(&self) -> TargetAccess<'_, T> {
        TargetAccess {
            raw: self.raw,
            exclusive: self.exclusive,
            _borrow: PhantomData,
        }
    }

    /// The target's pointer, for writing (it came from a writable borrow).
    pub(crate) fn data_mut(&self) -> *mut T {
        self.raw.data.cast_mut()
    }

    /// The same target, marked as made from a `&mut` borrow of its whole tensor (an owned
    /// tensor, a nested array, a scalar), which no operand of the statement can reach: the
    /// borrow checker refuses any other live borrow of it, `{ &c }` operands included, since
    /// they are evaluated before the statement. [`detach`](Self::detach) then copies nothing
    /// and spends no comparisons; `Step::new` still refuses any overlap.
    pub(crate) fn exclusive(self) -> Self {
        TargetAccess {
            exclusive: true,
            ..self
        }
    }

    /// The same target, its pointer being into `memory`.
    #[cfg(any(feature = "cuda", feature = "mpi"))]
    pub(crate) fn in_memory(mut self, memory: Memory) -> Self {
        self.raw.memory = memory;
        self
    }

    /// The target of a statement with no left-hand indices: one scalar.
    pub fn scalar(value: &'a mut T) -> Self {
        let data = std::ptr::from_mut(value).cast_const();
        // SAFETY: `value` is borrowed mutably for `'a`, and the pointer keeps its provenance.
        unsafe { TargetAccess::new(RawAccess::new(data, 1, &[], &[], 0)) }.exclusive()
    }

    /// Reads of the target's own elements, for right-hand accesses that are point-wise in place.
    pub fn read(&self) -> Access<'_, T> {
        Access {
            raw: self.raw,
            in_place: true,
            _borrow: PhantomData,
        }
    }

    /// `operand` as it must be read by a statement writing this target: unchanged if the two
    /// share no memory, else a copy of its elements taken now, before anything is written. So
    /// the statement's result equals evaluating its right-hand side first, whatever names the
    /// operand goes by (a second reference to a writable view, `{ &v }`, a function handed one
    /// view twice).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn detach<'o>(&self, operand: Access<'o, T>) -> Detached<'o, T>
    where
        T: Element,
    {
        if self.exclusive || self.raw.memory != Memory::Host || operand.raw.memory != Memory::Host {
            // Device tensors own their buffers and have no views, so a device operand other
            // than the target itself never overlaps it (and if it did, `Step::new` would stop
            // before any launch). Device memory is never read here.
            return Detached::Original(operand);
        }
        match (self.raw.address_span(), operand.raw.address_span()) {
            (Some(written), Some(read)) if read.0 <= written.1 && written.0 <= read.1 => {
                Detached::Copied(copy_of(&operand))
            }
            _ => Detached::Original(operand),
        }
    }

    /// The target's extents.
    pub fn shape(&self) -> &[usize] {
        &self.raw.shape
    }

    /// The positions of this target that start `offset` elements later and span `shape` (a
    /// range of its positions, `c[i in lo..hi]`): the same writable borrow, re-lent.
    pub(crate) fn cut<'s>(&'s self, shape: &'s [usize], offset: isize) -> TargetAccess<'s, T> {
        let mut raw = self.raw;
        raw.shape = shape.into();
        raw.offset += offset;
        raw.row_major = false;
        TargetAccess {
            raw,
            exclusive: self.exclusive,
            _borrow: PhantomData,
        }
    }
}

/// An operand of a statement as it is read: itself, or a copy where it overlaps the target
/// (see [`TargetAccess::detach`]).
pub enum Detached<'o, T> {
    /// Shares no memory with the target.
    Original(Access<'o, T>),
    /// A contiguous copy, taken before the statement wrote anything.
    Copied(Tensor<T>),
}

impl<T: Element> Detached<'_, T> {
    /// The access the statement's kernels read.
    pub fn access(&self) -> Access<'_, T> {
        match self {
            Detached::Original(access) => *access,
            Detached::Copied(copy) => copy.__tdsl_operand(),
        }
    }
}

/// A contiguous row-major copy of the elements `access` addresses (rare: kept out of line, so
/// the overlap test inlines into every statement).
#[cold]
#[inline(never)]
fn copy_of<T: Element>(access: &Access<'_, T>) -> Tensor<T> {
    let raw = &access.raw;
    let layout = RawLayout::new(raw.shape.to_vec(), raw.strides.to_vec(), raw.offset);
    if raw.part {
        // A tensor of parts: its own elements, each made a `T`.
        return TensorView::from_raw(raw.data.cast::<T::Part>(), raw.len, layout)
            .to_tensor()
            .mapv(T::from_part);
    }
    TensorView::from_raw(raw.data, raw.len, layout).to_tensor()
}

/// A tensor-like value `tensor!` can read: owned tensors, views, and references to them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tensor that `tensor!` can read",
    label = "not a tensor",
    note = "operands are `Tensor`s, their views, nested arrays, slices and `Vec`s (rank 1) of `f32`, `f64`, `i32`, `i64`, `c32` or `c64`, ndarray arrays (feature `ndarray`), or references to these; build a `Tensor` from other data with `Tensor::from_shape_vec`"
)]
pub trait Operand {
    /// The element type.
    type Elem: Element;
    /// The extents as a type: [`Dynamic`] for run-time shapes, `(Extent<A>, Extent<B>, …)`
    /// for static ones (see [`crate::Extent`]), which `tensor!` checks at compile time.
    type Extents: ExtentsType;
    /// The extents, outermost first.
    fn __tdsl_shape(&self) -> ShapeRef<'_>;
    /// Raw read access for one statement.
    fn __tdsl_operand(&self) -> Access<'_, Self::Elem>;
    /// Whether every access this type hands out (`__tdsl_operand`, and a target's
    /// `__tdsl_target`) has exactly the shape `__tdsl_shape` reports: true for `Tensor` (and
    /// references to one), whose accesses are read from the same field. Where it holds, the
    /// written-out loops do not compare the two; an implementation that claims it and breaks
    /// it gets wrong values rather than the error that names it, never an access outside a
    /// buffer (nothing unsafe rests on it). Leave it false.
    #[doc(hidden)]
    const __TDSL_SHAPE_IS_ACCESS: bool = false;
}

impl<T: Element> Operand for Tensor<T> {
    type Elem = T;
    type Extents = Dynamic;
    const __TDSL_SHAPE_IS_ACCESS: bool = true;
    fn __tdsl_shape(&self) -> ShapeRef<'_> {
        self.shape().into()
    }
    fn __tdsl_operand(&self) -> Access<'_, T> {
        let data = self.as_slice();
        Access::new(
            RawAccess::new(data.as_ptr(), data.len(), self.shape(), self.strides(), 0).row_major(),
        )
    }
}

/// Both views read through their own layout.
macro_rules! view_operand {
    ($($view:ident),*) => {$(
        impl<T: Element> Operand for $view<'_, T> {
            type Elem = T;
            type Extents = Dynamic;
            fn __tdsl_shape(&self) -> ShapeRef<'_> {
                self.shape().into()
            }
            fn __tdsl_operand(&self) -> Access<'_, T> {
                let (data, len, layout) = self.raw();
                Access::new(RawAccess::over(data, len, layout))
            }
        }
    )*};
}

view_operand!(TensorView, TensorViewMut);

/// References read as what they point to, and a boxed tensor as the tensor (a large nested
/// array kept off the stack).
macro_rules! forward_operand {
    ($($pointer:ty),*) => {$(
        impl<X: Operand + ?Sized> Operand for $pointer {
            type Elem = X::Elem;
            type Extents = X::Extents;
            const __TDSL_SHAPE_IS_ACCESS: bool = X::__TDSL_SHAPE_IS_ACCESS;
            fn __tdsl_shape(&self) -> ShapeRef<'_> {
                (**self).__tdsl_shape()
            }
            fn __tdsl_operand(&self) -> Access<'_, X::Elem> {
                (**self).__tdsl_operand()
            }
        }
    )*};
}

forward_operand!(&X, &mut X, Box<X>);

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
        let raw = RawAccess::new(data, len, self.shape(), self.strides(), 0).row_major();
        // SAFETY: `data` is the tensor's own buffer of `len` elements, borrowed mutably with
        // `self` for the access's lifetime.
        unsafe { TargetAccess::new(raw) }.exclusive()
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
        // SAFETY: a writable view holds an exclusive borrow of its buffer, whose pointer it was
        // made from with write provenance, for as long as the view lives.
        unsafe { TargetAccess::new(RawAccess::over(data, len, layout)) }
    }
}

/// Read-only views named as targets: the method exists so that the mistake is reported as
/// `WritableView`'s message on the view's token, rather than as a method rustc cannot find;
/// its bound is never met, so it is never called.
pub trait ReadOnlyTarget {
    /// The element type.
    type Elem: Element;
    /// Never callable (see the trait).
    fn __tdsl_target(&self) -> TargetAccess<'_, Self::Elem>
    where
        Self: WritableView;
}

/// Implemented by no type: the bound that makes a read-only view as a target a type error.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is read-only, so it cannot be the target of a `tensor!` statement",
    label = "a read-only view",
    note = "write into a writable view (`t.view_mut()`), a `&mut` tensor or an owned tensor"
)]
pub trait WritableView {}

impl<T: Element> ReadOnlyTarget for TensorView<'_, T> {
    type Elem = T;
    fn __tdsl_target(&self) -> TargetAccess<'_, T>
    where
        Self: WritableView,
    {
        unreachable!("no type implements WritableView")
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

// Element types witness themselves, so generic code (`fn f<T: Element>`) gets literals too.
impl<T: Element> Witness for T {
    type Elem = T;
}

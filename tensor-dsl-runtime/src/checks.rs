//! The compile-time checks of `tensor!`, by name: every trait and function a type error about a
//! block can mention, each saying which mistake it catches, so that what a diagnostic names can
//! be looked up. Generated code calls them; nothing here is needed by hand. Above the rooms,
//! beside `__private`: it imports from `tensor`, `operand` and `exec`.

use crate::element::{c32, c64, Element, Fractional, Real};
use crate::operand::access::{Access, TargetAccess, Witness};
use crate::operand::extents::StaticLayout;

pub use crate::exec::backend::{
    same_backend, slices_run, OnDevice, OnDist, OnHost, RunsOn, SlicesRun,
};
pub use crate::operand::access::{
    Operand, ReadOnlyTarget, ShapeRef, TargetOwned, TargetShared, WritableView,
};
pub use crate::operand::extents::{AdmitsRank, Agrees};

/// A Rust scalar of a statement as its element type: a scalar of another type is a type error
/// on the scalar's own tokens (generated code calls this spanned there).
#[inline(always)]
pub fn scalar_like<W: Witness + ?Sized, V: ScalarOf<W::Elem>>(_witness: &W, value: V) -> W::Elem {
    value.into_element()
}

/// Implemented by `T` itself, and by a real type for the complex type of its precision: a Rust
/// scalar must have the statement's element type, or be a real number in a complex statement.
#[diagnostic::on_unimplemented(
    message = "this Rust scalar is `{Self}`, but the statement's elements are `{T}`",
    label = "expected `{T}`, found `{Self}`",
    note = "convert it where it is defined, or write `{{ value as {T} }}` in the statement"
)]
pub trait ScalarOf<T> {
    /// The scalar as a `T`.
    fn into_element(self) -> T;
}

impl<T> ScalarOf<T> for T {
    #[inline(always)]
    fn into_element(self) -> T {
        self
    }
}

/// A scalar `let`'s value as its declared type, which must be the statement's element type:
/// another is a type error on the declared type's tokens (generated code calls this spanned
/// there).
#[inline(always)]
pub fn declared<D, V: DeclaredAs<D>>(value: V) -> D {
    value.into_declared()
}

/// Implemented only by `T` for `T`: a scalar `let` declared with a type is declared with its
/// statement's element type.
#[diagnostic::on_unimplemented(
    message = "this statement's elements are `{Self}`, but its result is declared `{D}`",
    label = "declared `{D}` here",
    note = "declare `{Self}`, and convert after the block if another type is needed"
)]
pub trait DeclaredAs<D> {
    /// The value, unchanged: `Self` is `D`.
    fn into_declared(self) -> D;
}

impl<T> DeclaredAs<T> for T {
    #[inline(always)]
    fn into_declared(self) -> T {
        self
    }
}

/// Read access to an operand whose elements must be those of `witness`: a mismatch is a type
/// error on the operand's own tokens, not inside the generated loops.
#[inline(always)]
pub fn operand_like<'a, W, X>(_witness: &W, operand: &'a X) -> Access<'a, W::Elem>
where
    W: Witness + ?Sized,
    X: Operand + ?Sized,
    X::Elem: ElementsOf<W::Elem>,
{
    ElementsOf::access(operand.__tdsl_operand())
}

/// The element type of a statement whose operands fix it, from its first operand on (see
/// [`join`]), as a zero of that type.
#[inline(always)]
pub fn elements_of<X: Operand + ?Sized>(_first: &X) -> X::Elem {
    <X::Elem as Element>::ZERO
}

/// The element type of a statement once `next` joins the operands before it (`so_far`'s
/// type): see [`Joins`].
#[inline(always)]
pub fn join<T: Element, X: Operand + ?Sized, J: Element>(_so_far: T, _next: &X) -> J
where
    X::Elem: Joins<T, Joined = J>,
{
    J::ZERO
}

/// The target of a statement whose tensors, the target's type first, join to `J`, as an access
/// writing `J`s: itself, for `J` is the target's own type; a complex `J` (a complex operand
/// into a real target) is reported on the target's token, once (see [`StoredIn`]).
#[inline(always)]
pub fn stored_in<T, J: StoredIn<T>>(
    target: TargetAccess<'_, T>,
    _joined: J,
) -> TargetAccess<'_, J> {
    J::target(target)
}

/// Implemented by `T` for `T` only: the values of a statement whose tensors, the target's type
/// first, join to `Self` can be written into a target of `T` elements. The join of a real
/// target's type and a complex operand's is complex, which a real target cannot hold.
#[diagnostic::on_unimplemented(
    message = "this statement computes `{Self}` values, but its target holds `{T}`",
    label = "holds `{T}`: a `{Self}` value cannot be written here",
    note = "write `re(..)` or `abs(..)` of the complex value into a complex tensor and read that, or make the target complex"
)]
pub trait StoredIn<T>: Element {
    /// The target, writing `Self`s.
    fn target(target: TargetAccess<'_, T>) -> TargetAccess<'_, Self>;
}

impl<T: Element> StoredIn<T> for T {
    #[inline(always)]
    fn target(target: TargetAccess<'_, T>) -> TargetAccess<'_, T> {
        target
    }
}

/// The element type of a statement whose operands so far have `T` elements, once an operand
/// of `Self` elements joins them: `T` if `Self` is `T`, and the complex type where a real type
/// meets the complex type of its precision (`f64` with [`c64`], `f32` with [`c32`]), whose
/// statement reads the real tensor as it lies. No other types mix.
#[diagnostic::on_unimplemented(
    message = "this tensor's elements are `{Self}`, but the statement's tensors before it hold `{T}`",
    label = "elements of `{Self}` here",
    note = "a statement computes in one element type, and reads a real tensor in a complex statement of its precision (`f64` with `c64`, `f32` with `c32`); convert other tensors first, such as with `.mapv(|x| x as f64)`"
)]
pub trait Joins<T>: Element {
    /// The joined element type.
    type Joined: Element;
}

impl<T: Element> Joins<T> for T {
    type Joined = T;
}

/// Implemented by `T` for `T`, and by a real type for the complex type of its precision (read
/// where it lies, each element converted as it is loaded): every tensor of a statement is
/// readable as the statement's element type, which is its tensors' types joined ([`Joins`]),
/// so a mismatch is reported by the join, on the operand's token. (A bound on the element type
/// itself, rather than `Operand<Elem = T>`, keeps any other mismatch this message instead of
/// rustc's "type mismatch resolving".)
#[diagnostic::on_unimplemented(
    message = "this tensor's elements are `{Self}`, but the statement computes `{T}`",
    label = "expected elements of `{T}`, found `{Self}`",
    note = "a statement computes in one element type, and reads a real tensor in a complex statement of its precision (`f64` with `c64`, `f32` with `c32`); convert other tensors first, such as with `.mapv(|x| x as f64)`"
)]
pub trait ElementsOf<T>: Sized {
    /// The access, reading `T`s.
    fn access(access: Access<'_, Self>) -> Access<'_, T>;
}

impl<T> ElementsOf<T> for T {
    #[inline(always)]
    fn access(access: Access<'_, T>) -> Access<'_, T> {
        access
    }
}

/// A real tensor in a complex statement of its own precision: read where it lies, each element
/// converted as it is loaded (no converted copy).
macro_rules! parts_read_whole {
    ($($part:ident $whole:ident)*) => {$(
        impl ElementsOf<$whole> for $part {
            #[inline(always)]
            fn access(access: Access<'_, $part>) -> Access<'_, $whole> {
                access.as_parts_of()
            }
        }

        impl Joins<$whole> for $part {
            type Joined = $whole;
        }

        impl Joins<$part> for $whole {
            type Joined = $whole;
        }

        impl ScalarOf<$whole> for $part {
            #[inline(always)]
            fn into_element(self) -> $whole {
                <$whole as Element>::from_part(self)
            }
        }
    )*};
}

parts_read_whole!(f32 c32 f64 c64);

/// What a `tensor!` expansion binds under the first token of a name to prove that a later token
/// of the same text names the same variable: `{ let a = SameBinding; same_binding(a); }`
/// compiles only if macro hygiene resolves the second `a` to the first.
#[derive(Clone, Copy)]
pub struct SameBinding;

/// Implemented only by [`SameBinding`].
#[diagnostic::on_unimplemented(
    message = "this name refers to a different tensor than the same name elsewhere in this `tensor!` block (macro hygiene keeps them apart): rename one of them",
    label = "not the tensor the first use of this name refers to"
)]
pub trait IsSameBinding {}

impl IsSameBinding for SameBinding {}

/// Compiles only if the statement's elements have `/` and the transcendental functions (see
/// [`Fractional`]): a `/`, `exp` or `powi` over integers is reported on its token. Does
/// nothing.
#[inline(always)]
pub fn needs_division<T: Fractional>(_element: &T) {}

/// Compiles only if the statement's elements hold a literal that is not a whole number (see
/// [`HoldsFractions`]): `0.5` in an integer statement is reported on its token. Does nothing.
#[inline(always)]
pub fn needs_fractions<T: HoldsFractions>(_element: &T) {}

/// Compiles only if the statement's elements hold a whole number past `i32`'s range (see
/// [`HoldsWide`]): `3000000000` in an `i32` statement is reported on its token. Does nothing.
#[inline(always)]
pub fn needs_wide<T: HoldsWide>(_element: &T) {}

/// Element types that hold fractions: floats and complex numbers.
#[diagnostic::on_unimplemented(
    message = "`{Self}` elements hold whole numbers only, and this literal is not one",
    label = "not a whole number",
    note = "write a whole number, or compute in `f32`, `f64`, `c32` or `c64`"
)]
pub trait HoldsFractions: Element {}

impl HoldsFractions for f32 {}
impl HoldsFractions for f64 {}
impl HoldsFractions for crate::c32 {}
impl HoldsFractions for crate::c64 {}

/// Element types that hold whole numbers past `i32`'s range: floats, complex numbers and `i64`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` elements cannot hold this literal: it is past `i32`'s range",
    label = "past `i32`'s range",
    note = "write a smaller number, or compute in `i64`, `f32`, `f64`, `c32` or `c64`"
)]
pub trait HoldsWide: Element {}

impl HoldsWide for f32 {}
impl HoldsWide for f64 {}
impl HoldsWide for i64 {}
impl HoldsWide for crate::c32 {}
impl HoldsWide for crate::c64 {}

/// Compiles only if the statement's elements are ordered (see [`Real`]): a `max` or `min`
/// over complex numbers is reported on its token. Does nothing.
#[inline(always)]
pub fn needs_order<T: Real>(_element: &T) {}

/// Compiles only when `_name` is the [`SameBinding`] marker; does nothing.
#[inline(always)]
pub fn same_binding<X: IsSameBinding>(_name: X) {}

/// Compiles only if a tensor whose layout is `_layout` admits `R` indices (see
/// [`AdmitsRank`]); does nothing. Through the layout, so a value that is no tensor is reported
/// once, by [`shape_of`].
#[inline(always)]
pub fn admits_rank<const R: usize, E: AdmitsRank<R>>(_layout: &StaticLayout<E>) {}

/// Compiles only if two extents of index `I` can agree (see [`Agrees`]); does nothing.
#[inline(always)]
pub fn agree<I: ?Sized, A: Agrees<I, B>, B>(_first: A, _later: B) {}

/// The extent of axis `axis` of a tensor whose layout is `layout` and whose shape is `shape`:
/// its type's constant where the type states static extents (a constant the compiler sees,
/// where it cannot see into the shape slice, so extents unified from it are constants too),
/// else the shape's.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn extent_at<E>(layout: &StaticLayout<E>, shape: &[usize], axis: usize) -> usize {
    if layout.is_static {
        layout.extents[axis]
    } else {
        shape[axis]
    }
}

/// `operand`'s extents, and what its type says of them (see [`StaticLayout`]); a function
/// rather than a method path, so a value that is no operand is reported on its own tokens.
#[inline(always)]
pub fn shape_of<X: Operand + ?Sized>(
    operand: &X,
    rank: usize,
) -> (ShapeRef<'_>, StaticLayout<X::Extents>) {
    let shape = operand.__tdsl_shape();
    let layout = StaticLayout::claiming(&shape, rank).trusting(X::__TDSL_SHAPE_IS_ACCESS);
    (shape, layout)
}

/// Implemented by the host's kind only ([`OnHost`]): the matrix operations (`cholesky`,
/// `solve`, `qr`, `svd`, `eigh`, `matpow`) run on host tensors, calling `faer`. A
/// `CudaTensor` ([`OnDevice`]) or `DistTensor` ([`OnDist`]) operand is a compile error on its
/// token, naming this trait.
#[diagnostic::on_unimplemented(
    message = "matrix operations (`cholesky`, `solve`, `qr`, `svd`, `eigh`, `matpow`) run on host tensors only, and this tensor is of kind `{Self}`",
    label = "not a host tensor",
    note = "copy a device tensor to the host first (`cuda_tensor.to_host()`); gather a distributed one (`gather_to_root`, or `redistribute` it replicated and take `local()`)"
)]
pub trait RunsMatrixOperations {}

impl RunsMatrixOperations for OnHost {}

/// Compiles only if `backend` runs on the host (see [`RunsMatrixOperations`]).
#[inline(always)]
pub fn runs_matrix_operations<B: crate::exec::backend::Backend>(_backend: &B)
where
    B::Kind: RunsMatrixOperations,
{
}

//! The only items generated code names (`::tensor_dsl::__private::…`); not public API.

pub use crate::access::{
    Access, Detached, Operand, TargetAccess, TargetOwned, TargetShared, Witness,
};
pub use crate::check::{check_position, check_rank, expect, unify, Occurrence};
#[cfg(feature = "cuda")]
pub use crate::cuda::backend::{same_backend, Backend, Host, HostBackend, OwnBackend, Probe};
#[cfg(feature = "cuda")]
pub use crate::cuda::Kernel;
pub use crate::element::Element;
pub use crate::error::ShapeError;
pub use crate::extents::{
    AdmitsRank, Agrees, AxisExtent, Dynamic, ExtentsType, LetResult, StaticLayout, MAX_STATIC_RANK,
};
pub use crate::gemm::contract;
pub use crate::kernel::evaluate;
pub use crate::network::{contract_network, PlanCache};
pub use crate::step::{Axis, Mode, Step, TargetUse, Use};
pub use crate::tensor::Tensor;

/// A numeric literal as a value of the statement's element type.
#[inline(always)]
pub fn lit<W: Witness + ?Sized>(_witness: &W, value: f64) -> W::Elem {
    Element::from_f64(value)
}

/// A Rust scalar of a statement as its element type: a scalar of another type is a type error
/// on the scalar's own tokens (generated code calls this spanned there).
#[inline(always)]
pub fn scalar_like<W: Witness + ?Sized, V: ScalarOf<W::Elem>>(_witness: &W, value: V) -> W::Elem {
    value.into_element()
}

/// Implemented only by `T` itself: a Rust scalar must have the statement's element type.
#[diagnostic::on_unimplemented(
    message = "this Rust scalar is `{Self}`, but the statement's elements are `{T}`",
    label = "expected `{T}`, found `{Self}`",
    note = "convert it where it is defined, or write `{{ value as {T} }}` in the statement"
)]
pub trait ScalarOf<T> {
    fn into_element(self) -> T;
}

impl<T> ScalarOf<T> for T {
    #[inline(always)]
    fn into_element(self) -> T {
        self
    }
}

/// Zero in the statement's element type: the start of a scalar sum.
#[inline(always)]
pub fn zero_like<W: Witness + ?Sized>(_witness: &W) -> W::Elem {
    <W::Elem as Element>::ZERO
}

/// A zero-filled result tensor in the statement's element type.
pub fn zeros_like<W: Witness + ?Sized, const R: usize>(
    _witness: &W,
    shape: [usize; R],
) -> Tensor<W::Elem> {
    Tensor::zeros(shape)
}

/// A zero-filled `let` result whose type follows the extent types of its indices (see
/// [`LetResult`]): a nested array when every one is static, else a tensor.
#[inline(always)]
pub fn new_result<W: Witness + ?Sized, E: LetResult<W::Elem>>(
    _witness: &W,
    _extents: E,
    shape: &[usize],
) -> E::Output {
    E::zeros(shape)
}

/// Steps with at most this many points (the product of their loops' extents) over static
/// operands run as loops written out in the expansion, which the compiler unrolls; larger
/// ones are worth the general kernels' blocking, GEMM calls and threads.
pub const SMALL_STEP_POINTS: usize = 4096;

/// Whether a step over `extents` is small enough for written-out loops (see
/// [`SMALL_STEP_POINTS`]).
#[inline(always)]
pub fn is_small<const L: usize>(extents: &[usize; L]) -> bool {
    let mut points: usize = 1;
    for &extent in extents {
        points = points.saturating_mul(extent);
    }
    points <= SMALL_STEP_POINTS
}

/// Stand-in for a `let` tensor of a block that failed to compile: gives the binding the type
/// of an operand so rustc adds no errors of its own. Never runs (the build has already failed).
pub fn stub_tensor<X: Operand + ?Sized>(_operand: &X) -> Tensor<X::Elem> {
    unreachable!("tensor! stubs exist only next to a compile error")
}

/// Stand-in for a scalar `let` of a block that failed to compile (see [`stub_tensor`]).
pub fn stub_scalar<X: Operand + ?Sized>(_operand: &X) -> X::Elem {
    unreachable!("tensor! stubs exist only next to a compile error")
}

/// Stand-in for a `let` with no operand to take a type from (see [`stub_tensor`]).
pub fn stub_any<T>() -> T {
    unreachable!("tensor! stubs exist only next to a compile error")
}

/// Read access to an operand whose elements must be those of `witness`: a mismatch is a type
/// error on the operand's own tokens, not inside the generated loops.
#[inline(always)]
pub fn operand_like<'a, W, X>(_witness: &W, operand: &'a X) -> Access<'a, W::Elem>
where
    W: Witness + ?Sized,
    X: Operand<Elem = W::Elem> + ?Sized,
{
    operand.__tdsl_operand()
}

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

/// Compiles only when `_name` is the [`SameBinding`] marker; does nothing.
#[inline(always)]
pub fn same_binding<X: IsSameBinding>(_name: X) {}

/// Operands whose extents admit `R` indices; implemented through [`Operand::Extents`], so a
/// value that is no operand fails on `Operand`, at the argument, not on a projection.
pub trait OperandOfRank<const R: usize> {}

impl<X: Operand + ?Sized, const R: usize> OperandOfRank<R> for X where X::Extents: AdmitsRank<R> {}

/// Compiles only if `operand`'s type admits `R` indices (see [`AdmitsRank`]); does nothing.
#[inline(always)]
pub fn admits_rank<const R: usize, X: OperandOfRank<R> + ?Sized>(_operand: &X) {}

/// The extent type of an operand's axis `K` (see [`AxisExtent`]).
pub trait OperandAxis<const K: usize> {
    type Extent: Default;
}

impl<X: Operand + ?Sized, const K: usize> OperandAxis<K> for X
where
    X::Extents: AxisExtent<K>,
{
    type Extent = <X::Extents as AxisExtent<K>>::Extent;
}

/// The extent type of `operand`'s axis `K`, as a value for [`agree`].
#[inline(always)]
pub fn extent_of<const K: usize, X: OperandAxis<K> + ?Sized>(_operand: &X) -> X::Extent {
    Default::default()
}

/// Compiles only if two extents of index `I` can agree (see [`Agrees`]); does nothing.
#[inline(always)]
pub fn agree<I: ?Sized, A: Agrees<I, B>, B>(_first: A, _later: B) {}

/// `operand`'s extents, and what its type says of them (see [`StaticLayout`]); a function
/// rather than a method path, so a value that is no operand is reported on its own tokens.
#[inline(always)]
pub fn shape_of<X: Operand + ?Sized>(operand: &X) -> (&[usize], StaticLayout) {
    (operand.__tdsl_shape(), StaticLayout::of(operand))
}

/// Read access to `operand` (see [`shape_of`] for why a function).
#[inline(always)]
pub fn read_operand<X: Operand + ?Sized>(operand: &X) -> Access<'_, X::Elem> {
    operand.__tdsl_operand()
}

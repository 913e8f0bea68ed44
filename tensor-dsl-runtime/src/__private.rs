//! The only items generated code names (`::tensor_dsl::__private::…`); not public API.

pub use crate::element::Element;
pub use crate::error::ShapeError;
pub use crate::exec::backend::{
    same_backend, Backend, Host, HostBackend, OwnBackend, Probe, StepModule,
};
pub use crate::exec::gemm::contract;
pub use crate::exec::loop_nest::evaluate;
pub use crate::exec::network::{contract_network, PlanCache};
pub use crate::exec::step::{Axis, Step, TargetUse, Use};
pub use crate::operand::access::{
    Access, Detached, Mode, Operand, ReadOnlyTarget, TargetAccess, TargetOwned, TargetShared,
    Witness,
};
pub use crate::operand::array::LetResult;
pub use crate::operand::check::{
    check_position, check_rank, check_result_size, expect, unify, Occurrence,
};
pub use crate::operand::extents::{
    AdmitsRank, Agrees, AxisExtent, Dynamic, Extents0, ExtentsType, Meet, StaticLayout,
    MAX_STATIC_RANK,
};
pub use crate::operand::static_access::{StaticAccess, StaticTarget};
pub use crate::tensor::Tensor;

/// A `β·target` term of a point-wise statement: with β = 0 the target's element is not used,
/// so NaN or infinity already there does not reach the result (BLAS's β = 0, for every form).
#[inline(always)]
pub fn times_target<T: Element>(beta: T, target: T) -> T {
    if beta == T::ZERO {
        T::ZERO
    } else {
        beta * target
    }
}

/// A numeric literal as a value of the statement's element type.
#[inline(always)]
pub fn lit<W: Witness + ?Sized>(_witness: &W, value: f64) -> W::Elem {
    Element::from_f64(value)
}

/// A `powi` exponent computed by Rust, in the slot of a CUDA kernel's scalars that carries it
/// (`Element::from_exponent_bits`).
#[inline(always)]
pub fn exponent_slot<W: Witness + ?Sized>(_witness: &W, exponent: i32) -> W::Elem {
    Element::from_exponent_bits(exponent)
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
    fn into_declared(self) -> D;
}

impl<T> DeclaredAs<T> for T {
    #[inline(always)]
    fn into_declared(self) -> T {
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
    X: Operand + ?Sized,
    X::Elem: ElementsOf<W::Elem>,
{
    ElementsOf::access(operand.__tdsl_operand())
}

/// Implemented only by `T` for `T`: every tensor of a statement has the statement's element
/// type. (A bound on the element type itself, rather than `Operand<Elem = T>`, makes a mismatch
/// this message instead of rustc's "type mismatch resolving".)
#[diagnostic::on_unimplemented(
    message = "this tensor's elements are `{Self}`, but the statement's elements are `{T}`",
    label = "expected elements of `{T}`, found `{Self}`",
    note = "one statement computes in one element type: convert the tensor first, such as with `.mapv(|x| x as {T})`"
)]
pub trait ElementsOf<T>: Sized {
    /// The access, unchanged: `Self` is `T`.
    fn access(access: Access<'_, Self>) -> Access<'_, T>;
}

impl<T> ElementsOf<T> for T {
    #[inline(always)]
    fn access(access: Access<'_, T>) -> Access<'_, T> {
        access
    }
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

/// Compiles only if a tensor whose layout is `_layout` admits `R` indices (see
/// [`AdmitsRank`]); does nothing. Through the layout, so a value that is no tensor is reported
/// once, by [`shape_of`].
#[inline(always)]
pub fn admits_rank<const R: usize, E: AdmitsRank<R>>(_layout: &StaticLayout<E>) {}

/// The extent type of axis `K` of a tensor whose layout is `_layout` (see [`AxisExtent`]), as
/// a value for [`agree`] and [`new_result`].
#[inline(always)]
pub fn extent_of<const K: usize, E: AxisExtent<K>>(_layout: &StaticLayout<E>) -> E::Extent {
    Default::default()
}

/// The extent type of an index over two of its uses (see [`Meet`]), as a value.
#[inline(always)]
pub fn meet<A: Meet<B>, B>(_first: A, _later: B) -> A::Output {
    Default::default()
}

/// Compiles only if two extents of index `I` can agree (see [`Agrees`]); does nothing.
#[inline(always)]
pub fn agree<I: ?Sized, A: Agrees<I, B>, B>(_first: A, _later: B) {}

/// `operand`'s extents, and what its type says of them (see [`StaticLayout`]); a function
/// rather than a method path, so a value that is no operand is reported on its own tokens.
#[inline(always)]
pub fn shape_of<X: Operand + ?Sized>(operand: &X) -> (&[usize], StaticLayout<X::Extents>) {
    (operand.__tdsl_shape(), StaticLayout::OF)
}

/// The layout `operand`'s type states (see [`StaticLayout`]).
#[inline(always)]
pub fn layout_of<X: Operand + ?Sized>(_operand: &X) -> StaticLayout<X::Extents> {
    StaticLayout::OF
}

/// Read access to `operand` (see [`shape_of`] for why a function).
#[inline(always)]
pub fn read_operand<X: Operand + ?Sized>(operand: &X) -> Access<'_, X::Elem> {
    operand.__tdsl_operand()
}

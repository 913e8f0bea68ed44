//! The only items generated code names (`::tensor_dsl::__private::…`); not public API.

pub use crate::checks::*;
pub use crate::element::{Element, Fractional, Real};
pub use crate::error::ShapeError;
pub use crate::exec::backend::{
    same_backend, Backend, Host, HostBackend, OwnBackend, Probe, StepModule,
};
pub use crate::exec::gemm::{contract, contract_detached};
pub use crate::exec::loop_nest::{
    copy, copy_detached, evaluate, evaluate_detached, AnyNest, NestPaths, PointWise, Summing,
};
pub use crate::exec::network::{contract_network, PlanCache};
pub use crate::exec::pointwise::pointwise;
pub use crate::exec::step::{Axis, Step, TargetUse, Unproven, Use};
#[cfg(feature = "matrix")]
pub use crate::matrix::{cholesky, eigh, matpow, qr, solve, svd, Grouped, Truncation};
pub use crate::operand::access::{
    Access, Detached, Mode, Operand, ReadOnlyTarget, TargetAccess, TargetOwned, TargetShared,
    Witness,
};
pub use crate::operand::array::LetResult;
pub use crate::operand::check::{
    check_position, check_range, check_rank, check_result_size, expect, unify, Site,
};
pub use crate::operand::dense::{DenseAccess, DenseRun, DenseTarget, Temporary, TemporaryStorage};
pub use crate::operand::extents::{
    AdmitsRank, Agrees, AxesExtents, AxisExtent, Dynamic, Extents0, ExtentsType, Meet,
    StaticLayout, MAX_STATIC_RANK,
};
pub use crate::operand::range::{slice, slice_target, Sliced, SlicedTarget};
pub use crate::tensor::Tensor;

/// A `β·target` term of a point-wise statement: with β = 0 the target's element is not used,
/// so NaN or infinity already there does not reach the result (BLAS's β = 0, for every form).
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn times_target<T: Element>(beta: T, target: T) -> T {
    if beta == T::ZERO {
        T::ZERO
    } else {
        beta.times(target)
    }
}

/// A numeric literal as a value of the statement's element type.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn lit<W: Witness + ?Sized>(_witness: &W, value: f64) -> W::Elem {
    Element::from_f64(value)
}

/// A `powi` exponent computed by Rust, in the slot of a CUDA kernel's scalars that carries it
/// (`Element::from_exponent_bits`).
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn exponent_slot<W: Witness + ?Sized>(_witness: &W, exponent: i32) -> W::Elem
where
    W::Elem: Fractional,
{
    Fractional::from_exponent_bits(exponent)
}

/// Zero in the statement's element type: the start of a scalar sum.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
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
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn new_result<W: Witness + ?Sized, E: LetResult<W::Elem>>(
    _witness: &W,
    _extents: E,
    shape: &[usize],
) -> E::Output {
    E::zeros(shape)
}

/// Steps with at most this many points (the product of their loops' extents, an empty loop
/// counted as one) over static operands run as loops written out in the expansion, which the
/// compiler unrolls; larger
/// ones are worth the general kernels' blocking, GEMM calls and threads.
pub const SMALL_STEP_POINTS: usize = 4096;

/// Steps with at most this many points over dense tensors of run-time extents also run as
/// the written-out loops (their bounds and strides are then values, not constants): below it,
/// proving a step and dispatching it to a kernel costs more than the kernel saves.
pub const SMALL_DYNAMIC_STEP_POINTS: usize = 512;

/// Whether the written-out loops of a summing step take the target's last loop in chunks of
/// points (independent sums the compiler keeps in vector lanes) before the points left one at
/// a time. Not where the runtime is built unoptimized (`cfg(tdsl_unoptimized)`): nothing is
/// vectorized there, and the build folds the constant branch away, which saved about 1 s per
/// 100 statements of a debug build (`benches/compile_cost.py`: 5.3 s with the chunks, 4.25 s
/// without). Generated code writes the chunks only where debug assertions are off, so a
/// debug build does not type-check them either.
pub const CHUNKED_SUMS: bool = !cfg!(tdsl_unoptimized);

/// Generated code's choice between a statement's two forms, `by_build! { { written-out loops
/// or the general path } { the general path } }`: the first where the runtime is optimized,
/// the second where it is built unoptimized (`cfg(tdsl_unoptimized)`, the crate using
/// `tensor!` then being a debug build too, with Cargo's usual profiles). The tokens it drops
/// are never type-checked or compiled: that took a debug build of 100 statements from 2.8 s to
/// 1.4 s (`benches/compile_cost.py`), at the general path's cost per call for small tensors.
/// Both forms give the same results up to rounding (a sum's terms may be added in another
/// order). The feature `written-out-in-debug` (this repository's own test builds) keeps the
/// first in unoptimized builds too, so the debug test suite runs the written-out loops;
/// `__tensor_general!` writes only the second with `tensor!`'s plan, for the tests that
/// compare the two.
#[cfg(any(not(tdsl_unoptimized), feature = "written-out-in-debug"))]
#[doc(hidden)]
#[macro_export]
macro_rules! __tdsl_by_build {
    ({ $($both:tt)* } { $($general:tt)* }) => { $($both)* };
}

/// See the other build's definition.
#[cfg(not(any(not(tdsl_unoptimized), feature = "written-out-in-debug")))]
#[doc(hidden)]
#[macro_export]
macro_rules! __tdsl_by_build {
    ({ $($both:tt)* } { $($general:tt)* }) => { $($general)* };
}

pub use crate::__tdsl_by_build as by_build;

/// Whether a step over `extents` is small enough for written-out loops (see
/// [`SMALL_STEP_POINTS`]; `is_static`: every tensor of the statement has static extents).
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn is_small<const L: usize>(is_static: bool, extents: &[usize; L]) -> bool {
    // Iterations, not points: a nest whose inner loop is empty still runs the loops outside
    // it (`[3, usize::MAX / 2, 0]` has no point but would spin), which the kernel skips.
    iterations(extents)
        <= if is_static {
            SMALL_STEP_POINTS
        } else {
            SMALL_DYNAMIC_STEP_POINTS
        }
}

/// Whether a point-wise step over `extents` reading `operands` runs, whose accesses all have
/// the target's indices in its order and are dense, and whose one term is one tensor's
/// elements, scaled or added (`c = a`, `c = 2·a`, `c += a`), is better run as one loop over the
/// elements (`DenseTarget::pointwise`) than by the general kernel: whenever the kernel would
/// not split it between threads, since the loop is the kernel's own inner loop without the
/// proof and dispatch before it (at 64 × 64, half the time); past that the kernel's copy
/// engines stream a plain copy's stores. Every other such step is one loop at every size
/// (`pointwise`).
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn is_small_run<const L: usize>(operands: usize, extents: &[usize; L]) -> bool {
    points(extents).saturating_mul(operands + 1) < crate::exec::loop_nest::PARALLEL_WORK
}

/// The iterations written-out loops over `extents` may run: their product with an empty
/// extent counted as one, saturating.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
fn iterations<const L: usize>(extents: &[usize; L]) -> usize {
    extents.iter().fold(1usize, |points, &extent| {
        points.saturating_mul(extent.max(1))
    })
}

/// The points of a step over `extents` (their product, saturating).
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
fn points<const L: usize>(extents: &[usize; L]) -> usize {
    extents
        .iter()
        .fold(1usize, |points, &extent| points.saturating_mul(extent))
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

/// The extent type of axis `K` of a tensor whose layout is `_layout` (see [`AxisExtent`]), as
/// a value for [`agree`] and [`new_result`].
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn extent_of<const K: usize, E: AxisExtent<K>>(_layout: &StaticLayout<E>) -> E::Extent {
    Default::default()
}

/// The extent type of an index over two of its uses (see [`Meet`]), as a value.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn meet<A: Meet<B>, B>(_first: A, _later: B) -> A::Output {
    Default::default()
}

/// The layout `operand`'s type states, with its shape (see [`StaticLayout`]).
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn layout_of<X: Operand + ?Sized>(operand: &X, rank: usize) -> StaticLayout<X::Extents> {
    StaticLayout::claiming(&operand.__tdsl_shape(), rank).trusting(X::__TDSL_SHAPE_IS_ACCESS)
}

/// Read access to `operand` (see [`shape_of`] for why a function).
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn read_operand<X: Operand + ?Sized>(operand: &X) -> Access<'_, X::Elem> {
    operand.__tdsl_operand()
}

#[cfg(tdsl_unoptimized)]
pub use crate::exec::prebuilt::instances as prebuilt_instances;

/// A step's value at a point, as the one closure both paths of a statement call (the kernel
/// and the written-out loops). The witness and `N` fix the closure's argument and result types
/// where it is written, so a value of another type in the body (`2.0f32` in an `f64`
/// statement) is reported on its own token, not on the calls that take the closure.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn point_body<W: Witness + ?Sized, const N: usize, F: Fn([W::Elem; N]) -> W::Elem>(
    _witness: &W,
    body: F,
) -> F {
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_inner_loop_does_not_make_a_huge_nest_small() {
        assert!(is_small(false, &[4, 4]));
        assert!(is_small(false, &[0, 4]));
        // No point, but the loops outside the empty one would run `usize::MAX / 2` times.
        assert!(!is_small(false, &[3, usize::MAX / 2, 0]));
        assert!(!is_small(true, &[usize::MAX / 2, 0]));
        // A flat loop over the elements runs none.
        assert!(is_small_run(2, &[3, usize::MAX / 2, 0]));
    }
}

//! Operand types → where a statement runs. Generated code (with feature `cuda`) asks the
//! statement's first tensor for its `Backend` and every other tensor to be on the same kind,
//! a type error on the offending operand otherwise; each proven step then goes to the backend
//! with its code in every form a backend runs (the host closure, the device `StepModule`).
//! `Host` is the engines of this room; a device backend is a sibling room's (`cuda/`).
//! Invariant: host engines only ever see host tensors' steps (the kind is a type), and a device
//! runs only steps over its own memory (checked per step).

use crate::element::{Element, Kind};
use crate::operand::access::{Mode, Witness};
use crate::operand::array::LetResult;
use crate::operand::range::{Sliced, SlicedTarget};
use crate::tensor::{Tensor, TensorView, TensorViewMut};

use super::network::PlanCache;
use super::step::{Step, TargetUse, Use};

/// A step's device code: the text of its CUDA module for each element type, and the module's
/// shape (what the compiler's `emit::cuda::ModuleShape` says). Handed to every backend beside
/// the host closure; the host ignores it. Made only through the unsafe `StepModule::new`: the
/// text becomes machine code that runs with the step's pointers.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct StepModule<'t> {
    /// The texts for `f32`, `f64`, `i32`, `i64`, `c32` and `c64` elements; empty for a type
    /// the step's statement cannot have (a `/` over integers), which is refused at compile
    /// time.
    texts: [&'t str; 6],
    pub(crate) operands: usize,
    pub(crate) loops: usize,
    pub(crate) target_loops: usize,
    pub(crate) scalars: usize,
}

impl StepModule<'static> {
    /// No device code, for builds where no step reaches a device (distributed statements
    /// without the `cuda` feature): its shape matches no step, so a device refuses it.
    pub const NONE: StepModule<'static> = StepModule {
        texts: [""; 6],
        operands: usize::MAX,
        loops: usize::MAX,
        target_loops: usize::MAX,
        scalars: usize::MAX,
    };
}

impl<'t> StepModule<'t> {
    /// A step's modules and shape.
    ///
    /// # Safety
    /// Each text must be a module `tensor-dsl-compiler` wrote for a step of this shape (its
    /// `emit::cuda::step_module`): such a module reads operand `k` and writes the target only at
    /// `Σ index · stride` over the launch's extents, the offsets a proven `Step` covers, and
    /// runs no other code. Any other text is run as is, with the step's pointers.
    #[allow(clippy::too_many_arguments)]
    pub const unsafe fn new(
        texts: [&'t str; 6],
        operands: usize,
        loops: usize,
        target_loops: usize,
        scalars: usize,
    ) -> Self {
        StepModule {
            texts,
            operands,
            loops,
            target_loops,
            scalars,
        }
    }

    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn text<T: Element>(&self) -> &'t str {
        match T::KIND {
            Kind::F32 => self.texts[0],
            Kind::F64 => self.texts[1],
            Kind::I32 => self.texts[2],
            Kind::I64 => self.texts[3],
            Kind::C32 => self.texts[4],
            Kind::C64 => self.texts[5],
        }
    }
}

/// Kind of the host backend.
pub struct OnHost;
/// Kind of a device backend (a CUDA device or the simulator, feature `cuda`).
#[cfg_attr(not(feature = "cuda"), allow(dead_code))]
pub struct OnDevice;
/// Kind of the distributed backend (`DistTensor`s over MPI, feature `mpi`).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub struct OnDist;

/// Where a statement's steps run; what generated code calls for each of them.
pub trait Backend {
    /// `OnHost`, `OnDevice` or `OnDist`: which tensors the backend reads and writes
    /// (`RunsOn`).
    type Kind;
    /// A step as this backend runs it: a proven [`Step`] over the backend's memory (host and
    /// devices), or the accesses and axes a distributed backend plans from.
    type Step<'a, T: Element, const L: usize, const N: usize>;
    /// Makes a step from the target, how to combine with it, α, the loops' extents (the
    /// target's `n_out` first) and the operands, checking it as [`Step::new`] does.
    #[allow(clippy::too_many_arguments)]
    fn prove<'a, T: Element, const L: usize, const N: usize>(
        &self,
        target: TargetUse<'a, T>,
        mode: Mode<T>,
        alpha: T,
        extents: [usize; L],
        n_out: usize,
        operands: [Use<'a, T>; N],
    ) -> Self::Step<'a, T, L, N>;
    /// The tensor a `let` makes.
    type Tensor<T: Element>;
    /// The tensor a `let` of rank 1 to 4 makes from the extent types of its indices.
    type Result<T: Element, E: LetResult<T>>;
    /// A zero-filled result tensor.
    fn zeros<W: Witness + ?Sized, const R: usize>(
        &self,
        witness: &W,
        shape: [usize; R],
    ) -> Self::Tensor<W::Elem>;
    /// A zero-filled `let` result of rank 1 to 4 (see `LetResult`).
    fn new_result<W: Witness + ?Sized, E: LetResult<W::Elem>, const R: usize>(
        &self,
        witness: &W,
        extents: E,
        shape: [usize; R],
    ) -> Self::Result<W::Elem, E>;
    /// A loop-nest step: `body` on the host, `module` on a device.
    fn evaluate<T: Element, const L: usize, const N: usize>(
        &self,
        step: Self::Step<'_, T, L, N>,
        body: impl Fn([T; N]) -> T + Sync,
        module: &StepModule<'_>,
        scalars: &[T],
    );
    /// A two-tensor contraction step, conjugating the operands `conj` names.
    fn contract<T: Element, const L: usize>(
        &self,
        step: Self::Step<'_, T, L, 2>,
        conj: [bool; 2],
        module: &StepModule<'_>,
        scalars: &[T],
    );
    /// A product of three or more tensors, the factors `conj` names conjugated.
    fn contract_network<T: Element, const L: usize, const N: usize>(
        &self,
        step: Self::Step<'_, T, L, N>,
        conj: [bool; N],
        cache: &PlanCache,
        module: &StepModule<'_>,
        scalars: &[T],
    );
}

/// The host: the engines of `loop_nest.rs`, `gemm.rs` and `network.rs`.
#[derive(Clone, Copy)]
pub struct Host;

impl Backend for Host {
    type Kind = OnHost;
    type Step<'a, T: Element, const L: usize, const N: usize> = Step<'a, T, L, N>;
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn prove<'a, T: Element, const L: usize, const N: usize>(
        &self,
        target: TargetUse<'a, T>,
        mode: Mode<T>,
        alpha: T,
        extents: [usize; L],
        n_out: usize,
        operands: [Use<'a, T>; N],
    ) -> Step<'a, T, L, N> {
        Step::new(target, mode, alpha, extents, n_out, operands)
    }
    type Tensor<T: Element> = Tensor<T>;
    /// A nested array where every extent is static, as without the `cuda` feature.
    type Result<T: Element, E: LetResult<T>> = E::Output;
    fn zeros<W: Witness + ?Sized, const R: usize>(
        &self,
        _witness: &W,
        shape: [usize; R],
    ) -> Tensor<W::Elem> {
        Tensor::zeros(shape)
    }
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn new_result<W: Witness + ?Sized, E: LetResult<W::Elem>, const R: usize>(
        &self,
        _witness: &W,
        _extents: E,
        shape: [usize; R],
    ) -> E::Output {
        E::zeros(&shape)
    }
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn evaluate<T: Element, const L: usize, const N: usize>(
        &self,
        step: Step<'_, T, L, N>,
        body: impl Fn([T; N]) -> T + Sync,
        _module: &StepModule<'_>,
        _scalars: &[T],
    ) {
        super::loop_nest::evaluate(step, body, super::loop_nest::AnyNest)
    }
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn contract<T: Element, const L: usize>(
        &self,
        step: Step<'_, T, L, 2>,
        conj: [bool; 2],
        _module: &StepModule<'_>,
        _scalars: &[T],
    ) {
        super::gemm::contract(step, conj)
    }
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn contract_network<T: Element, const L: usize, const N: usize>(
        &self,
        step: Step<'_, T, L, N>,
        conj: [bool; N],
        cache: &PlanCache,
        _module: &StepModule<'_>,
        _scalars: &[T],
    ) {
        super::network::contract_network(step, conj, cache)
    }
}

/// A tensor type's backend.
pub trait OnBackend {
    /// The backend's kind.
    type Kind;
    /// The backend that runs statements over tensors of this type.
    type Backend: Backend<Kind = Self::Kind>;
    /// This tensor's backend (a device tensor's device).
    fn __tdsl_backend(&self) -> Self::Backend;
}

macro_rules! on_host {
    ($($ty:ty),*) => {$(
        impl<T: Element> OnBackend for $ty {
            type Kind = OnHost;
            type Backend = Host;
            fn __tdsl_backend(&self) -> Host {
                Host
            }
        }
    )*};
}

on_host!(Tensor<T>, TensorView<'_, T>, TensorViewMut<'_, T>);

impl<X: OnBackend + ?Sized> OnBackend for &X {
    type Kind = X::Kind;
    type Backend = X::Backend;
    fn __tdsl_backend(&self) -> X::Backend {
        (**self).__tdsl_backend()
    }
}

impl<X: OnBackend + ?Sized> OnBackend for &mut X {
    type Kind = X::Kind;
    type Backend = X::Backend;
    fn __tdsl_backend(&self) -> X::Backend {
        (**self).__tdsl_backend()
    }
}

/// A view of a range of positions (`x[i in 1..n]`) runs where its base does, on the host or
/// a device; a distributed tensor's ranges are refused (`SlicesRun`).
impl<X: OnBackend + ?Sized> OnBackend for Sliced<'_, X>
where
    X::Kind: SlicesRun,
{
    type Kind = X::Kind;
    type Backend = X::Backend;
    fn __tdsl_backend(&self) -> X::Backend {
        self.base().__tdsl_backend()
    }
}

impl<K: SlicesRun, X: RunsOn<K> + ?Sized> RunsOn<K> for Sliced<'_, X> {}

impl<T: Element, B: Backend> RunsOn<B::Kind> for SlicedTarget<'_, T, B> {}

/// A target's range runs on its tensor's backend.
impl<T: Element, B: Backend + Clone> OnBackend for SlicedTarget<'_, T, B> {
    type Kind = B::Kind;
    type Backend = B;
    fn __tdsl_backend(&self) -> B {
        self.backend().clone()
    }
}

/// Implemented by the kinds of tensors whose accesses a range may cut: the host's and a
/// device's. A distributed tensor's access names the tensor, not its elements, so a range of
/// a `DistTensor` is a compile error on it.
#[diagnostic::on_unimplemented(
    message = "a range of positions (`x[i in lo..hi]`) reads host and device tensors, and this tensor is of kind `{Self}`",
    label = "no ranges here",
    note = "redistribute the part you need first, or gather the tensor to the host"
)]
pub trait SlicesRun {}

impl SlicesRun for OnHost {}
impl SlicesRun for OnDevice {}

/// Compiles only if a range may cut the accesses of `backend`'s tensors (see [`SlicesRun`]).
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn slices_run<B: Backend>(_backend: &B)
where
    B::Kind: SlicesRun,
{
}

/// Implemented by tensors whose backend is of kind `K`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not the kind of tensor this statement runs on: a `tensor!` statement reads and writes host tensors, `CudaTensor`s or `DistTensor`s, one kind only",
    label = "another kind of tensor than the statement's first",
    note = "move it across first: `CudaTensor::from_host(&device, &tensor)` or `cuda_tensor.to_host()`; a host tensor every rank holds alike joins distributed ones as `DistTensor::replicated(&world, &tensor)`"
)]
pub trait RunsOn<K> {}

impl<T: Element> RunsOn<OnHost> for Tensor<T> {}
impl<T: Element> RunsOn<OnHost> for TensorView<'_, T> {}
impl<T: Element> RunsOn<OnHost> for TensorViewMut<'_, T> {}
impl<K, X: RunsOn<K> + ?Sized> RunsOn<K> for &X {}
impl<K, X: RunsOn<K> + ?Sized> RunsOn<K> for &mut X {}

/// A statement's tensor, asked for its backend by method lookup (autoref specialisation):
/// `(&&Probe(&tensor)).__tdsl_probe_backend()` finds `OwnBackend` for tensor types with a
/// backend of their own (`OnBackend`), and `HostBackend` for any other operand type (a
/// user's own), whose elements are host memory.
pub struct Probe<'a, X: ?Sized>(pub &'a X);

/// A tensor type's own backend (see `Probe`).
pub trait OwnBackend<'a> {
    /// The tensor type's backend.
    type Backend;
    /// The tensor's type.
    type Tensor: ?Sized;
    /// The backend the statement's steps go to.
    fn __tdsl_probe_backend(&self) -> Self::Backend;
    /// The tensor itself, for `same_backend`.
    fn __tdsl_probe_tensor(&self) -> &'a Self::Tensor;
}

impl<'a, X: OnBackend + ?Sized> OwnBackend<'a> for &Probe<'a, X> {
    type Backend = X::Backend;
    type Tensor = X;
    fn __tdsl_probe_backend(&self) -> X::Backend {
        self.0.__tdsl_backend()
    }
    fn __tdsl_probe_tensor(&self) -> &'a X {
        self.0
    }
}

/// Operand types without a backend of their own run on the host (see `Probe`).
pub trait HostBackend {
    /// The host.
    fn __tdsl_probe_backend(&self) -> Host;
    /// A stand-in for the tensor, for `same_backend`: host memory.
    fn __tdsl_probe_tensor(&self) -> &'static HostOperand;
}

impl<X: ?Sized> HostBackend for Probe<'_, X> {
    fn __tdsl_probe_backend(&self) -> Host {
        Host
    }
    fn __tdsl_probe_tensor(&self) -> &'static HostOperand {
        &HostOperand
    }
}

/// Stands for an operand of a type with no backend of its own: host memory.
pub struct HostOperand;

impl RunsOn<OnHost> for HostOperand {}

/// Compiles only if `operand` lives where `backend` runs.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub fn same_backend<B: Backend, X: RunsOn<B::Kind> + ?Sized>(_backend: &B, _operand: &X) {}

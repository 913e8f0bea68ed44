//! Operand types → where a statement runs. Generated code (with feature `cuda`) asks the
//! statement's first tensor for its backend and every other tensor to be on the same kind, a
//! type error on the offending operand otherwise; each step then goes to the host kernels or
//! to the device. Invariant: host kernels only ever see host tensors' steps (the kind is a
//! type), and a device launch only steps over that device's memory (checked per statement).

use crate::access::Witness;
use crate::extents::LetResult;
use crate::network::PlanCache;
use crate::step::Step;
use crate::{Element, Tensor, TensorView, TensorViewMut};

use super::{CudaDevice, CudaTensor, Kernel};

/// Kind of the host backend.
pub struct OnHost;
/// Kind of a CUDA device (or the simulator).
pub struct OnDevice;

/// Where a statement's steps run; what generated code calls for each of them.
pub trait Backend {
    type Kind;
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
    /// A zero-filled `let` result of rank 1 to 4 (see [`LetResult`]).
    fn new_result<W: Witness + ?Sized, E: LetResult<W::Elem>, const R: usize>(
        &self,
        witness: &W,
        extents: E,
        shape: [usize; R],
    ) -> Self::Result<W::Elem, E>;
    /// A loop-nest step: `body` on the host, `kernel` on a device.
    fn evaluate<T: Element, const L: usize, const N: usize>(
        &self,
        step: Step<'_, T, L, N>,
        body: impl Fn([T; N]) -> T + Sync,
        kernel: &Kernel<'_>,
        scalars: &[T],
    );
    /// A two-tensor contraction step.
    fn contract<T: Element, const L: usize>(
        &self,
        step: Step<'_, T, L, 2>,
        kernel: &Kernel<'_>,
        scalars: &[T],
    );
    /// A product of three or more tensors.
    fn contract_network<T: Element, const L: usize, const N: usize>(
        &self,
        step: Step<'_, T, L, N>,
        cache: &PlanCache,
        kernel: &Kernel<'_>,
        scalars: &[T],
    );
}

/// The host: the kernels of `kernel.rs`, `gemm.rs` and `network.rs`.
pub struct Host;

impl Backend for Host {
    type Kind = OnHost;
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
    #[inline(always)]
    fn new_result<W: Witness + ?Sized, E: LetResult<W::Elem>, const R: usize>(
        &self,
        _witness: &W,
        _extents: E,
        shape: [usize; R],
    ) -> E::Output {
        E::zeros(&shape)
    }
    #[inline(always)]
    fn evaluate<T: Element, const L: usize, const N: usize>(
        &self,
        step: Step<'_, T, L, N>,
        body: impl Fn([T; N]) -> T + Sync,
        _kernel: &Kernel<'_>,
        _scalars: &[T],
    ) {
        crate::kernel::evaluate(step, body)
    }
    #[inline(always)]
    fn contract<T: Element, const L: usize>(
        &self,
        step: Step<'_, T, L, 2>,
        _kernel: &Kernel<'_>,
        _scalars: &[T],
    ) {
        crate::gemm::contract(step)
    }
    #[inline(always)]
    fn contract_network<T: Element, const L: usize, const N: usize>(
        &self,
        step: Step<'_, T, L, N>,
        cache: &PlanCache,
        _kernel: &Kernel<'_>,
        _scalars: &[T],
    ) {
        crate::network::contract_network(step, cache)
    }
}

/// A device: every step is its generated module, launched there.
pub struct Device(pub(crate) CudaDevice);

/// A device failure inside `tensor!`: a panic with the error's message at the macro call.
#[track_caller]
fn or_panic<V>(result: Result<V, super::CudaError>) -> V {
    match result {
        Ok(value) => value,
        Err(error) => panic!("{error}"),
    }
}

impl Backend for Device {
    type Kind = OnDevice;
    type Tensor<T: Element> = CudaTensor<T>;
    /// Device tensors' extents are dynamic, so a `let` is a device tensor.
    type Result<T: Element, E: LetResult<T>> = CudaTensor<T>;
    #[track_caller]
    fn zeros<W: Witness + ?Sized, const R: usize>(
        &self,
        _witness: &W,
        shape: [usize; R],
    ) -> CudaTensor<W::Elem> {
        or_panic(CudaTensor::zeros(&self.0, shape))
    }
    #[track_caller]
    fn new_result<W: Witness + ?Sized, E: LetResult<W::Elem>, const R: usize>(
        &self,
        witness: &W,
        _extents: E,
        shape: [usize; R],
    ) -> CudaTensor<W::Elem> {
        self.zeros(witness, shape)
    }
    #[track_caller]
    fn evaluate<T: Element, const L: usize, const N: usize>(
        &self,
        step: Step<'_, T, L, N>,
        _body: impl Fn([T; N]) -> T + Sync,
        kernel: &Kernel<'_>,
        scalars: &[T],
    ) {
        or_panic(self.0.run_step(kernel, step, scalars))
    }
    #[track_caller]
    fn contract<T: Element, const L: usize>(
        &self,
        step: Step<'_, T, L, 2>,
        kernel: &Kernel<'_>,
        scalars: &[T],
    ) {
        or_panic(self.0.run_contraction(kernel, step, scalars))
    }
    #[track_caller]
    fn contract_network<T: Element, const L: usize, const N: usize>(
        &self,
        step: Step<'_, T, L, N>,
        cache: &PlanCache,
        kernel: &Kernel<'_>,
        scalars: &[T],
    ) {
        or_panic(self.0.run_network(kernel, step, cache, scalars))
    }
}

/// A tensor type's backend.
pub trait OnBackend {
    type Kind;
    type Backend: Backend<Kind = Self::Kind>;
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

impl<T: Element> OnBackend for CudaTensor<T> {
    type Kind = OnDevice;
    type Backend = Device;
    fn __tdsl_backend(&self) -> Device {
        Device(self.device().clone())
    }
}

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

/// Implemented by tensors whose backend is of kind `K`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not in the memory this statement runs on: a `tensor!` statement reads and writes either host tensors or `CudaTensor`s, not both",
    label = "on the other side of the host/device divide from the statement's first tensor",
    note = "copy it across first: `CudaTensor::from_host(&device, &tensor)` or `cuda_tensor.to_host()`"
)]
pub trait RunsOn<K> {}

impl<T: Element> RunsOn<OnHost> for Tensor<T> {}
impl<T: Element> RunsOn<OnHost> for TensorView<'_, T> {}
impl<T: Element> RunsOn<OnHost> for TensorViewMut<'_, T> {}
impl<T: Element> RunsOn<OnDevice> for CudaTensor<T> {}
impl<K, X: RunsOn<K> + ?Sized> RunsOn<K> for &X {}
impl<K, X: RunsOn<K> + ?Sized> RunsOn<K> for &mut X {}

/// A statement's tensor, asked for its backend by method lookup (autoref specialisation):
/// `(&&Probe(&tensor)).__tdsl_probe_backend()` finds [`OwnBackend`] for tensor types with a
/// backend of their own ([`OnBackend`]), and [`HostBackend`] for any other operand type (a
/// user's own), whose elements are host memory.
pub struct Probe<'a, X: ?Sized>(pub &'a X);

/// A tensor type's own backend (see [`Probe`]).
pub trait OwnBackend<'a> {
    type Backend;
    type Tensor: ?Sized;
    fn __tdsl_probe_backend(&self) -> Self::Backend;
    /// The tensor itself, for [`same_backend`].
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

/// Operand types without a backend of their own run on the host (see [`Probe`]).
pub trait HostBackend {
    fn __tdsl_probe_backend(&self) -> Host;
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
#[inline(always)]
pub fn same_backend<B: Backend, X: RunsOn<B::Kind> + ?Sized>(_backend: &B, _operand: &X) {}

//! A device as a [`Backend`]: each step a `tensor!` statement over `CudaTensor`s sends is run
//! by the tensors' [`CudaDevice`] (its module, cuBLAS calls, or pairwise calls), and a `let`
//! makes a device tensor. Invariant: device tensors are of kind `OnDevice`, so the type check
//! of `exec::backend` keeps host tensors out of a device statement and the other way round.

use crate::element::Element;
use crate::exec::backend::{Backend, OnBackend, OnDevice, RunsOn, StepModule};
use crate::exec::network::PlanCache;
use crate::exec::step::{Step, TargetUse, Use};
use crate::operand::access::Mode;
use crate::operand::access::Witness;
use crate::operand::array::LetResult;
use crate::tensor::Tensor;

use super::device::CudaDevice;
use super::error::CudaError;
use super::tensor::CudaTensor;

/// A device: every step is its generated module, launched there.
#[derive(Clone)]
pub struct Device(pub(crate) CudaDevice);

/// A device failure inside `tensor!`: a panic with the error's message at the macro call.
#[track_caller]
fn or_panic<V>(result: Result<V, CudaError>) -> V {
    match result {
        Ok(value) => value,
        Err(error) => panic!("{error}"),
    }
}

impl Backend for Device {
    type Kind = OnDevice;
    type Step<'a, T: Element, const L: usize, const N: usize> = Step<'a, T, L, N>;
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
    type Tensor<T: Element> = CudaTensor<T>;
    /// Device tensors' extents are dynamic, so a `let` is a device tensor.
    type Result<T: Element, E: LetResult<T>> = CudaTensor<T>;
    #[track_caller]
    fn zeros<W: Witness + ?Sized, const R: usize>(
        &self,
        _witness: &W,
        shape: [usize; R],
    ) -> CudaTensor<W::Elem> {
        or_panic(CudaTensor::upload(&self.0, &Tensor::zeros(shape)))
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
        module: &StepModule<'_>,
        scalars: &[T],
    ) {
        or_panic(self.0.run_step(module, step, scalars))
    }
    #[track_caller]
    fn contract<T: Element, const L: usize>(
        &self,
        step: Step<'_, T, L, 2>,
        conj: [bool; 2],
        module: &StepModule<'_>,
        scalars: &[T],
    ) {
        or_panic(self.0.run_contraction(module, step, conj, scalars))
    }
    #[track_caller]
    fn contract_network<T: Element, const L: usize, const N: usize>(
        &self,
        step: Step<'_, T, L, N>,
        conj: [bool; N],
        cache: &PlanCache,
        module: &StepModule<'_>,
        scalars: &[T],
    ) {
        or_panic(self.0.run_network(module, step, conj, cache, scalars))
    }
}

impl<T: Element> OnBackend for CudaTensor<T> {
    type Kind = OnDevice;
    type Backend = Device;
    fn __tdsl_backend(&self) -> Device {
        Device(self.device().clone())
    }
}

impl<T: Element> RunsOn<OnDevice> for CudaTensor<T> {}

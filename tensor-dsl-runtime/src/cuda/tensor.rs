//! Device tensors: a [`CudaTensor`] is a row-major tensor in a device's memory. On the
//! simulator that memory is the host's, so the kernels' addresses are proven by the same
//! [`Step`](crate::step::Step) as host kernels'.

use crate::access::{Access, Operand, TargetAccess, TargetOwned};
use crate::{Element, IntoShape, Tensor};

use super::{Backend, CudaDevice, CudaError};

/// A tensor in a device's memory, row-major. `tensor!` runs statements whose tensors are all
/// `CudaTensor`s on their device.
#[derive(Clone)]
pub struct CudaTensor<T> {
    device: CudaDevice,
    /// The simulator's memory (the only device memory today).
    data: Tensor<T>,
}

impl<T: Element> CudaTensor<T> {
    /// A zero-filled tensor on `device`.
    pub fn zeros(device: &CudaDevice, shape: impl IntoShape) -> Result<Self, CudaError> {
        Self::on(device, Tensor::zeros(shape))
    }

    /// A copy of `tensor` on `device`.
    pub fn from_host(device: &CudaDevice, tensor: &Tensor<T>) -> Result<Self, CudaError> {
        Self::on(device, tensor.clone())
    }

    fn on(device: &CudaDevice, data: Tensor<T>) -> Result<Self, CudaError> {
        match &*device.inner {
            Backend::Simulator(_) => Ok(CudaTensor {
                device: device.clone(),
                data,
            }),
            Backend::Gpu(gpu) => Err(CudaError::Driver(format!(
                "device {}: tensors in GPU memory are not supported yet; use \
                 `CudaDevice::simulator()`",
                gpu.ordinal
            ))),
        }
    }

    /// A copy in host memory (waits for the device's work on it to finish).
    pub fn to_host(&self) -> Result<Tensor<T>, CudaError> {
        Ok(self.data.clone())
    }

    /// The extents.
    pub fn shape(&self) -> &[usize] {
        self.data.shape()
    }

    /// The strides, in elements (row-major).
    pub fn strides(&self) -> &[isize] {
        self.data.strides()
    }

    /// The device holding the elements.
    pub fn device(&self) -> &CudaDevice {
        &self.device
    }
}

impl<T: Element> std::fmt::Debug for CudaTensor<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CudaTensor")
            .field("device", &self.device)
            .field("shape", &self.shape())
            .finish_non_exhaustive()
    }
}

impl<T: Element> Operand for CudaTensor<T> {
    type Elem = T;
    type Extents = crate::access::Dynamic;
    fn __tdsl_shape(&self) -> &[usize] {
        self.data.shape()
    }
    fn __tdsl_operand(&self) -> Access<'_, T> {
        self.data.__tdsl_operand()
    }
}

impl<T: Element> TargetOwned for CudaTensor<T> {
    type Elem = T;
    fn __tdsl_target(&mut self) -> TargetAccess<'_, T> {
        self.data.__tdsl_target()
    }
}

//! Device tensors: a [`CudaTensor`] is a row-major tensor in a device's memory — a GPU's, or
//! the host's for the simulator. Its accesses record which memory their pointer is into, so
//! the pointer only ever reaches that device's kernels (host kernels refuse device memory).

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

use crate::access::{Access, Operand, TargetAccess, TargetOwned};
use crate::{Element, IntoShape, Tensor};

use super::{Backend, CudaDevice, CudaError};

/// A tensor in a device's memory, row-major. `tensor!` runs statements whose tensors are all
/// `CudaTensor`s on their device.
pub struct CudaTensor<T> {
    device: CudaDevice,
    storage: Storage<T>,
}

enum Storage<T> {
    /// The simulator's memory: the host's.
    Host(Tensor<T>),
    /// A GPU buffer of `shape`'s elements, row-major.
    Gpu {
        buffer: CudaSlice<T>,
        /// The buffer's device address (fixed for its life).
        address: u64,
        stream: Arc<CudaStream>,
        shape: Vec<usize>,
        strides: Vec<isize>,
    },
}

impl<T: Element> CudaTensor<T> {
    /// A zero-filled tensor on `device`.
    pub fn zeros(device: &CudaDevice, shape: impl IntoShape) -> Result<Self, CudaError> {
        let host = Tensor::zeros(shape);
        match &device.inner.backend {
            Backend::Simulator(_) => Ok(Self::on_host(device, host)),
            Backend::Gpu(gpu) => {
                // One element at least: the driver allocates no empty buffers.
                let buffer = gpu.stream.alloc_zeros::<T>(host.len().max(1))?;
                Ok(Self::on_gpu(device, &gpu.stream, buffer, &host))
            }
        }
    }

    /// A copy of `tensor` on `device`.
    pub fn from_host(device: &CudaDevice, tensor: &Tensor<T>) -> Result<Self, CudaError> {
        match &device.inner.backend {
            Backend::Simulator(_) => Ok(Self::on_host(device, tensor.clone())),
            Backend::Gpu(gpu) => {
                let buffer = if tensor.is_empty() {
                    gpu.stream.alloc_zeros::<T>(1)?
                } else {
                    gpu.stream.clone_htod(tensor.as_slice())?
                };
                Ok(Self::on_gpu(device, &gpu.stream, buffer, tensor))
            }
        }
    }

    fn on_host(device: &CudaDevice, data: Tensor<T>) -> Self {
        CudaTensor {
            device: device.clone(),
            storage: Storage::Host(data),
        }
    }

    fn on_gpu(
        device: &CudaDevice,
        stream: &Arc<CudaStream>,
        buffer: CudaSlice<T>,
        like: &Tensor<T>,
    ) -> Self {
        let address = buffer.device_ptr(stream).0;
        CudaTensor {
            device: device.clone(),
            storage: Storage::Gpu {
                buffer,
                address,
                stream: stream.clone(),
                shape: like.shape().to_vec(),
                strides: like.strides().to_vec(),
            },
        }
    }

    /// A copy in host memory (waits for the device's work on it to finish).
    pub fn to_host(&self) -> Result<Tensor<T>, CudaError> {
        match &self.storage {
            Storage::Host(data) => Ok(data.clone()),
            Storage::Gpu {
                buffer,
                stream,
                shape,
                ..
            } => {
                let mut elements = stream.clone_dtoh(buffer)?;
                elements.truncate(shape.iter().product());
                Tensor::from_shape_vec(shape.as_slice(), elements)
                    .map_err(|error| CudaError::Shape(error.to_string()))
            }
        }
    }

    /// A copy on the same device.
    pub fn try_clone(&self) -> Result<Self, CudaError> {
        match &self.storage {
            Storage::Host(data) => Ok(Self::on_host(&self.device, data.clone())),
            Storage::Gpu {
                buffer,
                stream,
                shape,
                strides,
                ..
            } => {
                let copy = stream.clone_dtod(buffer)?;
                let address = copy.device_ptr(stream).0;
                Ok(CudaTensor {
                    device: self.device.clone(),
                    storage: Storage::Gpu {
                        buffer: copy,
                        address,
                        stream: stream.clone(),
                        shape: shape.clone(),
                        strides: strides.clone(),
                    },
                })
            }
        }
    }

    /// The extents.
    pub fn shape(&self) -> &[usize] {
        match &self.storage {
            Storage::Host(data) => data.shape(),
            Storage::Gpu { shape, .. } => shape,
        }
    }

    /// The strides, in elements (row-major).
    pub fn strides(&self) -> &[isize] {
        match &self.storage {
            Storage::Host(data) => data.strides(),
            Storage::Gpu { strides, .. } => strides,
        }
    }

    /// The device holding the elements.
    pub fn device(&self) -> &CudaDevice {
        &self.device
    }
}

impl<T: Element> Clone for CudaTensor<T> {
    /// # Panics
    /// If the device cannot hold the copy (see [`CudaTensor::try_clone`]).
    fn clone(&self) -> Self {
        match self.try_clone() {
            Ok(copy) => copy,
            Err(error) => panic!("{error}"),
        }
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
        self.shape()
    }
    fn __tdsl_operand(&self) -> Access<'_, T> {
        match &self.storage {
            Storage::Host(data) => data.__tdsl_operand(),
            // The device address as a pointer: only this device's launches use it, since the
            // access says which memory it is into.
            Storage::Gpu {
                buffer,
                address,
                shape,
                strides,
                ..
            } => Access::new(*address as *const T, buffer.len(), shape, strides, 0)
                .in_memory(self.device.memory()),
        }
    }
}

impl<T: Element> TargetOwned for CudaTensor<T> {
    type Elem = T;
    fn __tdsl_target(&mut self) -> TargetAccess<'_, T> {
        let memory = self.device.memory();
        match &mut self.storage {
            Storage::Host(data) => data.__tdsl_target(),
            Storage::Gpu {
                buffer,
                address,
                shape,
                strides,
                ..
            } => TargetAccess::new(*address as *mut T, buffer.len(), shape, strides, 0)
                .in_memory(memory),
        }
    }
}

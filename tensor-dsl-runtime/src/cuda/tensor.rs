//! Device tensors: a [`CudaTensor`] owns a buffer in a device's memory — a GPU's, or the
//! host's for the simulator — and a layout over it (shape, strides, offset), so permuting and
//! slicing cost no copy. Its accesses record which memory their pointer is into, so the
//! pointer only ever reaches that device's kernels (host kernels refuse device memory).

use std::ops::Range;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DevicePtr};

use crate::element::{c32, c64, DeviceOf, Element};
use crate::operand::access::{Access, Operand, RawAccess, ShapeRef, TargetAccess, TargetOwned};
use crate::tensor::layout::RawLayout;
use crate::tensor::TensorView;
use crate::tensor::{IntoShape, Tensor};

use super::cublas;
use super::device::CudaDevice;
use super::error::CudaError;

/// A tensor in a device's memory. `tensor!` runs statements whose tensors are all
/// `CudaTensor`s on their device. Made row-major; [`permuted_axes`](Self::permuted_axes) and
/// [`slice_axis`](Self::slice_axis) change the layout over the same elements.
pub struct CudaTensor<T: Element> {
    device: CudaDevice,
    storage: Storage<T>,
    /// Inside the buffer: every element the layout reaches lies in it.
    layout: RawLayout,
}

enum Storage<T: Element> {
    /// The simulator's memory: the host's.
    Host(Vec<T>),
    /// A GPU buffer.
    Gpu {
        buffer: CudaSlice<DeviceOf<T>>,
        /// The buffer's device address (fixed for its life).
        address: u64,
        stream: Arc<CudaStream>,
    },
}

/// Element types a device holds: `f32` and `f64` (modules and cuBLAS), `i32` and `i64`
/// (modules, with wrapping arithmetic as on the host), [`c32`] and [`c64`] (modules with the
/// host's complex formulas, and cuBLAS `Cgemm`/`Zgemm` with `conj` as `op = C` where the
/// layout allows). Contractions of integers run as modules (cuBLAS has no integer GEMM). Only the
/// constructors ask for it, so a `CudaTensor` of another element type never exists and device
/// code may assume one of these.
pub trait DeviceElement: Element {}

impl DeviceElement for f32 {}
impl DeviceElement for f64 {}
impl DeviceElement for i32 {}
impl DeviceElement for i64 {}
impl DeviceElement for c32 {}
impl DeviceElement for c64 {}

impl<T: DeviceElement> CudaTensor<T> {
    /// A zero-filled tensor on `device`.
    pub fn zeros(device: &CudaDevice, shape: impl IntoShape) -> Result<Self, CudaError> {
        Self::upload(device, &Tensor::zeros(shape))
    }

    /// A copy of `tensor` on `device`.
    pub fn from_host(device: &CudaDevice, tensor: &Tensor<T>) -> Result<Self, CudaError> {
        Self::upload(device, tensor)
    }
}

impl<T: Element> CudaTensor<T> {
    /// A copy of `tensor` on `device`; `T` is a `DeviceElement` (a public constructor's bound,
    /// or the element type of a statement over a device tensor).
    pub(crate) fn upload(device: &CudaDevice, tensor: &Tensor<T>) -> Result<Self, CudaError> {
        let layout = RawLayout::new(tensor.shape().to_vec(), tensor.strides().to_vec(), 0);
        let storage = match device.gpu() {
            None => Storage::Host(tensor.as_slice().to_vec()),
            Some(gpu) => {
                // One element at least: the driver allocates no empty buffers.
                let buffer = if tensor.is_empty() {
                    gpu.stream.alloc_zeros::<DeviceOf<T>>(1)?
                } else {
                    gpu.stream.clone_htod(T::as_device(tensor.as_slice()))?
                };
                Storage::gpu(buffer, &gpu.stream)
            }
        };
        Ok(CudaTensor {
            device: device.clone(),
            storage,
            layout,
        })
    }

    /// A row-major copy in host memory (waits for the device's work on it to finish).
    pub fn to_host(&self) -> Result<Tensor<T>, CudaError> {
        let copied;
        let buffer: &[T] = match &self.storage {
            Storage::Host(data) => data,
            Storage::Gpu { buffer, stream, .. } => {
                copied = T::from_device(stream.clone_dtoh(buffer)?);
                &copied
            }
        };
        // The layout lies inside the buffer (the type's invariant), now in host memory.
        Ok(TensorView::from_raw(buffer.as_ptr(), buffer.len(), self.layout.clone()).to_tensor())
    }

    /// A copy on the same device, with the same layout.
    pub fn try_clone(&self) -> Result<Self, CudaError> {
        let storage = match &self.storage {
            Storage::Host(data) => Storage::Host(data.clone()),
            Storage::Gpu { buffer, stream, .. } => Storage::gpu(stream.clone_dtod(buffer)?, stream),
        };
        Ok(CudaTensor {
            device: self.device.clone(),
            storage,
            layout: self.layout.clone(),
        })
    }

    /// The same elements with axes reordered: axis `k` of the result is axis `axes[k]` of
    /// `self` (no copy).
    ///
    /// # Panics
    /// If `axes` is not a permutation of `0..ndim`.
    #[track_caller]
    pub fn permuted_axes(self, axes: &[usize]) -> Self {
        CudaTensor {
            layout: self.layout.permuted(axes),
            ..self
        }
    }

    /// The elements whose index on `axis` lies in `range`, renumbered from zero (no copy).
    ///
    /// # Panics
    /// If `axis` does not exist or `range` is not inside it.
    #[track_caller]
    pub fn slice_axis(self, axis: usize, range: Range<usize>) -> Self {
        CudaTensor {
            layout: self.layout.sliced(axis, range),
            ..self
        }
    }

    /// The extents.
    pub fn shape(&self) -> &[usize] {
        &self.layout.shape
    }

    /// The strides, in elements.
    pub fn strides(&self) -> &[isize] {
        &self.layout.strides
    }

    /// The device holding the elements.
    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    /// The buffer's start (a device address cast to a pointer on a GPU) and length.
    fn buffer(&self) -> (*const T, usize) {
        match &self.storage {
            Storage::Host(data) => (data.as_ptr(), data.len()),
            Storage::Gpu {
                buffer, address, ..
            } => (*address as *const T, buffer.len()),
        }
    }
}

impl<T: Element> Drop for Storage<T> {
    fn drop(&mut self) {
        if let Storage::Gpu { stream, .. } = self {
            // The buffer's free is queued on its stream with its device current, so it waits
            // for the work queued there before (whatever device the thread used last).
            let _ = stream.context().bind_to_thread();
        }
    }
}

impl<T: Element> Storage<T> {
    fn gpu(buffer: CudaSlice<DeviceOf<T>>, stream: &Arc<CudaStream>) -> Self {
        let address = buffer.device_ptr(stream).0;
        Storage::Gpu {
            buffer,
            address,
            stream: stream.clone(),
        }
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
            .field("strides", &self.strides())
            .finish_non_exhaustive()
    }
}

impl<T: Element> Operand for CudaTensor<T> {
    type Elem = T;
    type Extents = crate::operand::extents::Dynamic;
    fn __tdsl_shape(&self) -> ShapeRef<'_> {
        self.shape().into()
    }
    fn __tdsl_operand(&self) -> Access<'_, T> {
        let (data, len) = self.buffer();
        let layout = &self.layout;
        // On a GPU the pointer is a device address: the access says which memory it is into,
        // so only this device's launches use it.
        Access::new(RawAccess::over(data, len, layout)).in_memory(self.device.memory())
    }
}

impl<T: Element> TargetOwned for CudaTensor<T> {
    type Elem = T;
    fn __tdsl_target(&mut self) -> TargetAccess<'_, T> {
        let memory = self.device.memory();
        let (data, len) = match &mut self.storage {
            Storage::Host(data) => (data.as_mut_ptr(), data.len()),
            Storage::Gpu {
                buffer, address, ..
            } => (*address as *mut T, buffer.len()),
        };
        let layout = &self.layout;
        // SAFETY: the tensor's own buffer (host, or this device's), borrowed mutably with `self`.
        unsafe { TargetAccess::new(RawAccess::over(data, len, layout)) }.in_memory(memory)
    }
}

/// The baseline device GEMM and copy, beside the tensors it reads (the device knows nothing of them).
impl CudaDevice {
    /// `dst`'s buffer ← `src`'s, as one device-to-device copy into existing memory (no
    /// allocation, no planning): the bandwidth baseline `tensor!`'s element-wise kernels are
    /// measured against. Both tensors must be of this device and hold buffers of one length.
    #[doc(hidden)]
    pub fn direct_copy<T: Element>(
        &self,
        src: &CudaTensor<T>,
        dst: &mut CudaTensor<T>,
    ) -> Result<(), CudaError> {
        if src.device.memory() != self.memory() || dst.device.memory() != self.memory() {
            return Err(CudaError::DeviceMismatch);
        }
        match (&src.storage, &mut dst.storage) {
            (Storage::Host(from), Storage::Host(to)) if from.len() == to.len() => {
                to.copy_from_slice(from);
                Ok(())
            }
            (
                Storage::Gpu { buffer: from, .. },
                Storage::Gpu {
                    buffer: to, stream, ..
                },
            ) if from.len() == to.len() => Ok(stream.memcpy_dtod(from, to)?),
            _ => Err(CudaError::Shape(
                "direct_copy takes two buffers of one length".to_owned(),
            )),
        }
    }

    /// `c = a · b` for row-major matrices as one direct cuBLAS call, with no planning: the
    /// baseline `tensor!`'s contractions are measured against.
    #[doc(hidden)]
    pub fn direct_gemm<T: Element>(
        &self,
        a: &CudaTensor<T>,
        b: &CudaTensor<T>,
        c: &mut CudaTensor<T>,
    ) -> Result<(), CudaError> {
        let (&[m, k], &[k2, n]) = (a.shape(), b.shape()) else {
            return Err(CudaError::Shape("direct_gemm takes matrices".to_owned()));
        };
        if k != k2 || c.shape() != [m, n] {
            return Err(CudaError::Shape(format!(
                "direct_gemm: {:?} · {:?} into {:?}",
                a.shape(),
                b.shape(),
                c.shape()
            )));
        }
        let memory = self.memory();
        let (a, b) = (a.__tdsl_operand().raw, b.__tdsl_operand().raw);
        let target = c.__tdsl_target();
        let c = target.raw;
        if [a.memory, b.memory, c.memory] != [memory; 3] {
            return Err(CudaError::DeviceMismatch);
        }
        let row_major = |offset: isize, strides: &[isize], columns: usize| {
            offset == 0 && strides[1] == 1 && strides[0] == columns as isize
        };
        if !row_major(a.offset, a.strides, k)
            || !row_major(b.offset, b.strides, n)
            || !row_major(c.offset, c.strides, n)
        {
            return Err(CudaError::Shape(
                "direct_gemm takes contiguous row-major matrices".to_owned(),
            ));
        }
        let matrix = |ld: usize| cublas::Matrix {
            offset: 0,
            ld: ld.max(1),
            stride: 0,
        };
        // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ, each stored as is.
        let call = cublas::Call {
            transa: cublas::Op::N,
            transb: cublas::Op::N,
            m: n,
            n: m,
            k,
            alpha: T::ONE,
            beta: T::ZERO,
            a: matrix(n),
            b: matrix(k),
            c: matrix(n),
            batch: 1,
            operands: [1, 0],
        };
        if [m, n, k]
            .iter()
            .any(|&extent| i32::try_from(extent).is_err())
        {
            return Err(CudaError::Shape("direct_gemm: sizes past `int`".to_owned()));
        }
        let buffers = [(b.data, b.len), (a.data, a.len), (c.data, c.len)];
        let counters = self.counters();
        match self.gpu() {
            None => {
                if !call.within(buffers.map(|(_, len)| len)) {
                    return Err(CudaError::Shape(
                        "direct_gemm: the call leaves its buffers".to_owned(),
                    ));
                }
                counters.gemm();
                // SAFETY: host buffers of three distinct tensors (`c` is borrowed mutably),
                // every address checked by `within`.
                unsafe { call.on_host(buffers[0].0, buffers[1].0, target.data_mut()) };
                Ok(())
            }
            // SAFETY: this device's buffers of three distinct tensors (`c` is borrowed
            // mutably), alive until the stream has run the call (dropping a tensor frees its
            // buffer in stream order).
            Some(gpu) => unsafe { gpu.blas_call(&call, buffers, counters) },
        }
    }
}

//! The CUDA backend (feature `cuda`): devices, and plan steps run as generated CUDA modules —
//! compiled by NVRTC for a GPU, or by the host C++ compiler for [`CudaDevice::simulator`].
//! Invariant: nothing here panics for a missing driver, NVRTC or device; each is a
//! [`CudaError`]. A sibling of the host engines: it imports `tensor`, `operand` and `exec`,
//! and its files import each other, never this table of contents.

mod copy;
mod cublas;
mod device;
mod device_backend;
mod error;
mod gpu;
mod launch;
pub mod nvrtc;
mod simulator;
mod stats;
mod tensor;

pub use crate::exec::backend::StepModule;
pub use device::{device_count, CudaDevice};
pub use error::CudaError;
pub use stats::DeviceStats;
pub use tensor::{CudaTensor, DeviceElement};

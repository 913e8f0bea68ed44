//! The CUDA backend (feature `cuda`): devices, and plan steps run as generated CUDA modules —
//! compiled by NVRTC for a GPU, or by the host C++ compiler for [`CudaDevice::simulator`].
//! Invariant: nothing here panics for a missing driver, NVRTC or device; each is a
//! [`CudaError`].

#[doc(hidden)]
pub mod backend;
mod cublas;
mod error;
mod launch;
pub mod nvrtc;
mod simulator;
mod tensor;

use std::sync::Arc;

pub use error::CudaError;
pub use launch::Kernel;
pub use tensor::CudaTensor;

use crate::step::Step;
use crate::Element;
use simulator::Simulator;

/// How many CUDA devices the driver sees; an error (never a panic) when there is no driver.
pub fn device_count() -> Result<usize, CudaError> {
    if !driver_present() {
        return Err(CudaError::NoDriver);
    }
    let count = cudarc::driver::CudaContext::device_count()?;
    Ok(usize::try_from(count).unwrap_or(0))
}

fn driver_present() -> bool {
    static PRESENT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    // SAFETY: only tries to open libcuda by its candidate names and drops what it opened.
    *PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() })
}

/// A device that runs `tensor!` steps: a GPU, or the simulator.
#[derive(Clone)]
pub struct CudaDevice {
    inner: Arc<Backend>,
}

enum Backend {
    Simulator(Simulator),
    Gpu(Gpu),
}

struct Gpu {
    ordinal: usize,
    _context: Arc<cudarc::driver::CudaContext>,
    /// `sm_XY`, what modules are compiled for.
    arch: String,
}

impl CudaDevice {
    /// The GPU with this ordinal.
    pub fn new(ordinal: usize) -> Result<CudaDevice, CudaError> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(CudaError::NoDevice { ordinal, count });
        }
        let context = cudarc::driver::CudaContext::new(ordinal)?;
        let (major, minor) = context.compute_capability()?;
        Ok(CudaDevice {
            inner: Arc::new(Backend::Gpu(Gpu {
                ordinal,
                _context: context,
                arch: format!("sm_{major}{minor}"),
            })),
        })
    }

    /// The simulator: device code run on the host. Each module is compiled once by the host
    /// C++ compiler (`$CXX`, else `c++`) with a shim for CUDA's built-ins; a block's threads
    /// are fibers, so `__syncthreads` behaves as on a GPU (and threads that miss a barrier are
    /// reported). For debugging device code, and for testing on machines without a GPU.
    pub fn simulator() -> CudaDevice {
        CudaDevice {
            inner: Arc::new(Backend::Simulator(Simulator::default())),
        }
    }

    /// Whether this is the simulator.
    pub fn is_simulator(&self) -> bool {
        matches!(*self.inner, Backend::Simulator(_))
    }

    /// `sm_XY` for a GPU, `None` for the simulator.
    pub fn arch(&self) -> Option<&str> {
        match &*self.inner {
            Backend::Gpu(gpu) => Some(&gpu.arch),
            Backend::Simulator(_) => None,
        }
    }

    /// Compiles steps' modules (both element types) ahead of their first launch (the
    /// simulator compiles them together, which is much faster than one by one).
    pub fn prepare(&self, kernels: &[Kernel<'_>]) -> Result<(), CudaError> {
        let texts: Vec<&str> = kernels
            .iter()
            .flat_map(|kernel| [kernel.text::<f32>(), kernel.text::<f64>()])
            .collect();
        match &*self.inner {
            Backend::Simulator(simulator) => simulator.prepare(&texts),
            Backend::Gpu(gpu) => {
                for text in texts {
                    nvrtc::compile(text, &gpu.arch)?;
                }
                Ok(())
            }
        }
    }

    /// Runs one proven step of host memory with its module (`scalars` are the statement's
    /// Rust scalars, `tdsl_args::scalar`).
    #[doc(hidden)]
    pub fn run_step<T: Element, const L: usize, const N: usize>(
        &self,
        kernel: &Kernel<'_>,
        step: Step<'_, T, L, N>,
        scalars: &[T],
    ) -> Result<(), CudaError> {
        if kernel.loops != L
            || kernel.operands != N
            || kernel.target_loops != step.n_out
            || kernel.scalars != scalars.len()
        {
            return Err(CudaError::Driver(format!(
                "a module for {} loops ({} the target's), {} operands and {} scalars launched \
                 with {L} ({}), {N} and {}",
                kernel.loops,
                kernel.target_loops,
                kernel.operands,
                kernel.scalars,
                step.n_out,
                scalars.len()
            )));
        }
        match &*self.inner {
            Backend::Simulator(simulator) => {
                let module = simulator.module(kernel.text::<T>())?;
                launch::on_simulator(&module, step, scalars)
            }
            Backend::Gpu(gpu) => Err(CudaError::Driver(format!(
                "device {}: launching steps over host memory needs the simulator",
                gpu.ordinal
            ))),
        }
    }
}

impl CudaDevice {
    /// Runs a two-operand contraction step as cuBLAS calls where its layout allows, else as
    /// its loop-nest module.
    #[doc(hidden)]
    pub fn run_contraction<T: Element, const L: usize>(
        &self,
        kernel: &Kernel<'_>,
        step: Step<'_, T, L, 2>,
        scalars: &[T],
    ) -> Result<(), CudaError> {
        let Some(calls) = cublas::calls(&step) else {
            return self.run_step(kernel, step, scalars);
        };
        match &*self.inner {
            Backend::Simulator(_) => cublas::on_host(&step, &calls),
            Backend::Gpu(gpu) => Err(CudaError::Driver(format!(
                "device {}: launching steps over host memory needs the simulator",
                gpu.ordinal
            ))),
        }
    }
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &*self.inner {
            Backend::Simulator(_) => write!(f, "CudaDevice::simulator()"),
            Backend::Gpu(gpu) => write!(f, "CudaDevice({}, {})", gpu.ordinal, gpu.arch),
        }
    }
}

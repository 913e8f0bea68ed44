//! A device's counters → [`DeviceStats`]: modules compiled, kernels launched and cuBLAS calls
//! made, counted by the engines as they work and read by [`CudaDevice::stats`](crate::cuda::CudaDevice::stats).

use std::sync::atomic::{AtomicUsize, Ordering};

/// Work a device has done since it was made (see [`CudaDevice::stats`](crate::cuda::CudaDevice::stats)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceStats {
    /// Modules compiled (by NVRTC, or by the host compiler for the simulator, which compiles
    /// several modules in one run and counts each).
    pub modules_compiled: usize,
    /// Kernel launches (two for a scalar sum).
    pub kernel_launches: usize,
    /// cuBLAS `gemmStridedBatched` calls (run by the host's implementation on the simulator).
    pub gemm_calls: usize,
}

#[derive(Default)]
pub(crate) struct Counters {
    compiled: AtomicUsize,
    launches: AtomicUsize,
    gemms: AtomicUsize,
}

impl Counters {
    pub(crate) fn stats(&self) -> DeviceStats {
        DeviceStats {
            modules_compiled: self.compiled.load(Ordering::Relaxed),
            kernel_launches: self.launches.load(Ordering::Relaxed),
            gemm_calls: self.gemms.load(Ordering::Relaxed),
        }
    }
    pub(crate) fn compiled(&self) {
        self.compiled.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn launched(&self) {
        self.launches.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn gemm(&self) {
        self.gemms.fetch_add(1, Ordering::Relaxed);
    }
}

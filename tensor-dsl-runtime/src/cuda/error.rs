//! Everything that can go wrong on the device side → one error type, [`CudaError`], whose
//! message says what failed and what to do. Nothing in the CUDA backend panics for a missing
//! driver, library or device.

use std::fmt;

/// A failure of the CUDA backend: no driver or NVRTC, no such device, a kernel that did not
/// compile, a failed launch or copy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CudaError {
    /// `libcuda` could not be loaded: no NVIDIA driver on the loader path.
    NoDriver,
    /// `libnvrtc` (CUDA 13) could not be loaded: kernels cannot be compiled.
    NoNvrtc,
    /// No device with this ordinal.
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },
    /// The simulator's C++ compiler failed (or is missing); the message holds its output.
    HostCompiler(String),
    /// NVRTC rejected a kernel; `log` is its log, with file:line and caret.
    Compile {
        /// NVRTC's compilation log.
        log: String,
    },
    /// A driver, cuBLAS or simulator call failed.
    Driver(String),
    /// Tensors of different devices (or a device tensor and the simulator) in one statement.
    DeviceMismatch,
    /// A shape that device memory cannot hold or a kernel cannot index.
    Shape(String),
    /// A real device tensor in a complex statement: device modules read one element type.
    RealInComplex,
}

impl fmt::Display for CudaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CudaError::NoDriver => write!(
                f,
                "no CUDA driver: libcuda could not be loaded (install the NVIDIA driver, or use \
                 `CudaDevice::simulator()` to run device code on the host)"
            ),
            CudaError::NoNvrtc => write!(
                f,
                "no NVRTC: libnvrtc.so.13 could not be loaded (put CUDA 13's NVRTC on the loader \
                 path, e.g. LD_LIBRARY_PATH, before the program starts)"
            ),
            CudaError::NoDevice { ordinal, count } => {
                write!(f, "no CUDA device {ordinal}: {count} device(s) present")
            }
            CudaError::HostCompiler(output) => write!(
                f,
                "the CUDA simulator could not compile a kernel with the host C++ compiler \
                 (`$CXX`, else `c++`): {output}"
            ),
            CudaError::Compile { log } => write!(f, "NVRTC could not compile a kernel:\n{log}"),
            CudaError::Driver(message) => write!(f, "CUDA call failed: {message}"),
            CudaError::DeviceMismatch => write!(
                f,
                "tensors of different devices in one statement: copy them to one device first"
            ),
            CudaError::Shape(message) => write!(f, "{message}"),
            CudaError::RealInComplex => write!(
                f,
                "a real device tensor in a complex statement: on a device every tensor of a \
                 statement has its element type (copy the real one as complex, such as \
                 `CudaTensor::from_host(&device, &t.mapv(c64::from))`)"
            ),
        }
    }
}

impl std::error::Error for CudaError {}

impl From<cudarc::driver::DriverError> for CudaError {
    fn from(error: cudarc::driver::DriverError) -> Self {
        CudaError::Driver(error.to_string())
    }
}

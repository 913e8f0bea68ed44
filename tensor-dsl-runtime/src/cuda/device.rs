//! `CudaDevice`: a GPU or the simulator, and the steps it runs (a module launch, cuBLAS calls,
//! or a network of pairwise calls through device temporaries). Invariant: nothing here panics
//! for a missing driver, NVRTC or device; each is a [`CudaError`], and a device runs only steps
//! over its own memory.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, DevicePtr};

use crate::element::{DeviceOf, Element, Kind};
use crate::exec::backend::StepModule;
use crate::exec::gemm::{elements_over, packed_layouts, GemmPlan, Weighing};
use crate::exec::network::{self, Pairing, PlanCache};
use crate::exec::scratch::Scratch;
use crate::exec::step::{Bound, BoundTarget, Step};
use crate::operand::access::Memory;

use super::copy;
use super::cublas;
use super::error::CudaError;
use super::gpu::Gpu;
use super::simulator::Simulator;
use super::stats::{Counters, DeviceStats};

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

/// A device that runs `tensor!` steps: a GPU, or the simulator. Clones share the device.
#[derive(Clone)]
pub struct CudaDevice {
    inner: Arc<Shared>,
}

struct Shared {
    kind: DeviceKind,
    counters: Counters,
}

/// Which engine runs a device's steps.
enum DeviceKind {
    Simulator(Simulator),
    Gpu(Gpu),
}

impl CudaDevice {
    fn with(kind: DeviceKind) -> CudaDevice {
        CudaDevice {
            inner: Arc::new(Shared {
                kind,
                counters: Counters::default(),
            }),
        }
    }

    /// The GPU with this ordinal.
    pub fn new(ordinal: usize) -> Result<CudaDevice, CudaError> {
        let count = device_count()?;
        if ordinal >= count {
            return Err(CudaError::NoDevice { ordinal, count });
        }
        Ok(CudaDevice::with(DeviceKind::Gpu(Gpu::new(ordinal)?)))
    }

    /// The simulator: device code run on the host. Each module is compiled once by the host
    /// C++ compiler (`$CXX`, else `c++`) with a shim for CUDA's built-ins; a block's threads
    /// are fibers, so `__syncthreads` behaves as on a GPU (and threads that miss a barrier are
    /// reported); cuBLAS calls run through a host implementation of cuBLAS's column-major
    /// definition. For debugging device code, and for testing on machines without a GPU.
    pub fn simulator() -> CudaDevice {
        CudaDevice::with(DeviceKind::Simulator(Simulator::new()))
    }

    /// Whether this is the simulator.
    pub fn is_simulator(&self) -> bool {
        matches!(self.inner.kind, DeviceKind::Simulator(_))
    }

    /// `sm_XY` for a GPU, `None` for the simulator.
    pub fn arch(&self) -> Option<&str> {
        match &self.inner.kind {
            DeviceKind::Gpu(gpu) => Some(&gpu.arch),
            DeviceKind::Simulator(_) => None,
        }
    }

    /// What the device has compiled and run so far (shared by clones).
    pub fn stats(&self) -> DeviceStats {
        self.inner.counters.stats()
    }

    /// Compiles steps' modules (those of the float types; integer and complex modules compile
    /// at their first launch) ahead of their first launch (the simulator compiles them together, which
    /// is much faster than one by one).
    pub fn prepare(&self, modules: &[StepModule<'_>]) -> Result<(), CudaError> {
        let texts: Vec<&str> = modules
            .iter()
            .flat_map(|module| [module.text::<f32>(), module.text::<f64>()])
            .collect();
        match &self.inner.kind {
            DeviceKind::Simulator(simulator) => simulator.prepare(&texts, &self.inner.counters),
            DeviceKind::Gpu(gpu) => gpu.prepare(&texts, &self.inner.counters),
        }
    }

    /// Runs one proven step with its module (`scalars` are the statement's Rust scalars,
    /// `tdsl_args::scalar`).
    #[doc(hidden)]
    pub fn run_step<T: Element, const L: usize, const N: usize>(
        &self,
        module: &StepModule<'_>,
        step: Step<'_, T, L, N>,
        scalars: &[T],
    ) -> Result<(), CudaError> {
        one_element_type(&step)?;
        if module.loops != L
            || module.operands != N
            || module.target_loops != step.n_out()
            || module.scalars != scalars.len()
        {
            return Err(CudaError::Driver(format!(
                "a module for {} loops ({} the target's), {} operands and {} scalars launched \
                 with {L} ({}), {N} and {}",
                module.loops,
                module.target_loops,
                module.operands,
                module.scalars,
                step.n_out(),
                scalars.len()
            )));
        }
        self.run_text(module.text::<T>(), step, scalars)
    }

    /// Runs one proven step with the module `text`, which must be one for a step of its shape
    /// (see [`StepModule::new`]'s contract, or [`copy::module`]).
    fn run_text<T: Element, const L: usize, const N: usize>(
        &self,
        text: &str,
        step: Step<'_, T, L, N>,
        scalars: &[T],
    ) -> Result<(), CudaError> {
        let counters = &self.inner.counters;
        match &self.inner.kind {
            DeviceKind::Simulator(simulator) => simulator.run_step(text, step, scalars, counters),
            DeviceKind::Gpu(gpu) => gpu.run_step(text, step, scalars, counters),
        }
    }

    /// Runs a two-operand contraction step, the operands `conj` names conjugated, as cuBLAS
    /// calls where its layout allows (after copying operands whose loops do not merge, where
    /// that saves calls: [`CudaDevice::run_packed`]), else as its loop-nest module (which
    /// conjugates in its body; also for a scalar result, which lives on the host: cuBLAS
    /// writes only device memory, the module writes it through a device temporary).
    #[doc(hidden)]
    pub fn run_contraction<T: Element, const L: usize>(
        &self,
        module: &StepModule<'_>,
        step: Step<'_, T, L, 2>,
        conj: [bool; 2],
        scalars: &[T],
    ) -> Result<(), CudaError> {
        let host_scalar = step.memory()[0] == Memory::Host && step.n_out() == 0;
        if host_scalar {
            return self.run_step(module, step, scalars);
        }
        if self.run_packed(&step, conj)? {
            return Ok(());
        }
        match cublas::calls(&step, conj) {
            Some(calls) => self.run_calls(&step, &calls),
            None => self.run_step(module, step, scalars),
        }
    }

    /// TTGT on the device: where the step's GEMM is many calls (or more than cuBLAS calls are
    /// worth, so a module), copies one or both operands into device temporaries laid out so
    /// that their loops merge (the host engine's [`packed_layouts`], weighed with
    /// [`PACKING_REUSE`]; the target is not copied here), then makes the fewer calls on those.
    /// `false`, with nothing run, where no copy pays, an operand is not this device's or is a
    /// real tensor read as complex, or cuBLAS would not take the packed step either.
    fn run_packed<T: Element, const L: usize>(
        &self,
        step: &Step<'_, T, L, 2>,
        conj: [bool; 2],
    ) -> Result<bool, CudaError> {
        let memory = self.memory();
        let cublas_type = !matches!(T::KIND, Kind::I32 | Kind::I64);
        // A real tensor read as complex (`part`) is refused by the calls and modules alike
        // (`one_element_type`); a copy would read its parts as elements.
        let parts = step.operands().iter().any(|operand| operand.part);
        if !cublas_type || parts || step.memory() != [memory; 2] {
            return Ok(false);
        }
        let Some(layouts) = GemmPlan::of(step).and_then(|plan| {
            let weighing = Weighing::FewestCalls {
                reuse: PACKING_REUSE,
            };
            packed_layouts(step, &plan, weighing, false).map(|packing| packing.layouts)
        }) else {
            return Ok(false);
        };
        let lens = (step.operands().iter().zip(layouts))
            .filter(|(_, layout)| layout.is_some())
            .map(|(operand, _)| elements_over(step.extents(), operand.uses));
        // Each copy writes its whole temporary: a layout of `packed_layouts` is row-major over
        // the operand's loops, and the copy's target loops are exactly those loops.
        let (buffers, starts) = self.temporaries::<T>(lens, true)?;
        let mut starts = starts.into_iter();
        let mut operands = *step.operands();
        let mut copies = Vec::new();
        for (operand, layout) in operands.iter_mut().zip(layouts) {
            let Some(strides) = layout else { continue };
            let (start, len) = starts.next().expect("one temporary per copied operand");
            let target = BoundTarget::raw(start, len, strides, operand.uses);
            // Copied as they are: a conjugation stays the calls'.
            copies.push(step.derived(Some(target), [*operand], memory));
            *operand = Bound::raw(start.cast_const(), len, strides, operand.uses);
        }
        let packed = step.with_operands(operands);
        let Some(calls) = cublas::calls(&packed, conj) else {
            return Ok(false);
        };
        // Every loop a copy does not write is one its operand does not use, so of extent 1
        // (`Step::derived`); `copy::module` visits only those loops' index 0, which the proof
        // then covers. Checked before anything runs, as the module's soundness rests on it.
        let summed =
            |copy: &Step<'_, T, L, 1>| copy.extents()[copy.n_out()..].iter().any(|&e| e != 1);
        if copies.iter().any(summed) {
            return Err(CudaError::Driver(
                "tensor-dsl bug: a copy step with a summed loop".to_owned(),
            ));
        }
        for copy in copies {
            self.run_text(&copy::module::<T>(L, copy.n_out()), copy, &[])?;
        }
        self.run_calls(&packed, &calls)?;
        // Freed after the calls (on a GPU in stream order, so after they have run).
        drop(buffers);
        Ok(true)
    }

    /// Buffers of these lengths in this device's memory (on the simulator, the host's), with
    /// each one's start and length; they live as long as the first value. Zeroed, unless
    /// `written` (every element is written before any is read): then a GPU's are left as the
    /// allocator hands them out, which saves a pass over them (a tenth of the copy's time).
    #[allow(clippy::type_complexity)]
    fn temporaries<T: Element>(
        &self,
        lens: impl IntoIterator<Item = usize>,
        written: bool,
    ) -> Result<(Temporaries<T>, Vec<(*mut T, usize)>), CudaError> {
        Ok(match &self.inner.kind {
            DeviceKind::Simulator(_) => {
                let mut buffers = Scratch::with_lengths(lens);
                let starts = buffers.starts();
                (Temporaries::Host { _buffers: buffers }, starts)
            }
            DeviceKind::Gpu(gpu) => {
                let buffers = lens
                    .into_iter()
                    .map(|len| match written {
                        // SAFETY: `alloc` is unsafe because the buffer's bytes are whatever the
                        // allocator left there. They never reach the host as `T` unwritten: a
                        // `written` temporary is filled by a copy module before a cuBLAS call
                        // reads it, and it is freed without being read back. (Any bits are a
                        // valid `DeviceOf<T>` besides: floats, integers, or pairs of floats.)
                        true => unsafe { gpu.stream.alloc::<DeviceOf<T>>(len.max(1)) },
                        false => gpu.stream.alloc_zeros::<DeviceOf<T>>(len.max(1)),
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let starts = buffers
                    .iter()
                    .map(|buffer| (buffer.device_ptr(&gpu.stream).0 as *mut T, buffer.len()))
                    .collect();
                (Temporaries::Gpu { _buffers: buffers }, starts)
            }
        })
    }

    /// A two-operand step's cuBLAS calls: cuBLAS on a GPU, its host definition on the
    /// simulator (whose memory is the host's).
    fn run_calls<T: Element, const L: usize>(
        &self,
        step: &Step<'_, T, L, 2>,
        calls: &[cublas::Call<T>],
    ) -> Result<(), CudaError> {
        one_element_type(step)?;
        let counters = &self.inner.counters;
        match &self.inner.kind {
            DeviceKind::Simulator(simulator) => {
                if step.memory() != [simulator.memory; 2] {
                    return Err(CudaError::DeviceMismatch);
                }
                cublas::on_host(step, calls, counters)
            }
            DeviceKind::Gpu(gpu) => gpu.gemm(step, calls, counters),
        }
    }

    /// Runs a product of three or more tensors, the factors `conj` names conjugated, as
    /// pairwise cuBLAS contractions through device temporaries, in the order the host engine
    /// chooses for these extents, when every pair maps to cuBLAS; else (or for a host scalar
    /// result) as the step's fused module.
    #[doc(hidden)]
    pub fn run_network<T: Element, const L: usize, const N: usize>(
        &self,
        module: &StepModule<'_>,
        step: Step<'_, T, L, N>,
        conj: [bool; N],
        cache: &PlanCache,
        scalars: &[T],
    ) -> Result<(), CudaError> {
        let memory = self.memory();
        if !network::pairwise(&step) || step.memory() != [memory; 2] {
            return self.run_step(module, step, scalars);
        }
        let pairing = Pairing::new(&step, cache);
        // The temporaries, alive until the calls have run (on a GPU, freed in stream order
        // after them).
        let (buffers, starts) =
            self.temporaries::<T>(pairing.temporaries.iter().map(|&(len, _)| len), false)?;
        let pairs = pairing.steps(&step, &starts, memory);
        let Some(calls) = (pairs.iter().zip(pairing.conj(conj)))
            .map(|(pair, conj)| cublas::calls(pair, conj))
            .collect::<Option<Vec<_>>>()
        else {
            drop(pairs);
            return self.run_step(module, step, scalars);
        };
        for (pair, calls) in pairs.iter().zip(&calls) {
            self.run_calls(pair, calls)?;
        }
        drop(buffers);
        Ok(())
    }

    /// Waits until the device has finished all work queued so far (reading results with
    /// `to_host` or as scalars waits by itself).
    pub fn synchronize(&self) -> Result<(), CudaError> {
        match &self.inner.kind {
            DeviceKind::Simulator(_) => Ok(()),
            DeviceKind::Gpu(gpu) => gpu.synchronize(),
        }
    }

    /// The device's counters, for work done outside its own methods.
    pub(crate) fn counters(&self) -> &Counters {
        &self.inner.counters
    }

    /// The GPU behind this device, `None` for the simulator (whose memory is the host's).
    pub(crate) fn gpu(&self) -> Option<&Gpu> {
        match &self.inner.kind {
            DeviceKind::Gpu(gpu) => Some(gpu),
            DeviceKind::Simulator(_) => None,
        }
    }

    /// Where this device's tensors' elements live, as accesses record it.
    pub(crate) fn memory(&self) -> Memory {
        match &self.inner.kind {
            DeviceKind::Simulator(simulator) => simulator.memory,
            DeviceKind::Gpu(gpu) => gpu.memory,
        }
    }
}

/// Below this many multiply-adds per element copied, a TTGT copy on a device costs more than the
/// calls it saves: a copy moves an `f32` element's 8 bytes in about the time of 64 `f32`
/// multiply-adds (an H100: about 2.8 TB/s copied, 50 TFLOP/s in cuBLAS's SGEMM).
const PACKING_REUSE: usize = 64;

/// Temporaries of a device step: host buffers on the simulator, device buffers on a GPU
/// (dropped in stream order, after the work queued on them).
enum Temporaries<T: Element> {
    Host {
        _buffers: Scratch<T>,
    },
    Gpu {
        _buffers: Vec<CudaSlice<DeviceOf<T>>>,
    },
}

/// Refuses a step that reads a real tensor as complex (`RawAccess::part`): device modules
/// read every operand as the step's element type.
fn one_element_type<T, const L: usize, const N: usize>(
    step: &Step<'_, T, L, N>,
) -> Result<(), CudaError> {
    match step.operands().iter().any(|operand| operand.part) {
        true => Err(CudaError::RealInComplex),
        false => Ok(()),
    }
}

impl std::fmt::Debug for CudaDevice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.inner.kind {
            DeviceKind::Simulator(_) => write!(f, "CudaDevice::simulator()"),
            DeviceKind::Gpu(gpu) => write!(f, "CudaDevice({}, {})", gpu.ordinal, gpu.arch),
        }
    }
}

//! A GPU through the CUDA driver: one context and stream per device, NVRTC cubins loaded once
//! per module text, steps launched with their argument block, contractions as cuBLAS calls.
//! Invariant: every device pointer handed to a kernel or to cuBLAS is one a proven
//! [`Step`] covers (or a temporary made here for the launch), and all work runs in order on the
//! device's one stream, so a later launch or copy sees every earlier write.

use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::cublas::{result as blas, sys as blas_sys};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, DeviceRepr,
    LaunchConfig, PushKernelArg,
};
use cudarc::nvrtc::Ptx;

use crate::element::{DeviceOf, Element, Kind};
use crate::exec::step::Step;
use crate::operand::access::Memory;

use super::cublas::{Call, Op};
use super::error::CudaError;
use super::launch::{self, Launch};
use super::nvrtc;
use super::stats::Counters;

/// A device's context, stream, cuBLAS handle and loaded modules.
pub(crate) struct Gpu {
    /// Created on the first contraction; calls on one handle must not overlap. First, so it is
    /// destroyed before the stream and modules (and with its context current).
    blas: OnceLock<Result<Mutex<BlasHandle>, CudaError>>,
    pub(crate) ordinal: usize,
    /// `sm_XY`, what modules are compiled for.
    pub(crate) arch: String,
    pub(crate) stream: Arc<CudaStream>,
    /// Tells this device's memory from the host's and other devices' in accesses.
    pub(crate) memory: Memory,
    modules: Mutex<HashMap<String, Arc<GpuModule>>>,
}

struct GpuModule {
    _module: Arc<CudaModule>,
    functions: HashMap<String, CudaFunction>,
}

struct BlasHandle(blas_sys::cublasHandle_t, Arc<CudaContext>);

// SAFETY: a cuBLAS handle may move between threads as long as calls on it do not overlap,
// which the mutex around it ensures.
unsafe impl Send for BlasHandle {}

impl Drop for BlasHandle {
    fn drop(&mut self) {
        // The handle belongs to its context, which this keeps alive: make it current first.
        let _ = self.1.bind_to_thread();
        // SAFETY: the handle was created by `cublasCreate` and is destroyed once, here.
        let _ = unsafe { blas::destroy_handle(self.0) };
    }
}

/// The argument block of a launch, as one kernel parameter: the driver copies
/// `sizeof(tdsl_args)` bytes from its start. Sized for the largest block the launcher builds.
#[repr(C, align(16))]
struct ArgBlock([u8; ARG_BYTES]);

/// Past CUDA's limit on a kernel's parameters (32 764 bytes on Volta and later with CUDA 12.1
/// and later), so the driver never reads past the block whatever a module declares.
const ARG_BYTES: usize = 32_768;

// SAFETY: plain bytes; the kernel reads them as its `tdsl_args`, whose layout `Args` follows.
unsafe impl DeviceRepr for ArgBlock {}

fn driver<E: std::fmt::Display>(what: &str) -> impl Fn(E) -> CudaError + '_ {
    move |error| CudaError::Driver(format!("{what}: {error}"))
}

impl Gpu {
    pub(crate) fn new(ordinal: usize) -> Result<Gpu, CudaError> {
        let context = CudaContext::new(ordinal)?;
        let (major, minor) = context.compute_capability()?;
        Ok(Gpu {
            blas: OnceLock::new(),
            ordinal,
            arch: format!("sm_{major}{minor}"),
            // A stream of its own, not the legacy default one: that handle means "the current
            // device's", so frees ordered on it could land on another device's queue.
            stream: context.new_stream()?,
            memory: Memory::fresh_device(),
            modules: Mutex::new(HashMap::new()),
        })
    }

    /// The loaded module for `text`, compiling it with NVRTC on first use.
    fn module(&self, text: &str, counters: &Counters) -> Result<Arc<GpuModule>, CudaError> {
        let mut modules = self
            .modules
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(module) = modules.get(text) {
            return Ok(module.clone());
        }
        let cubin = nvrtc::compile(text, &self.arch)?;
        counters.compiled();
        let module = self
            .stream
            .context()
            .load_module(Ptx::from_binary(cubin.image))?;
        let mut functions = HashMap::new();
        for entry in launch::entries(text) {
            functions.insert(entry.clone(), module.load_function(&entry)?);
        }
        let module = Arc::new(GpuModule {
            _module: module,
            functions,
        });
        modules.insert(text.to_owned(), module.clone());
        Ok(module)
    }

    pub(crate) fn prepare(&self, texts: &[&str], counters: &Counters) -> Result<(), CudaError> {
        texts
            .iter()
            .try_for_each(|text| self.module(text, counters).map(|_| ()))
    }

    /// Runs one step with its module. The step's operands are in this device's memory; its
    /// target too, or it is a host scalar (a statement's scalar result), which goes through a
    /// one-element device temporary.
    pub(crate) fn run_step<T: Element, const L: usize, const N: usize>(
        &self,
        text: &str,
        step: Step<'_, T, L, N>,
        scalars: &[T],
        counters: &Counters,
    ) -> Result<(), CudaError> {
        let host_scalar = launch::host_scalar_target(&step, self.memory)?;
        let module = self.module(text, counters)?;
        let (launch, narrow) = launch::plan(&step, module.functions.contains_key(launch::TILES));
        if launch == Launch::Nothing {
            return Ok(());
        }
        // A host scalar target: copied to the device, written there, copied back.
        let mut scalar_target: Option<CudaSlice<DeviceOf<T>>> = None;
        if host_scalar {
            // SAFETY: a host target of one element: `step` proved element `base` inside it.
            let value = unsafe { *step.target().data.offset(step.target().base) };
            scalar_target = Some(self.stream.clone_htod(T::as_device(&[value]))?);
        }
        let partials = match launch {
            Launch::Scalar { grid } => Some(self.stream.alloc_zeros::<DeviceOf<T>>(grid as usize)?),
            _ => None,
        };
        let pointer = |slice: &Option<CudaSlice<DeviceOf<T>>>| -> Option<u64> {
            slice.as_ref().map(|slice| slice.device_ptr(&self.stream).0)
        };
        let mut block = Box::new(ArgBlock([0; ARG_BYTES]));
        let bytes = launch::Args::new(&step, scalars)
            .with_partials(pointer(&partials), partials.as_ref().map_or(0, |p| p.len()))
            .with_target(pointer(&scalar_target))
            .bytes();
        if bytes.len() > ARG_BYTES {
            return Err(CudaError::Shape(format!(
                "a step of {L} loops and {N} operands needs {} bytes of kernel arguments, more \
                 than CUDA's {ARG_BYTES}",
                bytes.len()
            )));
        }
        block.0[..bytes.len()].copy_from_slice(&bytes);
        let function = |name: String| {
            module
                .functions
                .get(&name)
                .ok_or_else(|| CudaError::Driver(format!("the module has no entry `{name}`")))
        };
        let config = |grid: u32, threads: u32| LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: 0,
        };
        let go = |name: String, grid: u32, threads: u32| -> Result<(), CudaError> {
            let function = function(name)?;
            let mut builder = self.stream.launch_builder(function);
            builder.arg(&*block);
            counters.launched();
            // SAFETY: the argument block holds the step's pointers and layout: every address
            // the kernel forms is one the step proved inside its buffer (or inside the
            // temporaries above, which live until the stream has run the kernel: their drop
            // frees them in stream order); non-injective targets run on one thread.
            unsafe { builder.launch(config(grid, threads)) }
                .map(|_| ())
                .map_err(CudaError::from)
        };
        for pass in launch.passes(narrow) {
            go(pass.entry, pass.grid, pass.block)?;
        }
        if let Some(scalar) = scalar_target {
            let value = T::from_device(self.stream.clone_dtoh(&scalar)?);
            // SAFETY: as above: the host target's one proven element, which the step borrows
            // mutably.
            unsafe { *step.target().data.offset(step.target().base) = value[0] };
        }
        Ok(())
    }

    /// Runs cuBLAS calls (from [`super::cublas::calls`] on `step`) on this device.
    pub(crate) fn gemm<T: Element, const L: usize>(
        &self,
        step: &Step<'_, T, L, 2>,
        calls: &[Call<T>],
        counters: &Counters,
    ) -> Result<(), CudaError> {
        if step.memory() != [self.memory; 2] {
            return Err(CudaError::DeviceMismatch);
        }
        for call in calls {
            let [a, b] = call.operands.map(|k| &step.operands()[k]);
            let buffers = [
                (a.data, a.len),
                (b.data, b.len),
                (step.target().data.cast_const(), step.target().len),
            ];
            // SAFETY: the buffers are this device's (checked above) and borrowed by the step,
            // C's writable (the step's target); C's elements are distinct and disjoint from
            // A's and B's (GEMM plans need an injective target and no in-place operand).
            unsafe { self.blas_call(call, buffers, counters)? };
        }
        Ok(())
    }

    /// One cuBLAS call on device buffers given as (start, length in elements): A, B, C.
    ///
    /// # Safety
    /// The buffers are this device's memory, live until the stream has run the call, A and B
    /// readable and C writable, with C's elements (over all batches) distinct from each other
    /// and from A's and B's. The call's addresses are checked against the lengths here.
    pub(crate) unsafe fn blas_call<T: Element>(
        &self,
        call: &Call<T>,
        [(a, a_len), (b, b_len), (c, c_len)]: [(*const T, usize); 3],
        counters: &Counters,
    ) -> Result<(), CudaError> {
        if !call.within([a_len, b_len, c_len]) {
            return Err(CudaError::Driver(format!(
                "cuBLAS call {call:?} leaves its buffers"
            )));
        }
        let handle = self
            .blas
            .get_or_init(|| {
                if !blas_present() {
                    return Err(CudaError::Driver(
                        "cuBLAS (libcublas 13) could not be loaded: put it on the loader path"
                            .to_owned(),
                    ));
                }
                self.stream.context().bind_to_thread()?;
                let handle = BlasHandle(
                    blas::create_handle().map_err(driver("cublasCreate"))?,
                    self.stream.context().clone(),
                );
                // SAFETY: `handle` was just created; it is destroyed before the stream (the
                // field order of `Gpu`), with its context current.
                unsafe { blas::set_stream(handle.0, self.stream.cu_stream() as _) }
                    .map_err(driver("cublasSetStream"))?;
                Ok(Mutex::new(handle))
            })
            .as_ref()
            .map_err(Clone::clone)?;
        let handle = handle
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        self.stream.context().bind_to_thread()?;
        let op = |op: Op| match op {
            Op::N => blas_sys::cublasOperation_t::CUBLAS_OP_N,
            Op::T => blas_sys::cublasOperation_t::CUBLAS_OP_T,
            Op::C => blas_sys::cublasOperation_t::CUBLAS_OP_C,
        };
        let size = std::mem::size_of::<T>() as isize;
        let address = |data: *const T, offset: isize| -> *mut c_void {
            (data as isize).wrapping_add(offset * size) as *mut c_void
        };
        let (pa, pb, pc) = (
            address(a, call.a.offset),
            address(b, call.b.offset),
            address(c, call.c.offset),
        );
        let fits = |value: usize| i32::try_from(value).is_ok();
        let sizes = [
            call.m, call.n, call.k, call.a.ld, call.b.ld, call.c.ld, call.batch,
        ];
        if !sizes.into_iter().all(fits) {
            return Err(CudaError::Shape(format!(
                "cuBLAS call {call:?}: sizes past `int`"
            )));
        }
        let int = |value: usize| value as i32;
        counters.gemm();
        // The same call for every element type, α and β rebuilt from their bits (`T` is the
        // type; `$scalar` is cuBLAS's, from the parts).
        macro_rules! strided_batched {
            ($gemm:path, $scalar:expr) => {
                $gemm(
                    handle.0,
                    op(call.transa),
                    op(call.transb),
                    int(call.m),
                    int(call.n),
                    int(call.k),
                    &$scalar(call.alpha.device_bits()),
                    pa.cast(),
                    int(call.a.ld),
                    call.a.stride as i64,
                    pb.cast(),
                    int(call.b.ld),
                    call.b.stride as i64,
                    &$scalar(call.beta.device_bits()),
                    pc.cast(),
                    int(call.c.ld),
                    call.c.stride as i64,
                    int(call.batch),
                )
            };
        }
        let single = |[re, _]: [u64; 2]| f32::from_bits(re as u32);
        let double = |[re, _]: [u64; 2]| f64::from_bits(re);
        let complex = |[re, im]: [u64; 2]| blas_sys::cuComplex {
            x: f32::from_bits(re as u32),
            y: f32::from_bits(im as u32),
        };
        let double_complex = |[re, im]: [u64; 2]| blas_sys::cuDoubleComplex {
            x: f64::from_bits(re),
            y: f64::from_bits(im),
        };
        // SAFETY: `within` checked every element the call addresses against the buffers'
        // lengths, and the arguments against cuBLAS's documented bounds; the caller vouches
        // for the buffers. α and β are read from the host before the call returns; `T`'s
        // device layout is cuBLAS's type for its kind (`DeviceElement`).
        let status = unsafe {
            match T::KIND {
                Kind::F32 => strided_batched!(blas::sgemm_strided_batched, single),
                Kind::F64 => strided_batched!(blas::dgemm_strided_batched, double),
                // The complex calls return cuBLAS's status (`result` has no wrapper for them).
                Kind::C32 => {
                    strided_batched!(blas_sys::cublasCgemmStridedBatched, complex).result()
                }
                Kind::C64 => {
                    strided_batched!(blas_sys::cublasZgemmStridedBatched, double_complex).result()
                }
                kind => unreachable!("cuBLAS calls of {kind:?} elements (see `cublas::calls`)"),
            }
        };
        status.map_err(driver("cuBLAS gemmStridedBatched"))
    }

    pub(crate) fn synchronize(&self) -> Result<(), CudaError> {
        Ok(self.stream.synchronize()?)
    }
}

fn blas_present() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to open libcublas by its candidate names and drops what it opened.
    *PRESENT.get_or_init(|| unsafe { blas_sys::is_culib_present() })
}

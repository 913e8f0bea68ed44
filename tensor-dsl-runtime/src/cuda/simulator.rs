//! Kernel text → host machine code: the simulator compiles the unchanged module with the host
//! C++ compiler and `shim.h` (CUDA's built-in variables, `__shared__`, `__syncthreads` as fiber
//! switches) into a shared library and runs its entry points over a grid. Invariant: a module is
//! compiled once per process; an entry is only called with an argument block of the size the
//! module's own `sizeof(tdsl_args)` reports.

use std::collections::HashMap;
use std::ffi::c_void;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use libloading::Library;

use crate::element::Element;
use crate::exec::step::Step;
use crate::operand::access::Memory;

use super::error::CudaError;
use super::launch::{self, plan, Args, Launch};
use super::stats::Counters;

const SHIM: &str = include_str!("shim.h");

type Entry = unsafe extern "C" fn(*const c_void);
type Run = unsafe extern "C" fn(Entry, *const c_void, u32, u32, i32) -> i32;
type Size = unsafe extern "C" fn() -> usize;

/// One compiled module.
pub(crate) struct SimModule {
    /// Keeps the code the entries point into loaded.
    _library: Arc<Library>,
    run: Run,
    entries: HashMap<String, Entry>,
    args_size: usize,
}

impl SimModule {
    /// Runs `entry` over `grid` blocks of `block` threads with the argument block `args`.
    ///
    /// # Safety
    /// Every address the kernel computes from `args` (pointers plus strides times indices over
    /// the extents) must be valid for the accesses the kernel makes, and nothing else may use
    /// the written memory meanwhile.
    pub(crate) unsafe fn launch(
        &self,
        entry: &str,
        args: &[u8],
        grid: u32,
        block: u32,
        barriers: bool,
    ) -> Result<(), CudaError> {
        let function = *self
            .entries
            .get(entry)
            .ok_or_else(|| CudaError::Driver(format!("the module has no entry `{entry}`")))?;
        if args.len() != self.args_size {
            return Err(CudaError::Driver(format!(
                "argument block of {} bytes for a module expecting {}",
                args.len(),
                self.args_size
            )));
        }
        // SAFETY: `function` and `run` come from a library this module keeps loaded; the
        // argument block has the size the module's `tdsl_args` has (checked above), and the
        // caller guarantees the addresses in it.
        let status =
            unsafe { (self.run)(function, args.as_ptr().cast(), grid, block, barriers as i32) };
        if status != 0 {
            return Err(CudaError::Driver(format!(
                "`{entry}`: the threads of a block did not all reach the same __syncthreads"
            )));
        }
        Ok(())
    }
}

/// Compiled modules by text, and the memory tag of this simulator's tensors (host memory,
/// told apart from the host's and every other device's so a statement cannot mix them).
pub(crate) struct Simulator {
    modules: Mutex<HashMap<String, Arc<SimModule>>>,
    pub(crate) memory: Memory,
}

impl Simulator {
    pub(crate) fn new() -> Self {
        Simulator {
            modules: Mutex::new(HashMap::new()),
            memory: Memory::fresh_device(),
        }
    }

    /// The module for `text`, compiling it if needed.
    pub(crate) fn module(
        &self,
        text: &str,
        counters: &Counters,
    ) -> Result<Arc<SimModule>, CudaError> {
        if let Some(module) = self.lock().get(text) {
            return Ok(module.clone());
        }
        self.prepare(&[text], counters)?;
        self.lock()
            .get(text)
            .cloned()
            .ok_or_else(|| CudaError::Driver("a compiled module went missing".to_owned()))
    }

    /// Compiles every module of `texts` not compiled yet, in one run of the C++ compiler.
    pub(crate) fn prepare(&self, texts: &[&str], counters: &Counters) -> Result<(), CudaError> {
        let mut missing: Vec<&str> = Vec::new();
        {
            let modules = self.lock();
            for &text in texts {
                if !modules.contains_key(text) && !missing.contains(&text) {
                    missing.push(text);
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        let (library, entries) = compile(&missing)?;
        missing.iter().for_each(|_| counters.compiled());
        let library = Arc::new(library);
        // SAFETY: `tdsl_sim_run` is defined by the shim with exactly the `Run` signature.
        let run: Run = *unsafe { library.get::<Run>(b"tdsl_sim_run\0") }
            .map_err(|error| CudaError::HostCompiler(error.to_string()))?;
        let mut modules = self.lock();
        for (k, (text, names)) in missing.iter().zip(entries).enumerate() {
            let size_symbol = format!("tdsl_sim_{k}_args_size\0");
            // SAFETY: the wrapper `compile` wrote for module `k` has the `Size` signature.
            let size: Size = *unsafe { library.get::<Size>(size_symbol.as_bytes()) }
                .map_err(|error| CudaError::HostCompiler(error.to_string()))?;
            let mut functions = HashMap::new();
            for name in names {
                let symbol = format!("tdsl_sim_{k}_{name}\0");
                // SAFETY: the wrapper for each entry has the `Entry` signature.
                let function: Entry = *unsafe { library.get::<Entry>(symbol.as_bytes()) }
                    .map_err(|error| CudaError::HostCompiler(error.to_string()))?;
                functions.insert(name, function);
            }
            modules.insert(
                (*text).to_owned(),
                Arc::new(SimModule {
                    _library: library.clone(),
                    run,
                    entries: functions,
                    // SAFETY: returns `sizeof` of the module's argument struct.
                    args_size: unsafe { size() },
                }),
            );
        }
        Ok(())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<SimModule>>> {
        self.modules
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// One translation unit: the shim, each module in a namespace of its own, and C wrappers that
/// unpack an argument block for each entry. The modules' namespaces are inside an unnamed one:
/// with external linkage, a block's `__shared__` array (a function-local `static thread_local`
/// in an entry template) would be a GNU "unique" symbol, which the loader binds to one
/// instance across every library of the process, so `tdsl_module_0`'s array of a later build
/// (of complex numbers, say) would be an earlier build's (of `f32`s), too small for it.
fn compile(texts: &[&str]) -> Result<(Library, Vec<Vec<String>>), CudaError> {
    static BUILDS: AtomicUsize = AtomicUsize::new(0);
    let mut unit = String::from(SHIM);
    let mut all = Vec::new();
    for (k, text) in texts.iter().enumerate() {
        let names = launch::entries(text);
        unit.push_str(&format!(
            "namespace {{\nnamespace tdsl_module_{k} {{\n#line 1 \"module_{k}.cu\"\n{text}\n}}\n}}\n"
        ));
        unit.push_str(&format!(
            "extern \"C\" unsigned long tdsl_sim_{k}_args_size() {{ return sizeof(tdsl_module_{k}::tdsl_args); }}\n"
        ));
        for name in &names {
            unit.push_str(&format!(
                "extern \"C\" void tdsl_sim_{k}_{name}(const void* args) {{\n    \
                 tdsl_module_{k}::tdsl_args a;\n    std::memcpy(&a, args, sizeof a);\n    \
                 tdsl_module_{k}::{name}(a);\n}}\n"
            ));
        }
        all.push(names);
    }
    let dir = std::env::temp_dir().join(format!(
        "tensor-dsl-simulator-{}-{}",
        std::process::id(),
        BUILDS.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|error| CudaError::HostCompiler(error.to_string()))?;
    let source = dir.join("kernels.cpp");
    let library_path: PathBuf = dir.join("kernels.so");
    std::fs::write(&source, unit).map_err(|error| CudaError::HostCompiler(error.to_string()))?;
    let compiler = std::env::var("CXX").unwrap_or_else(|_| "c++".to_owned());
    let output = Command::new(&compiler)
        .args(["-std=c++17", "-O1", "-shared", "-fPIC", "-w", "-o"])
        .arg(&library_path)
        .arg(&source)
        .output()
        .map_err(|error| CudaError::HostCompiler(format!("`{compiler}`: {error}")))?;
    if !output.status.success() {
        return Err(CudaError::HostCompiler(
            String::from_utf8_lossy(&output.stderr).into_owned(),
        ));
    }
    // SAFETY: the library was just built from the shim and generated kernels; loading it runs
    // no initialisers beyond the C++ runtime's for its thread-local variables.
    let library = unsafe { Library::new(&library_path) }
        .map_err(|error| CudaError::HostCompiler(error.to_string()))?;
    let _ = std::fs::remove_dir_all(&dir);
    Ok((library, all))
}

impl Simulator {
    /// Runs one proven step with the module of `text`, compiling it first if needed. The
    /// step's operands are this simulator's tensors; its target too, or it is a host scalar (a
    /// statement's scalar result), which the simulator, running on the host, writes in place.
    pub(crate) fn run_step<T: Element, const L: usize, const N: usize>(
        &self,
        text: &str,
        step: Step<'_, T, L, N>,
        scalars: &[T],
        counters: &Counters,
    ) -> Result<(), CudaError> {
        // A host scalar target is written in place: the simulator runs on the host.
        launch::host_scalar_target(&step, self.memory)?;
        let module = self.module(text, counters)?;
        let (launch, narrow) = plan(&step, module.entries.contains_key(launch::TILES));
        let mut partial: Vec<T> = Vec::new();
        if let Launch::Scalar { grid } = launch {
            partial = vec![T::ZERO; grid as usize];
        }
        let args = Args::new(&step, scalars)
            .with_partials(Some(partial.as_mut_ptr() as u64), partial.len())
            .bytes();
        for pass in launch.passes(narrow) {
            counters.launched();
            // SAFETY: `step` proved every offset its loops reach inside the buffers of its
            // target and operands, and holds their borrows for the launch; the kernels address
            // exactly those offsets (and `partial`, which has one element per block of the
            // first pass). Non-injective targets run on one thread, so no two threads write
            // one element.
            unsafe { module.launch(&pass.entry, &args, pass.grid, pass.block, pass.barriers) }?;
        }
        Ok(())
    }
}

//! Kernel text → a cubin for one GPU architecture, with NVRTC (in-process, no GPU needed) and
//! the register and spill figures ptxas reports. Invariant: NVRTC is only called after
//! [`available`] found the library, so a missing NVRTC is an error, never a panic.

use std::ffi::{c_char, CString};
use std::sync::OnceLock;

use cudarc::nvrtc::{result, sys};

use super::error::CudaError;

/// A compiled module.
pub struct Cubin {
    /// The cubin's bytes, as the driver loads them.
    pub image: Vec<u8>,
    /// NVRTC's log, including ptxas's `-v` report.
    pub log: String,
    /// Per entry point: registers used, and spill bytes (stores + loads).
    pub entries: Vec<EntryUsage>,
}

/// What ptxas reports for one function.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EntryUsage {
    /// The entry point's (mangled) name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Bytes spilled to local memory, stores plus loads.
    pub spill_bytes: u64,
}

/// Whether `libnvrtc` can be loaded (probed once per process).
pub fn available() -> bool {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: `is_culib_present` only tries to open the library by its candidate names and
    // drops what it opened; it runs no code of the library beyond its initialisers.
    *PRESENT.get_or_init(|| unsafe { sys::is_culib_present() })
}

/// Compiles `text` for `arch` (such as `sm_90`) to a cubin.
pub fn compile(text: &str, arch: &str) -> Result<Cubin, CudaError> {
    if !available() {
        return Err(CudaError::NoNvrtc);
    }
    let source = CString::new(text).map_err(|_| CudaError::Compile {
        log: "kernel text holds a NUL byte".to_owned(),
    })?;
    let program = result::create_program(&source, None).map_err(nvrtc_error)?;
    let options = [
        format!("--gpu-architecture={arch}"),
        "--ptxas-options=-v".to_owned(),
        "--std=c++17".to_owned(),
    ];
    // SAFETY: `program` was just created and is destroyed only at the end of this function;
    // `source` outlives it.
    let compiled = unsafe { result::compile_program(program, &options) };
    // SAFETY: as above.
    let log = unsafe { result::get_program_log(program) }
        .map(|raw| text_of(&raw))
        .unwrap_or_default();
    let image = compiled.and_then(|()| {
        let mut size = 0usize;
        // SAFETY: `program` compiled; the size query writes one `usize`.
        unsafe { sys::nvrtcGetCUBINSize(program, &mut size) }.result()?;
        let mut image = vec![0u8; size];
        // SAFETY: `image` holds exactly the `size` bytes NVRTC reported for the cubin.
        unsafe { sys::nvrtcGetCUBIN(program, image.as_mut_ptr().cast::<c_char>()) }.result()?;
        Ok(image)
    });
    // SAFETY: created above, not destroyed before.
    let _ = unsafe { result::destroy_program(program) };
    match image {
        Ok(image) => Ok(Cubin {
            entries: usage(&log),
            image,
            log,
        }),
        Err(_) => Err(CudaError::Compile { log }),
    }
}

fn nvrtc_error(error: result::NvrtcError) -> CudaError {
    CudaError::Compile {
        log: format!("{error:?}"),
    }
}

fn text_of(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .take_while(|&&c| c != 0)
        .map(|&c| c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Reads ptxas's `-v` report: `Function properties for NAME`, then `N bytes spill stores,
/// M bytes spill loads`, then `Used R registers`.
pub fn usage(log: &str) -> Vec<EntryUsage> {
    let mut entries: Vec<EntryUsage> = Vec::new();
    for line in log.lines() {
        if let Some(name) = line.split("Function properties for ").nth(1) {
            entries.push(EntryUsage {
                name: name.trim().to_owned(),
                ..EntryUsage::default()
            });
        } else if let Some(entry) = entries.last_mut() {
            let words: Vec<&str> = line.split_whitespace().collect();
            for (k, word) in words.iter().enumerate() {
                let number = || {
                    k.checked_sub(2)
                        .and_then(|at| words[at].parse::<u64>().ok())
                };
                if word.starts_with("spill") && k >= 2 {
                    entry.spill_bytes += number().unwrap_or(0);
                }
                if *word == "registers," || *word == "registers" {
                    if let Some(count) = k.checked_sub(1).and_then(|at| words[at].parse().ok()) {
                        entry.registers = count;
                    }
                }
            }
        }
    }
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_registers_and_spills_from_the_ptxas_report() {
        let log = "ptxas info    : Compiling entry function 'tdsl_map_i32' for 'sm_90'\n\
                   ptxas info    : Function properties for tdsl_map_i32\n    \
                   8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads\n\
                   ptxas info    : Used 30 registers, used 0 barriers, 528 bytes cmem[0]\n\
                   ptxas info    : Function properties for tdsl_map_i64\n    \
                   0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n\
                   ptxas info    : Used 40 registers, used 1 barriers\n";
        assert_eq!(
            usage(log),
            [
                EntryUsage {
                    name: "tdsl_map_i32".into(),
                    registers: 30,
                    spill_bytes: 16
                },
                EntryUsage {
                    name: "tdsl_map_i64".into(),
                    registers: 40,
                    spill_bytes: 0
                },
            ]
        );
    }
}

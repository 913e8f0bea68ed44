//! A copy step (one operand read as it is into a temporary of another layout, the TTGT copies
//! before a cuBLAS call) → the text of a module in the `tdsl_args` layout of a step of its
//! shape, moving each element's bits. Invariant: the module reads the operand and writes the
//! target only at `Σ index · stride` over the step's target loops, which are the offsets the
//! step proved; it is launched only for steps whose other loops have extent 1.

use crate::element::Element;

/// The module for a copy step of element type `T` over `loops` loops, the first
/// `target_loops` of them the target's.
///
/// The element type is a struct of its parts' bits: a copy computes nothing, so one text per
/// size serves every type of that size, and the arguments' layout (pointers, then 64-bit
/// integers, then α, β and a scalar slot in the element's parts) is the generated modules'.
pub(crate) fn module<T: Element>(loops: usize, target_loops: usize) -> String {
    let part = std::mem::size_of::<T::Part>();
    let word = if part == 8 {
        "unsigned long long"
    } else {
        "unsigned int"
    };
    let parts = std::mem::size_of::<T>() / part;
    let loops = loops.max(1);
    format!(
        "// tensor-dsl copy: target[{target_loops} loops] = operand, as bits\n\
         #ifndef TDSL_ENTRY\n#define TDSL_ENTRY extern \"C\" __global__\n#endif\n\
         struct real {{ {word} bits[{parts}]; }};\n\
         struct tdsl_args {{\n    real* target;\n    const real* operand[1];\n    real* partial;\n    \
         long long extent[{loops}];\n    long long target_stride[{loops}];\n    \
         long long operand_stride[1][{loops}];\n    long long partials;\n    real alpha;\n    \
         real beta;\n    real scalar[1];\n}};\n\
         template <typename I>\n__device__ __forceinline__ void tdsl_copy(const tdsl_args& a) {{\n    \
         I outputs = 1;\n    \
         for (int d = 0; d < {target_loops}; ++d) outputs *= (I)a.extent[d];\n    \
         for (I o = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x; o < outputs; \
         o += (I)gridDim.x * (I)blockDim.x) {{\n        \
         I rest = o;\n        I t = 0;\n        I at = 0;\n        \
         for (int d = {target_loops} - 1; d >= 0; --d) {{\n            \
         const I i = rest % (I)a.extent[d];\n            rest /= (I)a.extent[d];\n            \
         t += i * (I)a.target_stride[d];\n            at += i * (I)a.operand_stride[0][d];\n        \
         }}\n        a.target[t] = a.operand[0][at];\n    }}\n}}\n\
         TDSL_ENTRY void tdsl_map_i32(const tdsl_args a) {{ tdsl_copy<int>(a); }}\n\
         TDSL_ENTRY void tdsl_map_i64(const tdsl_args a) {{ tdsl_copy<long long>(a); }}\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::nvrtc;
    use crate::element::{c32, c64};

    /// Every size's module compiles with NVRTC to an `sm_90` cubin with its two entries and
    /// no spills (`REQUIRE_NVRTC=1`, as in CI, makes a missing NVRTC a failure); a copy's
    /// result is checked end to end on the simulator (`tests/test_cuda_simulator.rs`).
    #[test]
    fn each_size_compiles_without_spills() {
        if !nvrtc::available() {
            assert!(
                std::env::var("REQUIRE_NVRTC").as_deref() != Ok("1"),
                "REQUIRE_NVRTC=1 but libnvrtc.so.13 is not on the loader path"
            );
            return;
        }
        let texts = [
            module::<f32>(4, 3),
            module::<f64>(4, 3),
            module::<c32>(6, 2),
            module::<c64>(1, 1),
            module::<i32>(3, 0),
        ];
        for text in texts {
            let cubin = nvrtc::compile(&text, "sm_90").unwrap_or_else(|e| panic!("{e}\n{text}"));
            assert_eq!(cubin.entries.len(), 2, "{}", cubin.log);
            assert!(cubin.entries.iter().all(|entry| entry.spill_bytes == 0));
        }
    }

    #[test]
    fn one_text_per_element_size() {
        assert_eq!(module::<f32>(4, 3), module::<i32>(4, 3));
        assert!(module::<c64>(2, 2).contains("unsigned long long bits[2]"));
        assert!(module::<c32>(2, 2).contains("unsigned int bits[2]"));
        assert!(module::<f32>(5, 2).contains("long long extent[5]"));
    }
}

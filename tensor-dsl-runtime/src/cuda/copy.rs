//! A copy step (one operand read as it is into a temporary of another layout, the TTGT copies
//! before a cuBLAS call) → the text of a module in the `tdsl_args` layout of a step of its
//! shape, moving each element's bits. Invariant: the module reads the operand and writes the
//! target only at `Σ index · stride` over the step's target loops, which are the offsets the
//! step proved; it is launched only for steps whose other loops have extent 1.

use crate::element::Element;

use super::launch::BLOCK;

/// The module for a copy step of element type `T` over `loops` loops, the first
/// `target_loops` of them the target's.
///
/// The element type is a struct of its parts' bits: a copy computes nothing, so one text per
/// size serves every type of that size, and the arguments' layout (pointers, then 64-bit
/// integers, then α, β and a scalar slot in the element's parts) is the generated modules'.
///
/// Two entries. `tdsl_map` is grid-stride over the target's elements, four a thread (their
/// reads first) and then one at a time. `tdsl_tiles` (what a launch picks,
/// [`super::launch::Launch::Tiles`]) moves 32 × 32 tiles through shared memory: a warp reads
/// 32 consecutive points of the loop along which the operand steps least, and writes 32 of the
/// loop along which the target steps by one, so both sides are coalesced where a thread per
/// element would read 32 elements 32 cache lines apart. Where those are one loop (or there is
/// none), it runs `tdsl_map`'s loop instead.
pub(crate) fn module<T: Element>(loops: usize, target_loops: usize) -> String {
    let part = std::mem::size_of::<T::Part>();
    let word = if part == 8 {
        "unsigned long long"
    } else {
        "unsigned int"
    };
    let parts = (std::mem::size_of::<T>() / part).to_string();
    TEXT.replace("WORD", word)
        .replace("PARTS", &parts)
        .replace("LOOPS", &loops.max(1).to_string())
        .replace("TARGET", &target_loops.to_string())
        .replace("ROWS", &(BLOCK / 32).to_string())
}

/// The module's text: `WORD`, `PARTS`, `LOOPS`, `TARGET` and `ROWS` are replaced by the
/// element's part type and count, the step's loops, the target's loops and the warps of a
/// block (every tiles launch has [`BLOCK`] threads).
const TEXT: &str = r#"// tensor-dsl copy: target[TARGET loops] = operand, as bits
#ifndef TDSL_ENTRY
#define TDSL_ENTRY extern "C" __global__
#endif
struct real { WORD bits[PARTS]; };
struct tdsl_args {
    real* target;
    const real* operand[1];
    real* partial;
    long long extent[LOOPS];
    long long target_stride[LOOPS];
    long long operand_stride[1][LOOPS];
    long long partials;
    real alpha;
    real beta;
    real scalar[1];
};
template <typename I>
__device__ __forceinline__ real tdsl_read(const tdsl_args& a, I o, I& t) {
    I rest = o;
    I at = 0;
    t = 0;
    for (int d = TARGET - 1; d >= 0; --d) {
        const I i = rest % (I)a.extent[d];
        rest /= (I)a.extent[d];
        t += i * (I)a.target_stride[d];
        at += i * (I)a.operand_stride[0][d];
    }
    return a.operand[0][at];
}
template <typename I>
__device__ __forceinline__ void tdsl_copy(const tdsl_args& a) {
    I outputs = 1;
    for (int d = 0; d < TARGET; ++d) outputs *= (I)a.extent[d];
    const I step = (I)gridDim.x * (I)blockDim.x;
    I o = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;
    // Four elements a thread, read before any is written, so the reads are in flight
    // together. The points are independent (threads already run them in any order), except
    // in a launch of one thread, whose target repeats elements: that one goes point by point.
    for (; step > 1 && o + 3 * step < outputs; o += 4 * step) {
        I t0, t1, t2, t3;
        const real v0 = tdsl_read<I>(a, o, t0);
        const real v1 = tdsl_read<I>(a, o + step, t1);
        const real v2 = tdsl_read<I>(a, o + 2 * step, t2);
        const real v3 = tdsl_read<I>(a, o + 3 * step, t3);
        a.target[t0] = v0;
        a.target[t1] = v1;
        a.target[t2] = v2;
        a.target[t3] = v3;
    }
    for (; o < outputs; o += step) {
        I t;
        const real v = tdsl_read<I>(a, o, t);
        a.target[t] = v;
    }
}
__device__ __forceinline__ long long tdsl_magnitude(long long x) { return x < 0 ? -x : x; }
template <typename I>
__device__ __forceinline__ void tdsl_tile(const tdsl_args& a) {
    __shared__ real tile[32][33];
    // p: the target's unit-stride loop; q: the loop along which the operand steps least.
    int p = -1;
    int q = -1;
    for (int d = 0; d < TARGET; ++d) {
        if (a.extent[d] > 1 && a.target_stride[d] == 1) p = d;
        if (a.extent[d] > 1 && (q < 0 || tdsl_magnitude(a.operand_stride[0][d]) < tdsl_magnitude(a.operand_stride[0][q]))) q = d;
    }
    if (p < 0 || q < 0 || p == q) {
        tdsl_copy<I>(a);
        return;
    }
    const I ep = (I)a.extent[p];
    const I eq = (I)a.extent[q];
    const I tp = (ep + 31) / 32;
    const I tq = (eq + 31) / 32;
    I tiles = tp * tq;
    for (int d = 0; d < TARGET; ++d) {
        if (d != p && d != q) tiles *= (I)a.extent[d];
    }
    const int lane = (int)(threadIdx.x % 32);
    for (I at_tile = (I)blockIdx.x; at_tile < tiles; at_tile += (I)gridDim.x) {
        I rest = at_tile;
        const I p0 = rest % tp * 32;
        rest /= tp;
        const I q0 = rest % tq * 32;
        rest /= tq;
        I t = 0;
        I at = 0;
        for (int d = TARGET - 1; d >= 0; --d) {
            if (d == p || d == q) continue;
            const I i = rest % (I)a.extent[d];
            rest /= (I)a.extent[d];
            t += i * (I)a.target_stride[d];
            at += i * (I)a.operand_stride[0][d];
        }
        // A constant count of rows a warp (the launch's warps are a constant), unrolled, so
        // a thread's reads are all in flight at once: one at a time, the copy of the seed's
        // `b` ran at a fifth of a device copy's bandwidth on an H200.
#pragma unroll
        for (int k = 0; k < 32 / ROWS; ++k) {
            const int r = (int)(threadIdx.x / 32) + k * ROWS;
            const I ip = p0 + r;
            const I iq = q0 + lane;
            if (ip < ep && iq < eq) tile[r][lane] = a.operand[0][at + ip * (I)a.operand_stride[0][p] + iq * (I)a.operand_stride[0][q]];
        }
        __syncthreads();
#pragma unroll
        for (int k = 0; k < 32 / ROWS; ++k) {
            const int r = (int)(threadIdx.x / 32) + k * ROWS;
            const I ip = p0 + lane;
            const I iq = q0 + r;
            if (ip < ep && iq < eq) a.target[t + ip * (I)a.target_stride[p] + iq * (I)a.target_stride[q]] = tile[lane][r];
        }
        __syncthreads();
    }
}
TDSL_ENTRY void tdsl_map_i32(const tdsl_args a) { tdsl_copy<int>(a); }
TDSL_ENTRY void tdsl_map_i64(const tdsl_args a) { tdsl_copy<long long>(a); }
TDSL_ENTRY void tdsl_tiles_i32(const tdsl_args a) { tdsl_tile<int>(a); }
TDSL_ENTRY void tdsl_tiles_i64(const tdsl_args a) { tdsl_tile<long long>(a); }
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::nvrtc;
    use crate::element::{c32, c64};

    /// Every size's module compiles with NVRTC to an `sm_90` cubin with its four entries and
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
            assert_eq!(cubin.entries.len(), 4, "{}", cubin.log);
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

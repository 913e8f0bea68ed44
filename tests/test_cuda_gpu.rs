//! `tensor!` on a real GPU: results equal the host's, β = 0 overwrites NaN, mixing devices is
//! an error, modules compile once; and the speed of GEMMs, contractions and fused element-wise
//! kernels against cuBLAS and a device copy, printed for the README (measured, not asserted).
//! Each test needs a CUDA GPU (and NVRTC 13 and cuBLAS on the loader path) and asserts one is
//! there:
//!
//!     cargo test --release --features cuda --test test_cuda_gpu -- --ignored --nocapture
//!
//! The whole acceptance corpus runs on GPU 0 with
//! `TDSL_CUDA_DEVICE=0 cargo test --features cuda --test test_acceptance_cuda`.
#![cfg(feature = "cuda")]

mod common;

use std::time::Instant;

use common::data;
use tensor_dsl::cuda::{CudaDevice, CudaTensor};
use tensor_dsl::{tensor, Tensor};

fn gpu() -> CudaDevice {
    CudaDevice::new(0).expect("these tests need a CUDA GPU")
}

/// A device result equals the host's (shared tolerance rule of `common::assert_close`).
fn assert_close(host: &Tensor<f64>, device: &CudaTensor<f64>) {
    common::assert_close(&device.to_host().unwrap(), host, 1e-11);
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn statements_equal_the_host() {
    let device = gpu();
    for (m, k, n) in [
        (1, 1, 1),
        (7, 13, 5),
        (300, 70, 129),
        (0, 4, 3),
        (64, 64, 64),
    ] {
        let a = data::<f64>(&[m, k], 1);
        let b = data::<f64>(&[k, n], 2);
        let x = data::<f64>(&[3, m, k], 3);
        let mut c = data::<f64>(&[m, n], 4);
        let (da, db, dx) = (
            CudaTensor::from_host(&device, &a).unwrap(),
            CudaTensor::from_host(&device, &b).unwrap(),
            CudaTensor::from_host(&device, &x).unwrap(),
        );
        let mut dc = CudaTensor::from_host(&device, &c).unwrap();
        let w = 0.5;
        tensor! {
            c[i, j] = {w} * c[i, j] + 2 * a[i, p] * b[p, j];
            let t[j, i] = exp(a[i, p] / 4) * b[p, j];
            let y[q, i, j] = x[q, i, p] * b[p, j];
            let s = c[i, j] * c[i, j] + y[q, i, j];
        }
        tensor! {
            dc[i, j] = {w} * dc[i, j] + 2 * da[i, p] * db[p, j];
            let dt[j, i] = exp(da[i, p] / 4) * db[p, j];
            let dy[q, i, j] = dx[q, i, p] * db[p, j];
            let ds = dc[i, j] * dc[i, j] + dy[q, i, j];
        }
        assert_close(&c, &dc);
        assert_close(&t, &dt);
        assert_close(&y, &dy);
        assert!((s - ds).abs() <= 1e-9 * s.abs().max(1.0), "{s} vs {ds}");
    }
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn beta_zero_overwrites_nan() {
    let device = gpu();
    let a = CudaTensor::from_host(&device, &data::<f64>(&[40, 30], 1)).unwrap();
    let b = CudaTensor::from_host(&device, &data::<f64>(&[30, 20], 2)).unwrap();
    let nan = Tensor::from_fn([40, 20], |_| f64::NAN);
    let mut c = CudaTensor::from_host(&device, &nan).unwrap();
    let mut d = CudaTensor::from_host(&device, &nan).unwrap();
    let beta = 0.0;
    tensor! {
        c[i, j] = beta * c[i, j] + a[i, k] * b[k, j];
        d[i, j] = beta * d[i, j] + abs(a[i, k]) * b[k, j];
    }
    assert!(c
        .to_host()
        .unwrap()
        .as_slice()
        .iter()
        .all(|x| x.is_finite()));
    assert!(d
        .to_host()
        .unwrap()
        .as_slice()
        .iter()
        .all(|x| x.is_finite()));
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn tensors_of_another_device_are_an_error() {
    let device = gpu();
    let simulator = CudaDevice::simulator();
    let a = CudaTensor::from_host(&device, &data::<f64>(&[4, 3], 1)).unwrap();
    let b = CudaTensor::from_host(&simulator, &data::<f64>(&[3, 2], 2)).unwrap();
    let outcome = std::panic::catch_unwind(|| {
        tensor! { let c[i, j] = a[i, k] * b[k, j]; }
        c
    });
    let message = outcome.unwrap_err();
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| message.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(message.contains("device"), "{message}");
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn a_second_run_compiles_nothing() {
    let device = gpu();
    let a = CudaTensor::from_host(&device, &data::<f64>(&[9, 5], 1)).unwrap();
    let mut compiled = Vec::new();
    for _ in 0..2 {
        tensor! { let b[i] = tanh(a[i, k]) * a[i, k]; }
        b.to_host().unwrap();
        compiled.push(device.stats().modules_compiled);
    }
    assert!(compiled[0] > 0);
    assert_eq!(compiled[0], compiled[1]);
}

/// The best of five runs, in seconds, after one warm-up.
fn best_time(device: &CudaDevice, mut run: impl FnMut()) -> f64 {
    run();
    device.synchronize().unwrap();
    (0..5)
        .map(|_| {
            let start = Instant::now();
            run();
            device.synchronize().unwrap();
            start.elapsed().as_secs_f64()
        })
        .fold(f64::INFINITY, f64::min)
}

#[test]
#[ignore = "needs a CUDA GPU"]
fn gemm_and_element_wise_speed_against_cublas_and_a_copy() {
    let device = gpu();
    let n = 4096;
    let a = CudaTensor::<f32>::zeros(&device, [n, n]).unwrap();
    let b = CudaTensor::<f32>::zeros(&device, [n, n]).unwrap();
    let mut c = CudaTensor::<f32>::zeros(&device, [n, n]).unwrap();
    let ours = best_time(&device, || tensor! { c[i, j] = a[i, k] * b[k, j]; });
    let direct = best_time(&device, || device.direct_gemm(&a, &b, &mut c).unwrap());
    let flops = 2.0 * (n as f64).powi(3);
    println!(
        "f32 GEMM {n}³: tensor! {:.1} TFLOP/s, direct cuBLAS {:.1} TFLOP/s ({:.0} %)",
        flops / ours / 1e12,
        flops / direct / 1e12,
        100.0 * direct / ours
    );

    // The README's figure is 2²⁶; the other lengths show what a launch's fixed cost takes, and
    // `2 * x[i]` (a copy's bytes through a generated kernel) what the kernel's reads take.
    for len in [1 << 24, 1 << 26, 1 << 28] {
        let x = CudaTensor::<f32>::zeros(&device, [len]).unwrap();
        let y = CudaTensor::<f32>::zeros(&device, [len]).unwrap();
        let mut z = CudaTensor::<f32>::zeros(&device, [len]).unwrap();
        let fused = best_time(&device, || tensor! { z[i] = 2 * x[i] + exp(y[i]) * x[i]; });
        let scaled = best_time(&device, || tensor! { z[i] = 2 * x[i]; });
        // The copy writes into existing memory, as the statement does: no allocation timed.
        let copy = best_time(&device, || device.direct_copy(&x, &mut z).unwrap());
        // Bytes moved: the fused kernel reads two arrays and writes one; a copy reads and
        // writes one.
        let rate = |arrays: f64, seconds: f64| arrays * 4.0 * len as f64 / seconds / 1e9;
        let (fused_rate, scaled_rate, copy_rate) =
            (rate(3.0, fused), rate(2.0, scaled), rate(2.0, copy));
        println!(
            "fused element-wise 2^{}: {fused_rate:.0} GB/s, device copy {copy_rate:.0} GB/s ({:.0} %); `2 * x[i]` {scaled_rate:.0} GB/s ({:.0} %)",
            len.trailing_zeros(),
            100.0 * fused_rate / copy_rate,
            100.0 * scaled_rate / copy_rate
        );
    }
}

/// Integer tensors on a GPU: the same bits as the host, overflow wrapping as there.
#[test]
#[ignore = "needs a CUDA GPU"]
fn integer_statements_equal_the_host_bit_for_bit() {
    let device = gpu();
    let wide = |shape: &[usize], seed: i64| {
        let mut state = seed;
        Tensor::from_fn(shape, |_| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            state >> 3
        })
    };
    let (a, b) = (wide(&[300, 257], 1), wide(&[257, 129], 2));
    let (da, db) = (
        CudaTensor::from_host(&device, &a).unwrap(),
        CudaTensor::from_host(&device, &b).unwrap(),
    );
    tensor! { let c[i, j] = a[i, k] * b[k, j] - abs(a[i, k]); let s = c[i, j] * 3; }
    tensor! { let dc[i, j] = da[i, k] * db[k, j] - abs(da[i, k]); let ds = dc[i, j] * 3; }
    assert_eq!(dc.to_host().unwrap(), c);
    assert_eq!(ds, s);
}

/// Complex tensors on a GPU: the host's results within a few ulps, `conj` in contractions.
#[test]
#[ignore = "needs a CUDA GPU"]
fn complex_statements_equal_the_host() {
    use tensor_dsl::c64;
    let device = gpu();
    let complex = |shape: &[usize], seed: usize| {
        let (re, im) = (data::<f64>(shape, seed), data::<f64>(shape, seed + 40));
        let mut parts = re.iter().zip(im.iter());
        Tensor::from_fn(shape, |_| {
            let (&re, &im) = parts.next().expect("one part per element");
            c64::new(re, im)
        })
    };
    let (a, b) = (complex(&[300, 257], 1), complex(&[257, 129], 2));
    let (da, db) = (
        CudaTensor::from_host(&device, &a).unwrap(),
        CudaTensor::from_host(&device, &b).unwrap(),
    );
    tensor! { let c[i, j] = conj(a[i, k]) * b[k, j]; let e[i, j] = exp(c[i, j] / 64) * sqrt(c[i, j]); }
    tensor! { let dc[i, j] = conj(da[i, k]) * db[k, j]; let de[i, j] = exp(dc[i, j] / 64) * sqrt(dc[i, j]); }
    // The adjoint: `Zgemm` with `op = C` on A.
    let calls = device.stats().gemm_calls;
    tensor! { let g[i, j] = conj(a[k, i]) * a[k, j]; }
    tensor! { let dg[i, j] = conj(da[k, i]) * da[k, j]; }
    assert_eq!(device.stats().gemm_calls, calls + 1);
    for (host, device) in [(c, dc), (e, de), (g, dg)] {
        let device = device.to_host().unwrap();
        let scale = host.iter().map(|x| x.norm()).fold(1.0, f64::max);
        for (x, y) in host.iter().zip(device.iter()) {
            assert!(
                (x - y).norm() <= 1e-11 * scale,
                "{x} (host) against {y} (GPU)"
            );
        }
    }
}

/// Complex and batched GEMMs and the seed contraction against one direct cuBLAS call of the
/// same FLOPs: figures for the README, printed (speed is reported, not asserted here).
#[test]
#[ignore = "needs a CUDA GPU"]
fn complex_and_contraction_speed_against_cublas() {
    use tensor_dsl::c32;
    let device = gpu();
    let n = 4096;
    let a = CudaTensor::<c32>::zeros(&device, [n, n]).unwrap();
    let b = CudaTensor::<c32>::zeros(&device, [n, n]).unwrap();
    let mut c = CudaTensor::<c32>::zeros(&device, [n, n]).unwrap();
    let direct = best_time(&device, || device.direct_gemm(&a, &b, &mut c).unwrap());
    let plain = best_time(&device, || tensor! { c[i, j] = a[i, k] * b[k, j]; });
    let calls = device.stats().gemm_calls;
    let adjoint = best_time(&device, || tensor! { c[i, j] = conj(a[k, i]) * b[k, j]; });
    // One warm-up and five timed runs, each one cuBLAS call (`op = C`, no module).
    assert_eq!(device.stats().gemm_calls, calls + 6);
    let flops = 8.0 * (n as f64).powi(3);
    println!(
        "c32 GEMM {n}³: direct cuBLAS {:.1} TFLOP/s; tensor! {:.1} TFLOP/s ({:.0} %), with conj {:.1} TFLOP/s ({:.0} %)",
        flops / direct / 1e12,
        flops / plain / 1e12,
        100.0 * direct / plain,
        flops / adjoint / 1e12,
        100.0 * direct / adjoint
    );

    // The seed contraction, c[i, j] = a[i, k, l] · b[k, j, l], against an f32 GEMM of the
    // same FLOPs (m = n = 2048, depth 2048 = 64 · 32).
    let (m, k, l) = (2048, 64, 32);
    let x = CudaTensor::<f32>::zeros(&device, [m, k, l]).unwrap();
    let y = CudaTensor::<f32>::zeros(&device, [k, m, l]).unwrap();
    let mut z = CudaTensor::<f32>::zeros(&device, [m, m]).unwrap();
    let seed = best_time(&device, || tensor! { z[i, j] = x[i, k, l] * y[k, j, l]; });
    let p = CudaTensor::<f32>::zeros(&device, [m, k * l]).unwrap();
    let q = CudaTensor::<f32>::zeros(&device, [k * l, m]).unwrap();
    let gemm = best_time(&device, || device.direct_gemm(&p, &q, &mut z).unwrap());
    let flops = 2.0 * (m * m * k * l) as f64;
    println!(
        "seed a[i,k,l]·b[k,j,l] f32 ({m}, {k}, {l}): tensor! {:.1} TFLOP/s, same-FLOP cuBLAS GEMM {:.1} TFLOP/s ({:.0} %)",
        flops / seed / 1e12,
        flops / gemm / 1e12,
        100.0 * gemm / seed
    );
    // Where the rest goes: `b` permuted into the layout the calls read (k, l, j) by a
    // statement (a generated kernel, not the contraction's copy module), and the GEMM on
    // that layout.
    let mut packed = CudaTensor::<f32>::zeros(&device, [k, l, m]).unwrap();
    let copy = best_time(&device, || tensor! { packed[k, l, j] = y[k, j, l]; });
    let x2 = CudaTensor::<f32>::zeros(&device, [m, k * l]).unwrap();
    let packed2 = CudaTensor::<f32>::zeros(&device, [k * l, m]).unwrap();
    let packed_gemm = best_time(&device, || tensor! { z[i, j] = x2[i, p] * packed2[p, j]; });
    println!(
        "seed's parts: b permuted by a statement {:.1} µs ({:.0} GB/s), the GEMM on that layout {:.1} µs, the statement {:.1} µs, the direct GEMM {:.1} µs",
        copy * 1e6,
        2.0 * 4.0 * (k * l * m) as f64 / copy / 1e9,
        packed_gemm * 1e6,
        seed * 1e6,
        gemm * 1e6
    );

    // Batched: 256 products of 256³ f32.
    let (batch, s) = (256, 256);
    let u = CudaTensor::<f32>::zeros(&device, [batch, s, s]).unwrap();
    let v = CudaTensor::<f32>::zeros(&device, [batch, s, s]).unwrap();
    let mut w = CudaTensor::<f32>::zeros(&device, [batch, s, s]).unwrap();
    let batched = best_time(
        &device,
        || tensor! { w[p, i, j] = u[p, i, k] * v[p, k, j]; },
    );
    let flops = 2.0 * (batch * s * s * s) as f64;
    println!(
        "batched {batch} × {s}³ f32: tensor! {:.1} TFLOP/s",
        flops / batched / 1e12
    );
}

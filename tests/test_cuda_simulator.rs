//! `tensor!` on `CudaTensor`s of the simulator: the same blocks as on the host, run as the
//! generated CUDA modules compiled by the host C++ compiler.
#![cfg(feature = "cuda")]

mod common;

use common::data;
use tensor_dsl::cuda::{CudaDevice, CudaTensor};
use tensor_dsl::{tensor, Tensor};

#[test]
fn matmul_and_sum_match_the_host() {
    let device = CudaDevice::simulator();
    let a = data::<f64>(&[7, 13], 1);
    let b = data::<f64>(&[13, 5], 2);
    let da = CudaTensor::from_host(&device, &a).unwrap();
    let db = CudaTensor::from_host(&device, &b).unwrap();
    tensor! { let c[i, j] = a[i, k] * b[k, j]; let s = 2 * c[i, j] * c[i, j]; }
    tensor! { let dc[i, j] = da[i, k] * db[k, j]; let ds = 2 * dc[i, j] * dc[i, j]; }
    let dc = dc.to_host().unwrap();
    for (x, y) in c.as_slice().iter().zip(dc.as_slice()) {
        assert!((x - y).abs() < 1e-12, "{x} vs {y}");
    }
    assert!((s - ds).abs() < 1e-10, "{s} vs {ds}");
}

/// A device result equals the host's (shared tolerance rule of `common::assert_close`).
fn assert_close(host: &Tensor<f64>, device: &CudaTensor<f64>) {
    common::assert_close(&device.to_host().unwrap(), host, 1e-12);
}

#[test]
fn ragged_shapes_past_the_block_size_scalars_positions_and_updates() {
    let device = CudaDevice::simulator();
    let w = 0.75;
    // 300 × 70: rows of 70 summed points (a block per element), outputs past one block.
    for (m, k) in [(300, 70), (1, 1), (7, 13), (0, 5), (5, 0), (513, 3)] {
        let a = data::<f64>(&[m, k, 2], 3);
        let b = data::<f64>(&[k], 4);
        let mut c = data::<f64>(&[m], 5);
        let da = CudaTensor::from_host(&device, &a).unwrap();
        let db = CudaTensor::from_host(&device, &b).unwrap();
        let mut dc = CudaTensor::from_host(&device, &c).unwrap();
        tensor! {
            c[i] += {w} * a[i, k, 1] * b[k] - exp(c[i]) / 3;
            let r[i] = tanh(a[i, k, 0]) * b[k];
            let s = r[i] * c[i] + {w};
        }
        tensor! {
            dc[i] += {w} * da[i, k, 1] * db[k] - exp(dc[i]) / 3;
            let dr[i] = tanh(da[i, k, 0]) * db[k];
            let ds = dr[i] * dc[i] + {w};
        }
        assert_close(&c, &dc);
        assert_close(&r, &dr);
        assert!(
            (s - ds).abs() <= 1e-9 * s.abs().max(1.0),
            "{m}×{k}: {s} vs {ds}"
        );
    }
}

#[test]
fn f32_networks_and_gemm_updates() {
    let device = CudaDevice::simulator();
    let a = Tensor::<f32>::from_fn([9, 4], |ix| (ix[0] * 4 + ix[1]) as f32 * 0.25 - 3.0);
    let b = Tensor::<f32>::from_fn([4, 6], |ix| (ix[0] + 2 * ix[1]) as f32 * 0.5 - 1.0);
    let d = Tensor::<f32>::from_fn([6, 3], |ix| ix[0] as f32 - ix[1] as f32);
    let mut c = Tensor::<f32>::from_fn([9, 3], |ix| ix[0] as f32 * 0.1);
    let (da, db, dd) = (
        CudaTensor::from_host(&device, &a).unwrap(),
        CudaTensor::from_host(&device, &b).unwrap(),
        CudaTensor::from_host(&device, &d).unwrap(),
    );
    let mut dc = CudaTensor::from_host(&device, &c).unwrap();
    tensor! { c[i, l] = 0.5 * c[i, l] + 2 * a[i, k] * b[k, j] * d[j, l]; }
    tensor! { dc[i, l] = 0.5 * dc[i, l] + 2 * da[i, k] * db[k, j] * dd[j, l]; }
    let dc = dc.to_host().unwrap();
    for (x, y) in c.as_slice().iter().zip(dc.as_slice()) {
        assert!((x - y).abs() <= 1e-4 * x.abs().max(1.0), "{x} vs {y}");
    }
}

#[test]
fn no_driver_or_device_is_an_error_not_a_panic() {
    use tensor_dsl::cuda::{device_count, CudaError};
    match device_count() {
        Err(error) => {
            assert_eq!(error, CudaError::NoDriver);
            assert_eq!(CudaDevice::new(0).unwrap_err(), CudaError::NoDriver);
        }
        Ok(count) => {
            let error = CudaDevice::new(count).unwrap_err();
            assert_eq!(
                error,
                CudaError::NoDevice {
                    ordinal: count,
                    count
                }
            );
        }
    }
}

/// Contractions in every index order: each maps to cuBLAS calls (row-major C as Cᵀ = BᵀAᵀ,
/// transposed operands as `op = T`, a batch loop as one strided-batched call), which the
/// simulator runs by cuBLAS's column-major definition; the results equal the host's.
#[test]
fn contractions_run_as_cublas_calls_and_match_the_host() {
    let device = CudaDevice::simulator();
    let a = data::<f64>(&[7, 13], 1);
    let b = data::<f64>(&[13, 5], 2);
    let x = data::<f64>(&[3, 7, 13], 3);
    let y = data::<f64>(&[13, 3, 5], 4);
    let (da, db) = (
        CudaTensor::from_host(&device, &a).unwrap(),
        CudaTensor::from_host(&device, &b).unwrap(),
    );
    let (dx, dy) = (
        CudaTensor::from_host(&device, &x).unwrap(),
        CudaTensor::from_host(&device, &y).unwrap(),
    );
    let mut c = data::<f64>(&[5, 7], 5);
    let mut dc = CudaTensor::from_host(&device, &c).unwrap();
    let before = device.stats();
    tensor! {
        let p[i, j] = a[i, k] * b[k, j];
        let q[j, i] = a[i, k] * b[k, j];
        let r[j, n, i] = x[n, i, k] * y[k, n, j];
        c[j, i] = 0.5 * c[j, i] - 3 * b[k, j] * a[i, k];
    }
    tensor! {
        let dp[i, j] = da[i, k] * db[k, j];
        let dq[j, i] = da[i, k] * db[k, j];
        let dr[j, n, i] = dx[n, i, k] * dy[k, n, j];
        dc[j, i] = 0.5 * dc[j, i] - 3 * db[k, j] * da[i, k];
    }
    let after = device.stats();
    // `q` is `p` transposed (a copy after common-subexpression elimination); the other three
    // are one call each: `p` row-major (swapped), `r` batched over `n`, `c` column-major.
    assert_eq!(after.gemm_calls - before.gemm_calls, 3, "{after:?}");
    assert_close(&p, &dp);
    assert_close(&q, &dq);
    assert_close(&r, &dr);
    assert_close(&c, &dc);
}

/// Contractions whose contracted loops do not merge in one operand (the seed
/// `a[i, k, l] · b[k, j, l]`) copy that operand into a device temporary where they do, then make
/// one cuBLAS call instead of one per slice (TTGT); with β, from permuted and sliced views, over
/// odd extents, complex with `conj`, and, where a copy would not pay (too little reuse, an empty
/// axis), as before. Each result equals the host's.
#[test]
fn unmerged_contractions_copy_an_operand_then_make_one_call() {
    let device = CudaDevice::simulator();
    let to = |t: &Tensor<f64>| CudaTensor::from_host(&device, t).unwrap();
    let cases = [
        (70, 13, 5, 9),
        (70, 3, 40, 37),
        (129, 7, 3, 1),
        (65, 1, 7, 13),
    ];
    // `b[k, j, l]` sliced to n of n + 2 columns: stored so (the seed's layout, l steps by one,
    // so the copy moves tiles), or permuted from a tensor stored [l, k, j] (j steps by one in
    // both, so the copy is a thread per element).
    let layouts = |k, l, n| [([k, n + 2, l], 1, [0, 1, 2]), ([l, k, n + 2], 2, [1, 2, 0])];
    for ((m, k, l, n), (stored, axis, axes)) in cases
        .into_iter()
        .flat_map(|(m, k, l, n)| layouts(k, l, n).map(|layout| ((m, k, l, n), layout)))
    {
        let a = data::<f64>(&[m, k, l], 1);
        let stored = data::<f64>(&stored, 2);
        let b = stored
            .view()
            .slice_axis(axis, 1..n + 1)
            .permuted_axes(&axes);
        let mut c = data::<f64>(&[m, n], 3);
        let (da, db) = (
            to(&a),
            to(&stored).slice_axis(axis, 1..n + 1).permuted_axes(&axes),
        );
        let mut dc = to(&c);
        let before = device.stats();
        // Two blocks, so that the second product is not the first one's reuse.
        tensor! { let p[i, j] = a[i, q, r] * b[q, j, r]; }
        tensor! { c[i, j] = 0.5 * c[i, j] - 2 * a[i, q, r] * b[q, j, r]; }
        tensor! { let dp[i, j] = da[i, q, r] * db[q, j, r]; }
        tensor! { dc[i, j] = 0.5 * dc[i, j] - 2 * da[i, q, r] * db[q, j, r]; }
        let after = device.stats();
        // Per statement one call, not one per slice of the unmerged loop, after at most one
        // copy (a launch of the copy module; none where an extent of 1 merges the loops).
        let (calls, launches) = (
            after.gemm_calls - before.gemm_calls,
            after.kernel_launches - before.kernel_launches,
        );
        assert_eq!(calls, 2, "{m} {k} {l} {n}: {after:?}");
        assert!(launches <= 2, "{m} {k} {l} {n}: {after:?}");
        if k > 1 && n > 1 {
            assert_eq!(launches, 2);
        }
        assert_close(&p, &dp);
        assert_close(&c, &dc);
    }
    // Too little work per copied element (i of extent 3): a call per slice, no copy.
    let (a, b) = (data::<f64>(&[3, 4, 5], 4), data::<f64>(&[4, 6, 5], 5));
    let (da, db) = (to(&a), to(&b));
    let before = device.stats();
    tensor! { let p[i, j] = a[i, q, r] * b[q, j, r]; }
    tensor! { let dp[i, j] = da[i, q, r] * db[q, j, r]; }
    let after = device.stats();
    assert_eq!(after.kernel_launches, before.kernel_launches, "{after:?}");
    assert!(after.gemm_calls - before.gemm_calls > 1, "{after:?}");
    assert_close(&p, &dp);
    // An empty contracted axis: zeros, whatever runs.
    let (a, b) = (data::<f64>(&[80, 0, 5], 6), data::<f64>(&[0, 6, 5], 7));
    let (da, db) = (to(&a), to(&b));
    tensor! { let p[i, j] = a[i, q, r] * b[q, j, r]; }
    tensor! { let dp[i, j] = da[i, q, r] * db[q, j, r]; }
    assert_close(&p, &dp);
    assert!(p.iter().all(|&x| x == 0.0));

    // Complex, a conjugated operand copied as it is (its `conj` stays the call's or module's).
    let (x, y) = (complexes(&[70, 6, 4], 8), complexes(&[6, 11, 4], 9));
    let tc = |t: &Tensor<tensor_dsl::c64>| CudaTensor::from_host(&device, t).unwrap();
    let (dx, dy) = (tc(&x), tc(&y));
    tensor! { let w[i, j] = x[i, q, r] * conj(y[q, j, r]); let v[i, j] = conj(x[i, q, r]) * y[q, j, r]; }
    tensor! { let dw[i, j] = dx[i, q, r] * conj(dy[q, j, r]); let dv[i, j] = conj(dx[i, q, r]) * dy[q, j, r]; }
    assert_close_complex(&w, &dw.to_host().unwrap(), 1e-12);
    assert_close_complex(&v, &dv.to_host().unwrap(), 1e-12);

    // f32.
    let narrow = |t: &Tensor<f64>| t.mapv(|x| x as f32);
    let (a, b) = (data::<f64>(&[100, 8, 6], 10), data::<f64>(&[8, 17, 6], 11));
    let (a, b) = (narrow(&a), narrow(&b));
    let (da, db) = (
        CudaTensor::from_host(&device, &a).unwrap(),
        CudaTensor::from_host(&device, &b).unwrap(),
    );
    let before = device.stats();
    tensor! { let p[i, j] = a[i, q, r] * b[q, j, r]; }
    tensor! { let dp[i, j] = da[i, q, r] * db[q, j, r]; }
    assert_eq!(device.stats().gemm_calls - before.gemm_calls, 1);
    common::assert_close(&dp.to_host().unwrap(), &p.mapv(f64::from), 1e-5);
}

/// β = 0 does not read the target, on the device as on the host: NaN already there is gone.
#[test]
fn beta_zero_overwrites_nan_and_modules_compile_once() {
    let device = CudaDevice::simulator();
    let a = data::<f64>(&[6, 4], 1);
    let b = data::<f64>(&[4, 3], 2);
    let (da, db) = (
        CudaTensor::from_host(&device, &a).unwrap(),
        CudaTensor::from_host(&device, &b).unwrap(),
    );
    let beta = 0.0;
    let mut expected = Tensor::from_fn([6, 3], |_| f64::NAN);
    tensor! { expected[i, j] = beta * expected[i, j] + a[i, k] * b[k, j]; }
    let mut compiled = Vec::new();
    for _ in 0..2 {
        let mut dc =
            CudaTensor::from_host(&device, &Tensor::from_fn([6, 3], |_| f64::NAN)).unwrap();
        // A loop-nest step (an element-wise function keeps it from being a GEMM) and a GEMM.
        let mut de = dc.clone();
        tensor! {
            dc[i, j] = beta * dc[i, j] + da[i, k] * db[k, j];
            de[i, j] = beta * de[i, j] + abs(da[i, k]) * db[k, j];
        }
        assert_close(&expected, &dc);
        assert!(de
            .to_host()
            .unwrap()
            .as_slice()
            .iter()
            .all(|x| x.is_finite()));
        compiled.push(device.stats().modules_compiled);
    }
    assert!(compiled[0] > 0);
    assert_eq!(compiled[0], compiled[1], "the second run compiled again");
}

/// β = 0 in point-wise steps and beside other terms: the module's `β·target` term does not read
/// the target either.
#[test]
fn beta_zero_in_every_form_on_the_device() {
    let device = CudaDevice::simulator();
    let (a, b, d) = (
        data::<f64>(&[6, 4], 1),
        data::<f64>(&[4, 3], 2),
        data::<f64>(&[6, 3], 3),
    );
    let on_device = |t: &Tensor<f64>| CudaTensor::from_host(&device, t).unwrap();
    let (da, db, dd) = (on_device(&a), on_device(&b), on_device(&d));
    let nan = Tensor::from_fn([6, 3], |_| f64::NAN);
    let beta = 0.0;
    let (mut dc, mut de, mut df) = (on_device(&nan), on_device(&nan), on_device(&nan));
    tensor! {
        dc[i, j] = beta * dc[i, j] + da[i, k] * db[k, j] + dd[i, j];
        de[i, j] = beta * de[i, j] + dd[i, j] * dd[i, j];
        df[i, j] = beta * df[i, j];
    }
    let (mut c, mut e) = (Tensor::<f64>::zeros([6, 3]), Tensor::<f64>::zeros([6, 3]));
    tensor! {
        c[i, j] = a[i, k] * b[k, j] + d[i, j];
        e[i, j] = d[i, j] * d[i, j];
    }
    assert_close(&c, &dc);
    assert_close(&e, &de);
    assert_close(&Tensor::zeros([6, 3]), &df);
}

/// `tan`, `sigmoid` and `pow` in a module equal the host's.
#[test]
fn new_functions_on_the_device() {
    let device = CudaDevice::simulator();
    let a = data::<f64>(&[9, 5], 4);
    let da = CudaTensor::from_host(&device, &a).unwrap();
    let mut host = Tensor::<f64>::zeros([9, 5]);
    let mut on_device = CudaTensor::zeros(&device, [9, 5]).unwrap();
    tensor! {
        host[i, j] = tan(a[i, j]) + sigmoid(a[i, j]) * pow(abs(a[i, j]) + 1, a[i, j]) + log(2);
        on_device[i, j] = tan(da[i, j]) + sigmoid(da[i, j]) * pow(abs(da[i, j]) + 1, da[i, j]) + log(2);
    }
    assert_close(&host, &on_device);
}

/// Each simulator is a device of its own: tensors of two in one statement are refused before
/// anything is written, as tensors of two GPUs are.
#[test]
fn tensors_of_two_simulators_in_one_statement_are_refused() {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    let (first, second) = (CudaDevice::simulator(), CudaDevice::simulator());
    let a = CudaTensor::from_host(&first, &data::<f64>(&[40, 36], 1)).unwrap();
    let b = CudaTensor::from_host(&second, &data::<f64>(&[36, 33], 2)).unwrap();
    let b_on_first = CudaTensor::from_host(&first, &b.to_host().unwrap()).unwrap();
    let mut c = CudaTensor::zeros(&first, [40, 33]).unwrap();
    let mut d = CudaTensor::zeros(&first, [40, 36]).unwrap();
    // A GEMM, a loop nest and a scalar sum, each with an operand of the second simulator.
    assert!(catch_unwind(AssertUnwindSafe(
        || tensor! { c[i, j] = a[i, k] * b[k, j]; }
    ))
    .is_err());
    assert!(catch_unwind(AssertUnwindSafe(
        || tensor! { d[i, k] = a[i, k] * b[k, 0]; }
    ))
    .is_err());
    let scalar = || {
        tensor! { let s = a[i, k] * b[k, i]; }
        s
    };
    assert!(catch_unwind(AssertUnwindSafe(scalar)).is_err());
    let zeros = |t: &CudaTensor<f64>| t.to_host().unwrap().as_slice().iter().all(|&x| x == 0.0);
    assert!(zeros(&c) && zeros(&d));
    // The same statements over one simulator's tensors run.
    tensor! { c[i, j] = a[i, k] * b_on_first[k, j]; }
    assert!(!zeros(&c));
}

/// Permuted and sliced device tensors (no copies) as operands and targets, in loop-nest and
/// GEMM steps, equal the same views on the host.
/// Point-wise statements take four points a thread (their reads first): lengths with and
/// without a tail past those groups, a target that reads itself, each writing mode, and a
/// transposed target, equal the host's.
#[test]
fn point_wise_statements_four_points_a_thread_with_a_tail() {
    let device = CudaDevice::simulator();
    for len in [1, 7, 1023, 1024, 4096, 4 * 1024 + 13, 9 * 1024 + 1000] {
        let x = data::<f64>(&[len], 1);
        let y = data::<f64>(&[len], 2);
        let mut z = data::<f64>(&[len], 3);
        let (dx, dy) = (
            CudaTensor::from_host(&device, &x).unwrap(),
            CudaTensor::from_host(&device, &y).unwrap(),
        );
        let mut dz = CudaTensor::from_host(&device, &z).unwrap();
        let w = 0.5;
        tensor! {
            z[i] = 2 * z[i] + exp(y[i]) * x[i];
            z[i] += x[i] - z[i] / 4;
            z[i] = {w} * z[i] + y[i];
            let r[i] = sin(z[i]) * x[i];
        }
        tensor! {
            dz[i] = 2 * dz[i] + exp(dy[i]) * dx[i];
            dz[i] += dx[i] - dz[i] / 4;
            dz[i] = {w} * dz[i] + dy[i];
            let dr[i] = sin(dz[i]) * dx[i];
        }
        assert_close(&z, &dz);
        assert_close(&r, &dr);
    }
    let s = data::<f64>(&[37, 301], 4);
    let ds = CudaTensor::from_host(&device, &s).unwrap();
    tensor! { let t[j, i] = s[i, j] * 3; }
    tensor! { let dt[j, i] = ds[i, j] * 3; }
    assert_close(&t, &dt);
}

#[test]
// `z` (extent 1) is summed over `b_s` alone on purpose: that warning is silenced.
#[allow(deprecated)]
fn views_match_the_host() {
    let device = CudaDevice::simulator();
    for (m, k, n) in [(7, 13, 5), (1, 1, 1), (40, 37, 33), (0, 3, 2)] {
        let a = data::<f64>(&[k + 2, m], 1); // read transposed and sliced
        let b = data::<f64>(&[3, k, n + 1], 2); // a slice of the middle plane, narrowed
        let mut c = data::<f64>(&[n, m + 3], 3); // written transposed and sliced
        let da = CudaTensor::from_host(&device, &a).unwrap();
        let db = CudaTensor::from_host(&device, &b).unwrap();
        let dc = CudaTensor::from_host(&device, &c).unwrap();
        {
            let a_t = a.view().slice_axis(0, 1..k + 1).permuted_axes(&[1, 0]);
            let b_s = b.view().slice_axis(0, 1..2).slice_axis(2, 1..n + 1);
            let c_t = c.view_mut().slice_axis(1, 2..m + 2).permuted_axes(&[1, 0]);
            tensor! {
                c_t[i, j] = 0.25 * c_t[i, j] + a_t[i, p] * b_s[z, p, j];
                c_t[i, j] += exp(a_t[i, p] / 8) * b_s[z, p, j] - c_t[i, j] / 2;
            }
        }
        let da_t = da.slice_axis(0, 1..k + 1).permuted_axes(&[1, 0]);
        let db_s = db.slice_axis(0, 1..2).slice_axis(2, 1..n + 1);
        let mut dc_t = dc.slice_axis(1, 2..m + 2).permuted_axes(&[1, 0]);
        tensor! {
            dc_t[i, j] = 0.25 * dc_t[i, j] + da_t[i, p] * db_s[z, p, j];
            dc_t[i, j] += exp(da_t[i, p] / 8) * db_s[z, p, j] - dc_t[i, j] / 2;
        }
        // The written region, read back through the device tensor's own layout.
        let dc = dc_t.permuted_axes(&[1, 0]);
        let whole = c.view().slice_axis(1, 2..m + 2).to_tensor();
        assert_close(&whole, &dc);
    }
}

/// Products of three or more tensors run as pairwise cuBLAS calls through device temporaries
/// when every pair maps (else as the fused module), and equal the host's.
#[test]
// `w` is summed over `a` alone on purpose: that warning is silenced.
#[allow(deprecated)]
fn networks_through_device_temporaries() {
    let device = CudaDevice::simulator();
    let a = data::<f64>(&[6, 5, 4], 1);
    let b = data::<f64>(&[5, 7], 2);
    let d = data::<f64>(&[7, 3], 3);
    let e = data::<f64>(&[4, 3], 4);
    let to = |t: &Tensor<f64>| CudaTensor::from_host(&device, t).unwrap();
    let (da, db, dd, de) = (to(&a), to(&b), to(&d), to(&e));
    let mut c = data::<f64>(&[6, 3], 5);
    let mut dc = to(&c);
    let before = device.stats();
    tensor! { c[i, l] = 0.5 * c[i, l] + 2 * a[i, k, m] * b[k, j] * d[j, l] * e[m, l]; }
    tensor! { dc[i, l] = 0.5 * dc[i, l] + 2 * da[i, k, m] * db[k, j] * dd[j, l] * de[m, l]; }
    let pairwise = device.stats();
    assert!(pairwise.gemm_calls >= before.gemm_calls + 3, "{pairwise:?}");
    assert_close(&c, &dc);
    // `w` is summed in `a` alone: that pair is no GEMM, so the fused module runs it whole.
    tensor! { let f[i, l] = a[i, k, w] * b[k, j] * d[j, l]; }
    tensor! { let df[i, l] = da[i, k, w] * db[k, j] * dd[j, l]; }
    assert_close(&f, &df);
    // A scalar result (host memory) goes through the fused module's two-pass sum.
    tensor! { let s = a[i, k, m] * b[k, j] * d[j, l] * e[m, l]; }
    tensor! { let ds = da[i, k, m] * db[k, j] * dd[j, l] * de[m, l]; }
    assert!((s - ds).abs() <= 1e-10 * s.abs().max(1.0), "{s} vs {ds}");
}

#[test]
fn powi_exponents_computed_by_rust_reach_the_kernel_exactly() {
    let device = CudaDevice::simulator();
    let a = data::<f64>(&[7, 5], 6);
    let signs = Tensor::from_fn([4], |ix| if ix[0] % 2 == 0 { -1.0f32 } else { 1.0 });
    let da = CudaTensor::from_host(&device, &a).unwrap();
    let dsigns = CudaTensor::from_host(&device, &signs).unwrap();
    for n in [0i32, 3, -2] {
        let w = 0.5;
        tensor! { let p[i] = {w} * powi(a[i, j], n) + powi(a[i, j], {n - 1}); }
        tensor! { let dp[i] = {w} * powi(da[i, j], n) + powi(da[i, j], {n - 1}); }
        assert_close(&p, &dp);
    }
    // An exponent travels in an f32 slot as its bits, whatever float those bits would be: a
    // subnormal (small positive), a signalling NaN (-4194305, 2139095042), a quiet NaN
    // (i32::MAX), negative zero (i32::MIN). Parity shows whether it arrived unchanged.
    let cases = [(3, 2), (-4_194_305, 2_139_095_042), (i32::MAX, i32::MIN)];
    for (odd, even) in cases {
        tensor! { let ds[i] = powi(dsigns[i], odd) - powi(dsigns[i], even); }
        assert_eq!(
            ds.to_host().unwrap().as_slice(),
            &[-2.0f32, 0.0, -2.0, 0.0],
            "{odd}, {even}"
        );
    }
    // A signalling-NaN pattern whose quieting would turn -4194306 into -2.
    let near_one = Tensor::from_shape_vec([2], vec![1.0f32 - f32::EPSILON / 2.0, 2.0]).unwrap();
    let dnear = CudaTensor::from_host(&device, &near_one).unwrap();
    let n = -4_194_306;
    tensor! { let dq[i] = powi(dnear[i], n); }
    let dq = dq.to_host().unwrap();
    let expected = (f64::from(near_one[[0]])).powi(n);
    assert!(
        (f64::from(dq[[0]]) - expected).abs() < 1e-3 * expected,
        "{dq} vs {expected}"
    );
    assert_eq!(dq[[1]], 0.0);
}

/// Integer test data spanning the whole range of `T`, so sums and products overflow.
fn wide<T: tensor_dsl::Element>(
    shape: &[usize],
    seed: u64,
    convert: impl Fn(u64) -> T,
) -> Tensor<T> {
    let mut state = seed;
    Tensor::from_fn(shape, |_| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        convert(state >> 7)
    })
}

/// Integer tensors on the device: element-wise arithmetic, `abs`, `max`, `min`, contractions
/// (run as modules: cuBLAS has no integer GEMM), products of three, sums to a scalar and
/// updates, every result bit for bit the host's, overflow wrapping as there.
#[test]
fn integer_statements_wrap_exactly_as_on_the_host() {
    let device = CudaDevice::simulator();
    let a = wide(&[37, 300], 1, |x| x as i64);
    let b = wide(&[300, 29], 2, |x| x as i64);
    let v = wide(&[29], 3, |x| x as i64);
    let (da, db, dv) = (
        CudaTensor::from_host(&device, &a).unwrap(),
        CudaTensor::from_host(&device, &b).unwrap(),
        CudaTensor::from_host(&device, &v).unwrap(),
    );
    let k = 3i64;
    let mut host = Tensor::<i64>::zeros([37, 29]);
    let mut on_device = CudaTensor::<i64>::zeros(&device, [37, 29]).unwrap();
    tensor! {
        let c[i, j] = a[i, l] * b[l, j];
        let e[i, j] = abs(c[i, j]) - max(c[i, j], 2 * c[i, j]) + min(-c[i, j], {k}) * 3;
        let t[i] = a[i, l] * b[l, j] * v[j];
        let s = c[i, j] * c[i, j];
        host[i, j] = 2 * host[i, j] + c[i, j] - k;
    }
    tensor! {
        let dc[i, j] = da[i, l] * db[l, j];
        let de[i, j] = abs(dc[i, j]) - max(dc[i, j], 2 * dc[i, j]) + min(-dc[i, j], {k}) * 3;
        let dt[i] = da[i, l] * db[l, j] * dv[j];
        let ds = dc[i, j] * dc[i, j];
        on_device[i, j] = 2 * on_device[i, j] + dc[i, j] - k;
    }
    assert_eq!(dc.to_host().unwrap(), c);
    assert_eq!(de.to_host().unwrap(), e);
    assert_eq!(dt.to_host().unwrap(), t);
    assert_eq!(ds, s);
    assert_eq!(on_device.to_host().unwrap(), host);
    // The sums did overflow: the wrapped result is not the exact one.
    let exact: i128 = (0..300)
        .map(|l| a[[0, l]] as i128 * b[[l, 0]] as i128)
        .sum();
    assert_ne!(exact, c[[0, 0]] as i128);

    // i32, through views.
    let x = wide(&[13, 7], 4, |x| x as i32);
    let y = wide(&[7, 13], 5, |x| x as i32);
    let (dx, dy) = (
        CudaTensor::from_host(&device, &x).unwrap(),
        CudaTensor::from_host(&device, &y).unwrap(),
    );
    tensor! { let z[i, j] = x[i, l] * y[l, j] - x[i, l] * x[i, l]; }
    tensor! { let dz[i, j] = dx[i, l] * dy[l, j] - dx[i, l] * dx[i, l]; }
    assert_eq!(dz.to_host().unwrap(), z);
}

/// Complex values in (-0.5, 0.5) + (-0.5, 0.5)i.
/// The text a panic carried (empty if it was not a `String`).
fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default()
}

fn complexes(shape: &[usize], seed: usize) -> Tensor<tensor_dsl::c64> {
    let (re, im) = (data::<f64>(shape, seed), data::<f64>(shape, seed + 40));
    let mut parts = re.iter().zip(im.iter());
    Tensor::from_fn(shape, |_| {
        let (&re, &im) = parts.next().expect("one part per element");
        tensor_dsl::c64::new(re, im)
    })
}

fn assert_close_complex(
    host: &Tensor<tensor_dsl::c64>,
    device: &Tensor<tensor_dsl::c64>,
    rtol: f64,
) {
    assert_eq!(host.shape(), device.shape());
    let scale = host.iter().map(|x| x.norm()).fold(1.0, f64::max);
    for (x, y) in host.iter().zip(device.iter()) {
        assert!(
            (x - y).norm() <= rtol * scale,
            "{x} (host) against {y} (device)"
        );
    }
}

/// Complex contractions are cuBLAS `Cgemm`/`Zgemm` calls, a `conj` folded in as `op = C` where
/// cuBLAS reads that operand transposed; elsewhere the module (which conjugates as it loads).
#[test]
fn complex_contractions_call_cublas_with_conjugation_where_the_layout_allows() {
    use tensor_dsl::{c32, c64};
    let device = CudaDevice::simulator();
    let to = |t: &Tensor<c64>| CudaTensor::from_host(&device, t).unwrap();
    let (a, b) = (complexes(&[23, 17], 1), complexes(&[23, 19], 2));
    let (da, db) = (to(&a), to(&b));
    let z = c64::new(0.25, 2.0);
    let gemms = || device.stats().gemm_calls;
    let mut expected = complexes(&[17, 19], 3);
    let mut dc = to(&expected);
    let mut calls = Vec::new();
    for conj in [[false, false], [true, false], [false, true], [true, true]] {
        let before = gemms();
        let value = |x: c64, flag: bool| if flag { x.conj() } else { x };
        expected = Tensor::from_fn([17, 19], |ij| {
            let sum: c64 = (0..23)
                .map(|k| value(a[[k, ij[0]]], conj[0]) * value(b[[k, ij[1]]], conj[1]))
                .sum();
            z * sum + 0.5 * expected[ij]
        });
        match conj {
            [false, false] => tensor! { dc[i, j] = {z} * da[k, i] * db[k, j] + 0.5 * dc[i, j]; },
            [true, false] => {
                tensor! { dc[i, j] = {z} * conj(da[k, i]) * db[k, j] + 0.5 * dc[i, j]; }
            }
            [false, true] => {
                tensor! { dc[i, j] = {z} * da[k, i] * conj(db[k, j]) + 0.5 * dc[i, j]; }
            }
            [true, true] => {
                tensor! { dc[i, j] = {z} * conj(da[k, i]) * conj(db[k, j]) + 0.5 * dc[i, j]; }
            }
        }
        assert_close_complex(&expected, &dc.to_host().unwrap(), 1e-12);
        calls.push(gemms() - before);
    }
    // C row-major is computed as Cᵀ = Bᵀ·A: A (stored k × i) is read transposed, so its
    // `conj` is `op = C`; B is read as stored, and cuBLAS cannot conjugate it there.
    assert_eq!(calls, [1, 1, 0, 0]);

    // The adjoint without a transpose, in a product of three: the pairs are cuBLAS calls.
    let h = to(&complexes(&[23, 23], 4));
    let before = gemms();
    tensor! { let dr[i, j] = conj(da[p, i]) * h[p, q] * da[q, j]; }
    assert_eq!(gemms(), before + 2);
    let hh = complexes(&[23, 23], 4);
    tensor! { let r[i, j] = conj(a[p, i]) * hh[p, q] * a[q, j]; }
    assert_close_complex(&r, &dr.to_host().unwrap(), 1e-12);

    // c32 through `Cgemm`.
    let narrow = |t: &Tensor<c64>| t.mapv(|x| c32::new(x.re as f32, x.im as f32));
    let (x, y) = (narrow(&a), narrow(&b));
    let (dx, dy) = (
        CudaTensor::from_host(&device, &x).unwrap(),
        CudaTensor::from_host(&device, &y).unwrap(),
    );
    let before = gemms();
    tensor! { let w[i, j] = conj(x[k, i]) * y[k, j]; }
    tensor! { let dw[i, j] = conj(dx[k, i]) * dy[k, j]; }
    assert_eq!(gemms(), before + 1);
    let widen = |t: &Tensor<c32>| t.mapv(|x| c64::new(x.re.into(), x.im.into()));
    assert_close_complex(&widen(&w), &widen(&dw.to_host().unwrap()), 1e-5);
}

/// Complex tensors on the device: arithmetic, every function with its complex meaning, `conj`
/// in contractions and products of three, sums, updates with a complex β,
/// a computed `powi` exponent and complex Rust scalars in their slots; `c32` too. A real
/// device tensor in a complex statement is an error, not a misread.
#[test]
fn complex_statements_match_the_host() {
    use tensor_dsl::{c32, c64};
    let device = CudaDevice::simulator();
    let a = complexes(&[37, 300], 1);
    let b = complexes(&[300, 29], 2);
    let v = complexes(&[29], 3);
    let (da, db, dv) = (
        CudaTensor::from_host(&device, &a).unwrap(),
        CudaTensor::from_host(&device, &b).unwrap(),
        CudaTensor::from_host(&device, &v).unwrap(),
    );
    let (z, n) = (c64::new(0.5, -1.25), 3i32);
    let mut host = complexes(&[37, 29], 4);
    let mut on_device = CudaTensor::from_host(&device, &host).unwrap();
    tensor! {
        let c[i, j] = conj(a[i, l]) * b[l, j];
        let e[i, j] = exp(c[i, j] / 8) + ln(c[i, j]) * sqrt(c[i, j]) - sin(c[i, j]) / cos(c[i, j] / 4)
            + tan(c[i, j] / 9) * tanh(c[i, j]) + sigmoid(c[i, j]) - pow(c[i, j] / 4, v[j])
            + powi(c[i, j], n) / 100 + abs(c[i, j]) * re(c[i, j]) - im(c[i, j]) / {z};
        let t[i] = a[i, l] * b[l, j] * conj(v[j]);
        let s = conj(c[i, j]) * c[i, j];
        host[i, j] = {z} * host[i, j] + c[i, j] - 2;
    }
    tensor! {
        let dc[i, j] = conj(da[i, l]) * db[l, j];
        let de[i, j] = exp(dc[i, j] / 8) + ln(dc[i, j]) * sqrt(dc[i, j]) - sin(dc[i, j]) / cos(dc[i, j] / 4)
            + tan(dc[i, j] / 9) * tanh(dc[i, j]) + sigmoid(dc[i, j]) - pow(dc[i, j] / 4, dv[j])
            + powi(dc[i, j], n) / 100 + abs(dc[i, j]) * re(dc[i, j]) - im(dc[i, j]) / {z};
        let dt[i] = da[i, l] * db[l, j] * conj(dv[j]);
        let ds = conj(dc[i, j]) * dc[i, j];
        on_device[i, j] = {z} * on_device[i, j] + dc[i, j] - 2;
    }
    assert_close_complex(&c, &dc.to_host().unwrap(), 1e-12);
    assert_close_complex(&e, &de.to_host().unwrap(), 1e-9);
    assert_close_complex(&t, &dt.to_host().unwrap(), 1e-12);
    assert!((s - ds).norm() <= 1e-10 * s.norm());
    assert_close_complex(&host, &on_device.to_host().unwrap(), 1e-12);

    // c32.
    let narrow = |t: &Tensor<c64>| t.mapv(|x| c32::new(x.re as f32, x.im as f32));
    let (x, y) = (
        narrow(&complexes(&[13, 7], 5)),
        narrow(&complexes(&[7, 13], 6)),
    );
    let (dx, dy) = (
        CudaTensor::from_host(&device, &x).unwrap(),
        CudaTensor::from_host(&device, &y).unwrap(),
    );
    tensor! { let w[i, j] = x[i, l] * conj(y[l, j]) - exp(x[i, l]) * x[i, l]; }
    tensor! { let dw[i, j] = dx[i, l] * conj(dy[l, j]) - exp(dx[i, l]) * dx[i, l]; }
    let widen = |t: &Tensor<c32>| t.mapv(|x| c64::new(x.re.into(), x.im.into()));
    assert_close_complex(&widen(&w), &widen(&dw.to_host().unwrap()), 1e-5);

    // A real device tensor in a complex statement: refused before anything is written.
    let r = CudaTensor::from_host(&device, &data::<f64>(&[29], 7)).unwrap();
    let before = on_device.to_host().unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tensor! { on_device[i, j] = dv[j] * r[j]; }
    }));
    let message = panic_message(outcome.expect_err("a real device tensor in a complex statement"));
    assert!(
        message.contains("a real device tensor in a complex statement"),
        "{message}"
    );
    assert_eq!(on_device.to_host().unwrap(), before);
    // The same in a contraction whose loops do not merge, where a complex operand would be
    // copied first (TTGT): refused, not copied.
    let x = CudaTensor::from_host(&device, &complexes(&[70, 6, 4], 8)).unwrap();
    let y = CudaTensor::from_host(&device, &data::<f64>(&[6, 11, 4], 9)).unwrap();
    let mut z = CudaTensor::from_host(&device, &complexes(&[70, 11], 10)).unwrap();
    let before = z.to_host().unwrap();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        tensor! { z[i, j] = x[i, q, r] * y[q, j, r]; }
    }));
    let message =
        panic_message(outcome.expect_err("a real device tensor in a complex contraction"));
    assert!(
        message.contains("a real device tensor in a complex statement"),
        "{message}"
    );
    assert_eq!(z.to_host().unwrap(), before);
}

#[test]
fn ranges_of_device_tensors_read_and_write_views_on_the_device() {
    let device = CudaDevice::simulator();
    let x = data::<f64>(&[9, 4], 11);
    let a = data::<f64>(&[5, 4], 12);
    let dx = CudaTensor::from_host(&device, &x).unwrap();
    let da = CudaTensor::from_host(&device, &a).unwrap();
    let mut c = Tensor::<f64>::full([7, 5], 3.0);
    let mut dc = CudaTensor::from_host(&device, &c).unwrap();
    tensor! {
        let d[i, j] = x[i in 1.., j] - x[i in ..8, j];
        c[i in 2.., k] = x[i in 3..8, j] * a[k, j];
    }
    tensor! {
        let dd[i, j] = dx[i in 1.., j] - dx[i in ..8, j];
        dc[i in 2.., k] = dx[i in 3..8, j] * da[k, j];
    }
    assert_close(&d, &dd);
    assert_close(&c, &dc);
}

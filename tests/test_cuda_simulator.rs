//! `tensor!` on `CudaTensor`s of the simulator: the same blocks as on the host, run as the
//! generated CUDA modules compiled by the host C++ compiler.
#![cfg(feature = "cuda")]

use tensor_dsl::cuda::{CudaDevice, CudaTensor};
use tensor_dsl::{tensor, Tensor};

fn filled(shape: &[usize], seed: u64) -> Tensor<f64> {
    let mut state = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    let len: usize = shape.iter().product();
    let data: Vec<f64> = (0..len)
        .map(|_| {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((state >> 33) as f64 / (1u64 << 31) as f64) - 0.5
        })
        .collect();
    Tensor::from_shape_vec(shape.to_vec(), data).unwrap()
}

#[test]
fn matmul_and_sum_match_the_host() {
    let device = CudaDevice::simulator();
    let a = filled(&[7, 13], 1);
    let b = filled(&[13, 5], 2);
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

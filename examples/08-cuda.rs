//! `tensor!` on device tensors: runs on the first CUDA GPU, or on the simulator (the same
//! generated kernels, compiled by the host C++ compiler) when there is none.
//!
//!     cargo run --example 08-cuda --features cuda

use tensor_dsl::cuda::{device_count, CudaDevice, CudaTensor};
use tensor_dsl::{tensor, Tensor};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let device = match device_count() {
        Ok(count) if count > 0 => CudaDevice::new(0)?,
        _ => CudaDevice::simulator(),
    };
    println!("running on {device:?}");
    let a = Tensor::<f32>::from_fn([64, 32], |ix| (ix[0] + ix[1]) as f32 / 64.0);
    let b = Tensor::<f32>::from_fn([16, 32], |ix| (ix[0] * ix[1]) as f32 / 512.0);
    let a = CudaTensor::from_host(&device, &a)?;
    // Used transposed: a new layout over the same device buffer, no copy.
    let b = CudaTensor::from_host(&device, &b)?.permuted_axes(&[1, 0]);
    tensor! {
        let c[i, j] = a[i, k] * b[k, j];
        let norm = c[i, j] * c[i, j];
    }
    let c = c.to_host()?;
    println!("c[3, 5] = {}, ‖c‖² = {norm}", c[[3, 5]]);
    // The product went to cuBLAS (on the simulator, its host implementation).
    println!("{:?}", device.stats());
    Ok(())
}

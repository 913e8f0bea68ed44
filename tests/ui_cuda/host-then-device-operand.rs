use tensor_dsl::cuda::{CudaDevice, CudaTensor};
use tensor_dsl::{tensor, Tensor};

fn main() {
    let device = CudaDevice::simulator();
    let a = Tensor::<f32>::zeros([2, 3]);
    let b = CudaTensor::<f32>::zeros(&device, [3]).unwrap();
    tensor! { let c[i] = a[i, k] * b[k]; }
}

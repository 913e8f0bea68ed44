use tensor_dsl::cuda::{CudaDevice, CudaTensor};
use tensor_dsl::{tensor, Tensor};

fn main() {
    let device = CudaDevice::simulator();
    let a = CudaTensor::<f32>::zeros(&device, [2, 3]).unwrap();
    let b = Tensor::<f32>::zeros([3]);
    tensor! { let c[i] = a[i, k] * b[k]; }
}

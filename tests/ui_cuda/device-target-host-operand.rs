use tensor_dsl::cuda::{CudaDevice, CudaTensor};
use tensor_dsl::{tensor, Tensor};

fn main() {
    let device = CudaDevice::simulator();
    let a = Tensor::<f32>::zeros([2, 3]);
    let b = CudaTensor::<f32>::zeros(&device, [3]).unwrap();
    let mut c = CudaTensor::<f32>::zeros(&device, [2]).unwrap();
    tensor! { c[i] = b[k] * a[i, k]; }
}

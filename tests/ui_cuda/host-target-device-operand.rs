use tensor_dsl::cuda::{CudaDevice, CudaTensor};
use tensor_dsl::{tensor, Tensor};

fn main() {
    let device = CudaDevice::simulator();
    let a = CudaTensor::<f32>::zeros(&device, [2, 3]).unwrap();
    let b = Tensor::<f32>::zeros([3]);
    let mut c = Tensor::<f32>::zeros([2]);
    tensor! { c[i] = b[k] * a[i, k]; }
}

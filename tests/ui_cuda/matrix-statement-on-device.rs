use tensor_dsl::cuda::{CudaDevice, CudaTensor};
use tensor_dsl::tensor;

fn main() {
    let device = CudaDevice::simulator();
    let a = CudaTensor::<f64>::zeros(&device, [3, 3]).unwrap();
    tensor! { let (w[s], v[i, s]) = eigh(a[i, j]); }
}

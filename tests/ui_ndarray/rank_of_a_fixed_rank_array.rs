use ndarray::Array2;
use tensor_dsl::tensor;

fn main() {
    let a = Array2::<f64>::zeros((3, 4));
    tensor! { let v[i] = a[i]; }
}

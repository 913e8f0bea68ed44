use ndarray::Array1;
use tensor_dsl::tensor;

fn main() {
    let a = Array1::<f64>::zeros(3);
    let mut out = Array1::<f64>::zeros(3);
    let v = out.view();
    tensor! { v[i] = a[i]; }
    out[0] = 1.0;
}

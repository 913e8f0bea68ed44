use tensor_dsl::tensor;

fn main() {
    let v = vec![1.0f64; 6];
    let out = vec![0.0f64; 6];
    let shared: &[f64] = &out;
    tensor! { shared[i] = v[i]; }
}

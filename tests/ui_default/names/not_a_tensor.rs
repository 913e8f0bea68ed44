use tensor_dsl::tensor;

fn main() {
    let v = vec![vec![1.0f64; 3]; 3];
    tensor! { let d[i] = v[i]; }
}

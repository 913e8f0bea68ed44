use tensor_dsl::tensor;

fn main() {
    let a = [1.0f64, 2.0];
    tensor! { let s = a[] * 2; }
    let _ = s;
}

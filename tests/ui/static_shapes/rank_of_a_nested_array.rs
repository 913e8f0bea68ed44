use tensor_dsl::tensor;

fn main() {
    let e = [[1.0f64; 3]; 3];
    let a = [[1.0f64; 3]; 4];
    tensor! { let v[k] = 2 * e[k]; }
    tensor! { let w[i, j, k] = a[i, j, k]; }
}

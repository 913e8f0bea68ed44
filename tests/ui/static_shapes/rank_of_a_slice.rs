use tensor_dsl::tensor;

fn main() {
    let v = vec![1.0f64; 6];
    let s: &[f64] = &v;
    let mut out = vec![0.0f64; 6];
    tensor! { let m[i, j] = v[i, j] * s[j]; }
    tensor! { out[i] = s[i, i]; }
}

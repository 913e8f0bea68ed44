use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    let v = vec![vec![1.0f64; 3]; 3];
    tensor! { let d[i] = a[i] * v[i]; }
}

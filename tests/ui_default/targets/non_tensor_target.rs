use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    let mut out = vec![vec![0.0f64; 3]; 3];
    tensor! { out[i] = a[i]; }
}

use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    let b = Tensor::<f32>::zeros([3]);
    tensor! { let c[i] = a[i] * b[i]; }
    let _ = c;
}

use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    tensor! { let c[i] = a[i] * 2.0f32; }
    let b = Tensor::<f64>::zeros([3, 3]);
    tensor! { let d[i] = b[i, j] * 3.0f32; }
}

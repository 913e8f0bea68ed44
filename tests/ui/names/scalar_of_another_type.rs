use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    let alpha: f32 = 2.0;
    tensor! { let c[i] = alpha * a[i]; }
}

use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    tensor! { let s: f32 = a[i] * a[i]; }
    let _ = s;
}

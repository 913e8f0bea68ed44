use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([2]);
    let b = Tensor::<f64>::zeros([2]);
    tensor! { let c[i] = a[i] b[i]; }
    let _ = c;
}

use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    let c = Tensor::<f64>::zeros([3]);
    tensor! { c[i] = a[i]; }
}

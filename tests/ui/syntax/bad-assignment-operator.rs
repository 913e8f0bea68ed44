use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([2]);
    let mut c = Tensor::<f64>::zeros([2]);
    tensor! { c[i] %= a[i]; }
}

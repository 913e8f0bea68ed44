use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    let mut d = Tensor::<f64>::zeros([3, 3]);
    tensor! { d[i, i] = a[i]; }
}

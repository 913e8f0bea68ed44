use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    tensor! { let c[i, j] = a[i] * 2; }
    let _ = c;
}

use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3, 3]);
    let i = 2.0;
    tensor! { let c[i] = a[i, j] * i; }
    let _ = c;
}

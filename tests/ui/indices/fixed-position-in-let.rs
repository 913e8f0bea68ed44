use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    tensor! { let c[i, 0] = a[i]; }
    let _ = c;
}

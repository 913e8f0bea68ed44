use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    tensor! { let c[i] = exp(a[i], 2) + max(a[i]); }
    let _ = c;
}

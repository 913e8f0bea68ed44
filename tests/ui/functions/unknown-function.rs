use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    tensor! { let c[i] = log10(a[i]) + powi(a[i], 2.5); }
    let _ = c;
}

use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3]);
    let n: usize = 3;
    tensor! { let v[i] = powi(a[i], n); }
}

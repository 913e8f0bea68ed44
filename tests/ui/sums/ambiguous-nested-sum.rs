use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3, 4]);
    let b = Tensor::<f64>::zeros([3]);
    let y = Tensor::<f64>::zeros([4]);
    tensor! { let c[i] = (a[i, j] + b[i]) * y[j]; }
    let _ = c;
}

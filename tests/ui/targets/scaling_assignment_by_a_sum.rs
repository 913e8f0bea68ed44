use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3, 4]);
    let x = Tensor::<f64>::zeros([4]);
    let b = Tensor::<f64>::zeros([3]);
    let mut c = Tensor::<f64>::zeros([3]);
    tensor! {
        c[i] /= a[i, k] * x[k];
        c[i] *= a[i, k] * x[k] + b[i];
    }
}

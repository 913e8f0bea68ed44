use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3, 3]);
    let x = Tensor::<f64>::zeros([3]);
    tensor! {
        let c[i] = x[i];
        c[i] += x[i];
        let d[i] = x[i];
        d[i] += a[i, j] * x[j];
    }
    let _ = (c, d);
}

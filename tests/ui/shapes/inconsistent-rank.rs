use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3, 3]);
    tensor! {
        let c[i] = a[i, j] * a[j];
        let d[i] = c[i, i];
    }
    let _ = d;
}

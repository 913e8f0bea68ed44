use tensor_dsl::{tensor, Tensor};

fn main() {
    let x = Tensor::<f64>::zeros([2, 3, 4]);
    let z = Tensor::<f64>::zeros([4, 4]);
    let v = Tensor::<f64>::zeros([8]);
    tensor! {
        let y[i] = x[..., i];
        let w[i] = v[{i + k}] * z[i, k];
    }
}

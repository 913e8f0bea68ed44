use tensor_dsl::{tensor, Tensor};

fn main() {
    let layers = vec![Tensor::<f64>::zeros([3])];
    let a = Tensor::<f64>::zeros([3, 3]);
    let v = Tensor::<f64>::zeros([4]);
    tensor! { let x[i] = layers[0][i]; }
    tensor! { let y[i, j] = a.view()[i, j]; }
    tensor! { let z[i] = v[i + 1]; }
}

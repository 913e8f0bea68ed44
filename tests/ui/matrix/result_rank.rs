use tensor_dsl::{tensor, Tensor};

fn main() {
    let h = Tensor::<f64>::zeros([3, 3]);
    tensor! {
        let (w[s], v[i, s]) = eigh(h[i, j]);
        let rho[i, j] = v[i, j, s] * v[i, j, s];
        let n = w[s, s];
        // `v` is bound without `mut`.
        v[i, s] *= 2;
    }
}

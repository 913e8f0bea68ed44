use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = [[1.0f64; 3]; 4];
    let b = [[1.0f64; 5]; 2];
    let d = Tensor::<f64>::zeros([7, 7]);
    tensor! { let c[i, j] = a[i, k] * b[k, j]; }
    // Static against dynamic: left to the run-time check.
    tensor! { let e[i, j] = a[i, k] * d[k, j]; }
    let mut out = [[0.0f64; 2]; 4];
    tensor! { out[i, j] = a[i, k] * b[j, k]; }
}

use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3, 3]);
    tensor! {
        let (u[i, s], vt[s, j]) = svd(a[i, j]);
        let l[i, j] = cholesky(a[i, j], a[i, j]);
        let m[i, j] = cholesky(a[i, j], max_rank = 2);
        let (u2[i, s], sv2[s], vt2[s, j]) = svd(a[i, j], rank = 2);
        let n[i, j] = cholesky(2 * a[i, j]);
        let o[i, j] = 2 * cholesky(a[i, j]);
        let (u3[i, s], sv3[s], vt3[s, j], err[s]) = svd(a[i, j]);
    }
}

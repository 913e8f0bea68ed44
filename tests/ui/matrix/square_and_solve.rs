use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3, 3]);
    let b = Tensor::<f64>::zeros([3, 2]);
    let t = Tensor::<f64>::zeros([3, 3, 3]);
    tensor! {
        // Rows and columns are the halves of an even number of indices.
        let l[i, j, k] = cholesky(t[i, j, k]);
        // `k` is not an index of `a`.
        let p[i, k] = matpow(a[i, j], 2);
        // `k` of `a` is in neither `b` nor `x`.
        let x[j, r] = solve(a[i, k], b[i, r]);
        // `j` of `a` is in both `b` and `y`.
        let y[j, r] = solve(a[i, j], b[j, r]);
    }
}

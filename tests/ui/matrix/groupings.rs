use tensor_dsl::{tensor, Tensor};

fn main() {
    let t = Tensor::<f64>::zeros([2, 3, 4]);
    tensor! {
        // `j` is a row (in `u`) and a column (in `vt`).
        let (u[i, j, s], sv[s], vt[s, j, k]) = svd(t[i, j, k]);
        // `k` is in no result.
        let (u2[i, s], sv2[s], vt2[s, j]) = svd(t[i, j, k]);
        // `r` is neither an index of `t` nor the new index `s`.
        let (u3[i, s], sv3[s], vt3[r, j, k]) = svd(t[i, j, k]);
        // No new index for the factor dimension.
        let (q[i], r[j, k]) = qr(t[i, j, k]);
        // `v` holds every index of `h`: no columns are left.
        let (w[s], v[i, j, k, s]) = eigh(t[i, j, k]);
    }
}

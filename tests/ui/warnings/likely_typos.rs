// Likely typos compile with a warning on the token (denied here, so they show): an index
// summed over one factor alone, and a target read inside `max` in a term that sums. The
// statements before them are the same forms written on purpose, which do not warn.
#![deny(deprecated)]

use tensor_dsl::{tensor, Tensor};

fn main() {
    let a = Tensor::<f64>::zeros([3, 4]);
    let x = Tensor::<f64>::zeros([4]);
    let b = Tensor::<f64>::zeros([3]);
    let t = Tensor::<f64>::zeros([]);
    let mut m = Tensor::<f64>::zeros([3]);
    tensor! {
        let rows[i] = a[i, j];
        let scaled[i] = a[i, j] * t[];
        let soft[i] = exp(a[i, j] + b[i]);
        let relus[i] = max(a[i, j], 0);
        let y[i] = a[i, j] * x[j];
    }
    tensor! {
        let z[i] = a[i, j] * x[k];
        m[i] = max(m[i], a[i, j]);
    }
    let _ = (rows, scaled, soft, relus, y, z);
}

//! Contractions beyond the matrix product: two summed indices at once, a batch index, traces
//! and diagonals, an outer product and a contraction of three tensors, each checked against a
//! loop over every index.
//!
//!     cargo run --release --example 02-contractions

mod common;

use common::{check, data, sum_over};
use tensor_dsl::{tensor, Tensor};

fn main() {
    // Two contracted indices: c[i, j] = Σₖₗ a[i, k, l] b[k, j, l].
    let (ni, nj, nk, nl) = (40, 30, 20, 10);
    let a = data(&[ni, nk, nl], 1);
    let b = data(&[nk, nj, nl], 2);
    tensor! { let c[i, j] = a[i, k, l] * b[k, j, l]; }
    let expected = Tensor::from_fn([ni, nj], |ix| {
        sum_over(&[nk, nl], |r| {
            a[[ix[0], r[0], r[1]]] * b[[r[0], ix[1], r[1]]]
        })
    });
    check(
        "c[i, j] = a[i, k, l] b[k, j, l]",
        c.as_slice(),
        expected.as_slice(),
        1e-12,
    );

    // A batch index stays on the left: one product per b.
    let (nb, n) = (8, 16);
    let x = data(&[nb, n, n], 3);
    let y = data(&[nb, n, n], 4);
    tensor! { let z[q, i, j] = x[q, i, k] * y[q, k, j]; }
    let expected = Tensor::from_fn([nb, n, n], |ix| {
        sum_over(&[n], |r| x[[ix[0], ix[1], r[0]]] * y[[ix[0], r[0], ix[2]]])
    });
    check(
        "batched z[q, i, j] = x[q, i, k] y[q, k, j]",
        z.as_slice(),
        expected.as_slice(),
        1e-12,
    );

    // Repeated indices: trace, diagonal, partial trace.
    let m = data(&[n, n], 5);
    let w = data(&[n, 3, n, 4], 6);
    tensor! {
        let trace = m[i, i];
        let diagonal[i] = m[i, i];
        let partial[j, l] = w[i, j, i, l];
    }
    check(
        "trace = m[i, i]",
        &[trace],
        &[sum_over(&[n], |r| m[[r[0], r[0]]])],
        1e-12,
    );
    let expected: Vec<f64> = (0..n).map(|i| m[[i, i]]).collect();
    check("diagonal[i] = m[i, i]", diagonal.as_slice(), &expected, 0.0);
    let expected = Tensor::from_fn([3, 4], |ix| {
        sum_over(&[n], |r| w[[r[0], ix[0], r[0], ix[1]]])
    });
    check(
        "partial[j, l] = w[i, j, i, l]",
        partial.as_slice(),
        expected.as_slice(),
        1e-12,
    );

    // An outer product, then three tensors contracted pairwise in the cheapest order.
    let u = data(&[50], 7);
    let v = data(&[60], 8);
    let p = data(&[60, 5], 9);
    tensor! {
        let outer[i, j] = u[i] * v[j];
        let chain[i, k] = u[i] * v[j] * p[j, k];
    }
    let expected = Tensor::from_fn([50, 60], |ix| u[[ix[0]]] * v[[ix[1]]]);
    check(
        "outer[i, j] = u[i] v[j]",
        outer.as_slice(),
        expected.as_slice(),
        0.0,
    );
    let expected = Tensor::from_fn([50, 5], |ix| {
        sum_over(&[60], |r| u[[ix[0]]] * v[[r[0]]] * p[[r[0], ix[1]]])
    });
    check(
        "chain[i, k] = u[i] v[j] p[j, k]",
        chain.as_slice(),
        expected.as_slice(),
        1e-12,
    );
}

//! Matrix products: a new result, an update of an existing matrix with folded scalars, a
//! transposed operand as a view, and a product of nested arrays whose shapes are checked at
//! compile time. Each result is checked against a loop.
//!
//!     cargo run --release --example 01-matmul

mod common;

use common::{check, data, sum_over};
use tensor_dsl::{tensor, Tensor};

fn main() {
    // Past the size where a product becomes a GEMM call (32³ multiply-adds), small enough that
    // the loops checking it take a moment in a debug build.
    let (m, k, n) = (120, 90, 60);
    let a = data(&[m, k], 1);
    let b = data(&[k, n], 2);
    let product = |i: usize, j: usize| sum_over(&[k], |r| a[[i, r[0]]] * b[[r[0], j]]);

    // C = A B: one GEMM call.
    tensor! { let c[i, j] = a[i, p] * b[p, j]; }
    let expected = Tensor::from_fn([m, n], |ix| product(ix[0], ix[1]));
    check("c = a b", c.as_slice(), expected.as_slice(), 1e-12);

    // D ← 0.5 D + 2 A B / beta: α and β are folded into the same call.
    let mut d = data(&[m, n], 3);
    let before = d.clone();
    let beta = 4.0;
    tensor! { d[i, j] = 0.5 * d[i, j] + 2 * a[i, p] * b[p, j] / beta; }
    let expected = Tensor::from_fn([m, n], |ix| {
        0.5 * before[[ix[0], ix[1]]] + 0.5 * product(ix[0], ix[1])
    });
    check(
        "d = 0.5 d + 2 a b / beta",
        d.as_slice(),
        expected.as_slice(),
        1e-12,
    );

    // Aᵀ as a view, no copy: the Gram matrix of A's columns.
    let at = a.view().permuted_axes(&[1, 0]);
    tensor! { let gram[p, q] = at[p, i] * a[i, q]; }
    let expected = Tensor::from_fn([k, k], |ix| {
        sum_over(&[m], |r| a[[r[0], ix[0]]] * a[[r[0], ix[1]]])
    });
    check(
        "gram = aᵀ a (a view)",
        gram.as_slice(),
        expected.as_slice(),
        1e-12,
    );

    // Nested arrays: shapes in the types, a nested array as the result.
    let rotation = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]];
    let frame = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]];
    tensor! { let turned[i, j] = rotation[i, p] * frame[p, j]; }
    let turned: [[f64; 3]; 3] = turned;
    let expected = [[-4.0, -5.0, -6.0], [1.0, 2.0, 3.0], [7.0, 8.0, 9.0]];
    check(
        "a 3 × 3 product of nested arrays",
        turned.as_flattened(),
        expected.as_flattened(),
        0.0,
    );
}

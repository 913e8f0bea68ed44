//! Element-wise work: a fused expression in one pass, functions, broadcasting a bias,
//! reductions along an axis, and a softmax written as statements, each checked against a loop.
//!
//!     cargo run --release --example 03-elementwise

mod common;

use common::{check, data};
use tensor_dsl::{tensor, Tensor};

fn main() {
    let (rows, cols) = (200, 300);
    let a = data(&[rows, cols], 1);
    let b = data(&[rows, cols], 2);
    let c = data(&[rows, cols], 3);
    let bias = data(&[cols], 4);
    let at = |t: &Tensor<f64>, i: usize, j: usize| t[[i, j]];

    // One pass over memory, no temporaries: r = a + b·c + 2·e^a.
    tensor! { let r[i, j] = a[i, j] + b[i, j] * c[i, j] + 2 * exp(a[i, j]); }
    let expected = Tensor::from_fn([rows, cols], |ix| {
        let (i, j) = (ix[0], ix[1]);
        at(&a, i, j) + at(&b, i, j) * at(&c, i, j) + 2.0 * at(&a, i, j).exp()
    });
    check(
        "r = a + b c + 2 exp(a)",
        r.as_slice(),
        expected.as_slice(),
        1e-14,
    );

    // A bias broadcast along rows, then a ReLU, in place.
    let mut h = a.clone();
    tensor! {
        h[i, j] = h[i, j] + bias[j];
        h[i, j] = max(h[i, j], 0);
    }
    let expected = Tensor::from_fn([rows, cols], |ix| {
        (at(&a, ix[0], ix[1]) + bias[[ix[1]]]).max(0.0)
    });
    check(
        "h = max(a + bias, 0)",
        h.as_slice(),
        expected.as_slice(),
        0.0,
    );

    // Reductions: every index not on the left is summed; functions apply before the sum.
    tensor! {
        let row_sums[i] = a[i, j];
        let squares[j] = powi(a[i, j], 2);
        let total = abs(a[i, j]);
    }
    let expected: Vec<f64> = (0..rows)
        .map(|i| (0..cols).map(|j| at(&a, i, j)).sum())
        .collect();
    check(
        "row_sums[i] = a[i, j]",
        row_sums.as_slice(),
        &expected,
        1e-13,
    );
    let expected: Vec<f64> = (0..cols)
        .map(|j| (0..rows).map(|i| at(&a, i, j).powi(2)).sum())
        .collect();
    check(
        "squares[j] = powi(a[i, j], 2)",
        squares.as_slice(),
        &expected,
        1e-13,
    );
    let expected: f64 = a.as_slice().iter().map(|x| x.abs()).sum();
    check("total = Σ |a|", &[total], &[expected], 1e-12);

    // A softmax along rows: a sum is taken in its own statement, then divided by.
    let logits = data(&[4, 10], 5);
    let mut probabilities = Tensor::<f64>::zeros([4, 10]);
    for row in 0..4 {
        let x = logits.view().slice_axis(0, row..row + 1);
        let p = probabilities.view_mut().slice_axis(0, row..row + 1);
        tensor! {
            let norm = exp(x[0, j]);
            p[0, j] = exp(x[0, j]) / norm;
        }
    }
    let mut expected = Vec::new();
    for row in 0..4 {
        let norm: f64 = (0..10).map(|j| logits[[row, j]].exp()).sum();
        expected.extend((0..10).map(|j| logits[[row, j]].exp() / norm));
    }
    check("softmax rows", probabilities.as_slice(), &expected, 1e-14);
}

//! A neural network layer: a dense layer with bias and ReLU over a batch, and attention scores
//! scaled by 1/√d (the scale folds into the GEMM) followed by a row-wise softmax, each checked
//! against loops.
//!
//!     cargo run --release --example 06-neural-layer

mod common;

use common::{check, data, sum_over};
use tensor_dsl::{tensor, Tensor};

fn main() {
    // y[b, o] = max(Σ_k w[o, k] x[b, k] + bias[o], 0)
    let (batch, inputs, outputs) = (32, 64, 48);
    let x = data(&[batch, inputs], 1);
    let w = data(&[outputs, inputs], 2);
    let bias = data(&[outputs], 3);
    tensor! {
        let mut y[b, o] = w[o, k] * x[b, k] + bias[o];
        y[b, o] = max(y[b, o], 0);
    }
    let expected = Tensor::from_fn([batch, outputs], |ix| {
        let (b, o) = (ix[0], ix[1]);
        (sum_over(&[inputs], |k| w[[o, k[0]]] * x[[b, k[0]]]) + bias[[o]]).max(0.0)
    });
    check(
        "dense layer with ReLU",
        y.as_slice(),
        expected.as_slice(),
        1e-12,
    );

    // Attention scores: s[h, i, j] = Σ_d q[h, i, d] k[h, j, d] / √d, then a softmax over j.
    let (heads, tokens, depth) = (4, 10, 16);
    let q = data(&[heads, tokens, depth], 4);
    let k = data(&[heads, tokens, depth], 5);
    let scale = (depth as f64).sqrt();
    tensor! {
        let scores[h, i, j] = q[h, i, d] * k[h, j, d] / scale;
        let weights[h, i, j] = exp(scores[h, i, j]);
    }
    // The normalisation sums over j for each (h, i): a statement of its own.
    let mut attention = weights.clone();
    tensor! {
        let norms[h, i] = weights[h, i, j];
        attention[h, i, j] = weights[h, i, j] / norms[h, i];
    }
    let expected = Tensor::from_fn([heads, tokens, tokens], |ix| {
        let score = |j: usize| {
            sum_over(&[depth], |d| q[[ix[0], ix[1], d[0]]] * k[[ix[0], j, d[0]]]) / scale
        };
        let norm: f64 = (0..tokens).map(|j| score(j).exp()).sum();
        score(ix[2]).exp() / norm
    });
    check(
        "attention weights",
        attention.as_slice(),
        expected.as_slice(),
        1e-12,
    );
}

//! A first look at `tensor!`: a few statements, each checked against a hand-written loop,
//! with their results and timings.
//!
//!     cargo run --release --example quickstart

use std::time::Instant;

use tensor_dsl::{tensor, Tensor};

fn filled(shape: &[usize], seed: u64) -> Tensor<f64> {
    // A small linear congruential generator: deterministic data without a dependency.
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    Tensor::from_fn(shape, |_| {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
    })
}

fn max_difference(a: &Tensor<f64>, b: &Tensor<f64>) -> f64 {
    assert_eq!(a.shape(), b.shape());
    a.as_slice()
        .iter()
        .zip(b.as_slice())
        .fold(0.0, |m, (x, y)| m.max((x - y).abs()))
}

fn report(name: &str, dsl_seconds: f64, naive_seconds: f64, difference: f64) {
    println!(
        "{name:<44} tensor! {:>9.3} ms   naive loop {:>9.3} ms   max |difference| {difference:.1e}",
        dsl_seconds * 1e3,
        naive_seconds * 1e3,
    );
    assert!(difference < 1e-9, "{name}: results differ");
}

fn main() {
    let (ni, nj, nk, nl) = (128, 128, 32, 16);
    let a = filled(&[ni, nk, nl], 1);
    let b = filled(&[nk, nj, nl], 2);

    // The seed contraction: c[i, j] = Σ_k Σ_l a[i, k, l] · b[k, j, l].
    let start = Instant::now();
    tensor! { let c[i, j] = a[i, k, l] * b[k, j, l]; }
    let dsl = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let mut naive = Tensor::<f64>::zeros([ni, nj]);
    for i in 0..ni {
        for j in 0..nj {
            let mut sum = 0.0;
            for k in 0..nk {
                for l in 0..nl {
                    sum += a[[i, k, l]] * b[[k, j, l]];
                }
            }
            naive[[i, j]] = sum;
        }
    }
    let loops = start.elapsed().as_secs_f64();
    report(
        "c[i, j] = a[i, k, l] * b[k, j, l]",
        dsl,
        loops,
        max_difference(&c, &naive),
    );
    println!("    c[0, 0..4] = {:?}", &c.as_slice()[..4]);

    // A layer: matrix product, broadcast bias, and an element-wise function, in one statement.
    let (batch, inputs, outputs) = (64, 256, 128);
    let w = filled(&[outputs, inputs], 3);
    let x = filled(&[batch, inputs], 4);
    let bias = filled(&[outputs], 5);
    let start = Instant::now();
    tensor! { let y[n, o] = w[o, k] * x[n, k] + tanh(bias[o]); }
    let dsl = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let naive = Tensor::from_fn([batch, outputs], |ix| {
        let dot: f64 = (0..inputs).map(|k| w[[ix[1], k]] * x[[ix[0], k]]).sum();
        dot + bias[[ix[1]]].tanh()
    });
    let loops = start.elapsed().as_secs_f64();
    report(
        "y[n, o] = w[o, k] * x[n, k] + tanh(bias[o])",
        dsl,
        loops,
        max_difference(&y, &naive),
    );

    // A trace, a norm, and an update of an existing tensor through a transposed view.
    let m = filled(&[300, 300], 6);
    let mut sym = filled(&[300, 300], 7);
    let sym_before = sym.clone();
    let start = Instant::now();
    tensor! {
        let trace = m[i, i];
        let frobenius2 = m[i, j] * m[i, j];
        sym[i, j] = 0.5 * sym[i, j] + 0.5 * { m.view().permuted_axes(&[1, 0]) }[i, j];
    }
    let dsl = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let naive_trace: f64 = (0..300).map(|i| m[[i, i]]).sum();
    let naive_norm: f64 = m.as_slice().iter().map(|v| v * v).sum();
    let naive_sym = Tensor::from_fn([300, 300], |ix| {
        0.5 * sym_before[[ix[0], ix[1]]] + 0.5 * m[[ix[1], ix[0]]]
    });
    let loops = start.elapsed().as_secs_f64();
    let difference = (trace - naive_trace)
        .abs()
        .max((frobenius2 - naive_norm).abs())
        .max(max_difference(&sym, &naive_sym));
    report(
        "trace, squared norm, and a transposed update",
        dsl,
        loops,
        difference,
    );
    println!(
        "    trace = {trace:.6}, ‖m‖² = {frobenius2:.6}, sym[0, 1] = {:.6}",
        sym[[0, 1]]
    );
}

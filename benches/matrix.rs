//! Matrix statements against direct `faer` calls on the same data: each `tensor!` statement
//! (`cholesky`, `solve`, `eigh`, `svd`, `qr`, `matpow`, f64, one thread) timed against the
//! `faer` call a user would write on the tensor's row-major buffer, already read as a matrix.
//! Where the statement's grouping is not contiguous, the statement permutes the operand once;
//! that row is also compared with the `faer` call plus the same permutation done by hand.
//! Prints the README's table (time ratio: tensor! ÷ faer; 1.00 is parity, below is faster).
//!
//!     cargo bench -p tensor-dsl-benches --bench matrix

use std::hint::black_box;
use std::time::Instant;

use faer::linalg::solvers::{Llt, PartialPivLu, Qr, SelfAdjointEigen, Solve, Svd};
use faer::{Mat, MatRef, Side};
use tensor_dsl::{tensor, Tensor};

fn data(shape: &[usize], seed: usize) -> Tensor<f64> {
    let mut t = 0usize;
    Tensor::from_fn(shape, |_| {
        let value = ((t * 7919 + (seed + 1) * 104_729) % 1009) as f64 / 1009.0 - 0.5;
        t += 1;
        value
    })
}

/// The best of `runs` timings of `ours` and of `faer`, in seconds, taken in turns (so that
/// the machine's slow moments fall on both), after one warm-up run of each.
fn compare(runs: usize, mut ours: impl FnMut(), mut faer: impl FnMut()) -> (f64, f64) {
    let time = |f: &mut dyn FnMut()| {
        let start = Instant::now();
        f();
        start.elapsed().as_secs_f64()
    };
    ours();
    faer();
    let (mut best_ours, mut best_faer) = (f64::INFINITY, f64::INFINITY);
    for run in 0..runs {
        // Each first on every other run: what one call leaves behind (warm caches, freed
        // memory the allocator hands out again) then favours neither.
        if run % 2 == 0 {
            best_ours = best_ours.min(time(&mut ours));
            best_faer = best_faer.min(time(&mut faer));
        } else {
            best_faer = best_faer.min(time(&mut faer));
            best_ours = best_ours.min(time(&mut ours));
        }
    }
    (best_ours, best_faer)
}

/// An n × n symmetric positive definite matrix.
fn spd(n: usize) -> Tensor<f64> {
    let m = data(&[n, n], 1);
    let id = Tensor::<f64>::eye(n);
    tensor! { let a[i, j] = m[i, k] * m[j, k] + {n as f64} * id[i, j]; }
    a
}

fn matrix(t: &Tensor<f64>, m: usize, n: usize) -> MatRef<'_, f64> {
    MatRef::from_row_major_slice(t.as_slice(), m, n)
}

struct Row {
    name: String,
    ours: f64,
    faer: f64,
}

fn main() {
    let runs = 10;
    let mut rows: Vec<Row> = Vec::new();
    let mut row = |name: &str, ours: f64, faer: f64| {
        println!(
            "{name}: tensor! {:.2} ms, faer {:.2} ms",
            ours * 1e3,
            faer * 1e3
        );
        rows.push(Row {
            name: name.to_owned(),
            ours,
            faer,
        });
    };

    let n = 1024;
    let a = spd(n);
    let (ours, faer) = compare(
        runs,
        || {
            tensor! { let l[i, j] = cholesky(a[i, j]); }
            black_box(l);
        },
        || {
            black_box(Llt::new(matrix(&a, n, n), Side::Lower).unwrap());
        },
    );
    row("cholesky 1024²", ours, faer);

    let b = data(&[n, 64], 2);
    let (ours, faer) = compare(
        runs,
        || {
            tensor! { let x[j, r] = solve(a[i, j], b[i, r]); }
            black_box(x);
        },
        || {
            let lu = PartialPivLu::new(matrix(&a, n, n));
            black_box(lu.solve(matrix(&b, n, 64)));
        },
    );
    row("solve 1024², 64 right-hand sides", ours, faer);

    let m = 512;
    let h = spd(m);
    let (ours, faer) = compare(
        runs,
        || {
            tensor! { let (w[s], v[i, s]) = eigh(h[i, j]); }
            black_box((w, v));
        },
        || {
            black_box(SelfAdjointEigen::new(matrix(&h, m, m), Side::Lower).unwrap());
        },
    );
    row("eigh 512²", ours, faer);

    let t = data(&[m, m], 3);
    let (ours, faer) = compare(
        runs,
        || {
            tensor! { let (u[i, s], sv[s], vt[s, j]) = svd(t[i, j]); }
            black_box((u, sv, vt));
        },
        || {
            black_box(Svd::new_thin(matrix(&t, m, m)).unwrap());
        },
    );
    row("svd 512²", ours, faer);

    // The tensor-network case: rows (i, j) × columns (k, l), contiguous, cut to 64.
    let t4 = data(&[16, 32, 32, 16], 4);
    let (ours, faer) = compare(
        runs,
        || {
            tensor! {
                let (u[i, j, s], sv[s], vt[s, k, l]) = svd(t4[i, j, k, l], max_rank = 64);
            }
            black_box((u, sv, vt));
        },
        || {
            let svd = Svd::new_thin(matrix(&t4, m, m)).unwrap();
            black_box(svd.U().subcols(0, 64).to_owned());
            black_box(svd.V().subcols(0, 64).to_owned());
        },
    );
    row(
        "svd of t[i, j, k, l] as (i, j) × (k, l), 512², cut to 64",
        ours,
        faer,
    );

    // Rows (i, k) × columns (j, l): the statement permutes t once.
    let (ours, faer_alone) = compare(
        runs,
        || {
            tensor! { let (u[i, k, s], sv[s], vt[s, j, l]) = svd(t4[i, j, k, l]); }
            black_box((u, sv, vt));
        },
        || {
            black_box(Svd::new_thin(matrix(&t4, m, m)).unwrap());
        },
    );
    let (ours_again, permuted) = compare(
        runs,
        || {
            tensor! { let (u[i, k, s], sv[s], vt[s, j, l]) = svd(t4[i, j, k, l]); }
            black_box((u, sv, vt));
        },
        || {
            let p = t4.view().permuted_axes(&[0, 2, 1, 3]).to_tensor();
            black_box(Svd::new_thin(matrix(&p, m, m)).unwrap());
        },
    );
    row(
        "svd of t[i, j, k, l] as (i, k) × (j, l), 512² (one permutation)",
        ours,
        faer_alone,
    );
    row(
        "  the same, against faer plus the permutation by hand",
        ours_again,
        permuted,
    );

    let (tall, wide) = (1024, 256);
    let q_in = data(&[tall, wide], 5);
    let (ours, faer) = compare(
        runs,
        || {
            tensor! { let (q[i, s], r[s, j]) = qr(q_in[i, j]); }
            black_box((q, r));
        },
        || {
            let qr = Qr::new(matrix(&q_in, tall, wide));
            black_box(qr.compute_thin_Q());
            black_box(qr.thin_R().to_owned());
        },
    );
    row("qr 1024 × 256", ours, faer);

    let p_in = data(&[m, m], 6);
    let (ours, faer) = compare(
        runs,
        || {
            tensor! { let p[i, j] = matpow(p_in[i, j], 8); }
            black_box(p);
        },
        || {
            let mut power: Mat<f64> = matrix(&p_in, m, m).to_owned();
            for _ in 0..3 {
                power = &power * &power;
            }
            black_box(power);
        },
    );
    row("matpow 512², power 8", ours, faer);

    println!("\n| operation (f64, one thread) | tensor! | faer | ratio |");
    println!("| --- | --- | --- | --- |");
    for row in &rows {
        println!(
            "| {} | {:.2} ms | {:.2} ms | {:.2} |",
            row.name,
            row.ours * 1e3,
            row.faer * 1e3,
            row.ours / row.faer
        );
    }
}

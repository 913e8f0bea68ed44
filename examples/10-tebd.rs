//! Imaginary-time TEBD on a matrix product state: the ground state of an open Heisenberg
//! chain of eight spins ½. Each step applies a two-site gate e^(−τh) to a bond and cuts the
//! result back to bond dimension χ with a truncated `svd`, all in `tensor!` statements; the
//! gate itself comes from `eigh` of the bond Hamiltonian. The state's norm and energy are
//! checked against the dense 256 × 256 Hamiltonian, whose lowest eigenvalue (`eigh` again) is
//! the exact ground-state energy.
//!
//!     cargo run --release --example 10-tebd

use tensor_dsl::{tensor, Tensor};

const SITES: usize = 8;

/// The bond Hamiltonian S·S of two spins ½, as h[s, t, u, x] = ⟨s t| h |u x⟩ (0 is up).
fn bond_hamiltonian() -> Tensor<f64> {
    Tensor::from_fn([2, 2, 2, 2], |ix| {
        let (s, t, u, x) = (ix[0], ix[1], ix[2], ix[3]);
        let zz = if (s, t) == (u, x) {
            if s == t {
                0.25
            } else {
                -0.25
            }
        } else {
            0.0
        };
        // (S⁺S⁻ + S⁻S⁺)/2 swaps an up and a down spin.
        let flip = if s != t && (s, t) == (x, u) { 0.5 } else { 0.0 };
        zz + flip
    })
}

/// The chain's Hamiltonian Σₖ hₖ,ₖ₊₁ as a dense matrix over the 2⁸ basis states (site 0 the
/// most significant bit, as the state vector below is laid out).
fn dense_hamiltonian(h: &Tensor<f64>) -> Tensor<f64> {
    let n = 1 << SITES;
    let bit = |state: usize, site: usize| (state >> (SITES - 1 - site)) & 1;
    Tensor::from_fn([n, n], |ix| {
        let (i, j) = (ix[0], ix[1]);
        let mut total = 0.0;
        for k in 0..SITES - 1 {
            let others = !((1 << (SITES - 1 - k)) | (1 << (SITES - 2 - k)));
            if i & others == j & others {
                total += h[[bit(i, k), bit(i, k + 1), bit(j, k), bit(j, k + 1)]];
            }
        }
        total
    })
}

/// The MPS contracted into its state vector ψ[p], p running over the 2⁸ basis states.
fn state_vector(mps: &[Tensor<f64>]) -> Tensor<f64> {
    let first = &mps[0];
    let mut psi = first
        .view()
        .reshape([first.shape()[1], first.shape()[2]])
        .unwrap()
        .to_tensor();
    for a in &mps[1..] {
        tensor! { let next[p, t, b] = psi[p, c] * a[c, t, b]; }
        let (rows, bond) = (next.shape()[0] * 2, next.shape()[2]);
        psi = next.into_shape([rows, bond]).unwrap();
    }
    let n = psi.len();
    psi.into_shape([n]).unwrap()
}

/// One sweep of gates over every bond, left to right, then right to left, cutting each bond
/// to at most `chi` singular values; the orthogonality center moves with the gates. Returns
/// the largest truncation error of the sweep.
fn sweep(mps: &mut [Tensor<f64>], gate: &Tensor<f64>, chi: usize) -> f64 {
    let mut worst = 0.0f64;
    let bonds: Vec<(usize, bool)> = (0..SITES - 1)
        .map(|k| (k, true))
        .chain((0..SITES - 1).rev().map(|k| (k, false)))
        .collect();
    for (k, rightwards) in bonds {
        let (left, right) = (&mps[k], &mps[k + 1]);
        tensor! {
            let theta[a, s, t, b] = gate[s, t, u, x] * left[a, u, c] * right[c, x, b];
            let (u[a, s, e], sv[e], vt[e, t, b], error) = svd(theta[a, s, t, b], max_rank = chi);
            let norm2 = sv[e] * sv[e];
        }
        worst = worst.max(error);
        let norm = norm2.sqrt();
        // The center tensor takes the singular values and the norm; the other stays an isometry.
        if rightwards {
            tensor! { let next[e, t, b] = sv[e] * vt[e, t, b] / {norm}; }
            (mps[k], mps[k + 1]) = (u, next);
        } else {
            tensor! { let next[a, s, e] = u[a, s, e] * sv[e] / {norm}; }
            (mps[k], mps[k + 1]) = (next, vt);
        }
    }
    worst
}

fn main() {
    let h = bond_hamiltonian();
    let dense = dense_hamiltonian(&h);
    tensor! { let (levels[e], _states[p, e]) = eigh(dense[p, q]); }
    let exact = levels.as_slice()[0];

    // The Néel state |↑↓↑↓…⟩: bond dimension 1.
    let mut mps: Vec<Tensor<f64>> = (0..SITES)
        .map(|k| Tensor::from_fn([1, 2, 1], |ix| if ix[1] == k % 2 { 1.0 } else { 0.0 }))
        .collect();
    let chi = 8;
    let mut energy = f64::NAN;
    for (tau, sweeps) in [(0.1, 60), (0.03, 60), (0.01, 60)] {
        // e^(−τh) from the eigen decomposition of h as the (s, t) × (u, x) matrix.
        tensor! {
            let (w[e], v[s, t, e]) = eigh(h[s, t, u, x]);
            let gate[s, t, u, x] = v[s, t, e] * exp({-tau} * w[e]) * v[u, x, e];
        }
        let mut truncation = 0.0f64;
        for _ in 0..sweeps {
            truncation = truncation.max(sweep(&mut mps, &gate, chi));
        }
        let psi = state_vector(&mps);
        tensor! {
            let norm2 = psi[p] * psi[p];
            let e = psi[p] * dense[p, q] * psi[q];
        }
        energy = e / norm2;
        println!(
            "τ = {tau}: energy {energy:.8} (exact {exact:.8}), norm² {norm2:.15}, largest truncation error {truncation:.1e}"
        );
        assert!(
            (norm2 - 1.0).abs() < 1e-12,
            "the sweeps keep the state normalized"
        );
        assert!(
            energy >= exact - 1e-10,
            "no state lies below the ground state"
        );
    }
    let bonds: Vec<usize> = mps.iter().map(|a| a.shape()[2]).collect();
    println!("bond dimensions {bonds:?}");
    assert!(
        (energy - exact).abs() < 1e-5 * exact.abs(),
        "TEBD at χ = 8 reaches the ground-state energy: {energy} vs {exact}"
    );

    // A smaller χ loses weight at the middle bond, and the truncation error says how much once
    // the orthogonality center is there: QR steps move it from site 0 to site 3.
    let mut cut = mps.clone();
    for k in 0..3 {
        let (site, next) = (&cut[k], &cut[k + 1]);
        tensor! {
            let (q[a, s, e], r[e, c]) = qr(site[a, s, c]);
            let moved[e, t, b] = r[e, c] * next[c, t, b];
        }
        (cut[k], cut[k + 1]) = (q, moved);
    }
    let (left, right) = (&cut[3], &cut[4]);
    tensor! {
        let theta[a, s, t, b] = left[a, s, c] * right[c, t, b];
        let (u4[a, s, e], sv4[e], vt4[e, t, b], lost) = svd(theta[a, s, t, b], max_rank = 4);
        let kept = sv4[e] * sv4[e];
    }
    println!("χ = 4 at the middle bond keeps weight {kept:.6}, truncation error {lost:.2e}");
    assert!((kept + lost - 1.0).abs() < 1e-12);
    tensor! { let left4[a, s, e] = u4[a, s, e] * sv4[e]; }
    (cut[3], cut[4]) = (left4, vt4);
    let psi = state_vector(&cut);
    tensor! { let norm2 = psi[p] * psi[p]; }
    println!("the cut state's norm² is {norm2:.6}: 1 − truncation error");
    assert!((norm2 - (1.0 - lost)).abs() < 1e-12);
}

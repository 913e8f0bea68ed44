//! Quantum chemistry: the four-index transformation of two-electron integrals from atomic to
//! molecular orbitals, written as one statement and contracted pairwise in the planner's order,
//! and a coupled-cluster-like doubles residual with particle-particle, hole-hole and Fock
//! terms, each checked against loops.
//!
//!     cargo run --release --example 05-quantum-chemistry

mod common;

use common::{check, data, sum_over};
use tensor_dsl::{tensor, Tensor};

fn main() {
    // (ij|kl) = Σ_pqrs C[p, i] C[q, j] C[r, k] C[s, l] (pq|rs), n basis functions.
    let n = 12;
    let g = data(&[n, n, n, n], 1);
    let coefficients = data(&[n, n], 2);
    tensor! {
        let mo[i, j, k, l] = coefficients[p, i] * coefficients[q, j] * coefficients[r, k]
            * coefficients[s, l] * g[p, q, r, s];
    }
    // The reference transforms one index at a time (n⁵ work per step).
    let c = &coefficients;
    let step1 = Tensor::from_fn([n, n, n, n], |x| {
        sum_over(&[n], |p| c[[p[0], x[0]]] * g[[p[0], x[1], x[2], x[3]]])
    });
    let step2 = Tensor::from_fn([n, n, n, n], |x| {
        sum_over(&[n], |q| c[[q[0], x[1]]] * step1[[x[0], q[0], x[2], x[3]]])
    });
    let step3 = Tensor::from_fn([n, n, n, n], |x| {
        sum_over(&[n], |r| c[[r[0], x[2]]] * step2[[x[0], x[1], r[0], x[3]]])
    });
    let expected = Tensor::from_fn([n, n, n, n], |x| {
        sum_over(&[n], |s| c[[s[0], x[3]]] * step3[[x[0], x[1], x[2], s[0]]])
    });
    check(
        "four-index transform (ij|kl)",
        mo.as_slice(),
        expected.as_slice(),
        1e-12,
    );

    // A doubles residual: R[i, j, a, b] = ½ Σ_cd V[a, b, c, d] T[i, j, c, d]
    //   + ½ Σ_kl W[k, l, i, j] T[k, l, a, b] + Σ_c F[b, c] T[i, j, a, c] − Σ_k F'[k, j] T[i, k, a, b].
    let (occupied, virtual_) = (4, 8);
    let (o, v) = (occupied, virtual_);
    let vvvv = data(&[v, v, v, v], 3);
    let oooo = data(&[o, o, o, o], 4);
    let fock_vv = data(&[v, v], 5);
    let fock_oo = data(&[o, o], 6);
    let t2 = data(&[o, o, v, v], 7);
    tensor! {
        let residual[i, j, a, b] = 0.5 * vvvv[a, b, c, d] * t2[i, j, c, d]
            + 0.5 * oooo[k, l, i, j] * t2[k, l, a, b]
            + fock_vv[b, c] * t2[i, j, a, c]
            - fock_oo[k, j] * t2[i, k, a, b];
    }
    let expected = Tensor::from_fn([o, o, v, v], |x| {
        let (i, j, a, b) = (x[0], x[1], x[2], x[3]);
        0.5 * sum_over(&[v, v], |r| {
            vvvv[[a, b, r[0], r[1]]] * t2[[i, j, r[0], r[1]]]
        }) + 0.5
            * sum_over(&[o, o], |r| {
                oooo[[r[0], r[1], i, j]] * t2[[r[0], r[1], a, b]]
            })
            + sum_over(&[v], |r| fock_vv[[b, r[0]]] * t2[[i, j, a, r[0]]])
            - sum_over(&[o], |r| fock_oo[[r[0], j]] * t2[[i, r[0], a, b]])
    });
    check(
        "coupled-cluster doubles residual",
        residual.as_slice(),
        expected.as_slice(),
        1e-12,
    );
}

//! A tensor network: a matrix product state of six sites, contracted into its full state
//! vector in one statement of six factors (the pairwise order is planned from the extents),
//! and its norm computed site by site with transfer matrices, which never builds that vector.
//! The two must agree; the order's cost is printed by `tensor-dsl explain`.
//!
//!     cargo run --release --example 07-tensor-network

mod common;

use common::{check, data};
use tensor_dsl::tensor;

fn main() {
    let (physical, bond) = (3, 5);
    let first = data(&[physical, bond], 1);
    let a2 = data(&[bond, physical, bond], 2);
    let a3 = data(&[bond, physical, bond], 3);
    let a4 = data(&[bond, physical, bond], 4);
    let a5 = data(&[bond, physical, bond], 5);
    let last = data(&[bond, physical], 6);

    // ψ[s1, …, s6]: six factors, contracted pairwise through temporaries.
    tensor! {
        let psi[s1, s2, s3, s4, s5, s6] = first[s1, a] * a2[a, s2, b] * a3[b, s3, c]
            * a4[c, s4, d] * a5[d, s5, e] * last[e, s6];
    }
    // The same amplitude by a loop over every bond index, for a few configurations.
    let amplitude = |s: [usize; 6]| {
        let mut total = 0.0;
        for a in 0..bond {
            for b in 0..bond {
                for c in 0..bond {
                    for d in 0..bond {
                        for e in 0..bond {
                            total += first[[s[0], a]]
                                * a2[[a, s[1], b]]
                                * a3[[b, s[2], c]]
                                * a4[[c, s[3], d]]
                                * a5[[d, s[4], e]]
                                * last[[e, s[5]]];
                        }
                    }
                }
            }
        }
        total
    };
    let configurations = [[0, 0, 0, 0, 0, 0], [2, 1, 0, 2, 1, 0], [1, 2, 2, 0, 1, 2]];
    let got: Vec<f64> = configurations.iter().map(|&s| psi[s]).collect();
    let expected: Vec<f64> = configurations.iter().map(|&s| amplitude(s)).collect();
    check("amplitudes of the contracted state", &got, &expected, 1e-12);

    // ⟨ψ|ψ⟩ by transfer matrices: each step contracts one site of the ket and of the bra.
    tensor! {
        let e1[a, x] = first[s, a] * first[s, x];
        let e2[b, y] = e1[a, x] * a2[a, s, b] * a2[x, s, y];
        let e3[c, z] = e2[b, y] * a3[b, s, c] * a3[y, s, z];
        let e4[d, w] = e3[c, z] * a4[c, s, d] * a4[z, s, w];
        let e5[e, v] = e4[d, w] * a5[d, s, e] * a5[w, s, v];
        let norm2 = e5[e, v] * last[e, s] * last[v, s];
        let direct = psi[s1, s2, s3, s4, s5, s6] * psi[s1, s2, s3, s4, s5, s6];
    }
    check(
        "norm by transfer matrices = norm of the vector",
        &[norm2],
        &[direct],
        1e-12,
    );
}

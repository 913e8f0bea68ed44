//! Every kernel path past its threading threshold, under 1, 2 and 4 threads, against naive
//! loops: split loop nests (point-wise, summing, scalar), point-wise runs split into parts,
//! transposes in cached bricks, GEMMs split by batch and by rows, networks, strided views and
//! fixed positions as targets.

use tensor_dsl::{tensor, Tensor};
#[path = "../../tests/common/mod.rs"]
mod common;

use common::{assert_close, data};
use tensor_dsl_soundness::{in_pools, matmul};

#[test]
fn loop_nests_split_along_target_loops() {
    in_pools(|threads| {
        let (m, n) = (300, 517);
        let a = data::<f64>(&[m, n], threads);
        let b = data::<f64>(&[n], 1);
        let mut c = data::<f64>(&[m, n], 2);
        let before = c.clone();
        tensor! { c[i, j] += a[i, j] * b[j] - 1; }
        let expected = Tensor::from_fn([m, n], |ix| {
            before[[ix[0], ix[1]]] + a[[ix[0], ix[1]]] * b[[ix[1]]] - 1.0
        });
        assert_close(&c, &expected, 1e-12);

        tensor! { let rows[i] = a[i, j] * a[i, j]; }
        let expected = Tensor::from_fn([m], |ix| (0..n).map(|j| a[[ix[0], j]].powi(2)).sum());
        assert_close(&rows, &expected, 1e-12);

        tensor! { let total = a[i, j]; }
        let expected: f64 = a.as_slice().iter().sum();
        assert!((total - expected).abs() < 1e-9, "{total} vs {expected}");
    });
}

/// Point-wise statements whose every tensor has the target's indices in its order, read as
/// runs and shared between threads in parts (`exec::pointwise`): an owned target, and a view
/// target read in place.
#[test]
fn point_wise_runs_split_into_parts() {
    in_pools(|threads| {
        let (m, n) = (301, 307);
        let a = data::<f64>(&[m, n], threads);
        let b = data::<f64>(&[m, n], 1);
        let mut c = data::<f64>(&[m, n], 2);
        let before = c.clone();
        tensor! { c[i, j] = 2 * c[i, j] + a[i, j] * b[i, j]; }
        let expected = Tensor::from_fn([m, n], |ix| {
            2.0 * before[[ix[0], ix[1]]] + a[[ix[0], ix[1]]] * b[[ix[0], ix[1]]]
        });
        assert_close(&c, &expected, 0.0);
        let v = c.view_mut();
        tensor! { v[i, j] = v[i, j] - a[i, j]; }
        let expected = Tensor::from_fn([m, n], |ix| expected[[ix[0], ix[1]]] - a[[ix[0], ix[1]]]);
        assert_close(&c, &expected, 0.0);
    });
}

#[test]
fn strided_targets() {
    in_pools(|threads| {
        let n = 600;
        let a = data::<f32>(&[n, n], threads);
        let mut storage = Tensor::<f32>::zeros([n, 2 * n]);
        let v = storage
            .view_mut()
            .slice_axis(1, n..2 * n)
            .permuted_axes(&[1, 0]);
        tensor! { v[i, j] = a[i, j]; }
        for (i, j) in [(0, 0), (3, 599), (599, 1), (17, 400)] {
            assert_eq!(storage[[j, n + i]], a[[i, j]]);
        }
        // Write a column through a fixed position: one strided target loop.
        let mut square = data::<f32>(&[n, n], 3);
        let before = square.clone();
        let column = square.view_mut().slice_axis(0, 1..n);
        let rows = a.view().slice_axis(0, 0..n - 1);
        tensor! { column[i, 0] += rows[i, j]; }
        for i in [0, 1, 298, 598] {
            let sum: f64 = (0..n).map(|j| f64::from(a[[i, j]])).sum();
            let expected = f64::from(before[[i + 1, 0]]) + sum;
            assert!((f64::from(square[[i + 1, 0]]) - expected).abs() < 1e-3);
            assert_eq!(square[[i + 1, 1]], before[[i + 1, 1]]);
        }
    });
}

/// A permutation stored the cached way whose tiles' target rows lie a whole number of pages
/// apart, moved in bricks of tiles along the loop outside them (`exec::transpose::brick`),
/// the nest split between threads.
#[test]
fn transposes_in_cached_bricks() {
    in_pools(|threads| {
        let a = data::<f32>(&[64, 64, 69], threads);
        let mut c = Tensor::<f32>::zeros([69, 64, 64]);
        tensor! { c[k, j, i] = a[i, j, k]; }
        let expected = Tensor::from_fn([69, 64, 64], |ix| f64::from(a[[ix[2], ix[1], ix[0]]]));
        assert_close(&c, &expected, 0.0);
    });
}

#[test]
fn gemms_split_by_batch_and_by_rows() {
    in_pools(|threads| {
        let (batch, m, k, n) = (6, 130, 70, 90);
        let a = data::<f64>(&[batch, m, k], threads);
        let b = data::<f64>(&[batch, k, n], 1);
        tensor! { let c[z, i, j] = a[z, i, p] * b[z, p, j]; }
        for z in 0..batch {
            let slice = |t: &Tensor<f64>, rows: usize, cols: usize| {
                Tensor::from_fn([rows, cols], |ix| t[[z, ix[0], ix[1]]])
            };
            let expected = matmul(&slice(&a, m, k), &slice(&b, k, n));
            let got = slice(&c, m, n);
            assert_close(&got, &expected, 1e-12);
        }
        let a = data::<f32>(&[300, 200], threads);
        let b = data::<f32>(&[200, 180], 2);
        tensor! { let c[i, j] = a[i, p] * b[p, j]; }
        assert_close(&c, &matmul(&a, &b), 1e-5);
    });
}

#[test]
fn networks_of_three_factors() {
    in_pools(|threads| {
        let n = 80;
        let a = data::<f64>(&[n, n], threads);
        let b = data::<f64>(&[n, n], 1);
        let x = data::<f64>(&[n, n], 2);
        tensor! { let c[i, j] = a[i, k] * b[k, l] * x[l, j]; }
        let ab = matmul(&a, &b);
        let expected = matmul(&Tensor::from_shape_vec([n, n], ab.into_vec()).unwrap(), &x);
        assert_close(&c, &expected, 1e-10);
    });
}

//! The matrix operations under every grouping: random ranks (2 to 5), extents (0 to 3), splits
//! of the axes into rows and columns in any order, and result axis orders, through the public
//! `tensor_dsl::matrix` functions the statements call. Each factorization is checked by what
//! defines it, element by element against naive loops over the grouped matrix.

mod common;

use proptest::prelude::*;
use tensor_dsl::matrix::{cholesky, eigh, qr, svd, Grouped, Truncation};
use tensor_dsl::Tensor;

const NAMES: [&str; 6] = ["a", "b", "c", "d", "e", "f"];

fn grouped<'a>(
    function: &'static str,
    rank: usize,
    rows: &'a [usize],
    cols: &'a [usize],
) -> Grouped<'a> {
    Grouped {
        function,
        tensor: "t",
        text: "t[..]",
        indices: &NAMES[..rank],
        rows,
        cols,
    }
}

/// Every multi-index of `extents`, row-major.
fn multi_indices(extents: &[usize]) -> Vec<Vec<usize>> {
    let mut all = vec![vec![]];
    for &extent in extents {
        all = all
            .into_iter()
            .flat_map(|prefix| {
                (0..extent).map(move |k| {
                    let mut next = prefix.clone();
                    next.push(k);
                    next
                })
            })
            .collect();
    }
    all
}

/// The (rows × columns) matrix of `t`, row-major, each group's multi-index in its list's order.
fn matrix_of(t: &Tensor<f64>, rows: &[usize], cols: &[usize]) -> (usize, usize, Vec<f64>) {
    let extents = |axes: &[usize]| -> Vec<usize> { axes.iter().map(|&a| t.shape()[a]).collect() };
    let (row_points, col_points) = (multi_indices(&extents(rows)), multi_indices(&extents(cols)));
    let mut data = Vec::new();
    for r in &row_points {
        for c in &col_points {
            let mut index = vec![0; t.ndim()];
            for (&axis, &k) in rows.iter().zip(r).chain(cols.iter().zip(c)) {
                index[axis] = k;
            }
            data.push(*t.get(&index).unwrap());
        }
    }
    (row_points.len(), col_points.len(), data)
}

/// A factor as a matrix: its axes are (`left` group, `right` group) permuted by `order`.
fn factor_matrix(
    factor: &Tensor<f64>,
    left: &[usize],
    right: &[usize],
    order: &[usize],
) -> (usize, usize, Vec<f64>) {
    // Source axis q of (left, right) is the factor's axis where `order` names it.
    let axis_of = |source: usize| order.iter().position(|&q| q == source).unwrap();
    let rows: Vec<usize> = (0..left.len()).map(axis_of).collect();
    let cols: Vec<usize> = (left.len()..left.len() + right.len())
        .map(axis_of)
        .collect();
    matrix_of(factor, &rows, &cols)
}

/// A random shape, split into rows and columns in random orders.
fn grouping() -> impl Strategy<Value = (Vec<usize>, Vec<usize>, Vec<usize>)> {
    (2usize..=5)
        .prop_flat_map(|rank| {
            (
                proptest::collection::vec(0usize..=3, rank),
                Just((0..rank).collect::<Vec<usize>>()).prop_shuffle(),
                1..rank,
            )
        })
        .prop_map(|(shape, axes, split)| (shape, axes[..split].to_vec(), axes[split..].to_vec()))
}

fn data(shape: &[usize], seed: usize) -> Tensor<f64> {
    common::data::<f64>(shape, seed)
}

fn permutation(n: usize) -> impl Strategy<Value = Vec<usize>> {
    Just((0..n).collect::<Vec<usize>>()).prop_shuffle()
}

fn close(x: f64, y: f64) -> bool {
    (x - y).abs() < 1e-10
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn svd_reconstructs_under_any_grouping(
        ((shape, rows, cols), orders) in grouping().prop_flat_map(|g| {
            let (r, c) = (g.1.len() + 1, g.2.len() + 1);
            (Just(g), (permutation(r), permutation(c)))
        }),
        max_rank in proptest::option::of(1usize..4),
    ) {
        let (u_order, vt_order) = orders;
        let t = data(&shape, 1);
        let truncation = Truncation { max_rank, cutoff: None };
        let (u, sv, vt, error) = svd(&t, grouped("svd", shape.len(), &rows, &cols), &u_order, &vt_order, truncation).unwrap();
        let (m, n, a) = matrix_of(&t, &rows, &cols);
        let kept = sv.len();
        prop_assert_eq!(kept, m.min(n).min(max_rank.unwrap_or(usize::MAX)));
        let (um, uk, u) = factor_matrix(&u, &(0..rows.len()).collect::<Vec<_>>(), &[rows.len()], &u_order);
        let (vk, vn, vt) = factor_matrix(&vt, &[0], &(1..=cols.len()).collect::<Vec<_>>(), &vt_order);
        prop_assert_eq!((um, uk, vk, vn), (m, kept, kept, n));
        let sv = sv.as_slice();
        prop_assert!(sv.windows(2).all(|pair| pair[0] >= pair[1]));
        // U Σ Vᴴ is A less the discarded weight, which `error` reports.
        let mut residual = 0.0;
        let total: f64 = a.iter().map(|x| x * x).sum();
        for r in 0..m {
            for c in 0..n {
                let x: f64 = (0..kept).map(|s| u[r * kept + s] * sv[s] * vt[s * n + c]).sum();
                residual += (a[r * n + c] - x).powi(2);
            }
        }
        if kept == m.min(n) {
            prop_assert!(residual < 1e-18 * total.max(1.0));
        }
        if total > 0.0 {
            prop_assert!(close(residual / total, error), "{} vs {}", residual / total, error);
        }
        for s in 0..kept {
            for p in 0..kept {
                let dot: f64 = (0..m).map(|r| u[r * kept + s] * u[r * kept + p]).sum();
                let expected = if s == p { 1.0 } else { 0.0 };
                prop_assert!(close(dot, expected), "UᵀU[{}, {}] = {}", s, p, dot);
            }
        }
    }

    #[test]
    fn qr_reconstructs_under_any_grouping(
        ((shape, rows, cols), orders) in grouping().prop_flat_map(|g| {
            let (r, c) = (g.1.len() + 1, g.2.len() + 1);
            (Just(g), (permutation(r), permutation(c)))
        }),
    ) {
        let (q_order, r_order) = orders;
        let t = data(&shape, 2);
        let (q, r) = qr(&t, grouped("qr", shape.len(), &rows, &cols), &q_order, &r_order).unwrap();
        let (m, n, a) = matrix_of(&t, &rows, &cols);
        let k = m.min(n);
        let (_, _, q) = factor_matrix(&q, &(0..rows.len()).collect::<Vec<_>>(), &[rows.len()], &q_order);
        let (_, _, r) = factor_matrix(&r, &[0], &(1..=cols.len()).collect::<Vec<_>>(), &r_order);
        for row in 0..m {
            for col in 0..n {
                let x: f64 = (0..k).map(|s| q[row * k + s] * r[s * n + col]).sum();
                prop_assert!(close(x, a[row * n + col]));
            }
        }
        for s in 0..k {
            for col in 0..s.min(n) {
                prop_assert_eq!(r[s * n + col], 0.0);
            }
        }
    }

    #[test]
    fn eigh_and_cholesky_under_any_grouping(
        (extents, row_order, col_order, v_order, l_order) in (1usize..=3).prop_flat_map(|half| (
            proptest::collection::vec(0usize..=3, half),
            permutation(half),
            permutation(half),
            permutation(half + 1),
            permutation(2 * half),
        )),
        interleave in any::<bool>(),
    ) {
        // A tensor whose (rows, columns) matrix is symmetric positive definite: rows are axes
        // `rows`, columns `cols`, each group holding `extents` in its own order.
        let half = extents.len();
        let (rows, cols): (Vec<usize>, Vec<usize>) = if interleave {
            ((0..half).map(|k| 2 * k).collect(), (0..half).map(|k| 2 * k + 1).collect())
        } else {
            ((0..half).collect(), (half..2 * half).collect())
        };
        let rows: Vec<usize> = row_order.iter().map(|&k| rows[k]).collect();
        let cols: Vec<usize> = col_order.iter().map(|&k| cols[k]).collect();
        let mut shape = vec![0; 2 * half];
        for k in 0..half {
            shape[rows[k]] = extents[k];
            shape[cols[k]] = extents[k];
        }
        let size: usize = extents.iter().product();
        let m = data(&[size, size], 3);
        let spd = |r: usize, c: usize| -> f64 {
            (0..size).map(|k| m.get(&[r, k]).unwrap() * m.get(&[c, k]).unwrap()).sum::<f64>()
                + if r == c { size as f64 } else { 0.0 }
        };
        let points = multi_indices(&extents);
        let t = Tensor::from_fn(&shape[..], |index| {
            let find = |axes: &[usize]| {
                let key: Vec<usize> = axes.iter().map(|&a| index[a]).collect();
                points.iter().position(|p| *p == key).unwrap()
            };
            spd(find(&rows), find(&cols))
        });
        let (_, _, a) = matrix_of(&t, &rows, &cols);

        let (w, v) = eigh(&t, grouped("eigh", shape.len(), &rows, &cols), &v_order).unwrap();
        let (_, _, v) = factor_matrix(&v, &(0..half).collect::<Vec<_>>(), &[half], &v_order);
        let w = w.as_slice();
        prop_assert!(w.windows(2).all(|pair| pair[0] <= pair[1]));
        for r in 0..size {
            for s in 0..size {
                let hv: f64 = (0..size).map(|c| a[r * size + c] * v[c * size + s]).sum();
                prop_assert!((hv - v[r * size + s] * w[s]).abs() < 1e-9);
            }
        }

        let l = cholesky(&t, grouped("cholesky", shape.len(), &rows, &cols), &l_order).unwrap();
        let (_, _, l) = factor_matrix(&l, &(0..half).collect::<Vec<_>>(), &(half..2 * half).collect::<Vec<_>>(), &l_order);
        for r in 0..size {
            for c in 0..size {
                let llt: f64 = (0..size).map(|k| l[r * size + k] * l[c * size + k]).sum();
                prop_assert!((llt - a[r * size + c]).abs() < 1e-9);
                if c > r {
                    prop_assert_eq!(l[r * size + c], 0.0);
                }
            }
        }
    }
}

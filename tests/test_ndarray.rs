//! ndarray arrays as operands and targets (feature `ndarray`), end to end against naive loops:
//! C and Fortran order, negative and stepped slices, broadcast views, mutable views, shared
//! arrays, dynamic rank, and conversions.
#![cfg(feature = "ndarray")]

mod common;

use common::{assert_close, reference, sum_over};
use ndarray::{s, ArcArray2, Array, Array2, ArrayD, IxDyn, ShapeBuilder};
use tensor_dsl::{tensor, Tensor};

fn filled(rows: usize, cols: usize, seed: usize) -> Array2<f64> {
    Array2::from_shape_fn((rows, cols), |(i, j)| {
        ((i * 7 + j * 3 + seed) % 11) as f64 - 5.0
    })
}

#[test]
fn any_layout_reads_as_its_elements() {
    let a = filled(7, 5, 0);
    let fortran = {
        let mut f = Array2::<f64>::zeros((5, 13).f());
        f.assign(&filled(5, 13, 1));
        f
    };
    let reversed = filled(7, 5, 2);
    let reversed = reversed.slice(s![..;-1, ..;-2]); // 7 × 3, negative strides
    let row = ndarray::arr1(&[1.0, 2.0, 3.0]);
    let broadcast = row.broadcast((7, 3)).unwrap(); // stride 0 along rows
    tensor! {
        let c[i, j] = a[i, k] * fortran[k, j];
        let d[i, j] = reversed[i, j] + 2 * broadcast[i, j];
    }
    let expected = reference(&[7, 13], |ix| {
        sum_over(&[5], |r| a[[ix[0], r[0]]] * fortran[[r[0], ix[1]]])
    });
    assert_close(&c, &expected, 1e-12);
    let expected = reference(&[7, 3], |ix| {
        reversed[[ix[0], ix[1]]] + 2.0 * broadcast[[ix[0], ix[1]]]
    });
    assert_close(&d, &expected, 1e-12);
}

/// β = 0 does not read an array target either (point-wise, and beside a GEMM).
#[test]
fn beta_zero_does_not_read_an_array_target() {
    let (a, b) = (filled(40, 36, 0), filled(36, 33, 1));
    let beta = 0.0;
    let mut c = Array2::<f64>::from_elem((40, 33), f64::NAN);
    let mut d = Array2::<f64>::from_elem((40, 36), f64::NAN);
    tensor! {
        c[i, j] = beta * c[i, j] + a[i, k] * b[k, j] + 1;
        d[i, j] = beta * d[i, j] + a[i, j] * a[i, j];
    }
    let expected = reference(&[40, 33], |ix| {
        sum_over(&[36], |r| a[[ix[0], r[0]]] * b[[r[0], ix[1]]]) + 1.0
    });
    let c = Tensor::from_shape_vec([40, 33], c.iter().copied().collect()).unwrap();
    assert_close(&c, &expected, 1e-12);
    assert!(d.iter().zip(&a).all(|(&d, &a)| d == a * a));
}

#[test]
fn arrays_and_views_are_targets() {
    let a = filled(4, 6, 0);
    let mut out = Array2::<f64>::from_elem((6, 8), f64::NAN);
    {
        // A mutable, stepped and transposed view of part of `out`.
        let mut window = out.slice_mut(s![.., ..;2]);
        window.swap_axes(0, 1); // 4 × 6
        tensor! { window[i, j] = 3 * a[i, j]; }
    }
    for ((i, j), &value) in out.indexed_iter() {
        if j % 2 == 0 {
            assert_eq!(value, 3.0 * a[[j / 2, i]]);
        } else {
            assert!(value.is_nan(), "({i}, {j}) was written");
        }
    }
    // An owned Fortran-order array, `+=`, and an in-place self-update.
    let mut f = Array2::<f64>::zeros((4, 6).f());
    tensor! {
        f[i, j] += a[i, j];
        f[i, j] = f[i, j] * f[i, j];
    }
    assert_eq!(f, a.mapv(|x| x * x));
    // A shared array is made unique before it is written.
    let shared: ArcArray2<f64> = a.to_shared();
    let mut written = shared.clone();
    tensor! { written[i, j] = 0 * a[i, j]; }
    assert_eq!(shared, a);
    assert!(written.iter().all(|&x| x == 0.0));
}

#[test]
fn dynamic_rank_and_conversions() {
    let a: ArrayD<f64> =
        Array::from_shape_fn(IxDyn(&[3, 4, 2]), |ix| (ix[0] + ix[1] * ix[2]) as f64);
    tensor! { let sums[i] = a[i, j, k]; }
    let expected = reference(&[3], |ix| sum_over(&[4, 2], |r| a[[ix[0], r[0], r[1]]]));
    assert_close(&sums, &expected, 1e-12);
    // Tensor → ArrayD without a copy of the elements' order; ArrayD (any layout) → Tensor.
    let back: ArrayD<f64> = sums.clone().into();
    assert_eq!(back.as_slice().unwrap(), sums.as_slice());
    let transposed = a.view().reversed_axes();
    let copied = Tensor::from(&transposed);
    assert_eq!(copied.shape(), &[2, 4, 3]);
    assert_eq!(copied[[1, 3, 2]], a[[2, 3, 1]]);
    // Zero-sized arrays.
    let empty = Array2::<f64>::zeros((0, 3));
    tensor! { let none[j] = empty[i, j]; }
    assert_eq!(none.as_slice(), &[0.0; 3]);
}

#[test]
#[should_panic(expected = "index `k` has extent 5")]
fn extents_of_fixed_rank_arrays_are_checked_at_run_time() {
    let a = filled(7, 5, 0);
    let b = filled(4, 3, 1);
    tensor! { let _c[i, j] = a[i, k] * b[k, j]; }
}

#[test]
fn complex_arrays_in_any_layout_with_conj() {
    use tensor_dsl::c64;
    let complex = |rows: usize, cols: usize, seed: usize| {
        Array2::from_shape_fn((rows, cols), |(i, j)| {
            c64::new(
                ((i * 7 + j * 3 + seed) % 11) as f64 - 5.0,
                (i + 2 * j) as f64,
            )
        })
    };
    // Past the GEMM threshold, with `a` read through a transposed (Fortran-order) view.
    let (a, b) = (complex(40, 50, 1), complex(40, 45, 2));
    let at = a.t();
    let mut c = Array2::<c64>::zeros((50, 45).f());
    tensor! { c[i, j] = conj(at[i, k]) * b[k, j]; }
    let expected = a.mapv(|x| x.conj()).t().dot(&b);
    assert_eq!(c, expected, "small integers in both parts: exact");
}

#[test]
fn matrix_statements_read_arrays_of_any_layout() {
    // A Fortran-order array (read in place), a reversed stepped slice (read through a copy)
    // and a dynamic-rank array grouped (i, j) × (k, l).
    let n = 7;
    let m = filled(n, n, 3);
    let mut a = Array2::<f64>::zeros((n, n).f());
    a.assign(&(m.dot(&m.t()) + Array2::<f64>::eye(n) * n as f64));
    let big = Array2::from_shape_fn((2 * n, 2 * n), |(i, j)| {
        if i % 2 == 1 && j % 2 == 0 {
            a[[n - 1 - i / 2, j / 2]]
        } else {
            f64::NAN
        }
    });
    let reversed = big.slice(s![..;-2, ..;2]); // rows reversed: a itself, element for element
    let t = ArrayD::from_shape_fn(IxDyn(&[2, 3, 4, 2]), |ix| {
        ((ix[0] * 5 + ix[1] * 3 + ix[2] * 7 + ix[3]) % 13) as f64 - 6.0
    });
    tensor! {
        let l[i, j] = cholesky(a[i, j]);
        let l2[i, j] = cholesky(reversed[i, j]);
        let back[i, j] = l[i, k] * l[j, k];
        let (u[i, j, s], sv[s], vt[s, k, l]) = svd(t[i, j, k, l]);
        let t_back[i, j, k, l] = u[i, j, s] * sv[s] * vt[s, k, l];
    }
    let a = Tensor::from_fn([n, n], |ix| a[[ix[0], ix[1]]]);
    assert_close(&back, &a, 1e-13);
    assert_close(&l2, &l, 1e-13);
    let t = Tensor::from_fn([2, 3, 4, 2], |ix| t[IxDyn(ix)]);
    assert_close(&t_back, &t, 1e-13);
    assert_eq!(sv.len(), 6);
}

//! Nested Rust arrays as static-shape operands and targets, end to end against naive loops:
//! alone, mixed with run-time-shaped tensors, in place, and as the targets of every mode.

mod common;

use common::{assert_close, at, data, reference, sum_over};
use tensor_dsl::{tensor, Tensor};

fn to_tensor<const A: usize, const B: usize>(array: &[[f64; B]; A]) -> Tensor<f64> {
    Tensor::from_fn(&[A, B], |ix| array[ix[0]][ix[1]])
}

#[test]
fn matrix_product_of_nested_arrays_into_a_nested_array() {
    let a = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let b = [[1.0, 0.5], [0.25, -1.0], [2.0, 3.0]];
    let mut c = [[0.0f64; 2]; 2];
    tensor! { c[i, j] = a[i, k] * b[k, j]; }
    let expected = reference(&[2, 2], |ix| {
        sum_over(&[3], |r| a[ix[0]][r[0]] * b[r[0]][ix[1]])
    });
    assert_close(&to_tensor(&c), &expected, 1e-12);
    // `+=`, a scaled update and an element-wise statement, in place.
    tensor! {
        c[i, j] += a[i, k] * b[k, j];
        c[i, j] = 0.5 * c[i, j] + c[j, i];
    }
    let doubled = reference(&[2, 2], |ix| 2.0 * at(&expected, ix));
    let last = reference(&[2, 2], |ix| {
        0.5 * at(&doubled, ix) + at(&doubled, &[ix[1], ix[0]])
    });
    assert_close(&to_tensor(&c), &last, 1e-12);
}

#[test]
fn elasticity_with_a_rank_four_nested_array() {
    // s[i, j] = C[i, j, k, l] e[k, l] with 3 × 3 × 3 × 3 stiffness and 3 × 3 strain.
    let mut stiffness = [[[[0.0f32; 3]; 3]; 3]; 3];
    for (n, value) in stiffness
        .iter_mut()
        .flatten()
        .flatten()
        .flatten()
        .enumerate()
    {
        *value = (n % 7) as f32 - 3.0;
    }
    let strain = [[0.1f32, 0.2, 0.3], [0.2, 0.5, 0.6], [0.3, 0.6, 0.9]];
    tensor! { let stress[i, j] = stiffness[i, j, k, l] * strain[k, l]; }
    let expected = reference(&[3, 3], |ix| {
        sum_over(&[3, 3], |r| {
            f64::from(stiffness[ix[0]][ix[1]][r[0]][r[1]]) * f64::from(strain[r[0]][r[1]])
        })
    });
    assert_close(&stress, &expected, 1e-5);
}

#[test]
fn static_and_dynamic_operands_mix() {
    let rotation = [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]];
    let points = data::<f64>(&[7, 3], 0);
    let mut moved = [[0.0f64; 3]; 7];
    tensor! { moved[p, i] = rotation[i, j] * points[p, j]; }
    let expected = reference(&[7, 3], |ix| {
        sum_over(&[3], |r| {
            rotation[ix[1]][r[0]] * at(&points, &[ix[0], r[0]])
        })
    });
    let moved = Tensor::from_fn(&[7, 3], |ix| moved[ix[0]][ix[1]]);
    assert_close(&moved, &expected, 1e-12);
    // A vector and a zero-length array.
    let v = [1.0f64, 2.0, 3.0];
    let empty: [f64; 0] = [];
    tensor! {
        let norm2 = v[i] * v[i];
        let nothing = empty[i] * empty[i];
    }
    assert_eq!((norm2, nothing), (14.0, 0.0));
}

#[test]
#[should_panic(expected = "index `j` has extent 3")]
fn a_static_extent_against_a_dynamic_one_is_checked_at_run_time() {
    let rotation = [[1.0f64; 3]; 3];
    let points = data::<f64>(&[7, 4], 0);
    tensor! { let _moved[p, i] = rotation[i, j] * points[p, j]; }
}

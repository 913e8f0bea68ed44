//! Property tests: fixed statements over random extents (zero included), random data and
//! randomly transposed or sliced operand views, compared with naive loops.

mod common;

use common::{assert_close, at, reference, sum_over};
use proptest::prelude::*;
use tensor_dsl::{tensor, Tensor};

fn tensor_of(shape: &[usize], values: &[f64]) -> Tensor<f64> {
    let mut next = values.iter().cycle();
    Tensor::from_fn(shape, |_| *next.next().unwrap_or(&0.5))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn contraction_with_bias_and_in_place_update(
        (ni, nj, nk) in (0usize..6, 0usize..6, 0usize..6),
        values in prop::collection::vec(-2.0f64..2.0, 1..40),
        transpose_a in any::<bool>(),
        alpha in -3.0f64..3.0,
    ) {
        // `a` is [ni, nk], either stored so or as a transposed view of a [nk, ni] tensor.
        let a_stored = if transpose_a {
            tensor_of(&[nk, ni], &values)
        } else {
            tensor_of(&[ni, nk], &values)
        };
        let a_owned;
        let a = if transpose_a {
            a_owned = a_stored.view().permuted_axes(&[1, 0]).to_tensor();
            a_stored.view().permuted_axes(&[1, 0])
        } else {
            a_owned = a_stored.clone();
            a_stored.view()
        };
        let b = tensor_of(&[nk, nj], &values[values.len() / 2..]);
        let bias = tensor_of(&[nj], &values);
        let before = tensor_of(&[ni, nj], &values[1..]);
        let mut c = before.clone();
        tensor! { c[i, j] = alpha * c[i, j] + a[i, k] * b[k, j] - bias[j]; }
        let expected = reference(&[ni, nj], |ix| {
            alpha * at(&before, ix)
                + sum_over(&[nk], |r| at(&a_owned, &[ix[0], r[0]]) * at(&b, &[r[0], ix[1]]))
                - at(&bias, &[ix[1]])
        });
        assert_close(&c, &expected, 1e-12);
    }

    #[test]
    fn sliced_three_index_reduction(
        (n0, n1, n2) in (1usize..5, 1usize..5, 1usize..5),
        start in 0usize..3,
        values in prop::collection::vec(-2.0f64..2.0, 1..30),
    ) {
        let t = tensor_of(&[n0, n1 + start, n2], &values);
        let view = t.view().slice_axis(1, start..start + n1);
        tensor! {
            let s[j] = view[i, j, k] * view[i, j, k];
            let total = view[i, j, k];
        }
        let expected = reference(&[n1], |ix| {
            sum_over(&[n0, n2], |r| at(&t, &[r[0], ix[0] + start, r[1]]).powi(2))
        });
        assert_close(&s, &expected, 1e-12);
        let expected_total = sum_over(&[n0, n1, n2], |r| at(&t, &[r[0], r[1] + start, r[2]]));
        common::assert_close_scalar(total, expected_total, 1e-12);
    }
}

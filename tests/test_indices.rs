//! Repeated indices (diagonal, trace, partial trace) and fixed positions.

mod common;

use common::{assert_close, at, data, reference, sum_over};
use tensor_dsl::{tensor, Tensor};

#[test]
fn diagonal_trace_and_partial_trace() {
    let a = data::<f64>(&[7, 7], 0);
    let b = data::<f64>(&[4, 3, 4, 3], 1);
    let t = data::<f64>(&[5, 5, 5], 2);
    tensor! {
        let diag[i] = a[i, i];
        let trace = a[i, i];
        let partial[j, l] = b[i, j, i, l];
        let total_partial = b[i, j, i, j];
        let cube_diagonal[i] = t[i, i, i];
    }
    assert_close(&diag, &reference(&[7], |ix| at(&a, &[ix[0], ix[0]])), 0.0);
    common::assert_close_scalar(trace, sum_over(&[7], |r| at(&a, &[r[0], r[0]])), 1e-12);
    let expected = reference(&[3, 3], |ix| {
        sum_over(&[4], |r| at(&b, &[r[0], ix[0], r[0], ix[1]]))
    });
    assert_close(&partial, &expected, 1e-12);
    common::assert_close_scalar(
        total_partial,
        sum_over(&[4, 3], |r| at(&b, &[r[0], r[1], r[0], r[1]])),
        1e-12,
    );
    assert_close(
        &cube_diagonal,
        &reference(&[5], |ix| at(&t, &[ix[0]; 3])),
        0.0,
    );
}

#[test]
fn fixed_positions_read_and_write() {
    let a = data::<f64>(&[4, 3], 0);
    let k = 2;
    let mut out = Tensor::<f64>::zeros([4, 3]);
    tensor! {
        let first_column[i] = a[i, 0];
        let chosen[i] = a[i, { k }];
        out[i, 1] = a[i, { k - 1 }] + a[3, 2];
    }
    assert_close(
        &first_column,
        &reference(&[4], |ix| at(&a, &[ix[0], 0])),
        0.0,
    );
    assert_close(&chosen, &reference(&[4], |ix| at(&a, &[ix[0], 2])), 0.0);
    let expected = reference(&[4, 3], |ix| {
        if ix[1] == 1 {
            at(&a, &[ix[0], 1]) + at(&a, &[3, 2])
        } else {
            0.0
        }
    });
    assert_close(&out, &expected, 1e-15);
}

#[test]
fn tensor_valued_rust_expressions_as_operands() {
    let a = data::<f64>(&[3, 5], 0);
    tensor! {
        let t[j, i] = { a.view().permuted_axes(&[1, 0]) }[j, i] * 2;
        let sliced[i] = { a.view().slice_axis(1, 1..3) }[i, j];
    }
    assert_close(
        &t,
        &reference(&[5, 3], |ix| 2.0 * at(&a, &[ix[1], ix[0]])),
        0.0,
    );
    let expected = reference(&[3], |ix| at(&a, &[ix[0], 1]) + at(&a, &[ix[0], 2]));
    assert_close(&sliced, &expected, 1e-15);
}

//! Targets read on their own right-hand side: in place when every read is the target's own
//! access in a term that sums nothing, through a temporary otherwise. Either way the result
//! equals evaluating the right-hand side first.

mod common;

use common::{assert_close, at, data, reference, sum_over};
use tensor_dsl::{__tensor_unoptimized, tensor, Tensor};

#[test]
fn gemm_update_reads_the_target_in_place() {
    let a = data::<f64>(&[7, 4], 0);
    let b = data::<f64>(&[4, 13], 1);
    let before = data::<f64>(&[7, 13], 2);
    let mut c = before.clone();
    tensor! { c[i, j] = 2.0 * c[i, j] + a[i, k] * b[k, j] - c[i, j] / 4; }
    let expected = reference(&[7, 13], |ix| {
        2.0 * at(&before, ix) - at(&before, ix) / 4.0
            + sum_over(&[4], |r| at(&a, &[ix[0], r[0]]) * at(&b, &[r[0], ix[1]]))
    });
    assert_close(&c, &expected, 1e-12);
}

#[test]
fn transposed_self_read_goes_through_a_temporary() {
    let before = data::<f64>(&[7, 7], 0);
    let mut c = before.clone();
    tensor! { c[i, j] = c[j, i]; }
    assert_close(
        &c,
        &reference(&[7, 7], |ix| at(&before, &[ix[1], ix[0]])),
        1e-15,
    );

    let mut c = before.clone();
    tensor! { c[i, j] += c[j, i] + c[i, j]; }
    let expected = reference(&[7, 7], |ix| {
        2.0 * at(&before, ix) + at(&before, &[ix[1], ix[0]])
    });
    assert_close(&c, &expected, 1e-15);
}

#[test]
fn contraction_with_the_target_goes_through_a_temporary() {
    let a = data::<f64>(&[5, 5], 0);
    let before = data::<f64>(&[5, 5], 1);
    let mut c = before.clone();
    tensor! { c[i, j] = a[i, k] * c[k, j]; }
    let expected = reference(&[5, 5], |ix| {
        sum_over(&[5], |r| {
            at(&a, &[ix[0], r[0]]) * at(&before, &[r[0], ix[1]])
        })
    });
    assert_close(&c, &expected, 1e-12);

    let b = data::<f64>(&[5, 5], 2);
    let mut c = before.clone();
    tensor! { c[i, j] -= c[i, j] * a[i, k] * b[k, j]; }
    let expected = reference(&[5, 5], |ix| {
        at(&before, ix)
            - sum_over(&[5], |r| {
                at(&before, ix) * at(&a, &[ix[0], r[0]]) * at(&b, &[r[0], ix[1]])
            })
    });
    assert_close(&c, &expected, 1e-12);
}

#[test]
fn view_target_read_on_its_own_right_hand_side() {
    let mut storage = data::<f64>(&[4, 4], 3);
    let before = storage.clone();
    let view = storage.view_mut();
    tensor! {
        view[i, j] = view[i, j] * 3;
        view[i, j] = view[j, i] + 1;
    }
    let expected = reference(&[4, 4], |ix| 3.0 * at(&before, &[ix[1], ix[0]]) + 1.0);
    assert_close(&storage, &expected, 1e-12);
}

#[test]
fn scalar_target_read_on_its_right_hand_side() {
    let x = data::<f64>(&[6], 0);
    let mut s = 2.0;
    tensor! { s = s * x[i] * x[i] + s; }
    let expected = 2.0 * sum_over(&[6], |r| at(&x, r).powi(2)) + 2.0;
    common::assert_close_scalar(s, expected, 1e-12);
}

#[test]
fn temporary_of_a_right_hand_side_that_broadcasts_a_left_hand_index() {
    let a = data::<f64>(&[4], 0);
    let before = data::<f64>(&[3, 4], 1);
    let mut c = before.clone();
    // `i` occurs only on the left: the temporary holds `Σk c[k, k]... + a[j]` along `j` alone.
    let mut square = data::<f64>(&[4, 4], 2);
    let square_before = square.clone();
    tensor! {
        square[i, j] = square[k, k] + a[j];
        c[i, j] += 2 * c[0, j];
    }
    let trace = sum_over(&[4], |r| at(&square_before, &[r[0], r[0]]));
    assert_close(
        &square,
        &reference(&[4, 4], |ix| trace + at(&a, &[ix[1]])),
        1e-12,
    );
    let expected = reference(&[3, 4], |ix| {
        at(&before, ix) + 2.0 * at(&before, &[0, ix[1]])
    });
    assert_close(&c, &expected, 1e-12);
}

// Two names for one writable view (`let r = &v;`): the compiler cannot tell they share memory,
// so every statement that reads `r` must see what earlier statements wrote through `v`. Each
// block below runs optimized, with only the required passes, and one statement per macro call;
// all three must agree.

#[test]
fn an_update_through_a_second_name_of_the_target_sees_the_statement_before() {
    let a = data::<f64>(&[6], 0);
    let start = data::<f64>(&[6], 1);
    let run = |how: &str| -> Tensor<f64> {
        let mut t = start.clone();
        {
            let v = t.view_mut();
            let r = &v;
            match how {
                "optimized" => tensor! { v[i] = a[i]; v[i] += r[i]; v[i] -= 0.5; },
                "unoptimized" => __tensor_unoptimized! { v[i] = a[i]; v[i] += r[i]; v[i] -= 0.5; },
                _ => {
                    tensor! { v[i] = a[i]; }
                    tensor! { v[i] += r[i]; }
                    tensor! { v[i] -= 0.5; }
                }
            }
        }
        t
    };
    let one_by_one = run("one by one");
    assert_close(
        &one_by_one,
        &reference(&[6], |ix| 2.0 * at(&a, ix) - 0.5),
        1e-15,
    );
    assert_close(&run("optimized"), &one_by_one, 0.0);
    assert_close(&run("unoptimized"), &one_by_one, 0.0);
}

#[test]
fn a_sum_through_a_second_name_is_computed_again_after_a_write_to_the_first() {
    let a = data::<f64>(&[6], 0);
    let m = data::<f64>(&[6, 6], 2);
    let start = data::<f64>(&[6], 1);
    let run = |how: &str| -> [Tensor<f64>; 3] {
        let mut t = start.clone();
        let (s, u) = {
            let v = t.view_mut();
            let r = &v;
            match how {
                "optimized" => {
                    tensor! { let s[i] = m[i, j] * r[j]; v[i] = a[i]; let u[i] = m[i, j] * r[j]; }
                    (s, u)
                }
                "unoptimized" => {
                    __tensor_unoptimized! { let s[i] = m[i, j] * r[j]; v[i] = a[i]; let u[i] = m[i, j] * r[j]; }
                    (s, u)
                }
                _ => {
                    tensor! { let s[i] = m[i, j] * r[j]; }
                    tensor! { v[i] = a[i]; }
                    tensor! { let u[i] = m[i, j] * r[j]; }
                    (s, u)
                }
            }
        };
        [s, t, u]
    };
    let one_by_one = run("one by one");
    let product = |x: &Tensor<f64>| {
        reference(&[6], |ix| {
            sum_over(&[6], |r| at(&m, &[ix[0], r[0]]) * at(x, r))
        })
    };
    assert_close(&one_by_one[0], &product(&start), 1e-12);
    assert_close(&one_by_one[2], &product(&a), 1e-12);
    for how in ["optimized", "unoptimized"] {
        for (got, expected) in run(how).iter().zip(&one_by_one) {
            assert_close(got, expected, 1e-12);
        }
    }
}

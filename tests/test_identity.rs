//! What a name means is decided by its binding, never by its text: a user name that looks like
//! a compiler temporary is still the user's, a `let` that shadows an operand is a new tensor
//! for every later statement, and tensors of one block written by different macros keep their
//! own bindings.

mod common;

use common::{assert_close, at, data, reference, sum_over};
use tensor_dsl::tensor;

#[test]
fn a_user_let_named_like_a_temporary_stays_bound_after_the_block() {
    let a = data::<f64>(&[5], 0);
    tensor! { let __tmp_y[i] = 2 * a[i]; }
    assert_close(&__tmp_y, &reference(&[5], |ix| 2.0 * at(&a, ix)), 0.0);
}

#[test]
fn a_sum_over_an_operand_that_a_let_shadows_is_computed_again() {
    let original = data::<f64>(&[4, 3], 0);
    let a = &original;
    let b = data::<f64>(&[3], 1);
    let c = data::<f64>(&[4, 3], 2);
    tensor! {
        let s[i] = a[i, j] * b[j] + 1;
        let a[i, j] = c[i, j] + 1;
        let t[i] = a[i, j] * b[j] + 1;
    }
    let sum = |m: &dyn Fn(&[usize]) -> f64| {
        reference(&[4], |ix| {
            sum_over(&[3], |r| m(&[ix[0], r[0]]) * at(&b, r)) + 1.0
        })
    };
    assert_close(&s, &sum(&|ix| at(&original, ix)), 1e-12);
    assert_close(&a, &reference(&[4, 3], |ix| at(&c, ix) + 1.0), 0.0);
    assert_close(&t, &sum(&|ix| at(&c, ix) + 1.0), 1e-12);
}

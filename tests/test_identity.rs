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

/// A macro that adds its own tensor to the caller's: the two are different variables.
macro_rules! add_bias {
    ($out:ident, $x:ident) => {
        let bias = tensor_dsl::Tensor::<f64>::from_fn([4], |ix| ix[0] as f64);
        tensor! { let $out[i] = $x[i] + bias[i]; }
    };
}

#[test]
fn tensors_of_a_macro_and_of_its_caller_keep_their_own_bindings() {
    let a = data::<f64>(&[4], 0);
    // Not the macro's `bias`, which hygiene keeps apart from this one.
    let bias = data::<f64>(&[4], 1);
    add_bias!(c, a);
    assert_close(&c, &reference(&[4], |ix| at(&a, ix) + ix[0] as f64), 0.0);
    assert_eq!(bias.shape(), &[4]);
}

#[test]
fn a_raw_identifier_names_the_same_tensor_as_the_plain_one() {
    let a = data::<f64>(&[5], 0);
    tensor! {
        let r#c[i] = 2 * r#a[i] + a[i];
        let d[i] = c[i] - r#c[i];
    }
    assert_close(&c, &reference(&[5], |ix| 3.0 * at(&a, ix)), 1e-15);
    assert_close(&d, &reference(&[5], |_| 0.0), 0.0);
}

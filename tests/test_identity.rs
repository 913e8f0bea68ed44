//! What a name means is decided by its binding, never by its text: a user name that looks like
//! a compiler temporary is still the user's, a `let` that shadows an operand is a new tensor
//! for every later statement, and tensors of one block written by different macros keep their
//! own bindings.

mod common;

use common::{assert_close, at, data, reference};
use tensor_dsl::tensor;

#[test]
fn a_user_let_named_like_a_temporary_stays_bound_after_the_block() {
    let a = data::<f64>(&[5], 0);
    tensor! { let __tmp_y[i] = 2 * a[i]; }
    assert_close(&__tmp_y, &reference(&[5], |ix| 2.0 * at(&a, ix)), 0.0);
}

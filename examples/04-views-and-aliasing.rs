//! Views and aliasing: statements over permuted and sliced views without copies, a writable
//! window as a target, a target read on its own right-hand side, a view read under a second
//! name, and a shape error returned by `try_tensor!` before anything is written.
//!
//!     cargo run --release --example 04-views-and-aliasing

mod common;

use common::check;
use tensor_dsl::{tensor, try_tensor, ShapeError, Tensor};

fn project(w: &Tensor<f64>, x: &Tensor<f64>) -> Result<Tensor<f64>, ShapeError> {
    try_tensor! { let y[o] = w[o, k] * x[k]; }
    Ok(y)
}

fn main() {
    let a = Tensor::<f64>::from_fn([4, 6], |ix| (10 * ix[0] + ix[1]) as f64);

    // A transposed view and a sliced view, read with no copy.
    let transposed = a.view().permuted_axes(&[1, 0]); // 6 × 4
    let middle = a.view().slice_axis(1, 2..4); // 4 × 2
    tensor! {
        let t[i, j] = transposed[i, j];
        let m[i, j] = middle[i, j];
    }
    let expected = Tensor::from_fn([6, 4], |ix| a[[ix[1], ix[0]]]);
    check("a permuted view", t.as_slice(), expected.as_slice(), 0.0);
    let expected = Tensor::from_fn([4, 2], |ix| a[[ix[0], ix[1] + 2]]);
    check("a sliced view", m.as_slice(), expected.as_slice(), 0.0);

    // A writable window: only its elements change, and it needs no `mut` binding.
    let mut canvas = Tensor::<f64>::zeros([4, 6]);
    let window = canvas.view_mut().slice_axis(1, 1..3);
    tensor! { window[i, j] = 2 * middle[i, j]; }
    let expected = Tensor::from_fn([4, 6], |ix| {
        if (1..3).contains(&ix[1]) {
            2.0 * a[[ix[0], ix[1] + 1]]
        } else {
            0.0
        }
    });
    check(
        "a writable window",
        canvas.as_slice(),
        expected.as_slice(),
        0.0,
    );

    // The target on its own right-hand side: the result is as if the right-hand side were
    // evaluated first (here through a temporary, since c[j, i] is not read point-wise).
    let mut c = Tensor::<f64>::from_fn([5, 5], |ix| (ix[0] * 5 + ix[1]) as f64);
    let before = c.clone();
    tensor! { c[i, j] = c[j, i] - c[i, j]; }
    let expected = Tensor::from_fn([5, 5], |ix| before[[ix[1], ix[0]]] - before[[ix[0], ix[1]]]);
    check(
        "c = cᵀ - c in place",
        c.as_slice(),
        expected.as_slice(),
        0.0,
    );

    // A view read under a second name shares the target's memory: the statement reads a copy
    // taken before it writes, found from the addresses at run time.
    let mut v = Tensor::<f64>::from_fn([6], |ix| ix[0] as f64);
    let target = v.view_mut();
    tensor! { target[i] = { &target }[i] + { &target }[{ 5 }]; }
    check(
        "a view read under another name",
        v.as_slice(),
        &[5.0, 6.0, 7.0, 8.0, 9.0, 10.0],
        0.0,
    );

    // Shape errors: every check of a block runs before its first write.
    let w = Tensor::<f64>::zeros([3, 4]);
    let wrong = Tensor::<f64>::zeros([5]);
    let error = project(&w, &wrong).expect_err("4 ≠ 5");
    println!("checked a shape error: {error}");
}

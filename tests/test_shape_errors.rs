//! Run-time shape errors: found before the block writes anything, named precisely, reported
//! as a panic at the macro call (`tensor!`) or as a `ShapeError` (`try_tensor!`).

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};

use common::data;
use tensor_dsl::{tensor, try_tensor, ShapeError, ShapeErrorKind, Tensor};

fn panic_message(f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err("expected a panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default()
}

#[test]
fn extent_mismatch_names_index_accesses_axes_and_extents() {
    let a = data::<f64>(&[3, 4], 0);
    let b = data::<f64>(&[5, 2], 1);
    let message = panic_message(|| {
        tensor! { let _c[i, j] = a[i, k] * b[k, j]; }
    });
    assert_eq!(
        message,
        "index `k` has extent 4 in `a[i, k]` (axis 1) but extent 5 in `b[k, j]` (axis 0)"
    );
}

#[test]
fn nothing_is_written_when_a_later_statement_fails() {
    let a = data::<f64>(&[3, 3], 0);
    let wrong = data::<f64>(&[4], 1);
    let mut c = Tensor::<f64>::zeros([3, 3]);
    let mut s = 7.0;
    let message = panic_message(|| {
        tensor! {
            c[i, j] = a[i, j] + 1;
            s += a[i, i];
            let _t[i] = a[i, j] * wrong[j];
        }
    });
    assert!(message.contains("index `j`"), "{message}");
    assert!(
        c.as_slice().iter().all(|&v| v == 0.0),
        "the first statement ran"
    );
    assert_eq!(s, 7.0);
}

#[test]
fn target_shape_and_rank_are_checked() {
    let a = data::<f32>(&[3, 4], 0);
    let mut wrong_shape = Tensor::<f32>::zeros([4, 3]);
    let message = panic_message(|| {
        tensor! { wrong_shape[i, j] = a[i, j]; }
    });
    assert_eq!(
        message,
        "index `i` has extent 4 in `wrong_shape[i, j]` (axis 0) but extent 3 in `a[i, j]` (axis 0)"
    );
    let message = panic_message(|| {
        tensor! { let _b[i] = a[i]; }
    });
    assert_eq!(
        message,
        "`a[i]` uses 1 index but `a` has 2 axes (shape [3, 4])"
    );
}

#[test]
fn fixed_positions_out_of_bounds() {
    let a = data::<f64>(&[3, 4], 0);
    let column = 4;
    let message = panic_message(|| {
        tensor! { let _b[i] = a[i, { column }]; }
    });
    assert_eq!(
        message,
        "position 4 on axis 1 of `a[i, {column}]` is out of bounds: the axis has extent 4"
    );
}

fn fallible(a: &Tensor<f64>, b: &Tensor<f64>, out: &mut Tensor<f64>) -> Result<f64, ShapeError> {
    try_tensor! {
        out[i] = a[i] * 2;
        let dot = a[i] * b[i];
    }
    Ok(dot)
}

#[derive(Debug)]
enum AppError {
    Shape(ShapeError),
}

impl From<ShapeError> for AppError {
    fn from(error: ShapeError) -> Self {
        AppError::Shape(error)
    }
}

fn fallible_into_own_error(a: &Tensor<f64>) -> Result<Tensor<f64>, AppError> {
    try_tensor! { let t[i, j] = a[i, j] * a[j, i]; }
    Ok(t)
}

fn outer_product(a: &tensor_dsl::TensorView<'_, f64>) -> Result<Tensor<f64>, ShapeError> {
    try_tensor! { let c[i, j] = a[i] * a[j]; }
    Ok(c)
}

/// A `let` result with more elements than can exist is a shape error like any other: an `Err`
/// through `try_tensor!`, a panic naming it through `tensor!`, before anything is allocated.
#[test]
fn impossible_let_results_are_shape_errors() {
    let one = Tensor::<f64>::zeros([1]);
    let huge = one.view().broadcast([usize::MAX / 4]).unwrap();
    let error = outer_product(&huge).unwrap_err();
    assert_eq!(error.kind(), ShapeErrorKind::Overflow);
    assert!(error.to_string().contains("`c`"), "{error}");
    let message = panic_message(|| {
        tensor! { let d[i, j] = huge[i] * huge[j]; }
        drop(d);
    });
    assert!(message.contains("`d` would have shape"), "{message}");
    // A large result that can exist is made as before.
    let small = data::<f64>(&[3], 0);
    assert_eq!(outer_product(&small.view()).unwrap().shape(), &[3, 3]);
}

#[test]
fn try_tensor_returns_errors_and_keeps_bindings() {
    let a = data::<f64>(&[4], 0);
    let b = data::<f64>(&[4], 1);
    let mut out = Tensor::<f64>::zeros([4]);
    let dot = fallible(&a, &b, &mut out).expect("shapes agree");
    assert!((dot - (0..4).map(|k| a[[k]] * b[[k]]).sum::<f64>()).abs() < 1e-12);

    let short = data::<f64>(&[3], 1);
    let mut untouched = Tensor::<f64>::zeros([4]);
    let error = fallible(&a, &short, &mut untouched).unwrap_err();
    assert_eq!(error.kind(), ShapeErrorKind::ExtentMismatch);
    assert!(untouched.as_slice().iter().all(|&v| v == 0.0));

    let rectangular = data::<f64>(&[2, 3], 0);
    let AppError::Shape(error) = fallible_into_own_error(&rectangular).unwrap_err();
    assert!(error.to_string().contains("index `i`"), "{error}");
    assert!(fallible_into_own_error(&data(&[3, 3], 0)).is_ok());
}

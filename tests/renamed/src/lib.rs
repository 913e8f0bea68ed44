//! A crate that depends on `tensor-dsl` under another name (`tdsl = { package = "tensor-dsl",
//! .. }`): every form of the macro, through the dependency `tdsl`. Expansions that named
//! `::tensor_dsl` would not compile here, so `cargo test --workspace` fails on one.

#![cfg(test)]

use tdsl::{tensor, try_tensor, ShapeError, Tensor};

fn project(w: &Tensor<f64>, x: &Tensor<f64>) -> Result<Tensor<f64>, ShapeError> {
    try_tensor! { let y[o] = w[o, k] * x[k]; }
    Ok(y)
}

#[test]
fn every_form_of_the_macro_names_the_renamed_dependency() {
    let a = Tensor::<f64>::from_fn([3, 4], |ix| (ix[0] * 4 + ix[1]) as f64);
    let x = Tensor::<f64>::from_fn([4], |ix| ix[0] as f64 + 1.0);
    let mut c = Tensor::<f64>::zeros([3]);
    tensor! {
        let mut y[i] = a[i, k] * x[k];
        y[i] += 1;
        c[i] = 2 * y[i];
        let s = y[i] * y[i];
    }
    tdsl::__tensor_unoptimized! { let z[i] = a[i, k] * x[k] + 1; }
    assert_eq!(y.as_slice(), &[21.0, 61.0, 101.0]);
    assert_eq!(y.as_slice(), z.as_slice());
    assert_eq!(c.as_slice(), &[42.0, 122.0, 202.0]);
    assert_eq!(s, 21.0 * 21.0 + 61.0 * 61.0 + 101.0 * 101.0);
    assert_eq!(
        project(&a, &x).expect("matching extents").as_slice(),
        &[20.0, 60.0, 100.0]
    );
    assert!(project(&a, &c).is_err());
}

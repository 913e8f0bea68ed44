//! Comparison of acceptance-corpus results with numpy's references (tests/acceptance/refs.json),
//! with the corpus's tolerances: rtol 1e-9 for f64 and 1e-4 for f32, relative to the larger of
//! the element and the output's largest magnitude.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::Value;
use tensor_dsl::{Real, Tensor};

fn references() -> &'static HashMap<String, Value> {
    static REFS: OnceLock<HashMap<String, Value>> = OnceLock::new();
    REFS.get_or_init(|| {
        let refs: Value = serde_json::from_str(include_str!("../acceptance/refs.json"))
            .expect("refs.json is valid JSON");
        refs["cases"]
            .as_array()
            .expect("refs.json has a `cases` list")
            .iter()
            .map(|case| (case["id"].as_str().unwrap().to_owned(), case.clone()))
            .collect()
    })
}

fn reference(id: &str) -> &'static Value {
    references()
        .get(id)
        .unwrap_or_else(|| panic!("no reference for case `{id}`"))
}

fn rtol(case: &Value) -> f64 {
    match case["dtype"].as_str() {
        Some("f32") => 1e-4,
        _ => 1e-9,
    }
}

fn number(value: &Value) -> f64 {
    value.as_f64().expect("a number")
}

#[track_caller]
pub fn check_tensor<T: Real>(id: &str, got: &Tensor<T>) {
    let case = reference(id);
    let shape: Vec<usize> = case["output_shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_u64().unwrap() as usize)
        .collect();
    assert_eq!(got.shape(), &shape[..], "{id}: output shape");
    let values: Vec<f64> = got.as_slice().iter().map(|v| v.to_f64()).collect();
    let (rtol, max_abs) = (rtol(case), number(&case["max_abs"]));
    let close = |position: usize, expected: f64| {
        let bound = rtol * expected.abs().max(max_abs);
        assert!(
            (values[position] - expected).abs() <= bound,
            "{id}: element {position} is {} but numpy gives {expected}",
            values[position]
        );
    };
    if let Some(expected) = case["values"].as_array() {
        assert_eq!(values.len(), expected.len(), "{id}: element count");
        for (position, value) in expected.iter().enumerate() {
            close(position, number(value));
        }
    } else {
        for sample in case["samples"].as_array().expect("values or samples") {
            close(sample[0].as_u64().unwrap() as usize, number(&sample[1]));
        }
        let n = values.len() as f64;
        let d = rtol * max_abs;
        let sum: f64 = values.iter().sum();
        let sum_sq: f64 = values.iter().map(|v| v * v).sum();
        assert!(
            (sum - number(&case["sum"])).abs() <= n * d,
            "{id}: sum {sum}"
        );
        assert!(
            (sum_sq - number(&case["sum_sq"])).abs() <= n * d * (2.0 * max_abs + d),
            "{id}: sum of squares {sum_sq}"
        );
    }
}

#[track_caller]
pub fn check_scalar<T: Real>(id: &str, got: &T) {
    let case = reference(id);
    let expected = number(&case["values"][0]);
    let got = got.to_f64();
    assert!(
        (got - expected).abs() <= rtol(case) * expected.abs(),
        "{id}: got {got} but numpy gives {expected}"
    );
}

//! Comparison of acceptance-corpus results with numpy's references (tests/acceptance/refs.json),
//! with the corpus's tolerances: rtol 1e-9 for f64 and 1e-4 for f32, relative to the larger of
//! the element and the output's largest magnitude.
#![allow(dead_code)] // each acceptance file uses the checks of its own element types

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

/// The corpus run again in other element types: complex (`refs_complex.json`, which also holds
/// each two-operand contraction with `conj` on either operand, as `{id}.conj0` and `{id}.conj1`)
/// and integer (`refs_integer.json`), both written by tests/acceptance/references.py.
pub mod other_types {
    use std::collections::HashMap;
    use std::sync::OnceLock;

    use serde_json::Value;
    use tensor_dsl::{c32, c64, Element, Tensor};

    use super::number;
    use crate::common::data;

    fn index(text: &str) -> HashMap<String, Value> {
        let refs: Value = serde_json::from_str(text).expect("a valid references file");
        refs["cases"]
            .as_array()
            .expect("a `cases` list")
            .iter()
            .map(|case| (case["id"].as_str().unwrap().to_owned(), case.clone()))
            .collect()
    }

    fn complex_reference(id: &str) -> &'static Value {
        static REFS: OnceLock<HashMap<String, Value>> = OnceLock::new();
        REFS.get_or_init(|| index(include_str!("../acceptance/refs_complex.json")))
            .get(id)
            .unwrap_or_else(|| panic!("no complex reference for case `{id}`"))
    }

    fn integer_reference(id: &str) -> &'static Value {
        static REFS: OnceLock<HashMap<String, Value>> = OnceLock::new();
        REFS.get_or_init(|| index(include_str!("../acceptance/refs_integer.json")))
            .get(id)
            .unwrap_or_else(|| panic!("no integer reference for case `{id}`"))
    }

    /// Complex element types of the corpus: `c32` for its f32 cases, `c64` for its f64 ones.
    pub trait Complex: Element {
        /// Rounded to the part type (as the references' inputs are).
        fn from_parts(re: f64, im: f64) -> Self;
        fn parts(self) -> (f64, f64);
        const RTOL: f64;
    }

    impl Complex for c32 {
        fn from_parts(re: f64, im: f64) -> Self {
            c32::new(re as f32, im as f32)
        }
        fn parts(self) -> (f64, f64) {
            (self.re.into(), self.im.into())
        }
        const RTOL: f64 = 1e-4;
    }

    impl Complex for c64 {
        fn from_parts(re: f64, im: f64) -> Self {
            c64::new(re, im)
        }
        fn parts(self) -> (f64, f64) {
            (self.re, self.im)
        }
        const RTOL: f64 = 1e-9;
    }

    /// Operand `p`: the real rule's operand `p` plus i times its operand `p + 64`.
    pub fn complex_data<T: Complex>(shape: &[usize], p: usize) -> Tensor<T> {
        let (re, im) = (data::<f64>(shape, p), data::<f64>(shape, p + 64));
        let mut parts = re.iter().zip(im.iter());
        Tensor::from_fn(shape, |_| {
            let (&re, &im) = parts.next().expect("one value per element");
            T::from_parts(re, im)
        })
    }

    /// Operand `p`: `((t·7919 + (p+1)·104729) mod 19) − 9` at row-major position `t`.
    pub fn integer_data<T: Element>(shape: &[usize], p: usize) -> Tensor<T> {
        let mut t = 0usize;
        Tensor::from_fn(shape, |_| {
            let value = ((t * 7919 + (p + 1) * 104_729) % 19) as f64 - 9.0;
            t += 1;
            T::from_f64(value)
        })
    }

    fn shape_of(case: &Value) -> Vec<usize> {
        case["output_shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap() as usize)
            .collect()
    }

    /// Each part of every element within rtol of the largest modulus (or of the element's),
    /// and for sampled outputs each part's sum and sum of squares.
    #[track_caller]
    pub fn check_complex<T: Complex>(id: &str, shape: &[usize], got: &[T]) {
        let case = complex_reference(id);
        assert_eq!(shape, &shape_of(case)[..], "{id}: output shape");
        let max_abs = number(&case["max_abs"]);
        for (part, pick) in [("re", 0), ("im", 1)] {
            let values: Vec<f64> = got
                .iter()
                .map(|z| if pick == 0 { z.parts().0 } else { z.parts().1 })
                .collect();
            let close = |position: usize, expected: f64| {
                let bound = T::RTOL * expected.abs().max(max_abs);
                assert!(
                    (values[position] - expected).abs() <= bound,
                    "{id}: element {position}'s {part} is {} but numpy gives {expected}",
                    values[position]
                );
            };
            if let Some(expected) = case[format!("values_{part}")].as_array() {
                assert_eq!(values.len(), expected.len(), "{id}: element count");
                for (position, value) in expected.iter().enumerate() {
                    close(position, number(value));
                }
                continue;
            }
            for sample in case[format!("samples_{part}")].as_array().unwrap() {
                close(sample[0].as_u64().unwrap() as usize, number(&sample[1]));
            }
            let (n, d) = (values.len() as f64, T::RTOL * max_abs);
            let sum: f64 = values.iter().sum();
            let sum_sq: f64 = values.iter().map(|v| v * v).sum();
            assert!(
                (sum - number(&case[format!("sum_{part}")])).abs() <= n * d,
                "{id}: {part} sum {sum}"
            );
            assert!(
                (sum_sq - number(&case[format!("sum_sq_{part}")])).abs()
                    <= n * d * (2.0 * max_abs + d),
                "{id}: {part} sum of squares {sum_sq}"
            );
        }
    }

    #[track_caller]
    pub fn check_complex_tensor<T: Complex>(id: &str, got: &Tensor<T>) {
        check_complex(id, got.shape(), got.as_slice());
    }

    #[track_caller]
    pub fn check_complex_scalar<T: Complex>(id: &str, got: &T) {
        check_complex(id, &[], std::slice::from_ref(got));
    }

    /// Every value equal, or the samples and both sums (integer results are exact).
    #[track_caller]
    pub fn check_integer(id: &str, shape: &[usize], got: &[i64]) {
        let case = integer_reference(id);
        assert_eq!(shape, &shape_of(case)[..], "{id}: output shape");
        let int = |value: &Value| value.as_i64().expect("an integer");
        if let Some(expected) = case["values"].as_array() {
            let expected: Vec<i64> = expected.iter().map(int).collect();
            assert_eq!(got, &expected[..], "{id}");
            return;
        }
        for sample in case["samples"].as_array().unwrap() {
            let position = sample[0].as_u64().unwrap() as usize;
            assert_eq!(got[position], int(&sample[1]), "{id}: element {position}");
        }
        let sum = got.iter().fold(0i64, |s, &v| s.wrapping_add(v));
        let sum_sq = got
            .iter()
            .fold(0i64, |s, &v| s.wrapping_add(v.wrapping_mul(v)));
        assert_eq!(sum, int(&case["sum"]), "{id}: sum");
        assert_eq!(sum_sq, int(&case["sum_sq"]), "{id}: sum of squares");
    }

    /// Integer element types of the corpus: `i32` for its f32 cases, `i64` for its f64 ones.
    pub trait Integer: Element {
        fn widened(self) -> i64;
    }

    impl Integer for i32 {
        fn widened(self) -> i64 {
            self.into()
        }
    }

    impl Integer for i64 {
        fn widened(self) -> i64 {
            self
        }
    }

    #[track_caller]
    pub fn check_integer_tensor<T: Integer>(id: &str, got: &Tensor<T>) {
        let values: Vec<i64> = got.iter().map(|v| v.widened()).collect();
        check_integer(id, got.shape(), &values);
    }

    #[track_caller]
    pub fn check_integer_scalar<T: Integer>(id: &str, got: &T) {
        check_integer(id, &[], &[got.widened()]);
    }
}

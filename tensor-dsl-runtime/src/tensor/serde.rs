//! `Tensor` ↔ serde (feature `serde`): a struct `{ shape, data }`, the data in row-major order;
//! deserializing checks that the data has as many elements as the shape, through
//! `Tensor::from_shape_vec`, so malformed input is an error, never a panic or a broken tensor.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Tensor;

#[derive(Serialize)]
#[serde(rename = "Tensor")]
struct TensorRef<'a, T> {
    shape: &'a [usize],
    data: &'a [T],
}

#[derive(Deserialize)]
#[serde(rename = "Tensor", deny_unknown_fields)]
struct TensorParts<T> {
    shape: Vec<usize>,
    data: Vec<T>,
}

/// A struct `Tensor { shape, data }`, the elements in row-major order.
///
/// ```
/// use tensor_dsl_runtime::Tensor;
///
/// let t = Tensor::from_shape_vec([2, 2], vec![1.0, 2.0, 3.0, 4.0]).unwrap();
/// let json = serde_json::to_string(&t).unwrap();
/// assert_eq!(json, r#"{"shape":[2,2],"data":[1.0,2.0,3.0,4.0]}"#);
/// assert_eq!(serde_json::from_str::<Tensor<f64>>(&json).unwrap(), t);
/// ```
impl<T: Serialize> Serialize for Tensor<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        TensorRef {
            shape: self.shape(),
            data: self.as_slice(),
        }
        .serialize(serializer)
    }
}

/// Reads what [`Serialize`] writes; fails when the data's length is not the product of the
/// shape (or the product overflows).
///
/// ```
/// use tensor_dsl_runtime::Tensor;
///
/// let error = serde_json::from_str::<Tensor<f64>>(r#"{"shape":[2,2],"data":[1.0]}"#);
/// assert!(error.unwrap_err().to_string().contains("holds 4 elements but 1 were given"));
/// ```
impl<'de, T: Deserialize<'de>> Deserialize<'de> for Tensor<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let TensorParts { shape, data } = TensorParts::deserialize(deserializer)?;
        Tensor::from_shape_vec(shape, data).map_err(D::Error::custom)
    }
}

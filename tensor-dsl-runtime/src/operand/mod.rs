//! What generated code sees of any tensor: raw accesses to operands and targets, extents as
//! types, nested arrays, slices, `Vec`s and ndarray arrays as operands, views of ranges of
//! positions (`x[i in 1..n]`), and the run-time shape checks. Imports only `tensor`.

pub(crate) mod access;
pub(crate) mod array;
pub(crate) mod check;
pub(crate) mod dense;
pub(crate) mod extents;
#[cfg(feature = "ndarray")]
pub(crate) mod ndarray;
pub(crate) mod range;
pub(crate) mod slice;

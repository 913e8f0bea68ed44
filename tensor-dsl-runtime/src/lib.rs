//! Runtime of `tensor-dsl`: the tensors `tensor!` reads and writes, the shape checks it runs,
//! and the kernels it calls.
//!
//! # Memory model
//!
//! A [`Tensor<T>`] owns a contiguous buffer in row-major order. A [`TensorView`] or
//! [`TensorViewMut`] addresses elements of such a buffer through a start offset and one signed
//! stride per axis, in elements, so transposes ([`TensorView::permuted_axes`]) and slices
//! ([`TensorView::slice_axis`]) are new layouts over the same elements. The element at
//! multi-index `(i₀, …, iₙ)` lives at `offset + Σ iₖ·strideₖ`.
//!
//! Generated code turns every operand into an `Access` (pointer, buffer length, layout) and
//! every target into a `TargetAccess`. Each engine call takes one `Step`, whose constructor is
//! the runtime's proof: every address in bounds, the target's points distinct where threads
//! split them, and no operand sharing memory with the target (generated code reads such an
//! operand through a copy taken before the statement writes). One shortcut checks the same
//! facts itself: a small product of two matrices goes to its one GEMM call after a few
//! comparisons of its accesses' reach and addresses (`exec::gemm`'s `small_product`).
//!
//! # Layout of the crate
//!
//! Four rooms, each importing only those before it: `tensor` (what users hold), `operand`
//! (what generated code sees of any tensor), `exec` (the `Step` proof, the engines and the
//! `Backend` trait), `cuda` (a device backend, feature `cuda`), `dist` (distributed tensors:
//! their layouts and plans always, the tensors themselves with feature `mpi`); `__private`
//! re-exports what
//! generated code names, and [`checks`] names, publicly, what its compile-time checks are
//! made of.

#![deny(missing_docs)]

#[cfg(feature = "cuda")]
pub mod cuda;
pub mod dist;
mod element;
mod error;
mod exec;
mod operand;
mod tensor;

#[doc(hidden)]
pub mod __private;
pub mod checks;
#[doc(hidden)]
pub use exec::network;

#[cfg(feature = "matrix")]
pub use element::MatrixElement;
pub use element::{c32, c64, Element, Fractional, Real};
pub use error::{ShapeError, ShapeErrorKind};
pub use operand::extents::{
    Dynamic, Extent, Extents1, Extents2, Extents3, Extents4, ExtentsType, StaticRank,
};
#[cfg(feature = "ndarray")]
pub use operand::ndarray::NdExtents;
pub use tensor::{IntoShape, Tensor, TensorView, TensorViewMut};

/// The matrix operations `tensor!`'s matrix statements call (`let l[i, j] = cholesky(a[i, j]);`
/// and `solve`, `eigh`, `svd`, `qr`, `matpow`): each reads an operand as a matrix whose rows
/// and columns are groups of its axes ([`Grouped`](matrix::Grouped)), calls `faer`, and returns
/// the results in their `let`'s index order, or an error before making any. Feature
/// `matrix` (on by default).
#[cfg(feature = "matrix")]
pub mod matrix {
    pub use crate::exec::matrix::{
        cholesky, eigh, matpow, qr, solve, svd, Grouped, SvdFactors, Truncation,
    };
    /// The `faer` crate these operations call, at the version they call: hand results to it
    /// (`faer::MatRef::from_row_major_slice(t.as_slice(), m, n)`) without a second copy of it.
    pub use faer;
}

/// Iterators over the elements of views (ndarray's module name).
pub mod iter {
    pub use crate::tensor::Iter;
}

//! Shape mistakes found at run time → one opaque error type whose message names the index, the
//! tensors, the positions and the extents involved. The numerical failures of matrix
//! operations (a matrix not positive definite, a singular system, no convergence) are kinds of
//! the same error, so `try_tensor!` returns every failure of a block through one type.

use std::fmt;

/// What kind of shape mistake a [`ShapeError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShapeErrorKind {
    /// Two occurrences of one index have different extents, or a target's shape differs from
    /// the extents of its left-hand indices.
    ExtentMismatch,
    /// A tensor is accessed with a different number of indices than it has dimensions.
    RankMismatch,
    /// A fixed position (`a[i, 3]`) or a slice lies outside its axis.
    OutOfBounds,
    /// The data given for a shape has the wrong number of elements.
    DataLength,
    /// An axis list is not a permutation of the tensor's axes.
    InvalidPermutation,
    /// The element count of a shape overflows `usize`.
    Overflow,
    /// A shape cannot become another: a reshape to a different element count, or a broadcast
    /// to a shape whose extents do not agree (ndarray's name).
    IncompatibleShape,
    /// A view's strides do not allow the operation without a copy: reshaping a view that is
    /// not contiguous in row-major order (ndarray's name).
    IncompatibleLayout,
    /// A matrix operation needs a square matrix, and the extents of the indices grouped as
    /// its rows and as its columns multiply to different sizes.
    NotSquare,
    /// `cholesky` of a matrix that is not positive definite (a pivot is not positive).
    NotPositiveDefinite,
    /// `solve`, or `matpow` with a negative power, of a singular matrix (a pivot of its LU
    /// factorization is zero, or below the element type's epsilon relative to the largest).
    Singular,
    /// `svd` or `eigh` did not converge.
    NoConvergence,
}

/// A shape error: which rule was broken and a message saying where.
///
/// The representation is private so it can grow (spans, structured fields) later.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeError {
    kind: ShapeErrorKind,
    message: String,
}

impl ShapeError {
    pub(crate) fn new(kind: ShapeErrorKind, message: String) -> Self {
        ShapeError { kind, message }
    }

    /// The rule that was broken.
    pub fn kind(&self) -> ShapeErrorKind {
        self.kind
    }
}

impl fmt::Display for ShapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ShapeError {}

//! Tensor algebra in Einstein notation, compiled at build time.
//!
//! ```
//! use tensor_dsl::{tensor, Tensor};
//!
//! let a = Tensor::<f64>::from_fn([2, 3, 4], |ix| (ix[0] + ix[1] * ix[2]) as f64);
//! let b = Tensor::<f64>::from_fn([3, 5, 4], |ix| (ix[0] * ix[1] + ix[2]) as f64);
//! tensor! {
//!     let c[i, j] = a[i, k, l] * b[k, j, l];   // sums over k and l
//!     let norm2 = c[i, j] * c[i, j];
//! }
//! assert_eq!(c.shape(), &[2, 5]);
//! assert!(norm2 > 0.0);
//! ```
//!
//! The language is described in the README: `let` of a new tensor or scalar, `=`, `+=` and
//! `-=` into existing tensors and scalars, summation over every right-hand index missing from
//! the left, broadcasting, diagonals and traces, element-wise functions. Mistakes found at
//! compile time are listed, with what rustc prints for each, in [`compile_errors`]; shape
//! errors found at run time panic at the macro call (`tensor!`) or return a [`ShapeError`]
//! (`try_tensor!`).

// Lets generated code name `::tensor_dsl::__private` inside this crate's own tests too.
extern crate self as tensor_dsl;

pub use tensor_dsl_macros::{tensor, try_tensor};

#[doc(hidden)]
pub use tensor_dsl_macros::__tensor_unoptimized;
pub use tensor_dsl_runtime::{
    iter, Element, IntoShape, ShapeError, ShapeErrorKind, Tensor, TensorView, TensorViewMut,
};

/// Extents as types, which `tensor!` checks at compile time: nested arrays such as
/// `[[f64; 3]; 4]` have `Extents2<4, 3>`, whose axes are `Extent<4>` and `Extent<3>`; tensors
/// whose shape is known only at run time have [`Dynamic`](extents::Dynamic) extents.
pub mod extents {
    #[cfg(feature = "ndarray")]
    pub use tensor_dsl_runtime::NdExtents;
    pub use tensor_dsl_runtime::{
        Dynamic, Extent, Extents1, Extents2, Extents3, Extents4, ExtentsType, StaticRank,
    };
}

/// The CUDA backend (feature `cuda`): devices, the simulator and device tensors. A `tensor!`
/// statement whose tensors are all [`cuda::CudaTensor`]s runs on their device.
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use tensor_dsl_runtime::cuda::{
        device_count, nvrtc, CudaDevice, CudaError, CudaTensor, DeviceStats,
    };
}

#[doc = include_str!("../docs/compile-errors.md")]
pub mod compile_errors {}

#[doc = include_str!("../docs/coming-from.md")]
pub mod coming_from {}

#[doc(hidden)]
pub mod __private {
    pub use tensor_dsl_runtime::__private::*;
}

/// The README's examples, compiled and run as doctests so they stay true.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

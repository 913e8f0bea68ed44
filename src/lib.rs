#![doc = include_str!("../docs/language.md")]
#![deny(missing_docs)]

// Lets generated code name `::tensor_dsl::__private` inside this crate's own tests too.
extern crate self as tensor_dsl;

/// Runs a block of tensor statements, written in the language the [crate documentation](crate)
/// describes. Shape errors found at run time panic here, before anything is written.
///
/// ```
/// use tensor_dsl::{tensor, Tensor};
///
/// let a = Tensor::<f32>::from_fn([3, 2], |ix| (ix[0] + ix[1]) as f32);
/// tensor! { let gram[i, j] = a[k, i] * a[k, j]; }
/// assert_eq!(gram.as_slice(), &[5.0, 8.0, 8.0, 14.0]);
/// ```
pub use tensor_dsl_macros::tensor;

/// Like [`tensor!`], but a run-time shape error returns `Err(ShapeError.into())` from the
/// enclosing function, before anything is written.
///
/// ```
/// use tensor_dsl::{try_tensor, ShapeError, Tensor};
///
/// fn outer(x: &Tensor<f64>, y: &Tensor<f64>) -> Result<Tensor<f64>, ShapeError> {
///     try_tensor! { let o[i, j] = x[i] * y[j]; }
///     Ok(o)
/// }
/// assert_eq!(outer(&Tensor::ones([2]), &Tensor::ones([3]))?.shape(), &[2, 3]);
/// # Ok::<(), ShapeError>(())
/// ```
pub use tensor_dsl_macros::try_tensor;

#[doc(hidden)]
pub use tensor_dsl_macros::{__tensor_general, __tensor_unoptimized};
#[cfg(feature = "matrix")]
pub use tensor_dsl_runtime::MatrixElement;
pub use tensor_dsl_runtime::{
    c32, c64, checks, iter, Element, Fractional, IntoShape, Real, ShapeError, ShapeErrorKind,
    Tensor, TensorView, TensorViewMut,
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
        device_count, nvrtc, CudaDevice, CudaError, CudaTensor, DeviceElement, DeviceStats,
    };
}

/// Distributed tensors over MPI (feature `mpi`): a [`dist::World`] of processes and
/// [`dist::DistTensor`]s spread over it by a [`dist::Distribution`], made, gathered and
/// redistributed by collective calls; `tensor!` statements over them run on every process.
#[cfg(feature = "mpi")]
pub mod dist {
    pub use tensor_dsl_runtime::dist::{
        mpi, DistError, DistTensor, Distribution, DistributionError, Split, Traffic, World,
    };
}

/// The matrix operations behind `tensor!`'s matrix statements (`cholesky`, `solve`, `eigh`,
/// `svd`, `qr`, `matpow`), on `faer`. Feature `matrix` (on by default).
#[cfg(feature = "matrix")]
pub use tensor_dsl_runtime::matrix;

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

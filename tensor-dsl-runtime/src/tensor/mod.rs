//! What users hold: owned tensors ([`Tensor`]), strided views of their elements
//! ([`TensorView`], [`TensorViewMut`]) and the layouts both are made of. The first room: it
//! imports nothing from `operand`, `exec` or `cuda`.

pub(crate) mod layout;
pub(crate) mod memory;
pub(crate) mod owned;
#[cfg(feature = "serde")]
mod serde;
pub(crate) mod view;

pub use layout::IntoShape;
pub use owned::Tensor;
pub use view::{Iter, TensorView, TensorViewMut};

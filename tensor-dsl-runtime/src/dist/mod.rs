//! Distributed tensors over MPI: a room beside `cuda/`, importing `tensor/`, `operand/`,
//! `exec/` and the base. `layout` is the index arithmetic of a distribution (which rank holds
//! which elements) and `plan` how a step runs over distributed tensors, both pure arithmetic
//! without MPI (so `tensor-dsl explain --ranks` can show plans anywhere); with feature `mpi`,
//! `world` is the communicator and its collective byte transfers (with counters), `tensor` the
//! `DistTensor` users hold with its collective constructors and moves, and `backend` the
//! steps of `tensor!` statements over `DistTensor`s.

#[cfg(feature = "mpi")]
mod backend;
mod layout;
pub mod plan;
#[cfg(feature = "mpi")]
mod tensor;
#[cfg(feature = "mpi")]
mod world;

#[cfg(feature = "mpi")]
pub use backend::{DistStep, Distributed};
pub use layout::{Distribution, DistributionError, Split};
#[cfg(feature = "mpi")]
pub use tensor::{DistError, DistTensor};
#[cfg(feature = "mpi")]
pub use world::{Traffic, World};

/// The MPI bindings the world is made from (`mpi::initialize()`), re-exported so a program
/// needs no dependency of its own.
#[cfg(feature = "mpi")]
pub use mpi;

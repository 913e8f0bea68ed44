//! Distributed tensors over MPI (feature `mpi`): a room beside `cuda/`, importing `tensor/`
//! and the base only. `layout` is the index arithmetic of a distribution (which rank holds
//! which elements, no messages), `world` the communicator and its collective byte transfers
//! (with counters), `tensor` the `DistTensor` users hold and its collective constructors and
//! moves, `backend` the steps of `tensor!` statements over `DistTensor`s.

mod backend;
mod layout;
mod tensor;
mod world;

pub use backend::{DistStep, Distributed, OnDist};
pub use layout::{Distribution, DistributionError, Split};
pub use tensor::{DistError, DistTensor};
pub use world::{Traffic, World};

/// The MPI bindings the world is made from (`mpi::initialize()`), re-exported so a program
/// needs no dependency of its own.
pub use mpi;

//! Unoptimized builds only: the engines' instances for the common element types, loop counts
//! and operand counts, compiled once with the runtime. At opt-level 0 rustc shares a
//! dependency's generic instances with the crates that use it, so a debug build of a crate of
//! `tensor!` statements links these instead of compiling its own.

use std::hint::black_box;

use crate::element::Element;

use super::gemm::{contract, contract_detached};
use super::loop_nest::{copy_detached, evaluate_detached_with, evaluate_nest, AnyNest, DynBody};
use super::network::{contract_network, PlanCache};
use super::step::{Step, Unproven};

/// The loop-nest engine at one element type, loop count and operand count, and a statement's
/// one step through it (detached and proven first).
fn nest<T: Element, const L: usize, const N: usize>() {
    let engine: fn(Step<'static, T, L, N>, &'static DynBody<'static, T, N>, bool) =
        evaluate_nest::<T, L, N, AnyNest>;
    black_box(engine);
    let step: fn(Unproven<'static, T, L, N>, &'static DynBody<'static, T, N>) =
        evaluate_detached_with::<T, L, N, &'static DynBody<'static, T, N>, AnyNest>;
    black_box(step);
}

/// The contraction engines at one element type and loop count, and a statement's one copy or
/// product step through them.
fn contraction<T: Element, const L: usize>() {
    black_box(contract::<T, L> as fn(Step<'_, T, L, 2>, _));
    black_box(contract_network::<T, L, 3> as fn(Step<'_, T, L, 3>, _, &PlanCache));
    black_box(contract_detached::<T, L> as fn(Unproven<'_, T, L, 2>, _));
    black_box(copy_detached::<T, L> as fn(Unproven<'_, T, L, 1>));
}

macro_rules! nests {
    ($t:ty; $($l:literal)*) => {$(
        nest::<$t, $l, 1>();
        nest::<$t, $l, 2>();
        nest::<$t, $l, 3>();
        contraction::<$t, $l>();
    )*};
}

/// Instantiates every engine listed above; never called.
#[doc(hidden)]
pub fn instances() {
    nests!(f64; 1 2 3 4 5 6);
    nests!(f32; 1 2 3 4 5 6);
}

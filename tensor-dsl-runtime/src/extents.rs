//! Operand types → their extents as types: `ExtentsN<A, B, …>` for statically shaped operands
//! (nested arrays), [`Dynamic`] for shapes known only at run time. Generated
//! code asks these traits, so a rank or extent mismatch between static operands is a type error
//! on the user's access, reported by `cargo check`; anything dynamic is left to the run-time
//! checks, which stay in place for every operand.

/// The extents of a tensor whose shape is known only at run time: every rank and extent is
/// accepted at compile time and checked when the statement runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dynamic;

/// One axis of extent `N`, known at compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent<const N: usize>;

/// Extents that admit `R` indices: static extents of exactly rank `R`, or [`Dynamic`].
#[diagnostic::on_unimplemented(
    message = "this access has {R} index positions, but the tensor's type fixes its extents to `{Self}`",
    label = "{R} index positions here",
    note = "give the access one index per axis: `Extents2<4, 3>` is the type of a 4 × 3 tensor"
)]
pub trait AdmitsRank<const R: usize> {}

impl<const R: usize> AdmitsRank<R> for Dynamic {}

/// The extents of a tensor whose rank `R` is fixed by its type but whose extents are known only
/// at run time (an ndarray `Array2`, say): `R` indices are admitted, every extent is checked
/// when the statement runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticRank<const R: usize>;

impl<const R: usize> AdmitsRank<R> for StaticRank<R> {}

impl<const K: usize, const R: usize> AxisExtent<K> for StaticRank<R> {
    type Extent = Dynamic;
}

/// The extent type of axis `K`.
pub trait AxisExtent<const K: usize> {
    /// [`Extent<N>`] or [`Dynamic`].
    type Extent: Default;
}

impl<const K: usize> AxisExtent<K> for Dynamic {
    type Extent = Dynamic;
}

impl Default for Dynamic {
    fn default() -> Self {
        Dynamic
    }
}

impl<const N: usize> Default for Extent<N> {
    fn default() -> Self {
        Extent
    }
}

/// Two uses of index `I` whose extents can agree: equal static extents, or a dynamic one
/// (checked at run time).
#[diagnostic::on_unimplemented(
    message = "index `{I}` has extent `{Self}` in one access but `{B}` in another",
    label = "this axis has extent `{B}`, an earlier use of `{I}` has `{Self}`",
    note = "an index runs over one range: use a different index name, or operands of matching extents"
)]
pub trait Agrees<I: ?Sized, B> {}

impl<I: ?Sized, const N: usize> Agrees<I, Extent<N>> for Extent<N> {}
impl<I: ?Sized, const N: usize> Agrees<I, Dynamic> for Extent<N> {}
impl<I: ?Sized, const N: usize> Agrees<I, Extent<N>> for Dynamic {}
impl<I: ?Sized> Agrees<I, Dynamic> for Dynamic {}

/// Static extents per rank: `ExtentsN<A, B, …>` admits exactly `N` indices, and its axis `K`
/// has extent `Extent<…>` of the `K`-th parameter.
macro_rules! static_extents {
    ($(#[$doc:meta])* $name:ident, $rank:literal: $($axis:literal $extent:ident),+) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<$(const $extent: usize),+>;

        impl<$(const $extent: usize),+> AdmitsRank<$rank> for $name<$($extent),+> {}

        static_extents!(@axes $name [$($extent),+] $($axis $extent),+);
    };
    (@axes $name:ident $all:tt $($axis:literal $extent:ident),+) => {
        $(static_extents!(@axis $name $all $axis $extent);)+
    };
    (@axis $name:ident [$($all:ident),+] $axis:literal $extent:ident) => {
        impl<$(const $all: usize),+> AxisExtent<$axis> for $name<$($all),+> {
            type Extent = Extent<$extent>;
        }
    };
}

static_extents!(
    /// The extents of a static rank-1 tensor (`[T; A]`).
    Extents1, 1: 0 A
);
static_extents!(
    /// The extents of a static rank-2 tensor (`[[T; B]; A]`).
    Extents2, 2: 0 A, 1 B
);
static_extents!(
    /// The extents of a static rank-3 tensor (`[[[T; C]; B]; A]`).
    Extents3, 3: 0 A, 1 B, 2 C
);
static_extents!(
    /// The extents of a static rank-4 tensor (`[[[[T; D]; C]; B]; A]`).
    Extents4, 4: 0 A, 1 B, 2 C, 3 D
);

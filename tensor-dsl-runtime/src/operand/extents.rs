//! Operand types → their extents as types: `ExtentsN<A, B, …>` for statically shaped operands
//! (nested arrays), [`Dynamic`] for shapes known only at run time. Generated
//! code asks these traits, so a rank or extent mismatch between static operands is a type error
//! on the user's access, reported by `cargo check`; anything dynamic is left to the run-time
//! checks, which stay in place for every operand.

use std::marker::PhantomData;

/// What every extents type says of itself: whether all of its extents are known at compile
/// time. Generated code skips the run-time checks such extents already passed at compile time,
/// and runs small statements over them as plain loops with constant bounds.
///
/// Static extents also state the layout: row-major and contiguous from the access's first
/// element, a nested array's. Loops written out over them compute offsets from these constants,
/// but only for an access whose real shape and strides were checked to be exactly these (see
/// `dense.rs`); a type whose tensors are laid out otherwise takes the general kernels.
pub trait ExtentsType {
    /// Every extent is part of the type.
    const STATIC: bool;
    /// The static extents, outermost first (0 past the rank, and for dynamic extents).
    const EXTENTS: [usize; MAX_STATIC_RANK] = [0; MAX_STATIC_RANK];
    /// The row-major strides of [`EXTENTS`](Self::EXTENTS).
    const STRIDES: [usize; MAX_STATIC_RANK] = [0; MAX_STATIC_RANK];
    /// The rank of static extents.
    const RANK: usize = 0;
}

/// The highest rank of a static tensor (nested arrays go up to 4).
pub const MAX_STATIC_RANK: usize = 4;

/// `values` followed by zeros up to [`MAX_STATIC_RANK`].
const fn pad<const R: usize>(values: [usize; R]) -> [usize; MAX_STATIC_RANK] {
    let mut padded = [0; MAX_STATIC_RANK];
    let mut axis = 0;
    while axis < R {
        padded[axis] = values[axis];
        axis += 1;
    }
    padded
}

/// The row-major strides of `extents`.
const fn row_major<const R: usize>(extents: [usize; R]) -> [usize; R] {
    let mut strides = [0; R];
    let mut stride = 1;
    let mut axis = R;
    while axis > 0 {
        axis -= 1;
        strides[axis] = stride;
        stride *= extents[axis];
    }
    strides
}

/// The extents of a tensor whose shape is known only at run time: every rank and extent is
/// accepted at compile time and checked when the statement runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dynamic;

/// One axis of extent `N`, known at compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent<const N: usize>;

/// Extents that admit `R` indices: static extents of exactly rank `R`, or [`Dynamic`].
#[diagnostic::on_unimplemented(
    message = "this access has {R} indices, but the tensor's type fixes its rank (`{Self}`)",
    label = "an access of rank {R}",
    note = "give the access one index per axis: `StaticRank<1>` (a slice, a `Vec`, an ndarray `Array1`) takes one index, `Extents2<4, 3>` (a `[[T; 3]; 4]`) takes two"
)]
pub trait AdmitsRank<const R: usize> {}

impl<const R: usize> AdmitsRank<R> for Dynamic {}

impl ExtentsType for Dynamic {
    const STATIC: bool = false;
}

/// The extents of a tensor whose rank `R` is fixed by its type but whose extents are known only
/// at run time (an ndarray `Array2`, say): `R` indices are admitted, every extent is checked
/// when the statement runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StaticRank<const R: usize>;

impl<const R: usize> AdmitsRank<R> for StaticRank<R> {}

impl<const R: usize> ExtentsType for StaticRank<R> {
    const STATIC: bool = false;
}

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

/// The extent of an index over two of its uses, for the type of a `let` result: static only if
/// both are (a use in a tensor of run-time shape makes the index's extent `Dynamic`, so the
/// result is a `Tensor`, whatever else is static). Two different static extents keep the
/// first: that mismatch is `Agrees`'s error, not this one's.
pub trait Meet<B> {
    /// [`Extent<N>`] or [`Dynamic`].
    type Output: Default;
}

impl<const N: usize, const M: usize> Meet<Extent<M>> for Extent<N> {
    type Output = Extent<N>;
}
impl<const N: usize> Meet<Dynamic> for Extent<N> {
    type Output = Dynamic;
}
impl<const M: usize> Meet<Extent<M>> for Dynamic {
    type Output = Dynamic;
}
impl Meet<Dynamic> for Dynamic {
    type Output = Dynamic;
}

/// Static extents per rank: `ExtentsN<A, B, …>` admits exactly `N` indices, and its axis `K`
/// has extent `Extent<…>` of the `K`-th parameter.
macro_rules! static_extents {
    ($(#[$doc:meta])* $name:ident, $rank:literal: $($axis:literal $extent:ident),+;
     beyond $($beyond:literal),+) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct $name<$(const $extent: usize),+>;

        impl<$(const $extent: usize),+> AdmitsRank<$rank> for $name<$($extent),+> {}

        impl<$(const $extent: usize),+> ExtentsType for $name<$($extent),+> {
            const STATIC: bool = true;
            const EXTENTS: [usize; MAX_STATIC_RANK] = pad([$($extent),+]);
            const STRIDES: [usize; MAX_STATIC_RANK] = pad(row_major([$($extent),+]));
            const RANK: usize = $rank;
        }

        static_extents!(@axes $name [$($extent),+] $($axis $extent),+);
        // Axes past the rank have no extent to check: an access with too many indices is
        // reported once, by `AdmitsRank`, not again by every use of its extra indices.
        static_extents!(@beyonds $name [$($extent),+] $($beyond),+);
    };
    (@beyonds $name:ident $all:tt $($axis:literal),+) => {
        $(static_extents!(@beyond $name $all $axis);)+
    };
    (@beyond $name:ident [$($all:ident),+] $axis:literal) => {
        impl<$(const $all: usize),+> AxisExtent<$axis> for $name<$($all),+> {
            type Extent = Dynamic;
        }
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
    Extents1, 1: 0 A; beyond 1, 2, 3, 4, 5, 6, 7
);
static_extents!(
    /// The extents of a static rank-2 tensor (`[[T; B]; A]`).
    Extents2, 2: 0 A, 1 B; beyond 2, 3, 4, 5, 6, 7
);
static_extents!(
    /// The extents of a static rank-3 tensor (`[[[T; C]; B]; A]`).
    Extents3, 3: 0 A, 1 B, 2 C; beyond 3, 4, 5, 6, 7
);
static_extents!(
    /// The extents of a static rank-4 tensor (`[[[[T; D]; C]; B]; A]`).
    Extents4, 4: 0 A, 1 B, 2 C, 3 D; beyond 4, 5, 6, 7
);

/// The extents type of a tensor whose axes have these extent types, in order: static
/// (`(Extent<3>, Extent<4>)` → `Extents2<3, 4>`) only if every axis is, else [`Dynamic`]. A
/// written-out network's temporaries take it from the extent types of their indices, so over
/// nested arrays their offsets are constants as a `let`'s nested array's are.
pub trait AxesExtents {
    /// The extents type.
    type Extents: ExtentsType;
}

impl AxesExtents for () {
    type Extents = Extents0;
}

macro_rules! axes_extents {
    // Every axis static.
    (static $name:ident: $($extent:ident),+) => {
        impl<$(const $extent: usize),+> AxesExtents for ($(Extent<$extent>,)+) {
            type Extents = $name<$($extent),+>;
        }
    };
    // Static axes up to the first dynamic one: dynamic, whatever follows.
    (dynamic [$($extent:ident),*] $($rest:ident),*) => {
        impl<$(const $extent: usize,)* $($rest),*> AxesExtents
            for ($(Extent<$extent>,)* Dynamic, $($rest,)*)
        {
            type Extents = Dynamic;
        }
    };
}

axes_extents!(static Extents1: A);
axes_extents!(static Extents2: A, B);
axes_extents!(static Extents3: A, B, C);
axes_extents!(static Extents4: A, B, C, D);
axes_extents!(dynamic []);
axes_extents!(dynamic [] Y1);
axes_extents!(dynamic[A]);
axes_extents!(dynamic [] Y1, Y2);
axes_extents!(dynamic [A] Y2);
axes_extents!(dynamic [A, B]);
axes_extents!(dynamic [] Y1, Y2, Y3);
axes_extents!(dynamic [A] Y2, Y3);
axes_extents!(dynamic [A, B] Y3);
axes_extents!(dynamic [A, B, C]);

/// What a tensor's type says of its layout, as values the compiler folds: whether every extent
/// is static, and if so the extents (see [`ExtentsType`]). The prelude takes the extents of
/// static tensors from here rather than from their shape slices, whose contents the optimizer
/// may not see. It carries the extents type `E`, so
/// the compile-time checks of ranks and extents go through it: a value that is no tensor is
/// reported once, where its layout is read, and nothing built on its layout adds errors.
pub struct StaticLayout<E> {
    /// Every extent is static: rank and extents were checked at compile time.
    pub is_static: bool,
    /// The extents, outermost first (0 past the rank).
    pub extents: [usize; MAX_STATIC_RANK],
    /// For run-time extents, the shape the statement's checks read (`__tdsl_shape`), if known:
    /// the written-out loops take an access only if its own shape is this one (or its type says
    /// it is, `trusted`), so an operand whose access disagrees with its shape reaches the
    /// step's proof, or `as_run`'s check, which names it, before anything is written.
    claimed: Option<(usize, [usize; MAX_STATIC_RANK])>,
    /// The tensor's accesses have the shape it reports (`Operand::__TDSL_SHAPE_IS_ACCESS`), so
    /// `claims` holds of them without a comparison.
    trusted: bool,
    extents_type: PhantomData<fn() -> E>,
}

impl<E> Clone for StaticLayout<E> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E> Copy for StaticLayout<E> {}

impl<E: ExtentsType> StaticLayout<E> {
    /// The layout extents `E` state.
    pub const OF: Self = StaticLayout {
        is_static: E::STATIC,
        extents: E::EXTENTS,
        claimed: None,
        trusted: false,
        extents_type: PhantomData,
    };

    /// The layout `E` states, with `shape` as the shape the statement checked, kept for
    /// run-time extents where it has the `rank` the statement's accesses use, at most
    /// [`MAX_STATIC_RANK`] (a shape of another rank fails the statement's rank check).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub(crate) fn claiming(shape: &[usize], rank: usize) -> Self {
        // Element by element, not a call to `memcpy`/`memcmp` for a few words (small
        // statements on run-time extents call these on every run). Generated code passes the
        // rank as a constant, so once the shape's length is found equal to it the copy is that
        // many loads without bounds checks, and `claims` compares that many extents (a copy
        // of every slot up to the shape's length took a fifth of a 4 × 4 sum's instructions).
        let claimed = (!E::STATIC && rank <= MAX_STATIC_RANK && shape.len() == rank).then(|| {
            let extents = std::array::from_fn(|axis| if axis < rank { shape[axis] } else { 0 });
            (rank, extents)
        });
        StaticLayout {
            claimed,
            ..Self::OF
        }
    }

    /// This layout, for a type whose accesses have the shape it reports (see the field).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub(crate) fn trusting(self, trusted: bool) -> Self {
        StaticLayout { trusted, ..self }
    }

    /// Whether an access of this layout's tensor, of shape `shape`, may be taken as the one
    /// the statement checked without comparing the two: its type says so (see the field).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub(crate) fn trusted(&self) -> bool {
        self.trusted && self.claimed.is_some()
    }

    /// Whether `shape` is the one the statement checked (see the field).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub(crate) fn claims(&self, shape: &[usize]) -> bool {
        // Over every slot, each compared where the shape has it: a loop of constant length
        // over constant indices, which the compiler unrolls with the extents in registers
        // (a loop over the shape's length kept them in memory: ~40 instructions an operand).
        self.claimed.is_some_and(|(rank, extents)| {
            rank == shape.len()
                && (0..MAX_STATIC_RANK).fold(true, |same, axis| {
                    same & shape
                        .get(axis)
                        .is_none_or(|&extent| extent == extents[axis])
                })
        })
    }
}

/// The extents of a scalar, as the target of a statement with no left-hand indices: static,
/// rank 0, one element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extents0;

impl ExtentsType for Extents0 {
    const STATIC: bool = true;
}

//! Accesses and axes → a proven [`Step`]: the one place that turns raw accesses into bound ones.
//! Invariant: a `Step` exists only if every element its loop nest can address lies inside its
//! buffer, the target loops are exactly the target's, and no operand other than the target's own
//! point-wise read shares memory with the target. The engines trust nothing else, and only this
//! module can build or change a `Step`.

use std::marker::PhantomData;

use crate::element::Element;
use crate::operand::access::{
    stored_size, Access, Detached, Memory, Mode, RawAccess, TargetAccess,
};
use crate::operand::check::INCONSISTENT;

/// How one axis of an access is addressed: by a loop variable, or at a fixed position.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Axis {
    /// The axis follows loop variable number `0`.
    Loop(usize),
    /// The axis stays at this position.
    Fixed(usize),
}

/// An operand access with the axes it is read through, not yet proven (see [`Step::new`]).
pub struct Use<'b, T> {
    access: Access<'b, T>,
    axes: &'b [Axis],
}

/// The target access with the axes it is written through, not yet proven (see [`Step::new`]).
pub struct TargetUse<'b, T> {
    target: &'b TargetAccess<'b, T>,
    axes: &'b [Axis],
}

impl<'a, T> Access<'a, T> {
    /// This operand read through `axes` (one per axis of the operand).
    pub fn at<'b>(self, axes: &'b [Axis]) -> Use<'b, T>
    where
        'a: 'b,
    {
        Use { access: self, axes }
    }
}

/// A step as a statement writes it, before its operands are detached from the target and it
/// is proven: `Step::new`'s arguments, each operand beside the axes it is read through.
pub struct Unproven<'a, T, const L: usize, const N: usize> {
    /// What the step writes.
    pub target: &'a TargetAccess<'a, T>,
    /// The loop (or fixed position) of each of the target's axes.
    pub target_axes: &'a [Axis],
    /// How each point's value combines with the target's element.
    pub mode: Mode<T>,
    /// What each point's sum is multiplied by.
    pub alpha: T,
    /// Each loop's extent, the target's loops first.
    pub extents: [usize; L],
    /// How many of the loops are the target's.
    pub n_out: usize,
    /// Each operand, and the loop (or fixed position) of each of its axes.
    pub operands: [(Access<'a, T>, &'a [Axis]); N],
}

/// `run` on `step` proven, after reading every operand as [`TargetAccess::detach`] says (a
/// copy of one that shares memory with the target, taken before anything is written; the
/// target's own read, `TargetAccess::read`, stays in place). What a statement of one host
/// step runs when its written-out loops do not apply: one call (`evaluate_detached`,
/// `copy_detached`, `contract_detached`) where each statement used to write out the detaching
/// and the proof, so a debug build compiles them once per element type, loop count and
/// operand count.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
pub(crate) fn with_detached<T: Element, const L: usize, const N: usize, R>(
    step: Unproven<'_, T, L, N>,
    run: impl FnOnce(Step<'_, T, L, N>) -> R,
) -> R {
    let Unproven {
        target,
        target_axes,
        mode,
        alpha,
        extents,
        n_out,
        operands,
    } = step;
    let held = operands.map(|(access, axes)| {
        let held = if access.in_place {
            Detached::Original(access)
        } else {
            target.detach(access)
        };
        (held, axes)
    });
    let uses = held.each_ref().map(|(held, axes)| held.access().at(axes));
    run(Step::new(
        target.at(target_axes),
        mode,
        alpha,
        extents,
        n_out,
        uses,
    ))
}

impl<'a, T> TargetAccess<'a, T> {
    /// The target written through `axes` (one per axis of the target).
    pub fn at<'b>(&'b self, axes: &'b [Axis]) -> TargetUse<'b, T>
    where
        'a: 'b,
    {
        TargetUse { target: self, axes }
    }
}

#[cfg(feature = "mpi")]
impl<'b, T> Use<'b, T> {
    /// The access and its axes, for a backend that plans the step itself (`dist`).
    pub(crate) fn parts(self) -> (Access<'b, T>, &'b [Axis]) {
        (self.access, self.axes)
    }
}

#[cfg(feature = "mpi")]
impl<'b, T> TargetUse<'b, T> {
    /// The target access and its axes (see [`Use::parts`]).
    pub(crate) fn parts(self) -> (&'b TargetAccess<'b, T>, &'b [Axis]) {
        (self.target, self.axes)
    }
}

/// An access bound to a loop nest of `L` loops: base offset plus one stride per loop, the
/// buffer it addresses, and which loops it uses. A loop used on several axes (`a[i, i]`) gets
/// the sum of their strides.
pub(crate) struct Bound<'a, T, const L: usize> {
    pub(crate) data: *const T,
    pub(crate) len: usize,
    pub(crate) base: isize,
    pub(crate) strides: [isize; L],
    /// Bit `v` set: loop `v` addresses one of the access's axes.
    pub(crate) uses: u64,
    /// The target's own elements, read where they are written (`c[i] = 2 * c[i]`).
    pub(crate) in_place: bool,
    /// The buffer holds `T::Part`s read as `T`s (see `RawAccess::part`): `data`, `len`, the
    /// base and the strides count parts.
    pub(crate) part: bool,
    _borrow: PhantomData<&'a T>,
}

impl<T, const L: usize> Clone for Bound<'_, T, L> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T, const L: usize> Copy for Bound<'_, T, L> {}

impl<'a, T, const L: usize> Bound<'a, T, L> {
    /// Binds raw layout parts to the loops of a nest with the given extents (not yet proven in
    /// bounds: [`Step::assemble`] does that).
    ///
    /// # Panics
    /// On a rank, extent or position mismatch: generated code checks these earlier with messages
    /// for users, so reaching one of these panics is a bug in the caller.
    #[inline]
    fn new(access: &RawAccess<'a, T>, axes: &[Axis], extents: &[usize; L], in_place: bool) -> Self {
        let RawAccess {
            data,
            len,
            shape,
            strides,
            offset,
            part,
            ..
        } = *access;
        assert!(
            shape.len() == axes.len(),
            "an operand's access has rank {} but the statement indexes it with {}: {INCONSISTENT}",
            shape.len(),
            axes.len()
        );
        let mut base = offset;
        let mut loop_strides = [0isize; L];
        let mut uses = 0u64;
        for ((&axis, &extent), &stride) in axes.iter().zip(shape.iter()).zip(strides) {
            match axis {
                Axis::Loop(var) => {
                    assert!(var < L, "tensor-dsl bug: loop variable out of range");
                    assert!(
                        extents[var] == extent,
                        "an operand's access has shape {shape:?}, whose axis of extent \
                         {extent} the statement runs over {} points: {INCONSISTENT}",
                        extents[var]
                    );
                    loop_strides[var] = loop_strides[var]
                        .checked_add(stride)
                        .expect("tensor-dsl bug: stride overflow");
                    uses |= 1 << var;
                }
                Axis::Fixed(position) => {
                    assert!(
                        position < extent,
                        "an operand's access has shape {shape:?}, but the statement reads \
                         position {position} of an axis of extent {extent}: {INCONSISTENT}"
                    );
                    base = isize::try_from(position)
                        .ok()
                        .and_then(|position| position.checked_mul(stride))
                        .and_then(|shift| base.checked_add(shift))
                        .expect("tensor-dsl bug: offset overflow");
                }
            }
        }
        Bound {
            data,
            len,
            base,
            strides: loop_strides,
            uses,
            in_place,
            part,
            _borrow: PhantomData,
        }
    }

    /// A bound access over a contiguous buffer of the crate's own (a temporary, on the host
    /// or a device), given by its start and length, each loop in `uses` addressed with the
    /// given stride: the proof checks offsets against `len`, and whoever runs the step keeps
    /// the buffer alive for `'a`.
    pub(crate) fn raw(data: *const T, len: usize, strides: [isize; L], uses: u64) -> Self {
        Bound {
            data,
            len,
            base: 0,
            strides,
            uses,
            in_place: false,
            part: false,
            _borrow: PhantomData,
        }
    }

    /// The same access over loops renumbered by `order` (new loop `k` is old loop
    /// `order[k]`).
    pub(crate) fn reordered(&self, order: &[usize; L]) -> Self {
        let uses = (0..L).fold(0u64, |mask, k| mask | (self.uses >> order[k] & 1) << k);
        Bound {
            strides: std::array::from_fn(|k| self.strides[order[k]]),
            uses,
            ..*self
        }
    }

    /// The lowest and highest offset the loops can reach, or `None` if some loop it runs over
    /// is empty (then it addresses nothing).
    ///
    /// # Panics
    /// If an offset overflows `isize` (only a buggy caller gets there: real layouts fit).
    #[inline]
    pub(crate) fn reach(&self, extents: &[usize; L], loops: u64) -> Option<(isize, isize)> {
        let running = (0..L).filter(|&var| loops >> var & 1 == 1);
        if running.clone().any(|var| extents[var] == 0) {
            return None;
        }
        let (mut low, mut high) = (self.base, self.base);
        for var in running {
            let reach = isize::try_from(extents[var] - 1)
                .ok()
                .and_then(|last| last.checked_mul(self.strides[var]))
                .expect("tensor-dsl bug: offset overflow");
            let end = if reach < 0 { &mut low } else { &mut high };
            *end = end
                .checked_add(reach)
                .expect("tensor-dsl bug: offset overflow");
        }
        Some((low, high))
    }

    /// The byte addresses `[first, last]` the access can touch, after proving them inside its
    /// buffer; `None` if it touches nothing.
    #[inline]
    fn proven_span(&self, extents: &[usize; L], loops: u64) -> Option<(usize, usize)> {
        let (low, high) = self.reach(extents, loops)?;
        assert!(
            low >= 0 && (high as usize) < self.len,
            "an access reaches past the {} elements of its buffer: {INCONSISTENT}",
            self.len
        );
        let size = stored_size::<T>(self.part);
        let start = self.data as usize;
        Some((start + low as usize * size, start + high as usize * size))
    }
}

/// A target bound to a loop nest (see [`Bound`]).
pub(crate) struct BoundTarget<'a, T, const L: usize> {
    pub(crate) data: *mut T,
    pub(crate) len: usize,
    pub(crate) base: isize,
    pub(crate) strides: [isize; L],
    pub(crate) uses: u64,
    _borrow: PhantomData<&'a std::cell::Cell<T>>,
}

impl<'a, T, const L: usize> BoundTarget<'a, T, L> {
    /// A temporary of the crate's own as a target (see [`Bound::raw`]).
    pub(crate) fn raw(data: *mut T, len: usize, strides: [isize; L], uses: u64) -> Self {
        BoundTarget {
            data,
            len,
            base: 0,
            strides,
            uses,
            _borrow: PhantomData,
        }
    }

    /// A second handle on the same target, for a sequence of steps that replaces the one
    /// holding this handle: the caller runs one or the other, never both at once.
    fn alias(&self) -> Self {
        BoundTarget {
            _borrow: PhantomData,
            ..*self
        }
    }

    /// The same target over loops renumbered by `order` (see [`Bound::reordered`]).
    pub(crate) fn reordered(self, order: &[usize; L]) -> Self {
        let read = self.as_read().reordered(order);
        BoundTarget {
            strides: read.strides,
            uses: read.uses,
            ..self
        }
    }

    /// The target's elements as a read access (for the proof, which is the same for both).
    pub(crate) fn as_read(&self) -> Bound<'a, T, L> {
        Bound {
            data: self.data,
            len: self.len,
            base: self.base,
            strides: self.strides,
            uses: self.uses,
            in_place: false,
            part: false,
            _borrow: PhantomData,
        }
    }

    /// Whether no two points of the target loops address the same element. Checked as: sorted
    /// by stride, each loop's stride exceeds the reach of all smaller ones (true of every layout
    /// a tensor or its views can have, with diagonals `c[i, i]` folded into one stride).
    #[inline]
    fn is_injective(&self, extents: &[usize; L]) -> bool {
        // Loops the target does not use, or of extent one, enter as extent one and are skipped.
        let mut loops: [(usize, usize); L] = std::array::from_fn(|var| {
            let used = self.uses >> var & 1 == 1 && extents[var] > 1;
            (
                self.strides[var].unsigned_abs(),
                if used { extents[var] } else { 1 },
            )
        });
        loops.sort_unstable();
        let mut reach = 0usize;
        for (stride, extent) in loops.into_iter().filter(|&(_, extent)| extent > 1) {
            if stride <= reach {
                return false;
            }
            match stride
                .checked_mul(extent - 1)
                .and_then(|span| span.checked_add(reach))
            {
                Some(next) => reach = next,
                None => return false,
            }
        }
        true
    }
}

/// One engine call's arguments, proven: `target[out] (=|+=|= β·target +) α · Σ_red f(operands)`
/// over `L` loops whose first `n_out` are the target's.
///
/// Built only in this module: by [`Step::new`] (from accesses and axes), or from a step an
/// engine was given (`derived`, `with_operands`); all prove the same facts, and the fields are
/// private here, so an engine given a `Step` needs no further checks.
pub struct Step<'a, T, const L: usize, const N: usize> {
    target: BoundTarget<'a, T, L>,
    mode: Mode<T>,
    alpha: T,
    extents: [usize; L],
    n_out: usize,
    operands: [Bound<'a, T, L>; N],
    /// No two target points share an element, so target loops may split across threads.
    injective: bool,
    /// Where the target's and the operands' elements live.
    memory: [Memory; 2],
}

/// What a proven step holds, read-only: the fields are private to this module, so a `Step`
/// cannot be built or changed anywhere else, and the engines read it through these.
impl<'a, T, const L: usize, const N: usize> Step<'a, T, L, N> {
    /// The target, bound to the loops (it uses exactly the first `n_out`).
    pub(crate) fn target(&self) -> &BoundTarget<'a, T, L> {
        &self.target
    }

    /// How values combine with the target (β = 0 already made `Assign`).
    pub(crate) fn mode(&self) -> Mode<T>
    where
        T: Copy,
    {
        self.mode
    }

    /// The factor every point's sum is scaled by (1 for an empty sum).
    pub(crate) fn alpha(&self) -> T
    where
        T: Copy,
    {
        self.alpha
    }

    /// The loops' extents, the target's first.
    pub(crate) fn extents(&self) -> &[usize; L] {
        &self.extents
    }

    /// How many of the loops are the target's.
    pub(crate) fn n_out(&self) -> usize {
        self.n_out
    }

    /// The operands, bound to the loops.
    pub(crate) fn operands(&self) -> &[Bound<'a, T, L>; N] {
        &self.operands
    }

    /// No two target points share an element, so target loops may split across threads.
    pub(crate) fn injective(&self) -> bool {
        self.injective
    }

    /// Where the target's and the operands' elements live.
    #[cfg_attr(not(feature = "cuda"), allow(dead_code))]
    pub(crate) fn memory(&self) -> [Memory; 2] {
        self.memory
    }
}

impl<'a, T: Element, const L: usize, const N: usize> Step<'a, T, L, N> {
    /// Binds the target and each operand to a loop nest with `extents`, the first `n_out` loops
    /// being the target's, and proves the step safe to run.
    ///
    /// # Panics
    /// If an access's rank, extents or positions disagree with `axes` and `extents`, if the
    /// target does not use exactly loops `0..n_out`, or if an operand other than the target's
    /// own point-wise read shares memory with the target. Generated code checks shapes with
    /// user-facing messages first and reads overlapping operands through a copy
    /// ([`TargetAccess::detach`]), so these panics mean a bug in the caller.
    #[inline]
    pub fn new(
        target: TargetUse<'a, T>,
        mode: Mode<T>,
        alpha: T,
        extents: [usize; L],
        n_out: usize,
        operands: [Use<'a, T>; N],
    ) -> Self {
        let access = target.target;
        let read = Bound::new(&access.raw, target.axes, &extents, false);
        let target_bound = BoundTarget {
            data: access.data_mut(),
            len: read.len,
            base: read.base,
            strides: read.strides,
            uses: read.uses,
            _borrow: PhantomData,
        };
        let memories = operands.each_ref().map(|operand| operand.access.raw.memory);
        let operand_memory = memories.first().copied().unwrap_or(access.raw.memory);
        assert!(
            memories.iter().all(|&memory| memory == operand_memory),
            "a statement's operands live in different memories (host and device, or two \
             devices): put every tensor of the statement on one device"
        );
        let operands = operands
            .map(|Use { access, axes }| Bound::new(&access.raw, axes, &extents, access.in_place));
        let memory = [access.raw.memory, operand_memory];
        Step::assemble(target_bound, mode, alpha, extents, n_out, operands, memory)
    }

    /// Stops a host kernel from running a step over device memory.
    ///
    /// # Panics
    /// If any of the step's elements live on a device: a statement mixing device tensors with
    /// host ones (or with tensor types whose backend is the host).
    #[track_caller]
    pub(crate) fn assert_on_host(&self) {
        assert!(
            self.memory == [Memory::Host; 2],
            "a statement over device tensors reached a host kernel: put every tensor of the \
             statement on one device (`CudaTensor`s only) or all on the host"
        );
    }

    /// A step derived from this one, over the same loops: it writes `output` (a temporary of
    /// the caller's, assigned with α = 1) or, for `None`, this step's target (with its mode and
    /// α), from `operands` (this step's, or temporaries), all of them in this step's operands'
    /// memory (`memory`, which must be it), but this step's own target, which stays where it
    /// is. The engines split a step into such parts (pairwise contractions, copies of an
    /// operand into a better layout); each is proven afresh against the buffers it is given,
    /// and the caller runs the parts or this step, never both.
    ///
    /// # Panics
    /// As [`Step::new`], and if `memory` is not where this step's operands live.
    pub(crate) fn derived<const M: usize>(
        &self,
        output: Option<BoundTarget<'a, T, L>>,
        operands: [Bound<'a, T, L>; M],
        memory: Memory,
    ) -> Step<'a, T, L, M> {
        assert_eq!(
            memory, self.memory[1],
            "tensor-dsl bug: a derived step's temporaries in another memory than its operands"
        );
        let (output, mode, alpha, written) = match output {
            Some(temporary) => (temporary, Mode::Assign, T::ONE, memory),
            None => (self.target.alias(), self.mode, self.alpha, self.memory[0]),
        };
        Step::renumbered(
            output,
            mode,
            alpha,
            &self.extents,
            operands,
            [written, memory],
        )
    }

    /// This step over `M` loops, `M ≥ L`: its own `L`, then `M - L` loops of extent one that
    /// neither the target nor any operand uses (stride 0, no bit in `uses`). A loop of extent
    /// one adds no point and moves no address, so the step visits the same points, reads and
    /// writes the same elements and sums the same terms: everything [`Step::assemble`] proved
    /// of this step holds of the padded one, which is therefore built without proving it
    /// again. The extra loops are summed loops (after the target's `n_out`), as
    /// `Step::renumbered` leaves the loops a pairwise step does not use; the engines order
    /// such loops outermost, so the order of the additions, and the bits, are unchanged.
    #[inline]
    pub(crate) fn padded<const M: usize>(self) -> Step<'a, T, M, N> {
        // Not a `const` assertion: `in_few_loops` names every padding in branches that are
        // never compiled, and rustc evaluates the constants of every function it names. At
        // most 64 loops, as `Step::assemble` asserts of every step.
        assert!(
            L <= M && M <= 64,
            "tensor-dsl bug: a step padded to fewer loops than it has, or to more than 64"
        );
        let pad = |strides: [isize; L]| -> [isize; M] {
            std::array::from_fn(|k| strides.get(k).copied().unwrap_or(0))
        };
        let Step {
            target,
            mode,
            alpha,
            extents,
            n_out,
            operands,
            injective,
            memory,
        } = self;
        Step {
            target: BoundTarget {
                data: target.data,
                len: target.len,
                base: target.base,
                strides: pad(target.strides),
                uses: target.uses,
                _borrow: PhantomData,
            },
            mode,
            alpha,
            extents: std::array::from_fn(|k| extents.get(k).copied().unwrap_or(1)),
            n_out,
            operands: operands.map(|operand| Bound {
                data: operand.data,
                len: operand.len,
                base: operand.base,
                strides: pad(operand.strides),
                uses: operand.uses,
                in_place: operand.in_place,
                part: operand.part,
                _borrow: PhantomData,
            }),
            injective,
            memory,
        }
    }

    /// This step reading `operands` instead of its own (temporaries holding their elements,
    /// in another layout), over the same loops, proven afresh; the caller runs it instead of
    /// this step.
    ///
    /// # Panics
    /// As [`Step::new`].
    pub(crate) fn with_operands(&self, operands: [Bound<'a, T, L>; N]) -> Self {
        Step::assemble(
            self.target.alias(),
            self.mode,
            self.alpha,
            self.extents,
            self.n_out,
            operands,
            self.memory,
        )
    }

    /// The step writing `output` from `operands` over loops numbered for any statement
    /// (strides and `uses` by loop), summing the loops they use that it does not: loops are
    /// renumbered so the output's come first, and loops none of them uses get extent 1.
    ///
    /// # Panics
    /// As [`Step::new`].
    fn renumbered(
        output: BoundTarget<'a, T, L>,
        mode: Mode<T>,
        alpha: T,
        extents: &[usize; L],
        operands: [Bound<'a, T, L>; N],
        memory: [Memory; 2],
    ) -> Self {
        let kept = output.uses;
        let involved = operands.iter().fold(kept, |mask, o| mask | o.uses);
        let in_set = |mask: u64, var: usize| mask >> var & 1 == 1;
        let mut order: Vec<usize> = (0..L).filter(|&v| in_set(kept, v)).collect();
        order.extend((0..L).filter(|&v| in_set(involved, v) && !in_set(kept, v)));
        order.extend((0..L).filter(|&v| !in_set(involved, v)));
        let order: [usize; L] = std::array::from_fn(|k| order[k]);
        let new_extents: [usize; L] = std::array::from_fn(|k| {
            let var = order[k];
            if in_set(involved, var) {
                extents[var]
            } else {
                1
            }
        });
        Step::assemble(
            output.reordered(&order),
            mode,
            alpha,
            new_extents,
            kept.count_ones() as usize,
            operands.map(|operand| operand.reordered(&order)),
            memory,
        )
    }

    /// Proves bound parts safe to run as one step (see the type's invariant).
    ///
    /// # Panics
    /// As [`Step::new`].
    #[inline]
    fn assemble(
        target: BoundTarget<'a, T, L>,
        mode: Mode<T>,
        alpha: T,
        extents: [usize; L],
        n_out: usize,
        operands: [Bound<'a, T, L>; N],
        memory: [Memory; 2],
    ) -> Self {
        assert!(
            L <= 64 && n_out <= L,
            "tensor-dsl bug: more than 64 loops or target loops"
        );
        let out = if n_out == 64 {
            u64::MAX
        } else {
            (1u64 << n_out) - 1
        };
        // A target loop the target does not use would make threads that split it write the
        // same elements; a summed loop it used would be no sum at all.
        assert_eq!(
            target.uses, out,
            "tensor-dsl bug: the target must use exactly the target loops"
        );
        let written = target.as_read().proven_span(&extents, out);
        for operand in &operands {
            let read = operand.proven_span(&extents, u64::MAX);
            if operand.in_place && operand.data == target.data.cast_const() {
                // Read where it is written: each point reads only the element it writes, so the
                // read happens on the thread that writes it, just before.
                assert!(
                    operand.base == target.base
                        && operand.strides == target.strides
                        && operand.len == target.len,
                    "tensor-dsl bug: an in-place read must be point-wise"
                );
                continue;
            }
            if let (Some(written), Some(read)) = (written, read) {
                assert!(
                    read.1 < written.0 || written.1 < read.0,
                    "tensor-dsl bug: an operand shares memory with the target; detach it first"
                );
            }
        }
        let injective = target.is_injective(&extents);
        // BLAS's convention, kept by every backend: with β = 0 the target is not read, so NaN
        // or infinity already there does not leak into the result.
        let mode = match mode {
            Mode::Scale(beta) if beta == T::ZERO => Mode::Assign,
            mode => mode,
        };
        // An empty sum is exactly zero, whatever scale was folded out of it: `Σ x / s` over no
        // points is 0 even for s = 0, where α = 1/s is infinite and α·0 would be NaN.
        let alpha = if extents[n_out..].contains(&0) {
            T::ONE
        } else {
            alpha
        };
        Step {
            target,
            mode,
            alpha,
            extents,
            n_out,
            operands,
            injective,
            memory,
        }
    }
}

/// A host operand's whole access as a view, every offset it addresses proven to lie in its
/// buffer: what the matrix operations (`matrix.rs`) read, since they hand the elements to
/// `faer` as matrices rather than run a loop nest.
///
/// # Panics
/// On an access of device or distributed memory, or of a real tensor's parts: generated code
/// sends matrix operations only host operands of the statement's own element type (a compile
/// error on the operand otherwise), so reaching one is a bug in the caller. On an access whose
/// layout leaves its buffer (an `Operand` implementation that lies about it).
#[cfg(feature = "matrix")]
pub(crate) fn host_view<'a, T>(access: Access<'a, T>) -> crate::tensor::TensorView<'a, T> {
    let raw = access.raw;
    assert!(
        raw.memory == Memory::Host && !raw.part,
        "tensor-dsl bug: a matrix operation was handed a device, distributed or mixed-type operand"
    );
    assert_eq!(raw.shape.len(), raw.strides.len(), "{INCONSISTENT}");
    if !raw.shape.contains(&0) {
        let (mut low, mut high) = (raw.offset, raw.offset);
        for (&extent, &stride) in raw.shape.iter().zip(raw.strides) {
            let reach = isize::try_from(extent - 1)
                .ok()
                .and_then(|steps| steps.checked_mul(stride))
                .expect(INCONSISTENT);
            if reach < 0 {
                low = low.checked_add(reach).expect(INCONSISTENT);
            } else {
                high = high.checked_add(reach).expect(INCONSISTENT);
            }
        }
        assert!(
            low >= 0 && usize::try_from(high).is_ok_and(|high| high < raw.len),
            "{INCONSISTENT}"
        );
    }
    let layout =
        crate::tensor::layout::RawLayout::new(raw.shape.to_vec(), raw.strides.to_vec(), raw.offset);
    // Every offset the layout addresses is in `0..len` (checked above; none when an extent is
    // 0), and the access's pointer is valid for reads of `len` host elements for `'a` (the
    // operand's borrow), which is `from_raw`'s contract.
    crate::tensor::TensorView::from_raw(raw.data, raw.len, layout)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operand::access::{Operand, TargetOwned, TargetShared};
    use crate::tensor::Tensor;

    #[test]
    #[should_panic(expected = "whose axis of extent")]
    fn binding_with_wrong_extents_is_caught() {
        let a = Tensor::<f64>::zeros([2, 2]);
        let mut c = Tensor::<f64>::zeros([3]);
        let target = c.__tdsl_target();
        let _ = Step::new(
            target.at(&[Axis::Loop(0)]),
            Mode::Assign,
            1.0,
            [3],
            1,
            [a.__tdsl_operand().at(&[Axis::Loop(0), Axis::Loop(0)])],
        );
    }

    #[test]
    #[should_panic(expected = "the target must use exactly the target loops")]
    fn a_target_loop_the_target_does_not_use_is_caught() {
        let a = Tensor::<f64>::zeros([4, 4]);
        let mut c = Tensor::<f64>::zeros([4]);
        let target = c.__tdsl_target();
        let _ = Step::new(
            target.at(&[Axis::Loop(0)]),
            Mode::Assign,
            1.0,
            [4, 4],
            2,
            [a.__tdsl_operand().at(&[Axis::Loop(0), Axis::Loop(1)])],
        );
    }

    #[test]
    #[should_panic(expected = "shares memory with the target")]
    fn an_overlapping_operand_is_caught() {
        let mut t = Tensor::<f64>::zeros([4, 4]);
        let v = t.view_mut();
        let target = TargetShared::__tdsl_target(&v);
        // The same view under another name: not the target's own read.
        let _ = Step::new(
            target.at(&[Axis::Loop(0), Axis::Loop(1)]),
            Mode::Assign,
            1.0,
            [4, 4],
            2,
            [v.__tdsl_operand().at(&[Axis::Loop(0), Axis::Loop(1)])],
        );
    }

    #[test]
    #[should_panic(expected = "an in-place read must be point-wise")]
    fn a_transposed_in_place_read_is_caught() {
        let mut c = Tensor::<f64>::zeros([4, 4]);
        let target = c.__tdsl_target();
        // The target's own read, but transposed: not point-wise.
        let read = target.read();
        let _ = Step::new(
            target.at(&[Axis::Loop(0), Axis::Loop(1)]),
            Mode::Assign,
            1.0,
            [4, 4],
            2,
            [read.at(&[Axis::Loop(1), Axis::Loop(0)])],
        );
    }

    #[test]
    fn diagonal_targets_are_injective_and_broadcasts_are_not() {
        let mut c = Tensor::<f64>::zeros([5, 5]);
        let target = c.__tdsl_target();
        let diagonal = Step::new(
            target.at(&[Axis::Loop(0), Axis::Loop(0)]),
            Mode::Add,
            1.0,
            [5],
            1,
            [],
        );
        assert!(diagonal.injective);
        let mut buffer = [0.0f64; 5];
        let bound = BoundTarget::<f64, 2>::raw(buffer.as_mut_ptr(), buffer.len(), [0, 1], 0b11);
        assert!(!bound.is_injective(&[3, 5]));
    }

    /// A step over device memory never reaches a host kernel: each refuses it before touching
    /// an element (the pointers here are host ones, so a missed check would show as a write).
    #[cfg(feature = "cuda")]
    #[test]
    fn host_kernels_refuse_device_memory() {
        use crate::exec::network::PlanCache;
        let device = Memory::Device(7);
        let a = Tensor::<f64>::from_fn([4, 40], |ix| ix[1] as f64);
        let b = Tensor::<f64>::from_fn([40, 4], |ix| ix[0] as f64);
        let mut c = Tensor::<f64>::zeros([4, 4]);
        let loops = |vars: &[usize]| vars.iter().map(|&v| Axis::Loop(v)).collect::<Vec<_>>();
        let (c_axes, a_axes, b_axes) = (loops(&[0, 1]), loops(&[0, 2]), loops(&[2, 1]));
        for kernel in 0..3 {
            let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let target = c.__tdsl_target().in_memory(device);
                let step = Step::new(
                    target.at(&c_axes),
                    Mode::Assign,
                    1.0,
                    [4, 4, 40],
                    2,
                    [
                        a.__tdsl_operand().in_memory(device).at(&a_axes),
                        b.__tdsl_operand().in_memory(device).at(&b_axes),
                    ],
                );
                match kernel {
                    0 => crate::exec::loop_nest::evaluate(
                        step,
                        |[x, y]| x * y,
                        crate::exec::loop_nest::AnyNest,
                    ),
                    1 => crate::exec::gemm::contract(step, [false; 2]),
                    _ => {
                        crate::exec::network::contract_network(step, [false; 2], &PlanCache::new())
                    }
                }
            }));
            let message = outcome.unwrap_err();
            let message = message.downcast_ref::<&str>().copied().unwrap_or_default();
            assert!(message.contains("reached a host kernel"), "{message}");
            assert!(c.as_slice().iter().all(|&x| x == 0.0));
        }
        // Operands in two memories cannot form a step at all.
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let target = c.__tdsl_target();
            Step::new(
                target.at(&c_axes),
                Mode::Assign,
                1.0,
                [4, 4, 40],
                2,
                [
                    a.__tdsl_operand().in_memory(device).at(&a_axes),
                    b.__tdsl_operand().at(&b_axes),
                ],
            );
        }));
        assert!(outcome.is_err());
    }
}

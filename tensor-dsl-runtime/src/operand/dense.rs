//! Accesses laid out row-major without gaps → element loads and stores at offsets computed
//! from their extents, for the loops generated code writes out: over nested arrays, whose
//! extents are constants of their type (offsets fold at compile time), and over small dynamic
//! tensors (no step to prove, no kernel to dispatch). Only an access whose own strides are
//! the row-major ones of its own shape becomes one (an owned tensor's whole buffer by its
//! invariant, read by `as_run` as one run of its buffer's elements), and one of static type
//! only if that shape is its type's, so every offset below `elements` is an element the access
//! itself addresses, whatever type produced it. A written-out network's temporaries (`Temporary`) are dense by
//! construction, their static extents used only once checked to be row-major.

use std::marker::PhantomData;
use std::mem::MaybeUninit;

use crate::element::Element;
use crate::tensor::memory::zeroed;

use super::access::{Access, Memory, Mode, RawAccess, TargetAccess};
use super::check::INCONSISTENT;
use super::extents::{AxesExtents, ExtentsType, StaticLayout, MAX_STATIC_RANK};

/// Read access to the elements of an operand laid out row-major without gaps: `elements`
/// contiguous values from `data`, addressed through the row-major strides of its extents
/// (`E`'s constants where `E` is static, so offsets fold at compile time; else its own).
pub struct DenseAccess<'a, T, E> {
    data: *const T,
    shape: DenseShape,
    _borrow: PhantomData<&'a T>,
    _extents: PhantomData<fn() -> E>,
}

/// Write access to a target laid out row-major without gaps (see [`DenseAccess`]).
pub struct DenseTarget<'a, T, E> {
    data: *mut T,
    shape: DenseShape,
    /// Made from a `&mut` borrow of the whole target, which no operand can reach
    /// (`TargetAccess::exclusive`).
    exclusive: bool,
    _borrow: PhantomData<&'a std::cell::Cell<T>>,
    _extents: PhantomData<fn() -> E>,
}

/// A dense access's rank, extents and row-major strides (read only for a dynamic extents
/// type), and how many elements it addresses (its extents' product).
#[derive(Clone, Copy)]
struct DenseShape {
    rank: usize,
    extents: [usize; MAX_STATIC_RANK],
    strides: [usize; MAX_STATIC_RANK],
    elements: usize,
}

/// The first element of an access and its shape, if it is dense: host memory, elements of
/// the statement's type, rank at most [`MAX_STATIC_RANK`], each stride the product of the
/// extents inside it, all of its elements inside the buffer, and, for a static extents type
/// `E` (the layout value only names it: its public fields are not trusted), the same rank,
/// extents and strides as `E`'s. Then the layout addresses exactly those elements, contiguous
/// from the first. Nothing rests on `E`'s constants being consistent with each other: the
/// count and the row-major rule are computed from the shape. For run-time extents the shape
/// must also be the one the statement checked (`StaticLayout::claims`): an operand whose access
/// disagrees with its shape is left to the step's proof, which reports it before anything is
/// written.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
fn dense_start<E: ExtentsType, T>(
    layout: &StaticLayout<E>,
    access: &RawAccess<'_, T>,
) -> Option<(*const T, DenseShape)> {
    let RawAccess {
        shape,
        strides,
        offset,
        len,
        memory,
        data,
        part,
        row_major,
    } = *access;
    let rank = shape.len();
    // A tensor of parts (a real array in a complex statement) converts each element it reads:
    // the general kernels do that.
    if part
        || memory != Memory::Host
        || rank > MAX_STATIC_RANK
        || (E::STATIC && rank != E::RANK)
        || (!E::STATIC && !layout.claims(&shape))
    {
        return None;
    }
    let mut dense = DenseShape {
        rank,
        extents: [0; MAX_STATIC_RANK],
        strides: [0; MAX_STATIC_RANK],
        elements: 1,
    };
    // An owned tensor's access (`row_major`) has these strides by the tensor's invariant (one
    // difference: an empty tensor counts a zero extent as one, `[3, 0]` having strides
    // `[1, 1]`, harmless with no element to address), so they are not compared (a tenth of a
    // 4 × 4 sum's instructions); debug builds check the invariant.
    // Nothing below rests on it: the dense shape's strides are computed from the extents, and
    // its elements are checked to lie inside the buffer, so a wrong mark could only misplace
    // values, never address outside the buffer.
    let row_major = row_major && !E::STATIC;
    debug_assert!(
        !row_major || (offset == 0 && is_whole_row_major(&shape, strides, len)),
        "an access marked row-major is not an owned tensor's whole buffer"
    );
    // Innermost axis first: each stride must be the product of the extents inside it. Over
    // every slot, those past the rank skipped: constant indices, so the compiler unrolls the
    // loop and keeps `dense` in registers.
    for axis in (0..MAX_STATIC_RANK).rev() {
        if axis >= rank {
            continue;
        }
        if !row_major && Ok(strides[axis]) != isize::try_from(dense.elements) {
            return None;
        }
        if E::STATIC && (shape[axis] != E::EXTENTS[axis] || E::STRIDES[axis] != dense.elements) {
            return None;
        }
        dense.extents[axis] = shape[axis];
        dense.strides[axis] = dense.elements;
        dense.elements = dense.elements.checked_mul(shape[axis])?;
    }
    let start = usize::try_from(offset).ok()?;
    // In bounds: `start + elements <= len` is checked first.
    (start.checked_add(dense.elements)? <= len).then_some((data.wrapping_add(start), dense))
}

/// An owned tensor's whole buffer (`row_major`, offset 0, host memory, elements of the
/// statement's type, run-time extents) as one run: its `len` elements from `data`, which the
/// access may read (and, for a target, write) whatever its shape says. That the run is the
/// tensor's elements in row-major order, as many as its extents' product, is the tensor's
/// invariant; `pointwise` compares the runs' lengths before it writes. The access's shape
/// must be the one the statement checked: taken as it is for this crate's tensors, whose
/// type says their accesses have the shape they report (`StaticLayout::trusted`), compared
/// otherwise, and an `Operand` implementation that hands another access than the shape it
/// reports is stopped here, before anything is written, as the step's proof stops it. For
/// the point-wise steps that take runs this skips the stride walk of [`dense_start`] (with
/// the comparison, which a wrapper's access cannot fold away, a third of a 4 × 4 sum's time).
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
fn whole_run<E: ExtentsType, T>(
    layout: &StaticLayout<E>,
    access: &RawAccess<'_, T>,
) -> Option<(*const T, DenseShape)> {
    let whole = access.row_major
        && !E::STATIC
        && access.offset == 0
        && !access.part
        && access.memory == Memory::Host;
    if whole && !layout.trusted() && !layout.claims(&access.shape) {
        disagrees(&access.shape);
    }
    whole.then(|| (access.data, DenseShape::run(access.len)))
}

/// Stops a statement one of whose tensors has an access of another shape than the one the
/// statement checked, as the step's proof would stop it (`exec::step`): out of line and never
/// returning, so the statement keeps no other path for this case.
#[cold]
#[inline(never)]
fn disagrees(shape: &[usize]) -> ! {
    panic!(
        "an operand's access has shape {shape:?}, not the one the statement checked: \
         {INCONSISTENT}"
    )
}

/// Stops the point-wise step (see [`unequal_runs`]) if a run is not `elements` long.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
fn equal_runs<T, const N: usize>(runs: &[DenseRun<'_, T>; N], elements: usize) {
    if let Some(run) = runs.iter().find(|run| run.elements != elements) {
        unequal_runs(run.elements, elements);
    }
}

/// Stops a point-wise step one of whose runs is not as long as its target's, before anything
/// is written: generated code checked the shapes equal, so one access disagrees with the shape
/// its tensor reported. Out of line: a statement keeps one comparison per run.
#[cold]
#[inline(never)]
fn unequal_runs(run: usize, target: usize) -> ! {
    panic!(
        "a point-wise operand's access holds {run} elements where the statement's target holds \
         {target}: {INCONSISTENT}"
    )
}

/// Whether `strides` are the ones a `Tensor` of `shape` has (row-major, a zero extent
/// counted as one) and `len` its element count, without allocating: debug builds check this
/// on every dense access, and tests count allocations.
fn is_whole_row_major(shape: &[usize], strides: &[isize], len: usize) -> bool {
    let mut inner = 1isize;
    strides.len() == shape.len()
        && shape.iter().zip(strides).rev().all(|(&extent, &stride)| {
            let row_major = stride == inner;
            inner = inner.wrapping_mul(extent.max(1) as isize);
            row_major
        })
        && crate::tensor::layout::element_count(shape).is_ok_and(|count| count == len)
}

impl DenseShape {
    /// The shape of one run of `elements` values: rank 1, stride 1.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn run(elements: usize) -> Self {
        let mut shape = DenseShape {
            rank: 1,
            extents: [0; MAX_STATIC_RANK],
            strides: [0; MAX_STATIC_RANK],
            elements,
        };
        (shape.extents[0], shape.strides[0]) = (elements, 1);
        shape
    }

    /// `Σ index[k]·strides[k]`, if that element is one of the access's own: the index has the
    /// access's rank and every position lies inside its axis, so for a shape `dense_start` or
    /// `zeros` made (row-major strides, `elements` their extents' product) the offset is below
    /// the element count. Each position is compared with its extent: `E`'s constant for a
    /// static `E`, else the access's own, which the checks of the statement made equal to
    /// the bound of the loop it runs in (`StaticLayout::claims`; a temporary's are the
    /// extents generated code made it with), so the compiler can drop the comparison where it
    /// sees both.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn offset<E: ExtentsType, const R: usize>(&self, index: [usize; R]) -> Option<usize> {
        if index
            .iter()
            .zip(self.extents::<E>())
            .any(|(&position, extent)| position >= extent)
        {
            return None;
        }
        self.sum::<E, R>(index)
    }

    /// `Σ index[k]·strides[k]`, wrapping, if the index has the access's rank (which is at most
    /// [`MAX_STATIC_RANK`]): an offset to compare with the element count before it is used,
    /// unless every position lies inside its axis (then it is below the count).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn sum<E: ExtentsType, const R: usize>(&self, index: [usize; R]) -> Option<usize> {
        if R > MAX_STATIC_RANK || R != if E::STATIC { E::RANK } else { self.rank } {
            return None;
        }
        let mut offset = 0usize;
        for (axis, &position) in index.iter().enumerate() {
            offset = position
                .wrapping_mul(self.stride::<E, R>(axis))
                .wrapping_add(offset);
        }
        Some(offset)
    }

    /// The extents positions are compared with: `E`'s constants for a static `E`, else the
    /// access's own.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn extents<E: ExtentsType>(&self) -> [usize; MAX_STATIC_RANK] {
        if E::STATIC {
            E::EXTENTS
        } else {
            self.extents
        }
    }

    /// The stride of `axis` (below `R`, the access's rank): `E`'s constant for a static `E`,
    /// else the access's own, the innermost being 1 (row-major, as `dense_start` and `zeros`
    /// make every shape): a constant the compiler steps the innermost loop's reads by.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn stride<E: ExtentsType, const R: usize>(&self, axis: usize) -> usize {
        if E::STATIC {
            E::STRIDES[axis]
        } else if axis + 1 == R {
            1
        } else {
            self.strides[axis]
        }
    }

    /// The offset of lane 0 of a chunk of `lanes` lanes (see [`DenseAccess::load_chunk`]) and
    /// how far each lane moves it, if every lane's index lies inside the layout: lane `u`
    /// moves the positions `along` marks by `u`, so the last lane's index is lane 0's with
    /// those positions `lanes - 1` further, and each lane's offset is below the element
    /// count as [`offset`](Self::offset)'s is. Compared axis by axis, as the written-out
    /// loops bound their chunks (`l + lanes <= extent`), so the compiler can drop the
    /// comparisons where it sees both.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn chunk<E: ExtentsType, const R: usize>(
        &self,
        index: [usize; R],
        along: [bool; R],
        lanes: usize,
    ) -> Option<(usize, usize)> {
        let reach = lanes.checked_sub(1)?;
        let first = self.sum::<E, R>(index)?;
        // `sum` proved `R` is the access's rank, at most `MAX_STATIC_RANK`.
        let extents = self.extents::<E>();
        let mut step = 0usize;
        for axis in 0..R {
            let (position, extent) = (index[axis], extents[axis]);
            let last = if along[axis] { reach } else { 0 };
            if position >= extent || last >= extent - position {
                return None;
            }
            if along[axis] {
                // Row-major strides of axes that hold two lanes or more sum to less than the
                // element count: checked all the same, as the lanes' offsets rest on it.
                step = step.checked_add(self.stride::<E, R>(axis))?;
            }
        }
        Some((first, step))
    }
}

impl<'a, T> Access<'a, T> {
    /// This access as a dense one of `layout`'s type, if it is (see the module's invariant).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn as_dense<E: ExtentsType>(
        &self,
        layout: StaticLayout<E>,
    ) -> Option<DenseAccess<'a, T, E>> {
        let (data, shape) = dense_start(&layout, &self.raw)?;
        Some(DenseAccess {
            data,
            shape,
            _borrow: PhantomData,
            _extents: PhantomData,
        })
    }
}

impl<'a, T> Access<'a, T> {
    /// This access as a dense one for a point-wise step whose accesses all have the target's
    /// indices in its order (`DenseTarget::pointwise`, which reads only its elements as one
    /// run): an owned tensor's whole buffer as one run of rank 1 (see `whole_run`), any other
    /// as [`as_dense`](Self::as_dense) makes it.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn as_run<E: ExtentsType>(&self, layout: StaticLayout<E>) -> Option<DenseAccess<'a, T, E>> {
        if let Some((data, shape)) = whole_run(&layout, &self.raw) {
            return Some(DenseAccess {
                data,
                shape,
                _borrow: PhantomData,
                _extents: PhantomData,
            });
        }
        self.as_dense(layout)
    }
}

impl<'a, T> TargetAccess<'a, T> {
    /// This target as one run of its elements (see [`Access::as_run`]).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn as_run<E: ExtentsType>(&self, layout: StaticLayout<E>) -> Option<DenseTarget<'a, T, E>> {
        if let Some((data, shape)) = whole_run(&layout, &self.raw) {
            return Some(DenseTarget {
                data: data.cast_mut(),
                shape,
                exclusive: self.exclusive,
                _borrow: PhantomData,
                _extents: PhantomData,
            });
        }
        self.as_dense(layout)
    }

    /// This target as a dense one of `layout`'s type, if it is (see the module's invariant).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn as_dense<E: ExtentsType>(
        &self,
        layout: StaticLayout<E>,
    ) -> Option<DenseTarget<'a, T, E>> {
        let (data, shape) = dense_start(&layout, &self.raw)?;
        Some(DenseTarget {
            data: data.cast_mut(),
            shape,
            exclusive: self.exclusive,
            _borrow: PhantomData,
            _extents: PhantomData,
        })
    }
}

/// A temporary of a product's written-out stages (a network step small enough for written-out
/// loops contracts its factors pair by pair, as the network kernel does, each pair's result
/// in one of these): zeros of the statement's type, row-major over its shape, written through
/// [`target`](Self::target) and read through [`read`](Self::read). Up to `INLINE` (256) elements
/// live in a [`TemporaryStorage`] of the caller's, on the stack, where a statement over
/// static extents keeps them in registers as it keeps a `let`'s nested array; larger ones in
/// a buffer of its own.
pub struct Temporary<'s, T, E> {
    /// The first of `shape.elements` initialized elements: the storage's, or `_heap`'s.
    data: *mut T,
    /// Owns the elements of a temporary too large for its storage (else empty).
    _heap: Vec<T>,
    shape: DenseShape,
    _storage: PhantomData<&'s mut [MaybeUninit<T>]>,
    _extents: PhantomData<fn() -> E>,
}

/// The most elements a [`Temporary`] holds in its [`TemporaryStorage`].
pub const INLINE: usize = 256;

/// Room for the elements of a small [`Temporary`], left uninitialized until one is made in it.
/// The caller's own local, so a temporary moves without its elements.
pub struct TemporaryStorage<T> {
    inline: [MaybeUninit<T>; INLINE],
}

impl<T: Element> TemporaryStorage<T> {
    /// Room not yet holding anything.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        TemporaryStorage {
            inline: [const { MaybeUninit::uninit() }; INLINE],
        }
    }

    /// A temporary of zeros over `shape`, of rank `R` at most [`MAX_STATIC_RANK`] (a build
    /// error beyond), whose axes have the extent types `_axes`; `_zero` names the element type.
    /// Over static extents the shape is the extents type's own and `shape` is not read
    /// (generated code passes the same, checked, extents). Panics if the element count
    /// overflows `usize` (generated code makes temporaries only inside steps of at most a few
    /// thousand points), or if a static extents type's rank is not `R` or its strides are not
    /// the row-major ones of its extents (never for this crate's own).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn zeros<const R: usize, A: AxesExtents>(
        &mut self,
        _zero: &T,
        _axes: A,
        shape: [usize; R],
    ) -> Temporary<'_, T, A::Extents> {
        const {
            assert!(
                R <= MAX_STATIC_RANK,
                "a temporary of rank past MAX_STATIC_RANK"
            )
        };
        let (is_static, rank) = (A::Extents::STATIC, A::Extents::RANK);
        if is_static && rank != R {
            panic!("a temporary of rank {R} over static extents of rank {rank}");
        }
        let mut dense = DenseShape {
            rank: R,
            extents: [0; MAX_STATIC_RANK],
            strides: [0; MAX_STATIC_RANK],
            elements: 1,
        };
        for axis in (0..R).rev() {
            let extent = if is_static {
                A::Extents::EXTENTS[axis]
            } else {
                shape[axis]
            };
            // Static strides are used as they are (`DenseShape::sum`): they must be these.
            if is_static && A::Extents::STRIDES[axis] != dense.elements {
                panic!("static extents whose strides are not row-major");
            }
            dense.extents[axis] = extent;
            dense.strides[axis] = dense.elements;
            let Some(elements) = dense.elements.checked_mul(extent) else {
                panic!("a temporary of shape {shape:?} has more elements than fit in usize")
            };
            dense.elements = elements;
        }
        let (data, heap) = if dense.elements <= INLINE {
            for slot in &mut self.inline[..dense.elements] {
                slot.write(T::ZERO);
            }
            (self.inline.as_mut_ptr().cast(), Vec::new())
        } else {
            let mut heap = zeroed(dense.elements);
            (heap.as_mut_ptr(), heap)
        };
        Temporary {
            data,
            _heap: heap,
            shape: dense,
            _storage: PhantomData,
            _extents: PhantomData,
        }
    }
}

impl<T: Element, E: ExtentsType> Temporary<'_, T, E> {
    /// Writes into it, through the only borrow of its elements.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn target(&mut self) -> DenseTarget<'_, T, E> {
        // What the target relies on: `data` is the first of `shape.elements` initialized
        // elements, the storage's (borrowed for the temporary's life, `zeros` wrote that many)
        // or `_heap`'s (exactly that many, its buffer unmoved while it lives), and for static
        // extents each offset below them is below that count (`zeros` checked the strides
        // are row-major).
        DenseTarget {
            data: self.data,
            shape: self.shape,
            exclusive: true,
            _borrow: PhantomData,
            _extents: PhantomData,
        }
    }

    /// Reads its elements (the same ones as [`target`](Self::target)).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn read(&self) -> DenseAccess<'_, T, E> {
        DenseAccess {
            data: self.data,
            shape: self.shape,
            _borrow: PhantomData,
            _extents: PhantomData,
        }
    }
}

/// A dense access's elements as one run, in row-major order, whatever its extents type (see
/// [`DenseTarget::pointwise`]).
#[derive(Clone, Copy)]
pub struct DenseRun<'a, T> {
    data: *const T,
    elements: usize,
    _borrow: PhantomData<&'a T>,
}

impl<'a, T> DenseRun<'a, T> {
    /// How many elements it holds.
    pub(crate) fn elements(&self) -> usize {
        self.elements
    }

    /// Its elements at offsets `range` (inside its own), as a run of their own.
    pub(crate) fn part(&self, range: std::ops::Range<usize>) -> Self {
        assert!(range.start <= range.end && range.end <= self.elements);
        DenseRun {
            // In bounds: the range lies inside the run's own elements (asserted).
            data: self.data.wrapping_add(range.start),
            elements: range.end - range.start,
            _borrow: PhantomData,
        }
    }

    /// The lowest and one past the highest byte address of its elements.
    pub(crate) fn address_range(&self) -> std::ops::Range<usize> {
        let start = self.data as usize;
        start..start.wrapping_add(self.elements * std::mem::size_of::<T>())
    }
}

impl<'a, T: Copy, E: ExtentsType> DenseAccess<'a, T, E> {
    /// Its elements as one run.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn run(&self) -> DenseRun<'a, T> {
        DenseRun {
            data: self.data,
            elements: self.shape.elements,
            _borrow: PhantomData,
        }
    }
}

impl<T: Copy, E: ExtentsType> DenseAccess<'_, T, E> {
    /// The element at `index` (one position per axis). An index outside the layout panics.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn load<const R: usize>(&self, index: [usize; R]) -> T {
        let Some(offset) = self.shape.offset::<E, R>(index) else {
            panic!("tensor-dsl bug: a written-out loop read outside its operand")
        };
        // SAFETY: `as_dense` made `data` the first of `elements` values that the access's
        // own layout addresses (row-major strides of its shape, all inside its buffer), or
        // `Temporary::read` the first of a temporary's initialized elements (as many as
        // `elements`, borrowed with it), so they are valid for reads while the access's
        // borrow lives, and `offset` was just
        // checked to be one of them (`DenseShape::offset`). Reads go through the raw
        // pointer, so a target writing the same buffer in place makes no reference alias, and
        // the type is not `Send`: one thread uses it.
        unsafe { self.data.add(offset).read() }
    }

    /// `W` elements from `index`, lane `u` at the index whose positions `along` marks are
    /// moved `u` further. Every lane's index must lie inside the layout, else it panics (see
    /// `DenseShape::chunk`).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn load_chunk<const R: usize, const W: usize>(
        &self,
        index: [usize; R],
        along: [bool; R],
    ) -> [T; W] {
        let Some((first, step)) = self.shape.chunk::<E, R>(index, along, W) else {
            panic!("tensor-dsl bug: a written-out loop read outside its operand")
        };
        // SAFETY: `chunk` checked every lane's index inside the layout, so each lane's offset,
        // `first + u·step`, is one of the access's own values, as an offset `load` checks is:
        // valid for reads as in `load`.
        if step == 0 {
            [unsafe { self.data.add(first).read() }; W]
        } else if step == 1 {
            unsafe { self.data.add(first).cast::<[T; W]>().read_unaligned() }
        } else {
            std::array::from_fn(|u| unsafe { self.data.add(first + u * step).read() })
        }
    }
}

/// Combines `value` into the element at `slot` as `mode` says (β = 0 does not read it).
///
/// # Safety
///
/// `slot` is valid for reads and writes, and no other thread uses it meanwhile.
#[cfg_attr(not(tdsl_unoptimized), inline(always))]
unsafe fn combine<T: Element>(slot: *mut T, mode: Mode<T>, value: T) {
    // SAFETY: the caller's promise.
    unsafe {
        let combined = match mode {
            Mode::Assign => value,
            Mode::Add => slot.read().plus(value),
            Mode::Scale(beta) if beta == T::ZERO => value,
            Mode::Scale(beta) => beta.times(slot.read()).plus(value),
        };
        slot.write(combined);
    }
}

/// Whether a point-wise loop over `elements` points, touching `arrays` arrays of `T` (its
/// runs and its target), is compiled for wider vectors than the baseline's two `f64` lanes:
/// the widest the CPU has, from AVX-512 down to AVX2 ([`DenseTarget::pointwise_wide`]).
///
/// Heuristic, measured on an AVX-512 host with `r = a + b` over `f32` (one thread, a hand loop
/// compiled for the baseline): AVX-512 took 0.53× its time at 16×16 and 0.64× at 64×64, AVX2
/// 0.73× and 0.82×. From 128×128 on, where the arrays outgrow the first-level cache (48 KiB
/// there), both were 2–8 % slower than the baseline on buffers the allocator aligns to 16
/// bytes only (a wide load then often spans two cache lines), so such loops keep it. Below
/// [`WIDE_FROM`] points a loop is a few instructions either way, not worth the call.
#[cfg(all(target_arch = "x86_64", not(tdsl_unoptimized)))]
#[inline(always)]
fn wide_vectors<T>(elements: usize, arrays: usize) -> bool {
    const UP_TO_BYTES: usize = 48 << 10;
    // A bound on the elements, constant once inlined: no multiplication to check at run time.
    (WIDE_FROM..=UP_TO_BYTES / (arrays * std::mem::size_of::<T>()).max(1)).contains(&elements)
}

/// The fewest points a point-wise loop runs in a wider compilation ([`wide_vectors`]).
#[cfg(all(target_arch = "x86_64", not(tdsl_unoptimized)))]
const WIDE_FROM: usize = 64;

impl<T: Element, E: ExtentsType> DenseTarget<'_, T, E> {
    /// Combines `value` into the element at `index` as `mode` says (β = 0 does not read it).
    /// An index outside the layout panics.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn update<const R: usize>(&self, index: [usize; R], mode: Mode<T>, value: T) {
        let Some(offset) = self.shape.offset::<E, R>(index) else {
            panic!("tensor-dsl bug: a written-out loop wrote outside its target")
        };
        // SAFETY: as in `DenseAccess::load`: the `elements` values from `data` are the
        // target's own (or a temporary's, borrowed `&mut` by `Temporary::target`), valid for
        // reads and writes while its (exclusive or writable-view) borrow lives, and only this
        // thread uses them (the type is neither `Send` nor
        // `Sync`).
        unsafe { combine(self.data.add(offset), mode, value) }
    }

    /// Combines lane `u` of `values` into the element of lane `u` of the chunk at `index`
    /// (see [`DenseAccess::load_chunk`]) as `mode` says. A chunk with a lane outside the
    /// layout panics before anything is written.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn update_chunk<const R: usize, const W: usize>(
        &self,
        index: [usize; R],
        along: [bool; R],
        mode: Mode<T>,
        values: [T; W],
    ) {
        let Some((first, step)) = self.shape.chunk::<E, R>(index, along, W) else {
            panic!("tensor-dsl bug: a written-out loop wrote outside its target")
        };
        for (u, value) in values.into_iter().enumerate() {
            // SAFETY: lane `u < W` is at `first + u·step`, one of the target's own elements
            // (`chunk`), valid for reads and writes on this thread as in `update`.
            unsafe { combine(self.data.add(first + u * step), mode, value) }
        }
    }

    /// How many elements it addresses.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub(crate) fn elements(&self) -> usize {
        self.shape.elements
    }

    /// Its elements at offsets `range` (inside its own), as one run of a target.
    pub(crate) fn part(&self, range: std::ops::Range<usize>) -> Self {
        assert!(range.start <= range.end && range.end <= self.shape.elements);
        DenseTarget {
            // In bounds: the range lies inside the target's own elements (asserted).
            data: self.data.wrapping_add(range.start),
            shape: DenseShape::run(range.end - range.start),
            exclusive: self.exclusive,
            _borrow: PhantomData,
            _extents: PhantomData,
        }
    }

    /// The lowest and one past the highest byte address of its elements.
    pub(crate) fn address_range(&self) -> std::ops::Range<usize> {
        let start = self.data as usize;
        start..start.wrapping_add(self.shape.elements * std::mem::size_of::<T>())
    }

    /// Combines `α·body` of the runs' elements at each offset into the target's element at
    /// that offset, as `mode` says (β = 0 does not read it): one loop over all elements,
    /// which the compiler vectorizes. Generated code passes it the runs of accesses whose
    /// indices are the target's own in the target's order, at the shapes the statement
    /// checked, so one offset is one point in all of them. A run of another length panics
    /// before anything is written.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn pointwise<const N: usize>(
        &self,
        runs: [DenseRun<'_, T>; N],
        mode: Mode<T>,
        alpha: T,
        body: impl Fn([T; N]) -> T,
    ) {
        // Unoptimized builds (`cfg(tdsl_unoptimized)`) inline nothing: through a trait object
        // the loops below are compiled once per element type, extents type (one for every
        // dynamic tensor and view) and run count, not once per statement, as the loop-nest
        // engine's are (`exec::loop_nest::evaluate`).
        #[cfg(tdsl_unoptimized)]
        let body: &dyn Fn([T; N]) -> T = &body;
        self.pointwise_loops(runs, mode, alpha, body);
    }

    /// [`pointwise`](Self::pointwise) of a step too large to keep in the first-level cache,
    /// run by `exec::pointwise` (alone or as one thread's part), in the widest compilation
    /// the CPU has whatever its length: past the cache a loop that computes more than it moves
    /// (`c += a / b`: 0.6× the loop-nest engine's AVX2 loops in the baseline compilation) needs
    /// the wide vectors, and one that moves more lost nothing measurable to them.
    pub(crate) fn pointwise_large<const N: usize>(
        &self,
        runs: [DenseRun<'_, T>; N],
        mode: Mode<T>,
        alpha: T,
        body: &impl Fn([T; N]) -> T,
    ) {
        let elements = self.shape.elements;
        equal_runs(&runs, elements);
        // SAFETY: `data` is the first of the target's `elements` values (all the loops use of
        // it), which no other thread uses meanwhile (a part's are its own, `exec::pointwise`),
        // and the runs' lengths were checked above.
        #[cfg(all(target_arch = "x86_64", not(tdsl_unoptimized)))]
        unsafe {
            Self::pointwise_wide(self.data, elements, &runs, mode, alpha, body)
        };
        // SAFETY: the runs' lengths were checked above.
        #[cfg(not(all(target_arch = "x86_64", not(tdsl_unoptimized))))]
        unsafe {
            self.pointwise_plain::<N, false>(runs, mode, alpha, body)
        };
    }

    /// [`pointwise`](Self::pointwise)'s loops, compiled for the widest vectors the CPU has
    /// where the runs are long enough to gain from them (see [`wide_vectors`]).
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    fn pointwise_loops<const N: usize>(
        &self,
        runs: [DenseRun<'_, T>; N],
        mode: Mode<T>,
        alpha: T,
        body: impl Fn([T; N]) -> T,
    ) {
        let elements = self.shape.elements;
        equal_runs(&runs, elements);
        // Unoptimized builds vectorize nothing, so they keep the one compilation. For static
        // extents the condition is a constant: small arrays never leave registers for a call.
        #[cfg(all(target_arch = "x86_64", not(tdsl_unoptimized)))]
        if wide_vectors::<T>(elements, N + 1) {
            // SAFETY: `data` is the first of the target's `elements` values (all the loops
            // use of it), and the runs' lengths were checked above.
            return unsafe { Self::pointwise_wide(self.data, elements, &runs, mode, alpha, &body) };
        }
        // SAFETY: the runs' lengths were checked above.
        unsafe { self.pointwise_plain::<N, false>(runs, mode, alpha, body) };
    }

    /// [`pointwise_plain`](Self::pointwise_plain) in the widest compilation the CPU runs, for
    /// a loop that gains from it ([`wide_vectors`]), over the `elements` values from `data`.
    /// Out of line, so a statement's own code holds one comparison and one call rather than
    /// the choice and its calls; given the target's first element and count, not the target,
    /// so the statement keeps its target in registers rather than in memory for the call.
    ///
    /// # Safety
    /// `data` is the first of a dense target's `elements` values (valid for reads and writes
    /// on this thread, as [`update`](Self::update) uses them), and every run has `elements`.
    #[cfg(all(target_arch = "x86_64", not(tdsl_unoptimized)))]
    #[inline(never)]
    unsafe fn pointwise_wide<const N: usize>(
        data: *mut T,
        elements: usize,
        runs: &[DenseRun<'_, T>; N],
        mode: Mode<T>,
        alpha: T,
        body: &impl Fn([T; N]) -> T,
    ) {
        let runs = *runs;
        // The same values as one run: the loops read nothing of a target but these two.
        let this = DenseTarget::<T, E> {
            data,
            shape: DenseShape::run(elements),
            exclusive: false,
            _borrow: PhantomData,
            _extents: PhantomData,
        };
        let this = &this;
        // α = 1 (nearly every statement) multiplies by a constant the compiler drops, as it
        // does where the loops are inlined into the statement: for a real or integer type
        // 1 · x is x (a NaN stays a NaN). Not for a complex one: (1 + 0i)·x computes 0 times
        // each part, which an infinite part makes NaN, so it keeps the product.
        let real = !matches!(
            T::KIND,
            crate::element::Kind::C32 | crate::element::Kind::C64
        );
        if real && alpha == T::ONE {
            // SAFETY: as below; α is one, as `UNIT` says.
            return unsafe { this.pointwise_widest::<N, true>(runs, mode, alpha, body) };
        }
        // SAFETY: as `pointwise_widest` asks, the caller's promise.
        unsafe { this.pointwise_widest::<N, false>(runs, mode, alpha, body) }
    }

    /// [`pointwise_plain`](Self::pointwise_plain) in the widest compilation the CPU has.
    ///
    /// # Safety
    /// Every run has the target's `elements`, and α is one where `UNIT` is set.
    #[cfg(all(target_arch = "x86_64", not(tdsl_unoptimized)))]
    #[inline(always)]
    unsafe fn pointwise_widest<const N: usize, const UNIT: bool>(
        &self,
        runs: [DenseRun<'_, T>; N],
        mode: Mode<T>,
        alpha: T,
        body: &impl Fn([T; N]) -> T,
    ) {
        // SAFETY: each compilation runs only where the CPU has its features (just detected);
        // the runs' lengths are the caller's promise, all `pointwise_plain` asks.
        unsafe {
            if std::arch::is_x86_feature_detected!("avx512f") {
                self.pointwise_avx512::<N, UNIT>(runs, mode, alpha, body)
            } else if std::arch::is_x86_feature_detected!("avx2") {
                self.pointwise_avx2::<N, UNIT>(runs, mode, alpha, body)
            } else {
                self.pointwise_plain::<N, UNIT>(runs, mode, alpha, body)
            }
        }
    }

    /// [`pointwise_plain`](Self::pointwise_plain) compiled for AVX-512.
    ///
    /// # Safety
    /// The CPU has AVX-512 F, every run has the target's `elements`, and α is one where
    /// `UNIT` is set.
    #[cfg(all(target_arch = "x86_64", any(test, not(tdsl_unoptimized))))]
    #[target_feature(enable = "avx2,avx512f")]
    unsafe fn pointwise_avx512<const N: usize, const UNIT: bool>(
        &self,
        runs: [DenseRun<'_, T>; N],
        mode: Mode<T>,
        alpha: T,
        body: impl Fn([T; N]) -> T,
    ) {
        // SAFETY: the caller's promise.
        unsafe { self.pointwise_plain::<N, UNIT>(runs, mode, alpha, body) };
    }

    /// [`pointwise_plain`](Self::pointwise_plain) compiled for AVX2.
    ///
    /// # Safety
    /// The CPU has AVX2, every run has the target's `elements`, and α is one where `UNIT` is
    /// set.
    #[cfg(all(target_arch = "x86_64", any(test, not(tdsl_unoptimized))))]
    #[target_feature(enable = "avx2")]
    unsafe fn pointwise_avx2<const N: usize, const UNIT: bool>(
        &self,
        runs: [DenseRun<'_, T>; N],
        mode: Mode<T>,
        alpha: T,
        body: impl Fn([T; N]) -> T,
    ) {
        // SAFETY: the caller's promise.
        unsafe { self.pointwise_plain::<N, UNIT>(runs, mode, alpha, body) };
    }

    /// The loops themselves, inlined into each compilation: the same operations on each
    /// element in every one (no fused multiply-add is enabled, and the lanes are
    /// independent), so the bits do not depend on the vectors. `UNIT`: α is one of a real or
    /// integer type, and each value is taken as it is (1 · x is x there; an inlined loop's
    /// compiler drops the multiplication by a constant one likewise).
    ///
    /// # Safety
    /// Every run has the target's `elements` (`pointwise_loops` checks it), and α is a real or
    /// integer type's one where `UNIT` is set.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    unsafe fn pointwise_plain<const N: usize, const UNIT: bool>(
        &self,
        runs: [DenseRun<'_, T>; N],
        mode: Mode<T>,
        alpha: T,
        body: impl Fn([T; N]) -> T,
    ) {
        let elements = self.shape.elements;
        let value = |k: usize| {
            // SAFETY: `k` is below `elements`, every run's length (the caller's promise), and
            // a run's `elements` values from `data` are its access's own, valid for reads
            // while its borrow lives (`dense_start`, or `whole_run`: the buffer's own `len`
            // elements); raw reads, as in `DenseAccess::load`.
            let value = body(std::array::from_fn(|o| unsafe {
                runs[o].data.add(k).read()
            }));
            if UNIT {
                value
            } else {
                alpha.times(value)
            }
        };
        // SAFETY (each loop): `k` is below the target's `elements`, its own values, valid for
        // reads and writes on this thread only (as in `update`); an element is read before
        // it is written, so a run that is the target's own read sees the old value.
        match mode {
            Mode::Add => (0..elements).for_each(|k| {
                let value = value(k);
                unsafe {
                    let slot = self.data.add(k);
                    slot.write(slot.read().plus(value));
                }
            }),
            Mode::Scale(beta) if beta != T::ZERO => (0..elements).for_each(|k| {
                let value = value(k);
                unsafe {
                    let slot = self.data.add(k);
                    slot.write(beta.times(slot.read()).plus(value));
                }
            }),
            Mode::Assign | Mode::Scale(_) => (0..elements).for_each(|k| {
                let value = value(k);
                unsafe { self.data.add(k).write(value) }
            }),
        }
    }

    /// Whether `operand`'s elements and this target's share any address. Never for a target
    /// borrowed `&mut` as a whole (an owned tensor, a nested array, a `let` result): the
    /// borrow checker keeps every operand away from it, and the answer is then a constant the
    /// compiler folds, leaving the general path of a statement over arrays dead code.
    #[cfg_attr(not(tdsl_unoptimized), inline(always))]
    pub fn overlaps<F: ExtentsType>(&self, operand: &DenseAccess<'_, T, F>) -> bool {
        let size = std::mem::size_of::<T>();
        let (written, read) = (self.data as usize, operand.data as usize);
        let (written_elements, read_elements) = (self.shape.elements, operand.shape.elements);
        !self.exclusive
            && written_elements > 0
            && read_elements > 0
            && read < written.wrapping_add(written_elements * size)
            && written < read.wrapping_add(read_elements * size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operand::access::{Operand, TargetOwned, TargetShared};
    use crate::operand::extents::{Dynamic, Extent, Extents0, Extents2};
    use crate::tensor::Tensor;

    /// Writes `value(index)` at every index of a rank-2 temporary through its target, then
    /// reads each back.
    fn round_trip<E: ExtentsType>(temporary: &mut Temporary<'_, f64, E>, shape: [usize; 2]) {
        let value = |i: usize, j: usize| (i * 100 + j) as f64;
        assert!((temporary.read().load([0, 0]) == 0.0), "zeros first");
        let target = temporary.target();
        for (i, j) in (0..shape[0]).flat_map(|i| (0..shape[1]).map(move |j| (i, j))) {
            target.update([i, j], Mode::Assign, value(i, j));
        }
        let read = temporary.read();
        for (i, j) in (0..shape[0]).flat_map(|i| (0..shape[1]).map(move |j| (i, j))) {
            assert_eq!(read.load([i, j]), value(i, j));
        }
    }

    #[test]
    fn temporaries_hold_zeros_then_what_is_written_inline_or_on_the_heap() {
        let mut storage = TemporaryStorage::new();
        let mut small = storage.zeros(&0.0f64, (Dynamic, Dynamic), [3, 4]);
        round_trip(&mut small, [3, 4]);
        let mut storage = TemporaryStorage::new();
        let mut fixed = storage.zeros(&0.0f64, (Extent::<2>, Extent::<3>), [2, 3]);
        round_trip(&mut fixed, [2, 3]);
        // Past the storage's 256 elements: a buffer of its own.
        let mut storage = TemporaryStorage::new();
        let mut large = storage.zeros(&0.0f64, (Dynamic, Extent::<30>), [20, 30]);
        round_trip(&mut large, [20, 30]);
        // Rank 0: one element.
        let mut storage = TemporaryStorage::new();
        let mut scalar = storage.zeros(&0.0f64, (), []);
        scalar.target().update([], Mode::Add, 2.5);
        assert_eq!(scalar.read().load([]), 2.5);
    }

    #[test]
    fn the_row_major_check_accepts_only_a_whole_tensor_layout() {
        assert!(is_whole_row_major(&[2, 3, 4], &[12, 4, 1], 24));
        assert!(is_whole_row_major(&[0, 3], &[3, 1], 0));
        assert!(is_whole_row_major(&[3, 0], &[1, 1], 0));
        assert!(is_whole_row_major(&[], &[], 1));
        // Transposed, padded, a part of the buffer, or strides of another rank.
        assert!(!is_whole_row_major(&[3, 2], &[1, 3], 6));
        assert!(!is_whole_row_major(&[2, 3], &[4, 1], 8));
        assert!(!is_whole_row_major(&[2, 3], &[3, 1], 12));
        assert!(!is_whole_row_major(&[2, 3], &[3], 6));
    }

    #[test]
    #[should_panic(expected = "outside its operand")]
    fn a_temporary_read_past_its_elements_panics() {
        let mut storage = TemporaryStorage::new();
        let temporary = storage.zeros(&0.0f32, (Dynamic, Dynamic), [3, 4]);
        temporary.read().load([3, 0]);
    }

    /// Static extents whose strides are not the row-major ones of its extents: a temporary
    /// over them would address past its elements.
    struct Skewed;
    impl ExtentsType for Skewed {
        const STATIC: bool = true;
        const EXTENTS: [usize; MAX_STATIC_RANK] = [2, 2, 0, 0];
        const STRIDES: [usize; MAX_STATIC_RANK] = [100, 1, 0, 0];
        const RANK: usize = 2;
    }
    struct SkewedAxes;
    impl AxesExtents for SkewedAxes {
        type Extents = Skewed;
    }

    #[test]
    #[should_panic(expected = "not row-major")]
    fn static_extents_with_other_strides_are_refused() {
        let mut storage = TemporaryStorage::new();
        storage.zeros(&0.0f64, SkewedAxes, [2, 2]);
    }

    #[test]
    fn only_layouts_equal_to_the_static_one_become_static() {
        let array = [[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let layout = StaticLayout::<Extents2<2, 3>>::OF;
        let access = array.__tdsl_operand();
        let fixed = access
            .as_dense(layout)
            .expect("a nested array is its static layout");
        assert_eq!((fixed.load([1, 2]), fixed.load([0, 1])), (6.0, 2.0));
        // A transposed or sliced view of the same extents is not.
        let tensor = Tensor::from_fn([3, 2], |ix| (ix[0] * 2 + ix[1]) as f64);
        let transposed = tensor.view().permuted_axes(&[1, 0]);
        assert!(transposed.__tdsl_operand().as_dense(layout).is_none());
        let wide = Tensor::<f64>::zeros([2, 4]);
        let window = wide.view().slice_axis(1, 0..3);
        assert!(window.__tdsl_operand().as_dense(layout).is_none());
        // Nor is another rank or another extent.
        let flat = Tensor::<f64>::zeros([6]);
        assert!(flat.__tdsl_operand().as_dense(layout).is_none());
        // A dynamic type takes any row-major layout without gaps, at its own extents.
        let claiming = |shape: &[usize], rank| StaticLayout::<Dynamic>::claiming(shape, rank);
        let dense = tensor
            .__tdsl_operand()
            .as_dense(claiming(&[3, 2], 2))
            .expect("a tensor is dense");
        assert_eq!((dense.load([2, 1]), dense.load([1, 0])), (5.0, 2.0));
        let whole = access
            .as_dense(claiming(&[2, 3], 2))
            .expect("so is an array");
        assert_eq!(whole.load([1, 2]), 6.0);
        let column = tensor.view().slice_axis(1, 1..2);
        assert!(column
            .__tdsl_operand()
            .as_dense(claiming(&[3, 1], 2))
            .is_none());
        assert!(transposed
            .__tdsl_operand()
            .as_dense(claiming(&[2, 3], 2))
            .is_none());
        assert!(window
            .__tdsl_operand()
            .as_dense(claiming(&[2, 3], 2))
            .is_none());
        let rows = wide.view().slice_axis(0, 1..2);
        let row = rows
            .__tdsl_operand()
            .as_dense(claiming(&[1, 4], 2))
            .expect("one row is dense");
        assert_eq!(row.load([0, 3]), 0.0);
        // Only at the shape the statement checked: an access that disagrees with it, or a
        // layout that states none, is left to the general kernels.
        assert!(tensor
            .__tdsl_operand()
            .as_dense(claiming(&[4, 2], 2))
            .is_none());
        assert!(tensor
            .__tdsl_operand()
            .as_dense(claiming(&[6], 1))
            .is_none());
        assert!(tensor
            .__tdsl_operand()
            .as_dense(StaticLayout::<Dynamic>::OF)
            .is_none());
        // At the limit's rank every axis counts: the last extent and the first stride too.
        let four = Tensor::from_fn([2, 1, 3, 2], |ix| (ix[0] * 6 + ix[2] * 2 + ix[3]) as f64);
        let dense = four
            .__tdsl_operand()
            .as_dense(claiming(&[2, 1, 3, 2], 4))
            .expect("a rank-4 tensor is dense");
        assert_eq!(dense.load([1, 0, 2, 1]), 11.0);
        assert!(four
            .__tdsl_operand()
            .as_dense(claiming(&[2, 1, 3, 3], 4))
            .is_none());
        // Axes 0 and 1 swapped: every stride but the outermost is row-major.
        let outer = four.view().permuted_axes(&[1, 0, 2, 3]);
        assert!(outer
            .__tdsl_operand()
            .as_dense(claiming(&[1, 2, 3, 2], 4))
            .is_none());
        // Nor is a rank past the written-out loops' limit.
        let five = Tensor::<f64>::zeros([1, 1, 1, 1, 1]);
        assert!(five
            .__tdsl_operand()
            .as_dense(claiming(&[1, 1, 1, 1, 1], 5))
            .is_none());
        let mut scalar = 0.0f64;
        let target = TargetAccess::scalar(&mut scalar);
        let written = target
            .as_dense(StaticLayout::<Extents0>::OF)
            .expect("a scalar target");
        written.update([], Mode::Add, 2.5);
        assert_eq!(scalar, 2.5);
    }

    #[test]
    #[should_panic(expected = "read outside its operand")]
    fn an_index_past_a_dynamic_layout_panics() {
        let tensor = Tensor::<f64>::zeros([2, 3]);
        let dense = tensor
            .__tdsl_operand()
            .as_dense(StaticLayout::<Dynamic>::claiming(&[2, 3], 2))
            .unwrap();
        dense.load([1, 3]);
    }

    #[test]
    #[should_panic(expected = "read outside its operand")]
    fn an_index_of_another_rank_panics() {
        let tensor = Tensor::<f64>::zeros([2, 3]);
        let dense = tensor
            .__tdsl_operand()
            .as_dense(StaticLayout::<Dynamic>::claiming(&[2, 3], 2))
            .unwrap();
        dense.load([0, 0, 0]);
    }

    #[test]
    #[should_panic(expected = "read outside its operand")]
    fn an_index_past_the_layout_panics() {
        let array = [[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let fixed = array
            .__tdsl_operand()
            .as_dense(StaticLayout::<Extents2<2, 3>>::OF)
            .unwrap();
        fixed.load([2, 0]);
    }

    #[test]
    fn chunks_load_and_update_the_lanes_along_their_axes() {
        let tensor = Tensor::from_fn([4, 5], |ix| (ix[0] * 10 + ix[1]) as f64);
        let dense = tensor
            .__tdsl_operand()
            .as_dense(StaticLayout::<Dynamic>::claiming(&[4, 5], 2))
            .unwrap();
        // Along the last axis (stride 1), the first axis (stride 5), both (the diagonal) and
        // neither (every lane the same element).
        let row: [f64; 4] = dense.load_chunk([2, 1], [false, true]);
        assert_eq!(row, [21.0, 22.0, 23.0, 24.0]);
        let column: [f64; 4] = dense.load_chunk([0, 3], [true, false]);
        assert_eq!(column, [3.0, 13.0, 23.0, 33.0]);
        let diagonal: [f64; 4] = dense.load_chunk([0, 0], [true, true]);
        assert_eq!(diagonal, [0.0, 11.0, 22.0, 33.0]);
        let same: [f64; 4] = dense.load_chunk([3, 2], [false, false]);
        assert_eq!(same, [32.0; 4]);
        // A static layout, and a static target updated by every mode.
        let array = [[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let fixed = array
            .__tdsl_operand()
            .as_dense(StaticLayout::<Extents2<2, 3>>::OF)
            .unwrap();
        let lanes: [f64; 2] = fixed.load_chunk([1, 1], [false, true]);
        assert_eq!(lanes, [5.0, 6.0]);
        let mut c = [[1.0f64; 3]; 2];
        {
            let access = c.__tdsl_target();
            let target = access.as_dense(StaticLayout::<Extents2<2, 3>>::OF).unwrap();
            target.update_chunk([0, 0], [false, true], Mode::Assign, [2.0, 3.0, 4.0]);
            target.update_chunk([1, 0], [false, true], Mode::Add, [1.0, 2.0]);
            target.update_chunk([0, 2], [true, false], Mode::Scale(3.0), [1.0, 7.0]);
            // β = 0 does not read the target: a NaN there stays out.
            target.update([1, 1], Mode::Assign, f64::NAN);
            target.update_chunk([1, 1], [false, true], Mode::Scale(0.0), [5.0]);
        }
        assert_eq!(c, [[2.0, 3.0, 13.0], [2.0, 5.0, 10.0]]);
    }

    #[test]
    fn chunks_past_their_layout_panic() {
        let tensor = Tensor::<f64>::zeros([2, 3]);
        let dense = tensor
            .__tdsl_operand()
            .as_dense(StaticLayout::<Dynamic>::claiming(&[2, 3], 2))
            .unwrap();
        // From [1, 1] the third lane is offset 6, past the tensor; from [1, 0] the fourth;
        // [2, 0] is no index of it at all; from [0, 1] the lanes run past the row into the
        // next one, the tensor's own elements but not the axis's.
        for index in [[1, 1], [1, 0], [2, 0], [0, 1]] {
            let load = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _: [f64; 4] = dense.load_chunk(index, [false, true]);
            }));
            let message = load.expect_err("the chunk is refused");
            let message = message.downcast_ref::<&str>().copied().unwrap_or_default();
            assert!(message.contains("read outside its operand"), "{message}");
        }
        // A chunk of no lanes has no last lane to check.
        let load = std::panic::catch_unwind(|| {
            let _: [f64; 0] = dense.load_chunk([0, 0], [false, true]);
        });
        assert!(load.is_err());
    }

    #[test]
    #[should_panic(expected = "wrote outside its target")]
    fn a_chunk_past_its_target_panics_before_writing() {
        let mut c = Tensor::<f64>::zeros([2, 3]);
        let access = c.__tdsl_target();
        let target = access
            .as_dense(StaticLayout::<Dynamic>::claiming(&[2, 3], 2))
            .unwrap();
        target.update_chunk([1, 1], [false, true], Mode::Assign, [1.0, 2.0, 3.0]);
    }

    #[test]
    fn targets_update_by_mode_and_overlap_is_found() {
        let mut c = [[1.0f64; 2]; 2];
        let layout = StaticLayout::<Extents2<2, 2>>::OF;
        let other = [[0.0f64; 2]; 2];
        {
            let access = c.__tdsl_target();
            let target = access.as_dense(layout).unwrap();
            target.update([0, 1], Mode::Scale(0.0), 5.0);
            target.update([1, 0], Mode::Scale(2.0), 1.0);
            target.update([1, 1], Mode::Add, 1.0);
            // A target borrowed `&mut` as a whole overlaps no operand: none can reach it.
            let own = access.read().as_dense(layout).unwrap();
            assert!(!target.overlaps(&own));
        }
        assert_eq!(c, [[1.0, 5.0], [3.0, 2.0]]);
        // A writable view can share memory with an operand under another name.
        let mut tensor = Tensor::<f64>::zeros([2, 2]);
        let view = tensor.view_mut();
        let access = TargetShared::__tdsl_target(&view);
        let target = access.as_dense(layout).unwrap();
        let own = access.read().as_dense(layout).unwrap();
        assert!(target.overlaps(&own));
        let apart = other.__tdsl_operand().as_dense(layout).unwrap();
        assert!(!target.overlaps(&apart));
    }

    #[test]
    fn pointwise_runs_combine_as_each_mode_says() {
        let layout = |shape: &[usize]| StaticLayout::<Dynamic>::claiming(shape, shape.len());
        let a = Tensor::from_fn([3, 5], |ix| (ix[0] * 5 + ix[1]) as f64);
        let b = Tensor::from_fn([3, 5], |ix| 0.5 + ix[1] as f64);
        let (ra, rb) = (
            a.__tdsl_operand().as_dense(layout(&[3, 5])).unwrap(),
            b.__tdsl_operand().as_dense(layout(&[3, 5])).unwrap(),
        );
        let expected = |k: usize, old: f64, mode: Mode<f64>| {
            let value = 2.0 * (a.as_slice()[k] - b.as_slice()[k]);
            match mode {
                Mode::Assign => value,
                Mode::Add => old + value,
                Mode::Scale(0.0) => value,
                Mode::Scale(beta) => beta * old + value,
            }
        };
        for mode in [Mode::Assign, Mode::Add, Mode::Scale(0.0), Mode::Scale(-1.5)] {
            // NaN where β = 0 must not read it.
            let old = |k: usize| if k & 3 == 0 { f64::NAN } else { k as f64 };
            let mut c = Tensor::from_fn([3, 5], |ix| old(ix[0] * 5 + ix[1]));
            let access = c.__tdsl_target();
            let target = access.as_dense(layout(&[3, 5])).unwrap();
            target.pointwise([ra.run(), rb.run()], mode, 2.0, |[x, y]| x - y);
            for (k, &value) in c.as_slice().iter().enumerate() {
                let want = expected(k, old(k), mode);
                assert!(
                    value == want || (value.is_nan() && want.is_nan()),
                    "{mode:?} at {k}: {value} against {want}"
                );
            }
        }
        // The target's own read, in place: each element is read before it is written.
        let mut c = Tensor::from_fn([3, 5], |ix| ix[1] as f64);
        let view = c.view_mut();
        let access = TargetShared::__tdsl_target(&view);
        let target = access.as_dense(layout(&[3, 5])).unwrap();
        let own = access.read().as_dense(layout(&[3, 5])).unwrap();
        target.pointwise([own.run(), ra.run()], Mode::Assign, 1.0, |[x, y]| {
            x * 10.0 + y
        });
        drop(view);
        let want = Tensor::from_fn([3, 5], |ix| {
            ix[1] as f64 * 10.0 + (ix[0] * 5 + ix[1]) as f64
        });
        assert_eq!(c.as_slice(), want.as_slice());
    }

    /// Each mode's result at every element, from every compilation of the point-wise loops
    /// the CPU can run, at lengths around the wide vectors' limits (`wide_vectors`): the
    /// same bits as the baseline compilation and a plain loop over the slices.
    fn check_pointwise_compilations<T, B>(value: fn(usize) -> T, body: B, bits: fn(T) -> u128)
    where
        T: Element + std::fmt::Debug,
        B: Fn([T; 2]) -> T + Copy + 'static,
    {
        // The body's own type, not a pointer to it, so each compilation inlines and
        // vectorizes it.
        type Loops<T> = Box<dyn Fn(&DenseTarget<'_, T, Dynamic>, [DenseRun<'_, T>; 2], Mode<T>, T)>;
        let mut compilations: Vec<(&str, Loops<T>)> = vec![
            (
                "baseline",
                Box::new(move |target, runs, mode, alpha| {
                    // SAFETY: the runs have the target's length.
                    unsafe { target.pointwise_plain::<2, false>(runs, mode, alpha, body) }
                }),
            ),
            (
                "chosen",
                Box::new(move |target, runs, mode, alpha| {
                    target.pointwise(runs, mode, alpha, body)
                }),
            ),
        ];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                compilations.push((
                    "avx2",
                    Box::new(move |target, runs, mode, alpha| {
                        // SAFETY: the CPU has AVX2; the runs have the target's length.
                        unsafe { target.pointwise_avx2::<2, false>(runs, mode, alpha, body) }
                    }),
                ));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                compilations.push((
                    "avx512",
                    Box::new(move |target, runs, mode, alpha| {
                        // SAFETY: the CPU has AVX-512 F; the runs have the target's length.
                        unsafe { target.pointwise_avx512::<2, false>(runs, mode, alpha, body) }
                    }),
                ));
            }
        }
        let modes = [
            Mode::Assign,
            Mode::Add,
            Mode::Scale(T::ZERO),
            Mode::Scale(value(5)),
        ];
        // α = 1 takes the compilations without the multiplication (`UNIT`).
        for alpha in [value(3), T::ONE] {
            for elements in [1, 7, 63, 64, 65, 1000, 4096, 4097, 13 * 1024] {
                let layout = StaticLayout::<Dynamic>::claiming(&[elements], 1);
                let a = Tensor::from_fn([elements], |ix| value(ix[0]));
                let b = Tensor::from_fn([elements], |ix| value(ix[0] * 7 + 1));
                let old = |k: usize| value(k * 3 + 2);
                let expected = |k: usize, mode: Mode<T>| {
                    let new = alpha.times(body([a.as_slice()[k], b.as_slice()[k]]));
                    match mode {
                        Mode::Assign => new,
                        Mode::Add => old(k).plus(new),
                        Mode::Scale(beta) if beta == T::ZERO => new,
                        Mode::Scale(beta) => beta.times(old(k)).plus(new),
                    }
                };
                let (ra, rb) = (
                    a.__tdsl_operand().as_dense(layout).unwrap(),
                    b.__tdsl_operand().as_dense(layout).unwrap(),
                );
                for mode in modes {
                    for (name, loops) in &compilations {
                        let mut c = Tensor::from_fn([elements], |ix| old(ix[0]));
                        let access = c.__tdsl_target();
                        loops(
                            &access.as_dense(layout).unwrap(),
                            [ra.run(), rb.run()],
                            mode,
                            alpha,
                        );
                        for (k, &got) in c.as_slice().iter().enumerate() {
                            assert_eq!(
                                bits(got),
                                bits(expected(k, mode)),
                                "{name}, {elements} elements, {mode:?}, at {k}: {got:?}"
                            );
                        }
                        // In place: the target's own read as the first run.
                        let mut c = Tensor::from_fn([elements], |ix| old(ix[0]));
                        let view = c.view_mut();
                        let access = TargetShared::__tdsl_target(&view);
                        let own = access.read().as_dense(layout).unwrap();
                        loops(
                            &access.as_dense(layout).unwrap(),
                            [own.run(), rb.run()],
                            mode,
                            alpha,
                        );
                        drop(view);
                        for (k, &got) in c.as_slice().iter().enumerate() {
                            let new = alpha.times(body([old(k), b.as_slice()[k]]));
                            let want = match mode {
                                Mode::Assign => new,
                                Mode::Add => old(k).plus(new),
                                Mode::Scale(beta) if beta == T::ZERO => new,
                                Mode::Scale(beta) => beta.times(old(k)).plus(new),
                            };
                            assert_eq!(bits(got), bits(want), "{name} in place, {mode:?}, at {k}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn pointwise_loops_give_the_same_bits_in_every_compilation() {
        check_pointwise_compilations::<f32, _>(
            |k| (k % 97) as f32 * 0.37 - 11.0,
            |[x, y]| (x * y + x / (y + 0.5)).sqrt().mul_add(y, -x),
            |v| u128::from(v.to_bits()),
        );
        check_pointwise_compilations::<f64, _>(
            |k| (k % 89) as f64 * 0.91 - 30.0,
            |[x, y]| (x - y) * (x + 1e-3 * y) / (1.0 + y * y),
            |v| u128::from(v.to_bits()),
        );
        check_pointwise_compilations::<i32, _>(
            |k| (k as i32 % 1013) * 40_503 - 7,
            |[x, y]| x.wrapping_mul(y) ^ (x >> 3),
            |v| u128::from(v as u32),
        );
        // Complex values with infinite parts and negative zeros: α = 1 + 0i still multiplies
        // (0 times an infinite part is NaN), in every compilation as in the inlined loop.
        check_pointwise_compilations::<crate::element::c64, _>(
            |k| {
                let re = if k % 13 == 0 {
                    -0.0
                } else {
                    (k % 29) as f64 * 0.5 - 7.0
                };
                let im = if k % 17 == 0 {
                    f64::INFINITY
                } else {
                    -((k % 11) as f64) * 0.25
                };
                crate::element::c64::new(re, im)
            },
            |[x, y]| x.times(y).plus(x),
            |v| u128::from(v.re.to_bits()) << 64 | u128::from(v.im.to_bits()),
        );
    }

    #[test]
    #[should_panic(expected = "access holds 6 elements where the statement's target holds 9")]
    fn a_pointwise_run_of_another_length_panics_before_writing() {
        let layout = |shape: &[usize]| StaticLayout::<Dynamic>::claiming(shape, shape.len());
        let a = Tensor::<f64>::zeros([2, 3]);
        let short = a.__tdsl_operand().as_dense(layout(&[2, 3])).unwrap();
        let mut c = Tensor::<f64>::zeros([3, 3]);
        let access = c.__tdsl_target();
        let target = access.as_dense(layout(&[3, 3])).unwrap();
        target.pointwise([short.run()], Mode::Assign, 1.0, |[x]| x);
    }
}

//! Accesses whose layout matches a static one → element loads and stores at offsets computed
//! from the static layout's constants, for the loops generated code writes out over nested
//! arrays. Only an access whose own shape and strides equal the layout's (row-major, no gaps)
//! becomes one, so every offset below `elements` is an element the access itself addresses,
//! whatever type produced it.

use std::marker::PhantomData;

use crate::element::Element;

use super::access::{Access, Memory, Mode, RawAccess, TargetAccess};
use super::extents::{ExtentsType, StaticLayout, MAX_STATIC_RANK};

/// Read access to the elements of an operand laid out as its extents type `E` says: `E`'s
/// element count of contiguous values from `data`, addressed through `E`'s row-major strides
/// (constants in the type, so offsets fold at compile time).
pub struct StaticAccess<'a, T, E> {
    data: *const T,
    /// How many elements the access's own layout addresses (its shape's product).
    elements: usize,
    _borrow: PhantomData<&'a T>,
    _extents: PhantomData<fn() -> E>,
}

/// Write access to a target laid out as its extents type `E` says (see [`StaticAccess`]).
pub struct StaticTarget<'a, T, E> {
    data: *mut T,
    /// How many elements the target's own layout addresses (its shape's product).
    elements: usize,
    /// Made from a `&mut` borrow of the whole target, which no operand can reach
    /// (`TargetAccess::exclusive`).
    exclusive: bool,
    _borrow: PhantomData<&'a std::cell::Cell<T>>,
    _extents: PhantomData<fn() -> E>,
}

/// The first element of a layout checked to match extents type `E` (the layout value only
/// names it: its public fields are not trusted), and how many elements it addresses, if it
/// does: the same rank, extents and strides as `E`'s, those strides row-major for the real
/// shape, host memory, and all of its elements inside the buffer. Then the layout addresses
/// exactly those elements, contiguous from the first. Nothing rests on `E`'s constants being
/// consistent with each other: the count and the row-major rule are computed from the shape.
#[inline(always)]
fn matching_start<E: ExtentsType, T>(
    _layout: &StaticLayout<E>,
    access: &RawAccess<'_, T>,
) -> Option<(*const T, usize)> {
    let RawAccess {
        shape,
        strides,
        offset,
        len,
        memory,
        data,
        part,
    } = *access;
    let rank = shape.len();
    // A tensor of parts (a real array in a complex statement) converts each element it reads:
    // the general kernels do that.
    if !E::STATIC || part || memory != Memory::Host || rank != E::RANK || rank > MAX_STATIC_RANK {
        return None;
    }
    // Innermost axis first: each stride must be the product of the extents inside it.
    let mut elements = 1usize;
    for axis in (0..rank).rev() {
        let stride = isize::try_from(E::STRIDES[axis]).ok()?;
        let row_major = isize::try_from(elements).ok()?;
        if shape[axis] != E::EXTENTS[axis] || strides[axis] != stride || stride != row_major {
            return None;
        }
        elements = elements.checked_mul(shape[axis])?;
    }
    let start = usize::try_from(offset).ok()?;
    // In bounds: `start + elements <= len` is checked first.
    (start.checked_add(elements)? <= len).then_some((data.wrapping_add(start), elements))
}

/// `Σ index[k]·strides[k]` over `E`'s strides, if every position lies inside its axis (each
/// compared with its own extent, which the compiler proves from the loop bounds it runs in).
/// For a layout `matching_start` accepted (extents and row-major strides equal to `E`'s), the
/// offset is then below the layout's element count.
#[inline(always)]
fn element_offset<E: ExtentsType, const R: usize>(index: [usize; R]) -> Option<usize> {
    if R != E::RANK || R > MAX_STATIC_RANK {
        return None;
    }
    let mut offset = 0;
    for (axis, &position) in index.iter().enumerate() {
        if position >= E::EXTENTS[axis] {
            return None;
        }
        // Wrapping only matters for an `E` no accepted layout has; for those offsets stay
        // below the element count, which fits in `usize`.
        offset = position.wrapping_mul(E::STRIDES[axis]).wrapping_add(offset);
    }
    Some(offset)
}

impl<'a, T> Access<'a, T> {
    /// This access as one laid out as `layout` says, if it is (see the module's invariant).
    #[inline(always)]
    pub fn as_static<E: ExtentsType>(
        &self,
        layout: StaticLayout<E>,
    ) -> Option<StaticAccess<'a, T, E>> {
        let (data, elements) = matching_start(&layout, &self.raw)?;
        Some(StaticAccess {
            data,
            elements,
            _borrow: PhantomData,
            _extents: PhantomData,
        })
    }
}

impl<'a, T> TargetAccess<'a, T> {
    /// This target as one laid out as `layout` says, if it is (see the module's invariant).
    #[inline(always)]
    pub fn as_static<E: ExtentsType>(
        &self,
        layout: StaticLayout<E>,
    ) -> Option<StaticTarget<'a, T, E>> {
        let (data, elements) = matching_start(&layout, &self.raw)?;
        Some(StaticTarget {
            data: data.cast_mut(),
            elements,
            exclusive: self.exclusive,
            _borrow: PhantomData,
            _extents: PhantomData,
        })
    }
}

impl<T: Copy, E: ExtentsType> StaticAccess<'_, T, E> {
    /// The element at `index` (one position per axis). An index outside the layout panics.
    #[inline(always)]
    pub fn load<const R: usize>(&self, index: [usize; R]) -> T {
        let Some(offset) = element_offset::<E, R>(index) else {
            panic!("tensor-dsl bug: a written-out loop read outside its operand")
        };
        // SAFETY: `as_static` made `data` the first of `elements` values that the access's
        // own layout addresses (its shape and strides equal `E`'s, all inside its buffer), so
        // they are valid for reads while the access's borrow lives; every position was just
        // checked against its extent, so `offset < elements`. Reads go through the raw
        // pointer, so a target writing the same buffer in place makes no reference alias, and
        // the type is not `Send`: one thread uses it.
        unsafe { self.data.add(offset).read() }
    }
}

impl<T: Element, E: ExtentsType> StaticTarget<'_, T, E> {
    /// Combines `value` into the element at `index` as `mode` says (β = 0 does not read it).
    /// An index outside the layout panics.
    #[inline(always)]
    pub fn update<const R: usize>(&self, index: [usize; R], mode: Mode<T>, value: T) {
        let Some(offset) = element_offset::<E, R>(index) else {
            panic!("tensor-dsl bug: a written-out loop wrote outside its target")
        };
        // SAFETY: as in `StaticAccess::load`: the `elements` values from `data` are the
        // target's own, valid for reads and writes while its (exclusive or writable-view)
        // borrow lives, and only this thread uses them (the type is neither `Send` nor
        // `Sync`).
        unsafe {
            let slot = self.data.add(offset);
            let combined = match mode {
                Mode::Assign => value,
                Mode::Add => slot.read().plus(value),
                Mode::Scale(beta) if beta == T::ZERO => value,
                Mode::Scale(beta) => beta.times(slot.read()).plus(value),
            };
            slot.write(combined);
        }
    }

    /// Whether `operand`'s elements and this target's share any address. Never for a target
    /// borrowed `&mut` as a whole (an owned tensor, a nested array, a `let` result): the
    /// borrow checker keeps every operand away from it, and the answer is then a constant the
    /// compiler folds, leaving the general path of a statement over arrays dead code.
    #[inline(always)]
    pub fn overlaps<F: ExtentsType>(&self, operand: &StaticAccess<'_, T, F>) -> bool {
        let size = std::mem::size_of::<T>();
        let (written, read) = (self.data as usize, operand.data as usize);
        !self.exclusive
            && self.elements > 0
            && operand.elements > 0
            && read < written.wrapping_add(self.elements * size)
            && written < read.wrapping_add(operand.elements * size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operand::access::{Operand, TargetOwned, TargetShared};
    use crate::operand::extents::{Dynamic, Extents0, Extents2};
    use crate::tensor::Tensor;

    #[test]
    fn only_layouts_equal_to_the_static_one_become_static() {
        let array = [[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let layout = StaticLayout::<Extents2<2, 3>>::OF;
        let access = array.__tdsl_operand();
        let fixed = access
            .as_static(layout)
            .expect("a nested array is its static layout");
        assert_eq!((fixed.load([1, 2]), fixed.load([0, 1])), (6.0, 2.0));
        // A transposed or sliced view of the same extents is not.
        let tensor = Tensor::from_fn([3, 2], |ix| (ix[0] * 2 + ix[1]) as f64);
        let transposed = tensor.view().permuted_axes(&[1, 0]);
        assert!(transposed.__tdsl_operand().as_static(layout).is_none());
        let wide = Tensor::<f64>::zeros([2, 4]);
        let window = wide.view().slice_axis(1, 0..3);
        assert!(window.__tdsl_operand().as_static(layout).is_none());
        // Nor is another rank, another extent, or a dynamic layout.
        let flat = Tensor::<f64>::zeros([6]);
        assert!(flat.__tdsl_operand().as_static(layout).is_none());
        assert!(access.as_static(StaticLayout::<Dynamic>::OF).is_none());
        let mut scalar = 0.0f64;
        let target = TargetAccess::scalar(&mut scalar);
        let written = target
            .as_static(StaticLayout::<Extents0>::OF)
            .expect("a scalar target");
        written.update([], Mode::Add, 2.5);
        assert_eq!(scalar, 2.5);
    }

    #[test]
    #[should_panic(expected = "read outside its operand")]
    fn an_index_past_the_layout_panics() {
        let array = [[1.0f64, 2.0, 3.0], [4.0, 5.0, 6.0]];
        let fixed = array
            .__tdsl_operand()
            .as_static(StaticLayout::<Extents2<2, 3>>::OF)
            .unwrap();
        fixed.load([2, 0]);
    }

    #[test]
    fn targets_update_by_mode_and_overlap_is_found() {
        let mut c = [[1.0f64; 2]; 2];
        let layout = StaticLayout::<Extents2<2, 2>>::OF;
        let other = [[0.0f64; 2]; 2];
        {
            let access = c.__tdsl_target();
            let target = access.as_static(layout).unwrap();
            target.update([0, 1], Mode::Scale(0.0), 5.0);
            target.update([1, 0], Mode::Scale(2.0), 1.0);
            target.update([1, 1], Mode::Add, 1.0);
            // A target borrowed `&mut` as a whole overlaps no operand: none can reach it.
            let own = access.read().as_static(layout).unwrap();
            assert!(!target.overlaps(&own));
        }
        assert_eq!(c, [[1.0, 5.0], [3.0, 2.0]]);
        // A writable view can share memory with an operand under another name.
        let mut tensor = Tensor::<f64>::zeros([2, 2]);
        let view = tensor.view_mut();
        let access = TargetShared::__tdsl_target(&view);
        let target = access.as_static(layout).unwrap();
        let own = access.read().as_static(layout).unwrap();
        assert!(target.overlaps(&own));
        let apart = other.__tdsl_operand().as_static(layout).unwrap();
        assert!(!target.overlaps(&apart));
    }
}

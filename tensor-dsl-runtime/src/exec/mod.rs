//! How a statement runs: the [`Step`](step::Step) proof, the only door to the engines (loop
//! nests, GEMM calls, panels, networks of pairwise contractions), and the `Backend` trait
//! through which generated code sends each step to the host or to a device; beside them the
//! matrix operations (`matrix.rs`, on `faer`, feature `matrix`). Imports `tensor` and
//! `operand`.

/// `$run` with `$step` padded ([`Step::padded`](step::Step::padded)) from its `$loops` loops
/// to `$m`, the first of 2, 4, 8, 16, 32 and 64 that holds them. The engines that take it
/// (`contract`, `contract_network`, `copy`) are compiled once per element type and loop count,
/// and their code hardly depends on the count: a crate whose statements have 2 to 9 loops
/// compiles each four times, not eight. The release build of `tests/test_contraction.rs`
/// (statements of 2 to 9 loops in five element types) took 156 s instead of 223, on 2 cores.
/// The branches test constants, so only the one taken is compiled. A step has at most 64 loops
/// (`Step::assemble`): the last branch is never reached.
macro_rules! in_few_loops {
    ($loops:expr, $step:ident, $m:ident => $run:expr) => {
        in_few_loops!(@ $loops, $step, $m, $run; 2 4 8 16 32 64)
    };
    (@ $loops:expr, $step:ident, $m:ident, $run:expr; $count:literal $($larger:literal)*) => {
        if const { $loops <= $count } {
            const $m: usize = $count;
            let $step = $step.padded::<$m>();
            $run
        } else {
            in_few_loops!(@ $loops, $step, $m, $run; $($larger)*)
        }
    };
    (@ $loops:expr, $step:ident, $m:ident, $run:expr;) => {
        unreachable!("a step has at most 64 loops")
    };
}

pub(crate) mod backend;
#[cfg(test)]
mod copy_cases;
pub(crate) mod gemm;
mod grouped;
mod joined;
pub(crate) mod loop_nest;
#[cfg(feature = "matrix")]
pub(crate) mod matrix;
pub mod network;
pub(crate) mod panels;
pub(crate) mod parallel;
pub(crate) mod pointwise;
#[cfg(tdsl_unoptimized)]
pub mod prebuilt;
mod runs;
pub(crate) mod scratch;
pub(crate) mod step;
pub(crate) mod transpose;

/// The bytes the elements from `start` along loops of these `strides` (in elements) and
/// `extents` span: the lowest address and one past the highest element's end (saturating:
/// only compared, never dereferenced).
#[inline]
pub(crate) fn address_range<T>(
    start: *const T,
    strides: &[isize],
    extents: &[usize],
) -> (isize, isize) {
    let (mut low, mut high) = (start as isize, start as isize);
    for (&stride, &extent) in strides.iter().zip(extents) {
        let reach = (extent.saturating_sub(1) as isize)
            .saturating_mul(stride)
            .saturating_mul(size_of::<T>() as isize);
        low = low.saturating_add(reach.min(0));
        high = high.saturating_add(reach.max(0));
    }
    (low, high.saturating_add(size_of::<T>() as isize))
}

/// Whether the elements `extents` and the strides address from the two bases could share an
/// address: their ranges, lowest to highest, meet.
pub(crate) fn meet<T, const L: usize>(
    (source, source_strides): (*const T, &[isize; L]),
    (target, target_strides): (*mut T, &[isize; L]),
    extents: &[usize; L],
) -> bool {
    let (first, second) = (
        address_range(source, source_strides, extents),
        address_range(target.cast_const(), target_strides, extents),
    );
    first.0 < second.1 && second.0 < first.1
}

/// Sorts a step's loop numbers by `key`, stably. A step has a few loops, so an insertion sort;
/// and the key is a trait object, so the sort is compiled once per key type, not once per
/// engine instance and call site as the standard library's sort would be.
pub(crate) fn sort_loops<K: Ord>(loops: &mut [usize], key: &dyn Fn(usize) -> K) {
    for next in 1..loops.len() {
        let mut at = next;
        // Strictly less: equal keys keep their order.
        while at > 0 && key(loops[at]) < key(loops[at - 1]) {
            loops.swap(at, at - 1);
            at -= 1;
        }
    }
}

/// Some of a step's `L` loops, by number, in an order, held inline: the plans that run on
/// every call of a statement (`gemm::GemmPlan`) keep their loop lists here, so planning a small
/// product allocates nothing. No loop appears twice, so `L` places always suffice.
#[derive(Clone, Copy, Debug)]
pub(crate) struct LoopList<const L: usize> {
    loops: [usize; L],
    len: usize,
}

impl<const L: usize> LoopList<L> {
    /// No loops.
    pub(crate) const fn new() -> Self {
        LoopList {
            loops: [0; L],
            len: 0,
        }
    }

    /// Appends `var`.
    ///
    /// # Panics
    /// If the list already holds `L` loops (a loop listed twice: a bug in the caller).
    pub(crate) fn push(&mut self, var: usize) {
        assert!(
            self.len < L,
            "a loop list holds each of the step's {L} loops at most once"
        );
        self.loops[self.len] = var;
        self.len += 1;
    }

    /// Reorders the loops by `key` as [`sort_loops`] does (ties keep their order).
    pub(crate) fn sort_by<K: Ord>(&mut self, key: &dyn Fn(usize) -> K) {
        sort_loops(&mut self.loops[..self.len], key);
    }
}

impl<const L: usize> std::ops::Deref for LoopList<L> {
    type Target = [usize];

    fn deref(&self) -> &[usize] {
        &self.loops[..self.len]
    }
}

impl<const L: usize> FromIterator<usize> for LoopList<L> {
    fn from_iter<I: IntoIterator<Item = usize>>(vars: I) -> Self {
        let mut list = LoopList::new();
        list.extend(vars);
        list
    }
}

impl<const L: usize> Extend<usize> for LoopList<L> {
    fn extend<I: IntoIterator<Item = usize>>(&mut self, vars: I) {
        vars.into_iter().for_each(|var| self.push(var));
    }
}

impl<'a, const L: usize> IntoIterator for &'a LoopList<L> {
    type Item = &'a usize;
    type IntoIter = std::slice::Iter<'a, usize>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;

    use super::{sort_loops, LoopList};

    #[test]
    fn sort_loops_orders_by_key_and_keeps_ties_in_place() {
        let strides = [4usize, 1, 4, 16, 1, 0];
        let mut loops: Vec<usize> = (0..strides.len()).collect();
        sort_loops(&mut loops, &|var| Reverse(strides[var]));
        assert_eq!(loops, [3, 0, 2, 1, 4, 5]);
        // The standard library's stable sort agrees on every key.
        let mut expected: Vec<usize> = (0..strides.len()).collect();
        expected.sort_by_key(|&var| Reverse(strides[var]));
        assert_eq!(loops, expected);
    }

    #[test]
    fn sort_loops_takes_empty_and_single_runs() {
        let mut none: [usize; 0] = [];
        sort_loops(&mut none, &|var| var);
        let mut one = [7];
        sort_loops(&mut one, &|_| 0);
        assert_eq!(one, [7]);
    }

    #[test]
    fn loop_lists_hold_up_to_every_loop_in_order() {
        let mut list: LoopList<4> = [3, 1].into_iter().collect();
        list.extend([0, 2]);
        assert_eq!(&*list, [3, 1, 0, 2]);
        assert!(list.contains(&0) && !LoopList::<4>::new().contains(&0));
        assert_eq!(list.iter().rev().copied().collect::<Vec<_>>(), [2, 0, 1, 3]);
    }

    #[test]
    #[should_panic(expected = "at most once")]
    fn a_loop_list_refuses_more_loops_than_the_step_has() {
        let _: LoopList<2> = [0, 1, 0].into_iter().collect();
    }
}

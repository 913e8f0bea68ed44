//! Steps of `tensor!` statements over `DistTensor`s → the host engines on each rank's blocks:
//! first the moves that bring a rank the operand elements its share of the loops reads, last
//! (where the loops are not split as the target is) the one move that sums partial results
//! into the target's holders. Invariant: every choice (how the loops are split, which operands
//! move, how the target is written) is made from facts every rank has (global shapes,
//! distributions, extents, axes), so every rank makes the same collective calls in the same
//! order, and every check comes before the first message.

use std::marker::PhantomData;

use crate::element::Element;
use crate::exec::backend::{Backend, OnBackend, OnDist, RunsOn, StepModule};
use crate::exec::network::{planned_pairs, PlanCache, PlannedPair};
use crate::exec::step::{Axis, Step, TargetUse, Use};
use crate::operand::access::{
    Access, Memory, Mode, Operand, RawAccess, ShapeRef, TargetAccess, TargetOwned, Witness,
};
use crate::operand::array::LetResult;
use crate::tensor::{Tensor, TensorView};

use super::layout::{chunk, for_each_index, Distribution};
use super::plan::{coordinates, plan, rank_at, LoopSplit, Placed, StepPlan};
use super::tensor::DistTensor;
use super::world::World;

/// The processes of a [`World`], running each step of a statement over its `DistTensor`s.
pub struct Distributed(pub(crate) World);

/// A step over distributed tensors, as `Backend::prove` checked it: the target, each operand
/// and the axes each is read through, before any element moves.
pub struct DistStep<'a, T: Element, const L: usize, const N: usize> {
    target: Written<'a, T>,
    target_axes: &'a [Axis],
    mode: Mode<T>,
    alpha: T,
    extents: [usize; L],
    n_out: usize,
    operands: [Read<'a, T>; N],
}

/// What a distributed step writes.
#[derive(Clone, Copy)]
enum Written<'a, T: Element> {
    /// A distributed tensor, borrowed mutably for `'a` (the pointer of its `TargetAccess`).
    Dist(*mut DistTensor<T>, PhantomData<&'a mut DistTensor<T>>),
    /// A scalar every rank holds (a statement without left-hand indices).
    Scalar(&'a TargetAccess<'a, T>),
}

/// An operand of a distributed step: a tensor borrowed for `'a` (the target itself where the
/// statement reads its own elements in place) and its axes.
struct Read<'a, T: Element> {
    tensor: *const DistTensor<T>,
    axes: &'a [Axis],
    _borrow: PhantomData<&'a DistTensor<T>>,
}

/// A distributed tensor's global shape and distribution, read once before anything moves.
struct Layout {
    shape: Vec<usize>,
    distribution: Distribution,
}

impl<'a, T: Element, const L: usize, const N: usize> DistStep<'a, T, L, N> {
    fn target_layout(&self) -> Option<Layout> {
        match self.target {
            Written::Dist(target, _) => {
                // SAFETY: the pointer came from the `TargetAccess` of a `&'a mut DistTensor`
                // (`prove` checked its memory); nothing writes the tensor while this shared
                // borrow lives, which ends here.
                let target = unsafe { &*target };
                Some(Layout {
                    shape: target.shape().to_vec(),
                    distribution: target.distribution().clone(),
                })
            }
            Written::Scalar(_) => None,
        }
    }

    /// A hash of everything that decides the step's transfers, and where it was called.
    fn plan_key(&self, target: Option<&Layout>, kind: &str, at: &std::panic::Location<'_>) -> u64 {
        use std::hash::{Hash, Hasher};
        // Fixed keys: the same value in every process of one program.
        let mut hasher = std::hash::DefaultHasher::new();
        (kind, at.file(), at.line(), at.column()).hash(&mut hasher);
        (L, N, self.n_out, self.extents, self.target_axes).hash(&mut hasher);
        target
            .map(|t| (&t.shape, &t.distribution))
            .hash(&mut hasher);
        for k in 0..N {
            let operand = self.operand(k);
            (
                operand.shape(),
                operand.distribution(),
                self.operands[k].axes,
            )
                .hash(&mut hasher);
        }
        hasher.finish()
    }

    fn operand(&self, k: usize) -> &DistTensor<T> {
        // SAFETY: from the `Access` of a `&'a DistTensor`, or the target's own in-place read
        // (see `prove`); nothing writes it while `self` is borrowed here (writes come after
        // every read, through `run`'s own borrow of the target).
        unsafe { &*self.operands[k].tensor }
    }

    /// How the step runs (see `plan::plan`).
    fn choose(&self, target: Option<&Layout>, ranks: usize) -> StepPlan {
        let target = target.map(|t| Placed {
            shape: &t.shape,
            distribution: &t.distribution,
            axes: self.target_axes,
        });
        let operands: Vec<Placed<'_>> = (0..N)
            .map(|k| {
                let operand = self.operand(k);
                Placed {
                    shape: operand.shape(),
                    distribution: operand.distribution(),
                    axes: self.operands[k].axes,
                }
            })
            .collect();
        plan(target, &operands, &self.extents, self.n_out, ranks)
    }
}

impl Distributed {
    /// Runs `step` on this rank's blocks with `kernel`, a host engine (its `kind` named in
    /// the debug check of the plan).
    #[track_caller]
    fn run<T: Element, const L: usize, const N: usize>(
        &self,
        step: DistStep<'_, T, L, N>,
        kind: &str,
        kernel: impl FnOnce(Step<'_, T, L, N>),
    ) {
        let world = &self.0;
        let rank = world.rank();
        let target = step.target_layout();
        if cfg!(debug_assertions) {
            // A rank at another statement would otherwise wait in mismatched transfers.
            let at = std::panic::Location::caller();
            let key = step.plan_key(target.as_ref(), kind, at);
            world.check_same(key, || {
                format!("{kind} step of {L} loops over {N} operands, at {at}")
            });
        }
        let choice = step.choose(target.as_ref(), world.size());
        // The moves: every rank makes the same ones, in operand order.
        let moved: Vec<Option<DistTensor<T>>> = (0..N)
            .map(|k| {
                choice.moves[k].as_ref().map(|to| {
                    step.operand(k)
                        .redistribute(to.clone())
                        .expect("an induced distribution over the world's ranks")
                })
            })
            .collect();
        let ranges = choice.split.ranges(&step.extents, rank);
        let extents: [usize; L] = std::array::from_fn(|v| ranges[v].len());
        // Each operand's block, cut to this rank's loop ranges on the axes it holds whole.
        let block = |k: usize| -> TensorView<'_, T> {
            let tensor = moved[k].as_ref().unwrap_or_else(|| step.operand(k));
            let mut view = tensor.local().view();
            let distribution = tensor.distribution();
            for (axis, &a) in step.operands[k].axes.iter().enumerate() {
                if let Axis::Loop(var) = a {
                    if !distribution.splits_axis(axis) && choice.split.loops[var].is_some() {
                        view = view.slice_axis(axis, ranges[var].clone());
                    }
                }
            }
            view
        };
        match (written_by(&step), choice.direct) {
            (Written::Dist(target, _), true) => {
                // In place: the target's own point-wise reads (not moved: their distribution
                // is the target's) go through the target's access below.
                let in_place: [bool; N] =
                    std::array::from_fn(|k| step.operands[k].tensor == target.cast_const());
                let blocks: Vec<Option<TensorView<'_, T>>> = (0..N)
                    .map(|k| (!in_place[k] || moved[k].is_some()).then(|| block(k)))
                    .collect();
                let reads: Vec<_> = blocks
                    .iter()
                    .map(|b| b.as_ref().map(Operand::__tdsl_operand))
                    .collect();
                // SAFETY: the `TargetAccess` this came from borrows the tensor mutably for the
                // statement; every shared borrow of it above (layouts, moves) has ended, and
                // its in-place reads go through this borrow's own access.
                let target = unsafe { &mut *target };
                let mut access = target.local_mut().__tdsl_target();
                let access = &mut access;
                let own = access.read();
                let uses: [Use<'_, T>; N] = std::array::from_fn(|k| match reads[k] {
                    Some(read) => read.at(step.operands[k].axes),
                    None => own.at(step.operands[k].axes),
                });
                let local = Step::new(
                    access.at(step.target_axes),
                    step.mode,
                    step.alpha,
                    extents,
                    step.n_out,
                    uses,
                );
                kernel(local);
                moved.into_iter().flatten().for_each(DistTensor::recycle);
            }
            (Written::Scalar(target), true) => {
                let blocks: Vec<TensorView<'_, T>> = (0..N).map(block).collect();
                let uses: [Use<'_, T>; N] =
                    std::array::from_fn(|k| blocks[k].__tdsl_operand().at(step.operands[k].axes));
                kernel(Step::new(
                    target.at(step.target_axes),
                    step.mode,
                    step.alpha,
                    extents,
                    step.n_out,
                    uses,
                ));
                moved.into_iter().flatten().for_each(DistTensor::recycle);
            }
            (written, false) => {
                // Partial results over this rank's loop ranges, summed into the target's holders.
                let mut partial = Tensor::zeros(&extents[..step.n_out]);
                {
                    let blocks: Vec<TensorView<'_, T>> = (0..N).map(block).collect();
                    let uses: [Use<'_, T>; N] = std::array::from_fn(|k| {
                        blocks[k].__tdsl_operand().at(step.operands[k].axes)
                    });
                    let axes: Vec<Axis> = (0..step.n_out).map(Axis::Loop).collect();
                    let access = partial.__tdsl_target();
                    kernel(Step::new(
                        access.at(&axes),
                        Mode::Assign,
                        step.alpha,
                        extents,
                        step.n_out,
                        uses,
                    ));
                }
                moved.into_iter().flatten().for_each(DistTensor::recycle);
                let sums = Sums {
                    world,
                    split: &choice.split,
                    extents: &step.extents,
                    n_out: step.n_out,
                    target_axes: step.target_axes,
                };
                match written {
                    Written::Dist(target, _) => {
                        let layout = target_layout_of(&target);
                        let (offsets, values) = sums.exchange(&partial, &ranges, Some(&layout));
                        // SAFETY: as above: every shared borrow of the target has ended.
                        let target = unsafe { &mut *target };
                        let block = target.local_mut().as_mut_slice();
                        for (offset, value) in offsets.into_iter().zip(values) {
                            block[offset] = combine(step.mode, block[offset], value);
                        }
                    }
                    Written::Scalar(target) => {
                        let (_, values) = sums.exchange(&partial, &ranges, None);
                        let sum = Tensor::from_shape_vec(
                            [0usize; 0],
                            vec![values.first().copied().unwrap_or(T::ZERO)],
                        )
                        .expect("one element");
                        let read = sum.__tdsl_operand();
                        crate::exec::loop_nest::evaluate(
                            Step::new(target.at(&[]), step.mode, T::ONE, [], 0, [read.at(&[])]),
                            |[value]: [T; 1]| value,
                            crate::exec::loop_nest::AnyNest,
                        );
                    }
                }
            }
        }
    }
}

fn written_by<'a, T: Element, const L: usize, const N: usize>(
    step: &DistStep<'a, T, L, N>,
) -> Written<'a, T> {
    step.target
}

/// The target's layout, read through its pointer (see `DistStep::target_layout`).
fn target_layout_of<T: Element>(target: &*mut DistTensor<T>) -> Layout {
    // SAFETY: as in `DistStep::target_layout`.
    let target = unsafe { &**target };
    Layout {
        shape: target.shape().to_vec(),
        distribution: target.distribution().clone(),
    }
}

/// A written element after a step: the target's mode applied to the summed value.
fn combine<T: Element>(mode: Mode<T>, old: T, value: T) -> T {
    match mode {
        Mode::Assign => value,
        Mode::Add => old.plus(value),
        // β = 0 does not read the target (NaN there stays out), as everywhere.
        Mode::Scale(beta) if beta == T::ZERO => value,
        Mode::Scale(beta) => beta.times(old).plus(value),
    }
}

/// The move that sums each rank's partial results into the target's holders.
struct Sums<'s> {
    world: &'s World,
    split: &'s LoopSplit,
    extents: &'s [usize],
    n_out: usize,
    target_axes: &'s [Axis],
}

impl Sums<'_> {
    /// Sends every element of this rank's `partial` (over its loop `ranges`) to the target's
    /// holders (every rank for a scalar), and returns the offsets in this rank's target block
    /// the loops reach, each with the sum of its partial results, added in rank order (so every
    /// holder of an element gets the same bits). Of ranks that computed the same partial
    /// results (replicas over grid axes no loop is split over), only the first sends.
    fn exchange<T: Element>(
        &self,
        partial: &Tensor<T>,
        ranges: &[std::ops::Range<usize>],
        target: Option<&Layout>,
    ) -> (Vec<usize>, Vec<T>) {
        let (rank, ranks) = (self.world.rank(), self.world.size());
        let grid = &self.split.grid;
        let here = coordinates(grid, rank);
        let sends = self.split.unused().iter().all(|&g| here[g] == 0);
        let mut send = vec![Vec::new(); ranks];
        if sends {
            match target {
                Some(target) => {
                    // Per target axis, what each of this rank's loop positions adds to the
                    // holding rank (`Distribution::rank_shares`), a fixed position a constant.
                    let distribution = &target.distribution;
                    let shares: Vec<(Option<usize>, Vec<usize>)> = self
                        .target_axes
                        .iter()
                        .enumerate()
                        .map(|(a, &axis)| match axis {
                            Axis::Loop(var) => {
                                let globals: Vec<usize> = ranges[var].clone().collect();
                                (
                                    Some(var),
                                    distribution.rank_shares(&target.shape, a, &globals),
                                )
                            }
                            Axis::Fixed(position) => (
                                None,
                                distribution.rank_shares(&target.shape, a, &[position]),
                            ),
                        })
                        .collect();
                    let replicas = distribution.replica_offsets();
                    let mut values = partial.as_slice().iter();
                    for_each_index(partial.shape(), |local| {
                        let value = *values.next().expect("one value per index");
                        let primary: usize = shares
                            .iter()
                            .map(|(var, table)| table[var.map_or(0, |v| local[v])])
                            .sum();
                        for &replica in &replicas {
                            send[primary + replica].push(value);
                        }
                    });
                }
                None => {
                    for part in &mut send {
                        part.extend_from_slice(partial.as_slice());
                    }
                }
            }
        }
        // What arrives: for each sender, the offsets of this rank's block its values go to,
        // keyed by the loop tuple's row-major rank (the order the sender sends in).
        let mut from: Vec<Vec<(usize, usize)>> = vec![Vec::new(); ranks];
        let summed: Vec<usize> = self.split.loops[self.n_out..]
            .iter()
            .flatten()
            .copied()
            .collect();
        let combinations: usize = summed.iter().map(|&g| grid[g]).product();
        let mut coordinates = vec![0; grid.len()];
        let mut contributors = |tuple: &[usize], offset: usize| {
            let mut key = 0;
            for (var, &t) in tuple.iter().enumerate() {
                key = key * self.extents[var] + t;
                if let Some(g) = self.split.loops[var] {
                    coordinates[g] = t / chunk(self.extents[var], grid[g]);
                }
            }
            for combination in 0..combinations {
                let mut rest = combination;
                for &g in summed.iter().rev() {
                    coordinates[g] = rest % grid[g];
                    rest /= grid[g];
                }
                from[rank_at(grid, &coordinates)].push((key, offset));
            }
        };
        let len = match target {
            Some(target) => {
                let distribution = &target.distribution;
                let globals = distribution.block_globals(&target.shape, rank);
                let local_shape = distribution.local_shape(&target.shape, rank);
                let mut offset = 0;
                let mut tuple = vec![0; self.n_out];
                let mut set = vec![false; self.n_out];
                for_each_index(&local_shape, |local| {
                    set.fill(false);
                    let reached = self.target_axes.iter().enumerate().all(|(a, &axis)| {
                        let g = globals[a][local[a]];
                        match axis {
                            Axis::Loop(var) if std::mem::replace(&mut set[var], true) => {
                                tuple[var] == g
                            }
                            Axis::Loop(var) => {
                                tuple[var] = g;
                                true
                            }
                            Axis::Fixed(position) => position == g,
                        }
                    });
                    if reached {
                        contributors(&tuple, offset);
                    }
                    offset += 1;
                });
                offset
            }
            None => {
                contributors(&[], 0);
                1
            }
        };
        for list in &mut from {
            // Already in order where the target's axes follow its loops (always, for
            // generated code); sorted otherwise.
            if !list.is_sorted_by_key(|&(key, _)| key) {
                list.sort_by_key(|&(key, _)| key);
            }
        }
        let receive: Vec<usize> = from.iter().map(Vec::len).collect();
        let received = self.world.all_to_all(&send, &receive);
        let mut sums = vec![T::ZERO; len];
        let mut reached = vec![false; len];
        let mut values = received.into_iter();
        for list in &from {
            for &(_, offset) in list {
                let value = values.next().expect("counted");
                sums[offset] = sums[offset].plus(value);
                reached[offset] = true;
            }
        }
        let offsets: Vec<usize> = (0..len).filter(|&at| reached[at]).collect();
        let sums = offsets.iter().map(|&at| sums[at]).collect();
        (offsets, sums)
    }
}

impl Backend for Distributed {
    type Kind = OnDist;
    type Step<'a, T: Element, const L: usize, const N: usize> = DistStep<'a, T, L, N>;
    type Tensor<T: Element> = DistTensor<T>;
    /// Distributed tensors' extents are dynamic, so a `let` is a distributed tensor.
    type Result<T: Element, E: LetResult<T>> = DistTensor<T>;

    #[track_caller]
    fn prove<'a, T: Element, const L: usize, const N: usize>(
        &self,
        target: TargetUse<'a, T>,
        mode: Mode<T>,
        alpha: T,
        extents: [usize; L],
        n_out: usize,
        operands: [Use<'a, T>; N],
    ) -> DistStep<'a, T, L, N> {
        let (access, target_axes) = target.parts();
        let raw = &access.raw;
        let target = match raw.memory {
            Memory::Dist if !raw.part => {
                Written::Dist(access.data_mut().cast::<DistTensor<T>>(), PhantomData)
            }
            Memory::Host if raw.shape.is_empty() => Written::Scalar(access),
            _ => panic!("{MIXED}"),
        };
        let operands = operands.map(|operand| {
            let (access, axes) = operand.parts();
            assert!(
                access.raw.memory == Memory::Dist && !access.raw.part,
                "{MIXED}"
            );
            Read {
                tensor: access.raw.data.cast::<DistTensor<T>>(),
                axes,
                _borrow: PhantomData,
            }
        });
        let step = DistStep {
            target,
            target_axes,
            mode,
            alpha,
            extents,
            n_out,
            operands,
        };
        step.check(self);
        step
    }

    #[track_caller]
    fn zeros<W: Witness + ?Sized, const R: usize>(
        &self,
        _witness: &W,
        shape: [usize; R],
    ) -> DistTensor<W::Elem> {
        let distribution = Distribution::spread(R, self.0.size());
        DistTensor::zeros(&self.0, &shape, distribution).expect("a distribution of the world")
    }

    #[track_caller]
    fn new_result<W: Witness + ?Sized, E: LetResult<W::Elem>, const R: usize>(
        &self,
        witness: &W,
        _extents: E,
        shape: [usize; R],
    ) -> DistTensor<W::Elem> {
        self.zeros(witness, shape)
    }

    #[track_caller]
    fn evaluate<T: Element, const L: usize, const N: usize>(
        &self,
        step: DistStep<'_, T, L, N>,
        body: impl Fn([T; N]) -> T + Sync,
        _module: &StepModule<'_>,
        _scalars: &[T],
    ) {
        self.run(step, "loop-nest", |local| {
            crate::exec::loop_nest::evaluate(local, body, crate::exec::loop_nest::AnyNest)
        });
    }

    #[track_caller]
    fn contract<T: Element, const L: usize>(
        &self,
        step: DistStep<'_, T, L, 2>,
        conj: [bool; 2],
        _module: &StepModule<'_>,
        _scalars: &[T],
    ) {
        self.run(step, "contraction", |local| {
            crate::exec::gemm::contract(local, conj)
        });
    }

    #[track_caller]
    fn contract_network<T: Element, const L: usize, const N: usize>(
        &self,
        step: DistStep<'_, T, L, N>,
        conj: [bool; N],
        cache: &PlanCache,
        _module: &StepModule<'_>,
        _scalars: &[T],
    ) {
        match step.pairs() {
            Some(pairs) => self.run_pairs(step, conj, &pairs),
            None => self.run(step, "product", |local| {
                crate::exec::network::contract_network(local, conj, cache)
            }),
        }
    }
}

impl<T: Element, const L: usize, const N: usize> DistStep<'_, T, L, N> {
    /// The loops each factor uses (bit masks).
    fn masks(&self) -> Vec<u64> {
        self.operands
            .iter()
            .map(|operand| {
                operand.axes.iter().fold(0u64, |mask, axis| match *axis {
                    Axis::Loop(var) => mask | 1 << var,
                    Axis::Fixed(_) => mask,
                })
            })
            .collect()
    }

    /// The pairwise contractions a product of three or more runs as (the host planner's
    /// order for these extents), where it can: something to compute, a target whose points are
    /// distinct, no factor read in place (as on the host).
    fn pairs(&self) -> Option<Vec<PlannedPair>> {
        let target = match self.target {
            Written::Dist(target, _) => Some(target.cast_const()),
            Written::Scalar(_) => None,
        };
        let distinct_target_loops = (1..self.target_axes.len())
            .all(|a| !self.target_axes[..a].contains(&self.target_axes[a]));
        if N < 3
            || L > 64
            || self.extents.contains(&0)
            || !distinct_target_loops
            || self.operands.iter().any(|o| Some(o.tensor) == target)
        {
            return None;
        }
        let out = (0..self.n_out).fold(0u64, |mask, var| mask | 1 << var);
        let pairs = planned_pairs(&self.extents, &self.masks(), out);
        (pairs.last().map(|pair| pair.kept) == Some(out)).then_some(pairs)
    }
}

impl Distributed {
    /// A product of three or more as pairwise distributed steps through distributed
    /// temporaries (spread as `let`s are), each run by `run` as a two-operand contraction: the
    /// last writes the step's target with its mode and α, the others a temporary.
    #[track_caller]
    fn run_pairs<T: Element, const L: usize, const N: usize>(
        &self,
        step: DistStep<'_, T, L, N>,
        conj: [bool; N],
        pairs: &[PlannedPair],
    ) {
        let ranks = self.0.size();
        let loops_of = |mask: u64| (0..L).filter(move |&var| mask >> var & 1 == 1);
        let mut masks = step.masks();
        masks.extend(pairs.iter().map(|pair| pair.kept));
        // Every temporary is made before the first contraction, and the vector is not touched
        // again until it is dropped: the pointers below stay valid.
        let mut temporaries: Vec<DistTensor<T>> = pairs[..pairs.len() - 1]
            .iter()
            .map(|pair| {
                let shape: Vec<usize> = loops_of(pair.kept).map(|v| step.extents[v]).collect();
                let spread = Distribution::spread(shape.len(), ranks);
                DistTensor::zeros(&self.0, &shape, spread).expect("a distribution of the world")
            })
            .collect();
        let temporary_axes: Vec<Vec<Axis>> = pairs
            .iter()
            .map(|pair| loops_of(pair.kept).map(Axis::Loop).collect())
            .collect();
        let base = temporaries.as_mut_ptr();
        for (k, pair) in pairs.iter().enumerate() {
            let (kept, involved) = (pair.kept, masks[pair.left] | masks[pair.right]);
            // The pair's loops renumbered: the ones it keeps first, then the ones it sums, then
            // the others (of extent 1).
            let mut order: Vec<usize> = loops_of(kept).collect();
            order.extend(loops_of(involved & !kept));
            order.extend(loops_of(!involved));
            let mut renumbered = [0usize; L];
            for (new, &old) in order.iter().enumerate() {
                renumbered[old] = new;
            }
            let remap = |axes: &[Axis]| -> Vec<Axis> {
                axes.iter()
                    .map(|&axis| match axis {
                        Axis::Loop(var) => Axis::Loop(renumbered[var]),
                        fixed @ Axis::Fixed(_) => fixed,
                    })
                    .collect()
            };
            let extents: [usize; L] = std::array::from_fn(|new| match involved >> order[new] & 1 {
                1 => step.extents[order[new]],
                _ => 1,
            });
            let last = k + 1 == pairs.len();
            let (target, target_axes, mode, alpha) = match last {
                true => (step.target, remap(step.target_axes), step.mode, step.alpha),
                false => (
                    // SAFETY: `k` < the temporaries' count: inside their buffer.
                    Written::Dist(unsafe { base.add(k) }, PhantomData),
                    remap(&temporary_axes[k]),
                    Mode::Assign,
                    T::ONE,
                ),
            };
            let factor = |f: usize| -> (*const DistTensor<T>, Vec<Axis>, bool) {
                match f < N {
                    true => (
                        step.operands[f].tensor,
                        remap(step.operands[f].axes),
                        conj[f],
                    ),
                    // SAFETY: in bounds of the temporaries' buffer: a factor past the step's
                    // own is the result of an earlier pair, one of the temporaries.
                    false => (
                        unsafe { base.add(f - N) }.cast_const(),
                        remap(&temporary_axes[f - N]),
                        false,
                    ),
                }
            };
            let (left, right) = (factor(pair.left), factor(pair.right));
            fn read<T: Element>(factor: &(*const DistTensor<T>, Vec<Axis>, bool)) -> Read<'_, T> {
                Read {
                    tensor: factor.0,
                    axes: factor.1.as_slice(),
                    _borrow: PhantomData,
                }
            }
            let pair_step: DistStep<'_, T, L, 2> = DistStep {
                target,
                target_axes: &target_axes,
                mode,
                alpha,
                extents,
                n_out: kept.count_ones() as usize,
                operands: [read(&left), read(&right)],
            };
            pair_step.check(self);
            let conj = [left.2, right.2];
            self.run(pair_step, "pairwise product", |local| {
                crate::exec::gemm::contract(local, conj)
            });
        }
        temporaries.into_iter().for_each(DistTensor::recycle);
    }
}

/// What a statement mixing distributed tensors with others is told.
const MIXED: &str = "a statement over `DistTensor`s reads or writes a tensor of another kind: \
    make every tensor of the statement a `DistTensor` (a host tensor every rank holds alike \
    becomes one with `DistTensor::replicated`)";

impl<T: Element, const L: usize, const N: usize> DistStep<'_, T, L, N> {
    /// The checks `Step::new` makes, against the global shapes: generated code made them
    /// before with messages for users, so a failure here is a bug in the caller. Also that
    /// every tensor lives in a world of the backend's size.
    #[track_caller]
    fn check(&self, backend: &Distributed) {
        let ranks = backend.0.size();
        let mut accesses: Vec<(&[usize], &[Axis])> = Vec::new();
        if let Written::Dist(target, _) = self.target {
            // SAFETY: as in `target_layout`.
            let target = unsafe { &*target };
            assert_eq!(target.world().size(), ranks, "{WORLDS}");
            accesses.push((target.shape(), self.target_axes));
        }
        for k in 0..N {
            let operand = self.operand(k);
            assert_eq!(operand.world().size(), ranks, "{WORLDS}");
            accesses.push((operand.shape(), self.operands[k].axes));
        }
        for (shape, axes) in accesses {
            assert_eq!(shape.len(), axes.len(), "{INCONSISTENT}");
            for (&n, &axis) in shape.iter().zip(axes) {
                match axis {
                    Axis::Loop(var) => assert!(var < L && self.extents[var] == n, "{INCONSISTENT}"),
                    Axis::Fixed(position) => assert!(position < n, "{INCONSISTENT}"),
                }
            }
        }
        let mut covered = vec![false; L];
        for &axis in self.target_axes {
            match axis {
                Axis::Loop(var) => {
                    assert!(var < self.n_out, "{INCONSISTENT}");
                    covered[var] = true;
                }
                Axis::Fixed(_) => {}
            }
        }
        assert!(
            self.n_out <= L && covered[..self.n_out].iter().all(|&c| c),
            "{INCONSISTENT}"
        );
    }
}

const WORLDS: &str = "the tensors of a statement live in worlds of different sizes: make them \
    all in one world";

const INCONSISTENT: &str = "a distributed step's shapes, axes and extents disagree: this is a \
    tensor-dsl bug";

impl<T: Element> OnBackend for DistTensor<T> {
    type Kind = OnDist;
    type Backend = Distributed;
    fn __tdsl_backend(&self) -> Distributed {
        Distributed(self.world().clone())
    }
}

impl<T: Element> RunsOn<OnDist> for DistTensor<T> {}

/// A distributed tensor in a statement: its global shape, and for an address the tensor
/// itself (`Memory::Dist`), which only this backend reads, as the tensor it is.
impl<T: Element> Operand for DistTensor<T> {
    type Elem = T;
    type Extents = crate::operand::extents::Dynamic;
    fn __tdsl_shape(&self) -> ShapeRef<'_> {
        self.shape().into()
    }
    fn __tdsl_operand(&self) -> Access<'_, T> {
        let data = std::ptr::from_ref(self).cast::<T>();
        let raw = RawAccess::new(data, self.len(), self.shape(), self.global_strides(), 0);
        Access::new(raw).in_memory(Memory::Dist)
    }
}

impl<T: Element> TargetOwned for DistTensor<T> {
    type Elem = T;
    fn __tdsl_target(&mut self) -> TargetAccess<'_, T> {
        let len = self.len();
        let data = std::ptr::from_mut(self);
        let (shape, strides) = (self.shape(), self.global_strides());
        let raw = RawAccess::new(data.cast_const().cast::<T>(), len, shape, strides, 0);
        // SAFETY: `Memory::Dist` marks the pointer as no elements at all: host kernels run
        // only steps over host memory (`Step::assert_on_host`), written-out loops only over
        // host accesses (`as_dense`), copies for overlaps only of host accesses (`detach`),
        // and devices only over their own memory, so none reads or writes through it; the
        // distributed backend reads it as the tensor, which it is, with the write provenance
        // of this `&mut` borrow that lives as long as the access.
        unsafe { TargetAccess::new(raw) }
            .exclusive()
            .in_memory(Memory::Dist)
    }
}

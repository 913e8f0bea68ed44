//! A step's loops, accesses and extents, and where its tensors are spread → how the
//! distributed backend runs it: which loops each rank runs a block of, which operands move
//! (and into what), whether the target is written in place or through summed partial results,
//! and what that costs a rank. Pure arithmetic over global facts (no messages, no MPI), so
//! every rank makes the same choice, and `tensor-dsl explain --ranks` prints it.

use crate::exec::step::Axis;

use super::layout::{block_range, chunk, Distribution, Split};

/// How a step's loops are spread over a process grid: per loop, the grid axis it is split over
/// in consecutive blocks, if any.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoopSplit {
    pub(crate) grid: Vec<usize>,
    pub(crate) loops: Vec<Option<usize>>,
}

impl LoopSplit {
    /// The loops split as a tensor of `distribution` read through `axes` splits them (block
    /// and block-cyclic axes both become blocks; a loop on two axes takes the first's).
    pub(crate) fn of(distribution: &Distribution, axes: &[Axis], loops: usize) -> Self {
        let grid = distribution.grid().to_vec();
        let mut split = vec![None; loops];
        let mut used = vec![false; grid.len()];
        for (axis, &a) in axes.iter().enumerate() {
            let (Axis::Loop(var), Split::Block(g) | Split::Cyclic(g, _)) =
                (a, distribution.splits()[axis])
            else {
                continue;
            };
            // A grid axis of one rank splits nothing.
            if split[var].is_none() && !used[g] && grid[g] > 1 {
                split[var] = Some(g);
                used[g] = true;
            }
        }
        LoopSplit { grid, loops: split }
    }

    /// The distribution a tensor read through `axes` needs for each rank to hold what its
    /// share of the loops reads: the first axis over each split loop split alike, the others
    /// whole (so fixed positions and diagonals index global extents).
    pub(crate) fn induced(&self, axes: &[Axis]) -> Distribution {
        let mut taken = vec![false; self.loops.len()];
        let splits: Vec<Split> = axes
            .iter()
            .map(|&axis| match axis {
                Axis::Loop(var) if !std::mem::replace(&mut taken[var], true) => {
                    self.loops[var].map_or(Split::Whole, Split::Block)
                }
                _ => Split::Whole,
            })
            .collect();
        Distribution::new(&self.grid, &splits).expect("one grid axis per loop")
    }

    /// The grid axes no loop is split over.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn unused(&self) -> Vec<usize> {
        (0..self.grid.len())
            .filter(|g| !self.loops.contains(&Some(*g)))
            .collect()
    }

    /// `rank`'s range of each loop.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    pub(crate) fn ranges(&self, extents: &[usize], rank: usize) -> Vec<std::ops::Range<usize>> {
        let coordinates = coordinates(&self.grid, rank);
        self.loops
            .iter()
            .zip(extents)
            .map(|(split, &n)| match *split {
                Some(g) => block_range(n, self.grid[g], coordinates[g]),
                None => 0..n,
            })
            .collect()
    }
}

pub(crate) fn coordinates(grid: &[usize], rank: usize) -> Vec<usize> {
    let mut rest = rank;
    let mut coordinates = vec![0; grid.len()];
    for (c, &p) in coordinates.iter_mut().zip(grid).rev() {
        *c = rest % p;
        rest /= p;
    }
    coordinates
}

#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn rank_at(grid: &[usize], coordinates: &[usize]) -> usize {
    coordinates
        .iter()
        .zip(grid)
        .fold(0, |rank, (&c, &p)| rank * p + c)
}

/// The elements each rank holds of a tensor of `shape` spread by `distribution`, the same on
/// every rank (the largest block): what a move into it costs a rank at most.
fn per_rank(distribution: &Distribution, shape: &[usize]) -> usize {
    shape
        .iter()
        .zip(distribution.splits())
        .map(|(&n, split)| match *split {
            Split::Whole => n,
            Split::Block(g) | Split::Cyclic(g, _) => chunk(n, distribution.grid()[g]).min(n),
        })
        .product()
}

impl LoopSplit {
    /// The process grid the loops are split over.
    pub fn grid(&self) -> &[usize] {
        &self.grid
    }

    /// Per loop, the grid axis it is split over in blocks, if any.
    pub fn loops(&self) -> &[Option<usize>] {
        &self.loops
    }
}

/// A tensor of a step: its global shape, its distribution and the axes it is read (or
/// written) through.
#[derive(Clone, Copy, Debug)]
pub struct Placed<'a> {
    /// The global extents.
    pub shape: &'a [usize],
    /// How it is spread.
    pub distribution: &'a Distribution,
    /// One per axis: the loop it follows, or a fixed position.
    pub axes: &'a [Axis],
}

/// How a step runs on distributed tensors.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StepPlan {
    /// How the loops are split.
    pub split: LoopSplit,
    /// Per operand: the distribution it is moved into first, if it is not in it already.
    pub moves: Vec<Option<Distribution>>,
    /// The split writes the target's blocks directly (owner computes); otherwise each rank
    /// computes a partial result and one all-to-all sums it into the target's holders.
    pub direct: bool,
    /// The elements the moves and sums fill in a rank's blocks at most (its own part
    /// included, which is not sent): the cost the choice minimises.
    pub received: usize,
}

/// The split with the fewest elements received per rank among the target's (owner computes)
/// and each operand's (the others moved to it, and partial results summed), the first of
/// equals; with neither (a scalar of no operand), no split over one grid axis of `ranks`.
pub fn plan(
    target: Option<Placed<'_>>,
    operands: &[Placed<'_>],
    extents: &[usize],
    n_out: usize,
    ranks: usize,
) -> StepPlan {
    let loops = extents.len();
    let mut candidates: Vec<LoopSplit> = Vec::new();
    for placed in target.iter().chain(operands) {
        let candidate = LoopSplit::of(placed.distribution, placed.axes, loops);
        if !candidates.contains(&candidate) {
            candidates.push(candidate);
        }
    }
    if candidates.is_empty() {
        candidates.push(LoopSplit {
            grid: vec![ranks.max(1)],
            loops: vec![None; loops],
        });
    }
    let repeated_target_loop =
        target.is_some_and(|t| (1..t.axes.len()).any(|a| t.axes[..a].contains(&t.axes[a])));
    let mut best: Option<StepPlan> = None;
    for split in candidates {
        let mut received = 0;
        let moves: Vec<Option<Distribution>> = operands
            .iter()
            .map(|operand| {
                let wanted = split.induced(operand.axes);
                (!wanted.holds_like(operand.distribution)).then(|| {
                    received += per_rank(&wanted, operand.shape);
                    wanted
                })
            })
            .collect();
        let summed_split = split.loops[n_out..].iter().any(Option::is_some);
        let direct = !summed_split
            && match target {
                Some(target) => {
                    !repeated_target_loop
                        && split.induced(target.axes).holds_like(target.distribution)
                }
                None => true,
            };
        if !direct {
            let partial: usize = (0..n_out)
                .map(|v| match split.loops[v] {
                    Some(g) => chunk(extents[v], split.grid[g]).min(extents[v]),
                    None => extents[v],
                })
                .product();
            let written = target.map_or(1, |t| per_rank(t.distribution, t.shape));
            received += partial + written;
        }
        if best.as_ref().is_none_or(|least| received < least.received) {
            best = Some(StepPlan {
                split,
                moves,
                direct,
                received,
            });
        }
    }
    best.expect("at least one candidate")
}

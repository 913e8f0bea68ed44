//! A global shape and a process grid → which ranks hold which elements: each tensor axis
//! whole on every rank, in consecutive blocks, or in blocks dealt round-robin over one grid
//! axis. Pure index arithmetic, no messages. Invariant: a rank's block lists its elements in
//! global row-major order (every per-axis map from local to global index is increasing), and
//! each element has exactly one *primary* holder: the rank at coordinate 0 on every grid axis
//! the tensor does not split (the others hold replicas).

use std::fmt;

/// How one tensor axis is spread over the process grid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Split {
    /// Every rank holds the whole axis.
    Whole,
    /// Consecutive blocks of ⌈n / p⌉ indices over grid axis `.0` (of extent p); the last
    /// blocks may be short or empty.
    Block(usize),
    /// Blocks of `.1` indices dealt round-robin over grid axis `.0` (ScaLAPACK's
    /// block-cyclic layout).
    Cyclic(usize, usize),
}

/// A process grid and one [`Split`] per tensor axis.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Distribution {
    grid: Vec<usize>,
    splits: Vec<Split>,
}

/// A distribution that names no valid grid axis, uses one twice, or has an empty block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DistributionError(String);

impl fmt::Display for DistributionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DistributionError {}

impl Distribution {
    /// A grid of `grid` ranks per grid axis (row-major: the last grid axis varies fastest
    /// over consecutive ranks) and one split per tensor axis.
    pub fn new(grid: &[usize], splits: &[Split]) -> Result<Self, DistributionError> {
        if grid.is_empty() || grid.contains(&0) {
            return Err(DistributionError(format!(
                "a process grid needs at least one axis and one rank per axis, not {grid:?}"
            )));
        }
        let mut used = vec![false; grid.len()];
        for (axis, split) in splits.iter().enumerate() {
            let (grid_axis, block) = match *split {
                Split::Whole => continue,
                Split::Block(g) => (g, 1),
                Split::Cyclic(g, block) => (g, block),
            };
            if grid_axis >= grid.len() {
                return Err(DistributionError(format!(
                    "tensor axis {axis} is split over grid axis {grid_axis}, but the grid {grid:?} has {} axes",
                    grid.len()
                )));
            }
            if std::mem::replace(&mut used[grid_axis], true) {
                return Err(DistributionError(format!(
                    "grid axis {grid_axis} splits two tensor axes: split each over its own grid axis"
                )));
            }
            if block == 0 {
                return Err(DistributionError(format!(
                    "tensor axis {axis} is dealt in blocks of 0 indices: use blocks of at least 1"
                )));
            }
        }
        Ok(Distribution {
            grid: grid.to_vec(),
            splits: splits.to_vec(),
        })
    }

    /// A tensor of `axes` axes, every axis whole on each of `ranks` ranks (a one-axis grid):
    /// every rank holds a copy.
    pub fn replicated(axes: usize, ranks: usize) -> Self {
        Distribution::new(&[ranks.max(1)], &vec![Split::Whole; axes]).expect("a valid grid")
    }

    /// A tensor of `axes` axes, the first in consecutive blocks over `ranks` ranks, the
    /// others whole.
    pub fn rows(axes: usize, ranks: usize) -> Self {
        let mut splits = vec![Split::Whole; axes];
        if let Some(first) = splits.first_mut() {
            *first = Split::Block(0);
        }
        Distribution::new(&[ranks.max(1)], &splits).expect("a valid grid")
    }

    /// How `tensor!` spreads the tensors a `let` makes, of `axes` axes over `ranks` ranks:
    /// over a grid of p₁ × p₂ ranks as near square as `ranks` allows (p₁ ≤ p₂), the first
    /// axis in blocks over p₁ and the second over p₂ (one axis: blocks over every rank; none:
    /// a copy on each).
    pub fn spread(axes: usize, ranks: usize) -> Self {
        let ranks = ranks.max(1);
        match axes {
            0 => Distribution::replicated(0, ranks),
            1 => Distribution::rows(1, ranks),
            _ => {
                let rows = (1..=ranks)
                    .rev()
                    .find(|r| r * r <= ranks && ranks.is_multiple_of(*r))
                    .unwrap_or(1);
                let mut splits = vec![Split::Whole; axes];
                splits[0] = Split::Block(0);
                splits[1] = Split::Block(1);
                Distribution::new(&[rows, ranks / rows], &splits).expect("a valid grid")
            }
        }
    }

    /// Whether tensor axis `axis` is split over more than one rank (a split over a grid axis
    /// of one rank holds the whole axis, as `Split::Whole` does).
    pub fn splits_axis(&self, axis: usize) -> bool {
        match self.splits[axis] {
            Split::Whole => false,
            Split::Block(g) | Split::Cyclic(g, _) => self.grid[g] > 1,
        }
    }

    /// Whether every rank holds the same elements, in the same order, under both
    /// distributions (grid axes of one rank, and splits over them, make no difference).
    pub fn holds_like(&self, other: &Distribution) -> bool {
        self.normalized() == other.normalized()
    }

    /// The grid without its axes of one rank, and the splits renumbered to it (a split over
    /// an axis of one rank is whole; a block-cyclic split whose blocks are as large as the
    /// tensor's share is not normalised).
    fn normalized(&self) -> (Vec<usize>, Vec<Split>) {
        let kept: Vec<usize> = (0..self.grid.len()).filter(|&g| self.grid[g] > 1).collect();
        let renumber = |g: usize| kept.iter().position(|&k| k == g);
        let splits = self
            .splits
            .iter()
            .map(|split| match *split {
                Split::Whole => Split::Whole,
                Split::Block(g) => renumber(g).map_or(Split::Whole, Split::Block),
                Split::Cyclic(g, b) => renumber(g).map_or(Split::Whole, |h| Split::Cyclic(h, b)),
            })
            .collect();
        (kept.iter().map(|&g| self.grid[g]).collect(), splits)
    }

    /// The process grid.
    pub fn grid(&self) -> &[usize] {
        &self.grid
    }

    /// The split of each tensor axis.
    pub fn splits(&self) -> &[Split] {
        &self.splits
    }

    /// How many ranks the grid has.
    pub fn ranks(&self) -> usize {
        self.grid.iter().product()
    }

    /// `rank`'s coordinates on the grid.
    pub fn coordinates(&self, rank: usize) -> Vec<usize> {
        let mut rest = rank;
        let mut coordinates = vec![0; self.grid.len()];
        for (c, &p) in coordinates.iter_mut().zip(&self.grid).rev() {
            *c = rest % p;
            rest /= p;
        }
        coordinates
    }

    fn rank_at(&self, coordinates: &[usize]) -> usize {
        coordinates
            .iter()
            .zip(&self.grid)
            .fold(0, |rank, (&c, &p)| rank * p + c)
    }

    /// The grid axes no tensor axis is split over: a tensor is replicated along them.
    fn replica_axes(&self) -> Vec<usize> {
        (0..self.grid.len())
            .filter(|&g| {
                !self.splits.iter().any(|split| match *split {
                    Split::Whole => false,
                    Split::Block(h) | Split::Cyclic(h, _) => h == g,
                })
            })
            .collect()
    }

    /// Whether `rank` is the primary holder of its block (coordinate 0 on every replica axis).
    pub fn is_primary(&self, rank: usize) -> bool {
        let coordinates = self.coordinates(rank);
        self.replica_axes().iter().all(|&g| coordinates[g] == 0)
    }

    /// The extents of `rank`'s block of a tensor of `shape`.
    pub fn local_shape(&self, shape: &[usize], rank: usize) -> Vec<usize> {
        let coordinates = self.coordinates(rank);
        shape
            .iter()
            .zip(&self.splits)
            .map(|(&n, split)| match *split {
                Split::Whole => n,
                Split::Block(g) | Split::Cyclic(g, _) => {
                    part_len(*split, n, self.grid[g], coordinates[g])
                }
            })
            .collect()
    }

    /// The global index of the element at `local` in `rank`'s block.
    pub fn global_index(&self, shape: &[usize], rank: usize, local: &[usize]) -> Vec<usize> {
        let coordinates = self.coordinates(rank);
        (0..shape.len())
            .map(|axis| match self.splits[axis] {
                Split::Whole => local[axis],
                split @ (Split::Block(g) | Split::Cyclic(g, _)) => to_global(
                    split,
                    shape[axis],
                    self.grid[g],
                    coordinates[g],
                    local[axis],
                ),
            })
            .collect()
    }

    /// The ranks holding the element at `global` (its primary holder first), each with the
    /// element's flat offset in that rank's block.
    pub fn holders(&self, shape: &[usize], global: &[usize]) -> Vec<(usize, usize)> {
        let mut coordinates = vec![0; self.grid.len()];
        let mut local = vec![0; shape.len()];
        for axis in 0..shape.len() {
            local[axis] = match self.splits[axis] {
                Split::Whole => global[axis],
                split @ (Split::Block(g) | Split::Cyclic(g, _)) => {
                    let (part, index) = locate(split, shape[axis], self.grid[g], global[axis]);
                    coordinates[g] = part;
                    index
                }
            };
        }
        let replicas = self.replica_axes();
        let copies: usize = replicas.iter().map(|&g| self.grid[g]).product();
        (0..copies)
            .map(|copy| {
                let mut rest = copy;
                for &g in replicas.iter().rev() {
                    coordinates[g] = rest % self.grid[g];
                    rest /= self.grid[g];
                }
                let rank = self.rank_at(&coordinates);
                (rank, flat(&self.local_shape(shape, rank), &local))
            })
            .collect()
    }
}

/// Per-axis tables for moving whole blocks without per-element searches (see
/// `DistTensor::redistribute`).
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
impl Distribution {
    /// Row-major strides of the grid: a rank is Σ coordinate × stride.
    fn grid_strides(&self) -> Vec<usize> {
        let mut strides = vec![1; self.grid.len()];
        for g in (0..self.grid.len().saturating_sub(1)).rev() {
            strides[g] = strides[g + 1] * self.grid[g + 1];
        }
        strides
    }

    /// Per axis of `rank`'s block of a tensor of `shape`, the global index of each position.
    pub(crate) fn block_globals(&self, shape: &[usize], rank: usize) -> Vec<Vec<usize>> {
        let coordinates = self.coordinates(rank);
        let local = self.local_shape(shape, rank);
        (0..shape.len())
            .map(|axis| {
                (0..local[axis])
                    .map(|l| match self.splits[axis] {
                        Split::Whole => l,
                        split @ (Split::Block(g) | Split::Cyclic(g, _)) => {
                            to_global(split, shape[axis], self.grid[g], coordinates[g], l)
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// What axis `axis` adds to the rank holding global index `g` on it: the holding part's
    /// grid coordinate times that grid axis's stride (0 for a whole axis). The primary holder
    /// of an element is the sum over its axes; its replicas add [`replica_offsets`].
    ///
    /// [`replica_offsets`]: Self::replica_offsets
    pub(crate) fn rank_shares(
        &self,
        shape: &[usize],
        axis: usize,
        globals: &[usize],
    ) -> Vec<usize> {
        let strides = self.grid_strides();
        globals
            .iter()
            .map(|&g| match self.splits[axis] {
                Split::Whole => 0,
                split @ (Split::Block(h) | Split::Cyclic(h, _)) => {
                    locate(split, shape[axis], self.grid[h], g).0 * strides[h]
                }
            })
            .collect()
    }

    /// The rank offsets of an element's holders from its primary holder (0 first).
    pub(crate) fn replica_offsets(&self) -> Vec<usize> {
        let strides = self.grid_strides();
        let mut offsets = vec![0];
        for g in self.replica_axes() {
            offsets = offsets
                .iter()
                .flat_map(|&o| {
                    let stride = strides[g];
                    (0..self.grid[g]).map(move |c| o + c * stride)
                })
                .collect();
        }
        offsets
    }
}

/// The row-major offset of `index` in a block of `shape`.
pub(crate) fn flat(shape: &[usize], index: &[usize]) -> usize {
    shape
        .iter()
        .zip(index)
        .fold(0, |offset, (&n, &i)| offset * n + i)
}

/// Calls `f` with every index of `shape`, in row-major order.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn for_each_index(shape: &[usize], mut f: impl FnMut(&[usize])) {
    if shape.contains(&0) {
        return;
    }
    let mut index = vec![0; shape.len()];
    loop {
        f(&index);
        let mut axis = shape.len();
        loop {
            if axis == 0 {
                return;
            }
            axis -= 1;
            index[axis] += 1;
            if index[axis] < shape[axis] {
                break;
            }
            index[axis] = 0;
        }
    }
}

/// The block size of a [`Split::Block`] axis of `n` over `p` parts (at least 1).
pub(crate) fn chunk(n: usize, p: usize) -> usize {
    n.div_ceil(p).max(1)
}

/// The global indices part `q` of `p` holds of a [`Split::Block`] axis of `n`.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) fn block_range(n: usize, p: usize, q: usize) -> std::ops::Range<usize> {
    let c = chunk(n, p);
    let start = (q * c).min(n);
    start..(start + c).min(n)
}

/// How many of `n` indices part `q` of `p` holds.
fn part_len(split: Split, n: usize, p: usize, q: usize) -> usize {
    match split {
        Split::Whole => n,
        Split::Block(_) => {
            let c = chunk(n, p);
            n.saturating_sub(q * c).min(c)
        }
        Split::Cyclic(_, b) => {
            let round = b * p;
            (n / round) * b + (n % round).saturating_sub(q * b).min(b)
        }
    }
}

/// The part holding global index `g` of an axis of `n` over `p` parts, and `g`'s index there.
fn locate(split: Split, n: usize, p: usize, g: usize) -> (usize, usize) {
    match split {
        Split::Whole => (0, g),
        Split::Block(_) => {
            let c = chunk(n, p);
            (g / c, g % c)
        }
        Split::Cyclic(_, b) => ((g / b) % p, (g / (b * p)) * b + g % b),
    }
}

/// The global index of local index `l` of part `q`.
fn to_global(split: Split, n: usize, p: usize, q: usize, l: usize) -> usize {
    match split {
        Split::Whole => l,
        Split::Block(_) => q * chunk(n, p) + l,
        Split::Cyclic(_, b) => ((l / b) * p + q) * b + l % b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every split of every extent up to 13 over 1–4 parts: the parts' lengths add up, and
    /// locating a global index and mapping it back is the identity, increasing in each part.
    #[test]
    fn parts_cover_each_axis_once_in_order() {
        for p in 1..=4 {
            for n in 0..=13 {
                for split in [
                    Split::Block(0),
                    Split::Cyclic(0, 1),
                    Split::Cyclic(0, 2),
                    Split::Cyclic(0, 5),
                ] {
                    let total: usize = (0..p).map(|q| part_len(split, n, p, q)).sum();
                    assert_eq!(total, n, "{split:?} n {n} p {p}");
                    let mut seen = vec![Vec::new(); p];
                    for g in 0..n {
                        let (q, l) = locate(split, n, p, g);
                        assert!(l < part_len(split, n, p, q), "{split:?} n {n} p {p} g {g}");
                        assert_eq!(to_global(split, n, p, q, l), g);
                        seen[q].push(l);
                    }
                    for (q, locals) in seen.iter().enumerate() {
                        assert_eq!(*locals, (0..part_len(split, n, p, q)).collect::<Vec<_>>());
                    }
                }
            }
        }
    }

    #[test]
    fn every_element_has_one_primary_holder_and_replicas() {
        // A 2 × 3 grid; axis 0 of the tensor over grid axis 1, axis 1 whole: replicated over
        // grid axis 0.
        let d = Distribution::new(&[2, 3], &[Split::Cyclic(1, 2), Split::Whole]).unwrap();
        let shape = [7, 4];
        let every: Vec<Vec<usize>> = shape.iter().map(|&n| (0..n).collect()).collect();
        let shares: Vec<Vec<usize>> = (0..2)
            .map(|a| d.rank_shares(&shape, a, &every[a]))
            .collect();
        for_each_index(&shape, |global| {
            let holders = d.holders(&shape, global);
            // The per-axis tables name the same ranks, primary first.
            let primary = shares[0][global[0]] + shares[1][global[1]];
            let tables: Vec<usize> = d.replica_offsets().iter().map(|r| primary + r).collect();
            assert_eq!(tables, holders.iter().map(|h| h.0).collect::<Vec<_>>());
            assert_eq!(holders.len(), 2);
            assert!(d.is_primary(holders[0].0));
            assert!(!d.is_primary(holders[1].0));
            for &(rank, offset) in &holders {
                let local_shape = d.local_shape(&shape, rank);
                let mut found = None;
                for_each_index(&local_shape, |local| {
                    if flat(&local_shape, local) == offset {
                        found = Some(d.global_index(&shape, rank, local));
                        let globals = d.block_globals(&shape, rank);
                        assert_eq!([globals[0][local[0]], globals[1][local[1]]], global);
                    }
                });
                assert_eq!(found.as_deref(), Some(global));
            }
        });
    }

    #[test]
    fn invalid_distributions_are_errors() {
        assert!(Distribution::new(&[2], &[Split::Block(1)]).is_err());
        assert!(Distribution::new(&[2, 2], &[Split::Block(0), Split::Block(0)]).is_err());
        assert!(Distribution::new(&[2], &[Split::Cyclic(0, 0)]).is_err());
        assert!(Distribution::new(&[0], &[]).is_err());
        assert_eq!(Distribution::rows(2, 3).local_shape(&[7, 2], 2), [1, 2]);
        assert_eq!(Distribution::replicated(1, 3).holders(&[4], &[1]).len(), 3);
    }
}

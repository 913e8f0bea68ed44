//! Distributed tensors: a global shape, a [`Distribution`] over a [`World`]'s ranks, and this
//! rank's block as a `Tensor`. Made, gathered, scattered and redistributed by collective calls
//! that every rank makes in the same order. Invariant: each rank's block has the shape its
//! distribution gives it and holds, in global row-major order, exactly the elements the
//! distribution assigns it (replicas equal to their primary copy).

use std::fmt;

use crate::element::Element;
use crate::tensor::Tensor;

use super::layout::{flat, for_each_index, Distribution, DistributionError};
use super::world::World;

/// Why a distributed tensor could not be made or moved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DistError {
    /// The distribution itself is invalid.
    Distribution(DistributionError),
    /// The distribution's grid has another number of ranks than the world, or another
    /// number of axes than the tensor.
    Mismatch(String),
}

impl fmt::Display for DistError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistError::Distribution(error) => write!(f, "{error}"),
            DistError::Mismatch(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for DistError {}

impl From<DistributionError> for DistError {
    fn from(error: DistributionError) -> Self {
        DistError::Distribution(error)
    }
}

/// Not collective: this rank's part only (gather the tensor to see it whole).
impl<T: Element + fmt::Display> fmt::Display for DistTensor<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "DistTensor {:?} over grid {:?} split {:?}; rank {} of {} holds {:?}:",
            self.shape,
            self.distribution.grid(),
            self.distribution.splits(),
            self.world.rank(),
            self.world.size(),
            self.local.shape()
        )?;
        write!(f, "{}", self.local)
    }
}

/// A tensor spread over the ranks of a [`World`]: every rank holds the block its
/// [`Distribution`] gives it.
pub struct DistTensor<T: Element> {
    world: World,
    shape: Vec<usize>,
    /// Row-major strides of the global shape (what `tensor!`'s accesses describe).
    strides: Vec<isize>,
    distribution: Distribution,
    local: Tensor<T>,
}

fn check(world: &World, shape: &[usize], distribution: &Distribution) -> Result<(), DistError> {
    if distribution.ranks() != world.size() {
        return Err(DistError::Mismatch(format!(
            "the process grid {:?} has {} ranks, but the world has {}",
            distribution.grid(),
            distribution.ranks(),
            world.size()
        )));
    }
    if distribution.splits().len() != shape.len() {
        return Err(DistError::Mismatch(format!(
            "the distribution splits {} axes, but the tensor's shape {shape:?} has {}",
            distribution.splits().len(),
            shape.len()
        )));
    }
    Ok(())
}

impl<T: Element> DistTensor<T> {
    fn new(world: &World, shape: &[usize], distribution: Distribution, local: Tensor<T>) -> Self {
        let mut strides = vec![0isize; shape.len()];
        let mut stride = 1isize;
        for (s, &n) in strides.iter_mut().zip(shape).rev() {
            *s = stride;
            stride = stride.saturating_mul(n.max(1) as isize);
        }
        DistTensor {
            world: world.clone(),
            shape: shape.to_vec(),
            strides,
            distribution,
            local,
        }
    }

    /// `tensor`, which every rank holds alike, as a distributed tensor with a copy on every
    /// rank (so it can join a statement over distributed tensors). No message is sent: each
    /// rank copies its own, and a rank whose tensor differs makes results that differ.
    pub fn replicated(world: &World, tensor: &Tensor<T>) -> Self {
        let distribution = Distribution::replicated(tensor.ndim(), world.size());
        DistTensor::new(world, tensor.shape(), distribution, tensor.clone())
    }

    /// A tensor of `shape` whose element at each global index is `f(index)`; each rank calls
    /// `f` for its own block only (collective only in that every rank must make it).
    pub fn from_fn(
        world: &World,
        shape: &[usize],
        distribution: Distribution,
        mut f: impl FnMut(&[usize]) -> T,
    ) -> Result<Self, DistError> {
        check(world, shape, &distribution)?;
        let rank = world.rank();
        let local_shape = distribution.local_shape(shape, rank);
        let local = Tensor::from_fn(local_shape.as_slice(), |local| {
            f(&distribution.global_index(shape, rank, local))
        });
        Ok(DistTensor::new(world, shape, distribution, local))
    }

    /// A zero-filled tensor of `shape`.
    pub fn zeros(
        world: &World,
        shape: &[usize],
        distribution: Distribution,
    ) -> Result<Self, DistError> {
        Self::from_fn(world, shape, distribution, |_| T::ZERO)
    }

    /// The tensor `root` holds (`Some` there, ignored elsewhere), spread by `distribution`:
    /// collective, one message per rank that receives elements. Every rank names the same
    /// `shape`; a root tensor of another shape is an error on every rank, before any element
    /// moves.
    pub fn from_root(
        world: &World,
        root: usize,
        tensor: Option<&Tensor<T>>,
        shape: &[usize],
        distribution: Distribution,
    ) -> Result<Self, DistError> {
        check(world, shape, &distribution)?;
        let fits = tensor.is_some_and(|t| t.shape() == shape);
        if world.broadcast(root, u64::from(fits)) == 0 {
            return Err(DistError::Mismatch(format!(
                "the root's tensor does not have the shape {shape:?} every rank names"
            )));
        }
        let rank = world.rank();
        let parts: Option<Vec<Vec<T>>> = (rank == root).then(|| {
            let whole = tensor.expect("checked above").as_slice();
            (0..world.size())
                .map(|to| {
                    let mut part = Vec::new();
                    for_each_index(&distribution.local_shape(shape, to), |local| {
                        part.push(whole[flat(shape, &distribution.global_index(shape, to, local))]);
                    });
                    part
                })
                .collect()
        });
        let local_shape = distribution.local_shape(shape, rank);
        let count = local_shape.iter().product();
        let values = world.scatter(root, parts.as_deref(), count);
        let local =
            Tensor::from_shape_vec(local_shape.as_slice(), values).expect("one value per element");
        Ok(DistTensor::new(world, shape, distribution, local))
    }

    /// The whole tensor on `root` (`None` elsewhere): collective; each element is sent once,
    /// by its primary holder.
    pub fn gather_to_root(&self, root: usize) -> Option<Tensor<T>> {
        let ranks = self.world.size();
        let primary = |rank: usize| self.distribution.is_primary(rank);
        let counts: Vec<usize> = (0..ranks)
            .map(|rank| match primary(rank) {
                true => self
                    .distribution
                    .local_shape(&self.shape, rank)
                    .iter()
                    .product(),
                false => 0,
            })
            .collect();
        let send: &[T] = match primary(self.world.rank()) {
            true => self.local.as_slice(),
            false => &[],
        };
        let received = self.world.gather(root, send, &counts)?;
        let mut whole = Tensor::zeros(self.shape.as_slice());
        let mut values = received.into_iter();
        for rank in (0..ranks).filter(|&rank| primary(rank)) {
            for_each_index(&self.distribution.local_shape(&self.shape, rank), |local| {
                let global = self.distribution.global_index(&self.shape, rank, local);
                whole.as_mut_slice()[flat(&self.shape, &global)] = values.next().expect("counted");
            });
        }
        Some(whole)
    }

    /// The same tensor spread by `to`: collective, one all-to-all in which each rank sends
    /// every element another rank's new block needs, from the element's primary holder.
    /// Both sides walk their blocks once, in global row-major order, a row at a time, with
    /// per-axis tables of which rank holds each index: runs of a row bound for one rank move
    /// as slices.
    pub fn redistribute(&self, to: Distribution) -> Result<DistTensor<T>, DistError> {
        check(&self.world, &self.shape, &to)?;
        let (rank, ranks) = (self.world.rank(), self.world.size());
        let shape = &self.shape;
        let from = &self.distribution;
        // Sent: this rank's block, in order, to every holder under `to`, if this rank is the
        // element's primary holder under `from`.
        // Written straight into one buffer in rank order: counted first, by runs.
        let mut counts = vec![0; ranks];
        let mut send = Vec::new();
        if from.is_primary(rank) {
            let globals = from.block_globals(shape, rank);
            let shares: Vec<Vec<usize>> = (0..shape.len())
                .map(|axis| to.rank_shares(shape, axis, &globals[axis]))
                .collect();
            let replicas = to.replica_offsets();
            let block_shape = from.local_shape(shape, rank);
            let rows = Rows::new(&block_shape, &shares);
            rows.for_each(|_, base, runs| {
                for &(_, len, share) in runs {
                    for &replica in &replicas {
                        counts[base + share + replica] += len;
                    }
                }
            });
            let mut next: Vec<usize> = starts(&counts);
            send = self.world.buffer(counts.iter().sum());
            let local = self.local.as_slice();
            rows.for_each(|at, base, runs| {
                for &(start, len, share) in runs {
                    let values = &local[at + start..at + start + len];
                    for &replica in &replicas {
                        let to = &mut next[base + share + replica];
                        send[*to..*to + len].copy_from_slice(values);
                        *to += len;
                    }
                }
            });
        }
        // Received: this rank's new block, in order, from each element's primary holder;
        // the two orders agree, both being global row-major order.
        let new_shape = to.local_shape(shape, rank);
        let globals = to.block_globals(shape, rank);
        let shares: Vec<Vec<usize>> = (0..shape.len())
            .map(|axis| from.rank_shares(shape, axis, &globals[axis]))
            .collect();
        let rows = Rows::new(&new_shape, &shares);
        let mut receive = vec![0; ranks];
        rows.for_each(|_, base, runs| {
            for &(_, len, share) in runs {
                receive[base + share] += len;
            }
        });
        let received = self.world.all_to_all_flat(&send, &counts, &receive);
        self.world.recycle(send);
        let mut next = starts(&receive);
        let mut values = self.world.buffer(new_shape.iter().product());
        rows.for_each(|at, base, runs| {
            for &(start, len, share) in runs {
                let source = base + share;
                values[at + start..at + start + len]
                    .copy_from_slice(&received[next[source]..next[source] + len]);
                next[source] += len;
            }
        });
        self.world.recycle(received);
        let local =
            Tensor::from_shape_vec(new_shape.as_slice(), values).expect("one value per element");
        Ok(DistTensor::new(&self.world, shape, to, local))
    }

    /// Gives this tensor's memory to its world for later moves (a temporary of a statement,
    /// done with).
    pub(crate) fn recycle(self) {
        self.world.recycle(self.local.into_storage());
    }

    /// The global shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// How many elements the whole tensor has (over every rank).
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether the whole tensor has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How the tensor is spread.
    pub fn distribution(&self) -> &Distribution {
        &self.distribution
    }

    /// The world the tensor lives in.
    pub fn world(&self) -> &World {
        &self.world
    }

    /// This rank's block.
    pub fn local(&self) -> &Tensor<T> {
        &self.local
    }

    /// This rank's block, for the distributed backend to write.
    pub(crate) fn local_mut(&mut self) -> &mut Tensor<T> {
        &mut self.local
    }

    /// The row-major strides of the global shape.
    pub(crate) fn global_strides(&self) -> &[isize] {
        &self.strides
    }

    /// A copy of this rank's block, and per axis the global index of each of its positions
    /// (consecutive for a block split, in runs for a block-cyclic one, all for a whole axis).
    pub fn to_local(&self) -> (Tensor<T>, Vec<Vec<usize>>) {
        (self.local.clone(), self.local_indices())
    }

    /// Per axis, the global index of each position of this rank's block.
    pub fn local_indices(&self) -> Vec<Vec<usize>> {
        let shape = self.local.shape();
        (0..shape.len())
            .map(|axis| {
                (0..shape[axis])
                    .map(|position| {
                        let mut local = vec![0; shape.len()];
                        local[axis] = position;
                        self.global_index(&local)[axis]
                    })
                    .collect()
            })
            .collect()
    }

    /// The global index of the element at `local` in this rank's block.
    pub fn global_index(&self, local: &[usize]) -> Vec<usize> {
        self.distribution
            .global_index(&self.shape, self.world.rank(), local)
    }
}

/// Where each rank's part starts in a buffer of parts of `counts` elements, in rank order.
fn starts(counts: &[usize]) -> Vec<usize> {
    counts
        .iter()
        .scan(0, |at, &n| {
            let start = *at;
            *at += n;
            Some(start)
        })
        .collect()
}

/// A block walked a row (its last axis) at a time, for moves: per row, its flat start, the
/// rank share of its leading indices, and the runs of its last axis with one share each.
struct Rows<'s> {
    shape: &'s [usize],
    shares: &'s [Vec<usize>],
    /// `(start, length, share)` along the last axis.
    runs: Vec<(usize, usize, usize)>,
}

impl<'s> Rows<'s> {
    fn new(shape: &'s [usize], shares: &'s [Vec<usize>]) -> Self {
        let mut runs: Vec<(usize, usize, usize)> = Vec::new();
        if let Some(last) = shares.last() {
            for (position, &share) in last.iter().enumerate() {
                match runs.last_mut() {
                    Some((_, len, s)) if *s == share => *len += 1,
                    _ => runs.push((position, 1, share)),
                }
            }
        } else {
            // A tensor of no axes: one element, one run.
            runs.push((0, 1, 0));
        }
        Rows {
            shape,
            shares,
            runs,
        }
    }

    /// Calls `f(flat start, share of the leading indices, runs)` for every row, in order.
    fn for_each(&self, mut f: impl FnMut(usize, usize, &[(usize, usize, usize)])) {
        let Some((&row_len, leading)) = self.shape.split_last() else {
            return f(0, 0, &self.runs);
        };
        if row_len == 0 {
            return;
        }
        let mut at = 0;
        for_each_index(leading, |index| {
            let base: usize = index.iter().zip(self.shares).map(|(&i, s)| s[i]).sum();
            f(at, base, &self.runs);
            at += row_len;
        });
    }
}

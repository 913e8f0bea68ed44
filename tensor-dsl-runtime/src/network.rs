//! Products of three or more tensors → a sequence of pairwise contractions through
//! temporaries, in an order chosen from the real extents: dynamic programming over subsets for
//! up to 8 factors (the cheapest order by multiply-adds), greedy beyond. The order is cached
//! per call site and extents, so repeated calls do no search. Each pairwise contraction is a
//! GEMM or a loop nest (`contract`).

use std::sync::Mutex;

use crate::access::Memory;
use crate::element::Element;
use crate::gemm::contract;
use crate::kernel::evaluate;
use crate::step::{Bound, BoundTarget, Mode, Step};

/// Pairwise contractions in execution order: intermediates `0..n` are the factors, each
/// contraction adds the next.
type Order = Vec<(usize, usize)>;

/// Orders chosen so far at one call site, by extents.
pub struct PlanCache {
    plans: Mutex<Vec<(Vec<usize>, Order)>>,
}

impl PlanCache {
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        PlanCache {
            plans: Mutex::new(Vec::new()),
        }
    }

    fn order(&self, extents: &[usize], factors: &[u64], out: u64) -> Vec<(usize, usize)> {
        // A poisoned lock only means another thread panicked mid-insert; the list is intact.
        let mut plans = self
            .plans
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some((_, order)) = plans.iter().find(|(key, _)| key == extents) {
            return order.clone();
        }
        let order = plan(extents, factors, out);
        // A call site sees few distinct shapes; keep the most recent ones.
        if plans.len() == 16 {
            plans.remove(0);
        }
        plans.push((extents.to_vec(), order.clone()));
        order
    }
}

/// `target (=|+=|← β·target +) α · Σ Π operands`: same contract as [`evaluate`] with the body
/// "product of all operands", run as pairwise contractions through temporaries in the order
/// cached for these extents. Which loops each factor uses is read off its access.
pub fn contract_network<T: Element, const L: usize, const N: usize>(
    step: Step<'_, T, L, N>,
    cache: &PlanCache,
) {
    step.assert_on_host();
    if !pairwise(&step) {
        return evaluate(step, product);
    }
    let pairing = Pairing::new(&step, cache);
    // Allocated before any contraction runs, and alive until the last.
    let mut buffers = pairing.host_temporaries::<T>();
    for pair in pairing.steps(&step, &starts(&mut buffers), Memory::Host) {
        contract(pair);
    }
}

/// Each buffer's start and length, as [`Pairing::steps`] takes them.
pub(crate) fn starts<T>(buffers: &mut [Vec<T>]) -> Vec<(*mut T, usize)> {
    buffers
        .iter_mut()
        .map(|buffer| (buffer.as_mut_ptr(), buffer.len()))
        .collect()
}

/// The product of a point's operand values.
pub(crate) fn product<T: Element, const N: usize>(values: [T; N]) -> T {
    values
        .into_iter()
        .fold(T::from_f64(1.0), |product, value| product * value)
}

/// Whether a product step runs as pairwise contractions: three or more factors, something to
/// compute, a target whose points are distinct, no factor read in place.
pub(crate) fn pairwise<T, const L: usize, const N: usize>(step: &Step<'_, T, L, N>) -> bool {
    N >= 3
        && step.injective
        && step.operands.iter().all(|operand| !operand.in_place)
        && !step.extents.contains(&0)
}

/// A product step as pairwise contractions: their order, the loops each intermediate keeps,
/// and the temporaries those need.
pub(crate) struct Pairing<const L: usize> {
    order: Order,
    /// The loops each intermediate uses: the factors', then one per contraction.
    vars: Vec<u64>,
    /// Per temporary (every contraction but the last): its elements, and each loop's stride
    /// in it (row-major over the loops it keeps, in loop order).
    pub(crate) temporaries: Vec<(usize, [isize; L])>,
}

impl<const L: usize> Pairing<L> {
    /// The pairing in the order `cache` holds (or finds) for these extents.
    ///
    /// # Panics
    /// If a temporary's element count overflows `usize` (no such buffer could exist).
    pub(crate) fn new<T, const N: usize>(step: &Step<'_, T, L, N>, cache: &PlanCache) -> Self {
        let extents = step.extents;
        let out = step.target.uses;
        let factors = step.operands.map(|o| o.uses);
        let order = cache.order(&extents, &factors, out);
        let vars = intermediates(&factors, out, &order);
        let temporaries = vars[N..vars.len() - 1]
            .iter()
            .map(|&kept| temporary(&extents, kept))
            .collect();
        Pairing {
            order,
            vars,
            temporaries,
        }
    }

    /// Zeroed host buffers for [`Pairing::temporaries`].
    pub(crate) fn host_temporaries<T: Element>(&self) -> Vec<Vec<T>> {
        self.temporaries
            .iter()
            .map(|&(len, _)| vec![T::ZERO; len])
            .collect()
    }

    /// The pairwise steps, in execution order, over zeroed temporaries at `buffers` (start and
    /// length of each of [`Pairing::temporaries`], in `memory`); the last writes `step`'s
    /// target. Each step is proven afresh. The caller runs these or `step`, never both, and
    /// keeps the buffers alive while they run.
    pub(crate) fn steps<'s, T: Element, const N: usize>(
        &self,
        step: &Step<'s, T, L, N>,
        buffers: &[(*mut T, usize)],
        memory: Memory,
    ) -> Vec<Step<'s, T, L, 2>> {
        assert_eq!(
            buffers.len(),
            self.temporaries.len(),
            "tensor-dsl bug: one buffer per temporary"
        );
        let part = |p: usize| match p.checked_sub(N) {
            None => step.operands[p],
            Some(t) => Bound::raw(
                buffers[t].0.cast_const(),
                buffers[t].1,
                self.temporaries[t].1,
                self.vars[p],
            ),
        };
        self.order
            .iter()
            .enumerate()
            .map(|(k, &(x, y))| {
                let (output, mode, alpha, written) = match buffers.get(k) {
                    Some(&(start, len)) => (
                        BoundTarget::raw(start, len, self.temporaries[k].1, self.vars[N + k]),
                        Mode::Assign,
                        T::from_f64(1.0),
                        memory,
                    ),
                    None => (step.target.alias(), step.mode, step.alpha, step.memory[0]),
                };
                let pair = pair(part(x), part(y), output, mode, alpha, &step.extents);
                Step {
                    memory: [written, memory],
                    ..pair
                }
            })
            .collect()
    }
}

/// The loops each intermediate uses: the factors', then, per contraction of `order`, those
/// its operands use that a later contraction or the output needs (the last: the output's).
///
/// # Panics
/// If `order` uses an intermediate twice or before it exists.
fn intermediates(factors: &[u64], out: u64, order: &[(usize, usize)]) -> Vec<u64> {
    let mut vars = factors.to_vec();
    let mut alive = vec![true; factors.len()];
    for (k, &(x, y)) in order.iter().enumerate() {
        assert!(
            x != y && x < vars.len() && y < vars.len() && alive[x] && alive[y],
            "tensor-dsl bug: a contraction order must use each intermediate once"
        );
        alive[x] = false;
        alive[y] = false;
        let needed_later = (0..vars.len())
            .filter(|&p| alive[p])
            .fold(out, |mask, p| mask | vars[p]);
        let kept = if k + 1 == order.len() {
            out
        } else {
            (vars[x] | vars[y]) & needed_later
        };
        vars.push(kept);
        alive.push(true);
    }
    vars
}

/// One pairwise contraction of a product as the run-time planner orders it: which
/// intermediates it contracts (the factors are `0..n`, then one per contraction) and which
/// loops its result keeps (bit `v`: loop `v`).
#[doc(hidden)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedPair {
    pub left: usize,
    pub right: usize,
    pub kept: u64,
}

/// The pairwise contractions `contract_network` runs for a product whose factors use the
/// loops in `factors` (bit masks) and whose result keeps `out`, at these loop extents: what
/// `tensor-dsl explain` reports, from the planner itself.
///
/// # Panics
/// If there are fewer than two factors or more than 64 loops.
#[doc(hidden)]
pub fn planned_pairs(extents: &[usize], factors: &[u64], out: u64) -> Vec<PlannedPair> {
    assert!(
        factors.len() >= 2 && extents.len() <= 64,
        "a product of two or more factors over at most 64 loops"
    );
    let order = plan(extents, factors, out);
    let vars = intermediates(factors, out, &order);
    order
        .iter()
        .enumerate()
        .map(|(k, &(left, right))| PlannedPair {
            left,
            right,
            kept: vars[factors.len() + k],
        })
        .collect()
}

/// The elements of a row-major temporary over the loops in `kept` (in loop order), and each
/// loop's stride in it.
///
/// # Panics
/// If the element count overflows `usize` (no such temporary could be allocated anyway).
fn temporary<const L: usize>(extents: &[usize; L], kept: u64) -> (usize, [isize; L]) {
    let mut strides = [0isize; L];
    let mut count = 1usize;
    for var in (0..L).rev().filter(|&v| kept >> v & 1 == 1) {
        strides[var] = isize::try_from(count).expect("temporary too large");
        count = count
            .checked_mul(extents[var])
            .expect("the temporary of a contraction has more elements than fit in usize");
    }
    (count, strides)
}

/// The step contracting two parts into `output`, summing the loops they use that it does
/// not: loops are renumbered so the output's come first, and loops neither part uses get
/// extent 1. The step is proven afresh, so nothing here is trusted.
fn pair<'a, T: Element, const L: usize>(
    left: Bound<'a, T, L>,
    right: Bound<'a, T, L>,
    output: BoundTarget<'a, T, L>,
    mode: Mode<T>,
    alpha: T,
    extents: &[usize; L],
) -> Step<'a, T, L, 2> {
    let kept = output.uses;
    let involved = left.uses | right.uses | kept;
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
    let n_out = kept.count_ones() as usize;
    Step::assemble(
        output.reordered(&order),
        mode,
        alpha,
        new_extents,
        n_out,
        [left.reordered(&order), right.reordered(&order)],
    )
}

/// The order of pairwise contractions (indices of intermediates: inputs `0..n`, then one per
/// contraction in order) with the fewest multiply-adds.
fn plan(extents: &[usize], factors: &[u64], out: u64) -> Vec<(usize, usize)> {
    let size = |mask: u64| -> f64 {
        (0..extents.len())
            .filter(|&v| mask >> v & 1 == 1)
            .map(|v| extents[v] as f64)
            .product()
    };
    if factors.len() <= 8 {
        optimal(factors, out, &size)
    } else {
        greedy(factors, out, &size)
    }
}

/// Dynamic programming over subsets of factors: the cheapest way to contract each subset.
fn optimal(factors: &[u64], out: u64, size: &dyn Fn(u64) -> f64) -> Vec<(usize, usize)> {
    let n = factors.len();
    let full = (1usize << n) - 1;
    let vars_of = |set: usize| -> u64 {
        (0..n)
            .filter(|&f| set >> f & 1 == 1)
            .fold(0, |mask, f| mask | factors[f])
    };
    // The variables a subset's result keeps: used outside it, or in the output.
    let kept = |set: usize| vars_of(set) & (vars_of(full & !set) | out);
    let mut cost = vec![f64::INFINITY; full + 1];
    let mut split = vec![0usize; full + 1];
    for f in 0..n {
        cost[1 << f] = 0.0;
    }
    for set in 1..=full {
        if set.count_ones() < 2 {
            continue;
        }
        // Each unordered split once: the part holding the lowest factor is `a`.
        let lowest = set & set.wrapping_neg();
        let mut a = (set - 1) & set;
        while a > 0 {
            if a & lowest != 0 {
                let b = set & !a;
                let total = cost[a] + cost[b] + size(kept(a) | kept(b));
                if total < cost[set] {
                    cost[set] = total;
                    split[set] = a;
                }
            }
            a = (a - 1) & set;
        }
    }
    let mut order = Vec::new();
    emit(full, &split, n, &mut order);
    order
}

/// Writes the contractions producing `set` in execution order; returns its intermediate index.
fn emit(set: usize, split: &[usize], n: usize, order: &mut Vec<(usize, usize)>) -> usize {
    if set.count_ones() == 1 {
        return set.trailing_zeros() as usize;
    }
    let a = emit(split[set], split, n, order);
    let b = emit(set & !split[set], split, n, order);
    order.push((a, b));
    n + order.len() - 1
}

/// Repeatedly contracts the pair whose contraction is cheapest.
fn greedy(factors: &[u64], out: u64, size: &dyn Fn(u64) -> f64) -> Vec<(usize, usize)> {
    let mut parts: Vec<(usize, u64)> = factors.iter().copied().enumerate().collect();
    let mut next = factors.len();
    let mut order = Vec::new();
    while parts.len() > 1 {
        let mut best = (f64::INFINITY, 0, 1);
        for i in 0..parts.len() {
            for j in i + 1..parts.len() {
                let cost = size(parts[i].1 | parts[j].1);
                if cost < best.0 {
                    best = (cost, i, j);
                }
            }
        }
        let (_, i, j) = best;
        let others = (0..parts.len())
            .filter(|&p| p != i && p != j)
            .fold(out, |mask, p| mask | parts[p].1);
        let kept = (parts[i].1 | parts[j].1) & others;
        order.push((parts[i].0, parts[j].0));
        parts.remove(j);
        parts.remove(i);
        parts.push((next, kept));
        next += 1;
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chain_is_contracted_in_the_cheap_order() {
        // x[i, j] = a[i, k] b[k, l] c[l, j], i = 1000, k = 10, l = 1000, j = 10: (a b) first
        // costs 1000·10·1000 + 1000·1000·10; (b c) first costs 10·1000·10 + 1000·10·10.
        let extents = [1000, 10, 10, 1000];
        let (a, b, c) = (0b0101, 0b1100, 0b1010);
        let order = plan(&extents, &[a, b, c], 0b0011);
        assert_eq!(order, [(1, 2), (0, 3)]);
        let greedy_order = greedy(&[a, b, c], 0b0011, &|mask: u64| {
            (0..4)
                .filter(|v| mask >> v & 1 == 1)
                .map(|v| extents[v] as f64)
                .product()
        });
        assert_eq!(greedy_order, [(1, 2), (0, 3)]);
    }
}

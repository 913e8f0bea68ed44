//! Products of three or more tensors → a sequence of pairwise contractions through
//! temporaries, in an order chosen from the real extents: dynamic programming over subsets for
//! up to 8 factors (the cheapest order by multiply-adds), greedy beyond. The order is cached
//! per call site and extents, so repeated calls do no search. Each pairwise contraction is a
//! GEMM or a loop nest (`contract`).

use std::sync::Mutex;

use crate::element::Element;
use crate::operand::access::Memory;

use super::gemm::{contract, gemm_cost, network_time, row_major};
use super::loop_nest::{evaluate, AnyNest};
use super::scratch::Scratch;
use super::sort_loops;
use super::step::{Bound, BoundTarget, Step};

/// Each temporary's element count and loop strides.
type Temporaries<const L: usize> = Vec<(usize, [isize; L])>;

/// A network's cost as GEMM calls: matrices without a unit stride, then calls (`gemm_cost`).
type Cost = (usize, usize);

/// Where a network runs, for [`layouts`]: on the host, with elements of this many bytes, or on
/// a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Machine {
    Host(usize),
    Device,
}

/// Pairwise contractions in execution order: intermediates `0..n` are the factors, each
/// contraction adds the next.
type Order = Vec<(usize, usize)>;

/// Plans chosen so far at one call site, by extents, strides, element size and host or device:
/// the contraction order and each temporary's layout.
pub struct PlanCache {
    plans: Mutex<Vec<(Vec<isize>, Planned)>>,
}

/// A network's order and its temporaries' element counts and loop strides.
#[derive(Clone)]
struct Planned {
    order: Order,
    temporaries: Vec<(usize, Vec<isize>)>,
}

impl PlanCache {
    /// An empty cache (one per call site, in a `static`).
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        PlanCache {
            plans: Mutex::new(Vec::new()),
        }
    }

    fn planned(&self, key: Vec<isize>, choose: impl FnOnce() -> Planned) -> Planned {
        // A poisoned lock only means another thread panicked mid-insert; the list is intact.
        let mut plans = self
            .plans
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        if let Some((_, planned)) = plans.iter().find(|(known, _)| *known == key) {
            return planned.clone();
        }
        let planned = choose();
        // A call site sees few distinct shapes; keep the most recent ones.
        if plans.len() == 16 {
            plans.remove(0);
        }
        plans.push((key, planned.clone()));
        planned
    }
}

/// `target (=|+=|← β·target +) α · Σ Π operands`: same contract as [`evaluate`] with the body
/// "product of all operands", the operands `conj` names conjugated, run as pairwise
/// contractions through temporaries in the order cached for these extents (a conjugation a
/// flag of the GEMM that reads the factor, never a conjugated copy). Which loops each factor
/// uses is read off its access.
#[inline]
pub fn contract_network<T: Element, const L: usize, const N: usize>(
    step: Step<'_, T, L, N>,
    conj: [bool; N],
    cache: &PlanCache,
) {
    in_few_loops!(L, step, M => network_loops::<T, M, N>(step, conj, cache))
}

/// [`contract_network`] over a step of a few loop counts (`in_few_loops`).
pub(super) fn network_loops<T: Element, const L: usize, const N: usize>(
    step: Step<'_, T, L, N>,
    conj: [bool; N],
    cache: &PlanCache,
) {
    step.assert_on_host();
    if !pairwise(&step) {
        return if conj.contains(&true) {
            evaluate(
                step,
                move |values: [T; N]| {
                    product::<T, N>(std::array::from_fn(|k| {
                        if conj[k] {
                            values[k].conj()
                        } else {
                            values[k]
                        }
                    }))
                },
                AnyNest,
            )
        } else {
            evaluate(step, product, AnyNest)
        };
    }
    let pairing = Pairing::new(&step, cache);
    // Allocated before any contraction runs, and alive until the last.
    let mut buffers = pairing.host_temporaries::<T>();
    let steps = pairing.steps(&step, &buffers.starts(), Memory::Host);
    for (pair, conj) in steps.into_iter().zip(pairing.conj(conj)) {
        contract(pair, conj);
    }
}

/// The product of a point's operand values.
pub(crate) fn product<T: Element, const N: usize>(values: [T; N]) -> T {
    values
        .into_iter()
        .fold(T::ONE, |product, value| product.times(value))
}

/// Whether a product step runs as pairwise contractions: three or more factors, something to
/// compute, a target whose points are distinct, no factor read in place.
pub(crate) fn pairwise<T, const L: usize, const N: usize>(step: &Step<'_, T, L, N>) -> bool {
    N >= 3
        && step.injective()
        && step.operands().iter().all(|operand| !operand.in_place)
        && !step.extents().contains(&0)
}

/// A product step as pairwise contractions: their order, the loops each intermediate keeps,
/// and the temporaries those need.
pub(crate) struct Pairing<const L: usize> {
    order: Order,
    /// The loops each intermediate uses: the factors', then one per contraction.
    vars: Vec<u64>,
    /// Per temporary (every contraction but the last): its elements, and each loop's stride
    /// in it (row-major over the loops it keeps, in loop order).
    pub(crate) temporaries: Temporaries<L>,
}

impl<const L: usize> Pairing<L> {
    /// The pairing in the order `cache` holds (or finds) for these extents.
    ///
    /// # Panics
    /// If a temporary's element count overflows `usize` (no such buffer could exist).
    pub(crate) fn new<T, const N: usize>(step: &Step<'_, T, L, N>, cache: &PlanCache) -> Self {
        let extents = *step.extents();
        let out = step.target().uses;
        let factors = step.operands().map(|o| o.uses);
        let strides: Vec<[isize; L]> = step.operands().iter().map(|o| o.strides).collect();
        let machine = if step.memory() == [Memory::Host; 2] {
            Machine::Host(size_of::<T>())
        } else {
            Machine::Device
        };
        // One call site may run several element types, and on the host and a device.
        let runs_on = match machine {
            Machine::Host(bytes) => bytes as isize,
            Machine::Device => -1,
        };
        let key: Vec<isize> = (extents.iter().map(|&e| e as isize))
            .chain(strides.iter().flatten().copied())
            .chain(step.target().strides)
            .chain([runs_on])
            .collect();
        let planned = cache.planned(key, || {
            choose(
                &extents,
                &factors,
                out,
                &strides,
                &step.target().strides,
                machine,
            )
        });
        let vars = intermediates(&factors, out, &planned.order);
        let temporaries = planned
            .temporaries
            .iter()
            .map(|(len, strides)| (*len, std::array::from_fn(|v| strides[v])))
            .collect();
        Pairing {
            order: planned.order,
            vars,
            temporaries,
        }
    }

    /// Which operands of each pairwise step (in [`Pairing::steps`]'s order) are conjugated,
    /// given the factors' flags: intermediates never are, only the factors themselves.
    pub(crate) fn conj<const N: usize>(&self, conj: [bool; N]) -> Vec<[bool; 2]> {
        let flag = |p: usize| p < N && conj[p];
        self.order
            .iter()
            .map(|&(x, y)| [flag(x), flag(y)])
            .collect()
    }

    /// Host buffers for [`Pairing::temporaries`], reused from earlier runs on this thread
    /// (stale contents are harmless: every temporary is written with `=` before it is read).
    pub(crate) fn host_temporaries<T: Element>(&self) -> Scratch<T> {
        Scratch::with_lengths(self.temporaries.iter().map(|&(len, _)| len))
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
            None => step.operands()[p],
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
                let output = buffers.get(k).map(|&(start, len)| {
                    BoundTarget::raw(start, len, self.temporaries[k].1, self.vars[N + k])
                });
                step.derived(output, [part(x), part(y)], memory)
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

/// The order and layouts a network runs with on `machine`: among the orders with the fewest
/// multiply-adds (all of them for up to 5 factors, the planner's one beyond), the one whose
/// best layouts (see [`layouts`]) cost least as GEMM calls; ties go to the planner's order.
fn choose<const L: usize>(
    extents: &[usize; L],
    factors: &[u64],
    out: u64,
    strides: &[[isize; L]],
    target: &[isize; L],
    machine: Machine,
) -> Planned {
    let mut best: Option<(Cost, Order, Temporaries<L>)> = None;
    for order in cheapest_orders(extents, factors, out) {
        let vars = intermediates(factors, out, &order);
        let (calls, temporaries) = layouts(extents, &vars, &order, strides, target, machine);
        if best.as_ref().is_none_or(|(fewest, ..)| calls < *fewest) {
            best = Some((calls, order, temporaries));
        }
    }
    let (_, order, temporaries) = best.expect("the planner's order is always a candidate");
    Planned {
        order,
        temporaries: (temporaries.into_iter())
            .map(|(len, strides)| (len, strides.to_vec()))
            .collect(),
    }
}

/// The planner's order, then, for up to 5 factors, every other order with exactly as many
/// multiply-adds (orders of equal cost differ in how well their steps map to GEMM calls).
fn cheapest_orders(extents: &[usize], factors: &[u64], out: u64) -> Vec<Order> {
    let planned = plan(extents, factors, out);
    let mut orders = vec![planned.clone()];
    if factors.len() <= 5 {
        let cost = |order: &Order| contraction_cost(extents, factors, out, order);
        let least = cost(&planned);
        let mut every = Vec::new();
        every_order(
            &(0..factors.len()).collect::<Vec<_>>(),
            factors.len(),
            &mut Vec::new(),
            &mut every,
        );
        orders.extend(
            every
                .into_iter()
                .filter(|order| *order != planned && cost(order) <= least),
        );
    }
    orders
}

/// Every sequence of pairwise contractions of the intermediates in `alive` (the next one
/// gets index `next`), appended to `orders`.
fn every_order(alive: &[usize], next: usize, prefix: &mut Order, orders: &mut Vec<Order>) {
    if alive.len() == 1 {
        orders.push(prefix.clone());
        return;
    }
    for i in 0..alive.len() {
        for j in i + 1..alive.len() {
            let (x, y) = (alive[i], alive[j]);
            let mut rest: Vec<usize> = alive
                .iter()
                .copied()
                .filter(|&p| p != x && p != y)
                .collect();
            rest.push(next);
            prefix.push((x, y));
            every_order(&rest, next + 1, prefix, orders);
            prefix.pop();
        }
    }
}

/// The multiply-adds of `order`: each contraction's loops, multiplied out.
fn contraction_cost(extents: &[usize], factors: &[u64], out: u64, order: &Order) -> f64 {
    let vars = intermediates(factors, out, order);
    order
        .iter()
        .map(|&(x, y)| {
            (0..extents.len())
                .filter(|&v| (vars[x] | vars[y]) >> v & 1 == 1)
                .map(|v| extents[v] as f64)
                .product::<f64>()
        })
        .sum()
}

/// Each temporary's element count and loop strides, laid out for the contraction that reads
/// it (TiledArray's idea of choosing an intermediate's index order for its consumer).
///
/// A temporary read by contraction `C = Σ X·Y` holds X's loops in three groups: those C and Y
/// share with it (batch), those only C shares (X's rows of the GEMM, in C's order) and those
/// only Y shares (the contracted ones, in Y's order), each group kept in its order in C and Y
/// so that it merges into one GEMM dimension. Batch loops go outermost, and whether the rows
/// or the contracted loops go innermost is tried both ways per temporary (up to 8
/// temporaries; beyond, only the two uniform choices); the layouts that leave the fewest
/// matrices without a unit stride, then make the fewest GEMM calls (see [`gemm_cost`]), over
/// the whole network win, as cuBLAS wants them; ties go to the first, which puts X's rows
/// innermost when they are inner in C too. On the host, every temporary laid out in its
/// consumer's order instead ([`Arrangement::InPlace`]) replaces them where it is estimated
/// faster ([`network_time`]): few long calls that read a long operand across its inner
/// dimension run slower there than many short ones that read along it. The cost returned is
/// the former's, by which [`choose`] compares orders.
///
/// # Panics
/// If a temporary's element count overflows `usize` (no such buffer could be allocated).
fn layouts<const L: usize>(
    extents: &[usize; L],
    vars: &[u64],
    order: &[(usize, usize)],
    factors: &[[isize; L]],
    target: &[isize; L],
    machine: Machine,
) -> (Cost, Temporaries<L>) {
    use Arrangement::{Flipped, Grouped, InPlace};
    let count = order.len() - 1;
    let choices: Vec<Vec<Arrangement>> = if count <= 8 {
        (0..1usize << count)
            .map(|bits| {
                (0..count)
                    .map(|t| if bits >> t & 1 == 1 { Flipped } else { Grouped })
                    .collect()
            })
            .collect()
    } else {
        vec![vec![Grouped; count], vec![Flipped; count]]
    };
    let calls = |uses, strides: &[[isize; L]; 3]| gemm_cost(extents, uses, strides);
    let mut best: Option<(Cost, Vec<[isize; L]>)> = None;
    for arrangement in choices {
        let strides = lay_out(extents, vars, order, factors, target, &arrangement);
        let cost = summed(order, vars, factors.len(), &strides, calls);
        if best.as_ref().is_none_or(|(fewest, _)| cost < *fewest) {
            best = Some((cost, strides));
        }
    }
    let (cost, mut strides) = best.expect("at least one layout is tried");
    if let Machine::Host(bytes) = machine {
        let time =
            |uses, strides: &[[isize; L]; 3]| (network_time(extents, uses, strides, bytes), 0);
        let in_place = lay_out(extents, vars, order, factors, target, &vec![InPlace; count]);
        // The estimate is coarse: a change of layouts must promise a sixteenth.
        let (new, old) = (
            summed(order, vars, factors.len(), &in_place, time).0,
            summed(order, vars, factors.len(), &strides, time).0,
        );
        if new < old - old / 16 {
            strides = in_place;
        }
    }
    let temporaries = (0..count)
        .map(|t| {
            let temporary = factors.len() + t;
            let elements = (0..L)
                .filter(|&var| vars[temporary] >> var & 1 == 1)
                .try_fold(1usize, |n, var| n.checked_mul(extents[var]))
                .expect("the temporary of a contraction has more elements than fit in usize");
            (elements, strides[temporary])
        })
        .collect();
    (cost, temporaries)
}

/// A cost of each contraction of `order`, given the loops its operands and result use and
/// their strides (`strides`: every intermediate's, the first `factors` the factors'), summed.
fn summed<const L: usize>(
    order: &[(usize, usize)],
    vars: &[u64],
    factors: usize,
    strides: &[[isize; L]],
    cost: impl Fn([u64; 3], &[[isize; L]; 3]) -> Cost,
) -> Cost {
    (order.iter().enumerate())
        .map(|(k, &(x, y))| {
            let o = factors + k;
            cost(
                [vars[x], vars[y], vars[o]],
                &[strides[x], strides[y], strides[o]],
            )
        })
        .fold((0usize, 0usize), |(s, c), (first, second)| {
            (s.saturating_add(first), c.saturating_add(second))
        })
}

/// How a temporary's loop groups are arranged (see [`layouts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Arrangement {
    /// Batch loops outermost, then the rows and the contracted loops, the rows innermost where
    /// they are inner in the consumer's result, else the contracted loops.
    Grouped,
    /// As `Grouped`, the rows and the contracted loops the other way round.
    Flipped,
    /// In the consumer's result's order, the contracted loops where the other operand's rows
    /// are in it: as a contraction written out step by step leaves its result.
    InPlace,
}

/// Every intermediate's loop strides with temporary `t` arranged as `arrangement[t]`, laid
/// out from the last contraction back, so each temporary's consumer is laid out before it.
fn lay_out<const L: usize>(
    extents: &[usize; L],
    vars: &[u64],
    order: &[(usize, usize)],
    factors: &[[isize; L]],
    target: &[isize; L],
    arrangement: &[Arrangement],
) -> Vec<[isize; L]> {
    let n = factors.len();
    let mut strides: Vec<Option<[isize; L]>> = factors.iter().copied().map(Some).collect();
    strides.resize(vars.len(), None);
    strides[vars.len() - 1] = Some(*target);
    // Loops in `mask`, outermost (largest stride in `by`) first; ties in loop order.
    let ranked = |mask: u64, by: &[isize; L]| -> Vec<usize> {
        let mut loops: Vec<usize> = (0..L).filter(|&var| mask >> var & 1 == 1).collect();
        sort_loops(&mut loops, &|var| std::cmp::Reverse(by[var].unsigned_abs()));
        loops
    };
    for (k, &(x, y)) in order.iter().enumerate().rev() {
        let output = strides[n + k].expect("a consumer is laid out before what it reads");
        for (this, other) in [(x, y), (y, x)] {
            if strides[this].is_some() {
                continue;
            }
            // The other operand may be a temporary still to lay out: then loop order, and it
            // follows this one's.
            let other_strides = strides[other].unwrap_or([0; L]);
            let (mine, theirs, kept) = (vars[this], vars[other], vars[n + k]);
            let batch = ranked(mine & theirs & kept, &output);
            let rows = ranked(mine & kept & !theirs, &output);
            let contracted = ranked(mine & !kept, &other_strides);
            let innermost = |loops: &[usize]| loops.iter().map(|&v| output[v]).min();
            let their_rows = ranked(theirs & kept & !mine, &output);
            let rows_inner_in_output = match (innermost(&rows), innermost(&their_rows)) {
                (Some(mine), Some(theirs)) => mine.unsigned_abs() <= theirs.unsigned_abs(),
                _ => true,
            };
            let sequence = match arrangement[this - n] {
                Arrangement::InPlace => {
                    // X's loops in C's order; the contracted ones before the first whose
                    // stride in C is below the largest of Y's rows' (innermost if Y has none).
                    let place = (their_rows.iter())
                        .map(|&v| output[v].unsigned_abs())
                        .max()
                        .unwrap_or(0);
                    let mut kept_loops = ranked(mine & kept, &output);
                    let at = (kept_loops.iter())
                        .position(|&v| output[v].unsigned_abs() < place)
                        .unwrap_or(kept_loops.len());
                    kept_loops.splice(at..at, contracted);
                    kept_loops
                }
                flip => {
                    let mut sequence = batch;
                    if rows_inner_in_output != (flip == Arrangement::Flipped) {
                        sequence.extend(contracted);
                        sequence.extend(rows);
                    } else {
                        sequence.extend(rows);
                        sequence.extend(contracted);
                    }
                    sequence
                }
            };
            strides[this] = Some(row_major(extents, &sequence));
        }
    }
    strides
        .into_iter()
        .map(|s| s.expect("every intermediate is laid out"))
        .collect()
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

    /// A cost of each contraction of a network with the order and layouts of `planned`,
    /// summed.
    fn planned_cost<const L: usize>(
        planned: &Planned,
        factors: &[u64],
        out: u64,
        strides: &[[isize; L]],
        target: &[isize; L],
        cost: impl Fn([u64; 3], &[[isize; L]; 3]) -> Cost,
    ) -> Cost {
        let vars = intermediates(factors, out, &planned.order);
        let mut all: Vec<[isize; L]> = strides.to_vec();
        all.extend((planned.temporaries.iter()).map(|(_, s)| std::array::from_fn(|v| s[v])));
        all.push(*target);
        summed(&planned.order, &vars, factors.len(), &all, cost)
    }

    /// The four-index transform d[p, q, r, s] = c[p, a] c[q, b] c[r, e] c[s, f] g[a, b, e, f]
    /// over extents `n`, all row-major, loops (p, q, r, s, a, b, e, f): extents, factors,
    /// their strides, the target's strides.
    fn four_index(n: isize) -> ([usize; 8], [u64; 5], [[isize; 8]; 5], [isize; 8]) {
        let c = |row: usize, col: usize| {
            let mut s = [0; 8];
            (s[row], s[col]) = (n, 1);
            s
        };
        let g = [0, 0, 0, 0, n * n * n, n * n, n, 1];
        let d = [n * n * n, n * n, n, 1, 0, 0, 0, 0];
        let strides = [c(0, 4), c(1, 5), c(2, 6), c(3, 7), g];
        ([n as usize; 8], [0x11, 0x22, 0x44, 0x88, 0xf0], strides, d)
    }

    #[test]
    fn four_index_transform_is_one_gemm_call_per_stage_on_a_device() {
        // Every order costs the same; a temporary laid out in loop order, or the planner's
        // first order, needs 32 calls in some stage.
        let (extents, factors, strides, d) = four_index(32);
        let planned = choose(&extents, &factors, 0x0f, &strides, &d, Machine::Device);
        let calls = |uses, strides: &[[isize; 8]; 3]| gemm_cost(&extents, uses, strides);
        let cost = planned_cost(&planned, &factors, 0x0f, &strides, &d, calls);
        assert_eq!(cost, (0, 4));
    }

    #[test]
    fn on_the_host_a_four_index_transform_lays_its_temporaries_out_in_place() {
        // Each stage as one call reads its long operand across k (a 32768 × 32 × 32 call),
        // estimated (and measured) slower than stages in the order a user would write them,
        // whose calls read along k or are small: the host takes those where the device
        // keeps one call per stage.
        for (n, bytes) in [(32, 4), (24, 8), (17, 8)] {
            let (extents, factors, strides, d) = four_index(n);
            let host = choose(&extents, &factors, 0x0f, &strides, &d, Machine::Host(bytes));
            let device = choose(&extents, &factors, 0x0f, &strides, &d, Machine::Device);
            assert_eq!(
                host.order, device.order,
                "n = {n}: orders are compared alike"
            );
            let layouts = |planned: &Planned| -> Vec<Vec<isize>> {
                planned.temporaries.iter().map(|(_, s)| s.clone()).collect()
            };
            assert_ne!(layouts(&host), layouts(&device), "n = {n}");
            let time =
                |uses, strides: &[[isize; 8]; 3]| (network_time(&extents, uses, strides, bytes), 0);
            let (on_host, as_device) = (
                planned_cost(&host, &factors, 0x0f, &strides, &d, time).0,
                planned_cost(&device, &factors, 0x0f, &strides, &d, time).0,
            );
            assert!(
                on_host < as_device - as_device / 16,
                "n = {n}: {on_host} against {as_device}"
            );
            // In place: each temporary keeps the target's loops it holds in the target's
            // order, the contracted loop where the factor c that replaces it has its row.
            let t1 = &host.temporaries[0].1;
            let mut kept: Vec<usize> = (0..8).filter(|&v| t1[v] != 0).collect();
            kept.sort_by_key(|&v| std::cmp::Reverse(t1[v]));
            assert_eq!(kept.len(), 4, "n = {n}");
            assert!(
                kept.windows(2).all(|w| w[0] % 4 < w[1] % 4),
                "n = {n}: {t1:?}"
            );
        }
    }

    #[test]
    fn only_orders_of_least_cost_are_tried() {
        // The chain of the first test: the one cheapest order; four equal matrices: all 18
        // orders of three contractions (three pairs first, times the orders after) that cost
        // the least, none that costs more.
        let extents = [1000, 10, 10, 1000];
        assert_eq!(
            cheapest_orders(&extents, &[0b0101, 0b1100, 0b1010], 0b0011),
            [vec![(1, 2), (0, 3)]]
        );
        let square = [8usize; 5];
        let chain = [0b00011, 0b00110, 0b01100, 0b11000];
        let orders = cheapest_orders(&square, &chain, 0b10001);
        let least = contraction_cost(&square, &chain, 0b10001, &orders[0]);
        assert!(orders.len() > 1);
        for order in &orders {
            assert_eq!(contraction_cost(&square, &chain, 0b10001, order), least);
        }
    }
}

//! Products of three or more tensors → a sequence of pairwise contractions through
//! temporaries, in an order chosen from the real extents: dynamic programming over subsets for
//! up to 8 factors (the cheapest order by multiply-adds), greedy beyond. The order is cached
//! per call site and extents, so repeated calls do no search. Each pairwise contraction is a
//! GEMM or a loop nest (`contract`).

use std::sync::Mutex;

use crate::element::Element;
use crate::gemm::{contract, Role};
use crate::kernel::{evaluate, Bound, BoundTarget, Mode};

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

/// `target (=|+=|← β·target +) α · Σ Π factors`, factor `f` using the loop variables in the
/// bit set `uses[f]`. Same contract as [`evaluate`] with the body "product of all operands".
#[allow(clippy::too_many_arguments)]
pub fn contract_network<T: Element, const L: usize, const N: usize>(
    target: BoundTarget<'_, T, L>,
    mode: Mode<T>,
    alpha: T,
    extents: [usize; L],
    n_out: usize,
    operands: [Bound<'_, T, L>; N],
    uses: [u64; N],
    cache: &PlanCache,
) {
    let out: u64 = (0..n_out).fold(0, |mask, var| mask | 1 << var);
    if extents.contains(&0) || N < 3 {
        return evaluate(target, mode, alpha, extents, n_out, operands, |values| {
            values
                .into_iter()
                .fold(T::from_f64(1.0), |product, value| product * value)
        });
    }
    let order = cache.order(&extents, &uses, out);
    // Intermediates: the inputs, then one per contraction; temporaries own their buffers.
    let mut parts: Vec<Part<T, L>> = operands
        .iter()
        .zip(uses)
        .map(|(operand, vars)| Part {
            data: operand.data,
            base: operand.base,
            strides: operand.strides,
            vars,
            _buffer: None,
        })
        .collect();
    let mut alive: Vec<bool> = vec![true; N];
    for (step, &(x, y)) in order.iter().enumerate() {
        alive[x] = false;
        alive[y] = false;
        let involved = parts[x].vars | parts[y].vars;
        let needed_later = (0..parts.len())
            .filter(|&p| alive[p])
            .fold(out, |mask, p| mask | parts[p].vars);
        let last = step + 1 == order.len();
        let kept = if last { out } else { involved & needed_later };
        let (left, right) = (parts[x].bound(), parts[y].bound());
        if last {
            pair(
                (left, right, parts[x].vars, parts[y].vars),
                (target.data, target.base, target.strides, mode, alpha),
                kept,
                &extents,
            );
            return;
        }
        let size: usize = (0..L)
            .filter(|&v| kept >> v & 1 == 1)
            .map(|v| extents[v])
            .product();
        let mut buffer = vec![T::ZERO; size];
        let mut strides = [0isize; L];
        let mut stride = 1isize;
        for var in (0..L).rev().filter(|&v| kept >> v & 1 == 1) {
            strides[var] = stride;
            stride *= extents[var] as isize;
        }
        pair(
            (left, right, parts[x].vars, parts[y].vars),
            (
                buffer.as_mut_ptr(),
                0,
                strides,
                Mode::Assign,
                T::from_f64(1.0),
            ),
            kept,
            &extents,
        );
        parts.push(Part {
            data: buffer.as_ptr(),
            base: 0,
            strides,
            vars: kept,
            _buffer: Some(buffer),
        });
        alive.push(true);
    }
}

/// An operand or temporary of the network, addressed over all `L` loop variables.
struct Part<T, const L: usize> {
    data: *const T,
    base: isize,
    strides: [isize; L],
    vars: u64,
    /// Keeps a temporary's elements alive (and in place) while `data` points at them.
    _buffer: Option<Vec<T>>,
}

impl<T, const L: usize> Part<T, L> {
    fn bound(&self) -> Bound<'_, T, L> {
        Bound::from_raw(self.data, self.base, self.strides)
    }
}

/// Where a pairwise contraction writes: pointer, base offset, strides, mode and α.
type Output<T, const L: usize> = (*mut T, isize, [isize; L], Mode<T>, T);

/// Contracts two parts into `output` over the variables in `kept`, summing the others they
/// use: the variables are reordered so `kept` come first, and variables neither part uses
/// get extent 1.
fn pair<T: Element, const L: usize>(
    (left, right, left_vars, right_vars): (Bound<'_, T, L>, Bound<'_, T, L>, u64, u64),
    output: Output<T, L>,
    kept: u64,
    extents: &[usize; L],
) {
    let (data, base, strides, mode, alpha) = output;
    let involved = left_vars | right_vars | kept;
    let in_set = |mask: u64, var: usize| mask >> var & 1 == 1;
    let mut order: Vec<usize> = (0..L).filter(|&v| in_set(kept, v)).collect();
    order.extend((0..L).filter(|&v| in_set(involved, v) && !in_set(kept, v)));
    order.extend((0..L).filter(|&v| !in_set(involved, v)));
    let n_out = (kept.count_ones()) as usize;
    let permute = |values: &[isize; L]| -> [isize; L] { std::array::from_fn(|k| values[order[k]]) };
    let new_extents: [usize; L] = std::array::from_fn(|k| {
        let var = order[k];
        if in_set(involved, var) {
            extents[var]
        } else {
            1
        }
    });
    let roles: Option<[Role; L]> = (0..L)
        .map(|k| {
            let var = order[k];
            match (
                in_set(left_vars, var),
                in_set(right_vars, var),
                in_set(kept, var),
            ) {
                (true, true, true) => Some(Role::Batch),
                (true, false, true) => Some(Role::Left),
                (false, true, true) => Some(Role::Right),
                (true, true, false) => Some(Role::Contracted),
                // Unused variables have extent 1: any role that GEMM ignores.
                (false, false, false) => Some(Role::Batch),
                _ => None,
            }
        })
        .collect::<Option<Vec<Role>>>()
        .map(|roles| std::array::from_fn(|k| roles[k]));
    let target = BoundTarget::from_raw(data, base, permute(&strides));
    let operands = [
        Bound::from_raw(left.data, left.base, permute(&left.strides)),
        Bound::from_raw(right.data, right.base, permute(&right.strides)),
    ];
    match roles {
        Some(roles) => contract(target, mode, alpha, new_extents, n_out, operands, roles),
        None => evaluate(
            target,
            mode,
            alpha,
            new_extents,
            n_out,
            operands,
            |[x, y]| x * y,
        ),
    }
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

//! Two-operand contraction steps → GEMM calls (`C ← α A B + β C`) on the operands' own strides,
//! no copies: the loop variables of each role (batch, left, right, contracted) that form one
//! regular dimension in every operand are merged into the GEMM's m, n or k; the others become
//! loops around the call (contracted ones accumulating). Small problems run as loop nests.

use rayon::prelude::*;

use crate::element::Element;
use crate::kernel::{evaluate, Bound, BoundTarget, Mode};

/// What a loop variable of a contraction `C[..] = Σ A[..] B[..]` is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// In A, B and C: one GEMM per value.
    Batch,
    /// In A and C: a row of the GEMM.
    Left,
    /// In B and C: a column of the GEMM.
    Right,
    /// In A and B, summed: the GEMM's inner dimension.
    Contracted,
}

// Heuristic: below this many multiply-adds per call, packing and call overhead outweigh the
// GEMM kernel's speed, and the fused loop nest wins (measured in benches/contraction.rs).
const GEMM_THRESHOLD: usize = 32 * 32 * 32;

/// `target (=|+=|← β·target +) α · Σ a·b` where each loop variable has the role given.
///
/// Same contract as [`evaluate`] with the body `a * b`; `roles` must describe which operands
/// use each variable (generated code derives them from the accesses).
#[allow(clippy::too_many_arguments)]
pub fn contract<T: Element, const L: usize>(
    target: BoundTarget<'_, T, L>,
    mode: Mode<T>,
    alpha: T,
    extents: [usize; L],
    n_out: usize,
    operands: [Bound<'_, T, L>; 2],
    roles: [Role; L],
) {
    let size = |role: Role| -> usize {
        (0..L)
            .filter(|&var| roles[var] == role)
            .map(|var| extents[var])
            .product()
    };
    let work = size(Role::Left) * size(Role::Right) * size(Role::Contracted);
    if extents.contains(&0) || work < GEMM_THRESHOLD {
        return evaluate(target, mode, alpha, extents, n_out, operands, |[x, y]| {
            x * y
        });
    }
    let [a, b] = &operands;
    let plan = GemmPlan::new(&extents, &roles, [&a.strides, &b.strides, &target.strides]);
    let beta = match mode {
        Mode::Assign => T::ZERO,
        Mode::Add => T::from_f64(1.0),
        Mode::Scale(beta) => beta,
    };
    let calls = Calls {
        a: a.data,
        b: b.data,
        c: target.data,
        bases: [a.base, b.base, target.base],
        alpha,
        beta,
        plan: &plan,
        extents: &extents,
    };
    // Loops around the call: batch and unmerged left/right variables address distinct parts of
    // C, so they split across threads; when there are too few of them, the rows of each call
    // do. Unmerged contracted variables are summed inside one call sequence.
    let outer: usize = plan.outer.iter().map(|&var| extents[var]).product();
    let threads = rayon::current_num_threads();
    let parallel = threads > 1 && work * size(Role::Batch) >= PARALLEL_GEMM_WORK;
    if parallel && outer >= threads {
        (0..outer)
            .into_par_iter()
            .for_each(|index| calls.run(index, 0..plan.m.extent));
    } else if parallel && plan.m.extent >= 2 * threads {
        let rows = plan.m.extent;
        (0..threads).into_par_iter().for_each(|part| {
            let part = rows * part / threads..rows * (part + 1) / threads;
            (0..outer).for_each(|index| calls.run(index, part.clone()));
        });
    } else {
        (0..outer).for_each(|index| calls.run(index, 0..plan.m.extent));
    }
}

// Heuristic: below about this many multiply-adds (a 128³ GEMM), one thread is as fast.
const PARALLEL_GEMM_WORK: usize = 1 << 21;

/// The GEMM calls of one `contract`, shareable between threads.
struct Calls<'p, T, const L: usize> {
    a: *const T,
    b: *const T,
    c: *mut T,
    bases: [isize; 3],
    alpha: T,
    beta: T,
    plan: &'p GemmPlan<'p, L>,
    extents: &'p [usize; L],
}

// SAFETY: threads run calls for different outer indices or different rows, which write
// disjoint elements of C; A and B are only read.
unsafe impl<T: Sync, const L: usize> Sync for Calls<'_, T, L> {}

impl<T: Element, const L: usize> Calls<'_, T, L> {
    /// The calls for outer index `index` (mixed radix over `plan.outer`) restricted to `rows`,
    /// summing over the unmerged contracted variables.
    fn run(&self, index: usize, rows: std::ops::Range<usize>) {
        let plan = self.plan;
        let mut offsets = self.bases;
        let mut rest = index;
        for &var in plan.outer.iter().rev() {
            let value = (rest % self.extents[var]) as isize;
            rest /= self.extents[var];
            for (offset, strides) in offsets.iter_mut().zip(plan.strides) {
                *offset += strides[var] * value;
            }
        }
        let row = rows.start as isize;
        offsets[0] += row * plan.m.strides[0];
        offsets[2] += row * plan.m.strides[2];
        let sums: usize = plan.summed.iter().map(|&var| self.extents[var]).product();
        for sum in 0..sums {
            let mut at = offsets;
            let mut rest = sum;
            for &var in plan.summed.iter().rev() {
                let value = (rest % self.extents[var]) as isize;
                rest /= self.extents[var];
                at[0] += plan.strides[0][var] * value;
                at[1] += plan.strides[1][var] * value;
            }
            let beta = if sum == 0 {
                self.beta
            } else {
                T::from_f64(1.0)
            };
            // SAFETY: `bind` proved every offset reachable over the loop nest inside each
            // buffer; these calls address a part of it. The target is not read by the operands
            // of a summing step (the compiler reads a target in place only point-wise), so C
            // overlaps neither A nor B.
            unsafe {
                T::gemm(
                    rows.len(),
                    plan.k.extent,
                    plan.n.extent,
                    self.alpha,
                    (self.a.offset(at[0]), plan.m.strides[0], plan.k.strides[0]),
                    (self.b.offset(at[1]), plan.k.strides[1], plan.n.strides[1]),
                    beta,
                    (self.c.offset(at[2]), plan.m.strides[2], plan.n.strides[2]),
                );
            }
        }
    }
}

/// One merged GEMM dimension: its extent and its stride in A, B and C (0 where unused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Dimension {
    extent: usize,
    strides: [isize; 3],
}

impl Dimension {
    const UNIT: Dimension = Dimension {
        extent: 1,
        strides: [0; 3],
    };
}

struct GemmPlan<'s, const L: usize> {
    m: Dimension,
    n: Dimension,
    k: Dimension,
    /// Batch and unmerged left/right variables, looped around the calls.
    outer: Vec<usize>,
    /// Unmerged contracted variables, summed by consecutive calls.
    summed: Vec<usize>,
    strides: [&'s [isize; L]; 3],
}

impl<'s, const L: usize> GemmPlan<'s, L> {
    fn new(extents: &[usize; L], roles: &[Role; L], strides: [&'s [isize; L]; 3]) -> Self {
        let vars = |role: Role| -> Vec<usize> {
            (0..L)
                .filter(|&var| roles[var] == role && extents[var] > 1)
                .collect()
        };
        // Which of A (0), B (1), C (2) each role's variables live in.
        let (m, m_rest) = merge(&vars(Role::Left), extents, &strides, &[0, 2]);
        let (n, n_rest) = merge(&vars(Role::Right), extents, &strides, &[1, 2]);
        let (k, k_rest) = merge(&vars(Role::Contracted), extents, &strides, &[0, 1]);
        let mut outer = vars(Role::Batch);
        outer.extend(m_rest);
        outer.extend(n_rest);
        GemmPlan {
            m,
            n,
            k,
            outer,
            summed: k_rest,
            strides,
        }
    }
}

/// The largest set of `vars` that forms one regular dimension in every operand of `used`,
/// over the orders of `vars` (a role has few variables), and the variables left to loop over.
fn merge<const L: usize>(
    vars: &[usize],
    extents: &[usize; L],
    strides: &[&[isize; L]; 3],
    used: &[usize],
) -> (Dimension, Vec<usize>) {
    let mut best = (Dimension::UNIT, vars.to_vec());
    let mut order = vars.to_vec();
    permutations(&mut order, 0, &mut |order| {
        // The longest suffix of `order` (innermost last) that merges in every operand.
        let mut merged = Dimension::UNIT;
        let mut start = order.len();
        while start > 0 {
            let var = order[start - 1];
            let fits = merged.extent == 1
                || used
                    .iter()
                    .all(|&o| strides[o][var] == merged.strides[o] * merged.extent as isize);
            if !fits {
                break;
            }
            for &o in used {
                if merged.extent == 1 {
                    merged.strides[o] = strides[o][var];
                }
            }
            merged.extent *= extents[var];
            start -= 1;
        }
        if merged.extent > best.0.extent {
            best = (merged, order[..start].to_vec());
        }
    });
    best
}

/// Calls `f` with every ordering of `items[from..]` (a role's variables: a handful at most).
fn permutations(items: &mut [usize], from: usize, f: &mut impl FnMut(&[usize])) {
    if from + 1 >= items.len() {
        f(items);
        return;
    }
    for k in from..items.len() {
        items.swap(from, k);
        permutations(items, from + 1, f);
        items.swap(from, k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::{Operand, TargetOwned};
    use crate::kernel::Axis;
    use crate::tensor::Tensor;

    fn filled(shape: &[usize], seed: usize) -> Tensor<f64> {
        let mut t = seed;
        Tensor::from_fn(shape, |_| {
            t = (t * 7919 + 104_729) % 1009;
            t as f64 / 1009.0 - 0.5
        })
    }

    #[test]
    fn merges_what_is_regular_and_loops_over_the_rest() {
        // The seed contraction: c[i, j] = a[i, k, l] * b[k, j, l] with loops (i, j, k, l).
        let (ni, nj, nk, nl) = (40, 36, 20, 12);
        let a = filled(&[ni, nk, nl], 1);
        let b = filled(&[nk, nj, nl], 2);
        let mut c = filled(&[ni, nj], 3);
        let before = c.clone();
        let extents = [ni, nj, nk, nl];
        let (ra, rb) = (a.__tdsl_operand(), b.__tdsl_operand());
        let target = c.__tdsl_target();
        let loops = |axes: &[usize]| axes.iter().map(|&v| Axis::Loop(v)).collect::<Vec<_>>();
        contract(
            target.bind(&loops(&[0, 1]), &extents, 2),
            Mode::Scale(0.5),
            2.0,
            extents,
            2,
            [
                ra.bind(&loops(&[0, 2, 3]), &extents),
                rb.bind(&loops(&[2, 1, 3]), &extents),
            ],
            [Role::Left, Role::Right, Role::Contracted, Role::Contracted],
        );
        for i in 0..ni {
            for j in 0..nj {
                let mut sum = 0.0;
                for k in 0..nk {
                    for l in 0..nl {
                        sum += a[[i, k, l]] * b[[k, j, l]];
                    }
                }
                let expected = 0.5 * before[[i, j]] + 2.0 * sum;
                assert!((c[[i, j]] - expected).abs() < 1e-10, "({i}, {j})");
            }
        }
    }

    #[test]
    fn merge_prefers_the_largest_regular_dimension() {
        // k (extent 4) and l (extent 3): A has strides (3, 1) and merges (k, l); B has (30, 1).
        let extents = [4, 3];
        let a = [3, 1];
        let b = [30, 1];
        let c = [0, 0];
        let (dimension, rest) = merge(&[0, 1], &extents, &[&a, &b, &c], &[0, 1]);
        assert_eq!(dimension.extent, 4);
        assert_eq!(dimension.strides, [3, 30, 0]);
        assert_eq!(rest, [1]);
        let (dimension, rest) = merge(&[0, 1], &extents, &[&a, &a, &c], &[0, 1]);
        assert_eq!((dimension.extent, rest), (12, vec![]));
    }
}

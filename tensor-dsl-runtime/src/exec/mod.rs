//! How a statement runs: the [`Step`](step::Step) proof, the only door to the engines (loop
//! nests, GEMM calls, networks of pairwise contractions), and the `Backend` trait through which
//! generated code sends each step to the host or to a device; beside them the matrix
//! operations (`matrix.rs`, on `faer`, feature `matrix`). Imports `tensor` and `operand`.

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
pub(crate) mod gemm;
pub(crate) mod loop_nest;
#[cfg(feature = "matrix")]
pub(crate) mod matrix;
pub mod network;
pub(crate) mod parallel;
#[cfg(tdsl_unoptimized)]
pub mod prebuilt;
pub(crate) mod scratch;
pub(crate) mod step;
pub(crate) mod transpose;

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

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;

    use super::gemm::{contract, contract_loops};
    use super::loop_nest::{copy, evaluate_nest, AnyNest};
    use super::network::{contract_network, network_loops, PlanCache};
    use super::sort_loops;
    use super::step::{Axis, Step};
    use crate::operand::access::{Mode, Operand, TargetOwned};
    use crate::tensor::Tensor;

    fn filled(shape: &[usize], seed: usize) -> Tensor<f64> {
        let mut t = seed;
        Tensor::from_fn(shape, |_| {
            t = (t * 7919 + 104_729) % 1009;
            t as f64 / 1009.0 - 0.5
        })
    }

    fn loops(vars: &[usize]) -> Vec<Axis> {
        vars.iter().map(|&var| Axis::Loop(var)).collect()
    }

    fn bits(tensor: &Tensor<f64>) -> Vec<u64> {
        tensor.as_slice().iter().map(|x| x.to_bits()).collect()
    }

    /// `contract`, `contract_network` and `copy` run their step padded (`in_few_loops!`): the
    /// same bits as the engine at the step's own loop count, on the loop nest's paths (thin,
    /// odd, empty) and GEMM's, for a network's pairs, and for a transposing copy.
    #[test]
    fn padded_steps_write_the_same_bits() {
        for (ni, nj, nk) in [(7, 13, 5), (1, 7, 13), (13, 1, 0), (0, 3, 4), (40, 36, 30)] {
            let a = filled(&[ni, nk], 1);
            let b = filled(&[nj, nk], 2);
            let start = filled(&[ni, nj], 3);
            // c[i, j] = 0.5 c[i, j] + 2 a[i, k] b[j, k]: three loops, padded to four.
            let product = |padded: bool| {
                let mut c = start.clone();
                let target = c.__tdsl_target();
                let (c_axes, a_axes, b_axes) = (loops(&[0, 1]), loops(&[0, 2]), loops(&[1, 2]));
                let step = Step::new(
                    target.at(&c_axes),
                    Mode::Scale(0.5),
                    2.0,
                    [ni, nj, nk],
                    2,
                    [
                        a.__tdsl_operand().at(&a_axes),
                        b.__tdsl_operand().at(&b_axes),
                    ],
                );
                if padded {
                    contract(step, [false; 2]);
                } else {
                    contract_loops(step, [false; 2]);
                }
                bits(&c)
            };
            assert_eq!(product(true), product(false), "{ni}×{nj}×{nk}");
            // d[i, m] = a[i, k] b[l, k] e[l, m] f[m, m]: five loops, padded to eight.
            let e = filled(&[nj, 6], 4);
            let f = filled(&[6, 6], 5);
            let network = |padded: bool| {
                let mut d = Tensor::<f64>::zeros([ni, 6]);
                let target = d.__tdsl_target();
                let axes = [
                    loops(&[0, 1]),
                    loops(&[0, 2]),
                    loops(&[3, 2]),
                    loops(&[3, 1]),
                ];
                let f_axes = loops(&[1, 1]);
                let step = Step::new(
                    target.at(&axes[0]),
                    Mode::Assign,
                    1.0,
                    [ni, 6, nk, nj, 1],
                    2,
                    [
                        a.__tdsl_operand().at(&axes[1]),
                        b.__tdsl_operand().at(&axes[2]),
                        e.__tdsl_operand().at(&axes[3]),
                        f.__tdsl_operand().at(&f_axes),
                    ],
                );
                if padded {
                    contract_network(step, [false; 4], &PlanCache::new());
                } else {
                    network_loops(step, [false; 4], &PlanCache::new());
                }
                bits(&d)
            };
            assert_eq!(network(true), network(false), "network, {ni}×{nj}×{nk}");
        }
        // c[k, j, i] = a[i, j, k], through a copy's tiles: three loops, padded to four.
        let a = filled(&[70, 9, 66], 6);
        let permuted = |padded: bool| {
            let mut c = Tensor::<f64>::zeros([66, 9, 70]);
            let target = c.__tdsl_target();
            let (c_axes, a_axes) = (loops(&[2, 1, 0]), loops(&[0, 1, 2]));
            let step = Step::new(
                target.at(&c_axes),
                Mode::Assign,
                1.0,
                [70, 9, 66],
                3,
                [a.__tdsl_operand().at(&a_axes)],
            );
            if padded {
                copy(step);
            } else {
                evaluate_nest::<f64, 3, 1, AnyNest>(step, |[x]: [f64; 1]| x, true);
            }
            bits(&c)
        };
        assert_eq!(permuted(true), permuted(false));
    }

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
}

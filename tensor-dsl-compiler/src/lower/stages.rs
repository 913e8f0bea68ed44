//! A network step's factors (each factor's loops) → the pairs its written-out loops contract,
//! in order, each into a temporary over the loops still needed, or none where one loop nest
//! over every loop does less work. Invariant: each summed loop is summed by exactly one stage,
//! the first whose result no longer needs it, and the last stage's result is the target.
//!
//! The network kernel orders its pairs at run time from the extents. Written-out loops run only
//! for small steps (a few thousand points), where any order does less work than the single
//! nest: each pair's points are a subset of the nest's. The order here is chosen at compile
//! time as if every extent were equal: fewest loops per pair first, then the smallest result.

/// One pairwise contraction of a written-out network: `result[kept] = Σ_summed a · b`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stage {
    pub inputs: [StageInput; 2],
    /// The loops of its result, in loop order; the last stage's are the target's, `0..n_out`.
    pub kept: Vec<usize>,
    /// The loops it sums over, in loop order.
    pub summed: Vec<usize>,
}

/// An operand of a stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StageInput {
    /// The step's factor of this number, in reading order.
    Factor(usize),
    /// The result of the stage of this number.
    Temporary(usize),
}

/// The extent each loop is costed at when choosing whether to stage: any extent of two or
/// more gives the same choice for the networks users write; four keeps the sums exact.
const NOMINAL_EXTENT: u128 = 4;

/// The stages of a network over `factors` (each factor's loops, loops `0..n_out` being the
/// target's), each temporary of rank at most `max_rank`; `None` where no such order is found
/// or the stages would do more than half the single nest's multiplications (a temporary's
/// writes and reads cost about as much as the multiplications they save).
pub fn written_stages(factors: &[Vec<usize>], n_out: usize, max_rank: usize) -> Option<Vec<Stage>> {
    if factors.len() < 3 {
        return None;
    }
    let mut items: Vec<(StageInput, Vec<usize>)> = factors
        .iter()
        .enumerate()
        .map(|(k, loops)| (StageInput::Factor(k), loops.clone()))
        .collect();
    let mut stages: Vec<Stage> = Vec::new();
    while items.len() > 2 {
        let mut best: Option<Pair> = None;
        for i in 0..items.len() {
            for j in i + 1..items.len() {
                let union = union(&items[i].1, &items[j].1);
                let needed = |l: &usize| {
                    *l < n_out
                        || (items.iter().enumerate())
                            .any(|(k, (_, loops))| k != i && k != j && loops.contains(l))
                };
                let (kept, summed): (Vec<usize>, Vec<usize>) =
                    union.iter().copied().partition(needed);
                let key = (union.len(), kept.len());
                if kept.len() <= max_rank && best.as_ref().is_none_or(|b| key < b.key) {
                    best = Some(Pair {
                        items: (i, j),
                        key,
                        kept,
                        summed,
                    });
                }
            }
        }
        let Pair {
            items: (i, j),
            kept,
            summed,
            ..
        } = best?;
        let (right, left) = (items.remove(j), items.remove(i));
        stages.push(Stage {
            inputs: [left.0, right.0],
            kept: kept.clone(),
            summed,
        });
        items.push((StageInput::Temporary(stages.len() - 1), kept));
    }
    let union = union(&items[0].1, &items[1].1);
    stages.push(Stage {
        inputs: [items[0].0, items[1].0],
        kept: (0..n_out).collect(),
        summed: union.into_iter().filter(|&l| l >= n_out).collect(),
    });
    let all_loops = factors.iter().flatten().copied().max().map_or(0, |l| l + 1);
    let points = |loops: usize| NOMINAL_EXTENT.pow(loops as u32);
    let staged: u128 = stages
        .iter()
        .map(|s| points(s.kept.len() + s.summed.len()))
        .sum();
    let nested = (factors.len() as u128 - 1) * points(all_loops.max(n_out));
    (2 * staged <= nested).then_some(stages)
}

/// A candidate pair of the items left: which two, its cost key (loops, then result rank),
/// and the loops it keeps and sums.
struct Pair {
    items: (usize, usize),
    key: (usize, usize),
    kept: Vec<usize>,
    summed: Vec<usize>,
}

/// The loops of either list, in loop order.
fn union(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut loops: Vec<usize> = a.iter().chain(b).copied().collect();
    loops.sort_unstable();
    loops.dedup();
    loops
}

#[cfg(test)]
mod tests {
    use super::*;
    use StageInput::{Factor, Temporary};

    fn stage(inputs: [StageInput; 2], kept: &[usize], summed: &[usize]) -> Stage {
        Stage {
            inputs,
            kept: kept.to_vec(),
            summed: summed.to_vec(),
        }
    }

    #[test]
    fn a_rotation_contracts_one_index_at_a_time() {
        // r[i, j, k] = q[i, a] q[j, b] q[k, c] t[a, b, c]; loops i j k a b c.
        let factors = [vec![0, 3], vec![1, 4], vec![2, 5], vec![3, 4, 5]];
        let stages = written_stages(&factors, 3, 4).expect("staged");
        assert_eq!(
            stages,
            [
                stage([Factor(0), Factor(3)], &[0, 4, 5], &[3]),
                stage([Factor(1), Temporary(0)], &[0, 1, 5], &[4]),
                stage([Factor(2), Temporary(1)], &[0, 1, 2], &[5]),
            ]
        );
    }

    #[test]
    fn a_chain_keeps_the_index_the_next_factor_needs() {
        // d[i, l] = a[i, j] b[j, k] c[k, l]; loops i l j k.
        let factors = [vec![0, 2], vec![2, 3], vec![1, 3]];
        let stages = written_stages(&factors, 2, 4).expect("staged");
        assert_eq!(
            stages,
            [
                stage([Factor(0), Factor(1)], &[0, 3], &[2]),
                stage([Factor(2), Temporary(0)], &[0, 1], &[3]),
            ]
        );
    }

    #[test]
    fn a_target_index_no_factor_uses_is_looped_by_the_last_stage() {
        // e[i, m] = a[i, j] b[j, k] c[k]; loops i m j k.
        let factors = [vec![0, 2], vec![2, 3], vec![3]];
        let stages = written_stages(&factors, 2, 4).expect("staged");
        assert_eq!(stages.last().unwrap().kept, [0, 1]);
        assert_eq!(stages.iter().map(|s| s.summed.len()).sum::<usize>(), 2);
    }

    #[test]
    fn products_over_the_same_indices_stay_one_nest() {
        // s[i] = a[i, j] b[i, j] c[i, j]: a temporary saves no multiplication.
        let factors = [vec![0, 1], vec![0, 1], vec![0, 1]];
        assert_eq!(written_stages(&factors, 1, 4), None);
    }

    #[test]
    fn temporaries_stay_within_the_rank_limit() {
        // Every pair of the rotation's factors keeps three loops.
        let factors = [vec![0, 3], vec![1, 4], vec![2, 5], vec![3, 4, 5]];
        assert_eq!(written_stages(&factors, 3, 2), None);
        // The chain's first pair keeps two.
        let factors = [vec![0, 2], vec![2, 3], vec![1, 3]];
        assert!(written_stages(&factors, 2, 2).is_some());
    }

    #[test]
    fn every_summed_loop_is_summed_once() {
        let factors = [
            vec![0, 4],
            vec![1, 5],
            vec![2, 6],
            vec![3, 7],
            vec![4, 5, 6, 7],
        ];
        let stages = written_stages(&factors, 4, 4).expect("staged");
        let mut summed: Vec<usize> = stages.iter().flat_map(|s| s.summed.clone()).collect();
        summed.sort_unstable();
        assert_eq!(summed, [4, 5, 6, 7]);
        assert_eq!(stages.len(), 4);
    }
}

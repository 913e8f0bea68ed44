//! A network step's factors (each factor's loops) → the pairs its written-out loops contract,
//! in order, each into a temporary over the loops still needed, or none where one loop nest
//! over every loop does less work. Invariant: each summed loop is summed by exactly one stage,
//! the first whose result no longer needs it, and the last stage's result is the target.
//!
//! The network kernel orders its pairs at run time from the extents. Written-out loops run only
//! for small steps (a few thousand points), where any order does less work than the single
//! nest: each pair's points are a subset of the nest's. The order here is chosen at compile
//! time as if every extent were equal: of all orders, one that multiplies least.

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

/// The most factors whose order is searched: every split of every subset, 3ⁿ pairs of
/// subsets (half a million at 12). A small step of more factors stays one nest.
const MAX_SEARCHED: usize = 12;

/// The most loops a searched network may have: the nominal points of a pair, 4 to the power
/// of its loops, must fit a `u128` many times over. A small step of more loops stays one nest.
const MAX_LOOPS: usize = 48;

/// The stages of a network over `factors` (each factor's loops, loops `0..n_out` being the
/// target's), each temporary of rank at most `max_rank`, in the order that multiplies least
/// if every extent were equal (every split of every subset of the factors, searched from the
/// smallest subsets up: a greedy choice of the cheapest pair first can build an outer
/// product that a later pair must loop over whole); `None` where no such order is found, the
/// factors are more than `MAX_SEARCHED` or a loop is past `MAX_LOOPS`, or the stages
/// would do more than half the single nest's multiplications (a temporary's writes and reads
/// cost about as much as the multiplications they save).
pub fn written_stages(factors: &[Vec<usize>], n_out: usize, max_rank: usize) -> Option<Vec<Stage>> {
    let count = factors.len();
    if !(3..=MAX_SEARCHED).contains(&count)
        || n_out > MAX_LOOPS
        || factors.iter().flatten().any(|&l| l >= MAX_LOOPS)
    {
        return None;
    }
    // Sets of loops as bits (every loop is below `MAX_LOOPS`).
    let factor_loops: Vec<u128> = factors
        .iter()
        .map(|f| f.iter().fold(0, |m, &l| m | 1 << l))
        .collect();
    let target = (1u128 << n_out) - 1;
    let all = (1usize << count) - 1;
    // The loops a subset's result keeps: those of its factors that the target or a factor
    // outside it still needs (the whole set's result is the target).
    let loops_of = |set: usize| {
        (0..count)
            .filter(|f| set >> f & 1 == 1)
            .fold(0, |m, f| m | factor_loops[f])
    };
    let kept = |set: usize| {
        if set == all {
            return target;
        }
        let outside = (0..count)
            .filter(|f| set >> f & 1 == 0)
            .fold(target, |m, f| m | factor_loops[f]);
        loops_of(set) & outside
    };
    // The loops a stage reads an input over: a factor's own (a loop only it uses is summed
    // by its first stage), a temporary's kept ones.
    let held = |set: usize| {
        if set.count_ones() == 1 {
            loops_of(set)
        } else {
            kept(set)
        }
    };
    // Each set's loops as an input and as a result, computed once: the search below reads
    // them for every split.
    let sets: Vec<(u128, u128)> = (0..=all).map(|set| (held(set), kept(set))).collect();
    let points = |loops: u128| NOMINAL_EXTENT.pow(loops.count_ones());
    // best[set]: the least multiplications that make the set's result, and the split that
    // does (a subset holding the set's lowest factor); `None` where no split keeps every
    // temporary within the rank limit.
    let mut best: Vec<Option<(u128, usize)>> = vec![None; all + 1];
    for set in 1..=all {
        if set.count_ones() == 1 {
            best[set] = Some((0, 0));
            continue;
        }
        if set != all && sets[set].1.count_ones() as usize > max_rank {
            continue;
        }
        // Each split once: `part` holds the set's lowest factor, `rest` the others. Of
        // equally good splits, the one whose rest has the fewest and latest factors: the
        // factors are then contracted in reading order where the order is free.
        let lowest = set & set.wrapping_neg();
        let mut chosen: Option<(u128, u32, usize, usize)> = None;
        let mut part = lowest;
        while part != set {
            let rest = set & !part;
            if part & lowest != 0 {
                if let (Some((left, _)), Some((right, _))) = (best[part], best[rest]) {
                    let work = left + right + points(sets[part].0 | sets[rest].0 | sets[set].1);
                    let key = (work, rest.count_ones(), !rest, part);
                    if chosen.is_none_or(|least| key < least) {
                        chosen = Some(key);
                    }
                }
            }
            part = part.wrapping_sub(set) & set;
        }
        best[set] = chosen.map(|(work, _, _, part)| (work, part));
    }
    best[all]?;
    let mut stages = Vec::new();
    let last = build(all, &best, &mut stages, &sets);
    debug_assert_eq!(last, StageInput::Temporary(stages.len() - 1));
    let all_loops = factors.iter().flatten().copied().max().map_or(0, |l| l + 1);
    let staged: u128 = stages
        .iter()
        .map(|s| NOMINAL_EXTENT.pow((s.kept.len() + s.summed.len()) as u32))
        .sum();
    let nested = (count as u128 - 1) * NOMINAL_EXTENT.pow(all_loops.max(n_out) as u32);
    (2 * staged <= nested).then_some(stages)
}

/// Appends the stages that make `set`'s result, each split's two parts first (the part with
/// the lower factor as the stage's first input), and returns what holds the result. `sets`
/// gives each set's loops as an input and as a result.
fn build(
    set: usize,
    best: &[Option<(u128, usize)>],
    stages: &mut Vec<Stage>,
    sets: &[(u128, u128)],
) -> StageInput {
    let Some((_, part)) = best[set] else {
        unreachable!("only searched sets are built")
    };
    if set.count_ones() == 1 {
        return StageInput::Factor(set.trailing_zeros() as usize);
    }
    let rest = set & !part;
    let inputs = [
        build(part, best, stages, sets),
        build(rest, best, stages, sets),
    ];
    let listed = |mask: u128| (0..MAX_LOOPS).filter(move |l| mask >> l & 1 == 1);
    let result = sets[set].1;
    let union = sets[part].0 | sets[rest].0 | result;
    stages.push(Stage {
        inputs,
        kept: listed(result).collect(),
        summed: listed(union & !result).collect(),
    });
    StageInput::Temporary(stages.len() - 1)
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
                stage([Temporary(0), Factor(1)], &[0, 1, 5], &[4]),
                stage([Temporary(1), Factor(2)], &[0, 1, 2], &[5]),
            ]
        );
    }

    #[test]
    fn a_rank_four_rotation_never_builds_an_outer_product() {
        // r[h, i, j, k] = q[h, d] q[i, a] q[j, b] q[k, c] t[d, a, b, c]; loops h i j k d a b
        // c. The cheapest first pair, q[h, d] q[i, a] (four loops), keeps all four, and a
        // later pair then loops over six; contracting t with one q at a time loops over five
        // in each of four stages.
        let factors = [
            vec![0, 4],
            vec![1, 5],
            vec![2, 6],
            vec![3, 7],
            vec![4, 5, 6, 7],
        ];
        let stages = written_stages(&factors, 4, 4).expect("staged");
        assert_eq!(
            stages,
            [
                stage([Factor(0), Factor(4)], &[0, 5, 6, 7], &[4]),
                stage([Temporary(0), Factor(1)], &[0, 1, 6, 7], &[5]),
                stage([Temporary(1), Factor(2)], &[0, 1, 2, 7], &[6]),
                stage([Temporary(2), Factor(3)], &[0, 1, 2, 3], &[7]),
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
                stage([Temporary(0), Factor(2)], &[0, 1], &[3]),
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
    fn a_loop_only_one_factor_uses_is_summed_by_its_first_stage() {
        // s = a[i, j, k] b[i, l] c[i, l]; loops i j k l: j and k only in a.
        let factors = [vec![0, 1, 2], vec![0, 3], vec![0, 3]];
        let stages = written_stages(&factors, 0, 4).expect("staged");
        for stage in &stages {
            for input in stage.inputs {
                let loops = match input {
                    Factor(k) => &factors[k],
                    Temporary(t) => &stages[t].kept,
                };
                let looped = |l: &usize| stage.kept.contains(l) || stage.summed.contains(l);
                assert!(
                    loops.iter().all(looped),
                    "{stage:?} misses a loop of {input:?}"
                );
            }
        }
        let mut summed: Vec<usize> = stages.iter().flat_map(|s| s.summed.clone()).collect();
        summed.sort_unstable();
        assert_eq!(summed, [0, 1, 2, 3]);
    }

    #[test]
    fn every_order_found_keeps_the_invariants() {
        // Networks of 3 to 6 factors over up to 7 loops, drawn by a fixed generator: each
        // stage loops over its inputs' loops, each loop outside the target is summed exactly
        // once, each temporary is read once, and the last stage makes the target.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |bound: usize| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as usize % bound
        };
        let mut staged = 0;
        for _ in 0..2000 {
            let loops = 2 + next(6);
            let n_out = next(loops.min(4) + 1);
            let factors: Vec<Vec<usize>> = (0..3 + next(4))
                .map(|_| {
                    let mut f: Vec<usize> = (0..1 + next(3)).map(|_| next(loops)).collect();
                    f.sort_unstable();
                    f.dedup();
                    f
                })
                .collect();
            let Some(stages) = written_stages(&factors, n_out, 4) else {
                continue;
            };
            staged += 1;
            let mut reads = vec![0; stages.len()];
            let mut summed = Vec::new();
            for stage in &stages {
                assert!(stage.kept.len() <= 4 || stage == stages.last().unwrap());
                for input in stage.inputs {
                    let loops = match input {
                        Factor(k) => &factors[k],
                        Temporary(t) => {
                            reads[t] += 1;
                            &stages[t].kept
                        }
                    };
                    let looped = |l: &usize| stage.kept.contains(l) || stage.summed.contains(l);
                    assert!(loops.iter().all(looped), "{factors:?}: {stage:?}");
                }
                summed.extend(stage.summed.iter().copied());
            }
            assert_eq!(stages.last().unwrap().kept, (0..n_out).collect::<Vec<_>>());
            assert!(
                reads[..stages.len() - 1].iter().all(|&r| r == 1),
                "{factors:?}"
            );
            summed.sort_unstable();
            let mut outside: Vec<usize> = factors
                .iter()
                .flatten()
                .copied()
                .filter(|&l| l >= n_out)
                .collect();
            outside.sort_unstable();
            outside.dedup();
            assert_eq!(summed, outside, "{factors:?}");
        }
        assert!(staged > 100, "only {staged} networks staged");
    }

    #[test]
    fn twelve_factors_are_searched_and_thirteen_stay_one_nest() {
        // A chain a0[l0, l1] a1[l1, l2] … over 13 or 14 loops, target its two ends.
        let chain = |factors: usize| -> Vec<Vec<usize>> {
            let loop_at = |k: usize| match k {
                0 => 0,
                k if k == factors => 1,
                k => k + 1,
            };
            (0..factors)
                .map(|k| vec![loop_at(k), loop_at(k + 1)])
                .collect()
        };
        let stages = written_stages(&chain(12), 2, 2).expect("staged");
        assert_eq!(stages.len(), 11);
        assert_eq!(written_stages(&chain(13), 2, 2), None);
        // Past the loops whose nominal work fits a number: one nest, no overflow.
        let wide = [vec![0, 60], vec![60, 61], vec![61, 1]];
        assert_eq!(written_stages(&wide, 2, 4), None);
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
}

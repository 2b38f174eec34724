//! Sorted runs of geometrically decreasing size: the one policy behind every
//! growing set of tuples in Fixlog.
//!
//! A relation that grows by a delta per iteration must not be rewritten whole each
//! time (transitive closure of SF.cedge: 80M tuples, 287 iterations). Instead it is a
//! stack of disjoint sorted runs, largest first, each at least `growth` times the size
//! of the next; adding a run merges the top of the stack while that invariant is
//! broken, as the levels of an LSM tree. Each tuple is then copied O(log_growth n)
//! times over its life, and a relation of n tuples has O(log_growth n) runs for
//! operators to visit.
//!
//! The same function keeps the CPU backend's relations and indexes, the CUDA backend's
//! relations and indexes on the device, and the driver's stack of a rule's new tuples;
//! each picks its [`RunPolicy`]: the growth factor (a larger factor: fewer runs to
//! probe, more copying) and, where memory is scarce (a GPU), a cap on how large a
//! merged run may be relative to the whole: a merge holds its inputs and its output at
//! once, so merging everything into one run would need twice the relation's memory;
//! with runs capped at half the relation, a merge needs at most half more, and the
//! runs stay few (at most a handful above a quarter of the relation, then
//! geometrically smaller ones).

use crate::backend::ExecResult;

/// How a stack of runs grows; see the module docs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RunPolicy {
    /// Each run is at least `growth` times the size of the run on top of it.
    pub growth: usize,
    /// A merge may make a run of at most this share of all the rows (`1.0`: no cap).
    pub max_share: f64,
}

impl RunPolicy {
    /// Geometric growth, no cap.
    pub const fn geometric(growth: usize) -> RunPolicy {
        RunPolicy {
            growth,
            max_share: 1.0,
        }
    }
}

/// Pushes `run` onto `runs` (largest first) and merges the two smallest runs while the
/// one below is less than `policy.growth` times the size of the one on top (and the
/// merged run stays within `policy.max_share` of all the rows). Empty runs are not
/// pushed. `merge(below, top)` must return their union.
pub fn push_run<T>(
    runs: &mut Vec<T>,
    run: T,
    policy: RunPolicy,
    len: impl Fn(&T) -> usize,
    merge: impl FnMut(T, T) -> ExecResult<T>,
) -> ExecResult<()> {
    if len(&run) == 0 {
        return Ok(());
    }
    runs.push(run);
    settle_runs(runs, policy, len, merge)
}

/// Pushes `run` after settling the runs below it ([`settle_runs`]), without merging
/// it: for a run that something else still holds (a delta, which the driver keeps
/// for the next iteration as well as adding it to the full relation). Merging it now
/// would copy rows that then sit in memory twice until that holder lets go; left on
/// top, it is merged by a later push, when the invariant asks and it may be the
/// merge's alone. The stack then breaks the invariant by at most its top run.
pub fn push_run_unmerged<T>(
    runs: &mut Vec<T>,
    run: T,
    policy: RunPolicy,
    len: impl Fn(&T) -> usize,
    merge: impl FnMut(T, T) -> ExecResult<T>,
) -> ExecResult<()> {
    if len(&run) == 0 {
        return Ok(());
    }
    settle_runs(runs, policy, &len, merge)?;
    runs.push(run);
    Ok(())
}

/// Merges the two smallest runs of `runs` while the one below is less than
/// `policy.growth` times the size of the one on top (and the merged run stays within
/// `policy.max_share` of all the rows).
pub fn settle_runs<T>(
    runs: &mut Vec<T>,
    policy: RunPolicy,
    len: impl Fn(&T) -> usize,
    mut merge: impl FnMut(T, T) -> ExecResult<T>,
) -> ExecResult<()> {
    let total: usize = runs.iter().map(&len).sum();
    let cap = (total as f64 * policy.max_share.clamp(0.0, 1.0)) as usize;
    while runs.len() >= 2 {
        let n = runs.len();
        let (below, top) = (len(&runs[n - 2]), len(&runs[n - 1]));
        if below >= policy.growth.saturating_mul(top)
            || (below + top > cap && policy.max_share < 1.0)
        {
            break;
        }
        let (Some(top), Some(below)) = (runs.pop(), runs.pop()) else {
            break;
        };
        runs.push(merge(below, top)?);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_shrink_geometrically_and_stay_few() {
        for growth in [2usize, 4] {
            let mut runs: Vec<Vec<u32>> = Vec::new();
            let mut next = 0u32;
            for step in 0..2000u32 {
                let size = 1 + (step * 7919) % 50;
                let run: Vec<u32> = (next..next + size).collect();
                next += size;
                push_run(
                    &mut runs,
                    run,
                    RunPolicy::geometric(growth),
                    |r| r.len(),
                    |mut a, b| {
                        a.extend(b);
                        Ok(a)
                    },
                )
                .unwrap();
                for w in runs.windows(2) {
                    assert!(w[0].len() >= growth * w[1].len());
                }
            }
            let total: usize = runs.iter().map(|r| r.len()).sum();
            assert_eq!(total, next as usize);
            let bound = (total as f64).log(growth as f64).ceil() as usize + 1;
            assert!(runs.len() <= bound, "{} runs for {total}", runs.len());
        }
    }

    #[test]
    fn capped_merges_stay_within_half_and_runs_stay_few() {
        // Deltas that grow and shrink, as the iterations of a transitive closure.
        let policy = RunPolicy {
            growth: 2,
            max_share: 0.5,
        };
        let mut runs: Vec<Vec<u32>> = Vec::new();
        let mut next = 0u32;
        for step in 0..3000u32 {
            let size = 1 + (step * 7919) % 97 + (step % 400) * 20;
            let run: Vec<u32> = (next..next + size).collect();
            next += size;
            let mut largest_merge = 0;
            push_run(
                &mut runs,
                run,
                policy,
                |r| r.len(),
                |mut a, b| {
                    a.extend(b);
                    largest_merge = largest_merge.max(a.len());
                    Ok(a)
                },
            )
            .unwrap();
            let total: usize = runs.iter().map(|r| r.len()).sum();
            assert!(
                largest_merge <= total / 2 + 1,
                "merged {largest_merge} of {total}"
            );
            let bound = 2 * (total as f64).log2().ceil() as usize + 4;
            assert!(runs.len() <= bound, "{} runs for {total}", runs.len());
        }
        let total: usize = runs.iter().map(|r| r.len()).sum();
        assert_eq!(total, next as usize);
    }

    #[test]
    fn unmerged_pushes_break_the_invariant_by_the_top_run_only() {
        // Each run is pushed unmerged (a delta something else still holds); the
        // next push merges it when the invariant asks.
        for growth in [2usize, 4] {
            let policy = RunPolicy::geometric(growth);
            let mut runs: Vec<Vec<u32>> = Vec::new();
            let mut next = 0u32;
            let mut merges = 0;
            for step in 0..1500u32 {
                let size = 1 + (step * 7919) % 61 + (step % 300) * 3;
                let run: Vec<u32> = (next..next + size).collect();
                next += size;
                push_run_unmerged(
                    &mut runs,
                    run,
                    policy,
                    |r| r.len(),
                    |mut a, b| {
                        merges += 1;
                        a.extend(b);
                        Ok(a)
                    },
                )
                .unwrap();
                assert_eq!(runs.last().map(|r| r.len()), Some(size as usize));
                let below = &runs[..runs.len() - 1];
                for w in below.windows(2) {
                    assert!(w[0].len() >= growth * w[1].len());
                }
                let total: usize = runs.iter().map(|r| r.len()).sum();
                let bound = (total as f64).log(growth as f64).ceil() as usize + 2;
                assert!(runs.len() <= bound, "{} runs for {total}", runs.len());
            }
            assert!(merges > 0);
            let all: Vec<u32> = runs.concat();
            assert_eq!(all, (0..next).collect::<Vec<_>>());
        }
    }

    #[test]
    fn empty_runs_are_not_pushed() {
        let mut runs = vec![vec![1u32]];
        push_run(
            &mut runs,
            vec![],
            RunPolicy::geometric(4),
            |r| r.len(),
            |_, _| unreachable!(),
        )
        .unwrap();
        assert_eq!(runs, vec![vec![1]]);
    }
}

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
//! each picks its growth factor (a larger factor: fewer runs to probe, more copying).

use crate::backend::ExecResult;

/// Pushes `run` onto `runs` (largest first) and merges the two smallest runs while the
/// one below is less than `growth` times the size of the one on top. Empty runs are
/// not pushed. `merge(below, top)` must return their union.
pub fn push_run<T>(
    runs: &mut Vec<T>,
    run: T,
    growth: usize,
    len: impl Fn(&T) -> usize,
    mut merge: impl FnMut(T, T) -> ExecResult<T>,
) -> ExecResult<()> {
    if len(&run) == 0 {
        return Ok(());
    }
    runs.push(run);
    while runs.len() >= 2 {
        let n = runs.len();
        if len(&runs[n - 2]) >= growth.saturating_mul(len(&runs[n - 1])) {
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
                    growth,
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
    fn empty_runs_are_not_pushed() {
        let mut runs = vec![vec![1u32]];
        push_run(&mut runs, vec![], 4, |r| r.len(), |_, _| unreachable!()).unwrap();
        assert_eq!(runs, vec![vec![1]]);
    }
}

//! Running a pipeline piece by piece ([`Driver::run_split`]): cutting batches that
//! would exceed the backend's budget or memory, gathering a join's outputs into one
//! set, and running again after running out of memory. Apart from the driver's loop,
//! which only asks for a rule's pipeline to run.

use super::lower::{takes_sorted, POp};
use super::Driver;
use crate::backend::{internal, Absorbed, Backend, ExecError, ExecResult};
use crate::runs::{push_run, RunPolicy};
use fixlog_logical::RelId;
use std::time::Instant;

/// Growth of the stack of a rule's new tuples within one iteration (see
/// [`crate::runs`]): merging often keeps the stack short, and the runs are small.
const NEW_RUNS: RunPolicy = RunPolicy::geometric(2);

/// Runs `f` once more when it runs out of memory (`f` must not consume its inputs): a
/// backend makes room after an operator was refused memory (the CUDA backend moves
/// relations to host memory, the CPU backend spills). Also says whether it ran again.
pub(super) fn once_more<T>(mut f: impl FnMut() -> ExecResult<T>) -> (ExecResult<T>, bool) {
    match f() {
        Err(ExecError::OutOfMemory(_)) => (f(), true),
        done => (done, false),
    }
}

/// Where in a pipeline [`Driver::run_split`] runs (see there).
#[derive(Clone, Copy, Debug)]
pub(super) enum Level {
    /// The operators after the pipeline's first: pieces start at `first_piece_rows`
    /// and adapt to the largest batch made, against `max_batch_rows`. `sort_on_cut`:
    /// sort and deduplicate the input before it is first cut into pieces (a scan
    /// whose first column the next join carries: see `carried_first`); an input
    /// that runs whole needs no order, and one larger than the backend can sort
    /// ([`PieceBudget::max_sort_rows`]) is cut unsorted: the order only saves work
    /// (SG of p2p-Gnutella31 on the CPU under a 12 GiB limit ran out of memory sorting
    /// an iteration's delta whole).
    Top {
        first_piece_rows: usize,
        max_batch_rows: usize,
        sort_on_cut: bool,
        /// The pieces derive disjoint tuples (a full-first plan's, sorted on the head's
        /// first column): the next join's gathered input is flushed at
        /// `max_batch_rows`, and operators are asked to keep their batches under it.
        disjoint: bool,
    },
    /// Further down: a batch runs whole unless its operator asks for smaller pieces or
    /// runs out of memory. (The bound of a disjoint top level held below it too in
    /// round 29: SG CA-HepTh by size without a limit peaked at 0.96 GiB, not 1.13, but
    /// under 1 GiB it took 0.76-0.80 s, not 0.44-0.56: most likely its last joins,
    /// cut smaller, each read the relation moved to host memory; docs/gpu-results.md.)
    Below,
}

impl<B: Backend> Driver<'_, B> {
    /// Runs `ops` over `input` piece by piece and absorbs the results into `acc`;
    /// returns the largest batch made. The first operator runs on pieces of `input`;
    /// each piece's output goes through the rest in the same way, one level down.
    /// `input` comes sorted and deduplicated where the first operator is a join marked
    /// `sort_input` (the caller's doing: see [`takes_sorted`]).
    ///
    /// Where the next operator is such a join, the pieces' outputs are not run on one
    /// by one: each is sorted, deduplicated and added to one set (a stack of sorted
    /// runs), and the rest of the pipeline runs over that set when all pieces are done
    /// (or when it grows past the backend's batch budget). So cutting this level's
    /// input into pieces does not cut the next join's input: a tuple that several
    /// pieces make is joined once, as without pieces (SG's first join, whose pieces
    /// each deduplicated alone made the second join derive up to 3.7 times the tuples:
    /// docs/gpu-results.md, round 12).
    ///
    /// At the top level the pieces start at the backend's first piece size and adapt
    /// to the largest batch the rest of the pipeline made (so no batch of a piece
    /// exceeds the budget, for backends that cannot tell in advance). At every level a
    /// piece is run again smaller when its operator asks for it
    /// ([`ExecError::BatchTooLarge`]: the output would exceed the backend's budget) or
    /// runs out of memory. Splitting at the operator that asks, not at the pipeline's
    /// input, keeps the batches before it whole: a join's sorted and deduplicated input
    /// stays deduplicated as a whole, so the join derives no more than unsplit.
    ///
    /// A piece whose tuples were absorbed before a deeper level ran out of memory may
    /// be absorbed twice; `acc` is a union, so that only costs time.
    pub(super) fn run_split(
        &mut self,
        head: RelId,
        ops: &[POp],
        input: B::Batch,
        level: Level,
        acc: &mut Vec<B::Relation>,
        only_new: bool,
    ) -> ExecResult<usize> {
        let b = self.backend;
        let (op, rest) = ops
            .split_first()
            .ok_or_else(|| internal("empty pipeline"))?;
        // The next join's input, gathered over all pieces (see above), and the most
        // rows it may gather before the rest of the pipeline runs over it.
        let gathers = takes_sorted(rest);
        let mut gathered: Vec<B::Relation> = Vec::new();
        // A top level whose pieces derive disjoint tuples bounds its operators' batches
        // and the gathered set by its own size (operators below the top by the
        // backend's budget).
        let max_rows = match level {
            Level::Top {
                disjoint: true,
                max_batch_rows,
                ..
            } => Some(max_batch_rows),
            _ => None,
        };
        let gather_limit = match max_rows {
            _ if !gathers => usize::MAX,
            Some(rows) => rows,
            None => b.piece_budget().max_batch_rows.max(1),
        };
        let (mut piece_rows, mut sort_on_cut) = match level {
            Level::Top {
                first_piece_rows,
                sort_on_cut,
                ..
            } => (
                first_piece_rows,
                sort_on_cut && b.batch_len(&input) <= b.piece_budget().max_sort_rows,
            ),
            Level::Below => (usize::MAX, false),
        };
        // Where joins say what fits, a disjoint top level's input is ordered before its
        // first piece runs, cut or not: where its operator refuses a piece, the rows it
        // says fit are then a prefix of the order the pieces must follow, so the first
        // piece may be as large as the backend's (a refusal costs a count) rather than
        // start small and grow (SG ego-Facebook's full-first plan: 184 joins, 25 delta
        // first; round 29).
        let sort_uncut = matches!(level, Level::Top { disjoint: true, .. })
            && b.piece_budget().joins_say_what_fits;
        let mut peak = 0;
        // Whether the last piece was a single tuple that ran out of memory (it runs
        // once more before that is an error).
        let mut single_retried = false;
        // Pieces still to run, the next on top; the bottom one is the unsplit rest.
        let mut pending = vec![input];
        // A prefix an operator said fits (see below): it runs whole, whatever
        // `piece_rows` says.
        let mut fitted: Option<B::Batch> = None;
        while let Some((mut top, whole)) = match fitted.take() {
            Some(prefix) => Some((prefix, true)),
            None => pending.pop().map(|p| (p, false)),
        } {
            let mut len = b.batch_len(&top);
            if len == 0 {
                continue;
            }
            if sort_on_cut && (len > piece_rows || sort_uncut) {
                // The first piece, so `top` is the whole input (never a fitted prefix:
                // those come after it): order it first.
                sort_on_cut = false;
                top = b
                    .sort_unique(top)
                    .and_then(|sorted| b.relation_batch(&sorted))
                    .map_err(|e| self.deriving_at(level, head, e))?;
                len = b.batch_len(&top);
            }
            let piece = if len > piece_rows && !whole {
                let (piece, rest_rows) = b
                    .split_batch(top, piece_rows)
                    .map_err(|e| self.deriving_at(level, head, e))?;
                pending.push(rest_rows);
                piece
            } else {
                top
            };
            let n = b.batch_len(&piece);
            let t = Instant::now();
            let outcome = if rest.is_empty() && only_new {
                self.run_absorbed_op(op, &piece, n > 1, max_rows, head)
            } else {
                self.run_op(op, Some(&piece), n > 1, max_rows)
                    .map(Absorbed::Rows)
            };
            let outcome = outcome.and_then(|out| {
                self.stats.phases.join += t.elapsed();
                let out = match out {
                    Absorbed::Rows(out) => out,
                    Absorbed::New { tuples, made } => {
                        // (Deduplicated and subtracted as it was made: counted as
                        // joining.)
                        self.stats.derived += made;
                        let kept = b.relation_len(&tuples);
                        if kept > 0 {
                            self.push_whole(acc, tuples)?;
                        }
                        return Ok(kept);
                    }
                };
                let made = b.batch_len(&out);
                let below = if rest.is_empty() {
                    // (`absorb` counts its own time, as deduplication.)
                    self.absorb(head, out, acc, only_new)?;
                    0
                } else if gathers {
                    self.gather(out, &mut gathered)?;
                    0
                } else {
                    self.run_split(head, rest, out, Level::Below, acc, only_new)?
                };
                Ok(made.max(below))
            });
            match outcome {
                Ok(made) => {
                    single_retried = false;
                    peak = peak.max(made);
                    if let Level::Top { max_batch_rows, .. } = level {
                        if made > max_batch_rows {
                            piece_rows = (piece_rows as u128 * max_batch_rows as u128
                                / made as u128)
                                .max(1) as usize;
                        } else if made < max_batch_rows / 4 {
                            piece_rows = piece_rows.saturating_mul(2);
                        }
                    }
                }
                Err(ExecError::BatchTooLarge { rows, limit, fits }) if n > 1 => {
                    // The operator counted its output before making it: run the piece
                    // again in pieces whose output should fit (a little under, for
                    // uneven fan-out), and go on with that size. Where the operator
                    // said how many leading rows fit, those run next as one piece
                    // (not where the input is still to be sorted before its first
                    // cut: the rows would move).
                    self.stats.pieces_split += 1;
                    let estimate =
                        (n as u128 * limit as u128 / rows.max(1) as u128 * 7 / 8) as usize;
                    match fits.filter(|&k| k > 0 && k < n && !sort_on_cut) {
                        Some(k) => {
                            let (prefix, rest_rows) = b
                                .split_batch(piece, k)
                                .map_err(|e| self.deriving_at(level, head, e))?;
                            pending.push(rest_rows);
                            fitted = Some(prefix);
                            piece_rows = (k * 7 / 8).max(1);
                        }
                        None => {
                            piece_rows = estimate.clamp(1, n - 1);
                            pending.push(piece);
                        }
                    }
                }
                Err(ExecError::OutOfMemory(_)) if n > 1 => {
                    // Run it again in two halves (cut at the top of the loop), and go
                    // on smaller.
                    self.stats.memory_retries += 1;
                    pending.push(piece);
                    piece_rows = (n / 2).max(1);
                }
                Err(ExecError::OutOfMemory(_))
                    if matches!(level, Level::Top { .. }) && !single_retried =>
                {
                    // One tuple: once more, as the backend makes room after a refusal
                    // (moving relations to host memory, spilling).
                    single_retried = true;
                    self.stats.memory_retries += 1;
                    pending.push(piece);
                }
                Err(ExecError::OutOfMemory(why)) if matches!(level, Level::Top { .. }) => {
                    return Err(ExecError::OutOfMemory(format!(
                        "{why}; while deriving `{}` from a single input tuple",
                        self.plan.relations[head].name
                    )));
                }
                // (Below the top, a single tuple that runs out of memory is the upper
                // level's to split.)
                Err(e) => return Err(e),
            }
            let gathered_rows: usize = gathered.iter().map(|r| b.relation_len(r)).sum();
            if gathered_rows > gather_limit {
                let below = self
                    .run_gathered(head, rest, &mut gathered, acc, only_new)
                    .map_err(|e| self.deriving_at(level, head, e))?;
                peak = peak.max(below);
            }
        }
        if !gathered.is_empty() {
            let below = self
                .run_gathered(head, rest, &mut gathered, acc, only_new)
                .map_err(|e| self.deriving_at(level, head, e))?;
            peak = peak.max(below);
        }
        Ok(peak)
    }

    /// Runs `ops` over the set gathered so far (emptying it); the largest batch made.
    /// An error here is not the gathering level's to split: the set is whole and
    /// deduplicated, and the level below splits it as its operators ask. Out of
    /// memory, it runs once more over the same set: a backend makes room after an
    /// operator was refused memory (the CUDA backend moves relations to host memory,
    /// the CPU backend spills), and tuples absorbed twice only cost time.
    fn run_gathered(
        &mut self,
        head: RelId,
        ops: &[POp],
        gathered: &mut Vec<B::Relation>,
        acc: &mut Vec<B::Relation>,
        only_new: bool,
    ) -> ExecResult<usize> {
        // Merged into one run first, in place of the stack, so that the stack's runs
        // are not held beside their union while the rest of the pipeline runs.
        let (merged, retried) = once_more(|| self.merged(gathered.clone()));
        self.stats.memory_retries += retried as usize;
        let set = merged?;
        gathered.clear();
        let (result, retried) = once_more(|| {
            let next = self.backend.relation_batch(&set)?;
            self.run_split(head, ops, next, Level::Below, acc, only_new)
        });
        self.stats.memory_retries += retried as usize;
        result
    }

    /// Sorts and deduplicates a join's output and adds it to `gathered` (a stack of
    /// sorted runs, merged as they grow). On failure `gathered` is as it was: the
    /// caller runs the piece again in halves after running out of memory, and adding
    /// a piece twice only costs time.
    fn gather(&mut self, out: B::Batch, gathered: &mut Vec<B::Relation>) -> ExecResult<()> {
        let b = self.backend;
        let t = Instant::now();
        let run = b.sort_unique(out)?;
        self.push_whole(gathered, run)?;
        self.stats.phases.join += t.elapsed();
        Ok(())
    }

    /// Pushes `run` onto `runs` (a stack of sorted runs, merged as they grow), or
    /// leaves `runs` as it was on failure: a merge that fails has consumed the runs it
    /// merged, and the caller runs the piece again (in halves) after running out of
    /// memory, so the tuples of earlier pieces must not be lost (relations clone
    /// cheaply: shared storage).
    pub(super) fn push_whole(
        &self,
        runs: &mut Vec<B::Relation>,
        run: B::Relation,
    ) -> ExecResult<()> {
        let b = self.backend;
        let before = runs.clone();
        let pushed = push_run(
            runs,
            run,
            NEW_RUNS,
            |r| b.relation_len(r),
            |below, top| b.merge(&below, &top),
        );
        if pushed.is_err() {
            *runs = before;
        }
        pushed
    }

    /// The union of gathered runs, as one sorted, deduplicated relation.
    fn merged(&mut self, mut runs: Vec<B::Relation>) -> ExecResult<B::Relation> {
        let b = self.backend;
        let t = Instant::now();
        let mut all = runs
            .pop()
            .ok_or_else(|| internal("nothing gathered to merge"))?;
        while let Some(below) = runs.pop() {
            all = b.merge(&below, &all)?;
        }
        self.stats.phases.join += t.elapsed();
        Ok(all)
    }

    /// [`Self::deriving`] at the top of a pipeline; below it, the error goes up as it
    /// is (the top says where, once).
    fn deriving_at(&self, level: Level, rel: RelId, e: ExecError) -> ExecError {
        match level {
            Level::Top { .. } => self.deriving(rel, e),
            Level::Below => e,
        }
    }
}

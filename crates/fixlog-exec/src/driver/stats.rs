//! What a run returns: the tuples of its relations and its statistics (strata,
//! phases, operators, memory). Apart from the driver, which only fills them in.

use crate::tuples::Tuples;
use std::time::Duration;

#[derive(Clone, Debug, Default)]
pub struct StratumStats {
    pub relations: Vec<String>,
    pub recursive: bool,
    /// Loop passes, counting the last one that derived nothing (0 if not recursive).
    pub iterations: usize,
    pub time: Duration,
}

/// Time per kind of operator, summed over the run.
#[derive(Clone, Debug, Default)]
pub struct PhaseTimes {
    /// Loading facts into relations.
    pub load: Duration,
    /// Preparing the operators (compiling kernels on the GPU).
    pub prepare: Duration,
    /// Scans, joins, anti-joins, filters, aggregates.
    pub join: Duration,
    /// Sorting and deduplicating rule results and subtracting `full` from them.
    pub dedup: Duration,
    /// `full := full ∪ new`.
    pub merge: Duration,
    /// Building and extending indexes.
    pub index: Duration,
    /// Copying the results out of the backend.
    pub unload: Duration,
}

#[derive(Clone, Debug, Default)]
pub struct RunStats {
    /// The backend's name (`cpu`, `cuda`).
    pub backend: String,
    /// Where it ran: threads for the CPU, the device for CUDA.
    pub device: String,
    pub strata: Vec<StratumStats>,
    /// (relation, size) in declaration order.
    pub relation_sizes: Vec<(String, usize)>,
    /// (relation, tuples) for each recursive relation, in declaration order: the most
    /// tuples its versions held together at the end of an iteration, when `full`
    /// (its delta included), the delta the iteration joined and the new tuples it
    /// derived are all there at once (GDlog's full, delta and new versions). A memory
    /// aim stated against a relation's versions reads this figure; against its final
    /// size, [`RunStats::relation_sizes`].
    pub versions_peak: Vec<(String, usize)>,
    pub phases: PhaseTimes,
    /// Tuples produced by rules before deduplication (how much work the joins did).
    pub derived: usize,
    /// Pieces run again in halves after running out of memory.
    pub memory_retries: usize,
    /// Pieces run again in smaller pieces because an operator's output would have
    /// exceeded the backend's batch budget ([`ExecError::BatchTooLarge`]).
    ///
    /// [`ExecError::BatchTooLarge`]: crate::ExecError::BatchTooLarge
    pub pieces_split: usize,
    /// The most memory the backend held at once, in bytes, where it measures it
    /// (device memory: in use and cached by its pool).
    pub peak_memory: Option<usize>,
    /// The most of it in use at once.
    pub peak_memory_in_use: Option<usize>,
    /// Which operator reached that peak, in words (the GPU backend says).
    pub peak_memory_where: Option<String>,
    /// The most bytes of relations the backend kept in host memory because its own
    /// memory was short (rows of relations larger than a GPU's memory).
    pub peak_spilled: Option<usize>,
    /// The CPU backend's memory budget and what it spilled to disk.
    pub host_memory: Option<HostMemoryStats>,
    /// Where the backend's time went, by operator, most first (the GPU backend says:
    /// the host's wall time of each call, waiting for the device included).
    pub operators: Vec<OperatorTime>,
    pub total: Duration,
}

/// The calls of one kind of backend operator in a run (see [`RunStats::operators`]).
#[derive(Clone, Debug, Default)]
pub struct OperatorTime {
    /// The operator (`join`, `sort_unique`, `merge`, ...).
    pub name: &'static str,
    pub calls: usize,
    /// Input rows over all calls.
    pub rows: usize,
    pub time: Duration,
}

/// The CPU backend's memory: the bytes its budget counted (relations, indexes and
/// batches in memory) and what it wrote to files.
#[derive(Clone, Debug, Default)]
pub struct HostMemoryStats {
    /// `--memory-limit`, if one was given.
    pub limit: Option<usize>,
    /// The most bytes the budget counted at once.
    pub peak_in_use: usize,
    /// Spilling runs to disk, where it was on.
    pub spill: Option<DiskSpillStats>,
}

/// Runs of relations and indexes written to files (the CPU backend's spilling).
#[derive(Clone, Debug, Default)]
pub struct DiskSpillStats {
    /// The temporary directory the run's spill directory was (or would be) made in.
    pub temp_dir: String,
    /// Spilling starts when the budget's bytes in use pass this.
    pub high_mark: usize,
    /// The most bytes in files at once.
    pub peak_bytes: usize,
    /// Bytes written to files in all.
    pub written_bytes: usize,
    /// Files written (spilled runs and merge outputs).
    pub files: usize,
    /// Why spilling stopped (a full disk, say), if it did.
    pub error: Option<String>,
}

impl RunStats {
    /// Iterations of the stratum that computes `relation`.
    pub fn iterations_of(&self, relation: &str) -> Option<usize> {
        self.strata
            .iter()
            .find(|s| s.relations.iter().any(|r| r == relation))
            .map(|s| s.iterations)
    }
}

pub struct RunResult {
    /// Every relation's tuples, sorted by raw value, deduplicated (`None` for those
    /// [`DriverOptions::keep_rows`] did not keep; their sizes are in the stats).
    ///
    /// [`DriverOptions::keep_rows`]: super::DriverOptions::keep_rows
    pub relations: Vec<Option<Tuples>>,
    pub stats: RunStats,
}

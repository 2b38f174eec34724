//! `storage::host_run`: rows made by another backend (a GPU's results) come to the host
//! charged to the run's budget, in memory where they fit and in a spill file where
//! they do not, never over `--memory-limit`.

use fixlog_cpu::storage::host_run;
use fixlog_cpu::{CpuOptions, HostMemory};
use fixlog_exec::tuples::SharedRows;
use fixlog_exec::ExecError;

/// `n` values read part by part from a generator (as a device download would),
/// recording the largest part asked for.
fn values(
    n: usize,
    largest: &mut usize,
) -> impl FnMut(usize, usize) -> fixlog_exec::ExecResult<Vec<u32>> + '_ {
    move |start, len| {
        assert!(start + len <= n);
        *largest = (*largest).max(len);
        Ok((start..start + len)
            .map(|i| (i as u32).wrapping_mul(2_654_435_761))
            .collect())
    }
}

fn expected(n: usize) -> Vec<u32> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761))
        .collect()
}

#[test]
fn rows_that_fit_stay_in_memory_and_are_charged() {
    let dir = tempfile::tempdir().unwrap();
    let memory = HostMemory::new(&CpuOptions {
        memory_limit: Some(64 << 20),
        temp_dir: Some(dir.path().to_path_buf()),
        ..CpuOptions::default()
    });
    let _on = memory.enter();
    let mut largest = 0;
    let run = host_run(1 << 20, values(1 << 20, &mut largest)).unwrap();
    assert!(!run.in_file());
    assert_eq!(run.values(), &expected(1 << 20)[..]);
    assert_eq!(largest, 1 << 20, "read in one part");
    assert!(memory.stats().peak_in_use >= 4 << 20);
}

#[test]
fn rows_larger_than_the_limit_go_to_a_file_in_parts_within_it() {
    let limit = 1 << 20;
    let dir = tempfile::tempdir().unwrap();
    let memory = HostMemory::new(&CpuOptions {
        memory_limit: Some(limit),
        temp_dir: Some(dir.path().to_path_buf()),
        ..CpuOptions::default()
    });
    let n = 3 << 20; // 12 MiB of values
    let _on = memory.enter();
    let mut largest = 0;
    let run = host_run(n, values(n, &mut largest)).unwrap();
    assert!(run.in_file());
    assert_eq!(run.values(), &expected(n)[..]);
    assert!(largest * 4 <= limit / 4, "a part of {largest} values");
    let stats = memory.stats();
    assert!(stats.peak_in_use <= limit, "{stats:?}");
    let spill = stats.spill.expect("spilling is on");
    assert_eq!(spill.written_bytes, n * 4);
    assert_eq!(spill.files, 1);
}

#[test]
fn without_spilling_rows_over_the_limit_are_an_out_of_memory_error() {
    let memory = HostMemory::new(&CpuOptions {
        memory_limit: Some(1 << 20),
        no_spill: true,
        ..CpuOptions::default()
    });
    let _on = memory.enter();
    let mut largest = 0;
    match host_run(1 << 20, values(1 << 20, &mut largest)) {
        Err(ExecError::OutOfMemory(why)) => assert!(why.contains("4.0 MiB"), "{why}"),
        other => panic!(
            "expected running out of memory, got {:?}",
            other.map(|r| r.len())
        ),
    }
    assert_eq!(largest, 0, "nothing was read");
}

#[test]
fn rows_that_would_pass_the_low_mark_go_to_a_file() {
    // 600 KiB fit under a 1 MiB limit (and under the three quarters where operators
    // spill), but holding them would pass the spill state's low mark (half): they go
    // to a file, leaving room for whoever reads them (writing the outputs).
    let dir = tempfile::tempdir().unwrap();
    let memory = HostMemory::new(&CpuOptions {
        memory_limit: Some(1 << 20),
        temp_dir: Some(dir.path().to_path_buf()),
        ..CpuOptions::default()
    });
    let n = 600 << 8;
    let _on = memory.enter();
    let mut largest = 0;
    let run = host_run(n, values(n, &mut largest)).unwrap();
    assert!(run.in_file());
    assert_eq!(run.values(), &expected(n)[..]);
    // A small run stays in memory.
    let small = host_run(1000, values(1000, &mut largest)).unwrap();
    assert!(!small.in_file());
}

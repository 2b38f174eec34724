//! Full-first plans against delta-first ones, through the library API (so what it
//! prints is the product's figures, not a hand-wired driver's): runs one program with
//! `RunOptions::full_first` at the product's choice, by size, never and always, and
//! prints a table of evaluation time, peak memory, where the peak was reached, pieces
//! run again smaller, and the sizes of the `.printsize`/`.output` relations.
//!
//! ```text
//! full_first PROGRAM.dl FACTS_DIR [--backend cpu|cuda|auto] [--gpu-memory-limit BYTES]
//!            [--memory-limit BYTES] [--jobs N] [--reps N] [--choices default,bysize,never,always]
//!            [--operators]
//! ```
//!
//! `--operators`: after the table, each choice's backend operators (calls, input rows,
//! seconds) of its fastest run.
//!
//! Each choice runs `--reps` times (default 1); the table shows the fastest run's
//! figures. Used for docs/gpu-results.md (round 29) and docs/cpu-results.md.

use fixlog::{parse_bytes, BackendKind, Fixlog, FullFirstUse, RunOptions};
use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("full_first: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let mut positional = Vec::new();
    let mut options = RunOptions {
        outputs_only: true,
        only_needed_inputs: true,
        ..RunOptions::default()
    };
    let mut reps = 1usize;
    let mut operators = false;
    let mut op_tables = Vec::new();
    let mut choices = "default,bysize,never,always".to_string();
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--backend" => {
                options.backend = match value()?.as_str() {
                    "cpu" => BackendKind::Cpu,
                    "cuda" => BackendKind::Cuda,
                    "auto" => BackendKind::Auto,
                    other => return Err(format!("unknown backend {other}")),
                }
            }
            "--gpu-memory-limit" => options.gpu_memory_limit = Some(parse_bytes(&value()?)?),
            "--memory-limit" => options.memory_limit = Some(parse_bytes(&value()?)?),
            "--jobs" => options.jobs = Some(value()?.parse().map_err(|e| format!("--jobs: {e}"))?),
            "--reps" => reps = value()?.parse().map_err(|e| format!("--reps: {e}"))?,
            "--choices" => choices = value()?,
            "--operators" => operators = true,
            _ if a.starts_with("--") => return Err(format!("unknown option {a}")),
            _ => positional.push(a),
        }
    }
    let [program, facts] = &positional[..] else {
        return Err("usage: full_first PROGRAM.dl FACTS_DIR [options]".into());
    };
    options.facts_dir = Some(PathBuf::from(facts));
    let fixlog = Fixlog::from_file(program).map_err(|e| e.to_string())?;
    println!(
        "| choice | evaluation s | peak GiB in use | pieces run again | sizes | peak reached in |"
    );
    println!("|---|---:|---:|---:|---|---|");
    for choice in choices.split(',') {
        options.full_first = match choice {
            "default" => None,
            "bysize" => Some(FullFirstUse::BySize { min_head_rows: 0 }),
            "never" => Some(FullFirstUse::Never),
            "always" => Some(FullFirstUse::Always),
            other => return Err(format!("unknown choice {other}")),
        };
        let mut best: Option<(f64, String, String)> = None;
        for _ in 0..reps.max(1) {
            let db = fixlog.run(&options).map_err(|e| e.to_string())?;
            let s = db.stats();
            let seconds: f64 = s.strata.iter().map(|st| st.time.as_secs_f64()).sum();
            let peak = s
                .peak_memory_in_use
                .or(s.host_memory.as_ref().map(|m| m.peak_in_use))
                .unwrap_or(0);
            let sizes: Vec<String> = s
                .relation_sizes
                .iter()
                .map(|(n, k)| format!("{n} {k}"))
                .collect();
            let row = format!(
                "| {choice} | {seconds:.3} | {:.3} | {} | {} | {} |",
                peak as f64 / (1u64 << 30) as f64,
                s.pieces_split,
                sizes.join(", "),
                s.peak_memory_where.as_deref().unwrap_or("-")
            );
            let ops: Vec<String> = s
                .operators
                .iter()
                .map(|o| {
                    format!(
                        "  {:<20} {:>8} {:>14} {:>9.4}",
                        o.name,
                        o.calls,
                        o.rows,
                        o.time.as_secs_f64()
                    )
                })
                .collect();
            if best.as_ref().is_none_or(|(t, _, _)| seconds < *t) {
                best = Some((seconds, row, ops.join("\n")));
            }
        }
        if let Some((_, row, ops)) = best {
            println!("{row}");
            op_tables.push(format!("{choice}:\n{ops}"));
        }
    }
    if operators {
        for table in op_tables {
            println!("{table}");
        }
    }
    Ok(())
}

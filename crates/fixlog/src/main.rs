//! The `fixlog` command line. A thin layer over the library API (`fixlog::Fixlog`).

use clap::{Parser, Subcommand, ValueEnum};
use fixlog::{Error, Fixlog, RunOptions, RunStats};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

#[derive(Parser)]
#[command(
    name = "fixlog",
    version,
    about = "Soufflé-compatible Datalog on every CPU core"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Evaluate a program (like `souffle PROGRAM -F FACTS -D OUT`).
    Run {
        /// The Datalog program (Soufflé syntax).
        program: PathBuf,
        /// Directory of input facts (`.input r` reads `FACT_DIR/r.facts`).
        #[arg(short = 'F', long = "fact-dir", default_value = ".")]
        fact_dir: PathBuf,
        /// Directory for outputs (`.output r` writes `OUTPUT_DIR/r.csv`); `-` prints to stdout.
        #[arg(short = 'D', long = "output-dir", default_value = ".")]
        output_dir: PathBuf,
        /// Worker threads (default: all cores).
        #[arg(short = 'j', long = "jobs")]
        jobs: Option<usize>,
        /// Print statistics on stderr at the end: sizes, iterations, time per phase.
        #[arg(long, value_enum, num_args = 0..=1, default_missing_value = "text")]
        stats: Option<StatsFormat>,
        /// Never show the progress line.
        #[arg(long)]
        quiet: bool,
    },
    /// Print the strata and the plan of every rule variant.
    Explain { program: PathBuf },
}

#[derive(Clone, Copy, ValueEnum)]
enum StatsFormat {
    Text,
    Json,
}

fn main() -> ExitCode {
    let cli = Cli::parse_from(souffle_style_args(std::env::args_os().collect()));
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            match &e {
                Error::Program { rendered, .. } => eprint!("{rendered}"),
                other => eprintln!("error: {other}"),
            }
            ExitCode::FAILURE
        }
    }
}

/// `fixlog PROGRAM.dl -F ... -D ...` (Soufflé's form, no subcommand) means
/// `fixlog run PROGRAM.dl ...`.
fn souffle_style_args(mut args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    if let Some(first) = args.get(1).and_then(|a| a.to_str()) {
        let is_command = ["run", "explain", "help"].contains(&first) || first.starts_with('-');
        if !is_command && first.ends_with(".dl") {
            args.insert(1, "run".into());
        }
    }
    args
}

fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Command::Explain { program } => {
            let program = Fixlog::from_file(&program)?;
            print!("{}", program.explain());
            Ok(())
        }
        Command::Run {
            program,
            fact_dir,
            output_dir,
            jobs,
            stats,
            quiet,
        } => {
            if jobs == Some(0) {
                return Err(Error::BadInput("-j must be at least 1".into()));
            }
            let start = Instant::now();
            let program = Fixlog::from_file(&program)?;
            let options = RunOptions {
                jobs,
                facts_dir: Some(fact_dir),
                progress: !quiet,
                outputs_only: true,
            };
            let db = program.run(&options)?;
            let t = Instant::now();
            db.write_outputs(&output_dir)?;
            print!("{}", db.printsizes());
            let write = t.elapsed();
            match stats {
                Some(StatsFormat::Text) => eprint!("{}", stats_text(db.stats(), write, start)),
                Some(StatsFormat::Json) => eprintln!("{}", stats_json(db.stats(), write, start)),
                None => {}
            }
            Ok(())
        }
    }
}

fn stats_text(stats: &RunStats, write: std::time::Duration, start: Instant) -> String {
    let mut s = String::new();
    s.push_str(&format!(
        "backend {} with {} threads; total {:.3} s\n",
        stats.backend,
        stats.threads,
        start.elapsed().as_secs_f64()
    ));
    s.push_str("stratum  iterations  seconds  relations\n");
    for (i, st) in stats.strata.iter().enumerate() {
        s.push_str(&format!(
            "{:>7}  {:>10}  {:>7.3}  {}\n",
            i,
            st.iterations,
            st.time.as_secs_f64(),
            st.relations.join(", ")
        ));
    }
    s.push_str(&format!(
        "tuples derived before deduplication: {}\n",
        stats.derived
    ));
    s.push_str("relation sizes:\n");
    for (name, size) in &stats.relation_sizes {
        s.push_str(&format!("  {name}\t{size}\n"));
    }
    let p = &stats.phases;
    s.push_str(&format!(
        "phases (s): load {:.3}, join {:.3}, dedup {:.3}, difference {:.3}, merge {:.3}, index {:.3}, write {:.3}\n",
        p.load.as_secs_f64(),
        p.join.as_secs_f64(),
        p.dedup.as_secs_f64(),
        p.difference.as_secs_f64(),
        p.merge.as_secs_f64(),
        p.index.as_secs_f64(),
        write.as_secs_f64()
    ));
    s
}

fn stats_json(stats: &RunStats, write: std::time::Duration, start: Instant) -> String {
    let p = &stats.phases;
    serde_json::json!({
        "backend": stats.backend,
        "threads": stats.threads,
        "seconds": start.elapsed().as_secs_f64(),
        "eval_seconds": stats.total.as_secs_f64(),
        "derived": stats.derived,
        "strata": stats.strata.iter().map(|st| serde_json::json!({
            "relations": st.relations,
            "recursive": st.recursive,
            "iterations": st.iterations,
            "seconds": st.time.as_secs_f64(),
        })).collect::<Vec<_>>(),
        "relations": stats.relation_sizes.iter().map(|(n, s)| (n.clone(), serde_json::json!(s))).collect::<serde_json::Map<_, _>>(),
        "phases": {
            "load": p.load.as_secs_f64(),
            "join": p.join.as_secs_f64(),
            "dedup": p.dedup.as_secs_f64(),
            "difference": p.difference.as_secs_f64(),
            "merge": p.merge.as_secs_f64(),
            "index": p.index.as_secs_f64(),
            "write": write.as_secs_f64(),
        },
    })
    .to_string()
}

//! A relation's rows in output order and their text in Soufflé's output format, read
//! part by part and formatted in parallel batches within the memory limit. Apart from
//! the files the text goes to (`commit`): the library reads rows and text without files.

use super::json::{self, json_writable};
use crate::ordered::{self, ReadMemory, Scratches};
use fixlog_cpu::budget::Charge;
use fixlog_exec::driver::Tuples;
use fixlog_exec::merge::{Merge, Part};
use fixlog_exec::ExecError;
use fixlog_logical::records::RecordView;
use fixlog_logical::{value, ColType, SymbolTable, Value};
use rayon::prelude::*;
use std::sync::Arc;

/// A relation's tuples in output order, one `Vec` per tuple (all in memory: what
/// `Database::relation` returns); the sorting into output order stays within `memory`
/// (see [`crate::ordered`]).
pub fn output_rows(
    tuples: &Tuples,
    types: &[ColType],
    symbols: &SymbolTable,
    memory: &ReadMemory,
) -> Result<Vec<Vec<Value>>, ExecError> {
    if tuples.arity == 0 {
        return Ok(vec![Vec::new(); tuples.len]);
    }
    let mut rows = Vec::new();
    for_each_in_output_order(tuples, types, symbols, memory, |part| {
        rows.extend(part.chunks_exact(tuples.arity).map(<[Value]>::to_vec));
        Ok(())
    })?;
    Ok(rows)
}

/// Calls `f` with a relation's rows (arity > 0) in output order, row-major, a part
/// of at most 65,536 rows at a time, within `memory` (see [`crate::ordered`]).
pub fn for_each_in_output_order(
    tuples: &Tuples,
    types: &[ColType],
    symbols: &SymbolTable,
    memory: &ReadMemory,
    mut f: impl FnMut(&[Value]) -> Result<(), ExecError>,
) -> Result<(), ExecError> {
    let sorted = ordered::in_output_order(tuples, types, symbols, memory)?;
    let mut merge = sorted.merge()?;
    let part_rows = ordered::part_rows(memory, tuples.arity, FORMAT_PART_ROWS);
    let scratches = Scratches::new(memory, part_rows, tuples.arity)?;
    let mut since = 0;
    while let Some(part) = sorted.next_part(&mut merge, part_rows) {
        scratches.with(|scratch| f(sorted.merged(&part, scratch)?))?;
        since += part.rows();
        if since >= 1 << 20 {
            sorted.release(&merge.positions());
            since = 0;
        }
    }
    Ok(())
}

/// Rows of the output text formatted per part (fewer where the memory allowance is
/// small); the parts in order.
const FORMAT_PART_ROWS: usize = 1 << 16;
/// Rows formatted (in parallel) before they are handed on, so the text of a large
/// relation is never all in memory at once (fewer where the memory allowance is small).
const FORMAT_BATCH_ROWS: usize = 1 << 22;

/// An executor error as an I/O error of the writing (out of memory keeps its kind).
fn exec_io(e: ExecError) -> std::io::Error {
    let kind = match e {
        ExecError::OutOfMemory(_) => std::io::ErrorKind::OutOfMemory,
        _ => std::io::ErrorKind::Other,
    };
    std::io::Error::new(kind, e.to_string())
}

/// The bytes a line of output takes at most for columns of bounded width (numbers:
/// 10 or 11 characters, floats in `%.9g`: 15), or a first guess for symbols and
/// records; and whether that is a bound.
fn line_estimate(types: &[ColType], delimiter: &str) -> (usize, bool) {
    let mut bound = true;
    let fields: usize = types
        .iter()
        .map(|t| match t {
            ColType::Unsigned => 10,
            ColType::Number => 11,
            ColType::Float => 15,
            ColType::Symbol => {
                bound = false;
                16
            }
            ColType::Record(_) => {
                bound = false;
                32
            }
        })
        .sum();
    let line = fields + delimiter.len() * types.len().saturating_sub(1) + 1;
    (line, bound)
}

/// How output fields are written: between them `delimiter`; with `rfc4180`, symbols
/// quoted as Soufflé writes them with `rfc4180=true` (`"text"`, a quote inside written
/// as `\""`), and records and ADTs quoted whole with their symbols in doubled quotes.
#[derive(Clone, Copy, Debug)]
pub struct TextFormat<'a> {
    pub delimiter: &'a str,
    pub rfc4180: bool,
}

impl<'a> TextFormat<'a> {
    /// Fields between `delimiter`s, as they are.
    pub fn plain(delimiter: &'a str) -> TextFormat<'a> {
        TextFormat {
            delimiter,
            rfc4180: false,
        }
    }
}

/// How an output's rows are written.
#[derive(Clone, Copy, Debug)]
pub enum OutputFormat<'a> {
    /// Soufflé's CSV writer (`IO=file`, `IO=stdout`): a line per row.
    Text(TextFormat<'a>),
    /// Soufflé's JSON writer (`IO=jsonfile`, `IO=json`, see [`super::json`]): `[`, the
    /// rows separated by `,\n`, `]\n`; each row a list, or with `names` (the
    /// relation's attribute names, `format=object`) an object keyed by them.
    Json { names: Option<&'a [String]> },
}

impl<'a> From<TextFormat<'a>> for OutputFormat<'a> {
    fn from(format: TextFormat<'a>) -> Self {
        OutputFormat::Text(format)
    }
}

/// Appends symbol `v` between `quotes`, each `"` in it written as `\""` (Soufflé's
/// RFC 4180 writer).
fn push_quoted_symbol(out: &mut String, v: Value, strings: &[Arc<str>], quotes: &str) {
    let mut text = String::new();
    value::write_value(&mut text, v, ColType::Symbol, strings);
    out.push_str(quotes);
    for ch in text.chars() {
        if ch == '"' {
            out.push_str("\\\"");
        }
        out.push(ch);
    }
    out.push_str(quotes);
}

/// Appends one row as Soufflé's CSV writer writes it: the fields between `format`'s
/// delimiter (quoted with `rfc4180`), then a line break.
fn write_text_row(
    s: &mut String,
    row: &[Value],
    types: &[ColType],
    format: &TextFormat,
    strings: &[Arc<str>],
    records: &Option<RecordView>,
) {
    for (c, (&v, &ty)) in row.iter().zip(types).enumerate() {
        if c > 0 {
            s.push_str(format.delimiter);
        }
        match (ty, records) {
            (ColType::Record(rt), Some(view)) if format.rfc4180 => {
                s.push('"');
                view.write(s, rt, v, &mut |o, t, x| match t {
                    ColType::Symbol => push_quoted_symbol(o, x, strings, "\"\""),
                    _ => value::write_value(o, x, t, strings),
                });
                s.push('"');
            }
            (ColType::Record(rt), Some(view)) => value::write_record(s, v, rt, strings, view),
            (ColType::Symbol, _) if format.rfc4180 => push_quoted_symbol(s, v, strings, "\""),
            _ => value::write_value(s, v, ty, strings),
        }
    }
    s.push('\n');
}

/// Formats a relation as Soufflé's output text and hands the text on in order, a
/// part at a time (`sink` returns an error to stop). The rows are read in output order
/// part by part (see [`crate::ordered`]: the relation's runs merged lazily, or sorted
/// chunks), formatted in parallel a batch at a time while the batch before is handed
/// on, all within `memory`: the batches' text is charged to its budget and sized to
/// leave it room.
pub fn format_tuples_into(
    tuples: &Tuples,
    types: &[ColType],
    symbols: &SymbolTable,
    format: &OutputFormat,
    memory: &ReadMemory,
    mut sink: impl FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    let json = match *format {
        OutputFormat::Text(_) => None,
        OutputFormat::Json { names } => Some(names),
    };
    if let Some(names) = json {
        json_writable(types, &symbols.records().types())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
        if names.is_some_and(|n| n.len() != types.len()) {
            return Err(std::io::Error::other(
                "internal error: JSON keys do not match the relation's attributes",
            ));
        }
    }
    if tuples.arity == 0 {
        return match json {
            // Soufflé's JSON writer: `null` for the one tuple of a nullary relation.
            Some(_) => sink(if tuples.len > 0 { "[null\n]\n" } else { "[]\n" }),
            None => sink(&"()\n".repeat(tuples.len)),
        };
    }
    let (strings, records) = value::symbol_views(types, symbols);
    let a = tuples.arity;
    let sorted = ordered::in_output_order(tuples, types, symbols, memory).map_err(exec_io)?;
    let mut merge = sorted.merge().map_err(exec_io)?;
    let part_rows = ordered::part_rows(memory, a, FORMAT_PART_ROWS);
    let scratches = Scratches::new(memory, part_rows, a).map_err(exec_io)?;
    // Two batches of text in flight (one formatted, one handed on), each within a
    // quarter of the allowance.
    let text_room = memory.allowance() / 4;
    let (bound, bounded) = match *format {
        OutputFormat::Text(t) => line_estimate(types, t.delimiter),
        // Not a bound: floats and keys vary.
        OutputFormat::Json { names } => {
            let keys: usize = names.map_or(0, |n| n.iter().map(|k| k.len() + 4).sum());
            (line_estimate(types, ", ").0 + keys + 4, false)
        }
    };
    let format_rows = |rows: &[Value], line: usize| {
        let mut s = String::with_capacity(rows.len() / a * line);
        for row in rows.chunks_exact(a) {
            match *format {
                OutputFormat::Text(t) => write_text_row(&mut s, row, types, &t, &strings, &records),
                // Every row after `,\n`; the writer drops the first one's.
                OutputFormat::Json { names } => {
                    s.push_str(",\n");
                    json::write_json_row(&mut s, row, types, names, &strings, records.as_ref());
                }
            }
        }
        s
    };
    // A batch: its parts' text, the bytes of text per row, and the charge for the
    // text.
    let format_batch = |parts: &[Part<'_>],
                        line: usize|
     -> Result<(Vec<String>, usize, Charge), ExecError> {
        let texts = parts
            .par_iter()
            .map(|p| scratches.with(|scratch| Ok(format_rows(sorted.merged(p, scratch)?, line))))
            .collect::<Result<Vec<String>, ExecError>>()?;
        let held = texts.iter().map(String::capacity).sum();
        let bytes: usize = texts.iter().map(String::len).sum();
        let rows: usize = parts.iter().map(Part::rows).sum();
        Ok((texts, bytes / rows.max(1), memory.count(held)))
    };
    // The next batch's parts, as many rows as `line` bytes a line fit in `text_room`.
    let batch_rows = |line: usize| (text_room / line.max(1)).clamp(part_rows, FORMAT_BATCH_ROWS);
    // The line length to size the next batch by: the bound, or what the last batch's
    // lines took (a quarter more), whichever is less.
    let next_line = |per_row: usize| {
        let seen = per_row.max(1);
        if bounded {
            bound.min(seen + seen / 4 + 1)
        } else {
            seen + seen / 4 + 1
        }
    };
    let first = cut_batch(&sorted, &mut merge, batch_rows(bound), part_rows);
    // Where the batch being formatted ends in each source.
    let mut ends = merge.positions();
    let mut line = bound;
    let format_batch = &format_batch;
    // JSON: the opening bracket, and no separator before the first row.
    let mut json_first = json.is_some();
    if json.is_some() {
        sink("[")?;
    }
    std::thread::scope(|scope| {
        // Larger outputs: the next batch is formatted (on all cores) while this thread
        // hands on the one before, so writing and formatting overlap.
        let mut pending =
            (!first.is_empty()).then(|| scope.spawn(move || format_batch(&first, line)));
        while let Some(batch) = pending.take() {
            let (texts, per_row, charge) = batch
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                .map_err(exec_io)?;
            let done = std::mem::take(&mut ends);
            line = next_line(per_row);
            let next = cut_batch(&sorted, &mut merge, batch_rows(line), part_rows);
            ends = merge.positions();
            if !next.is_empty() {
                pending = Some(scope.spawn(move || format_batch(&next, line)));
            }
            for t in &texts {
                match t.strip_prefix(",\n") {
                    Some(rest) if json_first => {
                        json_first = false;
                        sink(rest)?;
                    }
                    _ => sink(t)?,
                }
            }
            drop((texts, charge));
            // The sources' pages before the end of that batch are not read again.
            sorted.release(&done);
        }
        Ok::<(), std::io::Error>(())
    })?;
    match json {
        Some(_) => sink("]\n"),
        None => Ok(()),
    }
}

/// The next batch: parts of `part_rows` rows of `merge`, `batch` rows in all (fewer at
/// the end).
fn cut_batch<'m>(
    sorted: &ordered::InOrder<'_>,
    merge: &mut Merge<'m>,
    batch: usize,
    part_rows: usize,
) -> Vec<Part<'m>> {
    let mut parts = Vec::new();
    let mut rows = 0;
    while rows < batch {
        match sorted.next_part(merge, part_rows.min(batch - rows)) {
            Some(p) => {
                rows += p.rows();
                parts.push(p);
            }
            None => break,
        }
    }
    parts
}

/// Formats a relation as Soufflé's output text (all of it, in memory).
pub fn format_tuples(
    tuples: &Tuples,
    types: &[ColType],
    symbols: &SymbolTable,
    delimiter: &str,
) -> std::io::Result<String> {
    let mut text = String::new();
    format_tuples_into(
        tuples,
        types,
        symbols,
        &TextFormat::plain(delimiter).into(),
        &ReadMemory::default(),
        |p| {
            text.push_str(p);
            Ok(())
        },
    )?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tab-separated, unquoted: Soufflé's default output.
    const TAB: TextFormat<'static> = TextFormat {
        delimiter: "\t",
        rfc4180: false,
    };

    #[test]
    fn large_outputs_format_the_same_when_writing_overlaps_formatting() {
        // More rows than one batch: the pipelined path, against formatting row by row.
        let n = FORMAT_BATCH_ROWS * 2 + 12_345;
        let rows: Vec<Value> = (0..n as u32)
            .flat_map(|i| [i, i.wrapping_mul(7) ^ 5])
            .collect();
        let tuples = Tuples {
            arity: 2,
            len: n,
            rows: rows.into(),
        };
        let types = [ColType::Unsigned, ColType::Unsigned];
        let symbols = SymbolTable::default();
        let memory = ReadMemory::default();
        let mut text = String::new();
        let mut writes = 0;
        format_tuples_into(&tuples, &types, &symbols, &TAB.into(), &memory, |p| {
            writes += 1;
            text.push_str(p);
            Ok(())
        })
        .unwrap();
        assert!(writes > 2 * (FORMAT_BATCH_ROWS / FORMAT_PART_ROWS));
        let want: String = (0..n as u32)
            .map(|i| format!("{i}\t{}\n", i.wrapping_mul(7) ^ 5))
            .collect();
        assert!(text == want, "pipelined output differs");
        // and a sink error stops the writing with that error
        let mut calls = 0;
        let r = format_tuples_into(&tuples, &types, &symbols, &TAB.into(), &memory, |_| {
            calls += 1;
            if calls == 70 {
                Err(std::io::Error::other("disk full"))
            } else {
                Ok(())
            }
        });
        assert_eq!(r.unwrap_err().to_string(), "disk full");
        assert_eq!(calls, 70);
    }

    /// Rows a test holds as a "backend" would: shared, read as a slice.
    #[derive(Debug)]
    struct Held(Vec<Value>);
    impl fixlog_exec::tuples::SharedRows for Held {
        fn values(&self) -> &[Value] {
            &self.0
        }
    }

    /// `rows` (distinct, any order) dealt out to `k` sorted runs, as a result.
    fn as_runs(arity: usize, rows: &[Vec<Value>], k: usize) -> Tuples {
        let mut sorted = rows.to_vec();
        sorted.sort();
        let mut runs = vec![Vec::new(); k];
        for (i, r) in sorted.iter().enumerate() {
            // Runs of different sizes, interleaved.
            runs[(i * 7 + i / 3) % k].extend_from_slice(r);
        }
        Tuples {
            arity,
            len: rows.len(),
            rows: fixlog_exec::tuples::RowStore::Runs {
                arity,
                runs: runs
                    .into_iter()
                    .map(|r| std::sync::Arc::new(Held(r)) as _)
                    .collect(),
            },
        }
    }

    /// The text of `rows` sorted as the writer always sorted them: raw order, then a
    /// stable sort into output order.
    fn naive_text(rows: &[Vec<Value>], types: &[ColType], symbols: &SymbolTable) -> String {
        let mut sorted = rows.to_vec();
        sorted.sort();
        let order = value::output_order(types, symbols);
        sorted.sort_by(|a, b| order(a, b));
        let strings = symbols.snapshot();
        let mut text = String::new();
        for r in &sorted {
            for (c, (&v, &ty)) in r.iter().zip(types).enumerate() {
                if c > 0 {
                    text.push('\t');
                }
                value::write_value(&mut text, v, ty, &strings);
            }
            text.push('\n');
        }
        text
    }

    #[test]
    fn runs_are_written_in_output_order_within_a_small_budget() {
        let symbols = SymbolTable::default();
        // Symbols interned in an order unlike their text's order.
        let names: Vec<Value> = (0..500u32)
            .map(|i| symbols.intern(&format!("s{}", (i * 7919) % 1000)))
            .collect();
        let n = 150_000u32;
        let cases: Vec<(Vec<ColType>, Vec<Vec<Value>>)> = vec![
            // raw order is output order: the runs are merged as they are
            (
                vec![ColType::Number, ColType::Unsigned],
                (0..n)
                    .map(|i| vec![i / 7, i.wrapping_mul(2654435761)])
                    .collect(),
            ),
            // negative numbers: sorted in chunks through files
            (
                vec![ColType::Number, ColType::Number],
                (0..n)
                    .map(|i| {
                        vec![
                            (i % 101).wrapping_sub(50),
                            i.wrapping_mul(40503) ^ 0x8000_0000,
                        ]
                    })
                    .collect(),
            ),
            // symbols, then floats with ties (0.0 and -0.0) kept in raw order
            (
                vec![ColType::Symbol, ColType::Float, ColType::Unsigned],
                (0..n)
                    .map(|i| {
                        let f = if i % 3 == 0 {
                            0.0f32
                        } else if i % 3 == 1 {
                            -0.0
                        } else {
                            i as f32 / -7.0
                        };
                        vec![names[(i % 500) as usize], f.to_bits(), i]
                    })
                    .collect(),
            ),
        ];
        // five columns: sorted through an index rather than as keys
        let mut cases = cases;
        cases.push((
            vec![ColType::Number; 5],
            (0..n / 2)
                .map(|i| vec![(i % 7).wrapping_sub(3), i % 2, i.wrapping_mul(977), 5, i])
                .collect(),
        ));
        let temp = tempfile::tempdir().unwrap();
        for (case, (types, rows)) in cases.iter().enumerate() {
            let want = naive_text(rows, types, &symbols);
            for k in [1, 5] {
                let tuples = as_runs(types.len(), rows, k);
                let limit = 1 << 20;
                let budget = fixlog_cpu::budget::Budget::new(Some(limit));
                let memory = ReadMemory {
                    budget: Some(budget.clone()),
                    limit: Some(limit),
                    files: true,
                    temp_dir: Some(temp.path().to_path_buf()),
                    sorted: Default::default(),
                };
                let mut text = String::new();
                format_tuples_into(&tuples, types, &symbols, &TAB.into(), &memory, |p| {
                    text.push_str(p);
                    Ok(())
                })
                .unwrap();
                assert!(text == want, "case {case}, {k} runs: the text differs");
                assert!(budget.peak() <= limit, "case {case}: {}", budget.peak());
                assert!(budget.peak() > 0, "the writer's buffers are charged");
                assert_eq!(budget.used(), 0, "everything is given back");
                let sorted = memory.sorted.take();
                assert_eq!(sorted.files > 1, case > 0, "case {case}: {sorted:?}");
                // The typed reader agrees.
                let mut rows_read = 0;
                for_each_in_output_order(&tuples, types, &symbols, &memory, |part| {
                    rows_read += part.len() / types.len();
                    Ok(())
                })
                .unwrap();
                assert_eq!(rows_read, rows.len());
            }
        }
        // The spill directories are gone.
        assert_eq!(std::fs::read_dir(temp.path()).unwrap().count(), 0);
        // Without files (--no-spill), a relation that does not fit is an error value.
        let (types, rows) = &cases[1];
        let tuples = as_runs(2, rows, 3);
        let memory = ReadMemory {
            budget: Some(fixlog_cpu::budget::Budget::new(Some(256 << 10))),
            limit: Some(256 << 10),
            files: false,
            ..ReadMemory::default()
        };
        let err = format_tuples_into(&tuples, types, &symbols, &TAB.into(), &memory, |_| Ok(()))
            .unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory, "{err}");
    }
}

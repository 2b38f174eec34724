//! Reading fact files and writing outputs in Soufflé's formats.
//!
//! - `.input r` reads `FACTS_DIR/r.facts`: one tuple a line, fields separated by a tab
//!   (or the directive's `delimiter`), a trailing `\r` ignored, blank lines skipped,
//!   fields after the last column ignored; fields are read as Soufflé reads them
//!   ([`parse_field`]). Errors say `file:line:column`.
//!   `filename="..."` is relative to `FACTS_DIR` unless absolute. Gzip files are
//!   recognised by their magic bytes and decompressed on the fly, whatever their name;
//!   when `r.facts` does not exist but `r.facts.gz` does, that is read.
//! - `.output r` writes `OUT_DIR/r.csv` (or `filename`), tab-separated, in output order
//!   (typed order, see `fixlog_logical::value::output_order`). Each file is written to a
//!   temporary file in the same directory and renamed into place, so a failed run never
//!   leaves a half-written file. `IO=stdout` or `-D -` prints to stdout instead. The
//!   rows are read in output order part by part and formatted in batches, within the
//!   run's memory limit ([`crate::ordered`]), so an output larger than memory is
//!   written without being read into memory.

use crate::error::Error;
pub use crate::ordered::ReadMemory;
use crate::ordered::{self, Scratches};
use fixlog_cpu::budget::Charge;
use fixlog_exec::driver::Tuples;
use fixlog_exec::merge::{Merge, Part};
use fixlog_exec::ExecError;
use fixlog_logical::records::RecordView;
use fixlog_logical::{value, ColType, IoDirective, Program, Relation, SymbolTable, Value};
use fixlog_syntax::{Diagnostic, Diagnostics, SourceMap, Span};
use rayon::prelude::*;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

fn delimiter(directive: &IoDirective) -> String {
    match directive.params.get("delimiter") {
        Some(d) => unescape(d),
        None => "\t".to_string(),
    }
}

/// `\t`, `\n` and `\\` in a delimiter parameter, as Soufflé accepts them.
fn unescape(s: &str) -> String {
    s.replace("\\t", "\t")
        .replace("\\n", "\n")
        .replace("\\\\", "\\")
}

fn io_kind(directive: &IoDirective) -> &str {
    directive
        .params
        .get("IO")
        .map(String::as_str)
        .unwrap_or("file")
}

/// Which parameters a directive may have and what values each may take; anything else
/// is an error at check time, located at the parameter (`file:line:column`), before
/// any fact is read or any rule evaluated.
fn check_param(output: bool, key: &str, value: &str) -> Result<(), String> {
    let is_bool = |v: &str| v == "true" || v == "false";
    match key {
        "IO" => match (output, value) {
            (_, "file") | (true, "stdout") => Ok(()),
            (false, _) => Err(format!(
                "IO={value} is not supported in `.input` (Fixlog reads IO=file)"
            )),
            (true, _) => Err(format!(
                "IO={value} is not supported in `.output` (Fixlog writes IO=file and IO=stdout)"
            )),
        },
        "filename" if value.is_empty() => Err("`filename` is empty".into()),
        "filename" => Ok(()),
        "delimiter" if unescape(value).is_empty() => Err("`delimiter` is empty".into()),
        "delimiter" => Ok(()),
        "headers" if !is_bool(value) => Err(format!(
            "headers={value}: the value must be `true` or `false`"
        )),
        "headers" if output && value == "true" => {
            Err("headers=true is not supported in `.output`".into())
        }
        "headers" => Ok(()),
        // Gzip input is recognised by its magic bytes whatever this says.
        "compress" if !is_bool(value) => Err(format!(
            "compress={value}: the value must be `true` or `false`"
        )),
        "compress" if output && value == "true" => {
            Err("compress=true is not supported in `.output` (outputs are not compressed)".into())
        }
        "compress" => Ok(()),
        "rfc4180" if !is_bool(value) => Err(format!(
            "rfc4180={value}: the value must be `true` or `false`"
        )),
        "rfc4180" if value == "true" => {
            Err("rfc4180=true (quoted CSV fields) is not supported".into())
        }
        "rfc4180" => Ok(()),
        _ => Err(format!(
            "unknown parameter `{key}` (Fixlog understands IO, filename, delimiter, headers, compress and rfc4180)"
        )),
    }
}

/// The span of parameter `key` in a directive's text (`key` followed by `=`), or the
/// whole directive when it cannot be found (the `output` qualifier of a `.decl`).
fn param_span(sources: &SourceMap, directive: Span, key: &str) -> Span {
    let text = sources.snippet(directive);
    let ident = |c: char| c.is_alphanumeric() || c == '_' || c == '-';
    let found = text.match_indices(key).find(|&(at, _)| {
        let before_ok = !text[..at].chars().next_back().is_some_and(ident);
        let after = text[at + key.len()..].trim_start();
        before_ok && after.starts_with('=')
    });
    match found {
        Some((at, _)) => {
            let start = directive.start as usize + at;
            Span::new(directive.file, start, start + key.len())
        }
        None => directive,
    }
}

/// Checks every `.input` and `.output` directive's parameters (see `check_param`);
/// each bad parameter is a diagnostic pointing at it.
pub fn check_directives(program: &Program, sources: &SourceMap) -> Result<(), Diagnostics> {
    let mut errors = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for relation in &program.relations {
        let all = relation
            .inputs
            .iter()
            .map(|d| (false, d))
            .chain(relation.outputs.iter().map(|d| (true, d)));
        for (output, directive) in all {
            for (key, value) in &directive.params {
                let Err(why) = check_param(output, key, value) else {
                    continue;
                };
                let span = param_span(sources, directive.span, key);
                // `.output a, b(IO=x)` gives both relations the same directive.
                if seen.insert((span, key.clone())) {
                    let kind = if output { "output" } else { "input" };
                    errors.push(Diagnostic::error(
                        format!("`.{kind} {}`: {why}", relation.name),
                        span,
                    ));
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(Diagnostics(errors))
    }
}

/// Where an `.input` directive reads from.
pub fn input_path(relation: &Relation, directive: &IoDirective, facts_dir: &Path) -> PathBuf {
    let name = directive
        .params
        .get("filename")
        .cloned()
        .unwrap_or_else(|| format!("{}.facts", relation.name));
    let path = Path::new(&name);
    let path = if path.is_absolute() {
        path.to_path_buf()
    } else {
        facts_dir.join(path)
    };
    if !path.exists() {
        let gz = PathBuf::from(format!("{}.gz", path.display()));
        if gz.exists() {
            return gz;
        }
    }
    path
}

/// Reads the file of one `.input` directive and appends its tuples to `out`.
pub fn read_input(
    relation: &Relation,
    directive: &IoDirective,
    facts_dir: &Path,
    symbols: &SymbolTable,
    out: &mut Tuples,
) -> Result<(), Error> {
    match io_kind(directive) {
        "file" => {}
        other => {
            return Err(Error::BadInput(format!(
                "`.input {}`: IO={other} is not supported (only IO=file)",
                relation.name
            )))
        }
    }
    let path = input_path(relation, directive, facts_dir);
    let bytes = read_maybe_gzip(&path)?;
    let text = String::from_utf8(bytes).map_err(|e| {
        let bytes = e.as_bytes();
        let at = e.utf8_error().valid_up_to();
        let line_start = bytes[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        // The bytes before `at` are valid UTF-8.
        let column = std::str::from_utf8(&bytes[line_start..at])
            .map_or(at - line_start, |t| t.chars().count())
            + 1;
        Error::FactLine {
            path: path.clone(),
            line: line_of(bytes, at),
            column,
            message: "the file is not valid UTF-8".to_string(),
        }
    })?;
    let headers = directive.params.get("headers").map(String::as_str) == Some("true");
    parse_facts(
        &text,
        &path,
        &delimiter(directive),
        &relation.types(),
        headers,
        symbols,
        out,
    )
}

fn line_of(bytes: &[u8], offset: usize) -> usize {
    bytes[..offset].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The file's bytes, gunzipped if it starts with the gzip magic.
fn read_maybe_gzip(path: &Path) -> Result<Vec<u8>, Error> {
    let err = |source| Error::ReadFile {
        path: path.to_path_buf(),
        source,
    };
    let raw = std::fs::read(path).map_err(err)?;
    if raw.starts_with(&GZIP_MAGIC) {
        gunzip(&raw).map_err(err)
    } else {
        Ok(raw)
    }
}

const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Decompresses gzip data: every member of a multi-member file (`cat a.gz b.gz`, as
/// gzip allows), with trailing zero bytes (padding) ignored. Anything else after the
/// last member, a truncated member or corrupt data is an error that says so.
fn gunzip(raw: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::{Error as IoError, ErrorKind};
    let mut out = Vec::new();
    out.try_reserve(raw.len().saturating_mul(4)).map_err(|_| {
        IoError::new(
            ErrorKind::OutOfMemory,
            "out of memory for the decompressed file",
        )
    })?;
    let mut pos = 0;
    while pos < raw.len() {
        let mut member = flate2::bufread::GzDecoder::new(&raw[pos..]);
        if let Err(e) = member.read_to_end(&mut out) {
            let what = match e.kind() {
                ErrorKind::UnexpectedEof => format!(
                    "the gzip data is truncated (the member starting at byte {pos} ends early)"
                ),
                ErrorKind::OutOfMemory => e.to_string(),
                _ => format!("corrupt gzip data in the member starting at byte {pos}: {e}"),
            };
            return Err(IoError::new(e.kind(), what));
        }
        let rest = member.into_inner();
        pos = raw.len() - rest.len();
        if rest.is_empty() || rest.iter().all(|&b| b == 0) {
            break;
        }
        if !rest.starts_with(&GZIP_MAGIC) {
            return Err(IoError::new(
                ErrorKind::InvalidData,
                format!(
                    "trailing data after the gzip stream ({} byte{} at byte {pos} that are not a gzip member)",
                    rest.len(),
                    if rest.len() == 1 { "" } else { "s" }
                ),
            ));
        }
    }
    Ok(out)
}

/// At most this many characters of a field are echoed in a message.
const ECHO_CHARS: usize = 40;

/// A field quoted for a message: at most [`ECHO_CHARS`] characters, then `…` and the
/// field's length, so a huge field never makes a huge message.
fn echo(field: &str) -> String {
    match field.char_indices().nth(ECHO_CHARS) {
        None => format!("`{field}`"),
        Some((cut, _)) => format!("`{}…` ({} bytes)", &field[..cut], field.len()),
    }
}

/// C's `isspace`, which `strtol`/`strtof` skip before a number.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// Reads one field of a fact file as Soufflé's CSV reader does:
///
/// - `number`: leading whitespace, an optional sign, decimal digits (no `0x`/`0b`:
///   Soufflé reads a number column with `std::stoi` in base 10), in i32 range;
/// - `unsigned`: `0x` hexadecimal, `0b` binary or (after leading whitespace and an
///   optional `+`) decimal, in u32 range, never negative;
/// - `float`: leading whitespace, then a decimal float, `inf` or `nan`;
/// - `symbol`: the text exactly as given.
///
/// Nothing may follow the value (trailing spaces are an error, as in Soufflé).
pub fn parse_field(field: &str, ty: ColType, symbols: &SymbolTable) -> Result<Value, String> {
    match ty {
        ColType::Symbol => Ok(symbols.intern(field)),
        // `[1, a]`, `nil`, `$A(1)`: as Soufflé reads records (see `records`).
        ColType::Record(rt) => {
            fixlog_logical::records::parse_record(field, rt, symbols.records(), &|text, t| {
                parse_field(text, t, symbols)
            })
        }
        ColType::Number => {
            let t = field.trim_start_matches(is_c_space);
            let (neg, digits) = match t.as_bytes().first() {
                Some(b'-') => (true, &t[1..]),
                Some(b'+') => (false, &t[1..]),
                _ => (false, t),
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                let hint = if digits.starts_with("0x") || digits.starts_with("0b") {
                    " (hexadecimal and binary are read in unsigned columns only, as in Soufflé)"
                } else {
                    ""
                };
                return Err(format!("{} is not a number{hint}", echo(field)));
            }
            let value = digits
                .parse::<i64>()
                .ok()
                .map(|m| if neg { -m } else { m })
                .and_then(|v| i32::try_from(v).ok())
                .ok_or_else(|| {
                    format!(
                        "{} is out of the range of a 32-bit number ({} to {})",
                        echo(field),
                        i32::MIN,
                        i32::MAX
                    )
                })?;
            Ok(value::from_i32(value))
        }
        ColType::Unsigned => {
            let (radix, digits) = if let Some(d) = field.strip_prefix("0x") {
                (16, d)
            } else if let Some(d) = field.strip_prefix("0b") {
                (2, d)
            } else {
                let t = field.trim_start_matches(is_c_space);
                if t.starts_with('-') {
                    return Err(format!(
                        "{} is negative, and an unsigned column cannot hold a negative number",
                        echo(field)
                    ));
                }
                (10, t.strip_prefix('+').unwrap_or(t))
            };
            if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
                return Err(format!("{} is not an unsigned number", echo(field)));
            }
            let value = u64::from_str_radix(digits, radix)
                .ok()
                .and_then(|v| u32::try_from(v).ok())
                .ok_or_else(|| {
                    format!(
                        "{} is out of the range of a 32-bit unsigned number (0 to {})",
                        echo(field),
                        u32::MAX
                    )
                })?;
            Ok(value)
        }
        ColType::Float => {
            let t = field.trim_start_matches(is_c_space);
            value::parse_value(t, ColType::Float, symbols)
                .map_err(|_| format!("{} is not a float", echo(field)))
        }
    }
}

/// Parses fact lines in parallel (chunks of lines), keeping file order. As in Soufflé,
/// fields after the relation's last column are ignored; unlike Soufflé, blank lines are
/// skipped (Soufflé reads one as a tuple of empty fields).
pub fn parse_facts(
    text: &str,
    path: &Path,
    delimiter: &str,
    types: &[ColType],
    skip_header: bool,
    symbols: &SymbolTable,
    out: &mut Tuples,
) -> Result<(), Error> {
    // Split into chunks of whole lines, remembering each chunk's first line number.
    const CHUNK: usize = 1 << 20;
    let mut chunks = Vec::new();
    let (mut start, mut line) = (0usize, 1usize);
    let bytes = text.as_bytes();
    while start < bytes.len() {
        let mut end = (start + CHUNK).min(bytes.len());
        while end < bytes.len() && bytes[end - 1] != b'\n' {
            end += 1;
        }
        chunks.push((line, &text[start..end]));
        line += bytes[start..end].iter().filter(|&&b| b == b'\n').count();
        start = end;
    }
    let arity = types.len();
    let parsed: Vec<Result<(Vec<Value>, usize), Error>> = chunks
        .par_iter()
        .map(|&(first_line, chunk)| {
            let mut rows = Vec::new();
            let mut count = 0;
            for (i, raw_line) in chunk.split('\n').enumerate() {
                let line_no = first_line + i;
                let l = raw_line.strip_suffix('\r').unwrap_or(raw_line);
                if l.is_empty() || (skip_header && line_no == 1) {
                    continue;
                }
                // 1-based character column of byte offset `at` of the line.
                let column = |at: usize| l[..at].chars().count() + 1;
                let mut fields = 0;
                let mut at = 0;
                let mut split = l.split(delimiter);
                for &ty in types {
                    let Some(field) = split.next() else { break };
                    fields += 1;
                    let v = parse_field(field, ty, symbols).map_err(|m| Error::FactLine {
                        path: path.to_path_buf(),
                        line: line_no,
                        column: column(at),
                        message: format!("column {fields}: {m}"),
                    })?;
                    rows.push(v);
                    at += field.len() + delimiter.len();
                }
                if fields != arity {
                    return Err(Error::FactLine {
                        path: path.to_path_buf(),
                        line: line_no,
                        column: column(l.len()),
                        message: format!(
                            "expected {arity} column{} but found {fields}",
                            if arity == 1 { "" } else { "s" },
                        ),
                    });
                }
                count += 1;
            }
            Ok((rows, count))
        })
        .collect();
    for chunk in parsed {
        let (rows, count) = chunk?;
        out.rows.to_mut().extend_from_slice(&rows);
        out.len += count;
    }
    Ok(())
}

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
    delimiter: &str,
    memory: &ReadMemory,
    mut sink: impl FnMut(&str) -> std::io::Result<()>,
) -> std::io::Result<()> {
    if tuples.arity == 0 {
        return sink(&"()\n".repeat(tuples.len));
    }
    let has_records = types.iter().any(|t| matches!(t, ColType::Record(_)));
    let strings = if has_records || types.contains(&ColType::Symbol) {
        symbols.snapshot()
    } else {
        Vec::new()
    };
    let records = has_records.then(|| RecordView::new(symbols.records()));
    let a = tuples.arity;
    let sorted = ordered::in_output_order(tuples, types, symbols, memory).map_err(exec_io)?;
    let mut merge = sorted.merge().map_err(exec_io)?;
    let part_rows = ordered::part_rows(memory, a, FORMAT_PART_ROWS);
    let scratches = Scratches::new(memory, part_rows, a).map_err(exec_io)?;
    // Two batches of text in flight (one formatted, one handed on), each within a
    // quarter of the allowance.
    let text_room = memory.allowance() / 4;
    let (bound, bounded) = line_estimate(types, delimiter);
    let format_rows = |rows: &[Value], line: usize| {
        let mut s = String::with_capacity(rows.len() / a * line);
        for row in rows.chunks_exact(a) {
            for (c, (&v, &ty)) in row.iter().zip(types).enumerate() {
                if c > 0 {
                    s.push_str(delimiter);
                }
                match (ty, &records) {
                    (ColType::Record(rt), Some(view)) => {
                        value::write_record(&mut s, v, rt, &strings, view)
                    }
                    _ => value::write_value(&mut s, v, ty, &strings),
                }
            }
            s.push('\n');
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
                sink(t)?;
            }
            drop((texts, charge));
            // The sources' pages before the end of that batch are not read again.
            sorted.release(&done);
        }
        Ok(())
    })
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
        delimiter,
        &ReadMemory::default(),
        |p| {
            text.push_str(p);
            Ok(())
        },
    )?;
    Ok(text)
}

/// The file one `.output` directive writes, or `None` when it prints on stdout
/// (`IO=stdout`, or `-D -`).
pub fn output_target(
    relation: &Relation,
    directive: &IoDirective,
    out_dir: &Path,
) -> Option<PathBuf> {
    if io_kind(directive) == "stdout" || out_dir == Path::new("-") {
        return None;
    }
    let name = directive
        .params
        .get("filename")
        .cloned()
        .unwrap_or_else(|| format!("{}.csv", relation.name));
    Some(if Path::new(&name).is_absolute() {
        PathBuf::from(&name)
    } else {
        out_dir.join(&name)
    })
}

/// Prints one `.output` directive's relation on stdout, framed as Soufflé frames it.
pub fn write_output_stdout(
    relation: &Relation,
    directive: &IoDirective,
    tuples: &Tuples,
    symbols: &SymbolTable,
    memory: &ReadMemory,
) -> Result<(), Error> {
    let types = relation.types();
    let delim = delimiter(directive);
    let stdout = std::io::stdout();
    let mut lock = stdout.lock();
    let res = writeln!(lock, "---------------\n{}\n===============", relation.name)
        .and_then(|_| {
            format_tuples_into(tuples, &types, symbols, &delim, memory, |p| {
                lock.write_all(p.as_bytes())
            })
        })
        .and_then(|_| writeln!(lock, "==============="))
        .and_then(|_| lock.flush());
    res.map_err(|source| Error::WriteFile {
        path: PathBuf::from("<stdout>"),
        source,
    })
}

/// Writes one `.output` directive's relation into a temporary file beside `path`; the
/// caller renames it into place with [`commit_outputs`] once every output is written.
pub fn write_output_file(
    relation: &Relation,
    directive: &IoDirective,
    path: &Path,
    tuples: &Tuples,
    symbols: &SymbolTable,
    memory: &ReadMemory,
) -> Result<TempOutput, Error> {
    match io_kind(directive) {
        "file" => {}
        other => {
            return Err(Error::BadInput(format!(
                "`.output {}`: IO={other} is not supported (only IO=file and IO=stdout)",
                relation.name
            )))
        }
    }
    let types = relation.types();
    let delim = delimiter(directive);
    write_temporary(path, |file| {
        format_tuples_into(tuples, &types, symbols, &delim, memory, |p| {
            file.write_all(p.as_bytes())
        })
    })
}

/// Writes one `.output` directive's relation (to its file, renamed into place at once,
/// or to stdout).
pub fn write_output(
    relation: &Relation,
    directive: &IoDirective,
    out_dir: &Path,
    tuples: &Tuples,
    symbols: &SymbolTable,
    memory: &ReadMemory,
) -> Result<(), Error> {
    match output_target(relation, directive, out_dir) {
        None => write_output_stdout(relation, directive, tuples, symbols, memory),
        Some(path) => commit_outputs(vec![write_output_file(
            relation, directive, &path, tuples, symbols, memory,
        )?]),
    }
}

/// Checks, before evaluating, that an output file can be put at `path`: it must not be
/// a directory.
pub fn check_output_target(path: &Path) -> Result<(), Error> {
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(Error::WriteFile {
            path: path.to_path_buf(),
            source: std::io::Error::new(std::io::ErrorKind::IsADirectory, "it is a directory"),
        }),
        _ => Ok(()),
    }
}

/// Renames every written output into place, all or nothing: each destination is
/// checked first, the previous file at each destination is kept (a hard link) until
/// every rename has succeeded, and if one fails the outputs already renamed are put
/// back as they were. On failure every temporary file is removed.
pub fn commit_outputs(temps: Vec<TempOutput>) -> Result<(), Error> {
    test_hook_pause(&temps);
    commit_outputs_with(temps, |from, to| std::fs::rename(from, to))
}

/// Test hook, for the test suite only: with `FIXLOG_TEST_PAUSE_BEFORE_RENAME_MS=N` in
/// the environment, a run that has written its outputs to temporary files waits `N`
/// milliseconds before renaming them into place, so that tests can interrupt it or
/// change the output directory at that point deterministically.
fn test_hook_pause(temps: &[TempOutput]) {
    if temps.is_empty() {
        return;
    }
    if let Some(ms) = std::env::var("FIXLOG_TEST_PAUSE_BEFORE_RENAME_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// What was at an output's destination before it was renamed into place.
enum Previous {
    Nothing,
    /// Kept as this hard link until every output is in place.
    Kept(PathBuf),
    /// There was a file but it could not be kept (no hard links on this file system).
    Lost,
}

/// [`commit_outputs`] with the rename as a parameter (tests inject failures).
fn commit_outputs_with(
    mut temps: Vec<TempOutput>,
    rename: impl Fn(&Path, &Path) -> std::io::Result<()>,
) -> Result<(), Error> {
    // Under the lock: a signal waits until every output is in place or put back. The
    // temporary files left (after a failure) are removed when `temps` is dropped, after
    // the lock is released.
    let mut live = live_temps();
    let result = rename_all(&mut temps, &mut live, rename);
    drop(live);
    result
}

fn rename_all(
    temps: &mut [TempOutput],
    live: &mut Vec<PathBuf>,
    rename: impl Fn(&Path, &Path) -> std::io::Result<()>,
) -> Result<(), Error> {
    for t in temps.iter() {
        check_output_target(&t.target)?;
    }
    let mut done: Vec<(PathBuf, Previous)> = Vec::new();
    let mut failure = None;
    for t in temps.iter_mut() {
        let previous = match std::fs::symlink_metadata(&t.target) {
            Err(_) => Previous::Nothing,
            Ok(_) => match create_temp_name(parent_dir(&t.target), &t.target, |p| {
                std::fs::hard_link(&t.target, p)
            }) {
                Ok(((), backup)) => Previous::Kept(backup),
                Err(_) => Previous::Lost,
            },
        };
        match rename(&t.temp, &t.target) {
            Ok(()) => {
                t.done = true;
                live.retain(|p| p != &t.temp);
                done.push((t.target.clone(), previous));
            }
            Err(source) => {
                if let Previous::Kept(backup) = previous {
                    let _ = std::fs::remove_file(backup);
                }
                failure = Some(Error::WriteFile {
                    path: t.target.clone(),
                    source,
                });
                break;
            }
        }
    }
    let Some(failure) = failure else {
        for (_, previous) in done {
            if let Previous::Kept(backup) = previous {
                let _ = std::fs::remove_file(backup);
            }
        }
        return Ok(());
    };
    // Undo in reverse order, so a file written twice gets its first state back.
    for (target, previous) in done.into_iter().rev() {
        match previous {
            Previous::Kept(backup) => {
                let _ = std::fs::rename(&backup, &target);
            }
            Previous::Nothing => {
                let _ = std::fs::remove_file(&target);
            }
            Previous::Lost => {}
        }
    }
    Err(failure)
}

/// The directory a file is in (`.` for a bare name).
fn parent_dir(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Checks that the output directory (`-D`) exists and is a directory, before anything
/// is evaluated. `-` (stdout) is always fine. Soufflé rejects a missing output
/// directory too (`output directory X does not exists`); it does not create it.
pub fn check_output_dir(dir: &Path) -> Result<(), Error> {
    if dir == Path::new("-") {
        return Ok(());
    }
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(Error::NotADirectory(dir.to_path_buf())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(Error::NoOutputDir(dir.to_path_buf()))
        }
        Err(source) => Err(Error::WriteFile {
            path: dir.to_path_buf(),
            source,
        }),
    }
}

/// Makes sure `dir` is a directory: creates it and its missing parents (directories
/// named in an output's `filename`), or says which existing part is not a directory.
fn ensure_dir(dir: &Path) -> Result<(), Error> {
    let mut existing = dir;
    loop {
        match std::fs::metadata(existing) {
            Ok(m) if m.is_dir() => break,
            Ok(_) => return Err(Error::NotADirectory(existing.to_path_buf())),
            Err(_) => match existing.parent().filter(|p| !p.as_os_str().is_empty()) {
                Some(parent) => existing = parent,
                None => break,
            },
        }
    }
    std::fs::create_dir_all(dir).map_err(|source| Error::WriteFile {
        path: dir.to_path_buf(),
        source,
    })
}

/// Writes a file through `write` into a temporary file beside `path`, then renames it
/// to `path`: a failure leaves no half-written file.
pub fn write_atomically(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<(), Error> {
    let tmp = write_temporary(path, write)?;
    tmp.persist()
}

/// Prefix of the temporary files outputs are written to before they are renamed into
/// place: `.fixlog-tmp-<pid>-<random>.<file name>`. The pid lets a later run recognise
/// the leftovers of a process that was killed ([`remove_stale_temporaries`]).
pub const TEMP_PREFIX: &str = ".fixlog-tmp-";

/// This process's temporary output files that are neither renamed nor removed yet; the
/// signal handler ([`remove_temporaries_on_signals`]) removes them. Files are created,
/// renamed and removed while this lock is held, so a signal never sees half a change.
static LIVE_TEMPS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

fn live_temps() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE_TEMPS.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes SIGINT, SIGTERM and SIGHUP remove this process's temporary output files before
/// the process ends as the signal's default action ends it (the shell reports 130, 143,
/// 129). A handler thread waits for the signals; nothing else changes. (SIGKILL cannot
/// be caught: its leftovers are removed by the next run writing into the same
/// directory, see [`remove_stale_temporaries`].)
#[cfg(unix)]
pub fn remove_temporaries_on_signals() -> std::io::Result<()> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
    std::thread::Builder::new()
        .name("fixlog-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                // Keep the lock: no new temporary file may appear from here on.
                let mut live = live_temps();
                for path in live.drain(..) {
                    let _ = std::fs::remove_file(path);
                }
                // The CPU backend's spill directories (their files are unnamed).
                fixlog_cpu::spill::remove_live_dirs();
                let _ = signal_hook::low_level::emulate_default_handler(signal);
                std::process::exit(128 + signal);
            }
        })?;
    Ok(())
}

/// Nothing to do where there are no such signals.
#[cfg(not(unix))]
pub fn remove_temporaries_on_signals() -> std::io::Result<()> {
    Ok(())
}

/// Removes the temporary output files that runs which no longer exist left in `dir`
/// (killed with SIGKILL, or by a power cut, while writing): `.fixlog-tmp-<pid>-…` whose
/// process is gone. Only on Linux, where `/proc/<pid>` says whether a process exists;
/// elsewhere they are left. A pid that was reused by another process keeps its files
/// until that process ends too.
pub fn remove_stale_temporaries(dir: &Path) {
    #[cfg(target_os = "linux")]
    {
        if !Path::new("/proc/self").exists() {
            return;
        }
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let me = std::process::id();
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix(TEMP_PREFIX))
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            if is_file && pid != me && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = dir;
}

/// An output written to a temporary file beside its destination; removed when
/// dropped unless [`TempOutput::persist`]ed.
#[derive(Debug)]
pub struct TempOutput {
    temp: PathBuf,
    target: PathBuf,
    done: bool,
}

impl TempOutput {
    /// The temporary file.
    pub fn temp_path(&self) -> &Path {
        &self.temp
    }

    /// The file it becomes.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Renames the temporary file to its destination.
    pub fn persist(self) -> Result<(), Error> {
        commit_outputs(vec![self])
    }
}

impl Drop for TempOutput {
    fn drop(&mut self) {
        if !self.done {
            let mut live = live_temps();
            let _ = std::fs::remove_file(&self.temp);
            live.retain(|p| p != &self.temp);
        }
    }
}

/// Writes `path`'s future contents through `write` into a new temporary file in the
/// same directory (see [`TEMP_PREFIX`]). The file is created with mode `0666` less the
/// umask (`0644` under the usual umask), as Soufflé's outputs are.
pub fn write_temporary(
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<TempOutput, Error> {
    let err = |source| Error::WriteFile {
        path: path.to_path_buf(),
        source,
    };
    let dir = parent_dir(path);
    ensure_dir(dir)?;
    // Once per directory and process: the leftovers of killed runs.
    {
        static CLEANED: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());
        let mut cleaned = CLEANED.lock().unwrap_or_else(|e| e.into_inner());
        if !cleaned.iter().any(|d| d == dir) {
            cleaned.push(dir.to_path_buf());
            remove_stale_temporaries(dir);
        }
    }
    let mut live = live_temps();
    let (file, temp) = create_temp_name(dir, path, |temp| {
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        // The kernel applies the umask to this mode.
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o666);
        options.open(temp)
    })
    .map_err(err)?;
    live.push(temp.clone());
    drop(live);
    let tmp = TempOutput {
        temp,
        target: path.to_path_buf(),
        done: false,
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, file);
    write(&mut out).map_err(err)?;
    let file = out.into_inner().map_err(|e| err(e.into_error()))?;
    drop(file);
    Ok(tmp)
}

/// A random-enough 32-bit number for temporary names (no dependency: the standard
/// library's randomly keyed hasher over the time and a counter).
fn random_u32() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        h.write_u128(t.as_nanos());
    }
    h.finish() as u32
}

/// Makes a new `dir/.fixlog-tmp-<pid>-<random>.<name of target>` with `create`, which
/// must fail with `AlreadyExists` when the name is taken (another name is tried then).
fn create_temp_name<T>(
    dir: &Path,
    target: &Path,
    mut create: impl FnMut(&Path) -> std::io::Result<T>,
) -> std::io::Result<(T, PathBuf)> {
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // Keep the whole name within the usual 255-byte limit.
    let mut cut = name.len().min(200);
    while !name.is_char_boundary(cut) {
        cut -= 1;
    }
    let name = &name[..cut];
    let mut last = None;
    for _ in 0..64 {
        let temp = dir.join(format!(
            "{TEMP_PREFIX}{}-{:08x}.{name}",
            std::process::id(),
            random_u32()
        ));
        match create(&temp) {
            Ok(made) => return Ok((made, temp)),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last.unwrap_or_else(|| std::io::Error::other("no free temporary name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(path: &Path, text: &str) -> TempOutput {
        write_temporary(path, |f| f.write_all(text.as_bytes())).unwrap()
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn commit_renames_every_output() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        std::fs::write(&a, "old a\n").unwrap();
        let temps = vec![temp(&a, "new a\n"), temp(&b, "new b\n")];
        assert_eq!(names(dir.path()).len(), 3, "a.csv and two temporaries");
        commit_outputs(temps).unwrap();
        assert_eq!(names(dir.path()), ["a.csv", "b.csv"]);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "new a\n");
        assert_eq!(std::fs::read_to_string(&b).unwrap(), "new b\n");
    }

    #[test]
    fn a_failed_rename_puts_every_output_back() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b, c) = (
            dir.path().join("a.csv"),
            dir.path().join("b.csv"),
            dir.path().join("c.csv"),
        );
        std::fs::write(&a, "old a\n").unwrap();
        std::fs::write(&c, "old c\n").unwrap();
        // a (replacing a file) and b (new) are renamed, then c fails.
        let temps = vec![
            temp(&a, "new a\n"),
            temp(&b, "new b\n"),
            temp(&c, "new c\n"),
        ];
        let err = commit_outputs_with(temps, |from, to| {
            if to.ends_with("c.csv") {
                Err(std::io::Error::other("disk on fire"))
            } else {
                std::fs::rename(from, to)
            }
        })
        .unwrap_err();
        assert!(err.to_string().contains("c.csv: disk on fire"), "{err}");
        assert_eq!(names(dir.path()), ["a.csv", "c.csv"]);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a\n");
        assert_eq!(std::fs::read_to_string(&c).unwrap(), "old c\n");
    }

    #[test]
    fn a_directory_in_the_way_fails_before_any_rename() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.csv"), dir.path().join("b.csv"));
        std::fs::write(&a, "old a\n").unwrap();
        let temps = vec![temp(&a, "new a\n"), temp(&b, "new b\n")];
        std::fs::create_dir(&b).unwrap();
        let err = commit_outputs(temps).unwrap_err();
        assert!(
            err.to_string().ends_with("b.csv: it is a directory"),
            "{err}"
        );
        assert_eq!(names(dir.path()), ["a.csv", "b.csv"]);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a\n");
    }

    #[test]
    fn an_output_written_twice_is_put_back_to_its_first_state() {
        let dir = tempfile::tempdir().unwrap();
        let (a, z) = (dir.path().join("a.csv"), dir.path().join("z.csv"));
        std::fs::write(&a, "old a\n").unwrap();
        let temps = vec![temp(&a, "first\n"), temp(&a, "second\n"), temp(&z, "z\n")];
        let err = commit_outputs_with(temps, |from, to| {
            if to.ends_with("z.csv") {
                Err(std::io::Error::other("no"))
            } else {
                std::fs::rename(from, to)
            }
        });
        assert!(err.is_err());
        assert_eq!(names(dir.path()), ["a.csv"]);
        assert_eq!(std::fs::read_to_string(&a).unwrap(), "old a\n");
    }

    #[test]
    fn parameters_are_checked() {
        assert!(check_param(true, "IO", "stdout").is_ok());
        assert!(check_param(false, "IO", "stdout").is_err());
        assert!(check_param(true, "IO", "sqlite").is_err());
        assert!(check_param(false, "headers", "true").is_ok());
        assert!(check_param(true, "headers", "true").is_err());
        assert!(check_param(false, "headers", "yes").is_err());
        assert!(check_param(false, "delimiter", "").is_err());
        assert!(check_param(false, "delimiter", "\\t").is_ok());
        assert!(check_param(false, "compress", "true").is_ok());
        assert!(check_param(true, "compress", "true").is_err());
        assert!(check_param(true, "rfc4180", "true").is_err());
        assert!(check_param(true, "filname", "x").is_err());
    }

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
        format_tuples_into(&tuples, &types, &symbols, "\t", &memory, |p| {
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
        let r = format_tuples_into(&tuples, &types, &symbols, "\t", &memory, |_| {
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
                format_tuples_into(&tuples, types, &symbols, "\t", &memory, |p| {
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
        let err =
            format_tuples_into(&tuples, types, &symbols, "\t", &memory, |_| Ok(())).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory, "{err}");
    }
}

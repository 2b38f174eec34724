//! Reading fact files: an `.input` directive's file read (gunzipped when it is gzip),
//! its lines parsed in parallel and each field read as Soufflé reads it. Apart from the
//! writing side, which shares only the directive's parameters with it.

use super::{delimiter, input_path, io_kind};
use crate::error::Error;
use fixlog_exec::driver::Tuples;
use fixlog_logical::{value, ColType, IoDirective, Relation, SymbolTable, Value};
use rayon::prelude::*;
use std::borrow::Cow;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Reads the file of one `.input` directive and appends its tuples to `out`.
pub fn read_input(
    relation: &Relation,
    directive: &IoDirective,
    facts_dir: &Path,
    symbols: &SymbolTable,
    out: &mut Tuples,
) -> Result<(), Error> {
    let (path, bytes) = match io_kind(directive) {
        "file" => {
            let path = input_path(relation, directive, facts_dir);
            let bytes = read_maybe_gzip(&path)?;
            (path, bytes)
        }
        "stdin" => {
            let path = PathBuf::from("<stdin>");
            let mut raw = Vec::new();
            let bytes = std::io::stdin()
                .lock()
                .read_to_end(&mut raw)
                .and_then(|_| gunzip_if_gzip(raw))
                .map_err(|source| Error::ReadFile {
                    path: path.clone(),
                    source,
                })?;
            (path, bytes)
        }
        "sqlite" => {
            return super::sqlite::read_sqlite(relation, directive, facts_dir, symbols, out)
        }
        other => {
            return Err(Error::BadInput(format!(
                "`.input {}`: IO={other} is not supported (only IO=file, IO=stdin and IO=sqlite)",
                relation.name
            )))
        }
    };
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
    let columns = match directive.params.get("columns") {
        Some(text) => Some(
            super::column_map(text, relation.columns.len())
                .map_err(|why| Error::BadInput(format!("`.input {}`: {why}", relation.name)))?,
        ),
        None => None,
    };
    let format = FactFormat {
        delimiter: &delimiter(directive),
        skip_header: super::param_is_true(directive, "headers"),
        quoted: super::param_is_true(directive, "rfc4180"),
        columns,
    };
    parse_facts(&text, &path, &format, &relation.types(), symbols, out)
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
    std::fs::read(path).and_then(gunzip_if_gzip).map_err(err)
}

/// `raw` decompressed when it starts as gzip does, else as it is.
fn gunzip_if_gzip(raw: Vec<u8>) -> std::io::Result<Vec<u8>> {
    if raw.starts_with(&GZIP_MAGIC) {
        gunzip(&raw)
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

/// How a fact file's lines are cut into fields.
pub struct FactFormat<'a> {
    /// Between fields.
    pub delimiter: &'a str,
    /// The first line holds column names (`headers=true`).
    pub skip_header: bool,
    /// Fields may be quoted as RFC 4180 has them (`rfc4180=true`): `"a,b"` holds the
    /// delimiter, `""` inside quotes is one quote; a quoted field ends at its closing
    /// quote, which the delimiter or the line's end must follow. Lines are lines (a
    /// quoted field does not span them), as Soufflé reads them.
    pub quoted: bool,
    /// Which field of a line each attribute reads (`columns="4:7"`: the first
    /// attribute reads field 4, the second field 7, counted from 0), as the attribute
    /// (if any) each field goes to; `None`: field i to attribute i.
    pub columns: Option<Vec<Option<usize>>>,
}

/// The field of `line` that starts at byte `at`, and where the next one starts (past
/// the line's end after the last); `None` when `at` is past the end.
fn next_field<'a>(
    line: &'a str,
    at: usize,
    format: &FactFormat,
) -> Result<Option<(Cow<'a, str>, usize)>, String> {
    if at > line.len() {
        return Ok(None);
    }
    let rest = &line[at..];
    let after = |end: usize| match line[end..].starts_with(format.delimiter) {
        true if end < line.len() => end + format.delimiter.len(),
        _ => line.len() + 1,
    };
    if !(format.quoted && rest.starts_with('"')) {
        let end = rest.find(format.delimiter).map_or(line.len(), |i| at + i);
        return Ok(Some((Cow::Borrowed(&line[at..end]), after(end))));
    }
    let mut text = String::new();
    let mut chars = rest.char_indices().skip(1).peekable();
    while let Some((i, c)) = chars.next() {
        if c != '"' {
            text.push(c);
            continue;
        }
        if chars.peek().is_some_and(|&(_, n)| n == '"') {
            chars.next();
            text.push('"');
            continue;
        }
        let end = at + i + 1;
        if end < line.len() && !line[end..].starts_with(format.delimiter) {
            return Err(
                "a quoted field must be followed by the delimiter or the line's end".into(),
            );
        }
        return Ok(Some((Cow::Owned(text), after(end))));
    }
    Err("the quoted field has no closing quote on its line".into())
}

/// Parses fact lines in parallel (chunks of lines), keeping file order. As in Soufflé,
/// fields after the relation's last column are ignored; unlike Soufflé, blank lines are
/// skipped (Soufflé reads one as a tuple of empty fields).
pub fn parse_facts(
    text: &str,
    path: &Path,
    format: &FactFormat,
    types: &[ColType],
    symbols: &SymbolTable,
    out: &mut Tuples,
) -> Result<(), Error> {
    let skip_header = format.skip_header;
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
                // Fields read, attributes filled, and where the next field starts.
                let (mut fields, mut filled, mut at) = (0, 0, 0);
                let row_start = rows.len();
                rows.resize(row_start + arity, 0);
                while filled < arity {
                    let bad = |m: String| Error::FactLine {
                        path: path.to_path_buf(),
                        line: line_no,
                        column: column(at),
                        message: format!("column {}: {m}", fields + 1),
                    };
                    let Some((field, next)) = next_field(l, at, format).map_err(bad)? else {
                        break;
                    };
                    let attribute = match &format.columns {
                        None => Some(fields),
                        Some(map) => map.get(fields).copied().flatten(),
                    };
                    if let Some(a) = attribute {
                        rows[row_start + a] =
                            parse_field(&field, types[a], symbols).map_err(bad)?;
                        filled += 1;
                    }
                    fields += 1;
                    at = next;
                }
                if filled != arity {
                    let wanted = format.columns.as_ref().map_or(arity, Vec::len);
                    return Err(Error::FactLine {
                        path: path.to_path_buf(),
                        line: line_no,
                        column: column(l.len()),
                        message: format!(
                            "expected {wanted} column{} but found {fields}",
                            if wanted == 1 { "" } else { "s" },
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

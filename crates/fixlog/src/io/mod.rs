//! Reading fact files and writing outputs in Soufflé's formats.
//!
//! - `.input r` reads `FACTS_DIR/r.facts`: one tuple a line, fields separated by a tab
//!   (or the directive's `delimiter`), a trailing `\r` ignored, blank lines skipped,
//!   fields after the last column ignored; fields are read as Soufflé reads them
//!   ([`parse_field`]), quoted as RFC 4180 has them with `rfc4180=true`
//!   ([`FactFormat`]), from the fields `columns="4:7"` names. `IO=stdin` reads
//!   standard input instead of a file. Errors say `file:line:column`.
//!   `filename="..."` is relative to `FACTS_DIR` unless absolute. Gzip files are
//!   recognised by their magic bytes and decompressed on the fly, whatever their name;
//!   when `r.facts` does not exist but `r.facts.gz` does, that is read.
//! - `.output r` writes `OUT_DIR/r.csv` (or `filename`), tab-separated, in output order
//!   (typed order, see `fixlog_logical::value::output_order`); `headers=true` puts the
//!   attribute names first, `compress=true` gzips the file (default name `r.csv.gz`, as
//!   Soufflé names it), `rfc4180=true` quotes symbols and records as Soufflé does
//!   ([`TextFormat`]). `IO=jsonfile` writes `r.json` and `IO=json` prints JSON as
//!   Soufflé's JSON writer does (`json`); `IO=sqlite` reads and writes SQLite
//!   databases laid out as Soufflé lays them out (`sqlite`). With `-D -` every output prints on stdout
//!   with its header line ([`as_written`]). Each file is written to a
//!   temporary file in the same directory and renamed into place, so a failed run never
//!   leaves a half-written file. `IO=stdout` or `-D -` prints to stdout instead. The
//!   rows are read in output order part by part and formatted in batches, within the
//!   run's memory limit ([`crate::ordered`]), so an output larger than memory is
//!   written without being read into memory.
//!
//! Its files, one job each:
//! - `input`: reading fact files (gzip included) and parsing their lines and fields;
//! - `format`: a relation's rows in output order and their text in Soufflé's format;
//! - `json`: values as Soufflé's JSON writer writes them;
//! - `sqlite`: SQLite databases (tables, the symbol table, the views);
//! - `commit`: writing outputs all or nothing (temporary files, renamed or removed);
//!
//! this one holds the checks of the directives' parameters and where an input is read from.

mod commit;
mod format;
mod input;
mod json;
mod sqlite;

use fixlog_logical::{IoDirective, Program, Relation};
use fixlog_syntax::{Diagnostic, Diagnostics, SourceMap, Span};
use std::path::{Path, PathBuf};

pub use crate::ordered::ReadMemory;
pub use commit::{
    as_written, check_output_dir, check_output_target, commit_outputs, output_target,
    remove_stale_temporaries, remove_temporaries_on_signals, write_atomically, write_output_file,
    write_output_stdout, write_outputs, write_temporary, OutputTarget, TempOutput, TEMP_PREFIX,
};
pub use format::{
    for_each_in_output_order, format_tuples, format_tuples_into, output_rows, OutputFormat,
    TextFormat,
};
pub use input::{parse_facts, parse_field, read_input, FactFormat};
pub use sqlite::{sqlite_path, write_sqlite};

/// A directive's delimiter: its `delimiter` parameter, else a comma with
/// `rfc4180=true` and a tab otherwise (as Soufflé's).
fn delimiter(directive: &IoDirective) -> String {
    match directive.params.get("delimiter") {
        Some(d) => unescape(d),
        None if param_is_true(directive, "rfc4180") => ",".to_string(),
        None => "\t".to_string(),
    }
}

/// `\t`, `\n` and `\\` in a delimiter parameter, as Soufflé accepts them.
fn unescape(s: &str) -> String {
    s.replace("\\t", "\t")
        .replace("\\n", "\n")
        .replace("\\\\", "\\")
}

/// Whether boolean parameter `key` is `true` (checked by `check_param`).
fn param_is_true(directive: &IoDirective, key: &str) -> bool {
    directive.params.get(key).is_some_and(|v| v == "true")
}

/// The first line of an output with `headers=true`: the relation's attribute names
/// joined by the delimiter, as Soufflé writes it.
fn header_line(relation: &Relation, delimiter: &str) -> String {
    let names: Vec<&str> = relation.columns.iter().map(|c| c.name.as_str()).collect();
    names.join(delimiter) + "\n"
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
            (_, "file" | "sqlite") | (true, "stdout" | "json" | "jsonfile") | (false, "stdin") => {
                Ok(())
            }
            (false, _) => Err(format!(
                "IO={value} is not supported in `.input` (Fixlog reads IO=file, IO=stdin and IO=sqlite)"
            )),
            (true, _) => Err(format!(
                "IO={value} is not supported in `.output` (Fixlog writes IO=file, IO=stdout, IO=jsonfile, IO=json and IO=sqlite)"
            )),
        },
        // Soufflé's older name of an SQLite database's `filename`.
        "dbname" if value.is_empty() => Err("`dbname` is empty".into()),
        "dbname" => Ok(()),
        // Soufflé's JSON writer: rows as lists, or objects keyed by attribute names.
        "format" if output && (value == "list" || value == "object") => Ok(()),
        "format" if output => Err(format!(
            "format={value}: the value must be `list` or `object` (for IO=json and IO=jsonfile)"
        )),
        "format" => Err("`format` is for `.output` only (IO=json and IO=jsonfile)".into()),
        "filename" if value.is_empty() => Err("`filename` is empty".into()),
        "filename" => Ok(()),
        "delimiter" if unescape(value).is_empty() => Err("`delimiter` is empty".into()),
        "delimiter" => Ok(()),
        "headers" if !is_bool(value) => Err(format!(
            "headers={value}: the value must be `true` or `false`"
        )),
        "headers" => Ok(()),
        // Gzip input is recognised by its magic bytes whatever this says; an output
        // file is written gzipped.
        "compress" if !is_bool(value) => Err(format!(
            "compress={value}: the value must be `true` or `false`"
        )),
        "compress" => Ok(()),
        "rfc4180" if !is_bool(value) => Err(format!(
            "rfc4180={value}: the value must be `true` or `false`"
        )),
        "rfc4180" => Ok(()),
        // Checked against the relation's arity by `check_directives`.
        "columns" if !output => Ok(()),
        "columns" => Err("`columns` is for `.input` only".into()),
        _ => Err(format!(
            "unknown parameter `{key}` (Fixlog understands IO, filename, dbname, delimiter, headers, compress, rfc4180, for inputs columns and for outputs format)"
        )),
    }
}

/// An input's `columns="4:7"` as the attribute each field of a line goes to (see
/// `FactFormat::columns`): one distinct field number (from 0) per attribute of the
/// relation's `arity`.
fn column_map(text: &str, arity: usize) -> Result<Vec<Option<usize>>, String> {
    let fields = text
        .split(':')
        .map(|f| f.trim().parse::<usize>().ok().filter(|&n| n < 1 << 16))
        .collect::<Option<Vec<usize>>>()
        .ok_or_else(|| {
            format!("columns=\"{text}\": expected field numbers (from 0) separated by `:`")
        })?;
    if fields.len() != arity {
        return Err(format!(
            "columns=\"{text}\" names {} field{} but the relation has {arity} attribute{}",
            fields.len(),
            if fields.len() == 1 { "" } else { "s" },
            if arity == 1 { "" } else { "s" },
        ));
    }
    let mut map = vec![None; fields.iter().max().map_or(0, |&m| m + 1)];
    for (attribute, &field) in fields.iter().enumerate() {
        if map[field].replace(attribute).is_some() {
            return Err(format!("columns=\"{text}\" names field {field} twice"));
        }
    }
    Ok(map)
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
            if param_is_true(directive, "rfc4180") && delimiter(directive).contains('"') {
                let span = param_span(sources, directive.span, "delimiter");
                if seen.insert((span, "delimiter".to_string())) {
                    errors.push(Diagnostic::error(
                        format!(
                            "`.{}put {}`: with rfc4180=true the delimiter cannot hold `\"`",
                            if output { "out" } else { "in" },
                            relation.name
                        ),
                        span,
                    ));
                }
            }
            for (key, value) in &directive.params {
                let checked = check_param(output, key, value).and_then(|()| match key.as_str() {
                    "columns" => column_map(value, relation.columns.len()).map(|_| ()),
                    "IO" if value == "json" || value == "jsonfile" => {
                        json::json_writable(&relation.types(), &program.symbols.records().types())
                    }
                    "IO" if value == "sqlite" => sqlite::sqlite_usable(&relation.types()),
                    "filename" | "dbname"
                        if io_kind(directive) == "sqlite"
                            && (value.starts_with("file:") || value.starts_with(":memory:")) =>
                    {
                        Err(format!(
                            "{key}=\"{value}\": SQLite URIs are not supported (give a file name)"
                        ))
                    }
                    _ => Ok(()),
                });
                let Err(why) = checked else {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_are_checked() {
        assert!(check_param(true, "IO", "stdout").is_ok());
        assert!(check_param(false, "IO", "stdout").is_err());
        assert!(check_param(true, "IO", "sqlite").is_ok());
        assert!(check_param(false, "IO", "sqlite").is_ok());
        assert!(check_param(true, "IO", "postgres").is_err());
        assert!(check_param(true, "dbname", "").is_err());
        assert!(check_param(false, "headers", "true").is_ok());
        assert!(check_param(true, "headers", "true").is_ok());
        assert!(check_param(false, "headers", "yes").is_err());
        assert!(check_param(false, "delimiter", "").is_err());
        assert!(check_param(false, "delimiter", "\\t").is_ok());
        assert!(check_param(false, "compress", "true").is_ok());
        assert!(check_param(true, "compress", "true").is_ok());
        assert!(check_param(true, "compress", "yes").is_err());
        assert!(check_param(false, "rfc4180", "true").is_ok());
        assert!(check_param(true, "rfc4180", "true").is_ok());
        assert!(check_param(true, "rfc4180", "yes").is_err());
        assert!(check_param(true, "filname", "x").is_err());
        assert!(check_param(true, "IO", "jsonfile").is_ok());
        assert!(check_param(true, "IO", "json").is_ok());
        assert!(check_param(false, "IO", "json").is_err());
        assert!(check_param(true, "format", "object").is_ok());
        assert!(check_param(true, "format", "list").is_ok());
        assert!(check_param(true, "format", "table").is_err());
        assert!(check_param(false, "format", "list").is_err());
    }
}

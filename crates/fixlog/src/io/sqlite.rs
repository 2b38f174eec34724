//! SQLite databases as Soufflé reads and writes them (`IO=sqlite`).
//!
//! An output of relation `r` goes into the database `OUTPUT_DIR/r.sqlite` (or
//! `filename`, or Soufflé's older `dbname`): a table `'_r'` with one `INTEGER` column
//! per attribute, named `'0'`, `'1'`, ... (`WITHOUT ROWID`, its columns the primary key,
//! where a row takes less than 200 bytes, as Soufflé decides), emptied and filled; the
//! symbols in the shared table `__SymbolTable(id INTEGER PRIMARY KEY, symbol TEXT
//! UNIQUE)`; and a view `'r'` with the attribute names that resolves the symbols, the
//! one to query. Values as Soufflé writes them, so that Soufflé's reader reads them
//! back: `number` as it is, `unsigned` through a C `int` (above 2^31 - 1 negative); one
//! deliberate difference: floats are SQLite `REAL` values (Soufflé writes their bits as
//! an integer, which neither its reader nor SQL reads back as the float).
//!
//! An input reads `SELECT * FROM 'r'` (the view or a table named `r`) from
//! `FACT_DIR/r.sqlite` (or `filename`/`dbname`), each column's text parsed as the
//! attribute's type, as Soufflé's reader does (an empty or NULL symbol reads as `n/a`,
//! Soufflé's choice); an `unsigned` may be a negative 32-bit integer (how it was
//! written) or up to 4294967295.
//!
//! Records, ADTs and relations without attributes have no SQLite form (Soufflé writes
//! its internal record numbers, and fails on the empty table): refused when the
//! program is checked ([`sqlite_usable`]).
//!
//! Writing stays all or nothing like every output: the database (the earlier file's
//! contents, where there is one) is written as a temporary file beside it, every
//! relation that goes into it in one transaction, and renamed into place with the
//! other outputs.

use super::commit::{write_temporary, TempOutput};
use super::format::for_each_in_output_order;
use crate::error::Error;
use crate::ordered::ReadMemory;
use fixlog_exec::driver::Tuples;
use fixlog_logical::{value, ColType, IoDirective, Relation, SymbolTable, Value};
use rusqlite::types::ValueRef;
use rusqlite::{params_from_iter, Connection, OpenFlags};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Whether a relation of column `types` can be read or written as SQLite: `Err` says
/// why not.
pub fn sqlite_usable(types: &[ColType]) -> Result<(), String> {
    if types.is_empty() {
        return Err(
            "a relation without attributes has no SQLite form (a table needs a column)".into(),
        );
    }
    if types.iter().any(|t| matches!(t, ColType::Record(_))) {
        return Err("record and ADT values have no SQLite form (Soufflé stores its internal record numbers)".into());
    }
    Ok(())
}

/// The database file of an `IO=sqlite` directive: `filename`, else Soufflé's older
/// `dbname`, else `r.sqlite`; relative to `dir` unless absolute.
pub fn sqlite_path(relation: &Relation, directive: &IoDirective, dir: &Path) -> PathBuf {
    let name = directive
        .params
        .get("filename")
        .or_else(|| directive.params.get("dbname"))
        .cloned()
        .unwrap_or_else(|| format!("{}.sqlite", relation.name));
    let path = Path::new(&name);
    if path.is_absolute() {
        path.to_path_buf()
    } else {
        dir.join(path)
    }
}

/// A failure reading the database at `path`.
fn read_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::ReadFile {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!("SQLite: {e}")),
    }
}

/// A failure writing the database at `path`.
fn write_error(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::WriteFile {
        path: path.to_path_buf(),
        source: std::io::Error::other(format!("SQLite: {e}")),
    }
}

/// `path` with its directory resolved (links, `.`, `..`), so that two spellings of
/// one database's name compare equal; as it is where the directory does not exist.
pub fn same_file_key(path: &Path) -> PathBuf {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (parent.canonicalize(), path.file_name()) {
        (Ok(dir), Some(name)) => dir.join(name),
        _ => path.to_path_buf(),
    }
}

/// A quoted SQL name, as Soufflé quotes them (`'name'`).
fn quoted(name: &str) -> String {
    format!("'{}'", name.replace('\'', "''"))
}

/// Reads relation `relation`'s tuples from its `IO=sqlite` input into `out`.
pub fn read_sqlite(
    relation: &Relation,
    directive: &IoDirective,
    facts_dir: &Path,
    symbols: &SymbolTable,
    out: &mut Tuples,
) -> Result<(), Error> {
    let path = sqlite_path(relation, directive, facts_dir);
    let types = relation.types();
    sqlite_usable(&types)
        .map_err(|why| Error::BadInput(format!("`.input {}`: {why}", relation.name)))?;
    if !path.exists() {
        return Err(Error::ReadFile {
            path,
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such database"),
        });
    }
    let conn = Connection::open_with_flags(&path, OpenFlags::SQLITE_OPEN_READ_ONLY)
        .map_err(|e| read_error(&path, e))?;
    let found: i64 = conn
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1",
            [&relation.name],
            |row| row.get(0),
        )
        .map_err(|e| read_error(&path, e))?;
    if found == 0 {
        return Err(Error::BadInput(format!(
            "`.input {}`: no table or view `{}` in the SQLite database {}",
            relation.name,
            relation.name,
            path.display()
        )));
    }
    let mut stmt = conn
        .prepare(&format!("SELECT * FROM {}", quoted(&relation.name)))
        .map_err(|e| read_error(&path, e))?;
    if stmt.column_count() < types.len() {
        return Err(Error::BadInput(format!(
            "`.input {}`: `{}` in {} has {} columns, the relation {}",
            relation.name,
            relation.name,
            path.display(),
            stmt.column_count(),
            types.len()
        )));
    }
    let mut rows = stmt.query([]).map_err(|e| read_error(&path, e))?;
    let mut tuple: Vec<Value> = vec![0; types.len()];
    let mut n = 0usize;
    while let Some(row) = rows.next().map_err(|e| read_error(&path, e))? {
        n += 1;
        for (c, &ty) in types.iter().enumerate() {
            let field = row.get_ref(c).map_err(|e| read_error(&path, e))?;
            let bad = |why: String| {
                Error::BadInput(format!(
                    "{}: row {n}, column {}: {why}",
                    path.display(),
                    c + 1
                ))
            };
            tuple[c] = match (ty, field) {
                (ColType::Symbol, ValueRef::Null) => symbols.intern("n/a"),
                (ColType::Symbol, _) => {
                    let text = sql_text(field);
                    symbols.intern(if text.is_empty() { "n/a" } else { &text })
                }
                (ColType::Number, ValueRef::Integer(i)) => i32::try_from(i)
                    .map(value::from_i32)
                    .map_err(|_| bad(format!("{i} is out of range for a number")))?,
                (ColType::Unsigned, ValueRef::Integer(i)) => i32::try_from(i)
                    .map(value::from_i32)
                    .or_else(|_| u32::try_from(i))
                    .map_err(|_| bad(format!("{i} is out of range for an unsigned")))?,
                (ColType::Float, ValueRef::Real(f)) => value::from_f32(f as f32),
                (ColType::Float, ValueRef::Integer(i)) => value::from_f32(i as f32),
                (_, ValueRef::Null) => return Err(bad("NULL is not a value".into())),
                _ => value::parse_value(sql_text(field).trim(), ty, symbols).map_err(bad)?,
            };
        }
        out.push(&tuple);
    }
    Ok(())
}

/// A column's value as the text SQLite gives for it.
fn sql_text(v: ValueRef<'_>) -> String {
    match v {
        ValueRef::Null => String::new(),
        ValueRef::Integer(i) => i.to_string(),
        ValueRef::Real(f) => f.to_string(),
        ValueRef::Text(t) | ValueRef::Blob(t) => String::from_utf8_lossy(t).into_owned(),
    }
}

/// Writes `relations` (each with its tuples) into the database at `path`: into a
/// temporary copy of it (a new database where there is none), renamed into place by
/// [`super::commit_outputs`] with the other outputs.
pub fn write_sqlite(
    path: &Path,
    relations: &[(&Relation, &Tuples)],
    symbols: &SymbolTable,
    memory: &ReadMemory,
) -> Result<TempOutput, Error> {
    let temp = write_temporary(path, |file| match std::fs::File::open(path) {
        Ok(mut old) => std::io::copy(&mut old, file).map(|_| ()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    })?;
    let db = temp.temp_path().to_path_buf();
    let err = |e: rusqlite::Error| write_error(path, e);
    let mut conn = Connection::open(&db).map_err(err)?;
    // SQLite's page cache: 64 MiB (13.0 s against 21.8 s with its 2 MiB default for a
    // relation of 5M distinct symbols, whose index fills in no order; 2 cores), less
    // under a small memory limit; counted in the run's memory.
    let cache = (memory.allowance() / 4).clamp(2 << 20, 64 << 20);
    let _cache_charge = memory.count(cache);
    conn.execute_batch(&format!(
        "PRAGMA synchronous = OFF; PRAGMA journal_mode = MEMORY; PRAGMA cache_size = -{};",
        cache >> 10
    ))
    .map_err(err)?;
    let tx = conn.transaction().map_err(err)?;
    tx.execute_batch(
        "CREATE TABLE IF NOT EXISTS '__SymbolTable' (id INTEGER PRIMARY KEY, symbol TEXT UNIQUE);",
    )
    .map_err(err)?;
    let strings = symbols.snapshot();
    // Our symbol number -> its id in the database.
    let mut ids: HashMap<Value, i64> = HashMap::new();
    for &(relation, tuples) in relations {
        let types = relation.types();
        sqlite_usable(&types).map_err(|why| write_error(path, why))?;
        let table = quoted(&format!("_{}", relation.name));
        let columns: Vec<String> = (0..types.len()).map(|i| quoted(&i.to_string())).collect();
        // Soufflé's rule: without a rowid where a row takes less than 1/20 of a page.
        let without_rowid = types.len() * 9 + 1 < 200;
        let mut create = format!(
            "CREATE TABLE IF NOT EXISTS {table} ({}",
            columns
                .iter()
                .map(|c| format!("{c} INTEGER"))
                .collect::<Vec<_>>()
                .join(",")
        );
        if without_rowid {
            create += &format!(", PRIMARY KEY ({})) WITHOUT ROWID;", columns.join(","));
        } else {
            create += ");";
        }
        tx.execute_batch(&create).map_err(err)?;
        tx.execute_batch(&format!("DELETE FROM {table};"))
            .map_err(err)?;
        // The view: attribute names, symbols resolved.
        let mut project = Vec::new();
        let mut from = vec![table.clone()];
        let mut join = Vec::new();
        for (i, (col, ty)) in relation.columns.iter().zip(&types).enumerate() {
            let c = &columns[i];
            if *ty == ColType::Symbol {
                let alias = quoted(&format!("_symtab_{i}"));
                project.push(format!("{alias}.symbol AS {}", quoted(&col.name)));
                from.push(format!("'__SymbolTable' AS {alias}"));
                join.push(format!("{table}.{c} = {alias}.id"));
            } else {
                project.push(format!("{table}.{c} AS {}", quoted(&col.name)));
            }
        }
        let mut view = format!(
            "CREATE VIEW IF NOT EXISTS {} AS SELECT {} FROM {}",
            quoted(&relation.name),
            project.join(","),
            from.join(",")
        );
        if !join.is_empty() {
            view += &format!(" WHERE {}", join.join(" AND "));
        }
        tx.execute_batch(&(view + ";")).map_err(err)?;
        let mut insert = tx
            .prepare(&format!(
                "INSERT INTO {table} VALUES ({})",
                vec!["?"; types.len()].join(",")
            ))
            .map_err(err)?;
        let mut add_symbol = tx
            .prepare("INSERT OR IGNORE INTO '__SymbolTable' VALUES (NULL, ?1)")
            .map_err(err)?;
        let mut find_symbol = tx
            .prepare("SELECT id FROM '__SymbolTable' WHERE symbol = ?1")
            .map_err(err)?;
        let mut fields: Vec<rusqlite::types::Value> = Vec::with_capacity(types.len());
        let sql = |e: rusqlite::Error| fixlog_exec::ExecError::Backend(e.to_string());
        for_each_in_output_order(tuples, &types, symbols, memory, |part| {
            for row in part.chunks_exact(types.len()) {
                fields.clear();
                for (&v, &ty) in row.iter().zip(&types) {
                    fields.push(match ty {
                        ColType::Symbol => match ids.get(&v) {
                            Some(&id) => rusqlite::types::Value::Integer(id),
                            None => {
                                let text = strings.get(v as usize).map_or("", |s| s);
                                // A new symbol's id is the row just added; one the
                                // database already holds is looked up.
                                let id: i64 = if add_symbol.execute([text]).map_err(sql)? == 1 {
                                    tx.last_insert_rowid()
                                } else {
                                    find_symbol.query_row([text], |r| r.get(0)).map_err(sql)?
                                };
                                ids.insert(v, id);
                                rusqlite::types::Value::Integer(id)
                            }
                        },
                        // Soufflé binds the 32 bits as a C `int`.
                        ColType::Number | ColType::Unsigned | ColType::Record(_) => {
                            rusqlite::types::Value::Integer(value::as_i32(v) as i64)
                        }
                        ColType::Float => rusqlite::types::Value::Real(value::as_f32(v) as f64),
                    });
                }
                insert
                    .execute(params_from_iter(fields.iter()))
                    .map_err(sql)?;
            }
            Ok(())
        })
        .map_err(|e| match e {
            fixlog_exec::ExecError::Backend(m) => write_error(path, m),
            other => Error::Exec(other),
        })?;
    }
    tx.commit().map_err(err)?;
    drop(conn);
    Ok(temp)
}

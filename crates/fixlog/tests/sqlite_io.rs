//! `IO=sqlite`, as Soufflé lays out its databases: a table `_r` of integer columns, a
//! shared `__SymbolTable`, a view `r` with the attribute names; what is written reads
//! back, through Fixlog's `.input` and through plain SQL; errors are clear. (The
//! round-trip property is in `round_trip.rs`.)

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

fn fixlog(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fixlog"))
        .args(args)
        .arg("--quiet")
        .current_dir(dir)
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

const WRITE: &str = r#".decl r(x: number, s: symbol, u: unsigned, f: float)
r(-1, "a'b", 4294967295, 1.5).
r(2, "", 3, 0.25).
r(3, "a'b", 7, -2.0).
.output r(IO=sqlite, filename="db.sqlite")
.decl q(name: symbol)
q("hello"). q("a'b").
.output q(IO=sqlite, filename="./db.sqlite")
.output q(IO=sqlite)
"#;

#[test]
fn databases_are_laid_out_as_souffle_lays_them_out() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("w.dl"), WRITE).unwrap();
    let out = fixlog(dir.path(), &["run", "w.dl", "-D", "."]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let db = rusqlite::Connection::open(dir.path().join("db.sqlite")).unwrap();
    let rows = |sql: &str| -> Vec<String> {
        let mut stmt = db.prepare(sql).unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |row| {
            Ok((0..n)
                .map(|i| match row.get_ref(i).unwrap() {
                    rusqlite::types::ValueRef::Integer(v) => v.to_string(),
                    rusqlite::types::ValueRef::Real(v) => format!("{v:?}"),
                    rusqlite::types::ValueRef::Text(t) => String::from_utf8_lossy(t).into(),
                    other => format!("{other:?}"),
                })
                .collect::<Vec<_>>()
                .join("|"))
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    // The view, with symbols resolved, in output order; unsigned through a C int,
    // floats as REAL values (a whole one stored as an integer by the column's
    // affinity).
    assert_eq!(
        rows("SELECT * FROM r"),
        ["-1|a'b|-1|1.5", "2||3|0.25", "3|a'b|7|-2"]
    );
    let names: Vec<String> = db
        .prepare("SELECT * FROM r")
        .unwrap()
        .column_names()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(names, ["x", "s", "u", "f"]);
    // The table holds symbol ids; both relations share the symbol table.
    assert_eq!(rows("SELECT count(*) FROM '_r'"), ["3"]);
    assert_eq!(rows("SELECT * FROM q"), ["a'b", "hello"]);
    assert_eq!(
        rows("SELECT symbol FROM __SymbolTable ORDER BY symbol"),
        ["", "a'b", "hello"]
    );
    assert_eq!(
        rows("SELECT name FROM sqlite_master WHERE sql LIKE '%WITHOUT ROWID%' ORDER BY name"),
        ["_q", "_r"]
    );
    // `.output q(IO=sqlite)` alone: q.sqlite.
    assert!(dir.path().join("q.sqlite").exists());

    // Read back through `.input`: an empty symbol reads as `n/a`, as in Soufflé.
    let read = ".decl r(x: number, s: symbol, u: unsigned, f: float)\n\
                .input r(IO=sqlite, dbname=\"db.sqlite\")\n.output r\n\
                .decl q(name: symbol)\n.input q(IO=sqlite)\n.output q\n";
    fs::write(dir.path().join("r.dl"), read).unwrap();
    let out = fixlog(dir.path(), &["run", "r.dl", "-F", ".", "-D", "-"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "---------------\nr\nx\ts\tu\tf\n===============\n-1\ta'b\t4294967295\t1.5\n\
         2\tn/a\t3\t0.25\n3\ta'b\t7\t-2\n===============\n\
         ---------------\nq\nname\n===============\na'b\nhello\n===============\n"
    );

    // A second run replaces the relation's rows and keeps the rest of the database.
    db.execute_batch("CREATE TABLE mine (v INTEGER); INSERT INTO mine VALUES (42);")
        .unwrap();
    drop(db);
    let fewer = WRITE.replace("r(2, \"\", 3, 0.25).\n", "");
    fs::write(dir.path().join("w.dl"), fewer).unwrap();
    let out = fixlog(dir.path(), &["run", "w.dl", "-D", "."]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let db = rusqlite::Connection::open(dir.path().join("db.sqlite")).unwrap();
    let n: i64 = db
        .query_row("SELECT count(*) FROM r", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 2);
    let mine: i64 = db
        .query_row("SELECT v FROM mine", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mine, 42);
    // No temporary file is left beside it.
    let left: Vec<String> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".fixlog-tmp"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn sqlite_errors_are_clear() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str)] = &[
        (
            ".type P = [a: number]\n.decl r(p: P)\n.output r(IO=sqlite)\n",
            "record and ADT values have no SQLite form",
        ),
        (
            ".decl r()\nr().\n.output r(IO=sqlite)\n",
            "a relation without attributes has no SQLite form",
        ),
        (
            ".decl r(x: number)\nr(1).\n.output r(IO=sqlite, filename=\":memory:\")\n",
            "SQLite URIs are not supported",
        ),
        (
            ".decl r(x: number)\n.input r(IO=sqlite)\n.output r\n",
            "cannot read ./r.sqlite",
        ),
        (
            ".decl r(x: number)\n.input r(IO=sqlite, filename=\"other.sqlite\")\n.output r\n",
            "no table or view `r` in the SQLite database",
        ),
        (
            ".decl r(x: number)\n.input r(IO=sqlite, filename=\"text.sqlite\")\n.output r\n",
            "cannot read ./text.sqlite: SQLite",
        ),
        (
            ".decl t(x: number)\n.input t(IO=sqlite, filename=\"other.sqlite\")\n.output t\n",
            "row 1, column 1: `x` is not a valid number",
        ),
    ];
    let other = rusqlite::Connection::open(dir.path().join("other.sqlite")).unwrap();
    other
        .execute_batch("CREATE TABLE t (v TEXT); INSERT INTO t VALUES ('x');")
        .unwrap();
    drop(other);
    fs::write(dir.path().join("text.sqlite"), "not a database at all").unwrap();
    for (program, want) in cases {
        fs::write(dir.path().join("p.dl"), program).unwrap();
        let out = fixlog(dir.path(), &["run", "p.dl", "-F", ".", "-D", "-"]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{program}: {stderr}");
        assert!(stderr.contains(want), "{program}: {stderr}");
        assert!(out.stdout.is_empty(), "{program}");
    }
    // A missing database with -w reads as empty, as a missing fact file does.
    fs::write(dir.path().join("p.dl"), cases[3].0).unwrap();
    let out = fixlog(dir.path(), &["run", "p.dl", "-F", ".", "-D", "-", "-w"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
}

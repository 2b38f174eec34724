//! `range`, `as`, witnesses and `autoinc()` through the library: the same answer for
//! every thread count, and a huge range is an error, never an abort.

mod support;

use fixlog::{Datum, Fixlog};

fn rows(text: &str, rel: &str, jobs: usize) -> Vec<Vec<Datum>> {
    let program = Fixlog::from_source("t.dl", text).unwrap();
    let db = program.run(&support::options(Some(jobs))).unwrap();
    db.relation(rel).unwrap()
}

#[test]
fn autoinc_numbers_do_not_depend_on_threads() {
    // Enough bindings that the backend splits the work.
    let text = ".decl e(x: number, y: number)\n\
                e(x, y) :- x = range(0, 300), y = range(0, 300, 7).\n\
                .decl r(n: number, x: number, y: number)\n\
                r(autoinc(), x, y) :- e(x, y), (x + y) % 3 = 0.\n";
    let one = rows(text, "r", 1);
    assert_eq!(one, rows(text, "r", 4));
    // The numbers are 0.. in output order of the bindings (x, y).
    let n = one.len();
    assert!(n > 1000);
    let mut by_binding = one.clone();
    by_binding.sort_by_key(|r| match (&r[1], &r[2]) {
        (Datum::Number(x), Datum::Number(y)) => (*x, *y),
        _ => unreachable!(),
    });
    for (i, r) in by_binding.iter().enumerate() {
        assert_eq!(r[0], Datum::Number(i as i32));
    }
}

#[test]
fn a_huge_range_is_an_error_naming_the_relation() {
    let text = ".decl r(x: number)\nr(x) :- x = range(0, 2147483647).\n";
    let program = Fixlog::from_source("t.dl", text).unwrap();
    let err = match program.run(&support::options(Some(2))) {
        Ok(_) => panic!("a range of 2^31 values ran"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("range") && err.contains("`r`"), "{err}");
}

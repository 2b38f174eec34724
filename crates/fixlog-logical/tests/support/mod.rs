//! Helpers shared by the checker's test files: compile a program from text, and its
//! errors as (message, "line:col") pairs.

#![allow(dead_code)] // each test file uses the helpers it needs

use fixlog_logical::*;
use fixlog_syntax::{Diagnostics, SourceMap};

pub fn compile(text: &str) -> Program {
    let mut sm = SourceMap::new();
    match compile_str("t.dl", text, &mut sm) {
        Ok(p) => p,
        Err(e) => panic!("unexpected errors:\n{}", e.render(&sm)),
    }
}

/// (message, "line:col", notes) of every error.
pub fn errs_with_notes(text: &str) -> Vec<(String, String, Vec<String>)> {
    let mut sm = SourceMap::new();
    match compile_str("t.dl", text, &mut sm) {
        Ok(_) => panic!("expected an error"),
        Err(Diagnostics(ds)) => ds
            .iter()
            .map(|d| {
                let loc = d
                    .span
                    .map(|s| sm.location(s).trim_start_matches("t.dl:").to_string())
                    .unwrap_or_default();
                (d.message.clone(), loc, d.notes.clone())
            })
            .collect(),
    }
}

/// (message, "line:col") of every error.
pub fn errs(text: &str) -> Vec<(String, String)> {
    errs_with_notes(text)
        .into_iter()
        .map(|(m, l, _)| (m, l))
        .collect()
}

/// The one error of `text`: (message, "line:col").
pub fn err1(text: &str) -> (String, String) {
    let e = errs(text);
    assert_eq!(e.len(), 1, "expected exactly one error, got {e:?}");
    e.into_iter().next().unwrap()
}

pub fn e(msg: &str, loc: &str) -> (String, String) {
    (msg.to_string(), loc.to_string())
}

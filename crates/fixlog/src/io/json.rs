//! Values as Soufflé's JSON writer (`IO=json`, `IO=jsonfile`) writes them: an output
//! is `[` rows separated by `,\n` `]\n`, a row is a list `[1, "a"]` or, with
//! `format=object`, an object keyed by the attribute names `{"x": 1, "s": "a"}`.
//! Apart from `format` because the value rules differ from the CSV writer's and are
//! Soufflé's own, kept byte for byte:
//! - symbols are JSON strings escaped as json11 escapes them (`\"`, `\\`, `\b`, `\f`,
//!   `\n`, `\r`, `\t`, other bytes below 0x20 as `\u00XX`, U+2028 and U+2029 as
//!   `\u2028` and `\u2029`; everything else as it is);
//! - `unsigned` values are written through a C `int` cast, so those above 2^31 - 1
//!   come out negative (`4294967295` is `-1`), as Soufflé 2.5 writes them;
//! - floats in C++'s default stream precision, six significant digits (`%g`):
//!   `1234567` is `1.23457e+06`, `inf` and `nan` as they are (not JSON numbers);
//! - records are nested lists or, with `format=object`, objects keyed by the record
//!   type's field names; `nil` is `null`;
//! - ADT values cannot be written (Soufflé stops with "unsupported type attribute"):
//!   [`json_writable`] refuses such relations when the program is checked.

use fixlog_logical::records::{RecordShape, RecordType, RecordTypeId, RecordView};
use fixlog_logical::{value, ColType, Value};
use std::fmt::Write;
use std::sync::Arc;

/// Appends `s` as a JSON string, escaped as json11 (Soufflé's JSON library) escapes
/// it.
pub fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Whether a relation of column `types` can be written as JSON: `Err` names the first
/// ADT type among them or inside their record types (Soufflé's JSON writer has no form
/// for ADT values).
pub fn json_writable(types: &[ColType], record_types: &[RecordType]) -> Result<(), String> {
    let mut seen = vec![false; record_types.len()];
    let mut todo: Vec<RecordTypeId> = types
        .iter()
        .filter_map(|t| match t {
            ColType::Record(rt) => Some(*rt),
            _ => None,
        })
        .collect();
    while let Some(rt) = todo.pop() {
        let Some(rtype) = record_types.get(rt as usize) else {
            continue;
        };
        if std::mem::replace(&mut seen[rt as usize], true) {
            continue;
        }
        match &rtype.shape {
            RecordShape::Adt(_) => {
                return Err(format!(
                    "values of the ADT type `{}` cannot be written as JSON (Soufflé's JSON writer has no form for them)",
                    rtype.name
                ))
            }
            RecordShape::Record(fields) => todo.extend(fields.iter().filter_map(|f| match f.ty {
                ColType::Record(r) => Some(r),
                _ => None,
            })),
        }
    }
    Ok(())
}

/// Appends one row as Soufflé's JSON writer writes it: `[1, "a"]`, or with `names`
/// (the relation's attribute names, `format=object`) `{"x": 1, "s": "a"}`.
pub fn write_json_row(
    out: &mut String,
    row: &[Value],
    types: &[ColType],
    names: Option<&[String]>,
    strings: &[Arc<str>],
    records: Option<&RecordView>,
) {
    out.push(if names.is_some() { '{' } else { '[' });
    for (c, (&v, &ty)) in row.iter().zip(types).enumerate() {
        if c > 0 {
            out.push_str(", ");
        }
        if let Some(key) = names.and_then(|n| n.get(c)) {
            write_json_string(out, key);
            out.push_str(": ");
        }
        write_json_value(out, v, ty, strings, records, names.is_some());
    }
    out.push(if names.is_some() { '}' } else { ']' });
}

/// Appends value `v` of type `ty` as Soufflé's JSON writer writes it (see the module
/// doc); `keys`: records as objects keyed by their field names (`format=object`).
/// `records` is needed for record types (`None`: written `null`, as is an ADT value,
/// which [`json_writable`] keeps from being written).
pub fn write_json_value(
    out: &mut String,
    v: Value,
    ty: ColType,
    strings: &[Arc<str>],
    records: Option<&RecordView>,
    keys: bool,
) {
    enum Step<'t> {
        Value(ColType, Value),
        Text(&'static str),
        Key(&'t str),
    }
    let mut todo = vec![Step::Value(ty, v)];
    while let Some(step) = todo.pop() {
        let (t, x) = match step {
            Step::Text(s) => {
                out.push_str(s);
                continue;
            }
            Step::Key(k) => {
                write_json_string(out, k);
                out.push_str(": ");
                continue;
            }
            Step::Value(t, x) => (t, x),
        };
        match t {
            ColType::Number => out.push_str(itoa::Buffer::new().format(value::as_i32(x))),
            // Soufflé casts to a C `int` here.
            ColType::Unsigned => out.push_str(itoa::Buffer::new().format(x as i32)),
            ColType::Float => value::write_float_digits(out, value::as_f32(x), 6),
            ColType::Symbol => match strings.get(x as usize) {
                Some(s) => write_json_string(out, s),
                None => write_json_string(out, &format!("<symbol {x}>")),
            },
            ColType::Record(rt) => {
                let found = records.and_then(|r| Some((r.types.get(rt as usize)?, r.tuple(x)?)));
                let Some((
                    RecordType {
                        shape: RecordShape::Record(decl),
                        ..
                    },
                    fields,
                )) = found
                else {
                    out.push_str("null");
                    continue;
                };
                out.push(if keys { '{' } else { '[' });
                todo.push(Step::Text(if keys { "}" } else { "]" }));
                for (i, (f, &fv)) in decl.iter().zip(fields.iter()).enumerate().rev() {
                    todo.push(Step::Value(f.ty, fv));
                    if keys {
                        todo.push(Step::Key(&f.name));
                    }
                    if i > 0 {
                        todo.push(Step::Text(", "));
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use fixlog_logical::records::Field;

    fn js(s: &str) -> String {
        let mut out = String::new();
        write_json_string(&mut out, s);
        out
    }

    #[test]
    fn strings_are_escaped_as_json11_escapes_them() {
        assert_eq!(js("plain"), "\"plain\"");
        assert_eq!(js("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(js("\u{8}\u{c}\n\r\t"), "\"\\b\\f\\n\\r\\t\"");
        assert_eq!(js("\u{1}\u{1f}"), "\"\\u0001\\u001f\"");
        assert_eq!(js("\u{7f}é\u{2028}\u{2029}/"), "\"\u{7f}é\\u2028\\u2029/\"");
    }

    #[test]
    fn values_are_written_as_souffle_writes_them() {
        let strings: Vec<Arc<str>> = vec!["".into(), "a\"b".into()];
        let types = vec![
            RecordType {
                name: "Pair".into(),
                shape: RecordShape::Record(vec![
                    Field {
                        name: "n".into(),
                        ty: ColType::Number,
                    },
                    Field {
                        name: "next".into(),
                        ty: ColType::Record(0),
                    },
                ]),
            },
            RecordType {
                name: "Shape".into(),
                shape: RecordShape::Adt(Vec::new()),
            },
        ];
        // id 1 = [7, nil], id 2 = [-1, [7, nil]]
        let view = RecordView {
            types: types.clone(),
            tuples: vec![
                Arc::from(Vec::new()),
                Arc::from(vec![7, 0]),
                Arc::from(vec![value::from_i32(-1), 1]),
            ],
        };
        let w = |v: Value, ty: ColType, keys: bool| {
            let mut out = String::new();
            write_json_value(&mut out, v, ty, &strings, Some(&view), keys);
            out
        };
        assert_eq!(w(value::from_i32(-5), ColType::Number, false), "-5");
        assert_eq!(w(u32::MAX, ColType::Unsigned, false), "-1");
        assert_eq!(w(7, ColType::Unsigned, false), "7");
        assert_eq!(
            w(value::from_f32(1234567.0), ColType::Float, false),
            "1.23457e+06"
        );
        assert_eq!(w(1, ColType::Symbol, false), "\"a\\\"b\"");
        assert_eq!(w(2, ColType::Record(0), false), "[-1, [7, null]]");
        assert_eq!(
            w(2, ColType::Record(0), true),
            "{\"n\": -1, \"next\": {\"n\": 7, \"next\": null}}"
        );
        assert_eq!(w(0, ColType::Record(0), true), "null");
        // Rows: lists, or objects keyed by the attribute names.
        let row = [value::from_i32(-3), 1, 2];
        let types_of_row = [ColType::Number, ColType::Symbol, ColType::Record(0)];
        let names = ["x".to_string(), "s\"".to_string(), "p".to_string()];
        let mut out = String::new();
        write_json_row(&mut out, &row, &types_of_row, None, &strings, Some(&view));
        assert_eq!(out, "[-3, \"a\\\"b\", [-1, [7, null]]]");
        out.clear();
        write_json_row(
            &mut out,
            &row,
            &types_of_row,
            Some(&names),
            &strings,
            Some(&view),
        );
        assert_eq!(
            out,
            "{\"x\": -3, \"s\\\"\": \"a\\\"b\", \"p\": {\"n\": -1, \"next\": {\"n\": 7, \"next\": null}}}"
        );
        // ADTs are refused before any writing, wherever they are.
        assert!(json_writable(&[ColType::Number, ColType::Record(0)], &types).is_ok());
        let err = json_writable(&[ColType::Record(1)], &types).unwrap_err();
        assert!(err.contains("`Shape`"), "{err}");
        let mut nested = types.clone();
        nested[0].shape = RecordShape::Record(vec![Field {
            name: "s".into(),
            ty: ColType::Record(1),
        }]);
        assert!(json_writable(&[ColType::Record(0)], &nested).is_err());
    }
}

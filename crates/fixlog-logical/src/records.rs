//! Records and algebraic data types as values: the run's table of interned tuples, the
//! record and ADT types the program declares, and how such values are written, read
//! and ordered.
//!
//! As in Soufflé, a record value is a 32-bit id: the id of its tuple of field values
//! in the [`RecordTable`], which interns every tuple once (so `=`/`!=` on records
//! compare ids), and `nil` is id 0. Every relation column, every backend operator and
//! every kernel therefore keeps handling plain `u32`s; only packing (a constructor) and
//! unpacking (a field read) look into the table. An ADT value is the record
//! `[branch, fields...]`, its branch's index (in declaration order) first.
//!
//! The table lives inside the run's [`crate::SymbolTable`] (see
//! [`crate::SymbolTable::records`]), so everything that can resolve or make symbols
//! while rules run (functors on the CPU's threads, the loader, the writers) can also
//! pack and unpack records, without a second table to thread through every layer.
//! Interning takes `&self` (read lock for tuples seen before, write lock for new ones).
//!
//! Ids depend on the order tuples were first made, which depends on the schedule of
//! threads; so output is ordered by value (field by field, `nil` first), not by id,
//! which keeps every output independent of the thread count.

use crate::ir::{ColType, Value};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Write;
use std::sync::{Arc, PoisonError, RwLock};

/// Index of a record or ADT type in [`RecordTable::types`] (`ColType::Record(id)`).
pub type RecordTypeId = u32;

/// A field of a record type or of an ADT branch.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    pub name: String,
    pub ty: ColType,
}

/// One branch of an ADT: `A {x: number}`.
#[derive(Clone, Debug, PartialEq)]
pub struct Branch {
    pub name: String,
    pub fields: Vec<Field>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum RecordShape {
    /// `[a: number, b: T]`
    Record(Vec<Field>),
    /// `A {..} | B {..}`: branches in declaration order.
    Adt(Vec<Branch>),
}

/// A declared record or ADT type.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordType {
    pub name: String,
    pub shape: RecordShape,
}

#[derive(Default, Debug, Clone)]
struct Tuples {
    /// Index = id; entry 0 stands for `nil` and is never looked up.
    by_id: Vec<Arc<[Value]>>,
    ids: HashMap<Arc<[Value]>, Value>,
}

/// The interned tuples of records and ADT values, and the declared types.
#[derive(Default, Debug)]
pub struct RecordTable {
    tuples: RwLock<Tuples>,
    types: RwLock<Vec<RecordType>>,
}

impl Clone for RecordTable {
    fn clone(&self) -> RecordTable {
        RecordTable {
            tuples: RwLock::new(self.read_tuples().clone()),
            types: RwLock::new(self.types()),
        }
    }
}

/// Nesting deeper than this in a record read from text is an error (the reader
/// recurses).
pub const MAX_TEXT_DEPTH: usize = 1000;

impl RecordTable {
    fn read_tuples(&self) -> std::sync::RwLockReadGuard<'_, Tuples> {
        self.tuples.read().unwrap_or_else(PoisonError::into_inner)
    }

    /// The id of the record with these field values, interning it if new; `None` only
    /// once 2^32 - 1 records exist (the rule does not fire, as a failed functor).
    pub fn pack(&self, fields: &[Value]) -> Option<Value> {
        if let Some(&id) = self.read_tuples().ids.get(fields) {
            return Some(id);
        }
        let mut t = self.tuples.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(&id) = t.ids.get(fields) {
            return Some(id);
        }
        if t.by_id.is_empty() {
            t.by_id.push(Arc::from(Vec::new()));
        }
        let id = Value::try_from(t.by_id.len()).ok()?;
        let tuple: Arc<[Value]> = Arc::from(fields);
        t.by_id.push(tuple.clone());
        t.ids.insert(tuple, id);
        Some(id)
    }

    /// Field `i` of the record `id`; `None` for `nil` (which has no fields) or a field
    /// the record lacks.
    pub fn field(&self, id: Value, i: usize) -> Option<Value> {
        if id == 0 {
            return None;
        }
        self.read_tuples()
            .by_id
            .get(id as usize)
            .and_then(|t| t.get(i).copied())
    }

    /// The fields of the record `id` (`None` for `nil` or an unknown id).
    pub fn unpack(&self, id: Value) -> Option<Arc<[Value]>> {
        if id == 0 {
            return None;
        }
        self.read_tuples().by_id.get(id as usize).cloned()
    }

    /// Records made so far (not counting `nil`).
    pub fn len(&self) -> usize {
        self.read_tuples().by_id.len().saturating_sub(1)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// All tuples by id (a snapshot, for writers and sorts that read many).
    pub fn snapshot(&self) -> Vec<Arc<[Value]>> {
        self.read_tuples().by_id.clone()
    }

    /// The declared types (set by the checker).
    pub fn types(&self) -> Vec<RecordType> {
        self.types
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub fn set_types(&self, types: Vec<RecordType>) {
        *self.types.write().unwrap_or_else(PoisonError::into_inner) = types;
    }
}

/// The field types of the stored tuple of a value of `ty` whose tuple is `tuple`: for
/// an ADT, the branch tag (an `unsigned`) and then the branch's fields.
fn stored_types(types: &[RecordType], ty: RecordTypeId, tuple: &[Value]) -> Option<Vec<ColType>> {
    match &types.get(ty as usize)?.shape {
        RecordShape::Record(fields) => Some(fields.iter().map(|f| f.ty).collect()),
        RecordShape::Adt(branches) => {
            let b = branches.get(*tuple.first()? as usize)?;
            let mut out = vec![ColType::Unsigned];
            out.extend(b.fields.iter().map(|f| f.ty));
            Some(out)
        }
    }
}

/// A snapshot of everything needed to print and order record values without locks.
pub struct RecordView {
    pub types: Vec<RecordType>,
    pub tuples: Vec<Arc<[Value]>>,
}

impl RecordView {
    pub fn new(table: &RecordTable) -> RecordView {
        RecordView {
            types: table.types(),
            tuples: table.snapshot(),
        }
    }

    /// The fields of record value `id` (an ADT value: its branch, then its fields);
    /// `None` for `nil` (0) and unknown ids.
    pub fn tuple(&self, id: Value) -> Option<&[Value]> {
        if id == 0 {
            return None;
        }
        self.tuples.get(id as usize).map(|t| &t[..])
    }

    /// The order of two values of a record or ADT type: `nil` first, then field by
    /// field (ADTs: by branch, then field by field), each field in its own type's order
    /// (`base` orders the non-record fields). Iterative: lists may be long.
    pub fn compare(
        &self,
        ty: RecordTypeId,
        a: Value,
        b: Value,
        base: &dyn Fn(ColType, Value, Value) -> Ordering,
    ) -> Ordering {
        let mut todo = vec![(ColType::Record(ty), a, b)];
        while let Some((t, x, y)) = todo.pop() {
            let o = match t {
                ColType::Record(rt) => {
                    if x == y {
                        continue;
                    }
                    match (self.tuple(x), self.tuple(y)) {
                        (None, None) => x.cmp(&y),
                        (None, Some(_)) => Ordering::Less,
                        (Some(_), None) => Ordering::Greater,
                        (Some(tx), Some(ty_)) => {
                            let adt = matches!(
                                self.types.get(rt as usize).map(|r| &r.shape),
                                Some(RecordShape::Adt(_))
                            );
                            if adt && tx.first() != ty_.first() {
                                tx.first().cmp(&ty_.first())
                            } else if let Some(fts) = stored_types(&self.types, rt, tx) {
                                for (i, ft) in fts.iter().enumerate().rev() {
                                    if let (Some(&p), Some(&q)) = (tx.get(i), ty_.get(i)) {
                                        todo.push((*ft, p, q));
                                    }
                                }
                                Ordering::Equal
                            } else {
                                tx.cmp(ty_)
                            }
                        }
                    }
                }
                other => base(other, x, y),
            };
            if o != Ordering::Equal {
                return o;
            }
        }
        Ordering::Equal
    }

    /// Appends `v`, a value of the record or ADT type `ty`, as Soufflé writes it:
    /// `[1, a, nil]` (symbols unquoted), `$A(1, $B)`, `$B` for a branch without fields.
    /// `base` writes the non-record fields. Iterative: lists may be long.
    pub fn write(
        &self,
        out: &mut String,
        ty: RecordTypeId,
        v: Value,
        base: &mut dyn FnMut(&mut String, ColType, Value),
    ) {
        enum Step {
            Value(ColType, Value),
            Text(&'static str),
        }
        let mut todo = vec![Step::Value(ColType::Record(ty), v)];
        while let Some(step) = todo.pop() {
            let (t, x) = match step {
                Step::Text(s) => {
                    out.push_str(s);
                    continue;
                }
                Step::Value(t, x) => (t, x),
            };
            let ColType::Record(rt) = t else {
                base(out, t, x);
                continue;
            };
            let Some(tuple) = self.tuple(x) else {
                if x == 0 {
                    out.push_str("nil");
                } else {
                    let _ = write!(out, "<record {x}>");
                }
                continue;
            };
            let Some(rtype) = self.types.get(rt as usize) else {
                let _ = write!(out, "<record {x}>");
                continue;
            };
            let (fields, start, close) = match &rtype.shape {
                RecordShape::Record(f) => {
                    out.push('[');
                    (f.iter().map(|f| f.ty).collect::<Vec<_>>(), 0, "]")
                }
                RecordShape::Adt(branches) => {
                    let Some(b) = tuple.first().and_then(|&i| branches.get(i as usize)) else {
                        let _ = write!(out, "<record {x}>");
                        continue;
                    };
                    out.push('$');
                    out.push_str(&b.name);
                    if b.fields.is_empty() {
                        continue;
                    }
                    out.push('(');
                    (b.fields.iter().map(|f| f.ty).collect(), 1, ")")
                }
            };
            todo.push(Step::Text(close));
            for (i, ft) in fields.iter().enumerate().rev() {
                if let Some(&fv) = tuple.get(start + i) {
                    todo.push(Step::Value(*ft, fv));
                }
                if i > 0 {
                    todo.push(Step::Text(", "));
                }
            }
        }
    }
}

/// Reads a value of the record or ADT type `ty` from `text` as Soufflé's readers do:
/// `nil`, `[f1, f2]`, `$Branch(f1, f2)`, `$Branch`; whitespace between tokens; a symbol
/// field is a double-quoted string (backslash escapes) or the text up to the next `,`
/// or closing bracket. `base` parses the other fields from their text. The whole text
/// must be consumed.
pub fn parse_record(
    text: &str,
    ty: RecordTypeId,
    table: &RecordTable,
    base: &dyn Fn(&str, ColType) -> Result<Value, String>,
) -> Result<Value, String> {
    let types = table.types();
    let mut p = TextReader {
        s: text.as_bytes(),
        text,
        pos: 0,
        types: &types,
        table,
        base,
    };
    let v = p.value(ColType::Record(ty), b",]", 0)?;
    p.ws();
    if p.pos != p.s.len() {
        return Err(format!(
            "unexpected `{}` after the record at character {}",
            p.rest(),
            p.pos + 1
        ));
    }
    Ok(v)
}

struct TextReader<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
    types: &'a [RecordType],
    table: &'a RecordTable,
    base: &'a dyn Fn(&str, ColType) -> Result<Value, String>,
}

impl TextReader<'_> {
    /// The text from the current position, cut short for messages.
    fn rest(&self) -> String {
        let rest = self.text.get(self.pos..).unwrap_or("");
        match rest.char_indices().nth(20) {
            Some((i, _)) => format!("{}...", &rest[..i]),
            None => rest.to_string(),
        }
    }

    fn ws(&mut self) {
        while self
            .s
            .get(self.pos)
            .is_some_and(|c| c.is_ascii_whitespace())
        {
            self.pos += 1;
        }
    }

    fn eat(&mut self, c: u8) -> Result<(), String> {
        self.ws();
        match self.s.get(self.pos) {
            Some(&x) if x == c => {
                self.pos += 1;
                Ok(())
            }
            Some(_) => Err(format!(
                "expected `{}` at character {} of the record, found `{}`",
                c as char,
                self.pos + 1,
                self.rest()
            )),
            None => Err(format!("expected `{}` at the end of the record", c as char)),
        }
    }

    fn value(&mut self, ty: ColType, stops: &[u8], depth: usize) -> Result<Value, String> {
        if depth > MAX_TEXT_DEPTH {
            return Err(format!("records nested more than {MAX_TEXT_DEPTH} deep"));
        }
        self.ws();
        let ColType::Record(rt) = ty else {
            return self.base_field(ty, stops);
        };
        let rtype = self
            .types
            .get(rt as usize)
            .ok_or_else(|| format!("unknown record type {rt}"))?;
        let rest = &self.s[self.pos..];
        if rest.starts_with(b"nil") {
            self.pos += 3;
            return Ok(0);
        }
        match &rtype.shape {
            RecordShape::Record(fields) => {
                self.eat(b'[')?;
                let mut vals = Vec::with_capacity(fields.len());
                for (i, f) in fields.iter().enumerate() {
                    if i > 0 {
                        self.eat(b',')?;
                    }
                    vals.push(self.value(f.ty, b",]", depth + 1)?);
                }
                self.eat(b']')?;
                self.table
                    .pack(&vals)
                    .ok_or_else(|| "the record table is full".to_string())
            }
            RecordShape::Adt(branches) => {
                self.eat(b'$')?;
                let start = self.pos;
                while self
                    .s
                    .get(self.pos)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'?' | b'.'))
                {
                    self.pos += 1;
                }
                let name = self.text.get(start..self.pos).unwrap_or("");
                let (bi, b) = branches
                    .iter()
                    .enumerate()
                    .find(|(_, b)| b.name == name)
                    .ok_or_else(|| {
                        format!("`${name}` is not a branch of the type `{}`", rtype.name)
                    })?;
                let mut vals = vec![bi as Value];
                if !b.fields.is_empty() {
                    self.eat(b'(')?;
                    for (i, f) in b.fields.iter().enumerate() {
                        if i > 0 {
                            self.eat(b',')?;
                        }
                        vals.push(self.value(f.ty, b",)", depth + 1)?);
                    }
                    self.eat(b')')?;
                }
                self.table
                    .pack(&vals)
                    .ok_or_else(|| "the record table is full".to_string())
            }
        }
    }

    fn base_field(&mut self, ty: ColType, stops: &[u8]) -> Result<Value, String> {
        if ty == ColType::Symbol && self.s.get(self.pos) == Some(&b'"') {
            self.pos += 1;
            let mut sym = Vec::new();
            loop {
                match self.s.get(self.pos) {
                    None => return Err("unterminated string in the record".to_string()),
                    Some(b'"') => {
                        self.pos += 1;
                        break;
                    }
                    Some(b'\\') => {
                        if let Some(&c) = self.s.get(self.pos + 1) {
                            sym.push(c);
                        }
                        self.pos += 2;
                    }
                    Some(&c) => {
                        sym.push(c);
                        self.pos += 1;
                    }
                }
            }
            return (self.base)(&String::from_utf8_lossy(&sym), ty);
        }
        let start = self.pos;
        while self.s.get(self.pos).is_some_and(|c| !stops.contains(c)) {
            self.pos += 1;
        }
        if self.pos == self.s.len() {
            return Err("unexpected end of the record".to_string());
        }
        let field = self.text.get(start..self.pos).unwrap_or("");
        let field = if ty == ColType::Symbol {
            field
        } else {
            field.trim()
        };
        (self.base)(field, ty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> RecordTable {
        let t = RecordTable::default();
        let num = |name: &str| Field {
            name: name.into(),
            ty: ColType::Number,
        };
        t.set_types(vec![
            RecordType {
                name: "List".into(),
                shape: RecordShape::Record(vec![
                    num("head"),
                    Field {
                        name: "tail".into(),
                        ty: ColType::Record(0),
                    },
                ]),
            },
            RecordType {
                name: "T".into(),
                shape: RecordShape::Adt(vec![
                    Branch {
                        name: "A".into(),
                        fields: vec![num("x"), num("y")],
                    },
                    Branch {
                        name: "B".into(),
                        fields: Vec::new(),
                    },
                ]),
            },
        ]);
        t
    }

    fn base(text: &str, ty: ColType) -> Result<Value, String> {
        match ty {
            ColType::Number => text
                .parse::<i32>()
                .map(|x| x as Value)
                .map_err(|_| format!("`{text}` is not a number")),
            _ => Err("unexpected type".into()),
        }
    }

    fn write(t: &RecordTable, ty: RecordTypeId, v: Value) -> String {
        let mut out = String::new();
        RecordView::new(t).write(&mut out, ty, v, &mut |o, _, x| {
            o.push_str(&(x as i32).to_string())
        });
        out
    }

    #[test]
    fn packing_interns_and_nil_has_no_fields() {
        let t = table();
        let a = t.pack(&[1, 0]);
        assert_eq!(a, t.pack(&[1, 0]));
        assert_ne!(a, Some(0));
        let a = a.unwrap_or(0);
        assert_eq!(t.field(a, 0), Some(1));
        assert_eq!(t.field(a, 2), None);
        assert_eq!(t.field(0, 0), None);
        assert_eq!(t.len(), 1);
    }

    #[test]
    fn text_round_trips_as_souffle_writes_it() {
        let t = table();
        for (ty, text) in [
            (0, "nil"),
            (0, "[1, nil]"),
            (0, "[-2, [3, [4, nil]]]"),
            (1, "$A(1, -2)"),
            (1, "$B"),
        ] {
            let v = parse_record(text, ty, &t, &base);
            assert_eq!(v.map(|v| write(&t, ty, v)), Ok(text.to_string()));
        }
        let spaced = parse_record(" [ 1 ,[2,nil] ] ", 0, &t, &base);
        assert_eq!(spaced.map(|v| write(&t, 0, v)), Ok("[1, [2, nil]]".into()));
        assert!(parse_record("[1, nil", 0, &t, &base).is_err());
        assert!(parse_record("[1, nil] x", 0, &t, &base).is_err());
        assert!(parse_record("$C", 1, &t, &base).is_err());
        let deep = "[1, ".repeat(MAX_TEXT_DEPTH + 2) + "nil" + &"]".repeat(MAX_TEXT_DEPTH + 2);
        assert!(parse_record(&deep, 0, &t, &base).is_err());
    }

    #[test]
    fn order_is_by_value_not_by_id() {
        let t = table();
        // Made in the opposite of their order.
        let three = t.pack(&[3, 0]).unwrap_or(0);
        let one = t.pack(&[1, 0]).unwrap_or(0);
        let minus = t.pack(&[(-1i32) as Value, 0]).unwrap_or(0);
        let view = RecordView::new(&t);
        let num = |_: ColType, x: Value, y: Value| (x as i32).cmp(&(y as i32));
        assert_eq!(view.compare(0, one, three, &num), Ordering::Less);
        assert_eq!(view.compare(0, minus, one, &num), Ordering::Less);
        assert_eq!(view.compare(0, 0, minus, &num), Ordering::Less);
        let b = t.pack(&[1]).unwrap_or(0);
        let a = t.pack(&[0, 9, 9]).unwrap_or(0);
        let view = RecordView::new(&t);
        assert_eq!(view.compare(1, a, b, &num), Ordering::Less);
    }

    #[test]
    fn long_lists_print_and_compare_without_deep_recursion() {
        let t = table();
        let mut l = 0;
        for i in 0..200_000 {
            l = t.pack(&[i, l]).unwrap_or(0);
        }
        let text = write(&t, 0, l);
        assert!(text.starts_with("[199999, [199998, "));
        let view = RecordView::new(&t);
        let num = |_: ColType, x: Value, y: Value| x.cmp(&y);
        assert_eq!(view.compare(0, l, l, &num), Ordering::Equal);
    }
}

//! The C preprocessor, as Soufflé runs it over a program (`mcpp`/`cpp`), done here.
//!
//! Supported: `#define NAME body`, function-like macros `#define F(a, b) body` (with
//! `#x` stringification, `##` pasting and `...`/`__VA_ARGS__`), `#undef`,
//! `#ifdef`/`#ifndef`/`#if`/`#elif`/`#else`/`#endif` (integer expressions with
//! `defined`, `&&`, `||`, `!`, comparisons, arithmetic, `?:`), `#include "file"` and
//! `#include <file>` (searched relative to the including file, then in the include
//! directories), `#pragma once`, `#error`, `__FILE__`, `__LINE__`, line continuations.
//! Comments and string literals are never expanded. Unknown directives are errors.
//!
//! The output is one text whose every byte maps back to a place in an original file
//! ([`crate::source::Segment`]s), so diagnostics keep giving the original
//! `file:line:column` (a macro's expansion maps to where the macro was used). Macro
//! expansion (depth and size) and include nesting are bounded; going past a bound is an
//! error at the culprit, never a stack overflow or a hang.
//!
//! An external command can replace it ([`Preprocessor::External`]): the program goes
//! to its standard input, and its output's line markers (`# 12 "file.dl"`, `#line 12
//! "file.dl"`) map locations back.

use crate::diagnostic::Diagnostic;
use crate::source::{FileId, Segment, SourceFile, SourceMap, Span};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Which preprocessor runs over program files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Preprocessor {
    /// Fixlog's own (the default).
    #[default]
    Builtin,
    /// A shell command (run with `sh -c`), reading the program on standard input and
    /// writing the preprocessed program on standard output.
    External(String),
    /// None: `#` lines are syntax errors.
    Off,
}

/// How program files are preprocessed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PreprocessOptions {
    pub preprocessor: Preprocessor,
    /// Macros defined before the program (`-M NAME=VALUE`; `NAME` alone means `1`).
    pub defines: Vec<(String, String)>,
    /// Directories searched for `#include`d files after the including file's own.
    pub include_dirs: Vec<PathBuf>,
}

impl PreprocessOptions {
    /// Parses `-M` arguments: `NAME=VALUE` or `NAME` (value `1`); several may be given
    /// in one argument separated by spaces, as Soufflé allows.
    pub fn add_macro_arg(&mut self, arg: &str) -> Result<(), String> {
        for def in arg.split_whitespace() {
            let (name, value) = def.split_once('=').unwrap_or((def, "1"));
            if !is_ident(name) {
                return Err(format!("-M `{def}`: `{name}` is not a macro name"));
            }
            self.defines.push((name.to_string(), value.to_string()));
        }
        Ok(())
    }
}

/// Deepest `#include` nesting.
pub const MAX_INCLUDE_DEPTH: usize = 64;
/// Deepest nesting of macro expansions.
pub const MAX_EXPANSION_DEPTH: usize = 256;
/// Most bytes one line may grow to by macro expansion.
pub const MAX_EXPANSION_BYTES: usize = 16 << 20;
/// Most bytes of preprocessed output in all.
pub const MAX_OUTPUT_BYTES: usize = 1 << 30;

fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn is_ident_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Preprocesses file `file` of `sources`. Returns the file to parse: `file` itself when
/// preprocessing changes nothing, else a new file of the output whose locations map back
/// to the original files (`#include`d files are added to `sources`).
pub fn preprocess(
    sources: &mut SourceMap,
    file: FileId,
    options: &PreprocessOptions,
) -> Result<FileId, Vec<Diagnostic>> {
    match &options.preprocessor {
        Preprocessor::Off => Ok(file),
        Preprocessor::External(cmd) => external(sources, file, cmd),
        Preprocessor::Builtin => {
            let text = &sources.file(file).text;
            let has_directive = text
                .lines()
                .any(|l| l.trim_start().starts_with('#') || l.ends_with('\\'));
            if !has_directive && options.defines.is_empty() {
                return Ok(file);
            }
            let mut pp = Pre {
                options,
                macros: HashMap::new(),
                out: Out::default(),
                errors: Vec::new(),
                once: HashSet::new(),
            };
            for (name, value) in &options.defines {
                pp.macros.insert(
                    name.clone(),
                    Macro {
                        params: None,
                        variadic: false,
                        body: value.clone(),
                    },
                );
            }
            pp.file(sources, file, 0);
            if !pp.errors.is_empty() {
                return Err(pp.errors);
            }
            let f = sources.file(file);
            let mut out = SourceFile::new(f.name.clone(), f.path.clone(), pp.out.text);
            out.origin = Some(pp.out.segs);
            Ok(sources.add(out))
        }
    }
}

struct Macro {
    /// `None`: object-like.
    params: Option<Vec<String>>,
    variadic: bool,
    body: String,
}

#[derive(Default)]
struct Out {
    text: String,
    segs: Vec<Segment>,
}

impl Out {
    /// Appends `s`, whose bytes come from `orig..` of `file` (`exact`) or all from the
    /// place `orig` (a macro's expansion).
    fn push(&mut self, s: &str, file: FileId, orig: usize, exact: bool) {
        if s.is_empty() {
            return;
        }
        let out = self.text.len() as u32;
        let contiguous = self.segs.last().is_some_and(|l| {
            l.exact && exact && l.file == file && l.orig + (out - l.out) == orig as u32
        });
        if !contiguous {
            self.segs.push(Segment {
                out,
                file,
                orig: orig as u32,
                exact,
            });
        }
        self.text.push_str(s);
    }
}

#[derive(Clone, Copy)]
struct Cond {
    /// Whether the current branch is being kept.
    active: bool,
    /// Whether some branch of this `#if` was taken already.
    taken: bool,
    /// Whether the enclosing text is kept.
    parent: bool,
    else_seen: bool,
    span: Span,
}

struct Pre<'o> {
    options: &'o PreprocessOptions,
    macros: HashMap<String, Macro>,
    out: Out,
    errors: Vec<Diagnostic>,
    once: HashSet<PathBuf>,
}

/// A logical line: the text with continuations removed, and where each piece of it
/// starts in the file (`(line offset, file offset)`).
struct Line {
    text: String,
    pieces: Vec<(usize, usize)>,
}

impl Line {
    fn orig(&self, pos: usize) -> usize {
        let i = match self.pieces.binary_search_by_key(&pos, |p| p.0) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let (l, o) = self.pieces[i];
        o + (pos - l)
    }
}

/// Splits text into logical lines (a `\` at the end of a line joins the next).
fn logical_lines(text: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut cur = Line {
        text: String::new(),
        pieces: vec![(0, 0)],
    };
    let mut pos = 0;
    for phys in text.split_inclusive('\n') {
        let body = phys.strip_suffix('\n').unwrap_or(phys);
        let body = body.strip_suffix('\r').unwrap_or(body);
        if let Some(joined) = body.strip_suffix('\\') {
            cur.text.push_str(joined);
            pos += phys.len();
            cur.pieces.push((cur.text.len(), pos));
        } else {
            cur.text.push_str(body);
            lines.push(cur);
            pos += phys.len();
            cur = Line {
                text: String::new(),
                pieces: vec![(0, pos)],
            };
        }
    }
    if !cur.text.is_empty() {
        lines.push(cur);
    }
    lines
}

/// Text of a line with comments removed (for directives); `in_comment` carries a block
/// comment over lines.
fn strip_comments(s: &str, in_comment: &mut bool) -> String {
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let mut start = 0;
    while i < b.len() {
        if *in_comment {
            if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                *in_comment = false;
                i += 2;
                start = i;
                out.push(' ');
            } else {
                i += 1;
            }
            continue;
        }
        match b[i] {
            b'"' | b'\'' => i = skip_quoted(b, i),
            b'/' if b.get(i + 1) == Some(&b'/') => {
                out.push_str(&s[start..i]);
                return out;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                out.push_str(&s[start..i]);
                *in_comment = true;
                i += 2;
            }
            _ => i += 1,
        }
    }
    if !*in_comment {
        out.push_str(&s[start..]);
    }
    out
}

/// The index after a quoted literal starting at `i` (or the end of the line).
fn skip_quoted(b: &[u8], i: usize) -> usize {
    let q = b[i];
    let mut j = i + 1;
    while j < b.len() {
        if b[j] == b'\\' {
            j += 2;
        } else if b[j] == q {
            return j + 1;
        } else {
            j += 1;
        }
    }
    b.len()
}

impl Pre<'_> {
    fn err(&mut self, msg: impl Into<String>, span: Span) {
        self.errors.push(Diagnostic::error(msg, span));
    }

    fn active(conds: &[Cond]) -> bool {
        conds.last().is_none_or(|c| c.active)
    }

    fn file(&mut self, sources: &mut SourceMap, file: FileId, depth: usize) {
        let text = sources.file(file).text.clone();
        let name = sources.file(file).name.clone();
        let mut conds: Vec<Cond> = Vec::new();
        let mut in_comment = false;
        // The physical line (0-based) where the logical line starts.
        let mut lineno = 0;
        for line in &logical_lines(&text) {
            let this = lineno;
            lineno += line.pieces.len();
            let lineno = this;
            if self.errors.len() > 100 || self.out.text.len() > MAX_OUTPUT_BYTES {
                if self.errors.is_empty() {
                    self.err(
                        "the preprocessed program is larger than 1 GiB",
                        Span::new(file, line.orig(0), line.orig(0)),
                    );
                }
                return;
            }
            let trimmed = line.text.trim_start();
            if !in_comment && trimmed.starts_with('#') {
                let lead = line.text.len() - trimmed.len();
                let body = strip_comments(&trimmed[1..], &mut in_comment);
                self.directive(sources, file, line, lead, &body, &mut conds, depth);
                self.out.push("\n", file, line.orig(line.text.len()), false);
                continue;
            }
            if Self::active(&conds) {
                self.text_line(file, &name, lineno, line, &mut in_comment);
            } else {
                strip_comments(&line.text, &mut in_comment);
            }
            self.out.push("\n", file, line.orig(line.text.len()), true);
        }
        if let Some(c) = conds.first() {
            self.err("`#if` without `#endif`", c.span);
        }
    }

    /// Copies one line of program text, expanding macros outside comments and strings.
    fn text_line(
        &mut self,
        file: FileId,
        name: &str,
        lineno: usize,
        line: &Line,
        in_comment: &mut bool,
    ) {
        let s = &line.text;
        let b = s.as_bytes();
        let mut i = 0;
        let mut copied = 0;
        while i < b.len() {
            if *in_comment {
                if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                    *in_comment = false;
                    i += 2;
                } else {
                    i += 1;
                }
                continue;
            }
            match b[i] {
                b'"' => i = skip_quoted(b, i),
                b'/' if b.get(i + 1) == Some(&b'/') => break,
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    *in_comment = true;
                    i += 2;
                }
                c if c.is_ascii_digit() => {
                    while i < b.len() && (is_ident_char(b[i]) || b[i] == b'.') {
                        i += 1;
                    }
                }
                c if is_ident_start(c) => {
                    let start = i;
                    while i < b.len() && is_ident_char(b[i]) {
                        i += 1;
                    }
                    let word = &s[start..i];
                    let builtin = match word {
                        "__LINE__" => Some((lineno + 1).to_string()),
                        "__FILE__" => Some(format!("\"{}\"", name.replace('"', "\\\""))),
                        _ => None,
                    };
                    let expanded = if let Some(v) = builtin {
                        Ok(Some((v, i)))
                    } else if self.macros.contains_key(word) {
                        let mut hide = Vec::new();
                        let mut budget = MAX_EXPANSION_BYTES;
                        self.invoke(s, start, &mut hide, 0, &mut budget)
                    } else {
                        Ok(None)
                    };
                    match expanded {
                        Ok(Some((text, end))) => {
                            self.copy(line, file, copied, start);
                            self.out.push(&text, file, line.orig(start), false);
                            i = end;
                            copied = end;
                        }
                        Ok(None) => {}
                        Err(msg) => {
                            let span = Span::new(file, line.orig(start), line.orig(i));
                            self.err(msg, span);
                            return;
                        }
                    }
                }
                _ => i += 1,
            }
        }
        self.copy(line, file, copied, s.len());
    }

    /// Copies `line.text[from..to]` with exact locations.
    fn copy(&mut self, line: &Line, file: FileId, from: usize, to: usize) {
        let mut a = from;
        while a < to {
            // The end of the piece containing `a`.
            let next = line
                .pieces
                .iter()
                .map(|p| p.0)
                .find(|&p| p > a)
                .unwrap_or(usize::MAX)
                .min(to);
            self.out.push(&line.text[a..next], file, line.orig(a), true);
            a = next;
        }
    }

    /// Expands the macro named at `s[start..]`. Returns the expansion and where the
    /// invocation ends, or `None` when a function-like macro is not called there.
    fn invoke(
        &self,
        s: &str,
        start: usize,
        hide: &mut Vec<String>,
        depth: usize,
        budget: &mut usize,
    ) -> Result<Option<(String, usize)>, String> {
        let b = s.as_bytes();
        let mut i = start;
        while i < b.len() && is_ident_char(b[i]) {
            i += 1;
        }
        let name = &s[start..i];
        if hide.iter().any(|h| h == name) {
            return Ok(None);
        }
        let Some(m) = self.macros.get(name) else {
            return Ok(None);
        };
        if depth >= MAX_EXPANSION_DEPTH {
            return Err(format!(
                "macro expansion deeper than {MAX_EXPANSION_DEPTH} levels (at `{name}`)"
            ));
        }
        let body = match &m.params {
            None => m.body.clone(),
            Some(params) => {
                let mut j = i;
                while j < b.len() && b[j].is_ascii_whitespace() {
                    j += 1;
                }
                if b.get(j) != Some(&b'(') {
                    return Ok(None);
                }
                let (args, end) = split_args(s, j).ok_or_else(|| {
                    format!(
                        "unterminated arguments of macro `{name}` (they must end on the same line; join lines with `\\`)"
                    )
                })?;
                i = end;
                let args = if args.len() == 1 && args[0].trim().is_empty() && params.is_empty() {
                    Vec::new()
                } else {
                    args
                };
                let fixed = params.len();
                let ok = if m.variadic {
                    args.len() >= fixed
                } else {
                    args.len() == fixed
                };
                if !ok {
                    return Err(format!(
                        "macro `{name}` takes {fixed} argument{}, given {}",
                        if fixed == 1 { "" } else { "s" },
                        args.len()
                    ));
                }
                let mut raw: Vec<String> =
                    args[..fixed].iter().map(|a| a.trim().to_string()).collect();
                let mut names = params.clone();
                if m.variadic {
                    names.push("__VA_ARGS__".into());
                    raw.push(
                        args[fixed..]
                            .iter()
                            .map(|a| a.trim())
                            .collect::<Vec<_>>()
                            .join(", "),
                    );
                }
                let mut expanded = Vec::with_capacity(raw.len());
                for a in &raw {
                    expanded.push(self.expand(a, hide, depth + 1, budget)?);
                }
                substitute(&m.body, &names, &raw, &expanded)
            }
        };
        hide.push(name.to_string());
        let r = self.expand(&body, hide, depth + 1, budget);
        hide.pop();
        Ok(Some((r?, i)))
    }

    /// Expands every macro in `s` (skipping strings and comments).
    fn expand(
        &self,
        s: &str,
        hide: &mut Vec<String>,
        depth: usize,
        budget: &mut usize,
    ) -> Result<String, String> {
        let b = s.as_bytes();
        let mut out = String::new();
        let mut i = 0;
        let mut copied = 0;
        while i < b.len() {
            match b[i] {
                b'"' | b'\'' => i = skip_quoted(b, i),
                b'/' if b.get(i + 1) == Some(&b'*') => {
                    i = s[i + 2..].find("*/").map_or(b.len(), |e| i + 4 + e);
                }
                b'/' if b.get(i + 1) == Some(&b'/') => i = b.len(),
                c if c.is_ascii_digit() => {
                    while i < b.len() && (is_ident_char(b[i]) || b[i] == b'.') {
                        i += 1;
                    }
                }
                c if is_ident_start(c) => {
                    let start = i;
                    if let Some((text, end)) = self.invoke(s, start, hide, depth, budget)? {
                        out.push_str(&s[copied..start]);
                        if text.len() > *budget {
                            return Err(format!(
                                "macro expansion larger than {} MiB",
                                MAX_EXPANSION_BYTES >> 20
                            ));
                        }
                        *budget -= text.len();
                        out.push_str(&text);
                        i = end;
                        copied = end;
                    } else {
                        while i < b.len() && is_ident_char(b[i]) {
                            i += 1;
                        }
                    }
                }
                _ => i += 1,
            }
        }
        out.push_str(&s[copied..]);
        Ok(out)
    }

    #[allow(clippy::too_many_arguments)]
    fn directive(
        &mut self,
        sources: &mut SourceMap,
        file: FileId,
        line: &Line,
        lead: usize,
        body: &str,
        conds: &mut Vec<Cond>,
        depth: usize,
    ) {
        let at = |from: usize, len: usize| Span::new(file, line.orig(from), line.orig(from) + len);
        let rest = body.trim_start();
        let name_len = rest.bytes().take_while(|&c| is_ident_char(c)).count();
        let name = &rest[..name_len];
        let args = rest[name_len..].trim();
        let span = at(lead, 1 + (body.len() - rest.len()) + name_len);
        let active = Self::active(conds);
        match name {
            "if" | "ifdef" | "ifndef" => {
                let value = if !active {
                    false
                } else if name == "if" {
                    match self.condition(args) {
                        Ok(v) => v,
                        Err(m) => {
                            self.err(m, span);
                            false
                        }
                    }
                } else {
                    let mac = args.split_whitespace().next().unwrap_or("");
                    if !is_ident(mac) {
                        self.err(format!("`#{name}` needs a macro name"), span);
                    }
                    self.macros.contains_key(mac) == (name == "ifdef")
                };
                conds.push(Cond {
                    active: active && value,
                    taken: value,
                    parent: active,
                    else_seen: false,
                    span,
                });
            }
            "elif" | "else" => {
                let Some(last) = conds.last_mut() else {
                    return self.err(format!("`#{name}` without `#if`"), span);
                };
                if last.else_seen {
                    return self.err(format!("`#{name}` after `#else`"), span);
                }
                let value = if !last.parent || last.taken {
                    false
                } else if name == "else" {
                    true
                } else {
                    match self.condition(args) {
                        Ok(v) => v,
                        Err(m) => {
                            self.err(m, span);
                            false
                        }
                    }
                };
                last.active = last.parent && value;
                last.taken |= value;
                last.else_seen = name == "else";
            }
            "endif" => {
                if conds.pop().is_none() {
                    self.err("`#endif` without `#if`", span);
                }
            }
            _ if !active => {}
            "" if args.is_empty() => {}
            "define" => self.define(args, span),
            "undef" => {
                self.macros.remove(args);
            }
            "error" => self.err(format!("#error {args}"), span),
            "warning" => {}
            "pragma" => {
                if args == "once" {
                    let f = sources.file(file);
                    let p = std::fs::canonicalize(&f.path).unwrap_or_else(|_| f.path.clone());
                    self.once.insert(p);
                }
            }
            "line" => {}
            "include" => {
                let arg_span = at(
                    line.text.len() - args.len().min(line.text.len()),
                    args.len().max(1),
                );
                let path = match (args.chars().next(), args.chars().last()) {
                    (Some('"'), Some('"')) | (Some('<'), Some('>')) if args.len() >= 2 => {
                        &args[1..args.len() - 1]
                    }
                    _ => {
                        return self
                            .err("expected `\"file\"` or `<file>` after `#include`", arg_span)
                    }
                };
                if depth >= MAX_INCLUDE_DEPTH {
                    return self.err(
                        format!(
                            "`#include` nested more than {MAX_INCLUDE_DEPTH} deep (an include cycle without a guard?)"
                        ),
                        span,
                    );
                }
                let dir = sources
                    .file(file)
                    .path
                    .parent()
                    .map(Path::to_path_buf)
                    .unwrap_or_default();
                let candidates = std::iter::once(dir.join(path))
                    .chain(self.options.include_dirs.iter().map(|d| d.join(path)));
                let Some(full) = candidates.into_iter().find(|p| p.is_file()) else {
                    return self.err(format!("cannot find included file `{path}`"), arg_span);
                };
                let canonical = std::fs::canonicalize(&full).unwrap_or_else(|_| full.clone());
                if self.once.contains(&canonical) {
                    return;
                }
                let text = match std::fs::read(&full) {
                    Ok(b) => String::from_utf8_lossy(&b).into_owned(),
                    Err(e) => {
                        return self.err(
                            format!("cannot read included file `{}`: {e}", full.display()),
                            arg_span,
                        )
                    }
                };
                let id = sources.add(SourceFile::new(full.display().to_string(), &full, text));
                self.file(sources, id, depth + 1);
            }
            _ if name.is_empty() && rest.starts_with(|c: char| c.is_ascii_digit()) => {}
            _ => self.err(format!("unknown preprocessor directive `#{name}`"), span),
        }
    }

    fn define(&mut self, args: &str, span: Span) {
        let b = args.as_bytes();
        let n = b.iter().take_while(|&&c| is_ident_char(c)).count();
        let name = &args[..n];
        if !is_ident(name) {
            return self.err("`#define` needs a macro name", span);
        }
        if matches!(name, "defined" | "__LINE__" | "__FILE__") {
            return self.err(format!("`{name}` cannot be defined"), span);
        }
        let (params, variadic, body) = if b.get(n) == Some(&b'(') {
            let Some(close) = args[n..].find(')') else {
                return self.err(
                    format!("unterminated parameter list of macro `{name}`"),
                    span,
                );
            };
            let list = &args[n + 1..n + close];
            let mut params = Vec::new();
            let mut variadic = false;
            for p in list.split(',').map(str::trim) {
                if p.is_empty() && list.trim().is_empty() {
                    break;
                }
                if p == "..." {
                    variadic = true;
                } else if is_ident(p) && !variadic {
                    params.push(p.to_string());
                } else {
                    return self.err(format!("bad parameter `{p}` of macro `{name}`"), span);
                }
            }
            (Some(params), variadic, args[n + close + 1..].trim())
        } else {
            (None, false, args[n..].trim())
        };
        self.macros.insert(
            name.to_string(),
            Macro {
                params,
                variadic,
                body: body.to_string(),
            },
        );
    }

    /// Evaluates an `#if` condition.
    fn condition(&self, args: &str) -> Result<bool, String> {
        // `defined X` and `defined(X)` first, then macros, then other names are 0.
        let b = args.as_bytes();
        let mut s = String::new();
        let mut i = 0;
        while i < b.len() {
            if is_ident_start(b[i]) {
                let st = i;
                while i < b.len() && is_ident_char(b[i]) {
                    i += 1;
                }
                if &args[st..i] == "defined" {
                    let mut j = i;
                    while j < b.len() && b[j] == b' ' {
                        j += 1;
                    }
                    let paren = b.get(j) == Some(&b'(');
                    if paren {
                        j += 1;
                    }
                    while j < b.len() && b[j] == b' ' {
                        j += 1;
                    }
                    let ns = j;
                    while j < b.len() && is_ident_char(b[j]) {
                        j += 1;
                    }
                    let mac = &args[ns..j];
                    while j < b.len() && b[j] == b' ' {
                        j += 1;
                    }
                    if paren {
                        if b.get(j) != Some(&b')') {
                            return Err("expected `)` after `defined(NAME`".into());
                        }
                        j += 1;
                    }
                    if !is_ident(mac) {
                        return Err("`defined` needs a macro name".into());
                    }
                    s.push_str(if self.macros.contains_key(mac) {
                        " 1 "
                    } else {
                        " 0 "
                    });
                    i = j;
                } else {
                    s.push_str(&args[st..i]);
                }
            } else {
                s.push(b[i] as char);
                i += 1;
            }
        }
        let mut budget = MAX_EXPANSION_BYTES;
        let expanded = self.expand(&s, &mut Vec::new(), 0, &mut budget)?;
        let toks = cond_tokens(&expanded)?;
        let mut p = CondParser {
            toks,
            pos: 0,
            depth: 0,
        };
        let v = p.ternary()?;
        if p.pos != p.toks.len() {
            return Err(format!("unexpected `{}` in `#if` condition", p.toks[p.pos]));
        }
        Ok(v != 0)
    }
}

/// Splits the arguments of a macro call whose `(` is at `open`: the raw argument texts
/// and the index after the `)`.
fn split_args(s: &str, open: usize) -> Option<(Vec<String>, usize)> {
    let b = s.as_bytes();
    let mut depth = 0usize;
    let mut args = Vec::new();
    let mut start = open + 1;
    let mut i = open + 1;
    while i < b.len() {
        match b[i] {
            b'"' | b'\'' => {
                i = skip_quoted(b, i);
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' if depth == 0 => {
                args.push(s[start..i].to_string());
                return Some((args, i + 1));
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                args.push(s[start..i].to_string());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// A function-like macro's body with its parameters replaced: by the expanded argument,
/// by the raw argument next to `##`, by a string of the raw argument after `#`.
fn substitute(body: &str, names: &[String], raw: &[String], expanded: &[String]) -> String {
    let b = body.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    let find = |w: &str| names.iter().position(|n| n == w);
    while i < b.len() {
        let c = b[i];
        if c == b'"' || c == b'\'' {
            let e = skip_quoted(b, i);
            out.push_str(&body[i..e]);
            i = e;
        } else if c == b'#' && b.get(i + 1) == Some(&b'#') {
            // Token pasting: drop the `##` and the spaces around it.
            while out.ends_with(' ') || out.ends_with('\t') {
                out.pop();
            }
            i += 2;
            while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
                i += 1;
            }
            let st = i;
            while i < b.len() && is_ident_char(b[i]) {
                i += 1;
            }
            let w = &body[st..i];
            match find(w) {
                Some(k) => out.push_str(&raw[k]),
                None => out.push_str(w),
            }
        } else if c == b'#' {
            let mut j = i + 1;
            while j < b.len() && b[j] == b' ' {
                j += 1;
            }
            let st = j;
            while j < b.len() && is_ident_char(b[j]) {
                j += 1;
            }
            match find(&body[st..j]) {
                Some(k) => {
                    out.push('"');
                    out.push_str(&raw[k].replace('\\', "\\\\").replace('"', "\\\""));
                    out.push('"');
                    i = j;
                }
                None => {
                    out.push('#');
                    i += 1;
                }
            }
        } else if is_ident_start(c) {
            let st = i;
            while i < b.len() && is_ident_char(b[i]) {
                i += 1;
            }
            let w = &body[st..i];
            let mut j = i;
            while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                j += 1;
            }
            let pasted = b.get(j) == Some(&b'#') && b.get(j + 1) == Some(&b'#');
            match find(w) {
                Some(k) if pasted => out.push_str(&raw[k]),
                Some(k) => out.push_str(&expanded[k]),
                None => out.push_str(w),
            }
        } else {
            let Some(ch) = body[i..].chars().next() else {
                break;
            };
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

fn cond_tokens(s: &str) -> Result<Vec<String>, String> {
    let b = s.as_bytes();
    let mut toks = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == b'_' {
            let st = i;
            while i < b.len() && is_ident_char(b[i]) {
                i += 1;
            }
            toks.push(s[st..i].to_string());
        } else if c == b'\'' {
            let e = skip_quoted(b, i);
            toks.push(s[i..e].to_string());
            i = e;
        } else {
            let two = s.get(i..i + 2).unwrap_or("");
            if ["&&", "||", "==", "!=", "<=", ">=", "<<", ">>"].contains(&two) {
                toks.push(two.to_string());
                i += 2;
            } else if b"+-*/%<>!~&|^()?:".contains(&c) {
                toks.push((c as char).to_string());
                i += 1;
            } else {
                let ch = s[i..].chars().next().unwrap_or('?');
                return Err(format!("unexpected `{ch}` in `#if` condition"));
            }
        }
    }
    Ok(toks)
}

struct CondParser {
    toks: Vec<String>,
    pos: usize,
    depth: usize,
}

const BINARY: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl CondParser {
    fn peek(&self) -> Option<&str> {
        self.toks.get(self.pos).map(String::as_str)
    }

    fn enter(&mut self) -> Result<(), String> {
        self.depth += 1;
        if self.depth > 200 {
            Err("`#if` condition nested too deeply".into())
        } else {
            Ok(())
        }
    }

    fn ternary(&mut self) -> Result<i64, String> {
        self.enter()?;
        let c = self.binary(0)?;
        let r = if self.peek() == Some("?") {
            self.pos += 1;
            let a = self.ternary()?;
            if self.peek() != Some(":") {
                return Err("expected `:` in `#if` condition".into());
            }
            self.pos += 1;
            let b = self.ternary()?;
            if c != 0 {
                a
            } else {
                b
            }
        } else {
            c
        };
        self.depth -= 1;
        Ok(r)
    }

    fn binary(&mut self, level: usize) -> Result<i64, String> {
        if level == BINARY.len() {
            return self.unary();
        }
        let mut l = self.binary(level + 1)?;
        while let Some(op) = self.peek().filter(|t| BINARY[level].contains(t)) {
            let op = op.to_string();
            self.pos += 1;
            let r = self.binary(level + 1)?;
            l = match op.as_str() {
                "||" => ((l != 0) || (r != 0)) as i64,
                "&&" => ((l != 0) && (r != 0)) as i64,
                "|" => l | r,
                "^" => l ^ r,
                "&" => l & r,
                "==" => (l == r) as i64,
                "!=" => (l != r) as i64,
                "<" => (l < r) as i64,
                ">" => (l > r) as i64,
                "<=" => (l <= r) as i64,
                ">=" => (l >= r) as i64,
                "<<" => l.wrapping_shl(r as u32),
                ">>" => l.wrapping_shr(r as u32),
                "+" => l.wrapping_add(r),
                "-" => l.wrapping_sub(r),
                "*" => l.wrapping_mul(r),
                "/" | "%" if r == 0 => return Err("division by zero in `#if` condition".into()),
                "/" => l.wrapping_div(r),
                _ => l.wrapping_rem(r),
            };
        }
        Ok(l)
    }

    fn unary(&mut self) -> Result<i64, String> {
        self.enter()?;
        let t = self
            .peek()
            .ok_or("unexpected end of `#if` condition")?
            .to_string();
        self.pos += 1;
        let v = match t.as_str() {
            "!" => (self.unary()? == 0) as i64,
            "-" => self.unary()?.wrapping_neg(),
            "+" => self.unary()?,
            "~" => !self.unary()?,
            "(" => {
                let v = self.ternary()?;
                if self.peek() != Some(")") {
                    return Err("expected `)` in `#if` condition".into());
                }
                self.pos += 1;
                v
            }
            t if t.starts_with('\'') => {
                let inner = t.trim_matches('\'');
                inner.chars().next().map_or(0, |c| c as i64)
            }
            t if t.as_bytes()[0].is_ascii_digit() => {
                parse_int(t).ok_or_else(|| format!("`{t}` is not an integer in `#if` condition"))?
            }
            t if is_ident(t) => 0,
            t => return Err(format!("unexpected `{t}` in `#if` condition")),
        };
        self.depth -= 1;
        Ok(v)
    }
}

fn parse_int(t: &str) -> Option<i64> {
    let t = t.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok().map(|v| v as i64)
    } else if t.len() > 1 && t.starts_with('0') {
        u64::from_str_radix(&t[1..], 8).ok().map(|v| v as i64)
    } else {
        t.parse::<u64>().ok().map(|v| v as i64)
    }
}

/// Runs an external preprocessor and maps its line markers back to files.
fn external(sources: &mut SourceMap, file: FileId, cmd: &str) -> Result<FileId, Vec<Diagnostic>> {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let fail = |m: String| vec![Diagnostic::without_span(m)];
    let f = sources.file(file);
    let dir = f
        .path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map(Path::to_path_buf);
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(cmd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(d) = &dir {
        command.current_dir(d);
    }
    let mut child = command
        .spawn()
        .map_err(|e| fail(format!("cannot run the preprocessor `{cmd}`: {e}")))?;
    let input = f.text.clone();
    let Some(mut stdin) = child.stdin.take() else {
        return Err(fail(format!("cannot write to the preprocessor `{cmd}`")));
    };
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let output = child
        .wait_with_output()
        .map_err(|e| fail(format!("cannot run the preprocessor `{cmd}`: {e}")))?;
    let _ = writer.join();
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stderr = stderr.trim();
        return Err(fail(format!(
            "the preprocessor `{cmd}` failed ({}){}{}",
            output.status,
            if stderr.is_empty() { "" } else { ": " },
            stderr.chars().take(2000).collect::<String>()
        )));
    }
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let name = f.name.clone();
    let path = f.path.clone();
    // Map each output line to (file, line) by the line markers.
    let mut files: HashMap<String, FileId> = HashMap::new();
    let mut out = Out::default();
    let mut cur: Option<(FileId, usize)> = Some((file, 1));
    for l in text.split_inclusive('\n') {
        if let Some((n, fname)) = line_marker(l) {
            cur = match fname {
                None if n == 0 => cur,
                None => cur.map(|(f, _)| (f, n)),
                Some(fname)
                    if fname == name || fname == "<stdin>" || fname == "-" || fname.is_empty() =>
                {
                    Some((file, n))
                }
                Some(fname) => {
                    let id = match files.get(&fname) {
                        Some(&id) => Some(id),
                        None => {
                            let p = match &dir {
                                Some(d) if Path::new(&fname).is_relative() => d.join(&fname),
                                _ => PathBuf::from(&fname),
                            };
                            std::fs::read(&p).ok().map(|b| {
                                let id = sources.add(SourceFile::new(
                                    fname.clone(),
                                    &p,
                                    String::from_utf8_lossy(&b).into_owned(),
                                ));
                                files.insert(fname.clone(), id);
                                id
                            })
                        }
                    };
                    id.map(|id| (id, n))
                }
            };
            out.push("\n", file, 0, false);
            continue;
        }
        match cur {
            Some((f, n)) => {
                let src = sources.file(f);
                let start = src.line_start(n).unwrap_or(src.text.len());
                out.push(l, f, start, true);
                cur = Some((f, n + 1));
            }
            None => {
                let at = out.text.len();
                out.push(l, FileId(u32::MAX), at, true);
            }
        }
    }
    let mut pre = SourceFile::new(name, path, out.text);
    // Lines of unknown files map to the output itself.
    let id = FileId(sources.files().len() as u32);
    for s in &mut out.segs {
        if s.file == FileId(u32::MAX) {
            s.file = id;
        }
    }
    pre.origin = Some(out.segs);
    Ok(sources.add(pre))
}

/// `# 12 "file" ...` or `#line 12 "file"`: the line number and the file if given;
/// `(0, None)` for another directive the command left (`#pragma`), which is dropped.
fn line_marker(l: &str) -> Option<(usize, Option<String>)> {
    let rest = l.trim_start().strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("line").unwrap_or(rest).trim_start();
    let n = rest.bytes().take_while(u8::is_ascii_digit).count();
    let Ok(line) = rest[..n].parse::<usize>() else {
        return Some((0, None));
    };
    let after = rest[n..].trim();
    let fname = after
        .strip_prefix('"')
        .and_then(|a| a.find('"').map(|e| a[..e].to_string()));
    Some((line, fname))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pp(text: &str) -> Result<String, String> {
        pp_with(text, &PreprocessOptions::default())
    }

    fn pp_with(text: &str, o: &PreprocessOptions) -> Result<String, String> {
        let mut sm = SourceMap::new();
        let f = sm.add_text("t.dl", text);
        match preprocess(&mut sm, f, o) {
            Ok(id) => Ok(sm.file(id).text.clone()),
            Err(e) => Err(e
                .iter()
                .map(|d| match d.span {
                    Some(s) => format!("{}: {}", sm.location(s), d.message),
                    None => d.message.clone(),
                })
                .collect::<Vec<_>>()
                .join("\n")),
        }
    }

    fn squash(s: &str) -> String {
        s.split_whitespace().collect::<Vec<_>>().join(" ")
    }

    #[test]
    fn object_and_function_macros() {
        let out = pp("#define N 10\n#define ADD(a, b) ((a) + (b))\nr(N, ADD(N, 2)).\n").unwrap();
        assert_eq!(squash(&out), "r(10, ((10) + (2))).");
    }

    #[test]
    fn nested_and_self_reference() {
        let out = pp("#define A B + A\n#define B 1\nx(A).\n").unwrap();
        assert_eq!(squash(&out), "x(1 + A).");
    }

    #[test]
    fn strings_and_comments_not_expanded() {
        let out = pp("#define X 1\nr(\"X\", X). // X\n/* X\nX */ X\n").unwrap();
        assert_eq!(squash(&out), "r(\"X\", 1). // X /* X X */ 1");
    }

    #[test]
    fn conditionals() {
        let t = "#define A 2\n#if defined(A) && A > 1 || 0\nyes\n#elif 1\nno1\n#else\nno2\n#endif\n#ifndef A\nno3\n#else\nyes2\n#endif\n#if !defined B\nyes3\n#endif\n";
        assert_eq!(squash(&pp(t).unwrap()), "yes yes2 yes3");
        let t = "#if 0\n#if 1\nno\n#else\nno\n#endif\n#elif (3 * 2 == 6) ? 1 : 0\nyes\n#endif\n";
        assert_eq!(squash(&pp(t).unwrap()), "yes");
    }

    #[test]
    fn undef_and_continuation() {
        let t = "#define L(x) x + \\\n  x\n#undef NOTHING\nL(1)\n#undef L\nL(1)\n";
        assert_eq!(squash(&pp(t).unwrap()), "1 + 1 L(1)");
        // `__LINE__` counts physical lines.
        let t = "#define A 1 + \\\n 2\n__LINE__ A\n";
        assert_eq!(squash(&pp(t).unwrap()), "3 1 + 2");
    }

    #[test]
    fn stringify_paste_variadic() {
        let t = "#define S(x) #x\n#define P(a, b) a ## b\n#define V(f, ...) f(__VA_ARGS__)\nS(hi) P(ab, cd) V(g, 1, 2)\n";
        assert_eq!(squash(&pp(t).unwrap()), "\"hi\" abcd g(1, 2)");
    }

    #[test]
    fn command_line_defines() {
        let mut o = PreprocessOptions::default();
        o.add_macro_arg("N=5 M").unwrap();
        assert_eq!(squash(&pp_with("r(N, M).\n", &o).unwrap()), "r(5, 1).");
        assert!(o.add_macro_arg("1x=2").is_err());
    }

    #[test]
    fn errors_are_located() {
        let e = pp("a.\n#error stop here\n").unwrap_err();
        assert_eq!(e, "t.dl:2:1: #error stop here");
        let e = pp("\n  #frobnicate\n").unwrap_err();
        assert!(
            e.starts_with("t.dl:2:3: unknown preprocessor directive `#frobnicate`"),
            "{e}"
        );
        let e = pp("#if 1\n").unwrap_err();
        assert!(e.contains("t.dl:1:1: `#if` without `#endif`"), "{e}");
        let e = pp("#endif\n").unwrap_err();
        assert!(e.contains("without `#if`"), "{e}");
        let e = pp("#if 1/0\n#endif\n").unwrap_err();
        assert!(e.contains("division by zero"), "{e}");
        let e = pp("#define F(a) a\nx F(1, 2)\n").unwrap_err();
        assert!(
            e.contains("t.dl:2:3: macro `F` takes 1 argument, given 2"),
            "{e}"
        );
        let e = pp("#include \"nope.dl\"\n").unwrap_err();
        assert!(
            e.contains("t.dl:1:10: cannot find included file `nope.dl`"),
            "{e}"
        );
    }

    #[test]
    fn expansion_is_bounded() {
        // Exponential growth.
        let mut t = String::from("#define A0 x\n");
        for i in 1..40 {
            t.push_str(&format!("#define A{i} A{} A{}\n", i - 1, i - 1));
        }
        t.push_str("A39\n");
        let e = pp(&t).unwrap_err();
        assert!(e.contains("larger than"), "{e}");
        // Deep chains.
        let mut t = String::new();
        for i in 0..1000 {
            t.push_str(&format!("#define B{i} B{}\n", i + 1));
        }
        t.push_str("B0\n");
        let e = pp(&t).unwrap_err();
        assert!(e.contains("deeper than"), "{e}");
    }

    #[test]
    fn locations_map_back() {
        let mut sm = SourceMap::new();
        let f = sm.add_text("t.dl", "#define N 1\n\nr(N, zz).\n");
        let id = preprocess(&mut sm, f, &PreprocessOptions::default()).unwrap();
        let text = sm.file(id).text.clone();
        let at = text.find("zz").unwrap();
        assert_eq!(sm.location(Span::new(id, at, at + 2)), "t.dl:3:6");
        let at = text.find('1').unwrap();
        assert_eq!(sm.location(Span::new(id, at, at + 1)), "t.dl:3:3");
    }

    #[test]
    fn includes_guards_and_once() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("g.h"), "#ifndef G\n#define G\ng.\n#endif\n").unwrap();
        std::fs::write(d.join("o.h"), "#pragma once\no.\n").unwrap();
        std::fs::create_dir(d.join("inc")).unwrap();
        std::fs::write(d.join("inc/i.h"), "i.\n#error in include\n").unwrap();
        std::fs::write(d.join("self.h"), "#include \"self.h\"\n").unwrap();
        let main = d.join("m.dl");
        std::fs::write(
            &main,
            "#include \"g.h\"\n#include \"g.h\"\n#include \"o.h\"\n#include <o.h>\nm.\n",
        )
        .unwrap();
        let mut sm = SourceMap::new();
        let text = std::fs::read_to_string(&main).unwrap();
        let f = sm.add(SourceFile::new(main.display().to_string(), &main, text));
        let id = preprocess(&mut sm, f, &PreprocessOptions::default()).unwrap();
        assert_eq!(squash(&sm.file(id).text), "g. o. m.");

        let mut o = PreprocessOptions::default();
        o.include_dirs.push(d.join("inc"));
        std::fs::write(&main, "#include <i.h>\n").unwrap();
        let mut sm = SourceMap::new();
        let f = sm.add(SourceFile::new(
            "m.dl",
            &main,
            std::fs::read_to_string(&main).unwrap(),
        ));
        let e = preprocess(&mut sm, f, &o).unwrap_err();
        let loc = sm.location(e[0].span.unwrap());
        assert!(loc.ends_with("inc/i.h:2:1"), "{loc}");

        std::fs::write(&main, "#include \"self.h\"\n").unwrap();
        let mut sm = SourceMap::new();
        let f = sm.add(SourceFile::new(
            "m.dl",
            &main,
            std::fs::read_to_string(&main).unwrap(),
        ));
        let e = preprocess(&mut sm, f, &o).unwrap_err();
        assert!(
            e[0].message.contains("nested more than"),
            "{}",
            e[0].message
        );
    }

    #[test]
    fn no_directives_is_unchanged() {
        let mut sm = SourceMap::new();
        let f = sm.add_text("t.dl", "r(1).\n");
        assert_eq!(
            preprocess(&mut sm, f, &PreprocessOptions::default()).unwrap(),
            f
        );
    }

    #[test]
    fn external_command() {
        let o = PreprocessOptions {
            preprocessor: Preprocessor::External("sed 's/N/7/'".into()),
            ..Default::default()
        };
        assert_eq!(squash(&pp_with("r(N).\n", &o).unwrap()), "r(7).");
        let o = PreprocessOptions {
            preprocessor: Preprocessor::External("echo bad >&2; exit 3".into()),
            ..Default::default()
        };
        let e = pp_with("r(N).\n", &o).unwrap_err();
        assert!(e.contains("failed") && e.contains("bad"), "{e}");
        let o = PreprocessOptions {
            preprocessor: Preprocessor::External("printf '# 3 \"t.dl\"\\nr(zz).\\n'".into()),
            ..Default::default()
        };
        let mut sm = SourceMap::new();
        let f = sm.add_text("t.dl", "\n\nr(zz).\n");
        let id = preprocess(&mut sm, f, &o).unwrap();
        let at = sm.file(id).text.find("zz").unwrap();
        assert_eq!(sm.location(Span::new(id, at, at + 2)), "t.dl:3:3");
    }
}

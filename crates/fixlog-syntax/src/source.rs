//! Source files and byte spans.
//!
//! Every construct the parser produces carries a [`Span`] so that every later stage
//! (checker, planner, runtime errors about facts) can point back at the text that caused
//! it. A [`SourceMap`] owns the text of every file read, including `.include`d ones.

use std::path::{Path, PathBuf};

/// Index of a file in a [`SourceMap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A half-open byte range `start..end` in one source file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub file: FileId,
    pub start: u32,
    pub end: u32,
}

impl Span {
    pub fn new(file: FileId, start: usize, end: usize) -> Span {
        Span {
            file,
            start: start as u32,
            end: end as u32,
        }
    }

    /// The smallest span covering both `self` and `other` (same file assumed).
    pub fn join(self, other: Span) -> Span {
        Span {
            file: self.file,
            start: self.start.min(other.start),
            end: self.end.max(other.end),
        }
    }
}

/// One loaded source file.
#[derive(Clone, Debug)]
pub struct SourceFile {
    /// The path as the user gave it (used in messages).
    pub name: String,
    /// The path used to resolve relative `.include`s.
    pub path: PathBuf,
    pub text: String,
    /// Byte offset of the start of each line.
    line_starts: Vec<usize>,
    /// For preprocessed text: where its bytes come from (sorted by `out`).
    pub origin: Option<Vec<Segment>>,
}

/// Where a stretch of preprocessed text comes from: the bytes from `out` on (up to
/// the next segment) are the bytes from `orig` on in `file` when `exact`, or all come
/// from the place `orig` (the expansion of a macro used there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Segment {
    pub out: u32,
    pub file: FileId,
    pub orig: u32,
    pub exact: bool,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, path: impl Into<PathBuf>, text: String) -> SourceFile {
        let mut line_starts = vec![0];
        line_starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        SourceFile {
            name: name.into(),
            path: path.into(),
            text,
            line_starts,
            origin: None,
        }
    }

    /// The largest char boundary at or before `offset` (clamped to the text).
    fn floor_boundary(&self, offset: usize) -> usize {
        let mut o = offset.min(self.text.len());
        while !self.text.is_char_boundary(o) {
            o -= 1;
        }
        o
    }

    /// 1-based (line, column) of a byte offset; the column counts characters.
    pub fn line_col(&self, offset: usize) -> (usize, usize) {
        let offset = self.floor_boundary(offset);
        let line = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i.saturating_sub(1),
        };
        let start = self.line_starts.get(line).copied().unwrap_or(0).min(offset);
        let col = self.text.get(start..offset).unwrap_or("").chars().count() + 1;
        (line + 1, col)
    }

    /// Byte offset of the start of a 1-based line.
    pub fn line_start(&self, line: usize) -> Option<usize> {
        line.checked_sub(1)
            .and_then(|l| self.line_starts.get(l))
            .copied()
    }

    /// The text of a 1-based line, without its line terminator (empty for a line that
    /// does not exist).
    pub fn line_text(&self, line: usize) -> &str {
        let Some(&start) = line.checked_sub(1).and_then(|l| self.line_starts.get(l)) else {
            return "";
        };
        let end = self
            .line_starts
            .get(line)
            .copied()
            .unwrap_or(self.text.len());
        self.text
            .get(start..end)
            .unwrap_or("")
            .trim_end_matches(['\n', '\r'])
    }
}

/// All source files of one program.
#[derive(Clone, Debug, Default)]
pub struct SourceMap {
    files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn new() -> SourceMap {
        SourceMap::default()
    }

    pub fn add(&mut self, file: SourceFile) -> FileId {
        self.files.push(file);
        FileId(self.files.len() as u32 - 1)
    }

    pub fn add_text(&mut self, name: &str, text: &str) -> FileId {
        self.add(SourceFile::new(name, Path::new(name), text.to_string()))
    }

    pub fn file(&self, id: FileId) -> &SourceFile {
        &self.files[id.0 as usize]
    }

    pub fn files(&self) -> &[SourceFile] {
        &self.files
    }

    /// The span in an original file that a span of preprocessed text comes from (the
    /// span itself for text that was not preprocessed).
    pub fn resolve(&self, span: Span) -> Span {
        let f = self.file(span.file);
        let Some(segs) = &f.origin else {
            return span;
        };
        let map = |o: u32| {
            let i = segs.partition_point(|s| s.out <= o).checked_sub(1)?;
            let s = segs[i];
            Some((
                s.file,
                if s.exact {
                    s.orig + (o - s.out)
                } else {
                    s.orig
                },
                s.exact,
            ))
        };
        let Some((file, start, exact)) = map(span.start) else {
            return span;
        };
        if file == span.file {
            return span;
        }
        let end = match map(span.end.saturating_sub(1).max(span.start)) {
            Some((f, e, true)) if f == file && e >= start && exact => e + 1,
            _ => start + 1,
        };
        let len = self.file(file).text.len() as u32;
        Span {
            file,
            start: start.min(len),
            end: end.min(len).max(start.min(len)),
        }
    }

    /// `file:line:column` of the start of a span.
    pub fn location(&self, span: Span) -> String {
        let span = self.resolve(span);
        let f = self.file(span.file);
        let (l, c) = f.line_col(span.start as usize);
        format!("{}:{}:{}", f.name, l, c)
    }

    /// The source text a span covers (empty if the span is not within the text).
    pub fn snippet(&self, span: Span) -> &str {
        let f = self.file(span.file);
        f.text
            .get(span.start as usize..(span.end as usize).min(f.text.len()))
            .unwrap_or("")
    }
}

//! Error messages that point into the program text.
//!
//! A [`Diagnostic`] is a message plus an optional primary [`Span`] and notes. It is
//! rendered as
//!
//! ```text
//! error: unknown relation `edg`
//!   --> tc.dl:3:22
//!    |
//!  3 | path(x, y) :- path(x, z), edg(z, y).
//!    |                           ^^^
//!    = help: declare it with `.decl edg(...)`
//! ```
//!
//! Every stage reports user errors as diagnostics; none of them panics on bad input.

use crate::source::{SourceMap, Span};
use std::fmt::Write;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub message: String,
    /// Where the problem is. `None` for errors that are not about program text.
    pub span: Option<Span>,
    /// Extra lines printed after the snippet (`= note: ...`, `= help: ...`).
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span: Some(span),
            notes: Vec::new(),
        }
    }

    pub fn without_span(message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            message: message.into(),
            span: None,
            notes: Vec::new(),
        }
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(format!("note: {}", note.into()));
        self
    }

    pub fn with_help(mut self, help: impl Into<String>) -> Diagnostic {
        self.notes.push(format!("help: {}", help.into()));
        self
    }

    /// Render as text (no colour), ending with a newline.
    pub fn render(&self, sources: &SourceMap) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "error: {}", self.message);
        if let Some(span) = self.span {
            let file = sources.file(span.file);
            let (line, col) = file.line_col(span.start as usize);
            let (end_line, end_col) = file.line_col(span.end as usize);
            let text = file.line_text(line);
            let gutter = line.to_string().len();
            let pad = " ".repeat(gutter);
            let _ = writeln!(out, "{pad}--> {}:{}:{}", file.name, line, col);
            let _ = writeln!(out, "{pad} |");
            let _ = writeln!(out, "{line} | {text}");
            let width = if end_line == line {
                end_col.saturating_sub(col).max(1)
            } else {
                text.chars().count().saturating_sub(col - 1).max(1)
            };
            let lead: String = text
                .chars()
                .take(col - 1)
                .map(|c| if c == '\t' { '\t' } else { ' ' })
                .collect();
            let _ = writeln!(out, "{pad} | {lead}{}", "^".repeat(width));
            for note in &self.notes {
                let _ = writeln!(out, "{pad} = {note}");
            }
        } else {
            for note in &self.notes {
                let _ = writeln!(out, "  = {note}");
            }
        }
        out
    }
}

/// Several diagnostics from one stage (the checker reports all errors it finds).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Diagnostics(pub Vec<Diagnostic>);

impl Diagnostics {
    pub fn render(&self, sources: &SourceMap) -> String {
        self.0
            .iter()
            .map(|d| d.render(sources))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Diagnostics {
        Diagnostics(vec![d])
    }
}

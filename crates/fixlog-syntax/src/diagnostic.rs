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
//!
//! Output stays small whatever the input: a source line longer than
//! [`MAX_LINE_CHARS`] is shown as a window around the caret with `...` where it is cut,
//! control characters in it are shown as `�`, and [`Diagnostics::render`] shows at most
//! [`MAX_SHOWN`] errors and then says how many more there are.

use crate::source::{SourceMap, Span};
use std::fmt::Write;

/// Most characters of a source line shown in a snippet.
pub const MAX_LINE_CHARS: usize = 100;

/// Most diagnostics [`Diagnostics::render`] shows.
pub const MAX_SHOWN: usize = 20;

/// How much of a line to show around a caret: `(shown text, caret lead, caret width)`.
/// `col` is 1-based; `width` is the caret's length in characters.
fn window(text: &str, col: usize, width: usize) -> (String, String, usize) {
    let chars: Vec<char> = text.chars().collect();
    let n = chars.len();
    let c0 = (col - 1).min(n);
    let (from, to) = if n <= MAX_LINE_CHARS {
        (0, n)
    } else {
        let from = c0
            .saturating_sub(MAX_LINE_CHARS / 3)
            .min(n.saturating_sub(MAX_LINE_CHARS));
        (from, (from + MAX_LINE_CHARS).min(n))
    };
    let prefix = if from > 0 { "..." } else { "" };
    let suffix = if to < n { "..." } else { "" };
    let visible = |c: char| {
        if c.is_control() && c != '\t' {
            '\u{FFFD}'
        } else {
            c
        }
    };
    let shown: String = prefix
        .chars()
        .chain(chars[from..to].iter().copied().map(visible))
        .chain(suffix.chars())
        .collect();
    let lead: String = prefix
        .chars()
        .map(|_| ' ')
        .chain(
            chars[from..c0]
                .iter()
                .map(|&c| if c == '\t' { '\t' } else { ' ' }),
        )
        .collect();
    let width = width.min(to.saturating_sub(c0)).max(1);
    (shown, lead, width)
}

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
        self.render_as("error", sources)
    }

    /// Render as a warning (`warning: ...`), otherwise as [`Diagnostic::render`].
    pub fn render_warning(&self, sources: &SourceMap) -> String {
        self.render_as("warning", sources)
    }

    fn render_as(&self, severity: &str, sources: &SourceMap) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{severity}: {}", self.message);
        if let Some(span) = self.span {
            let span = sources.resolve(span);
            let file = sources.file(span.file);
            let (line, col) = file.line_col(span.start as usize);
            let (end_line, end_col) = file.line_col(span.end as usize);
            let text = file.line_text(line);
            let gutter = line.to_string().len();
            let pad = " ".repeat(gutter);
            let _ = writeln!(out, "{pad}--> {}:{}:{}", file.name, line, col);
            let _ = writeln!(out, "{pad} |");
            let width = if end_line == line {
                end_col.saturating_sub(col).max(1)
            } else {
                text.chars().count().saturating_sub(col - 1).max(1)
            };
            let (shown, lead, width) = window(text, col, width);
            let _ = writeln!(out, "{line} | {shown}");
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
    /// The first [`MAX_SHOWN`] diagnostics, rendered, and then a line saying how many
    /// more there are.
    pub fn render(&self, sources: &SourceMap) -> String {
        let mut out = self
            .0
            .iter()
            .take(MAX_SHOWN)
            .map(|d| d.render(sources))
            .collect::<Vec<_>>()
            .join("\n");
        let more = self.0.len().saturating_sub(MAX_SHOWN);
        if more > 0 {
            let _ = writeln!(
                out,
                "\nerror: {more} more error{} not shown ({} in all; fix the ones above first)",
                if more == 1 { "" } else { "s" },
                self.0.len()
            );
        }
        out
    }
}

impl From<Diagnostic> for Diagnostics {
    fn from(d: Diagnostic) -> Diagnostics {
        Diagnostics(vec![d])
    }
}

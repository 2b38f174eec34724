//! Tokens of Soufflé's syntax.
//!
//! The lexer never fails outright: a bad character, an unterminated string or comment, or
//! an oversized number becomes a diagnostic and lexing goes on, so that one pass reports
//! as many problems as possible. Directive keywords (`.decl`, `.input`, ...) are single
//! tokens, as in Soufflé's own scanner; any other `.` is [`TokenKind::Dot`] (the end of
//! a clause). `#include "f"` is accepted as a synonym of `.include "f"` because many
//! Soufflé programs rely on the C preprocessor for exactly that.

use crate::diagnostic::Diagnostic;
use crate::source::{FileId, Span};

#[derive(Clone, Debug, PartialEq)]
pub enum TokenKind {
    Ident(String),
    /// `.decl`, `.input`, ... (the name without the dot).
    Directive(String),
    Int(u64),
    Unsigned(u64),
    Float(f64),
    Str(String),
    Underscore,
    LParen,
    RParen,
    LBrace,
    RBrace,
    LBracket,
    RBracket,
    Comma,
    Semi,
    Colon,
    /// `:-`
    If,
    Dot,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    /// `<:`
    Subtype,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Caret,
    Bang,
    Pipe,
    Dollar,
    At,
    Eof,
}

impl TokenKind {
    /// How the token is named in "expected X, found Y" messages.
    pub fn describe(&self) -> String {
        match self {
            TokenKind::Ident(s) => format!("identifier `{s}`"),
            TokenKind::Directive(s) => format!("`.{s}`"),
            TokenKind::Int(n) => format!("number `{n}`"),
            TokenKind::Unsigned(n) => format!("number `{n}u`"),
            TokenKind::Float(f) => format!("number `{f}`"),
            TokenKind::Str(s) => format!("string {s:?}"),
            TokenKind::Eof => "end of file".to_string(),
            other => format!("`{}`", other.punct()),
        }
    }

    /// The text of a punctuation token.
    pub fn punct(&self) -> &'static str {
        match self {
            TokenKind::Underscore => "_",
            TokenKind::LParen => "(",
            TokenKind::RParen => ")",
            TokenKind::LBrace => "{",
            TokenKind::RBrace => "}",
            TokenKind::LBracket => "[",
            TokenKind::RBracket => "]",
            TokenKind::Comma => ",",
            TokenKind::Semi => ";",
            TokenKind::Colon => ":",
            TokenKind::If => ":-",
            TokenKind::Dot => ".",
            TokenKind::Eq => "=",
            TokenKind::Ne => "!=",
            TokenKind::Lt => "<",
            TokenKind::Le => "<=",
            TokenKind::Gt => ">",
            TokenKind::Ge => ">=",
            TokenKind::Subtype => "<:",
            TokenKind::Plus => "+",
            TokenKind::Minus => "-",
            TokenKind::Star => "*",
            TokenKind::Slash => "/",
            TokenKind::Percent => "%",
            TokenKind::Caret => "^",
            TokenKind::Bang => "!",
            TokenKind::Pipe => "|",
            TokenKind::Dollar => "$",
            TokenKind::At => "@",
            _ => "?",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub kind: TokenKind,
    pub span: Span,
}

/// Directive names that are lexed as one token with their dot.
const DIRECTIVES: &[&str] = &[
    "decl",
    "type",
    "input",
    "output",
    "printsize",
    "limitsize",
    "include",
    "pragma",
    "functor",
    "plan",
    "comp",
    "init",
    "override",
    "number_type",
    "symbol_type",
    "once",
    "lattice",
];

/// A character that starts no token and is not whitespace.
fn is_stray(c: char) -> bool {
    !(c.is_whitespace()
        || is_ident_start(c)
        || c.is_ascii_digit()
        || "\"#./(){}[],;:=<>+-*%^!|$@".contains(c))
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == '?'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '?'
}

struct Lexer<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    file: FileId,
    tokens: Vec<Token>,
    errors: Vec<Diagnostic>,
}

/// Split `text` into tokens (always ending with [`TokenKind::Eof`]) and the lexical
/// errors found.
pub fn lex(file: FileId, text: &str) -> (Vec<Token>, Vec<Diagnostic>) {
    let mut lx = Lexer {
        text,
        bytes: text.as_bytes(),
        pos: 0,
        file,
        tokens: Vec::new(),
        errors: Vec::new(),
    };
    lx.run();
    (lx.tokens, lx.errors)
}

impl Lexer<'_> {
    fn span(&self, start: usize, end: usize) -> Span {
        Span::new(self.file, start, end)
    }

    fn peek_byte(&self, off: usize) -> Option<u8> {
        self.bytes.get(self.pos + off).copied()
    }

    fn push(&mut self, kind: TokenKind, start: usize) {
        let span = self.span(start, self.pos);
        self.tokens.push(Token { kind, span });
    }

    /// Records an error; the same error again right where the last one ends extends
    /// that one instead (`\q\q\q...` in a string is one error).
    fn error(&mut self, msg: impl Into<String>, start: usize, end: usize) {
        let msg = msg.into();
        if let Some(last) = self.errors.last_mut() {
            if let Some(span) = last.span.as_mut() {
                if span.end as usize == start && last.message == msg {
                    span.end = end as u32;
                    return;
                }
            }
        }
        let span = self.span(start, end);
        self.errors.push(Diagnostic::error(msg, span));
    }

    fn current_char(&self) -> Option<char> {
        self.text.get(self.pos..).and_then(|s| s.chars().next())
    }

    fn run(&mut self) {
        while let Some(c) = self.current_char() {
            let start = self.pos;
            if c.is_whitespace() {
                self.pos += c.len_utf8();
                continue;
            }
            if c == '/' && self.peek_byte(1) == Some(b'/') {
                while let Some(b) = self.peek_byte(0) {
                    if b == b'\n' {
                        break;
                    }
                    self.pos += 1;
                }
                continue;
            }
            if c == '/' && self.peek_byte(1) == Some(b'*') {
                match self.text[self.pos + 2..].find("*/") {
                    Some(i) => self.pos += 2 + i + 2,
                    None => {
                        self.error(
                            "unterminated comment: `/*` has no matching `*/`",
                            start,
                            start + 2,
                        );
                        self.pos = self.text.len();
                    }
                }
                continue;
            }
            if c == '#' {
                self.hash_line(start);
                continue;
            }
            if c == '"' {
                self.string(start);
                continue;
            }
            if c.is_ascii_digit() {
                self.number(start);
                continue;
            }
            if is_ident_start(c) {
                while let Some(ch) = self.current_char() {
                    if !is_ident_char(ch) {
                        break;
                    }
                    self.pos += 1;
                }
                let word = &self.text[start..self.pos];
                let kind = if word == "_" {
                    TokenKind::Underscore
                } else {
                    TokenKind::Ident(word.to_string())
                };
                self.push(kind, start);
                continue;
            }
            if c == '.' {
                // A directive keyword directly after the dot?
                let rest = &self.text[self.pos + 1..];
                let len = rest
                    .char_indices()
                    .find(|&(_, ch)| !is_ident_char(ch))
                    .map(|(i, _)| i)
                    .unwrap_or(rest.len());
                let word = &rest[..len];
                if DIRECTIVES.contains(&word) {
                    self.pos += 1 + len;
                    self.push(TokenKind::Directive(word.to_string()), start);
                } else {
                    self.pos += 1;
                    self.push(TokenKind::Dot, start);
                }
                continue;
            }
            let two = self.text.get(self.pos..self.pos + 2).unwrap_or("");
            let (kind, len) = match two {
                ":-" => (TokenKind::If, 2),
                "!=" => (TokenKind::Ne, 2),
                "<=" => (TokenKind::Le, 2),
                ">=" => (TokenKind::Ge, 2),
                "<:" => (TokenKind::Subtype, 2),
                _ => {
                    let k = match c {
                        '(' => TokenKind::LParen,
                        ')' => TokenKind::RParen,
                        '{' => TokenKind::LBrace,
                        '}' => TokenKind::RBrace,
                        '[' => TokenKind::LBracket,
                        ']' => TokenKind::RBracket,
                        ',' => TokenKind::Comma,
                        ';' => TokenKind::Semi,
                        ':' => TokenKind::Colon,
                        '=' => TokenKind::Eq,
                        '<' => TokenKind::Lt,
                        '>' => TokenKind::Gt,
                        '+' => TokenKind::Plus,
                        '-' => TokenKind::Minus,
                        '*' => TokenKind::Star,
                        '/' => TokenKind::Slash,
                        '%' => TokenKind::Percent,
                        '^' => TokenKind::Caret,
                        '!' => TokenKind::Bang,
                        '|' => TokenKind::Pipe,
                        '$' => TokenKind::Dollar,
                        '@' => TokenKind::At,
                        _ => {
                            self.stray(start);
                            continue;
                        }
                    };
                    (k, 1)
                }
            };
            self.pos += len;
            self.push(kind, start);
        }
        let end = self.text.len();
        self.tokens.push(Token {
            kind: TokenKind::Eof,
            span: self.span(end, end),
        });
    }

    /// A run of characters that start no token, from `start`: one error for the whole
    /// run (20 KB of control bytes are one error, not 20,000).
    fn stray(&mut self, start: usize) {
        let mut end = start;
        let mut count = 0usize;
        while let Some(c) = self.text.get(end..).and_then(|s| s.chars().next()) {
            if !is_stray(c) {
                break;
            }
            end += c.len_utf8();
            count += 1;
        }
        if count == 0 {
            // Not reached (the caller saw a stray character); make progress anyway.
            end = start + self.current_char().map_or(1, char::len_utf8);
            count = 1;
        }
        let run = &self.text[start..end];
        let shown: String = run.chars().take(16).flat_map(char::escape_debug).collect();
        let msg = if run.chars().all(|c| c == '\u{FFFD}') {
            // What a file's invalid UTF-8 reads as (see `parser::read_source`).
            "invalid UTF-8 (allowed only in comments and strings)".to_string()
        } else if count == 1 {
            format!("unexpected character `{shown}`")
        } else if count <= 16 {
            format!("unexpected characters `{shown}`")
        } else {
            format!("{count} unexpected characters `{shown}...`")
        };
        self.error(msg, start, end);
        self.pos = end;
    }

    /// `#include "f"` becomes `.include "f"`; other preprocessor lines are errors. (Only
    /// seen with the preprocessor off: `fixlog_syntax::preprocess` runs first.)
    fn hash_line(&mut self, start: usize) {
        let line_end = self.text[start..]
            .find('\n')
            .map(|i| start + i)
            .unwrap_or(self.text.len());
        let rest = &self.text[start + 1..line_end];
        let trimmed = rest.trim_start();
        if let Some(after) = trimmed.strip_prefix("include") {
            if !after.starts_with(|c: char| is_ident_char(c)) {
                let kw_end = start + 1 + (rest.len() - trimmed.len()) + "include".len();
                self.pos = kw_end;
                self.push(TokenKind::Directive("include".to_string()), start);
                return;
            }
        }
        let end = start
            + 1
            + rest
                .char_indices()
                .find(|&(i, ch)| i > 0 && !is_ident_char(ch))
                .map(|(i, _)| i)
                .unwrap_or(rest.len());
        self.error(
            "C preprocessor directives are not read without the preprocessor (`--no-preprocessor`; only `#include \"file\"` is)",
            start,
            end.max(start + 1),
        );
        self.pos = line_end;
    }

    fn string(&mut self, start: usize) {
        self.pos += 1;
        let mut value = String::new();
        loop {
            let Some(c) = self.current_char() else {
                self.error(
                    "unterminated string: missing closing `\"`",
                    start,
                    start + 1,
                );
                break;
            };
            match c {
                '"' => {
                    self.pos += 1;
                    self.push(TokenKind::Str(value), start);
                    return;
                }
                '\n' => {
                    self.error(
                        "unterminated string: missing closing `\"` before the end of the line",
                        start,
                        start + 1,
                    );
                    break;
                }
                '\\' => {
                    let esc_start = self.pos;
                    self.pos += 1;
                    let Some(e) = self.current_char() else {
                        continue;
                    };
                    self.pos += e.len_utf8();
                    match e {
                        'n' => value.push('\n'),
                        't' => value.push('\t'),
                        'r' => value.push('\r'),
                        '0' => value.push('\0'),
                        '"' => value.push('"'),
                        '\\' => value.push('\\'),
                        '\'' => value.push('\''),
                        other => {
                            let end = self.pos;
                            self.error(
                                format!("unknown escape sequence `\\{other}`"),
                                esc_start,
                                end,
                            );
                            value.push(other);
                        }
                    }
                }
                _ => {
                    value.push(c);
                    self.pos += c.len_utf8();
                }
            }
        }
        // Unterminated: still produce a token so that parsing can go on.
        self.push(TokenKind::Str(value), start);
    }

    fn number(&mut self, start: usize) {
        let radix_prefix = match (self.peek_byte(0), self.peek_byte(1)) {
            (Some(b'0'), Some(b'x' | b'X')) => Some(16),
            (Some(b'0'), Some(b'b' | b'B')) => Some(2),
            _ => None,
        };
        if let Some(radix) = radix_prefix {
            self.pos += 2;
            let digits_start = self.pos;
            while let Some(b) = self.peek_byte(0) {
                if (b as char).is_ascii_alphanumeric() || b == b'_' {
                    self.pos += 1;
                } else {
                    break;
                }
            }
            let mut digits = &self.text[digits_start..self.pos];
            let unsigned = digits.ends_with('u');
            if unsigned {
                digits = &digits[..digits.len() - 1];
            }
            let value = if digits.is_empty() {
                None
            } else {
                u64::from_str_radix(digits, radix).ok()
            };
            let value = match value {
                Some(v) => v,
                None => {
                    let ok_digits = !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix));
                    let msg = if ok_digits {
                        "number literal is too large".to_string()
                    } else {
                        format!(
                            "invalid {} literal `{}`",
                            if radix == 16 { "hexadecimal" } else { "binary" },
                            &self.text[start..self.pos]
                        )
                    };
                    self.error(msg, start, self.pos);
                    0
                }
            };
            let kind = if unsigned {
                TokenKind::Unsigned(value)
            } else {
                TokenKind::Int(value)
            };
            self.push(kind, start);
            return;
        }
        while matches!(self.peek_byte(0), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        let mut is_float = false;
        if self.peek_byte(0) == Some(b'.') && matches!(self.peek_byte(1), Some(b'0'..=b'9')) {
            is_float = true;
            self.pos += 1;
            while matches!(self.peek_byte(0), Some(b'0'..=b'9')) {
                self.pos += 1;
            }
        }
        if matches!(self.peek_byte(0), Some(b'e' | b'E')) {
            let sign = matches!(self.peek_byte(1), Some(b'+' | b'-')) as usize;
            if matches!(self.peek_byte(1 + sign), Some(b'0'..=b'9')) {
                is_float = true;
                self.pos += 1 + sign;
                while matches!(self.peek_byte(0), Some(b'0'..=b'9')) {
                    self.pos += 1;
                }
            }
        }
        let text = &self.text[start..self.pos];
        if is_float {
            let v = text.parse::<f64>().unwrap_or(0.0);
            self.push(TokenKind::Float(v), start);
            return;
        }
        let value = match text.parse::<u64>() {
            Ok(v) => v,
            Err(_) => {
                self.error("number literal is too large", start, self.pos);
                u64::MAX
            }
        };
        if self.peek_byte(0) == Some(b'u')
            && !self.peek_byte(1).is_some_and(|b| is_ident_char(b as char))
        {
            self.pos += 1;
            self.push(TokenKind::Unsigned(value), start);
        } else {
            self.push(TokenKind::Int(value), start);
        }
    }
}

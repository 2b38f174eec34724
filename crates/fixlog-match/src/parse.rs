//! The pattern language: a small Cypher subset, text to [`Pattern`].
//!
//! ```text
//! query      := MATCH path (',' path)* [WHERE condition (AND condition)*]
//!               RETURN (count(*) | item (',' item)*) [LIMIT integer] [';']
//! path       := node (relationship node)*
//! node       := '(' [name] (':' label)* ')'
//! relationship := '-' [bracket] '-' ['>']  |  '<' '-' [bracket] '-'
//! bracket    := '[' [name] [':' type] ']'
//! condition  := id(name) op id(name) | id(name) op integer | integer op id(name)
//!             | name op name | name (':' label)+
//! op         := '<' | '<=' | '>' | '>=' | '=' | '<>' | '!='
//! item       := name | id(name)
//! ```
//!
//! Keywords are case-insensitive; names are letters, digits and `_` not starting with a
//! digit, or any text in backticks. Errors are [`Diagnostic`]s on a one-line
//! [`SourceMap`] file named `pattern`, so they render as `pattern:1:COLUMN` with the
//! text and a caret, like program errors. Nothing here panics on any input.

use crate::pattern::{
    CompareOp, EdgeDirection, IdComparison, IdOperand, Output, Pattern, PatternEdge, PatternNode,
};
use fixlog_syntax::{Diagnostic, SourceMap, Span};
use std::collections::HashMap;

/// Most pattern nodes a pattern may have (each one is a level of the search).
pub const MAX_PATTERN_NODES: usize = 64;

/// A pattern that does not parse: the rendered message (`error: ...`, `--> pattern:1:C`,
/// the text and a caret).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError {
    pub rendered: String,
    /// 1-based column (in characters) of the error in the pattern's line.
    pub column: usize,
    pub message: String,
}

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.rendered.trim_end())
    }
}

impl std::error::Error for PatternError {}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Name(String),
    Integer(u64),
    /// Digits that do not fit in 64 bits.
    HugeInteger,
    Symbol(&'static str),
    /// A quoted string (no construct of the language takes one).
    Text,
    End,
}

struct Lexed {
    tokens: Vec<(Token, Span)>,
}

fn describe(token: &Token) -> String {
    match token {
        Token::Name(n) => format!("`{n}`"),
        Token::Integer(i) => format!("`{i}`"),
        Token::HugeInteger => "a number".to_string(),
        Token::Symbol(s) => format!("`{s}`"),
        Token::Text => "a string".to_string(),
        Token::End => "the end of the pattern".to_string(),
    }
}

fn lex(text: &str, file: fixlog_syntax::FileId) -> Result<Lexed, Diagnostic> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut at = 0;
    let span = |s: usize, e: usize| Span::new(file, s, e);
    while at < bytes.len() {
        let c = bytes[at];
        if c.is_ascii_whitespace() {
            at += 1;
            continue;
        }
        let start = at;
        if c.is_ascii_alphabetic() || c == b'_' {
            while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
                at += 1;
            }
            tokens.push((Token::Name(text[start..at].to_string()), span(start, at)));
        } else if c == b'`' {
            let Some(len) = text[start + 1..].find('`') else {
                return Err(Diagnostic::error(
                    "unterminated name: a name in backticks needs a closing '`'",
                    span(start, start + 1),
                ));
            };
            at = start + 1 + len + 1;
            let name = &text[start + 1..at - 1];
            if name.is_empty() {
                return Err(Diagnostic::error("empty name", span(start, at)));
            }
            tokens.push((Token::Name(name.to_string()), span(start, at)));
        } else if c == b'\'' || c == b'"' {
            // Strings only appear in unsupported constructs (properties); lexed so the
            // parser can say which.
            let quote = c as char;
            let len = text[start + 1..]
                .find(quote)
                .ok_or_else(|| Diagnostic::error("unterminated string", span(start, start + 1)))?;
            at = start + 1 + len + 1;
            tokens.push((Token::Text, span(start, at)));
        } else if c.is_ascii_digit() {
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
            let token = text[start..at]
                .parse::<u64>()
                .map(Token::Integer)
                .unwrap_or(Token::HugeInteger);
            tokens.push((token, span(start, at)));
        } else {
            let two = text.get(start..start + 2).unwrap_or("");
            let symbol = match two {
                "<>" => Some("<>"),
                "<=" => Some("<="),
                ">=" => Some(">="),
                "!=" => Some("<>"),
                _ => None,
            };
            if let Some(symbol) = symbol {
                at += 2;
                tokens.push((Token::Symbol(symbol), span(start, at)));
                continue;
            }
            let symbol = match c {
                b'(' => "(",
                b')' => ")",
                b'[' => "[",
                b']' => "]",
                b'{' => "{",
                b'}' => "}",
                b':' => ":",
                b',' => ",",
                b'-' => "-",
                b'<' => "<",
                b'>' => ">",
                b'=' => "=",
                b'*' => "*",
                b';' => ";",
                b'.' => ".",
                b'|' => "|",
                _ => {
                    let ch = text[start..].chars().next().unwrap_or('?');
                    return Err(Diagnostic::error(
                        format!("unexpected character `{ch}` in the pattern"),
                        span(start, start + ch.len_utf8()),
                    ));
                }
            };
            at += 1;
            tokens.push((Token::Symbol(symbol), span(start, at)));
        }
    }
    tokens.push((Token::End, span(bytes.len(), bytes.len())));
    Ok(Lexed { tokens })
}

struct Parser {
    tokens: Vec<(Token, Span)>,
    pos: usize,
    nodes: Vec<PatternNode>,
    node_index: HashMap<String, usize>,
    /// Names used for relationships (`-[r]->`), which may not name nodes too.
    relationship_names: HashMap<String, Span>,
    edges: Vec<PatternEdge>,
    comparisons: Vec<IdComparison>,
}

type Parsed<T> = Result<T, Diagnostic>;

impl Parser {
    fn peek(&self) -> &Token {
        &self.tokens[self.pos.min(self.tokens.len() - 1)].0
    }

    fn span(&self) -> Span {
        self.tokens[self.pos.min(self.tokens.len() - 1)].1
    }

    fn advance(&mut self) -> (Token, Span) {
        let t = self.tokens[self.pos.min(self.tokens.len() - 1)].clone();
        if self.pos < self.tokens.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn is_symbol(&self, s: &str) -> bool {
        matches!(self.peek(), Token::Symbol(t) if *t == s)
    }

    fn is_keyword(&self, k: &str) -> bool {
        matches!(self.peek(), Token::Name(n) if n.eq_ignore_ascii_case(k))
    }

    fn unexpected(&self, wanted: &str) -> Diagnostic {
        Diagnostic::error(
            format!("expected {wanted}, found {}", describe(self.peek())),
            self.span(),
        )
    }

    fn expect_symbol(&mut self, s: &str, wanted: &str) -> Parsed<Span> {
        if self.is_symbol(s) {
            Ok(self.advance().1)
        } else {
            Err(self.unexpected(wanted))
        }
    }

    fn expect_keyword(&mut self, k: &str) -> Parsed<()> {
        if self.is_keyword(k) {
            self.advance();
            Ok(())
        } else {
            Err(self.unexpected(&format!("`{k}`")))
        }
    }

    fn name(&mut self, wanted: &str) -> Parsed<(String, Span)> {
        match self.peek().clone() {
            Token::Name(n) => {
                let span = self.advance().1;
                Ok((n, span))
            }
            _ => Err(self.unexpected(wanted)),
        }
    }

    /// The pattern node named `name`, created at its first appearance.
    fn node_named(&mut self, name: &str, span: Span) -> Parsed<usize> {
        if self.relationship_names.contains_key(name) {
            return Err(Diagnostic::error(
                format!("`{name}` names a relationship and cannot name a node too"),
                span,
            ));
        }
        if let Some(&i) = self.node_index.get(name) {
            return Ok(i);
        }
        let i = self.new_node(None, span)?;
        self.nodes[i].name = Some(name.to_string());
        self.node_index.insert(name.to_string(), i);
        Ok(i)
    }

    fn new_node(&mut self, name: Option<String>, span: Span) -> Parsed<usize> {
        if self.nodes.len() >= MAX_PATTERN_NODES {
            return Err(Diagnostic::error(
                format!("a pattern may have at most {MAX_PATTERN_NODES} nodes"),
                span,
            ));
        }
        self.nodes.push(PatternNode {
            name,
            labels: Vec::new(),
        });
        Ok(self.nodes.len() - 1)
    }

    fn add_label(&mut self, node: usize, label: String) {
        let labels = &mut self.nodes[node].labels;
        if !labels.contains(&label) {
            labels.push(label);
        }
    }

    /// `(` [name] (`:` label)* `)`
    fn node(&mut self) -> Parsed<usize> {
        let open = self.expect_symbol("(", "`(` (a node)")?;
        let node = match self.peek().clone() {
            Token::Name(n) => {
                let span = self.advance().1;
                self.node_named(&n, span)?
            }
            _ => self.new_node(None, open)?,
        };
        while self.is_symbol(":") {
            self.advance();
            let (label, _) = self.name("a label after `:`")?;
            self.add_label(node, label);
        }
        if self.is_symbol("{") {
            return Err(Diagnostic::error(
                "node properties (`{...}`) are not supported; nodes have only ids and labels",
                self.span(),
            ));
        }
        self.expect_symbol(")", "`)` or `:Label`")?;
        Ok(node)
    }

    /// `[` [name] [`:` type] `]`: the edge type, if any.
    fn bracket(&mut self) -> Parsed<Option<String>> {
        self.expect_symbol("[", "`[`")?;
        if let Token::Name(n) = self.peek().clone() {
            let span = self.advance().1;
            if self.node_index.contains_key(&n) {
                return Err(Diagnostic::error(
                    format!("`{n}` names a node and cannot name a relationship too"),
                    span,
                ));
            }
            self.relationship_names.entry(n).or_insert(span);
        }
        let mut edge_type = None;
        if self.is_symbol(":") {
            self.advance();
            edge_type = Some(self.name("an edge type after `:`")?.0);
            if self.is_symbol("|") {
                return Err(Diagnostic::error(
                    "alternative edge types (`:A|B`) are not supported; write one pattern per type",
                    self.span(),
                ));
            }
        }
        if self.is_symbol("*") {
            return Err(Diagnostic::error(
                "variable-length relationships (`*`) are not supported",
                self.span(),
            ));
        }
        if self.is_symbol("{") {
            return Err(Diagnostic::error(
                "relationship properties (`{...}`) are not supported",
                self.span(),
            ));
        }
        self.expect_symbol("]", "`]` or `:TYPE`")?;
        Ok(edge_type)
    }

    /// A relationship then the next node, adding the edge.
    fn relationship_and_node(&mut self, left: usize) -> Parsed<usize> {
        let backwards = self.is_symbol("<");
        if backwards {
            self.advance();
        }
        self.expect_symbol("-", "`-` (a relationship: `-->`, `<--`, `--`, `-[:T]->`)")?;
        let edge_type = if self.is_symbol("[") {
            self.bracket()?
        } else {
            None
        };
        self.expect_symbol("-", "`-` (the end of a relationship: `-->`, `--`)")?;
        let forwards = self.is_symbol(">");
        if forwards {
            if backwards {
                return Err(Diagnostic::error(
                    "a relationship points one way: write `-->`, `<--` or `--`",
                    self.span(),
                ));
            }
            self.advance();
        }
        let right = self.node()?;
        let (from, to, direction) = if forwards {
            (left, right, EdgeDirection::Directed)
        } else if backwards {
            (right, left, EdgeDirection::Directed)
        } else {
            (left, right, EdgeDirection::Undirected)
        };
        self.edges.push(PatternEdge {
            from,
            to,
            direction,
            edge_type,
        });
        Ok(right)
    }

    fn path(&mut self) -> Parsed<()> {
        if let Token::Name(n) = self.peek().clone() {
            if self.tokens.get(self.pos + 1).map(|t| &t.0) == Some(&Token::Symbol("=")) {
                return Err(Diagnostic::error(
                    format!("named paths (`{n} = ...`) are not supported"),
                    self.span(),
                ));
            }
        }
        let mut node = self.node()?;
        while self.is_symbol("-") || self.is_symbol("<") {
            node = self.relationship_and_node(node)?;
        }
        Ok(())
    }

    /// A node variable that must already appear in `MATCH`.
    fn known_node(&mut self) -> Parsed<usize> {
        let (name, span) = self.name("a node variable")?;
        match self.node_index.get(&name) {
            Some(&i) => Ok(i),
            None if self.relationship_names.contains_key(&name) => Err(Diagnostic::error(
                format!("`{name}` is a relationship; only node variables can be used here"),
                span,
            )),
            None => Err(Diagnostic::error(
                format!("unknown variable `{name}` (not in MATCH)"),
                span,
            )),
        }
    }

    /// `id(name)` or `name` (a node stands for its id) or an integer.
    fn id_term(&mut self) -> Parsed<(IdOperand, Span)> {
        let start = self.span();
        match self.peek().clone() {
            Token::Integer(i) => {
                self.advance();
                Ok((IdOperand::Constant(i), start))
            }
            Token::HugeInteger => Err(Diagnostic::error(
                "node ids are integers from 0 to 18446744073709551615",
                start,
            )),
            Token::Name(n) if n.eq_ignore_ascii_case("id") && self.next_is("(") => {
                self.advance();
                self.advance();
                let node = self.known_node()?;
                let end = self.expect_symbol(")", "`)`")?;
                Ok((IdOperand::Node(node), start.join(end)))
            }
            Token::Name(_) => {
                let node = self.known_node()?;
                Ok((IdOperand::Node(node), start))
            }
            _ => Err(self.unexpected("`id(name)`, a node variable or an integer")),
        }
    }

    fn next_is(&self, s: &str) -> bool {
        matches!(self.tokens.get(self.pos + 1), Some((Token::Symbol(t), _)) if *t == s)
    }

    fn compare_op(&mut self) -> Parsed<CompareOp> {
        let op = match self.peek() {
            Token::Symbol("<") => CompareOp::Less,
            Token::Symbol("<=") => CompareOp::LessEqual,
            Token::Symbol(">") => CompareOp::Greater,
            Token::Symbol(">=") => CompareOp::GreaterEqual,
            Token::Symbol("=") => CompareOp::Equal,
            Token::Symbol("<>") => CompareOp::NotEqual,
            _ => return Err(self.unexpected("a comparison (`<`, `<=`, `>`, `>=`, `=`, `<>`)")),
        };
        self.advance();
        Ok(op)
    }

    fn condition(&mut self) -> Parsed<()> {
        // `a:Label` is a label test.
        if let Token::Name(n) = self.peek().clone() {
            if self.next_is(":") {
                let node = self.known_node()?;
                let _ = n;
                while self.is_symbol(":") {
                    self.advance();
                    let (label, _) = self.name("a label after `:`")?;
                    self.add_label(node, label);
                }
                return Ok(());
            }
        }
        let (left, left_span) = self.id_term()?;
        let op = self.compare_op()?;
        let (right, right_span) = self.id_term()?;
        let comparison = match (left, right) {
            (IdOperand::Node(node), operand) => IdComparison { node, op, operand },
            (IdOperand::Constant(_), IdOperand::Node(node)) => IdComparison {
                node,
                op: op.flipped(),
                operand: left,
            },
            (IdOperand::Constant(_), IdOperand::Constant(_)) => {
                return Err(Diagnostic::error(
                    "a comparison needs a node on one side",
                    left_span.join(right_span),
                ))
            }
        };
        self.comparisons.push(comparison);
        Ok(())
    }

    fn output(&mut self) -> Parsed<Output> {
        if self.is_keyword("count") && self.next_is("(") {
            self.advance();
            self.advance();
            self.expect_symbol("*", "`*` (only `count(*)` is supported)")?;
            self.expect_symbol(")", "`)`")?;
            if self.is_symbol(",") {
                return Err(Diagnostic::error(
                    "`count(*)` cannot be returned with other columns (no grouping)",
                    self.span(),
                ));
            }
            return Ok(Output::Count);
        }
        let mut columns = Vec::new();
        loop {
            let (term, span) = self.id_term()?;
            match term {
                IdOperand::Node(node) => columns.push(node),
                IdOperand::Constant(_) => {
                    return Err(Diagnostic::error(
                        "RETURN takes node variables, `id(name)` or `count(*)`",
                        span,
                    ))
                }
            }
            if self.is_keyword("count") {
                return Err(Diagnostic::error(
                    "`count(*)` cannot be returned with other columns (no grouping)",
                    self.span(),
                ));
            }
            if !self.is_symbol(",") {
                break;
            }
            self.advance();
        }
        Ok(Output::Nodes(columns))
    }

    fn query(&mut self, text: &str) -> Parsed<Pattern> {
        if self.is_keyword("optional") {
            return Err(Diagnostic::error(
                "OPTIONAL MATCH is not supported",
                self.span(),
            ));
        }
        self.expect_keyword("MATCH")?;
        self.path()?;
        while self.is_symbol(",") {
            self.advance();
            self.path()?;
        }
        if self.is_keyword("WHERE") {
            self.advance();
            self.condition()?;
            loop {
                if self.is_keyword("AND") {
                    self.advance();
                    self.condition()?;
                } else if self.is_keyword("OR") || self.is_keyword("XOR") {
                    return Err(Diagnostic::error(
                        "only AND-ed conditions are supported in WHERE",
                        self.span(),
                    ));
                } else {
                    break;
                }
            }
        }
        if self.is_keyword("MATCH") {
            return Err(Diagnostic::error(
                "write one MATCH with comma-separated paths",
                self.span(),
            ));
        }
        if !self.is_keyword("RETURN") {
            return Err(self.unexpected("`RETURN` (or `WHERE`, `,`, a relationship)"));
        }
        self.advance();
        if self.is_keyword("DISTINCT") {
            return Err(Diagnostic::error(
                "RETURN DISTINCT is not supported",
                self.span(),
            ));
        }
        let output = self.output()?;
        let mut limit = None;
        if self.is_keyword("LIMIT") {
            self.advance();
            match self.peek() {
                Token::Integer(n) => {
                    limit = Some(*n);
                    self.advance();
                }
                _ => return Err(self.unexpected("a number of rows after LIMIT")),
            }
        }
        if self.is_symbol(";") {
            self.advance();
        }
        if *self.peek() != Token::End {
            return Err(self.unexpected("the end of the pattern"));
        }
        Ok(Pattern {
            text: text.to_string(),
            nodes: std::mem::take(&mut self.nodes),
            edges: std::mem::take(&mut self.edges),
            comparisons: std::mem::take(&mut self.comparisons),
            output,
            limit,
        })
    }
}

/// Parses `text` (see the module docs).
pub fn parse_pattern(text: &str) -> Result<Pattern, PatternError> {
    let mut sources = SourceMap::new();
    let file = sources.add_text("pattern", text);
    let result = lex(text, file).and_then(|lexed| {
        let mut parser = Parser {
            tokens: lexed.tokens,
            pos: 0,
            nodes: Vec::new(),
            node_index: HashMap::new(),
            relationship_names: HashMap::new(),
            edges: Vec::new(),
            comparisons: Vec::new(),
        };
        parser.query(text)
    });
    result.map_err(|diagnostic| {
        let column = diagnostic
            .span
            .map(|s| sources.file(file).line_col(s.start as usize).1)
            .unwrap_or(1);
        PatternError {
            rendered: diagnostic.render(&sources),
            column,
            message: diagnostic.message.clone(),
        }
    })
}

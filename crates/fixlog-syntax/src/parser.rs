//! Recursive-descent parser for Soufflé's syntax, and the loader that resolves
//! `.include`s.
//!
//! The parser works item by item (a directive or a clause). On a syntax error it records
//! an "expected X, found Y" diagnostic pointing at the offending token, skips to the end of
//! the clause (the next `.`) or to the next directive, and goes on, so one run reports the
//! errors of every item. Nothing here panics on any input: all token access is bounded by
//! the final [`TokenKind::Eof`] token.
//!
//! Operator precedence follows Soufflé's grammar, loosest first: `lor`, `land`, `bor`,
//! `bxor`, `band`, `bshl`/`bshr`, `+ -`, `* / %`, unary `-`/`bnot`/`lnot`, and `^`
//! (right-associative and tighter than unary minus, so `-2^2` is `-(2^2)`).

use crate::ast::*;
use crate::diagnostic::{Diagnostic, Diagnostics};
use crate::lexer::{lex, Token, TokenKind};
use crate::preprocess::{preprocess, PreprocessOptions};
use crate::source::{FileId, SourceFile, SourceMap, Span};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

type PResult<T> = Result<T, Diagnostic>;

/// Parse one file of `sources` (without resolving `.include`s: they stay
/// [`Item::Include`]). Returns every syntax error found.
pub fn parse(sources: &SourceMap, file: FileId) -> Result<Program, Diagnostics> {
    let (program, errors) = parse_text(file, &sources.file(file).text);
    if errors.is_empty() {
        Ok(program)
    } else {
        Err(Diagnostics(errors))
    }
}

/// Parse `text` as file `file`, returning the (possibly partial) program and the errors.
pub fn parse_text(file: FileId, text: &str) -> (Program, Vec<Diagnostic>) {
    let (tokens, mut errors) = lex(file, text);
    let mut p = Parser {
        toks: &tokens,
        pos: 0,
        file,
        depth: 0,
        errors: Vec::new(),
        warnings: Vec::new(),
    };
    let (items, parse_errors) = p.program();
    errors.extend(parse_errors);
    errors.append(&mut p.errors);
    errors.sort_by_key(|d| d.span.map(|s| s.start));
    let warnings = p.warnings;
    (Program { items, warnings }, errors)
}

/// Read, parse and splice in `.include`s of the program in `path`.
///
/// A file that cannot be read is an error without a span naming the path and the OS
/// error; an include that cannot be read, or that would include a file already being
/// included (a cycle), is an error pointing at the directive. Includes are resolved
/// relative to the directory of the including file.
pub fn parse_file(path: &Path, sources: &mut SourceMap) -> Result<Program, Diagnostics> {
    parse_file_with(path, sources, &PreprocessOptions::default())
}

/// [`parse_file`] with preprocessing options (every file, `.include`d ones too, goes
/// through the preprocessor first).
pub fn parse_file_with(
    path: &Path,
    sources: &mut SourceMap,
    options: &PreprocessOptions,
) -> Result<Program, Diagnostics> {
    let text = read_source(path)
        .map_err(|e| Diagnostic::without_span(format!("cannot read `{}`: {e}", path.display())))?;
    let file = sources.add(SourceFile::new(path.display().to_string(), path, text));
    let mut loader = Loader {
        errors: Vec::new(),
        warnings: Vec::new(),
        options,
        once: HashSet::new(),
    };
    let mut stack = vec![std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())];
    let items = loader.load(file, sources, &mut stack);
    loader.finish(items)
}

/// Parse program text named `name` (used in messages); `.include`s are resolved relative
/// to the directory part of `name` (the current directory if it has none).
pub fn parse_str(name: &str, text: &str, sources: &mut SourceMap) -> Result<Program, Diagnostics> {
    parse_str_with(name, text, sources, &PreprocessOptions::default())
}

/// [`parse_str`] with preprocessing options.
pub fn parse_str_with(
    name: &str,
    text: &str,
    sources: &mut SourceMap,
    options: &PreprocessOptions,
) -> Result<Program, Diagnostics> {
    let file = sources.add_text(name, text);
    let mut loader = Loader {
        errors: Vec::new(),
        warnings: Vec::new(),
        options,
        once: HashSet::new(),
    };
    let mut stack = Vec::new();
    let items = loader.load(file, sources, &mut stack);
    loader.finish(items)
}

/// Reads a program file. Bytes that are not UTF-8 become U+FFFD: in a comment they are
/// ignored and in a string they stay in the symbol as U+FFFD (Soufflé accepts any
/// bytes there); anywhere else the lexer reports them at `file:line:column`.
fn read_source(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

struct Loader<'o> {
    errors: Vec<Diagnostic>,
    warnings: Vec<Diagnostic>,
    options: &'o PreprocessOptions,
    /// The `.once`s passed so far: (canonical path of the original file, line), as
    /// Soufflé's `ParserDriver::canEnterOnce` records them.
    once: HashSet<(PathBuf, usize)>,
}

/// Deepest nesting of `.include`s (a file may include itself again only past a `.once`
/// it has passed, which ends that inclusion; the bound is for anything else).
const MAX_INCLUDE_DEPTH: usize = 64;

/// Where a `.once` is, as Soufflé keys it: the canonical path of the file it is written
/// in (through the preprocessor: the original file) and its line.
fn once_key(sources: &SourceMap, span: Span) -> (PathBuf, usize) {
    let at = sources.resolve(span);
    let f = sources.file(at.file);
    let path = std::fs::canonicalize(&f.path).unwrap_or_else(|_| f.path.clone());
    (path, f.line_col(at.start as usize).0)
}

impl Loader<'_> {
    fn finish(self, items: Vec<Item>) -> Result<Program, Diagnostics> {
        if self.errors.is_empty() {
            Ok(Program {
                items,
                warnings: self.warnings,
            })
        } else {
            Err(Diagnostics(self.errors))
        }
    }

    fn load(
        &mut self,
        file: FileId,
        sources: &mut SourceMap,
        stack: &mut Vec<PathBuf>,
    ) -> Vec<Item> {
        let text_file = match preprocess(sources, file, self.options) {
            Ok(f) => f,
            Err(errors) => {
                self.errors.extend(errors);
                return Vec::new();
            }
        };
        let (program, errors) = parse_text(text_file, &sources.file(text_file).text);
        self.errors.extend(errors);
        self.warnings.extend(program.warnings);
        let dir = sources
            .file(file)
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        self.splice(program.items, &dir, sources, stack, None)
    }

    /// Replaces every `.include` among `items` (also inside component bodies, as
    /// Soufflé's preprocessor does) by the items of the included file, and acts on
    /// `.once`: the first time a `.once` is reached it is dropped; when it is reached
    /// again (its file is included again), the rest of its file is skipped, as Soufflé's
    /// scanner stops reading the file there. `component`: the component whose body
    /// `items` are (a `.once` reached again there would cut the body short: an error).
    fn splice(
        &mut self,
        items: Vec<Item>,
        dir: &Path,
        sources: &mut SourceMap,
        stack: &mut Vec<PathBuf>,
        component: Option<&str>,
    ) -> Vec<Item> {
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            let (path, span) = match item {
                Item::Include { path, span } => (path, span),
                Item::Once { span } => {
                    if self.once.insert(once_key(sources, span)) {
                        continue;
                    }
                    match component {
                        None => break,
                        Some(name) => {
                            self.errors.push(
                                Diagnostic::error(
                                    format!(
                                        "`.once` reached a second time inside the body of component `{name}`"
                                    ),
                                    span,
                                )
                                .with_note(
                                    "the rest of the file would be skipped, leaving the component unfinished",
                                ),
                            );
                            continue;
                        }
                    }
                }
                Item::Component(mut c) => {
                    let name = c.head.name.name.clone();
                    c.items = self.splice(
                        std::mem::take(&mut c.items),
                        dir,
                        sources,
                        stack,
                        Some(&name),
                    );
                    out.push(Item::Component(c));
                    continue;
                }
                other => {
                    out.push(other);
                    continue;
                }
            };
            let full = dir.join(&path);
            let text = match read_source(&full) {
                Ok(t) => t,
                Err(e) => {
                    self.errors.push(Diagnostic::error(
                        format!("cannot read included file `{}`: {e}", full.display()),
                        span,
                    ));
                    continue;
                }
            };
            let canonical = std::fs::canonicalize(&full).unwrap_or_else(|_| full.clone());
            if stack.len() >= MAX_INCLUDE_DEPTH {
                self.errors.push(Diagnostic::error(
                    format!("`.include`s nested more than {MAX_INCLUDE_DEPTH} deep"),
                    span,
                ));
                continue;
            }
            // A file being included may be included again only when it has a `.once`
            // that was passed (the usual guard at its top): that inclusion stops there.
            let guarded = self.once.iter().any(|(p, _)| *p == canonical);
            if stack.contains(&canonical) && !guarded {
                let chain: Vec<String> = stack
                    .iter()
                    .chain(std::iter::once(&canonical))
                    .map(|p| p.display().to_string())
                    .collect();
                self.errors.push(
                    Diagnostic::error(
                        format!(
                            "include cycle: `{}` is already being included",
                            full.display()
                        ),
                        span,
                    )
                    .with_note(format!("cycle: {}", chain.join(" -> "))),
                );
                continue;
            }
            let included = sources.add(SourceFile::new(full.display().to_string(), &full, text));
            stack.push(canonical);
            out.extend(self.load(included, sources, stack));
            stack.pop();
        }
        out
    }
}

struct Parser<'t> {
    toks: &'t [Token],
    pos: usize,
    file: FileId,
    /// Current nesting of expressions and bodies, bounded so that hostile input cannot
    /// overflow the stack (of the parser or of the later passes, which recurse too).
    depth: usize,
    /// Errors of items inside component bodies (each body recovers item by item).
    errors: Vec<Diagnostic>,
    /// Warnings (the deprecated counter `$`).
    warnings: Vec<Diagnostic>,
}

/// Deepest nesting of parentheses, braces and operators accepted.
const MAX_DEPTH: usize = 256;

/// `.decl` qualifiers that are recognised (and, except `eqrel`, ignored by the checker).
const QUALIFIERS: &[&str] = &[
    "btree",
    "brie",
    "eqrel",
    "inline",
    "no_inline",
    "magic",
    "no_magic",
    "override",
    "overridable",
    "btree_delete",
    "input",
    "output",
    "printsize",
];

impl<'t> Parser<'t> {
    fn tok(&self) -> &'t Token {
        let toks: &'t [Token] = self.toks;
        &toks[self.pos.min(toks.len() - 1)]
    }

    fn peek(&self) -> &'t TokenKind {
        &self.tok().kind
    }

    fn peek_n(&self, n: usize) -> &'t TokenKind {
        let toks: &'t [Token] = self.toks;
        &toks[(self.pos + n).min(toks.len() - 1)].kind
    }

    fn bump(&mut self) -> &'t Token {
        let t = self.tok();
        if t.kind != TokenKind::Eof {
            self.pos += 1;
        }
        t
    }

    fn at(&self, k: &TokenKind) -> bool {
        self.peek() == k
    }

    fn eat(&mut self, k: &TokenKind) -> Option<Span> {
        if self.at(k) {
            Some(self.bump().span)
        } else {
            None
        }
    }

    /// The end of the last consumed token.
    fn prev_end(&self) -> u32 {
        if self.pos == 0 {
            0
        } else {
            self.toks[(self.pos - 1).min(self.toks.len() - 1)].span.end
        }
    }

    fn span_from(&self, start: Span) -> Span {
        Span {
            file: self.file,
            start: start.start,
            end: self.prev_end().max(start.end),
        }
    }

    fn expected(&self, what: &str) -> Diagnostic {
        let t = self.tok();
        Diagnostic::error(
            format!("expected {what}, found {}", t.kind.describe()),
            t.span,
        )
    }

    fn expect(&mut self, k: TokenKind) -> PResult<Span> {
        match self.eat(&k) {
            Some(s) => Ok(s),
            None => Err(self.expected(&format!("`{}`", k.punct()))),
        }
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.peek() {
            TokenKind::Ident(name) => {
                let span = self.bump().span;
                Ok(Ident {
                    name: name.clone(),
                    span,
                })
            }
            _ => Err(self.expected(what)),
        }
    }

    fn program(&mut self) -> (Vec<Item>, Vec<Diagnostic>) {
        let mut items = Vec::new();
        let mut errors = Vec::new();
        while !self.at(&TokenKind::Eof) {
            let start = self.pos;
            self.depth = 0;
            match self.item() {
                Ok(more) => items.extend(more),
                Err(d) => {
                    errors.push(d);
                    self.recover(start, false);
                }
            }
        }
        (items, errors)
    }

    /// Skip to just after the next `.` or to the next directive, making progress.
    /// Braces are skipped as a whole (a component whose head is broken is skipped with
    /// its body); with `in_body`, an unmatched `}` (the end of the enclosing component)
    /// stops the skipping without being consumed.
    fn recover(&mut self, item_start: usize, in_body: bool) {
        if self.pos == item_start && !(in_body && self.at(&TokenKind::RBrace)) {
            self.bump();
        }
        let mut braces = 0usize;
        loop {
            match self.peek() {
                TokenKind::Eof => break,
                TokenKind::Directive(_) | TokenKind::Dot if braces == 0 => {
                    if self.at(&TokenKind::Dot) {
                        self.bump();
                    }
                    break;
                }
                TokenKind::LBrace => {
                    braces += 1;
                    self.bump();
                }
                TokenKind::RBrace if braces == 0 && in_body => break,
                TokenKind::RBrace => {
                    braces = braces.saturating_sub(1);
                    self.bump();
                }
                _ => {
                    self.bump();
                }
            }
        }
    }

    /// The items of a component body, up to (not including) its closing `}`. An item
    /// with a syntax error is recorded in `self.errors` and skipped.
    fn body_items(&mut self) -> Vec<Item> {
        let mut items = Vec::new();
        while !self.at(&TokenKind::RBrace) && !self.at(&TokenKind::Eof) {
            let start = self.pos;
            let depth = self.depth;
            match self.item() {
                Ok(more) => items.extend(more),
                Err(d) => {
                    self.errors.push(d);
                    self.recover(start, true);
                }
            }
            self.depth = depth;
        }
        items
    }

    fn item(&mut self) -> PResult<Vec<Item>> {
        match self.peek() {
            TokenKind::Directive(d) => {
                let kw = self.bump().span;
                match d.as_str() {
                    "decl" => self
                        .decl(kw)
                        .map(|ds| ds.into_iter().map(Item::Decl).collect()),
                    "type" => self.type_decl(kw).map(|t| vec![Item::Type(t)]),
                    "number_type" | "symbol_type" => {
                        let name = self.ident("a type name")?;
                        let base = if d == "number_type" {
                            "number"
                        } else {
                            "symbol"
                        };
                        Ok(vec![Item::Type(TypeDecl {
                            name,
                            def: TypeDef::Subtype(Ident {
                                name: base.to_string(),
                                span: kw,
                            }),
                            span: self.span_from(kw),
                        })])
                    }
                    "input" => self.directive(kw, DirectiveKind::Input).map(|i| vec![i]),
                    "output" => self.directive(kw, DirectiveKind::Output).map(|i| vec![i]),
                    "printsize" => self
                        .directive(kw, DirectiveKind::PrintSize)
                        .map(|i| vec![i]),
                    "limitsize" => self
                        .directive(kw, DirectiveKind::LimitSize)
                        .map(|i| vec![i]),
                    "include" => match self.peek() {
                        TokenKind::Str(path) => {
                            self.bump();
                            Ok(vec![Item::Include {
                                path: path.clone(),
                                span: self.span_from(kw),
                            }])
                        }
                        _ => Err(self.expected("a file name in quotes after `.include`")),
                    },
                    "pragma" => {
                        let mut args = Vec::new();
                        while let TokenKind::Str(s) = self.peek() {
                            self.bump();
                            args.push(s.clone());
                        }
                        if args.is_empty() {
                            return Err(self.expected("a string after `.pragma`"));
                        }
                        Ok(vec![Item::Pragma {
                            args,
                            span: self.span_from(kw),
                        }])
                    }
                    "functor" => self.functor(kw).map(|i| vec![i]),
                    "lattice" => self.lattice(kw).map(|i| vec![i]),
                    "plan" => {
                        self.plan()?;
                        Err(Diagnostic::error(
                            "`.plan` must follow the rule it plans",
                            self.span_from(kw),
                        ))
                    }
                    "once" => Ok(vec![Item::Once { span: kw }]),
                    "comp" => self.component(kw).map(|c| vec![Item::Component(c)]),
                    "init" => {
                        let name = self.ident("an instance name after `.init`")?;
                        self.expect(TokenKind::Eq)?;
                        let component = self.component_type("a component name after `=`")?;
                        Ok(vec![Item::Init(Init {
                            name,
                            component,
                            span: self.span_from(kw),
                        })])
                    }
                    "override" => {
                        let name = self.ident("a relation name after `.override`")?;
                        Ok(vec![Item::Override {
                            name,
                            span: self.span_from(kw),
                        }])
                    }
                    other => Err(Diagnostic::error(
                        format!("unknown directive `.{other}`"),
                        kw,
                    )),
                }
            }
            TokenKind::Ident(_) => self.clause().map(|c| vec![Item::Clause(c)]),
            TokenKind::Dot => {
                let t = self.tok();
                match self.peek_n(1) {
                    TokenKind::Ident(name) if t.span.end == self.toks[self.pos + 1].span.start => {
                        let span = t.span.join(self.toks[self.pos + 1].span);
                        Err(Diagnostic::error(
                            format!("unknown directive `.{name}`"),
                            span,
                        ))
                    }
                    _ => Err(self.expected("a directive such as `.decl` or a clause")),
                }
            }
            _ => Err(self.expected("a directive such as `.decl` or a clause")),
        }
    }

    /// `.lattice T<> { Op -> expr, ... }` (after `.lattice`), Soufflé 2.5's lattice
    /// declaration; the operator names and expressions are checked later.
    fn lattice(&mut self, kw: Span) -> PResult<Item> {
        let name = self.qualified("a type name after `.lattice`")?;
        self.expect(TokenKind::Lt)?;
        self.expect(TokenKind::Gt)?;
        self.expect(TokenKind::LBrace)?;
        let mut ops = Vec::new();
        loop {
            let op = self.ident("a lattice operator (`Bottom`, `Top`, `Lub`, `Glb`)")?;
            self.expect(TokenKind::Minus)?;
            self.expect(TokenKind::Gt)?;
            self.enter()?;
            let e = self.expr();
            self.depth -= 1;
            ops.push((op, e?));
            if self.eat(&TokenKind::Comma).is_some() {
                continue;
            }
            self.expect(TokenKind::RBrace)?;
            break;
        }
        Ok(Item::Lattice {
            name,
            ops,
            span: self.span_from(kw),
        })
    }

    /// `.comp Name<T1, T2> : Base<T1>, Other { items }` (after `.comp`).
    fn component(&mut self, kw: Span) -> PResult<Component> {
        self.enter()?;
        let head = self.component_type("a component name after `.comp`")?;
        let mut bases = Vec::new();
        while self.eat(&TokenKind::Colon).is_some() || self.eat(&TokenKind::Comma).is_some() {
            bases.push(self.component_type("a base component name")?);
        }
        if !self.at(&TokenKind::LBrace) {
            return Err(self.expected("`{`, `:` or `,` after the component name"));
        }
        self.bump();
        let items = self.body_items();
        if self.eat(&TokenKind::RBrace).is_none() {
            return Err(self.expected(&format!("`}}` closing component `{}`", head.name.name)));
        }
        self.depth -= 1;
        Ok(Component {
            head,
            bases,
            items,
            span: self.span_from(kw),
        })
    }

    /// `Name` or `Name<A, B>`.
    fn component_type(&mut self, what: &str) -> PResult<ComponentType> {
        let name = self.ident(what)?;
        let mut params = Vec::new();
        if self.eat(&TokenKind::Lt).is_some() {
            loop {
                params.push(self.ident("a type parameter (an identifier)")?);
                if self.eat(&TokenKind::Comma).is_some() {
                    continue;
                }
                if self.eat(&TokenKind::Gt).is_some() {
                    break;
                }
                return Err(self.expected("`,` or `>`"));
            }
        }
        Ok(ComponentType {
            span: self.span_from(name.span),
            name,
            params,
        })
    }

    /// A possibly qualified name, `a`, `a.b`, `a.b.c`: a relation of a component
    /// instance, as Soufflé's `qualified_name`.
    fn qualified(&mut self, what: &str) -> PResult<Ident> {
        let mut id = self.ident(what)?;
        while self.at(&TokenKind::Dot) {
            let TokenKind::Ident(part) = self.peek_n(1) else {
                break;
            };
            self.bump();
            let span = self.bump().span;
            id.name.push('.');
            id.name.push_str(part);
            id.span = id.span.join(span);
        }
        Ok(id)
    }

    /// Whether a qualified atom (`a.b(`, `a.b.c(`) starts here. Only asked where a
    /// literal starts: there `x.y(` cannot be anything else, while in an expression
    /// `y.` ends the clause, as in Soufflé, whose variables are never qualified.
    fn qualified_atom_ahead(&self) -> bool {
        if !matches!(self.peek(), TokenKind::Ident(_)) {
            return false;
        }
        let mut n = 1;
        while self.peek_n(n) == &TokenKind::Dot && matches!(self.peek_n(n + 1), TokenKind::Ident(_))
        {
            n += 2;
        }
        n > 1 && self.peek_n(n) == &TokenKind::LParen
    }

    /// `.decl a(...) qualifiers` or, as Soufflé allows, `.decl a, b, c(...)`: several
    /// relations with the same attributes and qualifiers (one [`Decl`] each, spanning
    /// the whole declaration).
    fn decl(&mut self, kw: Span) -> PResult<Vec<Decl>> {
        let mut names = vec![self.ident("a relation name after `.decl`")?];
        while self.eat(&TokenKind::Comma).is_some() {
            names.push(self.ident("a relation name after `,`")?);
        }
        // Soufflé 2.4.1's `.decl d = debug_delta(r)`: one name, then only qualifiers.
        let mut debug_delta = None;
        let attrs = if self.at(&TokenKind::Eq) {
            self.bump();
            if !matches!(self.peek(), TokenKind::Ident(n) if n == "debug_delta") {
                return Err(self.expected("`debug_delta(relation)` after `=`"));
            }
            self.bump();
            if names.len() > 1 {
                return Err(Diagnostic::error(
                    "a `debug_delta` declaration declares one relation",
                    names[1].span,
                )
                .with_help(format!(
                    "declare each on its own: `.decl {} = debug_delta(...)`",
                    names[1].name
                )));
            }
            self.expect(TokenKind::LParen)?;
            debug_delta = Some(self.qualified("the name of a relation in `debug_delta(...)`")?);
            self.expect(TokenKind::RParen)?;
            Vec::new()
        } else {
            self.expect(TokenKind::LParen)?;
            self.attributes(TokenKind::RParen)?
        };
        let mut qualifiers = Vec::new();
        let mut choice_domains = Vec::new();
        while let TokenKind::Ident(q) = self.peek() {
            if q == "choice"
                && self.peek_n(1) == &TokenKind::Minus
                && matches!(self.peek_n(2), TokenKind::Ident(d) if d == "domain")
            {
                if debug_delta.is_some() {
                    return Err(Diagnostic::error(
                        "a `debug_delta` relation cannot have a `choice-domain`",
                        self.tok().span,
                    ));
                }
                for _ in 0..3 {
                    self.bump();
                }
                choice_domains.extend(self.choice_domains()?);
                continue;
            }
            if !QUALIFIERS.contains(&q.as_str()) || self.peek_n(1) == &TokenKind::LParen {
                break;
            }
            qualifiers.push(self.ident("a qualifier")?);
        }
        let span = self.span_from(kw);
        Ok(names
            .into_iter()
            .map(|name| Decl {
                name,
                attrs: attrs.clone(),
                qualifiers: qualifiers.clone(),
                choice_domains: choice_domains.clone(),
                debug_delta: debug_delta.clone(),
                span,
            })
            .collect())
    }

    /// The domains after `choice-domain`: `x`, `(x, y)`, separated by `,` (Soufflé's
    /// `choice-domain <constraint> { "," <constraint> }`).
    fn choice_domains(&mut self) -> PResult<Vec<ChoiceDomain>> {
        let mut domains = Vec::new();
        loop {
            let start = self.tok().span;
            let attrs = if self.eat(&TokenKind::LParen).is_some() {
                let mut attrs = vec![self.ident("an attribute name in `choice-domain`")?];
                while self.eat(&TokenKind::Comma).is_some() {
                    attrs.push(self.ident("an attribute name in `choice-domain`")?);
                }
                self.expect(TokenKind::RParen)?;
                attrs
            } else {
                vec![self.ident("an attribute name after `choice-domain`")?]
            };
            domains.push(ChoiceDomain {
                attrs,
                span: self.span_from(start),
            });
            if self.eat(&TokenKind::Comma).is_none() {
                return Ok(domains);
            }
        }
    }

    fn type_decl(&mut self, kw: Span) -> PResult<TypeDecl> {
        let name = self.ident("a type name after `.type`")?;
        let def = if self.eat(&TokenKind::Subtype).is_some() {
            TypeDef::Subtype(self.qualified("a base type after `<:`")?)
        } else if self.eat(&TokenKind::Eq).is_some() {
            if self.eat(&TokenKind::LBracket).is_some() {
                TypeDef::Record(self.attributes(TokenKind::RBracket)?)
            } else {
                let first = self.qualified("a type name")?;
                if self.eat(&TokenKind::LBrace).is_some() {
                    let mut branches = vec![Branch {
                        name: first,
                        fields: self.attributes(TokenKind::RBrace)?,
                    }];
                    while self.eat(&TokenKind::Pipe).is_some() {
                        let name = self.ident("a branch name after `|`")?;
                        self.expect(TokenKind::LBrace)?;
                        let fields = self.attributes(TokenKind::RBrace)?;
                        branches.push(Branch { name, fields });
                    }
                    TypeDef::Adt(branches)
                } else {
                    let mut members = vec![first];
                    while self.eat(&TokenKind::Pipe).is_some() {
                        members.push(self.qualified("a type name after `|`")?);
                    }
                    TypeDef::Union(members)
                }
            }
        } else {
            return Err(self.expected("`<:` or `=` after the type name"));
        };
        Ok(TypeDecl {
            name,
            def,
            span: self.span_from(kw),
        })
    }

    /// `name: type, ...` up to and including `close` (the opening bracket is already
    /// read): the attributes of a `.decl`, the fields of a record type or of an ADT
    /// branch.
    fn attributes(&mut self, close: TokenKind) -> PResult<Vec<Attribute>> {
        let mut attrs = Vec::new();
        if self.eat(&close).is_some() {
            return Ok(attrs);
        }
        loop {
            let aname = self.ident("an attribute name")?;
            self.expect(TokenKind::Colon)?;
            let ty = self.qualified("a type name")?;
            let lattice = if self.at(&TokenKind::Lt) && self.peek_n(1) == &TokenKind::Gt {
                let lt = self.bump().span;
                Some(lt.join(self.bump().span))
            } else {
                None
            };
            attrs.push(Attribute {
                name: aname,
                ty,
                lattice,
            });
            if self.eat(&TokenKind::Comma).is_some() {
                continue;
            }
            if self.eat(&close).is_some() {
                return Ok(attrs);
            }
            return Err(self.expected(&format!("`,` or {}", close.describe())));
        }
    }

    fn directive(&mut self, kw: Span, kind: DirectiveKind) -> PResult<Item> {
        let mut relations =
            vec![self.qualified(&format!("a relation name after `{}`", kind.keyword()))?];
        while self.eat(&TokenKind::Comma).is_some() {
            relations.push(self.qualified("a relation name")?);
        }
        let mut params = Vec::new();
        if self.eat(&TokenKind::LParen).is_some() && self.eat(&TokenKind::RParen).is_none() {
            loop {
                let key = self.ident("a parameter name such as `IO` or `filename`")?;
                self.expect(TokenKind::Eq)?;
                let value = match self.peek() {
                    TokenKind::Str(s) => s.clone(),
                    TokenKind::Ident(s) => s.clone(),
                    TokenKind::Int(n) | TokenKind::Unsigned(n) => n.to_string(),
                    TokenKind::Float(f) => f.to_string(),
                    _ => return Err(self.expected("a parameter value")),
                };
                self.bump();
                params.push((key, value));
                if self.eat(&TokenKind::Comma).is_some() {
                    continue;
                }
                if self.eat(&TokenKind::RParen).is_some() {
                    break;
                }
                return Err(self.expected("`,` or `)`"));
            }
        }
        Ok(Item::Directive(Directive {
            kind,
            relations,
            params,
            span: self.span_from(kw),
        }))
    }

    fn functor(&mut self, kw: Span) -> PResult<Item> {
        let name = self.ident("a functor name after `.functor`")?;
        self.expect(TokenKind::LParen)?;
        let mut params = Vec::new();
        if self.eat(&TokenKind::RParen).is_none() {
            loop {
                // `x: T` or just `T`.
                let first = self.qualified("a parameter type")?;
                let ty = if self.eat(&TokenKind::Colon).is_some() {
                    self.qualified("a parameter type")?
                } else {
                    first
                };
                params.push(ty);
                if self.eat(&TokenKind::Comma).is_none() {
                    self.expect(TokenKind::RParen)?;
                    break;
                }
            }
        }
        self.expect(TokenKind::Colon)?;
        let result = self.qualified("a result type")?;
        let mut stateful = false;
        if let TokenKind::Ident(s) = self.peek() {
            if s == "stateful" {
                self.bump();
                stateful = true;
            }
        }
        Ok(Item::Functor {
            name,
            params,
            result,
            stateful,
            span: self.span_from(kw),
        })
    }

    /// `.plan 0: (1, 2), 1: (2, 1)` after a rule: accepted and ignored.
    /// The entries of a `.plan` (the directive already read).
    fn plan(&mut self) -> PResult<Vec<PlanVersion>> {
        let mut out = Vec::new();
        loop {
            let start = self.tok().span;
            let version = match self.peek() {
                TokenKind::Int(n) => {
                    let n = *n;
                    self.bump();
                    n
                }
                _ => return Err(self.expected("a version number in `.plan`")),
            };
            self.expect(TokenKind::Colon)?;
            self.expect(TokenKind::LParen)?;
            let mut order = Vec::new();
            if self.eat(&TokenKind::RParen).is_none() {
                loop {
                    match self.peek() {
                        TokenKind::Int(n) => {
                            order.push((*n, self.tok().span));
                            self.bump();
                        }
                        _ => return Err(self.expected("an atom number")),
                    }
                    if self.eat(&TokenKind::Comma).is_some() {
                        continue;
                    }
                    self.expect(TokenKind::RParen)?;
                    break;
                }
            }
            out.push(PlanVersion {
                version,
                order,
                span: self.span_from(start),
            });
            if self.eat(&TokenKind::Comma).is_none() {
                return Ok(out);
            }
        }
    }

    /// A `.plan` right after a rule belongs to it.
    fn plan_after_rule(&mut self) -> PResult<Vec<PlanVersion>> {
        if matches!(self.peek(), TokenKind::Directive(d) if d == "plan") {
            self.bump();
            self.plan()
        } else {
            Ok(Vec::new())
        }
    }

    fn clause(&mut self) -> PResult<Clause> {
        let start = self.tok().span;
        let mut heads = vec![self.atom()?];
        if self.eat(&TokenKind::Le).is_some() {
            // A subsumptive clause: `dominated <= dominating :- body.`
            let dominating = self.atom()?;
            if self.eat(&TokenKind::If).is_none() {
                return Err(self.expected("`:-` (a subsumptive clause needs a body)"));
            }
            let body = self.disjunction()?;
            if self.eat(&TokenKind::Dot).is_none() {
                return Err(self.expected("`,`, `;` or `.`"));
            }
            return Ok(Clause {
                heads,
                body: Some(body),
                dominating: Some(dominating),
                plan: Vec::new(),
                span: self.span_from(start),
            });
        }
        while self.eat(&TokenKind::Comma).is_some() {
            heads.push(self.atom()?);
        }
        if self.eat(&TokenKind::Dot).is_some() {
            return Ok(Clause {
                heads,
                body: None,
                dominating: None,
                plan: Vec::new(),
                span: self.span_from(start),
            });
        }
        if self.eat(&TokenKind::If).is_none() {
            return Err(self.expected("`.`, `,` or `:-`"));
        }
        let body = self.disjunction()?;
        if self.eat(&TokenKind::Dot).is_none() {
            return Err(self.expected("`,`, `;` or `.`"));
        }
        let span = self.span_from(start);
        Ok(Clause {
            heads,
            body: Some(body),
            dominating: None,
            plan: self.plan_after_rule()?,
            span,
        })
    }

    fn atom(&mut self) -> PResult<Atom> {
        let name = self.qualified("a relation name")?;
        if !self.at(&TokenKind::LParen) {
            return Err(self.expected("`(`"));
        }
        let args = self.args()?;
        Ok(Atom {
            span: self.span_from(name.span),
            name,
            args,
        })
    }

    /// `( e1, ..., en )`
    fn args(&mut self) -> PResult<Vec<Expr>> {
        self.expect(TokenKind::LParen)?;
        let mut args = Vec::new();
        if self.eat(&TokenKind::RParen).is_some() {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(&TokenKind::Comma).is_some() {
                continue;
            }
            if self.eat(&TokenKind::RParen).is_some() {
                return Ok(args);
            }
            return Err(self.expected("`,` or `)`"));
        }
    }

    fn enter(&mut self) -> PResult<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Diagnostic::error(
                format!("nesting is too deep (more than {MAX_DEPTH} levels)"),
                self.tok().span,
            ));
        }
        Ok(())
    }

    fn disjunction(&mut self) -> PResult<Body> {
        self.enter()?;
        let r = self.disjunction_inner();
        self.depth -= 1;
        r
    }

    fn disjunction_inner(&mut self) -> PResult<Body> {
        let start = self.tok().span;
        let mut parts = vec![self.conjunction()?];
        while self.eat(&TokenKind::Semi).is_some() {
            parts.push(self.conjunction()?);
        }
        Ok(if parts.len() == 1 {
            parts.pop().unwrap_or(Body::And(Vec::new(), start))
        } else {
            Body::Or(parts, self.span_from(start))
        })
    }

    fn conjunction(&mut self) -> PResult<Body> {
        let start = self.tok().span;
        let mut parts = vec![self.literal()?];
        while self.eat(&TokenKind::Comma).is_some() {
            parts.push(self.literal()?);
        }
        Ok(if parts.len() == 1 {
            parts.pop().unwrap_or(Body::And(Vec::new(), start))
        } else {
            Body::And(parts, self.span_from(start))
        })
    }

    fn cmp_op(&self) -> Option<CmpOp> {
        Some(match self.peek() {
            TokenKind::Eq => CmpOp::Eq,
            TokenKind::Ne => CmpOp::Ne,
            TokenKind::Lt => CmpOp::Lt,
            TokenKind::Le => CmpOp::Le,
            TokenKind::Gt => CmpOp::Gt,
            TokenKind::Ge => CmpOp::Ge,
            _ => return None,
        })
    }

    fn literal(&mut self) -> PResult<Body> {
        match self.peek() {
            TokenKind::Bang => {
                let bang = self.bump().span;
                match (self.peek(), self.peek_n(1)) {
                    (TokenKind::Ident(_), _)
                        if self.peek_n(1) == &TokenKind::LParen || self.qualified_atom_ahead() =>
                    {
                        let term = self.constraint_or_atom()?;
                        Ok(match term {
                            Body::Literal(Literal::Atom(atom)) => {
                                Body::Literal(Literal::Negation {
                                    span: self.span_from(bang),
                                    atom,
                                })
                            }
                            // `!f(x) < y` negates the comparison, as in Soufflé.
                            other => negate(other),
                        })
                    }
                    // Soufflé's `! term`: a parenthesised formula, a comparison,
                    // `true`/`false` or another negation, negated by De Morgan's laws
                    // (`!(a, b)` is `!a ; !b`, `!(x < y)` is `x >= y`, `!!a` is `a`).
                    _ if Self::starts_literal(self.peek()) => {
                        self.enter()?;
                        let term = self.literal();
                        self.depth -= 1;
                        Ok(negate(term?))
                    }
                    _ => Err(self.expected("an atom, a comparison or `(` after `!`")),
                }
            }
            TokenKind::LParen => {
                let save = self.pos;
                self.bump();
                let formula = self.disjunction().and_then(|b| {
                    self.expect(TokenKind::RParen)?;
                    Ok(b)
                });
                match formula {
                    Ok(b) if self.cmp_op().is_none() && self.binop_info().is_none() => Ok(b),
                    other => {
                        let formula_pos = self.pos;
                        self.pos = save;
                        match self.constraint_or_atom() {
                            Ok(b) => Ok(b),
                            Err(e) => match other {
                                Err(fe) if formula_pos > self.pos => {
                                    self.pos = formula_pos;
                                    Err(fe)
                                }
                                _ => Err(e),
                            },
                        }
                    }
                }
            }
            TokenKind::Ident(name)
                if (name == "true" || name == "false")
                    && self.peek_n(1) != &TokenKind::LParen
                    && !matches!(
                        self.peek_n(1),
                        TokenKind::Eq
                            | TokenKind::Ne
                            | TokenKind::Lt
                            | TokenKind::Le
                            | TokenKind::Gt
                            | TokenKind::Ge
                    ) =>
            {
                let span = self.bump().span;
                Ok(Body::Literal(Literal::Bool(name == "true", span)))
            }
            _ => self.constraint_or_atom(),
        }
    }

    fn starts_literal(k: &TokenKind) -> bool {
        Self::starts_expr(k) || matches!(k, TokenKind::Bang)
    }

    fn constraint_or_atom(&mut self) -> PResult<Body> {
        if self.qualified_atom_ahead() {
            return Ok(Body::Literal(Literal::Atom(self.atom()?)));
        }
        let lhs = self.expr()?;
        if let Some(op) = self.cmp_op() {
            self.bump();
            let rhs = self.expr()?;
            let span = lhs.span().join(rhs.span());
            return Ok(Body::Literal(Literal::Compare { op, lhs, rhs, span }));
        }
        let mut lhs = lhs;
        match &mut lhs {
            Expr::Call {
                name,
                args,
                user: false,
                span,
            } => Ok(Body::Literal(Literal::Atom(Atom {
                name: Ident {
                    name: std::mem::take(&mut name.name),
                    span: name.span,
                },
                args: std::mem::take(args),
                span: *span,
            }))),
            _ => Err(self.expected("a comparison operator (`=`, `!=`, `<`, `<=`, `>`, `>=`)")),
        }
    }

    fn binop_info(&self) -> Option<(BinOp, u8, bool)> {
        Some(match self.peek() {
            TokenKind::Plus => (BinOp::Add, 7, false),
            TokenKind::Minus => (BinOp::Sub, 7, false),
            TokenKind::Star => (BinOp::Mul, 8, false),
            TokenKind::Slash => (BinOp::Div, 8, false),
            TokenKind::Percent => (BinOp::Rem, 8, false),
            TokenKind::Caret => (BinOp::Pow, 10, true),
            TokenKind::Ident(s) => match s.as_str() {
                "lor" => (BinOp::LOr, 1, false),
                "land" => (BinOp::LAnd, 2, false),
                "bor" => (BinOp::BOr, 3, false),
                "bxor" => (BinOp::BXor, 4, false),
                "band" => (BinOp::BAnd, 5, false),
                "bshl" => (BinOp::BShl, 6, false),
                "bshr" => (BinOp::BShr, 6, false),
                _ => return None,
            },
            _ => return None,
        })
    }

    pub(crate) fn expr(&mut self) -> PResult<Expr> {
        self.binary(0)
    }

    fn binary(&mut self, min_prec: u8) -> PResult<Expr> {
        self.enter()?;
        let r = self.binary_inner(min_prec);
        self.depth -= 1;
        r
    }

    /// Precedence climbing. A chain of left-associative operators (`x + y + z`, however
    /// long) is built by this loop, not by recursion, so it does not count as nesting;
    /// right-associative `^` and operands of tighter operators recurse through
    /// [`Parser::binary`], which counts.
    fn binary_inner(&mut self, min_prec: u8) -> PResult<Expr> {
        let mut lhs = self.unary()?;
        while let Some((op, prec, right)) = self.binop_info() {
            if prec < min_prec {
                break;
            }
            self.bump();
            let rhs = self.binary(if right { prec } else { prec + 1 })?;
            let span = lhs.span().join(rhs.span());
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
                span,
            };
        }
        Ok(lhs)
    }

    fn starts_expr(k: &TokenKind) -> bool {
        matches!(
            k,
            TokenKind::Ident(_)
                | TokenKind::Int(_)
                | TokenKind::Unsigned(_)
                | TokenKind::Float(_)
                | TokenKind::Str(_)
                | TokenKind::Underscore
                | TokenKind::LParen
                | TokenKind::LBracket
                | TokenKind::Dollar
                | TokenKind::Minus
                | TokenKind::At
        )
    }

    fn unary(&mut self) -> PResult<Expr> {
        let op = match self.peek() {
            TokenKind::Minus => Some(UnaryOp::Neg),
            TokenKind::Ident(s) if s == "bnot" && Self::starts_expr(self.peek_n(1)) => {
                Some(UnaryOp::BNot)
            }
            TokenKind::Ident(s) if s == "lnot" && Self::starts_expr(self.peek_n(1)) => {
                Some(UnaryOp::LNot)
            }
            _ => None,
        };
        match op {
            Some(op) => {
                let start = self.bump().span;
                // Only `^` binds tighter than a unary operator.
                let arg = self.binary(9)?;
                Ok(Expr::Unary {
                    op,
                    span: start.join(arg.span()),
                    arg: Box::new(arg),
                })
            }
            None => self.primary(),
        }
    }

    fn primary(&mut self) -> PResult<Expr> {
        let t = self.tok();
        match &t.kind {
            TokenKind::Int(v) => {
                self.bump();
                Ok(Expr::Int(*v, t.span))
            }
            TokenKind::Unsigned(v) => {
                self.bump();
                Ok(Expr::Unsigned(*v, t.span))
            }
            TokenKind::Float(v) => {
                self.bump();
                Ok(Expr::Float(*v, t.span))
            }
            TokenKind::Str(s) => {
                self.bump();
                Ok(Expr::Str(s.clone(), t.span))
            }
            TokenKind::Underscore => {
                self.bump();
                Ok(Expr::Wildcard(t.span))
            }
            TokenKind::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect(TokenKind::RParen)?;
                Ok(e)
            }
            TokenKind::At => {
                self.bump();
                let name = self.ident("a functor name after `@`")?;
                if !self.at(&TokenKind::LParen) {
                    return Err(self.expected("`(`"));
                }
                let args = self.args()?;
                Ok(Expr::Call {
                    name,
                    args,
                    user: true,
                    span: self.span_from(t.span),
                })
            }
            TokenKind::Dollar => match self.peek_n(1) {
                // `$Branch(args)` / `$Branch`: a constructor of an algebraic data type.
                TokenKind::Ident(_) if self.toks[self.pos + 1].span.start == t.span.end => {
                    self.bump();
                    let name = self.ident("a branch name after `$`")?;
                    let args = if self.at(&TokenKind::LParen) {
                        self.args()?
                    } else {
                        Vec::new()
                    };
                    Ok(Expr::Constructor {
                        ctor: Constructor::Branch(name),
                        args,
                        span: self.span_from(t.span),
                    })
                }
                // `$` alone: Soufflé's old counter, still accepted (with a warning) as
                // `autoinc()`.
                _ => {
                    self.bump();
                    self.warnings.push(Diagnostic::error(
                        "deprecated `$` symbol was used; use the functor `autoinc()` instead",
                        t.span,
                    ));
                    Ok(Expr::Call {
                        name: Ident {
                            name: "autoinc".to_string(),
                            span: t.span,
                        },
                        args: Vec::new(),
                        user: false,
                        span: t.span,
                    })
                }
            },
            TokenKind::LBracket => {
                self.bump();
                self.enter()?;
                let args = self.record_fields();
                self.depth -= 1;
                Ok(Expr::Constructor {
                    args: args?,
                    ctor: Constructor::Record,
                    span: self.span_from(t.span),
                })
            }
            TokenKind::Ident(name) if name == "nil" => {
                self.bump();
                Ok(Expr::Constructor {
                    ctor: Constructor::Nil,
                    args: Vec::new(),
                    span: t.span,
                })
            }
            TokenKind::Ident(name) => {
                let ident = Ident {
                    name: name.clone(),
                    span: t.span,
                };
                self.bump();
                match name.as_str() {
                    "count" if self.at(&TokenKind::Colon) => {
                        self.aggregate(AggKind::Count, None, t.span)
                    }
                    "sum" | "mean" | "min" | "max" => {
                        let kind = match name.as_str() {
                            "sum" => AggKind::Sum,
                            "mean" => AggKind::Mean,
                            "min" => AggKind::Min,
                            _ => AggKind::Max,
                        };
                        if self.at(&TokenKind::LParen) {
                            let args = self.args()?;
                            if self.at(&TokenKind::Colon) {
                                if args.len() != 1 {
                                    return Err(Diagnostic::error(
                                        format!(
                                            "`{name}` aggregate takes one expression, found {}",
                                            args.len()
                                        ),
                                        self.span_from(t.span),
                                    ));
                                }
                                let arg = args.into_iter().next().map(Box::new);
                                return self.aggregate(kind, arg, t.span);
                            }
                            return Ok(Expr::Call {
                                name: ident,
                                args,
                                user: false,
                                span: self.span_from(t.span),
                            });
                        }
                        if Self::starts_expr(self.peek()) {
                            let arg = self.expr()?;
                            if !self.at(&TokenKind::Colon) {
                                return Err(
                                    self.expected(&format!("`:` after the expression of `{name}`"))
                                );
                            }
                            return self.aggregate(kind, Some(Box::new(arg)), t.span);
                        }
                        Ok(Expr::Var(ident))
                    }
                    // `as(value, Type)`: the type name is kept as a string constant
                    // (it is no variable).
                    "as" if self.at(&TokenKind::LParen) => {
                        self.bump();
                        let value = self.expr()?;
                        self.expect(TokenKind::Comma)?;
                        let ty = self.ident("a type name")?;
                        self.expect(TokenKind::RParen)?;
                        Ok(Expr::Call {
                            name: ident,
                            args: vec![value, Expr::Str(ty.name, ty.span)],
                            user: false,
                            span: self.span_from(t.span),
                        })
                    }
                    _ if self.at(&TokenKind::LParen) => {
                        let args = self.args()?;
                        Ok(Expr::Call {
                            name: ident,
                            args,
                            user: false,
                            span: self.span_from(t.span),
                        })
                    }
                    _ => Ok(Expr::Var(ident)),
                }
            }
            _ => Err(self.expected("an expression")),
        }
    }

    /// The fields of a record term after its `[`, up to and including the `]`.
    fn record_fields(&mut self) -> PResult<Vec<Expr>> {
        let mut args = Vec::new();
        if self.eat(&TokenKind::RBracket).is_some() {
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            if self.eat(&TokenKind::Comma).is_some() {
                continue;
            }
            if self.eat(&TokenKind::RBracket).is_some() {
                return Ok(args);
            }
            return Err(self.expected("`,` or `]`"));
        }
    }

    /// After `count`, `sum e`, ...: `: { body }` or `: atom`.
    fn aggregate(&mut self, kind: AggKind, arg: Option<Box<Expr>>, start: Span) -> PResult<Expr> {
        self.expect(TokenKind::Colon)?;
        let body = if self.eat(&TokenKind::LBrace).is_some() {
            let b = self.disjunction()?;
            self.expect(TokenKind::RBrace)?;
            b
        } else if matches!(
            (self.peek(), self.peek_n(1)),
            (TokenKind::Ident(_), TokenKind::LParen)
        ) || self.qualified_atom_ahead()
        {
            Body::Literal(Literal::Atom(self.atom()?))
        } else {
            return Err(self.expected("`{` or an atom after `:` in an aggregate"));
        };
        Ok(Expr::Aggregate {
            kind,
            arg,
            body: Box::new(body),
            span: self.span_from(start),
        })
    }
}

/// The negation of a literal: an atom becomes a negated atom and back, a comparison
/// its complement (`<` and `>=`, `=` and `!=`), `true` and `false` swap.
fn negate_literal(l: Literal) -> Literal {
    match l {
        Literal::Atom(atom) => Literal::Negation {
            span: atom.span,
            atom,
        },
        Literal::Negation { atom, .. } => Literal::Atom(atom),
        Literal::Compare { op, lhs, rhs, span } => Literal::Compare {
            op: match op {
                CmpOp::Eq => CmpOp::Ne,
                CmpOp::Ne => CmpOp::Eq,
                CmpOp::Lt => CmpOp::Ge,
                CmpOp::Ge => CmpOp::Lt,
                CmpOp::Le => CmpOp::Gt,
                CmpOp::Gt => CmpOp::Le,
            },
            lhs,
            rhs,
            span,
        },
        Literal::Bool(b, span) => Literal::Bool(!b, span),
    }
}

/// The negation of a formula by De Morgan's laws, as Soufflé's parser negates a `!`
/// term (`RuleBody::negated`): `!(a, b)` is `!a ; !b` and `!(a ; b)` is `!a, !b`.
/// Recursion follows the nesting of parentheses, which the parser bounds.
fn negate(b: Body) -> Body {
    match b {
        Body::Literal(l) => Body::Literal(negate_literal(l)),
        Body::And(parts, span) => Body::Or(parts.into_iter().map(negate).collect(), span),
        Body::Or(parts, span) => Body::And(parts.into_iter().map(negate).collect(), span),
    }
}

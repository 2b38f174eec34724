//! The abstract syntax tree of a Soufflé-syntax program.
//!
//! The AST mirrors the text closely: names are unresolved strings, `;` disjunctions and
//! aggregates nested in expressions are kept as written, and every node carries the
//! [`Span`] of the text it came from so that the checker can point at it. Deciding what a
//! name means (relation, type, functor, predicate such as `contains`) is the checker's
//! job, not the parser's: `contains(a, b)` is parsed as an [`Atom`] like any other.

use crate::source::Span;

/// A name with its location. Relation and type names may be qualified (`a.b.r`, the
/// relation `r` of the instance `b` of the instance `a`): `name` holds the whole dotted
/// name and `span` covers it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ident {
    pub name: String,
    pub span: Span,
}

/// A whole program (with `.include`s already spliced in when loaded through
/// [`crate::parse_file`] or [`crate::parse_str`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Program {
    pub items: Vec<Item>,
    /// Warnings found while parsing (Soufflé's parser warns about the deprecated
    /// counter `$`), located. The checker passes them on with its own
    /// (`fixlog_logical::Program::warnings`).
    pub warnings: Vec<crate::Diagnostic>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Item {
    /// `.decl r(a: number, b: T) qualifiers`
    Decl(Decl),
    /// `.type T <: number`, `.type T = A | B`, ...
    Type(TypeDecl),
    /// `.input`, `.output`, `.printsize`, `.limitsize`
    Directive(Directive),
    /// `.include "file"` (only present in the output of [`crate::parse`]; the loaders
    /// replace it by the included file's items).
    Include { path: String, span: Span },
    /// `.once` (Soufflé's include guard): when the loaders reach a `.once` they have
    /// passed before (the same line of the same file), they skip the rest of its file.
    /// Only present in the output of [`crate::parse`]; the loaders act on it and drop it.
    Once { span: Span },
    /// `.pragma "key" "value"` (or `.pragma "key"`): the strings as written. The
    /// checker reads `magic-transform` (and `magic-transform-exclude`); others are
    /// ignored.
    Pragma { args: Vec<String>, span: Span },
    /// `.functor name(x: T, ...): R [stateful]` (a user-defined functor, loaded from
    /// a shared library). Parameter names are optional (`.functor f(number): number`).
    Functor {
        name: Ident,
        /// The parameters' types.
        params: Vec<Ident>,
        result: Ident,
        stateful: bool,
        span: Span,
    },
    /// A fact (`edge(1, 2).`) or a rule (`a(x), b(x) :- c(x).`).
    Clause(Clause),
    /// `.comp Name<T1, T2> : Base<T1>, Other { items }`
    Component(Component),
    /// `.init instance = Name<number, Foo>`
    Init(Init),
    /// `.override r` (only inside a component body).
    Override { name: Ident, span: Span },
    /// `.lattice T<> { Bottom -> e, Top -> e, Lub -> @f(_, _), Glb -> g(_, _) }`
    /// (Soufflé 2.5): the lattice operations of type `T`, each an expression (the binary
    /// ones with two `_` standing for their arguments), in the order written.
    Lattice {
        name: Ident,
        ops: Vec<(Ident, Expr)>,
        span: Span,
    },
}

/// `Name` or `Name<A, B>`: a component's own head, a base in its inheritance list, or
/// what an `.init` instantiates. The parameters are plain identifiers, as in Soufflé.
#[derive(Clone, Debug, PartialEq)]
pub struct ComponentType {
    pub name: Ident,
    pub params: Vec<Ident>,
    pub span: Span,
}

/// A component declaration. Its body holds any items a program holds (`.include`s
/// already spliced in), plus nested components, `.init`s and `.override`s; names in it
/// stay as written until `fixlog_logical` instantiates it.
#[derive(Clone, Debug, PartialEq)]
pub struct Component {
    /// The component's name and its formal type parameters.
    pub head: ComponentType,
    /// The components it inherits from, in order.
    pub bases: Vec<ComponentType>,
    pub items: Vec<Item>,
    pub span: Span,
}

/// `.init name = Component<params>`
#[derive(Clone, Debug, PartialEq)]
pub struct Init {
    pub name: Ident,
    pub component: ComponentType,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Decl {
    pub name: Ident,
    pub attrs: Vec<Attribute>,
    /// `btree`, `brie`, `eqrel`, ... as written.
    pub qualifiers: Vec<Ident>,
    /// `choice-domain x, (y, z)`: each domain is the attributes named in it (one for
    /// `x`, several for `(y, z)`); empty when the declaration has no `choice-domain`.
    pub choice_domains: Vec<ChoiceDomain>,
    /// `.decl d = debug_delta(r)` (Soufflé 2.4.1+): the relation `r` whose new tuples of
    /// every pass `d` records; `attrs` is then empty (the checker gives `d` the
    /// attributes of `r` and an `unsigned` iteration).
    pub debug_delta: Option<Ident>,
    pub span: Span,
}

/// One domain of a `choice-domain` qualifier: at most one tuple of the relation per
/// value of these attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct ChoiceDomain {
    pub attrs: Vec<Ident>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Attribute {
    pub name: Ident,
    pub ty: Ident,
    /// `x: T<>`: a lattice attribute (Soufflé 2.5; `T` has a `.lattice`): where the `<>`
    /// is.
    pub lattice: Option<Span>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct TypeDecl {
    pub name: Ident,
    pub def: TypeDef,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub enum TypeDef {
    /// `.type T <: base`
    Subtype(Ident),
    /// `.type T = A` (one member) or `.type T = A | B | ...`
    Union(Vec<Ident>),
    /// `.type T = [a: number, ...]`: the fields in order.
    Record(Vec<Attribute>),
    /// `.type T = A { ... } | B { ... }`: the branches in declaration order.
    Adt(Vec<Branch>),
}

/// One branch of an algebraic data type: `A {x: number, y: T}` (`B {}` has no fields).
#[derive(Clone, Debug, PartialEq)]
pub struct Branch {
    pub name: Ident,
    pub fields: Vec<Attribute>,
}

/// What a constructor term builds (see [`Expr::Constructor`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Constructor {
    /// `[a, b, ...]`: a record of the type the context gives.
    Record,
    /// `nil`: the empty record of the type the context gives.
    Nil,
    /// `$Branch(a, ...)` or `$Branch`: a value of the algebraic data type that declares
    /// the branch (branch names are unique in a program, as in Soufflé).
    Branch(Ident),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DirectiveKind {
    Input,
    Output,
    PrintSize,
    LimitSize,
}

impl DirectiveKind {
    pub fn keyword(self) -> &'static str {
        match self {
            DirectiveKind::Input => ".input",
            DirectiveKind::Output => ".output",
            DirectiveKind::PrintSize => ".printsize",
            DirectiveKind::LimitSize => ".limitsize",
        }
    }
}

/// `.input a, b(IO=file, filename="a.tsv")`
#[derive(Clone, Debug, PartialEq)]
pub struct Directive {
    pub kind: DirectiveKind,
    pub relations: Vec<Ident>,
    /// `key = value`; the value as text (string contents without quotes).
    pub params: Vec<(Ident, String)>,
    pub span: Span,
}

/// `heads :- body.` or, with `body == None`, the fact(s) `heads.`
#[derive(Clone, Debug, PartialEq)]
pub struct Clause {
    pub heads: Vec<Atom>,
    pub body: Option<Body>,
    /// A subsumptive clause `dominated <= dominating :- body.` (Soufflé 2.3+): `heads`
    /// holds the dominated atom alone and this the dominating one.
    pub dominating: Option<Atom>,
    /// The `.plan` written after the rule (empty if none).
    pub plan: Vec<PlanVersion>,
    pub span: Span,
}

/// One entry `version: (atom, atom, ...)` of a `.plan`: the order in which a version of
/// the rule (`0` for a rule that is not recursive; for a recursive rule, version `i`
/// reads the new tuples of its `i`-th atom over a relation of its stratum) joins its
/// body atoms, numbered from 1 in the order written. Checked by the checker.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanVersion {
    pub version: u64,
    /// The atom numbers, each with its place in the text.
    pub order: Vec<(u64, Span)>,
    pub span: Span,
}

/// A rule body: literals combined with `,` and `;`, parenthesised as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Body {
    Literal(Literal),
    /// `b1, b2, ...`
    And(Vec<Body>, Span),
    /// `b1; b2; ...`
    Or(Vec<Body>, Span),
}

impl Body {
    pub fn span(&self) -> Span {
        match self {
            Body::Literal(l) => l.span(),
            Body::And(_, s) | Body::Or(_, s) => *s,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// `r(...)` (also `contains(...)`, `match(...)`)
    Atom(Atom),
    /// `!r(...)`; `span` covers the `!` and the atom.
    Negation { atom: Atom, span: Span },
    /// `lhs op rhs`
    Compare {
        op: CmpOp,
        lhs: Expr,
        rhs: Expr,
        span: Span,
    },
    /// `true` / `false`
    Bool(bool, Span),
}

impl Literal {
    pub fn span(&self) -> Span {
        match self {
            Literal::Atom(a) => a.span,
            Literal::Negation { span, .. } | Literal::Compare { span, .. } => *span,
            Literal::Bool(_, s) => *s,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Atom {
    pub name: Ident,
    pub args: Vec<Expr>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl CmpOp {
    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::Ne => "!=",
            CmpOp::Lt => "<",
            CmpOp::Le => "<=",
            CmpOp::Gt => ">",
            CmpOp::Ge => ">=",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    /// `-e`
    Neg,
    /// `bnot e`
    BNot,
    /// `lnot e`
    LNot,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
    BAnd,
    BOr,
    BXor,
    BShl,
    BShr,
    LAnd,
    LOr,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::Pow => "^",
            BinOp::BAnd => "band",
            BinOp::BOr => "bor",
            BinOp::BXor => "bxor",
            BinOp::BShl => "bshl",
            BinOp::BShr => "bshr",
            BinOp::LAnd => "land",
            BinOp::LOr => "lor",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggKind {
    Count,
    Sum,
    Min,
    Max,
    Mean,
}

impl AggKind {
    pub fn keyword(self) -> &'static str {
        match self {
            AggKind::Count => "count",
            AggKind::Sum => "sum",
            AggKind::Min => "min",
            AggKind::Max => "max",
            AggKind::Mean => "mean",
        }
    }
}

#[derive(Debug, PartialEq)]
pub enum Expr {
    Var(Ident),
    /// `_`
    Wildcard(Span),
    /// An integer literal as written (decimal, `0x..`, `0b..`), not yet range-checked:
    /// its type (number, unsigned or float) comes from the context.
    Int(u64, Span),
    /// An integer literal with the `u` suffix.
    Unsigned(u64, Span),
    /// A literal with a fraction or exponent.
    Float(f64, Span),
    /// A string literal, escapes resolved.
    Str(String, Span),
    Unary {
        op: UnaryOp,
        arg: Box<Expr>,
        span: Span,
    },
    Binary {
        op: BinOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
        span: Span,
    },
    /// `f(args)`: a built-in functor (`cat`, `min`, ...) or, with `user == true`, a
    /// user-defined functor `@f(args)`.
    Call {
        name: Ident,
        args: Vec<Expr>,
        user: bool,
        span: Span,
    },
    /// A record `[a, b]`, `nil` or an ADT branch `$A(a, b)`; `args` are the fields.
    Constructor {
        ctor: Constructor,
        args: Vec<Expr>,
        span: Span,
    },
    /// `count : { body }`, `sum e : { body }`, `min e : r(x)`, ...
    Aggregate {
        kind: AggKind,
        arg: Option<Box<Expr>>,
        body: Box<Body>,
        span: Span,
    },
}

impl Expr {
    pub fn span(&self) -> Span {
        match self {
            Expr::Var(i) => i.span,
            Expr::Wildcard(s)
            | Expr::Int(_, s)
            | Expr::Unsigned(_, s)
            | Expr::Float(_, s)
            | Expr::Str(_, s) => *s,
            Expr::Unary { span, .. }
            | Expr::Binary { span, .. }
            | Expr::Call { span, .. }
            | Expr::Constructor { span, .. }
            | Expr::Aggregate { span, .. } => *span,
        }
    }
}

/// Cloning an expression (components copy their clauses into every instance) builds
/// the copy with an explicit stack, for the same reason as [`Drop`] below: a chain of
/// 100,000 operators is a tree that deep. Aggregates recurse, but the parser bounds
/// their nesting.
impl Clone for Expr {
    fn clone(&self) -> Expr {
        enum Step<'e> {
            Visit(&'e Expr),
            Build(&'e Expr),
        }
        let mut todo = vec![Step::Visit(self)];
        let mut done: Vec<Expr> = Vec::new();
        let hole = || Expr::Wildcard(Span::default());
        while let Some(step) = todo.pop() {
            match step {
                Step::Visit(e) => {
                    todo.push(Step::Build(e));
                    match e {
                        Expr::Unary { arg, .. } => todo.push(Step::Visit(arg)),
                        Expr::Binary { lhs, rhs, .. } => {
                            todo.push(Step::Visit(rhs));
                            todo.push(Step::Visit(lhs));
                        }
                        Expr::Call { args, .. } | Expr::Constructor { args, .. } => {
                            todo.extend(args.iter().rev().map(Step::Visit));
                        }
                        _ => {}
                    }
                }
                Step::Build(e) => {
                    let copy = match e {
                        Expr::Var(i) => Expr::Var(i.clone()),
                        Expr::Wildcard(s) => Expr::Wildcard(*s),
                        Expr::Int(v, s) => Expr::Int(*v, *s),
                        Expr::Unsigned(v, s) => Expr::Unsigned(*v, *s),
                        Expr::Float(v, s) => Expr::Float(*v, *s),
                        Expr::Str(v, s) => Expr::Str(v.clone(), *s),
                        Expr::Unary { op, span, .. } => Expr::Unary {
                            op: *op,
                            arg: Box::new(done.pop().unwrap_or_else(hole)),
                            span: *span,
                        },
                        Expr::Binary { op, span, .. } => {
                            let rhs = done.pop().unwrap_or_else(hole);
                            let lhs = done.pop().unwrap_or_else(hole);
                            Expr::Binary {
                                op: *op,
                                lhs: Box::new(lhs),
                                rhs: Box::new(rhs),
                                span: *span,
                            }
                        }
                        Expr::Call {
                            name,
                            args,
                            user,
                            span,
                        } => Expr::Call {
                            name: name.clone(),
                            args: done.split_off(done.len().saturating_sub(args.len())),
                            user: *user,
                            span: *span,
                        },
                        Expr::Constructor { ctor, args, span } => Expr::Constructor {
                            ctor: ctor.clone(),
                            args: done.split_off(done.len().saturating_sub(args.len())),
                            span: *span,
                        },
                        Expr::Aggregate {
                            kind,
                            arg,
                            body,
                            span,
                        } => Expr::Aggregate {
                            kind: *kind,
                            arg: arg.clone(),
                            body: body.clone(),
                            span: *span,
                        },
                    };
                    done.push(copy);
                }
            }
        }
        done.pop().unwrap_or_else(hole)
    }
}

/// Dropping an expression takes its subexpressions apart with an explicit stack, so that
/// a long chain (`x + x + ... + x` with 100,000 terms, a left-deep tree that deep) does
/// not overflow the stack through recursive drops.
impl Drop for Expr {
    fn drop(&mut self) {
        fn take_children(e: &mut Expr, out: &mut Vec<Expr>) {
            let hole = || Expr::Wildcard(Span::default());
            match e {
                Expr::Unary { arg, .. } => out.push(std::mem::replace(&mut **arg, hole())),
                Expr::Binary { lhs, rhs, .. } => {
                    out.push(std::mem::replace(&mut **lhs, hole()));
                    out.push(std::mem::replace(&mut **rhs, hole()));
                }
                Expr::Call { args, .. } | Expr::Constructor { args, .. } => out.append(args),
                _ => {}
            }
        }
        let mut stack = Vec::new();
        take_children(self, &mut stack);
        while let Some(mut e) = stack.pop() {
            take_children(&mut e, &mut stack);
        }
    }
}

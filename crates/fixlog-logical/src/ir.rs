//! The checked program: the contract between the front end and the planner.
//!
//! Produced by [`crate::check`](mod@crate::check) from the AST. By the time a program is in this form:
//! - every relation is resolved to a [`RelId`] and every attribute has a base [`ColType`];
//! - every rule has exactly one head (multi-head rules and `;` disjunctions are expanded
//!   into several rules) and a flat body of [`Literal`]s;
//! - every variable is a [`VarId`] local to its rule with a known type; `_` is
//!   [`Term::Wildcard`];
//! - body atoms take only variables, constants and wildcards as arguments (an expression
//!   argument `r(x+1)` is rewritten to `r(v), v = x+1` with a fresh variable);
//! - every rule is range-restricted (each head variable, each variable of a negated atom
//!   and each variable of a comparison is bound by a positive atom, by an aggregate, or by
//!   an equality `v = expr` whose other side is bound);
//! - constants are already encoded as `u32` ([`Value`]): symbols interned in
//!   [`Program::symbols`], numbers as two's complement, floats as IEEE bits;
//! - the strata are computed and topologically ordered.
//!
//! The reference evaluator in the tests and the planner both read this form, so it says
//! exactly what a program means and nothing about how to run it.

use crate::symbols::SymbolTable;
use fixlog_syntax::Span;
use std::collections::BTreeMap;

/// Every value is 32 bits, as in Soufflé's default build.
pub type Value = u32;
/// Index into [`Program::relations`].
pub type RelId = usize;
/// Index into [`Rule::vars`].
pub type VarId = usize;

/// Base type of an attribute. Subtypes and aliases declared with `.type` resolve to one
/// of these. All four are stored as 32-bit values; the type decides how comparisons,
/// arithmetic, parsing and printing interpret the bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ColType {
    /// `number`: signed 32-bit integer (stored as its two's complement bits).
    Number,
    /// `unsigned`: unsigned 32-bit integer.
    Unsigned,
    /// `float`: IEEE 754 single precision (stored as its bits).
    Float,
    /// `symbol`: a string, stored as its id in [`SymbolTable`].
    Symbol,
    /// A record or algebraic data type (index into the declared types,
    /// [`crate::records::RecordTable::types`]): the id of an interned tuple, `nil` = 0.
    /// Only `=` and `!=` apply; they compare ids.
    Record(u32),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub name: String,
    pub ty: ColType,
    /// The declared type name (e.g. a `.type` alias), for messages.
    pub type_name: String,
}

/// An `.input`/`.output` directive's parameters, e.g. `IO=file, filename="x.tsv",
/// delimiter=","`. Keys are stored as written (Soufflé's keys are case-sensitive:
/// `IO`, `filename`, `delimiter`, `compress`, `headers`, ...).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct IoDirective {
    pub params: BTreeMap<String, String>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Relation {
    pub name: String,
    pub columns: Vec<Column>,
    /// The `.decl`.
    pub span: Span,
    /// `.input` directives (usually zero or one).
    pub inputs: Vec<IoDirective>,
    /// `.output` directives.
    pub outputs: Vec<IoDirective>,
    /// `.printsize` was given.
    pub printsize: bool,
    /// Declared `eqrel`: a binary relation (both columns of one type) that the storage
    /// keeps an equivalence relation — reflexive on the values that occur, symmetric,
    /// transitive — whatever the rules and facts put in it.
    pub eqrel: bool,
    /// `choice-domain`: for each domain, its columns. A tuple is added only when no
    /// tuple of the relation has its values in the columns of any domain; among the new
    /// tuples of one step, the smallest first (see `fixlog_exec::maintain`).
    pub choice_domains: Vec<Vec<usize>>,
    /// `.limitsize r(n=N)` (Soufflé's aid for debugging programs that do not end).
    pub limitsize: Option<LimitSize>,
    /// Lattice attributes (`x: T<>`, Soufflé 2.5's `.lattice`), if any.
    pub lattice: Option<LatticeColumns>,
}

impl Relation {
    /// A relation with no directives and no special kind (`eqrel`, choice, limit,
    /// lattice): what a `.decl` starts as, and what the checker and the rewrites add
    /// for their own purposes.
    pub fn plain(name: String, columns: Vec<Column>, span: Span) -> Relation {
        Relation {
            name,
            columns,
            span,
            inputs: Vec::new(),
            outputs: Vec::new(),
            printsize: false,
            eqrel: false,
            choice_domains: Vec::new(),
            limitsize: None,
            lattice: None,
        }
    }
}

/// The lattice attributes of a relation (`.decl r(k: K, v: T<>)` with `.lattice T<>`):
/// the last `lubs.len()` columns; the columns before them are the key. The relation
/// holds at most one tuple per key: a tuple derived for a key it holds is combined
/// with the held one, column by column, by the lattice's least upper bound (`Lub`),
/// and replaces it when that changes it (see `fixlog_exec::maintain`). What bodies
/// mean by a lattice argument (`Glb`, `Bottom`) the checker writes into the rules.
#[derive(Clone, Debug, PartialEq)]
pub struct LatticeColumns {
    /// The number of key columns (the first ones).
    pub key_len: usize,
    /// Per lattice column, its `Lub`: an expression over [`Expr::Var`]`(0)` (the new
    /// value) and `Var(1)` (the held one), of the column's type; it may fail (no
    /// value), which leaves the held value.
    pub lubs: Vec<Expr>,
}

/// `.limitsize r(n=N)`: in a recursive stratum, once `r` holds at least `n` tuples the
/// stratum's loop ends, before an iteration adds the tuples it derived (Soufflé's
/// exit condition, checked after the iteration's rules ran: its new tuples are
/// dropped). It stops every relation of the stratum; in a stratum that is not
/// recursive it changes nothing (as in Soufflé). See `fixlog_exec::driver`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitSize {
    /// The limit (a negative `N` is 0: any size reaches it).
    pub n: u64,
    /// The directive.
    pub span: Span,
}

impl Relation {
    pub fn arity(&self) -> usize {
        self.columns.len()
    }
    pub fn types(&self) -> Vec<ColType> {
        self.columns.iter().map(|c| c.ty).collect()
    }
}

/// A fact written in the program: `edge(1, 2).`
#[derive(Clone, Debug, PartialEq)]
pub struct Fact {
    pub rel: RelId,
    pub values: Vec<Value>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq)]
pub struct VarInfo {
    /// The source name; fresh variables introduced by the checker start with `$`.
    pub name: String,
    pub ty: ColType,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub head: Head,
    pub body: Vec<Literal>,
    pub vars: Vec<VarInfo>,
    /// The whole clause in the source (shared by the rules a clause expands into).
    pub span: Span,
    /// The clause's `.plan`, checked: per version, the order of the body's positive
    /// atoms. Empty if none (or dropped by a rewrite that changed the body: inlining,
    /// the magic-set transform's copies).
    pub plan: Vec<PlanVersion>,
}

/// One version of a `.plan` (see `fixlog_syntax::ast::PlanVersion`), checked: `order`
/// is a permutation of the body's positive atoms (indices among them, from 0, in body
/// order), and the version exists (0 for a rule that is not recursive; `i` for the
/// variant that reads the new tuples of its `i`-th atom over its own stratum).
#[derive(Clone, Debug, PartialEq)]
pub struct PlanVersion {
    pub version: usize,
    pub order: Vec<usize>,
    /// The entry in the source, for `explain`.
    pub span: Span,
}

/// The head `r(e1, ..., en)`: expressions over body variables.
#[derive(Clone, Debug, PartialEq)]
pub struct Head {
    pub rel: RelId,
    pub args: Vec<Expr>,
    pub span: Span,
}

/// A body atom `r(t1, ..., tn)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Atom {
    pub rel: RelId,
    pub args: Vec<Term>,
    pub span: Span,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Term {
    Var(VarId),
    Const(Value),
    /// `_`
    Wildcard,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// A positive atom: binds its variables.
    Atom(Atom),
    /// `!r(...)`: every variable in it is bound elsewhere (wildcards allowed).
    Negation(Atom),
    /// `lhs op rhs`, compared as `ty`. `v = expr` with `v` otherwise unbound binds `v`.
    Compare {
        op: CmpOp,
        lhs: Expr,
        rhs: Expr,
        ty: ColType,
        span: Span,
    },
    /// `contains(a, b)` / `match(pattern, text)` (both over symbols), possibly negated
    /// (`!contains(...)`).
    Predicate {
        pred: Predicate,
        args: Vec<Expr>,
        negated: bool,
        span: Span,
    },
    /// `out = range(from, to[, step])` (`args` has 2 or 3 expressions over bound
    /// variables, of type `ty`): binds `out` to every value of the range in turn (see
    /// [`crate::value::range_values`]).
    Range {
        out: VarId,
        ty: ColType,
        args: Vec<Expr>,
        span: Span,
    },
    /// `out = func arg : { body }`. Binds `out`.
    ///
    /// Variables of `body` that also occur outside the aggregate (in the rest of the
    /// rule) are *correlated*: the aggregate is computed once per binding of them made by
    /// the rest of the body. All other variables of `body` are local to it.
    /// `count` and `sum` over an empty group give 0; `min`, `max` and `mean` over an
    /// empty group give no value (the rule does not fire for that binding).
    Aggregate {
        out: VarId,
        func: AggFunc,
        /// The aggregated expression (`None` for `count`).
        arg: Option<Expr>,
        body: Vec<Literal>,
        span: Span,
    },
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
    /// Every comparison, for code that must cover them all (the backends' conformance
    /// checks, the code generator's coverage, random programs).
    pub const ALL: [CmpOp; 6] = [
        CmpOp::Eq,
        CmpOp::Ne,
        CmpOp::Lt,
        CmpOp::Le,
        CmpOp::Gt,
        CmpOp::Ge,
    ];
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Predicate {
    /// `contains(needle, haystack)`: `needle` is a substring of `haystack`.
    Contains,
    /// `match(regex, text)`: the whole of `text` matches the regular expression.
    Match,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AggFunc {
    Count,
    Sum,
    Min,
    Max,
    /// Result is a `float`.
    Mean,
}

/// An expression. Types are resolved: every operator knows the type it works in.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Var(VarId),
    Const(Value),
    /// `-e` (`ty` is Number or Float) and `bnot e`, `lnot e`.
    Unary {
        op: UnaryOp,
        ty: ColType,
        arg: Box<Expr>,
    },
    /// Arithmetic and bitwise operators and `min`/`max`, computed in `ty`.
    Binary {
        op: BinOp,
        ty: ColType,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// String and conversion functors.
    Functor {
        func: Functor,
        args: Vec<Expr>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnaryOp {
    Neg,
    BNot,
    LNot,
}

impl UnaryOp {
    /// Every unary operator (see [`CmpOp::ALL`]).
    pub const ALL: [UnaryOp; 3] = [UnaryOp::Neg, UnaryOp::BNot, UnaryOp::LNot];
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    /// `^` (exponentiation in Soufflé)
    Pow,
    BAnd,
    BOr,
    BXor,
    BShl,
    /// `bshr`: arithmetic shift for `number`, logical for `unsigned`.
    BShr,
    LAnd,
    LOr,
    Min,
    Max,
}

impl BinOp {
    /// Every binary operator (see [`CmpOp::ALL`]).
    pub const ALL: [BinOp; 15] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Pow,
        BinOp::BAnd,
        BinOp::BOr,
        BinOp::BXor,
        BinOp::BShl,
        BinOp::BShr,
        BinOp::LAnd,
        BinOp::LOr,
        BinOp::Min,
        BinOp::Max,
    ];
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Functor {
    /// `cat(s1, s2, ...)` -> symbol
    Cat,
    /// `strlen(s)` -> number
    Strlen,
    /// `substr(s, start, len)` -> symbol
    Substr,
    /// `ord(s)` -> number: the symbol's id (as Soufflé)
    Ord,
    /// `to_number(s)` -> number
    ToNumber,
    /// `to_string(n)` -> symbol
    ToString,
    /// `to_unsigned(x)`, `to_float(x)`, `itou`, `utoi`, ... conversions between numeric
    /// types: the target type is the functor's.
    ToUnsigned,
    ToFloat,
    /// float -> number, truncating and saturating (NaN gives 0). Not produced by the
    /// checker any more (it writes `Convert(Float, Number)`, Soufflé's semantics); kept
    /// for the CUDA code generator, which implements it on the device.
    ToInteger,
    /// `Convert(from, to)`: a conversion as Soufflé's `to_number`, `to_unsigned`,
    /// `to_float`, `to_string` (and `ftoi`, `ftou`, `utof`, ...) overloads compute it
    /// (see [`crate::value::convert_souffle`]): float to integer as x86-64 truncates
    /// (`cvttss2si`), unsigned to float rounded, numbers to their decimal text, text
    /// parsed. The checker writes the conversions the functors above do not express.
    Convert(ColType, ColType),
    /// A record or ADT constructor giving a value of the type (a `ColType::Record`): the
    /// id of the tuple of the arguments in the run's [`crate::records::RecordTable`]
    /// (interned if new).
    Pack(ColType),
    /// `Field(i, ty)`: field `i`, of type `ty`, of the stored tuple of a record (of an
    /// ADT value: 0 is the branch, the fields follow); fails on `nil`, so a pattern
    /// never matches it.
    Field(u32, ColType),
    /// `@f(...)`: the user-defined functor [`Program::functors`]`[index]`, giving a
    /// value of type `result`; its implementation (a function of a shared library) is
    /// bound by [`SymbolTable::set_functors`] and runs on the host.
    User {
        index: u32,
        result: ColType,
    },
}

/// A user-defined functor as declared: `.functor name(params): result [stateful]`.
#[derive(Clone, Debug, PartialEq)]
pub struct FunctorDecl {
    pub name: String,
    pub params: Vec<ColType>,
    pub result: ColType,
    /// Soufflé's `stateful`: called with the symbol and record tables and every value
    /// as its 32-bit id (see `crates/fixlog/include/fixlog_functors.h`).
    pub stateful: bool,
    pub span: fixlog_syntax::Span,
}

impl Functor {
    /// Whether the functor gives the same result for the same arguments and has no
    /// effect, so that a rewrite (the magic-set transform, inlining) may evaluate it
    /// in another rule or another number of times. Every functor here is; a counter
    /// (`autoinc()`) or a user-defined functor must answer `false`.
    pub fn is_pure(&self) -> bool {
        match self {
            Functor::Cat
            | Functor::Strlen
            | Functor::Substr
            | Functor::Ord
            | Functor::ToNumber
            | Functor::ToString
            | Functor::ToUnsigned
            | Functor::ToFloat
            | Functor::ToInteger
            | Functor::Convert(..)
            | Functor::Pack(_)
            | Functor::Field(..) => true,
            // A user-defined functor may keep state or have effects (Soufflé's
            // `stateful`), and even a plain one is code Fixlog cannot see: not pure.
            Functor::User { .. } => false,
        }
    }
}

/// A stratum: a strongly connected component of the predicate dependency graph (or a
/// single relation). Strata are ordered so that every relation a stratum reads is
/// computed by it or by an earlier stratum.
#[derive(Clone, Debug, PartialEq)]
pub struct Stratum {
    pub relations: Vec<RelId>,
    /// Indices into [`Program::rules`] of the rules whose head is in this stratum.
    pub rules: Vec<usize>,
    /// Some rule reads a relation of this stratum (a cycle, possibly a self-loop).
    pub recursive: bool,
}

/// `autoinc()` in the head of a rule `h(.., autoinc(), ..) :- body`. The checker
/// writes the rule as two: `source(v1, ..., vm) :- body` (every variable of the body,
/// `_` in its positive atoms named, so each binding is a tuple) and `h(..) :-
/// target(n, v1, ..., vm)` (with `n`, `n + 1`, ... for the head's `autoinc()`s). The
/// driver (and nothing else) fills `target`, a relation of no rules and a stratum of
/// its own after `source`'s, numbering `source`'s tuples in output order with a counter
/// shared by the whole run: `target(c, t)` for the `i`-th tuple `t`, `c = start + i *
/// per_tuple`, where `start` is what the counter reached after the autoinc relations
/// of earlier strata. Never in a recursive rule (Soufflé's rule too).
#[derive(Clone, Debug, PartialEq)]
pub struct AutoInc {
    pub source: RelId,
    pub target: RelId,
    /// How many `autoinc()`s the head has.
    pub per_tuple: u32,
    /// The first `autoinc()`.
    pub span: Span,
}

/// `.decl target = debug_delta(source)` (Soufflé 2.4.1+): `target` has the columns of
/// `source` and a last `unsigned` column, the iteration. When the loop of `source`'s
/// stratum adds the new tuples of a pass (after they are folded and the dominated ones
/// removed: the delta the next pass reads), `target` gains each of them with the
/// pass's number, as `recursive_iteration_cnt()` counts it (from 0). The tuples that
/// exist before the loop (facts, inputs, the rules that run once) are in no pass and
/// are not recorded; a `source` whose stratum is not recursive leaves `target` empty.
/// `target` has no rules or facts; the stratifier gives it the dependency `target →
/// source`, so it is complete when a later stratum reads it, and reading it within
/// `source`'s stratum is rejected. The driver (and the reference evaluator) fills it.
#[derive(Clone, Debug, PartialEq)]
pub struct DebugDelta {
    pub source: RelId,
    pub target: RelId,
    /// The name of `source` in the declaration.
    pub span: Span,
}

#[derive(Clone, Debug)]
pub struct Program {
    pub relations: Vec<Relation>,
    pub facts: Vec<Fact>,
    pub rules: Vec<Rule>,
    pub strata: Vec<Stratum>,
    /// The symbols of the program text, interned. Loading facts adds more.
    pub symbols: SymbolTable,
    /// The subsumptive clauses `a(x) <= a(y) :- body.`, each as the rules of the tuples
    /// it removes: head `a(x)` (the dominated tuple), body `a(x), a(y), body` and one
    /// column where `x` and `y` differ (a clause is one rule per column), so that no
    /// tuple dominates itself. Their relation's stratum removes what they derive after
    /// every step (see `fixlog_exec::driver`). Not in [`Stratum::rules`].
    pub subsumptions: Vec<Rule>,
    /// Soufflé's warnings about the program (a variable that occurs only once in a
    /// rule, a relation without rules or facts that is not an input), located, in
    /// source order. They do not stop a run; the CLI prints them unless `-w`.
    pub warnings: Vec<fixlog_syntax::Diagnostic>,
    /// The `autoinc()` relations, in the order their numbers are drawn (the order of
    /// their target's strata).
    pub autoincs: Vec<AutoInc>,
    /// `recursive_iteration_cnt()` (Soufflé 2.4's counter of fixpoint iterations, an
    /// `unsigned`), if some rule uses it: the relation `$iteration(n)`, of no rules,
    /// that holds exactly one tuple, the counter. A rule using the counter reads it as
    /// an atom `$iteration(v)` with `v` in place of the call, so every backend evaluates
    /// it as a join with a one-tuple relation. The driver (`fixlog_exec::driver`; the
    /// reference evaluator the same way) sets it as Soufflé's loop counter runs: 0 for
    /// the rules that run once (every rule of a stratum that is not recursive, and the
    /// rules of a recursive stratum that read none of its relations), and `k` during the
    /// `k`-th pass of a recursive stratum's loop, counting from 0.
    pub iteration: Option<RelId>,
    /// The user-defined functors (`.functor`), indexed by [`Functor::User`]'s index.
    pub functors: Vec<FunctorDecl>,
    /// The `debug_delta` relations, in declaration order.
    pub debug_deltas: Vec<DebugDelta>,
}

impl Program {
    pub fn relation_id(&self, name: &str) -> Option<RelId> {
        self.relations.iter().position(|r| r.name == name)
    }

    /// For each relation, whether some `.output` or `.printsize` relation depends on it
    /// (is it, or reads it through rules, positively, negated or in an aggregate).
    /// Soufflé removes the other relations before running (its redundant-relations
    /// pass), so it never opens their `.input` files.
    pub fn needed_for_outputs(&self) -> Vec<bool> {
        let n = self.relations.len();
        // Relations each relation's rules read.
        let mut reads: Vec<Vec<RelId>> = vec![Vec::new(); n];
        fn body_reads(body: &[Literal], out: &mut Vec<RelId>) {
            for l in body {
                match l {
                    Literal::Atom(a) | Literal::Negation(a) => out.push(a.rel),
                    Literal::Aggregate { body, .. } => body_reads(body, out),
                    Literal::Compare { .. } | Literal::Predicate { .. } | Literal::Range { .. } => {
                    }
                }
            }
        }
        for rule in self.rules.iter().chain(&self.subsumptions) {
            if let Some(r) = reads.get_mut(rule.head.rel) {
                body_reads(&rule.body, r);
            }
        }
        for a in &self.autoincs {
            if let Some(r) = reads.get_mut(a.target) {
                r.push(a.source);
            }
        }
        for d in &self.debug_deltas {
            if let Some(r) = reads.get_mut(d.target) {
                r.push(d.source);
            }
        }
        let mut needed = vec![false; n];
        let mut work: Vec<RelId> = (0..n)
            .filter(|&r| !self.relations[r].outputs.is_empty() || self.relations[r].printsize)
            .collect();
        while let Some(r) = work.pop() {
            if std::mem::replace(&mut needed[r], true) {
                continue;
            }
            work.extend(reads[r].iter().copied().filter(|&x| !needed[x]));
        }
        needed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // Each match names every variant and no wildcard, so a new operator stops the build
    // here, and the test below then wants it in `ALL` at the position given.
    fn cmp_position(op: CmpOp) -> usize {
        match op {
            CmpOp::Eq => 0,
            CmpOp::Ne => 1,
            CmpOp::Lt => 2,
            CmpOp::Le => 3,
            CmpOp::Gt => 4,
            CmpOp::Ge => 5,
        }
    }

    fn unary_position(op: UnaryOp) -> usize {
        match op {
            UnaryOp::Neg => 0,
            UnaryOp::BNot => 1,
            UnaryOp::LNot => 2,
        }
    }

    fn binary_position(op: BinOp) -> usize {
        match op {
            BinOp::Add => 0,
            BinOp::Sub => 1,
            BinOp::Mul => 2,
            BinOp::Div => 3,
            BinOp::Rem => 4,
            BinOp::Pow => 5,
            BinOp::BAnd => 6,
            BinOp::BOr => 7,
            BinOp::BXor => 8,
            BinOp::BShl => 9,
            BinOp::BShr => 10,
            BinOp::LAnd => 11,
            BinOp::LOr => 12,
            BinOp::Min => 13,
            BinOp::Max => 14,
        }
    }

    #[test]
    fn all_lists_every_operator_once() {
        let cmp: Vec<usize> = CmpOp::ALL.iter().map(|&o| cmp_position(o)).collect();
        assert_eq!(cmp, (0..6).collect::<Vec<_>>());
        let unary: Vec<usize> = UnaryOp::ALL.iter().map(|&o| unary_position(o)).collect();
        assert_eq!(unary, (0..3).collect::<Vec<_>>());
        let binary: Vec<usize> = BinOp::ALL.iter().map(|&o| binary_position(o)).collect();
        assert_eq!(binary, (0..15).collect::<Vec<_>>());
    }
}

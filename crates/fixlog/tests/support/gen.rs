//! Random stratified programs, as Soufflé text, for differential tests.
//!
//! A program is built from a sequence of random choices (a `Vec<u32>` that proptest
//! generates and shrinks). Every choice reads one number; running out of numbers reads
//! 0, and 0 always means "the simplest option" (fewest relations, rules and facts, no
//! optional feature), so shrinking the sequence shrinks the program.
//!
//! Shape: EDB relations (layer 0) with facts, then IDB relations in layers 1..=3. A rule
//! for a layer-L relation reads positive atoms of layers <= L (same layer = recursion,
//! linear, non-linear or mutual), and negations and aggregates of layers < L only, so the
//! program is stratified by construction. Rules are range-restricted by construction:
//! head, negation and comparison variables are bound by positive atoms (or by `v = expr`
//! and aggregates, which only bind variables). Arithmetic never sits on a recursive cycle
//! unless bounded (`z = x + 1, z < 6`), so every program terminates.

#![allow(dead_code)]

use fixlog::Datum;

/// Symbols used in symbol columns (one with a space, to exercise TSV-free paths).
const SYMS: [&str; 4] = ["a", "b", "c d", "ab"];
/// Numbers are drawn from 0..DOMAIN so that joins hit.
const DOMAIN: usize = 6;

/// Reads random choices; 0 (also when exhausted) is always the simplest choice.
pub struct Chooser {
    data: Vec<u32>,
    pos: usize,
}

impl Chooser {
    pub fn new(data: Vec<u32>) -> Chooser {
        Chooser { data, pos: 0 }
    }
    fn next(&mut self) -> u32 {
        let v = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        v
    }
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() as usize) % n.max(1)
    }
    /// True with probability `pct`%; false on 0.
    pub fn chance(&mut self, pct: u32) -> bool {
        self.next() % 100 >= 100 - pct
    }
    /// A choice made after the others, which the sequence has often run out of by
    /// then: past its end, the sequence is read again from the start (all zeros, or
    /// none, still read 0), so that late features keep appearing without shifting the
    /// choices before them (and the programs of persisted failures).
    fn late(&mut self) -> u32 {
        let v = match self.data.len() {
            0 => 0,
            n => self.data[self.pos % n],
        };
        self.pos += 1;
        v
    }
    /// [`Chooser::chance`] with [`Chooser::late`].
    pub fn late_chance(&mut self, pct: u32) -> bool {
        self.late() % 100 >= 100 - pct
    }
    /// [`Chooser::below`] with [`Chooser::late`].
    pub fn late_below(&mut self, n: usize) -> usize {
        (self.late() as usize) % n.max(1)
    }
    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ty {
    Num,
    Sym,
    /// A record column (only in the relations of `Gen::records`, which get no random
    /// facts).
    Record,
}

#[derive(Clone, Debug)]
pub struct Rel {
    pub name: String,
    pub types: Vec<Ty>,
    /// 0 = EDB.
    pub layer: usize,
    /// Declared `eqrel` or with a `choice-domain`.
    pub kept_in_shape: bool,
}

/// Which language features a generated program uses (to check that the random programs
/// actually exercise them).
#[derive(Clone, Debug, Default)]
pub struct Features {
    pub recursion: bool,
    pub negation: bool,
    pub aggregate: bool,
    pub arithmetic: bool,
    pub disjunction: bool,
    pub multi_head: bool,
    pub symbols: bool,
    /// An aggregate whose result variable's name is also a local variable of its body.
    pub agg_own_result: bool,
    /// An aggregate correlated on a variable bound by an equality or by another
    /// aggregate (not by an atom).
    pub agg_on_computed: bool,
    /// An `eqrel` relation.
    pub eqrel: bool,
    /// A `choice-domain` relation.
    pub choice: bool,
    /// A subsumptive clause.
    pub subsumption: bool,
    /// Records: packed in heads and equalities, unpacked in atoms (nested too), in
    /// recursion, negation and `=`/`!=`.
    pub records: bool,
    /// `z = range(..)` (a generator).
    pub range: bool,
    /// `as(x, T)` casts.
    pub cast: bool,
    /// A local of a `min`/`max` aggregate usable outside it (a witness).
    pub witness: bool,
    /// `autoinc()` in a head.
    pub autoinc: bool,
    /// `.limitsize` on a relation of the IDB layers.
    pub limitsize: bool,
    /// A `debug_delta` relation of an IDB relation, read by a rule.
    pub debug_delta: bool,
}

#[derive(Clone)]
pub struct Generated {
    pub text: String,
    pub relations: Vec<Rel>,
    /// Facts to add through `Fixlog::insert` instead of the program text.
    pub inserts: Vec<(String, Vec<Vec<Datum>>)>,
    pub features: Features,
}

/// Prints the program as text (proptest shows the minimal failing input this way).
impl std::fmt::Debug for Generated {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "\n--- program ---\n{}--- inserted ---", self.text)?;
        for (rel, rows) in &self.inserts {
            writeln!(f, "{rel}: {rows:?}")?;
        }
        Ok(())
    }
}

pub fn generate(choices: Vec<u32>) -> Generated {
    let g = Gen {
        c: Chooser::new(choices),
        rels: Vec::new(),
        text: String::new(),
        features: Features::default(),
        recursive_heads: Vec::new(),
    };
    g.program()
}

struct Gen {
    c: Chooser,
    rels: Vec<Rel>,
    text: String,
    features: Features,
    /// The heads of rules that read a relation of their own layer (candidates for a
    /// `debug_delta` that records something).
    recursive_heads: Vec<Rel>,
}

/// The variables of one rule under construction.
#[derive(Default)]
struct RuleVars {
    /// Number of fresh names handed out per prefix.
    counter: usize,
    /// Variables bound by positive atoms of the current conjunction (name, type).
    atom_bound: Vec<(String, Ty)>,
    /// Bound by `v = expr` or aggregates.
    other_bound: Vec<(String, Ty)>,
    /// Names that also stand inside an aggregate's body, bound only through that
    /// aggregate: `min`/`max` witnesses, and a result variable used as a local of its
    /// own aggregate (`n = sum a : { r(n, a) }`). No equality may name one: `n = m`
    /// could bind it outside, which would make it an outer variable of its own
    /// aggregate (a circular dependency the checker rejects).
    inside_aggregates: Vec<String>,
}

impl RuleVars {
    fn fresh(&mut self, prefix: &str) -> String {
        self.counter += 1;
        format!("{prefix}{}", self.counter)
    }
    fn all_bound(&self, ty: Ty) -> Vec<String> {
        let mut v: Vec<String> = self
            .atom_bound
            .iter()
            .chain(&self.other_bound)
            .filter(|(_, t)| *t == ty)
            .map(|(n, _)| n.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }
    fn atom_vars(&self, ty: Ty) -> Vec<String> {
        let mut v: Vec<String> = self
            .atom_bound
            .iter()
            .filter(|(_, t)| *t == ty)
            .map(|(n, _)| n.clone())
            .collect();
        v.sort();
        v.dedup();
        v
    }
}

impl Gen {
    fn program(mut self) -> Generated {
        let mut inserts = Vec::new();
        // EDB relations and their facts.
        let n_edb = 1 + self.c.below(3);
        for i in 0..n_edb {
            let rel = self.new_rel(format!("e{i}"), 0);
            let n_facts = 2 + self.c.below(10);
            let by_api = self.c.chance(40);
            let mut rows = Vec::new();
            for _ in 0..n_facts {
                rows.push(self.random_row(&rel.types));
            }
            if by_api {
                let data = rows
                    .iter()
                    .map(|row| {
                        row.iter()
                            .map(|v| match v {
                                Val::Num(n) => Datum::Number(*n),
                                Val::Sym(s) => Datum::Symbol(s.to_string()),
                            })
                            .collect()
                    })
                    .collect();
                inserts.push((rel.name.clone(), data));
            } else {
                for row in &rows {
                    self.fact(&rel.name, row);
                }
            }
        }
        // IDB layers.
        let n_layers = 1 + self.c.below(3);
        for layer in 1..=n_layers {
            let n_rels = 1 + self.c.below(2);
            let first = self.rels.len();
            for i in 0..n_rels {
                self.new_rel(format!("r{layer}_{i}"), layer);
            }
            let layer_rels: Vec<Rel> = self.rels[first..].to_vec();
            for rel in &layer_rels {
                let n_rules = 1 + self.c.below(3);
                for k in 0..n_rules {
                    // The first rule of a relation reads only lower layers, so that the
                    // relation usually gets some tuples.
                    self.rule(std::slice::from_ref(rel), layer, k > 0);
                }
                if self.c.chance(8) {
                    let row = self.random_row(&rel.types);
                    self.fact(&rel.name, &row);
                }
                if self.c.chance(25) {
                    self.subsumption(rel);
                }
            }
            if layer_rels.len() == 2 && self.c.chance(50) {
                self.features.multi_head = true;
                let allow_rec = self.c.chance(50);
                self.rule(&layer_rels, layer, allow_rec);
            }
        }
        if self.c.chance(50) {
            self.records(n_layers + 1);
        }
        // `.limitsize` on the relations of the layers (in a recursive stratum it stops
        // the loop; elsewhere it changes nothing), with a limit the facts can reach.
        if self.c.chance(50) {
            let layered: Vec<String> = self
                .rels
                .iter()
                .filter(|r| r.layer > 0)
                .map(|r| r.name.clone())
                .collect();
            if !layered.is_empty() {
                let n = self.c.below(8);
                self.features.limitsize = true;
                self.text
                    .push_str(&format!(".limitsize {}(n={n})\n", layered.join(", ")));
            }
        }
        // A `debug_delta` relation of an IDB relation (each iteration's new tuples; empty
        // when the relation is not recursive), and a relation reading its iterations.
        // Declared last, so the relations above keep their ids.
        if self.c.late_chance(25) {
            // Mostly a relation of a recursive rule (whose loop may add something).
            let idb: Vec<Rel> = if !self.recursive_heads.is_empty() && self.c.late_chance(80) {
                self.recursive_heads.clone()
            } else {
                self.rels.iter().filter(|r| r.layer > 0).cloned().collect()
            };
            if !idb.is_empty() {
                let src = idb[self.c.late_below(idb.len())].clone();
                self.features.debug_delta = true;
                // Often a bounded chain through a numeric column too (`z = x + 1, z < 6`),
                // so that the loop adds tuples pass after pass.
                let num = src.types.iter().position(|&t| t == Ty::Num);
                if let Some(col) = num.filter(|_| self.c.late_chance(70)) {
                    let vars: Vec<String> = (0..src.types.len()).map(|i| format!("v{i}")).collect();
                    let mut head = vars.clone();
                    head[col] = "z".to_string();
                    self.text.push_str(&format!(
                        "{}({}) :- {}({}), z = v{col} + 1, z < 6.\n",
                        src.name,
                        head.join(", "),
                        src.name,
                        vars.join(", ")
                    ));
                }
                let wild = vec!["_"; src.types.len()].join(", ");
                let sep = if src.types.is_empty() { "" } else { ", " };
                self.text.push_str(&format!(
                    ".decl dbg = debug_delta({})\n.decl dbg_iters(i: unsigned)\n\
                     dbg_iters(i) :- dbg({wild}{sep}i).\n",
                    src.name
                ));
            }
        }
        Generated {
            text: self.text,
            relations: self.rels,
            inserts,
            features: self.features,
        }
    }

    /// Relations over records, read from a relation with two numeric columns (if any):
    /// packing in heads and in `p = [a, _]`, unpacking in atoms (nested), recursion
    /// through records (bounded: `a < 5`), negation of a record atom, `=`/`!=`, `nil`.
    fn records(&mut self, layer: usize) {
        let sources: Vec<Rel> = self
            .rels
            .iter()
            .filter(|r| r.types.contains(&Ty::Num))
            .cloned()
            .collect();
        if sources.is_empty() {
            return;
        }
        let src = sources[self.c.below(sources.len())].clone();
        self.features.records = true;
        // The source atom binds `x` (its first numeric column) and `y` (its second, or
        // `x` again when it has one).
        let mut names = ["x", "y"].into_iter();
        let args: Vec<&str> = src
            .types
            .iter()
            .map(|t| match t {
                Ty::Num => names.next().unwrap_or("_"),
                _ => "_",
            })
            .collect();
        let y = if args.contains(&"y") { "y" } else { "x" };
        let atom = format!("{}({})", src.name, args.join(", "));
        let decls: [(&str, Vec<Ty>); 9] = [
            ("rp", vec![Ty::Record]),
            ("ru", vec![Ty::Num, Ty::Num]),
            ("rq", vec![Ty::Record]),
            ("rf", vec![Ty::Num, Ty::Num, Ty::Num]),
            ("rc", vec![Ty::Record]),
            ("rn", vec![Ty::Num, Ty::Num]),
            ("re", vec![Ty::Record, Ty::Record]),
            ("rnil", vec![Ty::Record]),
            ("rw", vec![Ty::Num]),
        ];
        for (name, types) in decls {
            self.rels.push(Rel {
                name: name.to_string(),
                types,
                layer,
                // Record relations get no subsumptive clauses or qualifiers.
                kept_in_shape: true,
            });
        }
        self.text.push_str(&format!(
            ".type P = [a: number, b: number]
.type Q = [p: P, n: number]
.decl rp(p: P)
.decl ru(a: number, b: number)
.decl rq(q: Q)
.decl rf(a: number, b: number, n: number)
.decl rc(p: P)
.decl rn(x: number, y: number)
.decl re(p: P, q: P)
.decl rnil(p: P)
.decl rw(x: number)
rp([x, {y}]) :- {atom}.
ru(b, a) :- rp([a, b]).
rq([p, a]) :- rp(p), p = [a, _].
rf(a, b, n) :- rq([[a, b], n]).
rc(p) :- rp(p).
rc([b, a + 1]) :- rc([a, b]), a < 5.
rn(x, {y}) :- {atom}, !rp([{y}, x]).
re(p, q) :- rc(p), rc(q), p != q, p = [a, _], q = [_, a].
rnil(nil).
rnil(p) :- rc(p), p = [0, _].
rw(x) :- {atom}, !rc([_, x]).
"
        ));
    }

    fn new_rel(&mut self, name: String, layer: usize) -> Rel {
        let mut arity = 1 + self.c.below(3);
        // An eqrel relation (inputs are closed too, so also in layer 0): two columns of
        // one type.
        let eqrel = self.c.chance(if layer == 0 { 5 } else { 10 });
        if eqrel {
            arity = 2;
            self.features.eqrel = true;
        }
        let mut types = vec![Ty::Num; arity];
        if eqrel {
            if self.c.chance(15) {
                types = vec![Ty::Sym; 2];
                self.features.symbols = true;
            }
        } else if arity >= 2 && self.c.chance(if layer == 0 { 25 } else { 15 }) {
            let col = self.c.below(arity);
            types[col] = Ty::Sym;
            self.features.symbols = true;
        }
        // A choice-domain: one column, or (with three columns) sometimes two domains
        // or a domain of two columns.
        let mut qualifier = String::new();
        if eqrel {
            qualifier.push_str(" eqrel");
        } else if arity >= 2 && self.c.chance(if layer == 0 { 5 } else { 12 }) {
            self.features.choice = true;
            let first = self.c.below(arity);
            let domain = match (arity, self.c.below(3)) {
                (3, 1) => format!("c{first}, c{}", (first + 1) % 3),
                (3, 2) => format!("(c{first}, c{})", (first + 1) % 3),
                _ => format!("c{first}"),
            };
            qualifier = format!(" choice-domain {domain}");
        }
        let cols: Vec<String> = types
            .iter()
            .enumerate()
            .map(|(i, t)| {
                format!(
                    "c{i}: {}",
                    match t {
                        Ty::Num => "number",
                        Ty::Sym => "symbol",
                        Ty::Record => unreachable!("new_rel makes no record columns"),
                    }
                )
            })
            .collect();
        self.text
            .push_str(&format!(".decl {name}({}){qualifier}\n", cols.join(", ")));
        let rel = Rel {
            name,
            types,
            layer,
            kept_in_shape: !qualifier.is_empty(),
        };
        self.rels.push(rel.clone());
        rel
    }

    /// A subsumptive clause keeping, per value of the other columns, the least or
    /// greatest value of one number column (an order, so the engine's removal after
    /// every step and the reference's after every round agree).
    fn subsumption(&mut self, rel: &Rel) {
        let nums: Vec<usize> = (0..rel.types.len())
            .filter(|&i| rel.types[i] == Ty::Num)
            .collect();
        if rel.kept_in_shape || rel.types.len() < 2 || nums.is_empty() {
            return;
        }
        let col = *self.c.pick(&nums);
        let args = |which: &str| -> String {
            (0..rel.types.len())
                .map(|i| {
                    if i == col {
                        format!("d{which}")
                    } else {
                        format!("k{i}")
                    }
                })
                .collect::<Vec<_>>()
                .join(", ")
        };
        let op = *self.c.pick(&["<", ">", "<=", ">="]);
        self.features.subsumption = true;
        self.text.push_str(&format!(
            "{name}({}) <= {name}({}) :- d2 {op} d1.\n",
            args("1"),
            args("2"),
            name = rel.name
        ));
    }

    fn random_row(&mut self, types: &[Ty]) -> Vec<Val> {
        types.iter().map(|t| self.random_val(*t)).collect()
    }

    fn random_val(&mut self, ty: Ty) -> Val {
        match ty {
            Ty::Num => Val::Num(self.c.below(DOMAIN) as i32),
            Ty::Sym => Val::Sym(SYMS[self.c.below(SYMS.len())]),
            Ty::Record => unreachable!("record relations get no random facts"),
        }
    }

    fn fact(&mut self, name: &str, row: &[Val]) {
        let args: Vec<String> = row.iter().map(|v| v.to_string()).collect();
        self.text
            .push_str(&format!("{name}({}).\n", args.join(", ")));
    }

    fn const_of(&mut self, ty: Ty) -> String {
        self.random_val(ty).to_string()
    }

    /// One clause with the given head relations (all of layer `layer`).
    fn rule(&mut self, heads: &[Rel], layer: usize, allow_rec: bool) {
        let mut vars = RuleVars::default();
        let disjunction = heads.len() == 1 && self.c.chance(10);
        let (mut conj, mut recursive) = self.conjunction(&mut vars, layer, allow_rec);
        let mut body = conj.join(", ");
        let mut head_pool = [vars.all_bound(Ty::Num), vars.all_bound(Ty::Sym)];
        if disjunction {
            self.features.disjunction = true;
            let first = std::mem::take(&mut vars.atom_bound);
            let first_other = std::mem::take(&mut vars.other_bound);
            // Fresh names start over, so the disjuncts share variable names.
            vars.counter = 0;
            let rec2;
            (conj, rec2) = self.conjunction(&mut vars, layer, allow_rec);
            recursive |= rec2;
            body = format!("{body} ; {}", conj.join(", "));
            // Head variables must be bound in both disjuncts.
            for (i, ty) in [Ty::Num, Ty::Sym].into_iter().enumerate() {
                let second = vars.all_bound(ty);
                let mut firsts: Vec<String> = first
                    .iter()
                    .chain(&first_other)
                    .filter(|(_, t)| *t == ty)
                    .map(|(n, _)| n.clone())
                    .collect();
                firsts.retain(|n| second.contains(n));
                firsts.sort();
                firsts.dedup();
                head_pool[i] = firsts;
            }
        }
        if recursive {
            self.features.recursion = true;
            self.recursive_heads.extend(heads.iter().cloned());
        }
        let mut head_atoms = Vec::new();
        for head in heads {
            let mut args = Vec::new();
            for &ty in &head.types {
                let pool = &head_pool[ty as usize];
                let arg = if !pool.is_empty() && !self.c.chance(10) {
                    let v = self.c.pick(pool).clone();
                    if ty == Ty::Num && !recursive && self.c.chance(10) {
                        self.features.arithmetic = true;
                        format!("{v} + {}", 1 + self.c.below(3))
                    } else if ty == Ty::Sym && !recursive && self.c.chance(10) {
                        format!("cat({v}, \"!\")")
                    } else {
                        v
                    }
                } else {
                    self.const_of(ty)
                };
                args.push(arg);
            }
            // Soufflé allows `autoinc()` only in rules that are not recursive.
            if !recursive && head.types.first() == Some(&Ty::Num) && self.c.chance(8) {
                self.features.autoinc = true;
                args[0] = "autoinc()".to_string();
            }
            head_atoms.push(format!("{}({})", head.name, args.join(", ")));
        }
        self.text
            .push_str(&format!("{} :- {body}.\n", head_atoms.join(", ")));
    }

    /// A conjunction of literals in random order. Returns it and whether it reads a
    /// relation of the same layer.
    fn conjunction(
        &mut self,
        vars: &mut RuleVars,
        layer: usize,
        allow_rec: bool,
    ) -> (Vec<String>, bool) {
        let mut lits = Vec::new();
        let mut recursive = false;
        let lower: Vec<Rel> = self
            .rels
            .iter()
            .filter(|r| r.layer < layer)
            .cloned()
            .collect();
        let same: Vec<Rel> = self
            .rels
            .iter()
            .filter(|r| r.layer == layer)
            .cloned()
            .collect();
        let n_atoms = 1 + self.c.below(3);
        for _ in 0..n_atoms {
            let rel = if allow_rec && self.c.chance(50) {
                recursive = true;
                self.c.pick(&same).clone()
            } else {
                self.c.pick(&lower).clone()
            };
            let mut args = Vec::new();
            for &ty in &rel.types {
                let arg = if self.c.chance(10) {
                    self.const_of(ty)
                } else if self.c.chance(12) {
                    "_".to_string()
                } else {
                    let existing = vars.atom_vars(ty);
                    let name = if !existing.is_empty() && self.c.chance(55) {
                        self.c.pick(&existing).clone()
                    } else {
                        vars.fresh(if ty == Ty::Num { "x" } else { "s" })
                    };
                    vars.atom_bound.push((name.clone(), ty));
                    name
                };
                args.push(arg);
            }
            lits.push(format!("{}({})", rel.name, args.join(", ")));
        }
        // Sometimes an atom over variables the others bound only: it often closes a
        // cycle (a triangle, a square), which the planner joins worst-case-optimally.
        if n_atoms >= 2 && self.c.chance(32) {
            let pool: Vec<Rel> = if allow_rec && self.c.chance(30) {
                recursive = true;
                same.clone()
            } else {
                lower.clone()
            };
            let rel = self.c.pick(&pool).clone();
            let mut args = Vec::new();
            for &ty in &rel.types {
                let existing = vars.atom_vars(ty);
                let name = if existing.is_empty() {
                    vars.fresh(if ty == Ty::Num { "x" } else { "s" })
                } else {
                    self.c.pick(&existing).clone()
                };
                vars.atom_bound.push((name.clone(), ty));
                args.push(name);
            }
            lits.push(format!("{}({})", rel.name, args.join(", ")));
        }
        // Filters and other literals.
        if self.c.chance(35) {
            lits.push(self.comparison(vars));
        }
        if self.c.chance(25) {
            let nums = vars.all_bound(Ty::Num);
            if !nums.is_empty() {
                self.features.arithmetic = true;
                let x = self.c.pick(&nums).clone();
                let z = vars.fresh("z");
                if recursive {
                    lits.push(format!("{z} = {x} + 1"));
                    lits.push(format!("{z} < {}", DOMAIN));
                } else {
                    let y = self.c.pick(&nums).clone();
                    let expr = match self.c.below(16) {
                        8 | 9 => {
                            self.features.range = true;
                            format!("range({x} % 7, {y} % 7)")
                        }
                        10 | 11 => {
                            self.features.range = true;
                            format!("range({y} % 7, {x} % 7, {})", self.c.below(5) as i32 - 2)
                        }
                        12.. => {
                            self.features.cast = true;
                            format!("as(as({x}, unsigned) + 1u, number)")
                        }
                        0 => format!("{x} + {y}"),
                        1 => format!("{x} - {}", self.c.below(4)),
                        2 => format!("{x} * {y}"),
                        3 => format!("{x} % 3"),
                        4 => format!("max({x}, {y})"),
                        5 => format!("{x} band 5"),
                        6 => format!("-{x}"),
                        _ => format!("({x} + {y}) / 2"),
                    };
                    lits.push(format!("{z} = {expr}"));
                }
                vars.other_bound.push((z, Ty::Num));
            }
        }
        // Negation and aggregates read strictly lower layers only.
        if self.c.chance(25) {
            self.features.negation = true;
            let rel = self.c.pick(&lower).clone();
            let mut args = Vec::new();
            for &ty in &rel.types {
                let pool = vars.atom_vars(ty);
                let arg = if !pool.is_empty() && !self.c.chance(25) {
                    self.c.pick(&pool).clone()
                } else if self.c.chance(50) {
                    "_".to_string()
                } else {
                    self.const_of(ty)
                };
                args.push(arg);
            }
            lits.push(format!("!{}({})", rel.name, args.join(", ")));
        }
        if self.c.chance(20) {
            self.features.aggregate = true;
            let rel = self.c.pick(&lower).clone();
            lits.push(self.aggregate(vars, &rel, &lower, false));
            if self.c.chance(20) {
                // A second aggregate, likely correlated on the first one's result.
                let rel = self.c.pick(&lower).clone();
                lits.push(self.aggregate(vars, &rel, &lower, true));
            }
        }
        if self.c.chance(15) {
            lits.push(self.comparison(vars));
        }
        // Shuffle: the engine must not depend on the written order.
        let mut shuffled = Vec::new();
        while !lits.is_empty() {
            let i = self.c.below(lits.len());
            shuffled.push(lits.remove(i));
        }
        (shuffled, recursive)
    }

    fn comparison(&mut self, vars: &RuleVars) -> String {
        let (ty, pool) = if self.c.chance(20) && !vars.all_bound(Ty::Sym).is_empty() {
            (Ty::Sym, vars.all_bound(Ty::Sym))
        } else {
            (Ty::Num, vars.all_bound(Ty::Num))
        };
        if pool.is_empty() {
            return "1 < 2".to_string();
        }
        let op = if ty == Ty::Sym {
            *self.c.pick(&["!=", "="])
        } else {
            *self.c.pick(&["!=", "<", "<=", ">", ">=", "="])
        };
        // (An equality is written `x = y` or, negated, `!(x != y)`; `!=` leaves
        // them out too, as its negated form is written with `=`.)
        let pool: Vec<String> = if op == "=" || op == "!=" {
            pool.into_iter()
                .filter(|v| !vars.inside_aggregates.contains(v))
                .collect()
        } else {
            pool
        };
        if pool.is_empty() {
            return "1 < 2".to_string();
        }
        let x = self.c.pick(&pool).clone();
        let y = if self.c.chance(40) {
            self.const_of(ty)
        } else {
            self.c.pick(&pool).clone()
        };
        // Numbers sometimes go through conversions (number -> float -> number, or
        // number -> unsigned -> float -> number: the identity on the domain), and the
        // comparison is sometimes written negated (`!(x < y)`, i.e. `x >= y`).
        let y = if ty == Ty::Num && self.c.chance(15) {
            if self.c.chance(50) {
                format!("to_number(to_float({y}))")
            } else {
                format!("to_number(to_float(to_unsigned({y})))")
            }
        } else {
            y
        };
        if self.c.chance(10) {
            let neg = match op {
                "=" => "!=",
                "!=" => "=",
                "<" => ">=",
                ">=" => "<",
                "<=" => ">",
                _ => "<=",
            };
            return format!("!({x} {neg} {y})");
        }
        format!("{x} {op} {y}")
    }

    /// `n = f x : { rel(..) [, other(..)] [, filter] }` over relations of lower layers.
    ///
    /// Besides fresh local variables and variables bound by the rule's atoms
    /// (correlated), the body may use: the result variable `n` itself, as a local (as
    /// in Soufflé, `n = count : { e(n, _) }` counts all of `e`: the `n` inside is bound
    /// only through the aggregate, so it is not the outer `n`); variables bound by
    /// equalities and by earlier aggregates (correlated, so this aggregate runs after
    /// those); and the aggregated expression may be `x + n` over locals, `n` local too.
    fn aggregate(
        &mut self,
        vars: &mut RuleVars,
        rel: &Rel,
        lower: &[Rel],
        prefer_computed: bool,
    ) -> String {
        let mut args = Vec::new();
        let mut locals: Vec<String> = Vec::new();
        let out = vars.fresh("n");
        let reuse_out = self.c.chance(25);
        let use_other_bound = prefer_computed || self.c.chance(50);
        for &ty in &rel.types {
            let mut outer = vars.atom_vars(ty);
            if use_other_bound && ty == Ty::Num {
                let computed: Vec<String> = vars
                    .other_bound
                    .iter()
                    .filter(|(_, t)| *t == Ty::Num)
                    .map(|(n, _)| n.clone())
                    .collect();
                if !computed.is_empty() && (prefer_computed || self.c.chance(60)) {
                    outer = computed;
                }
            }
            let arg = if !outer.is_empty() && self.c.chance(if prefer_computed { 70 } else { 40 }) {
                let v = self.c.pick(&outer).clone(); // correlated
                if !vars.atom_vars(ty).contains(&v) {
                    self.features.agg_on_computed = true;
                }
                v
            } else if self.c.chance(15) {
                "_".to_string()
            } else if self.c.chance(10) {
                self.const_of(ty)
            } else if ty == Ty::Num && reuse_out && !locals.contains(&out) {
                self.features.agg_own_result = true;
                locals.push(out.clone());
                out.clone()
            } else {
                let v = vars.fresh(if ty == Ty::Num { "a" } else { "t" });
                if ty == Ty::Num {
                    locals.push(v.clone());
                }
                v
            };
            args.push(arg);
        }
        let mut body = format!("{}({})", rel.name, args.join(", "));
        if self.c.chance(25) {
            // A second atom: a join (on local or correlated variables) or a negation.
            let other = self.c.pick(lower).clone();
            let negated = self.c.chance(30);
            let mut args = Vec::new();
            for &ty in &other.types {
                let mut pool = vars.atom_vars(ty);
                if ty == Ty::Num {
                    pool.extend(locals.iter().cloned());
                }
                let arg = if !pool.is_empty() && self.c.chance(70) {
                    self.c.pick(&pool).clone()
                } else if negated || self.c.chance(50) {
                    "_".to_string()
                } else {
                    let v = vars.fresh(if ty == Ty::Num { "a" } else { "t" });
                    if ty == Ty::Num {
                        locals.push(v.clone());
                    }
                    v
                };
                args.push(arg);
            }
            let bang = if negated { "!" } else { "" };
            body = format!("{body}, {bang}{}({})", other.name, args.join(", "));
        }
        if !locals.is_empty() && self.c.chance(20) {
            body = format!("{body}, {} < {}", locals[0], self.c.below(DOMAIN));
        }
        let func = if locals.is_empty() {
            "count".to_string()
        } else {
            let mut arg = self.c.pick(&locals).clone();
            if locals.len() >= 2 && self.c.chance(20) {
                // Two locals (one may be the result variable's name, local here).
                let other = self.c.pick(&locals).clone();
                arg = format!("{arg} + {other}");
            }
            let kind = self.c.below(4);
            // A witness: a local of a `min`/`max` body (not of the aggregated
            // expression, whose names are always local) made usable outside.
            let mut witnesses: Vec<String> = locals
                .iter()
                .filter(|l| **l != out && !arg.split(" + ").any(|a| a == l.as_str()))
                .cloned()
                .collect();
            if kind >= 2 && witnesses.is_empty() && self.c.chance(70) {
                let w = vars.fresh("a");
                body = format!("{body}, {w} = {} + 1", locals[0]);
                witnesses.push(w);
            }
            if kind >= 2 && !witnesses.is_empty() && self.c.chance(80) {
                self.features.witness = true;
                let w = self.c.pick(&witnesses).clone();
                vars.inside_aggregates.push(w.clone());
                vars.other_bound.push((w, Ty::Num));
            }
            match kind {
                0 => "count".to_string(),
                1 => format!("sum {arg}"),
                2 => format!("min {arg}"),
                _ => format!("max {arg}"),
            }
        };
        if locals.contains(&out) {
            vars.inside_aggregates.push(out.clone());
        }
        vars.other_bound.push((out.clone(), Ty::Num));
        format!("{out} = {func} : {{ {body} }}")
    }
}

#[derive(Clone, Debug)]
enum Val {
    Num(i32),
    Sym(&'static str),
}

impl std::fmt::Display for Val {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Val::Num(n) => write!(f, "{n}"),
            Val::Sym(s) => write!(f, "\"{s}\""),
        }
    }
}

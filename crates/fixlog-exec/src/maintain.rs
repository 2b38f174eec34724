//! Relations whose storage keeps a shape the rules do not: `eqrel` (an equivalence
//! relation), `choice-domain` (at most one tuple per domain value) and lattice
//! attributes (one tuple per key, its lattice values combined by `Lub`).
//!
//! Both are folded here, on the host, by the driver (see [`crate::driver`]), so that
//! every backend gets them from one implementation through the operations it already
//! has (`relation_rows`, `relation_from_rows`, `merge_disjoint`). What crosses to the
//! host is small: a step's new tuples as the rules derived them (already deduplicated
//! and without the tuples the relation holds), and back the tuples the relation gains.
//! The full relation never moves.
//!
//! **eqrel.** [`EqRelClasses`] is a union-find over the values that occur, with the
//! members of each class. Folding a new pair `(a, b)` adds `(a, a)` for an unseen `a`
//! (and `(b, b)`), and when `a` and `b` are in different classes `A` and `B`, every
//! pair of `A × B` and `B × A`: exactly the pairs the closure gains, each once. So the
//! delta a semi-naive iteration sees is the closure's new pairs, and `full` stays the
//! closure (each class's n² pairs, materialised for joins and output).
//!
//! **choice-domain.** [`ChoiceDomains`] remembers, per domain, the values the relation
//! holds. A step's new tuples are taken in output order (the order Soufflé writes them:
//! column by column, each by its type's order, symbols by their text), and a tuple is
//! kept when none of its domain values is held yet; keeping it takes them. Soufflé
//! leaves the choice within a step to its hash tables and threads; Fixlog's is the
//! smallest tuple, the same for every thread count and backend.
//!
//! **lattice.** [`LatticeValues`] keeps the lattice values held per key (the columns
//! before the lattice ones). A step's new tuples are grouped by key (in raw order) and
//! each group's values folded column by column with the lattice's `Lub` (`Lub(new,
//! acc)`, Soufflé's order); the result is combined with the held value the same way
//! (`Lub(new, held)`). A key seen for the first time gains its tuple; a held key whose
//! values change loses its old tuple and gains the new one (the delta is the tuples
//! whose values grew, as in Soufflé's lattice translation); an unchanged one adds
//! nothing. A `Lub` that gives no value (a failed functor) leaves the value as it was.
//! Unlike the others, this one *removes* tuples: the driver takes them out of `full`.

use fixlog_logical::{value, ColType, Expr, LatticeColumns, SymbolTable, Value};
use std::collections::{HashMap, HashSet};

/// What the driver keeps for a relation that is not a plain set of derived tuples.
pub enum Maintained {
    EqRel(EqRelClasses),
    Choice(ChoiceDomains),
    Lattice(LatticeValues),
}

impl Maintained {
    /// The host state for a relation with these properties (`None`: a plain relation).
    pub fn for_relation(
        eqrel: bool,
        choice_domains: &[Vec<usize>],
        types: &[ColType],
        lattice: Option<&LatticeColumns>,
    ) -> Option<Maintained> {
        if let Some(l) = lattice {
            Some(Maintained::Lattice(LatticeValues::new(l.clone())))
        } else if eqrel {
            Some(Maintained::EqRel(EqRelClasses::default()))
        } else if !choice_domains.is_empty() {
            Some(Maintained::Choice(ChoiceDomains::new(
                choice_domains.to_vec(),
                types.to_vec(),
            )))
        } else {
            None
        }
    }

    /// Folds tuples the relation does not hold (row-major, any order) into the
    /// relation's state; returns the tuples the relation gains (row-major, any order,
    /// none of them held before, no repeats).
    pub fn fold(&mut self, arity: usize, rows: &[Value], symbols: &SymbolTable) -> Vec<Value> {
        self.fold_removing(arity, rows, symbols).0
    }

    /// [`Maintained::fold`], with the tuples the relation loses (row-major, held
    /// before): only a lattice relation loses any (a key's old values).
    pub fn fold_removing(
        &mut self,
        arity: usize,
        rows: &[Value],
        symbols: &SymbolTable,
    ) -> (Vec<Value>, Vec<Value>) {
        match self {
            Maintained::EqRel(classes) => (classes.add_pairs(rows), Vec::new()),
            Maintained::Choice(choice) => (choice.choose(arity, rows, symbols), Vec::new()),
            Maintained::Lattice(values) => values.add(arity, rows, symbols),
        }
    }
}

/// A union-find over the values of an eqrel relation, with each class's members.
#[derive(Default)]
pub struct EqRelClasses {
    /// The slot of each value seen.
    slot: HashMap<Value, usize>,
    /// Union-find parent of each slot (a root is its own parent).
    parent: Vec<usize>,
    /// The values of each root's class (empty for slots that are not roots).
    members: Vec<Vec<Value>>,
}

impl EqRelClasses {
    /// Adds the pairs `rows` (row-major, arity 2; a trailing odd value is ignored);
    /// returns the pairs the closure gains, row-major.
    pub fn add_pairs(&mut self, rows: &[Value]) -> Vec<Value> {
        let mut out = Vec::new();
        for pair in rows.chunks_exact(2) {
            let a = self.root_of(pair[0], &mut out);
            let b = self.root_of(pair[1], &mut out);
            if a == b {
                continue;
            }
            // Merge the smaller class into the larger.
            let (big, small) = if self.members[a].len() >= self.members[b].len() {
                (a, b)
            } else {
                (b, a)
            };
            let moved = std::mem::take(&mut self.members[small]);
            for &x in &moved {
                for &y in &self.members[big] {
                    out.extend_from_slice(&[x, y, y, x]);
                }
            }
            self.parent[small] = big;
            self.members[big].extend(moved);
        }
        out
    }

    /// The root of `v`'s class; a value seen for the first time gets a class of its own
    /// and its pair `(v, v)` is written to `out`.
    fn root_of(&mut self, v: Value, out: &mut Vec<Value>) -> usize {
        let slot = match self.slot.get(&v) {
            Some(&s) => s,
            None => {
                let s = self.parent.len();
                self.slot.insert(v, s);
                self.parent.push(s);
                self.members.push(vec![v]);
                out.extend_from_slice(&[v, v]);
                return s;
            }
        };
        // Find with path halving.
        let mut x = slot;
        while self.parent[x] != x {
            let grand = self.parent[self.parent[x]];
            self.parent[x] = grand;
            x = grand;
        }
        x
    }
}

/// The domain values a choice-domain relation holds.
pub struct ChoiceDomains {
    /// The columns of each domain.
    domains: Vec<Vec<usize>>,
    /// The relation's column types (for the order in which new tuples are taken).
    types: Vec<ColType>,
    /// Per domain, the values held.
    taken: Vec<HashSet<Vec<Value>>>,
}

impl ChoiceDomains {
    pub fn new(domains: Vec<Vec<usize>>, types: Vec<ColType>) -> ChoiceDomains {
        let taken = domains.iter().map(|_| HashSet::new()).collect();
        ChoiceDomains {
            domains,
            types,
            taken,
        }
    }

    /// The tuples of `rows` (row-major, tuples the relation does not hold) that are
    /// kept, taken smallest first in output order: those none of whose domain values
    /// is held by the relation or by a tuple kept before them. Row-major.
    pub fn choose(&mut self, arity: usize, rows: &[Value], symbols: &SymbolTable) -> Vec<Value> {
        if arity == 0 {
            return rows.to_vec();
        }
        let mut tuples: Vec<&[Value]> = rows.chunks_exact(arity).collect();
        let order = value::output_order(&self.types, symbols);
        tuples.sort_by(|a, b| order(a, b));
        let mut out = Vec::new();
        for t in tuples {
            let keys: Vec<Vec<Value>> = self
                .domains
                .iter()
                .map(|d| d.iter().filter_map(|&c| t.get(c).copied()).collect())
                .collect();
            if keys
                .iter()
                .zip(&self.taken)
                .any(|(k, held)| held.contains(k))
            {
                continue;
            }
            for (k, held) in keys.into_iter().zip(&mut self.taken) {
                held.insert(k);
            }
            out.extend_from_slice(t);
        }
        out
    }
}

/// The lattice values a relation with lattice attributes holds, per key.
pub struct LatticeValues {
    columns: LatticeColumns,
    held: HashMap<Vec<Value>, Vec<Value>>,
}

impl LatticeValues {
    pub fn new(columns: LatticeColumns) -> LatticeValues {
        LatticeValues {
            columns,
            held: HashMap::new(),
        }
    }

    fn lub(lub: &Expr, new: Value, held: Value, symbols: &SymbolTable) -> Value {
        value::eval_expr(lub, &[new, held], symbols).unwrap_or(held)
    }

    /// Folds `rows` (row-major, sorted or not); returns the tuples gained and the
    /// tuples lost (each row-major).
    pub fn add(
        &mut self,
        arity: usize,
        rows: &[Value],
        symbols: &SymbolTable,
    ) -> (Vec<Value>, Vec<Value>) {
        let k = self.columns.key_len.min(arity);
        if arity == 0 || arity == k {
            return (rows.to_vec(), Vec::new());
        }
        let mut tuples: Vec<&[Value]> = rows.chunks_exact(arity).collect();
        tuples.sort_unstable();
        let (mut gained, mut lost) = (Vec::new(), Vec::new());
        let mut i = 0;
        while i < tuples.len() {
            let key = &tuples[i][..k];
            let mut acc: Vec<Value> = tuples[i][k..].to_vec();
            let mut j = i + 1;
            while j < tuples.len() && &tuples[j][..k] == key {
                for (c, lub) in self.columns.lubs.iter().enumerate() {
                    if let (Some(a), Some(&n)) = (acc.get_mut(c), tuples[j].get(k + c)) {
                        *a = Self::lub(lub, n, *a, symbols);
                    }
                }
                j += 1;
            }
            match self.held.get_mut(key) {
                Some(held) => {
                    let mut next = held.clone();
                    for (c, lub) in self.columns.lubs.iter().enumerate() {
                        if let (Some(x), Some(&n)) = (next.get_mut(c), acc.get(c)) {
                            *x = Self::lub(lub, n, *x, symbols);
                        }
                    }
                    if next != *held {
                        lost.extend_from_slice(key);
                        lost.extend_from_slice(held);
                        gained.extend_from_slice(key);
                        gained.extend_from_slice(&next);
                        *held = next;
                    }
                }
                None => {
                    gained.extend_from_slice(key);
                    gained.extend_from_slice(&acc);
                    self.held.insert(key.to_vec(), acc);
                }
            }
            i = j;
        }
        (gained, lost)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted_pairs(rows: &[Value]) -> Vec<(Value, Value)> {
        let mut v: Vec<(Value, Value)> = rows.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn eqrel_delta_is_exactly_the_new_pairs_of_merged_classes() {
        let mut c = EqRelClasses::default();
        assert_eq!(
            sorted_pairs(&c.add_pairs(&[1, 2])),
            vec![(1, 1), (1, 2), (2, 1), (2, 2)]
        );
        assert_eq!(
            sorted_pairs(&c.add_pairs(&[3, 4])),
            vec![(3, 3), (3, 4), (4, 3), (4, 4)]
        );
        // Merging {1,2} and {3,4}: the 8 pairs across, nothing else.
        assert_eq!(
            sorted_pairs(&c.add_pairs(&[2, 3])),
            vec![
                (1, 3),
                (1, 4),
                (2, 3),
                (2, 4),
                (3, 1),
                (3, 2),
                (4, 1),
                (4, 2)
            ]
        );
        assert!(c.add_pairs(&[4, 1, 1, 1]).is_empty());
    }

    #[test]
    fn choice_keeps_the_smallest_tuple_per_domain_value() {
        let symbols = SymbolTable::new();
        let mut c = ChoiceDomains::new(vec![vec![0]], vec![ColType::Number, ColType::Number]);
        // -1 sorts before 5 as a number (not as its bits).
        let kept = c.choose(2, &[1, 5, 1, value::from_i32(-1), 2, 7], &symbols);
        assert_eq!(kept, vec![1, value::from_i32(-1), 2, 7]);
        assert!(c.choose(2, &[1, 0, 2, 0], &symbols).is_empty());
    }

    #[test]
    fn lattice_keeps_the_lub_per_key_and_gives_what_grew() {
        use fixlog_logical::BinOp;
        let symbols = SymbolTable::new();
        let max = Expr::Binary {
            op: BinOp::Max,
            ty: ColType::Number,
            lhs: Box::new(Expr::Var(0)),
            rhs: Box::new(Expr::Var(1)),
        };
        let mut l = LatticeValues::new(LatticeColumns {
            key_len: 1,
            lubs: vec![max],
        });
        // Key 1: max(3, 5) = 5; key 2: 4.
        let (gained, lost) = l.add(2, &[1, 3, 2, 4, 1, 5], &symbols);
        assert_eq!((gained, lost), (vec![1, 5, 2, 4], vec![]));
        // Key 1 grows to 7 (its 5 goes), key 2's 1 changes nothing, key 3 is new.
        let (gained, lost) = l.add(2, &[1, 7, 2, 1, 3, 0], &symbols);
        assert_eq!((gained, lost), (vec![1, 7, 3, 0], vec![1, 5]));
    }

    #[test]
    fn choice_with_two_domains_needs_both_free() {
        let symbols = SymbolTable::new();
        let mut c = ChoiceDomains::new(
            vec![vec![0], vec![1]],
            vec![ColType::Unsigned, ColType::Unsigned],
        );
        let kept = c.choose(2, &[1, 1, 1, 2, 2, 1, 2, 2], &symbols);
        assert_eq!(kept, vec![1, 1, 2, 2]);
    }
}

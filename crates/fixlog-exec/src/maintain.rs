//! Relations whose storage keeps a shape the rules do not: `eqrel` (an equivalence
//! relation) and `choice-domain` (at most one tuple per domain value).
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

use fixlog_logical::{value, ColType, SymbolTable, Value};
use std::collections::{HashMap, HashSet};

/// What the driver keeps for a relation that is not a plain set of derived tuples.
pub enum Maintained {
    EqRel(EqRelClasses),
    Choice(ChoiceDomains),
}

impl Maintained {
    /// The host state for a relation with these properties (`None`: a plain relation).
    pub fn for_relation(
        eqrel: bool,
        choice_domains: &[Vec<usize>],
        types: &[ColType],
    ) -> Option<Maintained> {
        if eqrel {
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
        match self {
            Maintained::EqRel(classes) => classes.add_pairs(rows),
            Maintained::Choice(choice) => choice.choose(arity, rows, symbols),
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

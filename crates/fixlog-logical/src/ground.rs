//! Groundedness to a fixpoint, in time linear in the size of the rules.
//!
//! Items (variables, aggregate values) are numbered `0..n`. A *fact* grounds an item
//! outright (a variable of a positive atom); a *rule* grounds its target once every item
//! it needs is grounded (`v = x + y` grounds `v` once `x` and `y` are; an aggregate's
//! value is grounded once its correlated variables are). [`Grounding::solve`] is the
//! usual counter-and-worklist propagation, so a long chain of equalities written in any
//! order costs one pass, not one pass per link.

pub(crate) struct Grounding {
    n: usize,
    facts: Vec<usize>,
    /// (target, needs) with `needs` sorted and without repeats.
    rules: Vec<(usize, Vec<usize>)>,
}

impl Grounding {
    pub(crate) fn new(n: usize) -> Grounding {
        Grounding {
            n,
            facts: Vec::new(),
            rules: Vec::new(),
        }
    }

    /// A new item; returns its number.
    pub(crate) fn add_item(&mut self) -> usize {
        self.n += 1;
        self.n - 1
    }

    pub(crate) fn fact(&mut self, item: usize) {
        if item < self.n {
            self.facts.push(item);
        }
    }

    /// `target` is grounded once every item of `needs` is.
    pub(crate) fn rule(&mut self, target: usize, mut needs: Vec<usize>) {
        if target >= self.n || needs.iter().any(|&x| x >= self.n) {
            return;
        }
        needs.sort_unstable();
        needs.dedup();
        self.rules.push((target, needs));
    }

    /// Which items are grounded, given the facts, the rules and the `extra` facts.
    pub(crate) fn solve(&self, extra: &[usize]) -> Vec<bool> {
        let mut grounded = vec![false; self.n];
        let mut missing: Vec<usize> = self.rules.iter().map(|(_, needs)| needs.len()).collect();
        let mut watchers: Vec<Vec<usize>> = vec![Vec::new(); self.n];
        for (r, (_, needs)) in self.rules.iter().enumerate() {
            for &x in needs {
                watchers[x].push(r);
            }
        }
        let mut queue: Vec<usize> = Vec::new();
        let ground = |x: usize, grounded: &mut Vec<bool>, queue: &mut Vec<usize>| {
            if x < grounded.len() && !grounded[x] {
                grounded[x] = true;
                queue.push(x);
            }
        };
        for &x in self.facts.iter().chain(extra) {
            ground(x, &mut grounded, &mut queue);
        }
        for (target, needs) in &self.rules {
            if needs.is_empty() {
                ground(*target, &mut grounded, &mut queue);
            }
        }
        while let Some(x) = queue.pop() {
            for &r in &watchers[x] {
                missing[r] -= 1;
                if missing[r] == 0 {
                    ground(self.rules[r].0, &mut grounded, &mut queue);
                }
            }
        }
        grounded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chains_in_any_order_and_cycles() {
        // 0 is a fact; 3 <- 2 <- 1 <- 0 written backwards; 4 <- {4, 0} never.
        let mut g = Grounding::new(6);
        g.rule(3, vec![2]);
        g.rule(2, vec![1]);
        g.rule(1, vec![0, 0]);
        g.rule(4, vec![4, 0]);
        g.fact(0);
        assert_eq!(g.solve(&[]), vec![true, true, true, true, false, false]);
        assert_eq!(g.solve(&[5]), vec![true, true, true, true, false, true]);
        g.rule(5, vec![]);
        assert!(g.solve(&[])[5]);
    }
}

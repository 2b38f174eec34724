//! CPU reference implementations of every primitive, on row-major `u32`
//! relations (`rows.len() == n * arity`). The GPU self-test compares against
//! these; they are deliberately simple.
//!
//! Test support: apart from the join specification ([`JoinSpec`], [`Col`],
//! [`CmpOp`], [`Operand`]), which `Gpu::join` takes, nothing here is used by
//! the library; the functions and [`Rng`] serve the `gpu_selftest` example and
//! this module's tests only ([`tc_size`] only the tests).

/// Join specification shared with the `join.cu` kernels (same C layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct JoinSpec {
    pub kc: u32,
    pub okey: [u32; 8],
    pub nout: u32,
    pub proj: [u32; 8],
    pub nfilt: u32,
    pub filt: [[u32; 4]; 4],
}

/// A column of the outer or the inner tuple.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Col {
    Outer(usize),
    Inner(usize),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq = 0,
    Ne = 1,
    Lt = 2,
    Le = 3,
    Gt = 4,
    Ge = 5,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operand {
    Col(Col),
    Const(u32),
}

const REF_INNER: u32 = 256;
const REF_CONST: u32 = 0xFFFF;

fn enc(c: Col) -> u32 {
    match c {
        Col::Outer(i) => i as u32,
        Col::Inner(i) => REF_INNER | i as u32,
    }
}

impl JoinSpec {
    /// `okey[k]` is the outer column matched against inner key column `k`
    /// (the inner relation's first `okey.len()` columns); `proj` lists the
    /// output columns; `filters` are conjunctive comparisons.
    pub fn new(okey: &[usize], proj: &[Col], filters: &[(Col, CmpOp, Operand)]) -> Self {
        assert!(
            (1..=8).contains(&okey.len()) && (1..=8).contains(&proj.len()) && filters.len() <= 4
        );
        let mut s = JoinSpec {
            kc: okey.len() as u32,
            nout: proj.len() as u32,
            nfilt: filters.len() as u32,
            ..Default::default()
        };
        for (k, &c) in okey.iter().enumerate() {
            s.okey[k] = c as u32;
        }
        for (k, &c) in proj.iter().enumerate() {
            s.proj[k] = enc(c);
        }
        for (k, &(l, op, r)) in filters.iter().enumerate() {
            s.filt[k] = match r {
                Operand::Col(c) => [enc(l), op as u32, enc(c), 0],
                Operand::Const(v) => [enc(l), op as u32, REF_CONST, v],
            };
        }
        s
    }

    fn get(&self, r: u32, o: &[u32], i: &[u32]) -> u32 {
        if r & REF_INNER != 0 {
            i[(r & 255) as usize]
        } else {
            o[(r & 255) as usize]
        }
    }

    pub fn passes(&self, o: &[u32], i: &[u32]) -> bool {
        (0..self.nfilt as usize).all(|f| {
            let [l, op, r, k] = self.filt[f];
            let a = self.get(l, o, i);
            let b = if r == REF_CONST { k } else { self.get(r, o, i) };
            match op {
                0 => a == b,
                1 => a != b,
                2 => a < b,
                3 => a <= b,
                4 => a > b,
                _ => a >= b,
            }
        })
    }
}

pub fn exclusive_scan(v: &[u32]) -> (Vec<u32>, u64) {
    let mut s = 0u64;
    let out = v
        .iter()
        .map(|&x| {
            let o = s as u32;
            s += x as u64;
            o
        })
        .collect();
    (out, s)
}

pub fn compact(rows: &[u32], arity: usize, flags: &[u32]) -> Vec<u32> {
    rows.chunks(arity)
        .zip(flags)
        .filter(|(_, &f)| f != 0)
        .flat_map(|(r, _)| r.iter().copied())
        .collect()
}

pub fn sort(rows: &[u32], arity: usize) -> Vec<u32> {
    let mut v: Vec<&[u32]> = rows.chunks(arity).collect();
    v.sort();
    v.concat()
}

pub fn unique(sorted: &[u32], arity: usize) -> Vec<u32> {
    let mut v: Vec<&[u32]> = sorted.chunks(arity).collect();
    v.dedup();
    v.concat()
}

pub fn merge(a: &[u32], b: &[u32], arity: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    let (ra, rb): (Vec<&[u32]>, Vec<&[u32]>) =
        (a.chunks(arity).collect(), b.chunks(arity).collect());
    while i < ra.len() || j < rb.len() {
        if j >= rb.len() || (i < ra.len() && ra[i] <= rb[j]) {
            out.extend_from_slice(ra[i]);
            i += 1;
        } else {
            out.extend_from_slice(rb[j]);
            j += 1;
        }
    }
    out
}

/// a − b for sorted b (a sorted or not; order of a is kept).
pub fn difference(a: &[u32], b: &[u32], arity: usize) -> Vec<u32> {
    let rb: Vec<&[u32]> = b.chunks(arity).collect();
    a.chunks(arity)
        .filter(|r| rb.binary_search(r).is_err())
        .flat_map(|r| r.iter().copied())
        .collect()
}

/// Range of rows whose first `key.len()` columns equal `key` in a sorted relation.
pub fn key_range(sorted: &[u32], arity: usize, key: &[u32]) -> (usize, usize) {
    let kc = key.len();
    let n = sorted.len() / arity;
    let row = |i: usize| &sorted[i * arity..i * arity + kc];
    let part = |pred: &dyn Fn(&[u32]) -> bool| {
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if pred(row(mid)) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    };
    let b = part(&|r| r < key);
    let e = part(&|r| r <= key);
    if b == e {
        (0, 0)
    } else {
        (b, e)
    }
}

/// Join in GPU output order: outer tuples in order, each inner range in order.
pub fn join(
    outer: &[u32],
    ao: usize,
    inner_sorted: &[u32],
    ai: usize,
    spec: &JoinSpec,
) -> Vec<u32> {
    let mut out = vec![];
    let kc = spec.kc as usize;
    for o in outer.chunks(ao) {
        let key: Vec<u32> = (0..kc).map(|k| o[spec.okey[k] as usize]).collect();
        let (b, e) = key_range(inner_sorted, ai, &key);
        for r in b..e {
            let i = &inner_sorted[r * ai..(r + 1) * ai];
            if spec.passes(o, i) {
                out.extend((0..spec.nout as usize).map(|c| spec.get(spec.proj[c], o, i)));
            }
        }
    }
    out
}

/// Transitive closure size by semi-naive evaluation on the CPU (small graphs).
pub fn tc_size(edges: &[(u32, u32)]) -> (usize, usize) {
    use std::collections::{BTreeSet, HashMap};
    let mut adj: HashMap<u32, Vec<u32>> = HashMap::new();
    for &(a, b) in edges {
        adj.entry(a).or_default().push(b);
    }
    let mut full: BTreeSet<(u32, u32)> = edges.iter().copied().collect();
    let mut delta: Vec<(u32, u32)> = full.iter().copied().collect();
    let mut iters = 0;
    loop {
        iters += 1;
        let mut new = vec![];
        for &(x, y) in &delta {
            if let Some(zs) = adj.get(&y) {
                for &z in zs {
                    if full.insert((x, z)) {
                        new.push((x, z));
                    }
                }
            }
        }
        if new.is_empty() {
            return (full.len(), iters);
        }
        delta = new;
    }
}

/// Small deterministic RNG (xorshift64*) for tests and benches.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u32) -> u32 {
        (((self.next_u64() >> 32) * n as u64) >> 32) as u32
    }
    pub fn rows(&mut self, n: usize, arity: usize, max: u32) -> Vec<u32> {
        (0..n * arity)
            .map(|_| {
                if max == u32::MAX {
                    (self.next_u64() >> 32) as u32
                } else {
                    self.below(max + 1)
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_agree_with_each_other() {
        let mut r = Rng::new(7);
        for arity in 1..=4 {
            let a = unique(&sort(&r.rows(500, arity, 5), arity), arity);
            let b = unique(&sort(&r.rows(500, arity, 5), arity), arity);
            let m = merge(&a, &b, arity);
            assert_eq!(m, sort(&[a.clone(), b.clone()].concat(), arity));
            let d = difference(&a, &b, arity);
            let back = unique(&merge(&d, &b, arity), arity);
            assert_eq!(back, unique(&m, arity));
        }
        assert_eq!(exclusive_scan(&[3, 0, 2]), (vec![0, 3, 3], 5));
    }

    #[test]
    fn join_reference() {
        // path(x,z) :- delta(x,y), edge(y,z), x != z
        let edge = sort(&[1, 2, 2, 3, 2, 4, 3, 1], 2);
        let delta = [0, 2, 5, 3, 7, 9];
        let spec = JoinSpec::new(
            &[1],
            &[Col::Outer(0), Col::Inner(1)],
            &[(Col::Outer(0), CmpOp::Ne, Operand::Const(5))],
        );
        assert_eq!(join(&delta, 2, &edge, 2, &spec), vec![0, 3, 0, 4]);
        assert_eq!(tc_size(&[(1, 2), (2, 3), (3, 4)]), (6, 3));
    }

    #[test]
    fn join_spec_layout_matches_cuda() {
        assert_eq!(std::mem::size_of::<JoinSpec>(), 35 * 4);
    }
}

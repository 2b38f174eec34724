//! The CSPA benchmark (`examples/cspa/cspa.dl`) on the fact generator's tiny graphs
//! (`examples/cspa_gen.rs`), checked tuple for tuple against a direct, naive computation
//! of the analysis written out below, so that a bug in the generator or the engine shows.

#[allow(dead_code)]
#[path = "../examples/cspa_gen.rs"]
mod cspa_gen;
mod support;

use cspa_gen::{generate, Params};
use fixlog::{Datum, Fixlog, RunOptions};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

type Rel = HashSet<(u32, u32)>;

fn example_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples/cspa")
}

fn index(rel: &Rel) -> HashMap<u32, Vec<u32>> {
    let mut idx: HashMap<u32, Vec<u32>> = HashMap::new();
    for &(a, b) in rel {
        idx.entry(a).or_default().push(b);
    }
    idx
}

/// CSPA by naive iteration: every round applies every rule to the whole relations of
/// the previous round, until nothing changes. Returns (ValueFlow, MemoryAlias,
/// ValueAlias) and whether the recursive rules through MemoryAlias derived anything the
/// plain closures would not have (so the graph exercises the whole program).
fn naive_cspa(assign: &[(u32, u32)], deref: &[(u32, u32)]) -> (Rel, Rel, Rel, bool, bool) {
    let (mut vf, mut ma, mut va) = (Rel::new(), Rel::new(), Rel::new());
    let deref_idx = index(&deref.iter().copied().collect());
    let (mut vf_through_ma, mut va_through_ma) = (false, false);
    loop {
        let vf_idx = index(&vf);
        let ma_idx = index(&ma);
        let mut vf2 = Rel::new();
        let mut ma2 = Rel::new();
        let mut va2 = Rel::new();
        for &(y, x) in assign {
            // ValueFlow(y, x) :- assign(y, x).
            vf2.insert((y, x));
            // ValueFlow(x, x) :- assign(x, y).  ValueFlow(x, x) :- assign(y, x).
            vf2.insert((y, y));
            vf2.insert((x, x));
            // MemoryAlias(x, x) :- assign(y, x).  MemoryAlias(x, x) :- assign(x, y).
            ma2.insert((x, x));
            ma2.insert((y, y));
        }
        // ValueFlow(x, y) :- assign(x, z), MemoryAlias(z, y).
        for &(x, z) in assign {
            for &y in ma_idx.get(&z).into_iter().flatten() {
                if vf2.insert((x, y)) && !vf.contains(&(x, y)) {
                    vf_through_ma = true;
                }
            }
        }
        // ValueFlow(x, y) :- ValueFlow(x, z), ValueFlow(z, y).
        for &(x, z) in &vf {
            for &y in vf_idx.get(&z).into_iter().flatten() {
                vf2.insert((x, y));
            }
        }
        // MemoryAlias(x, w) :- dereference(y, x), ValueAlias(y, z), dereference(z, w).
        for &(y, z) in &va {
            for &x in deref_idx.get(&y).into_iter().flatten() {
                for &w in deref_idx.get(&z).into_iter().flatten() {
                    ma2.insert((x, w));
                }
            }
        }
        // ValueAlias(x, y) :- ValueFlow(z, x), ValueFlow(z, y).
        for targets in vf_idx.values() {
            for &x in targets {
                for &y in targets {
                    va2.insert((x, y));
                }
            }
        }
        // ValueAlias(x, y) :- ValueFlow(z, x), MemoryAlias(z, w), ValueFlow(w, y).
        let mut through_ma = Rel::new();
        for &(z, w) in &ma {
            for &x in vf_idx.get(&z).into_iter().flatten() {
                for &y in vf_idx.get(&w).into_iter().flatten() {
                    through_ma.insert((x, y));
                }
            }
        }
        va_through_ma |= through_ma.iter().any(|t| !va2.contains(t));
        va2.extend(through_ma);
        if (vf2.len(), ma2.len(), va2.len()) == (vf.len(), ma.len(), va.len()) {
            // Every rule is monotone, so equal sizes mean equal relations.
            return (vf, ma, va, vf_through_ma, va_through_ma);
        }
        (vf, ma, va) = (vf2, ma2, va2);
    }
}

fn to_rel(db: &fixlog::Database, name: &str) -> Rel {
    db.relation(name)
        .unwrap_or_else(|| panic!("{name} not kept"))
        .into_iter()
        .map(|t| match t.as_slice() {
            [Datum::Number(a), Datum::Number(b)] => (*a as u32, *b as u32),
            _ => panic!("unexpected tuple {t:?} in {name}"),
        })
        .collect()
}

fn number_tuples(facts: &[(u32, u32)]) -> Vec<Vec<Datum>> {
    facts
        .iter()
        .map(|&(a, b)| vec![Datum::Number(a as i32), Datum::Number(b as i32)])
        .collect()
}

/// Runs `examples/cspa/cspa.dl` on the facts and compares with the naive computation;
/// returns (ValueFlow, MemoryAlias, ValueAlias) sizes.
fn check(assign: &[(u32, u32)], deref: &[(u32, u32)], from_files: bool) -> [usize; 3] {
    let mut program = Fixlog::from_file(example_dir().join("cspa.dl")).unwrap();
    let options = if from_files {
        RunOptions {
            facts_dir: Some(example_dir().join("facts")),
            ..support::options(Some(2))
        }
    } else {
        program.insert("assign", number_tuples(assign)).unwrap();
        program.insert("dereference", number_tuples(deref)).unwrap();
        support::options(Some(2))
    };
    let db = program.run(&options).unwrap_or_else(|e| panic!("{e}"));
    let (vf, ma, va, vf_through_ma, va_through_ma) = naive_cspa(assign, deref);
    assert!(
        vf_through_ma && va_through_ma,
        "the graph does not exercise the rules through MemoryAlias"
    );
    for (name, expected) in [
        ("ValueFlow", &vf),
        ("MemoryAlias", &ma),
        ("ValueAlias", &va),
    ] {
        let got = to_rel(&db, name);
        if &got != expected {
            let missing: Vec<_> = expected.difference(&got).take(5).collect();
            let extra: Vec<_> = got.difference(expected).take(5).collect();
            panic!(
                "{name}: engine has {} tuples, naive {}; missing e.g. {missing:?}, extra e.g. {extra:?}",
                got.len(),
                expected.len()
            );
        }
    }
    [vf.len(), ma.len(), va.len()]
}

/// The bundled facts are the tiny preset's output, and the engine gets them right.
#[test]
fn bundled_example_is_the_tiny_preset() {
    let (assign, deref) = generate(&Params::preset("tiny").unwrap());
    let read = |file: &str| -> Vec<(u32, u32)> {
        std::fs::read_to_string(example_dir().join("facts").join(file))
            .unwrap()
            .lines()
            .map(|l| {
                let (a, b) = l.split_once('\t').unwrap();
                (a.parse().unwrap(), b.parse().unwrap())
            })
            .collect()
    };
    assert_eq!(
        read("assign.facts"),
        assign,
        "regenerate examples/cspa/facts"
    );
    assert_eq!(
        read("dereference.facts"),
        deref,
        "regenerate examples/cspa/facts"
    );
    let sizes = check(&assign, &deref, true);
    assert!(sizes.iter().all(|&n| n > 1000), "sizes {sizes:?}");
}

/// Other seeds and a store-heavy variant (more value flow through memory aliases).
#[test]
fn tiny_graphs_match_naive_cspa() {
    for (seed, store) in [(2, None), (3, None), (4, Some(0.4))] {
        let mut p = Params::preset("tiny").unwrap();
        p.seed = seed;
        if let Some(s) = store {
            p.store = s;
        }
        let (assign, deref) = generate(&p);
        assert_eq!((assign.len(), deref.len()), (p.assign, p.dereference));
        check(&assign, &deref, false);
    }
}

/// The presets reproduce the benchmark's input sizes exactly (checked at 1/100 scale).
#[test]
fn presets_have_the_requested_input_sizes() {
    for name in ["httpd", "linux", "postgresql"] {
        let p = Params::preset(name).unwrap().scaled(0.01);
        let (assign, deref) = generate(&p);
        assert_eq!(
            (assign.len(), deref.len()),
            (p.assign, p.dereference),
            "{name}"
        );
        assert!(assign.iter().all(|(a, b)| a != b));
        // Deterministic for a seed.
        assert_eq!(generate(&p).0, assign);
    }
}

//! Fact generator for the context-sensitive points-to analysis benchmark (CSPA,
//! `examples/cspa/cspa.dl`): writes `assign.facts` and `dereference.facts` shaped like
//! the pointer graphs Graspan extracted from httpd, linux and postgresql, whose files
//! are not available to us.
//!
//! ```text
//! cargo run --release -p fixlog --example cspa_gen -- --preset httpd --out DIR
//! cargo run --release -p fixlog --example cspa_gen -- --preset linux --scale 0.1 --seed 7 --out DIR
//! cargo run --release -p fixlog --example cspa_gen -- --assign 5000 --dereference 15000 --vars 10000 --out DIR
//! ```
//!
//! `assign(a, b)` means `b = a` (the value of `a` flows into `b`); `dereference(p, n)`
//! means `n` is the memory node `*p`. See `docs/cspa.md` for the sizes each preset
//! produces.
//!
//! # The model
//!
//! A program is a ring of *modules* (files/functions) of `cluster` variables each,
//! grouped into *subsystems* of `subsystem` consecutive modules (libraries). Every
//! variable has a *pointer level* (0: data, 1: `T*`, 2: `T**`, ...; shares `levels`),
//! and a module holds one block of variables per level. Assignments only connect
//! variables of one level (type-correct code), so aliasing cannot cascade without end:
//! a pointer of level `k` aliases only pointers of level `k`, and its dereference nodes
//! are values of level `k - 1`.
//!
//! - **Dereferences.** Each `dereference` fact has its own fresh node `n = *p`, one
//!   level below `p`; the pointer `p` is a variable of level >= 1 of a random module,
//!   picked by a Zipf law of exponent `deref_skew` over the block (a few pointers such
//!   as `this`/`request` are dereferenced very often).
//! - **Copies** (the rest of `assign`): `b = a` inside one module, `a` Zipf-distributed
//!   (exponent `skew`: parameters and results feed many locals), `b` uniform (each local
//!   is assigned a few times), so value flow stays short and local; with probability
//!   `cross` `b` lies in a module at geometric distance (calls between neighbouring
//!   functions).
//! - **Hubs.** Every subsystem has `hubs` hub variables (globals, pool/allocator
//!   results, shared context objects) spread over the levels. A share `hub_read` of
//!   `assign` reads a hub into a uniform variable of the subsystem (`v = g`), hubs
//!   picked by a Zipf law of exponent `hub_skew`; `hub_write` writes a variable into a
//!   hub (`g = v`). A hub read by `r` variables makes them `r^2` value aliases, and their
//!   dereference nodes memory aliases: this is where ValueAlias and MemoryAlias get
//!   large while ValueFlow stays a few times `assign`.
//! - **Loads and stores.** A share `mem` of `assign` connects a dereference node with a
//!   variable of the same level in the pointer's module: a share `store` of them are
//!   stores (`*p = v`: `assign(v, n)`), the others loads (`v = *p`: `assign(n, v)`,
//!   `v` uniform). Loads turn memory aliases into value aliases, stores turn them into
//!   value flow.
//!
//! Everything is local to a subsystem (except the few cross-module copies at its
//! edges), so the derived sizes grow about linearly with `--scale` once there are a few
//! subsystems, and small scales predict the full size. Identifiers are shuffled by a
//! random permutation; facts are deduplicated and written sorted. The output depends
//! only on the parameters and the seed (SplitMix64).
//!
//! # Parameters
//!
//! `--preset httpd|linux|postgresql|tiny` sets all of them (the three benchmark presets
//! were calibrated against the derived sizes reported for Graspan's graphs);
//! `--scale F` multiplies `assign`, `dereference` and `vars`; any parameter can then be
//! set explicitly (`--assign N --dereference N --vars N --cluster N --levels
//! 0.4,0.45,0.15 --skew F --deref-skew F --mem F --store F --cross F --subsystem N
//! --hubs N --hub-read F --hub-write F --hub-skew F --seed N`).

use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Binary facts, `(first column, second column)`.
pub type Facts = Vec<(u32, u32)>;

/// SplitMix64: small, fast, deterministic.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x5851_f42d_4c95_7f2d)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 11) as u128 * n as u128) >> 53) as usize
    }

    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Zipf law over `0..n`: rank `i` has weight `(i + 1)^-s` (`s = 0`: uniform).
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(n: usize, s: f64) -> Zipf {
        let mut cdf = Vec::with_capacity(n.max(1));
        let mut total = 0.0;
        for i in 0..n.max(1) {
            total += ((i + 1) as f64).powf(-s);
            cdf.push(total);
        }
        for c in &mut cdf {
            *c /= total;
        }
        Zipf { cdf }
    }

    pub fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cdf
            .partition_point(|&c| c <= u)
            .min(self.cdf.len() - 1)
    }
}

/// The generator's parameters (see the module documentation).
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    /// Number of `assign` facts (distinct).
    pub assign: usize,
    /// Number of `dereference` facts (distinct; one fresh node each).
    pub dereference: usize,
    /// Program variables (dereference nodes and hubs come on top).
    pub vars: usize,
    /// Variables per module.
    pub cluster: usize,
    /// Share of the variables at pointer level 0, 1, 2, ...
    pub levels: Vec<f64>,
    /// Zipf exponent of the source of a copy and of a store.
    pub skew: f64,
    /// Zipf exponent of the pointer of a dereference.
    pub deref_skew: f64,
    /// Share of `assign` that are loads or stores.
    pub mem: f64,
    /// Share of loads and stores that are stores.
    pub store: f64,
    /// Share of copies that go to another module.
    pub cross: f64,
    /// Modules per subsystem.
    pub subsystem: usize,
    /// Hub variables per subsystem.
    pub hubs: usize,
    /// Share of `assign` that read a hub.
    pub hub_read: f64,
    /// Share of `assign` that write a hub.
    pub hub_write: f64,
    /// Zipf exponent of the hub of a hub read or write.
    pub hub_skew: f64,
    pub seed: u64,
}

impl Params {
    /// The presets: input sizes of the GDlog paper's CSPA graphs (rounded as the paper
    /// gives them) and the structure calibrated against its derived sizes.
    pub fn preset(name: &str) -> Option<Params> {
        let httpd = Params {
            assign: 362_000,
            dereference: 1_140_000,
            vars: 724_000,
            cluster: 200,
            levels: vec![0.4, 0.45, 0.15],
            skew: 1.0,
            deref_skew: 1.0,
            mem: 0.1,
            store: 0.1,
            cross: 0.05,
            subsystem: 80,
            hubs: 20,
            hub_read: 0.2,
            hub_write: 0.0,
            hub_skew: 1.0,
            seed: 1,
        };
        Some(match name {
            "httpd" => httpd,
            // Far less aliasing per fact: many more variables (fewer dereferences
            // each), few loads and stores, flatter pointer use, larger subsystems
            // with fewer, weaker hubs.
            "linux" => Params {
                assign: 1_980_000,
                dereference: 7_500_000,
                vars: 19_800_000,
                deref_skew: 0.3,
                mem: 0.03,
                store: 0.2,
                subsystem: 300,
                hubs: 10,
                hub_read: 0.1,
                ..httpd
            },
            "postgresql" => Params {
                assign: 1_200_000,
                dereference: 3_460_000,
                vars: 4_800_000,
                store: 0.2,
                subsystem: 160,
                hub_read: 0.3,
                ..httpd
            },
            // For tests and the bundled example: one subsystem of a few modules.
            "tiny" => Params {
                assign: 400,
                dereference: 1_200,
                vars: 800,
                cluster: 100,
                hubs: 5,
                ..httpd
            },
            _ => return None,
        })
    }

    /// Multiplies the sizes (`assign`, `dereference`, `vars`) by `f`.
    pub fn scaled(mut self, f: f64) -> Params {
        let s = |n: usize| ((n as f64 * f).round() as usize).max(1);
        self.assign = s(self.assign);
        self.dereference = s(self.dereference);
        self.vars = s(self.vars);
        self
    }
}

/// Picks an index with probability proportional to `weights`.
fn pick(rng: &mut Rng, weights: &[f64]) -> usize {
    let total: f64 = weights.iter().sum();
    let mut u = rng.unit() * total;
    for (i, w) in weights.iter().enumerate() {
        if u < *w {
            return i;
        }
        u -= w;
    }
    weights.len() - 1
}

/// Offsets of consecutive blocks of the given sizes.
fn starts(sizes: &[usize]) -> Vec<usize> {
    sizes
        .iter()
        .scan(0, |acc, &n| {
            let s = *acc;
            *acc += n;
            Some(s)
        })
        .collect()
}

/// Generates `(assign, dereference)`: deduplicated, sorted, `assign` without
/// self-loops. `assign` has `p.assign` facts unless the variables are too few to hold
/// that many distinct ones.
pub fn generate(p: &Params) -> (Facts, Facts) {
    let mut rng = Rng::new(p.seed);
    let levels: Vec<f64> = if p.levels.is_empty() {
        vec![1.0]
    } else {
        p.levels.clone()
    };
    let nlevels = levels.len();
    let share: f64 = levels.iter().sum();

    // Modules: `cluster` variables, one block per level.
    let cluster = p.cluster.max(nlevels);
    let modules = p.vars.div_ceil(cluster).max(1);
    let mut block = Vec::with_capacity(nlevels);
    let mut used = 0;
    for (l, w) in levels.iter().enumerate() {
        let rest = nlevels - l - 1;
        let n = if rest == 0 {
            cluster - used
        } else {
            ((w / share * cluster as f64).round() as usize).clamp(1, cluster - used - rest)
        };
        block.push(n);
        used += n;
    }
    let block_start = starts(&block);
    let var = |m: usize, l: usize, r: usize| m * cluster + block_start[l] + r;
    let local: Vec<Zipf> = block.iter().map(|&n| Zipf::new(n, p.skew)).collect();
    let pointer: Vec<Zipf> = block.iter().map(|&n| Zipf::new(n, p.deref_skew)).collect();

    // Subsystems and their hubs (per subsystem, `hub_count[l]` hubs of level `l`).
    let subsystem = p.subsystem.clamp(1, modules);
    let subsystems = modules.div_ceil(subsystem);
    let hub_count: Vec<usize> = levels
        .iter()
        .map(|w| ((p.hubs as f64 * w / share).round() as usize).max(1))
        .collect();
    let hub_start = starts(&hub_count);
    let hubs_per_subsystem: usize = hub_count.iter().sum();
    let hub: Vec<Zipf> = hub_count
        .iter()
        .map(|&n| Zipf::new(n, p.hub_skew))
        .collect();
    let hub_base = modules * cluster;
    let node_base = hub_base + subsystems * hubs_per_subsystem;
    let total = node_base + p.dereference;
    assert!(total <= u32::MAX as usize, "too many variables for 32 bits");

    // Dereference nodes: a fresh node per fact, one level below its pointer.
    let pointer_levels: Vec<f64> = (0..nlevels)
        .map(|l| {
            if l == 0 && nlevels > 1 {
                0.0
            } else {
                levels[l]
            }
        })
        .collect();
    let mut deref = Vec::with_capacity(p.dereference);
    let mut node_at = Vec::with_capacity(p.dereference); // (module, level)
    for i in 0..p.dereference {
        let l = pick(&mut rng, &pointer_levels);
        let m = rng.below(modules);
        deref.push((var(m, l, pointer[l].sample(&mut rng)), node_base + i));
        node_at.push((m, l.saturating_sub(1)));
    }

    let mut assign: HashSet<(usize, usize)> = HashSet::with_capacity(p.assign);
    let mut attempts = 0usize;
    while assign.len() < p.assign && attempts < 100 * p.assign + 1000 {
        attempts += 1;
        let u = rng.unit();
        let (a, b) = if u < p.mem && !deref.is_empty() {
            let i = rng.below(deref.len());
            let node = deref[i].1;
            let (m, l) = node_at[i];
            if rng.unit() < p.store {
                (var(m, l, local[l].sample(&mut rng)), node)
            } else {
                (node, var(m, l, rng.below(block[l])))
            }
        } else if u < p.mem + p.hub_read + p.hub_write {
            let l = pick(&mut rng, &levels);
            let s = rng.below(subsystems);
            let g = hub_base + s * hubs_per_subsystem + hub_start[l] + hub[l].sample(&mut rng);
            let first = s * subsystem;
            let m = first + rng.below(subsystem.min(modules - first));
            let v = var(m, l, rng.below(block[l]));
            if u < p.mem + p.hub_read {
                (g, v)
            } else {
                (v, g)
            }
        } else {
            let l = pick(&mut rng, &levels);
            let m = rng.below(modules);
            let mut to = m;
            if rng.unit() < p.cross {
                let mut d = 1;
                while rng.unit() < 0.5 {
                    d += 1;
                }
                let d = d % modules;
                to = if rng.unit() < 0.5 {
                    (m + d) % modules
                } else {
                    (m + modules - d) % modules
                };
            }
            (
                var(m, l, local[l].sample(&mut rng)),
                var(to, l, rng.below(block[l])),
            )
        };
        if a != b {
            assign.insert((a, b));
        }
    }

    // Scatter the identifiers (Fisher-Yates), then sort.
    let mut perm: Vec<u32> = (0..total as u32).collect();
    for i in (1..total).rev() {
        perm.swap(i, rng.below(i + 1));
    }
    let map = |facts: &mut dyn Iterator<Item = (usize, usize)>| {
        let mut out: Vec<(u32, u32)> = facts.map(|(a, b)| (perm[a], perm[b])).collect();
        out.sort_unstable();
        out.dedup();
        out
    };
    let assign = map(&mut assign.into_iter());
    let deref = map(&mut deref.into_iter());
    (assign, deref)
}

/// Writes facts in Soufflé's format (tab-separated, one a line).
pub fn write_facts(path: &Path, facts: &[(u32, u32)]) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::new(std::fs::File::create(path)?);
    for (a, b) in facts {
        writeln!(w, "{a}\t{b}")?;
    }
    w.flush()
}

const USAGE: &str =
    "usage: cspa_gen [--preset httpd|linux|postgresql|tiny] [--scale F] [--seed N] \
[--assign N] [--dereference N] [--vars N] [--cluster N] [--levels F,F,..] [--skew F] \
[--deref-skew F] [--mem F] [--store F] [--cross F] [--subsystem N] [--hubs N] \
[--hub-read F] [--hub-write F] [--hub-skew F] --out DIR
writes DIR/assign.facts and DIR/dereference.facts (default preset: httpd)";

fn fail(msg: &str) -> ! {
    eprintln!("cspa_gen: {msg}\n{USAGE}");
    std::process::exit(2)
}

fn num<T: std::str::FromStr>(key: &str, value: &str) -> T {
    value
        .parse()
        .unwrap_or_else(|_| fail(&format!("bad value for {key}: {value}")))
}

#[allow(dead_code)] // the tests include this file for `generate`
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "-h" || a == "--help") {
        println!("{USAGE}");
        return;
    }
    let mut preset = "httpd".to_string();
    let mut scale = 1.0;
    let mut out = None;
    let mut settings = Vec::new();
    for pair in args.chunks(2) {
        let key = pair[0].as_str();
        let Some(value) = pair.get(1) else {
            fail(&format!("{key} needs a value"))
        };
        match key {
            "--preset" => preset = value.clone(),
            "--scale" => scale = num(key, value),
            "--out" => out = Some(PathBuf::from(value)),
            _ => settings.push((key, value.as_str())),
        }
    }
    let mut p = Params::preset(&preset)
        .unwrap_or_else(|| fail(&format!("unknown preset {preset}")))
        .scaled(scale);
    for (key, v) in settings {
        match key {
            "--seed" => p.seed = num(key, v),
            "--assign" => p.assign = num(key, v),
            "--dereference" => p.dereference = num(key, v),
            "--vars" => p.vars = num(key, v),
            "--cluster" => p.cluster = num(key, v),
            "--levels" => p.levels = v.split(',').map(|x| num(key, x)).collect(),
            "--skew" => p.skew = num(key, v),
            "--deref-skew" => p.deref_skew = num(key, v),
            "--mem" => p.mem = num(key, v),
            "--store" => p.store = num(key, v),
            "--cross" => p.cross = num(key, v),
            "--subsystem" => p.subsystem = num(key, v),
            "--hubs" => p.hubs = num(key, v),
            "--hub-read" => p.hub_read = num(key, v),
            "--hub-write" => p.hub_write = num(key, v),
            "--hub-skew" => p.hub_skew = num(key, v),
            _ => fail(&format!("unknown option {key}")),
        }
    }
    let out = out.unwrap_or_else(|| fail("--out DIR is required"));
    let (assign, deref) = generate(&p);
    if assign.len() < p.assign {
        eprintln!(
            "cspa_gen: warning: only {} distinct assign facts fit (asked for {}); raise --vars",
            assign.len(),
            p.assign
        );
    }
    let written = std::fs::create_dir_all(&out)
        .and_then(|()| write_facts(&out.join("assign.facts"), &assign))
        .and_then(|()| write_facts(&out.join("dereference.facts"), &deref));
    if let Err(e) = written {
        eprintln!("cspa_gen: {}: {e}", out.display());
        std::process::exit(1);
    }
    eprintln!(
        "cspa_gen: {p:?}\ncspa_gen: wrote {} assign and {} dereference facts to {}",
        assign.len(),
        deref.len(),
        out.display()
    );
}

//! Kernel sources and the one table of kernel names.
//!
//! Kernels are CUDA C++ files under `kernels/`, embedded with `include_str!`.
//! `common.cuh` (row type, comparisons, hashing) is prepended to every module
//! and local `#include "x.cuh"` lines are inlined here, because NVRTC only sees
//! one source string plus the include path of CUB (`<cuda root>/include/cccl`).
//! Modules that work on rows are compiled once per arity (`-DARITY=k`, and for
//! joins `-DAO=.. -DAI=..`); the disk cache key covers source, options and
//! device, so each variant is compiled once per machine.

/// Header files that may be `#include "..."`d by kernel sources.
pub const HEADERS: &[(&str, &str)] = &[
    ("common.cuh", include_str!("../kernels/common.cuh")),
    ("hisa.cuh", include_str!("../kernels/hisa.cuh")),
];

/// One compiled module: file, its source, and the kernels it must define.
pub struct KernelModule {
    pub name: &'static str,
    pub source: &'static str,
    pub functions: &'static [&'static str],
}

pub const SCAN: &str = "scan";
pub const SORT: &str = "sort";
pub const REL: &str = "rel";
pub const HISA: &str = "hisa";
pub const JOIN: &str = "join";
pub const MISC: &str = "misc";
pub const MATCH: &str = "match";

/// The kernel table: every kernel the Rust side launches is listed here.
pub const KERNELS: &[KernelModule] = &[
    KernelModule {
        name: SCAN,
        source: include_str!("../kernels/scan.cu"),
        functions: &[
            "scan_reduce_u32",
            "scan_reduce_flag",
            "scan_reduce_u64",
            "scan_down_u32",
            "scan_down_flag",
            "scan_down_u64",
            "fill_u32",
            "compact_index",
            // bench data only: launched by `Gpu::fill_random` / `Gpu::fill_flags`,
            // which exist with the `bench` feature
            "fill_random",
            "fill_flags",
        ],
    },
    KernelModule {
        name: SORT,
        source: include_str!("../kernels/sort.cu"),
        functions: &[
            "radix_bits",
            "onesweep_hist",
            "onesweep_offsets",
            "onesweep_pass",
        ],
    },
    KernelModule {
        name: REL,
        source: include_str!("../kernels/rel.cu"),
        functions: &[
            "unique_flags",
            "compact_rows",
            "merge_partition",
            "merge_rows",
            "diff_flags_merge",
            "diff_merge_compact",
            "diff_flags_search",
            "merge2_pipe_8",
            "diff2_bpart",
            "diff2_tilea_7",
            "diff2_tilea_4",
            "diff2_tilea_2",
            "diff2_tilea_1",
            "diff2_tilea_u_7",
            "diff2_tilea_u_4",
            "diff2_tilea_u_2",
            "diff2_tilea_u_1",
        ],
    },
    KernelModule {
        name: HISA,
        source: include_str!("../kernels/hisa.cu"),
        functions: &["hisa_key_flags", "hisa_insert", "hisa_lookup"],
    },
    KernelModule {
        name: JOIN,
        source: include_str!("../kernels/join.cu"),
        functions: &[
            "join_count",
            "join_write",
            "join_write_lb",
            "join_write_dedup",
        ],
    },
    KernelModule {
        name: MATCH,
        source: include_str!("../kernels/match.cu"),
        functions: &[
            "match_count",
            "match_write",
            "fwd_degree",
            "fwd_rank_rows",
            "fwd_ranks",
            "fwd_pairs",
            "fwd_offsets",
            "fwd_targets",
            "fwd_longest",
            "tri_count",
            "clique4_count",
        ],
    },
    KernelModule {
        name: MISC,
        source: include_str!("../kernels/misc.cu"),
        functions: &[
            "rows_number",
            "rows_permute",
            "jnew_blocks",
            "col_min_max",
            "prefix_fit",
        ],
    },
];

pub fn module(name: &str) -> Option<&'static KernelModule> {
    KERNELS.iter().find(|m| m.name == name)
}

/// Full NVRTC source of a module: common header + module with local includes inlined.
pub fn assemble(m: &KernelModule) -> String {
    let mut out = String::from(HEADERS[0].1);
    out.push('\n');
    for line in m.source.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("#include \"") {
            let name = rest.trim_end_matches('"');
            if let Some((_, h)) = HEADERS.iter().find(|(n, _)| *n == name) {
                out.push_str(h);
                out.push('\n');
                continue;
            }
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Names of `extern "C" __global__` functions defined in a source text.
pub fn defined_kernels(src: &str) -> Vec<String> {
    let mut v = vec![];
    let mut rest = src;
    while let Some(p) = rest.find("extern \"C\" __global__") {
        rest = &rest[p..];
        let paren = rest.find('(').unwrap_or(rest.len());
        let mut head = &rest[..paren];
        // skip __launch_bounds__(...)
        if head.contains("__launch_bounds__") {
            let close = rest.find(')').unwrap();
            let after = &rest[close + 1..];
            let p2 = after.find('(').unwrap();
            head = &after[..p2];
        }
        let name = head
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .rfind(|s| !s.is_empty())
            .unwrap_or("")
            .to_string();
        v.push(name);
        rest = &rest[1..];
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_kernel_is_defined_and_vice_versa() {
        for m in KERNELS {
            let defined = defined_kernels(m.source);
            for f in m.functions {
                assert!(
                    defined.iter().any(|d| d == f),
                    "{}::{} not defined",
                    m.name,
                    f
                );
            }
            for d in &defined {
                assert!(
                    m.functions.contains(&d.as_str()),
                    "{}::{} missing from KERNELS",
                    m.name,
                    d
                );
            }
        }
    }

    #[test]
    fn includes_are_inlined() {
        for m in KERNELS {
            let s = assemble(m);
            assert!(!s.contains("#include \""), "{}", m.name);
            assert!(s.contains("struct Row"));
        }
        assert!(assemble(module(JOIN).unwrap()).contains("hisa_find"));
    }
}

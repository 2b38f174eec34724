//! GPU self-test: every primitive against the CPU reference, on random inputs
//! and edge cases (empty, all-equal, largest values, sizes that are not
//! multiples of the block size, inputs spanning many blocks / scan levels).
//! Prints PASS/FAIL lines and `N passed, N failed`; exit code 1 on failure.

use fixlog_cuda::cpu::{self, CmpOp, Col, JoinSpec, Operand, Rng};
use fixlog_cuda::{CudaError, Gpu, View};

struct T {
    pass: usize,
    fail: usize,
}
impl T {
    fn check(&mut self, name: &str, ok: bool) {
        if ok {
            self.pass += 1;
        } else {
            self.fail += 1;
            println!("FAIL {name}");
        }
    }
    fn group(&self, name: &str, before: (usize, usize)) {
        let (p, f) = (self.pass - before.0, self.fail - before.1);
        println!(
            "{} {name}: {p} passed, {f} failed",
            if f == 0 { "PASS" } else { "FAIL" }
        );
    }
}

/// Input rows of a given kind: 0 random full range, 1 small range, 2 all equal, 3 largest values.
fn rows(r: &mut Rng, n: usize, a: usize, kind: u32) -> Vec<u32> {
    match kind {
        0 => r.rows(n, a, u32::MAX),
        1 => r.rows(n, a, 3),
        2 => vec![7; n * a],
        _ => r.rows(n, a, 1).into_iter().map(|x| u32::MAX - x).collect(),
    }
}

fn main() -> Result<(), CudaError> {
    let p = fixlog_cuda::probe();
    println!("probe: available={} {}", p.available, p.reason);
    let gpu = Gpu::new(0, None)?;
    let mut t = T { pass: 0, fail: 0 };
    let mut r = Rng::new(42);
    let t0 = std::time::Instant::now();
    gpu.warm_up(&[1, 2, 3, 4, 8])?;
    let cs = gpu.compile_stats();
    println!(
        "kernels: {} compiled ({:.0} ms), {} from disk cache, warm-up {:.2}s",
        cs.compiled,
        cs.compile_ms,
        cs.disk_hits,
        t0.elapsed().as_secs_f64()
    );

    // ---- scan ----
    let b = (t.pass, t.fail);
    for &n in &[
        0usize,
        1,
        255,
        256,
        4095,
        4096,
        4097,
        100_003,
        4096 * 4096 + 5,
        40_000_001,
    ] {
        for kind in 0..3 {
            let v: Vec<u32> = match kind {
                0 => (0..n).map(|_| r.below(1000)).collect(),
                1 => vec![1; n],
                _ => (0..n).map(|_| u32::MAX - r.below(2)).collect(),
            };
            let (want, wt) = cpu::exclusive_scan(&v);
            let buf = gpu.upload(&v, 1)?;
            let out = gpu.alloc_u32(n)?;
            let tot = gpu.exclusive_scan(buf.buf.ptr(), n, out.ptr())?;
            let got = gpu.dtoh::<u32>(out.ptr(), n)?;
            t.check(&format!("scan n={n} kind={kind}"), tot == wt && got == want);
        }
    }
    t.group("exclusive scan", b);

    // ---- compaction ----
    let b = (t.pass, t.fail);
    for &n in &[0usize, 1, 1000, 4097, 1_000_003] {
        for a in [1usize, 2, 3, 8] {
            for fk in 0..3 {
                let v = r.rows(n, a, u32::MAX);
                let flags: Vec<u32> = (0..n)
                    .map(|_| match fk {
                        0 => r.below(2),
                        1 => 0,
                        _ => 5,
                    })
                    .collect();
                let rel = gpu.upload(&v, a)?;
                let fb = gpu.upload(&flags, 1)?;
                let c = gpu.compact(rel.view(), fb.buf.ptr())?;
                t.check(
                    &format!("compact n={n} a={a} flags={fk}"),
                    gpu.download(c.view())? == cpu::compact(&v, a, &flags),
                );
            }
        }
    }
    t.group("stream compaction", b);

    // ---- sort + unique ----
    let b = (t.pass, t.fail);
    for a in 1..=8usize {
        for &n in &[0usize, 1, 2, 1000, 2049, 100_003, 2_000_001] {
            for kind in 0..4 {
                if n > 100_003 && a > 4 && kind > 0 {
                    continue;
                }
                let v = rows(&mut r, n, a, kind);
                let mut rel = gpu.upload(&v, a)?;
                gpu.sort(&mut rel)?;
                let want = cpu::sort(&v, a);
                let got = gpu.download(rel.view())?;
                t.check(&format!("sort a={a} n={n} kind={kind}"), got == want);
                let u = gpu.unique(rel.view())?;
                t.check(
                    &format!("unique a={a} n={n} kind={kind}"),
                    gpu.download(u.view())? == cpu::unique(&want, a),
                );
            }
        }
    }
    // several launches per pass (portion lowered to a few tiles): the digit
    // starts handed from one portion to the next
    for &(a, n, portion) in &[
        (1usize, 300_001usize, 1usize << 16),
        (2, 200_003, 50_000),
        (3, 100_003, 20_000),
        (8, 30_001, 5_000),
    ] {
        gpu.set_sort_portion(portion);
        for kind in [0u32, 1] {
            let v = rows(&mut r, n, a, kind);
            let mut rel = gpu.upload(&v, a)?;
            gpu.sort(&mut rel)?;
            t.check(
                &format!("sort a={a} n={n} portion={portion} kind={kind}"),
                gpu.download(rel.view())? == cpu::sort(&v, a),
            );
        }
        gpu.set_sort_portion(usize::MAX);
    }
    // several onesweep portions (2^28 rows each): two passes, stability across portions
    {
        let n = (1usize << 28) + 4097;
        let v: Vec<u32> = (0..n).map(|_| r.next_u64() as u32 & 0x00FF_00FF).collect();
        let mut cnt = vec![0usize; 1 << 16];
        for &x in &v {
            cnt[((x >> 8) | x) as usize & 0xFFFF] += 1;
        }
        let mut rel = gpu.upload(&v, 1)?;
        let passes = gpu.sort(&mut rel)?;
        let got = gpu.download(rel.view())?;
        let mut ok = passes == 2 && got.len() == n;
        let mut i = 0;
        for (c, &k) in cnt.iter().enumerate() {
            let want = ((c as u32 & 0xFF00) << 8) | (c as u32 & 0xFF);
            ok = ok && got[i..i + k].iter().all(|&x| x == want);
            i += k;
        }
        if !ok {
            let bad = (1..got.len()).find(|&i| got[i - 1] > got[i]);
            println!(
                "  portions: passes {passes}, len {}, first descent at {bad:?} of {n}",
                got.len()
            );
            if let Some(i) = bad {
                println!(
                    "  got[{}..{}] = {:?}",
                    i - 2,
                    i + 3,
                    &got[i - 2..(i + 3).min(n)]
                );
            }
        }
        t.check(&format!("sort across portions n={n}"), ok);
    }
    t.group("radix sort + unique", b);

    // ---- merge + difference ----
    let b = (t.pass, t.fail);
    for a in [1usize, 2, 3, 4, 5, 8] {
        for &(na, nb) in &[
            (0usize, 0usize),
            (0, 100),
            (100, 0),
            (1, 1),
            (2047, 2049),
            (100_000, 3),
            (5, 300_000),
            (1_000_003, 999_999),
        ] {
            for kind in 0..3 {
                let sa = cpu::unique(&cpu::sort(&rows(&mut r, na, a, kind), a), a);
                let sb = cpu::unique(&cpu::sort(&rows(&mut r, nb, a, kind), a), a);
                let (ga, gb) = (gpu.upload(&sa, a)?, gpu.upload(&sb, a)?);
                let m = gpu.merge(ga.view(), gb.view())?;
                t.check(
                    &format!("merge a={a} {na}+{nb} kind={kind}"),
                    gpu.download(m.view())? == cpu::merge(&sa, &sb, a),
                );
                let want = cpu::difference(&sa, &sb, a);
                for method in [false, true] {
                    let d = gpu.difference_with(ga.view(), gb.view(), Some(method))?;
                    t.check(
                        &format!("difference(search={method}) a={a} {na}-{nb} kind={kind}"),
                        gpu.download(d.view())? == want,
                    );
                }
                // fused unique(a ∪ b) − a − b₁ (b₁ = first half of b): one compaction
                let b1 = gb.view().slice(0, gb.n / 2);
                let um = gpu.unique_minus(m.view(), &[ga.view(), b1])?;
                let w = cpu::difference(
                    &cpu::difference(&cpu::unique(&cpu::merge(&sa, &sb, a), a), &sa, a),
                    &sb[..sb.len() / a / 2 * a],
                    a,
                );
                t.check(
                    &format!("unique_minus a={a} {na}+{nb} kind={kind}"),
                    gpu.download(um.view())? == w,
                );
                // a − (a ∪ b) = ∅
                let d = gpu.difference(ga.view(), m.view())?;
                t.check(&format!("difference a-(a+b) a={a} {na}"), d.n == 0);
            }
        }
    }
    // arity 2, large and overlapping (12-bit columns): many tiles per block
    // of the persistent kernels, long runs of b between rows of a and back
    for &(na, nb, mask) in &[
        (12_000_007usize, 11_999_993usize, (1u32 << 12) - 1),
        (3_000_000, 24_000_000, (1 << 12) - 1),
        (24_000_000, 2_000_000, u32::MAX),
    ] {
        let sa = cpu::unique(&cpu::sort(&r.rows(na, 2, mask), 2), 2);
        let sb = cpu::unique(&cpu::sort(&r.rows(nb, 2, mask), 2), 2);
        let (ga, gb) = (gpu.upload(&sa, 2)?, gpu.upload(&sb, 2)?);
        let m = gpu.merge(ga.view(), gb.view())?;
        t.check(
            &format!("merge a=2 {na}+{nb} mask={mask:#x}"),
            gpu.download(m.view())? == cpu::merge(&sa, &sb, 2),
        );
        let want = cpu::difference(&sa, &sb, 2);
        let d = gpu.difference_with(ga.view(), gb.view(), Some(false))?;
        t.check(
            &format!("difference a=2 {na}-{nb} mask={mask:#x}"),
            gpu.download(d.view())? == want,
        );
        let d = gpu.difference(ga.view(), m.view())?;
        t.check(&format!("difference a-(a+b) a=2 {na}"), d.n == 0);
        // a starting at an odd row: 8-byte but not 16-byte aligned
        let d = gpu.difference_with(ga.view().slice(1, ga.n), gb.view(), Some(false))?;
        t.check(
            &format!("difference a[1..]-b a=2 {na}-{nb} mask={mask:#x}"),
            gpu.download(d.view())? == cpu::difference(&sa[2..], &sb, 2),
        );
    }
    // unique(a) − b₁ − b₂ − b₃ with many equal rows in a (runs across tile
    // edges), b₁ dense (more than 16 times a in the first two cases: not
    // fused with unique), b₂ sparse, b₃ empty, in three orders; and unique
    // of an 8- but not 16-byte aligned view
    for &(na, mask, nd, dmask) in &[
        (20_000usize, 255u32, 1_000_000usize, 1023u32),
        (100_003, 255, 3_000_000, 4095),
        (4_000_037, 1023, 2_000_000, 4095),
    ] {
        let raw = r.rows(na, 2, mask);
        let sa = cpu::sort(&raw, 2);
        let dense = cpu::unique(&cpu::sort(&r.rows(nd, 2, dmask), 2), 2);
        let sparse = cpu::unique(&cpu::sort(&r.rows(na / 3, 2, mask), 2), 2);
        let ga = gpu.upload(&sa, 2)?;
        let (gd, gs) = (gpu.upload(&dense, 2)?, gpu.upload(&sparse, 2)?);
        let ge = gpu.empty(2)?;
        let want = cpu::difference(
            &cpu::difference(&cpu::unique(&sa, 2), &dense, 2),
            &sparse,
            2,
        );
        for order in [[&gd, &gs, &ge], [&gs, &ge, &gd], [&ge, &gd, &gs]] {
            let bs: Vec<View> = order.iter().map(|b| b.view()).collect();
            let um = gpu.unique_minus(ga.view(), &bs)?;
            t.check(
                &format!("unique_minus a=2 {na} dup-heavy, dense/sparse/empty b"),
                gpu.download(um.view())? == want,
            );
        }
        let u = gpu.unique(ga.view().slice(1, ga.n))?;
        t.check(
            &format!("unique a=2 {na} from row 1"),
            gpu.download(u.view())? == cpu::unique(&sa[2..], 2),
        );
        // The same over the rows' own buffer (from 2^20 rows: compacted in place).
        for order in [[&gd, &gs, &ge], [&ge, &gs, &gd]] {
            let bs: Vec<View> = order.iter().map(|b| b.view()).collect();
            let um = gpu.unique_minus_in_place(gpu.copy(ga.view())?, &bs)?;
            t.check(
                &format!("unique_minus_in_place a=2 {na} dup-heavy, dense/sparse/empty b"),
                gpu.download(um.view())? == want,
            );
        }
        let u = gpu.unique_in_place(gpu.copy(ga.view().slice(1, ga.n))?)?;
        t.check(
            &format!("unique_in_place a=2 {na} from row 1"),
            gpu.download(u.view())? == cpu::unique(&sa[2..], 2),
        );
        // Sorted in halves from the unsorted rows; declined only where a run is more
        // than 16 times denser than a half.
        let gu = gpu.upload(&cpu::unique(&sa, 2), 2)?;
        for (order, all_gone) in [
            ([&gd, &gs, &ge], false),
            ([&ge, &gs, &gd], false),
            ([&gu, &gd, &gs], true),
        ] {
            let bs: Vec<View> = order.iter().map(|b| b.view()).collect();
            let denser = bs.iter().any(|b| b.n > 16 * (na / 2));
            let got = gpu.sort_unique_minus_halves(gpu.upload(&raw, 2)?, &bs)?;
            let ok = match got {
                Ok(um) => {
                    let want = if all_gone { Vec::new() } else { want.clone() };
                    !denser && gpu.download(um.view())? == want
                }
                Err(back) => denser && back.n == na,
            };
            t.check(
                &format!("sort_unique_minus_halves a=2 {na} dup-heavy (denser run: {denser})"),
                ok,
            );
        }
    }
    // Sorted in halves where the sort takes an odd number of passes (the second
    // column below 2^8: three digits), with and without a run to subtract.
    {
        let raw: Vec<u32> = r
            .rows(3_000_001, 2, 0xffff)
            .chunks(2)
            .flat_map(|p| [p[0], p[1] & 255])
            .collect();
        let u = cpu::unique(&cpu::sort(&raw, 2), 2);
        // Every third row of the result, plus rows it does not hold.
        let mut b: Vec<u32> = u.chunks(2).step_by(3).flatten().copied().collect();
        b.extend((0..1000u32).flat_map(|i| [i, 256 + i]));
        let b = cpu::unique(&cpu::sort(&b, 2), 2);
        let gb = gpu.upload(&b, 2)?;
        for bs in [vec![], vec![gb.view()]] {
            let want = if bs.is_empty() {
                u.clone()
            } else {
                cpu::difference(&u, &b, 2)
            };
            let got = gpu.sort_unique_minus_halves(gpu.upload(&raw, 2)?, &bs)?;
            let ok = match got {
                Ok(um) => gpu.download(um.view())? == want,
                Err(_) => false,
            };
            t.check(
                &format!("sort_unique_minus_halves a=2 odd passes, {} runs", bs.len()),
                ok,
            );
        }
    }
    // Merges that give back their inputs' memory piece by piece (crate::vmm): the
    // inputs are themselves merges of at least 256 MiB (mapped), the result must be
    // the plain merge, and the memory in use may grow by about a chunk, not by the
    // output's size.
    for a in [2usize, 3] {
        let n = if a == 2 { 40_000_000usize } else { 27_000_000 };
        // four sorted sets: rows (i, s, ...) for i < n, set s = 0..4
        let set = |s: u32| -> Vec<u32> {
            let mut v = Vec::with_capacity(n * a);
            for i in 0..n as u32 {
                v.push(i);
                v.push(s);
                if a == 3 {
                    v.push(i ^ s);
                }
            }
            v
        };
        let sets: Vec<Vec<u32>> = (0..4).map(set).collect();
        let g: Vec<_> = sets
            .iter()
            .map(|s| gpu.upload(s, a))
            .collect::<Result<_, _>>()?;
        let mut m1 = gpu.merge_releasing(g[0].view(), g[1].view(), |_, _| {})?;
        let mut m2 = gpu.merge_releasing(g[2].view(), g[3].view(), |_, _| {})?;
        drop(g);
        let want = cpu::merge(
            &cpu::merge(&sets[0], &sets[1], a),
            &cpu::merge(&sets[2], &sets[3], a),
            a,
        );
        drop(sets);
        let before = gpu.pool_stats().in_use;
        gpu.reset_memory_peaks();
        let (v1, v2) = (m1.view(), m2.view());
        let row = a * 4;
        let m = gpu.merge_releasing(v1, v2, |i, j| {
            m1.buf.release_below(i * row);
            m2.buf.release_below(j * row);
        })?;
        let grew = gpu.memory_peaks().1.saturating_sub(before);
        drop((m1, m2));
        let out = m.n * row;
        let chunk = (out / 16).max(8 * fixlog_cuda::vmm::PIECE);
        t.check(
            &format!("merge releasing inputs a={a} {n}x4 (grew {grew} B, output {out} B)"),
            gpu.download(m.view())? == want && grew <= chunk + 3 * fixlog_cuda::vmm::PIECE,
        );
        if a == 2 {
            // Compacted in place over a buffer mapped piece by piece, which keeps only
            // the pieces the rows left touch.
            let b: Vec<u32> = (0..n as u32 / 2).flat_map(|i| [i, 0]).collect();
            let gb = gpu.upload(&b, 2)?;
            let left = cpu::difference(&want, &b, 2);
            let r = gpu.unique_minus_in_place(m, &[gb.view()])?;
            let (held, rows) = (r.buf.capacity(), r.n * 8);
            t.check(
                &format!("unique_minus_in_place over a mapped merge ({held} B for {rows} B)"),
                gpu.download(r.view())? == left && held < rows + fixlog_cuda::vmm::PIECE,
            );
        }
    }
    // Spare pieces (crate::vmm): a dropped mapped buffer's pieces are kept for the
    // next one, held but not in use; a pool allocation that would take what is held
    // past the limit releases them first.
    if gpu.maps_pieces() {
        let n = 24_000_000usize;
        let x: Vec<u32> = (0..n as u32).flat_map(|i| [2 * i, 0]).collect();
        let y: Vec<u32> = (0..n as u32).flat_map(|i| [2 * i + 1, 0]).collect();
        let (gx, gy) = (gpu.upload(&x, 2)?, gpu.upload(&y, 2)?);
        let m = gpu.merge_releasing(gx.view(), gy.view(), |_, _| {})?;
        drop((gx, gy));
        let (with, mapped) = (gpu.pool_stats().in_use, m.buf.capacity());
        drop(m);
        let (after, spare, limit) = (
            gpu.pool_stats().in_use,
            gpu.spare_piece_bytes(),
            gpu.pool_stats().limit,
        );
        t.check(
            &format!("spare pieces kept, not in use ({spare} B spare, {mapped} B mapped)"),
            spare > 0 && spare <= limit / 16 && after + mapped <= with,
        );
        // A limit whose sixteenth keeps every spare, and an allocation that fits
        // beside what is in use but not beside the spares too.
        let tight = after + 16 * spare;
        gpu.set_pool_limit(tight);
        let kept = gpu.spare_piece_bytes();
        let big = gpu.alloc(tight - after - spare / 2);
        t.check(
            &format!("spares released for an allocation ({kept} B kept)"),
            big.is_ok() && kept == spare && gpu.spare_piece_bytes() == 0,
        );
        drop(big);
        gpu.set_pool_limit(limit);
        // A dropped buffer is parked with its pieces mapped; the next buffer of at
        // most as many pieces takes its range over and uses those pieces (no new
        // ones), and the rows it writes there are right.
        let (gx, gy) = (gpu.upload(&x, 2)?, gpu.upload(&y, 2)?);
        let first = gpu.merge_releasing(gx.view(), gy.view(), |_, _| {})?;
        let (va, mapped) = (first.buf.ptr(), first.buf.capacity());
        drop(first);
        let (spare, in_use) = (gpu.spare_piece_bytes(), gpu.pool_stats().in_use);
        let again = gpu.merge_releasing(gx.view(), gy.view(), |_, _| {})?;
        let taken = spare.saturating_sub(gpu.spare_piece_bytes());
        let grew = gpu.pool_stats().in_use.saturating_sub(in_use);
        let want = cpu::merge(&x, &y, 2);
        t.check(
            &format!(
                "parked range taken over ({taken} B of spares for {mapped} B, in use +{grew} B)"
            ),
            again.buf.ptr() == va
                && again.buf.capacity() == mapped
                && taken == mapped
                && grew >= mapped
                && gpu.download(again.view())? == want,
        );
        // Dropped again: parked, and released with every other spare.
        drop(again);
        gpu.release_spare_pieces();
        t.check(
            &format!(
                "parked ranges released ({} B spare)",
                gpu.spare_piece_bytes()
            ),
            gpu.spare_piece_bytes() == 0,
        );
    }
    t.group("merge + set difference", b);

    // ---- HISA ----
    let b = (t.pass, t.fail);
    for a in [1usize, 2, 3, 4, 8] {
        for kc in 1..=a.min(3) {
            for &n in &[0usize, 1, 1000, 300_001] {
                for kind in 0..3 {
                    let v = cpu::sort(&rows(&mut r, n, a, kind), a);
                    let rel = gpu.upload(&v, a)?;
                    let h = gpu.build_hisa(rel, kc)?;
                    let mut keys = vec![];
                    for q in 0..2000usize {
                        if n > 0 && q % 2 == 0 {
                            let i = r.below(n as u32) as usize;
                            keys.extend_from_slice(&v[i * a..i * a + kc]);
                        } else {
                            keys.extend((0..kc).map(|_| r.below(5)));
                        }
                    }
                    let got = gpu.hisa_lookup(&h, &keys)?;
                    let ok = keys.chunks(kc).zip(&got).all(|(k, &(gb, ge))| {
                        let (wb, we) = cpu::key_range(&v, a, k);
                        (wb as u32, we as u32) == (gb, ge)
                    });
                    t.check(
                        &format!("hisa a={a} kc={kc} n={n} kind={kind} keys={}", h.nkeys),
                        ok,
                    );
                }
            }
        }
    }
    t.group("HISA build + range lookup", b);

    // ---- join ----
    let b = (t.pass, t.fail);
    let specs: Vec<(usize, usize, JoinSpec)> = vec![
        // path(x,z) :- delta(x,y), edge(y,z)
        (
            2,
            2,
            JoinSpec::new(&[1], &[Col::Outer(0), Col::Inner(1)], &[]),
        ),
        // r(x,y,w) :- o(x,y,z), i(z,w), x != w, w < 1000
        (
            3,
            2,
            JoinSpec::new(
                &[2],
                &[Col::Outer(0), Col::Outer(1), Col::Inner(1)],
                &[
                    (Col::Outer(0), CmpOp::Ne, Operand::Col(Col::Inner(1))),
                    (Col::Inner(1), CmpOp::Lt, Operand::Const(1000)),
                ],
            ),
        ),
        // r(a) :- o(a), i(a,b,c), c >= b
        (
            1,
            3,
            JoinSpec::new(
                &[0],
                &[Col::Inner(2), Col::Outer(0)],
                &[(Col::Inner(2), CmpOp::Ge, Operand::Col(Col::Inner(1)))],
            ),
        ),
        // two-column key
        (
            4,
            3,
            JoinSpec::new(
                &[3, 1],
                &[Col::Inner(2), Col::Outer(0), Col::Outer(2), Col::Inner(0)],
                &[],
            ),
        ),
    ];
    for (ao, ai, spec) in &specs {
        for &(no, ni, range) in &[
            (0usize, 100usize, 50u32),
            (100, 0, 50),
            (1, 1, 1),
            (10_000, 5000, 2000),
            (1_000_003, 300_000, 200_000),
            (2000, 2000, 3),
        ] {
            let ov = r.rows(no, *ao, range);
            let iv = cpu::sort(&r.rows(ni, *ai, range), *ai);
            let want = cpu::join(&ov, *ao, &iv, *ai, spec);
            let outer = gpu.upload(&ov, *ao)?;
            let h = gpu.build_hisa(gpu.upload(&iv, *ai)?, spec.kc as usize)?;
            let got = gpu.join(outer.view(), &h, spec)?;
            t.check(
                &format!(
                    "join {ao}x{ai} kc={} filters={} {no}x{ni} -> {}",
                    spec.kc,
                    spec.nfilt,
                    want.len() / spec.nout as usize
                ),
                gpu.download(got.view())? == want,
            );
            // join_dedup: the same distinct tuples, never more rows; outer rows
            // sorted too (as TC's delta is), so repeats fall in one block
            let nout = spec.nout as usize;
            let set = |v: &[u32]| cpu::unique(&cpu::sort(v, nout), nout);
            let want_set = set(&want);
            for sorted in [false, true] {
                let ov2 = if sorted {
                    cpu::sort(&ov, *ao)
                } else {
                    ov.clone()
                };
                let outer2 = gpu.upload(&ov2, *ao)?;
                let got = gpu.join_dedup(outer2.view(), &h, spec)?;
                let g = gpu.download(got.view())?;
                t.check(
                    &format!(
                        "join_dedup {ao}x{ai} kc={} filters={} {no}x{ni} sorted={sorted} -> {} of {} rows",
                        spec.kc,
                        spec.nfilt,
                        g.len() / nout,
                        want.len() / nout
                    ),
                    g.len() <= want.len() && set(&g) == want_set,
                );
            }
        }
    }
    // heavy repeats: ~100 matches per outer row over 500 values, ~20M outputs
    {
        let spec = &specs[0].2;
        let ov = cpu::sort(&r.rows(200_000, 2, 500), 2);
        let iv = cpu::sort(&r.rows(50_000, 2, 500), 2);
        let want = cpu::join(&ov, 2, &iv, 2, spec);
        let outer = gpu.upload(&ov, 2)?;
        let h = gpu.build_hisa(gpu.upload(&iv, 2)?, 1)?;
        let got = gpu.download(gpu.join_dedup(outer.view(), &h, spec)?.view())?;
        let set = |v: &[u32]| cpu::unique(&cpu::sort(v, 2), 2);
        t.check(
            &format!(
                "join_dedup heavy repeats: {} of {} rows kept",
                got.len() / 2,
                want.len() / 2
            ),
            got.len() < want.len() && set(&got) == set(&want),
        );
    }
    t.group("two-pass join", b);

    // ---- pool ----
    let b = (t.pass, t.fail);
    let s0 = gpu.pool_stats();
    gpu.set_pool_limit(s0.in_use + (64 << 20));
    let big = gpu.alloc(1 << 30);
    t.check(
        "pool: allocation beyond limit is an OutOfMemory error",
        matches!(big, Err(CudaError::OutOfMemory { .. })),
    );
    gpu.set_pool_limit(s0.limit);
    let v = r.rows(1 << 22, 2, u32::MAX);
    let rel = gpu.upload(&v, 2)?;
    // the sort needs a second 32 MiB buffer: allow 8 MiB more than is in use now
    gpu.set_pool_limit(gpu.pool_stats().in_use + (8 << 20));
    let res = gpu.sort_unique(rel);
    if let Err(e) = &res {
        println!("  (expected) {e}");
    }
    t.check(
        "pool: sort beyond limit is an error, not a crash",
        matches!(res, Err(CudaError::OutOfMemory { .. })),
    );
    gpu.set_pool_limit(s0.limit);
    gpu.sync()?;
    // steady state: repeated identical work takes no more memory from the device
    // (with the driver's stream-ordered allocator, which reuses what is freed, every
    // request is an allocation of that allocator: the memory it holds must not grow;
    // with the pool's own cache, no new device allocation at all)
    let v = r.rows(1 << 20, 2, 1 << 16);
    let mut held_after_first = 0;
    for i in 0..4 {
        let before = gpu.pool_stats().raw_allocs;
        let mut rel = gpu.upload(&v, 2)?;
        gpu.sort(&mut rel)?;
        let u = gpu.unique(rel.view())?;
        let m = gpu.merge(u.view(), rel.view())?;
        let d = gpu.difference(m.view(), u.view())?;
        drop((u, m, d, rel));
        gpu.sync()?;
        let held = gpu.memory_peaks().0;
        if i == 0 {
            held_after_first = held;
        } else {
            let s = gpu.pool_stats();
            t.check(
                &format!("pool: no more memory held in steady-state round {i}"),
                held <= held_after_first && (s.cached == 0 || s.raw_allocs == before),
            );
        }
    }
    t.group("memory pool", b);

    let s = gpu.pool_stats();
    println!(
        "pool: high-water {:.1} MiB, {} device allocations, {} reuses",
        s.high_water as f64 / 1048576.0,
        s.raw_allocs,
        s.reuses
    );
    println!(
        "{} passed, {} failed ({:.1}s)",
        t.pass,
        t.fail,
        t0.elapsed().as_secs_f64()
    );
    if t.fail > 0 {
        std::process::exit(1);
    }
    Ok(())
}

//! Node counts of simplified maps: the total over a fixed sample of realistic maps
//! (`affine::gen::realistic_maps`) must not grow (a ceiling recorded when the last
//! size-reducing rule landed), and chains of three reshapes must simplify to no more than the
//! direct reshape. Reports (ignored): results the e-graph finds smaller than the rules', and
//! a quick throughput figure for A/B comparisons.

use affine::gen::realistic_maps;
use affine::IndexingMap;

/// Maps per seed in the sample.
const MAPS: usize = 2048;
/// Seeds of the sample (the simplify bench draws seed 7).
const SEEDS: [u64; 4] = [7, 11, 23, 1234];

fn nodes(m: &IndexingMap) -> u64 {
    m.results().iter().map(|e| u64::from(e.size())).sum::<u64>()
        + m.constraints()
            .iter()
            .map(|c| u64::from(c.expr.size()))
            .sum::<u64>()
}

/// Totals over the sample: (nodes before, nodes after simplification).
fn totals() -> (u64, u64) {
    let (mut before, mut after) = (0, 0);
    for seed in SEEDS {
        for m in realistic_maps(seed, MAPS) {
            before += nodes(&m);
            after += nodes(&m.simplified());
        }
    }
    (before, after)
}

#[test]
fn realistic_node_counts_do_not_grow() {
    let (before, after) = totals();
    println!("realistic maps: {before} nodes before, {after} after simplification");
    // The total since the simplifier's last size-reducing change (floordiv/mod of negated
    // dividends, quotients absorbed into quotients, nested recombination looked up from the
    // whole dividend; the residue of a constant with a single term in floordiv_gcd): 291,319
    // before them.
    const CEILING: u64 = 271_591;
    assert!(
        after <= CEILING,
        "simplified realistic maps grew: {after} > {CEILING}"
    );
}

/// Results where the e-graph finds a smaller form than the rules (a report, not a check:
/// `cargo nextest run -p affine --all-features smaller_forms -- --ignored --nocapture`).
#[test]
#[ignore = "report"]
fn smaller_forms_found_by_the_egraph() {
    let limits = affine::egraph::Limits::default();
    let mut shown = 0;
    for m in realistic_maps(7, 512) {
        let s = m.simplified();
        let e = affine::egraph::simplify_map(&s, &limits);
        for (a, b) in s.results().iter().zip(e.results()) {
            if b.size() < a.size() && shown < 60 {
                shown += 1;
                println!(
                    "{} nodes: {a}\n{} nodes: {b}\n  in {s}\n",
                    a.size(),
                    b.size()
                );
            }
        }
    }
}

fn linearize(index: &[affine::Expr], shape: &[i64]) -> affine::Expr {
    let mut stride = 1i64;
    let mut acc = affine::Expr::constant(0);
    for (i, n) in index.iter().zip(shape).rev() {
        acc = acc + *i * stride;
        stride *= n;
    }
    acc
}

fn delinearize(l: affine::Expr, shape: &[i64]) -> Vec<affine::Expr> {
    let mut stride: i64 = shape.iter().product();
    let mut out = Vec::new();
    for (k, &n) in shape.iter().enumerate() {
        stride /= n;
        let q = l.floor_div(affine::Expr::constant(stride));
        out.push(if k == 0 {
            q
        } else {
            q.modulo(affine::Expr::constant(n))
        });
    }
    out
}

/// Chains of three reshapes (half regrouping one list of factors, half through shapes whose
/// factors do not line up) simplify to no more nodes than the direct reshape from the first
/// shape to the last: the identity, a single `floordiv`/`mod`, or the direct delinearization.
#[test]
fn three_step_reshape_chains_collapse() {
    let mut rng = affine::gen::Rng::new(99);
    let factors = [2i64, 3, 4, 5, 8];
    let mut bad = Vec::new();
    for _ in 0..400 {
        let n = rng.range_i64(3, 5) as usize;
        let atoms: Vec<i64> = (0..n).map(|_| factors[rng.below(5) as usize]).collect();
        let group = |rng: &mut affine::gen::Rng| {
            let mut s = Vec::new();
            let mut cur = 1;
            for (i, &a) in atoms.iter().enumerate() {
                cur *= a;
                if i + 1 == atoms.len() || rng.chance(1, 2) {
                    s.push(cur);
                    cur = 1;
                }
            }
            s
        };
        // Half the chains regroup one list of factors; the others pass through shapes of the
        // same size whose factors do not line up (`[6, 4]` to `[4, 6]`).
        let mixed = rng.chance(1, 2);
        let any = |rng: &mut affine::gen::Rng| {
            if !mixed {
                return group(rng);
            }
            let mut rest: i64 = atoms.iter().product();
            let mut s = Vec::new();
            for f in [2i64, 3, 4, 5, 6, 8, 10, 12, 16] {
                if rest % f == 0 && rest > f && rng.chance(1, 3) {
                    s.push(f);
                    rest /= f;
                }
            }
            s.push(rest);
            s
        };
        let shapes = [any(&mut rng), any(&mut rng), any(&mut rng), any(&mut rng)];
        let dims: Vec<affine::Interval> = shapes[0]
            .iter()
            .map(|&x| affine::Interval::new(0, x - 1))
            .collect();
        let mut index: Vec<affine::Expr> = (0..dims.len())
            .map(|i| affine::Expr::dim(i as u32))
            .collect();
        for w in shapes.windows(2) {
            index = delinearize(linearize(&index, &w[0]), &w[1]);
        }
        let mut m = IndexingMap::new(dims.clone(), vec![], vec![], index, vec![]).unwrap();
        m.simplify();
        // The direct reshape from the first shape to the last.
        let direct: Vec<affine::Expr> = delinearize(
            linearize(
                &(0..dims.len())
                    .map(|i| affine::Expr::dim(i as u32))
                    .collect::<Vec<_>>(),
                &shapes[0],
            ),
            &shapes[3],
        );
        let mut d = IndexingMap::new(dims, vec![], vec![], direct, vec![]).unwrap();
        d.simplify();
        if nodes(&m) > nodes(&d) {
            bad.push(format!("{shapes:?}\n  chain:  {m}\n  direct: {d}"));
        }
    }
    assert!(
        bad.is_empty(),
        "chains larger than the direct reshape:\n{}",
        bad.join("\n")
    );
}

/// Simplifier throughput on the bench's maps (a quick A/B aid; the criterion bench is
/// `cargo bench -p hloc-benches --bench simplify -- realistic`).
#[test]
#[ignore = "report"]
fn quick_throughput() {
    let maps = realistic_maps(7, 256);
    let mut best = f64::MAX;
    let reps: usize = std::env::var("QT_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    for _ in 0..reps {
        let start = std::time::Instant::now();
        for _ in 0..20 {
            for m in &maps {
                std::hint::black_box(m.simplified());
            }
        }
        best = best.min(start.elapsed().as_secs_f64());
    }
    println!("best: {:.0} maps/s", (20 * maps.len()) as f64 / best);
}

//! Tile-size search with toy cost functions: hand-derived answers on small fusions, and on
//! random fusions the same answer as an independent brute force over every candidate
//! (deterministic, first cheapest in lexicographic order), within the budget.

use crate::support::fusions::random_fusion;
use affine::gen::Rng;
use tiling::search::{candidate_sizes, search, Budget, Candidate, TileCost};

/// Prefers the largest root tile.
struct Largest;
impl TileCost for Largest {
    fn cost(&self, c: &Candidate<'_>) -> Option<f64> {
        Some(-(c.tile_sizes.iter().product::<i64>() as f64))
    }
}

/// Rejects everything.
struct Nothing;
impl TileCost for Nothing {
    fn cost(&self, _: &Candidate<'_>) -> Option<f64> {
        None
    }
}

/// A toy model: programs near 6, then small footprints; ties are common.
struct Toy;
impl TileCost for Toy {
    fn cost(&self, c: &Candidate<'_>) -> Option<f64> {
        Some((c.num_programs - 6).abs() as f64 * 100.0 + (c.footprint_bytes / 64) as f64)
    }
}

fn analysis(text: &str) -> (hlo::Module, String) {
    (hlo::parse_module(text).expect("module"), "f".to_string())
}

const RESHAPE: &str = "HloModule m\nfused {\n  p0 = f32[4,6] parameter(0)\n  ROOT r = f32[24] reshape(p0)\n}\nENTRY e {\n  x = f32[4,6] parameter(0)\n  ROOT f = f32[24] fusion(x), kind=kLoop, calls=fused\n}\n";

#[test]
fn constraints_and_budget_filter_candidates() {
    let (m, f) = analysis(RESHAPE);
    let a = tiling::analyze(&m.instr(&f).unwrap()).unwrap();
    // Candidates 1, 2, 4, 8, 16, 24; exact tiles need t | 6 or 6 | t: 1, 2, 24.
    assert_eq!(candidate_sizes(24), vec![1, 2, 4, 8, 16, 24]);
    let best = search(&a, &Budget::default(), &Largest).unwrap().unwrap();
    assert_eq!(best.tile_sizes, vec![24]);
    assert_eq!((best.visited, best.priced), (6, 3));
    let small = Budget {
        max_tile_elements: Some(12),
        ..Budget::default()
    };
    let best = search(&a, &small, &Largest).unwrap().unwrap();
    assert_eq!(best.tile_sizes, vec![2]);
    assert_eq!(best.tiled.num_programs(), 12);
    let none = Budget {
        min_programs: Some(25),
        ..Budget::default()
    };
    assert!(search(&a, &none, &Largest).unwrap().is_none());
    assert!(search(&a, &Budget::default(), &Nothing).unwrap().is_none());
}

/// Every candidate vector, in lexicographic order.
fn all_candidates(dims: &[i64]) -> Vec<Vec<i64>> {
    let mut out = vec![Vec::new()];
    for &d in dims {
        out = out
            .into_iter()
            .flat_map(|p| {
                candidate_sizes(d).into_iter().map(move |s| {
                    let mut q = p.clone();
                    q.push(s);
                    q
                })
            })
            .collect();
    }
    out
}

#[test]
fn search_matches_brute_force_on_random_fusions() {
    let (mut searched, mut found) = (0, 0);
    for seed in 0..120u64 {
        let mut rng = Rng::new(seed);
        let text = random_fusion(&mut rng, true);
        let module = hlo::parse_module(&text).unwrap();
        let Ok(a) = tiling::analyze(&module.instr("f").unwrap()) else {
            continue;
        };
        searched += 1;
        let budget = Budget {
            max_footprint_bytes: Some(rng.range_i64(16, 400)),
            ..Budget::default()
        };
        let got = search(&a, &budget, &Toy).unwrap();
        // The brute force: tiled computations for every admitted candidate.
        let mut want: Option<(Vec<i64>, f64)> = None;
        for sizes in all_candidates(a.root_dims()) {
            if !a.constraints().holds(&sizes).unwrap() {
                continue;
            }
            let tiled = a.tiled(&sizes).unwrap();
            let bytes: i64 = tiled
                .instructions
                .iter()
                .map(|t| {
                    let ti = a.instructions().iter().find(|x| x.name == t.name).unwrap();
                    t.tile_sizes.iter().product::<i64>() * ti.element_bytes
                })
                .sum();
            // Two symbolic tiles of one instruction that agree print once in the tiled
            // computation but count twice in the search's footprint.
            let dup: i64 = a
                .instructions()
                .iter()
                .map(|ti| {
                    let t = ti
                        .tile
                        .evaluate(&sizes, &vec![0; ti.tile.rt_vars().len()])
                        .unwrap();
                    t.sizes.iter().product::<i64>() * ti.element_bytes
                })
                .sum();
            assert!(dup >= bytes, "seed {seed}");
            if dup > budget.max_footprint_bytes.unwrap() {
                continue;
            }
            let cost = (tiled.num_programs() - 6).abs() as f64 * 100.0 + (dup / 64) as f64;
            if want.as_ref().is_none_or(|(_, c)| cost < *c) {
                want = Some((sizes, cost));
            }
        }
        match (&got, &want) {
            (None, None) => {}
            (Some(g), Some((s, c))) => {
                found += 1;
                assert_eq!(&g.tile_sizes, s, "seed {seed}:\n{text}");
                assert_eq!(g.cost, *c, "seed {seed}");
                assert_eq!(g.tiled, a.tiled(s).unwrap(), "seed {seed}");
            }
            _ => panic!(
                "seed {seed}:\n{text}\nsearch {:?}, brute force {want:?}",
                got.map(|g| g.tile_sizes)
            ),
        }
        // Deterministic.
        let again = search(&a, &budget, &Toy).unwrap();
        assert_eq!(again.map(|g| g.tile_sizes), got.map(|g| g.tile_sizes));
    }
    eprintln!("{searched} fusions searched, {found} with a tiling in budget");
    assert!(
        searched > 80 && found > 40,
        "{searched} searched, {found} found"
    );
}

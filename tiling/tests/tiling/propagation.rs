//! Tile propagation against the symbolic tile analysis and brute force, on random small
//! fusions: from the symbolic root tile, every instruction's tiles op by op
//! (`tiling::propagate::to_operands`, instruction after instruction); for every distinct
//! (instruction, map from the root) of `tiling::analyze`, one propagated tile of that
//! instruction covers exactly the elements the map reads for every root tile (all tile
//! sizes, all tile ids; by enumeration), and the analysis's symbolic tile is exact for the
//! same map (so both cover the same elements).

use std::collections::HashMap;

use crate::support::fusions::random_fusion;
use crate::support::oracle::check_exact;
use crate::support::propagation::check_propagation;
use affine::gen::Rng;
use tiling::propagate::{to_operands, Tile, TilingSpace};

/// Points the oracles may evaluate per tile.
const BUDGET: usize = 40_000;

/// Every instruction's propagated tiles (deduplicated), and the instructions some operand
/// tile of which could not be propagated.
fn propagate_fusion(
    module: &hlo::Module,
    fusion: &hlo::InstrRef<'_>,
    space: &mut TilingSpace,
) -> (HashMap<hlo::InstrId, Vec<Tile>>, usize) {
    let comp_id = fusion.instr().calls().expect("a fusion");
    let comp = module.computation(comp_id);
    let mut tiles: HashMap<hlo::InstrId, Vec<Tile>> = HashMap::new();
    tiles.insert(comp.root(), vec![space.root_tile()]);
    let mut none = 0;
    for &id in comp.def_before_use_order().iter().rev() {
        let Some(ts) = tiles.get(&id).cloned() else {
            continue;
        };
        let handle = module.instr_ref(comp_id, id).expect("instruction");
        for t in ts {
            // A tile of a tuple element reaching the op that makes the tuple is not
            // propagated further (the walk follows output 0 only).
            let Ok(ops) = to_operands(space, &handle, 0, &t) else {
                none += 1;
                continue;
            };
            for (j, o) in ops.into_iter().enumerate() {
                match o {
                    Ok(o) => {
                        let operand = handle.instr().operands()[j];
                        let list = tiles.entry(operand).or_default();
                        if !list.contains(&o) {
                            list.push(o);
                        }
                    }
                    Err(_) => none += 1,
                }
            }
        }
    }
    (tiles, none)
}

/// What [`compare`] covered.
#[derive(Default)]
struct Stats {
    /// Fusions analysed.
    fusions: usize,
    /// (instruction, map) pairs of the analysis matched by a propagated tile.
    agreed: usize,
    /// Pairs whose instruction propagation did not reach.
    unreached: usize,
    /// Pairs on a path cut by an untileable step.
    unmatched: usize,
    /// Operand tiles not propagated.
    no_tile: usize,
    /// Fusions the analysis cannot tile.
    not_tileable: usize,
    /// Tile-id points checked by enumeration.
    points: usize,
}

/// Compares the analysis of fusion `f` with op-by-op propagation (see the file's
/// documentation); panics with `label` on a mismatch.
fn compare(module: &hlo::Module, f: &hlo::InstrRef<'_>, label: &str, stats: &mut Stats) {
    let analysis = match tiling::analyze(f) {
        Ok(a) => a,
        Err(tiling::TilingError::NotTileable(_)) => {
            stats.not_tileable += 1;
            return;
        }
        Err(e) => panic!("{label}\n{e}"),
    };
    stats.fusions += 1;
    let mut space = TilingSpace::parallel(analysis.root_dims());
    let (tiles, none) = propagate_fusion(module, f, &mut space);
    let root = TilingSpace::parallel(analysis.root_dims()).root_tile();
    stats.no_tile += none;
    for ti in analysis.instructions() {
        if let Err(e) = check_exact(&ti.map.map, &ti.tile, BUDGET) {
            panic!("{label}\n{}: symbolic tile not exact: {e}", ti.name);
        }
        let Some(candidates) = tiles.get(&ti.id) else {
            // An operand tile on the way was not propagated (a reshape mixing dimensions).
            stats.unreached += 1;
            continue;
        };
        let mut errors = Vec::new();
        let found =
            candidates.iter().any(
                |t| match check_propagation(&space, &root, &ti.map, t, BUDGET) {
                    Ok(n) => {
                        stats.points += n;
                        true
                    }
                    Err(e) => {
                        errors.push(format!("{t}: {e}"));
                        false
                    }
                },
            );
        let paths = analysis
            .instructions()
            .iter()
            .filter(|x| x.id == ti.id)
            .count();
        // One tile per path: where propagation reached the instruction along every path,
        // one of its tiles matches.
        if found {
            stats.agreed += 1;
        } else if candidates.len() < paths {
            // Fewer tiles than paths: this map's path was cut by an untileable step.
            stats.unmatched += 1;
        } else {
            panic!(
                "{label}\n{}: map {}\nno propagated tile covers its elements:\n{}",
                ti.name,
                ti.map.map,
                errors.join("\n")
            );
        }
    }
}

#[test]
fn propagation_agrees_with_the_analysis() {
    let mut stats = Stats::default();
    for seed in 0..250u64 {
        let mut rng = Rng::new(seed);
        let text = random_fusion(&mut rng, true);
        let module =
            hlo::parse_module(&text).unwrap_or_else(|e| panic!("seed {seed}:\n{text}\n{e}"));
        let f = module.instr("f").expect("fusion");
        compare(&module, &f, &format!("seed {seed}:\n{text}"), &mut stats);
    }
    let s = &stats;
    eprintln!(
        "{} fusions, {} (instruction, map) pairs agree, {} unreached and {} on a cut path, {} operand tiles not propagated, {} not tileable, {} tile-id points checked",
        s.fusions, s.agreed, s.unreached, s.unmatched, s.no_tile, s.not_tileable, s.points
    );
    assert!(s.fusions > 100, "only {} fusions analysed", s.fusions);
    assert!(s.agreed > 400, "only {} pairs agree", s.agreed);
}

/// Root elements up to which a corpus fusion is compared (enumeration stays small).
const CORPUS_ROOT_LIMIT: i64 = 4096;

#[test]
fn corpus_fusions_agree_with_the_analysis() {
    let mut stats = Stats::default();
    crate::support::corpus::for_each_fusion(|f, where_| {
        let Some(called) = f.instr().calls() else {
            return;
        };
        let module = f.module();
        let root = module
            .computation(called)
            .instr(module.computation(called).root());
        let small = !root.shape().is_tuple()
            && root.shape().dims().iter().product::<i64>() <= CORPUS_ROOT_LIMIT;
        if small {
            compare(module, f, where_, &mut stats);
        }
    });
    let s = &stats;
    eprintln!(
        "corpus: {} fusions, {} (instruction, map) pairs agree, {} unreached and {} on a cut path, {} operand tiles not propagated, {} not tileable, {} tile-id points checked",
        s.fusions, s.agreed, s.unreached, s.unmatched, s.no_tile, s.not_tileable, s.points
    );
    assert!(s.agreed > 0);
}

/// One tiled instruction: name, tile sizes, strides, offsets of every program.
type Program = (String, Vec<i64>, Vec<i64>, Vec<Vec<i64>>);

/// Per instruction name: (sizes, strides, offsets of every program), sorted; the stride of
/// a dimension of one element is irrelevant (printed 0).
fn programs(t: &tiling::TiledComputation) -> Vec<Program> {
    let mut out: Vec<_> = t
        .instructions
        .iter()
        .map(|i| {
            let rt: Vec<i64> = i.tile_offsets.runtimes().iter().map(|b| b.lo).collect();
            let offsets = (0..t.num_programs())
                .map(|p| {
                    i.tile_offsets
                        .evaluate(&affine::Point {
                            dims: &[p],
                            ranges: &[],
                            runtimes: &rt,
                        })
                        .expect("offsets")
                })
                .collect();
            let strides = i
                .tile_strides
                .iter()
                .zip(&i.tile_sizes)
                .map(|(&st, &n)| if n > 1 { st } else { 0 })
                .collect();
            (i.name.clone(), i.tile_sizes.clone(), strides, offsets)
        })
        .collect();
    out.sort();
    out
}

#[test]
fn tiled_by_propagation_agrees_with_the_analysis() {
    let (mut compared, mut skipped, mut masked, mut excluded) = (0, 0, 0, 0);
    for seed in 0..250u64 {
        let mut rng = Rng::new(seed);
        let text = random_fusion(&mut rng, true);
        let module = hlo::parse_module(&text).expect("module");
        let f = module.instr("f").expect("fusion");
        let Ok(analysis) = tiling::analyze(&f) else {
            continue;
        };
        // Concatenates and pads restrict the domain of their operands' maps: a tile that is
        // wholly masked in some program has offsets that differ between the two forms
        // (neither prints its masks); the element-wise test above covers them.
        let masked_ops = text.contains("concatenate(") || text.contains(" pad(");
        for _ in 0..3 {
            let sizes: Vec<i64> = analysis
                .root_dims()
                .iter()
                .map(|&d| rng.range_i64(1, d.max(1)))
                .collect();
            let Ok(want) = analysis.tiled(&sizes) else {
                continue;
            };
            match tiling::propagate::tiled_by_propagation(&f, &sizes, &[]) {
                Ok(got) => {
                    assert_eq!(got.num_programs(), want.num_programs(), "seed {seed}");
                    let (g, w) = (programs(&got), programs(&want));
                    // Instructions whose tiles have the same sizes both ways must agree in
                    // strides and offsets; a propagated tile may instead be larger with
                    // masked positions (its upper bounds are not part of this text form).
                    let names: std::collections::BTreeSet<&String> =
                        w.iter().map(|x| &x.0).collect();
                    for n in names {
                        let pick = |v: &[Program]| {
                            v.iter().filter(|x| &x.0 == n).cloned().collect::<Vec<_>>()
                        };
                        let (gn, wn) = (pick(&g), pick(&w));
                        let sizes_of =
                            |v: &[Program]| v.iter().map(|x| x.1.clone()).collect::<Vec<_>>();
                        if masked_ops {
                            excluded += 1;
                        } else if sizes_of(&gn) == sizes_of(&wn) {
                            assert_eq!(
                                gn, wn,
                                "seed {seed} sizes {sizes:?}:\n{text}\n{got}\n{want}"
                            );
                            compared += 1;
                        } else {
                            masked += 1;
                        }
                    }
                }
                Err(tiling::TilingError::NotTileable(_)) => skipped += 1,
                Err(e) => panic!("seed {seed}: {e}"),
            }
        }
    }
    eprintln!(
        "{compared} tiled instructions agree, {masked} tiled with masked positions instead, {excluded} not compared (concatenate, pad), {skipped} computations not tileable by propagation"
    );
    assert!(compared > 500, "only {compared} compared ({masked} masked)");
}

//! Golden text tests of symbolic tiles (tests/tile/*.test), blessed with `UPDATE_EXPECT=1`.
//!
//! A case's input is a map (its symbolic tile is printed), or an HLO module with header
//! `# instr: NAME` (the tile of every output→input map of that instruction, per operand), or
//! an HLO module with `# fusion: NAME` and `# tile-sizes: a,b,..` (the analysis's
//! constraints and the tiled computation), or an HLO module with `# propagate: NAME` (tile
//! propagation through that instruction, see `propagate_case`). Every tile printed is also
//! parsed back and checked exact by brute-force enumeration.

use std::fmt::Write;
use std::path::Path;

use crate::support::oracle::check_exact;
use crate::support::propagation::check_propagation;
use testkit::golden::{check_file, files, Case};
use tiling::SymbolicTile;

/// Points the oracle may evaluate per tile.
const BUDGET: usize = 200_000;

fn tile_text(map: &affine::IndexingMap) -> String {
    match SymbolicTile::derive(map) {
        Ok(tile) => {
            let text = tile.to_string();
            let back: SymbolicTile = text.parse().unwrap_or_else(|e| panic!("{text}\n{e}"));
            assert_eq!(back.to_string(), text, "print -> parse -> print");
            if let Err(e) = check_exact(map, &tile, BUDGET) {
                panic!("{map}\n{text}\nnot exact: {e}");
            }
            text
        }
        Err(reason) => format!("no symbolic tile\nreason: {reason}"),
    }
}

/// The one map of an operand set, normalized (as the propagation uses it).
fn single_map(set: &indexing::OperandIndexing) -> Option<indexing::IndexedMap> {
    let mut it = set.maps();
    let (Some(m), None) = (it.next(), it.next()) else {
        return None;
    };
    let mut m = m.clone();
    m.normalize().expect("normalize");
    Some(m)
}

/// Tile propagation through instruction `name`: from the symbolic (or `# tile-sizes:`)
/// root tile of its output `# output: K` (default 0) to every operand, or with
/// `# from-operand: N` from the root tile of operand N (or the `# tile:` given, over the
/// tiling space of the output, or of `# space-extents:`) to every output. Every tile is parsed back and checked
/// against the indexing maps by enumeration.
fn propagate_case(case: &Case, name: &str) -> String {
    use tiling::propagate::{to_operands, to_outputs, TilingSpace, PREFIX_SUM};
    let module = hlo::parse_module(&case.input).expect("module parses");
    let instr = module.instr(name).expect("instruction exists");
    let sizes: Option<Vec<i64>> = case.header_value("tile-sizes").map(|l| {
        l.split(',')
            .map(|s| s.trim().parse().expect("tile size"))
            .collect()
    });
    let from = case
        .header_value("from-operand")
        .map(|n| n.parse::<usize>().expect("operand number"));
    let output = case
        .header_value("output")
        .map_or(0, |n| n.parse::<usize>().expect("output number"));
    let given: Option<tiling::propagate::Tile> = case
        .header_value("tile")
        .map(|t| t.parse().expect("a tile"));
    // `# space-extents: e0,...`: the extents of the tiling space a given tile is written over.
    let extents: Option<Vec<i64>> = case.header_value("space-extents").map(|l| {
        l.split(',')
            .map(|s| s.trim().parse().expect("an extent"))
            .collect()
    });
    let (mut space, label) = match (from, &given) {
        (Some(_), Some(_)) if extents.is_some() => (
            TilingSpace::parallel(extents.as_deref().unwrap_or_default()),
            "output",
        ),
        // A given tile of the operand, over the tiling space of the instruction's output
        // (whose tile ids may run past the operand's extents: the tile is empty there).
        (Some(_), Some(_)) => (TilingSpace::for_op(&instr, 0).expect("space"), "output"),
        (Some(n), None) => {
            let op = instr.instr().operands()[n];
            let shape = instr.computation().instr(op).shape();
            // A get-tuple-element is tiled by the element it selects.
            let shape = match instr.instr().tuple_index() {
                Some(k) if shape.is_tuple() => &shape.tuple_shapes()[k as usize],
                _ => shape,
            };
            (TilingSpace::parallel(shape.dims()), "output")
        }
        (None, _) => (
            TilingSpace::for_op(&instr, output).expect("space"),
            "operand",
        ),
    };
    if let Some(s) = &sizes {
        space.set_tile_sizes(s).expect("tile sizes");
    }
    let root = given.unwrap_or_else(|| space.root_tile());
    let (tiles, maps) = match from {
        Some(n) => (
            to_outputs(&mut space, &instr, n, &root).expect("propagates"),
            indexing::input_to_output(&instr, n).expect("indexing"),
        ),
        None => (
            to_operands(&mut space, &instr, output, &root).expect("propagates"),
            tiling::output_to_input(&instr).expect("indexing")[output]
                .operands
                .clone(),
        ),
    };
    let mut out = format!("root: {root}\n");
    for (j, t) in tiles.iter().enumerate() {
        let _ = writeln!(out, "{label} id = {j}");
        match t {
            Ok(t) => {
                let text = t.to_string();
                let back: tiling::propagate::Tile =
                    text.parse().unwrap_or_else(|e| panic!("{text}\n{e}"));
                assert_eq!(back.to_string(), text, "print -> parse -> print");
                let map = single_map(&maps[j]).expect("one map");
                // A ragged dot's contracting and non-contracting forms read less than
                // their maps (groups are data): tests/tiling/ragged_runtime.rs and
                // ragged_rows.rs check them against the evaluator.
                let ragged = space.rt.iter().any(|r| {
                    r.source
                        .as_ref()
                        .is_some_and(|(_, m)| m.starts_with(PREFIX_SUM))
                });
                if ragged {
                    let _ = writeln!(out, "{text}");
                    continue;
                }
                if let Err(e) = check_propagation(&space, &root, &map, t, BUDGET) {
                    panic!("{label} {j}: {text}\nnot exact: {e}");
                }
                let _ = writeln!(out, "{text}");
            }
            Err(reason) => {
                let _ = writeln!(out, "{}: {reason}", tiling::propagate::NO_TILE);
            }
        }
    }
    out
}

/// The tiled computation of fusion `name` by tile propagation, for every `# tile-sizes:`
/// list, with the nested tilings of the `# nested: NAME=t0,...` headers (numbered as XLA's
/// regions with a `# regions` header); printed and parsed back.
fn nested_case(case: &Case, name: &str) -> String {
    let module = hlo::parse_module(&case.input).expect("module parses");
    let f = module.instr(name).expect("fusion exists");
    let nested: Vec<(String, Vec<i64>)> = case
        .header
        .iter()
        .filter_map(|h| h.strip_prefix("nested:"))
        .map(|l| {
            let (n, sizes) = l.trim().split_once('=').expect("NAME=sizes");
            let sizes = sizes
                .split(',')
                .map(|s| s.trim().parse().expect("size"))
                .collect();
            (n.to_string(), sizes)
        })
        .collect();
    // `# regions`: XLA's regions numbering (programs x steps under a nested tiling).
    let mode = if case.header.iter().any(|h| h.trim() == "regions") {
        tiling::propagate::TilingMode::Regions
    } else {
        tiling::propagate::TilingMode::FirstStep
    };
    let mut out = String::new();
    for size_list in case
        .header
        .iter()
        .filter_map(|h| h.strip_prefix("tile-sizes:"))
    {
        let sizes: Vec<i64> = size_list
            .split(',')
            .map(|s| s.trim().parse().expect("tile size"))
            .collect();
        let _ = writeln!(out, "tile sizes {sizes:?}:");
        match tiling::propagate::tiled_by_propagation_with(&f, &sizes, &nested, mode) {
            Ok(t) => {
                let text = t.to_string();
                let back: tiling::TiledComputation =
                    text.parse().unwrap_or_else(|e| panic!("{text}\n{e}"));
                assert_eq!(back.to_string(), text, "print -> parse -> print");
                out.push_str(&text);
            }
            Err(e) => {
                let _ = writeln!(out, "{e}");
            }
        }
    }
    out
}

fn run_case(case: &Case) -> String {
    if let Some(name) = case.header_value("propagate") {
        return propagate_case(case, name);
    }
    if let Some(fusion) = case.header_value("nested-fusion") {
        return nested_case(case, fusion);
    }
    if let Some(fusion) = case.header_value("fusion") {
        let module = hlo::parse_module(&case.input).expect("module parses");
        let f = module.instr(fusion).expect("fusion exists");
        let analysis = match tiling::analyze(&f) {
            Ok(a) => a,
            Err(e) => return e.to_string(),
        };
        let c = analysis.constraints();
        let mut out = if c.is_always() {
            "constraints: none\n".to_string()
        } else {
            format!("constraints: {c}\n")
        };
        for size_list in case
            .header
            .iter()
            .filter_map(|h| h.strip_prefix("tile-sizes:"))
        {
            let sizes: Vec<i64> = size_list
                .split(',')
                .map(|s| s.trim().parse().expect("tile size"))
                .collect();
            let _ = writeln!(out, "tile sizes {sizes:?}:");
            match analysis.tiled(&sizes) {
                Ok(t) => {
                    let text = t.to_string();
                    let back: tiling::TiledComputation =
                        text.parse().unwrap_or_else(|e| panic!("{text}\n{e}"));
                    assert_eq!(back.to_string(), text, "print -> parse -> print");
                    assert_eq!(back.num_programs(), t.num_programs());
                    out.push_str(&text)
                }
                Err(e) => {
                    let _ = writeln!(out, "{e}");
                }
            }
        }
        return out;
    }
    if let Some(instr) = case.header_value("instr") {
        let module = hlo::parse_module(&case.input).expect("module parses");
        let handle = module.instr(instr).expect("instruction exists");
        let outs = tiling::output_to_input(&handle).expect("indexing");
        let mut out = String::new();
        for (k, g) in outs.iter().enumerate() {
            if outs.len() > 1 {
                let _ = writeln!(out, "output id = {k}");
            }
            for (i, set) in g.operands.iter().enumerate() {
                let _ = writeln!(out, "operand id = {i}");
                match set {
                    indexing::OperandIndexing::Undefined(r) => {
                        let _ = writeln!(out, "unknown indexing: {r}");
                    }
                    _ => {
                        for m in set.maps() {
                            let _ = writeln!(out, "{}", tile_text(&m.map));
                        }
                    }
                }
            }
        }
        return out;
    }
    let map: affine::IndexingMap = case.input.parse().expect("map parses");
    tile_text(&map)
}

#[test]
fn golden_tiles() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/tile");
    for path in files(&dir, "test") {
        check_file(&path, run_case);
    }
}

//! Golden text tests of symbolic tiles (tests/tile/*.test), blessed with `UPDATE_EXPECT=1`.
//!
//! A case's input is a map (its symbolic tile is printed), or an HLO module with header
//! `# instr: NAME` (the tile of every output→input map of that instruction, per operand), or
//! an HLO module with `# fusion: NAME` and `# tile-sizes: a,b,..` (the analysis's
//! constraints and the tiled computation). Every tile printed is also parsed back and
//! checked exact by brute-force enumeration.

mod support;

use std::fmt::Write;
use std::path::Path;

use support::oracle::check_exact;
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

fn run_case(case: &Case) -> String {
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
        let outs = indexing::output_to_input(&handle).expect("indexing");
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

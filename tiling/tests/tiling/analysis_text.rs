//! The text form of a whole analysis parses back: print -> parse -> print is the identity,
//! and the analysis read back gives the same tiled computations as the original, on random
//! fusions (plain and extended), a fusion with runtime offsets, and every corpus fusion.

use crate::support::fusions::random_fusion;
use affine::gen::Rng;
use tiling::{SymbolicTileAnalysis, TilingError};

/// Prints `fusion`'s analysis, reads it back and compares; `Ok(false)` when not tileable.
fn round_trip(fusion: &hlo::InstrRef<'_>, where_: &str) -> bool {
    let analysis = match tiling::analyze(fusion) {
        Ok(a) => a,
        Err(TilingError::NotTileable(_)) => return false,
        Err(e) => panic!("{where_}: {e}"),
    };
    let text = analysis.to_string();
    let back = SymbolicTileAnalysis::parse(&text, fusion)
        .unwrap_or_else(|e| panic!("{where_}:\n{text}\n{e}"));
    assert_eq!(back.to_string(), text, "{where_}: print -> parse -> print");
    let ones = vec![1; analysis.root_dims().len()];
    let whole = analysis.root_dims().to_vec();
    for sizes in [ones, whole] {
        let a = analysis.tiled(&sizes).map(|t| t.to_string());
        let b = back.tiled(&sizes).map(|t| t.to_string());
        assert_eq!(a, b, "{where_}: tiled {sizes:?}");
    }
    true
}

#[test]
fn random_analyses_round_trip() {
    let mut tiled = 0;
    for seed in 0..200u64 {
        let mut rng = Rng::new(seed);
        let text = random_fusion(&mut rng, seed % 2 == 1);
        let module = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{text}\n{e}"));
        let f = module.instr("f").expect("fusion");
        tiled += usize::from(round_trip(&f, &format!("seed {seed}:\n{text}")));
    }
    assert!(tiled > 100, "only {tiled} analyses");
}

#[test]
fn runtime_variables_round_trip() {
    let text = r#"
HloModule m
fused {
  src = s32[4,258] parameter(0)
  of1 = s32[] parameter(1)
  of2 = s32[] parameter(2)
  ROOT ds = s32[1,32] dynamic-slice(src, of1, of2), dynamic_slice_sizes={1,32}
}
ENTRY e {
  a = s32[4,258] parameter(0)
  b = s32[] parameter(1)
  c = s32[] parameter(2)
  ROOT f = s32[1,32] fusion(a, b, c), kind=kLoop, calls=fused
}"#;
    let module = hlo::parse_module(text).expect("module");
    let f = module.instr("f").expect("fusion");
    let analysis = tiling::analyze(&f).expect("tileable");
    assert!(analysis.to_string().contains("  rt0 = "), "{analysis}");
    assert!(round_trip(&f, "dynamic slice"));
}

#[test]
fn bad_analysis_text_is_rejected() {
    let module = hlo::parse_module(
        "HloModule m\nfused {\n  p = f32[4] parameter(0)\n  ROOT n = f32[4] negate(p)\n}\n\
         ENTRY e {\n  a = f32[4] parameter(0)\n  ROOT f = f32[4] fusion(a), kind=kLoop, calls=fused\n}",
    )
    .expect("module");
    let f = module.instr("f").expect("fusion");
    let good = tiling::analyze(&f).expect("tileable").to_string();
    let cases = [
        ("", "line 1: empty text"),
        (
            "analysis of f",
            "line 1: expected `symbolic tile analysis of ...`",
        ),
        (
            &good.replace("\nn: ", "\nmissing: "),
            "`missing` is not in the fusion `f`",
        ),
        (
            &good.replace("constraints: none", "limits"),
            "line 2: expected `constraints: ...`",
        ),
    ];
    for (text, want) in cases {
        let err = SymbolicTileAnalysis::parse(text, &f)
            .expect_err(text)
            .to_string();
        assert!(err.contains(want), "{text}\n{err}");
    }
}

#[test]
fn corpus_analyses_round_trip() {
    let mut tiled = 0;
    crate::support::corpus::for_each_fusion(|handle, where_| {
        tiled += usize::from(round_trip(handle, where_));
    });
    assert!(tiled > 0);
}

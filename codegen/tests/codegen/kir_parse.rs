//! The kernel IR text parser: every kernel of the emitters' golden kernel IR
//! (`plan/tests/golden/kir.test`) parses and prints back byte for byte, and bad text
//! gives errors with line:column.

use codegen::kir::{kernel_text, parse_kernel, parse_kernels, verify, KirParseError};

const GOLDEN: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../plan/tests/golden/kir.test"
));

/// The expected outputs of the golden file that are kernel IR (not errors), one per case.
fn golden_kernel_texts() -> Vec<(String, String)> {
    let file = testkit::golden::parse(GOLDEN).expect("kir.test parses");
    file.cases
        .into_iter()
        .filter(|c| c.expected.starts_with("kernel "))
        .map(|c| (c.title, format!("{}\n", c.expected)))
        .collect()
}

#[test]
fn golden_kernels_round_trip() {
    let cases = golden_kernel_texts();
    assert!(cases.len() > 20, "only {} kernel cases", cases.len());
    let mut kernels = 0;
    for (title, text) in &cases {
        let ks = parse_kernels(text).unwrap_or_else(|e| panic!("case `{title}`: {e}"));
        kernels += ks.len();
        let printed: String = ks.iter().map(kernel_text).collect();
        assert_eq!(&printed, text, "case `{title}` does not print back");
        for k in &ks {
            let again = parse_kernel(&kernel_text(k)).expect("reparses");
            assert_eq!(
                &again, k,
                "case `{title}`: kernel {} changes on reparse",
                k.name
            );
        }
    }
    assert!(kernels >= cases.len());
}

#[test]
fn golden_kernels_verify_after_parsing() {
    for (title, text) in golden_kernel_texts() {
        for k in parse_kernels(&text).expect("parses") {
            if let Err(e) = verify(&k) {
                panic!("case `{title}`, kernel {}: {e}", k.name);
            }
        }
    }
}

const SMALL: &str = "\
kernel k blocks=4 (d0 = block)
  b0 in p: f32[4,8]{1,0}
  b1 out r: f32[4,8]{1,0}
  l0 local acc: f32[2]
  // title
  // second line
  for d1 in [0, 7] {
    let v0: f32 = b0[d0 * 8 + d1]
    var v1: f32 = 0.0:f32
    v1 = add(v1, neg(v0))
    if d1 in [0, 3] && d0 * 2 in [0, 4] {
      l0[d1 mod 2] = v1
    } else {
      b1[d0 * 8 + d1] = if d1 in [4, 7] then select(lt.total(v0, 1.5:f32), v1, l0[0]) else convert.f32(index(d1 floordiv 2))
    }
  }
";

#[test]
fn hand_written_kernel_round_trips() {
    let k = parse_kernel(SMALL).unwrap();
    assert_eq!(kernel_text(&k), SMALL);
    assert_eq!(k.dims.len(), 2);
    assert!(matches!(&k.body[0], codegen::kir::Stmt::Comment(c) if c == "title\nsecond line"));
}

fn err(text: &str) -> KirParseError {
    match parse_kernel(text) {
        Ok(k) => panic!("parsed:\n{}", kernel_text(&k)),
        Err(e) => e,
    }
}

fn with_body(line: &str) -> String {
    format!(
        "kernel k blocks=2 (d0 = block)\n  b0 in p: f32[2]{{0}}\n  b1 out r: s32[2]{{0}}\n  {line}\n"
    )
}

#[test]
fn bad_token() {
    let e = err(&with_body("let v0: f32 = frob(b0[d0])"));
    assert_eq!((e.line, e.column), (4, 17), "{e}");
    assert!(e.message.contains("unknown value `frob`"), "{e}");
    let e = err(&with_body("let v0: f32 = b0[d0 +]"));
    assert_eq!(e.line, 4, "{e}");
    let e = err("kernel k blocks=x\n");
    assert_eq!((e.line, e.column), (1, 17), "{e}");
    assert!(e.to_string().starts_with("1:17: "), "{e}");
    let e = err(&with_body("for d1 in [0, 3] {"));
    assert!(e.message.contains("never closed"), "{e}");
}

#[test]
fn unknown_buffer() {
    let e = err(&with_body("let v0: f32 = b7[d0]"));
    assert_eq!((e.line, e.column), (4, 17), "{e}");
    assert!(e.message.contains("unknown buffer `b7`"), "{e}");
    let e = err(&with_body("l0[d0] = 1:s32"));
    assert!(e.message.contains("unknown local `l0`"), "{e}");
}

#[test]
fn wrong_type() {
    let e = err(&with_body("let v0: s32 = b0[d0]"));
    assert_eq!((e.line, e.column), (4, 17), "{e}");
    assert!(e.message.contains("declared s32 but bound to a f32"), "{e}");
    let e = err(&with_body("b1[d0] = b0[d0]"));
    assert_eq!((e.line, e.column), (4, 12), "{e}");
    assert!(e.message.contains("store of a f32 value into s32"), "{e}");
    let e = err(&with_body("let v0: f32 = add(b0[d0], 1:s32)"));
    assert!(e.message.contains("add of a f32 and a s32"), "{e}");
    let e = err(&with_body("let v0: f32 = 1.0:f33"));
    assert!(e.message.contains("unknown type `f33`"), "{e}");
}

#[test]
fn several_kernels_in_parse_kernel_is_an_error() {
    let two = format!(
        "{}{}",
        with_body("b1[d0] = 1:s32"),
        with_body("b1[d0] = 2:s32")
    );
    assert_eq!(parse_kernels(&two).unwrap().len(), 2);
    let e = err(&two);
    assert_eq!(e.line, 5, "{e}");
}

#[test]
fn mangled_text_never_panics() {
    let cases = golden_kernel_texts();
    let mut samples: Vec<String> = cases.iter().take(8).map(|(_, t)| t.clone()).collect();
    samples.push(SMALL.to_string());
    samples.push("kernel k blocks=1\n  if {\n  }\n  if  {\n  }\n".to_string());
    for text in &samples {
        for (i, ch) in text.char_indices() {
            // Drop one character, double it, or replace it by a troublesome one.
            let end = i + ch.len_utf8();
            for mangled in [
                format!("{}{}", &text[..i], &text[end..]),
                format!("{}{ch}{}", &text[..end], &text[end..]),
                format!("{}(]{}", &text[..i], &text[end..]),
                format!("{}é{}", &text[..i], &text[end..]),
            ] {
                if let Ok(ks) = parse_kernels(&mangled) {
                    for k in &ks {
                        let _ = kernel_text(k);
                    }
                }
            }
        }
    }
}

/// A kernel with GPU structure: blocks of threads, a block-shared array filled by one loop
/// over the threads and read by another after a barrier, a vectorized inner loop.
const THREADED: &str = "\
kernel k blocks=2 threads=4 (d0 = block)
  b0 in p: f32[2,8]{1,0}
  b1 out r: f32[2,8]{1,0}
  l0 shared tile: f32[8]
  l1 local scratch: f32[2]
  for.threads s0 in [0, 7] {
    l0[s0] = b0[d0 * 8 + s0]
  }
  barrier
  for.threads s1 in [0, 3] {
    for.vector s2 in [0, 1] {
      l1[s2] = l0[7 - (s1 * 2 + s2)]
      b1[d0 * 8 + s1 * 2 + s2] = l1[s2]
    }
  }
";

#[test]
fn threads_shared_locals_and_barriers_round_trip_and_verify() {
    use codegen::kir::{LoopKind, MemorySpace, Stmt};
    let k = parse_kernel(THREADED).unwrap();
    assert_eq!(kernel_text(&k), THREADED);
    assert_eq!(k.grid.threads, 4);
    assert_eq!(k.locals[0].space, MemorySpace::Block);
    assert_eq!(k.locals[1].space, MemorySpace::Private);
    assert_eq!(k.block_local_bytes(), 32);
    assert!(matches!(
        &k.body[0],
        Stmt::Loop {
            kind: LoopKind::Threads,
            ..
        }
    ));
    assert_eq!(k.body[1], Stmt::Barrier);
    verify(&k).unwrap();
}

#[test]
fn the_verifier_knows_the_rules_of_threads() {
    let check = |from: &str, to: &str| {
        let text = THREADED.replacen(from, to, 1);
        let k = parse_kernel(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        verify(&k).unwrap_err().message
    };
    // A barrier that only some threads could reach.
    let m = check(
        "    l0[s0] = b0[d0 * 8 + s0]\n",
        "    l0[s0] = b0[d0 * 8 + s0]\n    barrier\n",
    );
    assert!(
        m.contains("barrier inside a loop over the block's threads"),
        "{m}"
    );
    // Threads loops do not nest.
    let m = check("for.vector s2", "for.threads s2");
    assert!(m.contains("inside another one"), "{m}");
    // A thread's private copy does not live from one loop over threads to the next.
    let m = check("l0[s0] = b0[d0 * 8 + s0]", "l1[0] = b0[d0 * 8 + s0]");
    assert!(m.contains("private local l1"), "{m}");
}

#[test]
fn threads_and_spaces_parse_errors() {
    let e = err(&THREADED.replacen("threads=4", "threads=1", 1));
    assert!(e.message.contains("`threads=`"), "{e}");
    let e = err(&THREADED.replacen("l0 shared", "l0 global", 1));
    assert!(e.message.contains("unknown memory space `global`"), "{e}");
}

/// A warp's sum by shuffles: down toward lane 0, then a butterfly (xor) of 64-bit values.
const SHUFFLED: &str = "\
kernel k blocks=1 threads=32
  b0 in p: f32[32]{0}
  b1 out r: f64[32]{0}
  for.threads s0 in [0, 31] {
    let v0: f32 = b0[s0]
    shuffle.down v1: f32 = v0 by 16 width 32
    let v2: f64 = convert.f64(add(v0, v1))
    shuffle.xor v3: f64 = v2 by 1 width 2
    b1[s0] = add(v2, v3)
  }
";

#[test]
fn shuffles_round_trip_and_verify() {
    use codegen::kir::{ShuffleKind, Stmt};
    let k = parse_kernel(SHUFFLED).unwrap();
    assert_eq!(kernel_text(&k), SHUFFLED);
    let Stmt::Loop { body, .. } = &k.body[0] else {
        panic!("{:?}", k.body[0])
    };
    assert!(matches!(
        body[1],
        Stmt::Shuffle {
            kind: ShuffleKind::Down,
            offset: 16,
            width: 32,
            ..
        }
    ));
    verify(&k).unwrap();
    // The declared type must be the shuffled value's.
    let e = parse_kernel(&SHUFFLED.replace("shuffle.down v1: f32", "shuffle.down v1: f64"))
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("declared f64 but shuffles a f32 value"),
        "{e}"
    );
}

/// Atomic updates: the one-line form (one binary operation of the old value) and the
/// form with a body of bindings, printed, parsed back and verified.
const ATOMICS: &str = "\
kernel k blocks=2 threads=32 (d0 = block)
  b0 in u: f32[64]{0}
  b1 in i: s32[64]{0}
  b2 inout o: f32[8]{0}
  b3 inout c: f16[8]{0}
  for.threads s0 in [0, 31] {
    bind rt0 = b1[d0 * 32 + s0]
    if rt0 in [0, 7] {
      let v0: f32 = b0[d0 * 32 + s0]
      atomic b2[rt0] as v1: f32 = add(v1, v0)
      atomic b3[rt0] as v2: f16 {
        let v3: f16 = convert.f16(v0)
        let v4: f16 = mul(v2, v3)
      } = max(v4, v2)
    }
  }
";

#[test]
fn atomics_round_trip_and_verify() {
    use codegen::kir::{atomic_binary, BinOp, Stmt};
    let k = parse_kernel(ATOMICS).unwrap();
    assert_eq!(kernel_text(&k), ATOMICS);
    verify(&k).unwrap();
    let Stmt::Loop { body, .. } = &k.body[0] else {
        panic!("{:?}", k.body[0]);
    };
    let Stmt::If { body, .. } = &body[1] else {
        panic!("{:?}", body[1]);
    };
    let [_, Stmt::Atomic {
        old,
        body: b1,
        value,
        ..
    }, Stmt::Atomic {
        old: old2,
        body: b2,
        value: value2,
        ..
    }] = &body[..]
    else {
        panic!("{body:?}");
    };
    // The first is one add of the old value; the second needs its body (a CAS loop).
    assert!(matches!(
        atomic_binary(*old, b1, value),
        Some((BinOp::Add, _))
    ));
    assert_eq!(b2.len(), 2);
    assert!(atomic_binary(*old2, b2, value2).is_none());
}

#[test]
fn the_verifier_knows_the_rules_of_atomics() {
    let check = |from: &str, to: &str| {
        let text = ATOMICS.replacen(from, to, 1);
        let k = parse_kernel(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        verify(&k).unwrap_err().message
    };
    // Only read-write buffers: an atomic reads the element first.
    let m = check("b2 inout o", "b2 out o");
    assert!(m.contains("not a read-write buffer"), "{m}");
    // The body only computes: it may run several times.
    let m = check(
        "        let v4: f16 = mul(v2, v3)\n",
        "        let v4: f16 = mul(v2, v3)\n        b2[0] = v0\n",
    );
    assert!(m.contains("with a store"), "{m}");
    // The old value is bound only inside the update.
    let m = check("    }\n  }\n", "    }\n    b2[0] = convert.f32(v2)\n  }\n");
    assert!(m.contains("v2"), "{m}");
}

#[test]
fn atomic_parse_errors() {
    let e = err(&ATOMICS.replacen("as v1: f32", "as v1: s32", 1));
    assert!(
        e.message.contains("declared s32 but updates a f32 buffer"),
        "{e}"
    );
    let e = err(&ATOMICS.replacen("} = max(v4, v2)", "}", 1));
    assert!(e.message.contains("closed without"), "{e}");
    let e = err(&ATOMICS.replacen("atomic b2[rt0]", "atomic l0[rt0]", 1));
    assert!(e.message.contains("not a buffer"), "{e}");
}

//! Splitting a module's kernels into translation units for parallel compilation: every
//! kernel lands in exactly one unit, after the prelude, in its original relative order.

const MODULE: &str = r#"HloModule m
ENTRY e {
  p = f32[64,64] parameter(0)
  a = f32[64,64] negate(p)
  b = f32[64,64] log(a)
  c = f32[64,64] tanh(b)
  d = f32[64,64] add(c, p)
  t = f32[64,64] transpose(d), dimensions={1,0}
  ROOT r = (f32[64,64], f32[64,64], f32[64,64]) tuple(b, d, t)
}
"#;

#[test]
fn every_kernel_lands_in_one_unit_after_the_prelude() {
    let m = hlo::parse_module(MODULE).expect("parse");
    let p = plan::build_program(&m).expect("codegen");
    let names: Vec<String> = p.kernels.iter().map(|k| k.name.clone()).collect();
    assert!(names.len() >= 4, "{names:?}");
    assert_eq!(
        backend_cpu::c::translation_units(&p.kernels, 1, 1),
        vec![backend_cpu::c::translation_unit(&p.kernels)]
    );
    for n in [2, 3, 64] {
        let units = backend_cpu::c::translation_units(&p.kernels, n, 1);
        assert_eq!(units.len(), n.min(names.len()));
        for unit in &units {
            // The prelude's header (what every unit needs) comes first.
            assert!(unit.starts_with(&backend_cpu::c::prelude_for(std::iter::empty())));
            // Kernels keep their relative order inside a unit.
            let at: Vec<usize> = names
                .iter()
                .filter_map(|k| unit.find(&format!("void {k}(")))
                .collect();
            assert!(at.windows(2).all(|w| w[0] < w[1]), "{at:?}");
        }
        for k in &names {
            let defined = units
                .iter()
                .filter(|u| u.contains(&format!("void {k}(")))
                .count();
            assert_eq!(defined, 1, "{k} in {n} units");
        }
    }
}

/// Small kernels call libm's log, large ones the vectorizable one.
#[test]
fn only_units_of_large_kernels_include_the_vector_functions() {
    let small = hlo::parse_module(MODULE).expect("parse");
    let p = plan::build_program(&small).expect("codegen");
    for unit in backend_cpu::c::translation_units(&p.kernels, 2, 1) {
        assert!(!unit.contains("= hloc_vlog_f32(v"), "{unit}");
    }
    let large = hlo::parse_module(&MODULE.replace("[64,64]", "[256,256]")).expect("parse");
    let p = plan::build_program(&large).expect("codegen");
    assert!(p
        .kernels
        .iter()
        .all(|k| backend_cpu::c::math_style(k) == backend_cpu::c::MathStyle::Vector));
    let units = backend_cpu::c::translation_units(&p.kernels, 2, 1);
    assert!(units.iter().any(|u| u.contains("= hloc_vlog_f32(v")));
}

/// The prelude's parts concatenate to the whole base prelude; a unit takes only the parts
/// its kernels name.
#[test]
fn units_take_only_the_prelude_parts_their_kernels_name() {
    let whole: String = backend_cpu::c::parts().iter().map(|p| p.text).collect();
    assert_eq!(whole, backend_cpu::c::BASE_PRELUDE);
    let ints = "HloModule m\nENTRY e {\n  a = s32[8] parameter(0)\n  b = s32[8] parameter(1)\n  ROOT d = s32[8] divide(a, b)\n}";
    let p = plan::build_program(&hlo::parse_module(ints).expect("parse")).expect("codegen");
    let unit = backend_cpu::c::translation_unit(&p.kernels);
    assert!(unit.contains("HLOC_INT_OPS(int32_t"), "{unit}");
    for absent in [
        "HLOC_INT_OPS(uint8_t",
        "hloc_f16_to_f32",
        "HLOC_COMPLEX_OPS(",
        "hloc_f2i_u64",
        "hloc_vexp_f32",
    ] {
        assert!(!unit.contains(absent), "{absent} in\n{unit}");
    }
}

/// The emitters' small-kernel limit for the C backend is the printer's math-style
/// threshold: a kernel the emitters treat as small is printed with scalar math.
#[test]
fn emit_target_matches_the_c_printer() {
    assert_eq!(
        codegen::EmitTarget::cpu().small_kernel_elements,
        backend_cpu::c::SMALL_KERNEL_ELEMENTS
    );
}

/// A chain of `n` identical transpose, exp, reduce and broadcast groups.
fn chain(n: usize) -> String {
    let mut s = String::from(
        "HloModule chain\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  \
         ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[32,64] parameter(0)\n  \
         z = f32[] constant(0)\n",
    );
    let mut prev = "p".to_string();
    for i in 0..n {
        let root = if i + 1 == n { "ROOT " } else { "" };
        s += &format!(
            "  t{i} = f32[64,32] transpose({prev}), dimensions={{1,0}}\n  \
             e{i} = f32[64,32] exponential(t{i})\n  \
             r{i} = f32[32] reduce(e{i}, z), dimensions={{0}}, to_apply=add\n  \
             {root}b{i} = f32[32,64] broadcast(r{i}), dimensions={{0}}\n"
        );
        prev = format!("b{i}");
    }
    s + "}\n"
}

/// Kernels whose C differs only in names and comments share one function: each entry
/// point is the first such kernel's or an alias of it, in the same unit after it, and the
/// units hold only a few functions.
#[test]
fn identical_kernels_share_one_function() {
    let m = hlo::parse_module(&chain(40)).expect("parse");
    let p = plan::build_program(&m).expect("codegen");
    let names: Vec<String> = p.kernels.iter().map(|k| k.name.clone()).collect();
    assert!(names.len() >= 40, "{names:?}");
    for n in [1, 2, 3] {
        let units = backend_cpu::c::translation_units(&p.kernels, n, 1);
        let bodies: usize = units.iter().map(|u| u.matches("_body(\n").count()).sum();
        assert!(bodies <= 8, "{bodies} bodies for {} kernels", names.len());
        for k in &names {
            let entry =
                format!("void {k}(void *const *bufs, int64_t block_begin, int64_t block_end)");
            let holding: Vec<&String> = units.iter().filter(|u| u.contains(&entry)).collect();
            assert_eq!(holding.len(), 1, "{k} in {n} units");
            let unit = holding[0];
            let at = unit.find(&entry).expect("entry") + entry.len();
            if let Some(rest) = unit[at..].strip_prefix(" __attribute__((alias(\"") {
                let target = &rest[..rest.find('"').expect("alias")];
                let defined = unit
                    .find(&format!("void {target}(void *const *bufs, int64_t block_begin, int64_t block_end) {{"))
                    .expect("the alias's target in the unit");
                assert!(defined < at, "{k} aliases {target} before its definition");
            } else {
                assert!(unit[at..].starts_with(" {"), "{k}: {}", &unit[at..at + 40]);
            }
        }
    }
}

/// A small kernel in a while loop's body is called once a trip: its elements times the
/// assumed trips reach the `-O1` limit, so it compiles at `-O2` with the vector
/// functions, while the same computation outside the loop stays small (`-O1`, libm) and
/// the loop's one-element counter kernels stay at `-O1`.
#[test]
fn small_kernels_in_a_loop_body_compile_for_speed() {
    let m = hlo::parse_module(
        r#"HloModule w
cond {
  s = (s32[], f32[8,60]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  n = s32[] constant(400)
  ROOT c = pred[] compare(i, n), direction=LT
}
body {
  s = (s32[], f32[8,60]) parameter(0)
  i = s32[] get-tuple-element(s), index=0
  x = f32[8,60] get-tuple-element(s), index=1
  one = s32[] constant(1)
  j = s32[] add(i, one)
  y = f32[8,60] log-plus-one(x)
  ROOT t = (s32[], f32[8,60]) tuple(j, y)
}
ENTRY e {
  p = f32[8,60] parameter(0)
  q = f32[8,60] log-plus-one(p)
  z = s32[] constant(0)
  s = (s32[], f32[8,60]) tuple(z, q)
  w = (s32[], f32[8,60]) while(s), condition=cond, body=body
  ROOT r = f32[8,60] get-tuple-element(w), index=1
}
"#,
    )
    .expect("parse");
    let p = plan::build_program(&m).expect("codegen");
    let calls = backend_cpu::kernel_calls::calls_per_run(&p);
    let mut hot_log1p = 0;
    let mut cold_log1p = 0;
    for (k, &c) in p.kernels.iter().zip(&calls) {
        let text = backend_cpu::c::kernel_c_called(k, c);
        let o1 = text.contains("optimize(\"O1\")");
        if text.contains("log1p") {
            if c > 1 {
                hot_log1p += 1;
                assert!(!o1 && text.contains("hloc_vlog1p_f32"), "{text}");
            } else {
                cold_log1p += 1;
                assert!(o1 && text.contains("log1pf("), "{text}");
            }
        } else if k.touched_elements() == 1 {
            assert!(o1, "a one-element kernel called {c} times:\n{text}");
        }
    }
    assert_eq!((hot_log1p, cold_log1p), (1, 1), "{calls:?}");
}

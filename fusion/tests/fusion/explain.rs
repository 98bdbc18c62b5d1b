//! The explain report's JSON-lines schema (issue 16 §5), key by key, and refusals that
//! need a device with other limits.

const SOFTMAX: &str = "HloModule m
max {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT r = f32[] maximum(a, b)
}
ENTRY e {
  x = f32[32,128] parameter(0)
  ninf = f32[] constant(-inf)
  mx = f32[32] reduce(x, ninf), dimensions={1}, to_apply=max
  bm = f32[32,128] broadcast(mx), dimensions={0}
  sh = f32[32,128] subtract(x, bm)
  ROOT ex = f32[32,128] exponential(sh)
}";

fn keys(v: &serde_json::Value) -> Vec<&str> {
    v.as_object()
        .map(|o| o.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

/// Fuses `module` for the `cpu` description and XLA:CPU's rules without loop-invariant
/// hoisting: a reduction read through a broadcast would be recomputed per element, so it
/// stays out of its consumer.
fn fuse_without_hoisting(module: &mut hlo::Module) -> fusion::FusionReport {
    let cpu = device::load("cpu").unwrap();
    let mut reach = fusion::XlaCpuReach::default();
    reach.rules.hoists_invariant_values = false;
    let log = fusion::fuse_logged_with(module, &cpu, std::sync::Arc::new(reach)).unwrap();
    fusion::FusionReport::build(module, &log)
}

#[test]
fn json_lines_follow_the_schema() {
    let mut module = hlo::parse_module(SOFTMAX).unwrap();
    let report = fuse_without_hoisting(&mut module);
    let lines: Vec<serde_json::Value> = report
        .to_json_lines()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    let f = &lines[0];
    assert_eq!(
        keys(f),
        ["fusion", "kind", "emitter", "members", "decisions"]
    );
    assert_eq!(f["fusion"], "fusion");
    assert_eq!(f["kind"], "loop");
    assert_eq!(f["emitter"], "loop");
    assert_eq!(f["members"], serde_json::json!(["bm", "sh", "ex"]));
    let d = &f["decisions"][0];
    assert_eq!(keys(d), ["producer", "consumer", "reason", "cost"]);
    assert_eq!(d["reason"], "fused");
    assert_eq!(
        keys(&d["cost"]),
        [
            "unfused_us",
            "fused_us",
            "bytes_unfused",
            "bytes_fused",
            "flops_unfused",
            "flops_fused",
            "duplication"
        ]
    );
    assert!(d["cost"]["fused_us"].as_f64().unwrap() < d["cost"]["unfused_us"].as_f64().unwrap());
    let e = &lines[1];
    assert_eq!(keys(e), ["producer", "consumer", "fused", "reason", "cost"]);
    assert_eq!(e["producer"], "mx");
    assert_eq!(e["consumer"], "fusion");
    assert_eq!(e["fused"], false);
    assert_eq!(e["reason"], "hero-incompatible");
    // The text form: one line per record or decision.
    let text = report.to_text();
    assert_eq!(text.lines().count(), 1 + 2 + 1, "{text}");
    assert!(
        text.contains("unfused mx -> fusion: hero-incompatible: "),
        "{text}"
    );
}

#[test]
fn a_row_reduction_fuses_into_its_consumer_where_the_code_generator_hoists() {
    let mut module = hlo::parse_module(SOFTMAX).unwrap();
    let report = fusion::fuse(&mut module, &device::load("cpu").unwrap()).unwrap();
    let lines: Vec<serde_json::Value> = report
        .to_json_lines()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(
        lines[0]["members"],
        serde_json::json!(["mx", "bm", "sh", "ex"])
    );
    let decisions = lines[0]["decisions"].as_array().unwrap();
    assert!(
        decisions
            .iter()
            .any(|d| d["producer"] == "mx" && d["reason"] == "fused"),
        "{decisions:?}"
    );
}

#[test]
fn too_large_follows_the_code_generators_limit() {
    let cpu = device::load("cpu").unwrap();
    let mut reach = fusion::XlaCpuReach::default();
    reach.rules.max_instructions = 2;
    let mut module = hlo::parse_module(
        "HloModule m\nENTRY e {\n  p = f32[64] parameter(0)\n  a = f32[64] negate(p)\n  b = f32[64] exponential(a)\n  ROOT c = f32[64] sqrt(b)\n}",
    )
    .unwrap();
    let log = fusion::fuse_logged_with(&mut module, &cpu, std::sync::Arc::new(reach)).unwrap();
    let report = fusion::FusionReport::build(&module, &log);
    assert_eq!(report.fusions().count(), 1);
    let refused: Vec<_> = report.edges().map(|e| e.reason.code()).collect();
    assert_eq!(refused, ["too-large"]);
}

#[test]
fn launch_cost_decides_what_pays() {
    // With free launches, duplicating 48 flops per element behind a broadcast into two
    // consumers turns memory-bound kernels compute-bound: the model refuses.
    let mut dev = device::load("cpu").unwrap();
    dev.kernel.launch_s = 0.0;
    let text = "HloModule m\nENTRY e {\n  p = f32[256] parameter(0)\n  c = f32[256] cosine(p)\n  x = f32[256] sine(c)\n  b = f32[64,256] broadcast(x), dimensions={1}\n  q = f32[64,256] parameter(1)\n  s = f32[64,256] subtract(q, b)\n  m = f32[64,256] multiply(q, b)\n  ROOT t = (f32[64,256], f32[64,256]) tuple(s, m)\n}";
    let mut module = hlo::parse_module(text).unwrap();
    let report = fusion::fuse(&mut module, &dev).unwrap();
    let x_refusal = report
        .edges()
        .find(|e| e.producer == "x")
        .map(|e| e.reason.code());
    assert_eq!(x_refusal, Some("would-duplicate-expensive"));
    // On the h100 the flops are cheap and a launch is not: everything fuses.
    let mut module = hlo::parse_module(text).unwrap();
    let report = fusion::fuse(&mut module, &device::load("h100").unwrap()).unwrap();
    assert_eq!(report.edges().count(), 0);
}

#[test]
fn a_transcendental_recomputed_per_element_is_refused_with_how_often() {
    // Without hoisting, the log of a [16,8] value read through a broadcast along the minor
    // dimension would run once per element of [16,8,4096], one scalar call each.
    let text = "HloModule m\nENTRY e {\n  s = f32[16,8] parameter(0)\n  x = f32[16,8,4096] parameter(1)\n  l = f32[16,8] log(s)\n  b = f32[16,8,4096] broadcast(l), dimensions={0,1}\n  ROOT d = f32[16,8,4096] subtract(x, b)\n}";
    let mut module = hlo::parse_module(text).unwrap();
    let report = fuse_without_hoisting(&mut module);
    let edge = report.edges().find(|e| e.producer == "l").unwrap();
    assert_eq!(edge.reason.code(), "would-duplicate-expensive");
    assert_eq!(
        edge.detail.as_deref(),
        Some("l would be computed 524288 times for its 128 elements (once per element reading it)")
    );
    assert!(report
        .to_text()
        .contains("l would be computed 524288 times"));
    // Hoisted, it is computed once per value and fuses.
    let mut module = hlo::parse_module(text).unwrap();
    let report = fusion::fuse(&mut module, &device::load("cpu").unwrap()).unwrap();
    assert_eq!(report.edges().count(), 0);
}

/// Issue 36's wide module in small, as the simplifier leaves it (the transpose of a
/// broadcast is a broadcast): a chain of exp -> row sum -> broadcast groups, each sum read
/// by the next group through a broadcast. Hoisting makes every sum fusible into the next
/// group's kernel; the chain stops at [`fusion::plan::MAX_REDUCTIONS`] sums per kernel
/// (refused as too large), so one kernel does not grow into hundreds of loops for the C
/// compiler.
#[test]
fn a_kernel_holds_at_most_max_reductions_sums() {
    let groups = fusion::plan::MAX_REDUCTIONS + 8;
    let mut text = String::from(
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  b0 = f32[16,8] parameter(0)\n  zero = f32[] constant(0)\n",
    );
    for g in 0..groups {
        let root = if g + 1 == groups { "ROOT " } else { "" };
        let next = g + 1;
        text += &format!(
            "  e{g} = f32[16,8] exponential(b{g})\n  r{g} = f32[16] reduce(e{g}, zero), dimensions={{1}}, to_apply=add\n  {root}b{next} = f32[16,8] broadcast(r{g}), dimensions={{0}}\n"
        );
    }
    text += "}\n";
    let cpu = device::load("cpu").unwrap();
    let mut module = hlo::parse_module(&text).unwrap();
    let reach = fusion::XlaCpuReach::default();
    let log = fusion::fuse_logged_with(&mut module, &cpu, std::sync::Arc::new(reach)).unwrap();
    let report = fusion::FusionReport::build(&module, &log);
    let sums: Vec<usize> = report
        .fusions()
        .map(|f| f.members.iter().filter(|m| m.starts_with('r')).count())
        .collect();
    assert_eq!(
        sums.iter().max(),
        Some(&fusion::plan::MAX_REDUCTIONS),
        "{sums:?}"
    );
    assert!(
        report.edges().any(|e| e.reason.code() == "too-large"),
        "{sums:?}"
    );
}

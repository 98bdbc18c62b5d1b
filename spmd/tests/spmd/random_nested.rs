//! Property test: random manual regions nested in partially manual ones, in both of the
//! forms JAX writes. A `shard_map` manual on "model" (its body tiled over "data") holds
//! `axis_index("model")` (a region with no input, or none) and a `shard_map` over "data"
//! whose body adds its data coordinate and runs one collective over "data" (psum,
//! all_gather, ppermute, or psum_scatter of an input it reads whole); meshes of 2 (2x1),
//! 4 (2x2) and 8 (2x4, 4x2) devices with either axis major, the input's rows split over
//! "data" or whole. Each draw is written twice, in GSPMD's form (manual subgroups) and
//! in Shardy's (calls of bodies between `xla.sdy` boundaries, a nested one naming only
//! its own manual axis). The GSPMD module, partitioned and evaluated on its devices,
//! must equal the evaluator's global run of it; the evaluator's global run of the Shardy
//! module (its `xla.sdy` boundaries read with their global meaning) must equal it too,
//! and so must the Shardy module partitioned, moving the same collective bytes as the
//! GSPMD form (a Shardy nested region read as a partially manual region of its own
//! moved more).

use hlo::Module;
use rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::SplitMix64;

use crate::check::{check_module, global_evaluation, random_args, run_partitioned};

/// A deterministic choice from `0..n`.
fn pick(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// One random draw: mesh sizes, layout and the ops of both regions.
struct Draw {
    /// Sizes of the automatic ("data") and manual ("model") axes.
    a: i64,
    m: i64,
    /// Whether "data" is the mesh's major axis (device = data * m + model).
    data_major: bool,
    /// Rows per data coordinate, and the body's columns (the global's per model shard).
    r: i64,
    cm: i64,
    /// Whether the input arrives with its rows split over "data".
    rows_split: bool,
    /// Whether the body reads axis_index("model") (a nested region with no input).
    axis_index: bool,
    /// 0 psum, 1 all_gather (rows), 2 ppermute, 3 psum_scatter of a whole input.
    collective: usize,
}

impl Draw {
    fn new(rng: &mut SplitMix64, devices: i64) -> Draw {
        let (a, m) = match devices {
            2 => (2, 1),
            4 => (2, 2),
            _ => [(2, 4), (4, 2)][pick(rng, 2)],
        };
        Draw {
            a,
            m,
            data_major: pick(rng, 2) == 0,
            r: [1, 2, 3][pick(rng, 3)],
            cm: [1, 2, 3][pick(rng, 3)],
            rows_split: pick(rng, 2) == 0,
            axis_index: pick(rng, 2) == 0,
            collective: pick(rng, 4),
        }
    }

    /// The device at data coordinate `i`, model coordinate `j`.
    fn dev(&self, i: i64, j: i64) -> i64 {
        match self.data_major {
            true => i * self.m + j,
            false => j * self.a + i,
        }
    }

    /// Devices listed data-major (`by_data`) or model-major, as a device list's text.
    fn list(&self, by_data: bool) -> String {
        let pairs: Vec<(i64, i64)> = match by_data {
            true => (0..self.a)
                .flat_map(|i| (0..self.m).map(move |j| (i, j)))
                .collect(),
            false => (0..self.m)
                .flat_map(|j| (0..self.a).map(move |i| (i, j)))
                .collect(),
        };
        let ids: Vec<String> = pairs
            .iter()
            .map(|&(i, j)| self.dev(i, j).to_string())
            .collect();
        ids.join(",")
    }

    /// The data and model coordinates of partition id `pid` (a `u32[]`), as body lines
    /// defining `{p}data` and `{p}model`.
    fn coords(&self, p: &str, pid: &str) -> Vec<String> {
        let (minor, major_name, minor_name) = match self.data_major {
            true => (self.m, "data", "model"),
            false => (self.a, "model", "data"),
        };
        vec![
            format!("  {p}n = u32[] constant({minor})"),
            format!("  {p}{major_name} = u32[] divide({pid}, {p}n)"),
            format!("  {p}{minor_name} = u32[] remainder({pid}, {p}n)"),
        ]
    }

    /// Replica groups over "data", one per model coordinate.
    fn data_groups(&self) -> String {
        let groups: Vec<String> = (0..self.m)
            .map(|j| {
                let g: Vec<String> = (0..self.a).map(|i| self.dev(i, j).to_string()).collect();
                format!("{{{}}}", g.join(","))
            })
            .collect();
        format!("{{{}}}", groups.join(","))
    }

    /// The ring over "data" within each model coordinate.
    fn data_ring(&self) -> String {
        let pairs: Vec<String> = (0..self.m)
            .flat_map(|j| (0..self.a).map(move |i| (i, j)))
            .map(|(i, j)| format!("{{{},{}}}", self.dev(i, j), self.dev((i + 1) % self.a, j)))
            .collect();
        format!("{{{}}}", pairs.join(","))
    }

    /// Global rows and columns.
    fn rows(&self) -> i64 {
        self.a * self.r
    }

    fn cols(&self) -> i64 {
        self.m * self.cm
    }

    /// Whether the nested region reads its input whole (psum_scatter) and whether its
    /// output is the same on every data coordinate (all_gather: whole at the exit).
    fn whole_in(&self) -> bool {
        self.collective == 3
    }

    fn whole_out(&self) -> bool {
        self.collective == 1
    }

    /// The x parameter's sharding.
    fn x_sharding(&self) -> String {
        match self.rows_split {
            true => format!(
                "{{devices=[{},1,{}]{} last_tile_dim_replicate}}",
                self.a,
                self.m,
                self.list(true)
            ),
            false => "{replicated}".to_string(),
        }
    }

    /// The nested body's lines from its input `ip` (the body's piece) to `c`, the
    /// device's data coordinate added first.
    fn nested_body(&self, pid_line: &str) -> (Vec<String>, i64) {
        let (r, cm, rows) = (self.r, self.cm, self.rows());
        let in_rows = if self.whole_in() { rows } else { r };
        let mut lines = vec![pid_line.to_string()];
        lines.extend(self.coords("q", "ipid"));
        lines.push("  jf = f32[] convert(qdata)".into());
        lines.push(format!(
            "  jb = f32[{in_rows},{cm}] broadcast(jf), dimensions={{}}"
        ));
        lines.push(format!("  b = f32[{in_rows},{cm}] add(ip, jb)"));
        let g = self.data_groups();
        let (line, out_rows) = match self.collective {
            0 => (
                format!("  c = f32[{r},{cm}] all-reduce(b), channel_id=1, replica_groups={g}, use_global_device_ids=true, to_apply=add"),
                r,
            ),
            1 => (
                format!("  c = f32[{rows},{cm}] all-gather(b), channel_id=1, replica_groups={g}, dimensions={{0}}, use_global_device_ids=true"),
                rows,
            ),
            2 => (
                format!("  c = f32[{r},{cm}] collective-permute(b), channel_id=1, source_target_pairs={}", self.data_ring()),
                r,
            ),
            _ => (
                format!("  c = f32[{r},{cm}] reduce-scatter(b), channel_id=1, replica_groups={g}, use_global_device_ids=true, dimensions={{0}}, to_apply=add"),
                r,
            ),
        };
        lines.push(line);
        (lines, out_rows)
    }
}

const ADD: &str =
    "add {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\n";

/// The draw in GSPMD's form: one flat computation, the nested boundaries' shardings with
/// a manual subgroup.
fn gspmd_text(d: &Draw) -> String {
    let (a, m, r, cm) = (d.a, d.m, d.r, d.cm);
    let (rows, cols) = (d.rows(), d.cols());
    let by_model = d.list(false);
    let by_data = d.list(true);
    let open = ", backend_config=\"unspecified_dims=[0,1]\"";
    let in_body =
        format!("{{devices=[1,1,{m},{a}]{by_model} last_tile_dims={{manual, replicated}}}}");
    let rows_in_body = format!("{{devices=[{a},1,{m}]{by_data} last_tile_dims={{manual}}}}");
    let mut lines = vec![
        format!("  x = f32[{rows},{cols}] parameter(0), sharding={}", d.x_sharding()),
        format!("  tx = f32[{rows},{cols}] tanh(x)"),
        format!("  sx = f32[{rows},{cols}] custom-call(tx), custom_call_target=\"Sharding\", sharding={{devices=[1,{m},{a}]{by_model} last_tile_dim_replicate}}{open}"),
        format!("  mx = f32[{rows},{cm}] custom-call(sx), custom_call_target=\"SPMDFullToShardShape\", sharding={in_body}{open}"),
    ];
    let mut a_line = format!("  av = f32[{rows},{cm}] multiply(mx, mx)");
    if d.axis_index {
        lines.push("  kpid = u32[] partition-id()".into());
        lines.extend(d.coords("k", "kpid"));
        lines.push("  ki = s32[] convert(kmodel)".into());
        lines.push(
            "  km = s32[] custom-call(ki), custom_call_target=\"Sharding\", sharding={manual}"
                .into(),
        );
        lines.push(format!("  kf = s32[] custom-call(km), custom_call_target=\"SPMDShardToFullShape\", sharding={{devices=[{m},{a}]{by_model} last_tile_dims={{manual, replicated}}}}"));
        lines.push("  k = f32[] convert(kf)".into());
        lines.push("  one = f32[] constant(1)".into());
        lines.push("  k1 = f32[] add(k, one)".into());
        lines.push(format!(
            "  kb = f32[{rows},{cm}] broadcast(k1), dimensions={{}}"
        ));
        a_line = format!("  av = f32[{rows},{cm}] multiply(mx, kb)");
    }
    lines.push(a_line);
    let nested_in = if d.whole_in() {
        &in_body
    } else {
        &rows_in_body
    };
    let in_rows = if d.whole_in() { rows } else { r };
    lines.push(format!("  as = f32[{rows},{cm}] custom-call(av), custom_call_target=\"Sharding\", sharding={nested_in}{open}"));
    lines.push(format!("  ip = f32[{in_rows},{cm}] custom-call(as), custom_call_target=\"SPMDFullToShardShape\", sharding={{manual}}{open}"));
    let (body, out_rows) = d.nested_body("  ipid = u32[] partition-id()");
    lines.extend(body);
    let nested_out = if d.whole_out() {
        &in_body
    } else {
        &rows_in_body
    };
    lines.push(format!("  cmv = f32[{out_rows},{cm}] custom-call(c), custom_call_target=\"Sharding\", sharding={{manual}}{open}"));
    lines.push(format!("  cf = f32[{rows},{cm}] custom-call(cmv), custom_call_target=\"SPMDShardToFullShape\", sharding={nested_out}{open}"));
    lines.push("  half = f32[] constant(0.5)".into());
    lines.push(format!(
        "  hb = f32[{rows},{cm}] broadcast(half), dimensions={{}}"
    ));
    lines.push(format!("  ch = f32[{rows},{cm}] multiply(cf, hb)"));
    lines.push(format!("  out = f32[{rows},{cm}] add(ch, mx)"));
    lines.push(format!("  os = f32[{rows},{cm}] custom-call(out), custom_call_target=\"Sharding\", sharding={in_body}{open}"));
    lines.push(format!("  full = f32[{rows},{cols}] custom-call(os), custom_call_target=\"SPMDShardToFullShape\", sharding={{devices=[1,{m},{a}]{by_model} last_tile_dim_replicate}}{open}"));
    lines.push(format!("  ROOT o = f32[{rows},{cols}] sine(full)"));
    format!(
        "HloModule random_nested_gspmd\n\n{ADD}\nENTRY e {{\n{}\n}}\n",
        lines.join("\n")
    )
}

/// Shardy's frontend attributes of a boundary: `key`'s per-value shardings (each a list
/// of per-dimension axis lists) and the manual axis, quotes escaped as HLO text has them.
fn sdy_attrs(key: &str, dims: &[&str], manual: &str) -> String {
    let s = format!("#sdy.sharding_per_value<[<@mesh, [{}]>]>", dims.join(", "));
    let axes = format!("#sdy<manual_axes{{\"{manual}\"}}>");
    format!(
        "frontend_attributes={{{key}=\"{}\",xla.sdy.manual_axes=\"{}\"}}",
        s.replace('"', "\\\""),
        axes.replace('"', "\\\"")
    )
}

/// The draw in Shardy's form: the regions' bodies called between `xla.sdy` boundaries.
fn shardy_text(d: &Draw) -> String {
    let (a, m, r, cm) = (d.a, d.m, d.r, d.cm);
    let (rows, cols) = (d.rows(), d.cols());
    let mesh = match d.data_major {
        true => format!("[\"data\"={a}, \"model\"={m}]"),
        false => format!("[\"model\"={m}, \"data\"={a}]"),
    };
    let header = format!(
        "HloModule random_nested_sdy, frontend_attributes={{xla.sdy.meshes={{mesh = #sdy.mesh<{mesh}>}}}}"
    );
    let enter = "custom_call_target=\"xla.sdy.GlobalToLocalShape\"";
    let leave = "custom_call_target=\"xla.sdy.LocalToGlobalShape\"";
    let in_rows = if d.whole_in() { rows } else { r };
    let (body, out_rows) = d.nested_body("  ipid = u32[] partition-id()");
    let inner = format!(
        "inner {{\n  ip = f32[{in_rows},{cm}] parameter(0)\n{}\n  ROOT ic = f32[{out_rows},{cm}] copy(c)\n}}\n",
        body.join("\n")
    );
    let mut comps = vec![ADD.to_string(), inner];
    let mut outer = vec![format!("  ob = f32[{rows},{cm}] parameter(0)")];
    let mut a_line = format!("  av = f32[{rows},{cm}] multiply(ob, ob)");
    if d.axis_index {
        let mut k = vec!["  kpid = u32[] partition-id()".to_string()];
        k.extend(d.coords("k", "kpid"));
        comps.push(format!(
            "axis {{\n{}\n  ROOT ki = s32[] convert(kmodel)\n}}\n",
            k.join("\n")
        ));
        outer.push("  kc = s32[] call(), to_apply=axis".into());
        outer.push(format!(
            "  kf = s32[] custom-call(kc), {leave}, {}",
            sdy_attrs("xla.sdy.out_shardings", &[], "data")
        ));
        outer.push("  k = f32[] convert(kf)".into());
        outer.push("  one = f32[] constant(1)".into());
        outer.push("  k1 = f32[] add(k, one)".into());
        outer.push(format!(
            "  kb = f32[{rows},{cm}] broadcast(k1), dimensions={{}}"
        ));
        a_line = format!("  av = f32[{rows},{cm}] multiply(ob, kb)");
    }
    outer.push(a_line);
    let nested_in: &[&str] = if d.whole_in() {
        &["{}", "{}"]
    } else {
        &["{\"data\"}", "{}"]
    };
    let nested_out: &[&str] = if d.whole_out() {
        &["{}", "{}"]
    } else {
        &["{\"data\"}", "{}"]
    };
    outer.push(format!(
        "  ie = f32[{in_rows},{cm}] custom-call(av), {enter}, {}",
        sdy_attrs("xla.sdy.in_shardings", nested_in, "data")
    ));
    outer.push(format!(
        "  icall = f32[{out_rows},{cm}] call(ie), to_apply=inner"
    ));
    outer.push(format!(
        "  cf = f32[{rows},{cm}] custom-call(icall), {leave}, {}",
        sdy_attrs("xla.sdy.out_shardings", nested_out, "data")
    ));
    outer.push("  half = f32[] constant(0.5)".into());
    outer.push(format!(
        "  hb = f32[{rows},{cm}] broadcast(half), dimensions={{}}"
    ));
    outer.push(format!("  ch = f32[{rows},{cm}] multiply(cf, hb)"));
    // JAX's constraints on the body's values: the automatic axes open.
    let open = format!(
        "custom_call_target=\"Sharding\", sharding={{replicated}}, frontend_attributes={{xla.sdy.sharding=\"{}\"}}",
        "#sdy.sharding_per_value<[<@mesh, [{?}, {?}]>]>".replace('"', "\\\"")
    );
    outer.push(format!("  chs = f32[{rows},{cm}] custom-call(ch), {open}"));
    outer.push(format!("  out = f32[{rows},{cm}] add(chs, ob)"));
    outer.push(format!(
        "  ROOT outs = f32[{rows},{cm}] custom-call(out), {open}"
    ));
    comps.push(format!("outer {{\n{}\n}}\n", outer.join("\n")));
    let by_model = ["{}", "{\"model\"}"];
    let entry = [
        format!(
            "  x = f32[{rows},{cols}] parameter(0), sharding={}",
            d.x_sharding()
        ),
        format!("  tx = f32[{rows},{cols}] tanh(x)"),
        format!(
            "  mx = f32[{rows},{cm}] custom-call(tx), {enter}, {}",
            sdy_attrs("xla.sdy.in_shardings", &by_model, "model")
        ),
        format!("  oc = f32[{rows},{cm}] call(mx), to_apply=outer"),
        format!(
            "  full = f32[{rows},{cols}] custom-call(oc), {leave}, {}",
            sdy_attrs("xla.sdy.out_shardings", &by_model, "model")
        ),
        format!("  ROOT o = f32[{rows},{cols}] sine(full)"),
    ];
    format!(
        "{header}\n\n{}\nENTRY e {{\n{}\n}}\n",
        comps.join("\n"),
        entry.join("\n")
    )
}

/// Both forms of one draw checked: the GSPMD form against its global evaluation, the
/// Shardy form against the same outputs and the same collective bytes.
fn check_draw(d: &Draw, devices: usize, seed: u64) -> Result<(), String> {
    let parse = |text: &str| hlo::parse_module(text).map_err(|e| format!("{e}\n{text}"));
    let g: Module = parse(&gspmd_text(d))?;
    let s: Module = parse(&shardy_text(d))?;
    let args = random_args(&g, seed);
    let pg = check_module(&g, devices, &args).map_err(|e| format!("GSPMD form: {e}"))?;
    let want = global_evaluation(&g, devices, &args)?;
    let shardy_global = global_evaluation(&s, devices, &args)
        .map_err(|e| format!("the evaluator's global run of the Shardy form: {e}"))?;
    for (i, (sv, w)) in shardy_global.iter().zip(&want).enumerate() {
        if sv != w {
            return Err(format!(
                "the evaluator's global run of the Shardy form differs from the GSPMD form's at output {i}"
            ));
        }
    }
    let ps = spmd::partition(&s, devices).map_err(|e| format!("Shardy form: {e}"))?;
    let got = run_partitioned(&s, &ps.module, devices, &args)?;
    for (i, (gv, w)) in got.iter().zip(&want).enumerate() {
        let (Some(gv), Some(w)) = (gv.as_array(), w.as_array()) else {
            return Err(format!("output {i} is not an array"));
        };
        let r = hlo_eval::report::compare_report(gv, w, None);
        if !r.matches {
            return Err(format!(
                "Shardy form: {}\n{}",
                r.line(&format!("out{i}"), "", "global"),
                hlo::print_module(&ps.module)
            ));
        }
    }
    let bytes = |p: &spmd::Partitioned| spmd::collective_stats(&p.module).map(|s| s.bytes);
    let (bg, bs) = (
        bytes(&pg).map_err(|e| e.to_string())?,
        bytes(&ps).map_err(|e| e.to_string())?,
    );
    if bg != bs {
        return Err(format!(
            "the Shardy form moves {bs} bytes, the GSPMD form {bg}\n{}",
            ps.explain
        ));
    }
    Ok(())
}

#[test]
fn nested_regions_in_both_forms_equal_the_global_evaluation_and_move_the_same_bytes() {
    let mut rng = SplitMix64::seed_from_u64(3535);
    let mut failures = Vec::new();
    let cases = 36;
    for case in 0..cases {
        let devices = [2i64, 4, 8][case % 3];
        let d = Draw::new(&mut rng, devices);
        if let Err(e) = check_draw(&d, devices as usize, case as u64) {
            failures.push(format!(
                "case {case} on {devices} devices: {e}\n{}\n{}",
                gspmd_text(&d),
                shardy_text(&d)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} random nested regions differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

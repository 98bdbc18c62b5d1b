//! Property test: a partially manual region nested in a partially manual one, in Shardy's
//! form (what JAX writes by default). On a mesh of three axes, an outer `shard_map` is
//! manual on axis A (columns split over A), and its body holds a `shard_map` manual on B
//! (rows split over B) that leaves axis C automatic; the inner body optionally runs a
//! collective over B (psum or a ring ppermute) and adds `axis_index(B)` (a region manual
//! on C nested in it), the outer body optionally scales by `1 + axis_index(A)` (a region
//! manual on B and C). Meshes of 8 (2x2x2) and 16 (4x2x2 in any order) devices, the three
//! roles drawn over the mesh's axes, the input whole or its rows or columns split over
//! any axis. Each module, partitioned and evaluated on its devices, must equal the
//! evaluator's global run of the unpartitioned module (whose `xla.sdy` boundaries give
//! each device its piece and assemble the pieces, nested regions within their enclosing
//! region's coordinates).

use rand_core::{Rng as _, SeedableRng};
use rand_xoshiro::SplitMix64;

use crate::check::{check_module, random_args};

fn pick(rng: &mut SplitMix64, n: usize) -> usize {
    (rng.next_u64() % n as u64) as usize
}

/// One random draw.
struct Draw {
    /// Mesh axes (name, size), major first; device = row-major position.
    mesh: Vec<(&'static str, i64)>,
    /// The mesh positions of the outer manual, inner manual and automatic axes.
    a: usize,
    b: usize,
    c: usize,
    /// Rows per B coordinate and columns per A coordinate.
    r: i64,
    cm: i64,
    /// 0 whole, 1 rows split over the mesh axis `split_axis`, 2 columns over it, 3
    /// columns over A then C, 4 rows over B then C (3 and 4 refine the regions' splits,
    /// so that the inner body runs tiled over C).
    split: usize,
    split_axis: usize,
    /// 0 none, 1 psum over B, 2 a ring over B.
    collective: usize,
    axis_index_b: bool,
    axis_index_a: bool,
}

impl Draw {
    fn new(rng: &mut SplitMix64, devices: i64) -> Draw {
        let names = ["x", "y", "z"];
        let mut sizes = [2i64, 2, 2];
        if devices == 16 {
            sizes[pick(rng, 3)] = 4;
        }
        let mesh: Vec<(&str, i64)> = names.iter().copied().zip(sizes).collect();
        let roles = [
            [0, 1, 2],
            [0, 2, 1],
            [1, 0, 2],
            [1, 2, 0],
            [2, 0, 1],
            [2, 1, 0],
        ][pick(rng, 6)];
        let split = pick(rng, 5);
        // Pieces that split evenly over C where the draw splits them so.
        let c = sizes[roles[2]];
        Draw {
            mesh,
            a: roles[0],
            b: roles[1],
            c: roles[2],
            r: [1, 2][pick(rng, 2)] * if split == 4 { c } else { 1 },
            cm: [1, 3][pick(rng, 2)] * if split == 3 { c } else { 1 },
            split,
            split_axis: pick(rng, 3),
            collective: pick(rng, 3),
            axis_index_b: pick(rng, 2) == 0,
            axis_index_a: pick(rng, 2) == 0,
        }
    }

    fn size(&self, axis: usize) -> i64 {
        self.mesh[axis].1
    }

    fn name(&self, axis: usize) -> &str {
        self.mesh[axis].0
    }

    fn devices(&self) -> i64 {
        self.mesh.iter().map(|(_, s)| s).product()
    }

    /// Row-major stride of mesh axis `axis`.
    fn stride(&self, axis: usize) -> i64 {
        self.mesh[axis + 1..].iter().map(|(_, s)| s).product()
    }

    fn coord(&self, device: i64, axis: usize) -> i64 {
        device / self.stride(axis) % self.size(axis)
    }

    /// The device whose coordinates are `device`'s but `k` on `axis`.
    fn with_coord(&self, device: i64, axis: usize, k: i64) -> i64 {
        device + (k - self.coord(device, axis)) * self.stride(axis)
    }

    /// Groups of devices that differ only on `axis`.
    fn groups(&self, axis: usize) -> String {
        let groups: Vec<String> = (0..self.devices())
            .filter(|&d| self.coord(d, axis) == 0)
            .map(|d| {
                let g: Vec<String> = (0..self.size(axis))
                    .map(|k| self.with_coord(d, axis, k).to_string())
                    .collect();
                format!("{{{}}}", g.join(","))
            })
            .collect();
        format!("{{{}}}", groups.join(","))
    }

    /// Each device to its successor on `axis`.
    fn ring(&self, axis: usize) -> String {
        let pairs: Vec<String> = (0..self.devices())
            .map(|d| {
                let next = self.with_coord(d, axis, (self.coord(d, axis) + 1) % self.size(axis));
                format!("{{{d},{next}}}")
            })
            .collect();
        format!("{{{}}}", pairs.join(","))
    }

    fn mesh_text(&self) -> String {
        let axes: Vec<String> = self
            .mesh
            .iter()
            .map(|(n, s)| format!("\"{n}\"={s}"))
            .collect();
        format!("#sdy.mesh<[{}]>", axes.join(", "))
    }

    fn rows(&self) -> i64 {
        self.r * self.size(self.b)
    }

    fn cols(&self) -> i64 {
        self.cm * self.size(self.a)
    }

    /// The input's sharding in hlo's named-mesh text.
    fn x_sharding(&self) -> String {
        let axes: Vec<String> = self
            .mesh
            .iter()
            .map(|(n, s)| format!("'{n}'={s}"))
            .collect();
        let s = format!("'{}'", self.name(self.split_axis));
        let two = |x: usize| format!("'{}','{}'", self.name(x), self.name(self.c));
        let dims = match self.split {
            0 => "{}, {}".to_string(),
            1 => format!("{{{s}}}, {{}}"),
            2 => format!("{{}}, {{{s}}}"),
            3 => format!("{{}}, {{{}}}", two(self.a)),
            _ => format!("{{{}}}, {{}}", two(self.b)),
        };
        format!("{{mesh[{}], [{dims}]}}", axes.join(","))
    }
}

/// Frontend attributes of a Shardy boundary: sharding `dims` (per dimension, an axis
/// name or none) under `key`, manual `axes`.
fn boundary(key: &str, dims: &[Option<&str>], axes: &[&str]) -> String {
    let dims: Vec<String> = dims
        .iter()
        .map(|d| match d {
            Some(a) => format!("{{\\\"{a}\\\"}}"),
            None => "{}".to_string(),
        })
        .collect();
    let axes: Vec<String> = axes.iter().map(|a| format!("\\\"{a}\\\"")).collect();
    format!(
        "frontend_attributes={{{key}=\"#sdy.sharding_per_value<[<@mesh, [{}]>]>\",xla.sdy.manual_axes=\"#sdy<manual_axes{{{}}}>\"}}",
        dims.join(", "),
        axes.join(", ")
    )
}

const L2G: &str = "custom_call_target=\"xla.sdy.LocalToGlobalShape\"";
const G2L: &str = "custom_call_target=\"xla.sdy.GlobalToLocalShape\"";

/// The computation giving this device's coordinate on mesh axis `axis`.
fn index_body(d: &Draw, name: &str, axis: usize) -> String {
    format!(
        "{name} {{\n  p = u32[] partition-id()\n  s = u32[] constant({})\n  q = u32[] divide(p, s)\n  n = u32[] constant({})\n  r = u32[] remainder(q, n)\n  ROOT c = s32[] convert(r)\n}}\n",
        d.stride(axis),
        d.size(axis)
    )
}

/// Lines reading `axis_index(axis)` as `{v}` (an f32 scalar) through a region manual on
/// `others` nested where the lines sit.
fn index_lines(v: &str, body: &str, others: &[&str]) -> Vec<String> {
    vec![
        format!("  {v}i = s32[] call(), to_apply={body}"),
        format!(
            "  {v}g = s32[] custom-call({v}i), {L2G}, {}",
            boundary("xla.sdy.out_shardings", &[], others)
        ),
        format!("  {v} = f32[] convert({v}g)"),
    ]
}

fn module_text(d: &Draw) -> String {
    let (r, cm, rows, cols) = (d.r, d.cm, d.rows(), d.cols());
    let (an, bn, cn) = (d.name(d.a), d.name(d.b), d.name(d.c));
    let mut inner = vec![
        "inner {".to_string(),
        format!("  p = f32[{r},{cm}] parameter(0)"),
    ];
    inner.push(match d.collective {
        0 => format!("  v = f32[{r},{cm}] negate(p)"),
        1 => format!(
            "  v = f32[{r},{cm}] all-reduce(p), channel_id=1, replica_groups={}, use_global_device_ids=true, to_apply=add",
            d.groups(d.b)
        ),
        _ => format!(
            "  v = f32[{r},{cm}] collective-permute(p), channel_id=1, source_target_pairs={}",
            d.ring(d.b)
        ),
    });
    if d.axis_index_b {
        inner.extend(index_lines("j", "index_b", &[cn]));
        inner.push(format!(
            "  jb = f32[{r},{cm}] broadcast(j), dimensions={{}}"
        ));
        inner.push(format!("  ROOT w = f32[{r},{cm}] add(v, jb)"));
    } else {
        inner.push(format!("  ROOT w = f32[{r},{cm}] tanh(v)"));
    }
    inner.push("}\n".into());
    let mut outer = vec![
        "outer {".to_string(),
        format!("  q = f32[{rows},{cm}] parameter(0)"),
    ];
    let scaled = match d.axis_index_a {
        true => {
            let mut others: Vec<&str> = vec![bn, cn];
            others.sort_by_key(|n| d.mesh.iter().position(|(m, _)| m == n));
            outer.extend(index_lines("k", "index_a", &others));
            outer.push("  one = f32[] constant(1)".into());
            outer.push("  k1 = f32[] add(k, one)".into());
            outer.push(format!(
                "  kb = f32[{rows},{cm}] broadcast(k1), dimensions={{}}"
            ));
            outer.push(format!("  m = f32[{rows},{cm}] multiply(q, kb)"));
            "m"
        }
        false => "q",
    };
    outer.push(format!(
        "  e = f32[{r},{cm}] custom-call({scaled}), {G2L}, {}",
        boundary("xla.sdy.in_shardings", &[Some(bn), None], &[bn])
    ));
    outer.push(format!("  c = f32[{r},{cm}] call(e), to_apply=inner"));
    outer.push(format!(
        "  l = f32[{rows},{cm}] custom-call(c), {L2G}, {}",
        boundary("xla.sdy.out_shardings", &[Some(bn), None], &[bn])
    ));
    outer.push(format!("  t = f32[{rows},{cm}] tanh(l)"));
    outer.push(format!("  ROOT o = f32[{rows},{cm}] add(t, q)"));
    outer.push("}\n".into());
    let entry = [
        "ENTRY main {".to_string(),
        format!(
            "  x = f32[{rows},{cols}] parameter(0), sharding={}",
            d.x_sharding()
        ),
        format!("  t = f32[{rows},{cols}] tanh(x)"),
        format!(
            "  e = f32[{rows},{cm}] custom-call(t), {G2L}, {}",
            boundary("xla.sdy.in_shardings", &[None, Some(an)], &[an])
        ),
        format!("  c = f32[{rows},{cm}] call(e), to_apply=outer"),
        format!(
            "  l = f32[{rows},{cols}] custom-call(c), {L2G}, {}",
            boundary("xla.sdy.out_shardings", &[None, Some(an)], &[an])
        ),
        format!("  ROOT y = f32[{rows},{cols}] tanh(l)"),
        "}".to_string(),
    ];
    format!(
        "HloModule m, frontend_attributes={{xla.sdy.meshes={{mesh = {}}}}}\n\nadd {{\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}}\n\n{}\n{}\n{}\n{}\n{}\n",
        d.mesh_text(),
        index_body(d, "index_a", d.a),
        index_body(d, "index_b", d.b),
        inner.join("\n"),
        outer.join("\n"),
        entry.join("\n")
    )
}

#[test]
fn partially_manual_regions_nested_in_partially_manual_ones_equal_the_global_evaluation() {
    let mut rng = SplitMix64::seed_from_u64(3536);
    let mut failures = Vec::new();
    let cases = 24;
    for case in 0..cases {
        let devices = [8i64, 16][case % 2];
        let d = Draw::new(&mut rng, devices);
        let text = module_text(&d);
        let module = match hlo::parse_module(&text) {
            Ok(m) => m,
            Err(e) => {
                failures.push(format!("case {case}: {e}\n{text}"));
                continue;
            }
        };
        let args = random_args(&module, case as u64);
        match check_module(&module, devices as usize, &args) {
            Err(e) => failures.push(format!("case {case} on {devices} devices: {e}\n{text}")),
            // The nested region runs as a partially manual one (per coordinate of A and
            // B), tiled over C where the input's split refines both regions' splits.
            Ok(p) => {
                let entry = p.explain.lines().find(|l| {
                    l.contains("enters a partially manual region nested in a partially manual one")
                });
                let tiled =
                    entry.is_some_and(|l| !l.ends_with("tiled {replicated} over the others"));
                if entry.is_none() || (d.split >= 3 && !tiled) {
                    failures.push(format!(
                        "case {case} on {devices} devices: the nested region's entry is {entry:?}\n{}\n{text}",
                        p.explain
                    ));
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {cases} random nested partially manual regions differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

//! Loop state updated in place (issue 32 item 4, "while bodies run in place on their
//! carry") against the evaluator: random while loops whose state is a counter, two
//! `f32[N,M]` arrays, a row vector and a pass-through matrix; each body result is an
//! update of its own element (an elementwise chain, the rows minus their sums, the
//! element plus a small GEMM of it, a product with the other array), a swap of the two
//! arrays, or an update that reads the other element too (so a state element is read
//! after its own result's kernel); sometimes an inner loop updates an array first; the
//! pass-through matrix starts from a parameter or from a temporary of the entry, read
//! again after the loop or not.
//! Compiled through the whole pipeline, run on random inputs for two to four iterations
//! and compared with the reference evaluator. Not vacuous: many programs keep a body
//! result in its state element's own allocation, some the pass-through state in its
//! initial temporary's.

use crate::gen::{self, Rng};

/// The update of array `x` (the other array `y`, the row vector `q`, the matrix `w`) as
/// lines ending in the value `name`.
fn update(rng: &mut Rng, name: &str, x: &str, y: &str, (n, m): (i64, i64)) -> Vec<String> {
    let a = format!("f32[{n},{m}]");
    let t = |s: &str| format!("{name}_{s}");
    match rng.below(7) {
        0 => vec![
            format!("  {} = {a} tanh({x})", t("t")),
            format!("  {name} = {a} add({}, {x})", t("t")),
        ],
        1 => vec![
            format!(
                "  {} = f32[{n}] reduce({x}, zero), dimensions={{1}}, to_apply=sum",
                t("r")
            ),
            format!("  {} = {a} broadcast({}), dimensions={{0}}", t("b"), t("r")),
            format!("  {} = {a} subtract({x}, {})", t("d"), t("b")),
            format!("  {name} = {a} multiply({}, tenth)", t("d")),
        ],
        2 => vec![
            format!(
                "  {} = {a} dot({x}, w), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}",
                t("g")
            ),
            format!("  {} = {a} multiply({}, tenth)", t("s"), t("g")),
            format!("  {name} = {a} add({x}, {})", t("s")),
        ],
        3 => vec![
            format!("  {} = {a} broadcast(q), dimensions={{1}}", t("b")),
            format!("  {} = {a} multiply({x}, {})", t("m"), t("b")),
            format!("  {name} = {a} tanh({})", t("m")),
        ],
        // Reads the other array: that one is then read after its own update, or the two
        // updates fuse into one kernel reading both.
        4 => vec![
            format!("  {} = {a} multiply({x}, {y})", t("m")),
            format!("  {name} = {a} tanh({})", t("m")),
        ],
        _ => vec![
            format!("  {} = {a} negate({x})", t("n")),
            format!("  {name} = {a} exponential({})", t("n")),
        ],
    }
}

/// A random loop; `seed` picks everything.
fn module(seed: u64) -> String {
    let mut rng = Rng::new(seed);
    let (n, m) = (rng.range(1, 9), rng.range(1, 9));
    let a = format!("f32[{n},{m}]");
    let state = format!("(s32[], {a}, {a}, f32[{m}], f32[{m},{m}])");
    let trips = rng.range(2, 5);
    let mut body = vec![
        format!("  s = {state} parameter(0)"),
        "  i = s32[] get-tuple-element(s), index=0".to_string(),
        "  one = s32[] constant(1)".to_string(),
        "  j = s32[] add(i, one)".to_string(),
        format!("  a = {a} get-tuple-element(s), index=1"),
        format!("  b = {a} get-tuple-element(s), index=2"),
        format!("  q = f32[{m}] get-tuple-element(s), index=3"),
        format!("  w = f32[{m},{m}] get-tuple-element(s), index=4"),
        "  zero = f32[] constant(0)".to_string(),
        "  c01 = f32[] constant(0.1)".to_string(),
        format!("  tenth = {a} broadcast(c01), dimensions={{}}"),
    ];
    let mut inner = String::new();
    let mut x = "a".to_string();
    if rng.below(4) == 0 {
        // An inner loop updates `a` first (its own state carried in place).
        let it = format!("(s32[], {a})");
        inner = format!(
            "icond {{\n  s = {it} parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n  \
             c = s32[] constant(2)\n  ROOT lt = pred[] compare(i, c), direction=LT\n}}\n\n\
             ibody {{\n  s = {it} parameter(0)\n  i = s32[] get-tuple-element(s), index=0\n  \
             one = s32[] constant(1)\n  j = s32[] add(i, one)\n  \
             x = {a} get-tuple-element(s), index=1\n  c5 = f32[] constant(0.5)\n  \
             h = {a} broadcast(c5), dimensions={{}}\n  \
             y = {a} multiply(x, h)\n  z = {a} tanh(y)\n  ROOT r = {it} tuple(j, z)\n}}\n\n"
        );
        body.push("  i0 = s32[] constant(0)".to_string());
        body.push(format!("  it = {it} tuple(i0, a)"));
        body.push(format!(
            "  iw = {it} while(it), condition=icond, body=ibody"
        ));
        body.push(format!("  a2 = {a} get-tuple-element(iw), index=1"));
        x = "a2".to_string();
    }
    let (na, nb) = if rng.below(6) == 0 {
        // A swap: each result is the other state element.
        ("b".to_string(), x.clone())
    } else {
        body.extend(update(&mut rng, "na", &x, "b", (n, m)));
        body.extend(update(&mut rng, "nb", "b", &x, (n, m)));
        ("na".to_string(), "nb".to_string())
    };
    body.push(format!(
        "  rq = f32[{m}] reduce({na}, zero), dimensions={{0}}, to_apply=sum"
    ));
    body.push(format!("  nq0 = f32[{m}] multiply(rq, rq)"));
    body.push(format!("  nq1 = f32[{m}] tanh(nq0)"));
    body.push(format!("  nq = f32[{m}] add(q, nq1)"));
    body.push(format!("  ROOT r = {state} tuple(j, {na}, {nb}, nq, w)"));
    // The pass-through matrix from a temporary of the entry, sometimes read again after
    // the loop (beside the loop's own copy of it): its state then lives in that
    // temporary's bytes, which must stay intact through the loop and after it.
    let w0 = match rng.below(3) {
        0 => "p3",
        _ => "w0",
    };
    let (after, out) = if w0 == "w0" && rng.below(2) == 0 {
        (
            format!(
                "  ww = f32[{m},{m}] get-tuple-element(w), index=4
                   wm = f32[{m},{m}] multiply(ww, w0)
"
            ),
            format!(", f32[{m},{m}]) tuple(wa, wb, wq, wm)"),
        )
    } else {
        (String::new(), ") tuple(wa, wb, wq)".to_string())
    };
    format!(
        "HloModule carried\n\nsum {{\n  x = f32[] parameter(0)\n  y = f32[] parameter(1)\n  \
         ROOT z = f32[] add(x, y)\n}}\n\n{inner}cond {{\n  s = {state} parameter(0)\n  \
         i = s32[] get-tuple-element(s), index=0\n  c = s32[] constant({trips})\n  \
         ROOT lt = pred[] compare(i, c), direction=LT\n}}\n\nbody {{\n{}\n}}\n\n\
         ENTRY e {{\n  p0 = {a} parameter(0)\n  p1 = {a} parameter(1)\n  p2 = f32[{m}] parameter(2)\n  \
         p3 = f32[{m},{m}] parameter(3)\n  i0 = s32[] constant(0)\n  \
         w0 = f32[{m},{m}] tanh(p3)\n  \
         t = {state} tuple(i0, p0, p1, p2, {w0})\n  \
         w = {state} while(t), condition=cond, body=body\n  \
         wa = {a} get-tuple-element(w), index=1\n  wb = {a} get-tuple-element(w), index=2\n  \
         wq = f32[{m}] get-tuple-element(w), index=3\n{after}  \
         ROOT root = ({a}, {a}, f32[{m}]{out}\n}}\n",
        body.join("\n")
    )
}

/// Whether a loop of `thunks` (at any depth) keeps a body result in its state element's
/// own allocation.
fn carries_in_place(p: &plan::Program, thunks: &[plan::Thunk]) -> bool {
    thunks.iter().any(|t| match t {
        plan::Thunk::While {
            cond,
            body,
            body_results,
            state,
            ..
        } => {
            body_results
                .iter()
                .zip(state)
                .any(|(&r, &s)| r != s && p.buffers[r].allocation == p.buffers[s].allocation)
                || carries_in_place(p, cond)
                || carries_in_place(p, body)
        }
        plan::Thunk::Conditional { branches, .. } => {
            branches.iter().any(|(ts, _)| carries_in_place(p, ts))
        }
        _ => false,
    })
}

/// Whether an entry loop keeps a state element in the bytes of a temporary initial value
/// (a read-only element, `plan::memory::carried::read_only_state`).
fn state_in_a_temporary(p: &plan::Program) -> bool {
    p.thunks.iter().any(|t| match t {
        plan::Thunk::While { state, init, .. } => state.iter().zip(init).any(|(&s, &i)| {
            s != i
                && p.buffers[i].defined_at.is_some()
                && p.buffers[s].allocation == p.buffers[i].allocation
        }),
        _ => false,
    })
}

#[test]
fn carried_loop_state_matches_the_reference_evaluator() {
    let options = gen::options("hloc-cache-carried");
    let mut failures = Vec::new();
    let (mut carried, mut in_temporary) = (0, 0);
    let seeds = gen::seeds(0..20);
    let count = seeds.end - seeds.start;
    for seed in seeds {
        let text = module(seed);
        let m = gen::parse(seed, &text);
        let args = gen::random_args(&m, seed);
        gen::check_inspecting(seed, (&m, &text), &args, &options, &mut failures, |exe| {
            let p = &exe.plan().program;
            carried += usize::from(carries_in_place(p, &p.thunks));
            in_temporary += usize::from(state_in_a_temporary(p));
        });
    }
    gen::assert_none(&failures);
    assert!(
        count < 10 || in_temporary > 0,
        "no program kept its pass-through state in its initial temporary's bytes"
    );
    assert!(
        count < 10 || carried * 2 >= count as usize,
        "only {carried} of {count} programs updated a loop's state in place"
    );
}

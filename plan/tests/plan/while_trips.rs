//! `Thunk::While::trips`: a counted loop (JAX's `fori_loop` shape: a counter from a
//! constant, below a constant, by a constant step) carries its trip count, nested loops
//! each their own; a loop whose bound is a run-time value carries none.

use plan::Thunk;

/// The module: an outer loop over `i` from 0 below 5 by 2 (3 trips) whose body runs an
/// inner loop over `j` from 1 below `bound` by 1.
fn module(bound: &str) -> String {
    format!(
        "HloModule m\n\
         icond {{\n  p = (s32[], f32[4]) parameter(0)\n  j = s32[] get-tuple-element(p), index=0\n  \
         n = s32[] {bound}\n  ROOT lt = pred[] compare(j, n), direction=LT\n}}\n\
         ibody {{\n  p = (s32[], f32[4]) parameter(0)\n  j = s32[] get-tuple-element(p), index=0\n  \
         x = f32[4] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  j1 = s32[] add(j, one)\n  \
         x1 = f32[4] add(x, x)\n  ROOT t = (s32[], f32[4]) tuple(j1, x1)\n}}\n\
         ocond {{\n  p = (s32[], f32[4]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
         n = s32[] constant(5)\n  ROOT lt = pred[] compare(i, n), direction=LT\n}}\n\
         obody {{\n  p = (s32[], f32[4]) parameter(0)\n  i = s32[] get-tuple-element(p), index=0\n  \
         x = f32[4] get-tuple-element(p), index=1\n  one = s32[] constant(1)\n  t0 = (s32[], f32[4]) tuple(one, x)\n  \
         w = (s32[], f32[4]) while(t0), condition=icond, body=ibody\n  y = f32[4] get-tuple-element(w), index=1\n  \
         two = s32[] constant(2)\n  i1 = s32[] add(two, i)\n  ROOT t = (s32[], f32[4]) tuple(i1, y)\n}}\n\
         ENTRY e {{\n  x = f32[4] parameter(0)\n  z = s32[] constant(0)\n  t = (s32[], f32[4]) tuple(z, x)\n  \
         w = (s32[], f32[4]) while(t), condition=ocond, body=obody\n  ROOT r = f32[4] get-tuple-element(w), index=1\n}}\n"
    )
}

/// The trips of the outer loop and of the loop its body runs.
fn trips(bound: &str) -> (Option<u64>, Option<u64>) {
    let m = hlo::parse_module(&module(bound)).expect("parses");
    let p = plan::build_program(&m).expect("builds");
    let [Thunk::While { body, trips, .. }] = p.thunks.as_slice() else {
        panic!("one loop at the top: {}", plan::thunks_text(&p));
    };
    let inner = body.iter().find_map(|t| match t {
        Thunk::While { trips, .. } => Some(*trips),
        _ => None,
    });
    (*trips, inner.expect("a loop in the body"))
}

#[test]
fn counted_loops_carry_their_trips() {
    assert_eq!(trips("constant(9)"), (Some(3), Some(8)));
    // A bound below the start: the loop runs no trip, a known count of 0.
    assert_eq!(trips("constant(1)"), (Some(3), Some(0)));
}

#[test]
fn a_run_time_bound_is_unknown() {
    // The inner bound read from the loop state (the counter itself, doubled).
    assert_eq!(trips("add(j, j)"), (Some(3), None));
}

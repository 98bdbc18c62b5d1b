//! The first warp's transactions when addresses depend on runtime values: a start index or
//! gather index the whole warp shares moves every thread's address by one offset, so the
//! warp is counted with it at its lower bound; an index that differs between threads leaves
//! the addresses data-dependent and uncounted. The oracle enumerates the first warp's
//! addresses from the ops' own semantics (the slice or gathered row at index 0), not from
//! the indexing maps.

use std::collections::BTreeSet;

use indexing::coalescing::{first_warp, linear_thread_map, Coalescing, SEGMENT, WARP};

/// The counts of `output_to_input` of instruction `name` for operand `operand` (its only
/// map) under the loop emitter's linear thread map.
fn counted(text: &str, name: &str, operand: usize) -> Coalescing {
    let m = hlo::parse_module(text).expect("the test module parses");
    let h = m.instr(name).expect("the instruction exists");
    let grouped = indexing::output_to_input(&h).expect("indexing");
    let maps: Vec<_> = grouped[0].operands[operand].maps().collect();
    assert_eq!(maps.len(), 1, "one map for operand {operand} of {name}");
    let threads = linear_thread_map(h.instr().shape().dims()).expect("thread map");
    let shape = h
        .computation()
        .instr(h.instr().operands()[operand])
        .shape()
        .clone();
    first_warp(&threads, maps[0], &shape, 1 << 24).expect("counting")
}

/// `(loads, transactions, ideal)` of one load per entry of `loads`, each the byte
/// addresses the warp's threads read there.
fn oracle(loads: &[Vec<i64>], bytes: i64) -> (u64, u64, u64) {
    let mut t = 0;
    let mut ideal = 0;
    for addrs in loads {
        let distinct: BTreeSet<i64> = addrs.iter().copied().collect();
        let segs: BTreeSet<i64> = distinct.iter().map(|a| a.div_euclid(SEGMENT)).collect();
        t += segs.len() as u64;
        ideal += ((distinct.len() as i64 * bytes + SEGMENT - 1) / SEGMENT) as u64;
    }
    (loads.len() as u64, t, ideal)
}

fn counts(c: &Coalescing) -> (u64, u64, u64, Vec<i64>) {
    match c {
        Coalescing::Counted {
            loads,
            transactions,
            ideal,
            runtime_at,
        } => (*loads, *transactions, *ideal, runtime_at.clone()),
        other => panic!("not counted: {other}"),
    }
}

#[test]
fn a_dynamic_slice_is_counted_at_its_first_position() {
    // Rows of 48 from a 300-wide f32 source: the first warp reads 32 consecutive
    // elements of the slice's first row.
    let text = "HloModule m\nENTRY e {\n  src = f32[4,300] parameter(0)\n  i = s32[] parameter(1)\n  j = s32[] parameter(2)\n  ROOT ds = f32[2,48] dynamic-slice(src, i, j), dynamic_slice_sizes={2,48}\n}\n";
    let got = counts(&counted(text, "ds", 0));
    let warp: Vec<i64> = (0..WARP)
        .map(|t| {
            let (r, c) = (t / 48, t % 48);
            (r * 300 + c) * 4
        })
        .collect();
    let (loads, t, ideal) = oracle(&[warp], 4);
    assert_eq!((got.0, got.1, got.2), (loads, t, ideal));
    // Clamped starts: i in [0, 2], j in [0, 252]; both counted at 0.
    assert_eq!(got.3, vec![0, 0]);
    assert_eq!((t, ideal), (1, 1));
}

#[test]
fn a_gather_row_shared_by_the_warp_is_counted_at_index_zero() {
    // XLA's coalescing test's gather: each output row (7 x 8 x 4 = 224 elements) reads one
    // pair of start indices; the first warp's 32 elements lie in row 0.
    let text = "HloModule m\nENTRY e {\n  operand = f32[33,76,70] parameter(0)\n  indices = s32[1806,2] parameter(1)\n  ROOT g = f32[1806,7,8,4] gather(operand, indices), offset_dims={1,2,3}, collapsed_slice_dims={}, start_index_map={0,1}, index_vector_dim=1, slice_sizes={7,8,4}\n}\n";
    let got = counts(&counted(text, "g", 0));
    let warp: Vec<i64> = (0..WARP)
        .map(|t| {
            let (a, b, c) = (t / 32, (t / 4) % 8, t % 4);
            ((a * 76 + b) * 70 + c) * 4
        })
        .collect();
    assert_eq!((got.0, got.1, got.2), oracle(&[warp], 4));
    assert_eq!(got.3.len(), 2);
    assert!(got.3.iter().all(|&v| v == 0), "{:?}", got.3);
    // 8 runs of 16 bytes, 280 bytes apart: not coalesced.
    assert!(got.1 > got.2);
}

#[test]
fn a_gather_index_per_thread_is_not_counted() {
    // One element per index: thread t reads the element indices[t] names.
    let text = "HloModule m\nENTRY e {\n  operand = f32[1000,64] parameter(0)\n  indices = s32[256,1] parameter(1)\n  ROOT g = f32[256,64] gather(operand, indices), offset_dims={1}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1,64}\n}\n";
    // Threads 0..31 compute row 0's 32 first elements: one shared index, counted.
    let row = counts(&counted(text, "g", 0));
    assert_eq!(row.3, vec![0]);
    assert_eq!((row.1, row.2), (1, 1));
    // A gather of single elements: every thread reads its own index.
    let single = "HloModule m\nENTRY e {\n  operand = f32[1000] parameter(0)\n  indices = s32[256,1] parameter(1)\n  ROOT g = f32[256] gather(operand, indices), offset_dims={}, collapsed_slice_dims={0}, start_index_map={0}, index_vector_dim=1, slice_sizes={1}\n}\n";
    assert_eq!(counted(single, "g", 0), Coalescing::RuntimeDependent);
}

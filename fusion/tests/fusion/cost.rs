//! The cost model against figures computed by hand for the shipped `cpu` description:
//! DRAM 8 GB/s, L1 48 KiB at 400 GB/s, L2 2 MiB at 55 GB/s, L3 32 MiB at 25 GB/s,
//! 2 cores of 96 GFLOP/s, 1.5 µs per kernel call; an `f32` transcendental (exp, log,
//! tanh) 0.45 ns per element per core, an `f64` one 1.2 ns.

use fusion::cost::{CompInfo, CostModel, KernelCost};
use hlo::InstrId;

/// The cost of the kernel made of the named instructions of ENTRY, rooted at the last,
/// for a code generator that hoists loop invariants (XLA:CPU's rules).
fn cost(text: &str, members: &[&str]) -> KernelCost {
    let rules = fusion::EmitterRules::xla_cpu();
    cost_on(&device::load("cpu").unwrap(), &rules, text, members)
}

/// [`cost`] on `cpu`, for a code generator with `rules`.
fn cost_on(
    cpu: &device::Device,
    rules: &fusion::EmitterRules,
    text: &str,
    members: &[&str],
) -> KernelCost {
    let module = hlo::parse_module(text).unwrap();
    let info = CompInfo::new(&module, module.entry_id());
    let ids: Vec<InstrId> = members
        .iter()
        .map(|n| module.entry().find(n).unwrap())
        .collect();
    let root = *ids.last().unwrap();
    CostModel::new(cpu, rules).kernel(&info, &ids, &[root])
}

/// [`cost`] by `--profile`'s model ([`CostModel::for_prediction`]: reads down a column
/// and chained row sums priced).
fn predicted(text: &str, members: &[&str]) -> KernelCost {
    let rules = fusion::EmitterRules::xla_cpu();
    let cpu = device::load("cpu").unwrap();
    let module = hlo::parse_module(text).unwrap();
    let info = CompInfo::new(&module, module.entry_id());
    let ids: Vec<InstrId> = members
        .iter()
        .map(|n| module.entry().find(n).unwrap())
        .collect();
    let root = *ids.last().unwrap();
    CostModel::for_prediction(&cpu, &rules).kernel(&info, &ids, &[root])
}

fn close(got: f64, want: f64) {
    assert!(
        (got - want).abs() <= 1e-9 * want.abs().max(1e-12),
        "got {got:e}, want {want:e}"
    );
}

#[test]
fn elementwise_add_from_l1() {
    let c = cost(
        "HloModule m\nENTRY e {\n  p = f32[1024] parameter(0)\n  q = f32[1024] parameter(1)\n  ROOT a = f32[1024] add(p, q)\n}",
        &["a"],
    );
    // Two 4 KiB operands and a 4 KiB result, all in L1 (400 GB/s); 1024 flops.
    close(c.bytes_read, 8192.0);
    close(c.bytes_reread, 0.0);
    close(c.bytes_written, 4096.0);
    close(c.memory_s, 12288.0 / 400e9);
    close(c.flops, 1024.0);
    close(c.compute_s, 1024.0 / 192e9);
    close(c.time_s, 12288.0 / 400e9 + 1.5e-6);
}

#[test]
fn broadcast_rereads_hit_l1_and_the_result_goes_to_l3() {
    let c = cost(
        "HloModule m\nENTRY e {\n  p = f32[1024] parameter(0)\n  b = f32[4096,1024] broadcast(p), dimensions={1}\n  ROOT n = f32[4096,1024] negate(b)\n}",
        &["b", "n"],
    );
    // p (4 KiB) is read once per output element: 4 KiB first, the rest re-read from L1.
    let elements = 4096.0 * 1024.0;
    close(c.bytes_read, 4096.0);
    close(c.bytes_reread, (elements - 1024.0) * 4.0);
    // The 16 MiB result fits L3 (25 GB/s).
    close(c.bytes_written, elements * 4.0);
    let memory = elements * 4.0 / 400e9 + elements * 4.0 / 25e9;
    close(c.memory_s, memory);
    close(c.flops, elements);
    close(c.time_s, memory + 1.5e-6);
}

#[test]
fn row_reduction_reads_its_input_once_from_l2() {
    let c = cost(
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[256,1024] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[256] reduce(p, z), dimensions={1}, to_apply=add\n}",
        &["r"],
    );
    // 1 MiB input from L2 (55 GB/s); the init value read once per output element from L1.
    close(c.bytes_read, 1048576.0 + 4.0);
    close(c.bytes_reread, 255.0 * 4.0);
    close(c.bytes_written, 1024.0);
    let memory = 1048576.0 / 55e9 + 1024.0 / 400e9 + 1024.0 / 400e9;
    close(c.memory_s, memory);
    close(c.flops, 262144.0);
    close(c.time_s, memory + 1.5e-6);
}

#[test]
fn transcendentals_are_compute_bound() {
    let c = cost(
        "HloModule m\nENTRY e {\n  p = f32[1024] parameter(0)\n  ROOT x = f32[1024] exponential(p)\n}",
        &["x"],
    );
    // 16 flops per exponential in the table, but priced at the prelude's polynomial:
    // 1024 of them at 0.45 ns per core on 2 cores exceed 8 KiB at 400 GB/s.
    close(c.flops, 16384.0);
    close(c.compute_s, 1024.0 * 0.45e-9 / 2.0);
    close(c.time_s, 1024.0 * 0.45e-9 / 2.0 + 1.5e-6);
}

/// An `f64` transcendental takes the description's `f64` time per element, a sine (24
/// flops in the table against the measured class's 16) half as long again; a description
/// without an `[elementwise]` section prices them by the flops table.
#[test]
fn transcendentals_take_their_measured_time_per_element_and_type() {
    let text = |op: &str, ty: &str| {
        format!(
            "HloModule m\nENTRY e {{\n  p = {ty}[4096] parameter(0)\n  ROOT x = {ty}[4096] {op}(p)\n}}"
        )
    };
    close(
        cost(&text("exponential", "f64"), &["x"]).compute_s,
        4096.0 * 1.2e-9 / 2.0,
    );
    close(
        cost(&text("sine", "f32"), &["x"]).compute_s,
        4096.0 * 0.45e-9 * 1.5 / 2.0,
    );
    // bf16 computes in f32.
    close(
        cost(&text("tanh", "bf16"), &["x"]).compute_s,
        4096.0 * 0.45e-9 / 2.0,
    );
    let mut table_only = device::load("cpu").unwrap();
    table_only.elementwise = None;
    let rules = fusion::EmitterRules::xla_cpu();
    let c = cost_on(&table_only, &rules, &text("exponential", "f64"), &["x"]);
    close(c.compute_s, 4096.0 * 16.0 / 192e9);
}

#[test]
fn fusing_a_chain_saves_a_launch_and_the_intermediate() {
    let text = "HloModule m\nENTRY e {\n  p = f32[1024] parameter(0)\n  q = f32[1024] parameter(1)\n  a = f32[1024] add(p, q)\n  ROOT x = f32[1024] exponential(a)\n}";
    let unfused = {
        let mut c = cost(text, &["a"]);
        c.add(&cost(text, &["x"]));
        c
    };
    let fused = cost(text, &["a", "x"]);
    // Unfused: add (12 KiB of traffic) + exp (compute bound) + two calls.
    let exp = 1024.0 * 0.45e-9 / 2.0;
    close(unfused.time_s, 12288.0 / 400e9 + exp + 3e-6);
    // Fused: the add's 1024 flops and the exps, compute bound, one call.
    close(fused.flops, 17408.0);
    close(fused.time_s, 1024.0 / 192e9 + exp + 1.5e-6);
    assert!(fused.time_s < unfused.time_s);
}

#[test]
fn a_reduction_behind_a_broadcast_is_recomputed_per_element_without_hoisting() {
    let text = "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[64,64] parameter(0)\n  z = f32[] constant(0)\n  r = f32[64] reduce(p, z), dimensions={1}, to_apply=add\n  ROOT bc = f32[64,64] broadcast(r), dimensions={0}\n}";
    let cpu = device::load("cpu").unwrap();
    let mut rules = fusion::EmitterRules::xla_cpu();
    rules.hoists_invariant_values = false;
    let fused = cost_on(&cpu, &rules, text, &["r", "bc"]);
    // 4096 broadcast elements each recompute a 64-element row sum.
    close(fused.flops, 4096.0 * 64.0);
    let separate = cost_on(&cpu, &rules, text, &["r"]);
    close(separate.flops, 4096.0);
}

#[test]
fn a_row_reduction_behind_a_trailing_broadcast_runs_once_per_row_with_hoisting() {
    let text = "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[64,64] parameter(0)\n  z = f32[] constant(0)\n  r = f32[64] reduce(p, z), dimensions={1}, to_apply=add\n  bc = f32[64,64] broadcast(r), dimensions={0}\n  ROOT s = f32[64,64] subtract(p, bc)\n}";
    let fused = cost(text, &["r", "bc", "s"]);
    // XLA:CPU's rules hoist: 64 row sums of 64 elements, then 4096
    // subtractions (the broadcast itself costs nothing).
    close(fused.flops, 64.0 * 64.0 + 4096.0);
    // p (16 KiB) is read once by the sums and re-read once by the subtractions, within
    // one 256-byte row; the sums' initial value z is read once per row. All from L1, as
    // the 16 KiB result goes to L1.
    close(fused.bytes_read, 16384.0 + 4.0);
    close(fused.bytes_reread, 16384.0 + 63.0 * 4.0);
    close(
        fused.memory_s,
        (16388.0 + 16384.0 + 252.0 + 16384.0) / 400e9,
    );
    // Broadcasting along a leading dimension is not hoisted: recomputed per element.
    let column = text.replace("dimensions={0}\n  ROOT", "dimensions={1}\n  ROOT");
    close(
        cost(&column, &["r", "bc", "s"]).flops,
        4096.0 * 64.0 + 4096.0,
    );
}

#[test]
fn a_full_reduction_behind_a_scalar_broadcast_runs_once_per_parallel_block_with_hoisting() {
    let text = "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[64,64] parameter(0)\n  z = f32[] constant(0)\n  r = f32[] reduce(p, z), dimensions={0,1}, to_apply=add\n  bc = f32[64,64] broadcast(r), dimensions={}\n  ROOT s = f32[64,64] subtract(p, bc)\n}";
    let fused = cost(text, &["r", "bc", "s"]);
    // The hoisted sum leaves the element loops but not the block loop over the 64 rows:
    // each block sums all 4096 elements again, then its 64 subtractions.
    close(fused.flops, 64.0 * 4096.0 + 4096.0);
    // A broadcast keeping the blocked dimension gives each block its own row value.
    let rows = text
        .replace(
            "r = f32[] reduce(p, z), dimensions={0,1}",
            "r = f32[64] reduce(p, z), dimensions={1}",
        )
        .replace(
            "broadcast(r), dimensions={}",
            "broadcast(r), dimensions={0}",
        );
    close(cost(&rows, &["r", "bc", "s"]).flops, 64.0 * 64.0 + 4096.0);
}

#[test]
fn a_fusion_costs_the_flops_of_its_body() {
    let c = cost(
        "HloModule m\nf {\n  a = f32[1024] parameter(0)\n  e = f32[1024] exponential(a)\n  ROOT n = f32[1024] negate(e)\n}\nENTRY e {\n  p = f32[1024] parameter(0)\n  ROOT fu = f32[1024] fusion(p), kind=kLoop, calls=f\n}",
        &["fu"],
    );
    // 16 flops per exponential and 1 per negate, for 1024 elements.
    close(c.flops, 17.0 * 1024.0);
    close(c.bytes_read, 4096.0);
    close(c.bytes_written, 4096.0);
}

#[test]
fn a_dot_costs_a_multiply_and_an_add_per_contracted_element() {
    let c = cost(
        "HloModule m\nENTRY e {\n  a = f32[64,32] parameter(0)\n  b = f32[32,16] parameter(1)\n  ROOT d = f32[64,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
        &["d"],
    );
    // 64 x 16 outputs, each 32 multiply-adds: 32768, under 2^20, so one core of the
    // library's f32 GEMM rate, 100 GFLOP/s (the GEMM runs on the calling thread alone);
    // each operand read once, plus one library call (0.5 us).
    close(c.flops, 64.0 * 16.0 * 32.0 * 2.0);
    close(c.compute_s, 64.0 * 16.0 * 32.0 * 2.0 / 100e9);
    close(c.bytes_read, (64.0 * 32.0 + 32.0 * 16.0) * 4.0);
    close(c.bytes_reread, 0.0);
    close(c.launch_s, 0.5e-6);
}

#[test]
fn a_gemm_of_2_to_the_20_multiply_adds_or_more_runs_on_both_cores() {
    let dot = |m: u64, k: u64, n: u64| {
        cost(
            &format!("HloModule m\nENTRY e {{\n  a = f32[{m},{k}] parameter(0)\n  b = f32[{k},{n}] parameter(1)\n  ROOT d = f32[{m},{n}] dot(a, b), lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n}}"),
            &["d"],
        )
    };
    // 2^20 multiply-adds: both cores. One output column fewer: one core.
    let big = dot(64, 128, 128);
    close(big.compute_s, 2.0 * 64.0 * 128.0 * 128.0 / 200e9);
    let small = dot(64, 128, 127);
    close(small.compute_s, 2.0 * 64.0 * 128.0 * 127.0 / 100e9);
    // A fused kernel with a dot in it is no library GEMM: the dot runs as the generated
    // loop, 32 taps per output summed in order at the `[loops]` f32 rate (its rhs column
    // 64 bytes apart, 32 x 68 bytes of lines per output: first-level cache), its 64 rows
    // of blocks shared by both cores; the negate at the vector rate of both cores.
    let fused = cost(
        "HloModule m\nENTRY e {\n  a = f32[64,32] parameter(0)\n  b = f32[32,16] parameter(1)\n  d = f32[64,16] dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n  ROOT n = f32[64,16] negate(d)\n}",
        &["d", "n"],
    );
    close(fused.flops, 64.0 * 16.0 * (32.0 * 2.0 + 1.0));
    let loop_rate = device::load("cpu")
        .unwrap()
        .loops
        .unwrap()
        .contraction_f32_flops_per_unit;
    close(
        fused.compute_s,
        64.0 * 16.0 / 192e9 + 64.0 * 16.0 * 32.0 * 2.0 / loop_rate / 2.0,
    );
}

#[test]
fn a_value_read_at_one_index_by_several_elementwise_ops_is_computed_once() {
    // e feeds n and m, both of which the root reads elementwise: the emitters memoize e
    // per index, so its 16 flops per element count once, however many paths reach it,
    // and p is read once.
    let text = "HloModule m\nENTRY e {\n  p = f32[1024] parameter(0)\n  e = f32[1024] exponential(p)\n  n = f32[1024] negate(e)\n  m = f32[1024] multiply(e, e)\n  ROOT a = f32[1024] add(n, m)\n}";
    let c = cost(text, &["e", "n", "m", "a"]);
    close(c.flops, (16.0 + 1.0 + 1.0 + 1.0) * 1024.0);
    close(c.bytes_read, 4096.0);
    close(c.bytes_reread, 0.0);
}

#[test]
fn a_value_read_under_two_slices_is_computed_once_per_slice() {
    // sa and sb read e at different offsets: each element of the result evaluates e
    // twice (at i and at i + 1).
    let text = "HloModule m\nENTRY e {\n  p = f32[1025] parameter(0)\n  e = f32[1025] exponential(p)\n  sa = f32[1024] slice(e), slice={[0:1024]}\n  sb = f32[1024] slice(e), slice={[1:1025]}\n  ROOT a = f32[1024] add(sa, sb)\n}";
    let c = cost(text, &["e", "sa", "sb", "a"]);
    close(c.flops, (2.0 * 16.0 + 1.0) * 1024.0);
}

/// A log of a `[16,8]` value read through a broadcast behind a reshape root: the code
/// generator cannot hoist it, so the kernel evaluates it once per element of the
/// `[16,8,512]` output, and on the CPU each evaluation beyond the first of its element is
/// a scalar polynomial (`SCALAR_RECOMPUTE_SLOWDOWN` times the table's rate).
#[test]
fn a_transcendental_recomputed_per_element_is_priced_as_scalar_calls() {
    let text = "HloModule m\nENTRY e {\n  s = f32[16,8] parameter(0)\n  x = f32[16,8,512] parameter(1)\n  l = f32[16,8] log(s)\n  b = f32[16,8,512] broadcast(l), dimensions={0,1}\n  d = f32[16,8,512] subtract(x, b)\n  ROOT r = f32[16,4096] reshape(d)\n}";
    let c = cost(text, &["l", "b", "d", "r"]);
    let n = 16.0 * 8.0 * 512.0;
    let recomputed = (n - 128.0) * 16.0;
    close(c.recomputed_flops, recomputed);
    // Every log (n of them) at the polynomial's time, the subtracts at the table's rate,
    // plus the recomputed logs' scalar surcharge.
    close(c.flops, n * 16.0 + n);
    let slowdown = fusion::cost::SCALAR_RECOMPUTE_SLOWDOWN;
    close(
        c.compute_s,
        n / 192e9 + n * 0.45e-9 / 2.0 + recomputed * (slowdown - 1.0) / 192e9,
    );
    assert!(c.compute_s > c.memory_s);
    // Hoisted (read along the root's trailing dimensions), it is computed once per value.
    let hoisted = "HloModule m\nENTRY e {\n  s = f32[16,8] parameter(0)\n  x = f32[16,8,512] parameter(1)\n  l = f32[16,8] log(s)\n  b = f32[16,8,512] broadcast(l), dimensions={0,1}\n  ROOT d = f32[16,8,512] subtract(x, b)\n}";
    close(cost(hoisted, &["l", "b", "d"]).recomputed_flops, 0.0);
    // On the h100 every element is a thread: no surcharge.
    let h100 = device::load("h100").unwrap();
    let gpu = cost_on(
        &h100,
        &fusion::EmitterRules::xla_gpu(),
        text,
        &["l", "b", "d", "r"],
    );
    close(gpu.recomputed_flops, 0.0);
}

/// A softmax row in one kernel reads `exp` twice, in the sum's pass and in the output's,
/// each at its own index once per element: two passes priced by their flops, not a
/// recomputation.
#[test]
fn two_passes_over_a_row_are_not_a_recomputation() {
    let text = "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  x = f32[64,512] parameter(0)\n  e = f32[64,512] exponential(x)\n  z = f32[] constant(0)\n  s = f32[64] reduce(e, z), dimensions={1}, to_apply=add\n  b = f32[64,512] broadcast(s), dimensions={0}\n  ROOT d = f32[64,512] divide(e, b)\n}";
    let c = cost(text, &["e", "s", "b", "d"]);
    close(c.recomputed_flops, 0.0);
    // exp evaluated in both passes: 2 x 32768 x 16 flops, the sum and the divide.
    close(c.flops, 2.0 * 32768.0 * 16.0 + 32768.0 + 32768.0 * 4.0);
    // Both passes' exps at the polynomial's time, the rest at the vector rate.
    close(
        c.compute_s,
        2.0 * 32768.0 * 0.45e-9 / 2.0 + (32768.0 + 32768.0 * 4.0) / 192e9,
    );
}

#[test]
fn a_dynamic_update_slice_moves_its_update_not_its_buffer() {
    // A [1,32,512] row into a [64,32,512] scan output (gru_scan's step): the in-place
    // kernel reads the 64 KiB update once and writes it; the buffer is aliased, not read.
    let c = cost(
        "HloModule m\nENTRY e {\n  x = f32[64,32,512] parameter(0)\n  u = f32[1,32,512] parameter(1)\n  \
         i = s32[] parameter(2)\n  z = s32[] constant(0)\n  \
         ROOT d = f32[64,32,512] dynamic-update-slice(x, u, i, z, z)\n}",
        &["d"],
    );
    let update = 32.0 * 512.0 * 4.0;
    // The update, and each start index once (4 bytes each; `z` twice, once again).
    close(c.bytes_read, update + 2.0 * 4.0);
    close(c.bytes_reread, 4.0);
    close(c.bytes_written, update);
    // Every figure at L1/L2 rates: a few microseconds, where the update's map box (every
    // update element per output element) made it 4 MiB of re-reads.
    assert!(c.time_s < 5e-6, "{c:?}");
}

#[test]
fn a_transpose_that_moves_the_minor_dimension_reads_a_line_per_element() {
    // [8,8,32,128] -> [8,128,8,32]: the innermost loop (32) reads its operand 128 elements
    // (512 bytes) apart, a line per element; 1 MiB input, in L2.
    let c = predicted(
        "HloModule m\nENTRY e {\n  p = f32[8,8,32,128] parameter(0)\n  \
         ROOT t = f32[8,128,8,32] transpose(p), dimensions={0,3,1,2}\n}",
        &["t"],
    );
    let elements = 8.0 * 8.0 * 32.0 * 128.0;
    close(c.bytes_read, elements * 4.0);
    close(c.bytes_reread, elements * (64.0 - 4.0));
    close(c.memory_s, elements * 64.0 / 55e9 + elements * 4.0 / 55e9);
    // The fusion passes' model keeps the elements' bytes (see `prices_loop_order`).
    let fusion_model = cost(
        "HloModule m\nENTRY e {\n  p = f32[8,8,32,128] parameter(0)\n  \
         ROOT t = f32[8,128,8,32] transpose(p), dimensions={0,3,1,2}\n}",
        &["t"],
    );
    close(fusion_model.bytes_reread, 0.0);
    // A transpose that keeps the minor dimension moves rows: its elements' bytes.
    let rows = predicted(
        "HloModule m\nENTRY e {\n  p = f32[8,16,32] parameter(0)\n  \
         ROOT t = f32[16,8,32] transpose(p), dimensions={1,0,2}\n}",
        &["t"],
    );
    close(rows.bytes_reread, 0.0);
}

#[test]
fn inputs_read_at_a_transposed_members_index_are_strided_too() {
    // exp(p) + q, transposed: the elementwise members below the transpose read p and q at
    // its operand's index, 24 elements (96 bytes) apart: a line each. r, added after the
    // transpose at the root's own index, is contiguous.
    let c = predicted(
        "HloModule m\nENTRY e {\n  p = f32[2048,24] parameter(0)\n  q = f32[2048,24] parameter(1)\n  \
         r = f32[24,2048] parameter(2)\n  x = f32[2048,24] exponential(p)\n  a = f32[2048,24] add(x, q)\n  \
         t = f32[24,2048] transpose(a), dimensions={1,0}\n  ROOT s = f32[24,2048] add(t, r)\n}",
        &["x", "a", "t", "s"],
    );
    let elements = 2048.0 * 24.0;
    close(c.bytes_read, 3.0 * elements * 4.0);
    close(c.bytes_reread, 2.0 * elements * (64.0 - 4.0));
}

#[test]
fn a_short_row_sum_is_a_dependent_chain_per_element() {
    // 32 f32 elements a row: one chunk of the emitter's 32 lanes, so no partial
    // accumulators: each add waits for the last, a loop contraction's tap (2 flops at
    // 1.8 GFLOP/s per core), two rows' chains in flight, the rows shared by both cores.
    let c = predicted(
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[1024,32] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[1024] reduce(p, z), dimensions={1}, to_apply=add\n}",
        &["r"],
    );
    let steps = 1024.0 * 32.0;
    close(c.compute_s, steps * (2.0 / 1.8e9) / 2.0 / 2.0);
    close(c.time_s, c.compute_s + fusion::cost::PROFILED_CALL_S);
    // Rows of 64 run in two chunks of lanes: the vector rate.
    let wide = predicted(
        "HloModule m\nadd {\n  a = f32[] parameter(0)\n  b = f32[] parameter(1)\n  ROOT s = f32[] add(a, b)\n}\nENTRY e {\n  p = f32[512,64] parameter(0)\n  z = f32[] constant(0)\n  ROOT r = f32[512] reduce(p, z), dimensions={1}, to_apply=add\n}",
        &["r"],
    );
    close(wide.compute_s, wide.flops / 192e9);
}

#[test]
fn a_long_bf16_row_sum_waits_for_every_step() {
    // HLO rounds a bf16 sum at every step: the emitter keeps it in order, one chain of 512
    // steps a row at the bf16 tap's rate (1.45 GFLOP/s per core), too long to overlap.
    let c = predicted(
        "HloModule m\nadd {\n  a = bf16[] parameter(0)\n  b = bf16[] parameter(1)\n  ROOT s = bf16[] add(a, b)\n}\nENTRY e {\n  p = bf16[4096,512] parameter(0)\n  z = bf16[] constant(0)\n  ROOT r = bf16[4096] reduce(p, z), dimensions={1}, to_apply=add\n}",
        &["r"],
    );
    close(c.compute_s, 4096.0 * 512.0 * (2.0 / 1.45e9) / 2.0);
}

#[test]
fn the_prediction_prices_a_call_as_the_profile_times_it() {
    // The fusion passes price the thunk's dispatch a fused kernel saves (1.5 us); the
    // profile times the call alone, cold (0.8 us): `--profile`'s prediction prices that.
    let text =
        "HloModule m\nENTRY e {\n  p = f32[16] parameter(0)\n  ROOT n = f32[16] negate(p)\n}";
    let fused = cost(text, &["n"]);
    let profiled = predicted(text, &["n"]);
    close(fused.launch_s, 1.5e-6);
    close(profiled.launch_s, fusion::cost::PROFILED_CALL_S);
    close(
        profiled.time_s - profiled.launch_s,
        fused.time_s - fused.launch_s,
    );
}

#[test]
fn every_bf16_op_rounds_its_result() {
    // Two bf16 ops per element: their flops at the vector rate (2 x 96 GFLOP/s), and for
    // the prediction each one's rounding back from f32 (BF16_ROUNDING_S per element per core).
    let text = "HloModule m\nENTRY e {\n  p = bf16[1024,1024] parameter(0)\n  a = bf16[1024,1024] add(p, p)\n  ROOT m = bf16[1024,1024] multiply(a, a)\n}";
    let n = 1024.0 * 1024.0;
    let flops_s = 2.0 * n / 192e9;
    close(cost(text, &["a", "m"]).compute_s, flops_s);
    close(
        predicted(text, &["a", "m"]).compute_s,
        flops_s + 2.0 * n * fusion::cost_elementwise::BF16_ROUNDING_S / 2.0,
    );
}

#[test]
fn an_odd_row_finishes_its_exps_one_at_a_time() {
    // Rows of 127 f32: 16 x 7 lanes, an epilogue of 8, 7 exps scalar (16 flops at 128x the
    // vector rate each); rows of 128 have no remainder.
    let row = |n: usize| {
        predicted(
            &format!("HloModule m\nENTRY e {{\n  p = f32[4096,{n}] parameter(0)\n  ROOT x = f32[4096,{n}] exponential(p)\n}}"),
            &["x"],
        )
    };
    let (odd, even) = (row(127), row(128));
    let vector = |n: f64| 4096.0 * n * 0.45e-9 / 2.0;
    close(even.compute_s, vector(128.0));
    let tail = 4096.0 * 7.0 * 16.0 * 127.0 / 192e9;
    close(odd.compute_s, vector(127.0) + tail);
    assert_eq!(fusion::cost_elementwise::scalar_remainder(127, false), 7);
    assert_eq!(fusion::cost_elementwise::scalar_remainder(197, true), 1);
    assert_eq!(fusion::cost_elementwise::scalar_remainder(4, false), 0);
}

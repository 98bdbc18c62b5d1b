//! JAX's annotated modules partitioned by `spmd` match XLA's global outputs
//! (`NAME.global.npz`: `in<i>`, `out<i>`): `corpus/spmd/` on 4 devices (written by
//! tools/spmd_corpus.py) and `corpus/spmd_xla/` on 8 (tools/spmd_vs_xla.py), shard_map
//! programs among them in Shardy's form and in GSPMD's (manual regions kept per device;
//! partially manual ones, manual on one axis of a 2x4 mesh, too, with `axis_index` and a
//! shard_map over the other axis nested in them, and a partially manual one nested in a
//! partially manual one on a 2x2x2 mesh),
//! and programs with convolutions and pools on split rows (halos), a train step with
//! optax's clipping, a scan over layers (a while loop with a split carry) and one whose
//! step is a shard_map.

use std::path::Path;

use hlo::Literal;

use crate::check::{global_evaluation, run_partitioned};

/// `dir/NAME.before.hlo`, its global inputs and XLA's global outputs (`NAME.global.npz`).
fn load(dir: &Path, name: &str) -> (hlo::Module, Vec<Literal>, Vec<hlo::literal::ArrayLiteral>) {
    let text = std::fs::read_to_string(dir.join(format!("{name}.before.hlo"))).expect("module");
    let module = hlo::parse_module(&text).expect("parses");
    let file = std::fs::File::open(dir.join(format!("{name}.global.npz"))).expect("npz");
    let arrays =
        hlo_eval::npy::read_npz_from(std::io::BufReader::new(file), 1 << 30).expect("reads");
    let get = |key: &str| {
        arrays
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, a)| a.clone())
            .unwrap_or_else(|| panic!("{name}: no {key}"))
    };
    let entry = module.entry();
    let args: Vec<Literal> = (0..entry.parameters().len())
        .map(|i| {
            let shape = entry.instr(entry.parameters()[i]).shape();
            Literal::Array(
                hlo_eval::npy::adapt_to(get(&format!("in{i}")), shape, name).expect("input"),
            )
        })
        .collect();
    let outputs = arrays.iter().filter(|(k, _)| k.starts_with("out")).count();
    let outs = (0..outputs).map(|i| get(&format!("out{i}"))).collect();
    (module, args, outs)
}

/// Compares outputs `got` with XLA's `want`, naming `how` they were computed.
fn compare(name: &str, how: &str, got: &[Literal], want: &[hlo::literal::ArrayLiteral]) {
    assert_eq!(got.len(), want.len(), "{name} ({how}): outputs");
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let g = g.as_array().expect("array");
        let w = hlo_eval::npy::adapt_to(w.clone(), g.shape(), name).expect("output");
        let r = hlo_eval::report::compare_report(g, &w, None);
        assert!(
            r.matches,
            "{name} ({how}): {}",
            r.line(&format!("out{i}"), "", "XLA's")
        );
    }
}

/// Partitions `dir/NAME.before.hlo` on `devices` devices, runs it from the global inputs
/// and compares every output with XLA's.
fn matches_xla(dir: &Path, name: &str, devices: usize) {
    let (module, args, want) = load(dir, name);
    let p = spmd::partition(&module, devices).unwrap_or_else(|e| panic!("{name}: {e}"));
    let got = run_partitioned(&module, &p.module, devices, &args)
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    compare(name, "partitioned", &got, &want);
}

#[test]
fn the_evaluators_global_run_of_shard_maps_matches_xla() {
    // The unpartitioned modules themselves, on 8 devices of the evaluator: the xla.sdy
    // boundaries (and GSPMD's SPMDFullToShardShape / SPMDShardToFullShape) give each
    // device its piece and assemble the pieces again (nested regions within their
    // enclosing region's coordinate), independent of the partitioner.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/spmd_xla");
    for name in [
        "shard_map_collectives",
        "shard_map_psum_mlp",
        "shard_map_megatron_2x4",
        "shard_map_sandwich",
        "shard_map_ring_loop",
        "scan_shard_map",
        "shard_map_partial_megatron",
        "shard_map_partial_collectives",
        "shard_map_nested",
        "shard_map_partial_in_partial",
        "shard_map_ring_gspmd",
        "shard_map_partial_gspmd",
        "shard_map_partial_axis_index",
        "shard_map_nested_gspmd",
        "shard_map_partial_in_partial_gspmd",
    ] {
        let (module, args, want) = load(&dir, name);
        let got = global_evaluation(&module, 8, &args).unwrap_or_else(|e| panic!("{name}: {e}"));
        compare(name, "the evaluator's global run", &got, &want);
    }
}

#[test]
fn jax_modules_match_xla_outputs_on_4_devices() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/spmd");
    for name in [
        "tensor_parallel_matmul",
        "data_parallel_layer",
        "shard_map_collectives",
    ] {
        matches_xla(&dir, name, 4);
    }
}

#[test]
fn jax_modules_match_xla_outputs_on_8_devices() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/spmd_xla");
    for name in [
        "data_parallel_mlp",
        "tensor_parallel_mlp",
        "fsdp_mlp",
        "mesh_2x4_mlp",
        "constrained_tanh",
        "moved_split",
        "shard_map_collectives",
        "shard_map_psum_mlp",
        "shard_map_megatron_2x4",
        "shard_map_ring_gspmd",
        "shard_map_sandwich",
        "shard_map_ring_loop",
        "scan_shard_map",
        "shard_map_partial_megatron",
        "shard_map_partial_gspmd",
        "shard_map_partial_collectives",
        "shard_map_partial_axis_index",
        "shard_map_nested",
        "shard_map_nested_gspmd",
        "shard_map_partial_in_partial",
        "shard_map_partial_in_partial_gspmd",
        "cnn_rows_split",
        "cnn_batch_split",
        "dp_train_step_clipped",
        "scan_layers",
    ] {
        matches_xla(&dir, name, 8);
    }
}

/// The collective bytes per device per run of `dir/NAME.before.hlo` partitioned on
/// `devices` devices.
fn partitioned_bytes(dir: &Path, name: &str, devices: usize) -> u64 {
    let text = std::fs::read_to_string(dir.join(format!("{name}.before.hlo"))).expect("module");
    let module = hlo::parse_module(&text).expect("parses");
    let p = spmd::partition(&module, devices).unwrap_or_else(|e| panic!("{name}: {e}"));
    spmd::collective_stats(&p.module)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .bytes
}

#[test]
fn the_shardy_form_of_a_nested_shard_map_moves_the_gspmd_forms_bytes_and_xlas() {
    // A shard_map over "data" inside one over "model": Shardy's nested region names only
    // "data", and read as a partially manual region of its own it lost the enclosing
    // region's coordinates (an all-gather after it: 3x the bytes).
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/spmd_xla");
    let shardy = partitioned_bytes(&dir, "shard_map_nested", 8);
    let gspmd = partitioned_bytes(&dir, "shard_map_nested_gspmd", 8);
    let text =
        std::fs::read_to_string(dir.join("shard_map_nested.after.hlo")).expect("XLA's module");
    let xla = spmd::collective_stats(&hlo::parse_module(&text).expect("parses"))
        .expect("stats")
        .bytes;
    assert_eq!(shardy, gspmd);
    assert!(shardy <= xla, "hloc {shardy} bytes, XLA {xla}");
}

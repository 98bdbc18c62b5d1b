//! JAX's annotated modules (`corpus/spmd/NAME.before.hlo`, written by
//! tools/spmd_corpus.py before XLA's partitioner runs) partitioned by `spmd` and run on
//! 4 devices match XLA's global outputs (`NAME.global.npz`: `in<i>`, `out<i>`); a module
//! the partitioner does not take yet must say which op.

use std::path::Path;

use hlo::Literal;

use crate::check::run_partitioned;

#[test]
fn jax_modules_match_xla_outputs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/spmd");
    let mut matched = Vec::new();
    for name in ["tensor_parallel_matmul", "data_parallel_layer"] {
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
        let p = spmd::partition(&module, 4).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got =
            run_partitioned(&module, &p.module, 4, &args).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (i, g) in got.iter().enumerate() {
            let want = get(&format!("out{i}"));
            let g = g.as_array().expect("array");
            let want = hlo_eval::npy::adapt_to(want, g.shape(), name).expect("output");
            let r = hlo_eval::report::compare_report(g, &want, None);
            assert!(
                r.matches,
                "{name}: {}",
                r.line(&format!("out{i}"), "", "XLA's")
            );
        }
        matched.push(name);
    }
    assert_eq!(matched.len(), 2);
}

#[test]
fn shard_map_modules_are_named_unsupported() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/spmd");
    let text =
        std::fs::read_to_string(dir.join("shard_map_collectives.before.hlo")).expect("module");
    let module = hlo::parse_module(&text).expect("parses");
    let err = spmd::partition(&module, 4).expect_err("manual regions are not partitioned yet");
    assert!(err.to_string().contains("unsupported"), "{err}");
}

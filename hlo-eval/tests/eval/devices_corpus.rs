//! XLA's partitioned modules of our own sharded programs (corpus/spmd/, written by
//! tools/spmd_corpus.py with JAX's forced host devices): evaluated on as many devices as
//! `num_partitions` says, each device on its recorded inputs `in<i>.dev<k>`, every output
//! matches XLA's `out<i>.dev<k>` within the tolerance of hlo_eval::tolerance; the
//! unpartitioned modules (`.before.hlo`) parse, their shardings typed, and verify; the
//! unpartitioned shard_map module (Shardy's form) run globally on 4 devices gives XLA's
//! global outputs.

use std::path::Path;

use hlo::Literal;
use hlo_eval::device::DeviceGrid;
use hlo_eval::multi_device::evaluate_on_devices;
use hlo_eval::npy::read_npz;
use hlo_eval::tolerance::literals_match;

#[test]
fn partitioned_modules_match_xla() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/spmd");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".hlo") && !n.ends_with(".before.hlo"))
        .collect();
    names.sort();
    assert!(names.len() >= 3, "corpus/spmd holds {names:?}");
    for name in names {
        // The unpartitioned module parses (shardings typed) and verifies.
        let before =
            std::fs::read_to_string(dir.join(name.replace(".hlo", ".before.hlo"))).unwrap();
        let before = hlo::parse_module(&before).unwrap_or_else(|e| panic!("{name}: {e}"));
        hlo::verifier::verify(&before).unwrap_or_else(|e| panic!("{name}: {e:?}"));
        let text = std::fs::read_to_string(dir.join(&name)).unwrap();
        let module = hlo::parse_module(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let grid = DeviceGrid::of_module(&module);
        assert!(grid.count() > 1, "{name}: not a partitioned module");
        let npz = dir.join(name.replace(".hlo", ".npz"));
        let arrays = read_npz(&std::fs::read(&npz).unwrap()).unwrap();
        let get = |key: String| {
            arrays
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, a)| Literal::Array(a.clone()))
        };
        let params = module.entry().parameters().len();
        let args: Vec<Vec<Literal>> = (0..grid.count())
            .map(|k| {
                (0..params)
                    .map(|i| {
                        get(format!("in{i}.dev{k}"))
                            .unwrap_or_else(|| panic!("{name}: in{i}.dev{k}"))
                    })
                    .collect()
            })
            .collect();
        let results =
            evaluate_on_devices(&module, grid, &args).unwrap_or_else(|e| panic!("{name}: {e}"));
        for (k, r) in results.iter().enumerate() {
            let leaves = match r {
                Literal::Tuple(t) => t.clone(),
                other => vec![other.clone()],
            };
            let recorded = arrays
                .iter()
                .filter(|(key, _)| key.starts_with("out") && key.ends_with(&format!(".dev{k}")))
                .count();
            assert_eq!(leaves.len(), recorded, "{name}: outputs on device {k}");
            for (i, got) in leaves.iter().enumerate() {
                let want = get(format!("out{i}.dev{k}"))
                    .unwrap_or_else(|| panic!("{name}: out{i}.dev{k}"));
                assert!(
                    literals_match(got, &want),
                    "{name}: output {i} on device {k} differs from XLA's"
                );
            }
        }
    }
}

#[test]
fn the_global_run_of_a_shardy_shard_map_matches_xla() {
    // The unpartitioned module of shard_map_collectives (Shardy's form: the body between
    // xla.sdy.GlobalToLocalShape and xla.sdy.LocalToGlobalShape) on 4 devices, each
    // holding the global input: the boundaries give each device its piece and assemble
    // the pieces, so every device ends with XLA's global outputs.
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/spmd");
    let text = std::fs::read_to_string(dir.join("shard_map_collectives.before.hlo")).unwrap();
    assert!(
        text.contains("xla.sdy.GlobalToLocalShape"),
        "not Shardy's form"
    );
    let module = hlo::parse_module(&text).unwrap();
    let arrays =
        read_npz(&std::fs::read(dir.join("shard_map_collectives.global.npz")).unwrap()).unwrap();
    let get = |key: &str| {
        arrays
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, a)| Literal::Array(a.clone()))
            .unwrap_or_else(|| panic!("no {key}"))
    };
    let grid = DeviceGrid {
        replicas: 1,
        partitions: 4,
    };
    let args = vec![vec![get("in0")]; 4];
    let results = evaluate_on_devices(&module, grid, &args).unwrap();
    for (k, r) in results.iter().enumerate() {
        let Literal::Tuple(leaves) = r else {
            panic!("device {k}: not a tuple of outputs")
        };
        assert_eq!(leaves.len(), 3, "device {k}: outputs");
        for (i, got) in leaves.iter().enumerate() {
            assert!(
                literals_match(got, &get(&format!("out{i}"))),
                "output {i} on device {k} differs from XLA's global output"
            );
        }
    }
}

//! `hloc run --devices N --collectives mpi` (issue 35 item 4). With the `mpi` feature: the
//! smoke test CI runs, `mpirun -np 4 hloc run ...` on partitioned programs that use every
//! collective (XLA's shard_map module, a module of integer and float reductions over
//! groups in several orders, hloc's own partitioner on a global module), whose printed
//! and written outputs must equal the in-process run's bit for bit; and the errors of a
//! job whose size is not the device count. Without it: the error that says to rebuild.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn tmp(name: &str) -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// `hloc ARGS` from the repository root with a compile cache of the tests' own.
fn hloc(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hloc"))
        .args(args)
        .current_dir(root())
        .env("HLOC_CACHE_DIR", tmp("hloc-cache-mpi"))
        .output()
        .expect("hloc runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[cfg(not(feature = "mpi"))]
#[test]
fn without_the_feature_mpi_is_refused_with_how_to_rebuild() {
    let out = hloc(&[
        "run",
        "corpus/spmd/shard_map_collectives.hlo",
        "--devices",
        "4",
        "--collectives",
        "mpi",
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        text(&out.stderr)
            .contains("this hloc was built without MPI; rebuild with `--features mpi`"),
        "{out:?}"
    );
    assert!(out.stdout.is_empty(), "{out:?}");
}

#[cfg(feature = "mpi")]
mod with_mpi {
    use super::*;

    /// `mpirun -np N hloc ARGS`: as root (containers, CI) and with more ranks than cores,
    /// on shared memory only (no network probing), ended by mpirun after 5 minutes.
    fn mpirun(np: usize, args: &[&str]) -> Output {
        Command::new("mpirun")
            .args([
                "-np",
                &np.to_string(),
                "--allow-run-as-root",
                "--oversubscribe",
            ])
            .args(["--timeout", "300"])
            .arg(env!("CARGO_BIN_EXE_hloc"))
            .args(args)
            .current_dir(root())
            .env("HLOC_CACHE_DIR", tmp("hloc-cache-mpi"))
            .env("OMPI_MCA_btl", "self,vader")
            .env("OMPI_MCA_pml", "ob1")
            .env("OMPI_MCA_btl_vader_single_copy_mechanism", "none")
            .output()
            .expect("mpirun runs (openmpi-bin, see tools/setup.sh)")
    }

    /// Every array of an npz as (name, .npy bytes): equal lists are equal bits.
    fn arrays(path: &Path) -> Vec<(String, Vec<u8>)> {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        hlo_eval::npy::read_npz(&bytes)
            .expect("an npz")
            .into_iter()
            .map(|(k, a)| (k, hlo_eval::npy::write_npy(&a).expect("npy")))
            .collect()
    }

    /// Runs `args` in process and on `mpirun -np 4` ranks, each writing its outputs, and
    /// checks that both succeed with the same stdout and the same output bits.
    fn same_as_in_process(name: &str, args: &[&str]) -> String {
        let inproc_npz = tmp(&format!("{name}.inprocess.npz"));
        let mpi_npz = tmp(&format!("{name}.mpi.npz"));
        let with = |npz: &Path, extra: &[&str]| -> Vec<String> {
            let mut v: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            v.extend(["--no-timing", "--outputs"].map(String::from));
            v.push(npz.display().to_string());
            v.extend(extra.iter().map(|s| s.to_string()));
            v
        };
        let a = with(&inproc_npz, &[]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let inproc = hloc(&a);
        assert!(inproc.status.success(), "in process: {inproc:?}");
        let m = with(&mpi_npz, &["--collectives", "mpi"]);
        let m: Vec<&str> = m.iter().map(String::as_str).collect();
        let mpi = mpirun(4, &m);
        assert!(
            mpi.status.success(),
            "mpirun: {}\n{}",
            text(&mpi.stdout),
            text(&mpi.stderr)
        );
        // Rank 0 alone prints: the same lines as the in-process run (checksums included).
        assert_eq!(text(&mpi.stdout), text(&inproc.stdout), "{name}");
        let want = arrays(&inproc_npz);
        assert!(!want.is_empty(), "{name}: no outputs written");
        assert_eq!(arrays(&mpi_npz), want, "{name}: outputs differ in bits");
        text(&mpi.stdout)
    }

    #[test]
    fn mpirun_on_four_ranks_matches_the_in_process_run_bit_for_bit() {
        // XLA's partitioned shard_map module: permute, all-gather, all-reduce, reduce-scatter
        // and all-to-all, against XLA's outputs and the N-device evaluator too.
        let out = same_as_in_process(
            "shard_map_collectives",
            &[
                "run",
                "corpus/spmd/shard_map_collectives.hlo",
                "--devices",
                "4",
                "--inputs",
                "corpus/spmd/shard_map_collectives.npz",
                "--expect",
                "corpus/spmd/shard_map_collectives.npz",
                "--check-reference",
            ],
        );
        assert!(out.contains("out2.dev3: f32[2,3]"), "{out}");
        assert!(
            out.contains("check-reference: 12 outputs on 4 devices match"),
            "{out}"
        );
        // Integer reductions (MPI's exact operations), float ones (ordered folds) over
        // groups in several orders, an async all-reduce, a partial permute with a self
        // pair (device 2 receives nothing: zeros), partition ids.
        let out = same_as_in_process(
            "mixed_collectives",
            &[
                "run",
                "cli/tests/mpi/mixed_collectives.hlo",
                "--devices",
                "4",
                "--seed",
                "7",
                "--check-reference",
            ],
        );
        assert!(
            out.contains("check-reference: 48 outputs on 4 devices match"),
            "{out}"
        );
        // hloc's partitioner on JAX's annotated module: global inputs sliced per rank,
        // global outputs assembled on rank 0.
        let out = same_as_in_process(
            "tensor_parallel_matmul",
            &[
                "run",
                "corpus/spmd/tensor_parallel_matmul.before.hlo",
                "--devices",
                "4",
                "--inputs",
                "corpus/spmd/tensor_parallel_matmul.global.npz",
                "--expect",
                "corpus/spmd/tensor_parallel_matmul.global.npz",
                "--check-reference",
            ],
        );
        assert!(out.contains("expect: out0: f32[8] ok"), "{out}");
    }

    #[test]
    fn repeat_prints_one_time_line_from_rank_0() {
        let out = mpirun(
            4,
            &[
                "run",
                "corpus/spmd/tensor_parallel_matmul.hlo",
                "--devices",
                "4",
                "--collectives",
                "mpi",
                "--repeat",
                "3",
            ],
        );
        assert!(out.status.success(), "{out:?}");
        let stdout = text(&out.stdout);
        let times: Vec<&str> = stdout.lines().filter(|l| l.starts_with("time:")).collect();
        assert_eq!(times.len(), 1, "{stdout}");
        assert!(times[0].contains(" over 3 runs; compile "), "{stdout}");
        assert_eq!(stdout.matches("out0.dev").count(), 4, "{stdout}");
    }

    #[test]
    fn a_job_of_another_size_than_the_devices_is_an_error() {
        let out = mpirun(
            2,
            &[
                "run",
                "corpus/spmd/shard_map_collectives.hlo",
                "--devices",
                "4",
                "--collectives",
                "mpi",
                "--no-timing",
            ],
        );
        assert!(!out.status.success(), "{out:?}");
        assert!(
            text(&out.stderr).contains(
                "the module runs on 4 devices but the MPI job has 2 rank(s): start it as \
                 `mpirun -np 4 hloc run ... --devices 4 --collectives mpi`"
            ),
            "{}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty(), "{out:?}");
        // Without --devices there is no device count to run on.
        let out = hloc(&[
            "run",
            "corpus/spmd/shard_map_collectives.hlo",
            "--collectives",
            "mpi",
        ]);
        assert_eq!(out.status.code(), Some(2), "{out:?}");
        assert!(
            text(&out.stderr)
                .contains("--collectives mpi runs one device per MPI rank: add --devices N"),
            "{out:?}"
        );
    }
}

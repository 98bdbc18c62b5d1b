//! The CUDA host emulation against the CPU: every kernel of the emitters' golden file runs
//! as the CPU's C and, threaded, as the printed CUDA compiled as host C++ (in both thread
//! orders), on the same random inputs; outputs agree (the two orders bit for bit), and a
//! barrier only some threads reach aborts.

#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use backend_cuda::{host_entry, host_unit};
use codegen::kir::{blocks_as_threads, parse_kernel, parse_kernels, Access, Kernel, ScalarType};

const EMITTED: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../plan/tests/golden/kir.test"
));

/// Compiles `source` (C or C++ by `ext`) into a shared object in `dir`.
fn build(dir: &Path, stem: &str, ext: &str, source: &str) -> PathBuf {
    let src = dir.join(format!("{stem}.{ext}"));
    std::fs::write(&src, source).unwrap();
    let so = dir.join(format!("{stem}.so"));
    let (cc, std) = if ext == "cpp" {
        ("c++", "-std=c++17")
    } else {
        ("cc", "-std=gnu11")
    };
    let out = Command::new(cc)
        .args(["-O1", std, "-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&src)
        .arg("-lm")
        .output()
        .expect("a C/C++ compiler");
    assert!(
        out.status.success(),
        "{cc} failed on {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    so
}

type Entry = unsafe extern "C" fn(*const *mut u8, i64, i64);

/// Random bytes of one element of `t` that make an ordinary value (small numbers, valid
/// predicates and indices).
fn element(t: ScalarType, r: u64) -> Vec<u8> {
    let f = ((r % 2001) as f32 - 1000.0) / 250.0;
    match t {
        ScalarType::F32 => f.to_le_bytes().to_vec(),
        ScalarType::F64 => f64::from(f).to_le_bytes().to_vec(),
        ScalarType::BF16 => ((f.to_bits() >> 16) as u16).to_le_bytes().to_vec(),
        ScalarType::Pred => vec![(r % 2) as u8],
        _ => {
            let mut v = vec![0u8; t.byte_width() as usize];
            v[0] = (r % 4) as u8;
            v
        }
    }
}

fn inputs(k: &Kernel, seed: u64) -> Vec<Vec<u8>> {
    let mut state = seed;
    k.buffers
        .iter()
        .map(|b| {
            (0..b.element_count())
                .flat_map(|_| {
                    state = state
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    element(b.ty, state >> 33)
                })
                .collect()
        })
        .collect()
}

fn run(entry: Entry, bufs: &mut [Vec<u8>], blocks: i64) {
    let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
    // SAFETY: `entry` is a kernel entry point compiled from a verified kernel whose
    // buffers have exactly these sizes; every pointer outlives the call.
    unsafe { entry(ptrs.as_ptr(), 0, blocks) };
}

/// Whether two outputs of type `t` agree: floats within a relative 1e-5 (libm and the
/// device math may round differently), everything else bit for bit.
fn agree(t: ScalarType, a: &[u8], b: &[u8]) -> bool {
    match t {
        ScalarType::F32 => a.chunks(4).zip(b.chunks(4)).all(|(x, y)| {
            let (x, y) = (
                f32::from_le_bytes(x.try_into().unwrap()),
                f32::from_le_bytes(y.try_into().unwrap()),
            );
            x == y || (x.is_nan() && y.is_nan()) || (x - y).abs() <= 1e-5 * x.abs().max(1.0)
        }),
        _ => a == b,
    }
}

fn golden_kernels() -> Vec<Kernel> {
    let file = testkit::golden::parse(EMITTED).expect("kir.test parses");
    let mut out: Vec<Kernel> = Vec::new();
    for case in file
        .cases
        .iter()
        .filter(|c| c.expected.starts_with("kernel "))
    {
        for mut k in parse_kernels(&format!("{}\n", case.expected)).expect("parses") {
            k.name = format!("{}_c{}", k.name, out.len());
            out.push(k);
        }
    }
    out
}

#[test]
fn threaded_cuda_on_the_host_matches_the_cpu_in_both_thread_orders() {
    let dir = tempdir();
    let kernels: Vec<Kernel> = golden_kernels().into_iter().collect();
    assert!(kernels.len() > 30, "only {} kernels", kernels.len());
    let threaded: Vec<Kernel> = kernels.iter().map(|k| blocks_as_threads(k, 8)).collect();
    let cpu = build(
        &dir,
        "cpu",
        "c",
        &backend_cpu::c::translation_unit(&kernels),
    );
    let host = build(&dir, "host", "cpp", &host_unit(&threaded).expect("prints"));
    // SAFETY: libraries built above from verified kernels.
    let (cpu, host) = unsafe {
        (
            libloading::Library::new(&cpu).unwrap(),
            libloading::Library::new(&host).unwrap(),
        )
    };
    for (k, t) in kernels.iter().zip(&threaded) {
        let bufs = inputs(k, 7);
        let (mut on_cpu, mut on_host) = (bufs.clone(), bufs.clone());
        // SAFETY: the symbols are kernel entry points of the signature `Entry`.
        let (c, h): (Entry, Entry) = unsafe {
            (
                *cpu.get::<Entry>(k.name.as_bytes()).unwrap(),
                *host.get::<Entry>(host_entry(&t.name).as_bytes()).unwrap(),
            )
        };
        run(c, &mut on_cpu, k.grid.blocks);
        run(h, &mut on_host, t.grid.blocks);
        for (i, b) in k.buffers.iter().enumerate() {
            if b.access != Access::In {
                assert!(
                    agree(b.ty, &on_cpu[i], &on_host[i]),
                    "kernel {}: output b{i} differs between the CPU and the CUDA host",
                    k.name
                );
            }
        }
    }
    drop(host);
    // The same unit with the threads of each block in reverse order: bit for bit.
    let reverse = run_child("reverse_order_child");
    assert!(
        reverse.status.success(),
        "{}",
        String::from_utf8_lossy(&reverse.stderr)
    );
}

/// Runs one test of this binary in a child process with `HLOC_CUDA_HOST_ORDER=reverse`.
fn run_child(test: &str) -> std::process::Output {
    Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--ignored", "--nocapture"])
        .env("HLOC_CUDA_HOST_ORDER", "reverse")
        .output()
        .unwrap()
}

/// Run by the test above: the threaded kernels in both orders in one process would share
/// the emulation's order (read from the environment), so the reverse run is a child.
#[test]
#[ignore = "run as a child process by the thread-order test"]
fn reverse_order_child() {
    let dir = tempdir();
    let threaded: Vec<Kernel> = golden_kernels()
        .into_iter()
        .map(|k| blocks_as_threads(&k, 8))
        .collect();
    let forward_so = build(&dir, "host", "cpp", &host_unit(&threaded).unwrap());
    // SAFETY: built above from verified kernels.
    let lib = unsafe { libloading::Library::new(&forward_so).unwrap() };
    for t in &threaded {
        // SAFETY: a kernel entry point of the signature `Entry`.
        let h: Entry = unsafe { *lib.get::<Entry>(host_entry(&t.name).as_bytes()).unwrap() };
        let bufs = inputs(t, 7);
        let mut reversed = bufs.clone();
        std::env::set_var("HLOC_CUDA_HOST_ORDER", "reverse");
        run(h, &mut reversed, t.grid.blocks);
        let mut forward = bufs;
        std::env::set_var("HLOC_CUDA_HOST_ORDER", "forward");
        run(h, &mut forward, t.grid.blocks);
        assert_eq!(
            forward, reversed,
            "kernel {}: thread order changes outputs",
            t.name
        );
    }
}

const DIVERGENT: &str = "\
kernel k blocks=1 threads=4
  b0 in p: f32[4]{0}
  b1 out r: f32[4]{0}
  l0 shared t: f32[4]
  for.threads s0 in [0, 3] {
    l0[s0] = b0[s0]
  }
  barrier
  for.threads s1 in [0, 3] {
    b1[s1] = l0[3 - s1]
  }
";

#[test]
fn barriers_rendezvous_and_a_divergent_one_aborts() {
    let dir = tempdir();
    let k = parse_kernel(DIVERGENT).unwrap();
    codegen::kir::verify(&k).unwrap();
    let so = build(
        &dir,
        "barrier",
        "cpp",
        &host_unit(std::slice::from_ref(&k)).unwrap(),
    );
    // SAFETY: built above from a verified kernel.
    let lib = unsafe { libloading::Library::new(&so).unwrap() };
    // SAFETY: a kernel entry point of the signature `Entry`.
    let h: Entry = unsafe { *lib.get::<Entry>(host_entry("k").as_bytes()).unwrap() };
    let input: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    let mut bufs = vec![input, vec![0u8; 16]];
    run(h, &mut bufs, 1);
    let out: Vec<f32> = bufs[1]
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    assert_eq!(out, [4.0, 3.0, 2.0, 1.0]);
    // The printed text with the barrier moved under a thread-dependent branch (the
    // verifier forbids this in the kernel IR; the emulation must still catch it).
    let unit = host_unit(std::slice::from_ref(&k)).unwrap();
    let kernel_at = unit.find("extern \"C\" __global__").unwrap();
    let unit = format!(
        "{}{}",
        &unit[..kernel_at],
        unit[kernel_at..].replacen(
            "  __syncthreads();",
            "  if (threadIdx.x < 2) __syncthreads();",
            1,
        )
    );
    let so = build(&dir, "divergent", "cpp", &unit);
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["divergent_child", "--exact", "--ignored", "--nocapture"])
        .env("HLOC_DIVERGENT_SO", &so)
        .output()
        .unwrap();
    assert!(!child.status.success());
    let stderr = String::from_utf8_lossy(&child.stderr);
    assert!(stderr.contains("divergent barrier"), "{stderr}");
}

/// Two blocks of two warps: a shuffle down by 5 in warps of 32 (a lane past the warp's end
/// keeps its own value), and a butterfly by 4 in groups of 8 of 64-bit values (both
/// halves travel).
const SHUFFLES: &str = "\
kernel k blocks=2 threads=64 (d0 = block)
  b0 in p: s32[128]{0}
  b1 out down: s32[128]{0}
  b2 out butterfly: s64[128]{0}
  for.threads s0 in [0, 63] {
    let v0: s32 = b0[d0 * 64 + s0]
    shuffle.down v1: s32 = v0 by 5 width 32
    b1[d0 * 64 + s0] = v1
    let v2: s64 = mul(convert.s64(v0), 8589934593:s64)
    shuffle.xor v3: s64 = v2 by 4 width 8
    b2[d0 * 64 + s0] = add(v2, v3)
  }
";

#[test]
fn shuffles_exchange_lanes_within_their_groups() {
    let dir = tempdir();
    let k = parse_kernel(SHUFFLES).unwrap();
    codegen::kir::verify(&k).unwrap();
    let so = build(
        &dir,
        "shuffles",
        "cpp",
        &host_unit(std::slice::from_ref(&k)).unwrap(),
    );
    // SAFETY: built above from a verified kernel.
    let lib = unsafe { libloading::Library::new(&so).unwrap() };
    // SAFETY: a kernel entry point of the signature `Entry`.
    let h: Entry = unsafe { *lib.get::<Entry>(host_entry("k").as_bytes()).unwrap() };
    let p: Vec<i32> = (0..128).map(|i| i * 7 - 300).collect();
    let mut bufs = vec![
        p.iter().flat_map(|x| x.to_le_bytes()).collect(),
        vec![0u8; 128 * 4],
        vec![0u8; 128 * 8],
    ];
    run(h, &mut bufs, 2);
    let down: Vec<i32> = bufs[1]
        .chunks(4)
        .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let butterfly: Vec<i64> = bufs[2]
        .chunks(8)
        .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    for t in 0..128usize {
        let lane = t % 32;
        let want = if lane + 5 < 32 { p[t + 5] } else { p[t] };
        assert_eq!(down[t], want, "down, thread {t}");
        let wide = |i: usize| i64::from(p[i]) * 8589934593;
        let partner = t - t % 8 + ((t % 8) ^ 4);
        assert_eq!(butterfly[t], wide(t) + wide(partner), "xor, thread {t}");
    }
}

/// Run by the test above in a child process: aborts.
#[test]
#[ignore = "run as a child process by the barrier test"]
fn divergent_child() {
    let so = std::env::var("HLOC_DIVERGENT_SO").unwrap();
    // SAFETY: built by the parent test from a verified kernel's printed text.
    let lib = unsafe { libloading::Library::new(&so).unwrap() };
    // SAFETY: a kernel entry point of the signature `Entry`.
    let h: Entry = unsafe { *lib.get::<Entry>(host_entry("k").as_bytes()).unwrap() };
    let mut bufs = vec![vec![0u8; 16], vec![0u8; 16]];
    run(h, &mut bufs, 1);
}

fn tempdir() -> PathBuf {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = std::env::temp_dir().join(format!(
        "hloc-cuda-host-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&d).unwrap();
    d
}

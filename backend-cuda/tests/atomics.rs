//! Atomic updates (`Stmt::Atomic`) printed as CUDA and run by the host emulation with the
//! blocks of one launch split over several OS threads at once: every element type the
//! scatter emitter updates, through CUDA's one-instruction atomics (integer and float add,
//! integer min/max) and the compare-and-swap loops (float min/max, multiply, narrow types,
//! a body of bindings), against the sequential fold of the same updates. The updates
//! collide (2048 updates on 5 elements); integer folds and float adds of small integers
//! are exact in any order and compare bit for bit, fractional `f32` adds within a
//! tolerance (their rounding depends on the order). With NVRTC, the same module compiles
//! for sm_90.

#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use backend_cuda::{compile_cubin, host_entry, host_unit, module_cu, nvrtc_present};
use codegen::kir::{parse_kernel, verify, Kernel, ScalarType};

/// Updates per kernel, and the elements they land on.
const UPDATES: usize = 2048;
const SLOTS: usize = 5;
const THREADS: usize = 32;

/// A kernel updating `o[i[n]]` with `u[n]` for every update `n` by `update` (the text after
/// `atomic b2[rt0] as v0: TY`, `TY` standing for the type).
fn kernel(name: &str, ty: ScalarType, update: &str) -> Kernel {
    let blocks = UPDATES / THREADS;
    let text = format!(
        "kernel {name} blocks={blocks} threads={THREADS} (d0 = block)\n  \
         b0 in u: {ty}[{UPDATES}]{{0}}\n  b1 in i: s32[{UPDATES}]{{0}}\n  \
         b2 inout o: {ty}[{SLOTS}]{{0}}\n  for.threads s0 in [0, {}] {{\n    \
         bind rt0 = b1[d0 * {THREADS} + s0]\n    if rt0 in [0, {}] {{\n      \
         atomic b2[rt0] as v0: {ty}{}\n    }}\n  }}\n",
        THREADS - 1,
        SLOTS - 1,
        update.replace("TY", ty.name()),
    );
    let k = parse_kernel(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    verify(&k).unwrap_or_else(|e| panic!("{e}\n{text}"));
    k
}

/// The cases: kernel, the fold each slot computes (on `f64` values), whether bits must
/// agree exactly, and the values of the updates (`n` -> value).
struct Case {
    kernel: Kernel,
    fold: fn(f64, f64) -> f64,
    exact: bool,
    value: fn(usize) -> f64,
}

fn small(n: usize) -> f64 {
    ((n * 7 + 3) % 4) as f64
}

fn signed(n: usize) -> f64 {
    ((n * 13 + 5) % 9) as f64 - 4.0
}

fn fraction(n: usize) -> f64 {
    (((n * 2654435761) % 1000) as f64 - 500.0) / 97.0
}

fn bits01(n: usize) -> f64 {
    ((n * 5 + 1) % 2) as f64
}

fn cases() -> Vec<Case> {
    use ScalarType as T;
    let add = |a: f64, b: f64| a + b;
    let max = |a: f64, b: f64| a.max(b);
    let min = |a: f64, b: f64| a.min(b);
    let mut out = Vec::new();
    let mut case = |name: &str, ty: T, update: &str, fold: fn(f64, f64) -> f64, exact, value| {
        out.push(Case {
            kernel: kernel(name, ty, update),
            fold,
            exact,
            value,
        });
    };
    // One instruction on the GPU.
    for ty in [T::S32, T::U32, T::S64, T::U64] {
        case(
            &format!("add_{ty}"),
            ty,
            " = add(v0, b0[d0 * 32 + s0])",
            add,
            true,
            small,
        );
    }
    for ty in [T::S32, T::S64] {
        case(
            &format!("max_{ty}"),
            ty,
            " = max(b0[d0 * 32 + s0], v0)",
            max,
            true,
            signed,
        );
        case(
            &format!("min_{ty}"),
            ty,
            " = min(v0, b0[d0 * 32 + s0])",
            min,
            true,
            signed,
        );
    }
    case(
        "add_f32",
        T::F32,
        " = add(v0, b0[d0 * 32 + s0])",
        add,
        true,
        small,
    );
    case(
        "add_f64",
        T::F64,
        " = add(v0, b0[d0 * 32 + s0])",
        add,
        true,
        small,
    );
    case(
        "add_f32_frac",
        T::F32,
        " = add(v0, b0[d0 * 32 + s0])",
        add,
        false,
        fraction,
    );
    // Compare-and-swap loops: float min/max, narrow types, a body.
    for ty in [T::F32, T::F64, T::F16, T::BF16] {
        case(
            &format!("max_{ty}"),
            ty,
            " = max(v0, b0[d0 * 32 + s0])",
            max,
            true,
            signed,
        );
        case(
            &format!("min_{ty}"),
            ty,
            " = min(v0, b0[d0 * 32 + s0])",
            min,
            true,
            signed,
        );
    }
    case(
        "add_f16",
        T::F16,
        " = add(v0, b0[d0 * 32 + s0])",
        add,
        true,
        small,
    );
    case(
        "add_bf16",
        T::BF16,
        " = add(v0, b0[d0 * 32 + s0])",
        add,
        true,
        bits01,
    );
    for ty in [T::S8, T::U8, T::S16, T::U16] {
        case(
            &format!("max_{ty}"),
            ty,
            " = max(v0, b0[d0 * 32 + s0])",
            max,
            true,
            small,
        );
        case(
            &format!("add_{ty}"),
            ty,
            " = add(v0, b0[d0 * 32 + s0])",
            add,
            true,
            bits01,
        );
    }
    case(
        "or_pred",
        T::Pred,
        " = or(v0, b0[d0 * 32 + s0])",
        max,
        true,
        bits01,
    );
    // A body: multiply by the update (1 or -1: exact), through bindings.
    case(
        "mul_body_s32",
        T::S32,
        " {\n let v1: TY = b0[d0 * 32 + s0]\n let v2: TY = mul(v0, v1)\n } = v2",
        |a, b| a * b,
        true,
        |n| if n % 3 == 0 { -1.0 } else { 1.0 },
    );
    out
}

/// Little-endian bytes of `x` as an element of `t`.
fn to_bytes(t: ScalarType, x: f64) -> Vec<u8> {
    use ScalarType as T;
    match t {
        T::F32 => (x as f32).to_le_bytes().to_vec(),
        T::F64 => x.to_le_bytes().to_vec(),
        T::F16 => half_bits(x as f32).to_le_bytes().to_vec(),
        T::BF16 => ((x as f32).to_bits() >> 16).to_le_bytes()[..2].to_vec(),
        T::Pred => vec![u8::from(x != 0.0)],
        _ => (x as i64).to_le_bytes()[..t.byte_width() as usize].to_vec(),
    }
}

/// The `f16` bits of `x`, an integer of magnitude below 2048 (exact).
fn half_bits(x: f32) -> u16 {
    if x == 0.0 {
        return if x.is_sign_negative() { 0x8000 } else { 0 };
    }
    let sign = if x < 0.0 { 0x8000u16 } else { 0 };
    let a = x.abs();
    let e = a.log2().floor() as i32;
    let mant = ((a / 2f32.powi(e) - 1.0) * 1024.0).round() as u16;
    sign | (((e + 15) as u16) << 10) | mant
}

/// An element of `t` from its bytes, as `f64`.
fn from_bytes(t: ScalarType, b: &[u8]) -> f64 {
    use ScalarType as T;
    let mut w = [0u8; 8];
    w[..b.len()].copy_from_slice(b);
    let u = u64::from_le_bytes(w);
    match t {
        T::F32 => f64::from(f32::from_bits(u as u32)),
        T::F64 => f64::from_bits(u),
        T::F16 => {
            let (s, e, m) = ((u >> 15) & 1, ((u >> 10) & 31) as i32, (u & 1023) as f64);
            let v = if e == 0 {
                m * 2f64.powi(-24)
            } else {
                (1.0 + m / 1024.0) * 2f64.powi(e - 15)
            };
            if s == 1 {
                -v
            } else {
                v
            }
        }
        T::BF16 => f64::from(f32::from_bits((u as u32) << 16)),
        T::S8 => f64::from(u as u8 as i8),
        T::S16 => f64::from(u as u16 as i16),
        T::S32 => f64::from(u as u32 as i32),
        T::S64 => u as i64 as f64,
        _ => u as f64,
    }
}

fn build(dir: &Path, source: &str) -> PathBuf {
    let src = dir.join("atomics.cpp");
    std::fs::write(&src, source).unwrap();
    let so = dir.join("atomics.so");
    let out = Command::new("c++")
        .args(["-O1", "-std=c++17", "-shared", "-fPIC", "-o"])
        .arg(&so)
        .arg(&src)
        .arg("-lm")
        .output()
        .expect("a C++ compiler");
    assert!(
        out.status.success(),
        "c++ failed on {}:\n{}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    so
}

type Entry = unsafe extern "C" fn(*const *mut u8, i64, i64);

/// Pointers to the buffers, handed to the OS threads that run blocks concurrently.
#[derive(Clone, Copy)]
struct Bufs(*const *mut u8);
// SAFETY: the buffers outlive every thread (joined before they are read), and the kernel
// writes the shared output only through atomics.
unsafe impl Send for Bufs {}

#[test]
fn colliding_atomic_updates_on_concurrent_blocks_match_the_sequential_fold() {
    let cases = cases();
    let kernels: Vec<Kernel> = cases.iter().map(|c| c.kernel.clone()).collect();
    let dir = std::env::temp_dir().join(format!("hloc-atomics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let so = build(&dir, &host_unit(&kernels).expect("prints"));
    // SAFETY: the library was just built from the kernels above; it stays loaded while
    // its functions run.
    let lib = unsafe { libloading::Library::new(&so) }.expect("loads");
    let blocks = (UPDATES / THREADS) as i64;
    for c in &cases {
        let t = c.kernel.buffers[2].ty;
        let updates: Vec<f64> = (0..UPDATES).map(c.value).collect();
        // Every slot, some updates out of range (skipped by the guard).
        let index: Vec<i32> = (0..UPDATES)
            .map(|n| ((n * 31 + n / 7) % (SLOTS + 1)) as i32)
            .collect();
        let init: Vec<f64> = (0..SLOTS).map(|s| s as f64 - 1.0).collect();
        let init = if t == ScalarType::Pred || t.is_unsigned_int() {
            init.iter().map(|x| x.abs()).collect()
        } else if c.kernel.name.starts_with("mul") {
            vec![1.0; SLOTS]
        } else {
            init
        };
        let mut bufs: Vec<Vec<u8>> = vec![
            updates.iter().flat_map(|&x| to_bytes(t, x)).collect(),
            index.iter().flat_map(|i| i.to_le_bytes()).collect(),
            init.iter().flat_map(|&x| to_bytes(t, x)).collect(),
        ];
        let name = host_entry(&c.kernel.name);
        // SAFETY: the symbol is the host entry point of a kernel of this library, of
        // type `Entry`.
        let entry: Entry = *unsafe { lib.get::<Entry>(name.as_bytes()) }.expect("entry");
        let ptrs: Vec<*mut u8> = bufs.iter_mut().map(|b| b.as_mut_ptr()).collect();
        let shared = Bufs(ptrs.as_ptr());
        std::thread::scope(|s| {
            for part in 0..4i64 {
                s.spawn(move || {
                    let shared = shared;
                    // SAFETY: the entry point runs blocks [begin, end) of a verified
                    // kernel on buffers of its sizes; other threads run other blocks.
                    unsafe { entry(shared.0, part * blocks / 4, (part + 1) * blocks / 4) };
                });
            }
        });
        let mut want = init.clone();
        for (n, &i) in index.iter().enumerate() {
            if (i as usize) < SLOTS {
                want[i as usize] = (c.fold)(want[i as usize], updates[n]);
            }
        }
        let w = t.byte_width() as usize;
        for (s, &expect) in want.iter().enumerate() {
            let got = from_bytes(t, &bufs[2][s * w..(s + 1) * w]);
            let ok = if c.exact {
                got == from_bytes(t, &to_bytes(t, expect))
            } else {
                (got - expect).abs() <= 1e-4 * expect.abs().max(1.0)
            };
            assert!(ok, "{}: slot {s}: {got}, want {expect}", c.kernel.name);
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if nvrtc_present() {
        let module = module_cu(&kernels).expect("prints");
        let cubin = compile_cubin(&module, "sm_90").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cubin.kernels.len(), kernels.len(), "{}", cubin.log);
    } else {
        eprintln!("NVRTC not found: the module was not compiled for sm_90");
    }
}

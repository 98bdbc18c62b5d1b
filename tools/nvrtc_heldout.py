#!/usr/bin/env python3
"""Issue 33's held-out bar on fresh programs (dirs of NAME/before_optimizations.hlo, inputs.npz,
outputs.npz as tools/user_programs*.py write them), one program at a time:

1. `hloc compile FILE --target h100 --dump-to DIR --stats` must succeed;
2. every dumped `.kernels.cu` goes through NVRTC for sm_90 with tools/nvrtc_report.py's ctypes
   binding (independent of hloc's own), which must accept it with 0 spill bytes;
3. `hloc run FILE --backend cuda-host --inputs inputs.npz --expect outputs.npz` (XLA's recorded
   outputs), under a timeout because the host emulation of a GPU is slow.

Prints one markdown row per program (compile, kernels, max registers, spill bytes, outputs
differing from XLA's, cuda-host seconds) and writes each run's output to OUT/NAME.run.txt, so
that a difference can then be compared with the CPU backend and the evaluator (`--backend
reference`). The bar was first run by hand (sessions 53-54); this keeps the commands fixed.

    python3 tools/nvrtc_heldout.py --hloc BIN DIR [DIR ...] [--out /tmp/heldout]
        [--timeout 400] [--no-run] [--only NAME ...]

Exit status 1 when a program fails to compile, NVRTC rejects or spills, or cuda-host fails
for a reason other than differing outputs (a timeout counts)."""
import argparse
import glob
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nvrtc_report import compile_cu, load_nvrtc, report  # noqa: E402


def compile_row(hloc, hlo, out_dir, lib):
    """(ok, kernels, max registers, spill bytes, note) of `hlo` compiled for h100."""
    os.makedirs(out_dir, exist_ok=True)
    # hloc's own NVRTC step is skipped (NVRTC off its loader path): the dump is what is checked.
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    r = subprocess.run(
        [hloc, "compile", hlo, "--target", "h100", "--dump-to", out_dir, "--stats"],
        capture_output=True,
        text=True,
        env=env,
    )
    if r.returncode != 0:
        return False, 0, 0, 0, "compile failed: " + r.stderr.strip()[-300:]
    kernels, max_regs, spill, note = 0, 0, 0, ""
    for cu in sorted(glob.glob(os.path.join(out_dir, "*.kernels.cu"))):
        rc, log, _ = compile_cu(lib, open(cu).read(), "sm_90", [])
        if rc != 0:
            return False, kernels, max_regs, spill, f"NVRTC rejected {cu}: {log[-1500:]}"
        for name, regs, _stack, st, ld in report(log):
            kernels += 1
            max_regs = max(max_regs, regs)
            spill += st + ld
            if st + ld:
                note += f" {name} spills {st}+{ld} B at {regs} registers;"
    return True, kernels, max_regs, spill, note


def run_row(hloc, hlo, txt_path, timeout):
    """(ok, outputs verdict, seconds): cuda-host against XLA's recorded outputs."""
    d = os.path.dirname(hlo)
    t = time.time()
    try:
        r = subprocess.run(
            [hloc, "run", hlo, "--backend", "cuda-host", "--inputs", f"{d}/inputs.npz",
             "--expect", f"{d}/outputs.npz"],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return False, f"timed out ({timeout} s)", time.time() - t
    secs = time.time() - t
    text = r.stdout + r.stderr
    open(txt_path, "w").write(text)
    total = len(re.findall(r"^expect: out", text, re.M))
    differ = len(re.findall(r"^expect: out\S+: \S+ DIFFERS", text, re.M))
    if total == 0:
        return False, "failed: " + text.strip()[-300:], secs
    return True, (f"all {total} agree" if differ == 0 else f"{differ}/{total} differ"), secs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hloc", required=True)
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--out", default="/tmp/heldout")
    ap.add_argument("--timeout", type=int, default=400)
    ap.add_argument("--no-run", action="store_true", help="compile and NVRTC only")
    ap.add_argument("--only", nargs="*", help="program names (default: every program)")
    a = ap.parse_args()
    lib = load_nvrtc()
    failed = False
    print("| program | compile | kernels | max registers | spill bytes | cuda-host vs XLA | cuda-host s |")
    print("|---|---|---:|---:|---:|---|---:|")
    for d in a.dirs:
        for hlo in sorted(glob.glob(os.path.join(d, "*", "before_optimizations.hlo"))):
            prog = os.path.basename(os.path.dirname(hlo))
            if a.only and prog not in a.only:
                continue
            name = f"{os.path.basename(os.path.normpath(d))}_{prog}"
            ok, kernels, regs, spill, note = compile_row(a.hloc, hlo, os.path.join(a.out, name), lib)
            failed |= not ok or spill > 0
            verdict, secs = "not run", 0.0
            if ok and not a.no_run:
                run_ok, verdict, secs = run_row(a.hloc, hlo, os.path.join(a.out, name + ".run.txt"), a.timeout)
                failed |= not run_ok
            print(f"| {name} | {'ok' if ok else 'FAIL'} | {kernels} | {regs} | {spill} | {verdict} | {secs:.1f} |",
                  flush=True)
            if note:
                print(f"  {name}:{note}", file=sys.stderr)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

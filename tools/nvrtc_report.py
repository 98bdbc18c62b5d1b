#!/usr/bin/env python3
"""Compiles a CUDA module (a `*.kernels.cu` that `hloc compile --target h100 --dump-to DIR`
wrote) with NVRTC for sm_90 and prints what `ptxas -v` reports per kernel: registers,
stack frame, spill stores and loads. Independent of hloc's own NVRTC binding (ctypes over
the same libnvrtc that tools/setup.sh puts in .deps/nvrtc/lib), so that a spill can be
looked at in the PTX (`--ptx FILE`) and a kernel's source varied by hand until it is gone.

    python3 tools/nvrtc_report.py DIR/module.kernels.cu [--ptx out.ptx] [--only SUBSTR]
        [--option=--maxrregcount=64 ...]

Exit status 1 when a kernel spills (or NVRTC rejects the source: its log is printed)."""
import argparse
import ctypes
import os
import re
import sys


def load_nvrtc():
    deps = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".deps", "nvrtc", "lib")
    # NVRTC opens its builtins library by name at compile time: loaded first from .deps,
    # the loader finds it without LD_LIBRARY_PATH.
    try:
        ctypes.CDLL(os.path.join(deps, "libnvrtc-builtins.so.13.0"), mode=ctypes.RTLD_GLOBAL)
    except OSError:
        pass
    for path in [os.path.join(deps, "libnvrtc.so"), "libnvrtc.so.13", "libnvrtc.so"]:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    sys.exit("NVRTC not found: run tools/setup.sh")


def compile_cu(lib, source, arch, extra):
    prog = ctypes.c_void_p()
    check = lambda rc, what: rc == 0 or sys.exit(f"nvrtc {what} failed: {rc}")
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"hloc.cu", 0, None, None), "create")
    opts = [f"--gpu-architecture={arch}", "--ptxas-options=-v", "-std=c++17"] + extra
    arr = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    ptx = None
    if rc == 0:
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, buf)
        ptx = buf.value.decode()
    lib.nvrtcDestroyProgram(ctypes.byref(prog))
    return rc, log.value.decode(errors="replace"), ptx


def report(log):
    """(kernel, registers, stack, spill stores, spill loads) per kernel of ptxas's log."""
    rows, cur = [], None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line) or re.search(r"Function properties for (\w+)", line)
        if m:
            if cur is None or cur[0] != m.group(1):
                cur = [m.group(1), 0, 0, 0, 0]
                rows.append(cur)
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and cur:
            cur[2:5] = [int(x) for x in m.groups()]
        m = re.search(r"Used (\d+) registers", line)
        if m and cur:
            cur[1] = int(m.group(1))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cu")
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--ptx", help="write the PTX here")
    ap.add_argument("--only", help="print only kernels whose name contains this")
    ap.add_argument("--option", action="append", default=[], help="an extra NVRTC option")
    a = ap.parse_args()
    rc, log, ptx = compile_cu(load_nvrtc(), open(a.cu).read(), a.arch, a.option)
    if rc != 0:
        print(log)
        sys.exit(1)
    if a.ptx and ptx:
        open(a.ptx, "w").write(ptx)
    spilled = False
    for name, regs, stack, st, ld in report(log):
        if a.only and a.only not in name:
            continue
        spilled |= st > 0 or ld > 0
        print(f"{name}: registers={regs} stack={stack} spill_stores={st} spill_loads={ld}")
    sys.exit(1 if spilled else 0)


if __name__ == "__main__":
    main()

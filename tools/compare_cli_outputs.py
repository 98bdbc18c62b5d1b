#!/usr/bin/env python3
"""Compare what two hloc binaries print for the corpus, byte for byte (a refactor's bar).

Run by hand (never by the test suite); standard library only:

    python3 tools/compare_cli_outputs.py --before /tmp/hloc-before-31 --after target/release/hloc
    python3 tools/compare_cli_outputs.py --before A --after B --programs softmax,rng --keep /tmp/cmp
    python3 tools/compare_cli_outputs.py --before A --after B --corpus DIR --files before_optimizations.hlo

For every program of the corpus (the names of DIR/MANIFEST.tsv, else every folder of DIR
holding one of --files) and each of its modules (--files, default both
before_optimizations.hlo and after_optimizations.hlo), each binary runs, in a working
folder of its own and with a fresh HLOC_CACHE_DIR per binary (so both really compile):

    hloc fuse FILE --target cpu --explain explain.jsonl   -> fuse (stdout), fuse-explain
    hloc compile FILE --stats --dump-to dump              -> stats, and every dump file:
        before_optimizations.txt, after_optimizations.txt, kernels.c, thunks.txt,
        after_optimizations-buffer-assignment.txt (named without module_0000.NAME.)
    hloc run FILE --inputs NAME/inputs.npz --outputs out.npz --no-timing
                                                          -> run (stdout), run-outputs
                                                             (the npz's members' bytes)

`--stats` keeps every key and every value but those of `compile:` (a wall time) and
`cache:` (hit or miss), whose values are replaced by `*`. A command that fails is compared
by its exit status and its standard error: the same failure from both binaries is
identical. Both binaries are run through a link named `hloc` and the working folders'
paths are replaced by `<work>`, so the program name and folder in messages do not differ.
`--no-run` leaves out `hloc run` (the only step that executes the compiled code).
`--gpu TARGET` (h100, h200) adds the compile-only GPU path, which needs NVRTC but no GPU:

    hloc compile FILE --target TARGET --stats --dump-to gpu-dump
                                                          -> gpu-stats, and every dump file
                                                             as gpu-NAME (kernels.cu, kernels.txt, ...)

Prints one row per module (identical outputs out of those compared, the differing ones),
under each differing output its first differing line (or byte, for npz members), then
`N modules, M outputs compared, K differ`; exits 1 if any output differs, 2 on bad
arguments. At most --jobs (default 2) hloc processes run at a time. --keep DIR keeps
both sides' outputs (DIR/before/..., DIR/after/...) for `diff -r`.
"""

import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_FILES = "before_optimizations.hlo,after_optimizations.hlo"
VOLATILE_STATS = ("compile", "cache")


def program_names(corpus, files):
    manifest = os.path.join(corpus, "MANIFEST.tsv")
    if os.path.exists(manifest):
        lines = open(manifest).read().splitlines()[1:]
        return [l.split("\t")[0] for l in lines if l.strip()]
    return sorted(n for n in os.listdir(corpus)
                  if any(os.path.exists(os.path.join(corpus, n, f)) for f in files))


def run_cmd(argv, cwd, env, timeout):
    """(exit status, stdout, stderr) as text; a timeout is status `timeout`."""
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, timeout=timeout)
        return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        return "timeout", "", f"timed out after {timeout} s\n"


def as_output(status, stdout, stderr, work):
    """One command's comparable text: stdout, then stderr and the status unless it
    succeeded silently. The working folder's path becomes <work>."""
    text = stdout
    if status != 0 or stderr:
        text += f"--- stderr ---\n{stderr}--- exit {status} ---\n"
    return text.replace(work, "<work>")


def mask_stats(text):
    out = []
    for line in text.splitlines(keepends=True):
        key = line.split(":", 1)[0]
        if ":" in line and key in VOLATILE_STATS:
            out.append(f"{key}: *\n")
        else:
            out.append(line)
    return "".join(out)


def dump_key(fname):
    """module_0000.jit_f.kernels.c -> kernels.c (the module's name is kept out of the key:
    the two sides must name the same files; a renamed module shows in the dumps' text)."""
    parts = fname.split(".")
    if len(parts) >= 3 and parts[0].startswith("module_"):
        # The module name may hold dots; the known suffixes do not, except the extension.
        for suffix in ("before_optimizations.txt", "after_optimizations.txt",
                       "after_optimizations-buffer-assignment.txt", "kernels.c", "thunks.txt",
                       "kernels.cu", "kernels.txt"):
            if fname.endswith("." + suffix):
                return suffix
    return fname


def collect(binary_link, module, inputs, work, cache, timeout, do_run, gpu=None):
    """Runs the three commands (four with `gpu`) for one module; returns {output name: str
    or bytes}."""
    os.makedirs(work, exist_ok=True)
    env = dict(os.environ, HLOC_CACHE_DIR=cache)
    outs = {}

    st, so, se = run_cmd([binary_link, "fuse", module, "--target", "cpu", "--explain", "explain.jsonl"],
                         work, env, timeout)
    outs["fuse"] = as_output(st, so, se, work)
    ex = os.path.join(work, "explain.jsonl")
    if os.path.exists(ex):
        outs["fuse-explain"] = open(ex, "rb").read()

    st, so, se = run_cmd([binary_link, "compile", module, "--stats", "--dump-to", "dump"],
                         work, env, timeout)
    outs["stats"] = mask_stats(as_output(st, so, se, work))
    dump = os.path.join(work, "dump")
    if os.path.isdir(dump):
        for f in sorted(os.listdir(dump)):
            outs[dump_key(f)] = open(os.path.join(dump, f), "rb").read()

    if gpu:
        st, so, se = run_cmd([binary_link, "compile", module, "--target", gpu, "--stats",
                              "--dump-to", "gpu-dump"], work, env, timeout)
        outs["gpu-stats"] = mask_stats(as_output(st, so, se, work))
        dump = os.path.join(work, "gpu-dump")
        if os.path.isdir(dump):
            for f in sorted(os.listdir(dump)):
                outs["gpu-" + dump_key(f)] = open(os.path.join(dump, f), "rb").read()

    if do_run and inputs:
        st, so, se = run_cmd([binary_link, "run", module, "--inputs", inputs, "--outputs", "out.npz",
                              "--no-timing"], work, env, timeout)
        outs["run"] = as_output(st, so, se, work)
        npz = os.path.join(work, "out.npz")
        if os.path.exists(npz):
            try:
                with zipfile.ZipFile(npz) as z:
                    outs["run-outputs"] = {n: z.read(n) for n in sorted(z.namelist())}
            except zipfile.BadZipFile:
                outs["run-outputs"] = open(npz, "rb").read()
    return outs


def first_difference(a, b):
    """A one-line description of where two outputs first differ."""
    if a is None or b is None:
        return "only after" if a is None else "only before"
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)):
            return "one side is not a zip archive"
        if sorted(a) != sorted(b):
            return f"members before {sorted(a)} after {sorted(b)}"
        for n in sorted(a):
            if a[n] != b[n]:
                return f"member {n}: " + first_difference(a[n], b[n])
        return "identical"
    if isinstance(a, str):
        a = a.encode()
    if isinstance(b, str):
        b = b.encode()
    try:
        la, lb = a.decode().splitlines(), b.decode().splitlines()
    except UnicodeDecodeError:
        i = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        return f"byte {i} (sizes {len(a)} and {len(b)})"
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "<end>"
        y = lb[i] if i < len(lb) else "<end>"
        if x != y:
            return f"line {i + 1}: before {clip(x)!r} | after {clip(y)!r}"
    return "line endings or final newline differ"


def clip(s, n=90):
    return s if len(s) <= n else s[:n] + "..."


def save(outs, d):
    os.makedirs(d, exist_ok=True)
    for name, v in outs.items():
        if isinstance(v, dict):
            sub = os.path.join(d, name)
            os.makedirs(sub, exist_ok=True)
            for m, b in v.items():
                open(os.path.join(sub, m), "wb").write(b)
        else:
            open(os.path.join(d, name), "wb").write(v.encode() if isinstance(v, str) else v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 2)[2])
    ap.add_argument("--before", required=True, help="the hloc binary before the change")
    ap.add_argument("--after", required=True, help="the hloc binary after the change")
    ap.add_argument("--corpus", default=os.path.join(ROOT, "corpus"))
    ap.add_argument("--files", default=DEFAULT_FILES,
                    help=f"comma-separated module files of each program (default {DEFAULT_FILES})")
    ap.add_argument("--programs", help="comma-separated program names (default: all)")
    ap.add_argument("--no-run", action="store_true", help="leave out `hloc run`")
    ap.add_argument("--gpu", metavar="TARGET",
                    help="also compare `hloc compile --target TARGET` (h100, h200; needs NVRTC)")
    ap.add_argument("--jobs", type=int, default=2, help="hloc processes at a time (default 2)")
    ap.add_argument("--timeout", type=int, default=600, help="seconds per command (default 600)")
    ap.add_argument("--keep", help="keep both sides' outputs in this directory")
    a = ap.parse_args()

    for b in (a.before, a.after):
        if not (os.path.isfile(b) and os.access(b, os.X_OK)):
            print(f"not an executable: {b}", file=sys.stderr)
            return 2
    files = [f for f in a.files.split(",") if f]
    names = program_names(a.corpus, files)
    if a.programs:
        wanted = a.programs.split(",")
        missing = [w for w in wanted if w not in names]
        if missing:
            print(f"no such programs: {','.join(missing)}", file=sys.stderr)
            return 2
        names = [n for n in names if n in wanted]
    modules = [(n, f) for n in names for f in files if os.path.exists(os.path.join(a.corpus, n, f))]
    if not modules:
        print("no modules", file=sys.stderr)
        return 2

    if a.keep:
        for side in ("before", "after"):
            shutil.rmtree(os.path.join(a.keep, side), ignore_errors=True)
    tmp = tempfile.mkdtemp(prefix="hloc-compare-")
    try:
        sides = {}
        for side, binary in (("before", a.before), ("after", a.after)):
            d = os.path.join(tmp, side)
            os.makedirs(os.path.join(d, "bin"))
            os.makedirs(os.path.join(d, "cache"))
            link = os.path.join(d, "bin", "hloc")
            os.symlink(os.path.abspath(binary), link)
            sides[side] = (link, os.path.join(d, "cache"), os.path.join(d, "work"))

        def task(side, prog, f):
            link, cache, work_root = sides[side]
            # Both sides' working folders have paths of the same shape; messages naming
            # them are normalized to <work>.
            work = os.path.join(work_root, prog, os.path.splitext(f)[0])
            module = os.path.abspath(os.path.join(a.corpus, prog, f))
            inputs = os.path.abspath(os.path.join(a.corpus, prog, "inputs.npz"))
            return collect(link, module, inputs if os.path.exists(inputs) else None,
                           work, cache, a.timeout, not a.no_run, a.gpu)

        results = {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
            futs = {pool.submit(task, side, p, f): (side, p, f)
                    for p, f in modules for side in ("before", "after")}
            for fut in concurrent.futures.as_completed(futs):
                results[futs[fut]] = fut.result()

        print(f"before: {a.before}\nafter:  {a.after}\ncorpus: {a.corpus}")
        print(f"{'module':52} {'identical':>9}  differ")
        total = differ = 0
        for p, f in modules:
            ob, oa = results[("before", p, f)], results[("after", p, f)]
            keys = sorted(set(ob) | set(oa))
            diffs = [k for k in keys if ob.get(k) != oa.get(k)]
            total += len(keys)
            differ += len(diffs)
            label = f"{p}/{os.path.splitext(f)[0]}"
            print(f"{label:52} {len(keys) - len(diffs):>4}/{len(keys):<4}  {' '.join(diffs) or '-'}")
            for k in diffs:
                print(f"    {k}: {first_difference(ob.get(k), oa.get(k))}")
            if a.keep:
                for side, o in (("before", ob), ("after", oa)):
                    save(o, os.path.join(a.keep, side, p, os.path.splitext(f)[0]))
        print(f"{len(modules)} modules, {total} outputs compared, {differ} differ")
        if a.keep:
            print(f"(outputs kept in {a.keep}: diff -r {a.keep}/before {a.keep}/after)")
        return 1 if differ else 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())

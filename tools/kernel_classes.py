"""The class of a generated kernel, from the optimized module `hloc compile --dump-to` writes:
what its fused computation does (a softmax-like row kernel, a reduction, a transpose, a
gather, a transcendental or plain elementwise loop, ...), for tools/model_vs_measured.py's
per-class table of the cost model against measurement. Python 3 standard library only.

A kernel thunk's label names its instruction (`kernel hloc_k12_fusion_3 blocks=64` runs
`fusion.3`: `hloc_k{N}_` and the name as a C identifier); its class comes from the opcodes of
the computation the fusion calls (or the instruction's own opcode), first match wins:
contraction loop (a dot or convolution the code generator runs as loops), reduce-window
(scans and pooling), scatter, sort, gather, dynamic-update-slice, softmax-like (a reduction
and a transcendental in one kernel), reduction, transpose, transcendental elementwise,
movement (slice, concatenate, pad, reverse, dynamic-slice), elementwise; `f64` is added
where the kernel computes in `f64`.
"""

import os
import re
import subprocess

TRANSCENDENTAL = {
    "exponential", "exponential-minus-one", "log", "log-plus-one", "logistic", "tanh",
    "sine", "cosine", "tan", "power", "erf", "atan2", "cbrt",
}
MOVEMENT = {"concatenate", "pad", "slice", "dynamic-slice", "reverse"}
LINE = re.compile(r"^\s*(?:ROOT )?(\S+) = (.*)$")
HEADER = re.compile(r"^(?:ENTRY )?(\S+) \{")


def parse_module(text):
    """{computation: [(name, opcode, called computation or None, element type)]}, and
    {instruction name as a C identifier: the same tuple} over the whole module."""
    comps, by_ident, cur = {}, {}, None
    for line in text.splitlines():
        h = HEADER.match(line)
        if h:
            cur = h.group(1)
            comps[cur] = []
            continue
        if line.startswith("}"):
            cur = None
            continue
        m = LINE.match(line)
        if not m or cur is None:
            continue
        rest = re.sub(r"\{[^{}]*\}", "", m.group(2))
        op = re.search(r"\s([a-z][a-z0-9-]*)\(", " " + rest)
        calls = re.search(r"calls=([^,\s]+)", m.group(2))
        ty = re.match(r"\(?(\w+)\[", m.group(2))
        entry = (m.group(1), op.group(1) if op else "?", calls.group(1) if calls else None,
                 ty.group(1) if ty else "")
        comps[cur].append(entry)
        by_ident[re.sub(r"[^A-Za-z0-9]", "_", m.group(1))] = entry
    return comps, by_ident


def classify(opcodes, types):
    """The class of a kernel computing `opcodes` in element `types`."""
    s = set(opcodes)
    f64 = " f64" if "f64" in types else ""
    if s & {"dot", "convolution"}:
        return "contraction loop"
    for op, name in (("reduce-window", "reduce-window"), ("scatter", "scatter"),
                     ("sort", "sort"), ("gather", "gather"),
                     ("dynamic-update-slice", "dynamic-update-slice")):
        if op in s:
            return name
    reduces, transcendental = "reduce" in s, bool(s & TRANSCENDENTAL)
    if reduces and transcendental:
        return "softmax-like" + f64
    if reduces:
        return "reduction"
    if "transpose" in s:
        return "transpose"
    if transcendental:
        return "transcendental elementwise" + f64
    if s & MOVEMENT:
        return "movement"
    return "elementwise"


class Classifier:
    """Kernel classes of programs, compiling each once with `hloc compile --dump-to` into
    `dump_root/PROGRAM` (kept, so a second run reuses it)."""

    def __init__(self, hloc, dump_root, env=None):
        self.hloc, self.dump_root, self.env = hloc, dump_root, env
        self.modules = {}

    def module(self, program, hlo):
        if program not in self.modules:
            out = os.path.join(self.dump_root, program)
            os.makedirs(out, exist_ok=True)
            found = [f for f in os.listdir(out) if f.endswith(".after_optimizations.txt")]
            if not found:
                subprocess.run([self.hloc, "compile", hlo, "--dump-to", out],
                               capture_output=True, env=self.env)
                found = [f for f in os.listdir(out) if f.endswith(".after_optimizations.txt")]
            text = open(os.path.join(out, found[0])).read() if found else ""
            self.modules[program] = parse_module(text)
        return self.modules[program]

    def kernel_class(self, program, hlo, label):
        """`kernel: CLASS` for a generated kernel's label (`?` where its instruction is not
        found), None for other thunks."""
        m = re.match(r"kernel hloc_k\d+_(\S+)", label)
        if not m:
            return None
        comps, by_ident = self.module(program, hlo)
        instr = by_ident.get(m.group(1))
        if instr is None:
            return "kernel: ?"
        _, op, calls, ty = instr
        if op == "fusion" and calls in comps:
            body = comps[calls]
            return "kernel: " + classify([b[1] for b in body], [b[3] for b in body])
        return "kernel: " + classify([op], [ty])

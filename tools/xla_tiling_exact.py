"""The elements a propagated tile must read, enumerated from an op's definition: the oracle
`xla_tiling_compat.py` checks hloc's tile against where it differs from XLA's, so that a
difference where hloc's tile is exact (and XLA's reads more, or misses elements the
program reads) is told from one where hloc is wrong.

Only ops whose read set this module enumerates have an oracle (`oracle(hlo, instr)`
returns None for the others):

- convolution (any dim_labels, window size, stride, padding, window dilation; input
  dilation 1): the tiling space is XLA's, the output dimensions then the window's spatial
  dimensions and the input features as steps. At tile ids and sizes, the input tile of a
  step must hold exactly the input elements some output of the output tile reads through
  some tap and input feature of the step: along an input spatial dimension the positions
  `o * stride + w * dilation - pad_lo` inside the input, over every output position `o` of
  the tile and tap `w` of the step; along the batch dimension the tile's batch positions,
  along the feature dimension the step's features. The kernel tile holds the step's taps
  that some output of the tile reads against a real input element, the step's features
  and the tile's output features. Every set is a product of per-dimension sets, listed per
  dimension as the compat tool lists a tile's positions.

Standard library only.
"""

import re


def _dims(text):
    return [int(x) for x in text.split(",") if x.strip()]


def _shapes(hlo):
    """name -> dimensions of every array instruction of the module text."""
    out = {}
    for m in re.finditer(r"(?:^|\n)\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*[a-z0-9]+\[([0-9,\s]*)\]",
                         hlo):
        out[m.group(1)] = _dims(m.group(2))
    return out


def _window(text):
    """XLA's window attribute: per spatial dimension size, stride, pad (lo, hi), lhs and
    rhs dilation."""
    fields = dict(re.findall(r"(\w+)=([0-9_x\-]+)", text))
    size = [int(x) for x in fields["size"].split("x")]
    n = len(size)

    def per_dim(name, default):
        return [int(x) for x in fields[name].split("x")] if name in fields else [default] * n

    pads = [tuple(int(y) for y in x.split("_")) for x in fields["pad"].split("x")] \
        if "pad" in fields else [(0, 0)] * n
    return {"size": size, "stride": per_dim("stride", 1), "pad": pads,
            "lhs_dilate": per_dim("lhs_dilate", 1), "rhs_dilate": per_dim("rhs_dilate", 1)}


def _labels(text):
    """dim_labels `in_kernel->out`: for each, label -> dimension position."""
    m = re.fullmatch(r"(\w+)_(\w+)->(\w+)", text)
    if not m:
        return None
    return [{c: i for i, c in enumerate(part)} for part in m.groups()]


def _tile_positions(env, i, extent):
    """The positions tile id `tid_i` of size `ts_i` covers inside `[0, extent)`."""
    ts, tid = env[f"ts_{i}"], env[f"tid_{i}"]
    return [p for p in range(tid * ts, tid * ts + ts) if 0 <= p < extent]


def conv_oracle(hlo, instr):
    """`f(k, env)`: the per-dimension positions operand `k` of convolution `instr` must read
    at tile ids and sizes `env`; None when `instr` is no convolution this module reads."""
    m = re.search(r"(?:^|\n)\s*(?:ROOT\s+)?%?" + re.escape(instr) +
                  r"\s*=\s*[a-z0-9]+\[([0-9,\s]*)\][^=\n]*?\bconvolution\(\s*%?([\w.\-]+)\s*,"
                  r"\s*%?([\w.\-]+)\s*\)(.*)", hlo)
    if not m:
        return None
    out_dims = _dims(m.group(1))
    shapes = _shapes(hlo)
    in_dims, k_dims = shapes.get(m.group(2)), shapes.get(m.group(3))
    attrs = m.group(4)
    w = re.search(r"window=\{([^}]*)\}", attrs)
    dl = re.search(r"dim_labels=([\w>\-]+)", attrs)
    labels = _labels(dl.group(1)) if dl else None
    if in_dims is None or k_dims is None or not w or labels is None:
        return None
    win = _window(w.group(1))
    lin, lk, lout = labels
    spatial = sorted(c for c in lin if c.isdigit())
    if any(d != 1 for d in win["lhs_dilate"]) or len(spatial) != len(win["size"]):
        return None
    rank, nsp = len(out_dims), len(spatial)
    features = k_dims[lk["i"]]

    def read(k, env):
        outs = {c: _tile_positions(env, lout[c], out_dims[lout[c]]) for c in lout}
        taps = [_tile_positions(env, rank + s, win["size"][s]) for s in range(nsp)]
        feats = _tile_positions(env, rank + nsp, features)
        dims = in_dims if k == 0 else k_dims
        per = [None] * len(dims)
        for s, c in enumerate(spatial):
            stride, dil, (lo, _) = win["stride"][s], win["rhs_dilate"][s], win["pad"][s]
            extent = in_dims[lin[c]]
            pairs = [(o, t, o * stride + t * dil - lo) for o in outs[c] for t in taps[s]]
            if k == 0:
                per[lin[c]] = sorted({x for _, _, x in pairs if 0 <= x < extent})
            else:
                per[lk[c]] = sorted({t for _, t, x in pairs if 0 <= x < extent})
        if k == 0:
            per[lin["b"]] = outs["b"]
            per[lin["f"]] = feats
        else:
            per[lk["i"]] = feats
            per[lk["o"]] = outs["f"]
        return per

    return read


def oracle(hlo, instr):
    """The read-set oracle of `instr` in module text `hlo`, or None (see the module doc)."""
    return conv_oracle(hlo, instr)

#!/usr/bin/env python3
"""Writes the .npy/.npz fixtures of the `hloc run` robustness cases in run.test.

Only the standard library (struct, zipfile, zlib) is used, so the script runs without
NumPy: the files are byte for byte what NumPy writes (`np.save` headers, `np.savez` and
`np.savez_compressed` archives are zipfile archives of such members), plus deliberately
broken variants. Run it from anywhere; it writes next to itself:

    python3 cli/tests/cli/run/make_fixtures.py
"""

import os
import struct
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
# The values of negate_in.npy (f32[2,3]), so the cases share one expected output.
VALUES = [1.0, -2.0, 0.5, 0.0, -0.0, 3.0]


def npy(descr, shape, data):
    """A version 1.0 .npy file: magic, header padded to 64 bytes, then `data`."""
    dims = "(%s)" % (", ".join(str(d) for d in shape) + ("," if len(shape) == 1 else ""))
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, dims)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data


def savez_compressed(members):
    """What np.savez_compressed writes: deflated zip members NAME.npy."""
    path = os.path.join(HERE, ".tmp.npz")
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            info = zipfile.ZipInfo(name + ".npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    with open(path, "rb") as f:
        out = f.read()
    os.remove(path)
    return out


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def main():
    little = npy("<f4", (2, 3), struct.pack("<6f", *VALUES))
    big = npy(">f4", (2, 3), struct.pack(">6f", *VALUES))
    # np.savez_compressed(path, x): the positional array is arr_0.
    compressed = savez_compressed([("arr_0", little)])
    write("negate_savez_compressed.npz", compressed)
    write("negate_big_endian.npy", big)
    # A big-endian member inside a compressed archive.
    write("negate_big_endian.npz", savez_compressed([("in0", big)]))

    # Corrupt: one byte of the deflated stream changed (the CRC-32 or the stream breaks).
    start = compressed.index(b"arr_0.npy") + len("arr_0.npy")
    corrupt = bytearray(compressed)
    corrupt[start + 20] ^= 0xFF
    write("corrupt.npz", bytes(corrupt))
    # Truncated: the first half of the archive (no central directory).
    write("truncated.npz", compressed[: len(compressed) // 2])

    # A header announcing 40 GB of data in a tiny file.
    huge = npy("<f4", (100000, 100000), b"")
    write("huge_shape.npy", huge)
    write("huge_shape.npz", savez_compressed([("in0", huge)]))

    # A zip directory declaring a 4 GiB member (a "zip bomb" claim): the uncompressed
    # size fields of the local header and the central directory entry are rewritten.
    bomb = bytearray(compressed)
    local = bomb.index(b"PK\x03\x04")
    central = bomb.index(b"PK\x01\x02")
    struct.pack_into("<I", bomb, local + 22, 0xFFFFFFF0)
    struct.pack_into("<I", bomb, central + 24, 0xFFFFFFF0)
    write("declared_huge.npz", bytes(bomb))

    # An array of Python objects (np.savez of dtype=object): a pickle, not numbers.
    pickled = npy("|O", (3,), b"\x80\x04\x95\x0b\x00\x00\x00\x00\x00\x00\x00]\x94(K\x01\x8c\x01a\x94N.")
    write("object_dtype.npz", savez_compressed([("in0", pickled)]))
    # two_params.hlo's inputs with the bf16 array as NumPy saves ml_dtypes.bfloat16: `<V2`
    # (1, 2, -3, 0.5 as bf16 bits).
    ints = npy("<i4", (4,), struct.pack("<4i", 0, 2, 5, 0))
    bf16 = npy("<V2", (4,), struct.pack("<4H", 0x3F80, 0x4000, 0xC040, 0x3F00))
    write("bf16_void.npz", savez_compressed([("in0", ints), ("in1", bf16)]))
    # One array too many for negate.hlo, and one too few for two_params.hlo.
    write("extra_array.npz", savez_compressed([("in0", little), ("in1", little)]))
    write("missing_array.npz", savez_compressed([("in0", ints)]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes seeds for tests/fuzz/fuzz_sql.c into tests/fuzz/corpus/sql: each seed is a u32 LE
length, an array file from tests/fuzz/corpus/frame (or none), and a program (see fuzz_sql.c):
CREATE of t0 over the file, then random bytes (fixed seeds), which every byte sequence is a valid
program of."""
import os
import random
import struct
import sys

corpus = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
src = os.path.join(corpus, "frame")
dst = os.path.join(corpus, "sql")
os.makedirs(dst, exist_ok=True)
rng = random.Random(13)
# hand-written programs: create t0 over a.b2nd, select all, slice, info, a write transaction
heads = [
    bytes([0, 0, 0, 0, 1, 0, 0, 0, 0, 0]),          # create t0; SELECT * FROM t0
    bytes([0, 0, 0, 0, 1, 0, 5, 0, 8, 0]),          # create t0; SELECT count(*), sum(..)
    bytes([0, 0, 0, 0, 2, 3, 2, 0, 0, 0, 0, 0, 0]),  # create t0; caterva_slice('a.b2nd', ..)
    bytes([0, 0, 1, 0, 2, 4, 2, 3]),                 # create t0 as a new file; caterva_info
    bytes([0, 0, 0, 0, 3, 0, 2, 1, 1, 0, 7, 1, 0]),  # create t0; BEGIN; UPDATE ...; COMMIT
]
files = sorted(os.listdir(src)) + [None]
for i, name in enumerate(files):
    data = b"" if name is None else open(os.path.join(src, name), "rb").read()
    for j, head in enumerate(heads):
        prog = head + bytes(rng.randrange(256) for _ in range(rng.randrange(20, 120)))
        out = struct.pack("<I", len(data)) + data + prog
        with open(os.path.join(dst, "seed_%02d_%d" % (i, j)), "wb") as f:
            f.write(out)
print("%d seeds in %s" % (len(files) * len(heads), dst), file=sys.stderr)

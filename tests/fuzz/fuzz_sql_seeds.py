#!/usr/bin/env python3
"""Writes seeds for tests/fuzz/fuzz_sql.c into tests/fuzz/corpus/sql: each seed is a u32 LE
length, an array file from tests/fuzz/corpus/frame (or none), and a program (see fuzz_sql.c).

Without arguments: the later seeds `seed2_*` (issue 39): programs that start with the steps added
after the first four (step bytes from 232: named reductions and the function with lists of
statistics and calendar groups, caterva_copy, tables over several arrays, savepoints, coordinates
with units and calendars, build_stats) and with the later options (max_dead=, range=,
block_checks=, the remote options, coords= with dates), followed by random bytes.
With `first`: the first seeds `seed_*`: CREATE of t0 over the file, then random bytes (fixed
seeds), for every file of corpus/frame (written when that folder held 23 files)."""
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

# ---- the later seeds ---------------------------------------------------------------------
CREATE_T0 = [0, 0, 0, 0]                       # t0 over a.b2nd
# t1 over a new n.b2nd: shape, coords='d0:2023-01-01:1 day' (key 239, value 21), dtype float64
CREATE_TIME = [0, 1, 1, 2, 7, 4, 239, 21, 2, 2]
LATER = [
    # the function: 'mean,min,max' over '0:month' of t1, a bound on d0
    CREATE_T0 + CREATE_TIME + [232, 0, 1, 2, 2, 4, 5, 1, 64, 2, 0, 0, 4, 3, 9],
    # a named reduction of t1 ('mean,std' by '0:season'), queried with a bound
    CREATE_TIME + [232, 0, 1, 1, 2, 6, 1, 64, 4, 1, 1, 0, 3, 0, 4, 7],
    # caterva_copy of t0 to a sparse cp0, opened as t2; a table over a.b2nd and cp0 (value='x,y')
    CREATE_T0 + [232, 1, 0, 4, 1, 2] + [232, 2, 1, 0, 1, 1] + [1, 1, 5, 0, 0],
    # savepoints: BEGIN, SAVEPOINT, UPDATE, SAVEPOINT, DELETE, ROLLBACK TO s0, RELEASE
    CREATE_T0 + [232, 3, 0, 5, 1, 0, 3, 8, 7, 3, 1, 0, 0, 4, 8, 0, 1, 0, 2, 0],
    # noleap dates on t0's d0, then a reduction grouped by '0:year'
    CREATE_T0 + [232, 4, 0, 1, 0, 1, 1, 7, 3] + [232, 0, 0, 0, 7, 1, 64, 3, 1, 0],
    # t0 with max_dead=50, range='d0:1:3', block_checks='on'; a SELECT; build_stats
    [0, 0, 0, 3, 224, 1, 225, 5, 226, 11, 1, 0, 0, 0, 0, 232, 5, 0],
    # t0 with endpoint=, region=, http_retries= on a local file
    [0, 0, 0, 3, 228, 15, 229, 16, 233, 17, 1, 0, 5, 0, 8, 0],
]
LATER_FILES = ["s01_i8_1d_ramp_blosclz.b2nd", "s14_f64_2d_zeros.b2nd", "s15_i32_2d_vlmeta.b2nd",
               "s21_f64_2d_nans.b2nd", "s22_f32_3d_full_repeatval.b2nd",
               "s31_u64_1d_zstd9_delta.b2nd", "seed_coords.b2nd",
               "c06_f64_2d_caterva_zeros.caterva", None]
if sys.argv[1:] != ["first"]:
    for i, name in enumerate(LATER_FILES):
        data = b"" if name is None else open(os.path.join(src, name), "rb").read()
        for j, head in enumerate(LATER):
            prog = bytes(head) + bytes(rng.randrange(256) for _ in range(rng.randrange(20, 120)))
            with open(os.path.join(dst, "seed2_%02d_%d" % (i, j)), "wb") as f:
                f.write(struct.pack("<I", len(data)) + data + prog)
    print("%d seeds in %s" % (len(LATER_FILES) * len(LATER), dst), file=sys.stderr)
    sys.exit(0)

# ---- the first seeds ---------------------------------------------------------------------
files = sorted(os.listdir(src)) + [None]
for i, name in enumerate(files):
    data = b"" if name is None else open(os.path.join(src, name), "rb").read()
    for j, head in enumerate(heads):
        prog = head + bytes(rng.randrange(256) for _ in range(rng.randrange(20, 120)))
        out = struct.pack("<I", len(data)) + data + prog
        with open(os.path.join(dst, "seed_%02d_%d" % (i, j)), "wb") as f:
            f.write(out)
print("%d seeds in %s" % (len(files) * len(heads), dst), file=sys.stderr)

#!/usr/bin/env python3
"""Write the files the SQL scripts in tests/sql/ open: fixtures.py DIR MKARRAY GOLDEN."""
import math
import os
import struct
import subprocess
import sys

out, mkarray, golden = sys.argv[1], sys.argv[2], sys.argv[3]


def mk(name, dtype, shape, chunks, blocks, raw, opts=()):
    rawpath = os.path.join(out, name + ".raw")
    with open(rawpath, "wb") as f:
        f.write(raw)
    subprocess.run([mkarray] + list(opts) + [os.path.join(out, name), rawpath, dtype,
                                             ",".join(map(str, shape)),
                                             ",".join(map(str, chunks)),
                                             ",".join(map(str, blocks))], check=True)
    os.unlink(rawpath)


# A 4x5 grid of int32 10*i + j with stored dimension names.
mk("grid.b2nd", "<i4", [4, 5], [2, 3], [1, 2],
   struct.pack("<20i", *[10 * i + j for i in range(4) for j in range(5)]), ["-n", "lat,lon"])
# A 1-d float64 ramp 0.0, 0.5, ..., 499.5 (chunks of 160, blocks of 40; compressible, so
# no chunk is stored raw and caterva_blocks_read() sees every block).
mk("ramp.b2nd", "<f8", [1000], [160], [40], struct.pack("<1000d", *[i / 2 for i in range(1000)]))
# Item types.
mk("bool.b2nd", "|b1", [4], [4], [2], bytes([0, 1, 1, 0]))
mk("u64.b2nd", "<u8", [4], [4], [2], struct.pack("<4Q", 0, 1, 2**63, 2**64 - 1))
mk("f16.b2nd", "<f2", [5], [5], [5], struct.pack("<5e", 1.5, -2.0, math.nan, math.inf, 65504))
mk("f32nan.b2nd", "<f4", [3], [3], [3], struct.pack("<3f", 0.25, math.nan, -1e30))
mk("be.b2nd", ">i4", [4], [2], [2], struct.pack(">4i", 1, -2, 3, -2**31))
mk("ucs4.b2nd", "<U3", [3], [3], [3],
   b"".join(s.encode("utf-32-le").ljust(12, b"\0") for s in ["ab", "xyz", "\u00e9"]))
mk("bytes.b2nd", "|S2", [3], [3], [3], b"ab\x00\x01zz")
mk("time.b2nd", "<M8[s]", [3], [3], [3], struct.pack("<3q", 0, 86400, -2**63))
# Degenerate shapes.
mk("scalar.b2nd", "<f8", [], [], [], struct.pack("<d", 3.5))
mk("empty.b2nd", "<i2", [0, 3], [2, 2], [1, 1], b"")
mk("one.b2frame", "<i8", [1, 1, 1], [1, 1, 1], [1, 1, 1], struct.pack("<q", -7), ["-s"])
# Files that are not arrays.
# A 57x61 int32 smooth field in 9 lz4hc chunks, the source of the damaged copies below
# (written here, so the test does not need the golden files).
mk("smooth.b2nd", "<i4", [57, 61], [20, 25], [7, 6],
   struct.pack("<3477i", *[int(1000 * math.sin(i / 7.0) + 500 * math.cos(j / 5.0))
                           for i in range(57) for j in range(61)]), ["-c", "lz4hc", "-l", "9"])
with open(os.path.join(out, "smooth.b2nd"), "rb") as f:
    frame = f.read()
with open(os.path.join(out, "truncated.b2nd"), "wb") as f:
    f.write(frame[:len(frame) // 2])
with open(os.path.join(out, "garbage.b2nd"), "wb") as f:
    f.write(b"this is not a Blosc2 frame\n" * 20)
open(os.path.join(out, "zero.b2nd"), "wb").close()
os.mkdir(os.path.join(out, "emptydir.b2frame"))
# A frame whose chunk data is damaged (header and index intact): queries fail or succeed,
# never crash (checked by test_sql.sh outside the expected output).
damaged = bytearray(frame)
for i in range(len(frame) // 3, len(frame) // 3 + 64):
    damaged[i] ^= 0x5A
with open(os.path.join(out, "damaged.b2nd"), "wb") as f:
    f.write(bytes(damaged))

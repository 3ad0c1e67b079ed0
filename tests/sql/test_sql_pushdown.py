#!/usr/bin/env python3
"""Pushdown proofs through the sqlite3 shell (TAP output).

Arrays written with tests/tools/mkarray (compressible data, so that no chunk is stored raw or as
a special chunk) are queried with slices along each axis, a box and an IN list. The number
of blocks the connection decompressed (caterva_blocks_read() before and after) must equal
the number of blocks that intersect the selection, computed here from the geometry:
  - straight through the block iterator (cache_mb=0),
  - through the block cache: the same count the first time, none when repeated;
and a query that reads no value column decompresses nothing.

Environment: top_builddir, SQLITE3_SHELL, CATERVA_PRELOAD.
"""
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import sqltap
from sqltap import plan, report

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")
MKARRAY = os.path.join(BUILD, "tests", "tools", "mkarray")
SHELL = os.environ.get("SQLITE3_SHELL", "sqlite3")

# name, shape, chunks, blocks, mkarray options
ARRAYS = [
    ("p1", [1000], [300], [64], []),
    ("p2", [100, 70], [32, 32], [8, 8], ["-s"]),
    ("p3", [50, 40, 30], [20, 16, 12], [5, 4, 6], ["-c", "lz4"]),
    ("p4", [9, 10, 11, 12], [4, 5, 6, 7], [2, 3, 3, 4], ["-c", "blosclz"]),
]

def shell(sql, cwd):
    return sqltap.shell(SHELL, EXT, sql, cwd)


def blocks_along(lo, hi, c, b):
    """Blocks of one dimension that the inclusive range [lo, hi] touches."""
    n = 0
    for ch in range(lo // c, hi // c + 1):
        base = ch * c
        a, z = max(lo, base) - base, min(hi, base + c - 1) - base
        n += z // b - a // b + 1
    return n


def expected_blocks(chunks, blocks, box):
    n = 1
    for k, (lo, hi) in enumerate(box):
        n *= blocks_along(lo, hi, chunks[k], blocks[k])
    return n


def selections(shape, chunks, blocks):
    """(description, WHERE clause, blocks expected)."""
    nd = len(shape)
    cols = ["d%d" % k for k in range(nd)]
    full = [(0, s - 1) for s in shape]
    out = []
    for k in range(nd):
        for c in (0, min(shape[k] - 1, chunks[k] + 1)):
            box = list(full)
            box[k] = (c, c)
            out.append(("slice %s = %d" % (cols[k], c), "%s = %d" % (cols[k], c),
                        expected_blocks(chunks, blocks, box)))
    box = [(s // 4, min(s - 1, s // 4 + max(1, s // 3))) for s in shape]
    where = " AND ".join("%s BETWEEN %d AND %d" % (cols[k], lo, hi)
                         for k, (lo, hi) in enumerate(box))
    out.append(("box", where, expected_blocks(chunks, blocks, box)))
    # d0 IN (last, 2, 0, 2): 0 and 2 share blocks (when a block spans 3 values), which the
    # cache serves the second time. (Without a cache, a cursor keeps only its last block.)
    last = shape[0] - 1
    ids = set((v // chunks[0], (v % chunks[0]) // blocks[0]) for v in (0, 2, last))
    n = len(ids) * expected_blocks(chunks[1:], blocks[1:], full[1:])
    out.append(("IN list sharing blocks", "d0 IN (%d, 2, 0, 2)" % last, n))
    return out


def make(tmp, spec):
    name, shape, chunks, blocks, opts = spec
    n = 1
    for s in shape:
        n *= s
    raw = os.path.join(tmp, name + ".raw")
    with open(raw, "wb") as f:
        f.write(struct.pack("<%dd" % n, *[1.0 + (i % 17) for i in range(n)]))
    path = os.path.join(tmp, name + ".b2nd")
    subprocess.run([MKARRAY] + opts + [path, raw, "<f8", ",".join(map(str, shape)),
                                       ",".join(map(str, chunks)), ",".join(map(str, blocks))],
                   check=True)
    return path


def check(tmp, spec):
    name, shape, chunks, blocks, _ = spec
    path = make(tmp, spec)
    sels = selections(shape, chunks, blocks)
    stmts = [".mode list",
             "CREATE VIRTUAL TABLE t USING caterva('%s', cache_mb=0);" % path,
             "CREATE VIRTUAL TABLE c USING caterva('%s', cache_mb=256);" % path]
    for i, (_, where, _) in enumerate(sels):
        # a fresh table each time: the cache of c still holds the blocks of earlier queries
        stmts.append("CREATE VIRTUAL TABLE c%d USING caterva('%s', cache_mb=256);" % (i, path))
        for tab in ("t", "c%d" % i, "c%d" % i):
            stmts += ["SELECT caterva_blocks_read();",
                      "SELECT count(value) FROM %s WHERE %s;" % (tab, where),
                      "SELECT caterva_blocks_read();"]
    stmts += ["SELECT caterva_blocks_read();", "SELECT count(*), sum(d0) FROM t;",
              "SELECT count(*) FROM c WHERE d0 < 3;", "SELECT caterva_blocks_read();"]
    # ORDER BY in C order: cells walked in C order, each block decompressed once.
    order = ", ".join("d%d" % k for k in range(len(shape)))
    stmts += ["CREATE VIRTUAL TABLE o USING caterva('%s', cache_mb=256);" % path,
              "SELECT caterva_blocks_read();",
              "SELECT count(value) FROM (SELECT value FROM o ORDER BY %s);" % order,
              "SELECT caterva_blocks_read();"]
    out, err = shell("\n".join(stmts), tmp)
    lines = out.split()
    if err.strip() or len(lines) != 9 * len(sels) + 7:
        report(False, "%s: the pushdown queries run" % name, out + err)
        return
    for i, (desc, where, want) in enumerate(sels):
        got = [int(lines[9 * i + 3 * j + 2]) - int(lines[9 * i + 3 * j]) for j in range(3)]
        if desc.startswith("IN list"):
            report(got[0] >= want, "%s %r: %s, cache_mb=0: at least the %d blocks" %
                   (name, shape, desc, want), "got %d (%s)" % (got[0], where))
        else:
            report(got[0] == want, "%s %r: %s decompresses exactly the %d intersecting blocks"
                   % (name, shape, desc, want), "got %d (%s)" % (got[0], where))
        report(got[1] == want and got[2] == 0,
               "%s: %s through the block cache: %d blocks, none when repeated" %
               (name, desc, want), "got %r" % got[1:])
    b = 9 * len(sels)
    report(int(lines[b + 3]) == int(lines[b]),
           "%s: count(*) and coordinates only: no block decompressed" % name,
           "got %d" % (int(lines[b + 3]) - int(lines[b])))
    want = expected_blocks(chunks, blocks, [(0, s - 1) for s in shape])
    got = int(lines[b + 6]) - int(lines[b + 4])
    report(got == want, "%s: ORDER BY %s decompresses each of the %d blocks once" %
           (name, order, want), "got %d" % got)


def main():
    if not os.path.exists(MKARRAY) or not os.path.exists(EXT + ".so"):
        print("1..0 # SKIP mkarray or the extension is not built")
        return 0
    if not os.path.exists(SHELL) and SHELL != "sqlite3":
        print("1..0 # SKIP sqlite3 shell not found")
        return 0
    tmp = tempfile.mkdtemp(prefix="caterva-push-")
    try:
        for spec in ARRAYS:
            check(tmp, spec)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    plan()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Row iteration of the caterva table against a plain SQLite table holding the same cells.

xNext steps through a run of cells along the last dimension without leaving the current
block by incrementing one coordinate (vtab_cursor.c, nFast), and xColumn reads float64 and float32
values of the block at hand inline; everything else takes the general path. These checks
cross every kind of boundary of that fast path: runs ending with the block, with the chunk,
with the box (bounds and IN lists on the last dimension), with the row budget (LIMIT and
OFFSET of every length around the run lengths), ordered scans (ORDER BY the dimensions),
NaN cells (NULL) inside runs, cells never written (the fill value), and dtypes read only by
the general path (int32, bool). Arrays are written through SQL with ragged edges (extents
not multiples of the chunk or block shape); the values are multiples of 1/4 below 2^20, so
sums are exact whatever the order of addition.

Environment: top_builddir (the build directory).
"""
import os
import random
import shutil
import sqlite3
import sys
import tempfile

import sqltap
from sqltap import cells, connect_ext, plan, report, reexec_with_preload

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")
SEED = 20261123

# name, dtype, shape, chunks, blocks
ARRAYS = [
    ("r1", "float64", [203], [64], [10]),
    ("r2", "float32", [23, 37], [10, 16], [4, 7]),
    ("r3", "float64", [9, 11, 29], [5, 6, 12], [2, 3, 5]),
    ("r4", "float32", [4, 5, 6, 13], [3, 3, 4, 8], [2, 2, 3, 3]),
    ("r5", "int32", [17, 19], [8, 8], [3, 4]),
    ("r6", "float64", [6, 40], [6, 40], [6, 40]),  # one block: runs of the whole row
]


def make(db, tmp, rng, spec):
    """Write the array through SQL and a plain table `p` with the same cells."""
    name, dtype, shape, chunks, blocks = spec
    nd = len(shape)
    cols = ["d%d" % k for k in range(nd)]
    path = os.path.join(tmp, name + ".b2nd")
    db.execute("DROP TABLE IF EXISTS t")
    db.execute("DROP TABLE IF EXISTS p")
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='%s', chunks='%s', "
               "blocks='%s', dtype='%s')" % (path, ",".join(map(str, shape)),
                                           ",".join(map(str, chunks)),
                                           ",".join(map(str, blocks)), dtype))
    db.execute("CREATE TABLE p(%s, value, PRIMARY KEY(%s)) WITHOUT ROWID" %
               (", ".join(c + " INTEGER" for c in cols), ", ".join(cols)))
    is_float = dtype.startswith("float")
    rows = []
    for c in cells(shape):
        r = rng.random()
        if is_float and r < 0.08:
            continue                          # never written: the fill value (NaN, NULL)
        if is_float and r < 0.16:
            v = None                          # written as NULL: NaN
        elif is_float:
            v = rng.randint(-4 * 2 ** 19, 4 * 2 ** 19) / 4.0
        else:
            v = rng.randint(-2 ** 20, 2 ** 20)
        rows.append(c + (v,))
    # A run of NULLs across a whole block row, and the last cell of each run set.
    marks = "?, " * nd + "?"
    db.execute("BEGIN")
    db.executemany("INSERT INTO t(%s, value) VALUES (%s)" % (", ".join(cols), marks), rows)
    db.execute("COMMIT")
    if is_float:
        full = {c: None for c in cells(shape)}
    else:
        full = {c: 0 for c in cells(shape)}   # integer fill: 0
    for r in rows:
        full[r[:-1]] = r[-1]
    db.executemany("INSERT INTO p VALUES (%s)" % marks,
                   [c + (v,) for c, v in full.items()])
    db.commit()
    return cols


def q(db, sql):
    return db.execute(sql).fetchall()


def check(db, rng, spec, cols):
    name, dtype, shape, chunks, blocks = spec
    nd = len(shape)
    sel = ", ".join(cols) + ", value"
    n = 1
    for s in shape:
        n *= s
    label = "%s %s %s" % (name, dtype, "x".join(map(str, shape)))

    # Whole table, aggregates.
    scan = q(db, "SELECT %s FROM t" % sel)
    report(sorted(scan, key=lambda r: r[:nd]) == q(db, "SELECT %s FROM p ORDER BY %s" %
                                                   (sel, ", ".join(cols))),
           "%s: a full scan gives every cell with its value" % label)
    agg = "SELECT sum(value), count(value), count(*), min(value), max(value) FROM %s"
    report(q(db, agg % "t") == q(db, agg % "p"), "%s: sum, counts, min, max" % label,
           "%r\n%r" % (q(db, agg % "t"), q(db, agg % "p")))
    idx = ", ".join("%s_index" % c for c in cols)
    report(q(db, "SELECT %s, value FROM t" % idx) == scan,
           "%s: hidden index columns equal the dimension columns, row by row" % label)

    # LIMIT / OFFSET: prefixes of the scan order, around every run length.
    order = q(db, "SELECT rowid, value FROM t")
    lens = set(range(0, 2 * blocks[-1] + 3)) | set(range(shape[-1] - 2, shape[-1] + 3))
    lens |= {rng.randint(0, n + 2) for _ in range(12)} | {n - 1, n, n + 1}
    bad = []
    for lim in sorted(x for x in lens if x >= 0):
        for off in (0, 1, blocks[-1] - 1, blocks[-1], rng.randint(0, n)):
            got = q(db, "SELECT rowid, value FROM t LIMIT %d OFFSET %d" % (lim, off))
            if got != order[off:off + lim]:
                bad.append((lim, off, len(got)))
    report(not bad, "%s: LIMIT n OFFSET m is the scan's rows m..m+n-1 (%d lengths)" %
           (label, len(lens)), repr(bad[:10]))

    # Ordered scans with LIMIT and OFFSET.
    ob = ", ".join(cols)
    bad = []
    for lim in sorted(lens)[:40:3] + [n]:
        off = rng.randint(0, max(0, n - 1))
        a = q(db, "SELECT %s FROM t ORDER BY %s LIMIT %d OFFSET %d" % (sel, ob, lim, off))
        b = q(db, "SELECT %s FROM p ORDER BY %s LIMIT %d OFFSET %d" % (sel, ob, lim, off))
        if a != b:
            bad.append((lim, off))
    report(not bad, "%s: ORDER BY the dimensions with LIMIT/OFFSET" % label, repr(bad[:10]))

    # Boxes and IN lists cutting the runs of the last dimension.
    last = cols[-1]
    bad = []
    for _ in range(25):
        lo = rng.randint(0, shape[-1] - 1)
        hi = rng.randint(lo, shape[-1] - 1)
        ins = sorted(rng.sample(range(shape[-1]), min(shape[-1], rng.randint(1, 6))))
        first = rng.randint(0, shape[0] - 1)
        for w in ("%s BETWEEN %d AND %d" % (last, lo, hi),
                  "%s IN (%s)" % (last, ", ".join(map(str, ins))),
                  "%s > %d AND d0 <= %d" % (last, lo, first),
                  "%s IN (%s) AND d0 IN (%d, %d)" % (last, ", ".join(map(str, ins)), first,
                                                    shape[0] - 1),
                  "value > %f" % (rng.randint(-2 ** 19, 2 ** 19) / 4.0),
                  "value IS NULL AND %s >= %d" % (last, lo)):
            lim = rng.choice(["", " LIMIT %d" % rng.randint(0, 3 * blocks[-1])])
            a = q(db, "SELECT %s FROM t WHERE %s ORDER BY %s%s" % (sel, w, ob, lim))
            b = q(db, "SELECT %s FROM p WHERE %s ORDER BY %s%s" % (sel, w, ob, lim))
            c = sorted(q(db, "SELECT %s FROM t WHERE %s" % (sel, w)), key=lambda r: r[:nd])
            d = q(db, "SELECT %s FROM p WHERE %s ORDER BY %s" % (sel, w, ob))
            if a != b or c != d:
                bad.append(w + lim)
    report(not bad, "%s: 150 boxes, IN lists and value predicates equal the plain table's" %
           label, "\n".join(bad[:10]))

    # Two cursors on the same table at once, one of them stopping early.
    a = q(db, "SELECT x.rowid, y.rowid FROM (SELECT rowid FROM t LIMIT 7) x, "
              "(SELECT rowid FROM t LIMIT 5 OFFSET %d) y" % blocks[-1])
    b = [(i, j) for i, _ in order[:7] for j, _ in order[blocks[-1]:blocks[-1] + 5]]
    report(sorted(a) == sorted(b), "%s: two cursors, each with its own budget" % label)


def main():
    reexec_with_preload()
    db = connect_ext(EXT)
    if db is None:
        return 0
    rng = random.Random(SEED)
    tmp = tempfile.mkdtemp(prefix="caterva-rows-")
    try:
        for spec in ARRAYS:
            cols = make(db, tmp, rng, spec)
            check(db, rng, spec, cols)
        # A bool array: read by the general path only.
        db.execute("DROP TABLE IF EXISTS t")
        db.execute("CREATE VIRTUAL TABLE t USING caterva('%s/b.b2nd', shape='7,9', "
                   "chunks='4,4', blocks='2,3', dtype='bool')" % tmp)
        trues = [(i, j) for i in range(7) for j in range(9) if (i * 9 + j) % 5 == 0]
        db.executemany("INSERT INTO t(d0, d1, value) VALUES (?, ?, 1)", trues)
        db.commit()
        r = q(db, "SELECT count(*), sum(value) FROM t")
        got = q(db, "SELECT d0, d1 FROM t WHERE value = 1 ORDER BY d0, d1")
        report(r == [(63, len(trues))] and got == trues,
               "bool 7x9: 63 rows, the true cells where they were written", repr(r))
    finally:
        db.close()
        shutil.rmtree(tmp)
    plan()
    return 0 if all(sqltap._results) else 1


if __name__ == "__main__":
    sys.exit(main())

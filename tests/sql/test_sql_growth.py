#!/usr/bin/env python3
"""Growth far past the end (TAP): an INSERT of one cell up to a million chunks past an
array's end grows the array in one edit of its super-chunk (cat_sc_remap), in time linear in
the number of chunks. It used to insert the new chunks one by one, each edit copying the
whole chunk index: quadratic, hours for a million chunks (found by fuzz_sql as timeouts).

For a contiguous and a sparse array, with a NaN fill (new chunks are special index entries)
and a value fill (each new chunk is a stored chunk): the growing INSERT finishes inside a
bound that the quadratic path misses by orders of magnitude (checked for the million-chunk
growths, where it would copy terabytes), the content reads back (rows, values, the new
cell, a fill cell), a fresh connection sees the new shape, the block statistics agree with
the data, and the same growth rolled back, or failing in the same statement, leaves the
array byte-identical.

Environment: top_builddir (the build directory).
"""
import json
import math
import os
import sqlite3
import sys
import time

from sqltap import array_bytes, connect_ext, report, run_in_tmp

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
BOUND_S = 60.0  # a million chunks: about 1 s here; the quadratic path copies ~4 TB


def connect():
    return connect_ext(EXT, isolation_level=None)


def make(path, sparse, fill):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='3', dtype='float64', "
               "chunks='1', blocks='1', fill=%s, sparse=%d)" % (path, fill, sparse))
    db.execute("INSERT INTO t VALUES(0, 1.5), (2, -4)")
    return db


def undo_leaves_bytes(db, path, far, label):
    """The growth rolled back, and failing later in its statement, changes no byte."""
    before = array_bytes(path)
    db.execute("BEGIN")
    db.execute("INSERT INTO t VALUES(?, 7)", (far,))
    n = db.execute("SELECT count(*) FROM t").fetchone()[0]
    db.execute("ROLLBACK")
    same = array_bytes(path) == before
    report(n == far + 1 and same, "%s: a growth to %d rows rolled back leaves the array "
           "byte-identical" % (label, far + 1), "rows inside the transaction %d, same %s"
           % (n, same))
    err = None
    try:
        db.execute("INSERT INTO t VALUES(?, 7), (1, 'not a number')", (far,))
    except sqlite3.Error as e:
        err = str(e)
    same = array_bytes(path) == before
    report(err is not None and "float64" in err and same,
           "%s: a statement that grows to %d rows and then fails leaves the array "
           "byte-identical" % (label, far + 1), "error %r, same %s" % (err, same))


def grow(tmp, sparse, fill, far, timed):
    label = "%s, fill %s, %d chunks" % ("sparse" if sparse else "contiguous", fill, far + 1)
    path = os.path.join(tmp, "g%d_%s_%d.b2nd" % (sparse, fill, far))
    db = make(path, sparse, fill)
    undo_leaves_bytes(db, path, far, label)
    t0 = time.time()
    db.execute("INSERT INTO t VALUES(?, 7)", (far,))
    dt = time.time() - t0
    if timed:
        report(dt < BOUND_S, "%s: the growing INSERT takes %.2f s (bound %.0f s: linear)"
               % (label, dt, BOUND_S))
    fv = None if fill == "nan" else float(fill)
    rows, nval, total = db.execute("SELECT count(*), count(value), sum(value) FROM t").fetchone()
    cells = db.execute("SELECT d0, value FROM t WHERE d0 IN (0, 1, 2, 3, ?, ?) ORDER BY d0",
                       (far // 2, far)).fetchall()
    want_cells = [(0, 1.5), (1, fv), (2, -4.0), (3, fv), (far // 2, fv), (far, 7.0)]
    nfill = far + 1 - 3
    want_nval = 3 + (0 if fv is None else nfill)
    want_total = 1.5 - 4 + 7 + (0 if fv is None else fv * nfill)
    ok = rows == far + 1 and nval == want_nval and math.isclose(total, want_total) \
        and cells == want_cells
    report(ok, "%s: rows, values, the new cell and fill cells read back" % label,
           "rows %d nval %d sum %r cells %r" % (rows, nval, total, cells))
    chk = json.loads(db.execute("SELECT caterva_stats_check('t')").fetchone()[0])
    report(chk.get("wrong") == 0 and chk.get("with_stats") == chk.get("blocks") == far + 1,
           "%s: block statistics kept for every new chunk and right" % label, repr(chk))
    db.close()
    other = connect()
    shape = json.loads(other.execute("SELECT caterva_info(?)", (path,)).fetchone()[0])["shape"]
    other.execute("CREATE VIRTUAL TABLE u USING caterva('%s')" % path)
    last = other.execute("SELECT value FROM u WHERE d0 = ?", (far,)).fetchall()
    other.close()
    report(shape == [far + 1] and last == [(7.0,)],
           "%s: a fresh connection reads the grown array" % label,
           "shape %r, last cell %r" % (shape, last))


def edge_rewrite(tmp, n):
    """Creating a filled grid of n chunks along its second axis appends n chunks, and growing
    its first axis inside the existing chunk row rewrites every one of them: one edit each.
    Both copied the whole chunk index per edit (quadratic: a fuzz_sql timeout, 50 s for
    200,000 chunks); now they write one slot in place, inside the transaction."""
    path = os.path.join(tmp, "edge_%d.b2nd" % n)
    db = connect()
    t0 = time.time()
    db.execute("CREATE VIRTUAL TABLE e USING caterva('%s', shape='1,%d', dtype='int8', "
               "chunks='10,1', blocks='10,1', fill=7)" % (path, n))
    db.execute("INSERT INTO e VALUES (1, 5, 3)")
    dt = time.time() - t0
    got = db.execute("SELECT count(*), sum(value) FROM e").fetchone()
    report(dt < BOUND_S and got == (2 * n, 7 * (2 * n - 1) + 3),
           "a filled grid of %d chunks created and grown inside its chunk row in %.2f s "
           "(bound %.0f s: linear), every cell right" % (n, dt, BOUND_S), repr(got))
    db.close()


def main():
    def body(tmp):
        edge_rewrite(tmp, 400000)
        grow(tmp, 0, "nan", 1000000, True)
        grow(tmp, 1, "nan", 1000000, True)
        grow(tmp, 0, "2.5", 100000, False)
        grow(tmp, 1, "2.5", 3000, False)
    return run_in_tmp(EXT, "caterva-growth-", body, ram=True)


if __name__ == "__main__":
    sys.exit(main())

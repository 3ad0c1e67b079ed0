#!/usr/bin/env python3
"""Writes through the caterva virtual table: what a commit leaves (TAP output).

The writing connection reads what it committed: after an autocommit UPDATE, a read of a cell
whose block it read before, and an UPDATE computed from that cell; another connection reads
the file's value. After a commit and a reopen: the columns named by the file (dims=), the
extent grown by the commit, `_FillValue` (given, NaN, or the dtype's default) and
`_ARRAY_DIMENSIONS` in caterva_info, and the content, contiguous and sparse.

Environment: top_builddir (the build tree), CATERVA_PRELOAD (ASan runtime to preload when the
extension is built with ASan).
"""
import json
import os
import sys
import tempfile

from sqltap import report
from writetap import connect, content, create, main


def own_writes(tmp):
    """The writing connection reads what it committed: after an autocommit write, a read of
    cells whose blocks it read before, and an UPDATE computed from them."""
    sub = tempfile.mkdtemp(dir=tmp)
    for sparse in (0, 1):
        label = "sparse" if sparse else "contiguous"
        path = os.path.join(sub, "o%d.b2nd" % sparse)
        db = connect()
        create(db, "t", path, "shape='100,100', dtype='float64', chunks='10,10', blocks='5,5', "
               "sparse=%d" % sparse)
        db.execute("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c "
                   "WHERE i < 9999) INSERT INTO t SELECT i / 100, i % 100, i FROM c")
        q = "SELECT value FROM t WHERE d0 = 5 AND d1 = 5"
        first = db.execute(q).fetchall()
        db.execute("UPDATE t SET value = -1 WHERE d0 = 5 AND d1 = 5")
        got = db.execute(q).fetchall()
        n = db.execute("SELECT count(*) FROM t WHERE value = -1").fetchone()[0]
        report(first == [(505.0,)] and got == [(-1.0,)] and n == 1,
               "%s: the writer reads its own committed UPDATE of a cell it read before" % label,
               "before %r, after %r, count of -1: %d" % (first, got, n))
        db.execute("UPDATE t SET value = value + 1 WHERE d0 = 5 AND d1 = 5")
        o = connect()
        create(o, "u", path)
        got = o.execute("SELECT value FROM u WHERE d0 = 5 AND d1 = 5").fetchall()
        o.close()
        report(got == [(0.0,)], "%s: UPDATE value = value + 1 after it computes from the new "
               "value (the file holds 0)" % label, "another connection reads %r" % got)
        db.close()


def persistence(tmp):
    sub = tempfile.mkdtemp(dir=tmp)
    for dtype, fill, jfill, sparse in (("int32", "-1", -1, 0), ("float32", "nan", None, 1),
                                       ("float64", "2.5", 2.5, 0), ("uint8", None, 0, 1)):
        path = os.path.join(sub, "p_%s.b2nd" % dtype)
        db = connect()
        create(db, "t", path, "shape='2,3', dtype='%s', chunks='2,2', blocks='1,1', "
               "dims='time,station'%s, sparse=%d" % (dtype, ", fill=%s" % fill if fill else "",
                                                     sparse))
        db.execute("BEGIN")
        db.execute("INSERT INTO t VALUES(0, 0, 1), (4, 2, 7)")
        db.execute("COMMIT")
        committed = content(db, "t", 2)
        db.close()
        db = connect()
        create(db, "q", path)
        cols = [r[1] for r in db.execute("PRAGMA table_info(q)").fetchall()]
        got = content(db, "q", 2)
        info = json.loads(db.execute("SELECT caterva_info(?)", (path,)).fetchone()[0])
        db.close()
        want = [(r, c, 1 if (r, c) == (0, 0) else 7 if (r, c) == (4, 2) else jfill)
                for r in range(5) for c in range(3)]
        attrs = info.get("attributes", {})
        ok = cols == ["time", "station", "value"] and got == committed == want
        ok = ok and info["shape"] == [5, 3] and "_FillValue" in attrs
        ok = ok and attrs["_FillValue"] == jfill
        ok = ok and attrs.get("_ARRAY_DIMENSIONS") == ["time", "station"]
        report(ok, "%s%s: after commit and reopen: columns from the file, extent 5 after growth, "
               "_FillValue %r, content" % (dtype, " sparse" if sparse else "", jfill),
               "cols %r\ngot %r\nwant %r\ninfo %r" % (cols, got, want, info))


def maps_of(path):
    """How many mappings of path this process holds (/proc/self/maps)."""
    real = os.path.realpath(path)
    with open("/proc/self/maps") as f:
        return sum(1 for line in f if line.rstrip("\n").endswith(" " + real))


def map_count(tmp):
    """A connection that commits many times keeps one map of the file, not one per commit;
    while one of its own scans is open across commits, the maps that scan may read stay (its
    rows are right), and they go once it ends."""
    path = os.path.join(tmp, "maps.b2nd")
    db = connect()
    create(db, "t", path, "shape='40,40', dtype='float64', chunks='10,10', blocks='5,5'")
    db.execute("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c "
               "WHERE i < 1599) INSERT INTO t SELECT i / 40, i % 40, i FROM c")
    most = 0
    for k in range(300):
        db.execute("UPDATE t SET value = value + 1 WHERE d0 = %d AND d1 = %d" % (k % 40, k * 7 % 40))
        if k % 2:
            db.execute("INSERT INTO t VALUES (%d, %d, -2)" % (k * 3 % 40, k % 40))
        most = max(most, maps_of(path))
    report(0 < most <= 2, "300 one-cell commits through one connection hold at most 2 maps "
           "of the file (one per commit kept until the table closes before)", "most: %d" % most)
    # A scan open while commits grow the file past its map's reservation (half the file, at
    # least 4 MiB): the file is mapped anew, the scan's map is kept until the scan ends.
    gpath = os.path.join(tmp, "maps_big.b2nd")
    create(db, "g", gpath, "shape='300,300', dtype='float64', chunks='100,100', blocks='50,50'")
    db.execute("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c "
               "WHERE i < 89999) INSERT INTO g SELECT i / 300, i % 300, random() / 1e3 FROM c")
    cur = db.execute("SELECT d0, d1, value FROM g ORDER BY d0, d1")
    first = cur.fetchmany(10)
    held = 0
    for k in range(10):  # each rewrites every chunk: about 720 KB of noise
        db.execute("UPDATE g SET value = value / 2 + %d" % k)
        held = max(held, maps_of(gpath))
    want = db.execute("SELECT count(*) FROM g").fetchone()[0]
    rest = cur.fetchall()
    rows = first + rest
    report(len(rows) == want == 90000 and held >= 2,
           "a scan open across commits that outgrow the file's map keeps the maps it may read "
           "and returns every row", "rows %d, maps while open %d" % (len(rows), held))
    after = maps_of(gpath)
    db.execute("UPDATE g SET value = 1 WHERE d0 = 0 AND d1 = 0")
    now = maps_of(gpath)
    total = db.execute("SELECT count(*) FROM g WHERE value = 1").fetchone()[0]
    report(now <= 2 and total >= 1,
           "after the scan ends, the next commit gives the kept maps back",
           "maps after the scan %d, after a commit %d" % (after, now))
    db.close()


def after_commit(tmp):
    own_writes(tmp)
    persistence(tmp)
    map_count(tmp)


if __name__ == "__main__":
    sys.exit(main("caterva-write-", after_commit))

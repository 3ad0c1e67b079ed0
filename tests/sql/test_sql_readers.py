#!/usr/bin/env python3
"""Readers create nothing (TAP): no read changes the directory of the arrays it reads.

Arrays written here (contiguous and sparse, with labels and block statistics) have their
.b2lock sidecars removed; then every read path runs -- opening tables (one array, several
variables, lock_reads=0), SELECTs with each kind of constraint, joins, value predicates,
caterva_info, caterva_slice, caterva_reduce, caterva_nearest, caterva_stats_check,
caterva_png, caterva_export (to another folder) -- and the folder is listed before and after
each: names, sizes and modification times of every file and folder, the folder's own
included. It used to gain a .b2lock per array read (35 new files in the golden folder).

Readers still use a sidecar that exists (its generation counter), and one that appears after
they opened the table: a writer in another connection creates it with its first write, and
the reader's next statement sees the commit.

Environment: top_builddir.
"""
import os
import sqlite3

from sqltap import connect_ext, report, run_in_tmp

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
SERIES = "WITH RECURSIVE n(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM n WHERE v < 39) "


def connect():
    return connect_ext(EXT, isolation_level=None)


def listing(folder):
    """Every entry under folder (the folder included): (size, mtime_ns) by relative path."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in [""] + dirs + files:
            p = os.path.join(root, name) if name else root
            st = os.lstat(p)
            out[os.path.relpath(p, folder)] = (st.st_size if name in files else 0,
                                               st.st_mtime_ns)
    return out


def make(data):
    db = connect()
    for name, extra in (("grid.b2nd", ""), ("grid2.b2frame", ", sparse=1")):
        db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='20,30,40', "
                   "dtype='float32', chunks='10,15,20', blocks='5,5,10', dims='time,lat,lon', "
                   "coords='time:2024-01-01:1 day,lat:-29.5:2.0,lon:0.5:1.0'%s)"
                   % (os.path.join(data, name), extra))
        db.execute(SERIES + "INSERT INTO g(time_index, lat_index, lon_index, value) "
                   "SELECT a.v, b.v, c.v, a.v + b.v * 0.5 - c.v FROM n a, n b, n c "
                   "WHERE a.v < 20 AND b.v < 30")
        db.execute("DROP TABLE g")
    db.close()
    for side in (os.path.join(data, "grid.b2nd.b2lock"),
                 os.path.join(data, "grid2.b2frame", ".b2lock")):
        if os.path.exists(side):
            os.remove(side)


def reads(data, out):
    g, s = os.path.join(data, "grid.b2nd"), os.path.join(data, "grid2.b2frame")
    return [
        ("open a table", "CREATE VIRTUAL TABLE t USING caterva('%s')" % g),
        ("open a sparse table", "CREATE VIRTUAL TABLE u USING caterva('%s')" % s),
        ("open a table of two variables", "CREATE VIRTUAL TABLE w USING caterva('%s', '%s')"
         % (g, s)),
        ("open with lock_reads=0", "CREATE VIRTUAL TABLE v USING caterva('%s', lock_reads=0)" % g),
        ("a full scan", "SELECT count(*), sum(value) FROM t"),
        ("a box in labels", "SELECT * FROM t WHERE time = '2024-01-03' AND lat BETWEEN -10 AND 0"),
        ("IN lists", "SELECT * FROM u WHERE time_index IN (1, 7) AND lon_index IN (2, 30)"),
        ("a join", "WITH k(i) AS (VALUES (1), (4), (9)) SELECT k.i, t.value FROM k "
         "JOIN t ON t.time_index = k.i AND t.lat_index = k.i AND t.lon_index = k.i"),
        ("a value predicate", "SELECT count(*) FROM t WHERE value > 10"),
        ("two variables", "SELECT sum(grid), sum(grid2) FROM w WHERE lat_index = 3"),
        ("caterva_info", "SELECT length(caterva_info('%s'))" % g),
        ("caterva_slice", "SELECT length(caterva_slice('%s', '[0,0,0]', '[2,3,4]'))" % s),
        ("caterva_reduce", "SELECT count(*) FROM caterva_reduce('%s', 'mean', 'time')" % g),
        ("caterva_nearest", "SELECT caterva_nearest('t', 'lat', 3.3)"),
        ("caterva_stats_check", "SELECT caterva_stats_check('%s')" % g),
        ("caterva_png", "SELECT length(caterva_png('%s', '[0,0,0]', '[1,30,40]'))" % g),
        ("caterva_export to another folder",
         "SELECT caterva_export('%s', '%s')" % (g, os.path.join(out, "g.npy"))),
    ]


def body(tmp):
    data, out = os.path.join(tmp, "data"), os.path.join(tmp, "out")
    os.makedirs(data)
    os.makedirs(out)
    make(data)
    db = connect()
    for desc, sql in reads(data, out):
        before = listing(data)
        err = None
        try:
            db.execute(sql).fetchall()
        except sqlite3.Error as e:
            err = str(e)
        after = listing(data)
        changed = sorted(set(before.items()) ^ set(after.items()))
        report(err is None and not changed, "%s leaves the folder as it was" % desc,
               "error: %s\nchanged: %s" % (err, changed))
    # a sidecar that appears later is used: a writer's first write creates it
    before = db.execute("SELECT sum(value) FROM t").fetchone()[0]
    report(not os.path.exists(os.path.join(data, "grid.b2nd.b2lock")),
           "no sidecar before the first write")
    wdb = connect()
    wdb.execute("CREATE VIRTUAL TABLE x USING caterva('%s')" % os.path.join(data, "grid.b2nd"))
    wdb.execute("UPDATE x SET value = value + 1 WHERE time_index = 0")
    made = os.path.exists(os.path.join(data, "grid.b2nd.b2lock"))
    after = db.execute("SELECT sum(value) FROM t").fetchone()[0]
    report(made and abs(after - before - 30 * 40) < 1e-3,
           "the writer's first write creates the sidecar; the reader's next statement sees "
           "the commit (%r -> %r)" % (before, after))
    mtime = os.stat(os.path.join(data, "grid.b2nd.b2lock")).st_mtime_ns
    listing_before = listing(data)
    db.execute("SELECT count(*) FROM t WHERE value > 3").fetchall()
    report(listing(data) == listing_before and
           os.stat(os.path.join(data, "grid.b2nd.b2lock")).st_mtime_ns == mtime,
           "a reader with the sidecar there changes nothing either")
    # functions that write an existing array, given a path where there is none: an error, and
    # no sidecar left behind (fuzz_sql found caterva_build_stats('t0') leaving t0.b2lock)
    for fn in ("caterva_build_stats('%s')", "caterva_set_coords('%s', 'd0', '[1, 2]')"):
        missing = os.path.join(data, "missing.b2nd")
        listing_before = listing(data)
        try:
            db.execute("SELECT " + fn % missing).fetchall()
            err = None
        except sqlite3.Error as e:
            err = str(e)
        report(err is not None and "missing.b2nd" in err and listing(data) == listing_before,
               "%s on a path where there is no array: an error, and no file created"
               % (fn.split("(")[0]), "error: %s\nnow: %s" % (err, sorted(listing(data))))
    wdb.close()
    db.close()


if __name__ == "__main__":
    raise SystemExit(run_in_tmp(EXT, "test_sql_readers.", body))

#!/usr/bin/env python3
"""Named reductions and lists of statistics (TAP output): CREATE VIRTUAL TABLE clim USING
caterva_reduce('temps', 'mean', 'time') and caterva_reduce(arr, 'mean,min,max', axes).

- The named table's columns: the kept and grouped dimensions' names, `value` (one statistic,
  also under its own name) or one column per listed statistic, `n`; hidden: the reduced
  dimensions and every `<dim>_index`. Their values: labels as the caterva table shows them,
  equal to GROUP BY over the caterva table and to the function's positional rows.
- A list of statistics gives, in one pass, what separate single-statistic queries give (named
  tables and the function); `stats` is all six.
- Bounds on kept dimensions (labels, indices, IN) and on reduced ones are pushed down: the
  blocks read (caterva_blocks_read) are those of the function with the same bounds, exactly
  the blocks intersecting the box, fewer than the whole array's; a grouped dimension's column
  holds keys, which SQLite filters row by row.
- Errors: an unknown statistic (named), one listed twice, an unknown dimension or group, no
  arguments, a dimension named like a result column.
- Read-only: INSERT, UPDATE and DELETE fail naming the table, the file is unchanged; inside a
  write transaction of the caterva table the named table sees its writes, and after ROLLBACK
  the old values again.
- The table persists in a database file and works after reopening; a path works as arr.
- Over http (the remote tests' nginx, started here): named tables over the URL and over a
  caterva table of the URL give the local rows, reading the blocks the local table reads.

Environment: top_builddir, CATERVA_PRELOAD.
"""
import math
import os
import shutil
import sqlite3
import sys

from sqltap import array_bytes, connect_ext, report, run_in_tmp, skip

HERE = os.path.dirname(os.path.abspath(__file__))

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")
NT, NLAT, NLON = 90, 6, 8
SHAPE, CHUNKS, BLOCKS = (NT, NLAT, NLON), (30, 3, 4), (10, 3, 2)


def connect(path=":memory:"):
    return connect_ext(EXT, path, isolation_level=None)


def make_array(db, path):
    db.execute("CREATE VIRTUAL TABLE temps USING caterva('%s', shape='%d,%d,%d', "
               "dtype='float64', chunks='%s', blocks='%s', dims='time,lat,lon', "
               "coords='time:2023-01-01:1 day,lat:-50:20.0,lon:0:45.0')" % (
                   path, NT, NLAT, NLON, ",".join(map(str, CHUNKS)),
                   ",".join(map(str, BLOCKS))))
    db.execute("INSERT INTO temps(time_index, lat_index, lon_index, value) SELECT time_index, "
               "lat_index, lon_index, CASE WHEN (time_index * 7 + lat_index + lon_index) % 17 "
               "= 0 THEN NULL ELSE 10 + (time_index % 31) * 0.5 - lat_index * 1.25 + "
               "lon_index * 0.125 END FROM temps")


def blocks_read(db):
    return db.execute("SELECT caterva_blocks_read()").fetchone()[0]


def box_blocks(box):
    """Blocks intersecting an inclusive box."""
    n = 1
    for k in range(3):
        n *= len({(i // CHUNKS[k], (i % CHUNKS[k]) // BLOCKS[k])
                  for i in range(box[k][0], box[k][1] + 1)})
    return n


def columns(db, table):
    """The visible columns (table_info leaves hidden ones out)."""
    return [r[1] for r in db.execute("PRAGMA table_info(%s)" % table)]


def close(a, b):
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)
    return a == b


def rows_close(a, b):
    return len(a) == len(b) and all(len(x) == len(y) and all(close(u, v) for u, v in zip(x, y))
                                    for x, y in zip(a, b))


def check_columns(db):
    db.execute("CREATE VIRTUAL TABLE clim USING caterva_reduce('temps', 'mean', 'time')")
    cols = columns(db, "clim")
    hidden = [r[1] for r in db.execute("PRAGMA table_xinfo(clim)") if r[6] != 0]
    report(cols == ["lat", "lon", "value", "n"] and
           hidden == ["time", "time_index", "lat_index", "lon_index", "mean"],
           "named table: columns lat, lon, value, n; hidden time, the _index columns and mean "
           "(%r, %r)" % (cols, hidden))
    got = db.execute("SELECT lat, lon, value, n FROM clim").fetchall()
    want = db.execute("SELECT lat, lon, avg(value), count(value) FROM temps "
                      "GROUP BY lat_index, lon_index ORDER BY lat_index, lon_index").fetchall()
    fn = db.execute("SELECT d1, d2, value, n FROM caterva_reduce('temps', 'mean', 'time')"
                    ).fetchall()
    report(len(got) == NLAT * NLON and rows_close(got, want) and got == fn and
           got[0][0] == -50.0 and got[1][1] == 45.0,
           "SELECT lat, lon, value, n FROM clim: labels in degrees, values equal GROUP BY over "
           "the caterva table and the function's positional rows (%d rows)" % len(got),
           "%r\n%r\n%r" % (got[:3], want[:3], fn[:3]))
    alias = db.execute("SELECT mean, value FROM clim").fetchall()
    report(all(a == b for a, b in alias) and len(alias) == NLAT * NLON,
           "one statistic: `value` is also readable under its name (mean)")
    star = db.execute("SELECT * FROM clim LIMIT 1").fetchall()
    report(len(star[0]) == 4, "SELECT * gives the 4 visible columns (%r)" % star)
    db.execute("CREATE VIRTUAL TABLE ts USING caterva_reduce('temps', 'max', 'lat,lon')")
    got = db.execute("SELECT time, value, n, time_index FROM ts WHERE time_index < 3").fetchall()
    want = db.execute("SELECT time, max(value), count(value), time_index FROM temps WHERE "
                      "time_index < 3 GROUP BY time_index").fetchall()
    report(got == want and got[0][0] == "2023-01-01" and columns(db, "ts") == ["time", "value", "n"],
           "a kept time dimension gives its dates (%r)" % got[:2], "%r\n%r" % (got, want))
    db.execute("CREATE VIRTUAL TABLE whole USING caterva_reduce('temps', 'sum')")
    got = db.execute("SELECT * FROM whole").fetchall()
    want = db.execute("SELECT sum(value), count(value) FROM temps").fetchall()
    report(columns(db, "whole") == ["value", "n"] and rows_close(got, want),
           "without axes every dimension is reduced: one row, value and n (%r)" % got)


def check_lists(db):
    ops = ["count", "sum", "mean", "min", "max", "std"]
    db.execute("CREATE VIRTUAL TABLE many USING caterva_reduce('temps', 'mean,min,max,std,count,"
               "sum', 'lat,lon')")
    cols = columns(db, "many")
    report(cols == ["time", "mean", "min", "max", "std", "count", "sum", "n"],
           "a list of statistics: one column each, as listed, then n (%r)" % cols)
    got = db.execute("SELECT time, mean, min, max, std, count, sum, n FROM many").fetchall()
    bad = []
    for j, op in enumerate(["mean", "min", "max", "std", "count", "sum"]):
        db.execute("CREATE VIRTUAL TABLE temp.one_%s USING caterva_reduce('temps', '%s', "
                   "'lat,lon')" % (op, op))
        one = db.execute("SELECT time, value, n FROM one_%s" % op).fetchall()
        fn = db.execute("SELECT d0, value FROM caterva_reduce('temps', '%s', 'lat,lon')" % op
                        ).fetchall()
        if [(r[0], r[1 + j], r[7]) for r in got] != one or [r[:2] for r in one] != fn:
            bad.append("%s: %r / %r / %r" % (op, got[:1], one[:1], fn[:1]))
    report(not bad and len(got) == NT, "each statistic of the list equals its own single-"
           "statistic table and the function's value (bit for bit, %d rows)" % len(got),
           "\n".join(bad))
    fn = db.execute("SELECT d0, value, mean, min, max, n FROM caterva_reduce('temps', "
                    "'mean,min,max', 'lat,lon')").fetchall()
    report(fn == [(r[0], None, r[1], r[2], r[3], r[7]) for r in got],
           "the function takes the list too: its hidden columns give them, value is NULL")
    db.execute("CREATE VIRTUAL TABLE st USING caterva_reduce('temps', 'stats', 'time:month')")
    cols = columns(db, "st")
    got = db.execute("SELECT * FROM st").fetchall()
    fn = db.execute("SELECT d0, d1, d2, count, sum, mean, min, max, std, n FROM "
                    "caterva_reduce('temps', 'stats', 'time:month')").fetchall()
    report(cols == ["time", "lat", "lon"] + ops + ["n"] and got == fn and
           sorted({r[0] for r in got}) == [1, 2, 3],
           "'stats' is all six statistics; a grouped dimension's column holds the group keys "
           "(months 1-3), as the function's (%r)" % cols)
    sub = db.execute("SELECT * FROM st WHERE time = 2").fetchall()
    report(sub == [r for r in got if r[0] == 2] and len(sub) == NLAT * NLON,
           "WHERE on a grouped column compares group keys (month 2: %d rows)" % len(sub))
    db.execute("CREATE VIRTUAL TABLE av USING caterva_reduce('temps', 'avg,max', '')")
    got = db.execute("SELECT avg, max, n FROM av").fetchall()
    want = db.execute("SELECT avg(value), max(value), count(value) FROM temps").fetchall()
    report(columns(db, "av") == ["avg", "max", "n"] and rows_close(got, want),
           "avg keeps its name in a list (%r)" % got)


def check_pushdown(db):
    bad = []
    db.execute("CREATE VIRTUAL TABLE sd USING caterva_reduce('temps', 'std', 'time')")
    cases = [("lat BETWEEN -30 AND -10", "d1 BETWEEN -30 AND -10",
              [(0, NT - 1), (1, 2), (0, 7)]),
             ("lon_index = 5", "d2_index = 5", [(0, NT - 1), (0, 5), (5, 5)]),
             ("lat = 30 AND lon IN (0, 315)", "d1 = 30 AND d2 IN (0, 315)",
              [(0, NT - 1), (4, 4), (0, 7)]),
             ("time BETWEEN '2023-02-01' AND '2023-02-10' AND lat_index < 2",
              "d0 BETWEEN '2023-02-01' AND '2023-02-10' AND d1_index < 2",
              [(31, 40), (0, 1), (0, 7)])]
    whole = box_blocks([(0, NT - 1), (0, NLAT - 1), (0, NLON - 1)])
    full = db.execute("SELECT lat_index, lon_index, value, n FROM sd").fetchall()
    for where, fwhere, box in cases:
        b0 = blocks_read(db)
        got = db.execute("SELECT lat_index, lon_index, value, n FROM sd WHERE " + where
                         ).fetchall()
        b1 = blocks_read(db)
        fn = db.execute("SELECT d1_index, d2_index, value, n FROM caterva_reduce('temps', "
                        "'std', 'time') WHERE " + fwhere).fetchall()
        b2 = blocks_read(db)
        exp_blocks = box_blocks(box)
        if box == [(0, NT - 1), (4, 4), (0, 7)]:
            exp_blocks = box_blocks([(0, NT - 1), (4, 4), (0, 0)]) + \
                box_blocks([(0, NT - 1), (4, 4), (7, 7)])
        if got != fn or b1 - b0 != b2 - b1 or b1 - b0 != exp_blocks or b1 - b0 >= whole:
            bad.append("%s: %d blocks (function %d, box %d, whole %d), %r / %r" % (
                where, b1 - b0, b2 - b1, exp_blocks, whole, got[:2], fn[:2]))
        if "time" not in where:
            keep = [r for r in full if (r[0], r[1]) in {(g[0], g[1]) for g in got}]
            if keep != got:
                bad.append("%s: rows %r, unbounded %r" % (where, got[:2], keep[:2]))
    report(not bad, "bounds on kept dimensions (labels, indices, IN) and on the reduced one are "
           "pushed down: the function's rows and blocks, exactly the box's blocks, fewer than "
           "the array's %d" % whole, "\n".join(bad))
    db.execute("CREATE VIRTUAL TABLE mo USING caterva_reduce('temps', 'std', 'time:month')")
    b0 = blocks_read(db)
    got = db.execute("SELECT time, lat, lon, value FROM mo WHERE time_index BETWEEN 31 AND 58 "
                     "AND lon_index = 1").fetchall()
    used = blocks_read(db) - b0
    want = box_blocks([(31, 58), (0, NLAT - 1), (1, 1)])
    report(used == want and {r[0] for r in got} == {2} and len(got) == NLAT,
           "grouped: bounds on time_index choose the cells (February: %d blocks read, %d "
           "intersect)" % (used, want))
    # bounds on INTEGER group keys choose the groups' cells; SQLite checks the rows too
    allrows = db.execute("SELECT time, lat, lon, value, n FROM mo").fetchall()
    bad = []
    for where, keep, box in (
            ("time = 2", lambda m: m == 2, [(31, 58)]),
            ("time BETWEEN 2 AND 3", lambda m: m in (2, 3), [(31, NT - 1)]),
            ("time > 2.5", lambda m: m == 3, [(59, NT - 1)]),
            ("time IN (1, 3)", lambda m: m in (1, 3), [(0, 30), (59, NT - 1)]),
            ("time = '2'", lambda m: False, []),
            ("time < '2'", lambda m: True, []),
            ("time < 1", lambda m: False, [])):
        b0 = blocks_read(db)
        got = db.execute("SELECT time, lat, lon, value, n FROM mo WHERE " + where).fetchall()
        used = blocks_read(db) - b0
        want = sum(box_blocks([b, (0, NLAT - 1), (0, NLON - 1)]) for b in box)
        if "'" in where:
            want = box_blocks([(0, NT - 1), (0, NLAT - 1), (0, NLON - 1)])
        if got != [r for r in allrows if keep(r[0])] or used != want:
            bad.append("%s: %d rows, %d blocks read, %d expected" % (where, len(got), used, want))
    db.execute("CREATE VIRTUAL TABLE se USING caterva_reduce('temps', 'std', 'time:season')")
    every = db.execute("SELECT * FROM se").fetchall()
    b0 = blocks_read(db)
    got = db.execute("SELECT * FROM se WHERE time = 'DJF'").fetchall()
    used = blocks_read(db) - b0
    if got != [r for r in every if r[0] == "DJF"] or not got or used != box_blocks(
            [(0, NT - 1), (0, NLAT - 1), (0, NLON - 1)]):
        bad.append("season = 'DJF': %d rows, %d blocks" % (len(got), used))
    report(not bad, "grouped by month: =, BETWEEN, >, IN on the month read only those months' "
           "blocks and give the rows of the unbounded table; a text bound on it, or a bound on "
           "season keys (TEXT), is checked row by row: the same rows as SQL's", "\n".join(bad))


def expect_error(db, sql, want):
    try:
        db.execute(sql).fetchall()
    except sqlite3.Error as e:
        return want in str(e), str(e)
    return False, "no error"


def check_errors(db, tmp):
    bad = []
    cases = [
        ("CREATE VIRTUAL TABLE e1 USING caterva_reduce('temps', 'median', 'time')",
         "unknown op 'median'"),
        ("CREATE VIRTUAL TABLE e2 USING caterva_reduce('temps', 'mean, mode', 'time')",
         "unknown op 'mode'"),
        ("CREATE VIRTUAL TABLE e3 USING caterva_reduce('temps', 'mean,min,mean', 'time')",
         "lists mean twice"),
        ("CREATE VIRTUAL TABLE e4 USING caterva_reduce('temps', 'avg,mean', 'time')",
         "mean and avg are one statistic"),
        ("CREATE VIRTUAL TABLE e5 USING caterva_reduce('temps', 'mean', 'depth')",
         "no dimension 'depth'"),
        ("CREATE VIRTUAL TABLE e6 USING caterva_reduce('temps', 'mean', 'time:fortnight')",
         "unknown group"),
        ("CREATE VIRTUAL TABLE e7 USING caterva_reduce", "give the array, the op and the axes"),
        ("CREATE VIRTUAL TABLE e8 USING caterva_reduce('%s', 'mean', '')" %
         os.path.join(tmp, "missing.b2nd"), "cannot open"),
        ("CREATE VIRTUAL TABLE e9 USING caterva_reduce('temps', '', 'time')", "op is empty"),
        ("SELECT * FROM caterva_reduce('temps', 'mean,median', 'time')", "unknown op 'median'"),
        ("SELECT * FROM caterva_reduce('temps', 'stats,std', 'time')", "lists std twice"),
        ("SELECT * FROM caterva_reduce('temps', 'mean', 'depth')", "no dimension 'depth'"),
    ]
    for sql, want in cases:
        ok, msg = expect_error(db, sql, want)
        if not ok:
            bad.append("%s: %s" % (sql, msg))
    left = db.execute("SELECT count(*) FROM sqlite_temp_schema WHERE name LIKE 'e_'").fetchone()
    left2 = db.execute("SELECT count(*) FROM sqlite_schema WHERE name LIKE 'e_'").fetchone()
    report(not bad and left == left2 == (0,), "unknown or repeated statistics, unknown "
           "dimensions or groups, no arguments, a missing file: errors naming the cause, no "
           "table left", "\n".join(bad))
    path = os.path.join(tmp, "clash.b2nd")
    db.execute("CREATE VIRTUAL TABLE clash USING caterva('%s', shape='4,3', dtype='int32', "
               "dims='n,lat')" % path)
    ok, msg = expect_error(db, "CREATE VIRTUAL TABLE e10 USING caterva_reduce('clash', 'sum', "
                           "'lat')", "two columns would be named 'n'")
    db.execute("CREATE VIRTUAL TABLE ok10 USING caterva_reduce('clash', 'max', 'n')")
    hidden = [r[1] for r in db.execute("PRAGMA table_xinfo(ok10)") if r[6] != 0]
    got = db.execute("SELECT lat, value, n FROM ok10 WHERE n_index < 2").fetchall()
    report(ok and columns(db, "ok10") == ["lat", "value", "n"] and
           hidden == ["n_index", "lat_index", "max"] and len(got) == 3,
           "a kept dimension named like a result column is an error naming it (%s); reduced, "
           "its hidden column is left out and n_index bounds it (%r)" % (msg, hidden))


def check_readonly(db, path):
    db.execute("CREATE VIRTUAL TABLE ro USING caterva_reduce('temps', 'mean,max', 'time')")
    before = array_bytes(path)
    bad = []
    for sql in ("INSERT INTO ro(lat, lon, mean) VALUES (1, 2, 3)",
                "UPDATE ro SET mean = 0 WHERE lat_index = 1", "DELETE FROM ro",
                "INSERT INTO caterva_reduce(value) VALUES (1)"):
        ok, msg = expect_error(db, sql, "is read-only")
        if not ok:
            bad.append("%s: %s" % (sql, msg))
    report(not bad and array_bytes(path) == before,
           "INSERT, UPDATE and DELETE on a named reduction fail ('ro is read-only: its rows "
           "are computed from 'temps'...'); the array is unchanged", "\n".join(bad))
    orig = db.execute("SELECT lat, lon, mean, max FROM ro").fetchall()
    db.execute("BEGIN")
    db.execute("UPDATE temps SET value = 1000 WHERE time_index = 3 AND lat_index = 0")
    inside = db.execute("SELECT mean, max FROM ro WHERE lat_index = 0").fetchall()
    db.execute("ROLLBACK")
    after = db.execute("SELECT lat, lon, mean, max FROM ro").fetchall()
    report(all(r[1] == 1000.0 for r in inside) and len(inside) == NLON and after == orig and
           array_bytes(path) == before,
           "inside a write transaction of the caterva table the reduction sees its writes; "
           "after ROLLBACK the old values, the file byte-identical")


def check_persist(tmp):
    dbpath = os.path.join(tmp, "db.sqlite")
    path = os.path.join(tmp, "p.b2nd")
    db = connect(dbpath)
    make_array(db, path)
    db.execute("CREATE VIRTUAL TABLE clim USING caterva_reduce('temps', 'mean,max', 'time')")
    want = db.execute("SELECT * FROM clim").fetchall()
    db.close()
    db = connect(dbpath)
    got = db.execute("SELECT * FROM clim").fetchall()
    cols = columns(db, "clim")
    db.execute("CREATE VIRTUAL TABLE bypath USING caterva_reduce('%s', 'min', 'lat,lon')" % path)
    bypath = db.execute("SELECT time, value FROM bypath").fetchall()
    fn = db.execute("SELECT d0, value FROM caterva_reduce('temps', 'min', 'lat,lon')").fetchall()
    db.execute("DROP TABLE clim")
    gone = db.execute("SELECT count(*) FROM sqlite_schema WHERE name = 'clim'").fetchone()[0]
    db.close()
    report(got == want and len(got) == NLAT * NLON and cols == ["lat", "lon", "mean", "max", "n"]
           and bypath == fn and gone == 0,
           "a named reduction in a database file works after reopening; a path as arr names the "
           "dimensions from the file; DROP TABLE removes it")


def check_http(tmp, path):
    sys.path.insert(0, os.path.join(HERE, "..", "remote"))
    import servers
    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        skip("named reductions over http", "needs nginx (sh tests/remote/deps.sh installs it)")
        return
    os.environ.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    with servers.Servers(os.path.join(tmp, "srv"), what="nginx", lifetime=300) as s:
        shutil.copyfile(path, os.path.join(s.root, "temps.b2nd"))
        url = s.nginx_http + "/temps.b2nd"
        db = connect()
        db.execute("CREATE VIRTUAL TABLE temps USING caterva('%s')" % path)
        db.execute("CREATE VIRTUAL TABLE rtemps USING caterva('%s')" % url)
        q = "SELECT * FROM %s WHERE lat BETWEEN -30 AND -10 AND lon_index < 4"
        out = {}
        for name, arr in (("lo", "temps"), ("rt", "rtemps"), ("lp", path), ("ru", url)):
            db.execute("CREATE VIRTUAL TABLE %s USING caterva_reduce('%s', 'mean,max,std', "
                       "'time:month')" % (name, arr))
            b0 = blocks_read(db)
            rows = db.execute(q % name).fetchall()
            out[name] = (columns(db, name), rows, blocks_read(db) - b0)
        db.close()
    want = box_blocks([(0, NT - 1), (1, 2), (0, 3)])
    # (a path as arr opens the array for each query: its attributes are counted too)
    report(out["lo"][1] and out["lo"] == out["rt"] and out["lp"] == out["ru"] and
           out["lo"][:2] == out["lp"][:2] and out["lo"][2] == want,
           "over http: named reductions over a caterva table of the URL and over the URL give "
           "the local columns and rows and read the blocks the local ones read (the box's %d)"
           % want, "%r" % ({k: v[2] for k, v in out.items()},))


def body(tmp):
    path = os.path.join(tmp, "temps.b2nd")
    db = connect()
    make_array(db, path)
    check_columns(db)
    check_lists(db)
    check_pushdown(db)
    check_errors(db, tmp)
    check_readonly(db, path)
    db.close()
    check_persist(tmp)
    check_http(tmp, path)


if __name__ == "__main__":
    sys.exit(run_in_tmp(EXT, "red_named_", body))

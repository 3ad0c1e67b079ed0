#!/usr/bin/env python3
"""Labels (coordinates) of the caterva virtual table (TAP output).

1. Differential: arrays whose dimensions carry coordinates of every kind (regular ascending
   and descending, irregular explicit vectors both ways, dates daily and 6-hourly in each
   calendar, dates before 1970) hold random values; a plain table holds the same rows with
   the same labels (REAL, ISO 8601 TEXT). Random predicates on the label columns (=, <, <=,
   >, >=, BETWEEN, IN, with literals and bound parameters, combined across dimensions and
   with the hidden <dim>_index columns) and joins on labels must give the same rows.
2. Pushdown: a box given in labels decompresses exactly the blocks the same box given in
   indices does, and far fewer than a full scan.
3. Writes by label (INSERT with labels, growth of a regular first dimension, explicit labels
   refusing growth), caterva_set_coords (JSON numbers and dates, json_group_array),
   caterva_nearest, caterva_info's coords, and the errors of values of the wrong kind.
4. Several variables in one table: values equal to the one-array tables, only the columns
   read are decompressed (blocks counted against the one-array tables), boxes in labels
   pushed down to every array, mismatched shapes and dimension names refused naming the
   first difference, writes refused.

Environment: top_builddir, CATERVA_LABEL_QUERIES (differential queries per array, default
150), CATERVA_PRELOAD.
"""
import datetime
import json
import os
import random
import shutil
import sqlite3
import sys
import tempfile

from sqltap import plan, report, reexec_with_preload

reexec_with_preload()

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
NQ = int(os.environ.get("CATERVA_LABEL_QUERIES", "150"))
rng = random.Random(20261123)


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def q(db, sql, args=()):
    return db.execute(sql, args).fetchall()


def err(db, sql, args=()):
    try:
        db.execute(sql, args).fetchall()
    except sqlite3.Error as e:
        return str(e)
    return None


def expect_errors(db, cases):
    """Each (sql, fragment, description): the statement fails with a message holding fragment."""
    for sql, frag, desc in cases:
        e = err(db, sql)
        report(e is not None and frag in e, desc, e)


def blocks(db):
    return db.execute("SELECT caterva_blocks_read()").fetchone()[0]


def fresh_query(sql, tables):
    """Run sql on a new connection (empty block caches) over tables [(name, [paths])]:
    (its rows, the blocks it decompressed)."""
    c = connect()
    for name, paths in tables:
        c.execute("CREATE VIRTUAL TABLE %s USING caterva(%s)" %
                  (name, ", ".join("'%s'" % x for x in paths)))
    b = blocks(c)
    rows = q(c, sql)
    n = blocks(c) - b
    c.close()
    return rows, n


# ---- model of coordinates (what the table must show) -------------------------------------

def days_in_month(cal, y, m):
    if cal == "360_day":
        return 30
    if m != 2:
        return [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]
    if cal in ("noleap", "365_day"):
        return 28
    if cal in ("all_leap", "366_day"):
        return 29
    leap = y % 4 == 0 and (y % 100 != 0 or y % 400 == 0)
    return 29 if leap else 28


def add_days(cal, ymd, n):
    """Walk n days forward in calendar cal (independent of the C code: day by day)."""
    y, m, d = ymd
    for _ in range(n):
        d += 1
        if d > days_in_month(cal, y, m):
            d = 1
            m += 1
            if m > 12:
                m = 1
                y += 1
    return (y, m, d)


def time_labels(cal, start, n, hours):
    """ISO texts of n instants from start (y, m, d) every `hours` hours in calendar cal."""
    out = []
    for i in range(n):
        h = i * hours
        y, m, d = add_days(cal, start, h // 24)
        hh = h % 24
        if hours % 24 == 0:
            out.append("%04d-%02d-%02d" % (y, m, d))
        else:
            out.append("%04d-%02d-%02dT%02d:00:00" % (y, m, d, hh))
    return out


def make_case(tmp, name, shape, dims, coords_opt, labels, explicit=None):
    """Create the array through SQL, fill it, and return (db, labels per dimension)."""
    db = connect()
    path = os.path.join(tmp, name + ".b2nd")
    chunks = ",".join(str(max(1, s // 3)) for s in shape)
    blks = ",".join(str(max(1, s // 7)) for s in shape)
    opt = "shape='%s', dims='%s', chunks='%s', blocks='%s'" % (
        ",".join(map(str, shape)), ",".join(dims), chunks, blks)
    if coords_opt:
        opt += ", coords='%s'" % coords_opt
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', %s)" % (path, opt))
    for k, vec in (explicit or {}).items():
        db.execute("SELECT caterva_set_coords('t', ?, ?)", (dims[k], json.dumps(vec)))
    cols = ", ".join("%s %s" % (d, "TEXT" if isinstance(labels[k][0], str) else "REAL")
                     for k, d in enumerate(dims))
    db.execute("CREATE TABLE p(%s, value REAL, %s)" %
               (cols, ", ".join("%s_index INTEGER" % d for d in dims)))
    db.execute("BEGIN")
    cells = [[]]
    for s in shape:
        cells = [c + [i] for c in cells for i in range(s)]
    for c in cells:
        v = rng.randint(-1000, 1000) / 8.0
        db.execute("INSERT INTO t(%s, value) VALUES (%s)" % (
            ", ".join("%s_index" % d for d in dims), ", ".join(["?"] * (len(dims) + 1))),
            tuple(c) + (v,))
        db.execute("INSERT INTO p VALUES (%s)" % ", ".join(["?"] * (2 * len(dims) + 1)),
                   tuple(labels[k][i] for k, i in enumerate(c)) + (v,) + tuple(c))
    db.execute("COMMIT")
    return db


def random_pred(dims, labels):
    """A random predicate over the label (and index) columns, with its bound arguments."""
    parts, args = [], []
    for k, d in enumerate(dims):
        lab = labels[k]
        r = rng.random()
        if r < 0.3:
            continue
        def pick():
            if isinstance(lab[0], str):
                # a label, or an instant off the grid written in the labels' own format
                # (comparisons are chronological; the plain table compares text, which
                # agrees only for texts of one format)
                x = rng.choice(lab)
                if rng.random() < 0.3:
                    if len(x) > 10:
                        x = x[:11] + "%02d:30:00" % rng.randrange(24)
                    else:
                        x = "%04d" % (int(x[:4]) + rng.choice([-1, 1])) + x[4:]
                return x
            if rng.random() < 0.7:
                return rng.choice(lab)
            lo, hi = min(lab), max(lab)
            return round(rng.uniform(lo - 2, hi + 2), 3)
        kind = rng.choice(["=", "<", "<=", ">", ">=", "between", "in", "idx", "param"])
        if kind == "between":
            a, b = sorted([pick(), pick()])
            parts.append("%s BETWEEN ? AND ?" % d)
            args += [a, b]
        elif kind == "in":
            vals = [pick() for _ in range(rng.randint(1, 4))]
            parts.append("%s IN (%s)" % (d, ", ".join(["?"] * len(vals))))
            args += vals
        elif kind == "idx":
            parts.append("%s_index %s ?" % (d, rng.choice(["=", "<", ">="])))
            args.append(rng.randrange(len(lab)))
        elif kind == "param":
            parts.append("%s %s ?" % (d, rng.choice(["=", "<", ">="])))
            args.append(pick())
        else:
            x = pick()
            lit = "'%s'" % x if isinstance(x, str) else repr(x)
            parts.append("%s %s %s" % (d, kind, lit))
    return " AND ".join(parts) if parts else "1", args


def differential(db, name, dims):
    labels = None
    n_ok = 0
    bad = None
    cols = ", ".join(dims + ["value"] + ["%s_index" % d for d in dims])
    for i in range(NQ):
        where, args = random_pred(dims, LABELS[name])
        a = sorted(q(db, "SELECT %s FROM t WHERE %s" % (cols, where), args), key=repr)
        b = sorted(q(db, "SELECT %s FROM p WHERE %s" % (cols, where), args), key=repr)
        if a == b:
            n_ok += 1
        elif bad is None:
            bad = "WHERE %s %r: %d rows vs %d in the plain table" % (where, args, len(a), len(b))
    return n_ok, bad


LABELS = {}


def case_defs():
    """(name, shape, dims, coords=, labels per dim, explicit vectors)"""
    out = []
    lat = [-89.5 + 1.0 * i for i in range(12)]
    lon = [179.5 - 2.5 * i for i in range(9)]           # regular, descending
    cal_cases = [("standard", (2023, 12, 25), 24), ("proleptic_gregorian", (1899, 12, 28), 24),
                 ("noleap", (2024, 2, 25), 24), ("all_leap", (2023, 2, 26), 24),
                 ("360_day", (2023, 2, 27), 24), ("standard", (1969, 12, 30), 6),
                 ("360_day", (1959, 12, 29), 6)]
    for j, (cal, start, hours) in enumerate(cal_cases):
        n = 10
        tl = time_labels(cal, start, n, hours)
        unit = "1 day" if hours == 24 else "%d hour" % hours
        copt = "time:%04d-%02d-%02d:%s:%s,lat:-89.5:1.0,lon:179.5:-2.5" % (start + (unit, cal))
        out.append(("cal%d" % j, [n, 12, 9], ["time", "lat", "lon"], copt, [tl, lat, lon], {}))
    # explicit vectors: irregular ascending latitudes, descending pressure levels
    lat2 = sorted(rng.sample(range(-900, 900), 14))
    lat2 = [x / 10.0 for x in lat2]
    lev = sorted(rng.sample(range(10, 1000), 7), reverse=True)
    lev = [float(x) for x in lev]
    out.append(("explicit", [14, 7, 5], ["lat", "lev", "x"], "x:0:0.25", [lat2, lev, [0.25 * i for i in range(5)]],
                {0: lat2, 1: lev}))
    return out


def test_differential(tmp):
    total = 0
    for name, shape, dims, copt, labels, explicit in case_defs():
        LABELS[name] = labels
        db = make_case(tmp, name, shape, dims, copt, labels, explicit)
        # the table shows the labels the model computes
        got = [r[0] for r in q(db, "SELECT DISTINCT %s FROM t ORDER BY %s_index" % (dims[0], dims[0]))]
        report(got == labels[0], "%s: %s labels as the model computes them" % (name, dims[0]),
               "got %r\nwant %r" % (got[:5], labels[0][:5]))
        n_ok, bad = differential(db, name, dims)
        total += n_ok
        report(bad is None, "%s: %d label predicates equal the plain table" % (name, n_ok), bad)
        # joins on labels: a point lookup per outer row
        db.execute("CREATE TABLE s(id INTEGER, a, b)")
        for i in range(20):
            db.execute("INSERT INTO s VALUES (?, ?, ?)",
                       (i, rng.choice(labels[0]), rng.choice(labels[1])))
        j1 = sorted(q(db, "SELECT s.id, t.value FROM s JOIN t ON t.%s = s.a AND t.%s = s.b"
                          " WHERE t.%s_index = 0" % (dims[0], dims[1], dims[2])))
        j2 = sorted(q(db, "SELECT s.id, p.value FROM s JOIN p ON p.%s = s.a AND p.%s = s.b"
                          " WHERE p.%s_index = 0" % (dims[0], dims[1], dims[2])))
        plan_rows = " ".join(r[-1] for r in q(db, "EXPLAIN QUERY PLAN SELECT s.id, t.value FROM s "
                                                  "JOIN t ON t.%s = s.a AND t.%s = s.b" % (dims[0], dims[1])))
        report(j1 == j2 and len(j1) == 20, "%s: join on labels (%d rows) equals the plain table"
               % (name, len(j1)))
        report("SCAN s" in plan_rows and "VIRTUAL TABLE INDEX" in plan_rows,
               "%s: the join scans s and looks t up" % name, plan_rows)
        total += 1
        db.close()
    return total


def test_pushdown(tmp):
    db = connect()
    path = os.path.join(tmp, "big.b2nd")
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='365,180,360', dims='time,lat,lon',"
               " chunks='30,45,90', blocks='10,15,30', dtype='float32',"
               " coords='time:2023-01-01:1 day,lat:-89.5:1.0,lon:-179.5:1.0')" % path)
    db.execute("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 364) "
               "INSERT INTO t(time_index, lat_index, lon_index, value) "
               "SELECT a.i, b.i, c.i, a.i + b.i FROM n a, n b, n c WHERE b.i < 180 AND c.i < 360")
    db.close()
    tab = [("t", [path])]
    ((n1, s1),), b1 = fresh_query("SELECT count(*), sum(value) FROM t WHERE lat BETWEEN 35 AND 65 "
                                  "AND time BETWEEN '2023-08-01' AND '2023-08-07'", tab)
    # lat 35.5 is index 125 (35 itself falls between grid points); 2023-08-01 is day 212
    ((n2, s2),), b2 = fresh_query("SELECT count(*), sum(value) FROM t WHERE lat_index BETWEEN "
                                  "125 AND 154 AND time_index BETWEEN 212 AND 218", tab)
    _, ball = fresh_query("SELECT sum(value) FROM t", tab)
    report(n1 == n2 == 30 * 7 * 360 and s1 == s2 and b1 == b2 and b1 * 20 < ball,
           "label box lat 35..65, 2023-08-01..07: %d rows, %d blocks (index box: %d; full scan %d)"
           % (n1, b1, b2, ball))
    LABEL_FIGURES.append((b1, ball, n1))


LABEL_FIGURES = []


def test_writes(tmp):
    db = connect()
    p = os.path.join(tmp, "w.b2nd")
    db.execute("CREATE VIRTUAL TABLE w USING caterva('%s', shape='3,4', dims='time,lat', "
               "coords='time:2000-02-27:1 day,lat:0:0.5:degrees_north', chunks='2,2')" % p)
    db.execute("INSERT INTO w(time, lat, value) VALUES ('2000-02-29', 1.5, 7)")
    report(q(db, "SELECT time, lat, value, time_index, lat_index FROM w WHERE value = 7") ==
           [("2000-02-29", 1.5, 7.0, 2, 3)], "INSERT by labels writes the labelled cell")
    db.execute("INSERT INTO w(time, lat, value) VALUES ('2000-03-02', 0.5, 9)")
    report(q(db, "SELECT json_extract(caterva_info('w'), '$.shape')") == [("[5,4]",)] and
           q(db, "SELECT time FROM w WHERE value = 9") == [("2000-03-02",)],
           "a date past the end grows the regular time coordinate")
    expect_errors(db, [
        ("INSERT INTO w(time, lat, value) VALUES ('2000-03-01', 0.25, 1)", "not a label",
         "a latitude between grid points is refused"),
        ("INSERT INTO w(time, lat, value) VALUES ('2000-03-01', 9.5, 1)", "out of range",
         "a latitude past the end is refused"),
        ("INSERT INTO w(time, lat, lat_index, value) VALUES ('2000-03-01', 1.0, 3, 1)",
         "different cells", "label and index disagreeing is refused"),
        ("UPDATE w SET lat = 2.0 WHERE lat = 1.5", "cannot change", "UPDATE of a label is refused"),
        ("SELECT * FROM w WHERE time = 20000301", "compares with dates",
         "a number for a date is an error"),
        ("SELECT * FROM w WHERE time = '2000-02-30'", "not a date",
         "a date the calendar lacks is an error"),
        ("SELECT * FROM w WHERE lat > 'north'", "compares with numbers",
         "text for a number label is an error")])
    report(q(db, "SELECT count(*) FROM w WHERE lat = NULL") == [(0,)] and
           q(db, "SELECT count(*) FROM w WHERE lat > '1'") == [(5,)],
           "NULL matches nothing; numeric text compares as a number")
    # explicit labels: set from a subquery, growth needs labels first
    db.execute("CREATE TABLE lv(x REAL)")
    db.executemany("INSERT INTO lv VALUES (?)", [(10.0,), (20.0,), (30.0,), (40.0,)])
    n = q(db, "SELECT caterva_set_coords('w', 'lat', (SELECT json_group_array(x) FROM lv))")
    report(n == [(4,)] and q(db, "SELECT lat FROM w WHERE value = 7") == [(40.0,)],
           "caterva_set_coords from json_group_array; the table shows the new labels")
    n = q(db, "SELECT caterva_set_coords('w', 'time', '[\"2001-01-01\", \"2001-01-03\", "
              "\"2001-01-04\", \"2001-01-10\", \"2001-02-01\"]')")
    report(n == [(5,)] and q(db, "SELECT time FROM w WHERE value = 9") == [("2001-02-01",)],
           "caterva_set_coords with dates")
    expect_errors(db, [
        ("INSERT INTO w(time, lat, value) VALUES ('2001-03-01', 10, 1)", "not a label",
         "growth beyond explicit labels is refused"),
        ("SELECT caterva_set_coords('w', 'lat', '[1, 3, 2, 4]')", "monotonic",
         "non-monotonic labels are refused"),
        ("SELECT caterva_set_coords('w', 'lat', '[1, 2]')", "extent",
         "fewer labels than the extent are refused"),
        ("SELECT caterva_set_coords('w', 'lat', '{bad')", "JSON", "malformed JSON is refused"),
        ("SELECT caterva_set_coords('w', 'depth', '[1]')", "no dimension",
         "unknown dimension is refused")])
    report(q(db, "SELECT caterva_nearest('w', 'lat', 24.9), caterva_nearest('w', 'lat', 25.1), "
                 "caterva_nearest('w', 'lat', -100), caterva_nearest('w', 'time', '2001-01-08')")
           == [(1, 2, 0, 3)], "caterva_nearest on numbers and dates")
    info = json.loads(q(db, "SELECT caterva_info('w')")[0][0])
    report(info["coords"]["lat"]["kind"] == "explicit" and info["coords"]["lat"]["nvalues"] == 4 and
           info["coords"]["time"]["first"] == "2001-01-01" and info["dims"] == ["time", "lat"],
           "caterva_info reports the coordinates", json.dumps(info.get("coords")))
    db.execute("BEGIN")
    db.execute("INSERT INTO w(time_index, lat_index, value) VALUES (0, 0, 1)")
    e = err(db, "SELECT caterva_set_coords('w', 'lat', '[1,2,3,4]')")
    db.execute("ROLLBACK")
    report(e is not None and "uncommitted" in e, "set_coords refuses while the table has "
           "uncommitted writes", e)
    # another connection sees the labels; a new connection declares the column types
    db2 = connect()
    db2.execute("CREATE VIRTUAL TABLE w USING caterva('%s')" % p)
    types = [(r[1], r[2]) for r in q(db2, "PRAGMA table_xinfo(w)")]
    report(types[:3] == [("time", "TEXT"), ("lat", "REAL"), ("value", "REAL")] and
           ("lat_index", "INTEGER HIDDEN") in types or ("lat_index", "INTEGER") in types,
           "declared types follow the coordinates", repr(types))
    db2.close()
    db.close()


def test_empty_commit(tmp):
    """A transaction that writes nothing ends by reading the metadata again (no commit): the
    explicit labels the table held must be read again too (fuzz_sql found them freed and then
    used; tests/fuzz/corpus/sql/regress_labels_after_empty_commit_*)."""
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    p = os.path.join(tmp, "e.b2nd")
    db.execute("CREATE VIRTUAL TABLE e USING caterva('%s', shape='4,6', dims='time,lat')" % p)
    db.execute("SELECT caterva_set_coords('e', 'lat', '[-50, -20, -5, 0, 12.5, 40]')")
    db.execute("INSERT INTO e(time_index, lat_index, value) VALUES (1, 4, 3.0)")
    ok = True
    for i in range(3):
        db.execute("BEGIN")
        db.execute("UPDATE e SET value = 1 WHERE time_index < 0")   # matches nothing
        if i == 1:
            db.execute("SAVEPOINT s")
            db.execute("UPDATE e SET value = 2 WHERE time_index > 99")
            db.execute("ROLLBACK TO s")
        db.execute("COMMIT")
        ok &= q(db, "SELECT lat, value FROM e WHERE lat BETWEEN 10 AND 15 AND value IS NOT NULL"
                ) == [(12.5, 3.0)]
        ok &= q(db, "SELECT count(*) FROM e WHERE lat = -20") == [(4,)]
    report(ok, "explicit labels after transactions that wrote nothing (three kinds)")
    db.close()


def test_create_errors(tmp):
    db = connect()
    for opt, frag in [("coords='depth:0:1'", "no dimension"),
                      ("coords='d0:0:0'", "step"),
                      ("coords='d0:2023-01-01:1 fortnight'", "step like"),
                      ("coords='d0:2023-02-30:1 day'", "units"),
                      ("coords='d0:2023-01-01:1 day:julian'", "calendar"),
                      ("coords='d0:0:1,d0:0:2'", "twice"),
                      ("coords='d0:abc:1'", "name:start:step")]:
        path = os.path.join(tmp, "e%d.b2nd" % rng.randrange(10 ** 9))
        e = err(db, "CREATE VIRTUAL TABLE x USING caterva('%s', shape='3,3', %s)" % (path, opt))
        report(e is not None and frag in e and not os.path.exists(path),
               "coords error (%s) names the problem and creates nothing" % opt, e)
    db.close()


def test_variables(tmp):
    db = connect()
    pa, pb, pc, pd = (os.path.join(tmp, n) for n in ("t2m.b2nd", "tp.b2nd", "bad.b2nd", "names.b2nd"))
    db.execute("CREATE VIRTUAL TABLE a USING caterva('%s', shape='40,30,20', dims='time,lat,lon', "
               "coords='time:2023-01-01:1 day,lat:-87:6,lon:0:18', chunks='10,15,10', "
               "blocks='5,5,5')" % pa)
    db.execute("CREATE VIRTUAL TABLE b USING caterva('%s', shape='40,30,20', dims='time,lat,lon', "
               "dtype='int32', chunks='20,10,20', blocks='4,10,5', fill=0)" % pb)
    cte = ("WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 39) ")
    db.execute(cte + "INSERT INTO a(time_index, lat_index, lon_index, value) SELECT x.i, y.i, z.i, "
               "round(x.i * 0.5 + y.i - z.i * 0.25, 2) FROM n x, n y, n z WHERE y.i < 30 AND z.i < 20")
    db.execute(cte + "INSERT INTO b(time_index, lat_index, lon_index, value) SELECT x.i, y.i, z.i, "
               "(x.i * 7 + y.i * 3 + z.i) % 50 FROM n x, n y, n z WHERE y.i < 30 AND z.i < 20")
    db.execute("CREATE VIRTUAL TABLE c USING caterva('%s', shape='40,31,20', dims='time,lat,lon')" % pc)
    db.execute("CREATE VIRTUAL TABLE d USING caterva('%s', shape='40,30,20', dims='time,latitude,lon')" % pd)
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE w USING caterva('%s', '%s')" % (pa, pb))
    cols = [r[1] for r in q(db, "PRAGMA table_info(w)")]
    report(cols == ["time", "lat", "lon", "t2m", "tp"], "value columns named by the file stems", cols)
    db2 = connect()
    db2.execute("CREATE VIRTUAL TABLE a USING caterva('%s')" % pa)
    db2.execute("CREATE VIRTUAL TABLE b USING caterva('%s')" % pb)
    ref = sorted(q(db2, "SELECT a.time, a.lat, a.lon, a.value, b.value FROM a JOIN b ON "
                        "a.time_index = b.time_index AND a.lat_index = b.lat_index AND "
                        "a.lon_index = b.lon_index"))
    report(sorted(q(db, "SELECT * FROM w")) == ref and len(ref) == 24000,
           "every row equals the one-array tables joined (%d rows)" % len(ref))
    _, nb = fresh_query("SELECT sum(value) FROM b", [("b", [pb])])
    _, na = fresh_query("SELECT sum(value) FROM a", [("a", [pa])])
    _, wb = fresh_query("SELECT sum(tp) FROM w", [("w", [pa, pb])])
    _, wa = fresh_query("SELECT sum(t2m) FROM w", [("w", [pa, pb])])
    _, w0 = fresh_query("SELECT count(*) FROM w", [("w", [pa, pb])])
    report(wb == nb and wa == na and w0 == 0 and nb > 0 and na > 0,
           "only the columns read are decompressed: tp %d blocks (alone %d), t2m %d (alone %d), "
           "count(*) %d" % (wb, nb, wa, na, w0))
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE w USING caterva('%s', '%s', value='temp,precip')" % (pa, pb))
    b0 = blocks(db)
    box = q(db, "SELECT time, lat, lon, temp, precip FROM w WHERE time BETWEEN '2023-01-05' AND "
                "'2023-01-08' AND lat = 3 AND lon >= 300")
    nbox = blocks(db) - b0
    refbox = [r for r in ref if "2023-01-05" <= r[0] <= "2023-01-08" and r[1] == 3 and r[2] >= 300]
    report(sorted(box) == sorted(refbox) and len(box) == 4 * 1 * 3 and nbox == 3,
           "a box in labels reads only its blocks of both arrays (%d rows, %d blocks)"
           % (len(box), nbox))
    # writes go to both arrays as one transaction (test_sql_vars_write.py covers them); an
    # UPDATE of one value column leaves the other array's file as it was
    with open(pa, "rb") as f:
        before_a = f.read()
    e = err(db, "UPDATE w SET precip = 1 WHERE time_index = 0 AND lat_index = 0 AND lon_index = 0")
    with open(pa, "rb") as f:
        after_a = f.read()
    got = q(db, "SELECT precip FROM w WHERE time_index = 0 AND lat_index = 0 AND lon_index = 0")
    report(e is None and got == [(1.0,)] and before_a == after_a,
           "an UPDATE of one array's column writes that array alone", repr((e, got)))
    for other, frag in [(pc, "shape"), (pd, "named")]:
        e = err(db, "CREATE VIRTUAL TABLE x USING caterva('%s', '%s')" % (pa, other))
        report(e is not None and frag in e and os.path.basename(other) in e,
               "a mismatched array is refused naming the difference", e)
    e = err(db, "CREATE VIRTUAL TABLE x USING caterva('%s', '%s', value='only')" % (pa, pb))
    report(e is not None and "value=" in e, "value= must name every array", e)
    db.close()
    db2.close()


def main():
    tmp = tempfile.mkdtemp(prefix="test_sql_labels.")
    try:
        n = test_differential(tmp)
        report(n > 0, "%d differential label queries in all" % n)
        test_pushdown(tmp)
        test_writes(tmp)
        test_empty_commit(tmp)
        test_create_errors(tmp)
        test_variables(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    for b1, ball, n1 in LABEL_FIGURES:
        print("# label box: %d of %d blocks decompressed for %d rows" % (b1, ball, n1))
    plan()


main()

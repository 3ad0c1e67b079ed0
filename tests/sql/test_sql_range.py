#!/usr/bin/env python3
"""The table option range='dim:start:stop' (TAP output): a table restricted to the indices
[start, stop) of one dimension, the pieces caterva_sqlite.sql() gives its Dask tasks.

- Rows: every query on the restricted table (random boxes in labels and indices, IN lists,
  value predicates, ORDER BY with LIMIT, count(*), a join) gives the rows of the same query
  on the whole table with the range added as a WHERE clause; on a table of two arrays too;
  the dimension named by name or number; stop past the extent; an empty range.
- Pushdown inside the range: a box inside the range decompresses exactly the blocks that the
  same box on the whole table does; a full scan of the restricted table only the blocks of
  the range (caterva_blocks_read()).
- Errors: malformed values, an unknown dimension, start > stop, range= with creation options,
  and writes (the table is read-only) give messages naming the cause.

Environment: top_builddir, CATERVA_PRELOAD.
"""
import os
import random
import sqlite3

from sqltap import run_in_tmp, report, connect_ext

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")
NT, NLAT, NLON = 40, 12, 10
CHUNKS, BLOCKS = (10, 6, 5), (5, 3, 5)


def setup(tmp):
    db = connect_ext(EXT, isolation_level=None)
    for name, fill in (("a", 1.0), ("b", -3.0)):
        path = os.path.join(tmp, name + ".b2nd")
        db.execute("CREATE VIRTUAL TABLE mk_%s USING caterva('%s', shape='%d,%d,%d', dtype='float64', "
                   "chunks='%s', blocks='%s', dims='time,lat,lon', "
                   "coords='time:2024-01-01:1 day,lat:-30:5.0,lon:0:1.5')" % (
                       name, path, NT, NLAT, NLON, ",".join(map(str, CHUNKS)),
                       ",".join(map(str, BLOCKS))))
        db.execute("INSERT INTO mk_%s(time_index, lat_index, lon_index, value) "
                   "SELECT time_index, lat_index, lon_index, "
                   "CASE WHEN (time_index * 7 + lat_index * 3 + lon_index) %% 11 = 0 THEN NULL "
                   "ELSE %f * (time_index * 100 + lat_index * 10 + lon_index) END FROM mk_%s"
                   % (name, fill, name))
        db.execute("DROP TABLE mk_%s" % name)
    return db


def table(db, name, tmp, rng=None, two=False):
    args = ["'%s'" % os.path.join(tmp, "a.b2nd")]
    if two:
        args.append("'%s'" % os.path.join(tmp, "b.b2nd"))
    if rng is not None:
        args.append("range='%s'" % rng)
    db.execute("CREATE VIRTUAL TABLE %s USING caterva(%s)" % (name, ", ".join(args)))


def blocks(db, sql):
    b0 = db.execute("SELECT caterva_blocks_read()").fetchone()[0]
    rows = db.execute(sql).fetchall()
    return rows, db.execute("SELECT caterva_blocks_read()").fetchone()[0] - b0


def random_where(rnd):
    conds = []
    if rnd.random() < 0.5:
        a = rnd.randrange(NT)
        b = rnd.randrange(a, NT)
        conds.append(rnd.choice(["time_index BETWEEN %d AND %d" % (a, b),
                                 "time BETWEEN date('2024-01-01', '+%d days') AND "
                                 "date('2024-01-01', '+%d days')" % (a, b)]))
    if rnd.random() < 0.5:
        a = rnd.randrange(NLAT)
        conds.append(rnd.choice(["lat_index >= %d" % a, "lat < %f" % (-30 + 5 * a + 0.5),
                                 "lat IN (%s)" % ", ".join(str(-30 + 5 * rnd.randrange(NLAT))
                                                           for _ in range(3))]))
    if rnd.random() < 0.4:
        conds.append("lon_index IN (%d, %d)" % (rnd.randrange(NLON), rnd.randrange(NLON)))
    if rnd.random() < 0.3:
        conds.append("value > %d" % rnd.randrange(0, 4000))
    return conds


def check_rows(db, tmp, rnd):
    for i, (lo, hi) in enumerate([(10, 25), (0, 40), (7, 8), (33, 1000), (12, 12), (0, 1)]):
        name = "r%d" % i
        table(db, name, tmp, "time:%d:%d" % (lo, hi))
        table(db, name + "n", tmp, "0:%d:%d" % (lo, hi))   # by number
        rng = "time_index >= %d AND time_index < %d" % (lo, hi)
        bad = []
        for _ in range(40):
            conds = random_where(rnd)
            where = " WHERE " + " AND ".join(conds) if conds else ""
            tail = rnd.choice(["", " ORDER BY time, lat, lon LIMIT 17", " ORDER BY rowid"])
            cols = rnd.choice(["time, lat, lon, value", "count(*)", "lat_index, sum(value)"])
            group = " GROUP BY lat_index" if cols.startswith("lat_index") else ""
            if group:
                tail = ""
            got = db.execute("SELECT %s FROM %s%s%s%s" % (cols, name, where, group, tail)).fetchall()
            got_n = db.execute("SELECT %s FROM %sn%s%s%s" % (cols, name, where, group, tail)).fetchall()
            want = db.execute("SELECT %s FROM full%s%s%s%s" % (
                cols, " WHERE " + " AND ".join(conds + [rng]), "", group, tail)).fetchall()
            if got != want or got_n != want:
                bad.append((cols, where, tail, len(got), len(want)))
        report(not bad, "range time:%d:%d: 40 random queries equal the whole table's with the range "
               "in WHERE (by name and by number)" % (lo, hi), "\n".join(map(str, bad[:5])))
    # a join: the restricted table inside, looked up per outer row
    db.execute("CREATE TEMP TABLE pts(t, la, lo)")
    db.executemany("INSERT INTO pts VALUES (?, ?, ?)",
                   [(rnd.randrange(NT), rnd.randrange(NLAT), rnd.randrange(NLON)) for _ in range(60)])
    got = db.execute("SELECT p.t, p.la, p.lo, r.value FROM pts p JOIN r0 r ON r.time_index = p.t "
                     "AND r.lat_index = p.la AND r.lon_index = p.lo ORDER BY 1, 2, 3").fetchall()
    want = db.execute("SELECT p.t, p.la, p.lo, r.value FROM pts p JOIN full r ON r.time_index = p.t "
                      "AND r.lat_index = p.la AND r.lon_index = p.lo WHERE p.t >= 10 AND p.t < 25 "
                      "ORDER BY 1, 2, 3").fetchall()
    report(got == want and len(want) > 0, "a join looks cells up in the restricted table: only "
           "those inside the range (%d of 60)" % len(want))


def check_two(db, tmp):
    table(db, "two", tmp, two=True)
    table(db, "two_r", tmp, "lat:3:9", two=True)
    got = db.execute("SELECT * FROM two_r WHERE lon_index < 4").fetchall()
    want = db.execute("SELECT * FROM two WHERE lon_index < 4 AND lat_index BETWEEN 3 AND 8").fetchall()
    cols = [r[1] for r in db.execute("PRAGMA table_info(two_r)")]
    report(got == want and len(got) == NT * 6 * 4 and cols[-2:] == ["a", "b"],
           "a table of two arrays restricted along lat: the rows of both arrays in the range")


def check_blocks(db, tmp):
    table(db, "cold_full", tmp)
    table(db, "cold_r", tmp, "time:10:30")
    _, n_r = blocks(db, "SELECT sum(value) FROM cold_r")
    # blocks intersecting time 10..29 (4 blocks along time of 5) x every lat and lon block
    nb = (20 // BLOCKS[0]) * (NLAT // BLOCKS[1]) * (NLON // BLOCKS[2])
    report(n_r == nb, "a full scan of the restricted table reads the range's %d blocks (%d)" % (nb, n_r))
    box = "time_index BETWEEN 12 AND 16 AND lat_index BETWEEN 4 AND 5 AND lon_index < 3"
    table(db, "cold_full2", tmp)
    table(db, "cold_r2", tmp, "time:10:30")
    rows_r, b_r = blocks(db, "SELECT value FROM cold_r2 WHERE " + box)
    rows_f, b_f = blocks(db, "SELECT value FROM cold_full2 WHERE " + box)
    # time 12..16 meets blocks 10-14 and 15-19, lat 4..5 block 3-5, lon 0..2 block 0-4
    report(rows_r == rows_f and len(rows_r) == 5 * 2 * 3 and b_r == b_f == 2,
           "a box inside the range: the same rows and the same 2 blocks as on the whole table "
           "(restricted %d, whole %d)" % (b_r, b_f))


def err(db, sql):
    try:
        db.execute(sql).fetchall()
        return None
    except sqlite3.Error as e:
        return str(e)


def check_errors(db, tmp):
    path = os.path.join(tmp, "a.b2nd")
    cases = [("'time:1'", "range= must be dim:start:stop"),
             ("'time:1:x'", "range= must be dim:start:stop"),
             ("'depth:0:4'", "a column name or number) of the table"),
             ("'7:0:4'", "of the table"),
             ("'time:5:4'", "0 <= start <= stop"),
             ("'time:-1:4'", "range= must be"),
             ("''", "range= must be")]
    for i, (val, want) in enumerate(cases):
        e = err(db, "CREATE VIRTUAL TABLE e%d USING caterva('%s', range=%s)" % (i, path, val))
        report(e is not None and want in e, "range=%s is refused: %s" % (val, e))
    e = err(db, "CREATE VIRTUAL TABLE e_twice USING caterva('%s', range='time:0:1', "
                "range='time:0:2')" % path)
    report(e is not None and "given twice" in e, "range= given twice: %s" % e)
    e = err(db, "CREATE VIRTUAL TABLE e_new USING caterva('%s', shape='4', range='d0:0:2')"
            % os.path.join(tmp, "new.b2nd"))
    report(e is not None and "creation options" in e and not os.path.exists(os.path.join(tmp, "new.b2nd")),
           "range= with creation options is refused and creates nothing: %s" % e)
    table(db, "w", tmp, "time:0:5")
    before = open(path, "rb").read()
    msgs = [err(db, "UPDATE w SET value = 1 WHERE time_index = 1"),
            err(db, "DELETE FROM w WHERE time_index = 2"),
            err(db, "INSERT INTO w(time_index, lat_index, lon_index, value) VALUES (1, 1, 1, 5)")]
    report(all(m and "read-only" in m for m in msgs) and open(path, "rb").read() == before,
           "writes to a restricted table are refused, the file unchanged: %s" % msgs[0])


def body(tmp):
    db = setup(tmp)
    table(db, "full", tmp)
    rnd = random.Random(38)
    check_rows(db, tmp, rnd)
    check_two(db, tmp)
    check_blocks(db, tmp)
    check_errors(db, tmp)
    db.close()


if __name__ == "__main__":
    raise SystemExit(run_in_tmp(EXT, "cv-range-", body))

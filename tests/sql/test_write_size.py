#!/usr/bin/env python3
"""File size as a property of the write path (TAP), issue 37's guard.

Whatever sequence of statements wrote an array, its file holds about what writing the same
values once gives: for each write pattern below, the array is written that way (each
transaction committed), then copied into a new array with the same options in one
INSERT ... SELECT, and the written array's bytes (file, or every chunk file of a sparse
directory) must be at most LIMIT x the copy's, measured twice: with the writer's connection
still open after its last COMMIT, and after it closed. The values must be the same too (a
join finds no differing cell), or a size check could pass on wrong data.

Patterns: daily appends (one INSERT ... SELECT and COMMIT per day) into an array created
with its final shape and into one grown from extent 0 (automatic partition), contiguous and
sparse; cells UPDATEd one by one in random order over several transactions; slab UPDATEs
(one day at a time); DELETE of boxes; a transposed load (day fastest). Partitions: chunks
and blocks that divide the grid evenly, edge chunks, edge blocks. On 46f4063 the
contiguous daily appends with edge chunks or blocks gave 1.4-2.9x here (dead bytes of
replaced chunk versions kept until 1 MiB and half the file were dead).

Environment: top_builddir (the build directory).
"""
import json
import os
import random

from sqltap import array_size, connect_ext, report, run_in_tmp

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
LIMIT = 1.05
DAYS, NLAT, NLON = 48, 30, 50
VALUE = "round(15 + 10 * sin((%s + lat) / 20.0) + lon * 0.01, 2)"

PARTITIONS = [
    ("even", "chunks='16,30,50', blocks='8,10,10'"),
    ("edge chunks", "chunks='20,30,32', blocks='5,10,16'"),
    ("edge blocks", "chunks='16,30,50', blocks='4,7,7'"),
]


def connect():
    db = connect_ext(EXT, isolation_level=None)
    db.execute("CREATE TEMP TABLE cells(lat INTEGER, lon INTEGER)")
    db.execute("WITH RECURSIVE n(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM n WHERE v < %d) "
               "INSERT INTO cells SELECT a.v, b.v FROM n a, n b WHERE a.v < %d"
               % (NLON - 1, NLAT))
    return db


def create(db, name, path, shape, options):
    db.execute("CREATE VIRTUAL TABLE %s USING caterva('%s', shape='%s', dtype='float32', "
               "dims='day,lat,lon'%s)" % (name, path, shape, (", " + options) if options else ""))


def daily(db, name, days):
    for d in range(days):
        db.execute("BEGIN")
        db.execute("INSERT INTO %s(day, lat, lon, value) SELECT %d, lat, lon, %s FROM cells"
                   % (name, d, VALUE % d))
        db.execute("COMMIT")


def full(db, name):
    db.execute("WITH RECURSIVE n(d) AS (SELECT 0 UNION ALL SELECT d + 1 FROM n WHERE d < %d) "
               "INSERT INTO %s(day, lat, lon, value) SELECT d, lat, lon, %s FROM n, cells"
               % (DAYS - 1, name, VALUE % "d"))


def random_updates(db, name):
    full(db, name)
    rng = random.Random(37)
    cells = [(d, la, lo) for d in range(DAYS) for la in range(0, NLAT, 3)
             for lo in range(0, NLON, 4)]
    rng.shuffle(cells)
    for k in range(0, len(cells), 400):
        db.execute("BEGIN")
        db.executemany("UPDATE %s SET value = value + 0.5 WHERE day = ? AND lat = ? AND lon = ?"
                       % name, cells[k:k + 400])
        db.execute("COMMIT")


def slab_updates(db, name):
    full(db, name)
    for d in range(0, DAYS, 3):
        db.execute("UPDATE %s SET value = value * 2 WHERE day = %d" % (name, d))


def delete_boxes(db, name):
    full(db, name)
    for d0, la0, lo0 in ((3, 0, 0), (20, 7, 11), (31, 20, 30), (40, 2, 40)):
        db.execute("DELETE FROM %s WHERE day BETWEEN %d AND %d AND lat BETWEEN %d AND %d "
                   "AND lon BETWEEN %d AND %d" % (name, d0, d0 + 5, la0, la0 + 8, lo0, lo0 + 9))


def transposed(db, name):
    db.execute("WITH RECURSIVE n(d) AS (SELECT 0 UNION ALL SELECT d + 1 FROM n WHERE d < %d) "
               "INSERT INTO %s(day, lat, lon, value) SELECT d, lat, lon, %s FROM cells, n "
               "ORDER BY lon, lat, d" % (DAYS - 1, name, VALUE % "d"))


def check(tmp, label, shape, options, write):
    """Write an array with write(db, name), copy it in one statement, compare bytes/values."""
    key = "".join(c if c.isalnum() else "_" for c in label)
    path, copy = os.path.join(tmp, key + ".b2nd"), os.path.join(tmp, key + "_once.b2nd")
    db = connect()
    create(db, "w", path, shape, options)
    write(db, "w")
    info = json.loads(db.execute("SELECT caterva_info('%s')" % path).fetchone()[0])
    same = "chunks='%s', blocks='%s'" % tuple(",".join(str(x) for x in info[k])
                                              for k in ("chunkshape", "blockshape"))
    shape_now = ",".join(str(x) for x in info["shape"])
    create(db, "c", copy, shape_now, same + (", sparse=1" if info["storage"] == "sparse" else ""))
    db.execute("INSERT INTO c(day, lat, lon, value) SELECT day, lat, lon, value FROM w "
               "WHERE value IS NOT NULL")
    diff = db.execute("SELECT count(*) FROM w JOIN c USING(day, lat, lon) "
                      "WHERE w.value IS NOT c.value").fetchone()[0]
    open_ratio = array_size(path) / array_size(copy)
    db.close()
    closed_ratio = array_size(path) / array_size(copy)
    report(diff == 0 and open_ratio <= LIMIT and closed_ratio <= LIMIT,
           "%s: %d bytes written, %d copied once: %.3fx open, %.3fx closed (limit %.2fx)"
           % (label, array_size(path), array_size(copy), open_ratio, closed_ratio, LIMIT),
           "cells differing from the copy: %d" % diff)


def option_checks(tmp):
    """max_dead= is checked, and honoured: at 100 the daily appends keep their dead bytes."""
    db = connect()
    for bad in ("101", "-1", "1.5", "lots"):
        err = None
        try:
            create(db, "x", os.path.join(tmp, "bad.b2nd"), "4,4,4", "max_dead='%s'" % bad)
        except Exception as e:  # sqlite3.Error
            err = str(e)
        report(err is not None and "max_dead must be an integer from 0 to 100" in err,
               "max_dead='%s' is refused with a clear error" % bad, "error %r" % err)
    path, copy = os.path.join(tmp, "lazy.b2nd"), os.path.join(tmp, "lazy_once.b2nd")
    part = PARTITIONS[2][1]
    create(db, "w", path, "%d,%d,%d" % (DAYS, NLAT, NLON), part + ", max_dead=100")
    daily(db, "w", DAYS)
    create(db, "c", copy, "%d,%d,%d" % (DAYS, NLAT, NLON), part)
    db.execute("INSERT INTO c SELECT * FROM w")
    ratio = array_size(path) / array_size(copy)
    report(LIMIT < ratio <= 2.0 + 0.01, "max_dead=100: daily appends leave the file at %.3fx "
           "the one-statement copy (dead bytes up to the live ones are kept)" % ratio)
    db.close()


def growth_partition(tmp, dtype, days=150):
    """Issue 37's growth goal on the smallest of its grids: an array grown from extent 0 with
    the automatic partition holds at most 1.15x the bytes of the final-shape array written
    in one statement with its automatic partition (make bench-growth runs the larger grids)."""
    db = connect()
    grown, once = os.path.join(tmp, "grow_%s.b2nd" % dtype), os.path.join(tmp, "fin_%s.b2nd" % dtype)
    db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='0,%d,%d', dtype='%s', "
               "dims='day,lat,lon')" % (grown, NLAT, NLON, dtype))
    daily(db, "g", days)
    db.execute("CREATE VIRTUAL TABLE f USING caterva('%s', shape='%d,%d,%d', dtype='%s', "
               "dims='day,lat,lon')" % (once, days, NLAT, NLON, dtype))
    db.execute("INSERT INTO f SELECT * FROM g")
    ratio = array_size(grown) / array_size(once)
    report(ratio <= 1.15, "%d daily appends of %dx%d %s into an array grown from extent 0: "
           "%.3fx the final shape's bytes written once (goal 1.15x)"
           % (days, NLAT, NLON, dtype, ratio))
    db.close()


def empty_arrays(tmp):
    """An array created with its final shape and nothing written holds no chunk bytes when its
    fill is zero or NaN (the default of float dtypes): index entries say so, as
    caterva_array_create's fill modes write them. Before, SQL's NaN fill stored every chunk as
    a 40-byte repeated-value chunk (a 1-D float64 array of 2.1e12 cells: 162.8 MB, see
    docs/performance.md, "A new array's fill chunks")."""
    db = connect()
    for dtype, fill in (("float64", ""), ("float32", ""), ("float64", ", fill=nan"),
                        ("float32", ", fill=0"), ("int16", "")):
        for sparse in (0, 1):
            path = os.path.join(tmp, "empty_%s_%d%s.b2nd" % (dtype, sparse, fill[7:]))
            db.execute("CREATE VIRTUAL TABLE e USING caterva('%s', shape='1000000', dtype='%s', "
                       "chunks='100', blocks='50', sparse=%d%s)" % (path, dtype, sparse, fill))
            info = json.loads(db.execute("SELECT caterva_info('e')").fetchone()[0])
            cells = db.execute("SELECT count(*), count(value) FROM e WHERE d0 IN (0, 99999, "
                               "999999)").fetchone()
            db.execute("DROP TABLE e")
            want = (3, 3 if dtype == "int16" or fill == ", fill=0" else 0)
            report(info["nchunks"] == 10000 and info["cbytes"] == 0 and
                   info["storage"] == ("sparse" if sparse else "contiguous") and
                   array_size(path) < 16384 and cells == want,
                   "a new %s array of 10,000 chunks, %s%s: %d chunk bytes, %d bytes in all"
                   % (dtype, "sparse" if sparse else "contiguous", fill or ", default fill",
                      info["cbytes"], array_size(path)), "cells %r, want %r" % (cells, want))
    db.close()


def body(tmp):
    empty_arrays(tmp)
    option_checks(tmp)
    growth_partition(tmp, "float32")
    growth_partition(tmp, "float64")
    final = "%d,%d,%d" % (DAYS, NLAT, NLON)
    grow = "0,%d,%d" % (NLAT, NLON)
    for sparse in (0, 1):
        kind = "sparse" if sparse else "contiguous"
        for pname, part in PARTITIONS:
            opts = part + (", sparse=1" if sparse else "")
            check(tmp, "daily appends, final shape, %s, %s" % (kind, pname), final, opts,
                  lambda db, t: daily(db, t, DAYS))
        check(tmp, "daily appends, grown from 0, %s, automatic partition" % kind, grow,
              "sparse=1" if sparse else "", lambda db, t: daily(db, t, DAYS))
    for pname, part in PARTITIONS:
        check(tmp, "random-order UPDATEs, %s" % pname, final, part, random_updates)
        check(tmp, "slab UPDATEs, %s" % pname, final, part, slab_updates)
        check(tmp, "DELETE boxes, %s" % pname, final, part, delete_boxes)
        check(tmp, "transposed load, %s" % pname, final, part, transposed)


if __name__ == "__main__":
    raise SystemExit(run_in_tmp(EXT, "write_size.", body))

#!/usr/bin/env python3
"""A year of daily appends (a program that prints figures, not a test): `make bench-growth`.

365 days of a 180 x 360 float32 grid, one INSERT ... SELECT and COMMIT per day, into arrays
with automatic partitions: created with extent 0 along time (it grows), created with its final
shape (365 days), and, for comparison, with the partition an extent-0 array got before the
partitions took growth into account (chunks of one day, 1 x 180 x 360; blocks 1 x 90 x 180).
For each: total time, file size, and two queries on the year (a time series at one cell, the
year's mean). Usage: bench_growth.py [DIR] (default: a temporary folder).
"""
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time

BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
EXT = os.path.join(BUILD, ".libs", "caterva")
DAYS = int(os.environ.get("DAYS", "365"))


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    db.execute("CREATE TABLE cells(lat INTEGER, lon INTEGER)")
    db.execute("WITH RECURSIVE n(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM n WHERE v < 359) "
               "INSERT INTO cells SELECT a.v, b.v FROM n a, n b WHERE a.v < 180")
    return db


def run(folder, name, options):
    path = os.path.join(folder, name)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', dtype='float32', dims='time,lat,lon', "
               "%s)" % (path, options))
    info = json.loads(db.execute("SELECT caterva_info('%s')" % path).fetchone()[0])
    t0 = time.perf_counter()
    for d in range(DAYS):
        db.execute("BEGIN")
        db.execute("INSERT INTO t(time, lat, lon, value) SELECT ?, lat, lon, "
                   "(lat * (179 - lat)) * 0.0078125 + ? * 0.25 - lon * 0.01 FROM cells", (d, d))
        db.execute("COMMIT")
    dt = time.perf_counter() - t0
    size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(path) for f in fs) \
        if os.path.isdir(path) else os.path.getsize(path)
    q = []
    for sql in ("SELECT sum(value) FROM t WHERE lat = 90 AND lon = 180",
                "SELECT avg(value) FROM t"):
        t1 = time.perf_counter()
        res = db.execute(sql).fetchone()[0]
        q.append((time.perf_counter() - t1, res))
    db.close()
    return info["chunkshape"], info["blockshape"], dt, size, q


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="bench_growth.")
    os.makedirs(folder, exist_ok=True)
    rows = [("created with extent 0 (grows)", "g0.b2nd", "shape='0,180,360'"),
            ("created with its final shape", "full.b2nd", "shape='%d,180,360'" % DAYS),
            ("extent 0 with the earlier automatic partition", "old.b2nd",
             "shape='0,180,360', chunks='1,180,360', blocks='1,90,180'")]
    print("bench_growth: %d daily appends of 180 x 360 float32 (one INSERT ... SELECT and COMMIT "
          "each, synchronous=full), in %s" % (DAYS, folder))
    print("\n| array | chunks | blocks | appends s | file bytes | vs final shape: size | time "
          "| time series at one cell ms | year mean ms |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    res = [run(folder, f, o) for _, f, o in rows]
    base = res[1]
    for (desc, _, _), (ch, bl, dt, size, q) in zip(rows, res):
        print("| %s | %s | %s | %.2f | %d | %.2fx | %.2fx | %.2f | %.1f |"
              % (desc, "x".join(map(str, ch)), "x".join(map(str, bl)), dt, size,
                 size / base[3], dt / base[2], q[0][0] * 1e3, q[1][0] * 1e3))
    same = all(abs(r[4][k][1] - base[4][k][1]) < 1e-6 * max(1.0, abs(base[4][k][1]))
               for r in res for k in range(2))
    print("\nsame query results in the three arrays: %s" % ("yes" if same else "NO"))
    if len(sys.argv) <= 1:
        shutil.rmtree(folder, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())

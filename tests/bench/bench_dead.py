"""What keeping files small costs (a program that prints figures, not a test): `make bench-dead`.

A contiguous file's commit writes its chunks, index and trailer after the committed end; what
they replace stays as dead bytes until a compaction rewrites the file (docs/guarantees.md,
"File size"). The table option max_dead= (percent of the live bytes, default 1) decides when.
This measures, in one run, the same writes with the default, with max_dead=50 (cheap small
commits, files up to 1.5x) and as a sparse frame (no dead bytes: a replaced chunk's file is
removed), each against the same values written once:

  1. issue 37's reproduction: 200 daily appends of 90x180 float32 into an array created with
     its final shape (chunks 100x90x92, blocks 25x23x23);
  2. a year of daily appends of 180x360 float32 into an array grown from extent 0;
  3. one-cell UPDATE commits (ROUNDS, default 40) into a copy of the demo temperatures
     (365x180x360 float32, 70 MB; made by tests/tools/mkdemo).

Usage: bench_dead.py [DIR] (default: a temporary folder). Environment: top_builddir.
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sqltap import array_size  # noqa: E402

BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
EXT = os.path.join(BUILD, ".libs", "caterva")
ROUNDS = int(os.environ.get("ROUNDS", "40"))
MODES = [("max_dead=1 (default)", ""), ("max_dead=50", ", max_dead=50"),
         ("sparse frame", ", sparse=1")]


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def remove(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)
    if os.path.exists(path + ".b2lock"):
        os.remove(path + ".b2lock")


def daily(folder, label, shape, part, days, nlat, nlon, extra):
    """Daily appends with extra options; (seconds, bytes, bytes of the values written once)."""
    path, once = os.path.join(folder, "daily.b2nd"), os.path.join(folder, "once.b2nd")
    remove(path)
    remove(once)
    db = connect()
    db.execute("CREATE TEMP TABLE cells(lat INTEGER, lon INTEGER)")
    db.execute("WITH RECURSIVE n(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM n WHERE v < %d) "
               "INSERT INTO cells SELECT a.v, b.v FROM n a, n b WHERE a.v < %d AND b.v < %d"
               % (max(nlat, nlon) - 1, nlat, nlon))
    db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='%s', dtype='float32', "
               "dims='day,lat,lon'%s%s)" % (path, shape, part, extra))
    t0 = time.perf_counter()
    for d in range(days):
        db.execute("BEGIN")
        db.execute("INSERT INTO g(day, lat, lon, value) SELECT %d, lat, lon, round(15 + 10 * "
                   "sin((%d + lat) / 20.0) + lon * 0.01, 2) FROM cells" % (d, d))
        db.execute("COMMIT")
    dt = time.perf_counter() - t0
    size = array_size(path)
    db.execute("CREATE VIRTUAL TABLE c USING caterva('%s', shape='%d,%d,%d', dtype='float32', "
               "dims='day,lat,lon'%s%s)" % (once, days, nlat, nlon, part,
                                            ", sparse=1" if "sparse" in extra else ""))
    db.execute("INSERT INTO c SELECT * FROM g")
    db.close()
    return dt, size, array_size(once)


def one_cell(folder, demo, extra):
    """ROUNDS one-cell UPDATE commits; (median ms, mean ms, file bytes after, bytes before)."""
    path = os.path.join(folder, "cells.b2nd")
    remove(path)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE d USING caterva('%s', value='celsius')" % demo)
    sparse = "sparse" in extra
    if sparse:  # the same layout as a sparse frame (without the labels: plain indices)
        db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='365,180,360', "
                   "dtype='float32', chunks='30,90,90', blocks='10,15,30', dims='time,lat,lon', "
                   "sparse=1)" % path)
        db.execute("INSERT INTO t(time, lat, lon, value) SELECT time_index, lat_index, "
                   "lon_index, celsius FROM d")
    else:
        shutil.copy(demo, path)
    db.close()
    cols = ("time", "lat", "lon") if sparse else ("time_index", "lat_index", "lon_index")
    before = array_size(path)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s'%s)"
               % (path, extra.replace(", sparse=1", "")))
    ts = []
    for k in range(ROUNDS):
        t0 = time.perf_counter()
        db.execute("BEGIN")
        db.execute("UPDATE t SET value = value + 1 WHERE %s = %d AND %s = %d AND %s = %d"
                   % (cols[0], k * 9 % 365, cols[1], k * 5 % 180, cols[2], k * 7 % 360))
        db.execute("COMMIT")
        ts.append(time.perf_counter() - t0)
    db.close()
    ts.sort()
    return ts[len(ts) // 2] * 1e3, sum(ts) / len(ts) * 1e3, array_size(path), before


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="bench_dead.")
    os.makedirs(folder, exist_ok=True)
    print("bench_dead: the same writes with max_dead=1 (the default), max_dead=50 and as a "
          "sparse frame; synchronous=full; in %s\n" % folder)
    print("| writes | mode | time s | bytes | written once | ratio |")
    print("|---|---|---:|---:|---:|---:|")
    for label, shape, part, days, nlat, nlon in (
            ("200 daily appends, 90x180, final shape 200x90x180", "200,90,180",
             ", chunks='100,90,92', blocks='25,23,23'", 200, 90, 180),
            ("365 daily appends, 180x360, grown from extent 0", "0,180,360", "", 365, 180,
             360)):
        for mname, extra in MODES:
            dt, size, once = daily(folder, label, shape, part, days, nlat, nlon, extra)
            print("| %s | %s | %.2f | %d | %d | %.3fx |" % (label, mname, dt, size, once,
                                                            size / once), flush=True)
    demo = os.path.join(folder, "temp.b2nd")
    subprocess.run([os.path.join(BUILD, "tests", "tools", "mkdemo"), folder], check=True,
                   stdout=subprocess.DEVNULL)
    print("\n| %d one-cell UPDATE commits, demo temperatures (365x180x360 float32) | mode | "
          "median ms | mean ms | bytes before | bytes after |" % ROUNDS)
    print("|---|---|---:|---:|---:|---:|")
    for mname, extra in MODES:
        med, mean, after, before = one_cell(folder, demo, extra)
        print("| | %s | %.2f | %.2f | %d | %d |" % (mname, med, mean, before, after), flush=True)
    if len(sys.argv) <= 1:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

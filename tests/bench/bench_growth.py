"""Daily appends into a growing array (a program that prints figures, not a test):
`make bench-growth`.

For each grid (GRIDS, default 30x50,90x180,180x360,721x1440) and dtype (float32, float64): an
array created with extent 0 along time and the automatic partition gets one INSERT ... SELECT
and COMMIT per day for the largest N of NS (default 150,365; synchronous=full); its file size
is taken after day N for each N. Against it, in the same run, for each N, an array created
with its final shape (N days) and the automatic partition, written in one INSERT ... SELECT.
Printed: both partitions, the bytes, their ratio (issue 37's goal: at most 1.15x), the time
of the appends, and two queries on both arrays after the last day -- a time series at one
cell and the mean over everything -- whose results must agree (exit status 1 otherwise).

Values: a smooth field with a seasonal cycle and a diurnal-scale wobble, rounded to 0.01 (the
precision of a typical gridded product), the same SQL expression for both arrays.
Usage: bench_growth.py [DIR] (default: a temporary folder). Environment: top_builddir, DTYPES
(default float32,float64).
"""
import json
import os
import shutil
import sqlite3
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sqltap import array_size  # noqa: E402

BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
EXT = os.path.join(BUILD, ".libs", "caterva")
GRIDS = [tuple(int(x) for x in g.split("x"))
         for g in os.environ.get("GRIDS", "30x50,90x180,180x360,721x1440").split(",")]
NS = [int(x) for x in os.environ.get("NS", "150,365").split(",")]
# SPARSE=1: the grown array is a sparse frame (its chunks are the same bytes; a commit of a
# contiguous file compacts it, which makes a year of appends to a large grid quadratic: see
# docs/performance.md, "Write sizes")
SPARSE = os.environ.get("SPARSE", "0") == "1"
VALUE = ("round(20.0 * (lat * (%(L)d - 1 - lat)) / (%(L)d * %(L)d) + 8 * sin(%(d)s / 58.0) "
         "- lon * 5.0 / %(M)d + sin((%(d)s + lon) / 9.0), 2)")
GOAL = 1.15


def connect(nlat, nlon):
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    db.execute("CREATE TEMP TABLE cells(lat INTEGER, lon INTEGER)")
    db.execute("WITH RECURSIVE n(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM n WHERE v < %d) "
               "INSERT INTO cells SELECT a.v, b.v FROM n a, n b WHERE a.v < %d"
               % (max(nlat, nlon) - 1, nlat))
    db.execute("DELETE FROM cells WHERE lon >= %d" % nlon)
    return db


def info(db, path):
    i = json.loads(db.execute("SELECT caterva_info(?)", (path,)).fetchone()[0])
    return "x".join(map(str, i["chunkshape"])), "x".join(map(str, i["blockshape"]))


def queries(db, name, nlat, nlon):
    out = []
    for sql in ("SELECT sum(value) FROM %s WHERE lat = %d AND lon = %d" % (name, nlat // 2,
                                                                          nlon // 3),
                "SELECT avg(value) FROM %s" % name):
        t0 = time.perf_counter()
        r = db.execute(sql).fetchone()[0]
        out.append((time.perf_counter() - t0, r))
    return out


def grow(db, folder, dtype, nlat, nlon):
    """Daily appends; {N: bytes after day N}, seconds for all days, partition, queries."""
    path = os.path.join(folder, "grow_%s_%dx%d.b2nd" % (dtype, nlat, nlon))
    db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='0,%d,%d', dtype='%s', "
               "dims='day,lat,lon', sparse=%d)" % (path, nlat, nlon, dtype, SPARSE))
    sizes, t0 = {}, time.perf_counter()
    for d in range(max(NS)):
        db.execute("BEGIN")
        db.execute("INSERT INTO g(day, lat, lon, value) SELECT %d, lat, lon, %s FROM cells"
                   % (d, VALUE % {"L": nlat, "M": nlon, "d": str(d)}))
        db.execute("COMMIT")
        if d + 1 in NS:
            sizes[d + 1] = array_size(path)
    dt = time.perf_counter() - t0
    return sizes, dt, info(db, path), queries(db, "g", nlat, nlon)


def final(db, folder, dtype, nlat, nlon, n):
    """One statement into an array of the final shape; bytes, seconds, partition, queries."""
    path = os.path.join(folder, "final_%s_%dx%d_%d.b2nd" % (dtype, nlat, nlon, n))
    name = "f%d" % n
    db.execute("CREATE VIRTUAL TABLE %s USING caterva('%s', shape='%d,%d,%d', dtype='%s', "
               "dims='day,lat,lon')" % (name, path, n, nlat, nlon, dtype))
    t0 = time.perf_counter()
    db.execute("WITH RECURSIVE n(d) AS (SELECT 0 UNION ALL SELECT d + 1 FROM n WHERE d < %d) "
               "INSERT INTO %s(day, lat, lon, value) SELECT d, lat, lon, %s FROM n, cells"
               % (n - 1, name, VALUE % {"L": nlat, "M": nlon, "d": "d"}))
    dt = time.perf_counter() - t0
    return os.path.getsize(path), dt, info(db, path), queries(db, name, nlat, nlon)


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="bench_growth.")
    os.makedirs(folder, exist_ok=True)
    print("bench_growth: daily appends (one INSERT ... SELECT and COMMIT per day) into an array "
          "grown from extent 0 (%s), against the final shape written in one statement; "
          "automatic partitions, default options; in %s"
          % ("a sparse frame" if SPARSE else "contiguous", folder))
    print("\n| grid | dtype | days | grown: chunks / blocks | grown bytes | final: chunks / "
          "blocks | final bytes | ratio | appends s | one statement s | series ms grown / "
          "final | mean ms grown / final |")
    print("|---|---|---:|---|---:|---|---:|---:|---:|---:|---:|---:|")
    ok, worst = True, 0.0
    for nlat, nlon in GRIDS:
        for dtype in os.environ.get("DTYPES", "float32,float64").split(","):
            db = connect(nlat, nlon)
            sizes, gdt, gpart, gq = grow(db, folder, dtype, nlat, nlon)
            for n in NS:
                fsize, fdt, fpart, fq = final(db, folder, dtype, nlat, nlon, n)
                ratio = sizes[n] / fsize
                worst = max(worst, ratio)
                last = n == max(NS)
                same = (not last) or all(abs(gq[k][1] - fq[k][1]) <= 1e-9 * max(1.0, abs(fq[k][1]))
                                         for k in range(2))
                ok = ok and same and ratio <= GOAL
                print("| %dx%d | %s | %d | %s / %s | %d | %s / %s | %d | %.3fx | %s | %.2f | %s | "
                      "%s |%s" % (nlat, nlon, dtype, n, gpart[0], gpart[1], sizes[n], fpart[0],
                                  fpart[1], fsize, ratio, "%.2f" % gdt if last else "",
                                  fdt, "%.2f / %.2f" % (gq[0][0] * 1e3, fq[0][0] * 1e3) if last
                                  else "", "%.1f / %.1f" % (gq[1][0] * 1e3, fq[1][0] * 1e3)
                                  if last else "", "" if same else " RESULTS DIFFER"),
                      flush=True)
            db.close()
            for f in os.listdir(folder):
                p = os.path.join(folder, f)
                shutil.rmtree(p) if os.path.isdir(p) else os.remove(p)
    print("\nworst ratio %.3fx (goal <= %.2fx): %s" % (worst, GOAL, "met" if ok else "NOT MET"))
    if len(sys.argv) <= 1:
        shutil.rmtree(folder, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

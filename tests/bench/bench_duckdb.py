#!/usr/bin/env python3
"""make bench-duckdb: the demo grid queried through this extension and through DuckDB, side
by side in one run; every query's answer checked equal; medians of warm runs printed as a
table for 2 threads and for 1 thread.

The DuckDB side (tests/bench/bench_duckdb.mjs, on DuckDB's Node package @duckdb/node-api,
installed by the make target into <build>/bench-duckdb) reads the grid in long format (time,
lat, lon, value; sorted by time, lat, lon; value FLOAT) as a Parquet file (ZSTD) and as a
native DuckDB table, both built once from a CSV export of the caterva table (the same labels)
and kept in <build>/bench-duckdb. Our queries are written the way docs/sql-reference.md
teaches: caterva_reduce for statistics of a day, a circle, the whole grid and climatologies,
plain SQL for boxes, meridians and point lookups.

Environment: top_builddir (default .), BENCH_RUNS (timed runs per query, default 5),
BENCH_THREADS (default "2,1").
"""
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import time

BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
SRC = os.path.dirname(os.path.abspath(__file__))
WORK = os.path.join(BUILD, "bench-duckdb")
EXT = os.path.join(BUILD, ".libs", "caterva")
DEMO = os.path.join(WORK, "demo", "temp.b2nd")
RUNS = int(os.environ.get("BENCH_RUNS", "5"))
THREADS = [int(x) for x in os.environ.get("BENCH_THREADS", "2,1").split(",")]

# (name, ours: check SQL, ours: timed SQL, DuckDB: check SQL, DuckDB: timed SQL)
QUERIES = [
    ("one day's map: min, avg, max",
     "SELECT min, mean, max FROM caterva_reduce('temp', 'stats', 'lat,lon') "
     "WHERE d0 = '2023-06-01'", None,
     "SELECT min(value), avg(value), max(value) FROM t WHERE time = DATE '2023-06-01'", None),
    ("a latitude circle, mean per month",
     "SELECT d0, value FROM caterva_reduce('temp', 'mean', 'time:month,lon') WHERE d1 = 40.5",
     None,
     "SELECT month(time) AS m, avg(value) FROM t WHERE lat = 40.5 GROUP BY m ORDER BY m", None),
    ("a box in degrees and dates",
     "SELECT count(value), avg(value) FROM temp WHERE lat BETWEEN 35 AND 45 AND lon BETWEEN 5 "
     "AND 15 AND time BETWEEN '2023-08-01' AND '2023-08-07'", None,
     "SELECT count(value), avg(value) FROM t WHERE lat BETWEEN 35 AND 45 AND lon BETWEEN 5 "
     "AND 15 AND time BETWEEN DATE '2023-08-01' AND DATE '2023-08-07'", None),
    ("a meridian, whole year",
     "SELECT min(value), avg(value), max(value) FROM temp WHERE lon = 0.5", None,
     "SELECT min(value), avg(value), max(value) FROM t WHERE lon = 0.5", None),
    ("1,000 point lookups",
     "SELECT count(t.value), sum(t.value) FROM pts p JOIN temp t ON t.time = p.time AND "
     "t.lat = p.lat AND t.lon = p.lon", None,
     "SELECT count(t.value), sum(t.value) FROM pts p JOIN t ON t.time = p.time AND "
     "t.lat = p.lat AND t.lon = p.lon", None),
    ("mean of all 23.6 M cells",
     "SELECT value FROM caterva_reduce('temp', 'mean', '')", None,
     "SELECT avg(value) FROM t", None),
    ("climatology: mean over time per (lat, lon)",
     "SELECT d1, d2, value FROM caterva_reduce('temp', 'mean', 'time')",
     "SELECT count(*), sum(value) FROM caterva_reduce('temp', 'mean', 'time')",
     "SELECT lat, lon, avg(value) FROM t GROUP BY lat, lon ORDER BY lat, lon",
     "SELECT count(*), sum(m) FROM (SELECT lat, lon, avg(value) AS m FROM t GROUP BY lat, lon)"),
    ("monthly climatology: mean per (month, lat, lon)",
     "SELECT d0, d1, d2, value FROM caterva_reduce('temp', 'mean', 'time:month')",
     "SELECT count(*), sum(value) FROM caterva_reduce('temp', 'mean', 'time:month')",
     "SELECT month(time) AS m, lat, lon, avg(value) FROM t GROUP BY m, lat, lon "
     "ORDER BY m, lat, lon",
     "SELECT count(*), sum(a) FROM (SELECT month(time) AS m, lat, lon, avg(value) AS a "
     "FROM t GROUP BY m, lat, lon)"),
]
# plain-SQL forms of the first two, for what is left to SQLite (not compared with DuckDB):
# (name, SQL, the rows it reads copied into an ordinary SQLite table, the same SQL on that
# table). The last is SQLite's floor for the query: the same rows and aggregate with no
# array behind them; the first is timed cold too (the table's block cache emptied), where
# blocks are decompressed on the context's threads ahead of SQLite.
PLAIN = [
    ("one day's map, plain SQL",
     "SELECT min(value), avg(value), max(value) FROM temp WHERE time = '2023-06-01'",
     "CREATE TEMP TABLE floor_day AS SELECT time, value FROM temp WHERE time = '2023-06-01'",
     "SELECT min(value), avg(value), max(value) FROM floor_day WHERE time = '2023-06-01'"),
    ("a latitude circle per month, plain SQL (strftime, GROUP BY)",
     "SELECT strftime('%m', time) AS m, avg(value) FROM temp WHERE lat = 40.5 GROUP BY m",
     "CREATE TEMP TABLE floor_circle AS SELECT time, lat, value FROM temp WHERE lat = 40.5",
     "SELECT strftime('%m', time) AS m, avg(value) FROM floor_circle WHERE lat = 40.5 "
     "GROUP BY m"),
]


def load():
    try:
        return os.getloadavg()
    except OSError:
        return (0, 0, 0)


def sh(args, **kw):
    subprocess.run(args, check=True, **kw)


def points():
    rng = random.Random(1000)
    pts = []
    for _ in range(1000):
        day, la, lo = rng.randrange(365), rng.randrange(180), rng.randrange(360)
        pts.append((day, -89.5 + la, -179.5 + lo))
    return pts


def connect(threads):
    os.environ["CATERVA_THREADS"] = str(threads)
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    db.execute("CREATE VIRTUAL TABLE temp USING caterva('%s')" % DEMO)
    db.execute("CREATE TABLE pts(time TEXT, lat REAL, lon REAL)")
    db.executemany("INSERT INTO pts VALUES (date('2023-01-01', '+' || ? || ' days'), ?, ?)",
                   points())
    return db


def setup(spec_path, spec):
    if not os.path.exists(DEMO):
        os.makedirs(os.path.dirname(DEMO), exist_ok=True)
        sh([os.path.join(BUILD, "tests", "tools", "mkdemo"), os.path.dirname(DEMO)],
           stdout=subprocess.DEVNULL)
    if os.path.exists(spec["parquet"]) and os.path.exists(spec["db"]):
        return
    print("building the CSV export, the Parquet file and the DuckDB table (once)...",
          flush=True)
    script = (".load %s\nCREATE VIRTUAL TABLE temp USING caterva('%s');\n.mode csv\n"
              ".output %s\nSELECT time, lat, lon, value FROM temp;\n" % (EXT, DEMO, spec["csv"]))
    sh([os.environ.get("SQLITE3_SHELL") or "sqlite3", "-batch", ":memory:"], input=script.encode())
    with open(spec["points_csv"], "w") as f:
        for day, la, lo in points():
            f.write("%s,%r,%r\n" % (time.strftime("%Y-%m-%d", time.gmtime(
                1672531200 + day * 86400)), la, lo))
    for p in (spec["parquet"], spec["db"], spec["db"] + ".wal"):
        if os.path.exists(p):
            os.remove(p)
    sh(["node", os.path.join(WORK, "bench_duckdb.mjs"), "setup", spec_path], cwd=WORK)
    os.remove(spec["csv"])


def ours(threads):
    db = connect(threads)
    out = []
    for name, check, timed, _, _ in QUERIES:
        rows = db.execute(check).fetchall()
        out.append({"name": name, "check": rows, "ms": warm_runs(db, timed or check)})
    plain = []
    for name, sql, make_floor, floor_sql in PLAIN:
        cold = []
        for _ in range(RUNS):  # a new connection each time: the block cache starts empty
            db2 = connect(threads)
            t0 = time.perf_counter()
            db2.execute(sql).fetchall()
            cold.append((time.perf_counter() - t0) * 1e3)
            db2.close()
        db.execute(make_floor)
        if sorted(db.execute(sql).fetchall()) != sorted(db.execute(floor_sql).fetchall()):
            sys.exit("bench-duckdb: the floor of %r gives another answer" % name)
        plain.append((name, warm_ms(db, sql), statistics.median(cold), warm_ms(db, floor_sql)))
    db.close()
    return out, plain


def warm_runs(db, sql):
    """The times of RUNS warm runs of sql (after one untimed), in ms."""
    db.execute(sql).fetchall()
    ms = []
    for _ in range(RUNS):
        t0 = time.perf_counter()
        db.execute(sql).fetchall()
        ms.append((time.perf_counter() - t0) * 1e3)
    return ms


def warm_ms(db, sql):
    """Median of RUNS warm runs of sql, in ms."""
    return statistics.median(warm_runs(db, sql))


def same(a, b):
    """Rows equal: integers exactly, text exactly (a month number may come as 1 or '01'),
    numbers within 1e-6 relative (float32 data summed in different orders)."""
    if len(a) != len(b):
        return False
    for ra, rb in zip(a, b):
        if len(ra) != len(rb):
            return False
        for x, y in zip(ra, rb):
            if isinstance(x, str) or isinstance(y, str):
                try:
                    x, y = float(x), float(y)
                except (TypeError, ValueError):
                    if str(x) != str(y):
                        return False
                    continue
            if x is None or y is None:
                if x is not y:
                    return False
                continue
            x, y = float(x), float(y)
            if abs(x - y) > 1e-6 * max(abs(x), abs(y), 1e-30):
                return False
    return True


def fmt(ms):
    return "%.2f ms" % ms if ms < 10 else "%.1f ms" % ms if ms < 1000 else "%.0f ms" % ms


def main():
    if not os.path.exists(EXT + ".so"):
        sys.exit("bench-duckdb: build the extension first")
    os.makedirs(WORK, exist_ok=True)
    sh(["cp", os.path.join(SRC, "bench_duckdb.mjs"), os.path.join(WORK, "bench_duckdb.mjs")])
    spec = {"csv": os.path.join(WORK, "temp.csv"), "parquet": os.path.join(WORK, "temp.parquet"),
            "db": os.path.join(WORK, "temp.duckdb"),
            "points_csv": os.path.join(WORK, "points.csv"), "runs": RUNS, "threads": 2,
            "queries": [{"name": q[0], "check": q[3], "time": q[4] or q[3]} for q in QUERIES]}
    spec_path = os.path.join(WORK, "spec.json")
    with open(spec_path, "w") as f:
        json.dump(spec, f)
    setup(spec_path, spec)
    load0 = load()
    print("load average before: %.2f %.2f %.2f (the machine has %d CPUs)" % (
        load0 + (os.cpu_count(),)))
    print("sizes: temp.b2nd %.1f MB, temp.parquet %.1f MB, temp.duckdb %.1f MB" % tuple(
        os.path.getsize(p) / 1e6 for p in (DEMO, spec["parquet"], spec["db"])))
    bad = []
    for threads in THREADS:
        spec["threads"] = threads
        with open(spec_path, "w") as f:
            json.dump(spec, f)
        mine, plain = ours(threads)
        p = subprocess.run(["node", os.path.join(WORK, "bench_duckdb.mjs"), "run", spec_path],
                           cwd=WORK, check=True, capture_output=True, text=True)
        duck = json.loads(p.stdout)
        print("\n%d thread%s (DuckDB %s; medians of %d warm runs, wall):\n" % (
            threads, "s" if threads > 1 else "", duck["version"], RUNS))
        print("| query | caterva | DuckDB on Parquet | DuckDB native | DuckDB native / caterva "
              "| same result |")
        print("|---|---:|---:|---:|---:|---|")
        for m, dp, dn in zip(mine, duck["parquet"], duck["native"]):
            ok = same(m["check"], dp["check"]) and same(m["check"], dn["check"])
            if not ok:
                bad.append("%s (%d threads): ours %r, parquet %r, native %r" % (
                    m["name"], threads, m["check"][:3], dp["check"][:3], dn["check"][:3]))
            a, b, c = (statistics.median(x["ms"]) for x in (m, dp, dn))
            print("| %s | %s | %s | %s | %.1fx | %s |" % (m["name"], fmt(a), fmt(b), fmt(c),
                                                          c / a, "yes" if ok else "NO"))
        print("\n| plain SQL | caterva | caterva, cold (block cache empty) | the same rows in a "
              "SQLite table (SQLite's floor) | caterva / floor |")
        print("|---|---:|---:|---:|---:|")
        for name, ms, cold, floor in plain:
            print("| %s | %s | %s | %s | %.2fx |" % (name, fmt(ms), fmt(cold), fmt(floor),
                                                   ms / floor))
    print("\nload average after: %.2f %.2f %.2f" % load())
    if bad:
        print("\nDIFFERENT ANSWERS:\n" + "\n".join(bad))
        sys.exit(1)


if __name__ == "__main__":
    main()

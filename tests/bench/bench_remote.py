#!/usr/bin/env python3
"""Remote reads of the demo grid (a program that prints figures, not a test): `make bench-remote`.

The demo grid (365 x 180 x 360 float32, demo/temp.b2nd) is served by nginx on 127.0.0.1 through
our fault front, which shapes every connection like a link to object storage (DELAY_MS before
each response, RATE bytes/s per connection; loopback alone has neither). For each query, on a
table opened anew (a cold cache): sequential waves, requests, bytes fetched, bytes the reads
needed (chunk headers and block offsets, the blocks' bytes), time; in the same run the same query
with whole-chunk fetching (remote_fetch=chunks), and the time curl takes to download the whole
file through the same front. Then, without shaping, a full scan of the remote copy against the
local file.

Usage: bench_remote.py [DEMO_DIR] (default: $top_builddir/demo, written by tests/tools/mkdemo
when missing). Environment: top_builddir, DELAY_MS (20), RATE (10000000), RUNS (3: the median).
"""
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "remote"))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import servers  # noqa: E402

BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
EXT = os.path.join(BUILD, ".libs", "caterva")
DELAY_MS = int(os.environ.get("DELAY_MS", "20"))
RATE = int(os.environ.get("RATE", "10000000"))
RUNS = int(os.environ.get("RUNS", "3"))

QUERIES = [
    ("one day's map: min, avg, max",
     "SELECT min(value), avg(value), max(value) FROM t WHERE time = '2023-07-15'"),
    ("a box in degrees and dates",
     "SELECT avg(value) FROM t WHERE time BETWEEN '2023-07-01' AND '2023-07-10' "
     "AND lat BETWEEN 40 AND 50 AND lon BETWEEN 0 AND 10"),
    ("a latitude circle over the year", "SELECT avg(value) FROM t WHERE lat = 45.5"),
    ("the full-year mean", "SELECT avg(value) FROM t"),
]


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def remote_stats(db):
    info = json.loads(db.execute("SELECT caterva_info('t')").fetchone()[0])
    r = info.get("remote", {})
    return [r.get(k, 0) for k in ("waves", "requests", "bytes", "needed")]


def run_query(url, sql, extra=""):
    """Open (timed), then the query on the cold table: (open s, query s, result, stats)."""
    db = connect()
    t0 = time.perf_counter()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s'%s)" % (url, extra))
    opened = time.perf_counter()
    s0 = remote_stats(db)  # not timed: caterva_info is a statement of its own
    t1 = time.perf_counter()
    res = db.execute(sql).fetchall() if sql else None
    t2 = time.perf_counter()
    s1 = remote_stats(db)
    db.close()
    return opened - t0, t2 - t1, res, [b - a for a, b in zip(s0, s1)], s0


def median_run(url, sql, extra=""):
    runs = [run_query(url, sql, extra) for _ in range(RUNS)]
    runs.sort(key=lambda r: r[1])
    return runs[len(runs) // 2]


def main():
    demo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(BUILD, "demo")
    if not os.path.exists(os.path.join(demo, "temp.b2nd")):
        subprocess.run([os.path.join(BUILD, "tests", "tools", "mkdemo"), demo], check=True,
                       stdout=subprocess.DEVNULL)
    work = tempfile.mkdtemp(prefix="bench_remote.")
    try:
        with servers.Servers(work, what="nginx,fronts", root=demo, delay_ms=DELAY_MS,
                             rate=RATE, cleanup=True) as s:
            os.environ.setdefault("NO_PROXY", "127.0.0.1")
            shaped = s.fault_url.rstrip("/") + "/temp.b2nd"
            direct = s.nginx_http.rstrip("/") + "/temp.b2nd"
            size = os.path.getsize(os.path.join(demo, "temp.b2nd"))
            print("bench_remote: demo/temp.b2nd (%d bytes) through a shaped link: %d ms before "
                  "each response, %.1f MB/s per connection; medians of %d runs on cold tables"
                  % (size, DELAY_MS, RATE / 1e6, RUNS))
            o = median_run(shaped, None)
            print("\nopen: %.3f s, %d waves, %d requests, %d bytes"
                  % (o[0], o[4][0], o[4][1], o[4][2]))
            print("\n| query | waves | requests | bytes fetched | bytes needed | fetched/needed "
                  "| time | whole chunks: bytes | whole chunks: time | speed-up |")
            print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
            for desc, sql in QUERIES:
                b = median_run(shaped, sql)
                w = median_run(shaped, sql, ", remote_fetch=chunks")
                assert b[2] == w[2], (desc, b[2], w[2])
                waves, reqs, got, need = b[3]
                print("| %s | %d | %d | %d | %d | %.2f | %.3f s | %d | %.3f s | %.2fx |"
                      % (desc, waves, reqs, got, need, got / need if need else 0.0, b[1],
                         w[3][2], w[1], w[1] / b[1] if b[1] > 0 else 0.0))
            # the same box on a copy with large chunks (a whole year of the grid per chunk), where
            # whole-chunk fetching must move far more than the box needs
            big = os.path.join(demo, "temp_bigchunks.b2nd")
            if not os.path.exists(big):
                db = connect()
                npy = os.path.join(work, "t.npy")
                db.execute("SELECT caterva_export(?, ?)", (os.path.join(demo, "temp.b2nd"), npy))
                db.execute("SELECT caterva_import(?, ?, NULL, 'chunks=365,45,90 blocks=10,15,30')",
                           (npy, big))
                db.close()
                os.remove(npy)
            bigurl = s.fault_url.rstrip("/") + "/temp_bigchunks.b2nd"
            box = "SELECT avg(value) FROM t WHERE d0 BETWEEN 181 AND 190 AND d1 BETWEEN 130 AND 140 " \
                  "AND d2 BETWEEN 180 AND 190"
            b = median_run(bigurl, box)
            w = median_run(bigurl, box, ", remote_fetch=chunks")
            assert b[2] == w[2]
            print("| the box (days 181-190, 10 x 10 cells), on a copy with 365 x 45 x 90 chunks "
                  "(%d bytes) | %d | %d | %d | %d | %.2f | %.3f s | %d | %.3f s | %.2fx |"
                  % (os.path.getsize(big), b[3][0], b[3][1], b[3][2], b[3][3],
                     b[3][2] / b[3][3] if b[3][3] else 0.0, b[1], w[3][2], w[1],
                     w[1] / b[1] if b[1] > 0 else 0.0))
            t0 = time.perf_counter()
            subprocess.run(["curl", "-s", "-o", "/dev/null", shaped], check=True)
            t_curl = time.perf_counter() - t0
            print("\nwhole file with curl through the same front: %.3f s" % t_curl)
            s.set_shape(delay_ms=0, rate=0)
            full = QUERIES[-1][1]
            loc = []
            for _ in range(RUNS):
                db = connect()
                db.execute("CREATE VIRTUAL TABLE t USING caterva('%s')"
                           % os.path.join(demo, "temp.b2nd"))
                t0 = time.perf_counter()
                db.execute(full).fetchall()
                loc.append(time.perf_counter() - t0)
                db.close()
            rem = [run_query(direct, full)[1] for _ in range(RUNS)]
            print("full scan without shaping: local %.3f s, remote (nginx on loopback) %.3f s: "
                  "%.2fx the local speed" % (statistics.median(loc), statistics.median(rem),
                                             statistics.median(loc) / statistics.median(rem)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

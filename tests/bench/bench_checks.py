#!/usr/bin/env python3
"""Cost of the block checks (issue 39; a program that prints figures, not a test).

On the demo grid (365 x 180 x 360 float32, demo/temp.b2nd, tests/tools/mkdemo), in one process,
the same queries on two tables of the same file, one with block_checks=on (the default) and one
with block_checks=off, alternating, ROUNDS times each (the first round warms the page cache and
is dropped):
  - full decode: caterva_reduce(t, 'stats', '') (std: no block answered from statistics, every
    block decoded on the context's threads and checked);
  - slice: length(caterva_slice(t)) of the whole grid (every block decoded into one buffer);
  - full scan: SELECT count(*), sum(v) FROM t (every block through the cursor, row by row);
  - box: the README's Europe box (6 blocks), 50 times.
Prints each query's median seconds with and without, and the ratio.

Usage: bench_checks.py [DEMO_DIR] (default: $top_builddir/demo, written when missing).
Environment: top_builddir, ROUNDS (6).
"""
import os
import sqlite3
import statistics
import subprocess
import sys
import time

BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
EXT = os.path.join(BUILD, ".libs", "caterva")
ROUNDS = int(os.environ.get("ROUNDS", "6"))
BOX = ("SELECT count(*), sum(v) FROM {t} WHERE time BETWEEN '2023-08-01' AND '2023-08-07' "
       "AND lat BETWEEN 35 AND 65 AND lon BETWEEN -10 AND 30")
QUERIES = [
    ("full decode (caterva_reduce stats)", "SELECT count FROM caterva_reduce('{t}', 'stats', '')", 1),
    ("whole-grid caterva_slice", "SELECT length(caterva_slice('{t}'))", 1),
    ("full scan (count, sum)", "SELECT count(*), sum(v) FROM {t}", 1),
    ("Europe box x50", BOX, 50),
]


def main():
    demo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(BUILD, "demo")
    path = os.path.join(demo, "temp.b2nd")
    if not os.path.exists(path):
        subprocess.run([os.path.join(BUILD, "tests", "tools", "mkdemo"), demo], check=True)
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(EXT)
    db.execute("CREATE VIRTUAL TABLE t_on USING caterva('%s', value='v', block_checks=on)" % path)
    db.execute("CREATE VIRTUAL TABLE t_off USING caterva('%s', value='v', block_checks=off)" % path)
    print("# block checks: %s, %d rounds (first dropped), median seconds" % (path, ROUNDS))
    for name, sql, reps in QUERIES:
        times = {"t_on": [], "t_off": []}
        answers = {}
        for r in range(ROUNDS):
            for t in (("t_on", "t_off") if r % 2 == 0 else ("t_off", "t_on")):
                q = sql.format(t=t)
                t0 = time.perf_counter()
                for _ in range(reps):
                    answers[t] = db.execute(q).fetchall()
                if r > 0:
                    times[t].append(time.perf_counter() - t0)
        on, off = statistics.median(times["t_on"]), statistics.median(times["t_off"])
        same = answers["t_on"] == answers["t_off"]
        print("%-36s on %.4f  off %.4f  on/off %.3f  (min on %.4f off %.4f)%s"
              % (name, on, off, on / off, min(times["t_on"]), min(times["t_off"]),
                 "" if same else "  ANSWERS DIFFER"))
    db.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

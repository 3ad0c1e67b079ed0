#!/usr/bin/env python3
"""Scans through the block cache decode a block's slab ahead on the connection's threads
(ext/vtab_cursor.c, cvPrefill) without reading more than before (TAP output).

An array written with tests/tools/mkarray is scanned with CATERVA_THREADS 1, 2 and 3, each
time on a new table (empty cache): a day, a latitude line over all days, a box, an IN list.
For every scan the answer is the same with any number of threads, the blocks decompressed
(caterva_blocks_read() before and after) are exactly those the selection intersects (as
test_sql_pushdown computes them), and none when repeated. A LIMIT decodes only what it reads;
a scan stopped after its first row (no LIMIT: SQLite could not tell) has decoded at most its
first slab (one row of chunks along the first dimension), fewer blocks than its box has.

Environment: top_builddir, CATERVA_PRELOAD.
"""
import os
import sqlite3
import sys

from sqltap import report, reexec_with_preload, run_in_tmp
from test_sql_pushdown import expected_blocks, make

reexec_with_preload()

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")
MKARRAY = os.path.join(BUILD, "tests", "tools", "mkarray")

SPEC = ("pf", [60, 40, 30], [20, 16, 12], [5, 4, 6], [])
SHAPE, CHUNKS, BLOCKS = SPEC[1], SPEC[2], SPEC[3]
# (description, WHERE clause, its box for counting blocks; None: count at least)
SELS = [
    ("a day", "d0 = 7", [(7, 7), (0, 39), (0, 29)]),
    ("a latitude line over all days", "d1 = 21", [(0, 59), (21, 21), (0, 29)]),
    ("a box", "d0 BETWEEN 13 AND 44 AND d1 BETWEEN 3 AND 30 AND d2 > 9",
     [(13, 44), (3, 30), (10, 29)]),
    ("an IN list", "d0 IN (2, 25, 26, 59) AND d2 < 12", None),
]


def connect(threads, path):
    os.environ["CATERVA_THREADS"] = str(threads)
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    db.execute("CREATE VIRTUAL TABLE c USING caterva('%s', cache_mb=256)" % path)
    return db


def read(db):
    return db.execute("SELECT caterva_blocks_read()").fetchone()[0]


def scans(path):
    answers, ok_blocks, ok_repeat, detail = {}, True, True, []
    for threads in (1, 2, 3):
        for desc, where, box in SELS:
            db = connect(threads, path)  # an empty cache
            sql = "SELECT count(value), sum(value), min(value) FROM c WHERE " + where
            b0 = read(db)
            answers.setdefault(desc, {})[threads] = db.execute(sql).fetchall()
            b1 = read(db)
            db.execute(sql).fetchall()
            b2 = read(db)
            db.close()
            if box is not None:
                want = expected_blocks(CHUNKS, BLOCKS, box)
                if b1 - b0 != want:
                    ok_blocks = False
                    detail.append("%s, %d threads: %d blocks, want %d" % (desc, threads,
                                                                          b1 - b0, want))
            if b2 != b1:
                ok_repeat = False
    same = all(a[1] == a[2] == a[3] for a in answers.values())
    report(same, "1, 2 and 3 threads: the same answers for %d scans" % len(SELS),
           repr(answers))
    report(ok_blocks, "through the cache with 1, 2 and 3 threads, exactly the blocks each "
           "selection intersects are decompressed", "\n".join(detail))
    report(ok_repeat, "repeated, no block is decompressed")


def early_end(path):
    rows_one_slab = expected_blocks(CHUNKS, BLOCKS, [(0, CHUNKS[0] - 1), (21, 21), (0, 29)])
    whole = expected_blocks(CHUNKS, BLOCKS, [(0, 59), (21, 21), (0, 29)])
    db = connect(2, path)
    b0 = read(db)
    got = db.execute("SELECT value FROM c WHERE d1 = 21 LIMIT 3").fetchall()
    limited = read(db) - b0
    report(len(got) == 3 and limited <= 1, "under a LIMIT, only the block read is decompressed",
           "%d blocks" % limited)
    db.close()
    stopped = {}
    for threads in (1, 2):
        db = connect(threads, path)
        b0 = read(db)
        cur = db.cursor()
        cur.execute("SELECT value FROM c WHERE d1 = 21")
        first = cur.fetchone()
        stopped[threads] = read(db) - b0  # another statement, while the scan is open
        cur.close()
        db.close()
    report(first is not None and stopped[1] == 1 and stopped[2] == rows_one_slab < whole,
           "a scan stopped after its first row: 1 thread decoded its block, 2 threads its "
           "first slab ahead and no more (%r blocks; a slab has %d, the box %d)" %
           (stopped, rows_one_slab, whole))


def main():
    if not os.path.exists(MKARRAY) or not os.path.exists(EXT + ".so"):
        print("1..0 # SKIP mkarray or the extension is not built")
        return 0

    def body(tmp):
        path = make(tmp, SPEC)
        scans(path)
        early_end(path)
    return run_in_tmp(EXT, "caterva-prefill-", body)


if __name__ == "__main__":
    sys.exit(main())

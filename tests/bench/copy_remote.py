#!/usr/bin/env python3
"""caterva_copy of a remote array to a local file (issue 38): an array of 200 stored chunks
(200x200x100 float32, chunks 10x20x100), contiguous and as a sparse frame, served by nginx on
127.0.0.1 behind the tests' fault front delaying every request by DELAY_MS; for each extension
given, two rounds in turn, each copy in a process of its own: its seconds, and its cells against
the source's.

  PYTHONPATH=tests/lib:tests/remote python3 tests/bench/copy_remote.py EXT[,EXT...] [DELAY_MS]

EXT: paths of caterva.so without the suffix (build/.libs/caterva); DELAY_MS default 10.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

import servers

CHILD = r'''
import json, sqlite3, sys, time
ext, url, dst = sys.argv[1:4]
db = sqlite3.connect(":memory:")
db.enable_load_extension(True)
db.load_extension(ext)
t0 = time.perf_counter()
n = db.execute("SELECT caterva_copy(?, ?)", (url, dst)).fetchone()[0]
t = time.perf_counter() - t0
db.execute("CREATE VIRTUAL TABLE c USING caterva('%s')" % dst)
print(json.dumps({"n": n, "s": t, "cells": db.execute("SELECT count(*), sum(value) FROM c").fetchall()}))
'''


def load(ext):
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(ext)
    return db


def main():
    exts = sys.argv[1].split(",")
    delay = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    tmp = tempfile.mkdtemp(dir="/var/tmp")
    src = os.path.join(tmp, "c.b2nd")
    db = load(exts[-1])
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='200,200,100', dtype='float32', "
               "chunks='10,20,100', blocks='5,10,50')" % src)
    db.execute("WITH RECURSIVE s(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM s WHERE x < 3999999) "
               "INSERT INTO t SELECT x / 20000, (x / 100) % 200, x % 100, (x * 7919) % 1000 * 0.5 "
               "FROM s")
    want = [list(r) for r in db.execute("SELECT count(*), sum(value) FROM t").fetchall()]
    db.close()
    print("| form | extension | seconds (rounds) | cells as the source's |")
    print("|---|---|---|---|")
    with servers.Servers(tmp, what="nginx,fronts", lifetime=600, cleanup=True) as s:
        s.fault.set_shape(delay_ms=delay)
        shutil.copyfile(src, os.path.join(s.root, "c.b2nd"))
        db = load(exts[-1])
        db.execute("SELECT caterva_copy(?, ?, 1)", (src, os.path.join(s.root, "c.sparse")))
        db.close()
        for name, form in (("c.b2nd", "contiguous"), ("c.sparse/", "sparse")):
            got = {e: [] for e in exts}
            for r in range(2):
                for e in exts:
                    dst = os.path.join(tmp, "out.b2nd")
                    if os.path.exists(dst):
                        os.remove(dst)
                    out = subprocess.run([sys.executable, "-c", CHILD, e,
                                          s.fault.url.rstrip("/") + "/" + name, dst],
                                         capture_output=True, text=True, check=True)
                    got[e].append(json.loads(out.stdout))
            for e in exts:
                print("| %s, %d chunks, %d ms a request | %s | %s | %s |"
                      % (form, got[e][0]["n"], delay, e,
                         ", ".join("%.3f" % g["s"] for g in got[e]),
                         all(g["cells"] == want for g in got[e])))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A value predicate over an array grown to many fill chunks (issue 38 part 8): for each
extension given, in processes of their own, `SELECT count(*) FROM g WHERE value > 6` on the
reopened array, twice (seconds), and the rise of the peak RSS (VmHWM) over the first.

  python3 tests/bench/valpred_fill.py DIR EXT[,EXT...] [ROUNDS]

The arrays (made once in DIR and kept): `shape='0,9'` int16 grown by one INSERT at row
3,353,630,237 (259,124 chunks of 32 blocks), and `shape='0,9'` float64 grown at row
30,182,672,135 (1,036,493 chunks of 32 blocks: the fuzz_sql input of 29 Nov), with the default
fill (zero chunks in the index) and with `fill=3` (chunks of one repeated value, stored as
bytes in the chunk section); the float64 one also with `fill=0.1`, whose blocks' sums are
chains of inexact additions (cat_bs_repeat_sum). EXT: paths of
caterva.so without the suffix; ROUNDS (default 2) rounds taking the extensions in turn.
"""
import json
import os
import subprocess
import sys

CHILD = r'''
import json, sqlite3, sys, time
ext, path = sys.argv[1], sys.argv[2]
def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(ext)
db.execute("CREATE VIRTUAL TABLE g USING caterva('%s')" % path)
out, h0 = [], hwm()
for k in range(2):
    t0 = time.perf_counter()
    rows = db.execute("SELECT count(*) FROM g WHERE value > 6").fetchall()
    out.append(time.perf_counter() - t0)
    if k == 0:
        rise = hwm() - h0
print(json.dumps({"rows": rows, "s": out, "rise": rise}))
'''

ARRAYS = [("int16", "int16", 3353630237, 2, ""), ("float64", "float64", 30182672135, 7, ""),
          ("int16_fill3", "int16", 3353630237, 2, "3"),
          ("float64_fill3", "float64", 30182672135, 7, "3"),
          ("float64_fill01", "float64", 30182672135, 7, "0.1")]


def make(ext, path, dtype, row, col, fill):
    import sqlite3
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(ext)
    db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='0,9', dtype='%s'%s)"
               % (path, dtype, ", fill=" + fill if fill else ""))
    db.execute("INSERT INTO g(d0, d1, value) VALUES(?, ?, 7)", (row, col))
    db.close()


def main():
    folder, exts = sys.argv[1], sys.argv[2].split(",")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    os.makedirs(folder, exist_ok=True)
    print("| array | extension | first query s | again s | peak RSS rise of the first, MB |")
    print("|---|---|---|---|---|")
    for name, dtype, row, col, fill in ARRAYS:
        path = os.path.join(folder, "valpred_%s.b2nd" % name)
        if not os.path.exists(path):
            make(exts[-1], path, dtype, row, col, fill)
        got = {e: [] for e in exts}
        for _ in range(rounds):
            for e in exts:
                out = subprocess.run([sys.executable, "-c", CHILD, e, path],
                                     capture_output=True, text=True, check=True)
                got[e].append(json.loads(out.stdout))
        for e in exts:
            g = got[e]
            assert all(x["rows"] == [[1]] for x in g), g
            print("| %s, grown%s | %s | %s | %s | %s |"
                  % (dtype, ", fill=" + fill if fill else "", e,
                     ", ".join("%.3f" % x["s"][0] for x in g),
                     ", ".join("%.3f" % x["s"][1] for x in g),
                     ", ".join("%.1f" % x["rise"] for x in g)))


if __name__ == "__main__":
    main()

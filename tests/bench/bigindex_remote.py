#!/usr/bin/env python3
"""Untimed counters of a remote array whose offsets index is large (issue 38 part 8): arrays of
real data made as tests/sql/test_sql_bigindex.py makes them (ROWS x 400 int8, chunks of 1 x 4,
a third of the chunks zero), served by nginx on 127.0.0.1; for each extension given, in a
process of its own: the open's waves, requests and bytes (caterva_info) and the rise of the
peak RSS (VmHWM) over the open and then over a one-cell query near the end.

  PYTHONPATH=tests/lib:tests/remote:tests/sql python3 tests/bench/bigindex_remote.py \\
      DIR ROWS[,ROWS...] EXT[,EXT...]

ROWS 1000 makes 10^5 chunks, 10000 makes 10^6; EXT: paths of caterva.so without the suffix
(build/.libs/caterva). Files are made in DIR once and kept.
"""
import json
import os
import shutil
import subprocess
import sys

import servers
import test_sql_bigindex as T

CHILD = r'''
import json, sqlite3, sys
ext, url, q = sys.argv[1], sys.argv[2], sys.argv[3]
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
db = sqlite3.connect(":memory:")
db.enable_load_extension(True)
db.load_extension(ext)
def remote():
    return json.loads(db.execute("SELECT caterva_info('u')").fetchone()[0]).get("remote", {})
r0 = rss()
db.execute("CREATE VIRTUAL TABLE u USING caterva('%s')" % url)
o, r1 = remote(), rss()
rows = db.execute(q).fetchall()
print(json.dumps({"open": o, "cell": remote(), "rss_open": r1 - r0, "rss_cell": rss() - r0,
                  "rows": rows}))
'''


def main():
    folder, sizes, exts = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
    os.makedirs(folder, exist_ok=True)
    print("| chunks | file bytes | index chunk bytes (blocks) | extension | open: waves, "
          "requests, bytes | after one cell: waves, bytes | peak RSS rise MB: open, cell |")
    print("|---|---|---|---|---|---|---|")
    with servers.Servers(folder, what="nginx", lifetime=3600, cleanup=True) as s:
        base = s.nginx_http.rstrip("/") + "/"
        for rows in (int(r) for r in sizes):
            path = os.path.join(folder, "bigindex_%d.b2nd" % rows)
            if not os.path.exists(path):
                T.make(path, rows)
            shutil.copyfile(path, os.path.join(s.root, os.path.basename(path)))
            lay = T.index_layout(path)
            q = "SELECT value FROM u WHERE d0 = %d AND d1 = 213" % (rows - 3)
            for ext in exts:
                out = subprocess.run([sys.executable, "-c", CHILD, ext,
                                      base + os.path.basename(path), q],
                                     capture_output=True, text=True, check=True)
                g = json.loads(out.stdout)
                o, c = g["open"], g["cell"]
                print("| %d | %d | %d (%d) | %s | %d, %d, %d | %d, %d | %.1f, %.1f |"
                      % (rows * T.COLS // T.C, os.path.getsize(path), lay["cbytes"],
                         len(lay["spans"]), ext, o["waves"], o["requests"], o["bytes"],
                         c["waves"], c["bytes"], g["rss_open"], g["rss_cell"]))


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Untimed counters of a remote array whose offsets index is large (issue 38 part 8): arrays of
real data made as tests/sql/test_sql_bigindex.py makes them (ROWS x 400 int8, chunks of 1 x 4,
a third of the chunks zero), served by nginx on 127.0.0.1; for each extension given, in a
process of its own: the open's waves, requests and bytes (caterva_info) and the rise of the
peak RSS (VmHWM) over the open and then over a one-cell query near the end.

  PYTHONPATH=tests/lib:tests/remote:tests/sql python3 tests/bench/bigindex_remote.py \\
      DIR ROWS[,ROWS...] EXT[,EXT...]

ROWS 1000 makes 10^5 chunks, 10000 makes 10^6; EXT: paths of caterva.so without the suffix
(build/.libs/caterva). Files are made in DIR once and kept. With SPARSE=1 each array is also
read as a sparse frame (a copy made with caterva_copy; its chunks.b2frame holds the index,
and two thirds of its chunks are files: 67,000 at 10^5 chunks).
"""
import json
import os
import shutil
import struct
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


def sparse_layout(folder):
    """The offsets index chunk of a sparse frame: it follows chunks.b2frame's header."""
    b = open(os.path.join(folder, "chunks.b2frame"), "rb").read()
    idx = struct.unpack(">I", b[11:15])[0]
    nbytes, bsize, cbytes = struct.unpack("<iii", b[idx + 4:idx + 16])
    return {"cbytes": cbytes, "spans": [0] * -(-nbytes // bsize)}


def forms(s, path, rows):
    """(kind, url, file bytes, index layout) of the array as served."""
    base = s.nginx_http.rstrip("/") + "/"
    shutil.copyfile(path, os.path.join(s.root, os.path.basename(path)))
    out = [("contiguous", base + os.path.basename(path), os.path.getsize(path),
            T.index_layout(path))]
    if os.environ.get("SPARSE") == "1":
        name = "bigindex_%d.sparse" % rows
        folder = os.path.join(s.root, name)
        db = T.connect()
        db.execute("SELECT caterva_copy(?, ?, 1)", (path, folder))
        db.close()
        size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(folder)
                   for f in fs)
        out.append(("sparse", base + name + "/", size, sparse_layout(folder)))
    return out


def main():
    folder, sizes, exts = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(",")
    os.makedirs(folder, exist_ok=True)
    print("| chunks | form | bytes | index chunk bytes (blocks) | extension | open: waves, "
          "requests, bytes | after one cell: waves, bytes | peak RSS rise MB: open, cell |")
    print("|---|---|---|---|---|---|---|---|")
    with servers.Servers(folder, what="nginx", lifetime=3600, cleanup=True) as s:
        for rows in (int(r) for r in sizes):
            path = os.path.join(folder, "bigindex_%d.b2nd" % rows)
            if not os.path.exists(path):
                T.make(path, rows)
            q = "SELECT value FROM u WHERE d0 = %d AND d1 = 213" % (rows - 3)
            for kind, url, size, lay in forms(s, path, rows):
                for ext in exts:
                    out = subprocess.run([sys.executable, "-c", CHILD, ext, url, q],
                                         capture_output=True, text=True, check=True)
                    g = json.loads(out.stdout)
                    o, c = g["open"], g["cell"]
                    print("| %d | %s | %d | %d (%d) | %s | %d, %d, %d | %d, %d | %.1f, %.1f |"
                          % (rows * T.COLS // T.C, kind, size, lay["cbytes"], len(lay["spans"]),
                             ext, o["waves"], o["requests"], o["bytes"], c["waves"], c["bytes"],
                             g["rss_open"], g["rss_cell"]))


if __name__ == "__main__":
    main()

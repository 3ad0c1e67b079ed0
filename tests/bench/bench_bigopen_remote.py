#!/usr/bin/env python3
"""Opening a big array over http against opening it locally (issue 38 part 8; not a test: it
prints figures). Run by `make bench-bigopen` after tests/bench/bench_bigopen.

For each size (chunks; default 10^3, 10^5, 10^6): an int16 array of one block a chunk (64
items), zero fill, made by the growth path through SQL (INSERTs past the end) with values in
its last chunk, so it has block statistics; served by nginx (tests/remote/servers.py) on
127.0.0.1. Each read runs in a process of its own: CREATE VIRTUAL TABLE on the local path and
on the http:// URL (the open), then one cell of the last chunk; timed, with the peak RSS
(VmHWM) and, over http, the waves, requests and bytes the open and the cell took
(caterva_info's "remote"). Medians over RUNS runs.

Usage: bench_bigopen_remote.py [RUNS [CHUNKS...]]   (environment: top_builddir, as make sets)
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "remote"))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import servers  # noqa: E402
from sqltap import connect_ext  # noqa: E402

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
C = 64

CHILD = r"""
import json, sqlite3, sys, time
ext, where, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = sqlite3.connect(":memory:")
db.enable_load_extension(True)
db.load_extension(ext)
def remote():  # the transfer counters (caterva_info), outside the timed parts; {} locally
    if "://" not in where:
        return {}
    info = json.loads(db.execute("SELECT caterva_info('u')").fetchone()[0])
    return info.get("remote", {})
t0 = time.perf_counter()
db.execute("CREATE VIRTUAL TABLE u USING caterva('%s')" % where)
topen = time.perf_counter() - t0
r0 = remote()
t1 = time.perf_counter()
cell = db.execute("SELECT value FROM u WHERE d0 = ?", (at,)).fetchall()
t2 = time.perf_counter()
r1 = remote()
hwm = [int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")][0]
print(json.dumps({"open": topen, "cell": t2 - t1, "rss": hwm / 1024.0, "value": cell,
                  "r0": r0, "r1": r1}))
"""


def make(path, n):
    db = connect_ext(EXT, isolation_level=None)
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='%d', dtype='int16', "
               "chunks='%d', blocks='%d', fill=0)" % (path, C, C, C))
    db.execute("INSERT INTO t VALUES(0, 1)")
    left = n
    while left > 1:  # at most 2^20 chunks a time
        step = min(left - 1, 1 << 19)
        db.execute("INSERT INTO t VALUES(?, 0)", (C * (n - left + step) - 1,))
        left -= step
    db.execute("INSERT INTO t VALUES(?, 0)", (C * n - 1,))
    db.execute("INSERT INTO t VALUES(?, 5)", (C * n - 3,))
    db.close()


def run(where, at):
    out = subprocess.run([sys.executable, "-c", CHILD, EXT, where, str(at)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout)


def med(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    sizes = [int(x) for x in sys.argv[2:]] or [1000, 100000, 1000000]
    work = tempfile.mkdtemp(prefix="bench_bigopen_remote.")
    src = os.path.join(work, "src")
    os.makedirs(src)
    print("bench_bigopen_remote: open (CREATE VIRTUAL TABLE) and one cell, local and over http "
          "(nginx on 127.0.0.1), medians of %d runs, each in a process of its own" % runs)
    print("%9s %8s | %8s %8s %7s | %8s %8s %7s %5s %5s %9s %5s %5s %9s" % (
        "chunks", "file MB", "open ms", "cell ms", "RSS MB", "open ms", "cell ms", "RSS MB",
        "waves", "reqs", "bytes", "waves", "reqs", "bytes"))
    print("%9s %8s | %26s | %29s %23s %21s" % ("", "", "local", "http", "open", "cell"))
    with servers.Servers(work, what="nginx", lifetime=3600, cleanup=True) as s:
        base = s.nginx_http.rstrip("/")
        for n in sizes:
            name = "big_%d.b2nd" % n
            path = os.path.join(src, name)
            make(path, n)
            shutil.copyfile(path, os.path.join(s.root, name))
            at = C * n - 3
            loc, rem = [], []
            run(path, at)  # the file into the page cache
            for _ in range(runs):
                loc.append(run(path, at))
                rem.append(run(base + "/" + name, at))
            for r in loc + rem:
                if r["value"] != [[5]]:
                    sys.exit("bench_bigopen_remote: cell %r, want 5" % r["value"])
            r = rem[0]
            o, c = r["r0"], {k: r["r1"][k] - r["r0"].get(k, 0) for k in r["r1"]}
            print("%9d %8.2f | %8.2f %8.2f %7.1f | %8.2f %8.2f %7.1f %5d %5d %9d %5d %5d %9d" % (
                n, os.path.getsize(path) / 1e6,
                med([x["open"] for x in loc]) * 1e3, med([x["cell"] for x in loc]) * 1e3,
                med([x["rss"] for x in loc]),
                med([x["open"] for x in rem]) * 1e3, med([x["cell"] for x in rem]) * 1e3,
                med([x["rss"] for x in rem]),
                o.get("waves", 0), o.get("requests", 0), o.get("bytes", 0),
                c.get("waves", 0), c.get("requests", 0), c.get("bytes", 0)))
            sys.stdout.flush()
            os.unlink(path)
            os.unlink(os.path.join(s.root, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())

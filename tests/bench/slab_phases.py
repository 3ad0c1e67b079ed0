#!/usr/bin/env python3
"""Where a slab UPDATE's wall time goes, from function-entry probes (root and perf needed).

    python3 tests/bench/slab_phases.py [-b BUILD] [-c zstd|lz4] [-r RUNS] [-t DIR]

Runs `BUILD/tests/bench/bench_write -U CODEC -r RUNS -t DIR` (the cube's slab UPDATE
`SET value = -1 WHERE a = K`, K = 17, 18, ...) under `perf record` with uprobes on a few
functions of the extension that each run once or a few times per UPDATE (none per row, which
would cost more than they measure), and prints, per UPDATE and as medians:

  pass 1     xFilter of the scan (cvCursorFilter) to the first chunk the writes take
             (cat_wcache_claim): SQLite's scan into its ephemeral table, where nothing is
             written yet
  pass 2     from there to xSync (cvOneSync): the 40,000 xUpdate calls, chunk after chunk
             (cat_wcache_claim once per chunk)
  flush      xSync to the end of the write cache's flush (cat_array_commit_finish): the chunks
             not yet re-encoded, on SQLite's thread, the pool's and the write-behind worker
  commit     the commit itself to the end of xCommit (cvOneCommit returns): the packed file
             written, synced, renamed, the directory synced
  worker     time the write-behind worker spent in chunk patches (patch_job) during the
             statement (passes 1 and 2), and during the flush; its start: from the start of
             pass 2 to the first patch the worker begins

The probes are removed at the end. Figures are wall time on this machine with the probes'
small cost included; compare them with each other, and the total with bench_write's own.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

FUNCS = ["cvCursorFilter", "cat_wcache_claim", "cvOneSync", "cat_array_commit_finish",
         "cvOneCommit%return", "patch_job", "patch_job%return"]


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, **kw)


def probe_name(f):
    return f.replace("%return", "__return")


def parse(text):
    """Events as (thread, seconds, name), in order."""
    ev = []
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3 or not parts[2].startswith("probe_caterva:"):
            continue
        ev.append((parts[0], float(parts[1].rstrip(":")), parts[2].split(":")[1]))
    return ev


def phases(ev):
    """Per UPDATE: pass 1, pass 2, flush, commit, worker during the statement, worker during
    the flush, the worker's start in pass 2, total (ms)."""
    main = next(t for t, _, n in ev if n == "cvCursorFilter")
    out, cur, open_job = [], None, {}
    for tid, t, name in ev:
        if tid == main and name == "cvCursorFilter":
            cur = {"filter": t, "wstmt": 0.0, "wflush": 0.0}
        elif cur is None:
            continue
        elif tid == main and name == "cat_wcache_claim":
            cur.setdefault("claim", t)
        elif tid == main and name == "cvOneSync":
            cur["sync"] = t
        elif tid == main and name == "cat_array_commit_finish":
            cur["finish"] = t
        elif tid == main and name == "cvOneCommit__return" and "finish" in cur:
            cur["end"] = t
            out.append(cur)
            cur = None
        elif tid != main and name == "patch_job":
            open_job[tid] = t
            cur.setdefault("wstart", t)
        elif tid != main and name == "patch_job__return" and tid in open_job:
            t0 = open_job.pop(tid)
            cut = cur.get("sync", t)
            cur["wstmt"] += max(0.0, min(t, cut) - t0)
            cur["wflush"] += max(0.0, t - max(t0, cut))
    rows = []
    for c in out:
        if "sync" not in c or "claim" not in c:
            continue
        start = c.get("wstart", c["sync"])
        rows.append(((c["claim"] - c["filter"]) * 1e3, (c["sync"] - c["claim"]) * 1e3,
                     (c["finish"] - c["sync"]) * 1e3, (c["end"] - c["finish"]) * 1e3,
                     c["wstmt"] * 1e3, c["wflush"] * 1e3, (start - c["claim"]) * 1e3,
                     (c["end"] - c["filter"]) * 1e3))
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-b", "--build", default="build")
    ap.add_argument("-c", "--codec", default="zstd")
    ap.add_argument("-r", "--runs", type=int, default=21)
    ap.add_argument("-t", "--tmp", default="/var/tmp")
    a = ap.parse_args()
    ext = os.path.abspath(os.path.join(a.build, ".libs", "caterva.so"))
    bench = os.path.join(a.build, "tests", "bench", "bench_write")
    added = []
    try:
        for f in FUNCS:
            run(["perf", "probe", "-q", "-x", ext, "--add", f])
            added.append(probe_name(f))
        with tempfile.TemporaryDirectory() as d:
            data = os.path.join(d, "perf.data")
            r = run(["perf", "record", "-q", "-o", data, "-e", "probe_caterva:*", bench, "-e",
                     ext, "-U", a.codec, "-r", str(a.runs), "-t", a.tmp], capture_output=True,
                    text=True)
            print("".join(l + "\n" for l in r.stdout.splitlines() if "slab UPDATE" in l), end="")
            text = run(["perf", "script", "-i", data, "-F", "tid,time,event"],
                       capture_output=True, text=True).stdout
    finally:
        for p in added:
            subprocess.run(["perf", "probe", "-q", "-d", "probe_caterva:" + p],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    rows = phases(parse(text))
    if not rows:
        print("no UPDATE seen in the probes' events", file=sys.stderr)
        return 1
    hdr = ("pass 1", "pass 2", "flush", "commit", "worker in statement", "worker in flush",
           "worker's start in pass 2", "total")
    print("| UPDATE | " + " | ".join(hdr) + " |")
    print("|---:|" + "---:|" * len(hdr))
    for i, row in enumerate(rows):
        print("| %d | " % (i + 1) + " | ".join("%.2f" % x for x in row) + " |")
    med = [statistics.median(col) for col in zip(*rows)]
    print("| median (ms) | " + " | ".join("%.2f" % x for x in med) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Reductions of the demo grid over a shaped link on a Dask cluster (issue 38 part 6): a program
that prints figures, not a test. `make bench-cluster`.

The demo grid (365 x 180 x 360 float32, chunks 30 x 90 x 90, demo/temp.b2nd) is served by nginx
on 127.0.0.1 through the fault front shaping every connection like a link to object storage
(DELAY_MS before each response, RATE bytes/s per connection; tests/remote/servers.py). Three
reductions with caterva_sqlite.reduce():

- the monthly climatology, reduce(url, 'mean', 'time:month') (12 x 180 x 360 rows): every
  block decoded (a block spans 10 days and several cells);
- the full-grid mean, reduce(url, 'mean', 'time,lat,lon'): answered from the block statistics
  the index carries when the blocks lie whole inside the query (then it measures the index and
  statistics reads, not the grid's bytes: the bytes column says which);
- the full-grid standard deviation, reduce(url, 'std', 'time,lat,lon'): statistics cannot
  answer it, every block is fetched and decoded (the decode-bound counterpart of the mean).

Each in one SQLite process (client=None: one caterva_reduce statement; the extension's default
decode threads) and on dask.distributed LocalClusters of 1, 2 and 4 worker processes
(threads_per_worker=1, CATERVA_THREADS=1 in the workers), all started before the first round;
the configurations are taken in turn within each of ROUNDS rounds, and every round starts cold
(each worker's and this process's connection closed, so no table, block cache or fetched chunk
survives). Per configuration: the median time, the speed-up against the one process, the
requests, sequential waves (requests whose times overlap, as bench_remote counts them) and
bytes the front relayed (its log), and the rates (MB/s in all, per worker). Each
link setting in LINKS is one http_connections= value per table (1: one 10 MB/s connection per
process, the network the bottleneck; 8: the default). Every cluster answer equals the
one-process answer (keys and n exactly, values within 1e-12 relative: the merge adds partial
sums, docs/python.md) and the answers of 1, 2 and 4 workers are bit-identical (asserted).

Then, without the network, the same reductions of the local file in one process with
CATERVA_THREADS=1: the decode rate of one core (compressed MB/s), through reduce() (the rows
made into a DataFrame) and as `SELECT count(*) FROM caterva_reduce(...)` (the reduction in C
alone).

Usage: bench_cluster.py [DEMO_DIR] (default $top_builddir/demo, written by tests/tools/mkdemo
when missing). Environment: top_builddir, top_srcdir, DELAY_MS (20), RATE (10000000),
ROUNDS (3), WORKERS (1,2,4), LINKS (1,8: http_connections values), QUERIES (clim,mean,std).
"""
import logging
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "remote"))
import servers  # noqa: E402
from bench_remote import waves_of  # noqa: E402

BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
SRC = os.path.abspath(os.environ.get("top_srcdir", os.path.join(HERE, "..", "..")))
os.environ["CATERVA_EXTENSION"] = os.path.join(BUILD, ".libs", "caterva.so")
os.environ["PYTHONPATH"] = os.path.join(SRC, "python") + \
    (":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
sys.path.insert(0, os.path.join(SRC, "python"))
import caterva_sqlite as cs  # noqa: E402

DELAY_MS = int(os.environ.get("DELAY_MS", "20"))
RATE = int(os.environ.get("RATE", "10000000"))
ROUNDS = int(os.environ.get("ROUNDS", "3"))
WORKERS = [int(x) for x in os.environ.get("WORKERS", "1,2,4").split(",")]
LINKS = [int(x) for x in os.environ.get("LINKS", "1,8").split(",")]
ALL_QUERIES = {
    "clim": ("monthly climatology, reduce(url, 'mean', 'time:month')", "mean", "time:month"),
    "mean": ("full-grid mean, reduce(url, 'mean', 'time,lat,lon')", "mean", "time,lat,lon"),
    "std": ("full-grid std, reduce(url, 'std', 'time,lat,lon')", "std", "time,lat,lon"),
}
QUERIES = [ALL_QUERIES[q] for q in os.environ.get("QUERIES", "clim,mean,std").split(",")]


def drop_connection():
    """This thread's caterva_sqlite connection closed: its tables, block caches and fetched
    chunks gone (the next use connects anew). Run in each worker's one task thread."""
    from caterva_sqlite import _conn
    db = getattr(_conn._local, "db", None)
    if db is not None:
        db.close()
    _conn._local.pid = None
    _conn._local.db = None
    return os.getpid()


def cold(clients):
    drop_connection()
    for c in clients:
        for w in c.scheduler_info()["workers"]:
            c.submit(drop_connection, workers=[w], allow_other_workers=False,
                     pure=False).result()


def front_mark(log):
    time.sleep(0.2)  # the front logs a request once its answer has gone out
    return len(servers.read_json_log(log))


def front_since(log, n0):
    time.sleep(0.2)
    ent = servers.read_json_log(log)[n0:]
    return len(ent), sum(e.get("bytes") or 0 for e in ent), waves_of(ent)


def same(a, b, exact):
    """Same columns and rows; dimension keys and n equal; values equal (exact) or within 1e-12
    relative."""
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return "columns %s / %s, rows %d / %d" % (list(a.columns), list(b.columns), len(a), len(b))
    for c in a.columns:
        for u, v in zip(a[c].to_list(), b[c].to_list()):
            if u == v or (u != u and v != v):
                continue
            if not exact and c == "value" and isinstance(u, float) and isinstance(v, float) \
                    and math.isclose(u, v, rel_tol=1e-12, abs_tol=1e-12):
                continue
            return "%s: %r != %r" % (c, u, v)
    return None


def mb(x):
    return x / 1e6


def shaped_part(demo, work, clusters):
    size = os.path.getsize(os.path.join(demo, "temp.b2nd"))
    with servers.Servers(work, what="nginx,fronts", root=demo, delay_ms=DELAY_MS, rate=RATE,
                         cleanup=True) as s:
        url = s.fault_url.rstrip("/") + "/temp.b2nd"
        log = s.fault_log
        print("bench_cluster: demo/temp.b2nd (%d bytes) from nginx through the front: %d ms "
              "before each response, %.1f MB/s per connection; %d rounds, configurations in "
              "turn, each round cold; medians" % (size, DELAY_MS, RATE / 1e6, ROUNDS))
        clients = [c for _, c in clusters]
        for conns in LINKS:
            opts = {"http_connections": str(conns)}
            print("\n### http_connections=%d per table (per process)\n" % conns)
            print("| reduction | configuration | time (median) | rounds | speed-up | requests | "
                  "sequential waves | bytes fetched | MB/s in all | MB/s per process |")
            print("|---|---|---:|---|---:|---:|---:|---:|---:|---:|")
            for desc, op, axes in QUERIES:
                configs = [("one SQLite process", None, 1)] + \
                    [("%d worker%s" % (n, "s" if n > 1 else ""), c, n) for n, c in clusters]
                times = {name: [] for name, _, _ in configs}
                traffic = {}
                answers = {}
                for _ in range(ROUNDS):
                    for name, client, _ in configs:
                        cold(clients)
                        n0 = front_mark(log)
                        t0 = time.perf_counter()
                        got = cs.reduce(url, op, axes, client=client, options=opts)
                        times[name].append(time.perf_counter() - t0)
                        traffic[name] = front_since(log, n0)
                        if name not in answers:
                            answers[name] = got
                        else:
                            bad = same(answers[name], got, exact=client is not None)
                            assert bad is None, (desc, name, "rounds differ", bad)
                base = answers[configs[0][0]]
                first = None
                for name, client, n in configs[1:]:
                    bad = same(base, answers[name], exact=False)
                    assert bad is None, (desc, name, "differs from one process", bad)
                    if first is not None:
                        bad = same(answers[first], answers[name], exact=True)
                        assert bad is None, (desc, name, "differs from", first, bad)
                    first = first or name
                t_base = statistics.median(times[configs[0][0]])
                for name, client, n in configs:
                    t = statistics.median(times[name])
                    reqs, nbytes, waves = traffic[name]
                    print("| %s | %s | %.3f s | %s | %.2fx | %d | %d | %d | %.1f | %.1f |"
                          % (desc, name, t, " ".join("%.2f" % x for x in times[name]),
                             t_base / t, reqs, waves, nbytes, mb(nbytes) / t, mb(nbytes) / t / n))
                    sys.stdout.flush()
                print("| %s | (answer) | %d rows, first value %r | | | | | | | |"
                      % (desc, len(base), base["value"].iloc[0]))


def local_part(demo):
    """The decode rate of one core: the reductions of the local file, CATERVA_THREADS=1."""
    path = os.path.join(demo, "temp.b2nd")
    size = os.path.getsize(path)
    os.environ["CATERVA_THREADS"] = "1"
    print("\n### The local file, one process, CATERVA_THREADS=1 (no network)\n")
    print("| reduction | time (median) | rounds | compressed MB/s | cells/s |")
    print("|---|---:|---|---:|---:|")
    for desc, op, axes in QUERIES:
        for how in ("reduce()", "SQL count(*)"):
            ts = []
            for _ in range(ROUNDS):
                drop_connection()
                t0 = time.perf_counter()
                if how == "reduce()":  # the rows made into a DataFrame
                    cs.reduce(path, op, axes)
                else:  # the reduction in C, its rows only counted
                    db = cs.connect()
                    db.execute("SELECT count(*) FROM caterva_reduce(?, ?, ?)",
                               (path, op, axes)).fetchall()
                    db.close()
                ts.append(time.perf_counter() - t0)
            t = statistics.median(ts)
            print("| %s, %s | %.3f s | %s | %.0f | %.3g |"
                  % (desc, how, t, " ".join("%.3f" % x for x in ts), mb(size) / t,
                     365 * 180 * 360 / t))
    del os.environ["CATERVA_THREADS"]
    drop_connection()


def main():
    from dask.distributed import Client, LocalCluster
    demo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(BUILD, "demo")
    if not os.path.exists(os.path.join(demo, "temp.b2nd")):
        subprocess.run([os.path.join(BUILD, "tests", "tools", "mkdemo"), demo], check=True,
                       stdout=subprocess.DEVNULL)
    os.environ.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    work = tempfile.mkdtemp(prefix="bench_cluster.")
    clusters = []
    try:
        os.environ["CATERVA_THREADS"] = "1"  # the workers inherit it: one core each
        for n in WORKERS:
            cl = LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                              dashboard_address=None, silence_logs=logging.ERROR)
            c = Client(cl)
            assert len(set(c.run(os.getpid).values())) == n
            clusters.append((n, c))
        del os.environ["CATERVA_THREADS"]  # this process: the extension's default threads
        shaped_part(demo, work, clusters)
        local_part(demo)
    finally:
        for _, c in clusters:
            cl = c.cluster
            c.close()
            cl.close()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

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

Writes (issue 36, item 6): the demo grid copied (unshaped) to an s3:// prefix on moto's S3
behind the SigV4 front, then written through the fault front before it, shaped the same way
(tests/remote/servers.py, what="s3w"): a one-day append (INSERT of day 365, 180 x 360 cells),
a one-cell UPDATE commit (the median of RUNS), and two processes appending days 366 and 367 at
once (each making its transaction again after BUSY, each through a front of its own shaped the
same, so that its requests are counted apart; both days then checked cell by cell). For each:
the requests by kind from the front's log, the sequential waves (requests whose times from
arrival to the answer's end overlap form one wave), the bytes uploaded (the request bodies the
front read, 412s included) against the chunks whose bytes changed plus the new index (compared
position by position through the library), and the time. The fronts shape uploads as well.

Usage: bench_remote.py [DEMO_DIR] (default: $top_builddir/demo, written by tests/tools/mkdemo
when missing). Environment: top_builddir, DELAY_MS (20), RATE (10000000), RUNS (3: the median),
PART (reads, the default; writes; or all), WRITES_LOG (a file: each write's lines of the
front's log are appended there, a blank line after each write).
"""
import json
import os
import shutil
import sqlite3
import statistics
import struct
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
PART = os.environ.get("PART", "reads")
WRITES_LOG = os.environ.get("WRITES_LOG")  # append each write's front log lines there

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


# ---- writes to S3 -------------------------------------------------------------------------

def f32(x):
    """x rounded to float32, as the array stores it."""
    return None if x is None else struct.unpack("<f", struct.pack("<f", x))[0]


def wave_groups(entries):
    """Sequential waves: requests whose [arrival, end] intervals overlap (directly or through
    others) are one wave. A list of waves, each a list of log entries, in time order."""
    waves, end = [], None
    for e in sorted(entries, key=lambda e: e["t"]):
        a, b = e["t"], e["t"] + e["ms"] / 1000.0
        if end is None or a > end:
            waves.append([])
            end = b
        else:
            end = max(end, b)
        waves[-1].append(e)
    return waves


def waves_of(entries):
    return len(wave_groups(entries))


def kind_of(e):
    """What a request is: 'PUT chunk', 'PUT index', 'GET chunk', 'GET index', 'LIST', ..."""
    path, _, query = e["target"].partition("?")
    what = "index" if path.endswith("/chunks.b2frame") else \
        "chunk" if path.endswith(".chunk") else "object"
    if e["method"] == "GET" and "list-type" in query:
        return "LIST"
    return "%s %s" % (e["method"], what)


def describe_waves(entries):
    """'GET index 1 | GET chunk 8 | PUT chunk 8 | PUT index 1': each wave's requests by kind."""
    out = []
    for w in wave_groups(entries):
        kinds = {}
        for e in w:
            k = kind_of(e) + ("" if e.get("status") in (200, 206, 204) else
                              " (%s)" % e.get("status"))
            kinds[k] = kinds.get(k, 0) + 1
        out.append(", ".join("%s %d" % kv for kv in sorted(kinds.items())))
    return " | ".join(out)


def object_sizes(s):
    """{key: size} of every object of the bucket (ListObjectsV2, every page)."""
    import urllib.parse
    import xml.etree.ElementTree as ET
    from sigv4 import s3_request
    ns = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}
    out, token = {}, None
    while True:
        q = "list-type=2" + ("&continuation-token=" + urllib.parse.quote(token) if token else "")
        st, _, body = s3_request(s.s3w_endpoint, "GET", "/%s?%s" % (s.bucket, q),
                                 s.credentials[0], s.region)
        assert st == 200, body
        root = ET.fromstring(body)
        for e in root.findall("s3:Contents", ns):
            out[e.findtext("s3:Key", namespaces=ns)] = int(e.findtext("s3:Size", namespaces=ns))
        token = root.findtext("s3:NextContinuationToken", namespaces=ns)
        if root.findtext("s3:IsTruncated", namespaces=ns) != "true" or not token:
            return out


class Writes:
    """The shaped S3 endpoints (one front each, so that each writer's requests are told apart),
    their logs, and what a write did."""

    def __init__(self, s, url, chunks, logs):
        self.s, self.url, self.chunks, self.logs = s, url, chunks, logs

    def mark(self):
        time.sleep(0.3)  # the front logs a request after its answer has gone out
        return [len(servers.read_json_log(log)) for log in self.logs]

    def measure(self, n0, before_chunks, since=None):
        """Requests by kind, waves (of each front's requests), bytes uploaded (the request
        bodies the fronts read), the bytes of the chunks whose bytes changed plus the new index.
        The requests: those each front logged after mark() gave n0 (and that arrived at or
        after the time since)."""
        time.sleep(0.3)
        per = [[e for e in servers.read_json_log(log)[k:] if since is None or e["t"] >= since]
               for log, k in zip(self.logs, n0)]
        per = [p for p in per if p]
        ent = [e for p in per for e in p]
        if WRITES_LOG:
            with open(WRITES_LOG, "a") as f:
                f.write("".join(json.dumps(e, sort_keys=True) + "\n" for e in ent) + "\n")
        sizes = object_sizes(self.s)
        up = sum(e.get("up", 0) for e in ent)
        after = self.chunks.of(self.url)
        assert isinstance(after, list), after
        changed = [i for i in range(len(after))
                   if i >= len(before_chunks) or after[i] != before_chunks[i]]
        index = sizes.get(self.url.split("/", 3)[3] + "chunks.b2frame", 0)
        need = sum(len(after[i]) for i in changed) + index
        kinds = {}
        for e in ent:
            kinds[kind_of(e)] = kinds.get(kind_of(e), 0) + 1

        def from_first_put(p):
            first = min((e["t"] for e in p if e["method"] == "PUT"), default=None)
            return [e for e in p if first is not None and e["t"] >= first]
        return {"requests": len(ent), "kinds": kinds,
                "waves": " + ".join(str(waves_of(p)) for p in per),
                "commit_waves": " + ".join(str(waves_of(from_first_put(p))) for p in per),
                "uploaded": up, "changed": len(changed), "needed": need, "index": index,
                "after": after, "detail": " || ".join(describe_waves(p) for p in per)}


APPENDER = r"""
import sqlite3, sys, time
sys.path.insert(0, %(lib)r)
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(%(ext)r)
url, ep, day, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
db.execute("CREATE VIRTUAL TABLE t USING caterva('%%s', endpoint='%%s')" %% (url, ep))
db.execute("CREATE TEMP TABLE day AS SELECT lat_index AS la, lon_index AS lo, "
           "value + %%d AS v FROM t WHERE time_index = 364" %% (day - 364))
while time.time() < go:
    time.sleep(0.005)
t0, tries = time.perf_counter(), 0
while True:
    tries += 1
    try:
        db.execute("BEGIN")
        db.execute("INSERT INTO t(time_index, lat_index, lon_index, value) "
                   "SELECT %%d, la, lo, v FROM day" %% day)
        db.execute("COMMIT")
        break
    except sqlite3.Error as e:
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        if "another writer committed first" not in str(e) or tries >= 20:
            raise
print("%%d %%.3f" %% (tries, time.perf_counter() - t0))
"""


def writes(demo, work):
    """Item 6 of issue 36: a one-day append, a one-cell UPDATE, two concurrent appenders."""
    from s3tap import Chunks
    chunks = Chunks()
    with servers.Servers(work, what="s3w", delay_ms=DELAY_MS, rate=RATE, cleanup=True) as s:
        cred = s.credentials[0]
        os.environ.update(AWS_ACCESS_KEY_ID=cred["access_key"],
                          AWS_SECRET_ACCESS_KEY=cred["secret_key"], AWS_REGION=s.region,
                          AWS_ENDPOINT_URL=s.s3w_endpoint, NO_PROXY="127.0.0.1,localhost",
                          no_proxy="127.0.0.1,localhost")
        for k in ("AWS_SESSION_TOKEN", "AWS_NO_SIGN_REQUEST", "AWS_DEFAULT_REGION"):
            os.environ.pop(k, None)
        url = "s3://%s/demo/" % s.bucket
        ep = s.s3w_fault_endpoint
        db = connect()
        t0 = time.perf_counter()
        db.execute("SELECT caterva_copy(?, ?)", (os.path.join(demo, "temp.b2nd"), url))
        print("\nwrites: demo/temp.b2nd copied to %s in %.1f s (unshaped); writes through the "
              "shaped front (%d ms, %.1f MB/s per connection)"
              % (url, time.perf_counter() - t0, DELAY_MS, RATE / 1e6))
        second = servers.FaultFront("127.0.0.1", s.s3w_sigv4.port,
                                    os.path.join(work, "s3w-fault-2.log"), None, 1, DELAY_MS,
                                    RATE).start()  # the second concurrent writer's link
        w = Writes(s, url, chunks, [s.s3w_fault.log_path, second.log_path])
        db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', endpoint='%s')" % (url, ep))
        db.execute("CREATE TEMP TABLE day AS SELECT lat_index AS la, lon_index AS lo, "
                   "value + 1 AS v FROM t WHERE time_index = 364")
        print("\n| write | time | requests (by kind) | sequential waves, each writer's (all / from the first "
              "PUT) | chunks changed | bytes uploaded | changed chunks + index | ratio |")
        print("|---|---:|---|---:|---:|---:|---:|---:|")
        details = []

        def row(what, secs, m):
            print("| %s | %.3f s | %d (%s) | %s / %s | %d | %d | %d | %.3f |"
                  % (what, secs, m["requests"], ", ".join("%s %d" % kv for kv in
                                                          sorted(m["kinds"].items())),
                     m["waves"], m["commit_waves"], m["changed"], m["uploaded"], m["needed"],
                     m["uploaded"] / m["needed"] if m["needed"] else 0.0))
            details.append("%s: index %d bytes; waves: %s" % (what, m["index"], m["detail"]))
            sys.stdout.flush()

        before = chunks.of(url)
        n0 = w.mark()
        t0 = time.perf_counter()
        db.execute("INSERT INTO t(time_index, lat_index, lon_index, value) "
                   "SELECT 365, la, lo, v FROM day")
        secs = time.perf_counter() - t0
        m = w.measure(n0, before)
        row("one-day append (day 365, 180 x 360 float32)", secs, m)
        got = db.execute("SELECT value FROM t WHERE time_index = 365 ORDER BY lat_index, "
                         "lon_index").fetchall()
        want = db.execute("SELECT v FROM day ORDER BY la, lo").fetchall()
        assert [r[0] for r in got] == [f32(r[0]) for r in want], "day 365 reads back wrong"
        # one-cell UPDATE commits
        res = []
        for k in range(RUNS):
            before = m["after"]
            n0 = w.mark()
            t0 = time.perf_counter()
            db.execute("UPDATE t SET value = value + 1 WHERE time_index = %d AND lat_index = %d "
                       "AND lon_index = %d" % (k * 9 % 365, k * 5 % 180, k * 7 % 360))
            secs = time.perf_counter() - t0
            m = w.measure(n0, before)
            res.append((secs, m))
        res.sort(key=lambda r: r[0])
        row("one-cell UPDATE commit (median of %d)" % RUNS, *res[len(res) // 2])
        db.close()
        # two writers appending disjoint days at once
        script = os.path.join(work, "appender.py")
        with open(script, "w") as f:
            f.write(APPENDER % {"lib": os.path.join(HERE, "..", "lib"), "ext": EXT})
        before = m["after"]
        n0 = w.mark()
        go = time.time() + 3.0
        procs = [subprocess.Popen([sys.executable, script, url, e, str(d), str(go)],
                                  stdout=subprocess.PIPE, text=True)
                 for d, e in ((366, ep), (367, second.url))]
        outs = [p.communicate(timeout=600)[0].split() for p in procs]
        m = w.measure(n0, before, since=go)  # not the opens and the reads of day 364 before
        tries = [int(o[0]) for o in outs]
        times = [float(o[1]) for o in outs]
        row("two writers appending days 366 and 367 at once (%s tries; %.3f / %.3f s each)"
            % ("+".join(map(str, tries)), times[0], times[1]), max(times), m)
        db = connect()
        db.execute("CREATE VIRTUAL TABLE t USING caterva('%s')" % url)
        def day_of(d):
            return db.execute("SELECT value FROM t WHERE time_index = %d ORDER BY lat_index, "
                              "lon_index" % d).fetchall()
        base = day_of(364)
        for d in (366, 367):  # each writer's day: day 364 + (d - 364), both commits present
            got = day_of(d)
            assert len(got) == len(base) == 180 * 360, (d, len(got))
            bad = sum(1 for (a,), (b,) in zip(got, base)
                      if a is None or b is None or a != f32(b + d - 364))
            assert bad == 0, (d, bad)
        db.close()
        second.stop()
        print("\n" + "\n".join("- " + d for d in details))


def main():
    demo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(BUILD, "demo")
    if not os.path.exists(os.path.join(demo, "temp.b2nd")):
        subprocess.run([os.path.join(BUILD, "tests", "tools", "mkdemo"), demo], check=True,
                       stdout=subprocess.DEVNULL)
    work = tempfile.mkdtemp(prefix="bench_remote.")
    try:
        if PART in ("all", "writes"):
            writes(demo, work)
        if PART == "writes":
            return 0
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

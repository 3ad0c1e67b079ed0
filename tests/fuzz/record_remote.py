#!/usr/bin/python3
"""Records the seeds of fuzz_remote (tests/fuzz/corpus/remote): real exchanges of each query kind
with real servers (tests/remote/servers.py: nginx over HTTP, s3rver behind the SigV4-checking
front, signed and anonymous), for a contiguous and a sparse array this extension writes.

Each seed is one run of tests/fuzz/fuzz_remote.c's LLVMFuzzerTestOneInput (through the
replay_fuzz_remote program of a normal build) in its recording mode: every request libcurl sends
goes to the real server, and its answer is both passed on and written into the seed, in
connection order. Replaying the seed then gives the same exchange without any server.

Usage: /usr/bin/python3 tests/fuzz/record_remote.py BUILD_DIR OUT_DIR     (needs nginx, s3rver)
"""
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

SERIES = "WITH RECURSIVE n(value) AS (SELECT 0 UNION ALL SELECT value + 1 FROM n WHERE value < 31) "

# scenario byte 0: bit 0 sparse name, bit 1 trailing '/', bits 2-3 protocol (fuzz_remote.c)
KINDS = {"c": 0, "s": 1, "sdir": 3}
PROTOS = {"http": 0, "s3": 1 << 2, "s3tok": 2 << 2, "s3anon": 3 << 2}
# scenario byte 1: the queries
QUERIES = {"open": 0, "slice": 1, "scan": 2 | (1 << 6), "reduce": 4, "reducepart": 8,
           "stale": 16 | 1, "stalelater": 32, "all": 1 | 2 | 4 | 8 | 16 | 32 | (3 << 6)}


def make_arrays(ext, src):
    """c.b2nd (contiguous, zstd) and s.b2frame (sparse, lz4): 16x12x10 float32, chunks 8x6x10,
    blocks 4x3x5, with block statistics and a few NULLs."""
    db = connect_ext(ext, isolation_level=None)
    if db is None:
        sys.exit("the extension is not built in " + ext)
    for name, extra in (("c.b2nd", "codec=zstd"), ("s.b2frame", "codec=lz4, sparse=1")):
        db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='16,12,10', dtype='float32', "
                   "chunks='8,6,10', blocks='4,3,5', %s)" % (os.path.join(src, name), extra))
        db.execute(SERIES + "INSERT INTO g(d0, d1, d2, value) SELECT a.value, b.value, c.value, "
                   "CASE WHEN (a.value * 7 + b.value * 3 + c.value) % 23 = 0 THEN NULL "
                   "ELSE a.value * 0.25 - b.value + (c.value % 7) * 1.5 END "
                   "FROM n a, n b, n c WHERE a.value < 16 AND b.value < 12 AND c.value < 10")
        db.execute("DROP TABLE g")
    db.close()


def hostport(url):
    return url.split("://", 1)[1].split("/", 1)[0]


def main():
    build, out = sys.argv[1], sys.argv[2]
    ext = os.path.abspath(os.path.join(build, ".libs", "caterva"))
    replay = os.path.abspath(os.path.join(build, "tests", "fuzz", "replay_fuzz_remote"))
    os.makedirs(out, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="record-remote-", dir="/dev/shm")
    try:
        src = os.path.join(tmp, "src")
        os.makedirs(src)
        make_arrays(ext, src)
        with servers.Servers(os.path.join(tmp, "srv"), what="nginx,s3,fronts") as s:
            s.publish(src, ("c.b2nd", "s.b2frame"))
            ups = {"http": hostport(s.nginx_http), "s3": hostport(s.s3_endpoint),
                   "s3tok": hostport(s.s3_endpoint), "s3anon": hostport(s.s3_anon_endpoint)}
            n = 0
            for proto, pb in PROTOS.items():
                for kind, kb in KINDS.items():
                    for q, qb in QUERIES.items():
                        if proto in ("s3tok", "s3anon") and q not in ("all", "open"):
                            continue
                        name = "%s-%s-%s" % (proto, kind, q)
                        d = os.path.join(tmp, "in", name)
                        os.makedirs(d)
                        with open(os.path.join(d, "scenario"), "wb") as f:
                            f.write(bytes([pb | kb, qb]))
                        env = dict(os.environ, FUZZ_REMOTE_UPSTREAM=ups[proto],
                                   FUZZ_REMOTE_RECORD=os.path.join(out, name))
                        r = subprocess.run([replay, d], env=env, capture_output=True, text=True)
                        if r.returncode != 0:
                            sys.exit("recording %s failed:\n%s%s" % (name, r.stdout, r.stderr))
                        n += 1
            print("recorded %d seeds into %s" % (n, out))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

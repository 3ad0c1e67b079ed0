#!/usr/bin/env python3
"""A remote array whose offsets index is large is read a block of its index at a time (TAP;
issue 38 part 8).

Arrays of real data -- stored chunks whose offsets do not repeat, a third of the chunks zero
(special entries) in a pseudo-random pattern, so that the index chunk compresses to about 2.7
bits an entry -- of 300,000 and 30,000 chunks (2-d int8, 3000 x 400 and 300 x 400, chunks of
1 x 4 items, one block each), served by nginx on 127.0.0.1. The large one's index chunk
(about 100 KB) is larger than the open's first request from the index on (64 KiB): it used to
be fetched whole at open and decoded whole (8 bytes a chunk); now the open fetches only its
header and block-start table (core/frame_remote_tail.c), and a query fetches and decodes the
blocks of the index its chunks' entries lie in (core/frame_index.c: 65,536 entries a block),
the blocks of one wave of chunks in one wave.

Checked: the open of 300,000 chunks fetches no more bytes than that of 30,000 plus a small
constant (the statistics' block-start table grows with the chunks); a one-cell query fetches
one block of the index more than the same query on the small array (whose index came whole
at open), and at most one wave more; a column slice whose 3,000 chunks lie in every block of
the index takes at most 8 waves, though its chunks' records of block statistics lie in 257
pages (read one a wave before the scan asked for a wave's pages together: 256 waves); rows over http equal the local file's for the slice, a
row and a box across blocks of the index (the box also with a cache of 1 MB, so that chunks and
their records are dropped while it is read); an index block made corrupt on the server gives a
clear error for a query that needs it, while a query needing another block still answers.

Environment: top_builddir (the build directory).
"""
import json
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "remote"))
from sqltap import connect_ext, report, run_in_tmp, skip  # noqa: E402

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
COLS = 400                  # items a row; chunks of 1 x C: COLS // C chunks a row
C = 4
ROWS = (3000, 300)          # 300,000 and 30,000 chunks
OPEN_SLACK = 16384          # open bytes: the large array's at most the small one's + this
                            # (the statistics' block-start table grows 4 bytes per 16 KiB of
                            # statistics; the index fetched whole would add 37 KB here)
STATS_PAGE = 65536 // 56    # chunks whose statistics records are read together
PROBE = 65536               # the open's first request from the index on (CAT_RTAIL_HEAD)

# A query in a process of its own (a fresh session: counters from zero) over http and the
# same over the local file; prints the rows and caterva_info's remote counters after each.
CHILD = r"""
import json, sqlite3, sys
ext, where, queries, opts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
db = sqlite3.connect(":memory:")
db.enable_load_extension(True)
db.load_extension(ext)
def remote():
    return json.loads(db.execute("SELECT caterva_info('u')").fetchone()[0]).get("remote", {})
db.execute("CREATE VIRTUAL TABLE u USING caterva('%s'%s)" % (where, opts))
out = {"open": remote(), "q": []}
for q in queries:
    try:
        rows = db.execute(q).fetchall()
        out["q"].append({"rows": rows, "after": remote()})
    except sqlite3.Error as e:
        out["q"].append({"error": str(e), "after": remote()})
print(json.dumps(out))
"""


def connect():
    return connect_ext(EXT, isolation_level=None)


def make(path, rows):
    """rows x COLS int8; chunk k zero when its hash says so, else values that vary."""
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='%d,%d', dtype='int8', "
               "chunks='1,%d', blocks='1,%d', fill=0)" % (path, rows, COLS, C, C))
    db.execute("WITH RECURSIVE s(x) AS (SELECT 0 UNION ALL SELECT x + 1 FROM s WHERE x < ?) "
               "INSERT INTO t SELECT x / %d, x %% %d, 1 + (x * 40503) %% 120 FROM s "
               "WHERE ((x / %d) * 2654435761 / 128) %% 3 != 0" % (COLS, COLS, C),
               (rows * COLS - 1,))
    db.close()


def index_layout(path):
    """The offsets index chunk of a contiguous frame: its offset, size and the byte spans of
    its blocks (from the fixed header: header length at 11, chunk section length at 39)."""
    b = open(path, "rb").read()
    hl = struct.unpack(">I", b[11:15])[0]
    idx = hl + struct.unpack(">Q", b[39:47])[0]
    nbytes, bsize, cbytes = struct.unpack("<iii", b[idx + 4:idx + 16])
    nb = -(-nbytes // bsize)
    starts = [struct.unpack("<i", b[idx + 32 + 4 * j:idx + 36 + 4 * j])[0] for j in range(nb)]
    ends = sorted(set(starts)) + [cbytes]
    spans = [min(e for e in ends if e > s) - s for s in starts]
    return {"at": idx, "cbytes": cbytes, "starts": starts, "spans": spans}


def run(where, queries, opts=""):
    out = subprocess.run([sys.executable, "-c", CHILD, EXT, where, json.dumps(queries), opts],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        report(False, "the reading process ran (%s)" % where, out.stderr[-2000:])
        return None
    return json.loads(out.stdout)


def delta(got, k, key):
    prev = got["open"] if k == 0 else got["q"][k - 1]["after"]
    return got["q"][k]["after"].get(key, -1) - prev.get(key, 0)


def body(tmp):
    import servers
    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        skip("large remote index", "needs nginx (sh tests/remote/deps.sh installs it)")
        return
    paths = {}
    for rows in ROWS:
        paths[rows] = os.path.join(tmp, "ix_%d.b2nd" % rows)
        make(paths[rows], rows)
    big, small = paths[ROWS[0]], paths[ROWS[1]]
    lay = index_layout(big)
    nchunks = ROWS[0] * COLS // C
    report(lay["cbytes"] > PROBE + 16384 and len(lay["spans"]) == -(-nchunks // 65536),
           "%d chunks of real data: an index chunk of %d bytes (more than the open's first "
           "request) in %d blocks" % (nchunks, lay["cbytes"], len(lay["spans"])), repr(lay))
    r_cell, c_cell = 2777, 213          # chunk 277,753: block 4 of the index
    queries = [
        "SELECT value FROM u WHERE d0 = %d AND d1 = %d" % (r_cell, c_cell),
        "SELECT d0, value FROM u WHERE d1 = 7 ORDER BY d0",           # 3,000 chunks, every block
        "SELECT sum(value), count(*) FROM u WHERE d0 BETWEEN 600 AND 1400",   # blocks 0 to 2
    ]
    bad = os.path.join(tmp, "ix_bad.b2nd")
    shutil.copyfile(big, bad)
    with open(bad, "r+b") as f:  # block 2 of the index: its compressed bytes overwritten
        f.seek(lay["at"] + lay["starts"][2] + 8)
        f.write(b"\xff" * (lay["spans"][2] - 16))
    bad_q = ["SELECT value FROM u WHERE d0 = 10 AND d1 = 5",              # block 0: answers
             "SELECT value FROM u WHERE d0 = 1500 AND d1 = 5"]            # block 2: corrupt
    with servers.Servers(tmp, what="nginx", lifetime=600, cleanup=True) as s:
        base = s.nginx_http.rstrip("/") + "/"
        for name, p in (("big.b2nd", big), ("small.b2nd", small), ("bad.b2nd", bad)):
            shutil.copyfile(p, os.path.join(s.root, name))
        got = run(base + "big.b2nd", queries)
        got_small = run(base + "small.b2nd", ["SELECT value FROM u WHERE d0 = 277 AND d1 = 213"])
        got_bad = run(base + "bad.b2nd", bad_q)
        # a cache of 1 MB: the box's chunks (about 36 bytes each) dropped with their records
        got_tight = run(base + "big.b2nd", queries[2:], ", remote_cache_mb=1")
    local = run(big, queries)
    local_bad = run(big, bad_q)
    if None in (got, got_small, got_bad, got_tight, local, local_bad):
        return
    o, o_small = got["open"], got_small["open"]
    report(o.get("bytes", 1 << 30) <= o_small.get("bytes", 0) + OPEN_SLACK
           and o.get("bytes", 1 << 30) < PROBE + lay["cbytes"],
           "the open of %d chunks fetches %d bytes in %d waves, %d chunks %d bytes: independent "
           "of the chunk count (the index alone: %d bytes)"
           % (nchunks, o.get("bytes", -1), o.get("waves", -1), nchunks // 10,
              o_small.get("bytes", -1), lay["cbytes"]), repr((o, o_small)))
    for k, q in enumerate(queries):
        ok = got["q"][k].get("rows") == local["q"][k].get("rows") and "rows" in got["q"][k]
        report(ok, "over http as in the file: %s (%d rows)"
               % (q, len(local["q"][k].get("rows", []))), repr(got["q"][k])[:2000])
    report(got_tight["q"][0].get("rows") == local["q"][2].get("rows") and
           "rows" in got_tight["q"][0],
           "with remote_cache_mb=1 (chunks and their records dropped as the box is read): %s "
           "as in the file" % queries[2], repr(got_tight["q"][0]))
    cb, cw = delta(got, 0, "bytes"), delta(got, 0, "waves")
    sb_, sw_ = delta(got_small, 0, "bytes"), delta(got_small, 0, "waves")
    report(min(lay["spans"]) - 2048 <= cb - sb_ <= max(lay["spans"]) + 2048 and cw <= sw_ + 1,
           "a one-cell query fetches one block of the index: %d bytes in %d waves, on the small "
           "array %d bytes in %d waves (index blocks of %s bytes)"
           % (cb, cw, sb_, sw_, lay["spans"]), repr((got["q"][0], got_small["q"][0])))
    sb, sw = delta(got, 1, "bytes"), delta(got, 1, "waves")
    pages = len(set((r * (COLS // C) + 7 // C) // STATS_PAGE for r in range(ROWS[0])))
    report(sw <= 8,
           "a column slice over 3,000 chunks in every block of the index takes %d waves, %d "
           "bytes (%d pages of statistics and the index blocks fetched a wave of chunks at a "
           "time)" % (sw, sb, pages),
           repr(got["q"][1]["after"]))
    e0, e1 = got_bad["q"]
    report(e0.get("rows") == local_bad["q"][0].get("rows") and "rows" in e0,
           "an index block made corrupt on the server: a query needing another block answers",
           repr(e0))
    report("error" in e1 and "offsets index" in e1["error"] and "rows" not in e1,
           "a query needing the corrupt block of the index fails clearly: %s"
           % e1.get("error", "(no error)"), repr(e1))


def main():
    return run_in_tmp(EXT, "caterva-bigindex-", body, ram=True)


if __name__ == "__main__":
    sys.exit(main())

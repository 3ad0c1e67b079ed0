#!/usr/bin/env python3
"""Opening a big array costs what one query needs (TAP; issue 38 part 8).

Arrays of a million chunks and more of one block each (int16, chunks of 64 items, zero fill,
made in a second by the growth path: INSERTs far past the end; real values in the last 1,000
chunks). Their block statistics (56 bytes a chunk) used to be decoded whole at open, a record
allocated per chunk: about 140 MB of peak memory for a million chunks; past 60 MB of them
(about 1.1 million chunks) an array silently had none, so value predicates decoded every
block. They are now read a page of chunks at a time when a query needs them.

Each array is read in a process of its own (its peak RSS, VmHWM, is its own): opening the
table, a value predicate on the box of the last 1,000 chunks (whose values are 0 to 6) and a
one-cell query raise the peak RSS by less than BOUND_MB (about 140 MB before at a million
chunks; the bound leaves room for a sanitizer's allocator); the predicate `value > 6` decodes
no block (the statistics answer for all 1,000, also at 1.2 million chunks, where there were
none), `value > 5` only the blocks holding a 6. The array is then written through (a cell,
committed) and a fresh connection finds every block's statistics present and right
(caterva_stats_check).

The offsets index (8 bytes a chunk) is read a block of the index chunk at a time too
(core/frame_index.c): the rise at a million chunks went from 11.7 MB to 3.2 MB (sanitizer
build: 18.2 to 8.7 MB), and BOUND_MB came down from 60 to 15 MB.

Over http (nginx started here on 127.0.0.1, tests/remote/servers.py), the million-chunk array,
as its contiguous file and as a sparse frame (a copy: its chunks.b2frame holds the same index
and trailer, read by range the same way, its index a block at a time),
opens in at most 2 waves of at most 3 requests and at most REMOTE_OPEN_BYTES (the block
statistics in its trailer, 650 KB, are read a block at a time as pages are needed; 718,696
bytes were fetched when the index and trailer came whole), the one-cell query takes at most 2
more waves (a sparse frame's version check riding the first of them: 3 before), and the
box's value predicates answer as locally from statistics fetched by range,
everything fetched staying under half the file.

An INSERT of one row far past the end of a `shape='0,9'` int16 array (the automatic
partition: 259,124 chunks of 32 blocks after it, 8.3 million blocks) used to build the whole
stored form of the statistics in memory at commit, twice (the encoded records and a copy kept
beside the compressed chunk; 330 MB each): a 666 MB rise of the peak RSS and 7.1 s, 2.75 GB at
a million chunks (a fuzz_sql finding). The form is now encoded and compressed a batch of blocks
at a time (core/chunk_enc.c, cat_chunk_build): the INSERT raises the peak by less than
GROW_BOUND_MB, and the grown array's statistics answer a value predicate over all of it
decoding only the one block that holds the row; that predicate, in a process of its own,
raises the peak RSS by less than QUERY_BOUND_MB (a zero chunk's statistics come from its
index entry: a record was made for each chunk before, 424 MB here and 1.7 GB at a million
float64 chunks).

Environment: top_builddir (the build directory).
"""
import json
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "remote"))
from sqltap import connect_ext, report, run_in_tmp, skip  # noqa: E402

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
SIZES = (1000000, 1200000)  # chunks: 56 and 67 MB of statistics (the old limit: 60 MB)
C = 64                      # items per chunk (and block)
BOX = 1000                  # chunks holding values at the end
BOUND_MB = 15.0             # the open, the box's predicates and a cell (~140 MB before)
REMOTE_OPEN_BYTES = 200000  # over http at a million chunks (718,696 when fetched whole)
GROW_AT = 30182672135       # the row that grows the array to 259,124 chunks
GROW_BOUND_MB = 150.0       # the growing INSERT's rise of the peak RSS (666 MB before)
QUERY_BOUND_MB = 15.0       # `value > 6` over the grown array, reopened (424 MB before)

CHILD = r"""
import json, sqlite3, sys
ext, path, first = sys.argv[1], sys.argv[2], int(sys.argv[3])
db = sqlite3.connect(":memory:")
db.enable_load_extension(True)
db.load_extension(ext)
def rss():
    # this process's peak RSS (VmHWM: ru_maxrss also counts the parent it was forked from)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
def blocks(sql, *args):
    b0 = db.execute("SELECT caterva_blocks_read()").fetchone()[0]
    rows = db.execute(sql, args).fetchall()
    return rows, db.execute("SELECT caterva_blocks_read()").fetchone()[0] - b0
before = rss()
db.execute("CREATE VIRTUAL TABLE u USING caterva('%s')" % path)
none = blocks("SELECT count(*) FROM u WHERE d0 >= ? AND value > 6", first)
six = blocks("SELECT count(*) FROM u WHERE d0 >= ? AND value > 5", first)
cell = db.execute("SELECT value FROM u WHERE d0 = ?", (first + 13,)).fetchall()
print(json.dumps({"rise": rss() - before, "none": none, "six": six, "cell": cell}))
"""

GROW_CHILD = r"""
import json, sqlite3, sys
ext, path, at, fill = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024.0
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(ext)
if at >= 0:  # the growing INSERT
    db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='0,9', dtype='int16'%s)"
               % (path, ", fill=" + fill if fill else ""))
    before = rss()
    db.execute("INSERT INTO g(d0, d1, value) VALUES(?, 3, 7)", (at,))
    rise = rss() - before
    info = json.loads(db.execute("SELECT caterva_info('g')").fetchone()[0])
    print(json.dumps({"rise": rise, "nchunks": info["nchunks"], "stats": info.get("blockstats")}))
else:  # reopened in a process of its own: a value predicate over all of it
    db.execute("CREATE VIRTUAL TABLE g USING caterva('%s')" % path)
    b0 = db.execute("SELECT caterva_blocks_read()").fetchone()[0]
    before = rss()
    rows = db.execute("SELECT count(*), max(d0) FROM g WHERE value > 6").fetchall()
    qrise = rss() - before
    read = db.execute("SELECT caterva_blocks_read()").fetchone()[0] - b0
    print(json.dumps({"rows": rows, "read": read, "qrise": qrise}))
"""


REMOTE_CHILD = r"""
import json, sqlite3, sys
ext, url, at, first = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
db = sqlite3.connect(":memory:")
db.enable_load_extension(True)
db.load_extension(ext)
def remote():
    return json.loads(db.execute("SELECT caterva_info('u')").fetchone()[0]).get("remote", {})
def blocks(sql, *args):
    b0 = db.execute("SELECT caterva_blocks_read()").fetchone()[0]
    rows = db.execute(sql, args).fetchall()
    return rows, db.execute("SELECT caterva_blocks_read()").fetchone()[0] - b0
db.execute("CREATE VIRTUAL TABLE u USING caterva('%s')" % url)
r0 = remote()
cell = db.execute("SELECT value FROM u WHERE d0 = ?", (at,)).fetchall()
r1 = remote()
none = blocks("SELECT count(*) FROM u WHERE d0 >= ? AND value > 6", first)
six = blocks("SELECT count(*) FROM u WHERE d0 >= ? AND value > 5", first)
print(json.dumps({"open": r0, "after": r1, "cell": cell, "none": none, "six": six,
                  "end": remote()}))
"""


SWAP_CHILD = r"""
import json, os, sqlite3, sys, time
ext, url, local, first, at = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
def conn():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(ext)
    return db
db, old, w = conn(), conn(), conn()
db.execute("CREATE VIRTUAL TABLE u USING caterva('%s')" % url)
old.execute("CREATE VIRTUAL TABLE u USING caterva('%s')" % url)
q = "SELECT count(*) FROM u WHERE d0 >= ? AND value > 6"
before = old.execute(q, (first,)).fetchall()
# the next chunk's cell: db reads the index block that holds the entry of at's chunk, not that
# chunk, so that its next statement's first wave asks for that chunk's object, which the
# commit below removes (a 404 beside the version check riding the wave: the change, not an
# error). (The box's value predicate fetches the box's small chunks whole: another connection.)
near = db.execute("SELECT value FROM u WHERE d0 = ?", (at + 64,)).fetchall()
w.execute("CREATE VIRTUAL TABLE l USING caterva('%s')" % local)
w.execute("UPDATE l SET value = 9 WHERE d0 = ?", (at,))
w.close()
index = os.path.join(local, "chunks.b2frame")
t = os.stat(index).st_mtime + 10  # another ETag even within the same second
os.utime(index, (t, t))
def run(sql, *args):
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.Error as e:
        return str(e)
cell = run("SELECT value FROM u WHERE d0 = ?", at)
after = run(q, first)
print(json.dumps({"before": before, "near": near, "cell": cell, "after": after}))
"""


def connect():
    return connect_ext(EXT, isolation_level=None)


def make(path, n):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='%d', dtype='int16', "
               "chunks='%d', blocks='%d', fill=0)" % (path, C, C, C))
    db.execute("INSERT INTO t VALUES(0, 1)")
    db.execute("INSERT INTO t VALUES(?, 0)", (C * (n // 2) - 1,))  # at most 2^20 chunks a time
    db.execute("INSERT INTO t VALUES(?, 0)", (C * n - 1,))
    db.execute("CREATE TEMP TABLE v(d0, value)")
    db.executemany("INSERT INTO v VALUES(?, ?)",
                   [(d0, d0 % 7) for d0 in range(C * (n - BOX), C * n)])
    db.execute("INSERT INTO t SELECT d0, value FROM v")  # one statement: one savepoint
    db.close()


def child(path, first):
    out = subprocess.run([sys.executable, "-c", CHILD, EXT, path, str(first)],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        report(False, "the reading process ran", out.stderr[-2000:])
        return None
    return json.loads(out.stdout)


def tree_bytes(path):
    """Bytes of a file, or of every file under a directory (a sparse frame)."""
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def remote(tmp, path, n, first):
    """The array over http, as a contiguous file and as a sparse frame (its chunks.b2frame
    holds the same index and trailer): open in at most 2 waves, a cell in at most 2 more."""
    import servers
    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        skip("%d chunks over http" % n, "needs nginx (sh tests/remote/deps.sh installs it)")
        return
    with servers.Servers(tmp, what="nginx", lifetime=600, cleanup=True) as s:
        shutil.copyfile(path, os.path.join(s.root, "big.b2nd"))
        db = connect()
        db.execute("SELECT caterva_copy(?, ?, 1)", (path, os.path.join(s.root, "big.sparse")))
        db.close()
        for name, kind in (("big.b2nd", "contiguous"), ("big.sparse/", "sparse")):
            remote_one(n, first, s.nginx_http.rstrip("/") + "/" + name,
                       tree_bytes(os.path.join(s.root, name)), kind)
        swapped(n, first, s.nginx_http.rstrip("/") + "/big.sparse/",
                os.path.join(s.root, "big.sparse"))


def swapped(n, first, url, local):
    """A sparse frame read by range whose chunks.b2frame is replaced (a commit by another
    writer) between two statements: the second answers from the new version."""
    out = subprocess.run([sys.executable, "-c", SWAP_CHILD, EXT, url, local, str(first),
                          str(first + 20)], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        report(False, "%d chunks over http (sparse), replaced: the reading process ran" % n,
               out.stderr[-2000:])
        return
    got = json.loads(out.stdout)
    at = first + 20
    report(got == {"before": [[0]], "near": [[(at + 64) % 7]], "cell": [[9]], "after": [[1]]},
           "%d chunks over http (sparse): after another writer's commit the next statements "
           "read the new version: the changed cell, whose old chunk object the commit removed "
           "(9), and the new statistics (`value > 6`: 0, then 1)" % n, repr(got))


def remote_one(n, first, url, size, kind):
    at = first + 13
    out = subprocess.run([sys.executable, "-c", REMOTE_CHILD, EXT, url, str(at), str(first)],
                         capture_output=True, text=True, check=False)
    what = "%d chunks over http (%s)" % (n, kind)
    if out.returncode != 0:
        report(False, "%s: the reading process ran" % what, out.stderr[-2000:])
        return
    got = json.loads(out.stdout)
    o, a = got["open"], got["after"]
    report(o.get("waves", 99) <= 2 and o.get("requests", 99) <= 3,
           "%s: the open takes %d waves, %d requests, %d bytes (file %d)"
           % (what, o.get("waves", -1), o.get("requests", -1), o.get("bytes", -1), size),
           repr(got))
    # a sparse frame's statement checks chunks.b2frame's version in its first wave (its chunk
    # objects do not carry it: a GET of its first bytes rides the wave; a HEAD of its own
    # before, one wave more than the contiguous file's)
    waves = 2
    report(got["cell"] == [[at % 7]] and a["waves"] - o["waves"] <= waves,
           "%s: a one-cell query reads its cell in %d waves (at most %d), %d bytes"
           % (what, a["waves"] - o["waves"], waves, a["bytes"] - o["bytes"]), repr(got))
    # The block statistics (56 bytes a chunk: 650 KB of the 719 KB file at a million chunks)
    # are not fetched at open but a block of their vlmetalayer at a time (frame_remote.c's
    # open_tail, cat_remote_bytes); the open fetched 718,696 bytes before (the sparse frame's
    # chunks.b2frame: 653,612 bytes whole before).
    report(o.get("bytes", 1 << 30) <= REMOTE_OPEN_BYTES,
           "%s: the open fetches %d bytes, at most %d (the array: %d)"
           % (what, o.get("bytes", -1), REMOTE_OPEN_BYTES, size), repr(o))
    # its offsets index (8 MB of entries) read a block at a time: none read at open, at most
    # one for the cell (caterva_info's remote.index_blocks; absent when decoded whole)
    report(o.get("index_blocks") == 0 and a.get("index_blocks", 99) <= 1,
           "%s: the offsets index is read a block at a time: %s blocks read at open, %s "
           "after the cell" % (what, o.get("index_blocks"), a.get("index_blocks")), repr(got))
    sixes = sum(1 for d0 in range(first, C * n) if d0 % 7 == 6)
    e = got["end"]
    # (the cell's chunk was decoded before: BOX - 1 or BOX blocks for `value > 5`)
    report(got["none"] == [[[0]], 0] and got["six"][0] == [[sixes]] and
           BOX - 1 <= got["six"][1] <= BOX,
           "%s: the box's value predicates answer from statistics read by range (no block "
           "decoded for `value > 6`, at most %d for `value > 5`)" % (what, BOX),
           repr((got["none"], got["six"])))
    report(e.get("bytes", 1 << 30) <= size // 2,
           "%s: open, cell and predicates fetch %d bytes in all, at most half the array"
           % (what, e.get("bytes", -1)), repr(e))


def one(tmp, n):
    path = os.path.join(tmp, "big_%d.b2nd" % n)
    first = C * (n - BOX)
    make(path, n)
    if n == SIZES[0]:
        remote(tmp, path, n, first)
    got = child(path, first)
    if got is None:
        return
    sixes = sum(1 for d0 in range(first, C * n) if d0 % 7 == 6)
    blocks6 = sum(1 for k in range(BOX) if C >= 7 or (k * C) % 7 + C > 6)
    report(got["none"] == [[[0]], 0],
           "%d chunks: a value predicate no cell of a box of %d chunks matches decodes no "
           "block (their statistics answer)" % (n, BOX), repr(got["none"]))
    report(got["six"] == [[[sixes]], blocks6],
           "%d chunks: `value > 5` decodes only the %d blocks holding a 6" % (n, blocks6),
           repr(got["six"]))
    report(got["cell"] == [[(first + 13) % 7]], "%d chunks: a one-cell query reads its cell"
           % n, repr(got["cell"]))
    report(got["rise"] < BOUND_MB,
           "%d chunks: the open, the box's predicates and a cell raise the peak RSS by %.1f MB "
           "(bound %.0f MB)" % (n, got["rise"], BOUND_MB))
    db = connect()
    db.execute("CREATE VIRTUAL TABLE u USING caterva('%s')" % path)
    db.execute("UPDATE u SET value = 9 WHERE d0 = ?", (C * (n // 3),))
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE u USING caterva('%s')" % path)
    chk = json.loads(db.execute("SELECT caterva_stats_check('u')").fetchone()[0])
    n9 = db.execute("SELECT count(*) FROM u WHERE value = 9").fetchone()[0]
    db.close()
    report(chk.get("wrong") == 0 and chk.get("with_stats") == chk.get("blocks") == n and n9 == 1,
           "%d chunks: written through and reopened, every block's statistics present and "
           "right" % n, repr(chk))
    os.unlink(path)


def growth(tmp, fill):
    """fill '': zero chunks in the index; '3': chunks of one repeated value stored as bytes."""
    path = os.path.join(tmp, "grown.b2nd")
    what = "fill=%s, " % fill if fill else ""
    got = {}
    for at in (GROW_AT, -1):
        out = subprocess.run([sys.executable, "-c", GROW_CHILD, EXT, path, str(at), fill],
                             capture_output=True, text=True, timeout=600)
        if out.returncode != 0:
            report(False, "%san INSERT growing an array to 259,124 chunks of 32 blocks, then a "
                   "value predicate over it" % what, out.stderr[-2000:])
            return
        got.update(json.loads(out.stdout))
    report(got["nchunks"] == 259124 and got["stats"] is True,
           "%san INSERT of one row grows the array to %d chunks, statistics kept"
           % (what, got["nchunks"]), repr(got))
    report(got["rise"] < GROW_BOUND_MB,
           "%sthe growing INSERT raises the peak RSS by %.1f MB (bound %.0f MB; 666 MB when the "
           "statistics' stored form was built whole)" % (what, got["rise"], GROW_BOUND_MB))
    report(got["rows"] == [[1, GROW_AT]] and got["read"] == 1,
           "%sreopened, `value > 6` over the whole array finds its row decoding %d block (the "
           "statistics of all 8.3 million blocks answer)" % (what, got["read"]), repr(got))
    # a fill chunk's statistics come from its one item, no record made (424 MB here before,
    # 1.7 GB at the fuzz input's 1,036,493 float64 chunks; with fill=3, whose chunks are
    # stored as bytes, 432 MB here before such stored chunks were read as fill too: their
    # headers are read in the file's map, whose pages count in the peak RSS, hence the file's
    # size in the bound)
    bound = QUERY_BOUND_MB + os.path.getsize(path) / 1e6
    report(got["qrise"] < bound,
           "%sthat predicate raises the peak RSS by %.1f MB (bound %.0f MB: %.0f and the file's "
           "size): the fill chunks' statistics need no records"
           % (what, got["qrise"], bound, QUERY_BOUND_MB), repr(got))
    os.unlink(path)


def body(tmp):
    growth(tmp, "")
    growth(tmp, "3")
    for n in SIZES:
        one(tmp, n)


def main():
    return run_in_tmp(EXT, "caterva-bigopen-", body, ram=True)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Block checks (issue 39, TAP): a block decoded from chunk bytes is checked against the
statistics this extension recorded for it, so that a byte flipped on disk in the middle of a
block's compressed bytes is a "corrupt block" error naming the array, the chunk and the block
-- never rows -- on every read path: a box, a full scan, a value predicate, caterva_slice and
caterva_reduce. The undamaged file passes on every path; the damaged one with block_checks=off
gives other answers than the undamaged one (the silently wrong rows the check stops); boxes
that miss the damaged block still answer; statistics written for other chunk bytes (a
foreign writer that kept our trailer) are not mistaken for damage when the chunk's blocks
start elsewhere. Contiguous and sparse frames. And a file that is no Blosc2 frame at all says
"not a Blosc2 frame", naming the path.

Environment: top_builddir, CATERVA_PRELOAD.
"""
import os
import shutil
import sqlite3
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sqltap import connect_ext, report, run_in_tmp  # noqa: E402

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
TOOLS = os.path.join(os.path.abspath(BUILD), "tests", "tools")

SERIES = ("WITH RECURSIVE n(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM n WHERE v < 99) ")
# chunk 1 is chunk (0, 1): d0 0..29, d1 50..99; its block 4 is block (2, 0): d0 20..29, d1 50..74
CHUNK, BLOCK = 1, 4
BOX_HIT = "d0 BETWEEN 20 AND 29 AND d1 BETWEEN 50 AND 74"
BOX_MISS = "d0 < 20"


def queries(path):
    """(path name, SQL) over table t; every one reads the damaged block."""
    return [
        ("a box", "SELECT count(*), sum(value) FROM t WHERE " + BOX_HIT),
        ("one cell of the block", "SELECT value FROM t WHERE d0 = 25 AND d1 = 60"),
        ("a full scan", "SELECT count(*), sum(value), min(value), max(value) FROM t"),
        ("rows in order", "SELECT d0, d1, value FROM t WHERE d1 >= 50 ORDER BY d0, d1"),
        ("a value predicate", "SELECT count(*), sum(value) FROM t WHERE value > 1.5"),
        ("caterva_slice", "SELECT hex(caterva_slice('%s', '[20,50]', '[30,75]'))" % path),
        ("caterva_reduce sum", "SELECT value FROM caterva_reduce('%s', 'sum', '')" % path),
        ("caterva_reduce mean over d0",
         "SELECT d1, value FROM caterva_reduce('%s', 'mean', 'd0') ORDER BY d1" % path),
    ]


def connect():
    return connect_ext(EXT, isolation_level=None)


def run(db, sql):
    try:
        return ("ok", db.execute(sql).fetchall())
    except sqlite3.Error as e:
        return ("error", str(e))


def make(path, sparse):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='60,100', dtype='float64', "
               "chunks='30,50', blocks='10,25', codec=lz4%s)" % (path, ", sparse=1" if sparse else ""))
    db.execute(SERIES + "INSERT INTO g(d0, d1, value) SELECT a.v, b.v, ((a.v * 7919 + b.v * "
               "104729) % 10007) * 0.000317 FROM n a, n b WHERE a.v < 60")
    db.execute("DROP TABLE g")
    db.close()


def answers(path, extra=""):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s'%s)" % (path, extra))
    got = [run(db, q) for _, q in queries(path)]
    got.append(run(db, "SELECT count(*), sum(value) FROM t WHERE " + BOX_MISS))
    db.close()
    return got


def flip(path, nchunk=CHUNK, nblock=BLOCK):
    out = subprocess.run([os.path.join(TOOLS, "flipblock"), path, str(nchunk), str(nblock)],
                         capture_output=True, text=True)
    return out.returncode == 0, out.stdout + out.stderr


def check_kind(tmp, sparse):
    kind = "sparse" if sparse else "contiguous"
    good = os.path.join(tmp, "good_%s.b2nd" % kind)
    bad = os.path.join(tmp, "bad_%s.b2nd" % kind)
    make(good, sparse)
    want = answers(good)
    report(all(w[0] == "ok" for w in want),
           "%s: the undamaged file answers on every path" % kind,
           [w for w in want if w[0] != "ok"])
    if sparse:
        shutil.copytree(good, bad)
    else:
        shutil.copyfile(good, bad)
    ok, out = flip(bad)
    report(ok, "%s: a byte of chunk %d block %d flipped on disk" % (kind, CHUNK, BLOCK), out)
    got = answers(bad)
    names = [n for n, _ in queries(bad)]
    for name, g in zip(names, got):
        report(g[0] == "error" and "corrupt block" in g[1] and bad in g[1] and
               "chunk %d," % CHUNK in g[1] and "block %d:" % BLOCK in g[1],
               "%s, %s over the damaged block: the corrupt-block error naming the array, the "
               "chunk and the block" % (kind, name), g)
    report(got[-1] == want[-1], "%s: a box that misses the damaged block answers as before"
           % kind, "%r %r" % (got[-1], want[-1]))
    # the table's option; caterva_slice and caterva_reduce given a path open it with the default
    off = answers(bad, ", block_checks=off")[:5]
    differ = [n for n, g, w in zip(names, off, want) if g != w]
    report(off[0] != want[0] and off[2] != want[2] and all(g[0] == "ok" for g in off),
           "%s: with block_checks=off the damaged table gives other answers without an error "
           "(what the check stops; differing: %s)" % (kind, ", ".join(differ)), off)
    on = answers(good, ", block_checks=on")
    report(on == want, "%s: block_checks=on answers the undamaged file the same" % kind)


def check_option(tmp):
    db = connect()
    path = os.path.join(tmp, "good_contiguous.b2nd")
    got = run(db, "CREATE VIRTUAL TABLE x USING caterva('%s', block_checks=maybe)" % path)
    report(got[0] == "error" and "block_checks must be on or off" in got[1],
           "block_checks= other than on or off: an error", got)
    db.close()


def check_foreign_same_layout(tmp):
    """Statistics copied from another array whose chunks start their blocks elsewhere (a foreign
    writer that kept our trailer): not used, and not taken for damage."""
    a, b = os.path.join(tmp, "fa.b2nd"), os.path.join(tmp, "fb.b2nd")
    for path, k in ((a, 7919), (b, 104723)):
        db = connect()
        db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='40,60', dtype='float32', "
                   "chunks='20,30', blocks='10,10')" % path)
        db.execute(SERIES + "INSERT INTO g(d0, d1, value) SELECT a.v, b.v, ((a.v * %d + b.v * "
                   "104729) %% 10007) * 0.001 FROM n a, n b WHERE a.v < 40 AND b.v < 60" % k)
        db.execute("DROP TABLE g")
        db.close()
    stale = os.path.join(tmp, "fstale.b2nd")
    shutil.copyfile(a, stale)
    subprocess.run([os.path.join(TOOLS, "cpstats"), b, stale], check=True)
    q = "SELECT count(*), sum(value) FROM t WHERE value > 5"
    res = []
    for p in (a, stale):
        db = connect()
        db.execute("CREATE VIRTUAL TABLE t USING caterva('%s')" % p)
        res.append((run(db, q), run(db, "SELECT sum(value) FROM t")))
        db.close()
    report(res[0] == res[1] and res[0][0][0] == "ok",
           "statistics written for other chunk bytes: the data's answers, no corrupt-block error",
           res)


def check_not_a_frame(tmp):
    """A file that is no Blosc2 frame at all says so, naming the path (it said "frame header:
    byte 0 is 0x2d, expected 0x9e"); a frame whose magic is right but whose header is damaged
    still gets the header's detail."""
    db = connect()
    text = os.path.join(tmp, "notes.b2nd")
    with open(text, "w") as f:
        f.write("--- these are notes, not an array\n" * 10)
    got = run(db, "CREATE VIRTUAL TABLE x USING caterva('%s')" % text)
    report(got[0] == "error" and "not a Blosc2 frame: '%s'" % text in got[1] and
           "byte 0" not in got[1], "a text file: \"not a Blosc2 frame\" naming the path", got)
    got = run(db, "SELECT caterva_info('%s')" % text)
    report(got[0] == "error" and "not a Blosc2 frame" in got[1],
           "caterva_info of a text file: \"not a Blosc2 frame\"", got)
    good = os.path.join(tmp, "good_contiguous.b2nd")
    bad = os.path.join(tmp, "badheader.b2nd")
    with open(good, "rb") as f:
        frame = bytearray(f.read())
    frame[10] ^= 0xFF  # the marker of header_len, after the magic
    with open(bad, "wb") as f:
        f.write(frame)
    got = run(db, "CREATE VIRTUAL TABLE y USING caterva('%s')" % bad)
    report(got[0] == "error" and "frame header: byte 10" in got[1] and
           "not a Blosc2 frame" not in got[1],
           "a frame with the right magic and a damaged header: the header's detail", got)
    db.close()


def all_checks(tmp):
    check_kind(tmp, False)
    check_kind(tmp, True)
    check_option(tmp)
    check_not_a_frame(tmp)
    check_foreign_same_layout(tmp)


def main():
    return run_in_tmp(EXT, "test_sql_integrity.", all_checks)


if __name__ == "__main__":
    sys.exit(main())

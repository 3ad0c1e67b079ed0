#!/usr/bin/env python3
"""Arrays the SQL functions keep open between calls (ext/fn_arrcache.c), TAP output.

caterva_slice() and caterva_info() keep recently used arrays open per connection; a kept
array must never answer for a file that changed. Each check below would fail if the cache
answered from the old state: writes through another connection (contiguous and sparse),
a file replaced by another of the same size, bytes changed in place, more paths than the
cache holds, a deleted file. Within one statement's run the calls read the state the first
call opened (the file replaced in the middle of a statement is read anew by the next).

Environment: top_builddir, CATERVA_PRELOAD.
"""
import os
import shutil
import sqlite3
import tempfile
import time

import numpy as np

from sqltap import plan, report, reexec_with_preload

reexec_with_preload()

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def q(s):
    return "'" + s.replace("'", "''") + "'"


def make(db, tmp, name, arr, opts=""):
    npy = os.path.join(tmp, name + ".npy")
    np.save(npy, arr)
    dst = os.path.join(tmp, name)
    db.execute("SELECT caterva_import(%s, %s, NULL, %s)" % (q(npy), q(dst), q(opts)))
    return dst


def slice_of(db, path, dtype, shape):
    blob = db.execute("SELECT caterva_slice(%s)" % q(path)).fetchone()[0]
    got = np.frombuffer(blob, dtype=dtype)
    return got.reshape(shape) if got.size == np.prod(shape) else got


def main():
    tmp = tempfile.mkdtemp(prefix="caterva-arrcache-")
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    plan()


def run(tmp):
    rng = np.random.default_rng(7)
    a = connect()
    b = connect()
    base = rng.integers(0, 1000, size=(20, 30)).astype("<i4")
    cont = make(a, tmp, "c.b2nd", base, "chunks=10,10 blocks=5,5")
    sparse = make(a, tmp, "s.b2frame", base, "chunks=10,10 blocks=5,5 sparse=1")
    others = [make(a, tmp, "o%d.b2nd" % i, base + i, "chunks=10,10") for i in range(6)]
    # Arrays are kept only for files whose last change is over 2 s old: let them settle.
    time.sleep(3)

    for path, kind in ((cont, "contiguous"), (sparse, "sparse")):
        first = slice_of(a, path, "<i4", base.shape)
        again = slice_of(a, path, "<i4", base.shape)
        report(np.array_equal(first, base) and np.array_equal(again, base),
               "%s: two calls read the array" % kind)
        b.execute("CREATE VIRTUAL TABLE w USING caterva(%s)" % q(path))
        b.execute("UPDATE w SET value = value + 1 WHERE d0 < 5")
        b.execute("DROP TABLE w")
        want = base.copy()
        want[:5] += 1
        got = slice_of(a, path, "<i4", base.shape)
        report(np.array_equal(got, want),
               "%s: a write through another connection is seen at once" % kind)
        info = a.execute("SELECT json_extract(caterva_info(%s), '$.shape')" % q(path)).fetchone()[0]
        b.execute("CREATE VIRTUAL TABLE w USING caterva(%s)" % q(path))
        b.execute("INSERT INTO w(d0, d1, value) VALUES (25, 0, 7)")  # grows the first axis
        b.execute("DROP TABLE w")
        info2 = a.execute("SELECT json_extract(caterva_info(%s), '$.shape')" % q(path)).fetchone()[0]
        report(info == "[20,30]" and info2 == "[26,30]",
               "%s: caterva_info sees the array grow (%s then %s)" % (kind, info, info2))

    # A file replaced by another array of the same size (rename over it: a new inode).
    time.sleep(3)
    slice_of(a, others[0], "<i4", base.shape)
    repl = make(a, tmp, "r.b2nd", base[::-1].copy(), "chunks=10,10")
    same_size = os.path.getsize(repl) == os.path.getsize(others[0])
    os.replace(repl, others[0])
    got = slice_of(a, others[0], "<i4", base.shape)
    report(np.array_equal(got, base[::-1]),
           "a file replaced by another (same size: %s) is read anew" % same_size)

    # Bytes changed in place, size unchanged: the kept state is not used.
    time.sleep(3)
    path = others[1]
    before = slice_of(a, path, "<i4", base.shape)
    with open(path, "r+b") as f:
        data = bytearray(f.read())
        f.seek(0)
        f.write(bytes(len(data)))  # zeros: no longer a frame at all
    try:
        slice_of(a, path, "<i4", base.shape)
        report(False, "a file overwritten in place (same size) is not read from the kept state")
    except sqlite3.Error as e:
        report(np.array_equal(before, base + 1) and path in str(e),
               "a file overwritten in place (same size) is not read from the kept state (%s)" % e)

    # One statement reads one state of a file: calls after the first in the same run use the
    # array the first opened (SQLite's auxiliary data; no stat() each); the next statement
    # sees the file that replaced it.
    path = others[3]
    flipped = make(a, tmp, "f.b2nd", (base + 3)[::-1].copy(), "chunks=10,10")

    def swap(n):
        if n == 0:
            os.replace(flipped, path)
        return n

    a.create_function("swap", 1, swap)
    rows = a.execute("SELECT caterva_slice(?), swap(column1) FROM (VALUES (0), (1), (2))",
                     (path,)).fetchall()
    got = [np.frombuffer(r[0], "<i4").reshape(base.shape) for r in rows]
    after = slice_of(a, path, "<i4", base.shape)
    report(all(np.array_equal(g, base + 3) for g in got) and
           np.array_equal(after, (base + 3)[::-1]),
           "a statement reads one state of a file replaced while it runs; the next one the "
           "new file")

    # More paths than the cache holds, twice round: every answer right.
    grown = np.zeros((26, 30), "<i4")  # the sparse array after the writes above
    grown[:20] = base
    grown[:5] += 1
    grown[25, 0] = 7
    ok = True
    for _ in range(2):
        for i, p in enumerate(others[2:] + [sparse]):
            want = (grown if p == sparse else (base + 3)[::-1] if p == others[3]
                    else base + 2 + i)
            got = slice_of(a, p, "<i4", want.shape)
            if got.shape != want.shape or not np.array_equal(got, want):
                ok = False
    report(ok, "five paths in turn, twice: each read right")

    # A deleted file is an error, not its kept state.
    path = others[2]
    slice_of(a, path, "<i4", base.shape)
    os.remove(path)
    try:
        slice_of(a, path, "<i4", base.shape)
        report(False, "a deleted file is an error")
    except sqlite3.Error as e:
        report("cannot open" in str(e), "a deleted file is an error (%s)" % e)
    a.close()
    b.close()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Writes through the caterva virtual table: ROLLBACK and failed statements leave the array
byte-identical (TAP output).

On a contiguous file and a sparse directory, with the block cache and without (cache_mb=0):
a transaction with many writes, growth, nested savepoints and a failing statement, rolled
back; an autocommit INSERT ... SELECT of 960 rows (whole chunks, growth) failing at its last
row; an autocommit UPDATE of every cell failing at the last; a DELETE of every cell plus
growth, rolled back. After each, the file (or every file of the directory) holds the same
bytes as before, no other file is left beside it, and this connection and a new one read the
old content. A statement failing inside a transaction that then commits leaves nothing of its
own; a ROLLBACK after that commit is byte-identical again.

Environment: top_builddir (the build tree), CATERVA_PRELOAD (ASan runtime to preload when the
extension is built with ASan).
"""
import os
import sys
import tempfile

from sqltap import report
from writetap import connect, content, create, fresh_content, main, norm, snap, try_exec

# every cell of d0 < 10 (the creation shape) but every fifth, from i = 0..479
FILL_SOME = ("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 479) "
             "INSERT INTO t SELECT i / 48, (i / 6) % 8, i % 6, i * 0.25 FROM c WHERE i % 5 <> 0")


def rows_from(first_row, n, value):
    """INSERT of n cells from row first_row on (whole rows of 8 x 6 cells), value an
    expression of i."""
    return ("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < %d) "
            "INSERT INTO t SELECT %s, (i / 6) %% 8, i %% 6, %s FROM c" % (
                n - 1, "i / 48" if first_row == 0 else "%d + i / 48" % first_row, value))


def one_array(tmp, sparse, cache):
    label = "%s%s" % ("sparse" if sparse else "contiguous", cache)
    path = os.path.join(tempfile.mkdtemp(dir=tmp), "b.b2nd")
    db = connect()
    create(db, "t", path, "shape='10,8,6', dtype='float32', chunks='4,4,3', blocks='2,2,3', "
           "sparse=%d%s" % (sparse, cache))
    db.execute(FILL_SOME)
    s0 = snap(path)
    c0 = content(db, "t", 3)

    def same(what):
        s = snap(path)
        c = content(db, "t", 3)
        co = fresh_content(path, 3)
        report(s == s0 and c == c0 and co == c0,
               "%s: %s leaves the array byte-identical and reading the old content" %
               (label, what),
               "names %r vs %r; bytes equal %s; content equal %s / other connection %s" % (
                   s[0], s0[0], s[1] == s0[1], c == c0, co == c0))

    def fails_with(sql, want, desc):
        e = try_exec(db, sql)
        report(e is not None and norm(e) == want, "%s: %s fails with its message" % (label, desc),
               repr(e))

    # a transaction with many writes, growth and savepoints, rolled back
    db.execute("BEGIN")
    db.execute("UPDATE t SET value = value + 1 WHERE d0 < 6")
    db.execute("INSERT INTO t VALUES(13, 0, 0, 5.5)")
    db.execute("SAVEPOINT a")
    db.execute(rows_from(14, 192, "-i"))
    db.execute("SAVEPOINT b")
    db.execute("DELETE FROM t WHERE d1 BETWEEN 2 AND 5")
    db.execute("ROLLBACK TO b")
    db.execute("INSERT INTO t VALUES(20, 7, 5, 1)")
    db.execute("RELEASE b")
    db.execute("ROLLBACK TO a")
    db.execute("UPDATE t SET value = NULL WHERE d2 = 3")
    failed = try_exec(db, "INSERT INTO t VALUES(1, 1, 1, 2.0), (25, 1, 1, 'bad')") is not None
    report(failed, "%s: the failing statement inside the transaction failed" % label)
    db.execute("RELEASE a")
    db.execute("ROLLBACK")
    same("ROLLBACK after writes, growth, savepoints and a failed statement")

    # autocommit INSERT ... SELECT of many rows (whole chunks, growth) whose last row is bad
    fails_with(rows_from(0, 960, "CASE WHEN i = 959 THEN 'bad' ELSE i * 0.5 END"),
               "caterva: text value 'bad' does not fit the column's dtype float32 (column value)",
               "INSERT ... SELECT of 960 rows failing at the last row")
    same("the failed INSERT ... SELECT (960 rows with growth)")

    # autocommit UPDATE failing at the last cell
    fails_with("UPDATE t SET value = CASE WHEN rowid = 479 THEN 1e300 ELSE value * 2 END",
               "caterva: real value '1.0e+300' does not fit the column's dtype float32 "
               "(column value)", "UPDATE of every cell failing at the last")
    same("the failed UPDATE of every cell")

    # DELETE of everything, then ROLLBACK; an empty transaction
    db.execute("BEGIN")
    db.execute("DELETE FROM t")
    db.execute("INSERT INTO t VALUES(11, 0, 0, 1)")
    db.execute("ROLLBACK")
    same("ROLLBACK of DELETE of every cell plus growth")

    # a failed statement inside a transaction that then commits: only the rest stays
    db.execute("BEGIN")
    db.execute("INSERT INTO t VALUES(0, 0, 0, 100.0)")
    try_exec(db, rows_from(10, 300, "CASE WHEN i = 299 THEN x'00' ELSE 7 END"))
    db.execute("INSERT INTO t VALUES(10, 0, 0, 3.0)")
    db.execute("COMMIT")
    want = [r for r in c0 if r[:3] != (0, 0, 0)] + [(0, 0, 0, 100.0)]
    want += [(10, a, b, 3.0 if (a, b) == (0, 0) else None) for a in range(8) for b in range(6)]
    want.sort(key=lambda r: r[:3])
    c = content(db, "t", 3)
    report(c == want, "%s: a statement failing inside a committed transaction left nothing; "
           "the other writes and one grown row are committed" % label,
           "%d rows vs %d" % (len(c), len(want)))
    s1 = snap(path)
    db.execute("BEGIN")
    db.execute("INSERT INTO t VALUES(12, 0, 0, 1)")
    db.execute("SAVEPOINT x")
    db.execute("UPDATE t SET value = 0")
    db.execute("ROLLBACK")
    report(snap(path) == s1,
           "%s: after a commit, a later ROLLBACK is byte-identical again" % label)
    db.close()


def byte_identical(tmp):
    for sparse, cache in ((0, ""), (1, ""), (0, ", cache_mb=0"), (1, ", cache_mb=0")):
        one_array(tmp, sparse, cache)


if __name__ == "__main__":
    sys.exit(main("caterva-write-", byte_identical))

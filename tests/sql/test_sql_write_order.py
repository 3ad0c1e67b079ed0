#!/usr/bin/env python3
"""UPDATE and DELETE over stored chunks against a plain table with the same statements (TAP
output).

An UPDATE or DELETE writes in the order of the table's own scan, chunk after chunk, and each
chunk it leaves written in part goes to the write-behind worker (core/wcache.c,
leave_behind), which re-encodes its written blocks while the statement goes on. On a
contiguous file and a sparse directory of 12 compressed chunks (24 x 30 x 40 float64, chunks
8 x 15 x 20, blocks 4 x 5 x 10), with the connection's threads (2 on a two-core machine):

  - UPDATE of slabs across chunks, and DELETE of a box: the same cells as the plain table;
  - UPDATE ... FROM a list of cells in random order (the table is looked up cell by cell, so
    chunks are written again after being left): the same cells;
  - in one transaction an UPDATE, a savepoint, an UPDATE rolled back to it, another UPDATE:
    the same cells after COMMIT;
  - an UPDATE of every chunk rolled back, and an autocommit UPDATE that fails at its last cell
    (after the chunks before it were handed over): the file byte-identical, the old cells;
  - a failing UPDATE inside a transaction that then commits: only the statements before it.

Every comparison reads the table on this connection and on a new one. Environment:
top_builddir (the build tree), CATERVA_ORDER_SEED (the random order of the UPDATE ... FROM cells,
default 20261126; other seeds for soak runs), CATERVA_PRELOAD (ASan runtime to preload when the
extension is built with ASan).
"""
import os
import random
import tempfile

from sqltap import report
from writetap import connect, content, create, fresh_content, main, snap, try_exec

SHAPE = (24, 30, 40)
CELLS = SHAPE[0] * SHAPE[1] * SHAPE[2]
LOAD = ("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < %d) "
        "INSERT INTO {T} SELECT i / 1200, (i / 40) %% 30, i %% 40, "
        "((i / 1200) * 7 + ((i / 40) %% 30) * 3 + i %% 40) * 0.25 FROM c" % (CELLS - 1))


def one_array(tmp, sparse, rng):
    label = "sparse" if sparse else "contiguous"
    path = os.path.join(tempfile.mkdtemp(dir=tmp), "o.b2nd")
    db = connect()
    create(db, "t", path, "shape='24,30,40', dtype='float64', chunks='8,15,20', "
           "blocks='4,5,10', codec='zstd', clevel=5, sparse=%d" % sparse)
    db.execute("CREATE TABLE p(d0 INTEGER, d1 INTEGER, d2 INTEGER, value REAL, "
               "PRIMARY KEY(d0, d1, d2)) WITHOUT ROWID")
    db.execute(LOAD.replace("{T}", "t"))
    db.execute(LOAD.replace("{T}", "p"))

    def both(sql):
        """sql on t and on p (the plain table); None, or the first error."""
        return try_exec(db, sql.replace("{T}", "t")) or try_exec(db, sql.replace("{T}", "p"))

    def same(what):
        want = content(db, "p", 3)
        got, fresh = content(db, "t", 3), fresh_content(path, 3)
        bad = sum(1 for a, b in zip(got, want) if a != b) + abs(len(got) - len(want))
        report(got == want and fresh == want,
               "%s: %s: every cell as in the plain table" % (label, what),
               "%d rows differ; a new connection sees the same: %s" % (bad, fresh == got))

    e = both("UPDATE {T} SET value = value * 2 + 1 WHERE d1 BETWEEN 3 AND 11")
    e = e or both("UPDATE {T} SET value = -value WHERE d0 = 13")
    e = e or both("UPDATE {T} SET value = value + d2 WHERE d2 >= 17 AND d1 < 20")
    report(e is None, "%s: three slab UPDATEs run" % label, repr(e))
    same("slab UPDATEs across chunks")

    cells = rng.sample(range(CELLS), 400)
    values = ", ".join("(%d, %d, %d, %s)" % (i // 1200, i // 40 % 30, i % 40,
                                            repr(rng.randint(-4000, 4000) * 0.125))
                       for i in cells)
    e = both("WITH o(a, b, c, v) AS (VALUES %s) UPDATE {T} SET value = o.v FROM o "
             "WHERE {T}.d0 = o.a AND {T}.d1 = o.b AND {T}.d2 = o.c" % values)
    report(e is None, "%s: UPDATE ... FROM 400 cells in random order runs" % label, repr(e))
    same("UPDATE ... FROM cells in random order (chunks written again after being left)")

    box = "d0 BETWEEN 6 AND 17 AND d2 < 25"
    e = try_exec(db, "DELETE FROM t WHERE " + box)  # the cells read the fill value, NULL
    e = e or try_exec(db, "UPDATE p SET value = NULL WHERE " + box)
    e = e or both("UPDATE {T} SET value = 0 WHERE value IS NULL AND d1 = 4")
    report(e is None, "%s: DELETE of a box and an UPDATE of some deleted cells run" % label,
           repr(e))
    same("DELETE of a box across chunks")

    e = try_exec(db, "BEGIN") or both("UPDATE {T} SET value = value - 3 WHERE d0 < 9")
    e = e or try_exec(db, "SAVEPOINT s") or both("UPDATE {T} SET value = 1e6 WHERE d1 >= 14")
    e = e or try_exec(db, "ROLLBACK TO s") or try_exec(db, "RELEASE s")
    e = e or both("UPDATE {T} SET value = value * 0.5 WHERE d2 BETWEEN 12 AND 33")
    e = e or try_exec(db, "COMMIT")
    report(e is None, "%s: a transaction with a savepoint rolled back to runs" % label, repr(e))
    same("UPDATE, SAVEPOINT, UPDATE, ROLLBACK TO, UPDATE, COMMIT")

    s0, c0 = snap(path), content(db, "t", 3)

    def unchanged(what):
        s, c = snap(path), content(db, "t", 3)
        report(s == s0 and c == c0 and fresh_content(path, 3) == c0,
               "%s: %s: the file byte-identical, the old cells" % (label, what),
               "bytes equal %s, names %r vs %r, cells equal %s" % (s[1] == s0[1], s[0], s0[0],
                                                                  c == c0))

    e = try_exec(db, "BEGIN") or try_exec(db, "UPDATE t SET value = value + 100")
    e = e or try_exec(db, "ROLLBACK")
    report(e is None, "%s: an UPDATE of every cell, rolled back, runs" % label, repr(e))
    unchanged("UPDATE of every cell, then ROLLBACK")

    last = "d0 = 23 AND d1 = 29 AND d2 = 39"
    e = try_exec(db, "UPDATE t SET value = CASE WHEN %s THEN 'x' ELSE value + 5 END" % last)
    report(e is not None and "value" in str(e),
           "%s: an autocommit UPDATE failing at its last cell fails" % label, repr(e))
    unchanged("an UPDATE failing at its last cell, after the chunks before it were left")

    e = try_exec(db, "BEGIN") or both("UPDATE {T} SET value = value + 2 WHERE d1 < 16")
    f = try_exec(db, "UPDATE t SET value = CASE WHEN %s THEN 'x' ELSE -1 END" % last)
    e = e or both("UPDATE {T} SET value = value * 3 WHERE d0 >= 20") or try_exec(db, "COMMIT")
    report(e is None and f is not None,
           "%s: a transaction in which one UPDATE fails commits the others" % label,
           "%r / %r" % (e, f))
    same("a failing UPDATE inside a committed transaction leaves nothing of its own")
    db.close()


def body(tmp):
    rng = random.Random(int(os.environ.get("CATERVA_ORDER_SEED", "20261126")))
    for sparse in (0, 1):
        one_array(tmp, sparse, rng)


if __name__ == "__main__":
    main("test_sql_write_order", body)

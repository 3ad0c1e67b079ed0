#!/usr/bin/env python3
"""A file replaced under an open table (TAP): the next statement reads the new array, also when
its blocks are smaller or larger than the old one's (the table's block cache and its cursors'
buffers take the new block size). Each query's answer is compared with a fresh connection's.

Environment: top_builddir.
"""
import os
import sqlite3

from sqltap import connect_ext, report, run_in_tmp

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
SERIES = "WITH RECURSIVE n(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM n WHERE v < 99) "
QUERIES = ["SELECT count(*), sum(value) FROM t",
           "SELECT d0, d1, value FROM t WHERE d0 = 7 ORDER BY d1",
           "SELECT value FROM t WHERE d0 IN (1, 5, 9) AND d1 IN (2, 3) ORDER BY d0, d1",
           "SELECT d0, d1, value FROM t WHERE d1 = 11 ORDER BY d0 DESC LIMIT 5",
           "SELECT a.value, b.value FROM t a JOIN t b ON a.d0 = b.d1 AND a.d1 = b.d0 "
           "WHERE a.d0 < 4 AND a.d1 < 4 ORDER BY a.d0, a.d1"]


def connect():
    return connect_ext(EXT, isolation_level=None)


def make(path, shape, blocks, k):
    db = connect()
    chunks, blk = blocks.split("/")
    db.execute("CREATE VIRTUAL TABLE m USING caterva('%s', shape='%s', dtype='int32', "
               "chunks='%s', blocks='%s')" % (path, shape, chunks, blk))
    n0, n1 = (int(x) for x in shape.split(","))
    db.execute(SERIES + "INSERT INTO m(d0, d1, value) SELECT a.v, b.v, a.v * %d + b.v "
               "FROM n a, n b WHERE a.v < %d AND b.v < %d" % (k, n0, n1))
    db.close()


def answers(path):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s')" % path)
    out = [db.execute(q).fetchall() for q in QUERIES]
    db.close()
    return out


def body(tmp):
    os.chdir(tmp)
    # chunks/blocks written as "chunk0,chunk1/block0,block1"
    kinds = [("small blocks", "30,40", "16,16/4,4", 1000),
             ("large blocks", "24,36", "24,36/12,18", 100),
             ("small blocks again", "30,40", "10,20/5,5", 7)]
    make("t.b2nd", kinds[0][1], kinds[0][2], kinds[0][3])
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('t.b2nd')")
    for q in QUERIES:
        db.execute(q).fetchall()
    for desc, shape, blocks, k in kinds[1:] + kinds[:1]:
        make("new.b2nd", shape, blocks, k)
        want = answers("new.b2nd")
        os.replace("new.b2nd", "t.b2nd")
        got = []
        for q in QUERIES:
            try:
                got.append(db.execute(q).fetchall())
            except sqlite3.Error as e:
                got.append("error: %s" % e)
        bad = [(q, w, g) for q, w, g in zip(QUERIES, want, got) if w != g]
        report(not bad, "replaced by an array of %s (%s): %d queries read the new array"
               % (desc, shape, len(QUERIES)), repr(bad)[:600])
    db.close()


if __name__ == "__main__":
    raise SystemExit(run_in_tmp(EXT, "test_sql_replaced.", body))

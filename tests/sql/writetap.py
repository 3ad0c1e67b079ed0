"""What the tests of writes through the caterva table (tests/sql/test_sql_write_*.py) share:
the connection they write with, the array's bytes before and after, running a statement that
may fail, reading a table back from this or a new connection, and their main."""
import os
import re
import sqlite3
import time

import sqltap
from sqltap import array_bytes

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))


def connect(timeout=5.0, same_thread=True):
    """An in-memory connection in autocommit mode (isolation_level=None: BEGIN, COMMIT and
    SAVEPOINT are the test's own) with the extension loaded."""
    db = sqlite3.connect(":memory:", isolation_level=None, timeout=timeout,
                         check_same_thread=same_thread)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    db.enable_load_extension(False)
    return db


def create(db, table, path, opts=""):
    """CREATE VIRTUAL TABLE table over path: a new array with creation options, or (opts
    empty or only table options) the array already there."""
    db.execute("CREATE VIRTUAL TABLE %s USING caterva('%s'%s)" % (
        table, path, ", " + opts if opts else ""))


def norm(msg):
    """Messages compare with runs of spaces collapsed."""
    return re.sub(" +", " ", str(msg))


def errname(e):
    return getattr(e, "sqlite_errorname", "?")


def try_exec(db, sql, params=()):
    """Run sql; the sqlite3.Error it raised, or None when it succeeded."""
    try:
        db.execute(sql, params)
    except sqlite3.Error as e:
        return e
    return None


def snap(path):
    """The array's bytes (the file, or every file of a sparse directory but .b2lock) and the
    names beside it (no temporary file may be left)."""
    d = os.path.dirname(path)
    beside = sorted(n for n in os.listdir(d) if not n.endswith(".b2lock"))
    return beside, array_bytes(path)


def content(db, table, ndim):
    """Every cell of the table, ordered by its ndim coordinates."""
    return db.execute("SELECT * FROM %s ORDER BY %s" % (
        table, ", ".join(str(k + 1) for k in range(ndim)))).fetchall()


def fresh_content(path, ndim, table="o"):
    """content() as a new connection that opens the array at path sees it."""
    db = connect()
    try:
        create(db, table, path)
        return content(db, table, ndim)
    finally:
        db.close()


def main(prefix, body, ram=False):
    """The main of a test script: skip when the extension cannot be loaded, else body(tmp) in
    a new temporary directory (on a RAM file system with ram=True, where there is one), the
    time it took, and the plan."""
    def timed(tmp):
        t0 = time.time()
        body(tmp)
        print("# %.1f s" % (time.time() - t0))
    return sqltap.run_in_tmp(EXT, prefix, timed, ram=ram)

#!/usr/bin/env python3
"""Writes through the caterva virtual table: locking between writers (TAP output).

While one connection holds the array's write lock (a transaction that wrote), a second
connection's write gets SQLITE_BUSY at once, also inside its own BEGIN, and reads the old state
without blocking; with a busy timeout it waits for the other's commit and then succeeds, or
gets SQLITE_BUSY once the timeout runs out; after the other's ROLLBACK the lock is free at once.
The same between two processes, both ways: the other process's commit is seen at the next
statement.

Environment: top_builddir (the build tree), CATERVA_PRELOAD (ASan runtime to preload when the
extension is built with ASan).
"""
import os
import subprocess
import sys
import tempfile
import threading
import time

from sqltap import report
from writetap import EXT, connect, content, create, errname, main, try_exec

# A writer in another process: "hold" writes in a transaction and keeps the lock until a line
# comes on its stdin; "try" writes one cell in autocommit and prints how that went.
CHILD = r"""
import sqlite3, sys
path, ext, mode = sys.argv[1], sys.argv[2], sys.argv[3]
db = sqlite3.connect(":memory:", isolation_level=None, timeout=0)
db.enable_load_extension(True)
db.load_extension(ext)
db.execute("CREATE VIRTUAL TABLE t USING caterva('%s')" % path)
if mode == "hold":
    db.execute("BEGIN")
    db.execute("INSERT INTO t VALUES(0, 0, 42)")
    print("locked", flush=True)
    sys.stdin.readline()
    db.execute("COMMIT")
    print("committed", flush=True)
else:
    try:
        db.execute("INSERT INTO t VALUES(1, 1, 43)")
        print("ok", flush=True)
    except sqlite3.Error as e:
        print("error %s %s" % (getattr(e, "sqlite_errorname", "?"), e), flush=True)
"""


def locking(tmp):
    sub = tempfile.mkdtemp(dir=tmp)
    path = os.path.join(sub, "l.b2nd")
    busy = "caterva: '%s' is locked by another writer" % path
    A = connect(timeout=0, same_thread=False)
    B = connect(timeout=0)
    create(A, "t", path, "shape='3,4', dtype='int32', chunks='2,2', blocks='1,2'")
    create(B, "t", path)
    A.execute("INSERT INTO t VALUES(0, 0, 1)")
    old = content(A, "t", 2)
    A.execute("BEGIN")
    A.execute("INSERT INTO t VALUES(0, 1, 2), (5, 0, 3)")
    t0 = time.time()
    e = try_exec(B, "INSERT INTO t VALUES(1, 1, 9)")
    dt = time.time() - t0
    report(e is not None and str(e) == busy and errname(e) == "SQLITE_BUSY" and dt < 1.0,
           "a second connection's write while another holds the lock: SQLITE_BUSY at once "
           "(%.3f s)" % dt, "got %r (%s)" % (e, errname(e) if e else ""))
    B.execute("BEGIN")
    e = try_exec(B, "UPDATE t SET value = 7")
    report(e is not None and str(e) == busy and errname(e) == "SQLITE_BUSY",
           "... also inside the second connection's BEGIN", repr(e))
    if B.in_transaction:
        B.execute("ROLLBACK")
    t0 = time.time()
    got = content(B, "t", 2)
    dt = time.time() - t0
    report(got == old and dt < 1.0, "the second connection reads the old state without blocking "
           "(%.3f s)" % dt, "%r vs %r" % (got, old))
    # with a busy timeout, B waits until A commits from another thread
    B.execute("PRAGMA busy_timeout = 2000")
    t_commit = []

    def commit_later():
        time.sleep(0.3)
        t_commit.append(time.time())   # B's write cannot finish before this instant
        A.execute("COMMIT")
    th = threading.Thread(target=commit_later)
    th.start()
    t0 = time.time()
    e = try_exec(B, "INSERT INTO t VALUES(1, 1, 9)")
    t1 = time.time()
    dt = t1 - t0
    th.join()
    report(e is None and t_commit and t1 >= t_commit[0] and dt < 2.5,
           "with busy_timeout=2000 the write waits for the commit (%.3f s) and succeeds" % dt,
           repr(e))
    cells = {(r, c): 0 for r in range(6) for c in range(4)}
    cells.update({(0, 0): 1, (0, 1): 2, (5, 0): 3, (1, 1): 9})
    want = [k + (v,) for k, v in sorted(cells.items())]
    gb = content(B, "t", 2)
    ga = content(A, "t", 2)
    report(gb == want and ga == want, "both connections see both commits, the grown extent "
           "included", "B %r\nA %r\nwant %r" % (gb, ga, want))
    # a busy timeout that runs out
    A.execute("BEGIN")
    A.execute("UPDATE t SET value = 5 WHERE d0 = 2")
    B.execute("PRAGMA busy_timeout = 200")
    t0 = time.time()
    e = try_exec(B, "DELETE FROM t WHERE d0 = 0")
    dt = time.time() - t0
    report(e is not None and str(e) == busy and 0.15 <= dt < 1.5,
           "busy_timeout=200 runs out: SQLITE_BUSY after %.3f s" % dt, repr(e))
    A.execute("ROLLBACK")
    B.execute("PRAGMA busy_timeout = 0")
    e = try_exec(B, "DELETE FROM t WHERE d0 = 0 AND d1 = 0")
    report(e is None, "after the other's ROLLBACK the lock is free at once", repr(e))
    gb = content(B, "t", 2)
    ga = content(A, "t", 2)
    w2 = [(0, 0, 0)] + want[1:]
    report(gb == w2 and ga == w2, "the rolled-back UPDATE is nowhere, the DELETE everywhere",
           "B %r\nA %r" % (gb, ga))
    A.close()
    B.close()

    # two processes
    env = dict(os.environ)
    db = connect(timeout=0)
    create(db, "t", path)
    before = content(db, "t", 2)
    ch = subprocess.Popen([sys.executable, "-c", CHILD, path, EXT, "hold"], stdin=subprocess.PIPE,
                          stdout=subprocess.PIPE, text=True, env=env)
    line = ch.stdout.readline().strip()
    t0 = time.time()
    e = try_exec(db, "INSERT INTO t VALUES(2, 2, 8)")
    dt = time.time() - t0
    report(line == "locked" and e is not None and str(e) == busy and errname(e) == "SQLITE_BUSY"
           and dt < 1.0, "another process holds the lock: this write gets SQLITE_BUSY at once "
           "(%.3f s)" % dt, "child %r, got %r" % (line, e))
    got = content(db, "t", 2)
    report(got == before, "... and reads the state before the other process's transaction")
    ch.stdin.write("go\n")
    ch.stdin.flush()
    line = ch.stdout.readline().strip()
    ch.wait()
    got = content(db, "t", 2)
    want = sorted([r for r in before if r[:2] != (0, 0)] + [(0, 0, 42)])
    report(line == "committed" and ch.returncode == 0 and got == want,
           "the other process's commit is seen at the next statement", "%r %r" % (line, got))
    db.execute("BEGIN")
    db.execute("INSERT INTO t VALUES(2, 2, 8)")
    out = subprocess.run([sys.executable, "-c", CHILD, path, EXT, "try"], capture_output=True,
                         text=True, env=env).stdout.strip()
    report(out == "error SQLITE_BUSY " + busy, "this process holds the lock: another process's "
           "write gets SQLITE_BUSY", repr(out))
    db.execute("COMMIT")
    out = subprocess.run([sys.executable, "-c", CHILD, path, EXT, "try"], capture_output=True,
                         text=True, env=env).stdout.strip()
    got = db.execute("SELECT value FROM t WHERE d0 IN (1, 2) AND d1 IN (1, 2) "
                     "ORDER BY d0, d1").fetchall()
    report(out == "ok" and got == [(43,), (0,), (0,), (8,)],
           "after COMMIT the other process writes; both writes are there", "%r %r" % (out, got))
    db.close()


if __name__ == "__main__":
    sys.exit(main("caterva-write-", locking))

#!/usr/bin/env python3
"""What killed writers leave is collected by the next writer (TAP).

A real sqlite3 shell opens a transaction on a sparse array, rewrites every chunk (new chunk
files) and is killed with SIGKILL before COMMIT: its chunk files are garbage that no index
refers to. Beside the arrays lie temporary files of the kinds a killed compaction, index
replacement or creation leaves (`<path>.tmp<pid>.<n>`, `chunks.b2frame.tmp<pid>.<n>`,
`<path>.creating-<pid>`, and of imports `.importing-<pid>`, `.tmp-<pid>`): some named after a
process that is gone, some after a live one, and names that only look like ours.

Then: a reader (SELECT, caterva_info) changes nothing and reports the leftovers; the next
writer, under the exclusive lock, removes every unreferenced chunk file and every temporary of
a dead process, keeps the live process's files and the committed chunk files, and the array
holds the committed content plus its own write.

Environment: top_builddir, SQLITE3_SHELL.
"""
import json
import os
import signal
import sqlite3
import subprocess
import time

from sqltap import connect_ext, report, run_in_tmp

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
SHELL = os.environ.get("SQLITE3_SHELL", "sqlite3")


def listing(root):
    """Every name under root with its size and mtime (what a reader must not change)."""
    out = {}
    for base, dirs, names in os.walk(root):
        for x in dirs + names:
            p = os.path.join(base, x)
            st = os.lstat(p)
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


def chunk_files(path):
    return sorted(x for x in os.listdir(path) if x.endswith(".chunk"))


def dead_pid():
    """The pid of a process that has exited (and been reaped)."""
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def killed_writer(tmp, path):
    """A shell that rewrites every chunk of the sparse array inside a transaction, then is
    killed before COMMIT. Returns once it has been killed."""
    sql = (".load %s\nCREATE VIRTUAL TABLE a USING caterva('%s');\nBEGIN;\n"
           "UPDATE a SET value = value + 1000;\nSELECT 'ready';\n" % (EXT, path))
    proc = subprocess.Popen([SHELL, ":memory:"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp, text=True)
    proc.stdin.write(sql)
    proc.stdin.flush()  # stdin stays open: the shell waits for more, inside its transaction
    line = proc.stdout.readline().strip()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdin.close()
    return line == "ready"


def live_writer(tmp, sparse, want):
    """A live shell holds a write transaction with chunk files in flight: another connection's
    write waits for the lock and times out without touching them; a reader counts them and
    removes nothing; the live writer then commits them."""
    sql = (".load %s\nCREATE VIRTUAL TABLE a USING caterva('%s');\nBEGIN;\n"
           "UPDATE a SET value = value + 1 WHERE d0 >= 20;\nSELECT 'ready';\n" % (EXT, sparse))
    proc = subprocess.Popen([SHELL, ":memory:"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, cwd=tmp, text=True)
    proc.stdin.write(sql)
    proc.stdin.flush()
    ready = proc.stdout.readline().strip() == "ready"
    in_flight = chunk_files(sparse)
    db = connect_ext(EXT, isolation_level=None)
    db.execute("PRAGMA busy_timeout = 200")
    db.execute("CREATE VIRTUAL TABLE s2 USING caterva('%s')" % sparse)
    n = info(db, sparse).get("leftovers")
    try:
        db.execute("UPDATE s2 SET value = 0 WHERE d0 = 0 AND d1 = 1")
        err = None
    except sqlite3.Error as e:
        err = str(e)
    report(ready and n == 6 and err is not None and "locked" in err and
           chunk_files(sparse) == in_flight,
           "a live writer's in-flight chunk files (%s counted by a reader) are not collected: "
           "the other writer waits for the lock (%s)" % (n, err))
    out, errs = proc.communicate("COMMIT;\nSELECT sum(value) FROM a;\n", timeout=60)
    got = db.execute("SELECT sum(value) FROM s2").fetchone()[0]
    report(proc.returncode == 0 and not errs and got == want + 600 and
           info(db, sparse).get("leftovers") == 0,
           "the live writer commits them (sum %s, expected %s)" % (got, want + 600), errs)
    db.close()


def info(db, path):
    return json.loads(db.execute("SELECT caterva_info(?)", (path,)).fetchone()[0])


def body(tmp):
    sparse = os.path.join(tmp, "s.b2nd")
    contig = os.path.join(tmp, "c.b2nd")
    db = connect_ext(EXT, isolation_level=None)
    db.execute("CREATE VIRTUAL TABLE s USING caterva('%s', shape='40,30', dtype='int32', "
               "chunks='10,10', blocks='5,5', sparse=1)" % sparse)
    db.execute("INSERT INTO s SELECT d0, d1, d0 * 100 + d1 FROM s")
    db.execute("CREATE VIRTUAL TABLE c USING caterva('%s', shape='20', dtype='int32')" % contig)
    db.execute("INSERT INTO c SELECT d0, d0 FROM c")
    committed = chunk_files(sparse)
    report(len(committed) == 12, "the sparse array has one chunk file per chunk (%d)"
           % len(committed))
    db.close()

    report(killed_writer(tmp, sparse), "a shell rewrote every chunk inside a transaction")
    garbage = sorted(set(chunk_files(sparse)) - set(committed))
    report(len(garbage) == 12, "the killed writer left %d chunk files no index refers to"
           % len(garbage))

    gone, live = dead_pid(), os.getpid()
    temps_dead = [sparse + "/chunks.b2frame.tmp%d.0" % gone, contig + ".tmp%d.3" % gone,
                  contig + ".creating-%d" % gone, contig + ".importing-%d" % gone,
                  contig + ".tmp-%d" % gone, contig + ".creating-%d.tmp%d.0" % (gone, gone),
                  sparse + ".creating-%d" % gone]
    temps_live = [sparse + "/chunks.b2frame.tmp%d.1" % live, contig + ".tmp%d.7" % live,
                  contig + ".creating-%d" % live, contig + ".importing-%d" % live]
    others = [contig + ".tmpx.1", contig + ".creating-12ab", contig + ".tmp-%dx" % gone,
              contig + "x.tmp%d.0" % gone, sparse + "/notes.txt"]
    for p in temps_dead[:6] + temps_live + others:
        with open(p, "wb") as f:
            f.write(b"partial")
    os.mkdir(temps_dead[6])  # a sparse creation: a directory of chunk files
    for name in ("00000000.chunk", "chunks.b2frame"):
        with open(os.path.join(temps_dead[6], name), "wb") as f:
            f.write(b"partial")

    db = connect_ext(EXT, isolation_level=None)
    db.execute("CREATE VIRTUAL TABLE s USING caterva('%s')" % sparse)
    db.execute("CREATE VIRTUAL TABLE c USING caterva('%s')" % contig)
    before = listing(tmp)
    total = db.execute("SELECT sum(value) FROM s").fetchone()[0]
    ci, si = info(db, contig), info(db, sparse)
    db.execute("SELECT count(*) FROM c").fetchone()
    report(listing(tmp) == before, "readers (SELECT, caterva_info) changed nothing on disk")
    want = sum(r * 100 + c for r in range(40) for c in range(30))
    report(total == want, "the committed content reads back (sum %s)" % total)
    # sparse: 12 chunk files + its index temporary + its creation directory
    report(si.get("leftovers") == 14 and ci.get("leftovers") == 5,
           "caterva_info reports the leftovers (sparse %s, contiguous %s)"
           % (si.get("leftovers"), ci.get("leftovers")))

    db.execute("UPDATE s SET value = -1 WHERE d0 = 0 AND d1 = 0")
    db.execute("UPDATE c SET value = -1 WHERE d0 = 0")
    now = chunk_files(sparse)
    report(not set(garbage) & set(now), "the next writer removed the killed writer's chunk "
           "files (%d left of %d)" % (len(set(garbage) & set(now)), len(garbage)))
    report(len(now) == 12 and len(set(committed) - set(now)) == 1,
           "the committed chunk files are kept (one replaced by the write): %d files" % len(now))
    report(not any(os.path.exists(p) for p in temps_dead),
           "temporary files of a dead process are removed",
           " ".join(os.path.basename(p) for p in temps_dead if os.path.exists(p)))
    report(all(os.path.exists(p) for p in temps_live),
           "temporary files of a live process survive")
    report(all(os.path.exists(p) for p in others), "names that are not ours survive")
    got = db.execute("SELECT sum(value), count(*) FROM s").fetchone()
    report(got == (want - 0 - 1, 1200), "the array holds the committed content and the write "
           "(%r)" % (got,))
    report(db.execute("SELECT value FROM c WHERE d0 = 0").fetchone() == (-1,) and
           db.execute("SELECT sum(value) FROM c").fetchone() == (sum(range(20)) - 1,),
           "the contiguous array holds its write")
    report(info(db, sparse).get("leftovers") == 0 and info(db, contig).get("leftovers") == 0,
           "no leftover remains after one committed write")
    db.close()
    live_writer(tmp, sparse, want - 1)


if __name__ == "__main__":
    raise SystemExit(run_in_tmp(EXT, "test_sql_leftovers.", body))

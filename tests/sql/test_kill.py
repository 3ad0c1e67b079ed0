#!/usr/bin/env python3
"""Crash safety of SQL writes: a writer process killed with SIGKILL at random instants (TAP).

A writer process (this script with --writer) opens or creates an array through SQL and runs
transactions in a loop until it is killed: INSERT ... SELECT of thousands to ~100k cells
(recursive CTEs), growth along dimension 0, UPDATE of slabs, DELETE of boxes, statements
that fail half-way (undone alone), SAVEPOINT / ROLLBACK TO, and now and then a ROLLBACK of
the whole transaction. It keeps the expected content itself (a flat list in C order) and
appends fsync'ed lines to a journal:

    start <pid>                   the process started
    loaded <digest>               it read the array (must be the state the parent verified)
    begin <n>                     BEGIN of transaction n was issued
    intent <n> <digest>           COMMIT of n is about to be issued; the content it commits
    commit <n> <digest>           COMMIT of n returned
    rollback <n>                  transaction n was rolled back
    cut <ok|FAIL ...>             after its first commit: no bytes past the frame's end

The parent kills the writer after a random delay: very early (0-60 ms after the start),
during its start-up (60-500 ms), right after an intent line appeared (during COMMIT), or at
a random time up to 1 s after it was ready (loaded or created the array). Then, in a fresh
connection, it opens the array, reads every cell and checks that the content is the last
state whose COMMIT returned or -- the kill may land after the commit point but before the
journal line -- the intent that follows it. Nothing else is accepted. It then (every other
iteration, and always at the end) writes and commits through a new connection of its own,
checks the result and that the killed writer's leftovers were cut (a contiguous file ends at
its frame_len), and appends "state <digest>" to the journal. The next writer continues from
the same file. Eight arrays take turns: contiguous and sparse, codecs zstd, lz4, blosclz,
zlib, int32 (fill -1) and float64 (fill NaN). The parent's committing writer (a new handle,
under the exclusive lock) collects what killed writers left; after it, caterva_info must report
no leftovers: no chunk file of a sparse array that its index does not refer to, no temporary
file of a dead process. The counts at the end are printed.

Environment: top_builddir (the build tree), CATERVA_KILL_N (kills, default 24, 12 under
ASan; `make kill-test` runs 500), CATERVA_KILL_SEED (default: from the clock; printed),
CATERVA_PRELOAD (ASan runtime to preload when the extension is built with ASan). For
diagnosis: CATERVA_KILL_VERIFY=1 makes each writer read its content back through a fresh
connection after every commit (exit status 6 on a difference: a write bug, not a crash
bug); CATERVA_KILL_FRESH=1 gives each transaction of a writer a new connection (nothing
cached in the writing connection survives a commit); CATERVA_KILL_KEEP=1 keeps the arrays
and journals.
"""
import hashlib
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

from sqltap import plan, report, reexec_with_preload


reexec_with_preload()

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")

INNER = (40, 50)      # extents of dimensions 1 and 2 (dimension 0 grows)
ROW = INNER[0] * INNER[1]
START_ROWS = 12
MAX_ROWS = 48         # growth stops here: at most 96,000 cells
MOD = 100003
VERIFY = os.environ.get("CATERVA_KILL_VERIFY") == "1"
FRESH = os.environ.get("CATERVA_KILL_FRESH") == "1"

# layout, codec, dtype, chunks, blocks
CONFIGS = [
    ("contiguous", "zstd", "int32", "4,20,25", "2,10,25"),
    ("sparse", "lz4", "float64", "4,20,25", "2,10,5"),
    ("contiguous", "blosclz", "float64", "6,40,25", "3,8,25"),
    ("sparse", "zlib", "int32", "5,16,50", "5,4,10"),
    ("contiguous", "lz4", "int32", "8,10,50", "4,5,50"),
    ("sparse", "zstd", "float64", "3,40,50", "1,20,50"),
    ("contiguous", "zlib", "float64", "4,20,25", "4,20,25"),
    ("sparse", "blosclz", "int32", "12,20,20", "6,10,10"),
]


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def digest(shape, values):
    return hashlib.sha256(repr((list(shape), values)).encode()).hexdigest()[:32]


def read_array(db, table, path):
    """(shape, values in C order) through SQL. The block statistics must be present and
    describe exactly these values (caterva_stats_check), whatever was killed: a value that
    says otherwise is returned in place of the shape, so that no comparison can pass."""
    info = json.loads(db.execute("SELECT caterva_info(?)", (path,)).fetchone()[0])
    vals = [r[0] for r in db.execute("SELECT value FROM %s ORDER BY rowid" % table)]
    st = json.loads(db.execute("SELECT caterva_stats_check(?)", (path,)).fetchone()[0])
    if st["wrong"] or st["with_stats"] != st["blocks"]:
        return "block statistics %r" % st, vals
    return info["shape"], vals


def frame_len(path):
    """frame_len of a contiguous frame: big-endian uint64 at byte 16 of the header."""
    with open(path, "rb") as f:
        head = f.read(24)
    return int.from_bytes(head[16:24], "big")


def cut_problem(path):
    """None when a contiguous file ends at its frame_len, else a description."""
    if os.path.isdir(path):
        return None
    size, flen = os.path.getsize(path), frame_len(path)
    return None if size == flen else "file size %d, frame_len %d" % (size, flen)


# ---- the writer ------------------------------------------------------------------------------

class Model:
    """The expected content: shape[0] rows of INNER cells, a flat list in C order."""

    def __init__(self, dtype, rows, vals=None):
        self.isint = dtype == "int32"
        self.fill = -1 if self.isint else None
        self.rows = rows
        self.v = vals if vals is not None else [self.fill] * (rows * ROW)

    def shape(self):
        return [self.rows, INNER[0], INNER[1]]

    def digest(self):
        return digest(self.shape(), self.v)

    def box(self, x0, x1, y0, y1, z0, z1, fn):
        """fn(x, y, z, old) for every cell of the box (bounds inclusive)."""
        v, nz = self.v, INNER[1]
        for x in range(x0, x1 + 1):
            for y in range(y0, y1 + 1):
                b = (x * INNER[0] + y) * nz
                v[b + z0:b + z1 + 1] = [fn(x, y, z, v[b + z]) for z in range(z0, z1 + 1)]

    def grow(self, rows):
        if rows > self.rows:
            self.v.extend([self.fill] * ((rows - self.rows) * ROW))
            self.rows = rows


def cte(x0, x1, y0, y1, z0, z1):
    return ("WITH RECURSIVE xs(x) AS (SELECT %d UNION ALL SELECT x+1 FROM xs WHERE x < %d), "
            "ys(y) AS (SELECT %d UNION ALL SELECT y+1 FROM ys WHERE y < %d), "
            "zs(z) AS (SELECT %d UNION ALL SELECT z+1 FROM zs WHERE z < %d) "
            % (x0, x1, y0, y1, z0, z1))


class Writer:
    def __init__(self, args):
        self.path, self.journal, cfg, seed, self.expect = args
        self.layout, self.codec, self.dtype, self.chunks, self.blocks = CONFIGS[int(cfg)]
        self.rng = random.Random(seed)
        self.jfd = os.open(self.journal, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def log(self, line):
        os.write(self.jfd, (line + "\n").encode())
        os.fsync(self.jfd)

    def rand_box(self, rows):
        r = self.rng
        big = r.random() < 0.3
        x0 = r.randrange(rows)
        x1 = rows - 1 if big else min(rows - 1, x0 + r.randrange(12))
        y0 = 0 if big else r.randrange(INNER[0])
        y1 = INNER[0] - 1 if big else r.randrange(y0, INNER[0])
        z0 = 0 if big else r.randrange(INNER[1])
        z1 = INNER[1] - 1 if big else r.randrange(z0, INNER[1])
        return x0, x1, y0, y1, z0, z1

    def where(self, b):
        return ("x BETWEEN %d AND %d AND y BETWEEN %d AND %d AND z BETWEEN %d AND %d" % b)

    def insert(self, m, grow):
        r = self.rng
        a, b, c, d = r.randrange(1, 9), r.randrange(1, 9), r.randrange(1, 9), r.randrange(1000)
        if grow:
            x0 = m.rows
            x1 = min(MAX_ROWS, m.rows + r.randrange(1, 5)) - 1
            y0, y1, z0, z1 = r.randrange(20), r.randrange(20, 40), r.randrange(25), 49
            box = (x0, x1, y0, y1, z0, z1)
        else:
            box = self.rand_box(m.rows)
        expr = "(x*%d + y*%d + z*%d + %d) %% %d" % (a, b, c, d, MOD)
        if m.isint:
            fn = lambda x, y, z, old: (x * a + y * b + z * c + d) % MOD
        else:
            expr = "(%s) * 0.25" % expr
            fn = lambda x, y, z, old: ((x * a + y * b + z * c + d) % MOD) * 0.25
        self.db.execute(cte(*box) + "INSERT INTO t(x, y, z, value) SELECT x, y, z, %s "
                        "FROM xs, ys, zs" % expr)
        if grow:
            m.grow(box[1] + 1)
        m.box(*box, fn)

    def update(self, m):
        r = self.rng
        box = self.rand_box(m.rows)
        a, b = r.randrange(1, 8), r.randrange(10, 1000)
        thr = r.choice([None, MOD // 2, 1000])
        if m.isint:
            expr = "(value*%d + %d) %% %d" % (a, b, MOD)
            f = lambda v: (v * a + b) % MOD
        elif r.random() < 0.5:
            expr = "value*0.5 + %d" % b
            f = lambda v: None if v is None else v * 0.5 + b
        else:
            expr = "coalesce(value, %d) * 0.5 + x" % b
            f = None
        cond = "" if thr is None else " AND value < %d" % thr

        def fn(x, y, z, old):
            if thr is not None and not (old is not None and old < thr):
                return old
            if f is None:
                return (b if old is None else old) * 0.5 + x
            return f(old)
        self.db.execute("UPDATE t SET value = %s WHERE %s%s" % (expr, self.where(box), cond))
        m.box(*box, fn)

    def delete(self, m):
        box = self.rand_box(m.rows)
        self.db.execute("DELETE FROM t WHERE " + self.where(box))
        m.box(*box, lambda x, y, z, old: m.fill)

    def failing(self, m):
        """An INSERT ... SELECT that writes many cells (sometimes growing) and then hits a
        value the dtype cannot hold: the statement is undone alone."""
        grow = m.rows < MAX_ROWS and self.rng.random() < 0.5
        x1 = m.rows if grow else m.rows - 1
        bad = "1.5" if m.isint else "'text'"
        try:
            self.db.execute(cte(0, x1, 0, 39, 0, 49) + "INSERT INTO t(x, y, z, value) "
                            "SELECT x, y, z, CASE WHEN x = %d AND y = 39 AND z = 49 THEN %s "
                            "ELSE 7 END FROM xs, ys, zs" % (x1, bad))
        except sqlite3.Error as e:
            if "does not fit" not in str(e):
                raise
            return
        raise RuntimeError("the failing INSERT succeeded")

    def statement(self, m):
        r = self.rng.random()
        if r < 0.30:
            self.insert(m, False)
        elif r < 0.45 and m.rows < MAX_ROWS:
            self.insert(m, True)
        elif r < 0.70:
            self.update(m)
        elif r < 0.88:
            self.delete(m)
        else:
            self.failing(m)

    def open(self):
        self.log("start %d" % os.getpid())
        self.db = connect()
        if not os.path.exists(self.path):
            m = Model(self.dtype, START_ROWS)
            self.log("intent 0 %s" % m.digest())
            self.db.execute(
                "CREATE VIRTUAL TABLE t USING caterva('%s', shape='%d,%d,%d', dtype='%s', "
                "chunks='%s', blocks='%s', codec=%s, dims='x,y,z', fill=%s%s)"
                % (self.path, START_ROWS, INNER[0], INNER[1], self.dtype, self.chunks,
                   self.blocks, self.codec, "-1" if self.dtype == "int32" else "nan",
                   ", sparse=1" if self.layout == "sparse" else ""))
            self.log("commit 0 %s" % m.digest())
            return m, 1
        self.db.execute("CREATE VIRTUAL TABLE t USING caterva('%s')" % self.path)
        shape, vals = read_array(self.db, "t", self.path)
        m = Model(self.dtype, shape[0], vals)
        self.log("loaded %s" % m.digest())
        if m.digest() != self.expect:
            sys.stderr.write("writer: loaded %s, the parent verified %s\n"
                             % (m.digest(), self.expect))
            sys.exit(5)
        return m, 1

    def verify(self, m, n):
        """CATERVA_KILL_VERIFY=1: a fresh connection reads the committed content back."""
        db = connect()
        db.execute("CREATE VIRTUAL TABLE c USING caterva('%s')" % self.path)
        shape, vals = read_array(db, "c", self.path)
        db.close()
        if shape != m.shape() or vals != m.v:
            bad = [i for i in range(min(len(vals), len(m.v))) if vals[i] != m.v[i]]
            sys.stderr.write("writer: after commit %d the array holds shape %s (expected %s), "
                             "%d cells differ, first %r\n" % (n, shape, m.shape(), len(bad),
                             [(i, vals[i], m.v[i]) for i in bad[:5]]))
            sys.exit(6)

    def run(self):
        m, n = self.open()
        first = True
        while True:
            if FRESH:
                self.db.close()
                self.db = connect()
                self.db.execute("CREATE VIRTUAL TABLE t USING caterva('%s')" % self.path)
            self.log("begin %d" % n)
            work = Model(self.dtype, m.rows, list(m.v))
            self.db.execute("BEGIN")
            for _ in range(self.rng.randrange(2, 6)):
                if self.rng.random() < 0.12:
                    keep = Model(self.dtype, work.rows, list(work.v))
                    self.db.execute("SAVEPOINT s")
                    self.statement(work)
                    self.statement(work)
                    if self.rng.random() < 0.5:
                        self.db.execute("ROLLBACK TO s")
                        work = keep
                    self.db.execute("RELEASE s")
                else:
                    self.statement(work)
            if self.rng.random() < 0.08:
                self.db.execute("ROLLBACK")
                self.log("rollback %d" % n)
                continue
            d = work.digest()
            self.log("intent %d %s" % (n, d))
            self.db.execute("COMMIT")
            self.log("commit %d %s" % (n, d))
            m = work
            if VERIFY:
                self.verify(m, n)
            if first:
                first = False
                p = cut_problem(self.path)
                self.log("cut " + ("ok" if p is None else "FAIL " + p))
                if p is not None:
                    sys.exit(4)
            n += 1


# ---- the parent ------------------------------------------------------------------------------

def leftover_problem(path):
    """After a committed write by a new connection (which collects what killed writers left):
    no unreferenced chunk file and no temporary file of a dead process remains."""
    db = connect()
    try:
        n = json.loads(db.execute("SELECT caterva_info(?)", (path,)).fetchone()[0])["leftovers"]
    finally:
        db.close()
    return None if n == 0 else "%d leftovers after the collecting write" % n


def journal_lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [ln.split() for ln in f.read().splitlines() if ln.strip()]


def accepted(lines, nbefore):
    """(committed digest or None, intent digest or None, phase of the last writer), where
    the last writer's lines are those after the first nbefore."""
    committed = intent = None
    for ln in lines:
        if ln[0] in ("commit", "state"):
            committed, intent = ln[-1], None
        elif ln[0] == "intent":
            intent = ln[2]
        elif ln[0] == "begin" or ln[0] == "rollback":
            intent = None
    last = lines[-1][0] if len(lines) > nbefore else "start"
    phase = {"start": "startup", "loaded": "between", "begin": "mid-transaction",
             "rollback": "between", "intent": "commit", "commit": "between",
             "cut": "between"}.get(last, "?")
    return committed, intent, phase


PHASE_TEXT = {"startup": "during start-up", "mid-transaction": "mid-transaction",
              "commit": "during COMMIT", "between": "between transactions", "?": "?"}


class Parent:
    def __init__(self, tmp, seed, n):
        self.tmp, self.n = tmp, n
        self.rng = random.Random(seed)
        self.failures = 0
        self.stats = {"startup": 0, "mid-transaction": 0, "commit": 0, "between": 0, "?": 0}
        self.intent_won = 0
        self.timed = 0  # kills made after a commit of the killed writer's own run
        self.leftovers = 0
        self.checks = 0
        self.commits = 0
        self.absent = 0

    def files(self, c):
        layout = CONFIGS[c][0]
        return (os.path.join(self.tmp, "a%d.%s" % (c, "b2d" if layout == "sparse" else "b2f")),
                os.path.join(self.tmp, "a%d.journal" % c))

    def fail(self, desc, detail):
        self.failures += 1
        report(False, desc, detail)

    @staticmethod
    def wait_journal(w, jpath, jsize, marks, limit=10):
        """Until the writer's part of the journal holds one of the marks (limit s at most)."""
        t0 = time.time()
        while time.time() - t0 < limit and w.poll() is None:
            if os.path.exists(jpath):
                with open(jpath) as f:
                    f.seek(jsize)
                    text = f.read()
                if any(m in text for m in marks):
                    return
            time.sleep(0.0002)

    def kill_one(self, it, c):
        path, jpath = self.files(c)
        before = journal_lines(jpath)
        committed, _, _ = accepted(before, len(before))
        jsize = os.path.getsize(jpath) if os.path.exists(jpath) else 0
        r = self.rng.random()
        if it == self.n - 1 and self.timed == 0:
            r = 0.99  # at least one kill among committed transactions in every run
        env = dict(os.environ)
        w = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--writer", path,
                              jpath, str(c), str(self.rng.randrange(1 << 30)),
                              committed or "-"], stderr=subprocess.PIPE, env=env)
        try:
            if r < 0.10:
                how = "early"
                time.sleep(self.rng.uniform(0, 0.06))
            elif r < 0.20:
                how = "start-up"
                time.sleep(self.rng.uniform(0.06, 0.5))
            elif r < 0.45:
                how = "at-commit"
                self.wait_journal(w, jpath, jsize, ("intent ",))
                time.sleep(self.rng.uniform(0, 0.004))
            else:
                # after the writer's first commit of this run, however slow the machine is,
                # so that kills land among committed transactions (not only at start-up)
                how = "timed"
                self.timed += 1
                self.wait_journal(w, jpath, jsize, ("commit ",), 60)
                time.sleep(self.rng.uniform(0, 1.0))
        finally:
            w.send_signal(signal.SIGKILL)
        _, err = w.communicate()
        desc = "kill %d (array %d: %s %s %s, %s)" % ((it, c) + CONFIGS[c][:3] + (how,))
        if w.returncode != -signal.SIGKILL:
            # it stopped by itself (exit status 4: leftovers not cut, 5: it did not load the
            # state the parent verified); the file is still checked below
            self.fail(desc + ": the writer was running when killed",
                      "exit status %s\n%s" % (w.returncode, err.decode(errors="replace")))
        lines = journal_lines(jpath)
        committed, intent, phase = accepted(lines, len(before))
        self.stats[phase] += 1
        if not os.path.exists(path):
            ok = committed is None
            self.absent += 1
            report(ok, desc + ": no array yet, and no creation had returned", lines[-3:])
            if not ok:
                self.failures += 1
            return ok
        if not os.path.isdir(path) and cut_problem(path) is not None:
            self.leftovers += 1
        try:
            db = connect()
            db.execute("CREATE VIRTUAL TABLE v USING caterva('%s')" % path)
            shape, vals = read_array(db, "v", path)
            db.close()
        except sqlite3.Error as e:
            self.fail(desc + ": a fresh connection opens and reads the array", repr(e))
            return False
        got = digest(shape, vals)
        ok = got in (committed, intent)
        if ok and got == intent and got != committed:
            self.intent_won += 1
        report(ok, desc + ": opens, reads every cell, holds the last committed state "
               "(killed %s)" % PHASE_TEXT[phase],
               "digest %s, committed %s, intent %s, shape %s; journal tail %r\n"
               "(CATERVA_KILL_VERIFY=1 tells a write bug from a crash bug)"
               % (got, committed, intent, shape, lines[-4:]))
        if not ok:
            # go on from what the file holds, so that one wrong state fails once
            self.failures += 1
            with open(jpath, "a") as f:
                f.write("state %s\n" % got)
            return False
        if intent is not None and got == intent:
            with open(jpath, "a") as f:
                f.write("state %s\n" % got)
        if it % 2 == 1 or it == self.n - 1:
            return self.check_commit(desc, c, path, jpath, shape, vals)
        return True

    def check_commit(self, desc, c, path, jpath, shape, vals):
        """A new connection reopens the array for writing and commits: rows 0..1 change; the
        result is exactly as expected, and a contiguous file ends at its frame_len."""
        self.checks += 1
        isint = CONFIGS[c][2] == "int32"
        nrows = min(2, shape[0])
        exp = list(vals)
        for i in range(nrows * ROW):
            x = i // ROW
            old = exp[i]
            if isint:
                exp[i] = (old * 3 + 11) % MOD
            else:
                exp[i] = (17.0 if old is None else old) * 0.5 + x
        sql = ("(value*3 + 11) %% %d" % MOD) if isint else "coalesce(value, 17) * 0.5 + x"
        try:
            db = connect()
            db.execute("CREATE VIRTUAL TABLE v USING caterva('%s')" % path)
            db.execute("BEGIN")
            db.execute("UPDATE v SET value = %s WHERE x < %d" % (sql, nrows))
            db.execute("COMMIT")
            db.close()
            db = connect()
            db.execute("CREATE VIRTUAL TABLE v USING caterva('%s')" % path)
            shape2, vals2 = read_array(db, "v", path)
            db.close()
        except sqlite3.Error as e:
            self.fail(desc + ": reopens for writing and commits", repr(e))
            return False
        ok = shape2 == shape and vals2 == exp
        report(ok, desc + ": reopens for writing; a further commit holds exactly the new "
               "content", "shape %s / %s" % (shape2, shape))
        p = cut_problem(path)
        if p is None:
            p = leftover_problem(path)
        report(p is None, desc + ": the killed writer's leftovers are cut and collected", p)
        if not ok or p is not None:
            self.failures += 1
            return False
        self.commits += 1
        with open(jpath, "a") as f:
            f.write("state %s\n" % digest(shape2, vals2))
        return True

    def writer_checks(self):
        """Journal lines the writers left: their own checks after their first commit."""
        n_ok = n_fail = 0
        for c in range(len(CONFIGS)):
            for ln in journal_lines(self.files(c)[1]):
                if ln[0] == "cut":
                    n_ok += ln[1] == "ok"
                    n_fail += ln[1] != "ok"
        return n_ok, n_fail

    def strays(self):
        """Files a killed process left beside or inside the arrays (temporary names)."""
        out = []
        for root, _, names in os.walk(self.tmp):
            out += [os.path.join(root, x) for x in names if ".tmp" in x]
        return out


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--writer":
        Writer(sys.argv[2:]).run()
        return 0
    if not os.path.exists(EXT + ".so"):
        print("1..0 # SKIP the extension is not built")
        return 0
    # under ASan (CATERVA_PRELOAD set) each process is slower: fewer kills by default
    n = int(os.environ.get("CATERVA_KILL_N", "12" if os.environ.get("CATERVA_PRELOAD") else "24"))
    seed = int(os.environ.get("CATERVA_KILL_SEED", str(int(time.time() * 1000) % 1000000007)))
    print("# CATERVA_KILL_N=%d CATERVA_KILL_SEED=%d" % (n, seed))
    tmp = tempfile.mkdtemp(prefix="caterva-kill-")
    t0 = time.time()
    p = Parent(tmp, seed, n)
    try:
        for it in range(n):
            p.kill_one(it, it % len(CONFIGS))
        cut_ok, cut_fail = p.writer_checks()
        report(cut_fail == 0, "writers found no leftovers after their first commit (%d checks)"
               % cut_ok)
        commits = sum(1 for c in range(len(CONFIGS)) for ln in journal_lines(p.files(c)[1])
                      if ln[0] == "commit")
        # every "timed" kill waited for a commit of its own writer: fewer commit records
        # than timed kills means a writer stopped committing (never a matter of load)
        report(p.timed > 0 and commits >= p.timed,
               "the writers committed transactions between kills (%d commits, %d kills after "
               "a commit)" % (commits, p.timed))
        strays = p.strays()
        s = p.stats
        files = nchunks = 0
        db = connect()
        for c in range(len(CONFIGS)):
            path = p.files(c)[0]
            if os.path.isdir(path):
                files += sum(1 for x in os.listdir(path) if x.endswith(".chunk"))
                nchunks += json.loads(db.execute("SELECT caterva_info(?)", (path,))
                                      .fetchone()[0])["nchunks"]
        db.close()
        print("# %d kills in %.1f s: %d mid-transaction, %d during COMMIT (after an intent "
              "line; %d of them had passed the commit point), %d between transactions, "
              "%d during start-up (%d before the array existed)"
              % (n, time.time() - t0, s["mid-transaction"], s["commit"], p.intent_won,
                 s["between"], s["startup"], p.absent))
        print("# %d writer commits; %d kills left bytes past a contiguous frame's end, all cut "
              "by the next writer (%d checks by the parent, %d by writers); %d temporary "
              "files left by killed processes" % (commits, p.leftovers, p.checks, cut_ok,
                                                  len(strays)))
        if strays:
            print("# e.g. " + ", ".join(os.path.basename(x) for x in strays[:4]))
        print("# sparse arrays at the end: %d chunk files for %d chunks (at least %d files no "
              "index refers to)" % (files, nchunks, max(0, files - nchunks)))
        print("# result: %s" % ("PASS" if p.failures == 0 and cut_fail == 0 else
                                "FAIL (%d failures)" % (p.failures + cut_fail)))
    finally:
        if p.failures == 0 and not os.environ.get("CATERVA_KILL_KEEP"):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("# arrays and journals kept in %s" % tmp)
    plan()
    return 0


if __name__ == "__main__":
    sys.exit(main())

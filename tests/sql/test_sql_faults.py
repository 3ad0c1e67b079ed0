#!/usr/bin/env python3
"""Failure safety of SQL writes: ENOSPC and EIO injected into every file-changing call (TAP).

For a contiguous array (with the defaults, whose commit here writes the packed file and renames
it over the old one, the transaction's chunks held in memory until then; the same with
CATERVA_HOLD_MAX=0, which writes each chunk as a statement stores it, the path of
transactions past 8 MiB; with max_dead=100, whose commit writes in place; and with
max_dead=100 and synchronous=normal, whose commit skips the sync after the header write) and a
sparse array, a write transaction (INSERT ... SELECT of whole chunks,
UPDATE of a slab, INSERT that grows dimension 0, DELETE of a box, COMMIT) runs in a child
process whose N-th counted system call (write, pwrite, fsync, ftruncate, rename; see
core/fileio.c) fails: CATERVA_FAIL_IO="N:ENOSPC", "N:EIO", and the ":sticky" variants that
keep failing (a disk that stays full, a device that stays broken), for every N from 1 to the
number of counted calls the transaction makes.

Each run is a process forked from a fork server (one Python start-up for many runs; the
library reads CATERVA_FAIL_IO at its first counted call, and the server loads nothing);
runs go in parallel, one server per CPU (at most 8).

How the count is found: the child runs the transaction, saves a copy of the array, then
commits a one-cell "probe" transaction. With a single injected failure, the probe fails
exactly when N lies past the transaction's last counted call (its first call is a chunk
write, which cannot fail silently), so the ENOSPC sweep climbs N until the probe fails:
that N - 1 is the count. A first run with CATERVA_FAIL_IO="1000000000:EIO" (armed, never
failing) gives the content a successful transaction commits.

After each run: the statement or COMMIT that hit the failure reported an SQL error naming
the cause ("No space left on device" / "Input/output error"); the array (the copy taken
right after the transaction, sidecar .b2lock excluded) is byte-identical to before, or --
when COMMIT reported success -- holds exactly the new content; a fresh connection opens and
reads it; and a writer without fault injection writes to it, commits, and leaves no byte
past a contiguous frame's end. Two exceptions, for sticky failures only, where the failing
device also refuses the clean-up: the rollback's ftruncate (a contiguous file then keeps the
transaction's chunks past its frame's end: the committed bytes must be identical and the
next writer must cut the rest), and the write that puts the old header back after the fsync
following the commit point failed (COMMIT reports the error and the file must hold exactly
the new content; core/frame_contig.c: "the file holds either"). Both are counted in the
summary.

Environment: top_builddir (the build tree), CATERVA_PRELOAD (ASan runtime to preload when
the extension is built with ASan).
"""
import faulthandler
import hashlib
import json
import os
import queue
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

from sqltap import array_bytes, plan, report, reexec_with_preload


reexec_with_preload()

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")
CAUSE = {"ENOSPC": "No space left on device", "EIO": "Input/output error"}
MAX_N = 5000
JOBS = max(1, min(8, os.cpu_count() or 1))
CHILD_TIMEOUT = 240  # seconds; then a child prints where it hangs and exits


def cte(x0, x1, y0, y1, z0, z1):
    return ("WITH RECURSIVE xs(x) AS (SELECT %d UNION ALL SELECT x+1 FROM xs WHERE x < %d), "
            "ys(y) AS (SELECT %d UNION ALL SELECT y+1 FROM ys WHERE y < %d), "
            "zs(z) AS (SELECT %d UNION ALL SELECT z+1 FROM zs WHERE z < %d) "
            % (x0, x1, y0, y1, z0, z1))


# The transaction under test (on a 12 x 20 x 30 float64 array, chunks 4 x 10 x 15): whole
# chunks written while the statement runs, a slab rewritten, growth to 14 rows, a box reset,
# 6,000 cells written in all.
TXN = [
    cte(0, 7, 0, 19, 0, 29) + "INSERT INTO t(x, y, z, value) SELECT x, y, z, "
    "(x*7 + y*3 + z) * 0.5 FROM xs, ys, zs",
    "UPDATE t SET value = coalesce(value, 3) * 2 + x WHERE x BETWEEN 2 AND 3 AND y < 12",
    cte(12, 13, 3, 15, 0, 29) + "INSERT INTO t(x, y, z, value) SELECT x, y, z, x - y + z "
    "FROM xs, ys, zs",
    "DELETE FROM t WHERE x BETWEEN 5 AND 9 AND y BETWEEN 5 AND 14 AND z BETWEEN 10 AND 24",
    cte(9, 11, 15, 19, 0, 14) + "INSERT INTO t(x, y, z, value) SELECT x, y, z, 0.25 * z "
    "FROM xs, ys, zs",
]


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def copy_array(src, dst):
    """Copy an array without its sidecar."""
    if os.path.isdir(src):
        shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".b2lock"))
    else:
        shutil.copyfile(src, dst)


def remove_array(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.remove(path)
    if os.path.exists(path + ".b2lock"):
        os.remove(path + ".b2lock")


def read_content(path):
    """(shape, values in C order, block statistics all present and exact) through a fresh
    connection."""
    db = connect()
    try:
        db.execute("CREATE VIRTUAL TABLE r USING caterva('%s')" % path)
        info = json.loads(db.execute("SELECT caterva_info(?)", (path,)).fetchone()[0])
        vals = [r[0] for r in db.execute("SELECT value FROM r ORDER BY rowid")]
        # the block statistics must describe exactly these values, whatever failed
        st = json.loads(db.execute("SELECT caterva_stats_check(?)", (path,)).fetchone()[0])
    finally:
        db.close()
    return info["shape"], vals, st["wrong"] == 0 and st["with_stats"] == st["blocks"]


def digest(content):
    return hashlib.sha256(repr(content).encode()).hexdigest()


# ---- the child -------------------------------------------------------------------------------

def child(path, copy):
    """Run TXN under whatever CATERVA_FAIL_IO says; copy the array to `copy`; commit the probe.
    Returns what happened."""
    res = {"failed_at": None, "msg": None, "commit_ok": False, "rollback_msg": None,
           "probe_msg": None}
    db = connect()
    # the layouts "contiguous-inplace" and "contiguous-normal" name their work files (see
    # Sweep.run): commits in place (max_dead=100: this transaction leaves fewer dead bytes
    # than live ones, so nothing packs it), with synchronous=full and normal
    name = os.path.basename(path)
    if "-unheld-" in name:  # chunks written as the statements store them (the library's
        os.environ["CATERVA_HOLD_MAX"] = "0"  # path past 8 MiB held), not at COMMIT
    opts = (", max_dead=100" if "-inplace-" in name or "-normal-" in name else "") + \
        (", synchronous=normal" if "-normal-" in name else "")
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s'%s)" % (path, opts))
    step = -1
    try:
        step = 0
        db.execute("BEGIN")
        for i, sql in enumerate(TXN):
            step = i
            db.execute(sql)
        step = len(TXN)
        db.execute("COMMIT")
        res["commit_ok"] = True
    except sqlite3.Error as e:
        res["failed_at"], res["msg"] = step, str(e)
        if db.in_transaction:
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error as e2:
                res["rollback_msg"] = str(e2)
    copy_array(path, copy)
    try:
        db.execute("UPDATE t SET value = -1 WHERE x = 0 AND y = 0 AND z = 0")
    except sqlite3.Error as e:
        res["probe_msg"] = str(e)
    db.close()
    return res


def zygote():
    """A fork server: the interpreter starts once, then each request
    (a JSON line [fail, path, copy] on stdin) runs child() in a forked process with
    CATERVA_FAIL_IO=fail. The zygote itself never changes a file, so the library's hook has
    not read the environment yet when a child starts. Answers the child's exit status."""
    # The zygote loads nothing: forking a process whose extension has started the library's
    # worker threads could leave a child waiting for a thread (or a lock) that fork did not
    # copy; each child loads the extension itself.
    for line in sys.stdin:
        fail, path, copy = json.loads(line)
        pid = os.fork()
        if pid == 0:
            code = 3
            signal.alarm(CHILD_TIMEOUT + 60)  # a child that hangs fails the run
            try:
                fd = os.open(copy + ".err", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                os.dup2(fd, 2)
                # a run that hangs prints where and ends (exit status 1) instead
                faulthandler.dump_traceback_later(CHILD_TIMEOUT, exit=True)
                os.environ["CATERVA_FAIL_IO"] = fail
                res = child(path, copy)
                with open(copy + ".json", "w") as f:
                    json.dump(res, f)
                code = 0
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stderr.flush()
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        sys.stdout.write("%d\n" % status)
        sys.stdout.flush()


class Zygotes:
    """One fork server per worker thread."""

    def __init__(self, n):
        self.free = queue.Queue()
        self.all = []
        for _ in range(n):
            z = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--zygote"],
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            self.all.append(z)
            self.free.put(z)

    def run(self, fail, path, copy):
        """The child's exit status (-1 if the zygote is gone)."""
        z = self.free.get()
        try:
            z.stdin.write(json.dumps([fail, path, copy]) + "\n")
            z.stdin.flush()
            line = z.stdout.readline()
            return int(line) if line.strip() else -1
        finally:
            self.free.put(z)

    def close(self):
        for z in self.all:
            z.stdin.close()
            z.wait()


# ---- the parent ------------------------------------------------------------------------------

class Sweep:
    def __init__(self, tmp, layout, zygotes):
        self.tmp, self.layout, self.zygotes = tmp, layout, zygotes
        self.ext = "b2d" if layout == "sparse" else "b2f"
        self.before = os.path.join(tmp, "before-%s.%s" % (layout, self.ext))
        self.runs = self.errors = self.swallowed = self.trailing = self.undo_refused = 0
        self.where = {}

    def make_before(self):
        """The committed state before the transaction: an array with data in it."""
        db = connect()
        # the sparse array's fill is a value: the chunks its growth adds are stored chunks
        # (one file each, written in the one edit that renumbers the chunks), where the
        # contiguous array's are NaN special entries; the arrays committed in place have
        # three times the columns z, which the transaction does not touch, so that it
        # replaces fewer bytes than it leaves (max_dead=100 then packs nothing)
        nz = 90 if self.layout in ("contiguous-inplace", "contiguous-normal") else 30
        db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='12,20,%d', "
                   "dtype='float64', chunks='4,10,15', blocks='2,5,15', codec=zstd, "
                   "dims='x,y,z'%s)" % (self.before, nz,
                                        ", sparse=1, fill=-1" if self.layout == "sparse"
                                        else ""))
        db.execute("BEGIN")
        db.execute(cte(0, 11, 0, 19, 0, nz - 1) + "INSERT INTO t(x, y, z, value) SELECT x, y, "
                   "z, x + y * 0.5 FROM xs, ys, zs WHERE (x + y + z) % 7 <> 0")
        db.execute("DELETE FROM t WHERE x BETWEEN 8 AND 11 AND y >= 10")
        db.execute("COMMIT")
        db.close()
        if os.path.exists(self.before + ".b2lock"):
            os.remove(self.before + ".b2lock")
        self.old_bytes = array_bytes(self.before)
        self.old = read_content(self.before)

    def run(self, fail):
        """Run the child on a fresh copy of the before-state; (result dict, copy path,
        stderr) or (None, None, detail) when the child did not finish normally."""
        tag = fail.replace(":", "-")
        work = os.path.join(self.tmp, "work-%s-%s.%s" % (self.layout, tag, self.ext))
        copy = os.path.join(self.tmp, "after-%s-%s.%s" % (self.layout, tag, self.ext))
        remove_array(work)
        remove_array(copy)
        copy_array(self.before, work)
        status = self.zygotes.run(fail, work, copy)
        err = ""
        if os.path.exists(copy + ".err"):
            with open(copy + ".err") as f:
                err = f.read()
            os.remove(copy + ".err")
        if status != 0 or not os.path.exists(copy + ".json"):
            return None, None, "wait status %d\n%s" % (status, err)
        with open(copy + ".json") as f:
            res = json.load(f)
        os.remove(copy + ".json")
        return res, copy, err

    def check(self, fail):
        """One run with CATERVA_FAIL_IO=fail: (child's result or None, TAP line's ok,
        description, detail)."""
        errname = "EIO" if "EIO" in fail else "ENOSPC"
        sticky = fail.endswith(":sticky")
        desc = "%s, CATERVA_FAIL_IO=%s" % (self.layout, fail)
        res, copy, err = self.run(fail)
        if res is None:
            return None, False, desc + ": the child runs", err
        problems = []
        res["trailing"] = res["undo_refused"] = False
        if res["failed_at"] is not None:
            where = "COMMIT" if res["failed_at"] == len(TXN) else "statement %d" % (
                res["failed_at"] + 1)
            if CAUSE[errname] not in (res["msg"] or ""):
                problems.append("the error of %s does not name the cause: %r"
                                % (where, res["msg"]))
        else:
            where = "none"
        res["where"] = where
        if res["commit_ok"]:
            try:
                got = read_content(copy)
            except sqlite3.Error as e:
                got = "unreadable: %r" % e
            if got != self.new:
                problems.append("COMMIT succeeded but the array does not hold the new content")
        else:
            try:
                got = read_content(copy)
            except sqlite3.Error as e:
                got = "unreadable: %r" % e
            now = array_bytes(copy)
            # A sticky failure of the fsync that follows the commit point also refuses the
            # write that would put the old header back (core/frame_contig.c: "the file holds
            # either"): then COMMIT reports the error and the file holds exactly the new
            # content. Accepted for sticky failures at COMMIT only, and counted.
            res["undo_refused"] = (sticky and res["failed_at"] == len(TXN) and
                                   got == self.new)
            if res["undo_refused"]:
                pass
            elif now != self.old_bytes:
                # With a sticky failure the rollback's own ftruncate is refused too: a
                # contiguous file may keep the transaction's chunks past the frame's end
                # (readers ignore them; the next writer cuts them, checked below).
                if (sticky and "" in now and len(now[""]) > len(self.old_bytes[""]) and
                        now[""].startswith(self.old_bytes[""])):
                    res["trailing"] = True
                else:
                    problems.append("the transaction failed but the array is not "
                                    "byte-identical to before (%s)" % self.diff(copy))
            if got == self.new and not res["undo_refused"]:
                problems.append("%s reported an error, but a fresh connection reads the NEW "
                                "content" % where)
            elif got != self.old and not res["undo_refused"]:
                problems.append("the transaction failed but a fresh connection does not read "
                                "the old content (%s)" % (got if isinstance(got, str) else
                                                          "other values"))
        if not problems:
            p = self.later_writer(copy, self.new if res["commit_ok"] or res["undo_refused"]
                                  else self.old)
            if p:
                problems.append(p)
        return (res, not problems, desc + ": failure at %s; the array is %s%s, readable, "
                "writable" % (where, "new" if res["commit_ok"] else
                              "new (its undo refused too)" if res["undo_refused"] else
                              "unchanged",
                              " (bytes past the frame's end)" if res["trailing"] else ""),
                "\n".join(problems + ["child: %r" % res]))

    def tally(self, res):
        self.runs += 1
        if res is None:
            return
        if res["failed_at"] is not None:
            self.errors += 1
            self.where[res["where"]] = self.where.get(res["where"], 0) + 1
        elif res["commit_ok"]:
            self.swallowed += 1  # the failure came after the commit point, unreported
        self.trailing += res["trailing"]
        self.undo_refused += res["undo_refused"]

    def diff(self, copy):
        now = array_bytes(copy)
        out = []
        for k in sorted(set(now) | set(self.old_bytes)):
            a, b = self.old_bytes.get(k), now.get(k)
            if a != b:
                out.append("%s: %s -> %s bytes" % (k or "file", None if a is None else len(a),
                                                  None if b is None else len(b)))
        return "; ".join(out[:6])

    def later_writer(self, path, content):
        """A writer without fault injection writes row 1 and commits; None or a problem."""
        shape, vals, _ = content
        row = shape[1] * shape[2]
        exp = list(vals)
        for i in range(row, 2 * row):
            exp[i] = (5.0 if exp[i] is None else exp[i]) + 1
        try:
            db = connect()
            db.execute("CREATE VIRTUAL TABLE w USING caterva('%s')" % path)
            db.execute("BEGIN")
            db.execute("UPDATE w SET value = coalesce(value, 5) + 1 WHERE x = 1")
            db.execute("COMMIT")
            db.close()
            got = read_content(path)
        except sqlite3.Error as e:
            return "a later writer cannot write and commit: %r" % e
        if got != (shape, exp, True):
            return "a later writer's commit does not hold the expected content%s" % (
                "" if got[2] else " (block statistics wrong or missing)")
        if not os.path.isdir(path):
            with open(path, "rb") as f:
                flen = int.from_bytes(f.read(24)[16:24], "big")
            if os.path.getsize(path) != flen:
                return ("after a later writer's commit the file has %d bytes, its frame %d"
                        % (os.path.getsize(path), flen))
        return None

    def sweep(self):
        self.make_before()
        res, copy, err = self.run("1000000000:EIO")
        ok = res is not None and res["commit_ok"] and res["probe_msg"] is None
        report(ok, "%s: the transaction commits with the hook armed but never firing"
               % self.layout, err if res is None else repr(res))
        if not ok:
            return 0
        self.new = read_content(copy)
        report(self.new != self.old, "%s: the transaction changes the content" % self.layout)
        # ENOSPC, climbing N until the failure lands past the transaction (in the probe), in
        # batches run in parallel
        count = None
        with ThreadPoolExecutor(max_workers=JOBS) as pool:
            n = 1
            while count is None and n < MAX_N:
                batch = list(pool.map(self.check, ["%d:ENOSPC" % k
                                                   for k in range(n, n + 2 * JOBS)]))
                for k, (res, ok, desc, detail) in enumerate(batch, n):
                    if res is not None and res["failed_at"] is None and res["probe_msg"]:
                        count = k - 1
                        report(ok, desc.replace("failure at none", "the failure hits the "
                                                "probe transaction"), detail)
                        break
                    self.tally(res)
                    report(ok, desc, detail)
                n += 2 * JOBS
            report(count is not None and count > 0,
                   "%s: the transaction makes %s counted calls" % (self.layout, count))
            if not count:
                return 0
            fails = [f % k for f in ("%d:EIO", "%d:ENOSPC:sticky", "%d:EIO:sticky")
                     for k in range(1, count + 1)]
            for res, ok, desc, detail in pool.map(self.check, fails):
                self.tally(res)
                report(ok, desc, detail)
        return count


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--zygote":
        zygote()
        return 0
    if not os.path.exists(EXT + ".so"):
        print("1..0 # SKIP the extension is not built")
        return 0
    t0 = time.time()
    tmp = tempfile.mkdtemp(prefix="caterva-faults-")
    zygotes = Zygotes(JOBS)
    counts, wheres = {}, {}
    try:
        for layout in ("contiguous", "contiguous-unheld", "contiguous-inplace",
                       "contiguous-normal", "sparse"):
            s = Sweep(tmp, layout, zygotes)
            count = s.sweep()
            counts[layout] = count
            wheres[layout] = dict(s.where)
            print("# %s: %d counted calls; %d runs, %d reported an SQL error (%s), %d "
                  "failures after the commit point were not reported (COMMIT succeeded), %d "
                  "sticky runs left bytes past the frame's end (cut by the next writer), %d "
                  "sticky runs failed COMMIT after the commit point with the undo refused "
                  "(new content)" % (
                      layout, count, s.runs, s.errors,
                      ", ".join("%s: %d" % kv for kv in sorted(s.where.items())),
                      s.swallowed, s.trailing, s.undo_refused))
        # held chunks: the statements make no counted call, so every failure is COMMIT's;
        # written as stored, failures reach the statements too
        report(set(wheres["contiguous"]) == {"COMMIT"},
               "contiguous, chunks held: every failure is reported by COMMIT (%s)" %
               ", ".join("%s: %d" % kv for kv in sorted(wheres["contiguous"].items())))
        report(any(k != "COMMIT" for k in wheres["contiguous-unheld"]),
               "contiguous, chunks written as stored: failures are reported by the statements "
               "too (%s)" % ", ".join("%s: %d" % kv
                                      for kv in sorted(wheres["contiguous-unheld"].items())))
        # the same transaction with synchronous=normal: one sync fewer (after the header write)
        report(counts["contiguous-normal"] == counts["contiguous-inplace"] - 1,
               "synchronous=normal makes one counted call fewer than full (%d, %d): the sync "
               "after the header write" % (counts["contiguous-normal"],
                                            counts["contiguous-inplace"]))
    finally:
        zygotes.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print("# %.1f s" % (time.time() - t0))
    plan()
    return 0


if __name__ == "__main__":
    sys.exit(main())

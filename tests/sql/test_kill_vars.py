#!/usr/bin/env python3
"""Crash safety of writes to a table over two arrays (issue 21, part 6), TAP.

A writer process runs transactions k = 1, 2, ... on a table over two arrays a (float64) and b
(int32): each sets a random box (drawn from the seed and k) and the marker cell (0, 0) of
both arrays to k, and every fifth one also grows both arrays by one row (INSERT past the
end). It is killed with SIGKILL: at a random instant, or -- every other kill -- a random
few hundred microseconds after the leader's journal (`<a>.cvjournal`) appears, to land in
the window of the group commit more often.

After each kill, before any write: the journal copies left are listed (the leader's copy:
the group had not committed, recovery puts both arrays back; only the other copy: it had,
recovery removes it), and each array's marker is read through a table over that array alone
(a reader changes nothing) -- markers that differ mean the kill landed between the first and
the last array commit. Then the next write (DELETE ... WHERE 0) recovers, and the test
asserts: both arrays hold the same committed transaction m (the markers agree, and every cell
of both arrays equals the model replayed to m), m is the last transaction the writer
reported committed or the one after it, no journal remains, and caterva_info reports no
leftovers for either array. Pairs: contiguous + contiguous, sparse + sparse, contiguous +
sparse (by kill number).

Environment: top_builddir, CATERVA_PRELOAD, CATERVA_KILL_N (kills, default 12),
CATERVA_KILL_SEED (default from the clock, printed). `make kill-test-vars` runs 500.
"""
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time

from sqltap import report, run_in_tmp

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
ROWS0, COLS = 4, 9
PAIRS = [("contiguous", "contiguous"), ("sparse", "sparse"), ("contiguous", "sparse")]

WRITER = r"""
import random, sqlite3, sys
ext, pa, pb, seed, k0, rows = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
db = sqlite3.connect(':memory:', isolation_level=None)
db.enable_load_extension(True)
db.load_extension(ext)
db.execute("CREATE VIRTUAL TABLE temp.w USING caterva('%s', '%s')" % (pa, pb))
na, nb = [r[1] for r in db.execute("PRAGMA temp.table_info(w)")][2:4]
k = k0
while True:
    k += 1
    t0, t1, s0, s1, grow = step(seed, k, rows)
    db.execute("BEGIN")
    db.execute("UPDATE temp.w SET %s = %d, %s = %d WHERE t >= %d AND t < %d AND s >= %d AND s < %d"
               % (na, k, nb, k, t0, t1, s0, s1))
    db.execute("UPDATE temp.w SET %s = %d, %s = %d WHERE t = 0 AND s = 0" % (na, k, nb, k))
    if grow:
        db.execute("INSERT INTO temp.w(t, s, %s, %s) VALUES (%d, %d, %d, %d)" % (na, nb, rows, k % 9, k, k))
        rows += 1
    db.execute("COMMIT")
    sys.stdout.write("%d\n" % k)
    sys.stdout.flush()
"""

STEP = r"""
def step(seed, k, rows):
    r = random.Random(seed * 1000003 + k)
    t0 = r.randrange(rows); t1 = r.randrange(t0 + 1, rows + 1)
    s0 = r.randrange(COLS); s1 = r.randrange(s0 + 1, COLS + 1)
    return t0, t1, s0, s1, k % 5 == 0
"""
exec(STEP)


def model(seed, m):
    """{(t, s): value} and the row count after transactions 1..m (a and b are equal)."""
    rows, cells = ROWS0, {}
    for k in range(1, m + 1):
        t0, t1, s0, s1, grow = step(seed, k, rows)
        for t in range(t0, t1):
            for s in range(s0, s1):
                cells[(t, s)] = k
        cells[(0, 0)] = k
        if grow:
            cells[(rows, k % 9)] = k
            rows += 1
    return cells, rows


def connect():
    db = sqlite3.connect(":memory:", isolation_level=None, timeout=10)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def marker(path):
    db = connect()
    db.execute("CREATE VIRTUAL TABLE temp.x USING caterva('%s')" % path)
    v = db.execute("SELECT value FROM temp.x WHERE %s = 0 AND %s = 0" % dims(db)).fetchone()[0]
    db.close()
    return None if v is None else int(v)


def dims(db):
    return tuple([r[1] for r in db.execute("PRAGMA temp.table_info(x)")][:2])


def listing(d):
    return sorted(os.listdir(d))


def main_body(tmp):
    n = int(os.environ.get("CATERVA_KILL_N", "12"))
    seed = int(os.environ.get("CATERVA_KILL_SEED", str(int(time.time()) % 100000)))
    print("# seed %d, %d kills" % (seed, n))
    rng = random.Random(seed)
    env = dict(os.environ)
    if os.environ.get("CATERVA_PRELOAD"):
        env["LD_PRELOAD"] = os.environ["CATERVA_PRELOAD"]
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    code = "COLS = %d\n" % COLS + STEP + WRITER
    fig = {"kills": 0, "window": 0, "back": 0, "forward": 0, "pending_unmixed": 0, "commits": 0}
    bad = []
    pairs = {}
    for i in range(n):
        sa, sb = PAIRS[i % len(PAIRS)]
        if (sa, sb) not in pairs:
            d = os.path.join(tmp, "%s_%s" % (sa, sb))
            os.mkdir(d)
            pa = os.path.join(d, "a" + (".b2frame" if sa == "sparse" else ".b2nd"))
            pb = os.path.join(d, "b" + (".b2frame" if sb == "sparse" else ".b2nd"))
            db = connect()
            for p, dt, st in ((pa, "float64", sa), (pb, "int32", sb)):
                db.execute("CREATE VIRTUAL TABLE temp.mk USING caterva('%s', shape='%d,%d', "
                           "dtype='%s', chunks='3,4', blocks='1,2', dims='t,s', fill=0, "
                           "sparse=%d)" % (p, ROWS0, COLS, dt, st == "sparse"))
                if os.path.isdir(p) != (st == "sparse"):
                    bad.append("%s was not created as a %s frame" % (p, st))
                db.execute("DROP TABLE temp.mk")
            db.close()
            pairs[(sa, sb)] = [d, pa, pb, 0]
        d, pa, pb, m = pairs[(sa, sb)]
        _, rows = model(seed, m)
        p = subprocess.Popen([sys.executable, "-c", code, EXT, pa, pb, str(seed), str(m), str(rows)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        leader = pa + ".cvjournal"
        if i % 2:
            t0 = time.time()
            while not os.path.exists(leader) and time.time() - t0 < 5 and p.poll() is None:
                pass
            time.sleep(rng.random() * 0.0006)
        else:
            time.sleep(0.02 + rng.random() * 0.25)
        p.send_signal(signal.SIGKILL)
        out, err = p.communicate()
        fig["kills"] += 1
        done = [int(x) for x in out.split()]
        fig["commits"] += len(done)
        last = done[-1] if done else m
        if p.returncode != -signal.SIGKILL:
            bad.append("kill %d: the writer exited by itself (%r): %s" % (i, p.returncode, err[-300:]))
            break
        names = listing(d)
        pending = os.path.basename(leader) in names
        stale = not pending and (os.path.basename(pb) + ".cvjournal") in names
        ma, mb = marker(pa), marker(pb)
        if listing(d) != names:
            bad.append("kill %d: a reader changed the folder" % i)
        mixed = ma != mb
        fig["window"] += mixed
        fig["back"] += pending
        fig["forward"] += stale
        fig["pending_unmixed"] += pending and not mixed
        if mixed and not pending:
            bad.append("kill %d: markers %r/%r differ without a pending journal" % (i, ma, mb))
        # the next write recovers
        try:
            db = connect()
            db.execute("CREATE VIRTUAL TABLE temp.w USING caterva('%s', '%s')" % (pa, pb))
            db.execute("DELETE FROM temp.w WHERE 0")
            na, nb = [r[1] for r in db.execute("PRAGMA temp.table_info(w)")][2:4]
            got = {(t, s): (a, b) for t, s, a, b in
                   db.execute("SELECT t, s, %s, %s FROM temp.w" % (na, nb))}
            info = [json.loads(db.execute("SELECT caterva_info(?)", (x,)).fetchone()[0])
                    for x in (pa, pb)]
            db.close()
        except sqlite3.Error as e:
            bad.append("kill %d: after the next write: %s" % (i, e))
            break
        mm = got[(0, 0)][0]
        mm = int(mm) if mm is not None else 0
        cells, rows = model(seed, mm)
        want = {(t, s): (float(cells.get((t, s), 0)), cells.get((t, s), 0))
                for t in range(rows) for s in range(COLS)}
        left = [x for x in listing(d) if x.endswith(".cvjournal")]
        problems = []
        if got != want:
            diff = [k for k in want if got.get(k) != want[k]][:5]
            problems.append("content differs from transaction %d at %r (got %r)"
                            % (mm, diff, [got.get(k) for k in diff]))
        if mm not in (last, last + 1):
            problems.append("transaction %d, the writer reported %d committed" % (mm, last))
        if mixed and mm not in (min(ma or 0, mb or 0),):
            problems.append("a kill between the commits recovered to %d, not %r" % (mm, (ma, mb)))
        if left:
            problems.append("journals left: %r" % left)
        lo = [x.get("leftovers") for x in info]
        if lo != [0, 0]:
            problems.append("leftovers %r" % lo)
        if problems:
            bad.append("kill %d (%s+%s, %s): %s" % (i, sa, sb, "pending" if pending else
                                                      "stale" if stale else "none",
                                                      "; ".join(problems)))
        pairs[(sa, sb)][3] = mm
    print("# kills %(kills)d, commits %(commits)d, in the window between the first and the "
          "last array commit %(window)d, recovered back %(back)d (of which before any array "
          "committed %(pending_unmixed)d), forward %(forward)d" % fig)
    report(not bad and fig["kills"] == n,
           "%d kills of a writer of a two-array table: after each, both arrays hold the same "
           "committed transaction, no journal or leftover remains after the next write" % n,
           "\n".join(bad[:20]))


if __name__ == "__main__":
    sys.exit(run_in_tmp(EXT, "cvkillv", main_body))

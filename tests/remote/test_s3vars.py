#!/usr/bin/env python3
"""Writes to tables over several arrays in S3 (TAP): the group commit of core/group_s3.c
(docs/guarantees.md, "Tables over several arrays in S3"), against moto's S3 behind our SigV4
and fault fronts (servers.py, what="s3w"), as test_s3write.py.

- Differential: random UPDATEs of one or both value columns, INSERTs (growth), DELETEs,
  transactions with savepoints, ROLLBACK TO and ROLLBACK, on a two-array table in S3 and on
  a local two-array table: the same answers, and the same chunk bytes of both arrays after
  every statement.
- Membership: after the group's first write every member carries the mark; a table over one
  member (or caterva_set_coords on it) refuses to write, saying why; a table over other arrays
  than the group's refuses too; reads of one member alone work.
- Two writers racing: every committed transaction's effect present exactly once in both
  arrays, the BUSY ones' absent.
- Faults on each new request: the staged index PUT (503 retried; 403 an error, nothing
  visible), the leader's PUT (the commit point) applied then 500: found landed, committed
  once; never landing: an error, nothing visible; the roll-forward PUT failing: the commit
  stands, readers wait and then say the next write completes it, and it does.
- kill -9 of a group writer at random instants (KILLS, default 20; make kill-test-s3vars: 200)
  while a reader checks that both arrays always hold the same committed transaction.
- The member prefixes downloaded object by object open as local arrays with the same cells.

Needs moto (procs.find_moto_python) and nginx. Environment: top_builddir, CATERVA_PRELOAD, KILLS.
"""
import json
import os
import random
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from sqltap import report  # noqa: E402
import servers  # noqa: E402
from s3tap import (EXT, Chunks, connect, download, first_difference, random_script,  # noqa: E402
                   rows, s3_list, settled_log, with_servers)


def make_pair(db, a, b, opts_a, opts_b, name="w", extra=""):
    """Create arrays a and b (one table each, then dropped) and a table over both."""
    db.execute("CREATE VIRTUAL TABLE xa USING caterva('%s'%s)" % (a, opts_a))
    db.execute("CREATE VIRTUAL TABLE xb USING caterva('%s'%s)" % (b, opts_b))
    db.execute("DROP TABLE xa")
    db.execute("DROP TABLE xb")
    db.execute("CREATE VIRTUAL TABLE %s USING caterva('%s', '%s', value='a,b'%s)"
               % (name, a, b, extra))


def content(db, name="w"):
    return rows(db, "SELECT d0, d1, a, b FROM %s ORDER BY d0, d1" % name)


def differential(s, work, chunks):
    rng = random.Random(3636)
    la, lb = os.path.join(work, "dl_a"), os.path.join(work, "dl_b")
    ua, ub = "s3://%s/dv/a/" % s.bucket, "s3://%s/dv/b/" % s.bucket
    oa = ", shape='7,8', dtype='float32', chunks='4,4', blocks='2,2', codec=lz4, fill=0"
    ob = ", shape='7,8', dtype='int32', chunks='3,5', blocks='3,1', fill=0"
    dl, ds = connect(), connect()
    make_pair(dl, la, lb, oa + ", sparse=1", ob + ", sparse=1")
    make_pair(ds, ua, ub, oa, ob)
    nrows = [7]

    def box():
        r, c = rng.randrange(nrows[0]), rng.randrange(8)
        return "d0 BETWEEN %d AND %d AND d1 BETWEEN %d AND %d" % (
            r, r + rng.randrange(3), c, c + rng.randrange(4))

    def stmt():
        k = rng.random()
        if k < 0.25:
            return "UPDATE w SET a = %d WHERE %s" % (rng.randrange(-40, 40), box())
        if k < 0.45:
            return "UPDATE w SET b = %d WHERE %s" % (rng.randrange(-40, 40), box())
        if k < 0.6:
            return "UPDATE w SET a = a * 2 + d1, b = b - 1 WHERE d1 = %d" % rng.randrange(8)
        if k < 0.8:
            r = rng.randrange(nrows[0] + 3)
            nrows[0] = max(nrows[0], r + 1)
            return "INSERT INTO w(d0, d1, a, b) VALUES (%d, %d, %g, %d)" % (
                r, rng.randrange(8), rng.randrange(800) / 8, rng.randrange(100))
        return "DELETE FROM w WHERE d0 = %d" % rng.randrange(nrows[0])

    ok_answers = ok_bytes = True
    detail = ""
    steps = 0
    for step in range(30):
        script = random_script(rng, stmt, nrows)
        diff = first_difference(dl, ds, script)
        if diff and ok_answers:
            ok_answers, detail = False, diff
        steps += 1
        ca, cb = content(dl), content(ds)
        if ca != cb and ok_answers:
            ok_answers, detail = False, "after %r: %r vs %r" % (script, ca[1][:4], cb[1][:4])
        for loc, url in ((la, ua), (lb, ub)):
            if chunks.of(loc) != chunks.of(url) and ok_bytes:
                ok_bytes = False
                detail += " %s: chunk bytes differ after %r" % (url, script)
    report(ok_answers, "differential: %d random statements and transactions on a two-array "
           "table give the same answers in S3 as locally" % steps, detail)
    report(ok_bytes, "differential: both arrays have the same chunk bytes at every position "
           "after every one", detail)
    fresh = connect()
    fresh.execute("CREATE VIRTUAL TABLE w USING caterva('%s', '%s', value='a,b')" % (ua, ub))
    report(content(fresh) == content(dl) and nrows[0] > 7,
           "a new connection reads the S3 table equal to the local one (grown to %d rows)"
           % nrows[0])
    # the layout: each member prefix downloaded is a local array with the same cells
    ga, gb = os.path.join(work, "dv_a"), os.path.join(work, "dv_b")
    download(s, "dv/a/", ga)
    download(s, "dv/b/", gb)
    dd = connect()
    dd.execute("CREATE VIRTUAL TABLE w USING caterva('%s', '%s', value='a,b')" % (ga, gb))
    report(content(dd) == content(dl) and chunks.of(ga) == chunks.of(la) and
           chunks.of(gb) == chunks.of(lb),
           "the member prefixes downloaded object by object open as local arrays with the same "
           "cells and chunk bytes (staged indexes left no trace a reader needs)")
    # membership: single-array writers refuse; reads work
    one = connect()
    one.execute("CREATE VIRTUAL TABLE b1 USING caterva('%s')" % ub)
    r1 = rows(one, "UPDATE b1 SET value = 1 WHERE d0 = 0")
    r2 = rows(one, "SELECT count(*) FROM b1")
    report(r1[0] == "error" and "belongs to a group" in r1[1] and r2 == ("ok", [(nrows[0] * 8,)]),
           "a table over one member refuses to write, saying it belongs to a group; it reads",
           (r1, r2))
    r3 = rows(one, "SELECT caterva_set_coords('b1', 'd1', '[0,1,2,3,4,5,6,7]')")
    report(r3[0] == "error" and "group" in r3[1],
           "caterva_set_coords on a member is refused the same way", r3)
    uc = "s3://%s/dv/c/" % s.bucket
    one.execute("CREATE VIRTUAL TABLE xc USING caterva('%s'%s)" % (uc, ob.replace("7,8", "%d,8" % nrows[0])))
    one.execute("CREATE VIRTUAL TABLE ac USING caterva('%s', '%s', value='a,c')" % (ua, uc))
    r4 = rows(one, "UPDATE ac SET c = 1")
    report(r4[0] == "error" and "only through a table over exactly those arrays" in r4[1],
           "a table over a member and another array refuses to write", r4)
    # the other order of the same arrays writes (the leader is the smallest prefix)
    one.execute("CREATE VIRTUAL TABLE ba USING caterva('%s', '%s', value='b,a')" % (ub, ua))
    r5 = rows(one, "UPDATE ba SET a = -3, b = -4 WHERE d0 = 0")
    r6 = rows(fresh, "SELECT sum(a), sum(b) FROM w WHERE d0 = 0")
    report(r5[0] == "ok" and r6 == ("ok", [(-24.0, -32)]),
           "a table over the same arrays in the other order writes the same group", (r5, r6))
    # a copy of a member carries the mark, which names other prefixes: the copy is free
    uk = "s3://%s/dv/copy_b/" % s.bucket
    r7 = rows(one, "SELECT caterva_copy(?, ?)", (ub, uk))
    one.execute("CREATE VIRTUAL TABLE k1 USING caterva('%s')" % uk)
    r8 = rows(one, "UPDATE k1 SET value = 9 WHERE d0 = 1")
    report(r7[0] == "ok" and r8[0] == "ok" and
           rows(one, "SELECT sum(value) FROM k1 WHERE d0 = 1") == ("ok", [(72,)]),
           "a caterva_copy of a member to a new prefix is a free array (its copied mark names "
           "other prefixes)", (r7, r8))
    for d in (dl, ds, fresh, dd, one):
        d.close()


RACER = r"""
import json, random, sqlite3, sys
sys.path.insert(0, %(lib)r)
from sqltap import barrier, connect_ext
ua, ub, wid, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
gate, nproc = sys.argv[5], int(sys.argv[6])
db = connect_ext(%(ext)r, isolation_level=None)
db.execute("PRAGMA trusted_schema=1")
db.execute("CREATE VIRTUAL TABLE w USING caterva('%%s', '%%s', value='a,b')" %% (ua, ub))
rng = random.Random(wid)
out = []
for k in range(n):
    if k %% 3 == 2:
        row = 3 + 2 * k + wid
        op = ("append", row, 1000 * wid + k)
        sql = "INSERT INTO w(d0, d1, a, b) VALUES (%%d, %%d, %%d, %%d)" %% (row, wid, op[2], op[2])
    else:
        cell = (rng.randrange(3), rng.randrange(4))
        op = ("inc", cell[0], cell[1])
        sql = "UPDATE w SET a = a + 1, b = b + 1 WHERE d0 = %%d AND d1 = %%d" %% cell
    try:
        db.execute("BEGIN")
        db.execute(sql)
        if k == 0:  # every writer's first transaction written before any commits
            barrier(gate, wid, nproc)
        db.execute("COMMIT")
        out.append(op + ("ok",))
    except sqlite3.Error as e:
        busy = "another writer committed first" in str(e) or "kept committing" in str(e)
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        out.append(op + ("busy" if busy else "error: " + str(e),))
print(json.dumps(out))
"""


def racing(s, work, nproc=2, n=15):
    ua, ub = "s3://%s/race/a/" % s.bucket, "s3://%s/race/b/" % s.bucket
    db = connect()
    o = ", shape='3,4', dtype='float64', chunks='2,2', fill=0"
    make_pair(db, ua, ub, o, o.replace("2,2", "3,1"))
    script = os.path.join(work, "racer.py")
    with open(script, "w") as f:
        f.write(RACER % {"lib": os.path.join(HERE, "..", "lib"), "ext": EXT})
    gate = os.path.join(work, "race_gate")
    os.makedirs(gate)
    procs = [subprocess.Popen([sys.executable, script, ua, ub, str(k), str(n), gate,
                               str(nproc)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for k in range(nproc)]
    results, errs = [], ""
    for p in procs:
        out, err = p.communicate(timeout=900)
        try:
            results += json.loads(out)
        except ValueError:
            errs += err[-2000:]
    fresh = connect()
    fresh.execute("CREATE VIRTUAL TABLE w USING caterva('%s', '%s', value='a,b')" % (ua, ub))
    cells = {(r[0], r[1]): (r[2], r[3]) for r in fresh.execute("SELECT d0, d1, a, b FROM w")}
    expect = {}
    for r in results:
        if r[0] == "inc" and r[-1] == "ok":
            expect[(r[1], r[2])] = expect.get((r[1], r[2]), 0) + 1
    bad = [r for r in results if r[-1] not in ("ok", "busy")]
    inc_ok = all(cells.get((i, j), (0, 0)) == (expect.get((i, j), 0),) * 2
                 for i in range(3) for j in range(4))
    app_ok = True
    for r in results:
        if r[0] != "append":
            continue
        got = cells.get((r[1], r[2] // 1000))
        if r[-1] == "ok" and got != (r[2], r[2]):
            app_ok = False
        if r[-1] == "busy" and got not in (None, (0, 0)):
            app_ok = False
    nok = sum(1 for r in results if r[-1] == "ok")
    nbusy = sum(1 for r in results if r[-1] == "busy")
    report(not bad and not errs and len(results) == nproc * n,
           "%d group writers racing: every transaction committed or got BUSY" % nproc,
           (bad[:3], errs))
    report(inc_ok, "%d group writers: each cell of both arrays holds exactly its committed "
           "increments (%d committed, %d BUSY)" % (nproc, nok, nbusy), (cells, expect))
    report(app_ok, "%d group writers: committed appends present in both arrays, BUSY ones "
           "absent" % nproc)
    first = [r for w in range(nproc) for r in results[w * n:w * n + 1]]
    report(nok > 0 and nbusy > 0 and sum(1 for r in first if r[-1] == "ok") == 1,
           "%d group writers: some won and some lost (%d / %d); of the first transactions, "
           "all written before any committed, exactly one committed" % (nproc, nok, nbusy),
           first)
    db.close()
    fresh.close()


def faults(s, work):
    ua, ub = "s3://%s/fv/a/" % s.bucket, "s3://%s/fv/b/" % s.bucket
    fe = ", endpoint='%s'" % s.s3w_fault_endpoint
    db = connect()
    o = fe + ", shape='4,4', dtype='int32', chunks='2,2', fill=0"
    make_pair(db, ua, ub, o, o, extra=fe)
    check = connect()
    check.execute("CREATE VIRTUAL TABLE w USING caterva('%s', '%s', value='a,b')" % (ua, ub))
    check.execute("PRAGMA busy_timeout = 300")
    log = s.s3w_fault.log_path

    def sums():
        return rows(check, "SELECT sum(a), sum(b) FROM w")

    def fired(before):
        return [e for e in settled_log(log)[before:] if e.get("fault")]

    r = rows(db, "UPDATE w SET a = 1, b = 2")
    report(r[0] == "ok" and sums() == ("ok", [(16, 32)]), "a group commit through the fault "
           "front (no fault) succeeds", (r, sums()))
    # the staged index PUT answered 503: retried
    n0 = len(servers.read_json_log(log))
    s.set_faults([{"method": "PUT", "path": r"\.pending$", "fault": 503, "times": 1}], front="s3w")
    r = rows(db, "UPDATE w SET a = a + 1, b = b + 1")
    report(r[0] == "ok" and sums() == ("ok", [(32, 48)]) and len(fired(n0)) == 1,
           "a staged index PUT answered 503 is retried and the group commits", (r, sums()))
    # the staged index PUT refused (403): an error, nothing visible
    s.set_faults([{"method": "PUT", "path": r"\.pending$", "fault": 403}], front="s3w")
    r = rows(db, "UPDATE w SET a = 100, b = 100")
    report(r[0] == "error" and "403" in r[1] and sums() == ("ok", [(32, 48)]),
           "a staged index PUT answered 403: an error, nothing of the transaction visible",
           (r, sums()))
    # the commit point (the leader's index) applied, then 500 / reset: found landed, once
    for kind in ("applied_500", "applied_reset"):
        n0 = len(servers.read_json_log(log))
        s.set_faults([{"method": "PUT", "path": r"/fv/a/chunks\.b2frame$", "fault": kind,
                       "times": 1}], front="s3w")
        r = rows(db, "UPDATE w SET a = a + 10, b = b + 10")
        puts = [e for e in settled_log(log)[n0:]
                if e["method"] == "PUT" and e["target"].endswith("/fv/a/chunks.b2frame")]
        report(r[0] == "ok" and len(puts) == 1,
               "the leader's index PUT (the commit point) applied then %s: found landed, "
               "reported once, never sent again" % kind, (r, puts))
    report(sums() == ("ok", [(32 + 320, 48 + 320)]),
           "... and both commits count once in both arrays", sums())
    # the commit point never lands: an error; the staged member is not published
    s.set_faults([{"method": "PUT", "path": r"/fv/a/chunks\.b2frame$", "fault": 503}],
                 front="s3w")
    r = rows(db, "UPDATE w SET a = 7, b = 7")
    report(r[0] == "error" and "did not land" in r[1] and sums() == ("ok", [(352, 368)]),
           "a commit point that never lands: an error saying so, nothing visible in either "
           "array", (r, sums()))
    lost = [k for k in s3_list(s, "fv/") if k.endswith(".pending")]
    # the roll-forward of the member fails: the commit stands; readers wait, then say so
    s.set_faults([{"method": "PUT", "path": r"/fv/b/chunks\.b2frame$", "fault": 503}],
                 front="s3w")
    r = rows(db, "UPDATE w SET a = 3, b = 4")
    mid = sums()
    one = connect()
    one.execute("CREATE VIRTUAL TABLE b1 USING caterva('%s')" % ub)
    alone = rows(one, "SELECT sum(value) FROM b1")
    report(r[0] == "ok" and mid[0] == "error" and "next write completes it" in mid[1] and
           alone == ("ok", [(368,)]),
           "a roll-forward that fails: the commit is reported (it passed its commit point); "
           "the table's readers say the next write completes it; the member alone still "
           "reads its last published version", (r, mid, alone))
    s.set_faults([], front="s3w")
    r = rows(db, "UPDATE w SET a = a + 1 WHERE d0 = 0")
    report(r[0] == "ok" and sums() == ("ok", [(52, 64)]) and
           rows(one, "SELECT sum(value) FROM b1") == ("ok", [(64,)]),
           "the next write rolls it forward first: both arrays hold both transactions",
           (r, sums()))
    pend = [k for k in s3_list(s, "fv/") if k.endswith(".pending")]
    report(pend == lost and len(lost) == 1,
           "staged indexes are deleted once rolled forward; the one of the commit that never "
           "landed (named by no record) is left to the collection", (pend, lost))
    for d in (db, check, one):
        d.close()


KILL_WRITER = r"""
import sqlite3, sys
sys.path.insert(0, %(lib)r)
from sqltap import connect_ext
ua, ub, log = sys.argv[1], sys.argv[2], sys.argv[3]
db = connect_ext(%(ext)r, isolation_level=None)
db.execute("PRAGMA trusted_schema=1")
db.execute("CREATE VIRTUAL TABLE w USING caterva('%%s', '%%s', value='a,b')" %% (ua, ub))
k = int(sys.argv[4])
while True:
    with open(log, "a") as f:
        f.write("try %%d\n" %% k)
    try:
        db.execute("UPDATE w SET a = %%d, b = %%d" %% (k, k))
        with open(log, "a") as f:
            f.write("done %%d\n" %% k)
    except sqlite3.Error as e:
        with open(log, "a") as f:
            f.write("fail %%d %%s\n" %% (k, str(e).replace("\n", " ")))
    k += 1
"""


def tried_line(log, k):
    try:
        with open(log) as f:
            return ("try %d\n" % k) in f.read()
    except OSError:
        return False


def kills(s, work, nkill):
    ua, ub = "s3://%s/kv/a/" % s.bucket, "s3://%s/kv/b/" % s.bucket
    db = connect()
    make_pair(db, ua, ub, ", shape='5,6', dtype='int32', chunks='3,4', fill=0",
              ", shape='5,6', dtype='int64', chunks='2,3', fill=0")
    db.execute("PRAGMA busy_timeout = 200")
    script = os.path.join(work, "kill_vars.py")
    with open(script, "w") as f:
        f.write(KILL_WRITER % {"lib": os.path.join(HERE, "..", "lib"), "ext": EXT})
    log = os.path.join(work, "kill_vars.log")
    rng = random.Random(99)
    seen, mixed, refused, k0 = set(), [], 0, 1
    q = "SELECT min(a), max(a), min(b), max(b), count(*) FROM w"
    for i in range(nkill):
        p = subprocess.Popen([sys.executable, script, ua, ub, log, str(k0)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # the kill lands while the writer commits: a random instant after its first try
        started = time.monotonic()
        while time.monotonic() - started < 30 and not tried_line(log, k0):
            time.sleep(0.01)
        deadline = time.monotonic() + rng.random() * 1.5
        while True:
            r = rows(db, q)
            if r[0] == "ok":
                lo, hi, lo2, hi2, n = r[1][0]
                seen.add(lo)
                if not (lo == hi == lo2 == hi2) or n != 30:
                    mixed.append(r[1][0])
            elif "next write completes it" in r[1]:
                refused += 1
            else:
                mixed.append(r)
            if time.monotonic() >= deadline:
                break
        p.send_signal(signal.SIGKILL)
        p.wait()
        k0 += 10000
    tried = set()
    with open(log) as f:
        for line in f:
            x = line.split()
            if x[0] == "try":
                tried.add(int(x[1]))
    report(not mixed, "kill -9 of a group writer %d times: the reader always saw both arrays "
           "at the same committed transaction (%d versions seen, %d reads told to wait for "
           "the next write)" % (nkill, len(seen), refused), mixed[:5])
    report(seen <= tried | {0}, "every version seen is one a writer committed (or the first)",
           sorted(seen - tried - {0})[:10])
    r = rows(db, "UPDATE w SET a = -1, b = -1")
    after = rows(db, q)
    report(r[0] == "ok" and after == ("ok", [(-1, -1, -1, -1, 30)]),
           "after the kills the table writes as usual and reads one transaction", (r, after))
    if r[0] != "ok" or mixed:
        with open(log) as f:
            tail = f.read().splitlines()[-15:]
        print("# kill log, last lines:\n" + "\n".join("#   " + x for x in tail))
    db.close()


def all_cases(s, work):
    differential(s, work, Chunks())
    faults(s, work)
    racing(s, work)
    kills(s, work, int(os.environ.get("KILLS", "20")))


def main():
    return with_servers("test_s3vars.", "nginx,s3w", all_cases)


if __name__ == "__main__":
    sys.exit(main())

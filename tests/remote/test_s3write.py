#!/usr/bin/env python3
"""Writes to arrays in S3 (TAP), against an S3 API that enforces PutObject's preconditions:
moto's S3 served with one thread (tests/remote/moto_s3.py), behind our SigV4-checking front
and our fault front (servers.py, what="s3w").

- The server itself: If-None-Match: * and If-Match: <ETag> on PUT are refused with 412; a
  PUT whose client goes away before the end of its body stores nothing (as S3); an empty
  index object is named as such.
- Differential: random UPDATEs, INSERTs (growth included), DELETEs, transactions with
  savepoints, ROLLBACK TO and ROLLBACK, on a sparse array in S3 and on a local sparse one:
  the same answers, and the same chunk bytes at every position after every statement.
- The layout: the prefix downloaded object by object is a directory this extension opens as
  the same array; caterva_copy() both ways; CREATE on a prefix that holds an array fails.
- Several writers: two, then four processes incrementing cells and appending rows at once; every committed
  transaction's effect is present exactly once, the BUSY ones' absent; a writer that opened
  an old version moves to the newest before its first write.
- Faults: a chunk PUT answered 503 is retried; an index PUT answered 500 (or reset) AFTER the
  server applied it is found to have landed and reported as a success, committed once; one
  refused without being applied is sent again; one that never lands is an error and nothing
  of the transaction is visible; 403 on a PUT says access denied.
- Collection: with gc_grace=2 a later commit deletes the chunk objects that left the index
  more than 1 s ago and keeps the ones just replaced; with the default (1 hour) none.
- Wrong credentials: a clear error with SignatureDoesNotMatch, the secret never in it.
- The functions that write: caterva_set_coords and caterva_build_stats on a table or path in
  S3, caterva_import into an s3:// prefix: what they store reads back from S3 equal to a
  local copy's; imports of several arrays, and exports (.npy) to s3://, are refused saying
  what to do instead.
- Read-only: http(s):// arrays and contiguous objects in S3 refuse writes saying why; a table
  over several variables in S3 writes (test_s3vars.py has the rest), after which a table over
  one of them refuses to.
- kill -9 of a writer at random instants (KILLS, default 20; make kill-test-s3: 200) while a reader checks that every
  version it sees is one that a writer committed (all cells equal to one committed round).

Needs moto in some Python of the machine (procs.find_moto_python) and nginx.
Environment: top_builddir, CATERVA_PRELOAD, KILLS.
"""
import json
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from sqltap import report  # noqa: E402

import servers  # noqa: E402
from s3tap import (EXT, Chunks, connect, download, first_difference, random_script,  # noqa: E402
                   rows, s3, s3_list, settled_log, with_servers)


def table(db, name, url, extra=""):
    db.execute("CREATE VIRTUAL TABLE %s USING caterva('%s'%s)" % (name, url, extra))


def content(db, name):
    return rows(db, "SELECT d0, d1, value FROM %s ORDER BY d0, d1" % name)


# ---------------------------------------------------------------------------------------------

def server_preconditions(s):
    st1 = s3(s, "PUT", "pre/x", b"one", {"If-None-Match": "*"})
    st2 = s3(s, "PUT", "pre/x", b"two", {"If-None-Match": "*"})
    st3 = s3(s, "PUT", "pre/x", b"two", {"If-Match": '"0123456789abcdef0123456789abcdef"'})
    etag = dict((k.lower(), v) for k, v in st1[1]).get("etag")
    st4 = s3(s, "PUT", "pre/x", b"three", {"If-Match": etag})
    report((st1[0], st2[0], st3[0], st4[0]) == (200, 412, 412, 200),
           "the test server enforces If-None-Match: * and If-Match on PUT (200, 412, 412, 200)",
           (st1[0], st2[0], st3[0], st4[0]))


def cut_put(s, key, body, cut, extra):
    """A writer killed while sending a signed PUT: its headers (Content-Length of the whole
    body), the first cut bytes of the body, then the connection closed."""
    import socket
    from sigv4 import signed_headers_for
    u = urllib.parse.urlsplit(s.s3w_endpoint)
    target = f"/{s.bucket}/{key}"
    cred = s.credentials[0]
    hdrs = signed_headers_for("PUT", u.netloc, target, cred["access_key"], cred["secret_key"],
                              s.region, body, None, extra)
    head = "PUT %s HTTP/1.1\r\n%sContent-Length: %d\r\n\r\n" % (
        target, "".join("%s: %s\r\n" % kv for kv in hdrs), len(body))
    c = socket.create_connection((u.hostname, u.port))
    try:
        c.sendall(head.encode() + body[:cut])
    finally:
        c.close()


def killed_index_put(s):
    """Issue 36's rare 'not found' after kill -9 of writers: a writer killed after sending
    its index PUT's headers but not all of its body. S3 stores no object whose body is shorter
    than its Content-Length; our front forwarded the part it got as a whole request, so the
    index became that part (empty: every later open 'not found'). The committed version must
    stay what it was, whatever part of the body was sent; and an index object that is empty
    all the same (another tool's) is named as such, not 'not found'."""
    url = "s3://%s/cut/" % s.bucket
    db = connect()
    table(db, "t", url, ", shape='6,8', dtype='int32', chunks='3,4', fill=0")
    db.execute("UPDATE t SET value = 5")
    key = "cut/chunks.b2frame"
    st, hd, body = s3(s, "GET", key)
    etag = dict((k.lower(), v) for k, v in hd).get("etag")
    after = []
    for cut in (0, 1, 20, len(body) // 2, len(body) - 1):
        cut_put(s, key, body[:0] + bytes(len(body)), cut, {"If-Match": etag})
        time.sleep(0.2)
        st2, hd2, body2 = s3(s, "GET", key)
        after.append((cut, st2, body2 == body))
    fresh = connect()
    r = rows(fresh, "CREATE VIRTUAL TABLE t USING caterva('%s')" % url)
    r2 = rows(fresh, "SELECT min(value), max(value), count(*) FROM t") if r[0] == "ok" else r
    report(all(st2 == 200 and same for _, st2, same in after) and r2 == ("ok", [(5, 5, 48)]),
           "a writer killed while sending its index PUT (0, 1, 20, half, all but one byte of "
           "the body) changes nothing: the index and the array read as before", (after, r2))
    s3(s, "PUT", "empty/chunks.b2frame", b"")
    r = rows(connect(), "CREATE VIRTUAL TABLE e USING caterva('s3://%s/empty/')" % s.bucket)
    report(r[0] == "error" and "empty object (0 bytes)" in r[1] and "not found" not in r[1],
           "an index object of 0 bytes: 'empty object (0 bytes), not a Blosc2 frame'", r)
    db.close()
    fresh.close()


def differential(s, work, chunks):
    """The same random statements on a sparse array in S3 and on a local one."""
    rng = random.Random(36)
    local = os.path.join(work, "diff_local")
    url = "s3://%s/diff/" % s.bucket
    opts = ", shape='9,10', dtype='float32', chunks='4,4', blocks='2,2', codec=lz4"
    dl, ds = connect(), connect()
    table(dl, "t", local, opts + ", sparse=1")
    table(ds, "t", url, opts)
    nrows = [9]
    ok_answers = ok_bytes = True
    detail = ""
    steps = 0

    def stmt():
        k = rng.random()
        if k < 0.45:
            a, c = rng.randrange(nrows[0]), rng.randrange(10)
            return ("UPDATE t SET value = %d WHERE d0 BETWEEN %d AND %d AND d1 BETWEEN %d AND %d"
                    % (rng.randrange(-50, 50), a, a + rng.randrange(4), c, c + rng.randrange(5)))
        if k < 0.7:
            r = rng.randrange(nrows[0] + 3)
            nrows[0] = max(nrows[0], r + 1)
            return "INSERT INTO t(d0, d1, value) VALUES (%d, %d, %g)" % (
                r, rng.randrange(10), rng.randrange(1000) / 8)
        if k < 0.85:
            return "DELETE FROM t WHERE d0 = %d" % rng.randrange(nrows[0])
        return "UPDATE t SET value = value * 2 + d1 WHERE d1 = %d" % rng.randrange(10)

    for step in range(36):
        script = random_script(rng, stmt, nrows)
        diff = first_difference(dl, ds, script)
        if diff and ok_answers:
            ok_answers, detail = False, diff
        steps += 1
        ca, cb = content(dl, "t"), content(ds, "t")
        if ca != cb and ok_answers:
            ok_answers, detail = False, "after %r: %r vs %r" % (script, ca[1][:6], cb[1][:6])
        ba, bb = chunks.of(local), chunks.of(url)
        if ba != bb and ok_bytes:
            ok_bytes = False
            detail += " chunk bytes differ after %r: %s" % (
                script, ba if isinstance(ba, str) else bb if isinstance(bb, str) else
                [i for i in range(min(len(ba), len(bb))) if ba[i] != bb[i]][:8])
    report(ok_answers, "differential: %d random statements and transactions give the same answers "
           "on S3 as on a local sparse array" % steps, detail)
    report(ok_bytes, "differential: the same chunk bytes at every position after every one",
           detail)
    grown = content(ds, "t")
    report(grown[0] == "ok" and max(r[0] for r in grown[1]) + 1 >= 9,
           "differential: INSERTs grew the array (%s rows)" % nrows[0])
    # the layout: a download of the prefix opens as the same array
    got = os.path.join(work, "diff_download")
    download(s, "diff/", got)
    dd = connect()
    table(dd, "d", got)
    report(content(dd, "d") == content(dl, "t") and chunks.of(got) == chunks.of(local),
           "the prefix downloaded object by object is a sparse directory with the same cells "
           "and chunk bytes")
    dd.close()
    # caterva_copy both ways
    back = os.path.join(work, "diff_back.b2nd")
    r1 = rows(ds, "SELECT caterva_copy(?, ?)", (url, back))
    r2 = rows(ds, "SELECT caterva_copy(?, ?)", (back, "s3://%s/copy/" % s.bucket))
    dc = connect()
    table(dc, "c", "s3://%s/copy/" % s.bucket)
    report(r1[0] == "ok" and r2[0] == "ok" and content(dc, "c") == content(dl, "t"),
           "caterva_copy: S3 prefix -> local contiguous file -> a new S3 prefix, same cells",
           (r1, r2))
    r3 = rows(ds, "SELECT caterva_copy(?, ?)", (back, "s3://%s/copy/" % s.bucket))
    report(r3[0] == "error" and "already" in r3[1],
           "caterva_copy to a prefix that holds an array fails saying so", r3)
    r4 = rows(dc, "CREATE VIRTUAL TABLE e USING caterva('s3://%s/copy/', shape='3', "
              "dtype='int32')" % s.bucket)
    report(r4[0] == "error" and "already" in r4[1],
           "CREATE with creation options on a prefix that holds an array fails saying so", r4)
    for d in (dl, ds, dc):
        d.close()


def npy_file(path, dtype, shape, data):
    """A version 1.0 .npy file of C-order bytes data."""
    hdr = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (
        dtype, "".join("%d, " % n for n in shape))
    pad = 64 - (10 + len(hdr) + 1) % 64
    hdr = hdr + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(hdr).to_bytes(2, "little") + hdr.encode() + data)


def functions(s, work, chunks):
    """caterva_set_coords, caterva_build_stats and caterva_import write to an S3 prefix through
    the commit protocol; what they store reads back from S3 equal to a local copy's."""
    local = os.path.join(work, "fn_local")
    url = "s3://%s/fn/" % s.bucket
    opts = ", shape='5,4', dtype='float64', chunks='2,2', blocks='1,2', fill=0, dims='time,x'"
    dl, ds = connect(), connect()
    table(dl, "t", local, opts + ", sparse=1")
    table(ds, "t", url, opts)
    dates = json.dumps(["2020-01-%02d" % (d + 1) for d in range(5)])
    res = []
    for d in (dl, ds):
        d.execute("UPDATE t SET value = time * 10 + x")
        res.append(rows(d, "SELECT caterva_set_coords('t', 'time', ?)", (dates,)))
        res.append(rows(d, "SELECT caterva_set_coords('t', 'x', '[0.5, 1.5, 2.5, 3.5]', 'm')"))

    def coords(d, what):
        r = rows(d, "SELECT caterva_info(?)", (what,))
        return json.loads(r[1][0][0]).get("coords") if r[0] == "ok" else r

    fresh = connect()
    got_l, got_s = coords(dl, local), coords(fresh, url)
    report(res[2:] == [("ok", [(5,)]), ("ok", [(4,)])] and res[:2] == res[2:] and
           got_s == got_l and "time" in got_s and "x" in got_s,
           "caterva_set_coords on a table in S3 commits; the coordinates read back from S3 (a "
           "new connection) equal a local copy's", (res, got_s, got_l))
    near = rows(fresh, "SELECT caterva_nearest(?, 'time', '2020-01-03T20:00')", (url,))
    report(near == ("ok", [(3,)]), "caterva_nearest on the S3 prefix finds the stored dates", near)
    q = "SELECT x, value FROM t WHERE time = '2020-01-04' ORDER BY x"
    a, b = rows(dl, q), rows(ds, q)
    report(a[0] == "ok" and a == b and len(a[1]) == 4,
           "the S3 table itself selects by the new labels as the local one does", (a, b))
    r = rows(fresh, "SELECT caterva_set_coords(?, 'x', NULL)", (url,))
    got = coords(connect(), url)
    report(r == ("ok", [(0,)]) and "x" not in got and "time" in got,
           "caterva_set_coords(url, dim, NULL) on an s3:// path removes the coordinate", (r, got))
    report(chunks.of(url) == chunks.of(local), "... and the chunk bytes stay those of the local "
           "copy (set_coords commits the index only)")
    for d in (dl, ds, fresh):
        d.close()

    # caterva_build_stats on an array without statistics (a reference-written file)
    golden = os.environ.get("CATERVA_GOLDEN",
                            os.path.join(HERE, "..", "..", "..", "shared", "golden"))
    src = os.path.join(golden, "s05_i32_2d_smooth_lz4hc9.b2nd")
    local = os.path.join(work, "bs_local")
    url = "s3://%s/bs/" % s.bucket
    db = connect()
    cp = (rows(db, "SELECT caterva_copy(?, ?, 1)", (src, local)),
          rows(db, "SELECT caterva_copy(?, ?)", (src, url)))
    before = json.loads(rows(db, "SELECT caterva_info(?)", (url,))[1][0][0])["blockstats"]
    bl = rows(db, "SELECT caterva_build_stats(?)", (local,))
    table(db, "s", url)
    bs = rows(db, "SELECT caterva_build_stats('s')")
    fresh = connect()
    cl = rows(fresh, "SELECT caterva_stats_check(?)", (local,))
    cs = rows(fresh, "SELECT caterva_stats_check(?)", (url,))
    st = json.loads(cs[1][0][0]) if cs[0] == "ok" else {}
    report(cp[0][0] == cp[1][0] == "ok" and before is False and bl[0] == "ok" and bl == bs and
           cl == cs and st.get("wrong") == 0 and st.get("with_stats") == st.get("blocks", -1) > 0,
           "caterva_build_stats on a table in S3 commits the statistics; read back from S3 they "
           "check exact and equal a local copy's", (cp, before, bl, bs, cl, cs))
    q = "SELECT count(*), sum(value) FROM %s WHERE value > 1000"
    table(fresh, "s", url)
    table(fresh, "l", local)
    report(rows(fresh, q % "s") == rows(fresh, q % "l"),
           "a value predicate on the S3 array answers as on the local copy")
    db.close()
    fresh.close()

    # caterva_import into an s3:// prefix
    npy = os.path.join(work, "imp.npy")
    vals = [((i * 7) % 23) - 5.25 for i in range(6 * 9)]
    npy_file(npy, "<f8", (6, 9), struct.pack("<%dd" % len(vals), *vals))
    local = os.path.join(work, "imp_local")
    url = "s3://%s/imp/" % s.bucket
    o = "chunks=4,4 blocks=2,2 codec=lz4 dims=y,x sparse=1"
    db = connect()
    il = rows(db, "SELECT caterva_import(?, ?, NULL, ?)", (npy, local, o))
    i3 = rows(db, "SELECT caterva_import(?, ?, NULL, ?)", (npy, url, o))
    table(db, "il", local)
    table(db, "i3", url)
    ql = "SELECT y, x, value FROM %s ORDER BY y, x"
    report(il == i3 == ("ok", [(54,)]) and rows(db, ql % "i3") == rows(db, ql % "il") and
           [r[2] for r in rows(db, ql % "i3")[1]] == vals and chunks.of(url) == chunks.of(local),
           "caterva_import of a .npy file into an s3:// prefix: the same cells, dimension names "
           "and chunk bytes as a local import", (il, i3))
    r = rows(db, "SELECT caterva_import(?, ?)", (npy, url))
    report(r[0] == "error" and "already" in r[1],
           "caterva_import into a prefix that holds an array fails saying so", r)
    fake = os.path.join(work, "grid.nc")
    with open(fake, "wb") as f:
        f.write(b"CDF\x01" + bytes(28))
    r = rows(db, "SELECT caterva_import(?, ?, '*')", (fake, "s3://%s/grid/" % s.bucket))
    report(r[0] == "error" and "several arrays" in r[1] and "caterva_copy" in r[1] and
           s3_list(s, "grid/") == [],
           "a NetCDF import of several variables into S3 is refused, saying what to do", r)
    r = rows(db, "SELECT caterva_import(?, ?)", (npy, s.nginx_http + "/w/imp/"))
    report(r[0] == "error" and "read-only" in r[1], "caterva_import to an http:// URL is "
           "refused as read-only", r)
    r = rows(db, "SELECT caterva_export('i3', ?)", ("s3://%s/exp/x.npy" % s.bucket,))
    report(r[0] == "error" and "caterva_copy" in r[1],
           "caterva_export to s3:// is refused, naming caterva_copy (the export to S3)", r)
    db.close()


WORKER = r"""
import json, random, sqlite3, sys
sys.path.insert(0, %(lib)r)
from sqltap import barrier, connect_ext
url, wid, n, gate, nproc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
db = connect_ext(%(ext)r, isolation_level=None)
db.execute("PRAGMA trusted_schema=1")
db.execute("CREATE VIRTUAL TABLE t USING caterva('%%s')" %% url)
rng = random.Random(wid)
out = []
for k in range(n):
    if k %% 3 == 2:
        row = 4 + 2 * k + wid
        op = ("append", row, 1000 * wid + k)
        sql = "INSERT INTO t(d0, d1, value) VALUES (%%d, %%d, %%d)" %% (row, wid, 1000 * wid + k)
    else:
        cell = (rng.randrange(4), rng.randrange(6))
        op = ("inc", cell[0], cell[1])
        sql = "UPDATE t SET value = value + 1 WHERE d0 = %%d AND d1 = %%d" %% cell
    try:
        db.execute("BEGIN")
        db.execute(sql)
        if k == 0:  # every writer's first transaction written before any commits
            barrier(gate, wid, nproc)
        db.execute("COMMIT")
        out.append(op + ("ok",))
    except sqlite3.Error as e:
        busy = "another writer committed first" in str(e)
        try:
            db.execute("ROLLBACK")
        except sqlite3.Error:
            pass
        out.append(op + ("busy" if busy else "error: " + str(e),))
print(json.dumps(out))
"""


def concurrent(s, work, nproc=2, n=18):
    url = "s3://%s/conc%d/" % (s.bucket, nproc)
    db = connect()
    table(db, "t", url, ", shape='4,6', dtype='float64', chunks='2,3', fill=0")
    script = os.path.join(work, "worker.py")
    with open(script, "w") as f:
        f.write(WORKER % {"lib": os.path.join(HERE, "..", "lib"), "ext": EXT})
    gate = os.path.join(work, "gate%d" % nproc)
    os.makedirs(gate)
    procs = [subprocess.Popen([sys.executable, script, url, str(w), str(n), gate, str(nproc)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(nproc)]
    results = []
    errs = ""
    for p in procs:
        out, err = p.communicate(timeout=600)
        try:
            results += json.loads(out)
        except ValueError:
            errs += err[-2000:]
    db.execute("DROP TABLE t")
    table(db, "t", url)
    cells = {(a, b): v for a, b, v in db.execute("SELECT d0, d1, value FROM t").fetchall()}
    expect = {}
    bad = [r for r in results if r[-1] not in ("ok", "busy")]
    for r in results:
        if r[0] == "inc" and r[-1] == "ok":
            expect[(r[1], r[2])] = expect.get((r[1], r[2]), 0) + 1
    inc_ok = all(cells.get((a, b), 0) == expect.get((a, b), 0) for a in range(4) for b in range(6))
    app_ok = True
    for r in results:
        if r[0] != "append":
            continue
        row, val = r[1], r[2]
        wid = val // 1000
        got = cells.get((row, wid))
        if r[-1] == "ok" and got != val:
            app_ok = False
        if r[-1] == "busy" and got not in (None, 0):
            app_ok = False
    nok = sum(1 for r in results if r[-1] == "ok")
    nbusy = sum(1 for r in results if r[-1] == "busy")
    report(not bad and not errs and len(results) == nproc * n,
           "%d writers: every transaction committed or got BUSY (no other error)" % nproc,
           (bad[:3], errs))
    report(inc_ok, "%d writers: each cell holds exactly its committed increments "
           "(%d committed, %d BUSY)" % (nproc, nok, nbusy), (cells, expect))
    report(app_ok, "%d writers: committed appends present, BUSY ones absent" % nproc)
    first = [r for w in range(nproc) for r in results[w * n:w * n + 1]]
    report(nok > 0 and nbusy > 0 and sum(1 for r in first if r[-1] == "ok") == 1,
           "%d writers: some commits won and some lost (%d / %d); of the first transactions, "
           "all written before any committed, exactly one committed" % (nproc, nok, nbusy),
           first)
    db.close()


def old_version(s):
    url = "s3://%s/old/" % s.bucket
    a, b = connect(), connect()
    table(a, "t", url, ", shape='3,3', dtype='int32', fill=0")
    table(b, "t", url)
    b.execute("SELECT sum(value) FROM t").fetchall()           # b holds version 1
    a.execute("UPDATE t SET value = 5 WHERE d0 = 0")            # version 2
    r = rows(b, "UPDATE t SET value = value + 1 WHERE d0 = 0")  # b moves to version 2 first
    got = a.execute("SELECT sum(value) FROM t WHERE d0 = 0").fetchall()
    report(r[0] == "ok" and got == [(18,)],
           "a writer that opened an old version moves to the newest before its first write",
           (r, got))
    a.close()
    b.close()


def faults(s, work):
    url = "s3://%s/faults/" % s.bucket
    fe = ", endpoint='%s'" % s.s3w_fault_endpoint
    db = connect()
    table(db, "t", url, fe + ", shape='4,4', dtype='int32', chunks='2,2', fill=0")
    check = connect()
    table(check, "t", url)
    log = s.s3w_fault.log_path

    def fired(before):
        return [e for e in settled_log(log)[before:] if e.get("fault")]

    def total():
        return check.execute("SELECT sum(value) FROM t").fetchall()[0][0]

    # a chunk PUT answered 503: retried
    n0 = len(servers.read_json_log(log))
    s.set_faults([{"method": "PUT", "path": r"\.chunk$", "fault": 503, "times": 1}], front="s3w")
    r = rows(db, "UPDATE t SET value = 1 WHERE d0 = 0")
    report(r[0] == "ok" and total() == 4 and len(fired(n0)) == 1,
           "a chunk PUT answered 503 is retried and the commit succeeds", (r, total()))
    # the index PUT applied by the server, then a 500 / a reset: found landed, committed once
    for kind in ("applied_500", "applied_reset"):
        n0 = len(servers.read_json_log(log))
        s.set_faults([{"method": "PUT", "path": r"chunks\.b2frame$", "fault": kind, "times": 1}],
                     front="s3w")
        r = rows(db, "UPDATE t SET value = value + 10 WHERE d0 = 1")
        after = settled_log(log)[n0:]
        puts = [e for e in after if e["method"] == "PUT" and e["target"].endswith("chunks.b2frame")]
        gets = [e for e in after if e["method"] == "GET" and e["target"].endswith("chunks.b2frame")]
        report(r[0] == "ok" and len(puts) == 1 and len(gets) >= 1,
               "index PUT applied then %s: the writer reads the index back, finds its commit "
               "landed and reports success without sending it again" % kind, (r, puts, gets))
    report(total() == 4 + 80, "... and each of those commits counts once (sum %s)" % total())
    # the index PUT refused before being applied: sent again, once known not to have landed
    s.set_faults([{"method": "PUT", "path": r"chunks\.b2frame$", "fault": 500, "times": 1}],
                 front="s3w")
    r = rows(db, "UPDATE t SET value = 100 WHERE d0 = 3 AND d1 = 3")
    report(r[0] == "ok" and total() == 84 + 100,
           "an index PUT answered 500 without being applied is sent again after reading the "
           "index back, and commits once", (r, total()))
    # never lands: an error, nothing visible
    s.set_faults([{"method": "PUT", "path": r"chunks\.b2frame$", "fault": 503}], front="s3w")
    r = rows(db, "UPDATE t SET value = 7 WHERE d0 = 2")
    report(r[0] == "error" and "did not land" in r[1] and total() == 184,
           "an index PUT that never lands is an error saying so, and nothing of the transaction "
           "is visible", (r, total()))
    # 403 on a PUT
    s.set_faults([{"method": "PUT", "fault": 403}], front="s3w")
    r = rows(db, "UPDATE t SET value = 7 WHERE d0 = 2")
    report(r[0] == "error" and "403" in r[1] and "access denied" in r[1] and total() == 184,
           "a PUT answered 403 is an error saying access denied; nothing visible", r)
    s.set_faults([], front="s3w")
    r = rows(db, "UPDATE t SET value = 7 WHERE d0 = 2")
    report(r[0] == "ok" and total() == 184 + 28, "after the faults the table writes again", r)
    # applied, then the connection closed with no answer: libcurl would send a request again on
    # a fresh connection by itself (a reused connection that "died"); the commit point must not
    # be, or its 412 would report BUSY for a transaction that landed
    n0 = len(servers.read_json_log(log))
    s.set_faults([{"method": "PUT", "path": r"chunks\.b2frame$", "fault": "applied_close",
                   "times": 1}], front="s3w")
    r = rows(db, "UPDATE t SET value = value + 100 WHERE d0 = 0 AND d1 = 0")
    puts = [e for e in settled_log(log)[n0:]
            if e["method"] == "PUT" and e["target"].endswith("chunks.b2frame")]
    report(r[0] == "ok" and len(puts) == 1 and total() == 212 + 100,
           "index PUT applied, then the connection closed without an answer: not sent again "
           "(by libcurl either), found landed, committed once", (r, len(puts), total()))
    ambiguous_commit(s, url, fe, total, 312)
    s.set_faults([], front="s3w")
    db.close()
    check.close()


def ambiguous_commit(s, url, fe, total, before):
    """A commit's index PUT applied but answered 500 only after another writer committed on
    top of it: the index the writer reads back is neither its own nor its base. It must not
    say BUSY ("nothing of this transaction is visible": it is visible, and running it again
    would apply it twice), nor success: an error saying it may or may not have landed."""
    import threading
    key = "faults/chunks.b2frame"
    etag0 = dict((k.lower(), v) for k, v in s3(s, "HEAD", key)[1]).get("etag")
    s.set_faults([{"method": "PUT", "path": r"chunks\.b2frame$", "fault": "applied_500",
                   "delay_ms": 3000, "times": 1}], front="s3w")
    out = []

    def writer():  # its own connection, through the fault front
        a = connect()
        table(a, "t", url, fe)
        out.append(rows(a, "UPDATE t SET value = value + 1000 WHERE d0 = 0 AND d1 = 0"))
        a.close()

    t = threading.Thread(target=writer)
    t.start()
    deadline, moved = time.monotonic() + 20, False
    while time.monotonic() < deadline and not moved:
        moved = dict((k.lower(), v) for k, v in s3(s, "HEAD", key)[1]).get("etag") != etag0
        time.sleep(0.05)
    other = connect()  # straight to the server, not through the fault front
    r2 = rows(other, "CREATE VIRTUAL TABLE t USING caterva('s3://%s/faults/')" % s.bucket)
    r2 = rows(other, "UPDATE t SET value = value + 1 WHERE d0 = 3 AND d1 = 0") if r2[0] == "ok" else r2
    t.join(60)
    r = out[0] if out else ("none", "")
    report(moved and r2[0] == "ok" and r[0] == "error" and "may or may not have landed" in r[1]
           and "committed first" not in r[1] and total() == before + 1000 + 1,
           "an index PUT applied and answered 500 after another writer committed on top: "
           "'may or may not have landed', not BUSY; both commits are there", (moved, r2, r, total()))
    other.close()


def credentials(s):
    url = "s3://%s/creds/" % s.bucket
    db = connect()
    table(db, "t", url, ", shape='2,2', dtype='int32', fill=0")
    good = os.environ["AWS_SECRET_ACCESS_KEY"]
    os.environ["AWS_SECRET_ACCESS_KEY"] = "WRONG" + good
    r = rows(db, "UPDATE t SET value = 1")
    os.environ["AWS_SECRET_ACCESS_KEY"] = good
    report(r[0] == "error" and "SignatureDoesNotMatch" in r[1] and good not in r[1] and
           "WRONG" not in r[1], "a wrong secret: SignatureDoesNotMatch, the secret never shown",
           r)
    r = rows(db, "UPDATE t SET value = 1")
    report(r[0] == "ok" and db.execute("SELECT sum(value) FROM t").fetchall() == [(4,)],
           "with the right secret again the write succeeds", r)
    db.close()


def read_only(s, work):
    src = os.path.join(work, "ro.b2nd")
    db = connect()
    table(db, "t", src, ", shape='4,4', dtype='int32', fill=1")
    db.execute("DROP TABLE t")
    with open(src, "rb") as f:
        st = s3(s, "PUT", "ro/contig.b2nd", f.read())[0]
    os.makedirs(os.path.join(s.root, "w"), exist_ok=True)
    shutil.copyfile(src, os.path.join(s.root, "w", "ro.b2nd"))
    table(db, "c", "s3://%s/ro/contig.b2nd" % s.bucket)
    r = rows(db, "UPDATE c SET value = 2")
    report(st == 200 and r[0] == "error" and "contiguous" in r[1] and "caterva_copy" in r[1],
           "a contiguous object in S3 refuses writes, saying how to make it a sparse prefix", r)
    table(db, "h", s.nginx_http + "/w/ro.b2nd")
    r = rows(db, "UPDATE h SET value = 2")
    report(r[0] == "error" and "http(s)" in r[1] and "read-only" in r[1],
           "an http:// array refuses writes, saying http(s) is read-only", r)
    r = rows(db, "CREATE VIRTUAL TABLE n USING caterva('%s/w/new/', shape='3')" % s.nginx_http)
    report(r[0] == "error" and "read-only" in r[1], "CREATE on an http:// URL is refused", r)
    r = rows(db, "CREATE VIRTUAL TABLE n USING caterva('s3://%s/ro/n/', shape='3', sparse=0)"
             % s.bucket)
    report(r[0] == "error" and "sparse" in r[1], "sparse=0 on an s3:// prefix is refused", r)
    for v in ("v1", "v2"):
        table(db, v, "s3://%s/ro/%s/" % (s.bucket, v), ", shape='3,3', dtype='int32', fill=1")
    table(db, "vv", "s3://%s/ro/v1/', 's3://%s/ro/v2/" % (s.bucket, s.bucket), ", value='a,b'")
    r = rows(db, "UPDATE vv SET a = 5")
    got = rows(db, "SELECT sum(value) FROM v1")
    r2 = rows(db, "UPDATE v1 SET value = 2")
    report(r[0] == "ok" and got == ("ok", [(45,)]) and r2[0] == "error" and
           "belongs to a group" in r2[1],
           "a table over several variables in S3 writes (test_s3vars.py); a table over one of "
           "them then refuses to, saying it belongs to a group", (r, got, r2))
    db.close()


def collection(s):
    """Unreferenced chunk objects go once they left the index more than gc_grace ago."""
    url = "s3://%s/gc/" % s.bucket
    db = connect()
    # gc_grace=2: a commit must upload its chunks within half of it (1 s, also under ASan)
    table(db, "t", url, ", shape='4,4', dtype='int32', chunks='2,2', fill=0, gc_grace=2")

    def objs():
        return {k for k in s3_list(s, "gc/") if k.endswith(".chunk")}

    db.execute("UPDATE t SET value = d0 * 4 + d1")
    c1 = objs()
    db.execute("UPDATE t SET value = d0 * 4 + d1 + 100")
    c12 = objs()
    report(len(c1) == 4 and c1 < c12 and len(c12) == 8,
           "chunks replaced by a commit stay (they left the index just now)", (c1, c12))
    time.sleep(4.5)
    db.execute("UPDATE t SET value = -5 WHERE d0 = 0 AND d1 = 0")
    c3 = objs()
    report(not (c1 & c3) and len(c3) == 5 and (c12 - c1) < c3,
           "with gc_grace=2, a later commit deletes the chunks that left the index more than 2 s "
           "ago, and keeps the one it just replaced", (sorted(c1), sorted(c3)))
    fresh = connect()
    table(fresh, "t", url)
    got = fresh.execute("SELECT sum(value) FROM t").fetchall()
    report(got == [(sum(range(16)) + 1600 - 5 - 100,)], "the array reads as committed", got)
    time.sleep(1.5)
    fresh.execute("UPDATE t SET value = 1 WHERE d0 = 3 AND d1 = 3")  # default grace: 1 hour
    c4 = objs()
    report(c3 < c4, "with the default grace (1 hour) a commit deletes nothing", (c3, c4))
    r = rows(db, "CREATE VIRTUAL TABLE x USING caterva('%s', gc_grace=0)" % url)
    report(r[0] == "error" and "gc_grace" in r[1], "gc_grace=0 is refused (1 s at least, or never)",
           r)
    db.close()
    fresh.close()


KILL_WRITER = r"""
import sqlite3, sys
sys.path.insert(0, %(lib)r)
from sqltap import connect_ext
url, log = sys.argv[1], sys.argv[2]
db = connect_ext(%(ext)r, isolation_level=None)
db.execute("PRAGMA trusted_schema=1")
db.execute("CREATE VIRTUAL TABLE t USING caterva('%%s')" %% url)
k = int(sys.argv[3])
while True:
    with open(log, "a") as f:
        f.write("try %%d\n" %% k)
    try:
        db.execute("UPDATE t SET value = %%d" %% k)
        with open(log, "a") as f:
            f.write("done %%d\n" %% k)
    except sqlite3.Error as e:
        with open(log, "a") as f:
            f.write("fail %%d %%s\n" %% (k, str(e).replace("\n", " ")))
    k += 1
"""


def kills(s, work, nkill):
    url = "s3://%s/kill/" % s.bucket
    db = connect()
    table(db, "t", url, ", shape='6,8', dtype='int32', chunks='3,4', fill=0")
    script = os.path.join(work, "kill_writer.py")
    with open(script, "w") as f:
        f.write(KILL_WRITER % {"lib": os.path.join(HERE, "..", "lib"), "ext": EXT})
    log = os.path.join(work, "kill.log")
    rng = random.Random(9)
    seen, mixed, k0 = set(), [], 1
    for i in range(nkill):
        p = subprocess.Popen([sys.executable, script, url, log, str(k0)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 0.3 + rng.random() * 1.2
        while time.monotonic() < deadline:
            r = rows(db, "SELECT min(value), max(value), count(*) FROM t")
            if r[0] == "ok":
                lo, hi, n = r[1][0]
                seen.add(lo)
                if lo != hi or n != 48:
                    mixed.append(r[1][0])
        p.send_signal(signal.SIGKILL)
        p.wait()
        k0 += 10000
    tried = set()
    with open(log) as f:
        for line in f:
            w = line.split()
            if w[0] == "try":
                tried.add(int(w[1]))
    final = rows(db, "SELECT min(value), max(value) FROM t")
    report(not mixed, "kill -9 of a writer %d times: the reader never saw a mix of versions "
           "(%d versions seen)" % (nkill, len(seen)), mixed[:5])
    ok = (seen <= tried | {0} and final[0] == "ok" and final[1][0][0] == final[1][0][1]
          and final[1][0][0] in tried | {0})
    report(ok, "every version seen is one a writer committed (or the first)",
           "%r\nseen but never tried: %r\nfinal: %r"
           % (sorted(seen)[:10], sorted(seen - tried - {0})[:10], final))
    r = rows(db, "UPDATE t SET value = -1")
    ok2 = r[0] == "ok" and rows(db, "SELECT min(value), max(value) FROM t")[1] == [(-1, -1)]
    report(ok2, "after the kills the array takes writes as usual", r)
    if not (ok and ok2):  # the evidence of a rare failure (issue 36): the writers' last lines
        with open(log) as f:
            tail = f.read().splitlines()[-15:]
        print("# kill log, last lines:\n" + "\n".join("#   " + x for x in tail))
    db.close()


def all_cases(s, work):
    chunks = Chunks()
    server_preconditions(s)
    killed_index_put(s)
    differential(s, work, chunks)
    old_version(s)
    functions(s, work, chunks)
    concurrent(s, work, 2)
    concurrent(s, work, 4, 9)
    faults(s, work)
    credentials(s)
    collection(s)
    read_only(s, work)
    kills(s, work, int(os.environ.get("KILLS", "20")))


def main():
    return with_servers("test_s3write.", "nginx,s3w", all_cases)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Remote arrays (TAP): the same queries on a remote copy as on the local file, through real
servers started here on 127.0.0.1 (tests/remote/servers.py): nginx over HTTP and over HTTPS
(HTTP/2, a throwaway CA), s3rver behind our SigV4-checking front for s3://, and our
fault-injecting front before nginx.

- Differential: pushdown boxes, IN lists, joins with a plain table, labels in degrees and dates,
  value predicates, ORDER BY/LIMIT, caterva_slice, caterva_reduce (also grouped by calendar,
  with every statistic), caterva_nearest and
  caterva_info give the same answers on the remote copy as on the local file, for contiguous
  and sparse frames and several codecs, through http://, https:// and s3://.
- Requests and bytes, from the servers' own logs: opening a frame sends only ranged GETs (at
  most 3), a one-cell query fetches a small part of the file, whole-chunk fetching
  (remote_fetch=chunks) fetches more.
- Faults: 503, 429, SlowDown, 500, 502, 504, connection resets and truncated bodies are
  retried and the answer is right; retries run out into a clear error; a server ignoring Range
  on a large object, 404 and garbage bytes give errors (or, for garbage, an answer equal to the
  local one), never wrong rows; a timeout; sqlite3_interrupt() stops a stalled transfer.
- S3: a wrong secret gives 403 SignatureDoesNotMatch and the secret never appears in a message
  nor in caterva_info; temporary credentials (a session token); anonymous access.
- TLS: without the test CA the certificate is refused; HTTP/2 is used over TLS.
- Consistency: an object replaced between two statements is read anew by the second; the
  version check rides on a statement's first wave (no HEAD for a cold query), or is one HEAD when
  the statement is served from the cache; a replacement of another shape is read anew too, a
  query whose box lies outside the shape opened included.
- Opening: a contiguous frame in at most 2 ranged requests, none refused; a sparse frame is
  probed as `<url>/chunks.b2frame` only after `<url>` is not a frame (none with a trailing '/').
- Read-only (http(s)://): writes and creation options give an error naming the URL (writes
  to S3: test_s3write.py).
- Block checks: a byte flipped in a block of an array this extension wrote is the
  corrupt-block error naming the URL, chunk and block, over http and s3 (issue 39).

Needs nginx, openssl and s3rver (tests/remote/deps.sh installs them); skipped with a reason
otherwise. Environment: top_builddir, CATERVA_GOLDEN, CATERVA_PRELOAD.
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from sqltap import report  # noqa: E402
from s3tap import BUILD, connect, rows, with_servers  # noqa: E402

GOLDEN = os.environ.get("CATERVA_GOLDEN", os.path.join(HERE, "..", "..", "..", "shared", "golden"))
GOLDEN_PICK = ["s28_f64_3d_medium_defaults.b2nd", "s25_f64_2d_zstd_dict.b2nd",
               "s06_u32_3d_ramp_delta_blosclz9.b2nd", "s17_i32_2d_clevel0_memcpy.b2nd",
               "s04_u16_2d_steps_zlib_bitshuffle_sparse.b2frame", "s22_f32_3d_full_repeatval.b2nd"]


# 0..63 (Python's sqlite3 has no generate_series)
SERIES = "WITH RECURSIVE n(value) AS (SELECT 0 UNION ALL SELECT value + 1 FROM n WHERE value < 63) "


def make_arrays(src):
    """Arrays written here: a labelled grid contiguous (zstd) and sparse (lz4), an int32 array
    (blosclz), all with block statistics; plus some golden files. Returns [(name, dims, labels)]."""
    db = connect()
    made = []
    for name, extra in (("grid.b2nd", "codec=zstd"), ("grid_sparse.b2frame", "codec=lz4, sparse=1")):
        db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='40,30,50', dtype='float32', "
                   "chunks='10,15,25', blocks='5,5,5', dims='time,lat,lon', %s, "
                   "coords='time:2024-01-01:1 day,lat:-29.5:2.0:degrees_north,lon:10.25:0.5')"
                   % (os.path.join(src, name), extra))
        db.execute(SERIES + "INSERT INTO g(time_index, lat_index, lon_index, value) "
                   "SELECT t.value, a.value, o.value, "
                   "  CASE WHEN (t.value * 7 + a.value * 3 + o.value) % 97 = 0 THEN NULL "
                   "       ELSE (t.value * 0.25) - a.value + (o.value % 7) * 1.5 END "
                   "FROM n t, n a, n o WHERE t.value < 40 AND a.value < 30 AND o.value < 50")
        db.execute("DROP TABLE g")
        made.append((name, ("time", "lat", "lon"), True))
    # a larger array of noisy values (chunks of 500 KB, blocks of 4 KB): block reads matter
    plain = (
        ("big.b2nd", "shape='100,100,60', dtype='float32', chunks='50,50,30', blocks='10,10,10', "
         "codec=lz4", SERIES.replace("63", "99") + "INSERT INTO g(d0, d1, d2, value) SELECT "
         "a.value, b.value, c.value, ((a.value * 7919 + b.value * 104729 + c.value * 1299709) "
         "% 10007) * 0.001 FROM n a, n b, n c WHERE c.value < 60"),
        ("ints.b2nd", "shape='64,48', dtype='int32', chunks='32,16', blocks='8,8', codec=blosclz",
         SERIES + "INSERT INTO g(d0, d1, value) SELECT a.value, b.value, "
         "(a.value * 131 + b.value * 7) % 1000 - 500 FROM n a, n b "
         "WHERE a.value < 64 AND b.value < 48"),
        # grown with fill=0.1: its chunks beyond the written columns are one repeated value
        # stored as bytes, read locally from their headers and remotely from the records of
        # statistics; both must give the writer's sums (0.1 added item by item, not 0.1 times
        # the count)
        ("fill.b2nd", "shape='0,48', dtype='float64', chunks='8,16', blocks='4,8', fill=0.1",
         SERIES + "INSERT INTO g(d0, d1, value) SELECT a.value, b.value, "
         "CASE WHEN (a.value + b.value) % 5 = 0 THEN 1.5 ELSE 0 END FROM n a, n b "
         "WHERE a.value BETWEEN 32 AND 39 AND b.value < 16"))
    for name, options, insert in plain:
        db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', %s)"
                   % (os.path.join(src, name), options))
        db.execute(insert)
        db.execute("DROP TABLE g")
        made.append((name, ("d0", "d1", "d2") if "d2" in insert else ("d0", "d1"), False))
    for g in GOLDEN_PICK:
        p = os.path.join(GOLDEN, g)
        if not os.path.exists(p):
            continue
        dst = os.path.join(src, g)
        if os.path.isdir(p):
            shutil.copytree(p, dst, ignore=shutil.ignore_patterns("*.b2lock"))
        else:
            shutil.copyfile(p, dst)
        info = json.loads(db.execute("SELECT caterva_info(?)", (dst,)).fetchone()[0])
        made.append((g, tuple(info["dims"]), False))
    db.close()
    return made


def queries(dims, labels):
    """(description, SQL) over table {t} and path {p}."""
    d0, d1 = dims[0], dims[1]
    q = [
        ("count and sum", "SELECT count(*), sum(value) FROM {t}"),
        ("one cell", "SELECT * FROM {t} WHERE %s_index = 3 AND %s_index = 4" % (d0, d1)
         if labels else "SELECT * FROM {t} WHERE %s = 3 AND %s = 4" % (d0, d1)),
        ("a box", "SELECT * FROM {t} WHERE %s_index BETWEEN 1 AND 4 AND %s_index < 6 ORDER BY rowid"
         % (d0, d1)),
        ("IN lists", "SELECT * FROM {t} WHERE %s_index IN (0, 2, 5) AND %s_index IN (1, 3) "
         "ORDER BY rowid" % (d0, d1)),
        ("a join", "WITH k(i, j) AS (VALUES (0, 0), (1, 2), (3, 5), (7, 1)) SELECT k.i, k.j, t.value "
         "FROM k JOIN {t} t ON t.%s_index = k.i AND t.%s_index = k.j ORDER BY 1, 2" % (d0, d1)),
        ("value predicate", "SELECT count(*), min(value), max(value) FROM {t} WHERE value > 3"),
        ("ORDER BY and LIMIT", "SELECT * FROM {t} ORDER BY %s_index DESC LIMIT 5" % d0),
        ("caterva_slice", "SELECT hex(caterva_slice({p}, '[%s]', '[%s]'))"
         % (",".join("1" for _ in dims), ",".join("3" for _ in dims))),
        ("caterva_reduce", "SELECT * FROM caterva_reduce({p}, 'mean', '%s')" % d0),
        ("caterva_reduce's sum", "SELECT value FROM caterva_reduce({p}, 'sum', '')"),
        ("caterva_info", "SELECT json_remove(caterva_info({p}), '$.remote', '$.leftovers', '$.journal')"),
    ]
    if labels:
        q += [("labels in dates and degrees", "SELECT * FROM {t} WHERE time = '2024-01-05' AND "
               "lat BETWEEN -20 AND -10 AND lon < 12 ORDER BY rowid"),
              ("caterva_nearest", "SELECT caterva_nearest('{t}', 'lat', 3.14), "
               "caterva_nearest('{t}', 'time', '2024-01-09T13:00:00')"),
              ("caterva_reduce by calendar", "SELECT *, count, sum, mean, min, max, std FROM "
               "caterva_reduce({p}, 'stats', 'time:month') WHERE d1 BETWEEN -20 AND 10"),
              ("caterva_reduce by 7 days", "SELECT *, count, sum, std FROM "
               "caterva_reduce({p}, 'mean', 'time:7 days,lon')")]
    return q


def open_table(db, name, url, extra=""):
    db.execute("DROP TABLE IF EXISTS %s" % name)
    db.execute("CREATE VIRTUAL TABLE %s USING caterva('%s'%s)" % (name, url, extra))


def differential(s, src, made):
    urls = {"http": s.nginx_http, "https": s.nginx_https, "s3": "s3://%s" % s.bucket}
    db = connect()
    for name, dims, labels in made:
        local = os.path.join(src, name)
        open_table(db, "l", local)
        for kind, base in urls.items():
            url = base.rstrip("/") + "/" + name
            try:
                open_table(db, "r", url)
            except sqlite3.Error as e:
                report(False, "%s over %s: opens" % (name, kind), str(e))
                continue
            bad = []
            for desc, sql in queries(dims, labels):
                a = rows(db, sql.format(t="l", p="'%s'" % local))
                b = rows(db, sql.format(t="r", p="'%s'" % url))
                if a != b:
                    bad.append("%s: local %r, remote %r" % (desc, a, b))
                elif desc.startswith("caterva_reduce by") and (a[0] != "ok" or not a[1]):
                    bad.append("%s: no rows: %r" % (desc, a))
            report(not bad, "%s over %s: %d query kinds give the local answers"
                   % (name, kind, len(queries(dims, labels))), "\n".join(bad))
    db.close()


def access(s, since):
    """nginx's log lines from since on, once the last ones are written: nginx logs a request
    after its answer has gone out, so under load the client can be faster than the log (a
    request then counted in the next window: seen as a flaky failure)."""
    import servers
    last = None
    for _ in range(20):
        cur = servers.parse_access_log(s.access_log)
        if last is not None and len(cur) == len(last):
            break
        last = cur
        time.sleep(0.05)
    return cur[since:]


def requests_and_bytes(s, src):
    """From nginx's log: what an open and a one-cell query send."""
    db = connect()
    url = s.nginx_http.rstrip("/") + "/big.b2nd"
    size = os.path.getsize(os.path.join(src, "big.b2nd"))
    n0 = len(access(s, 0))
    open_table(db, "r", url)
    opened = access(s, n0)
    report(len(opened) <= 2 and all(r["range"] not in ("-", "") for r in opened) and
           all(r["status"] == 206 for r in opened),
           "opening a contiguous frame: at most 2 requests, all ranged, none refused (%d)"
           % len(opened), "\n".join(str(r) for r in opened))
    n1 = len(access(s, 0))
    got = rows(db, "SELECT value FROM r WHERE d0 = 20 AND d1 = 15 AND d2 = 30")
    one = access(s, n1)
    fetched = sum(int(r["body_bytes"]) for r in one)
    report(got[0] == "ok" and len(got[1]) == 1 and 0 < fetched < size * 0.02,
           "a one-cell query fetches %d bytes of a %d-byte file in %d requests"
           % (fetched, size, len(one)), "\n".join(str(r) for r in one))
    open_table(db, "w", url, ", remote_fetch=chunks")
    n2 = len(access(s, 0))
    got2 = rows(db, "SELECT value FROM w WHERE d0 = 20 AND d1 = 15 AND d2 = 30")
    whole = sum(int(r["body_bytes"]) for r in access(s, n2))
    report(got2 == got and whole > fetched, "whole-chunk fetching (remote_fetch=chunks) fetches "
           "more: %d bytes against %d" % (whole, fetched))
    n3 = len(access(s, 0))
    again = rows(db, "SELECT value FROM r WHERE d0 = 20 AND d1 = 15 AND d2 = 30")
    heads = access(s, n3)
    report(again == got and all(r["method"] == "HEAD" for r in heads) and len(heads) <= 1,
           "the same query again: one HEAD (the version check), the blocks from the cache",
           "\n".join(str(r) for r in heads))
    h2 = [r for r in access(s, 0) if r["scheme"] == "https"]
    open_table(db, "h", s.nginx_https.rstrip("/") + "/grid.b2nd")
    rows(db, "SELECT count(*) FROM h WHERE time_index = 1")
    h2 = [r for r in access(s, 0) if r["scheme"] == "https"]
    report(h2 and all(r["protocol"] == "HTTP/2.0" for r in h2),
           "over TLS the requests use HTTP/2 (%d requests)" % len(h2),
           "\n".join(str(r) for r in h2[:5]))
    db.close()


def fault_case(s, db, url, script, want, desc, extra=""):
    """Run a query through the fault front with a script; want: 'same' or an error substring."""
    s.set_faults([])
    open_table(db, "f", url, extra)
    s.set_faults(script)
    got = rows(db, "SELECT count(*), sum(value) FROM f WHERE time_index BETWEEN 3 AND 9")
    s.set_faults([])
    if isinstance(want, list):  # the right answer, or an error saying one of these
        ok = got == want[0] or (got[0] == "error" and any(w in got[1] for w in want[1:]))
    else:
        ok = got == want if isinstance(want, tuple) else (got[0] == "error" and want in got[1])
    report(ok, desc, "got %r, want %r" % (got, want))
    return got


def faults(s, src):
    import servers
    db = connect()
    local = os.path.join(src, "grid.b2nd")
    open_table(db, "l", local)
    want = rows(db, "SELECT count(*), sum(value) FROM l WHERE time_index BETWEEN 3 AND 9")
    url = s.fault_url.rstrip("/") + "/grid.b2nd"
    ranged = {"path": "grid", "ranged": True}
    for fault in (503, 429, "slowdown", 500, 502, 504, "reset", "truncate"):
        n0 = len(servers.read_json_log(s.fault_log))
        fault_case(s, db, url, [dict(ranged, fault=fault, times=2)], want,
                   "fault %s on two requests: retried, the answer is right" % fault)
        seen = [e for e in servers.read_json_log(s.fault_log)[n0:] if e.get("fault")]
        report(len(seen) == 2, "fault %s: the front answered it twice (its log)" % fault,
               json.dumps(seen)[:800])
    fault_case(s, db, url, [dict(ranged, fault=503)], "retries exhausted",
               "503 on every request: a clear error after the retries", ", http_retries=2")
    # requests of the case before still in flight when it failed reach the front's log late:
    # let them land before counting
    time.sleep(0.5)
    n0 = len(servers.read_json_log(s.fault_log))
    fault_case(s, db, url, [{"path": "grid", "fault": 404}], "HTTP 404",
               "404: an error naming the status")
    seen = [(e.get("method"), e.get("target"), e.get("range"))
            for e in servers.read_json_log(s.fault_log)[n0:] if e.get("fault")]
    report(seen and len(seen) == len(set(seen)), "404: no request was sent again (%d requests)"
           % len(seen), "\n".join(map(str, seen)))
    big = os.path.join(s.root, "big.b2nd")
    shutil.copyfile(os.path.join(GOLDEN, GOLDEN_PICK[0]), big) if os.path.exists(
        os.path.join(GOLDEN, GOLDEN_PICK[0])) else shutil.copyfile(local, big)
    s.set_faults([{"path": "big", "fault": "ignore_range"}])
    got = rows(db, "SELECT count(*) FROM caterva_reduce('%s', 'mean', 'd0')"
               % (s.fault_url.rstrip("/") + "/big.b2nd"))
    s.set_faults([])
    if os.path.getsize(big) > 4 << 20:
        report(got[0] == "error" and "ignored the Range" in got[1],
               "a server ignoring Range on a large object: an error, no download", got)
    else:
        report(got[0] == "ok", "a server ignoring Range on a small object: the slice is taken", got)
    for kind in ("garbage",):
        got = fault_case(s, db, url, [dict(ranged, fault=kind, times=1, nth=[4, 5, 6])],
                         [want, "corrupt", "malformed"], "garbage bytes (same length) in an "
                         "answer: an error or the right answer, never other rows")
    got = rows(db, "SELECT 1")
    fault_case(s, db, url, [dict(ranged, fault="delay", delay_ms=1500)], "Timeout",
               "a server slower than http_timeout_ms: a timeout error after the retries",
               ", http_timeout_ms=300, http_retries=1")
    # sqlite3_interrupt() stops a stalled transfer
    open_table(db, "f", url)
    s.set_faults([dict(ranged, fault="delay", delay_ms=20000)])
    timer = threading.Timer(0.5, db.interrupt)
    t0 = time.time()
    timer.start()
    got = rows(db, "SELECT sum(value) FROM f WHERE time_index = 30 AND lat_index = 3")
    took = time.time() - t0
    timer.cancel()
    s.set_faults([])
    report(got[0] == "error" and "interrupt" in got[1].lower() and took < 5,
           "sqlite3_interrupt() stops a stalled transfer (%.2f s)" % took, got)
    db.close()


def s3_auth(s, src):
    """Each scenario opens another key: an open array keeps the credentials of its open."""
    db = connect()
    with open(os.path.join(src, "grid.b2nd"), "rb") as f:
        data = f.read()
    for k in range(5):
        s.s3_put("auth%d.b2nd" % k, data)
    url = "s3://%s/auth0.b2nd" % s.bucket
    open_table(db, "l", os.path.join(src, "grid.b2nd"))
    want = rows(db, "SELECT count(*), sum(value) FROM l WHERE lat_index = 2")
    cred = s.credentials[0]
    os.environ["AWS_SECRET_ACCESS_KEY"] = "WRONG" + cred["secret_key"]
    got = rows(db, "SELECT caterva_info('%s')" % url)
    secret_seen = cred["secret_key"] in str(got) or "WRONG" in str(got)
    report(got[0] == "error" and "SignatureDoesNotMatch" in got[1] and "403" in got[1] and
           not secret_seen, "a wrong secret: 403 SignatureDoesNotMatch, the secret not in the message",
           got)
    os.environ["AWS_SECRET_ACCESS_KEY"] = cred["secret_key"]
    info = rows(db, "SELECT caterva_info('%s')" % url)
    report(info[0] == "ok" and cred["secret_key"] not in str(info) and
           cred["access_key"] not in str(info), "caterva_info holds no credential")
    tok = s.credentials[1]
    os.environ.update(AWS_ACCESS_KEY_ID=tok["access_key"], AWS_SECRET_ACCESS_KEY=tok["secret_key"],
                      AWS_SESSION_TOKEN=tok["session_token"])
    open_table(db, "r", url.replace("auth0", "auth1"))
    report(rows(db, "SELECT count(*), sum(value) FROM r WHERE lat_index = 2") == want,
           "temporary credentials (AWS_SESSION_TOKEN) work")
    os.environ.pop("AWS_SESSION_TOKEN")
    got = rows(db, "SELECT caterva_info('%s')" % url.replace("auth0", "auth2"))
    report(got[0] == "error" and "403" in got[1], "the same key without its token: 403", got)
    os.environ.update(AWS_ACCESS_KEY_ID=cred["access_key"], AWS_SECRET_ACCESS_KEY=cred["secret_key"],
                      AWS_NO_SIGN_REQUEST="YES")
    got = rows(db, "SELECT caterva_info('%s')" % url.replace("auth0", "auth3"))
    report(got[0] == "error" and "AccessDenied" in got[1],
           "anonymous (AWS_NO_SIGN_REQUEST=YES) to a bucket that needs a signature: AccessDenied",
           got)
    os.environ["AWS_ENDPOINT_URL"] = s.s3_anon_endpoint
    open_table(db, "a", url.replace("auth0", "auth4"))
    report(rows(db, "SELECT count(*), sum(value) FROM a WHERE lat_index = 2") == want,
           "anonymous access to a public endpoint works")
    os.environ.pop("AWS_NO_SIGN_REQUEST")
    os.environ["AWS_ENDPOINT_URL"] = s.s3_endpoint
    open_table(db, "e", url, ", endpoint='%s'" % s.s3_endpoint)
    report(rows(db, "SELECT count(*), sum(value) FROM e WHERE lat_index = 2") == want,
           "endpoint= table option")
    db.close()


def hinted_blocks(s, src):
    """Block starts recorded in the statistics let a box be fetched with its chunks' headers, in
    one wave; starts recorded for other chunk bytes (a foreign writer kept our trailer) are
    caught by the header that arrives with them: a second wave, the right rows."""
    db = connect()
    tools = os.path.join(os.path.abspath(BUILD), "tests", "tools")
    a, b = os.path.join(src, "hint_a.b2nd"), os.path.join(src, "hint_b.b2nd")
    for path, k in ((a, 7919), (b, 104723)):
        db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='60,100,100', "
                   "dtype='float32', chunks='30,50,100', blocks='10,10,20', codec=lz4)" % path)
        db.execute(SERIES.replace("63", "99") + "INSERT INTO g(d0, d1, d2, value) SELECT "
                   "a.value, b.value, c.value, ((a.value * %d + b.value * 104729 + c.value * "
                   "1299709) %% 10007) * 0.001 FROM n a, n b, n c WHERE a.value < 60" % k)
        db.execute("DROP TABLE g")
    many = os.path.join(src, "hint_many.b2nd")  # 24 chunks
    db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='60,100,100', dtype='float32', "
               "chunks='10,50,50', blocks='10,10,25', codec=lz4)" % many)
    db.execute(SERIES.replace("63", "99") + "INSERT INTO g(d0, d1, d2, value) SELECT a.value, "
               "b.value, c.value, ((a.value * 31 + b.value * 17 + c.value) % 1009) * 0.01 "
               "FROM n a, n b, n c WHERE a.value < 60")
    db.execute("DROP TABLE g")
    stale = os.path.join(src, "hint_stale.b2nd")
    shutil.copyfile(a, stale)
    subprocess.run([os.path.join(tools, "cpstats"), b, stale], check=True)
    s.publish(src, ["hint_a.b2nd", "hint_stale.b2nd", "hint_many.b2nd"])
    box = "SELECT count(*), sum(value) FROM {t} WHERE d0 BETWEEN 12 AND 17 AND d1 BETWEEN 21 " \
          "AND 28 AND d2 BETWEEN 44 AND 57"
    pred = "SELECT count(*), sum(value) FROM {t} WHERE d0 < 20 AND value > 9.9"
    open_table(db, "la", a)
    want = rows(db, box.format(t="la"))
    want_pred = rows(db, pred.format(t="la"))
    open_table(db, "ls", stale)
    report(rows(db, box.format(t="ls")) == want and rows(db, pred.format(t="ls")) == want_pred,
           "statistics written for other chunk bytes: local reads give the same answers")
    base = s.nginx_http.rstrip("/")
    for name, most in (("hint_a.b2nd", 1), ("hint_stale.b2nd", 2)):
        open_table(db, "r", base + "/" + name)
        s0 = remote_stats(db, "r")
        got = rows(db, box.format(t="r"))
        s1 = remote_stats(db, "r")
        waves = s1["waves"] - s0["waves"]
        ratio = (s1["bytes"] - s0["bytes"]) / max(1, s1["needed"] - s0["needed"])
        report(got == want and waves == most and (most > 1 or ratio <= 1.25),
               "a box of %s: %d wave(s) (want %d), fetched/needed %.2f, the local rows"
               % (name, waves, most, ratio), "%r %r %r %r" % (got, want, s0, s1))
    db.close()
    stats_in_waves(base, [("hint_many.b2nd", many), ("hint_stale.b2nd", stale)])


def stats_in_waves(base, arrays):
    """Trusting a chunk's statistics checks its fingerprint against its bytes: a reduction
    answered from them and a scan whose value predicate skips blocks by them fetch the chunks
    to check together, in a few waves, not one wave per chunk (each on a new connection, so
    that nothing is checked already); the answers are the local file's."""
    queries = (("a sum answered from the statistics", "SELECT value, n FROM "
                "caterva_reduce('{t}', 'sum', '')"),
               ("a value predicate", "SELECT count(*), sum(value) FROM {t} WHERE value > 9.5"))
    for name, path in arrays:
        for what, q in queries:
            dl, dr = connect(), connect()
            open_table(dl, "t", path)
            open_table(dr, "t", base + "/" + name)
            want = rows(dl, q.format(t="t"))
            nchunks = json.loads(dl.execute("SELECT caterva_info('t')").fetchone()[0])["nchunks"]
            s0 = remote_stats(dr, "t")
            got = rows(dr, q.format(t="t"))
            s1 = remote_stats(dr, "t")
            waves = s1["waves"] - s0["waves"]
            report(got == want and want[0] == "ok" and waves <= 3,
                   "%s over %s (%d chunks): %d waves, the local answer"
                   % (what, name, nchunks, waves), "%r %r %r %r" % (got, want, s0, s1))
            dl.close()
            dr.close()


def flipped_blocks(s, src):
    """A byte flipped in the middle of a block's compressed bytes (tests/tools/flipblock) of an
    array this extension wrote, served as it is: every query that decodes the block fails with
    the corrupt-block error naming the URL, the chunk and the block (never rows), over http and
    s3, fetching blocks or whole chunks, contiguous and sparse; the undamaged copy gives the
    local answers. The block checks are on for remote arrays by default."""
    db = connect()
    tools = os.path.join(os.path.abspath(BUILD), "tests", "tools")
    qs = [("a box", "SELECT count(*), sum(value) FROM {t} WHERE d0 BETWEEN 20 AND 29 AND d1 "
           "BETWEEN 50 AND 74"),
          ("a full scan", "SELECT count(*), sum(value), max(value) FROM {t}"),
          ("a value predicate", "SELECT count(*) FROM {t} WHERE value > 1.5"),
          ("caterva_slice", "SELECT hex(caterva_slice({p}, '[20,50]', '[30,75]'))"),
          ("caterva_reduce", "SELECT value FROM caterva_reduce({p}, 'sum', '')")]
    names = []
    for sparse in (0, 1):
        good = "flipgood%d.b2nd" % sparse
        bad = "flipbad%d.b2nd" % sparse
        db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='60,100', dtype='float64', "
                   "chunks='30,50', blocks='10,25', codec=lz4%s)"
                   % (os.path.join(src, good), ", sparse=1" if sparse else ""))
        db.execute(SERIES.replace("63", "99") + "INSERT INTO g(d0, d1, value) SELECT a.value, "
                   "b.value, ((a.value * 7919 + b.value * 104729) % 10007) * 0.000317 FROM n a, "
                   "n b WHERE a.value < 60")
        db.execute("DROP TABLE g")
        copy = shutil.copytree if sparse else shutil.copyfile
        copy(os.path.join(src, good), os.path.join(src, bad))
        subprocess.run([os.path.join(tools, "flipblock"), os.path.join(src, bad), "1", "4"],
                       check=True, capture_output=True)
        names += [good, bad]
    s.publish(src, names)
    base = s.nginx_http.rstrip("/")
    for sparse in (0, 1):
        local = os.path.join(src, "flipgood%d.b2nd" % sparse)
        open_table(db, "lg", local)
        want = [rows(db, q.format(t="lg", p="'%s'" % local)) for _, q in qs]
        for how, url_of, extra in (("http", lambda n: base + "/" + n, ""),
                                   ("http, whole chunks", lambda n: base + "/" + n,
                                    ", remote_fetch=chunks"),
                                   ("s3", lambda n: "s3://%s/%s" % (s.bucket, n), "")):
            kind = "%s %s" % ("sparse" if sparse else "contiguous", how)
            good = url_of("flipgood%d.b2nd" % sparse)
            bad = url_of("flipbad%d.b2nd" % sparse)
            open_table(db, "rg", good, extra)
            got = [rows(db, q.format(t="rg", p="'%s'" % good)) for _, q in qs]
            report(got == want and all(g[0] == "ok" for g in got),
                   "%s: the undamaged copy gives the local answers with the block checks on"
                   % kind, "%r %r" % (got, want))
            open_table(db, "rb", bad, extra)
            got = [rows(db, q.format(t="rb", p="'%s'" % bad)) for _, q in qs]
            wrong = [n for (n, _), g in zip(qs, got) if not (
                g[0] == "error" and "corrupt block" in g[1] and bad in g[1] and
                "chunk 1," in g[1] and "block 4:" in g[1])]
            report(not wrong, "%s: a flipped byte in block 4 of chunk 1 is the corrupt-block error "
                   "naming the URL, chunk and block (box, full scan, value predicate, slice, "
                   "reduce)" % kind, "%r %r" % (wrong, got))
    db.close()


def remote_stats(db, table):
    return json.loads(db.execute("SELECT caterva_info('%s')" % table).fetchone()[0])["remote"]


def fetch_ahead(s, src):
    """Scans longer than one portion (16 MB of blocks): the next portion is fetched by a thread
    while the rows of the current one are read. Same rows as the local file; a scan stopped
    early (LIMIT), a fault on a later portion (reported, never other rows), and
    sqlite3_interrupt() during the overlapped transfers (stops promptly)."""
    db = connect()
    path = os.path.join(src, "long.b2nd")
    db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='170,256,256', dtype='float32', "
               "chunks='10,128,128', blocks='5,32,64', codec=zstd)" % path)
    db.execute(SERIES.replace("63", "255") + "INSERT INTO g(d0, d1, d2, value) SELECT a.value, "
               "b.value, c.value, (a.value * 3 + b.value) % 17 + c.value * 0.5 FROM n a, n b, n c "
               "WHERE a.value < 170")
    db.execute("DROP TABLE g")
    s.publish(src, ["long.b2nd"])
    open_table(db, "l", path)
    queries = ["SELECT count(*), sum(value), min(value), max(value) FROM {t}",
               "SELECT count(*), sum(value) FROM {t} WHERE d1 BETWEEN 100 AND 140",
               "SELECT d0, d1, d2, value FROM {t} WHERE d2 = 7 AND d1 = 9 ORDER BY d0",
               "SELECT sum(value) FROM (SELECT value FROM {t} LIMIT 3000000)"]
    want = [rows(db, q.format(t="l")) for q in queries]
    for kind, url in (("http", s.nginx_http.rstrip("/") + "/long.b2nd"),
                      ("s3", "s3://%s/long.b2nd" % s.bucket)):
        open_table(db, "r", url)
        got = [rows(db, q.format(t="r")) for q in queries]
        bad = [(q, a, b) for q, a, b in zip(queries, want, got) if a != b]
        report(not bad, "a scan of %d portions over %s: %d queries give the local answers"
               % (170 * 256 * 256 * 4 // (16 << 20) + 1, kind, len(queries)), repr(bad)[:800])
    # a fault on a later portion: the fetch-ahead drops it, the reader asks again and reports
    url = s.fault_url.rstrip("/") + "/long.b2nd"
    open_table(db, "f", url)
    s.set_faults([{"path": "long", "ranged": True, "nth": list(range(12, 400)), "fault": 404}])
    got = rows(db, queries[0].format(t="f"))
    s.set_faults([])
    report(got[0] == "error" and "404" in got[1], "a 404 on a later portion: an error naming "
           "it, no rows", got)
    open_table(db, "f", url)
    got = rows(db, queries[0].format(t="f"))
    report(got == want[0], "the same scan again without the fault: the local answer", got)
    # sqlite3_interrupt() while portions are fetched ahead through a slow link
    open_table(db, "f", url)
    s.set_shape(delay_ms=20, rate=2_000_000)
    timer = threading.Timer(0.8, db.interrupt)
    t0 = time.time()
    timer.start()
    got = rows(db, queries[0].format(t="f"))
    took = time.time() - t0
    timer.cancel()
    s.set_shape(delay_ms=0, rate=0)
    report(got[0] == "error" and "interrupt" in got[1].lower() and took < 3,
           "sqlite3_interrupt() during fetched-ahead transfers stops the scan (%.2f s)" % took, got)
    db.close()


def versions_and_probes(s, src):
    """The version check rides on a statement's first wave; a sparse frame is probed only when
    its URL is not a frame; an object replaced between statements (even by one of another shape)
    is read anew, never mixed."""
    db = connect()
    base = s.nginx_http.rstrip("/")
    # a cold query after the open: no HEAD, the answers' ETags are the check
    open_table(db, "c", base + "/big.b2nd")
    n0 = len(access(s, 0))
    got = rows(db, "SELECT value FROM c WHERE d0 = 70 AND d1 = 70 AND d2 = 40")
    reqs = access(s, n0)
    report(got[0] == "ok" and reqs and all(r["method"] == "GET" for r in reqs),
           "a cold query sends no HEAD: its first wave checks the version (%d requests)"
           % len(reqs), "\n".join(str(r) for r in reqs))
    # sparse frames: with a trailing '/', no probe of the directory's name
    local = connect()
    open_table(local, "lp", os.path.join(src, "grid_sparse.b2frame"))
    want = rows(local, "SELECT count(*), sum(value) FROM lp")
    for url, refused in ((base + "/grid_sparse.b2frame", 1), (base + "/grid_sparse.b2frame/", 0)):
        n0 = len(access(s, 0))
        open_table(db, "p", url)
        # only the frame's own requests: ranged reads of an earlier table's read-ahead may
        # still be logged after n0 (seen under ASan: four GETs of /grid.b2nd)
        opened = [r for r in access(s, n0) if r["uri"].startswith("/grid_sparse.b2frame")]
        got = rows(db, "SELECT count(*), sum(value) FROM p")
        bad = [r for r in opened if r["status"] not in (200, 206)]
        report(got == want and len(bad) <= refused and len(opened) <= 1 + refused + 1,
               "a sparse frame at %s opens in %d requests, %d refused (at most %d)"
               % (url[len(base):], len(opened), len(bad), refused),
               "%r %r\n%s" % (got, want, "\n".join(str(r) for r in opened)))
    # replaced before the first query of a cold table (the first wave sees the new ETag), and
    # replaced after a cached query (the HEAD sees it), by an array of another shape
    path = os.path.join(s.root, "swap2.b2nd")
    small = os.path.join(src, "swap_small.b2nd")
    local.execute("CREATE VIRTUAL TABLE m USING caterva('%s', shape='20,30', dtype='int32', "
                  "chunks='10,10', blocks='5,5')" % small)
    local.execute(SERIES + "INSERT INTO m(d0, d1, value) SELECT a.value, b.value, a.value * 100 "
                  "+ b.value FROM n a, n b WHERE a.value < 20 AND b.value < 30")
    local.execute("DROP TABLE m")
    sql = "SELECT count(*), sum(value) FROM %s WHERE d0 >= 0"
    open_table(local, "ls", small)
    open_table(local, "li", os.path.join(src, "ints.b2nd"))
    want_small, want_ints = rows(local, sql % "ls"), rows(local, sql % "li")
    for when in ("cold", "cached"):
        shutil.copyfile(os.path.join(src, "ints.b2nd"), path)
        open_table(db, "v2", base + "/swap2.b2nd")
        before = rows(db, sql % "v2") if when == "cached" else want_ints
        shutil.copyfile(small, path + ".new")
        os.replace(path + ".new", path)
        n0 = len(access(s, 0))
        after = rows(db, sql % "v2")
        reqs = access(s, n0)
        heads = [r for r in reqs if r["method"] == "HEAD"]
        report(before == want_ints and after == want_small and
               len(heads) == (1 if when == "cached" else 0),
               "replaced by an array of another shape, %s: the next statement reads the new one "
               "(%r, then %r; %d requests, %d HEAD)" % (when, before, after, len(reqs), len(heads)),
               "\n".join(str(r) for r in reqs))
    # replaced by a larger array, the next statement's box outside the shape opened: no block
    # read would make the version check, so the empty box makes it (0 rows before)
    shutil.copyfile(small, path)
    open_table(db, "v3", base + "/swap2.b2nd")
    q = "SELECT count(*), sum(value) FROM %s WHERE d0 = 30"
    before = rows(db, q % "v3")
    shutil.copyfile(os.path.join(src, "ints.b2nd"), path + ".new")
    os.replace(path + ".new", path)
    after, want = rows(db, q % "v3"), rows(local, q % "li")
    report(before == ("ok", [(0, None)]) and after == want and want[1][0][0] == 48,
           "replaced by a larger array: a box outside the shape opened (empty before) reads the "
           "new one (%r, then %r)" % (before, after))
    # caterva_reduce over the table, replaced between two calls: the second reduces the new one
    red = "SELECT value, n FROM caterva_reduce('%s', 'sum', 'd0,d1')"
    before = rows(db, red % "v3")
    shutil.copyfile(small, path + ".new")
    os.replace(path + ".new", path)
    after = rows(db, red % "v3")
    report(before == rows(local, red % "li") and after == rows(local, red % "ls") and
           before != after, "replaced between two caterva_reduce calls over the table: the "
           "second reduces the new one (%r, then %r)" % (before, after))
    local.close()
    db.close()


def tls_and_consistency(s, src):
    db = connect()
    url = s.nginx_https.rstrip("/") + "/ints.b2nd"
    ca = os.environ.pop("CURL_CA_BUNDLE")
    got = rows(db, "SELECT caterva_info('%s')" % url)
    report(got[0] == "error" and ("certificate" in got[1].lower() or "ssl" in got[1].lower()),
           "without the test CA the server's certificate is refused", got)
    os.environ["CURL_CA_BUNDLE"] = ca
    # an object replaced between two statements is read anew
    path = os.path.join(s.root, "swap.b2nd")
    shutil.copyfile(os.path.join(src, "ints.b2nd"), path)
    open_table(db, "v", s.nginx_http.rstrip("/") + "/swap.b2nd")
    first = rows(db, "SELECT sum(value) FROM v")
    ldb = connect()
    tmp = os.path.join(src, "ints2.b2nd")
    shutil.copyfile(os.path.join(src, "ints.b2nd"), tmp)
    ldb.execute("CREATE VIRTUAL TABLE x USING caterva('%s')" % tmp)
    ldb.execute("UPDATE x SET value = value + 1000 WHERE d0 < 8")
    want = rows(ldb, "SELECT sum(value) FROM x")
    ldb.close()
    os.replace(tmp, path + ".new") if False else shutil.copyfile(tmp, path + ".new")
    os.replace(path + ".new", path)
    second = rows(db, "SELECT sum(value) FROM v")
    report(first != second and second == want, "an object replaced between two statements is "
           "read anew by the second (%r, then %r)" % (first, second))
    # read-only
    got = rows(db, "INSERT INTO v(d0, d1, value) VALUES (0, 0, 1)")
    report(got[0] == "error" and "read-only" in got[1] and "http(s)" in got[1] and
           "swap.b2nd" in got[1],
           "INSERT into an http:// array: an error naming the URL and saying http(s) is read-only",
           got)
    got = rows(db, "CREATE VIRTUAL TABLE n USING caterva('%s/new.b2nd', shape='4', dtype='int8')"
               % s.nginx_http.rstrip("/"))
    report(got[0] == "error" and "read-only" in got[1], "creation options on a URL: an error", got)
    got = rows(db, "CREATE VIRTUAL TABLE n USING caterva('%s', endpoint='http://x')"
               % os.path.join(src, "ints.b2nd"))
    report(got[0] == "error" and "remote arrays" in got[1],
           "remote options on a local path: an error", got)
    db.close()


def waves_of(entries, gap_s):
    """Waves in a front's log entries: runs of requests whose arrivals are closer than gap_s."""
    ts = sorted(e["t"] for e in entries)
    return sum(1 for k, t in enumerate(ts) if k == 0 or t - ts[k - 1] > gap_s)


def copy_in_waves(s, src):
    """caterva_copy of a remote array fetches its stored chunks a batch per wave (it took a
    wave per chunk, twice: 16 chunks here, 32 waves and more), through a front delaying every
    request by 40 ms, so that one wave is a burst of requests and the next comes 40 ms later;
    the copy holds the local array's cells."""
    import servers
    local = connect()
    for name in ("grid.b2nd", "grid_sparse.b2frame"):
        dst = os.path.join(src, "copied_" + name.replace("/", ""))
        open_table(local, "w", os.path.join(src, name))
        want = rows(local, "SELECT count(*), sum(value) FROM w")
        local.execute("DROP TABLE w")
        url = s.fault_url.rstrip("/") + "/" + name + ("/" if "sparse" in name else "")
        s.set_faults([])
        s.set_shape(delay_ms=40, front="http")
        time.sleep(0.3)  # requests of earlier cases still landing
        n0 = len(servers.read_json_log(s.fault_log))
        db = connect()
        try:
            n = db.execute("SELECT caterva_copy(?, ?)", (url, dst)).fetchone()[0]
        except sqlite3.Error as e:
            n = str(e)
        db.close()
        s.set_shape(delay_ms=0, front="http")
        seen = [e for e in servers.read_json_log(s.fault_log)[n0:]
                if name.split(".")[0] in e.get("target", "")]
        waves = waves_of(seen, 0.02)
        open_table(local, "c", dst)
        got = rows(local, "SELECT count(*), sum(value) FROM c")
        local.execute("DROP TABLE c")
        report(n == 16 and got == want and waves <= 8,
               "caterva_copy of %s over http (16 chunks, 40 ms a request): %d waves of %d "
               "requests, the local cells" % (name, waves, len(seen)),
               "%r %r %r waves %d" % (n, got, want, waves))
    local.close()


def all_cases(s, work):
    src = os.path.join(work, "src")
    os.makedirs(src)
    made = make_arrays(src)
    s.publish(src, [m[0] for m in made])
    differential(s, src, made)
    requests_and_bytes(s, src)
    faults(s, src)
    s3_auth(s, src)
    versions_and_probes(s, src)
    hinted_blocks(s, src)
    flipped_blocks(s, src)
    fetch_ahead(s, src)
    copy_in_waves(s, src)
    tls_and_consistency(s, src)


def main():
    try:
        import servers
    except Exception as e:  # pragma: no cover
        print("1..0 # SKIP tests/remote/servers.py: %s" % e)
        return 0
    missing = [b for b in ("nginx", "openssl") if shutil.which(b) is None and
               not os.path.exists("/usr/sbin/" + b)]
    if missing or servers.find_s3rver() is None:
        print("1..0 # SKIP needs %s (sh tests/remote/deps.sh installs them)"
              % (", ".join(missing) or "s3rver"))
        return 0
    return with_servers("test_remote.", "nginx,s3,fronts", all_cases, endpoint="s3_endpoint")


if __name__ == "__main__":
    sys.exit(main())

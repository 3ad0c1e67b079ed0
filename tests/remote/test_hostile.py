#!/usr/bin/env python3
"""Hostile servers (TAP, issue 39 part 3): a remote array read through a server of ours on
127.0.0.1 that answers wrongly in one way per case. Each statement must end with a clear error
(its text names the problem) within http_timeout_ms x (http_retries + 1) plus MARGIN_S, and the
memory of the process running it (VmHWM, from /proc, reset before the statement with
/proc/self/clear_refs) may grow by at most remote_cache_mb plus MEM_SLACK_MB.

The servers: nginx serves the arrays (tests/remote/procs.py); fault fronts of ours before it
(tests/remote/fronts.py, FaultFront: the hostile faults endless, huge_length, trickle, redirect,
long_body, wrong_range, gzip, claim_200, bad_chunked, silent, and the older garbage) answer
every ranged GET of the array wrongly once the table is open. Each statement runs in a
subprocess (a Python with the extension loaded), so its memory and time are its own.

- endless body, Content-Length 2^62, one byte every half second, a redirect loop, a body longer
  than its range, a range other than the one asked, random bytes, an unasked gzip
  Content-Encoding, a 200 claiming 2^40 bytes, chunked encoding with bad sizes (not hex; too
  many hex digits), a server that accepts and never answers: an error naming the problem.
- a redirect to another host, on an s3:// request signed with SigV4: not followed; the other
  host (a second front on another port that records request headers) sees no request, so no
  Authorization header nor credential reaches it.
- a server that goes away in the middle of a full scan of the demo grid (a year, six fetch
  portions of 16 MB; it stops at the 4th ranged GET of the second portion, HOSTILE_AT): the
  statement fails within one retry cycle (the backoffs of http_retries retries of a refused
  connection) plus MARGIN_S of the stop, not one cycle per pending chunk (issue 39: 5.5 s
  with http_retries=2 before the fix, 23 s with the default 4).
- a byte flipped in a block (tests/tools/flipblock) of an array with statistics: the
  corrupt-block error over http and from the local file.

- a reset (RST_STREAM) in the middle of an HTTP/2 stream: our HTTP/2 server over TLS
  (tests/remote/h2front.py, python3-h2; libcurl negotiates h2 with it through ALPN).

HOSTILE_ONLY=control,hostile,redirect,h2,away,flipped runs some parts only (debugging);
HOSTILE_DEBUG=1 prints the mid-scan front's log.
Needs nginx, openssl and python3-h2 (tests/remote/deps.sh); skipped with a reason otherwise.
Environment: top_builddir, CATERVA_PRELOAD (sanitizer builds: bounds get SAN_FACTOR).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from sqltap import connect_ext, plan, reexec_with_preload, report  # noqa: E402

BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
EXT = os.path.join(BUILD, ".libs", "caterva")
SAN = bool(os.environ.get("CATERVA_PRELOAD"))
# Sanitizer builds run several times slower and keep freed memory in quarantine (capped below).
SAN_FACTOR = 2.0 if SAN else 1.0
TIMEOUT_MS, RETRIES, CACHE_MB = 1000, 1, 4
MARGIN_S = 1.5 * SAN_FACTOR
MEM_SLACK_MB = 24 if not SAN else 48
OPTS = ", http_timeout_ms=%d, http_retries=%d, remote_cache_mb=%d" % (TIMEOUT_MS, RETRIES, CACHE_MB)

# The statement's process: opens the table, says "ready", waits for a line (the parent sets the
# fault), then runs the query and prints what happened as JSON.
CHILD = r"""
import json, sqlite3, sys, time
cfg = json.loads(sys.argv[1])
def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
db = sqlite3.connect(":memory:", isolation_level=None)
db.enable_load_extension(True)
db.load_extension(cfg["ext"])
out = {}
try:
    db.execute(cfg["open"])
except sqlite3.Error as e:
    out["open_error"] = str(e)
print("ready", flush=True)
sys.stdin.readline()
with open("/proc/self/clear_refs", "w") as f:  # VmHWM := VmRSS
    f.write("5")
out["rss0"] = status("VmRSS")
out["t0"] = time.time()
try:
    out["rows"] = db.execute(cfg["query"]).fetchall()
except sqlite3.Error as e:
    out["error"] = str(e)
out["t1"] = time.time()
out["hwm"] = status("VmHWM")
print(json.dumps(out), flush=True)
"""

PORTION = 16 << 20  # the fetch-ahead's portion of a remote scan (core/array_iter.c)
QUERY = "SELECT count(*), sum(value), max(value) FROM r WHERE value > -1000"


class Statement:
    """One statement in a subprocess: start() opens the table, go() runs the query, result()."""

    def __init__(self, url, extra=OPTS, query=QUERY):
        cfg = {"ext": EXT, "open": "CREATE VIRTUAL TABLE r USING caterva('%s'%s)" % (url, extra),
               "query": query}
        env = dict(os.environ)
        if SAN:  # freed memory kept in quarantine would count as growth
            env["ASAN_OPTIONS"] = "detect_leaks=0:quarantine_size_mb=8:" + env.get("ASAN_OPTIONS", "")
        self.p = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(cfg)], env=env,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        if line.strip() != "ready":
            raise RuntimeError("the statement's process did not start: %r" % line)

    def go(self):
        self.t_go = time.time()
        self.p.stdin.write("go\n")
        self.p.stdin.flush()

    def result(self, limit=120):
        try:
            out, _ = self.p.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.communicate()
            return {"error": "(the statement did not end within %d s)" % limit, "t0": 0,
                    "t1": limit, "rss0": 0, "hwm": 0}
        try:
            return json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            return {"error": "(the statement's process died: exit %s, %r)"
                    % (self.p.returncode, out[-300:]), "t0": 0, "t1": 0, "rss0": 0, "hwm": 0}


def bound_s(timeout_ms=TIMEOUT_MS, retries=RETRIES):
    return timeout_ms / 1000.0 * (retries + 1) + MARGIN_S


def judge(desc, r, want, bound, cache_mb=CACHE_MB):
    took = r["t1"] - r["t0"]
    grew = (r["hwm"] - r["rss0"]) / 1024.0
    err = r.get("error", "")
    named = "error" in r and any(w in err for w in want)
    report(named and took <= bound and grew <= cache_mb + MEM_SLACK_MB and "open_error" not in r,
           "%s: an error naming it in %.2f s (bound %.1f s), memory +%.1f MB (bound %d + %d MB)"
           % (desc, took, bound, grew, cache_mb, MEM_SLACK_MB),
           "want one of %r; got %r" % (want, {k: v for k, v in r.items() if k != "rows"}
                                       if "error" in r else r))
    if named:
        print("# error: %s" % err)


def hostile_cases(s, front, url):
    """(description, fault rule, words one of which the error must hold)."""
    ranged = {"path": "demo", "ranged": True}
    cases = [
        ("an endless body (a 206 without Content-Length)", dict(ranged, fault="endless"),
         ["more bytes than asked"]),
        ("Content-Length 2^62", dict(ranged, fault="huge_length"), ["more bytes than asked"]),
        ("one byte every half second", dict(ranged, fault="trickle", delay_ms=500),
         ["Timeout", "timed out"]),
        ("a redirect loop (to itself)", dict(ranged, fault="redirect", status=302,
                                             location=front.url + "{target}"), ["redirect"]),
        ("a body longer than its range", dict(ranged, fault="long_body", bytes=4096),
         ["more bytes than asked", "longer than"]),
        ("a range other than the one asked", dict(ranged, fault="wrong_range"),
         ["other bytes than asked"]),
        ("random bytes", dict(ranged, fault="garbage"), ["corrupt"]),
        ("an unasked gzip Content-Encoding", dict(ranged, fault="gzip"),
         ["Content-Encoding that was not asked for"]),
        ("a 200 claiming 2^40 bytes", dict(ranged, fault="claim_200"),
         ["ignored the Range header"]),
        ("chunked encoding, a size that is not hex", dict(ranged, fault="bad_chunked", size="zz"),
         ["chunked-encoding"]),
        ("chunked encoding, a size of 17 hex digits",
         dict(ranged, fault="bad_chunked", size="1" + "0" * 16), ["chunked-encoding"]),
        ("a server that accepts and never answers", dict(ranged, fault="silent"),
         ["Timeout", "timed out"]),
    ]
    for desc, rule, want in cases:
        front.set_script([])
        st = Statement(url)
        front.set_script([rule])
        st.go()
        judge(desc, st.result(), want, bound_s())
    front.set_script([])


def control(url, want_rows):
    st = Statement(url)
    st.go()
    r = st.result()
    report(r.get("rows") == want_rows, "no fault: the remote answer is the local one, memory +%.1f MB"
           % ((r["hwm"] - r["rss0"]) / 1024.0), "%r %r" % (r, want_rows))


def redirect_elsewhere(s, src):
    """A signed s3:// request redirected to another host: not followed, nothing reaches it."""
    import servers
    fronts = os.path.join(s.tmp, "fronts")
    other = servers.FaultFront("127.0.0.1", s.nginx.http_port, os.path.join(fronts, "other.log"),
                               log_headers=True).start()
    s3 = servers.FaultFront("127.0.0.1", s.nginx.http_port, os.path.join(fronts, "s3.log")).start()
    try:
        bucket = "hostile"
        os.makedirs(os.path.join(s.root, bucket), exist_ok=True)
        shutil.copyfile(os.path.join(src, "demo.b2nd"), os.path.join(s.root, bucket, "demo.b2nd"))
        cred = servers.CREDENTIALS[0]
        saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
                                                 "AWS_REGION", "AWS_ENDPOINT_URL")}
        os.environ.update(AWS_ACCESS_KEY_ID=cred["access_key"],
                          AWS_SECRET_ACCESS_KEY=cred["secret_key"], AWS_REGION="us-east-1",
                          AWS_ENDPOINT_URL=s3.url)
        try:
            for status in (301, 307):
                st = Statement("s3://%s/demo.b2nd" % bucket)
                seen = [e for e in servers.read_json_log(s3.log_path)]
                signed = [e for e in seen if e.get("method") in ("GET", "HEAD")]
                s3.set_script([{"path": "demo", "fault": "redirect", "status": status,
                                "location": other.url + "{target}"}])
                st.go()
                r = st.result()
                judge("s3:// (SigV4), a %d redirect to another host" % status, r,
                      ["redirect"], bound_s())
                time.sleep(0.2)
                got = servers.read_json_log(other.log_path)
                leaked = [e for e in got if any(k.lower() in ("authorization", "x-amz-security-token")
                                                or cred["access_key"] in v or cred["secret_key"] in v
                                                for k, v in e.get("headers", []))]
                report(signed and not got and not leaked,
                       "s3:// (SigV4), a %d redirect to another host: not followed, the other host "
                       "saw %d requests, %d with credentials (the s3 front saw %d before)"
                       % (status, len(got), len(leaked), len(signed)), json.dumps(got)[:600])
                s3.set_script([])
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    finally:
        other.stop()
        s3.stop()


def goes_away(s, src):
    """The server stops in the middle of a full scan of more than one fetch portion."""
    import servers
    fronts = os.path.join(s.tmp, "fronts")
    front = servers.FaultFront("127.0.0.1", s.nginx.http_port,
                               os.path.join(fronts, "away.log")).start()
    retries, timeout_ms = 2, 60000
    cut = {}

    def stop_front():
        cut["t"] = time.time()
        front.stop()

    # The first portion is the caller's first wave, one ranged GET per chunk (the demo's chunks
    # are 30x90x90 float32); the fetch-ahead's requests for the second follow. The server goes
    # away at the AT-th ranged request, a few chunks into the second portion.
    chunk = 30 * 90 * 90 * 4
    at = -(-PORTION // chunk) + int(os.environ.get("HOSTILE_AT", "4"))

    def script(info):
        if info["range"] is None or not cut.get("armed"):
            return None
        cut["seen"] = cut.get("seen", 0) + 1
        if cut["seen"] == at:
            threading.Thread(target=stop_front, daemon=True).start()
        return None

    url = front.url + "/long.b2nd"
    try:
        st = Statement(url, ", http_timeout_ms=%d, http_retries=%d" % (timeout_ms, retries),
                       "SELECT count(*), sum(value) FROM r")
        front.set_script(script)
        cut["armed"] = True
        st.go()
        r = st.result(limit=300)
    finally:
        front.stop()
    # one retry cycle of a refused connection: the backoffs, 100 ms doubling, at most 1x jitter
    cycle = sum(0.1 * 2 ** k for k in range(retries))
    bound = cycle + MARGIN_S
    after = r["t1"] - cut["t"] if "t" in cut else float("inf")
    err = r.get("error", "")
    grew = (r["hwm"] - r["rss0"]) / 1024.0
    report("t" in cut and "retries exhausted" in err and "connect" in err.lower() and
           after <= bound and r["t1"] - r["t0"] < timeout_ms / 1000.0 * 3 and
           grew <= 64 + MEM_SLACK_MB,
           "a server gone in the middle of a full scan (second portion pending): the error %.2f s "
           "after it went (bound: one retry cycle %.2f s + %.1f s), statement %.2f s, memory "
           "+%.1f MB" % (after, cycle, MARGIN_S, r["t1"] - r["t0"], grew), repr(r)[:800])
    print("# error: %s" % err)
    if os.environ.get("HOSTILE_DEBUG"):
        for e in servers.read_json_log(front.log_path):
            print("# %s" % json.dumps(e))


def h2_reset(s, want):
    """A reset (RST_STREAM) in the middle of an HTTP/2 stream, from our HTTP/2 server over TLS."""
    import servers
    try:
        import h2front
    except ImportError as e:
        report(False, "HTTP/2: our HTTP/2 server needs python3-h2 (tests/remote/deps.sh "
               "installs it): %s" % e)
        return
    ca, cert, key = servers.make_ca(os.path.join(s.tmp, "h2tls"))
    log = os.path.join(s.tmp, "fronts", "h2.log")
    srv = h2front.H2Server(s.root, cert, key, log).start()
    os.environ["CURL_CA_BUNDLE"] = ca
    try:
        url = srv.url + "/demo.b2nd"
        st = Statement(url)
        st.go()
        r = st.result()
        seen = servers.read_json_log(log)
        report(r.get("rows") == want and seen and all(e["alpn"] == "h2" for e in seen),
               "HTTP/2 over TLS, no fault: the local answer, %d requests all over h2" % len(seen),
               "%r %r" % (r, seen[:3]))
        st = Statement(url)
        n0 = len(servers.read_json_log(log))
        srv.reset = True
        st.go()
        r = st.result()
        srv.reset = False
        judge("HTTP/2, each ranged stream reset in the middle of its body", r,
              ["HTTP/2 stream", "INTERNAL_ERROR"], bound_s())
        resets = [e for e in servers.read_json_log(log)[n0:] if e.get("reset")]
        report(len(resets) >= RETRIES + 1 and all(e["alpn"] == "h2" for e in resets),
               "HTTP/2: the server reset %d streams (at least the %d attempts of one range)"
               % (len(resets), RETRIES + 1))
    finally:
        srv.stop()
        os.environ.pop("CURL_CA_BUNDLE", None)


def flipped(s, src):
    """A flipped byte in block 4 of chunk 1 of an array with statistics: the corrupt-block
    error, locally and over http."""
    tools = os.path.join(BUILD, "tests", "tools")
    bad = os.path.join(src, "flip.b2nd")
    shutil.copyfile(os.path.join(src, "demo.b2nd"), bad)
    subprocess.run([os.path.join(tools, "flipblock"), bad, "1", "4"], check=True,
                   capture_output=True)
    shutil.copyfile(bad, os.path.join(s.root, "flip.b2nd"))
    for kind, url in (("local", bad), ("http", s.nginx_http.rstrip("/") + "/flip.b2nd")):
        st = Statement(url, "" if kind == "local" else OPTS)
        st.go()
        r = st.result()
        err = r.get("error", "")
        report("corrupt block" in err and "chunk 1," in err and "block 4" in err and
               url in err, "a flipped byte in a block, %s: the corrupt-block error naming the "
               "array, chunk and block" % kind, repr(r)[:600])


def make_arrays(src):
    mkdemo = os.path.join(BUILD, "tests", "tools", "mkdemo")
    # the hostile cases: a small grid (a few chunks), written with block statistics
    subprocess.run([mkdemo, "-c", "10,30,60", "-b", "5,15,30", os.path.join(src, "small"),
                    "20", "60", "120"], check=True, capture_output=True)
    shutil.copyfile(os.path.join(src, "small", "temp.b2nd"), os.path.join(src, "demo.b2nd"))
    # the scan: the demo grid (a year, 95 MB of float32: six fetch portions)
    subprocess.run([mkdemo, os.path.join(src, "long")], check=True,
                   capture_output=True)
    shutil.copyfile(os.path.join(src, "long", "temp.b2nd"), os.path.join(src, "long.b2nd"))


def main():
    reexec_with_preload()
    probe = connect_ext(EXT)
    if probe is None:
        return 0
    try:
        import servers
    except Exception as e:  # pragma: no cover
        print("1..0 # SKIP tests/remote/servers.py: %s" % e)
        return 0
    missing = [b for b in ("nginx", "openssl") if shutil.which(b) is None and
               not os.path.exists("/usr/sbin/" + b)]
    if missing:
        print("1..0 # SKIP needs %s (sh tests/remote/deps.sh installs them)" % ", ".join(missing))
        return 0
    work = tempfile.mkdtemp(prefix="test_hostile.")
    src = os.path.join(work, "src")
    os.makedirs(src)
    os.environ.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    for k in ("http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY", "AWS_PROFILE"):
        os.environ.pop(k, None)
    try:
        make_arrays(src)
        probe.execute("CREATE VIRTUAL TABLE r USING caterva('%s')" % os.path.join(src, "demo.b2nd"))
        want = [list(t) for t in probe.execute(QUERY).fetchall()]
        probe.close()
        with servers.Servers(work, what="nginx,fronts", lifetime=900, https=False) as s:
            for name in ("demo.b2nd", "long.b2nd"):
                shutil.copyfile(os.path.join(src, name), os.path.join(s.root, name))
            url = s.fault_url.rstrip("/") + "/demo.b2nd"
            only = os.environ.get("HOSTILE_ONLY", "")  # one part only, when debugging
            for name, fn in (("control", lambda: control(url, want)),
                             ("hostile", lambda: hostile_cases(s, s.fault, url)),
                             ("redirect", lambda: redirect_elsewhere(s, src)),
                             ("h2", lambda: h2_reset(s, want)),
                             ("away", lambda: goes_away(s, src)),
                             ("flipped", lambda: flipped(s, src))):
                if not only or name in only.split(","):
                    fn()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    plan()
    return 0


if __name__ == "__main__":
    sys.exit(main())

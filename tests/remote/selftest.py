#!/usr/bin/env python3
"""TAP self-test of tests/remote/servers.py, with curl (the command-line tool) as the client.

Proves the test infrastructure itself: nginx over HTTP (ranges), HTTPS with the throwaway CA, HTTP/2,
its access log; s3rver behind the SigV4-checking front (a wrong secret gets 403 from the front, while
s3rver alone answers 200); the front's check against Amazon's published example; every fault of the
fault front, its scripts and its shaping; the command line (start, env, faults, shape, stop), the
Python API, the lifetime watchdog and the stop on the parent's death; and that no process is left.
Needs what tests/remote/deps.sh installs. KEEP=1 keeps the work folder.
"""

import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import servers  # noqa: E402

SERVERS = os.path.join(HERE, "servers.py")
# Amazon S3 API Reference, sig-v4-header-based-auth, "Example: GET Object" (test.txt, bytes=0-9).
PUBLISHED_SIGNATURE = "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"
count = 0
failures = 0


def tap(cond, name, diag=None):
    global count, failures
    count += 1
    print(f"{'ok' if cond else 'not ok'} {count} - {name}", flush=True)
    if not cond:
        failures += 1
        for line in str(diag or "").splitlines()[:40]:
            print(f"#   {line}", flush=True)
    return cond


class Curl:
    """One curl run: rc, status, body, the -w values, stderr."""

    def __init__(self, work, *args, timeout=60):
        out = os.path.join(work, "curl.body")
        if os.path.exists(out):
            os.unlink(out)
        fmt = "%{http_code} %{size_download} %{http_version} %{time_starttransfer} %{time_total}"
        argv = ["curl", "-sS", "--noproxy", "*", "-o", out, "-w", fmt, "-D", out + ".head"] + list(args)
        r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
        self.argv, self.rc, self.stderr = argv, r.returncode, r.stderr.decode(errors="replace")
        w = r.stdout.decode().split()
        self.status = int(w[0]) if w else 0
        self.size = int(w[1]) if len(w) > 1 else 0
        self.version = w[2] if len(w) > 2 else ""
        self.t_first = float(w[3]) if len(w) > 3 else 0.0
        self.t_total = float(w[4]) if len(w) > 4 else 0.0
        self.body = open(out, "rb").read() if os.path.exists(out) else b""
        self.head = open(out + ".head", "rb").read().decode(errors="replace") \
            if os.path.exists(out + ".head") else ""

    def header(self, name):
        for line in self.head.splitlines():
            k, sep, v = line.partition(":")
            if sep and k.strip().lower() == name.lower():
                return v.strip()
        return None

    def __str__(self):
        return (f"{' '.join(self.argv)}\nrc={self.rc} status={self.status} size={self.size} "
                f"version={self.version} t={self.t_total}\n{self.stderr}\n{self.head}\n"
                f"{self.body[:300]!r}")


def run(*args, timeout=240):
    r = subprocess.run([sys.executable, SERVERS] + list(args), stdin=subprocess.DEVNULL,
                       capture_output=True, timeout=timeout)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def group_alive(pgid):
    return bool(pgid) and subprocess.run(["pgrep", "-g", str(pgid)],
                                         capture_output=True).returncode == 0


def procs_matching(text):
    r = subprocess.run(["pgrep", "-f", text], capture_output=True, text=True)
    return [p for p in r.stdout.split() if int(p) != os.getpid()]


def wait_until(fn, seconds):
    for _ in range(int(seconds * 10)):
        if fn():
            return True
        time.sleep(0.1)
    return fn()


def state_groups(st):
    g = [st.get(k, {}).get("pgid") for k in ("nginx", "s3")]
    g.append(st.get("supervisor", {}).get("pgid"))
    return [x for x in g if x]


def missing_servers():
    """What of tests/remote/deps.sh is not installed here (test_remote.py skips on the same)."""
    missing = [b for b in ("nginx", "openssl", "curl") if shutil.which(b) is None and
               not os.path.exists("/usr/sbin/" + b)]
    if servers.find_s3rver() is None:
        missing.append("s3rver")
    return missing


def main():
    missing = missing_servers()
    if missing:
        print("1..0 # SKIP needs %s (sh tests/remote/deps.sh installs them)" % ", ".join(missing))
        return 0
    base = tempfile.mkdtemp(prefix="remote-selftest-")
    work = os.path.join(base, "work")
    os.makedirs(work)
    try:
        run_all(base, work)
    finally:
        leftovers = procs_matching(base)
        tap(not leftovers, "no process of this test is left (pgrep -f on its folder)",
            subprocess.run(["ps", "-o", "pid,pgid,args", "-p", ",".join(leftovers) or "1"],
                           capture_output=True, text=True).stdout)
        for pid in leftovers:  # only our own processes: their command lines hold our folder
            try:
                os.killpg(int(pid), signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        if os.environ.get("KEEP") != "1":
            shutil.rmtree(base, ignore_errors=True)
        else:
            print(f"# kept {base}")
        print(f"1..{count}")
        print(f"# {count - failures} passed, {failures} failed")
    return 1 if failures else 0


def run_all(base, work):
    # The SigV4 code against Amazon's worked example (also checked when servers.py is imported).
    rc, out, err = run("selfcheck")
    tap(rc == 0 and PUBLISHED_SIGNATURE in out and servers.SELF_CHECK_SIGNATURE == PUBLISHED_SIGNATURE,
        "SigV4 self-check reproduces Amazon's GET Object example signature", out + err)

    state_path = os.path.join(base, "state.json")
    rc, out, err = run("start", "--what", "nginx,s3,fronts", "--dir", os.path.join(base, "cli"),
                       "--state", state_path)
    st = json.load(open(state_path)) if rc == 0 and os.path.exists(state_path) else {}
    if not tap(rc == 0 and st.get("ready") and json.loads(out) == st,
               "servers.py start: nginx, s3rver and the fronts are up, state printed and written",
               out + err):
        return
    try:
        cli_tests(st, state_path, work)
    finally:
        rc, out, err = run("stop", "--state", state_path)
        gone = wait_until(lambda: not any(group_alive(g) for g in state_groups(st)), 10)
        tap(rc == 0 and gone and not procs_matching(st["dir"]),
            "servers.py stop: every process group it started is gone",
            out + err + subprocess.run(["ps", "-eo", "pid,pgid,args"], capture_output=True,
                                       text=True).stdout[-3000:])
    api_tests(base, work)
    watchdog_tests(base)


def cli_tests(st, state_path, work):
    ng, s3, fault = st["nginx"], st["s3"], st["fault"]
    data = random.Random(5).randbytes(100_000)
    with open(os.path.join(ng["root"], "f.bin"), "wb") as f:
        f.write(data)
    with open(os.path.join(ng["root"], "other.bin"), "wb") as f:
        f.write(data[:1000])
    http_url, https_url = ng["http_url"] + "/f.bin", ng["https_url"] + "/f.bin"
    nginx_requests = []

    # ---- nginx
    c = Curl(work, http_url)
    nginx_requests.append((None, 200, len(data)))
    tap(c.rc == 0 and c.status == 200 and c.body == data, "nginx HTTP: a full GET gives 200 and the file",
        c)
    c = Curl(work, "-r", "100-199", http_url)
    nginx_requests.append(("bytes=100-199", 206, 100))
    tap(c.rc == 0 and c.status == 206 and c.body == data[100:200]
        and c.header("Content-Range") == f"bytes 100-199/{len(data)}",
        "nginx HTTP: a range GET gives 206 with exactly those bytes", c)
    c = Curl(work, "--cacert", ng["ca_file"], "--http1.1", "-r", "1000-1999", https_url)
    nginx_requests.append(("bytes=1000-1999", 206, 1000))
    tap(c.rc == 0 and c.status == 206 and c.body == data[1000:2000],
        "nginx HTTPS: the throwaway CA verifies (curl --cacert), range GET 206", c)
    c = Curl(work, "-r", "0-9", https_url)
    tap(c.rc == 60 and c.status == 0, "nginx HTTPS: without the CA curl refuses the certificate (rc 60)",
        c)
    c = Curl(work, "--cacert", ng["ca_file"], "--http2", "-r", "5-14", https_url)
    nginx_requests.append(("bytes=5-14", 206, 10))
    tap(c.rc == 0 and c.version == "2" and c.status == 206 and c.body == data[5:15],
        "nginx HTTPS: HTTP/2 is negotiated over TLS (curl --http2: http_version 2)", c)
    c = Curl(work, "--cacert", ng["ca_file"], "--resolve", f"localhost:{ng['https_port']}:127.0.0.1",
             "-r", "0-0", f"https://localhost:{ng['https_port']}/f.bin")
    nginx_requests.append(("bytes=0-0", 206, 1))
    tap(c.rc == 0 and c.status == 206, "nginx HTTPS: the certificate also names localhost", c)
    log = servers.parse_access_log(ng["access_log"])
    got = [(r["range"], r["status"], r["body_bytes"]) for r in log]
    tap(got == nginx_requests and all(r["method"] == "GET" and r["uri"] == "/f.bin" for r in log)
        and [r["protocol"] for r in log] == ["HTTP/1.1"] * 3 + ["HTTP/2.0"] * 2
        and [r["scheme"] for r in log] == ["http", "http", "https", "https", "https"],
        "nginx access log: one parseable line per request with method, URI, Range, status, bytes",
        f"{got}\n{nginx_requests}\n{open(ng['access_log']).read()}")

    # ---- S3 through the SigV4 front
    key0, key1 = s3["credentials"]
    region, bucket = s3["region"], s3["bucket"]
    sigv4 = ["--aws-sigv4", f"aws:amz:{region}:s3", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]
    obj = f"{s3['endpoint']}/{bucket}/dir/obj.bin"
    src = os.path.join(work, "obj.bin")
    with open(src, "wb") as f:
        f.write(data)
    c = Curl(work, *sigv4, "--user", f"{key0['access_key']}:{key0['secret_key']}", "-T", src, obj)
    tap(c.rc == 0 and c.status == 200, "S3 via the SigV4 front: a signed PUT (curl --aws-sigv4) gives 200",
        c)
    c = Curl(work, *sigv4, "--user", f"{key0['access_key']}:{key0['secret_key']}", "-r", "10-109", obj)
    tap(c.rc == 0 and c.status == 206 and c.body == data[10:110],
        "S3 via the SigV4 front: a signed range GET gives 206 with exactly those bytes", c)
    c = Curl(work, *sigv4, "--user", f"{key0['access_key']}:wrong-secret", "-r", "10-109", obj)
    tap(c.status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in c.body,
        "S3 via the SigV4 front: a wrong secret gets 403 SignatureDoesNotMatch", c)
    direct = f"{s3['direct_url']}/{bucket}/dir/obj.bin"
    c = Curl(work, *sigv4, "--user", f"{s3['s3rver_key']}:wrong-secret", direct)
    tap(c.status == 200 and c.body == data,
        "s3rver alone: the same wrong secret gets 200 (why the front exists)", c)
    c = Curl(work, *sigv4, "--user", f"UNKNOWNKEY:{key0['secret_key']}", obj)
    tap(c.status == 403 and b"<Code>InvalidAccessKeyId</Code>" in c.body,
        "S3 via the SigV4 front: an unknown key id gets 403 InvalidAccessKeyId", c)
    c1 = Curl(work, *sigv4, "--user", f"{key1['access_key']}:{key1['secret_key']}",
              "-H", f"x-amz-security-token: {key1['session_token']}", "-r", "0-9", obj)
    c2 = Curl(work, *sigv4, "--user", f"{key1['access_key']}:{key1['secret_key']}", "-r", "0-9", obj)
    tap(c1.status == 206 and c1.body == data[:10] and c2.status == 403
        and b"<Code>InvalidToken</Code>" in c2.body,
        "S3 via the SigV4 front: the second credential needs its session token", f"{c1}\n{c2}")
    c1 = Curl(work, obj)
    c2 = Curl(work, "-r", "0-9", f"{s3['anonymous_endpoint']}/{bucket}/dir/obj.bin")
    tap(c1.status == 403 and b"<Code>AccessDenied</Code>" in c1.body and c2.status == 206
        and c2.body == data[:10],
        "S3: no Authorization gets 403, except on the front started with anonymous=True",
        f"{c1}\n{c2}")
    c = Curl(work, "--user", f"{key0['access_key']}:{key0['secret_key']}", "--aws-sigv4",
             f"aws:amz:{region}:s3", obj)
    tap(c.status == 400 and b"x-amz-content-sha256" in c.body,
        "S3 via the SigV4 front: a request without x-amz-content-sha256 gets 400", c)
    c = Curl(work, "--aws-sigv4", "aws:amz:eu-west-3:s3", "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD",
             "--user", f"{key0['access_key']}:{key0['secret_key']}", obj)
    tap(c.status == 400 and b"AuthorizationHeaderMalformed" in c.body,
        "S3 via the SigV4 front: a signature for another region gets 400 AuthorizationHeaderMalformed", c)
    # A signature that covers Range: the front must notice a changed Range.
    host = s3["endpoint"].split("//", 1)[1]
    hdrs = servers.signed_headers_for("GET", host, f"/{bucket}/dir/obj.bin", key0["access_key"],
                                      key0["secret_key"], region, extra={"Range": "bytes=0-9"})
    good = [a for k, v in hdrs if k != "Host" for a in ("-H", f"{k}: {v}")]
    bad = [a if a != "Range: bytes=0-9" else "Range: bytes=0-10" for a in good]
    c1, c2 = Curl(work, *good, obj), Curl(work, *bad, obj)
    tap(c1.status == 206 and c1.body == data[:10] and c2.status == 403
        and b"SignatureDoesNotMatch" in c2.body,
        "S3 via the SigV4 front: a signed Range that is changed in transit gets 403", f"{c1}\n{c2}")
    sha = hashlib.sha256(b"abc").hexdigest()
    small = os.path.join(work, "small.txt")
    with open(small, "wb") as f:
        f.write(b"abd")
    c = Curl(work, "--aws-sigv4", f"aws:amz:{region}:s3", "-H", f"x-amz-content-sha256: {sha}",
             "--user", f"{key0['access_key']}:{key0['secret_key']}", "-T", small,
             f"{s3['endpoint']}/{bucket}/small.txt")
    tap(c.status == 400 and b"XAmzContentSHA256Mismatch" in c.body,
        "S3 via the SigV4 front: a body that does not match x-amz-content-sha256 gets 400", c)
    rc, out, err = run("s3put", "--state", state_path, "--key", "put/by/python.bin", "--file", src)
    c = Curl(work, *sigv4, "--user", f"{key0['access_key']}:{key0['secret_key']}", "-r", "99990-99999",
             f"{s3['endpoint']}/{bucket}/put/by/python.bin")
    tap(rc == 0 and c.status == 206 and c.body == data[99990:],
        "servers.py s3put uploads through the front with our own signer", out + err + str(c))
    flog = servers.read_json_log(s3["front_log"])
    verdicts = [e["verdict"] for e in flog]
    tap(len(flog) >= 12 and verdicts[:3] == ["ok", "ok", "SignatureDoesNotMatch"]
        and all({"method", "target", "range", "status", "bytes"} <= set(e) for e in flog),
        "SigV4 front log: one JSON line per request with its verdict", "\n".join(map(str, flog)))

    # ---- fault front before nginx
    furl = fault["url"] + "/f.bin"

    def faults(script, seed=None, front="http"):
        args = ["faults", "--state", state_path, "--front", front, "--script", json.dumps(script)]
        if seed is not None:
            args += ["--seed", str(seed)]
        return run(*args)[0] == 0

    sent = []  # (range, status, bytes) the fault front should have logged

    c = Curl(work, "-r", "100-199", furl)
    sent.append(("bytes=100-199", 206, 100))
    tap(c.status == 206 and c.body == data[100:200], "fault front: with no script it forwards (206)",
        c)
    for status in (500, 502, 503, 504, 429):
        ok = faults([{"nth": 1, "fault": status, "retry_after": 1}])
        c = Curl(work, "-r", "100-199", furl)
        sent.append(("bytes=100-199", status, len(c.body)))
        tap(ok and c.status == status and c.header("Retry-After") == "1" and b"<Error>" in c.body,
            f"fault front: scripted {status}", c)
    ok = faults([{"nth": 1, "fault": "slowdown"}])
    c = Curl(work, "-r", "100-199", furl)
    sent.append(("bytes=100-199", 503, len(c.body)))
    tap(ok and c.status == 503 and b"<Code>SlowDown</Code>" in c.body, "fault front: S3 SlowDown (503)",
        c)
    ok = faults([{"nth": 1, "fault": "reset"}])
    c = Curl(work, "-r", "100-199", furl)
    sent.append(("bytes=100-199", None, 0))
    tap(ok and c.rc in (52, 56) and c.status == 0, "fault front: connection reset (curl rc 56)", c)
    ok = faults([{"nth": 1, "fault": "reset", "bytes": 30}])
    c = Curl(work, "-r", "100-199", furl)
    sent.append(("bytes=100-199", 206, 30))
    tap(ok and c.rc == 56 and c.size <= 30, "fault front: connection reset after 30 body bytes", c)
    ok = faults([{"nth": 1, "fault": "truncate", "bytes": 40}])
    c = Curl(work, "-r", "100-199", furl)
    sent.append(("bytes=100-199", 206, 40))
    tap(ok and c.rc == 18 and c.body == data[100:140] and c.header("Content-Length") == "100",
        "fault front: truncated body (Content-Length 100, 40 bytes, close: curl rc 18)", c)
    ok = faults([{"nth": 1, "fault": "short", "bytes": 50}])
    c = Curl(work, "-r", "100-199", furl)
    sent.append(("bytes=100-199", 206, 50))
    tap(ok and c.rc == 0 and c.status == 206 and c.body == data[100:150]
        and c.header("Content-Range") == f"bytes 100-149/{len(data)}",
        "fault front: short answer (50 of the 100 bytes asked, headers consistent)", c)
    ok = faults([{"nth": 1, "fault": "ignore_range"}])
    c = Curl(work, "-r", "100-199", furl)
    sent.append(("bytes=100-199", 200, len(data)))
    tap(ok and c.status == 200 and c.body == data,
        "fault front: a server ignoring Range (200 with the whole file)", c)
    ok = faults([{"nth": 1, "fault": "garbage"}])
    c = Curl(work, "-r", "100-199", furl)
    sent.append(("bytes=100-199", 206, 100))
    tap(ok and c.status == 206 and len(c.body) == 100 and c.body != data[100:200],
        "fault front: garbage bytes in place of the body", c)
    ok = faults([{"nth": 1, "fault": "garbage", "bytes": 7}])
    c = Curl(work, "-r", "100-199", furl)
    sent.append(("bytes=100-199", 206, 7))
    tap(ok and c.status == 206 and len(c.body) == 7, "fault front: garbage of a wrong length", c)
    ok = faults([{"nth": 1, "fault": "delay", "delay_ms": 300}])
    c = Curl(work, "-r", "100-199", furl)
    sent.append(("bytes=100-199", 206, 100))
    tap(ok and c.status == 206 and c.body == data[100:200] and c.t_first >= 0.3,
        "fault front: a delay of 300 ms before the answer", c)
    ok = faults([{"nth": 1, "fault": "stall", "bytes": 10, "delay_ms": 300}])
    c = Curl(work, "-r", "100-199", furl)
    sent.append(("bytes=100-199", 206, 100))
    tap(ok and c.status == 206 and c.body == data[100:200] and c.t_total - c.t_first >= 0.29,
        "fault front: a stall of 300 ms after 10 body bytes", c)
    ok = faults([{"nth": 2, "fault": 503}])
    cs = [Curl(work, "-r", "0-9", furl) for _ in range(3)]
    sent += [("bytes=0-9", 206, 10), ("bytes=0-9", 503, len(cs[1].body)), ("bytes=0-9", 206, 10)]
    tap(ok and [c.status for c in cs] == [206, 503, 206], "fault front: only the 2nd request fails",
        "\n".join(map(str, cs)))
    ok = faults([{"path": r"^/other\.bin", "fault": 404}])
    c1, c2 = Curl(work, "-r", "0-9", furl), Curl(work, "-r", "0-9", fault["url"] + "/other.bin")
    sent += [("bytes=0-9", 206, 10), ("bytes=0-9", 404, len(c2.body))]
    tap(ok and c1.status == 206 and c2.status == 404, "fault front: a rule matching a path", f"{c1}\n{c2}")
    patterns = []
    for _ in range(2):
        ok = faults([{"prob": 0.5, "fault": 500}], seed=7) and ok
        cs = [Curl(work, "-r", "0-9", furl) for _ in range(10)]
        sent += [("bytes=0-9", c.status, len(c.body)) for c in cs]
        patterns.append([c.status for c in cs])
    tap(ok and patterns[0] == patterns[1] and {206, 500} == set(patterns[0]),
        "fault front: a probability rule with a fixed seed repeats exactly", patterns)
    faults([])
    rc, out, err = run("shape", "--state", state_path, "--delay-ms", "200", "--rate", "200000")
    c = Curl(work, furl)
    sent.append((None, 200, len(data)))
    tap(rc == 0 and c.status == 200 and c.body == data and c.t_first >= 0.2 and c.t_total >= 0.45,
        "fault front shaping: 200 ms before the answer and 200 kB/s on the connection", str(c) + err)
    rc, out, err = run("shape", "--state", state_path, "--delay-ms", "0", "--rate", "0")
    c = Curl(work, furl)
    sent.append((None, 200, len(data)))
    tap(rc == 0 and c.status == 200 and c.t_total < 0.4, "fault front shaping: off again", c)
    flog = servers.read_json_log(fault["log"])
    got = [(e["range"], e["status"], e["bytes"]) for e in flog]
    tap(got == sent and all(e["method"] == "GET" and e["target"] in ("/f.bin", "/other.bin")
                            for e in flog),
        "fault front log: one JSON line per request with method, path, Range, status, bytes sent",
        "\n".join(f"{a} {b}" for a, b in zip(got + [None] * 99, sent)))

    # ---- a fault front before the SigV4 front: S3's SlowDown, then a signed GET through it
    ok = faults([{"nth": 1, "fault": "slowdown"}], front="s3")
    sobj = f"{s3['fault_endpoint']}/{bucket}/dir/obj.bin"
    auth = ["--user", f"{key0['access_key']}:{key0['secret_key']}", "-r", "0-9"]
    c1, c2 = Curl(work, *sigv4, *auth, sobj), Curl(work, *sigv4, *auth, sobj)
    tap(ok and c1.status == 503 and b"SlowDown" in c1.body and c2.status == 206
        and c2.body == data[:10],
        "S3 fault front: SlowDown, then a signed GET passes through both fronts", f"{c1}\n{c2}")

    rc, out, err = run("env", "--state", state_path)
    tap(rc == 0 and f"export S3_ENDPOINT='{s3['endpoint']}'" in out
        and f"export TEST_CA_FILE='{ng['ca_file']}'" in out, "servers.py env prints the exports",
        out + err)


def api_tests(base, work):
    d = os.path.join(base, "api")
    with servers.Servers(d, what="nginx,fronts", lifetime=600) as s:
        with open(os.path.join(s.root, "g.bin"), "wb") as f:
            f.write(b"0123456789" * 10)
        s.set_faults(lambda info: {"fault": 503} if info["n"] == 1 else None)
        c1, c2 = Curl(work, "-r", "0-4", s.fault_url + "/g.bin"), Curl(work, "-r", "0-4",
                                                                          s.fault_url + "/g.bin")
        s.set_shape(delay_ms=100)
        c3 = Curl(work, "-r", "0-4", s.fault_url + "/g.bin")
        pgid = s.nginx.proc.pid
        st = s.state
    tap(c1.status == 503 and c2.status == 206 and c2.body == b"01234" and c3.t_first >= 0.1
        and st["fault"]["url"] == s.fault_url and "s3" not in st,
        "Python API: with Servers(...) as s, a callable fault script and set_shape",
        f"{c1}\n{c2}\n{c3}")
    tap(wait_until(lambda: not group_alive(pgid), 10) and not procs_matching(d),
        "Python API: leaving the with block stops nginx")


def watchdog_tests(base):
    state = os.path.join(base, "short.json")
    rc, out, err = run("start", "--what", "nginx", "--dir", os.path.join(base, "short"), "--state", state,
                       "--lifetime", "3", "--no-https")
    st = json.load(open(state)) if rc == 0 else {}
    groups = state_groups(st)
    alive = bool(groups) and all(group_alive(g) for g in groups)
    tap(rc == 0 and alive and wait_until(lambda: not any(group_alive(g) for g in groups), 20),
        "lifetime: servers started with --lifetime 3 stop by themselves", out + err)

    # The process that ran "start" dies: everything stops.
    state = os.path.join(base, "orphan.json")
    script = (f"'{sys.executable}' '{SERVERS}' start --what nginx --no-https --dir "
              f"'{os.path.join(base, 'orphan')}' --state '{state}' >/dev/null 2>&1; sleep 120")
    sh = subprocess.Popen(["sh", "-c", script], start_new_session=True, stdin=subprocess.DEVNULL)
    ready = wait_until(lambda: os.path.exists(state) and json.load(open(state)).get("ready"), 60)
    st = json.load(open(state)) if ready else {}
    groups = state_groups(st)
    os.killpg(sh.pid, signal.SIGKILL)
    sh.wait()
    tap(ready and groups and wait_until(lambda: not any(group_alive(g) for g in groups), 20),
        "parent death: when the shell that ran start dies, the servers stop")


if __name__ == "__main__":
    sys.exit(main())

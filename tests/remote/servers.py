#!/usr/bin/env python3
"""Real servers on 127.0.0.1 for the remote-access tests: nginx (HTTP/1.1, HTTPS with a throwaway CA,
HTTP/2 over TLS), s3rver (an S3 API) behind a front of ours that checks AWS Signature Version 4, and a
front of ours that injects faults and shapes connections. Python 3 standard library only.

What it starts (each on a free port of 127.0.0.1, all in one new temporary folder under DIR):
  nginx       serves a folder (ROOT; by default TMP/www) over HTTP/1.1 with ranges, and over HTTPS with
              HTTP/2, using a CA and a server certificate (subjectAltName IP:127.0.0.1, DNS:localhost)
              made with openssl at start. Its access log has one line per request, tab-separated:
              method, URI, Range header, status, body bytes sent, request time, then bytes sent with
              headers, protocol, scheme, connection number, request number on it, time (msec).
              parse_access_log() reads it. "-" stands for an absent value (e.g. no Range).
  s3rver      the npm package (installed by tests/remote/deps.sh), with a bucket made at start. It does
              not check SigV4 signatures and gets suffix ranges and multi-range requests wrong: ask it
              only for explicit single ranges (bytes=A-B).
  sigv4 front (s3 endpoint) checks each request's SigV4 Authorization header against two known
              credentials (CREDENTIALS; the second needs its session token in x-amz-security-token),
              answers S3-style XML errors (403 SignatureDoesNotMatch, InvalidAccessKeyId, AccessDenied,
              InvalidToken, RequestTimeTooSkewed; 400 AuthorizationHeaderMalformed, InvalidRequest,
              XAmzContentSHA256Mismatch), else forwards the request to s3rver unchanged except the
              access key id in Authorization (s3rver knows only its own), and relays the answer.
              A second one (s3 anonymous endpoint) also forwards requests without Authorization.
              The signing code checks itself at import against Amazon's worked "GET Object" example.
  fault front forwards to nginx's HTTP port (and a second one to the sigv4 front), and per a script
              answers chosen requests with a fault, and shapes every connection (delay before each
              response, bytes/s per connection both ways: a request body is read no faster). It
              logs every request as one JSON line.

Fault scripts: a list of rules; the first rule that matches a request decides (no match: forward).
  match keys (all optional, all must hold): "nth": N or [N, ...] (1-based count of the requests this
  front has seen since the script was set), "path": regex searched in the request target, "method",
  "ranged": true/false (a Range header present or not), "times": fire at most this many times,
  "prob": P (drawn from a random.Random(seed) owned by the front, so a run repeats exactly).
  "fault": 500, 502, 503, 504, 429, 403, 404 or any status (an S3-style XML error; "code", "message",
     "retry_after" optional), "slowdown" (503 with S3's SlowDown code), "reset" (connection reset; with
     "bytes": K after the headers and K bytes of the real answer), "truncate" (the real headers and
     Content-Length, then only K bytes, default half, then the connection closes), "short" (the first K
     bytes only, with a Content-Length and Content-Range that say so), "ignore_range" (the Range header
     is dropped: a 200 with the whole file), "garbage" (the real status and headers, random bytes as the
     body; "bytes": K sends K of them with Content-Length K), "delay" ("delay_ms" before forwarding),
     "stall" (headers and "bytes" K, then "delay_ms", then the rest), "pass".
  Hostile answers (test_hostile.py): "endless" (a 206 for the asked range, no Content-Length,
     bytes until the client leaves), "huge_length" (Content-Length 2^62, the real bytes, then
     bytes without end), "trickle" (the real answer, one byte every "delay_ms", default 500),
     "redirect" ("status", default 302, to "location"; {target} there is the request's own
     target), "long_body" ("bytes" K more than the headers say), "wrong_range" (the bytes one
     further on, with a Content-Range that says so), "gzip" (the real bytes gzip-compressed,
     Content-Encoding: gzip), "claim_200" (a 200 with Content-Length 2^40, then bytes without
     end), "bad_chunked" (chunked, the chunk size line "size", default "zz"), "silent" (the
     request read, no answer for "delay_ms", default an hour). FaultFront(..., log_headers=True)
     also logs each request's headers.
  In-process (Python API) the script may also be a callable info -> rule or None, where info is a dict
  with n, method, target, path, range, headers.
  Control endpoint on each fault front (not counted, not logged): PUT /__fault__/script (JSON list, or
  {"rules": [...], "seed": S}), PUT /__fault__/shape ({"delay_ms": D, "rate": R}), POST /__fault__/reset,
  GET /__fault__/stats.
Fault-front log lines (JSON): n, t (when the request arrived), conn, method, target, range, up (request
  body bytes), status, bytes (body bytes sent), fault, ms (from arrival to the answer's end), error. Sigv4-front log lines: n, t, method, target, range, status, bytes, key, verdict.

From a Python test:
    import sys; sys.path.insert(0, "tests/remote"); import servers
    with servers.Servers("build/tests-remote", what="nginx,s3,fronts") as s:
        s.root                   # folder nginx serves; put files there
        s.nginx_http, s.nginx_https, s.ca_file
        s.fault_url              # fault front before nginx (HTTP)
        s.s3_endpoint, s.s3_anon_endpoint, s.s3_fault_endpoint, s.s3_direct, s.bucket, s.region
        s.credentials            # [{"access_key", "secret_key", "session_token"}, ...]
        s.s3_put("dir/a.b2nd", b"...")           # upload through the signature-checking front
        s.set_faults([{"nth": 2, "fault": 503}]) # or a callable; s.set_faults(..., front="s3")
        s.set_shape(delay_ms=20, rate=10_000_000)
        servers.parse_access_log(s.access_log), servers.read_json_log(s.fault_log)
        s.state                                  # everything above as a dict (also the pids)
    Servers(..., delay_ms=20, rate=10_000_000) shapes from the start; lifetime=SECONDS (default 7200)
    bounds how long the servers live; root=FOLDER serves an existing folder; cleanup=True removes the
    temporary folder (logs included) on stop.

From a shell test:
    python3 tests/remote/servers.py start --what nginx,s3,fronts --dir build/tests-remote --state S.json
        # prints the state JSON (URLs, ports, CA file, credentials, log paths, pids) and writes it to
        # S.json; the servers run in a supervisor process that stops them all when the process that
        # ran "start" dies (or --parent PID dies; --parent 0: never), after --lifetime seconds, or
        # on "stop" (SIGTERM to the supervisor). A wrapper that runs "start" and exits (timeout(1),
        # say) counts as that process: from a shell script, pass --parent $$.
    python3 tests/remote/servers.py stop --state S.json
    eval "$(python3 tests/remote/servers.py env --state S.json)"   # NGINX_HTTP_URL=... S3_ENDPOINT=...
    python3 tests/remote/servers.py faults --state S.json --script '[{"nth": 1, "fault": "reset"}]'
    python3 tests/remote/servers.py shape --state S.json --delay-ms 20 --rate 10000000
    python3 tests/remote/servers.py s3put --state S.json --key a/b.b2nd --file local.b2nd
    python3 tests/remote/servers.py selfcheck        # the SigV4 check against Amazon's example
Each server process is in its own process group, wrapped in timeout(1) with the lifetime, and gets
SIGTERM when the process that started it dies (PR_SET_PDEATHSIG). Needs: nginx, openssl, node + s3rver
(tests/remote/deps.sh installs them; $S3RVER overrides where s3rver is).

The code, by responsibility: sigv4.py (the SigV4 signer, its self-check, the test credentials,
s3_request), procs.py (process groups, readiness, nginx and its CA, s3rver), fronts.py (the front base,
the SigV4 front, the fault front). This file holds Servers and the command line, and re-exports their
names: servers.X is what it always was.
"""

import argparse
import atexit
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

# The pieces (see the docstring); their names re-exported.
from sigv4 import (  # noqa: F401
    CREDENTIALS, DEFAULT_REGION, DOC_EXAMPLE, EMPTY_SHA256, S3RVER_KEY, SELF_CHECK_SIGNATURE,
    canonical_headers, canonical_query, canonical_request, canonical_uri, s3_request, self_check,
    sign, signature, signed_headers_for, signing_key, string_to_sign, uri_encode)
from procs import (  # noqa: F401
    DEFAULT_BUCKET, DEFAULT_LIFETIME, HERE, NGINX_CONF, NGINX_TEMP_PATHS, ROOT, MotoS3, Nginx, S3rver,
    _group_alive, _tail, find_s3rver, free_port, make_ca, parse_access_log)
from fronts import (  # noqa: F401
    CONTROL, DEFAULT_ERROR_CODES, FAULT_NAMES, HOP_BY_HOP, MAX_BODY, FaultFront, SigV4Front,
    read_body, read_json_log, s3_error_xml)


# ----------------------------------------------------------------------------------------------------
# All of them together.

class Servers:
    """Starts what= (a subset of "nginx,s3,fronts") in a new temporary folder under dir. A context
    manager; stop() is also registered with atexit, and a watchdog stops everything after lifetime s."""

    def __init__(self, dir, what="nginx,s3,fronts", root=None, lifetime=DEFAULT_LIFETIME,
                 region=DEFAULT_REGION, bucket=DEFAULT_BUCKET, credentials=None, https=True,
                 delay_ms=0, rate=0, seed=1, script=None, cleanup=False):
        self.cleanup = cleanup  # remove the temporary folder (logs included) on stop
        self.what = {w.strip() for w in (what.split(",") if isinstance(what, str) else what)
                     if w.strip()}
        if "all" in self.what:
            self.what = {"nginx", "s3", "fronts"}
        known = {"nginx", "s3", "s3w", "fronts"}
        if not self.what <= known:
            raise ValueError(f"unknown servers: {sorted(self.what - known)}")
        self.base = os.path.abspath(dir)
        self.root_arg = root
        self.lifetime = lifetime
        self.region = region
        self.bucket = bucket
        self.credentials = [dict(c) for c in (credentials or CREDENTIALS)]
        self.https = https
        self.delay_ms, self.rate, self.seed, self.script = delay_ms, rate, seed, script
        self.tmp = None
        self.nginx = self.s3rver = self.sigv4 = self.sigv4_anon = self.fault = self.s3_fault = None
        self.moto = self.s3w_sigv4 = self.s3w_fault = None
        self._stopped = False
        self._watchdog = None

    # -- life
    def start(self):
        os.makedirs(self.base, exist_ok=True)
        self.tmp = tempfile.mkdtemp(prefix="remote-", dir=self.base)
        os.chmod(self.tmp, 0o755)
        atexit.register(self.stop)
        self._watchdog = threading.Timer(self.lifetime, self.stop)
        self._watchdog.daemon = True
        self._watchdog.start()
        try:
            if "nginx" in self.what:
                root = self.root_arg or os.path.join(self.tmp, "www")
                os.makedirs(root, exist_ok=True)
                self.nginx = Nginx(self.tmp, os.path.abspath(root), self.https, self.lifetime).start()
            if "s3" in self.what:
                self.s3rver = S3rver(self.tmp, self.bucket, self.lifetime).start()
            if "s3w" in self.what:  # writes: an S3 API that enforces PutObject's preconditions
                self.moto = MotoS3(self.tmp, self.bucket, self.lifetime).start()
                fronts = os.path.join(self.tmp, "fronts")
                os.makedirs(fronts, exist_ok=True)
                self.s3w_sigv4 = SigV4Front("127.0.0.1", self.moto.port,
                                            os.path.join(fronts, "s3w-sigv4.log"), self.credentials,
                                            self.region).start()
                self.s3w_fault = FaultFront("127.0.0.1", self.s3w_sigv4.port,
                                            os.path.join(fronts, "s3w-fault.log"), None, self.seed,
                                            self.delay_ms, self.rate).start()
            if "fronts" in self.what:
                fronts = os.path.join(self.tmp, "fronts")
                os.makedirs(fronts, exist_ok=True)
                if self.nginx:
                    self.fault = FaultFront("127.0.0.1", self.nginx.http_port,
                                            os.path.join(fronts, "fault.log"), self.script, self.seed,
                                            self.delay_ms, self.rate).start()
                if self.s3rver:
                    self.sigv4 = SigV4Front("127.0.0.1", self.s3rver.port,
                                            os.path.join(fronts, "sigv4.log"), self.credentials,
                                            self.region).start()
                    self.sigv4_anon = SigV4Front("127.0.0.1", self.s3rver.port,
                                                 os.path.join(fronts, "sigv4-anonymous.log"),
                                                 self.credentials, self.region, anonymous=True).start()
                    self.s3_fault = FaultFront("127.0.0.1", self.sigv4.port,
                                               os.path.join(fronts, "s3-fault.log"), None, self.seed,
                                               self.delay_ms, self.rate).start()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self):
        if self._stopped:
            return
        self._stopped = True
        if self._watchdog is not None:
            self._watchdog.cancel()
        for front in (self.s3_fault, self.fault, self.sigv4_anon, self.sigv4, self.s3w_fault,
                      self.s3w_sigv4):
            if front is not None:
                front.stop()
        for srv in (self.s3rver, self.nginx, self.moto):
            if srv is not None:
                srv.stop()
        if self.cleanup and self.tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)
        try:
            atexit.unregister(self.stop)
        except Exception:
            pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()

    # -- what the tests use
    root = property(lambda s: s.nginx.root if s.nginx else None)
    nginx_http = property(lambda s: s.nginx.state()["http_url"] if s.nginx else None)
    nginx_https = property(lambda s: s.nginx.state()["https_url"] if s.nginx else None)
    ca_file = property(lambda s: s.nginx.ca_file if s.nginx else None)
    access_log = property(lambda s: s.nginx.access_log if s.nginx else None)
    fault_url = property(lambda s: s.fault.url if s.fault else None)
    fault_log = property(lambda s: s.fault.log_path if s.fault else None)
    s3_endpoint = property(lambda s: s.sigv4.url if s.sigv4 else None)
    s3_anon_endpoint = property(lambda s: s.sigv4_anon.url if s.sigv4_anon else None)
    s3_fault_endpoint = property(lambda s: s.s3_fault.url if s.s3_fault else None)
    s3_direct = property(lambda s: s.s3rver.state()["url"] if s.s3rver else None)
    s3w_endpoint = property(lambda s: s.s3w_sigv4.url if s.s3w_sigv4 else None)
    s3w_fault_endpoint = property(lambda s: s.s3w_fault.url if s.s3w_fault else None)
    s3w_direct = property(lambda s: s.moto.state()["url"] if s.moto else None)

    @property
    def state(self):
        st = {"dir": self.tmp, "lifetime": self.lifetime, "pid": os.getpid()}
        if self.nginx:
            st["nginx"] = self.nginx.state()
        if self.s3rver:
            st["s3"] = dict(self.s3rver.state(), region=self.region, bucket=self.bucket,
                            credentials=self.credentials, direct_url=self.s3rver.state()["url"],
                            s3rver_key=S3RVER_KEY)
            st["s3"].pop("url")
            if self.sigv4:
                st["s3"].update(endpoint=self.sigv4.url, anonymous_endpoint=self.sigv4_anon.url,
                                fault_endpoint=self.s3_fault.url, front_log=self.sigv4.log_path,
                                anonymous_front_log=self.sigv4_anon.log_path,
                                fault_log=self.s3_fault.log_path,
                                fault_control=self.s3_fault.url + CONTROL)
        if self.fault:
            st["fault"] = {"url": self.fault.url, "port": self.fault.port, "log": self.fault.log_path,
                           "control": self.fault.url + CONTROL,
                           "origin": f"http://127.0.0.1:{self.fault.origin_port}"}
        return st

    def set_faults(self, script, seed=None, front="http"):
        {"s3": self.s3_fault, "s3w": self.s3w_fault}.get(front, self.fault).set_script(script, seed)

    def set_shape(self, delay_ms=None, rate=None, front="both"):
        for f in ((self.fault, self.s3_fault) if front == "both" else
                  (self.s3_fault,) if front == "s3" else (self.fault,)):
            if f is not None:
                f.set_shape(delay_ms, rate)

    def s3_put(self, key, data, credential=0, endpoint=None):
        return s3_request(endpoint or self.s3_endpoint, "PUT", f"/{self.bucket}/{key}",
                          self.credentials[credential], self.region, data)

    def publish(self, src, names):
        """Every array of src named in names under nginx's root and in the S3 bucket (a sparse
        frame: each of its files)."""
        for name in names:
            p = os.path.join(src, name)
            if os.path.isdir(p):
                shutil.copytree(p, os.path.join(self.root, name))
                for f in sorted(os.listdir(p)):
                    with open(os.path.join(p, f), "rb") as fh:
                        self.s3_put(name + "/" + f, fh.read())
            else:
                shutil.copyfile(p, os.path.join(self.root, name))
                with open(p, "rb") as fh:
                    self.s3_put(name, fh.read())




# ----------------------------------------------------------------------------------------------------
# Command line.

def _proc_start_time(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _write_json(path, data):
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f, indent=2, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def _supervise(args):
    """Runs in its own session: starts the servers, writes the state, waits, stops them."""
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: stop.set())
    parent, parent_start = args.parent, args.parent_start
    deadline = time.monotonic() + args.lifetime
    s = Servers(args.dir, args.what, root=args.root, lifetime=args.lifetime, region=args.region,
                bucket=args.bucket, delay_ms=args.delay_ms, rate=args.rate, seed=args.seed,
                https=not args.no_https)
    try:
        s.start()
    except Exception as e:
        _write_json(args.state, {"error": f"{type(e).__name__}: {e}", "supervisor": os.getpid()})
        return 1
    st = s.state
    st["supervisor"] = {"pid": os.getpid(), "pgid": os.getpgid(0), "log": args.log,
                        "parent": parent}
    st["ready"] = True
    _write_json(args.state, st)
    reason = "lifetime"
    for _ in range(int(args.lifetime / 0.25) + 2):
        if stop.wait(0.25):
            reason = "stop"
            break
        if parent and (_proc_start_time(parent) != parent_start if parent_start
                       else not _pid_alive(parent)):
            reason = "parent died"
            break
        if time.monotonic() > deadline:
            break
    print(f"stopping: {reason}", flush=True)
    s.stop()
    st["ready"] = False
    st["stopped"] = reason
    _write_json(args.state, st)
    return 0


def _load_state(path):
    with open(path) as f:
        return json.load(f)


def cmd_start(args):
    state = os.path.abspath(args.state)
    if os.path.exists(state):
        os.unlink(state)
    parent = os.getppid() if args.parent is None else args.parent
    os.makedirs(args.dir, exist_ok=True)
    log = os.path.join(os.path.abspath(args.dir), f"supervisor-{os.getpid()}.log")
    argv = [sys.executable, os.path.abspath(__file__), "_supervise", "--dir", os.path.abspath(args.dir),
            "--state", state, "--what", args.what, "--lifetime", str(args.lifetime),
            "--parent", str(parent), "--parent-start", str(_proc_start_time(parent) or ""),
            "--region", args.region, "--bucket", args.bucket, "--delay-ms", str(args.delay_ms),
            "--rate", str(args.rate), "--seed", str(args.seed), "--log", log]
    if args.root:
        argv += ["--root", os.path.abspath(args.root)]
    if args.no_https:
        argv.append("--no-https")
    with open(log, "ab") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if os.path.exists(state):
            st = _load_state(state)
            if st.get("error"):
                proc.wait(timeout=30)
                print(f"servers.py: {st['error']}", file=sys.stderr)
                return 1
            if st.get("ready"):
                print(json.dumps(st, indent=2, sort_keys=True))
                return 0
        if proc.poll() is not None:
            print(f"servers.py: the supervisor exited ({proc.returncode}):\n{_tail(log)}",
                  file=sys.stderr)
            return 1
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGTERM)
    print(f"servers.py: not ready after {args.timeout} s:\n{_tail(log)}", file=sys.stderr)
    return 1


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def cmd_stop(args):
    try:
        st = _load_state(args.state)
    except FileNotFoundError:
        return 0
    sup = st.get("supervisor")
    sup_pid = sup.get("pid") if isinstance(sup, dict) else sup
    if sup_pid and _pid_alive(sup_pid):
        try:
            os.kill(sup_pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        for _ in range(300):  # 30 s
            if not _pid_alive(sup_pid) or _is_zombie(sup_pid):
                break
            time.sleep(0.1)
    # Whatever is left (the supervisor killed hard, say): end the groups it recorded.
    groups = [st.get(k, {}).get("pgid") for k in ("nginx", "s3")]
    if isinstance(sup, dict):
        groups.append(sup.get("pgid"))
    for pgid in groups:
        if pgid and _group_alive(pgid):
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    return 0


def _is_zombie(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return False


def _control(url, what, payload):
    u = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        body = json.dumps(payload).encode()
        conn.request("PUT", CONTROL + what, body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def cmd_faults(args):
    st = _load_state(args.state)
    script = args.script
    if script.startswith("@"):
        with open(script[1:]) as f:
            script = f.read()
    payload = {"rules": json.loads(script)}
    if args.seed is not None:
        payload["seed"] = args.seed
    url = st["s3"]["fault_endpoint"] if args.front == "s3" else st["fault"]["url"]
    status, text = _control(url, "script", payload)
    print(text)
    return 0 if status == 200 else 1


def cmd_shape(args):
    st = _load_state(args.state)
    urls = []
    if args.front in ("http", "both") and "fault" in st:
        urls.append(st["fault"]["url"])
    if args.front in ("s3", "both") and st.get("s3", {}).get("fault_endpoint"):
        urls.append(st["s3"]["fault_endpoint"])
    rc = 0
    for url in urls:
        status, text = _control(url, "shape", {"delay_ms": args.delay_ms, "rate": args.rate})
        print(text)
        rc |= status != 200
    return rc


def cmd_env(args):
    st = _load_state(args.state)
    env = {}
    if "nginx" in st:
        env.update(NGINX_HTTP_URL=st["nginx"]["http_url"], NGINX_HTTPS_URL=st["nginx"]["https_url"],
                   NGINX_ROOT=st["nginx"]["root"], NGINX_ACCESS_LOG=st["nginx"]["access_log"],
                   TEST_CA_FILE=st["nginx"]["ca_file"])
    if "fault" in st:
        env.update(FAULT_URL=st["fault"]["url"], FAULT_LOG=st["fault"]["log"])
    if "s3" in st:
        s3 = st["s3"]
        c = s3["credentials"][0]
        env.update(S3_DIRECT_URL=s3["direct_url"], S3_BUCKET=s3["bucket"], AWS_REGION=s3["region"],
                   AWS_ACCESS_KEY_ID=c["access_key"], AWS_SECRET_ACCESS_KEY=c["secret_key"])
        if "endpoint" in s3:
            env.update(S3_ENDPOINT=s3["endpoint"], S3_ANON_ENDPOINT=s3["anonymous_endpoint"],
                       S3_FAULT_ENDPOINT=s3["fault_endpoint"], S3_FRONT_LOG=s3["front_log"],
                       S3_FAULT_LOG=s3["fault_log"])
    for k, v in env.items():
        if v is not None:
            print(f"export {k}='{v}'")
    return 0


def cmd_s3put(args):
    st = _load_state(args.state)
    s3 = st["s3"]
    status, _, body = s3_request(s3["endpoint"], "PUT", f"/{s3['bucket']}/{args.key}",
                                 s3["credentials"][args.credential], s3["region"], args.file)
    if status != 200:
        print(body.decode(errors="replace"), file=sys.stderr)
    return 0 if status == 200 else 1


def cmd_selfcheck(args):
    print(f"SigV4 self-check: Amazon's GET Object example signature {self_check()} reproduced")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)

    def common(q):
        q.add_argument("--dir", required=True)
        q.add_argument("--state", required=True)
        q.add_argument("--what", default="nginx,s3,fronts")
        q.add_argument("--root")
        q.add_argument("--lifetime", type=float, default=DEFAULT_LIFETIME)
        q.add_argument("--region", default=DEFAULT_REGION)
        q.add_argument("--bucket", default=DEFAULT_BUCKET)
        q.add_argument("--delay-ms", type=float, default=0)
        q.add_argument("--rate", type=float, default=0)
        q.add_argument("--seed", type=int, default=1)
        q.add_argument("--no-https", action="store_true")

    q = sub.add_parser("start", help="start the servers, print and write the state")
    common(q)
    q.add_argument("--parent", type=int, help="stop when this pid dies (default: the caller; 0: never)")
    q.add_argument("--timeout", type=float, default=180)
    q.set_defaults(fn=cmd_start)
    q = sub.add_parser("_supervise")
    common(q)
    q.add_argument("--parent", type=int, default=0)
    q.add_argument("--parent-start", default="")
    q.add_argument("--log")
    q.set_defaults(fn=_supervise)
    q = sub.add_parser("stop", help="stop what start started")
    q.add_argument("--state", required=True)
    q.set_defaults(fn=cmd_stop)
    q = sub.add_parser("faults", help="set a fault front's script")
    q.add_argument("--state", required=True)
    q.add_argument("--script", required=True, help="JSON list of rules, or @FILE")
    q.add_argument("--seed", type=int)
    q.add_argument("--front", choices=("http", "s3"), default="http")
    q.set_defaults(fn=cmd_faults)
    q = sub.add_parser("shape", help="set the fault fronts' shaping")
    q.add_argument("--state", required=True)
    q.add_argument("--delay-ms", type=float)
    q.add_argument("--rate", type=float)
    q.add_argument("--front", choices=("http", "s3", "both"), default="both")
    q.set_defaults(fn=cmd_shape)
    q = sub.add_parser("env", help="print shell exports for the running servers")
    q.add_argument("--state", required=True)
    q.set_defaults(fn=cmd_env)
    q = sub.add_parser("s3put", help="upload a file through the SigV4 front")
    q.add_argument("--state", required=True)
    q.add_argument("--key", required=True)
    q.add_argument("--file", required=True)
    q.add_argument("--credential", type=int, default=0)
    q.set_defaults(fn=cmd_s3put)
    q = sub.add_parser("selfcheck", help="check SigV4 against Amazon's published example")
    q.set_defaults(fn=cmd_selfcheck)
    args = p.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())

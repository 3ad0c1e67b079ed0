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
              response, bytes/s per connection). It logs every request as one JSON line.

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
  In-process (Python API) the script may also be a callable info -> rule or None, where info is a dict
  with n, method, target, path, range, headers.
  Control endpoint on each fault front (not counted, not logged): PUT /__fault__/script (JSON list, or
  {"rules": [...], "seed": S}), PUT /__fault__/shape ({"delay_ms": D, "rate": R}), POST /__fault__/reset,
  GET /__fault__/stats.
Fault-front log lines (JSON): n, t, conn, method, target, range, status, bytes (body bytes sent), fault,
  ms, error. Sigv4-front log lines: n, t, method, target, range, status, bytes, key, verdict.

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
"""

import argparse
import atexit
import ctypes
import datetime
import hashlib
import hmac
import http.client
import http.server
import itertools
import json
import os
import random
import re
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_LIFETIME = 7200
DEFAULT_BUCKET = "caterva-test"
DEFAULT_REGION = "us-east-1"
S3RVER_KEY = "S3RVER"  # the only access key id s3rver knows
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
CREDENTIALS = [
    {"access_key": "CATERVATESTKEY000001", "secret_key": "caterva/Test+Secret/one/0123456789abcdef",
     "session_token": None},
    {"access_key": "CATERVATESTKEY000002", "secret_key": "caterva/Test+Secret/two/fedcba9876543210",
     "session_token": "caterva-test-session-token-2"},
]
MAX_BODY = 1 << 30


# ----------------------------------------------------------------------------------------------------
# AWS Signature Version 4 (S3 flavour: the path is URI-encoded once, never normalised).

def uri_encode(text, keep_slash=False):
    """AWS's UriEncode: every byte but A-Z a-z 0-9 - _ . ~ as %XY (uppercase hex)."""
    return urllib.parse.quote(text, safe="-_.~" + ("/" if keep_slash else ""))


def canonical_uri(raw_path):
    if not raw_path:
        return "/"
    return "/".join(uri_encode(urllib.parse.unquote(seg)) for seg in raw_path.split("/"))


def canonical_query(raw_query):
    pairs = []
    for item in raw_query.split("&") if raw_query else []:
        if not item:
            continue
        name, _, value = item.partition("=")
        pairs.append((uri_encode(urllib.parse.unquote(name)), uri_encode(urllib.parse.unquote(value))))
    pairs.sort()
    return "&".join(f"{k}={v}" for k, v in pairs)


def canonical_headers(headers, signed_names):
    """headers: (name, value) pairs as received; signed_names: lowercase names. None if one is absent."""
    lines = []
    for name in signed_names:
        values = [" ".join(v.strip().split()) for k, v in headers if k.lower() == name]
        if not values:
            return None
        lines.append(f"{name}:{','.join(values)}\n")
    return "".join(lines)


def canonical_request(method, raw_path, raw_query, headers, signed_names, payload_hash):
    canon_headers = canonical_headers(headers, signed_names)
    if canon_headers is None:
        return None
    return "\n".join([method, canonical_uri(raw_path), canonical_query(raw_query), canon_headers,
                      ";".join(signed_names), payload_hash])


def string_to_sign(amz_date, scope, canon_request):
    return "\n".join(["AWS4-HMAC-SHA256", amz_date, scope,
                      hashlib.sha256(canon_request.encode()).hexdigest()])


def signing_key(secret, date, region, service="s3"):
    key = ("AWS4" + secret).encode()
    for part in (date, region, service, "aws4_request"):
        key = hmac.new(key, part.encode(), hashlib.sha256).digest()
    return key


def signature(secret, date, region, service, to_sign):
    return hmac.new(signing_key(secret, date, region, service), to_sign.encode(),
                    hashlib.sha256).hexdigest()


def sign(method, raw_path, raw_query, headers, access_key, secret, region, amz_date, payload_hash,
         service="s3", signed_names=None):
    """Signs a request; headers must already hold host, x-amz-date and x-amz-content-sha256 as wanted.
    Returns (Authorization value, canonical request, string to sign)."""
    if signed_names is None:
        signed_names = sorted({k.lower() for k, _ in headers})
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    creq = canonical_request(method, raw_path, raw_query, headers, signed_names, payload_hash)
    sts = string_to_sign(amz_date, scope, creq)
    sig = signature(secret, amz_date[:8], region, service, sts)
    auth = (f"AWS4-HMAC-SHA256 Credential={access_key}/{scope},"
            f"SignedHeaders={';'.join(signed_names)},Signature={sig}")
    return auth, creq, sts


def signed_headers_for(method, host, target, access_key, secret, region, body=b"", session_token=None,
                       extra=None, unsigned_payload=True, now=None):
    """Headers (a list of pairs) for a request signed like a careful client: host, x-amz-date,
    x-amz-content-sha256 and every x-amz-* and extra header are signed."""
    now = now or datetime.datetime.now(datetime.timezone.utc)
    amz_date = now.strftime("%Y%m%dT%H%M%SZ")
    payload = "UNSIGNED-PAYLOAD" if unsigned_payload else hashlib.sha256(body or b"").hexdigest()
    headers = [("Host", host), ("x-amz-date", amz_date), ("x-amz-content-sha256", payload)]
    if session_token:
        headers.append(("x-amz-security-token", session_token))
    headers += list((extra or {}).items())
    path, _, query = target.partition("?")
    auth, _, _ = sign(method, path, query, headers, access_key, secret, region, amz_date, payload)
    return headers + [("Authorization", auth)]


# Amazon S3 API Reference, "Signature Calculations for the Authorization Header: Transferring Payload
# in a Single Chunk (AWS Signature Version 4)" (sig-v4-header-based-auth), section "Examples: Signature
# Calculations", "Example: GET Object": the first 10 bytes of test.txt from examplebucket.
DOC_EXAMPLE = {
    "access_key": "AKIAIOSFODNN7EXAMPLE",
    "secret_key": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "region": "us-east-1",
    "amz_date": "20130524T000000Z",
    "headers": [("Host", "examplebucket.s3.amazonaws.com"), ("Range", "bytes=0-9"),
                ("x-amz-content-sha256", EMPTY_SHA256), ("x-amz-date", "20130524T000000Z")],
    "canonical_request_sha256": "7344ae5b7ee6c3e7e6b0fe0640412a37625d1fbfff95c48bbb2dc43964946972",
    "signature": "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
}


def self_check():
    """Reproduces the published example; returns its signature, raises AssertionError otherwise."""
    ex = DOC_EXAMPLE
    auth, creq, sts = sign("GET", "/test.txt", "", ex["headers"], ex["access_key"], ex["secret_key"],
                           ex["region"], ex["amz_date"], EMPTY_SHA256)
    got_hash = hashlib.sha256(creq.encode()).hexdigest()
    if got_hash != ex["canonical_request_sha256"]:
        raise AssertionError(f"SigV4 self-check: canonical request hash {got_hash}")
    got = auth.rsplit("Signature=", 1)[1]
    if got != ex["signature"]:
        raise AssertionError(f"SigV4 self-check: signature {got}, published {ex['signature']}")
    return got


SELF_CHECK_SIGNATURE = self_check()


# ----------------------------------------------------------------------------------------------------
# Small helpers.

def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


_libc = None
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _prctl = _libc.prctl
except (OSError, AttributeError):
    _prctl = None


def _child_setup(parent_pid):
    def setup():
        if _prctl is not None:
            _prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
        if os.getppid() != parent_pid:  # the parent died before prctl
            os._exit(1)
    return setup


def _spawn(argv, log_path, lifetime, env=None):
    """Starts argv in its own process group, under timeout(1), stdout+stderr to log_path."""
    if lifetime and shutil.which("timeout"):
        argv = ["timeout", "-k", "10", str(int(lifetime))] + list(argv)
    with open(log_path, "ab") as log:
        return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True, env=env,
                                preexec_fn=_child_setup(os.getpid()))


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _stop_group(proc, grace=5.0):
    """SIGTERM to the process group, then SIGKILL; waits until the group is empty (bounded)."""
    if proc is None:
        return
    pgid = proc.pid
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            continue
        for _ in range(int(wait * 20)):
            if not _group_alive(pgid):
                return
            time.sleep(0.05)
    try:
        proc.wait(timeout=1)
    except subprocess.TimeoutExpired:
        pass


def _http_status(host, port, path="/__ready__", method="GET", context=None, timeout=2.0):
    if context is not None:
        conn = http.client.HTTPSConnection(host, port, timeout=timeout, context=context)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request(method, path)
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def _tail(path, n=2000):
    try:
        with open(path, "rb") as f:
            return f.read()[-n:].decode(errors="replace")
    except OSError:
        return ""


def parse_access_log(path):
    """nginx access log lines as dicts (see the module docstring for the fields)."""
    names = ("method", "uri", "range", "status", "body_bytes", "request_time", "bytes_sent",
             "protocol", "scheme", "connection", "connection_requests", "msec")
    out = []
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except FileNotFoundError:
        return out
    for line in lines:
        fields = line.split("\t")
        if len(fields) != len(names):
            raise ValueError(f"unparseable access log line: {line!r}")
        rec = dict(zip(names, fields))
        if rec["range"] == "-":
            rec["range"] = None
        for k in ("status", "body_bytes", "bytes_sent", "connection", "connection_requests"):
            rec[k] = int(rec[k])
        rec["request_time"] = float(rec["request_time"])
        rec["msec"] = float(rec["msec"])
        out.append(rec)
    return out


def read_json_log(path):
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def s3_error_xml(code, message, extra=None):
    def esc(s):
        return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    more = "".join(f"<{k}>{esc(v)}</{k}>" for k, v in (extra or {}).items())
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{esc(code)}</Code>'
            f"<Message>{esc(message)}</Message>{more}<RequestId>caterva-test</RequestId></Error>"
            ).encode()


# ----------------------------------------------------------------------------------------------------
# nginx

NGINX_CONF = """\
# Written by tests/remote/servers.py for one test run.
{user}worker_processes 1;
daemon off;
master_process on;
pid {tmp}/nginx.pid;
lock_file {tmp}/nginx.lock;
error_log {tmp}/error.log notice;
events {{ worker_connections 512; }}
http {{
    default_type application/octet-stream;
{temp_paths}    log_format caterva '$request_method\\t$request_uri\\t$http_range\\t$status\\t$body_bytes_sent\\t$request_time\\t$bytes_sent\\t$server_protocol\\t$scheme\\t$connection\\t$connection_requests\\t$msec';
    access_log {tmp}/access.log caterva;
    sendfile on;
    server_tokens off;
    keepalive_timeout 65;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{http_port};
{https_listen}        server_name localhost 127.0.0.1;
        root {root};
        location = /__ready__ {{ access_log off; return 204; }}
        location / {{ }}
    }}
}}
"""
NGINX_TEMP_PATHS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def make_ca(tls_dir):
    """A throwaway CA and a server certificate for 127.0.0.1 and localhost, signed by it."""
    os.makedirs(tls_dir, exist_ok=True)
    p = {k: os.path.join(tls_dir, k) for k in ("ca.key", "ca.pem", "server.key", "server.csr",
                                                "server.pem", "server.ext")}
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]

    def run(args):
        r = subprocess.run(["openssl"] + args, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=60)
        if r.returncode:
            raise RuntimeError(f"openssl {args[0]} failed: {r.stderr.decode(errors='replace')}")

    run(["req", "-x509"] + ec + ["-keyout", p["ca.key"], "-out", p["ca.pem"], "-days", "3",
         "-subj", "/CN=caterva remote tests throwaway CA",
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
    run(["req", "-new"] + ec + ["-keyout", p["server.key"], "-out", p["server.csr"],
                                "-subj", "/CN=127.0.0.1"])
    with open(p["server.ext"], "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
                "keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n"
                "subjectKeyIdentifier=hash\nauthorityKeyIdentifier=keyid,issuer\n")
    run(["x509", "-req", "-in", p["server.csr"], "-CA", p["ca.pem"], "-CAkey", p["ca.key"],
         "-set_serial", str(random.SystemRandom().randrange(1 << 62)), "-days", "3",
         "-extfile", p["server.ext"], "-out", p["server.pem"]])
    return p["ca.pem"], p["server.pem"], p["server.key"]


class Nginx:
    def __init__(self, tmp, root, https=True, lifetime=DEFAULT_LIFETIME, binary=None):
        self.tmp = os.path.join(tmp, "nginx")
        self.root = root
        self.https = https
        self.lifetime = lifetime
        self.binary = binary or shutil.which("nginx") or "/usr/sbin/nginx"
        self.proc = None
        self.conf = os.path.join(self.tmp, "nginx.conf")
        self.access_log = os.path.join(self.tmp, "access.log")
        self.error_log = os.path.join(self.tmp, "error.log")
        self.out_log = os.path.join(self.tmp, "stdout.log")
        self.ca_file = self.cert = self.key = None
        self.http_port = self.https_port = None

    def _write_conf(self, temp_paths):
        user = "user root;\n" if os.geteuid() == 0 else ""
        tp = "".join(f"    {name}_temp_path {self.tmp}/{name};\n" for name in temp_paths)
        https = ""
        if self.https:
            https = (f"        listen 127.0.0.1:{self.https_port} ssl http2;\n"
                     f"        ssl_certificate {self.cert};\n"
                     f"        ssl_certificate_key {self.key};\n"
                     "        ssl_protocols TLSv1.2 TLSv1.3;\n")
        with open(self.conf, "w") as f:
            f.write(NGINX_CONF.format(user=user, tmp=self.tmp, temp_paths=tp, http_port=self.http_port,
                                      https_listen=https, root=self.root))

    def _test_conf(self):
        """nginx -t; drops *_temp_path directives of modules this nginx lacks. Bounded."""
        temp_paths = list(NGINX_TEMP_PATHS)
        for _ in range(len(NGINX_TEMP_PATHS) + 1):
            self._write_conf(temp_paths)
            r = subprocess.run([self.binary, "-t", "-q", "-p", self.tmp + "/", "-c", self.conf,
                                "-e", self.error_log], stdin=subprocess.DEVNULL, capture_output=True,
                               timeout=60)
            if r.returncode == 0:
                return
            err = r.stderr.decode(errors="replace")
            m = re.search(r'unknown directive "(\w+)_temp_path"', err)
            if not m or m.group(1) not in temp_paths:
                raise RuntimeError(f"nginx -t failed:\n{err}")
            temp_paths.remove(m.group(1))
        raise RuntimeError("nginx -t kept failing")

    def start(self):
        if not os.path.exists(self.binary):
            raise RuntimeError("nginx not found: run tests/remote/deps.sh")
        os.makedirs(self.tmp, exist_ok=True)
        for name in NGINX_TEMP_PATHS:
            os.makedirs(os.path.join(self.tmp, name), exist_ok=True)
        if self.https:
            self.ca_file, self.cert, self.key = make_ca(os.path.join(self.tmp, "tls"))
        last = ""
        for _ in range(5):  # a port taken between free_port() and nginx's bind: try others
            self.http_port = free_port()
            self.https_port = free_port() if self.https else None
            if self.https_port == self.http_port:
                continue
            self._test_conf()
            self.proc = _spawn([self.binary, "-p", self.tmp + "/", "-c", self.conf, "-e",
                                self.error_log], self.out_log, self.lifetime)
            ok, last = self._wait_ready()
            if ok:
                return self
            _stop_group(self.proc)
            self.proc = None
            if "Address already in use" not in last:
                break
        raise RuntimeError(f"nginx did not start:\n{last}")

    def _wait_ready(self, timeout=30.0):
        ctx = ssl.create_default_context(cafile=self.ca_file) if self.https else None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False, _tail(self.error_log) + _tail(self.out_log)
            try:
                if _http_status("127.0.0.1", self.http_port) == 204 and (
                        not self.https or _http_status("127.0.0.1", self.https_port,
                                                       context=ctx) == 204):
                    return True, ""
            except (OSError, http.client.HTTPException):
                pass
            time.sleep(0.1)
        return False, "timed out\n" + _tail(self.error_log)

    def stop(self):
        _stop_group(self.proc)

    def state(self):
        return {"http_url": f"http://127.0.0.1:{self.http_port}", "http_port": self.http_port,
                "https_url": f"https://127.0.0.1:{self.https_port}" if self.https else None,
                "https_port": self.https_port, "ca_file": self.ca_file, "root": self.root,
                "access_log": self.access_log, "error_log": self.error_log, "conf": self.conf,
                "pid": self.proc.pid if self.proc else None,
                "pgid": self.proc.pid if self.proc else None}


# ----------------------------------------------------------------------------------------------------
# s3rver

def find_s3rver():
    cands = [os.environ.get("S3RVER")]
    build = os.environ.get("BUILD")
    if build:
        cands.append(os.path.join(build, "remote-node", "node_modules", ".bin", "s3rver"))
    cands.append(os.path.join(ROOT, "build", "remote-node", "node_modules", ".bin", "s3rver"))
    cands.append(shutil.which("s3rver"))
    for c in cands:
        if c and os.path.exists(c):
            return c
    return None


class S3rver:
    def __init__(self, tmp, bucket=DEFAULT_BUCKET, lifetime=DEFAULT_LIFETIME, binary=None):
        self.tmp = os.path.join(tmp, "s3rver")
        self.data = os.path.join(self.tmp, "data")
        self.log = os.path.join(self.tmp, "s3rver.log")
        self.bucket = bucket
        self.lifetime = lifetime
        self.binary = binary or find_s3rver()
        self.proc = None
        self.port = None

    def start(self, timeout=90.0):
        node = shutil.which("node")
        if not self.binary or not node:
            raise RuntimeError("s3rver or node not found: run tests/remote/deps.sh")
        os.makedirs(self.data, exist_ok=True)
        argv = [node, os.path.realpath(self.binary), "-d", self.data, "-a", "127.0.0.1", "-p", "0",
                "--service-endpoint", "localhost", "--configure-bucket", self.bucket]
        self.proc = _spawn(argv, self.log, self.lifetime)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(r"listening on [^\s:]+:(\d+)", _tail(self.log, 100000))
            if m:
                self.port = int(m.group(1))
                break
            if self.proc.poll() is not None:
                raise RuntimeError(f"s3rver exited:\n{_tail(self.log)}")
            time.sleep(0.1)
        else:
            self.stop()
            raise RuntimeError(f"s3rver did not start:\n{_tail(self.log)}")
        for _ in range(100):
            try:
                _http_status("127.0.0.1", self.port, "/", "HEAD")
                return self
            except (OSError, http.client.HTTPException):
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("s3rver does not answer")

    def stop(self):
        _stop_group(self.proc)

    def state(self):
        return {"url": f"http://127.0.0.1:{self.port}", "port": self.port, "data_dir": self.data,
                "log": self.log, "bucket": self.bucket, "pid": self.proc.pid if self.proc else None,
                "pgid": self.proc.pid if self.proc else None}


# ----------------------------------------------------------------------------------------------------
# The fronts: threaded HTTP/1.1 proxies of ours.

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "trailers",
              "transfer-encoding", "upgrade", "expect", "proxy-authorization", "proxy-authenticate"}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 120  # an idle keep-alive connection ends after this
    front = None

    def log_message(self, *args):
        pass

    def setup(self):
        super().setup()
        self.origin = None
        self.conn_id = self.front._new_conn(self.connection)

    def finish(self):
        try:
            super().finish()
        except OSError:
            pass
        finally:
            self.front._end_conn(self.connection)
            if self.origin is not None:
                self.origin.close()

    def _any(self):
        try:
            self.front.handle(self)
        except (BrokenPipeError, ConnectionResetError, socket.timeout, TimeoutError):
            self.close_connection = True

    do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = do_OPTIONS = do_PATCH = _any


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


def read_body(h):
    """The request body (chunked or Content-Length), or None when there is none."""
    if "chunked" in h.headers.get("Transfer-Encoding", "").lower():
        parts, total = [], 0
        for _ in range(1 << 20):
            line = h.rfile.readline(65537)
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                for _ in range(1000):
                    if h.rfile.readline(65537) in (b"\r\n", b"\n", b""):
                        break
                break
            parts.append(h.rfile.read(size))
            h.rfile.readline(3)
            total += size
            if total > MAX_BODY:
                raise ValueError("request body too large")
        return b"".join(parts)
    n = h.headers.get("Content-Length")
    if n is not None:
        n = int(n)
        if n > MAX_BODY:
            raise ValueError("request body too large")
        return h.rfile.read(n)
    return None


def _split_target(target):
    if target.startswith(("http://", "https://")):
        u = urllib.parse.urlsplit(target)
        target = u.path + ("?" + u.query if u.query else "")
    path, _, query = target.partition("?")
    return target, path, query


class _Front:
    """Base of the fronts: a threaded server on 127.0.0.1 forwarding to an HTTP origin."""
    name = "front"

    def __init__(self, origin_host, origin_port, log_path, port=0, origin_timeout=120.0):
        self.origin_host = origin_host
        self.origin_port = origin_port
        self.origin_timeout = origin_timeout
        self.log_path = log_path
        self.port = port
        self.server = None
        self.thread = None
        self._lock = threading.Lock()
        self._log_lock = threading.Lock()
        self._conns = {}
        self._conn_ids = itertools.count(1)
        self._stopping = threading.Event()
        self._log_file = None

    def start(self):
        handler = type(f"{type(self).__name__}Handler", (_Handler,), {"front": self})
        self.server = _Server(("127.0.0.1", self.port), handler)
        self.port = self.server.server_address[1]
        self._log_file = open(self.log_path, "a", encoding="utf-8")
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.2},
                                       name=f"{self.name}-{self.port}", daemon=True)
        self.thread.start()
        return self

    def stop(self):
        if self.server is None:
            return
        self._stopping.set()
        self.server.shutdown()
        self.server.server_close()
        with self._lock:
            conns = list(self._conns.values())
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.thread.join(timeout=5)
        self.server = None
        with self._log_lock:
            if self._log_file:
                self._log_file.close()
                self._log_file = None

    @property
    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def _new_conn(self, sock):
        with self._lock:
            cid = next(self._conn_ids)
            self._conns[cid] = sock
            return cid

    def _end_conn(self, sock):
        with self._lock:
            for k, v in list(self._conns.items()):
                if v is sock:
                    del self._conns[k]

    def log(self, entry):
        with self._log_lock:
            if self._log_file:
                self._log_file.write(json.dumps(entry, sort_keys=True) + "\n")
                self._log_file.flush()

    def sleep(self, seconds):
        if seconds > 0:
            self._stopping.wait(seconds)

    def forward(self, h, method, target, headers, body):
        """Sends the request to the origin on this client connection's own origin connection."""
        for attempt in (0, 1):
            if h.origin is None:
                h.origin = http.client.HTTPConnection(self.origin_host, self.origin_port,
                                                      timeout=self.origin_timeout)
            try:
                h.origin.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
                has_host = False
                for k, v in headers:
                    lk = k.lower()
                    if lk in HOP_BY_HOP or lk == "content-length":
                        continue
                    has_host = has_host or lk == "host"
                    h.origin.putheader(k, v)
                if not has_host:
                    h.origin.putheader("Host", f"{self.origin_host}:{self.origin_port}")
                if body is not None:
                    h.origin.putheader("Content-Length", str(len(body)))
                h.origin.endheaders(body)
                return h.origin.getresponse()
            except (ConnectionError, http.client.RemoteDisconnected, http.client.BadStatusLine):
                h.origin.close()
                h.origin = None
                if attempt:
                    raise

    @staticmethod
    def relay_headers(resp_headers, length):
        out = [(k, v) for k, v in resp_headers
               if k.lower() not in HOP_BY_HOP and k.lower() != "content-length"]
        if length is not None:
            out.append(("Content-Length", str(length)))
        return out

    @staticmethod
    def send_head(h, status, reason, headers):
        h.send_response_only(status, reason or None)
        for k, v in headers:
            h.send_header(k, v)
        if h.close_connection:
            h.send_header("Connection", "close")
        h.end_headers()

    def send_error_xml(self, h, status, code, message, extra=None, retry_after=None):
        body = s3_error_xml(code, message, extra)
        headers = [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))]
        if retry_after is not None:
            headers.append(("Retry-After", str(retry_after)))
        self.send_head(h, status, None, headers)
        if h.command != "HEAD":
            h.wfile.write(body)
            return len(body)
        return 0

    def _finish_origin(self, h, resp):
        if resp.will_close and h.origin is not None:
            h.origin.close()
            h.origin = None

    def write(self, h, data, shaping):
        """Writes data, at most shaping['rate'] bytes/s since shaping['t0'] (0: no limit)."""
        rate = shaping.get("rate") or 0
        step = 65536 if not rate else max(1024, min(65536, int(rate) // 50))
        view = memoryview(data)
        for i in range(0, len(view), step):
            piece = view[i:i + step]
            h.wfile.write(piece)
            shaping["sent"] = shaping.get("sent", 0) + len(piece)
            if rate:
                self.sleep(shaping["t0"] + shaping["sent"] / rate - time.monotonic())
        return len(view)

    def relay(self, h, resp, shaping=None, head=None):
        """Relays an origin answer (status, headers, body streamed). Returns (status, body bytes)."""
        shaping = shaping if shaping is not None else {}
        no_body = h.command == "HEAD" or resp.status in (204, 304) or 100 <= resp.status < 200
        length = resp.length if not no_body else None
        buffered = None
        if not no_body and length is None:
            buffered = resp.read()
            length = len(buffered)
        headers = self.relay_headers(resp.getheaders(), length)
        if no_body:
            headers = [(k, v) for k, v in resp.getheaders()
                       if k.lower() not in HOP_BY_HOP]
        self.send_head(h, resp.status, resp.reason, headers)
        shaping["t0"] = time.monotonic()
        sent = 0
        if buffered is not None:
            sent = self.write(h, buffered, shaping)
        elif not no_body:
            for _ in range(length + 1):  # each turn reads at least one byte or ends
                chunk = resp.read(min(65536, length - sent))
                if not chunk:
                    break
                sent += self.write(h, chunk, shaping)
        else:
            resp.read()
        self._finish_origin(h, resp)
        return resp.status, sent


# ---------------------------------------------------------------------------------------------- SigV4

class SigV4Front(_Front):
    """Checks AWS SigV4 (Authorization header) before forwarding to an S3 server (s3rver)."""
    name = "sigv4"

    def __init__(self, origin_host, origin_port, log_path, credentials=None, region=DEFAULT_REGION,
                 anonymous=False, backend_key=S3RVER_KEY, max_skew=900, port=0):
        super().__init__(origin_host, origin_port, log_path, port)
        self.credentials = {c["access_key"]: c for c in (credentials or CREDENTIALS)}
        self.region = region
        self.anonymous = anonymous
        self.backend_key = backend_key
        self.max_skew = max_skew
        self._n = itertools.count(1)

    def verify(self, method, target, headers, body):
        """None when the request may pass, else (status, code, message, extra); also the key id."""
        hdr = {}
        for k, v in headers:
            hdr.setdefault(k.lower(), v)
        auth = hdr.get("authorization")
        if auth is None:
            if self.anonymous:
                return None, None
            return (403, "AccessDenied", "Access Denied", None), None
        if not auth.startswith("AWS4-HMAC-SHA256 "):
            return (400, "InvalidRequest",
                    "Only AWS4-HMAC-SHA256 Authorization headers are accepted here.", None), None
        parts = {}
        for item in auth[len("AWS4-HMAC-SHA256 "):].split(","):
            k, sep, v = item.strip().partition("=")
            if sep:
                parts[k.strip()] = v.strip()
        if not all(k in parts for k in ("Credential", "SignedHeaders", "Signature")):
            return (400, "AuthorizationHeaderMalformed",
                    "The authorization header is malformed; it needs Credential, SignedHeaders "
                    "and Signature.", None), None
        cred = parts["Credential"].split("/")
        if len(cred) != 5:
            return (400, "AuthorizationHeaderMalformed",
                    "The authorization header is malformed; the Credential is mal-formed.", None), None
        key, date, region, service, terminal = cred
        known = self.credentials.get(key)
        if known is None:
            return (403, "InvalidAccessKeyId",
                    "The AWS Access Key Id you provided does not exist in our records.",
                    {"AWSAccessKeyId": key}), key
        if region != self.region:
            return (400, "AuthorizationHeaderMalformed",
                    f"The authorization header is malformed; the region '{region}' is wrong; "
                    f"expecting '{self.region}'", {"Region": self.region}), key
        if service != "s3" or terminal != "aws4_request":
            return (400, "AuthorizationHeaderMalformed",
                    "The authorization header is malformed; the credential scope must end in "
                    "s3/aws4_request.", None), key
        amz_date = hdr.get("x-amz-date", "")
        try:
            when = datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(
                tzinfo=datetime.timezone.utc)
        except ValueError:
            return (403, "AccessDenied",
                    "AWS authentication requires a valid x-amz-date header.", None), key
        if date != amz_date[:8]:
            return (400, "AuthorizationHeaderMalformed",
                    "Invalid credential date. Date is not the same as X-Amz-Date.", None), key
        skew = abs((datetime.datetime.now(datetime.timezone.utc) - when).total_seconds())
        if skew > self.max_skew:
            return (403, "RequestTimeTooSkewed",
                    "The difference between the request time and the current time is too large.",
                    {"RequestTime": amz_date}), key
        signed = parts["SignedHeaders"].split(";")
        if signed != sorted(signed) or any(s != s.lower() for s in signed):
            return (403, "SignatureDoesNotMatch", "SignedHeaders must be sorted and lowercase.",
                    None), key
        for must in ("host", "x-amz-date"):
            if must not in signed:
                return (403, "AccessDenied", f"The {must} header must be signed.", None), key
        payload = hdr.get("x-amz-content-sha256")
        if payload is None:
            return (400, "InvalidRequest",
                    "Missing required header for this request: x-amz-content-sha256", None), key
        if payload.startswith("STREAMING-"):
            return (501, "NotImplemented", "Streaming (chunked) signatures are not supported here.",
                    None), key
        if payload != "UNSIGNED-PAYLOAD":
            if not re.fullmatch(r"[0-9a-f]{64}", payload):
                return (400, "InvalidArgument", "x-amz-content-sha256 must be UNSIGNED-PAYLOAD or a "
                        "SHA-256 in lowercase hex.", None), key
            actual = hashlib.sha256(body or b"").hexdigest()
            if actual != payload:
                return (400, "XAmzContentSHA256Mismatch",
                        "The provided 'x-amz-content-sha256' header does not match what was computed.",
                        {"ClientComputedContentSHA256": payload,
                         "S3ComputedContentSHA256": actual}), key
        token = hdr.get("x-amz-security-token")
        if known.get("session_token"):
            if token != known["session_token"] or "x-amz-security-token" not in signed:
                return (403, "InvalidToken",
                        "The provided token is malformed or otherwise invalid.", None), key
        elif token is not None:
            return (403, "InvalidToken", "The provided token is malformed or otherwise invalid.",
                    None), key
        _, path, query = _split_target(target)
        creq = canonical_request(method, path, query, headers, signed, payload)
        if creq is None:
            return (403, "SignatureDoesNotMatch",
                    "A header named in SignedHeaders is not in the request.", None), key
        scope = f"{date}/{region}/{service}/aws4_request"
        sts = string_to_sign(amz_date, scope, creq)
        expected = signature(known["secret_key"], date, region, service, sts)
        if not hmac.compare_digest(expected, parts["Signature"]):
            return (403, "SignatureDoesNotMatch",
                    "The request signature we calculated does not match the signature you "
                    "provided. Check your key and signing method.",
                    {"AWSAccessKeyId": key, "StringToSign": sts, "CanonicalRequest": creq}), key
        return None, key

    def handle(self, h):
        n = next(self._n)
        t0 = time.monotonic()
        body = read_body(h)
        headers = h.headers.items()
        target = h.path
        error, key = self.verify(h.command, target, headers, body)
        entry = {"n": n, "t": round(time.time(), 3), "method": h.command, "target": target,
                 "range": h.headers.get("Range"), "key": key}
        if error is not None:
            status, code, message, extra = error
            entry.update(status=status, bytes=self.send_error_xml(h, status, code, message, extra),
                         verdict=code)
        else:
            if key is not None:
                headers = [(k, re.sub(r"Credential=[^/]*/", f"Credential={self.backend_key}/", v)
                            if k.lower() == "authorization" else v) for k, v in headers]
            fwd_target, _, _ = _split_target(target)
            try:
                resp = self.forward(h, h.command, fwd_target, headers, body)
            except (OSError, http.client.HTTPException) as e:
                h.close_connection = True
                entry.update(status=502, verdict=f"origin: {type(e).__name__}",
                             bytes=self.send_error_xml(h, 502, "BadGateway", "s3rver failed"))
            else:
                status, sent = self.relay(h, resp)
                entry.update(status=status, bytes=sent, verdict="ok" if key else "anonymous")
        entry["ms"] = round((time.monotonic() - t0) * 1000, 1)
        self.log(entry)


# ---------------------------------------------------------------------------------------------- faults

FAULT_NAMES = {"reset", "truncate", "short", "ignore_range", "garbage", "delay", "stall", "slowdown",
               "pass"}
DEFAULT_ERROR_CODES = {400: "BadRequest", 403: "AccessDenied", 404: "NoSuchKey", 429: "TooManyRequests",
                       500: "InternalError", 502: "BadGateway", 503: "ServiceUnavailable",
                       504: "GatewayTimeout"}
CONTROL = "/__fault__/"


def _check_rules(rules):
    if callable(rules):
        return rules
    if not isinstance(rules, list):
        raise ValueError("a fault script is a list of rules")
    for r in rules:
        if not isinstance(r, dict):
            raise ValueError(f"a rule is an object: {r!r}")
        f = r.get("fault", "pass")
        if not (isinstance(f, int) or (isinstance(f, str) and (f in FAULT_NAMES or f.isdigit()))):
            raise ValueError(f"unknown fault {f!r}")
        unknown = set(r) - {"fault", "nth", "path", "method", "ranged", "times", "prob", "bytes",
                            "delay_ms", "retry_after", "code", "message"}
        if unknown:
            raise ValueError(f"unknown rule keys {sorted(unknown)}")
        if "path" in r:
            re.compile(r["path"])
    return rules


class FaultFront(_Front):
    """Forwards to an origin; answers scripted requests with faults; shapes every connection."""
    name = "fault"

    def __init__(self, origin_host, origin_port, log_path, script=None, seed=1, delay_ms=0, rate=0,
                 port=0):
        super().__init__(origin_host, origin_port, log_path, port)
        self.delay_ms = delay_ms
        self.rate = rate
        self.seed = seed
        self.set_script(script or [], seed)

    def set_script(self, script, seed=None):
        script = _check_rules(script)
        with self._lock:
            if seed is not None:
                self.seed = seed
            self.script = script
            self.count = 0
            self.fired = [0] * (len(script) if isinstance(script, list) else 0)
            self.faults = {}
            self.rng = random.Random(self.seed)

    def set_shape(self, delay_ms=None, rate=None):
        with self._lock:
            if delay_ms is not None:
                self.delay_ms = delay_ms
            if rate is not None:
                self.rate = rate

    def stats(self):
        with self._lock:
            return {"requests": self.count, "faults": dict(self.faults), "fired": list(self.fired),
                    "delay_ms": self.delay_ms, "rate": self.rate, "seed": self.seed}

    def _choose(self, info):
        if callable(self.script):
            return self.script(info)
        for i, r in enumerate(self.script):
            nth = r.get("nth")
            if nth is not None and info["n"] not in ([nth] if isinstance(nth, int) else nth):
                continue
            if "path" in r and not re.search(r["path"], info["target"]):
                continue
            if "method" in r and r["method"].upper() != info["method"]:
                continue
            if "ranged" in r and bool(r["ranged"]) != (info["range"] is not None):
                continue
            if "times" in r and self.fired[i] >= r["times"]:
                continue
            if "prob" in r and self.rng.random() >= r["prob"]:
                continue
            self.fired[i] += 1
            return r
        return None

    def _control(self, h):
        body = read_body(h) or b""
        what = h.path[len(CONTROL):].split("?")[0]
        try:
            if what == "script" and h.command in ("PUT", "POST"):
                data = json.loads(body or b"[]")
                if isinstance(data, dict):
                    self.set_script(data.get("rules", []), data.get("seed"))
                else:
                    self.set_script(data)
            elif what == "shape" and h.command in ("PUT", "POST"):
                data = json.loads(body or b"{}")
                self.set_shape(data.get("delay_ms"), data.get("rate"))
            elif what == "reset" and h.command in ("PUT", "POST"):
                self.set_script([])
            elif what != "stats":
                raise ValueError(f"unknown control {h.command} {what}")
            out, status = json.dumps(self.stats()).encode(), 200
        except (ValueError, TypeError) as e:
            out, status = json.dumps({"error": str(e)}).encode(), 400
        self.send_head(h, status, None, [("Content-Type", "application/json"),
                                         ("Content-Length", str(len(out)))])
        h.wfile.write(out)

    def _reset(self, h):
        """Ends the connection with a TCP RST."""
        h.close_connection = True
        sock = h.connection
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            os.close(sock.detach())
        except OSError:
            pass

    def handle(self, h):
        if h.path.startswith(CONTROL):
            return self._control(h)
        t0 = time.monotonic()
        body = read_body(h)
        headers = h.headers.items()
        target, path, _ = _split_target(h.path)
        rng_header = h.headers.get("Range")
        with self._lock:
            self.count += 1
            n = self.count
            info = {"n": n, "method": h.command, "target": target, "path": path, "range": rng_header,
                    "headers": headers}
            rule = self._choose(info)
            fault = (rule or {}).get("fault", "pass") if rule else "pass"
            if isinstance(fault, str) and fault.isdigit():
                fault = int(fault)
            if fault != "pass":
                self.faults[str(fault)] = self.faults.get(str(fault), 0) + 1
            shaping = {"rate": self.rate, "sent": 0, "t0": time.monotonic()}
            delay = self.delay_ms / 1000.0
        rule = rule or {}
        entry = {"n": n, "t": round(time.time(), 3), "conn": h.conn_id, "method": h.command,
                 "target": target, "range": rng_header, "fault": None if fault == "pass" else fault}
        status, sent, error = None, 0, None
        try:
            status, sent = self._apply(h, target, headers, body, rule, fault, delay, shaping)
        except (BrokenPipeError, ConnectionResetError, socket.timeout, TimeoutError) as e:
            error = type(e).__name__
            h.close_connection = True
        except (OSError, http.client.HTTPException) as e:  # the origin failed: say so, as a proxy does
            error = f"origin: {type(e).__name__}: {e}"
            h.close_connection = True
            try:
                status, sent = 502, self.send_error_xml(h, 502, "BadGateway", "origin failed")
            except OSError:
                pass
        entry.update(status=status, bytes=sent, error=error,
                     ms=round((time.monotonic() - t0) * 1000, 1))
        self.log(entry)

    def _apply(self, h, target, headers, body, rule, fault, delay, shaping):
        k = rule.get("bytes")
        if isinstance(fault, int) or fault == "slowdown":
            status = 503 if fault == "slowdown" else fault
            code = rule.get("code") or ("SlowDown" if fault == "slowdown"
                                        else DEFAULT_ERROR_CODES.get(status, f"Status{status}"))
            message = rule.get("message") or ("Please reduce your request rate."
                                              if fault == "slowdown" else f"injected {status}")
            self.sleep(delay)
            return status, self.send_error_xml(h, status, code, message,
                                               retry_after=rule.get("retry_after"))
        if fault == "reset" and k is None:
            self.sleep(delay)
            self._reset(h)
            return None, 0
        if fault == "delay":
            self.sleep(rule.get("delay_ms", 1000) / 1000.0)
        if fault == "ignore_range":
            headers = [(a, b) for a, b in headers if a.lower() not in ("range", "if-range")]
        resp = self.forward(h, h.command, target, headers, body)
        if fault in ("pass", "delay", "ignore_range"):
            self.sleep(delay)
            shaping["t0"] = time.monotonic()
            return self.relay(h, resp, shaping)
        # The remaining faults need the whole answer.
        data = resp.read()
        self._finish_origin(h, resp)
        resp_headers = resp.getheaders()
        self.sleep(delay)
        if fault == "garbage":
            data = random.Random(self.seed * 1000003 + len(data)).randbytes(
                k if k is not None else len(data))
            self.send_head(h, resp.status, resp.reason, self.relay_headers(resp_headers, len(data)))
            shaping["t0"] = time.monotonic()
            return resp.status, self.write(h, data, shaping)
        if fault == "short":
            k = min(len(data), k if k is not None else len(data) // 2)
            out = []
            for name, value in self.relay_headers(resp_headers, k):
                m = re.fullmatch(r"bytes (\d+)-(\d+)/(\S+)", value) if name.lower() == \
                    "content-range" else None
                if m and k > 0:
                    value = f"bytes {m.group(1)}-{int(m.group(1)) + k - 1}/{m.group(3)}"
                out.append((name, value))
            self.send_head(h, resp.status, resp.reason, out)
            shaping["t0"] = time.monotonic()
            return resp.status, self.write(h, data[:k], shaping)
        if fault in ("truncate", "reset"):
            k = min(len(data) - 1 if data else 0, k if k is not None else len(data) // 2)
            if fault == "truncate":
                h.close_connection = True
            self.send_head(h, resp.status, resp.reason, self.relay_headers(resp_headers, len(data)))
            shaping["t0"] = time.monotonic()
            sent = self.write(h, data[:k], shaping)
            if fault == "reset":
                self._reset(h)
            else:
                try:
                    h.wfile.flush()
                    h.connection.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
            return resp.status, sent
        if fault == "stall":
            k = min(len(data), k or 0)
            self.send_head(h, resp.status, resp.reason, self.relay_headers(resp_headers, len(data)))
            shaping["t0"] = time.monotonic()
            sent = self.write(h, data[:k], shaping)
            self.sleep(rule.get("delay_ms", 1000) / 1000.0)
            shaping["t0"], shaping["sent"] = time.monotonic(), 0
            return resp.status, sent + self.write(h, data[k:], shaping)
        raise ValueError(f"unknown fault {fault!r}")


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
        if not self.what <= {"nginx", "s3", "fronts"}:
            raise ValueError(f"unknown servers: {sorted(self.what - {'nginx', 's3', 'fronts'})}")
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
        for front in (self.s3_fault, self.fault, self.sigv4_anon, self.sigv4):
            if front is not None:
                front.stop()
        for srv in (self.s3rver, self.nginx):
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
        (self.s3_fault if front == "s3" else self.fault).set_script(script, seed)

    def set_shape(self, delay_ms=None, rate=None, front="both"):
        for f in ((self.fault, self.s3_fault) if front == "both" else
                  (self.s3_fault,) if front == "s3" else (self.fault,)):
            if f is not None:
                f.set_shape(delay_ms, rate)

    def s3_put(self, key, data, credential=0, endpoint=None):
        return s3_request(endpoint or self.s3_endpoint, "PUT", f"/{self.bucket}/{key}",
                          self.credentials[credential], self.region, data)


def s3_request(endpoint, method, target, credential, region, body=None, extra=None):
    """One signed request with our own signer; returns (status, headers, body)."""
    u = urllib.parse.urlsplit(endpoint)
    if isinstance(body, str):
        with open(body, "rb") as f:
            body = f.read()
    quoted = urllib.parse.quote(target, safe="/?=&-_.~%")
    headers = signed_headers_for(method, u.netloc, quoted, credential["access_key"],
                                 credential["secret_key"], region, body or b"",
                                 credential.get("session_token"), extra)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=60)
    try:
        conn.putrequest(method, quoted, skip_host=True, skip_accept_encoding=True)
        for k, v in headers:
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Length", str(len(body)))
        conn.endheaders(body)
        resp = conn.getresponse()
        return resp.status, resp.getheaders(), resp.read()
    finally:
        conn.close()


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

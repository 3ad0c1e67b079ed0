"""The server processes of the remote-array tests (servers.py): spawning each in its own process group
under timeout(1) with PR_SET_PDEATHSIG, stopping a group, readiness probes, free ports; nginx (its
config, the throwaway CA make_ca, the Nginx class, parse_access_log for its access log) and s3rver
(find_s3rver, the S3rver class). Python 3 standard library only."""

import ctypes
import http.client
import os
import random
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_LIFETIME = 7200
DEFAULT_BUCKET = "caterva-test"


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
    """nginx access log lines as dicts (see servers.py's docstring for the fields)."""
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



def find_moto_python():
    """A Python that has the moto package: $CATERVA_MOTO_PYTHON, this one, python3 on PATH, or a
    pyenv version (the machines have moto in pyenv's Python; Debian's python3, which runs the
    tests because its sqlite3 loads extensions, has not). None when there is none."""
    import glob
    seen = []
    for cand in [os.environ.get("CATERVA_MOTO_PYTHON"), sys.executable, shutil.which("python3")] + \
            sorted(glob.glob(os.path.expanduser("~/.pyenv/versions/*/bin/python3")), reverse=True):
        if not cand or cand in seen:
            continue
        seen.append(cand)
        try:
            r = subprocess.run([cand, "-c", "import moto.moto_server.werkzeug_app"],
                               capture_output=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if r.returncode == 0:
            return cand
    return None


class MotoS3:
    """moto's S3 API (moto_s3.py: one thread, so conditional PUTs are atomic; it enforces
    If-None-Match and If-Match on PUT), with a bucket made at start."""

    def __init__(self, tmp, bucket=DEFAULT_BUCKET, lifetime=DEFAULT_LIFETIME):
        self.tmp = os.path.join(tmp, "moto")
        self.log = os.path.join(self.tmp, "moto.log")
        self.bucket = bucket
        self.lifetime = lifetime
        self.proc = None
        self.port = None

    def start(self, timeout=60.0):
        os.makedirs(self.tmp, exist_ok=True)
        python = find_moto_python()
        if python is None:
            raise RuntimeError("no Python with the moto package (set CATERVA_MOTO_PYTHON)")
        argv = [python, os.path.join(HERE, "moto_s3.py"), "--bucket", self.bucket]
        self.proc = _spawn(argv, self.log, self.lifetime)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(r"listening on [^\s:]+:(\d+)", _tail(self.log, 100000))
            if m:
                self.port = int(m.group(1))
                return self
            if self.proc.poll() is not None:
                raise RuntimeError(f"moto's S3 exited (is the moto package installed?):\n"
                                   f"{_tail(self.log)}")
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"moto's S3 did not start:\n{_tail(self.log)}")

    def stop(self):
        _stop_group(self.proc)

    def state(self):
        return {"url": f"http://127.0.0.1:{self.port}", "port": self.port, "log": self.log,
                "bucket": self.bucket, "pid": self.proc.pid if self.proc else None}

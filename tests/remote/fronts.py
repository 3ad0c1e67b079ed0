"""The fronts of the remote-array tests (servers.py; its docstring describes what they answer, the
fault scripts and the log lines): threaded HTTP/1.1 proxies on 127.0.0.1. _Front is the base
(forwarding on each client connection's own origin connection, relaying with shaping, S3-style XML
errors, JSON-line logs that read_json_log reads), SigV4Front checks AWS Signature Version 4 before
forwarding to s3rver, FaultFront answers scripted requests with faults and shapes every connection
(its /__fault__/ control endpoint sets the script and the shaping). Python 3 standard library only."""

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
import socket
import struct
import sys
import threading
import time
import urllib.parse

from sigv4 import (CREDENTIALS, DEFAULT_REGION, S3RVER_KEY, canonical_request, signature,
                   string_to_sign)

MAX_BODY = 1 << 30


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
# The fronts: threaded HTTP/1.1 proxies of ours.

HOP_BY_HOP = {"connection", "keep-alive", "proxy-connection", "te", "trailer", "trailers",
              "transfer-encoding", "upgrade", "expect", "proxy-authorization", "proxy-authenticate"}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 120  # an idle keep-alive connection ends after this
    # headers and body go out in separate writes: with Nagle's algorithm the body waits for the
    # client's delayed ACK of the headers (40 ms on Linux), a delay no real server adds
    disable_nagle_algorithm = True
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

    def handle_error(self, request, client_address):
        # a client that resets its connection (a killed writer, curl after a fault) is no error
        # of the front's; anything else is printed as socketserver does
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)


class IncompleteBody(ConnectionResetError):
    """The client went away before sending the whole body (a killed writer). S3 never stores such
    a request's object (its error IncompleteBody: fewer bytes than Content-Length); a front must
    not forward it as a complete request either, or a killed writer's index PUT would replace the
    index with the part it sent. The connection is ended without forwarding anything."""


def _read_exactly(h, n):
    data = h.rfile.read(n)
    if len(data) != n:
        raise IncompleteBody(f"the client sent {len(data)} of {n} bytes and went away")
    return data


def read_body(h):
    """The request body (chunked or Content-Length), or None when there is none; IncompleteBody
    when the client goes away before its end."""
    if "chunked" in h.headers.get("Transfer-Encoding", "").lower():
        parts, total = [], 0
        for _ in range(1 << 20):
            line = h.rfile.readline(65537)
            if not line.endswith(b"\n"):
                raise IncompleteBody("the client went away inside a chunked body")
            size = int(line.split(b";")[0].strip() or b"0", 16)
            if size == 0:
                for _ in range(1000):
                    if h.rfile.readline(65537) in (b"\r\n", b"\n", b""):
                        break
                break
            parts.append(_read_exactly(h, size))
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
        return _read_exactly(h, n)
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
        # like a server that stops: no more connections, those open closed, and only then the
        # requests held in a delay or a stall wake up (to find their connection gone)
        self.server.shutdown()
        self.server.server_close()
        with self._lock:
            conns = list(self._conns.values())
        for c in conns:
            try:
                c.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._stopping.set()
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
        step = 65536 if not rate else max(1024, min(65536, int(rate) // 500))  # ~2 ms of bytes
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
               "applied_500", "applied_reset", "applied_close", "pass"}
# Hostile answers (tests/remote/test_hostile.py): no proxy answers so, a misbehaving server might.
HOSTILE_NAMES = {"endless", "huge_length", "trickle", "redirect", "long_body", "wrong_range",
                 "gzip", "claim_200", "bad_chunked", "silent"}
FAULT_NAMES |= HOSTILE_NAMES
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
                            "delay_ms", "retry_after", "code", "message", "location", "status",
                            "size"}
        if unknown:
            raise ValueError(f"unknown rule keys {sorted(unknown)}")
        if "path" in r:
            re.compile(r["path"])
    return rules


class FaultFront(_Front):
    """Forwards to an origin; answers scripted requests with faults; shapes every connection."""
    name = "fault"

    def __init__(self, origin_host, origin_port, log_path, script=None, seed=1, delay_ms=0, rate=0,
                 port=0, log_headers=False):
        super().__init__(origin_host, origin_port, log_path, port)
        self.log_headers = log_headers  # each log line also holds the request's headers
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
        t0, wall0 = time.monotonic(), time.time()
        body = read_body(h)
        with self._lock:
            up_rate = self.rate
        if up_rate and body:  # the upload shaped like the answers: rate bytes/s per connection
            self.sleep(t0 + len(body) / up_rate - time.monotonic())
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
        entry = {"n": n, "t": round(wall0, 6), "conn": h.conn_id, "method": h.command,
                 "target": target, "range": rng_header, "up": len(body or b""),
                 "fault": None if fault == "pass" else fault}
        if self.log_headers:
            entry["headers"] = [[k, v] for k, v in headers]
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
        if fault in ("endless", "claim_200", "redirect", "silent"):
            self.sleep(delay)
            return self._hostile_alone(h, target, rule, fault)
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
        if fault == "applied_500" and rule.get("delay_ms"):  # held, then the 500
            self.sleep(rule["delay_ms"] / 1000.0)
        if fault == "applied_500":  # the origin applied the request; the client hears a 500
            return 500, self.send_error_xml(h, 500, "InternalError", "injected 500 after the "
                                            f"origin answered {resp.status}")
        if fault == "applied_reset":  # the origin applied the request; the client hears nothing
            self._reset(h)
            return None, 0
        if fault == "applied_close":  # applied, then the connection closed cleanly (FIN), no answer
            h.close_connection = True
            try:
                h.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return None, 0
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
        if fault in HOSTILE_NAMES:
            return self._hostile_real(h, resp, resp_headers, data, rule, fault)
        raise ValueError(f"unknown fault {fault!r}")

    # -- hostile answers (HOSTILE_NAMES)
    def _endless(self, h, sent=0, limit=1 << 36):
        """Random bytes until the client goes away (or limit bytes, or the front stops)."""
        junk = random.Random(self.seed).randbytes(65536)
        h.close_connection = True
        while sent < limit and not self._stopping.is_set():
            h.wfile.write(junk)
            sent += len(junk)
        return sent

    def _asked(self, h):
        """The asked range (first, last) of a "bytes=A-B" Range header, or None."""
        m = re.fullmatch(r"bytes=(\d+)-(\d+)", h.headers.get("Range", "") or "")
        return (int(m.group(1)), int(m.group(2))) if m else None

    def _hostile_alone(self, h, target, rule, fault):
        """The hostile answers that need nothing of the origin."""
        if fault == "silent":  # the request read, never an answer
            h.close_connection = True
            self.sleep(rule.get("delay_ms", 3600 * 1000) / 1000.0)
            return None, 0
        if fault == "redirect":  # to "location" ({target}: the request's own target)
            status = int(rule.get("status", 302))
            where = rule.get("location", "{target}").replace("{target}", target)
            self.send_head(h, status, None, [("Location", where), ("Content-Length", "0")])
            return status, 0
        asked = self._asked(h)
        if fault == "claim_200":  # a 200 claiming 2^40 bytes, then bytes without end
            self.send_head(h, 200, None, [("Content-Length", str(1 << 40)),
                                          ("Content-Type", "application/octet-stream")])
            return 200, self._endless(h)
        # endless: a 206 for the asked range, no Content-Length, bytes until the client leaves
        first, last = asked or (0, 0)
        h.close_connection = True
        self.send_head(h, 206, None, [("Content-Range", f"bytes {first}-{last}/{1 << 40}")])
        return 206, self._endless(h)

    def _hostile_real(self, h, resp, resp_headers, data, rule, fault):
        """The hostile answers made from the origin's real one (status, headers, data)."""
        hdrs = self.relay_headers(resp_headers, len(data))
        if fault == "trickle":  # the real answer, one byte every delay_ms (default 500)
            self.send_head(h, resp.status, resp.reason, hdrs)
            for i in range(len(data)):
                h.wfile.write(data[i:i + 1])
                h.wfile.flush()
                self.sleep(rule.get("delay_ms", 500) / 1000.0)
                if self._stopping.is_set():
                    break
            return resp.status, i + 1 if data else 0
        if fault == "huge_length":  # Content-Length 2^62, the real bytes, then bytes without end
            hdrs = [(k, str(1 << 62) if k.lower() == "content-length" else v) for k, v in hdrs]
            self.send_head(h, resp.status, resp.reason, hdrs)
            h.wfile.write(data)
            return resp.status, self._endless(h, len(data))
        if fault == "long_body":  # the real headers but "bytes" (default 4096) more bytes
            extra = random.Random(self.seed).randbytes(rule.get("bytes", 4096))
            self.send_head(h, resp.status, resp.reason, self.relay_headers(resp_headers,
                                                                           len(data) + len(extra)))
            h.wfile.write(data + extra)
            return resp.status, len(data) + len(extra)
        if fault == "wrong_range":  # the bytes one further on, with a Content-Range that says so
            out = []
            for k, v in hdrs:
                m = re.fullmatch(r"bytes (\d+)-(\d+)/(\S+)", v) if k.lower() == \
                    "content-range" else None
                if m:
                    v = f"bytes {int(m.group(1)) + 1}-{int(m.group(2)) + 1}/{m.group(3)}"
                out.append((k, v))
            self.send_head(h, resp.status, resp.reason, out)
            h.wfile.write(data)
            return resp.status, len(data)
        if fault == "gzip":  # the real bytes gzip-compressed, though no Accept-Encoding asked
            import gzip
            gz = gzip.compress(data)
            self.send_head(h, resp.status, resp.reason,
                           self.relay_headers(resp_headers, len(gz)) +
                           [("Content-Encoding", "gzip")])
            h.wfile.write(gz)
            return resp.status, len(gz)
        if fault == "bad_chunked":  # chunked, with the chunk size line "size" (default "zz")
            h.close_connection = True
            hdrs = [(k, v) for k, v in hdrs if k.lower() != "content-length"]
            self.send_head(h, resp.status, resp.reason, hdrs + [("Transfer-Encoding", "chunked")])
            h.wfile.write(f"{rule.get('size', 'zz')}\r\n".encode() + data + b"\r\n0\r\n\r\n")
            return resp.status, len(data)
        raise ValueError(f"unknown fault {fault!r}")

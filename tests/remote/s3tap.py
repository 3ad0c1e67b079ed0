"""What the remote SQL tests share (test_remote.py, test_s3write.py, test_s3vars.py): the
extension's connection and a statement's outcome as data, chunk bytes read through the library,
signed S3 requests straight to the SigV4 front, the environment a test's servers give the
extension, the random transactions of the write differentials, and the main that starts the
servers. Import it after putting tests/remote and tests/lib on sys.path.
"""
import contextlib
import ctypes
import os
import sqlite3
import time
import urllib.parse
import xml.etree.ElementTree as ET

from sqltap import connect_ext, run_in_tmp  # noqa: E402

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
LIB = os.path.abspath(os.path.join(BUILD, "core", ".libs", "libcaterva.so"))


def connect():
    db = connect_ext(EXT, isolation_level=None)
    db.execute("PRAGMA trusted_schema=1")
    return db


def rows(db, sql, args=()):
    """("ok", rows) or ("error", message): a statement's outcome, comparable across tables."""
    try:
        return ("ok", db.execute(sql, args).fetchall())
    except sqlite3.Error as e:
        return ("error", str(e))


# ---------------------------------------------------------------------------------------------
# Chunk bytes by position, through the library itself (local paths and s3:// alike).

class Chunks:
    def __init__(self):
        self.lib = ctypes.CDLL(LIB)
        L = self.lib
        L.caterva_ctx_new.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_void_p)]
        L.caterva_ctx_free.argtypes = [ctypes.c_void_p]
        L.caterva_ctx_errmsg.argtypes = [ctypes.c_void_p]
        L.caterva_ctx_errmsg.restype = ctypes.c_char_p
        L.caterva_schunk_open_ex.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int,
                                             ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
        L.caterva_schunk_nchunks.argtypes = [ctypes.c_void_p]
        L.caterva_schunk_nchunks.restype = ctypes.c_int64
        L.caterva_schunk_get_chunk.argtypes = [
            ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64,
            ctypes.POINTER(ctypes.POINTER(ctypes.c_uint8)), ctypes.POINTER(ctypes.c_int32)]
        L.caterva_schunk_free.argtypes = [ctypes.c_void_p]

    def of(self, path):
        """[bytes of chunk i] of the array at path, or an error string."""
        L = self.lib
        ctx, sc = ctypes.c_void_p(), ctypes.c_void_p()
        L.caterva_ctx_new(1, ctypes.byref(ctx))
        try:
            rc = L.caterva_schunk_open_ex(ctx, path.encode(), 0, None, ctypes.byref(sc))
            if rc < 0:
                return "open: " + L.caterva_ctx_errmsg(ctx).decode()
            out = []
            for i in range(L.caterva_schunk_nchunks(sc)):
                p, n = ctypes.POINTER(ctypes.c_uint8)(), ctypes.c_int32()
                if L.caterva_schunk_get_chunk(ctx, sc, i, ctypes.byref(p), ctypes.byref(n)) < 0:
                    return "chunk %d: %s" % (i, L.caterva_ctx_errmsg(ctx).decode())
                out.append(ctypes.string_at(p, n.value))
            return out
        finally:
            if sc:
                L.caterva_schunk_free(sc)
            L.caterva_ctx_free(ctx)


# ---------------------------------------------------------------------------------------------
# S3 requests signed with the test credentials, straight to the SigV4 front of the writable
# server (what="s3w").

def s3(s, method, key, body=None, extra=None, query=""):
    from sigv4 import s3_request
    return s3_request(s.s3w_endpoint, method, f"/{s.bucket}/{key}{query}", s.credentials[0],
                      s.region, body, extra)


def s3_list(s, prefix, page=1000):
    """Every key under prefix, following ListObjectsV2's continuation tokens (page keys an
    answer at the most)."""
    from sigv4 import s3_request
    ns = {"s3": "http://s3.amazonaws.com/doc/2006-03-01/"}
    keys, token = [], None
    while True:
        q = "list-type=2&max-keys=%d&prefix=%s" % (page, urllib.parse.quote(prefix))
        if token:
            q += "&continuation-token=%s" % urllib.parse.quote(token)
        st, _, body = s3_request(s.s3w_endpoint, "GET", "/%s?%s" % (s.bucket, q),
                                 s.credentials[0], s.region)
        if st != 200:
            raise RuntimeError("ListObjectsV2: HTTP %d %r" % (st, body[:200]))
        root = ET.fromstring(body)
        keys += [e.findtext("s3:Key", namespaces=ns) for e in root.findall("s3:Contents", ns)]
        token = root.findtext("s3:NextContinuationToken", namespaces=ns)
        if root.findtext("s3:IsTruncated", namespaces=ns) != "true" or not token:
            return keys


def download(s, prefix, dst, page=1000):
    """The objects under prefix into the new folder dst, as `aws s3 cp --recursive` does;
    returns their keys."""
    os.makedirs(dst)
    keys = s3_list(s, prefix, page)
    for key in keys:
        st, _, body = s3(s, "GET", key)
        if st != 200:
            raise RuntimeError("GET %s: HTTP %d" % (key, st))
        rel = key[len(prefix):]
        os.makedirs(os.path.dirname(os.path.join(dst, rel)), exist_ok=True)
        with open(os.path.join(dst, rel), "wb") as f:
            f.write(body)
    return keys


def settled_log(log):
    """A front's JSON log once its last lines are written (a front logs a request after its
    answer has gone out, so the client may be faster)."""
    import servers
    last = None
    for _ in range(40):
        cur = servers.read_json_log(log)
        if last is not None and len(cur) == len(last):
            return cur
        last = cur
        time.sleep(0.1)
    return last


# ---------------------------------------------------------------------------------------------
# The write differentials: the same random script on a local table and an S3 one.

def random_script(rng, stmt, nrows):
    """One step: a lone statement of stmt(), or a transaction of 1-3 of them with, half the
    time, a savepoint rolled back to, ended by COMMIT (3 in 4) or ROLLBACK. nrows is a one-item
    list that stmt() grows; a savepoint rolled back keeps the larger count (a bound, not the
    truth, for choosing rows)."""
    if rng.random() >= 0.4:
        return [stmt()]
    script = ["BEGIN"] + [stmt() for _ in range(rng.randrange(1, 4))]
    if rng.random() < 0.5:
        saved = nrows[0]
        script += ["SAVEPOINT sp", stmt(), stmt(), "ROLLBACK TO sp", "RELEASE sp"]
        nrows[0] = max(saved, nrows[0])
    script.append("COMMIT" if rng.random() < 0.75 else "ROLLBACK")
    return script


def first_difference(dl, ds, script):
    """Runs script on the local connection dl and the S3 one ds; the first statement whose
    outcomes differ, described, or ""."""
    for sql in script:
        x, y = rows(dl, sql), rows(ds, sql)
        if x != y:
            return "%s: local %r, s3 %r" % (sql, x, y)
    return ""


# ---------------------------------------------------------------------------------------------
# The environment and the main.

@contextlib.contextmanager
def aws_env(s, endpoint):
    """The servers' credentials, region, endpoint and CA in the environment the extension
    reads, and no profile, session token or proxy that the machine may have set."""
    cred = s.credentials[0]
    os.environ.update(AWS_ACCESS_KEY_ID=cred["access_key"],
                      AWS_SECRET_ACCESS_KEY=cred["secret_key"], AWS_REGION=s.region,
                      AWS_ENDPOINT_URL=endpoint,
                      NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    if s.ca_file:  # the servers' own CA, when nginx serves TLS
        os.environ["CURL_CA_BUNDLE"] = s.ca_file
    for k in ("AWS_SESSION_TOKEN", "AWS_NO_SIGN_REQUEST", "AWS_DEFAULT_REGION"):
        os.environ.pop(k, None)
    yield s


def with_servers(prefix, what, body, endpoint="s3w_endpoint", lifetime=1800):
    """The main of a remote test: run_in_tmp's (skips, temporary folder, plan), with the
    servers of `what` started in that folder and the environment pointing the extension at the
    S3 endpoint named by `endpoint` (an attribute of the servers); body(s, tmp)."""
    def inside(tmp):
        import servers
        with servers.Servers(tmp, what=what, lifetime=lifetime) as s:
            with aws_env(s, getattr(s, endpoint)):
                body(s, tmp)
    return run_in_tmp(EXT, prefix, inside)


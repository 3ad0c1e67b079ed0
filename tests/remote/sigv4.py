"""AWS Signature Version 4 for the remote-array test servers (servers.py): the signing algorithm
(S3 flavour), its self-check at import against Amazon's published "GET Object" example, the test
credentials, and a client side: signed_headers_for (headers signed like a careful client) and
s3_request (one signed request). Python 3 standard library only."""

import datetime
import hashlib
import hmac
import http.client
import urllib.parse

DEFAULT_REGION = "us-east-1"
S3RVER_KEY = "S3RVER"  # the only access key id s3rver knows
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
CREDENTIALS = [
    {"access_key": "CATERVATESTKEY000001", "secret_key": "caterva/Test+Secret/one/0123456789abcdef",
     "session_token": None},
    {"access_key": "CATERVATESTKEY000002", "secret_key": "caterva/Test+Secret/two/fedcba9876543210",
     "session_token": "caterva-test-session-token-2"},
]


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
# A client: one request signed with the code above.

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

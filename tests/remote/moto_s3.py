#!/usr/bin/env python3
"""An S3 API that enforces the preconditions of PutObject, for the tests of writes to S3
(procs.MotoS3 starts it): moto's S3 (the Python package, on this machine's Python) served by
werkzeug on 127.0.0.1 with ONE thread, so requests are handled one after another and a
conditional PUT's check and write are atomic with respect to every other request. moto honours
If-None-Match: * and If-Match: <ETag> on PUT (412 PreconditionFailed), If-Match on DELETE, and
answers ETag, Range and ListObjectsV2 as S3 does. It does not check signatures: the SigV4 front
(fronts.py) in front of it does.

    python3 moto_s3.py --bucket BUCKET [--port 0]
prints "listening on 127.0.0.1:PORT" once the bucket exists, then serves until killed."""

import argparse
import sys

from moto.moto_server.werkzeug_app import create_backend_app
from werkzeug.serving import WSGIRequestHandler, make_server


class _Quiet(WSGIRequestHandler):
    def log_request(self, *args, **kwargs):
        pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bucket", required=True)
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args()
    app = create_backend_app("s3")
    srv = make_server("127.0.0.1", args.port, app, threaded=False, request_handler=_Quiet)
    with app.test_client() as c:  # the bucket, before any client can come
        r = c.put(f"/{args.bucket}", headers={"Authorization": "AWS4-HMAC-SHA256 Credential=S3RVER/"
                                                               "20260101/us-east-1/s3/aws4_request"})
        if r.status_code != 200:
            print(f"cannot make bucket {args.bucket}: {r.status_code}", flush=True)
            return 1
    print(f"listening on 127.0.0.1:{srv.server_port}", flush=True)
    srv.serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main())

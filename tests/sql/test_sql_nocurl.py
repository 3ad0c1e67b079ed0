#!/usr/bin/env python3
"""Remote paths in a build with and without libcurl (TAP).

`./configure --without-curl` (or no libcurl found) gives a build that reads no remote arrays:
every http://, https:// and s3:// path must be refused saying so, and everything else must
build and work. scripts/test.sh builds that variant (build-nocurl) and runs this test, the
golden files and the basic SQL tests in it; in the usual builds the same statements must fail
for another reason (nothing listens on the port), never with the no-libcurl message.
Environment: top_builddir.
"""
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sqltap import connect_ext, plan, reexec_with_preload, report  # noqa: E402

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
NO_LIBCURL = "configured without libcurl"


def has_curl():
    with open(os.path.join(BUILD, "config.h")) as f:
        return any(line.split()[:2] == ["#define", "HAVE_CURL"] for line in f)


def error_of(db, sql):
    try:
        db.execute(sql).fetchall()
    except Exception as e:  # sqlite3.Error
        return str(e)
    return None


def main():
    reexec_with_preload()
    db = connect_ext(EXT, isolation_level=None)
    if db is None:
        return 0
    curl = has_curl()
    os.environ.update(AWS_ACCESS_KEY_ID="AKIDNOCURLTEST", AWS_SECRET_ACCESS_KEY="nocurl-secret",
                      AWS_REGION="us-east-1", AWS_ENDPOINT_URL="http://127.0.0.1:9")
    cases = [
        ("a table over http://", "CREATE VIRTUAL TABLE h USING caterva("
         "'http://127.0.0.1:9/a.b2nd', http_retries=0)"),
        ("a new array on s3://", "CREATE VIRTUAL TABLE s USING caterva('s3://b/p/', "
         "shape='4', dtype='int32', http_retries=0)"),
        ("caterva_info of an https:// URL", "SELECT caterva_info('https://127.0.0.1:9/a.b2nd')"),
    ]
    for what, sql in cases:
        e = error_of(db, sql)
        if curl:
            report(e is not None and NO_LIBCURL not in e,
                   "with libcurl, %s fails for its own reason (nothing listens)" % what, e)
        else:
            report(e is not None and NO_LIBCURL in e and "nocurl-secret" not in e,
                   "without libcurl, %s is refused: '%s'" % (what, NO_LIBCURL), e)
    # local arrays work in either build
    tmp = tempfile.mkdtemp(prefix="test_sql_nocurl.")
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='3,4', dtype='int32')"
               % os.path.join(tmp, "local.b2nd"))
    db.execute("INSERT INTO t(d0, d1, value) VALUES (1, 2, 7), (2, 3, 5)")
    r = db.execute("SELECT sum(value), count(*) FROM t").fetchall()
    report(r == [(12, 12)], "a local array is written and read (%s libcurl)"
           % ("with" if curl else "without"), r)
    db.close()
    shutil.rmtree(tmp, ignore_errors=True)
    plan()
    return 0


if __name__ == "__main__":
    sys.exit(main())

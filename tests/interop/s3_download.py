#!/usr/bin/env python3
"""An array written through SQL to an s3:// prefix, downloaded for the reference c-blosc2
(`make interop-ref` then reads it with tests/interop/ref_read).

Starts moto's S3 behind the SigV4 front (tests/remote/servers.py, what="s3w"), creates a sparse
array under s3://BUCKET/ref/ with CREATE VIRTUAL TABLE and changes it through several commits
(UPDATEs, an INSERT that grows it, a DELETE, a transaction with a savepoint rolled back), while
keeping in Python the values each statement should leave. Then it lists the prefix with
ListObjectsV2 (every page) and GETs each object into OUTDIR/s3_array/ -- what
`aws s3 cp --recursive s3://BUCKET/ref/ OUTDIR/s3_array/` gives -- and writes OUTDIR/manifest.json
(the format of test_interop's: name, file, raw_file, shape, chunkshape, blockshape) with
OUTDIR/raw/s3_array.raw, the C-order bytes of the values kept in Python. ref_read then opens the
directory with b2nd_open and compares what the reference decodes with those bytes. The same
for the two members of a group (a table over s3://BUCKET/group/a/ and .../b/ written through
three group commits: staged indexes, the leader's record, roll-forward), each downloaded alone
into OUTDIR/s3_group_a/ and OUTDIR/s3_group_b/.

Before writing the manifest it checks that this extension reads the prefix (and the download)
as the same values; it exits nonzero when it does not, or when anything fails.

Usage: s3_download.py OUTDIR   (environment: top_builddir, the build directory)
"""
import json
import os
import shutil
import struct
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "remote"))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from sqltap import connect_ext  # noqa: E402
from s3tap import aws_env, download  # noqa: E402

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
ROWS, COLS, CHUNKS, BLOCKS = 7, 9, (3, 4), (2, 2)


def write_array(url):
    """The statements, and the values they leave: {(row, col): value}, number of rows."""
    db = connect_ext(EXT, isolation_level=None)
    db.execute("PRAGMA trusted_schema=1")
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='%d,%d', dtype='int32', "
               "chunks='%d,%d', blocks='%d,%d', codec=zstd, fill=-1)"
               % ((url, ROWS, COLS) + CHUNKS + BLOCKS))
    vals = {(r, c): -1 for r in range(ROWS) for c in range(COLS)}
    db.execute("UPDATE t SET value = d0 * 100 + d1")
    vals = {(r, c): r * 100 + c for (r, c) in vals}
    db.execute("UPDATE t SET value = -value WHERE d1 BETWEEN 2 AND 5 AND d0 >= 4")
    for (r, c) in vals:
        if 2 <= c <= 5 and r >= 4:
            vals[(r, c)] = -vals[(r, c)]
    db.execute("INSERT INTO t(d0, d1, value) VALUES (10, 3, 77777)")   # grows to 11 rows
    for r in range(ROWS, 11):
        for c in range(COLS):
            vals[(r, c)] = -1
    vals[(10, 3)] = 77777
    db.execute("DELETE FROM t WHERE d0 = 1")
    for c in range(COLS):
        vals[(1, c)] = -1
    db.execute("BEGIN")
    db.execute("UPDATE t SET value = 5 WHERE d0 = 8")
    db.execute("SAVEPOINT sp")
    db.execute("UPDATE t SET value = 6 WHERE d0 = 9")
    db.execute("ROLLBACK TO sp")
    db.execute("RELEASE sp")
    db.execute("COMMIT")
    for c in range(COLS):
        vals[(8, c)] = 5
    db.close()
    return vals, 11


GROWS, GCOLS, GCHUNKS, GBLOCKS = 5, 6, (2, 3), (1, 3)


def write_group(ua, ub):
    """A table over two arrays in S3 (a group, docs/guarantees.md) changed through three group
    commits; the values each array should hold."""
    db = connect_ext(EXT, isolation_level=None)
    db.execute("PRAGMA trusted_schema=1")
    for name, url in (("ga", ua), ("gb", ub)):
        db.execute("CREATE VIRTUAL TABLE %s USING caterva('%s', shape='%d,%d', dtype='int32', "
                   "chunks='%d,%d', blocks='%d,%d', fill=0)" % ((name, url, GROWS, GCOLS) +
                                                               GCHUNKS + GBLOCKS))
        db.execute("DROP TABLE %s" % name)
    db.execute("CREATE VIRTUAL TABLE w USING caterva('%s', '%s', value='a,b')" % (ua, ub))
    db.execute("UPDATE w SET a = d0 * 10 + d1, b = -(d0 * 10 + d1)")
    va = {(r, c): r * 10 + c for r in range(GROWS) for c in range(GCOLS)}
    vb = {k: -v for k, v in va.items()}
    db.execute("INSERT INTO w(d0, d1, a, b) VALUES (6, 2, 111, 222)")  # grows both to 7 rows
    for r in range(GROWS, 7):
        for c in range(GCOLS):
            va[(r, c)] = vb[(r, c)] = 0
    va[(6, 2)], vb[(6, 2)] = 111, 222
    db.execute("UPDATE w SET b = 5 WHERE d0 = 0")
    for c in range(GCOLS):
        vb[(0, c)] = 5
    db.close()
    return va, vb, 7


def read_back(path):
    db = connect_ext(EXT, isolation_level=None)
    db.execute("PRAGMA trusted_schema=1")
    db.execute("CREATE VIRTUAL TABLE r USING caterva('%s')" % path)
    got = {(a, b): v for a, b, v in db.execute("SELECT d0, d1, value FROM r")}
    db.close()
    return got


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out = sys.argv[1]
    import servers
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(os.path.join(out, "raw"))
    work = tempfile.mkdtemp(prefix="s3_download.")
    try:
        with servers.Servers(work, what="s3w", lifetime=600) as s, aws_env(s, s.s3w_endpoint):
            url = "s3://%s/ref/" % s.bucket
            vals, nrows = write_array(url)
            if read_back(url) != vals:
                print("s3_download: the extension reads the prefix differently from what was "
                      "written", file=sys.stderr)
                return 1
            dst = os.path.join(out, "s3_array")
            keys = download(s, "ref/", dst, page=7)
            ga, gb = "s3://%s/group/a/" % s.bucket, "s3://%s/group/b/" % s.bucket
            va, vb, grows = write_group(ga, gb)
            if read_back(ga) != va or read_back(gb) != vb:
                print("s3_download: the extension reads the group's members differently from "
                      "what was written", file=sys.stderr)
                return 1
            gkeys = [download(s, "group/a/", os.path.join(out, "s3_group_a"), page=7),
                     download(s, "group/b/", os.path.join(out, "s3_group_b"), page=7)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if read_back(dst) != vals:
        print("s3_download: the extension reads the download differently", file=sys.stderr)
        return 1
    raw = b"".join(struct.pack("<i", vals[(r, c)]) for r in range(nrows) for c in range(COLS))
    with open(os.path.join(out, "raw", "s3_array.raw"), "wb") as f:
        f.write(raw)
    case = {"name": "s3_written_sql_download", "file": "s3_array",
            "raw_file": "raw/s3_array.raw", "shape": [nrows, COLS],
            "chunkshape": list(CHUNKS), "blockshape": list(BLOCKS), "dtype": "int32",
            "objects": sorted(keys)}
    cases = [case]
    for tag, v, k in (("a", va, gkeys[0]), ("b", vb, gkeys[1])):
        if read_back(os.path.join(out, "s3_group_" + tag)) != v:
            print("s3_download: the extension reads group member %s's download differently"
                  % tag, file=sys.stderr)
            return 1
        with open(os.path.join(out, "raw", "s3_group_%s.raw" % tag), "wb") as f:
            f.write(b"".join(struct.pack("<i", v[(r, c)])
                             for r in range(grows) for c in range(GCOLS)))
        cases.append({"name": "s3_group_member_" + tag, "file": "s3_group_" + tag,
                      "raw_file": "raw/s3_group_%s.raw" % tag, "shape": [grows, GCOLS],
                      "chunkshape": list(GCHUNKS), "blockshape": list(GBLOCKS),
                      "dtype": "int32", "objects": sorted(k)})
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"cases": cases}, f, indent=1)
    print("# s3_download: %d objects of %s downloaded to %s (%d x %d int32, %d commits)"
          % (len(keys), url, dst, nrows, COLS, 6))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Golden files through the sqlite3 shell (TAP output).

For every case of $CATERVA_GOLDEN/manifest.json: caterva_info() agrees with the manifest,
the virtual table has one row per item, count(value)/sum(value) agree with the raw bytes
(raw/<name>.raw), and caterva_slice() of the whole array is the raw bytes.

The pushdown proofs (caterva_blocks_read()) are in test_sql_pushdown.py: golden chunks
that did not compress are stored raw (memcpyed) and are copied, not decompressed.

Environment: top_builddir, CATERVA_GOLDEN, SQLITE3_SHELL, CATERVA_PRELOAD.
"""
import json
import math
import os
import struct
import subprocess
import sys

import sqltap
from sqltap import plan, report, skip

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")
GOLDEN = os.environ.get("CATERVA_GOLDEN", "")
SHELL = os.environ.get("SQLITE3_SHELL", "sqlite3")

FMT = {"int8": "b", "uint8": "B", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
       "int64": "q", "uint64": "Q", "float32": "f", "float64": "d", "bool": "?"}

def shell(sql):
    """Run SQL in the sqlite3 shell with the extension loaded; return (stdout, stderr)."""
    return sqltap.shell(SHELL, EXT, sql, GOLDEN)


def sql_str(s):
    return "'" + s.replace("'", "''") + "'"


def json_rows(out):
    """Rows printed in .mode json by consecutive statements."""
    rows, dec, i = [], json.JSONDecoder(), 0
    out = out.strip()
    while i < len(out):
        obj, j = dec.raw_decode(out, i)
        rows.extend(obj)
        i = j
        while i < len(out) and out[i].isspace():
            i += 1
    return rows


def expected_stats(case, raw):
    fmt = FMT.get(case["dtype"])
    if fmt is None:
        return None
    n = len(raw) // struct.calcsize(fmt)
    vals = struct.unpack("<%d%s" % (n, fmt), raw)
    if fmt in "fd":
        good = [v for v in vals if v == v]
        return {"count": len(good), "sum": math.fsum(good), "float": True,
                "scale": math.fsum(abs(v) for v in good)}
    if fmt == "Q":
        # values above INT64_MAX come back as REAL
        return {"count": n, "sum": float(sum(vals)), "float": True,
                "scale": float(sum(vals))}
    s = sum(int(v) for v in vals)
    return {"count": n, "sum": s, "float": not (-2**63 <= s < 2**63), "scale": float(
        sum(abs(int(v)) for v in vals))}


def check_case(case):
    name = case["name"]
    path = case["file"]
    raw = open(os.path.join(GOLDEN, case["raw_file"]), "rb").read()
    exp = expected_stats(case, raw)
    opts = ""
    if case["metalayer"] == "caterva":
        opts = ", dtype=%s" % sql_str(case["numpy_dtype"])
    agg = "total(value)" if exp is None or exp["float"] else "sum(value)"
    sql = (".mode json\n"
           "CREATE VIRTUAL TABLE t USING caterva(%s%s);\n"
           "SELECT caterva_info(%s) AS info, (SELECT count(*) FROM t) AS n, "
           "(SELECT count(value) FROM t) AS nv, (SELECT %s FROM t) AS s, "
           "hex(caterva_slice(%s)) AS hx;\n" % (sql_str(path), opts, sql_str(path), agg,
                                                  sql_str(path)))
    out, err = shell(sql)
    try:
        row = json_rows(out)[0]
        info = json.loads(row["info"])
    except (ValueError, IndexError, KeyError) as e:
        if case.get("optional_feature"):
            skip("%s opens" % name, "optional feature not supported: %s" % err.strip())
            return
        report(False, "%s opens" % name, "%s\n%s\n%s" % (e, out, err))
        return
    nitems = 1
    for s in case["shape"]:
        nitems *= s
    want = {"ndim": case["ndim"], "shape": case["shape"], "chunkshape": case["chunkshape"],
            "blockshape": case["blockshape"], "itemsize": case["itemsize"],
            "codec": case["codec"], "clevel": case["clevel"],
            "dtype": case["numpy_dtype"] if case["metalayer"] == "b2nd" else None,
            "nchunks": case["schunk"]["nchunks"], "nbytes": nitems * case["itemsize"]}
    got = {k: info.get(k) for k in want}
    report(got == want and case["metalayer"] in info.get("metalayers", []),
           "%s: caterva_info agrees with the manifest" % name, "got %r\nwant %r" % (got, want))
    report(row["n"] == nitems, "%s: count(*) = %d" % (name, nitems), "got %r" % row["n"])
    if exp is not None:
        s = row["s"]
        if exp["float"]:
            ok = s is not None and abs(s - exp["sum"]) <= 1e-9 * max(1.0, exp["scale"])
        else:
            ok = s == exp["sum"] or (exp["count"] == 0 and s is None)
        report(ok and row["nv"] == exp["count"],
               "%s: count(value) = %d, sum(value) = %r" % (name, exp["count"], exp["sum"]),
               "got count %r sum %r" % (row["nv"], s))
    report(row["hx"] == raw.hex().upper(), "%s: caterva_slice() = raw bytes (%d bytes)" %
           (name, len(raw)), "got %d hex digits" % len(row["hx"] or ""))


def main():
    if not GOLDEN or not os.path.exists(os.path.join(GOLDEN, "manifest.json")):
        print("1..0 # SKIP golden files not found (set CATERVA_GOLDEN)")
        return 0
    if not os.path.exists(SHELL) and SHELL != "sqlite3":
        print("1..0 # SKIP sqlite3 shell not found")
        return 0
    if not os.path.exists(EXT + ".so"):
        print("1..0 # SKIP the extension is not built")
        return 0
    manifest = json.load(open(os.path.join(GOLDEN, "manifest.json")))
    for case in manifest["cases"]:
        check_case(case)
    plan()
    return 0


if __name__ == "__main__":
    sys.exit(main())

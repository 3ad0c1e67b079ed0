#!/usr/bin/env python3
"""bcolz directories through SQL (TAP output).

tests/tools/mkbcolz writes carrays and a ctable with the real c-blosc 1.x, with each array's raw
C-order bytes beside it. Checked here, against values numpy computes from those raw bytes:
  - every dtype, N-d carrays, leftover chunks, empty arrays, clevel 0, each codec: the SQL
    values of every column equal the source values (a digest per column is printed);
  - row ranges, IN lists and N-d boxes decompress exactly the blocks holding their items,
    counted from the .blp headers here (caterva_blocks_read() before and after); ctable
    columns read only their own blocks, unread columns none; joins by rowid are lookups;
  - caterva_info() and caterva_slice() on bcolz paths; caterva_import() of carrays and of a
    ctable, read back byte for byte;
  - damaged datasets (truncated, wrong magic, nchunks != 1, sizes disagreeing with the meta
    files, unknown dtypes, malformed JSON, missing or short columns) give errors naming the
    file.

Environment: top_builddir, CATERVA_PRELOAD.
"""
import hashlib
import json
import math
import os
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

import sqltap
from sqltap import plan, report, reexec_with_preload

reexec_with_preload()

import numpy as np  # noqa: E402 (after the re-exec)

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")
MKBCOLZ = os.path.join(BUILD, "tests", "tools", "mkbcolz")
# configure --without-snappy: snappy chunks are refused with "built without snappy"
HAVE_SNAPPY = os.environ.get("CATERVA_HAVE_SNAPPY", "yes") != "no"


def snappy_refused(db, ds, sql, args=()):
    """In a build without libsnappy, a carray compressed with snappy must give the clear error
    (checked and reported here; True: the caller skips its value checks of that dataset)."""
    if HAVE_SNAPPY or ds.get("codec") != "snappy":
        return False
    err = error_of(db, sql, args)
    report("built without snappy" in err, "without libsnappy, '%s' on %s: %s" %
           (sql, ds["name"], err), "want 'built without snappy'")
    return True


def connect():
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def sql_values(arr):
    """What the table must return for each item of the flat numpy array arr."""
    k = arr.dtype.kind
    out = []
    if k == "M":
        nat = np.isnat(arr)
        native = arr.astype(arr.dtype.newbyteorder("="))
        text = np.datetime_as_string(native)
        return [None if nat[i] else str(text[i]) for i in range(arr.size)]
    for i in range(arr.size):
        x = arr[i]
        if k == "b":
            out.append(int(bool(x)))
        elif k == "i":
            out.append(int(x))
        elif k == "u":
            v = int(x)
            out.append(v if v <= 2**63 - 1 else float(v))
        elif k == "f":
            out.append(None if math.isnan(float(x)) else float(x))
        elif k == "c":
            out.append(arr[i:i + 1].tobytes())
        elif k == "S":
            b = bytes(x).rstrip(b"\0")
            try:
                out.append(b.decode("utf-8") if b"\0" not in b else b)
            except UnicodeDecodeError:
                out.append(b)
        elif k == "U":
            out.append(str(x))
        elif k == "m":
            out.append(None if np.isnat(x) else int(x.astype(np.int64)))
        else:
            raise ValueError(k)
    return out


def digest(values):
    return hashlib.sha256(repr(values).encode()).hexdigest()[:16]


def load_raw(d, raw, dtype, shape):
    a = np.fromfile(os.path.join(d, raw), dtype=np.dtype(dtype))
    return a.reshape(shape) if shape else a


def blp_headers(path, nchunks):
    """(nbytes, blocksize, memcpyed) of each chunk file of a carray."""
    out = []
    for k in range(nchunks):
        with open(os.path.join(path, "data", "__%d.blp" % k), "rb") as f:
            h = f.read(32)
        flags = h[18]
        nbytes, bs = struct.unpack("<ii", h[20:28])
        out.append((nbytes, min(bs, nbytes) if nbytes else bs, bool(flags & 2)))
    return out


def blocks_for_items(items, itemsize, chunkitems, headers):
    """Blocks holding the given item indices, a set of (chunk, block); memcpyed chunks (c-blosc
    stores data raw when it does not compress) are copied, not decompressed: none of theirs."""
    got = set()
    for i in items:
        c = i // chunkitems
        if headers[c][2]:
            continue
        off = (i - c * chunkitems) * itemsize
        bs = headers[c][1]
        for b in range(off // bs, (off + itemsize - 1) // bs + 1):
            got.add((c, b))
    return got


class Blocks:
    """caterva_blocks_read() deltas around a query."""

    def __init__(self, db):
        self.db = db

    def run(self, sql, args=()):
        b0 = self.db.execute("select caterva_blocks_read()").fetchone()[0]
        rows = self.db.execute(sql, args).fetchall()
        b1 = self.db.execute("select caterva_blocks_read()").fetchone()[0]
        return rows, b1 - b0


def test_values(d, man):
    db = connect()
    for num, ds in enumerate(man["datasets"]):
        if ds["kind"] == "carray":
            name = "a%d" % num   # dataset names differ only in case (dt_M, dt_m)
            arr = load_raw(d, ds["raw"], ds["dtype"], ds["shape"])
            want = sql_values(arr.reshape(-1))
            db.execute("create virtual table %s using caterva('%s')" % (name, os.path.join(d, ds["name"])))
            if snappy_refused(db, ds, "select sum(length(value)) from %s" % name):
                continue
            nd = len(ds["shape"])
            dims = ", ".join("d%d" % k for k in range(nd))
            rows = db.execute("select %s, value from \"%s\"" % (dims, name)).fetchall()
            got = [r[-1] for r in rows]
            coords = [tuple(r[:-1]) for r in rows]
            ok = got == want and coords == list(np.ndindex(*ds["shape"]))
            bad = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), None)
            report(ok, "carray %s (%s, shape %s, %s clevel %d): %d values, digest %s" %
                   (ds["name"], ds["dtype"], ds["shape"], ds["codec"], ds["clevel"], len(want),
                    digest(want)),
                   "got %d rows, want %d; first difference at %s: %r != %r" %
                   (len(got), len(want), bad, got[bad] if bad is not None else None,
                    want[bad] if bad is not None else None))
        elif ds["kind"] == "ctable_nd":
            test_ctable_nd(db, d, ds)
        else:
            name = ds["name"]
            db.execute("create virtual table \"%s\" using caterva('%s')" % (name, os.path.join(d, name)))
            for col in ds["columns"]:
                arr = load_raw(d, col["raw"], col["dtype"], None)
                want = sql_values(arr)
                got = [r[0] for r in db.execute("select \"%s\" from \"%s\"" % (col["name"], name))]
                report(got == want, "ctable %s column %s (%s, chunklen %d): %d values, digest %s" %
                       (name, col["name"], col["dtype"], col["chunklen"], len(want), digest(want)),
                       "got %d values, want %d" % (len(got), len(want)))
            rowids = [r[0] for r in db.execute("select rowid from \"%s\"" % name)]
            report(rowids == list(range(ds["len"])), "ctable %s: rowid is the row number" % name)
            decl = db.execute("select type from pragma_table_xinfo('%s')" % name).fetchall()
            report([r[0] for r in decl] == ["INTEGER", "REAL", "TEXT", "TEXT", "INTEGER"],
                   "ctable %s: column types in names order" % name, str(decl))
    db.close()


def test_ctable_nd(db, d, ds):
    """N-d ctable columns: a BLOB per row holding the row's items as stored (C order)."""
    name = ds["name"]
    db.execute("create virtual table \"%s\" using caterva('%s')" % (name, os.path.join(d, name)))
    decl = [r[0] for r in db.execute("select type from pragma_table_info('%s')" % name)]
    want_decl = ["INTEGER" if len(c["shape"]) == 1 else "BLOB" for c in ds["columns"]]
    report(decl == want_decl, "ctable with N-d columns: N-d columns are declared BLOB", str(decl))
    for col in ds["columns"]:
        dt = np.dtype(col["dtype"])
        arr = load_raw(d, col["raw"], col["dtype"], col["shape"])
        if len(col["shape"]) == 1:
            want = sql_values(arr)
        else:
            want = [arr[i].tobytes() for i in range(arr.shape[0])]
        got = [r[0] for r in db.execute("select \"%s\" from \"%s\"" % (col["name"], name))]
        back = (len(col["shape"]) == 1 or
                all(np.array_equal(np.frombuffer(g, dt).reshape(col["shape"][1:]), arr[i],
                                   equal_nan=dt.kind == "f") for i, g in enumerate(got)))
        report(got == want and back, "ctable %s column %s (%s, shape %s, chunklen %d): %d rows, "
               "digest %s" % (name, col["name"], col["dtype"], col["shape"], col["chunklen"],
                              len(want), digest(want)), "got %d values, want %d" % (len(got), len(want)))
    # a row range of an N-d column decompresses the blocks holding its rows' items (rows of
    # vec straddle its 512-byte blocks)
    bl = Blocks(db)
    for cname, lo, hi in [("vec", 20, 22), ("vec", 100, 350), ("tag", 7, 7), ("grid", 500, 999)]:
        col = next(c for c in ds["columns"] if c["name"] == cname)
        rowitems = int(np.prod(col["shape"][1:]))
        n = col["shape"][0]
        cds = {"name": name + "/" + cname, "shape": col["shape"], "chunklen": col["chunklen"]}
        hdr = blp_headers(os.path.join(d, cds["name"]), n // col["chunklen"] + (n % col["chunklen"] != 0))
        items = range(lo * rowitems, (hi + 1) * rowitems)
        want = len(blocks_for_items(items, np.dtype(col["dtype"]).itemsize,
                                    col["chunklen"] * rowitems, hdr))
        rows, got = bl.run("select count(\"%s\") from \"%s\" where rowid between %d and %d" %
                           (cname, name, lo, hi))
        report(got == want and rows[0][0] == hi - lo + 1,
               "N-d column %s, rows %d..%d: %d blocks (those holding the rows' items)" %
               (cname, lo, hi, got), "want %d" % want)


def carray_geometry(d, ds):
    path = os.path.join(d, ds["name"])
    rowitems = int(np.prod(ds["shape"][1:])) if len(ds["shape"]) > 1 else 1
    chunkitems = ds["chunklen"] * rowitems
    n = ds["shape"][0]
    nchunks = n // ds["chunklen"] + (n % ds["chunklen"] != 0)
    return rowitems, chunkitems, blp_headers(path, nchunks)


def test_blocks(d, man):
    db = connect()
    bl = Blocks(db)
    by = {ds["name"]: ds for ds in man["datasets"]}
    cases = [
        ("i32_blocks", "d0 between 10000 and 10005", lambda: range(10000, 10006)),
        ("i32_blocks", "d0 >= 12000 and d0 < 31000", lambda: range(12000, 31000)),
        ("i32_blocks", "d0 = 99999", lambda: [99999]),
        ("i32_blocks", "d0 in (5, 7, 40000, 40001, 99000)", lambda: [5, 7, 40000, 40001, 99000]),
        ("i32_blocks", "rowid between 1023 and 1025", lambda: range(1023, 1026)),
        ("s5", "d0 between 100 and 400", lambda: range(100, 401)),
        ("s5", "d0 = 3332 or d0 = 3333", lambda: [3332, 3333]),
        ("u3", "d0 between 2990 and 3010", lambda: range(2990, 3011)),
        ("i64", "d0 > 3990 and d0 <= 8010", lambda: range(3991, 8011)),
        ("bool", "d0 between 29000 and 30000", lambda: range(29000, 30001)),
        ("nd_f8", "d0 between 9 and 17 and d1 = 3",
         lambda: [a * 21 + 3 * 3 + c for a in range(9, 18) for c in range(3)]),
        ("nd_f8", "d0 = 49 and d1 in (0, 6) and d2 = 2",
         lambda: [49 * 21 + 0 * 3 + 2, 49 * 21 + 6 * 3 + 2]),
        ("nd_s5", "d0 between 39 and 41 and d1 between 4 and 6",
         lambda: [a * 13 + b for a in range(39, 42) for b in range(4, 7)]),
    ]
    for name, where, items in cases:
        ds = by[name]
        db.execute("create virtual table if not exists \"%s\" using caterva('%s')" %
                   (name, os.path.join(d, name)))
        rowitems, chunkitems, hdr = carray_geometry(d, ds)
        items = list(items())
        want = len(blocks_for_items(items, ds["itemsize"], chunkitems, hdr))
        rows, got = bl.run("select count(value) from \"%s\" where %s" % (name, where))
        ok = got == want and rows[0][0] == len(items)
        report(ok, "%s where %s: %d blocks decompressed (blocks holding the %d items)" %
               (name, where, got, len(items)), "got %d blocks, %d rows; want %d blocks, %d rows" %
               (got, rows[0][0], want, len(items)))
    # a full scan decompresses every block once; coordinates alone decompress none
    ds = by["i32_blocks"]
    rowitems, chunkitems, hdr = carray_geometry(d, ds)
    total = sum(-(-nb // bs) for nb, bs, raw in hdr if not raw)
    rows, got = bl.run("select sum(value) from i32_blocks")
    report(got == total, "full scan of i32_blocks: each of its %d blocks once" % total,
           "got %d" % got)
    rows, got = bl.run("select count(*), sum(d0) from i32_blocks where d0 < 5000")
    report(got == 0 and rows[0][0] == 5000, "count(*) and d0 only: no block decompressed",
           "got %d blocks" % got)
    # ctable: rowid ranges per column, colUsed
    tab = by["table"]
    db.execute("create virtual table t using caterva('%s')" % os.path.join(d, "table"))
    geo = {}
    for col in tab["columns"]:
        cds = {"name": "table/" + col["name"], "shape": [tab["len"]], "chunklen": col["chunklen"]}
        geo[col["name"]] = (carray_geometry(d, cds), np.dtype(col["dtype"]).itemsize)
    for cols, where, items in [
        (["id"], "rowid between 2990 and 3010", range(2990, 3011)),
        (["price"], "rowid between 2990 and 3010", range(2990, 3011)),
        (["when", "ok"], "rowid >= 24000", range(24000, 25000)),
        (["id", "price", "name", "when", "ok"], "rowid in (0, 777, 778, 12345, 24999)",
         [0, 777, 778, 12345, 24999]),
        (["name"], "rowid = 17000", [17000]),
    ]:
        want = 0
        for c in cols:
            (rowitems, chunkitems, hdr), isz = geo[c]
            want += len(blocks_for_items(list(items), isz, chunkitems, hdr))
        sel = ", ".join("count(\"%s\")" % c for c in cols)
        rows, got = bl.run("select %s from t where %s" % (sel, where))
        report(got == want, "ctable: %s where %s: %d blocks (only these columns' own)" %
               (",".join(cols), where, got), "got %d, want %d" % (got, want))
    rows, got = bl.run("select count(*) from t where rowid between 100 and 20000")
    report(got == 0 and rows[0][0] == 19901, "ctable: count(*) over a rowid range reads no column")
    # join by rowid: point lookups, each needed block once (keys sorted)
    keys = [5, 6, 3000, 3001, 12000, 24998]
    db.execute("create table k(r integer primary key)")
    db.executemany("insert into k values (?)", [(x,) for x in keys])
    db.execute("analyze k")   # the planner then knows k is small: t is the inner table
    qp = " ".join(r[-1] for r in db.execute(
        "explain query plan select sum(t.price) from k join t on t.rowid = k.r"))
    (rowitems, chunkitems, hdr), isz = geo["price"]
    want = len(blocks_for_items(keys, isz, chunkitems, hdr))
    rows, got = bl.run("select sum(t.price), count(*) from k join t on t.rowid = k.r")
    report("SCAN k" in qp and "VIRTUAL TABLE INDEX" in qp and got == want and rows[0][1] == len(keys),
           "join by rowid: lookups into t (%s), %d blocks" % (qp, got), "want %d blocks" % want)
    # the cursor walks in rowid order: ORDER BY rowid is consumed, LIMIT stops early
    qp = " ".join(r[-1] for r in db.execute("explain query plan select * from t order by rowid"))
    report("ORDER BY" not in qp, "ORDER BY rowid consumed", qp)
    db.close()


def test_info_slice(d, man):
    db = connect()
    info = json.loads(db.execute("select caterva_info(?)", (os.path.join(d, "i32_auto"),)).fetchone()[0])
    report(info["format"] == "bcolz" and info["kind"] == "carray" and info["shape"] == [100000] and
           info["dtype"] == "<i4" and info["chunklen"] == 65536 and info["nchunks"] == 2 and
           info["codec"] == "lz4" and info["attributes"] == {
               "units": "m/s", "scale": 2.5, "n": 3, "flags": [True, None],
               "nested": {"a": "\u00e9\U0001F600"}, "big": 12345678901234, "nan": None},
           "caterva_info of a carray: format, shape, dtype, chunklen, codec, __attrs__", str(info))
    for name in ("bool", "i8", "u8", "old_meta"):   # missing, "\n", "   \n", missing
        info = json.loads(db.execute("select caterva_info(?)", (os.path.join(d, name),)).fetchone()[0])
        report(info["attributes"] == {}, "caterva_info: %s's missing or blank __attrs__ is {}" % name)
    info = json.loads(db.execute("select caterva_info(?)", (os.path.join(d, "old_meta"),)).fetchone()[0])
    report(info["codec"] == "blosclz" and info["shuffle"] == 1,
           "caterva_info: storage without cname and with shuffle true", str(info))
    info = json.loads(db.execute("select caterva_info(?)", (os.path.join(d, "table"),)).fetchone()[0])
    report(info["kind"] == "ctable" and [c["name"] for c in info["columns"]] ==
           ["id", "price", "name", "when", "ok"] and info["len"] == 25000 and
           info["columns"][0]["attributes"] == {"role": "key"} and
           info["attributes"] == {"source": "mkbcolz", "rows": 1},
           "caterva_info of a ctable: columns in names order, their attributes", str(info))
    db.execute("create virtual table nd using caterva('%s')" % os.path.join(d, "nd_f8"))
    info2 = db.execute("select caterva_info('nd')").fetchone()[0]
    report(json.loads(info2)["shape"] == [50, 7, 3], "caterva_info('table name') of a bcolz table")
    for ds in man["datasets"]:
        if ds["kind"] != "carray":
            continue
        raw = open(os.path.join(d, ds["raw"]), "rb").read()
        if snappy_refused(db, ds, "select caterva_slice(?)", (os.path.join(d, ds["name"]),)):
            continue
        got = db.execute("select caterva_slice(?)", (os.path.join(d, ds["name"]),)).fetchone()[0]
        if got != raw:
            report(False, "caterva_slice of %s: the raw bytes" % ds["name"])
            break
    else:
        report(True, "caterva_slice of every carray: its raw bytes")
    arr = load_raw(d, "nd_s5.raw", "|S5", [301, 13])
    got = db.execute("select caterva_slice(?, '[39, 2]', '[120, 11]')",
                     (os.path.join(d, "nd_s5"),)).fetchone()[0]
    report(got == arr[39:120, 2:11].tobytes(), "caterva_slice of an N-d box (JSON lists)")
    arr = load_raw(d, "i32_blocks.raw", "<i4", None)
    b = Blocks(db)
    rows, n = b.run("select caterva_slice(?, 12345, 12400)", (os.path.join(d, "i32_blocks"),))
    report(rows[0][0] == arr[12345:12400].tobytes() and n == 1,
           "caterva_slice with row numbers: the rows, one block", "blocks %d" % n)
    err = error_of(db, "select caterva_slice(?, 0, 100001)", (os.path.join(d, "i32_blocks"),))
    report("not inside" in err, "caterva_slice out of range: an error", err)
    err = error_of(db, "select caterva_slice(?)", (os.path.join(d, "table"),))
    report("ctable" in err, "caterva_slice of a ctable: an error naming its columns", err)
    db.close()


def error_of(db, sql, args=()):
    try:
        db.execute(sql, args).fetchall()
    except sqlite3.Error as e:
        return str(e)
    return ""


def test_import(d, man, tmp):
    db = connect()
    ok_all, n = True, 0
    for ds in man["datasets"]:
        if ds["kind"] != "carray":
            continue
        out = os.path.join(tmp, ds["name"] + ".b2nd")
        if snappy_refused(db, ds, "select caterva_import(?, ?)", (os.path.join(d, ds["name"]), out)):
            report(not os.path.exists(out), "a refused import leaves no file")
            continue
        cnt = db.execute("select caterva_import(?, ?)", (os.path.join(d, ds["name"]), out)).fetchone()[0]
        raw = open(os.path.join(d, ds["raw"]), "rb").read()
        got = db.execute("select caterva_slice(?)", (out,)).fetchone()[0]
        info = json.loads(db.execute("select caterva_info(?)", (out,)).fetchone()[0])
        want_chunk = [min(ds["chunklen"], ds["shape"][0]) or 1] + ds["shape"][1:]
        good = (got == raw and cnt == int(np.prod(ds["shape"])) and info["shape"] == ds["shape"]
                and info["chunkshape"] == want_chunk and
                info["dtype"] == np.dtype(ds["dtype"]).str.replace("|b1", "|b1"))
        if not good:
            ok_all = False
            report(False, "caterva_import of %s" % ds["name"], str(info))
        n += 1
    report(ok_all, "caterva_import of %d carrays: same bytes, shape, dtype, chunks of chunklen rows" % n)
    out = os.path.join(tmp, "i32_auto.b2nd")
    info = json.loads(db.execute("select caterva_info(?)", (out,)).fetchone()[0])
    report(info["attributes"].get("units") == "m/s" and info["attributes"].get("flags") == [True, None]
           and info["attributes"].get("nested") == {"a": "\u00e9\U0001F600"},
           "caterva_import: __attrs__ become user attributes", str(info["attributes"]))
    out = os.path.join(tmp, "opts.b2nd")
    db.execute("select caterva_import(?, ?, NULL, 'chunks=500 blocks=100 codec=lz4 clevel=9 "
               "filters=bitshuffle')", (os.path.join(d, "f64"), out))
    info = json.loads(db.execute("select caterva_info(?)", (out,)).fetchone()[0])
    got = db.execute("select caterva_slice(?)", (out,)).fetchone()[0]
    report(info["chunkshape"] == [500] and info["blockshape"] == [100] and info["codec"] == "lz4"
           and info["clevel"] == 9 and info["filters"] == ["bitshuffle"] and
           got == open(os.path.join(d, "f64.raw"), "rb").read(),
           "caterva_import options: chunks, blocks, codec, clevel, filters", str(info))
    err = error_of(db, "select caterva_import(?, ?)", (os.path.join(d, "f64"), out))
    report("exists" in err, "caterva_import onto an existing path: an error", err)
    # dims= names the dimensions (stored in the array, the table's dimension columns)
    out = os.path.join(tmp, "nd_dims.b2nd")
    db.execute("select caterva_import(?, ?, NULL, 'dims=time,lat,lon')", (os.path.join(d, "nd_f8"), out))
    db.execute("create virtual table ndd using caterva('%s')" % out)
    decl = [r[0] for r in db.execute("select name from pragma_table_info('ndd')")]
    got = db.execute("select caterva_slice(?)", (out,)).fetchone()[0]
    report(decl == ["time", "lat", "lon", "value"] and got == open(os.path.join(d, "nd_f8.raw"), "rb").read(),
           "caterva_import dims=: the dimension names of the array", str(decl))
    err = error_of(db, "select caterva_import(?, ?, NULL, 'dims=a,b')",
                   (os.path.join(d, "nd_f8"), os.path.join(tmp, "nd_dims2.b2nd")))
    report("dims=" in err and not os.path.exists(os.path.join(tmp, "nd_dims2.b2nd")),
           "caterva_import dims= with the wrong count: an error, no file", err)
    err = error_of(db, "select caterva_import(?, ?, NULL, 'codec=snappy')",
                   (os.path.join(d, "f64"), out + "x"))
    report("codec=" in err and not os.path.exists(out + "x"), "caterva_import bad option: an error", err)
    err = error_of(db, "select caterva_import(?, ?, NULL, 'colour=red')", (os.path.join(d, "f64"), out + "y"))
    report(err.startswith('caterva_import: unknown option "colour" for a bcolz source (it takes')
           and not os.path.exists(out + "y"), "caterva_import unknown option: named once", err)
    # a ctable: a directory of arrays, and one column alone
    out = os.path.join(tmp, "table.b2nd.d")
    cnt = db.execute("select caterva_import(?, ?)", (os.path.join(d, "table"), out)).fetchone()[0]
    tab = next(ds for ds in man["datasets"] if ds["kind"] == "ctable")
    good = cnt == 25000 * 5
    for col in tab["columns"]:
        got = db.execute("select caterva_slice(?)", (os.path.join(out, col["name"] + ".b2nd"),)).fetchone()[0]
        good &= got == open(os.path.join(d, col["raw"]), "rb").read()
    man2 = json.load(open(os.path.join(out, "ctable.json")))
    good &= man2["names"] == ["id", "price", "name", "when", "ok"] and man2["attrs"]["source"] == "mkbcolz"
    report(good, "caterva_import of a ctable: one array per column, ctable.json")
    test_converted_table(db, d, tab, out, tmp)
    # a ctable with N-d columns converts (each column an array of its own shape); its directory
    # is not one table (a several-variable table needs one shape): an error saying so
    tnd = next(ds for ds in man["datasets"] if ds["kind"] == "ctable_nd")
    out_nd = os.path.join(tmp, "table_nd.d")
    db.execute("select caterva_import(?, ?)", (os.path.join(d, "table_nd"), out_nd))
    good = True
    for col in tnd["columns"]:
        p = os.path.join(out_nd, col["name"] + ".b2nd")
        info = json.loads(db.execute("select caterva_info(?)", (p,)).fetchone()[0])
        got = db.execute("select caterva_slice(?)", (p,)).fetchone()[0]
        good &= info["shape"] == col["shape"] and got == open(os.path.join(d, col["raw"]), "rb").read()
    report(good, "caterva_import of a ctable with N-d columns: arrays of their shapes, same bytes")
    err = error_of(db, "create virtual table cnd using caterva('%s')" % out_nd)
    report("dimensions" in err and "vec.b2nd" in err,
           "its directory as one table: an error (the arrays differ in shape)", err)
    out = os.path.join(tmp, "price.b2nd")
    db.execute("select caterva_import(?, ?, 'price')", (os.path.join(d, "table"), out))
    got = db.execute("select caterva_slice(?)", (out,)).fetchone()[0]
    report(got == open(os.path.join(d, "table.price.raw"), "rb").read(),
           "caterva_import of one ctable column")
    err = error_of(db, "select caterva_import(?, ?, 'nope')", (os.path.join(d, "table"), out + "2"))
    report("no column" in err, "caterva_import of an unknown column: an error", err)
    db.close()
    import_progress(d, tmp)


def import_progress(d, tmp):
    """progress= after each bcolz chunk, and imports stopped by sqlite3_interrupt() or by an
    error of the progress function, leaving nothing at the destination."""
    db = connect()
    calls = []

    def prog(done, total):
        calls.append((done, total))

    def prog_intr(done, total):
        calls.append((done, total))
        if len(calls) == 2:
            db.interrupt()

    def prog_raise(done, total):
        calls.append((done, total))
        raise ValueError("no more")

    for name, fn in (("prog", prog), ("prog_intr", prog_intr), ("prog_raise", prog_raise)):
        db.create_function(name, 2, fn)
    out = os.path.join(tmp, "prog_table.d")
    cnt = db.execute("select caterva_import(?, ?, NULL, 'progress=prog')",
                     (os.path.join(d, "table"), out)).fetchone()[0]
    dones = [c[0] for c in calls]
    report(len(calls) >= 5 and dones == sorted(dones) and calls[-1] == (cnt, cnt) and
           all(c[1] == cnt for c in calls),
           "progress= of a ctable import: after each chunk of each column, up to all %d items "
           "(%d calls)" % (cnt, len(calls)), repr(calls[:6]))
    for fn, want in (("prog_intr", "caterva_import: interrupted"),
                     ("prog_raise", "caterva_import: stopped by the progress function")):
        for src, dst in (("i32_blocks", "prog_%s.b2nd" % fn), ("table", "prog_%s.d" % fn)):
            del calls[:]
            err = error_of(db, "select caterva_import(?, ?, NULL, 'progress=%s')" % fn,
                           (os.path.join(d, src), os.path.join(tmp, dst)))
            left = [f for f in os.listdir(tmp) if f.startswith("prog_%s" % fn)]
            report(err is not None and err.startswith(want) and not left,
                   "%s stops the import of %s, nothing left: %r" % (fn, src, err), repr(left))
    db.close()


def array_rule(v, dtype):
    """A bcolz table's value of a column of this dtype as the array rules (ext_item.c) give it:
    datetime64 as ISO text -> INTEGER count, |S as TEXT or BLOB -> BLOB of the padded bytes."""
    dt = np.dtype(dtype)
    if v is None or dt.kind not in "MS":
        return v
    if dt.kind == "S":
        b = v.encode("utf-8") if isinstance(v, str) else v
        return b + b"\0" * (dt.itemsize - len(b))
    return int(np.datetime64(v, np.datetime_data(dt)).astype(np.int64))


def test_converted_table(db, d, tab, out, tmp):
    """A converted ctable's directory opens as one table: value columns in names order, the
    rows of the bcolz ctable (datetime64 and |S under the array rules)."""
    names = [c["name"] for c in tab["columns"]]
    db.execute("create virtual table conv using caterva('%s')" % out)
    db.execute("create virtual table orig using caterva('%s')" % os.path.join(d, "table"))
    decl = [r[0] for r in db.execute("select name from pragma_table_info('conv')")]
    report(decl == ["d0"] + names, "converted ctable directory: one table, columns d0 then %s" %
           ",".join(names), str(decl))
    sel = ", ".join('"%s"' % n for n in names)
    got = db.execute("select rowid, d0, %s from conv" % sel).fetchall()
    want = db.execute("select rowid, rowid, %s from orig" % sel).fetchall()
    dts = [c["dtype"] for c in tab["columns"]]
    want = [tuple(r[:2]) + tuple(array_rule(v, dts[k]) for k, v in enumerate(r[2:])) for r in want]
    bad = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), None)
    report(len(got) == tab["len"] and got == want,
           "converted ctable: its %d rows equal the bcolz ctable's (rowid = d0 = row number; "
           "datetime64 INTEGER counts, |S BLOBs), digest %s" % (len(got), digest(got)),
           "first difference at %s: %r != %r" % (bad, got[bad] if bad is not None else None,
                                                want[bad] if bad is not None else None))
    # pushdown: a row range reads only its blocks of the columns read (a new table: conv's
    # block cache holds what the scan above read)
    db.execute("create virtual table convp using caterva('%s')" % out)
    b0 = db.execute("select caterva_blocks_read()").fetchone()[0]
    rows = db.execute("select sum(price) from convp where d0 between 1000 and 1099").fetchall()
    b1 = db.execute("select caterva_blocks_read()").fetchone()[0]
    want_sum = db.execute("select sum(price) from orig where rowid between 1000 and 1099").fetchone()[0]
    pinfo = json.loads(db.execute("select caterva_info(?)",
                                  (os.path.join(out, "price.b2nd"),)).fetchone()[0])
    ch, bl = pinfo["chunkshape"][0], pinfo["blockshape"][0]
    want_blk = len({(r // ch, r % ch // bl) for r in range(1000, 1100)})
    report(rows[0][0] == want_sum and b1 - b0 == want_blk,
           "converted ctable: a 100-row range of one column decompresses %d block(s), those "
           "holding the rows (chunks %d, blocks %d rows)" % (b1 - b0, ch, bl), "want %d" % want_blk)
    outr = out + ".row"
    db.execute("select caterva_import(?, ?, NULL, 'dims=row')", (os.path.join(d, "table"), outr))
    db.execute("create virtual table convr using caterva('%s')" % outr)
    decl = [r[0] for r in db.execute("select name from pragma_table_info('convr')")]
    same = db.execute("select count(*) from convr join orig on convr.row = orig.rowid "
                      "where convr.price is orig.price and convr.id = orig.id").fetchone()[0]
    report(decl == ["row"] + names and same == tab["len"],
           "ctable import with dims=row: the converted table's dimension column is row", str(decl))
    err = error_of(db, "select caterva_import(?, ?, NULL, 'dims=row')",
                   (os.path.join(d, "table_nd"), out + ".ndrow"))
    report("dimension names" in err and not os.path.exists(out + ".ndrow"),
           "dims=row on a ctable with N-d columns: an error naming the column", err)
    db.execute("create virtual table conv2 using caterva('%s', dims='row', value='a,b,c,d,e')" % out)
    decl = [r[0] for r in db.execute("select name from pragma_table_info('conv2')")]
    report(decl == ["row", "a", "b", "c", "d", "e"], "converted ctable: dims= and value= rename", str(decl))
    info = json.loads(db.execute("select caterva_info(?)", (out,)).fetchone()[0])
    report(info["format"] == "converted bcolz ctable" and info["names"] == names and
           info["arrays"] == [os.path.join(out, n + ".b2nd") for n in names],
           "caterva_info of a converted ctable directory: names and arrays", str(info))
    err = error_of(db, "select caterva_slice(?)", (out,))
    report("converted bcolz ctable" in err, "caterva_slice of a converted ctable directory: an error", err)
    err = error_of(db, "create virtual table conv3 using caterva('%s', '%s')" %
                   (out, os.path.join(out, "id.b2nd")))
    report("converted bcolz ctable" in err, "converted ctable with a further path: an error", err)
    # a converted ctable is a table over several arrays: writes go to all of them as one
    # commit (test_sql_vars_write.py); an INSERT leaving a string column NULL is refused
    err = error_of(db, "insert into conv(d0, id) values (25000, 1)")
    report("name.b2nd" in err and "NULL" in err,
           "converted ctable: an INSERT leaving a |S column NULL is refused naming its array", err)
    p0 = db.execute("select price from conv where d0 = 0").fetchone()[0]
    db.execute("update conv set price = price + 1 where d0 = 0")
    db.commit()
    p1 = db.execute("select price from conv where d0 = 0").fetchone()[0]
    report(p1 == p0 + 1, "converted ctable: an UPDATE of one column commits", "%r %r" % (p0, p1))
    # column names needing JSON escapes, and order other than alphabetical
    src = os.path.join(tmp, "odd.bcolz")
    shutil.copytree(os.path.join(d, "table"), src)
    odd = ['z "q"', "a\\b", "id", "\u00e9t\u00e9", "ok"]
    for old, new in zip(["id", "price", "name", "when", "ok"], ["tmp0", "tmp1", "tmp2", "tmp3", "tmp4"]):
        os.rename(os.path.join(src, old), os.path.join(src, new))
    for k, new in enumerate(odd):
        os.rename(os.path.join(src, "tmp%d" % k), os.path.join(src, new))
    with open(os.path.join(src, "__rootdirs__"), "w") as f:
        json.dump({"names": odd, "dirname": src}, f)
    dst = os.path.join(tmp, "odd.d")
    db.execute("select caterva_import(?, ?)", (src, dst))
    db.execute("create virtual table odd using caterva('%s')" % dst)
    db.execute("create virtual table oddb using caterva('%s')" % src)
    decl = [r[0] for r in db.execute("select name from pragma_table_info('odd')")]
    man = json.load(open(os.path.join(dst, "ctable.json")))
    same = db.execute('select count(*) from odd join oddb on odd.d0 = oddb.rowid where '
                      'odd."z ""q""" = oddb."z ""q""" and odd."a\\b" is oddb."a\\b"').fetchone()[0]
    report(decl == ["d0"] + odd and man["names"] == odd and same == tab["len"],
           "converted ctable with names needing escapes: names order kept", str(decl))
    # damaged manifests
    for label, text, words in [
        ("format", b'{"format":"other","names":["id"]}', ["ctable.json", "format"]),
        ("json", b'{"format":"bcolz-ctable","names":["id",]}', ["ctable.json", "malformed JSON"]),
        ("names", b'{"format":"bcolz-ctable","names":[]}', ["ctable.json", "names"]),
        ("dup", b'{"format":"bcolz-ctable","names":["id","id"]}', ["ctable.json", "twice"]),
        ("slash", b'{"format":"bcolz-ctable","names":["../x"]}', ["ctable.json", "column name"]),
        ("missing", b'{"format":"bcolz-ctable","names":["id","nope"]}', ["nope.b2nd"]),
    ]:
        bad = os.path.join(tmp, "bad_%s.d" % label)
        shutil.copytree(out, bad)
        write(os.path.join(bad, "ctable.json"), text)
        err = error_of(db, "create virtual table \"bad_%s\" using caterva('%s')" % (label, bad))
        report(err != "" and all(w in err for w in words),
               "converted ctable, damaged ctable.json (%s): %s" % (label, err), "want %s" % words)


def damaged(d, tmp, src, name, change):
    dst = os.path.join(tmp, name)
    shutil.copytree(os.path.join(d, src), dst)
    change(dst)
    return dst


def write(path, data, mode="wb"):
    with open(path, mode) as f:
        f.write(data)


def patch(path, off, data):
    with open(path, "r+b") as f:
        f.seek(off)
        f.write(data)


def test_errors(d, tmp):
    db = connect()
    blp = lambda p, k=1: os.path.join(p, "data", "__%d.blp" % k)
    def trunc(p):
        size = os.path.getsize(blp(p))
        with open(blp(p), "r+b") as f:
            f.truncate(size - 7)
    cases = [
        # name, source, change, error at open?, words the message must hold
        ("truncated", "i32_blocks", trunc, False, ["__1.blp", "truncated"]),
        ("short_header", "i32_blocks", lambda p: write(blp(p), b"blpk\1\0\0\0"), False,
         ["__1.blp", "truncated"]),
        ("magic", "i32_blocks", lambda p: patch(blp(p), 0, b"BLPK"), False, ["__1.blp", "blpk"]),
        ("nchunks", "i32_blocks", lambda p: patch(blp(p), 8, struct.pack("<q", 2)), False,
         ["__1.blp", "2 chunks"]),
        ("too_long", "i32_blocks", lambda p: write(blp(p), b"xx", "ab"), False,
         ["__1.blp", "too long"]),
        ("nbytes", "i32_blocks", lambda p: patch(blp(p), 20, struct.pack("<i", 39996)), False,
         ["__1.blp", "meta/sizes"]),
        ("bstarts", "i32_blocks", lambda p: patch(blp(p), 32, struct.pack("<i", 0x7ffffff0)), False,
         ["__1.blp"]),
        ("missing_chunk", "i32_blocks", lambda p: os.remove(blp(p, 3)), False, ["__3.blp", "missing"]),
        ("longer_meta", "exact", lambda p: write(os.path.join(p, "meta", "sizes"),
                                                   b'{"shape": [8001], "nbytes": 1, "cbytes": 1}\n'),
         False, ["__2.blp"]),
        ("bad_dtype", "f64", lambda p: write(os.path.join(p, "meta", "storage"),
                                             b'{"dtype": "float77", "chunklen": 10}\n'), True,
         ["meta/storage", "float77"]),
        ("object_dtype", "f64", lambda p: write(os.path.join(p, "meta", "storage"),
                                                b'{"dtype": "object", "chunklen": 10}\n'), True,
         ["meta/storage", "object"]),
        ("json_sizes", "f64", lambda p: write(os.path.join(p, "meta", "sizes"), b'{"shape": [20000,}\n'),
         True, ["meta/sizes", "malformed JSON"]),
        ("json_storage", "f64", lambda p: write(os.path.join(p, "meta", "storage"), b'{"dtype": "int'),
         True, ["meta/storage", "malformed JSON"]),
        ("json_attrs", "f64", lambda p: write(os.path.join(p, "__attrs__"), b'{"a": tru}\n'), True,
         ["__attrs__", "malformed JSON"]),
        ("attrs_list", "f64", lambda p: write(os.path.join(p, "__attrs__"), b'[1, 2]\n'), True,
         ["__attrs__", "not a JSON object"]),
        ("no_chunklen", "f64", lambda p: write(os.path.join(p, "meta", "storage"), b'{"dtype": "int8"}\n'),
         True, ["meta/storage", "chunklen"]),
        ("neg_shape", "f64", lambda p: write(os.path.join(p, "meta", "sizes"), b'{"shape": [-1]}\n'),
         True, ["meta/sizes", "shape"]),
        ("no_sizes", "f64", lambda p: os.remove(os.path.join(p, "meta", "sizes")), True,
         ["meta/sizes"]),
        ("json_rootdirs", "table", lambda p: write(os.path.join(p, "__rootdirs__"), b'{"names": ["id" "x"]}'),
         True, ["__rootdirs__", "malformed JSON"]),
        ("bad_name", "table", lambda p: write(os.path.join(p, "__rootdirs__"), b'{"names": ["../f64"]}'),
         True, ["__rootdirs__", "column name"]),
        ("missing_col", "table", lambda p: shutil.rmtree(os.path.join(p, "price")), True,
         ["price", "not a carray directory"]),
        ("short_col", "table", lambda p: write(os.path.join(p, "ok", "meta", "sizes"), b'{"shape": [24999]}\n'),
         True, ["ok", "24999 rows", "25000"]),
    ]
    for name, src, change, at_open, words in cases:
        path = damaged(d, tmp, src, name, change)
        err = error_of(db, "create virtual table \"%s\" using caterva('%s')" % (name, path))
        if not at_open and not err:
            col = "value" if src != "table" else "id"
            err = error_of(db, "select sum(length(%s)) from \"%s\"" % (col, name))
        report(err != "" and all(w in err for w in words),
               "damaged %s (%s): %s" % (name, "at CREATE" if at_open else "at SELECT", err),
               "want the words %s" % words)
    err = error_of(db, "create virtual table cm using caterva('%s', cache_mb=8)" % os.path.join(d, "f64"))
    report("cache_mb" in err and "no block cache" in err, "cache_mb= on a bcolz table: an error", err)
    err = error_of(db, "select caterva_import(?, ?, NULL, 'cache_mb=8')",
                   (os.path.join(d, "f64"), os.path.join(tmp, "cm.b2nd")))
    report("cache_mb" in err, "cache_mb= in a bcolz import: an error", err)
    # a unit multiple whose ticks overflow int64 in the base unit: an error, not a wrong date
    path = damaged(d, tmp, "dt_ns", "dt_mul_overflow", lambda p: write(
        os.path.join(p, "meta", "storage"),
        b'{"dtype": "datetime64[100000000as]", "cparams": {"clevel": 5, "shuffle": 1, '
        b'"cname": "lz4"}, "chunklen": 3000}\n'))
    db.execute("create virtual table dmo using caterva('%s')" % path)
    err = error_of(db, "select value from dmo")
    report("overflows" in err, "datetime64[100000000as] beyond int64 in attoseconds: an error", err)
    path = damaged(d, tmp, "dt_ns", "dt_bad_unit", lambda p: write(
        os.path.join(p, "meta", "storage"), b'{"dtype": "datetime64[7fortnights]", "chunklen": 3000}\n'))
    err = error_of(db, "create virtual table dbu using caterva('%s')" % path)
    report(err != "", "datetime64 with an unknown unit: an error", err)
    err = error_of(db, "insert into i32 values (1, 2)")
    db.execute("create virtual table i32 using caterva('%s')" % os.path.join(d, "i32_blocks"))
    err = error_of(db, "insert into i32(d0, value) values (1, 2)")
    report("read-only" in err, "INSERT into a bcolz table: an error", err)
    err = error_of(db, "create virtual table x using caterva('%s', dtype='<i4')" % os.path.join(d, "f64"))
    report("bcolz" in err and "options" in err, "array options on a bcolz table: an error", err)
    db.close()


def main():
    if not os.path.exists(MKBCOLZ):
        sqltap.skip("bcolz tests", "tests/tools/mkbcolz was not built (configure found no libblosc-dev)")
        plan()
        return 0
    tmp = tempfile.mkdtemp(prefix="bcolz-")
    try:
        d = os.path.join(tmp, "data")
        subprocess.run([MKBCOLZ, d], check=True)
        man = json.load(open(os.path.join(d, "manifest.json")))
        test_values(d, man)
        test_blocks(d, man)
        test_info_slice(d, man)
        out = os.path.join(tmp, "out")
        os.mkdir(out)
        test_import(d, man, out)
        err = os.path.join(tmp, "err")
        os.mkdir(err)
        test_errors(d, err)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    plan()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""NumPy .npy import and export through SQL (TAP output).

1. Round trips: for every dtype the library knows (bool, int8..int64, uint8..uint64,
   float16/32/64, complex64/128, long double as bytes, S, V, U, datetime64, timedelta64), both
   byte orders, C and Fortran order and the three header versions, numpy writes a file,
   caterva_import() reads it, and the array's items (caterva_slice(), read with
   numpy.frombuffer(blob, caterva_info's dtype).reshape(caterva_info's shape)) and the file
   caterva_export() writes (read with numpy.load) are equal to numpy's array, byte for byte.
   Shapes include 0-d, empty and ragged edges; the piece budget is made small so imports and
   exports are cut along several axes.
2. Boxes: caterva_export of random boxes equals numpy's slice of the array.
3. Malformed files, one of each kind, give a clear error and leave nothing at dst.
4. Argument errors: options an import does not take, an existing destination, half a box.

Environment: top_builddir, CATERVA_PRELOAD.
"""
import io
import json
import os
import random
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

import numpy as np

from sqltap import plan, report, reexec_with_preload, while_interrupting

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")

DTYPES = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8",
          "<c8", "<c16", "|S5", "|V3", "<U3", "<M8[ns]", "<m8[s]", "<f16"]
SHAPES = [(), (0,), (7,), (5, 0, 3), (9, 11), (6, 5, 7), (3, 4, 5, 6)]


def connect():
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def sample(dtype, shape, rng):
    """An array of dtype and shape with varied values (NaN in floats, non-ASCII in U)."""
    n = int(np.prod(shape)) if shape else 1
    dt = np.dtype(dtype)
    if dt.kind in "SV":
        raw = bytes(rng.randrange(256) for _ in range(n * dt.itemsize))
        return np.frombuffer(raw, dtype=dt).reshape(shape).copy()
    if dt.kind == "U":
        words = ["", "a", "ab", "xyz", "\u00e9t\u00e9", "\u65e5\u672c"[:1] * 3]
        return np.array([words[rng.randrange(len(words))][:3] for _ in range(n)],
                        dtype=dt).reshape(shape)
    if dt.kind in "Mm":
        ints = np.array([rng.randrange(-2**40, 2**40) for _ in range(n)], dtype="<i8")
        return ints.view(dt.newbyteorder("<")).astype(dt).reshape(shape)
    raw = bytes(rng.randrange(256) for _ in range(n * dt.itemsize))
    a = np.frombuffer(raw, dtype=dt).reshape(shape).copy()
    if dt.kind == "f" and dt.itemsize <= 8 and n > 2:
        a.reshape(-1)[1] = np.nan
    return a


def write_npy(path, arr, version, fortran):
    a = arr.copy(order="F" if fortran else "C")  # (ascontiguousarray makes 0-d arrays 1-d)
    with open(path, "wb") as f:
        np.lib.format.write_array(f, a, version=(version, 0))


def raw_c(arr):
    return arr.tobytes(order="C")


def chunks_for(shape, rng):
    """Small random chunk and block shapes (so that edges are ragged)."""
    if not shape:
        return ""
    ch = [max(1, min(s, rng.randint(1, 4))) for s in shape]
    bl = [max(1, rng.randint(1, c)) for c in ch]
    return "chunks=%s blocks=%s" % (",".join(map(str, ch)), ",".join(map(str, bl)))


def round_trips(tmp, rng):
    db = connect()
    n_ok = n_all = 0
    fails = []
    case = 0
    for dtype in DTYPES:
        orders = [dtype] if dtype[0] == "|" else [dtype, ">" + dtype[1:]]
        for dt in orders:
            for shape in SHAPES:
                for fortran in ([False, True] if len(shape) >= 2 else [False]):
                    version = 1 + case % 3
                    case += 1
                    arr = sample(dt, shape, rng)
                    src = os.path.join(tmp, "rt%d.npy" % case)
                    dst = os.path.join(tmp, "rt%d.b2nd" % case)
                    out = os.path.join(tmp, "rt%d.out.npy" % case)
                    write_npy(src, arr, version, fortran)
                    desc = "%s %s %s v%d.0" % (dt, shape, "F" if fortran else "C", version)
                    n_all += 1
                    try:
                        n = db.execute("SELECT caterva_import(?, ?, NULL, ?)",
                                       (src, dst, chunks_for(shape, rng))).fetchone()[0]
                        info = json.loads(db.execute("SELECT caterva_info(?)", (dst,)).fetchone()[0])
                        blob = db.execute("SELECT caterva_slice(?)", (dst,)).fetchone()[0]
                        got = np.frombuffer(blob, dtype=info["dtype"]).reshape(info["shape"])
                        db.execute("SELECT caterva_export(?, ?)", (dst, out))
                        back = np.load(out)
                        ok = (n == arr.size and info["dtype"] == np.dtype(dt).str and
                              tuple(info["shape"]) == shape and got.dtype == arr.dtype and
                              raw_c(got) == raw_c(arr) and back.dtype == arr.dtype and
                              back.shape == shape and raw_c(back) == raw_c(arr))
                    except Exception as e:  # noqa: BLE001 - reported as a failure
                        ok = False
                        desc += " (%s)" % e
                    n_ok += ok
                    if not ok:
                        fails.append(desc)
    report(n_ok == n_all, "%d of %d .npy round trips (numpy -> import -> slice and export -> "
           "numpy) byte-identical: %d dtypes x byte orders x %d shapes x C/F order x versions "
           "1.0/2.0/3.0" % (n_ok, n_all, len(DTYPES), len(SHAPES)), "\n".join(fails))
    versions = {}
    for v in (1, 2, 3):
        src = os.path.join(tmp, "ver%d.npy" % v)
        write_npy(src, np.arange(24, dtype="<i4").reshape(2, 3, 4), v, False)
        with open(src, "rb") as f:
            versions[v] = f.read(8)[6]
    report(versions == {1: 1, 2: 2, 3: 3}, "numpy wrote headers of versions 1.0, 2.0 and 3.0 "
           "for the round trips", repr(versions))


def large_fortran(tmp, rng):
    """A bigger Fortran-order file with a tiny piece budget: pieces cut along every axis."""
    db = connect()
    arr = np.asfortranarray(np.arange(37 * 29 * 23, dtype="<f8").reshape(37, 29, 23) * 0.5)
    src = os.path.join(tmp, "bigf.npy")
    np.save(src, arr)
    ok = True
    for budget, opts in (("4096", "chunks=8,7,5 blocks=4,7,5"), ("100000", "chunks=10,10,10"),
                         ("", "")):
        os.environ["CATERVA_NPY_PIECE_BYTES"] = budget
        dst = os.path.join(tmp, "bigf%s.b2nd" % budget)
        out = os.path.join(tmp, "bigf%s.out.npy" % budget)
        db.execute("SELECT caterva_import(?, ?, NULL, ?)", (src, dst, opts))
        db.execute("SELECT caterva_export(?, ?)", (dst, out))
        back = np.load(out)
        got = np.frombuffer(db.execute("SELECT caterva_slice(?)", (dst,)).fetchone()[0],
                            dtype="<f8").reshape(arr.shape)
        ok = ok and np.array_equal(back, arr) and np.array_equal(got, arr)
    os.environ.pop("CATERVA_NPY_PIECE_BYTES", None)
    report(ok, "a 37x29x23 Fortran-order file imports and exports equal with pieces of 4 KB, "
           "100 KB and the default 64 MB")


def progress_and_interrupts(tmp):
    """progress=NAME|stderr is called after each piece; sqlite3_interrupt() and an error raised
    by the progress function stop an import, which leaves nothing behind."""
    db = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    arr = np.arange(40 * 30 * 20, dtype="<f4").reshape(40, 30, 20)
    src = os.path.join(tmp, "prog.npy")
    np.save(src, arr)
    os.environ["CATERVA_NPY_PIECE_BYTES"] = "24000"   # pieces of 10 chunks of 10x30x20 items
    calls = []

    def prog(done, total):
        calls.append((done, total))

    def err_of(sql, args):
        try:
            db.execute(sql, args).fetchall()
        except sqlite3.Error as e:
            return str(e), getattr(e, "sqlite_errorcode", None)
        return None, None

    def leftovers():
        return sorted(f for f in os.listdir(tmp) if f.startswith("prog_"))

    try:
        db.create_function("prog", 2, prog)
        dst = os.path.join(tmp, "prog_ok.b2nd")
        n = db.execute("SELECT caterva_import(?, ?, NULL, 'chunks=1,30,20 progress=prog')",
                       (src, dst)).fetchone()[0]
        dones = [c[0] for c in calls]
        report(n == arr.size and len(calls) >= 4 and dones == sorted(set(dones)) and
               dones[-1] == arr.size and all(c[1] == arr.size for c in calls),
               "progress=NAME: called after each piece, items increasing to the total (%d calls)"
               % len(calls), repr(calls[:8]))

        def prog_stop(done, total):
            calls.append(done)
            if len(calls) == 2:
                raise ValueError("enough")

        del calls[:]
        db.create_function("prog_stop", 2, prog_stop)
        msg, _ = err_of("SELECT caterva_import(?, ?, NULL, 'chunks=1,30,20 progress=prog_stop')",
                        (src, os.path.join(tmp, "prog_stop.b2nd")))
        report(msg is not None and "stopped by the progress function" in msg and len(calls) == 2
               and leftovers() == ["prog_ok.b2nd"],
               "an error raised by the progress function stops the import, nothing left: %r" % msg)

        def prog_intr(done, total):
            calls.append(done)
            if len(calls) == 2:
                db.interrupt()

        del calls[:]
        db.create_function("prog_intr", 2, prog_intr)
        msg, code = err_of("SELECT caterva_import(?, ?, NULL, 'chunks=1,30,20 progress=prog_intr')",
                           (src, os.path.join(tmp, "prog_intr.b2nd")))
        report(msg == "caterva_import: interrupted" and len(calls) == 2 and
               leftovers() == ["prog_ok.b2nd"] and code in (None, sqlite3.SQLITE_INTERRUPT),
               "sqlite3_interrupt() during a progress call: interrupted, nothing left (%r)" % msg)

        # No progress function: another thread interrupts while the import runs.
        big = os.path.join(tmp, "prog_big.npy")
        np.save(big, np.arange(200 * 100 * 100, dtype="<f8").reshape(200, 100, 100))
        msg, _ = while_interrupting(db, lambda: err_of(
            "SELECT caterva_import(?, ?, NULL, 'chunks=1,100,100')",
            (big, os.path.join(tmp, "prog_thread.b2nd"))))
        report(msg == "caterva_import: interrupted" and
               leftovers() == ["prog_big.npy", "prog_ok.b2nd"],
               "sqlite3_interrupt() from another thread stops an import without progress=: %r"
               % msg, repr(leftovers()))
        os.unlink(big)

        r = subprocess.run([sys.executable, "-c",
                            "import sqlite3,sys; db=sqlite3.connect(':memory:'); "
                            "db.enable_load_extension(True); db.load_extension(sys.argv[1]); "
                            "print(db.execute(\"SELECT caterva_import(?, ?, NULL, "
                            "'chunks=1,30,20 progress=stderr')\", (sys.argv[2], sys.argv[3]))"
                            ".fetchone()[0])", EXT, src, os.path.join(tmp, "prog_err.b2nd")],
                           capture_output=True, text=True, env=dict(os.environ))
        lines = [l for l in r.stderr.splitlines() if l.startswith("caterva_import: ")]
        report(r.returncode == 0 and r.stdout.strip() == str(arr.size) and len(lines) >= 4 and
               "24000 of 24000 items (100%)" in lines[-1],
               "progress=stderr: a line per piece, the last at 100%% (%d lines)" % len(lines),
               r.stderr[-400:])
        msg, _ = err_of("SELECT caterva_import(?, ?, NULL, 'progress=no_such_function')",
                        (src, os.path.join(tmp, "prog_nf.b2nd")))
        report(msg is not None and "no such function" in msg and
               not os.path.exists(os.path.join(tmp, "prog_nf.b2nd")),
               "progress= naming no function: an error before anything is written: %r" % msg)
    finally:
        os.environ.pop("CATERVA_NPY_PIECE_BYTES", None)
        db.close()


def boxes(tmp, rng):
    db = connect()
    arr = sample("<i4", (13, 17, 9), rng)
    src = os.path.join(tmp, "box.npy")
    np.save(src, arr)
    dst = os.path.join(tmp, "box.b2nd")
    db.execute("SELECT caterva_import(?, ?, NULL, 'chunks=5,4,3 blocks=2,2,3 dims=t,y,x')",
               (src, dst))
    db.execute("CREATE VIRTUAL TABLE boxt USING caterva(%s)" % json.dumps(dst).replace('"', "'"))
    n_ok, n_all, fails = 0, 0, []
    os.environ["CATERVA_NPY_PIECE_BYTES"] = "300"
    for i in range(60):
        lo = [rng.randint(0, s) for s in arr.shape]
        hi = [rng.randint(l, s) for l, s in zip(lo, arr.shape)]
        out = os.path.join(tmp, "box%d.npy" % i)
        src_arg = "boxt" if i % 2 else dst  # a table of the connection, or a path
        n = db.execute("SELECT caterva_export(?, ?, ?, ?)",
                       (src_arg, out, json.dumps(lo), json.dumps(hi))).fetchone()[0]
        want = arr[tuple(slice(l, h) for l, h in zip(lo, hi))]
        back = np.load(out)
        ok = n == want.size and back.shape == want.shape and np.array_equal(back, want)
        n_all += 1
        n_ok += ok
        if not ok:
            fails.append("%s %s" % (lo, hi))
    os.environ.pop("CATERVA_NPY_PIECE_BYTES", None)
    report(n_ok == n_all, "%d of %d random boxes exported (from the path and from the table "
           "name) equal numpy's slices" % (n_ok, n_all), "\n".join(fails))
    info = json.loads(db.execute("SELECT caterva_info('boxt')").fetchone()[0])
    report(info["dims"] == ["t", "y", "x"], "caterva_info's dims: the names given by dims= "
           "at import", repr(info.get("dims")))
    cols = [r[1] for r in db.execute("PRAGMA table_info(boxt)")]
    report(cols == ["t", "y", "x", "value"], "the table's columns are caterva_info's dims and "
           "value", repr(cols))


def header(d, version=1, pad=True):
    """A .npy preamble and header for dict text d."""
    body = d.encode("latin1")
    pre = 10 if version == 1 else 12
    if pad:
        total = (pre + len(body) + 1 + 63) // 64 * 64
        body = body + b" " * (total - pre - len(body) - 1) + b"\n"
    ln = struct.pack("<H", len(body)) if version == 1 else struct.pack("<I", len(body))
    return b"\x93NUMPY" + bytes([version, 0]) + ln + body


GOOD = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"
DATA = bytes(24)
MALFORMED = [
    ("bad magic", b"\x93NUMPX\x01\x00" + header(GOOD)[8:] + DATA, "not a .npy file"),
    ("version 4.0", header(GOOD)[:6] + b"\x04\x00" + header(GOOD)[8:] + DATA, "version 4.0"),
    ("version 1.1", header(GOOD)[:6] + b"\x01\x01" + header(GOOD)[8:] + DATA, "version 1.1"),
    ("header length beyond the file", header(GOOD)[:8] + b"\xff\x7f" + header(GOOD)[10:],
     "past the end"),
    ("v2 header length of 4 GB", header(GOOD, 2)[:8] + b"\xff\xff\xff\xff" + header(GOOD, 2)[12:],
     "larger than"),
    ("truncated preamble", b"\x93NUMPY\x02\x00\x10", "preamble"),
    ("not a dict", header("['descr', '<f4']") + DATA, "not a dict"),
    ("missing colon", header("{'descr' '<f4', 'fortran_order': False, 'shape': (2, 3), }") + DATA,
     "expected ':'"),
    ("unterminated string", header("{'descr': '<f4", pad=False) + DATA, "unterminated"),
    ("newline in a string", header("{'descr': '<f4\n', 'fortran_order': False, 'shape': (2,)}")
     + DATA[:8], "newlines"),
    ("escape in a string", header("{'descr': '<f\\x34', 'fortran_order': False, 'shape': (2, 3)}")
     + DATA, "escapes"),
    ("no closing brace", header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), ")
     + DATA, "expected"),
    ("text after the dict", header(GOOD + " x") + DATA, "after the dict"),
    ("unknown key", header("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), "
                           "'extra': 1}") + DATA, "unknown key"),
    ("duplicate key", header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, "
                             "'shape': (2, 3)}") + DATA, "twice"),
    ("missing shape", header("{'descr': '<f4', 'fortran_order': False}") + DATA, "lacks 'shape'"),
    ("fortran_order not a bool", header("{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}")
     + DATA, "True or False"),
    ("unknown descr", header("{'descr': '<q7', 'fortran_order': False, 'shape': (2, 3)}") + DATA,
     "not a dtype we support"),
    ("object descr", header("{'descr': '|O', 'fortran_order': False, 'shape': (2, 3)}") + DATA,
     "not a dtype we support"),
    ("structured descr", header("{'descr': [('a', '<f4')], 'fortran_order': False, "
                                "'shape': (2, 3)}") + DATA, "structured"),
    ("shape not a tuple", header("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}")
     + DATA, "tuple"),
    ("(n) instead of (n,)", header("{'descr': '<f4', 'fortran_order': False, 'shape': (6)}")
     + DATA, "(n,)"),
    ("negative extent", header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3)}")
     + DATA, "negative"),
    ("huge extent", header("{'descr': '<f4', 'fortran_order': False, "
                           "'shape': (99999999999999999999,)}"), "overflows"),
    ("shape size overflow", header("{'descr': '<f8', 'fortran_order': False, "
                                   "'shape': (4294967296, 4294967296)}"), "overflows"),
    ("17 dimensions", header("{'descr': '<f4', 'fortran_order': False, 'shape': (%s)}"
                             % ("1, " * 17)) + bytes(4), "more than 16"),
    ("data shorter than the shape", header(GOOD) + DATA[:-1], "holds 23 bytes"),
    ("data longer than the shape", header(GOOD) + DATA + b"\0", "holds 25 bytes"),
    ("no data at all", header(GOOD), "holds 0 bytes"),
]


def malformed(tmp):
    db = connect()
    n_ok, fails = 0, []
    for i, (what, data, needle) in enumerate(MALFORMED):
        src = os.path.join(tmp, "bad%d.npy" % i)
        dst = os.path.join(tmp, "bad%d.b2nd" % i)
        with open(src, "wb") as f:
            f.write(data)
        try:
            db.execute("SELECT caterva_import(?, ?)", (src, dst))
            msg = "(no error)"
        except sqlite3.Error as e:
            msg = str(e)
        left = [n for n in os.listdir(tmp) if n.startswith("bad%d.b2nd" % i)]
        ok = needle in msg and msg.startswith("caterva") and not left
        n_ok += ok
        if not ok:
            fails.append("%s: %s %s" % (what, msg, left))
    report(n_ok == len(MALFORMED), "%d of %d malformed .npy files (bad magic, versions, header "
           "lengths, dict syntax, keys, descr, shape, data size) fail with their message and "
           "leave nothing" % (n_ok, len(MALFORMED)), "\n".join(fails))
    # The same header grammar NumPy accepts: keys in any order, no trailing comma, "L".
    src = os.path.join(tmp, "odd.npy")
    with open(src, "wb") as f:
        f.write(header("{\"shape\": (2L, 3L), \"fortran_order\": True, \"descr\": \"<f4\"}")
                + np.arange(6, dtype="<f4").tobytes())
    ref = np.load(src)
    dst = os.path.join(tmp, "odd.b2nd")
    db.execute("SELECT caterva_import(?, ?)", (src, dst))
    got = np.frombuffer(db.execute("SELECT caterva_slice(?)", (dst,)).fetchone()[0],
                        dtype="<f4").reshape(2, 3)
    report(np.array_equal(got, ref), "a header with other key order, double quotes, Python 2 "
           "integers and no trailing comma reads as numpy reads it")


def arg_errors(tmp):
    db = connect()
    src = os.path.join(tmp, "args.npy")
    np.save(src, np.arange(10, dtype="<i2"))
    dst = os.path.join(tmp, "args.b2nd")
    new = os.path.join(tmp, "new.b2nd")
    cases = [
        ("SELECT caterva_import(?, ?, NULL, 'shape=3')", (src, new), "shape= does not apply"),
        ("SELECT caterva_import(?, ?, NULL, 'cache_mb=8')", (src, new), "cache_mb= does not apply"),
        ("SELECT caterva_import(?, ?, NULL, 'colour=red')", (src, new), "unknown option"),
        ("SELECT caterva_import(?, ?, NULL, 'chunks=2,2')", (src, new), "must list 1 extents"),
        ("SELECT caterva_import(?, ?, NULL, 'codec=snappy')", (src, new), "codec="),
        ("SELECT caterva_import(?, ?, NULL, 'chunks')", (src, new), "option=value"),
        ("SELECT caterva_import(?, ?, 'var')", (src, new), "give NULL"),
        ("SELECT caterva_import(?, ?)", (src, src), "exists"),
        ("SELECT caterva_export(?, ?)", (dst, src), "exists"),
        ("SELECT caterva_export(?, ?, '[0]')", (dst, src + "x"), "both start and stop"),
        ("SELECT caterva_export(?, ?, '[5]', '[11]')", (dst, src + "x"), "not inside"),
        ("SELECT caterva_export(?, ?)", (os.path.join(tmp, "none.b2nd"), src + "x"),
         "cannot open"),
    ]
    db.execute("SELECT caterva_import(?, ?, NULL, 'chunks=4 blocks=2 codec=lz4 clevel=3 "
               "filters=bitshuffle sparse=1')", (src, dst))
    info = json.loads(db.execute("SELECT caterva_info(?)", (dst,)).fetchone()[0])
    report(info["codec"] == "lz4" and info["clevel"] == 3 and info["filters"] == ["bitshuffle"]
           and info["chunkshape"] == [4] and info["storage"] == "sparse",
           "import options: chunks, blocks, codec, clevel, filters, sparse", repr(info))
    n_ok, fails = 0, []
    for sql, args, needle in cases:
        try:
            db.execute(sql, args)
            msg = "(no error)"
        except sqlite3.Error as e:
            msg = str(e)
        ok = needle in msg
        n_ok += ok
        if not ok:
            fails.append("%s: %s" % (sql, msg))
    report(n_ok == len(cases), "%d of %d argument errors give their message" % (n_ok, len(cases)),
           "\n".join(fails))
    report(not os.path.exists(src + "x") and not os.path.exists(new),
           "failed imports and exports leave no file")


def main():
    reexec_with_preload()
    rng = random.Random(10)
    shm = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
    tmp = tempfile.mkdtemp(prefix="caterva-npy.", dir=shm)  # imports fsync: spare the disk
    try:
        round_trips(tmp, rng)
        large_fortran(tmp, rng)
        boxes(tmp, rng)
        progress_and_interrupts(tmp)
        malformed(tmp)
        arg_errors(tmp)
    finally:
        shutil.rmtree(tmp)
    plan()


if __name__ == "__main__":
    main()

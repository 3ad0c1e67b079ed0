#!/usr/bin/env python3
"""Writes through the caterva virtual table: every write and creation error (TAP output).

Each failing INSERT and UPDATE (NULL, negative, fractional or out-of-range coordinates, growth
of too many chunks at once, values a dtype cannot hold, dimension columns or the rowid
changed): its message, its error code, and the file unchanged, first as an autocommit
statement, then inside a transaction, where the statement alone is undone and the transaction
goes on. Each wrong creation option: its message, and nothing left in the directory; creation
options on an existing array; DROP TABLE keeps the file.

Environment: top_builddir (the build tree), CATERVA_PRELOAD (ASan runtime to preload when the
extension is built with ASan).
"""
import os
import sys
import tempfile

from sqltap import report
from writetap import connect, content, create, errname, main, norm, snap, try_exec


def expect_error(db, sql, want, code, desc, path=None, prefix=False):
    before = snap(path) if path else None
    e = try_exec(db, sql)
    if e is None:
        report(False, desc, "succeeded: %s" % sql)
        return
    got = norm(e)
    ok = got.startswith(norm(want)) if prefix else got == norm(want)
    ok = ok and (code is None or errname(e) == code)
    if path:
        ok = ok and snap(path) == before
    report(ok, desc, "got %r (%s)\nwant %r (%s)\nfile unchanged: %s" % (
        str(e), errname(e), want, code, snap(path) == before if path else "-"))


def write_errors(tmp):
    sub = tempfile.mkdtemp(dir=tmp)
    db = connect()
    P = {}

    def mk(table, dtype, extra=""):
        P[table] = os.path.join(sub, table + ".b2nd")
        create(db, table, P[table], "shape='4,5', dtype='%s', chunks='2,2', blocks='1,2', "
               "dims='x,y'%s" % (dtype, extra))
        db.execute("INSERT INTO %s VALUES(0, 0, 1), (3, 4, 1)" % table)
    mk("f", "float32")
    mk("u", "uint8")
    mk("i", "int16")
    mk("b", "bool")
    mk("d", "float64")
    mk("g", "float32", ", value=temp")
    M = "caterva: %s value %s does not fit the column's dtype %s (column %s)"
    cases = [
        ("f", "INSERT INTO f VALUES(NULL, 1, 1.0)", "caterva: NULL coordinate for x",
         "SQLITE_CONSTRAINT"),
        ("f", "INSERT INTO f VALUES(1, NULL, 1.0)", "caterva: NULL coordinate for y",
         "SQLITE_CONSTRAINT"),
        ("f", "INSERT INTO f VALUES(1.5, 1, 1.0)",
         "caterva: coordinate x = '1.5' is not a non-negative integer", "SQLITE_MISMATCH"),
        ("f", "INSERT INTO f VALUES(-1, 1, 1.0)",
         "caterva: coordinate x = '-1' is not a non-negative integer", "SQLITE_MISMATCH"),
        ("f", "INSERT INTO f VALUES(1, 'a', 1.0)",
         "caterva: coordinate y = 'a' is not a non-negative integer", "SQLITE_MISMATCH"),
        ("f", "INSERT INTO f VALUES(1, 5, 1.0)",
         "caterva: coordinate y = 5 out of range 0..4 (only x grows)", "SQLITE_CONSTRAINT"),
        ("f", "INSERT INTO f VALUES(9, 5, 1.0)",
         "caterva: coordinate y = 5 out of range 0..4 (only x grows)", "SQLITE_CONSTRAINT"),
        ("f", "INSERT INTO f VALUES(100000000, 0, 1.0)",
         "caterva: coordinate x = 100000000 would add 149999997 chunks to the array "
         "(at most 1048576 at a time)", "SQLITE_CONSTRAINT"),
        ("f", "INSERT INTO f VALUES(1, 1, 'abc')", M % ("text", "'abc'", "float32", "value"),
         "SQLITE_MISMATCH"),
        ("f", "INSERT INTO f VALUES(1, 1, 1e300)", M % ("real", "'1.0e+300'", "float32", "value"),
         "SQLITE_MISMATCH"),
        ("f", "INSERT INTO f VALUES(1, 1, 16777217)",
         M % ("integer", "'16777217'", "float32", "value"), "SQLITE_MISMATCH"),
        ("g", "INSERT INTO g VALUES(1, 1, 'abc')", M % ("text", "'abc'", "float32", "temp"),
         "SQLITE_MISMATCH"),
        ("d", "INSERT INTO d VALUES(1, 1, 9007199254740993)",
         M % ("integer", "'9007199254740993'", "float64", "value"), "SQLITE_MISMATCH"),
        ("d", "INSERT INTO d VALUES(1, 1, 'x')", M % ("text", "'x'", "float64", "value"),
         "SQLITE_MISMATCH"),
        ("u", "INSERT INTO u VALUES(1, 1, 300)", M % ("integer", "'300'", "uint8", "value"),
         "SQLITE_MISMATCH"),
        ("u", "INSERT INTO u VALUES(1, 1, -1)", M % ("integer", "'-1'", "uint8", "value"),
         "SQLITE_MISMATCH"),
        ("u", "INSERT INTO u VALUES(1, 1, NULL)", M % ("NULL", "", "uint8", "value"),
         "SQLITE_MISMATCH"),
        ("i", "INSERT INTO i VALUES(1, 1, 1.5)", M % ("real", "'1.5'", "int16", "value"),
         "SQLITE_MISMATCH"),
        ("i", "INSERT INTO i VALUES(1, 1, 40000)", M % ("integer", "'40000'", "int16", "value"),
         "SQLITE_MISMATCH"),
        ("i", "INSERT INTO i VALUES(1, 1, x'0102')",
         M % ("blob", "of 2 bytes", "int16", "value"),
         "SQLITE_MISMATCH"),
        ("b", "INSERT INTO b VALUES(1, 1, 2)", M % ("integer", "'2'", "bool", "value"),
         "SQLITE_MISMATCH"),
        ("b", "INSERT INTO b VALUES(1, 1, 0.5)", M % ("real", "'0.5'", "bool", "value"),
         "SQLITE_MISMATCH"),
        ("f", "INSERT INTO f VALUES(1, 1, 1.0), (2, 2, 2.0), (7, 0, 3.0), (3, 3, 'last')",
         M % ("text", "'last'", "float32", "value"), "SQLITE_MISMATCH"),
        ("f", "UPDATE f SET x = x + 1 WHERE x = 0 AND y = 0",
         "caterva: dimension column x cannot change (cells do not move)", "SQLITE_CONSTRAINT"),
        ("f", "UPDATE f SET y = 2 WHERE x = 1",
         "caterva: dimension column y cannot change (cells do not move)", "SQLITE_CONSTRAINT"),
        ("f", "UPDATE f SET rowid = rowid + 1 WHERE x = 0 AND y = 0",
         "caterva: the rowid of a cell cannot change", "SQLITE_CONSTRAINT"),
        ("f", "UPDATE f SET value = 'z' WHERE x = 1", M % ("text", "'z'", "float32", "value"),
         "SQLITE_MISMATCH"),
        ("u", "UPDATE u SET value = value + 255", M % ("integer", "'256'", "uint8", "value"),
         "SQLITE_MISMATCH"),
        ("i", "UPDATE i SET value = NULL WHERE x = 2", M % ("NULL", "", "int16", "value"),
         "SQLITE_MISMATCH"),
    ]
    for table, sql, want, code in cases:
        expect_error(db, sql, want, code, "autocommit %s: %s" % (sql, want), P[table])
    # the same inside a transaction: the statement alone is undone, the transaction goes on
    for table, sql, want, code in cases:
        path = P[table]
        before = snap(path)
        c0 = content(db, table, 2)
        db.execute("BEGIN")
        db.execute("INSERT INTO %s VALUES(2, 2, 1)" % table)
        e = try_exec(db, sql)
        c1 = content(db, table, 2)
        want_c1 = sorted([r for r in c0 if r[:2] != (2, 2)] + [(2, 2, 1)])
        still = db.in_transaction
        db.execute("ROLLBACK")
        ok = e is not None and norm(e) == norm(want) and errname(e) == code and still
        ok = ok and c1 == want_c1 and snap(path) == before
        report(ok, "in a transaction %s: the statement alone fails, then ROLLBACK is "
               "byte-identical" % sql, "got %r (%s), in txn %s, content as expected %s" % (
                   e, errname(e) if e else "", still, c1 == want_c1))
    db.close()


def creation_errors(tmp):
    sub = tempfile.mkdtemp(dir=tmp)
    db = connect()
    base = os.path.join(sub, "c.b2nd")
    cases = [
        ("shape='3,x'", "caterva: shape= must list 1 to 16 extents >= 0, like '365,180,360', "
         "not \"3,x\""),
        ("shape=''", "caterva: shape= must list 1 to 16 extents >= 0, like '365,180,360', "
         "not \"\""),
        ("shape='-2'", "caterva: shape= must list 1 to 16 extents >= 0, like '365,180,360', "
         "not \"-2\""),
        ("shape='%s'" % ",".join(["2"] * 17), "caterva: shape= must list 1 to 16 extents >= 0, "
         "like '365,180,360', not \"%s\"" % ",".join(["2"] * 17)),
        ("shape='4,4', chunks='2'", "caterva: chunks= and blocks= must list 2 extents >= 1 "
         "(blocks no larger than chunks)"),
        ("shape='4,4', chunks='0,2'", "caterva: chunks= and blocks= must list 2 extents >= 1 "
         "(blocks no larger than chunks)"),
        ("shape='4,4', chunks='2,2', blocks='3,1'", "caterva: chunks= and blocks= must list 2 "
         "extents >= 1 (blocks no larger than chunks)"),
        ("shape='4,4', blocks='2,2'", "caterva: blocks= needs chunks="),
        ("shape='4', codec=snappy", "caterva: codec= must be blosclz, lz4, lz4hc, zlib or zstd, "
         "not \"snappy\""),
        ("shape='4', clevel=10", "caterva: clevel= must be 0 to 9, not \"10\""),
        ("shape='4', filters='shuffle,foo'", "caterva: filters=: \"foo\" is not a filter, or more "
         "than 6 (known: shuffle, bitshuffle, delta, trunc_prec:N with N in 1..52, bytedelta, "
         "none)"),
        ("shape='4', filters='trunc_prec:0'",
         "caterva: filters=: \"trunc_prec:0\" is not a filter, "
         "or more than 6 (known: shuffle, bitshuffle, delta, trunc_prec:N with N in 1..52, "
         "bytedelta, none)"),
        ("shape='4', dtype='int32', fill=nan", "caterva: fill=nan needs a float dtype"),
        ("shape='4', dtype='uint8', fill=300", "caterva: fill= must be nan or a number the dtype "
         "holds, not \"300\""),
        ("shape='4', dtype='int8', fill=1.5", "caterva: fill= must be nan or a number the dtype "
         "holds, not \"1.5\""),
        ("shape='4', fill=abc", "caterva: fill= must be nan or a number the dtype holds, "
         "not \"abc\""),
        # an integer dtype's fill is the integer written, never a double's rounding of it
        ("shape='4', dtype='int64', fill=9007199254740993.0", "caterva: fill= must be nan or a "
         "number the dtype holds, not \"9007199254740993.0\""),
        ("shape='4', dtype='int64', fill=1e19", "caterva: fill= must be nan or a number the "
         "dtype holds, not \"1e19\""),
        ("shape='4', dtype='uint64', fill=-1", "caterva: fill= must be nan or a number the "
         "dtype holds, not \"-1\""),
        ("shape='4', dtype='float7'", "caterva: dtype=: unknown dtype \"float7\""),
        ("shape='4', sparse=2", "caterva: sparse= must be 0 or 1"),
        ("shape='4,4', dims='a'", "caterva: dims= gives 1 names but the array has 2 dimensions"),
        ("shape='4', foo=1", "caterva: unknown option \"foo\" (known: path, dims, value, dtype,"),
        ("shape='4', shape='5'", "caterva: option \"shape\" given twice"),
    ]
    for opts, want in cases:
        expect_error(db, "CREATE VIRTUAL TABLE x USING caterva('%s', %s)" % (base, opts), want,
                     None, "creation error %s: %s" % (opts, want), prefix=want.endswith(","))
        left = sorted(os.listdir(sub))
        report(left == [], "after the creation error %s nothing is left in the directory" % opts,
               repr(left))
    # a missing path without creation options
    missing = os.path.join(sub, "missing.b2nd")
    expect_error(db, "CREATE VIRTUAL TABLE x USING caterva('%s', dtype='float32')" % missing,
                 "caterva: cannot open \"%s\": " % missing, None,
                 "a missing path without shape= cannot be opened", prefix=True)
    # creation options on an existing path, with the file unchanged
    create(db, "e", base, "shape='3', dtype='int16'")
    db.execute("INSERT INTO e VALUES(1, 5)")
    expect_error(db, "CREATE VIRTUAL TABLE x USING caterva('%s', shape='9', fill=2)" % base,
                 "caterva: '%s' exists; the creation options shape= fill= apply only to a new "
                 "array (open it without them, or give a new path)" % base, None,
                 "creation options on an existing path", path=base)
    sp = os.path.join(sub, "s.b2sparse")
    create(db, "s", sp, "shape='3', sparse=1")
    expect_error(db, "CREATE VIRTUAL TABLE x USING caterva('%s', sparse=1, codec=lz4)" % sp,
                 "caterva: '%s' exists; the creation options codec= sparse= apply only to a new "
                 "array (open it without them, or give a new path)" % sp, None,
                 "creation options on an existing sparse directory", path=sp)
    # DROP TABLE never deletes the file
    db.execute("DROP TABLE e")
    create(db, "e2", base)
    got = db.execute("SELECT * FROM e2").fetchall()
    report(got == [(0, 0), (1, 5), (2, 0)], "DROP TABLE keeps the file; it opens again", repr(got))
    # integer fills past 2^53 are written exactly
    for dtype, fill in (("int64", "9007199254740993"), ("int64", "-9223372036854775808"),
                        ("uint64", "9223372036854775807"), ("int32", "1e6")):
        fp = os.path.join(sub, "fill_%s_%s.b2nd" % (dtype, fill.lstrip("-")))
        create(db, "f", fp, "shape='3', dtype='%s', fill=%s" % (dtype, fill))
        got = db.execute("SELECT value FROM f WHERE d0 = 2").fetchone()[0]
        report(got == int(float(fill)) if "e" in fill else got == int(fill),
               "fill=%s of %s reads back exactly" % (fill, dtype), repr(got))
        db.execute("DROP TABLE f")
    db.close()


def errors(tmp):
    write_errors(tmp)
    creation_errors(tmp)


if __name__ == "__main__":
    sys.exit(main("caterva-write-", errors))

#!/usr/bin/env python3
"""Writes through the caterva virtual table: the differential test (TAP output).

Arrays of 1 to 4 dimensions and nine dtypes, contiguous and sparse, with small chunks and
blocks, get a random sequence of INSERT (single and multi-row, VALUES, bound parameters,
INSERT ... SELECT from the plain table, from the table itself or from a CTE), UPDATE, DELETE,
growth along the first dimension, BEGIN/COMMIT/ROLLBACK, nested SAVEPOINTs and failing
statements. A plain WITHOUT ROWID table in the same connection holds every cell and gets the
same changes, computed in Python from what SQLite evaluates on the plain table (dtype checks and
float32 rounding included, writemodel.py; a statement the model says must fail must fail with
the model's message). After every step both tables must hold the same cells, and the block
statistics equal a recomputation; a reader connection and a fresh connection must see exactly
the committed content, never uncommitted content. A failed autocommit statement and a ROLLBACK
leave the file byte-identical. After the run: the grown shape, `_FillValue` and
`_ARRAY_DIMENSIONS` (caterva_info).

The other tests of writes: test_sql_write_rollback.py (byte-identical ROLLBACK and failed
statements), test_sql_write_errors.py, test_sql_write_locking.py, test_sql_write_persist.py.

Environment: top_builddir (the build tree), CATERVA_WRITE_SEED (default 20240611),
CATERVA_WRITE_STEPS (differential steps in all, default 4000), CATERVA_PRELOAD (ASan
runtime to preload when the extension is built with ASan).
"""
import itertools
import json
import os
import random
import re
import sqlite3
import sys
import time

from sqltap import report
from writemodel import DTYPES, exact_int, fit, lit, sql_text, value_msg
from writetap import connect, errname, main, norm, snap, try_exec

SEED = int(os.environ.get("CATERVA_WRITE_SEED", "20240611"))
STEPS = int(os.environ.get("CATERVA_WRITE_STEPS", "4000"))


SPECS = [
    dict(name="f8_1d", dtype="float64", shape=[12], chunks=[5], blocks=[2], dims=["x"],
         opts="codec=zstd"),
    dict(name="f4_2d", dtype="float32", shape=[7, 9], chunks=[3, 4], blocks=[2, 2],
         dims=["lat", "lon"], value="temp", opts="codec=lz4, filters='shuffle'"),
    dict(name="i2_3d_sparse", dtype="int16", shape=[5, 6, 4], chunks=[2, 4, 3],
         blocks=[1, 2, 2], opts="sparse=1, fill=-7, codec=blosclz"),
    dict(name="u1_4d", dtype="uint8", shape=[3, 4, 5, 3], chunks=[2, 2, 3, 2],
         blocks=[1, 1, 2, 1], dims=["a", "b", "c", "d"],
         opts="codec=zlib, filters='bitshuffle', fill=200"),
    dict(name="i1_2d", dtype="int8", shape=[10, 6], chunks=[4, 3], blocks=[2, 3],
         opts="codec=lz4hc, filters='delta'"),
    dict(name="b1_2d_sparse", dtype="bool", shape=[9, 7], chunks=[4, 4], blocks=[2, 2],
         opts="sparse=1"),
    dict(name="i4_3d", dtype="int32", shape=[4, 5, 6], chunks=[3, 3, 3], blocks=[3, 3, 3],
         dims=["t", "y", "x"], opts="filters='bytedelta', clevel=9"),
    dict(name="i8_1d_empty", dtype="int64", shape=[0], chunks=[4], blocks=[2], cap=11,
         opts="fill=-1"),
    dict(name="u2_2d_onechunk", dtype="uint16", shape=[6, 11], chunks=[6, 11], blocks=[3, 4],
         opts="filters='none', clevel=0, fill=65535"),
    dict(name="f8_4d_sparse", dtype="float64", shape=[2, 3, 4, 5], chunks=[1, 2, 3, 4],
         blocks=[1, 1, 2, 2], exact=True, opts="sparse=1, filters='trunc_prec:30,shuffle'"),
    dict(name="f4_3d_sparse", dtype="float32", shape=[12, 2, 3], chunks=[5, 2, 2],
         blocks=[5, 1, 1], dims=["time", "lat", "lon"], opts="sparse=1, fill=1.5, codec=lz4"),
    dict(name="i2_1d_cache0", dtype="int16", shape=[11], chunks=[3], blocks=[3], sync=True,
         opts="cache_mb=0, codec=zstd, clevel=1"),
]


class Diff:
    """One array under the differential test."""

    def __init__(self, spec, tmp, rng):
        self.spec, self.rng = spec, rng
        self.name = spec["name"]
        self.dt = DTYPES[spec["dtype"]]
        self.shape = list(spec["shape"])
        self.chunks, self.blocks = spec["chunks"], spec["blocks"]
        self.nd = len(self.shape)
        self.cols = spec.get("dims") or ["d%d" % k for k in range(self.nd)]
        self.vcol = spec.get("value", "value")
        self.sparse = "sparse=1" in spec["opts"]
        self.path = os.path.join(tmp, spec["name"] + (".b2sparse" if self.sparse else ".b2nd"))
        self.exact = spec.get("exact", False)  # lossy filter: only values of few mantissa bits
        self.cap0 = spec.get("cap", self.shape[0] + 3 * self.chunks[0] + 1)
        m = re.search(r"fill=([^,]+)", spec["opts"])
        if m:
            self.fill = float(m.group(1)) if self.dt.isfloat else int(m.group(1))
        else:
            self.fill = None if self.dt.isfloat else 0
        self.order = ", ".join(self.cols)
        self.stats = {}
        self.history = []
        self.failed = None

    # -- setup
    def create_sql(self, table="t"):
        o = "shape='%s', dtype='%s', chunks='%s', blocks='%s', %s" % (
            ",".join(map(str, self.shape)), self.dt.name, ",".join(map(str, self.chunks)),
            ",".join(map(str, self.blocks)), self.spec["opts"])
        if "sync" not in self.spec:
            o += ", synchronous=off"
        if self.spec.get("dims"):
            o += ", dims='%s'" % ",".join(self.cols)
        if self.vcol != "value":
            o += ", value=%s" % self.vcol
        return "CREATE VIRTUAL TABLE %s USING caterva('%s', %s)" % (table, self.path, o)

    def open_sql(self, table):
        # cache_mb=1: a table with tiny blocks sizes its block cache's hash table by the
        # number of blocks that fit the default 64 MiB (16 MiB of pointers to clear)
        o = ", cache_mb=1"
        o += ", value=%s" % self.vcol if self.vcol != "value" else ""
        return "CREATE VIRTUAL TABLE %s USING caterva('%s'%s)" % (table, self.path, o)

    def setup(self):
        self.A = connect()
        self.A.execute(self.create_sql())
        self.A.execute("CREATE TABLE p(%s, %s %s, PRIMARY KEY(%s)) WITHOUT ROWID" % (
            ", ".join("%s INTEGER" % c for c in self.cols), self.vcol,
            "REAL" if self.dt.isfloat else "INTEGER", self.order))
        self.grow_plain(0, self.shape[0])
        self.R = connect()
        self.R.execute(self.open_sql("r"))
        self.committed = self.rows("p")
        self.strides = [1] * self.nd
        for k in range(self.nd - 2, -1, -1):
            self.strides[k] = self.strides[k + 1] * self.shape[k + 1]
        self.sp = []
        self.nsp = 0

    def close(self):
        self.A.close()
        self.R.close()

    def rows(self, table, db=None):
        return (db or self.A).execute("SELECT * FROM %s ORDER BY %s" % (
            table, ", ".join(str(k + 1) for k in range(self.nd)))).fetchall()

    def ext0(self):
        n = self.A.execute("SELECT max(%s) + 1 FROM p" % self.cols[0]).fetchone()[0]
        return n or 0

    def grow_plain(self, old, new):
        if new <= old:
            return
        ranges = [range(old, new)] + [range(n) for n in self.shape[1:]]
        self.A.executemany("INSERT INTO p VALUES(%s)" % ",".join("?" * (self.nd + 1)),
                           (c + (self.fill,) for c in itertools.product(*ranges)))

    def count(self, key, n=1):
        self.stats[key] = self.stats.get(key, 0) + n

    # -- random pieces
    def good_value(self):
        r, dt = self.rng.random(), self.dt
        if dt.isfloat:
            if r < 0.08:
                return None
            if r < 0.20:
                return self.rng.randint(-60, 60)
            if r < 0.23 and not self.exact:
                return self.rng.choice([2**24, -2**24, 2**53 if dt.size == 8 else 2**24 - 1,
                                        0.1, 1.0 / 3])
            return self.rng.randint(-1200, 1200) * 0.25
        if r < 0.15:
            return self.rng.choice([dt.lo, dt.hi])
        if r < 0.25:
            return float(self.rng.randint(max(dt.lo, -50), min(dt.hi, 50)))
        if r < 0.5:
            return self.rng.randint(dt.lo, dt.hi)
        return self.rng.randint(max(dt.lo, -100), min(dt.hi, 100))

    def bad_value(self):
        dt = self.dt
        pool = ["x%d" % self.rng.randint(0, 9), b"\x01\x02"]
        if dt.isfloat:
            pool += [1e300, -3e39, 16777217] if dt.size == 4 else [2**53 + 1, -(2**53 + 1)]
        else:
            pool += [1.5, None, dt.hi + 1, -0.5]
            if dt.lo > -2**63:
                pool.append(dt.lo - 1)
        return self.rng.choice(pool)

    def coord(self, k, e0, grow=True):
        if k == 0:
            if grow and e0 < self.cap0 and (e0 == 0 or self.rng.random() < 0.2):
                return self.rng.randint(e0, min(self.cap0 - 1, e0 + 2 * self.chunks[0]))
            if e0 == 0:
                return None
            return self.rng.randint(0, e0 - 1)
        return self.rng.randint(0, self.shape[k] - 1)

    def good_coords(self, e0):
        c = [self.coord(k, e0) for k in range(self.nd)]
        if c[0] is None:
            c[0] = 0
        if self.rng.random() < 0.1:
            k = self.rng.randrange(self.nd)
            c[k] = float(c[k])  # an integral REAL is a valid coordinate
        return c

    def bad_coords(self, e0):
        c = self.good_coords(e0)
        k = self.rng.randrange(self.nd)
        if k > 0 and self.rng.random() < 0.4:
            c[k] = self.shape[k] + self.rng.randint(0, 3)
        else:
            c[k] = self.rng.choice([None, -1, 1.5, "a", -3.0])
        return c

    def seam(self, k, n):
        s = {0, n - 1, n, 1}
        for x in range(0, n + 1, self.chunks[k]):
            s.update({x - 1, x})
        for x in range(0, n + 1, self.blocks[k]):
            s.add(x)
        return sorted(v for v in s if -1 <= v <= n)

    def cond(self, e0):
        """(WHERE text for t, the same for p) or (None, None)."""
        t, p = [], []
        for k in range(self.nd):
            n = e0 if k == 0 else self.shape[k]
            seams = self.seam(k, max(n, 1))
            c, r = self.cols[k], self.rng.random()

            def b():
                return self.rng.choice(seams) if self.rng.random() < 0.6 else \
                    self.rng.randint(-1, max(n, 1))
            if r < 0.35:
                continue
            if r < 0.50:
                w = "%s = %d" % (c, b())
            elif r < 0.65:
                w = "%s BETWEEN %d AND %d" % (c, b(), b())
            elif r < 0.80:
                w = "%s %s %d AND %s %s %d" % (c, self.rng.choice([">", ">="]), b(), c,
                                               self.rng.choice(["<", "<="]), b())
            elif r < 0.93:
                w = "%s IN (%s)" % (c, ", ".join(str(b()) for _ in range(self.rng.randint(1, 5))))
            else:
                w = "%s <> %d" % (c, b())
            t.append(w)
            p.append(w)
        r = self.rng.random()
        if r < 0.06:
            w = self.rng.choice(["%s IS NULL" % self.vcol, "%s IS NOT NULL" % self.vcol,
                                 "%s > %s" % (self.vcol, lit(self.good_value() or 0)),
                                 "(%s + %s) %% 3 = 0" % (self.cols[0], self.cols[-1])])
            t.append(w)
            p.append(w)
        elif r < 0.12:
            total = e0 * self.strides[0]
            a = self.rng.randint(-1, total + 1)
            z = a + self.rng.randint(0, 20)
            lin = " + ".join("%s * %d" % (c, s) for c, s in zip(self.cols, self.strides))
            t.append("rowid BETWEEN %d AND %d" % (a, z))
            p.append("(%s) BETWEEN %d AND %d" % (lin, a, z))
        if not t:
            return None, None
        return " AND ".join(t), " AND ".join(p)

    def value_expr(self):
        """An expression of a cell for UPDATE and INSERT ... SELECT; {T} is the table."""
        v, c0, cl = self.vcol, self.cols[0], self.cols[-1]
        dt = self.dt
        if dt.isfloat:
            pool = ["%s + 0.25" % v, "-%s" % v, "%s - 1.5" % v, "NULL", lit(self.good_value()),
                    "coalesce(%s, %s)" % (v, lit(self.rng.randint(-40, 40) * 0.5)),
                    "%s * 0.5 + %s" % (c0, cl), "abs(%s)" % v, "%s * 2" % v,
                    "CASE WHEN %s IS NULL THEN 2.75 ELSE NULL END" % v]
            if not self.exact:
                pool += ["%s / 3" % v, "%s + 0.1" % v]
        elif dt.hi == 1:
            pool = ["1 - %s" % v, "NOT %s" % v, "%s %% 2" % c0, "%s + 1" % v,
                    lit(self.good_value()),
                    "(%s + %s) %% 2" % (c0, cl), "%s" % v]
        else:
            m = min(dt.hi + 1, self.rng.choice([7, 100, 128, 256, 30000, 2**31]))
            pool = ["(%s + %d) %% %d" % (v, self.rng.randint(0, 9), m), "%s + 1" % v, "-%s" % v,
                    "%s / 2" % v, lit(self.good_value()), "%s * 2" % v,
                    "%s * 10 + %s" % (c0, cl), "%s - 1" % v, "%s + 0.5" % v]
        e = self.rng.choice(pool)
        if self.rng.random() < 0.08 and self.nd >= 1:
            # a neighbour's value, from the plain table (correlated subquery)
            on = " AND ".join(["q.%s = {T}.%s + 1" % (c0, c0)] +
                              ["q.%s = {T}.%s" % (c, c) for c in self.cols[1:]])
            e = "(SELECT q.%s FROM p q WHERE %s)" % (v, on)
        return e

    # -- the model
    def insert_effect(self, rows, e0):
        """(error message, writes, new extent) of inserting rows in order."""
        writes = []
        for row in rows:
            coords, v = row[:self.nd], row[self.nd]
            ok, st = fit(self.dt, v)
            if not ok:
                return value_msg(self.A, self.dt.name, self.vcol, v), None, e0
            ci = []
            for k, c in enumerate(coords):
                if c is None:
                    return "caterva: NULL coordinate for %s" % self.cols[k], None, e0
                x = exact_int(c)
                if x is None or x < 0:
                    return "caterva: coordinate %s = '%s' is not a non-negative integer" % (
                        self.cols[k], sql_text(self.A, c)), None, e0
                ci.append(x)
            for k in range(1, self.nd):
                if ci[k] >= self.shape[k]:
                    return "caterva: coordinate %s = %d out of range 0..%d (only %s grows)" % (
                        self.cols[k], ci[k], self.shape[k] - 1, self.cols[0]), None, e0
            e0 = max(e0, ci[0] + 1)
            writes.append((tuple(ci), st))
        return None, writes, e0

    def apply(self, writes, old_e0, new_e0):
        self.grow_plain(old_e0, new_e0)
        self.A.executemany("INSERT OR REPLACE INTO p VALUES(%s)" % ",".join("?" * (self.nd + 1)),
                           (c + (v,) for c, v in writes))
        if new_e0 > old_e0:
            self.count("growth")

    def execute(self, sql, params, err, writes, e0, new_e0, nchanges, kind):
        """Run sql on t; it must fail with a message in err (a set) or succeed with nchanges
        changes, and then writes go to p."""
        self.history.append(sql if not params else "%s -- %r" % (sql, params))
        before = snap(self.path) if err and not self.A.in_transaction else None
        got = try_exec(self.A, sql, params)
        if err:
            if got is None:
                return "succeeded, but must fail with %r" % sorted(err)
            if norm(got) not in err:
                return "failed with %r (%s), want %r" % (str(got), errname(got), sorted(err))
            if before is not None:
                if snap(self.path) != before:
                    return "the failed autocommit statement changed the file"
                self.count("failed autocommit statements with the file byte-identical")
            self.count("failed " + kind + (" in txn" if self.A.in_transaction else " autocommit"))
            return None
        if got is not None:
            return "failed: %s (%s)" % (got, errname(got))
        ch = self.A.execute("SELECT changes()").fetchone()[0]
        if nchanges is not None and ch != nchanges:
            return "changes() = %d, want %d" % (ch, nchanges)
        self.apply(writes, e0, new_e0)
        self.count(kind)
        return None

    # -- operations
    def op_insert_values(self, e0, bad):
        n = 1 if self.rng.random() < 0.5 else self.rng.randint(2, 8)
        rows = []
        for i in range(n):
            c = self.good_coords(e0) if not (bad and i == n - 1) else None
            v = self.good_value()
            if bad and i == n - 1:
                if self.rng.random() < 0.6:
                    c, v = self.good_coords(e0), self.bad_value()
                else:
                    c = self.bad_coords(e0)
            rows.append(list(c) + [v])
        names = self.cols + [self.vcol]
        perm = list(range(self.nd + 1))
        if self.rng.random() < 0.3:
            self.rng.shuffle(perm)
        collist = "" if perm == list(range(self.nd + 1)) and self.rng.random() < 0.5 else \
            "(%s)" % ", ".join(names[i] for i in perm)
        if self.rng.random() < 0.3 and all(not isinstance(x, int) or -2**63 <= x < 2**63
                                           for r in rows for x in r):
            sql = "INSERT INTO t%s VALUES %s" % (collist, ", ".join(
                "(%s)" % ",".join("?" * (self.nd + 1)) for _ in rows))
            params = [r[i] for r in rows for i in perm]
            model = [tuple(r) for r in rows]
        else:
            values = ", ".join("(%s)" % ", ".join(lit(r[i]) for i in perm) for r in rows)
            sql = "INSERT INTO t%s VALUES %s" % (collist, values)
            params = ()
            got = self.A.execute("VALUES " + values).fetchall()
            inv = [perm.index(i) for i in range(self.nd + 1)]
            model = [tuple(g[inv[i]] for i in range(self.nd + 1)) for g in got]
        err, writes, ne0 = self.insert_effect(model, e0)
        return self.execute(sql, params, {err} if err else None, writes, e0, ne0, len(model),
                            "insert values" if n == 1 else "insert multi-row")

    def op_insert_many(self, e0, bad):
        """executemany: one autocommit statement per row (or one each inside BEGIN)."""
        n = self.rng.randint(2, 5)
        rows = [self.good_coords(e0) + [self.good_value()] for _ in range(n)]
        if bad:
            rows[-1][-1] = self.bad_value()
            if isinstance(rows[-1][-1], int) and not -2**63 <= rows[-1][-1] < 2**63:
                rows[-1][-1] = "y"
        sql = "INSERT INTO t VALUES(%s)" % ",".join("?" * (self.nd + 1))
        self.history.append("executemany %s -- %r" % (sql, rows))
        want_err = None
        plan_rows = []
        e = e0
        for r in rows:
            err, writes, ne = self.insert_effect([tuple(r)], e)
            if err:
                want_err = err
                break
            plan_rows.append((writes, e, ne))
            e = ne
        try:
            self.A.executemany(sql, rows)
            got = None
        except sqlite3.Error as ex:
            got = ex
        if want_err and (got is None or norm(got) != want_err):
            return "executemany: got %r, want error %r" % (got, want_err)
        if not want_err and got is not None:
            return "executemany failed: %s" % got
        for writes, a, b in plan_rows:
            self.apply(writes, a, b)
        self.count("executemany" + (" with a failing row" if want_err else ""))
        return None

    def op_insert_select(self, e0, bad):
        names = ", ".join(self.cols + [self.vcol])
        r = self.rng.random()
        if r < 0.35 or e0 == 0:
            # from a CTE: every cell of some rows of the first dimension (whole chunks), or a
            # scattered walk
            lo0 = self.rng.randint(0, max(e0 - 1, 0)) if e0 else 0
            hi0 = min(self.cap0, lo0 + self.rng.randint(1, 2 * self.chunks[0]))
            per = self.strides[0]
            n = (hi0 - lo0) * per
            if self.rng.random() < 0.5:
                cs = ["%d + i / %d" % (lo0, per)]
                cs += ["(i / %d) %% %d" % (self.strides[k], self.shape[k])
                       for k in range(1, self.nd)]
            else:
                n = self.rng.randint(1, 40)
                cs = ["(i * %d + %d) %% %d" % (self.rng.randint(1, 7), self.rng.randint(0, 9),
                                               max(hi0, 1))]
                cs += ["(i * %d + %d) %% %d" % (self.rng.randint(1, 7), self.rng.randint(0, 9),
                                                self.shape[k]) for k in range(1, self.nd)]
            if self.dt.isfloat:
                ve = self.rng.choice(["i * 0.25 - %d" % self.rng.randint(0, 50),
                                      "CASE WHEN i % 7 = 0 THEN NULL ELSE i * 0.5 END", "i"])
            elif self.dt.hi == 1:
                ve = self.rng.choice(["i % 2", "(i / 3) % 2"])
            else:
                span = min(self.dt.hi - self.dt.lo + 1, 200)
                ve = "(i * %d) %% %d + %d" % (self.rng.randint(1, 9), span, max(self.dt.lo, -100))
            if bad:
                ve = "CASE WHEN i = %d THEN %s ELSE %s END" % (n - 1, lit(self.bad_value()), ve)
            with_ = ("WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c "
                     "WHERE i < %d)" % (n - 1))
            sel = "SELECT %s, %s FROM c ORDER BY i" % (", ".join(cs), ve)
            sql = "%s INSERT INTO t(%s) %s" % (with_, names, sel)
            model = self.A.execute(with_ + " " + sel).fetchall()
            kind = "insert select cte"
        else:
            src = "t" if r < 0.6 else "p"
            ct, cp = self.cond(e0)
            s0 = 0
            if self.rng.random() < 0.3:
                s0 = self.rng.randint(1, 3)
                lo = self.rng.randint(max(0, e0 - 3), max(0, e0 - 1))
                extra = "%s BETWEEN %d AND %d" % (self.cols[0], lo,
                                                  min(e0 - 1, self.cap0 - 1 - s0))
                ct = extra if ct is None else ct + " AND " + extra
                cp = extra if cp is None else cp + " AND " + extra
            cs = ["%s + %d" % (self.cols[0], s0)] if s0 else [self.cols[0]]
            for k in range(1, self.nd):
                if self.rng.random() < 0.2:
                    cs.append("(%s + %d) %% %d" % (self.cols[k], self.rng.randint(1, 3),
                                                   self.shape[k]))
                elif self.rng.random() < 0.05:
                    cs.append("%s + 1" % self.cols[k])  # out of range at the last index
                else:
                    cs.append(self.cols[k])
            ve = self.value_expr()
            if bad:
                ve = "CASE WHEN %s = (SELECT max(%s) FROM p) THEN %s ELSE %s END" % (
                    self.cols[-1], self.cols[-1], lit(self.bad_value()), ve)
            where_t = (" WHERE " + ct) if ct else ""
            where_p = (" WHERE " + cp) if cp else ""
            sql = "INSERT INTO t(%s) SELECT %s, %s FROM %s%s ORDER BY %s" % (
                names, ", ".join(cs), ve.replace("{T}", src), src,
                where_t if src == "t" else where_p, self.order)
            model = self.A.execute("SELECT %s, %s FROM p%s ORDER BY %s" % (
                ", ".join(cs), ve.replace("{T}", "p"), where_p, self.order)).fetchall()
            kind = "insert select from " + ("itself" if src == "t" else "plain table")
        err, writes, ne0 = self.insert_effect(model, e0)
        return self.execute(sql, (), {err} if err else None, writes, e0, ne0, len(model), kind)

    def op_update(self, e0, bad):
        ct, cp = self.cond(e0)
        ve = self.value_expr()
        if bad and self.rng.random() < 0.5:
            ve = "CASE WHEN %s = %d THEN %s ELSE %s END" % (
                self.cols[-1], self.shape[-1] - 1, lit(self.bad_value()), ve)
        sets = "%s = %s" % (self.vcol, ve.replace("{T}", "t"))
        dim_change = None
        if self.rng.random() < 0.1 or (bad and "CASE" not in ve):
            k = self.rng.randrange(self.nd)
            d = 1 if bad else 0
            sets += ", %s = %s + %d" % (self.cols[k], self.cols[k], d)
            dim_change = self.cols[k] if d else None
        sql = "UPDATE t SET %s%s" % (sets, (" WHERE " + ct) if ct else "")
        model = self.A.execute("SELECT %s, %s FROM p%s" % (
            self.order, ve.replace("{T}", "p"), (" WHERE " + cp) if cp else "")).fetchall()
        errs, writes = set(), []
        for row in model:
            ok, st = fit(self.dt, row[self.nd])
            if not ok:
                errs.add(value_msg(self.A, self.dt.name, self.vcol, row[self.nd]))
            elif dim_change:
                errs.add("caterva: dimension column %s cannot change (cells do not move)" %
                         dim_change)
            else:
                writes.append((tuple(row[:self.nd]), st))
        return self.execute(sql, (), errs, writes, e0, e0, len(model),
                            "update" + (" all" if ct is None else ""))

    def op_delete(self, e0, bad):
        ct, cp = self.cond(e0)
        sql = "DELETE FROM t%s" % ((" WHERE " + ct) if ct else "")
        model = self.A.execute("SELECT %s FROM p%s" % (
            self.order, (" WHERE " + cp) if cp else "")).fetchall()
        writes = [(tuple(r), self.fill) for r in model]
        return self.execute(sql, (), None, writes, e0, e0, len(model),
                            "delete" + (" all" if ct is None else ""))

    def op_txn(self):
        r = self.rng.random()
        intx = self.A.in_transaction
        if not intx:
            self.txn_snap = snap(self.path)
            if r < 0.6:
                sql, kind = "BEGIN", "begin"
            else:
                self.nsp += 1
                sql, kind = "SAVEPOINT s%d" % self.nsp, "savepoint (starts txn)"
                self.sp.append("s%d" % self.nsp)
        elif r < 0.25:
            sql, kind = "COMMIT", "commit"
            self.sp = []
        elif r < 0.4:
            sql, kind = "ROLLBACK", "rollback"
            self.sp = []
        elif r < 0.65 or not self.sp:
            self.nsp += 1
            sql, kind = "SAVEPOINT s%d" % self.nsp, "savepoint"
            if self.sp:
                kind = "nested savepoint"
            self.sp.append("s%d" % self.nsp)
        elif r < 0.8:
            i = self.rng.randrange(len(self.sp))
            sql, kind = "RELEASE %s" % self.sp[i], "release"
            self.sp = self.sp[:i]
        else:
            i = self.rng.randrange(len(self.sp))
            sql, kind = "ROLLBACK TO %s" % self.sp[i], "rollback to"
            self.sp = self.sp[:i + 1]
        self.history.append(sql)
        try:
            self.A.execute(sql)
        except sqlite3.Error as e:
            return "%s failed: %s" % (sql, e)
        self.count(kind)
        if sql == "ROLLBACK":
            if snap(self.path) != self.txn_snap:
                return "ROLLBACK did not leave the file byte-identical to before the transaction"
            self.count("rollbacks byte-identical")
        return None

    def step(self):
        e0 = self.ext0()
        r = self.rng.random()
        intx = self.A.in_transaction
        if r < (0.22 if intx else 0.10):
            return self.op_txn()
        bad = self.rng.random() < 0.12
        r = self.rng.random()
        if r < 0.30:
            return self.op_insert_values(e0, bad)
        if r < 0.37:
            return self.op_insert_many(e0, bad)
        if r < 0.55:
            return self.op_insert_select(e0, bad)
        if r < 0.83:
            return self.op_update(e0, bad)
        return self.op_delete(e0, False)

    def check(self, i, last_op_commit):
        """After step i: t equals p; the reader and, after a commit, a fresh connection see
        the committed content."""
        rp = self.rows("p")
        rt = self.rows("t")
        if rt != rp:
            bad = [(a, b) for a, b in zip(rt, rp) if a != b][:5]
            return "t differs from the plain table (%d vs %d rows): first differences " \
                "(t, p) %r" % (
                len(rt), len(rp), bad)
        err = stats_problem(self.A, "t")
        if err:
            return "writer: " + err
        commit = False
        if not self.A.in_transaction:
            commit = rp != self.committed or last_op_commit
            self.committed = rp
        got = self.rows("r", self.R)
        self.count("reader checks")
        if got != self.committed:
            return "reader connection: %d rows, committed %d, first differences %r" % (
                len(got), len(self.committed),
                [(a, b) for a, b in zip(got, self.committed) if a != b][:5])
        if commit or (self.A.in_transaction and i % 7 == 0):
            B = connect()
            try:
                B.execute(self.open_sql("f"))
                got = self.rows("f", B)
                err = stats_problem(B, "f")
            finally:
                B.close()
            if err:
                return "fresh connection: " + err
            self.count("fresh connection checks" + (" in txn" if self.A.in_transaction else ""))
            if got != self.committed:
                return "fresh connection: %d rows, committed %d, first differences %r" % (
                    len(got), len(self.committed),
                    [(a, b) for a, b in zip(got, self.committed) if a != b][:5])
        return None

    def run(self, nsteps):
        done = 0
        base = self.cap0
        for i in range(nsteps):
            self.cap0 = base + i // 80  # the extent may keep growing slowly in long runs
            n_before = len(self.history)
            was = self.A.in_transaction
            err = self.step()
            done += 1
            if err is None:
                last = self.history[-1] if len(self.history) > n_before else ""
                commit_op = was and not self.A.in_transaction and not last.startswith("ROLLBACK")
                err = self.check(i, commit_op)
            if err:
                self.failed = "step %d: %s\nlast statements:\n%s" % (
                    i, err, "\n".join(self.history[-8:]))
                break
        if self.failed is None and self.A.in_transaction:
            self.A.execute("COMMIT")
            self.sp = []
            self.failed = self.check(nsteps, True)
        return done


def stats_problem(db, table):
    """None when every block of the table has statistics and they equal a recomputation
    from its items (caterva_stats_check; in a write transaction: the writer's own state),
    else a description."""
    st = json.loads(db.execute("SELECT caterva_stats_check(?)", (table,)).fetchone()[0])
    if st["wrong"] or st["with_stats"] != st["blocks"]:
        return "block statistics: %r" % st
    return None


def final_info(d):
    """caterva_info after the run: the shape grown, the attributes."""
    db = connect()
    try:
        info = json.loads(db.execute("SELECT caterva_info(?)", (d.path,)).fetchone()[0])
    finally:
        db.close()
    e0 = d.ext0()
    ok = info["shape"] == [e0] + d.shape[1:]
    attrs = info.get("attributes", {})
    ok = ok and "_FillValue" in attrs and attrs["_FillValue"] == d.fill
    if d.spec.get("dims"):
        ok = ok and attrs.get("_ARRAY_DIMENSIONS") == d.cols
    return ok, "info %r, extent %d, fill %r" % (info, e0, d.fill)


def differential(tmp):
    rng = random.Random(SEED)
    total = 0
    per = max(1, STEPS // len(SPECS))
    stats = {}
    for spec in SPECS:
        d = Diff(spec, tmp, rng)
        t0 = time.time()
        d.setup()
        n = d.run(per)
        total += n
        report(d.failed is None, "%s (%s, shape %s, %s): t equals the plain table after each of "
               "%d steps; reader and fresh connections saw only committed content" % (
                   d.name, spec["dtype"], spec["shape"], spec["opts"], n), d.failed)
        ok, detail = final_info(d)
        report(ok, "%s: caterva_info shows the final extent %d, _FillValue and dimensions" % (
            d.name, d.ext0()), detail)
        for k, v in d.stats.items():
            stats[k] = stats.get(k, 0) + v
        print("# %s: %d steps in %.1f s, extent %d -> %d" % (d.name, n, time.time() - t0,
                                                             spec["shape"][0], d.ext0()))
        d.close()
    print("# differential steps run: %d (CATERVA_WRITE_STEPS=%d, seed %d)" % (total, STEPS, SEED))
    for k in sorted(stats):
        print("#   %-40s %d" % (k, stats[k]))
    # the sequence exercised what it is meant to
    need = ["growth", "insert values", "insert multi-row", "executemany", "insert select cte",
            "insert select from itself", "insert select from plain table", "update", "delete",
            "commit", "rollback", "nested savepoint", "release", "rollback to",
            "savepoint (starts txn)", "failed insert values autocommit",
            "failed insert multi-row in txn", "failed update in txn", "failed update autocommit",
            "failed insert select cte autocommit", "fresh connection checks",
            "fresh connection checks in txn", "executemany with a failing row",
            "failed autocommit statements with the file byte-identical",
            "rollbacks byte-identical"]
    missing = [k for k in need if stats.get(k, 0) == 0]
    report(not missing, "the random sequence exercised every kind of operation",
           "never: %s" % missing)
    return total


if __name__ == "__main__":
    # the differential test commits thousands of times: on a RAM file system where there is
    # one, since sparse arrays fsync at each commit whatever synchronous= says
    sys.exit(main("caterva-write-", differential, ram=True))

#!/usr/bin/env python3
"""Differential test of the caterva virtual table (TAP output).

Arrays of 1 to 4 dimensions, with shapes that chunks and blocks do not divide evenly and
size-1 dimensions, are written with tests/tools/mkarray from random data; the same cells go into a
plain SQLite table. Thousands of random queries then run against both and must agree
exactly: boxes, points, IN lists, empty results, bounds on chunk and block seams, inclusive
and exclusive bounds, REAL and text bounds, joins with a relational table, ORDER BY, LIMIT.

Environment: top_builddir (the build tree), CATERVA_DIFF_SEED (default 20240601),
CATERVA_DIFF_QUERIES (queries per array, default 700), CATERVA_PRELOAD (ASan runtime to
preload when the extension is built with ASan).
"""
import os
import random
import shutil
import sqlite3
import struct
import subprocess
import sys
import tempfile

from sqltap import cells, connect_ext, plan, report, reexec_with_preload


reexec_with_preload()

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")
MKARRAY = os.path.join(BUILD, "tests", "tools", "mkarray")
SEED = int(os.environ.get("CATERVA_DIFF_SEED", "20240601"))
NQ = int(os.environ.get("CATERVA_DIFF_QUERIES", "700"))

# name, dtype, shape, chunks, blocks, mkarray options
ARRAYS = [
    ("a1", "<i4", [37], [10], [3], ["-c", "blosclz"]),
    ("a2", "<f8", [13, 17], [5, 6], [2, 4], []),
    ("a3", "<u2", [7, 1, 11], [3, 1, 4], [2, 1, 3], ["-s", "-c", "lz4"]),
    ("a4", "<f4", [3, 5, 4, 6], [2, 3, 3, 4], [1, 2, 2, 3], ["-c", "zlib"]),
    ("a5", "|i1", [1, 9, 1], [1, 4, 1], [1, 3, 1], []),
    ("a6", "<i8", [20, 9], [20, 9], [7, 2], ["-c", "lz4hc"]),
]

FMT = {"<i4": "i", "<f8": "d", "<u2": "H", "<f4": "f", "|i1": "b", "<i8": "q"}

def product(xs):
    n = 1
    for x in xs:
        n *= x
    return n


def make_values(rng, dtype, n):
    if dtype == "<f8" or dtype == "<f4":
        vals = []
        for _ in range(n):
            r = rng.random()
            if r < 0.05:
                vals.append(float("nan"))
            elif r < 0.1:
                vals.append(float(rng.randint(-3, 3)))
            else:
                vals.append(rng.uniform(-1000, 1000))
        if dtype == "<f4":  # round through float32 like the file does
            vals = [struct.unpack("<f", struct.pack("<f", v))[0] for v in vals]
        return vals
    lo, hi = {"<i4": (-2**31, 2**31 - 1), "<u2": (0, 65535), "|i1": (-128, 127),
              "<i8": (-2**40, 2**40)}[dtype]
    return [rng.randint(lo, hi) if rng.random() < 0.8 else rng.randint(-5, 5) % (hi + 1)
            for _ in range(n)]


def seams(shape, chunks, blocks, k):
    s = {0, 1, shape[k] - 1, shape[k], shape[k] + 1, -1}
    for c in range(0, shape[k] + chunks[k], chunks[k]):
        for b in range(0, chunks[k] + blocks[k], blocks[k]):
            x = c + min(b, chunks[k])
            s.update({x - 1, x, x + 1})
    return sorted(s)


class Gen:
    """Random queries over one array."""

    def __init__(self, rng, name, shape, chunks, blocks, cols, vals):
        self.rng, self.name, self.shape = rng, name, shape
        self.chunks, self.blocks, self.cols = chunks, blocks, cols
        self.seam = [seams(shape, chunks, blocks, k) for k in range(len(shape))]
        self.vals = [v for v in vals if not (isinstance(v, float) and v != v)] or [0]
        self.edges = block_edges(shape, chunks, blocks, vals) or [0]

    def coord(self, k):
        r = self.rng.random()
        if r < 0.5:
            return self.rng.choice(self.seam[k])
        return self.rng.randint(-2, self.shape[k] + 2)

    def literal(self, k):
        """A bound: mostly integers, sometimes REALs, integral REALs, numeric text, NULL."""
        v = self.coord(k)
        r = self.rng.random()
        if r < 0.70:
            return str(v)
        if r < 0.80:
            return "%d.5" % v if v >= 0 else "(%d.5)" % v
        if r < 0.86:
            return "%d.0" % v if v >= 0 else "(%d.0)" % v
        if r < 0.92:
            return "'%d'" % v
        if r < 0.94:
            return "NULL"
        if r < 0.97:
            return "%d.25e0" % v if v >= 0 else "(%d.75)" % v
        return "9223372036854775807" if self.rng.random() < 0.5 else "(-9223372036854775808)"

    def dim_terms(self, k):
        c = self.cols[k]
        r = self.rng.random()
        if r < 0.25:
            return []
        if r < 0.40:
            return ["%s = %s" % (c, self.literal(k))]
        if r < 0.55:
            return ["%s BETWEEN %s AND %s" % (c, self.literal(k), self.literal(k))]
        if r < 0.75:
            op1 = self.rng.choice([">", ">="])
            op2 = self.rng.choice(["<", "<="])
            t = []
            if self.rng.random() < 0.8:
                t.append("%s %s %s" % (c, op1, self.literal(k)))
            if self.rng.random() < 0.8:
                t.append("%s %s %s" % (c, op2, self.literal(k)))
            if self.rng.random() < 0.1:
                t.append("%s %s %s" % (c, self.rng.choice(["<", ">", "<=", ">="]),
                                       self.literal(k)))
            return t
        if r < 0.92:
            n = self.rng.randint(0, 6) if self.rng.random() < 0.9 else 40
            vals = [self.literal(k) for _ in range(n)] or ["-5"]
            t = ["%s IN (%s)" % (c, ", ".join(vals))]
            if self.rng.random() < 0.15:
                vals = [self.literal(k) for _ in range(self.rng.randint(1, 8))]
                t.append("%s IN (%s)" % (c, ", ".join(vals)))
            return t
        # a term the table does not handle
        return ["%s <> %s" % (c, self.literal(k))]

    def value_literal(self):
        """A bound on the value: a block's min or max (the edge of what its statistics
        allow), a cell's value, a value between, as INTEGER, REAL, text or NULL."""
        r = self.rng.random()
        if r < 0.45:
            v = self.rng.choice(self.edges)
        elif r < 0.75:
            v = self.rng.choice(self.vals)
        else:
            a, b = self.rng.choice(self.vals), self.rng.choice(self.vals)
            v = (a + b) / 2
        r = self.rng.random()
        if r < 0.05:
            return "NULL"
        if r < 0.10:
            return "'%r'" % v
        if isinstance(v, int) and r < 0.2:
            return "%d.0" % v if v >= 0 else "(%d.0)" % v
        if isinstance(v, float) and v == int(v) and abs(v) < 2**53 and r < 0.3:
            return "%d" % v if v >= 0 else "(%d)" % v
        return repr(v) if v >= 0 else "(%r)" % v

    def value_terms(self):
        """Constraints on the value column (pushed to the statistics, checked by SQLite)."""
        r = self.rng.random()
        if r < 0.45:
            return []
        op = self.rng.choice(["<", "<=", ">", ">=", "=", "BETWEEN", "IS NULL", "IS NOT NULL",
                              "range"])
        if op in ("IS NULL", "IS NOT NULL"):
            return ["value %s" % op]
        if op == "BETWEEN":
            return ["value BETWEEN %s AND %s" % (self.value_literal(), self.value_literal())]
        if op == "range":
            return ["value > %s" % self.value_literal(), "value <= %s" % self.value_literal()]
        return ["value %s %s" % (op, self.value_literal())]

    def where(self):
        terms = []
        for k in range(len(self.shape)):
            if self.rng.random() < 0.75:
                terms += self.dim_terms(k)
        terms += self.value_terms()
        if self.rng.random() < 0.1:
            terms.append("value IS NOT NULL")
        self.rng.shuffle(terms)
        return (" WHERE " + " AND ".join(terms)) if terms else ""

    def query(self):
        """(sql, ordered): ordered means the row order must match exactly."""
        w = self.where()
        cols = self.cols
        r = self.rng.random()
        allcols = ", ".join(cols + ["value"])
        if r < 0.35:
            return "SELECT %s FROM {T}%s" % (allcols, w), False
        if r < 0.50:
            sel = self.rng.choice(["count(*)", "count(value)", "min(value), max(value)",
                                   "count(*), min(%s), max(%s)" % (cols[0], cols[-1])])
            return "SELECT %s FROM {T}%s" % (sel, w), False
        if r < 0.58:
            return "SELECT %s FROM {T}%s" % (", ".join(cols), w), False
        if r < 0.80:
            # ORDER BY a permutation of all dimensions: a total order.
            order = list(cols)
            if self.rng.random() < 0.5:
                self.rng.shuffle(order)
            order = [c + (" DESC" if self.rng.random() < 0.2 else "") for c in order]
            lim = ""
            if self.rng.random() < 0.5:
                lim = " LIMIT %d" % self.rng.randint(0, 12)
                if self.rng.random() < 0.4:
                    lim += " OFFSET %d" % self.rng.randint(0, 5)
            return "SELECT %s FROM {T}%s ORDER BY %s%s" % (allcols, w, ", ".join(order), lim), True
        if r < 0.84:
            # ORDER BY a prefix of the dimensions: ties in any order (see compare()).
            m = self.rng.randint(1, len(cols))
            keys = cols[:m] if self.rng.random() < 0.8 else self.rng.sample(cols, m)
            return ("SELECT %s FROM {T}%s ORDER BY %s" % (allcols, w, ", ".join(keys)),
                    "prefix:" + ",".join(str(cols.index(k)) for k in keys))
        if r < 0.88:
            # LIMIT without ORDER BY: checked as a count plus a subset (see run()).
            lim = self.rng.randint(0, 15)
            off = self.rng.randint(0, 4) if self.rng.random() < 0.3 else 0
            return ("SELECT %s FROM {T}%s LIMIT %d OFFSET %d" % (allcols, w, lim, off),
                    "limit:%d:%d" % (lim, off))
        if r < 0.93:
            return ("SELECT DISTINCT %s FROM {T}%s LIMIT %d" %
                    (cols[0], w, self.rng.randint(1, 6)), "distinct")
        return ("SELECT %s, count(*), count(value) FROM {T}%s GROUP BY %s" %
                (cols[-1], w, cols[-1]), False)


def block_edges(shape, chunks, blocks, vals):
    """The min and max of every block's non-NaN values (the values at which a block's
    statistics change from "may match" to "cannot")."""
    per = {}
    for idx, c in enumerate(cells(shape)):
        v = vals[idx]
        if isinstance(v, float) and v != v:
            continue
        key = tuple((x // ch, (x % ch) // b) for x, ch, b in zip(c, chunks, blocks))
        lo, hi = per.get(key, (v, v))
        per[key] = (min(lo, v), max(hi, v))
    out = []
    for lo, hi in per.values():
        out += [lo, hi]
    return out


def canon(rows):
    out = []
    for r in rows:
        out.append(tuple(("nan",) if isinstance(x, float) and x != x else x for x in r))
    return out


def sort_key(row):
    return tuple((0, "") if x is None else (1, repr(type(x)), x) for x in row)


def run_query(db, sql, table):
    try:
        return db.execute(sql.replace("{T}", table)).fetchall(), None
    except sqlite3.Error as e:
        return None, str(e)


PLANS = {"ordered scan (idxNum & 2)": 0, "LIMIT pushed (L*)": 0, "IN list (F)": 0,
         "range bounds (B..E)": 0, "equality (A)": 0, "ORDER BY consumed": 0,
         "value constraint (~)": 0, "value IS [NOT] NULL (idxNum & 12)": 0}


def tally_plan(db, sql):
    """Count which features of the module the plan of a query uses."""
    try:
        plan = db.execute("EXPLAIN QUERY PLAN " + sql.replace("{T}", "t")).fetchall()
    except sqlite3.Error:
        return
    text = " ".join(str(x[-1]) for x in plan)
    for tok in text.split():
        if ":" in tok and tok.split(":")[0].isdigit():
            num, plan_str = tok.split(":", 1)
            PLANS["ordered scan (idxNum & 2)"] += int(num) & 2 != 0
            PLANS["LIMIT pushed (L*)"] += "L*" in plan_str
            PLANS["IN list (F)"] += "F" in plan_str[0::2]
            PLANS["range bounds (B..E)"] += any(c in plan_str[0::2] for c in "BCDE")
            PLANS["equality (A)"] += "A" in plan_str[0::2]
            PLANS["value constraint (~)"] += "~" in plan_str[1::2]
            PLANS["value IS [NOT] NULL (idxNum & 12)"] += int(num) & 12 != 0
    if "ORDER BY" in sql and "TEMP B-TREE FOR ORDER BY" not in text:
        PLANS["ORDER BY consumed"] += 1


def compare(db, sql, mode):
    got, e1 = run_query(db, sql, "t")
    want, e2 = run_query(db, sql, "p")
    if e1 or e2:
        return e1 == e2 or (e1 is not None and e2 is not None), "errors: %s / %s" % (e1, e2)
    got, want = canon(got), canon(want)
    if mode is True:
        return got == want, "got %r\nwant %r" % (got[:20], want[:20])
    if mode is False:
        return sorted(got, key=sort_key) == sorted(want, key=sort_key), \
            "got %r\nwant %r" % (sorted(got, key=sort_key)[:20], sorted(want, key=sort_key)[:20])
    if isinstance(mode, str) and mode.startswith("prefix:"):
        idx = [int(i) for i in mode[7:].split(",")]
        ok = [tuple(r[i] for i in idx) for r in got] == [tuple(r[i] for i in idx) for r in want]
        ok = ok and sorted(got, key=sort_key) == sorted(want, key=sort_key)
        return ok, "got %r\nwant %r" % (got[:20], want[:20])
    if mode == "distinct":
        # DISTINCT with LIMIT and no ORDER BY: any distinct values, as many as there are.
        full = set(x[0] for x in run_query(db, sql.split(" LIMIT ")[0], "p")[0])
        ok = len(set(got)) == len(got) and all(g[0] in full for g in got) and \
            len(got) == min(len(full), len(want))
        return ok, "got %r, all %r" % (got, sorted(full))
    # limit:L:O -- the right number of rows, each a row of the unlimited result.
    _, lim, off = mode.split(":")
    full = canon(run_query(db, sql.split(" LIMIT ")[0], "p")[0])
    n = max(0, min(int(lim), len(full) - int(off)))
    pool = {}
    for r in full:
        pool[r] = pool.get(r, 0) + 1
    ok = len(got) == n
    for r in got:
        if pool.get(r, 0) <= 0:
            ok = False
        pool[r] = pool.get(r, 0) - 1
    return ok, "got %d rows %r, want %d rows from %d" % (len(got), got[:10], n, len(full))


def make_array(tmp, rng, spec):
    name, dtype, shape, chunks, blocks, opts = spec
    n = product(shape)
    vals = make_values(rng, dtype, n)
    raw = os.path.join(tmp, name + ".raw")
    with open(raw, "wb") as f:
        f.write(struct.pack("<%d%s" % (n, FMT[dtype]), *vals))
    path = os.path.join(tmp, name + (".b2frame" if "-s" in opts else ".b2nd"))
    cmd = [MKARRAY] + opts + [path, raw, dtype, ",".join(map(str, shape)),
                              ",".join(map(str, chunks)), ",".join(map(str, blocks))]
    subprocess.run(cmd, check=True)
    return path, vals


def load_plain(db, shape, vals, cols, dtype):
    """The plain table; its value column has the caterva column's type, so that bounds of
    another type (text) convert the same way on both sides."""
    db.execute("DROP TABLE IF EXISTS p")
    db.execute("CREATE TABLE p(%s, value %s)" % (", ".join("%s INTEGER" % c for c in cols),
                                                 "REAL" if dtype[1] == "f" else "INTEGER"))
    rows = []
    for idx, c in enumerate(cells(shape)):
        v = vals[idx]
        if isinstance(v, float) and v != v:
            v = None
        rows.append(c + (v,))
    db.executemany("INSERT INTO p VALUES(%s)" % ",".join("?" * (len(shape) + 1)), rows)


def load_relational(db, rng, shape):
    """r(id, a, b): coordinates for joins, some outside the array, some NULL or REAL."""
    db.execute("DROP TABLE IF EXISTS r")
    db.execute("CREATE TABLE r(id INTEGER PRIMARY KEY, a, b)")
    rows = []
    for i in range(60):
        def pick(k):
            k = min(k, len(shape) - 1)
            r = rng.random()
            if r < 0.05:
                return None
            if r < 0.1:
                return rng.randint(0, shape[k]) + 0.5
            if r < 0.15:
                return float(rng.randint(0, shape[k] - 1))
            return rng.randint(-1, shape[k])
        rows.append((i, pick(0), pick(1)))
    db.executemany("INSERT INTO r VALUES(?,?,?)", rows)


def join_queries(rng, cols, shape):
    qs = []
    c0, c1 = cols[0], cols[min(1, len(cols) - 1)]
    for _ in range(40):
        extra = ""
        if len(cols) > 2 and rng.random() < 0.6:
            k = rng.randint(2, len(cols) - 1)
            lo = rng.randint(-1, shape[k])
            extra = " AND t.%s BETWEEN %d AND %d" % (cols[k], lo, lo + rng.randint(0, 3))
        on = "t.%s = r.a" % c0
        if len(cols) > 1 and rng.random() < 0.8:
            on += " AND t.%s = r.b" % c1
        r = rng.random()
        if r < 0.4:
            qs.append(("SELECT r.id, t.%s FROM r JOIN {T} t ON %s%s" %
                       (", t.".join(cols + ["value"]), on, extra), False))
        elif r < 0.6:
            qs.append(("SELECT r.id, count(*), count(t.value) FROM r JOIN {T} t ON %s%s "
                       "GROUP BY r.id" % (on, extra), False))
        elif r < 0.8:
            qs.append(("SELECT r.id, t.value FROM r LEFT JOIN {T} t ON %s%s" % (on, extra), False))
        else:
            qs.append(("SELECT r.id, (SELECT count(*) FROM {T} t WHERE %s%s) FROM r" %
                       (on.replace("t.", "t."), extra), False))
    # IN with a subquery and a self-join.
    qs.append(("SELECT %s, value FROM {T} WHERE %s IN (SELECT a FROM r)" % (c0, c0), False))
    qs.append(("SELECT x.%s, y.value FROM {T} x JOIN {T} y ON y.%s = x.%s AND y.%s = x.%s "
               "WHERE x.%s < 3" % (c0, c0, c0, c1, c1, c0), False))
    return qs


def check_plans(db, cols):
    """The inner side of a join looks cells up; it does not scan."""
    on = " AND ".join("t.%s = r.a" % c for c in cols[:1])
    plan = db.execute("EXPLAIN QUERY PLAN SELECT * FROM r JOIN t ON %s" % on).fetchall()
    text = " | ".join(str(x[-1]) for x in plan)
    # "A0": = on dimension 0's column (compared as a label when it has one, else an index)
    eq_lookup = "INDEX 1:A0" in text or "INDEX 0:A0" in text
    report(eq_lookup, "join plan looks up the array by the other table's column (%s)" % text)


def main():
    if not os.path.exists(MKARRAY):
        print("1..0 # SKIP mkarray is not built")
        return 0
    db = connect_ext(EXT)
    if db is None:
        return 0
    rng = random.Random(SEED)
    tmp = tempfile.mkdtemp(prefix="caterva-diff-")
    nquery = 0
    try:
        for spec in ARRAYS:
            name, dtype, shape, chunks, blocks, _ = spec
            path, vals = make_array(tmp, rng, spec)
            cols = ["d%d" % k for k in range(len(shape))]
            db.execute("DROP TABLE IF EXISTS t")
            db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', cache_mb=%d)" %
                       (path, rng.choice([0, 1, 64])))
            load_plain(db, shape, vals, cols, dtype)
            load_relational(db, rng, shape)
            gen = Gen(rng, name, shape, chunks, blocks, cols, vals)
            queries = [gen.query() for _ in range(NQ)] + join_queries(rng, cols, shape)
            bad = []
            for sql, mode in queries:
                ok, detail = compare(db, sql, mode)
                tally_plan(db, sql)
                nquery += 1
                if not ok:
                    bad.append("%s\n%s" % (sql.replace("{T}", "t"), detail))
            report(not bad, "%s %s %r chunks %r blocks %r: %d queries agree with a plain table"
                   % (name, dtype, shape, chunks, blocks, len(queries)),
                   "\n".join(bad[:5]) + ("\n(%d failures)" % len(bad) if bad else ""))
            check_plans(db, cols)
    finally:
        db.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print("# %d queries compared (seed %d); plans used: %s" %
          (nquery, SEED, ", ".join("%s %d" % kv for kv in PLANS.items())))
    plan()
    return 0


if __name__ == "__main__":
    sys.exit(main())

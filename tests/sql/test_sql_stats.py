#!/usr/bin/env python3
"""Block statistics from SQL (TAP output): building them for other writers' files, and
value predicates that skip blocks, proven by the blocks decompressed.

Golden arrays written by the reference c-blosc2 (no statistics) are copied, queried with
value predicates (every block decompressed: nothing to skip with), given statistics with
caterva_build_stats, checked with caterva_stats_check, and queried again: the same rows, the
raw bytes still read back exactly, and the blocks decompressed equal to the number of blocks
(inside the box) whose items, read here from the raw file, include a match.

Environment: top_builddir, CATERVA_GOLDEN, CATERVA_PRELOAD.
"""
import json
import math
import os
import shutil
import sqlite3
import struct
import sys
import tempfile

from sqltap import cells, plan, report, reexec_with_preload, skip

reexec_with_preload()

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")
GOLDEN = os.environ.get("CATERVA_GOLDEN", "")

CASES = ["s10_f64_3d_smooth_zstd1", "s04_u16_2d_steps_zlib_bitshuffle_sparse",
         "s21_f64_2d_nans", "s05_i32_2d_smooth_lz4hc9", "s08_u64_3d_steps_lz4_1_nofilter"]
FMT = {"<f8": "d", "<f4": "f", "<u2": "H", "<i4": "i", "<u8": "Q", "<i8": "q", "|i1": "b"}


def connect():
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def load_case(name):
    man = json.load(open(os.path.join(GOLDEN, "manifest.json")))
    case = [c for c in man["cases"] if c["name"] == name][0]
    raw = open(os.path.join(GOLDEN, case["raw_file"]), "rb").read()
    n = len(raw) // case["itemsize"]
    vals = list(struct.unpack("<%d%s" % (n, FMT[case["numpy_dtype"]]), raw))
    return case, vals


def block_of(c, chunks, blocks):
    return tuple((x // ch, (x % ch) // b) for x, ch, b in zip(c, chunks, blocks))


def expected_blocks(case, vals, box, may):
    """Blocks intersecting the box whose statistics, computed here from the raw items (min
    and max of the present ones, NaN and present counts), allow a match: may(min, max,
    nnan, nvalid)."""
    per = {}
    for idx, c in enumerate(cells(case["shape"])):
        key = block_of(c, case["chunkshape"], case["blockshape"])
        s = per.setdefault(key, [None, None, 0, 0, False])
        v = vals[idx]
        if all(lo <= x <= hi for x, (lo, hi) in zip(c, box)):
            s[4] = True
        if isinstance(v, float) and math.isnan(v):
            s[2] += 1
            continue
        s[0] = v if s[0] is None else min(s[0], v)
        s[1] = v if s[1] is None else max(s[1], v)
        s[3] += 1
    return sum(1 for s in per.values() if s[4] and may(*s[:4]))


def all_blocks(case, box):
    seen = set()
    for c in cells(case["shape"]):
        if all(lo <= x <= hi for x, (lo, hi) in zip(c, box)):
            seen.add(block_of(c, case["chunkshape"], case["blockshape"]))
    return len(seen)


def blocks_read(db):
    return db.execute("SELECT caterva_blocks_read()").fetchone()[0]


def run(db, sql):
    before = blocks_read(db)
    rows = db.execute(sql).fetchall()
    return rows, blocks_read(db) - before


def queries(case, vals):
    """(sql, box, python predicate) triples: thresholds at chosen quantiles, with and
    without a box on the first dimension."""
    good = sorted(v for v in vals if not (isinstance(v, float) and math.isnan(v)))
    shape = case["shape"]
    dims = ["d%d" % k for k in range(len(shape))]
    full = [(0, s - 1) for s in shape]
    half = [(0, max(0, shape[0] // 2))] + full[1:]
    out = [("value IS NULL", full, lambda mn, mx, nn, nv: nn > 0),
           ("value IS NOT NULL AND %s >= 1" % dims[0], [(1, shape[0] - 1)] + full[1:],
            lambda mn, mx, nn, nv: nv > 0)]
    if not good:
        return out, dims
    for q in (0.5, 0.9, 0.99):
        t = good[min(len(good) - 1, int(q * len(good)))]
        u = good[int((1 - q) * (len(good) - 1))]
        out.append(("value > %r" % t, full, lambda mn, mx, nn, nv, t=t: nv and mx > t))
        out.append(("value <= %r" % u, full, lambda mn, mx, nn, nv, u=u: nv and mn <= u))
        out.append(("value >= %r AND %s <= %d" % (t, dims[0], half[0][1]), half,
                    lambda mn, mx, nn, nv, t=t: nv and mx >= t))
    t = good[len(good) // 3]
    out.append(("value = %r" % t, full, lambda mn, mx, nn, nv: nv and mn <= t <= mx))
    lo, hi = good[len(good) // 4], good[len(good) // 3]
    out.append(("value BETWEEN %r AND %r" % (lo, hi), full,
                lambda mn, mx, nn, nv: nv and mn <= hi and mx >= lo))
    out.append(("value < '%r'" % lo, full, lambda mn, mx, nn, nv: nv and mn < lo))
    return out, dims


def check_case(tmp, name):
    case, vals = load_case(name)
    src = os.path.join(GOLDEN, case["file"])
    dst = os.path.join(tmp, case["file"])
    if os.path.isdir(src):
        shutil.copytree(src, dst)
    else:
        shutil.copy(src, dst)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', cache_mb=0)" % dst)
    info = json.loads(db.execute("SELECT caterva_info('t')").fetchone()[0])
    report(info["blockstats"] is False, "%s: a reference-written file has no statistics" % name)
    qs, dims = queries(case, vals)
    cols = ", ".join(dims + ["value"])
    # Reference files whose chunks are special (all NaN, all zeros) are read without
    # decompressing anything: the counts are checked on the others.
    counted = case.get("special", "none") == "none"
    before = []
    for where, box, pred in qs:
        rows, nblk = run(db, "SELECT %s FROM t WHERE %s" % (cols, where))
        before.append(rows)
        if counted and nblk != all_blocks(case, box):
            report(False, "%s: without statistics %s decompresses every block of its box" %
                   (name, where), "%d, expected %d" % (nblk, all_blocks(case, box)))
            break
    else:
        report(True, "%s: without statistics every query decompresses every block of its box"
               % name)
    nchunk = db.execute("SELECT caterva_build_stats('t')").fetchone()[0]
    # the next statement reopens the array (another handle committed): reading its
    # attributes decompresses their chunks, which the counter also counts
    db.execute("SELECT count(*) FROM t WHERE d0 < 0").fetchall()
    st = json.loads(db.execute("SELECT caterva_stats_check('t')").fetchone()[0])
    report(nchunk > 0 and st["wrong"] == 0 and st["with_stats"] == st["blocks"] > 0,
           "%s: caterva_build_stats gives every block exact statistics" % name, repr(st))
    info = json.loads(db.execute("SELECT caterva_info('t')").fetchone()[0])
    report(info["blockstats"] is True, "%s: caterva_info reports them" % name)
    bad = []
    for (where, box, pred), rows0 in zip(qs, before):
        rows, nblk = run(db, "SELECT %s FROM t WHERE %s" % (cols, where))
        want = expected_blocks(case, vals, box, pred) if counted else 0
        if sorted(rows) != sorted(rows0) or nblk != want:
            bad.append("%s: %d rows (before %d), %d blocks decompressed, expected %d" %
                       (where, len(rows), len(rows0), nblk, want))
    report(not bad, "%s: with statistics the same rows, and exactly the blocks that hold a "
           "match are decompressed (%d queries)" % (name, len(qs)), "\n".join(bad))
    got = [r[0] for r in db.execute("SELECT value FROM t ORDER BY rowid")]
    same = all((a is None and isinstance(b, float) and math.isnan(b)) or a == b
               for a, b in zip(got, vals)) and len(got) == len(vals)
    report(same, "%s: after building the statistics every item still reads back exactly" % name)
    # a fresh connection sees them; a write keeps them exact
    db.close()
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s')" % dst)
    db.execute("UPDATE t SET value = value + 1 WHERE %s = 0" % dims[0])
    st = json.loads(db.execute("SELECT caterva_stats_check('t')").fetchone()[0])
    report(st["wrong"] == 0 and st["with_stats"] == st["blocks"],
           "%s: still exact after an UPDATE" % name, repr(st))
    db.close()


def check_plan_costs(tmp):
    """A selective value predicate makes the plan cheaper (fewer expected blocks)."""
    case, vals = load_case("s10_f64_3d_smooth_zstd1")
    dst = os.path.join(tmp, "cost.b2nd")
    shutil.copy(os.path.join(GOLDEN, case["file"]), dst)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', cache_mb=0)" % dst)
    db.execute("SELECT caterva_build_stats('t')")
    db.execute("SELECT count(*) FROM t WHERE d0 < 0").fetchall()
    good = sorted(vals)
    rows = db.execute("EXPLAIN QUERY PLAN SELECT count(*) FROM t WHERE value > ?",
                      (good[-2],)).fetchall()
    text = " ".join(str(r[-1]) for r in rows)
    report("~" in text, "a value constraint reaches xFilter (plan %s)" % text)
    rows, nblk = run(db, "SELECT count(*) FROM t WHERE value > %r" % good[-2])
    report(rows[0][0] == 1 and nblk == 1, "the largest item alone: one block decompressed "
           "(%d)" % nblk)
    rows, nblk = run(db, "SELECT count(*) FROM t WHERE value > %r" % good[-1])
    report(rows[0][0] == 0 and nblk == 0, "above the largest item: nothing decompressed (%d)" %
           nblk)
    rows, nblk = run(db, "SELECT count(*) FROM t WHERE value IS NULL")
    report(rows[0][0] == 0 and nblk == 0, "IS NULL on an array without NaN: nothing "
           "decompressed (%d)" % nblk)
    rows, nblk = run(db, "SELECT count(*) FROM t WHERE value > '%r'" % good[-2])
    report(rows[0][0] == 1 and nblk == 1, "a numeric text bound converts as SQLite does (%d)"
           % nblk)
    db.close()


def check_join_costs(tmp):
    """xBestIndex's costs reflect the blocks the statistics skip, so the planner puts the
    table with a selective value predicate (alone or with a box) outside a join, whichever
    order the FROM clause gives: proven by the plan and by the blocks decompressed, against
    the other order forced with CROSS JOIN (same result, many more blocks)."""
    case, vals = load_case("s10_f64_3d_smooth_zstd1")
    db = connect()
    for n in "ab":
        dst = os.path.join(tmp, "join_%s.b2nd" % n)
        shutil.copy(os.path.join(GOLDEN, case["file"]), dst)
        db.execute("CREATE VIRTUAL TABLE %s USING caterva('%s', cache_mb=0)" % (n, dst))
        db.execute("SELECT caterva_build_stats('%s')" % n)
        db.execute("SELECT count(*) FROM %s WHERE d0 < 0" % n).fetchall()
    x = sorted(vals)[int(0.995 * len(vals))]
    on = "a.d0 = b.d0 AND a.d1 = b.d1 AND a.d2 = b.d2"
    bad = []
    for first, second in (("a", "b"), ("b", "a")):
        for pred in (first, second):
            other = "b" if pred == "a" else "a"
            for box in ("", " AND %s.d0 BETWEEN 10 AND 39" % pred):
                where = "%s.value > %r%s" % (pred, x, box)
                q = "SELECT count(*), sum(%s.value) FROM %s JOIN %s ON %s WHERE %s" % (
                    other, first, second, on, where)
                forced = "SELECT count(*), sum(%s.value) FROM %s CROSS JOIN %s ON %s WHERE %s" \
                    % (other, other, pred, on, where)
                steps = [r[-1] for r in db.execute("EXPLAIN QUERY PLAN " + q)]
                rows, nblk = run(db, q)
                rows2, nblk2 = run(db, forced)
                outer_ok = steps and steps[0].startswith("SCAN %s " % pred) and "~" in steps[0]
                if not outer_ok or rows != rows2 or not rows[0][0] or not 2 * nblk < nblk2:
                    bad.append("%s: plan %r, %r in %d blocks; other order %r in %d" % (
                        q, steps, rows, nblk, rows2, nblk2))
    report(not bad, "joins: the table with the value predicate (alone or with a box) is put "
           "outside, whichever FROM order (8 queries), reading under half the blocks "
           "of the other order", "\n".join(bad))
    db.close()


AGG = {"count": "count(value)", "sum": "sum(value)", "mean": "avg(value)",
       "min": "min(value)", "max": "max(value)"}


def close(a, b, bound):
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    return abs(a - b) <= bound


def check_reduce(tmp, rng, path, label, nq):
    """Random reductions (ops, axes, boxes) against GROUP BY over the same table."""
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s')" % path)
    info = json.loads(db.execute("SELECT caterva_info('t')").fetchone()[0])
    shape = info["shape"]
    nd = len(shape)
    cols = [r[1] for r in db.execute("PRAGMA table_info(t)")][:nd]
    bad = []
    for _ in range(nq):
        op = rng.choice(list(AGG))
        red = [k for k in range(nd) if rng.random() < 0.6]
        keep = [k for k in range(nd) if k not in red]
        axes = ",".join(cols[k] if rng.random() < 0.7 else str(k) for k in red)
        if not red:
            axes = ""
            keep = []
        box = []
        for k in range(nd):
            r = rng.random()
            if r < 0.4:
                continue
            lo = rng.randint(-1, shape[k])
            hi = lo + rng.randint(0, max(1, shape[k] // 2))
            box.append((k, lo, hi, rng.random() < 0.5))
        wr = " AND ".join(("d%d BETWEEN %d AND %d" if b else "d%d >= %d AND d%d <= %d") %
                          ((k, lo, hi) if b else (k, lo, k, hi)) for k, lo, hi, b in box)
        wt = " AND ".join("%s BETWEEN %d AND %d" % (cols[k], lo, hi) for k, lo, hi, _ in box)
        sel = ", ".join("d%d" % k for k in keep)
        q1 = "SELECT %s%svalue, n FROM caterva_reduce('t', '%s', '%s')%s" % (
            sel, ", " if sel else "", op, axes, (" WHERE " + wr) if wr else "")
        gsel = ", ".join(cols[k] for k in keep)
        q2 = "SELECT %s%s%s, count(value), total(abs(value)) FROM t%s%s" % (
            gsel, ", " if gsel else "", AGG[op], (" WHERE " + wt) if wt else "",
            (" GROUP BY " + gsel) if gsel else "")
        try:
            got = sorted(db.execute(q1).fetchall(), key=lambda r: r[:len(keep)])
        except sqlite3.Error as e:
            bad.append("%s: %s" % (q1, e))
            continue
        want = sorted(db.execute(q2).fetchall(), key=lambda r: r[:len(keep)])
        # an empty box: caterva_reduce gives no row, an aggregate without GROUP BY one
        if not keep and got == [] and want and want[0][1] == 0:
            continue
        ok = len(got) == len(want)
        for g, w in zip(got, want):
            n = w[len(keep) + 1]
            bound = 4 * max(n, 1) * 2.0 ** -52 * (w[len(keep) + 2] or 0)
            if op == "mean":
                bound = bound / max(n, 1)
            if tuple(g[:len(keep)]) != tuple(w[:len(keep)]) or g[len(keep) + 1] != n or \
                    not close(g[len(keep)], w[len(keep)], bound):
                ok = False
                break
        if not ok:
            bad.append("%s\n  got %r\n  want %r" % (q1, got[:4], [w[:len(keep) + 2]
                                                               for w in want[:4]]))
    report(not bad, "%s: %d random reductions equal GROUP BY over the table" % (label, nq),
           "\n".join(bad[:4]))
    # the whole array's min and max come from the statistics alone
    if json.loads(db.execute("SELECT caterva_info('t')").fetchone()[0])["blockstats"]:
        db.execute("SELECT count(*) FROM t WHERE %s < 0" % cols[0]).fetchall()
        before = blocks_read(db)
        mx = db.execute("SELECT value FROM caterva_reduce('t', 'max', '')").fetchone()[0]
        mn = db.execute("SELECT value FROM caterva_reduce('t', 'min', '')").fetchone()[0]
        cnt = db.execute("SELECT value FROM caterva_reduce('t', 'count', '')").fetchone()[0]
        used = blocks_read(db) - before
        want = db.execute("SELECT max(value), min(value), count(value) FROM t").fetchone()
        report((mx, mn, cnt) == want and used == 0, "%s: whole-array max, min, count from the "
               "statistics alone (%d blocks decompressed)" % (label, used))
    db.close()


def make_labelled(tmp, name="labelled"):
    """A float64 array with coordinates: dates on time, regular degrees on lat, an explicit
    decreasing vector on lon; some NaN cells. Written through SQL (it keeps statistics)."""
    path = os.path.join(tmp, name + ".b2nd")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE w USING caterva('%s', shape='37,12,10', dtype=float64, "
               "chunks='16,8,6', blocks='5,4,3', dims='time,lat,lon', "
               "coords='time:2023-12-20:1 day,lat:-82.5:15.0:degrees_north')" % path)
    db.execute("INSERT INTO w(time_index, lat_index, lon_index, value) WITH RECURSIVE "
               "x(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM x WHERE v < 36), "
               "y(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM y WHERE v < 11), "
               "z(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM z WHERE v < 9) "
               "SELECT x.v, y.v, z.v, CASE WHEN (x.v * 5 + y.v * 3 + z.v) % 11 = 0 THEN NULL "
               "ELSE ((x.v * 37 + y.v * 13 + z.v * 7) % 97) * 0.75 - 20 END FROM x, y, z")
    lons = [350.0 - 33.5 * i for i in range(10)]
    db.commit()
    db.execute("SELECT caterva_set_coords('w', 'lon', ?)", (json.dumps(lons),))
    db.close()
    return path, lons


def label_bound(rng, k, lons):
    """A random comparison on dimension k's labels: (SQL operator text with one %s for the
    column, as the reduce column and the table column take it)."""
    if k == 0:
        d = lambda: "'%04d-%02d-%02d'" % rng.choice([(2023, 12, rng.randint(15, 31)),
                                                     (2024, 1, rng.randint(1, 31))])
        lo, hi = sorted([d(), d()])
    elif k == 1:
        lo, hi = sorted([rng.choice([-82.5 + 15 * rng.randint(0, 11), rng.uniform(-95, 95)])
                         for _ in range(2)])
    else:
        lo, hi = sorted([rng.choice([rng.choice(lons), rng.uniform(30, 360)])
                         for _ in range(2)])
    if rng.random() < 0.2:
        # an IN list: labels and values between them, repeated and unordered
        pool = [lo, hi] + [label_bound_value(rng, k, lons) for _ in range(rng.randint(0, 4))]
        return "%s IN (" + ", ".join(str(v) for v in rng.sample(pool, len(pool))) + ")"
    form = rng.choice(["%s BETWEEN {lo} AND {hi}", "%s >= {lo} AND %s < {hi}",
                       "%s > {lo}", "%s <= {hi}", "%s = {lo}"])
    return form.replace("{lo}", str(lo)).replace("{hi}", str(hi))


def label_bound_value(rng, k, lons):
    """One label of dimension k (or, for numbers, sometimes a value between labels)."""
    if k == 0:
        return "'2023-12-%02d'" % rng.randint(20, 31) if rng.random() < 0.5 else \
            "'2024-01-%02d'" % rng.randint(1, 25)
    if k == 1:
        return -82.5 + 15 * rng.randint(0, 11) if rng.random() < 0.8 else rng.uniform(-90, 90)
    return rng.choice(lons)


def check_reduce_labels(tmp, rng, nq):
    """caterva_reduce on an array with coordinates: its dk columns give the labels and take
    label bounds, dk_index gives and takes indices; against GROUP BY on the caterva table
    (whose columns are the labels), with and without the statistics."""
    path, lons = make_labelled(tmp)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s')" % path)
    cols = ["time", "lat", "lon"]
    bad = []
    for iq in range(nq):
        op = rng.choice(list(AGG))
        red = [k for k in range(3) if rng.random() < 0.5]
        keep = [k for k in range(3) if k not in red]
        if not red:
            red, keep = [0, 1, 2], []
        axes = ",".join(cols[k] for k in red)
        wr, wt = [], []
        for k in range(3):
            if rng.random() < 0.5:
                continue
            if rng.random() < 0.1:
                idx = ", ".join(str(rng.randint(-1, 12)) for _ in range(rng.randint(1, 5)))
                wr.append("d%d_index IN (%s)" % (k, idx))
                wt.append("%s_index IN (%s)" % (cols[k], idx))
            elif rng.random() < 0.25:
                lo = rng.randint(-1, 12)
                hi = lo + rng.randint(0, 8)
                wr.append("d%d_index BETWEEN %d AND %d" % (k, lo, hi))
                wt.append("%s_index BETWEEN %d AND %d" % (cols[k], lo, hi))
            else:
                form = label_bound(rng, k, lons)
                wr.append(form.replace("%s", "d%d" % k))
                wt.append(form.replace("%s", cols[k]))
        arr = "t" if iq % 2 == 0 else path  # a table, or the file itself
        sel = "".join("d%d, d%d_index, " % (k, k) for k in keep)
        q1 = "SELECT %svalue, n FROM caterva_reduce('%s', '%s', '%s')%s" % (
            sel, arr, op, axes, (" WHERE " + " AND ".join(wr)) if wr else "")
        gsel = "".join("%s, %s_index, " % (cols[k], cols[k]) for k in keep)
        grp = ", ".join(cols[k] for k in keep)
        q2 = "SELECT %s%s, count(value), total(abs(value)) FROM t%s%s" % (
            gsel, AGG[op], (" WHERE " + " AND ".join(wt)) if wt else "",
            (" GROUP BY " + grp) if grp else "")
        nk = 2 * len(keep)
        got = sorted(db.execute(q1).fetchall(), key=lambda r: r[:nk])
        want = sorted(db.execute(q2).fetchall(), key=lambda r: r[:nk])
        if not keep and got == [] and want and want[0][1] == 0:
            continue
        ok = len(got) == len(want)
        for g, w in zip(got, want):
            n = w[nk + 1]
            bound = 4 * max(n, 1) * 2.0 ** -52 * (w[nk + 2] or 0)
            if tuple(g[:nk]) != tuple(w[:nk]) or g[nk + 1] != n or \
                    not close(g[nk], w[nk], bound):
                ok = False
        if not ok:
            bad.append("%s\n  got %r\n  want %r" % (q1, got[:3], [w[:nk + 2] for w in want[:3]]))
    report(not bad, "an array with coordinates: %d random reductions with label and index "
           "bounds and IN lists (a reduced dimension over all the list, a kept one a row per "
           "member) equal GROUP BY on the table's label columns" % nq, "\n".join(bad[:4]))
    # the kinds of the label columns
    row = db.execute("SELECT d0, d0_index, d1, d1_index, d2, d2_index, typeof(d0), typeof(d1) "
                     "FROM caterva_reduce('t', 'count', '') LIMIT 1").fetchall()
    report(row == [(None, None, None, None, None, None, "null", "null")],
           "reduced dimensions are NULL in both columns", repr(row))
    want = db.execute("SELECT count(value) FROM t WHERE time = '2024-01-01' AND lat = 37.5 "
                      "AND lon = 182.5").fetchall()
    got = db.execute("SELECT value FROM caterva_reduce('t', 'count', '') WHERE "
                     "d0 = '2024-01-01' AND d1 = 37.5 AND d2 = 182.5").fetchall()
    report(got == want == [(1,)], "a point given by its labels (%r, %r)" % (got, want))
    row = db.execute("SELECT d0, d0_index, d2, d2_index, typeof(d0), typeof(d2) FROM "
                     "caterva_reduce('t', 'max', 'lat') WHERE d0_index = 12 AND "
                     "d2_index = 3").fetchall()
    report(row == [("2024-01-01", 12, lons[3], 3, "text", "real")],
           "kept dimensions: dates as ISO text, numbers as REAL, and their indices", repr(row))
    errs = []
    for where in ("d0 > 5", "d0 = '2023-02-30'", "d1 < 'north'"):
        try:
            db.execute("SELECT * FROM caterva_reduce('t', 'sum', 'time') WHERE " +
                       where).fetchall()
            errs.append(where + ": no error")
        except sqlite3.Error as e:
            if "caterva_reduce" not in str(e):
                errs.append(where + ": " + str(e))
    report(not errs, "a bound of the wrong kind on a label column is an error", "\n".join(errs))
    # the documented idiom for dimension-named columns: a TEMP VIEW; its bounds still reach
    # the function (fewer blocks decompressed than the whole array)
    db.execute("CREATE TEMP VIEW lat_mean AS SELECT d1 AS lat, d1_index AS lat_index, value "
               "FROM caterva_reduce('t', 'mean', 'time,lon')")
    before = blocks_read(db)
    got = db.execute("SELECT lat, value FROM lat_mean WHERE lat > 50 ORDER BY lat").fetchall()
    used = blocks_read(db) - before
    want = db.execute("SELECT lat, avg(value) FROM t WHERE lat > 50 GROUP BY lat "
                      "ORDER BY lat").fetchall()
    before = blocks_read(db)
    db.execute("SELECT lat, value FROM lat_mean").fetchall()
    whole = blocks_read(db) - before
    ok = len(got) == len(want) == 3 and all(
        g[0] == w[0] and abs(g[1] - w[1]) < 1e-9 for g, w in zip(got, want))
    report(ok and used < whole, "a TEMP VIEW names the columns and passes its bounds down "
           "(%d blocks, whole: %d)" % (used, whole), "%r\n%r" % (got, want))
    db.close()


def make_second_var(tmp):
    """An int32 array of the labelled array's shape with other chunks and blocks."""
    path = os.path.join(tmp, "humid.b2nd")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE h USING caterva('%s', shape='37,12,10', dtype=int32, "
               "chunks='10,12,4', blocks='3,5,2', dims='time,lat,lon')" % path)
    db.execute("INSERT INTO h(time, lat, lon, value) WITH RECURSIVE "
               "x(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM x WHERE v < 36), "
               "y(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM y WHERE v < 11), "
               "z(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM z WHERE v < 9) "
               "SELECT x.v, y.v, z.v, (x.v * 7 + y.v * 11 + z.v * 13) % 50 FROM x, y, z")
    db.commit()
    db.close()
    return path


def check_valpred_labels_vars(tmp, rng, nq):
    """Value predicates with label bounds, on a table of one array and on a table of two
    (the first drives the scan and its statistics prune; the second has its own layout):
    the rows equal those of the same query with the value comparisons hidden from the
    planner (+value), which reads every block of the box."""
    path, lons = make_labelled(tmp, "temp2")
    path2 = make_second_var(tmp)
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t1 USING caterva('%s', cache_mb=0)" % path)
    db.execute("CREATE VIRTUAL TABLE t2 USING caterva('%s', '%s', cache_mb=0)" % (path, path2))
    cols2 = [r[1] for r in db.execute("PRAGMA table_info(t2)")]
    vals = sorted(r[0] for r in db.execute("SELECT value FROM t1 WHERE value IS NOT NULL"))
    bad, pruned, total = [], {"t1": 0, "t2": 0}, 0
    for iq in range(nq):
        tab = "t1" if iq % 2 == 0 else "t2"
        vcol = cols2[3] if tab == "t2" else "value"
        q = [vals[int(rng.random() * (len(vals) - 1))] for _ in range(2)]
        lo, hi = min(q), max(q)
        pred = rng.choice(["{v} > %r" % hi, "{v} <= %r" % lo, "{v} BETWEEN %r AND %r" % (lo, hi),
                           "{v} = %r" % lo, "{v} IS NULL", "{v} IS NOT NULL",
                           "{v} >= %r AND {v} < %r" % (lo, hi)])
        where = [label_bound(rng, k, lons).replace("%s", ["time", "lat", "lon"][k])
                 for k in range(3) if rng.random() < 0.6]
        if tab == "t2" and rng.random() < 0.5:
            where.append("%s %s %d" % (cols2[4], rng.choice(["<", ">=", "="]),
                                       rng.randint(0, 49)))
        sel = "time, lat, lon, " + (", ".join(cols2[3:5]) if tab == "t2" else "value")
        w1 = " AND ".join(where + [pred.replace("{v}", vcol)])
        w2 = " AND ".join(where + [pred.replace("{v}", "+" + vcol)])
        got, n1 = run(db, "SELECT %s FROM %s WHERE %s" % (sel, tab, w1))
        want, n2 = run(db, "SELECT %s FROM %s WHERE %s" % (sel, tab, w2))
        total += 1
        pruned[tab] += n1 < n2
        if sorted(got, key=repr) != sorted(want, key=repr) or n1 > n2:
            bad.append("%s WHERE %s: %d rows in %d blocks, %d rows in %d blocks without the "
                       "pushdown" % (tab, w1, len(got), n1, len(want), n2))
    report(not bad and min(pruned.values()) > total // 8,
           "value predicates with label bounds, one-array and two-array tables (%s): %d "
           "queries equal the unpruned ones (%r read fewer blocks)" % (cols2, total, pruned),
           "\n".join(bad[:4]))
    db.close()


def make_nan_array(tmp):
    """A float32 array with NaN cells written through SQL (it keeps statistics)."""
    path = os.path.join(tmp, "nan.b2nd")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE m USING caterva('%s', shape='23,17,9', dtype=float32, "
               "chunks='10,8,9', blocks='4,3,5', dims='a,b,c')" % path)
    db.execute("INSERT INTO m(a, b, c, value) WITH RECURSIVE "
               "x(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM x WHERE v < 22), "
               "y(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM y WHERE v < 16), "
               "z(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM z WHERE v < 8) "
               "SELECT x.v, y.v, z.v, CASE WHEN (x.v * 7 + y.v * 3 + z.v) % 5 = 0 THEN NULL "
               "ELSE ((x.v * 31 + y.v * 17 + z.v * 7) % 101) - 50.25 END FROM x, y, z")
    db.close()
    return path


def check_foreign_stats(tmp):
    """Statistics written for other chunk bytes (a foreign writer changed the chunks and kept
    our trailer; here: copied from another array of the same geometry) are not used: value
    predicates, reductions and caterva_info give the answers of the data."""
    import subprocess
    db = connect()
    series = "WITH RECURSIVE n(v) AS (SELECT 0 UNION ALL SELECT v + 1 FROM n WHERE v < 59) "
    paths = [os.path.join(tmp, "fa.b2nd"), os.path.join(tmp, "fb.b2nd")]
    for path, k in zip(paths, (7919, 104723)):
        db.execute("CREATE VIRTUAL TABLE g USING caterva('%s', shape='40,60', dtype='float32', "
                   "chunks='20,30', blocks='10,10')" % path)
        db.execute(series + "INSERT INTO g(d0, d1, value) SELECT a.v, b.v, ((a.v * %d + b.v * "
                   "104729) %% 10007) * 0.001 FROM n a, n b WHERE a.v < 40" % k)
        db.execute("DROP TABLE g")
    stale = os.path.join(tmp, "fstale.b2nd")
    shutil.copy(paths[0], stale)
    subprocess.run([os.path.join(os.path.abspath(BUILD), "tests", "tools", "cpstats"), paths[1],
                    stale], check=True)
    qs = ["SELECT count(*), sum(value) FROM {t} WHERE value > 9.5",
          "SELECT count(*) FROM {t} WHERE value < 0.2 AND d0 < 30",
          "SELECT count(*), min(value), max(value) FROM {t} WHERE value BETWEEN 3 AND 3.5"]
    db.execute("CREATE VIRTUAL TABLE fa USING caterva('%s')" % paths[0])
    db.execute("CREATE VIRTUAL TABLE fs USING caterva('%s')" % stale)
    want = [db.execute(q.format(t="fa")).fetchall() for q in qs]
    got = [db.execute(q.format(t="fs")).fetchall() for q in qs]
    red = [db.execute("SELECT * FROM caterva_reduce('%s', 'sum')" % p).fetchall()
           for p in (paths[0], stale)]
    report(want == got and want[0][0][0] > 0 and red[0] == red[1],
           "statistics written for other chunk bytes are not used: value predicates and "
           "reductions give the data's answers", "%r %r %r" % (want, got, red))
    db.close()


SPECIAL_CASES = [  # dtype, fill option, the special chunks growth leaves
    ("int16", "", "zero"), ("int16", ", fill='-7'", "repeated value"),
    ("uint8", ", fill='200'", "repeated value"), ("float32", "", "NaN"),
    ("float64", ", fill='2.5'", "repeated value"),
    ("int64", ", fill='4611686018427387904'", "repeated value, sums overflowing"),
    ("uint64", ", fill='9223372036854775807'", "repeated value, sums overflowing")]
# 22 x 10 in chunks of 4 x 4 and blocks of 2 x 3: blocks wholly in the padding are not visited
SPECIAL_BLOCKS = 5 * (4 + 4 + 2) + (2 + 2 + 1)


def check_special_chunks(tmp):
    """Blocks of zero, NaN and repeated-value chunks (left by growth, edge blocks included)
    are checked from one item: caterva_stats_check finds them exact."""
    for dtype, fill, what in SPECIAL_CASES:
        path = os.path.join(tmp, "special_%s.b2nd" % dtype)
        db = connect()
        db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='0,10', dtype='%s', "
                   "chunks='4,4', blocks='2,3'%s)" % (path, dtype, fill))
        db.execute("INSERT INTO t(d0, d1, value) VALUES(21, 9, 1)")
        db.commit()
        st = json.loads(db.execute("SELECT caterva_stats_check('t')").fetchone()[0])
        report(st["wrong"] == 0 and st["with_stats"] == st["blocks"] == SPECIAL_BLOCKS,
               "%s%s: growth's %s chunks, edge blocks included, check exact" % (dtype, fill, what),
               repr(st))
        special_predicates(db, dtype, fill, what)
        db.close()
        os.unlink(path)


def special_predicates(db, dtype, fill, what):
    """Value predicates over special chunks (the filter decides once for all the blocks of a
    fill chunk): the rows of the same query without pushdown (value + 0), and no fill block
    decoded where the fill cannot match (only the 4 blocks of the chunk holding the row)."""
    f = fill.split("'")[1] if fill else ("NULL" if what == "NaN" else "0")
    box = " AND d0 BETWEEN 1 AND 21 AND d1 >= 2"
    if f == "NULL":
        preds = [("value IS NULL", False), ("value IS NOT NULL", True), ("value > 0", True),
                 ("value IS NULL" + box, False)]
    else:
        preds = [("value = %s" % f, False), ("value > %s" % f, True), ("value < %s" % f, True),
                 ("value >= %s" % f, False), ("value <> %s" % f, False),
                 ("value = %s" % f + box, False), ("value < %s" % f + box, True)]
    for pred, excludes in preds:
        plain = pred.replace("value", "(value + 0)")
        b0 = db.execute("SELECT caterva_blocks_read()").fetchone()[0]
        got = db.execute("SELECT count(*), sum(d0 * 10 + d1) FROM t WHERE " + pred).fetchall()
        read = db.execute("SELECT caterva_blocks_read()").fetchone()[0] - b0
        want = db.execute("SELECT count(*), sum(d0 * 10 + d1) FROM t WHERE " + plain).fetchall()
        report(got == want and (not excludes or read <= 4),
               "%s%s: `%s` over %s chunks gives the rows without pushdown (%r)%s"
               % (dtype, fill, pred, what, got,
                  ", decoding no fill block (%d read)" % read if excludes else ""),
               "%r %r read %d" % (got, want, read))


def check_interrupt(tmp):
    """sqlite3_interrupt() stops caterva_stats_check over a large grown array at once."""
    import threading
    import time
    path = os.path.join(tmp, "interrupted.b2nd")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='0,9', dtype='int16')" % path)
    db.execute("INSERT INTO t(d0, d1, value) VALUES(30182672135, 7, 7)")  # 8.3 M blocks
    db.commit()
    at = []
    timer = threading.Timer(0.3, lambda: (at.append(time.monotonic()), db.interrupt()))
    timer.start()
    err = ""
    try:
        db.execute("SELECT caterva_stats_check('t')").fetchone()
    except sqlite3.OperationalError as e:
        err = str(e)
    end = time.monotonic()
    timer.join()
    late = end - at[0] if at else -1
    report(err == "caterva_stats_check: interrupted" and 0 <= late < 1.0,
           "caterva_stats_check over 8.3 M blocks stops %.3f s after sqlite3_interrupt "
           "(bound 1 s)" % late, repr(err))
    db.close()
    os.unlink(path)


def main():
    if not os.path.exists(EXT + ".so"):
        print("1..0 # SKIP the extension is not built")
        return 0
    if not GOLDEN or not os.path.exists(os.path.join(GOLDEN, "manifest.json")):
        print("1..0 # SKIP no golden files (CATERVA_GOLDEN)")
        return 0
    tmp = tempfile.mkdtemp(prefix="caterva-stats-")
    try:
        for name in CASES:
            check_case(tmp, name)
        check_plan_costs(tmp)
        check_join_costs(tmp)
        import random
        rng = random.Random(int(os.environ.get("CATERVA_STATS_SEED", "4242")))
        nq = int(os.environ.get("CATERVA_REDUCE_QUERIES", "150"))
        for name in CASES:
            case, _ = load_case(name)
            check_reduce(tmp, rng, os.path.join(tmp, case["file"]), name, nq)
        check_reduce(tmp, rng, make_nan_array(tmp), "float32 with NaN written through SQL", nq)
        # the same reductions without statistics (a reference file, decompressing)
        case, _ = load_case("s05_i32_2d_smooth_lz4hc9")
        raw = os.path.join(tmp, "nostats_" + case["file"])
        shutil.copy(os.path.join(GOLDEN, case["file"]), raw)
        check_reduce(tmp, rng, raw, "s05 without statistics", nq)
        check_reduce_labels(tmp, rng, nq)
        check_valpred_labels_vars(tmp, rng, nq)
        check_foreign_stats(tmp)
        check_special_chunks(tmp)
        check_interrupt(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    plan()
    return 0


if __name__ == "__main__":
    sys.exit(main())

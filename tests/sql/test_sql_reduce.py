#!/usr/bin/env python3
"""caterva_reduce's statistics and calendar groups (TAP output), against references computed
here in Python from the values written.

For every CF calendar the labels support (standard across 1582-10-15, proleptic_gregorian,
noleap, all_leap, 360_day; daily and 12-hourly steps), an array time x lat x lon of float64
values of mixed magnitudes with NaN cells is written through SQL; the calendar dates of its
time indices are computed here by stepping day by day through each calendar's month lengths
(independently of core/labels.c). Random reductions -- grouping (year, month, season,
dayofyear, N days/months/years) or reducing time, keeping or reducing lat and lon, random
boxes in dates and indices, IN lists -- are compared with the reference: groups, coordinates
and counts exactly, min and max exactly, sums within the documented bound
(B + 3) * 2^-53 * sum|x| against math.fsum (B: items of a block), mean within that bound / n,
std within 1e-9 relative (of a two-pass reference). Plain SQL GROUP BY with strftime gives the
same groups and counts (Gregorian calendar). The box limits the blocks read (exactly the
blocks intersecting it, with std), statistics answer blocks (fewer read for mean than std,
the same results), and the results are bit-identical with 1, 2 and 3 threads.

Environment: top_builddir, CATERVA_PRELOAD.
"""
import datetime
import functools
import math
import os
import random
import sqlite3
import sys
import tempfile

from sqltap import plan, report, reexec_with_preload

reexec_with_preload()

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")
U = 2.0 ** -53

# (name, calendar, start (y, m, d), hours per step, steps, chunks, blocks)
CASES = [
    ("standard", "standard", (1582, 8, 20), 24, 120, (50, 3, 4), (7, 2, 2)),
    ("gregorian", "standard", (1999, 11, 20), 24, 800, (64, 3, 4), (10, 2, 2)),
    ("proleptic", "proleptic_gregorian", (2023, 12, 1), 12, 900, (100, 5, 2), (25, 2, 2)),
    ("noleap", "noleap", (1999, 11, 20), 24, 800, (64, 3, 4), (10, 2, 2)),
    ("all_leap", "all_leap", (2001, 12, 15), 24, 800, (64, 3, 4), (16, 3, 2)),
    ("360_day", "360_day", (1999, 11, 20), 24, 800, (90, 5, 4), (30, 1, 4)),
]
NLAT, NLON = 5, 4
GROUPS = ["year", "month", "season", "dayofyear", "1 month", "3 months", "7 days", "1 day",
          "1 year", "2 years"]
SEASONS = ["DJF", "MAM", "JJA", "SON"]


# ---- calendars, stepped day by day ------------------------------------------------------

def month_len(cal, y, m):
    if cal == "360_day":
        return 30
    if m != 2:
        return [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m - 1]
    if cal == "noleap":
        return 28
    if cal == "all_leap":
        return 29
    greg = cal == "proleptic_gregorian" or (cal == "standard" and y > 1582)
    leap = y % 4 == 0 and (not greg or y % 100 != 0 or y % 400 == 0)
    return 29 if leap else 28


def next_day(cal, y, m, d):
    if cal == "standard" and (y, m, d) == (1582, 10, 4):
        return (1582, 10, 15)
    if d < month_len(cal, y, m):
        return (y, m, d + 1)
    return (y + 1, 1, 1) if m == 12 else (y, m + 1, 1)


@functools.lru_cache(maxsize=None)
def day_of_year(cal, date):
    y = date[0]
    cur, n = (y, 1, 1), 1
    while cur != date:
        cur = next_day(cal, *cur)
        n += 1
    return n


def days_since_1970(cal, date):
    """Day number of a date counted in the calendar from its 1970-01-01."""
    y, m, d = date
    if cal in ("noleap", "all_leap", "360_day"):
        ylen = {"noleap": 365, "all_leap": 366, "360_day": 360}[cal]
        return (y - 1970) * ylen + day_of_year(cal, date) - 1
    if cal == "proleptic_gregorian" or (y, m, d) >= (1582, 10, 15):
        return (datetime.date(y, m, d) - datetime.date(1970, 1, 1)).days
    # Julian: count days back to 1582-10-15 (Gregorian, known day number)
    n, cur = 0, date
    while cur != (1582, 10, 15):
        cur = next_day(cal, *cur)
        n += 1
    return (datetime.date(1582, 10, 15) - datetime.date(1970, 1, 1)).days - n


def date_of_day(cal, dn):
    """The date of day number dn (the inverse of days_since_1970)."""
    if cal in ("noleap", "all_leap", "360_day"):
        ylen = {"noleap": 365, "all_leap": 366, "360_day": 360}[cal]
        y, doy = 1970 + dn // ylen, dn % ylen
        cur = (y, 1, 1)
        for _ in range(doy):
            cur = next_day(cal, *cur)
        return cur
    g = datetime.date(1970, 1, 1) + datetime.timedelta(days=dn)
    if cal == "proleptic_gregorian" or (g.year, g.month, g.day) >= (1582, 10, 15):
        return (g.year, g.month, g.day)
    # Julian: step back from 1582-10-15
    cur = (1582, 10, 15)
    for _ in range((datetime.date(1582, 10, 15) - g).days):
        cur = prev_day(cal, *cur)
    return cur


def prev_day(cal, y, m, d):
    if cal == "standard" and (y, m, d) == (1582, 10, 15):
        return (1582, 10, 4)
    if d > 1:
        return (y, m, d - 1)
    if m == 1:
        return (y - 1, 12, 31)
    return (y, m - 1, month_len(cal, y, m - 1))


@functools.lru_cache(maxsize=None)
def group_key(cal, date, grp):
    y, m, d = date
    if grp == "year":
        return y
    if grp == "month":
        return m
    if grp == "season":
        return SEASONS[m % 12 // 3]
    if grp == "dayofyear":
        return day_of_year(cal, date)
    n, unit = grp.split()
    n = int(n)
    if unit.startswith("day"):
        first = (days_since_1970(cal, date) // n) * n
        return "%04d-%02d-%02d" % date_of_day(cal, first)
    if unit.startswith("month"):
        k = ((y * 12 + m - 1) // n) * n
        return "%04d-%02d-01" % (k // 12, k % 12 + 1)
    return "%04d-01-01" % ((y // n) * n)


def group_order(grp, key):
    return SEASONS.index(key) if grp == "season" else key


# ---- the arrays ---------------------------------------------------------------------------

def connect(threads=None):
    if threads is not None:
        os.environ["CATERVA_THREADS"] = str(threads)
    db = sqlite3.connect(":memory:", isolation_level=None)
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def fill(db, rows):
    """Write cells (i, j, k, value or None) into table t in one statement."""
    db.execute("CREATE TEMP TABLE src(i, j, k, v)")
    db.execute("BEGIN")
    db.executemany("INSERT INTO src VALUES (?, ?, ?, ?)", rows)
    db.execute("INSERT INTO t(time_index, lat_index, lon_index, value) SELECT i, j, k, v "
               "FROM src ORDER BY rowid")
    db.execute("COMMIT")
    db.execute("DROP TABLE src")


def make_case(tmp, rng, case):
    name, cal, start, hours, nt, chunks, blocks = case
    path = os.path.join(tmp, name + ".b2nd")
    unit = "12 hour" if hours == 12 else "1 day"
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='%d,%d,%d', dtype='float64', "
               "chunks='%s', blocks='%s', dims='time,lat,lon', coords='lat:-2:1.0,lon:10:0.5,"
               "time:%04d-%02d-%02d:%s:%s')" % (path, nt, NLAT, NLON,
                                                ",".join(map(str, chunks)),
                                                ",".join(map(str, blocks)), start[0], start[1],
                                                start[2], unit, cal))
    vals = {}
    rows = []
    for i in range(nt):
        for j in range(NLAT):
            for k in range(NLON):
                r = rng.random()
                if r < 0.06:
                    v = None  # NaN
                elif r < 0.08:
                    v = rng.uniform(-1, 1) * 1e8  # a large magnitude: order matters in sums
                else:
                    v = 280.0 + 30.0 * math.sin(i / 40.0) + rng.gauss(0, 5) + j - k
                vals[(i, j, k)] = v
                rows.append((i, j, k, v))
    # one lat row entirely NaN over the first 40 steps (a group of nothing)
    for i in range(min(40, nt)):
        for k in range(NLON):
            vals[(i, NLAT - 1, k)] = None
            rows.append((i, NLAT - 1, k, None))
    fill(db, rows)
    dates, cur = [], start
    for i in range(nt):
        if hours == 12 and i % 2 == 1:
            dates.append(dates[-1])
            continue
        dates.append(cur)
        cur = next_day(cal, *cur)
    times = db.execute("SELECT DISTINCT time FROM t ORDER BY time_index").fetchall()
    db.close()
    return path, vals, dates, [t[0] for t in times]


# ---- the reference ------------------------------------------------------------------------

def reference(case, vals, dates, grp, keep_lat, keep_lon, box, tlist):
    """{(group key or None, lat index or None, lon index or None): [values]}."""
    nt = case[4]
    (t0, t1), (a0, a1), (o0, o1) = box
    out = {}
    for i in range(t0, t1 + 1):
        if tlist is not None and i not in tlist:
            continue
        g = group_key(case[1], dates[i], grp) if grp else None
        for j in range(a0, a1 + 1):
            for k in range(o0, o1 + 1):
                key = (g, j if keep_lat else None, k if keep_lon else None)
                out.setdefault(key, [])
                v = vals[(i, j, k)]
                if v is not None:
                    out[key].append(v)
    assert nt > 0
    return out


def ref_stats(xs):
    n = len(xs)
    if n == 0:
        return (0, None, None, None, None, None, 0.0)
    s = math.fsum(xs)
    mean = s / n
    var = math.fsum((x - mean) ** 2 for x in xs) / n
    return (n, s, mean, min(xs), max(xs), math.sqrt(var), math.fsum(abs(x) for x in xs))


def check_row(got, want, bsize):
    """got: (count, sum, mean, min, max, std); want: ref_stats. Problems as text."""
    n, s, mean, mn, mx, sd, sabs = want
    bad = []
    if got[0] != n:
        bad.append("count %r != %r" % (got[0], n))
    if n == 0:
        if any(x is not None for x in got[1:]):
            bad.append("an empty group gives %r" % (got,))
        return bad
    bound = (bsize + 3) * U * sabs
    if abs(got[1] - s) > bound:
        bad.append("sum %r, exact %r, bound %g" % (got[1], s, bound))
    if abs(got[2] - mean) > bound / n + 4 * U * abs(mean):
        bad.append("mean %r, exact %r" % (got[2], mean))
    if got[3] != mn or got[4] != mx:
        bad.append("min/max %r %r != %r %r" % (got[3], got[4], mn, mx))
    if abs(got[5] - sd) > 1e-9 * max(sd, abs(mean) * 1e-6, 1e-300):
        bad.append("std %r, two-pass %r" % (got[5], sd))
    return bad


def random_query(rng, case, times, grp):
    nt = case[4]
    keep_lat, keep_lon = rng.random() < 0.5, rng.random() < 0.5
    axes = ["time:" + grp if grp else "time"]
    if not keep_lat:
        axes.append("lat")
    if not keep_lon:
        axes.append("lon")
    where, box, tlist = [], [[0, nt - 1], [0, NLAT - 1], [0, NLON - 1]], None
    r = rng.random()
    if r < 0.4:
        lo = rng.randrange(nt)
        hi = min(nt - 1, lo + rng.randrange(1, nt))
        where.append("d0 BETWEEN '%s' AND '%s'" % (times[lo], times[hi]))
        # 12-hourly: a date bound starts at the first index of its instant
        box[0] = [times.index(times[lo]), hi]
    elif r < 0.55:
        lo = rng.randrange(nt)
        hi = min(nt - 1, lo + rng.randrange(1, nt))
        where.append("d0_index BETWEEN %d AND %d" % (lo, hi))
        box[0] = [lo, hi]
    elif r < 0.65:
        tlist = sorted(set(rng.randrange(nt) for _ in range(rng.randint(1, 30))))
        where.append("d0_index IN (%s)" % ",".join(map(str, tlist)))
        box[0] = [tlist[0], tlist[-1]]
        tlist = set(tlist)
    if rng.random() < 0.5:
        lo = rng.randrange(NLAT)
        hi = rng.randrange(lo, NLAT)
        where.append("d1 BETWEEN %d AND %d" % (lo - 2, hi - 2))  # labels -2, -1, ...
        box[1] = [lo, hi]
    if rng.random() < 0.3:
        k = rng.randrange(NLON)
        where.append("d2_index = %d" % k)
        box[2] = [k, k]
    sql = ("SELECT d0, d1_index, d2_index, count, sum, mean, min, max, std FROM "
           "caterva_reduce('%%s', 'stats', '%s')%s" %
           (",".join(axes), (" WHERE " + " AND ".join(where)) if where else ""))
    return sql, keep_lat, keep_lon, [tuple(b) for b in box], tlist


def check_case(tmp, rng, case, nq):
    path, vals, dates, times = make_case(tmp, rng, case)
    bsize = case[6][0] * case[6][1] * case[6][2]
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s')" % path)
    bad, nrows = [], 0
    for iq in range(nq):
        grp = GROUPS[iq % len(GROUPS)] if iq % (len(GROUPS) + 1) != len(GROUPS) else None
        sql, klat, klon, box, tlist = random_query(rng, case, times, grp)
        sql = sql % ("t" if iq % 2 == 0 else path)
        got = db.execute(sql).fetchall()
        want = reference(case, vals, dates, grp, klat, klon, box, tlist)
        keys = sorted(want, key=lambda k: (group_order(grp, k[0]) if grp else 0,
                                           -1 if k[1] is None else k[1],
                                           -1 if k[2] is None else k[2]))
        gotkeys = [(g[0] if grp else None, g[1], g[2]) for g in got]
        if gotkeys != keys:
            bad.append("%s\n  rows %r\n  want %r" % (sql, gotkeys[:6], keys[:6]))
            continue
        for g in got:
            problems = check_row(g[3:], ref_stats(want[(g[0] if grp else None, g[1], g[2])]),
                                 bsize)
            if problems:
                bad.append("%s: row %r: %s" % (sql, g[:3], "; ".join(problems)))
                break
        nrows += len(got)
    report(not bad, "%s calendar (%s, %d-hour steps): %d random reductions (%d rows) by year, "
           "month, season, dayofyear, N days/months/years or over time: groups, counts, "
           "min, max exact; sums within the bound; mean and std" % (
               case[0], case[1], case[3], nq, nrows), "\n".join(bad[:6]))
    return path, db, times


def check_sql_groupby(db, times):
    """The Gregorian case against plain SQL: strftime groups, SQLite's aggregates."""
    bad = []
    for fmt, grp in (("%m", "month"), ("%Y", "year"), ("%Y-%m", "1 month"), ("%j", "dayofyear")):
        want = db.execute("SELECT strftime('%s', time) AS g, lat, count(value), min(value), "
                          "max(value), total(abs(value)), sum(value) FROM t WHERE lat BETWEEN "
                          "-1 AND 1 AND time >= '2000-02-01' GROUP BY g, lat ORDER BY g, lat"
                          % fmt).fetchall()
        got = db.execute("SELECT d0, d1, count, min, max, sum FROM caterva_reduce('t', 'stats', "
                         "'time:%s,lon') WHERE d1 BETWEEN -1 AND 1 AND d0 >= '2000-02-01'"
                         % grp).fetchall()
        conv = {"%m": lambda g: int(g), "%Y": lambda g: int(g), "%j": lambda g: int(g),
                "%Y-%m": lambda g: g + "-01"}[fmt]
        if len(got) != len(want):
            bad.append("%s: %d rows, GROUP BY %d" % (grp, len(got), len(want)))
            continue
        for g, w in zip(got, want):
            if (g[0], g[1], g[2], g[3], g[4]) != (conv(w[0]), w[1], w[2], w[3], w[4]) or \
                    abs(g[5] - w[6]) > 4 * w[2] * U * 2 * w[5]:
                bad.append("%s: %r against %r" % (grp, g, w))
                break
    report(not bad, "Gregorian calendar: month, year, '1 month' and dayofyear equal plain SQL's "
           "GROUP BY strftime (groups, counts, min, max exactly; sums within SQLite's "
           "summation bound)", "\n".join(bad[:4]))


def blocks_read(db):
    return db.execute("SELECT caterva_blocks_read()").fetchone()[0]


def boxes_blocks(shape, chunks, blocks, box):
    """Blocks intersecting an inclusive box."""
    n = 1
    for k in range(3):
        per = set()
        for i in range(box[k][0], box[k][1] + 1):
            per.add((i // chunks[k], (i % chunks[k]) // blocks[k]))
        n *= len(per)
    return n


def check_pushdown(tmp):
    """Blocks read for boxes in dates and degrees, on compressible values (a memcpyed block,
    stored raw because it would not compress, is not counted as decompressed)."""
    nt, chunks, blocks = 400, (64, 3, 4), (10, 2, 2)
    shape = (nt, NLAT, NLON)
    path = os.path.join(tmp, "pushdown.b2nd")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='%d,%d,%d', dtype='float64', "
               "chunks='64,3,4', blocks='10,2,2', dims='time,lat,lon', coords='lat:-2:1.0,"
               "lon:10:0.5,time:1999-11-20:1 day')" % (path, nt, NLAT, NLON))
    fill(db, [(i, j, k, None if (i * 7 + j) % 23 == 0 else float(i % 50 + j - k))
              for i in range(nt) for j in range(NLAT) for k in range(NLON)])
    times = [r[0] for r in db.execute("SELECT DISTINCT time FROM t ORDER BY time_index")]
    bad = []
    whole = boxes_blocks(shape, chunks, blocks, [(0, nt - 1), (0, NLAT - 1), (0, NLON - 1)])
    for (t0, t1, a0, a1) in ((100, 190, 1, 2), (5, 300, 0, 0), (300, 301, 0, 4)):
        b0 = blocks_read(db)
        db.execute("SELECT count(*) FROM caterva_reduce('t', 'std', 'time:month,lat,lon') "
                   "WHERE d0 BETWEEN '%s' AND '%s' AND d1 BETWEEN %d AND %d" % (
                       times[t0], times[t1], a0 - 2, a1 - 2)).fetchall()
        used = blocks_read(db) - b0
        want = boxes_blocks(shape, chunks, blocks, [(t0, t1), (a0, a1), (0, NLON - 1)])
        if used != want or used >= whole:
            bad.append("box %r: %d blocks read, %d intersect it (whole: %d)" % (
                (t0, t1, a0, a1), used, want, whole))
    report(not bad, "a box of dates and degrees reads exactly the blocks intersecting it "
           "(std: no statistics), fewer than the array's %d" % whole, "\n".join(bad))
    # statistics answer the blocks inside one month (and one output row)
    q = ("SELECT d0, count, sum, min, max FROM caterva_reduce('t', '%s', 'time:month,lat,lon') "
         "WHERE d0 > '1999-12-03'")
    b0 = blocks_read(db)
    with_stats = db.execute(q % "mean").fetchall()
    b1 = blocks_read(db)
    without = db.execute(q % "std").fetchall()
    b2 = blocks_read(db)
    want = db.execute("SELECT strftime('%m', time), count(value), sum(value), min(value), "
                      "max(value) FROM t WHERE time > '1999-12-03' GROUP BY 1").fetchall()
    want = [(int(w[0]),) + w[1:] for w in want]
    want.sort()
    same = with_stats == without == want
    report(same and 0 < b1 - b0 < b2 - b1, "grouped by month, the blocks inside one month "
           "are answered by their statistics (%d blocks read, %d with std, %d in the box): the "
           "same results, equal to GROUP BY strftime('%%m')" % (b1 - b0, b2 - b1, b2 - b1),
           "%r\n%r\n%r" % (with_stats[:3], without[:3], want[:3]))
    db.close()


def check_threads(tmp, rng):
    """The same reductions with 1, 2 and 3 threads: bit-identical (repr of every value)."""
    case = ("threads", "noleap", (2001, 1, 1), 24, 1200, (200, 8, 8), (20, 4, 8))
    name, cal, start, hours, nt, chunks, blocks = case
    path = os.path.join(tmp, "threads.b2nd")
    db = connect()
    db.execute("CREATE VIRTUAL TABLE t USING caterva('%s', shape='%d,8,8', dtype='float64', "
               "chunks='200,8,8', blocks='20,4,8', dims='time,lat,lon', "
               "coords='time:2001-01-01:1 day:noleap')" % (path, nt))
    fill(db, [(i, j, k, None if rng.random() < 0.05 else
               rng.uniform(-1, 1) * 10 ** rng.randint(-3, 12))
              for i in range(nt) for j in range(8) for k in range(8)])
    db.close()
    queries = ["SELECT * , count, sum, mean, min, max, std FROM caterva_reduce('%s', 'stats', "
               "'%s')" % (path, axes) for axes in
               ("", "time", "time:month", "time:season,lat", "lat,lon", "time:7 days",
                "time:dayofyear,lon")]
    queries.append("SELECT value FROM caterva_reduce('%s', 'mean', 'time:1 year')" % path)
    results = {}
    for threads in (1, 2, 3):
        db = connect(threads)
        results[threads] = [repr(db.execute(q).fetchall()) for q in queries]
        db.close()
    os.environ.pop("CATERVA_THREADS", None)
    same = results[1] == results[2] == results[3]
    report(same, "the results of %d reductions (values spanning 15 orders of magnitude) are "
           "bit-identical with 1, 2 and 3 threads" % len(queries))


def check_errors(db):
    errs = []
    for axes, want in (("time:fortnight", "unknown group"), ("lat:month", "no time coordinate"),
                       ("time:0 days", "unknown group"), ("nope:month", "no dimension")):
        try:
            db.execute("SELECT * FROM caterva_reduce('t', 'mean', '%s')" % axes).fetchall()
            errs.append(axes + ": no error")
        except sqlite3.Error as e:
            if want not in str(e):
                errs.append(axes + ": " + str(e))
    report(not errs, "bad groups are errors naming the cause", "\n".join(errs))
    row = db.execute("SELECT value, count, typeof(sum), std FROM caterva_reduce('t', 'stats', "
                     "'') WHERE d1_index = 4 AND d0_index < 40").fetchall()
    report(row == [(None, 0, "null", None)], "stats of only NaN cells: count 0, the rest NULL "
           "(%r)" % row)
    v = db.execute("SELECT value, std FROM caterva_reduce('t', 'std', 'time') WHERE "
                   "d1_index = 0 AND d2_index = 0").fetchall()
    s = db.execute("SELECT std FROM caterva_reduce('t', 'stats', 'time') WHERE "
                   "d1_index = 0 AND d2_index = 0").fetchall()
    report(len(v) == 1 and v[0][0] == v[0][1] == s[0][0],
           "op 'std' gives the std column's value (%r)" % v)


def main():
    if not os.path.exists(EXT + ".so"):
        print("1..0 # SKIP the extension is not built")
        return
    rng = random.Random(int(os.environ.get("CATERVA_SEED", "23")))
    nq = int(os.environ.get("CATERVA_REDUCE_QUERIES", "100"))
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            path, db, times = check_case(tmp, rng, case, nq)
            if case[0] == "gregorian":
                check_sql_groupby(db, times)
                check_errors(db)
            db.close()
        check_pushdown(tmp)
        check_threads(tmp, rng)
    plan()


if __name__ == "__main__":
    main()

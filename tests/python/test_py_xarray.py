#!/usr/bin/env python3
"""The Python package caterva_sqlite and its xarray backend (TAP output), in one process.

- connect(): the extension loaded from CATERVA_EXTENSION; a missing file, a file that is not an
  extension and a sqlite3 module that cannot load extensions give ExtensionError naming it.
- engine="caterva" is found through the entry-point metadata beside the package (PYTHONPATH
  alone), and guess_can_open claims .b2nd paths.
- Every dtype (bool, int8..uint64, float16/32/64, complex, big-endian, datetime64, U3, S2),
  written as .npy and imported: xr.open_dataset's values equal NumPy's and the SQL table's,
  lazily and with chunks={} (Dask chunks = the array's chunks).
- Labels, calendars, fill values, attributes and several variables: arrays written through SQL
  with regular and explicit coordinates in the standard, noleap and 360_day calendars; the
  coordinates equal the SQL table's label columns (dates through strftime), the values the
  table's, the fill value masked as xarray masks (NaN where the table holds the fill), raw with
  mask_and_scale=False; a directory of arrays (caterva_import(nc, dir, '*') of a NetCDF grid
  when ncgen is there, else written through SQL) opens as one Dataset of several variables.
- Laziness and pushdown: opening decodes no block; ds.sel(time=..., lat=slice(...)) decodes
  exactly the blocks its box touches (caterva_blocks_read() of the reading connection).
- Errors: an unknown option, a file that is not an array, a directory without arrays.

Environment: top_builddir, top_srcdir, CATERVA_PRELOAD, NCGEN.
"""
import json
import os
import sqlite3
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from sqltap import plan, reexec_with_preload, report  # noqa: E402

reexec_with_preload()
BUILD = os.environ.get("top_builddir", ".")
os.environ["CATERVA_EXTENSION"] = os.path.abspath(os.path.join(BUILD, ".libs", "caterva.so"))
sys.path.insert(0, os.path.join(os.environ.get("top_srcdir", os.path.join(HERE, "..", "..")),
                                "python"))

import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402

import caterva_sqlite as cs  # noqa: E402
from caterva_sqlite import xarray_backend  # noqa: E402


def raises(fn, exc, text):
    try:
        fn()
    except exc as e:
        return text in str(e), str(e)
    except Exception as e:  # noqa: BLE001 - the wrong kind of error is a failure
        return False, "%s: %s" % (type(e).__name__, e)
    return False, "no error"


def blocks_read():
    return cs.local_connection().execute("SELECT caterva_blocks_read()").fetchone()[0]


def check_connect(tmp):
    db = cs.connect()
    v = db.execute("SELECT caterva_version()").fetchone()[0]
    report(isinstance(db, sqlite3.Connection) and v, "connect() loads the extension (%s)" % v)
    db.close()
    saved = os.environ["CATERVA_EXTENSION"]
    try:
        os.environ["CATERVA_EXTENSION"] = os.path.join(tmp, "nope.so")
        ok, msg = raises(cs.connect, cs.ExtensionError, "does not exist")
        report(ok, "CATERVA_EXTENSION naming a missing file: %s" % msg)
        junk = os.path.join(tmp, "junk.so")
        with open(junk, "w") as f:
            f.write("not a shared object\n")
        os.environ["CATERVA_EXTENSION"] = junk
        ok, msg = raises(cs.connect, cs.ExtensionError, "cannot load the caterva extension")
        report(ok and junk in msg, "a file that is not an extension: %s" % msg)
    finally:
        os.environ["CATERVA_EXTENSION"] = saved

    class NoExt(sqlite3.Connection):
        def __getattribute__(self, name):
            if name == "enable_load_extension":
                raise AttributeError(name)
            return super().__getattribute__(name)
    ok, msg = raises(lambda: cs.connect(factory=NoExt), cs.ExtensionError, "cannot load extensions")
    report(ok, "a sqlite3 module without extension loading: %s" % msg)


def check_engine(tmp):
    engines = xr.backends.list_engines()
    report("caterva" in engines and isinstance(engines["caterva"],
                                               xarray_backend.CatervaBackendEntrypoint),
           "xarray lists engine 'caterva' from the metadata beside the package")
    ep = xarray_backend.CatervaBackendEntrypoint()
    report(ep.guess_can_open("x/t.b2nd") and ep.guess_can_open("https://h/a.b2frame") and
           not ep.guess_can_open("t.nc"), "guess_can_open claims .b2nd/.b2frame paths and URLs only")


DTYPES = ["|b1", "|i1", "<i2", "<i4", "<i8", "|u1", "<u2", "<u4", "<u8", "<f2", "<f4", "<f8",
          "<c8", "<c16", ">i4", ">f8", "<M8[s]", "<U3", "|S2"]


def sample(dt, shape, rnd):
    n = int(np.prod(shape))
    d = np.dtype(dt)
    if d.kind == "b":
        a = rnd.integers(0, 2, n).astype(d)
    elif d.kind in "iu":
        info = np.iinfo(d)
        a = rnd.integers(info.min, info.max, n, dtype=d.newbyteorder("=")).astype(d)
    elif d.kind == "f":
        a = (rnd.standard_normal(n) * 1000).astype(d)
        a[::7] = np.nan
    elif d.kind == "c":
        a = (rnd.standard_normal(n) + 1j * rnd.standard_normal(n)).astype(d)
    elif d.kind == "M":
        a = rnd.integers(-10 ** 9, 10 ** 9, n).astype(d)
    elif d.kind == "U":
        a = np.array(["".join(chr(97 + (i * 7 + j) % 26) for j in range(i % 4)) for i in range(n)], d)
    else:
        a = np.array([bytes([65 + i % 26, 97 + i % 26][: i % 3]) for i in range(n)], d)
    return a.reshape(shape)


def sql_values(db, table):
    return [r[0] for r in db.execute("SELECT value FROM %s ORDER BY rowid" % table)]


def check_dtypes(tmp):
    rnd = np.random.default_rng(38)
    db = cs.connect()
    bad = []
    for i, dt in enumerate(DTYPES):
        a = sample(dt, (6, 7, 5), rnd)
        npy, arr = os.path.join(tmp, "d%d.npy" % i), os.path.join(tmp, "d%d.b2nd" % i)
        np.save(npy, a)
        db.execute("SELECT caterva_import(?, ?, NULL, 'dims=x,y,z chunks=4,3,5 blocks=2,3,2')",
                   (npy, arr))
        ds = xr.open_dataset(arr, engine="caterva")
        v = ds["d%d" % i]
        got = v.values
        same = got.dtype == a.dtype.newbyteorder("=") or got.dtype == a.dtype
        eq = np.array_equal(got, a, equal_nan=a.dtype.kind in "fc")
        sub = v[1:5:2, 2, ::-2].values
        eq_sub = np.array_equal(sub, a[1:5:2, 2, ::-2], equal_nan=a.dtype.kind in "fc")
        dk = xr.open_dataset(arr, engine="caterva", chunks={})["d%d" % i]
        eq_dask = dk.chunks == ((4, 2), (3, 3, 1), (5,)) and np.array_equal(
            dk.values, a, equal_nan=a.dtype.kind in "fc")
        # the SQL table's values, for the dtypes SQL shows as numbers
        eq_sql = True
        if a.dtype.kind in "biuf" and a.dtype.itemsize <= 8:
            db.execute("CREATE VIRTUAL TABLE t%d USING caterva('%s')" % (i, arr))
            sv = sql_values(db, "t%d" % i)
            flat = got.reshape(-1)
            if a.dtype.kind == "f":
                eq_sql = all((s is None and np.isnan(x)) or (s is not None and s == float(x))
                             for s, x in zip(sv, flat))
            elif a.dtype.kind == "u" and a.dtype.itemsize == 8:
                eq_sql = all(s == (int(x) if x <= 2 ** 63 - 1 else float(x)) for s, x in zip(sv, flat))
            else:
                eq_sql = all(s == int(x) for s, x in zip(sv, flat))
        if not (same and eq and eq_sub and eq_dask and eq_sql):
            bad.append("%s: dtype %s same=%s eq=%s sub=%s dask=%s sql=%s" % (
                dt, got.dtype, same, eq, eq_sub, eq_dask, eq_sql))
    report(not bad, "every dtype (%d): values equal NumPy's and the SQL table's, lazily, sliced "
           "with steps and through Dask chunks" % len(DTYPES), "\n".join(bad))
    db.close()


SERIES = "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "


def make_grid(db, tmp, cal):
    """Two arrays of one grid (time, lat, lon) in a directory: t (float32, NaN fill, some NULL
    cells) and c (int16, fill -999, some deleted cells), time in calendar cal, lat regular,
    lon explicit (decreasing). Returns the directory."""
    d = os.path.join(tmp, "grid_" + cal)
    os.mkdir(d)
    for name, dtype, fill in (("t", "float32", "nan"), ("c", "int16", "-999")):
        db.execute("CREATE VIRTUAL TABLE mk USING caterva('%s/%s.b2nd', shape='50,8,6', "
                   "dtype='%s', chunks='20,4,6', blocks='5,2,3', dims='time,lat,lon', fill='%s', "
                   "coords='time:1999-12-20T12:00:00:1 day:%s,lat:-40:10:degrees_north')"
                   % (d, name, dtype, fill, cal))
        db.execute("INSERT INTO mk(time_index, lat_index, lon_index, value) "
                   "SELECT time_index, lat_index, lon_index, "
                   "(time_index * 37 + lat_index * 11 + lon_index * 3) % 200 - 90 FROM mk")
        db.execute("DELETE FROM mk WHERE (time_index + lat_index + lon_index) % 9 = 0")
        db.commit()
        db.execute("SELECT caterva_set_coords('mk', 'lon', '[170, 120.5, 60, 0, -60, -179.25]', "
                   "'degrees_east')")
        db.execute("DROP TABLE mk")
    return d


def check_grid(tmp, cal):
    db = cs.connect()
    d = make_grid(db, tmp, cal)
    ds = xr.open_dataset(d, engine="caterva")
    db.execute("CREATE VIRTUAL TABLE g USING caterva('%s/c.b2nd', '%s/t.b2nd')" % (d, d))
    rows = db.execute("SELECT strftime('%Y-%m-%dT%H:%M:%S', time), lat, lon, c, t FROM g "
                      "ORDER BY rowid").fetchall()
    times = sorted(set(r[0] for r in rows))
    got_t = [x.strftime("%Y-%m-%dT%H:%M:%S") if hasattr(x, "strftime") else
             np.datetime_as_string(x, unit="s") for x in ds.time.values]
    lat = list(dict.fromkeys(r[1] for r in rows))
    lon = list(dict.fromkeys(r[2] for r in rows))
    report(sorted(ds.data_vars) == ["c", "t"] and ds.t.dims == ("time", "lat", "lon") and
           got_t == times and list(ds.lat.values) == lat and list(ds.lon.values) == lon and
           ds.lat.attrs.get("units") == "degrees_north" and ds.lon.attrs.get("units") == "degrees_east",
           "%s calendar: one Dataset of two variables; time, lat, lon equal the table's labels "
           "(%s .. %s)" % (cal, got_t[0], got_t[-1]))
    cvals = np.array([r[3] for r in rows], dtype=np.float64).reshape(50, 8, 6)
    tvals = np.array([np.nan if r[4] is None else r[4] for r in rows]).reshape(50, 8, 6)
    masked = ds.c.values
    ok_c = np.array_equal(np.isnan(masked), cvals == -999) and \
        np.array_equal(masked[~np.isnan(masked)], cvals[cvals != -999]) and (cvals == -999).any()
    ok_t = np.array_equal(ds.t.values.astype(np.float64), tvals, equal_nan=True) and \
        np.isnan(tvals).any()
    raw = xr.open_dataset(d, engine="caterva", mask_and_scale=False)
    ok_raw = raw.c.dtype == np.int16 and np.array_equal(raw.c.values, cvals.astype(np.int16)) and \
        raw.c.attrs.get("_FillValue") == -999
    report(ok_c and ok_t and ok_raw and ds.c.encoding.get("_FillValue") == -999,
           "%s calendar: values equal the table's; the fill -999 masked as NaN where the table "
           "holds it; raw with mask_and_scale=False" % cal)
    db.close()


def check_netcdf(tmp, srcdir):
    ncgen = os.environ.get("NCGEN", "")
    db = cs.connect()
    nc = os.path.join(tmp, "grid.nc")
    if os.environ.get("CATERVA_HAVE_NETCDF", "yes") != "yes" or not ncgen or ncgen == "no":
        report(True, "attributes from a NetCDF import # SKIP no libnetcdf/ncgen in this build")
        return
    subprocess.run([ncgen, "-k", "nc4", "-o", nc, os.path.join(srcdir, "tests", "data", "netcdf",
                                                               "grid.cdl")], check=True)
    res = json.loads(db.execute("SELECT caterva_import(?, ?, '*')",
                                (nc, os.path.join(tmp, "era.d"))).fetchone()[0])
    ds = xr.open_dataset(os.path.join(tmp, "era.d"), engine="caterva")
    db.execute("CREATE VIRTUAL TABLE e USING caterva(%s)" % ", ".join(
        "'%s'" % v["file"] for v in res["variables"]))
    rows = db.execute("SELECT t2m, tp, cnt FROM e ORDER BY rowid").fetchall()
    ok = True
    for j, name in enumerate(("t2m", "tp", "cnt")):
        want = np.array([np.nan if r[j] is None else r[j] for r in rows], dtype=np.float64)
        got = ds[name].values.astype(np.float64).reshape(-1)
        ok = ok and np.array_equal(got, want, equal_nan=True)
    report(ok and ds.t2m.attrs.get("long_name") == "2 metre temperature" and
           ds.t2m.attrs.get("units") == "K" and ds.time.values[0].calendar == "noleap",
           "a NetCDF grid imported with '*': t2m, tp, cnt in one Dataset, values equal the "
           "table's, attributes kept, noleap times as cftime dates")
    db.close()


def meta_cost(path):
    """Blocks that connecting a table over path and caterva_info() of it read on a fresh
    connection: the array's attributes (msgpack chunks), no data."""
    db = cs.connect()
    b0 = db.execute("SELECT caterva_blocks_read()").fetchone()[0]
    db.execute("CREATE VIRTUAL TABLE x USING caterva('%s')" % path)
    db.execute("SELECT caterva_info('x')").fetchone()
    n = db.execute("SELECT caterva_blocks_read()").fetchone()[0] - b0
    db.close()
    return n


def open_cost(path):
    b0 = blocks_read()
    ds = xr.open_dataset(path, engine="caterva")
    return ds, blocks_read() - b0


def check_lazy_sel(tmp):
    db = cs.connect()
    path, small = os.path.join(tmp, "big.b2nd"), os.path.join(tmp, "small.b2nd")
    for t, p, shape in (("mk", path, "120,60,40"), ("mks", small, "30,30,20")):
        db.execute("CREATE VIRTUAL TABLE %s USING caterva('%s', shape='%s', dtype='float32', "
                   "chunks='30,30,20', blocks='10,10,10', dims='time,lat,lon', "
                   "coords='time:2023-01-01:1 day,lat:-89.5:3.0,lon:0:9.0')" % (t, p, shape))
        db.execute("INSERT INTO %s(time_index, lat_index, lon_index, value) SELECT time_index, "
                   "lat_index, lon_index, time_index + lat_index / 100.0 FROM %s" % (t, t))
        db.commit()
    # arrays whose file changed in the last 2 s (whole seconds: up to 3) are reopened by each call
    # (ext/fn_arrcache.c), reading their attributes again: let the files settle
    time.sleep(3.2)
    ok = True
    for p in (small, path):
        ds, n = open_cost(p)
        ok = ok and n == meta_cost(p)
    report(ok, "opening decodes no data: it reads the blocks that connecting a table and "
           "caterva_info() read (the attributes), for 1 chunk and for 96 (%d)" % n)
    ds.big[119, 0, 0].values  # the reading connection's table over the array, made far from the box
    b1 = blocks_read()
    sel = ds.big.sel(time="2023-02-15", lat=slice(-30, 20))
    b2 = blocks_read()
    v = sel.values
    b3 = blocks_read()
    li = [i for i in range(60) if -30 <= -89.5 + 3 * i <= 20]
    want = db.execute("SELECT value FROM mk WHERE time = '2023-02-15' AND lat BETWEEN -30 AND 20 "
                      "ORDER BY rowid").fetchall()
    nblk = len(set(i // 10 for i in li)) * 4   # one block along time, 4 along lon
    report(b2 == b1 and b3 - b2 == nblk and v.shape == (len(li), 40) and
           np.array_equal(v.reshape(-1), np.array([r[0] for r in want], dtype=np.float32)),
           "ds.sel(time=day, lat=slice) decodes nothing until .values, then the %d blocks of the "
           "box (%d)" % (nblk, b3 - b2))
    db.close()


def check_errors(tmp):
    path = os.path.join(tmp, "d0.b2nd")
    ok, msg = raises(lambda: xr.open_dataset(path, engine="caterva", options={"chunkz": "1"}),
                     ValueError, "unknown option")
    report(ok and "chunkz" in msg, "an unknown option: %s" % msg)
    notarr = os.path.join(tmp, "notarray.b2nd")
    with open(notarr, "wb") as f:
        f.write(b"this is not a Blosc2 frame\n" * 10)
    ok, msg = raises(lambda: xr.open_dataset(notarr, engine="caterva"), cs.CatervaError, "cannot open")
    report(ok and notarr in msg, "a file that is not an array: %s" % msg)
    empty = os.path.join(tmp, "emptydir")
    os.mkdir(empty)
    ok, msg = raises(lambda: xr.open_dataset(empty, engine="caterva"), cs.CatervaError,
                     "without arrays")
    report(ok, "a directory without arrays: %s" % msg)
    ok, msg = raises(lambda: xr.open_dataset(os.path.join(tmp, "missing.b2nd"), engine="caterva"),
                     cs.CatervaError, "cannot open")
    report(ok, "a missing file: %s" % msg)


def main():
    import shutil
    import tempfile
    srcdir = os.environ.get("top_srcdir", os.path.join(HERE, "..", ".."))
    tmp = tempfile.mkdtemp(prefix="cv-pyxr-")
    try:
        check_connect(tmp)
        check_engine(tmp)
        check_dtypes(tmp)
        for cal in ("standard", "noleap", "360_day"):
            check_grid(tmp, cal)
        check_netcdf(tmp, srcdir)
        check_lazy_sel(tmp)
        check_errors(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    plan()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

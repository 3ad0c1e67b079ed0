#!/usr/bin/env python3
"""caterva_sqlite on a real dask.distributed LocalCluster of 2 worker processes (TAP output).

- reduce(): climatologies and other reductions (calendar groups, several axes, every op, the
  split along a reduced, a grouped and a kept dimension, float and int arrays) on the cluster
  equal the in-process answers (counts, keys, min and max exactly; sums, means and std within
  the documented bound), and are bit-identical to the same parts merged in one process (the
  answer does not depend on the number of workers). The NumPy merge of float partials equals
  the row-by-row merge (still used for integer sums) bit for bit.
- xarray with chunks={}: a mean over time and a monthly groupby computed on the cluster equal
  NumPy's over the values and reduce()'s.
- sql(): map/combine (per-latitude means; a join with a DataFrame shipped to the tasks; a
  box pushed down inside each part) equal the single-process SQL over the whole table.
- A worker process killed (SIGKILL) while running a part of a reduction: the part is run
  again, the answer is bit-identical to the one merged in one process.
- Errors: unknown op, unknown dimension, a split dimension no array has, a file that is not an
  array.
- Remote: the same reduce() and xarray values on the array served by nginx over http (and by
  the S3 server when s3rver is installed), with the remote tests' servers (tests/remote/).

Environment: top_builddir, top_srcdir, CATERVA_PRELOAD.
"""
import logging
import math
import os
import shutil
import signal
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
from sqltap import plan, reexec_with_preload, report  # noqa: E402

reexec_with_preload()
BUILD = os.environ.get("top_builddir", ".")
SRC = os.environ.get("top_srcdir", os.path.join(HERE, "..", ".."))
os.environ["CATERVA_EXTENSION"] = os.path.abspath(os.path.join(BUILD, ".libs", "caterva.so"))
# the worker processes import the package too
os.environ["PYTHONPATH"] = os.path.join(os.path.abspath(SRC), "python") + \
    (":" + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
sys.path.insert(0, os.path.join(os.path.abspath(SRC), "python"))

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import xarray as xr  # noqa: E402

import caterva_sqlite as cs  # noqa: E402

NT, NLAT, NLON = 730, 18, 24


class InProcess:
    """A client that runs the same tasks here, one after the other: the parts and the merge of
    a cluster run, with one worker."""

    def submit(self, fn, *args, pure=True):
        return fn(*args)

    def gather(self, futures):
        return list(futures)


def make_arrays(tmp):
    db = cs.connect(isolation_level=None)
    path = os.path.join(tmp, "temps.b2nd")
    db.execute("CREATE VIRTUAL TABLE mk USING caterva('%s', shape='%d,%d,%d', dtype='float64', "
               "chunks='60,9,12', blocks='20,3,6', dims='time,lat,lon', "
               "coords='time:2022-01-01:1 day,lat:-85:10.0:degrees_north,lon:-172.5:15.0')"
               % (path, NT, NLAT, NLON))
    db.execute("INSERT INTO mk(time_index, lat_index, lon_index, value) "
               "SELECT time_index, lat_index, lon_index, CASE WHEN (time_index + lat_index * 7 + "
               "lon_index) % 13 = 0 THEN NULL ELSE 15 + 20 * sin(time_index / 58.1 + lat_index) "
               "- lat_index * 1.3 + lon_index / 7.0 + 1e6 * (lat_index = 3) END FROM mk")
    ipath = os.path.join(tmp, "counts.b2nd")
    db.execute("CREATE VIRTUAL TABLE mi USING caterva('%s', shape='%d,%d', dtype='int32', "
               "chunks='100,12', blocks='25,6', dims='time,lon', coords='time:2022-01-01:1 day')"
               % (ipath, NT, NLON))
    db.execute("INSERT INTO mi(time_index, lon_index, value) SELECT time_index, lon_index, "
               "(time_index * 7919 + lon_index * 104729) % 2000000 - 1000000 FROM mi")
    db.close()
    return path, ipath


def frames_close(a, b, rtol=1e-12):
    """Same columns and rows; keys, n, counts, min, max equal; other floats within rtol of the
    row's magnitude."""
    if list(a.columns) != list(b.columns) or len(a) != len(b):
        return False, "columns %s / %s, rows %d / %d" % (list(a.columns), list(b.columns), len(a), len(b))
    for c in a.columns:
        x, y = a[c].to_list(), b[c].to_list()
        for u, v in zip(x, y):
            if isinstance(u, float) and isinstance(v, float) and c in ("value", "sum", "mean", "std"):
                if not (math.isclose(u, v, rel_tol=rtol, abs_tol=1e-9) or (u != u and v != v)):
                    return False, "%s: %r != %r" % (c, u, v)
            elif not (u == v or (u is None and v is None) or
                      (isinstance(u, float) and u != u and isinstance(v, float) and v != v)):
                return False, "%s: %r != %r" % (c, u, v)
    return True, ""


REDUCTIONS = [("mean", "time:month", None), ("stats", "lat,lon", None), ("mean", "", None),
              ("std", "time", None), ("max", "time:season,lon", None), ("count", "time:year", None),
              ("sum", "lat", None), ("min", "time:7 days,lat", None), ("mean", "time:month", "lat"),
              ("stats", "time:3 months", "lon")]


def check_reduce(client, path, ipath):
    for op, axes, split in REDUCTIONS:
        local = cs.reduce(path, op, axes)
        dist = cs.reduce(path, op, axes, client=client, split=split)
        one = cs.reduce(path, op, axes, client=InProcess(), split=split)
        ok, why = frames_close(local, dist)
        same = dist.equals(one)
        report(ok and same and len(local) > 0,
               "reduce(%s, %r%s) on 2 workers equals the in-process answer (%d rows) and is "
               "bit-identical to the parts merged in one process" % (
                   op, axes, ", split=" + split if split else "", len(local)), why)
    check_merges(path)
    want = cs.reduce(ipath, "sum", "time")
    got = cs.reduce(ipath, "sum", "time", client=client)
    report(want.equals(got) and all(isinstance(v, int) for v in got["value"].to_list()),
           "integer sums over time on the cluster: exact, equal to the in-process ones")
    clim = cs.reduce(path, "mean", "time:month")
    report(list(clim.columns) == ["time", "lat", "lon", "value", "n"] and
           sorted(set(clim["time"])) == list(range(1, 13)) and len(clim) == 12 * NLAT * NLON,
           "a monthly climatology's frame: columns time (the month), lat, lon, value, n")
    check_lists(client, path)


def check_merges(path):
    """The NumPy merge of float partials (_merge_vec) gives, bit for bit, the frame of the
    row-by-row merge it replaced (_merge_rows, still used for integer sums)."""
    from caterva_sqlite import _reduce
    bad = []
    for op, axes, split in REDUCTIONS:
        vec = cs.reduce(path, op, axes, client=InProcess(), split=split)
        saved = _reduce._pack
        _reduce._pack = lambda rows, nk: ("r", rows)
        try:
            rows = cs.reduce(path, op, axes, client=InProcess(), split=split)
        finally:
            _reduce._pack = saved
        if not vec.equals(rows) or list(vec.dtypes) != list(rows.dtypes):
            bad.append("%s %s: %s" % (op, axes, frames_close(vec, rows, rtol=0)[1] or "dtypes"))
    report(not bad, "the vectorized merge of the parts equals the row-by-row merge bit for bit "
           "(%d reductions)" % len(REDUCTIONS), "\n".join(bad))


def check_lists(client, path):
    """Lists of statistics, and one definition of the columns: the named SQL table's."""
    local = cs.reduce(path, "mean,min,max", "time:month")
    dist = cs.reduce(path, ["mean", "min", "max"], "time:month", client=client, split="lon")
    ok, why = frames_close(local, dist)
    singles = {op: cs.reduce(path, op, "time:month")["value"].to_list()
               for op in ("mean", "min", "max")}
    same = all(local[op].to_list() == singles[op] for op in singles)
    report(ok and same and list(local.columns) == ["time", "lat", "lon", "mean", "min", "max", "n"],
           "reduce(path, 'mean,min,max', 'time:month'): one column per statistic, each equal to "
           "its single-op reduce; on 2 workers equal to the in-process answer", why)
    db = cs.connect(isolation_level=None)
    bad = []
    for op, axes in (("mean", "time"), ("stats", "lat,lon"), ("sum,std", "time:season,lon"),
                     ("avg", "")):
        db.execute("CREATE VIRTUAL TABLE temp.r USING caterva_reduce('%s', '%s', '%s')"
                   % (path, op, axes))
        sql_cols = [r[1] for r in db.execute("PRAGMA temp.table_info(r)")]
        sql_rows = db.execute("SELECT * FROM temp.r").fetchall()
        db.execute("DROP TABLE temp.r")
        py = cs.reduce(path, op, axes)
        distributed = cs.reduce(path, op, axes, client=InProcess())
        if list(py.columns) != sql_cols or list(distributed.columns) != sql_cols or \
                not pd.DataFrame(sql_rows, columns=sql_cols).equals(py):
            bad.append("%s %s: %s / %s / %s" % (op, axes, list(py.columns), sql_cols,
                                                list(distributed.columns)))
    db.close()
    report(not bad, "reduce()'s DataFrame has the columns and rows of the named SQL table "
           "CREATE VIRTUAL TABLE ... USING caterva_reduce(path, op, axes), in-process and split",
           "\n".join(bad))


def kill_once(marker, fn, *args):
    """Run fn(*args), except that the first call anywhere kills its own worker process."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return fn(*args)
    os.close(fd)
    os.kill(os.getpid(), signal.SIGKILL)


class KillingClient:
    """The cluster's client, but the 3rd task submitted kills the worker running it."""

    def __init__(self, client, marker):
        self.client, self.marker, self.n = client, marker, 0

    def submit(self, fn, *args, pure=True):
        self.n += 1
        if self.n == 3:
            return self.client.submit(kill_once, self.marker, fn, *args, pure=False)
        return self.client.submit(fn, *args, pure=pure)

    def gather(self, futures):
        return self.client.gather(futures)


def check_killed(client, tmp, path):
    want = cs.reduce(path, "stats", "time:month", client=InProcess())
    before = set(client.run(os.getpid).values())
    got = cs.reduce(path, "stats", "time:month", client=KillingClient(client, os.path.join(tmp, "killed")))
    client.wait_for_workers(2, timeout=60)
    after = set(client.run(os.getpid).values())
    report(os.path.exists(os.path.join(tmp, "killed")) and before != after and got.equals(want),
           "a worker killed (SIGKILL) while running a part: Dask reruns it elsewhere, the "
           "answer is bit-identical (workers %s, then %s)" % (sorted(before), sorted(after)))


def check_xarray(client, path):
    ds = xr.open_dataset(path, engine="caterva", chunks={})
    v = ds["temps"]
    ok_chunks = v.chunks == (tuple([60] * 12 + [10]), (9, 9), (12, 12))
    raw = xr.open_dataset(path, engine="caterva")["temps"].values
    m = v.mean("time").compute()
    ok_mean = np.allclose(m.values, np.nanmean(raw, axis=0), rtol=1e-12, atol=0)
    g = v.groupby("time.month").mean().compute()
    clim = cs.reduce(path, "mean", "time:month")
    cv = clim["value"].to_numpy().reshape(12, NLAT, NLON)
    ok_g = np.allclose(g.values, cv, rtol=1e-12, atol=0)
    report(ok_chunks and ok_mean and ok_g,
           "xarray chunks={} on the cluster: Dask chunks are the array's (%s); mean over time "
           "equals NumPy's, groupby('time.month').mean() equals reduce(..., 'time:month')"
           % (v.data.chunksize,))


def check_sql(client, path):
    db = cs.connect()
    db.execute("CREATE VIRTUAL TABLE temps USING caterva('%s')" % path)
    map_sql = "SELECT lat, sum(value) AS s, count(value) AS n FROM temps GROUP BY lat"
    combine = "SELECT lat, sum(s) / sum(n) AS mean, sum(n) AS n FROM parts GROUP BY lat ORDER BY lat"
    got = cs.sql(map_sql, {"temps": path}, "time", combine, client=client)
    want = db.execute("SELECT lat, avg(value), count(value) FROM temps GROUP BY lat ORDER BY lat").fetchall()
    ok = list(got.columns) == ["lat", "mean", "n"] and len(got) == len(want) and all(
        r[0] == w[0] and r[2] == w[2] and math.isclose(r[1], w[1], rel_tol=1e-12)
        for r, w in zip(got.itertuples(index=False), want))
    report(ok, "sql(): per-latitude means, map on 2 workers split along time + combine, equal "
           "the single-process GROUP BY (%d rows)" % len(want))
    stations = pd.DataFrame({"name": ["a", "b", "c", "d"], "lat": [-85.0, 5.0, 45.0, 85.0],
                             "lon": [-172.5, 2.5, 17.5, 172.5]})
    db.execute("CREATE TEMP TABLE st(name, lat, lon)")
    db.executemany("INSERT INTO st VALUES (?, ?, ?)", stations.itertuples(index=False))
    map2 = ("SELECT s.name, strftime('%m', t.time) AS m, max(t.value) AS hi, count(*) AS n "
            "FROM st s JOIN temps t ON t.lat = s.lat AND t.lon = s.lon "
            "WHERE t.time BETWEEN '2022-03-10' AND '2023-02-20' GROUP BY s.name, m")
    comb2 = "SELECT name, m, max(hi), sum(n) FROM parts GROUP BY name, m ORDER BY name, m"
    got2 = cs.sql(map2, {"temps": path, "st": stations}, "lon", comb2, client=client)
    want2 = db.execute(map2.replace("GROUP BY s.name, m", "GROUP BY s.name, m ORDER BY s.name, m")).fetchall()
    report([tuple(r) for r in got2.itertuples(index=False)] == [tuple(w) for w in want2] and len(want2) > 0,
           "sql(): a join with a DataFrame sent to every task and a date box pushed down, split "
           "along lon, equals the single-process join (%d rows)" % len(want2))
    union = cs.sql("SELECT count(*) AS n FROM temps WHERE lat > 0", {"temps": path}, "time",
                   client=client)
    report(len(union) == 13 and int(union["n"].sum()) == NT * 9 * NLON,
           "sql() without combine_sql: the union of the 13 parts' rows")
    db.close()


def raises(fn, exc, text):
    try:
        fn()
    except exc as e:
        return text in str(e), str(e)
    except Exception as e:  # noqa: BLE001
        return False, "%s: %s" % (type(e).__name__, e)
    return False, "no error"


def check_errors(client, tmp, path):
    ok, msg = raises(lambda: cs.reduce(path, "median", "time"), cs.CatervaError, "unknown op")
    report(ok, "reduce with an unknown op: %s" % msg)
    ok, msg = raises(lambda: cs.reduce(path, "mean", "depth", client=client), cs.CatervaError,
                     "not a dimension")
    report(ok, "reduce over an unknown dimension: %s" % msg)
    ok, msg = raises(lambda: cs.sql("SELECT 1", {"t": path}, "depth", client=client),
                     cs.CatervaError, "no array of tables has the dimension")
    report(ok, "sql split along a dimension no array has: %s" % msg)
    bad = os.path.join(tmp, "bad.b2nd")
    with open(bad, "wb") as f:
        f.write(b"\0" * 300)
    ok, msg = raises(lambda: cs.reduce(bad, "mean", "", client=client), cs.CatervaError,
                     "cannot open")
    report(ok, "reduce of a file that is not an array: %s" % msg)


def start_servers(tmp):
    """The remote tests' servers (nginx; the S3 server when s3rver is installed), and the
    environment the workers need for them, set before the cluster starts (workers inherit it).
    Returns (servers or None, reason they are not there)."""
    sys.path.insert(0, os.path.join(HERE, "..", "remote"))
    try:
        import servers
    except Exception as e:  # noqa: BLE001
        return None, "tests/remote/servers.py: %s" % e
    if shutil.which("nginx") is None and not os.path.exists("/usr/sbin/nginx"):
        return None, "needs nginx (sh tests/remote/deps.sh installs it)"
    what = "nginx,s3,fronts" if servers.find_s3rver() is not None else "nginx"
    s = servers.Servers(os.path.join(tmp, "srv"), what=what, lifetime=900).start()
    os.environ.update(NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost",
                      CURL_CA_BUNDLE=s.ca_file)
    if s.s3rver is not None:
        cred = s.credentials[0]
        os.environ.update(AWS_ACCESS_KEY_ID=cred["access_key"],
                          AWS_SECRET_ACCESS_KEY=cred["secret_key"], AWS_REGION=s.region,
                          AWS_ENDPOINT_URL=s.s3_endpoint)
        for k in ("AWS_SESSION_TOKEN", "AWS_NO_SIGN_REQUEST", "AWS_DEFAULT_REGION"):
            os.environ.pop(k, None)
    return s, ""


def check_remote(client, s, why, path):
    if s is None:
        report(True, "remote arrays # SKIP %s" % why)
        return
    shutil.copyfile(path, os.path.join(s.root, "temps.b2nd"))
    urls = [s.nginx_http + "/temps.b2nd"]
    if s.s3rver is not None:
        with open(path, "rb") as f:
            s.s3_put("temps.b2nd", f.read())
        urls.append("s3://%s/temps.b2nd" % s.bucket)
    local = cs.reduce(path, "mean", "time:month")
    lv = xr.open_dataset(path, engine="caterva")["temps"].isel(time=slice(100, 160)).values
    for url in urls:
        got = cs.reduce(url, "mean", "time:month", client=client)
        ok, why = frames_close(local, got)
        ds = xr.open_dataset(url, engine="caterva", chunks={})
        rv = ds["temps"].isel(time=slice(100, 160)).compute().values
        report(ok and np.array_equal(lv, rv, equal_nan=True),
               "%s: reduce on the cluster and xarray values equal the local file's"
               % url.split(":")[0], why)
    if s.s3rver is None:
        report(True, "s3:// # SKIP s3rver is not installed (sh tests/remote/deps.sh)")


def main():
    from dask.distributed import Client, LocalCluster
    tmp = tempfile.mkdtemp(prefix="cv-pydask-")
    cluster = client = srv = None
    try:
        path, ipath = make_arrays(tmp)
        srv, why = start_servers(tmp)
        cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                               dashboard_address=None, silence_logs=logging.ERROR)
        client = Client(cluster)
        pids = client.run(os.getpid)
        report(len(set(pids.values())) == 2, "a LocalCluster of 2 worker processes")
        check_reduce(client, path, ipath)
        check_killed(client, tmp, path)
        check_xarray(client, path)
        check_sql(client, path)
        check_errors(client, tmp, path)
        check_remote(client, srv, why, path)
    finally:
        if client is not None:
            client.close()
        if cluster is not None:
            cluster.close()
        if srv is not None:
            srv.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    plan()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""reduce(): caterva_reduce as a pandas DataFrame, in-process or over a Dask cluster.

The result is the named reduction of the extension (CREATE VIRTUAL TABLE ... USING
caterva_reduce(table, op, axes), ext/fn_reduce_named.c): the DataFrame's columns are that
table's columns, so SQL and Python share one definition of the result -- the kept and grouped
dimensions' names, then `value` (one statistic) or one column per listed statistic ('mean,min',
'stats'), then `n`. The extension validates op and axes.

On a cluster the array is cut along one dimension at chunk boundaries into a number of
parts fixed by the array (never by the workers). Each task runs caterva_reduce on its part
(WHERE d<k>_index BETWEEN lo AND hi) and returns, per output row, the partial statistics the
extension computes in C -- count, sum, min, max, and for std the mean and std (from which
M2 = n * std^2). The partials are merged here in the order of the parts: counts added, sums
added with Neumaier's compensation (integer sums exactly), min and max compared, (n, mean, M2)
combined with Chan, Golub and LeVeque's update (float partials come back as NumPy columns and
are merged with NumPy, part after part, by the same operations per output row as the
row-by-row merge, _merge_rows, which integer sums keep). The answer therefore does not depend on the
number of workers at all (bit for bit), and differs from the in-process one only within the
sum bound of docs/sql-reference.md (a part's sum obeys it; adding P partial sums with
compensation adds at most 2u * sum|x_i| more) and, for std, within 1e-12 relative.
"""
import math

import sqlite3

from ._conn import CatervaError, ident, local_connection, local_table, local_tables, quote
from ._meta import GridMeta

# the partial statistics a task returns, in this order (std: also mean and std)
_PARTIAL = ("count", "sum", "min", "max")
_PARTIAL_STD = _PARTIAL + ("mean", "std")
_ALIAS = {"avg": "mean"}
_SEASONS = {"DJF": 0, "MAM": 1, "JJA": 2, "SON": 3}
MAX_PARTS = 64


def _parse_axes(axes, dims):
    """{dimension number: None (reduced) or its group} from caterva_reduce's axes string."""
    out = {}
    if axes is None:
        return out
    if not isinstance(axes, str):
        axes = ",".join(axes)
    for item in axes.split(","):
        item = item.strip()
        if not item:
            continue
        name, _, group = item.partition(":")
        name = name.strip()
        if name in dims:
            k = dims.index(name)
        elif name.isdigit() and int(name) < len(dims):
            k = int(name)
        else:
            raise CatervaError("reduce: %r is not a dimension of the array (dimensions: %s)"
                               % (name, ", ".join(dims)))
        out[k] = group.strip() or None
    return out


def _columns(dims, reduced):
    """The kept and grouped dimensions, in array order: (number, name)."""
    return [(k, d) for k, d in enumerate(dims) if not (k in reduced and reduced[k] is None)]


def _named(db, table, op, axes):
    """This thread's named reduction over its table `table` (made once per op and axes)."""
    cache = local_tables()
    key = ("caterva_reduce", table, op, axes or "")
    name = cache.get(key)
    if name is None:
        name = "cv_red_%d" % len(cache)
        try:
            db.execute("CREATE VIRTUAL TABLE temp.%s USING caterva_reduce(%s, %s, %s)"
                       % (ident(name), quote(table), quote(op), quote(axes or "")))
        except sqlite3.Error as e:  # the extension's message
            raise CatervaError("reduce: %s" % e) from None
        cache[key] = name
    return name


def _columns_of(db, name):
    """The named reduction's columns (hidden ones left out), in order."""
    return [r[1] for r in db.execute("PRAGMA temp.table_info(%s)" % ident(name))]


def _select(db, sql, args=()):
    try:
        return db.execute(sql, args).fetchall()
    except sqlite3.Error as e:
        raise CatervaError("reduce: %s" % e) from None


def _partial(paths, options, op, axes, kept, part):
    """A task: the partial statistics of one part, rows (keys, indices, count, sum, min, max
    [, mean, std]) from a named reduction listing them (op: 'count,sum,min,max[,mean,std]'),
    packed by _pack."""
    db, table = local_table(paths, options)
    name = _named(db, table, op, axes)
    cols = [ident(d) for _, d in kept] + [ident(d + "_index") for _, d in kept]
    cols += op.split(",")
    split, lo, hi = part
    sql = "SELECT %s FROM temp.%s WHERE %s BETWEEN ? AND ?" % (
        ", ".join(cols), ident(name), ident(split + "_index"))
    return _pack(_select(db, sql, (lo, hi)), len(kept))


def _pack(rows, nk):
    """A part's rows as the task returns them: ("c", columns as NumPy arrays) when every sum is
    a float (or absent in an empty row), which the vectorized merge takes; else ("r", rows),
    kept as Python values (integer sums stay exact)."""
    import numpy as np
    if not rows:
        return ("r", rows)
    cols = list(zip(*rows))
    if not all(type(v) is float or (v is None and not n) for v, n in zip(cols[2 * nk + 1],
                                                                         cols[2 * nk])):
        return ("r", rows)
    out = []
    for j, c in enumerate(cols):
        if j >= 2 * nk + 1:
            out.append(np.array(c, dtype=np.float64))  # None (empty rows) -> NaN, ignored
        elif j == 2 * nk:
            out.append(np.array(c, dtype=np.int64))
        else:
            a = np.array(c)
            out.append(a if a.dtype.kind in "iufU" else np.array(c, dtype=object))
    return ("c", out)


class _Acc:
    """Merged statistics of one output row."""
    __slots__ = ("n", "s", "c", "lo", "hi", "mean", "m2", "first")

    def __init__(self, first):
        self.n, self.s, self.c, self.lo, self.hi = 0, None, 0.0, None, None
        self.mean, self.m2, self.first = 0.0, 0.0, first

    def add(self, n, s, lo, hi, mean=None, std=None):
        if n == 0:
            return
        if self.s is None:
            self.s = s
        elif isinstance(self.s, int) and isinstance(s, int):
            self.s += s
        else:  # Neumaier
            t = self.s + s
            if abs(self.s) >= abs(s):
                self.c += (self.s - t) + s
            else:
                self.c += (s - t) + self.s
            self.s = t
        self.lo = lo if self.lo is None or lo < self.lo else self.lo
        self.hi = hi if self.hi is None or hi > self.hi else self.hi
        if mean is not None:
            m2 = std * std * n
            tot = self.n + n
            delta = mean - self.mean
            self.mean += delta * n / tot
            self.m2 += m2 + delta * delta * self.n * n / tot
        self.n += n

    def result(self):
        n = self.n
        s = self.s if self.s is None or isinstance(self.s, int) else self.s + self.c
        mean = s / n if n else None
        std = math.sqrt(max(self.m2, 0.0) / n) if n else None
        return {"count": n, "sum": s, "mean": mean, "min": self.lo, "max": self.hi, "std": std}


def _sort_key(kept, reduced):
    """Rows in caterva_reduce's order: kept dimensions by index, groups by key."""
    def key(item):
        keys, first = item
        out = []
        for j, (k, _) in enumerate(kept):
            if reduced.get(k):
                v = keys[j]
                out.append((0, _SEASONS[v]) if v in _SEASONS else (1, v))
            else:
                out.append((0, first[j]))
        return tuple(out)
    return key


def _merge_rows(results, kept, reduced):
    """The partials merged row by row in Python (_Acc): [(first keys and indices, statistics)]
    in caterva_reduce's order. Used for integer sums (kept exact as Python ints) and as the
    reference the vectorized merge is tested against."""
    accs = {}
    for rows in results:
        for r in rows:
            nk = len(kept)
            keys = tuple(r[:nk])
            # a kept dimension is known by its index, a group by its key
            ident = tuple(r[nk + j] if not reduced.get(k) else keys[j] for j, (k, _) in enumerate(kept))
            acc = accs.get(ident)
            if acc is None:
                acc = accs[ident] = _Acc((keys, tuple(r[nk:2 * nk])))
            acc.add(*r[2 * nk:])
    key = _sort_key(kept, reduced)
    accs = sorted(accs.values(), key=lambda a: key(a.first))
    return [(a.first[0], a.result()) for a in accs]


def _rows_frame(columns, kept, rows, op):
    """_merge_rows' rows under the named reduction's columns: dimensions, `value` (the one
    statistic op names) or the statistics, `n`."""
    import pandas as pd
    names = [name for _, name in kept]
    data = {}
    for c in columns:
        if c in names:
            j = names.index(c)
            data[c] = [r[0][j] for r in rows]
        else:
            data[c] = [r[1][_stat_of(c, op)] for r in rows]
    return pd.DataFrame(data, columns=columns)


def _stat_of(column, op):
    st = "count" if column == "n" else op.strip().lower() if column == "value" else column
    return _ALIAS.get(st, st)


def _merge_vec(results, kept, reduced):
    """The partials merged with NumPy, one part at a time in the order of the parts, with the
    same floating-point operations per output row as _Acc.add (the answer is bit for bit
    _merge_rows'): {"keys": [one list per kept dimension], statistic: array}, in
    caterva_reduce's order. A part holds each output row at most once."""
    import numpy as np
    import pandas as pd
    nk = len(kept)
    parts = [p for p in results if len(p[0])]
    if not parts:
        return None
    cols = []
    for i in range(len(parts[0])):
        pieces = [p[i] for p in parts]
        if len({a.dtype.kind for a in pieces}) > 1:
            pieces = [a.astype(object) for a in pieces]
        cols.append(np.concatenate(pieces))
    sizes = [len(p[0]) for p in parts]
    idents = pd.DataFrame({j: cols[nk + j] if not reduced.get(k) else cols[j]
                           for j, (k, _) in enumerate(kept)})
    if nk:
        ids = idents.groupby(list(range(nk)), sort=False, dropna=False).ngroup().to_numpy()
    else:
        ids = np.zeros(len(cols[0]), dtype=np.int64)
    g = int(ids.max()) + 1
    first = np.full(g, len(ids), dtype=np.int64)
    np.minimum.at(first, ids, np.arange(len(ids)))
    n = np.zeros(g, dtype=np.int64)
    s, c = np.zeros(g), np.zeros(g)
    lo, hi = np.full(g, np.nan), np.full(g, np.nan)
    mean, m2 = np.zeros(g), np.zeros(g)
    has = np.zeros(g, dtype=bool)
    with_std = len(cols) > 2 * nk + 4
    start = 0
    for size in sizes:
        sl = slice(start, start + size)
        start += size
        cnt = cols[2 * nk][sl]
        m = cnt > 0
        idx, cnt = ids[sl][m], cnt[m]
        sp = cols[2 * nk + 1][sl][m].astype(np.float64)
        lp = cols[2 * nk + 2][sl][m].astype(np.float64)
        hp = cols[2 * nk + 3][sl][m].astype(np.float64)
        new = ~has[idx]
        a = s[idx]
        t = a + sp
        comp = np.where(np.abs(a) >= np.abs(sp), (a - t) + sp, (sp - t) + a)
        s[idx] = np.where(new, sp, t)
        c[idx] = np.where(new, c[idx], c[idx] + comp)
        lo[idx] = np.where(new | (lp < lo[idx]), lp, lo[idx])
        hi[idx] = np.where(new | (hp > hi[idx]), hp, hi[idx])
        if with_std:
            mp = cols[2 * nk + 4][sl][m].astype(np.float64)
            sd = cols[2 * nk + 5][sl][m].astype(np.float64)
            n0 = n[idx]
            tot = n0 + cnt
            delta = mp - mean[idx]
            mean[idx] = mean[idx] + delta * cnt / tot
            m2[idx] = m2[idx] + (sd * sd * cnt + delta * delta * n0 * cnt / tot)
        n[idx] += cnt
        has[idx] = True
    with np.errstate(invalid="ignore", divide="ignore"):
        total = s + c
        out = {"count": n, "sum": total, "mean": total / n, "min": lo, "max": hi,
               "std": np.sqrt(np.maximum(m2, 0.0) / n)}
    for k in ("sum", "mean", "min", "max", "std"):
        out[k] = np.where(has, out[k], np.nan)
    # caterva_reduce's order: kept dimensions by index, groups by key (seasons in their order)
    order = pd.DataFrame({"_": np.zeros(g)})
    by = []
    for j, (k, _) in enumerate(kept):
        if reduced.get(k):
            keys = cols[j][first]
            if all(v in _SEASONS for v in keys.tolist()):
                order["%d" % j] = [_SEASONS[v] for v in keys.tolist()]
            else:
                order["%d" % j] = keys.tolist()
        else:
            order["%d" % j] = cols[nk + j][first].tolist()
        by.append("%d" % j)
    perm = order.sort_values(by, kind="mergesort").index.to_numpy() if by else np.arange(g)
    out = {k: v[perm] for k, v in out.items()}
    out["keys"] = [cols[j][first][perm].tolist() for j in range(nk)]
    return out


def _vec_frame(columns, kept, merged, op):
    """_merge_vec's arrays under the named reduction's columns (as _rows_frame)."""
    import pandas as pd
    names = [name for _, name in kept]
    data = {}
    for col in columns:
        if col in names:
            data[col] = merged["keys"][names.index(col)]
        else:
            data[col] = merged[_stat_of(col, op)]
    return pd.DataFrame(data, columns=columns)


def _merged_frame(columns, kept, reduced, results, op):
    """The parts' partial statistics merged (module docstring) as the result's DataFrame."""
    if all(kind == "c" for kind, _ in results if _):
        merged = _merge_vec([cols for kind, cols in results if kind == "c"], kept, reduced)
        if merged is not None:
            return _vec_frame(columns, kept, merged, op)
    rows = [list(zip(*[c.tolist() for c in part])) if kind == "c" else part
            for kind, part in results]
    return _rows_frame(columns, kept, _merge_rows(rows, kept, reduced), op)


def _parts(grid, split, nparts):
    n, c = grid.shape[split], grid.chunks[split]
    nchunks = (n + c - 1) // c if c > 0 else 0
    if nchunks == 0:
        return [(split, 0, -1)]
    nparts = max(1, min(nparts or min(nchunks, MAX_PARTS), nchunks))
    bounds = [nchunks * i // nparts for i in range(nparts + 1)]
    return [(split, bounds[i] * c, min(bounds[i + 1] * c, n) - 1) for i in range(nparts)]


def _choose_split(grid, split):
    if split is not None:
        if split not in grid.dims:
            raise CatervaError("reduce: split=%r is not a dimension of the array (dimensions: %s)"
                               % (split, ", ".join(grid.dims)))
        return grid.dims.index(split)
    if not grid.dims:
        raise CatervaError("reduce: a 0-d array cannot be split")
    counts = [(-((n + c - 1) // c if c else 0), k) for k, (n, c) in
              enumerate(zip(grid.shape, grid.chunks))]
    return min(counts)[1]


def reduce(path_or_url, op, axes, client=None, options=None, split=None, parts=None):
    """caterva_reduce(path_or_url, op, axes) as a pandas DataFrame with the columns of the named
    reduction CREATE VIRTUAL TABLE ... USING caterva_reduce(path_or_url, op, axes): one column
    per kept or grouped dimension (named as the array's dimension; labels and group keys as SQL
    gives them), then `value` when op is one statistic, or one column per statistic of a list
    ('mean,min,max', or a Python list of them; 'stats': count, sum, mean, min, max, std), then
    `n` (the cells present). With a dask.distributed client the work is split along `split`
    (default: the dimension with the most chunks) into `parts` pieces of whole chunks
    (default: one per chunk, at most 64) and merged in a fixed order (module docstring);
    without one it runs here, in one query. `options` are table options (remote ones)."""
    if isinstance(op, (list, tuple)):
        op = ",".join(op)
    if not isinstance(op, str):
        raise CatervaError("reduce: op must be a string or a list of statistics, not %r" % (op,))
    db = local_connection()
    grid = GridMeta(db, path_or_url, options)
    if len(grid.paths) != 1:
        raise CatervaError("reduce: one array at a time (%d given)" % len(grid.paths))
    reduced = _parse_axes(axes, grid.dims)
    kept = _columns(grid.dims, reduced)
    if isinstance(axes, (list, tuple)):
        axes = ",".join(axes)
    paths, opts = grid.paths, grid.options
    db, table = local_table(paths, opts)
    name = _named(db, table, op, axes)
    if client is None:
        import pandas as pd
        try:
            cur = db.execute("SELECT * FROM temp.%s" % ident(name))
            rows = cur.fetchall()
        except sqlite3.Error as e:
            raise CatervaError("reduce: %s" % e) from None
        return pd.DataFrame(rows, columns=[d[0] for d in cur.description])
    columns = _columns_of(db, name)
    stats = {_ALIAS.get(c, c) for c in columns}
    if "value" in columns:
        stats.add(_ALIAS.get(op.strip().lower(), op.strip().lower()))
    task_op = ",".join(_PARTIAL_STD if "std" in stats else _PARTIAL)
    k = _choose_split(grid, split)
    futures = [client.submit(_partial, paths, opts, task_op, axes, kept,
                             (grid.dims[p[0]], p[1], p[2]), pure=False)
               for p in _parts(grid, k, parts)]
    results = client.gather(futures)
    return _merged_frame(columns, kept, reduced, results, op)

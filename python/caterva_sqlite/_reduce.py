"""reduce(): caterva_reduce as a pandas DataFrame, in-process or over a Dask cluster.

On a cluster the array is cut along one dimension at chunk boundaries into a number of
parts fixed by the array (never by the workers). Each task runs caterva_reduce on its part
(WHERE d<k>_index BETWEEN lo AND hi) and returns, per output row, the partial statistics the
extension computes in C -- count, sum, min, max, and for std the mean and std (from which
M2 = n * std^2). The partials are merged here in the order of the parts: counts added, sums
added with Neumaier's compensation (integer sums exactly), min and max compared, (n, mean, M2)
combined with Chan, Golub and LeVeque's update. The answer therefore does not depend on the
number of workers at all (bit for bit), and differs from the in-process one only within the
sum bound of docs/sql-reference.md (a part's sum obeys it; adding P partial sums with
compensation adds at most 2u * sum|x_i| more) and, for std, within 1e-12 relative.
"""
import math

from ._conn import CatervaError, local_connection, local_table
from ._meta import GridMeta

_OPS = ("count", "sum", "mean", "avg", "min", "max", "std", "stats")
_STATS = ("count", "sum", "mean", "min", "max", "std")
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


def _query(kept, stats, split=None):
    cols = ["d%d" % k for k, _ in kept] + ["d%d_index" % k for k, _ in kept] + list(stats)
    sql = "SELECT %s FROM caterva_reduce(?, ?, ?)" % ", ".join(cols)
    if split is not None:
        sql += " WHERE d%d_index BETWEEN ? AND ?" % split
    return sql


def _run(db, what, op, axes, kept, stats, part=None):
    args = [what, op, axes]
    split = None
    if part is not None:
        split = part[0]
        args += [part[1], part[2]]
    try:
        return db.execute(_query(kept, stats, split), args).fetchall()
    except Exception as e:  # sqlite3.Error: the extension's message
        raise CatervaError("reduce: %s" % e) from None


def _stats_for(op):
    return _STATS if op in ("std", "stats") else ("count", "sum", "min", "max")


def _partial(paths, options, op, axes, kept, part):
    """A task: the partial statistics of one part, [(keys, indices, count, sum, min, max
    [, mean, std])] as caterva_reduce gives them."""
    db, table = local_table(paths, options)
    return _run(db, table, op, axes, kept, _stats_for(op), part)


def _direct(rows, kept, op):
    """In-process: caterva_reduce's rows as they are (count, sum, mean, min, max[, std])."""
    nk = len(kept)
    out = []
    for r in rows:
        st = dict(zip(_STATS, r[2 * nk:]))
        st.setdefault("std", None)
        out.append((tuple(r[:nk]), st))
    return out


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


def _merge(results, kept, reduced, op):
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
            st = r[2 * nk:]
            if op in ("std", "stats"):
                acc.add(st[0], st[1], st[3], st[4], st[2], st[5])
            else:
                acc.add(st[0], st[1], st[2], st[3])
    key = _sort_key(kept, reduced)
    accs = sorted(accs.values(), key=lambda a: key(a.first))
    return [(a.first[0], a.result()) for a in accs]


def _frame(kept, rows, op):
    import pandas as pd
    cols = [name for _, name in kept]
    data = {c: [r[0][j] for r in rows] for j, c in enumerate(cols)}
    v = "mean" if op == "avg" else op
    data["value"] = [None if op == "stats" else r[1][v] for r in rows]
    data["n"] = [r[1]["count"] for r in rows]
    if op == "stats":
        for s in _STATS:
            data[s] = [r[1][s] for r in rows]
    return pd.DataFrame(data, columns=list(data))


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
    """caterva_reduce(path_or_url, op, axes) as a pandas DataFrame: one column per kept or
    grouped dimension (named as the array's dimension; labels as the SQL function gives them),
    then `value` (the statistic op names; None for 'stats', which adds count, sum, mean, min,
    max and std) and `n` (the cells present). With a dask.distributed client the work is split
    along `split` (default: the dimension with the most chunks) into `parts` pieces of whole
    chunks (default: one per chunk, at most 64) and merged in a fixed order (module docstring);
    without one it runs here, in one call. `options` are table options (remote ones)."""
    if op not in _OPS:
        raise CatervaError("reduce: unknown op %r (known: %s)" % (op, ", ".join(_OPS)))
    db = local_connection()
    grid = GridMeta(db, path_or_url, options)
    if len(grid.paths) != 1:
        raise CatervaError("reduce: one array at a time (%d given)" % len(grid.paths))
    reduced = _parse_axes(axes, grid.dims)
    kept = _columns(grid.dims, reduced)
    if isinstance(axes, (list, tuple)):
        axes = ",".join(axes)
    paths, opts = grid.paths, grid.options
    if client is None:
        db, table = local_table(paths, opts)
        rows = _run(db, table, op, axes, kept, _STATS if op in ("std", "stats") else _STATS[:5])
        return _frame(kept, _direct(rows, kept, op), op)
    k = _choose_split(grid, split)
    futures = [client.submit(_partial, paths, opts, op, axes, kept, p, pure=False)
               for p in _parts(grid, k, parts)]
    results = client.gather(futures)
    return _frame(kept, _merge(results, kept, reduced, op), op)

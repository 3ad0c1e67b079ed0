"""sql(): SQL on parts of arrays, one Dask task per part, the parts combined in SQLite.

Each task opens a connection of its own, makes every array of `tables` a caterva table
restricted to its part of the `split` dimension (the table option range=dim:start:stop,
inside which the pushdown of the query's own constraints works as usual), makes every
DataFrame of `tables` an ordinary table, and runs map_sql. The tasks' rows, in the order of
the parts, become the table `parts` of a fresh connection, over which combine_sql runs.
Parts are whole chunks of the first array with that dimension; their number depends on the
array, never on the workers, so the answer does not depend on how many there are.
"""
import os

from ._conn import CatervaError, connect, ident, local_connection, quote
from ._meta import GridMeta, expand_paths

MAX_PARTS = 64


def _is_frame(obj):
    return hasattr(obj, "to_sql") and hasattr(obj, "columns")


def _table_sql(name, paths, options, part):
    args = [quote(p) for p in paths]
    args += ["%s=%s" % (k, quote(v)) for k, v in (options or {}).items()]
    if part is not None:
        args.append("range=%s" % quote("%s:%d:%d" % part))
    return "CREATE VIRTUAL TABLE temp.%s USING caterva(%s)" % (ident(name), ", ".join(args))


def _map_task(map_sql, arrays, frames, part):
    """A task: (column names, rows) of map_sql over this part. arrays: [(name, paths, options,
    split dimension's name or None)]."""
    db = connect()
    try:
        for name, paths, options, dim in arrays:
            p = (dim, part[0], part[1]) if dim is not None else None
            db.execute(_table_sql(name, paths, options, p))
        for name, df in frames:
            df.to_sql(name, db, index=False)
        try:
            cur = db.execute(map_sql)
        except Exception as e:
            raise CatervaError("sql: map_sql failed on %s [%d, %d): %s" % (
                "the part", part[0], part[1], e)) from None
        cols = [d[0] for d in cur.description] if cur.description else []
        return cols, cur.fetchall()
    finally:
        db.close()


def _parts(n, c, nparts):
    nchunks = (n + c - 1) // c if c > 0 else 0
    if nchunks == 0:
        return [(0, 0)]
    nparts = max(1, min(nparts or min(nchunks, MAX_PARTS), nchunks))
    b = [nchunks * i // nparts for i in range(nparts + 1)]
    return [(b[i] * c, min(b[i + 1] * c, n)) for i in range(nparts)]


def _combine(results, combine_sql):
    import pandas as pd
    cols = results[0][0]
    for c, _ in results:
        if c != cols:
            raise CatervaError("sql: the parts gave different columns (%s, %s)" % (cols, c))
    if not cols:
        raise CatervaError("sql: map_sql returns no columns")
    rows = [r for _, rs in results for r in rs]
    if combine_sql is None:
        return pd.DataFrame.from_records(rows, columns=cols)
    db = connect()
    try:
        db.execute("CREATE TEMP TABLE parts(%s)" % ", ".join(ident(c) for c in cols))
        db.executemany("INSERT INTO parts VALUES (%s)" % ", ".join("?" * len(cols)), rows)
        try:
            cur = db.execute(combine_sql)
        except Exception as e:
            raise CatervaError("sql: combine_sql failed: %s" % e) from None
        out = [d[0] for d in cur.description] if cur.description else []
        return pd.DataFrame.from_records(cur.fetchall(), columns=out)
    finally:
        db.close()


def sql(map_sql, tables, split, combine_sql=None, client=None, options=None, parts=None):
    """Run map_sql on every part of the `split` dimension and combine_sql over their union.

    tables: {name: path or URL, list of paths (the arrays of one grid, as one table), or a
    pandas DataFrame (an ordinary table, sent to every task)}. Arrays with the `split`
    dimension are restricted to each part; arrays without it are given whole to every task.
    options: table options for every array (remote ones). parts: how many parts (default: one
    per chunk along `split`, at most 64). Without a client the tasks run here, one by one.
    Returns a pandas DataFrame: combine_sql's rows, or the union of the parts without it."""
    if not isinstance(tables, dict) or not tables:
        raise CatervaError("sql: tables must be a dict of table names to arrays or DataFrames")
    db = local_connection()
    arrays, frames, extent = [], [], None
    for name, what in tables.items():
        if _is_frame(what):
            frames.append((name, what))
            continue
        if not isinstance(what, (str, os.PathLike, list, tuple)):
            raise CatervaError("sql: table %r: not a path, URL, list of paths or DataFrame" % name)
        grid = GridMeta(db, what, options)
        dim = None
        if split in grid.dims:
            k = grid.dims.index(split)
            dim = split
            if extent is None:
                extent = (grid.shape[k], grid.chunks[k], name)
            elif extent[0] != grid.shape[k]:
                raise CatervaError("sql: %s has %d along %s, %s has %d" % (
                    name, grid.shape[k], split, extent[2], extent[0]))
        arrays.append((name, expand_paths(what), dict(options or {}), dim))
    if extent is None:
        raise CatervaError("sql: no array of tables has the dimension %r" % (split,))
    ranges = _parts(extent[0], extent[1], parts)
    if client is None:
        results = [_map_task(map_sql, arrays, frames, r) for r in ranges]
    else:
        futures = [client.submit(_map_task, map_sql, arrays, frames, r, pure=False) for r in ranges]
        results = client.gather(futures)
    return _combine(results, combine_sql)

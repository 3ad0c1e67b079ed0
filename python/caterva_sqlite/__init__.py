"""caterva_sqlite: Blosc2 N-d arrays from Python through the caterva SQLite extension.

- connect(database=":memory:"): a sqlite3.Connection with the extension loaded;
- xr.open_dataset(path_or_url, engine="caterva"): the xarray backend (xarray_backend.py);
- reduce(path_or_url, op, axes, client=None): caterva_reduce as a pandas DataFrame, in-process
  or spread over a dask.distributed cluster (_reduce.py);
- sql(map_sql, tables, split, combine_sql=None, client=None): SQL run on parts of arrays
  by Dask tasks, combined in SQLite (_sql.py).

Needs NumPy; xarray, pandas and dask only for the functions that use them. See docs/python.md.
"""
from ._conn import connect, find_extension, local_connection
from ._errors import CatervaError, ExtensionError

__all__ = ["connect", "find_extension", "local_connection", "reduce", "sql", "open_dataset",
           "CatervaError", "ExtensionError"]


def reduce(path_or_url, op, axes, client=None, **kwargs):
    """caterva_reduce(path_or_url, op, axes) as a pandas DataFrame (see _reduce.reduce)."""
    from ._reduce import reduce as _r
    return _r(path_or_url, op, axes, client=client, **kwargs)


def sql(map_sql, tables, split, combine_sql=None, client=None, **kwargs):
    """map_sql on parts of arrays, combined by combine_sql (see _sql.sql)."""
    from ._sql import sql as _s
    return _s(map_sql, tables, split, combine_sql=combine_sql, client=client, **kwargs)


def open_dataset(path_or_url, **kwargs):
    """xarray.open_dataset(path_or_url, engine="caterva", **kwargs)."""
    import xarray as xr
    return xr.open_dataset(path_or_url, engine="caterva", **kwargs)

"""The xarray backend: xr.open_dataset(path_or_url, engine="caterva").

An array becomes a variable whose dimensions are the table's dimension columns; the
coordinates stored in the array become coordinate variables, decoded as xarray decodes CF
(dates through the units "<unit> since <date>" and the calendar); the array's attributes
are the variable's, its fill value its _FillValue (masked as xarray masks). The arrays of
one grid (a directory of arrays, or a list of paths) are the variables of one Dataset.

Nothing is read until asked: each variable is a CatervaBackendArray whose __getitem__ reads
the one box it is asked for with caterva_slice() on this thread's connection. With
chunks={} the Dask chunks are the array's own (encoding["preferred_chunks"]), so a task
reads whole chunks and no two tasks decode one.
"""
import json
import os
import sqlite3

import numpy as np
import xarray as xr
from xarray.backends import BackendArray, BackendEntrypoint
from xarray.core import indexing

from ._conn import CatervaError, local_connection, local_table
from ._meta import ARRAY_SUFFIXES, GridMeta, is_remote

_KNOWN_OPTIONS = ("dims", "cache_mb", "lock_reads", "endpoint", "region", "path_style",
                  "http_connections", "remote_cache_mb", "http_retries", "http_timeout_ms",
                  "remote_fetch")


def check_options(options):
    options = dict(options or {})
    bad = sorted(k for k in options if k not in _KNOWN_OPTIONS)
    if bad:
        raise ValueError("caterva: unknown option%s %s (known: %s)" % (
            "s" if len(bad) > 1 else "", ", ".join(bad), ", ".join(_KNOWN_OPTIONS)))
    return options


def read_box(path, options, dtype, start, stop):
    """The items of the box [start, stop) of the array at path, a C-order NumPy array, read
    on this thread's connection through a table over the array (so that its options apply)."""
    shape = tuple(b - a for a, b in zip(start, stop))
    if any(n == 0 for n in shape):
        return np.empty(shape, dtype=dtype)
    db, table = local_table(path, options)
    try:
        if not start:
            blob = db.execute("SELECT caterva_slice(?)", (table,)).fetchone()[0]
        else:
            blob = db.execute("SELECT caterva_slice(?, ?, ?)",
                              (table, json.dumps(list(start)), json.dumps(list(stop)))).fetchone()[0]
    except sqlite3.Error as e:
        raise CatervaError("reading %s [%s, %s): %s" % (path, list(start), list(stop), e)) from None
    return np.frombuffer(blob, dtype=dtype).reshape(shape)


class CatervaBackendArray(BackendArray):
    """One array, read lazily box by box (basic indexing: integers and slices)."""

    def __init__(self, path, options, shape, dtype):
        self.path = path
        self.options = options
        self.shape = tuple(shape)
        self.dtype = dtype

    def __getitem__(self, key):
        return indexing.explicit_indexing_adapter(key, self.shape, indexing.IndexingSupport.BASIC,
                                                  self._getitem)

    def _getitem(self, key):
        start, stop, post = [], [], []
        for k, n in zip(key, self.shape):
            if isinstance(k, slice):
                # xarray hands basic indexers over with positive steps (_decompose_slice)
                a, b, step = k.indices(n)
                if step <= 0 or b <= a:
                    a = b = 0
                    step = 1
                start.append(a)
                stop.append(b)
                post.append(slice(None, None, step))
            else:
                i = int(k)
                start.append(i)
                stop.append(i + 1)
                post.append(0)
        box = read_box(self.path, self.options, self.dtype, start, stop)
        return box[tuple(post)] if post else box


def _coord_variables(grid):
    out = {}
    for d, (values, attrs) in grid.coords.items():
        out[d] = xr.Variable((d,), values, attrs=dict(attrs))
    return out


def _data_variable(grid, a, options):
    attrs = dict(a.attrs)
    if a.fill is not None:
        attrs["_FillValue"] = a.fill
    data = indexing.LazilyIndexedArray(CatervaBackendArray(a.path, options, a.shape, a.dtype))
    enc = {"chunks": a.chunks, "preferred_chunks": dict(zip(grid.dims, a.chunks)),
           "source": a.path, "dtype": a.dtype}
    return xr.Variable(grid.dims, data, attrs=attrs, encoding=enc)


def open_caterva(filename_or_obj, options=None, mask_and_scale=True, decode_times=True,
                 decode_coords=True, drop_variables=None, use_cftime=None, decode_timedelta=None):
    """The Dataset of an array, or of the arrays of one grid (see the module docstring)."""
    options = check_options(options)
    grid = GridMeta(local_connection(), filename_or_obj, options)
    variables = _coord_variables(grid)
    for a in grid.arrays:
        if a.name in variables:
            raise CatervaError("variable %r has the name of a dimension" % a.name)
        variables[a.name] = _data_variable(grid, a, options)
    vars_, attrs, coord_names = xr.conventions.decode_cf_variables(
        variables, {}, mask_and_scale=mask_and_scale, decode_times=decode_times,
        decode_coords=decode_coords, drop_variables=drop_variables, use_cftime=use_cftime,
        decode_timedelta=decode_timedelta)
    ds = xr.Dataset(vars_, attrs=attrs)
    ds = ds.set_coords(coord_names.intersection(vars_))
    ds.encoding["source"] = grid.paths[0] if len(grid.paths) == 1 else list(grid.paths)
    return ds


class CatervaBackendEntrypoint(BackendEntrypoint):
    """engine="caterva": Blosc2 arrays (.b2nd, .b2frame, sparse frame directories, http(s)://
    and s3:// URLs) through the caterva SQLite extension."""

    description = "Blosc2 N-d arrays through the caterva SQLite extension"
    url = "docs/python.md"
    open_dataset_parameters = ("filename_or_obj", "drop_variables", "options", "mask_and_scale",
                               "decode_times", "decode_coords", "use_cftime", "decode_timedelta")

    def open_dataset(self, filename_or_obj, *, drop_variables=None, options=None,
                     mask_and_scale=True, decode_times=True, decode_coords=True, use_cftime=None,
                     decode_timedelta=None):
        return open_caterva(filename_or_obj, options=options, mask_and_scale=mask_and_scale,
                            decode_times=decode_times, decode_coords=decode_coords,
                            drop_variables=drop_variables, use_cftime=use_cftime,
                            decode_timedelta=decode_timedelta)

    def guess_can_open(self, filename_or_obj):
        if isinstance(filename_or_obj, (list, tuple)):
            return bool(filename_or_obj) and all(self.guess_can_open(p) for p in filename_or_obj)
        try:
            p = os.fspath(filename_or_obj)
        except TypeError:
            return False
        if not isinstance(p, str):
            return False
        if is_remote(p):
            return p.rstrip("/").endswith(ARRAY_SUFFIXES)
        return p.rstrip("/").endswith(ARRAY_SUFFIXES)

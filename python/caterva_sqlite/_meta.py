"""What an array (or the arrays of one grid) holds, read once through the extension: the
dimension names, shape, chunks, dtype, attributes, fill value and coordinates, as plain
Python and NumPy values that the xarray backend, reduce() and sql() share."""
import os
import sqlite3

import numpy as np

from ._conn import CatervaError, info, open_table

ARRAY_SUFFIXES = (".b2nd", ".b2frame", ".caterva")
# attributes the library keeps for itself: not shown as the variable's attributes
_PRIVATE_ATTRS = ("_coords", "_ARRAY_DIMENSIONS", "_FillValue", "name")


def is_remote(path):
    return isinstance(path, str) and path.split("://", 1)[0].lower() in ("http", "https", "s3")


def expand_paths(what):
    """The arrays of `what`: a path or URL (one array), a list of them (the arrays of one
    grid), or a directory holding several arrays (what caterva_import(..., '*') writes; a
    sparse frame's own directory, with chunks.b2frame, is one array)."""
    if isinstance(what, (list, tuple)):
        if not what:
            raise CatervaError("no array given")
        return [os.fspath(p) for p in what]
    what = os.fspath(what)
    if not is_remote(what) and os.path.isdir(what) and \
            not os.path.exists(os.path.join(what, "chunks.b2frame")):
        found = sorted(os.path.join(what, n) for n in os.listdir(what)
                       if n.endswith(ARRAY_SUFFIXES))
        if not found:
            raise CatervaError("%s is a directory without arrays (no *.b2nd, *.b2frame or "
                               "*.caterva in it, and it is not a sparse frame)" % what)
        return found
    return [what]


def var_name(path, attrs):
    """A variable's name as a table over several arrays names its column: the `name`
    attribute, else the file's stem."""
    name = attrs.get("name")
    if isinstance(name, str) and name:
        return name
    base = path.rstrip("/").rsplit("/", 1)[-1]
    return base.split(".", 1)[0] if not base.startswith(".") else base


def numpy_dtype(inf):
    if inf.get("dtype"):
        return np.dtype(inf["dtype"])
    return np.dtype("V%d" % inf["itemsize"])


def coord_values(entry, n):
    """The raw labels (numbers in the coordinate's units) of indices 0..n-1."""
    if entry.get("kind") == "regular":
        return float(entry["start"]) + float(entry["step"]) * np.arange(n, dtype=np.float64)
    vals = entry.get("values") or []
    if len(vals) < n:
        raise CatervaError("a coordinate holds %d labels for an extent of %d" % (len(vals), n))
    return np.array([np.nan if v is None else v for v in vals[:n]], dtype=np.float64)


def fill_value(attrs, dtype):
    """The array's fill value as a NumPy scalar of its dtype, or None (no _FillValue, or a
    dtype xarray does not mask)."""
    if "_FillValue" not in attrs or dtype.kind not in "iufc":
        return None
    fv = attrs["_FillValue"]
    if fv is None:
        fv = np.nan  # JSON has no NaN: caterva_info writes it as null
    if dtype.kind in "iu" and (fv is None or isinstance(fv, float) and not fv.is_integer()):
        return None
    try:
        return np.array(fv).astype(dtype.newbyteorder("="))[()]
    except (TypeError, ValueError, OverflowError):
        return None


class ArrayMeta:
    """One array: path, dims, shape, chunks, blocks, dtype, attrs, fill, name."""

    def __init__(self, path, dims, inf):
        self.path = path
        self.dims = tuple(dims)
        self.shape = tuple(inf["shape"])
        self.chunks = tuple(inf["chunkshape"])
        self.blocks = tuple(inf["blockshape"])
        self.dtype = numpy_dtype(inf)
        raw = inf.get("attributes") or {}
        self.fill = fill_value(raw, self.dtype)
        self.attrs = {k: v for k, v in raw.items() if k not in _PRIVATE_ATTRS}
        self.name = var_name(path, raw)
        self.coords = {}   # dim -> (raw labels, attrs: units, calendar)
        cinfo = inf.get("coords") or {}
        entries = (raw.get("_coords") or {}).get("dims") or []
        for k, d in enumerate(self.dims):
            if d not in cinfo or k >= len(entries) or not entries[k]:
                continue
            cattrs = {}
            if cinfo[d].get("units"):
                cattrs["units"] = cinfo[d]["units"]
            if cinfo[d].get("calendar"):
                cattrs["calendar"] = cinfo[d]["calendar"]
            self.coords[d] = (coord_values(entries[k], self.shape[k]), cattrs)


class GridMeta:
    """The arrays of one grid, as one table over them groups them."""

    def __init__(self, db, what, options=None):
        self.paths = expand_paths(what)
        self.options = dict(options or {})
        try:
            open_table(db, self.paths, self.options, name="cv_meta")
            cols = [r[1] for r in db.execute("PRAGMA temp.table_info(cv_meta)")]
            infos = [info(db, "cv_meta")]
            infos += [info(db, p) for p in self.paths[1:]]
        finally:
            try:
                db.execute("DROP TABLE IF EXISTS temp.cv_meta")
            except sqlite3.Error:
                pass
        ndim = infos[0]["ndim"]
        self.dims = tuple(cols[:ndim])
        self.arrays = [ArrayMeta(p, self.dims, inf) for p, inf in zip(self.paths, infos)]
        first = self.arrays[0]
        self.shape, self.chunks = first.shape, first.chunks
        names = [a.name for a in self.arrays]
        if len(self.arrays) > 1 or len(set(names)) != len(names):
            names = cols[ndim:]
        for a, n in zip(self.arrays, names):
            a.name = n
        self.coords = first.coords

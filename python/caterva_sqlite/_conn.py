"""Finding and loading the extension, and the per-thread connections the readers use.

The extension is found, in order, at the path in CATERVA_EXTENSION, in the directory
`make install` recorded (_installed.py, written at install time), or in the build tree
beside this package (build/.libs/caterva.so).
"""
import json
import os
import sqlite3
import threading

from ._errors import CatervaError, ExtensionError

_HERE = os.path.dirname(os.path.abspath(__file__))


def _installed_path():
    try:
        from . import _installed  # written by make install
    except ImportError:
        return None
    return os.path.join(_installed.PKGLIBDIR, "caterva.so")


def find_extension():
    """The path of caterva.so this package loads (see the module's docstring)."""
    env = os.environ.get("CATERVA_EXTENSION")
    if env:
        if not os.path.exists(env):
            raise ExtensionError("CATERVA_EXTENSION names %r, which does not exist" % env)
        return env
    inst = _installed_path()
    if inst:   # an installed package: its own extension, not a build tree's
        if os.path.exists(inst):
            return inst
        tried = [inst]
    else:
        build = os.path.normpath(os.path.join(_HERE, "..", "..", "build", ".libs", "caterva.so"))
        if os.path.exists(build):
            return build
        tried = [build]
    raise ExtensionError("the caterva extension was not found (tried %s); set CATERVA_EXTENSION "
                         "to the path of caterva.so" % ", ".join(tried))


def connect(database=":memory:", extension=None, **kwargs):
    """A sqlite3.Connection to `database` with the caterva extension loaded. `extension`
    overrides the search (find_extension). Other arguments go to sqlite3.connect."""
    path = extension or find_extension()
    db = sqlite3.connect(database, **kwargs)
    try:
        if not hasattr(db, "enable_load_extension"):
            raise ExtensionError(
                "this Python's sqlite3 module cannot load extensions (it was built without "
                "loadable extension support); use a Python whose sqlite3 can, such as "
                "Debian's /usr/bin/python3")
        db.enable_load_extension(True)
        try:
            db.load_extension(os.path.splitext(path)[0] if path.endswith(".so") else path)
        except sqlite3.Error as e:
            raise ExtensionError("cannot load the caterva extension %r: %s" % (path, e)) from None
        db.enable_load_extension(False)
    except BaseException:
        db.close()
        raise
    return db


# ---- one connection per thread of each process (readers, Dask tasks) ----------------------

_local = threading.local()


def local_connection():
    """This thread's connection (made on first use, again after a fork). Dask tasks and the
    xarray backend read through it, so no two threads share a connection."""
    pid = os.getpid()
    if getattr(_local, "pid", None) != pid:
        _local.pid = pid
        _local.db = connect(check_same_thread=False)
        _local.tables = {}
    return _local.db


def quote(s):
    """A SQL string literal."""
    return "'" + str(s).replace("'", "''") + "'"


def ident(s):
    return '"' + str(s).replace('"', '""') + '"'


def open_table(db, paths, options=None, name=None, cache=None):
    """Name of a temp caterva table over `paths` (one path or a list) with `options` (a dict of
    table options) on db, created unless `cache` (a dict) already holds it."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    paths = [os.fspath(p) for p in paths]
    opts = dict(options or {})
    key = (tuple(paths), tuple(sorted(opts.items())))
    if cache is not None and key in cache:
        return cache[key]
    if name is None:
        name = "cv_%d" % (len(cache) if cache is not None else 0)
        if cache is not None:
            while name in cache.values():
                name += "_"
    args = [quote(p) for p in paths]
    args += ["%s=%s" % (k, quote(v)) for k, v in opts.items()]
    try:
        db.execute("CREATE VIRTUAL TABLE temp.%s USING caterva(%s)" % (ident(name), ", ".join(args)))
    except sqlite3.Error as e:
        raise CatervaError("cannot open %s: %s" % (", ".join(paths), e)) from None
    if cache is not None:
        cache[key] = name
    return name


def local_tables():
    """This thread's dict of the tables made on its connection (by open_table and by reduce)."""
    local_connection()
    return _local.tables


def local_table(paths, options=None):
    """This thread's table over `paths` (see open_table)."""
    db = local_connection()
    return db, open_table(db, paths, options, cache=_local.tables)


def info(db, what):
    """caterva_info() of a table of db or a path, as a dict."""
    try:
        row = db.execute("SELECT caterva_info(?)", (os.fspath(what),)).fetchone()
    except sqlite3.Error as e:
        raise CatervaError("cannot open %s: %s" % (what, e)) from None
    return json.loads(row[0])

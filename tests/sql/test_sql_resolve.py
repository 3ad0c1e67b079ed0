#!/usr/bin/env python3
"""How the functions taking '<table or path>' resolve their first argument (ext/ext_conn.c).

A name is looked up as SQLite looks up a table in a statement: a qualified "schema.name" in
that schema, an unqualified name in temp, then main, then the attached schemas; tables of the
schema are connected on demand (a new connection has connected none). Anything else is a
path, including arguments with dots and slashes that SQLite cannot resolve. Each check reads
the array through caterva_info or caterva_slice and compares with what the table's file holds.

Environment: top_builddir (the build directory).
"""
import json
import os
import shutil
import sqlite3
import sys
import tempfile

import sqltap
from sqltap import connect_ext, plan, report, reexec_with_preload

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))


def connect(path):
    return connect_ext(EXT, path, isolation_level=None)


def shape_of(db, arg):
    try:
        return json.loads(db.execute("SELECT caterva_info(?)", (arg,)).fetchone()[0])["shape"]
    except sqlite3.Error as e:
        return "error: %s" % e


def main():
    reexec_with_preload()
    probe = connect_ext(EXT)
    if probe is None:
        return 0
    probe.close()
    tmp = tempfile.mkdtemp(prefix="caterva-resolve-")
    cwd = os.getcwd()
    try:
        os.chdir(tmp)
        main_db, aux_db = os.path.join(tmp, "m.db"), os.path.join(tmp, "aux.db")
        db = connect(main_db)
        db.execute("CREATE VIRTUAL TABLE t USING caterva('%s/a.b2nd', shape='3,4')" % tmp)
        db.execute("CREATE VIRTUAL TABLE other USING caterva('%s/o.b2nd', shape='9')" % tmp)
        db.execute("CREATE TABLE plain(x)")
        db.execute("INSERT INTO t(d0, d1, value) VALUES (1, 2, 7.5)")
        db.close()
        db = connect(aux_db)
        db.execute("CREATE VIRTUAL TABLE u USING caterva('%s/b.b2nd', shape='5')" % tmp)
        db.execute("CREATE VIRTUAL TABLE t USING caterva('%s/c.b2nd', shape='2,2,2')" % tmp)
        db.close()

        db = connect(main_db)
        report(shape_of(db, "t") == [3, 4],
               "a table of the schema, not connected yet, is connected on demand")
        report(shape_of(db, "main.t") == [3, 4] and shape_of(db, "MAIN.T") == [3, 4],
               "schema-qualified names, in any case")
        db.execute("ATTACH '%s' AS aux" % aux_db)
        report(shape_of(db, "aux.u") == [5] and shape_of(db, "u") == [5],
               "a table of an attached schema, qualified and unqualified")
        report(shape_of(db, "aux.t") == [2, 2, 2] and shape_of(db, "t") == [3, 4],
               "an unqualified name found in main and in an attached schema is main's")
        db.execute("CREATE VIRTUAL TABLE temp.t USING caterva('%s/d.b2nd', shape='6')" % tmp)
        report(shape_of(db, "t") == [6] and shape_of(db, "main.t") == [3, 4],
               "a TEMP table hides main's table of the same name, as in SQL")
        s1 = db.execute("SELECT caterva_slice('main.t')").fetchone()[0]
        s2 = db.execute("SELECT caterva_slice(?)", (os.path.join(tmp, "a.b2nd"),)).fetchone()[0]
        report(s1 == s2 and len(s1) == 96, "caterva_slice of a table and of its file agree")
        report(shape_of(db, "a.b2nd") == [3, 4] and shape_of(db, "./o.b2nd") == [9],
               "arguments that SQLite cannot resolve are paths (relative, with dots)")
        r = shape_of(db, "plain")
        report(isinstance(r, str) and "plain" in r,
               "an ordinary table's name is taken as a path and fails naming it", r)
        db.execute("ALTER TABLE other RENAME TO renamed")
        report(shape_of(db, "renamed") == [9], "a renamed table answers to its new name")
        db.execute("DROP TABLE temp.t")
        r = shape_of(db, "t")
        report(r == [3, 4], "once the TEMP table is dropped, main's again", r)
        db.close()
    finally:
        os.chdir(cwd)
        shutil.rmtree(tmp)
    plan()
    return 0 if all(sqltap._results) else 1


if __name__ == "__main__":
    sys.exit(main())

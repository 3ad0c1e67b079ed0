#!/usr/bin/env python3
"""Numeric text is a number where a plain table would take it (TAP).

The sqlite3 shell's `.import` of a CSV file makes TEXT columns; Python's csv module gives
strings. A plain table's REAL and INTEGER columns take '21.44', ' 7 ' and '1e3' as numbers
(SQLite's numeric affinity), so the value column and the index columns of a caterva table do
too -- then check them exactly as numbers: '2.5' into an integer dtype and '300' into uint8
stay errors, and text that is not a number ('abc', '12abc') stays an error naming the value.
Date labels keep taking ISO text.

Environment: top_builddir, SQLITE3_SHELL.
"""
import csv
import io
import os
import sqlite3

from sqltap import connect_ext, report, run_in_tmp, shell

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
SHELL = os.environ.get("SQLITE3_SHELL", "sqlite3")
CSV = "day,station,temp\n0,0,21.44\n0,1, 7 \n1,0,1e3\n1,1,-3.5\n2,3,0.125\n"


def shell_import(tmp):
    """The issue's session: .import, then INSERT ... SELECT without a single CAST."""
    with open(os.path.join(tmp, "obs.csv"), "w") as f:
        f.write(CSV)
    out, err = shell(SHELL, EXT, ".mode csv\n.import obs.csv obs\n"
                     "CREATE VIRTUAL TABLE a USING caterva('obs.b2nd', shape='0,50', "
                     "dtype='float32', dims='day,station', coords='day:2024-01-01:1 day');\n"
                     "INSERT INTO a(day_index, station, value) SELECT day, station, temp FROM obs;\n"
                     ".mode list\nSELECT day, station, value FROM a WHERE value IS NOT NULL "
                     "ORDER BY rowid;\nSELECT typeof(temp) FROM obs LIMIT 1;", tmp)
    want = ["2024-01-01|0|21.4400005340576", "2024-01-01|1|7.0", "2024-01-02|0|1000.0",
            "2024-01-02|1|-3.5", "2024-01-03|3|0.125", "text"]
    report(out.split() == want and not err,
           "the shell's .import of a CSV, then INSERT ... SELECT without casts",
           "stdout %r\nstderr %s" % (out, err))


def python_csv(tmp):
    db = connect_ext(EXT, isolation_level=None)
    db.execute("CREATE VIRTUAL TABLE p USING caterva('%s', shape='3,4', dtype='int16')"
               % os.path.join(tmp, "p.b2nd"))
    rows = list(csv.reader(io.StringIO("0,0,12\n1, 2 ,-7\n2,3,1e2\n")))
    db.executemany("INSERT INTO p(d0, d1, value) VALUES (?, ?, ?)", rows)
    got = db.execute("SELECT d0, d1, value FROM p WHERE value != 0 ORDER BY rowid").fetchall()
    report(got == [(0, 0, 12), (1, 2, -7), (2, 3, 100)],
           "strings from Python's csv module into an int16 array", repr(got))
    cases = [("'2.5' into int16", "INSERT INTO p VALUES (0, 1, '2.5')", "'2.5'"),
             ("'abc'", "INSERT INTO p VALUES (0, 1, 'abc')", "text value 'abc'"),
             ("'12abc'", "INSERT INTO p VALUES (0, 1, '12abc')", "text value '12abc'"),
             ("'1.5' as an index", "INSERT INTO p VALUES ('1.5', 1, 3)", "'1.5'"),
             ("'x' as an index", "INSERT INTO p VALUES ('x', 1, 3)", "'x'")]
    for desc, sql, want in cases:
        try:
            db.execute(sql)
            err = None
        except sqlite3.Error as e:
            err = str(e)
        report(err is not None and want in err, "%s stays an error naming the value" % desc, err)
    db.execute("CREATE VIRTUAL TABLE u USING caterva('%s', shape='2', dtype='uint8')"
               % os.path.join(tmp, "u.b2nd"))
    try:
        db.execute("INSERT INTO u VALUES (0, '300')")
        err = None
    except sqlite3.Error as e:
        err = str(e)
    report(err is not None and "300" in err and "uint8" in err, "'300' into uint8 stays an error",
           err)
    db.execute("INSERT INTO u VALUES (' 1 ', ' 255 ')")
    report(db.execute("SELECT value FROM u WHERE d0 = 1").fetchone() == (255,),
           "' 255 ' into uint8 at index ' 1 '")
    # labels: numeric labels take numeric text, date labels ISO text
    db.execute("CREATE VIRTUAL TABLE l USING caterva('%s', shape='3,3', dtype='float64', "
               "dims='time,lat', coords='time:2024-01-01:1 day,lat:10.0:0.5')"
               % os.path.join(tmp, "l.b2nd"))
    db.execute("INSERT INTO l(time, lat, value) VALUES ('2024-01-02', '10.5', '6.25')")
    got = db.execute("SELECT time, lat, value FROM l WHERE value = 6.25").fetchall()
    report(got == [("2024-01-02", 10.5, 6.25)],
           "a date label as ISO text and a numeric label and value as numeric text", repr(got))
    db.close()


def body(tmp):
    shell_import(tmp)
    python_csv(tmp)


if __name__ == "__main__":
    raise SystemExit(run_in_tmp(EXT, "test_sql_numeric_text.", body))

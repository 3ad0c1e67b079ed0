#!/usr/bin/env python3
"""caterva_png() through SQL (TAP output).

The PNG BLOBs are decoded here (zlib and the PNG filters, for the 8-bit RGB images the
function writes; tests/unit/test_png.c decodes with libpng) and checked at known cells: the
minimum and maximum of the data get the first and last colours of the map (read from a
picture of a 0..255 ramp), NaN its own colour; the options (axes by number and by
dimension name, origin, range, scale, nan, colorbar) and their errors; the range in the
tEXt chunks; the sqlite3 shell writing the picture with writefile().

Environment: top_builddir, SQLITE3_SHELL, CATERVA_PRELOAD.
"""
import json
import os
import shutil
import sqlite3
import struct
import tempfile
import zlib

import numpy as np

import sqltap
from sqltap import plan, report, reexec_with_preload, skip

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.abspath(os.path.join(BUILD, ".libs", "caterva"))
SHELL = os.environ.get("SQLITE3_SHELL", "sqlite3")


def decode_png(data):
    """(width, height, rows of (r, g, b) tuples, {tEXt key: value}) of an 8-bit RGB PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "no PNG signature"
    pos, idat, text = 8, b"", {}
    w = h = 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if zlib.crc32(kind + body) != struct.unpack(">I", data[pos + 8 + n:pos + 12 + n])[0]:
            raise ValueError("bad CRC in " + kind.decode())
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, lace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and ctype == 2 and lace == 0, "not 8-bit RGB"
        elif kind == b"IDAT":
            idat += body
        elif kind == b"tEXt":
            k, v = body.split(b"\0", 1)
            text[k.decode()] = v.decode()
        pos += 12 + n
    raw, stride, rows, prev = zlib.decompress(idat), w * 3, [], bytearray(w * 3)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - 3] if i >= 3 else 0
            b, c = prev[i], prev[i - 3] if i >= 3 else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append([tuple(line[3 * x:3 * x + 3]) for x in range(w)])
        prev = line
    return w, h, rows, text


def connect():
    db = sqlite3.connect(":memory:")
    db.enable_load_extension(True)
    db.load_extension(EXT)
    return db


def main():
    reexec_with_preload()
    tmp = tempfile.mkdtemp(prefix="caterva-png.", dir="/dev/shm" if os.path.isdir("/dev/shm")
                           else None)
    try:
        run(tmp)
    finally:
        shutil.rmtree(tmp)
    plan()


def run(tmp):
    db = connect()
    # The colour map: a picture of 0..255.
    ramp = os.path.join(tmp, "ramp.npy")
    np.save(ramp, np.arange(256, dtype="<f8").reshape(1, 256))
    db.execute("SELECT caterva_import(?, ?)", (ramp, ramp + ".b2nd"))
    try:
        db.execute("SELECT caterva_png(?, NULL, NULL, 'axes=0,1')", (ramp + ".b2nd",))
    except sqlite3.Error as e:
        if "built without libpng" in str(e):
            report(True, "built without libpng, caterva_png says so: %s" % e)
            skip("caterva_png pictures", "built without libpng")
            return
    w, h, rows, text = decode_png(db.execute("SELECT caterva_png(?, NULL, NULL, 'axes=0,1')",
                                             (ramp + ".b2nd",)).fetchone()[0])
    cmap = rows[0]
    report(w == 256 and h == 1 and len(set(cmap)) >= 250 and text.get("caterva:vmin") == "0"
           and text.get("caterva:vmax") == "255", "a 0..255 ramp shows %d distinct colours; "
           "tEXt caterva:vmin/vmax hold the range" % len(set(cmap)), repr((w, h, text)))

    # A time x lat x lon field with NaN.
    field = np.full((3, 6, 8), 5.0, dtype="<f4")
    field[1, 2, 3] = -10.0   # minimum of day 1
    field[1, 4, 7] = 30.0    # maximum of day 1
    field[1, 0, 0] = np.nan
    field[0, 5, 5] = 99.0    # other days do not count
    src = os.path.join(tmp, "field.npy")
    np.save(src, field)
    path = os.path.join(tmp, "field.b2nd")
    db.execute("SELECT caterva_import(?, ?, NULL, 'dims=time,lat,lon chunks=2,3,4')", (src, path))
    db.execute("CREATE VIRTUAL TABLE f USING caterva('%s')" % path)
    png = db.execute("SELECT caterva_png('f', '[1,0,0]', '[2,6,8]')").fetchone()[0]
    w, h, rows, text = decode_png(png)
    report((w, h) == (8, 6) and rows[2][3] == cmap[0] and rows[4][7] == cmap[255] and
           rows[0][0] == (190, 190, 190) and rows[1][1] == cmap[round(15 / 40 * 255)],
           "day 1 of a table: minimum, maximum, NaN and a 5.0 cell in their colours",
           repr((w, h, rows[2][3], rows[4][7], rows[0][0])))
    w, h, rows, _ = decode_png(db.execute(
        "SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'origin=lower nan=#ff00ff scale=2')",
        (path,)).fetchone()[0])
    report((w, h) == (16, 12) and rows[(5 - 2) * 2][3 * 2] == cmap[0] and
           rows[11][0] == (255, 0, 255) and rows[(5 - 4) * 2 + 1][7 * 2 + 1] == cmap[255],
           "origin=lower, nan=#ff00ff, scale=2", repr((w, h)))
    w, h, rows, text = decode_png(db.execute(
        "SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'axes=lon,lat range=0,10')",
        (path,)).fetchone()[0])
    report((w, h) == (6, 8) and rows[3][2] == cmap[0] and rows[7][4] == cmap[255] and
           rows[5][5] == cmap[128] and text.get("caterva:vmin") == "0" and
           text.get("caterva:vmax") == "10", "axes=lon,lat transposes; range=0,10 clamps and "
           "is recorded", repr((w, h, text)))
    w, h, rows, _ = decode_png(db.execute(
        "SELECT caterva_png(?, '[0,2,0]', '[3,3,8]', 'colorbar=1')", (path,)).fetchone()[0])
    report(h >= 12 and w > 8 + 20 and rows[0][8 + 6 + 3] == cmap[255] and
           rows[h - 1][8 + 6 + 3] == cmap[0], "a time x lon slice (lat fixed) with a colour bar",
           repr((w, h)))

    errors = [
        ("SELECT caterva_png(?)", "axes longer than 1"),
        ("SELECT caterva_png(?, '[0,0,0]')", "both start and stop"),
        ("SELECT caterva_png(?, '[1,0,0]', '[2,6,9]')", "not inside"),
        ("SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'axes=lat,height')", "axes="),
        ("SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'axes=1,1')", "axes="),
        ("SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'axes=0,2')", "extent 1 along axis 1"),
        ("SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'range=5,1')", "range="),
        ("SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'range=1,inf')", "range="),
        ("SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'scale=17')", "scale="),
        ("SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'nan=red')", "nan="),
        ("SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'origin=left')", "origin="),
        ("SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'cmap=jet')", "unknown option"),
        ("SELECT caterva_png(?, '[1,0,0]', '[2,6,8]', 'colorbar')", "option=value"),
    ]
    n_ok, fails = 0, []
    for sql, needle in errors:
        try:
            db.execute(sql, (path,))
            msg = "(no error)"
        except sqlite3.Error as e:
            msg = str(e)
        ok = needle in msg and "caterva_png" in msg
        n_ok += ok
        if not ok:
            fails.append("%s: %s" % (sql, msg))
    report(n_ok == len(errors), "%d of %d bad calls give their message" % (n_ok, len(errors)),
           "\n".join(fails))
    text_arr = os.path.join(tmp, "s.npy")
    np.save(text_arr, np.array([[b"ab", b"cd"], [b"ef", b"gh"]]))
    db.execute("SELECT caterva_import(?, ?)", (text_arr, text_arr + ".b2nd"))
    try:
        db.execute("SELECT caterva_png(?)", (text_arr + ".b2nd",))
        msg = ""
    except sqlite3.Error as e:
        msg = str(e)
    report("not |S2" in msg, "bytes items cannot be drawn", msg)

    if not os.path.exists(SHELL):
        skip("writefile in the sqlite3 shell", "no sqlite3 shell")
        return
    out, err = sqltap.shell(SHELL, EXT, "SELECT writefile('day1.png', caterva_png('field.b2nd', "
                            "'[1,0,0]', '[2,6,8]', 'scale=4 colorbar=1'));", tmp)
    ok = False
    try:
        with open(os.path.join(tmp, "day1.png"), "rb") as f:
            w, h, rows, _ = decode_png(f.read())
        ok = w > 32 and h == 24 and rows[2 * 4][3 * 4] == cmap[0]
    except (OSError, AssertionError, ValueError) as e:
        err += str(e)
    report(ok, "the sqlite3 shell writes the picture with writefile()", out + err)


if __name__ == "__main__":
    main()

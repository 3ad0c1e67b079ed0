#!/usr/bin/env python3
"""Throughput of .npy import and export (a program, not a test): `make bench-npy`.

Writes a smooth float32 field of about MB megabytes (argument 1, default 500) as a .npy
file, in C order and in Fortran order, then in the same run measures, best of REPEAT
(argument 2, default 2) runs each:
  - cp of the file (the floor: read and write the bytes once, no compression),
  - numpy.load of the file (the whole array into memory),
  - caterva_import() into a new array (default partitioning, zstd 5 + shuffle), C and F order,
  - caterva_export() of the whole array back to .npy,
and prints MB/s of the .npy size and the ratio to cp. The page cache is warm for every
step (the file was just written or read). Environment: top_builddir, BENCH_DIR (default:
a directory under the build directory).
"""
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")


def best(fn, repeat, cleanup=None):
    t = float("inf")
    for _ in range(repeat):
        if cleanup:
            cleanup()
        t0 = time.perf_counter()
        fn()
        t = min(t, time.perf_counter() - t0)
    return t


def rm(*paths):
    def go():
        for p in paths:
            if os.path.isdir(p):
                shutil.rmtree(p)
            elif os.path.exists(p):
                os.remove(p)
    return go


def main():
    mb = float(sys.argv[1]) if len(sys.argv) > 1 else 500.0
    repeat = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    n = int(round((mb * 1e6 / 4) ** (1 / 3)))
    shape = (n, n, n)
    base = os.environ.get("BENCH_DIR") or BUILD
    tmp = tempfile.mkdtemp(prefix="bench-npy.", dir=base)
    try:
        z, y, x = np.ogrid[0:n, 0:n, 0:n]
        a = (15.0 + 10.0 * np.sin(z * 0.05) * np.cos(y * 0.03) + 5.0 * np.sin(x * 0.02)
             ).astype("<f4")
        c_npy, f_npy = os.path.join(tmp, "c.npy"), os.path.join(tmp, "f.npy")
        np.save(c_npy, a)
        np.save(f_npy, np.asfortranarray(a))
        del a, z, y, x
        size = os.path.getsize(c_npy) / 1e6
        db = sqlite3.connect(":memory:")
        db.enable_load_extension(True)
        db.load_extension(EXT)
        cp_dst, arr, arr_f, out = (os.path.join(tmp, p) for p in
                                   ("copy.npy", "c.b2nd", "f.b2nd", "out.npy"))
        rows = []
        t_cp = best(lambda: subprocess.run(["cp", c_npy, cp_dst], check=True), repeat, rm(cp_dst))
        rows.append(("cp of the .npy file (floor)", t_cp))
        rows.append(("numpy.load (into memory)", best(lambda: np.load(c_npy), repeat)))
        rows.append(("caterva_import, C order", best(
            lambda: db.execute("SELECT caterva_import(?, ?)", (c_npy, arr)).fetchone(), repeat,
            rm(arr))))
        rows.append(("caterva_import, Fortran order", best(
            lambda: db.execute("SELECT caterva_import(?, ?)", (f_npy, arr_f)).fetchone(), repeat,
            rm(arr_f))))
        rows.append(("caterva_export, whole array", best(
            lambda: db.execute("SELECT caterva_export(?, ?)", (arr, out)).fetchone(), repeat,
            rm(out))))
        info = json.loads(db.execute("SELECT caterva_info(?)", (arr,)).fetchone()[0])
        ok = np.array_equal(np.load(out), np.load(c_npy))
        print("%dx%dx%d float32, %.0f MB as .npy; array: chunks %s, blocks %s, %s %d + %s, "
              "ratio %.2f; best of %d; export equals the source: %s" % (
                  n, n, n, size, info["chunkshape"], info["blockshape"], info["codec"],
                  info["clevel"], "+".join(info["filters"]), info["ratio"], repeat, ok))
        print()
        print("| step | s | MB/s | time / cp |")
        print("|---|---:|---:|---:|")
        for name, t in rows:
            print("| %s | %.2f | %.0f | %.2f |" % (name, t, size / t, t / t_cp))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Throughput of .npy import and export (a program, not a test): `make bench-npy`.

Writes a smooth float32 field of about MB megabytes (argument 1, default 500) as a .npy
file, in C order and in Fortran order, then in the same run measures, best of REPEAT
(argument 2, default 2) runs each:
  - cp of the file (the floor: read and write the bytes once, no compression),
  - numpy.load of the file (the whole array into memory),
  - caterva_import() into a new array (default partitioning, zstd 5 + shuffle), C and F order,
    and in C order with lz4 1 and with clevel 0 (chunks stored uncompressed: the cost of the
    streaming path alone),
  - caterva_export() of the whole array back to .npy,
and prints wall time, MB/s of the .npy size, CPU time (user + system, cp's included: it
runs as a child) and the ratios to cp. On a busy machine the CPU figures are the steadier. The page cache is warm for every
step (the file was just written or read). Environment: top_builddir, BENCH_DIR (default:
a directory under the build directory).
"""
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import numpy as np

BUILD = os.environ.get("top_builddir", ".")
EXT = os.path.join(BUILD, ".libs", "caterva")


def cpu():
    """CPU seconds (user + system) of this process and its waited-for children."""
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


def best(fn, repeat, cleanup=None):
    """(wall seconds, CPU seconds) of the fastest of repeat runs."""
    t = (float("inf"), 0.0)
    for _ in range(repeat):
        if cleanup:
            cleanup()
        t0, c0 = time.perf_counter(), cpu()
        fn()
        t = min(t, (time.perf_counter() - t0, cpu() - c0))
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
        def cp_sync():
            subprocess.run(["cp", c_npy, cp_dst], check=True)
            fd = os.open(cp_dst, os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
        rows.append(("cp, then fsync of the copy (an import fsyncs its commit)",
                     best(cp_sync, repeat, rm(cp_dst))))
        rows.append(("numpy.load (into memory)", best(lambda: np.load(c_npy), repeat)))
        rows.append(("caterva_import, C order", best(
            lambda: db.execute("SELECT caterva_import(?, ?)", (c_npy, arr)).fetchone(), repeat,
            rm(arr))))
        for opt in ("codec=lz4 clevel=1", "clevel=0"):
            rows.append(("caterva_import, C order, %s" % opt, best(
                lambda: db.execute("SELECT caterva_import(?, ?, NULL, ?)",
                                   (c_npy, arr + ".x", opt)).fetchone(), repeat, rm(arr + ".x"))))
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
        print("| step | wall s | MB/s | wall / cp | CPU s | CPU / cp |")
        print("|---|---:|---:|---:|---:|---:|")
        for name, (t, c) in rows:
            print("| %s | %.2f | %.0f | %.2f | %.2f | %.2f |" % (
                name, t, size / t, t / t_cp[0], c, c / max(t_cp[1], 1e-3)))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main()

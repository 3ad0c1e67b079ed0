"""TAP output and the sqlite3 shell runner shared by the Python tests (tests/sql/*.py,
tests/interop/test_sql_golden.py); make puts tests/lib on their PYTHONPATH."""
import os
import subprocess
import sys

_results = []


def report(ok, desc, detail=""):
    """Print one TAP line; on failure, up to 20 lines of detail as diagnostics."""
    _results.append(ok)
    print("%s %d - %s" % ("ok" if ok else "not ok", len(_results), desc))
    if not ok and detail:
        for line in str(detail).splitlines()[:20]:
            print("# " + line)


def skip(desc, why):
    _results.append(True)
    print("ok %d - %s # SKIP %s" % (len(_results), desc, why))


def plan():
    """Print the plan line, after all tests."""
    print("1..%d" % len(_results))


def shell(shell_path, ext, sql, cwd):
    """Run SQL in the sqlite3 shell with the extension loaded; return (stdout, stderr).
    CATERVA_PRELOAD (the ASan runtime, in sanitizer builds) is preloaded into the shell."""
    env = dict(os.environ)
    pre = os.environ.get("CATERVA_PRELOAD", "")
    if pre:
        env["LD_PRELOAD"] = pre
    p = subprocess.run([shell_path, "-batch", ":memory:"], input=".load %s\n%s\n" % (ext, sql),
                       capture_output=True, text=True, cwd=cwd, env=env)
    return p.stdout, p.stderr


def reexec_with_preload():
    """In sanitizer builds, run this script again with the ASan runtime preloaded (Python
    itself is not instrumented, the extension it loads is); leaks are not checked there."""
    pre = os.environ.get("CATERVA_PRELOAD", "")
    if pre and os.environ.get("LD_PRELOAD", "") != pre:
        env = dict(os.environ, LD_PRELOAD=pre)
        env["ASAN_OPTIONS"] = "detect_leaks=0:" + env.get("ASAN_OPTIONS", "")
        os.execve(sys.executable, [sys.executable] + sys.argv, env)


def array_size(path):
    """Bytes of an array on disk: the file, or every file of a sparse directory, without the
    .b2lock sidecar."""
    if not os.path.isdir(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
               if f != ".b2lock")


def array_bytes(path):
    """{name: bytes} of an array: a file ({"": bytes}) or every file of a sparse directory,
    without the .b2lock sidecar."""
    if not os.path.isdir(path):
        with open(path, "rb") as f:
            return {"": f.read()}
    out = {}
    for name in sorted(os.listdir(path)):
        if name != ".b2lock":
            with open(os.path.join(path, name), "rb") as f:
                out[name] = f.read()
    return out


def cells(shape):
    """Every cell of an array of this shape, as index tuples, in C order."""
    if not shape:
        yield ()
        return
    for i in range(shape[0]):
        for rest in cells(shape[1:]):
            yield (i,) + rest


def connect_ext(ext, path=":memory:", **kw):
    """A sqlite3 connection with the extension loaded, or None after printing the TAP skip
    line when the extension is not built or this Python cannot load extensions."""
    import sqlite3
    if not os.path.exists(ext + ".so"):
        print("1..0 # SKIP the extension is not built")
        return None
    db = sqlite3.connect(path, **kw)
    if not hasattr(db, "enable_load_extension"):
        print("1..0 # SKIP this Python's sqlite3 module cannot load extensions")
        db.close()
        return None
    db.enable_load_extension(True)
    db.load_extension(ext)
    return db


def while_interrupting(db, fn):
    """fn() while another thread calls db.interrupt() every millisecond (db must allow use from
    other threads: check_same_thread=False); returns fn's result."""
    import threading
    import time
    done = threading.Event()

    def interrupter():
        while not done.is_set():
            db.interrupt()
            time.sleep(0.001)

    th = threading.Thread(target=interrupter)
    th.start()
    try:
        return fn()
    finally:
        done.set()
        th.join()


def run_in_tmp(ext, prefix, body, ram=False):
    """The main of a test script: with the ASan runtime preloaded where needed, skip when the
    extension cannot be loaded, else body(tmp) in a new temporary directory (in /dev/shm with
    ram=True, where there is one), removed afterwards, then the plan. Returns the exit code."""
    import shutil
    import tempfile
    reexec_with_preload()
    probe = connect_ext(ext)
    if probe is None:
        return 0
    probe.close()
    shm = "/dev/shm" if ram and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) \
        else None
    tmp = tempfile.mkdtemp(prefix=prefix, dir=shm)
    try:
        body(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    plan()
    return 0


def barrier(folder, me, n, timeout=120):
    """A barrier between processes: mark `me` arrived in folder, then wait until n have (or
    timeout seconds). The S3 writers' tests put one between their first transaction's write and
    its COMMIT, so that every writer starts from one base and exactly one of those commits wins,
    however the processes are scheduled."""
    import time
    open(os.path.join(folder, "arrived.%s" % me), "w").close()
    t0 = time.monotonic()
    while len(os.listdir(folder)) < n and time.monotonic() - t0 < timeout:
        time.sleep(0.01)

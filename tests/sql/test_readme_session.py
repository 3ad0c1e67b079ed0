#!/usr/bin/env python3
"""The README's "A short session" as a reader meets it (TAP): the demo grid is written by
tests/tools/mkdemo (the full 365x180x360 grid that scripts/demo.sh writes), the session's
statements up to the write (the labels, the Europe box and the caterva_blocks_read() figures
around it) run in the sqlite3 shell from the demo folder, and their output must equal the
README's, line for line (issue 39: the README said 36 blocks where a reader saw other figures).

Environment: top_srcdir, top_builddir, SQLITE3_SHELL, CATERVA_PRELOAD.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from sqltap import plan, report  # noqa: E402

SRC = os.environ.get("top_srcdir", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BUILD = os.path.abspath(os.environ.get("top_builddir", "."))
SHELL = os.environ.get("SQLITE3_SHELL", "")


def session():
    """(statements, expected output lines) of the README's first session block(s), until the
    block that writes (CREATE ... shape=)."""
    text = open(os.path.join(SRC, "README.md")).read()
    part = text.split("## A short session", 1)[1].split("\n## ", 1)[0]
    stmts, want = [], []
    for block in re.findall(r"```\n(.*?)```", part, re.S):
        if "shape=" in block:
            break
        for line in block.splitlines():
            if line.startswith("$ "):
                continue
            if line.startswith("sqlite> "):
                stmts.append(line[len("sqlite> "):])
            elif line.startswith("   ...> "):
                stmts[-1] += "\n" + line[len("   ...> "):]
            else:
                want.append(line)
    return stmts, want


def main():
    ext = os.path.join(BUILD, ".libs", "caterva.so")
    mkdemo = os.path.join(BUILD, "tests", "tools", "mkdemo")
    if not os.path.exists(SHELL or "/nonexistent"):
        print("1..0 # SKIP sqlite3 shell not found")
        return 0
    if not os.path.exists(ext) or not os.path.exists(mkdemo):
        print("1..0 # SKIP the extension or tests/tools/mkdemo is not built")
        return 0
    stmts, want = session()
    report(any("caterva_blocks_read" in s for s in stmts) and len(want) >= 6,
           "the README's session has %d statements and %d lines of output" % (len(stmts), len(want)))
    tmp = tempfile.mkdtemp(prefix="test_readme.")
    try:
        demo = os.path.join(tmp, "demo")
        r = subprocess.run([mkdemo, demo], capture_output=True, text=True)
        report(r.returncode == 0, "mkdemo writes the full demo grid", r.stdout + r.stderr)
        script = "".join(s.replace(".load ../build/.libs/caterva", ".load " + ext[:-3]) + "\n"
                         for s in stmts)
        env = dict(os.environ)
        if os.environ.get("CATERVA_PRELOAD"):
            env["LD_PRELOAD"] = os.environ["CATERVA_PRELOAD"]
        r = subprocess.run([SHELL, "-batch", ":memory:"], input=script, capture_output=True,
                           text=True, cwd=demo, env=env)
        got = r.stdout.splitlines()
        report(r.returncode == 0 and not r.stderr and got == want,
               "the session's output is the README's, line for line (caterva_blocks_read() "
               "figures included)", "got:\n%s\nwant:\n%s\n%s" % ("\n".join(got), "\n".join(want),
                                                                   r.stderr))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    plan()
    return 0


if __name__ == "__main__":
    sys.exit(main())

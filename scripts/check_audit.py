#!/usr/bin/env python3
"""Keeps docs/audit-divisions.md true (TAP output; run by make check).

The audit names every site it covers as file:function, not by line. This check fails when
  - a file the audit names is gone, or a function it names is not defined in that file
    (renamed, moved, removed: the audit must follow it);
  - a function the audit names no longer divides, takes a modulo or calls one of the
    division helpers (the division moved: re-audit it where it went).
It also lists, as TAP comments, the functions of core/, ext/ and io/ that divide by something
other than a literal, a sizeof or an upper-case constant and that the audit does not name:
new sites to audit (information only; the audit's header says what it covers).

Usage: scripts/check_audit.py [TOP]   (TOP: the source tree, default this script's parent)
"""
import os
import re
import sys

HELPERS = ("cat_ceil_div64", "floor_div", "cvFloorDiv", "cvBlocksAlong", "next_edge", "fmod")
SIG = re.compile(r"^(?:[A-Za-z_][\w \t\*]*?[\s\*])?([A-Za-z_]\w*)\s*\(")
DEFINE = re.compile(r"^#\s*define\s+([A-Za-z_]\w*)\(")
ROW_FILE = re.compile(r"^[a-z]+/[\w]+\.[ch]$")


def strip_c(text):
    """Comments and string/char literals blanked out (line structure kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(c + " " * (min(j, n) - i - 1) + (c if j < n else ""))
            i = j + 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def functions(text):
    """{name: [body, ...]} of the functions and function-like macros defined in C text
    (comments and strings already stripped). A definition starts at column 0 and its body
    ends at the next line that starts with '}'."""
    lines = text.split("\n")
    defs = {}
    i = 0
    while i < len(lines):
        line = lines[i]
        m = DEFINE.match(line)
        if m:
            j = i
            while lines[j].rstrip().endswith("\\") and j + 1 < len(lines):
                j += 1
            defs.setdefault(m.group(1), []).append("\n".join(lines[i:j + 1]))
            i = j + 1
            continue
        m = SIG.match(line) if line[:1].isalpha() or line[:1] == "_" else None
        if m and not re.match(r"(typedef|struct|enum|union|return|if|for|while)\b", line) \
                and "=" not in line.split("(")[0]:
            j, head = i, line
            while "{" not in head and ";" not in head and j + 1 < len(lines) and j - i < 12:
                j += 1
                head += "\n" + lines[j]
            if "{" in head and ";" not in head.split("{")[0]:
                k = j
                while k < len(lines) and not (k > i and lines[k].startswith("}")) \
                        and not (k == j and head.rstrip().endswith("}")):
                    k += 1
                defs.setdefault(m.group(1), []).append("\n".join(lines[i:k + 1]))
                i = k + 1
                continue
        i += 1
    return defs


def divides(body):
    """Does a body divide, take a modulo or call a division helper?"""
    if re.search(r"(?<![/*])[/%](?![/*])", body):
        return True
    return any(re.search(r"\b%s\s*\(" % h, body) for h in HELPERS)


def audit_names(md):
    """[(file, function, section, line of the audit)] of every table row and constant list."""
    names, section = [], ""
    for ln, line in enumerate(md.split("\n"), 1):
        if line.startswith("## "):
            section = line[3:]
        if line.startswith("| ") and not line.startswith("| file") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) >= 2 and ROW_FILE.match(cells[0]):
                for fn in re.split(r"\s*(?:/|,)\s*", cells[1]):
                    names.append((cells[0], fn.strip(), section, ln))
        m = re.match(r"^- (\S+\.[ch])(?: \([^)]*\))?: (.*)$", line)
        if m and section.startswith("Functions whose divisors"):
            for fn in m.group(2).split(","):
                names.append((m.group(1), fn.strip(), section, ln))
    return names


def constant_divisor(expr):
    """A divisor that is a literal number, a sizeof, an upper-case constant or a product of them."""
    expr = expr.strip()
    return bool(re.fullmatch(r"\(?\s*(?:[0-9][\w.]*|sizeof\s*\(?[^)]*\)?|[A-Z][A-Z0-9_]*)"
                             r"(?:\s*[*+]\s*(?:[0-9][\w.]*|sizeof\s*\(?[^)]*\)?|[A-Z][A-Z0-9_]*))*\s*\)?",
                             expr))


def nonconstant_sites(body):
    """Does a body divide by something that is not a compile-time constant?"""
    for m in re.finditer(r"(?<![/*])([/%])=?(?![/*=])\s*([^;,\n?:]+)", body):
        rest = m.group(2)
        tok = re.match(r"\s*(\((?:[^()]|\([^()]*\))*\)|[\w.>\-\[\]]+(?:\s*\([^)]*\))?)", rest)
        if tok and not constant_divisor(tok.group(1)):
            return True
    return any(re.search(r"\b%s\s*\(" % h, body) for h in HELPERS[:-1])


def main():
    top = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    md = open(os.path.join(top, "docs", "audit-divisions.md"), encoding="utf-8").read()
    names = audit_names(md)
    cache = {}
    tests = []
    for path, fn, section, ln in names:
        if path not in cache:
            full = os.path.join(top, path)
            cache[path] = functions(strip_c(open(full, encoding="utf-8").read())) \
                if os.path.exists(full) else None
        defs = cache[path]
        what = "docs/audit-divisions.md:%d names %s:%s" % (ln, path, fn)
        if defs is None:
            tests.append((False, what, "no file %s" % path))
        elif fn not in defs:
            tests.append((False, what, "%s defines no %s" % (path, fn)))
        elif not any(divides(b) for b in defs[fn]):
            tests.append((False, what, "%s no longer divides: re-audit where it went" % fn))
        else:
            tests.append((True, what, ""))
    print("1..%d" % (len(tests) + 1))
    for i, (ok, what, why) in enumerate(tests, 1):
        print("%s %d - %s%s" % ("ok" if ok else "not ok", i, what, "" if ok else ": " + why))
    print("ok %d - the audit names %d sites" % (len(tests) + 1, len(tests)) if tests else
          "not ok %d - the audit names no site" % (len(tests) + 1))
    named = {(p, f) for p, f, _, _ in names}
    for d in ("core", "ext", "io"):
        for f in sorted(os.listdir(os.path.join(top, d))):
            if not f.endswith((".c", ".h")):
                continue
            path = "%s/%s" % (d, f)
            defs = functions(strip_c(open(os.path.join(top, path), encoding="utf-8").read()))
            for fn, bodies in sorted(defs.items()):
                if (path, fn) not in named and any(nonconstant_sites(b) for b in bodies):
                    print("# not in the audit (divides by a variable): %s:%s" % (path, fn))
    return 0 if all(ok for ok, _, _ in tests) and tests else 1


if __name__ == "__main__":
    sys.exit(main())

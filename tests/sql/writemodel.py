"""The model of a cell write through the caterva table, for the differential test
(test_sql_write_diff.py): which SQL values each dtype holds and what it reads back, the error
message the extension gives for the others, and SQL literals."""
import math
import struct

from writetap import norm


class Dt:
    def __init__(self, name, isfloat, size, lo=None, hi=None):
        self.name, self.isfloat, self.size, self.lo, self.hi = name, isfloat, size, lo, hi


DTYPES = {
    "float64": Dt("float64", True, 8),
    "float32": Dt("float32", True, 4),
    "int8": Dt("int8", False, 1, -2**7, 2**7 - 1),
    "int16": Dt("int16", False, 2, -2**15, 2**15 - 1),
    "int32": Dt("int32", False, 4, -2**31, 2**31 - 1),
    "int64": Dt("int64", False, 8, -2**63, 2**63 - 1),
    "uint8": Dt("uint8", False, 1, 0, 2**8 - 1),
    "uint16": Dt("uint16", False, 2, 0, 2**16 - 1),
    "bool": Dt("bool", False, 1, 0, 1),
}


def f32(d):
    """d rounded to float32 like C's (float)d; OverflowError when a finite d overflows."""
    return struct.unpack("<f", struct.pack("<f", d))[0]


def fit(dt, v):
    """(True, value read back) when the SQL value v fits dtype dt, else (False, None)."""
    if dt.isfloat:
        if v is None:
            return True, None
        if isinstance(v, (str, bytes)):
            return False, None
        d = float(v)
        if isinstance(v, int) and (d >= 2.0**63 or int(d) != v):
            return False, None
        if dt.size == 4:
            try:
                f = f32(d)
            except OverflowError:
                return False, None
            if isinstance(v, int) and int(f) != v:
                return False, None
            d = f
        return True, (None if d != d else d)
    if isinstance(v, int):
        i = v
    elif isinstance(v, float):
        if not (-2.0**63 <= v < 2.0**63) or v != math.floor(v):
            return False, None
        i = int(v)
    else:
        return False, None
    if not dt.lo <= i <= dt.hi:
        return False, None
    return True, i


def sql_text(db, v):
    """sqlite3_value_text of v, as the extension quotes it."""
    return db.execute("SELECT CAST(? AS TEXT)", (v,)).fetchone()[0]


def value_msg(db, dtname, vcol, v):
    if v is None:
        body = "NULL value"
    elif isinstance(v, bytes):
        body = "blob value of %d bytes" % len(v)
    else:
        t = {int: "integer", float: "real", str: "text"}[type(v)]
        body = "%s value '%s'" % (t, sql_text(db, v))
    return norm("caterva: %s does not fit the column's dtype %s (column %s)" %
                (body, dtname, vcol))


def exact_int(v):
    if isinstance(v, int):
        return v
    if isinstance(v, float) and -2.0**63 <= v < 2.0**63 and v == math.floor(v):
        return int(v)
    return None


def lit(v):
    if v is None:
        return "NULL"
    if isinstance(v, bytes):
        return "x'%s'" % v.hex()
    if isinstance(v, str):
        return "'%s'" % v.replace("'", "''")
    if isinstance(v, float):
        return repr(v)
    return str(v)

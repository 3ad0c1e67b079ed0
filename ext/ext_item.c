/*
 * ext_item.c -- array items as SQL values, and SQL values as array items (the write path's
 * conversions, checked: never a silent conversion).
 *
 *   dtype                          SQL value
 *   |b1                            INTEGER 0 or 1
 *   |i1 <i2 <i4 <i8                INTEGER
 *   |u1 <u2 <u4 <u8                INTEGER; a uint64 above INT64_MAX is REAL (rounded)
 *   <f2 <f4 <f8                    REAL; NaN is NULL (SQLite has no NaN)
 *   <M8[unit] <m8[unit]            INTEGER count of units; NaT is NULL
 *   <U<n>                          TEXT (UTF-8), trailing NUL code points dropped
 *   anything else (|S<n>, |V<n>,   BLOB of the item's bytes
 *     <c8, structured), or no
 *     dtype (caterva-only files)
 *
 * Big-endian dtypes ('>' prefix) are byte-swapped first. Items are read with memcpy: block
 * buffers give no alignment guarantee for an item at an arbitrary offset.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <string.h>

/* Do items of this type need their bytes reversed to be read as host numbers? */
static int cvNeedSwap(const CvItemType *pType) {
  const uint16_t one = 1;
  uint8_t bHostLittle;
  memcpy(&bHostLittle, &one, 1);
  return pType->szItem > 1 && pType->bBigEndian == bHostLittle;
}

int cvItemTypeInit(CvItemType *pType, const char *zDtype, int szItem, char **pzErr) {
  caterva_dtype_info info;
  memset(pType, 0, sizeof(*pType));
  pType->eKind = CV_ITEM_BLOB;
  pType->szItem = szItem;
  sqlite3_snprintf((int)sizeof(pType->zName), pType->zName, "%s", zDtype ? zDtype : "bytes");
  if (zDtype == 0) return 0;
  if (caterva_dtype_parse(zDtype, &info) != CATERVA_OK) {
    *pzErr = sqlite3_mprintf("unrecognised dtype \"%s\"", zDtype);
    return 1;
  }
  if (info.itemsize != 0 && info.itemsize != szItem) {
    *pzErr = sqlite3_mprintf("dtype \"%s\" has %d-byte items but the array's items have %d bytes",
                             zDtype, info.itemsize, szItem);
    return 1;
  }
  pType->bBigEndian = info.big_endian;
  switch (info.kind) {
    case CATERVA_KIND_BOOL:
      if (szItem == 1) pType->eKind = CV_ITEM_BOOL;
      break;
    case CATERVA_KIND_INT:
    case CATERVA_KIND_UINT:
      if (szItem == 1 || szItem == 2 || szItem == 4 || szItem == 8)
        pType->eKind = info.kind == CATERVA_KIND_INT ? CV_ITEM_INT : CV_ITEM_UINT;
      break;
    case CATERVA_KIND_FLOAT:
      if (szItem == 2 || szItem == 4 || szItem == 8) pType->eKind = CV_ITEM_FLOAT;
      break;
    case CATERVA_KIND_DATETIME:
    case CATERVA_KIND_TIMEDELTA:
      if (szItem == 8) pType->eKind = CV_ITEM_TIME;
      break;
    case CATERVA_KIND_UNICODE:
      if (szItem % 4 == 0) pType->eKind = CV_ITEM_UCS4;
      break;
    default:
      break;
  }
  pType->bSwap = cvNeedSwap(pType);
  return 0;
}

const char *cvItemTypeDecl(const CvItemType *pType) {
  switch (pType->eKind) {
    case CV_ITEM_INT:
    case CV_ITEM_UINT: /* uint64 above INT64_MAX comes back as REAL all the same */
    case CV_ITEM_BOOL:
    case CV_ITEM_TIME:
      return "INTEGER";
    case CV_ITEM_FLOAT:
      return "REAL";
    case CV_ITEM_UCS4:
      return "TEXT";
    default:
      return "BLOB";
  }
}

double cvHalfToDouble(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0) v = ldexp((double)m, -24);               /* zero or subnormal */
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = ldexp((double)(m | 0x400), e - 25);
  return sign ? -v : v;
}

/* Append code point c as UTF-8 to z (room for 4 bytes); returns bytes written. Values that are
** not Unicode scalar values become U+FFFD. */
static int cvPutUtf8(uint8_t *z, uint32_t c) {
  if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) c = 0xFFFD;
  if (c < 0x80) {
    z[0] = (uint8_t)c;
    return 1;
  }
  if (c < 0x800) {
    z[0] = (uint8_t)(0xC0 | (c >> 6));
    z[1] = (uint8_t)(0x80 | (c & 0x3F));
    return 2;
  }
  if (c < 0x10000) {
    z[0] = (uint8_t)(0xE0 | (c >> 12));
    z[1] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
    z[2] = (uint8_t)(0x80 | (c & 0x3F));
    return 3;
  }
  z[0] = (uint8_t)(0xF0 | (c >> 18));
  z[1] = (uint8_t)(0x80 | ((c >> 12) & 0x3F));
  z[2] = (uint8_t)(0x80 | ((c >> 6) & 0x3F));
  z[3] = (uint8_t)(0x80 | (c & 0x3F));
  return 4;
}

/* Code point i of a UCS-4 item. */
static uint32_t cvUcs4At(const CvItemType *pType, const uint8_t *p, int i) {
  uint8_t a[4];
  uint32_t c;
  memcpy(a, p + 4 * i, 4);
  if (cvNeedSwap(pType)) {
    uint8_t t = a[0];
    a[0] = a[3], a[3] = t, t = a[1], a[1] = a[2], a[2] = t;
  }
  memcpy(&c, a, 4);
  return c;
}

static void cvResultUcs4(sqlite3_context *pCtx, const CvItemType *pType, const uint8_t *p) {
  int nChar = pType->szItem / 4, i, n = 0;
  uint8_t *z;
  while (nChar > 0 && cvUcs4At(pType, p, nChar - 1) == 0) nChar--;
  z = sqlite3_malloc64((sqlite3_uint64)nChar * 4 + 1);
  if (z == 0) {
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  for (i = 0; i < nChar; i++) n += cvPutUtf8(z + n, cvUcs4At(pType, p, i));
  sqlite3_result_text(pCtx, (const char *)z, n, sqlite3_free);
}

/* The per-kind functions below get the item's bytes in host byte order; an item size their
** kind does not have (cvItemTypeInit never makes one) comes back as a BLOB of those bytes. */

static void cvResultFloat(sqlite3_context *pCtx, const uint8_t *p, int n) {
  if (n == 8) {
    double r;
    memcpy(&r, p, 8);
    if (r != r) sqlite3_result_null(pCtx);
    else sqlite3_result_double(pCtx, r);
  } else if (n == 4) {
    float f;
    memcpy(&f, p, 4);
    if (f != f) sqlite3_result_null(pCtx);
    else sqlite3_result_double(pCtx, f);
  } else if (n == 2) {
    uint16_t h;
    double r;
    memcpy(&h, p, 2);
    r = cvHalfToDouble(h);
    if (r != r) sqlite3_result_null(pCtx);
    else sqlite3_result_double(pCtx, r);
  } else {
    sqlite3_result_blob(pCtx, p, n, SQLITE_TRANSIENT);
  }
}

static void cvResultInt(sqlite3_context *pCtx, const uint8_t *p, int n) {
  if (n == 1) {
    sqlite3_result_int(pCtx, (int8_t)p[0]);
  } else if (n == 2) {
    int16_t v;
    memcpy(&v, p, 2);
    sqlite3_result_int(pCtx, v);
  } else if (n == 4) {
    int32_t v;
    memcpy(&v, p, 4);
    sqlite3_result_int(pCtx, v);
  } else if (n == 8) {
    int64_t v;
    memcpy(&v, p, 8);
    sqlite3_result_int64(pCtx, v);
  } else {
    sqlite3_result_blob(pCtx, p, n, SQLITE_TRANSIENT);
  }
}

/* A uint64 above INT64_MAX does not fit an SQLite INTEGER: it becomes REAL (rounded). */
static void cvResultUint(sqlite3_context *pCtx, const uint8_t *p, int n) {
  if (n == 1) {
    sqlite3_result_int(pCtx, p[0]);
  } else if (n == 2) {
    uint16_t v;
    memcpy(&v, p, 2);
    sqlite3_result_int(pCtx, v);
  } else if (n == 4) {
    uint32_t v;
    memcpy(&v, p, 4);
    sqlite3_result_int64(pCtx, v);
  } else if (n == 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    if (v > (uint64_t)INT64_MAX) sqlite3_result_double(pCtx, (double)v);
    else sqlite3_result_int64(pCtx, (sqlite3_int64)v);
  } else {
    sqlite3_result_blob(pCtx, p, n, SQLITE_TRANSIENT);
  }
}

static void cvResultBool(sqlite3_context *pCtx, const uint8_t *p, int n) {
  if (n == 1) sqlite3_result_int(pCtx, p[0] != 0);
  else sqlite3_result_blob(pCtx, p, n, SQLITE_TRANSIENT);
}

/* datetime64 and timedelta64: a count of units; NaT (INT64_MIN) is NULL. */
static void cvResultTime(sqlite3_context *pCtx, const uint8_t *p, int n) {
  if (n == 8) {
    int64_t v;
    memcpy(&v, p, 8);
    if (v == INT64_MIN) sqlite3_result_null(pCtx);
    else sqlite3_result_int64(pCtx, v);
  } else {
    sqlite3_result_blob(pCtx, p, n, SQLITE_TRANSIENT);
  }
}

/* Numbers are read with memcpy (block buffers give no alignment guarantee); items of the
** other byte order are first reversed into a local copy. This runs once per row and value,
** so the common cases come first. */
void cvItemResult(sqlite3_context *pCtx, const CvItemType *pType, const uint8_t *p) {
  uint8_t aSwap[8];
  int n = pType->szItem;
  if (pType->eKind == CV_ITEM_BLOB || pType->eKind == CV_ITEM_UCS4) {
    if (pType->eKind == CV_ITEM_UCS4) cvResultUcs4(pCtx, pType, p);
    else sqlite3_result_blob(pCtx, p, n, SQLITE_TRANSIENT);
    return;
  }
  if (pType->bSwap) {
    int i;
    for (i = 0; i < n; i++) aSwap[i] = p[n - 1 - i];
    p = aSwap;
  }
  switch (pType->eKind) {
    case CV_ITEM_FLOAT: cvResultFloat(pCtx, p, n); break;
    case CV_ITEM_INT: cvResultInt(pCtx, p, n); break;
    case CV_ITEM_UINT: cvResultUint(pCtx, p, n); break;
    case CV_ITEM_BOOL: cvResultBool(pCtx, p, n); break;
    case CV_ITEM_TIME: cvResultTime(pCtx, p, n); break;
    default: sqlite3_result_blob(pCtx, p, n, SQLITE_TRANSIENT); break;
  }
}

/* ---- SQL values to items ------------------------------------------------------------------
**
**   column of dtype      accepted                                   refused (error)
**   float16/32/64        INTEGER exactly representable, REAL        TEXT, BLOB; a finite value
**                        (rounded to the float's precision), NULL   beyond the float's range
**                        (stored as NaN)
**   int / uint / bool    INTEGER in range, REAL with an integral    TEXT, BLOB, NULL, 1.5,
**                        value in range                             300 into uint8, 2 into bool
**   datetime64           INTEGER; NULL is NaT                       TEXT, BLOB, REAL
**   others (BLOB kind)   BLOB of exactly the item size              anything else
** Numeric text ('21.44', ' 7 ', '1e3') counts as the number SQLite's numeric affinity makes of
** it (cvNumericText), as a plain table's REAL or INTEGER column would take it; other text is
** TEXT above. Never a silent conversion: what does not fit is an error naming the value and
** the dtype.
*/

/* Write the n low bytes of v in the item's byte order. */
static void cvPutInt(const CvItemType *pType, uint64_t v, uint8_t *aOut) {
  int n = pType->szItem;
  if (!pType->bSwap && !pType->bBigEndian) { /* little-endian host, little-endian item */
    if (n == 4) {
      uint32_t w = (uint32_t)v;
      memcpy(aOut, &w, 4);
      return;
    }
    if (n == 8) {
      memcpy(aOut, &v, 8);
      return;
    }
  }
  for (int i = 0; i < n; i++) {
    uint8_t b = (uint8_t)(v >> (8 * i));
    aOut[pType->bBigEndian ? n - 1 - i : i] = b;
  }
}

/* Numeric text is a number where a plain table's REAL or INTEGER column would take it
** ('21.44', ' 7 ', '1e3': SQLite's numeric affinity, applied to the value in place); other
** text stays text. Returns the value's type afterwards. */
int cvNumericText(sqlite3_value *pVal, int bNumeric) {
  if (bNumeric && sqlite3_value_type(pVal) == SQLITE_TEXT) (void)sqlite3_value_numeric_type(pVal);
  return sqlite3_value_type(pVal);
}

/* The value as an int64 when it is an INTEGER, or a REAL holding an integral value that an
** int64 can represent. Returns 0 on success. */
int cvExactInt(sqlite3_value *pVal, int64_t *piOut) {
  double r;
  int eType = sqlite3_value_type(pVal);
  if (eType == SQLITE_INTEGER) {
    *piOut = sqlite3_value_int64(pVal);
    return 0;
  }
  if (eType != SQLITE_FLOAT) return 1;
  r = sqlite3_value_double(pVal);
  if (!(r >= -9223372036854775808.0 && r < 9223372036854775808.0) || r != floor(r)) return 1;
  *piOut = (int64_t)r;
  return 0;
}

static const char *cvTypeName(sqlite3_value *pVal) {
  switch (sqlite3_value_type(pVal)) {
    case SQLITE_INTEGER: return "integer";
    case SQLITE_FLOAT: return "real";
    case SQLITE_TEXT: return "text";
    case SQLITE_BLOB: return "blob";
    default: return "NULL";
  }
}

int cvPutChecked(const CvItemType *pType, int64_t v, uint8_t *aOut) {
  int nBit = pType->szItem * 8;
  if (pType->eKind == CV_ITEM_BOOL && (v < 0 || v > 1)) return 1;
  if (pType->eKind == CV_ITEM_UINT && (v < 0 || (nBit < 64 && (v >> nBit) != 0))) return 1;
  if (pType->eKind == CV_ITEM_INT && nBit < 64 &&
      (v < -((int64_t)1 << (nBit - 1)) || v >= ((int64_t)1 << (nBit - 1))))
    return 1;
  cvPutInt(pType, (uint64_t)v, aOut);
  return 0;
}

static int cvIntToItem(const CvItemType *pType, sqlite3_value *pVal, uint8_t *aOut) {
  int64_t v;
  return cvExactInt(pVal, &v) || cvPutChecked(pType, v, aOut);
}

/* double to IEEE 754 binary16, round to nearest even; non-zero when a finite value
** overflows. */
static int cvDoubleToHalf(double d, uint16_t *pH) {
  float f = (float)d;
  uint32_t x, sign, mant;
  int e;
  memcpy(&x, &f, 4);
  sign = (x >> 16) & 0x8000;
  e = (int)((x >> 23) & 0xff) - 127 + 15;
  mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) { /* inf or NaN */
    *pH = (uint16_t)(sign | 0x7c00 | (mant ? 0x200 : 0));
    return 0;
  }
  if (e >= 31) return 1;
  if (e <= 0) { /* subnormal or zero */
    if (e < -10) { *pH = (uint16_t)sign; return 0; }
    mant |= 0x800000;
    {
      int shift = 14 - e;
      uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
      if (rem > half || (rem == half && (h & 1))) h++;
      *pH = (uint16_t)(sign | h);
    }
    return 0;
  }
  {
    uint32_t h = ((uint32_t)e << 10) | (mant >> 13), rem = mant & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    if (h >= 0x7c00) return 1;
    *pH = (uint16_t)(sign | h);
  }
  return 0;
}

int cvNumberToItem(const CvItemType *pType, double d, uint8_t *aOut) {
  if (pType->eKind == CV_ITEM_FLOAT) {
    if (pType->szItem == 8) {
      uint64_t u;
      memcpy(&u, &d, 8);
      cvPutInt(pType, u, aOut);
    } else if (pType->szItem == 4) {
      float f = (float)d;
      uint32_t u;
      if (isinf(f) && !isinf(d)) return 1;
      memcpy(&u, &f, 4);
      cvPutInt(pType, u, aOut);
    } else {
      uint16_t h;
      if (cvDoubleToHalf(d, &h)) return 1;
      cvPutInt(pType, h, aOut);
    }
    return 0;
  }
  if (pType->eKind == CV_ITEM_INT || pType->eKind == CV_ITEM_UINT ||
      pType->eKind == CV_ITEM_BOOL || pType->eKind == CV_ITEM_TIME) {
    if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || d != floor(d)) return 1;
    return cvPutChecked(pType, (int64_t)d, aOut);
  }
  return 1;
}

/* A float item from NULL (NaN), an INTEGER the float holds exactly, or a REAL. */
static int cvFloatToItem(const CvItemType *pType, sqlite3_value *pVal, uint8_t *aOut) {
  int eType = sqlite3_value_type(pVal);
  int64_t i = eType == SQLITE_INTEGER ? sqlite3_value_int64(pVal) : 0;
  double d = eType == SQLITE_NULL ? NAN : sqlite3_value_double(pVal);
  if (eType == SQLITE_TEXT || eType == SQLITE_BLOB) return 1;
  /* 2^63 rounds up out of int64: compare in double first, then exactly */
  if (eType == SQLITE_INTEGER && (d >= 9223372036854775808.0 || (int64_t)d != i)) return 1;
  if (cvNumberToItem(pType, d, aOut)) return 1;
  if (eType == SQLITE_INTEGER && pType->szItem == 4 && (int64_t)(float)d != i) return 1;
  if (eType == SQLITE_INTEGER && pType->szItem == 2) {
    uint16_t h = (uint16_t)(pType->bBigEndian ? aOut[0] << 8 | aOut[1] : aOut[1] << 8 | aOut[0]);
    if (cvHalfToDouble(h) != d) return 1;
  }
  return 0;
}

int cvValueToItem(const CvItemType *pType, sqlite3_value *pVal, uint8_t *aOut, char **pzErr) {
  int bBad = 1, eType;
  /* the common case of a load: a REAL into a float dtype (what cvFloatToItem does for it) */
  if (pType->eKind == CV_ITEM_FLOAT && sqlite3_value_type(pVal) == SQLITE_FLOAT &&
      cvNumberToItem(pType, sqlite3_value_double(pVal), aOut) == 0)
    return 0;
  eType = cvNumericText(pVal, pType->eKind == CV_ITEM_FLOAT || pType->eKind == CV_ITEM_INT ||
                                      pType->eKind == CV_ITEM_UINT || pType->eKind == CV_ITEM_BOOL);
  switch (pType->eKind) {
    case CV_ITEM_FLOAT:
      bBad = cvFloatToItem(pType, pVal, aOut);
      break;
    case CV_ITEM_INT:
    case CV_ITEM_UINT:
    case CV_ITEM_BOOL:
      bBad = cvIntToItem(pType, pVal, aOut);
      break;
    case CV_ITEM_TIME:
      if (eType == SQLITE_NULL) {
        cvPutInt(pType, (uint64_t)INT64_MIN, aOut); /* NaT */
        bBad = 0;
      } else if (eType == SQLITE_INTEGER) {
        cvPutInt(pType, (uint64_t)sqlite3_value_int64(pVal), aOut);
        bBad = 0;
      }
      break;
    case CV_ITEM_BLOB:
      if (eType == SQLITE_BLOB && sqlite3_value_bytes(pVal) == pType->szItem) {
        memcpy(aOut, sqlite3_value_blob(pVal), (size_t)pType->szItem);
        bBad = 0;
      }
      break;
    default:
      break;
  }
  if (bBad) {
    const char *zT = cvTypeName(pVal);
    char *zV = eType == SQLITE_BLOB ? sqlite3_mprintf("of %d bytes", sqlite3_value_bytes(pVal))
             : eType == SQLITE_NULL ? sqlite3_mprintf("")
                                    : sqlite3_mprintf("%s", sqlite3_value_text(pVal));
    *pzErr = eType == SQLITE_NULL || eType == SQLITE_BLOB
                 ? sqlite3_mprintf("%s value%s%s does not fit the column's dtype %s", zT,
                                   eType == SQLITE_BLOB ? " " : "", zV ? zV : "", pType->zName)
                 : sqlite3_mprintf("%s value '%s' does not fit the column's dtype %s", zT,
                                   zV ? zV : "", pType->zName);
    sqlite3_free(zV);
  }
  return bBad;
}

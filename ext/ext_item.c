/*
 * ext_item.c -- array items as SQL values.
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

/*
 * vtab_bcolz.c -- bcolz carray and ctable directories as tables of the `caterva` module.
 *
 *   CREATE VIRTUAL TABLE t USING caterva('prices.bcolz' [, dims='a,b'] [, value='v']);
 *
 * vtab_main.c's xConnect hands a path that caterva_bcolz_kind() recognises to cvBzConnect, and
 * the module's slots send calls on such a table here (the table is a CvVtab whose pBcolz is
 * set; its array fields are unused). The tables are read-only. cache_mb= is refused: there is
 * no block cache across queries; each cursor's readers keep the blocks they are reading.
 *
 *   carray of shape (n, a, b)  columns d0, d1, d2, value; one row per item; the rowid is the
 *                              C-order item index (= d0 for a 1-D carray)
 *   ctable with names [x, y]   columns x, y; one row per bcolz row; the rowid is the row
 *                              number (0-based). An N-d column (shape (n, a, b)) is a BLOB
 *                              column: each row's a*b items in C order, as stored (numpy:
 *                              frombuffer(v, dtype).reshape(a, b)).
 *
 * Values: as ext_item.c says for arrays, except that
 *   |S<n>        TEXT when the bytes, trailing NULs removed, are valid UTF-8 without a NUL;
 *                otherwise a BLOB of those bytes (trailing NULs removed)
 *   <M8[unit]    ISO 8601 TEXT as numpy.datetime_as_string writes it for that unit
 *                ("2021-03-04", "2021-03-04T05:06:07.123456789"); NaT is NULL; a multiple
 *                of a unit ("[5m]", "[10s]") counts N units per tick, the text is that of the
 *                unit; a tick count whose N-fold overflows int64 is an error
 *
 * Plan. Constraints on the dimension columns (carray) and on the rowid (ctable; a 1-D
 * carray's rowid is d0) are pushed down: =, <, <=, >, >=, IS and IN (all values in one
 * xFilter). idxStr holds one (operator, dimension) pair of characters per constraint given
 * to xFilter, in argv order: the operator is CV_OP_EQ ... CV_OP_IN of vtab_internal.h, the
 * dimension 'a' + its number (the rowid of a ctable is dimension 0). The scan visits the
 * cartesian product of each dimension's sorted runs in C order, so item indices only grow
 * and ORDER BY on d0, d1, ... (or the rowid) ascending is consumed.
 *
 * Reading. Each value column has its own reader (caterva_bcolz_reader), made at the first
 * xColumn that needs it: a column the query does not read is never decompressed, and a
 * column reads only the blocks of its own chunks that hold the rows visited (columns have
 * different chunklens). Readers live as long as the cursor, so the lookups of a join by
 * rowid that fall in one block decompress it once.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <stdlib.h>
#include <string.h>

/* How a value column's items become SQL values. */
#define CV_BZ_ITEM     0   /* as ext_item.c does */
#define CV_BZ_BYTES    1   /* |S<n>: TEXT or BLOB, trailing NULs removed */
#define CV_BZ_DATETIME 2   /* <M8[unit]: ISO 8601 TEXT */

typedef struct CvBzType CvBzType;
struct CvBzType {
  CvItemType item;         /* ext_item.c's view of the dtype */
  int eBz;                 /* CV_BZ_* */
  int iUnit;               /* CV_BZ_DATETIME: index in aBzUnit[] */
  int64_t nMul;            /* CV_BZ_DATETIME: units per tick ("[5m]": 5) */
  int64_t nRowItem;        /* Items per row: 1, or more for an N-d ctable column (a BLOB) */
};

struct CvBcolzTab {
  caterva_bcolz *pBz;      /* The dataset */
  int bCtable;             /* A ctable (else a carray) */
  int nDim;                /* Dimension columns (carray: its ndim; ctable: none) */
  int nIdx;                /* Indexed dimensions (carray: ndim; ctable: 1, the rowid) */
  int nVal;                /* Value columns (carray: 1; ctable: its columns) */
  int64_t aShape[CV_MAX_DIM];   /* Extent of each indexed dimension */
  int64_t aStride[CV_MAX_DIM];  /* C-order item stride of each */
  CvBzType *aType;         /* nVal value column types */
};

/* One value column of a scan. */
typedef struct CvBzCol CvBzCol;
struct CvBzCol {
  caterva_bcolz_reader *pReader;  /* NULL until the column is read */
  int64_t iFirst, iEnd;           /* Items [iFirst, iEnd) are at aData */
  const uint8_t *aData;           /* Borrowed from pReader */
};

typedef struct CvBzCursor CvBzCursor;
struct CvBzCursor {
  CV_CURSOR_HEAD                  /* bBcolz = 1, nFast = 0 */
  int64_t iItem;                  /* C-order index of the current row's item */
  int64_t aCoord[CV_MAX_DIM];     /* Its coordinates */
  CvRange *aRun[CV_MAX_DIM];      /* Sorted disjoint runs of each dimension */
  int nRun[CV_MAX_DIM];
  int iRun[CV_MAX_DIM];           /* Run of each dimension holding aCoord */
  CvBzCol *aCol;                  /* nVal columns */
};

/* datetime64 units: name, and ticks per second (> 0) or seconds per tick (< 0). */
static const struct { const char *zName; int64_t nPerSec; } aBzUnit[] = {
  {"Y", 0}, {"M", 0}, {"W", -604800}, {"D", -86400}, {"h", -3600}, {"m", -60},
  {"s", 1}, {"ms", 1000}, {"us", 1000000}, {"ns", 1000000000}, {"ps", 1000000000000},
  {"fs", 1000000000000000}, {"as", 1000000000000000000},
};

static CvBcolzTab *cvBz(sqlite3_vtab *pVtab) { return ((CvVtab *)pVtab)->pBcolz; }

/* ---- values ------------------------------------------------------------------------------- */

static int cvBzTypeInit(CvBzType *pT, const caterva_bcolz_column *pCol, char **pzErr) {
  caterva_dtype_info info;
  if (cvItemTypeInit(&pT->item, pCol->dtype, pCol->itemsize, pzErr)) return SQLITE_ERROR;
  caterva_dtype_parse(pCol->dtype, &info);
  pT->eBz = CV_BZ_ITEM;
  pT->nRowItem = 1;
  if (info.kind == CATERVA_KIND_BYTES && pCol->dtype[1] == 'S') pT->eBz = CV_BZ_BYTES;
  if (info.kind == CATERVA_KIND_DATETIME) {
    const char *z = strchr(pCol->dtype, '[');
    int64_t nMul = 0;
    if (z) z++;
    while (z && *z >= '0' && *z <= '9' && nMul < 1000000000) nMul = nMul * 10 + (*z++ - '0');
    for (int i = 0; z && i < (int)(sizeof(aBzUnit) / sizeof(aBzUnit[0])); i++) {
      size_t n = strlen(aBzUnit[i].zName);
      if (strncmp(z, aBzUnit[i].zName, n) == 0 && z[n] == ']' && z[1 + n] == 0) {
        pT->eBz = CV_BZ_DATETIME;
        pT->iUnit = i;
        pT->nMul = nMul > 0 ? nMul : 1;
      }
    }
    if (pT->eBz != CV_BZ_DATETIME && pCol->dtype[1] == 'M') {
      *pzErr = sqlite3_mprintf("caterva: '%s': unsupported datetime64 unit in \"%s\"",
                               pCol->path, pCol->dtype);
      return SQLITE_ERROR;
    }
  }
  return SQLITE_OK;
}

static const char *cvBzDecl(const CvBzType *pT) {
  if (pT->nRowItem > 1) return "BLOB";
  return pT->eBz == CV_BZ_ITEM ? cvItemTypeDecl(&pT->item) : "TEXT";
}

/* Is z[0..n) UTF-8 without NUL characters? */
static int cvBzIsText(const uint8_t *z, int n) {
  int i = 0;
  while (i < n) {
    uint8_t c = z[i];
    int nExtra, k;
    uint32_t v;
    if (c == 0) return 0;
    if (c < 0x80) { i++; continue; }
    if (c >= 0xC2 && c <= 0xDF) nExtra = 1, v = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) nExtra = 2, v = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) nExtra = 3, v = c & 0x07;
    else return 0;
    if (i + nExtra >= n) return 0;
    for (k = 1; k <= nExtra; k++) {
      if ((z[i + k] & 0xC0) != 0x80) return 0;
      v = v << 6 | (z[i + k] & 0x3F);
    }
    if ((nExtra == 2 && (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF))) ||
        (nExtra == 3 && (v < 0x10000 || v > 0x10FFFF)))
      return 0;
    i += nExtra + 1;
  }
  return 1;
}

static void cvBzBytesResult(sqlite3_context *pCtx, const uint8_t *p, int n) {
  while (n > 0 && p[n - 1] == 0) n--;
  if (cvBzIsText(p, n)) sqlite3_result_text(pCtx, (const char *)p, n, SQLITE_TRANSIENT);
  else sqlite3_result_blob(pCtx, p, n, SQLITE_TRANSIENT);
}

static int64_t cvFloorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* Proleptic Gregorian date of a day count from 1970-01-01 (era arithmetic: 400-year cycles
** of 146097 days, years starting in March so that the leap day is last). */
static void cvCivil(int64_t nDay, int64_t *pY, int *pM, int *pD) {
  int64_t z = nDay + 719468, era = cvFloorDiv(z, 146097), doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  int m = (int)(mp < 10 ? mp + 3 : mp - 9);
  *pD = (int)(doy - (153 * mp + 2) / 5 + 1);
  *pM = m;
  *pY = yoe + era * 400 + (m <= 2);
}

/* numpy.datetime_as_string's text of v ticks of unit iUnit since 1970-01-01T00:00. */
static void cvBzDatetimeResult(sqlite3_context *pCtx, int iUnit, int64_t v) {
  int64_t nPer = aBzUnit[iUnit].nPerSec, nSec, nFrac = 0, nDay, y;
  int m, d, nDigit = 0;
  char z[64];
  if (v == INT64_MIN) { sqlite3_result_null(pCtx); return; }   /* NaT */
  if (iUnit == 0) {
    sqlite3_snprintf(sizeof(z), z, "%04lld", (long long)(1970 + v));
  } else if (iUnit == 1) {
    sqlite3_snprintf(sizeof(z), z, "%04lld-%02d", (long long)(1970 + cvFloorDiv(v, 12)),
                     (int)(v - 12 * cvFloorDiv(v, 12)) + 1);
  } else {
    if (nPer < 0) {
      /* W, D, h, m: whole ticks of -nPer seconds; days from them without overflow */
      int64_t nPerDay = 86400 / -nPer;
      nDay = nPer == -604800 ? v * 7 : cvFloorDiv(v, nPerDay);
      nSec = nPer == -604800 ? 0 : (v - nDay * nPerDay) * -nPer;
    } else {
      int64_t s = cvFloorDiv(v, nPer);
      nFrac = v - s * nPer;
      for (int64_t k = nPer; k > 1; k /= 10) nDigit++;
      nDay = cvFloorDiv(s, 86400);
      nSec = s - nDay * 86400;
    }
    cvCivil(nDay, &y, &m, &d);
    sqlite3_snprintf(sizeof(z), z, "%04lld-%02d-%02d", (long long)y, m, d);
    if (iUnit >= 4) {
      int n = (int)strlen(z);
      static const int aLen[] = {0, 0, 0, 0, 3, 6, 9};   /* "THH", "THH:MM", "THH:MM:SS" */
      char zTime[16];
      sqlite3_snprintf(sizeof(zTime), zTime, "T%02d:%02d:%02d", (int)(nSec / 3600),
                       (int)(nSec / 60 % 60), (int)(nSec % 60));
      zTime[iUnit < 6 ? aLen[iUnit] : 9] = 0;
      sqlite3_snprintf(sizeof(z) - n, z + n, "%s", zTime);
      if (nDigit > 0) {
        n = (int)strlen(z);
        sqlite3_snprintf(sizeof(z) - n, z + n, ".%0*lld", nDigit, (long long)nFrac);
      }
    }
  }
  sqlite3_result_text(pCtx, z, -1, SQLITE_TRANSIENT);
}

static void cvBzResult(sqlite3_context *pCtx, const CvBzType *pT, const uint8_t *p) {
  if (pT->eBz == CV_BZ_BYTES) {
    cvBzBytesResult(pCtx, p, pT->item.szItem);
  } else if (pT->eBz == CV_BZ_DATETIME) {
    uint8_t a[8];
    int64_t v;
    for (int i = 0; i < 8; i++) a[i] = pT->item.bSwap ? p[7 - i] : p[i];
    memcpy(&v, a, 8);
    if (v != INT64_MIN && pT->nMul > 1 && __builtin_mul_overflow(v, pT->nMul, &v)) {
      sqlite3_result_error(pCtx, "caterva: a datetime64 value with a unit multiple overflows "
                           "int64 in its base unit", -1);
      return;
    }
    cvBzDatetimeResult(pCtx, pT->iUnit, v);
  } else {
    cvItemResult(pCtx, &pT->item, p);
  }
}

/* ---- connect ------------------------------------------------------------------------------ */

void cvBzFree(CvVtab *pTab) {
  CvBcolzTab *pBc;
  if (pTab == 0) return;
  pBc = pTab->pBcolz;
  if (pTab->pConn) cvConnRemoveTable(pTab->pConn, pTab);
  if (pBc) {
    caterva_bcolz_free(pBc->pBz);
    sqlite3_free(pBc->aType);
    sqlite3_free(pBc);
  }
  sqlite3_free(pTab->zPath);
  cvConnUnref(pTab->pConn);
  sqlite3_free(pTab->base.zErrMsg);
  sqlite3_free(pTab);
}

/* Options that mean something for arrays only. */
static int cvBzCheckOptions(const CvOptions *pOpt, char **pzErr) {
  if (cvHasCreateOptions(pOpt) || pOpt->zDtype || pOpt->zSync || pOpt->zLockReads || pOpt->zMaxDead ||
      pOpt->nMore > 0 || pOpt->bCacheMb || pOpt->zRange) {
    *pzErr = sqlite3_mprintf("caterva: '%s' is a bcolz directory: it opens read-only, alone "
                             "(a ctable is already several columns), and takes only the options "
                             "dims= and value= (no range=, no cache_mb=: a bcolz table has no block cache; "
                             "each query's readers keep the blocks they are reading)", pOpt->zPath);
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

/* The dataset's shape as indexed dimensions, and its value column types. */
static int cvBzGeometry(CvBcolzTab *pBc, char **pzErr) {
  const caterva_bcolz_column *pC0 = caterva_bcolz_column_get(pBc->pBz, 0);
  int i;
  pBc->bCtable = caterva_bcolz_is_ctable(pBc->pBz);
  pBc->nVal = caterva_bcolz_ncols(pBc->pBz);
  pBc->nDim = pBc->bCtable ? 0 : pC0->ndim;
  pBc->nIdx = pBc->bCtable ? 1 : pC0->ndim;
  for (i = 0; i < pBc->nIdx; i++) pBc->aShape[i] = pC0->shape[i];
  for (i = pBc->nIdx - 1; i >= 0; i--)
    pBc->aStride[i] = i == pBc->nIdx - 1 ? 1 : pBc->aStride[i + 1] * pBc->aShape[i + 1];
  pBc->aType = sqlite3_malloc64(sizeof(CvBzType) * (sqlite3_uint64)pBc->nVal);
  if (pBc->aType == 0) return SQLITE_NOMEM;
  for (i = 0; i < pBc->nVal; i++) {
    const caterva_bcolz_column *pC = caterva_bcolz_column_get(pBc->pBz, i);
    if (cvBzTypeInit(&pBc->aType[i], pC, pzErr)) return SQLITE_ERROR;
    /* an N-d ctable column: each row's items (shape[1:], C order, as stored) as one BLOB */
    for (int k = 1; pBc->bCtable && k < pC->ndim; k++) pBc->aType[i].nRowItem *= pC->shape[k];
  }
  return SQLITE_OK;
}

/* CREATE TABLE text: dimension columns, then value columns. */
static int cvBzDeclare(sqlite3 *db, CvBcolzTab *pBc, const CvOptions *pOpt, char **pzErr) {
  char *azDim[CV_MAX_DIM];
  sqlite3_str *pStr = sqlite3_str_new(db);
  char *zSql;
  int i, rc = SQLITE_OK;
  memset(azDim, 0, sizeof(azDim));
  if (pBc->nDim > 0 && pOpt->zDims) rc = cvSplitDims(pOpt->zDims, pBc->nDim, azDim, pzErr);
  sqlite3_str_appendall(pStr, "CREATE TABLE x(");
  for (i = 0; i < pBc->nDim && rc == SQLITE_OK; i++) {
    if (azDim[i]) sqlite3_str_appendf(pStr, "\"%w\" INTEGER, ", azDim[i]);
    else sqlite3_str_appendf(pStr, "d%d INTEGER, ", i);
  }
  for (i = 0; i < pBc->nVal && rc == SQLITE_OK; i++) {
    const caterva_bcolz_column *pC = caterva_bcolz_column_get(pBc->pBz, i);
    const char *zName = pC->name ? pC->name : (pOpt->zValue ? pOpt->zValue : "value");
    sqlite3_str_appendf(pStr, "%s\"%w\" %s", i ? ", " : "", zName, cvBzDecl(&pBc->aType[i]));
  }
  sqlite3_str_appendall(pStr, ")");
  zSql = sqlite3_str_finish(pStr);
  for (i = 0; i < CV_MAX_DIM; i++) sqlite3_free(azDim[i]);
  if (rc != SQLITE_OK) {
    sqlite3_free(zSql);
    return rc;
  }
  if (zSql == 0) return SQLITE_NOMEM;
  rc = sqlite3_declare_vtab(db, zSql);
  if (rc != SQLITE_OK) *pzErr = sqlite3_mprintf("caterva: cannot declare %s: %s", zSql,
                                                sqlite3_errmsg(db));
  sqlite3_free(zSql);
  return rc;
}

int cvBzConnect(sqlite3 *db, CvConn *pConn, const char *const *argv, const CvOptions *pOpt,
                sqlite3_vtab **ppVtab, char **pzErr) {
  CvVtab *pTab;
  CvBcolzTab *pBc;
  int rc, iErr;
  *ppVtab = 0;
  rc = cvBzCheckOptions(pOpt, pzErr);
  if (rc != SQLITE_OK) return rc;
  pTab = sqlite3_malloc(sizeof(*pTab));
  pBc = sqlite3_malloc(sizeof(*pBc));
  if (pTab) memset(pTab, 0, sizeof(*pTab));
  if (pBc) memset(pBc, 0, sizeof(*pBc));
  if (pTab == 0 || pBc == 0) {
    sqlite3_free(pTab);
    sqlite3_free(pBc);
    return SQLITE_NOMEM;
  }
  pTab->pBcolz = pBc;
  pTab->pConn = cvConnRef(pConn);
  pTab->db = db;
  pTab->zPath = sqlite3_mprintf("%s", pOpt->zPath);
  if (pTab->zPath == 0) {
    rc = SQLITE_NOMEM;
    goto bz_connect_out;
  }
  iErr = caterva_bcolz_open(pConn->pCtx, pOpt->zPath, &pBc->pBz);
  if (iErr < 0) {
    const char *zMsg = caterva_ctx_errmsg(pConn->pCtx);
    *pzErr = sqlite3_mprintf("caterva: cannot open bcolz \"%s\": %s%s%s", pOpt->zPath,
                             caterva_strerror(iErr), zMsg[0] ? ": " : "", zMsg);
    rc = iErr == CATERVA_E_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    goto bz_connect_out;
  }
  rc = cvBzGeometry(pBc, pzErr);
  if (rc == SQLITE_OK) rc = cvBzDeclare(db, pBc, pOpt, pzErr);
  if (rc == SQLITE_OK) rc = sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  if (rc == SQLITE_OK) rc = cvConnAddTable(pConn, argv[1], argv[2], pTab->zPath, pTab);
bz_connect_out:
  if (rc != SQLITE_OK) {
    if (rc == SQLITE_NOMEM && *pzErr == 0) *pzErr = sqlite3_mprintf("caterva: out of memory");
    cvBzFree(pTab);
  } else {
    *ppVtab = &pTab->base;
  }
  return rc;
}

/* ---- converted ctables ---------------------------------------------------------------------
** caterva_import('t.bcolz', 'out.d') writes one array per column and ctable.json (the column
** names in the ctable's order). Opening 'out.d' opens a several-variable table (vtab_vars.c) over
** out.d/<name>.b2nd for each name in that order, the value columns named after the columns. */

static void cvBzFreeList(char **az, int n) {
  for (int i = 0; i < n; i++) sqlite3_free(az[i]);
  sqlite3_free(az);
}

int cvBzExpandConverted(CvConn *pConn, CvOptions *pOpt, char **pzErr) {
  char **azName = 0, **azPath = 0, **azVal = 0;
  int nName = 0, i, rc = SQLITE_OK, iErr;
  if (pOpt->nMore > 0 || cvHasCreateOptions(pOpt) || pOpt->zDtype) {
    *pzErr = sqlite3_mprintf("caterva: '%s' is a converted bcolz ctable (ctable.json): it opens "
                             "alone as one table of its arrays, without further paths, dtype= or "
                             "creation options", pOpt->zPath);
    return SQLITE_ERROR;
  }
  iErr = caterva_bcolz_converted_names(pConn->pCtx, pOpt->zPath, &azName, &nName);
  if (iErr < 0) {
    const char *zMsg = caterva_ctx_errmsg(pConn->pCtx);
    *pzErr = sqlite3_mprintf("caterva: cannot open the converted ctable \"%s\": %s%s%s",
                             pOpt->zPath, caterva_strerror(iErr), zMsg[0] ? ": " : "", zMsg);
    return iErr == CATERVA_E_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
  }
  if (nName > CV_MAX_VARS) {
    *pzErr = sqlite3_mprintf("caterva: the converted ctable \"%s\" has %d columns; a table holds "
                             "at most %d arrays (open the bcolz ctable itself, or a column's "
                             "array on its own)", pOpt->zPath, nName, CV_MAX_VARS);
    caterva_bcolz_names_free(azName, nName);
    return SQLITE_ERROR;
  }
  azPath = sqlite3_malloc64(sizeof(char *) * (sqlite3_uint64)nName);
  azVal = sqlite3_malloc64(sizeof(char *) * (sqlite3_uint64)nName);
  if (azPath) memset(azPath, 0, sizeof(char *) * (size_t)nName);
  if (azVal) memset(azVal, 0, sizeof(char *) * (size_t)nName);
  for (i = 0; i < nName && azPath && azVal; i++) {
    azPath[i] = sqlite3_mprintf("%s/%s.b2nd", pOpt->zPath, azName[i]);
    azVal[i] = sqlite3_mprintf("%s", azName[i]);
    if (azPath[i] == 0 || azVal[i] == 0) break;
  }
  caterva_bcolz_names_free(azName, nName);
  if (i < nName) {
    if (azPath) cvBzFreeList(azPath, nName);
    if (azVal) cvBzFreeList(azVal, nName);
    return SQLITE_NOMEM;
  }
  sqlite3_free(pOpt->zPath);
  pOpt->zPath = azPath[0];
  for (i = 1; i < nName; i++) pOpt->azMore[i - 1] = azPath[i];
  pOpt->nMore = nName - 1;
  pOpt->azValName = azVal;
  sqlite3_free(azPath);
  return rc;
}

/* ---- plan --------------------------------------------------------------------------------- */

/* The indexed dimension a constraint on column iCol reads, or -1. */
static int cvBzDimOf(const CvBcolzTab *pBc, int iCol) {
  if (iCol < 0) return pBc->nIdx == 1 ? 0 : -1;   /* the rowid */
  return iCol < pBc->nDim ? iCol : -1;
}

/* ORDER BY d0, d1, ... (or the rowid) ascending: the scan's own order. */
static int cvBzOrderConsumed(const CvBcolzTab *pBc, const sqlite3_index_info *pInfo) {
  for (int i = 0; i < pInfo->nOrderBy; i++) {
    const struct sqlite3_index_orderby *pO = &pInfo->aOrderBy[i];
    if (pO->desc || cvBzDimOf(pBc, pO->iColumn) != i) return 0;
  }
  return pInfo->nOrderBy > 0;
}

int cvBzBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  CvBcolzTab *pBc = cvBz(pVtab);
  CvRange aR[CV_MAX_DIM];
  int aEq[CV_MAX_DIM], nArg = 0, i, d, bUnique = 1;
  double nRow = 1.0;
  char *zStr;
  sqlite3_str *pStr = sqlite3_str_new(0);
  for (d = 0; d < pBc->nIdx; d++) {
    aR[d].iLo = 0;
    aR[d].iHi = pBc->aShape[d] - 1;
    aEq[d] = 0;
  }
  for (i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *pC = &pInfo->aConstraint[i];
    sqlite3_value *pVal = 0;
    int op = cvConstraintOp(pC->op);
    d = cvBzDimOf(pBc, pC->iColumn);
    if (!pC->usable || op == 0 || d < 0) continue;
    if (op == CV_OP_EQ && pC->op == SQLITE_INDEX_CONSTRAINT_EQ && sqlite3_vtab_in(pInfo, i, -1)) {
      if (aEq[d] == 2) continue;   /* a second IN list on d: SQLite checks it */
      sqlite3_vtab_in(pInfo, i, 1);
      op = CV_OP_IN;
      aEq[d] = 2;
    } else if (sqlite3_vtab_rhs_value(pInfo, i, &pVal) == SQLITE_OK && pVal) {
      cvRangeApply(&aR[d], op, pVal);
    } else if (op == CV_OP_EQ) {
      aR[d].iHi = aR[d].iLo;   /* one value, not known yet */
    } else if (aR[d].iHi > aR[d].iLo) {
      aR[d].iHi = aR[d].iLo + (aR[d].iHi - aR[d].iLo) / 2;
    }
    if (op == CV_OP_EQ && aEq[d] == 0) aEq[d] = 1;
    pInfo->aConstraintUsage[i].argvIndex = ++nArg;
    pInfo->aConstraintUsage[i].omit = 1;
    sqlite3_str_appendf(pStr, "%c%c", op, 'a' + d);
  }
  for (d = 0; d < pBc->nIdx; d++) {
    double n = aR[d].iLo > aR[d].iHi ? 0.0 : (double)(aR[d].iHi - aR[d].iLo + 1);
    if (aEq[d] == 2 && n > 20.0) n = 20.0;
    nRow *= n;
    bUnique &= aEq[d] == 1;
  }
  zStr = sqlite3_str_finish(pStr);
  if (zStr == 0 && nArg > 0) return SQLITE_NOMEM;
  pInfo->idxStr = zStr;
  pInfo->needToFreeIdxStr = 1;
  pInfo->estimatedRows = (sqlite3_int64)(nRow < 1.0 ? 1.0 : nRow);
  pInfo->estimatedCost = 10.0 + nRow * (1.0 + pBc->nVal);
  if (bUnique) pInfo->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
  if (cvBzOrderConsumed(pBc, pInfo)) pInfo->orderByConsumed = 1;
  return SQLITE_OK;
}

/* ---- cursor ------------------------------------------------------------------------------- */

int cvBzOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  CvBcolzTab *pBc = cvBz(pVtab);
  CvBzCursor *pCur = sqlite3_malloc(sizeof(*pCur));
  if (pCur == 0) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof(*pCur));
  pCur->aCol = sqlite3_malloc64(sizeof(CvBzCol) * (sqlite3_uint64)pBc->nVal);
  if (pCur->aCol == 0) {
    sqlite3_free(pCur);
    return SQLITE_NOMEM;
  }
  memset(pCur->aCol, 0, sizeof(CvBzCol) * (size_t)pBc->nVal);
  pCur->bEof = 1;
  pCur->bBcolz = 1;
  pCur->iValueCol = -1;
  *ppCursor = &pCur->base;
  return SQLITE_OK;
}

static void cvBzFreeRuns(CvBzCursor *pCur) {
  for (int d = 0; d < CV_MAX_DIM; d++) {
    sqlite3_free(pCur->aRun[d]);
    pCur->aRun[d] = 0;
    pCur->nRun[d] = 0;
  }
}

int cvBzClose(sqlite3_vtab_cursor *pCursor) {
  CvBzCursor *pCur = (CvBzCursor *)pCursor;
  CvBcolzTab *pBc = cvBz(pCursor->pVtab);
  for (int i = 0; i < pBc->nVal; i++) caterva_bcolz_reader_free(pCur->aCol[i].pReader);
  sqlite3_free(pCur->aCol);
  cvBzFreeRuns(pCur);
  sqlite3_free(pCur);
  return SQLITE_OK;
}

static int cvCmpI64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* Runs of dimension d: the values of an IN list inside the bound r, consecutive ones merged. */
static int cvBzInRuns(CvBzCursor *pCur, int d, CvRange r, sqlite3_value *pList) {
  sqlite3_value *pVal;
  int64_t *aV = 0;
  int n = 0, nAlloc = 0, rc, i;
  for (rc = sqlite3_vtab_in_first(pList, &pVal); rc == SQLITE_OK && pVal;
       rc = sqlite3_vtab_in_next(pList, &pVal)) {
    CvRange one = r;
    cvRangeApply(&one, CV_OP_EQ, pVal);
    if (one.iLo > one.iHi) continue;
    if (n == nAlloc) {
      int64_t *aNew = sqlite3_realloc64(aV, sizeof(int64_t) * (sqlite3_uint64)(nAlloc * 2 + 16));
      if (aNew == 0) {
        sqlite3_free(aV);
        return SQLITE_NOMEM;
      }
      aV = aNew;
      nAlloc = nAlloc * 2 + 16;
    }
    aV[n++] = one.iLo;
  }
  if (rc != SQLITE_OK && rc != SQLITE_DONE) {
    sqlite3_free(aV);
    return rc;
  }
  if (n > 0) qsort(aV, (size_t)n, sizeof(int64_t), cvCmpI64);
  pCur->aRun[d] = sqlite3_malloc64(sizeof(CvRange) * (sqlite3_uint64)(n > 0 ? n : 1));
  if (pCur->aRun[d] == 0) {
    sqlite3_free(aV);
    return SQLITE_NOMEM;
  }
  for (i = 0; i < n; i++) {
    int k = pCur->nRun[d];
    if (k > 0 && aV[i] <= pCur->aRun[d][k - 1].iHi + 1) {
      if (aV[i] > pCur->aRun[d][k - 1].iHi) pCur->aRun[d][k - 1].iHi = aV[i];
    } else {
      pCur->aRun[d][k].iLo = pCur->aRun[d][k].iHi = aV[i];
      pCur->nRun[d]++;
    }
  }
  sqlite3_free(aV);
  return SQLITE_OK;
}

/* The current row's item index from aCoord. */
static void cvBzSetItem(CvBzCursor *pCur, const CvBcolzTab *pBc) {
  int64_t i = 0;
  for (int d = 0; d < pBc->nIdx; d++) i += pCur->aCoord[d] * pBc->aStride[d];
  pCur->iItem = i;
}

int cvBzFilter(sqlite3_vtab_cursor *pCursor, int idxNum, const char *idxStr, int argc,
               sqlite3_value **argv) {
  CvBzCursor *pCur = (CvBzCursor *)pCursor;
  CvBcolzTab *pBc = cvBz(pCursor->pVtab);
  CvRange aR[CV_MAX_DIM];
  sqlite3_value *apIn[CV_MAX_DIM];
  int d, i, rc = SQLITE_OK, n = idxStr ? (int)strlen(idxStr) / 2 : 0;
  (void)idxNum;
  cvBzFreeRuns(pCur);
  pCur->bEof = 1;
  for (d = 0; d < pBc->nIdx; d++) {
    aR[d].iLo = 0;
    aR[d].iHi = pBc->aShape[d] - 1;
    apIn[d] = 0;
  }
  for (i = 0; i < n && i < argc; i++) {
    int op = idxStr[2 * i];
    d = idxStr[2 * i + 1] - 'a';
    if (d < 0 || d >= pBc->nIdx) continue;
    if (op == CV_OP_IN) {
      apIn[d] = argv[i];   /* xBestIndex passes at most one IN list per dimension */
    } else {
      cvRangeApply(&aR[d], op, argv[i]);
    }
  }
  for (d = 0; d < pBc->nIdx && rc == SQLITE_OK; d++) {
    if (aR[d].iLo > aR[d].iHi) return SQLITE_OK;   /* nothing matches */
    if (apIn[d]) {
      rc = cvBzInRuns(pCur, d, aR[d], apIn[d]);
    } else {
      pCur->aRun[d] = sqlite3_malloc(sizeof(CvRange));
      if (pCur->aRun[d] == 0) rc = SQLITE_NOMEM;
      else pCur->aRun[d][0] = aR[d], pCur->nRun[d] = 1;
    }
    if (rc == SQLITE_OK && pCur->nRun[d] == 0) return SQLITE_OK;
  }
  if (rc != SQLITE_OK) return rc;
  for (d = 0; d < pBc->nIdx; d++) {
    pCur->iRun[d] = 0;
    pCur->aCoord[d] = pCur->aRun[d][0].iLo;
  }
  pCur->bEof = 0;
  cvBzSetItem(pCur, pBc);
  return SQLITE_OK;
}

int cvBzNext(sqlite3_vtab_cursor *pCursor) {
  CvBzCursor *pCur = (CvBzCursor *)pCursor;
  CvBcolzTab *pBc = cvBz(pCursor->pVtab);
  int d;
  for (d = pBc->nIdx - 1; d >= 0; d--) {
    const CvRange *pR = &pCur->aRun[d][pCur->iRun[d]];
    if (pCur->aCoord[d] < pR->iHi) {
      pCur->aCoord[d]++;
      break;
    }
    if (pCur->iRun[d] + 1 < pCur->nRun[d]) {
      pCur->aCoord[d] = pCur->aRun[d][++pCur->iRun[d]].iLo;
      break;
    }
    pCur->iRun[d] = 0;
    pCur->aCoord[d] = pCur->aRun[d][0].iLo;
  }
  if (d < 0) pCur->bEof = 1;
  else cvBzSetItem(pCur, pBc);
  return SQLITE_OK;
}

/* Items the scan will read next along the last dimension (a hint for the reader). */
static int64_t cvBzWant(const CvBzCursor *pCur, const CvBcolzTab *pBc) {
  int d = pBc->nIdx - 1;
  return pCur->aRun[d][pCur->iRun[d]].iHi - pCur->aCoord[d] + 1;
}

/* Make column iVal's window hold item i (want: items the scan reads from i on). */
static int cvBzFetch(CvBzCursor *pCur, int iVal, int64_t i, int64_t want) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  CvBzCol *pCol = &pCur->aCol[iVal];
  caterva_ctx *pLib = pTab->pConn->pCtx;
  int64_t n = 0;
  int r = CATERVA_OK;
  if (pCol->pReader == 0)
    r = caterva_bcolz_reader_new(pLib, pTab->pBcolz->pBz, iVal, &pCol->pReader);
  if (r == CATERVA_OK && !(pCol->aData && i >= pCol->iFirst && i < pCol->iEnd)) {
    pCol->aData = 0;
    r = caterva_bcolz_reader_items(pLib, pCol->pReader, i, want, &pCol->aData, &n);
    pCol->iFirst = i;
    pCol->iEnd = i + n;
  }
  if (r < 0) pCol->aData = 0;
  return r;
}

/* The row's items of an N-d column, copied out of the window piece by piece (a row may
** straddle blocks). A BLOB; NULL after an error with pCtx's result set. */
static int cvBzRowBlob(CvBzCursor *pCur, sqlite3_context *pCtx, int iVal, int64_t want) {
  const CvBzType *pT = &((CvVtab *)pCur->base.pVtab)->pBcolz->aType[iVal];
  CvBzCol *pCol = &pCur->aCol[iVal];
  size_t sz = (size_t)pT->item.szItem;
  int64_t i = pCur->iItem * pT->nRowItem, k = 0;
  uint8_t *a;
  int r = CATERVA_OK;
  if ((double)pT->nRowItem * (double)sz >
      (double)sqlite3_limit(sqlite3_context_db_handle(pCtx), SQLITE_LIMIT_LENGTH, -1)) {
    sqlite3_result_error_toobig(pCtx);
    return SQLITE_TOOBIG;
  }
  a = sqlite3_malloc64((sqlite3_uint64)(pT->nRowItem * (int64_t)sz));
  if (a == 0) return SQLITE_NOMEM;
  while (k < pT->nRowItem && r >= 0) {
    int64_t m;
    r = cvBzFetch(pCur, iVal, i + k, want * pT->nRowItem - k);
    if (r < 0) break;
    m = pCol->iEnd - (i + k);
    if (m > pT->nRowItem - k) m = pT->nRowItem - k;
    memcpy(a + (size_t)k * sz, pCol->aData + (size_t)(i + k - pCol->iFirst) * sz, (size_t)m * sz);
    k += m;
  }
  if (r < 0) {
    sqlite3_free(a);
    return r;
  }
  sqlite3_result_blob64(pCtx, a, (sqlite3_uint64)(pT->nRowItem * (int64_t)sz), sqlite3_free);
  return SQLITE_OK;
}

/* Value column iVal of the current row. */
static int cvBzValue(CvBzCursor *pCur, sqlite3_context *pCtx, int iVal) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  CvBcolzTab *pBc = pTab->pBcolz;
  CvBzCol *pCol = &pCur->aCol[iVal];
  caterva_ctx *pLib = pTab->pConn->pCtx;
  int64_t i = pCur->iItem;
  int r;
  if (pBc->aType[iVal].nRowItem > 1) {
    r = cvBzRowBlob(pCur, pCtx, iVal, cvBzWant(pCur, pBc));
    if (r == SQLITE_OK || r == SQLITE_TOOBIG) return r;
    if (r == SQLITE_NOMEM) return SQLITE_NOMEM;
  } else {
    r = cvBzFetch(pCur, iVal, i, cvBzWant(pCur, pBc));
  }
  if (r < 0) {
    const char *zMsg = caterva_ctx_errmsg(pLib);
    char *z = sqlite3_mprintf("caterva: %s%s%s", caterva_strerror(r), zMsg[0] ? ": " : "", zMsg);
    sqlite3_result_error(pCtx, z ? z : "caterva: error", -1);
    sqlite3_free(z);
    return SQLITE_ERROR;
  }
  cvBzResult(pCtx, &pBc->aType[iVal],
             pCol->aData + (size_t)(i - pCol->iFirst) * (size_t)pBc->aType[iVal].item.szItem);
  return SQLITE_OK;
}

int cvBzColumn(sqlite3_vtab_cursor *pCursor, sqlite3_context *pCtx, int iCol) {
  CvBzCursor *pCur = (CvBzCursor *)pCursor;
  CvBcolzTab *pBc = cvBz(pCursor->pVtab);
  if (iCol < pBc->nDim) {
    sqlite3_result_int64(pCtx, pCur->aCoord[iCol]);
    return SQLITE_OK;
  }
  return cvBzValue(pCur, pCtx, iCol - pBc->nDim);
}

int cvBzRowid(sqlite3_vtab_cursor *pCursor, sqlite3_int64 *pRowid) {
  *pRowid = ((CvBzCursor *)pCursor)->iItem;
  return SQLITE_OK;
}

int cvBzUpdate(sqlite3_vtab *pVtab, int argc, sqlite3_value **argv, sqlite3_int64 *pRowid) {
  (void)argc;
  (void)argv;
  (void)pRowid;
  cvSetError((CvVtab *)pVtab, "caterva: '%s' is a bcolz directory, which is read-only "
             "(convert it with caterva_import() to write)", ((CvVtab *)pVtab)->zPath);
  return SQLITE_READONLY;
}

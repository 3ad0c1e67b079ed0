/*
 * vtab.c -- the `caterva` virtual table: an N-d array as a table of cells.
 *
 *   CREATE VIRTUAL TABLE t USING caterva('path' [, dims='a,b,c'] [, value='name']
 *                                        [, dtype='<f4'] [, cache_mb=N]);
 *
 * opens a contiguous frame file or a sparse frame directory holding a `b2nd` or `caterva`
 * array. The table has one INTEGER column per dimension, then the value column (item.c says
 * how items become SQL values); one row per cell; the rowid is the C-order linear index.
 *
 *   path=      the file (or the first argument without a name)
 *   dims=      comma-separated dimension column names; default: the names stored in the
 *              file (`_ARRAY_DIMENSIONS`), else d0, d1, ...
 *   value=     name of the value column; default `value`
 *   dtype=     NumPy dtype string overriding the file's (caterva files carry none: without
 *              it their items are BLOBs); its item size must match the file's
 *   cache_mb=  megabytes of decompressed blocks the table may keep for repeated lookups
 *              (default 64; 0 disables the cache)
 *
 * Constraints on dimension columns become a box (or, with IN lists, a set of boxes): only
 * blocks intersecting it are visited (caterva_block_iter), and when the value column is not
 * read, none is decompressed. Three ways to scan:
 *   - one big box: straight through the block iterator, each block decompressed once;
 *   - small boxes (join lookups) and IN lists: blocks fetched on first use through the
 *     table's LRU block cache, so blocks shared by boxes or by repeated lookups are
 *     decompressed once while they stay cached (with cache_mb=0 a cursor keeps only its
 *     last block);
 *   - ORDER BY in C order that the block order does not give: cells walked in C order,
 *     blocks through the cache (chosen only when one row of blocks fits in it).
 * The table never writes: DROP TABLE leaves the file alone.
 *
 * The module is SQLITE_VTAB_DIRECTONLY: it reads any file the process can, so a schema
 * from an untrusted database must not be able to use it behind the user's back.
 */
#include "config.h"

#include "cvext.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define CV_MAX_DIM CATERVA_MAX_DIM
#define CV_DEFAULT_CACHE_MB 64

/* An inclusive range of coordinates along one dimension. */
typedef struct CvRange CvRange;
struct CvRange {
  int64_t iLo;
  int64_t iHi;
};

/* Item types that xColumn converts itself, without calling cvItemResult (full scans spend
** a good part of their time per row there). */
#define CV_FAST_NONE 0
#define CV_FAST_F8   1   /* float64 in host byte order */
#define CV_FAST_F4   2   /* float32 in host byte order */

typedef struct CvVtab CvVtab;
typedef struct CvCursor CvCursor;

/* One open caterva table. */
struct CvVtab {
  sqlite3_vtab base;                  /* Base class - must be first */
  CvConn *pConn;                      /* Connection state: the library context */
  caterva_array *pArr;                /* The array, opened read-only */
  int nDim;                           /* Dimensions; the value column is column nDim */
  int64_t aShape[CV_MAX_DIM];         /* Extent of each dimension */
  int32_t aChunk[CV_MAX_DIM];         /* Chunk shape */
  int32_t aBlock[CV_MAX_DIM];         /* Block shape */
  int64_t aBlkStride[CV_MAX_DIM];     /* Item stride of each dimension inside a block */
  int64_t aArrStride[CV_MAX_DIM];     /* Item stride in the whole array (for the rowid) */
  int64_t aChunkStride[CV_MAX_DIM];   /* Chunk number stride of each chunk grid coordinate */
  int64_t aBlockStride[CV_MAX_DIM];   /* Block number stride inside a chunk */
  int64_t nBlockItem;                 /* Items per block */
  CvItemType item;                    /* How items become SQL values */
  int eFast;                          /* CV_FAST_*: items read inline by xColumn */
  int64_t szCache;                    /* Bytes the block cache may use */
  CvCache cache;                      /* Decompressed blocks shared by the cursors */
};

/*
** A scan. Each dimension has a sorted list of disjoint ranges ("runs"): one for bounds,
** several for an IN list (consecutive values merged). The scan visits the boxes of the
** cartesian product of the runs in lexicographic order, the blocks of each box in the
** iterator's order, and the cells of each block in C order.
*/
struct CvCursor {
  sqlite3_vtab_cursor base;           /* Base class - must be first */
  int bEof;                           /* No more rows */
  int bValue;                         /* The query reads the value column */
  int bCached;                        /* Blocks come from the table's cache, on demand */
  int bOrdered;                       /* Cells in C order, without the block iterator */
  int bLastBox;                       /* The box being iterated is the last one */
  int64_t nLeft;                      /* Rows still wanted (LIMIT + OFFSET), -1: no limit */
  CvRange *aRun[CV_MAX_DIM];          /* Runs of each dimension */
  int nRun[CV_MAX_DIM];               /* Number of runs of each dimension */
  int iRun[CV_MAX_DIM];               /* Run of each dimension in the current box */
  CvRange aBound[CV_MAX_DIM];         /* Bounds of each dimension, and its run without IN */
  int64_t *aList[CV_MAX_DIM];         /* IN values of a dimension (sorted, unique), or NULL */
  int nList[CV_MAX_DIM];              /* Entries in aList[] */
  caterva_block_iter *pIter;          /* Iterator over the current box */
  const caterva_block *pBlk;          /* Current block (owned by pIter) */
  int64_t iChunk;                     /* Chunk number of the current block */
  int32_t iBlock;                     /* Block number of the current block in its chunk */
  int64_t iSegEnd;                    /* Ordered scans: last coordinate along the last
                                      ** dimension before the block or run ends */
  const uint8_t *aData;               /* Its decompressed items, or NULL if not fetched */
  CvCacheEntry *pEntry;               /* Pinned cache entry aData points into, or NULL */
  uint8_t *aPriv;                     /* Private block buffer when the cache has no room */
  int64_t iPrivChunk;                 /* Block held in aPriv (iPrivChunk < 0: none) */
  int32_t iPrivBlock;
  int64_t aCoord[CV_MAX_DIM];         /* Coordinates of the current row */
  int64_t iOff;                       /* Item offset of aCoord inside the block */
};

/* Leave a printf-style error message in the table (replacing any earlier one). */
static void cvSetError(CvVtab *pTab, const char *zFmt, ...) {
  va_list ap;
  va_start(ap, zFmt);
  sqlite3_free(pTab->base.zErrMsg);
  pTab->base.zErrMsg = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
}

/* Report a failed library call rc; returns the SQLite error code to give back. */
static int cvLibError(CvVtab *pTab, int rc) {
  const char *zMsg = caterva_ctx_errmsg(pTab->pConn->pCtx);
  if (rc == CATERVA_E_NOMEM) return SQLITE_NOMEM;
  cvSetError(pTab, "caterva: %s%s%s", caterva_strerror(rc), zMsg[0] ? ": " : "", zMsg);
  return SQLITE_ERROR;
}

/* ---- opening a table ---------------------------------------------------------------- */

/* Options of CREATE VIRTUAL TABLE, as parsed; strings are sqlite3_malloc'ed. */
typedef struct CvOptions CvOptions;
struct CvOptions {
  char *zPath;       /* path= */
  char *zDims;       /* dims= */
  char *zValue;      /* value= */
  char *zDtype;      /* dtype= */
  int64_t nCacheMb;  /* cache_mb= */
};

static void cvOptionsFree(CvOptions *p) {
  sqlite3_free(p->zPath);
  sqlite3_free(p->zDims);
  sqlite3_free(p->zValue);
  sqlite3_free(p->zDtype);
}

/* A copy of z[0..n) with surrounding blanks removed and, if quoted with ', " or `, the quotes
** removed and doubled quotes undone. */
static char *cvDequote(const char *z, int n) {
  char *zOut;
  int i, j;
  while (n > 0 && (z[0] == ' ' || z[0] == '\t' || z[0] == '\n' || z[0] == '\r')) z++, n--;
  while (n > 0 && (z[n - 1] == ' ' || z[n - 1] == '\t' || z[n - 1] == '\n' || z[n - 1] == '\r'))
    n--;
  zOut = sqlite3_malloc(n + 1);
  if (zOut == 0) return 0;
  if (n >= 2 && (z[0] == '\'' || z[0] == '"' || z[0] == '`') && z[n - 1] == z[0]) {
    char q = z[0];
    for (i = 1, j = 0; i < n - 1; i++) {
      zOut[j++] = z[i];
      if (z[i] == q && z[i + 1] == q) i++;
    }
    zOut[j] = 0;
  } else {
    memcpy(zOut, z, (size_t)n);
    zOut[n] = 0;
  }
  return zOut;
}

/* Parse a non-negative decimal integer (at most 10^12). Returns non-zero on success. */
static int cvParseCount(const char *z, int64_t *pN) {
  int64_t n = 0;
  if (*z == 0) return 0;
  for (; *z; z++) {
    if (*z < '0' || *z > '9' || n > 1000000000000LL / 10) return 0;
    n = n * 10 + (*z - '0');
  }
  *pN = n;
  return 1;
}

/* Parse one argument of CREATE VIRTUAL TABLE into p. */
static int cvParseArg(CvOptions *p, const char *zArg, char **pzErr) {
  const char *zEq = 0, *z;
  char *zKey = 0, *zVal = 0, **pzSlot = 0;
  int rc = SQLITE_OK;
  for (z = zArg; *z == ' ' || *z == '\t'; z++) {
  }
  if (*z != '\'' && *z != '"' && *z != '`') zEq = strchr(z, '=');
  if (zEq == 0) {
    zKey = sqlite3_mprintf("path");
    zVal = cvDequote(z, (int)strlen(z));
  } else {
    zKey = cvDequote(z, (int)(zEq - z));
    zVal = cvDequote(zEq + 1, (int)strlen(zEq + 1));
  }
  if (zKey == 0 || zVal == 0) {
    rc = SQLITE_NOMEM;
    goto parse_arg_out;
  }
  if (sqlite3_stricmp(zKey, "path") == 0) pzSlot = &p->zPath;
  else if (sqlite3_stricmp(zKey, "dims") == 0) pzSlot = &p->zDims;
  else if (sqlite3_stricmp(zKey, "value") == 0) pzSlot = &p->zValue;
  else if (sqlite3_stricmp(zKey, "dtype") == 0) pzSlot = &p->zDtype;
  else if (sqlite3_stricmp(zKey, "cache_mb") == 0) {
    if (!cvParseCount(zVal, &p->nCacheMb) || p->nCacheMb > 1048576) {
      *pzErr = sqlite3_mprintf("caterva: cache_mb must be an integer from 0 to 1048576, not \"%s\"",
                               zVal);
      rc = SQLITE_ERROR;
    }
    goto parse_arg_out;
  } else {
    *pzErr = sqlite3_mprintf("caterva: unknown option \"%s\" (known: path, dims, value, dtype, "
                             "cache_mb)", zKey);
    rc = SQLITE_ERROR;
    goto parse_arg_out;
  }
  if (*pzSlot) {
    *pzErr = sqlite3_mprintf("caterva: option \"%s\" given twice", zKey);
    rc = SQLITE_ERROR;
    goto parse_arg_out;
  }
  *pzSlot = zVal;
  zVal = 0;
parse_arg_out:
  sqlite3_free(zKey);
  sqlite3_free(zVal);
  return rc;
}

/* Split dims= into exactly nDim names (each sqlite3_malloc'ed into azName). */
static int cvSplitDims(const char *zDims, int nDim, char **azName, char **pzErr) {
  const char *z = zDims;
  int i = 0;
  for (;;) {
    const char *zEnd = strchr(z, ',');
    int n = zEnd ? (int)(zEnd - z) : (int)strlen(z);
    if (i < nDim) {
      azName[i] = cvDequote(z, n);
      if (azName[i] == 0) return SQLITE_NOMEM;
    }
    i++;
    if (zEnd == 0) break;
    z = zEnd + 1;
  }
  if (i != nDim || (nDim == 0 && zDims[0] != 0)) {
    *pzErr = sqlite3_mprintf("caterva: dims= gives %d names but the array has %d dimensions", i,
                             nDim);
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

/* Check that column names are non-empty and distinct (SQLite compares them without case). */
static int cvCheckNames(char **azName, int nName) {
  int i, j;
  for (i = 0; i < nName; i++) {
    if (azName[i] == 0 || azName[i][0] == 0) return 0;
    for (j = 0; j < i; j++)
      if (sqlite3_stricmp(azName[i], azName[j]) == 0) return 0;
  }
  return 1;
}

/*
** Column names: azName[0..nDim) for the dimensions, azName[nDim] for the value. From the
** options, else the file's dimension names (ignored unless usable), else d0, d1, ...
*/
static int cvColumnNames(CvVtab *pTab, const CvOptions *pOpt, char **azName, char **pzErr) {
  int nDim = pTab->nDim, i, rc = SQLITE_OK;
  azName[nDim] = sqlite3_mprintf("%s", pOpt->zValue ? pOpt->zValue : "value");
  if (azName[nDim] == 0) return SQLITE_NOMEM;
  if (pOpt->zDims) {
    rc = cvSplitDims(pOpt->zDims, nDim, azName, pzErr);
    if (rc != SQLITE_OK) return rc;
  } else {
    char **azFile = 0;
    if (caterva_array_get_dim_names(pTab->pConn->pCtx, pTab->pArr, &azFile) == CATERVA_OK) {
      for (i = 0; i < nDim; i++) azName[i] = sqlite3_mprintf("%s", azFile[i]);
      caterva_array_free_names(azFile, nDim);
      for (i = 0; i < nDim; i++)
        if (azName[i] == 0) return SQLITE_NOMEM;
    }
    if (!cvCheckNames(azName, nDim + 1)) {
      for (i = 0; i < nDim; i++) {
        sqlite3_free(azName[i]);
        azName[i] = sqlite3_mprintf("d%d", i);
        if (azName[i] == 0) return SQLITE_NOMEM;
      }
    }
  }
  if (!cvCheckNames(azName, nDim + 1)) {
    *pzErr = sqlite3_mprintf("caterva: column names must be non-empty and distinct "
                             "(see the dims= and value= options)");
    return SQLITE_ERROR;
  }
  return rc;
}

/* Declare the table's columns to SQLite. */
static int cvDeclare(sqlite3 *db, CvVtab *pTab, char **azName, char **pzErr) {
  sqlite3_str *pStr = sqlite3_str_new(db);
  char *zSql;
  int i, rc;
  sqlite3_str_appendall(pStr, "CREATE TABLE x(");
  for (i = 0; i < pTab->nDim; i++) sqlite3_str_appendf(pStr, "\"%w\" INTEGER, ", azName[i]);
  sqlite3_str_appendf(pStr, "\"%w\" %s)", azName[pTab->nDim], cvItemTypeDecl(&pTab->item));
  zSql = sqlite3_str_finish(pStr);
  if (zSql == 0) return SQLITE_NOMEM;
  rc = sqlite3_declare_vtab(db, zSql);
  if (rc != SQLITE_OK) *pzErr = sqlite3_mprintf("caterva: %s", sqlite3_errmsg(db));
  sqlite3_free(zSql);
  return rc;
}

/* Copy the geometry of the open array into the table. */
static void cvInitGeometry(CvVtab *pTab) {
  const int64_t *aShape = caterva_array_shape(pTab->pArr);
  const int32_t *aChunk = caterva_array_chunkshape(pTab->pArr);
  const int32_t *aBlock = caterva_array_blockshape(pTab->pArr);
  int64_t nBlk = 1, nArr = 1, nChunkGrid = 1, nBlockGrid = 1;
  int k;
  pTab->nDim = caterva_array_ndim(pTab->pArr);
  for (k = pTab->nDim - 1; k >= 0; k--) {
    pTab->aShape[k] = aShape[k];
    pTab->aChunk[k] = aChunk[k];
    pTab->aBlock[k] = aBlock[k];
    pTab->aBlkStride[k] = nBlk;
    pTab->aArrStride[k] = nArr;
    pTab->aChunkStride[k] = nChunkGrid;
    pTab->aBlockStride[k] = nBlockGrid;
    nBlk *= aBlock[k];
    nArr *= aShape[k];
    if (aChunk[k] > 0) nChunkGrid *= (aShape[k] + aChunk[k] - 1) / aChunk[k];
    if (aBlock[k] > 0) nBlockGrid *= (aChunk[k] + aBlock[k] - 1) / aBlock[k];
  }
  pTab->nBlockItem = nBlk;
}

static void cvVtabFree(CvVtab *pTab) {
  if (pTab == 0) return;
  cvCacheClear(&pTab->cache);
  caterva_array_free(pTab->pArr);
  cvConnUnref(pTab->pConn);
  sqlite3_free(pTab->base.zErrMsg);
  sqlite3_free(pTab);
}

/*
** xConnect and xCreate: argv[0] is the module name, argv[1] the schema, argv[2] the table
** name, argv[3..] the arguments in parentheses.
*/
static int cvConnectImpl(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                         sqlite3_vtab **ppVtab, char **pzErr) {
  CvConn *pConn = (CvConn *)pAux;
  CvOptions opt;
  CvVtab *pTab = 0;
  char *azName[CV_MAX_DIM + 1];
  const char *zDtype;
  int i, rc = SQLITE_OK, iErr;
  memset(&opt, 0, sizeof(opt));
  memset(azName, 0, sizeof(azName));
  opt.nCacheMb = CV_DEFAULT_CACHE_MB;
  *ppVtab = 0;
  for (i = 3; i < argc && rc == SQLITE_OK; i++) rc = cvParseArg(&opt, argv[i], pzErr);
  if (rc != SQLITE_OK) goto connect_out;
  if (opt.zPath == 0 || opt.zPath[0] == 0) {
    *pzErr = sqlite3_mprintf("caterva: no file given: USING caterva('path' [, option=value ...])");
    rc = SQLITE_ERROR;
    goto connect_out;
  }
  pTab = sqlite3_malloc(sizeof(*pTab));
  if (pTab == 0) {
    rc = SQLITE_NOMEM;
    goto connect_out;
  }
  memset(pTab, 0, sizeof(*pTab));
  pTab->pConn = cvConnRef(pConn);
  iErr = caterva_array_open(pConn->pCtx, opt.zPath, CATERVA_OPEN_READ, &pTab->pArr);
  if (iErr < 0) {
    const char *zMsg = caterva_ctx_errmsg(pConn->pCtx);
    *pzErr = sqlite3_mprintf("caterva: cannot open \"%s\": %s%s%s", opt.zPath,
                             caterva_strerror(iErr), zMsg[0] ? ": " : "", zMsg);
    rc = iErr == CATERVA_E_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    goto connect_out;
  }
  cvInitGeometry(pTab);
  zDtype = opt.zDtype ? opt.zDtype : caterva_array_dtype(pTab->pArr);
  if (cvItemTypeInit(&pTab->item, zDtype, caterva_array_itemsize(pTab->pArr), pzErr)) {
    char *zMsg = *pzErr;
    *pzErr = sqlite3_mprintf("caterva: %s", zMsg);
    sqlite3_free(zMsg);
    rc = SQLITE_ERROR;
    goto connect_out;
  }
  if (pTab->item.eKind == CV_ITEM_FLOAT && !pTab->item.bSwap) {
    if (pTab->item.szItem == 8) pTab->eFast = CV_FAST_F8;
    else if (pTab->item.szItem == 4) pTab->eFast = CV_FAST_F4;
  }
  pTab->szCache = opt.nCacheMb * 1024 * 1024;
  cvCacheInit(&pTab->cache, pTab->nBlockItem * pTab->item.szItem, pTab->szCache);
  rc = cvColumnNames(pTab, &opt, azName, pzErr);
  if (rc == SQLITE_OK) rc = cvDeclare(db, pTab, azName, pzErr);
  if (rc == SQLITE_OK) rc = sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
connect_out:
  for (i = 0; i <= CV_MAX_DIM; i++) sqlite3_free(azName[i]);
  cvOptionsFree(&opt);
  if (rc != SQLITE_OK) {
    if (rc == SQLITE_NOMEM && *pzErr == 0) *pzErr = sqlite3_mprintf("caterva: out of memory");
    cvVtabFree(pTab);
  } else {
    *ppVtab = &pTab->base;
  }
  return rc;
}

/* xCreate and xConnect do the same (the table has no backing store of its own), but are
** distinct functions so that the module is not eponymous: `SELECT * FROM caterva` means
** nothing. */
static int catervaCreate(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                         sqlite3_vtab **ppVtab, char **pzErr) {
  return cvConnectImpl(db, pAux, argc, argv, ppVtab, pzErr);
}

static int catervaConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                          sqlite3_vtab **ppVtab, char **pzErr) {
  return cvConnectImpl(db, pAux, argc, argv, ppVtab, pzErr);
}

static int catervaDisconnect(sqlite3_vtab *pVtab) {
  cvVtabFree((CvVtab *)pVtab);
  return SQLITE_OK;
}

/* DROP TABLE: the array file belongs to the user, not to the table; it stays. */
static int catervaDestroy(sqlite3_vtab *pVtab) {
  cvVtabFree((CvVtab *)pVtab);
  return SQLITE_OK;
}

/* ALTER TABLE RENAME: nothing is stored under the table's name. */
static int catervaRename(sqlite3_vtab *pVtab, const char *zNew) {
  (void)pVtab;
  (void)zNew;
  return SQLITE_OK;
}

/* ---- bounds --------------------------------------------------------------------------- */

/* Operators of a plan (idxStr), R*Tree style. */
#define CV_OP_EQ     'A'   /* dim = v  (also dim IS v) */
#define CV_OP_LE     'B'   /* dim <= v */
#define CV_OP_LT     'C'   /* dim < v */
#define CV_OP_GE     'D'   /* dim >= v */
#define CV_OP_GT     'E'   /* dim > v */
#define CV_OP_IN     'F'   /* dim IN (...), all values in one xFilter call */
#define CV_OP_LIMIT  'L'   /* LIMIT v */
#define CV_OP_OFFSET 'O'   /* OFFSET v */
#define CV_NO_DIM    '*'   /* the column character of LIMIT and OFFSET */

/* idxNum flags. */
#define CV_PLAN_VALUE   0x01  /* the value column is read: decompress blocks */
#define CV_PLAN_ORDERED 0x02  /* walk the cells in C order (an ORDER BY is consumed) */

/* Mark the range empty. */
static void cvRangeClear(CvRange *p) {
  p->iLo = 1;
  p->iHi = 0;
}

/*
** Narrow the range *p by "dim OP v". Integer bounds are exact; REAL bounds are rounded to
** the integers that satisfy them (dim < 2.5 is dim <= 2, dim = 2.5 matches nothing); text
** that looks like a number counts as that number, as it would against an INTEGER column.
** NULL, other text and blobs match nothing. Comparisons happen before any arithmetic, so
** bounds at the ends of the int64 range cannot overflow.
*/
static void cvRangeApply(CvRange *p, int op, sqlite3_value *pVal) {
  int eType = sqlite3_value_numeric_type(pVal);
  if (p->iLo > p->iHi) return;
  if (eType == SQLITE_INTEGER) {
    int64_t v = sqlite3_value_int64(pVal);
    switch (op) {
      case CV_OP_EQ:
        if (v < p->iLo || v > p->iHi) cvRangeClear(p);
        else p->iLo = p->iHi = v;
        break;
      case CV_OP_GE:
        if (v > p->iLo) p->iLo = v;
        break;
      case CV_OP_GT:
        if (v >= p->iHi) cvRangeClear(p);
        else if (v >= p->iLo) p->iLo = v + 1;
        break;
      case CV_OP_LE:
        if (v < p->iHi) p->iHi = v;
        break;
      case CV_OP_LT:
        if (v <= p->iLo) cvRangeClear(p);
        else if (v <= p->iHi) p->iHi = v - 1;
        break;
    }
  } else if (eType == SQLITE_FLOAT) {
    double r = sqlite3_value_double(pVal), lo = (double)p->iLo, hi = (double)p->iHi;
    switch (op) {
      case CV_OP_EQ:
        if (r < lo || r > hi || r != floor(r)) cvRangeClear(p);
        else p->iLo = p->iHi = (int64_t)r;
        break;
      case CV_OP_GE:
        if (r > hi) cvRangeClear(p);
        else if (r > lo) p->iLo = (int64_t)ceil(r);
        break;
      case CV_OP_GT:
        if (r >= hi) cvRangeClear(p);
        else if (r >= lo) p->iLo = (int64_t)floor(r) + 1;
        break;
      case CV_OP_LE:
        if (r < lo) cvRangeClear(p);
        else if (r < hi) p->iHi = (int64_t)floor(r);
        break;
      case CV_OP_LT:
        if (r <= lo) cvRangeClear(p);
        else if (r <= hi) p->iHi = (int64_t)ceil(r) - 1;
        break;
    }
  } else {
    cvRangeClear(p);
  }
}

/* Number of blocks a range [iLo, iHi] of one dimension touches (chunks of nC items cut
** into blocks of nB; the last block of a chunk may overhang it). */
static int64_t cvBlocksAlong(int64_t iLo, int64_t iHi, int64_t nC, int64_t nB) {
  int64_t c0, c1, nPerChunk;
  if (iLo > iHi || nC <= 0 || nB <= 0) return 0;
  c0 = iLo / nC;
  c1 = iHi / nC;
  if (c0 == c1) return (iHi % nC) / nB - (iLo % nC) / nB + 1;
  nPerChunk = (nC - 1) / nB + 1;
  return (nPerChunk - (iLo % nC) / nB) + (c1 - c0 - 1) * nPerChunk + (iHi % nC) / nB + 1;
}

/* ---- planning ------------------------------------------------------------------------- */

/* What xBestIndex learned about one dimension. */
typedef struct CvDimPlan CvDimPlan;
struct CvDimPlan {
  CvRange lit;      /* Bounds from literal values (exact) */
  int bEq;          /* Bound by = or IS (one value, perhaps unknown until xFilter) */
  int bIn;          /* Bound by an IN list */
  int nOpenRange;   /* Range bounds whose value is unknown until xFilter */
};

/* Costs, in arbitrary units: a row costs 1. */
#define CV_COST_BLOCK_VISIT  4.0     /* visiting a block without its data */
#define CV_COST_ITEM_DECODE  0.05    /* decompressing one item of a block */
#define CV_IN_GUESS          4.0     /* values guessed in an IN list */
#define CV_RANGE_GUESS       0.25    /* fraction kept by one unknown range bound */

/*
** Estimated rows and blocks along dimension k. Every constraint only lowers both, so using
** more constraints never raises the estimate.
*/
static void cvDimEstimate(const CvVtab *pTab, int k, const CvDimPlan *pD, double *pnRow,
                          double *pnBlk) {
  double n = pD->lit.iLo > pD->lit.iHi ? 0.0 : (double)(pD->lit.iHi - pD->lit.iLo) + 1.0;
  double nBlk;
  int i;
  for (i = 0; i < pD->nOpenRange; i++) n *= CV_RANGE_GUESS;
  if (pD->bIn && n > CV_IN_GUESS) n = CV_IN_GUESS;
  if (pD->bEq && n > 1.0) n = 1.0;
  if (n > 0.0 && n < 1.0) n = 1.0;
  nBlk = (double)cvBlocksAlong(0, pTab->aShape[k] - 1, pTab->aChunk[k], pTab->aBlock[k]);
  /* A run of n cells touches at most ceil(n / block) + 1 blocks, at most them all. */
  if (n <= 1.0) {
    if (nBlk > n) nBlk = n;
  } else if (ceil(n / pTab->aBlock[k]) + 1.0 < nBlk) {
    nBlk = ceil(n / pTab->aBlock[k]) + 1.0;
  }
  *pnRow = n;
  *pnBlk = nBlk;
}

/*
** Do the rows of a plan come out in C order (lexicographic on d0, d1, ...)? The cursor visits
** boxes, then blocks in chunk and block C order, then cells in C order. That is C order when
** only one dimension j spans more than one value per box and every later dimension stays
** inside one block; for IN lists, only if the IN is on the first dimension (boxes then
** follow d0). Decided without the values that come at run time:
**   - a 1-d array, whatever the constraints;
**   - every dimension after the first bound by = or IS;
**   - no IN list, every bound a literal, and the literal box has the shape above.
*/
static int cvPlanIsOrdered(const CvVtab *pTab, const CvDimPlan *aD, int bAllLiteral) {
  int k, j;
  if (pTab->nDim <= 1) return 1;
  for (k = 1; k < pTab->nDim && aD[k].bEq && !aD[k].bIn; k++) {
  }
  if (k == pTab->nDim) return 1;
  if (!bAllLiteral) return 0;
  for (k = 0; k < pTab->nDim; k++)
    if (aD[k].bIn) return 0;
  for (j = 0; j < pTab->nDim && aD[j].lit.iLo == aD[j].lit.iHi; j++) {
  }
  for (k = j + 1; k < pTab->nDim; k++) {
    if (cvBlocksAlong(aD[k].lit.iLo, aD[k].lit.iHi, pTab->aChunk[k], pTab->aBlock[k]) > 1)
      return 0;
  }
  return 1;
}

/* Is dimension k held to one value by the plan? */
static int cvDimIsConstant(const CvDimPlan *pD) {
  return (pD->bEq && !pD->bIn) || pD->lit.iLo == pD->lit.iHi;
}

/*
** Can an ordered scan serve the plan? It walks the cells in C order and fetches their
** blocks through the table's cache, so the blocks of one "block row" must stay cached at
** once: all the blocks along the dimensions after the first one that spans several values.
** Each block is then decompressed once. Without the value column no block is needed.
*/
static int cvOrderedScanFits(const CvVtab *pTab, const CvDimPlan *aD, int bValue) {
  double nLive = 1.0;
  int j, k;
  if (!bValue) return 1;
  if (pTab->cache.nMax == 0) return 0;
  for (j = 0; j < pTab->nDim && cvDimIsConstant(&aD[j]); j++) {
  }
  for (k = j + 1; k < pTab->nDim; k++) {
    if (cvDimIsConstant(&aD[k])) continue;
    nLive *= (double)cvBlocksAlong(aD[k].lit.iLo, aD[k].lit.iHi, pTab->aChunk[k], pTab->aBlock[k]);
  }
  return nLive * (double)pTab->cache.szBlock <= (double)pTab->szCache / 2;
}

/*
** Can the ORDER BY be left to the cursor? Only ascending dimension columns qualify. Columns
** of dimensions held to one value (by = or by literal bounds) are ignored on both sides;
** what remains must be a prefix of the remaining dimensions in order.
*/
static int cvOrderByMatches(const CvVtab *pTab, const sqlite3_index_info *pInfo,
                            const CvDimPlan *aD) {
  int i, k = 0;
  for (i = 0; i < pInfo->nOrderBy; i++) {
    int iCol = pInfo->aOrderBy[i].iColumn;
    if (pInfo->aOrderBy[i].desc || iCol < 0 || iCol >= pTab->nDim) return 0;
    if (cvDimIsConstant(&aD[iCol])) continue;
    while (k < pTab->nDim && cvDimIsConstant(&aD[k])) k++;
    if (k != iCol) return 0;
    k++;
  }
  return 1;
}

/*
** xBestIndex.
**
** A plan is a string (idxStr) of two characters per constraint passed to xFilter, in argv
** order: an operator (CV_OP_*: 'A' =, 'B' <=, 'C' <, 'D' >=, 'E' >, 'F' IN list, 'L' LIMIT,
** 'O' OFFSET) and the dimension it applies to ('a' + dimension; '*' for LIMIT and OFFSET).
** E.g. "DaBaAc" is d0 >= ?1 AND d0 <= ?2 AND d2 = ?3. idxNum holds CV_PLAN_* flags.
**
** Every usable =, IS, <, <=, >, >= and IN on a dimension column is used, with omit set: the
** box xFilter builds matches them exactly (see cvRangeApply). IN lists are taken whole
** (sqlite3_vtab_in), so xFilter runs once per scan, not once per value. LIMIT (plus OFFSET)
** is used only when nothing else is left for SQLite to check and no sort follows.
**
** Estimates: rows are the product over dimensions of the values each dimension can take
** (exact for literal bounds read with sqlite3_vtab_rhs_value; one for = on a value known
** later; a guess for unknown ranges and IN lists); cost is rows plus the blocks touched
** times the cost of visiting (and, when the value column is read, decompressing) a block.
*/
static int catervaBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  CvVtab *pTab = (CvVtab *)pVtab;
  CvDimPlan aD[CV_MAX_DIM];
  char *zPlan;
  int nArg = 0, nPlan = 0, i, k;
  int iLimit = -1, iOffset = -1, bAllUsed = 1, bAllLiteral = 1, bAllEq, bOrdered;
  int bOrderedScan = 0;
  int bValue = (pInfo->colUsed >> (pTab->nDim < 63 ? pTab->nDim : 63)) & 1;
  double nRow = 1.0, nBlk = 1.0, costBlock;
  sqlite3_int64 nLimitLit = -1;

  zPlan = sqlite3_malloc64((sqlite3_uint64)pInfo->nConstraint * 2 + 1);
  if (zPlan == 0) return SQLITE_NOMEM;
  for (k = 0; k < pTab->nDim; k++) {
    memset(&aD[k], 0, sizeof(aD[k]));
    aD[k].lit.iLo = 0;
    aD[k].lit.iHi = pTab->aShape[k] - 1;
  }
  for (i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *pCons = &pInfo->aConstraint[i];
    sqlite3_value *pVal = 0;
    int op;
    if (pCons->op == SQLITE_INDEX_CONSTRAINT_LIMIT || pCons->op == SQLITE_INDEX_CONSTRAINT_OFFSET) {
      if (pCons->usable && pCons->op == SQLITE_INDEX_CONSTRAINT_LIMIT) iLimit = i;
      if (pCons->usable && pCons->op == SQLITE_INDEX_CONSTRAINT_OFFSET) iOffset = i;
      continue;
    }
    switch (pCons->op) {
      case SQLITE_INDEX_CONSTRAINT_EQ:
      case SQLITE_INDEX_CONSTRAINT_IS: op = CV_OP_EQ; break;
      case SQLITE_INDEX_CONSTRAINT_LE: op = CV_OP_LE; break;
      case SQLITE_INDEX_CONSTRAINT_LT: op = CV_OP_LT; break;
      case SQLITE_INDEX_CONSTRAINT_GE: op = CV_OP_GE; break;
      case SQLITE_INDEX_CONSTRAINT_GT: op = CV_OP_GT; break;
      default: op = 0; break;
    }
    if (!pCons->usable || op == 0 || pCons->iColumn < 0 || pCons->iColumn >= pTab->nDim) {
      bAllUsed = 0;
      continue;
    }
    k = pCons->iColumn;
    if (pCons->op == SQLITE_INDEX_CONSTRAINT_EQ && sqlite3_vtab_in(pInfo, i, -1)) {
      sqlite3_vtab_in(pInfo, i, 1);
      op = CV_OP_IN;
      aD[k].bIn = 1;
      bAllLiteral = 0;
    } else if (sqlite3_vtab_rhs_value(pInfo, i, &pVal) == SQLITE_OK && pVal) {
      cvRangeApply(&aD[k].lit, op, pVal);
      if (op == CV_OP_EQ) aD[k].bEq = 1;
    } else {
      bAllLiteral = 0;
      if (op == CV_OP_EQ) aD[k].bEq = 1;
      else aD[k].nOpenRange++;
    }
    zPlan[nPlan++] = (char)op;
    zPlan[nPlan++] = (char)('a' + k);
    pInfo->aConstraintUsage[i].argvIndex = ++nArg;
    pInfo->aConstraintUsage[i].omit = 1;
  }

  bAllEq = 1;
  for (k = 0; k < pTab->nDim; k++) {
    double n, b;
    cvDimEstimate(pTab, k, &aD[k], &n, &b);
    nRow *= n;
    nBlk *= b;
    if (!aD[k].bEq || aD[k].bIn) bAllEq = 0;
  }
  bOrdered = pInfo->nOrderBy > 0 && cvOrderByMatches(pTab, pInfo, aD);
  if (bOrdered && !cvPlanIsOrdered(pTab, aD, bAllLiteral)) {
    /* The block order is not C order: walk the cells in C order instead, if the blocks
    ** that walk revisits fit in the cache. */
    bOrderedScan = cvOrderedScanFits(pTab, aD, bValue);
    bOrdered = bOrderedScan;
  }
  if (bOrdered) pInfo->orderByConsumed = 1;

  /* LIMIT: the cursor may stop early only if every row it yields is a row of the result. */
  if (iLimit >= 0 && bAllUsed && (pInfo->nOrderBy == 0 || bOrdered) &&
      (pInfo->nOrderBy == 0 || sqlite3_vtab_distinct(pInfo) == 0)) {
    sqlite3_value *pVal = 0;
    zPlan[nPlan++] = CV_OP_LIMIT;
    zPlan[nPlan++] = CV_NO_DIM;
    pInfo->aConstraintUsage[iLimit].argvIndex = ++nArg;
    if (sqlite3_vtab_rhs_value(pInfo, iLimit, &pVal) == SQLITE_OK && pVal &&
        sqlite3_value_type(pVal) == SQLITE_INTEGER && sqlite3_value_int64(pVal) >= 0)
      nLimitLit = sqlite3_value_int64(pVal);
    if (iOffset >= 0) {
      zPlan[nPlan++] = CV_OP_OFFSET;
      zPlan[nPlan++] = CV_NO_DIM;
      pInfo->aConstraintUsage[iOffset].argvIndex = ++nArg;
      nLimitLit = -1;  /* the rows skipped count too; keep the estimate simple */
    }
  }
  zPlan[nPlan] = 0;

  if (bAllEq) {
    nRow = 1.0;
    nBlk = 1.0;
    pInfo->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
  }
  if (nLimitLit >= 0 && (double)nLimitLit < nRow) {
    /* Stopping early also skips blocks: scale them down with the rows. */
    if (nRow > 0) nBlk = ceil(nBlk * ((double)nLimitLit / nRow));
    nRow = (double)nLimitLit;
  }
  costBlock = CV_COST_BLOCK_VISIT;
  if (bValue) costBlock += CV_COST_ITEM_DECODE * (double)pTab->nBlockItem;
  /* Among plans that touch the same cells, prefer the one that uses more constraints: it
  ** leaves SQLite less to check. */
  pInfo->estimatedCost = (nRow + nBlk * costBlock + 1.0) * pow(0.9, nArg);
  if (bOrderedScan && pTab->aBlock[pTab->nDim - 1] > 0) {
    /* a cache lookup per run of cells inside one block along the last dimension */
    pInfo->estimatedCost += nRow / pTab->aBlock[pTab->nDim - 1] * CV_COST_BLOCK_VISIT;
  }
  pInfo->estimatedRows = nRow < 1.0 ? 1 : (nRow > 9e18 ? (sqlite3_int64)9e18 : (sqlite3_int64)nRow);
  pInfo->idxNum = (bValue ? CV_PLAN_VALUE : 0) | (bOrderedScan ? CV_PLAN_ORDERED : 0);
  pInfo->idxStr = zPlan;
  pInfo->needToFreeIdxStr = 1;
  return SQLITE_OK;
}

/* ---- cursors -------------------------------------------------------------------------- */

static int catervaOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  CvCursor *pCur = sqlite3_malloc(sizeof(*pCur));
  (void)pVtab;
  if (pCur == 0) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof(*pCur));
  pCur->bEof = 1;
  pCur->iPrivChunk = -1;
  *ppCursor = &pCur->base;
  return SQLITE_OK;
}

/* Let go of the current block's data (a cache pin). */
static void cvReleaseBlock(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  if (pCur->pEntry) cvCacheUnpin(&pTab->cache, pCur->pEntry);
  pCur->pEntry = 0;
  pCur->aData = 0;
}

/* End the current scan: the cursor keeps its buffers for the next xFilter. */
static void cvResetScan(CvCursor *pCur) {
  int k;
  cvReleaseBlock(pCur);
  caterva_block_iter_free(pCur->pIter);
  pCur->pIter = 0;
  pCur->pBlk = 0;
  for (k = 0; k < CV_MAX_DIM; k++) {
    sqlite3_free(pCur->aList[k]);
    pCur->aList[k] = 0;
    pCur->nList[k] = 0;
    if (pCur->aRun[k] != &pCur->aBound[k]) sqlite3_free(pCur->aRun[k]);
    pCur->aRun[k] = 0;
    pCur->nRun[k] = 0;
  }
  pCur->bEof = 1;
}

static int catervaClose(sqlite3_vtab_cursor *pCursor) {
  CvCursor *pCur = (CvCursor *)pCursor;
  cvResetScan(pCur);
  sqlite3_free(pCur->aPriv);
  sqlite3_free(pCur);
  return SQLITE_OK;
}

/* qsort comparison of int64 values. */
static int cvCmpInt64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/*
** Collect the values of an IN list on dimension k: those that are integers (or integral
** REALs, or text that reads as one) inside the dimension's extent, sorted and unique. A
** second IN list on the same dimension intersects with the first.
*/
static int cvCollectIn(CvCursor *pCur, int k, sqlite3_value *pList) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  int64_t *a = 0, *aOld = pCur->aList[k];
  int n = 0, nAlloc = 0, rc, i, j, nOld = pCur->nList[k];
  sqlite3_value *pVal = 0;
  rc = sqlite3_vtab_in_first(pList, &pVal);
  if (rc == SQLITE_ERROR) {
    /* Not a list after all (SQLite declined all-at-once IN): a single value, which
    ** narrows the bounds; cvBuildRuns intersects the bounds with the lists. */
    cvRangeApply(&pCur->aBound[k], CV_OP_EQ, pList);
    return SQLITE_OK;
  }
  for (; rc == SQLITE_OK && pVal;
       rc = sqlite3_vtab_in_next(pList, &pVal)) {
    CvRange r;
    r.iLo = 0;
    r.iHi = pTab->aShape[k] - 1;
    cvRangeApply(&r, CV_OP_EQ, pVal);
    if (r.iLo > r.iHi) continue;
    if (n == nAlloc) {
      int64_t *aNew;
      nAlloc = nAlloc ? 2 * nAlloc : 16;
      aNew = sqlite3_realloc64(a, sizeof(int64_t) * (sqlite3_uint64)nAlloc);
      if (aNew == 0) {
        sqlite3_free(a);
        return SQLITE_NOMEM;
      }
      a = aNew;
    }
    a[n++] = r.iLo;
  }
  if (rc != SQLITE_OK && rc != SQLITE_DONE) {
    sqlite3_free(a);
    return rc;
  }
  if (n > 1) qsort(a, (size_t)n, sizeof(int64_t), cvCmpInt64);
  for (i = j = 0; i < n; i++)
    if (j == 0 || a[i] != a[j - 1]) a[j++] = a[i];
  n = j;
  if (aOld) {
    /* Intersect two sorted lists in place in a. */
    int iOld = 0;
    for (i = j = 0; i < n; i++) {
      while (iOld < nOld && aOld[iOld] < a[i]) iOld++;
      if (iOld < nOld && aOld[iOld] == a[i]) a[j++] = a[i];
    }
    n = j;
    sqlite3_free(aOld);
  }
  pCur->aList[k] = a;
  pCur->nList[k] = n;
  if (a == 0) {
    /* An empty list: keep a marker so that the dimension selects nothing. */
    pCur->aList[k] = sqlite3_malloc(sizeof(int64_t));
    if (pCur->aList[k] == 0) return SQLITE_NOMEM;
  }
  return SQLITE_OK;
}

/* Turn the bounds and IN lists into runs. Returns 0 if some dimension selects nothing. */
static int cvBuildRuns(CvCursor *pCur, int *pbEmpty) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  int k, i;
  *pbEmpty = 0;
  for (k = 0; k < pTab->nDim; k++) {
    CvRange *pB = &pCur->aBound[k];
    if (pCur->aList[k] == 0) {
      pCur->aRun[k] = pB;
      pCur->nRun[k] = pB->iLo <= pB->iHi;
    } else {
      int64_t *a = pCur->aList[k];
      CvRange *aRun = sqlite3_malloc64(sizeof(CvRange) * (sqlite3_uint64)(pCur->nList[k] + 1));
      int n = 0;
      if (aRun == 0) return SQLITE_NOMEM;
      for (i = 0; i < pCur->nList[k]; i++) {
        if (a[i] < pB->iLo || a[i] > pB->iHi) continue;
        if (n > 0 && aRun[n - 1].iHi + 1 == a[i]) {
          aRun[n - 1].iHi = a[i];
        } else {
          aRun[n].iLo = aRun[n].iHi = a[i];
          n++;
        }
      }
      pCur->aRun[k] = aRun;
      pCur->nRun[k] = n;
    }
    if (pCur->nRun[k] == 0) *pbEmpty = 1;
  }
  return SQLITE_OK;
}

/*
** Should blocks come through the table's cache? Yes when the value column is read and
** either there are several boxes (they may share blocks: with the cache disabled, the
** private buffer still keeps the last block) or the blocks of the box fit in half the
** cache (a repeated lookup, as the inner side of a join does, then finds them). A big scan
** goes straight through the iterator, which decompresses each block once.
*/
static int cvUseCache(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  double nBlk = 1.0;
  int k, i, nBox = 1;
  if (!pCur->bValue) return 0;
  for (k = 0; k < pTab->nDim; k++) {
    double n = 0.0;
    for (i = 0; i < pCur->nRun[k]; i++)
      n += (double)cvBlocksAlong(pCur->aRun[k][i].iLo, pCur->aRun[k][i].iHi, pTab->aChunk[k],
                                 pTab->aBlock[k]);
    nBlk *= n;
    if (pCur->nRun[k] > 1) nBox = 2;
  }
  if (nBox > 1) return 1;
  return pTab->cache.nMax > 0 && nBlk * (double)pTab->cache.szBlock <= (double)pTab->szCache / 2;
}

/* Start the block iterator on the box selected by iRun[]. */
static int cvOpenBox(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  int64_t aStart[CV_MAX_DIM], aStop[CV_MAX_DIM];
  int k, rc, bLast = 1;
  for (k = 0; k < pTab->nDim; k++) {
    const CvRange *pR = &pCur->aRun[k][pCur->iRun[k]];
    aStart[k] = pR->iLo;
    aStop[k] = pR->iHi + 1;
    if (pCur->iRun[k] + 1 < pCur->nRun[k]) bLast = 0;
  }
  pCur->bLastBox = bLast;
  rc = caterva_block_iter_new(pTab->pConn->pCtx, pTab->pArr, aStart, aStop,
                              pCur->bValue && !pCur->bCached ? 0 : CATERVA_ITER_NODATA,
                              &pCur->pIter);
  return rc < 0 ? cvLibError(pTab, rc) : SQLITE_OK;
}

/* Step the box odometer (last dimension fastest). */
static void cvNextBox(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  int k;
  for (k = pTab->nDim - 1; k >= 0; k--) {
    if (++pCur->iRun[k] < pCur->nRun[k]) return;
    pCur->iRun[k] = 0;
  }
}

/* Move to the next block with cells in the boxes, or to EOF. */
static int cvNextBlock(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  int k, rc;
  cvReleaseBlock(pCur);
  for (;;) {
    const caterva_block *pBlk = 0;
    if (pCur->pIter == 0) {
      rc = cvOpenBox(pCur);
      if (rc != SQLITE_OK) return rc;
    }
    rc = caterva_block_iter_next(pCur->pIter, &pBlk);
    if (rc < 0) return cvLibError(pTab, rc);
    if (rc == 0) {
      caterva_block_iter_free(pCur->pIter);
      pCur->pIter = 0;
      pCur->pBlk = 0;
      if (pCur->bLastBox) {
        pCur->bEof = 1;
        return SQLITE_OK;
      }
      cvNextBox(pCur);
      continue;
    }
    for (k = 0; k < pTab->nDim && pBlk->start[k] < pBlk->stop[k]; k++) {
    }
    if (k < pTab->nDim) continue;  /* nothing of the box in this block */
    pCur->pBlk = pBlk;
    pCur->iChunk = pBlk->nchunk;
    pCur->iBlock = pBlk->nblock;
    pCur->iOff = 0;
    for (k = 0; k < pTab->nDim; k++) {
      pCur->aCoord[k] = pBlk->start[k];
      pCur->iOff += (pBlk->start[k] - pBlk->origin[k]) * pTab->aBlkStride[k];
    }
    if (pCur->bValue && !pCur->bCached) pCur->aData = pBlk->data;
    return SQLITE_OK;
  }
}

/* Decompress the current block into aDst: iterate over the box of the current cell alone,
** which lies in that block and no other. */
static int cvDecompressBlock(CvCursor *pCur, uint8_t *aDst) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  caterva_block_iter *pIter = 0;
  const caterva_block *pBlk = 0;
  int64_t aStop[CV_MAX_DIM];
  int k, rc;
  for (k = 0; k < pTab->nDim; k++) aStop[k] = pCur->aCoord[k] + 1;
  rc = caterva_block_iter_new(pTab->pConn->pCtx, pTab->pArr, pCur->aCoord, aStop, 0, &pIter);
  if (rc >= 0) rc = caterva_block_iter_next(pIter, &pBlk);
  if (rc == 1) {
    if (pBlk->nchunk != pCur->iChunk || pBlk->nblock != pCur->iBlock || pBlk->data == 0) {
      caterva_block_iter_free(pIter);
      cvSetError(pTab, "caterva: the block iterator returned another block than asked for");
      return SQLITE_INTERNAL;
    }
    memcpy(aDst, pBlk->data, (size_t)pTab->cache.szBlock);
  }
  caterva_block_iter_free(pIter);
  if (rc < 0) return cvLibError(pTab, rc);
  if (rc == 0) {
    cvSetError(pTab, "caterva: a block of the box is missing");
    return SQLITE_INTERNAL;
  }
  return SQLITE_OK;
}

/* Make aData point at the current block's items: from the cache, or decompressed into a
** cache entry (or the private buffer when the cache cannot take it). */
static int cvFetchBlock(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  CvCacheEntry *pE;
  uint8_t *aDst;
  int rc;
  if (pCur->aData || pCur->bEof) return SQLITE_OK;
  pE = cvCacheLookup(&pTab->cache, pCur->iChunk, pCur->iBlock);
  if (pE) {
    pCur->pEntry = pE;
    pCur->aData = pE->aData;
    return SQLITE_OK;
  }
  if (pCur->iPrivChunk == pCur->iChunk && pCur->iPrivBlock == pCur->iBlock) {
    pCur->aData = pCur->aPriv;
    return SQLITE_OK;
  }
  pE = cvCacheClaim(&pTab->cache, pCur->iChunk, pCur->iBlock);
  if (pE) {
    aDst = pE->aData;
  } else {
    if (pCur->aPriv == 0) {
      pCur->aPriv = sqlite3_malloc64((sqlite3_uint64)pTab->nBlockItem * pTab->item.szItem);
      if (pCur->aPriv == 0) return SQLITE_NOMEM;
    }
    aDst = pCur->aPriv;
    pCur->iPrivChunk = -1;
  }
  rc = cvDecompressBlock(pCur, aDst);
  if (rc != SQLITE_OK) {
    cvCacheUnpin(&pTab->cache, pE);
    return rc;
  }
  if (pE) {
    cvCacheCommit(&pTab->cache, pE);
  } else {
    pCur->iPrivChunk = pCur->iChunk;
    pCur->iPrivBlock = pCur->iBlock;
  }
  pCur->pEntry = pE;
  pCur->aData = aDst;
  return SQLITE_OK;
}

/*
** Ordered scans: locate the block of the current cell from the layout caterva_array.h
** describes (chunks in C order over the chunk grid, blocks in C order over each chunk's
** block grid, items in C order inside a block), and how far the run of cells along the last
** dimension stays in it. Its data is fetched when the value is first read; a wrong block
** number is caught there (cvDecompressBlock compares with the iterator's).
*/
static void cvOrderedSeek(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  int64_t iChunk = 0, iBlock = 0, iOff = 0, x = 0, nC = 1, nB = 1;
  int k, kLast = pTab->nDim - 1;
  cvReleaseBlock(pCur);
  for (k = 0; k < pTab->nDim; k++) {
    int64_t inChunk;
    x = pCur->aCoord[k];
    nC = pTab->aChunk[k];
    nB = pTab->aBlock[k];
    inChunk = x % nC;
    iChunk += (x / nC) * pTab->aChunkStride[k];
    iBlock += (inChunk / nB) * pTab->aBlockStride[k];
    iOff += (inChunk % nB) * pTab->aBlkStride[k];
  }
  pCur->iChunk = iChunk;
  pCur->iBlock = (int32_t)iBlock;
  pCur->iOff = iOff;
  /* x, nC, nB are those of the last dimension: the run ends with the block, the chunk or
  ** the run of coordinates, whichever comes first. */
  pCur->iSegEnd = x - (x % nC) % nB + nB - 1;
  if (pCur->iSegEnd > x - x % nC + nC - 1) pCur->iSegEnd = x - x % nC + nC - 1;
  if (pCur->iSegEnd > pCur->aRun[kLast][pCur->iRun[kLast]].iHi)
    pCur->iSegEnd = pCur->aRun[kLast][pCur->iRun[kLast]].iHi;
}

/* Ordered scans: step to the next cell in C order; 0 after the last. */
static int cvOrderedStep(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  int k;
  for (k = pTab->nDim - 1; k >= 0; k--) {
    const CvRange *pR = &pCur->aRun[k][pCur->iRun[k]];
    if (pCur->aCoord[k] < pR->iHi) {
      pCur->aCoord[k]++;
      return 1;
    }
    if (pCur->iRun[k] + 1 < pCur->nRun[k]) {
      pCur->aCoord[k] = pCur->aRun[k][++pCur->iRun[k]].iLo;
      return 1;
    }
    pCur->iRun[k] = 0;
    pCur->aCoord[k] = pCur->aRun[k][0].iLo;
  }
  return 0;
}

static int cvOrderedNextRow(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  int kLast = pTab->nDim - 1;
  if (pCur->aCoord[kLast] < pCur->iSegEnd) {
    pCur->aCoord[kLast]++;
    pCur->iOff += pTab->aBlkStride[kLast];
  } else if (cvOrderedStep(pCur)) {
    cvOrderedSeek(pCur);
  } else {
    cvReleaseBlock(pCur);
    pCur->bEof = 1;
  }
  return SQLITE_OK;
}

/* Advance to the next cell: the next one of the block in C order, else the next block. */
static int cvNextRow(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  const caterva_block *pBlk = pCur->pBlk;
  int k;
  if (pCur->bOrdered) return cvOrderedNextRow(pCur);
  for (k = pTab->nDim - 1; k >= 0; k--) {
    if (++pCur->aCoord[k] < pBlk->stop[k]) {
      pCur->iOff += pTab->aBlkStride[k];
      return SQLITE_OK;
    }
    pCur->iOff -= (pBlk->stop[k] - 1 - pBlk->start[k]) * pTab->aBlkStride[k];
    pCur->aCoord[k] = pBlk->start[k];
  }
  return cvNextBlock(pCur);
}

static int catervaNext(sqlite3_vtab_cursor *pCursor) {
  CvCursor *pCur = (CvCursor *)pCursor;
  if (pCur->bEof) return SQLITE_OK;
  if (pCur->nLeft > 0 && --pCur->nLeft == 0) {
    pCur->bEof = 1;
    return SQLITE_OK;
  }
  return cvNextRow(pCur);
}

/* The LIMIT and OFFSET arguments as a row budget: -1 for none. */
static int64_t cvRowBudget(sqlite3_value *pLimit, sqlite3_value *pOffset) {
  int64_t nLimit = sqlite3_value_int64(pLimit), nOffset = 0;
  if (nLimit < 0) return -1;
  if (pOffset) nOffset = sqlite3_value_int64(pOffset);
  if (nOffset < 0) nOffset = 0;
  if (nLimit > INT64_MAX - nOffset) return -1;
  return nLimit + nOffset;
}

/*
** xFilter. idxStr is the plan of catervaBestIndex: two characters per argument, an operator
** and a dimension ('a' + k) or '*'; see there. Bounds narrow each dimension's range
** [0, extent - 1] (cvRangeApply), IN lists become sorted runs, and the scan starts at the
** first cell of the first block.
*/
static int catervaFilter(sqlite3_vtab_cursor *pCursor, int idxNum, const char *idxStr, int argc,
                         sqlite3_value **argv) {
  CvCursor *pCur = (CvCursor *)pCursor;
  CvVtab *pTab = (CvVtab *)pCursor->pVtab;
  sqlite3_value *pLimit = 0, *pOffset = 0;
  int i, k, rc = SQLITE_OK, bEmpty = 0;
  size_t nPlan = idxStr ? strlen(idxStr) : 0;

  cvResetScan(pCur);
  pCur->bValue = (idxNum & CV_PLAN_VALUE) != 0;
  pCur->bOrdered = 0;
  pCur->bCached = 0;
  pCur->nLeft = -1;
  if (nPlan != 2 * (size_t)argc) {
    cvSetError(pTab, "caterva: malformed plan \"%s\"", idxStr ? idxStr : "");
    return SQLITE_INTERNAL;
  }
  for (k = 0; k < pTab->nDim; k++) {
    pCur->aBound[k].iLo = 0;
    pCur->aBound[k].iHi = pTab->aShape[k] - 1;
    pCur->iRun[k] = 0;
  }
  for (i = 0; i < argc && rc == SQLITE_OK; i++) {
    int op = idxStr[2 * i];
    k = idxStr[2 * i + 1] - 'a';
    if (op == CV_OP_LIMIT) {
      pLimit = argv[i];
      continue;
    }
    if (op == CV_OP_OFFSET) {
      pOffset = argv[i];
      continue;
    }
    if (k < 0 || k >= pTab->nDim || op < CV_OP_EQ || op > CV_OP_IN) {
      cvSetError(pTab, "caterva: malformed plan \"%s\"", idxStr);
      return SQLITE_INTERNAL;
    }
    if (op == CV_OP_IN) rc = cvCollectIn(pCur, k, argv[i]);
    else cvRangeApply(&pCur->aBound[k], op, argv[i]);
  }
  if (rc == SQLITE_OK) rc = cvBuildRuns(pCur, &bEmpty);
  if (rc != SQLITE_OK) {
    cvResetScan(pCur);
    return rc;
  }
  if (pLimit) pCur->nLeft = cvRowBudget(pLimit, pOffset);
  if (bEmpty || pCur->nLeft == 0) return SQLITE_OK;  /* bEof is set */
  pCur->bEof = 0;
  pCur->bOrdered = (idxNum & CV_PLAN_ORDERED) != 0 && pTab->nDim > 0;
  if (pCur->bOrdered) {
    for (k = 0; k < pTab->nDim; k++) pCur->aCoord[k] = pCur->aRun[k][0].iLo;
    cvOrderedSeek(pCur);
    return SQLITE_OK;
  }
  pCur->bCached = cvUseCache(pCur);
  rc = cvNextBlock(pCur);
  if (rc != SQLITE_OK) pCur->bEof = 1;
  return rc;
}

static int catervaEof(sqlite3_vtab_cursor *pCursor) {
  return ((CvCursor *)pCursor)->bEof;
}

static int catervaColumn(sqlite3_vtab_cursor *pCursor, sqlite3_context *pCtx, int iCol) {
  CvCursor *pCur = (CvCursor *)pCursor;
  CvVtab *pTab = (CvVtab *)pCursor->pVtab;
  if (iCol >= 0 && iCol < pTab->nDim) {
    sqlite3_result_int64(pCtx, pCur->aCoord[iCol]);
  } else if (iCol == pTab->nDim) {
    if (pCur->aData == 0) {
      /* Cached scans fetch blocks when the value is first asked for. */
      int rc = cvFetchBlock(pCur);
      if (rc != SQLITE_OK) {
        if (rc == SQLITE_NOMEM) sqlite3_result_error_nomem(pCtx);
        else sqlite3_result_error(pCtx, pTab->base.zErrMsg ? pTab->base.zErrMsg : "caterva", -1);
        return rc;
      }
    }
    if (pTab->eFast == CV_FAST_F8) {
      double r;
      memcpy(&r, pCur->aData + pCur->iOff * 8, 8);
      if (r != r) sqlite3_result_null(pCtx);  /* NaN is NULL, as in cvItemResult */
      else sqlite3_result_double(pCtx, r);
    } else if (pTab->eFast == CV_FAST_F4) {
      float f;
      memcpy(&f, pCur->aData + pCur->iOff * 4, 4);
      if (f != f) sqlite3_result_null(pCtx);
      else sqlite3_result_double(pCtx, (double)f);
    } else {
      cvItemResult(pCtx, &pTab->item, pCur->aData + pCur->iOff * pTab->item.szItem);
    }
  }
  return SQLITE_OK;
}

/* The rowid is the cell's C-order index in the whole array. */
static int catervaRowid(sqlite3_vtab_cursor *pCursor, sqlite3_int64 *pRowid) {
  CvCursor *pCur = (CvCursor *)pCursor;
  CvVtab *pTab = (CvVtab *)pCursor->pVtab;
  sqlite3_int64 iRowid = 0;
  int k;
  for (k = 0; k < pTab->nDim; k++) iRowid += pCur->aCoord[k] * pTab->aArrStride[k];
  *pRowid = iRowid;
  return SQLITE_OK;
}

static sqlite3_module catervaModule = {
  /* iVersion    */ 2,
  /* xCreate     */ catervaCreate,
  /* xConnect    */ catervaConnect,
  /* xBestIndex  */ catervaBestIndex,
  /* xDisconnect */ catervaDisconnect,
  /* xDestroy    */ catervaDestroy,
  /* xOpen       */ catervaOpen,
  /* xClose      */ catervaClose,
  /* xFilter     */ catervaFilter,
  /* xNext       */ catervaNext,
  /* xEof        */ catervaEof,
  /* xColumn     */ catervaColumn,
  /* xRowid      */ catervaRowid,
  /* xUpdate     */ 0,  /* read-only */
  /* xBegin      */ 0,
  /* xSync       */ 0,
  /* xCommit     */ 0,
  /* xRollback   */ 0,
  /* xFindFunction */ 0,
  /* xRename     */ catervaRename,
  /* xSavepoint  */ 0,
  /* xRelease    */ 0,
  /* xRollbackTo */ 0,
  /* xShadowName */ 0,
};

int cvRegisterVtab(sqlite3 *db, CvConn *pConn) {
  return sqlite3_create_module_v2(db, "caterva", &catervaModule, cvConnRef(pConn), cvConnUnref);
}

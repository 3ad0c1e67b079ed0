/*
 * fn_reduce.c -- caterva_reduce('<table or path>', op, axes): count, sum, mean, min, max and
 * standard deviation of an array over some of its dimensions, or grouped by calendar fields
 * of a time dimension, as a table-valued function over the engine of core/reduce.c -- and,
 * with CREATE VIRTUAL TABLE clim USING caterva_reduce('temp', 'mean', 'time'), as a named
 * table whose columns carry the dimensions' and statistics' names (fn_reduce_named.c maps
 * them onto the function's columns below; everything else is shared).
 *
 *   SELECT d1 AS lat, value FROM caterva_reduce('temp', 'mean', 'time,lon');
 *   SELECT value FROM caterva_reduce('temp', 'max', '');               -- the whole array
 *   SELECT d1 AS lat, d2 AS lon, value, n FROM caterva_reduce('temp', 'sum', 'time')
 *    WHERE d0 BETWEEN '2023-01-01' AND '2023-01-30' AND d1 > 60;       -- a box, in labels
 *   SELECT min, mean, max FROM caterva_reduce('temp', 'mean,min,max', 'lat,lon')
 *    WHERE d0 = '2023-06-01';                                          -- several statistics
 *   SELECT d0 AS month, d1, d2, value FROM caterva_reduce('temp', 'mean', 'time:month');
 *
 * Columns: d0 ... d15 stand for the array's dimensions in array order. A kept dimension
 * gives each row's coordinate there: its label when the array has a coordinate for it
 * (REAL, or ISO 8601 TEXT for instants, as the caterva table's columns), else its index; a
 * grouped one gives the group's key (fn_reduce_group.c); reduced dimensions (and those past
 * ndim) are NULL. The hidden columns d0_index ... d15_index give the same coordinates as
 * indices (a group: its first index in the box). `value` is the statistic op names (NULL
 * when op lists several, or is stats), `n` the number of present (non-NaN) cells that went
 * into it; the hidden columns count, sum, mean, min, max and std give every statistic of the
 * row, computed in the same pass (std, the population standard deviation, only when op
 * lists it or the column is read: it needs every block decompressed). Hidden columns: arr
 * (the table or path), op (count, sum, mean/avg, min, max, std, a comma list of them, or
 * stats: fn_reduce_args.c) and axes (a comma list of dimension names -- the table's column
 * names or the file's `_ARRAY_DIMENSIONS`, else d0, d1, ... -- or numbers, each optionally
 * followed by ":group", e.g. "time:month"; empty or NULL: every dimension reduced).
 * Constraints (=, <, <=, >, >=, BETWEEN, IN) on dk compare labels exactly as the caterva
 * table's dimension columns do (vtab_coord.c), those on dk_index indices; both restrict the
 * box, for reduced, grouped and kept dimensions alike, and are exact (omit is set). An IN
 * list restricts its dimension to the indices it names: a reduced dimension is reduced over
 * all of them together (SQLite would otherwise call xFilter once per value, giving one row
 * per value), a grouped one forms groups of them, a kept one gives a row for each.
 *
 * The function's columns cannot carry the dimensions' names: an eponymous virtual table
 * declares its columns once per connection in xConnect, before any argument is seen, and the
 * arguments of one statement may name arrays with different dimensions. A named table knows
 * its arguments when it is made, and so names its columns.
 *
 * Semantics follow SQL's aggregates over the same cells: NaN cells are NULL and left out;
 * count counts the present cells; sum, min, max, mean and std of no present cell are NULL;
 * mean is sum / count as REAL. Integer dtypes give INTEGER sum, min and max (a sum that
 * overflows int64 is given as REAL, where SQLite's sum() would fail). How sums are added,
 * their error bound, and why the results do not depend on the number of threads: see
 * core/reduce.c. Both forms are read-only (xUpdate fails).
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "fn_reduce_internal.h"
#include "vtab_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* idxNum bits */
#define CV_RED_PLAN     1  /* arr and op are given */
#define CV_RED_WANT_STD 2  /* the std column is read */
#define CV_RED_WANT_MINMAX 4 /* the min or max column is read */

typedef struct CvRedVtab CvRedVtab;
struct CvRedVtab {
  sqlite3_vtab base;         /* Base class - must be first */
  CvConn *pConn;             /* Connection state: library context, table registry */
  sqlite3 *db;
  CvRedNamed *pNamed;        /* a named table (fn_reduce_named.c); NULL: the function */
  char *zName;               /* the named table's name, for messages */
};

typedef struct CvRedCursor CvRedCursor;
struct CvRedCursor {
  sqlite3_vtab_cursor base;  /* Base class - must be first */
  CvRedOps ops;              /* the statistics op lists */
  int eType;                 /* CATERVA_STATS_* of the array */
  int nDim;
  int eMode[CV_RED_NDIM];    /* CATERVA_RED_*: what becomes of dimension k */
  CvRedGroup aGroup[CV_RED_NDIM]; /* the groups of a grouped dimension */
  int64_t aLo[CV_RED_NDIM];  /* the box, inclusive (an IN list's first and last index) */
  int64_t aHi[CV_RED_NDIM];
  int64_t *aList[CV_RED_NDIM]; /* IN: the sorted, distinct indices of dimension k, or NULL */
  int nList[CV_RED_NDIM];
  int64_t aSubLo[CV_RED_NDIM]; /* the sub-box being walked (one run of each IN list) */
  int64_t aSubHi[CV_RED_NDIM];
  caterva_reduce *pRed;      /* the reduction and its rows */
  int64_t nOut;              /* output rows */
  caterva_reduce_row row;    /* the current row's results */
  int64_t iRowGot;           /* the row in `row`, or -1 */
  int64_t iRow;              /* current row */
  int bEmpty;                /* the box is empty: no rows */
  caterva_array *pArr;       /* the array being reduced */
  caterva_array *pOwned;     /* ... when this cursor opened it */
  caterva_ctx *pCtx;
  int bLab[CV_RED_NDIM];     /* dimension k has a coordinate: its d column gives labels */
  caterva_labels aLab[CV_RED_NDIM]; /* ... prepared; c.values points into aLabVal[k] */
  double *aLabVal[CV_RED_NDIM]; /* an explicit coordinate's labels, copied (the cursor
                             ** outlives the borrowed array's attribute cache) */
};

/* ---- the module ---------------------------------------------------------------------- */

/* The function's columns: d0 ... d15, value, n, then the hidden ones. */
static char *cvRedFunctionSchema(sqlite3 *db) {
  sqlite3_str *pStr = sqlite3_str_new(db);
  int k;
  sqlite3_str_appendall(pStr, "CREATE TABLE x(");
  for (k = 0; k < CV_RED_NDIM; k++) sqlite3_str_appendf(pStr, "d%d, ", k);
  sqlite3_str_appendall(pStr, "value, n INTEGER, arr HIDDEN, op HIDDEN, axes HIDDEN");
  for (k = 0; k < CV_RED_NDIM; k++) sqlite3_str_appendf(pStr, ", d%d_index INTEGER HIDDEN", k);
  sqlite3_str_appendall(pStr, ", count INTEGER HIDDEN, sum HIDDEN, mean REAL HIDDEN, min HIDDEN, "
                              "max HIDDEN, std REAL HIDDEN)");
  return sqlite3_str_finish(pStr);
}

/*
** xConnect and xCreate. The module is eponymous (xCreate is xConnect): without arguments
** beyond the module's own name it is the table-valued function, whose columns cannot carry
** the dimensions' names (declared once per connection, before any argument is seen); with
** arguments, CREATE VIRTUAL TABLE clim USING caterva_reduce('temps', 'mean', 'time') makes
** a named table (fn_reduce_named.c), its columns named from the array's dimensions then.
*/
static int cvRedConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                        sqlite3_vtab **ppVtab, char **pzErr) {
  CvRedVtab *pTab = 0;
  CvRedNamed *pNamed = 0;
  char *zSql = 0;
  int rc;
  *ppVtab = 0;
  if (argc > 3 || (argc == 3 && sqlite3_stricmp(argv[2], "caterva_reduce") != 0))
    rc = cvRedNamedNew(db, (CvConn *)pAux, argc, argv, &pNamed, &zSql, pzErr);
  else
    rc = (zSql = cvRedFunctionSchema(db)) != 0 ? SQLITE_OK : SQLITE_NOMEM;
  if (rc == SQLITE_OK) rc = sqlite3_declare_vtab(db, zSql);
  sqlite3_free(zSql);
  if (rc == SQLITE_OK) pTab = sqlite3_malloc(sizeof(*pTab));
  if (rc == SQLITE_OK && pTab == 0) rc = SQLITE_NOMEM;
  if (rc == SQLITE_OK) {
    memset(pTab, 0, sizeof(*pTab));
    pTab->zName = sqlite3_mprintf("%s", argc > 2 ? argv[2] : "caterva_reduce");
    if (pTab->zName == 0) rc = SQLITE_NOMEM;
  }
  if (rc != SQLITE_OK) {
    if (pTab) sqlite3_free(pTab->zName);
    sqlite3_free(pTab);
    cvRedNamedFree(pNamed);
    return rc;
  }
  pTab->pConn = cvConnRef((CvConn *)pAux);
  pTab->db = db;
  pTab->pNamed = pNamed;
  /* it reads files named by its argument: not from triggers or views */
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  *ppVtab = &pTab->base;
  return SQLITE_OK;
}

static int cvRedDisconnect(sqlite3_vtab *pVtab) {
  CvRedVtab *pTab = (CvRedVtab *)pVtab;
  cvConnUnref(pTab->pConn);
  cvRedNamedFree(pTab->pNamed);
  sqlite3_free(pTab->zName);
  sqlite3_free(pTab);
  return SQLITE_OK;
}

/* The function's column that column iCol of the table is (a named table maps its own). */
static int cvRedFnCol(const CvRedVtab *pTab, int iCol) {
  if (pTab->pNamed == 0) return iCol;
  return iCol >= 0 && iCol < pTab->pNamed->nCol ? pTab->pNamed->aMap[iCol] : -1;
}

/* colUsed in the function's columns. */
static sqlite3_uint64 cvRedFnUsed(const CvRedVtab *pTab, sqlite3_uint64 colUsed) {
  sqlite3_uint64 used = 0;
  int i;
  if (pTab->pNamed == 0) return colUsed;
  for (i = 0; i < pTab->pNamed->nCol; i++) {
    int iFn = pTab->pNamed->aMap[i];
    if (colUsed & ((sqlite3_uint64)1 << (i < 63 ? i : 63)))
      used |= (sqlite3_uint64)1 << (iFn < 63 ? iFn : 63);
  }
  return used;
}

/* The plan's operator for constraint i, or 0 when it has none. */
static char cvRedPlanOp(sqlite3_index_info *pInfo, int i, int iCol) {
  const struct sqlite3_index_constraint *p = &pInfo->aConstraint[i];
  switch (p->op) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
      /* IN: all its values in one xFilter call, since a reduced dimension must be
      ** reduced over all of them together, not once per value */
      if (iCol < CV_RED_ARR || iCol >= CV_RED_INDEX)
        return p->usable && sqlite3_vtab_in(pInfo, i, -1) ? CV_OP_IN : CV_OP_EQ;
      return CV_OP_EQ;
    case SQLITE_INDEX_CONSTRAINT_LT: return CV_OP_LT;
    case SQLITE_INDEX_CONSTRAINT_LE: return CV_OP_LE;
    case SQLITE_INDEX_CONSTRAINT_GT: return CV_OP_GT;
    case SQLITE_INDEX_CONSTRAINT_GE: return CV_OP_GE;
    default: return 0;
  }
}

/*
** xBestIndex. idxStr holds two characters per xFilter argument: an operator (CV_OP_EQ ...
** CV_OP_GT, as in vtab_plan.c) and a column, as in vtab_plan.c: CV_LABEL_DIM + k for dk
** (labels when the dimension has a coordinate), CV_INDEX_DIM + k for dk_index (indices);
** 'R' arr, 'P' op, 'X' axes. arr and op must be given (=); every usable bound on a
** dimension is taken and omitted (label ranges are exact, as the caterva table's are). An IN
** list on a dimension (CV_OP_IN) comes whole to one xFilter call (sqlite3_vtab_in) and
** restricts the dimension to its indices: a reduced dimension is reduced over all of them,
** a kept one gives a row for each. idxNum: CV_RED_PLAN, and CV_RED_WANT_STD when colUsed
** says the std column is read (so that std is computed only when asked for), and
** CV_RED_WANT_MINMAX when the min or max column is (else a count, sum or mean leaves them
** out: faster on floats).
**
** A named table's columns are mapped onto the function's (cvRedFnCol); its arguments are its
** own, so every plan has them. The column of a grouped dimension holds group keys (a month,
** a season), not the labels the function reads its bounds as: =, <, <=, > and >= on INTEGER
** keys (year, month, dayofyear) are taken as CV_RED_KEY_DIM + k, which keeps the cells of the
** groups whose key satisfies them (cvRedKeyBounds), and not omitted: SQLite checks each row
** as well (a bound of another type narrows nothing, and an IN list comes as one = per value).
*/
static int cvRedBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  CvRedVtab *pTab = (CvRedVtab *)pVtab;
  char *zPlan = sqlite3_malloc64((sqlite3_uint64)pInfo->nConstraint * 2 + 1);
  int i, nArg = 0, bArr = pTab->pNamed != 0, bOp = pTab->pNamed != 0, nBound = 0;
  sqlite3_uint64 used = cvRedFnUsed(pTab, pInfo->colUsed);
  if (zPlan == 0) return SQLITE_NOMEM;
  for (i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *p = &pInfo->aConstraint[i];
    int iCol = cvRedFnCol(pTab, p->iColumn);
    char cOp = iCol >= 0 ? cvRedPlanOp(pInfo, i, iCol) : 0, cCol = 0;
    if (iCol >= CV_RED_ARR && iCol < CV_RED_INDEX) {
      if (!p->usable || cOp != CV_OP_EQ) {
        if (!p->usable) continue;
        sqlite3_free(zPlan);
        pVtab->zErrMsg = sqlite3_mprintf("caterva_reduce: arr, op and axes take =");
        return SQLITE_ERROR;
      }
      cCol = iCol == CV_RED_ARR ? 'R' : iCol == CV_RED_OP ? 'P' : 'X';
      bArr |= cCol == 'R';
      bOp |= cCol == 'P';
    } else if (iCol >= 0 && iCol < CV_RED_NDIM && pTab->pNamed &&
               pTab->pNamed->aMode[iCol] == CATERVA_RED_GROUP) {
      if (!p->usable || !cOp || !pTab->pNamed->aKeyInt[iCol]) continue;
      zPlan[2 * nArg] = cOp == CV_OP_IN ? CV_OP_EQ : cOp;
      zPlan[2 * nArg + 1] = (char)(CV_RED_KEY_DIM + iCol);
      pInfo->aConstraintUsage[i].argvIndex = ++nArg;
      nBound++;
      continue;
    } else if (iCol >= 0 && iCol < CV_RED_NDIM && p->usable && cOp) {
      cCol = (char)(CV_LABEL_DIM + iCol);
      nBound++;
    } else if (iCol >= CV_RED_INDEX && iCol < CV_RED_STAT && p->usable && cOp) {
      cCol = (char)(CV_INDEX_DIM + iCol - CV_RED_INDEX);
      nBound++;
    } else {
      continue;
    }
    if (cOp == CV_OP_IN) sqlite3_vtab_in(pInfo, i, 1);
    zPlan[2 * nArg] = cOp;
    zPlan[2 * nArg + 1] = cCol;
    pInfo->aConstraintUsage[i].argvIndex = ++nArg;
    pInfo->aConstraintUsage[i].omit = 1;
  }
  zPlan[2 * nArg] = 0;
  if (!bArr || !bOp) {
    /* a plan without its arguments: possible, but never to be chosen */
    sqlite3_free(zPlan);
    pInfo->estimatedCost = 1e300;
    pInfo->idxStr = 0;
    pInfo->idxNum = 0;
    return bArr || bOp ? SQLITE_CONSTRAINT : SQLITE_OK;
  }
  pInfo->idxNum = CV_RED_PLAN;
  if (used & ((sqlite3_uint64)1 << (CV_RED_NCOL - 1))) pInfo->idxNum |= CV_RED_WANT_STD;
  if (used & ((sqlite3_uint64)3 << (CV_RED_STAT + 3))) pInfo->idxNum |= CV_RED_WANT_MINMAX;
  pInfo->idxStr = zPlan;
  pInfo->needToFreeIdxStr = 1;
  pInfo->estimatedCost = 1000.0 / (1.0 + nBound);
  pInfo->estimatedRows = 1000;
  return SQLITE_OK;
}

static int cvRedOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  CvRedCursor *pCur = sqlite3_malloc(sizeof(*pCur));
  (void)pVtab;
  if (pCur == 0) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof(*pCur));
  pCur->bEmpty = 1;
  *ppCursor = &pCur->base;
  return SQLITE_OK;
}

static void cvRedReset(CvRedCursor *pCur) {
  int k;
  for (k = 0; k < CV_RED_NDIM; k++) {
    sqlite3_free(pCur->aLabVal[k]);
    pCur->aLabVal[k] = 0;
    pCur->bLab[k] = 0;
    sqlite3_free(pCur->aList[k]);
    pCur->aList[k] = 0;
    pCur->nList[k] = 0;
    cvRedGroupFree(&pCur->aGroup[k]);
    pCur->eMode[k] = CATERVA_RED_KEEP;
  }
  caterva_reduce_free(pCur->pRed);
  pCur->pRed = 0;
  caterva_array_free(pCur->pOwned);
  pCur->pOwned = 0;
  pCur->pArr = 0;
  pCur->bEmpty = 1;
  pCur->iRowGot = -1;
}

static int cvRedClose(sqlite3_vtab_cursor *pCursor) {
  cvRedReset((CvRedCursor *)pCursor);
  sqlite3_free(pCursor);
  return SQLITE_OK;
}

/* ---- arguments ----------------------------------------------------------------------- */

/* Dimension names: the table's columns, else the file's, else d0, d1, ...; NULL when out
** of memory. Free with cvRedFreeNames. */
static char **cvRedDimNames(CvRedCursor *pCur, CvVtab *pFound) {
  int k, n = pCur->nDim, bOom = 0;
  char **az = 0, **azFile = 0;
  if (pFound == 0) (void)caterva_array_get_dim_names(pCur->pCtx, pCur->pArr, &azFile);
  az = sqlite3_malloc64(sizeof(char *) * (sqlite3_uint64)(n + 1));
  if (az == 0) {
    caterva_array_free_names(azFile, n);
    return 0;
  }
  for (k = 0; k < n; k++) {
    if (pFound) az[k] = sqlite3_mprintf("%s", pFound->azCol[k]);
    else if (azFile) az[k] = sqlite3_mprintf("%s", azFile[k]);
    else az[k] = sqlite3_mprintf("d%d", k);
    if (az[k] == 0) bOom = 1;
  }
  caterva_array_free_names(azFile, n);
  if (bOom) {
    cvRedFreeNames(az, n);
    return 0;
  }
  return az;
}

/* A named table reads the array its schema was made from: the same dimensions. */
static int cvRedSameDims(const CvRedNamed *pNamed, int nDim, char **azName, char **pzErr) {
  int k, bSame = pNamed->nDim == nDim;
  for (k = 0; bSame && k < nDim; k++) bSame = sqlite3_stricmp(pNamed->azDim[k], azName[k]) == 0;
  if (bSame) return SQLITE_OK;
  *pzErr = sqlite3_mprintf("caterva_reduce: the dimensions of '%s' are no longer those the "
                           "table was made with (%d then, %d now); make the table again",
                           pNamed->zArr, pNamed->nDim, nDim);
  return SQLITE_ERROR;
}

/* ---- computing ------------------------------------------------------------------------ */

/* Walk the box: for dimensions k and up, every run of consecutive indices of an IN list
** (the whole range without one) in turn, each sub-box folded in by the core. */
static int cvRedCompute(CvRedCursor *pCur, int k) {
  const int64_t *a = pCur->aList[k < CV_RED_NDIM ? k : 0];
  int i = 0, j, rc = 0;
  if (k == pCur->nDim) return caterva_reduce_add(pCur->pCtx, pCur->pRed, pCur->aSubLo,
                                                 pCur->aSubHi);
  if (a == 0) {
    pCur->aSubLo[k] = pCur->aLo[k];
    pCur->aSubHi[k] = pCur->aHi[k];
    return cvRedCompute(pCur, k + 1);
  }
  while (i < pCur->nList[k] && rc >= 0) {
    for (j = i; j + 1 < pCur->nList[k] && a[j + 1] == a[j] + 1; j++) {
    }
    pCur->aSubLo[k] = a[i];
    pCur->aSubHi[k] = a[j];
    rc = cvRedCompute(pCur, k + 1);
    i = j + 1;
  }
  return rc;
}

/* Does output row iRow stand for indices of the IN lists of the kept dimensions? */
static int cvRedRowWanted(const CvRedCursor *pCur, int64_t iRow) {
  int k;
  for (k = 0; k < pCur->nDim; k++) {
    if (pCur->aList[k] && pCur->eMode[k] == CATERVA_RED_KEEP) {
      int64_t x = caterva_reduce_coord(pCur->pRed, iRow, k);
      if (!cvInSorted(pCur->aList[k], pCur->nList[k], x)) return 0;
    }
  }
  return 1;
}

/* Move iRow to the first wanted row at or after it. */
static void cvRedSkip(CvRedCursor *pCur) {
  while (pCur->iRow < pCur->nOut && !cvRedRowWanted(pCur, pCur->iRow)) pCur->iRow++;
}

/* ---- xFilter and the rows ------------------------------------------------------------- */

static int cvRedError(CvRedCursor *pCur, char *zMsg) {
  sqlite3_vtab *pVtab = pCur->base.pVtab;
  sqlite3_free(pVtab->zErrMsg);
  pVtab->zErrMsg = zMsg;
  return zMsg ? SQLITE_ERROR : SQLITE_NOMEM;
}

/* Open (or borrow) the array named by arr. */
static int cvRedOpenArray(CvRedCursor *pCur, const char *zArg, CvVtab **ppFound) {
  CvRedVtab *pTab = (CvRedVtab *)pCur->base.pVtab;
  void *pFound = 0;
  const char *zPath = cvConnResolve(pTab->pConn, pTab->db, zArg, &pFound);
  int rc;
  *ppFound = (CvVtab *)pFound;
  pCur->pCtx = pTab->pConn->pCtx;
  if (pFound && ((CvVtab *)pFound)->bInTxn) {
    /* the table's own transaction: reduce what it holds now, its writes included */
    pCur->pArr = ((CvVtab *)pFound)->pArr;
    rc = caterva_array_flush(pCur->pCtx, pCur->pArr);
  } else if (pFound && !((CvVtab *)pFound)->bLockReads) {
    /* the table's array, brought up to date as a statement of the table would (its
    ** statistics' fingerprints are then checked once per table, not once per call); a
    ** remote one's version check now (one HEAD when pending): a reduction's reads do not
    ** open the array again when they find a change, a scan's first read does */
    CvVtab *pF = (CvVtab *)pFound;
    rc = cvStatementStart(pF) == SQLITE_OK && (!pF->bRemote || cvRemoteVerify(pF) == SQLITE_OK)
             ? CATERVA_OK : CATERVA_E_IO;
    if (rc < 0)
      return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: %s",
                                              ((CvVtab *)pFound)->base.zErrMsg
                                                  ? ((CvVtab *)pFound)->base.zErrMsg : zArg));
    pCur->pArr = ((CvVtab *)pFound)->pArr;
  } else {
    rc = caterva_array_open(pCur->pCtx, zPath, CATERVA_OPEN_READ, &pCur->pOwned);
    pCur->pArr = pCur->pOwned;
  }
  if (rc < 0)
    return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: cannot open '%s': %s", zArg,
                                            caterva_ctx_errmsg(pCur->pCtx)));
  return SQLITE_OK;
}

/*
** The coordinates of the dimensions into aLab[] (bLab[k] set for those that have one), with
** an explicit coordinate's labels copied: rows are given after xFilter, when a borrowed
** table's array may have been read again.
*/
static int cvRedLabels(CvRedCursor *pCur, char **azName) {
  const int64_t *aShape = caterva_array_shape(pCur->pArr);
  int k;
  for (k = 0; k < pCur->nDim; k++) {
    caterva_coord c;
    int r = caterva_array_get_coord(pCur->pCtx, pCur->pArr, k, &c);
    if (r == CATERVA_OK && c.kind == CATERVA_COORD_NONE) continue;
    if (r == CATERVA_OK) r = caterva_labels_init(pCur->pCtx, &pCur->aLab[k], &c, aShape[k]);
    if (r < 0)
      return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: the coordinate of dimension "
                                              "%s cannot be used: %s", azName[k],
                                              caterva_ctx_errmsg(pCur->pCtx)));
    if (c.kind == CATERVA_COORD_EXPLICIT) {
      size_t nByte = sizeof(double) * (size_t)c.nvalues;
      pCur->aLabVal[k] = sqlite3_malloc64(nByte ? nByte : 1);
      if (pCur->aLabVal[k] == 0) return SQLITE_NOMEM;
      memcpy(pCur->aLabVal[k], c.values, nByte);
      pCur->aLab[k].c.values = pCur->aLabVal[k];
    }
    /* only the messages of xFilter read these, while the array is still held */
    pCur->aLab[k].c.units = 0;
    pCur->aLab[k].c.calendar = 0;
    pCur->bLab[k] = 1;
  }
  return SQLITE_OK;
}

/* Narrow *p by "dk OP pVal" (labels when bLabel and the dimension has them, else indices). */
static int cvRedBound1(CvRedCursor *pCur, char **azName, int k, int bLabel, int op,
                       sqlite3_value *pVal, CvRange *p) {
  char *zErr = 0, *zName, *zMsg;
  const char *z;
  int rc;
  if (!bLabel || !pCur->bLab[k]) {
    cvRangeApply(p, op, pVal);
    return SQLITE_OK;
  }
  zName = sqlite3_mprintf("d%d (%s)", k, azName[k]);
  rc = zName ? cvLabelRange(pCur->pCtx, &pCur->aLab[k], zName, p, op, pVal, &zErr)
             : SQLITE_NOMEM;
  sqlite3_free(zName);
  if (rc == SQLITE_OK) return rc;
  z = zErr && strncmp(zErr, "caterva: ", 9) == 0 ? zErr + 9 : zErr;
  zMsg = z ? sqlite3_mprintf("caterva_reduce: %s", z) : 0;
  sqlite3_free(zErr);
  return zMsg ? cvRedError(pCur, zMsg) : SQLITE_NOMEM;
}

static int cvCmpI64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* "dk IN (...)": the indices its values select (each one or none), sorted and distinct,
** intersected with an earlier IN list on the same dimension. */
static int cvRedInApply(CvRedCursor *pCur, char **azName, int k, int bLabel,
                        sqlite3_value *pList, int64_t nExtent) {
  sqlite3_value *pVal = 0;
  int64_t *a = 0;
  int n = 0, nAlloc = 0, i, j, rc;
  for (rc = sqlite3_vtab_in_first(pList, &pVal); rc == SQLITE_OK && pVal;
       rc = sqlite3_vtab_in_next(pList, &pVal)) {
    CvRange r;
    r.iLo = 0;
    r.iHi = nExtent - 1;
    rc = cvRedBound1(pCur, azName, k, bLabel, CV_OP_EQ, pVal, &r);
    if (rc != SQLITE_OK) break;
    if (r.iLo > r.iHi) continue;  /* an equality selects one index at most */
    if (n == nAlloc) {
      int64_t *aNew = sqlite3_realloc64(a, sizeof(int64_t) * (sqlite3_uint64)(2 * nAlloc + 8));
      if (aNew == 0) {
        rc = SQLITE_NOMEM;
        break;
      }
      a = aNew;
      nAlloc = 2 * nAlloc + 8;
    }
    a[n++] = r.iLo;
  }
  if (rc != SQLITE_DONE && rc != SQLITE_OK) {
    sqlite3_free(a);
    return rc;
  }
  if (n > 0) qsort(a, (size_t)n, sizeof(int64_t), cvCmpI64);
  for (i = 0, j = 0; i < n; i++) {
    int bOld = cvInSorted(pCur->aList[k], pCur->nList[k], a[i]);
    if ((j == 0 || a[i] != a[j - 1]) && bOld) a[j++] = a[i];
  }
  sqlite3_free(pCur->aList[k]);
  pCur->aList[k] = a;
  pCur->nList[k] = j;
  if (j == 0) pCur->bEmpty = 1;  /* (a NULL list would mean "no list") */
  return SQLITE_OK;
}

/* Keep the IN list of dimension k inside [iLo, iHi], which becomes its first and last
** index; empty: no rows. */
static void cvRedClipList(CvRedCursor *pCur, int k, CvRange *p) {
  int64_t *a = pCur->aList[k];
  int i, j = 0;
  for (i = 0; i < pCur->nList[k]; i++)
    if (a[i] >= p->iLo && a[i] <= p->iHi) a[j++] = a[i];
  pCur->nList[k] = j;
  if (j == 0) {
    p->iLo = 1;
    p->iHi = 0;
  } else {
    p->iLo = a[0];
    p->iHi = a[j - 1];
  }
}

/* Apply the box bounds of the plan (labels on dk, indices on dk_index; IN lists); sets
** bEmpty when a dimension selects nothing. */
static int cvRedBounds(CvRedCursor *pCur, char **azName, const char *idxStr, int argc,
                       sqlite3_value **argv) {
  const int64_t *aShape = caterva_array_shape(pCur->pArr);
  int i, k, rc = SQLITE_OK;
  CvRange r[CV_RED_NDIM];
  for (k = 0; k < pCur->nDim; k++) {
    r[k].iLo = 0;
    r[k].iHi = aShape[k] - 1;
  }
  for (i = 0; i < argc && rc == SQLITE_OK; i++) {
    char cCol = idxStr[2 * i + 1], cOp = idxStr[2 * i];
    int bLabel = cCol >= CV_LABEL_DIM && cCol < CV_LABEL_DIM + CV_RED_NDIM;
    k = bLabel ? cCol - CV_LABEL_DIM : cCol - CV_INDEX_DIM;
    if (k < 0 || k >= CV_RED_NDIM) continue;
    if (k >= pCur->nDim) {
      /* a dimension the array does not have is NULL: no bound holds */
      pCur->bEmpty = 1;
      continue;
    }
    if (cOp == CV_OP_IN) rc = cvRedInApply(pCur, azName, k, bLabel, argv[i], aShape[k]);
    else rc = cvRedBound1(pCur, azName, k, bLabel, cOp, argv[i], &r[k]);
  }
  for (k = 0; k < pCur->nDim; k++) {
    if (pCur->aList[k]) cvRedClipList(pCur, k, &r[k]);
    pCur->aLo[k] = r[k].iLo;
    pCur->aHi[k] = r[k].iHi;
    if (r[k].iLo > r[k].iHi) pCur->bEmpty = 1;
  }
  return rc;
}

/* Does group key x satisfy "key OP pVal"? A value that is not a number narrows nothing (1):
** SQLite compares it with each row's key. */
static int cvRedKeyOk(int64_t x, int op, sqlite3_value *pVal) {
  int t = sqlite3_value_type(pVal), c;  /* no conversion: 7 < '2' in SQL (INTEGER < TEXT) */
  if (t == SQLITE_INTEGER) {
    int64_t v = sqlite3_value_int64(pVal);
    c = x < v ? -1 : x > v;
  } else if (t == SQLITE_FLOAT) {
    double v = sqlite3_value_double(pVal), d = (double)x;
    if (v != v) return 1;
    c = d < v ? -1 : d > v;
  } else {
    return 1;
  }
  switch (op) {
    case CV_OP_EQ: return c == 0;
    case CV_OP_LT: return c < 0;
    case CV_OP_LE: return c <= 0;
    case CV_OP_GT: return c > 0;
    case CV_OP_GE: return c >= 0;
    default: return 1;
  }
}

/* Does index j of grouped dimension k fall in a group whose key satisfies the plan's key
** bounds on k? (An index outside the calendar: kept, for cvRedGroupBuild's error.) */
static int cvRedKeyWanted(const CvRedCursor *pCur, int k, int64_t j, const char *idxStr,
                          int argc, sqlite3_value **argv) {
  int64_t key = 0;
  int i;
  if (caterva_labels_field(&pCur->aLab[k], pCur->aGroup[k].eField, pCur->aGroup[k].nEvery, j,
                           &key) != CATERVA_OK)
    return 1;
  for (i = 0; i < argc; i++)
    if (idxStr[2 * i + 1] == CV_RED_KEY_DIM + k && !cvRedKeyOk(key, idxStr[2 * i], argv[i]))
      return 0;
  return 1;
}

/* A named table's bounds on the keys of grouped dimension k (CV_RED_KEY_DIM + k): its indices
** become the list of those in the box whose group satisfies them. */
static int cvRedKeyBounds1(CvRedCursor *pCur, int k, const char *idxStr, int argc,
                           sqlite3_value **argv) {
  int64_t j, n = pCur->aHi[k] - pCur->aLo[k] + 1, *a;
  int m = 0;
  if (n > INT32_MAX) return SQLITE_OK;  /* too many to list: the rows are still checked */
  a = sqlite3_malloc64(sizeof(int64_t) * (sqlite3_uint64)n);
  if (a == 0) return SQLITE_NOMEM;
  for (j = pCur->aLo[k]; j <= pCur->aHi[k]; j++)
    if (cvInSorted(pCur->aList[k], pCur->nList[k], j) &&
        cvRedKeyWanted(pCur, k, j, idxStr, argc, argv))
      a[m++] = j;
  sqlite3_free(pCur->aList[k]);
  pCur->aList[k] = a;
  pCur->nList[k] = m;
  if (m == 0) pCur->bEmpty = 1;
  else pCur->aLo[k] = a[0], pCur->aHi[k] = a[m - 1];
  return SQLITE_OK;
}

static int cvRedKeyBounds(CvRedCursor *pCur, const char *idxStr, int argc,
                          sqlite3_value **argv) {
  int i, k, rc = SQLITE_OK, bDone[CV_RED_NDIM] = {0};
  for (i = 0; i < argc && rc == SQLITE_OK && !pCur->bEmpty; i++) {
    k = idxStr[2 * i + 1] - CV_RED_KEY_DIM;
    if (k < 0 || k >= CV_RED_NDIM || bDone[k]) continue;
    bDone[k] = 1;
    if (k >= pCur->nDim || pCur->eMode[k] != CATERVA_RED_GROUP || !pCur->bLab[k] ||
        !pCur->aLab[k].is_time)
      continue;  /* cvRedGroups gives the error */
    rc = cvRedKeyBounds1(pCur, k, idxStr, argc, argv);
  }
  return rc;
}

/* The groups of the grouped dimensions (from their time coordinates, over the box). */
static int cvRedGroups(CvRedCursor *pCur, char **azName, char **pzErr) {
  int k, rc = SQLITE_OK;
  for (k = 0; k < pCur->nDim && rc == SQLITE_OK; k++) {
    if (pCur->eMode[k] != CATERVA_RED_GROUP) continue;
    if (!pCur->bLab[k] || !pCur->aLab[k].is_time) {
      *pzErr = sqlite3_mprintf("caterva_reduce: dimension %s has no time coordinate, so it "
                               "cannot be grouped by calendar", azName[k]);
      return SQLITE_ERROR;
    }
    rc = cvRedGroupBuild(pCur->pCtx, &pCur->aLab[k], pCur->aLo[k], pCur->aHi[k],
                         pCur->aList[k], pCur->nList[k], &pCur->aGroup[k], pzErr);
    if (rc == SQLITE_OK && pCur->aGroup[k].nGroup == 0) pCur->bEmpty = 1;
  }
  return rc;
}

/* The reduction of the box, computed. */
static int cvRedRun(CvRedCursor *pCur, int bStd, int bMinMax) {
  caterva_reduce_dim aDim[CV_RED_NDIM];
  int k, rc;
  for (k = 0; k < pCur->nDim; k++) {
    aDim[k].mode = pCur->eMode[k];
    aDim[k].lo = pCur->aLo[k];
    aDim[k].hi = pCur->aHi[k];
    aDim[k].gid = pCur->aGroup[k].aGid;
    aDim[k].ngroups = pCur->aGroup[k].nGroup;
  }
  rc = caterva_reduce_new(pCur->pCtx, pCur->pArr, aDim,
                          (bStd ? CATERVA_REDUCE_STD : 0) |
                              (bMinMax ? 0 : CATERVA_REDUCE_NOMINMAX),
                          &pCur->pRed);
  if (rc >= 0) rc = cvRedCompute(pCur, 0);
  if (rc < 0)
    return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: %s",
                                            caterva_ctx_errmsg(pCur->pCtx)));
  pCur->nOut = caterva_reduce_nrows(pCur->pRed);
  return SQLITE_OK;
}

/* The arguments arr, op and axes: the plan's, or the named table's own. */
static void cvRedArgs(const CvRedCursor *pCur, const char *idxStr, int argc,
                      sqlite3_value **argv, const char **pzArr, const char **pzOp,
                      const char **pzAxes) {
  const CvRedNamed *pNamed = ((CvRedVtab *)pCur->base.pVtab)->pNamed;
  int i;
  if (pNamed) {
    *pzArr = pNamed->zArr;
    *pzOp = pNamed->zOp;
    *pzAxes = pNamed->zAxes;
    return;
  }
  for (i = 0; i < argc; i++) {
    char c = idxStr[2 * i + 1];
    if (c == 'R') *pzArr = (const char *)sqlite3_value_text(argv[i]);
    if (c == 'P') *pzOp = (const char *)sqlite3_value_text(argv[i]);
    if (c == 'X') *pzAxes = (const char *)sqlite3_value_text(argv[i]);
  }
}

/* The box, its groups and the modes of the dimensions, from the arguments and the plan. */
static int cvRedSetup(CvRedCursor *pCur, CvVtab *pFound, const char *zAxes,
                      const char *idxStr, int argc, sqlite3_value **argv) {
  const CvRedNamed *pNamed = ((CvRedVtab *)pCur->base.pVtab)->pNamed;
  char *zErr = 0, **azName = cvRedDimNames(pCur, pFound);
  int rc;
  if (azName == 0) return SQLITE_NOMEM;
  rc = pNamed ? cvRedSameDims(pNamed, pCur->nDim, azName, &zErr) : SQLITE_OK;
  if (rc == SQLITE_OK)
    rc = cvRedAxesParse(pCur->nDim, azName, zAxes, pCur->eMode, pCur->aGroup, &zErr);
  if (rc == SQLITE_OK) rc = cvRedLabels(pCur, azName);
  pCur->bEmpty = 0;
  if (rc == SQLITE_OK) rc = cvRedBounds(pCur, azName, idxStr, argc, argv);
  if (rc == SQLITE_OK && pNamed) rc = cvRedKeyBounds(pCur, idxStr, argc, argv);
  if (rc == SQLITE_OK && !pCur->bEmpty) rc = cvRedGroups(pCur, azName, &zErr);
  cvRedFreeNames(azName, pCur->nDim);
  if (rc != SQLITE_OK) pCur->bEmpty = 1;
  return zErr ? cvRedError(pCur, zErr) : rc;
}

static int cvRedFilter(sqlite3_vtab_cursor *pCursor, int idxNum, const char *idxStr, int argc,
                       sqlite3_value **argv) {
  CvRedCursor *pCur = (CvRedCursor *)pCursor;
  const char *zArr = 0, *zOp = 0, *zAxes = 0;
  const CvRedOps *pOps = &pCur->ops;
  CvVtab *pFound = 0;
  char *zErr = 0;
  int rc;
  cvRedReset(pCur);
  if (!(idxNum & CV_RED_PLAN) || idxStr == 0 || strlen(idxStr) != 2 * (size_t)argc)
    return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: give arr and op, e.g. "
                                            "caterva_reduce('t', 'mean', 'time')"));
  cvRedArgs(pCur, idxStr, argc, argv, &zArr, &zOp, &zAxes);
  if (zArr == 0) return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: arr is NULL"));
  if (cvRedOpsParse(zOp, &pCur->ops, &zErr) != SQLITE_OK) return cvRedError(pCur, zErr);
  rc = cvRedOpenArray(pCur, zArr, &pFound);
  if (rc != SQLITE_OK) return rc;
  pCur->nDim = caterva_array_ndim(pCur->pArr);
  pCur->eType = caterva_array_stats_type(pCur->pArr);
  if (pCur->eType == CATERVA_STATS_NONE)
    return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: '%s' has items of dtype %s, "
                                            "which are not numbers", zArr,
                                            caterva_array_dtype(pCur->pArr)
                                                ? caterva_array_dtype(pCur->pArr) : "(none)"));
  rc = cvRedSetup(pCur, pFound, zAxes, idxStr, argc, argv);
  if (rc != SQLITE_OK || pCur->bEmpty) return rc;
  rc = cvRedRun(pCur, cvRedOpsHas(pOps, CV_RED_STD) || (idxNum & CV_RED_WANT_STD) != 0,
                cvRedOpsHas(pOps, CV_RED_MIN) || cvRedOpsHas(pOps, CV_RED_MAX) ||
                    (idxNum & CV_RED_WANT_MINMAX) != 0);
  if (rc != SQLITE_OK) {
    pCur->bEmpty = 1;
    return rc;
  }
  pCur->iRow = 0;
  cvRedSkip(pCur);
  return SQLITE_OK;
}

static int cvRedNext(sqlite3_vtab_cursor *pCursor) {
  CvRedCursor *pCur = (CvRedCursor *)pCursor;
  pCur->iRow++;
  cvRedSkip(pCur);
  return SQLITE_OK;
}

static int cvRedEof(sqlite3_vtab_cursor *pCursor) {
  CvRedCursor *pCur = (CvRedCursor *)pCursor;
  return pCur->bEmpty || pCur->iRow >= pCur->nOut;
}

/* A minimum or maximum as an SQL value of the array's kind. */
static void cvRedScalar(sqlite3_context *pCtx, const CvRedCursor *pCur, caterva_scalar v) {
  if (pCur->eType == CATERVA_STATS_FLOAT) sqlite3_result_double(pCtx, v.f);
  else if (pCur->eType == CATERVA_STATS_INT) sqlite3_result_int64(pCtx, v.i);
  else if (v.u > (uint64_t)INT64_MAX) sqlite3_result_double(pCtx, (double)v.u);
  else sqlite3_result_int64(pCtx, (int64_t)v.u);
}

/* Statistic eStat (CV_RED_COUNT ... CV_RED_STD) of row p; NULL for 0. */
static void cvRedStat(sqlite3_context *pCtx, const CvRedCursor *pCur,
                      const caterva_reduce_row *p, int eStat) {
  if (eStat == CV_RED_COUNT) {
    sqlite3_result_int64(pCtx, p->n);
  } else if (p->n == 0 || eStat == 0) {
    sqlite3_result_null(pCtx);
  } else if (eStat == CV_RED_SUM) {
    if (p->float_sum) sqlite3_result_double(pCtx, p->fsum);
    else sqlite3_result_int64(pCtx, p->isum);
  } else if (eStat == CV_RED_MEAN) {
    sqlite3_result_double(pCtx, p->mean);
  } else if (eStat == CV_RED_STD) {
    if (p->std == p->std) sqlite3_result_double(pCtx, p->std);
    else sqlite3_result_null(pCtx);
  } else {
    cvRedScalar(pCtx, pCur, eStat == CV_RED_MIN ? p->min : p->max);
  }
}

/* Dimension k's coordinate of the current row: label, index or group key. */
static void cvRedCoord(sqlite3_context *pCtx, const CvRedCursor *pCur, int k, int bIndex) {
  int64_t c;
  if (k >= pCur->nDim || pCur->eMode[k] == CATERVA_RED_REDUCE) return;
  c = caterva_reduce_coord(pCur->pRed, pCur->iRow, k);
  if (pCur->eMode[k] == CATERVA_RED_GROUP) {
    if (bIndex) sqlite3_result_int64(pCtx, pCur->aGroup[k].aFirst[c]);
    else cvRedGroupResult(pCtx, &pCur->aLab[k], &pCur->aGroup[k], c);
  } else if (!bIndex && pCur->bLab[k]) {
    cvLabelsResult(pCtx, &pCur->aLab[k], c);
  } else {
    sqlite3_result_int64(pCtx, c);
  }
}

static int cvRedColumn(sqlite3_vtab_cursor *pCursor, sqlite3_context *pCtx, int iCol) {
  CvRedCursor *pCur = (CvRedCursor *)pCursor;
  iCol = cvRedFnCol((CvRedVtab *)pCursor->pVtab, iCol);
  if (iCol < 0) return SQLITE_OK;
  if (iCol < CV_RED_NDIM) {
    cvRedCoord(pCtx, pCur, iCol, 0);
    return SQLITE_OK;
  }
  if (iCol >= CV_RED_INDEX && iCol < CV_RED_STAT) {
    cvRedCoord(pCtx, pCur, iCol - CV_RED_INDEX, 1);
    return SQLITE_OK;
  }
  if (iCol != CV_RED_VALUE && iCol != CV_RED_N && iCol < CV_RED_STAT) return SQLITE_OK;
  if (pCur->iRowGot != pCur->iRow) {
    caterva_reduce_get(pCur->pRed, pCur->iRow, &pCur->row);
    pCur->iRowGot = pCur->iRow;
  }
  if (iCol == CV_RED_VALUE)
    cvRedStat(pCtx, pCur, &pCur->row, pCur->ops.bValue ? pCur->ops.aStat[0] : 0);
  else if (iCol == CV_RED_N) sqlite3_result_int64(pCtx, pCur->row.n);
  else cvRedStat(pCtx, pCur, &pCur->row, CV_RED_COUNT + iCol - CV_RED_STAT);
  return SQLITE_OK;
}

static int cvRedRowid(sqlite3_vtab_cursor *pCursor, sqlite3_int64 *pRowid) {
  *pRowid = ((CvRedCursor *)pCursor)->iRow;
  return SQLITE_OK;
}

/* xUpdate: the rows are computed from the array; writes go to the array. */
static int cvRedUpdate(sqlite3_vtab *pVtab, int argc, sqlite3_value **argv,
                       sqlite3_int64 *pRowid) {
  CvRedVtab *pTab = (CvRedVtab *)pVtab;
  (void)argc;
  (void)argv;
  (void)pRowid;
  sqlite3_free(pVtab->zErrMsg);
  pVtab->zErrMsg = sqlite3_mprintf("caterva_reduce: %s is read-only: its rows are computed "
                                   "from %s%s%s; write to the array's table instead",
                                   pTab->zName, pTab->pNamed ? "'" : "its array",
                                   pTab->pNamed ? pTab->pNamed->zArr : "",
                                   pTab->pNamed ? "'" : "");
  return pVtab->zErrMsg ? SQLITE_ERROR : SQLITE_NOMEM;
}

static sqlite3_module cvReduceModule = {
    /* iVersion    */ 0,
    /* xCreate     */ cvRedConnect, /* the same: eponymous, and CREATE VIRTUAL TABLE too */
    /* xConnect    */ cvRedConnect,
    /* xBestIndex  */ cvRedBestIndex,
    /* xDisconnect */ cvRedDisconnect,
    /* xDestroy    */ cvRedDisconnect, /* nothing stored but the schema's text */
    /* xOpen       */ cvRedOpen,
    /* xClose      */ cvRedClose,
    /* xFilter     */ cvRedFilter,
    /* xNext       */ cvRedNext,
    /* xEof        */ cvRedEof,
    /* xColumn     */ cvRedColumn,
    /* xRowid      */ cvRedRowid,
    /* xUpdate     */ cvRedUpdate,
    /* xBegin      */ 0,
    /* xSync       */ 0,
    /* xCommit     */ 0,
    /* xRollback   */ 0,
    /* xFindMethod */ 0,
    /* xRename     */ 0,
    /* xSavepoint  */ 0,
    /* xRelease    */ 0,
    /* xRollbackTo */ 0,
    /* xShadowName */ 0};

int cvRegisterReduce(sqlite3 *db, CvConn *pConn) {
  return sqlite3_create_module_v2(db, "caterva_reduce", &cvReduceModule, cvConnRef(pConn),
                                  cvConnUnref);
}

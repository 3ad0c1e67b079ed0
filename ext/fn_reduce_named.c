/*
 * fn_reduce_named.c -- named reductions: CREATE VIRTUAL TABLE clim USING
 * caterva_reduce('temps', 'mean', 'time') makes a read-only table whose columns carry the
 * dimensions' and the statistics' names, for SQL that reads like SQL:
 *
 *   SELECT lat, lon, value FROM clim WHERE lat > 60;
 *
 * Columns, in this order (the names the Python caterva_sqlite.reduce gives its DataFrame):
 *
 *   <kept or grouped dimension>  ...  its label (as the caterva table shows it), index, or
 *                                      group key, named after the dimension (bounds on
 *                                      INTEGER keys choose their groups' cells: fn_reduce.c)
 *   value                              one statistic (op 'mean'): its value ...
 *   <statistic> ...                    ... a list of them ('mean,min,max', 'stats'): one
 *                                      column each, named as listed
 *   n          INTEGER                 the present (non-NaN) cells that went into the row
 *   <reduced dimension>  HIDDEN        always NULL; bounds on it choose the cells reduced
 *   <dimension>_index    HIDDEN        every dimension's index (a group: its first index)
 *   <statistic>          HIDDEN        with one statistic: `value` under its own name too
 *
 * A kept or grouped dimension named like a result column (value, n, a listed statistic) is an
 * error; a hidden column whose name is taken is left out (a reduced dimension `n` is then
 * bounded through n_index).
 *
 * The table is the function's rows under other names: each column maps onto one of the
 * function's (aMap), so planning, bounds, computing and rows are the function's (fn_reduce.c).
 * The schema is fixed when the table is made (from the array's dimension names then); the
 * array is read again by every query, as the function reads it.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "fn_reduce_internal.h"
#include "vtab_internal.h"

#include <string.h>

void cvRedNamedFree(CvRedNamed *p) {
  if (p == 0) return;
  sqlite3_free(p->zArr);
  sqlite3_free(p->zOp);
  sqlite3_free(p->zAxes);
  cvRedFreeNames(p->azDim, p->nDim);
  sqlite3_free(p->aMap);
  sqlite3_free(p);
}

/* The names of the dimensions of the array arr names (a caterva table of the connection or
** a path): the table's columns, else the file's, else d0, d1, ...; checks that its items are
** numbers. */
static int cvRedNamedDims(sqlite3 *db, CvConn *pConn, CvRedNamed *p, char **pzErr) {
  void *pFound = 0;
  const char *zPath = cvConnResolve(pConn, db, p->zArr, &pFound);
  caterva_array *pOwned = 0, *pArr;
  char **azFile = 0;
  int k, rc = SQLITE_OK;
  if (pFound) {
    pArr = ((CvVtab *)pFound)->pArr;
  } else if (caterva_array_open(pConn->pCtx, zPath, CATERVA_OPEN_READ, &pOwned) < 0) {
    *pzErr = sqlite3_mprintf("caterva_reduce: cannot open '%s': %s", p->zArr,
                             caterva_ctx_errmsg(pConn->pCtx));
    return SQLITE_ERROR;
  } else {
    pArr = pOwned;
    (void)caterva_array_get_dim_names(pConn->pCtx, pArr, &azFile);
  }
  p->nDim = caterva_array_ndim(pArr);
  if (caterva_array_stats_type(pArr) == CATERVA_STATS_NONE) {
    *pzErr = sqlite3_mprintf("caterva_reduce: '%s' has items of dtype %s, which are not "
                             "numbers", p->zArr,
                             caterva_array_dtype(pArr) ? caterva_array_dtype(pArr) : "(none)");
    rc = SQLITE_ERROR;
    goto named_dims_out;
  }
  p->azDim = sqlite3_malloc64(sizeof(char *) * (sqlite3_uint64)(p->nDim + 1));
  if (p->azDim == 0) {
    rc = SQLITE_NOMEM;
    goto named_dims_out;
  }
  memset(p->azDim, 0, sizeof(char *) * (size_t)(p->nDim + 1));
  for (k = 0; k < p->nDim && rc == SQLITE_OK; k++) {
    if (pFound) p->azDim[k] = sqlite3_mprintf("%s", ((CvVtab *)pFound)->azCol[k]);
    else if (azFile) p->azDim[k] = sqlite3_mprintf("%s", azFile[k]);
    else p->azDim[k] = sqlite3_mprintf("d%d", k);
    if (p->azDim[k] == 0) rc = SQLITE_NOMEM;
  }
named_dims_out:
  caterva_array_free_names(azFile, p->nDim);
  caterva_array_free(pOwned);
  return rc;
}

/* The columns being declared: names (to find two alike) and the map. */
typedef struct CvRedCols CvRedCols;
struct CvRedCols {
  sqlite3_str *pStr;               /* the CREATE TABLE text */
  char *azName[2 * CV_RED_NDIM + CV_RED_NSTAT + 3];
  int aMap[2 * CV_RED_NDIM + CV_RED_NSTAT + 3];
  int nCol;
};

/* Declare column zName (then zDecl: its type and HIDDEN) as the function's column iFn. A
** hidden column whose name is taken already is left out (declared after the visible ones, it
** never takes a name from them); a visible one is an error. */
static int cvRedColAdd(CvRedCols *p, const char *zName, const char *zDecl, int iFn,
                       char **pzErr) {
  int i;
  char *z;
  for (i = 0; i < p->nCol; i++) {
    if (sqlite3_stricmp(p->azName[i], zName) == 0) {
      if (strstr(zDecl, "HIDDEN")) return SQLITE_OK;
      *pzErr = sqlite3_mprintf("caterva_reduce: two columns would be named '%s' (a "
                               "dimension's name is also the name of another column: rename "
                               "it with the caterva table's dims= option and reduce that "
                               "table)", zName);
      return SQLITE_ERROR;
    }
  }
  z = sqlite3_mprintf("%s", zName);
  if (z == 0) return SQLITE_NOMEM;
  p->azName[p->nCol] = z;
  p->aMap[p->nCol++] = iFn;
  sqlite3_str_appendf(p->pStr, "%s\"%w\"%s", p->nCol > 1 ? ", " : "", zName, zDecl);
  return SQLITE_OK;
}

/* A statistic's declared type. */
static const char *cvRedStatDecl(int eStat, int bHidden) {
  if (eStat == CV_RED_COUNT) return bHidden ? " INTEGER HIDDEN" : " INTEGER";
  if (eStat == CV_RED_MEAN || eStat == CV_RED_STD) return bHidden ? " REAL HIDDEN" : " REAL";
  return bHidden ? " HIDDEN" : "";
}

/* Every column, in the order of the comment at the top. */
static int cvRedNamedColumns(CvRedNamed *p, const CvRedOps *pOps, CvRedCols *pCols,
                             char **pzErr) {
  int k, j, rc = SQLITE_OK;
  for (k = 0; k < p->nDim && rc == SQLITE_OK; k++)
    if (p->aMode[k] != CATERVA_RED_REDUCE) rc = cvRedColAdd(pCols, p->azDim[k], "", k, pzErr);
  if (pOps->bValue && rc == SQLITE_OK) rc = cvRedColAdd(pCols, "value", "", CV_RED_VALUE, pzErr);
  for (j = 0; !pOps->bValue && j < pOps->nStat && rc == SQLITE_OK; j++)
    rc = cvRedColAdd(pCols, pOps->azName[j], cvRedStatDecl(pOps->aStat[j], 0),
                     CV_RED_STAT + pOps->aStat[j] - 1, pzErr);
  if (rc == SQLITE_OK) rc = cvRedColAdd(pCols, "n", " INTEGER", CV_RED_N, pzErr);
  for (k = 0; k < p->nDim && rc == SQLITE_OK; k++)
    if (p->aMode[k] == CATERVA_RED_REDUCE)
      rc = cvRedColAdd(pCols, p->azDim[k], " HIDDEN", k, pzErr);
  for (k = 0; k < p->nDim && rc == SQLITE_OK; k++) {
    char *zIdx = sqlite3_mprintf("%s_index", p->azDim[k]);
    rc = zIdx ? cvRedColAdd(pCols, zIdx, " INTEGER HIDDEN", CV_RED_INDEX + k, pzErr)
              : SQLITE_NOMEM;
    sqlite3_free(zIdx);
  }
  if (pOps->bValue && rc == SQLITE_OK)
    rc = cvRedColAdd(pCols, pOps->azName[0], cvRedStatDecl(pOps->aStat[0], 1),
                     CV_RED_STAT + pOps->aStat[0] - 1, pzErr);
  return rc;
}

/* The arguments arr, op[, axes] (dequoted), checked. */
static int cvRedNamedArgs(int argc, const char *const *argv, CvRedNamed *p, CvRedOps *pOps,
                          char **pzErr) {
  if (argc < 5 || argc > 6) {
    *pzErr = sqlite3_mprintf("caterva_reduce: give the array, the op and the axes, e.g. "
                             "CREATE VIRTUAL TABLE clim USING caterva_reduce('temps', "
                             "'mean', 'time')");
    return SQLITE_ERROR;
  }
  p->zArr = cvDequote(argv[3], (int)strlen(argv[3]));
  p->zOp = cvDequote(argv[4], (int)strlen(argv[4]));
  if (argc == 6) {
    p->zAxes = cvDequote(argv[5], (int)strlen(argv[5]));
    if (p->zAxes == 0) return SQLITE_NOMEM;
  }
  if (p->zArr == 0 || p->zOp == 0) return SQLITE_NOMEM;
  return cvRedOpsParse(p->zOp, pOps, pzErr);
}

int cvRedNamedNew(sqlite3 *db, CvConn *pConn, int argc, const char *const *argv,
                  CvRedNamed **ppNamed, char **pzSql, char **pzErr) {
  CvRedNamed *p = sqlite3_malloc(sizeof(*p));
  CvRedGroup aGroup[CV_RED_NDIM];
  CvRedOps ops;
  CvRedCols cols;
  int rc, k;
  *ppNamed = 0;
  *pzSql = 0;
  memset(&cols, 0, sizeof(cols));
  memset(aGroup, 0, sizeof(aGroup));
  if (p == 0) return SQLITE_NOMEM;
  memset(p, 0, sizeof(*p));
  rc = cvRedNamedArgs(argc, argv, p, &ops, pzErr);
  if (rc == SQLITE_OK) rc = cvRedNamedDims(db, pConn, p, pzErr);
  if (rc == SQLITE_OK)
    rc = cvRedAxesParse(p->nDim, p->azDim, p->zAxes, p->aMode, aGroup, pzErr);
  for (k = 0; rc == SQLITE_OK && k < p->nDim; k++)
    p->aKeyInt[k] = p->aMode[k] == CATERVA_RED_GROUP &&
                    (aGroup[k].eField == CATERVA_FIELD_YEAR ||
                     aGroup[k].eField == CATERVA_FIELD_MONTH ||
                     aGroup[k].eField == CATERVA_FIELD_DAYOFYEAR);
  if (rc == SQLITE_OK) {
    cols.pStr = sqlite3_str_new(db);
    sqlite3_str_appendall(cols.pStr, "CREATE TABLE x(");
    rc = cvRedNamedColumns(p, &ops, &cols, pzErr);
    sqlite3_str_appendall(cols.pStr, ")");
  }
  if (rc == SQLITE_OK) p->aMap = sqlite3_malloc64(sizeof(int) * (sqlite3_uint64)cols.nCol);
  if (rc == SQLITE_OK && p->aMap == 0) rc = SQLITE_NOMEM;
  if (rc == SQLITE_OK) {
    memcpy(p->aMap, cols.aMap, sizeof(int) * (size_t)cols.nCol);
    p->nCol = cols.nCol;
  }
  if (cols.pStr) {
    char *zSql = sqlite3_str_finish(cols.pStr);
    if (rc == SQLITE_OK && zSql == 0) rc = SQLITE_NOMEM;
    if (rc == SQLITE_OK) *pzSql = zSql;
    else sqlite3_free(zSql);
  }
  for (k = 0; k < cols.nCol; k++) sqlite3_free(cols.azName[k]);
  for (k = 0; k < CV_RED_NDIM; k++) cvRedGroupFree(&aGroup[k]);
  if (rc != SQLITE_OK) cvRedNamedFree(p);
  else *ppNamed = p;
  return rc;
}

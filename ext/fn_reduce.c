/*
 * fn_reduce.c -- caterva_reduce('<table or path>', op, axes): reductions of an array over some
 * of its dimensions, computed in C over decompressed blocks (and over block statistics where
 * they answer a whole block), as a table-valued function.
 *
 *   SELECT d1 AS lat, value FROM caterva_reduce('temp', 'mean', 'time,lon');
 *   SELECT value FROM caterva_reduce('temp', 'max', '');               -- the whole array
 *   SELECT d1 AS lat, d2 AS lon, value, n FROM caterva_reduce('temp', 'sum', 'time')
 *    WHERE d0 BETWEEN '2023-01-01' AND '2023-01-30' AND d1 > 60;       -- a box, in labels
 *   SELECT d1_index, value FROM caterva_reduce('temp', 'max', 'time,lon') WHERE d1_index < 10;
 *
 * Columns: d0 ... d15 stand for the array's dimensions in array order. A dimension that
 * remains gives each row's coordinate there: its label when the array has a coordinate for
 * it (REAL, or ISO 8601 TEXT for instants, as the caterva table's columns), else its index;
 * reduced dimensions (and those past ndim) are NULL. The hidden columns d0_index ... d15_index give the
 * same coordinates as indices. `value` is the reduction, `n` the number of present
 * (non-NaN) cells that went into it. Hidden columns: arr (the table or path), op (count,
 * sum, mean, min, max) and axes (a comma list of dimension names -- the table's column
 * names or the file's `_ARRAY_DIMENSIONS`, else d0, d1, ... -- or numbers; empty or NULL:
 * every dimension). Constraints (=, <, <=, >, >=, BETWEEN, IN) on dk compare labels exactly as
 * the caterva table's dimension columns do (vtab_coord.c), those on dk_index indices; both restrict
 * the box, for reduced and remaining dimensions alike, and are exact (omit is set). An IN
 * list restricts its dimension to the indices it names: a reduced dimension is reduced over
 * all of them together (SQLite would otherwise call xFilter once per value, giving one row
 * per value), a remaining one gives a row for each.
 *
 * The columns cannot carry the dimensions' names: an eponymous virtual table declares its
 * columns once per connection in xConnect, before any argument is seen, and the arguments
 * of one statement may name arrays with different dimensions. A TEMP VIEW renames them
 * (see the README).
 *
 * Semantics follow SQL's aggregates over the same cells: NaN cells are NULL and left out;
 * count counts the present cells; sum, min, max of no present cell are NULL; mean is sum /
 * count as REAL. Integer dtypes give INTEGER sum, min and max (a sum that overflows int64 is
 * given as REAL, where SQLite's sum() would fail). Float sums are accumulated in double in
 * block order (SQLite adds in row order): results agree with GROUP BY to within
 * n * 2^-52 * sum(|x|) (reassociation), and exactly for integers.
 *
 * How: the block iterator walks the blocks of the box (decompressing the ones it needs in
 * parallel on the connection's threads); a block that lies wholly inside the box and spans
 * one output row (no remaining dimension varies inside it) is answered by its statistics
 * without being decompressed, when it has them.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define CV_RED_NDIM   CATERVA_MAX_DIM
#define CV_RED_VALUE  (CV_RED_NDIM)
#define CV_RED_N      (CV_RED_NDIM + 1)
#define CV_RED_ARR    (CV_RED_NDIM + 2)
#define CV_RED_OP     (CV_RED_NDIM + 3)
#define CV_RED_AXES   (CV_RED_NDIM + 4)
#define CV_RED_INDEX  (CV_RED_NDIM + 5)   /* d0_index ... d15_index */

#define CV_RED_COUNT 1
#define CV_RED_SUM   2
#define CV_RED_MEAN  3
#define CV_RED_MIN   4
#define CV_RED_MAX   5

/* Accumulators of one output row. */
typedef struct CvAcc CvAcc;
struct CvAcc {
  int64_t n;         /* present cells */
  double fSum;       /* float dtypes (and integer sums that overflowed) */
  int64_t iSum;      /* integer dtypes */
  int bOver;         /* iSum overflowed: fSum holds the sum */
  caterva_scalar mn, mx;
};

typedef struct CvRedVtab CvRedVtab;
struct CvRedVtab {
  sqlite3_vtab base;         /* Base class - must be first */
  CvConn *pConn;             /* Connection state: library context, table registry */
  sqlite3 *db;
};

typedef struct CvRedCursor CvRedCursor;
struct CvRedCursor {
  sqlite3_vtab_cursor base;  /* Base class - must be first */
  int eOp;                   /* CV_RED_* */
  int eType;                 /* CATERVA_STATS_* of the array */
  int nDim;
  int bRemain[CV_RED_NDIM];  /* dimension k is kept in the output */
  int64_t aLo[CV_RED_NDIM];  /* the box, inclusive (an IN list's first and last index) */
  int64_t aHi[CV_RED_NDIM];
  int64_t *aList[CV_RED_NDIM]; /* IN: the sorted, distinct indices of dimension k, or NULL */
  int nList[CV_RED_NDIM];
  int64_t aSubLo[CV_RED_NDIM]; /* the sub-box being walked (one run of each IN list) */
  int64_t aSubHi[CV_RED_NDIM];
  int64_t aStride[CV_RED_NDIM]; /* output row stride of each remaining dimension, else 0 */
  int64_t nOut;              /* output rows */
  CvAcc *aAcc;               /* nOut accumulators */
  int64_t iRow;              /* current row */
  int bEmpty;                /* the box is empty: no rows */
  caterva_array *pArr;       /* the array being reduced */
  caterva_array *pOwned;     /* ... when this cursor opened it */
  caterva_ctx *pCtx;
  int64_t nFromStats;        /* blocks answered by their statistics (for tests) */
  int bLab[CV_RED_NDIM];     /* dimension k has a coordinate: its d column gives labels */
  caterva_labels aLab[CV_RED_NDIM]; /* ... prepared; c.values points into aLabVal[k] */
  double *aLabVal[CV_RED_NDIM]; /* an explicit coordinate's labels, copied (the cursor
                             ** outlives the borrowed array's attribute cache) */
  int eKind;                 /* CATERVA_KIND_* of the items */
  int szItem;
};

/* ---- the module ---------------------------------------------------------------------- */

static int cvRedConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                        sqlite3_vtab **ppVtab, char **pzErr) {
  CvRedVtab *pTab;
  sqlite3_str *pStr = sqlite3_str_new(db);
  char *zSql;
  int rc, k;
  (void)argc;
  (void)argv;
  (void)pzErr;
  sqlite3_str_appendall(pStr, "CREATE TABLE x(");
  for (k = 0; k < CV_RED_NDIM; k++) sqlite3_str_appendf(pStr, "d%d, ", k);
  sqlite3_str_appendall(pStr, "value, n INTEGER, arr HIDDEN, op HIDDEN, axes HIDDEN");
  for (k = 0; k < CV_RED_NDIM; k++) sqlite3_str_appendf(pStr, ", d%d_index INTEGER HIDDEN", k);
  sqlite3_str_appendall(pStr, ")");
  zSql = sqlite3_str_finish(pStr);
  if (zSql == 0) return SQLITE_NOMEM;
  rc = sqlite3_declare_vtab(db, zSql);
  sqlite3_free(zSql);
  if (rc != SQLITE_OK) return rc;
  pTab = sqlite3_malloc(sizeof(*pTab));
  if (pTab == 0) return SQLITE_NOMEM;
  memset(pTab, 0, sizeof(*pTab));
  pTab->pConn = cvConnRef((CvConn *)pAux);
  pTab->db = db;
  /* it reads files named by its argument: not from triggers or views */
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  *ppVtab = &pTab->base;
  return SQLITE_OK;
}

static int cvRedDisconnect(sqlite3_vtab *pVtab) {
  CvRedVtab *pTab = (CvRedVtab *)pVtab;
  cvConnUnref(pTab->pConn);
  sqlite3_free(pTab);
  return SQLITE_OK;
}

/*
** xBestIndex. idxStr holds two characters per xFilter argument: an operator (CV_OP_EQ ...
** CV_OP_GT, as in vtab_plan.c) and a column, as in vtab_plan.c: CV_LABEL_DIM + k for dk (labels when
** the dimension has a coordinate), CV_INDEX_DIM + k for dk_index (indices); 'R' arr, 'P' op,
** 'X' axes. arr and op must be given (=); every usable bound on a dimension is taken and
** omitted (label ranges are exact, as the caterva table's are). An IN list on a dimension
** (CV_OP_IN) comes whole to one xFilter call (sqlite3_vtab_in) and restricts the dimension
** to its indices: a reduced dimension is reduced over all of them, a kept one gives a row
** for each.
*/
static int cvRedBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  char *zPlan = sqlite3_malloc64((sqlite3_uint64)pInfo->nConstraint * 2 + 1);
  int i, nArg = 0, bArr = 0, bOp = 0, nBound = 0;
  (void)pVtab;
  if (zPlan == 0) return SQLITE_NOMEM;
  for (i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *p = &pInfo->aConstraint[i];
    char cOp = 0, cCol = 0;
    switch (p->op) {
      case SQLITE_INDEX_CONSTRAINT_EQ:
        /* IN: all its values in one xFilter call, since a reduced dimension must be
        ** reduced over all of them together, not once per value */
        cOp = p->iColumn < CV_RED_ARR || p->iColumn >= CV_RED_INDEX
                  ? (p->usable && sqlite3_vtab_in(pInfo, i, -1) ? CV_OP_IN : CV_OP_EQ)
                  : CV_OP_EQ;
        break;
      case SQLITE_INDEX_CONSTRAINT_LT: cOp = CV_OP_LT; break;
      case SQLITE_INDEX_CONSTRAINT_LE: cOp = CV_OP_LE; break;
      case SQLITE_INDEX_CONSTRAINT_GT: cOp = CV_OP_GT; break;
      case SQLITE_INDEX_CONSTRAINT_GE: cOp = CV_OP_GE; break;
      default: break;
    }
    if (p->iColumn >= CV_RED_ARR && p->iColumn < CV_RED_INDEX) {
      if (!p->usable || cOp != CV_OP_EQ) {
        if (!p->usable) continue;
        sqlite3_free(zPlan);
        pVtab->zErrMsg = sqlite3_mprintf("caterva_reduce: arr, op and axes take =");
        return SQLITE_ERROR;
      }
      cCol = p->iColumn == CV_RED_ARR ? 'R' : p->iColumn == CV_RED_OP ? 'P' : 'X';
      bArr |= cCol == 'R';
      bOp |= cCol == 'P';
    } else if (p->iColumn >= 0 && p->iColumn < CV_RED_NDIM && p->usable && cOp) {
      cCol = (char)(CV_LABEL_DIM + p->iColumn);
      nBound++;
    } else if (p->iColumn >= CV_RED_INDEX && p->usable && cOp) {
      cCol = (char)(CV_INDEX_DIM + p->iColumn - CV_RED_INDEX);
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
  pInfo->idxNum = 1;
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
  }
  sqlite3_free(pCur->aAcc);
  pCur->aAcc = 0;
  caterva_array_free(pCur->pOwned);
  pCur->pOwned = 0;
  pCur->pArr = 0;
  pCur->bEmpty = 1;
}

static int cvRedClose(sqlite3_vtab_cursor *pCursor) {
  cvRedReset((CvRedCursor *)pCursor);
  sqlite3_free(pCursor);
  return SQLITE_OK;
}

/* ---- arguments ----------------------------------------------------------------------- */

static int cvRedParseOp(const char *z) {
  static const struct { const char *zName; int eOp; } aOp[] = {
      {"count", CV_RED_COUNT}, {"sum", CV_RED_SUM}, {"mean", CV_RED_MEAN},
      {"avg", CV_RED_MEAN},    {"min", CV_RED_MIN}, {"max", CV_RED_MAX}};
  size_t i;
  for (i = 0; z && i < sizeof(aOp) / sizeof(aOp[0]); i++)
    if (sqlite3_stricmp(z, aOp[i].zName) == 0) return aOp[i].eOp;
  return 0;
}

static void cvRedFreeNames(char **az, int n) {
  int k;
  for (k = 0; az && k < n; k++) sqlite3_free(az[k]);
  sqlite3_free(az);
}

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

/* axes: a comma list of names or numbers; marks the reduced dimensions. */
static int cvRedParseAxes(CvRedCursor *pCur, char **az, const char *zAxes, char **pzErr) {
  const char *z = zAxes;
  int k, rc = SQLITE_OK;
  for (k = 0; k < pCur->nDim; k++) pCur->bRemain[k] = zAxes != 0 && zAxes[0] != 0;
  if (zAxes == 0 || zAxes[0] == 0) return SQLITE_OK;
  while (*z && rc == SQLITE_OK) {
    const char *zEnd = strchr(z, ',');
    int n, j, iFound = -1;
    char *zName;
    if (zEnd == 0) zEnd = z + strlen(z);
    while (z < zEnd && (*z == ' ' || *z == '\t')) z++;
    n = (int)(zEnd - z);
    while (n > 0 && (z[n - 1] == ' ' || z[n - 1] == '\t')) n--;
    zName = sqlite3_mprintf("%.*s", n, z);
    if (zName == 0) {
      rc = SQLITE_NOMEM;
      break;
    }
    for (j = 0; j < pCur->nDim && iFound < 0; j++)
      if (sqlite3_stricmp(az[j], zName) == 0) iFound = j;
    if (iFound < 0 && n > 0 && strspn(zName, "0123456789") == (size_t)n && n < 4) {
      iFound = atoi(zName);
      if (iFound >= pCur->nDim) iFound = -1;
    }
    if (iFound < 0) {
      *pzErr = sqlite3_mprintf("caterva_reduce: no dimension '%s' (the array has %d)", zName,
                               pCur->nDim);
      rc = SQLITE_ERROR;
    } else {
      pCur->bRemain[iFound] = 0;
    }
    sqlite3_free(zName);
    z = *zEnd ? zEnd + 1 : zEnd;
  }
  return rc;
}

/* ---- accumulating -------------------------------------------------------------------- */

/* Fold one present item into an accumulator. */
static void cvAccF(CvAcc *p, double v) {
  if (p->n == 0 || v < p->mn.f) p->mn.f = v;
  if (p->n == 0 || v > p->mx.f) p->mx.f = v;
  p->fSum += v;
  p->n++;
}

/* Add v to an integer sum; past int64 the sum continues in double (given as REAL). */
static void cvSumI(CvAcc *p, int64_t v) {
  int64_t s;
  if (p->bOver) {
    p->fSum += (double)v;
  } else if (__builtin_add_overflow(p->iSum, v, &s)) {
    p->bOver = 1;
    p->fSum = (double)p->iSum + (double)v;
  } else {
    p->iSum = s;
  }
}

static void cvSumU(CvAcc *p, uint64_t v) {
  if (!p->bOver && v <= (uint64_t)INT64_MAX && p->iSum <= INT64_MAX - (int64_t)v) {
    p->iSum += (int64_t)v;
    return;
  }
  if (!p->bOver) {
    p->bOver = 1;
    p->fSum = (double)p->iSum;
  }
  p->fSum += (double)v;
}

static void cvAccI(CvAcc *p, int64_t v) {
  if (p->n == 0 || v < p->mn.i) p->mn.i = v;
  if (p->n == 0 || v > p->mx.i) p->mx.i = v;
  cvSumI(p, v);
  p->n++;
}

static void cvAccU(CvAcc *p, uint64_t v) {
  if (p->n == 0 || v < p->mn.u) p->mn.u = v;
  if (p->n == 0 || v > p->mx.u) p->mx.u = v;
  cvSumU(p, v);
  p->n++;
}

/* Fold a run of n items at p (C order, one accumulator each when bStep, else all into
** pAcc). */
static void cvAccRun(const CvRedCursor *pCur, CvAcc *pAcc, const uint8_t *p, int64_t n,
                     int bStep) {
  int64_t j;
  int sz = pCur->szItem;
  for (j = 0; j < n; j++, p += sz) {
    CvAcc *pA = bStep ? pAcc + j : pAcc;
    uint64_t u = 0;
    int i;
    switch (pCur->eKind) {
      case CATERVA_KIND_FLOAT:
        if (sz == 8) {
          double d;
          memcpy(&d, p, 8);
          if (d == d) cvAccF(pA, d);
        } else if (sz == 4) {
          float f;
          memcpy(&f, p, 4);
          if (f == f) cvAccF(pA, (double)f);
        } else {
          uint16_t h;
          double d;
          memcpy(&h, p, 2);
          d = cvHalfToDouble(h);
          if (d == d) cvAccF(pA, d);
        }
        break;
      case CATERVA_KIND_BOOL: cvAccI(pA, p[0] != 0); break;
      case CATERVA_KIND_INT:
        for (i = sz - 1; i >= 0; i--) u = u << 8 | p[i];
        if (sz < 8 && (u >> (sz * 8 - 1) & 1)) u |= ~(uint64_t)0 << (sz * 8);
        cvAccI(pA, (int64_t)u);
        break;
      default:
        for (i = sz - 1; i >= 0; i--) u = u << 8 | p[i];
        cvAccU(pA, u);
        break;
    }
  }
}

/* Merge a block's statistics into an accumulator. */
static void cvAccStats(const CvRedCursor *pCur, CvAcc *pA, const caterva_block_stats *s) {
  if (s->nvalid == 0) return;
  if (pCur->eType == CATERVA_STATS_FLOAT) {
    if (pA->n == 0 || s->min.f < pA->mn.f) pA->mn.f = s->min.f;
    if (pA->n == 0 || s->max.f > pA->mx.f) pA->mx.f = s->max.f;
    pA->fSum += s->sum.f;
  } else if (pCur->eType == CATERVA_STATS_INT) {
    if (pA->n == 0 || s->min.i < pA->mn.i) pA->mn.i = s->min.i;
    if (pA->n == 0 || s->max.i > pA->mx.i) pA->mx.i = s->max.i;
    cvSumI(pA, s->sum.i);
  } else {
    if (pA->n == 0 || s->min.u < pA->mn.u) pA->mn.u = s->min.u;
    if (pA->n == 0 || s->max.u > pA->mx.u) pA->mx.u = s->max.u;
    cvSumU(pA, s->sum.u);
  }
  pA->n += s->nvalid;
}

/* The accumulator of the output row holding cell coordinate c. */
static CvAcc *cvRedAcc(const CvRedCursor *pCur, const int64_t *c) {
  int64_t i = 0;
  int k;
  for (k = 0; k < pCur->nDim; k++)
    if (pCur->bRemain[k]) i += (c[k] - pCur->aLo[k]) * pCur->aStride[k];
  return pCur->aAcc + i;
}

/*
** The iterator's filter: a block answered by its statistics is merged here and skipped.
** That needs the block wholly inside the box, no remaining dimension varying inside it (one
** output row), exact statistics, and for sums of integers no overflow in them.
*/
static int cvRedKeep(void *pArg, int64_t iChunk, int32_t iBlock) {
  CvRedCursor *pCur = (CvRedCursor *)pArg;
  const int64_t *aShape = caterva_array_shape(pCur->pArr);
  const int32_t *aC = caterva_array_chunkshape(pCur->pArr);
  const int32_t *aB = caterva_array_blockshape(pCur->pArr);
  int64_t aLo[CV_RED_NDIM], aHi[CV_RED_NDIM], n = iChunk;
  int32_t b = iBlock;
  caterva_block_stats st;
  int k, rc;
  for (k = pCur->nDim - 1; k >= 0; k--) {
    int64_t nGrid = (aShape[k] + aC[k] - 1) / aC[k];
    int32_t nBgrid = (aC[k] + aB[k] - 1) / aB[k];
    int64_t cc = n % nGrid, bc = b % nBgrid;
    n /= nGrid;
    b /= nBgrid;
    aLo[k] = cc * aC[k] + bc * aB[k];
    aHi[k] = aLo[k] + aB[k] - 1;
    if (aHi[k] > cc * aC[k] + aC[k] - 1) aHi[k] = cc * aC[k] + aC[k] - 1;
    if (aHi[k] > aShape[k] - 1) aHi[k] = aShape[k] - 1;
    if (aLo[k] < pCur->aSubLo[k] || aHi[k] > pCur->aSubHi[k]) return 1;
    if (pCur->bRemain[k] && aLo[k] != aHi[k]) return 1;
  }
  rc = caterva_array_block_stats(pCur->pCtx, pCur->pArr, iChunk, iBlock, &st);
  if (rc <= 0) return rc < 0 ? rc : 1;
  if (st.sum_overflow && (pCur->eOp == CV_RED_SUM || pCur->eOp == CV_RED_MEAN)) return 1;
  cvAccStats(pCur, cvRedAcc(pCur, aLo), &st);
  pCur->nFromStats++;
  return 0;
}

/* Fold the part [start, stop) of a decompressed block. */
static void cvRedBlock(CvRedCursor *pCur, const caterva_block *pBlk) {
  int nd = pCur->nDim, kLast = nd - 1, k;
  int64_t aIdx[CV_RED_NDIM];
  int64_t nRun;
  if (nd == 0) {
    cvAccRun(pCur, pCur->aAcc, pBlk->data, 1, 0);
    return;
  }
  for (k = 0; k < nd; k++) {
    if (pBlk->start[k] >= pBlk->stop[k]) return;
    aIdx[k] = pBlk->start[k];
  }
  nRun = pBlk->stop[kLast] - pBlk->start[kLast];
  for (;;) {
    int64_t off = 0;
    for (k = 0; k < nd; k++) off = off * pBlk->blockshape[k] + (aIdx[k] - pBlk->origin[k]);
    cvAccRun(pCur, cvRedAcc(pCur, aIdx), pBlk->data + off * pCur->szItem, nRun,
             pCur->bRemain[kLast]);
    for (k = nd - 2; k >= 0; k--) {
      if (++aIdx[k] < pBlk->stop[k]) break;
      aIdx[k] = pBlk->start[k];
    }
    if (k < 0) break;
  }
}

/* Walk the sub-box aSubLo..aSubHi and fill the accumulators. */
static int cvRedComputeBox(CvRedCursor *pCur) {
  caterva_block_iter *pIter = 0;
  const caterva_block *pBlk;
  int64_t aStart[CV_RED_NDIM], aStop[CV_RED_NDIM];
  int k, rc;
  for (k = 0; k < pCur->nDim; k++) {
    aStart[k] = pCur->aSubLo[k];
    aStop[k] = pCur->aSubHi[k] + 1;
  }
  rc = caterva_block_iter_new(pCur->pCtx, pCur->pArr, aStart, aStop, 0, &pIter);
  if (rc >= 0 && caterva_array_has_stats(pCur->pArr) && pCur->nDim > 0)
    caterva_block_iter_set_filter(pIter, cvRedKeep, pCur);
  while (rc >= 0 && (rc = caterva_block_iter_next(pIter, &pBlk)) > 0) cvRedBlock(pCur, pBlk);
  caterva_block_iter_free(pIter);
  return rc;
}

/* Walk the box: for dimensions k and up, every run of consecutive indices of an IN list
** (the whole range without one) in turn. */
static int cvRedCompute(CvRedCursor *pCur, int k) {
  const int64_t *a = pCur->aList[k < CV_RED_NDIM ? k : 0];
  int i = 0, j, rc = 0;
  if (k == pCur->nDim) return cvRedComputeBox(pCur);
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

/* Is index x in the sorted list a[0..n)? */
static int cvRedInList(const int64_t *a, int n, int64_t x) {
  int lo = 0, hi = n - 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (a[mid] == x) return 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid - 1;
  }
  return 0;
}

/* Does output row iRow stand for indices of the IN lists of the kept dimensions? */
static int cvRedRowWanted(const CvRedCursor *pCur, int64_t iRow) {
  int k;
  for (k = 0; k < pCur->nDim; k++) {
    if (pCur->aList[k] && pCur->bRemain[k]) {
      int64_t ext = pCur->aHi[k] - pCur->aLo[k] + 1;
      int64_t x = pCur->aLo[k] + (iRow / pCur->aStride[k]) % ext;
      if (!cvRedInList(pCur->aList[k], pCur->nList[k], x)) return 0;
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
    ** statistics' fingerprints are then checked once per table, not once per call) */
    rc = cvStatementStart((CvVtab *)pFound) == SQLITE_OK ? CATERVA_OK : CATERVA_E_IO;
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
    int bOld = pCur->aList[k] == 0 || cvRedInList(pCur->aList[k], pCur->nList[k], a[i]);
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

static int cvRedFilter(sqlite3_vtab_cursor *pCursor, int idxNum, const char *idxStr, int argc,
                       sqlite3_value **argv) {
  CvRedCursor *pCur = (CvRedCursor *)pCursor;
  const char *zArr = 0, *zOp = 0, *zAxes = 0;
  CvVtab *pFound = 0;
  caterva_dtype_info info;
  char *zErr = 0, **azName;
  int i, k, rc;
  int64_t nOut = 1;
  cvRedReset(pCur);
  if (idxNum != 1 || idxStr == 0 || strlen(idxStr) != 2 * (size_t)argc)
    return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: give arr and op, e.g. "
                                            "caterva_reduce('t', 'mean', 'time')"));
  for (i = 0; i < argc; i++) {
    char c = idxStr[2 * i + 1];
    if (c == 'R') zArr = (const char *)sqlite3_value_text(argv[i]);
    if (c == 'P') zOp = (const char *)sqlite3_value_text(argv[i]);
    if (c == 'X') zAxes = (const char *)sqlite3_value_text(argv[i]);
  }
  pCur->eOp = cvRedParseOp(zOp);
  if (zArr == 0) return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: arr is NULL"));
  if (pCur->eOp == 0)
    return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: unknown op '%s' (count, sum, "
                                            "mean, min, max)", zOp ? zOp : "NULL"));
  rc = cvRedOpenArray(pCur, zArr, &pFound);
  if (rc != SQLITE_OK) return rc;
  pCur->nDim = caterva_array_ndim(pCur->pArr);
  pCur->eType = caterva_array_stats_type(pCur->pArr);
  pCur->szItem = caterva_array_itemsize(pCur->pArr);
  if (pCur->eType == CATERVA_STATS_NONE ||
      caterva_dtype_parse(caterva_array_dtype(pCur->pArr), &info) != CATERVA_OK)
    return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: '%s' has items of dtype %s, "
                                            "which are not numbers", zArr,
                                            caterva_array_dtype(pCur->pArr)
                                                ? caterva_array_dtype(pCur->pArr) : "(none)"));
  pCur->eKind = info.kind;
  azName = cvRedDimNames(pCur, pFound);
  if (azName == 0) return SQLITE_NOMEM;
  rc = cvRedParseAxes(pCur, azName, zAxes, &zErr);
  if (rc == SQLITE_OK) rc = cvRedLabels(pCur, azName);
  pCur->bEmpty = 0;
  if (rc == SQLITE_OK) rc = cvRedBounds(pCur, azName, idxStr, argc, argv);
  cvRedFreeNames(azName, pCur->nDim);
  if (rc != SQLITE_OK) {
    pCur->bEmpty = 1;
    return zErr ? cvRedError(pCur, zErr) : rc;
  }
  if (pCur->bEmpty) return SQLITE_OK;
  for (k = pCur->nDim - 1; k >= 0; k--) {
    pCur->aStride[k] = pCur->bRemain[k] ? nOut : 0;
    if (pCur->bRemain[k]) nOut *= pCur->aHi[k] - pCur->aLo[k] + 1;
  }
  if (nOut > ((int64_t)1 << 31) / (int64_t)sizeof(CvAcc))
    return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: %lld output rows are too many",
                                            (long long)nOut));
  pCur->nOut = nOut;
  pCur->aAcc = sqlite3_malloc64(sizeof(CvAcc) * (sqlite3_uint64)nOut);
  if (pCur->aAcc == 0) return SQLITE_NOMEM;
  memset(pCur->aAcc, 0, sizeof(CvAcc) * (size_t)nOut);
  rc = cvRedCompute(pCur, 0);
  if (rc < 0)
    return cvRedError(pCur, sqlite3_mprintf("caterva_reduce: %s",
                                            caterva_ctx_errmsg(pCur->pCtx)));
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

/* A statistic of the accumulator as an SQL value of the array's kind. */
static void cvRedScalar(sqlite3_context *pCtx, const CvRedCursor *pCur, caterva_scalar v) {
  if (pCur->eType == CATERVA_STATS_FLOAT) sqlite3_result_double(pCtx, v.f);
  else if (pCur->eType == CATERVA_STATS_INT) sqlite3_result_int64(pCtx, v.i);
  else if (v.u > (uint64_t)INT64_MAX) sqlite3_result_double(pCtx, (double)v.u);
  else sqlite3_result_int64(pCtx, (int64_t)v.u);
}

static void cvRedValue(sqlite3_context *pCtx, const CvRedCursor *pCur, const CvAcc *p) {
  int bFloat = pCur->eType == CATERVA_STATS_FLOAT || p->bOver;
  if (pCur->eOp == CV_RED_COUNT) {
    sqlite3_result_int64(pCtx, p->n);
  } else if (p->n == 0) {
    sqlite3_result_null(pCtx);
  } else if (pCur->eOp == CV_RED_SUM) {
    if (bFloat) sqlite3_result_double(pCtx, p->fSum);
    else sqlite3_result_int64(pCtx, p->iSum);
  } else if (pCur->eOp == CV_RED_MEAN) {
    sqlite3_result_double(pCtx, (bFloat ? p->fSum : (double)p->iSum) / (double)p->n);
  } else {
    cvRedScalar(pCtx, pCur, pCur->eOp == CV_RED_MIN ? p->mn : p->mx);
  }
}

static int cvRedColumn(sqlite3_vtab_cursor *pCursor, sqlite3_context *pCtx, int iCol) {
  CvRedCursor *pCur = (CvRedCursor *)pCursor;
  const CvAcc *p = pCur->aAcc + pCur->iRow;
  if (iCol < CV_RED_NDIM || iCol >= CV_RED_INDEX) {
    int k = iCol < CV_RED_NDIM ? iCol : iCol - CV_RED_INDEX;
    if (k < pCur->nDim && pCur->bRemain[k]) {
      int64_t i = pCur->iRow, ext = pCur->aHi[k] - pCur->aLo[k] + 1;
      int64_t iIdx = pCur->aLo[k] + (i / pCur->aStride[k]) % ext;
      if (iCol < CV_RED_NDIM && pCur->bLab[k]) cvLabelsResult(pCtx, &pCur->aLab[k], iIdx);
      else sqlite3_result_int64(pCtx, iIdx);
    }
  } else if (iCol == CV_RED_VALUE) {
    cvRedValue(pCtx, pCur, p);
  } else if (iCol == CV_RED_N) {
    sqlite3_result_int64(pCtx, p->n);
  }
  return SQLITE_OK;
}

static int cvRedRowid(sqlite3_vtab_cursor *pCursor, sqlite3_int64 *pRowid) {
  *pRowid = ((CvRedCursor *)pCursor)->iRow;
  return SQLITE_OK;
}

static sqlite3_module cvReduceModule = {
    /* iVersion    */ 0,
    /* xCreate     */ 0, /* eponymous only: a table-valued function */
    /* xConnect    */ cvRedConnect,
    /* xBestIndex  */ cvRedBestIndex,
    /* xDisconnect */ cvRedDisconnect,
    /* xDestroy    */ 0,
    /* xOpen       */ cvRedOpen,
    /* xClose      */ cvRedClose,
    /* xFilter     */ cvRedFilter,
    /* xNext       */ cvRedNext,
    /* xEof        */ cvRedEof,
    /* xColumn     */ cvRedColumn,
    /* xRowid      */ cvRedRowid,
    /* xUpdate     */ 0,
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

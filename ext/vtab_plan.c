/*
 * vtab_plan.c -- xBestIndex for the `caterva` table: which constraints become bounds of the
 * scanned box, whether the ORDER BY and LIMIT can be left to the cursor, and what the scan
 * costs. The plan goes to xFilter (vtab_cursor.c) as idxNum and idxStr; the encoding is
 * described once, above cvBestIndex.
 *
 * Also here: the bounds themselves (cvRangeApply), which xBestIndex applies to literal
 * values and xFilter to the values it is given, so that both read a constraint the same way.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <math.h>
#include <string.h>

/* ---- bounds --------------------------------------------------------------------------- */

/*
** Narrow the range *p by "dim OP v". Integer bounds are exact; REAL bounds are rounded to
** the integers that satisfy them (dim < 2.5 is dim <= 2, dim = 2.5 matches nothing); text
** that looks like a number counts as that number, as it would against an INTEGER column.
** NULL, other text and blobs match nothing. Comparisons happen before any arithmetic, so
** bounds at the ends of the int64 range cannot overflow.
*/

/* Number of blocks a range [iLo, iHi] of one dimension touches (chunks of nC items cut
** into blocks of nB; the last block of a chunk may overhang it). */
int64_t cvBlocksAlong(int64_t iLo, int64_t iHi, int64_t nC, int64_t nB) {
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
    int bLabel, iCol = cvColumnDim(pTab, pInfo->aOrderBy[i].iColumn, &bLabel);
    /* labels order like indices only when they increase with them */
    if (pInfo->aOrderBy[i].desc || iCol < 0) return 0;
    if (bLabel && pTab->aLab[iCol].bOn && pTab->aLab[iCol].lab.dir < 0) return 0;
    if (cvDimIsConstant(&aD[iCol])) continue;
    while (k < pTab->nDim && cvDimIsConstant(&aD[k])) k++;
    if (k != iCol) return 0;
    k++;
  }
  return 1;
}

/* ---- xBestIndex ----------------------------------------------------------------------- */

/* What xBestIndex builds up: the plan string and what the constraints allow. */
typedef struct CvPlan CvPlan;
struct CvPlan {
  CvDimPlan aD[CV_MAX_DIM];   /* What the constraints say about each dimension */
  char *zPlan;                /* idxStr being written: two characters per xFilter argument */
  int nPlan;                  /* Characters written to zPlan */
  int nArg;                   /* Arguments passed to xFilter so far */
  int iLimit;                 /* aConstraint[] index of a usable LIMIT, or -1 */
  int iOffset;                /* aConstraint[] index of a usable OFFSET, or -1 */
  int bAllUsed;               /* Every constraint but LIMIT and OFFSET is used */
  int bAllLiteral;            /* Every used bound has a value known now (not an IN list) */
  int bValue;                 /* The query reads the value column */
  int bOrdered;               /* Rows come out in the order the ORDER BY asks for */
  int bOrderedScan;           /* ... because the cursor walks the cells in C order */
  sqlite3_int64 nLimitLit;    /* LIMIT when it is a literal and nothing is skipped, else -1 */
  double fValKeep;            /* Fraction of blocks the value constraints keep (vtab_valpred.c) */
  int bValNull, bValNotNull;  /* value IS NULL / IS NOT NULL was used */
};

int cvConstraintOp(int eOp) {
  switch (eOp) {
    case SQLITE_INDEX_CONSTRAINT_EQ:
    case SQLITE_INDEX_CONSTRAINT_IS: return CV_OP_EQ;
    case SQLITE_INDEX_CONSTRAINT_LE: return CV_OP_LE;
    case SQLITE_INDEX_CONSTRAINT_LT: return CV_OP_LT;
    case SQLITE_INDEX_CONSTRAINT_GE: return CV_OP_GE;
    case SQLITE_INDEX_CONSTRAINT_GT: return CV_OP_GT;
    default: return 0;
  }
}

/* Append "op, dimension character" to the plan and pass constraint i to xFilter as its
** next argument. */
static void cvPlanArg(CvPlan *p, sqlite3_index_info *pInfo, int i, int op, int cDim) {
  p->zPlan[p->nPlan++] = (char)op;
  p->zPlan[p->nPlan++] = (char)cDim;
  pInfo->aConstraintUsage[i].argvIndex = ++p->nArg;
}

/* Use constraint i, "dimension k OP value", and note what it says about the dimension: an
** IN list taken whole, a literal bound applied now, or a value known only in xFilter. */
static void cvPlanUseBound(CvVtab *pTab, CvPlan *p, sqlite3_index_info *pInfo, int i, int op,
                           int k, int bLabel) {
  CvDimPlan *pD = &p->aD[k];
  sqlite3_value *pVal = 0;
  if (pInfo->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ && sqlite3_vtab_in(pInfo, i, -1)) {
    sqlite3_vtab_in(pInfo, i, 1);
    op = CV_OP_IN;
    pD->bIn = 1;
    p->bAllLiteral = 0;
  } else if (sqlite3_vtab_rhs_value(pInfo, i, &pVal) == SQLITE_OK && pVal) {
    CvRange r = pD->lit;
    /* a label of the wrong kind is xFilter's error to report; estimate as if unbounded */
    if (cvBoundApply(pTab, k, bLabel, &r, op, pVal) == SQLITE_OK) pD->lit = r;
    if (op == CV_OP_EQ) pD->bEq = 1;
  } else {
    p->bAllLiteral = 0;
    if (op == CV_OP_EQ) pD->bEq = 1;
    else pD->nOpenRange++;
  }
  cvPlanArg(p, pInfo, i, op, (bLabel ? CV_LABEL_DIM : CV_INDEX_DIM) + k);
  pInfo->aConstraintUsage[i].omit = 1;
}

/* A constraint on the value column (vtab_valpred.c): given to xFilter so that blocks whose
** statistics rule it out are skipped, and left for SQLite to check on every row. */
static int cvPlanUseValue(const CvVtab *pTab, sqlite3_index_info *pInfo, int i, CvPlan *p) {
  int op = cvValPlanOp(pTab, pInfo->aConstraint[i].op);
  if (op == 0) return 0;
  p->fValKeep *= cvValPlanKeep(pTab, pInfo, i, op);
  if (op == CV_OP_VALNULL) p->bValNull = 1;
  else if (op == CV_OP_VALNOTNULL) p->bValNotNull = 1;
  else cvPlanArg(p, pInfo, i, op, CV_VALUE_COL);
  p->bAllUsed = 0;
  return 1;
}

/* Collect: use every usable bound on a dimension column, remember a usable LIMIT and
** OFFSET, and note whether anything is left for SQLite to check. */
static void cvPlanCollect(CvVtab *pTab, sqlite3_index_info *pInfo, CvPlan *p) {
  int i, k, bLabel;
  for (k = 0; k < pTab->nDim; k++) {
    memset(&p->aD[k], 0, sizeof(p->aD[k]));
    cvRangeInit(pTab, k, &p->aD[k].lit);
  }
  for (i = 0; i < pInfo->nConstraint; i++) {
    const struct sqlite3_index_constraint *pCons = &pInfo->aConstraint[i];
    int op = cvConstraintOp(pCons->op);
    if (pCons->op == SQLITE_INDEX_CONSTRAINT_LIMIT || pCons->op == SQLITE_INDEX_CONSTRAINT_OFFSET) {
      if (pCons->usable && pCons->op == SQLITE_INDEX_CONSTRAINT_LIMIT) p->iLimit = i;
      if (pCons->usable && pCons->op == SQLITE_INDEX_CONSTRAINT_OFFSET) p->iOffset = i;
      continue;
    }
    if (pCons->usable && pCons->iColumn == pTab->nDim && cvPlanUseValue(pTab, pInfo, i, p))
      continue;
    k = cvColumnDim(pTab, pCons->iColumn, &bLabel);
    if (!pCons->usable || op == 0 || k < 0) {
      p->bAllUsed = 0;
      continue;
    }
    cvPlanUseBound(pTab, p, pInfo, i, op, k, bLabel);
  }
}

/* Order: consume the ORDER BY when the rows come out in its order, as the block order
** gives them or through an ordered scan. */
static void cvPlanOrder(const CvVtab *pTab, sqlite3_index_info *pInfo, CvPlan *p) {
  p->bOrdered = pInfo->nOrderBy > 0 && cvOrderByMatches(pTab, pInfo, p->aD);
  if (p->bOrdered && !cvPlanIsOrdered(pTab, p->aD, p->bAllLiteral)) {
    /* The block order is not C order: walk the cells in C order instead, if the blocks
    ** that walk revisits fit in the cache. */
    p->bOrderedScan = cvOrderedScanFits(pTab, p->aD, p->bValue);
    p->bOrdered = p->bOrderedScan;
  }
  if (p->bOrdered) pInfo->orderByConsumed = 1;
}

/* Limit: the cursor may stop early only if every row it yields is a row of the result:
** nothing left for SQLite to check, and no sort (or DISTINCT) after it. */
static void cvPlanLimit(sqlite3_index_info *pInfo, CvPlan *p) {
  sqlite3_value *pVal = 0;
  if (p->iLimit < 0 || !p->bAllUsed) return;
  if (pInfo->nOrderBy > 0 && (!p->bOrdered || sqlite3_vtab_distinct(pInfo) != 0)) return;
  cvPlanArg(p, pInfo, p->iLimit, CV_OP_LIMIT, CV_NO_DIM);
  if (sqlite3_vtab_rhs_value(pInfo, p->iLimit, &pVal) == SQLITE_OK && pVal &&
      sqlite3_value_type(pVal) == SQLITE_INTEGER && sqlite3_value_int64(pVal) >= 0)
    p->nLimitLit = sqlite3_value_int64(pVal);
  if (p->iOffset >= 0) {
    cvPlanArg(p, pInfo, p->iOffset, CV_OP_OFFSET, CV_NO_DIM);
    p->nLimitLit = -1;  /* the rows skipped count too; keep the estimate simple */
  }
}

/* Rows and blocks the scan visits: the product over the dimensions, one of each when every
** dimension is held by = (the plan is then unique), fewer when a LIMIT stops it early. */
static void cvPlanSize(const CvVtab *pTab, sqlite3_index_info *pInfo, const CvPlan *p,
                       double *pnRow, double *pnBlk) {
  double nRow = 1.0, nBlk = 1.0;
  int k, bAllEq = 1;
  for (k = 0; k < pTab->nDim; k++) {
    double n, b;
    cvDimEstimate(pTab, k, &p->aD[k], &n, &b);
    nRow *= n;
    nBlk *= b;
    if (!p->aD[k].bEq || p->aD[k].bIn) bAllEq = 0;
  }
  if (bAllEq) {
    nRow = 1.0;
    nBlk = 1.0;
    pInfo->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
  }
  /* value constraints: the blocks their statistics rule out are not read */
  nRow *= p->fValKeep;
  nBlk *= p->fValKeep;
  if (p->nLimitLit >= 0 && (double)p->nLimitLit < nRow) {
    /* Stopping early also skips blocks: scale them down with the rows. */
    if (nRow > 0) nBlk = ceil(nBlk * ((double)p->nLimitLit / nRow));
    nRow = (double)p->nLimitLit;
  }
  *pnRow = nRow;
  *pnBlk = nBlk;
}

/* Estimate: rows, plus the blocks touched times the cost of visiting (and, when the value
** column is read, decompressing) one. */
static void cvPlanEstimate(const CvVtab *pTab, sqlite3_index_info *pInfo, const CvPlan *p) {
  double nRow, nBlk, costBlock;
  int kLast = pTab->nDim - 1;
  cvPlanSize(pTab, pInfo, p, &nRow, &nBlk);
  costBlock = CV_COST_BLOCK_VISIT;
  if (p->bValue) costBlock += CV_COST_ITEM_DECODE * (double)pTab->nBlockItem;
  for (int j = 0; j < pTab->nVar; j++) {
    /* a further array's blocks, about as many as the first array's */
    int iCol = pTab->nDim + 1 + j;
    if ((pInfo->colUsed >> (iCol < 63 ? iCol : 63)) & 1)
      costBlock += CV_COST_BLOCK_VISIT + CV_COST_ITEM_DECODE * (double)pTab->aVar[j].nBlockItem;
  }
  /* Among plans that touch the same cells, prefer the one that uses more constraints: it
  ** leaves SQLite less to check. */
  pInfo->estimatedCost = (nRow + nBlk * costBlock + 1.0) * pow(0.9, p->nArg);
  if (p->bOrderedScan && pTab->aBlock[kLast] > 0) {
    /* a cache lookup per run of cells inside one block along the last dimension */
    pInfo->estimatedCost += nRow / pTab->aBlock[kLast] * CV_COST_BLOCK_VISIT;
  }
  pInfo->estimatedRows = nRow < 1.0 ? 1 : (nRow > 9e18 ? (sqlite3_int64)9e18 : (sqlite3_int64)nRow);
}

/*
** xBestIndex.
**
** A plan is a string (idxStr) of two characters per constraint passed to xFilter, in argv
** order: an operator (CV_OP_*: 'A' =, 'B' <=, 'C' <, 'D' >=, 'E' >, 'F' IN list, 'L' LIMIT,
** 'O' OFFSET) and the dimension it applies to: 'a' + dimension when the value is an index,
** '0' + dimension when it is a label (vtab_coord.c), '*' for LIMIT and OFFSET.
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
**
** The steps: collect the constraints, decide the order and the limit, estimate.
*/
int cvBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  CvVtab *pTab = (CvVtab *)pVtab;
  CvPlan plan;
  /* Plan over the array the statement will read (another writer may have changed its shape
  ** or coordinates); with lock_reads the first cursor does it, under the lock; for a remote
  ** array too (its version check is a request: one per statement, at xOpen). Errors are
  ** xOpen's to report. */
  if (!pTab->bLockReads && !pTab->bRemote) (void)cvStatementStart(pTab);
  memset(&plan, 0, sizeof(plan));
  plan.iLimit = plan.iOffset = -1;
  plan.bAllUsed = plan.bAllLiteral = 1;
  plan.nLimitLit = -1;
  plan.fValKeep = 1.0;
  plan.bValue = (pInfo->colUsed >> (pTab->nDim < 63 ? pTab->nDim : 63)) & 1;
  plan.zPlan = sqlite3_malloc64((sqlite3_uint64)pInfo->nConstraint * 2 + 1);
  if (plan.zPlan == 0) return SQLITE_NOMEM;
  cvPlanCollect(pTab, pInfo, &plan);
  cvPlanOrder(pTab, pInfo, &plan);
  cvPlanLimit(pInfo, &plan);
  plan.zPlan[plan.nPlan] = 0;
  cvPlanEstimate(pTab, pInfo, &plan);
  sqlite3_free(pTab->base.zErrMsg); /* left by a label of the wrong kind: xFilter reports it */
  pTab->base.zErrMsg = 0;
  pInfo->idxNum = (plan.bValue ? CV_PLAN_VALUE : 0) | (plan.bOrderedScan ? CV_PLAN_ORDERED : 0) |
                  (plan.bValNull ? CV_PLAN_ISNULL : 0) | (plan.bValNotNull ? CV_PLAN_NOTNULL : 0);
  pInfo->idxStr = plan.zPlan;
  pInfo->needToFreeIdxStr = 1;
  return SQLITE_OK;
}

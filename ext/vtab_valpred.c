/*
 * vtab_valpred.c -- constraints on the value column: blocks whose statistics prove that no cell
 * can match are skipped without being decompressed.
 *
 * xBestIndex (vtab_plan.c) hands every usable <, <=, >, >=, = on the value column to xFilter
 * when the array keeps block statistics (core/blockstats.c), in idxStr as the operator and
 * the column character CV_VALUE_COL ('~'), with omit left 0: SQLite still checks every row,
 * so the result is exact whatever the statistics say, and they only decide which blocks
 * are read. IS NULL and IS NOT NULL have no operand: they travel as idxNum flags
 * (CV_PLAN_ISNULL, CV_PLAN_NOTNULL). BETWEEN reaches xBestIndex as >= and <=.
 *
 * xFilter (vtab_cursor.c) collects the bounds with cvValAdd and gives the block iterator the
 * filter cvValKeep: a block is visited unless its statistics are known and one of the
 * constraints cannot hold for any of its cells (caterva_block_stats_may_match compares as
 * SQLite compares a REAL or INTEGER column with a number; NaN cells are NULL and match no
 * comparison). Bounds that are not numbers (other text, blobs, NULL) prune nothing.
 *
 * Estimates: for a literal bound, the fraction of blocks whose statistics allow a match
 * (caterva_array_stats_selectivity); otherwise a guess. Rows and blocks of the plan are
 * scaled by it, so a box plus a selective value predicate, or a join probing the table,
 * is costed by the blocks it will really read.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <string.h>

#define CV_VAL_GUESS_RANGE 0.5   /* blocks kept by a range bound known only in xFilter */
#define CV_VAL_GUESS_EQ    0.1   /* ... by an equality */

/* The library's comparison for a plan operator. */
static int cvValCmp(int op) {
  switch (op) {
    case CV_OP_EQ: return CATERVA_CMP_EQ;
    case CV_OP_LT: return CATERVA_CMP_LT;
    case CV_OP_LE: return CATERVA_CMP_LE;
    case CV_OP_GT: return CATERVA_CMP_GT;
    case CV_OP_GE: return CATERVA_CMP_GE;
    default: return 0;
  }
}

/* A numeric SQL value as a bound; 0 when it is not a number. Text that looks like a
** number counts as that number, as the value column's numeric affinity makes SQLite compare
** it (the same rule cvRangeApply applies to dimension bounds). */
static int cvValBound(sqlite3_value *pVal, caterva_bound *pB) {
  int eType = sqlite3_value_numeric_type(pVal);
  memset(pB, 0, sizeof(*pB));
  if (eType == SQLITE_INTEGER) {
    pB->is_int = 1;
    pB->i = sqlite3_value_int64(pVal);
    return 1;
  }
  if (eType == SQLITE_FLOAT) {
    pB->f = sqlite3_value_double(pVal);
    return pB->f == pB->f;
  }
  return 0;
}

/* Plans do not depend on whether the statistics exist yet: a statement prepared before
** caterva_build_stats (SQLite caches prepared statements) uses them once they do. */
int cvValUsable(const CvVtab *pTab) {
  return pTab->pArr != 0 && caterva_array_stats_type(pTab->pArr) != CATERVA_STATS_NONE;
}

int cvValPlanOp(const CvVtab *pTab, int eOp) {
  if (!cvValUsable(pTab)) return 0;
  switch (eOp) {
    case SQLITE_INDEX_CONSTRAINT_EQ: return CV_OP_EQ;
    case SQLITE_INDEX_CONSTRAINT_LT: return CV_OP_LT;
    case SQLITE_INDEX_CONSTRAINT_LE: return CV_OP_LE;
    case SQLITE_INDEX_CONSTRAINT_GT: return CV_OP_GT;
    case SQLITE_INDEX_CONSTRAINT_GE: return CV_OP_GE;
    case SQLITE_INDEX_CONSTRAINT_ISNULL: return CV_OP_VALNULL;
    case SQLITE_INDEX_CONSTRAINT_ISNOTNULL: return CV_OP_VALNOTNULL;
    default: return 0;
  }
}

double cvValPlanKeep(const CvVtab *pTab, sqlite3_index_info *pInfo, int iCons, int op) {
  sqlite3_value *pVal = 0;
  caterva_bound b;
  if (op == CV_OP_VALNULL)
    return caterva_array_stats_selectivity(pTab->pArr, CATERVA_CMP_ISNULL, 0);
  if (op == CV_OP_VALNOTNULL)
    return caterva_array_stats_selectivity(pTab->pArr, CATERVA_CMP_NOTNULL, 0);
  if (sqlite3_vtab_rhs_value(pInfo, iCons, &pVal) == SQLITE_OK && pVal) {
    if (!cvValBound(pVal, &b)) return 1.0;
    return caterva_array_stats_selectivity(pTab->pArr, cvValCmp(op), &b);
  }
  return op == CV_OP_EQ ? CV_VAL_GUESS_EQ : CV_VAL_GUESS_RANGE;
}

void cvValReset(CvValPred *p) {
  memset(p, 0, sizeof(*p));
}

void cvValAdd(CvValPred *p, int op, sqlite3_value *pVal) {
  if (p->nOp >= CV_MAX_VALPRED || !cvValBound(pVal, &p->aBound[p->nOp])) return;
  p->aOp[p->nOp++] = cvValCmp(op);
}

int cvValActive(const CvValPred *p) {
  return p->nOp > 0 || p->bIsNull || p->bNotNull;
}

/* The iterator's filter: 0 when the block's statistics prove that no cell matches. */
static int cvValKeep(void *pArg, int64_t iChunk, int32_t iBlock) {
  CvValPred *p = (CvValPred *)pArg;
  caterva_block_stats st;
  int i, rc = caterva_array_block_stats(p->pCtx, p->pArr, iChunk, iBlock, &st);
  if (rc < 0) return rc;   /* an error stops the scan */
  if (rc == 0) return 1;   /* no statistics to trust (none, or written for other bytes): keep */
  if (p->bIsNull && !caterva_block_stats_may_match(p->eType, &st, CATERVA_CMP_ISNULL, 0))
    return 0;
  if (p->bNotNull && !caterva_block_stats_may_match(p->eType, &st, CATERVA_CMP_NOTNULL, 0))
    return 0;
  for (i = 0; i < p->nOp; i++)
    if (!caterva_block_stats_may_match(p->eType, &st, p->aOp[i], &p->aBound[i])) return 0;
  p->nKept++;
  return 1;
}

/* The filter's look-ahead (remote arrays): the chunks it will ask about, checked together. */
static int cvValAhead(void *pArg, const int64_t *aChunk, int nChunk) {
  CvValPred *p = (CvValPred *)pArg;
  return caterva_array_block_stats_ahead(p->pCtx, p->pArr, aChunk, nChunk);
}

void cvValAttach(CvValPred *p, CvVtab *pTab, caterva_block_iter *pIter) {
  if (!cvValActive(p) || !caterva_array_has_stats(pTab->pArr)) return;
  p->pCtx = pTab->pConn->pCtx;
  p->pArr = pTab->pArr;
  p->eType = caterva_array_stats_type(pTab->pArr);
  caterva_block_iter_set_filter(pIter, cvValKeep, p);
  caterva_block_iter_set_filter_ahead(pIter, cvValAhead);
  caterva_block_iter_set_filter_by_value(pIter, 1);
}

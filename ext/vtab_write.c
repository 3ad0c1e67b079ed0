/*
 * vtab_write.c -- xUpdate of the `caterva` table: INSERT, UPDATE and DELETE as cell writes.
 *
 *   INSERT INTO t(d0, ..., value) VALUES (...)   sets the cell (every cell of an array
 *                                                exists: INSERT is an upsert); a first
 *                                                coordinate at or past the extent grows the
 *                                                array along it (NetCDF's unlimited
 *                                                dimension), new cells taking the fill value
 *   UPDATE t SET value = ... WHERE ...           sets the cells selected; the WHERE clause is
 *                                                planned like a SELECT's (vtab_plan.c), so only
 *                                                the chunks it touches are read
 *   DELETE FROM t WHERE ...                      resets the cells to the fill value (NULL
 *                                                for float arrays)
 *
 * Changing a dimension column or the rowid, a coordinate that is NULL, not an integer, or
 * out of range (other than growth along the first dimension), and a value the dtype cannot
 * hold are errors; the statement then fails and SQLite rolls it back (vtab_txn.c). Cells
 * go through the array's write-back cache (core/wcache.c).
 *
 * A table over several arrays writes each value column to its own array at the same cell:
 * INSERT all of them, UPDATE those it sets (xColumn reports the others unchanged, and their
 * arrays are not written), DELETE every array's fill; growth grows every array. They commit
 * as one (vtab_vars_txn.c).
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <math.h>
#include <string.h>

/* Growth of one statement is limited so that a typo cannot create millions of chunks. */
#define CV_MAX_GROW_CHUNKS (1 << 20)

/* ---- coordinates ---------------------------------------------------------------------- */

/* Coordinates of the cell with C-order linear index iRow. */
static int cvRowidCoords(CvVtab *pTab, sqlite3_int64 iRow, int64_t *aCoord) {
  int k;
  int64_t n = 1;
  for (k = 0; k < pTab->nDim; k++) n *= pTab->aShape[k];
  if (iRow < 0 || iRow >= n) {
    cvSetError(pTab, "caterva: no cell with rowid %lld", (long long)iRow);
    return SQLITE_ERROR;
  }
  for (k = 0; k < pTab->nDim; k++) {
    aCoord[k] = pTab->aArrStride[k] ? iRow / pTab->aArrStride[k] : 0;
    iRow -= aCoord[k] * pTab->aArrStride[k];
  }
  return SQLITE_OK;
}

/* Read coordinate k from pVal: a non-negative integer (an integral REAL is accepted). */
static int cvCoordValue(CvVtab *pTab, int k, sqlite3_value *pVal, int64_t *piOut) {
  int eType = sqlite3_value_type(pVal);
  if (eType == SQLITE_INTEGER && (*piOut = sqlite3_value_int64(pVal)) >= 0) return SQLITE_OK;
  if (eType == SQLITE_NULL) {
    cvSetError(pTab, "caterva: NULL coordinate for %s", pTab->azCol[k]);
    return SQLITE_CONSTRAINT;
  }
  (void)cvNumericText(pVal, 1); /* '7' and ' 7 ' as a plain INTEGER column takes them */
  if (cvExactInt(pVal, piOut) || *piOut < 0) {
    cvSetError(pTab, "caterva: coordinate %s = '%s' is not a non-negative integer",
               pTab->azCol[k], sqlite3_value_text(pVal));
    return SQLITE_MISMATCH;
  }
  return SQLITE_OK;
}

/* Grow the first dimension to hold coordinate iNew. */
static int cvGrow(CvVtab *pTab, int64_t iNew) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  int64_t aShape[CV_MAX_DIM], nOld = 1, nNew = 1;
  int k, r;
  for (k = 0; k < pTab->nDim; k++) aShape[k] = pTab->aShape[k];
  aShape[0] = iNew + 1;
  for (k = 0; k < pTab->nDim; k++) {
    int64_t g0, g1;
    if (pTab->aChunk[k] <= 0) { /* refused by xBegin already (cat_array_check_writable) */
      cvSetError(pTab, "caterva: dimension %s has a chunk extent of 0", pTab->azCol[k]);
      return SQLITE_READONLY;
    }
    g0 = (pTab->aShape[k] + pTab->aChunk[k] - 1) / pTab->aChunk[k];
    g1 = (aShape[k] + pTab->aChunk[k] - 1) / pTab->aChunk[k];
    nOld *= g0;
    nNew = nNew > INT64_MAX / (g1 ? g1 : 1) ? INT64_MAX : nNew * g1;
  }
  if (nNew - nOld > CV_MAX_GROW_CHUNKS) {
    cvSetError(pTab, "caterva: coordinate %s = %lld would add %lld chunks to the array "
                     "(at most %d at a time)", pTab->azCol[0], (long long)iNew,
               (long long)(nNew - nOld), CV_MAX_GROW_CHUNKS);
    return SQLITE_CONSTRAINT;
  }
  r = caterva_array_resize(pCtx, pTab->pArr, aShape);
  if (r < 0) return cvLibError(pTab, r);
  pTab->bWrote = 1;
  cvInitGeometry(pTab);
  return cvVarsGrow(pTab); /* a table over several arrays grows them all */
}

/* Index k of an INSERT: from the dimension column (a label, or an index when the dimension
** has no labels) or from the hidden <dim>_index column; both given must agree. */
static int cvInsertCoord(CvVtab *pTab, int k, sqlite3_value *pCol, sqlite3_value *pIdx,
                         int64_t *piOut) {
  int64_t iIdx;
  int rc, bIdx = sqlite3_value_type(pIdx) != SQLITE_NULL;
  if (bIdx && sqlite3_value_type(pCol) == SQLITE_NULL) return cvCoordValue(pTab, k, pIdx, piOut);
  rc = pTab->aLab[k].bOn ? cvLabelIndexOf(pTab, k, pCol, piOut)
                         : cvCoordValue(pTab, k, pCol, piOut);
  if (rc != SQLITE_OK || !bIdx) return rc;
  rc = cvCoordValue(pTab, k, pIdx, &iIdx);
  if (rc == SQLITE_OK && iIdx != *piOut) {
    cvSetError(pTab, "caterva: %s and %s_index name different cells", pTab->azCol[k],
               pTab->azCol[k]);
    rc = SQLITE_CONSTRAINT;
  }
  return rc;
}

/* The common INSERT of a load: every coordinate a plain INTEGER index inside the shape on a
** dimension without labels, no hidden index column given. 1 with aCoord set; 0 when the
** general path must decide (labels, text, growth, errors): it then reads everything again. */
static int cvInsertFast(const CvVtab *pTab, sqlite3_value **argv, int64_t *aCoord) {
  sqlite3_value **apIdx = &argv[3 + pTab->nDim + pTab->nVar];
  int k;
  for (k = 0; k < pTab->nDim; k++) {
    int64_t c;
    if (pTab->aLab[k].bOn || sqlite3_value_type(argv[2 + k]) != SQLITE_INTEGER) return 0;
    c = sqlite3_value_int64(argv[2 + k]);
    if (c < 0 || c >= pTab->aShape[k] || sqlite3_value_type(apIdx[k]) != SQLITE_NULL) return 0;
    aCoord[k] = c;
  }
  return 1;
}

/* Coordinates of an INSERT (argv[2..2+nDim), the hidden index columns after the value),
** growing the first dimension if needed. */
static int cvInsertCoords(CvVtab *pTab, sqlite3_value **argv, int64_t *aCoord) {
  int k, rc;
  if (cvInsertFast(pTab, argv, aCoord)) return SQLITE_OK;
  for (k = 0; k < pTab->nDim; k++) {
    rc = cvInsertCoord(pTab, k, argv[2 + k], argv[3 + pTab->nDim + pTab->nVar + k], &aCoord[k]);
    if (rc != SQLITE_OK) return rc;
  }
  for (k = 1; k < pTab->nDim; k++) {
    if (aCoord[k] >= pTab->aShape[k]) {
      cvSetError(pTab, "caterva: coordinate %s = %lld out of range 0..%lld (only %s grows)",
                 pTab->azCol[k], (long long)aCoord[k], (long long)pTab->aShape[k] - 1,
                 pTab->azCol[0]);
      return SQLITE_CONSTRAINT;
    }
  }
  if (pTab->nDim > 0 && aCoord[0] >= pTab->aShape[0]) return cvGrow(pTab, aCoord[0]);
  return SQLITE_OK;
}

/* An UPDATE must leave the rowid and the dimension columns as they are. */
static int cvUpdateCoords(CvVtab *pTab, sqlite3_value **argv, int64_t *aCoord) {
  int k, rc;
  if (sqlite3_value_type(argv[1]) != SQLITE_INTEGER ||
      sqlite3_value_int64(argv[1]) != sqlite3_value_int64(argv[0])) {
    cvSetError(pTab, "caterva: the rowid of a cell cannot change");
    return SQLITE_CONSTRAINT;
  }
  rc = cvRowidCoords(pTab, sqlite3_value_int64(argv[0]), aCoord);
  for (k = 0; k < pTab->nDim && rc == SQLITE_OK; k++) {
    sqlite3_value *pCol = argv[2 + k], *pIdx = argv[3 + pTab->nDim + pTab->nVar + k];
    int64_t v;
    int bMoved = 0;
    if (!sqlite3_value_nochange(pIdx)) bMoved = cvExactInt(pIdx, &v) || v != aCoord[k];
    if (!sqlite3_value_nochange(pCol)) {
      if (pTab->aLab[k].bOn) {
        double key;
        char *zErr = 0;
        bMoved |= cvLabelKey(pTab, k, pCol, &key, &zErr) != 0 ||
                  key != caterva_labels_key(&pTab->aLab[k].lab, aCoord[k]);
        sqlite3_free(zErr);
      } else {
        bMoved |= cvExactInt(pCol, &v) || v != aCoord[k];
      }
    }
    if (bMoved) {
      cvSetError(pTab, "caterva: dimension column %s cannot change (cells do not move)",
                 pTab->azCol[k]);
      rc = SQLITE_CONSTRAINT;
    }
  }
  return rc;
}

/* The value column of further array i at aCoord: pVal converted (nothing when an UPDATE
** leaves the column unchanged), or the array's fill for a DELETE (pVal NULL). */
static int cvVarWrite(CvVtab *pTab, int i, sqlite3_value *pVal, const int64_t *aCoord) {
  CvVar *p = &pTab->aVar[i];
  uint8_t aItem[256];
  const uint8_t *pItem = p->aFill;
  char *zErr = 0;
  int r;
  if (pVal) {
    if (sqlite3_value_nochange(pVal)) return SQLITE_OK;
    if (cvValueToItem(&p->item, pVal, aItem, &zErr)) {
      cvSetError(pTab, "caterva: %s (the value column of '%s')", zErr ? zErr : "out of memory",
                 p->zPath);
      sqlite3_free(zErr);
      return SQLITE_MISMATCH;
    }
    pItem = aItem;
  }
  r = caterva_array_set_item(pTab->pConn->pCtx, p->pArr, aCoord, pItem);
  if (r < 0) return cvLibError(pTab, r);
  p->bWrote = 1;
  return SQLITE_OK;
}

int cvUpdate(sqlite3_vtab *pVtab, int argc, sqlite3_value **argv, sqlite3_int64 *pRowid) {
  CvVtab *pTab = (CvVtab *)pVtab;
  int64_t aCoord[CV_MAX_DIM];
  uint8_t aItem[256];
  const uint8_t *pItem = aItem;
  char *zErr = 0;
  int rc = SQLITE_OK, r, k, bValue = 1;
  if (pTab->bRange) {
    cvSetError(pTab, "caterva: table restricted with range= is read-only");
    return SQLITE_READONLY;
  }
  if (!pTab->bInTxn) rc = cvTxnBegin(pVtab);
  if (rc != SQLITE_OK) return rc;
  if (argc == 1) {                                     /* DELETE */
    rc = cvRowidCoords(pTab, sqlite3_value_int64(argv[0]), aCoord);
    pItem = pTab->aFill;
  } else {
    int bInsert = sqlite3_value_type(argv[0]) == SQLITE_NULL;
    /* a table over several arrays: a value column the UPDATE does not set is unchanged */
    bValue = bInsert || !sqlite3_value_nochange(argv[2 + pTab->nDim]);
    if (bValue && cvValueToItem(&pTab->item, argv[2 + pTab->nDim], aItem, &zErr)) {
      cvSetError(pTab, "caterva: %s (column %s)", zErr ? zErr : "out of memory",
                 pTab->azCol[pTab->nDim]);
      sqlite3_free(zErr);
      return SQLITE_MISMATCH;
    }
    if (bInsert) {
      rc = cvInsertCoords(pTab, argv, aCoord);
      if (rc == SQLITE_OK) {
        *pRowid = 0;
        for (k = 0; k < pTab->nDim; k++) *pRowid += aCoord[k] * pTab->aArrStride[k];
      }
    } else {                                           /* UPDATE */
      rc = cvUpdateCoords(pTab, argv, aCoord);
    }
  }
  if (rc != SQLITE_OK) return rc;
  if (bValue) {
    r = caterva_array_set_item(pTab->pConn->pCtx, pTab->pArr, aCoord, pItem);
    if (r < 0) return cvLibError(pTab, r);
    pTab->bWrote = 1;
  }
  pTab->bDirty = 1;
  for (k = 0; k < pTab->nVar && rc == SQLITE_OK; k++)
    rc = cvVarWrite(pTab, k, argc == 1 ? 0 : argv[3 + pTab->nDim + k], aCoord);
  return rc;
}

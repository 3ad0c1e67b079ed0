/*
 * vtab_cursor.c -- scanning a `caterva` table: xOpen, xFilter, xNext, xColumn and the rest.
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
 * xBestIndex (vtab_plan.c) chooses between the first two and the third (CV_PLAN_ORDERED);
 * xFilter chooses between the first two once it knows the box (cvUseCache).
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- opening and closing -------------------------------------------------------------- */

int cvCursorOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  CvCursor *pCur;
  int rc = cvStatementStart((CvVtab *)pVtab);
  if (rc != SQLITE_OK) return rc;
  CvVtab *pTab = (CvVtab *)pVtab;
  pCur = sqlite3_malloc(sizeof(*pCur));
  if (pCur == 0) return SQLITE_NOMEM;
  memset(pCur, 0, sizeof(*pCur));
  if (pTab->nVar > 0) {
    pCur->aVarPos = sqlite3_malloc64(sizeof(CvVarPos) * (sqlite3_uint64)pTab->nVar);
    if (pCur->aVarPos == 0) {
      sqlite3_free(pCur);
      return SQLITE_NOMEM;
    }
    memset(pCur->aVarPos, 0, sizeof(CvVarPos) * (size_t)pTab->nVar);
    for (int i = 0; i < pTab->nVar; i++) pCur->aVarPos[i].iChunk = pCur->aVarPos[i].iPrivChunk = -1;
  }
  pTab->nCursor++;
  pCur->bEof = 1;
  pCur->iValueCol = -1; /* until xFilter */
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
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  int k;
  cvReleaseBlock(pCur);
  for (k = 0; pCur->aVarPos && k < pTab->nVar; k++) {
    cvVarPosRelease(&pTab->aVar[k], &pCur->aVarPos[k]);
    pCur->aVarPos[k].iPrivChunk = -1; /* the arrays may have been read again */
  }
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
  pCur->nFast = 0;
}

int cvCursorClose(sqlite3_vtab_cursor *pCursor) {
  CvCursor *pCur = (CvCursor *)pCursor;
  CvVtab *pTab = (CvVtab *)pCursor->pVtab;
  cvResetScan(pCur);
  sqlite3_free(pCur->aPriv);
  for (int i = 0; pCur->aVarPos && i < pTab->nVar; i++) sqlite3_free(pCur->aVarPos[i].aPriv);
  sqlite3_free(pCur->aVarPos);
  sqlite3_free(pCur);
  if (--pTab->nCursor == 0) {
    cvFreeRetired(pTab);
    cvReleaseMaps(pTab);
    if (pTab->bReadLocked) {
      caterva_lock_release(pTab->pLock);
      pTab->bReadLocked = 0;
    }
  }
  return SQLITE_OK;
}

/* ---- starting a scan: bounds, IN lists, runs ----------------------------------------- */

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
static int cvCollectIn(CvCursor *pCur, int k, int bLabel, sqlite3_value *pList) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  int64_t *a = 0, *aOld = pCur->aList[k];
  int n = 0, nAlloc = 0, rc, i, j, nOld = pCur->nList[k];
  sqlite3_value *pVal = 0;
  rc = sqlite3_vtab_in_first(pList, &pVal);
  if (rc == SQLITE_ERROR) {
    /* Not a list after all (SQLite declined all-at-once IN): a single value, which
    ** narrows the bounds; cvBuildRuns intersects the bounds with the lists. */
    return cvBoundApply(pTab, k, bLabel, &pCur->aBound[k], CV_OP_EQ, pList);
  }
  for (; rc == SQLITE_OK && pVal;
       rc = sqlite3_vtab_in_next(pList, &pVal)) {
    CvRange r;
    r.iLo = 0;
    r.iHi = pTab->aShape[k] - 1;
    rc = cvBoundApply(pTab, k, bLabel, &r, CV_OP_EQ, pVal);
    if (rc != SQLITE_OK) break;
    for (int64_t x = r.iLo; x <= r.iHi; x++) { /* labels: one index, or none */
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
      a[n++] = x;
    }
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

/* ---- moving through the boxes and blocks --------------------------------------------- */

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
  pCur->iPrefillRow = -1;
  /* Scans that read values straight from the iterator use every block they visit: unless
  ** a LIMIT may stop them early, the next batch is decompressed while this one is read. */
  rc = caterva_block_iter_new(pTab->pConn->pCtx, pTab->pArr, aStart, aStop,
                              !pCur->bValue || pCur->bCached ? CATERVA_ITER_NODATA
                              : pCur->nLeft < 0              ? CATERVA_ITER_READAHEAD
                                                             : 0,
                              &pCur->pIter);
  if (rc >= 0) cvValAttach(&pCur->val, pTab, pCur->pIter);
  /* blocks read one at a time through the block cache (a remote array): fetch the box's
  ** blocks together first, in a few waves instead of two per block */
  if (rc >= 0 && pTab->bRemote && pCur->bValue && pCur->bCached)
    rc = caterva_block_iter_prefetch(pCur->pIter, pTab->szCache);
  /* the box may be read from the table's block cache alone: a pending version check first */
  if (rc >= 0 && pTab->bRemote && pCur->bCached &&
      (rc = caterva_schunk_verify(pTab->pConn->pCtx, caterva_array_schunk(pTab->pArr))) > 0)
    rc = CATERVA_E_CHANGED; /* the message is set: cvCursorFilter opens it again */
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

/*
** Prefill: a scan through the cache that misses a block decodes, at once and on the
** context's threads, every block of the box's current slab -- its part in one row of chunks
** along dimension 0, a run of the iterator's chunk order -- that the cache lacks, into
** entries claimed for them, instead of one block at a time on SQLite's thread as the rows
** reach them. Read-ahead is bounded by a slab (and by the cache: no entry, no block).
*/
typedef struct CvPrefill {
  CvCache *pCache;
  CvCacheEntry **apE;                 /* Claimed entries, in visiting order */
  int64_t nE, nAlloc;
  int bFull;                          /* The cache could not take one more */
} CvPrefill;

/* caterva_block_iter filter: visit the blocks the cache lacks, each with a claimed entry. */
static int cvPrefillKeep(void *pArg, int64_t iChunk, int32_t iBlock) {
  CvPrefill *p = (CvPrefill *)pArg;
  CvCacheEntry *pE;
  if (p->bFull) return 0;
  pE = cvCacheLookup(p->pCache, iChunk, iBlock);
  if (pE) {
    cvCacheUnpin(p->pCache, pE);
    return 0;
  }
  if (p->nE == p->nAlloc) {
    int64_t n = p->nAlloc ? 2 * p->nAlloc : 64;
    CvCacheEntry **a = sqlite3_realloc64(p->apE, (sqlite3_uint64)n * sizeof(*a));
    if (a == 0) return (p->bFull = 1, 0);
    p->apE = a;
    p->nAlloc = n;
  }
  pE = cvCacheClaim(p->pCache, iChunk, iBlock);
  if (pE == 0) return (p->bFull = 1, 0);
  p->apE[p->nE++] = pE;
  return 1;
}

/* caterva_block_visit_fn: a decoded block into its entry (on any worker). */
static int cvPrefillVisit(void *pArg, const caterva_block *pBlk, int64_t iSeq, int iWorker) {
  CvPrefill *p = (CvPrefill *)pArg;
  (void)iWorker;
  memcpy(p->apE[iSeq]->aData, pBlk->data, (size_t)p->pCache->szBlock);
  return 0;
}

/* Decode the missing blocks of the current block's slab into the cache. Errors are left to
** the block's own read, which meets them again and reports them. */
static void cvPrefill(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  CvPrefill p = {&pTab->cache, 0, 0, 0, 0};
  caterva_block_iter *pIter = 0;
  int64_t aStart[CV_MAX_DIM], aStop[CV_MAX_DIM], iRow = pCur->aCoord[0] / pTab->aChunk[0];
  int64_t i;
  int k, rc;
  if (iRow == pCur->iPrefillRow) return;
  pCur->iPrefillRow = iRow;
  for (k = 0; k < pTab->nDim; k++) {
    const CvRange *pR = &pCur->aRun[k][pCur->iRun[k]];
    aStart[k] = pR->iLo;
    aStop[k] = pR->iHi + 1;
  }
  if (aStart[0] < iRow * pTab->aChunk[0]) aStart[0] = iRow * pTab->aChunk[0];
  if (aStop[0] > (iRow + 1) * pTab->aChunk[0]) aStop[0] = (iRow + 1) * pTab->aChunk[0];
  rc = caterva_block_iter_new(pTab->pConn->pCtx, pTab->pArr, aStart, aStop, 0, &pIter);
  if (rc >= 0) {
    caterva_block_iter_set_filter(pIter, cvPrefillKeep, &p);
    rc = caterva_block_iter_visit(pIter, 0, cvPrefillVisit, 0, &p);
  }
  caterva_block_iter_free(pIter);
  for (i = 0; i < p.nE; i++) {
    if (rc >= 0) cvCacheCommit(&pTab->cache, p.apE[i]);
    cvCacheUnpin(&pTab->cache, p.apE[i]);
  }
  sqlite3_free(p.apE);
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
  if (pE == 0 && pCur->bPrefill && pTab->nDim > 0) {
    cvPrefill(pCur);
    pE = cvCacheLookup(&pTab->cache, pCur->iChunk, pCur->iBlock);
  }
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
    int64_t nPriv = pTab->nBlockItem * pTab->item.szItem;
    if (pCur->aPriv == 0 || pCur->nPriv != nPriv) { /* blocks change size with the array */
      sqlite3_free(pCur->aPriv);
      pCur->nPriv = 0;
      pCur->aPriv = sqlite3_malloc64((sqlite3_uint64)nPriv);
      if (pCur->aPriv == 0) return SQLITE_NOMEM;
      pCur->nPriv = nPriv;
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

/*
** After the cursor moved to a cell by the general path (xFilter, or a step that left a run):
** how many further cells xNext reaches by incrementing the last coordinate alone. They are
** the rest of the run along the last dimension inside the current block and box (for ordered
** scans, up to iSegEnd), and no more than the row budget allows, which is charged for them
** now: the fast steps then need not count.
*/
static void cvSetFast(CvCursor *pCur) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  int kLast = pTab->nDim - 1;
  int64_t n = 0;
  if (!pCur->bEof && kLast >= 0) {
    int64_t iEnd = pCur->bOrdered ? pCur->iSegEnd : pCur->pBlk->stop[kLast] - 1;
    n = iEnd - pCur->aCoord[kLast];
    if (pCur->nLeft > 0) {
      if (n > pCur->nLeft - 1) n = pCur->nLeft - 1;
      pCur->nLeft -= n;
    }
    if (n < 0) n = 0;
    pCur->iLastEnd = pCur->aCoord[kLast] + n;
  }
  pCur->iOffEnd = pCur->iOff + n;
  pCur->nFast = n;
}

/* Write the current cell's last coordinate and item offset back from the run's end and the
** steps left (xNext's fast steps leave them behind). */
static void cvSyncRun(CvCursor *pCur) {
  if (pCur->bEof || pCur->kLast < 0) return;
  pCur->aCoord[pCur->kLast] = pCur->iLastEnd - pCur->nFast;
  pCur->iOff = pCur->iOffEnd - pCur->nFast;
}

/* The general path of xNext: across dimensions, blocks and boxes, with the row budget. */
static CV_NOINLINE int cvCursorNextSlow(CvCursor *pCur) {
  int rc;
  if (pCur->bBcolz) return cvBzNext(&pCur->base);
  if (pCur->bEof) return SQLITE_OK;
  cvSyncRun(pCur);
  if (pCur->nLeft > 0 && --pCur->nLeft == 0) {
    pCur->bEof = 1;
    return SQLITE_OK;
  }
  rc = cvNextRow(pCur);
  if (rc == SQLITE_OK) cvSetFast(pCur);
  return rc;
}

/*
** xNext of the module, for both kinds of cursor (CV_CURSOR_HEAD). Inside a run a step is one
** decrement: the cell's last coordinate and item offset follow from nFast (cvSyncRun; the last
** dimension's stride inside a block is 1).
*/
int cvCursorNext(sqlite3_vtab_cursor *pCursor) {
  CvCursor *pCur = (CvCursor *)pCursor;
  if (pCur->nFast > 0) {
    pCur->nFast--;
    return SQLITE_OK;
  }
  return cvCursorNextSlow(pCur);
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
** xFilter. idxStr is the plan of cvBestIndex: two characters per argument, an operator
** and a dimension ('a' + k) or '*'; vtab_plan.c describes it, above cvBestIndex. Bounds narrow
** each dimension's range [0, extent - 1] (or range=; cvRangeApply), IN lists become sorted runs, and
** the scan starts at the first cell of the first block (or, for an ordered scan, at the
** first cell of the box).
*/
static int cvFilter(sqlite3_vtab_cursor *pCursor, int idxNum, const char *idxStr, int argc,
                    sqlite3_value **argv) {
  CvCursor *pCur = (CvCursor *)pCursor;
  CvVtab *pTab = (CvVtab *)pCursor->pVtab;
  sqlite3_value *pLimit = 0, *pOffset = 0;
  int i, k, rc = SQLITE_OK, bEmpty = 0;
  size_t nPlan = idxStr ? strlen(idxStr) : 0;

  cvResetScan(pCur);
  pCur->iPrivChunk = -1; /* the array may have been written since */
  rc = cvPrepareRead(pTab);
  if (rc != SQLITE_OK) return rc;
  pCur->bValue = (idxNum & CV_PLAN_VALUE) != 0;
  pCur->kLast = pTab->nDim - 1;
  pCur->iValueCol = pTab->nDim;
  pCur->eFast = pTab->eFast;
  pCur->bOrdered = 0;
  pCur->bCached = 0;
  pCur->bPrefill = 0;
  pCur->nLeft = -1;
  cvValReset(&pCur->val);
  pCur->val.bIsNull = (idxNum & CV_PLAN_ISNULL) != 0;
  pCur->val.bNotNull = (idxNum & CV_PLAN_NOTNULL) != 0;
  if (nPlan != 2 * (size_t)argc) {
    cvSetError(pTab, "caterva: malformed plan \"%s\"", idxStr ? idxStr : "");
    return SQLITE_INTERNAL;
  }
  for (k = 0; k < pTab->nDim; k++) {
    cvRangeInit(pTab, k, &pCur->aBound[k]);  /* the whole extent, or range= */
    pCur->iRun[k] = 0;
  }
  for (i = 0; i < argc && rc == SQLITE_OK; i++) {
    int op = idxStr[2 * i], bLabel = idxStr[2 * i + 1] < CV_INDEX_DIM;
    k = idxStr[2 * i + 1] - (bLabel ? CV_LABEL_DIM : CV_INDEX_DIM);
    if (op == CV_OP_LIMIT) {
      pLimit = argv[i];
      continue;
    }
    if (op == CV_OP_OFFSET) {
      pOffset = argv[i];
      continue;
    }
    if (idxStr[2 * i + 1] == CV_VALUE_COL) {
      cvValAdd(&pCur->val, op, argv[i]);  /* SQLite checks the rows; this skips blocks */
      continue;
    }
    if (k < 0 || k >= pTab->nDim || op < CV_OP_EQ || op > CV_OP_IN) {
      cvSetError(pTab, "caterva: malformed plan \"%s\"", idxStr);
      return SQLITE_INTERNAL;
    }
    if (op == CV_OP_IN) rc = cvCollectIn(pCur, k, bLabel, argv[i]);
    else rc = cvBoundApply(pTab, k, bLabel, &pCur->aBound[k], op, argv[i]);
  }
  if (rc == SQLITE_OK) rc = cvBuildRuns(pCur, &bEmpty);
  if (rc != SQLITE_OK) {
    cvResetScan(pCur);
    return rc;
  }
  if (pLimit) pCur->nLeft = cvRowBudget(pLimit, pOffset);
  if (bEmpty && pTab->bRemote) {
    /* no read will make the pending version check, and the box came from the labels and the
    ** shape as opened: a change may have moved it (cvCursorFilter opens the array again) */
    int r = caterva_schunk_verify(pTab->pConn->pCtx, caterva_array_schunk(pTab->pArr));
    if (r != 0) return cvLibError(pTab, r < 0 ? r : CATERVA_E_CHANGED);
  }
  if (bEmpty || pCur->nLeft == 0) return SQLITE_OK;  /* bEof is set */
  pCur->bEof = 0;
  pCur->bOrdered = (idxNum & CV_PLAN_ORDERED) != 0 && pTab->nDim > 0;
  /* a remote table's pending version check: the block reads below make it on their first
  ** wave; a scan that reads later, or no values at all, makes it now */
  if (pTab->bRemote && (pCur->bOrdered || !pCur->bValue)) {
    rc = cvRemoteVerify(pTab);
    if (rc != SQLITE_OK) return rc;
  }
  if (pCur->bOrdered) {
    for (k = 0; k < pTab->nDim; k++) pCur->aCoord[k] = pCur->aRun[k][0].iLo;
    cvOrderedSeek(pCur);
    cvSetFast(pCur);
    return SQLITE_OK;
  }
  pCur->bCached = cvUseCache(pCur);
  /* a scan that reads every block of its boxes: a block missing from the cache brings its
  ** slab of the box with it, decoded on the context's threads (not under a LIMIT, which may
  ** stop early; not when value predicates skip blocks; remote boxes are fetched ahead) */
  pCur->bPrefill = pCur->bCached && pCur->bValue && pCur->nLeft < 0 && !pTab->bRemote &&
                   !cvValActive(&pCur->val) && caterva_ctx_nthreads(pTab->pConn->pCtx) > 1;
  rc = cvNextBlock(pCur);
  if (rc != SQLITE_OK) pCur->bEof = 1;
  else cvSetFast(pCur);
  return rc;
}

/* xFilter. A remote table whose object changed since it was opened learns it from the
** statement's first read (CATERVA_E_CHANGED, before any row): the array is opened again and
** the scan starts over on the new version, once. */
int cvCursorFilter(sqlite3_vtab_cursor *pCursor, int idxNum, const char *idxStr, int argc,
                   sqlite3_value **argv) {
  CvVtab *pTab = (CvVtab *)pCursor->pVtab;
  int rc;
  pTab->iLibRc = 0;
  for (int k = 0; k < CV_MAX_DIM; k++) ((CvCursor *)pCursor)->aLabAt[k] = -1;
  rc = cvFilter(pCursor, idxNum, idxStr, argc, argv);
  if (rc != SQLITE_OK && pTab->bRemote && pTab->iLibRc == CATERVA_E_CHANGED) {
    cvResetScan((CvCursor *)pCursor);
    ((CvCursor *)pCursor)->iPrivChunk = -1;
    rc = cvRemoteReopen(pTab);
    if (rc == SQLITE_OK) rc = cvFilter(pCursor, idxNum, idxStr, argc, argv);
  }
  return rc;
}

/* ---- reading the current row --------------------------------------------------------- */

/* xEof of the module, for both kinds of cursor (CV_CURSOR_HEAD). */
int cvCursorEof(sqlite3_vtab_cursor *pCursor) {
  return ((CvCursor *)pCursor)->bEof;
}

/* The value of further array iVar at the current cell. */
static int cvVarColumn(CvCursor *pCur, sqlite3_context *pCtx, int iVar) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  const uint8_t *pItem = 0;
  int rc = cvVarItem(pTab, iVar, &pCur->aVarPos[iVar], pCur->aCoord, &pItem);
  if (rc != SQLITE_OK) {
    if (rc == SQLITE_NOMEM) sqlite3_result_error_nomem(pCtx);
    else sqlite3_result_error(pCtx, pTab->base.zErrMsg ? pTab->base.zErrMsg : "caterva", -1);
    return rc;
  }
  cvItemResult(pCtx, &pTab->aVar[iVar].item, pItem);
  return SQLITE_OK;
}

/* Dimension k's label of the current row: a time label's text is kept for the next rows of
** the same index. */
static void cvCursorLabel(CvCursor *pCur, sqlite3_context *pCtx, int k) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  const caterva_labels *pLab = &pTab->aLab[k].lab;
  int64_t i = pCur->aCoord[k];
  if (!pLab->is_time) {
    cvLabelResult(pCtx, pTab, k, i);
    return;
  }
  if (pCur->aLabAt[k] != i) {
    int ok = caterva_labels_format(pLab, i, pCur->azLab[k], sizeof pCur->azLab[k]) == CATERVA_OK;
    pCur->anLab[k] = ok ? (int)strlen(pCur->azLab[k]) : -1;
    pCur->aLabAt[k] = i;
  }
  if (pCur->anLab[k] < 0) sqlite3_result_null(pCtx); /* outside years 1..9999 */
  else sqlite3_result_text(pCtx, pCur->azLab[k], pCur->anLab[k], SQLITE_TRANSIENT);
}

/* xColumn's general path: dimension columns (labels or indices), further arrays' values,
** the value of a block not fetched yet, NaN, and items of any type. */
static CV_NOINLINE int cvColumnSlow(CvCursor *pCur, sqlite3_context *pCtx, int iCol) {
  CvVtab *pTab = (CvVtab *)pCur->base.pVtab;
  if (pCur->bBcolz) return cvBzColumn(&pCur->base, pCtx, iCol);
  cvSyncRun(pCur);
  if ((iCol < pTab->nDim || iCol > pTab->nDim + pTab->nVar) && sqlite3_vtab_nochange(pCtx)) {
    /* an UPDATE that leaves this dimension (or index) column as it is: it is passed on
    ** as unchanged, and xUpdate checks only the columns it is given (vtab_write.c) */
    return SQLITE_OK;
  }
  if (iCol >= 0 && iCol < pTab->nDim) {
    if (pTab->aLab[iCol].bOn) cvCursorLabel(pCur, pCtx, iCol);
    else sqlite3_result_int64(pCtx, pCur->aCoord[iCol]);
  } else if (iCol > pTab->nDim + pTab->nVar) {
    sqlite3_result_int64(pCtx, pCur->aCoord[iCol - pTab->nDim - pTab->nVar - 1]);
  } else if (iCol >= pTab->nDim && pTab->nVar > 0 && sqlite3_vtab_nochange(pCtx)) {
    /* an UPDATE of a table over several arrays that does not set this value column: it is
    ** reported unchanged, and its array is not written (vtab_write.c) */
    return SQLITE_OK;
  } else if (iCol > pTab->nDim) {
    return cvVarColumn(pCur, pCtx, iCol - pTab->nDim - 1);
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
    /* NaN is NULL (cvItemResult) */
    cvItemResult(pCtx, &pTab->item, pCur->aData + pCur->iOff * pTab->item.szItem);
  }
  return SQLITE_OK;
}

/*
** xColumn of the module, for both kinds of cursor (CV_CURSOR_HEAD). The common case, a
** float64 or float32 value of a block already at hand that is not NaN, is read here.
*/
int cvCursorColumn(sqlite3_vtab_cursor *pCursor, sqlite3_context *pCtx, int iCol) {
  CvCursor *pCur = (CvCursor *)pCursor;
  /* never for a bcolz cursor (iValueCol -1) nor over several arrays (aVarPos: cvColumnSlow
  ** reports an unchanged value column to an UPDATE) */
  if (iCol == pCur->iValueCol && pCur->aData && pCur->aVarPos == 0) {
    if (pCur->eFast == CV_FAST_F8) {
      double r;
      memcpy(&r, pCur->aData + (pCur->iOffEnd - pCur->nFast) * 8, 8);
      if (r == r) {
        sqlite3_result_double(pCtx, r);
        return SQLITE_OK;
      }
    } else if (pCur->eFast == CV_FAST_F4) {
      float f;
      memcpy(&f, pCur->aData + (pCur->iOffEnd - pCur->nFast) * 4, 4);
      if (f == f) {
        sqlite3_result_double(pCtx, (double)f);
        return SQLITE_OK;
      }
    }
  }
  return cvColumnSlow(pCur, pCtx, iCol);
}

/* The rowid is the cell's C-order index in the whole array. */
int cvCursorRowid(sqlite3_vtab_cursor *pCursor, sqlite3_int64 *pRowid) {
  CvCursor *pCur = (CvCursor *)pCursor;
  CvVtab *pTab = (CvVtab *)pCursor->pVtab;
  sqlite3_int64 iRowid = 0;
  int k;
  cvSyncRun(pCur);
  for (k = 0; k < pTab->nDim; k++) iRowid += pCur->aCoord[k] * pTab->aArrStride[k];
  *pRowid = iRowid;
  return SQLITE_OK;
}

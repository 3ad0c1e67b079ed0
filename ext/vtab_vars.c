/*
 * vtab_vars.c -- tables of several variables: CREATE VIRTUAL TABLE w USING caterva('t2m.b2nd',
 * 'tp.b2nd', ...) exposes one value column per array over the dimensions they share.
 *
 * The first array (CvVtab.pArr) drives the scan: its blocks are iterated, its coordinates
 * and labels name the rows. Every further array (a CvVar) must have the same shape and, when
 * both store them, the same dimension names; its chunk and block shapes may differ. Its value
 * at the current cell is found by locating the cell's block in that array's own layout
 * (chunks in C order over the chunk grid, blocks in C order inside a chunk, items in C order
 * inside a block) and reading the block through the array's own block cache, so a query
 * decompresses a variable's blocks only when it reads that variable's column (colUsed), each
 * block once while the cache holds it.
 *
 * Writes to such tables commit all their arrays as one (vtab_vars_txn.c, core/group.c): a
 * crash between the files' commits is undone by the next writer, so that every array holds
 * the same transaction.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <stdlib.h>
#include <string.h>

/* Copy the partitioning of pArr into p. */
static void cvVarGeometry(CvVar *p) {
  const int32_t *aChunk = caterva_array_chunkshape(p->pArr);
  const int32_t *aBlock = caterva_array_blockshape(p->pArr);
  const int64_t *aShape = caterva_array_shape(p->pArr);
  int nDim = caterva_array_ndim(p->pArr);
  int64_t nBlk = 1, nChunkGrid = 1, nBlockGrid = 1;
  for (int k = nDim - 1; k >= 0; k--) {
    p->aChunk[k] = aChunk[k];
    p->aBlock[k] = aBlock[k];
    p->aBlkStride[k] = nBlk;
    p->aChunkStride[k] = nChunkGrid;
    p->aBlockStride[k] = nBlockGrid;
    nBlk *= aBlock[k];
    if (aChunk[k] > 0) nChunkGrid *= (aShape[k] + aChunk[k] - 1) / aChunk[k];
    if (aBlock[k] > 0) nBlockGrid *= (aChunk[k] + aBlock[k] - 1) / aBlock[k];
  }
  p->nBlockItem = nBlk;
}

/* "365x180x360" */
static char *cvShapeText(const int64_t *a, int n) {
  sqlite3_str *p = sqlite3_str_new(0);
  for (int k = 0; k < n; k++) sqlite3_str_appendf(p, "%s%lld", k ? "x" : "", (long long)a[k]);
  return sqlite3_str_finish(p);
}

/* Does pArr have the table's shape and dimension names? Else *pzErr names the first
** difference. */
static int cvVarMatches(CvVtab *pTab, const char *zPath, caterva_array *pArr, char **pzErr) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  const int64_t *aShape = caterva_array_shape(pArr);
  int nDim = caterva_array_ndim(pArr), k, rc = SQLITE_OK;
  char **azA = 0, **azB = 0;
  if (nDim != pTab->nDim) {
    *pzErr = sqlite3_mprintf("caterva: '%s' has %d dimensions, '%s' has %d", zPath, nDim,
                             pTab->zPath, pTab->nDim);
    return SQLITE_ERROR;
  }
  for (k = 0; k < nDim && aShape[k] == pTab->aShape[k]; k++) {
  }
  if (k < nDim) {
    char *zA = cvShapeText(aShape, nDim), *zB = cvShapeText(pTab->aShape, nDim);
    *pzErr = sqlite3_mprintf("caterva: '%s' has shape %s, '%s' has %s (dimension %d differs)",
                             zPath, zA, pTab->zPath, zB, k);
    sqlite3_free(zA);
    sqlite3_free(zB);
    return SQLITE_ERROR;
  }
  if (caterva_array_get_dim_names(pCtx, pArr, &azA) == CATERVA_OK &&
      caterva_array_get_dim_names(pCtx, pTab->pArr, &azB) == CATERVA_OK) {
    for (k = 0; k < nDim && strcmp(azA[k], azB[k]) == 0; k++) {
    }
    if (k < nDim) {
      *pzErr = sqlite3_mprintf("caterva: dimension %d of '%s' is named %s, of '%s' %s", k, zPath,
                               azA[k], pTab->zPath, azB[k]);
      rc = SQLITE_ERROR;
    }
  }
  caterva_array_free_names(azA, nDim);
  caterva_array_free_names(azB, nDim);
  return rc;
}

/* Does a pending group journal lie next to the first array or zPath? */
static int cvVarsPendingAt(CvVtab *pTab, const char *zPath) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  return caterva_group_journal(pCtx, pTab->zPath, 0, 0) == CATERVA_GROUP_PENDING ||
         caterva_group_journal(pCtx, zPath, 0, 0) == CATERVA_GROUP_PENDING;
}

int cvVarsOpen(CvVtab *pTab, const CvOptions *pOpt, char **pzErr) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  int i, r;
  if (pOpt->nMore == 0) return SQLITE_OK;
  pTab->aVar = sqlite3_malloc64(sizeof(CvVar) * (sqlite3_uint64)pOpt->nMore);
  if (pTab->aVar == 0) return SQLITE_NOMEM;
  memset(pTab->aVar, 0, sizeof(CvVar) * (size_t)pOpt->nMore);
  pTab->nVar = pOpt->nMore;
  for (i = 0; i < pOpt->nMore; i++) {
    CvVar *p = &pTab->aVar[i];
    char *zErr = 0;
    p->zPath = sqlite3_mprintf("%s", pOpt->azMore[i]);
    if (p->zPath == 0) return SQLITE_NOMEM;
    r = cvArrayOpen(pTab->pConn, p->zPath, CATERVA_OPEN_READ, &pTab->remote, &p->pArr);
    if (r < 0) {
      const char *zMsg = caterva_ctx_errmsg(pCtx);
      *pzErr = sqlite3_mprintf("caterva: cannot open \"%s\": %s%s%s", p->zPath,
                               caterva_strerror(r), zMsg[0] ? ": " : "", zMsg);
      return r == CATERVA_E_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    }
    if (cvVarMatches(pTab, p->zPath, p->pArr, pzErr) != SQLITE_OK) {
      /* a group commit interrupted between its arrays: accepted, reads are refused and
      ** the table's first write finishes it (vtab_vars_txn.c) */
      if (!cvVarsPendingAt(pTab, p->zPath)) return SQLITE_ERROR;
      sqlite3_free(*pzErr);
      *pzErr = 0;
    }
    if (cvItemTypeInit(&p->item, caterva_array_dtype(p->pArr), caterva_array_itemsize(p->pArr),
                       &zErr)) {
      *pzErr = sqlite3_mprintf("caterva: '%s': %s", p->zPath, zErr ? zErr : "out of memory");
      sqlite3_free(zErr);
      return SQLITE_ERROR;
    }
    cvVarGeometry(p);
    cvCacheInit(&p->cache, p->nBlockItem * p->item.szItem, pTab->szCache);
  }
  return SQLITE_OK;
}

void cvVarsFree(CvVtab *pTab) {
  for (int i = 0; i < pTab->nVar; i++) {
    cvCacheClear(&pTab->aVar[i].cache);
    caterva_array_free(pTab->aVar[i].pArr);
    caterva_lock_free(pTab->aVar[i].pLock);
    sqlite3_free(pTab->aVar[i].zPath);
  }
  sqlite3_free(pTab->aVar);
  pTab->aVar = 0;
  pTab->nVar = 0;
}

int cvVarsRefresh(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  for (int i = 0; i < pTab->nVar; i++) {
    CvVar *p = &pTab->aVar[i];
    caterva_array *pNew = 0;
    char *zErr = 0;
    int r, bSame = 0;
    if (caterva_schunk_stale(pCtx, caterva_array_schunk(p->pArr)) == 0) {
      if (caterva_array_ndim(p->pArr) == pTab->nDim &&
          memcmp(caterva_array_shape(p->pArr), pTab->aShape, sizeof(int64_t) * (size_t)pTab->nDim) == 0)
        continue;
      /* the first array changed shape: report it below (p keeps its array) */
      pNew = p->pArr;
      bSame = 1;
    } else {
      r = cvArrayOpen(pTab->pConn, p->zPath, CATERVA_OPEN_READ, &pTab->remote, &pNew);
      if (r < 0) return cvLibError(pTab, r);
    }
    if (cvVarMatches(pTab, p->zPath, pNew, &zErr) != SQLITE_OK ||
        caterva_array_itemsize(pNew) != p->item.szItem) {
      if (!bSame) caterva_array_free(pNew);
      cvSetError(pTab, "%s", zErr ? zErr : "caterva: an array of the table changed its dtype");
      sqlite3_free(zErr);
      return SQLITE_ERROR;
    }
    if (bSame) continue;
    caterva_array_free(p->pArr);
    p->pArr = pNew;
    p->bWritable = 0;
    cvVarReset(p);
  }
  return SQLITE_OK;
}

void cvVarReset(CvVar *p) {
  cvVarGeometry(p);
  cvCacheInvalidate(&p->cache);
}

int cvVarsGrow(CvVtab *pTab) {
  for (int i = 0; i < pTab->nVar; i++) {
    CvVar *p = &pTab->aVar[i];
    int r = caterva_array_resize(pTab->pConn->pCtx, p->pArr, pTab->aShape);
    if (r < 0) return cvLibError(pTab, r);
    p->bWrote = 1;
    cvVarReset(p);
  }
  return SQLITE_OK;
}

/* Decompress block (iChunk, iBlock) of variable p, which holds cell aCoord, into aDst. */
static int cvVarDecompress(CvVtab *pTab, CvVar *p, const int64_t *aCoord, int64_t iChunk,
                           int32_t iBlock, uint8_t *aDst) {
  caterva_block_iter *pIter = 0;
  const caterva_block *pBlk = 0;
  int64_t aStop[CV_MAX_DIM];
  int k, rc;
  for (k = 0; k < pTab->nDim; k++) aStop[k] = aCoord[k] + 1;
  rc = caterva_block_iter_new(pTab->pConn->pCtx, p->pArr, aCoord, aStop, 0, &pIter);
  if (rc >= 0) rc = caterva_block_iter_next(pIter, &pBlk);
  if (rc == 1 && (pBlk->nchunk != iChunk || pBlk->nblock != iBlock || pBlk->data == 0)) {
    caterva_block_iter_free(pIter);
    cvSetError(pTab, "caterva: '%s': the block iterator returned another block than asked for",
               p->zPath);
    return SQLITE_INTERNAL;
  }
  if (rc == 1) memcpy(aDst, pBlk->data, (size_t)(p->nBlockItem * p->item.szItem));
  caterva_block_iter_free(pIter);
  if (rc < 0) return cvLibError(pTab, rc);
  if (rc == 0) {
    cvSetError(pTab, "caterva: '%s': a block of the box is missing", p->zPath);
    return SQLITE_INTERNAL;
  }
  return SQLITE_OK;
}

void cvVarPosRelease(CvVar *p, CvVarPos *pPos) {
  if (pPos->pEntry) cvCacheUnpin(&p->cache, pPos->pEntry);
  pPos->pEntry = 0;
  pPos->aData = 0;
  pPos->iChunk = -1;
}

/* Make pPos hold block (iChunk, iBlock) of p: from the cache, or decompressed into a cache
** entry or the position's private buffer. */
static int cvVarFetch(CvVtab *pTab, CvVar *p, CvVarPos *pPos, const int64_t *aCoord,
                      int64_t iChunk, int32_t iBlock) {
  CvCacheEntry *pE;
  uint8_t *aDst;
  int rc;
  cvVarPosRelease(p, pPos);
  pE = cvCacheLookup(&p->cache, iChunk, iBlock);
  if (pE == 0 && pPos->iPrivChunk == iChunk && pPos->iPrivBlock == iBlock) {
    aDst = pPos->aPriv;
  } else if (pE == 0) {
    pE = cvCacheClaim(&p->cache, iChunk, iBlock);
    if (pE) {
      aDst = pE->aData;
    } else {
      if (pPos->aPriv == 0) {
        pPos->aPriv = sqlite3_malloc64((sqlite3_uint64)(p->nBlockItem * p->item.szItem));
        if (pPos->aPriv == 0) return SQLITE_NOMEM;
      }
      aDst = pPos->aPriv;
      pPos->iPrivChunk = -1;
    }
    rc = cvVarDecompress(pTab, p, aCoord, iChunk, iBlock, aDst);
    if (rc != SQLITE_OK) {
      if (pE) cvCacheUnpin(&p->cache, pE);
      return rc;
    }
    if (pE) {
      cvCacheCommit(&p->cache, pE);
    } else {
      pPos->iPrivChunk = iChunk;
      pPos->iPrivBlock = iBlock;
    }
  } else {
    aDst = pE->aData;
  }
  pPos->pEntry = pE;
  pPos->aData = aDst;
  pPos->iChunk = iChunk;
  pPos->iBlock = iBlock;
  return SQLITE_OK;
}

int cvVarItem(CvVtab *pTab, int iVar, CvVarPos *pPos, const int64_t *aCoord,
              const uint8_t **ppItem) {
  CvVar *p = &pTab->aVar[iVar];
  const int64_t *aShape = caterva_array_shape(p->pArr);
  int64_t iChunk = 0, iBlock = 0, iOff = 0;
  /* The arrays had one shape when the statement started, but xBegin may have reopened the
  ** first one grown since; a cell outside this array's own shape is refused here (inside
  ** it, its chunk and block extents are positive: cat_meta_validate). */
  for (int k = 0; k < pTab->nDim; k++) {
    if (aCoord[k] < 0 || aCoord[k] >= aShape[k]) {
      cvSetError(pTab, "caterva: '%s' no longer has the shape of the table's first array "
                       "(it changed during the statement); run the statement again",
                 p->zPath);
      return SQLITE_ERROR;
    }
  }
  for (int k = 0; k < pTab->nDim; k++) {
    int64_t x = aCoord[k], inChunk = x % p->aChunk[k];
    iChunk += (x / p->aChunk[k]) * p->aChunkStride[k];
    iBlock += (inChunk / p->aBlock[k]) * p->aBlockStride[k];
    iOff += (inChunk % p->aBlock[k]) * p->aBlkStride[k];
  }
  if (pPos->aData == 0 || pPos->iChunk != iChunk || pPos->iBlock != (int32_t)iBlock) {
    int rc = cvVarFetch(pTab, p, pPos, aCoord, iChunk, (int32_t)iBlock);
    if (rc != SQLITE_OK) return rc;
  }
  *ppItem = pPos->aData + iOff * p->item.szItem;
  return SQLITE_OK;
}

char *cvVarName(CvConn *pConn, caterva_array *pArr, const char *zPath) {
  uint8_t *v = 0;
  int32_t n = 0;
  const char *zBase = strrchr(zPath, '/'), *zDot;
  char *z = 0;
  /* the `name` attribute when it is a msgpack string (fixstr, str8, str16) */
  if (caterva_array_attr_get(pConn->pCtx, pArr, "name", &v, &n) == CATERVA_OK && n > 0) {
    uint32_t len = 0, off = 0;
    if ((v[0] & 0xe0) == 0xa0) len = v[0] & 0x1f, off = 1;
    else if (v[0] == 0xd9 && n >= 2) len = v[1], off = 2;
    else if (v[0] == 0xda && n >= 3) len = (uint32_t)(v[1] << 8 | v[2]), off = 3;
    if (off && len > 0 && off + len == (uint32_t)n && memchr(v + off, 0, len) == 0)
      z = sqlite3_mprintf("%.*s", (int)len, (const char *)v + off);
  }
  free(v);
  if (z) return z;
  zBase = zBase ? zBase + 1 : zPath;
  while (*zBase == 0 && zBase > zPath) zBase--; /* a directory path ending in '/' */
  zDot = strchr(zBase, '.');
  return sqlite3_mprintf("%.*s", zDot && zDot > zBase ? (int)(zDot - zBase) : (int)strlen(zBase),
                         zBase);
}

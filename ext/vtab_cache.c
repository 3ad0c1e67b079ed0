/*
 * vtab_cache.c -- a bounded LRU cache of decompressed blocks, shared by the cursors of one
 * caterva virtual table.
 *
 * Why: a nested-loop join probes the array once per outer row, each probe a box inside one
 * block. Without a cache every probe decompresses its block again; with it, a block stays
 * decompressed while neighbouring probes hit it. One full scan never needs the cache (the
 * block iterator visits each block once), so vtab_main.c only routes small boxes through it.
 *
 * Entries are allocated on demand up to nMax and then recycled from the least recently used
 * end of the list, skipping pinned ones. Keys hash into a power-of-two bucket array.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include <string.h>

/* Hash of a block key. */
static unsigned cvCacheHash(int64_t iChunk, int32_t iBlock) {
  uint64_t h = (uint64_t)iChunk * 0x9E3779B97F4A7C15ULL ^ (uint32_t)iBlock * 0x85EBCA6BU;
  return (unsigned)(h ^ (h >> 29));
}

void cvCacheInit(CvCache *p, int64_t szBlock, int64_t nByte) {
  int64_t nMax = szBlock > 0 ? nByte / szBlock : 0;
  memset(p, 0, sizeof(*p));
  p->szBlock = szBlock;
  if (nMax > 1000000) nMax = 1000000;
  p->nMax = (int)nMax;
  if (p->nMax > 0) {
    /* The bucket array starts small and doubles as entries are added (cvCacheGrow): a
    ** table of tiny blocks must not pay for a million buckets when it is opened. */
    int nHash = 16;
    p->apHash = sqlite3_malloc64(sizeof(CvCacheEntry *) * (sqlite3_uint64)nHash);
    if (p->apHash == 0) {
      p->nMax = 0;  /* no memory: run without a cache */
    } else {
      memset(p->apHash, 0, sizeof(CvCacheEntry *) * (size_t)nHash);
      p->nHash = nHash;
    }
  }
}

/* Double the bucket array while it holds fewer than two buckets per entry (at most 2*nMax).
** Without memory the array stays as it is: chains get longer, lookups stay correct. */
static void cvCacheGrow(CvCache *p) {
  CvCacheEntry **apNew, *pE;
  int nNew = p->nHash * 2;
  if (p->nHash >= 2 * p->nEntry || p->nHash >= 2 * p->nMax) return;
  apNew = sqlite3_malloc64(sizeof(CvCacheEntry *) * (sqlite3_uint64)nNew);
  if (apNew == 0) return;
  memset(apNew, 0, sizeof(CvCacheEntry *) * (size_t)nNew);
  for (pE = p->pLruFirst; pE; pE = pE->pLruNext) {
    unsigned h;
    if (!pE->bValid) continue;
    h = cvCacheHash(pE->iChunk, pE->iBlock) & (unsigned)(nNew - 1);
    pE->pHashNext = apNew[h];
    apNew[h] = pE;
  }
  sqlite3_free(p->apHash);
  p->apHash = apNew;
  p->nHash = nNew;
}

void cvCacheClear(CvCache *p) {
  CvCacheEntry *pE = p->pLruFirst;
  while (pE) {
    CvCacheEntry *pNext = pE->pLruNext;
    sqlite3_free(pE->aData);
    sqlite3_free(pE);
    pE = pNext;
  }
  sqlite3_free(p->apHash);
  memset(p, 0, sizeof(*p));
}

/* Move pE to the most recently used end of the list (it may be unlinked: prev=next=0 and
** not first). */
static void cvCacheLruUnlink(CvCache *p, CvCacheEntry *pE) {
  if (pE->pLruPrev) pE->pLruPrev->pLruNext = pE->pLruNext;
  else if (p->pLruFirst == pE) p->pLruFirst = pE->pLruNext;
  if (pE->pLruNext) pE->pLruNext->pLruPrev = pE->pLruPrev;
  else if (p->pLruLast == pE) p->pLruLast = pE->pLruPrev;
  pE->pLruPrev = pE->pLruNext = 0;
}

static void cvCacheLruPushFront(CvCache *p, CvCacheEntry *pE) {
  pE->pLruPrev = 0;
  pE->pLruNext = p->pLruFirst;
  if (p->pLruFirst) p->pLruFirst->pLruPrev = pE;
  p->pLruFirst = pE;
  if (p->pLruLast == 0) p->pLruLast = pE;
}

static void cvCacheHashRemove(CvCache *p, CvCacheEntry *pE) {
  CvCacheEntry **pp = &p->apHash[cvCacheHash(pE->iChunk, pE->iBlock) & (unsigned)(p->nHash - 1)];
  while (*pp && *pp != pE) pp = &(*pp)->pHashNext;
  if (*pp) *pp = pE->pHashNext;
  pE->pHashNext = 0;
}

CvCacheEntry *cvCacheLookup(CvCache *p, int64_t iChunk, int32_t iBlock) {
  CvCacheEntry *pE;
  if (p->nMax == 0) return 0;
  pE = p->apHash[cvCacheHash(iChunk, iBlock) & (unsigned)(p->nHash - 1)];
  while (pE && (pE->iChunk != iChunk || pE->iBlock != iBlock)) pE = pE->pHashNext;
  if (pE == 0) {
    p->nMiss++;
    return 0;
  }
  p->nHit++;
  pE->nPin++;
  cvCacheLruUnlink(p, pE);
  cvCacheLruPushFront(p, pE);
  return pE;
}

/* A fresh entry while below nMax, else the least recently used unpinned one (unhashed). */
static CvCacheEntry *cvCacheVictim(CvCache *p) {
  CvCacheEntry *pE;
  if (p->nEntry < p->nMax) {
    pE = sqlite3_malloc64(sizeof(*pE));
    if (pE) {
      memset(pE, 0, sizeof(*pE));
      pE->aData = sqlite3_malloc64((sqlite3_uint64)p->szBlock);
      if (pE->aData == 0) {
        sqlite3_free(pE);
        pE = 0;
      }
    }
    if (pE) {
      p->nEntry++;
      cvCacheLruPushFront(p, pE);
      cvCacheGrow(p);
      return pE;
    }
  }
  for (pE = p->pLruLast; pE && pE->nPin > 0; pE = pE->pLruPrev) {
  }
  if (pE && pE->bValid) {
    cvCacheHashRemove(p, pE);
    pE->bValid = 0;
    p->nValid--;
  }
  return pE;
}

CvCacheEntry *cvCacheClaim(CvCache *p, int64_t iChunk, int32_t iBlock) {
  CvCacheEntry *pE;
  if (p->nMax == 0) return 0;
  pE = cvCacheVictim(p);
  if (pE == 0) return 0;
  pE->iChunk = iChunk;
  pE->iBlock = iBlock;
  pE->bValid = 0;
  pE->nPin = 1;
  cvCacheLruUnlink(p, pE);
  cvCacheLruPushFront(p, pE);
  return pE;
}

void cvCacheCommit(CvCache *p, CvCacheEntry *pE) {
  unsigned h = cvCacheHash(pE->iChunk, pE->iBlock) & (unsigned)(p->nHash - 1);
  pE->bValid = 1;
  p->nValid++;
  pE->pHashNext = p->apHash[h];
  p->apHash[h] = pE;
}

void cvCacheUnpin(CvCache *p, CvCacheEntry *pE) {
  (void)p;
  if (pE && pE->nPin > 0) pE->nPin--;
}

int cvCacheResize(CvCache *p, int64_t szBlock, int64_t nByte) {
  CvCacheEntry *pE;
  if (szBlock == p->szBlock) return SQLITE_OK;
  for (pE = p->pLruFirst; pE; pE = pE->pLruNext)
    if (pE->nPin > 0) return SQLITE_BUSY;
  cvCacheClear(p);
  cvCacheInit(p, szBlock, nByte);
  return SQLITE_OK;
}

/* Every entry invalid. The valid ones are counted: the walk ends at the last of them (after a
** one-cell commit, the few blocks read since the previous one, near the front). */
void cvCacheInvalidate(CvCache *p) {
  CvCacheEntry *pE;
  for (pE = p->pLruFirst; pE && p->nValid > 0; pE = pE->pLruNext) {
    if (!pE->bValid) continue;
    cvCacheHashRemove(p, pE);
    pE->bValid = 0;
    p->nValid--;
  }
}

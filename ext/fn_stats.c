/*
 * fn_stats.c -- caterva_build_stats('<table or path>'): compute and store the per-block
 * statistics of an array that has none (a file from another writer), so that value
 * predicates skip blocks and caterva_reduce() answers from them.
 *
 * Arrays this extension writes keep their statistics as they are written (core/blockstats.c);
 * this function is for the others. It takes the array's lock (the `.b2lock` sidecar, as a
 * write transaction does, waiting up to the busy timeout), opens its own writable handle,
 * decompresses the chunks that lack statistics and commits them in one commit; tables of
 * other handles see them at their next statement (the generation counter moved). Inside a
 * write transaction on the table itself, the statistics become part of that transaction. An
 * array in S3 takes no lock: its commit is the conditional index PUT of every S3 write
 * (docs/guarantees.md), made again from the newest version when another writer was first.
 *
 * Long runs report progress on stderr (after two seconds, then every second):
 *   caterva_build_stats: temp: 1234/5328 chunks
 * The result is the number of chunks of the array.
 *
 * caterva_stats_check('<table or path>') recomputes, independently of the library's code,
 * the statistics of every block from its decompressed items and compares them with the
 * stored ones: JSON {"blocks":N,"with_stats":K,"wrong":W}. The tests call it after every
 * kind of write, rollback, failure and crash: W must be 0.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct CvProgress CvProgress;
struct CvProgress {
  const char *zName;     /* What the messages call the array */
  double tStart;         /* When the build started (s) */
  double tLast;          /* When progress was last reported (s) */
};

static double cvNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cvProgress(void *pArg, int64_t nDone, int64_t nTotal) {
  CvProgress *p = (CvProgress *)pArg;
  double t = cvNow();
  if (t - p->tStart >= 2.0 && (t - p->tLast >= 1.0 || nDone == nTotal)) {
    fprintf(stderr, "caterva_build_stats: %s: %lld/%lld chunks\n", p->zName, (long long)nDone,
            (long long)nTotal);
    p->tLast = t;
  }
  return 0;
}

/* Take the exclusive lock of zPath's sidecar, waiting up to the busy timeout. */
static int cvLockWait(caterva_ctx *pCtx, sqlite3 *db, caterva_lock *pLock) {
  sqlite3_stmt *pStmt = 0;
  int ms = 0, waited = 0, rc;
  if (sqlite3_prepare_v2(db, "PRAGMA busy_timeout", -1, &pStmt, 0) == SQLITE_OK &&
      sqlite3_step(pStmt) == SQLITE_ROW)
    ms = sqlite3_column_int(pStmt, 0);
  sqlite3_finalize(pStmt);
  while ((rc = caterva_lock_exclusive(pCtx, pLock, 0)) == CATERVA_E_BUSY && waited < ms) {
    struct timespec ts = {0, 10 * 1000000L};
    nanosleep(&ts, 0);
    waited += 10;
  }
  return rc;
}

/* Build with a handle of our own, under the lock; in S3 without one (the commit's
** conditional index PUT decides; one that lost to another writer is made again from the
** newest version). pRem: the table's remote options, or NULL (the environment's). */
static int cvBuildPath(CvConn *pConn, sqlite3 *db, const char *zPath,
                       const caterva_remote_opts *pRem, CvProgress *pProg, int64_t *pnChunk,
                       char **pzErr) {
  caterva_ctx *pCtx = pConn->pCtx;
  int bRemote = caterva_path_is_remote(zPath), rc = CATERVA_E_BUSY;
  for (int nTry = 0; rc == CATERVA_E_BUSY && nTry < (bRemote ? CV_S3_TRIES : 1); nTry++) {
    caterva_lock *pLock = 0;
    caterva_array *pArr = 0;
    rc = bRemote ? CATERVA_OK : caterva_lock_open_writer(pCtx, zPath, &pLock);
    if (rc >= 0 && pLock) {
      rc = cvLockWait(pCtx, db, pLock);
      if (rc == CATERVA_E_BUSY) {
        *pzErr = sqlite3_mprintf("caterva_build_stats: '%s' is locked by a writer", zPath);
        caterva_lock_free(pLock);
        return SQLITE_BUSY;
      }
    } else if (rc == CATERVA_E_IO) {
      rc = CATERVA_OK; /* no sidecar can exist (read-only directory): opening for write fails */
    }
    if (rc >= 0) rc = caterva_array_open_ex(pCtx, zPath, CATERVA_OPEN_WRITE, pRem, &pArr);
    if (rc >= 0) rc = caterva_array_build_stats(pCtx, pArr, cvProgress, pProg);
    if (rc >= 0) *pnChunk = caterva_schunk_nchunks(caterva_array_schunk(pArr));
    caterva_array_free(pArr);
    caterva_lock_free(pLock);
  }
  if (rc < 0)
    *pzErr = sqlite3_mprintf("caterva_build_stats: '%s': %s", zPath,
                             caterva_ctx_errmsg(pCtx)[0] ? caterva_ctx_errmsg(pCtx)
                                                         : caterva_strerror(rc));
  return rc == CATERVA_E_BUSY ? SQLITE_BUSY : rc < 0 ? SQLITE_ERROR : SQLITE_OK;
}

static void cvBuildStatsFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  CvConn *pConn = (CvConn *)sqlite3_user_data(pCtx);
  sqlite3 *db = sqlite3_context_db_handle(pCtx);
  const char *zArg = (const char *)sqlite3_value_text(argv[0]);
  void *pFound = 0;
  const char *zPath;
  CvProgress prog;
  int64_t nChunk = 0;
  char *zErr = 0;
  int rc;
  (void)argc;
  if (zArg == 0) {
    sqlite3_result_error(pCtx, "caterva_build_stats: a table name or a path is required", -1);
    return;
  }
  zPath = cvConnResolve(pConn, db, zArg, &pFound);
  prog.zName = zArg;
  prog.tStart = prog.tLast = cvNow();
  if (pFound && ((CvVtab *)pFound)->bInTxn) {
    /* our own write transaction holds the lock: build inside it */
    CvVtab *pTab = (CvVtab *)pFound;
    rc = caterva_array_build_stats(pConn->pCtx, pTab->pArr, cvProgress, &prog);
    if (rc < 0) {
      zErr = sqlite3_mprintf("caterva_build_stats: %s: %s", zArg, caterva_ctx_errmsg(pConn->pCtx));
      rc = SQLITE_ERROR;
    } else {
      pTab->bWrote = 1;
      nChunk = caterva_schunk_nchunks(caterva_array_schunk(pTab->pArr));
      rc = SQLITE_OK;
    }
  } else {
    rc = cvBuildPath(pConn, db, zPath, pFound ? &((CvVtab *)pFound)->remote : 0, &prog,
                     &nChunk, &zErr);
  }
  if (rc != SQLITE_OK) {
    sqlite3_result_error(pCtx, zErr ? zErr : "caterva_build_stats: out of memory", -1);
    sqlite3_result_error_code(pCtx, rc);
  } else {
    sqlite3_result_int64(pCtx, nChunk);
  }
  sqlite3_free(zErr);
}

/* ---- caterva_stats_check ------------------------------------------------------------- */

/* The check polls for an interrupt after this much work: an item checked counts 1, a block
 * CV_CHECK_BLOCK_COST more (a block served from a fill chunk is checked from one item): at
 * most 16 M items, or 4096 blocks, pass between two polls. */
#define CV_CHECK_POLL_WORK (16 << 20)
#define CV_CHECK_BLOCK_COST 4096

/* One item as a number: *pI (integers, bool) or *pD (floats); 0 when it is missing (NaN). */
static int cvCheckItem(int eKind, int szItem, const uint8_t *p, int64_t *pI, uint64_t *pU,
                       double *pD) {
  uint64_t u = 0;
  int i;
  for (i = szItem - 1; i >= 0; i--) u = u << 8 | p[i];
  switch (eKind) {
    case CATERVA_KIND_FLOAT:
      if (szItem == 2) *pD = cvHalfToDouble((uint16_t)u);
      else if (szItem == 4) {
        float f;
        uint32_t w = (uint32_t)u;
        memcpy(&f, &w, 4);
        *pD = f;
      } else memcpy(pD, &u, 8);
      return !isnan(*pD);
    case CATERVA_KIND_BOOL: *pI = u != 0; return 1;
    case CATERVA_KIND_INT:
      if (szItem < 8 && (u >> (szItem * 8 - 1) & 1)) u |= ~(uint64_t)0 << (szItem * 8);
      *pI = (int64_t)u;
      return 1;
    default: *pU = u; return 1;
  }
}

/* Statistics recomputed from decoded items, as the writer computes them. */
typedef struct CvCheckAcc {
  int eKind, szItem;
  int64_t nValid, nNan, iMin, iMax, iSum;
  uint64_t uMin, uMax, uSum;
  double dMin, dMax, dSum;
  int bOver;
} CvCheckAcc;

/* Fold the item at p into pA. */
static void cvCheckAdd(CvCheckAcc *pA, const uint8_t *p) {
  int64_t vi = 0;
  uint64_t vu = 0;
  double vd = 0;
  if (!cvCheckItem(pA->eKind, pA->szItem, p, &vi, &vu, &vd)) {
    pA->nNan++;
    return;
  }
  if (pA->eKind == CATERVA_KIND_FLOAT) {
    if (pA->nValid == 0 || vd < pA->dMin) pA->dMin = vd;
    if (pA->nValid == 0 || vd > pA->dMax) pA->dMax = vd;
    pA->dSum += vd;
  } else if (pA->eKind == CATERVA_KIND_UINT) {
    if (pA->nValid == 0 || vu < pA->uMin) pA->uMin = vu;
    if (pA->nValid == 0 || vu > pA->uMax) pA->uMax = vu;
    pA->bOver |= __builtin_add_overflow(pA->uSum, vu, &pA->uSum);
  } else {
    if (pA->nValid == 0 || vi < pA->iMin) pA->iMin = vi;
    if (pA->nValid == 0 || vi > pA->iMax) pA->iMax = vi;
    pA->bOver |= __builtin_add_overflow(pA->iSum, vi, &pA->iSum);
  }
  pA->nValid++;
}

/* pA, the statistics of one item, made those of n copies of it (as the writer records a
** block of a zero, NaN or repeated-value chunk: the sum multiplied). */
static void cvCheckScale(CvCheckAcc *pA, int64_t n) {
  pA->nValid *= n;
  pA->nNan *= n;
  if (pA->nValid == 0) return;
  if (pA->eKind == CATERVA_KIND_FLOAT) pA->dSum *= (double)n;
  else if (pA->eKind == CATERVA_KIND_UINT)
    pA->bOver = __builtin_mul_overflow(pA->uSum, (uint64_t)n, &pA->uSum);
  else pA->bOver = __builtin_mul_overflow(pA->iSum, n, &pA->iSum);
}

static int cvCheckMatches(const CvCheckAcc *pA, const caterva_block_stats *pSt) {
  if (pSt->nvalid != pA->nValid || pSt->nnan != pA->nNan) return 0;
  if (pA->nValid == 0) return 1;
  if (pA->eKind == CATERVA_KIND_FLOAT)
    return pSt->min.f == pA->dMin && pSt->max.f == pA->dMax &&
           fabs(pSt->sum.f - pA->dSum) <= 1e-9 * (fabs(pA->dSum) + 1.0);
  if (pSt->sum_overflow != pA->bOver) return 0;
  if (pA->eKind == CATERVA_KIND_UINT)
    return pSt->min.u == pA->uMin && pSt->max.u == pA->uMax &&
           (pA->bOver || pSt->sum.u == pA->uSum);
  return pSt->min.i == pA->iMin && pSt->max.i == pA->iMax &&
         (pA->bOver || pSt->sum.i == pA->iSum);
}

/* Recompute the statistics of the part [start, stop) of block pBlk and compare; a block of
** one repeated item is computed from that item. *pnItem gets the part's item count. */
static int cvCheckBlock(int eKind, int szItem, int nDim, const caterva_block *pBlk,
                        const caterva_block_stats *pSt, int64_t *pnItem) {
  int64_t aIdx[CV_MAX_DIM], n = 1;
  CvCheckAcc acc;
  int k;
  memset(&acc, 0, sizeof acc);
  acc.eKind = eKind;
  acc.szItem = szItem;
  *pnItem = 0;
  for (k = 0; k < nDim; k++) {
    if (pBlk->start[k] >= pBlk->stop[k]) return pSt->nvalid == 0 && pSt->nnan == 0;
    aIdx[k] = pBlk->start[k];
    n *= pBlk->stop[k] - pBlk->start[k]; /* <= the block's items */
  }
  *pnItem = n;
  if (pBlk->uniform) {
    cvCheckAdd(&acc, pBlk->data);
    cvCheckScale(&acc, n);
    return cvCheckMatches(&acc, pSt);
  }
  for (;;) {
    int64_t off = 0;
    for (k = 0; k < nDim; k++) off = off * pBlk->blockshape[k] + (aIdx[k] - pBlk->origin[k]);
    cvCheckAdd(&acc, pBlk->data + off * szItem);
    for (k = nDim - 1; k >= 0; k--) {
      if (++aIdx[k] < pBlk->stop[k]) break;
      aIdx[k] = pBlk->start[k];
    }
    if (k < 0) break;
  }
  return cvCheckMatches(&acc, pSt);
}

static void cvStatsCheckFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  CvConn *pConn = (CvConn *)sqlite3_user_data(pCtx);
  caterva_ctx *pLib = pConn->pCtx;
  const char *zArg = (const char *)sqlite3_value_text(argv[0]);
  void *pFound = 0;
  const char *zPath;
  caterva_array *pArr = 0, *pUse = 0;
  caterva_block_iter *pIter = 0;
  const caterva_block *pBlk;
  caterva_dtype_info info;
  int64_t nBlk = 0, nKnown = 0, nWrong = 0, nItem = 0, nWork = 0;
  int rc, bInterrupted = 0, bStats;
  (void)argc;
  if (zArg == 0) {
    sqlite3_result_error(pCtx, "caterva_stats_check: a table name or a path is required", -1);
    return;
  }
  zPath = cvConnResolve(pConn, sqlite3_context_db_handle(pCtx), zArg, &pFound);
  if (pFound && ((CvVtab *)pFound)->bInTxn) {
    /* a table in a write transaction: check what its own handle holds now */
    pUse = ((CvVtab *)pFound)->pArr;
    rc = caterva_array_flush(pLib, pUse);
  } else {
    rc = caterva_array_open(pLib, zPath, CATERVA_OPEN_READ, &pArr);
    pUse = pArr;
  }
  if (rc >= 0) rc = caterva_block_iter_new(pLib, pUse, 0, 0, 0, &pIter);
  bStats = rc >= 0 && caterva_array_stats_type(pUse) != CATERVA_STATS_NONE;
  if (bStats) caterva_dtype_parse(caterva_array_dtype(pUse), &info);
  while (bStats && (rc = caterva_block_iter_next(pIter, &pBlk)) > 0) {
    caterva_block_stats st;
    int r = caterva_array_block_stats(pLib, pUse, pBlk->nchunk, pBlk->nblock, &st);
    nBlk++;
    if (r < 0) {
      rc = r;
      break;
    }
    if (r == 0) continue;
    nKnown++;
    nWrong += !cvCheckBlock(info.kind, caterva_array_itemsize(pUse), caterva_array_ndim(pUse),
                            pBlk, &st, &nItem);
    /* stop when sqlite3_interrupt() was called (polled: see CV_CHECK_POLL_WORK) */
    nWork += (pBlk->uniform ? 1 : nItem) + CV_CHECK_BLOCK_COST;
    if (nWork >= CV_CHECK_POLL_WORK) {
      nWork = 0;
      if (cvConnInterrupted(pConn)) {
        bInterrupted = 1;
        break;
      }
    }
  }
  if (bInterrupted) {
    sqlite3_result_error(pCtx, "caterva_stats_check: interrupted", -1);
    sqlite3_result_error_code(pCtx, SQLITE_INTERRUPT);
  } else if (rc < 0) {
    char *z = sqlite3_mprintf("caterva_stats_check: %s: %s", zArg, caterva_ctx_errmsg(pLib));
    sqlite3_result_error(pCtx, z ? z : "caterva_stats_check: out of memory", -1);
    sqlite3_free(z);
  } else {
    char *z = sqlite3_mprintf("{\"blocks\":%lld,\"with_stats\":%lld,\"wrong\":%lld}",
                              (long long)nBlk, (long long)nKnown, (long long)nWrong);
    if (z) sqlite3_result_text(pCtx, z, -1, sqlite3_free);
    else sqlite3_result_error_nomem(pCtx);
  }
  caterva_block_iter_free(pIter);
  caterva_array_free(pArr);
}

int cvRegisterStats(sqlite3 *db, CvConn *pConn) {
  int rc = sqlite3_create_function_v2(db, "caterva_build_stats", 1,
                                      SQLITE_UTF8 | SQLITE_DIRECTONLY, cvConnRef(pConn),
                                      cvBuildStatsFunc, 0, 0, cvConnUnref);
  if (rc == SQLITE_OK) rc = cvRegisterReduce(db, pConn);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "caterva_stats_check", 1,
                                    SQLITE_UTF8 | SQLITE_DIRECTONLY, cvConnRef(pConn),
                                    cvStatsCheckFunc, 0, 0, cvConnUnref);
  return rc;
}

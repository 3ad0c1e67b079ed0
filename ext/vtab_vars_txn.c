/*
 * vtab_vars_txn.c -- write transactions of a table over several arrays (vtab_vars.c), and
 * what its statements read.
 *
 *   xBegin       every array's lock, in the order of their real paths (two such tables
 *                over the same arrays never wait for each other in a cycle), waiting up to
 *                the busy timeout; an interrupted group commit that named one of them is
 *                finished first (cvRecover); each array is opened again for writing when
 *                another handle wrote it, and its transaction begun.
 *   xUpdate      (vtab_write.c) each value column goes to its own array; a column an UPDATE
 *                does not set is not written (xColumn reports it unchanged); INSERT growth
 *                grows every array; DELETE writes every array's fill.
 *   savepoints   on every array.
 *   xSync        the arrays written: none -- nothing to commit; one -- its own commit; more --
 *                one group commit (core/group.c: a journal next to every array, synced before
 *                the first array commits, removed after the last, so that a crash at any
 *                instant leaves all of them in the old or all in the new state once the
 *                next writer has recovered).
 *   xCommit      compaction where dead space is large, then every lock released.
 *   xRollback    every array rolled back (files byte-identical to before xBegin).
 *
 * A statement (cvVarsStatementStart) reads every array as of one moment: it reads the
 * generation counters, checks that no journal of a group commit in flight names one of the
 * arrays, reloads the arrays that changed, and checks both again; a group commit in
 * between (its journal exists from before its first array commits until after it bumped the
 * counters) makes it start over. While a live writer's journal exists the statement waits
 * (at most the busy timeout: the window between a group's first and last array commit);
 * when the journal's writer is gone (a crash) the statement is refused until the table's
 * next write finishes the group -- a reader never changes a file.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <stdlib.h>
#include <string.h>

#define CV_NARR_MAX (CV_MAX_VARS + 1)

/* Array i of the table: 0 the first, 1... the further ones. */
static caterva_array *cvArrOf(CvVtab *pTab, int i) {
  return i == 0 ? pTab->pArr : pTab->aVar[i - 1].pArr;
}
static const char *cvPathOf(CvVtab *pTab, int i) {
  return i == 0 ? pTab->zPath : pTab->aVar[i - 1].zPath;
}
static caterva_lock **cvLockOf(CvVtab *pTab, int i) {
  return i == 0 ? &pTab->pLock : &pTab->aVar[i - 1].pLock;
}

/* The table's arrays by real path: the order locks are taken in. */
typedef struct CvOrder {
  int n;
  int aIdx[CV_NARR_MAX];
  char *azReal[CV_NARR_MAX];
} CvOrder;

static void cvOrderFree(CvOrder *o) {
  for (int i = 0; i < o->n; i++) sqlite3_free(o->azReal[i]);
  o->n = 0;
}

static int cvOrderBuild(CvVtab *pTab, CvOrder *o) {
  int n = pTab->nVar + 1;
  memset(o, 0, sizeof(*o));
  for (int i = 0; i < n; i++) {
    char *z = cvRealPath(cvPathOf(pTab, i));
    int k;
    if (z == 0) {
      cvOrderFree(o);
      cvSetError(pTab, "caterva: cannot resolve '%s'", cvPathOf(pTab, i));
      return SQLITE_ERROR;
    }
    for (k = o->n; k > 0 && strcmp(o->azReal[k - 1], z) > 0; k--) {
      o->azReal[k] = o->azReal[k - 1];
      o->aIdx[k] = o->aIdx[k - 1];
    }
    o->azReal[k] = z;
    o->aIdx[k] = i;
    o->n++;
    if ((k > 0 && strcmp(o->azReal[k - 1], z) == 0) ||
        (k + 1 < o->n && strcmp(o->azReal[k + 1], z) == 0)) {
      cvSetError(pTab, "caterva: '%s' is named twice by the table: it cannot be written",
                 cvPathOf(pTab, i));
      cvOrderFree(o);
      return SQLITE_ERROR;
    }
  }
  return SQLITE_OK;
}

/* Release the further arrays' locks (the first one's goes with cvTxnEnd). */
static void cvVarsUnlock(CvVtab *pTab) {
  for (int i = 0; i < pTab->nVar; i++) caterva_lock_release(pTab->aVar[i].pLock);
}

/* Variable p: opened again for writing when needed, leftovers collected once, begun. */
static int cvVarBegin(CvVtab *pTab, CvVar *p) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  int r;
  if (!p->bWritable || p->iGenLocked != p->iGen + 1 ||
      caterva_schunk_stale(pCtx, caterva_array_schunk(p->pArr)) != 0) {
    caterva_array *pNew = 0;
    r = cvArrayOpen(pTab->pConn, p->zPath, CATERVA_OPEN_WRITE, &pTab->remote, &pNew);
    if (r < 0) return cvLibError(pTab, r);
    if (caterva_array_ndim(pNew) != pTab->nDim || caterva_array_itemsize(pNew) != p->item.szItem) {
      caterva_array_free(pNew);
      cvSetError(pTab, "caterva: '%s' was replaced by an array of another kind", p->zPath);
      return SQLITE_ERROR;
    }
    caterva_schunk_set_flags(caterva_array_schunk(pNew),
                             CATERVA_SC_NO_AUTOCOMPACT | CATERVA_SC_RETAIN_MAPS |
                                 (pTab->bSync ? 0 : CATERVA_SC_NOSYNC));
    caterva_array_set_write_cache(pNew, pTab->szCache);
    cvFillInitItem(pTab->pConn, &p->item, p->aFill, pNew);
    r = cvRetire(pTab, p->pArr);
    p->pArr = pNew;
    p->bWritable = 1;
    cvVarReset(p);
    if (r != SQLITE_OK) return r;
  }
  if (memcmp(caterva_array_shape(p->pArr), pTab->aShape, sizeof(int64_t) * (size_t)pTab->nDim)) {
    cvSetError(pTab, "caterva: '%s' no longer has the shape of the table's first array '%s': "
                     "the table cannot write them together", p->zPath, pTab->zPath);
    return SQLITE_ERROR;
  }
  if (!p->bCollected) {
    p->bCollected = 1;
    (void)caterva_schunk_collect(pCtx, caterva_array_schunk(p->pArr), 0, 0);
  }
  r = caterva_array_begin(pCtx, p->pArr);
  if (r < 0) return cvLibError(pTab, r);
  p->iGen = p->iGenLocked;
  p->bWrote = 0;
  return SQLITE_OK;
}

/* Roll back whatever transactions are open and release every lock (a failed xBegin). */
static void cvVarsAbort(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  for (int i = 0; i <= pTab->nVar; i++) {
    caterva_array *a = cvArrOf(pTab, i);
    if (a && caterva_schunk_in_txn(caterva_array_schunk(a))) (void)caterva_array_rollback(pCtx, a);
  }
  cvInitGeometry(pTab);
  cvVarsUnlock(pTab);
  caterva_lock_release(pTab->pLock);
}

int cvVarsBegin(CvVtab *pTab) {
  CvOrder o;
  int rc, i;
  if (pTab->bRemote) return cvVarsS3Begin(pTab);
  if (pTab->bReadLocked) { /* lock_reads: our own shared lock would block us */
    caterva_lock_release(pTab->pLock);
    pTab->bReadLocked = 0;
  }
  rc = cvOrderBuild(pTab, &o);
  if (rc != SQLITE_OK) return rc;
  for (i = 0; i < o.n && rc == SQLITE_OK; i++) {
    int j = o.aIdx[i];
    rc = cvLockWaitOn(pTab, cvPathOf(pTab, j), cvLockOf(pTab, j), 1,
                      j == 0 ? &pTab->iGenLocked : &pTab->aVar[j - 1].iGenLocked);
  }
  for (i = 0; i < o.n && rc == SQLITE_OK; i++)
    rc = cvRecover(pTab, cvPathOf(pTab, o.aIdx[i]), o.azReal, o.n);
  cvOrderFree(&o);
  if (rc == SQLITE_OK) rc = cvBeginFirst(pTab);
  for (i = 0; i < pTab->nVar && rc == SQLITE_OK; i++) rc = cvVarBegin(pTab, &pTab->aVar[i]);
  if (rc != SQLITE_OK) {
    cvVarsAbort(pTab);
    return rc;
  }
  pTab->bInTxn = 1;
  pTab->bGroupFailed = 0;
  return SQLITE_OK;
}

/* Roll back array i's transaction after a commit without it (it wrote nothing). */
static int cvUnwritten(CvVtab *pTab, int i) {
  int r = caterva_array_rollback(pTab->pConn->pCtx, cvArrOf(pTab, i));
  if (i == 0) cvInitGeometry(pTab);
  return r < 0 ? cvLibError(pTab, r) : SQLITE_OK;
}

int cvVarsSync(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  caterva_array *aW[CV_NARR_MAX];
  caterva_lock *aL[CV_NARR_MAX];
  int aI[CV_NARR_MAX], nW = 0, i, r = CATERVA_OK, rc = SQLITE_OK;
  if (pTab->bCommitted) return SQLITE_OK;
  if (pTab->bRemote) return cvVarsS3Sync(pTab);
  for (i = 0; i <= pTab->nVar; i++) {
    if (!(i == 0 ? pTab->bWrote : pTab->aVar[i - 1].bWrote)) continue;
    aI[nW] = i;
    aL[nW] = *cvLockOf(pTab, i);
    aW[nW++] = cvArrOf(pTab, i);
  }
  if (nW == 1) r = cvCommitArray(pTab, aW[0]);
  else if (nW > 1) r = caterva_array_commit_group(pCtx, aW, nW, pTab->bSync, aL);
  if (r < 0) {
    pTab->bGroupFailed = 1; /* xRollback follows: every handle is opened again */
    return cvLibError(pTab, r);
  }
  for (i = 0; i <= pTab->nVar; i++) {
    int bW = i == 0 ? pTab->bWrote : pTab->aVar[i - 1].bWrote;
    if (!bW && rc == SQLITE_OK) rc = cvUnwritten(pTab, i);
  }
  /* a group commit bumped the written arrays' counters once more */
  for (i = 0; i < nW && nW > 1; i++) {
    uint64_t g = 0;
    if (aL[i] == 0 || caterva_lock_generation(pCtx, aL[i], &g) < 0) continue;
    if (aI[i] == 0) pTab->iGen = g;
    else pTab->aVar[aI[i] - 1].iGen = g;
  }
  if (nW > 0) cvInitGeometry(pTab);
  if (rc == SQLITE_OK) pTab->bCommitted = 1;
  return rc;
}

int cvVarsCommit(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  if (!pTab->bCommitted) (void)cvVarsSync(pTab);
  pTab->bCommitted = 0;
  for (int i = 0; i <= pTab->nVar && pTab->nCursor == 0; i++) {
    if (cvCompactAfterCommit(pCtx, caterva_array_schunk(cvArrOf(pTab, i)), pTab->nMaxDead)) {
      if (i == 0) cvCacheInvalidate(&pTab->cache);
      else cvCacheInvalidate(&pTab->aVar[i - 1].cache);
    }
  }
  for (int i = 0; i < pTab->nVar; i++) {
    /* blocks cached by the scans of this transaction may predate its writes */
    if (pTab->bDirty) cvCacheInvalidate(&pTab->aVar[i].cache);
    pTab->aVar[i].bWrote = 0;
  }
  cvVarsUnlock(pTab);
  cvTxnEnd(pTab);
  return SQLITE_OK;
}

int cvVarsRollback(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  int bFailed = pTab->bGroupFailed;
  for (int i = 0; i <= pTab->nVar; i++) {
    caterva_array *a = cvArrOf(pTab, i);
    int r = -1;
    if (caterva_schunk_in_txn(caterva_array_schunk(a))) r = caterva_array_rollback(pCtx, a);
    if (r < 0 || bFailed) { /* the handle may no longer match the file: read it again */
      if (i == 0) pTab->bWritable = 0, pTab->iGen = 0;
      else pTab->aVar[i - 1].bWritable = 0, pTab->aVar[i - 1].iGen = 0;
    }
    if (i > 0) {
      cvVarReset(&pTab->aVar[i - 1]);
      pTab->aVar[i - 1].bWrote = 0;
    }
  }
  cvInitGeometry(pTab);
  cvCacheInvalidate(&pTab->cache);
  pTab->bCommitted = 0;
  pTab->bGroupFailed = 0;
  cvVarsUnlock(pTab);
  cvTxnEnd(pTab);
  return SQLITE_OK;
}

int cvVarsSavepoint(CvVtab *pTab, int iSavepoint, int eOp) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  int rc = SQLITE_OK;
  for (int i = 0; i <= pTab->nVar; i++) {
    caterva_array *a = cvArrOf(pTab, i);
    int r = CATERVA_OK;
    if (eOp == CV_SP_SAVE) r = caterva_array_savepoint(pCtx, a, iSavepoint);
    else if (eOp == CV_SP_RELEASE) (void)caterva_array_release(pCtx, a, iSavepoint);
    else r = caterva_array_rollback_to(pCtx, a, iSavepoint);
    if (eOp == CV_SP_ROLLBACK && i > 0) cvVarReset(&pTab->aVar[i - 1]);
    if (r < 0 && rc == SQLITE_OK) rc = cvLibError(pTab, r);
  }
  if (eOp == CV_SP_ROLLBACK) {
    cvInitGeometry(pTab);
    cvCacheInvalidate(&pTab->cache);
  }
  return rc;
}

int cvVarsPrepareRead(CvVtab *pTab) {
  for (int i = 0; i < pTab->nVar; i++) {
    CvVar *p = &pTab->aVar[i];
    if (caterva_array_pending(p->pArr)) {
      int r = caterva_array_flush(pTab->pConn->pCtx, p->pArr);
      if (r < 0) return cvLibError(pTab, r);
    }
    if (pTab->bDirty) cvCacheInvalidate(&p->cache);
  }
  return SQLITE_OK;
}

/* ---- what a statement reads ------------------------------------------------------------ */

/* Is every array of the table under an s3:// prefix (a group in S3: vtab_vars_s3.c)? */
static int cvVarsAllS3(CvVtab *pTab) {
  for (int i = 0; i <= pTab->nVar; i++)
    if (sqlite3_strnicmp(cvPathOf(pTab, i), "s3://", 5) != 0) return 0;
  return 1;
}

/* Every array's generation counter (0 without a sidecar; one that appeared is used). */
static void cvVarsGens(CvVtab *pTab, uint64_t *aGen) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  for (int i = 0; i <= pTab->nVar; i++) {
    caterva_lock **pp = cvLockOf(pTab, i);
    aGen[i] = 0;
    if (*pp == 0 && caterva_lock_open_existing(pCtx, cvPathOf(pTab, i), pp) < 0) *pp = 0;
    if (*pp) (void)caterva_lock_generation(pCtx, *pp, &aGen[i]);
  }
}

/* The first array named by a pending group journal, or -1. */
static int cvVarsPending(CvVtab *pTab) {
  for (int i = 0; i <= pTab->nVar; i++)
    if (caterva_group_journal(pTab->pConn->pCtx, cvPathOf(pTab, i), 0, 0) == CATERVA_GROUP_PENDING)
      return i;
  return -1;
}

/* Is no writer holding any of the arrays (so a pending journal's writer is gone)? */
static int cvVarsWriterGone(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  int bGone = 1;
  for (int i = 0; i <= pTab->nVar && bGone; i++) {
    caterva_lock *pLk = *cvLockOf(pTab, i);
    if (pLk == 0) continue;
    if (pTab->bReadLocked && i == 0) continue; /* we hold it shared already */
    if (caterva_lock_shared(pCtx, pLk) != CATERVA_OK) bGone = 0;
    else caterva_lock_release(pLk);
  }
  return bGone;
}

int cvVarsStatementStart(CvVtab *pTab) {
  uint64_t aG1[CV_NARR_MAX], aG2[CV_NARR_MAX];
  int rc, waited = 0, timeout = -1, iJ;
  if (pTab->bInTxn || pTab->nCursor > 0) return SQLITE_OK;
  if (pTab->bRemote && cvVarsAllS3(pTab)) return cvVarsS3StatementStart(pTab);
  for (;;) {
    cvVarsGens(pTab, aG1);
    iJ = cvVarsPending(pTab);
    if (iJ < 0) {
      rc = cvStatementStartFirst(pTab);
      if (rc == SQLITE_OK) rc = cvVarsRefresh(pTab);
      if (rc != SQLITE_OK) return rc;
      iJ = cvVarsPending(pTab);
      cvVarsGens(pTab, aG2);
      if (iJ < 0 && memcmp(aG1, aG2, sizeof(uint64_t) * (size_t)(pTab->nVar + 1)) == 0)
        return SQLITE_OK;
    }
    if (iJ >= 0 && cvVarsWriterGone(pTab)) {
      cvSetError(pTab, "caterva: a commit to several arrays of this table was interrupted "
                       "(journal '%s.cvjournal'); the table's next write finishes it (for "
                       "instance DELETE FROM the table WHERE 0); until then it cannot be read",
                 cvPathOf(pTab, iJ));
      return SQLITE_ERROR;
    }
    if (timeout < 0) timeout = cvBusyTimeout(pTab->db);
    if (waited >= timeout) break;
    cvSleepMs(2);
    waited += 2;
  }
  cvSetError(pTab, "caterva: a commit to several arrays of '%s' is in progress", pTab->zPath);
  return SQLITE_BUSY;
}

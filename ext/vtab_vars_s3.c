/*
 * vtab_vars_s3.c -- write transactions and statements of a table over several arrays in S3
 * (sparse frames under s3:// prefixes). The protocol is core/group_s3.c's (and
 * docs/guarantees.md, "Tables over several arrays in S3"); here the table's part of it:
 *
 *   xBegin       no lock (the leader's conditional PUT decides): every array read again
 *                when it changed, the leader (the smallest prefix) first; a committed group
 *                transaction whose roll-forward has not landed is rolled forward, arrays not
 *                yet marked as members get the mark (caterva_group_s3_ready); then every
 *                array's transaction begins.
 *   xSync        one group commit (caterva_group_s3_commit): the changed members' indexes
 *                staged, the leader's commit with the record (the commit point), the
 *                roll-forward. BUSY when another writer committed first: nothing visible.
 *   statements   the leader read first, then the other arrays, then a check that the leader
 *                has not changed and that no member is still at a base its record names (a
 *                roll-forward in flight: wait up to the busy timeout).
 * Savepoints, ROLLBACK and xCommit are the local table's (vtab_vars_txn.c): without locks.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <string.h>

#define CV_NARR (CV_MAX_VARS + 1)

static caterva_array *cvS3Arr(CvVtab *pTab, int i) {
  return i == 0 ? pTab->pArr : pTab->aVar[i - 1].pArr;
}

static void cvS3Arrays(CvVtab *pTab, caterva_array **aA) {
  for (int i = 0; i <= pTab->nVar; i++) aA[i] = cvS3Arr(pTab, i);
}

static int cvS3Leader(CvVtab *pTab) {
  caterva_array *aA[CV_NARR];
  cvS3Arrays(pTab, aA);
  return caterva_group_s3_leader(pTab->pConn->pCtx, aA, pTab->nVar + 1);
}

/* Open variable p again (mode) and install it. */
static int cvS3VarReopen(CvVtab *pTab, CvVar *p, int mode) {
  caterva_array *pNew = 0;
  int r = cvArrayOpen(pTab->pConn, p->zPath, mode, &pTab->remote, &pNew);
  if (r < 0) return cvLibError(pTab, r);
  if (caterva_array_ndim(pNew) != pTab->nDim || caterva_array_itemsize(pNew) != p->item.szItem) {
    caterva_array_free(pNew);
    cvSetError(pTab, "caterva: '%s' was replaced by an array of another kind", p->zPath);
    return SQLITE_ERROR;
  }
  if (mode == CATERVA_OPEN_WRITE) {
    caterva_array_set_write_cache(pNew, pTab->szCache);
    cvFillInitItem(pTab->pConn, &p->item, p->aFill, pNew);
  }
  r = cvRetire(pTab, p->pArr);
  p->pArr = pNew;
  p->bWritable = mode == CATERVA_OPEN_WRITE;
  cvVarReset(p);
  return r;
}

/* Array i read again when it changed, is forced to, or (mode _WRITE) is read-only. */
static int cvS3Fresh(CvVtab *pTab, int i, int mode, int bForce) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  caterva_array *a = cvS3Arr(pTab, i);
  int bWritable = i == 0 ? pTab->bWritable : pTab->aVar[i - 1].bWritable, r = 0;
  if (!bForce && !(mode == CATERVA_OPEN_WRITE && !bWritable)) {
    r = caterva_schunk_stale(pCtx, caterva_array_schunk(a));
    if (r < 0) return cvLibError(pTab, r);
    if (r == 0) return SQLITE_OK;
  }
  if (i == 0) return cvReopen(pTab, mode);
  return cvS3VarReopen(pTab, &pTab->aVar[i - 1], mode);
}

/* Every array fresh, the leader first (a member read after the leader is never older than
** what the leader's record assumes). aForce: arrays to read again anyway, or NULL. */
static int cvS3FreshAll(CvVtab *pTab, int mode, const int *aForce) {
  int iLead = cvS3Leader(pTab), rc;
  if (iLead < 0) return cvLibError(pTab, iLead);
  rc = cvS3Fresh(pTab, iLead, mode, aForce && aForce[iLead]);
  for (int i = 0; i <= pTab->nVar && rc == SQLITE_OK; i++)
    if (i != iLead) rc = cvS3Fresh(pTab, i, mode, aForce && aForce[i]);
  return rc;
}

/* Does every further array still have the table's shape? */
static int cvS3Shapes(CvVtab *pTab) {
  for (int i = 0; i < pTab->nVar; i++) {
    CvVar *p = &pTab->aVar[i];
    if (memcmp(caterva_array_shape(p->pArr), pTab->aShape, sizeof(int64_t) * (size_t)pTab->nDim)) {
      cvSetError(pTab, "caterva: '%s' no longer has the shape of the table's first array "
                       "'%s': the table cannot read or write them together", p->zPath, pTab->zPath);
      return SQLITE_ERROR;
    }
  }
  return SQLITE_OK;
}

static void cvS3Abort(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  for (int i = 0; i <= pTab->nVar; i++) {
    caterva_array *a = cvS3Arr(pTab, i);
    if (a && caterva_schunk_in_txn(caterva_array_schunk(a))) (void)caterva_array_rollback(pCtx, a);
  }
  cvInitGeometry(pTab);
}

int cvVarsS3Begin(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  caterva_array *aA[CV_NARR];
  int aRe[CV_NARR], n = pTab->nVar + 1, rc = SQLITE_OK, r = 1, nTry;
  memset(aRe, 0, sizeof(aRe));
  for (nTry = 0; r == 1 && nTry < CV_S3_TRIES && rc == SQLITE_OK; nTry++) {
    rc = cvS3FreshAll(pTab, CATERVA_OPEN_WRITE, aRe);
    if (rc != SQLITE_OK) break;
    cvS3Arrays(pTab, aA);
    r = caterva_group_s3_ready(pCtx, aA, n, aRe);
    if (r < 0) rc = cvLibError(pTab, r);
  }
  if (rc == SQLITE_OK && r == 1) {
    cvSetError(pTab, "caterva: '%s': other writers kept committing while this table made its "
                     "arrays ready to write; run it again", pTab->zPath);
    rc = SQLITE_BUSY;
  }
  if (rc == SQLITE_OK) rc = cvS3Shapes(pTab);
  for (int i = 0; i < n && rc == SQLITE_OK; i++) {
    r = caterva_array_begin(pCtx, cvS3Arr(pTab, i));
    if (r < 0) rc = cvLibError(pTab, r);
    if (i > 0) pTab->aVar[i - 1].bWrote = 0;
  }
  if (rc != SQLITE_OK) {
    cvS3Abort(pTab);
    return rc;
  }
  pTab->bInTxn = 1;
  pTab->bGroupFailed = 0;
  return SQLITE_OK;
}

int cvVarsS3Sync(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  caterva_array *aA[CV_NARR];
  int aW[CV_NARR], aRe[CV_NARR], n = pTab->nVar + 1, nW = 0, r = CATERVA_OK, rc = SQLITE_OK;
  if (pTab->bCommitted) return SQLITE_OK;
  cvS3Arrays(pTab, aA);
  for (int i = 0; i < n; i++) {
    aW[i] = i == 0 ? pTab->bWrote : pTab->aVar[i - 1].bWrote;
    aRe[i] = 0;
    nW += aW[i];
  }
  if (nW > 0) r = caterva_group_s3_commit(pCtx, aA, aW, n, aRe);
  for (int i = 0; i < n; i++) {
    if (!aRe[i]) continue; /* its handle is not what is published: read it again */
    if (i == 0) pTab->bWritable = 0;
    else pTab->aVar[i - 1].bWritable = 0;
  }
  if (r < 0) {
    pTab->bGroupFailed = 1; /* xRollback follows: every handle is opened again */
    return cvLibError(pTab, r);
  }
  for (int i = 0; i < n; i++) { /* the arrays the commit left out: nothing to commit */
    caterva_array *a = aA[i];
    if (!caterva_schunk_in_txn(caterva_array_schunk(a))) continue;
    r = caterva_array_rollback(pCtx, a);
    if (r < 0 && rc == SQLITE_OK) rc = cvLibError(pTab, r);
  }
  cvInitGeometry(pTab);
  if (rc == SQLITE_OK) pTab->bCommitted = 1;
  return rc;
}

/* Has any array changed since it was read? The leader is asked last: when it has not
** changed, no group commit came after the one it holds, so no later roll-forward either. */
static int cvS3AnyStale(CvVtab *pTab, int iLead) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  for (int i = 0; i <= pTab->nVar; i++) {
    int r = i == iLead ? 0 : caterva_schunk_stale(pCtx, caterva_array_schunk(cvS3Arr(pTab, i)));
    if (r != 0) return r;
  }
  return caterva_schunk_stale(pCtx, caterva_array_schunk(cvS3Arr(pTab, iLead)));
}

int cvVarsS3StatementStart(CvVtab *pTab) {
  caterva_array *aA[CV_NARR];
  int waited = 0, timeout = -1, rc, r, iLead;
  if (pTab->bInTxn || pTab->nCursor > 0) return SQLITE_OK;
  iLead = cvS3Leader(pTab);
  if (iLead < 0) return cvLibError(pTab, iLead);
  for (;;) {
    rc = cvS3FreshAll(pTab, CATERVA_OPEN_READ, 0);
    if (rc == SQLITE_OK) rc = cvS3Shapes(pTab);
    if (rc != SQLITE_OK) return rc;
    cvS3Arrays(pTab, aA);
    r = caterva_group_s3_consistent(pTab->pConn->pCtx, aA, pTab->nVar + 1);
    if (r < 0) return cvLibError(pTab, r);
    if (r == 1) {
      r = cvS3AnyStale(pTab, iLead);
      if (r < 0) return cvLibError(pTab, r);
      if (r == 0) return SQLITE_OK;
      continue; /* a commit came between: read again */
    }
    if (timeout < 0) timeout = cvBusyTimeout(pTab->db);
    if (waited >= timeout) break;
    cvSleepMs(20);
    waited += 20;
  }
  cvSetError(pTab, "caterva: a commit to several arrays of '%s' in S3 is being completed, or "
                   "its writer stopped before completing it; the table's next write completes "
                   "it (for instance DELETE FROM the table WHERE 0)", pTab->zPath);
  return SQLITE_BUSY;
}

/*
 * vtab_txn.c -- transactions of a `caterva` table over one array, and what a statement sees.
 *
 * Notes on transactions
 * ---------------------
 * SQLite drives a virtual table's transaction with xBegin (before the first xUpdate of a
 * write transaction), xSync (phase one of the commit), xCommit, xRollback, and xSavepoint,
 * xRelease, xRollbackTo for SAVEPOINTs and for the statement savepoints it opens so that a
 * failing statement inside BEGIN ... COMMIT is undone alone. This file maps them onto the
 * library's array transactions (core/txn.c, core/wcache.c):
 *
 *   xBegin       take the array's lock (the `.b2lock` sidecar, c-blosc2's protocol: flock
 *                LOCK_EX, generation counter + 1), waiting up to the connection's busy
 *                timeout, else SQLITE_BUSY; finish a group commit of several arrays that a
 *                crash interrupted and that named this one (cvRecover: the journal
 *                `<path>.cvjournal`, core/group.c); make sure the handle is current and
 *                writable; caterva_array_begin. Nothing else on disk changes.
 *
 * These are a table over one array's (cvOne*); a table over several arrays (nVar > 0) has its
 * own (vtab_vars_txn.c, built on these), and vtab_txn_hooks.c picks one of the two.
 *   xUpdate      (vtab_write.c) cells go to the write-back cache; full chunks and evicted ones
 *                are written past the committed end of the file (never over a committed
 *                byte).
 *   xSavepoint   flush the cache, remember the state (a mark).
 *   xRollbackTo  back to a mark: the file is truncated to where it was then.
 *   xSync        all fallible work of the commit: flush, write index, trailer and header at
 *                one commit point (fsync unless synchronous=off). If it fails, SQLite calls
 *                xRollback and the file is as before xBegin.
 *   xCommit      cannot fail: compact when dead space is large (half of the file and
 *                CV_COMPACT_MIN_DEAD; under the lock; a failure only leaves a larger file),
 *                release the lock.
 *   xRollback    truncate back, restore the shape, release the lock: the file is
 *                byte-identical to what it was at xBegin.
 *
 * What a statement reads: when a statement opens its first cursor on the table (xOpen;
 * a join then calls xFilter once per outer row on that cursor), the table checks whether
 * the file changed since it was loaded (another handle committed: the
 * generation counter or the header's commit bytes differ; caterva_schunk_stale) and, if
 * so, reopens it -- under a brief LOCK_SH when that can be had at once, else without it,
 * since our writers never change committed bytes in place. Cursors opened before keep the
 * array they started with (it stays alive until they close). Inside a write transaction
 * the connection reads its own writes: xFilter flushes the cache first.
 *
 * Between the database and the array file there is no two-phase commit: an array commit
 * (xSync) that succeeds is durable even if SQLite's own commit of ordinary tables then
 * fails, and vice versa a crash between the two leaves one committed and not the other.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The connection's busy timeout in ms (PRAGMA busy_timeout), 0 if none or unknown. */
int cvBusyTimeout(sqlite3 *db) {
  sqlite3_stmt *pStmt = 0;
  int ms = 0;
  if (sqlite3_prepare_v2(db, "PRAGMA busy_timeout", -1, &pStmt, 0) == SQLITE_OK &&
      sqlite3_step(pStmt) == SQLITE_ROW)
    ms = sqlite3_column_int(pStmt, 0);
  sqlite3_finalize(pStmt);
  return ms > 0 ? ms : 0;
}

void cvSleepMs(int ms) {
  struct timespec ts;
  ts.tv_sec = ms / 1000;
  ts.tv_nsec = (long)(ms % 1000) * 1000000L;
  nanosleep(&ts, 0);
}

/* Keep an array that cursors may still read until none is open. */
int cvRetire(CvVtab *pTab, caterva_array *pArr) {
  CvRetired *p;
  if (pArr == 0) return SQLITE_OK;
  if (pTab->nCursor == 0) {
    caterva_array_free(pArr);
    return SQLITE_OK;
  }
  p = sqlite3_malloc(sizeof(*p));
  if (p == 0) return SQLITE_NOMEM;
  p->pArr = pArr;
  p->pNext = pTab->pRetired;
  pTab->pRetired = p;
  return SQLITE_OK;
}

void cvFreeRetired(CvVtab *pTab) {
  while (pTab->pRetired) {
    CvRetired *p = pTab->pRetired;
    pTab->pRetired = p->pNext;
    caterva_array_free(p->pArr);
    sqlite3_free(p);
  }
}

void cvFillInitItem(CvConn *pConn, const CvItemType *pItem, uint8_t *aFill, caterva_array *pArr) {
  uint8_t a[16];
  int n = pItem->szItem;
  memset(aFill, 0, 16);
  if (n > 16) return;
  if (caterva_array_get_fill(pArr, a, (int)sizeof(a)) <= 0 && pItem->eKind == CV_ITEM_FLOAT)
    (void)cvNumberToItem(pItem, NAN, a);
  memcpy(aFill, a, (size_t)n);
  (void)caterva_array_set_fill(pConn->pCtx, pArr, a, 0);
}

void cvFillInit(CvVtab *pTab, caterva_array *pArr) {
  cvFillInitItem(pTab->pConn, &pTab->item, pTab->aFill, pArr);
}

/* Make pArr the table's array: geometry, item fill, cache (anew when the blocks changed
** size: a file replaced by an array with other blocks). SQLITE_BUSY when the blocks changed
** while a cursor still reads one of the old ones. */
static int cvInstall(CvVtab *pTab, caterva_array *pArr) {
  pTab->pArr = pArr;
  cvInitGeometry(pTab);
  cvCacheInvalidate(&pTab->cache);
  if (cvCacheResize(&pTab->cache, pTab->nBlockItem * pTab->item.szItem, pTab->szCache) ==
      SQLITE_OK)
    return SQLITE_OK;
  cvSetError(pTab, "caterva: '%s' was replaced by an array with other blocks while it was "
                   "being read: run the statement again", pTab->zPath);
  return SQLITE_BUSY;
}

/* Open the array again (mode CATERVA_OPEN_READ or _WRITE) and install it. */
int cvReopen(CvVtab *pTab, int mode) {
  caterva_array *pNew = 0;
  int rc = cvArrayOpen(pTab->pConn, pTab->zPath, mode, &pTab->remote, &pNew);
  if (rc < 0) return cvLibError(pTab, rc);
  if (caterva_array_ndim(pNew) != pTab->nDim ||
      caterva_array_itemsize(pNew) != pTab->item.szItem) {
    caterva_array_free(pNew);
    cvSetError(pTab, "caterva: '%s' was replaced by an array of another kind; "
                     "drop the table and create it again", pTab->zPath);
    return SQLITE_ERROR;
  }
  if (mode == CATERVA_OPEN_WRITE) {
    caterva_schunk_set_flags(caterva_array_schunk(pNew),
                             CATERVA_SC_NO_AUTOCOMPACT | CATERVA_SC_RETAIN_MAPS |
                                 (pTab->bSync ? 0 : CATERVA_SC_NOSYNC));
    caterva_array_set_write_cache(pNew, pTab->szCache);
    cvFillInit(pTab, pNew);
  }
  rc = cvRetire(pTab, pTab->pArr);
  if (cvInstall(pTab, pNew) != SQLITE_OK && rc == SQLITE_OK) rc = SQLITE_BUSY;
  pTab->bWritable = mode == CATERVA_OPEN_WRITE;
  return rc;
}

/* The generation counter of the sidecar (0 without one). */
static uint64_t cvGeneration(CvVtab *pTab) {
  uint64_t g = 0;
  if (pTab->pLock) (void)caterva_lock_generation(0, pTab->pLock, &g);
  return g;
}

static int cvLockWait(CvVtab *pTab, int bWrite);

int cvOnePrepareRead(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  /* our own writes become visible to this scan */
  if (caterva_array_pending(pTab->pArr)) {
    int r = caterva_array_flush(pCtx, pTab->pArr);
    if (r < 0) return cvLibError(pTab, r);
  }
  if (pTab->bDirty) {
    cvCacheInvalidate(&pTab->cache);
    pTab->bDirty = 0;
  }
  return SQLITE_OK;
}

int cvRemoteReopen(CvVtab *pTab) {
  pTab->iLibRc = 0;
  return cvReopen(pTab, CATERVA_OPEN_READ);
}

int cvRemoteVerify(CvVtab *pTab) {
  int r = caterva_schunk_verify(pTab->pConn->pCtx, caterva_array_schunk(pTab->pArr));
  if (r < 0) return cvLibError(pTab, r);
  return r == 0 ? SQLITE_OK : cvRemoteReopen(pTab);
}

/* The first array of the table: read it again if another writer committed. */
int cvStatementStartFirst(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  int rc = SQLITE_OK, bLocked = 0;
  if (pTab->bInTxn || pTab->nCursor > 0) return SQLITE_OK;
  /* a sidecar that appeared since (a writer started): use it from now on */
  if (pTab->pLock == 0 && !pTab->bRemote &&
      caterva_lock_open_existing(pCtx, pTab->zPath, &pTab->pLock) < 0)
    pTab->pLock = 0;
  if (pTab->bLockReads && !pTab->bReadLocked) {
    /* lock_reads=1: no writer (ours or a foreign one) may change the file while the
    ** statement's cursors are open; released when the last one closes */
    rc = cvLockWait(pTab, 0);
    if (rc != SQLITE_OK) return rc;
    pTab->bReadLocked = bLocked = 1;
  }
  /* a remote array: the statement's first read checks the version (cvCursorFilter) */
  if (cvGeneration(pTab) == pTab->iGen &&
      (pTab->bRemote ? caterva_schunk_stale_later(pCtx, caterva_array_schunk(pTab->pArr))
                     : caterva_schunk_stale(pCtx, caterva_array_schunk(pTab->pArr))) == 0)
    return SQLITE_OK;
  if (!bLocked && pTab->pLock && caterva_lock_shared(pCtx, pTab->pLock) == CATERVA_OK) bLocked = 2;
  pTab->iGen = cvGeneration(pTab);
  rc = cvReopen(pTab, CATERVA_OPEN_READ);
  if (bLocked == 2) caterva_lock_release(pTab->pLock);
  return rc;
}

int cvLockWaitOn(CvVtab *pTab, const char *zPath, caterva_lock **ppLock, int bWrite,
                 uint64_t *pGen) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  int rc, waited = 0, timeout = -1, step = 1;
  if (*ppLock == 0 && !pTab->bRemote &&
      caterva_lock_open(pCtx, zPath, ppLock) < 0) /* the first writer creates it */
    *ppLock = 0;
  if (*ppLock == 0) {
    cvSetError(pTab, "caterva: cannot lock '%s': its lock file '%s.b2lock' cannot be created",
               zPath, zPath);
    return SQLITE_READONLY;
  }
  for (;;) {
    uint64_t g = 0;
    rc = bWrite ? caterva_lock_exclusive(pCtx, *ppLock, &g) : caterva_lock_shared(pCtx, *ppLock);
    if (rc == CATERVA_OK) {
      if (bWrite && pGen) *pGen = g;
      return SQLITE_OK;
    }
    if (rc != CATERVA_E_BUSY) return cvLibError(pTab, rc);
    if (timeout < 0) timeout = cvBusyTimeout(pTab->db);
    if (waited >= timeout) break;
    cvSleepMs(step);
    waited += step;
    if (step < 50) step *= 2;
  }
  cvSetError(pTab, "caterva: '%s' is locked by another writer", zPath);
  return SQLITE_BUSY;
}

/* Take the table's (first array's) lock, waiting up to the busy timeout. */
static int cvLockWait(CvVtab *pTab, int bWrite) {
  return cvLockWaitOn(pTab, pTab->zPath, &pTab->pLock, bWrite, &pTab->iGenLocked);
}

int cvRecover(CvVtab *pTab, const char *zPath, char **azHeld, int nHeld) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  caterva_lock *aLock[CATERVA_GROUP_MAX];
  char **az = 0;
  int n = 0, nLock = 0, i, k, r, rc = SQLITE_OK, outcome = 0;
  r = caterva_group_journal(pCtx, zPath, &az, &n);
  if (r < 0) return cvLibError(pTab, r);
  if (r == CATERVA_GROUP_NONE) return SQLITE_OK;
  /* the arrays of the interrupted group that this handle does not hold yet */
  for (i = 0; i < n && i < CATERVA_GROUP_MAX && rc == SQLITE_OK; i++) {
    for (k = 0; k < nHeld && strcmp(az[i], azHeld[k]) != 0; k++) {
    }
    if (k < nHeld) continue;
    aLock[nLock] = 0;
    rc = cvLockWaitOn(pTab, az[i], &aLock[nLock], 1, 0);
    if (aLock[nLock]) nLock++;
  }
  if (rc == SQLITE_OK && (r = caterva_group_recover(pCtx, zPath, &outcome)) < 0)
    rc = cvLibError(pTab, r);
  for (i = 0; i < nLock; i++) caterva_lock_free(aLock[i]);
  caterva_group_free_paths(az, n);
  return rc;
}

/* The first write transaction of this handle, under the exclusive lock and before it
** begins: remove what killed writers left (garbage: no committed state refers to it). A
** failure to remove is not the statement's failure; the next handle tries again. */
static void cvCollect(CvVtab *pTab) {
  pTab->bCollected = 1;
  (void)caterva_schunk_collect(pTab->pConn->pCtx, caterva_array_schunk(pTab->pArr), 0, 0);
}

char *cvRealPath(const char *zPath) {
  char *z = sqlite3_malloc(PATH_MAX);
  if (z && realpath(zPath, z) == 0) {
    sqlite3_free(z);
    z = 0;
  }
  return z;
}

/* A table over one array: an interrupted group commit that included it is finished first. */
static int cvRecoverOwn(CvVtab *pTab) {
  char *zReal = cvRealPath(pTab->zPath);
  int rc;
  if (zReal == 0) return SQLITE_OK; /* the reopen reports it */
  rc = cvRecover(pTab, pTab->zPath, &zReal, 1);
  sqlite3_free(zReal);
  return rc;
}

/* xBegin of a table over an array in S3: no lock (optimistic: the commit's conditional PUT
** decides, frame_s3.c); a handle that is read-only or older than the index moves to the
** newest version before the first write. http(s):// arrays refuse. */
static int cvRemoteBegin(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  int rc = SQLITE_OK, r;
  if (sqlite3_strnicmp(pTab->zPath, "s3://", 5) != 0) {
    cvSetError(pTab, "caterva: '%s' is served over http(s), which is read-only: arrays are "
               "written in S3 (s3://bucket/prefix/, a sparse frame)", pTab->zPath);
    return SQLITE_READONLY;
  }
  if (!pTab->bWritable || caterva_schunk_stale(pCtx, caterva_array_schunk(pTab->pArr)) != 0)
    rc = cvReopen(pTab, CATERVA_OPEN_WRITE);
  if (rc == SQLITE_OK && (r = caterva_array_begin(pCtx, pTab->pArr)) < 0) rc = cvLibError(pTab, r);
  if (rc == SQLITE_OK) pTab->bInTxn = 1;
  return rc;
}

/* xBegin of a table over one array. */
int cvOneBegin(CvVtab *pTab) {
  int rc;
  if (pTab->bInTxn) return SQLITE_OK;
  if (pTab->bRemote) return cvRemoteBegin(pTab);
  if (pTab->bReadLocked) { /* lock_reads: our own shared lock would block us */
    caterva_lock_release(pTab->pLock);
    pTab->bReadLocked = 0;
  }
  rc = cvLockWait(pTab, 1);
  if (rc != SQLITE_OK) return rc;
  rc = cvRecoverOwn(pTab);
  if (rc != SQLITE_OK) {
    caterva_lock_release(pTab->pLock);
    return rc;
  }
  rc = cvBeginFirst(pTab);
  if (rc != SQLITE_OK) {
    caterva_lock_release(pTab->pLock);
    return rc;
  }
  pTab->bInTxn = 1;
  return SQLITE_OK;
}

int cvBeginFirst(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  int rc = SQLITE_OK, r;
  /* Someone else wrote since we last did (the counter moved by more than our own lock) or
  ** our handle is read-only: open it again, under the lock. */
  if (!pTab->bWritable || pTab->iGenLocked != pTab->iGen + 1 ||
      caterva_schunk_stale(pCtx, caterva_array_schunk(pTab->pArr)) != 0)
    rc = cvReopen(pTab, CATERVA_OPEN_WRITE);
  if (rc == SQLITE_OK && !pTab->bCollected) cvCollect(pTab);
  if (rc == SQLITE_OK && (r = caterva_array_begin(pCtx, pTab->pArr)) < 0) rc = cvLibError(pTab, r);
  if (rc == SQLITE_OK) pTab->iGen = pTab->iGenLocked;
  return rc;
}

/* End of a transaction either way: the lock goes. */
/* With no cursor open, nothing points into the file maps that commits replaced: give them
** back (a connection that commits many times would otherwise keep one map per commit, up to
** the process's limit on mappings, until the table is closed). */
void cvReleaseMaps(CvVtab *pTab) {
  if (pTab->nCursor > 0) return;
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  if (pTab->pArr) caterva_schunk_release_maps(pCtx, caterva_array_schunk(pTab->pArr));
  for (int i = 0; i < pTab->nVar; i++)
    if (pTab->aVar[i].pArr)
      caterva_schunk_release_maps(pCtx, caterva_array_schunk(pTab->aVar[i].pArr));
}

void cvTxnEnd(CvVtab *pTab) {
  cvReleaseMaps(pTab);
  pTab->bInTxn = 0;
  /* blocks cached by the scans of this transaction may predate its writes */
  if (pTab->bDirty) cvCacheInvalidate(&pTab->cache);
  pTab->bDirty = 0;
  pTab->bWrote = 0;
  caterva_lock_release(pTab->pLock);
}

int cvCommitArray(CvVtab *pTab, caterva_array *pArr) {
  caterva_schunk *sc = caterva_array_schunk(pArr);
  int r;
  /* a commit that xCommit's compaction would follow writes the packed file at once (not
  ** with a cursor open: it reads the file, cvOneCommit) */
  caterva_schunk_set_commit_pack(sc, pTab->nCursor == 0 ? pTab->nMaxDead : -1);
  r = caterva_array_commit(pTab->pConn->pCtx, pArr, pTab->bSync);
  caterva_schunk_set_commit_pack(sc, -1);
  return r;
}

/* xSync: the commit itself (see the notes at the top). */
int cvOneSync(CvVtab *pTab) {
  int r;
  if (!pTab->bInTxn) return SQLITE_OK;
  /* nothing was written (an UPDATE that matched no cell): no commit, no fsync */
  if (pTab->bWrote) {
    r = cvCommitArray(pTab, pTab->pArr);
  } else {
    r = caterva_array_rollback(pTab->pConn->pCtx, pTab->pArr);
    /* the rollback read the metadata again: the labels borrowed the old coordinate vectors */
    cvInitGeometry(pTab);
  }
  if (r < 0) return cvLibError(pTab, r);
  pTab->bCommitted = 1;
  return SQLITE_OK;
}

int cvCompactAfterCommit(caterva_ctx *pCtx, caterva_schunk *sc, int nMaxDead) {
  /* Compaction renames a new file over the path: readers keep their old one. */
  if (!caterva_schunk_dead_over(sc, nMaxDead) || caterva_schunk_compact(pCtx, sc, 1) != CATERVA_OK)
    return 0;
  return caterva_schunk_dead_bytes(sc) == 0;
}

/* xCommit. */
int cvOneCommit(CvVtab *pTab) {
  if (!pTab->bInTxn) return SQLITE_OK;
  if (!pTab->bCommitted) (void)cvOneSync(pTab);
  pTab->bCommitted = 0;
  if (pTab->nCursor == 0 &&
      cvCompactAfterCommit(pTab->pConn->pCtx, caterva_array_schunk(pTab->pArr), pTab->nMaxDead))
    cvCacheInvalidate(&pTab->cache);
  cvTxnEnd(pTab);
  return SQLITE_OK;
}

void cvCompactOnClose(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  caterva_schunk *sc;
  uint64_t g;
  if (!pTab->bWritable || pTab->bInTxn || pTab->pLock == 0 || pTab->pArr == 0) return;
  sc = caterva_array_schunk(pTab->pArr);
  if (!caterva_schunk_dead_over(sc, pTab->nMaxDead)) return;
  /* only under the lock, and only if nobody committed since our handle saw the file */
  if (caterva_lock_exclusive(pCtx, pTab->pLock, &g) != CATERVA_OK) return;
  if (g == pTab->iGen + 1 && caterva_schunk_stale(pCtx, sc) == 0)
    (void)caterva_schunk_compact(pCtx, sc, 1);
  caterva_lock_release(pTab->pLock);
}

/* xRollback. */
int cvOneRollback(CvVtab *pTab) {
  int r;
  if (!pTab->bInTxn) return SQLITE_OK;
  pTab->bCommitted = 0;
  r = caterva_array_rollback(pTab->pConn->pCtx, pTab->pArr);
  cvInitGeometry(pTab);
  cvCacheInvalidate(&pTab->cache);
  if (r < 0) {
    /* the handle no longer matches the file: read it again next time */
    pTab->bWritable = 0;
    pTab->iGen = 0;
  }
  cvTxnEnd(pTab);
  return SQLITE_OK;
}

/* xSavepoint, xRelease, xRollbackTo (op: CV_SP_*). */
int cvOneSavepoint(CvVtab *pTab, int iSavepoint, int op) {
  int r = CATERVA_OK;
  if (!pTab->bInTxn) return SQLITE_OK;
  if (op == CV_SP_SAVE) {
    r = caterva_array_savepoint(pTab->pConn->pCtx, pTab->pArr, iSavepoint);
    return r < 0 ? cvLibError(pTab, r) : SQLITE_OK;
  }
  if (op == CV_SP_RELEASE) {
    (void)caterva_array_release(pTab->pConn->pCtx, pTab->pArr, iSavepoint);
    return SQLITE_OK;
  }
  r = caterva_array_rollback_to(pTab->pConn->pCtx, pTab->pArr, iSavepoint);
  cvInitGeometry(pTab);
  cvCacheInvalidate(&pTab->cache);
  return r < 0 ? cvLibError(pTab, r) : SQLITE_OK;
}

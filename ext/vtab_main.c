/*
 * vtab_main.c -- the `caterva` virtual table: an N-d array as a table of cells.
 *
 *   CREATE VIRTUAL TABLE t USING caterva('path' [, dims='a,b,c'] [, value='name']
 *                                        [, dtype='<f4'] [, cache_mb=N]);
 *
 * opens a contiguous frame file or a sparse frame directory holding a `b2nd` or `caterva`
 * array. The table has one INTEGER column per dimension, then the value column (ext_item.c says
 * how items become SQL values); one row per cell; the rowid is the C-order linear index.
 *
 *   path=      the file (or the first argument without a name)
 *   dims=      comma-separated dimension column names; default: the names stored in the
 *              file (`_ARRAY_DIMENSIONS`), else d0, d1, ...
 *   value=     name of the value column; default `value`
 *   dtype=     NumPy dtype string overriding the file's (caterva files carry none: without
 *              it their items are BLOBs); its item size must match the file's
 *   cache_mb=  megabytes of decompressed blocks the table may keep for repeated lookups
 *              (default 64; 0 disables the cache)
 *
 * Constraints on dimension columns become a box (or, with IN lists, a set of boxes): only
 * blocks intersecting it are visited, and when the value column is not read, none is
 * decompressed (vtab_plan.c plans, vtab_cursor.c scans). The table never writes: DROP TABLE leaves
 * the file alone.
 *
 * The module is SQLITE_VTAB_DIRECTONLY: it reads any file the process can, so a schema
 * from an untrusted database must not be able to use it behind the user's back.
 *
 * This file holds the module table and the table's lifetime; the mechanisms have their own
 * files (vtab_internal.h lists them).
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

/* ---- opening a table ---------------------------------------------------------------- */

caterva_array *cvTableArray(void *pTab) { return ((CvVtab *)pTab)->pArr; }

static void cvVtabFree(CvVtab *pTab) {
  if (pTab == 0) return;
  if (pTab->pConn) cvConnRemoveTable(pTab->pConn, pTab);
  if (pTab->bInTxn) (void)cvTxnRollback(&pTab->base);
  cvCompactOnClose(pTab);
  cvCacheClear(&pTab->cache);
  caterva_array_free(pTab->pArr);
  cvFreeRetired(pTab);
  caterva_lock_free(pTab->pLock);
  if (pTab->azCol) {
    for (int i = 0; i < pTab->nDim + 1 + pTab->nVar; i++) sqlite3_free(pTab->azCol[i]);
    sqlite3_free(pTab->azCol);
  }
  cvVarsFree(pTab);
  sqlite3_free(pTab->zPath);
  sqlite3_free(pTab->zEndpoint);
  sqlite3_free(pTab->zRegion);
  cvConnUnref(pTab->pConn);
  sqlite3_free(pTab->base.zErrMsg);
  sqlite3_free(pTab);
}

/*
** xConnect and xCreate: argv[0] is the module name, argv[1] the schema, argv[2] the table
** name, argv[3..] the arguments in parentheses.
*/
/* synchronous= : CATERVA_SYNC_FULL (full, on, 1; the default), CATERVA_SYNC_NORMAL (normal)
** or CATERVA_SYNC_OFF (off, 0); -1 if none of them. */
static int cvParseSync(const char *z) {
  if (z == 0 || sqlite3_stricmp(z, "full") == 0 || sqlite3_stricmp(z, "on") == 0 ||
      strcmp(z, "1") == 0)
    return CATERVA_SYNC_FULL;
  if (sqlite3_stricmp(z, "normal") == 0) return CATERVA_SYNC_NORMAL;
  if (sqlite3_stricmp(z, "off") == 0 || strcmp(z, "0") == 0) return CATERVA_SYNC_OFF;
  return -1;
}

/* CREATE VIRTUAL TABLE (bCreate) makes the array when the path does not exist and creation
** options are given, and refuses them for a path that exists; a later xConnect (the schema
** read again) opens what is there. */
static int cvCreateOrCheck(CvConn *pConn, const CvOptions *pOpt, int bCreate, char **pzErr) {
  struct stat st;
  int bExists;
  if (caterva_path_is_remote(pOpt->zPath)) {
    /* s3://: the upload fails, saying so, when the prefix holds an array already */
    if (!cvHasCreateOptions(pOpt) || !bCreate) return SQLITE_OK;
    return cvCreateArray(pConn, pOpt, pzErr);
  }
  if (cvHasRemoteOptions(pOpt)) {
    *pzErr = sqlite3_mprintf("caterva: endpoint=, region=, path_style=, http_connections=, "
                             "remote_cache_mb=, http_retries=, http_timeout_ms=, remote_fetch= and gc_grace= "
                             "apply to remote arrays (http://, https://, s3://), not to '%s'",
                             pOpt->zPath);
    return SQLITE_ERROR;
  }
  bExists = stat(pOpt->zPath, &st) == 0;
  if (!bCreate) return SQLITE_OK;
  if (bExists && cvHasCreateOptions(pOpt)) return cvCreateConflict(pOpt, pzErr);
  if (!bExists && cvHasCreateOptions(pOpt)) return cvCreateArray(pConn, pOpt, pzErr);
  return SQLITE_OK;
}

/* Copy the column names into the table, for messages. */
static int cvKeepNames(CvVtab *pTab, char **azName) {
  int n = pTab->nDim + 1 + pTab->nVar;
  pTab->azCol = sqlite3_malloc(sizeof(char *) * (size_t)n);
  if (pTab->azCol == 0) return SQLITE_NOMEM;
  memset(pTab->azCol, 0, sizeof(char *) * (size_t)n);
  for (int i = 0; i < n; i++) {
    pTab->azCol[i] = sqlite3_mprintf("%s", azName[i]);
    if (pTab->azCol[i] == 0) return SQLITE_NOMEM;
  }
  return SQLITE_OK;
}

/* The options of remote access, kept by the table (its reopens and further arrays use them). */
static int cvRemoteSetup(CvVtab *pTab, const CvOptions *pOpt, char **pzErr) {
  int rc = cvRemoteOptions(pOpt, &pTab->remote, pzErr);
  if (rc != SQLITE_OK) return rc;
  pTab->bRemote = caterva_path_is_remote(pOpt->zPath);
  if (pOpt->zEndpoint && (pTab->zEndpoint = sqlite3_mprintf("%s", pOpt->zEndpoint)) == 0)
    return SQLITE_NOMEM;
  if (pOpt->zRegion && (pTab->zRegion = sqlite3_mprintf("%s", pOpt->zRegion)) == 0)
    return SQLITE_NOMEM;
  pTab->remote.endpoint = pTab->zEndpoint;
  pTab->remote.region = pTab->zRegion;
  return SQLITE_OK;
}

static int cvConnectImpl(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                         sqlite3_vtab **ppVtab, char **pzErr, int bCreate) {
  CvConn *pConn = (CvConn *)pAux;
  CvOptions opt;
  CvVtab *pTab = 0;
  char *azName[CV_MAX_DIM + CV_MAX_VARS];
  int i, rc, iErr, nMaxDead = CV_MAX_DEAD_DEFAULT;
  memset(azName, 0, sizeof(azName));
  *ppVtab = 0;
  rc = cvOptionsParse(&opt, argc, argv, pzErr);
  if (rc == SQLITE_OK && caterva_bcolz_kind(opt.zPath) != CATERVA_BCOLZ_NONE) {
    rc = cvBzConnect(db, pConn, argv, &opt, ppVtab, pzErr);   /* vtab_bcolz.c */
    cvOptionsFree(&opt);
    return rc;
  }
  if (rc == SQLITE_OK && caterva_bcolz_converted(opt.zPath))
    rc = cvBzExpandConverted(pConn, &opt, pzErr);            /* vtab_bcolz.c */
  if (rc == SQLITE_OK && cvParseSync(opt.zSync) < 0) {
    *pzErr = sqlite3_mprintf("caterva: synchronous= must be full, normal or off");
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK && opt.zLockReads && strcmp(opt.zLockReads, "0") != 0 &&
      strcmp(opt.zLockReads, "1") != 0) {
    *pzErr = sqlite3_mprintf("caterva: lock_reads= must be 0 or 1");
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK) rc = cvMaxDeadOption(&opt, &nMaxDead, pzErr);
  if (rc == SQLITE_OK && opt.zRange && cvHasCreateOptions(&opt)) {
    *pzErr = sqlite3_mprintf("caterva: range= opens part of an existing array; it does not go "
                             "with creation options");
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK) rc = cvCreateOrCheck(pConn, &opt, bCreate, pzErr);
  if (rc != SQLITE_OK) goto connect_out;
  pTab = sqlite3_malloc(sizeof(*pTab));
  if (pTab == 0) {
    rc = SQLITE_NOMEM;
    goto connect_out;
  }
  memset(pTab, 0, sizeof(*pTab));
  pTab->pConn = cvConnRef(pConn);
  rc = cvRemoteSetup(pTab, &opt, pzErr);
  if (rc != SQLITE_OK) goto connect_out;
  iErr = cvArrayOpen(pConn, opt.zPath, CATERVA_OPEN_READ, &pTab->remote, &pTab->pArr);
  if (iErr < 0) {
    const char *zMsg = caterva_ctx_errmsg(pConn->pCtx);
    *pzErr = sqlite3_mprintf("caterva: cannot open \"%s\": %s%s%s", opt.zPath,
                             caterva_strerror(iErr), zMsg[0] ? ": " : "", zMsg);
    rc = iErr == CATERVA_E_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    goto connect_out;
  }
  pTab->db = db;
  pTab->bSync = cvParseSync(opt.zSync);
  pTab->bLockReads = opt.zLockReads && strcmp(opt.zLockReads, "1") == 0;
  pTab->nMaxDead = nMaxDead;
  pTab->zPath = sqlite3_mprintf("%s", opt.zPath);
  if (pTab->zPath == 0) {
    rc = SQLITE_NOMEM;
    goto connect_out;
  }
  /* A reader creates no file: it uses the sidecar when one exists (its generation counter);
  ** the first write, or lock_reads=1, creates it (vtab_txn.c). */
  if (pTab->bRemote || caterva_lock_open_existing(pConn->pCtx, opt.zPath, &pTab->pLock) < 0)
    pTab->pLock = 0;
  if (pTab->pLock) (void)caterva_lock_generation(0, pTab->pLock, &pTab->iGen);
  cvInitGeometry(pTab);
  rc = cvLabelsCheck(pTab, pzErr);
  if (rc == SQLITE_OK) rc = cvInitItems(pTab, opt.zDtype, pzErr);
  if (rc != SQLITE_OK) goto connect_out;
  pTab->szCache = opt.nCacheMb * 1024 * 1024;
  cvCacheInit(&pTab->cache, pTab->nBlockItem * pTab->item.szItem, pTab->szCache);
  rc = cvVarsOpen(pTab, &opt, pzErr);
  if (rc != SQLITE_OK) goto connect_out;
  rc = cvColumnNames(pTab, &opt, azName, pzErr);
  if (rc == SQLITE_OK) rc = cvKeepNames(pTab, azName);
  if (rc == SQLITE_OK) rc = cvRangeSetup(pTab, opt.zRange, pzErr);
  if (rc == SQLITE_OK) rc = cvDeclare(db, pTab, azName, pzErr);
  if (rc == SQLITE_OK) rc = sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  if (rc == SQLITE_OK) rc = cvConnAddTable(pConn, argv[1], argv[2], pTab->zPath, pTab);
connect_out:
  for (i = 0; i < CV_MAX_DIM + CV_MAX_VARS; i++) sqlite3_free(azName[i]);
  cvOptionsFree(&opt);
  if (rc != SQLITE_OK) {
    if (rc == SQLITE_NOMEM && *pzErr == 0) *pzErr = sqlite3_mprintf("caterva: out of memory");
    cvVtabFree(pTab);
  } else {
    *ppVtab = &pTab->base;
  }
  return rc;
}

/* xCreate and xConnect do the same (the table has no backing store of its own), but are
** distinct functions so that the module is not eponymous: `SELECT * FROM caterva` means
** nothing. */
static int catervaCreate(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                         sqlite3_vtab **ppVtab, char **pzErr) {
  return cvConnectImpl(db, pAux, argc, argv, ppVtab, pzErr, 1);
}

static int catervaConnect(sqlite3 *db, void *pAux, int argc, const char *const *argv,
                          sqlite3_vtab **ppVtab, char **pzErr) {
  return cvConnectImpl(db, pAux, argc, argv, ppVtab, pzErr, 0);
}

static int catervaDisconnect(sqlite3_vtab *pVtab) {
  if (((CvVtab *)pVtab)->pBcolz) cvBzFree((CvVtab *)pVtab);
  else cvVtabFree((CvVtab *)pVtab);
  return SQLITE_OK;
}

/* DROP TABLE: the array file belongs to the user, not to the table; it stays. */
static int catervaDestroy(sqlite3_vtab *pVtab) {
  return catervaDisconnect(pVtab);
}

/* ---- bcolz directories ------------------------------------------------------------------
** A bcolz directory is a table of this module too, with its own plan and cursor
** (vtab_bcolz.c): these slots send its calls there (xNext, xEof and xColumn, called for
** every row, go straight to vtab_cursor.c, which tells the cursors apart). It never writes, so xBegin (reached
** only by a statement that writes it) and xUpdate refuse; the other transaction slots do
** nothing for a table that is not in a transaction. */
#define CV_IS_BCOLZ(pVtab) (((CvVtab *)(pVtab))->pBcolz != 0)

static int catervaBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo) {
  return CV_IS_BCOLZ(pVtab) ? cvBzBestIndex(pVtab, pInfo) : cvBestIndex(pVtab, pInfo);
}
static int catervaOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor) {
  return CV_IS_BCOLZ(pVtab) ? cvBzOpen(pVtab, ppCursor) : cvCursorOpen(pVtab, ppCursor);
}
static int catervaClose(sqlite3_vtab_cursor *pCur) {
  return CV_IS_BCOLZ(pCur->pVtab) ? cvBzClose(pCur) : cvCursorClose(pCur);
}
static int catervaFilter(sqlite3_vtab_cursor *pCur, int idxNum, const char *idxStr, int argc,
                         sqlite3_value **argv) {
  return CV_IS_BCOLZ(pCur->pVtab) ? cvBzFilter(pCur, idxNum, idxStr, argc, argv)
                                  : cvCursorFilter(pCur, idxNum, idxStr, argc, argv);
}
static int catervaRowid(sqlite3_vtab_cursor *pCur, sqlite3_int64 *pRowid) {
  return CV_IS_BCOLZ(pCur->pVtab) ? cvBzRowid(pCur, pRowid) : cvCursorRowid(pCur, pRowid);
}
static int catervaUpdate(sqlite3_vtab *pVtab, int argc, sqlite3_value **argv,
                         sqlite3_int64 *pRowid) {
  return CV_IS_BCOLZ(pVtab) ? cvBzUpdate(pVtab, argc, argv, pRowid)
                            : cvUpdate(pVtab, argc, argv, pRowid);
}
static int catervaBegin(sqlite3_vtab *pVtab) {
  return CV_IS_BCOLZ(pVtab) ? cvBzUpdate(pVtab, 0, 0, 0) : cvTxnBegin(pVtab);
}

/* ALTER TABLE RENAME: nothing is stored under the table's name; the functions taking
** '<table or path>' learn the new one. */
static int catervaRename(sqlite3_vtab *pVtab, const char *zNew) {
  CvVtab *pTab = (CvVtab *)pVtab;
  return cvConnRenameTable(pTab->pConn, pTab, zNew);
}

/* ---- the module ----------------------------------------------------------------------- */

static sqlite3_module catervaModule = {
  /* iVersion      */ 2,  /* xSavepoint, xRelease, xRollbackTo */
  /* xCreate       */ catervaCreate,
  /* xConnect      */ catervaConnect,
  /* xBestIndex    */ catervaBestIndex, /* vtab_plan.c (bcolz: vtab_bcolz.c) */
  /* xDisconnect   */ catervaDisconnect,
  /* xDestroy      */ catervaDestroy,
  /* xOpen         */ catervaOpen,      /* vtab_cursor.c, as are the slots down to xRowid */
  /* xClose        */ catervaClose,
  /* xFilter       */ catervaFilter,
  /* xNext         */ cvCursorNext,     /* vtab_cursor.c, for both kinds of cursor */
  /* xEof          */ cvCursorEof,
  /* xColumn       */ cvCursorColumn,
  /* xRowid        */ catervaRowid,
  /* xUpdate       */ catervaUpdate,    /* vtab_write.c */
  /* xBegin        */ catervaBegin,     /* vtab_txn.c, as are the transaction slots */
  /* xSync         */ cvTxnSync,
  /* xCommit       */ cvTxnCommit,
  /* xRollback     */ cvTxnRollback,
  /* xFindFunction */ 0,
  /* xRename       */ catervaRename,
  /* xSavepoint    */ cvTxnSavepoint,
  /* xRelease      */ cvTxnRelease,
  /* xRollbackTo   */ cvTxnRollbackTo,
  /* xShadowName   */ 0,
};

int cvRegisterVtab(sqlite3 *db, CvConn *pConn) {
  return sqlite3_create_module_v2(db, "caterva", &catervaModule, cvConnRef(pConn), cvConnUnref);
}

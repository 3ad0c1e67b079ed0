/*
 * fn_io_progress.c -- what every importer shares: the options an import does not take, and
 * progress reports and interrupts (the progress= option, sqlite3_interrupt()). Calls none of
 * the other fn_*.c files.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

const char *cvImportBadOption(const CvOptions *p) {
  if (p->zPath) return "path";
  if (p->zShape) return "shape";
  if (p->zDtype) return "dtype";
  if (p->zValue) return "value";
  if (p->zFill) return "fill";
  if (p->zSync) return "synchronous";
  if (p->zLockReads) return "lock_reads";
  if (p->zMaxDead) return "max_dead";
  if (p->bCacheMb) return "cache_mb";
  if (p->zRange) return "range";
  return 0;
}

double cvImportNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cvImportInterrupted(CvImportProgress *p) {
  int rc = sqlite3_step(p->pCheck);
  sqlite3_reset(p->pCheck);
  if (rc == SQLITE_ROW) return 0;
  p->bInterrupted = rc == SQLITE_INTERRUPT;
  p->zErr = sqlite3_mprintf("caterva_import: %s", rc == SQLITE_INTERRUPT ? "interrupted"
                                                                          : sqlite3_errmsg(p->db));
  return 1;
}

int cvImportProgressStep(void *pArg, int64_t nDone, int64_t nTotal) {
  CvImportProgress *p = (CvImportProgress *)pArg;
  int rc;
  if (p->zErr) return CATERVA_E_INVALID; /* already stopped */
  if (p->pStmt == 0) {
    if (p->bStderr)
      fprintf(stderr, "caterva_import: %s: %lld of %lld items (%.0f%%), %.1f s\n", p->zWhat,
              (long long)nDone, (long long)nTotal,
              nTotal ? 100.0 * (double)nDone / (double)nTotal : 100.0, cvImportNow() - p->t0);
    return cvImportInterrupted(p) ? CATERVA_E_INVALID : 0;
  }
  /* the progress function's statement also fails once the connection is interrupted */
  sqlite3_bind_int64(p->pStmt, 1, nDone);
  sqlite3_bind_int64(p->pStmt, 2, nTotal);
  while ((rc = sqlite3_step(p->pStmt)) == SQLITE_ROW) {
  }
  if (rc == SQLITE_INTERRUPT) {
    p->bInterrupted = 1;
    p->zErr = sqlite3_mprintf("caterva_import: interrupted");
  } else if (rc != SQLITE_DONE) {
    p->zErr = sqlite3_mprintf("caterva_import: stopped by the progress function: %s",
                              sqlite3_errmsg(p->db));
  }
  sqlite3_reset(p->pStmt);
  return rc == SQLITE_DONE ? 0 : CATERVA_E_INVALID;
}

int cvImportProgressBegin(CvImportProgress *p, sqlite3 *db, const char *zWhat,
                          const char *zProgress, char **pzErr) {
  int rc;
  memset(p, 0, sizeof(*p));
  p->db = db;
  p->zWhat = zWhat ? zWhat : "";
  p->t0 = cvImportNow();
  rc = sqlite3_prepare_v2(db, "SELECT 1", -1, &p->pCheck, 0);
  if (rc != SQLITE_OK) {
    /* the parser, too, fails once sqlite3_interrupt() was called */
    p->bInterrupted = rc == SQLITE_INTERRUPT;
    *pzErr = sqlite3_mprintf("caterva_import: %s", sqlite3_errmsg(db));
    return rc == SQLITE_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
  }
  if (zProgress == 0) return SQLITE_OK;
  p->bStderr = strcmp(zProgress, "stderr") == 0;
  if (!p->bStderr) {
    char *zSql = sqlite3_mprintf("SELECT \"%w\"(?1, ?2)", zProgress);
    rc = zSql ? sqlite3_prepare_v2(db, zSql, -1, &p->pStmt, 0) : SQLITE_NOMEM;
    sqlite3_free(zSql);
    if (rc != SQLITE_OK) {
      *pzErr = sqlite3_mprintf("caterva_import: progress=%s: %s", zProgress, sqlite3_errmsg(db));
      return rc == SQLITE_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    }
  }
  return SQLITE_OK;
}

int cvProgressOption(void *pArg, const char *zKey, const char *zVal, char **pzErr) {
  CvProgressOption *p = (CvProgressOption *)pArg;
  if (sqlite3_stricmp(zKey, "progress") == 0 && p->zProgress == 0) {
    p->zProgress = sqlite3_mprintf("%s", zVal);
    return p->zProgress ? SQLITE_OK : SQLITE_NOMEM;
  }
  *pzErr = sqlite3_mprintf("caterva_import: unknown option \"%s\" for a %s source (it takes %s)",
                           zKey, p->zSource, p->zTakes);
  return SQLITE_ERROR;
}

void cvImportProgressEnd(CvImportProgress *p) {
  sqlite3_finalize(p->pStmt);
  sqlite3_finalize(p->pCheck);
  sqlite3_free(p->zErr);
  memset(p, 0, sizeof(*p));
}

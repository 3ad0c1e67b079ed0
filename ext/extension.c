/*
 * extension.c -- entry point of the caterva SQLite extension (caterva.so).
 *
 * Loading: `.load ./caterva` in the sqlite3 shell, or sqlite3_load_extension(db, path, 0, &err).
 * SQLite derives the entry point name sqlite3_caterva_init from the file name.
 *
 * Each connection that loads the extension gets one library context (CvConn), shared by the
 * virtual table module and the SQL functions, so that caterva_blocks_read() counts exactly
 * the blocks this connection decompressed.
 */
#include "config.h"

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "cvext.h"

#include <unistd.h>

/* Threads the library may use to decompress blocks of one chunk in parallel. */
#define CV_MAX_THREADS 4

CvConn *cvConnRef(CvConn *p) {
  p->nRef++;
  return p;
}

void cvConnUnref(void *pArg) {
  CvConn *p = (CvConn *)pArg;
  if (p == 0 || --p->nRef > 0) return;
  caterva_ctx_free(p->pCtx);
  sqlite3_free(p);
}

/* A new connection state holding one reference (the caller's). */
static int cvConnNew(CvConn **ppConn) {
  CvConn *p;
  long nCpu = sysconf(_SC_NPROCESSORS_ONLN);
  int nThread = nCpu < 1 ? 1 : nCpu > CV_MAX_THREADS ? CV_MAX_THREADS : (int)nCpu;
  *ppConn = 0;
  p = sqlite3_malloc(sizeof(*p));
  if (p == 0) return SQLITE_NOMEM;
  p->nRef = 1;
  p->pCtx = 0;
  if (caterva_ctx_new(nThread, &p->pCtx) != CATERVA_OK &&
      caterva_ctx_new(1, &p->pCtx) != CATERVA_OK) {
    sqlite3_free(p);
    return SQLITE_NOMEM;
  }
  *ppConn = p;
  return SQLITE_OK;
}

int sqlite3_caterva_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_caterva_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  CvConn *pConn = 0;
  int rc;
  SQLITE_EXTENSION_INIT2(pApi);
  rc = cvConnNew(&pConn);
  if (rc == SQLITE_OK) rc = cvRegisterVtab(db, pConn);
  if (rc == SQLITE_OK) rc = cvRegisterFunctions(db, pConn);
  if (rc != SQLITE_OK && pzErrMsg)
    *pzErrMsg = sqlite3_mprintf("caterva: cannot register the extension: %s", sqlite3_errstr(rc));
  cvConnUnref(pConn);  /* the registrations hold their own references */
  return rc;
}

/*
 * conn.c -- the per-connection state of the caterva extension (CvConn).
 *
 * Each connection that loads the extension gets one library context, shared by the virtual
 * table module and the SQL functions, so that caterva_blocks_read() counts exactly the
 * blocks this connection decompressed. The module and each function hold a reference;
 * SQLite calls their destructors one by one, and the last one frees the context.
 */
#include "config.h"

#include "cvext.h"
SQLITE_EXTENSION_INIT3

#include <unistd.h>

/* Threads the library may use to decompress blocks of one chunk in parallel. */
#define CV_MAX_THREADS 4

int cvConnNew(CvConn **ppConn) {
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

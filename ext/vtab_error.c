/*
 * vtab_error.c -- the error messages of the `caterva` table (pVtab->zErrMsg), shared by its
 * parts; the bottom of the table's files (it calls none of them).
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <stdarg.h>

void cvSetError(CvVtab *pTab, const char *zFmt, ...) {
  va_list ap;
  va_start(ap, zFmt);
  sqlite3_free(pTab->base.zErrMsg);
  pTab->base.zErrMsg = sqlite3_vmprintf(zFmt, ap);
  va_end(ap);
}

int cvLibError(CvVtab *pTab, int rc) {
  const char *zMsg = caterva_ctx_errmsg(pTab->pConn->pCtx);
  pTab->iLibRc = rc;
  if (rc == CATERVA_E_NOMEM) return SQLITE_NOMEM;
  cvSetError(pTab, "caterva: %s%s%s", caterva_strerror(rc), zMsg[0] ? ": " : "", zMsg);
  /* a commit to S3 that another writer's commit beat (frame_s3.c): run it again */
  if (rc == CATERVA_E_BUSY && pTab->bRemote) return SQLITE_BUSY;
  return SQLITE_ERROR;
}

/*
 * io_npy.c -- caterva_import() of a npy source (a placeholder until issue 10 lands it).
 */
#include "config.h"

#include "cvext.h"
SQLITE_EXTENSION_INIT3

void cvImportNpy(sqlite3_context *pCtx, CvConn *pConn, const char *zSrc, const char *zDst,
                const char *zVar, const char *zOpt) {
  (void)pConn;
  (void)zSrc;
  (void)zDst;
  (void)zVar;
  (void)zOpt;
  sqlite3_result_error(pCtx, "caterva_import: npy sources are not supported yet", -1);
}

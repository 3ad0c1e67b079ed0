/*
 * io_bcolz.c -- caterva_import() of a bcolz source (a placeholder until issue 11 lands it).
 */
#include "config.h"

#include "cvext.h"
SQLITE_EXTENSION_INIT3

void cvImportBcolz(sqlite3_context *pCtx, CvConn *pConn, const char *zSrc, const char *zDst,
                const char *zVar, const char *zOpt) {
  (void)pConn;
  (void)zSrc;
  (void)zDst;
  (void)zVar;
  (void)zOpt;
  sqlite3_result_error(pCtx, "caterva_import: bcolz sources are not supported yet", -1);
}

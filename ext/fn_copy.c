/*
 * fn_copy.c -- caterva_copy(): an array copied whole to a new place, local or in S3.
 *
 *   caterva_copy('<src path or URL>', '<dst path or s3:// prefix>' [, sparse])
 *
 * The source is a local file or directory, or a URL (http://, https://, s3://; read with the
 * environment's credentials and endpoint). The destination must not exist: a local path
 * receives a contiguous frame (sparse = 1: a sparse directory); `s3://bucket/prefix/` a sparse
 * frame, the way a writer would have made it (chunk objects, then chunks.b2frame created with
 * If-None-Match: *, so it appears whole or not at all). This is how a contiguous object in S3
 * becomes writable (copy it to a prefix) and how an array in S3 comes back to disk. Metalayers
 * and attributes (block statistics, coordinates) are copied as they are. The result is the
 * number of chunks.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include <string.h>

void cvCopyFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  CvConn *pConn = (CvConn *)sqlite3_user_data(pCtx);
  caterva_ctx *ctx = pConn->pCtx;
  const char *zSrc = (const char *)sqlite3_value_text(argv[0]);
  const char *zDst = (const char *)sqlite3_value_text(argv[1]);
  int bSparse = argc > 2 && sqlite3_value_int(argv[2]) != 0;
  caterva_schunk *sc = 0;
  int r;
  char *zErr;
  if (zSrc == 0 || zDst == 0 || zSrc[0] == 0 || zDst[0] == 0) {
    sqlite3_result_error(pCtx, "caterva_copy: give a source and a destination", -1);
    return;
  }
  if (caterva_path_is_remote(zDst)) bSparse = 1; /* s3://: a prefix; http(s): refused below */
  r = caterva_schunk_open_ex(ctx, zSrc, CATERVA_OPEN_READ, 0, &sc);
  if (r >= 0)
    r = caterva_schunk_save_ex(ctx, sc, zDst,
                               bSparse ? CATERVA_STORE_SPARSE : CATERVA_STORE_CONTIGUOUS, 0);
  if (r >= 0) {
    sqlite3_result_int64(pCtx, caterva_schunk_nchunks(sc));
  } else if (r == CATERVA_E_NOMEM) {
    sqlite3_result_error_nomem(pCtx);
  } else {
    zErr = sqlite3_mprintf("caterva_copy: '%s' to '%s': %s%s%s", zSrc, zDst, caterva_strerror(r),
                           caterva_ctx_errmsg(ctx)[0] ? ": " : "", caterva_ctx_errmsg(ctx));
    sqlite3_result_error(pCtx, zErr ? zErr : "caterva_copy failed", -1);
    sqlite3_free(zErr);
  }
  caterva_schunk_free(sc);
}

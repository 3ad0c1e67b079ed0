/*
 * fn_io_s3.c -- caterva_import() into an s3://bucket/prefix/.
 *
 * The importer writes the array into a local temporary directory ($TMPDIR, else /tmp), which
 * is then uploaded the way caterva_copy() does it (chunk objects, then chunks.b2frame created
 * with If-None-Match: *, so the array appears whole or not at all; docs/guarantees.md) and
 * removed. The temporary copy takes as much local disk as the compressed array. Credentials
 * and the endpoint come from the environment, as for caterva_copy().
 *
 * Imports that make several arrays (a NetCDF import of several variables, a bcolz ctable) are
 * refused before anything is read: a prefix holds one array. Import them into a local
 * directory, then caterva_copy() each array to a prefix of its own.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void cvS3Error(sqlite3_context *pCtx, const char *zFmt, const char *zA, const char *zB) {
  char *z = sqlite3_mprintf(zFmt, zA, zB);
  sqlite3_result_error(pCtx, z ? z : "caterva_import: out of memory", -1);
  sqlite3_free(z);
}

/* 0 when the prefix zDst holds no array (or nothing); else the error is set on pCtx. */
static int cvS3DstFree(sqlite3_context *pCtx, CvConn *pConn, const char *zDst) {
  caterva_schunk *sc = 0;
  int r = caterva_schunk_open_ex(pConn->pCtx, zDst, CATERVA_OPEN_READ, 0, &sc);
  caterva_schunk_free(sc);
  if (r == CATERVA_E_NOTFOUND) return 0;
  if (r >= 0) {
    cvS3Error(pCtx, "caterva_import: '%s' holds an array already%s (an import never replaces "
              "one)", zDst, "");
    return 1;
  }
  cvS3Error(pCtx, "caterva_import: '%s': %s", zDst, caterva_ctx_errmsg(pConn->pCtx));
  return 1;
}

/* Upload the local array zArr to the new prefix zDst; the error, if any, replaces the
** importer's result. */
static void cvS3Upload(sqlite3_context *pCtx, CvConn *pConn, const char *zArr, const char *zDst) {
  caterva_ctx *ctx = pConn->pCtx;
  caterva_schunk *sc = 0;
  int r = caterva_schunk_open_ex(ctx, zArr, CATERVA_OPEN_READ, 0, &sc);
  if (r >= 0) r = caterva_schunk_save_ex(ctx, sc, zDst, CATERVA_STORE_SPARSE, 0);
  caterva_schunk_free(sc);
  if (r == CATERVA_E_NOMEM) sqlite3_result_error_nomem(pCtx);
  else if (r == CATERVA_E_EXISTS)
    cvS3Error(pCtx, "caterva_import: '%s' was created by someone else meanwhile%s", zDst, "");
  else if (r < 0)
    cvS3Error(pCtx, "caterva_import: the upload to '%s' failed (nothing of it is visible): %s",
              zDst, caterva_ctx_errmsg(ctx));
}

void cvImportToS3(sqlite3_context *pCtx, CvConn *pConn, CvImporter xImport, int bSeveral,
                  const char *zSrc, const char *zDst, const char *zVar, const char *zOpt) {
  const char *zTmpDir = getenv("TMPDIR");
  char *zDir = 0, *zArr = 0;
  struct stat st;
  if (sqlite3_strnicmp(zDst, "s3://", 5) != 0) {
    cvS3Error(pCtx, "caterva_import: '%s': http(s):// URLs are read-only; arrays are written "
              "to s3://bucket/prefix/%s", zDst, "");
    return;
  }
  if (bSeveral) {
    cvS3Error(pCtx, "caterva_import: '%s' makes several arrays, and an s3:// prefix holds one: "
              "import into a local directory, then caterva_copy() each array to a prefix of "
              "its own (%s)", zSrc, zDst);
    return;
  }
  if (cvS3DstFree(pCtx, pConn, zDst)) return;
  zDir = sqlite3_mprintf("%s/caterva-import-XXXXXX", zTmpDir && *zTmpDir ? zTmpDir : "/tmp");
  if (zDir == 0) {
    sqlite3_result_error_nomem(pCtx);
    goto s3_out;
  }
  if (mkdtemp(zDir) == 0) {
    cvS3Error(pCtx, "caterva_import: cannot make a temporary directory '%s': %s", zDir,
              strerror(errno));
    goto s3_out;
  }
  if ((zArr = sqlite3_mprintf("%s/array", zDir)) == 0) { /* the name mkdtemp made */
    sqlite3_result_error_nomem(pCtx);
    cvCreateRemoveTemp(zDir);
    goto s3_out;
  }
  xImport(pCtx, pConn, zSrc, zArr, zVar, zOpt);
  /* an import that failed left nothing, and its error is the result */
  if (stat(zArr, &st) == 0) cvS3Upload(pCtx, pConn, zArr, zDst);
  cvCreateRemoveTemp(zDir);
s3_out:
  sqlite3_free(zArr);
  sqlite3_free(zDir);
}

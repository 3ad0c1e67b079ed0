/*
 * fn_io_npy.c -- caterva_import() of a NumPy .npy file (the library does the work:
 * caterva_npy_import in io/io_npy.c).
 *
 *   caterva_import('x.npy', 'out.b2nd' [, NULL [, 'option=value ...']])
 *
 * The options are CREATE VIRTUAL TABLE's creation options that make sense for a file whose
 * shape and dtype are given: chunks=, blocks=, codec=, clevel=, filters= (defaults: the
 * library's automatic partitioning, zstd 5 + shuffle), dims= (dimension names stored in the
 * file), sparse=1, and progress=NAME|stderr (NAME(items_done, items_total) called after each
 * piece of whole chunks, about 64 MiB; an error it raises stops the import). Any .npy
 * version, C or Fortran order, every dtype the library knows, either byte order (kept: a
 * '>f8' file becomes a '>f8' array). The result is the number of items imported. The new
 * array is written under a temporary name and renamed to dst when complete, never replacing
 * anything; sqlite3_interrupt() stops an import after the piece in progress and leaves nothing.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <string.h>
#include <sys/stat.h>

#define CV_NPY_OPTIONS "chunks, blocks, codec, clevel, filters, dims, sparse, progress"

/* Parse and check zOpt (progress= into *pzProgress); 0 after reporting an error. */
static int cvNpyOptions(sqlite3_context *pCtx, const char *zOpt, CvOptions *pOpt,
                        char **pzProgress) {
  char *zErr = 0;
  const char *zBad;
  CvProgressOption po = {0, ".npy", CV_NPY_OPTIONS};
  int rc = cvOptionsParseStringExtra(pOpt, zOpt, cvProgressOption, &po, &zErr);
  *pzProgress = po.zProgress;
  if (rc == SQLITE_OK && (zBad = cvImportBadOption(pOpt)) != 0) {
    zErr = sqlite3_mprintf("caterva_import: option %s= does not apply to a .npy import (it "
                           "takes " CV_NPY_OPTIONS ")", zBad);
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK && pOpt->zSparse && strcmp(pOpt->zSparse, "0") != 0 &&
      strcmp(pOpt->zSparse, "1") != 0) {
    zErr = sqlite3_mprintf("caterva_import: sparse= must be 0 or 1");
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_NOMEM) sqlite3_result_error_nomem(pCtx);
  else if (rc != SQLITE_OK) sqlite3_result_error(pCtx, zErr ? zErr : "caterva_import: bad options", -1);
  sqlite3_free(zErr);
  return rc == SQLITE_OK;
}

void cvImportNpy(sqlite3_context *pCtx, CvConn *pConn, const char *zSrc, const char *zDst,
                 const char *zVar, const char *zOpt) {
  CvOptions opt;
  caterva_npy_header h;
  caterva_array_params par;
  caterva_array *pArr = 0;
  CvImportProgress prog;
  struct stat st;
  char *zErr = 0, *zTmp = 0, *zProgress = 0;
  int r, rc = SQLITE_OK;
  memset(&opt, 0, sizeof opt);
  memset(&prog, 0, sizeof prog);
  if (zVar && zVar[0]) {
    sqlite3_result_error(pCtx, "caterva_import: a .npy file holds one array: give NULL as the "
                         "variable", -1);
    return;
  }
  if (!cvNpyOptions(pCtx, zOpt, &opt, &zProgress)) goto import_out;
  if (stat(zDst, &st) == 0) {
    zErr = sqlite3_mprintf("caterva_import: '%s' exists (an import never replaces a file)", zDst);
    rc = SQLITE_ERROR;
    goto import_out;
  }
  r = caterva_npy_read_header(pConn->pCtx, zSrc, &h);
  if (r < 0) {
    cvResultLibError(pCtx, pConn, "caterva_import", r);
    goto import_out;
  }
  caterva_array_params_init(&par);
  par.ndim = h.ndim;
  rc = cvCreatePartition(&opt, &par, &zErr);
  if (rc != SQLITE_OK) goto import_out;
  zTmp = cvCreateTempName(zDst);
  if (zTmp == 0) {
    rc = SQLITE_NOMEM;
    goto import_out;
  }
  par.store = opt.zSparse && strcmp(opt.zSparse, "1") == 0 ? CATERVA_STORE_SPARSE
                                                           : CATERVA_STORE_CONTIGUOUS;
  par.path = zTmp;
  rc = cvImportProgressBegin(&prog, sqlite3_context_db_handle(pCtx), zSrc, zProgress, &zErr);
  if (rc != SQLITE_OK) goto import_out;
  r = caterva_npy_import_progress(pConn->pCtx, zSrc, &par, cvImportProgressStep, &prog, &pArr);
  if (r < 0 && prog.zErr) {
    zErr = sqlite3_mprintf("%s", prog.zErr);
    rc = zErr ? SQLITE_ERROR : SQLITE_NOMEM;
    goto import_out;
  }
  if (r < 0) {
    cvResultLibError(pCtx, pConn, "caterva_import", r);
    goto import_out;
  }
  rc = cvCreatePublish(pConn, pArr, zDst, opt.zDims, 0, &zErr);
  if (rc == SQLITE_OK) sqlite3_result_int64(pCtx, caterva_array_nitems(pArr));
import_out:
  caterva_array_free(pArr);
  if (zTmp && (rc != SQLITE_OK || pArr == 0)) cvCreateRemoveTemp(zTmp);
  if (rc == SQLITE_NOMEM) {
    sqlite3_result_error_nomem(pCtx);
  } else if (rc != SQLITE_OK) {
    sqlite3_result_error(pCtx, zErr ? zErr : "caterva_import: error", -1);
    if (prog.bInterrupted) sqlite3_result_error_code(pCtx, SQLITE_INTERRUPT);
  }
  cvImportProgressEnd(&prog);
  sqlite3_free(zErr);
  sqlite3_free(zTmp);
  sqlite3_free(zProgress);
  cvOptionsFree(&opt);
}

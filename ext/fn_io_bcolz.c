/*
 * fn_io_bcolz.c -- bcolz directories in the SQL functions: caterva_import() of a carray or a
 * ctable, and what caterva_info() and caterva_slice() say about one (fn_array.c sends
 * bcolz paths, and directories of converted ctables, here). The library does the work
 * (caterva_bcolz.h).
 *
 *   caterva_import('x.bcolz', 'x.b2nd' [, NULL [, options]])     a carray -> one array
 *   caterva_import('t.bcolz', 't.b2nd.d' [, NULL [, options]])   a ctable -> a directory of
 *                                     <column>.b2nd arrays plus ctable.json (names, attrs)
 *   caterva_import('t.bcolz', 'c.b2nd', 'price' [, options])     one ctable column -> one array
 *
 * options: 'key=value ...' with CREATE VIRTUAL TABLE's syntax and meanings (cvOptionsParseString,
 * cvCreatePartition): chunks= (default: the bcolz chunklen rows by the other axes), blocks=
 * (needs chunks=; default automatic), codec= (default zstd), clevel= (default 5), filters=
 * (default shuffle), sparse=1 (a sparse directory), dims= (dimension names stored in the
 * array; for a ctable, in each column's array: dims='row' names the row dimension).
 * Each member of __attrs__ becomes a user attribute. The result is the number of items
 * written. The destination must not exist; it appears complete or not at all.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static void cvBzMessage(sqlite3_context *pCtx, char *z) {
  sqlite3_result_error(pCtx, z ? z : "caterva: error", -1);
  sqlite3_free(z);
}

/* Open a bcolz directory or report why not; NULL after an error. */
static caterva_bcolz *cvBzOpenArg(sqlite3_context *pCtx, CvConn *pConn, const char *zPath,
                                  const char *zFunc) {
  caterva_bcolz *pBz = 0;
  int rc = caterva_bcolz_open(pConn->pCtx, zPath, &pBz);
  if (rc < 0) {
    char *zWhat = sqlite3_mprintf("%s: cannot open bcolz \"%s\"", zFunc, zPath);
    cvResultLibError(pCtx, pConn, zWhat ? zWhat : zFunc, rc);
    sqlite3_free(zWhat);
    return 0;
  }
  return pBz;
}

/* ---- caterva_info ------------------------------------------------------------------------- */

/* Append z as a JSON string. */
static void cvBzJsonStr(sqlite3_str *pStr, const char *z) {
  sqlite3_str_appendchar(pStr, 1, '"');
  for (; *z; z++) {
    unsigned char c = (unsigned char)*z;
    if (c == '"' || c == '\\') sqlite3_str_appendf(pStr, "\\%c", c);
    else if (c < 0x20) sqlite3_str_appendf(pStr, "\\u%04x", c);
    else sqlite3_str_appendchar(pStr, 1, (char)c);
  }
  sqlite3_str_appendchar(pStr, 1, '"');
}

static void cvBzJsonColumn(sqlite3_str *pStr, const caterva_bcolz_column *pC) {
  sqlite3_str_appendall(pStr, "\"shape\":[");
  for (int k = 0; k < pC->ndim; k++)
    sqlite3_str_appendf(pStr, "%s%lld", k ? "," : "", (long long)pC->shape[k]);
  sqlite3_str_appendall(pStr, "],\"dtype\":");
  cvBzJsonStr(pStr, pC->dtype);
  sqlite3_str_appendall(pStr, ",\"bcolz_dtype\":");
  cvBzJsonStr(pStr, pC->bcolz_dtype);
  sqlite3_str_appendf(pStr, ",\"itemsize\":%d,\"chunklen\":%lld,\"nchunks\":%lld,\"codec\":",
                      pC->itemsize, (long long)pC->chunklen, (long long)pC->nchunks);
  cvBzJsonStr(pStr, pC->codec);
  sqlite3_str_appendf(pStr, ",\"clevel\":%d,\"shuffle\":%d", pC->clevel, pC->shuffle);
}

int cvBzIsPath(const char *zPath) {
  struct stat st;
  if (stat(zPath, &st) != 0 || !S_ISDIR(st.st_mode)) return 0;
  return caterva_bcolz_kind(zPath) != CATERVA_BCOLZ_NONE || caterva_bcolz_converted(zPath);
}

/* caterva_info of a converted ctable's directory: its columns and their arrays. */
static void cvBzConvertedInfo(sqlite3_context *pCtx, CvConn *pConn, const char *zPath) {
  char **azName = 0;
  int nName = 0, rc = caterva_bcolz_converted_names(pConn->pCtx, zPath, &azName, &nName);
  sqlite3_str *pStr;
  if (rc < 0) {
    char *zWhat = sqlite3_mprintf("caterva_info: \"%s\"", zPath);
    cvResultLibError(pCtx, pConn, zWhat ? zWhat : "caterva_info", rc);
    sqlite3_free(zWhat);
    return;
  }
  pStr = sqlite3_str_new(sqlite3_context_db_handle(pCtx));
  sqlite3_str_appendall(pStr, "{\"format\":\"converted bcolz ctable\",\"names\":[");
  for (int i = 0; i < nName; i++) {
    if (i) sqlite3_str_appendchar(pStr, 1, ',');
    cvBzJsonStr(pStr, azName[i]);
  }
  sqlite3_str_appendall(pStr, "],\"arrays\":[");
  for (int i = 0; i < nName; i++) {
    char *z = sqlite3_mprintf("%s/%s.b2nd", zPath, azName[i]);
    if (i) sqlite3_str_appendchar(pStr, 1, ',');
    if (z) cvBzJsonStr(pStr, z);
    sqlite3_free(z);
  }
  sqlite3_str_appendall(pStr, "]}");
  caterva_bcolz_names_free(azName, nName);
  if (sqlite3_str_errcode(pStr) == SQLITE_NOMEM) {
    sqlite3_free(sqlite3_str_finish(pStr));
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  sqlite3_result_text(pCtx, sqlite3_str_finish(pStr), -1, sqlite3_free);
}

/* caterva_info(bcolz path) -> JSON text. */
void cvBzInfo(sqlite3_context *pCtx, CvConn *pConn, const char *zPath) {
  caterva_bcolz *pBz;
  sqlite3_str *pStr;
  int i;
  if (caterva_bcolz_kind(zPath) == CATERVA_BCOLZ_NONE) {
    cvBzConvertedInfo(pCtx, pConn, zPath);
    return;
  }
  pBz = cvBzOpenArg(pCtx, pConn, zPath, "caterva_info");
  if (pBz == 0) return;
  pStr = sqlite3_str_new(sqlite3_context_db_handle(pCtx));
  if (caterva_bcolz_is_ctable(pBz)) {
    sqlite3_str_appendf(pStr, "{\"format\":\"bcolz\",\"kind\":\"ctable\",\"len\":%lld,"
                        "\"columns\":[", (long long)caterva_bcolz_len(pBz));
    for (i = 0; i < caterva_bcolz_ncols(pBz); i++) {
      const caterva_bcolz_column *pC = caterva_bcolz_column_get(pBz, i);
      sqlite3_str_appendf(pStr, "%s{\"name\":", i ? "," : "");
      cvBzJsonStr(pStr, pC->name);
      sqlite3_str_appendchar(pStr, 1, ',');
      cvBzJsonColumn(pStr, pC);
      sqlite3_str_appendf(pStr, ",\"attributes\":%s}", pC->attrs);
    }
    sqlite3_str_appendall(pStr, "]");
  } else {
    const caterva_bcolz_column *pC = caterva_bcolz_column_get(pBz, 0);
    sqlite3_str_appendf(pStr, "{\"format\":\"bcolz\",\"kind\":\"carray\",\"ndim\":%d,",
                        pC->ndim);
    cvBzJsonColumn(pStr, pC);
  }
  sqlite3_str_appendf(pStr, ",\"attributes\":%s}", caterva_bcolz_attrs(pBz));
  caterva_bcolz_free(pBz);
  if (sqlite3_str_errcode(pStr) == SQLITE_NOMEM) {
    sqlite3_free(sqlite3_str_finish(pStr));
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  sqlite3_result_text(pCtx, sqlite3_str_finish(pStr), -1, sqlite3_free);
}

/* ---- caterva_slice ------------------------------------------------------------------------ */

/* Copy the box [aStart, aStop) of column 0 in C order into aOut, run by run along the last
** axis, through one reader (so no block is decompressed twice). */
static int cvBzCopyBox(caterva_ctx *pLib, caterva_bcolz *pBz, const caterva_bcolz_column *pC,
                       const int64_t *aStart, const int64_t *aStop, uint8_t *aOut) {
  caterva_bcolz_reader *pR = 0;
  int64_t aCoord[CATERVA_MAX_DIM], aStride[CATERVA_MAX_DIM];
  int nDim = pC->ndim, d, rc;
  size_t isz = (size_t)pC->itemsize;
  rc = caterva_bcolz_reader_new(pLib, pBz, 0, &pR);
  for (d = nDim - 1; d >= 0; d--) {
    aStride[d] = d == nDim - 1 ? 1 : aStride[d + 1] * pC->shape[d + 1];
    aCoord[d] = aStart[d];
  }
  while (rc >= 0) {
    int64_t i = 0, nRun = aStop[nDim - 1] - aStart[nDim - 1];
    for (d = 0; d < nDim; d++) i += aCoord[d] * aStride[d];
    while (nRun > 0 && rc >= 0) {
      const uint8_t *p;
      int64_t n;
      rc = caterva_bcolz_reader_items(pLib, pR, i, nRun, &p, &n);
      if (rc < 0) break;
      if (n > nRun) n = nRun;
      memcpy(aOut, p, (size_t)n * isz);
      aOut += (size_t)n * isz;
      i += n;
      nRun -= n;
    }
    for (d = nDim - 2; d >= 0; d--) {
      if (++aCoord[d] < aStop[d]) break;
      aCoord[d] = aStart[d];
    }
    if (d < 0) break;
  }
  caterva_bcolz_reader_free(pR);
  return rc;
}

/* caterva_slice's fill for a carray: cvBzCopyBox. */
typedef struct CvBzSliceFill {
  CvConn *pConn;
  caterva_bcolz *pBz;
  const caterva_bcolz_column *pC;
  const int64_t *aStart, *aStop;
} CvBzSliceFill;

static int cvBzSliceFill(void *pArg, uint8_t *aBuf, int64_t nByte) {
  CvBzSliceFill *p = (CvBzSliceFill *)pArg;
  (void)nByte; /* the box's bytes, as cvBzCopyBox writes them */
  return cvBzCopyBox(p->pConn->pCtx, p->pBz, p->pC, p->aStart, p->aStop, aBuf);
}

/* caterva_slice(bcolz carray [, start, stop]) -> BLOB of the items in C order, as stored. */
void cvBzSlice(sqlite3_context *pCtx, CvConn *pConn, const char *zPath, int argc,
               sqlite3_value **argv) {
  caterva_bcolz *pBz;
  const caterva_bcolz_column *pC;
  int64_t aStart[CATERVA_MAX_DIM], aStop[CATERVA_MAX_DIM];
  double nByte;
  int k, rc;
  CvBzSliceFill fill;
  if (caterva_bcolz_kind(zPath) == CATERVA_BCOLZ_NONE) {
    cvBzMessage(pCtx, sqlite3_mprintf("caterva_slice: \"%s\" is a converted bcolz ctable: slice "
                                      "one of its arrays (<dir>/<column>.b2nd)", zPath));
    return;
  }
  pBz = cvBzOpenArg(pCtx, pConn, zPath, "caterva_slice");
  if (pBz == 0) return;
  pC = caterva_bcolz_column_get(pBz, 0);
  if (caterva_bcolz_is_ctable(pBz)) {
    cvBzMessage(pCtx, sqlite3_mprintf("caterva_slice: \"%s\" is a bcolz ctable: slice one of "
                                      "its columns ('%s')", zPath, pC->path));
    goto bz_slice_out;
  }
  if (!cvBoxArgsShape(pCtx, "caterva_slice", pC->ndim, pC->shape, argc == 3 ? argv[1] : 0,
                      argc == 3 ? argv[2] : 0, aStart, aStop))
    goto bz_slice_out;
  nByte = pC->itemsize;
  for (k = 0; k < pC->ndim; k++) nByte *= (double)(aStop[k] - aStart[k]);
  fill = (CvBzSliceFill){pConn, pBz, pC, aStart, aStop};
  rc = cvResultBox(pCtx, nByte, cvBzSliceFill, &fill);
  if (rc < 0) cvResultLibError(pCtx, pConn, "caterva_slice", rc);
bz_slice_out:
  caterva_bcolz_free(pBz);
}

/* ---- caterva_import ------------------------------------------------------------------------ */

#define CV_BZ_OPTIONS "chunks, blocks, codec, clevel, filters, sparse, dims, progress"

/* The options string (CREATE VIRTUAL TABLE's syntax and meanings) into *pP for an array of
** nDim dimensions, dims= split into azDim[0..nDim) (sqlite3_malloc'ed, or left NULL) and
** progress= into *pzProgress; an sqlite3_mprintf'ed message on error, else 0. */
static char *cvBzOptions(const char *zOpt, int nDim, caterva_array_params *pP, char **azDim,
                         char **pzProgress) {
  CvOptions opt;
  char *zErr = 0;
  const char *zBad;
  CvProgressOption po = {0, "bcolz", CV_BZ_OPTIONS};
  int rc = cvOptionsParseStringExtra(&opt, zOpt, cvProgressOption, &po, &zErr);
  *pzProgress = po.zProgress;
  caterva_array_params_init(pP);
  pP->ndim = nDim;
  pP->store = CATERVA_STORE_CONTIGUOUS;
  if (rc == SQLITE_OK && (zBad = cvImportBadOption(&opt)) != 0) {
    zErr = sqlite3_mprintf("option %s= does not apply to a bcolz import (it takes "
                           CV_BZ_OPTIONS ")", zBad);
    rc = SQLITE_ERROR;
  }
  if (rc == SQLITE_OK && opt.zSparse) {
    if (strcmp(opt.zSparse, "0") != 0 && strcmp(opt.zSparse, "1") != 0) {
      zErr = sqlite3_mprintf("sparse= must be 0 or 1");
      rc = SQLITE_ERROR;
    } else if (opt.zSparse[0] == '1') {
      pP->store = CATERVA_STORE_SPARSE;
    }
  }
  if (rc == SQLITE_OK) rc = cvCreatePartition(&opt, pP, &zErr);
  if (rc == SQLITE_OK && opt.zDims) rc = cvSplitDims(opt.zDims, nDim, azDim, &zErr);
  cvOptionsFree(&opt);
  if (rc != SQLITE_OK && zErr == 0) zErr = sqlite3_mprintf("bad options");
  return zErr;
}

/* The column zVar names, or -1 after an error. */
static int cvBzPickColumn(sqlite3_context *pCtx, caterva_bcolz *pBz, const char *zSrc,
                          const char *zVar) {
  if (zVar == 0) return caterva_bcolz_is_ctable(pBz) ? -2 : 0;
  if (!caterva_bcolz_is_ctable(pBz)) {
    cvBzMessage(pCtx, sqlite3_mprintf("caterva_import: \"%s\" is a bcolz carray: it has no "
                                      "variable \"%s\" (pass NULL)", zSrc, zVar));
    return -1;
  }
  for (int i = 0; i < caterva_bcolz_ncols(pBz); i++)
    if (strcmp(caterva_bcolz_column_get(pBz, i)->name, zVar) == 0) return i;
  cvBzMessage(pCtx, sqlite3_mprintf("caterva_import: the bcolz ctable \"%s\" has no column "
                                    "\"%s\"", zSrc, zVar));
  return -1;
}

void cvImportBcolz(sqlite3_context *pCtx, CvConn *pConn, const char *zSrc, const char *zDst,
                   const char *zVar, const char *zOpt) {
  caterva_bcolz *pBz = cvBzOpenArg(pCtx, pConn, zSrc, "caterva_import");
  caterva_array_params p;
  CvImportProgress prog;
  int64_t nItem = 0;
  char *zErr, *azDim[CATERVA_MAX_DIM], *zProgress = 0;
  int iCol, rc, nDim;
  memset(azDim, 0, sizeof azDim);
  memset(&prog, 0, sizeof prog);
  if (pBz == 0) return;
  iCol = cvBzPickColumn(pCtx, pBz, zSrc, zVar);
  if (iCol == -1) goto import_out;
  nDim = caterva_bcolz_column_get(pBz, iCol < 0 ? 0 : iCol)->ndim;
  zErr = cvBzOptions(zOpt, nDim, &p, azDim, &zProgress);
  if (zErr) {
    const char *z = strncmp(zErr, "caterva: ", 9) == 0          ? zErr + 9
                    : strncmp(zErr, "caterva_import: ", 16) == 0 ? zErr + 16
                                                                  : zErr;
    cvBzMessage(pCtx, sqlite3_mprintf("caterva_import: %s", z));
    sqlite3_free(zErr);
    goto import_out;
  }
  zErr = 0;
  if (cvImportProgressBegin(&prog, sqlite3_context_db_handle(pCtx), zSrc, zProgress, &zErr) !=
      SQLITE_OK) {
    cvBzMessage(pCtx, zErr);
    if (prog.bInterrupted) sqlite3_result_error_code(pCtx, SQLITE_INTERRUPT);
    goto import_out;
  }
  caterva_bcolz_set_progress(pBz, cvImportProgressStep, &prog);
  p.path = zDst;
  if (iCol >= 0)
    rc = caterva_bcolz_convert(pConn->pCtx, pBz, iCol, &p,
                               azDim[0] ? (const char *const *)azDim : 0, nDim, 0);
  else
    rc = caterva_bcolz_convert_ctable(pConn->pCtx, pBz, zDst, &p,
                                      azDim[0] ? (const char *const *)azDim : 0, nDim);
  if (rc < 0 && prog.zErr) {
    cvBzMessage(pCtx, sqlite3_mprintf("%s", prog.zErr));
    if (prog.bInterrupted) sqlite3_result_error_code(pCtx, SQLITE_INTERRUPT);
    goto import_out;
  }
  if (rc < 0) {
    char *zWhat = sqlite3_mprintf("caterva_import: \"%s\" to \"%s\"", zSrc, zDst);
    cvResultLibError(pCtx, pConn, zWhat ? zWhat : "caterva_import", rc);
    sqlite3_free(zWhat);
    goto import_out;
  }
  for (int i = 0; i < caterva_bcolz_ncols(pBz); i++) {
    const caterva_bcolz_column *pC = caterva_bcolz_column_get(pBz, i);
    int64_t n = 1;
    if (iCol >= 0 && i != iCol) continue;
    /* the column's size was checked at open, but not the product of its first extents when
    ** a later one is 0 */
    for (int k = 0; k < pC->ndim; k++) n = pC->shape[k] == 0 ? 0 : n;
    for (int k = 0; k < pC->ndim && n > 0; k++) n *= pC->shape[k];
    nItem += n;
  }
  sqlite3_result_int64(pCtx, nItem);
import_out:
  for (int k = 0; k < CATERVA_MAX_DIM; k++) sqlite3_free(azDim[k]);
  caterva_bcolz_free(pBz);
  cvImportProgressEnd(&prog);
  sqlite3_free(zProgress);
}

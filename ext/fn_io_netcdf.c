/*
 * fn_io_netcdf.c -- caterva_import() of a NetCDF file (NetCDF-3 classic, 64-bit offset, CDF-5 or
 * NetCDF-4): one variable into a new array, through the library's caterva_netcdf_import
 * (io/caterva_netcdf.h says what the array holds).
 *
 *   caterva_import('era5.nc', 'out.b2nd', 't2m' [, 'option=value ...'])
 *   caterva_import('era5.nc', 'out.d', '*' [, 'option=value ...'])      every variable of
 *   caterva_import('era5.nc', 'out.d', 't2m,tp' [, 'option=value ...'])  one grid, or those
 *
 * The second form writes a directory holding one array per variable, out.d/<name>.b2nd
 * (caterva_netcdf_import_grid), which CREATE VIRTUAL TABLE w USING caterva('out.d/t2m.b2nd',
 * 'out.d/tp.b2nd') opens as one table with a value column per variable. The options apply
 * to every variable; the result lists the variables imported and those left out, with why.
 *
 * Options (blank-separated key=value words, cvOptionsParseStringExtra):
 *   chunks=, blocks=, codec=, clevel=, filters=, sparse=, dims=   as in CREATE VIRTUAL TABLE
 *                  (default chunks: whole NetCDF-4 chunks, about 1-8 MiB; else ~4 MiB;
 *                  default dims: the variable's dimension names)
 *   unpack=1|0     apply scale_factor/add_offset (default 1), or keep the packed integers
 *   mask=1|0       fill and missing values become NaN in float results (default 1)
 *   progress=NAME  call the SQL function NAME(items_done, items_total) after each hyperslab
 *                  (about 32 MiB); an error it raises stops the import. progress=stderr
 *                  prints a line per hyperslab to standard error instead.
 *
 * sqlite3_interrupt() stops an import after the hyperslab in progress (cvNcInterrupted).
 *
 * The result is a JSON object describing the new array. Nothing is left at dst on failure.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

/* The options of one import. */
typedef struct CvNcOptions CvNcOptions;
struct CvNcOptions {
  CvOptions store;     /* chunks=, blocks=, codec=, clevel=, filters=, sparse= */
  int bUnpack;         /* unpack= */
  int bMask;           /* mask= */
  char *zProgress;     /* progress=, or NULL */
};

static int cvBool(const char *zKey, const char *zVal, int *pb, char **pzErr) {
  if (strcmp(zVal, "0") != 0 && strcmp(zVal, "1") != 0) {
    *pzErr = sqlite3_mprintf("caterva_import: %s= must be 0 or 1, not \"%s\"", zKey, zVal);
    return SQLITE_ERROR;
  }
  *pb = zVal[0] == '1';
  return SQLITE_OK;
}

#define CV_NC_OPTIONS "chunks, blocks, codec, clevel, filters, sparse, dims, unpack, mask, progress"

/* The options that are not CREATE VIRTUAL TABLE's (cvOptionsParseStringExtra). */
static int cvNcOption(void *pArg, const char *zKey, const char *zVal, char **pzErr) {
  CvNcOptions *p = (CvNcOptions *)pArg;
  if (sqlite3_stricmp(zKey, "unpack") == 0) return cvBool("unpack", zVal, &p->bUnpack, pzErr);
  if (sqlite3_stricmp(zKey, "mask") == 0) return cvBool("mask", zVal, &p->bMask, pzErr);
  if (sqlite3_stricmp(zKey, "progress") == 0 && p->zProgress == 0) {
    p->zProgress = sqlite3_mprintf("%s", zVal);
    return p->zProgress ? SQLITE_OK : SQLITE_NOMEM;
  }
  *pzErr = sqlite3_mprintf("caterva_import: unknown option \"%s\" for a NetCDF source (it "
                           "takes " CV_NC_OPTIONS ")", zKey);
  return SQLITE_ERROR;
}

/* Parse the options into *pOpt and the import parameters into *pPar (zDst is borrowed). */
static int cvNcParams(const char *zVar, const char *zDst, const char *zOpt, CvNcOptions *pOpt,
                      caterva_netcdf_params *pPar, char **pzErr) {
  int rc;
  const char *zBad;
  memset(pOpt, 0, sizeof(*pOpt));
  pOpt->bUnpack = pOpt->bMask = 1;
  rc = cvOptionsParseStringExtra(&pOpt->store, zOpt, cvNcOption, pOpt, pzErr);
  if (rc != SQLITE_OK) return rc;
  if ((zBad = cvImportBadOption(&pOpt->store)) != 0) {
    *pzErr = sqlite3_mprintf("caterva_import: option %s= does not apply to a NetCDF import (it "
                             "takes " CV_NC_OPTIONS ")", zBad);
    return SQLITE_ERROR;
  }
  caterva_netcdf_params_init(pPar);
  pPar->variable = zVar;
  pPar->keep_packed = !pOpt->bUnpack;
  pPar->keep_fill = !pOpt->bMask;
  pPar->array.path = zDst;
  pPar->array.store = CATERVA_STORE_CONTIGUOUS;
  if (pOpt->store.zSparse) {
    if (strcmp(pOpt->store.zSparse, "0") != 0 && strcmp(pOpt->store.zSparse, "1") != 0) {
      *pzErr = sqlite3_mprintf("caterva_import: sparse= must be 0 or 1");
      return SQLITE_ERROR;
    }
    if (pOpt->store.zSparse[0] == '1') pPar->array.store = CATERVA_STORE_SPARSE;
  }
  return SQLITE_OK;
}

/* The storage options through the one parser (cvCreatePartition), which needs the number of
** dimensions: the number of extents chunks= lists (blocks= must list as many); the library
** checks it against the variable's. */
static int cvNcStorage(const CvNcOptions *pOpt, caterva_netcdf_params *pPar, char **pzErr) {
  const char *z = pOpt->store.zChunks;
  int nDim = 1;
  if (z == 0) {
    pPar->array.ndim = 0;
    return cvCreatePartition(&pOpt->store, &pPar->array, pzErr);
  }
  for (; *z; z++) nDim += *z == ',';
  if (nDim > CV_MAX_DIM) nDim = CV_MAX_DIM;
  pPar->array.ndim = nDim;
  return cvCreatePartition(&pOpt->store, &pPar->array, pzErr);
}

/* Append a JSON list of n integers. */
static void cvJsonInts(sqlite3_str *pStr, const char *zKey, int n, const int64_t *a64,
                       const int32_t *a32) {
  sqlite3_str_appendf(pStr, ",\"%s\":[", zKey);
  for (int i = 0; i < n; i++)
    sqlite3_str_appendf(pStr, "%s%lld", i ? "," : "", a64 ? (long long)a64[i] : (long long)a32[i]);
  sqlite3_str_appendchar(pStr, 1, ']');
}

/* Append what was imported into pArr, as a JSON object without its closing brace. */
static void cvNcDescribe(sqlite3_str *pStr, caterva_array *pArr, const char *zVar,
                         const caterva_netcdf_stats *s) {
  caterva_schunk *sc = caterva_array_schunk(pArr);
  int nDim = caterva_array_ndim(pArr);
  sqlite3_str_appendall(pStr, "{\"variable\":");
  cvJsonString(pStr, zVar, strlen(zVar));
  cvJsonInts(pStr, "shape", nDim, caterva_array_shape(pArr), 0);
  sqlite3_str_appendf(pStr, ",\"dtype\":\"%s\"", caterva_array_dtype(pArr));
  cvJsonInts(pStr, "chunks", nDim, 0, caterva_array_chunkshape(pArr));
  cvJsonInts(pStr, "blocks", nDim, 0, caterva_array_blockshape(pArr));
  sqlite3_str_appendf(pStr, ",\"unpacked\":%s,\"masked\":%lld,\"attributes\":%d,"
                      "\"attributes_skipped\":%d,\"coordinates\":%d,\"coordinates_skipped\":%d,"
                      "\"nbytes\":%lld,\"cbytes\":%lld",
                      s->unpacked ? "true" : "false", (long long)s->masked, s->attrs_copied,
                      s->attrs_skipped, s->coords, s->coords_skipped,
                      (long long)(caterva_array_nitems(pArr) * caterva_array_itemsize(pArr)),
                      (long long)caterva_schunk_cbytes(sc));
}

/* The result of a one-variable import, as JSON. */
static char *cvNcSummary(caterva_array *pArr, const char *zVar, const caterva_netcdf_stats *s,
                         double secs) {
  sqlite3_str *pStr = sqlite3_str_new(0);
  cvNcDescribe(pStr, pArr, zVar, s);
  sqlite3_str_appendf(pStr, ",\"seconds\":%.3f}", secs);
  return sqlite3_str_finish(pStr);
}

/* Several variables: a grid import into directory zDir. The JSON result holds one object per
** variable imported (as for one variable, with its "file" instead of the time) and the
** variables left out with the reason. */
static int cvNcGrid(caterva_ctx *ctx, const char *zSrc, const char *zDir,
                    const caterva_netcdf_params *pPar, double t0, char **pzJson, char **pzErr) {
  caterva_netcdf_grid *g = 0;
  sqlite3_str *pStr;
  int r = caterva_netcdf_import_grid(ctx, zSrc, zDir, pPar, &g), i, n = 0;
  if (r < 0) {
    *pzErr = sqlite3_mprintf("caterva_import: %s: %s", caterva_strerror(r), caterva_ctx_errmsg(ctx));
    return r == CATERVA_E_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
  }
  pStr = sqlite3_str_new(0);
  sqlite3_str_appendall(pStr, "{\"directory\":");
  cvJsonString(pStr, zDir, strlen(zDir));
  sqlite3_str_appendall(pStr, ",\"variables\":[");
  for (i = 0; i < g->nitems && r >= 0; i++) {
    caterva_netcdf_item *it = &g->items[i];
    caterva_array *pArr = 0;
    char *zPath;
    if (it->skipped) continue;
    zPath = sqlite3_mprintf("%s/%s.b2nd", zDir, it->name);
    r = zPath ? caterva_array_open(ctx, zPath, CATERVA_OPEN_READ, &pArr) : CATERVA_E_NOMEM;
    if (r >= 0) {
      if (n++) sqlite3_str_appendchar(pStr, 1, ',');
      cvNcDescribe(pStr, pArr, it->name, &it->stats);
      sqlite3_str_appendall(pStr, ",\"file\":");
      cvJsonString(pStr, zPath, strlen(zPath));
      sqlite3_str_appendchar(pStr, 1, '}');
    }
    caterva_array_free(pArr);
    sqlite3_free(zPath);
  }
  sqlite3_str_appendall(pStr, "],\"skipped\":[");
  for (i = 0, n = 0; i < g->nitems; i++) {
    if (g->items[i].skipped == 0) continue;
    sqlite3_str_appendall(pStr, n++ ? ",{\"variable\":" : "{\"variable\":");
    cvJsonString(pStr, g->items[i].name, strlen(g->items[i].name));
    sqlite3_str_appendall(pStr, ",\"reason\":");
    cvJsonString(pStr, g->items[i].skipped, strlen(g->items[i].skipped));
    sqlite3_str_appendchar(pStr, 1, '}');
  }
  sqlite3_str_appendf(pStr, "],\"seconds\":%.3f}", cvImportNow() - t0);
  caterva_netcdf_grid_free(g);
  *pzJson = sqlite3_str_finish(pStr);
  if (r < 0) {
    *pzErr = sqlite3_mprintf("caterva_import: the variables were imported into %s, but reading "
                             "them back failed: %s", zDir, caterva_ctx_errmsg(ctx));
    return SQLITE_ERROR;
  }
  return *pzJson ? SQLITE_OK : SQLITE_NOMEM;
}

/* Is zVar several variables ("*", or a comma-separated list)? */
static int cvNcIsGrid(const char *zVar) {
  return zVar && (strcmp(zVar, "*") == 0 || strchr(zVar, ',') != 0);
}

void cvImportNetcdf(sqlite3_context *pCtx, CvConn *pConn, const char *zSrc, const char *zDst,
                    const char *zVar, const char *zOpt) {
  caterva_ctx *ctx = pConn->pCtx;
  CvNcOptions opt;
  CvImportProgress prog;
  caterva_netcdf_params par;
  caterva_netcdf_stats stats;
  caterva_array *pArr = 0;
  char *zErr = 0, *zJson = 0, *azDim[CV_MAX_DIM] = {0};
  int rc, r, nDim;
  memset(&prog, 0, sizeof(prog));
  rc = cvNcParams(zVar, zDst, zOpt, &opt, &par, &zErr);
  if (rc == SQLITE_OK) rc = cvNcStorage(&opt, &par, &zErr);
  if (rc == SQLITE_OK && opt.store.zDims) {
    /* as many names as the list holds; the library checks the count */
    nDim = 1;
    for (const char *z = opt.store.zDims; *z; z++) nDim += *z == ',';
    if (nDim > CV_MAX_DIM) nDim = CV_MAX_DIM;
    rc = cvSplitDims(opt.store.zDims, nDim, azDim, &zErr);
    par.dim_names = (const char *const *)azDim;
    par.n_dim_names = nDim;
  }
  if (rc != SQLITE_OK) goto import_out;
  rc = cvImportProgressBegin(&prog, sqlite3_context_db_handle(pCtx), zVar, opt.zProgress, &zErr);
  if (rc != SQLITE_OK) goto import_out;
  par.progress = cvImportProgressStep;
  par.progress_arg = &prog;
  if (cvNcIsGrid(zVar)) {
    rc = cvNcGrid(ctx, zSrc, zDst, &par, prog.t0, &zJson, &zErr);
    if (rc != SQLITE_OK && prog.zErr) {
      sqlite3_free(zErr);
      zErr = sqlite3_mprintf("%s", prog.zErr);
    }
    goto import_out;
  }
  r = caterva_netcdf_import(ctx, zSrc, &par, &stats, &pArr);
  if (r < 0) {
    rc = r == CATERVA_E_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    zErr = prog.zErr ? sqlite3_mprintf("%s", prog.zErr)
                     : sqlite3_mprintf("caterva_import: %s: %s", caterva_strerror(r),
                                       caterva_ctx_errmsg(ctx));
    goto import_out;
  }
  zJson = cvNcSummary(pArr, zVar, &stats, cvImportNow() - prog.t0);
  if (zJson == 0) rc = SQLITE_NOMEM;
import_out:
  if (rc == SQLITE_OK) {
    sqlite3_result_text(pCtx, zJson, -1, sqlite3_free);
    sqlite3_result_subtype(pCtx, 'J');
  } else if (rc == SQLITE_NOMEM) {
    sqlite3_result_error_nomem(pCtx);
  } else {
    sqlite3_result_error(pCtx, zErr ? zErr : "caterva_import: failed", -1);
    if (prog.bInterrupted) sqlite3_result_error_code(pCtx, SQLITE_INTERRUPT);
  }
  if (rc != SQLITE_OK) sqlite3_free(zJson);
  caterva_array_free(pArr);
  cvImportProgressEnd(&prog);
  sqlite3_free(zErr);
  sqlite3_free(opt.zProgress);
  cvOptionsFree(&opt.store);
  for (int i = 0; i < CV_MAX_DIM; i++) sqlite3_free(azDim[i]);
}

/*
 * vtab_create.c -- CREATE VIRTUAL TABLE t USING caterva('path', shape=..., ...) on a path that
 * does not exist: a new array.
 *
 *   shape=    '365,180,360' (required; 1 to 16 extents, each >= 0)
 *   dtype=    NumPy string or common name (float32, int16, uint8, bool, ...); float64
 *   chunks=   chunk shape; default: automatic (about 4 MiB, as the library chooses)
 *   blocks=   block shape (needs chunks=); default: automatic (about 64 KiB)
 *   codec=    blosclz, lz4, lz4hc, zlib, zstd (default)
 *   clevel=   0-9 (default 5)
 *   filters=  comma list applied in order: shuffle, bitshuffle, delta, trunc_prec:N,
 *             bytedelta; '' or none for no filter (default shuffle)
 *   dims=     dimension names, stored in the file (`_ARRAY_DIMENSIONS`)
 *   fill=     nan, or a number (default: nan for float dtypes, 0 otherwise), stored as the
 *             `_FillValue` attribute: the value of cells never written, of cells a DELETE
 *             resets and of cells added by growth
 *   sparse=1  a sparse frame (a directory, one file per chunk) instead of one file
 *
 * The array is written under a temporary name beside path and renamed into place only when
 * complete, without replacing anything: a crash leaves no half-made array at path, and two
 * connections creating the same path cannot both succeed.
 *
 * On s3://bucket/prefix/ the array is always a sparse frame (sparse=0 is refused): it is made
 * in a temporary local directory, then uploaded (caterva_schunk_save_ex): chunk objects first,
 * chunks.b2frame last with If-None-Match: *, so it appears whole or not at all, and a prefix
 * that holds an array already is never overwritten. http(s):// URLs are read-only.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cvHasCreateOptions(const CvOptions *p) {
  return p->zShape || p->zChunks || p->zBlocks || p->zCodec || p->zClevel || p->zFilters ||
         p->zFill || p->zSparse || p->zCoords;
}

/* The creation options given, for the message about an existing path. */
static char *cvCreateOptionList(const CvOptions *p) {
  return sqlite3_mprintf("%s%s%s%s%s%s%s%s%s", p->zShape ? " shape=" : "",
                         p->zChunks ? " chunks=" : "", p->zBlocks ? " blocks=" : "",
                         p->zCodec ? " codec=" : "", p->zClevel ? " clevel=" : "",
                         p->zFilters ? " filters=" : "", p->zFill ? " fill=" : "",
                         p->zSparse ? " sparse=" : "", p->zCoords ? " coords=" : "");
}

int cvCreateConflict(const CvOptions *p, char **pzErr) {
  char *zList = cvCreateOptionList(p);
  *pzErr = sqlite3_mprintf("caterva: '%s' exists; the creation options%s apply only to a new "
                           "array (open it without them, or give a new path)",
                           p->zPath, zList ? zList : "");
  sqlite3_free(zList);
  return SQLITE_ERROR;
}

/* Parse 'a,b,c' into at most CV_MAX_DIM values >= iMin; returns the count or -1. */
static int cvParseList(const char *z, int64_t iMin, int64_t *aOut) {
  int n = 0;
  while (*z) {
    char *zEnd;
    long long v;
    while (*z == ' ') z++;
    if (*z < '0' || *z > '9' || n == CV_MAX_DIM) return -1;
    errno = 0;
    v = strtoll(z, &zEnd, 10);
    if (errno || v < iMin) return -1;
    aOut[n++] = v;
    z = zEnd;
    while (*z == ' ') z++;
    if (*z == ',') {
      z++;
      if (*z == 0) return -1;
    } else if (*z) {
      return -1;
    }
  }
  return n;
}

static int cvParseCodec(const char *z, int *pCodec) {
  static const struct { const char *zName; int id; } aCodec[] = {
      {"blosclz", CATERVA_BLOSCLZ}, {"lz4", CATERVA_LZ4}, {"lz4hc", CATERVA_LZ4HC},
      {"zlib", CATERVA_ZLIB},       {"zstd", CATERVA_ZSTD}};
  for (size_t i = 0; i < sizeof(aCodec) / sizeof(aCodec[0]); i++)
    if (sqlite3_stricmp(z, aCodec[i].zName) == 0) {
      *pCodec = aCodec[i].id;
      return 0;
    }
  return 1;
}

/* filters= into the last slots of the pipeline, in the order given. */
static int cvParseFilters(const char *zIn, caterva_cparams *cp, char **pzErr) {
  uint8_t aF[CATERVA_MAX_FILTERS], aM[CATERVA_MAX_FILTERS];
  int n = 0, i;
  char *zCopy = sqlite3_mprintf("%s", zIn), *z, *zSave = 0;
  if (zCopy == 0) return SQLITE_NOMEM;
  for (z = strtok_r(zCopy, ", ", &zSave); z; z = strtok_r(0, ", ", &zSave)) {
    int id = -1, meta = 0;
    if (sqlite3_stricmp(z, "none") == 0) continue;
    if (sqlite3_stricmp(z, "shuffle") == 0) id = CATERVA_SHUFFLE;
    else if (sqlite3_stricmp(z, "bitshuffle") == 0) id = CATERVA_BITSHUFFLE;
    else if (sqlite3_stricmp(z, "delta") == 0) id = CATERVA_DELTA;
    else if (sqlite3_stricmp(z, "bytedelta") == 0) id = CATERVA_BYTEDELTA;
    else if (sqlite3_strnicmp(z, "trunc_prec:", 11) == 0) {
      char *zEnd;
      long v = strtol(z + 11, &zEnd, 10);
      if (*zEnd == 0 && v >= 1 && v <= 52) {
        id = CATERVA_TRUNC_PREC;
        meta = (int)v;
      }
    }
    if (id < 0 || n == CATERVA_MAX_FILTERS) {
      *pzErr = sqlite3_mprintf("caterva: filters=: \"%s\" is not a filter, or more than %d "
                               "(known: shuffle, bitshuffle, delta, trunc_prec:N with N in "
                               "1..52, bytedelta, none)", z, CATERVA_MAX_FILTERS);
      sqlite3_free(zCopy);
      return SQLITE_ERROR;
    }
    aF[n] = (uint8_t)id;
    aM[n++] = (uint8_t)meta;
  }
  sqlite3_free(zCopy);
  memset(cp->filters, 0, sizeof(cp->filters));
  memset(cp->filters_meta, 0, sizeof(cp->filters_meta));
  for (i = 0; i < n; i++) {
    cp->filters[CATERVA_MAX_FILTERS - n + i] = aF[i];
    cp->filters_meta[CATERVA_MAX_FILTERS - n + i] = aM[i];
  }
  return SQLITE_OK;
}

int cvCreatePartition(const CvOptions *p, caterva_array_params *pP, char **pzErr) {
  int64_t a[CV_MAX_DIM];
  int n = pP->ndim, k;
  if (p->zBlocks && !p->zChunks) {
    *pzErr = sqlite3_mprintf("caterva: blocks= needs chunks=");
    return SQLITE_ERROR;
  }
  if (p->zChunks) {
    if (cvParseList(p->zChunks, 1, a) != n) goto bad_parts;
    for (k = 0; k < n; k++) {
      if (a[k] > INT32_MAX) goto bad_parts;
      pP->chunkshape[k] = (int32_t)a[k];
    }
  }
  if (p->zBlocks) {
    if (cvParseList(p->zBlocks, 1, a) != n) goto bad_parts;
    for (k = 0; k < n; k++) {
      if (a[k] > pP->chunkshape[k]) goto bad_parts;
      pP->blockshape[k] = (int32_t)a[k];
    }
  }
  if (p->zCodec && cvParseCodec(p->zCodec, &pP->cparams.codec)) {
    *pzErr = sqlite3_mprintf("caterva: codec= must be blosclz, lz4, lz4hc, zlib or zstd, "
                             "not \"%s\"", p->zCodec);
    return SQLITE_ERROR;
  }
  if (p->zClevel) {
    if (strlen(p->zClevel) != 1 || p->zClevel[0] < '0' || p->zClevel[0] > '9') {
      *pzErr = sqlite3_mprintf("caterva: clevel= must be 0 to 9, not \"%s\"", p->zClevel);
      return SQLITE_ERROR;
    }
    pP->cparams.clevel = p->zClevel[0] - '0';
  }
  if (p->zFilters) return cvParseFilters(p->zFilters, &pP->cparams, pzErr);
  return SQLITE_OK;
bad_parts:
  *pzErr = sqlite3_mprintf("caterva: chunks= and blocks= must list %d extents >= 1 (blocks "
                           "no larger than chunks)", n);
  return SQLITE_ERROR;
}

/* Shapes, dtype and compression from the options into *pP (dtype into zDtype). */
static int cvCreateParams(const CvOptions *p, caterva_array_params *pP, char *zDtype,
                          size_t nDtype, char **pzErr) {
  int n;
  caterva_array_params_init(pP);
  n = cvParseList(p->zShape, 0, pP->shape);
  if (n < 1) {
    *pzErr = sqlite3_mprintf("caterva: shape= must list 1 to %d extents >= 0, like "
                             "'365,180,360', not \"%s\"", CV_MAX_DIM, p->zShape);
    return SQLITE_ERROR;
  }
  pP->ndim = n;
  if (caterva_dtype_canonical(p->zDtype ? p->zDtype : "float64", zDtype, nDtype) != CATERVA_OK) {
    *pzErr = sqlite3_mprintf("caterva: dtype=: unknown dtype \"%s\"", p->zDtype);
    return SQLITE_ERROR;
  }
  pP->dtype = zDtype;
  return cvCreatePartition(p, pP, pzErr);
}

/* fill= of an integer dtype as the exact integer it writes: 0 and *pV, else 1 (not an
** integer literal, or a number a double may have rounded). */
static int cvFillInteger(const char *z, int64_t *pV) {
  char *zEnd = 0;
  double d;
  errno = 0;
  *pV = strtoll(z, &zEnd, 10);
  if (*z && !*zEnd && errno == 0) return 0;
  d = strtod(z, &zEnd); /* like 1e6: below 2^53, no other literal rounds to it */
  if (!*z || *zEnd || !(fabs(d) < 9007199254740992.0) || d != floor(d)) return 1;
  *pV = (int64_t)d;
  return 0;
}

/* The fill item for fill= (or the default) of a dtype. */
static int cvFillItem(const CvOptions *p, const CvItemType *pType, uint8_t *aItem,
                      char **pzErr) {
  int bNan = p->zFill == 0 ? pType->eKind == CV_ITEM_FLOAT : sqlite3_stricmp(p->zFill, "nan") == 0;
  int bInt = pType->eKind != CV_ITEM_FLOAT && pType->eKind != CV_ITEM_BLOB;
  double d = 0.0;
  int64_t v = 0;
  char *zEnd = 0;
  memset(aItem, 0, (size_t)pType->szItem);
  if (bNan && pType->eKind != CV_ITEM_FLOAT) {
    *pzErr = sqlite3_mprintf("caterva: fill=nan needs a float dtype");
    return SQLITE_ERROR;
  }
  if (p->zFill && !bNan && !bInt) d = strtod(p->zFill, &zEnd);
  if (p->zFill && bInt ? cvFillInteger(p->zFill, &v) || cvPutChecked(pType, v, aItem)
      : (p->zFill && !bNan && (*p->zFill == 0 || *zEnd || !isfinite(d))) ||
        cvNumberToItem(pType, bNan ? NAN : d, aItem)) {
    *pzErr = sqlite3_mprintf("caterva: fill= must be nan or a number the dtype holds, not "
                             "\"%s\"", p->zFill);
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

static int cvRemoveOne(const char *zPath, const struct stat *st, int flag, struct FTW *f) {
  (void)st;
  (void)flag;
  (void)f;
  return remove(zPath);
}

void cvCreateRemoveTemp(const char *zTmp) {
  (void)nftw(zTmp, cvRemoveOne, 8, FTW_DEPTH | FTW_PHYS);
}

char *cvCreateTempName(const char *zPath) {
  char *zTmp = sqlite3_mprintf("%s.creating-%d", zPath, (int)getpid());
  if (zTmp) cvCreateRemoveTemp(zTmp); /* left by a crash of an earlier attempt of this pid */
  return zTmp;
}

static int cvCreateLib(caterva_ctx *pCtx, int r, char **pzErr) {
  *pzErr = sqlite3_mprintf("caterva: cannot create the array: %s%s%s", caterva_strerror(r),
                           caterva_ctx_errmsg(pCtx)[0] ? ": " : "", caterva_ctx_errmsg(pCtx));
  return r == CATERVA_E_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
}

/* Dimension names given by dims= (exactly nDim), stored in the file. */
static int cvStoreDims(caterva_ctx *pCtx, caterva_array *pArr, const char *zDims, int nDim,
                       char **pzErr) {
  char *azName[CV_MAX_DIM];
  int rc = cvSplitDims(zDims, nDim, azName, pzErr), r, k;
  if (rc != SQLITE_OK) return rc;
  r = caterva_array_set_dim_names(pCtx, pArr, (const char *const *)azName);
  for (k = 0; k < nDim; k++) sqlite3_free(azName[k]);
  return r < 0 ? cvCreateLib(pCtx, r, pzErr) : SQLITE_OK;
}

int cvCreatePublish(CvConn *pConn, caterva_array *pArr, const char *zPath, const char *zDims,
                    int bCompact, char **pzErr) {
  caterva_ctx *pCtx = pConn->pCtx;
  int rc = SQLITE_OK, r;
  if (zDims) rc = cvStoreDims(pCtx, pArr, zDims, caterva_array_ndim(pArr), pzErr);
  if (rc != SQLITE_OK) return rc;
  r = caterva_schunk_compact(pCtx, caterva_array_schunk(pArr), bCompact);
  if (r >= 0) r = caterva_schunk_rename(pCtx, caterva_array_schunk(pArr), zPath);
  if (r == CATERVA_E_EXISTS) {
    *pzErr = sqlite3_mprintf("caterva: '%s' was created by someone else meanwhile", zPath);
    return SQLITE_ERROR;
  }
  return r < 0 ? cvCreateLib(pCtx, r, pzErr) : SQLITE_OK;
}

/* coords= over the dimension names of dims= (or d0, d1, ...). */
static int cvCreateCoords(caterva_ctx *pCtx, caterva_array *pArr, const CvOptions *p, int nDim,
                          char **pzErr) {
  char *azName[CV_MAX_DIM];
  int rc = SQLITE_OK, k;
  memset(azName, 0, sizeof azName);
  if (p->zDims) rc = cvSplitDims(p->zDims, nDim, azName, pzErr);
  for (k = 0; k < nDim && rc == SQLITE_OK && !p->zDims; k++) {
    azName[k] = sqlite3_mprintf("d%d", k);
    if (azName[k] == 0) rc = SQLITE_NOMEM;
  }
  if (rc == SQLITE_OK) rc = cvStoreCoords(pCtx, pArr, p->zCoords, azName, nDim, pzErr);
  for (k = 0; k < nDim; k++) sqlite3_free(azName[k]);
  return rc;
}

/* The array of a CREATE on an s3:// prefix: made in a local temporary directory, uploaded. */
static int cvCreateRemote(CvConn *pConn, const CvOptions *p, caterva_array_params *par,
                          const uint8_t *aFill, char **pzErr) {
  caterva_ctx *pCtx = pConn->pCtx;
  caterva_remote_opts opts;
  caterva_array *pArr = 0;
  const char *zTmpDir = getenv("TMPDIR");
  char *zDir = 0, *zArr = 0;
  int rc, r;
  if (strncmp(p->zPath, "s3://", 5) != 0) {
    *pzErr = sqlite3_mprintf("caterva: '%s': http(s):// URLs are read-only; arrays are "
                             "created in S3 as s3://bucket/prefix/ (a sparse frame)", p->zPath);
    return SQLITE_READONLY;
  }
  if (p->zSparse && strcmp(p->zSparse, "0") == 0) {
    *pzErr = sqlite3_mprintf("caterva: '%s': arrays in S3 are sparse frames (a prefix of chunk "
                             "objects): sparse=0 cannot be", p->zPath);
    return SQLITE_ERROR;
  }
  rc = cvRemoteOptions(p, &opts, pzErr);
  if (rc != SQLITE_OK) return rc;
  zDir = sqlite3_mprintf("%s/caterva-create-XXXXXX", zTmpDir && *zTmpDir ? zTmpDir : "/tmp");
  if (zDir == 0) return SQLITE_NOMEM;
  if (mkdtemp(zDir) == 0) {
    *pzErr = sqlite3_mprintf("caterva: cannot make a temporary directory '%s': %s", zDir,
                             strerror(errno));
    sqlite3_free(zDir);
    return SQLITE_ERROR;
  }
  zArr = sqlite3_mprintf("%s/array", zDir);
  if (zArr == 0) {
    rc = SQLITE_NOMEM;
    goto remote_out;
  }
  par->store = CATERVA_STORE_SPARSE;
  par->path = zArr;
  r = caterva_array_create(pCtx, par, CATERVA_FILL_VALUE, aFill, &pArr);
  if (r >= 0) r = caterva_array_set_fill(pCtx, pArr, aFill, 1);
  if (r < 0) rc = cvCreateLib(pCtx, r, pzErr);
  if (rc == SQLITE_OK && p->zCoords) rc = cvCreateCoords(pCtx, pArr, p, par->ndim, pzErr);
  if (rc == SQLITE_OK && p->zDims)
    rc = cvStoreDims(pCtx, pArr, p->zDims, caterva_array_ndim(pArr), pzErr);
  if (rc == SQLITE_OK) {
    r = caterva_schunk_save_ex(pCtx, caterva_array_schunk(pArr), p->zPath,
                               CATERVA_STORE_SPARSE, &opts);
    if (r == CATERVA_E_EXISTS) {
      *pzErr = sqlite3_mprintf("caterva: '%s' holds an array already (or was created by "
                               "someone else meanwhile)", p->zPath);
      rc = SQLITE_ERROR;
    } else if (r < 0) {
      rc = cvCreateLib(pCtx, r, pzErr);
    }
  }
remote_out:
  caterva_array_free(pArr);
  cvCreateRemoveTemp(zDir);
  sqlite3_free(zArr);
  sqlite3_free(zDir);
  return rc;
}

int cvCreateArray(CvConn *pConn, const CvOptions *p, char **pzErr) {
  caterva_ctx *pCtx = pConn->pCtx;
  caterva_array_params par;
  caterva_array *pArr = 0;
  CvItemType item;
  char zDtype[CATERVA_DTYPE_MAX + 1];
  uint8_t aFill[16];
  char *zTmp = 0;
  int rc, r, bSparse = p->zSparse && strcmp(p->zSparse, "0") != 0;
  if (p->zSparse && strcmp(p->zSparse, "0") != 0 && strcmp(p->zSparse, "1") != 0) {
    *pzErr = sqlite3_mprintf("caterva: sparse= must be 0 or 1");
    return SQLITE_ERROR;
  }
  if (p->zShape == 0) {
    *pzErr = sqlite3_mprintf("caterva: '%s' does not exist (give shape= to create it)",
                             p->zPath);
    return SQLITE_ERROR;
  }
  rc = cvCreateParams(p, &par, zDtype, sizeof zDtype, pzErr);
  if (rc != SQLITE_OK) return rc;
  {
    caterva_dtype_info info;
    caterva_dtype_parse(zDtype, &info);
    if (cvItemTypeInit(&item, zDtype, info.itemsize, pzErr)) return SQLITE_ERROR;
    if (item.szItem > 16 || item.eKind == CV_ITEM_BLOB || item.eKind == CV_ITEM_UCS4) {
      *pzErr = sqlite3_mprintf("caterva: dtype=%s: SQL writes support bool, integer, float "
                               "and datetime64 dtypes", zDtype);
      return SQLITE_ERROR;
    }
  }
  rc = cvFillItem(p, &item, aFill, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (caterva_path_is_remote(p->zPath)) return cvCreateRemote(pConn, p, &par, aFill, pzErr);
  zTmp = cvCreateTempName(p->zPath);
  if (zTmp == 0) return SQLITE_NOMEM;
  par.store = bSparse ? CATERVA_STORE_SPARSE : CATERVA_STORE_CONTIGUOUS;
  par.path = zTmp;
  r = caterva_array_create(pCtx, &par, CATERVA_FILL_VALUE, aFill, &pArr);
  if (r < 0) {
    rc = cvCreateLib(pCtx, r, pzErr);
    goto create_out;
  }
  r = caterva_array_set_fill(pCtx, pArr, aFill, 1);
  if (r < 0) rc = cvCreateLib(pCtx, r, pzErr);
  if (rc == SQLITE_OK && p->zCoords) rc = cvCreateCoords(pCtx, pArr, p, par.ndim, pzErr);
  if (rc == SQLITE_OK) rc = cvCreatePublish(pConn, pArr, p->zPath, p->zDims, 1, pzErr);
create_out:
  caterva_array_free(pArr);
  if (rc != SQLITE_OK) cvCreateRemoveTemp(zTmp);
  sqlite3_free(zTmp);
  return rc;
}

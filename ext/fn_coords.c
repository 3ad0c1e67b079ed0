/*
 * fn_coords.c -- SQL functions about coordinates:
 *
 *   caterva_set_coords(t, dim, json [, units [, calendar]])
 *       stores an explicit coordinate: json is an array of numbers, or of ISO 8601 dates
 *       (then units default to "seconds since 1970-01-01"); '[]' or NULL removes dim's
 *       coordinate. Commits on its own, under the array's lock (an error while this
 *       connection's table t has uncommitted writes); in S3 through the commit protocol of
 *       every write (docs/guarantees.md), made again when another writer committed first.
 *       Returns the number of labels.
 *   caterva_nearest(t, dim, value)
 *       the index of dim whose label is nearest to value (a number, or a date for time
 *       coordinates); NULL for NULL.
 *
 * t is a caterva table of the connection or an array's path (cvConnResolve). Dimensions are
 * named as the table names them, else by the file's dimension names, else d0, d1, ...
 * caterva_info() reports the coordinates through cvInfoCoords.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Dimension names of an array (the table's, the file's, or d0, d1, ...) into azName. */
static int cvDimNames(CvConn *pConn, CvVtab *pTab, caterva_array *pArr, char **azName) {
  int nDim = caterva_array_ndim(pArr), k;
  char **azFile = 0;
  if (pTab == 0 && caterva_array_get_dim_names(pConn->pCtx, pArr, &azFile) != CATERVA_OK)
    azFile = 0;
  for (k = 0; k < nDim; k++) {
    azName[k] = pTab && pTab->azCol && k < pTab->nDim ? sqlite3_mprintf("%s", pTab->azCol[k])
                : azFile                             ? sqlite3_mprintf("%s", azFile[k])
                                                     : sqlite3_mprintf("d%d", k);
    if (azName[k] == 0) break;
  }
  caterva_array_free_names(azFile, nDim);
  return k == nDim ? SQLITE_OK : SQLITE_NOMEM;
}

static void cvFreeNames(char **azName, int n) {
  for (int k = 0; k < n; k++) sqlite3_free(azName[k]);
}

static void cvResultErr(sqlite3_context *pCtx, const char *zFmt, const char *zArg,
                        const char *zMsg) {
  char *z = sqlite3_mprintf(zFmt, zArg, zMsg);
  sqlite3_result_error(pCtx, z ? z : "caterva: error", -1);
  sqlite3_free(z);
}

/* Open the array argv[0] names and find dimension argv[1]; *pk = -1 after an error. */
static caterva_array *cvOpenDim(sqlite3_context *pCtx, CvConn *pConn, sqlite3_value **argv,
                                int mode, const char **pzPath, CvVtab **ppTab, int *pk) {
  const char *zArg = (const char *)sqlite3_value_text(argv[0]);
  const char *zDim = (const char *)sqlite3_value_text(argv[1]);
  char *azName[CV_MAX_DIM];
  caterva_array *pArr = 0;
  void *pTab = 0;
  int r, k, nDim;
  *pk = -1;
  if (zArg == 0 || zDim == 0) {
    sqlite3_result_error(pCtx, "caterva: give a table or file and a dimension name", -1);
    return 0;
  }
  *pzPath = cvConnResolve(pConn, sqlite3_context_db_handle(pCtx), zArg, &pTab);
  *ppTab = (CvVtab *)pTab;
  r = cvArrayOpen(pConn, *pzPath, mode, 0, &pArr);
  if (r < 0) {
    cvResultErr(pCtx, "caterva: cannot open \"%s\": %s", *pzPath, caterva_ctx_errmsg(pConn->pCtx));
    return 0;
  }
  nDim = caterva_array_ndim(pArr);
  memset(azName, 0, sizeof azName);
  if (cvDimNames(pConn, *ppTab, pArr, azName) != SQLITE_OK) {
    cvFreeNames(azName, nDim);
    caterva_array_free(pArr);
    sqlite3_result_error_nomem(pCtx);
    return 0;
  }
  for (k = 0; k < nDim && sqlite3_stricmp(azName[k], zDim) != 0; k++) {
  }
  cvFreeNames(azName, nDim);
  if (k == nDim) {
    cvResultErr(pCtx, "caterva: \"%s\" has no dimension named \"%s\"", *pzPath, zDim);
    caterva_array_free(pArr);
    return 0;
  }
  *pk = k;
  return pArr;
}

/* ---- caterva_nearest ------------------------------------------------------------------- */

static void cvNearestFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  CvConn *pConn = (CvConn *)sqlite3_user_data(pCtx);
  caterva_ctx *ctx = pConn->pCtx;
  caterva_array *pArr;
  caterva_coord c;
  caterva_labels l;
  const char *zPath;
  CvVtab *pTab;
  double key;
  int k, r;
  (void)argc;
  if (sqlite3_value_type(argv[2]) == SQLITE_NULL) return; /* NULL */
  pArr = cvOpenDim(pCtx, pConn, argv, CATERVA_OPEN_READ, &zPath, &pTab, &k);
  if (pArr == 0) return;
  r = caterva_array_get_coord(ctx, pArr, k, &c);
  if (r == CATERVA_OK && c.kind == CATERVA_COORD_NONE) {
    cvResultErr(pCtx, "caterva_nearest: dimension %s of \"%s\" has no coordinate",
                (const char *)sqlite3_value_text(argv[1]), zPath);
    goto nearest_out;
  }
  if (r == CATERVA_OK) r = caterva_labels_init(ctx, &l, &c, caterva_array_shape(pArr)[k]);
  if (r < 0) {
    cvResultErr(pCtx, "caterva_nearest: %s%s", caterva_strerror(r), caterva_ctx_errmsg(ctx));
    goto nearest_out;
  }
  {
    char *zErr = 0;
    if (cvValueKey(ctx, &l, (const char *)sqlite3_value_text(argv[1]), argv[2], &key, &zErr)) {
      sqlite3_result_error(pCtx, zErr ? zErr : "caterva_nearest: out of memory", -1);
      sqlite3_free(zErr);
      goto nearest_out;
    }
  }
  {
    int64_t i = caterva_labels_nearest(&l, key);
    if (i >= 0) sqlite3_result_int64(pCtx, i);
  }
nearest_out:
  caterva_array_free(pArr);
}

/* ---- caterva_set_coords ---------------------------------------------------------------- */

/* The labels of a JSON array (numbers, or dates read against l0's calendar) into *paOut
** (sqlite3_malloc'ed); *pbDates when they are dates. Uses SQLite's json_each. */
static int cvJsonLabels(sqlite3_context *pCtx, caterva_ctx *ctx, sqlite3_value *pJson,
                        const caterva_labels *pDates, double **paOut, int64_t *pn) {
  sqlite3 *db = sqlite3_context_db_handle(pCtx);
  sqlite3_stmt *pStmt = 0;
  double *a = 0;
  int64_t n = 0, nAlloc = 0;
  int bReported = 0;
  int rc = sqlite3_prepare_v2(db, "SELECT type, value FROM json_each(?1)", -1, &pStmt, 0);
  if (rc == SQLITE_OK) rc = sqlite3_bind_value(pStmt, 1, pJson);
  while (rc == SQLITE_OK && sqlite3_step(pStmt) == SQLITE_ROW) {
    const char *zType = (const char *)sqlite3_column_text(pStmt, 0);
    double v;
    if (n == nAlloc) {
      double *aNew;
      nAlloc = nAlloc ? 2 * nAlloc : 256;
      aNew = sqlite3_realloc64(a, (sqlite3_uint64)nAlloc * sizeof(double));
      if (aNew == 0) {
        rc = SQLITE_NOMEM;
        break;
      }
      a = aNew;
    }
    if (zType && (strcmp(zType, "integer") == 0 || strcmp(zType, "real") == 0) && !pDates) {
      v = sqlite3_column_double(pStmt, 1);
    } else if (zType && strcmp(zType, "text") == 0 && pDates &&
               caterva_labels_parse_time(ctx, pDates, (const char *)sqlite3_column_text(pStmt, 1),
                                         &v) == CATERVA_OK) {
      v = caterva_labels_from_key(pDates, v);
    } else {
      char *z = sqlite3_mprintf("caterva_set_coords: label %lld (%s) is not %s", (long long)n,
                                sqlite3_column_text(pStmt, 1), pDates ? "a date" : "a number");
      sqlite3_result_error(pCtx, z ? z : "caterva_set_coords: bad label", -1);
      sqlite3_free(z);
      rc = SQLITE_ERROR;
      bReported = 1;
      break;
    }
    a[n++] = v;
  }
  if (rc == SQLITE_OK) rc = sqlite3_finalize(pStmt);
  else sqlite3_finalize(pStmt);
  if (rc != SQLITE_OK) {
    sqlite3_free(a);
    if (rc == SQLITE_NOMEM) sqlite3_result_error_nomem(pCtx);
    else if (!bReported)
      sqlite3_result_error(pCtx, "caterva_set_coords: the third argument must be a JSON array",
                           -1);
    return rc;
  }
  *paOut = a;
  *pn = n;
  return SQLITE_OK;
}

/* Is the JSON array's first element a string (dates)? */
static int cvJsonHasText(sqlite3_context *pCtx, sqlite3_value *pJson) {
  sqlite3_stmt *pStmt = 0;
  int b = 0;
  if (sqlite3_prepare_v2(sqlite3_context_db_handle(pCtx),
                         "SELECT type = 'text' FROM json_each(?1) LIMIT 1", -1, &pStmt,
                         0) == SQLITE_OK &&
      sqlite3_bind_value(pStmt, 1, pJson) == SQLITE_OK && sqlite3_step(pStmt) == SQLITE_ROW)
    b = sqlite3_column_int(pStmt, 0);
  sqlite3_finalize(pStmt);
  return b;
}

/* Store c as dimension k's coordinate of the array at zPath in a transaction of its own:
** under the array's lock when it is local. In S3 no lock: the commit's conditional index PUT
** decides (frame_s3.c), and as this transaction starts from the newest version each time,
** one that lost to another writer (BUSY) is simply made again. pRem: the table's remote
** options, or NULL (the environment's). */
static int cvCommitCoord(caterva_ctx *ctx, const char *zPath, const caterva_remote_opts *pRem,
                         int k, const caterva_coord *c) {
  int bRemote = caterva_path_is_remote(zPath), r = CATERVA_E_BUSY;
  for (int nTry = 0; r == CATERVA_E_BUSY && nTry < (bRemote ? CV_S3_TRIES : 1); nTry++) {
    caterva_lock *pLock = 0;
    caterva_array *pArr = 0;
    r = bRemote ? CATERVA_OK : caterva_lock_open_writer(ctx, zPath, &pLock);
    if (r >= 0 && pLock) r = caterva_lock_exclusive(ctx, pLock, 0);
    if (r >= 0) r = caterva_array_open_ex(ctx, zPath, CATERVA_OPEN_WRITE, pRem, &pArr);
    if (r >= 0) r = caterva_array_begin(ctx, pArr);
    if (r >= 0) {
      r = caterva_array_set_coord(ctx, pArr, k, c);
      if (r >= 0) r = caterva_array_commit(ctx, pArr, 1);
      else (void)caterva_array_rollback(ctx, pArr);
    }
    caterva_array_free(pArr);
    caterva_lock_free(pLock);
  }
  return r;
}

static void cvSetCoordsFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  CvConn *pConn = (CvConn *)sqlite3_user_data(pCtx);
  caterva_ctx *ctx = pConn->pCtx;
  caterva_array *pArr;
  caterva_coord c;
  caterva_labels l;
  const char *zPath;
  CvVtab *pTab;
  double *a = 0;
  int64_t n = 0;
  int k, r, bDates;
  pArr = cvOpenDim(pCtx, pConn, argv, CATERVA_OPEN_READ, &zPath, &pTab, &k);
  if (pArr == 0) return;
  caterva_array_free(pArr); /* only to find the dimension: the write opens it under the lock */
  if (pTab && pTab->bInTxn) {
    cvResultErr(pCtx, "caterva_set_coords: table %s has uncommitted writes in this "
                "connection; COMMIT first%s", (const char *)sqlite3_value_text(argv[0]), "");
    return;
  }
  memset(&c, 0, sizeof c);
  c.units = argc > 3 && sqlite3_value_type(argv[3]) != SQLITE_NULL
                ? (const char *)sqlite3_value_text(argv[3]) : "";
  c.calendar = argc > 4 && sqlite3_value_type(argv[4]) != SQLITE_NULL
                   ? (const char *)sqlite3_value_text(argv[4]) : "";
  bDates = sqlite3_value_type(argv[2]) != SQLITE_NULL && cvJsonHasText(pCtx, argv[2]);
  if (bDates && c.units[0] == 0) c.units = "seconds since 1970-01-01";
  c.kind = CATERVA_COORD_EXPLICIT;
  c.nvalues = 1; /* for labels_init of the date reader only */
  {
    double one = 0;
    c.values = &one;
    r = caterva_labels_init(ctx, &l, &c, 0);
    if (r < 0 || (bDates && !l.is_time)) {
      cvResultErr(pCtx, "caterva_set_coords: %s%s", r < 0 ? caterva_ctx_errmsg(ctx)
                        : "dates need units like 'days since 2000-01-01'", "");
      return;
    }
    if (sqlite3_value_type(argv[2]) != SQLITE_NULL &&
        cvJsonLabels(pCtx, ctx, argv[2], bDates ? &l : 0, &a, &n) != SQLITE_OK)
      return;
  }
  c.values = a;
  c.nvalues = n;
  r = cvCommitCoord(ctx, zPath, pTab ? &pTab->remote : 0, k, n > 0 ? &c : 0);
  sqlite3_free(a);
  if (r < 0) {
    cvResultErr(pCtx, "caterva_set_coords: %s: %s", caterva_strerror(r), caterva_ctx_errmsg(ctx));
    return;
  }
  sqlite3_result_int64(pCtx, n);
}

/* ---- caterva_info ---------------------------------------------------------------------- */

void cvInfoCoords(sqlite3_str *pStr, CvConn *pConn, caterva_array *pArr) {
  caterva_ctx *ctx = pConn->pCtx;
  char *azName[CV_MAX_DIM];
  int nDim = caterva_array_ndim(pArr), nOut = 0;
  memset(azName, 0, sizeof azName);
  if (cvDimNames(pConn, 0, pArr, azName) != SQLITE_OK) {
    cvFreeNames(azName, nDim);
    return;
  }
  sqlite3_str_appendall(pStr, ",\"coords\":{");
  for (int k = 0; k < nDim; k++) {
    caterva_coord c;
    caterva_labels l;
    int64_t n = caterva_array_shape(pArr)[k];
    char zA[48], zB[48];
    if (caterva_array_get_coord(ctx, pArr, k, &c) != CATERVA_OK || c.kind == CATERVA_COORD_NONE ||
        caterva_labels_init(ctx, &l, &c, n) != CATERVA_OK)
      continue;
    if (nOut++) sqlite3_str_appendchar(pStr, 1, ',');
    cvJsonString(pStr, azName[k], strlen(azName[k]));
    sqlite3_str_appendf(pStr, ":{\"kind\":\"%s\"",
                        c.kind == CATERVA_COORD_REGULAR ? "regular" : "explicit");
    if (c.kind == CATERVA_COORD_REGULAR) {
      sqlite3_str_appendall(pStr, ",\"start\":");
      cvJsonDouble(pStr, c.start);
      sqlite3_str_appendall(pStr, ",\"step\":");
      cvJsonDouble(pStr, c.step);
    } else {
      sqlite3_str_appendf(pStr, ",\"nvalues\":%lld", (long long)c.nvalues);
    }
    sqlite3_str_appendall(pStr, ",\"units\":");
    cvJsonString(pStr, c.units, strlen(c.units));
    if (l.is_time) {
      sqlite3_str_appendall(pStr, ",\"calendar\":");
      cvJsonString(pStr, c.calendar[0] ? c.calendar : "standard",
                   strlen(c.calendar[0] ? c.calendar : "standard"));
    }
    if (n > 0) {
      sqlite3_str_appendall(pStr, ",\"first\":");
      if (l.is_time && caterva_labels_format(&l, 0, zA, sizeof zA) == CATERVA_OK &&
          caterva_labels_format(&l, n - 1, zB, sizeof zB) == CATERVA_OK) {
        cvJsonString(pStr, zA, strlen(zA));
        sqlite3_str_appendall(pStr, ",\"last\":");
        cvJsonString(pStr, zB, strlen(zB));
      } else {
        cvJsonDouble(pStr, caterva_labels_value(&l, 0));
        sqlite3_str_appendall(pStr, ",\"last\":");
        cvJsonDouble(pStr, caterva_labels_value(&l, n - 1));
      }
    }
    sqlite3_str_appendchar(pStr, 1, '}');
  }
  sqlite3_str_appendchar(pStr, 1, '}');
  cvFreeNames(azName, nDim);
}

int cvRegisterCoordFunctions(sqlite3 *db, CvConn *pConn) {
  int rc = SQLITE_OK;
  for (int nArg = 3; nArg <= 5 && rc == SQLITE_OK; nArg++)
    rc = sqlite3_create_function_v2(db, "caterva_set_coords", nArg,
                                    SQLITE_UTF8 | SQLITE_DIRECTONLY, cvConnRef(pConn),
                                    cvSetCoordsFunc, 0, 0, cvConnUnref);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function_v2(db, "caterva_nearest", 3, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                    cvConnRef(pConn), cvNearestFunc, 0, 0, cvConnUnref);
  return rc;
}

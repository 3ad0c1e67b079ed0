/*
 * fn_io.c -- caterva_import(): one SQL function for every source format, dispatched by what the
 * source is (its first bytes, or the files of a directory), not by its name.
 *
 *   caterva_import(src, dst [, variable [, options]])
 *
 *   .npy file ("\x93NUMPY")                     fn_io_npy.c      cvImportNpy
 *   NetCDF-3 ("CDF\x01", "CDF\x02", "CDF\x05")  fn_io_netcdf.c   cvImportNetcdf
 *   NetCDF-4 / HDF5 ("\x89HDF\r\n\x1a\n")
 *   bcolz carray or ctable directory            fn_io_bcolz.c    cvImportBcolz
 *     (meta/storage, or __rootdirs__)
 *
 * Each importer reports its own errors on pCtx and returns nothing; options are the importer's
 * to parse (see ext_internal.h).
 *
 * caterva_export(src, 'out.npy' [, start, stop]), the way out to NumPy, is fn_io_export.c's;
 * caterva_png(src [, start, stop [, options]]), pictures of slices, fn_io_png.c's.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* What a source is. */
#define CV_SRC_UNKNOWN 0
#define CV_SRC_NPY     1
#define CV_SRC_NETCDF  2
#define CV_SRC_BCOLZ   3

/* Does directory zDir hold file zRel? */
static int cvDirHas(const char *zDir, const char *zRel) {
  struct stat st;
  char *z = sqlite3_mprintf("%s/%s", zDir, zRel);
  int b = z && stat(z, &st) == 0;
  sqlite3_free(z);
  return b;
}

/* The kind of source zPath is, from its first bytes or its directory entries. */
static int cvSourceKind(const char *zPath) {
  static const unsigned char aHdf5[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};
  unsigned char a[8];
  struct stat st;
  ssize_t n;
  int fd;
  if (stat(zPath, &st) != 0) return CV_SRC_UNKNOWN;
  if (S_ISDIR(st.st_mode))
    return cvDirHas(zPath, "meta/storage") || cvDirHas(zPath, "__rootdirs__") ? CV_SRC_BCOLZ
                                                                              : CV_SRC_UNKNOWN;
  fd = open(zPath, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return CV_SRC_UNKNOWN;
  n = read(fd, a, sizeof a);
  close(fd);
  if (n >= 6 && memcmp(a, "\x93NUMPY", 6) == 0) return CV_SRC_NPY;
  if (n >= 4 && memcmp(a, "CDF", 3) == 0 && (a[3] == 1 || a[3] == 2 || a[3] == 5))
    return CV_SRC_NETCDF;
  if (n == 8 && memcmp(a, aHdf5, 8) == 0) return CV_SRC_NETCDF;
  return CV_SRC_UNKNOWN;
}

static void cvImportFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  CvConn *pConn = (CvConn *)sqlite3_user_data(pCtx);
  const char *zSrc = (const char *)sqlite3_value_text(argv[0]);
  const char *zDst = (const char *)sqlite3_value_text(argv[1]);
  const char *zVar = argc > 2 ? (const char *)sqlite3_value_text(argv[2]) : 0;
  const char *zOpt = argc > 3 ? (const char *)sqlite3_value_text(argv[3]) : 0;
  char *zErr;
  if (zSrc == 0 || zSrc[0] == 0 || zDst == 0 || zDst[0] == 0) {
    sqlite3_result_error(pCtx, "caterva_import(src, dst [, variable [, options]]): src and dst "
                         "must be file names", -1);
    return;
  }
  switch (cvSourceKind(zSrc)) {
    case CV_SRC_NPY: cvImportNpy(pCtx, pConn, zSrc, zDst, zVar, zOpt); return;
    case CV_SRC_NETCDF: cvImportNetcdf(pCtx, pConn, zSrc, zDst, zVar, zOpt); return;
    case CV_SRC_BCOLZ: cvImportBcolz(pCtx, pConn, zSrc, zDst, zVar, zOpt); return;
    default: break;
  }
  zErr = sqlite3_mprintf("caterva_import: \"%s\" is not a .npy file, a NetCDF file or a bcolz "
                         "directory (or cannot be read)", zSrc);
  sqlite3_result_error(pCtx, zErr ? zErr : "caterva_import: unknown source", -1);
  sqlite3_free(zErr);
}

const char *cvImportBadOption(const CvOptions *p) {
  if (p->zPath) return "path";
  if (p->zShape) return "shape";
  if (p->zDtype) return "dtype";
  if (p->zValue) return "value";
  if (p->zFill) return "fill";
  if (p->zSync) return "synchronous";
  if (p->zLockReads) return "lock_reads";
  if (p->bCacheMb) return "cache_mb";
  return 0;
}

/* ---- progress and interrupts ------------------------------------------------------------ */

double cvImportNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Was sqlite3_interrupt() called? SQLite 3.40 has no sqlite3_is_interrupted(), and a
** function call is one step of its statement, so the flag is not looked at until the import
** returns; but a statement stepped meanwhile on the same connection sees it and fails with
** SQLITE_INTERRUPT. */
static int cvImportInterrupted(CvImportProgress *p) {
  int rc = sqlite3_step(p->pCheck);
  sqlite3_reset(p->pCheck);
  if (rc == SQLITE_ROW) return 0;
  p->bInterrupted = rc == SQLITE_INTERRUPT;
  p->zErr = sqlite3_mprintf("caterva_import: %s", rc == SQLITE_INTERRUPT ? "interrupted"
                                                                          : sqlite3_errmsg(p->db));
  return 1;
}

int cvImportProgressStep(void *pArg, int64_t nDone, int64_t nTotal) {
  CvImportProgress *p = (CvImportProgress *)pArg;
  int rc;
  if (p->zErr) return CATERVA_E_INVALID; /* already stopped */
  if (p->pStmt == 0) {
    if (p->bStderr)
      fprintf(stderr, "caterva_import: %s: %lld of %lld items (%.0f%%), %.1f s\n", p->zWhat,
              (long long)nDone, (long long)nTotal,
              nTotal ? 100.0 * (double)nDone / (double)nTotal : 100.0, cvImportNow() - p->t0);
    return cvImportInterrupted(p) ? CATERVA_E_INVALID : 0;
  }
  /* the progress function's statement also fails once the connection is interrupted */
  sqlite3_bind_int64(p->pStmt, 1, nDone);
  sqlite3_bind_int64(p->pStmt, 2, nTotal);
  while ((rc = sqlite3_step(p->pStmt)) == SQLITE_ROW) {
  }
  if (rc == SQLITE_INTERRUPT) {
    p->bInterrupted = 1;
    p->zErr = sqlite3_mprintf("caterva_import: interrupted");
  } else if (rc != SQLITE_DONE) {
    p->zErr = sqlite3_mprintf("caterva_import: stopped by the progress function: %s",
                              sqlite3_errmsg(p->db));
  }
  sqlite3_reset(p->pStmt);
  return rc == SQLITE_DONE ? 0 : CATERVA_E_INVALID;
}

int cvImportProgressBegin(CvImportProgress *p, sqlite3 *db, const char *zWhat,
                          const char *zProgress, char **pzErr) {
  int rc;
  memset(p, 0, sizeof(*p));
  p->db = db;
  p->zWhat = zWhat ? zWhat : "";
  p->t0 = cvImportNow();
  rc = sqlite3_prepare_v2(db, "SELECT 1", -1, &p->pCheck, 0);
  if (rc != SQLITE_OK) {
    /* the parser, too, fails once sqlite3_interrupt() was called */
    p->bInterrupted = rc == SQLITE_INTERRUPT;
    *pzErr = sqlite3_mprintf("caterva_import: %s", sqlite3_errmsg(db));
    return rc == SQLITE_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
  }
  if (zProgress == 0) return SQLITE_OK;
  p->bStderr = strcmp(zProgress, "stderr") == 0;
  if (!p->bStderr) {
    char *zSql = sqlite3_mprintf("SELECT \"%w\"(?1, ?2)", zProgress);
    rc = zSql ? sqlite3_prepare_v2(db, zSql, -1, &p->pStmt, 0) : SQLITE_NOMEM;
    sqlite3_free(zSql);
    if (rc != SQLITE_OK) {
      *pzErr = sqlite3_mprintf("caterva_import: progress=%s: %s", zProgress, sqlite3_errmsg(db));
      return rc == SQLITE_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
    }
  }
  return SQLITE_OK;
}

int cvProgressOption(void *pArg, const char *zKey, const char *zVal, char **pzErr) {
  CvProgressOption *p = (CvProgressOption *)pArg;
  if (sqlite3_stricmp(zKey, "progress") == 0 && p->zProgress == 0) {
    p->zProgress = sqlite3_mprintf("%s", zVal);
    return p->zProgress ? SQLITE_OK : SQLITE_NOMEM;
  }
  *pzErr = sqlite3_mprintf("caterva_import: unknown option \"%s\" for a %s source (it takes %s)",
                           zKey, p->zSource, p->zTakes);
  return SQLITE_ERROR;
}

void cvImportProgressEnd(CvImportProgress *p) {
  sqlite3_finalize(p->pStmt);
  sqlite3_finalize(p->pCheck);
  sqlite3_free(p->zErr);
  memset(p, 0, sizeof(*p));
}

int cvRegisterIo(sqlite3 *db, CvConn *pConn) {
  int rc = SQLITE_OK;
  for (int nArg = 2; nArg <= 4 && rc == SQLITE_OK; nArg++) {
    rc = sqlite3_create_function_v2(db, "caterva_import", nArg, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                    cvConnRef(pConn), cvImportFunc, 0, 0, cvConnUnref);
  }
  for (int nArg = 2; nArg <= 4 && rc == SQLITE_OK; nArg++) {
    rc = sqlite3_create_function_v2(db, "caterva_export", nArg, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                    cvConnRef(pConn), cvExportFunc, 0, 0, cvConnUnref);
  }
  for (int nArg = 1; nArg <= 4 && rc == SQLITE_OK; nArg++) {
    rc = sqlite3_create_function_v2(db, "caterva_png", nArg, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                    cvConnRef(pConn), cvPngFunc, 0, 0, cvConnUnref);
  }
  return rc;
}

/*
 * fn_io.c -- caterva_import(): one SQL function for every source format, dispatched by what the
 * source is (its first bytes, or the files of a directory), not by its name.
 *
 *   caterva_import(src, dst [, variable [, options]])
 *
 * dst is a local path, or an s3://bucket/prefix/ (fn_io_s3.c: imported locally, uploaded).
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
  CvImporter xImport = 0;
  int bSeveral = 0;
  char *zErr;
  if (zSrc == 0 || zSrc[0] == 0 || zDst == 0 || zDst[0] == 0) {
    sqlite3_result_error(pCtx, "caterva_import(src, dst [, variable [, options]]): src and dst "
                         "must be file names", -1);
    return;
  }
  switch (cvSourceKind(zSrc)) {
    case CV_SRC_NPY: xImport = cvImportNpy; break;
    case CV_SRC_NETCDF:
      xImport = cvImportNetcdf;
      bSeveral = zVar && (strcmp(zVar, "*") == 0 || strchr(zVar, ',') != 0);
      break;
    case CV_SRC_BCOLZ:
      xImport = cvImportBcolz;
      bSeveral = cvDirHas(zSrc, "__rootdirs__"); /* a ctable: one array per column */
      break;
    default: break;
  }
  if (xImport && caterva_path_is_remote(zDst)) {
    cvImportToS3(pCtx, pConn, xImport, bSeveral, zSrc, zDst, zVar, zOpt); /* fn_io_s3.c */
    return;
  }
  if (xImport) {
    xImport(pCtx, pConn, zSrc, zDst, zVar, zOpt);
    return;
  }
  zErr = sqlite3_mprintf("caterva_import: \"%s\" is not a .npy file, a NetCDF file or a bcolz "
                         "directory (or cannot be read)", zSrc);
  sqlite3_result_error(pCtx, zErr ? zErr : "caterva_import: unknown source", -1);
  sqlite3_free(zErr);
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
  for (int nArg = 2; nArg <= 3 && rc == SQLITE_OK; nArg++) {
    rc = sqlite3_create_function_v2(db, "caterva_copy", nArg, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                    cvConnRef(pConn), cvCopyFunc, 0, 0, cvConnUnref);
  }
  for (int nArg = 1; nArg <= 4 && rc == SQLITE_OK; nArg++) {
    rc = sqlite3_create_function_v2(db, "caterva_png", nArg, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                    cvConnRef(pConn), cvPngFunc, 0, 0, cvConnUnref);
  }
  return rc;
}

/*
 * fn_io_export.c -- caterva_export(): an array, or a box of it, to a NumPy .npy file.
 *
 *   caterva_export('<table or path>', 'out.npy' [, start, stop])
 *
 * start and stop are JSON arrays of integers, as caterva_slice() takes them (SQL NULL: the
 * whole extent). The file is written in C order (version 1.0 of the format, 2.0 when the
 * header needs it) with the array's dtype; it is read with numpy.load(). An existing file is
 * never replaced; an s3:// destination is refused (caterva_copy() puts an array in S3). The
 * result is the number of items written. The library streams the box
 * in pieces of whole chunks (caterva_npy_export in io/io_npy.c).
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

void cvExportFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  CvConn *pConn = (CvConn *)sqlite3_user_data(pCtx);
  const char *zDst = (const char *)sqlite3_value_text(argv[1]);
  int64_t aStart[CATERVA_MAX_DIM], aStop[CATERVA_MAX_DIM], nItem = 1;
  caterva_array *pArr;
  int r, k;
  if (argc == 3) {
    sqlite3_result_error(pCtx, "caterva_export: give both start and stop, or neither", -1);
    return;
  }
  if (zDst == 0 || zDst[0] == 0) {
    sqlite3_result_error(pCtx, "caterva_export: the second argument must be a file name", -1);
    return;
  }
  if (caterva_path_is_remote(zDst)) {
    sqlite3_result_error(pCtx, "caterva_export: it writes a local .npy file; an array goes to "
                         "S3 with caterva_copy(src, 's3://bucket/prefix/')", -1);
    return;
  }
  pArr = cvOpenArg(pCtx, pConn, argv[0], "caterva_export");
  if (pArr == 0) return;
  if (!cvBoxArgs(pCtx, "caterva_export", pArr, argc == 4 ? argv[2] : 0, argc == 4 ? argv[3] : 0,
                 aStart, aStop))
    goto export_out;
  r = caterva_npy_export(pConn->pCtx, pArr, aStart, aStop, zDst);
  if (r < 0) {
    cvResultLibError(pCtx, pConn, "caterva_export", r);
    goto export_out;
  }
  for (k = 0; k < caterva_array_ndim(pArr); k++) nItem *= aStop[k] - aStart[k];
  sqlite3_result_int64(pCtx, nItem);
export_out:
  cvConnArrayPut(pConn, pArr);
}

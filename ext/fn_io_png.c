/*
 * fn_io_png.c -- caterva_png(): a picture of a 2-D slice as a PNG BLOB (the library draws it:
 * caterva_png_slice in io/io_png.c).
 *
 *   caterva_png('<table or path>' [, start, stop [, 'option=value ...']])
 *
 * start and stop are JSON arrays as caterva_slice() takes them (NULL: the whole extent); the
 * box must have extent 1 along every axis but the two shown. Options, blank-separated:
 *
 *   axes=R,C        the axes shown down (rows) and across (columns), by number or dimension
 *                   name (axes=lat,lon); default: the two axes of the box longer than 1
 *   range=LO,HI     the values at the ends of the colour map; default: the minimum and the
 *                   maximum of the finite values shown
 *   origin=upper    row index 0 at the top (default) | lower: at the bottom (maps whose first
 *                   latitude is the southernmost)
 *   scale=N         pixels per cell, 1 to 16 (default 1)
 *   colorbar=1      a colour bar at the right, labelled with the range
 *   nan=#RRGGBB     colour of NaN cells (default #bebebe)
 *
 * Write the BLOB to a file with the sqlite3 shell's writefile('map.png', caterva_png(...)).
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Axis named z (a number or a dimension name of pArr); -1 if none. */
static int cvPngAxis(CvConn *pConn, caterva_array *pArr, const char *z, int n) {
  int nDim = caterva_array_ndim(pArr), k, iAxis = -1;
  char **azName = 0;
  if (n > 0 && n <= 2 && z[0] >= '0' && z[0] <= '9' && (n == 1 || (z[1] >= '0' && z[1] <= '9'))) {
    k = atoi(z);
    return k < nDim ? k : -1;
  }
  if (caterva_array_get_dim_names(pConn->pCtx, pArr, &azName) != CATERVA_OK) return -1;
  for (k = 0; k < nDim; k++)
    if ((int)strlen(azName[k]) == n && sqlite3_strnicmp(azName[k], z, n) == 0) iAxis = k;
  caterva_array_free_names(azName, nDim);
  return iAxis;
}

/* Two numbers "a,b". */
static int cvPngPair(const char *z, double *pA, double *pB) {
  char *zEnd;
  errno = 0;
  *pA = strtod(z, &zEnd);
  if (zEnd == z || *zEnd != ',') return 0;
  z = zEnd + 1;
  *pB = strtod(z, &zEnd);
  return zEnd != z && *zEnd == 0 && errno == 0 && isfinite(*pA) && isfinite(*pB) && *pA <= *pB;
}

/* "#RRGGBB" or "RRGGBB". */
static int cvPngColor(const char *z, uint8_t *aRgb) {
  char *zEnd;
  unsigned long v;
  if (*z == '#') z++;
  if (strlen(z) != 6) return 0;
  v = strtoul(z, &zEnd, 16);
  if (*zEnd) return 0;
  aRgb[0] = (uint8_t)(v >> 16);
  aRgb[1] = (uint8_t)(v >> 8);
  aRgb[2] = (uint8_t)v;
  return 1;
}

/* One option key=value into *p; returns an sqlite3_mprintf'ed message on error. */
static char *cvPngOption(CvConn *pConn, caterva_array *pArr, const char *zKey, const char *zVal,
                         caterva_png_params *p) {
  if (sqlite3_stricmp(zKey, "axes") == 0) {
    const char *zComma = strchr(zVal, ',');
    if (zComma) {
      p->row_axis = cvPngAxis(pConn, pArr, zVal, (int)(zComma - zVal));
      p->col_axis = cvPngAxis(pConn, pArr, zComma + 1, (int)strlen(zComma + 1));
    }
    if (zComma == 0 || p->row_axis < 0 || p->col_axis < 0 || p->row_axis == p->col_axis)
      return sqlite3_mprintf("axes= must name two distinct axes of the array, by number or "
                             "dimension name, like axes=1,2 or axes=lat,lon; not \"%s\"", zVal);
  } else if (sqlite3_stricmp(zKey, "range") == 0) {
    if (!cvPngPair(zVal, &p->vmin, &p->vmax))
      return sqlite3_mprintf("range= must be two finite numbers LO,HI with LO <= HI, not \"%s\"",
                             zVal);
  } else if (sqlite3_stricmp(zKey, "origin") == 0) {
    if (sqlite3_stricmp(zVal, "upper") == 0) p->origin_lower = 0;
    else if (sqlite3_stricmp(zVal, "lower") == 0) p->origin_lower = 1;
    else return sqlite3_mprintf("origin= must be upper or lower, not \"%s\"", zVal);
  } else if (sqlite3_stricmp(zKey, "scale") == 0) {
    char *zEnd;
    long v = strtol(zVal, &zEnd, 10);
    if (*zVal == 0 || *zEnd || v < 1 || v > 16)
      return sqlite3_mprintf("scale= must be an integer from 1 to 16, not \"%s\"", zVal);
    p->scale = (int)v;
  } else if (sqlite3_stricmp(zKey, "colorbar") == 0 || sqlite3_stricmp(zKey, "colourbar") == 0) {
    if (strcmp(zVal, "0") && strcmp(zVal, "1"))
      return sqlite3_mprintf("colorbar= must be 0 or 1, not \"%s\"", zVal);
    p->colorbar = zVal[0] == '1';
  } else if (sqlite3_stricmp(zKey, "nan") == 0) {
    if (!cvPngColor(zVal, p->nan_rgb))
      return sqlite3_mprintf("nan= must be a colour #RRGGBB, not \"%s\"", zVal);
  } else {
    return sqlite3_mprintf("unknown option \"%s\" (known: axes, range, origin, scale, "
                           "colorbar, nan)", zKey);
  }
  return 0;
}

/* Parse the option string zOpt (may be NULL) into *p; an sqlite3_mprintf'ed message on
** error. */
static char *cvPngOptions(CvConn *pConn, caterva_array *pArr, const char *zOpt,
                          caterva_png_params *p) {
  char *zCopy = sqlite3_mprintf("%s", zOpt ? zOpt : ""), *zTok, *zSave = 0, *zErr = 0;
  if (zCopy == 0) return 0;
  for (zTok = strtok_r(zCopy, " \t\n\r", &zSave); zTok && zErr == 0;
       zTok = strtok_r(0, " \t\n\r", &zSave)) {
    char *zEq = strchr(zTok, '=');
    if (zEq == 0) {
      zErr = sqlite3_mprintf("\"%s\" is not an option=value pair", zTok);
      break;
    }
    *zEq = 0;
    zErr = cvPngOption(pConn, pArr, zTok, zEq + 1, p);
  }
  sqlite3_free(zCopy);
  return zErr;
}

void cvPngFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  CvConn *pConn = (CvConn *)sqlite3_user_data(pCtx);
  int64_t aStart[CATERVA_MAX_DIM], aStop[CATERVA_MAX_DIM];
  caterva_png_params par;
  caterva_array *pArr;
  uint8_t *aPng = 0;
  size_t nPng = 0;
  char *zErr;
  int r;
  if (argc == 2) {
    sqlite3_result_error(pCtx, "caterva_png: give both start and stop, or neither", -1);
    return;
  }
  pArr = cvOpenArg(pCtx, pConn, argv[0], "caterva_png");
  if (pArr == 0) return;
  if (!cvBoxArgs(pCtx, "caterva_png", pArr, argc >= 3 ? argv[1] : 0, argc >= 3 ? argv[2] : 0,
                 aStart, aStop))
    goto png_out;
  caterva_png_params_init(&par);
  zErr = cvPngOptions(pConn, pArr, argc == 4 ? (const char *)sqlite3_value_text(argv[3]) : 0,
                      &par);
  if (zErr) {
    char *zMsg = sqlite3_mprintf("caterva_png: %s", zErr);
    sqlite3_result_error(pCtx, zMsg ? zMsg : zErr, -1);
    sqlite3_free(zMsg);
    sqlite3_free(zErr);
    goto png_out;
  }
  r = caterva_png_slice(pConn->pCtx, pArr, aStart, aStop, &par, &aPng, &nPng);
  if (r < 0) {
    cvResultLibError(pCtx, pConn, "caterva_png", r);
    goto png_out;
  }
  sqlite3_result_blob64(pCtx, aPng, (sqlite3_uint64)nPng, free);
png_out:
  cvConnArrayPut(pConn, pArr);
}

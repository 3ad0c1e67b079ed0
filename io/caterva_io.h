/*
 * caterva_io.h -- the public interface of libcaterva-io: arrays from and to other formats,
 * built on libcaterva's public interface (caterva.h).
 *
 *   NumPy .npy files      caterva_npy_*        (caterva_npy.h) import and export, streamed
 *   NetCDF files          caterva_netcdf_*     (caterva_netcdf.h) import of a variable, with
 *                                              its attributes and coordinates (libnetcdf)
 *   PNG pictures          caterva_png_*        (caterva_png.h) a 2-D slice drawn (libpng)
 *   bcolz directories     caterva_bcolz_*      (caterva_bcolz.h) reading and converting them
 *
 * The conventions of caterva.h hold for every function here. NetCDF and PNG are optional at
 * build time (configure --without-netcdf, --without-libpng): the functions are still there
 * and fail with CATERVA_E_UNSUPPORTED, saying so.
 *
 * Link with -lcaterva-io -lcaterva (pkg-config caterva-io).
 */
#ifndef CATERVA_IO_H
#define CATERVA_IO_H

#include "caterva.h"

#ifdef __cplusplus
extern "C" {
#endif

#include "caterva_npy.h"
#include "caterva_png.h"
#include "caterva_bcolz.h"
#include "caterva_netcdf.h"

#ifdef __cplusplus
}
#endif

#endif /* CATERVA_IO_H */

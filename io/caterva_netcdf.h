/*
 * caterva_netcdf.h -- import of one variable of a NetCDF file (NetCDF-3 classic, 64-bit
 * offset, CDF-5, or NetCDF-4/HDF5) into a new array, through libnetcdf
 * (part of the public interface of libcaterva-io; include caterva_io.h, which includes this
 * file).
 *
 * NetCDF support is optional at build time: configure enables it when it finds libnetcdf
 * (Debian: libnetcdf-dev) and says so. Without it the functions below exist and
 * caterva_netcdf_import fails with CATERVA_E_UNSUPPORTED ("built without libnetcdf").
 *
 * What the new array holds (the CF conventions, https://cfconventions.org, section 8.1 and
 * 2.5.1, as xarray and netCDF4-python read them):
 *  - dtype: the variable's type (byte |i1, ubyte |u1, short <i2, ushort <u2, int <i4,
 *    uint <u4, int64 <i8, uint64 <u8, float <f4, double <f8; host byte order). char and
 *    string variables, and user-defined types, are refused (CATERVA_E_UNSUPPORTED).
 *  - packing: a variable with scale_factor and/or add_offset is unpacked by default to
 *    value = packed * scale_factor + add_offset, computed in double, stored as float64 when
 *    either attribute is a double (or not a float) and float32 when they are floats; with
 *    keep_packed the packed integers are stored as they are, and the attributes with them.
 *  - _Unsigned = "true" (the NetCDF-3 convention for unsigned data): a byte, short, int or
 *    int64 variable is stored as |u1, <u2, <u4 or <u8, the bits unchanged; its _FillValue,
 *    missing_value and valid range attributes are read as unsigned values of the same bits.
 *  - missing values: in float results (float variables and unpacked ones), items equal to
 *    _FillValue or to one of the missing_value values, and items outside the valid range
 *    (valid_range, else valid_min and/or valid_max; compared before unpacking, in the type
 *    the data are stored as, as CF 2.5.1 says), become NaN, unless keep_fill. Without a
 *    _FillValue attribute, NetCDF's default fill value of the type counts (what the library
 *    writes into cells never written), except for byte and ubyte variables and variables
 *    declared without fill. The array's fill (caterva_array_set_fill, attribute _FillValue)
 *    is then NaN; otherwise it is the variable's _FillValue, when it has one.
 *  - dimension names: caterva_array_set_dim_names (the _ARRAY_DIMENSIONS attribute).
 *  - coordinates: a dimension with a coordinate variable (CF section 5: a 1-D numeric
 *    variable named like the dimension, along it) gets its values, unpacked, as the
 *    dimension's coordinate (caterva_array_set_coord): regular when exactly evenly spaced,
 *    else explicit, with the variable's units and calendar attributes verbatim (so "days
 *    since ..." times keep their calendar). One the library refuses is left out and counted
 *    (caterva_netcdf_stats.coords_skipped).
 *  - the variable's other attributes (units, long_name, standard_name, ...) as user
 *    attributes of the same name, msgpack-encoded: text as a string, one number as a number
 *    (int, uint, float32 or float64 as the attribute's type), several as an array, string
 *    attributes as a string or an array of strings. Not copied: _FillValue (the fill, above),
 *    attributes that unpacking or masking has applied (scale_factor, add_offset,
 *    missing_value, valid_range, valid_min, valid_max, _Unsigned), and names longer than CATERVA_METALAYER_NAME_MAX bytes (counted in
 *    caterva_netcdf_stats.attrs_skipped).
 *
 * The data are read hyperslab by hyperslab: each read covers whole chunks of the new array
 * (one chunk, widened to the whole extent of the trailing dimensions while it fits in
 * read_bytes, 32 MiB by default), so memory stays bounded whatever the size of the variable.
 */
#ifndef CATERVA_NETCDF_H
#define CATERVA_NETCDF_H

#ifndef CATERVA_IO_H
#error "include caterva_io.h instead"
#endif

/** @defgroup netcdf NetCDF import
 * @{ */

/** What to import and how. Initialise with caterva_netcdf_params_init. */
typedef struct caterva_netcdf_params {
  const char *variable;          /**< name of the variable to import (NULL fails with
                                      CATERVA_E_INVALID, the message listing the file's
                                      variables) */
  int keep_packed;               /**< 1: store packed integers as they are (default 0: unpack) */
  int keep_fill;                 /**< 1: keep fill/missing values as numbers (default 0: NaN) */
  caterva_array_params array;    /**< partitioning, compression, store and path of the new
                                      array; shape, itemsize and dtype are ignored (they come
                                      from the variable); ndim is 0 or the number of extents
                                      given in chunkshape and blockshape, which must then be
                                      the variable's. Zero chunk and block shapes:
                                      chosen automatically -- for a chunked NetCDF-4 variable,
                                      a multiple of its chunks of about 1 to 8 MiB; otherwise
                                      the library's default */
  const char *const *dim_names;  /**< NULL: the variable's dimension names; else n_dim_names
                                      names to store instead (as many as the variable has
                                      dimensions, else CATERVA_E_INVALID) */
  int n_dim_names;
  int64_t read_bytes;            /**< memory for one hyperslab (as read plus as stored);
                                      0: 32 MiB. A hyperslab holds at least one chunk */
  caterva_progress_fn progress;  /**< may be NULL */
  void *progress_arg;            /**< passed to progress */
} caterva_netcdf_params;

/** Defaults: no variable, unpack, mask, caterva_array_params_init's array parameters. */
void caterva_netcdf_params_init(caterva_netcdf_params *p);

/** What an import did. */
typedef struct caterva_netcdf_stats {
  int unpacked;             /**< scale_factor/add_offset were applied */
  int64_t masked;           /**< items that became NaN (fill or missing values) */
  int attrs_copied;         /**< attributes stored as user attributes */
  int attrs_skipped;        /**< attributes not stored (names too long) */
  int nc_chunked;           /**< the variable is stored in chunks in the NetCDF file */
  int coords;               /**< dimensions given a coordinate */
  int coords_skipped;       /**< coordinate variables the library refused (not strictly
                                 monotonic or not finite labels, unknown units or calendar) */
} caterva_netcdf_stats;

/** 1 when the library was built with libnetcdf, else 0. */
int caterva_netcdf_available(void);

/** Import variable p->variable of the NetCDF file src into a new array.
 * For file stores the array is written under a temporary name beside p->array.path and
 * renamed to it once complete, never replacing anything (CATERVA_E_EXISTS when the path
 * exists, checked at the end too); on failure nothing is left behind.
 * @param[in]  ctx    context (threads compress the chunks; the error message)
 * @param[in]  src    path of the NetCDF file (untrusted; libnetcdf parses it)
 * @param[in]  p      what to import and how (borrowed for the call)
 * @param[out] stats  filled on success; may be NULL
 * @param[out] out    the new array, open for writing, owned by the caller
 *                    (caterva_array_free); NULL on failure
 * @return CATERVA_OK; CATERVA_E_NOTFOUND (no such file or variable), CATERVA_E_CORRUPT (not a
 *         NetCDF file, or a truncated or damaged one), CATERVA_E_UNSUPPORTED (char, string or
 *         user-defined variable, more than CATERVA_MAX_DIM dimensions, built without
 *         libnetcdf), CATERVA_E_EXISTS, CATERVA_E_IO, CATERVA_E_NOMEM, or what the progress
 *         callback returned. */
int caterva_netcdf_import(caterva_ctx *ctx, const char *src, const caterva_netcdf_params *p,
                          caterva_netcdf_stats *stats, caterva_array **out);

/*
 * Several variables on one grid, into a directory of arrays: one file <name>.b2nd per
 * variable, each imported as caterva_netcdf_import imports one (the same parameters for all),
 * with the attribute "name" set to the variable's name unless the variable has a "name"
 * attribute of its own. The files open together as one table of several variables
 * (CREATE VIRTUAL TABLE w USING caterva('dir/a.b2nd', 'dir/b.b2nd', ...)), whose value
 * columns take those names.
 *
 * Which variables (p->variable):
 *  - "*": every numeric variable that is not a coordinate variable (CF 5: 1-D, named like
 *    its dimension) and has the dimensions of the grid, the grid being the dimensions of the
 *    variables with the most dimensions (when several such sets, the one the most variables
 *    share, then the first in the file). Every other variable is left out and listed with
 *    the reason (another grid, a coordinate variable, not numeric, a name that cannot be a
 *    file name). No variable on the grid: CATERVA_E_NOTFOUND.
 *  - "a,b,c": those variables (blanks around names ignored), which must exist, be numeric
 *    and have the same dimensions, else CATERVA_E_NOTFOUND / CATERVA_E_UNSUPPORTED /
 *    CATERVA_E_INVALID naming the variable.
 * The directory is written under a temporary name beside dir and renamed to dir once every
 * variable is complete (never replacing anything: CATERVA_E_EXISTS); on failure nothing is
 * left behind. p->progress sees the items of all the variables (done and total summed).
 */

/** One variable of a grid import. */
typedef struct caterva_netcdf_item {
  char *name;                  /**< the variable's name */
  char *skipped;               /**< NULL: imported as <dir>/<name>.b2nd; else why it was
                                    left out */
  caterva_netcdf_stats stats;  /**< what its import did (imported variables) */
} caterva_netcdf_item;

/** What a grid import did: the file's variables, imported or left out, in file order. */
typedef struct caterva_netcdf_grid {
  int nitems;
  caterva_netcdf_item *items;
  int nimported;               /**< items with skipped == NULL */
} caterva_netcdf_grid;

/** Import the variables p->variable names ("*" or a comma-separated list) of the NetCDF file
 * src into a new directory dir. p->array.path is ignored; p->array.store must be
 * CATERVA_STORE_CONTIGUOUS or CATERVA_STORE_SPARSE (the kind of each file).
 * @param[in]  ctx  context
 * @param[in]  src  path of the NetCDF file (untrusted)
 * @param[in]  dir  path of the directory to create
 * @param[in]  p    what to import and how (borrowed for the call)
 * @param[out] out  what was done, owned by the caller (caterva_netcdf_grid_free); NULL on
 *                  failure
 * @return CATERVA_OK or an error as caterva_netcdf_import's. */
int caterva_netcdf_import_grid(caterva_ctx *ctx, const char *src, const char *dir,
                               const caterva_netcdf_params *p, caterva_netcdf_grid **out);

/** Free a grid import's result (NULL is accepted). */
void caterva_netcdf_grid_free(caterva_netcdf_grid *g);
/** @} */

#endif /* CATERVA_NETCDF_H */

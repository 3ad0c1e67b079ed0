/*
 * io_netcdf.c -- caterva_netcdf_import: one variable of a NetCDF file into a new array
 * (caterva_netcdf.h says what the array holds). Built on libnetcdf when configure found it;
 * otherwise only the stubs at the end are compiled.
 *
 * The steps, each a function below:
 *   open_var        open the file, find the variable, its type, dimensions and chunking
 *   read_packing    scale_factor/add_offset and the type values unpack to
 *   read_missing    _FillValue, missing_value (or the default fill) in the variable's type
 *   read_range      valid_range, valid_min, valid_max (items outside are missing)
 *   choose_chunks   default partitioning: whole NetCDF-4 chunks, about 1 to 8 MiB
 *   copy_data       hyperslabs covering whole chunks: nc_get_vara, convert, set_slice
 *   copy_attrs      dimension names, the fill, the variable's attributes as msgpack
 *   copy_coords     coordinate variables as the array's coordinates (caterva_array_set_coord)
 * A file store is written inside one transaction under a temporary name and renamed at the
 * end, so a failure (or a crash) never leaves a half-imported array at the destination.
 */
#include "io_internal.h"

#include <stdio.h>
#include <stdlib.h>

void caterva_netcdf_params_init(caterva_netcdf_params *p) {
  memset(p, 0, sizeof *p);
  caterva_array_params_init(&p->array);
}

#ifdef HAVE_NETCDF

#include <errno.h>
#include <float.h>
#include <ftw.h>
#include <sys/stat.h>
#include <math.h>
#include <msgpack.h>
#include <strings.h>
#include <netcdf.h>
#include <unistd.h>

int caterva_netcdf_available(void) { return 1; }

#define NC_MAX_MISSING 16                 /* fill and missing values compared per item */
#define SLAB_BYTES (32 * 1024 * 1024)     /* default memory for one hyperslab read */
#define CHUNK_MIN_BYTES (1024 * 1024)     /* default chunks from NetCDF-4 chunks: at least */
#define CHUNK_MAX_BYTES (8 * 1024 * 1024) /* ... and at most */
#define NC_CACHE_MAX (256 * 1024 * 1024)  /* HDF5 chunk cache for the variable */

/* A fill or missing value, exact in the variable's type (the field of its class is used). */
typedef union nc_val {
  int64_t i;   /* byte, short, int, int64 */
  uint64_t u;  /* ubyte, ushort, uint, uint64 */
  double d;    /* float (rounded to float), double */
} nc_val;

/* The variable being imported. */
typedef struct nc_var {
  int ncid, varid;
  const char *path;
  const char *name;
  nc_type type;                     /* its external type */
  int ndim;
  int64_t shape[CATERVA_MAX_DIM];
  int dimids[CATERVA_MAX_DIM];
  int chunked;                      /* NetCDF-4 chunked storage */
  size_t ncchunk[CATERVA_MAX_DIM];  /* its chunk shape */
  int isize;                        /* bytes per item as read */
  int osize;                        /* bytes per item stored */
  char dtype[8];                    /* stored dtype */
  int unpack;                       /* apply scale and offset */
  double scale, offset;
  int out_double;                   /* unpacked to float64 (else float32) */
  int mask;                         /* fill and missing values become NaN */
  int nmiss;
  nc_val miss[NC_MAX_MISSING];      /* values that are missing */
  int has_fill;                     /* a _FillValue attribute */
  nc_val fill;                      /* its value, in the variable's type */
  int is_unsigned;                  /* _Unsigned = "true" made a signed type unsigned */
  int has_vmin, has_vmax;           /* a valid range applied (float results only) */
  long double vmin, vmax;           /* its bounds, in the (packed) type's values */
} nc_var;

/* ---- errors ------------------------------------------------------------------------- */

/* What a NetCDF status means in our codes. */
static int nc_code(int status) {
  if (status == ENOENT || status == ENOTDIR) return CATERVA_E_NOTFOUND;
  if (status == ENOMEM || status == NC_ENOMEM) return CATERVA_E_NOMEM;
  if (status == EINVAL) return CATERVA_E_CORRUPT; /* what nc_open says of some bad headers */
  if (status > 0) return CATERVA_E_IO;
  switch (status) {
  case NC_ENOTVAR: return CATERVA_E_NOTFOUND;
  case NC_ENOTBUILT: case NC_EFILTER: case NC_ENOFILTER: return CATERVA_E_UNSUPPORTED;
  default: return CATERVA_E_CORRUPT;
  }
}

/* Record "<path>: <what>: <libnetcdf's text>" and return our code. */
static int nc_fail(caterva_ctx *ctx, const nc_var *v, int status, const char *what) {
  return cat_error(ctx, nc_code(status), "NetCDF file %s: %s: %s", v->path, what,
                   nc_strerror(status));
}

/* ---- the variable ------------------------------------------------------------------- */

/* dtype text and item size of a numeric type; 0 when the type is not numeric. */
static int type_dtype(nc_type t, char *dtype) {
  static const struct { nc_type t; char kind; int size; } map[] = {
      {NC_BYTE, 'i', 1}, {NC_UBYTE, 'u', 1}, {NC_SHORT, 'i', 2}, {NC_USHORT, 'u', 2},
      {NC_INT, 'i', 4},  {NC_UINT, 'u', 4},  {NC_INT64, 'i', 8}, {NC_UINT64, 'u', 8},
      {NC_FLOAT, 'f', 4}, {NC_DOUBLE, 'f', 8}};
  const uint16_t one = 1;
  for (size_t k = 0; k < sizeof map / sizeof map[0]; k++) {
    if (map[k].t != t) continue;
    snprintf(dtype, 8, "%c%c%d", map[k].size == 1 ? '|' : *(const uint8_t *)&one ? '<' : '>',
             map[k].kind, map[k].size);
    return map[k].size;
  }
  return 0;
}

static const char *type_name(nc_type t) {
  switch (t) {
  case NC_CHAR: return "char";
  case NC_STRING: return "string";
  default: return "a user-defined type";
  }
}

/* The names of the variables of file ncid, comma-separated (cut short to fit in cap). */
static void var_list(int ncid, char *list, size_t cap) {
  int nvars = 0;
  size_t used = 0;
  list[0] = 0;
  if (nc_inq_nvars(ncid, &nvars) != NC_NOERR) return;
  for (int k = 0; k < nvars && used + 8 < cap; k++) {
    char name[NC_MAX_NAME + 1];
    if (nc_inq_varname(ncid, k, name) != NC_NOERR) continue;
    used += (size_t)snprintf(list + used, cap - used, "%s%s", k ? ", " : "", name);
  }
  if (used >= cap) strcpy(list + cap - 5, "...");
  if (nvars == 0) snprintf(list, cap, "no variables");
}

/* Is text attribute name of the variable equal to want, ignoring case? */
static int att_text_is(const nc_var *v, const char *name, const char *want) {
  nc_type t;
  size_t len;
  char buf[16];
  if (nc_inq_att(v->ncid, v->varid, name, &t, &len) != NC_NOERR || t != NC_CHAR ||
      len >= sizeof buf || nc_get_att_text(v->ncid, v->varid, name, buf) != NC_NOERR)
    return 0;
  while (len > 0 && buf[len - 1] == 0) len--;
  buf[len] = 0;
  return strcasecmp(buf, want) == 0;
}

/* _Unsigned = "true" (the NetCDF-3 convention for unsigned data, which NetCDF-3 has no types
 * for): a signed integer variable is read as the unsigned type of its size, the bits
 * unchanged. */
static void read_unsigned(nc_var *v) {
  static const nc_type to[][2] = {{NC_BYTE, NC_UBYTE}, {NC_SHORT, NC_USHORT},
                                  {NC_INT, NC_UINT}, {NC_INT64, NC_UINT64}};
  if (!att_text_is(v, "_Unsigned", "true")) return;
  for (size_t k = 0; k < sizeof to / sizeof to[0]; k++) {
    if (to[k][0] != v->type) continue;
    v->type = to[k][1];
    v->is_unsigned = 1;
    type_dtype(v->type, v->dtype);
    return;
  }
}

/* Open src and describe variable name (NULL: none was given). */
static int nc3_check_length(caterva_ctx *ctx, const nc_var *v);

static int open_var(caterva_ctx *ctx, const char *src, const char *name, nc_var *v) {
  int rc = CATERVA_OK, st, natts, format = 0;
  v->path = src;
  v->name = name;
  v->ncid = -1;
  st = nc_open(src, NC_NOWRITE, &v->ncid);
  if (st != NC_NOERR) {
    v->ncid = -1;
    CAT_FAIL(leave, nc_code(st), "NetCDF file %s: cannot open: %s", src, nc_strerror(st));
  }
  st = name != NULL ? nc_inq_varid(v->ncid, name, &v->varid) : NC_ENOTVAR;
  if (st != NC_NOERR) {
    char list[512];
    var_list(v->ncid, list, sizeof list);
    if (name == NULL)
      CAT_FAIL(leave, CATERVA_E_INVALID, "NetCDF file %s: which variable? (it has: %s)", src,
               list);
    CAT_FAIL(leave, nc_code(st), "NetCDF file %s has no variable \"%s\" (it has: %s)", src,
             name, list);
  }
  st = nc_inq_varndims(v->ncid, v->varid, &v->ndim);
  if (st != NC_NOERR) CAT_FAIL(leave, nc_code(st), "%s: %s", name, nc_strerror(st));
  CAT_CHECK(leave, v->ndim <= CATERVA_MAX_DIM, CATERVA_E_UNSUPPORTED,
            "variable \"%s\" has %d dimensions; arrays have at most %d", name, v->ndim,
            CATERVA_MAX_DIM);
  st = nc_inq_var(v->ncid, v->varid, NULL, &v->type, NULL, v->dimids, &natts);
  if (st != NC_NOERR) CAT_FAIL(leave, nc_code(st), "%s: %s", name, nc_strerror(st));
  v->isize = type_dtype(v->type, v->dtype);
  CAT_CHECK(leave, v->isize > 0, CATERVA_E_UNSUPPORTED,
            "variable \"%s\" is of type %s: only numeric variables (byte ... double) can be "
            "imported", name, type_name(v->type));
  v->osize = v->isize;
  read_unsigned(v);
  for (int k = 0; k < v->ndim; k++) {
    size_t len;
    st = nc_inq_dimlen(v->ncid, v->dimids[k], &len);
    if (st != NC_NOERR) CAT_FAIL(leave, nc_code(st), "%s: %s", name, nc_strerror(st));
    CAT_CHECK(leave, len <= (size_t)INT64_MAX, CATERVA_E_CORRUPT, "dimension too long");
    v->shape[k] = (int64_t)len;
  }
  if (v->ndim > 0) {
    int storage = NC_CONTIGUOUS;
    st = nc_inq_var_chunking(v->ncid, v->varid, &storage, v->ncchunk);
    v->chunked = st == NC_NOERR && storage == NC_CHUNKED;
  }
  st = nc_inq_format(v->ncid, &format);
  if (st == NC_NOERR && (format == NC_FORMAT_CLASSIC || format == NC_FORMAT_64BIT_OFFSET ||
                         format == NC_FORMAT_CDF5))
    rc = nc3_check_length(ctx, v);
leave:
  return rc;
}

/* ---- NetCDF-3: is the file as long as its header says? -------------------------------- */

/*
 * libnetcdf reads bytes past the end of a classic file as zeros, so a truncated file would
 * import as zeros without an error. A complete file is never shorter than its variables'
 * extents (libnetcdf pads it on close), so the import checks the extent of its variable from
 * the header (the NetCDF classic format specification; big-endian; W is 4 bytes in CDF-1 and
 * CDF-2 and 8 in CDF-5, O is 4 bytes in CDF-1 and 8 in CDF-2 and CDF-5):
 *
 *   header   = 'C' 'D' 'F' version  numrecs:W  dim_list  gatt_list  var_list
 *   *_list   = tag:4 nelems:W [item ...]      (tag 0 and nelems 0 when absent;
 *                                              tags 0x0A dims, 0x0C attrs, 0x0B vars)
 *   name     = nelems:W bytes, padded to 4
 *   dim      = name  length:W                  (length 0: the record dimension)
 *   attr     = name  nc_type:4  nelems:W  values, padded to 4
 *   var      = name  ndims:W  dimid:W ...  vatt_list  nc_type:4  vsize:W  begin:O
 *
 * Data of a fixed-size variable: nelems * size bytes at begin. A record variable has one
 * slice per record; record r of it is at begin + r * recsize, recsize being the sum of the
 * record variables' slices each padded to 4 bytes (unpadded when there is only one).
 */
typedef struct nc3_hdr {
  const uint8_t *p, *end;
  int w;         /* bytes of counts and lengths: 4, or 8 in CDF-5 */
  int o;         /* bytes of offsets */
} nc3_hdr;

static bool nc3_uint(nc3_hdr *h, int n, uint64_t *v) {
  if (h->end - h->p < n) return false;
  *v = n == 8 ? cat_be64(h->p) : cat_be32(h->p);
  h->p += n;
  return true;
}

static bool nc3_skip(nc3_hdr *h, uint64_t n) {
  uint64_t padded = (n + 3) / 4 * 4;
  if (n > (uint64_t)(h->end - h->p) || padded > (uint64_t)(h->end - h->p)) return false;
  h->p += padded;
  return true;
}

static int nc3_type_size(uint64_t t) {
  static const int size[] = {0, 1, 1, 2, 4, 4, 8, 1, 2, 4, 8, 8};
  return t < sizeof size / sizeof size[0] ? size[t] : 0;
}

/* A list's tag and count (the tag must be want, or 0 with a count of 0). */
static bool nc3_list(nc3_hdr *h, uint64_t want, uint64_t *n) {
  uint64_t tag;
  if (!nc3_uint(h, 4, &tag) || !nc3_uint(h, h->w, n)) return false;
  return tag == want || (tag == 0 && *n == 0);
}

static bool nc3_attrs(nc3_hdr *h) {
  uint64_t n, len, t, nel, bytes;
  if (!nc3_list(h, 0x0C, &n)) return false;
  for (uint64_t k = 0; k < n; k++) {
    if (!nc3_uint(h, h->w, &len) || !nc3_skip(h, len) || !nc3_uint(h, 4, &t) ||
        !nc3_uint(h, h->w, &nel) || nc3_type_size(t) == 0 ||
        __builtin_mul_overflow(nel, (uint64_t)nc3_type_size(t), &bytes) || !nc3_skip(h, bytes))
      return false;
  }
  return true;
}

typedef struct nc3_var {
  uint64_t begin, slice;   /* offset; bytes of one record, or of all of it */
  int rec;                 /* a record variable */
} nc3_var;

/* The variables of the header (after the dimensions, whose lengths are dimlen): the extent
 * our variable (number want) needs into *need. 0: the header is longer than the bytes given;
 * -1: malformed; 1: done. */
static int nc3_vars(nc3_hdr *h, uint64_t numrecs, const uint64_t *dimlen, uint64_t ndims,
                    int want, uint64_t *need) {
  uint64_t nvars, recsize = 0, nrec = 0, len, nd, id, t, vsize, off;
  nc3_var mine = {0, 0, 0};
  if (!nc3_attrs(h) || !nc3_list(h, 0x0B, &nvars)) return 0;
  for (uint64_t k = 0; k < nvars; k++) {
    nc3_var v = {0, 1, 0};
    if (!nc3_uint(h, h->w, &len) || !nc3_skip(h, len) || !nc3_uint(h, h->w, &nd)) return 0;
    for (uint64_t j = 0; j < nd; j++) {
      if (!nc3_uint(h, h->w, &id)) return 0;
      if (id >= ndims) return -1;
      if (j == 0 && dimlen[id] == 0) v.rec = 1;
      else if (__builtin_mul_overflow(v.slice, dimlen[id], &v.slice)) return -1;
    }
    if (!nc3_attrs(h) || !nc3_uint(h, 4, &t) || !nc3_uint(h, h->w, &vsize) ||
        !nc3_uint(h, h->o, &v.begin))
      return 0;
    if (nc3_type_size(t) == 0 ||
        __builtin_mul_overflow(v.slice, (uint64_t)nc3_type_size(t), &v.slice))
      return -1;
    if (v.rec) {
      nrec++;
      if (__builtin_add_overflow(recsize, (v.slice + 3) / 4 * 4, &recsize)) return -1;
    }
    if (k == (uint64_t)want) mine = v;
  }
  if (nrec == 1 && mine.rec) recsize = mine.slice;
  if (__builtin_add_overflow(mine.begin, mine.slice, need)) return -1;
  if (!mine.rec) return 1;
  if (numrecs == UINT64_MAX || numrecs == UINT32_MAX || numrecs == 0) {
    *need = 0; /* streaming (records counted from the file's length), or no record */
    return 1;
  }
  if (__builtin_mul_overflow(numrecs - 1, recsize, &off) ||
      __builtin_add_overflow(*need, off, need))
    return -1;
  return 1;
}

/* Parse the header (h past the magic number); 0, -1 or 1 as nc3_vars. */
static int nc3_parse(nc3_hdr *h, int want, uint64_t *need) {
  uint64_t numrecs, ndims, len, *dimlen = NULL;
  int r = 0;
  if (!nc3_uint(h, h->w, &numrecs) || !nc3_list(h, 0x0A, &ndims)) return 0;
  if (ndims > (uint64_t)(h->end - h->p) / 8) return 0; /* each takes 8 bytes at least */
  dimlen = calloc(ndims ? ndims : 1, sizeof *dimlen);
  if (dimlen == NULL) return -1;
  for (uint64_t k = 0; k < ndims; k++)
    if (!nc3_uint(h, h->w, &len) || !nc3_skip(h, len) || !nc3_uint(h, h->w, &dimlen[k]))
      goto leave;
  r = nc3_vars(h, numrecs, dimlen, ndims, want, need);
leave:
  free(dimlen);
  return r;
}

/* CATERVA_E_CORRUPT when the NetCDF-3 file is shorter than variable varid needs. */
static int nc3_check_length(caterva_ctx *ctx, const nc_var *v) {
  int rc = CATERVA_OK, r = 0;
  FILE *f = fopen(v->path, "rb");
  uint8_t *buf = NULL;
  size_t cap = 64 * 1024, n = 0;
  struct stat st;
  uint64_t need = 0;
  CAT_CHECK(leave, f != NULL && fstat(fileno(f), &st) == 0, CATERVA_E_IO, "%s: %s", v->path,
            strerror(errno));
  for (;;) {
    uint8_t *nb = realloc(buf, cap);
    nc3_hdr h;
    CAT_CHECK(leave, nb != NULL, CATERVA_E_NOMEM, "out of memory");
    buf = nb;
    n += fread(buf + n, 1, cap - n, f);
    CAT_CHECK(leave, n >= 4, CATERVA_E_CORRUPT, "NetCDF file %s: no header", v->path);
    h.p = buf + 4;
    h.end = buf + n;
    h.w = buf[3] == 5 ? 8 : 4;
    h.o = buf[3] == 1 ? 4 : 8;
    r = nc3_parse(&h, v->varid, &need);
    if (r != 0 || n < cap || cap >= ((size_t)256 << 20)) break;
    cap *= 2;
  }
  CAT_CHECK(leave, r == 1, CATERVA_E_CORRUPT, "NetCDF file %s: the header is malformed or cut "
            "short", v->path);
  CAT_CHECK(leave, need <= (uint64_t)st.st_size, CATERVA_E_CORRUPT,
            "NetCDF file %s is truncated: variable \"%s\" needs %llu bytes, the file has %lld",
            v->path, v->name, (unsigned long long)need, (long long)st.st_size);
leave:
  if (f != NULL) fclose(f);
  free(buf);
  return rc;
}

/* ---- packing and missing values ----------------------------------------------------- */

/* Type and length of attribute name of the variable; 0 when it has none. */
static int att_info(const nc_var *v, const char *name, nc_type *type, size_t *len) {
  return nc_inq_att(v->ncid, v->varid, name, type, len) == NC_NOERR;
}

/* One number attribute as a double (it must hold exactly one number). */
static int att_number(caterva_ctx *ctx, const nc_var *v, const char *name, nc_type t,
                      size_t len, double *out) {
  int st;
  if (len != 1 || t == NC_CHAR || t == NC_STRING)
    return cat_error(ctx, CATERVA_E_UNSUPPORTED, "variable \"%s\": attribute %s must be one "
                     "number to unpack the data (keep_packed stores them as they are)",
                     v->name, name);
  st = nc_get_att_double(v->ncid, v->varid, name, out);
  if (st != NC_NOERR) return nc_fail(ctx, v, st, name);
  return CATERVA_OK;
}

static int packed_small(nc_type t) {
  return t == NC_BYTE || t == NC_UBYTE || t == NC_SHORT || t == NC_USHORT || t == NC_FLOAT;
}

/* scale_factor and add_offset. The unpacked type is float32 when every packing attribute is
 * a float and the packed type fits in a float exactly (as xarray chooses), else float64. */
static int read_packing(caterva_ctx *ctx, nc_var *v, int keep_packed) {
  int rc = CATERVA_OK, all_float = 1;
  nc_type ts, to;
  size_t ls, lo;
  int has_s = att_info(v, "scale_factor", &ts, &ls);
  int has_o = att_info(v, "add_offset", &to, &lo);
  v->scale = 1.0;
  v->offset = 0.0;
  if (keep_packed || (!has_s && !has_o)) goto leave;
  if (has_s) {
    CAT_TRY(leave, att_number(ctx, v, "scale_factor", ts, ls, &v->scale));
    all_float &= ts == NC_FLOAT;
  }
  if (has_o) {
    CAT_TRY(leave, att_number(ctx, v, "add_offset", to, lo, &v->offset));
    all_float &= to == NC_FLOAT;
  }
  v->unpack = 1;
  v->out_double = !(all_float && packed_small(v->type));
  v->osize = v->out_double ? 8 : 4;
  type_dtype(v->out_double ? NC_DOUBLE : NC_FLOAT, v->dtype);
leave:
  return rc;
}

/* Whether x (exact) is a value of type t; its representation in *out. */
static int fit_type(nc_type t, long double x, nc_val *out) {
  static const struct { nc_type t; long double lo, hi; } range[] = {
      {NC_BYTE, -128.0L, 127.0L},       {NC_SHORT, -32768.0L, 32767.0L},
      {NC_INT, -2147483648.0L, 2147483647.0L},
      {NC_INT64, -9223372036854775808.0L, 9223372036854775807.0L},
      {NC_UBYTE, 0.0L, 255.0L},         {NC_USHORT, 0.0L, 65535.0L},
      {NC_UINT, 0.0L, 4294967295.0L},   {NC_UINT64, 0.0L, 18446744073709551615.0L}};
  if (isnan(x)) return 0; /* NaN never equals an item; NaN items stay NaN anyway */
  if (t == NC_FLOAT || t == NC_DOUBLE) {
    if (t == NC_FLOAT && isfinite(x) && fabsl(x) > FLT_MAX) return 0;
    out->d = t == NC_FLOAT ? (double)(float)x : (double)x;
    return 1;
  }
  for (size_t k = 0; k < sizeof range / sizeof range[0]; k++) {
    if (range[k].t != t) continue;
    if (!(x >= range[k].lo && x <= range[k].hi) || x != truncl(x)) return 0;
    if (range[k].lo < 0) out->i = (int64_t)x;
    else out->u = (uint64_t)x;
    return 1;
  }
  return 0;
}

/* Item i of a buffer of type t, exactly. */
static long double item_ld(nc_type t, const void *p, size_t i) {
  switch (t) {
  case NC_BYTE: return ((const signed char *)p)[i];
  case NC_UBYTE: return ((const unsigned char *)p)[i];
  case NC_SHORT: return ((const short *)p)[i];
  case NC_USHORT: return ((const unsigned short *)p)[i];
  case NC_INT: return ((const int *)p)[i];
  case NC_UINT: return ((const unsigned int *)p)[i];
  case NC_INT64: return ((const long long *)p)[i];
  case NC_UINT64: return ((const unsigned long long *)p)[i];
  case NC_FLOAT: return ((const float *)p)[i];
  default: return ((const double *)p)[i];
  }
}

/* Value k of an attribute of type t as a value of the variable's type: with _Unsigned, a
 * negative value of the signed type of the variable's size is the unsigned one of the same
 * bits (CF: the attribute has the type the variable is stored as). */
static long double att_item(const nc_var *v, nc_type t, const void *buf, size_t k) {
  long double x = item_ld(t, buf, k);
  char dt[8];
  int signed_type = t == NC_BYTE || t == NC_SHORT || t == NC_INT || t == NC_INT64;
  if (v->is_unsigned && signed_type && x < 0 && type_dtype(t, dt) == v->isize)
    x += ldexpl(1.0L, 8 * v->isize);
  return x;
}

/* Add the values of a numeric attribute that are values of the variable's type to the
 * missing values (others can never match an item). */
static int add_missing(caterva_ctx *ctx, nc_var *v, const char *name, int is_fill) {
  int rc = CATERVA_OK, st;
  nc_type t;
  size_t len;
  char dt[8];
  uint8_t buf[NC_MAX_MISSING * 8];
  if (!att_info(v, name, &t, &len) || len == 0 || type_dtype(t, dt) == 0) goto leave;
  CAT_CHECK(leave, len <= NC_MAX_MISSING, CATERVA_E_UNSUPPORTED,
            "variable \"%s\": attribute %s has %zu values (at most %d are supported)", v->name,
            name, len, NC_MAX_MISSING);
  st = nc_get_att(v->ncid, v->varid, name, buf);
  if (st != NC_NOERR) CAT_FAIL(leave, nc_code(st), "%s: %s", name, nc_strerror(st));
  for (size_t k = 0; k < len; k++) {
    nc_val x;
    if (!fit_type(v->type, att_item(v, t, buf, k), &x)) continue;
    if (is_fill && k == 0) {
      v->has_fill = 1;
      v->fill = x;
    }
    if (v->nmiss < NC_MAX_MISSING) v->miss[v->nmiss++] = x;
  }
leave:
  return rc;
}

/* Bound k of numeric attribute name into *out (0 when absent, not numeric, too short or NaN). */
static int att_bound(const nc_var *v, const char *name, size_t want, size_t k, long double *out) {
  nc_type t;
  size_t len;
  char dt[8];
  uint8_t buf[2 * 8];
  if (!att_info(v, name, &t, &len) || len != want || type_dtype(t, dt) == 0 ||
      nc_get_att(v->ncid, v->varid, name, buf) != NC_NOERR)
    return 0;
  *out = att_item(v, t, buf, k);
  return !isnan(*out);
}

/* valid_range (two values), else valid_min and valid_max (CF 2.5.1): items outside are
 * missing. They are in the type the data are stored as, so items are compared before
 * unpacking. An attribute that is not numeric, or of the wrong length, is not applied. */
static void read_range(nc_var *v) {
  if (att_info(v, "valid_range", &(nc_type){0}, &(size_t){0})) {
    v->has_vmin = att_bound(v, "valid_range", 2, 0, &v->vmin);
    v->has_vmax = att_bound(v, "valid_range", 2, 1, &v->vmax);
    return;
  }
  v->has_vmin = att_bound(v, "valid_min", 1, 0, &v->vmin);
  v->has_vmax = att_bound(v, "valid_max", 1, 0, &v->vmax);
}

/* The values that are missing: _FillValue (else the type's default fill, which NetCDF writes
 * into cells never written -- not for bytes, whose every value may be data, nor when the
 * variable was declared without fill) and missing_value. */
static int read_missing(caterva_ctx *ctx, nc_var *v, int keep_fill) {
  int rc = CATERVA_OK, no_fill = 1, st;
  nc_type t;
  size_t len;
  uint8_t deflt[8];
  CAT_TRY(leave, add_missing(ctx, v, "_FillValue", 1));
  if (!att_info(v, "_FillValue", &t, &len) && v->type != NC_BYTE && v->type != NC_UBYTE) {
    st = nc_inq_var_fill(v->ncid, v->varid, &no_fill, deflt);
    if (st == NC_NOERR && !no_fill && fit_type(v->type, item_ld(v->type, deflt, 0),
                                               &v->miss[v->nmiss]))
      v->nmiss++;
  }
  CAT_TRY(leave, add_missing(ctx, v, "missing_value", 0));
  v->mask = !keep_fill && (v->unpack || v->type == NC_FLOAT || v->type == NC_DOUBLE);
  if (v->mask) read_range(v);
leave:
  return rc;
}

/* ---- conversion --------------------------------------------------------------------- */

/* Mask (float items) in place; returns the number of items masked. */
#define MASK_LOOP(T)                                                                     \
  do {                                                                                   \
    T *q = buf;                                                                          \
    for (size_t i = 0; i < n; i++) {                                                     \
      int m = ranged && out_of_range(v, q[i]);                                           \
      for (int k = 0; k < v->nmiss && !m; k++) m = q[i] == (T)v->miss[k].d;              \
      if (m) {                                                                           \
        q[i] = (T)NAN;                                                                   \
        masked++;                                                                        \
      }                                                                                  \
    }                                                                                    \
  } while (0)

/* Outside the valid range (x exact in long double)? */
static inline int out_of_range(const nc_var *v, long double x) {
  return (v->has_vmin && x < v->vmin) || (v->has_vmax && x > v->vmax);
}

static int64_t mask_floats(const nc_var *v, void *buf, size_t n) {
  int64_t masked = 0;
  int ranged = v->has_vmin || v->has_vmax;
  if (v->type == NC_FLOAT) MASK_LOOP(float);
  else MASK_LOOP(double);
  return masked;
}

/* Unpack n items of type T (missing values compared through field F of nc_val) into out. */
#define UNPACK_LOOP(T, F)                                                                \
  do {                                                                                   \
    const T *s = raw;                                                                    \
    for (size_t i = 0; i < n; i++) {                                                     \
      int m = ranged && out_of_range(v, s[i]);                                           \
      double d;                                                                          \
      for (int k = 0; k < nm; k++) m |= s[i] == (T)v->miss[k].F;                         \
      d = m ? NAN : (double)s[i] * v->scale + v->offset;                                 \
      masked += m;                                                                       \
      if (v->out_double) ((double *)out)[i] = d;                                         \
      else ((float *)out)[i] = (float)d;                                                 \
    }                                                                                    \
  } while (0)

static int64_t unpack(const nc_var *v, const void *raw, void *out, size_t n) {
  int64_t masked = 0;
  int nm = v->mask ? v->nmiss : 0, ranged = v->mask && (v->has_vmin || v->has_vmax);
  switch (v->type) {
  case NC_BYTE: UNPACK_LOOP(signed char, i); break;
  case NC_UBYTE: UNPACK_LOOP(unsigned char, u); break;
  case NC_SHORT: UNPACK_LOOP(short, i); break;
  case NC_USHORT: UNPACK_LOOP(unsigned short, u); break;
  case NC_INT: UNPACK_LOOP(int, i); break;
  case NC_UINT: UNPACK_LOOP(unsigned int, u); break;
  case NC_INT64: UNPACK_LOOP(long long, i); break;
  case NC_UINT64: UNPACK_LOOP(unsigned long long, u); break;
  case NC_FLOAT: UNPACK_LOOP(float, d); break;
  default: UNPACK_LOOP(double, d); break;
  }
  return masked;
}

/* ---- partitioning ------------------------------------------------------------------- */

/* Default chunks for a chunked variable: its NetCDF-4 chunks (so that every hyperslab read
 * decompresses each of them once), doubled along the axis with the most of them left until
 * about CHUNK_MIN_BYTES; left to the library when a NetCDF chunk is above CHUNK_MAX_BYTES. */
static void choose_chunks(const nc_var *v, caterva_array_params *par) {
  int32_t c[CATERVA_MAX_DIM];
  int64_t bytes = v->osize;
  for (int k = 0; k < v->ndim; k++)
    if (par->chunkshape[k] != 0 || par->blockshape[k] != 0) return; /* the caller's */
  if (!v->chunked || v->ndim == 0) return;
  for (int k = 0; k < v->ndim; k++) {
    int64_t e = (int64_t)v->ncchunk[k] < v->shape[k] ? (int64_t)v->ncchunk[k] : v->shape[k];
    c[k] = (int32_t)(e < 1 ? 1 : e > INT32_MAX / 2 ? INT32_MAX / 2 : e);
    bytes *= c[k];
    if (bytes > CHUNK_MAX_BYTES) return;
  }
  while (bytes < CHUNK_MIN_BYTES) {
    int best = -1;
    int64_t most = 1;
    for (int k = 0; k < v->ndim; k++) {
      int64_t left = cat_ceil_div64(v->shape[k], c[k]);
      if (left > most) most = left, best = k;
    }
    if (best < 0) break;
    bytes = bytes / c[best] * (2 * (int64_t)c[best] < v->shape[best] ? 2 * c[best]
                                                                       : v->shape[best]);
    c[best] = 2 * (int64_t)c[best] < v->shape[best] ? 2 * c[best] : (int32_t)v->shape[best];
  }
  memcpy(par->chunkshape, c, (size_t)v->ndim * sizeof c[0]);
}

/* The hyperslab shape: one chunk, widened to the whole extent of trailing axes while it
 * stays within budget bytes, so that a read covers a row of chunks. */
static int64_t slab_shape(const nc_var *v, const int32_t *chunk, int64_t budget, int64_t *slab) {
  int64_t items = 1, full;
  for (int k = 0; k < v->ndim; k++) {
    slab[k] = chunk[k] < v->shape[k] ? chunk[k] : v->shape[k];
    items *= slab[k] > 0 ? slab[k] : 1;
  }
  for (int k = v->ndim - 1; k >= 1; k--) {
    if (slab[k] == 0 || !cat_mul64(items / slab[k], v->shape[k], &full) ||
        full * (v->isize + v->osize) > budget)
      break;
    items = full;
    slab[k] = v->shape[k];
  }
  return items;
}

/* ---- data --------------------------------------------------------------------------- */

typedef struct copy_state {
  int64_t slab[CATERVA_MAX_DIM];
  int64_t start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM];
  size_t ncstart[CATERVA_MAX_DIM], nccount[CATERVA_MAX_DIM];
  uint8_t *raw, *out;
} copy_state;

/* Read one hyperslab, convert it and write it into the array; returns items or an error. */
static int64_t copy_slab(caterva_ctx *ctx, const nc_var *v, copy_state *s, caterva_array *a,
                         int64_t *masked) {
  int rc = CATERVA_OK, st;
  int64_t n = 1;
  for (int k = 0; k < v->ndim; k++) {
    s->stop[k] = s->start[k] + s->slab[k] < v->shape[k] ? s->start[k] + s->slab[k]
                                                         : v->shape[k];
    s->ncstart[k] = (size_t)s->start[k];
    s->nccount[k] = (size_t)(s->stop[k] - s->start[k]);
    n *= s->stop[k] - s->start[k];
  }
  st = nc_get_vara(v->ncid, v->varid, s->ncstart, s->nccount, s->raw);
  if (st != NC_NOERR) CAT_FAIL(leave, nc_code(st), "NetCDF file %s: reading variable \"%s\": %s",
                               v->path, v->name, nc_strerror(st));
  if (v->unpack) *masked += unpack(v, s->raw, s->out, (size_t)n);
  else if (v->mask) *masked += mask_floats(v, s->raw, (size_t)n);
  CAT_TRY(leave, caterva_array_set_slice(ctx, a, s->start, s->stop, s->out, n * v->osize));
  rc = CATERVA_OK;
leave:
  return rc < 0 ? rc : n;
}

/* Next hyperslab origin in C order over the slab grid; 0 at the end. */
static int next_slab(const nc_var *v, copy_state *s) {
  for (int k = v->ndim - 1; k >= 0; k--) {
    s->start[k] += s->slab[k];
    if (s->start[k] < v->shape[k]) return 1;
    s->start[k] = 0;
  }
  return 0;
}

static int copy_data(caterva_ctx *ctx, const nc_var *v, const caterva_netcdf_params *p,
                     caterva_array *a, int64_t *masked) {
  int rc = CATERVA_OK;
  copy_state s;
  int64_t total = caterva_array_nitems(a), done = 0, items, got;
  memset(&s, 0, sizeof s);
  if (total == 0) goto leave;
  items = slab_shape(v, caterva_array_chunkshape(a), p->read_bytes > 0 ? p->read_bytes : SLAB_BYTES,
                     s.slab);
  s.raw = malloc((size_t)(items * v->isize));
  s.out = v->unpack ? malloc((size_t)(items * v->osize)) : s.raw;
  CAT_CHECK(leave, s.raw != NULL && s.out != NULL, CATERVA_E_NOMEM, "out of memory");
  if (v->chunked) {
    int64_t cache = 2 * items * v->isize;
    nc_set_var_chunk_cache(v->ncid, v->varid, (size_t)(cache < NC_CACHE_MAX ? cache : NC_CACHE_MAX),
                           10007, 0.75f);
  }
  do {
    CAT_TRY(leave, got = copy_slab(ctx, v, &s, a, masked));
    done += got;
    if (p->progress != NULL) {
      int r = p->progress(p->progress_arg, done, total);
      if (r != 0)
        CAT_FAIL(leave, r < 0 && r > CATERVA_E_LAST_ ? r : CATERVA_E_INVALID,
                 "import of \"%s\" stopped by the progress callback", v->name);
    }
  } while (next_slab(v, &s));
leave:
  if (s.out != s.raw) free(s.out);
  free(s.raw);
  return rc;
}

/* ---- attributes --------------------------------------------------------------------- */

/* Pack n items of attribute type t at p (one as a scalar, several as an array). */
static int pack_numbers(msgpack_packer *pk, nc_type t, const void *p, size_t n) {
  int r = n == 1 ? 0 : msgpack_pack_array(pk, n);
  for (size_t i = 0; i < n && r == 0; i++) {
    switch (t) {
    case NC_BYTE: r = msgpack_pack_int64(pk, ((const signed char *)p)[i]); break;
    case NC_SHORT: r = msgpack_pack_int64(pk, ((const short *)p)[i]); break;
    case NC_INT: r = msgpack_pack_int64(pk, ((const int *)p)[i]); break;
    case NC_INT64: r = msgpack_pack_int64(pk, ((const long long *)p)[i]); break;
    case NC_UBYTE: r = msgpack_pack_uint64(pk, ((const unsigned char *)p)[i]); break;
    case NC_USHORT: r = msgpack_pack_uint64(pk, ((const unsigned short *)p)[i]); break;
    case NC_UINT: r = msgpack_pack_uint64(pk, ((const unsigned int *)p)[i]); break;
    case NC_UINT64: r = msgpack_pack_uint64(pk, ((const unsigned long long *)p)[i]); break;
    case NC_FLOAT: r = msgpack_pack_float(pk, ((const float *)p)[i]); break;
    default: r = msgpack_pack_double(pk, ((const double *)p)[i]); break;
    }
  }
  return r;
}

static int pack_str(msgpack_packer *pk, const char *s, size_t n) {
  return msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, s, n);
}

/* Pack the value of attribute name (type t, len items) as msgpack into sb. */
static int pack_attr(caterva_ctx *ctx, const nc_var *v, const char *name, nc_type t,
                     size_t len, msgpack_sbuffer *sb) {
  int rc = CATERVA_OK, st, r = 0;
  msgpack_packer pk;
  void *buf = NULL;
  char **strs = NULL;
  char dt[8];
  size_t isz = t == NC_CHAR ? 1 : t == NC_STRING ? sizeof(char *) : (size_t)type_dtype(t, dt);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  CAT_CHECK(leave, isz > 0, CATERVA_E_UNSUPPORTED,
            "variable \"%s\": attribute %s has a user-defined type", v->name, name);
  buf = malloc(len ? len * isz : 1);
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
  st = len ? nc_get_att(v->ncid, v->varid, name, buf) : NC_NOERR;
  if (st != NC_NOERR) CAT_FAIL(leave, nc_code(st), "attribute %s: %s", name, nc_strerror(st));
  if (t == NC_STRING) strs = buf;
  if (t == NC_CHAR) {
    size_t n = len;
    while (n > 0 && ((char *)buf)[n - 1] == 0) n--; /* C writers often include the NUL */
    r = pack_str(&pk, buf, n);
  } else if (t == NC_STRING) {
    r = len == 1 ? 0 : msgpack_pack_array(&pk, len);
    for (size_t i = 0; i < len && r == 0; i++)
      r = pack_str(&pk, strs[i] ? strs[i] : "", strs[i] ? strlen(strs[i]) : 0);
  } else {
    r = pack_numbers(&pk, t, buf, len);
  }
  CAT_CHECK(leave, r == 0 && sb->size <= INT32_MAX, CATERVA_E_NOMEM, "out of memory");
leave:
  if (strs != NULL && len > 0) nc_free_string(len, strs);
  free(buf);
  return rc;
}

/* Attributes stored by other means, or applied to the data. */
static int attr_skipped(const nc_var *v, const char *name) {
  if (strcmp(name, "_FillValue") == 0 || strcmp(name, "_ARRAY_DIMENSIONS") == 0 ||
      strcmp(name, "_coords") == 0)
    return 1;
  if (v->unpack && (strcmp(name, "scale_factor") == 0 || strcmp(name, "add_offset") == 0))
    return 1;
  if (v->is_unsigned && strcmp(name, "_Unsigned") == 0) return 1;
  if ((v->has_vmin || v->has_vmax) && (strcmp(name, "valid_range") == 0 ||
                                       strcmp(name, "valid_min") == 0 ||
                                       strcmp(name, "valid_max") == 0))
    return 1;
  return v->mask && strcmp(name, "missing_value") == 0;
}

static int copy_attrs(caterva_ctx *ctx, const nc_var *v, caterva_array *a,
                      caterva_netcdf_stats *stats) {
  int rc = CATERVA_OK, natts = 0, st;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  st = nc_inq_varnatts(v->ncid, v->varid, &natts);
  if (st != NC_NOERR) CAT_FAIL(leave, nc_code(st), "attributes: %s", nc_strerror(st));
  for (int k = 0; k < natts; k++) {
    char name[NC_MAX_NAME + 1];
    nc_type t;
    size_t len;
    st = nc_inq_attname(v->ncid, v->varid, k, name);
    if (st == NC_NOERR) st = nc_inq_att(v->ncid, v->varid, name, &t, &len);
    if (st != NC_NOERR) CAT_FAIL(leave, nc_code(st), "attribute %d: %s", k, nc_strerror(st));
    if (attr_skipped(v, name)) continue;
    if (strlen(name) > CATERVA_METALAYER_NAME_MAX) {
      stats->attrs_skipped++;
      continue;
    }
    msgpack_sbuffer_clear(&sb);
    CAT_TRY(leave, pack_attr(ctx, v, name, t, len, &sb));
    CAT_TRY(leave, caterva_array_attr_set(ctx, a, name, sb.data, (int32_t)sb.size));
    stats->attrs_copied++;
  }
leave:
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static int copy_dim_names(caterva_ctx *ctx, const nc_var *v, const caterva_netcdf_params *p,
                          caterva_array *a) {
  int rc = CATERVA_OK, st;
  char names[CATERVA_MAX_DIM][NC_MAX_NAME + 1];
  const char *ptrs[CATERVA_MAX_DIM];
  if (p->dim_names != NULL) {
    CAT_CHECK(leave, p->n_dim_names == v->ndim, CATERVA_E_INVALID, "%d dimension names given; "
              "variable \"%s\" has %d dimensions", p->n_dim_names, v->name, v->ndim);
    rc = caterva_array_set_dim_names(ctx, a, p->dim_names);
    goto leave;
  }
  if (v->ndim == 0) goto leave;
  for (int k = 0; k < v->ndim; k++) {
    st = nc_inq_dimname(v->ncid, v->dimids[k], names[k]);
    if (st != NC_NOERR) CAT_FAIL(leave, nc_code(st), "dimension %d: %s", k, nc_strerror(st));
    ptrs[k] = names[k];
  }
  rc = caterva_array_set_dim_names(ctx, a, ptrs);
leave:
  return rc;
}

/* The array's fill item: NaN when masked; the variable's _FillValue otherwise (unpacked
 * like the data when unpacking); none else. */
static int set_fill(caterva_ctx *ctx, const nc_var *v, caterva_array *a) {
  uint8_t item[8];
  double d;
  if (v->mask) d = NAN;
  else if (!v->has_fill) return CATERVA_OK;
  else if (!v->unpack) {
    if (v->type == NC_UINT64 && v->fill.u > INT64_MAX) return CATERVA_OK; /* not storable */
    memset(item, 0, sizeof item);
    if (v->type == NC_FLOAT) {
      float f = (float)v->fill.d;
      memcpy(item, &f, 4);
    } else if (v->type == NC_DOUBLE) {
      memcpy(item, &v->fill.d, 8);
    } else {
      /* host order: the low bytes of the 64-bit value on little-endian hosts */
      int64_t x = v->fill.i;
      const uint16_t one = 1;
      memcpy(item, (const uint8_t *)&x + (*(const uint8_t *)&one ? 0 : 8 - v->isize),
             (size_t)v->isize);
    }
    return caterva_array_set_fill(ctx, a, item, 1);
  } else {
    d = v->fill.d; /* packed floats; integers below */
    if (v->type != NC_FLOAT && v->type != NC_DOUBLE)
      d = v->type == NC_UBYTE || v->type == NC_USHORT || v->type == NC_UINT || v->type == NC_UINT64
              ? (double)v->fill.u : (double)v->fill.i;
    d = d * v->scale + v->offset;
  }
  if (v->out_double || (!v->unpack && v->type == NC_DOUBLE)) {
    memcpy(item, &d, 8);
  } else {
    float f = (float)d;
    memcpy(item, &f, 4);
  }
  return caterva_array_set_fill(ctx, a, item, 1);
}

/* ---- coordinates -------------------------------------------------------------------- */

/* Text attribute name of variable varid (malloc'ed), or NULL when it has none. */
static char *att_text(int ncid, int varid, const char *name) {
  nc_type t;
  size_t len;
  char *s = NULL, *p = NULL;
  if (nc_inq_att(ncid, varid, name, &t, &len) != NC_NOERR || len > 65536) return NULL;
  if (t == NC_STRING && len == 1 && nc_get_att_string(ncid, varid, name, &p) == NC_NOERR) {
    s = strdup(p != NULL ? p : "");
    nc_free_string(1, &p);
  } else if (t == NC_CHAR && (s = calloc(len + 1, 1)) != NULL &&
             nc_get_att_text(ncid, varid, name, s) != NC_NOERR) {
    free(s);
    s = NULL;
  }
  return s;
}

/* The labels of dimension dimid (n of them) from its coordinate variable -- a 1-D numeric
 * variable of the same name along it (CF 5) --, unpacked; NULL when there is none. */
static double *coord_values(int ncid, int dimid, int64_t n, int *cvarid) {
  char name[NC_MAX_NAME + 1], dt[8];
  int varid, nd, d;
  nc_type t, at;
  size_t len;
  double *vals, scale = 1.0, offset = 0.0;
  if (n < 1 || nc_inq_dimname(ncid, dimid, name) != NC_NOERR ||
      nc_inq_varid(ncid, name, &varid) != NC_NOERR ||
      nc_inq_var(ncid, varid, NULL, &t, &nd, NULL, NULL) != NC_NOERR || nd != 1 ||
      nc_inq_vardimid(ncid, varid, &d) != NC_NOERR || d != dimid || type_dtype(t, dt) == 0)
    return NULL;
  vals = malloc((size_t)n * sizeof *vals);
  if (vals == NULL || nc_get_var_double(ncid, varid, vals) != NC_NOERR) {
    free(vals);
    return NULL;
  }
  if (nc_inq_att(ncid, varid, "scale_factor", &at, &len) == NC_NOERR && len == 1)
    nc_get_att_double(ncid, varid, "scale_factor", &scale);
  if (nc_inq_att(ncid, varid, "add_offset", &at, &len) == NC_NOERR && len == 1)
    nc_get_att_double(ncid, varid, "add_offset", &offset);
  for (int64_t i = 0; i < n; i++) vals[i] = vals[i] * scale + offset;
  *cvarid = varid;
  return vals;
}

/* Evenly spaced labels, exactly: a regular coordinate (else explicit). */
static void coord_shape(caterva_coord *c, const double *vals, int64_t n) {
  double step = n > 1 ? vals[1] - vals[0] : 1.0;
  int regular = step != 0.0 && isfinite(step);
  for (int64_t i = 2; i < n && regular; i++) regular = vals[i] == vals[0] + step * (double)i;
  c->kind = regular ? CATERVA_COORD_REGULAR : CATERVA_COORD_EXPLICIT;
  c->start = vals[0];
  c->step = step;
  c->nvalues = n;
  c->values = vals;
}

/* Coordinate variables become the array's coordinates, with their units and calendar
 * verbatim. One the library refuses (labels not finite or not strictly monotonic, units or
 * calendar it does not know) is left out and counted. */
static int copy_coords(caterva_ctx *ctx, const nc_var *v, caterva_array *a,
                       caterva_netcdf_stats *stats) {
  int rc = CATERVA_OK;
  for (int k = 0; k < v->ndim && rc >= 0; k++) {
    int cvarid = -1, r;
    double *vals = coord_values(v->ncid, v->dimids[k], v->shape[k], &cvarid);
    caterva_coord c;
    char *units, *calendar;
    if (vals == NULL) continue;
    memset(&c, 0, sizeof c);
    coord_shape(&c, vals, v->shape[k]);
    units = att_text(v->ncid, cvarid, "units");
    calendar = att_text(v->ncid, cvarid, "calendar");
    c.units = units;
    c.calendar = calendar;
    r = caterva_array_set_coord(ctx, a, k, &c);
    if (r == CATERVA_E_INVALID) stats->coords_skipped++;
    else if (r < 0) rc = r;
    else stats->coords++;
    free(units);
    free(calendar);
    free(vals);
  }
  return rc;
}

/* ---- the import --------------------------------------------------------------------- */

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st;
  (void)flag;
  (void)f;
  return remove(path);
}

/* Remove a frame file or sparse directory we were writing (nothing else is there). */
static void remove_tree(const char *path) {
  (void)nftw(path, rm_one, 8, FTW_DEPTH | FTW_PHYS);
}

/* Create the array (zero chunks, to be replaced) with the variable's shape and dtype. */
static int create_array(caterva_ctx *ctx, const nc_var *v, const caterva_netcdf_params *p,
                        const char *path, caterva_array **out) {
  caterva_array_params par = p->array;
  if (par.ndim != 0 && par.ndim != v->ndim)
    return cat_error(ctx, CATERVA_E_INVALID, "chunk and block shapes of %d dimensions given; "
                     "variable \"%s\" has %d", par.ndim, v->name, v->ndim);
  par.ndim = v->ndim;
  memcpy(par.shape, v->shape, sizeof par.shape);
  par.itemsize = 0;
  par.dtype = v->dtype;
  par.path = path;
  choose_chunks(v, &par);
  return caterva_array_create(ctx, &par, CATERVA_FILL_ZEROS, NULL, out);
}

/* Everything but the publication of a file store. */
static int import_var(caterva_ctx *ctx, nc_var *v, const caterva_netcdf_params *p,
                      const char *path, caterva_netcdf_stats *stats, caterva_array **out) {
  int rc = CATERVA_OK, txn = 0;
  caterva_array *a = NULL;
  CAT_TRY(leave, read_packing(ctx, v, p->keep_packed));
  CAT_TRY(leave, read_missing(ctx, v, p->keep_fill));
  stats->unpacked = v->unpack;
  stats->nc_chunked = v->chunked;
  CAT_TRY(leave, create_array(ctx, v, p, path, &a));
  if (path != NULL) {
    CAT_TRY(leave, caterva_array_begin(ctx, a));
    txn = 1;
  }
  CAT_TRY(leave, copy_data(ctx, v, p, a, &stats->masked));
  CAT_TRY(leave, copy_dim_names(ctx, v, p, a));
  CAT_TRY(leave, set_fill(ctx, v, a));
  CAT_TRY(leave, copy_attrs(ctx, v, a, stats));
  CAT_TRY(leave, copy_coords(ctx, v, a, stats));
  if (txn) CAT_TRY(leave, caterva_array_commit(ctx, a, 1));
  txn = 0;
leave:
  if (rc < 0 && txn) (void)caterva_array_rollback(ctx, a);
  if (rc < 0) caterva_array_free(a);
  else *out = a;
  return rc;
}

int caterva_netcdf_import(caterva_ctx *ctx, const char *src, const caterva_netcdf_params *p,
                          caterva_netcdf_stats *stats, caterva_array **out) {
  int rc = CATERVA_OK;
  nc_var v;
  caterva_netcdf_stats st;
  caterva_array *a = NULL;
  char *tmp = NULL;
  int file = p != NULL && p->array.store != CATERVA_STORE_MEMORY;
  memset(&v, 0, sizeof v);
  memset(&st, 0, sizeof st);
  v.ncid = -1;
  *out = NULL;
  CAT_CHECK(leave, src != NULL && p != NULL, CATERVA_E_INVALID, "no source file");
  CAT_CHECK(leave, !file || p->array.path != NULL, CATERVA_E_INVALID, "a file store needs a path");
  if (file) {
    struct stat sb;
    CAT_CHECK(leave, stat(p->array.path, &sb) != 0, CATERVA_E_EXISTS, "%s exists",
              p->array.path);
    tmp = malloc(strlen(p->array.path) + 32);
    CAT_CHECK(leave, tmp != NULL, CATERVA_E_NOMEM, "out of memory");
    sprintf(tmp, "%s.importing-%ld", p->array.path, (long)getpid());
    remove_tree(tmp); /* left by a crash of an earlier import with this process id */
  }
  CAT_TRY(leave, open_var(ctx, src, p->variable, &v));
  CAT_TRY(leave, import_var(ctx, &v, p, tmp, &st, &a));
  if (file) CAT_TRY(leave, caterva_schunk_rename(ctx, caterva_array_schunk(a), p->array.path));
  rc = CATERVA_OK;
leave:
  if (v.ncid >= 0) nc_close(v.ncid);
  if (rc < 0) {
    caterva_array_free(a);
    if (tmp != NULL) remove_tree(tmp);
  } else {
    *out = a;
    if (stats != NULL) *stats = st;
  }
  free(tmp);
  return rc;
}

#else /* !HAVE_NETCDF */

int caterva_netcdf_available(void) { return 0; }

int caterva_netcdf_import(caterva_ctx *ctx, const char *src, const caterva_netcdf_params *p,
                          caterva_netcdf_stats *stats, caterva_array **out) {
  (void)src;
  (void)p;
  (void)stats;
  *out = NULL;
  return cat_error(ctx, CATERVA_E_UNSUPPORTED, "NetCDF import: libcaterva was built without "
                   "libnetcdf (install libnetcdf-dev and run configure again)");
}

#endif /* HAVE_NETCDF */

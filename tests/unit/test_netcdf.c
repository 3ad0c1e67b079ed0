/*
 * test_netcdf.c -- caterva_netcdf_import against libnetcdf's own reading.
 *
 * The NetCDF files are made at test time by ncgen from the CDL text in tests/data/netcdf/:
 * classic.cdl as NetCDF-3 classic, 64-bit offset, CDF-5 and NetCDF-4, nc4.cdl as NetCDF-4
 * (chunked and deflated variables, every numeric type). Every numeric variable is imported
 * and each item compared with what nc_get_var reads, unpacked and masked here by the CF
 * rules written out independently of the library (expected_item); then the cells the CDL
 * files plant on purpose (fill values, missing values, extremes) are checked by value, and
 * the attributes, dimension names, partitioning, options and errors.
 *
 * Environment: NCGEN (the ncgen program), top_srcdir (for tests/data/netcdf).
 */
#include "caterva_io.h"
#include "fsutil.h"
#include "tap.h"

#include <float.h>
#include <math.h>
#include <msgpack.h>
#include <netcdf.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];
static caterva_ctx *ctx;

/* ---- files ---------------------------------------------------------------------------- */

static int make_nc(const char *cdl, const char *kind, char *out, size_t cap) {
  const char *top = getenv("top_srcdir"), *ncgen = getenv("NCGEN");
  char cmd[1024];
  snprintf(out, cap, "%s/%s-%s.nc", tmpdir, cdl, kind);
  snprintf(cmd, sizeof cmd, "'%s' -k %s -o '%s' '%s/tests/data/netcdf/%s.cdl'",
           ncgen && *ncgen ? ncgen : "ncgen", kind, out, top ? top : ".", cdl);
  return system(cmd) == 0;
}

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

/* Import var of src into a new file; rc of the import, *a the array. */
static int import(const char *src, const char *var, caterva_netcdf_params *p, const char *dst,
                  caterva_netcdf_stats *st, caterva_array **a) {
  caterva_netcdf_params def;
  char path[512];
  if (p == NULL) {
    caterva_netcdf_params_init(&def);
    p = &def;
  }
  snprintf(path, sizeof path, "%s/%s", tmpdir, dst);
  tu_rm_tree(path);
  p->variable = var;
  p->array.store = CATERVA_STORE_CONTIGUOUS;
  p->array.path = path;
  return caterva_netcdf_import(ctx, src, p, st, a);
}

/* ---- the oracle: CF unpacking and masking, written out here -------------------------- */

/* A numeric attribute as doubles (at most cap); the count, 0 when absent. */
static size_t att_doubles(int ncid, int varid, const char *name, double *v, size_t cap) {
  size_t len;
  nc_type t;
  if (nc_inq_att(ncid, varid, name, &t, &len) != NC_NOERR || t == NC_CHAR || t == NC_STRING ||
      len == 0 || len > cap)
    return 0;
  return nc_get_att_double(ncid, varid, name, v) == NC_NOERR ? len : 0;
}

static int type_size(nc_type t) {
  switch (t) {
  case NC_BYTE: case NC_UBYTE: return 1;
  case NC_SHORT: case NC_USHORT: return 2;
  case NC_INT: case NC_UINT: case NC_FLOAT: return 4;
  case NC_INT64: case NC_UINT64: case NC_DOUBLE: return 8;
  default: return 0;
  }
}

static long double raw_item(nc_type t, const void *p, size_t i) {
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

/* The NUG's default fill values. */
static long double default_fill(nc_type t) {
  switch (t) {
  case NC_SHORT: return NC_FILL_SHORT;
  case NC_USHORT: return NC_FILL_USHORT;
  case NC_INT: return NC_FILL_INT;
  case NC_UINT: return NC_FILL_UINT;
  case NC_INT64: return NC_FILL_INT64;
  case NC_UINT64: return NC_FILL_UINT64;
  case NC_FLOAT: return NC_FILL_FLOAT;
  case NC_DOUBLE: return NC_FILL_DOUBLE;
  default: return NAN; /* bytes: none */
  }
}

typedef struct oracle {
  nc_type t;                 /* the type items are read as (unsigned with _Unsigned) */
  int packed, to_double, floats;
  double scale, offset;
  long double miss[8];
  int nmiss;
  int uns;                   /* _Unsigned = "true" on a signed integer type */
  int has_lo, has_hi;        /* valid range (applied to float results) */
  long double lo, hi;
} oracle;

/* _Unsigned = "true"? */
static int unsigned_att(int ncid, int varid) {
  char buf[16] = "";
  size_t len;
  nc_type at;
  if (nc_inq_att(ncid, varid, "_Unsigned", &at, &len) != NC_NOERR || at != NC_CHAR ||
      len >= sizeof buf || nc_get_att_text(ncid, varid, "_Unsigned", buf) != NC_NOERR)
    return 0;
  return strncasecmp(buf, "true", len) == 0 && len == 4;
}

/* An attribute's value (read as double) as a value of the oracle's type. */
static long double as_item(const oracle *o, double x) {
  if (o->uns && x < 0) return (long double)x + ldexpl(1.0L, 8 * type_size(o->t));
  return x;
}

/* CF valid_range, else valid_min/valid_max. */
static void oracle_range(int ncid, int varid, oracle *o) {
  double v[2];
  if (att_doubles(ncid, varid, "valid_range", v, 2) == 2) {
    o->has_lo = o->has_hi = 1;
    o->lo = as_item(o, v[0]);
    o->hi = as_item(o, v[1]);
    return;
  }
  if (att_doubles(ncid, varid, "valid_min", v, 1) == 1) o->has_lo = 1, o->lo = as_item(o, v[0]);
  if (att_doubles(ncid, varid, "valid_max", v, 1) == 1) o->has_hi = 1, o->hi = as_item(o, v[0]);
}

static void oracle_init(int ncid, int varid, nc_type t, oracle *o) {
  double v[8];
  nc_type at;
  size_t len;
  memset(o, 0, sizeof *o);
  o->uns = unsigned_att(ncid, varid) &&
           (t == NC_BYTE || t == NC_SHORT || t == NC_INT || t == NC_INT64);
  if (o->uns)
    t = t == NC_BYTE ? NC_UBYTE : t == NC_SHORT ? NC_USHORT : t == NC_INT ? NC_UINT : NC_UINT64;
  o->t = t;
  o->scale = 1;
  if (att_doubles(ncid, varid, "scale_factor", v, 1)) o->packed = 1, o->scale = v[0];
  if (att_doubles(ncid, varid, "add_offset", v, 1)) o->packed = 1, o->offset = v[0];
  o->to_double = 1;
  if (o->packed) {
    int f = 1;
    if (nc_inq_att(ncid, varid, "scale_factor", &at, &len) == NC_NOERR) f &= at == NC_FLOAT;
    if (nc_inq_att(ncid, varid, "add_offset", &at, &len) == NC_NOERR) f &= at == NC_FLOAT;
    o->to_double = !(f && (t == NC_BYTE || t == NC_UBYTE || t == NC_SHORT || t == NC_USHORT));
  } else {
    o->to_double = t == NC_DOUBLE;
  }
  o->floats = o->packed || t == NC_FLOAT || t == NC_DOUBLE;
  if (nc_inq_att(ncid, varid, "_FillValue", &at, &len) == NC_NOERR) {
    /* exact for every type: read in the variable's own type */
    unsigned char buf[8];
    if (nc_get_att(ncid, varid, "_FillValue", buf) == NC_NOERR) o->miss[o->nmiss++] = raw_item(t, buf, 0);
  } else if (o->uns && t != NC_UBYTE) {
    /* the bits of the signed type's default fill, read as unsigned */
    nc_type st = t == NC_USHORT ? NC_SHORT : t == NC_UINT ? NC_INT : NC_INT64;
    o->miss[o->nmiss++] = as_item(o, (double)default_fill(st));
  } else if (!isnan((double)default_fill(t))) {
    o->miss[o->nmiss++] = default_fill(t);
  }
  size_t n = att_doubles(ncid, varid, "missing_value", v, 8);
  for (size_t k = 0; k < n; k++) {
    long double m = as_item(o, v[k]);
    if (t == NC_FLOAT) m = (float)v[k];
    o->miss[o->nmiss++] = m;
  }
  if (o->floats) oracle_range(ncid, varid, o);
}

/* Item i as the array should hold it: NaN (masked) or the value, as a double. */
static double expected_item(const oracle *o, const void *raw, size_t i) {
  long double x = raw_item(o->t, raw, i);
  for (int k = 0; k < o->nmiss; k++)
    if (x == o->miss[k]) return NAN;
  if ((o->has_lo && x < o->lo) || (o->has_hi && x > o->hi)) return NAN;
  if (!o->packed) return (double)x;
  double d = (double)x * o->scale + o->offset;
  return o->to_double ? d : (double)(float)d;
}

/* Compare the whole array with the variable; returns mismatches. */
static int64_t compare_var(const char *src, const char *var, caterva_array *a, int64_t *nan) {
  int ncid, varid, ndim;
  nc_type t;
  oracle o;
  int64_t n = caterva_array_nitems(a), bad = 0;
  void *raw = NULL, *got = NULL;
  *nan = 0;
  if (nc_open(src, NC_NOWRITE, &ncid) != NC_NOERR) return -1;
  if (nc_inq_varid(ncid, var, &varid) != NC_NOERR ||
      nc_inq_var(ncid, varid, NULL, &t, &ndim, NULL, NULL) != NC_NOERR) {
    nc_close(ncid);
    return -1;
  }
  oracle_init(ncid, varid, t, &o);
  raw = malloc((size_t)(n * 8 + 8));
  got = malloc((size_t)(n * 8 + 8));
  if (nc_get_var(ncid, varid, raw) != NC_NOERR ||
      caterva_array_to_buffer(ctx, a, got, n * 8 + 8) != CATERVA_OK) {
    bad = -1;
    goto out;
  }
  for (int64_t i = 0; i < n; i++) {
    if (o.floats) {
      double e = expected_item(&o, raw, (size_t)i);
      double g = o.to_double ? ((double *)got)[i] : ((float *)got)[i];
      if (isnan(e)) (*nan)++;
      if (!(isnan(e) ? isnan(g) : e == g)) {
        if (bad < 3) tap_diag("%s[%lld]: expected %.17g, got %.17g", var, (long long)i, e, g);
        bad++;
      }
    } else if (memcmp((char *)raw + i * type_size(t), (char *)got + i * type_size(t),
                      (size_t)type_size(t)) != 0) {
      bad++;
    }
  }
out:
  free(raw);
  free(got);
  nc_close(ncid);
  return bad;
}

/* ---- helpers on the result ------------------------------------------------------------ */

static double item_at(caterva_array *a, int64_t i) {
  int64_t n = caterva_array_nitems(a);
  int sz = caterva_array_itemsize(a);
  double r = NAN;
  uint8_t *buf = malloc((size_t)(n * sz));
  if (buf && caterva_array_to_buffer(ctx, a, buf, n * sz) == CATERVA_OK) {
    if (sz == 4) r = ((float *)buf)[i];
    else r = ((double *)buf)[i];
  }
  free(buf);
  return r;
}

/* The msgpack value of attribute name, unpacked into up (1 on success). Strings in up point
 * into the attribute's bytes, kept until the next call. */
static uint8_t *attr_bytes;

static int attr(caterva_array *a, const char *name, msgpack_unpacked *up) {
  int32_t len = 0;
  size_t off = 0;
  free(attr_bytes);
  attr_bytes = NULL;
  return caterva_array_attr_get(ctx, a, name, &attr_bytes, &len) == CATERVA_OK &&
         msgpack_unpack_next(up, (const char *)attr_bytes, (size_t)len, &off) ==
             MSGPACK_UNPACK_SUCCESS;
}

static int attr_is_str(caterva_array *a, const char *name, const char *want) {
  msgpack_unpacked up;
  int ok;
  msgpack_unpacked_init(&up);
  ok = attr(a, name, &up) && up.data.type == MSGPACK_OBJECT_STR &&
       up.data.via.str.size == strlen(want) && memcmp(up.data.via.str.ptr, want, strlen(want)) == 0;
  msgpack_unpacked_destroy(&up);
  return ok;
}

static int has_attr(caterva_array *a, const char *name) {
  uint8_t *v = NULL;
  int32_t len;
  int r = caterva_array_attr_get(ctx, a, name, &v, &len);
  free(v);
  return r == CATERVA_OK;
}

static int dims_are(caterva_array *a, const char *const *want) {
  char **names = NULL;
  int ok = caterva_array_get_dim_names(ctx, a, &names) == CATERVA_OK;
  for (int k = 0; ok && k < caterva_array_ndim(a); k++) ok = strcmp(names[k], want[k]) == 0;
  caterva_array_free_names(names, caterva_array_ndim(a));
  return ok;
}

/* ---- the tests ------------------------------------------------------------------------ */

static const char *expected_dtype(nc_type t, int packed_double, int packed) {
  if (packed) return packed_double ? "<f8" : "<f4";
  switch (t) {
  case NC_BYTE: return "|i1";
  case NC_UBYTE: return "|u1";
  case NC_SHORT: return "<i2";
  case NC_USHORT: return "<u2";
  case NC_INT: return "<i4";
  case NC_UINT: return "<u4";
  case NC_INT64: return "<i8";
  case NC_UINT64: return "<u8";
  case NC_FLOAT: return "<f4";
  default: return "<f8";
  }
}

/* Every numeric variable of src: dtype, shape, dimension names and every item. */
static void round_trip_all(const char *src, const char *label) {
  int ncid, nvars = 0;
  if (!tap_ok(nc_open(src, NC_NOWRITE, &ncid) == NC_NOERR, "%s: opens", label)) return;
  nc_inq_nvars(ncid, &nvars);
  for (int varid = 0; varid < nvars; varid++) {
    char name[NC_MAX_NAME + 1], dimnames[CATERVA_MAX_DIM][NC_MAX_NAME + 1];
    const char *dp[CATERVA_MAX_DIM];
    int ndim, dimids[NC_MAX_VAR_DIMS], shape_ok = 1, rc;
    nc_type t;
    oracle o;
    caterva_array *a = NULL;
    caterva_netcdf_stats st;
    int64_t nan = 0, bad;
    nc_inq_var(ncid, varid, name, &t, &ndim, dimids, NULL);
    if (type_size(t) == 0) continue; /* char and string: the error tests below */
    oracle_init(ncid, varid, t, &o);
    rc = import(src, name, NULL, "rt.b2nd", &st, &a);
    if (!tap_ok(rc == CATERVA_OK, "%s: %s imports (%s)", label, name, caterva_ctx_errmsg(ctx)))
      continue;
    for (int k = 0; k < ndim; k++) {
      size_t len;
      nc_inq_dimlen(ncid, dimids[k], &len);
      nc_inq_dimname(ncid, dimids[k], dimnames[k]);
      dp[k] = dimnames[k];
      shape_ok &= caterva_array_shape(a)[k] == (int64_t)len;
    }
    tap_ok(caterva_array_ndim(a) == ndim && shape_ok, "%s: %s has the variable's shape", label,
           name);
    tap_ok(strcmp(caterva_array_dtype(a), expected_dtype(o.t, o.to_double, o.packed)) == 0,
           "%s: %s: dtype %s", label, name, caterva_array_dtype(a));
    tap_ok(ndim == 0 || dims_are(a, dp), "%s: %s keeps the dimension names", label, name);
    bad = compare_var(src, name, a, &nan);
    tap_ok(bad == 0, "%s: %s: every item equals libnetcdf's, unpacked and masked (%lld NaN)",
           label, name, (long long)nan);
    tap_ok(st.masked == (o.floats ? nan : 0) || (o.t == NC_DOUBLE && st.masked <= nan),
           "%s: %s: %lld items masked", label, name, (long long)st.masked);
    caterva_array_free(a);
  }
  nc_close(ncid);
}

/* t2m's coordinates: time explicit (3.5 breaks the spacing) with units and calendar
 * verbatim, lat and lon regular. */
static void coords_classic(caterva_array *a, const caterva_netcdf_stats *st, const char *label) {
  caterva_coord c;
  tap_ok(st->coords == 3 && st->coords_skipped == 0, "%s: t2m: 3 coordinates", label);
  tap_ok(caterva_array_get_coord(ctx, a, 0, &c) == CATERVA_OK &&
             c.kind == CATERVA_COORD_EXPLICIT && c.nvalues == 5 && c.values[3] == 3.5 &&
             c.values[4] == 4.0 && c.units && strcmp(c.units, "days since 2000-01-01 00:00:00") == 0 &&
             c.calendar && strcmp(c.calendar, "noleap") == 0,
         "%s: t2m: time is an explicit coordinate with units and calendar verbatim", label);
  tap_ok(caterva_array_get_coord(ctx, a, 1, &c) == CATERVA_OK &&
             c.kind == CATERVA_COORD_REGULAR && c.start == -10.0 && c.step == 10.0 &&
             c.units && strcmp(c.units, "degrees_north") == 0,
         "%s: t2m: lat is regular (-10, step 10, degrees_north)", label);
  tap_ok(caterva_array_get_coord(ctx, a, 2, &c) == CATERVA_OK &&
             c.kind == CATERVA_COORD_REGULAR && c.start == 0.0 && c.step == 90.0,
         "%s: t2m: lon is regular (0, step 90)", label);
}

/* The cells classic.cdl plants on purpose, checked by value. */
static void planted_classic(const char *src, const char *label) {
  caterva_array *a = NULL;
  caterva_netcdf_stats st;
  caterva_netcdf_params p;
  uint8_t fill[8];
  static const char *const tll[] = {"time", "lat", "lon"};
  if (tap_ok(import(src, "t2m", NULL, "p.b2nd", &st, &a) == CATERVA_OK, "%s: t2m", label)) {
    float s = 0.01f, off = 273.15f;
    tap_ok(isnan(item_at(a, 5)), "%s: t2m[5] (_FillValue) is NaN", label);
    tap_ok(isnan(item_at(a, 17)), "%s: t2m[17] (missing_value) is NaN", label);
    tap_ok(item_at(a, 30) == (double)(float)(32767.0 * s + off), "%s: t2m[30] = 32767*scale+offset",
           label);
    tap_ok(item_at(a, 31) == (double)(float)(-32765.0 * s + off), "%s: t2m[31] = -32765*scale+offset",
           label);
    tap_ok(st.unpacked && st.masked == 2, "%s: t2m: unpacked, 2 masked", label);
    tap_ok(dims_are(a, tll), "%s: t2m: dims time, lat, lon", label);
    tap_ok(caterva_array_shape(a)[0] == 5, "%s: t2m: 5 records along the unlimited dimension",
           label);
    tap_ok(attr_is_str(a, "units", "K") && attr_is_str(a, "long_name", "2 metre temperature"),
           "%s: t2m: units and long_name", label);
    tap_ok(!has_attr(a, "scale_factor") && !has_attr(a, "add_offset") &&
               !has_attr(a, "missing_value"),
           "%s: t2m: applied packing attributes are not copied", label);
    tap_ok(caterva_array_get_fill(a, fill, 8) == 1 && isnan(*(float *)fill),
           "%s: t2m: the array's fill is NaN", label);
    coords_classic(a, &st, label);
    caterva_array_free(a);
  }
  if (tap_ok(import(src, "sst", NULL, "p.b2nd", &st, &a) == CATERVA_OK, "%s: sst", label)) {
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    tap_ok(isnan(item_at(a, 3)) && isnan(item_at(a, 44)) && isnan(item_at(a, 8)),
           "%s: sst: fill and missing values are NaN", label);
    tap_ok(!has_attr(a, "valid_range"), "%s: sst: valid_range applied, not copied", label);
    caterva_array_free(a);
    a = NULL;
    caterva_netcdf_params_init(&p);
    p.keep_fill = 1;
    tap_ok(import(src, "sst", &p, "p.b2nd", &st, &a) == CATERVA_OK &&
               attr(a, "valid_range", &up) && up.data.type == MSGPACK_OBJECT_ARRAY &&
               up.data.via.array.size == 2 &&
               up.data.via.array.ptr[0].type == MSGPACK_OBJECT_FLOAT32 &&
               up.data.via.array.ptr[0].via.f64 == -5.0 && up.data.via.array.ptr[1].via.f64 == 40.0,
           "%s: sst, keep_fill: valid_range is a msgpack array of two float32", label);
    msgpack_unpacked_destroy(&up);
    caterva_array_free(a);
  }
  if (tap_ok(import(src, "count", NULL, "p.b2nd", &st, &a) == CATERVA_OK, "%s: count", label)) {
    int32_t f = 0;
    tap_ok(strcmp(caterva_array_dtype(a), "<i4") == 0 && st.masked == 0,
           "%s: count: int32, nothing masked", label);
    tap_ok(caterva_array_get_fill(a, &f, 4) == 1 && f == -1, "%s: count: fill -1 from _FillValue",
           label);
    caterva_array_free(a);
  }
  if (tap_ok(import(src, "dd", NULL, "p.b2nd", &st, &a) == CATERVA_OK, "%s: dd", label)) {
    tap_ok(isnan(item_at(a, 7)) && st.masked == 1,
           "%s: dd: the default fill (no _FillValue) is NaN", label);
    caterva_array_free(a);
  }
  if (tap_ok(import(src, "scalar", NULL, "p.b2nd", &st, &a) == CATERVA_OK, "%s: scalar", label)) {
    int32_t v = 0;
    tap_ok(caterva_array_ndim(a) == 0 && caterva_array_to_buffer(ctx, a, &v, 4) == CATERVA_OK &&
               v == 42, "%s: scalar: a 0-d array holding 42", label);
    caterva_array_free(a);
  }
  if (tap_ok(import(src, "time", NULL, "p.b2nd", &st, &a) == CATERVA_OK, "%s: time", label)) {
    tap_ok(attr_is_str(a, "calendar", "noleap") &&
               attr_is_str(a, "units", "days since 2000-01-01 00:00:00") && item_at(a, 3) == 3.5,
           "%s: time: values, units and calendar", label);
    caterva_array_free(a);
  }
}

/* Options: packed data kept, fill values kept, user chunks with small hyperslabs. */
static void options(const char *src, const char *label) {
  caterva_netcdf_params p;
  caterva_array *a = NULL;
  caterva_netcdf_stats st;
  int64_t nan;
  caterva_netcdf_params_init(&p);
  p.keep_packed = 1;
  if (tap_ok(import(src, "t2m", &p, "o.b2nd", &st, &a) == CATERVA_OK, "%s: keep_packed", label)) {
    int16_t f = 0;
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    tap_ok(strcmp(caterva_array_dtype(a), "<i2") == 0 && !st.unpacked && st.masked == 0,
           "%s: keep_packed: int16, nothing masked", label);
    tap_ok(compare_var(src, "t2m", a, &nan) > 0, "%s: keep_packed: items are not unpacked", label);
    tap_ok(attr(a, "scale_factor", &up) && up.data.type == MSGPACK_OBJECT_FLOAT32 &&
               (float)up.data.via.f64 == 0.01f && has_attr(a, "missing_value"),
           "%s: keep_packed: scale_factor (float32) and missing_value kept", label);
    tap_ok(caterva_array_get_fill(a, &f, 2) == 1 && f == -32767,
           "%s: keep_packed: fill = the packed _FillValue", label);
    msgpack_unpacked_destroy(&up);
    caterva_array_free(a);
  }
  caterva_netcdf_params_init(&p);
  p.keep_fill = 1;
  if (tap_ok(import(src, "sst", &p, "o.b2nd", &st, &a) == CATERVA_OK, "%s: keep_fill", label)) {
    float f = 0;
    tap_ok(item_at(a, 3) == -999.0 && item_at(a, 8) == -999.5 && st.masked == 0,
           "%s: keep_fill: fill and missing values stay numbers", label);
    tap_ok(caterva_array_get_fill(a, &f, 4) == 1 && f == -999.0f, "%s: keep_fill: fill -999",
           label);
    caterva_array_free(a);
  }
  caterva_netcdf_params_init(&p);
  p.array.ndim = 3;
  p.array.chunkshape[0] = 2, p.array.chunkshape[1] = 2, p.array.chunkshape[2] = 3;
  p.array.blockshape[0] = 1, p.array.blockshape[1] = 2, p.array.blockshape[2] = 2;
  p.array.cparams.codec = CATERVA_LZ4;
  p.read_bytes = 1; /* one chunk per hyperslab */
  if (tap_ok(import(src, "t2m", &p, "o.b2nd", &st, &a) == CATERVA_OK, "%s: small chunks",
             label)) {
    tap_ok(caterva_array_chunkshape(a)[2] == 3 && caterva_array_blockshape(a)[1] == 2 &&
               compare_var(src, "t2m", a, &nan) == 0 && nan == 2,
           "%s: chunks 2x2x3, blocks 1x2x2, one chunk per read: every item right", label);
    caterva_array_free(a);
  }
  p.read_bytes = 0;
  p.array.ndim = 2;
  tap_ok(import(src, "t2m", &p, "o.b2nd", &st, &a) == CATERVA_E_INVALID && a == NULL,
         "%s: chunks of 2 dimensions for a 3-d variable: CATERVA_E_INVALID", label);
}

static int progress_calls;
static int64_t progress_last;
static int progress_stop_at;

static int on_progress(void *arg, int64_t done, int64_t total) {
  (void)arg;
  progress_calls++;
  progress_last = done == total ? done : -1;
  return progress_stop_at && progress_calls == progress_stop_at ? CATERVA_E_INVALID : 0;
}

static void progress(const char *src) {
  caterva_netcdf_params p;
  caterva_array *a = NULL;
  char dst[512];
  caterva_netcdf_params_init(&p);
  p.array.ndim = 3;
  p.array.chunkshape[0] = 1, p.array.chunkshape[1] = 3, p.array.chunkshape[2] = 4;
  p.read_bytes = 1;
  p.progress = on_progress;
  tap_ok(import(src, "t2m", &p, "prog.b2nd", NULL, &a) == CATERVA_OK && progress_calls == 5 &&
             progress_last == 60, "progress: called once per hyperslab (5), last with 60 of 60");
  caterva_array_free(a);
  a = NULL;
  progress_calls = 0;
  progress_stop_at = 2;
  snprintf(dst, sizeof dst, "%s/prog.b2nd", tmpdir);
  tap_ok(import(src, "t2m", &p, "prog.b2nd", NULL, &a) == CATERVA_E_INVALID && a == NULL &&
             progress_calls == 2 && !exists(dst),
         "progress: a callback's error stops the import and leaves nothing");
}

/* nc4.cdl's planted cells and NetCDF-4 specifics. */
static void planted_nc4(const char *src) {
  caterva_array *a = NULL;
  caterva_netcdf_stats st;
  msgpack_unpacked up;
  msgpack_unpacked_init(&up);
  if (tap_ok(import(src, "vf", NULL, "n.b2nd", &st, &a) == CATERVA_OK, "nc4: vf")) {
    const int32_t *c = caterva_array_chunkshape(a);
    tap_ok(st.nc_chunked && (c[1] % 3 == 0 || c[1] == 6) && (c[2] % 4 == 0 || c[2] == 10),
           "nc4: vf: default chunks %dx%dx%d are whole NetCDF-4 chunks (1x3x4)", c[0], c[1], c[2]);
    tap_ok(attr(a, "names", &up) && up.data.type == MSGPACK_OBJECT_ARRAY &&
               up.data.via.array.size == 2 && up.data.via.array.ptr[1].type == MSGPACK_OBJECT_STR &&
               up.data.via.array.ptr[1].via.str.size == 4,
           "nc4: vf: a string attribute of two values is an array of strings");
    tap_ok(attr_is_str(a, "one_name", "gamma"), "nc4: vf: a string attribute of one value");
    tap_ok(isnan(item_at(a, 3)) && item_at(a, 100) == (double)1e-45f,
           "nc4: vf: fill is NaN, the smallest subnormal float kept");
    {
      caterva_coord co;
      tap_ok(st.coords == 2 && caterva_array_get_coord(ctx, a, 0, &co) == CATERVA_OK &&
                 co.kind == CATERVA_COORD_NONE &&
                 caterva_array_get_coord(ctx, a, 1, &co) == CATERVA_OK &&
                 co.kind == CATERVA_COORD_REGULAR && co.step == -2.5 &&
                 caterva_array_get_coord(ctx, a, 2, &co) == CATERVA_OK &&
                 co.kind == CATERVA_COORD_REGULAR && co.start == 0.5 && co.step == 1.0,
             "nc4: vf: t has no coordinate variable; y (step -2.5) and x (0.5, step 1) do");
    }
    caterva_array_free(a);
  }
  if (tap_ok(import(src, "vi64", NULL, "n.b2nd", &st, &a) == CATERVA_OK, "nc4: vi64")) {
    int64_t v[3], f = 0;
    caterva_array_get_slice(ctx, a, (int64_t[]){0, 0}, (int64_t[]){1, 3}, v, sizeof v);
    tap_ok(v[0] == INT64_MIN + 2 && v[1] == INT64_MAX && v[2] == -9223372036854775806LL,
           "nc4: vi64: extremes exact, the fill kept (integers are not masked)");
    tap_ok(caterva_array_get_fill(a, &f, 8) == 1 && f == -9223372036854775806LL,
           "nc4: vi64: fill from _FillValue");
    tap_ok(attr(a, "big", &up) && up.data.type == MSGPACK_OBJECT_ARRAY &&
               up.data.via.array.ptr[0].via.u64 == (uint64_t)INT64_MAX &&
               up.data.via.array.ptr[1].via.i64 == -INT64_MAX,
           "nc4: vi64: int64 attribute values exact");
    caterva_array_free(a);
  }
  if (tap_ok(import(src, "vu64", NULL, "n.b2nd", &st, &a) == CATERVA_OK, "nc4: vu64")) {
    uint64_t v[2];
    caterva_array_get_slice(ctx, a, (int64_t[]){0, 0}, (int64_t[]){1, 2}, v, sizeof v);
    tap_ok(v[0] == 0 && v[1] == UINT64_MAX, "nc4: vu64: 0 and 2^64-1");
    tap_ok(attr(a, "ubig", &up) && up.data.type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
               up.data.via.u64 == UINT64_MAX, "nc4: vu64: uint64 attribute exact");
    caterva_array_free(a);
  }
  if (tap_ok(import(src, "pus", NULL, "n.b2nd", &st, &a) == CATERVA_OK, "nc4: pus")) {
    tap_ok(strcmp(caterva_array_dtype(a), "<f8") == 0 && isnan(item_at(a, 2)) &&
               isnan(item_at(a, 3)) && st.attrs_skipped == 1,
           "nc4: pus: ushort packed with double scale -> float64, fill and missing NaN, the "
           "long attribute name skipped");
    caterva_array_free(a);
  }
  if (tap_ok(import(src, "vz", NULL, "n.b2nd", &st, &a) == CATERVA_OK, "nc4: vz")) {
    caterva_coord c;
    tap_ok(st.coords == 0 && st.coords_skipped == 1 &&
               caterva_array_get_coord(ctx, a, 0, &c) == CATERVA_OK && c.kind == CATERVA_COORD_NONE,
           "nc4: vz: a coordinate variable that is not monotonic is left out, and counted");
    caterva_array_free(a);
  }
  if (tap_ok(import(src, "vd", NULL, "n.b2nd", &st, &a) == CATERVA_OK, "nc4: vd")) {
    tap_ok(item_at(a, 0) == 5e-324 && isnan(item_at(a, 1)), "nc4: vd: subnormal kept, NaN fill");
    caterva_array_free(a);
  }
  msgpack_unpacked_destroy(&up);
}

static void errors(const char *classic, const char *nc4) {
  caterva_array *a = (caterva_array *)1;
  char path[512], dst[512];
  FILE *f;
  snprintf(dst, sizeof dst, "%s/err.b2nd", tmpdir);
  tap_ok(import(classic, "nope", NULL, "err.b2nd", NULL, &a) == CATERVA_E_NOTFOUND && a == NULL &&
             strstr(caterva_ctx_errmsg(ctx), "t2m") != NULL && !exists(dst),
         "a missing variable: NOTFOUND, the message lists the variables (%s)",
         caterva_ctx_errmsg(ctx));
  tap_ok(import(classic, NULL, NULL, "err.b2nd", NULL, &a) == CATERVA_E_INVALID &&
             strstr(caterva_ctx_errmsg(ctx), "which variable") != NULL,
         "no variable named: INVALID, with the list");
  tap_ok(import(classic, "name", NULL, "err.b2nd", NULL, &a) == CATERVA_E_UNSUPPORTED &&
             strstr(caterva_ctx_errmsg(ctx), "char") != NULL && !exists(dst),
         "a char variable: UNSUPPORTED (%s)", caterva_ctx_errmsg(ctx));
  tap_ok(import(nc4, "vstr", NULL, "err.b2nd", NULL, &a) == CATERVA_E_UNSUPPORTED &&
             strstr(caterva_ctx_errmsg(ctx), "string") != NULL,
         "a string variable: UNSUPPORTED");
  snprintf(path, sizeof path, "%s/no-such.nc", tmpdir);
  tap_ok(import(path, "t2m", NULL, "err.b2nd", NULL, &a) == CATERVA_E_NOTFOUND && !exists(dst),
         "a nonexistent file: NOTFOUND (%s)", caterva_ctx_errmsg(ctx));
  /* truncated copies of both kinds, and garbage after a NetCDF-3 magic number */
  for (int k = 0; k < 2; k++) {
    const char *src = k ? nc4 : classic;
    FILE *in = fopen(src, "rb");
    char *buf = malloc(1 << 20);
    size_t n = in ? fread(buf, 1, 1 << 20, in) : 0;
    if (in) fclose(in);
    snprintf(path, sizeof path, "%s/trunc%d.nc", tmpdir, k);
    f = fopen(path, "wb");
    fwrite(buf, 1, n * 2 / 3, f);
    fclose(f);
    free(buf);
    int rc = import(path, k ? "vf" : "t2m", NULL, "err.b2nd", NULL, &a);
    tap_ok(rc == CATERVA_E_CORRUPT && a == NULL && !exists(dst),
           "a truncated %s file: CORRUPT (%s)", k ? "NetCDF-4" : "NetCDF-3",
           caterva_ctx_errmsg(ctx));
  }
  snprintf(path, sizeof path, "%s/garbage.nc", tmpdir);
  f = fopen(path, "wb");
  fwrite("CDF\001\377\377\377\377garbage garbage garbage", 1, 32, f);
  fclose(f);
  tap_ok(import(path, "t2m", NULL, "err.b2nd", NULL, &a) == CATERVA_E_CORRUPT,
         "garbage after the NetCDF-3 magic: CORRUPT (%s)", caterva_ctx_errmsg(ctx));
  tap_ok(import(classic, "t2m", NULL, "err.b2nd", NULL, &a) == CATERVA_OK, "import to err.b2nd");
  caterva_array_free(a);
  {
    caterva_netcdf_params p;
    caterva_netcdf_params_init(&p);
    p.variable = "sst";
    p.array.store = CATERVA_STORE_CONTIGUOUS;
    p.array.path = dst;
    tap_ok(caterva_netcdf_import(ctx, classic, &p, NULL, &a) == CATERVA_E_EXISTS && a == NULL,
           "an existing destination: EXISTS");
    tap_ok(caterva_array_open(ctx, dst, CATERVA_OPEN_READ, &a) == CATERVA_OK &&
               strcmp(caterva_array_dtype(a), "<f4") == 0 && caterva_array_shape(a)[0] == 5,
           "... and the existing array is untouched");
    caterva_array_free(a);
  }
}

/* ---- valid ranges and _Unsigned (cf.cdl): cells planted there, by value ---------------- */

/* Items of var as doubles (n of them) into out; 1 on success. */
static int cf_values(const char *src, const char *var, double *out, int n, char *dtype,
                     caterva_netcdf_stats *st) {
  caterva_array *a = NULL;
  uint8_t buf[64];
  int ok = import(src, var, NULL, "cf.b2nd", st, &a) == CATERVA_OK &&
           caterva_array_nitems(a) == n &&
           caterva_array_to_buffer(ctx, a, buf, sizeof buf) == CATERVA_OK;
  for (int i = 0; ok && i < n; i++) {
    const char *dt = caterva_array_dtype(a);
    strcpy(dtype, dt);
    out[i] = strcmp(dt, "<f4") == 0 ? ((float *)buf)[i] : strcmp(dt, "<f8") == 0 ? ((double *)buf)[i]
             : strcmp(dt, "|u1") == 0 ? buf[i] : strcmp(dt, "<u2") == 0 ? ((uint16_t *)buf)[i]
             : strcmp(dt, "<i4") == 0 ? ((int32_t *)buf)[i] : NAN;
  }
  if (a != NULL && strcmp(var, "ub") == 0) ok &= !has_attr(a, "_Unsigned");
  if (a != NULL && strcmp(var, "ui") == 0) ok &= has_attr(a, "_Unsigned");
  if (a != NULL && strcmp(var, "vi") == 0) ok &= has_attr(a, "valid_range");
  if (a != NULL && strcmp(var, "pk") == 0) ok &= !has_attr(a, "valid_range");
  caterva_array_free(a);
  return ok;
}

static int same(const double *got, const double *want, int n) {
  for (int i = 0; i < n; i++)
    if (!(isnan(want[i]) ? isnan(got[i]) : got[i] == want[i])) return 0;
  return 1;
}

static void planted_cf(const char *src, const char *label) {
  static const struct {
    const char *var, *dtype;
    int masked;
    double want[8];
    const char *what;
  } cases[] = {
      {"ub", "|u1", 0, {128, 255, 0, 1, 127, 129, 100, 156}, "_Unsigned byte: -128 -> 128, -1 -> 255; the attribute applied, not copied"},
      {"us", "<u2", 0, {65535, 0, 1, 32767, 32768, 65534, 100, 7}, "_Unsigned short: integers keep the fill 65535 (_FillValue -1s)"},
      {"pk", "<f4", 2, {NAN, 0, (float)(100 * (double)0.01f), (float)(59999 * (double)0.01f),
              (float)(60000 * (double)0.01f), NAN, (float)(32768 * (double)0.01f),
              (float)(32767 * (double)0.01f)}, "_Unsigned packed short: fill -1s = 65535 and 60001 above valid_range (0s, -5536s = 60000) are NaN, 60000 is not"},
      {"vf", "<f4", 4, {NAN, -10, 0, 10, NAN, NAN, 9.999999f, NAN}, "float valid_min/valid_max -10/10: -11, 10.5, -10.000001f and 1e30 are NaN"},
      {"vd", "<f8", 3, {NAN, 0, 0.5, 1, NAN, NAN, -0.0, 0.25}, "double valid_range 0..1: -1e-300, 1+2^-52 and 2 are NaN"},
      {"vi", "<i4", 0, {-1, 0, 5, 10, 11, 100, -100, 3}, "int valid_range is not applied to integer results (the attribute is kept)"},
      {"pr", "<f8", 3, {NAN, -2.5, -2, 0, 2, NAN, 16383.5, NAN}, "packed short valid_min -5s compared before unpacking: -6 is NaN, -5 is -2.5"},
      {"pb", "<f4", 2, {NAN, 400, NAN, 0, 2, 254, 256, 200}, "_Unsigned packed byte with valid_max -56b = 200: 255 and 201 are NaN, 200 unpacks to 400"},
      {"ui", "<i4", 0, {-1, 0, 1, 2, 3, 4, 5, 6}, "_Unsigned = \"false\": still signed, the attribute kept"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    double got[8];
    char dtype[8] = "";
    caterva_netcdf_stats st;
    memset(&st, 0, sizeof st);
    int ok = cf_values(src, cases[k].var, got, 8, dtype, &st);
    tap_ok(ok && strcmp(dtype, cases[k].dtype) == 0 && same(got, cases[k].want, 8) &&
               st.masked == cases[k].masked,
           "%s: %s (%s): %s", label, cases[k].var, dtype, cases[k].what);
  }
}

/* ---- several variables on one grid (grid.cdl) ------------------------------------------ */

/* Names in directory dir that contain part (0 when none). */
static int dir_has(const char *dir, const char *part) {
  char cmd[1024], line[64] = "";
  FILE *f;
  snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -c -- '%s'", dir, part);
  f = popen(cmd, "r");
  if (f == NULL) return -1;
  if (fgets(line, sizeof line, f) == NULL) line[0] = 0;
  pclose(f);
  return atoi(line);
}

static const caterva_netcdf_item *grid_item(const caterva_netcdf_grid *g, const char *name) {
  for (int i = 0; g != NULL && i < g->nitems; i++)
    if (strcmp(g->items[i].name, name) == 0) return &g->items[i];
  return NULL;
}

static int grid_import(const char *src, const char *vars, const char *dir,
                       caterva_netcdf_params *p, caterva_netcdf_grid **g) {
  caterva_netcdf_params def;
  char path[512];
  if (p == NULL) {
    caterva_netcdf_params_init(&def);
    p = &def;
  }
  snprintf(path, sizeof path, "%s/%s", tmpdir, dir);
  tu_rm_tree(path);
  p->variable = vars;
  p->array.store = CATERVA_STORE_CONTIGUOUS;
  return caterva_netcdf_import_grid(ctx, src, path, p, g);
}

/* Each imported file holds its variable, item by item, with its name as attribute "name". */
static void grid_files(const char *src, const char *dir, const char *const *names, int n,
                       const char *label) {
  for (int i = 0; i < n; i++) {
    char path[512];
    caterva_array *a = NULL;
    int64_t nan = 0, bad = -1;
    static const char *const dims[] = {"time", "lat", "lon"};
    snprintf(path, sizeof path, "%s/%s/%s.b2nd", tmpdir, dir, names[i]);
    if (caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) == CATERVA_OK)
      bad = compare_var(src, names[i], a, &nan);
    tap_ok(bad == 0, "%s: %s/%s.b2nd equals libnetcdf's %s, unpacked and masked (%lld NaN)",
           label, dir, names[i], names[i], (long long)nan);
    tap_ok(a != NULL && attr_is_str(a, "name", names[i]) && dims_are(a, dims),
           "%s: %s: attribute name and dimensions (time, lat, lon)", label, names[i]);
    caterva_array_free(a);
  }
}

static int stop_in_second(void *arg, int64_t done, int64_t total) {
  (void)arg;
  return done > 60 && done < total ? CATERVA_E_INVALID : 0; /* t2m has 60 items */
}

static void grid(const char *src, const char *label) {
  caterva_netcdf_grid *g = NULL;
  caterva_netcdf_params p;
  const caterva_netcdf_item *it;
  static const char *const all[] = {"t2m", "tp", "cnt"}, *const two[] = {"cnt", "t2m"};
  char dir[512];
  int rc = grid_import(src, "*", "all.d", NULL, &g);
  tap_ok(rc == CATERVA_OK && g->nimported == 3 && g->nitems == 9,
         "%s: '*' imports 3 of the 9 variables (%s)", label, caterva_ctx_errmsg(ctx));
  grid_files(src, "all.d", all, 3, label);
  it = grid_item(g, "time_bnds");
  tap_ok(it != NULL && it->skipped != NULL &&
             strcmp(it->skipped, "on another grid: dimensions (time, nv), not (time, lat, lon)") == 0,
         "%s: time_bnds left out: %s", label, it && it->skipped ? it->skipped : "(imported)");
  it = grid_item(g, "lat");
  tap_ok(it != NULL && it->skipped != NULL && strstr(it->skipped, "coordinate") != NULL,
         "%s: lat left out as a coordinate variable", label);
  it = grid_item(g, "name");
  tap_ok(it != NULL && it->skipped != NULL && strstr(it->skipped, "not numeric") != NULL,
         "%s: name (char) left out as not numeric", label);
  it = grid_item(g, "station");
  tap_ok(it != NULL && it->skipped != NULL && strstr(it->skipped, "scalar") != NULL,
         "%s: station (a scalar) left out: %s", label, it && it->skipped ? it->skipped : "");
  it = grid_item(g, "tp");
  tap_ok(it != NULL && it->skipped == NULL && it->stats.unpacked && it->stats.masked == 2 &&
             it->stats.coords == 3, "%s: tp unpacked, 2 masked, 3 coordinates", label);
  snprintf(dir, sizeof dir, "%s/all.d", tmpdir);
  tap_ok(dir_has(dir, "b2nd") == 3 && dir_has(tmpdir, "importing") == 0,
         "%s: the directory holds 3 files, no temporary is left", label);
  caterva_netcdf_grid_free(g);
  g = NULL;
  rc = caterva_netcdf_import_grid(ctx, src, dir, &(caterva_netcdf_params){.variable = "*"}, &g);
  tap_ok(rc == CATERVA_E_INVALID && g == NULL, "%s: a memory store is refused", label);
  caterva_netcdf_params_init(&p);
  p.variable = "*";
  p.array.store = CATERVA_STORE_CONTIGUOUS;
  tap_ok(caterva_netcdf_import_grid(ctx, src, dir, &p, &g) == CATERVA_E_EXISTS && g == NULL &&
             dir_has(dir, "b2nd") == 3, "%s: an existing directory: EXISTS, untouched", label);

  rc = grid_import(src, " cnt ,t2m", "two.d", NULL, &g);
  tap_ok(rc == CATERVA_OK && g->nimported == 2 && g->nitems == 2 &&
             strcmp(g->items[0].name, "t2m") == 0, "%s: a list imports those variables", label);
  grid_files(src, "two.d", two, 2, label);
  snprintf(dir, sizeof dir, "%s/two.d", tmpdir);
  tap_ok(dir_has(dir, "b2nd") == 2, "%s: ... and only those", label);
  caterva_netcdf_grid_free(g);
  g = NULL;

  tap_ok(grid_import(src, "t2m,time_bnds", "bad.d", NULL, &g) == CATERVA_E_INVALID &&
             strstr(caterva_ctx_errmsg(ctx), "one grid") != NULL && g == NULL,
         "%s: a list over two grids: INVALID (%s)", label, caterva_ctx_errmsg(ctx));
  tap_ok(grid_import(src, "t2m,nope", "bad.d", NULL, &g) == CATERVA_E_NOTFOUND,
         "%s: an unknown variable in a list: NOTFOUND", label);
  tap_ok(grid_import(src, "t2m,name", "bad.d", NULL, &g) == CATERVA_E_UNSUPPORTED,
         "%s: a char variable in a list: UNSUPPORTED", label);
  tap_ok(grid_import(src, "t2m,t2m", "bad.d", NULL, &g) == CATERVA_E_INVALID,
         "%s: a variable named twice: INVALID", label);
  tap_ok(grid_import(src, "t2m,", "bad.d", NULL, &g) == CATERVA_E_INVALID,
         "%s: an empty name in a list: INVALID", label);
  caterva_netcdf_params_init(&p);
  p.progress = stop_in_second;
  tap_ok(grid_import(src, "*", "bad.d", &p, &g) == CATERVA_E_INVALID && g == NULL,
         "%s: stopped while importing the second variable: fails", label);
  tap_ok(dir_has(tmpdir, "bad.d") == 0, "%s: ... and leaves no directory, temporary or not",
         label);
}

int main(void) {
  char classic[512], path[512], nc4[512];
  static const char *const kinds[] = {"classic", "64-bit-offset", "cdf5", "nc4"};
  if (!caterva_netcdf_available()) return tap_skip_all("built without libnetcdf");
  snprintf(tmpdir, sizeof tmpdir, "/tmp/test_netcdf.XXXXXX");
  if (mkdtemp(tmpdir) == NULL || caterva_ctx_new(2, &ctx) != CATERVA_OK) return 1;
  for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
    if (!tap_ok(make_nc("classic", kinds[k], path, sizeof path), "ncgen -k %s classic.cdl",
                kinds[k]))
      continue;
    round_trip_all(path, kinds[k]);
    planted_classic(path, kinds[k]);
    if (k == 0) strcpy(classic, path);
  }
  if (tap_ok(make_nc("nc4", "nc4", nc4, sizeof nc4), "ncgen -k nc4 nc4.cdl")) {
    round_trip_all(nc4, "nc4.cdl");
    planted_nc4(nc4);
  }
  for (size_t k = 0; k < 2; k++) {
    const char *kind = k == 0 ? "classic" : "nc4";
    char label[32];
    snprintf(label, sizeof label, "cf.cdl %s", kind);
    if (!tap_ok(make_nc("cf", kind, path, sizeof path), "ncgen -k %s cf.cdl", kind)) continue;
    round_trip_all(path, label);
    planted_cf(path, label);
  }
  if (tap_ok(make_nc("grid", "nc4", path, sizeof path), "ncgen -k nc4 grid.cdl"))
    grid(path, "grid nc4");
  if (tap_ok(make_nc("grid", "classic", path, sizeof path), "ncgen -k classic grid.cdl"))
    grid(path, "grid classic");
  options(classic, "classic");
  progress(classic);
  errors(classic, nc4);
  tap_ok(caterva_netcdf_available() == 1, "caterva_netcdf_available");
  free(attr_bytes);
  caterva_ctx_free(ctx);
  tu_rm_tree(tmpdir);
  return tap_done();
}

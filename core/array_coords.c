/*
 * array_coords.c -- dimension coordinates stored in the array's own file.
 *
 * Layout: one user attribute (vlmetalayer) named `_coords`, a msgpack map
 *
 *   { "version": 1,
 *     "dims": [ <dim 0>, <dim 1>, ... ] }        one entry per dimension, in order
 *
 * where each entry is nil (no coordinate) or a map of
 *
 *   "kind"      "regular" | "explicit"
 *   "start"     float64            regular: label of index 0
 *   "step"      float64            regular: label(i) = start + step * i, step != 0
 *   "values"    [float64, ...]     explicit: labels of indices 0, 1, ..., strictly monotonic,
 *                                  at least as many as the extent (more: for growth)
 *   "units"     str                optional; "<unit> since <date>" makes labels instants (CF)
 *   "calendar"  str                optional; a CF calendar name (default standard)
 *
 * Readers that do not know the attribute ignore it (c-blosc2 and python-blosc2 list it among
 * the user attributes); unknown keys here are skipped, so later versions may add some. The
 * attribute is parsed from untrusted bytes with the bounds-checked readers of mpread.c.
 */
#include "array_layer_internal.h"

#include <math.h>
#include <msgpack.h>
#include <stdlib.h>

#define CAT_COORDS_ATTR "_coords"
#define CAT_COORDS_DEPTH 8   /* nesting skipped inside unknown keys */

/* One dimension's coordinate as the array owns it. */
struct cat_coord_slot {
  int kind;
  double start, step;
  int64_t nvalues;
  double *values;
  char *units;
  char *calendar;
};

static void slot_clear(cat_coord_slot *s) {
  free(s->values);
  free(s->units);
  free(s->calendar);
  memset(s, 0, sizeof *s);
}

void cat_array_coords_reset(caterva_array *a) {
  if (a->coords) {
    for (int k = 0; k < a->coords_ndim; k++) slot_clear(&a->coords[k]);
    free(a->coords);
  }
  a->coords = NULL;
  a->coords_ndim = 0;
}

static char *dup_bytes(const uint8_t *p, uint32_t n) {
  char *s;
  if (memchr(p, 0, n) != NULL) return NULL;
  s = malloc((size_t)n + 1);
  if (s == NULL) return NULL;
  memcpy(s, p, n);
  s[n] = 0;
  return s;
}

static bool key_is(const uint8_t *p, uint32_t n, const char *key) {
  return n == strlen(key) && memcmp(p, key, n) == 0;
}

/* The string value of a key into *out (malloc'ed). */
static int read_string(caterva_ctx *ctx, cat_rdr *r, int dim, const char *key, char **out) {
  const uint8_t *p;
  uint32_t n;
  if (!cat_mp_str(r, &p, &n))
    return cat_error(ctx, CATERVA_E_CORRUPT, "_coords: dimension %d: %s is not a string", dim, key);
  free(*out);
  *out = dup_bytes(p, n);
  if (*out == NULL)
    return cat_error(ctx, memchr(p, 0, n) ? CATERVA_E_CORRUPT : CATERVA_E_NOMEM,
                     "_coords: dimension %d: %s: bad string or out of memory", dim, key);
  return CATERVA_OK;
}

static int read_values(caterva_ctx *ctx, cat_rdr *r, int dim, cat_coord_slot *s) {
  uint32_t n;
  if (!cat_mp_array(r, &n) || (size_t)n > cat_rdr_left(r))
    return cat_error(ctx, CATERVA_E_CORRUPT, "_coords: dimension %d: values is not an array",
                     dim);
  free(s->values);
  s->values = malloc(((size_t)n + 1) * sizeof(double));
  if (s->values == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  for (uint32_t i = 0; i < n; i++)
    if (!cat_mp_number(r, &s->values[i]))
      return cat_error(ctx, CATERVA_E_CORRUPT, "_coords: dimension %d: values[%u] is not a number",
                       dim, i);
  s->nvalues = n;
  return CATERVA_OK;
}

/* One key of a dimension's map. */
static int read_field(caterva_ctx *ctx, cat_rdr *r, int dim, const uint8_t *k, uint32_t kn,
                      cat_coord_slot *s) {
  const uint8_t *p;
  uint32_t n;
  if (key_is(k, kn, "kind")) {
    if (!cat_mp_str(r, &p, &n)) goto bad;
    s->kind = key_is(p, n, "regular") ? CATERVA_COORD_REGULAR
              : key_is(p, n, "explicit") ? CATERVA_COORD_EXPLICIT : -1;
    if (s->kind < 0)
      return cat_error(ctx, CATERVA_E_UNSUPPORTED, "_coords: dimension %d: unknown kind", dim);
    return CATERVA_OK;
  }
  if (key_is(k, kn, "start")) return cat_mp_number(r, &s->start) ? CATERVA_OK : -1;
  if (key_is(k, kn, "step")) return cat_mp_number(r, &s->step) ? CATERVA_OK : -1;
  if (key_is(k, kn, "values")) return read_values(ctx, r, dim, s);
  if (key_is(k, kn, "units")) return read_string(ctx, r, dim, "units", &s->units);
  if (key_is(k, kn, "calendar")) return read_string(ctx, r, dim, "calendar", &s->calendar);
  if (cat_mp_skip(r, CAT_COORDS_DEPTH)) return CATERVA_OK;
bad:
  return cat_error(ctx, CATERVA_E_CORRUPT, "_coords: dimension %d: malformed entry", dim);
}

/* Is a slot's content a valid coordinate for an extent? (0, or a message on ctx) */
static int check_coord(caterva_ctx *ctx, const caterva_coord *c, int64_t extent, int dim, int rc0) {
  int rc = CATERVA_OK;
  caterva_labels l;
  if (c->kind == CATERVA_COORD_REGULAR) {
    CAT_CHECK(leave, isfinite(c->start) && isfinite(c->step) && c->step != 0.0, rc0,
              "coordinate of dimension %d: start and step must be finite, step not 0", dim);
  } else {
    CAT_CHECK(leave, c->kind == CATERVA_COORD_EXPLICIT, rc0,
              "coordinate of dimension %d: unknown kind %d", dim, c->kind);
    CAT_CHECK(leave, c->values != NULL && c->nvalues >= extent, rc0,
              "coordinate of dimension %d: %lld labels for an extent of %lld", dim,
              (long long)c->nvalues, (long long)extent);
    for (int64_t i = 0; i < c->nvalues; i++) {
      CAT_CHECK(leave, isfinite(c->values[i]), rc0,
                "coordinate of dimension %d: label %lld is not finite", dim, (long long)i);
      if (i >= 2)
        CAT_CHECK(leave, (c->values[i] > c->values[i - 1]) == (c->values[1] > c->values[0]), rc0,
                  "coordinate of dimension %d: labels are not monotonic at index %lld", dim,
                  (long long)i);
      if (i >= 1)
        CAT_CHECK(leave, c->values[i] != c->values[i - 1], rc0,
                  "coordinate of dimension %d: label %lld repeats the one before", dim,
                  (long long)i);
    }
  }
  rc = caterva_labels_init(ctx, &l, c, extent);
  if (rc < 0) rc = rc0 == CATERVA_E_CORRUPT ? CATERVA_E_CORRUPT : rc;
leave:
  return rc;
}

static caterva_coord slot_view(const cat_coord_slot *s) {
  caterva_coord c;
  memset(&c, 0, sizeof c);
  c.kind = s->kind;
  c.start = s->start;
  c.step = s->step;
  c.nvalues = s->nvalues;
  c.values = s->values;
  c.units = s->units ? s->units : "";
  c.calendar = s->calendar ? s->calendar : "";
  return c;
}

static int read_dim(caterva_ctx *ctx, cat_rdr *r, caterva_array *a, int dim) {
  int rc = CATERVA_OK;
  cat_coord_slot *s = &a->coords[dim];
  uint32_t n;
  caterva_coord c;
  if (cat_mp_nil(r)) return CATERVA_OK;
  CAT_CHECK(leave, cat_mp_map(r, &n), CATERVA_E_CORRUPT, "_coords: dimension %d: not a map", dim);
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *k;
    uint32_t kn;
    CAT_CHECK(leave, cat_mp_str(r, &k, &kn), CATERVA_E_CORRUPT,
              "_coords: dimension %d: a key is not a string", dim);
    rc = read_field(ctx, r, dim, k, kn, s);
    if (rc == -1) CAT_FAIL(leave, CATERVA_E_CORRUPT, "_coords: dimension %d: bad number", dim);
    if (rc < 0) goto leave;
  }
  c = slot_view(s);
  if (s->kind == CATERVA_COORD_NONE) CAT_FAIL(leave, CATERVA_E_CORRUPT, "_coords: dimension %d: no kind", dim);
  CAT_TRY(leave, check_coord(ctx, &c, a->g.shape[dim], dim, CATERVA_E_CORRUPT));
leave:
  if (rc < 0) slot_clear(s);
  return rc;
}

static int parse_coords(caterva_ctx *ctx, caterva_array *a, const uint8_t *v, int32_t len) {
  int rc = CATERVA_OK;
  cat_rdr r;
  uint32_t n, nd;
  int seen = 0;
  cat_rdr_init(&r, v, (size_t)len);
  CAT_CHECK(leave, cat_mp_map(&r, &n), CATERVA_E_CORRUPT, "_coords is not a msgpack map");
  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *k;
    uint32_t kn;
    int64_t ver;
    CAT_CHECK(leave, cat_mp_str(&r, &k, &kn), CATERVA_E_CORRUPT, "_coords: a key is not a string");
    if (key_is(k, kn, "version")) {
      CAT_CHECK(leave, cat_mp_int(&r, &ver), CATERVA_E_CORRUPT, "_coords: bad version");
      CAT_CHECK(leave, ver == 1, CATERVA_E_UNSUPPORTED, "_coords: version %lld", (long long)ver);
    } else if (key_is(k, kn, "dims") && !seen) {
      seen = 1;
      CAT_CHECK(leave, cat_mp_array(&r, &nd) && nd == (uint32_t)a->g.ndim, CATERVA_E_CORRUPT,
                "_coords: dims is not an array of %d entries", a->g.ndim);
      for (int d = 0; d < a->g.ndim; d++) CAT_TRY(leave, read_dim(ctx, &r, a, d));
    } else {
      CAT_CHECK(leave, cat_mp_skip(&r, CAT_COORDS_DEPTH), CATERVA_E_CORRUPT, "_coords: malformed");
    }
  }
leave:
  return rc;
}

/* Read the attribute once. */
static int load_coords(caterva_ctx *ctx, caterva_array *a) {
  int rc = CATERVA_OK;
  uint8_t *v = NULL;
  int32_t len = 0;
  if (a->coords) return CATERVA_OK;
  a->coords = calloc((size_t)(a->g.ndim > 0 ? a->g.ndim : 1), sizeof *a->coords);
  CAT_CHECK(leave, a->coords != NULL, CATERVA_E_NOMEM, "out of memory");
  a->coords_ndim = a->g.ndim;
  rc = caterva_schunk_vlmeta_get(ctx, a->sc, CAT_COORDS_ATTR, &v, &len);
  if (rc == CATERVA_E_NOTFOUND) {
    rc = CATERVA_OK;
    goto leave;
  }
  if (rc < 0) goto leave;
  rc = parse_coords(ctx, a, v, len);
leave:
  free(v);
  if (rc < 0) cat_array_coords_reset(a);
  return rc;
}

int caterva_array_get_coord(caterva_ctx *ctx, caterva_array *a, int dim, caterva_coord *out) {
  int rc = CATERVA_OK;
  memset(out, 0, sizeof *out);
  out->units = out->calendar = "";
  CAT_CHECK(leave, a != NULL && dim >= 0 && dim < a->g.ndim, CATERVA_E_INVALID,
            "get_coord: no dimension %d", dim);
  CAT_TRY(leave, load_coords(ctx, a));
  if (a->coords[dim].kind != CATERVA_COORD_NONE) *out = slot_view(&a->coords[dim]);
leave:
  return rc;
}

static int pack_str(msgpack_packer *pk, const char *s) {
  size_t n = strlen(s);
  return msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, s, n);
}

static int pack_slot(msgpack_packer *pk, const cat_coord_slot *s) {
  int nkeys = 1 + (s->kind == CATERVA_COORD_REGULAR ? 2 : 1) + (s->units && s->units[0]) +
              (s->calendar && s->calendar[0]);
  int e = 0;
  if (s->kind == CATERVA_COORD_NONE) return msgpack_pack_nil(pk);
  e |= msgpack_pack_map(pk, (size_t)nkeys);
  e |= pack_str(pk, "kind") | pack_str(pk, s->kind == CATERVA_COORD_REGULAR ? "regular" : "explicit");
  if (s->kind == CATERVA_COORD_REGULAR) {
    e |= pack_str(pk, "start") | msgpack_pack_double(pk, s->start);
    e |= pack_str(pk, "step") | msgpack_pack_double(pk, s->step);
  } else {
    e |= pack_str(pk, "values") | msgpack_pack_array(pk, (size_t)s->nvalues);
    for (int64_t i = 0; i < s->nvalues && !e; i++) e |= msgpack_pack_double(pk, s->values[i]);
  }
  if (s->units && s->units[0]) e |= pack_str(pk, "units") | pack_str(pk, s->units);
  if (s->calendar && s->calendar[0]) e |= pack_str(pk, "calendar") | pack_str(pk, s->calendar);
  return e;
}

/* Write the attribute from the slots (removing it when no dimension has a coordinate). */
static int store_coords(caterva_ctx *ctx, caterva_array *a) {
  int rc = CATERVA_OK, any = 0, e;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  for (int d = 0; d < a->g.ndim; d++) any |= a->coords[d].kind != CATERVA_COORD_NONE;
  if (!any) {
    rc = caterva_schunk_vlmeta_delete(ctx, a->sc, CAT_COORDS_ATTR);
    if (rc == CATERVA_E_NOTFOUND) rc = CATERVA_OK;
    goto leave;
  }
  e = msgpack_pack_map(&pk, 2) || pack_str(&pk, "version") || msgpack_pack_int(&pk, 1) ||
      pack_str(&pk, "dims") || msgpack_pack_array(&pk, (size_t)a->g.ndim);
  for (int d = 0; d < a->g.ndim && !e; d++) e = pack_slot(&pk, &a->coords[d]);
  CAT_CHECK(leave, !e, CATERVA_E_NOMEM, "out of memory");
  CAT_CHECK(leave, sb.size <= INT32_MAX, CATERVA_E_INVALID, "coordinates too large (%zu bytes)",
            sb.size);
  rc = caterva_schunk_vlmeta_set(ctx, a->sc, CAT_COORDS_ATTR, sb.data, (int32_t)sb.size);
leave:
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

static char *dup_opt(const char *s) {
  size_t n = s ? strlen(s) : 0;
  char *d = malloc(n + 1);
  if (d) {
    if (n) memcpy(d, s, n);
    d[n] = 0;
  }
  return d;
}

/* Copy c into a fresh slot. */
static int fill_slot(caterva_ctx *ctx, cat_coord_slot *s, const caterva_coord *c) {
  int rc = CATERVA_OK;
  size_t nb;
  memset(s, 0, sizeof *s);
  s->kind = c->kind;
  s->start = c->start;
  s->step = c->step;
  s->units = dup_opt(c->units);
  s->calendar = dup_opt(c->calendar);
  CAT_CHECK(leave, s->units && s->calendar, CATERVA_E_NOMEM, "out of memory");
  if (c->kind != CATERVA_COORD_EXPLICIT) goto leave;
  CAT_CHECK(leave, cat_mulsz((size_t)c->nvalues + 1, sizeof(double), &nb), CATERVA_E_OVERFLOW,
            "too many labels");
  s->values = malloc(nb);
  CAT_CHECK(leave, s->values != NULL, CATERVA_E_NOMEM, "out of memory");
  if (c->nvalues) memcpy(s->values, c->values, (size_t)c->nvalues * sizeof(double));
  s->nvalues = c->nvalues;
leave:
  if (rc < 0) slot_clear(s);
  return rc;
}

int caterva_array_set_coord(caterva_ctx *ctx, caterva_array *a, int dim, const caterva_coord *c) {
  int rc = CATERVA_OK;
  cat_coord_slot fresh, old;
  memset(&fresh, 0, sizeof fresh);
  CAT_CHECK(leave, a != NULL && dim >= 0 && dim < a->g.ndim, CATERVA_E_INVALID,
            "set_coord: no dimension %d", dim);
  CAT_TRY(leave, load_coords(ctx, a));
  if (c != NULL && c->kind != CATERVA_COORD_NONE) {
    CAT_CHECK(leave, c->kind != CATERVA_COORD_EXPLICIT || c->nvalues <= UINT32_MAX,
              CATERVA_E_INVALID, "set_coord: at most 2^32-1 labels");
    CAT_TRY(leave, check_coord(ctx, c, a->g.shape[dim], dim, CATERVA_E_INVALID));
    CAT_TRY(leave, fill_slot(ctx, &fresh, c));
  }
  old = a->coords[dim];
  a->coords[dim] = fresh;
  rc = store_coords(ctx, a);
  if (rc < 0) {
    a->coords[dim] = old; /* the attribute is unchanged: so is the cache */
    goto leave;
  }
  slot_clear(&old);
  return rc;
leave:
  slot_clear(&fresh);
  return rc;
}

int cat_array_coords_allow_shape(caterva_ctx *ctx, caterva_array *a, const int64_t *new_shape) {
  int rc = CATERVA_OK;
  CAT_TRY(leave, load_coords(ctx, a));
  for (int d = 0; d < a->g.ndim; d++) {
    const cat_coord_slot *s = &a->coords[d];
    CAT_CHECK(leave, s->kind != CATERVA_COORD_EXPLICIT || new_shape[d] <= s->nvalues,
              CATERVA_E_RANGE,
              "dimension %d has explicit labels for %lld indices; give the labels of the new "
              "indices first (caterva_set_coords)", d, (long long)s->nvalues);
  }
leave:
  return rc;
}

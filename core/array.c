/*
 * array.c -- N-dimensional arrays over a super-chunk: create, open, buffer I/O, slices,
 * resize, append, copy, attributes and dimension names.
 *
 * Chunk layout and padding follow spec §5.2 (see array_iter.c). Writers here fill padding
 * with zeros, except arrays created with a fill value, whose chunks are repeated-value chunks
 * (padding included), as the reference's b2nd_full does.
 */
#include "array_layer_internal.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>

#define CAT_DIMS_ATTR "_ARRAY_DIMENSIONS"

void caterva_array_params_init(caterva_array_params *p) {
  memset(p, 0, sizeof *p);
  caterva_cparams_init(&p->cparams);
  p->store = CATERVA_STORE_MEMORY;
}

/* ---- fill value ----------------------------------------------------------------------- */

#define CAT_FILL_ATTR "_FillValue"

/* Kind of a's items for fill conversions (CATERVA_KIND_*; OPAQUE when unknown). */
static int fill_kind(const caterva_array *a) {
  caterva_dtype_info info;
  if (a->dtype == NULL || caterva_dtype_parse(a->dtype, &info) != CATERVA_OK || info.big_endian ||
      a->g.itemsize > 8)
    return CATERVA_KIND_OPAQUE;
  return info.kind;
}

/* An integer as an item of kind/itemsize; false when it does not fit. */
static bool int_to_item(int64_t v, int kind, int itemsize, uint8_t *out) {
  int bits = itemsize * 8;
  if (kind == CATERVA_KIND_BOOL && (v < 0 || v > 1)) return false;
  if (kind == CATERVA_KIND_UINT && (v < 0 || (bits < 64 && v >> bits != 0))) return false;
  if (kind == CATERVA_KIND_INT && bits < 64 &&
      (v < -((int64_t)1 << (bits - 1)) || v >= ((int64_t)1 << (bits - 1))))
    return false;
  for (int i = 0; i < itemsize; i++) out[i] = (uint8_t)((uint64_t)v >> (8 * i));
  return true;
}

/* Parse the `_FillValue` attribute into item; false when absent or unusable for a. */
static bool parse_fill(const uint8_t *v, int32_t len, const caterva_array *a, uint8_t *item) {
  cat_rdr r;
  int64_t i;
  double d;
  int kind = fill_kind(a);
  cat_rdr_init(&r, v, (size_t)len);
  if (kind == CATERVA_KIND_FLOAT) {
    if (!cat_mp_number(&r, &d)) return false;
    if (a->g.itemsize == 4) {
      float f = (float)d;
      memcpy(item, &f, 4);
      return true;
    }
    if (a->g.itemsize == 8) {
      memcpy(item, &d, 8);
      return true;
    }
    return false;
  }
  if (kind != CATERVA_KIND_INT && kind != CATERVA_KIND_UINT && kind != CATERVA_KIND_BOOL)
    return false;
  return cat_mp_int(&r, &i) && int_to_item(i, kind, a->g.itemsize, item);
}

static bool has_vlmeta(const caterva_schunk *sc, const char *name) {
  for (int k = 0; k < caterva_schunk_vlmeta_count(sc); k++)
    if (strcmp(caterva_schunk_vlmeta_name(sc, k), name) == 0) return true;
  return false;
}

static int load_fill(caterva_ctx *ctx, caterva_array *a) {
  uint8_t *v = NULL, item[CAT_FILL_MAX] = {0};
  int32_t len = 0;
  memset(a->fill, 0, sizeof a->fill);
  a->fill_stored = 0;
  /* none: the default, without the error message a failed get formats (a tenth of a small
   * array's open in a fresh process, vsnprintf's first call) */
  if (!has_vlmeta(a->sc, CAT_FILL_ATTR)) return CATERVA_OK;
  if (caterva_schunk_vlmeta_get(ctx, a->sc, CAT_FILL_ATTR, &v, &len) < 0) {
    if (ctx != NULL) ctx->errmsg[0] = '\0';
    return CATERVA_OK; /* none, or unreadable: the default */
  }
  if (parse_fill(v, len, a, item)) {
    memcpy(a->fill, item, sizeof item);
    a->fill_stored = 1;
  }
  free(v);
  return CATERVA_OK;
}

int caterva_array_get_fill(const caterva_array *a, void *item, int cap) {
  if (a == NULL || item == NULL || cap < a->g.itemsize) return CATERVA_E_INVALID;
  memset(item, 0, (size_t)a->g.itemsize);
  memcpy(item, a->fill, a->g.itemsize < CAT_FILL_MAX ? (size_t)a->g.itemsize : CAT_FILL_MAX);
  return a->fill_stored;
}

int caterva_array_set_fill(caterva_ctx *ctx, caterva_array *a, const void *item, int persist) {
  int rc = CATERVA_OK, kind;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  const uint8_t *p = item;
  int64_t iv = 0;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  CAT_CHECK(leave, a != NULL && item != NULL, CATERVA_E_INVALID, "set_fill: NULL argument");
  kind = fill_kind(a);
  CAT_CHECK(leave, a->g.itemsize <= CAT_FILL_MAX, CATERVA_E_UNSUPPORTED,
            "no fill value for %d-byte items", a->g.itemsize);
  if (!persist) {
    memcpy(a->fill, item, (size_t)a->g.itemsize);
    goto leave;
  }
  if (kind == CATERVA_KIND_FLOAT && (a->g.itemsize == 4 || a->g.itemsize == 8)) {
    double d;
    float f;
    if (a->g.itemsize == 4) {
      memcpy(&f, p, 4);
      d = f;
    } else {
      memcpy(&d, p, 8);
    }
    CAT_CHECK(leave, msgpack_pack_double(&pk, d) == 0, CATERVA_E_NOMEM, "out of memory");
  } else if (kind == CATERVA_KIND_INT || kind == CATERVA_KIND_UINT || kind == CATERVA_KIND_BOOL) {
    uint64_t u = 0;
    for (int i = a->g.itemsize - 1; i >= 0; i--) u = u << 8 | p[i];
    if (kind == CATERVA_KIND_INT && a->g.itemsize < 8 && (u >> (a->g.itemsize * 8 - 1) & 1))
      u |= ~(uint64_t)0 << (a->g.itemsize * 8); /* sign-extend */
    CAT_CHECK(leave, kind == CATERVA_KIND_INT || u <= INT64_MAX, CATERVA_E_UNSUPPORTED,
              "fill values above 2^63 - 1 are not supported");
    iv = (int64_t)u;
    CAT_CHECK(leave, msgpack_pack_int64(&pk, iv) == 0, CATERVA_E_NOMEM, "out of memory");
  } else {
    CAT_FAIL(leave, CATERVA_E_UNSUPPORTED, "no fill value for dtype %s",
             a->dtype ? a->dtype : "(none)");
  }
  CAT_TRY(leave, caterva_schunk_vlmeta_set(ctx, a->sc, CAT_FILL_ATTR, sb.data, (int32_t)sb.size));
  memcpy(a->fill, item, (size_t)a->g.itemsize);
  a->fill_stored = 1;
leave:
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

/* Box checks shared by get/set_slice: 0 <= start <= stop <= shape; *nbytes = box bytes. */
static int check_box(caterva_ctx *ctx, const cat_geom *g, const int64_t *start,
                     const int64_t *stop, int64_t *nbytes) {
  int rc = CATERVA_OK;
  int64_t n = g->itemsize;
  CAT_CHECK(leave, g->ndim == 0 || (start != NULL && stop != NULL), CATERVA_E_INVALID,
            "start and stop are required");
  for (int k = 0; k < g->ndim; k++) {
    CAT_CHECK(leave, 0 <= start[k] && start[k] <= stop[k] && stop[k] <= g->shape[k],
              CATERVA_E_RANGE, "box [%lld, %lld) out of range 0..%lld in dimension %d",
              (long long)start[k], (long long)stop[k], (long long)g->shape[k], k);
    /* fits: every geometry's extents, zeros left out, multiply to at most 2^63 bytes
     * (cat_meta_validate, for every shape an array is made, opened or resized to) */
    n *= stop[k] - start[k];
  }
  *nbytes = n;
leave:
  return rc;
}

/* Copy between a chunk image (blocks in C order) and a C-order buffer covering the box
 * [bstart, bstart + bshape): the part [lo, hi) of chunk cc. to_chunk selects the direction;
 * buf == NULL with to_chunk zeroes [lo, hi) in the chunk. */
static void chunk_copy(const cat_geom *g, const int64_t *cc, uint8_t *chunkbuf, const int64_t *lo,
                       const int64_t *hi, uint8_t *buf, const int64_t *bstart,
                       const int64_t *bshape, int to_chunk) {
  int nd = g->ndim;
  int32_t b0[CATERVA_MAX_DIM], b1[CATERVA_MAX_DIM], bc[CATERVA_MAX_DIM];
  int64_t base[CATERVA_MAX_DIM], origin[CATERVA_MAX_DIM] = {0}, blo[CATERVA_MAX_DIM] = {0},
      bhi[CATERVA_MAX_DIM] = {0};
  for (int k = 0; k < nd; k++) {
    base[k] = cc[k] * g->chunkshape[k];
    b0[k] = (int32_t)((lo[k] - base[k]) / g->blockshape[k]);
    b1[k] = (int32_t)cat_ceil_div64(hi[k] - base[k], g->blockshape[k]);
    bc[k] = b0[k];
  }
  for (;;) {
    int64_t nb = 0;
    int k;
    for (k = 0; k < nd; k++) {
      nb = nb * g->blockgrid[k] + bc[k];
      origin[k] = base[k] + (int64_t)bc[k] * g->blockshape[k];
      blo[k] = origin[k] > lo[k] ? origin[k] : lo[k];
      bhi[k] = origin[k] + g->blockshape[k] < hi[k] ? origin[k] + g->blockshape[k] : hi[k];
    }
    cat_copy_box(g, chunkbuf + (size_t)nb * (size_t)g->blocksize, origin, blo, bhi, buf, bstart,
                 bshape, to_chunk);
    for (k = nd - 1; k >= 0; k--) {
      if (++bc[k] < b1[k]) break;
      bc[k] = b0[k];
    }
    if (k < 0) break;
  }
}

/* The valid (non-padding) items of chunk cc: [lo, hi). */
static void chunk_region(const cat_geom *g, const int64_t *cc, int64_t *lo, int64_t *hi) {
  for (int k = 0; k < g->ndim; k++) {
    lo[k] = cc[k] * g->chunkshape[k];
    hi[k] = lo[k] + g->chunkshape[k] < g->shape[k] ? lo[k] + g->chunkshape[k] : g->shape[k];
  }
}

/* ---- the array object ------------------------------------------------------------------ */

void caterva_array_free(caterva_array *a) {
  if (a == NULL) return;
  caterva_schunk_free(a->sc);
  cat_wcache_free(a->wc);
  cat_array_coords_reset(a);
  cat_bs_free(a->bs);
  free(a->dtype);
  free(a);
}

int caterva_array_from_schunk(caterva_ctx *ctx, caterva_schunk *sc, caterva_array **out) {
  int rc = CATERVA_OK;
  caterva_array *a = NULL;
  *out = NULL;
  CAT_CHECK(leave, sc != NULL, CATERVA_E_INVALID, "no super-chunk");
  a = calloc(1, sizeof *a);
  CAT_CHECK(leave, a != NULL, CATERVA_E_NOMEM, "out of memory");
  a->sc = sc;
  sc = NULL; /* owned by a from here on */
  CAT_TRY(leave, cat_array_load_meta(ctx, a));
  CAT_TRY(leave, load_fill(ctx, a));
  cat_sc_set_edit_hook(a->sc, cat_bs_edit_hook, cat_bs_remap_hook, a);
  CAT_TRY(leave, cat_bs_load(ctx, a));
leave:
  if (rc < 0) {
    caterva_schunk_free(sc);
    caterva_array_free(a);
  } else {
    *out = a;
  }
  return rc;
}

int caterva_array_open(caterva_ctx *ctx, const char *path, int mode, caterva_array **out) {
  return caterva_array_open_ex(ctx, path, mode, NULL, out);
}

int caterva_array_open_ex(caterva_ctx *ctx, const char *path, int mode,
                          const caterva_remote_opts *o, caterva_array **out) {
  int rc = CATERVA_OK;
  caterva_schunk *sc = NULL;
  *out = NULL;
  CAT_TRY(leave, caterva_schunk_open_ex(ctx, path, mode, o, &sc));
  rc = caterva_array_from_schunk(ctx, sc, out);
  if (rc >= 0 && o != NULL) caterva_array_set_block_checks(*out, o->block_checks);
leave:
  return rc;
}

int caterva_array_save(caterva_ctx *ctx, caterva_array *a, const char *path, int store) {
  int rc = CATERVA_OK;
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  rc = caterva_schunk_save(ctx, a->sc, path, store);
leave:
  return rc;
}

int caterva_array_ndim(const caterva_array *a) { return a->g.ndim; }
const int64_t *caterva_array_shape(const caterva_array *a) { return a->g.shape; }
const int32_t *caterva_array_chunkshape(const caterva_array *a) { return a->g.chunkshape; }
const int32_t *caterva_array_blockshape(const caterva_array *a) { return a->g.blockshape; }
int caterva_array_itemsize(const caterva_array *a) { return a->g.itemsize; }
const char *caterva_array_dtype(const caterva_array *a) { return a->dtype; }
int64_t caterva_array_nitems(const caterva_array *a) { return a->g.nitems; }
caterva_schunk *caterva_array_schunk(caterva_array *a) { return a->sc; }

/* ---- creation ------------------------------------------------------------------------ */

/* Work out the metalayer, item size and dtype of a new array from p (shape from shape, which
 * may differ from p->shape for copies). dtypebuf receives the dtype string. */
static int resolve_params(caterva_ctx *ctx, const caterva_array_params *p, int ndim,
                          const int64_t *shape, int itemsize, const char *dtype,
                          cat_array_meta *m, char *dtypebuf, size_t dtypecap) {
  int rc = CATERVA_OK;
  caterva_dtype_info info;
  memset(m, 0, sizeof *m);
  CAT_CHECK(leave, ndim >= 0 && ndim <= CATERVA_MAX_DIM, CATERVA_E_INVALID,
            "ndim %d not in 0..%d", ndim, CATERVA_MAX_DIM);
  m->ndim = ndim;
  for (int k = 0; k < ndim; k++) {
    CAT_CHECK(leave, shape[k] >= 0, CATERVA_E_INVALID, "negative extent in dimension %d", k);
    CAT_CHECK(leave, p->chunkshape[k] >= 0 && p->blockshape[k] >= 0, CATERVA_E_INVALID,
              "negative chunk or block extent in dimension %d", k);
    m->shape[k] = shape[k];
    m->chunkshape[k] = p->chunkshape[k];
    m->blockshape[k] = p->blockshape[k];
  }
  if (dtype != NULL) {
    if (caterva_dtype_canonical(dtype, dtypebuf, dtypecap) == CATERVA_OK) {
      caterva_dtype_parse(dtypebuf, &info);
      if (itemsize == 0) itemsize = info.itemsize;
      CAT_CHECK(leave, info.itemsize == itemsize, CATERVA_E_INVALID,
                "dtype %s has %d-byte items, not %d", dtype, info.itemsize, itemsize);
    } else {
      /* Text we do not understand (e.g. a structured type): kept as is, opaque. */
      CAT_CHECK(leave, strlen(dtype) < dtypecap, CATERVA_E_INVALID, "dtype string too long");
      strcpy(dtypebuf, dtype);
    }
  }
  CAT_CHECK(leave, itemsize >= 1 && itemsize <= 255, CATERVA_E_INVALID,
            "item size %d not in 1..255 (give itemsize or a dtype)", itemsize);
  if (dtype == NULL) cat_dtype_default(itemsize, dtypebuf, dtypecap);
  m->dtype = dtypebuf;
  m->dtype_len = strlen(dtypebuf);
  CAT_TRY(leave, cat_default_partition(ctx, ndim, m->shape, itemsize, m->chunkshape,
                                       m->blockshape));
  for (int k = 0; k < ndim; k++)
    CAT_CHECK(leave, m->chunkshape[k] > 0 && m->blockshape[k] > 0, CATERVA_E_INVALID,
              "chunk and block extents must be positive (dimension %d)", k);
  rc = itemsize;
leave:
  return rc;
}

/* Create the super-chunk with both metalayers (caterva only when ndim <= 8) and an array
 * object around it, with no chunks yet. */
static int new_array(caterva_ctx *ctx, const cat_array_meta *m, int itemsize,
                     const caterva_cparams *cp_in, int store, const char *path,
                     caterva_array **out) {
  int rc = CATERVA_OK;
  caterva_array *a = NULL;
  caterva_cparams cp = *cp_in;
  uint8_t *buf = NULL;
  size_t len, cap = cat_meta_b2nd_size(m->ndim, m->dtype_len);
  *out = NULL;
  CAT_CHECK(leave, store == CATERVA_STORE_MEMORY || path != NULL, CATERVA_E_INVALID,
            "a file store needs a path");
  a = calloc(1, sizeof *a);
  buf = malloc(cap);
  CAT_CHECK(leave, a != NULL && buf != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, cat_geom_init(ctx, &a->g, m, itemsize));
  a->dtype = cat_strndup(m->dtype, m->dtype_len);
  CAT_CHECK(leave, a->dtype != NULL, CATERVA_E_NOMEM, "out of memory");
  cp.typesize = itemsize;
  cp.blocksize = a->g.blocksize;
  CAT_TRY(leave, caterva_schunk_new(ctx, &cp, a->g.chunksize, store,
                                    store == CATERVA_STORE_MEMORY ? NULL : path, &a->sc));
  if (m->ndim <= CAT_CATERVA_MAX_DIM) {
    CAT_TRY(leave, cat_meta_encode_caterva(ctx, m, buf, cap, &len));
    CAT_TRY(leave, caterva_schunk_meta_add(ctx, a->sc, CAT_META_CATERVA, buf, (int32_t)len));
    a->has_caterva = 1;
  }
  CAT_TRY(leave, cat_meta_encode_b2nd(ctx, m, buf, cap, &len));
  CAT_TRY(leave, caterva_schunk_meta_add(ctx, a->sc, CAT_META_B2ND, buf, (int32_t)len));
  a->has_b2nd = 1;
  cat_sc_set_edit_hook(a->sc, cat_bs_edit_hook, cat_bs_remap_hook, a);
  CAT_TRY(leave, cat_bs_enable_new(ctx, a));
leave:
  free(buf);
  if (rc < 0) caterva_array_free(a);
  else *out = a;
  return rc;
}

static int new_array_from_params(caterva_ctx *ctx, const caterva_array_params *p,
                                 caterva_array **out) {
  int rc = CATERVA_OK;
  cat_array_meta m;
  char dtype[CATERVA_DTYPE_MAX + 1];
  *out = NULL;
  CAT_CHECK(leave, p != NULL, CATERVA_E_INVALID, "no parameters");
  CAT_TRY(leave, rc = resolve_params(ctx, p, p->ndim, p->shape, p->itemsize, p->dtype, &m, dtype,
                                     sizeof dtype));
  rc = new_array(ctx, &m, rc, &p->cparams, p->store, p->path, out);
leave:
  return rc;
}

/* Append n copies of one special chunk, in one edit of the super-chunk (a file store
 * writes the stored copies of a value fill in large writes, or sparse files synced once). */
static int append_special(caterva_ctx *ctx, caterva_array *a, int kind, const void *value,
                          int64_t n) {
  int rc = CATERVA_OK;
  int64_t *map = NULL, old = caterva_schunk_nchunks(a->sc);
  uint8_t chunk[CATERVA_CHUNK_HEADER_SIZE + 256];
  int32_t cbytes = caterva_chunk_make_special(kind, a->g.chunksize, a->g.itemsize,
                                              a->g.blocksize, value, chunk, sizeof chunk);
  CAT_TRY(leave, cbytes);
  if (n <= 1) { /* one chunk (a copy chunk by chunk): no map of the whole index */
    int64_t r = n == 1 ? caterva_schunk_append_chunk(ctx, a->sc, chunk, cbytes) : 0;
    rc = r < 0 ? (int)r : CATERVA_OK;
    goto leave;
  }
  map = malloc((size_t)(old + n) * sizeof *map);
  CAT_CHECK(leave, map != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int64_t i = 0; i < old + n; i++) map[i] = i < old ? i : -1; /* the old chunks stay */
  rc = cat_sc_remap(ctx, a->sc, map, old + n, chunk, cbytes);
leave:
  free(map);
  return rc;
}

/* The special chunk kind whose chunks read as the item v (a's itemsize bytes) repeated: zeros,
 * the NaN that a NaN chunk reads as (so that such chunks are index entries, not 40 stored bytes
 * each), else a repeated value. */
static int item_special(const caterva_array *a, const uint8_t *v) {
  uint8_t nan[8];
  int is = a->g.itemsize, zero = 1;
  for (int i = 0; i < is; i++) zero &= v[i] == 0;
  if (zero) return CATERVA_SPECIAL_ZERO;
  if (is != 4 && is != 8) return CATERVA_SPECIAL_VALUE;
  cat_fill_items(nan, 1, is, CATERVA_SPECIAL_NAN, NULL);
  return memcmp(v, nan, (size_t)is) == 0 ? CATERVA_SPECIAL_NAN : CATERVA_SPECIAL_VALUE;
}

/* Check the fill mode of caterva_array_create against a's dtype; the special kind. */
static int create_kind(caterva_ctx *ctx, const caterva_array *a, int fill, const void *value) {
  int rc = CATERVA_OK, kind = CATERVA_SPECIAL_ZERO;
  switch (fill) {
  case CATERVA_FILL_ZEROS: kind = CATERVA_SPECIAL_ZERO; break;
  case CATERVA_FILL_UNINIT: kind = CATERVA_SPECIAL_UNINIT; break;
  case CATERVA_FILL_NAN: kind = CATERVA_SPECIAL_NAN; break;
  case CATERVA_FILL_VALUE: kind = CATERVA_SPECIAL_VALUE; break;
  default: CAT_FAIL(leave, CATERVA_E_INVALID, "unknown fill mode %d", fill);
  }
  if (kind == CATERVA_SPECIAL_NAN) {
    caterva_dtype_info info;
    caterva_dtype_parse(a->dtype, &info);
    CAT_CHECK(leave, (a->g.itemsize == 4 || a->g.itemsize == 8) &&
                         (info.kind == CATERVA_KIND_FLOAT || info.kind == CATERVA_KIND_BYTES),
              CATERVA_E_INVALID, "NaN fill needs float32 or float64 items");
  }
  if (kind == CATERVA_SPECIAL_VALUE) kind = item_special(a, value);
  rc = kind;
leave:
  return rc;
}

int caterva_array_create(caterva_ctx *ctx, const caterva_array_params *p, int fill,
                         const void *fill_value, caterva_array **out) {
  int rc = CATERVA_OK;
  caterva_array *a = NULL;
  int kind, own = 0;
  *out = NULL;
  CAT_CHECK(leave, fill != CATERVA_FILL_VALUE || fill_value != NULL, CATERVA_E_INVALID,
            "a fill value is required");
  CAT_TRY(leave, new_array_from_params(ctx, p, &a));
  CAT_TRY(leave, kind = create_kind(ctx, a, fill, fill_value));
  /* one commit for all the chunks of a file store, statistics included */
  CAT_TRY(leave, own = cat_array_txn_enter(ctx, a));
  rc = append_special(ctx, a, kind, fill_value, a->g.nchunks);
  CAT_TRY(leave, cat_array_txn_leave(ctx, a, own, rc));
  if (p->store != CATERVA_STORE_MEMORY)
    CAT_TRY(leave, caterva_schunk_compact(ctx, a->sc, 1)); /* the first, empty index */
  rc = CATERVA_OK;
leave:
  if (rc < 0) caterva_array_free(a);
  else *out = a;
  return rc;
}

int caterva_array_from_buffer(caterva_ctx *ctx, const caterva_array_params *p, const void *buf,
                              int64_t buflen, caterva_array **out) {
  int rc = CATERVA_OK, own = 0;
  caterva_array *a = NULL;
  uint8_t *chunkbuf = NULL;
  int64_t cc[CATERVA_MAX_DIM], lo[CATERVA_MAX_DIM], hi[CATERVA_MAX_DIM];
  *out = NULL;
  CAT_TRY(leave, new_array_from_params(ctx, p, &a));
  CAT_TRY(leave, own = cat_array_txn_enter(ctx, a));
  CAT_CHECK(leave, buflen == a->g.nitems * a->g.itemsize, CATERVA_E_INVALID,
            "buffer holds %lld bytes, the array %lld", (long long)buflen,
            (long long)(a->g.nitems * a->g.itemsize));
  CAT_CHECK(leave, buf != NULL || buflen == 0, CATERVA_E_INVALID, "no buffer");
  if (a->g.nchunks > 0) {
    chunkbuf = malloc((size_t)a->g.chunksize);
    CAT_CHECK(leave, chunkbuf != NULL, CATERVA_E_NOMEM, "out of memory");
  }
  for (int64_t n = 0; n < a->g.nchunks; n++) {
    cat_geom_chunk_coords(&a->g, n, cc);
    chunk_region(&a->g, cc, lo, hi);
    memset(chunkbuf, 0, (size_t)a->g.chunksize); /* padding */
    chunk_copy(&a->g, cc, chunkbuf, lo, hi, (uint8_t *)buf, (const int64_t[CATERVA_MAX_DIM]){0},
               a->g.shape, 1);
    cat_bs_hint(a, n, chunkbuf);
    rc = (int)caterva_schunk_append_buffer(ctx, a->sc, chunkbuf, a->g.chunksize);
    cat_bs_hint(a, -1, NULL);
    CAT_TRY(leave, rc);
  }
  rc = CATERVA_OK;
leave:
  if (a != NULL) rc = cat_array_txn_leave(ctx, a, own, rc);
  free(chunkbuf);
  if (rc < 0) caterva_array_free(a);
  else *out = a;
  return rc;
}

/* ---- reading ------------------------------------------------------------------------- */

int caterva_array_get_slice(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                            const int64_t *stop, void *buf, int64_t cap) {
  int rc = CATERVA_OK;
  int64_t nbytes, bshape[CATERVA_MAX_DIM], zero[CATERVA_MAX_DIM] = {0};
  caterva_block_iter *it = NULL;
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  CAT_TRY(leave, check_box(ctx, &a->g, start, stop, &nbytes));
  CAT_CHECK(leave, cap >= nbytes, CATERVA_E_NOSPACE, "the slice needs %lld bytes, got %lld",
            (long long)nbytes, (long long)cap);
  if (nbytes == 0) goto leave;
  for (int k = 0; k < a->g.ndim; k++) bshape[k] = stop[k] - start[k];
  CAT_TRY(leave, caterva_block_iter_new(ctx, a, start, stop, 0, &it));
  rc = cat_block_iter_read_all(it, buf, a->g.ndim ? start : zero, bshape);
leave:
  caterva_block_iter_free(it);
  return rc < 0 ? rc : CATERVA_OK;
}

int caterva_array_to_buffer(caterva_ctx *ctx, caterva_array *a, void *buf, int64_t cap) {
  int rc = CATERVA_OK;
  int64_t zero[CATERVA_MAX_DIM] = {0};
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  rc = caterva_array_get_slice(ctx, a, zero, a->g.shape, buf, cap);
leave:
  return rc;
}

/* ---- writing ------------------------------------------------------------------------- */

/* Write the box [start, stop) from buf (C order over the box), or zeros when buf is NULL.
 * Chunks wholly covered are not read; zeroing skips chunks that are already zero. */
static int write_box(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                     const int64_t *stop, const uint8_t *buf) {
  int rc = CATERVA_OK;
  const cat_geom *g = &a->g;
  uint8_t *chunkbuf = NULL, *cbuf = NULL;
  int64_t c0[CATERVA_MAX_DIM], c1[CATERVA_MAX_DIM], cc[CATERVA_MAX_DIM];
  int64_t clo[CATERVA_MAX_DIM], chi[CATERVA_MAX_DIM], lo[CATERVA_MAX_DIM], hi[CATERVA_MAX_DIM];
  int64_t bshape[CATERVA_MAX_DIM], zero[CATERVA_MAX_DIM] = {0};
  caterva_cparams cp = cat_array_chunk_cparams(a);
  int32_t cbytes;
  CAT_TRY(leave, cat_wcache_settle(ctx, a)); /* chunks the worker holds are stored first */
  for (int k = 0; k < g->ndim; k++) {
    if (start[k] >= stop[k]) goto leave; /* empty box */
    c0[k] = start[k] / g->chunkshape[k];
    c1[k] = cat_ceil_div64(stop[k], g->chunkshape[k]);
    cc[k] = c0[k];
    bshape[k] = stop[k] - start[k];
  }
  if (g->nchunks == 0) goto leave;
  chunkbuf = malloc((size_t)g->chunksize);
  cbuf = malloc((size_t)g->chunksize + CATERVA_CHUNK_MAX_OVERHEAD);
  CAT_CHECK(leave, chunkbuf != NULL && cbuf != NULL, CATERVA_E_NOMEM, "out of memory");
  for (;;) {
    int64_t n = cat_geom_chunk_number(g, cc);
    int whole = 1, k;
    chunk_region(g, cc, clo, chi);
    for (k = 0; k < g->ndim; k++) {
      lo[k] = start[k] > clo[k] ? start[k] : clo[k];
      hi[k] = stop[k] < chi[k] ? stop[k] : chi[k];
      whole &= lo[k] == clo[k] && hi[k] == chi[k];
    }
    if (buf == NULL && caterva_schunk_chunk_special(a->sc, n) == CATERVA_SPECIAL_ZERO)
      goto next;
    if (whole) memset(chunkbuf, 0, (size_t)g->chunksize);
    else CAT_TRY(leave, cat_array_read_chunk(ctx, a, n, chunkbuf));
    chunk_copy(g, cc, chunkbuf, lo, hi, (uint8_t *)buf, g->ndim ? start : zero, bshape, 1);
    cbytes = caterva_chunk_compress(ctx, &cp, chunkbuf, g->chunksize, cbuf,
                                    g->chunksize + CATERVA_CHUNK_MAX_OVERHEAD);
    CAT_TRY(leave, cbytes);
    cat_bs_hint(a, n, chunkbuf);
    rc = caterva_schunk_update_chunk(ctx, a->sc, n, cbuf, cbytes);
    cat_bs_hint(a, -1, NULL);
    CAT_TRY(leave, rc);
  next:
    for (k = g->ndim - 1; k >= 0; k--) {
      if (++cc[k] < c1[k]) break;
      cc[k] = c0[k];
    }
    if (k < 0) break;
  }
leave:
  free(chunkbuf);
  free(cbuf);
  return rc;
}

int caterva_array_set_slice(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                            const int64_t *stop, const void *buf, int64_t buflen) {
  int rc = CATERVA_OK, own;
  int64_t nbytes;
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  CAT_TRY(leave, check_box(ctx, &a->g, start, stop, &nbytes));
  CAT_CHECK(leave, buflen == nbytes, CATERVA_E_INVALID, "the slice needs %lld bytes, got %lld",
            (long long)nbytes, (long long)buflen);
  CAT_CHECK(leave, buf != NULL || nbytes == 0, CATERVA_E_INVALID, "no buffer");
  if (nbytes == 0) {
    rc = CATERVA_OK;
    goto leave;
  }
  CAT_TRY(leave, own = cat_array_txn_enter(ctx, a));
  rc = cat_wcache_settle(ctx, a);
  if (rc >= 0) rc = cat_wcache_store_box(ctx, a, start, stop); /* cells set before it */
  rc = cat_array_txn_leave(ctx, a, own, rc < 0 ? rc : write_box(ctx, a, start, stop, buf));
leave:
  return rc;
}

/* ---- resize and append ----------------------------------------------------------------- */

/* Rewrite the shape in one metalayer, in place (same length). */
static int update_meta_shape(caterva_ctx *ctx, caterva_array *a, const char *name, int is_b2nd,
                             const int64_t *shape) {
  int rc = CATERVA_OK;
  const uint8_t *content;
  int32_t len;
  uint8_t *copy = NULL;
  cat_array_meta m;
  CAT_TRY(leave, caterva_schunk_meta_get(a->sc, name, &content, &len));
  copy = malloc((size_t)len);
  CAT_CHECK(leave, copy != NULL, CATERVA_E_NOMEM, "out of memory");
  memcpy(copy, content, (size_t)len);
  CAT_TRY(leave, cat_meta_decode(ctx, copy, (size_t)len, is_b2nd, &m));
  CAT_CHECK(leave, m.ndim == a->g.ndim, CATERVA_E_CORRUPT,
            "the %s metalayer disagrees with the array's ndim", name);
  CAT_TRY(leave, cat_meta_patch_shape(ctx, copy, (size_t)len, &m, shape));
  rc = caterva_schunk_meta_update(ctx, a->sc, name, copy, len);
leave:
  free(copy);
  return rc;
}

/* The special chunk kind that holds the fill value. */
static int fill_special(const caterva_array *a) {
  return a->g.itemsize > CAT_FILL_MAX ? CATERVA_SPECIAL_ZERO : item_special(a, a->fill);
}

/* Write the fill value into the box [lo, hi). */
static int fill_box(caterva_ctx *ctx, caterva_array *a, const int64_t *lo, const int64_t *hi) {
  int rc = CATERVA_OK;
  int64_t n = 1;
  uint8_t *buf = NULL;
  if (fill_special(a) == CATERVA_SPECIAL_ZERO) return write_box(ctx, a, lo, hi, NULL);
  for (int k = 0; k < a->g.ndim; k++) n *= hi[k] - lo[k];
  buf = malloc((size_t)(n * a->g.itemsize));
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
  cat_fill_items(buf, n, a->g.itemsize, CATERVA_SPECIAL_VALUE, a->fill);
  rc = write_box(ctx, a, lo, hi, buf);
leave:
  free(buf);
  return rc;
}

/* True when chunk grid coordinates cc lie inside grid. */
static int in_grid(int ndim, const int64_t *cc, const int64_t *grid) {
  for (int k = 0; k < ndim; k++)
    if (cc[k] >= grid[k]) return 0;
  return 1;
}

/* Chunk shapes are unchanged by a resize, so a chunk keeps its content as long as its grid
 * coordinates survive: the new grid in C order takes each surviving chunk from its old
 * number and a chunk holding the fill value where a new grid cell appears, in one edit of
 * the super-chunk (growing by a million chunks copies the index once, not a million times). */
static int remap_chunks(caterva_ctx *ctx, caterva_array *a, const cat_geom *ng) {
  int rc = CATERVA_OK;
  const cat_geom *og = &a->g;
  int64_t cc[CATERVA_MAX_DIM], *map = NULL;
  uint8_t zchunk[CATERVA_CHUNK_HEADER_SIZE + CAT_FILL_MAX];
  int32_t zbytes = 0;
  if (ng->nchunks > 0) {
    /* new chunks hold the fill value */
    zbytes = caterva_chunk_make_special(fill_special(a), ng->chunksize, ng->itemsize,
                                        ng->blocksize, a->fill, zchunk, sizeof zchunk);
    CAT_TRY(leave, zbytes);
    map = malloc((size_t)ng->nchunks * sizeof *map);
    CAT_CHECK(leave, map != NULL, CATERVA_E_NOMEM, "out of memory");
  }
  for (int64_t n = 0; n < ng->nchunks; n++) {
    cat_geom_chunk_coords(ng, n, cc);
    map[n] = og->nchunks > 0 && in_grid(og->ndim, cc, og->gridshape)
                 ? cat_geom_chunk_number(og, cc) : -1;
  }
  rc = cat_sc_remap(ctx, a->sc, map, ng->nchunks, ng->nchunks > 0 ? zchunk : NULL, zbytes);
leave:
  free(map);
  return rc;
}

/* Resize; clear_new = 0 leaves the items that were padding of surviving edge chunks as they
 * are (append overwrites them right away). */
static int resize_impl(caterva_ctx *ctx, caterva_array *a, const int64_t *new_shape,
                       int clear_new) {
  int rc = CATERVA_OK;
  cat_geom ng;
  cat_array_meta m;
  int64_t old_shape[CATERVA_MAX_DIM], old_grid[CATERVA_MAX_DIM];
  int had_chunks;
  CAT_CHECK(leave, a != NULL && (new_shape != NULL || a->g.ndim == 0), CATERVA_E_INVALID,
            "no array or shape");
  /* chunks the worker holds are stored with the geometry they were compressed for */
  CAT_TRY(leave, cat_wcache_settle(ctx, a));
  memset(&m, 0, sizeof m);
  m.ndim = a->g.ndim;
  for (int k = 0; k < m.ndim; k++) {
    CAT_CHECK(leave, new_shape[k] >= 0, CATERVA_E_INVALID, "negative extent in dimension %d", k);
    CAT_CHECK(leave, new_shape[k] == 0 || (a->g.chunkshape[k] > 0 && a->g.blockshape[k] > 0),
              CATERVA_E_UNSUPPORTED, "dimension %d has no chunk extent to grow with", k);
    m.shape[k] = new_shape[k];
    m.chunkshape[k] = a->g.chunkshape[k];
    m.blockshape[k] = a->g.blockshape[k];
    old_shape[k] = a->g.shape[k];
    old_grid[k] = a->g.gridshape[k];
  }
  CAT_TRY(leave, cat_geom_init(ctx, &ng, &m, a->g.itemsize));
  CAT_TRY(leave, cat_array_coords_allow_shape(ctx, a, new_shape));
  had_chunks = a->g.nchunks > 0;
  /* Cached chunk images survive a change of the first extent only (chunk numbers stay). */
  for (int k = 1; k < m.ndim; k++)
    if (new_shape[k] != a->g.shape[k]) CAT_TRY(leave, caterva_array_flush(ctx, a));
  cat_bs_set_geom(a, &ng);
  rc = remap_chunks(ctx, a, &ng);
  cat_bs_set_geom(a, NULL);
  CAT_TRY(leave, rc);
  if (a->has_b2nd) CAT_TRY(leave, update_meta_shape(ctx, a, CAT_META_B2ND, 1, ng.shape));
  if (a->has_caterva) CAT_TRY(leave, update_meta_shape(ctx, a, CAT_META_CATERVA, 0, ng.shape));
  a->g = ng;
  a->geom_gen++;
  cat_wcache_reshaped(a);
  CAT_TRY(leave, cat_bs_reshaped(ctx, a, old_shape));
  /* Items that were padding of surviving edge chunks become real: give them the fill. */
  if (had_chunks && clear_new) {
    for (int k = 0; k < ng.ndim; k++) {
      int64_t lo[CATERVA_MAX_DIM], hi[CATERVA_MAX_DIM];
      if (ng.shape[k] <= old_shape[k]) continue;
      for (int j = 0; j < ng.ndim; j++) {
        lo[j] = 0;
        hi[j] = ng.shape[j];
      }
      lo[k] = old_shape[k];
      hi[k] = old_grid[k] * ng.chunkshape[k] < ng.shape[k] ? old_grid[k] * ng.chunkshape[k]
                                                            : ng.shape[k];
      if (hi[k] > lo[k]) CAT_TRY(leave, fill_box(ctx, a, lo, hi));
    }
  }
  rc = CATERVA_OK;
leave:
  return rc;
}

int caterva_array_resize(caterva_ctx *ctx, caterva_array *a, const int64_t *new_shape) {
  int own;
  if (a == NULL) return cat_error(ctx, CATERVA_E_INVALID, "no array");
  own = cat_array_txn_enter(ctx, a);
  if (own < 0) return own;
  return cat_array_txn_leave(ctx, a, own, resize_impl(ctx, a, new_shape, 1));
}

int caterva_array_append(caterva_ctx *ctx, caterva_array *a, const void *buf, int64_t buflen,
                         int axis) {
  int rc = CATERVA_OK, own;
  int64_t slab = 0, n, start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM];
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  CAT_CHECK(leave, axis >= 0 && axis < a->g.ndim, CATERVA_E_INVALID,
            "axis %d not in 0..%d", axis, a->g.ndim - 1);
  CAT_CHECK(leave, buflen >= 0 && (buf != NULL || buflen == 0), CATERVA_E_INVALID, "no buffer");
  slab = a->g.itemsize;
  for (int k = 0; k < a->g.ndim; k++) /* fits, as in check_box */
    if (k != axis) slab *= a->g.shape[k];
  if (buflen == 0) {
    rc = CATERVA_OK;
    goto leave;
  }
  CAT_CHECK(leave, slab > 0 && buflen % slab == 0, CATERVA_E_INVALID,
            "%lld bytes are not a whole number of %lld-byte slabs along axis %d",
            (long long)buflen, (long long)slab, axis);
  n = buflen / slab;
  for (int k = 0; k < a->g.ndim; k++) {
    start[k] = 0;
    stop[k] = a->g.shape[k];
  }
  start[axis] = a->g.shape[axis];
  CAT_CHECK(leave, cat_add64(stop[axis], n, &stop[axis]), CATERVA_E_OVERFLOW, "shape overflows");
  /* Only the appended slab becomes new items, and it is written next. */
  CAT_TRY(leave, own = cat_array_txn_enter(ctx, a));
  rc = resize_impl(ctx, a, stop, 0);
  if (rc >= 0) rc = caterva_array_set_slice(ctx, a, start, stop, buf, buflen);
  rc = cat_array_txn_leave(ctx, a, own, rc);
leave:
  return rc;
}

/* ---- copy ------------------------------------------------------------------------------ */

static int same_compression(const caterva_cparams *x, const caterva_cparams *y) {
  return x->codec == y->codec && x->clevel == y->clevel && x->splitmode == y->splitmode &&
         memcmp(x->filters, y->filters, sizeof x->filters) == 0 &&
         memcmp(x->filters_meta, y->filters_meta, sizeof x->filters_meta) == 0;
}

/* Same partitioning and compression: move the compressed chunks as they are. */
static int copy_chunks_raw(caterva_ctx *ctx, caterva_array *a, caterva_array *b) {
  int rc = CATERVA_OK;
  for (int64_t n = 0; n < a->g.nchunks; n++) {
    int special = caterva_schunk_chunk_special(a->sc, n);
    CAT_TRY(leave, special);
    if (special != CATERVA_SPECIAL_NONE) {
      CAT_TRY(leave, append_special(ctx, b, special, NULL, 1));
    } else {
      const uint8_t *chunk;
      int32_t cbytes;
      CAT_TRY(leave, caterva_schunk_get_chunk(ctx, a->sc, n, &chunk, &cbytes));
      /* the source's checked statistics of this chunk, when it has them */
      if (caterva_array_block_stats(ctx, a, n, 0, &(caterva_block_stats){0}) == 1)
        cat_bs_hint_copy(b, n, a, n);
      rc = (int)caterva_schunk_append_chunk(ctx, b->sc, chunk, cbytes);
      cat_bs_hint(b, -1, NULL);
      CAT_TRY(leave, rc);
    }
  }
leave:
  return rc;
}

/* Any partitioning: each new chunk is read from a as a slice and laid out again. */
static int copy_chunks_sliced(caterva_ctx *ctx, caterva_array *a, caterva_array *b) {
  int rc = CATERVA_OK;
  const cat_geom *g = &b->g;
  uint8_t *chunkbuf = NULL, *slice = NULL;
  int64_t cc[CATERVA_MAX_DIM], lo[CATERVA_MAX_DIM], hi[CATERVA_MAX_DIM], shp[CATERVA_MAX_DIM];
  int64_t slicecap = g->itemsize;
  if (g->nchunks == 0) goto leave;
  for (int k = 0; k < g->ndim; k++)
    slicecap *= g->chunkshape[k] < g->shape[k] ? g->chunkshape[k] : g->shape[k];
  chunkbuf = malloc((size_t)g->chunksize);
  slice = malloc((size_t)slicecap);
  CAT_CHECK(leave, chunkbuf != NULL && slice != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int64_t n = 0; n < g->nchunks; n++) {
    cat_geom_chunk_coords(g, n, cc);
    chunk_region(g, cc, lo, hi);
    for (int k = 0; k < g->ndim; k++) shp[k] = hi[k] - lo[k];
    CAT_TRY(leave, caterva_array_get_slice(ctx, a, lo, hi, slice, slicecap));
    memset(chunkbuf, 0, (size_t)g->chunksize);
    chunk_copy(g, cc, chunkbuf, lo, hi, slice, lo, shp, 1);
    cat_bs_hint(b, n, chunkbuf);
    rc = (int)caterva_schunk_append_buffer(ctx, b->sc, chunkbuf, g->chunksize);
    cat_bs_hint(b, -1, NULL);
    CAT_TRY(leave, rc);
  }
leave:
  free(chunkbuf);
  free(slice);
  return rc;
}

/* User attributes travel with the data. The block statistics do not: b keeps its own, of the
 * chunks the copy wrote (and at 10^7 chunks a's are 560 MB, more than a vlmetalayer that is
 * read whole may be, so copying them failed). */
static int copy_vlmeta(caterva_ctx *ctx, caterva_array *a, caterva_array *b) {
  int rc = CATERVA_OK;
  int n = caterva_schunk_vlmeta_count(a->sc);
  for (int i = 0; i < n; i++) {
    const char *name = caterva_schunk_vlmeta_name(a->sc, i);
    uint8_t *v = NULL;
    int32_t len = 0;
    if (strcmp(name, CAT_BS_ATTR) == 0) continue;
    CAT_TRY(leave, caterva_schunk_vlmeta_get(ctx, a->sc, name, &v, &len));
    rc = caterva_schunk_vlmeta_set(ctx, b->sc, name, v, len);
    free(v);
    CAT_TRY(leave, rc);
  }
leave:
  return rc;
}

int caterva_array_copy(caterva_ctx *ctx, caterva_array *a, const caterva_array_params *p,
                       caterva_array **out) {
  int rc = CATERVA_OK, own = 0;
  caterva_array *b = NULL;
  cat_array_meta m;
  char dtype[CATERVA_DTYPE_MAX + 1];
  caterva_cparams want, have;
  *out = NULL;
  CAT_CHECK(leave, a != NULL && p != NULL, CATERVA_E_INVALID, "no array or parameters");
  CAT_CHECK(leave, a->dtype == NULL || strlen(a->dtype) <= CATERVA_DTYPE_MAX, CATERVA_E_UNSUPPORTED,
            "dtype string too long to copy");
  CAT_TRY(leave, rc = resolve_params(ctx, p, a->g.ndim, a->g.shape, a->g.itemsize, a->dtype, &m,
                                     dtype, sizeof dtype));
  CAT_TRY(leave, new_array(ctx, &m, a->g.itemsize, &p->cparams, p->store, p->path, &b));
  CAT_TRY(leave, own = cat_array_txn_enter(ctx, b));
  want = cat_array_chunk_cparams(b);
  have = cat_array_chunk_cparams(a);
  if (memcmp(a->g.chunkshape, b->g.chunkshape, sizeof a->g.chunkshape) == 0 &&
      memcmp(a->g.blockshape, b->g.blockshape, sizeof a->g.blockshape) == 0 &&
      same_compression(&want, &have))
    CAT_TRY(leave, copy_chunks_raw(ctx, a, b));
  else
    CAT_TRY(leave, copy_chunks_sliced(ctx, a, b));
  CAT_TRY(leave, copy_vlmeta(ctx, a, b));
  rc = CATERVA_OK;
leave:
  if (b != NULL) rc = cat_array_txn_leave(ctx, b, own, rc);
  if (rc < 0) caterva_array_free(b);
  else *out = b;
  return rc;
}

/* ---- block statistics ----------------------------------------------------------------- */

int caterva_array_build_stats(caterva_ctx *ctx, caterva_array *a,
                              int (*progress)(void *arg, int64_t done, int64_t total),
                              void *arg) {
  int rc = CATERVA_OK, own = 0;
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  CAT_CHECK(leave, caterva_array_stats_type(a) != CATERVA_STATS_NONE, CATERVA_E_UNSUPPORTED,
            "no statistics for dtype %s", a->dtype ? a->dtype : "(none)");
  CAT_TRY(leave, caterva_array_flush(ctx, a));
  CAT_TRY(leave, own = cat_array_txn_enter(ctx, a));
  rc = cat_bs_build(ctx, a, progress, arg);
leave:
  if (a != NULL) rc = cat_array_txn_leave(ctx, a, own, rc);
  return rc;
}

/* ---- attributes and dimension names ----------------------------------------------------- */

int caterva_array_attr_get(caterva_ctx *ctx, caterva_array *a, const char *name,
                           uint8_t **value, int32_t *len) {
  int rc = CATERVA_OK;
  *value = NULL;
  *len = 0;
  CAT_CHECK(leave, a != NULL && name != NULL, CATERVA_E_INVALID, "no array or name");
  rc = caterva_schunk_vlmeta_get(ctx, a->sc, name, value, len);
leave:
  return rc;
}

int caterva_array_attr_set(caterva_ctx *ctx, caterva_array *a, const char *name,
                           const void *value, int32_t len) {
  int rc = CATERVA_OK;
  CAT_CHECK(leave, a != NULL && name != NULL, CATERVA_E_INVALID, "no array or name");
  rc = caterva_schunk_vlmeta_set(ctx, a->sc, name, value, len);
leave:
  return rc;
}

void caterva_array_free_names(char **names, int n) {
  if (names == NULL) return;
  for (int i = 0; i < n; i++) free(names[i]);
  free(names);
}

int caterva_array_get_dim_names(caterva_ctx *ctx, caterva_array *a, char ***names) {
  int rc = CATERVA_OK;
  uint8_t *v = NULL;
  int32_t len = 0;
  char **res = NULL;
  int nd = 0;
  msgpack_unpacked up;
  size_t off = 0;
  *names = NULL;
  msgpack_unpacked_init(&up);
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  nd = a->g.ndim;
  CAT_TRY(leave, caterva_schunk_vlmeta_get(ctx, a->sc, CAT_DIMS_ATTR, &v, &len));
  CAT_CHECK(leave, caterva_msgpack_complete(v, (size_t)len) &&
                       msgpack_unpack_next(&up, (const char *)v, (size_t)len, &off) ==
                       MSGPACK_UNPACK_SUCCESS,
            CATERVA_E_CORRUPT, "%s is not msgpack", CAT_DIMS_ATTR);
  CAT_CHECK(leave, up.data.type == MSGPACK_OBJECT_ARRAY && up.data.via.array.size == (uint32_t)nd,
            CATERVA_E_CORRUPT, "%s is not an array of %d names", CAT_DIMS_ATTR, nd);
  res = calloc((size_t)nd + 1, sizeof *res);
  CAT_CHECK(leave, res != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int k = 0; k < nd; k++) {
    const msgpack_object *o = &up.data.via.array.ptr[k];
    CAT_CHECK(leave, o->type == MSGPACK_OBJECT_STR, CATERVA_E_CORRUPT,
              "%s[%d] is not a string", CAT_DIMS_ATTR, k);
    CAT_CHECK(leave, o->via.str.size == 0 || memchr(o->via.str.ptr, 0, o->via.str.size) == NULL,
              CATERVA_E_CORRUPT,
              "%s[%d] contains a NUL byte", CAT_DIMS_ATTR, k);
    res[k] = cat_strndup(o->via.str.ptr, o->via.str.size);
    CAT_CHECK(leave, res[k] != NULL, CATERVA_E_NOMEM, "out of memory");
  }
  rc = CATERVA_OK;
leave:
  msgpack_unpacked_destroy(&up);
  free(v);
  if (rc < 0) caterva_array_free_names(res, nd);
  else *names = res;
  return rc;
}

int caterva_array_set_dim_names(caterva_ctx *ctx, caterva_array *a, const char *const *names) {
  int rc = CATERVA_OK;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  CAT_CHECK(leave, a != NULL && (names != NULL || a->g.ndim == 0), CATERVA_E_INVALID,
            "no array or names");
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  CAT_CHECK(leave, msgpack_pack_array(&pk, (size_t)a->g.ndim) == 0, CATERVA_E_NOMEM,
            "out of memory");
  for (int k = 0; k < a->g.ndim; k++) {
    size_t n;
    CAT_CHECK(leave, names[k] != NULL, CATERVA_E_INVALID, "name %d is missing", k);
    n = strlen(names[k]);
    CAT_CHECK(leave, msgpack_pack_str(&pk, n) == 0 && msgpack_pack_str_body(&pk, names[k], n) == 0,
              CATERVA_E_NOMEM, "out of memory");
  }
  CAT_CHECK(leave, sb.size <= INT32_MAX, CATERVA_E_INVALID, "names too long");
  rc = caterva_schunk_vlmeta_set(ctx, a->sc, CAT_DIMS_ATTR, sb.data, (int32_t)sb.size);
leave:
  msgpack_sbuffer_destroy(&sb);
  return rc;
}

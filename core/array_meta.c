/*
 * array_meta.c -- the `caterva` and `b2nd` metalayers, NumPy dtype strings, and the default
 * chunk and block shapes of new arrays.
 */
#include "array_layer_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* ---- encoding -------------------------------------------------------------------------

   caterva (5 entries)                       b2nd (7 entries)
   95                 fixarray(5)            97                 fixarray(7)
   00                 version 0              00                 version 0
   nd                 ndim (fixint)          nd                 ndim (fixint)
   90+nd {D3 i64}*nd  shape                  90+nd {D3 i64}*nd  shape
   90+nd {D2 i32}*nd  chunkshape             90+nd {D2 i32}*nd  chunkshape
   90+nd {D2 i32}*nd  blockshape             90+nd {D2 i32}*nd  blockshape
                                             00                 dtype format (0: NumPy)
                                             DB u32 len bytes   dtype as str32

   All integers big-endian with fixed-width markers, so that a resize rewrites the metalayer
   with the same length (metalayers cannot grow in a frame). The array header of each shape
   list is the single byte 0x90+nd as the reference writes it, also for nd = 16 (where the byte
   0xA0 is, strictly, a msgpack fixstr; the reference reader skips it without looking).   */

size_t cat_meta_caterva_size(int ndim) { return 6 + 19 * (size_t)ndim; }

size_t cat_meta_b2nd_size(int ndim, size_t dtype_len) {
  return cat_meta_caterva_size(ndim) + 6 + dtype_len;
}

/* The five entries shared by both layouts, after the top-level array byte. */
static uint8_t *put_common(const cat_array_meta *m, uint8_t *p) {
  int nd = m->ndim;
  *p++ = 0x00;
  *p++ = (uint8_t)nd;
  *p++ = (uint8_t)(0x90 + nd);
  for (int k = 0; k < nd; k++) {
    *p++ = 0xD3;
    cat_put_be64(p, (uint64_t)m->shape[k]);
    p += 8;
  }
  *p++ = (uint8_t)(0x90 + nd);
  for (int k = 0; k < nd; k++) {
    *p++ = 0xD2;
    cat_put_be32(p, (uint32_t)m->chunkshape[k]);
    p += 4;
  }
  *p++ = (uint8_t)(0x90 + nd);
  for (int k = 0; k < nd; k++) {
    *p++ = 0xD2;
    cat_put_be32(p, (uint32_t)m->blockshape[k]);
    p += 4;
  }
  return p;
}

int cat_meta_encode_caterva(caterva_ctx *ctx, const cat_array_meta *m, uint8_t *buf, size_t cap,
                            size_t *len) {
  int rc = CATERVA_OK;
  size_t need = cat_meta_caterva_size(m->ndim);
  *len = 0;
  CAT_CHECK(leave, m->ndim >= 0 && m->ndim <= CAT_CATERVA_MAX_DIM, CATERVA_E_INVALID,
            "the caterva metalayer holds at most %d dimensions, not %d", CAT_CATERVA_MAX_DIM,
            m->ndim);
  CAT_CHECK(leave, cap >= need, CATERVA_E_NOSPACE, "metalayer buffer too small");
  buf[0] = 0x95;
  put_common(m, buf + 1);
  *len = need;
leave:
  return rc;
}

int cat_meta_encode_b2nd(caterva_ctx *ctx, const cat_array_meta *m, uint8_t *buf, size_t cap,
                         size_t *len) {
  int rc = CATERVA_OK;
  size_t need;
  uint8_t *p;
  *len = 0;
  CAT_CHECK(leave, m->ndim >= 0 && m->ndim <= CATERVA_MAX_DIM, CATERVA_E_INVALID,
            "the b2nd metalayer holds at most %d dimensions, not %d", CATERVA_MAX_DIM, m->ndim);
  CAT_CHECK(leave, m->dtype != NULL && m->dtype_len <= INT32_MAX, CATERVA_E_INVALID,
            "a b2nd metalayer needs a dtype");
  need = cat_meta_b2nd_size(m->ndim, m->dtype_len);
  CAT_CHECK(leave, cap >= need, CATERVA_E_NOSPACE, "metalayer buffer too small");
  buf[0] = 0x97;
  p = put_common(m, buf + 1);
  *p++ = (uint8_t)m->dtype_format;
  *p++ = 0xDB;
  cat_put_be32(p, (uint32_t)m->dtype_len);
  p += 4;
  memcpy(p, m->dtype, m->dtype_len);
  *len = need;
leave:
  return rc;
}

/* ---- decoding --------------------------------------------------------------------------
   Foreign writers are accepted as long as the structure is right: any msgpack integer
   encoding for the numbers, any array-header form for the lists, any string form for the
   dtype. Bytes after the last entry are ignored, as the reference reader does. */

/* One msgpack integer (cat_mp_int). *d3_pos, when asked, receives the offset from base of
 * the 8 payload bytes if the integer used the fixed-width D3 marker (so resize can patch the
 * shape in place), else -1. */
static bool rd_int(cat_rdr *r, int64_t *v, int32_t *d3_pos, const uint8_t *base) {
  const uint8_t *at = r->p;
  if (!cat_mp_int(r, v)) return false;
  if (d3_pos) *d3_pos = at[0] == 0xD3 ? (int32_t)(at + 1 - base) : -1;
  return true;
}

/* An array header (cat_mp_array), plus the reference's 0x90+n byte for n = 16, which msgpack
 * would read as an empty str (0xA0) but b2nd writes for 16-dimension lists. */
static bool rd_array(cat_rdr *r, int64_t *n) {
  uint32_t u;
  if (cat_rdr_left(r) > 0 && r->p[0] == 0xA0) {
    r->p++;
    *n = 16;
    return true;
  }
  if (!cat_mp_array(r, &u)) return false;
  *n = u;
  return true;
}

/* One list of ndim integers in [lo, hi]. */
static int rd_dims(caterva_ctx *ctx, cat_rdr *r, const uint8_t *base, int ndim, const char *what,
                   int64_t lo, int64_t hi, int64_t *out64, int32_t *out32, int32_t *pos) {
  int rc = CATERVA_OK;
  int64_t n, v;
  CAT_CHECK(leave, rd_array(r, &n), CATERVA_E_CORRUPT, "metalayer: %s is not an array", what);
  CAT_CHECK(leave, n == ndim, CATERVA_E_CORRUPT, "metalayer: %s has %lld entries for %d dims",
            what, (long long)n, ndim);
  for (int k = 0; k < ndim; k++) {
    int32_t p;
    CAT_CHECK(leave, rd_int(r, &v, &p, base), CATERVA_E_CORRUPT,
              "metalayer: %s[%d] is not an integer", what, k);
    CAT_CHECK(leave, v >= lo && v <= hi, CATERVA_E_CORRUPT,
              "metalayer: %s[%d] = %lld out of range", what, k, (long long)v);
    if (out64) out64[k] = v;
    if (out32) out32[k] = (int32_t)v;
    if (pos) pos[k] = p;
  }
leave:
  return rc;
}

int cat_meta_decode(caterva_ctx *ctx, const uint8_t *buf, size_t len, int is_b2nd,
                    cat_array_meta *m) {
  int rc = CATERVA_OK;
  int max_ndim = is_b2nd ? CATERVA_MAX_DIM : CAT_CATERVA_MAX_DIM;
  const char *name = is_b2nd ? CAT_META_B2ND : CAT_META_CATERVA;
  cat_rdr r;
  int64_t nentries, version, ndim;
  memset(m, 0, sizeof *m);
  cat_rdr_init(&r, buf, len);
  CAT_CHECK(leave, rd_array(&r, &nentries), CATERVA_E_CORRUPT,
            "%s metalayer: not a msgpack array", name);
  CAT_CHECK(leave, nentries >= 5, CATERVA_E_CORRUPT, "%s metalayer: %lld entries, need 5 or more",
            name, (long long)nentries);
  CAT_CHECK(leave, rd_int(&r, &version, NULL, buf), CATERVA_E_CORRUPT,
            "%s metalayer: bad version", name);
  CAT_CHECK(leave, rd_int(&r, &ndim, NULL, buf), CATERVA_E_CORRUPT, "%s metalayer: bad ndim",
            name);
  CAT_CHECK(leave, ndim >= 0 && ndim <= max_ndim, CATERVA_E_CORRUPT,
            "%s metalayer: ndim %lld not in 0..%d", name, (long long)ndim, max_ndim);
  m->ndim = (int)ndim;
  CAT_TRY(leave, rd_dims(ctx, &r, buf, m->ndim, "shape", 0, INT64_MAX, m->shape, NULL,
                         m->shape_pos));
  CAT_TRY(leave, rd_dims(ctx, &r, buf, m->ndim, "chunkshape", 0, INT32_MAX, NULL, m->chunkshape,
                         NULL));
  CAT_TRY(leave, rd_dims(ctx, &r, buf, m->ndim, "blockshape", 0, INT32_MAX, NULL, m->blockshape,
                         NULL));
  if (nentries >= 6) {
    int64_t fmt;
    CAT_CHECK(leave, rd_int(&r, &fmt, NULL, buf) && fmt >= 0 && fmt <= 127, CATERVA_E_CORRUPT,
              "%s metalayer: bad dtype format", name);
    m->dtype_format = (int)fmt;
  }
  if (nentries >= 7) {
    const uint8_t *s;
    uint32_t slen;
    CAT_CHECK(leave, cat_mp_str(&r, &s, &slen), CATERVA_E_CORRUPT,
              "%s metalayer: dtype is not a string", name);
    CAT_CHECK(leave, memchr(s, 0, slen) == NULL, CATERVA_E_CORRUPT,
              "%s metalayer: dtype contains a NUL byte", name);
    m->dtype = (const char *)s;
    m->dtype_len = slen;
  }
  rc = cat_meta_validate(ctx, m, max_ndim, 1);
leave:
  return rc;
}

int cat_meta_validate(caterva_ctx *ctx, const cat_array_meta *m, int max_ndim, int itemsize) {
  int rc = CATERVA_OK;
  int64_t nbytes = itemsize, span = itemsize;
  CAT_CHECK(leave, m->ndim >= 0 && m->ndim <= max_ndim, CATERVA_E_CORRUPT,
            "ndim %d not in 0..%d", m->ndim, max_ndim);
  for (int k = 0; k < m->ndim; k++) {
    int64_t s = m->shape[k], c = m->chunkshape[k], b = m->blockshape[k], ext;
    CAT_CHECK(leave, s >= 0 && c >= 0 && b >= 0, CATERVA_E_CORRUPT,
              "negative extent in dimension %d", k);
    CAT_CHECK(leave, s == 0 || (c > 0 && b > 0), CATERVA_E_CORRUPT,
              "chunk and block extents must be positive (dimension %d)", k);
    /* the array's size in bytes fits, and so does that of every box along the extents
     * beside a zero one: a shape of (2^61, 0) holds no item, but a box's size, a slab's or
     * a stride is the product of some of the extents, computed by many callers */
    CAT_CHECK(leave, cat_mul64(span, s > 0 ? s : 1, &span), CATERVA_E_OVERFLOW,
              "the array's extents multiply past 2^63 bytes");
    ext = b > 0 ? cat_ceil_div64(c, b) * b : 0;
    CAT_CHECK(leave, cat_mul64(nbytes, ext, &nbytes) && nbytes <= CATERVA_CHUNK_MAX_NBYTES,
              CATERVA_E_UNSUPPORTED, "a chunk of this shape exceeds %d bytes",
              CATERVA_CHUNK_MAX_NBYTES);
  }
leave:
  return rc;
}

int cat_meta_patch_shape(caterva_ctx *ctx, uint8_t *buf, size_t len, const cat_array_meta *m,
                         const int64_t *shape) {
  int rc = CATERVA_OK;
  for (int k = 0; k < m->ndim; k++)
    CAT_CHECK(leave, m->shape_pos[k] >= 0 && (size_t)m->shape_pos[k] + 8 <= len,
              CATERVA_E_UNSUPPORTED,
              "the array metalayer uses variable-width integers; it cannot be resized in place");
  for (int k = 0; k < m->ndim; k++) cat_put_be64(buf + m->shape_pos[k], (uint64_t)shape[k]);
leave:
  return rc;
}

/* ---- dtypes ------------------------------------------------------------------------- */

/* Common names users type, mapped to NumPy strings (little-endian host order). */
static const struct { const char *name, *np; } dtype_names[] = {
    {"bool", "|b1"},     {"int8", "|i1"},     {"int16", "<i2"},     {"int32", "<i4"},
    {"int64", "<i8"},    {"uint8", "|u1"},    {"uint16", "<u2"},    {"uint32", "<u4"},
    {"uint64", "<u8"},   {"float16", "<f2"},  {"float32", "<f4"},   {"float64", "<f8"},
    {"complex64", "<c8"}, {"complex128", "<c16"}, {"float", "<f8"}, {"double", "<f8"},
    {"int", "<i8"},      {"real", "<f8"},
};

/* Parse a decimal count at *s (no sign), advancing; -1 if none or too large. */
static long parse_count(const char **s) {
  long v = 0;
  const char *p = *s;
  if (*p < '0' || *p > '9') return -1;
  while (*p >= '0' && *p <= '9') {
    v = v * 10 + (*p - '0');
    if (v > (1L << 30)) return -1;
    p++;
  }
  *s = p;
  return v;
}

/* Case-insensitive equality for the name table. */
static bool name_eq(const char *a, const char *b) {
  for (; *a && *b; a++, b++) {
    char ca = (*a >= 'A' && *a <= 'Z') ? (char)(*a + 32) : *a;
    if (ca != *b) return false;
  }
  return *a == *b;
}

static const char *dtype_lookup_name(const char *s) {
  for (size_t i = 0; i < sizeof dtype_names / sizeof dtype_names[0]; i++)
    if (name_eq(s, dtype_names[i].name)) return dtype_names[i].np;
  return NULL;
}

/* The NumPy form: [<>|=]? kind-char count [unit]. */
static int parse_numpy(const char *s, caterva_dtype_info *info) {
  char kc;
  long n;
  if (*s == '<' || *s == '|' || *s == '=') s++;
  else if (*s == '>') { info->big_endian = 1; s++; }
  if (*s == '\0') return CATERVA_E_INVALID;
  kc = *s++;
  if (kc == '?') { n = 1; kc = 'b'; }
  else if ((n = parse_count(&s)) <= 0) return CATERVA_E_INVALID;
  switch (kc) {
  case 'b':
    if (n != 1) return CATERVA_E_INVALID;
    info->kind = CATERVA_KIND_BOOL;
    break;
  case 'i': case 'u':
    if (n != 1 && n != 2 && n != 4 && n != 8) return CATERVA_E_INVALID;
    info->kind = kc == 'i' ? CATERVA_KIND_INT : CATERVA_KIND_UINT;
    break;
  case 'f':
    if (n != 2 && n != 4 && n != 8 && n != 12 && n != 16) return CATERVA_E_INVALID;
    /* long doubles have no portable layout: opaque bytes of known size. */
    info->kind = n <= 8 ? CATERVA_KIND_FLOAT : CATERVA_KIND_OPAQUE;
    break;
  case 'c':
    if (n != 8 && n != 16 && n != 24 && n != 32) return CATERVA_E_INVALID;
    info->kind = n <= 16 ? CATERVA_KIND_COMPLEX : CATERVA_KIND_OPAQUE;
    break;
  case 'S': case 'a': case 'V':
    info->kind = CATERVA_KIND_BYTES;
    break;
  case 'U':
    if (n > (1L << 28)) return CATERVA_E_INVALID;
    info->kind = CATERVA_KIND_UNICODE;
    n *= 4;
    break;
  case 'M': case 'm':
    if (n != 8) return CATERVA_E_INVALID;
    info->kind = kc == 'M' ? CATERVA_KIND_DATETIME : CATERVA_KIND_TIMEDELTA;
    if (*s == '[') {
      const char *close = strchr(s, ']');
      if (!close || close == s + 1) return CATERVA_E_INVALID;
      s = close + 1;
    }
    break;
  default:
    return CATERVA_E_INVALID;
  }
  if (*s != '\0' || n > INT32_MAX) return CATERVA_E_INVALID;
  info->itemsize = (int)n;
  return CATERVA_OK;
}

int caterva_dtype_parse(const char *dtype, caterva_dtype_info *info) {
  const char *np;
  int rc = CATERVA_OK;
  memset(info, 0, sizeof *info);
  if (dtype == NULL) return CATERVA_E_INVALID;
  np = dtype_lookup_name(dtype);
  rc = parse_numpy(np ? np : dtype, info);
  if (rc < 0) memset(info, 0, sizeof *info);
  return rc;
}

int caterva_dtype_canonical(const char *dtype, char *buf, size_t cap) {
  caterva_dtype_info info;
  const char *np;
  size_t n;
  if (cap > 0) buf[0] = '\0';
  if (caterva_dtype_parse(dtype, &info) < 0) return CATERVA_E_INVALID;
  np = dtype_lookup_name(dtype);
  if (np == NULL) np = dtype;
  n = strlen(np);
  if (n + 1 > cap) return CATERVA_E_NOSPACE;
  memcpy(buf, np, n + 1);
  return CATERVA_OK;
}

void cat_dtype_default(int itemsize, char *buf, size_t cap) {
  snprintf(buf, cap, "|S%d", itemsize);
}

/* ---- default partitioning ------------------------------------------------------------
   Chosen here (the reference asks the CPU for its cache sizes; we use fixed targets so the
   result does not depend on the machine):
   - chunks: start from the whole shape and halve the longest axis (ties: the leading one)
     until a chunk holds at most CAT_DEFAULT_CHUNK_BYTES (4 MiB);
   - blocks: the same from the chunk shape down to CAT_DEFAULT_BLOCK_BYTES (64 KiB);
   - chunks are then rounded up to a multiple of the block along every axis where that stays
     within the shape, so that no block straddles the inner edge of a chunk.
   Halving the longest axis keeps blocks close to cubes, which is what box queries over any
   combination of axes (the SQL use) want. Zero-length axes get extent 1. */

/* Halve ext's longest axis from axis first on (ties: the leading one) until its items fit
 * target bytes or every such axis is 1. */
static void shrink_to(int ndim, int32_t *ext, int itemsize, int64_t target, int first) {
  for (;;) {
    int64_t bytes = itemsize;
    int longest = -1;
    for (int k = 0; k < ndim; k++) {
      if (!cat_mul64(bytes, ext[k], &bytes) || bytes > ((int64_t)1 << 40))
        bytes = (int64_t)1 << 40; /* saturate: only compared with the target */
      if (k >= first && ext[k] > 1 && (longest < 0 || ext[k] > ext[longest])) longest = k;
    }
    if (bytes <= target || longest < 0) return;
    ext[longest] = ext[longest] / 2 + ext[longest] % 2; /* half, rounded up: no overflow */
  }
}

/* The partition of an array created with extent 0 along its first axis, both shapes automatic.
 * Such an array grows along that axis (appends, INSERT past the end), a commit at a time, and
 * every row it ever holds is compressed with these blocks. Partitioned like the rest from its
 * chunk (which holds few rows so that a commit rewrites little), its blocks came out thin
 * along the growth axis (16 x 23 x 23 float32 for a 90 x 180 grid; 1 x 91 x 180 for 721 x
 * 1440), and along that axis, time for gridded data, values are smooth: a year of daily
 * appends took 1.1-1.3x the bytes of the same year written with its final shape's partition.
 * So the blocks are those of a long array (the growth axis taken as CAT_GROWTH_EXTENT, halved
 * with the others to the block target), deepened along the growth axis to fill the target
 * (halving stops anywhere above half of it); the chunk is the blocks' depth along the growth
 * axis and at most CAT_DEFAULT_CHUNK_BYTES across it (the other axes halved, then rounded up
 * to whole blocks), doubled along the growth axis to at least CAT_GROWTH_CHUNK_BYTES.
 * bench_growth.py measures the result against the final shape's partition. */
static void growth_partition(int ndim, const int64_t *shape, int itemsize, int32_t *chunkshape,
                             int32_t *blockshape) {
  int64_t row = itemsize, fit, bytes = itemsize;
  blockshape[0] = CAT_GROWTH_EXTENT;
  for (int k = 1; k < ndim; k++)
    blockshape[k] = shape[k] < 1 ? 1 : shape[k] > INT32_MAX ? INT32_MAX : (int32_t)shape[k];
  shrink_to(ndim, blockshape, itemsize, CAT_DEFAULT_BLOCK_BYTES, 0);
  for (int k = 1; k < ndim; k++) row *= blockshape[k]; /* <= the target: no overflow */
  fit = CAT_DEFAULT_BLOCK_BYTES / row;
  if (fit > blockshape[0] && fit <= CAT_GROWTH_EXTENT) blockshape[0] = (int32_t)fit;
  chunkshape[0] = blockshape[0];
  for (int k = 1; k < ndim; k++)
    chunkshape[k] = shape[k] < 1 ? 1 : shape[k] > INT32_MAX ? INT32_MAX : (int32_t)shape[k];
  shrink_to(ndim, chunkshape, itemsize, CAT_DEFAULT_CHUNK_BYTES, 1);
  for (int k = 1; k < ndim; k++) {
    /* a block never exceeds its axis (it was halved from it): rounding stays inside it */
    int64_t up = cat_ceil_div64(chunkshape[k], blockshape[k]) * blockshape[k];
    if (up <= shape[k]) chunkshape[k] = (int32_t)up;
    bytes *= chunkshape[k]; /* <= twice the chunk target: no overflow */
  }
  while (bytes * chunkshape[0] < CAT_GROWTH_CHUNK_BYTES && chunkshape[0] <= CAT_GROWTH_EXTENT / 2)
    chunkshape[0] *= 2;
}

int cat_default_partition(caterva_ctx *ctx, int ndim, const int64_t *shape, int itemsize,
                          int32_t *chunkshape, int32_t *blockshape) {
  int rc = CATERVA_OK;
  int czero = 0, bzero = 0, nempty = 0;
  for (int k = 0; k < ndim; k++) {
    czero += chunkshape[k] == 0;
    bzero += blockshape[k] == 0;
    nempty += shape[k] == 0;
  }
  /* A zero in a zero-length axis of an otherwise given shape means "any": use 1. */
  if (czero > 0 && czero <= nempty && czero < ndim) {
    for (int k = 0; k < ndim; k++)
      if (shape[k] == 0 && chunkshape[k] == 0) chunkshape[k] = 1, czero--;
  }
  if (bzero > 0 && bzero <= nempty && bzero < ndim) {
    for (int k = 0; k < ndim; k++)
      if (shape[k] == 0 && blockshape[k] == 0) blockshape[k] = 1, bzero--;
  }
  CAT_CHECK(leave, czero == 0 || czero == ndim, CATERVA_E_INVALID,
            "chunkshape must be given in every dimension or in none");
  CAT_CHECK(leave, bzero == 0 || bzero == ndim, CATERVA_E_INVALID,
            "blockshape must be given in every dimension or in none");
  if (ndim > 0 && czero && bzero && shape[0] == 0) {
    growth_partition(ndim, shape, itemsize, chunkshape, blockshape);
    goto leave;
  }
  if (ndim > 0 && czero) {
    for (int k = 0; k < ndim; k++)
      chunkshape[k] = shape[k] < 1 ? 1 : shape[k] > INT32_MAX ? INT32_MAX : (int32_t)shape[k];
    shrink_to(ndim, chunkshape, itemsize, CAT_DEFAULT_CHUNK_BYTES, 0);
    /* An array created with extent 0 along its first axis with its blocks given (both
     * automatic: growth_partition) is made to grow along it: partition it for the grown
     * array, not for the rows it has (it got chunks of one row: 200 bytes for 50 float32
     * stations): the other axes as for a long array, and along the first as many rows as make
     * a chunk of at least CAT_GROWTH_CHUNK_BYTES -- small enough that a commit of one more row
     * rewrites little (each commit recompresses the chunks it touches). Arrays created with
     * rows keep the partition of their shape. */
    if (shape[0] == 0) {
      int32_t grown[CATERVA_MAX_DIM];
      int64_t bytes = itemsize;
      grown[0] = 1;
      for (int k = 1; k < ndim; k++)
        grown[k] = shape[k] < 1 ? 1 : shape[k] > INT32_MAX ? INT32_MAX : (int32_t)shape[k];
      shrink_to(ndim, grown, itemsize, CAT_DEFAULT_CHUNK_BYTES, 0);
      for (int k = 1; k < ndim; k++) bytes *= grown[k]; /* <= the target: no overflow */
      while (bytes * grown[0] < CAT_GROWTH_CHUNK_BYTES && grown[0] < CAT_GROWTH_EXTENT)
        grown[0] *= 2;
      memcpy(chunkshape, grown, (size_t)ndim * sizeof *grown);
    }
  }
  if (ndim > 0 && bzero) {
    memcpy(blockshape, chunkshape, (size_t)ndim * sizeof *blockshape);
    shrink_to(ndim, blockshape, itemsize, CAT_DEFAULT_BLOCK_BYTES, 0);
  }
  if (ndim > 0 && czero) {
    for (int k = 0; k < ndim; k++) {
      int64_t up = cat_ceil_div64(chunkshape[k], blockshape[k]) * blockshape[k];
      if ((up <= shape[k] || (k == 0 && shape[0] == 0)) && up <= INT32_MAX)
        chunkshape[k] = (int32_t)up;
    }
  }
leave:
  return rc;
}

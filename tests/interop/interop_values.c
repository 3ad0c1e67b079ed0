/*
 * interop_values.c -- what the cases of the interop writer test hold: their geometry (chunk
 * grid, chunk and block sizes), the value of every item (and the text the manifest gives it),
 * their user attributes, and the metalayers the fact sheet says they must carry.
 */
#include "interop.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- geometry ------------------------------------------------------------------------- */

void geom_init(const icase *c, int itemsize, geom *g) {
  g->ndim = c->ndim;
  g->itemsize = itemsize;
  g->nitems = 1;
  g->nchunks = 1;
  g->chunksize = itemsize;
  g->blocksize = itemsize;
  for (int k = 0; k < c->ndim; k++) {
    g->extchunk[k] = (c->chunks[k] + c->blocks[k] - 1) / c->blocks[k] * c->blocks[k];
    g->grid[k] = (c->shape[k] + c->chunks[k] - 1) / c->chunks[k];
    g->nitems *= c->shape[k];
    g->nchunks *= g->grid[k];
    g->chunksize *= g->extchunk[k];
    g->blocksize *= c->blocks[k];
  }
}

int next_in_box(int64_t *idx, const int64_t *lo, const int64_t *hi, int ndim) {
  for (int k = ndim - 1; k >= 0; k--) {
    if (++idx[k] < hi[k]) return 1;
    idx[k] = lo[k];
  }
  return 0;
}

/* Whether the float of itemsize 4 or 8 at q (little-endian) is a NaN. */
static int is_nan_item(const uint8_t *q, int itemsize) {
  uint64_t u = get_le(q, itemsize);
  if (itemsize == 4) return (u & 0x7F800000u) == 0x7F800000u && (u & 0x7FFFFFu) != 0;
  return itemsize == 8 && (u & 0x7FF0000000000000u) == 0x7FF0000000000000u &&
         (u & 0xFFFFFFFFFFFFFu) != 0;
}

int chunk_all(const icase *c, const geom *g, const uint8_t *raw, int64_t n, int nan) {
  int64_t cc[MAXD], lo[MAXD], hi[MAXD], idx[MAXD], rest = n, count = 1;
  for (int k = c->ndim - 1; k >= 0; k--) {
    cc[k] = rest % g->grid[k];
    rest /= g->grid[k];
  }
  for (int k = 0; k < c->ndim; k++) {
    lo[k] = cc[k] * c->chunks[k];
    hi[k] = lo[k] + c->chunks[k] < c->shape[k] ? lo[k] + c->chunks[k] : c->shape[k];
    idx[k] = lo[k];
    count *= hi[k] - lo[k];
  }
  for (int64_t t = 0; t < count; t++) {
    int64_t off = 0;
    for (int k = 0; k < c->ndim; k++) off = off * c->shape[k] + idx[k];
    if (nan) {
      if (!is_nan_item(raw + off * g->itemsize, g->itemsize)) return 0;
    } else {
      for (int b = 0; b < g->itemsize; b++)
        if (raw[off * g->itemsize + b] != 0) return 0;
    }
    next_in_box(idx, lo, hi, c->ndim);
  }
  return 1;
}

int chunk_all_zero(const icase *c, const geom *g, const uint8_t *raw, int64_t n) {
  return chunk_all(c, g, raw, n, 0);
}

/* ---- values --------------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15u;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

void put_float(uint8_t *p, double v, int itemsize) {
  if (itemsize == 8) {
    uint64_t u;
    memcpy(&u, &v, 8);
    put_le(p, u, 8);
  } else {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    put_le(p, u, 4);
  }
}

/* Item i (coordinates cc) of case c into p. */
static void gen_item(const icase *c, const dtype_desc *dt, int64_t i, const int64_t *cc,
                     uint8_t *p) {
  int64_t iv = 0;
  double dv = 0;
  uint64_t h = 0;
  switch (c->vkind) {
  case V_RAMP:
    iv = (int64_t)((uint64_t)(int64_t)c->a * (uint64_t)i + (uint64_t)(int64_t)c->b);
    dv = c->a * (double)i + c->b;
    break;
  case V_STEPS:
    iv = i / (int64_t)c->a + (int64_t)c->b;
    dv = (double)iv;
    break;
  case V_SMOOTH: {
    double s = 0.5 * sin((double)i * 1e-4);
    for (int k = 0; k < c->ndim; k++) s += sin((double)cc[k] * 0.1 / (k + 1));
    dv = c->a * s + c->b;
    iv = (int64_t)dv;
    break;
  }
  case V_HASH:
    h = splitmix64((uint64_t)i + (uint64_t)c->a);
    iv = (int64_t)h;
    dv = dt->itemsize == 8 ? (double)(h >> 11) * 0x1p-53 : (double)(h >> 40) * 0x1p-24;
    break;
  case V_ZERO: break;
  case V_SPARSE:
    iv = i % (int64_t)c->a == 0 ? i / (int64_t)c->a + 1 : 0;
    dv = (double)iv;
    break;
  case V_CONST:
    dv = c->a;
    iv = (int64_t)c->a;
    break;
  case V_NAN: dv = NAN; break;
  }
  if (dt->kind == K_BOOL)
    p[0] = (uint8_t)(iv & 1);
  else if (dt->kind != K_FLOAT)
    put_le(p, (uint64_t)iv, dt->itemsize);
  else if (c->vkind == V_NAN) /* these NaN bits exactly (the manifest names them) */
    put_le(p, dt->itemsize == 8 ? 0x7FF8000000000000u : 0x7FC00000u, dt->itemsize);
  else
    put_float(p, dv, dt->itemsize);
}

uint8_t *gen_raw(const icase *c, const dtype_desc *dt, const geom *g) {
  uint8_t *raw = malloc(g->nitems * dt->itemsize > 0 ? (size_t)(g->nitems * dt->itemsize) : 1);
  int64_t cc[MAXD] = {0}, zero[MAXD] = {0};
  if (raw == NULL) return NULL;
  for (int64_t i = 0; i < g->nitems; i++) {
    gen_item(c, dt, i, cc, raw + i * dt->itemsize);
    next_in_box(cc, zero, c->shape, c->ndim);
  }
  for (int s = 0; s < 6; s++) {
    if (c->filters[s] != CATERVA_TRUNC_PREC) continue;
    int p = c->fmeta[s], mant = dt->itemsize == 4 ? 23 : 52;
    int zeroed = p >= 0 ? mant - p : -p;
    uint64_t mask = ~((UINT64_C(1) << zeroed) - 1);
    for (int64_t i = 0; i < g->nitems; i++) {
      uint8_t *q = raw + i * dt->itemsize;
      put_le(q, get_le(q, dt->itemsize) & mask, dt->itemsize);
    }
  }
  return raw;
}

void describe_values(const icase *c, const dtype_desc *dt, char *out, size_t cap) {
  const char *boolnote = dt->kind == K_BOOL ? "; bool: the low bit of the integer value" : "";
  switch (c->vkind) {
  case V_RAMP:
    snprintf(out, cap,
             "v = %g*i + %g  (i = C-order linear index; integer dtypes: computed as int64 "
             "(int64)(a)*i+(int64)(b), then truncated to the dtype width, two's complement; "
             "floats: computed in double, float32 rounds the double%s)",
             c->a, c->b, boolnote);
    break;
  case V_STEPS:
    snprintf(out, cap, "v = floor(i / %g) + %g  (int64 arithmetic, truncated to dtype width; "
             "floats exact%s)", c->a, c->b, boolnote);
    break;
  case V_SMOOTH:
    snprintf(out, cap,
             "s = sum_k sin(c_k*0.1/(k+1)) + 0.5*sin(i*1e-4)  (c_k = coordinate along axis k); "
             "v = %g*s + %g computed in double (glibc libm); float32 rounds the double; integer "
             "dtypes: (int64) truncation toward zero, then truncated to the dtype width%s",
             c->a, c->b, boolnote);
    break;
  case V_HASH:
    snprintf(out, cap,
             "h = splitmix64(i + %g) (standard splitmix64 finalizer incl. the "
             "+0x9E3779B97F4A7C15 step); integer dtypes: low bytes of h; float64: "
             "(h>>11)*2^-53; float32: (float)((h>>40)*2^-24)%s",
             c->a, boolnote);
    break;
  case V_ZERO: snprintf(out, cap, "v = 0"); break;
  case V_SPARSE:
    snprintf(out, cap, "v = (i %% %g == 0) ? (i / %g + 1) : 0  (int64 arithmetic, truncated to "
             "dtype width)", c->a, c->a);
    break;
  case V_CONST: snprintf(out, cap, "v = %g (constant)", c->a); break;
  case V_NAN:
    snprintf(out, cap, "v = NaN (float32 bits 0x7fc00000, float64 bits 0x7ff8000000000000)");
    break;
  }
}

/* ---- attributes ----------------------------------------------------------------------- */

const char *const DIM_NAMES[3] = {"time", "lat", "lon"};

/* msgpack {"units": "K", "scale": 2.5, "source": "caterva-sqlite test_interop"}. */
void pack_attrs(msgpack_sbuffer *sb) {
  msgpack_packer pk;
  mp_start(sb, &pk);
  msgpack_pack_map(&pk, 3);
  msgpack_pack_str_with_body(&pk, "units", 5);
  msgpack_pack_str_with_body(&pk, "K", 1);
  msgpack_pack_str_with_body(&pk, "scale", 5);
  msgpack_pack_double(&pk, 2.5);
  msgpack_pack_str_with_body(&pk, "source", 6);
  msgpack_pack_str_with_body(&pk, "caterva-sqlite test_interop", 27);
}

/* The expected msgpack of _ARRAY_DIMENSIONS (for the trailer check). */
void pack_dim_names(msgpack_sbuffer *sb) {
  pack_str_array(sb, DIM_NAMES, 3);
}

/* ---- expected metalayers (fact sheet §5.1), encoded here independently ------------------ */

size_t expected_meta(const icase *c, const char *numpy, int b2nd, uint8_t *out) {
  size_t n = 0;
  out[n++] = b2nd ? 0x97 : 0x95;
  out[n++] = 0;
  out[n++] = (uint8_t)c->ndim;
  out[n++] = (uint8_t)(0x90 | c->ndim);
  for (int k = 0; k < c->ndim; k++) out[n++] = 0xD3, n += put_be(out + n, (uint64_t)c->shape[k], 8);
  out[n++] = (uint8_t)(0x90 | c->ndim);
  for (int k = 0; k < c->ndim; k++)
    out[n++] = 0xD2, n += put_be(out + n, (uint32_t)c->chunks[k], 4);
  out[n++] = (uint8_t)(0x90 | c->ndim);
  for (int k = 0; k < c->ndim; k++)
    out[n++] = 0xD2, n += put_be(out + n, (uint32_t)c->blocks[k], 4);
  if (b2nd) {
    out[n++] = 0;
    out[n++] = 0xDB;
    n += put_be(out + n, strlen(numpy), 4);
    memcpy(out + n, numpy, strlen(numpy));
    n += strlen(numpy);
  }
  return n;
}

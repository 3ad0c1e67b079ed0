/*
 * test_array_meta.c -- the `b2nd` and `caterva` metalayers, dtype strings, default partitions
 * and the derived geometry.
 *
 * Against the golden manifest: encoding each case's shape/chunks/blocks/dtype reproduces the
 * reference's metalayer bytes exactly, decoding them gives the manifest's values, and the
 * geometry gives the frame's chunksize, blocksize and number of chunks. Then malformed
 * metalayers (every truncation, bad markers, out-of-range values) are rejected cleanly.
 */
#include "array_layer_internal.h"
#include "minijson.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>

static caterva_ctx *ctx;

static int load_dims(const mj_node *arr, int64_t *out) {
  if (arr == NULL || arr->type != MJ_ARR || arr->n > CATERVA_MAX_DIM) return -1;
  for (size_t i = 0; i < arr->n; i++) out[i] = arr->items[i]->inum;
  return (int)arr->n;
}

static size_t unhex(const char *hex, uint8_t *out, size_t cap) {
  size_t n = strlen(hex) / 2;
  if (n > cap) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    if (sscanf(hex + 2 * i, "%2x", &v) != 1) return 0;
    out[i] = (uint8_t)v;
  }
  return n;
}

/* Encode and decode one manifest case. */
static void check_case(const mj_node *c) {
  const char *name = mj_getstr(c, "name");
  const char *layer = mj_getstr(c, "metalayer");
  const char *np = mj_getstr(c, "numpy_dtype");
  const char *hex = mj_getstr(c, "metalayer_hex");
  const mj_node *sch = mj_get(c, "schunk");
  int is_b2nd = layer && strcmp(layer, "b2nd") == 0;
  int itemsize = (int)mj_getint(c, "itemsize", 0);
  int64_t shape[CATERVA_MAX_DIM], chunks[CATERVA_MAX_DIM], blocks[CATERVA_MAX_DIM];
  uint8_t want[1024], got[1024];
  size_t wantlen, gotlen = 0;
  cat_array_meta m, d;
  cat_geom g;
  int nd = load_dims(mj_get(c, "shape"), shape);
  int ok;
  if (!name || !hex || !np || nd < 0 ||
      load_dims(mj_get(c, "chunkshape"), chunks) != nd ||
      load_dims(mj_get(c, "blockshape"), blocks) != nd) {
    tap_ok(0, "%s: manifest entry readable", name ? name : "?");
    return;
  }
  wantlen = unhex(hex, want, sizeof want);
  memset(&m, 0, sizeof m);
  m.ndim = nd;
  for (int k = 0; k < nd; k++) {
    m.shape[k] = shape[k];
    m.chunkshape[k] = (int32_t)chunks[k];
    m.blockshape[k] = (int32_t)blocks[k];
  }
  m.dtype = np;
  m.dtype_len = strlen(np);
  if (is_b2nd) {
    ok = cat_meta_encode_b2nd(ctx, &m, got, sizeof got, &gotlen) == 0;
    tap_ok(ok && gotlen == cat_meta_b2nd_size(nd, m.dtype_len), "%s: b2nd size", name);
  } else {
    ok = cat_meta_encode_caterva(ctx, &m, got, sizeof got, &gotlen) == 0;
    tap_ok(ok && gotlen == cat_meta_caterva_size(nd), "%s: caterva size", name);
  }
  tap_ok(ok && gotlen == wantlen && memcmp(got, want, wantlen) == 0,
         "%s: encoded %s metalayer equals the reference's bytes", name, layer);

  ok = cat_meta_decode(ctx, want, wantlen, is_b2nd, &d) == 0 && d.ndim == nd;
  for (int k = 0; ok && k < nd; k++)
    ok = d.shape[k] == shape[k] && d.chunkshape[k] == chunks[k] && d.blockshape[k] == blocks[k] &&
         d.shape_pos[k] > 0;
  if (is_b2nd)
    ok = ok && d.dtype && d.dtype_len == strlen(np) && memcmp(d.dtype, np, d.dtype_len) == 0 &&
         d.dtype_format == 0;
  else
    ok = ok && d.dtype == NULL;
  tap_ok(ok, "%s: decoded metalayer matches the manifest", name);

  /* Geometry: the frame's chunksize/blocksize/nchunks follow from the metalayer. */
  ok = cat_geom_init(ctx, &g, &d, itemsize) == 0;
  tap_ok(ok && g.chunksize == mj_getint(sch, "chunksize", -1) &&
             g.blocksize == mj_getint(sch, "blocksize", -1) &&
             g.nchunks == mj_getint(sch, "nchunks", -1),
         "%s: geometry gives chunksize %d blocksize %d nchunks %lld", name, g.chunksize,
         g.blocksize, (long long)g.nchunks);

  /* Patching the shape in place keeps the length and decodes back. */
  {
    int64_t ns[CATERVA_MAX_DIM];
    cat_array_meta e;
    for (int k = 0; k < nd; k++) ns[k] = shape[k] * 3 + 1;
    memcpy(got, want, wantlen);
    ok = cat_meta_patch_shape(ctx, got, wantlen, &d, ns) == 0 &&
         cat_meta_decode(ctx, got, wantlen, is_b2nd, &e) == 0;
    for (int k = 0; ok && k < nd; k++) ok = e.shape[k] == ns[k] && e.chunkshape[k] == chunks[k];
    tap_ok(ok, "%s: shape patched in place", name);
  }

  /* Every truncation is rejected without reading past the end. */
  ok = 1;
  for (size_t cut = 0; cut < wantlen; cut++) {
    uint8_t *t = malloc(cut ? cut : 1);
    memcpy(t, want, cut);
    if (cat_meta_decode(ctx, t, cut, is_b2nd, &d) >= 0) {
      ok = 0;
      tap_diag("%s: truncation to %zu bytes accepted", name, cut);
    }
    free(t);
  }
  tap_ok(ok, "%s: all %zu truncations rejected", name, wantlen);
}

static void golden_tests(const char *dir) {
  const mj_node *cases;
  mj_node *root = mj_load_manifest(dir, &cases);
  if (root == NULL) {
    tap_diag("no manifest in %s: golden metalayer checks skipped", dir);
    return;
  }
  tap_ok(cases && cases->type == MJ_ARR && cases->n >= 40, "manifest has %zu cases",
         cases ? cases->n : 0);
  for (size_t i = 0; cases && i < cases->n; i++) check_case(cases->items[i]);
  mj_free(root);
}

/* ---- malformed and edge-case metalayers ------------------------------------------------ */

/* s03: <i2, shape [37,53], chunks [10,16], blocks [4,5]. */
static const char *s03_hex =
    "97000292d30000000000000025d3000000000000003592d20000000ad20000001092d200000004d2000000"
    "0500db000000033c6932";

static int decode_hex(const char *hex, int is_b2nd, cat_array_meta *m) {
  uint8_t buf[1024];
  size_t n = unhex(hex, buf, sizeof buf);
  return cat_meta_decode(ctx, buf, n, is_b2nd, m);
}

static void malformed_tests(void) {
  uint8_t buf[2048], base[1024];
  size_t n = unhex(s03_hex, base, sizeof base), len;
  cat_array_meta m;

  tap_ok(decode_hex(s03_hex, 1, &m) == 0 && m.ndim == 2, "s03 metalayer decodes");
  /* The same bytes are accepted under the caterva name too (entries 6-7 ignored). */
  tap_ok(decode_hex(s03_hex, 0, &m) == 0 && m.shape[1] == 53, "b2nd bytes read as caterva");

  memcpy(buf, base, n);
  buf[0] = 0x94; /* 4 entries */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_CORRUPT, "4-entry array rejected");
  memcpy(buf, base, n);
  buf[0] = 0xC0; /* nil, not an array */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_CORRUPT, "non-array rejected");
  memcpy(buf, base, n);
  buf[2] = 3; /* ndim 3 but lists of 2 */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_CORRUPT, "ndim/list mismatch rejected");
  memcpy(buf, base, n);
  buf[4] = 0xC0; /* shape[0] nil */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_CORRUPT, "non-integer shape rejected");
  memcpy(buf, base, n);
  buf[5] = 0xFF; /* shape[0] negative */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_CORRUPT, "negative shape rejected");
  memcpy(buf, base, n);
  memset(buf + 24, 0, 4); /* chunkshape[0] = 0 with shape 37 */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_CORRUPT, "zero chunk extent rejected");
  memcpy(buf, base, n);
  memset(buf + 35, 0, 4); /* blockshape[0] = 0 */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_CORRUPT, "zero block extent rejected");
  memcpy(buf, base, n);
  buf[24] = 0x80; /* chunkshape[0] negative int32 */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_CORRUPT, "negative chunk rejected");
  memcpy(buf, base, n);
  cat_put_be32(buf + 24, 0x7FFFFFFF); /* chunk of 2^31 x 16 items: exceeds a chunk */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_UNSUPPORTED, "oversized chunk rejected");
  memcpy(buf, base, n);
  buf[n - 7] = 0x7F; /* dtype length huge */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_CORRUPT, "dtype past the end rejected");
  memcpy(buf, base, n);
  buf[n - 8] = 0xC3; /* dtype is a bool */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_CORRUPT, "non-string dtype rejected");
  memcpy(buf, base, n);
  buf[n - 1] = 0; /* NUL inside the dtype */
  tap_ok(cat_meta_decode(ctx, buf, n, 1, &m) == CATERVA_E_CORRUPT, "NUL in dtype rejected");

  /* Trailing bytes are ignored; a 5-entry b2nd (no dtype) is accepted. */
  memcpy(buf, base, n);
  buf[n] = 0xC0;
  tap_ok(cat_meta_decode(ctx, buf, n + 1, 1, &m) == 0, "trailing byte ignored");
  memcpy(buf, base, n);
  buf[0] = 0x95;
  tap_ok(cat_meta_decode(ctx, buf, n - 9, 1, &m) == 0 && m.dtype == NULL, "b2nd without dtype");

  /* Compact integer encodings from other writers decode, but cannot be patched. */
  {
    static const uint8_t compact[] = {0x95, 0x00, 0x01, 0x91, 0xCD, 0x03, 0xE8,
                                      0x91, 0xCC, 0xC8, 0x91, 0x32};
    int64_t ns[1] = {5};
    uint8_t copy[sizeof compact];
    memcpy(copy, compact, sizeof compact);
    tap_ok(cat_meta_decode(ctx, compact, sizeof compact, 0, &m) == 0 && m.shape[0] == 1000 &&
               m.chunkshape[0] == 200 && m.blockshape[0] == 50 && m.shape_pos[0] == -1,
           "compact caterva metalayer decodes");
    tap_ok(cat_meta_patch_shape(ctx, copy, sizeof copy, &m, ns) == CATERVA_E_UNSUPPORTED,
           "compact metalayer cannot be resized in place");
  }

  /* Dimension limits: caterva 8, b2nd 16 (with the reference's 0x90+16 list byte). */
  {
    cat_array_meta big;
    cat_geom g;
    memset(&big, 0, sizeof big);
    big.ndim = 16;
    for (int k = 0; k < 16; k++) big.shape[k] = 2, big.chunkshape[k] = 2, big.blockshape[k] = 1;
    big.dtype = "|u1";
    big.dtype_len = 3;
    tap_ok(cat_meta_encode_b2nd(ctx, &big, buf, sizeof buf, &len) == 0 && buf[3] == 0xA0,
           "16-d b2nd encodes");
    tap_ok(cat_meta_decode(ctx, buf, len, 1, &m) == 0 && m.ndim == 16 && m.shape[15] == 2,
           "16-d b2nd decodes");
    tap_ok(cat_geom_init(ctx, &g, &m, 1) == 0 && g.nchunks == 1 && g.nblocks == 65536 &&
               g.chunksize == 65536 && g.blocksize == 1,
           "16-d geometry");
    buf[2] = 17;
    tap_ok(cat_meta_decode(ctx, buf, len, 1, &m) == CATERVA_E_CORRUPT, "17-d b2nd rejected");
    tap_ok(cat_meta_encode_caterva(ctx, &big, buf, sizeof buf, &len) == CATERVA_E_INVALID,
           "16-d caterva refused");
    big.ndim = 9;
    tap_ok(cat_meta_encode_b2nd(ctx, &big, buf, sizeof buf, &len) == 0, "9-d b2nd encodes");
    buf[0] = 0x95;
    tap_ok(cat_meta_decode(ctx, buf, len, 0, &m) == CATERVA_E_CORRUPT,
           "9-d caterva metalayer rejected");
    big.ndim = 0;
    tap_ok(cat_meta_encode_caterva(ctx, &big, buf, sizeof buf, &len) == 0 && len == 6 &&
               cat_meta_decode(ctx, buf, len, 0, &m) == 0 && m.ndim == 0,
           "0-d caterva round trip");
    tap_ok(cat_geom_init(ctx, &g, &m, 8) == 0 && g.nchunks == 1 && g.chunksize == 8 &&
               g.blocksize == 8 && g.nblocks == 1 && g.nitems == 1,
           "0-d geometry: one chunk of one item");
  }

  /* Zero-length dimensions: no chunks; chunk extent 0 allowed only there. */
  {
    static const uint8_t z[] = {0x95, 0x00, 0x02, 0x92, 0xD3, 0, 0, 0, 0, 0, 0, 0, 0,
                                0xD3, 0, 0, 0, 0, 0, 0, 0, 10, 0x92, 0xD2, 0, 0, 0, 0,
                                0xD2, 0, 0, 0, 5, 0x92, 0xD2, 0, 0, 0, 0, 0xD2, 0, 0, 0, 5};
    cat_geom g;
    tap_ok(cat_meta_decode(ctx, z, sizeof z, 0, &m) == 0 && cat_geom_init(ctx, &g, &m, 4) == 0 &&
               g.nchunks == 0 && g.nitems == 0,
           "zero-length dimension with zero chunk extent");
  }

  /* The item count must fit int64 bytes. */
  {
    cat_array_meta h;
    memset(&h, 0, sizeof h);
    h.ndim = 2;
    h.shape[0] = h.shape[1] = (int64_t)1 << 40;
    h.chunkshape[0] = h.chunkshape[1] = 100;
    h.blockshape[0] = h.blockshape[1] = 10;
    tap_ok(cat_meta_validate(ctx, &h, 16, 8) == CATERVA_E_OVERFLOW, "2^80 items rejected");
  }
}

/* ---- dtypes ------------------------------------------------------------------------------ */

static void dtype_tests(void) {
  static const struct {
    const char *s;
    int kind, itemsize, be;
  } cases[] = {
      {"|i1", CATERVA_KIND_INT, 1, 0},       {"<i2", CATERVA_KIND_INT, 2, 0},
      {"<i4", CATERVA_KIND_INT, 4, 0},       {"<i8", CATERVA_KIND_INT, 8, 0},
      {"|u1", CATERVA_KIND_UINT, 1, 0},      {"<u2", CATERVA_KIND_UINT, 2, 0},
      {"<u4", CATERVA_KIND_UINT, 4, 0},      {"<u8", CATERVA_KIND_UINT, 8, 0},
      {"<f2", CATERVA_KIND_FLOAT, 2, 0},     {"<f4", CATERVA_KIND_FLOAT, 4, 0},
      {"<f8", CATERVA_KIND_FLOAT, 8, 0},     {">f8", CATERVA_KIND_FLOAT, 8, 1},
      {"|b1", CATERVA_KIND_BOOL, 1, 0},      {"?", CATERVA_KIND_BOOL, 1, 0},
      {"|S10", CATERVA_KIND_BYTES, 10, 0},   {"|V3", CATERVA_KIND_BYTES, 3, 0},
      {"<c8", CATERVA_KIND_COMPLEX, 8, 0},   {"<c16", CATERVA_KIND_COMPLEX, 16, 0},
      {"<M8[ns]", CATERVA_KIND_DATETIME, 8, 0}, {"<m8[s]", CATERVA_KIND_TIMEDELTA, 8, 0},
      {"<M8", CATERVA_KIND_DATETIME, 8, 0},  {"<U4", CATERVA_KIND_UNICODE, 16, 0},
      {"<f16", CATERVA_KIND_OPAQUE, 16, 0},  {"float64", CATERVA_KIND_FLOAT, 8, 0},
      {"Int32", CATERVA_KIND_INT, 4, 0},     {"uint8", CATERVA_KIND_UINT, 1, 0},
      {"bool", CATERVA_KIND_BOOL, 1, 0},
  };
  static const char *bad[] = {"", "<", "<i3", "<f", "x8", "<i4x", "<M8[ns", "<M8[]", "|b2",
                              "[('a', '<i4')]", "<S0", "<i99999999999"};
  caterva_dtype_info info;
  char buf[32];
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    /* Parse first: argument evaluation order is unspecified, info is printed below. */
    int rc = caterva_dtype_parse(cases[i].s, &info);
    tap_ok(rc == 0 && info.kind == cases[i].kind && info.itemsize == cases[i].itemsize &&
               info.big_endian == cases[i].be,
           "dtype %s: kind %d itemsize %d", cases[i].s, info.kind, info.itemsize);
  }
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    tap_ok(caterva_dtype_parse(bad[i], &info) == CATERVA_E_INVALID &&
               info.kind == CATERVA_KIND_OPAQUE && info.itemsize == 0,
           "dtype '%s' not recognised", bad[i]);
  tap_ok(caterva_dtype_parse(NULL, &info) == CATERVA_E_INVALID, "NULL dtype");
  tap_ok(caterva_dtype_canonical("float32", buf, sizeof buf) == 0 && strcmp(buf, "<f4") == 0,
         "float32 -> <f4");
  tap_ok(caterva_dtype_canonical("<i2", buf, sizeof buf) == 0 && strcmp(buf, "<i2") == 0,
         "<i2 stays");
  tap_ok(caterva_dtype_canonical("float32", buf, 3) == CATERVA_E_NOSPACE, "canonical: no space");
  cat_dtype_default(12, buf, sizeof buf);
  tap_ok(strcmp(buf, "|S12") == 0, "default dtype |S12");
}

/* ---- default partitions ------------------------------------------------------------------ */

static void partition_case(int nd, const int64_t *shape, int itemsize) {
  int32_t c[CATERVA_MAX_DIM] = {0}, b[CATERVA_MAX_DIM] = {0};
  int64_t cb = itemsize, bb = itemsize;
  int ok = cat_default_partition(ctx, nd, shape, itemsize, c, b) == 0;
  for (int k = 0; ok && k < nd; k++) {
    /* extent 0 along the first axis: partitioned for growth (chunks of 1-4 MiB along it) */
    int64_t s = k == 0 && shape[0] == 0 ? CAT_GROWTH_EXTENT : shape[k] < 1 ? 1 : shape[k];
    ok = c[k] >= 1 && b[k] >= 1 && c[k] <= s && b[k] <= c[k];
    /* chunks are multiples of blocks unless the chunk is the whole (short) axis */
    if (ok && c[k] < s) ok = c[k] % b[k] == 0;
    cb *= c[k];
    bb *= b[k];
  }
  ok = ok && bb <= CAT_DEFAULT_BLOCK_BYTES + 0 && cb <= 2 * (int64_t)CAT_DEFAULT_CHUNK_BYTES;
  if (nd > 0 && shape[0] == 0) ok = ok && cb >= CAT_GROWTH_CHUNK_BYTES;
  /* growing: the block takes as many rows along the growth axis as fit the target (one
   * more would not), where halving alone left up to half of it unused */
  if (nd > 0 && shape[0] == 0) ok = ok && bb + bb / b[0] > CAT_DEFAULT_BLOCK_BYTES;
  tap_ok(ok, "default partition %dd itemsize %d: chunk %lld bytes, block %lld bytes", nd,
         itemsize, (long long)cb, (long long)bb);
}

static void partition_tests(void) {
  int64_t s1[] = {10000000}, s2[] = {1000, 1000}, s3[] = {3650, 180, 360}, s4[] = {7, 5, 3, 2};
  int64_t s5[] = {0, 100}, s6[] = {1, 1, 1}, s7[] = {100, 100, 100, 100, 100};
  int64_t g1[] = {0, 90, 180}, g2[] = {0, 721, 1440}, g3[] = {0, 30, 50}, g4[] = {0};
  int32_t c[4] = {10, 0, 0, 0}, b[4] = {0};
  partition_case(1, s1, 8);
  partition_case(2, s2, 4);
  partition_case(3, s3, 8);
  partition_case(4, s4, 2);
  partition_case(2, s5, 4);
  partition_case(3, s6, 255);
  partition_case(5, s7, 1);
  partition_case(0, NULL, 8);
  partition_case(3, g1, 4);
  partition_case(3, g1, 8);
  partition_case(3, g2, 4);
  partition_case(3, g3, 8);
  partition_case(1, g4, 8);
  tap_ok(cat_default_partition(ctx, 2, s2, 4, c, b) == CATERVA_E_INVALID,
         "partially given chunkshape refused");
}

int main(void) {
  const char *dir = getenv("CATERVA_GOLDEN");
  if (caterva_ctx_new(1, &ctx) != 0) return tap_skip_all("no context");
  malformed_tests();
  dtype_tests();
  partition_tests();
  if (dir && *dir) golden_tests(dir);
  else tap_diag("CATERVA_GOLDEN not set: golden metalayer checks skipped");
  caterva_ctx_free(ctx);
  return tap_done();
}

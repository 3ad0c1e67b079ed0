/*
 * test_golden.c -- open every array of the golden set (written by the reference c-blosc2 and
 * caterva libraries) through caterva_array_open and compare with the raw C-order bytes:
 * the whole array, a few boxes through get_slice, and the block iterator's visit count.
 * Contiguous and sparse frames, b2nd and caterva metalayers, optional features included.
 * Skipped when CATERVA_GOLDEN does not name a directory holding manifest.json.
 */
#define _XOPEN_SOURCE 700
#include "array_layer_internal.h"
#include "minijson.h"
#include "tap.h"
#include "testrng.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t rng_state = 0x2545F4914F6CDD1Du;
static uint64_t rnd(void) {
  return test_rng_next(&rng_state);
}
static int64_t rnd_range(int64_t lo, int64_t hi) {
  return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static char tmpdir[256];
static int saved;

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)flag; (void)ftw;
  return remove(path);
}

static int load_dims(const mj_node *arr, int64_t *out) {
  if (arr == NULL || arr->type != MJ_ARR || arr->n > CATERVA_MAX_DIM) return -1;
  for (size_t i = 0; i < arr->n; i++) out[i] = arr->items[i]->inum;
  return (int)arr->n;
}

/* Cut the box [start, stop) out of a C-order array, item by item. */
static void cut_box(const uint8_t *raw, int nd, const int64_t *shape, int is, const int64_t *start,
                    const int64_t *stop, uint8_t *out) {
  int64_t idx[CATERVA_MAX_DIM] = {0}, n = 1;
  for (int k = 0; k < nd; k++) n *= stop[k] - start[k];
  for (int64_t i = 0; i < n; i++) {
    int64_t off = 0;
    for (int k = 0; k < nd; k++) off = off * shape[k] + start[k] + idx[k];
    memcpy(out + i * is, raw + off * is, (size_t)is);
    for (int k = nd - 1; k >= 0; k--) {
      if (++idx[k] < stop[k] - start[k]) break;
      idx[k] = 0;
    }
  }
}

/* Blocks that hold at least one item of the array: the iterator over the whole array
 * must visit exactly these. */
static int64_t blocks_with_items(const cat_geom *g) {
  int64_t total = 0, cc[CATERVA_MAX_DIM];
  for (int64_t n = 0; n < g->nchunks; n++) {
    int64_t per = 1;
    cat_geom_chunk_coords(g, n, cc);
    for (int k = 0; k < g->ndim; k++) {
      int64_t base = cc[k] * g->chunkshape[k];
      int64_t valid = g->shape[k] - base < g->chunkshape[k] ? g->shape[k] - base
                                                             : g->chunkshape[k];
      per *= cat_ceil_div64(valid, g->blockshape[k]);
    }
    total += per;
  }
  return total;
}

static void check_case(caterva_ctx *ctx, const char *dir, const mj_node *c) {
  const char *name = mj_getstr(c, "name"), *file = mj_getstr(c, "file");
  const char *rawf = mj_getstr(c, "raw_file"), *layer = mj_getstr(c, "metalayer");
  const char *np = mj_getstr(c, "numpy_dtype");
  int is = (int)mj_getint(c, "itemsize", 0);
  int64_t shape[CATERVA_MAX_DIM], chunks[CATERVA_MAX_DIM], blocks[CATERVA_MAX_DIM];
  int nd = load_dims(mj_get(c, "shape"), shape);
  char path[4096];
  uint8_t *raw = NULL, *buf = NULL, *want = NULL;
  size_t rawlen = 0;
  caterva_array *a = NULL;
  int ok;
  if (!name || !file || !rawf || !layer || nd < 0 ||
      load_dims(mj_get(c, "chunkshape"), chunks) != nd ||
      load_dims(mj_get(c, "blockshape"), blocks) != nd) {
    tap_ok(0, "%s: manifest entry readable", name ? name : "?");
    return;
  }
  snprintf(path, sizeof path, "%s/%s", dir, rawf);
  raw = (uint8_t *)mj_read_file(path, &rawlen);
  snprintf(path, sizeof path, "%s/%s", dir, file);
  ok = caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) == 0;
  if (!tap_ok(ok && raw != NULL, "%s: open (%s)", name, ok ? "" : caterva_ctx_errmsg(ctx)))
    goto leave;

  ok = caterva_array_ndim(a) == nd && caterva_array_itemsize(a) == is;
  for (int k = 0; ok && k < nd; k++)
    ok = caterva_array_shape(a)[k] == shape[k] && caterva_array_chunkshape(a)[k] == chunks[k] &&
         caterva_array_blockshape(a)[k] == blocks[k];
  if (strcmp(layer, "b2nd") == 0)
    ok = ok && caterva_array_dtype(a) && np && strcmp(caterva_array_dtype(a), np) == 0;
  else
    ok = ok && caterva_array_dtype(a) == NULL;
  tap_ok(ok, "%s: shape, partitioning, itemsize and dtype as in the manifest", name);

  buf = malloc(rawlen ? rawlen : 1);
  ok = caterva_array_to_buffer(ctx, a, buf, (int64_t)rawlen) == 0 &&
       (int64_t)rawlen == caterva_array_nitems(a) * is && memcmp(buf, raw, rawlen) == 0;
  tap_ok(ok, "%s: to_buffer equals the raw bytes (%zu bytes) %s", name, rawlen,
         caterva_ctx_errmsg(ctx));

  /* A few boxes: a single item, a thin slab, random boxes. */
  ok = 1;
  want = malloc(rawlen ? rawlen : 1);
  for (int t = 0; t < 6 && rawlen > 0; t++) {
    int64_t start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM], n = is;
    for (int k = 0; k < nd; k++) {
      start[k] = rnd_range(0, shape[k] - 1);
      stop[k] = t == 0 ? start[k] + 1 : rnd_range(start[k] + 1, shape[k]);
      if (t == 1 && k == nd - 1) start[k] = 0, stop[k] = shape[k];
      n *= stop[k] - start[k];
    }
    cut_box(raw, nd, shape, is, start, stop, want);
    if (caterva_array_get_slice(ctx, a, start, stop, buf, n) != 0 ||
        memcmp(buf, want, (size_t)n) != 0)
      ok = 0;
  }
  tap_ok(ok, "%s: get_slice of 6 boxes equals the raw bytes %s", name, caterva_ctx_errmsg(ctx));

  {
    caterva_block_iter *it = NULL;
    const caterva_block *blk;
    int64_t count = 0;
    int rc = caterva_block_iter_new(ctx, a, NULL, NULL, CATERVA_ITER_NODATA, &it);
    while (rc >= 0 && (rc = caterva_block_iter_next(it, &blk)) > 0) count++;
    tap_ok(rc == 0 && count == blocks_with_items(&a->g), "%s: iterator visits %lld blocks", name,
           (long long)count);
    caterva_block_iter_free(it);
  }

  /* Rewritten by us: a copy with our default partitioning, and the frame saved as is. */
  {
    caterva_array_params q;
    caterva_array *b = NULL;
    char out[4096];
    caterva_array_params_init(&q);
    ok = caterva_array_copy(ctx, a, &q, &b) == 0 &&
         caterva_array_to_buffer(ctx, b, buf, (int64_t)rawlen) == 0 &&
         memcmp(buf, raw, rawlen) == 0;
    tap_ok(ok, "%s: copy with default partitioning %s", name, caterva_ctx_errmsg(ctx));
    caterva_array_free(b);
    b = NULL;
    snprintf(out, sizeof out, "%s/%s.%d", tmpdir, name, ++saved);
    ok = caterva_array_save(ctx, a, out, (saved & 1) ? CATERVA_STORE_CONTIGUOUS
                                                      : CATERVA_STORE_SPARSE) == 0 &&
         caterva_array_open(ctx, out, CATERVA_OPEN_READ, &b) == 0 &&
         caterva_array_to_buffer(ctx, b, buf, (int64_t)rawlen) == 0 &&
         memcmp(buf, raw, rawlen) == 0;
    tap_ok(ok, "%s: saved as a %s frame and reopened %s", name,
           (saved & 1) ? "contiguous" : "sparse", caterva_ctx_errmsg(ctx));
    caterva_array_free(b);
  }

  {
    const mj_node *vl = mj_get(c, "vlmetalayers");
    ok = 1;
    for (size_t i = 0; vl && vl->type == MJ_ARR && i < vl->n; i++) {
      uint8_t *v = NULL;
      int32_t len = 0;
      const char *vname = vl->items[i]->type == MJ_STR ? vl->items[i]->str
                                                        : mj_getstr(vl->items[i], "name");
      if (!vname || caterva_array_attr_get(ctx, a, vname, &v, &len) != 0 || len <= 0) ok = 0;
      free(v);
    }
    tap_ok(ok, "%s: user attributes readable", name);
  }
leave:
  caterva_array_free(a);
  free(raw);
  free(buf);
  free(want);
}

int main(void) {
  const char *dir = getenv("CATERVA_GOLDEN");
  mj_node *root;
  const mj_node *cases;
  caterva_ctx *ctx1 = NULL, *ctx3 = NULL;
  if (dir == NULL || *dir == '\0') return tap_skip_all("CATERVA_GOLDEN not set");
  root = mj_load_manifest(dir, &cases);
  if (root == NULL) return tap_skip_all("no golden manifest (../shared absent)");
  tap_ok(cases && cases->type == MJ_ARR && cases->n >= 40, "manifest lists %zu cases",
         cases ? cases->n : 0);
  if (caterva_ctx_new(1, &ctx1) != 0 || caterva_ctx_new(3, &ctx3) != 0)
    return tap_skip_all("no context");
  {
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/test_golden.XXXXXX", t && *t ? t : "/tmp");
    if (mkdtemp(tmpdir) == NULL) return tap_skip_all("cannot create a temporary directory");
  }
  for (size_t i = 0; cases && i < cases->n; i++) {
    check_case(ctx1, dir, cases->items[i]);
    check_case(ctx3, dir, cases->items[i]); /* the same through parallel block decoding */
  }
  caterva_ctx_free(ctx1);
  caterva_ctx_free(ctx3);
  mj_free(root);
  nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return tap_done();
}

/*
 * test_array.c -- N-d arrays against a naive model: a plain C-order buffer.
 *
 * For shapes of 0 to 8 dimensions (partitions that do not divide the shape, size-1 and
 * zero-length axes) and every store kind: buffer round trips, reopening, get/set_slice of
 * random boxes, the block iterator's coverage (each intersecting block exactly once, the
 * union of intersections exactly the box, data equal to the model), creation with fills,
 * resize, append, copy with new partitioning, attributes and dimension names.
 */
#define _XOPEN_SOURCE 700
#include "array_layer_internal.h"
#include "tap.h"
#include "testrng.h"

#include <fcntl.h>
#include <ftw.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static caterva_ctx *ctx;
static char tmpdir[256];
static int path_counter;

/* ---- helpers -------------------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;
static uint64_t rnd(void) {
  return test_rng_next(&rng_state);
}
static int64_t rnd_range(int64_t lo, int64_t hi) { /* [lo, hi] */
  return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}
static void fill_random(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(rnd() >> 24);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)flag; (void)ftw;
  return remove(path);
}

static void next_path(char *buf, size_t cap, const char *suffix) {
  snprintf(buf, cap, "%s/a%d%s", tmpdir, path_counter++, suffix);
}

/* The model: a C-order buffer of the array. */
typedef struct model {
  int nd, is;
  int64_t shape[CATERVA_MAX_DIM];
  uint8_t *data;
} model;

static int64_t nitems(int nd, const int64_t *shape) {
  int64_t n = 1;
  for (int k = 0; k < nd; k++) n *= shape[k];
  return n;
}

/* Linear C-order index of coordinates c in shape. */
static int64_t lin(int nd, const int64_t *shape, const int64_t *c) {
  int64_t n = 0;
  for (int k = 0; k < nd; k++) n = n * shape[k] + c[k];
  return n;
}

/* Copy box [start, stop) of the model out (to_model = 0) or in. Naive, item by item. */
static void model_box(model *m, const int64_t *start, const int64_t *stop, uint8_t *buf,
                      int to_model) {
  int64_t idx[CATERVA_MAX_DIM], bshape[CATERVA_MAX_DIM], c[CATERVA_MAX_DIM];
  int64_t n = 1;
  for (int k = 0; k < m->nd; k++) {
    bshape[k] = stop[k] - start[k];
    n *= bshape[k];
    idx[k] = 0;
  }
  for (int64_t i = 0; i < n; i++) {
    for (int k = 0; k < m->nd; k++) c[k] = start[k] + idx[k];
    uint8_t *mp = m->data + lin(m->nd, m->shape, c) * m->is;
    uint8_t *bp = buf + i * m->is;
    if (to_model) memcpy(mp, bp, (size_t)m->is);
    else memcpy(bp, mp, (size_t)m->is);
    for (int k = m->nd - 1; k >= 0; k--) {
      if (++idx[k] < bshape[k]) break;
      idx[k] = 0;
    }
  }
}

/* Resize the model; new items are zero. */
static void model_resize(model *m, const int64_t *ns) {
  int64_t n = nitems(m->nd, ns), c[CATERVA_MAX_DIM], idx[CATERVA_MAX_DIM] = {0};
  uint8_t *d = calloc((size_t)(n ? n : 1), (size_t)m->is);
  for (int64_t i = 0; i < n; i++) {
    int inside = 1;
    for (int k = 0; k < m->nd; k++) {
      c[k] = idx[k];
      inside &= c[k] < m->shape[k];
    }
    if (inside) memcpy(d + i * m->is, m->data + lin(m->nd, m->shape, c) * m->is, (size_t)m->is);
    for (int k = m->nd - 1; k >= 0; k--) {
      if (++idx[k] < ns[k]) break;
      idx[k] = 0;
    }
  }
  free(m->data);
  m->data = d;
  memcpy(m->shape, ns, sizeof(int64_t) * (size_t)m->nd);
}

static int array_equals_model(caterva_array *a, const model *m) {
  int64_t n = nitems(m->nd, m->shape) * m->is;
  uint8_t *buf = malloc((size_t)(n ? n : 1));
  int ok = caterva_array_to_buffer(ctx, a, buf, n) == 0 && memcmp(buf, m->data, (size_t)n) == 0;
  free(buf);
  return ok;
}

static void random_box(int nd, const int64_t *shape, int64_t *start, int64_t *stop) {
  for (int k = 0; k < nd; k++) {
    start[k] = rnd_range(0, shape[k]);
    stop[k] = rnd_range(start[k], shape[k]);
    if (rnd() % 4 == 0) { start[k] = 0; stop[k] = shape[k]; }
  }
}

/* ---- the iterator against the geometry ------------------------------------------------- */

/* Number of blocks intersecting the box, by brute force over every block of every chunk. */
static int64_t expected_blocks(const cat_geom *g, const int64_t *start, const int64_t *stop) {
  int64_t count = 0, cc[CATERVA_MAX_DIM];
  for (int k = 0; k < g->ndim; k++)
    if (start[k] >= stop[k]) return 0;
  for (int64_t n = 0; n < g->nchunks; n++) {
    cat_geom_chunk_coords(g, n, cc);
    for (int32_t b = 0; b < g->nblocks; b++) {
      int32_t rest = b, bc[CATERVA_MAX_DIM];
      int hit = 1;
      for (int k = g->ndim - 1; k >= 0; k--) {
        bc[k] = rest % g->blockgrid[k];
        rest /= g->blockgrid[k];
      }
      for (int k = 0; k < g->ndim; k++) {
        int64_t cbase = cc[k] * g->chunkshape[k];
        int64_t lo = cbase + (int64_t)bc[k] * g->blockshape[k];
        int64_t hi = lo + g->blockshape[k];
        int64_t vend = cbase + g->chunkshape[k] < g->shape[k] ? cbase + g->chunkshape[k]
                                                               : g->shape[k];
        if (hi > vend) hi = vend;
        if (lo < start[k]) lo = start[k];
        if (hi > stop[k]) hi = stop[k];
        hit &= lo < hi;
      }
      count += hit;
    }
  }
  return count;
}

/* Walk the box; check order, bounds, coverage (every item exactly once) and data. */
static int check_iter(caterva_array *a, const model *m, const int64_t *start, const int64_t *stop,
                      int flags, int64_t *nvisited) {
  const cat_geom *g = &a->g;
  caterva_block_iter *it = NULL;
  const caterva_block *blk;
  int64_t bshape[CATERVA_MAX_DIM], nbox = 1, count = 0, lastc = -1, lastb = -1;
  uint8_t *seen;
  int ok = 1, rc = 0;
  for (int k = 0; k < g->ndim; k++) {
    bshape[k] = stop[k] - start[k];
    nbox *= bshape[k];
  }
  seen = calloc((size_t)(nbox ? nbox : 1), 1);
  if (caterva_block_iter_new(ctx, a, start, stop, flags, &it) != 0) ok = 0;
  while (ok && (rc = caterva_block_iter_next(it, &blk)) > 0) {
    int64_t idx[CATERVA_MAX_DIM], n = 1, c[CATERVA_MAX_DIM], inb[CATERVA_MAX_DIM];
    count++;
    if (blk->nchunk < lastc || (blk->nchunk == lastc && blk->nblock <= lastb)) ok = 0;
    lastc = blk->nchunk;
    lastb = blk->nblock;
    if ((flags & CATERVA_ITER_NODATA) ? blk->data != NULL : blk->data == NULL) ok = 0;
    for (int k = 0; k < g->ndim; k++) {
      if (blk->start[k] < start[k] || blk->stop[k] > stop[k] || blk->start[k] >= blk->stop[k] ||
          blk->start[k] < blk->origin[k] ||
          blk->stop[k] > blk->origin[k] + g->blockshape[k])
        ok = 0;
      n *= blk->stop[k] - blk->start[k];
      idx[k] = 0;
    }
    for (int64_t i = 0; ok && i < n; i++) {
      int64_t boxc[CATERVA_MAX_DIM];
      for (int k = 0; k < g->ndim; k++) {
        c[k] = blk->start[k] + idx[k];
        boxc[k] = c[k] - start[k];
        inb[k] = c[k] - blk->origin[k];
      }
      seen[lin(g->ndim, bshape, boxc)]++;
      if (blk->data) {
        int64_t off = 0;
        for (int k = 0; k < g->ndim; k++) off = off * g->blockshape[k] + inb[k];
        const uint8_t *bp = blk->data + off * g->itemsize;
        if (memcmp(bp, m->data + lin(m->nd, m->shape, c) * m->is, (size_t)m->is)) ok = 0;
      }
      for (int k = g->ndim - 1; k >= 0; k--) {
        if (++idx[k] < blk->stop[k] - blk->start[k]) break;
        idx[k] = 0;
      }
    }
  }
  if (rc < 0) ok = 0;
  for (int64_t i = 0; ok && i < nbox; i++)
    if (seen[i] != 1) ok = 0;
  if (count != expected_blocks(g, start, stop)) ok = 0;
  *nvisited = count;
  caterva_block_iter_free(it);
  free(seen);
  return ok;
}

/* ---- one configuration through everything ---------------------------------------------- */

typedef struct config {
  int nd, is;
  int64_t shape[CATERVA_MAX_DIM];
  int32_t chunks[CATERVA_MAX_DIM], blocks[CATERVA_MAX_DIM];
} config;

static const char *store_name(int store) {
  return store == CATERVA_STORE_MEMORY ? "memory"
         : store == CATERVA_STORE_CONTIGUOUS ? "contiguous" : "sparse";
}

static void params_from(caterva_array_params *p, const config *c, int store, char *path,
                        size_t cap) {
  caterva_array_params_init(p);
  p->ndim = c->nd;
  p->itemsize = c->is;
  memcpy(p->shape, c->shape, sizeof c->shape);
  memcpy(p->chunkshape, c->chunks, sizeof c->chunks);
  memcpy(p->blockshape, c->blocks, sizeof c->blocks);
  p->store = store;
  if (store != CATERVA_STORE_MEMORY) {
    next_path(path, cap, store == CATERVA_STORE_SPARSE ? ".b2frame" : ".b2nd");
    p->path = path;
  }
  p->cparams.clevel = (int)(rnd() % 6);
  p->cparams.codec = (int)(rnd() % 2) ? CATERVA_ZSTD : CATERVA_BLOSCLZ;
}

static void run_config(const config *c, int store, const char *label) {
  caterva_array_params p;
  caterva_array *a = NULL, *b = NULL;
  char path[512] = "";
  model m;
  int64_t n, start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM];
  int ok;
  m.nd = c->nd;
  m.is = c->is;
  memcpy(m.shape, c->shape, sizeof m.shape);
  n = nitems(c->nd, c->shape);
  m.data = malloc((size_t)(n ? n : 1) * (size_t)c->is);
  fill_random(m.data, (size_t)(n * c->is));
  params_from(&p, c, store, path, sizeof path);

  ok = caterva_array_from_buffer(ctx, &p, m.data, n * c->is, &a) == 0;
  if (!tap_ok(ok, "%s/%s: from_buffer (%s)", label, store_name(store), caterva_ctx_errmsg(ctx)))
    goto leave;
  tap_ok(array_equals_model(a, &m), "%s/%s: to_buffer round trip", label, store_name(store));

  if (store != CATERVA_STORE_MEMORY) {
    caterva_array_free(a);
    a = NULL;
    ok = caterva_array_open(ctx, path, CATERVA_OPEN_WRITE, &a) == 0;
    if (!tap_ok(ok, "%s/%s: reopen (%s)", label, store_name(store), caterva_ctx_errmsg(ctx)))
      goto leave;
    ok = caterva_array_ndim(a) == c->nd && caterva_array_itemsize(a) == c->is;
    for (int k = 0; ok && k < c->nd; k++)
      ok = caterva_array_shape(a)[k] == c->shape[k] &&
           caterva_array_chunkshape(a)[k] == c->chunks[k] &&
           caterva_array_blockshape(a)[k] == c->blocks[k];
    tap_ok(ok && caterva_array_dtype(a) != NULL && a->has_b2nd &&
               a->has_caterva == (c->nd <= 8),
           "%s/%s: reopened geometry, dtype %s", label, store_name(store),
           caterva_array_dtype(a) ? caterva_array_dtype(a) : "NULL");
    tap_ok(array_equals_model(a, &m), "%s/%s: reopened content", label, store_name(store));
  }

  /* A memory array saved to a file reads back the same. */
  if (store == CATERVA_STORE_MEMORY) {
    char spath[512];
    next_path(spath, sizeof spath, (rnd() & 1) ? ".b2frame" : ".b2nd");
    int sstore = strstr(spath, ".b2frame") ? CATERVA_STORE_SPARSE : CATERVA_STORE_CONTIGUOUS;
    ok = caterva_array_save(ctx, a, spath, sstore) == 0 &&
         caterva_array_open(ctx, spath, CATERVA_OPEN_READ, &b) == 0 && array_equals_model(b, &m);
    tap_ok(ok, "%s/%s: saved as %s and reopened (%s)", label, store_name(store),
           store_name(sstore), caterva_ctx_errmsg(ctx));
    caterva_array_free(b);
    b = NULL;
  }

  /* Random boxes: get_slice and the iterator. */
  ok = 1;
  int iter_ok = 1, reset_ok = 1;
  caterva_block_iter *rit = NULL;
  if (caterva_block_iter_new(ctx, a, NULL, NULL, 0, &rit) != 0) reset_ok = 0;
  for (int t = 0; t < 12; t++) {
    int64_t nb = c->is, visited;
    random_box(c->nd, c->shape, start, stop);
    for (int k = 0; k < c->nd; k++) nb *= stop[k] - start[k];
    uint8_t *got = malloc((size_t)(nb ? nb : 1)), *want = malloc((size_t)(nb ? nb : 1));
    model_box(&m, start, stop, want, 0);
    if (caterva_array_get_slice(ctx, a, start, stop, got, nb) != 0 ||
        memcmp(got, want, (size_t)nb) != 0)
      ok = 0;
    if (!check_iter(a, &m, start, stop, t % 3 == 2 ? CATERVA_ITER_NODATA : 0, &visited))
      iter_ok = 0;
    if (rit) { /* the same box through a reused iterator */
      const caterva_block *blk;
      int64_t cnt = 0;
      int rc;
      caterva_block_iter_reset(rit, start, stop);
      while ((rc = caterva_block_iter_next(rit, &blk)) > 0) cnt++;
      if (rc != 0 || cnt != visited) reset_ok = 0;
    }
    free(got);
    free(want);
  }
  tap_ok(ok, "%s/%s: get_slice of 12 random boxes", label, store_name(store));
  tap_ok(iter_ok, "%s/%s: iterator visits each block once and covers each box exactly",
         label, store_name(store));
  tap_ok(reset_ok, "%s/%s: a reset iterator visits the same blocks", label, store_name(store));
  caterva_block_iter_free(rit);

  /* Random writes. */
  ok = 1;
  for (int t = 0; t < 6 && ok; t++) {
    int64_t nb = c->is;
    random_box(c->nd, c->shape, start, stop);
    for (int k = 0; k < c->nd; k++) nb *= stop[k] - start[k];
    uint8_t *src = malloc((size_t)(nb ? nb : 1));
    fill_random(src, (size_t)nb);
    if (t == 3) memset(src, 0, (size_t)nb); /* may collapse chunks to zero chunks */
    if (caterva_array_set_slice(ctx, a, start, stop, src, nb) != 0) ok = 0;
    model_box(&m, start, stop, src, 1);
    free(src);
    if (!array_equals_model(a, &m)) ok = 0;
  }
  tap_ok(ok, "%s/%s: set_slice of 6 random boxes (%s)", label, store_name(store),
         caterva_ctx_errmsg(ctx));

  /* Copy with another partitioning (automatic), then with the same one. */
  {
    caterva_array_params q;
    caterva_array_params_init(&q);
    ok = caterva_array_copy(ctx, a, &q, &b) == 0 && array_equals_model(b, &m);
    tap_ok(ok, "%s/%s: copy with default partitioning", label, store_name(store));
    caterva_array_free(b);
    b = NULL;
    caterva_array_params_init(&q);
    memcpy(q.chunkshape, c->chunks, sizeof c->chunks);
    memcpy(q.blockshape, c->blocks, sizeof c->blocks);
    q.cparams = *caterva_schunk_cparams(a->sc);
    ok = caterva_array_copy(ctx, a, &q, &b) == 0 && array_equals_model(b, &m);
    tap_ok(ok, "%s/%s: copy with the same partitioning", label, store_name(store));
    caterva_array_free(b);
    b = NULL;
  }

  /* Resize: grow every axis, then shrink below the original, then back. */
  if (c->nd > 0) {
    int64_t ns[CATERVA_MAX_DIM];
    /* (modest growth in many dimensions: the chunk count is a product over the axes) */
    for (int k = 0; k < c->nd; k++)
      ns[k] = c->shape[k] + rnd_range(0, c->nd <= 4 ? c->chunks[k] + 2 : 1);
    ok = caterva_array_resize(ctx, a, ns) == 0;
    model_resize(&m, ns);
    tap_ok(ok && array_equals_model(a, &m), "%s/%s: resize grow (%s)", label, store_name(store),
           caterva_ctx_errmsg(ctx));
    for (int k = 0; k < c->nd; k++) ns[k] = rnd_range(c->shape[k] > 0 ? 1 : 0, c->shape[k]);
    ok = caterva_array_resize(ctx, a, ns) == 0;
    model_resize(&m, ns);
    tap_ok(ok && array_equals_model(a, &m), "%s/%s: resize shrink", label, store_name(store));
    ok = caterva_array_resize(ctx, a, c->shape) == 0;
    model_resize(&m, c->shape);
    tap_ok(ok && array_equals_model(a, &m), "%s/%s: resize back", label, store_name(store));

    /* Append along the last and the first axis. */
    for (int axis = c->nd - 1; axis >= 0; axis -= (c->nd > 1 ? c->nd - 1 : 1)) {
      int64_t slab = c->is, add = rnd_range(1, 5);
      for (int k = 0; k < c->nd; k++)
        if (k != axis) slab *= m.shape[k];
      uint8_t *src = malloc((size_t)(slab * add != 0 ? slab * add : 1));
      fill_random(src, (size_t)(slab * add));
      ok = caterva_array_append(ctx, a, src, slab * add, axis) == 0;
      memcpy(ns, m.shape, sizeof ns);
      for (int k = 0; k < c->nd; k++) start[k] = 0, stop[k] = m.shape[k];
      start[axis] = m.shape[axis];
      ns[axis] += add;
      stop[axis] = ns[axis];
      model_resize(&m, ns);
      model_box(&m, start, stop, src, 1);
      free(src);
      tap_ok(ok && array_equals_model(a, &m), "%s/%s: append %lld along axis %d", label,
             store_name(store), (long long)add, axis);
    }
    if (store != CATERVA_STORE_MEMORY) {
      caterva_array_free(a);
      a = NULL;
      ok = caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) == 0 && array_equals_model(a, &m);
      tap_ok(ok, "%s/%s: reopened after resize/append", label, store_name(store));
    }
  }
leave:
  caterva_array_free(a);
  free(m.data);
}

static const config configs[] = {
    {0, 8, {0}, {0}, {0}},
    {1, 1, {1000}, {300}, {64}},
    {1, 8, {1}, {1}, {1}},
    {1, 4, {0}, {5}, {2}},
    {2, 2, {37, 53}, {10, 16}, {4, 5}},
    {2, 4, {20, 20}, {20, 20}, {7, 3}},       /* padding inside chunks only */
    {2, 8, {5, 0}, {2, 3}, {1, 2}},
    {2, 3, {17, 1}, {4, 1}, {4, 1}},          /* odd itemsize, size-1 axis */
    {3, 4, {23, 19, 17}, {10, 10, 10}, {5, 3, 4}},
    {3, 8, {13, 14, 15}, {6, 7, 8}, {3, 3, 3}},
    {3, 1, {9, 9, 9}, {4, 4, 4}, {5, 5, 5}},  /* blocks larger than chunks */
    {4, 4, {9, 10, 11, 12}, {4, 5, 6, 7}, {2, 3, 3, 4}},
    {5, 2, {3, 4, 5, 4, 3}, {2, 3, 2, 3, 2}, {1, 2, 2, 1, 2}},
    {6, 1, {2, 3, 4, 3, 2, 3}, {2, 2, 3, 2, 1, 2}, {1, 2, 2, 1, 1, 1}},
    {8, 2, {3, 4, 2, 5, 3, 2, 4, 3}, {2, 2, 2, 2, 2, 2, 2, 2}, {1, 2, 1, 2, 1, 2, 1, 2}},
};

/* ---- creation with fills, 9+ dims, errors, names ---------------------------------------- */

/* A reader of a small file (at most 64 KiB) reads the bytes its open read: the file is read
 * whole then, not mapped. Here the file is then overwritten in place with zeros (as no writer
 * of ours does: they append, or rename a new file over it), and the reader still reads the
 * values; through a map it read the zeros and failed ("malformed" chunks). */
static void snapshot_reader_test(void) {
  caterva_array_params p;
  caterva_array *a = NULL, *r = NULL;
  char path[512];
  double buf[60 * 60], got[60 * 60];
  struct stat st;
  uint8_t *zeros = NULL;
  int fd, ok;
  caterva_array_params_init(&p);
  p.ndim = 2;
  p.shape[0] = p.shape[1] = 60;
  p.chunkshape[0] = p.chunkshape[1] = 30;
  p.blockshape[0] = p.blockshape[1] = 15;
  p.dtype = "<f8";
  p.store = CATERVA_STORE_CONTIGUOUS;
  next_path(path, sizeof path, ".b2nd");
  p.path = path;
  for (int i = 0; i < 60 * 60; i++) buf[i] = i * 0.5;
  ok = caterva_array_from_buffer(ctx, &p, buf, sizeof buf, &a) == 0;
  caterva_array_free(a);
  ok = ok && stat(path, &st) == 0 && st.st_size <= 65536 &&
       caterva_array_open(ctx, path, CATERVA_OPEN_READ, &r) == 0;
  zeros = ok ? calloc(1, (size_t)st.st_size) : NULL;
  fd = ok ? open(path, O_WRONLY) : -1;
  ok = ok && zeros != NULL && fd >= 0 &&
       pwrite(fd, zeros, (size_t)st.st_size, 0) == (ssize_t)st.st_size;
  if (fd >= 0) close(fd);
  ok = ok && caterva_array_to_buffer(ctx, r, got, sizeof got) == 0 &&
       memcmp(got, buf, sizeof buf) == 0;
  tap_ok(ok, "a reader of a %lld-byte file reads what its open read after the file is overwritten",
         (long long)st.st_size);
  caterva_array_free(r);
  free(zeros);
}

static void fill_tests(void) {
  caterva_array_params p;
  caterva_array *a = NULL;
  double v = 2.5;
  int64_t n;
  uint8_t *buf;
  int ok;
  caterva_array_params_init(&p);
  p.ndim = 3;
  p.shape[0] = 10; p.shape[1] = 11; p.shape[2] = 12;
  p.chunkshape[0] = p.chunkshape[1] = p.chunkshape[2] = 5;
  p.blockshape[0] = p.blockshape[1] = p.blockshape[2] = 3;
  p.dtype = "float64";
  n = 10 * 11 * 12;
  buf = malloc((size_t)n * 8);

  ok = caterva_array_create(ctx, &p, CATERVA_FILL_VALUE, &v, &a) == 0 &&
       caterva_array_to_buffer(ctx, a, buf, n * 8) == 0 &&
       strcmp(caterva_array_dtype(a), "<f8") == 0;
  for (int64_t i = 0; ok && i < n; i++) ok = ((double *)buf)[i] == 2.5;
  tap_ok(ok, "fill value 2.5 (float64 -> <f8)");
  {
    int64_t ns[3] = {12, 13, 14};
    model m = {3, 8, {10, 11, 12}, malloc((size_t)n * 8)};
    memcpy(m.data, buf, (size_t)n * 8);
    ok = caterva_array_resize(ctx, a, ns) == 0;
    model_resize(&m, ns);
    tap_ok(ok && array_equals_model(a, &m), "grown value-filled array: new items zero");
    free(m.data);
  }
  caterva_array_free(a);

  ok = caterva_array_create(ctx, &p, CATERVA_FILL_NAN, NULL, &a) == 0 &&
       caterva_array_to_buffer(ctx, a, buf, n * 8) == 0;
  for (int64_t i = 0; ok && i < n; i++) ok = isnan(((double *)buf)[i]);
  tap_ok(ok, "fill NaN");
  caterva_array_free(a);

  ok = caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a) == 0 &&
       caterva_array_to_buffer(ctx, a, buf, n * 8) == 0;
  for (int64_t i = 0; ok && i < n; i++) ok = ((double *)buf)[i] == 0;
  tap_ok(ok && caterva_schunk_chunk_special(a->sc, 0) == CATERVA_SPECIAL_ZERO,
         "fill zeros (special chunks)");
  caterva_array_free(a);

  ok = caterva_array_create(ctx, &p, CATERVA_FILL_UNINIT, NULL, &a) == 0 &&
       caterva_array_to_buffer(ctx, a, buf, n * 8) == 0;
  tap_ok(ok, "fill uninit");
  caterva_array_free(a);

  p.dtype = "<i4";
  tap_ok(caterva_array_create(ctx, &p, CATERVA_FILL_NAN, NULL, &a) == CATERVA_E_INVALID,
         "NaN fill refused for int32");
  p.dtype = "<i4";
  p.itemsize = 8;
  tap_ok(caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a) == CATERVA_E_INVALID,
         "dtype/itemsize mismatch refused");
  free(buf);
}

static void big_ndim_tests(void) {
  /* 12 dimensions: b2nd only. */
  config c = {12, 2, {2, 3, 2, 1, 2, 3, 2, 2, 1, 2, 3, 2}, {1, 2, 2, 1, 1, 2, 2, 1, 1, 2, 2, 1},
              {1, 1, 2, 1, 1, 1, 2, 1, 1, 2, 1, 1}};
  run_config(&c, CATERVA_STORE_MEMORY, "12d");
  run_config(&c, CATERVA_STORE_CONTIGUOUS, "12d");
  config d = {16, 1, {2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2},
              {1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2},
              {1, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1, 2}};
  run_config(&d, CATERVA_STORE_SPARSE, "16d");
}

/* Boxes of 64 MiB and more are written with streaming stores: whole and offset boxes, at 1
** and 2 threads, into buffers aligned on 16, on 8 (not 16) and on 4 bytes (plain copies). */
static void large_read_tests(void) {
  const int64_t shape[3] = {272, 256, 130}, n = 272 * 256 * 130;
  const int64_t zero[3] = {0, 0, 0}, lo[3] = {1, 2, 3}, hi[3] = {271, 255, 129};
  caterva_array_params p;
  caterva_array *a = NULL;
  caterva_ctx *c2 = NULL;
  int64_t *src = malloc((size_t)n * 8);
  uint8_t *raw = malloc((size_t)n * 8 + 16);
  int ok = src != NULL && raw != NULL && caterva_ctx_new(2, &c2) == 0;
  caterva_array_params_init(&p);
  p.ndim = 3;
  for (int k = 0; k < 3; k++) {
    p.shape[k] = shape[k];
    p.chunkshape[k] = 64;
    p.blockshape[k] = 16;
  }
  p.dtype = "<i8";
  for (int64_t i = 0; ok && i < n; i++) src[i] = i * 7 - 3;
  ok = ok && caterva_array_from_buffer(ctx, &p, src, n * 8, &a) == 0;
  for (int t = 0; ok && t < 2; t++) {
    caterva_ctx *c = t ? c2 : ctx;
    for (int off = 0; ok && off <= 8; off += 4) {
      uint8_t *out = raw + (((uintptr_t)raw & 15) ? 8 : 0) + off; /* may be misaligned */
      int good = 1;
      memset(raw, 0, (size_t)n * 8 + 16);
      ok = caterva_array_get_slice(c, a, zero, shape, out, n * 8) == 0;
      good = ok && memcmp(out, src, (size_t)n * 8) == 0;
      ok = ok && caterva_array_get_slice(c, a, lo, hi, out, n * 8) == 0;
      for (int64_t i = lo[0], j = 0; ok && good && i < hi[0]; i++)
        for (int64_t k = lo[1]; good && k < hi[1]; k++)
          for (int64_t l = lo[2]; l < hi[2]; l++, j++)
            if (memcmp(out + 8 * j, &src[(i * shape[1] + k) * shape[2] + l], 8) != 0) good = 0;
      tap_ok(ok && good, "72 MB array, %d thread(s), buffer offset %d: whole and a 69 MB box", t + 1,
             off);
    }
  }
  tap_ok(ok, "large reads (%s)", caterva_ctx_errmsg(ctx));
  caterva_array_free(a);
  caterva_ctx_free(c2);
  free(src);
  free(raw);
}

static void error_tests(void) {
  caterva_array_params p;
  caterva_array *a = NULL;
  uint8_t buf[64];
  int64_t start[2] = {0, 0}, stop[2] = {3, 4}, bad[2] = {3, 9};
  caterva_array_params_init(&p);
  p.ndim = 2;
  p.shape[0] = 5; p.shape[1] = 8;
  p.itemsize = 1;
  tap_ok(caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a) == 0,
         "create with automatic partitioning");
  tap_ok(a && a->g.chunkshape[0] == 5 && a->g.chunkshape[1] == 8 && a->g.blockshape[0] == 5,
         "small array: one chunk, one block");
  tap_ok(a && strcmp(caterva_array_dtype(a), "|S1") == 0, "no dtype: |S1");
  tap_ok(caterva_array_get_slice(ctx, a, start, bad, buf, sizeof buf) == CATERVA_E_RANGE,
         "slice beyond the shape: RANGE");
  tap_ok(caterva_array_get_slice(ctx, a, start, stop, buf, 11) == CATERVA_E_NOSPACE,
         "small output buffer: NOSPACE");
  tap_ok(caterva_array_set_slice(ctx, a, start, stop, buf, 13) == CATERVA_E_INVALID,
         "wrong input length: INVALID");
  tap_ok(caterva_array_append(ctx, a, buf, 7, 0) == CATERVA_E_INVALID,
         "append of a partial slab: INVALID");
  tap_ok(caterva_array_append(ctx, a, buf, 8, 2) == CATERVA_E_INVALID, "append axis out of range");
  caterva_array_free(a);
  tap_ok(caterva_array_from_buffer(ctx, &p, buf, 39, &a) == CATERVA_E_INVALID && a == NULL,
         "from_buffer with the wrong length");
  p.chunkshape[0] = 2;
  tap_ok(caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a) == CATERVA_E_INVALID &&
             a == NULL,
         "partially given chunkshape refused");
  p.chunkshape[0] = 0;
  p.ndim = 17;
  tap_ok(caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a) == CATERVA_E_INVALID,
         "17 dimensions refused");
  {
    char path[512];
    next_path(path, sizeof path, ".b2nd");
    tap_ok(caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) < 0 && a == NULL,
           "opening a missing file fails");
  }
}

static void names_tests(void) {
  caterva_array_params p;
  caterva_array *a = NULL, *b = NULL;
  char **names = NULL;
  const char *dims[3] = {"time", "lat", "lon"};
  uint8_t *v = NULL;
  int32_t len = 0;
  char path[512];
  int ok;
  caterva_array_params_init(&p);
  p.ndim = 3;
  p.shape[0] = 4; p.shape[1] = 5; p.shape[2] = 6;
  p.dtype = "<f4";
  p.store = CATERVA_STORE_CONTIGUOUS;
  next_path(path, sizeof path, ".b2nd");
  p.path = path;
  ok = caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a) == 0;
  tap_ok(ok && caterva_array_get_dim_names(ctx, a, &names) == CATERVA_E_NOTFOUND &&
             names == NULL,
         "no dimension names yet");
  ok = caterva_array_set_dim_names(ctx, a, dims) == 0 &&
       caterva_array_attr_set(ctx, a, "units", "\xa3m/s", 4) == 0;
  tap_ok(ok, "set dimension names and an attribute");
  caterva_array_free(a);
  a = NULL;
  ok = caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) == 0 &&
       caterva_array_get_dim_names(ctx, a, &names) == 0;
  tap_ok(ok && names && strcmp(names[0], "time") == 0 && strcmp(names[2], "lon") == 0,
         "dimension names survive reopening");
  caterva_array_free_names(names, 3);
  tap_ok(caterva_array_attr_get(ctx, a, "units", &v, &len) == 0 && len == 4 &&
             memcmp(v, "\xa3m/s", 4) == 0,
         "attribute survives reopening");
  free(v);
  {
    caterva_array_params q;
    caterva_array_params_init(&q);
    q.chunkshape[0] = q.chunkshape[1] = q.chunkshape[2] = 2;
    q.blockshape[0] = q.blockshape[1] = q.blockshape[2] = 1;
    names = NULL;
    ok = caterva_array_copy(ctx, a, &q, &b) == 0 &&
         caterva_array_get_dim_names(ctx, b, &names) == 0 && strcmp(names[1], "lat") == 0 &&
         strcmp(caterva_array_dtype(b), "<f4") == 0;
    tap_ok(ok, "copy keeps dtype and attributes");
    caterva_array_free_names(names, 3);
  }
  /* A malformed _ARRAY_DIMENSIONS is reported, not trusted: a wrong number of names, a NUL
   * byte inside a name, and a lying element count (found by fuzz_array: msgpack-c allocated
   * 128 GiB for it; it is refused before msgpack-c sees it). */
  {
    static const struct {
      const char *mp;
      int32_t len;
      const char *what;
    } bad[] = {
        {"\x92\xa1x\xa1y", 5, "wrong number of names rejected"},
        {"\x93\xa2x\x00\xa1y\xa1z", 8, "a NUL byte in a dimension name is refused"},
        {"\xdd\x20\x00\x00\x00\xa1y", 7,
         "an array header that declares more names than there are bytes is refused"},
    };
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
      ok = caterva_array_attr_set(ctx, b, "_ARRAY_DIMENSIONS", bad[k].mp, bad[k].len) == 0;
      names = NULL;
      tap_ok(ok && caterva_array_get_dim_names(ctx, b, &names) == CATERVA_E_CORRUPT && !names,
             "%s", bad[k].what);
    }
  }
  /* An empty name (msgpack-c gives it a NULL pointer: found by fuzz_array under UBSan) is
   * read as "". */
  ok = caterva_array_attr_set(ctx, b, "_ARRAY_DIMENSIONS", "\x93\xa0\xa1y\xa1z", 6) == 0;
  names = NULL;
  tap_ok(ok && caterva_array_get_dim_names(ctx, b, &names) == 0 && names && names[0][0] == 0 &&
             strcmp(names[1], "y") == 0,
         "an empty dimension name is read as an empty string");
  caterva_array_free_names(names, 3);
  tap_ok(caterva_msgpack_complete("\x93\xa0\xa1y\x81\x01\xc0", 7) &&
             !caterva_msgpack_complete("\x93\xa0\xa1y", 4) &&
             !caterva_msgpack_complete("\xdf\xff\xff\xff\xff\x01\x02", 7) &&
             !caterva_msgpack_complete("\xc6\x00\x01\x00\x00", 5) &&
             !caterva_msgpack_complete("", 0) && !caterva_msgpack_complete(NULL, 3),
         "caterva_msgpack_complete: whole values only");
  caterva_array_free(a);
  caterva_array_free(b);
}

/* Super-chunks whose metalayer disagrees with the frame are refused by from_schunk. */
static int wrap(const char *layer, const uint8_t *meta, size_t len, int typesize,
                int32_t chunksize, int nchunks) {
  caterva_schunk *sc = NULL;
  caterva_array *a = NULL;
  caterva_cparams cp;
  uint8_t chunk[64];
  int32_t cb;
  int rc;
  caterva_cparams_init(&cp);
  cp.typesize = typesize;
  if (caterva_schunk_new(ctx, &cp, chunksize, CATERVA_STORE_MEMORY, NULL, &sc) != 0) return -100;
  if (layer && caterva_schunk_meta_add(ctx, sc, layer, meta, (int32_t)len) != 0) {
    caterva_schunk_free(sc);
    return -101;
  }
  cb = caterva_chunk_make_special(CATERVA_SPECIAL_ZERO, chunksize, typesize, 0, NULL, chunk,
                                  sizeof chunk);
  for (int i = 0; i < nchunks; i++) caterva_schunk_append_chunk(ctx, sc, chunk, cb);
  rc = caterva_array_from_schunk(ctx, sc, &a); /* takes sc, also on failure */
  if (rc < 0) tap_diag("from_schunk: %s", caterva_ctx_errmsg(ctx));
  caterva_array_free(a);
  return rc;
}

static void from_schunk_tests(void) {
  /* s03's b2nd metalayer: <i2, shape [37,53], chunks [10,16], blocks [4,5]:
     16 chunks of 12*20*2 = 480 bytes. */
  static const uint8_t s03[] = {
      0x97, 0x00, 0x02, 0x92, 0xd3, 0, 0, 0, 0, 0, 0, 0, 0x25, 0xd3, 0, 0, 0, 0, 0, 0, 0, 0x35,
      0x92, 0xd2, 0, 0, 0, 0x0a, 0xd2, 0, 0, 0, 0x10, 0x92, 0xd2, 0, 0, 0, 0x04, 0xd2, 0, 0, 0,
      0x05, 0x00, 0xdb, 0, 0, 0, 0x03, 0x3c, 0x69, 0x32};
  uint8_t bad[sizeof s03];
  tap_ok(wrap("b2nd", s03, sizeof s03, 2, 480, 16) == 0, "from_schunk: consistent frame");
  tap_ok(wrap(NULL, NULL, 0, 2, 480, 16) == CATERVA_E_NOTFOUND, "from_schunk: no metalayer");
  tap_ok(wrap("b2nd", s03, sizeof s03, 2, 400, 16) == CATERVA_E_CORRUPT,
         "from_schunk: chunksize disagrees");
  tap_ok(wrap("b2nd", s03, sizeof s03, 2, 480, 15) == CATERVA_E_CORRUPT,
         "from_schunk: number of chunks disagrees");
  tap_ok(wrap("b2nd", s03, sizeof s03, 4, 960, 16) == CATERVA_E_CORRUPT,
         "from_schunk: dtype disagrees with typesize");
  memcpy(bad, s03, sizeof bad);
  bad[3] = 0x93;
  tap_ok(wrap("b2nd", bad, sizeof bad, 2, 480, 16) == CATERVA_E_CORRUPT,
         "from_schunk: malformed metalayer");
  memcpy(bad, s03, sizeof bad);
  bad[0] = 0x95;
  tap_ok(wrap("caterva", bad, sizeof bad - 9, 2, 480, 16) == 0, "from_schunk: caterva only");
}

/* A frame carrying only the caterva metalayer (the caterva library's files) can be resized:
 * the metalayer is rewritten in place and no b2nd layer appears. */
static void caterva_only_resize_test(void) {
  static const uint8_t meta[] = {
      0x95, 0x00, 0x02, 0x92, 0xd3, 0, 0, 0, 0, 0, 0, 0, 0x25, 0xd3, 0, 0, 0, 0, 0, 0, 0, 0x35,
      0x92, 0xd2, 0, 0, 0, 0x0a, 0xd2, 0, 0, 0, 0x10, 0x92, 0xd2, 0, 0, 0, 0x04, 0xd2, 0, 0, 0,
      0x05};
  caterva_schunk *sc = NULL;
  caterva_array *a = NULL;
  caterva_cparams cp;
  uint8_t chunk[64];
  int64_t ns[2] = {45, 70}, st[2] = {30, 50}, sp[2] = {45, 70};
  const uint8_t *content;
  int32_t len, cb;
  cat_array_meta m;
  model mod = {2, 2, {37, 53}, calloc(45 * 70, 2)};
  uint8_t src[15 * 20 * 2];
  int ok;
  caterva_cparams_init(&cp);
  cp.typesize = 2;
  ok = caterva_schunk_new(ctx, &cp, 480, CATERVA_STORE_MEMORY, NULL, &sc) == 0 &&
       caterva_schunk_meta_add(ctx, sc, "caterva", meta, sizeof meta) == 0;
  cb = caterva_chunk_make_special(CATERVA_SPECIAL_ZERO, 480, 2, 40, NULL, chunk, sizeof chunk);
  for (int i = 0; ok && i < 16; i++) ok = caterva_schunk_append_chunk(ctx, sc, chunk, cb) >= 0;
  ok = ok && caterva_array_from_schunk(ctx, sc, &a) == 0 && caterva_array_dtype(a) == NULL;
  ok = ok && caterva_array_resize(ctx, a, ns) == 0;
  model_resize(&mod, ns);
  fill_random(src, sizeof src);
  ok = ok && caterva_array_set_slice(ctx, a, st, sp, src, sizeof src) == 0;
  model_box(&mod, st, sp, src, 1);
  ok = ok && caterva_schunk_meta_get(a->sc, "caterva", &content, &len) == 0 &&
       len == (int32_t)sizeof meta && cat_meta_decode(ctx, content, (size_t)len, 0, &m) == 0 &&
       m.shape[0] == 45 && m.shape[1] == 70 && m.chunkshape[1] == 16 &&
       caterva_schunk_meta_get(a->sc, "b2nd", &content, &len) == CATERVA_E_NOTFOUND;
  tap_ok(ok && array_equals_model(a, &mod), "caterva-only array resized in place (%s)",
         caterva_ctx_errmsg(ctx));
  caterva_array_free(a);
  free(mod.data);
}

/* get_slice of a big box: blocks are batched and decompressed in parallel. */
static void threads_test(void) {
  caterva_ctx *c4 = NULL, *save = ctx;
  config c = {3, 4, {60, 70, 80}, {30, 35, 40}, {10, 7, 8}};
  if (caterva_ctx_new(4, &c4) != 0) {
    tap_ok(0, "context with 4 threads");
    return;
  }
  ctx = c4;
  run_config(&c, CATERVA_STORE_MEMORY, "3d/4threads");
  ctx = save;
  caterva_ctx_free(c4);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/test_array.XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(tmpdir) == NULL) return tap_skip_all("cannot create a temporary directory");
  if (caterva_ctx_new(1, &ctx) != 0) return tap_skip_all("no context");
  for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++) {
    char label[32];
    snprintf(label, sizeof label, "cfg%zu/%dd", i, configs[i].nd);
    for (int store = CATERVA_STORE_MEMORY; store <= CATERVA_STORE_SPARSE; store++)
      run_config(&configs[i], store, label);
  }
  big_ndim_tests();
  large_read_tests();
  fill_tests();
  snapshot_reader_test();
  error_tests();
  names_tests();
  from_schunk_tests();
  caterva_only_resize_test();
  threads_test();
  caterva_ctx_free(ctx);
  nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return tap_done();
}

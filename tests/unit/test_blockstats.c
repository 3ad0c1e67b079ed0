/*
 * test_blockstats.c -- block statistics stay exact under every kind of write.
 *
 * After each step (creation from a buffer or with a fill, slice writes, cell writes through
 * the write-back cache, resize, append, copy with the same and with other partitioning,
 * transactions with savepoints, ROLLBACK TO and ROLLBACK, reopening, a chunk changed by
 * a writer that does not know the statistics, building them for a file that has none) the
 * statistics of every block are compared with a recomputation from the data read back
 * through the block iterator. Also: the predicate check (exact at block min/max, int64
 * bounds against doubles), and the iterator's block filter decompresses nothing it skips.
 * An array whose stored form spans many blocks (5,000 chunks, 480 KB of records), through
 * rounds of small commits, rollbacks and reopenings: the stored form, built a batch of blocks
 * at a time with the unchanged blocks copied from the last one, is byte for byte the
 * compression of what it decodes to, and the statistics read back stay exact.
 */
#define _XOPEN_SOURCE 700
#include "array_layer_internal.h"
#include "blockstats_internal.h"
#include "frame_internal.h"
#include "fsutil.h"
#include "tap.h"
#include "testrng.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static caterva_ctx *ctx;
static char tmpdir[256];
static int path_counter;

static uint64_t rng_state = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) {
  return test_rng_next(&rng_state);
}

static void next_path(char *buf, size_t cap, const char *suffix) {
  snprintf(buf, cap, "%s/s%d%s", tmpdir, path_counter++, suffix);
}

/* A dtype under test and how to make its items. */
typedef struct dt {
  const char *name;
  int is, stype;
} dt;

static const dt dtypes[] = {
    {"<f8", 8, CATERVA_STATS_FLOAT}, {"<f4", 4, CATERVA_STATS_FLOAT},
    {"<f2", 2, CATERVA_STATS_FLOAT}, {"<i4", 4, CATERVA_STATS_INT},
    {"|i1", 1, CATERVA_STATS_INT},   {"<i8", 8, CATERVA_STATS_INT},
    {"|b1", 1, CATERVA_STATS_INT},   {"|u1", 1, CATERVA_STATS_UINT},
    {"<u8", 8, CATERVA_STATS_UINT},  {"<u2", 2, CATERVA_STATS_UINT},
};

/* A random item; floats are NaN one time in five. */
static void rand_item(const dt *d, uint8_t *p) {
  uint64_t r = rnd();
  if (strcmp(d->name, "|b1") == 0) {
    p[0] = (uint8_t)(r & 1);
  } else if (d->stype == CATERVA_STATS_FLOAT) {
    double v = (double)(int64_t)(r % 2001) / 8.0 - 125.0;
    if (r >> 60 < 3) v = NAN;
    if (d->is == 8) memcpy(p, &v, 8);
    else if (d->is == 4) {
      float f = (float)v;
      memcpy(p, &f, 4);
    } else {
      uint16_t h = r >> 60 < 3 ? 0x7E00 : (uint16_t)(0x3C00 + (r % 1024)); /* 1.0 .. 2.0 */
      if (r >> 59 & 1) h |= 0x8000;
      memcpy(p, &h, 2);
    }
  } else if (d->is == 8 && d->stype == CATERVA_STATS_INT && (r >> 40 & 7) == 0) {
    int64_t v = (int64_t)(r >> 1) * ((r & 1) ? -1 : 1); /* large: sums overflow */
    memcpy(p, &v, 8);
  } else {
    for (int i = 0; i < d->is; i++) p[i] = (uint8_t)(r >> (8 * i));
  }
}

static double half(uint16_t h) {
  int e = h >> 10 & 0x1F, m = h & 0x3FF;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
  return h & 0x8000 ? -v : v;
}

/* Fold one item into s (the test's own recomputation). */
static void fold(const dt *d, caterva_block_stats *s, const uint8_t *p) {
  if (d->stype == CATERVA_STATS_FLOAT) {
    double v;
    if (d->is == 8) memcpy(&v, p, 8);
    else if (d->is == 4) {
      float f;
      memcpy(&f, p, 4);
      v = f;
    } else {
      uint16_t h;
      memcpy(&h, p, 2);
      v = half(h);
    }
    if (isnan(v)) {
      s->nnan++;
      return;
    }
    if (s->nvalid == 0 || v < s->min.f) s->min.f = v;
    if (s->nvalid == 0 || v > s->max.f) s->max.f = v;
    s->sum.f += v;
  } else if (d->stype == CATERVA_STATS_INT) {
    int64_t v = 0;
    if (strcmp(d->name, "|b1") == 0) v = p[0] != 0;
    else if (d->is == 1) v = (int8_t)p[0];
    else if (d->is == 4) {
      int32_t x;
      memcpy(&x, p, 4);
      v = x;
    } else memcpy(&v, p, 8);
    if (s->nvalid == 0 || v < s->min.i) s->min.i = v;
    if (s->nvalid == 0 || v > s->max.i) s->max.i = v;
    if (__builtin_add_overflow(s->sum.i, v, &s->sum.i)) s->sum_overflow = 1;
  } else {
    uint64_t v = 0;
    memcpy(&v, p, (size_t)d->is);
    if (s->nvalid == 0 || v < s->min.u) s->min.u = v;
    if (s->nvalid == 0 || v > s->max.u) s->max.u = v;
    if (__builtin_add_overflow(s->sum.u, v, &s->sum.u)) s->sum_overflow = 1;
  }
  s->nvalid++;
}

/* Recompute block blk's statistics from its data (items in [start, stop)). */
static void recompute(const dt *d, caterva_array *a, const caterva_block *blk,
                      caterva_block_stats *s) {
  int nd = caterva_array_ndim(a);
  int64_t idx[CATERVA_MAX_DIM];
  memset(s, 0, sizeof *s);
  for (int k = 0; k < nd; k++) {
    if (blk->start[k] >= blk->stop[k]) return;
    idx[k] = blk->start[k];
  }
  for (;;) {
    int64_t off = 0;
    int k;
    for (k = 0; k < nd; k++) off = off * blk->blockshape[k] + (idx[k] - blk->origin[k]);
    fold(d, s, blk->data + off * d->is);
    for (k = nd - 1; k >= 0; k--) {
      if (++idx[k] < blk->stop[k]) break;
      idx[k] = blk->start[k];
    }
    if (k < 0) break;
  }
}

static int same_stats(const dt *d, const caterva_block_stats *x, const caterva_block_stats *y) {
  if (x->nvalid != y->nvalid || x->nnan != y->nnan) return 0;
  if (x->nvalid == 0) return 1;
  if (d->stype == CATERVA_STATS_FLOAT)
    return x->min.f == y->min.f && x->max.f == y->max.f &&
           fabs(x->sum.f - y->sum.f) <= 1e-9 * (1 + fabs(x->sum.f));
  if (x->sum_overflow != y->sum_overflow) return 0;
  return x->min.u == y->min.u && x->max.u == y->max.u && (x->sum_overflow || x->sum.u == y->sum.u);
}

/* Every block's statistics equal the recomputation; with `all`, every block must have them.
 * Blocks wholly in padding are not visited by the iterator and not checked. */
static int check_all(const dt *d, caterva_array *a, int all, const char *what) {
  caterva_block_iter *it = NULL;
  const caterva_block *blk;
  int rc, ok = 1, nknown = 0, nblk = 0;
  if (caterva_array_flush(ctx, a) < 0) return tap_ok(0, "%s %s: flush", d->name, what);
  if (caterva_block_iter_new(ctx, a, NULL, NULL, 0, &it) < 0)
    return tap_ok(0, "%s %s: iterator", d->name, what);
  while ((rc = caterva_block_iter_next(it, &blk)) > 0) {
    caterva_block_stats want, got;
    int r = caterva_array_block_stats(ctx, a, blk->nchunk, blk->nblock, &got);
    nblk++;
    if (r < 0) ok = 0;
    if (r == 0) {
      if (all) ok = 0;
      continue;
    }
    nknown++;
    recompute(d, a, blk, &want);
    if (!same_stats(d, &want, &got)) {
      if (ok)
        tap_diag("%s %s: chunk %lld block %d: nvalid %lld/%lld nnan %lld/%lld", d->name, what,
                 (long long)blk->nchunk, blk->nblock, (long long)got.nvalid,
                 (long long)want.nvalid, (long long)got.nnan, (long long)want.nnan);
      ok = 0;
    }
  }
  caterva_block_iter_free(it);
  return tap_ok(ok && rc == 0 && (!all || nknown == nblk),
                "%s %s: statistics of %d/%d blocks exact", d->name, what, nknown, nblk);
}

static void rand_buf(const dt *d, uint8_t *p, int64_t n) {
  for (int64_t i = 0; i < n; i++) rand_item(d, p + i * d->is);
}

/* One dtype through every kind of write, on one store. */
static void run_store(const dt *d, int store) {
  caterva_array_params p;
  caterva_array *a = NULL, *b = NULL;
  char path[300], path2[300];
  int64_t n, start[3], stop[3], shape2[3], coord[3];
  uint8_t *buf = NULL, item[8];
  const char *sn = store == CATERVA_STORE_MEMORY ? "mem" : store == CATERVA_STORE_SPARSE ? "sparse" : "file";
  char what[64];

  caterva_array_params_init(&p);
  p.ndim = 3;
  p.shape[0] = 13; p.shape[1] = 10; p.shape[2] = 7;
  p.chunkshape[0] = 5; p.chunkshape[1] = 4; p.chunkshape[2] = 7;
  p.blockshape[0] = 2; p.blockshape[1] = 3; p.blockshape[2] = 4;
  p.dtype = d->name;
  p.store = store;
  next_path(path, sizeof path, store == CATERVA_STORE_SPARSE ? ".b2sparse" : ".b2nd");
  p.path = store == CATERVA_STORE_MEMORY ? NULL : path;
  n = 13 * 10 * 7;
  buf = malloc((size_t)(n * d->is) + 64);
  rand_buf(d, buf, n);
#define STEP(...) (snprintf(what, sizeof what, __VA_ARGS__), what)
  if (!tap_ok(caterva_array_from_buffer(ctx, &p, buf, n * d->is, &a) == 0, "%s %s: from_buffer",
              d->name, sn))
    goto leave;
  tap_ok(caterva_array_has_stats(a) && caterva_array_stats_type(a) == d->stype,
         "%s %s: new arrays keep statistics", d->name, sn);
  check_all(d, a, 1, STEP("%s from_buffer", sn));

  /* a slice write outside a transaction */
  start[0] = 3; start[1] = 2; start[2] = 1; stop[0] = 9; stop[1] = 9; stop[2] = 6;
  rand_buf(d, buf, 6 * 7 * 5);
  tap_ok(caterva_array_set_slice(ctx, a, start, stop, buf, 6 * 7 * 5 * d->is) == 0,
         "%s %s: set_slice", d->name, sn);
  check_all(d, a, 1, STEP("%s set_slice", sn));

  /* cell writes through the cache */
  for (int i = 0; i < 40; i++) {
    coord[0] = (int64_t)(rnd() % 13); coord[1] = (int64_t)(rnd() % 10); coord[2] = (int64_t)(rnd() % 7);
    rand_item(d, item);
    caterva_array_set_item(ctx, a, coord, item);
  }
  check_all(d, a, 1, STEP("%s set_item", sn));

  /* resize: shrink two axes, grow one; then grow back; append */
  shape2[0] = 11; shape2[1] = 6; shape2[2] = 9;
  tap_ok(caterva_array_resize(ctx, a, shape2) == 0, "%s %s: resize", d->name, sn);
  check_all(d, a, 1, STEP("%s resize", sn));
  shape2[0] = 14; shape2[1] = 10; shape2[2] = 9;
  tap_ok(caterva_array_resize(ctx, a, shape2) == 0, "%s %s: resize back", d->name, sn);
  check_all(d, a, 1, STEP("%s resize back", sn));
  rand_buf(d, buf, 3 * 10 * 9);
  tap_ok(caterva_array_append(ctx, a, buf, 3 * 10 * 9 * d->is, 0) == 0, "%s %s: append",
         d->name, sn);
  check_all(d, a, 1, STEP("%s append", sn));

  if (store != CATERVA_STORE_MEMORY) {
    caterva_block_stats s0, s1;
    /* transactions: savepoints, ROLLBACK TO, RELEASE, ROLLBACK, COMMIT */
    tap_ok(caterva_array_begin(ctx, a) == 0, "%s %s: begin", d->name, sn);
    caterva_array_block_stats(ctx, a, 0, 0, &s0);
    start[0] = 0; start[1] = 0; start[2] = 0; stop[0] = 4; stop[1] = 5; stop[2] = 9;
    rand_buf(d, buf, 4 * 5 * 9);
    caterva_array_set_slice(ctx, a, start, stop, buf, 4 * 5 * 9 * d->is);
    check_all(d, a, 1, STEP("%s txn write", sn));
    caterva_array_savepoint(ctx, a, 0);
    shape2[0] = 9;
    caterva_array_resize(ctx, a, shape2);
    for (int i = 0; i < 30; i++) {
      coord[0] = (int64_t)(rnd() % 9); coord[1] = (int64_t)(rnd() % 10); coord[2] = (int64_t)(rnd() % 9);
      rand_item(d, item);
      caterva_array_set_item(ctx, a, coord, item);
    }
    check_all(d, a, 1, STEP("%s after savepoint", sn));
    caterva_array_savepoint(ctx, a, 1);
    caterva_array_set_slice(ctx, a, start, stop, buf + 8, 4 * 5 * 9 * d->is);
    tap_ok(caterva_array_rollback_to(ctx, a, 1) == 0, "%s %s: rollback_to 1", d->name, sn);
    check_all(d, a, 1, STEP("%s rollback_to 1", sn));
    tap_ok(caterva_array_rollback_to(ctx, a, 0) == 0, "%s %s: rollback_to 0", d->name, sn);
    tap_ok(caterva_array_shape(a)[0] == 17, "%s %s: rollback_to restores the shape", d->name, sn);
    check_all(d, a, 1, STEP("%s rollback_to 0", sn));
    caterva_array_release(ctx, a, 0);
    tap_ok(caterva_array_rollback(ctx, a) == 0, "%s %s: rollback", d->name, sn);
    caterva_array_block_stats(ctx, a, 0, 0, &s1);
    tap_ok(same_stats(d, &s0, &s1), "%s %s: rollback restores the statistics", d->name, sn);
    check_all(d, a, 1, STEP("%s rollback", sn));
    caterva_array_begin(ctx, a);
    caterva_array_set_slice(ctx, a, start, stop, buf, 4 * 5 * 9 * d->is);
    caterva_array_savepoint(ctx, a, 0);
    shape2[0] = 20;
    caterva_array_resize(ctx, a, shape2);
    tap_ok(caterva_array_commit(ctx, a, 1) == 0, "%s %s: commit", d->name, sn);
    check_all(d, a, 1, STEP("%s commit", sn));

    /* reopen: the stored statistics are the same */
    caterva_array_free(a);
    a = NULL;
    tap_ok(caterva_array_open(ctx, path, CATERVA_OPEN_WRITE, &a) == 0 && caterva_array_has_stats(a),
           "%s %s: reopened with statistics", d->name, sn);
    if (a == NULL) goto leave;
    check_all(d, a, 1, STEP("%s reopen", sn));

    /* many small commits, some with a savepoint rolled back or a transaction rolled back,
     * each reopened: the stored form (re-encoded only where records changed) stays exact */
    for (int round = 0; round < 12; round++) {
      caterva_array_begin(ctx, a);
      for (int i = 0; i < 1 + round % 3; i++) {
        coord[0] = (int64_t)(rnd() % 20); coord[1] = (int64_t)(rnd() % 10);
        coord[2] = (int64_t)(rnd() % 9);
        rand_item(d, item);
        caterva_array_set_item(ctx, a, coord, item);
      }
      if (round % 4 == 1) {
        caterva_array_savepoint(ctx, a, 0);
        caterva_array_set_slice(ctx, a, start, stop, buf, 4 * 5 * 9 * d->is);
        caterva_array_rollback_to(ctx, a, 0);
      }
      if (round % 5 == 3) {
        caterva_array_rollback(ctx, a);
        continue;
      }
      tap_ok(caterva_array_commit(ctx, a, 0) == 0, "%s %s: small commit %d", d->name, sn, round);
      if (round % 2 == 0) {
        caterva_array_free(a);
        a = NULL;
        caterva_array_open(ctx, path, CATERVA_OPEN_WRITE, &a);
        if (a == NULL) goto leave;
      }
      check_all(d, a, 1, STEP("%s small commit %d", sn, round));
    }
  }

  /* copies: same partitioning (raw) and another one */
  {
    caterva_array_params q;
    caterva_array_params_init(&q);
    q.chunkshape[0] = 5; q.chunkshape[1] = 4; q.chunkshape[2] = 7;
    q.blockshape[0] = 2; q.blockshape[1] = 3; q.blockshape[2] = 4;
    q.cparams = *caterva_schunk_cparams(caterva_array_schunk(a));
    q.store = store;
    next_path(path2, sizeof path2, store == CATERVA_STORE_SPARSE ? ".b2sparse" : ".b2nd");
    q.path = store == CATERVA_STORE_MEMORY ? NULL : path2;
    if (tap_ok(caterva_array_copy(ctx, a, &q, &b) == 0, "%s %s: raw copy", d->name, sn))
      check_all(d, b, 1, STEP("%s raw copy", sn));
    caterva_array_free(b);
    b = NULL;
    q.chunkshape[0] = 6; q.chunkshape[1] = 6; q.chunkshape[2] = 3;
    q.blockshape[0] = 3; q.blockshape[1] = 2; q.blockshape[2] = 3;
    next_path(path2, sizeof path2, store == CATERVA_STORE_SPARSE ? ".b2sparse" : ".b2nd");
    q.path = store == CATERVA_STORE_MEMORY ? NULL : path2;
    if (tap_ok(caterva_array_copy(ctx, a, &q, &b) == 0, "%s %s: repartitioned copy", d->name, sn))
      check_all(d, b, 1, STEP("%s repartitioned copy", sn));
    caterva_array_free(b);
    b = NULL;
  }

  if (store == CATERVA_STORE_CONTIGUOUS) {
    /* a writer that does not know the statistics changes chunk 1: they are not used */
    caterva_schunk *sc = NULL;
    uint8_t *chunkbuf = NULL, *cbuf = NULL;
    int32_t cs = caterva_schunk_chunksize(caterva_array_schunk(a)), cb;
    caterva_cparams cp = *caterva_schunk_cparams(caterva_array_schunk(a));
    caterva_block_stats st;
    caterva_array_free(a);
    a = NULL;
    chunkbuf = malloc((size_t)cs);
    cbuf = malloc((size_t)cs + CATERVA_CHUNK_MAX_OVERHEAD);
    caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc);
    caterva_schunk_decompress_chunk(ctx, sc, 1, chunkbuf, cs);
    rand_buf(d, chunkbuf, cs / d->is);
    cp.typesize = d->is;
    cp.blocksize = 2 * 3 * 4 * d->is;
    cb = caterva_chunk_compress(ctx, &cp, chunkbuf, cs, cbuf, cs + CATERVA_CHUNK_MAX_OVERHEAD);
    tap_ok(cb > 0 && caterva_schunk_update_chunk(ctx, sc, 1, cbuf, cb) == 0,
           "%s %s: foreign chunk update", d->name, sn);
    caterva_schunk_free(sc);
    free(chunkbuf);
    free(cbuf);
    caterva_array_open(ctx, path, CATERVA_OPEN_WRITE, &a);
    if (a == NULL) goto leave;
    tap_ok(caterva_array_block_stats(ctx, a, 1, 0, &st) == 0 &&
               caterva_array_block_stats(ctx, a, 0, 0, &st) == 1,
           "%s %s: a changed chunk's statistics are refused, others kept", d->name, sn);
    check_all(d, a, 0, STEP("%s foreign write", sn));
    /* drop them, reopen without, build them */
    caterva_schunk_vlmeta_delete(ctx, caterva_array_schunk(a), "_caterva_blockstats");
    caterva_array_free(a);
    a = NULL;
    caterva_array_open(ctx, path, CATERVA_OPEN_WRITE, &a);
    if (a == NULL) goto leave;
    tap_ok(!caterva_array_has_stats(a) && caterva_array_block_stats(ctx, a, 0, 0, &st) == 0,
           "%s %s: a file without statistics has none", d->name, sn);
    tap_ok(caterva_array_build_stats(ctx, a, NULL, NULL) == 0, "%s %s: build_stats", d->name, sn);
    check_all(d, a, 1, STEP("%s build_stats", sn));
    caterva_array_free(a);
    a = NULL;
    caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a);
    if (a == NULL) goto leave;
    check_all(d, a, 1, STEP("%s built, reopened", sn));
  }
leave:
  caterva_array_free(a);
  free(buf);
}

/* Fills: zero, NaN, value chunks, and growth with a fill value. */
static void run_fills(void) {
  caterva_array_params p;
  caterva_array *a = NULL;
  double v = 2.5;
  int64_t shape2[2] = {9, 11};
  caterva_array_params_init(&p);
  p.ndim = 2;
  p.shape[0] = 7; p.shape[1] = 5;
  p.chunkshape[0] = 4; p.chunkshape[1] = 4;
  p.blockshape[0] = 3; p.blockshape[1] = 2;
  p.dtype = "<f8";
  for (int fill = 0; fill < 4; fill++) {
    if (caterva_array_create(ctx, &p, fill, &v, &a) < 0) {
      tap_ok(0, "create fill %d", fill);
      continue;
    }
    check_all(&dtypes[0], a, 1, fill == 0 ? "fill zeros" : fill == 1 ? "fill value" : fill == 2 ? "fill uninit" : "fill NaN");
    caterva_array_set_fill(ctx, a, &v, 0);
    caterva_array_resize(ctx, a, shape2);
    check_all(&dtypes[0], a, 1, "fill then grow");
    caterva_array_free(a);
    a = NULL;
    shape2[0] = 9;
  }
}

/* Pages of [p, p + n) in memory (mincore), and the pages in all. */
static size_t resident_pages(const void *p, size_t n, size_t *pages) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE), in = 0;
  uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(pg - 1), hi = (uintptr_t)p + n;
  unsigned char vec[1024];
  *pages = 0;
  for (uintptr_t at = lo; at < hi; at += pg * sizeof vec) {
    size_t len = hi - at < pg * sizeof vec ? hi - at : pg * sizeof vec;
    size_t np = (len + pg - 1) / pg;
    if (mincore((void *)at, len, vec) != 0) return SIZE_MAX;
    for (size_t k = 0; k < np; k++) in += vec[k] & 1;
    *pages += np;
  }
  return in;
}

/* 1-D int16 with chunks and blocks of 64 items, contiguous at path (a new name), and a new
 * name for a sparse frame in spath; both of cap bytes. */
static void int16_params(caterva_array_params *p, char *path, char *spath, size_t cap) {
  caterva_array_params_init(p);
  p->ndim = 1;
  p->shape[0] = p->chunkshape[0] = p->blockshape[0] = 64;
  p->dtype = "<i2";
  p->store = CATERVA_STORE_CONTIGUOUS;
  next_path(path, cap, ".b2nd");
  next_path(spath, cap, ".b2sparse");
  p->path = path;
}

/* Opens of path (N chunks of 64 int16, the last chunk's values 1..64), each followed by a
 * cell and its block's statistics: whether all read right with the statistics' vlmetalayer in
 * the file's image and no block of the offsets index decoded by the open, and the pages in
 * memory after each of the records' table and of the table of cached chunks (a sparse
 * frame's), in in[]. */
static int reopen_reads(const char *path, int64_t n, size_t *in, int opens, size_t *pages) {
  int64_t cell[1] = {n * 64 - 3}, cell1[1] = {n * 64 - 2};
  int ok = 1;
  for (int k = 0; k < opens && ok; k++) {
    caterva_array *a = NULL;
    caterva_block_stats st;
    const uint8_t *chunk = NULL;
    int32_t cbytes = 0;
    int16_t got = 0;
    ok = caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) == 0 &&
         cat_sc_index_blocks_decoded(a->sc) == 0 &&
         caterva_array_get_slice(ctx, a, cell, cell1, &got, sizeof got) == 0 && got == 62 &&
         caterva_array_block_stats(ctx, a, n - 1, 0, &st) == 1 && st.min.i == 1 &&
         st.max.i == 64 && a->bs != NULL && a->bs->n == n &&
         cat_sc_vlmeta_chunk(a->sc, "_caterva_blockstats", &chunk, &cbytes) == 0 &&
         chunk >= a->sc->base && chunk + cbytes <= a->sc->base + a->sc->base_len;
    if (ok) in[k] = resident_pages(a->bs->rec, (size_t)n * sizeof *a->bs->rec, pages);
    if (ok && a->sc->data != NULL) {
      size_t more = 0;
      in[k] += resident_pages(a->sc->data, (size_t)n * sizeof *a->sc->data, &more);
      *pages += more;
    }
    caterva_array_free(a);
  }
  return ok;
}

/* What a reader's open of a big array holds, again and again in one process (a Dask worker's
 * tasks): the memory that scales with the chunk count is neither copied nor zeroed, in a
 * contiguous file and in a sparse frame. The statistics' vlmetalayer was copied twice from
 * the file's map (a sparse frame's chunks.b2frame: read whole, its index decoded whole), and
 * the table of records (8 bytes a chunk) came from calloc, which zeroes the memory the heap
 * reuses from the second open on (2 MB here; 23 ms at a million chunks). Now the
 * vlmetalayer is read in the file's image, the index a block at a time, and the table is a
 * map of its own, its pages in memory only once written. */
static void run_reopen(void) {
  enum { N = 1 << 18, OPENS = 4 };
  caterva_array_params p;
  caterva_array *a = NULL, *b = NULL;
  char path[512], spath[512];
  int16_t v[64];
  int64_t lo[1] = {0}, hi[1] = {64}, shape[1] = {(int64_t)N * 64};
  size_t in[OPENS] = {0}, pages = 0;
  int ok;
  int16_params(&p, path, spath, sizeof path);
  for (int i = 0; i < 64; i++) v[i] = (int16_t)(i + 1);
  ok = caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a) == 0 &&
       caterva_array_set_slice(ctx, a, lo, hi, v, sizeof v) == 0 &&
       caterva_array_resize(ctx, a, shape) == 0;
  lo[0] = shape[0] - 64;
  hi[0] = shape[0];
  ok = ok && caterva_array_set_slice(ctx, a, lo, hi, v, sizeof v) == 0;
  p.store = CATERVA_STORE_SPARSE;
  p.path = spath;
  ok = ok && caterva_array_copy(ctx, a, &p, &b) == 0;
  caterva_array_free(a);
  caterva_array_free(b);
  if (!tap_ok(ok, "reopen: an array of %d chunks, contiguous and sparse", N)) return;
  for (int s = 0; s < 2; s++) {
    ok = reopen_reads(s == 0 ? path : spath, N, in, OPENS, &pages);
    tap_ok(ok && in[0] < 16 && in[1] < 16 && in[2] < 16 && in[3] < 16,
           "reopen, %s: %d read-only opens of %d chunks, a cell and its block's statistics "
           "each: no block of the index decoded by the open, the statistics read in the "
           "file's image, pages of the records' table (and of the cached chunks') in memory "
           "%zu, %zu, %zu, %zu of %zu",
           s == 0 ? "contiguous" : "sparse", OPENS, N, in[0], in[1], in[2], in[3], pages);
  }
  { /* what needs every entry still has them: a dry collect of the sparse frame's files */
    int64_t removed = -1;
    ok = caterva_array_open(ctx, spath, CATERVA_OPEN_READ, &a) == 0 &&
         caterva_schunk_collect(ctx, a->sc, 1, &removed) == 0;
    tap_ok(ok && removed == 0,
           "reopen, sparse: a dry collect on a reader finds %lld files to remove",
           (long long)removed);
    caterva_array_free(a);
  }
}

/* A copy of an array whose statistics are more than a vlmetalayer read whole may hold (64 MB:
 * 1.2 million chunks of one block) takes none of them along (it keeps its own): copying them
 * as an attribute failed ("vlmetalayer '_caterva_blockstats' of 67200048 bytes is too
 * large"). */
static void run_big_copy(void) {
  enum { N = 1200000 };
  caterva_array_params p;
  caterva_array *a = NULL, *b = NULL;
  caterva_block_stats st;
  char path[512], spath[512];
  int16_t v[64];
  int64_t lo[1] = {(int64_t)N * 64 - 64}, hi[1] = {(int64_t)N * 64}, shape[1] = {hi[0]};
  int ok;
  int16_params(&p, path, spath, sizeof path);
  for (int i = 0; i < 64; i++) v[i] = (int16_t)(i - 7);
  ok = caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a) == 0 &&
       caterva_array_resize(ctx, a, shape) == 0 &&
       caterva_array_set_slice(ctx, a, lo, hi, v, sizeof v) == 0;
  caterva_array_free(a);
  a = NULL;
  p.store = CATERVA_STORE_SPARSE;
  p.path = spath;
  ok = ok && caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) == 0 &&
       caterva_array_copy(ctx, a, &p, &b) == 0;
  caterva_array_free(b);
  b = NULL;
  ok = ok && caterva_array_open(ctx, spath, CATERVA_OPEN_READ, &b) == 0 &&
       caterva_array_block_stats(ctx, b, N - 1, 0, &st) == 1 && st.min.i == -7 &&
       st.max.i == 56 && caterva_array_block_stats(ctx, b, 5, 0, &st) == 1 && st.max.i == 0;
  tap_ok(ok, "an array of %d chunks copied to a sparse frame, with statistics of its own%s%s",
         N, ok ? "" : ": ", ok ? "" : caterva_ctx_errmsg(ctx));
  caterva_array_free(a);
  caterva_array_free(b);
}

/* The stored form is byte for byte what compressing its decoded content whole gives. */
static int form_exact(caterva_array *a) {
  caterva_schunk *sc = caterva_array_schunk(a);
  const uint8_t *chunk;
  uint8_t *raw = NULL, *whole = NULL;
  int32_t cb, wcb = 0, len = 0;
  int ok = cat_sc_vlmeta_chunk(sc, "_caterva_blockstats", &chunk, &cb) == 0 &&
           caterva_schunk_vlmeta_get(ctx, sc, "_caterva_blockstats", &raw, &len) == 0 &&
           cat_frame_vlmeta_compress(ctx, raw, len, &whole, &wcb) == 0 && wcb == cb &&
           memcmp(whole, chunk, (size_t)cb) == 0 && len > 256 * 1024;
  free(raw);
  free(whole);
  return ok;
}

static void run_large_form(void) {
  const dt *d = &dtypes[3]; /* <i4 */
  caterva_array_params p;
  caterva_array *a = NULL;
  char path[300];
  int64_t n = 40000, coord[1];
  uint8_t *buf = malloc((size_t)n * 4), item[8];
  int ok = 1;
  caterva_array_params_init(&p);
  p.ndim = 1;
  p.shape[0] = n;
  p.chunkshape[0] = 8;
  p.blockshape[0] = 4;
  p.dtype = d->name;
  p.store = CATERVA_STORE_CONTIGUOUS;
  next_path(path, sizeof path, ".b2nd");
  p.path = path;
  rand_buf(d, buf, n);
  if (!tap_ok(caterva_array_from_buffer(ctx, &p, buf, n * 4, &a) == 0 && form_exact(a),
              "large form: made, stored form exact"))
    goto leave;
  for (int round = 0; round < 24 && a != NULL; round++) {
    caterva_array_begin(ctx, a);
    for (int i = 0; i < 1 + round % 4; i++) {
      coord[0] = (int64_t)(rnd() % (uint64_t)n);
      rand_item(d, item);
      caterva_array_set_item(ctx, a, coord, item);
    }
    if (round % 5 == 2) {
      caterva_array_savepoint(ctx, a, 0);
      caterva_array_set_item(ctx, a, coord, item);
      caterva_array_rollback_to(ctx, a, 0);
    }
    if (round % 6 == 4) {
      caterva_array_rollback(ctx, a);
      continue;
    }
    ok &= caterva_array_commit(ctx, a, 0) == 0 && form_exact(a);
    if (round % 3 == 0) {
      caterva_array_free(a);
      a = NULL;
      caterva_array_open(ctx, path, CATERVA_OPEN_WRITE, &a);
      ok &= a != NULL && form_exact(a);
    }
  }
  tap_ok(ok, "large form: 24 rounds of small commits and rollbacks, each stored form exact");
  caterva_array_free(a);
  a = NULL;
  if (caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) == 0)
    check_all(d, a, 1, "large form, reopened after the rounds");
leave:
  caterva_array_free(a);
  free(buf);
}

/* The predicate check at the edges. */
static void run_predicates(void) {
  caterva_block_stats s;
  caterva_bound b = {1, 0, 0};
  memset(&s, 0, sizeof s);
  s.nvalid = 3;
  s.min.f = -1.5;
  s.max.f = 30.0;
  b.is_int = 1;
  b.i = 30;
  tap_ok(!caterva_block_stats_may_match(CATERVA_STATS_FLOAT, &s, CATERVA_CMP_GT, &b) &&
             caterva_block_stats_may_match(CATERVA_STATS_FLOAT, &s, CATERVA_CMP_GE, &b) &&
             caterva_block_stats_may_match(CATERVA_STATS_FLOAT, &s, CATERVA_CMP_EQ, &b),
         "float block with max 30: > 30 no, >= 30 and = 30 may");
  b.is_int = 0;
  b.f = -1.5;
  tap_ok(!caterva_block_stats_may_match(CATERVA_STATS_FLOAT, &s, CATERVA_CMP_LT, &b) &&
             caterva_block_stats_may_match(CATERVA_STATS_FLOAT, &s, CATERVA_CMP_LE, &b),
         "min -1.5: < -1.5 no, <= -1.5 may");
  s.min.i = INT64_MAX - 1;
  s.max.i = INT64_MAX;
  b.f = 9223372036854775807.0; /* 2^63, above every int64 */
  tap_ok(!caterva_block_stats_may_match(CATERVA_STATS_INT, &s, CATERVA_CMP_GE, &b) &&
             caterva_block_stats_may_match(CATERVA_STATS_INT, &s, CATERVA_CMP_LT, &b),
         "int64 near 2^63 against the double 2^63: exact");
  s.min.i = 5;
  s.max.i = 7;
  b.f = 6.5;
  tap_ok(caterva_block_stats_may_match(CATERVA_STATS_INT, &s, CATERVA_CMP_EQ, &b) &&
             !caterva_block_stats_may_match(CATERVA_STATS_INT, &s, CATERVA_CMP_GT, &(caterva_bound){0, 0, 7.0}) &&
             caterva_block_stats_may_match(CATERVA_STATS_INT, &s, CATERVA_CMP_GT, &(caterva_bound){0, 0, 6.99}),
         "int block 5..7 against fractional bounds");
  s.nvalid = 0;
  s.nnan = 4;
  tap_ok(!caterva_block_stats_may_match(CATERVA_STATS_FLOAT, &s, CATERVA_CMP_GE, &b) &&
             caterva_block_stats_may_match(CATERVA_STATS_FLOAT, &s, CATERVA_CMP_ISNULL, NULL) &&
             !caterva_block_stats_may_match(CATERVA_STATS_FLOAT, &s, CATERVA_CMP_NOTNULL, NULL),
         "an all-NaN block matches only IS NULL");
  s.min.u = 10;
  s.max.u = UINT64_MAX;
  s.nvalid = 2;
  tap_ok(caterva_block_stats_may_match(CATERVA_STATS_UINT, &s, CATERVA_CMP_GT, &(caterva_bound){1, -5, 0}) &&
             !caterva_block_stats_may_match(CATERVA_STATS_UINT, &s, CATERVA_CMP_LT, &(caterva_bound){1, 10, 0}) &&
             !caterva_block_stats_may_match(CATERVA_STATS_UINT, &s, CATERVA_CMP_GT, &(caterva_bound){0, 0, 1.9e19}),
         "uint64 block against negative and huge bounds");
}

/* Skipped blocks are not decompressed. */
static int keep_even(void *arg, int64_t nchunk, int32_t nblock) {
  (void)arg;
  return (nchunk + nblock) % 2 == 0;
}

/* A 64 x 64 float64 array of buf (chunks 32 x 32, blocks 8 x 8: 4 chunks of 16 blocks). */
static caterva_array *array_64(const double *buf) {
  caterva_array_params p;
  caterva_array *a = NULL;
  caterva_array_params_init(&p);
  p.ndim = 2;
  p.shape[0] = 64; p.shape[1] = 64;
  p.chunkshape[0] = 32; p.chunkshape[1] = 32;
  p.blockshape[0] = 8; p.blockshape[1] = 8;
  p.dtype = "<f8";
  caterva_array_from_buffer(ctx, &p, buf, 64 * 64 * 8, &a);
  return a;
}

static void run_filter(void) {
  caterva_array *a = NULL;
  caterva_block_iter *it = NULL;
  const caterva_block *blk;
  double *buf = malloc(64 * 64 * sizeof *buf);
  int64_t before, n = 0, bad = 0;
  for (int i = 0; i < 64 * 64; i++) buf[i] = i;
  a = array_64(buf);
  caterva_block_iter_new(ctx, a, NULL, NULL, 0, &it);
  caterva_block_iter_set_filter(it, keep_even, NULL);
  before = caterva_ctx_blocks_decompressed(ctx);
  while (caterva_block_iter_next(it, &blk) > 0) {
    n++;
    if ((blk->nchunk + blk->nblock) % 2 != 0) bad++;
    for (int64_t i = blk->start[0]; i < blk->stop[0]; i++)
      for (int64_t j = blk->start[1]; j < blk->stop[1]; j++) {
        double v;
        memcpy(&v, blk->data + ((i - blk->origin[0]) * 8 + (j - blk->origin[1])) * 8, 8);
        if (v != (double)(i * 64 + j)) bad++;
      }
  }
  tap_ok(n == 32 && bad == 0 && caterva_ctx_blocks_decompressed(ctx) - before == 32,
         "the block filter: %lld blocks visited, %lld decompressed, data right",
         (long long)n, (long long)(caterva_ctx_blocks_decompressed(ctx) - before));
  caterva_block_iter_free(it);
  caterva_array_free(a);
  free(buf);
}

/* A filter by value is asked once for all the blocks of a special chunk. */
typedef struct {
  int64_t calls;
} count_arg;

static int keep_chunk0(void *arg, int64_t nchunk, int32_t nblock) {
  (void)nblock;
  ((count_arg *)arg)->calls++;
  return nchunk == 0;
}

static int keep_all(void *arg, int64_t nchunk, int32_t nblock) {
  (void)nchunk;
  (void)nblock;
  ((count_arg *)arg)->calls++;
  return 1;
}

static void filter_by_value_case(caterva_array *a, int by_value,
                                 int (*keep)(void *, int64_t, int32_t), int64_t want_calls,
                                 int64_t want_blocks, const char *what) {
  caterva_block_iter *it = NULL;
  const caterva_block *blk;
  count_arg c = {0};
  int64_t n = 0, uniform = 0;
  caterva_block_iter_new(ctx, a, NULL, NULL, 0, &it);
  caterva_block_iter_set_filter(it, keep, &c);
  caterva_block_iter_set_filter_by_value(it, by_value);
  while (caterva_block_iter_next(it, &blk) > 0) {
    n++;
    uniform += blk->nchunk != 0 && blk->uniform;
  }
  tap_ok(c.calls == want_calls && n == want_blocks && uniform == n - (n > 16 ? 16 : n),
         "a filter %s: asked %lld times (want %lld), %lld blocks visited (want %lld)", what,
         (long long)c.calls, (long long)want_calls, (long long)n, (long long)want_blocks);
  caterva_block_iter_free(it);
}

static void run_filter_by_value(void) {
  caterva_array *a = NULL;
  double *buf = calloc(64 * 64, sizeof *buf);
  for (int i = 0; i < 32; i++) /* chunk 0 holds values; chunks 1 to 3 are zero chunks */
    for (int j = 0; j < 32; j++) buf[i * 64 + j] = 1 + i * 64 + j;
  a = array_64(buf);
  tap_ok(caterva_schunk_chunk_special(caterva_array_schunk(a), 3) == CATERVA_SPECIAL_ZERO,
         "the zero chunks are stored as special chunks");
  filter_by_value_case(a, 0, keep_all, 64, 64, "per block: every block asked");
  filter_by_value_case(a, 1, keep_all, 16 + 3, 64,
                       "by value: once for each zero chunk's 16 blocks, all kept");
  filter_by_value_case(a, 1, keep_chunk0, 16 + 3, 16,
                       "by value: once for each zero chunk's 16 blocks, all skipped");
  caterva_array_free(a);
  free(buf);
}

/* One block of n float items (itemsize 8, 4 or 2) computed by cat_bs_block_compute against
 * the fold of the items one after the other, skipping NaN: counts, min and max exactly (the
 * sign of a zero too), the sum bit for bit, since the read check compares it so with what
 * a writer stored. Values whose sums round at every step, zeros of both signs, NaN at the
 * start, the end and inside, and none. */
static int block_fold_agrees(int is, const double *v, int64_t n) {
  cat_bstats bs;
  cat_geom g;
  caterva_block_stats got, want;
  int64_t cc[1] = {0};
  uint8_t *blk = malloc((size_t)n * (size_t)is);
  int ok;
  memset(&bs, 0, sizeof bs);
  memset(&g, 0, sizeof g);
  bs.stype = CATERVA_STATS_FLOAT;
  bs.dkind = CATERVA_KIND_FLOAT;
  bs.itemsize = g.itemsize = is;
  g.ndim = 1;
  g.shape[0] = n;
  g.chunkshape[0] = g.blockshape[0] = g.extchunkshape[0] = (int32_t)n;
  g.gridshape[0] = g.blockgrid[0] = g.nblocks = 1;
  g.blockitems = (int32_t)n;
  memset(&want, 0, sizeof want);
  want.min.f = INFINITY;
  want.max.f = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    double x = v[i];
    if (is == 8) memcpy(blk + i * 8, &x, 8);
    if (is == 4) {
      float f = (float)x;
      memcpy(blk + i * 4, &f, 4);
      x = f;
    }
    if (is == 2) {
      uint16_t h = x != x ? 0x7E00 : (uint16_t)(0x3C00 + (i * 37 % 1024)); /* 1.0 .. 2.0 */
      memcpy(blk + i * 2, &h, 2);
      x = half(h);
    }
    if (x != x) {
      want.nnan++;
      continue;
    }
    want.nvalid++;
    if (x < want.min.f) want.min.f = x;
    if (x > want.max.f) want.max.f = x;
    want.sum.f += x;
  }
  cat_bs_block_compute(&bs, &g, cc, 0, blk, &got);
  ok = got.nvalid == want.nvalid && got.nnan == want.nnan &&
       memcmp(&got.min.f, &want.min.f, 8) == 0 && memcmp(&got.max.f, &want.max.f, 8) == 0 &&
       memcmp(&got.sum.f, &want.sum.f, 8) == 0;
  if (!ok)
    tap_diag("itemsize %d, %lld items: nvalid %lld/%lld nnan %lld/%lld min %a/%a max %a/%a "
             "sum %a/%a", is, (long long)n, (long long)got.nvalid, (long long)want.nvalid,
             (long long)got.nnan, (long long)want.nnan, got.min.f, want.min.f, got.max.f,
             want.max.f, got.sum.f, want.sum.f);
  free(blk);
  return ok;
}

static void run_block_fold(void) {
  enum { N = 5000 };
  static double v[N];
  int bad = 0, cases = 0;
  for (int pattern = 0; pattern < 6; pattern++) {
    for (int i = 0; i < N; i++) {
      uint64_t r = rnd();
      v[i] = pattern == 0   ? 0.1 * (double)(i % 7) - 0.25
             : pattern == 1 ? (i % 2 ? -0.0 : 0.0)
             : pattern == 2 ? (i % 2 ? 0.0 : -0.0)
                            : ldexp((double)(r % 100000) - 50000.0, (int)(r >> 58) - 40);
    }
    if (pattern == 3) v[0] = NAN;          /* first: the sum starts after it */
    if (pattern == 4) v[N - 1] = NAN;      /* last */
    if (pattern == 5)
      for (int i = 0; i < N; i += 97) v[i] = NAN;
    if (pattern == 2) v[N / 2] = NAN;      /* -0.0 first, a NaN among zeros */
    for (int is = 2; is <= 8; is *= 2) {
      cases++;
      bad += !block_fold_agrees(is, v, N);
      cases++;
      bad += !block_fold_agrees(is, v, 1 + (int64_t)(rnd() % 64)); /* short blocks too */
    }
  }
  tap_ok(bad == 0, "a block's float statistics are its items folded one by one, the sum bit for "
         "bit, NaN skipped (%d cases, %d differ)", cases, bad);
}

/* v added to 0.0 n times, one addition after another (what acc_run does). */
static double added(double v, int64_t n) {
  double s = 0.0;
  for (int64_t i = 0; i < n; i++) s += v;
  return s;
}

/* cat_bs_repeat_sum against the additions it replaces: values whose sums round at every step
 * (0.1, 1/3), ties to even (1 + 2^-52 from the second addition on), sums that reach a power of
 * two, subnormals, the largest doubles (overflow to infinity), zeros, NaN and random values of
 * every magnitude, for counts up to 70,000. */
static void run_repeat_sum(void) {
  const double fixed[] = {0.1, -0.1, 1.0 / 3, 3.0, 2.5, -0.7, 1 + 0x1p-52, 1 - 0x1p-53, 0x1p-60,
                          0x1.8p-1074, 1e-310, DBL_MAX / 3, 1e300, INFINITY, -INFINITY, 0.0, -0.0,
                          NAN, 0.2 + 0x1p-55, 65504.0, 123456.789};
  const int64_t counts[] = {0, 1, 2, 3, 7, 10, 64, 100, 1000, 4096, 4097, 65536, 70000};
  int bad = 0, cases = 0;
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    for (size_t j = 0; j < sizeof counts / sizeof *counts; j++) {
      double want = fixed[i] != fixed[i] ? 0.0 : added(fixed[i], counts[j]);
      double got = cat_bs_repeat_sum(fixed[i], counts[j]);
      double again = cat_bs_repeat_sum(fixed[i], counts[j]); /* the last call's answer kept */
      cases++;
      if ((memcmp(&want, &got, sizeof got) != 0 || memcmp(&got, &again, sizeof got) != 0) &&
          bad++ < 5)
        tap_diag("%a x %lld: %a, additions %a", fixed[i], (long long)counts[j], got, want);
    }
  for (int r = 0; r < 3000; r++) {
    uint64_t bits = rnd() & 0x7FFFFFFFFFFFFFFFull;
    int64_t n = (int64_t)(rnd() % 20000);
    double v;
    memcpy(&v, &bits, sizeof v);
    if (v != v || isinf(v)) continue;
    if (r % 2) v = ldexp(frexp(v, &(int){0}), (int)(rnd() % 200) - 100); /* everyday sizes */
    double want = added(v, n), got = cat_bs_repeat_sum(v, n);
    cases++;
    if (memcmp(&want, &got, sizeof got) != 0 && bad++ < 5)
      tap_diag("%a x %lld: %a, additions %a", v, (long long)n, got, want);
  }
  tap_ok(bad == 0, "a repeated value's sum equals its additions one by one (%d cases, %d differ)",
         cases, bad);
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "%s/cvbsXXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (mkdtemp(tmpdir) == NULL) return tap_skip_all("no temporary directory");
  caterva_ctx_new(2, &ctx);
  run_repeat_sum();
  run_block_fold();
  run_predicates();
  run_filter();
  run_filter_by_value();
  run_fills();
  run_large_form();
  run_reopen();
  run_big_copy();
  for (size_t i = 0; i < sizeof dtypes / sizeof *dtypes; i++)
    for (int store = 0; store < 3; store++) run_store(&dtypes[i], store);
  caterva_ctx_free(ctx);
  tu_rm_tree(tmpdir);
  return tap_done();
}

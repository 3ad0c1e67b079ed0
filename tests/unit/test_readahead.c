/*
 * test_readahead.c -- the block iterator's read-ahead (CATERVA_ITER_READAHEAD): the same
 * blocks, in the same order, with the same bytes as an iterator without it, for random boxes
 * over arrays in memory, contiguous and sparse files; chunks of several batches; special
 * (never written) chunks between compressed ones; a block filter that is called exactly once
 * per candidate block and that empties whole chunks; scans stopped half-way and resets; and
 * the context's blocks counter.
 */
#define _XOPEN_SOURCE 700
#include "array_layer_internal.h"
#include "fsutil.h"
#include "tap.h"
#include "testrng.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];
static uint64_t rng_state = 0x2545F4914F6CDD1Du;

static uint64_t rnd(void) {
  return test_rng_next(&rng_state);
}

/* One visited block: where it is and a hash of its bytes. */
typedef struct seen {
  int64_t nchunk;
  int32_t nblock;
  int64_t start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM];
  uint64_t hash;
} seen;

typedef struct visit {
  seen *v;
  int64_t n, cap;
} visit;

static uint64_t hash_bytes(const uint8_t *p, size_t n) {
  uint64_t h = 1469598103934665603u;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211u;
  return h;
}

/* The filter: drops blocks by a hash of (chunk, block, salt), all blocks of chunks whose
** number is 1 mod 4 when salt is odd; counts its calls per (chunk, block). */
typedef struct filt {
  uint32_t salt;
  int64_t calls;
  int64_t repeats;          /* calls for a (chunk, block) already asked about */
  uint8_t *asked;           /* [nchunks * nblocks] */
  int32_t nblocks;
} filt;

static int keep(void *arg, int64_t nchunk, int32_t nblock) {
  filt *f = arg;
  uint8_t *a = &f->asked[nchunk * f->nblocks + nblock];
  f->calls++;
  if (*a) f->repeats++;
  *a = 1;
  if ((f->salt & 1) && nchunk % 4 == 1) return 0;
  return ((uint64_t)(nchunk * 7919 + nblock) * 2654435761u + f->salt) % 3 != 0;
}

/* Iterate [start, stop) with flags, recording the blocks; stop after `limit` blocks when
** limit >= 0. Returns the iterator's final status (0 at the end, 1 when stopped). */
static int run(caterva_ctx *ctx, caterva_array *a, const int64_t *start, const int64_t *stop,
               int flags, filt *f, int64_t limit, visit *out) {
  caterva_block_iter *it = NULL;
  const caterva_block *b;
  int rc;
  out->n = 0;
  if (caterva_block_iter_new(ctx, a, start, stop, flags, &it) != 0) return -1;
  if (f) caterva_block_iter_set_filter(it, keep, f);
  while ((rc = caterva_block_iter_next(it, &b)) > 0) {
    seen *s;
    if (limit >= 0 && out->n >= limit) {
      rc = 1;
      break;
    }
    if (out->n == out->cap) {
      out->cap = out->cap ? 2 * out->cap : 64;
      out->v = realloc(out->v, (size_t)out->cap * sizeof *out->v);
    }
    s = &out->v[out->n++];
    memset(s, 0, sizeof *s);
    s->nchunk = b->nchunk;
    s->nblock = b->nblock;
    memcpy(s->start, b->start, sizeof s->start);
    memcpy(s->stop, b->stop, sizeof s->stop);
    s->hash = b->data ? hash_bytes(b->data, (size_t)a->g.blocksize) : 0;
  }
  caterva_block_iter_free(it);
  return rc;
}

static int same_visits(const visit *x, const visit *y) {
  if (x->n != y->n) return 0;
  for (int64_t i = 0; i < x->n; i++)
    if (memcmp(&x->v[i], &y->v[i], sizeof x->v[i]) != 0) return 0;
  return 1;
}

typedef struct config {
  const char *name;
  int nd, is;
  int64_t shape[CATERVA_MAX_DIM];
  int32_t chunks[CATERVA_MAX_DIM], blocks[CATERVA_MAX_DIM];
  int holes;                /* leave every third chunk unwritten (a special chunk) */
} config;

static const config configs[] = {
  {"3d", 3, 8, {40, 37, 29}, {10, 12, 9}, {4, 5, 3}, 0},
  {"3d-holes", 3, 4, {50, 30, 30}, {10, 10, 10}, {5, 5, 5}, 1},
  {"1d", 1, 2, {100000}, {7000}, {500}, 0},
  {"2d-1chunk", 2, 1, {300, 300}, {300, 300}, {20, 30}, 0},
  /* chunks of 18 MB: more than one 16 MiB batch per chunk */
  {"big-chunks", 3, 8, {3, 1500, 1500}, {1, 1500, 1500}, {1, 100, 1500}, 0},
};

/* Write the array's content: random nibbles, which zstd compresses (so chunks are stored
** compressed, not memcpyed) and which differ everywhere. Holes leave chunks unwritten. */
static int fill(caterva_ctx *ctx, caterva_array *a, const config *c) {
  const cat_geom *g = &a->g;
  int64_t cc[CATERVA_MAX_DIM], start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM];
  for (int64_t n = 0; n < g->nchunks; n++) {
    int64_t items = 1;
    uint8_t *buf;
    if (c->holes && n % 3 == 1) continue;
    cat_geom_chunk_coords(g, n, cc);
    for (int k = 0; k < g->ndim; k++) {
      start[k] = cc[k] * g->chunkshape[k];
      stop[k] = start[k] + g->chunkshape[k] < g->shape[k] ? start[k] + g->chunkshape[k]
                                                           : g->shape[k];
      items *= stop[k] - start[k];
    }
    buf = malloc((size_t)(items * c->is));
    if (buf == NULL) return -1;
    for (int64_t i = 0; i < items * c->is; i++) buf[i] = (uint8_t)(rnd() % 16);
    int rc = caterva_array_set_slice(ctx, a, start, stop, buf, items * c->is);
    free(buf);
    if (rc != 0) return rc;
  }
  return 0;
}

static void random_box(const cat_geom *g, int64_t *start, int64_t *stop) {
  for (int k = 0; k < g->ndim; k++) {
    int64_t x = (int64_t)(rnd() % (uint64_t)g->shape[k]);
    int64_t y = (int64_t)(rnd() % (uint64_t)g->shape[k]);
    start[k] = x < y ? x : y;
    stop[k] = (x < y ? y : x) + 1;
    if (rnd() % 3 == 0) {
      start[k] = 0;
      stop[k] = g->shape[k];
    }
  }
}

static void run_config(caterva_ctx *c1, caterva_ctx *c2, const config *c, int store) {
  static const char *stores[] = {"memory", "contiguous", "sparse"};
  caterva_array_params p;
  caterva_array *a = NULL;
  char path[512];
  visit plain = {0}, ahead = {0};
  int64_t start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM];
  int ok_same = 1, ok_filter = 1, ok_stop = 1, ok_count = 1, ok_reset = 1, t, ncounted = 0;
  filt f1 = {0}, f2 = {0};
  const char *sname = stores[store - CATERVA_STORE_MEMORY];

  caterva_array_params_init(&p);
  p.ndim = c->nd;
  p.itemsize = c->is;
  memcpy(p.shape, c->shape, sizeof p.shape);
  memcpy(p.chunkshape, c->chunks, sizeof p.chunkshape);
  memcpy(p.blockshape, c->blocks, sizeof p.blockshape);
  p.store = store;
  p.cparams.clevel = 1;
  p.cparams.codec = CATERVA_ZSTD;
  if (store != CATERVA_STORE_MEMORY) {
    snprintf(path, sizeof path, "%s/%s-%d.%s", tmpdir, c->name, store,
             store == CATERVA_STORE_SPARSE ? "b2frame" : "b2nd");
    p.path = path;
  }
  if (!tap_ok(caterva_array_create(c1, &p, CATERVA_FILL_ZEROS, NULL, &a) == 0 && fill(c1, a, c) == 0,
              "%s/%s: array written (%s)", c->name, sname, caterva_ctx_errmsg(c1)))
    goto leave;
  if (store != CATERVA_STORE_MEMORY) { /* read back from the file, as a table does */
    caterva_array_free(a);
    a = NULL;
    if (!tap_ok(caterva_array_open(c1, path, CATERVA_OPEN_READ, &a) == 0, "%s/%s: reopened",
                c->name, sname))
      goto leave;
  }
  f1.nblocks = f2.nblocks = a->g.nblocks;
  f1.asked = malloc((size_t)(a->g.nchunks * a->g.nblocks));
  f2.asked = malloc((size_t)(a->g.nchunks * a->g.nblocks));
  for (t = 0; t < 10; t++) {
    int64_t before, after, want;
    if (t == 0) {
      for (int k = 0; k < c->nd; k++) {
        start[k] = 0;
        stop[k] = c->shape[k];
      }
    } else {
      random_box(&a->g, start, stop);
    }
    /* the same blocks and bytes, with and without read-ahead, and the same count of blocks
    ** decompressed (memcpyed and run-length blocks are copied, not counted, either way) */
    before = caterva_ctx_blocks_decompressed(c1);
    run(c1, a, start, stop, 0, NULL, -1, &plain);
    want = caterva_ctx_blocks_decompressed(c1) - before;
    before = caterva_ctx_blocks_decompressed(c2);
    if (run(c2, a, start, stop, CATERVA_ITER_READAHEAD, NULL, -1, &ahead) != 0 ||
        !same_visits(&plain, &ahead))
      ok_same = 0;
    after = caterva_ctx_blocks_decompressed(c2);
    if (after - before != want) {
      if (ok_count)
        tap_diag("box %d: %lld blocks counted, %lld without read-ahead", t,
                 (long long)(after - before), (long long)want);
      ok_count = 0;
    }
    if (want > 0) ncounted++;
    /* with a filter: each candidate block asked about once, the same blocks kept */
    f1.salt = f2.salt = (uint32_t)rnd();
    f1.calls = f2.calls = f1.repeats = f2.repeats = 0;
    memset(f1.asked, 0, (size_t)(a->g.nchunks * a->g.nblocks));
    memset(f2.asked, 0, (size_t)(a->g.nchunks * a->g.nblocks));
    run(c1, a, start, stop, 0, &f1, -1, &plain);
    if (run(c2, a, start, stop, CATERVA_ITER_READAHEAD, &f2, -1, &ahead) != 0 ||
        !same_visits(&plain, &ahead) || f2.repeats != 0 || f2.calls != f1.calls)
      ok_filter = 0;
    /* stopped half-way: the blocks handed out are right, nothing leaks or hangs */
    run(c1, a, start, stop, 0, NULL, -1, &plain);
    if (plain.n > 1) {
      int64_t half = plain.n / 2;
      if (run(c2, a, start, stop, CATERVA_ITER_READAHEAD, NULL, half, &ahead) != 1 ||
          ahead.n != half || memcmp(ahead.v, plain.v, (size_t)half * sizeof *plain.v) != 0)
        ok_stop = 0;
    }
  }
  /* one iterator reset over several boxes */
  {
    caterva_block_iter *it = NULL;
    const caterva_block *b;
    if (caterva_block_iter_new(c2, a, NULL, NULL, CATERVA_ITER_READAHEAD, &it) != 0) ok_reset = 0;
    for (t = 0; it && t < 6; t++) {
      int64_t n = 0, k = 0;
      int rc;
      random_box(&a->g, start, stop);
      run(c1, a, start, stop, 0, NULL, -1, &plain);
      caterva_block_iter_reset(it, start, stop);
      while ((rc = caterva_block_iter_next(it, &b)) > 0) {
        if (n < plain.n && (b->nchunk != plain.v[n].nchunk || b->nblock != plain.v[n].nblock ||
                            hash_bytes(b->data, (size_t)a->g.blocksize) != plain.v[n].hash))
          ok_reset = 0;
        n++;
        if (t % 2 && ++k == plain.n / 2) break; /* leave a job in flight before the reset */
      }
      if (rc < 0 || (t % 2 == 0 && n != plain.n)) ok_reset = 0;
    }
    caterva_block_iter_free(it);
  }
  tap_ok(ok_same, "%s/%s: read-ahead visits the same blocks with the same bytes (10 boxes)",
         c->name, sname);
  tap_ok(ok_filter, "%s/%s: with a filter, each block asked about once, the same blocks kept",
         c->name, sname);
  tap_ok(ok_stop, "%s/%s: scans stopped half-way hand out the right blocks", c->name, sname);
  tap_ok(ok_count && ncounted > 0,
         "%s/%s: the blocks counter counts what the plain iterator counts (%d boxes with "
         "decompressed blocks)", c->name, sname, ncounted);
  tap_ok(ok_reset, "%s/%s: resets with a batch in flight start over correctly", c->name, sname);
leave:
  free(f1.asked);
  free(f2.asked);
  free(plain.v);
  free(ahead.v);
  caterva_array_free(a);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  caterva_ctx *c1 = NULL, *c2 = NULL;
  snprintf(tmpdir, sizeof tmpdir, "%s/test_readahead.XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(tmpdir) == NULL) return tap_skip_all("cannot create a temporary directory");
  if (caterva_ctx_new(1, &c1) != 0 || caterva_ctx_new(2, &c2) != 0)
    return tap_skip_all("no context");
  for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
    for (int store = CATERVA_STORE_MEMORY; store <= CATERVA_STORE_SPARSE; store++)
      run_config(c1, c2, &configs[i], store);
  caterva_ctx_free(c1);
  caterva_ctx_free(c2);
  tu_rm_tree(tmpdir);
  return tap_done();
}

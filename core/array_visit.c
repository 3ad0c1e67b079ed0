/*
 * array_visit.c -- a box read whole into a buffer (cat_block_iter_read_all) and every block of
 * a box visited on the context's threads (caterva_block_iter_visit), both through the block
 * iterator's chunk stepping (array_iter.c) but decoding many blocks per call.
 */
#include "block_iter_internal.h"

#include <stdlib.h>
#include <string.h>

/* ---- reading a whole box ---------------------------------------------------------------- */

/* Where the blocks of a box go: a C-order buffer covering [bstart, bstart + bshape). */
typedef struct cat_dest {
  const caterva_block_iter *it;
  uint8_t *buf;
  const int64_t *bstart, *bshape;
  int mode;  /* CAT_TO_BUF, or CAT_TO_BUF_STREAM for buffers far larger than the caches */
} cat_dest;

/* Boxes of at least this many bytes are written with non-temporal stores. */
#define READ_STREAM_BYTES (64 * 1024 * 1024)

/* The block check of one request of a batch (blockstats.c): the record its blocks are checked
** against (NULL: none), and the first block found bad, set by whichever worker finds one. */
typedef struct cat_check_slot {
  const cat_bs_rec *rec;
  int64_t nchunk;
  int64_t bad;                      /* nblock * 8 + CAT_BS_BAD_*, or -1 */
} cat_check_slot;

/* One chunk of a batch: its valid items, for placing its blocks. */
typedef struct cat_dest_chunk {
  const cat_dest *d;
  cat_check_slot *chk;
  int64_t clo[CATERVA_MAX_DIM], chi[CATERVA_MAX_DIM];
} cat_dest_chunk;

/* Chunks and blocks decoded in one batch of tasks (one wake-up of the pool's threads). */
#define READ_BATCH_CHUNKS 64
#define READ_BATCH_BLOCKS 8192

typedef struct cat_read_batch {
  cat_chunk_req req[READ_BATCH_CHUNKS];
  cat_dest_chunk dc[READ_BATCH_CHUNKS];
  int64_t off[READ_BATCH_CHUNKS];   /* req[i]'s blocks start at blocks + off[i] */
  cat_check_slot chk[READ_BATCH_CHUNKS]; /* req[i]'s block check */
  int32_t nreq;
  int32_t *blocks;
  int64_t nblocks, cap;
} cat_read_batch;

/* Set up the block check of the batch's request i, for the iterator's current chunk. */
static cat_check_slot *check_slot(caterva_block_iter *it, cat_read_batch *b, int32_t i) {
  cat_check_slot *c = &b->chk[i];
  c->rec = cat_bs_check_rec(it->a, it->nchunk, it->chunk, it->cbytes);
  c->nchunk = it->nchunk;
  c->bad = -1;
  return c;
}

/* Check a decoded block (on any worker): 0, or CATERVA_E_CORRUPT with the block noted in c
** (the first one noted stays; the caller words the error). */
static int check_decoded(const caterva_block_iter *it, cat_check_slot *c, int32_t nblock,
                         const uint8_t *data) {
  int64_t none = -1;
  int what;
  if (c->rec == NULL || (what = cat_bs_check_block(it->a, c->rec, c->nchunk, nblock, data)) == 0)
    return 0;
  __atomic_compare_exchange_n(&c->bad, &none, (int64_t)nblock * 8 + what, false,
                              __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  return CATERVA_E_CORRUPT;
}

/* After a failed decode of the batch: the corrupt-block error when a check failed, else rc. */
static int checked_error(caterva_block_iter *it, const cat_read_batch *b, int rc) {
  for (int32_t i = 0; i < b->nreq; i++) {
    int64_t bad = __atomic_load_n(&b->chk[i].bad, __ATOMIC_RELAXED);
    if (bad >= 0)
      return cat_bs_corrupt(it->ctx, it->a, b->chk[i].nchunk, (int32_t)(bad / 8), (int)(bad % 8));
  }
  return rc;
}

/* cat_block_fn: copy a decoded block's part of the box into place (on any worker). */
static int scatter_block(void *arg, int32_t nblock, const uint8_t *data, int w) {
  const cat_dest_chunk *dc = arg;
  const cat_dest *d = dc->d;
  int32_t bc[CATERVA_MAX_DIM];
  int64_t origin[CATERVA_MAX_DIM], lo[CATERVA_MAX_DIM], hi[CATERVA_MAX_DIM];
  (void)w;
  if (check_decoded(d->it, dc->chk, nblock, data) < 0) return CATERVA_E_CORRUPT;
  cat_iter_block_box(d->it, dc->clo, dc->chi, nblock, bc, origin, lo, hi);
  cat_copy_box(d->it->g, (uint8_t *)data, origin, lo, hi, d->buf, d->bstart, d->bshape, d->mode);
  return CATERVA_OK;
}

/* The current chunk's selected blocks served from fill or whole (not decoded per block). */
static void copy_served(caterva_block_iter *it, const cat_dest *d) {
  const cat_geom *g = it->g;
  int64_t origin[CATERVA_MAX_DIM], lo[CATERVA_MAX_DIM], hi[CATERVA_MAX_DIM];
  for (int32_t i = 0; i < it->nsel; i++) {
    int32_t nb = it->sel[i];
    uint8_t *data = it->serve == SERVE_FILL ? it->fill
                                            : it->whole + (size_t)nb * (size_t)g->blocksize;
    cat_iter_block_box(it, it->clo, it->chi, nb, it->bc, origin, lo, hi);
    cat_copy_box(g, data, origin, lo, hi, d->buf, d->bstart, d->bshape, d->mode);
  }
}

/* Decode the batch's blocks and hand each to fn (on the pool's threads), then empty it. */
static int flush_batch_with(caterva_block_iter *it, cat_read_batch *b, cat_block_fn fn) {
  int64_t r;
  if (b->nreq == 0) return CATERVA_OK;
  for (int32_t i = 0; i < b->nreq; i++) b->req[i].blocks = b->blocks + b->off[i];
  r = cat_chunks_decode_each(it->ctx, b->req, b->nreq, fn);
  if (r < 0) r = checked_error(it, b, (int)r);
  b->nreq = 0;
  b->nblocks = 0;
  return r < 0 ? (int)r : CATERVA_OK;
}

/* Decode and place the batch's blocks, then empty it. */
static int flush_batch(caterva_block_iter *it, cat_read_batch *b) {
  return flush_batch_with(it, b, scatter_block);
}

/* Add the current chunk's selected blocks (plainly compressed) to the batch. */
static int add_to_batch(caterva_block_iter *it, cat_read_batch *b, const cat_dest *d) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  int32_t i = b->nreq;
  if (b->nblocks + it->nsel > b->cap) {
    int64_t cap = b->nblocks + it->nsel > 2 * b->cap ? b->nblocks + it->nsel : 2 * b->cap;
    int32_t *p = realloc(b->blocks, (size_t)cap * sizeof *p);
    CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
    b->blocks = p;
    b->cap = cap;
  }
  memcpy(b->blocks + b->nblocks, it->sel, (size_t)it->nsel * sizeof *it->sel);
  b->off[i] = b->nblocks;
  b->nblocks += it->nsel;
  b->req[i].chunk = it->chunk;
  b->req[i].len = (size_t)it->cbytes;
  b->req[i].n = it->nsel;
  b->req[i].arg = &b->dc[i];
  b->dc[i].d = d;
  b->dc[i].chk = check_slot(it, b, i);
  memcpy(b->dc[i].clo, it->clo, sizeof it->clo);
  memcpy(b->dc[i].chi, it->chi, sizeof it->chi);
  b->nreq++;
  if (b->nreq == READ_BATCH_CHUNKS || b->nblocks >= READ_BATCH_BLOCKS) rc = flush_batch(it, b);
leave:
  return rc;
}

int cat_block_iter_read_all(caterva_block_iter *it, uint8_t *buf, const int64_t *bstart,
                            const int64_t *bshape) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  cat_dest d = {it, buf, bstart, bshape, CAT_TO_BUF};
  cat_read_batch *b = NULL;
  int64_t nbytes = it->g->itemsize;
  if (it->done || (it->flags & CATERVA_ITER_NODATA)) goto leave;
  for (int k = 0; k < it->g->ndim; k++) nbytes *= bshape[k];
  if (nbytes >= READ_STREAM_BYTES) d.mode = CAT_TO_BUF_STREAM;
  cat_iter_ra_discard(it);
  /* ~20 KB of request slots, filled before use: only the counts need a start value (zeroing
   * the whole of it cost as much as decoding a small box's block) */
  b = malloc(sizeof *b);
  CAT_CHECK(leave, b != NULL, CATERVA_E_NOMEM, "out of memory");
  b->nreq = 0;
  b->blocks = NULL;
  b->nblocks = b->cap = 0;
  for (;;) {
    if (!cat_iter_step_chunk(it)) break;
    CAT_TRY(leave, cat_iter_enter_chunk(it));
    it->pos = it->nsel; /* next() would move on to the following chunk */
    if (it->nsel == 0) continue;
    if (it->serve == SERVE_BLOCKS) CAT_TRY(leave, add_to_batch(it, b, &d));
    else copy_served(it, &d);
  }
  rc = flush_batch(it, b);
leave:
  if (b != NULL) free(b->blocks);
  free(b);
  it->done = 1;
  return rc;
}

/* ---- visiting every block on the context's threads ------------------------------------------ */

/* A visit: the caller's functions, and the sequence number of the next block. */
typedef struct cat_visit {
  caterva_block_iter *it;
  caterva_block_visit_fn fn;
  caterva_block_done_fn done;
  void *arg;
  int64_t seq;                       /* blocks handed out so far */
  int64_t seq_batch;                 /* first sequence number of the pending batch */
  struct cat_visit_chunk *vcs;       /* the batch's chunks (READ_BATCH_CHUNKS) */
} cat_visit;

/* One chunk's share of a batch (a whole chunk, or a run of its selected blocks). */
typedef struct cat_visit_chunk {
  const cat_visit *v;
  int64_t nchunk;
  int64_t seq0;                      /* sequence number of blocks[0] */
  const int32_t *blocks;             /* its block numbers, increasing (in the batch's list) */
  int32_t n;
  cat_check_slot *chk;               /* its block check */
  int64_t clo[CATERVA_MAX_DIM], chi[CATERVA_MAX_DIM];
} cat_visit_chunk;

/* cat_block_fn: describe a decoded block and pass it to the caller's function. The block's
** sequence number is its place in the chunk's increasing list plus the list's first number. */
static int visit_block(void *arg, int32_t nblock, const uint8_t *data, int w) {
  const cat_visit_chunk *vc = arg;
  const cat_visit *v = vc->v;
  caterva_block blk;
  int32_t bc[CATERVA_MAX_DIM], lo = 0, hi = vc->n - 1;
  while (lo < hi) { /* the first entry >= nblock: nblock itself */
    int32_t mid = lo + (hi - lo) / 2;
    if (vc->blocks[mid] < nblock) lo = mid + 1;
    else hi = mid;
  }
  if (check_decoded(v->it, vc->chk, nblock, data) < 0) return CATERVA_E_CORRUPT;
  cat_iter_block_box(v->it, vc->clo, vc->chi, nblock, bc, blk.origin, blk.start, blk.stop);
  blk.blockshape = v->it->g->blockshape;
  blk.data = data;
  blk.uniform = 0;
  blk.nchunk = vc->nchunk;
  blk.nblock = nblock;
  return v->fn(v->arg, &blk, vc->seq0 + lo, w);
}

/* A batch's block (number t, owner key) while its blocks are sorted by owner. */
typedef struct cat_owned {
  int64_t key, t;
} cat_owned;

static int owned_cmp(const void *x, const void *y) {
  const cat_owned *a = x, *b = y;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  return a->t < b->t ? -1 : a->t > b->t;
}

/* The batch's blocks grouped by their owner (each group in increasing order) into *gr,
** whose arrays are malloc'ed (free gr->order and gr->first). */
static int owner_groups(cat_visit *v, const cat_read_batch *b, cat_groups *gr) {
  caterva_block_iter *it = v->it;
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  cat_owned *own = malloc((size_t)(b->nblocks > 0 ? b->nblocks : 1) * sizeof *own);
  int64_t *order = malloc((size_t)(b->nblocks > 0 ? b->nblocks : 1) * sizeof *order);
  int64_t *first = malloc((size_t)(b->nblocks + 1) * sizeof *first), t = 0, n = 0;
  caterva_block blk;
  int32_t bc[CATERVA_MAX_DIM];
  CAT_CHECK(leave, own != NULL && order != NULL && first != NULL, CATERVA_E_NOMEM,
            "out of memory");
  blk.blockshape = it->g->blockshape;
  blk.data = NULL;
  blk.uniform = 0;
  for (int32_t i = 0; i < b->nreq; i++) {
    const cat_visit_chunk *vc = &v->vcs[i];
    for (int32_t j = 0; j < vc->n; j++, t++) {
      cat_iter_block_box(it, vc->clo, vc->chi, vc->blocks[j], bc, blk.origin, blk.start, blk.stop);
      blk.nchunk = vc->nchunk;
      blk.nblock = vc->blocks[j];
      own[t].key = it->owner(it->owner_arg, &blk);
      own[t].t = t;
    }
  }
  qsort(own, (size_t)t, sizeof *own, owned_cmp);
  for (int64_t i = 0; i < t; i++) {
    if (i == 0 || own[i].key != own[i - 1].key) first[n++] = i;
    order[i] = own[i].t;
  }
  first[n] = t;
  gr->order = order;
  gr->first = first;
  gr->n = n;
  order = first = NULL;
leave:
  free(own);
  free(order);
  free(first);
  return rc;
}

/* Decode the batch's blocks, a group per owner, and hand each to visit_block; then empty it. */
static int flush_owned(cat_visit *v, cat_read_batch *b) {
  cat_groups gr = {NULL, NULL, 0};
  int64_t r = owner_groups(v, b, &gr);
  for (int32_t i = 0; i < b->nreq; i++) b->req[i].blocks = b->blocks + b->off[i];
  if (r >= 0) r = cat_chunks_decode_groups(v->it->ctx, b->req, b->nreq, visit_block, &gr);
  if (r < 0) r = checked_error(v->it, b, (int)r);
  b->nreq = 0;
  b->nblocks = 0;
  free((void *)gr.order);
  free((void *)gr.first);
  return r < 0 ? (int)r : CATERVA_OK;
}

/* Decode the pending batch on the pool (a group per owner when the caller set one), then
** tell the caller it is complete. */
static int visit_flush(cat_visit *v, cat_read_batch *b) {
  int rc;
  for (int32_t i = 0; i < b->nreq; i++) v->vcs[i].blocks = b->blocks + b->off[i];
  if (v->it->owner != NULL && b->nreq > 0) rc = flush_owned(v, b);
  else rc = flush_batch_with(v->it, b, visit_block);
  if (rc >= 0 && v->seq > v->seq_batch && v->done != NULL)
    rc = v->done(v->arg, v->seq_batch, v->seq);
  v->seq_batch = v->seq;
  return rc;
}

/* Add selected blocks sel[from, from + n) of the current chunk to the batch. */
static int visit_add(cat_visit *v, cat_read_batch *b, int32_t from, int32_t n) {
  cat_visit_chunk *vcs = v->vcs;
  caterva_block_iter *it = v->it;
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  int32_t i = b->nreq;
  if (b->nblocks + n > b->cap) {
    int64_t cap = b->nblocks + n > 2 * b->cap ? b->nblocks + n : 2 * b->cap;
    int32_t *p = realloc(b->blocks, (size_t)cap * sizeof *p);
    CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
    b->blocks = p;
    b->cap = cap;
  }
  memcpy(b->blocks + b->nblocks, it->sel + from, (size_t)n * sizeof *it->sel);
  b->off[i] = b->nblocks;
  b->nblocks += n;
  b->req[i].chunk = it->chunk;
  b->req[i].len = (size_t)it->cbytes;
  b->req[i].n = n;
  b->req[i].arg = &vcs[i];
  vcs[i].v = v;
  vcs[i].nchunk = it->nchunk;
  vcs[i].seq0 = v->seq;
  vcs[i].blocks = NULL; /* set at the flush: the list may still move */
  vcs[i].n = n;
  vcs[i].chk = check_slot(it, b, i);
  memcpy(vcs[i].clo, it->clo, sizeof it->clo);
  memcpy(vcs[i].chi, it->chi, sizeof it->chi);
  v->seq += n;
  b->nreq++;
leave:
  return rc;
}

/* The current chunk's blocks served from fill or whole, on the caller's thread, in order,
** in batches of at most max. */
static int visit_served(cat_visit *v, int32_t max) {
  caterva_block_iter *it = v->it;
  const cat_geom *g = it->g;
  caterva_block blk;
  int rc = CATERVA_OK;
  blk.blockshape = g->blockshape;
  blk.nchunk = it->nchunk;
  blk.uniform = it->serve == SERVE_FILL && cat_iter_fill_uniform(it);
  for (int32_t i = 0; i < it->nsel && rc >= 0; i++) {
    blk.nblock = it->sel[i];
    blk.data = it->serve == SERVE_FILL ? it->fill
                                       : it->whole + (size_t)blk.nblock * (size_t)g->blocksize;
    cat_iter_block_box(it, it->clo, it->chi, blk.nblock, it->bc, blk.origin, blk.start, blk.stop);
    rc = v->fn(v->arg, &blk, v->seq++, 0);
    if (rc >= 0 && (v->seq - v->seq_batch == max || i + 1 == it->nsel)) {
      if (v->done != NULL) rc = v->done(v->arg, v->seq_batch, v->seq);
      v->seq_batch = v->seq;
    }
  }
  return rc;
}

/* The current chunk's selected blocks into the batch, in runs of at most max blocks, the
** batch decoded whenever it is full. */
static int visit_chunk(cat_visit *v, cat_read_batch *b, int32_t max) {
  caterva_block_iter *it = v->it;
  int rc = CATERVA_OK;
  for (int32_t from = 0; from < it->nsel && rc >= 0;) {
    int32_t n = it->nsel - from;
    if (b->nreq == READ_BATCH_CHUNKS || b->nblocks >= max) rc = visit_flush(v, b);
    if (rc < 0) break;
    if (n > max - b->nblocks) n = (int32_t)(max - b->nblocks);
    rc = visit_add(v, b, from, n);
    from += n;
  }
  return rc;
}

int caterva_block_iter_visit(caterva_block_iter *it, int32_t max_batch,
                             caterva_block_visit_fn fn, caterva_block_done_fn done, void *arg) {
  caterva_ctx *ctx = it ? it->ctx : NULL;
  int rc = CATERVA_OK;
  cat_read_batch *b = NULL;
  cat_visit_chunk *vcs = NULL;
  cat_visit v = {it, fn, done, arg, 0, 0, NULL};
  CAT_CHECK(leave, it != NULL && fn != NULL && !(it->flags & CATERVA_ITER_NODATA),
            CATERVA_E_INVALID, "visit: no iterator, no function, or an iterator without data");
  if (it->done) goto leave;
  if (max_batch < 1 || max_batch > READ_BATCH_BLOCKS) max_batch = READ_BATCH_BLOCKS;
  cat_iter_ra_discard(it);
  b = malloc(sizeof *b);
  if (b != NULL) {
    b->nreq = 0;
    b->blocks = NULL;
    b->nblocks = b->cap = 0;
  }
  vcs = malloc(READ_BATCH_CHUNKS * sizeof *vcs);
  CAT_CHECK(leave, b != NULL && vcs != NULL, CATERVA_E_NOMEM, "out of memory");
  v.vcs = vcs;
  for (;;) {
    if (!cat_iter_step_chunk(it)) break;
    /* a remote chunk's bytes stay only while it is the pinned one: decode it before the next */
    if (cat_sc_is_remote(it->sc)) CAT_TRY(leave, visit_flush(&v, b));
    CAT_TRY(leave, cat_iter_enter_chunk(it));
    it->pos = it->nsel; /* next() would move on to the following chunk */
    if (it->nsel == 0) continue;
    if (it->serve == SERVE_BLOCKS) {
      CAT_TRY(leave, visit_chunk(&v, b, max_batch));
    } else {
      CAT_TRY(leave, visit_flush(&v, b));
      CAT_TRY(leave, visit_served(&v, max_batch));
    }
  }
  rc = visit_flush(&v, b);
leave:
  if (b != NULL) free(b->blocks);
  free(b);
  free(vcs);
  if (it != NULL) it->done = 1;
  return rc;
}

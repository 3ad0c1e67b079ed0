/*
 * wcache_store.c -- storing the write cache's images: re-encoded from the image alone, or
 * only in the blocks written into against the stored chunk, on the caller's thread or handed
 * to the write-behind worker (wstore.c) as a statement leaves them (wcache.c describes the
 * cache).
 */
#include "write_cache_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per block of an image whose written items are bits: some item written (1), or none (0). */
static void dirty_blocks(const cat_geom *g, const uint64_t *bits, uint8_t *dirty) {
  int64_t bi = g->blockitems;
  for (int32_t j = 0; j < g->nblocks; j++) {
    int64_t i = j * bi, end = i + bi;
    dirty[j] = 0;
    while (i < end && !dirty[j]) {
      uint64_t w = bits[i >> 6] >> (i & 63);
      int64_t span = 64 - (i & 63);
      if (span > end - i) span = end - i;
      if (span < 64) w &= ((uint64_t)1 << span) - 1;
      dirty[j] = w != 0;
      i += span;
    }
  }
}

/* Items [i0, i0 + cnt) of img not written (bits) are taken from old (the same items): runs
 * of 64 at once where a bitmap word is all clear (a slab UPDATE writes few rows of a block). */
static void merge_unwritten(const cat_geom *g, uint8_t *img, const uint64_t *bits,
                            const uint8_t *old, int64_t i0, int64_t cnt) {
  size_t is = (size_t)g->itemsize;
  int64_t i = i0, end = i0 + cnt;
  while (i < end) {
    uint64_t w = bits[i >> 6];
    int64_t run = 64 - (i & 63);
    if (run > end - i) run = end - i;
    if ((w >> (i & 63)) == 0) { /* nothing written from i to the end of the word */
      memcpy(img + (size_t)i * is, old + (size_t)(i - i0) * is, (size_t)run * is);
    } else if (~w >> (i & 63) != 0) {
      for (int64_t k = i; k < i + run; k++)
        if (!(w >> (k & 63) & 1)) memcpy(img + (size_t)k * is, old + (size_t)(k - i0) * is, is);
    }
    i += run;
  }
}

/* What merge_block needs: the image, its written items, its geometry. */
typedef struct merge_arg {
  const cat_geom *g;
  uint8_t *img;
  const uint64_t *bits;
} merge_arg;

/* A decoded block of the stored chunk (cat_block_fn): its items the image did not get. Each
 * block is merged from the decoding thread's scratch as it is decoded, so no buffer of the
 * old blocks is filled and read back (a slab UPDATE's chunk: 16 blocks of 65 KB, a fresh
 * megabyte for every chunk at first, each page a fault). */
static int merge_block(void *arg, int32_t nblock, const uint8_t *data, int w) {
  const merge_arg *m = arg;
  (void)w;
  merge_unwritten(m->g, m->img, m->bits, data, (int64_t)nblock * m->g->blockitems,
                  m->g->blockitems);
  return CATERVA_OK;
}

/* The re-encoding of a chunk written in part (img, bits) from its changed blocks only
 * (cat_chunk_patch) against the stored chunk's bytes chunk/len: the written blocks are
 * completed from the stored chunk's same blocks (decoded alone), the others keep their
 * compressed bytes; dirty gets the blocks written. The new chunk's size in cbuf, 0 when the
 * stored chunk does not allow it (then the whole chunk is rebuilt), or an error. Reads
 * nothing else (the worker runs it too). */
static int32_t patch_image(caterva_ctx *ctx, const cat_geom *g, const caterva_cparams *cp,
                           uint8_t *img, const uint64_t *bits, const uint8_t *chunk,
                           int32_t len, uint8_t *cbuf, int32_t cap, uint8_t *dirty) {
  int32_t nd = 0, *list = NULL, rc;
  merge_arg m = {g, img, bits};
  /* before decoding anything: merge_block reads a whole block of g's size from each decoded
   * one, which a stored chunk of another block size (a foreign or hostile file) does not
   * hold, and a chunk the patch refuses is rebuilt whole from all its blocks anyway */
  if (!cat_chunk_patchable(cp, chunk, len, g->chunksize)) return 0;
  dirty_blocks(g, bits, dirty);
  list = malloc((size_t)g->nblocks * sizeof *list);
  CAT_CHECK(leave, list != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int32_t j = 0; j < g->nblocks; j++) {
    int64_t k, end = ((int64_t)j + 1) * g->blockitems;
    if (!dirty[j]) continue;
    for (k = (int64_t)j * g->blockitems; k < end && (bits[k >> 6] >> (k & 63) & 1); k++) {}
    if (k < end) list[nd++] = j; /* written in part: its other items come from the chunk */
  }
  if (nd > 0) {
    cat_chunk_req req = {chunk, (size_t)len, list, nd, &m};
    CAT_TRY(leave, cat_chunks_decode_each(ctx, &req, 1, merge_block));
  }
  rc = cat_chunk_patch(ctx, cp, chunk, len, img, g->chunksize, dirty, cbuf, cap);
  if (rc == CATERVA_E_UNSUPPORTED) rc = 0; /* rebuild whole */
leave:
  free(list);
  return rc;
}

/* The statistics kept for chunk n, if any, are known and right (they are patched block by
 * block: the old ones must be). */
static bool stats_known(caterva_ctx *ctx, caterva_array *a, int64_t n) {
  caterva_block_stats st;
  return a->bs == NULL || caterva_array_block_stats(ctx, a, n, 0, &st) == 1;
}

/* patch_image for entry e against its stored chunk: 1 with the new chunk in cbuf (*cbytes),
 * 0 when the stored chunk or the statistics do not allow it (then the whole chunk is
 * rebuilt). */
static int patch_entry(caterva_ctx *ctx, caterva_array *a, cat_wentry *e,
                       const caterva_cparams *cp, uint8_t *cbuf, int32_t cap, uint8_t *dirty,
                       int32_t *cbytes) {
  const uint8_t *chunk;
  int32_t len, r;
  int rc = caterva_schunk_chunk_special(a->sc, e->nchunk);
  CAT_TRY(leave, rc);
  if (rc != CATERVA_SPECIAL_NONE) return 0; /* a header only: nothing to copy */
  if (!stats_known(ctx, a, e->nchunk)) return 0;
  CAT_TRY(leave, caterva_schunk_get_chunk(ctx, a->sc, e->nchunk, &chunk, &len));
  CAT_TRY(leave, r = patch_image(ctx, &a->g, cp, e->img, e->bits, chunk, len, cbuf, cap, dirty));
  *cbytes = r;
  rc = r > 0;
leave:
  return rc;
}

/* Compress the image of e (completed from the stored chunk where items were not written:
 * only the blocks written into are re-encoded when the stored chunk allows it) and store it;
 * e becomes free. */
int cat_wcache_store_entry(caterva_ctx *ctx, caterva_array *a, cat_wentry *e) {
  const cat_geom *g = &a->g;
  uint8_t *old = NULL, *cbuf = NULL, *dirty = NULL;
  size_t is = (size_t)g->itemsize, nw = cat_wcache_bits_words(g);
  caterva_cparams cp = cat_array_chunk_cparams(a);
  int32_t cbytes = 0, cap = g->chunksize + CATERVA_CHUNK_MAX_OVERHEAD;
  int rc = CATERVA_OK, own, patched = 0;
  CAT_TRY(leave, cat_wcache_normalize(ctx, a, e, e->nset < e->nvalid));
  cbuf = malloc((size_t)cap);
  CAT_CHECK(leave, cbuf != NULL, CATERVA_E_NOMEM, "out of memory");
  if (e->nset < e->nvalid) {
    dirty = malloc((size_t)g->nblocks);
    CAT_CHECK(leave, dirty != NULL, CATERVA_E_NOMEM, "out of memory");
    CAT_TRY(leave, patched = patch_entry(ctx, a, e, &cp, cbuf, cap, dirty, &cbytes));
  }
  if (!patched && e->nset < e->nvalid) {
    old = malloc((size_t)g->chunksize);
    CAT_CHECK(leave, old != NULL, CATERVA_E_NOMEM, "out of memory");
    CAT_TRY(leave, cat_array_read_chunk(ctx, a, e->nchunk, old));
    for (size_t w = 0; w < nw; w++) {
      uint64_t b = e->bits[w];
      size_t i0 = w * 64, cnt = 64;
      if (b == UINT64_MAX) continue;
      if ((i0 + cnt) * is > (size_t)g->chunksize) cnt = (size_t)g->chunksize / is - i0;
      if (b == 0) {
        memcpy(e->img + i0 * is, old + i0 * is, cnt * is);
        continue;
      }
      for (size_t j = 0; j < cnt; j++)
        if (!(b >> j & 1)) memcpy(e->img + (i0 + j) * is, old + (i0 + j) * is, is);
    }
  }
  if (!patched) {
    cbytes = caterva_chunk_compress(ctx, &cp, e->img, g->chunksize, cbuf, cap);
    CAT_TRY(leave, cbytes);
  }
  /* outside a transaction the chunk and its statistics get one commit of their own */
  CAT_TRY(leave, own = cat_array_txn_enter(ctx, a));
  if (patched) cat_bs_hint_blocks(a, e->nchunk, e->img, dirty);
  else cat_bs_hint(a, e->nchunk, e->img);
  rc = caterva_schunk_update_chunk(ctx, a->sc, e->nchunk, cbuf, cbytes);
  cat_bs_hint(a, -1, NULL);
  rc = cat_array_txn_leave(ctx, a, own, rc);
  CAT_TRY(leave, rc);
  e->nchunk = -1;
  if (a->wc->last >= 0 && e == &a->wc->e[a->wc->last]) a->wc->have_blk = 0; /* e may be a copy */
leave:
  free(old);
  free(cbuf);
  free(dirty);
  return rc;
}

/* ---- chunks that chunkwise writes leave behind --------------------------------------------
 *
 * An UPDATE or DELETE writes in the order of the table's own scan, chunk after chunk: when
 * its writes move on to another chunk, the one they leave, written in part, is not written
 * again in the statement. Inside a transaction with threads to spare, such a chunk goes to
 * the worker at once (cat_wcache_leave_behind), which re-encodes its written blocks against a
 * copy of the stored chunk's bytes (patch_image) while the statement goes on, instead of at
 * the commit. Writes in another order (a transposed load over stored chunks) would write such
 * a chunk again: the first rewrite waits for the worker's result and stores it
 * (cat_wcache_claim, wcache.c), and nothing more is handed over until the next settle (a
 * statement's end, a savepoint, a flush), so that order pays for one chunk at most. */

/* A job of cat_wcache_leave_behind: what patch_image needs besides the image, and its
 * result. */
typedef struct wpatch {
  uint64_t *bits;      /* the written items (owned) */
  uint8_t *old;        /* the stored chunk's bytes when handed over (owned) */
  int32_t oldlen;
  cat_bs_rec *oldrec;  /* its statistics record (a reference), NULL without statistics */
  uint8_t *dirty;      /* per block: written (owned, set by the job) */
  int64_t nset;
  bool cleared;
  bool patched;        /* the job re-encoded it; else store_left does what
                        * cat_wcache_store_entry does */
} wpatch;

static void wpatch_free(void *arg) {
  wpatch *w = arg;
  if (w == NULL) return;
  free(w->bits);
  free(w->old);
  free(w->dirty);
  cat_bs_rec_drop(w->oldrec);
  free(w);
}

/* The worker's part (cat_ws_fn): patch_image, and the statistics of the written blocks.
 * Whatever fails here (memory, a stored chunk that does not decode) leaves the chunk to
 * store_left, on the caller's thread, which reports the error if it fails there too. */
static void patch_job(caterva_ctx *ctx, cat_wdone *d, const caterva_cparams *cp,
                      const cat_geom *g, const caterva_array *a) {
  wpatch *w = d->arg;
  int32_t cap = g->chunksize + CATERVA_CHUNK_MAX_OVERHEAD, r = 0;
  d->cbuf = malloc((size_t)cap);
  w->dirty = malloc((size_t)g->nblocks);
  if (d->cbuf != NULL && w->dirty != NULL)
    r = patch_image(ctx, g, cp, d->img, w->bits, w->old, w->oldlen, d->cbuf, cap, w->dirty);
  if (r > 0 && w->oldrec != NULL)
    d->rec = cat_bs_rec_patched(a, g, d->nchunk, d->img, w->dirty, w->oldrec, d->cbuf, r);
  /* a patched chunk without its statistics record (out of memory) gets none: the hook
   * computes it */
  d->cbytes = r > 0 ? r : 0;
  w->patched = r > 0;
}

/* The worker's patch of chunk n holds: it re-encoded the chunk, and the stored chunk is still
 * the one it patched (nothing may change it meanwhile; this makes sure). */
static bool patch_holds(caterva_array *a, int64_t n, const wpatch *w) {
  const uint8_t *chunk;
  int32_t len;
  if (!w->patched || caterva_schunk_chunk_special(a->sc, n) != CATERVA_SPECIAL_NONE ||
      caterva_schunk_get_chunk(NULL, a->sc, n, &chunk, &len) < 0)
    return false;
  return len == w->oldlen && memcmp(chunk, w->old, (size_t)len) == 0;
}

/* A chunk handed over that the worker did not re-encode (or whose stored chunk changed):
 * stored here from its image and written items, as cat_wcache_store_entry stores a pending one. */
static int store_left(caterva_ctx *ctx, caterva_array *a, cat_wdone *d, wpatch *w) {
  cat_wentry t;
  memset(&t, 0, sizeof t);
  t.nchunk = d->nchunk;
  t.img = d->img;
  t.bits = w->bits;
  t.nset = w->nset;
  t.nvalid = cat_wcache_nvalid(&a->g, d->nchunk);
  t.cleared = w->cleared;
  t.perm = -1;
  return cat_wcache_store_entry(ctx, a, &t);
}

/* Store a chunk the worker compressed (outside a transaction it gets a commit of its own, as
 * in cat_wcache_store_entry), or one it left to this thread (store_left); d is freed. */
static int store_done(caterva_ctx *ctx, caterva_array *a, cat_wdone *d) {
  wpatch *w = d->arg_free == wpatch_free ? d->arg : NULL;
  int rc = d->cbytes, own;
  if (rc < 0) {
    rc = cat_error(ctx, rc, "%s", d->errmsg);
    goto leave;
  }
  if (w != NULL && !patch_holds(a, d->nchunk, w)) {
    rc = store_left(ctx, a, d, w);
    goto leave;
  }
  CAT_TRY(leave, own = cat_array_txn_enter(ctx, a));
  /* a record patched from statistics that have changed since would be wrong: the hook then
   * computes it from the bytes */
  if (w == NULL || cat_bs_rec_is(a, d->nchunk, w->oldrec)) cat_bs_hint_rec(a, d->nchunk, d->rec);
  else cat_bs_hint(a, -1, NULL);
  rc = caterva_schunk_update_chunk(ctx, a->sc, d->nchunk, d->cbuf, d->cbytes);
  cat_bs_hint(a, -1, NULL);
  rc = cat_array_txn_leave(ctx, a, own, rc);
leave:
  cat_imgpool_put(a->wc->pool, d->img);
  cat_ws_done_free(d);
  return rc;
}

/* Store the chunks the worker has finished, in the order they were handed over; with wait,
 * every chunk handed over. */
int cat_wcache_reap(caterva_ctx *ctx, caterva_array *a, int wait) {
  cat_wdone d;
  int rc = CATERVA_OK;
  while (a->wc->ws != NULL && cat_ws_pop(a->wc->ws, ctx, wait, &d))
    CAT_TRY(leave, store_done(ctx, a, &d));
leave:
  return rc;
}

int cat_wcache_settle(caterva_ctx *ctx, caterva_array *a) {
  int rc = a->wc != NULL ? cat_wcache_reap(ctx, a, 1) : CATERVA_OK;
  return rc < 0 ? rc : cat_wcache_normalize_all(ctx, a);
}

/* The worker, with room for a job: 1, or 0 when there is none (no memory for it). */
static int ws_room(caterva_ctx *ctx, caterva_array *a) {
  cat_wcache *wc = a->wc;
  int rc = CATERVA_OK;
  if (wc->ws == NULL && (wc->ws = cat_ws_new(a->g.chunksize)) == NULL) return 0;
  CAT_TRY(leave, cat_wcache_reap(ctx, a, 0));
  if (cat_ws_full(wc->ws)) {
    cat_wdone d;
    if (cat_ws_pop(wc->ws, ctx, 1, &d)) CAT_TRY(leave, store_done(ctx, a, &d));
  }
  rc = 1;
leave:
  return rc;
}

/* A chunk written wholly into a permuted image, handed to the worker (cat_wcache_store_full):
 * the job puts the image in the chunk's layout (cat_wcache_perm_copy) before compressing it. */
typedef struct wperm {
  cat_imgpool *pool;  /* where other goes back, on the caller's thread (wperm_free) */
  uint8_t *other;     /* the image the job fills; after it, the permuted one */
  int k;              /* the permuted image's last dimension */
  bool cleared;
} wperm;

static void wperm_free(void *arg) {
  wperm *w = arg;
  if (w == NULL) return;
  cat_imgpool_put(w->pool, w->other);
  free(w);
}

/* The worker's part (cat_ws_fn): cat_wcache_perm_copy, then what cat_ws_push's job does. */
static void perm_job(caterva_ctx *ctx, cat_wdone *d, const caterva_cparams *cp,
                     const cat_geom *g, const caterva_array *a) {
  wperm *w = d->arg;
  uint8_t *t;
  if (cat_wcache_perm_copy(g, w->k, d->img, NULL, w->cleared, w->other, NULL) < 0) {
    d->cbytes = CATERVA_E_NOMEM;
    snprintf(d->errmsg, sizeof d->errmsg, "out of memory");
    return;
  }
  t = d->img;
  d->img = w->other;
  w->other = t;
  cat_ws_compress(ctx, d, cp, g, a);
}

/* Hand e's permuted image to the worker with an image for its layout: 1, or 0 when there is
 * no memory for it (then e is as it was). */
static int push_perm(cat_wcache *wc, caterva_array *a, const caterva_cparams *cp,
                     cat_wentry *e) {
  wperm *w = calloc(1, sizeof *w);
  if (w == NULL) return 0;
  w->pool = wc->pool;
  w->k = e->perm;
  w->cleared = e->cleared;
  if ((w->other = cat_imgpool_get(wc->pool)) == NULL ||
      cat_ws_push_fn(wc->ws, a, cp, e->nchunk, e->img, perm_job, w, wperm_free) < 0) {
    wperm_free(w);
    return 0;
  }
  return 1;
}

/* Store entry e, every item of which was written: inside a transaction, with threads to
 * spare, its image goes to the worker (wstore.c), in a permuted image's case with the
 * permutation too, and e is free at once; else cat_wcache_store_entry. */
int cat_wcache_store_full(caterva_ctx *ctx, caterva_array *a, cat_wentry *e) {
  cat_wcache *wc = a->wc;
  caterva_cparams cp;
  int rc = CATERVA_OK;
  if (ctx == NULL || ctx->nthreads < 2 || !caterva_schunk_in_txn(a->sc))
    return cat_wcache_store_entry(ctx, a, e);
  CAT_TRY(leave, rc = ws_room(ctx, a));
  if (rc == 0) return cat_wcache_store_entry(ctx, a, e);
  cp = cat_array_chunk_cparams(a);
  if (e->perm < 0 || !push_perm(wc, a, &cp, e)) {
    CAT_TRY(leave, cat_wcache_normalize(ctx, a, e, false)); /* every item written */
    rc = cat_ws_push(wc->ws, a, &cp, e->nchunk, e->img);
    if (rc < 0) return cat_wcache_store_entry(ctx, a, e); /* no thread: as without one */
  }
  rc = CATERVA_OK;
  e->img = NULL;
  e->nchunk = -1;
  e->perm = -1;
  if (wc->last == (int)(e - wc->e)) wc->have_blk = 0;
leave:
  return rc;
}

/* Hand entry e, written in part, which the writes have just left for another chunk, to the
 * worker (see "chunks that chunkwise writes leave behind"); it stays pending when that
 * cannot help: no threads to spare, outside a transaction, a stored chunk without blocks to
 * keep (special, raw) or whose statistics are unknown, or after a rewrite. */
int cat_wcache_leave_behind(caterva_ctx *ctx, caterva_array *a, cat_wentry *e) {
  cat_wcache *wc = a->wc;
  caterva_cparams cp;
  caterva_chunk_info ci;
  const uint8_t *chunk;
  int32_t w_len;
  wpatch *w = NULL;
  int rc = CATERVA_OK;
  if (e->nchunk < 0 || e->nset == 0 || e->nset >= e->nvalid || wc->revisited ||
      e->patchable < 0 || ctx == NULL || ctx->nthreads < 2 || !caterva_schunk_in_txn(a->sc))
    return CATERVA_OK;
  if (e->patchable == 0) { /* once per image: a transposed load leaves chunks all the time */
    e->patchable = -1;
    CAT_TRY(leave, rc = caterva_schunk_chunk_special(a->sc, e->nchunk));
    if (rc != CATERVA_SPECIAL_NONE) return CATERVA_OK; /* a header only: nothing to keep */
    CAT_TRY(leave, caterva_schunk_get_chunk(ctx, a->sc, e->nchunk, &chunk, &w_len));
    if (caterva_chunk_info_get(chunk, (size_t)w_len, &ci) < 0 ||
        ci.special != CATERVA_SPECIAL_NONE || ci.memcpyed)
      return CATERVA_OK; /* a repeated value or raw bytes: rebuilt whole later */
    if (!stats_known(ctx, a, e->nchunk)) return CATERVA_OK;
    e->patchable = 1;
  }
  if ((w = calloc(1, sizeof *w)) == NULL) return CATERVA_OK; /* it stays pending */
  if (a->bs != NULL && (w->oldrec = cat_bs_rec_ref(ctx, a, e->nchunk)) == NULL) {
    e->patchable = -1;
    goto leave;
  }
  CAT_TRY(leave, cat_wcache_normalize(ctx, a, e, true));
  CAT_TRY(leave, rc = ws_room(ctx, a));
  if (rc == 0) goto leave;
  /* again: the chunk may have been rewritten since it was looked at (growth fills edge
   * chunks), and storing the worker's results may have moved what the pointer showed */
  CAT_TRY(leave, rc = caterva_schunk_chunk_special(a->sc, e->nchunk));
  if (rc != CATERVA_SPECIAL_NONE) goto leave;
  CAT_TRY(leave, caterva_schunk_get_chunk(ctx, a->sc, e->nchunk, &chunk, &w->oldlen));
  if ((w->old = malloc((size_t)w->oldlen)) == NULL) goto leave;
  memcpy(w->old, chunk, (size_t)w->oldlen);
  w->nset = e->nset;
  w->cleared = e->cleared;
  w->bits = e->bits;
  cp = cat_array_chunk_cparams(a);
  if (cat_ws_push_fn(wc->ws, a, &cp, e->nchunk, e->img, patch_job, w, wpatch_free) < 0) {
    w->bits = NULL; /* still e's: it stays pending */
    goto leave;
  }
  wc->handed[e->nchunk & 63] = e->nchunk;
  wc->nhanded++;
  e->img = NULL;
  e->bits = NULL;
  e->nchunk = -1;
  if (wc->last >= 0 && e == &wc->e[wc->last]) wc->have_blk = 0;
  w = NULL;
leave:
  wpatch_free(w);
  return rc < 0 ? rc : CATERVA_OK;
}

/* A settle point (a statement's end, a savepoint, a flush): chunks may be handed over again. */
void cat_wcache_handed_reset(cat_wcache *wc) {
  if (wc == NULL) return;
  memset(wc->handed, 0xff, sizeof wc->handed);
  wc->revisited = 0;
}

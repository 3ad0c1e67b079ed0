/*
 * wcache.c -- cell writes through a write-back cache of decompressed chunks. Images filled in
 * another order are in wcache_layout.c, storing them in wcache_store.c, transactions in
 * wcache_txn.c; what the four share in write_cache_internal.h.
 *
 * A write of one item goes to the cached image of its chunk. Each image has a bitmap of the
 * items written: when every item of the chunk that lies inside the shape has been written
 * (a load in C order, a slab UPDATE), the chunk is compressed at once from the image alone,
 * without ever reading the stored chunk. Otherwise, when the writes leave the chunk for
 * another in the order of a table's scan (see "chunks that chunkwise writes leave behind"),
 * when the cache is full (least recently used image first), at a flush, a savepoint or a
 * commit, the blocks written into are completed from the stored chunk's and re-encoded, the
 * others keep their bytes (or, where that cannot be, the whole stored chunk is decompressed
 * and the items not written are taken from it). Chunks are stored with
 * caterva_schunk_update_chunk, so inside a transaction they go past the committed end of
 * the file and a cache larger than memory is never needed.
 *
 *   image offset of an item = block number in the chunk * items per block
 *                             + C-order offset inside the block
 * (chunks hold their blocks in C order over the block grid, spec §5.2), except in images of
 * chunks claimed by rows that arrive with another dimension than the last fastest: those
 * hold the chunk's box in C order with that dimension last until normalize (below) puts them
 * in the chunk's layout, before anything but a write reads them.
 */
#include "write_cache_internal.h"

#include <stdio.h>
#include <stdlib.h>

#define CAT_WCACHE_DEFAULT (64 * 1024 * 1024)

/* The transaction's lost writes, if any, as this call's error. */
static int stuck_error(caterva_ctx *ctx, const caterva_array *a) {
  if (a->wc == NULL || a->wc->stuck == 0) return CATERVA_OK;
  return cat_error(ctx, a->wc->stuck, "%s (an earlier write of this transaction was lost; "
                                      "roll it back)", a->wc->stuckmsg);
}

/* pool: where the images came from; NULL: malloc (a savepoint's copies) */
void cat_wcache_entries_free(cat_wentry *e, int n, cat_imgpool *pool) {
  for (int i = 0; i < n; i++) {
    if (pool != NULL) cat_imgpool_put(pool, e[i].img);
    else free(e[i].img);
    free(e[i].bits);
  }
  free(e);
}

/* Forget the marks at or above level. */
void cat_wcache_drop_marks(cat_wcache *wc, int level) {
  while (wc != NULL && wc->nmarks > 0 && wc->marks[wc->nmarks - 1].level >= level) {
    cat_wmark *m = &wc->marks[--wc->nmarks];
    cat_wcache_entries_free(m->e, m->n, NULL);
  }
}

void cat_wcache_free(cat_wcache *wc) {
  if (wc == NULL) return;
  cat_wcache_drop_marks(wc, -1);
  for (int k = 0; k < CATERVA_MAX_DIM; k++) free(wc->rdiv[k]);
  cat_ws_free(wc->ws, wc->pool);
  free(wc->marks);
  cat_wcache_entries_free(wc->e, wc->n, wc->pool);
  cat_imgpool_free(wc->pool);
  free(wc);
}

void caterva_array_set_write_cache(caterva_array *a, int64_t nbytes) {
  if (a == NULL) return;
  a->wbudget = nbytes > 0 ? nbytes : CAT_WCACHE_DEFAULT;
  if (a->wc != NULL) {
    int64_t m = a->wbudget / (a->g.chunksize > 0 ? a->g.chunksize : 1);
    a->wc->max = m < 1 ? 1 : m > 4096 ? 4096 : (int)m;
  }
}

/* The tables that turn an offset inside a chunk into block and offset in the block without a
 * division, for the dimensions whose chunk extent fits 16 bits (others divide). A table
 * that cannot be allocated is left out the same way. */
static void rdiv_init(cat_wcache *wc, const cat_geom *g) {
  for (int k = 0; k < g->ndim; k++) {
    int64_t cs = g->chunkshape[k], bs = g->blockshape[k];
    if (cs <= 0 || cs > 65535 || bs <= 0 || (wc->rdiv[k] = malloc((size_t)cs * 4)) == NULL)
      continue;
    for (int64_t r = 0; r < cs; r++) wc->rdiv[k][r] = (uint32_t)((r / bs) << 16 | r % bs);
  }
}

int cat_wcache_get(caterva_ctx *ctx, caterva_array *a) {
  int64_t budget = a->wbudget > 0 ? a->wbudget : CAT_WCACHE_DEFAULT, m;
  if (a->wc != NULL) return CATERVA_OK;
  a->wc = calloc(1, sizeof *a->wc);
  if (a->wc == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  a->wc->pool = cat_imgpool_new((size_t)(a->g.chunksize > 0 ? a->g.chunksize : 1));
  if (a->wc->pool == NULL) {
    free(a->wc);
    a->wc = NULL;
    return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  }
  m = budget / (a->g.chunksize > 0 ? a->g.chunksize : 1);
  a->wc->max = m < 1 ? 1 : m > 4096 ? 4096 : (int)m;
  a->wc->last = -1;
  a->wc->step_dim = -1;
  memset(a->wc->hint, 0xff, sizeof a->wc->hint);
  memset(a->wc->handed, 0xff, sizeof a->wc->handed);
  a->wc->nitems = a->g.itemsize > 0 ? a->g.chunksize / a->g.itemsize : 0;
  rdiv_init(a->wc, &a->g);
  return CATERVA_OK;
}

/* Offset r along dimension k of a chunk's box as the block index *b along k and the offset
 * *o inside that block: from the table when there is one, else by division. */
static inline void split_offset(const cat_wcache *wc, const cat_geom *g, int k, int64_t r,
                                int64_t *b, int64_t *o) {
  if (wc->rdiv[k] != NULL) {
    uint32_t t = wc->rdiv[k][r];
    *b = t >> 16;
    *o = t & 0xffff;
  } else {
    *b = r / g->blockshape[k];
    *o = r % g->blockshape[k];
  }
}

/* The image offset of coord in the permuted image of the last write's chunk, else -1. */
static int64_t same_chunk_perm(const caterva_array *a, const int64_t *coord) {
  const cat_wcache *wc = a->wc;
  const cat_wentry *e;
  int64_t off = 0;
  if (!wc->have_chunk || wc->chunk_gen != a->geom_gen || wc->last < 0) return -1;
  e = &wc->e[wc->last];
  if (e->perm < 0 || e->nchunk != wc->cn) return -1;
  for (int k = 0; k < a->g.ndim; k++) {
    int64_t c = coord[k];
    if (c < wc->clo[k] || c >= wc->chi[k] || c >= a->g.shape[k]) return -1;
    off += (c - wc->clo[k]) * e->pstride[k];
  }
  return off;
}

/* The dimension along which coord steps by +1 from the last write (all others equal), or
 * -1. */
static int step_of(const cat_wcache *wc, const cat_geom *g, const int64_t *coord) {
  int d = -1;
  if (!wc->have_prev) return -1;
  for (int k = 0; k < g->ndim; k++) {
    int64_t diff = coord[k] - wc->prev[k];
    if (diff == 0) continue;
    if (diff != 1 || d >= 0) return -1;
    d = k;
  }
  return d;
}

/* An entry for chunk n: the cached one, a free one, a new one, or the least recently used
 * one after storing it. */
int cat_wcache_claim(caterva_ctx *ctx, caterva_array *a, int64_t n, cat_wentry **out) {
  cat_wcache *wc = a->wc;
  const cat_geom *g = &a->g;
  cat_wentry *e = NULL;
  int rc = CATERVA_OK;
  /* a chunk written again while its last image is still being compressed: that one is
   * stored first, so that the items not written now are taken from it */
  if (cat_ws_holds(wc->ws, n)) CAT_TRY(leave, cat_wcache_reap(ctx, a, 1));
  if (wc->handed[n & 63] == n) wc->revisited = 1; /* written again after cat_wcache_leave_behind */
  {
    int h = wc->hint[n & 255], i = h >= 0 && h < wc->n && wc->e[h].nchunk == n ? h : 0;
    for (; i < wc->n; i++)
      if (wc->e[i].nchunk == n) {
        *out = &wc->e[i];
        if (wc->last != i) wc->have_blk = 0;
        wc->last = i;
        wc->hint[n & 255] = (int16_t)i;
        return CATERVA_OK;
      }
  }
  for (int i = 0; i < wc->n && e == NULL; i++)
    if (wc->e[i].nchunk < 0) e = &wc->e[i];
  if (e == NULL && wc->n < wc->max) {
    cat_wentry *p = realloc(wc->e, (size_t)(wc->n + 1) * sizeof *p);
    CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
    wc->e = p;
    e = &wc->e[wc->n++];
    memset(e, 0, sizeof *e);
    e->nchunk = -1;
  }
  if (e == NULL) {
    e = &wc->e[0];
    for (int i = 1; i < wc->n; i++)
      if (wc->e[i].stamp < e->stamp) e = &wc->e[i];
    CAT_TRY(leave, cat_wcache_store_entry(ctx, a, e));
  }
  if (e->img == NULL) e->img = cat_imgpool_get(wc->pool); /* NULL too after a hand-over */
  if (e->bits == NULL) e->bits = malloc(cat_wcache_bits_words(g) * sizeof *e->bits);
  CAT_CHECK(leave, e->img != NULL && e->bits != NULL, CATERVA_E_NOMEM, "out of memory");
  e->nchunk = n;
  e->nset = 0;
  e->nvalid = cat_wcache_nvalid(g, n);
  e->patchable = 0;
  /* Items never written are taken from the stored chunk before the image is used, except
   * the padding of a chunk written wholly (outside the shape, or of blocks past the chunk's
   * edge), which must be zero: only such chunks need clearing (4 MB per chunk of the 200^3
   * slab UPDATE otherwise). */
  e->cleared = e->nvalid < (int64_t)g->nblocks * g->blockitems;
  if (e->cleared) memset(e->img, 0, (size_t)g->chunksize);
  memset(e->bits, 0, cat_wcache_bits_words(g) * sizeof *e->bits);
  e->perm = -1;
  if (wc->step_dim >= 0 && wc->step_dim < g->ndim - 1) cat_wcache_perm_setup(g, e, wc->step_dim);
  wc->last = (int)(e - wc->e);
  wc->hint[n & 255] = (int16_t)wc->last;
  wc->have_blk = 0;
  *out = e;
leave:
  return rc;
}

/* The image offset of coord when it lies in the block of the last write (no divisions:
 * loads and slab updates write many cells of one block in a row), else -1. */
static int64_t same_block(const caterva_array *a, const int64_t *coord) {
  const cat_wcache *wc = a->wc;
  const cat_geom *g = &a->g;
  int64_t in = 0;
  if (!wc->have_blk || wc->chunk_gen != a->geom_gen) return -1;
  for (int k = 0; k < g->ndim; k++) {
    int64_t c = coord[k];
    if (c < wc->blo[k] || c >= wc->bhi[k]) return -1;
    in = in * g->blockshape[k] + (c - wc->blo[k]);
  }
  return wc->bbase + in;
}

/* Chunk number n of coord, its block number blk in the chunk, its C-order offset in in the
 * block, its offset in the block along each dimension, off, and where the chunk starts, lo.
 * Inside the chunk of the last write (loads and slab updates stay in one chunk for
 * many rows), without a division where the tables exist. */
static int locate(caterva_ctx *ctx, const caterva_array *a, const int64_t *coord, int64_t *n,
                  int64_t *blk, int64_t *in, int64_t *off, int64_t *lo) {
  const cat_wcache *wc = a->wc;
  const cat_geom *g = &a->g;
  int64_t b = 0, o = 0, cn = 0;
  int inside = wc->have_chunk && wc->chunk_gen == a->geom_gen;
  for (int k = 0; k < g->ndim && inside; k++)
    inside = coord[k] >= wc->clo[k] && coord[k] < wc->chi[k];
  for (int k = 0; k < g->ndim; k++) {
    int64_t c = coord[k], r, bk;
    if (c < 0 || c >= g->shape[k])
      return cat_error(ctx, CATERVA_E_RANGE, "coordinate %lld out of range 0..%lld in "
                       "dimension %d", (long long)c, (long long)g->shape[k] - 1, k);
    if (inside) {
      r = c - wc->clo[k];
    } else {
      cn = cn * g->gridshape[k] + c / g->chunkshape[k];
      r = c % g->chunkshape[k];
    }
    lo[k] = c - r;
    split_offset(wc, g, k, r, &bk, &off[k]);
    b = b * g->blockgrid[k] + bk;
    o = o * g->blockshape[k] + off[k];
  }
  *n = inside ? wc->cn : cn;
  *blk = b;
  *in = o;
  return CATERVA_OK;
}

int caterva_array_set_item(caterva_ctx *ctx, caterva_array *a, const int64_t *coord,
                           const void *item) {
  const cat_geom *g;
  cat_wentry *e = NULL;
  int64_t n = 0, blk = 0, in = 0, fast, off[CATERVA_MAX_DIM], clo[CATERVA_MAX_DIM];
  size_t idx;
  int rc = CATERVA_OK;
  CAT_CHECK(leave, a != NULL && item != NULL && (coord != NULL || a->g.ndim == 0),
            CATERVA_E_INVALID, "set_item: NULL argument");
  CAT_TRY(leave, stuck_error(ctx, a));
  g = &a->g;
  if (a->wc != NULL && ((fast = same_block(a, coord)) >= 0 ||
                        (fast = same_chunk_perm(a, coord)) >= 0)) {
    e = &a->wc->e[a->wc->last];
    idx = (size_t)fast;
    goto write;
  }
  CAT_TRY(leave, cat_wcache_get(ctx, a));
  CAT_TRY(leave, locate(ctx, a, coord, &n, &blk, &in, off, clo));
  if (a->wc->last >= 0 && a->wc->e[a->wc->last].nchunk == n) {
    e = &a->wc->e[a->wc->last];
  } else {
    int sd = step_of(a->wc, g, coord);
    if (sd >= 0) a->wc->step_dim = sd;
    if (a->wc->last >= 0) CAT_TRY(leave, cat_wcache_leave_behind(ctx, a, &a->wc->e[a->wc->last]));
    CAT_TRY(leave, cat_wcache_claim(ctx, a, n, &e));
  }
  if (!a->wc->have_chunk || a->wc->cn != n || a->wc->chunk_gen != a->geom_gen) {
    for (int k = 0; k < g->ndim; k++) {
      a->wc->clo[k] = clo[k];
      a->wc->chi[k] = clo[k] + g->chunkshape[k];
    }
    a->wc->cn = n;
    a->wc->chunk_gen = a->geom_gen;
    a->wc->have_chunk = 1;
  }
  if (e->perm >= 0) {
    int64_t p = 0;
    for (int k = 0; k < g->ndim; k++) p += (coord[k] - a->wc->clo[k]) * e->pstride[k];
    idx = (size_t)p;
    a->wc->have_blk = 0;
    goto write;
  }
  idx = (size_t)(blk * g->blockitems + in);
  /* remember this block for the next cells: its cells that are this chunk's (a block may run
   * into the chunk's padding, whose coordinates belong to the next chunk) and inside the
   * shape */
  for (int k = 0; k < g->ndim; k++) {
    int64_t lo = coord[k] - off[k], hi = lo + g->blockshape[k];
    if (hi > a->wc->chi[k]) hi = a->wc->chi[k];
    a->wc->blo[k] = lo;
    a->wc->bhi[k] = hi < g->shape[k] ? hi : g->shape[k];
  }
  a->wc->bbase = blk * g->blockitems;
  a->wc->have_blk = 1;
write:
  e->stamp = ++a->wc->clock;
  for (int k = 0; k < g->ndim; k++) a->wc->prev[k] = coord[k]; /* inline, not a memcpy call */
  a->wc->have_prev = 1;
  {
    /* Rows in a transposed order write with a constant stride, a cache line each: the line
     * of the predicted next write is fetched while SQLite produces that row. */
    int64_t next = 2 * (int64_t)idx - a->wc->lastidx;
    if (next >= 0 && next < a->wc->nitems) {
      __builtin_prefetch(e->img + (size_t)next * (size_t)g->itemsize, 1, 3);
      __builtin_prefetch(&e->bits[next >> 6], 1, 3);
    }
    a->wc->lastidx = (int64_t)idx;
  }
  switch (g->itemsize) { /* the common sizes as one store each */
    case 4: memcpy(e->img + idx * 4, item, 4); break;
    case 8: memcpy(e->img + idx * 8, item, 8); break;
    default: memcpy(e->img + idx * (size_t)g->itemsize, item, (size_t)g->itemsize); break;
  }
  if (!(e->bits[idx >> 6] >> (idx & 63) & 1)) {
    e->bits[idx >> 6] |= (uint64_t)1 << (idx & 63);
    if (++e->nset == e->nvalid) CAT_TRY(leave, cat_wcache_store_full(ctx, a, e));
  }
leave:
  return rc;
}

int caterva_array_flush(caterva_ctx *ctx, caterva_array *a) {
  int rc = CATERVA_OK;
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  CAT_TRY(leave, stuck_error(ctx, a));
  if (a->wc != NULL) CAT_TRY(leave, cat_wcache_reap(ctx, a, 1));
  cat_wcache_handed_reset(a->wc);
  for (int i = 0; a->wc != NULL && i < a->wc->n; i++)
    if (a->wc->e[i].nchunk >= 0) CAT_TRY(leave, cat_wcache_store_entry(ctx, a, &a->wc->e[i]));
leave:
  return rc;
}

int cat_wcache_store_box(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                         const int64_t *stop) {
  int rc = CATERVA_OK;
  for (int i = 0; a->wc != NULL && i < a->wc->n; i++) {
    int64_t cc[CATERVA_MAX_DIM];
    int k, meets = a->wc->e[i].nchunk >= 0;
    if (!meets) continue;
    cat_geom_chunk_coords(&a->g, a->wc->e[i].nchunk, cc);
    for (k = 0; k < a->g.ndim && meets; k++)
      meets = cc[k] * a->g.chunkshape[k] < stop[k] &&
              (cc[k] + 1) * a->g.chunkshape[k] > start[k];
    if (meets) CAT_TRY(leave, cat_wcache_store_entry(ctx, a, &a->wc->e[i]));
  }
leave:
  return rc;
}

int64_t cat_wcache_handed(const caterva_array *a) {
  return a != NULL && a->wc != NULL ? a->wc->nhanded : 0;
}

int caterva_array_pending(const caterva_array *a) {
  if (a != NULL && a->wc != NULL && (a->wc->stuck || cat_ws_queued(a->wc->ws))) return 1;
  for (int i = 0; a != NULL && a->wc != NULL && i < a->wc->n; i++)
    if (a->wc->e[i].nchunk >= 0) return 1;
  return 0;
}

/* Forget every cached image (a rollback). */
void cat_wcache_discard(caterva_array *a) {
  if (a->wc != NULL) cat_ws_discard(a->wc->ws, a->wc->pool);
  cat_wcache_handed_reset(a->wc);
  for (int i = 0; a->wc != NULL && i < a->wc->n; i++) a->wc->e[i].nchunk = -1;
  if (a->wc != NULL) {
    a->wc->last = -1;
    a->wc->have_blk = 0;
    a->wc->have_chunk = 0;
  }
}

/* Chunk numbers and valid counts after a resize: images are kept across a resize that does
 * not renumber chunks (growth or shrinking along the first axis only); others are stored
 * first by the caller. */
void cat_wcache_reshaped(caterva_array *a) {
  if (a->wc != NULL) a->wc->have_blk = a->wc->have_chunk = 0;
  for (int i = 0; a->wc != NULL && i < a->wc->n; i++) {
    cat_wentry *e = &a->wc->e[i];
    if (e->nchunk < 0) continue;
    if (e->nchunk >= a->g.nchunks) {
      e->nchunk = -1; /* shrunk away */
      continue;
    }
    e->nvalid = cat_wcache_nvalid(&a->g, e->nchunk);
    if (!e->cleared && e->nvalid < (int64_t)a->g.nblocks * a->g.blockitems) {
      /* padding appeared (shrinking): the items not written must read 0, as
       * cat_wcache_claim gives */
      size_t is = (size_t)a->g.itemsize;
      for (int64_t k = 0; k < (int64_t)a->g.nblocks * a->g.blockitems; k++)
        if (!(e->bits[k >> 6] >> (k & 63) & 1)) memset(e->img + (size_t)k * is, 0, is);
      e->cleared = true;
    }
  }
}

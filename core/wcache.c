/*
 * wcache.c -- cell writes through a write-back cache of decompressed chunks, and
 * transactions on arrays.
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
#include "array_layer_internal.h"

#include <stdio.h>
#include <stdlib.h>

#define CAT_WCACHE_DEFAULT (64 * 1024 * 1024)

struct cat_wentry {
  int64_t nchunk;    /* chunk number, -1: free */
  uint8_t *img;      /* chunksize bytes (padding zero) */
  uint64_t *bits;    /* one bit per item of the image: written */
  int64_t nset;      /* items written */
  int64_t nvalid;    /* items of the chunk inside the shape */
  uint64_t stamp;    /* last use, for LRU */
  bool cleared;      /* the image was zeroed when claimed (items not written read 0) */
  int8_t patchable;  /* its stored chunk has blocks to keep (leave_behind): 1 yes, -1 no, 0 not
                      * looked at yet */
  int perm;          /* -1: img and bits in the chunk's layout (blocks); k >= 0: the cells of
                      * the chunk's box in C order with dimension k moved last (rows that
                      * arrive with k fastest fill it sequentially); see normalize */
  int64_t pstride[CATERVA_MAX_DIM]; /* with perm >= 0: the item stride of each dimension */
};

/* A savepoint's copy of the images pending then (they are not flushed: a statement
 * savepoint per row of a multi-row load inside BEGIN would otherwise recompress the chunk
 * being filled once per row). */
typedef struct cat_wmark {
  int level;
  int n;
  cat_wentry *e;     /* copies; img and bits owned */
} cat_wmark;

/* Pending images larger than this are flushed at a savepoint instead of copied. */
#define CAT_WMARK_COPY_MAX (16 * 1024 * 1024)

struct cat_wcache {
  cat_wmark *marks;  /* savepoints, oldest first */
  int nmarks, capmarks;
  cat_wentry *e;
  int n;             /* entries in use or free */
  int max;           /* most entries (>= 1) */
  int last;          /* entry of the last write */
  int have_blk;      /* blo/bhi/bbase describe the block of the last write (in entry last,
                      * which holds a chunk: cleared whenever that entry is freed or moved) */
  int64_t blo[CATERVA_MAX_DIM], bhi[CATERVA_MAX_DIM]; /* its cells inside the shape */
  int64_t bbase;     /* image offset (in items) of its first item */
  int64_t lastidx;   /* image offset of the last write (stride prediction) */
  int64_t nitems;    /* items of an image */
  int have_chunk;    /* clo/chi describe chunk cn (the slow path's divisions skipped) in the
                      * geometry of generation chunk_gen */
  uint32_t chunk_gen;
  int64_t cn, clo[CATERVA_MAX_DIM], chi[CATERVA_MAX_DIM];
  uint32_t *rdiv[CATERVA_MAX_DIM]; /* per dimension, NULL or for each offset r inside a chunk:
                                   * (r / blockshape) << 16 | r % blockshape */
  int64_t prev[CATERVA_MAX_DIM]; /* the coordinates of the last write (have_prev) */
  int have_prev;
  int step_dim;      /* the dimension along which a write that claimed a chunk last stepped
                      * by +1 from the write before it (all others equal), or -1: none yet */
  uint64_t clock;
  int16_t hint[256]; /* an entry that held chunk n (n % 256), checked before use, or -1 */
  int64_t budget;    /* bytes */
  cat_wstore *ws;    /* chunks written wholly, being compressed on a worker, or NULL */
  cat_imgpool *pool; /* where the entries' images come from (imgpool.c) */
  int64_t handed[64];/* chunks written in part handed to the worker since the last settle
                      * (leave_behind), at n % 64; -1: none */
  int revisited;     /* one of those was written again: no more until the next settle */
  int64_t nhanded;   /* chunks leave_behind handed over, ever (cat_wcache_handed) */
  int stuck;         /* 0, or the error of storing the worker's chunks at a savepoint: the
                      * transaction has lost writes and every later call fails with it */
  char stuckmsg[CAT_ERRMSG_SIZE];
};

/* The transaction's lost writes, if any, as this call's error. */
static int stuck_error(caterva_ctx *ctx, const caterva_array *a) {
  if (a->wc == NULL || a->wc->stuck == 0) return CATERVA_OK;
  return cat_error(ctx, a->wc->stuck, "%s (an earlier write of this transaction was lost; "
                                      "roll it back)", a->wc->stuckmsg);
}

static int64_t nvalid_of(const cat_geom *g, int64_t nchunk) {
  int64_t cc[CATERVA_MAX_DIM], n = 1;
  cat_geom_chunk_coords(g, nchunk, cc);
  for (int k = 0; k < g->ndim; k++) {
    int64_t lo = cc[k] * g->chunkshape[k], hi = lo + g->chunkshape[k];
    n *= (hi < g->shape[k] ? hi : g->shape[k]) - lo;
  }
  return n;
}

static size_t bits_words(const cat_geom *g) {
  return (size_t)cat_ceil_div64(g->chunksize / g->itemsize, 64);
}

/* pool: where the images came from; NULL: malloc (a savepoint's copies) */
static void entries_free(cat_wentry *e, int n, cat_imgpool *pool) {
  for (int i = 0; i < n; i++) {
    if (pool != NULL) cat_imgpool_put(pool, e[i].img);
    else free(e[i].img);
    free(e[i].bits);
  }
  free(e);
}

/* Forget the marks at or above level. */
static void drop_wmarks(cat_wcache *wc, int level) {
  while (wc != NULL && wc->nmarks > 0 && wc->marks[wc->nmarks - 1].level >= level) {
    cat_wmark *m = &wc->marks[--wc->nmarks];
    entries_free(m->e, m->n, NULL);
  }
}

void cat_wcache_free(cat_wcache *wc) {
  if (wc == NULL) return;
  drop_wmarks(wc, -1);
  for (int k = 0; k < CATERVA_MAX_DIM; k++) free(wc->rdiv[k]);
  cat_ws_free(wc->ws, wc->pool);
  free(wc->marks);
  entries_free(wc->e, wc->n, wc->pool);
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

static int wcache_get(caterva_ctx *ctx, caterva_array *a) {
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

/* ---- images filled in another order ------------------------------------------------------
 *
 * Rows that arrive with a dimension other than the last one fastest (time fastest into a
 * time, lat, lon array) would write each item into another cache line of the chunk's layout
 * (a block row apart), so a chunk claimed by such a row is filled in the order they come: its
 * box in C order with that dimension moved last (perm). Before anything else reads the image
 * (storing it, a savepoint's copy, a resize) normalize puts items and bits in the chunk's
 * layout, a copy in one pass. */

/* Give e the layout of rows arriving with dimension k fastest. */
static void perm_setup(const cat_geom *g, cat_wentry *e, int k) {
  int64_t st = g->chunkshape[k];
  e->perm = k;
  e->pstride[k] = 1;
  for (int j = g->ndim - 1; j >= 0; j--) {
    if (j == k) continue;
    e->pstride[j] = st;
    st *= g->chunkshape[j];
  }
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

/* Per dimension of g, the block number stride in a chunk (bstride) and the item stride inside
 * a block (istride). */
static void lay_strides(const cat_geom *g, int64_t *bstride, int64_t *istride) {
  for (int k = g->ndim - 1; k >= 0; k--) {
    bstride[k] = k == g->ndim - 1 ? 1 : bstride[k + 1] * g->blockgrid[k + 1];
    istride[k] = k == g->ndim - 1 ? 1 : istride[k + 1] * g->blockshape[k + 1];
  }
}

/* Where offset r along dimension k of a chunk's box lands in the chunk's layout, in items:
 * (r / blockshape) * (block stride) * blockitems + (r % blockshape) * (stride in a block). */
static int64_t lay_of(const cat_geom *g, const int64_t *bstride, const int64_t *istride, int k,
                      int64_t r) {
  return r / g->blockshape[k] * bstride[k] * g->blockitems + r % g->blockshape[k] * istride[k];
}

/* One row of a permuted image img, bits (the chunk's extent along dimension k, from item src
 * on) to their places base + lay[i] (lay: lay_of(k, i) for every i); with dbits, their
 * written bits too. */
static void perm_row(const cat_geom *g, const uint8_t *img, const uint64_t *bits, int k,
                     const int64_t *lay, int64_t src, int64_t base, uint8_t *dst,
                     uint64_t *dbits) {
  size_t is = (size_t)g->itemsize;
  int64_t n = g->chunkshape[k];
  if (is == 4) {
    for (int64_t i = 0; i < n; i++) memcpy(dst + (base + lay[i]) * 4, img + (src + i) * 4, 4);
  } else if (is == 8) {
    for (int64_t i = 0; i < n; i++) memcpy(dst + (base + lay[i]) * 8, img + (src + i) * 8, 8);
  } else {
    for (int64_t i = 0; i < n; i++)
      memcpy(dst + (size_t)(base + lay[i]) * is, img + (size_t)(src + i) * is, is);
  }
  for (int64_t i = 0; dbits != NULL && i < n; i++) {
    int64_t d = base + lay[i], s = src + i;
    if (bits[s >> 6] >> (s & 63) & 1) dbits[d >> 6] |= (uint64_t)1 << (d & 63);
  }
}

/* A permuted image img (rows along dimension k) in the chunk's layout in dst, and with dbits
 * (zero) its written bits from bits; cleared: dst's items not written read 0. 0, or
 * CATERVA_E_NOMEM (dst untouched). Reads g only (the worker runs it, perm_job). */
static int perm_copy(const cat_geom *g, int k, const uint8_t *img, const uint64_t *bits,
                     bool cleared, uint8_t *dst, uint64_t *dbits) {
  int64_t r[CATERVA_MAX_DIM] = {0}, bstride[CATERVA_MAX_DIM], istride[CATERVA_MAX_DIM], src = 0;
  int64_t *lay = malloc((size_t)g->chunkshape[k] * sizeof *lay);
  if (lay == NULL) return CATERVA_E_NOMEM;
  lay_strides(g, bstride, istride);
  for (int64_t i = 0; i < g->chunkshape[k]; i++) lay[i] = lay_of(g, bstride, istride, k, i);
  if (cleared) memset(dst, 0, (size_t)g->chunksize); /* padding and cells not written */
  for (;;) {
    int64_t base = 0;
    int j;
    for (j = 0; j < g->ndim; j++)
      if (j != k) base += lay_of(g, bstride, istride, j, r[j]);
    perm_row(g, img, bits, k, lay, src, base, dst, dbits);
    src += g->chunkshape[k];
    for (j = g->ndim - 1; j >= 0; j--) {
      if (j == k) continue;
      if (++r[j] < g->chunkshape[j]) break;
      r[j] = 0;
    }
    if (j < 0) break;
  }
  free(lay);
  return CATERVA_OK;
}

/* Put e's image in the chunk's layout (nothing to do if it is), and with keep_bits its
 * written bits; without, the bits are left as they are, not to be read again (a chunk
 * written wholly, about to be stored). */
static int normalize(caterva_ctx *ctx, caterva_array *a, cat_wentry *e, bool keep_bits) {
  cat_wcache *wc = a->wc;
  const cat_geom *g = &a->g;
  uint8_t *dst = NULL;
  uint64_t *bits = NULL;
  int k = e->perm, rc = CATERVA_OK;
  if (k < 0) return CATERVA_OK;
  dst = cat_imgpool_get(wc->pool);
  if (keep_bits) bits = calloc(bits_words(g), sizeof *bits);
  CAT_CHECK(leave, dst != NULL && (bits != NULL || !keep_bits) &&
                       perm_copy(g, k, e->img, e->bits, e->cleared, dst, bits) == CATERVA_OK,
            CATERVA_E_NOMEM, "out of memory");
  cat_imgpool_put(wc->pool, e->img);
  e->img = dst;
  if (keep_bits) {
    free(e->bits);
    e->bits = bits;
  }
  e->perm = -1;
  dst = NULL;
  bits = NULL;
leave:
  cat_imgpool_put(wc->pool, dst);
  free(bits);
  return rc;
}

/* Every pending image in the chunk's layout. */
static int normalize_all(caterva_ctx *ctx, caterva_array *a) {
  int rc = CATERVA_OK;
  for (int i = 0; a->wc != NULL && i < a->wc->n; i++)
    if (a->wc->e[i].nchunk >= 0) CAT_TRY(leave, normalize(ctx, a, &a->wc->e[i], true));
leave:
  return rc;
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
  uint8_t *old = NULL;
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
    old = malloc((size_t)nd * (size_t)g->blocksize);
    CAT_CHECK(leave, old != NULL, CATERVA_E_NOMEM, "out of memory");
    CAT_TRY(leave, (int)caterva_chunk_decompress_blocks(ctx, chunk, (size_t)len, list, nd, old,
                                                         (int64_t)nd * g->blocksize));
    for (int32_t t = 0; t < nd; t++)
      merge_unwritten(g, img, bits, old + (size_t)t * (size_t)g->blocksize,
                      (int64_t)list[t] * g->blockitems, g->blockitems);
  }
  rc = cat_chunk_patch(ctx, cp, chunk, len, img, g->chunksize, dirty, cbuf, cap);
  if (rc == CATERVA_E_UNSUPPORTED) rc = 0; /* rebuild whole */
leave:
  free(old);
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
static int store_entry(caterva_ctx *ctx, caterva_array *a, cat_wentry *e) {
  const cat_geom *g = &a->g;
  uint8_t *old = NULL, *cbuf = NULL, *dirty = NULL;
  size_t is = (size_t)g->itemsize, nw = bits_words(g);
  caterva_cparams cp = cat_array_chunk_cparams(a);
  int32_t cbytes = 0, cap = g->chunksize + CATERVA_CHUNK_MAX_OVERHEAD;
  int rc = CATERVA_OK, own, patched = 0;
  CAT_TRY(leave, normalize(ctx, a, e, e->nset < e->nvalid));
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
 * the worker at once (leave_behind), which re-encodes its written blocks against a copy of
 * the stored chunk's bytes (patch_image) while the statement goes on, instead of at the
 * commit. Writes in another order (a transposed load over stored chunks) would write such a
 * chunk again: the first rewrite waits for the worker's result and stores it (claim), and
 * nothing more is handed over until the next settle (a statement's end, a savepoint, a
 * flush), so that order pays for one chunk at most. */

/* A job of leave_behind: what patch_image needs besides the image, and its result. */
typedef struct wpatch {
  uint64_t *bits;      /* the written items (owned) */
  uint8_t *old;        /* the stored chunk's bytes when handed over (owned) */
  int32_t oldlen;
  cat_bs_rec *oldrec;  /* its statistics record (a reference), NULL without statistics */
  uint8_t *dirty;      /* per block: written (owned, set by the job) */
  int64_t nset;
  bool cleared;
  bool patched;        /* the job re-encoded it; else store_left does what store_entry does */
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
 * stored here from its image and written items, as store_entry stores a pending one. */
static int store_left(caterva_ctx *ctx, caterva_array *a, cat_wdone *d, wpatch *w) {
  cat_wentry t;
  memset(&t, 0, sizeof t);
  t.nchunk = d->nchunk;
  t.img = d->img;
  t.bits = w->bits;
  t.nset = w->nset;
  t.nvalid = nvalid_of(&a->g, d->nchunk);
  t.cleared = w->cleared;
  t.perm = -1;
  return store_entry(ctx, a, &t);
}

/* Store a chunk the worker compressed (outside a transaction it gets a commit of its own, as
 * in store_entry), or one it left to this thread (store_left); d is freed. */
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
static int reap(caterva_ctx *ctx, caterva_array *a, int wait) {
  cat_wdone d;
  int rc = CATERVA_OK;
  while (a->wc->ws != NULL && cat_ws_pop(a->wc->ws, ctx, wait, &d))
    CAT_TRY(leave, store_done(ctx, a, &d));
leave:
  return rc;
}

int cat_wcache_settle(caterva_ctx *ctx, caterva_array *a) {
  int rc = a->wc != NULL ? reap(ctx, a, 1) : CATERVA_OK;
  return rc < 0 ? rc : normalize_all(ctx, a);
}

/* The worker, with room for a job: 1, or 0 when there is none (no memory for it). */
static int ws_room(caterva_ctx *ctx, caterva_array *a) {
  cat_wcache *wc = a->wc;
  int rc = CATERVA_OK;
  if (wc->ws == NULL && (wc->ws = cat_ws_new(a->g.chunksize)) == NULL) return 0;
  CAT_TRY(leave, reap(ctx, a, 0));
  if (cat_ws_full(wc->ws)) {
    cat_wdone d;
    if (cat_ws_pop(wc->ws, ctx, 1, &d)) CAT_TRY(leave, store_done(ctx, a, &d));
  }
  rc = 1;
leave:
  return rc;
}

/* A chunk written wholly into a permuted image, handed to the worker (store_full): the job
 * puts the image in the chunk's layout (perm_copy) before compressing it. */
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

/* The worker's part (cat_ws_fn): perm_copy, then what cat_ws_push's job does. */
static void perm_job(caterva_ctx *ctx, cat_wdone *d, const caterva_cparams *cp,
                     const cat_geom *g, const caterva_array *a) {
  wperm *w = d->arg;
  uint8_t *t;
  if (perm_copy(g, w->k, d->img, NULL, w->cleared, w->other, NULL) < 0) {
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
 * permutation too, and e is free at once; else store_entry. */
static int store_full(caterva_ctx *ctx, caterva_array *a, cat_wentry *e) {
  cat_wcache *wc = a->wc;
  caterva_cparams cp;
  int rc = CATERVA_OK;
  if (ctx == NULL || ctx->nthreads < 2 || !caterva_schunk_in_txn(a->sc))
    return store_entry(ctx, a, e);
  CAT_TRY(leave, rc = ws_room(ctx, a));
  if (rc == 0) return store_entry(ctx, a, e);
  cp = cat_array_chunk_cparams(a);
  if (e->perm < 0 || !push_perm(wc, a, &cp, e)) {
    CAT_TRY(leave, normalize(ctx, a, e, false)); /* every item written */
    rc = cat_ws_push(wc->ws, a, &cp, e->nchunk, e->img);
    if (rc < 0) return store_entry(ctx, a, e); /* no thread: as without one */
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
static int leave_behind(caterva_ctx *ctx, caterva_array *a, cat_wentry *e) {
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
  CAT_TRY(leave, normalize(ctx, a, e, true));
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
static void handed_reset(cat_wcache *wc) {
  if (wc == NULL) return;
  memset(wc->handed, 0xff, sizeof wc->handed);
  wc->revisited = 0;
}

/* An entry for chunk n: the cached one, a free one, a new one, or the least recently used
 * one after storing it. */
static int claim(caterva_ctx *ctx, caterva_array *a, int64_t n, cat_wentry **out) {
  cat_wcache *wc = a->wc;
  const cat_geom *g = &a->g;
  cat_wentry *e = NULL;
  int rc = CATERVA_OK;
  /* a chunk written again while its last image is still being compressed: that one is
   * stored first, so that the items not written now are taken from it */
  if (cat_ws_holds(wc->ws, n)) CAT_TRY(leave, reap(ctx, a, 1));
  if (wc->handed[n & 63] == n) wc->revisited = 1; /* written again after leave_behind */
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
    CAT_TRY(leave, store_entry(ctx, a, e));
  }
  if (e->img == NULL) e->img = cat_imgpool_get(wc->pool); /* NULL too after a hand-over */
  if (e->bits == NULL) e->bits = malloc(bits_words(g) * sizeof *e->bits);
  CAT_CHECK(leave, e->img != NULL && e->bits != NULL, CATERVA_E_NOMEM, "out of memory");
  e->nchunk = n;
  e->nset = 0;
  e->nvalid = nvalid_of(g, n);
  e->patchable = 0;
  /* Items never written are taken from the stored chunk before the image is used, except
   * the padding of a chunk written wholly (outside the shape, or of blocks past the chunk's
   * edge), which must be zero: only such chunks need clearing (4 MB per chunk of the 200^3
   * slab UPDATE otherwise). */
  e->cleared = e->nvalid < (int64_t)g->nblocks * g->blockitems;
  if (e->cleared) memset(e->img, 0, (size_t)g->chunksize);
  memset(e->bits, 0, bits_words(g) * sizeof *e->bits);
  e->perm = -1;
  if (wc->step_dim >= 0 && wc->step_dim < g->ndim - 1) perm_setup(g, e, wc->step_dim);
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
 * block, its offset in the block along each dimension, off, and where the chunk starts, lo. Inside the chunk of the last write (loads and slab updates stay in one chunk for
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
  CAT_TRY(leave, wcache_get(ctx, a));
  CAT_TRY(leave, locate(ctx, a, coord, &n, &blk, &in, off, clo));
  if (a->wc->last >= 0 && a->wc->e[a->wc->last].nchunk == n) {
    e = &a->wc->e[a->wc->last];
  } else {
    int sd = step_of(a->wc, g, coord);
    if (sd >= 0) a->wc->step_dim = sd;
    if (a->wc->last >= 0) CAT_TRY(leave, leave_behind(ctx, a, &a->wc->e[a->wc->last]));
    CAT_TRY(leave, claim(ctx, a, n, &e));
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
    if (++e->nset == e->nvalid) CAT_TRY(leave, store_full(ctx, a, e));
  }
leave:
  return rc;
}

int caterva_array_flush(caterva_ctx *ctx, caterva_array *a) {
  int rc = CATERVA_OK;
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  CAT_TRY(leave, stuck_error(ctx, a));
  if (a->wc != NULL) CAT_TRY(leave, reap(ctx, a, 1));
  handed_reset(a->wc);
  for (int i = 0; a->wc != NULL && i < a->wc->n; i++)
    if (a->wc->e[i].nchunk >= 0) CAT_TRY(leave, store_entry(ctx, a, &a->wc->e[i]));
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
    if (meets) CAT_TRY(leave, store_entry(ctx, a, &a->wc->e[i]));
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
static void wcache_discard(caterva_array *a) {
  if (a->wc != NULL) cat_ws_discard(a->wc->ws, a->wc->pool);
  handed_reset(a->wc);
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
    e->nvalid = nvalid_of(&a->g, e->nchunk);
    if (!e->cleared && e->nvalid < (int64_t)a->g.nblocks * a->g.blockitems) {
      /* padding appeared (shrinking): the items not written must read 0, as claim gives */
      size_t is = (size_t)a->g.itemsize;
      for (int64_t k = 0; k < (int64_t)a->g.nblocks * a->g.blockitems; k++)
        if (!(e->bits[k >> 6] >> (k & 63) & 1)) memset(e->img + (size_t)k * is, 0, is);
      e->cleared = true;
    }
  }
}

/* ---- transactions ------------------------------------------------------------------------ */

static void wcache_discard(caterva_array *a);

/* Copies of the n pending entries of src into a new array *out (n may be 0). */
static int copy_pending(caterva_ctx *ctx, caterva_array *a, cat_wentry **out, int *n) {
  const cat_wcache *wc = a->wc;
  size_t nb = bits_words(&a->g) * sizeof(uint64_t);
  int k = 0;
  *out = NULL;
  *n = 0;
  for (int i = 0; wc != NULL && i < wc->n; i++) k += wc->e[i].nchunk >= 0;
  if (k == 0) return CATERVA_OK;
  if ((k = normalize_all(ctx, a)) < 0) return k;
  k = 0;
  for (int i = 0; i < wc->n; i++) k += wc->e[i].nchunk >= 0;
  *out = calloc((size_t)k, sizeof **out);
  if (*out == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  for (int i = 0, j = 0; i < wc->n; i++) {
    const cat_wentry *e = &wc->e[i];
    cat_wentry *c;
    if (e->nchunk < 0) continue;
    c = &(*out)[j++];
    *c = *e;
    c->img = malloc((size_t)a->g.chunksize);
    c->bits = malloc(nb);
    *n = j;
    if (c->img == NULL || c->bits == NULL) {
      entries_free(*out, j, NULL);
      *out = NULL;
      *n = 0;
      return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    }
    memcpy(c->img, e->img, (size_t)a->g.chunksize);
    memcpy(c->bits, e->bits, nb);
  }
  return CATERVA_OK;
}

/* Make the cache hold exactly the images of mark m (copied again: the mark stays). */
static int restore_pending(caterva_ctx *ctx, caterva_array *a, const cat_wmark *m) {
  size_t nb = bits_words(&a->g) * sizeof(uint64_t);
  int rc = CATERVA_OK;
  wcache_discard(a);
  for (int i = 0; m != NULL && i < m->n; i++) {
    cat_wentry *e;
    CAT_TRY(leave, claim(ctx, a, m->e[i].nchunk, &e));
    e->perm = -1; /* the copies are in the chunk's layout */
    memcpy(e->img, m->e[i].img, (size_t)a->g.chunksize);
    memcpy(e->bits, m->e[i].bits, nb);
    e->nset = m->e[i].nset;
  }
leave:
  return rc;
}

int caterva_array_begin(caterva_ctx *ctx, caterva_array *a) {
  int rc = cat_array_check_writable(ctx, a);
  if (rc < 0) return rc;
  rc = caterva_array_flush(ctx, a); /* what came before is not part of it */
  if (rc < 0) return rc;
  rc = caterva_schunk_begin(ctx, a->sc);
  if (rc < 0) return rc;
  rc = cat_bs_begin(ctx, a);
  if (rc < 0) (void)caterva_schunk_rollback(ctx, a->sc);
  return rc;
}

/* Store what the worker holds. A failure cannot be reported where this runs (SQLite drops
 * the messages of xSavepoint and xRelease), so it is kept: every later call fails with it
 * until the transaction rolls back (its writes are incomplete). */
static void settle_or_stick(caterva_ctx *ctx, caterva_array *a) {
  int rc = reap(ctx, a, 1);
  handed_reset(a->wc);
  if (rc >= 0) return;
  a->wc->stuck = rc;
  snprintf(a->wc->stuckmsg, sizeof a->wc->stuckmsg, "%s", ctx != NULL ? ctx->errmsg : "");
  cat_ws_discard(a->wc->ws, a->wc->pool);
}

int caterva_array_savepoint(caterva_ctx *ctx, caterva_array *a, int level) {
  cat_wcache *wc;
  int rc = CATERVA_OK, k = 0;
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  CAT_TRY(leave, wcache_get(ctx, a));
  wc = a->wc;
  /* what the worker holds belongs before the mark; a transaction already failing is
   * reported by its next write, read or commit, which SQLite gives the message of */
  if (!wc->stuck) settle_or_stick(ctx, a);
  drop_wmarks(wc, level);
  for (int i = 0; i < wc->n; i++) k += wc->e[i].nchunk >= 0;
  if ((int64_t)k * a->g.chunksize > CAT_WMARK_COPY_MAX) CAT_TRY(leave, caterva_array_flush(ctx, a));
  if (wc->nmarks == wc->capmarks) {
    int cap = wc->capmarks ? 2 * wc->capmarks : 8;
    cat_wmark *p = realloc(wc->marks, (size_t)cap * sizeof *p);
    CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
    wc->marks = p;
    wc->capmarks = cap;
  }
  wc->marks[wc->nmarks].level = level;
  CAT_TRY(leave, copy_pending(ctx, a, &wc->marks[wc->nmarks].e, &wc->marks[wc->nmarks].n));
  rc = caterva_schunk_savepoint(ctx, a->sc, level);
  if (rc >= 0) rc = cat_bs_mark(ctx, a, level);
  if (rc >= 0) wc->nmarks++;
  else entries_free(wc->marks[wc->nmarks].e, wc->marks[wc->nmarks].n, NULL);
leave:
  return rc;
}

int caterva_array_release(caterva_ctx *ctx, caterva_array *a, int level) {
  if (a == NULL) return cat_error(ctx, CATERVA_E_INVALID, "no array");
  if (a->wc != NULL && !a->wc->stuck) settle_or_stick(ctx, a); /* a statement's end */
  drop_wmarks(a->wc, level);
  cat_bs_release(a, level);
  return caterva_schunk_release(ctx, a->sc, level);
}

int caterva_array_rollback_to(caterva_ctx *ctx, caterva_array *a, int level) {
  const cat_wmark *m = NULL;
  int rc;
  if (a == NULL) return cat_error(ctx, CATERVA_E_INVALID, "no array");
  drop_wmarks(a->wc, level + 1);
  if (a->wc != NULL) cat_ws_discard(a->wc->ws, a->wc->pool); /* all of it came after the mark */
  rc = caterva_schunk_rollback_to(ctx, a->sc, level);
  if (rc >= 0) cat_bs_rollback_to(a, level);
  if (rc >= 0) rc = cat_array_load_meta(ctx, a);
  if (a->wc != NULL && a->wc->nmarks > 0) m = &a->wc->marks[a->wc->nmarks - 1];
  if (rc >= 0) rc = restore_pending(ctx, a, m);
  else wcache_discard(a);
  return rc;
}

int cat_array_commit_prepare(caterva_ctx *ctx, caterva_array *a) {
  int rc = caterva_array_flush(ctx, a);
  if (rc < 0) return rc;
  /* the statistics go into the trailer this commit writes */
  rc = cat_bs_store(ctx, a);
  if (rc < 0) return rc;
  drop_wmarks(a->wc, -1);
  return CATERVA_OK;
}

int cat_array_commit_finish(caterva_ctx *ctx, caterva_array *a, int sync) {
  int rc = caterva_schunk_commit(ctx, a->sc, sync);
  if (rc >= 0) cat_bs_end(a);
  return rc;
}

int caterva_array_commit(caterva_ctx *ctx, caterva_array *a, int sync) {
  int rc = cat_array_commit_prepare(ctx, a);
  return rc < 0 ? rc : cat_array_commit_finish(ctx, a, sync);
}

int caterva_array_rollback(caterva_ctx *ctx, caterva_array *a) {
  int rc, rc2;
  if (a == NULL) return cat_error(ctx, CATERVA_E_INVALID, "no array");
  drop_wmarks(a->wc, -1);
  wcache_discard(a);
  if (a->wc != NULL) a->wc->stuck = 0;
  rc = caterva_schunk_rollback(ctx, a->sc);
  cat_bs_rollback(a);
  rc2 = cat_array_load_meta(ctx, a);
  return rc < 0 ? rc : rc2;
}

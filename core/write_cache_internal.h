/*
 * write_cache_internal.h -- what the write cache's files share (wcache.c: the cache and cell
 * writes; wcache_layout.c: images filled in another order; wcache_store.c: storing images,
 * on the caller's thread or the write-behind worker's; wcache_txn.c: transactions on
 * arrays). Not installed; nothing outside these files includes it. The cache's design is
 * described at the top of wcache.c.
 */
#ifndef CAT_WRITE_CACHE_INTERNAL_H
#define CAT_WRITE_CACHE_INTERNAL_H

#include "array_layer_internal.h"

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

/* Items of chunk nchunk inside the shape. */
static inline int64_t cat_wcache_nvalid(const cat_geom *g, int64_t nchunk) {
  int64_t cc[CATERVA_MAX_DIM], n = 1;
  cat_geom_chunk_coords(g, nchunk, cc);
  for (int k = 0; k < g->ndim; k++) {
    int64_t lo = cc[k] * g->chunkshape[k], hi = lo + g->chunkshape[k];
    n *= (hi < g->shape[k] ? hi : g->shape[k]) - lo;
  }
  return n;
}

/* 64-bit words of an image's bitmap of written items. */
static inline size_t cat_wcache_bits_words(const cat_geom *g) {
  return (size_t)cat_ceil_div64(g->chunksize / g->itemsize, 64);
}

/* ---- wcache.c ---------------------------------------------------------------------------- */

/* Free n entries and their images and bits. pool: where the images came from; NULL: malloc
 * (a savepoint's copies). */
void cat_wcache_entries_free(cat_wentry *e, int n, cat_imgpool *pool);
/* Forget the savepoint marks at or above level. */
void cat_wcache_drop_marks(cat_wcache *wc, int level);
/* a->wc, made when a has none (the first write). */
int cat_wcache_get(caterva_ctx *ctx, caterva_array *a);
/* An entry for chunk n: the cached one, a free one, a new one, or the least recently used
 * one after storing it. */
int cat_wcache_claim(caterva_ctx *ctx, caterva_array *a, int64_t n, cat_wentry **out);
/* Forget every cached image (a rollback). */
void cat_wcache_discard(caterva_array *a);

/* ---- wcache_layout.c: images filled in another order --------------------------------------- */

/* Give e the layout of rows arriving with dimension k fastest. */
void cat_wcache_perm_setup(const cat_geom *g, cat_wentry *e, int k);
/* A permuted image img (rows along dimension k) in the chunk's layout in dst, and with dbits
 * (zero) its written bits from bits; cleared: dst's items not written read 0. 0, or
 * CATERVA_E_NOMEM (dst untouched). Reads g only (the worker runs it). */
int cat_wcache_perm_copy(const cat_geom *g, int k, const uint8_t *img, const uint64_t *bits,
                         bool cleared, uint8_t *dst, uint64_t *dbits);
/* Put e's image in the chunk's layout (nothing to do if it is), and with keep_bits its
 * written bits; without, the bits are left as they are, not to be read again (a chunk
 * written wholly, about to be stored). */
int cat_wcache_normalize(caterva_ctx *ctx, caterva_array *a, cat_wentry *e, bool keep_bits);
/* Every pending image in the chunk's layout. */
int cat_wcache_normalize_all(caterva_ctx *ctx, caterva_array *a);

/* ---- wcache_store.c: storing images ---------------------------------------------------------- */

/* Compress the image of e (completed from the stored chunk where items were not written:
 * only the blocks written into are re-encoded when the stored chunk allows it) and store it;
 * e becomes free. */
int cat_wcache_store_entry(caterva_ctx *ctx, caterva_array *a, cat_wentry *e);
/* Store entry e, every item of which was written: inside a transaction, with threads to
 * spare, on the write-behind worker, and e is free at once; else cat_wcache_store_entry. */
int cat_wcache_store_full(caterva_ctx *ctx, caterva_array *a, cat_wentry *e);
/* Hand entry e, written in part, which the writes have just left for another chunk, to the
 * worker when that can help (see "chunks that chunkwise writes leave behind" in
 * wcache_store.c); else it stays pending. */
int cat_wcache_leave_behind(caterva_ctx *ctx, caterva_array *a, cat_wentry *e);
/* Store the chunks the worker has finished, in the order they were handed over; with wait,
 * every chunk handed over. */
int cat_wcache_reap(caterva_ctx *ctx, caterva_array *a, int wait);
/* A settle point (a statement's end, a savepoint, a flush): chunks may be handed over again. */
void cat_wcache_handed_reset(cat_wcache *wc);

#endif /* CAT_WRITE_CACHE_INTERNAL_H */

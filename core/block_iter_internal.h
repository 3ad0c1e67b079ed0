/*
 * block_iter_internal.h -- the block iterator's state, shared by array_iter.c (stepping
 * through the box, read-ahead, remote portions) and array_visit.c (reading a whole box,
 * visiting every block on the context's threads).
 */
#ifndef CAT_BLOCK_ITER_INTERNAL_H
#define CAT_BLOCK_ITER_INTERNAL_H

#include "array_layer_internal.h"

typedef struct cat_readahead cat_readahead; /* array_iter.c */

/* How the blocks of the current chunk are served. */
enum { SERVE_BLOCKS, SERVE_FILL, SERVE_WHOLE, SERVE_NODATA };

struct caterva_block_iter {
  caterva_ctx *ctx;
  const caterva_array *a;
  caterva_schunk *sc;
  const cat_geom *g;
  int flags;                         /* CATERVA_ITER_* */
  int64_t start[CATERVA_MAX_DIM];    /* the box, clipped */
  int64_t stop[CATERVA_MAX_DIM];
  int64_t c0[CATERVA_MAX_DIM];       /* chunk grid range of the box: [c0, c1) */
  int64_t c1[CATERVA_MAX_DIM];
  int64_t cc[CATERVA_MAX_DIM];       /* current chunk's grid coordinates */
  int32_t b0[CATERVA_MAX_DIM];       /* block grid range inside the current chunk */
  int32_t b1[CATERVA_MAX_DIM];
  int32_t bc[CATERVA_MAX_DIM];       /* current block's grid coordinates */
  int64_t clo[CATERVA_MAX_DIM];      /* current chunk's valid items: [clo, chi) */
  int64_t chi[CATERVA_MAX_DIM];
  int32_t *sel;                      /* block numbers of the current chunk to visit, C order */
  int32_t nsel, selcap;
  int32_t pos;                       /* next entry of sel to hand out */
  int32_t batch_lo, batch_hi;        /* sel[batch_lo, batch_hi) are decompressed in data */
  int32_t batch_max;                 /* blocks per decompression call */
  int serve;                         /* SERVE_* for the current chunk */
  const uint8_t *chunk;              /* current chunk's bytes (borrowed from sc) */
  int32_t cbytes;
  uint8_t *data;                     /* decompressed blocks of the current batch */
  size_t datacap;                    /* bytes allocated at data */
  uint8_t *whole;                    /* a whole decompressed chunk (fallback path) */
  uint8_t *fill;                     /* one block of a special chunk's content */
  int fill_kind;                     /* special kind in fill, or -1 */
  uint8_t fill_value[256];           /* value in fill for CATERVA_SPECIAL_VALUE */
  int fill_vsize;
  int64_t nchunk;                    /* number of the chunk at cc */
  int have_chunk;                    /* cc is valid */
  int done;
  int (*keep)(void *, int64_t, int32_t); /* block filter, or NULL */
  void *keep_arg;
  int (*keep_ahead)(void *, const int64_t *, int); /* the filter's look-ahead, or NULL */
  bool keep_by_value;       /* the filter's answer depends on the values alone */
  int64_t (*owner)(void *, const caterva_block *); /* visit: blocks of one owner in turn */
  void *owner_arg;
  cat_readahead *ra;                 /* CATERVA_ITER_READAHEAD with threads, else NULL */
  caterva_block blk;                 /* handed out by next */
  /* remote super-chunks: chunks are fetched ahead, a portion of the box at a time */
  int64_t pinned;                    /* chunk whose bytes it->chunk borrows (pinned), or -1 */
  int64_t nvisit, nplanned;          /* chunks of the box entered / fetched ahead, C order */
  cat_fetchahead *fa;                /* fetches the next portion meanwhile, or NULL */
  cat_want *ready;                   /* the current portion's chunks, pinned (fetch-ahead) */
  const uint8_t **ready_chunk;       /* ... their bytes */
  int32_t *ready_cbytes;
  int nready;
  /* the selections a filter made while portions were planned, for the chunks not entered yet
   * (increasing chunk numbers): entering one takes its selection instead of asking the filter
   * again, so that the filter sees every block once (a reduction's filter queues the blocks
   * its statistics answer) */
  struct cat_planned_sel *planned;
  int32_t nplanned_sel, planned_head, planned_cap;
};

/* Move to the box's first chunk, or the next one: 0 past the last. */
int cat_iter_step_chunk(caterva_block_iter *it);
/* Enter the chunk at it->cc: its valid items and the blocks to visit (planned ahead by the
 * read-ahead, or computed now). */
int cat_iter_enter_chunk(caterva_block_iter *it);
/* Drop whatever was read ahead (a reset, the end). */
void cat_iter_ra_discard(caterva_block_iter *it);
/* Block nblock of the chunk whose valid items are [clo, chi): its grid coordinates into bc,
 * its first item's global coordinates into origin and its part of the box into [start,
 * stop). Reads only the box and the geometry, so workers may call it. */
/* 1 when the fill buffer holds one item repeated (not a longer repeated pattern). */
static inline int cat_iter_fill_uniform(const caterva_block_iter *it) {
  return it->fill_kind != CATERVA_SPECIAL_VALUE || it->fill_vsize == it->g->itemsize;
}
void cat_iter_block_box(const caterva_block_iter *it, const int64_t *clo, const int64_t *chi,
                        int32_t nblock, int32_t *bc, int64_t *origin, int64_t *start,
                        int64_t *stop);

#endif

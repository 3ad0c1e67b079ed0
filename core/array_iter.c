/*
 * array_iter.c -- geometry of the two-level partitioning and the block iterator.
 *
 * An array of shape S, chunkshape C and blockshape B (spec §5.2):
 *
 *   axis k:  |<------------- extchunkshape[k] = ceil(C/B)*B ------------->|
 *            | block 0 | block 1 | ... | block n-1 (may overhang C) |
 *            |<---------------- C[k] -------------->| padding       |
 *
 * Chunks are numbered in C order over the chunk grid ceil(S/C); every chunk holds
 * prod(extchunkshape) items; inside it the blocks are in C order over the block grid
 * extchunkshape/B and each block holds prod(B) items in C order. Items at in-chunk index
 * >= C or at global index >= S are padding.
 */
#include "array_internal.h"

#include <stdlib.h>

/* ---- geometry ----------------------------------------------------------------------- */

int cat_geom_init(caterva_ctx *ctx, cat_geom *g, const cat_array_meta *m, int itemsize) {
  int rc = CATERVA_OK;
  int64_t nitems = 1, nchunks = 1, nblocks = 1, blockitems = 1, chunkitems = 1;
  memset(g, 0, sizeof *g);
  CAT_TRY(leave, cat_meta_validate(ctx, m, CATERVA_MAX_DIM, itemsize));
  CAT_CHECK(leave, itemsize >= 1 && itemsize <= 255, CATERVA_E_UNSUPPORTED,
            "item size %d not in 1..255", itemsize);
  g->ndim = m->ndim;
  g->itemsize = itemsize;
  for (int k = 0; k < m->ndim; k++) {
    int64_t s = m->shape[k], c = m->chunkshape[k], b = m->blockshape[k];
    int64_t ext = b > 0 ? cat_ceil_div64(c, b) * b : 0;
    g->shape[k] = s;
    g->chunkshape[k] = (int32_t)c;
    g->blockshape[k] = (int32_t)b;
    g->extchunkshape[k] = (int32_t)ext; /* bounded by cat_meta_validate */
    g->gridshape[k] = c > 0 ? cat_ceil_div64(s, c) : 0;
    g->blockgrid[k] = b > 0 ? (int32_t)(ext / b) : 0;
    nitems *= s;        /* checked by cat_meta_validate */
    nchunks *= g->gridshape[k];
    nblocks *= g->blockgrid[k];
    chunkitems *= ext;
    CAT_CHECK(leave, cat_mul64(blockitems, b, &blockitems) && blockitems <= INT32_MAX / itemsize,
              CATERVA_E_UNSUPPORTED, "a block of this shape exceeds 2 GiB");
  }
  g->nitems = nitems;
  g->nchunks = nchunks;
  g->nblocks = (int32_t)nblocks;
  g->blockitems = (int32_t)blockitems;
  g->blocksize = (int32_t)(blockitems * itemsize);
  g->chunksize = (int32_t)(chunkitems * itemsize);
  rc = CATERVA_OK;
leave:
  return rc;
}

void cat_geom_chunk_coords(const cat_geom *g, int64_t n, int64_t *cc) {
  for (int k = g->ndim - 1; k >= 0; k--) {
    cc[k] = n % g->gridshape[k];
    n /= g->gridshape[k];
  }
}

int64_t cat_geom_chunk_number(const cat_geom *g, const int64_t *cc) {
  int64_t n = 0;
  for (int k = 0; k < g->ndim; k++) n = n * g->gridshape[k] + cc[k];
  return n;
}

int cat_geom_clip(const cat_geom *g, const int64_t *start, const int64_t *stop, int64_t *cstart,
                  int64_t *cstop) {
  int nonempty = 1;
  for (int k = 0; k < g->ndim; k++) {
    int64_t lo = start ? start[k] : 0, hi = stop ? stop[k] : g->shape[k];
    if (lo < 0) lo = 0;
    if (hi > g->shape[k]) hi = g->shape[k];
    if (hi <= lo) {
      nonempty = 0;
      hi = lo = lo > g->shape[k] ? g->shape[k] : lo;
    }
    cstart[k] = lo;
    cstop[k] = hi;
  }
  return nonempty;
}

/* ---- copying between a block and a C-order buffer ------------------------------------ */

/* One contiguous run, with the common small sizes as fixed-size copies the compiler inlines. */
static inline void copy_run(uint8_t *dst, const uint8_t *src, size_t n) {
  switch (n) {
  case 1: *dst = *src; break;
  case 2: memcpy(dst, src, 2); break;
  case 4: memcpy(dst, src, 4); break;
  case 8: memcpy(dst, src, 8); break;
  case 16: memcpy(dst, src, 16); break;
  default: memcpy(dst, src, n); break;
  }
}

void cat_copy_box(const cat_geom *g, uint8_t *block, const int64_t *origin, const int64_t *lo,
                  const int64_t *hi, uint8_t *buf, const int64_t *bstart, const int64_t *bshape,
                  int to_block) {
  const int nd = g->ndim;
  const size_t is = (size_t)g->itemsize;
  int64_t bstr[CATERVA_MAX_DIM], ostr[CATERVA_MAX_DIM], ext[CATERVA_MAX_DIM];
  int64_t cnt[CATERVA_MAX_DIM];
  int64_t boff = 0, ooff = 0, run;
  int last;
  uint8_t *pb, *po;
  if (nd == 0) {
    if (buf == NULL) memset(block, 0, is);
    else if (to_block) memcpy(block, buf, is);
    else memcpy(buf, block, is);
    return;
  }
  bstr[nd - 1] = ostr[nd - 1] = 1;
  for (int k = nd - 2; k >= 0; k--) {
    bstr[k] = bstr[k + 1] * g->blockshape[k + 1];
    ostr[k] = ostr[k + 1] * bshape[k + 1];
  }
  for (int k = 0; k < nd; k++) {
    ext[k] = hi[k] - lo[k];
    boff += (lo[k] - origin[k]) * bstr[k];
    ooff += (lo[k] - bstart[k]) * ostr[k];
    cnt[k] = 0;
  }
  /* Axes whose extent is the whole block row and the whole buffer row merge into the run. */
  last = nd - 1;
  run = ext[last];
  while (last > 0 && ext[last] == g->blockshape[last] && ext[last] == bshape[last]) {
    last--;
    run *= ext[last];
  }
  pb = block + (size_t)boff * is;
  po = buf ? buf + (size_t)ooff * is : NULL;
  const size_t runb = (size_t)run * is;
  for (;;) {
    if (po == NULL) memset(pb, 0, runb);
    else if (to_block) copy_run(pb, po, runb);
    else copy_run(po, pb, runb);
    int k = last - 1;
    for (; k >= 0; k--) {
      if (++cnt[k] < ext[k]) {
        pb += (size_t)bstr[k] * is;
        if (po) po += (size_t)ostr[k] * is;
        break;
      }
      cnt[k] = 0;
      pb -= (size_t)((ext[k] - 1) * bstr[k]) * is;
      if (po) po -= (size_t)((ext[k] - 1) * ostr[k]) * is;
    }
    if (k < 0) break;
  }
}

void cat_fill_items(uint8_t *dst, int64_t n, int itemsize, int special, const uint8_t *value) {
  static const uint8_t nan32[4] = {0x00, 0x00, 0xC0, 0x7F};
  static const uint8_t nan64[8] = {0, 0, 0, 0, 0, 0, 0xF8, 0x7F};
  size_t total = (size_t)n * (size_t)itemsize, done;
  if (total == 0) return;
  if (special == CATERVA_SPECIAL_NAN && (itemsize == 4 || itemsize == 8))
    value = itemsize == 4 ? nan32 : nan64;
  else if (special != CATERVA_SPECIAL_VALUE || value == NULL) {
    memset(dst, 0, total);
    return;
  }
  memcpy(dst, value, (size_t)itemsize);
  /* Double the filled prefix until the buffer is full. */
  for (done = (size_t)itemsize; done < total; done *= 2)
    memcpy(dst + done, dst, done < total - done ? done : total - done);
}

/* ---- the block iterator --------------------------------------------------------------- */

/* How the blocks of the current chunk are served. */
enum { SERVE_BLOCKS, SERVE_FILL, SERVE_WHOLE, SERVE_NODATA };

#define ITER_BATCH_BYTES (16 * 1024 * 1024) /* decompressed blocks kept at once */

struct caterva_block_iter {
  caterva_ctx *ctx;
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
  int have_chunk;                    /* cc is valid */
  int done;
  int (*keep)(void *, int64_t, int32_t); /* block filter, or NULL */
  void *keep_arg;
  caterva_block blk;                 /* handed out by next */
};

void caterva_block_iter_free(caterva_block_iter *it) {
  if (it == NULL) return;
  free(it->sel);
  free(it->data);
  free(it->whole);
  free(it->fill);
  free(it);
}

int caterva_block_iter_reset(caterva_block_iter *it, const int64_t *start,
                             const int64_t *stop) {
  const cat_geom *g = it->g;
  it->have_chunk = 0;
  it->nsel = it->pos = 0;
  it->batch_lo = it->batch_hi = 0;
  it->done = !cat_geom_clip(g, start, stop, it->start, it->stop) || g->nchunks == 0;
  for (int k = 0; !it->done && k < g->ndim; k++) {
    it->c0[k] = it->start[k] / g->chunkshape[k];
    it->c1[k] = cat_ceil_div64(it->stop[k], g->chunkshape[k]);
  }
  return CATERVA_OK;
}

int caterva_block_iter_new(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                           const int64_t *stop, int flags, caterva_block_iter **out) {
  int rc = CATERVA_OK;
  caterva_block_iter *it = NULL;
  const cat_geom *g;
  *out = NULL;
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  g = &a->g;
  it = calloc(1, sizeof *it);
  CAT_CHECK(leave, it != NULL, CATERVA_E_NOMEM, "out of memory");
  it->ctx = ctx;
  it->sc = a->sc;
  it->g = g;
  it->flags = flags;
  it->fill_kind = -1;
  it->blk.blockshape = g->blockshape;
  caterva_block_iter_reset(it, start, stop);
  {
    int64_t bm = ITER_BATCH_BYTES / (g->blocksize > 0 ? g->blocksize : 1);
    int64_t minb = 4 * (int64_t)(ctx ? ctx->nthreads : 1);
    if (bm < minb) bm = minb;
    if (bm > g->nblocks) bm = g->nblocks;
    if (bm < 1) bm = 1;
    it->batch_max = (int32_t)bm;
  }
leave:
  if (rc < 0) caterva_block_iter_free(it);
  else *out = it;
  return rc;
}

void caterva_block_iter_set_filter(caterva_block_iter *it,
                                   int (*keep)(void *arg, int64_t nchunk, int32_t nblock),
                                   void *arg) {
  if (it == NULL) return;
  it->keep = keep;
  it->keep_arg = arg;
}

/* Drop the selected blocks of chunk nchunk that the filter rejects. */
static int filter_sel(caterva_block_iter *it, int64_t nchunk) {
  int32_t j = 0;
  for (int32_t i = 0; i < it->nsel; i++) {
    int r = it->keep(it->keep_arg, nchunk, it->sel[i]);
    if (r < 0) return r;
    if (r) it->sel[j++] = it->sel[i];
  }
  it->nsel = j;
  return CATERVA_OK;
}

/* Make sure the fill buffer holds one block of the given special content. */
static int prepare_fill(caterva_block_iter *it, int kind, const uint8_t *value, int vsize) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  const cat_geom *g = it->g;
  if (kind == CATERVA_SPECIAL_NAN)
    CAT_CHECK(leave, g->itemsize == 4 || g->itemsize == 8, CATERVA_E_CORRUPT,
              "NaN chunk in an array of %d-byte items", g->itemsize);
  if (kind == CATERVA_SPECIAL_VALUE)
    CAT_CHECK(leave, vsize >= 1 && vsize <= 255 && g->blocksize % vsize == 0, CATERVA_E_CORRUPT,
              "repeated-value chunk with a %d-byte value", vsize);
  if (it->fill == NULL) {
    it->fill = malloc((size_t)g->blocksize);
    CAT_CHECK(leave, it->fill != NULL, CATERVA_E_NOMEM, "out of memory");
  }
  if (kind == CATERVA_SPECIAL_UNINIT) kind = CATERVA_SPECIAL_ZERO; /* reads as zeros */
  if (it->fill_kind == kind &&
      (kind != CATERVA_SPECIAL_VALUE ||
       (it->fill_vsize == vsize && memcmp(it->fill_value, value, (size_t)vsize) == 0)))
    goto leave;
  if (kind == CATERVA_SPECIAL_VALUE) {
    cat_fill_items(it->fill, g->blocksize / vsize, vsize, kind, value);
    memcpy(it->fill_value, value, (size_t)vsize);
    it->fill_vsize = vsize;
  } else {
    cat_fill_items(it->fill, g->blockitems, g->itemsize, kind, NULL);
  }
  it->fill_kind = kind;
leave:
  return rc;
}

/* Decide how the current chunk's blocks are served and read what that needs. */
static int open_chunk_data(caterva_block_iter *it, int64_t nchunk) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  const cat_geom *g = it->g;
  caterva_chunk_info info;
  int special;
  it->batch_lo = it->batch_hi = 0;
  if (it->flags & CATERVA_ITER_NODATA) {
    it->serve = SERVE_NODATA;
    goto leave;
  }
  special = caterva_schunk_chunk_special(it->sc, nchunk);
  CAT_TRY(leave, special);
  if (special != CATERVA_SPECIAL_NONE) {
    it->serve = SERVE_FILL;
    rc = prepare_fill(it, special, NULL, 0);
    goto leave;
  }
  CAT_TRY(leave, caterva_schunk_get_chunk(ctx, it->sc, nchunk, &it->chunk, &it->cbytes));
  rc = caterva_chunk_info_get(it->chunk, (size_t)it->cbytes, &info);
  CAT_CHECK(leave, rc >= 0, rc, "chunk %lld: malformed header", (long long)nchunk);
  CAT_CHECK(leave, info.nbytes == g->chunksize, CATERVA_E_CORRUPT,
            "chunk %lld holds %d bytes, the array's chunks hold %d", (long long)nchunk,
            (int)info.nbytes, (int)g->chunksize);
  if (info.special != CATERVA_SPECIAL_NONE) {
    it->serve = SERVE_FILL;
    rc = prepare_fill(it, info.special, it->chunk + CATERVA_CHUNK_HEADER_SIZE,
                      it->cbytes - CATERVA_CHUNK_HEADER_SIZE);
  } else if (info.blocksize == g->blocksize && info.nblocks == g->nblocks) {
    it->serve = SERVE_BLOCKS;
  } else {
    /* A writer that chose its own blocksize: the array's blocks are still at
       b * blocksize of the decompressed chunk, so decompress it whole. */
    if (it->whole == NULL) {
      it->whole = malloc((size_t)g->chunksize);
      CAT_CHECK(leave, it->whole != NULL, CATERVA_E_NOMEM, "out of memory");
    }
    CAT_TRY(leave, caterva_chunk_decompress(ctx, it->chunk, (size_t)it->cbytes, it->whole,
                                            g->chunksize));
    it->serve = SERVE_WHOLE;
  }
leave:
  return rc;
}

/* Enter the chunk at it->cc: compute its block range and the blocks to visit. */
static int enter_chunk(caterva_block_iter *it) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  const cat_geom *g = it->g;
  int64_t n = 1;
  int32_t bc[CATERVA_MAX_DIM], bstride[CATERVA_MAX_DIM];
  for (int k = 0; k < g->ndim; k++) {
    int64_t base = it->cc[k] * g->chunkshape[k];
    int64_t lo = it->start[k] > base ? it->start[k] : base;
    int64_t hi = base + g->chunkshape[k];
    if (hi > it->stop[k]) hi = it->stop[k];
    it->clo[k] = base;
    it->chi[k] = base + g->chunkshape[k] < g->shape[k] ? base + g->chunkshape[k] : g->shape[k];
    it->b0[k] = (int32_t)((lo - base) / g->blockshape[k]);
    it->b1[k] = (int32_t)cat_ceil_div64(hi - base, g->blockshape[k]);
    n *= it->b1[k] - it->b0[k];
  }
  if (n > it->selcap) {
    int32_t *p = realloc(it->sel, (size_t)n * sizeof *p);
    CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
    it->sel = p;
    it->selcap = (int32_t)n;
  }
  /* Block numbers in C order over [b0, b1). */
  for (int k = g->ndim - 1, s = 1; k >= 0; k--) {
    bstride[k] = s;
    s *= g->blockgrid[k];
    bc[k] = it->b0[k];
  }
  for (int64_t i = 0; i < n; i++) {
    int32_t num = 0;
    int k;
    for (k = 0; k < g->ndim; k++) num += bc[k] * bstride[k];
    it->sel[i] = num;
    for (k = g->ndim - 1; k >= 0; k--) {
      if (++bc[k] < it->b1[k]) break;
      bc[k] = it->b0[k];
    }
  }
  it->nsel = (int32_t)n;
  it->pos = 0;
  if (it->keep != NULL) CAT_TRY(leave, filter_sel(it, cat_geom_chunk_number(g, it->cc)));
  if (it->nsel > 0) rc = open_chunk_data(it, cat_geom_chunk_number(g, it->cc));
leave:
  return rc;
}

/* Advance cc to the next chunk of the box in C order; 0 when past the last. */
static int next_chunk(caterva_block_iter *it) {
  for (int k = it->g->ndim - 1; k >= 0; k--) {
    if (++it->cc[k] < it->c1[k]) return 1;
    it->cc[k] = it->c0[k];
  }
  return 0;
}

/* Decompress the next batch of selected blocks, starting at it->pos. */
static int load_batch(caterva_block_iter *it) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  const cat_geom *g = it->g;
  int32_t nb = it->nsel - it->pos;
  size_t need;
  if (nb > it->batch_max) nb = it->batch_max;
  need = (size_t)nb * (size_t)g->blocksize;
  if (need > it->datacap) { /* grows to the largest batch seen; point lookups stay small */
    free(it->data);
    it->datacap = 0;
    it->data = malloc(need);
    CAT_CHECK(leave, it->data != NULL, CATERVA_E_NOMEM, "out of memory");
    it->datacap = need;
  }
  CAT_TRY(leave, caterva_chunk_decompress_blocks(ctx, it->chunk, (size_t)it->cbytes,
                                                 it->sel + it->pos, nb, it->data, need));
  it->batch_lo = it->pos;
  it->batch_hi = it->pos + nb;
leave:
  return rc;
}

int caterva_block_iter_next(caterva_block_iter *it, const caterva_block **blk) {
  int rc;
  const cat_geom *g;
  caterva_block *b;
  *blk = NULL;
  if (it == NULL || it->done) return 0;
  g = it->g;
  b = &it->blk;
  while (it->pos >= it->nsel) {
    if (!it->have_chunk) {
      memcpy(it->cc, it->c0, sizeof it->cc);
      it->have_chunk = 1;
    } else if (!next_chunk(it)) {
      it->done = 1;
      return 0;
    }
    rc = enter_chunk(it);
    if (rc < 0) {
      it->done = 1;
      return rc;
    }
    b->nchunk = cat_geom_chunk_number(g, it->cc);
  }
  /* Block coordinates from the block number (a filter may have dropped blocks of sel). */
  {
    int32_t rest = it->sel[it->pos];
    for (int k = g->ndim - 1; k >= 0; k--) {
      it->bc[k] = rest % g->blockgrid[k];
      rest /= g->blockgrid[k];
    }
  }
  for (int k = 0; k < g->ndim; k++) {
    int64_t o = it->clo[k] + (int64_t)it->bc[k] * g->blockshape[k];
    int64_t hi = o + g->blockshape[k];
    if (hi > it->chi[k]) hi = it->chi[k];
    if (hi > it->stop[k]) hi = it->stop[k];
    b->origin[k] = o;
    b->start[k] = o > it->start[k] ? o : it->start[k];
    b->stop[k] = hi;
  }
  b->nblock = it->sel[it->pos];
  switch (it->serve) {
  case SERVE_BLOCKS:
    if (it->pos >= it->batch_hi) {
      rc = load_batch(it);
      if (rc < 0) {
        it->done = 1;
        return rc;
      }
    }
    b->data = it->data + (size_t)(it->pos - it->batch_lo) * (size_t)g->blocksize;
    break;
  case SERVE_FILL: b->data = it->fill; break;
  case SERVE_WHOLE: b->data = it->whole + (size_t)b->nblock * (size_t)g->blocksize; break;
  default: b->data = NULL; break;
  }
  it->pos++;
  *blk = b;
  return 1;
}

/*
 * array_geom.c -- geometry of the two-level partitioning: chunk and block numbers, clipping
 * boxes, copying between a block and a C-order buffer, filling items.
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
#include "array_layer_internal.h"

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
  g->nodata_axis = -1;
  for (int k = 0; k < m->ndim; k++) {
    int64_t s = m->shape[k], c = m->chunkshape[k], b = m->blockshape[k];
    int64_t ext = b > 0 ? cat_ceil_div64(c, b) * b : 0;
    g->shape[k] = s;
    g->chunkshape[k] = (int32_t)c;
    g->blockshape[k] = (int32_t)b;
    g->extchunkshape[k] = (int32_t)ext; /* bounded by cat_meta_validate */
    if ((c == 0 || b == 0) && g->nodata_axis < 0) g->nodata_axis = k;
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

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#define CAT_HAVE_STREAM 1
/* Copy n bytes to dst (8-byte aligned, n a multiple of 8) with non-temporal stores: the
** destination's cache lines are not read first, and do not push the source out of cache. */
static void stream_run(uint8_t *dst, const uint8_t *src, size_t n) {
  size_t i = 0;
  int64_t w;
  for (; i < n && ((uintptr_t)(dst + i) & 15) != 0; i += 8) {
    memcpy(&w, src + i, 8);
    _mm_stream_si64((long long *)(void *)(dst + i), w);
  }
  for (; i + 16 <= n; i += 16)
    _mm_stream_si128((__m128i *)(void *)(dst + i), _mm_loadu_si128((const __m128i *)(src + i)));
  for (; i < n; i += 8) {
    memcpy(&w, src + i, 8);
    _mm_stream_si64((long long *)(void *)(dst + i), w);
  }
}
#endif

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
#ifdef CAT_HAVE_STREAM
  /* Streaming: every run starts 8-byte aligned (is and the buffer's alignment allow it). */
  if (to_block == CAT_TO_BUF_STREAM && (runb < 64 || is % 8 != 0 || ((uintptr_t)po & 7) != 0))
    to_block = CAT_TO_BUF;
#else
  if (to_block == CAT_TO_BUF_STREAM) to_block = CAT_TO_BUF;
#endif
  for (;;) {
    if (po == NULL) memset(pb, 0, runb);
    else if (to_block == CAT_TO_BLOCK) copy_run(pb, po, runb);
#ifdef CAT_HAVE_STREAM
    else if (to_block == CAT_TO_BUF_STREAM) stream_run(po, pb, runb);
#endif
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
#ifdef CAT_HAVE_STREAM
  if (to_block == CAT_TO_BUF_STREAM) _mm_sfence();
#endif
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


/*
 * wcache_layout.c -- images of the write cache filled in another order than the chunk's
 * layout, and putting them in it (wcache.c describes the cache).
 *
 * Rows that arrive with a dimension other than the last one fastest (time fastest into a
 * time, lat, lon array) would write each item into another cache line of the chunk's layout
 * (a block row apart), so a chunk claimed by such a row is filled in the order they come: its
 * box in C order with that dimension moved last (perm). Before anything else reads the image
 * (storing it, a savepoint's copy, a resize) normalize puts items and bits in the chunk's
 * layout, a copy in one pass.
 */
#include "write_cache_internal.h"

#include <stdlib.h>
#include <string.h>

/* Give e the layout of rows arriving with dimension k fastest. */
void cat_wcache_perm_setup(const cat_geom *g, cat_wentry *e, int k) {
  int64_t st = g->chunkshape[k];
  e->perm = k;
  e->pstride[k] = 1;
  for (int j = g->ndim - 1; j >= 0; j--) {
    if (j == k) continue;
    e->pstride[j] = st;
    st *= g->chunkshape[j];
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
int cat_wcache_perm_copy(const cat_geom *g, int k, const uint8_t *img, const uint64_t *bits,
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
int cat_wcache_normalize(caterva_ctx *ctx, caterva_array *a, cat_wentry *e, bool keep_bits) {
  cat_wcache *wc = a->wc;
  const cat_geom *g = &a->g;
  uint8_t *dst = NULL;
  uint64_t *bits = NULL;
  int k = e->perm, rc = CATERVA_OK;
  if (k < 0) return CATERVA_OK;
  dst = cat_imgpool_get(wc->pool);
  if (keep_bits) bits = calloc(cat_wcache_bits_words(g), sizeof *bits);
  CAT_CHECK(leave,
            dst != NULL && (bits != NULL || !keep_bits) &&
                cat_wcache_perm_copy(g, k, e->img, e->bits, e->cleared, dst, bits) == CATERVA_OK,
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
int cat_wcache_normalize_all(caterva_ctx *ctx, caterva_array *a) {
  int rc = CATERVA_OK;
  for (int i = 0; a->wc != NULL && i < a->wc->n; i++)
    if (a->wc->e[i].nchunk >= 0) CAT_TRY(leave, cat_wcache_normalize(ctx, a, &a->wc->e[i], true));
leave:
  return rc;
}

/*
 * frame_index.c -- the offsets index of a large frame read a block at a time. A read-only
 * open of a contiguous file whose index holds more than CAT_INDEX_LAZY_MIN entries in
 * several blocks does not decode it (spec 3.4: the index is a chunk of int64 entries, cut
 * into blocks): an entry is read by decoding the one block of the index chunk it lies in,
 * checked like an entry decoded at open (cat_frame_check_entry), and kept in a small cache
 * of decoded blocks. Whatever needs every entry (writers, compaction, copies, the sparse and
 * remote stores) decodes the whole index first with cat_sc_index_load; readers ask for one
 * entry with cat_sc_entry. The index chunk is read from the file's map at its offset (a
 * read-only schunk keeps its map until it is freed).
 */
#include "frame_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LIDX_SLOTS 4                       /* decoded blocks kept */
#define LIDX_BLOCK_MAX (1 << 20)           /* larger index blocks: decoded whole at open */

typedef struct lidx_slot {
  int64_t block;                           /* -1: empty */
  int64_t *e;                              /* the block's entries, host order, checked */
  uint64_t used;                           /* last use (LRU) */
} lidx_slot;

struct cat_lazy_index {
  int64_t pos;                             /* the index chunk's offset in the image */
  int32_t cbytes, blocksize;
  int64_t per_block;                       /* entries per block */
  caterva_ctx *ctx;                        /* for decoding (created on first use) */
  pthread_mutex_t mu;                      /* readers may ask from several threads */
  lidx_slot slot[LIDX_SLOTS];
  uint64_t tick;
  int64_t decoded;                         /* blocks decoded so far (a test's counter) */
};

void cat_index_lazy_free(cat_lazy_index *lz) {
  if (lz == NULL) return;
  for (int k = 0; k < LIDX_SLOTS; k++) free(lz->slot[k].e);
  caterva_ctx_free(lz->ctx);
  pthread_mutex_destroy(&lz->mu);
  free(lz);
}

int cat_index_try_lazy(caterva_ctx *ctx, caterva_schunk *sc, int64_t pos, int64_t avail) {
  caterva_chunk_info ci;
  cat_lazy_index *lz;
  if (sc->writable || !sc->base_mapped || sc->store != CATERVA_STORE_CONTIGUOUS ||
      sc->nchunks <= CAT_INDEX_LAZY_MIN || sc->nchunks > INT32_MAX / 8 ||
      avail < CATERVA_CHUNK_HEADER_SIZE ||
      caterva_chunk_info_get(sc->base + pos, (size_t)avail, &ci) < 0 ||
      ci.nbytes != (int32_t)(sc->nchunks * 8) || ci.special || ci.nblocks < 2 || ci.blocksize <= 0 ||
      ci.blocksize % 8 != 0 || ci.blocksize > LIDX_BLOCK_MAX)
    return 0; /* decoded whole (and checked) by cat_frame_parse_index */
  lz = calloc(1, sizeof *lz);
  if (lz == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  if (pthread_mutex_init(&lz->mu, NULL) != 0) {
    free(lz);
    return cat_error(ctx, CATERVA_E_NOMEM, "offsets index: cannot make a mutex");
  }
  cat_index_lazy_free(sc->lazy_index);
  lz->pos = pos;
  lz->cbytes = ci.cbytes;
  lz->blocksize = ci.blocksize;
  lz->per_block = ci.blocksize / 8;
  for (int k = 0; k < LIDX_SLOTS; k++) lz->slot[k].block = -1;
  sc->lazy_index = lz;
  return ci.cbytes;
}

/* The slot to reuse: an empty one, else the least recently used. */
static lidx_slot *victim(cat_lazy_index *lz) {
  lidx_slot *v = &lz->slot[0];
  for (int k = 0; k < LIDX_SLOTS; k++) {
    if (lz->slot[k].block < 0) return &lz->slot[k];
    if (lz->slot[k].used < v->used) v = &lz->slot[k];
  }
  return v;
}

/* Decode block b of the index into a slot and check its entries (lz->mu held). */
static int load_block(caterva_ctx *ctx, const caterva_schunk *sc, cat_lazy_index *lz,
                      int64_t b, lidx_slot **out) {
  lidx_slot *s = victim(lz);
  int64_t first = b * lz->per_block;
  int64_t n = sc->nchunks - first < lz->per_block ? sc->nchunks - first : lz->per_block;
  int32_t blk = (int32_t)b;
  int64_t got;
  int rc = CATERVA_OK;
  if (lz->ctx == NULL && caterva_ctx_new(1, &lz->ctx) < 0)
    return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  if (s->e == NULL) {
    if ((s->e = malloc((size_t)lz->blocksize)) == NULL)
      return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    cat_prefault(s->e, (size_t)lz->blocksize);
  }
  s->block = -1;
  got = caterva_chunk_decompress_blocks(lz->ctx, sc->base + lz->pos, (size_t)lz->cbytes, &blk, 1,
                                        s->e, (size_t)lz->blocksize);
  CAT_CHECK(leave, got == n * 8, got < 0 ? (int)got : CATERVA_E_CORRUPT,
            "offsets index: block %lld does not decode (%s)", (long long)b,
            got < 0 ? caterva_ctx_errmsg(lz->ctx) : "short");
  for (int64_t k = 0; k < n; k++) {
    uint8_t le[8];
    memcpy(le, &s->e[k], 8);
    s->e[k] = (int64_t)cat_le64(le);
    CAT_TRY(leave, cat_frame_check_entry(ctx, sc, first + k, s->e[k]));
  }
  s->block = b;
  lz->decoded++;
  *out = s;
leave:
  return rc;
}

int cat_sc_entry(caterva_ctx *ctx, const caterva_schunk *sc, int64_t i, int64_t *e) {
  cat_lazy_index *lz = sc->lazy_index;
  lidx_slot *s = NULL;
  int64_t b;
  int rc = CATERVA_OK;
  if (lz == NULL) {
    *e = sc->entries[i];
    return CATERVA_OK;
  }
  b = i / lz->per_block;
  pthread_mutex_lock(&lz->mu);
  for (int k = 0; k < LIDX_SLOTS && s == NULL; k++)
    if (lz->slot[k].block == b) s = &lz->slot[k];
  if (s == NULL) rc = load_block(ctx, sc, lz, b, &s);
  if (rc >= 0) {
    s->used = ++lz->tick;
    *e = s->e[i - b * lz->per_block];
  }
  pthread_mutex_unlock(&lz->mu);
  return rc;
}

int cat_sc_index_load(caterva_ctx *ctx, caterva_schunk *sc) {
  cat_lazy_index *lz = sc->lazy_index;
  int rc;
  if (lz == NULL) return CATERVA_OK;
  rc = cat_frame_parse_index(ctx, sc, sc->base, lz->pos, lz->cbytes);
  if (rc < 0) return rc;
  sc->lazy_index = NULL;
  cat_index_lazy_free(lz);
  return CATERVA_OK;
}

int64_t cat_sc_index_blocks_decoded(const caterva_schunk *sc) {
  return sc->lazy_index != NULL ? sc->lazy_index->decoded : -1;
}

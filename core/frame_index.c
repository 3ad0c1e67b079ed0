/*
 * frame_index.c -- the offsets index of a large frame read a block at a time. A read-only
 * open of a contiguous frame, or of a sparse frame (its chunks.b2frame), local or remote,
 * whose index holds more than CAT_INDEX_LAZY_MIN entries in several blocks does not decode it
 * (spec 3.4: the index is a chunk of int64 entries, cut into blocks): an entry is read by
 * decoding the one block of the index chunk it lies in and kept in a small cache of decoded
 * blocks; the first entry asked for in a block (with the next one) is read from the block's
 * byte planes instead, without decoding the block. Every entry is checked like an entry
 * decoded at open (cat_frame_check_entry) when it is read, so a bad entry fails the reads
 * that use it, and only those. Whatever needs every entry (writers, compaction, copies, a
 * collection of a sparse frame's files) decodes the whole index first with cat_sc_index_load;
 * readers ask for entries with cat_sc_entry or cat_sc_entries.
 *
 * The index chunk's bytes are those of a local reader's image of its file (sc->base_kept: a
 * map or a copy, kept until the schunk is freed), or those of a remote frame object's window
 * (frame_remote_tail.c), of which only the header part is present at open: a block's bytes
 * are fetched by range before it is decoded (cat_remote_bytes_locked, checked with the
 * decoder's framing), the blocks a list of entries needs in one wave.
 *
 * Locks: lz->mu guards the decoded blocks. A remote index also needs the store's lock for
 * its fetches, taken before lz->mu (frame_remote.c holds it around everything it does); a
 * reader first looks for its block under lz->mu alone, so that it does not wait for a
 * fetch-ahead thread holding the store's lock when the block is decoded already.
 */
#include "frame_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define LIDX_SLOTS 4                       /* decoded blocks kept */
#define LIDX_BLOCK_MAX (1 << 20)           /* larger index blocks: decoded whole at open */
#define LIDX_AHEAD_MAX 64                  /* index blocks fetched in one wave at most */

typedef struct lidx_slot {
  int64_t block;                           /* -1: empty */
  int64_t *e;                              /* the block's entries, host order, checked */
  uint64_t used;                           /* last use (LRU) */
} lidx_slot;

struct cat_lazy_index {
  const uint8_t *chunk;                    /* the index chunk (in a map, or a remote window) */
  int32_t cbytes, blocksize;
  int64_t per_block;                       /* entries per block */
  bool remote;                             /* block bytes fetched before they are decoded */
  caterva_ctx *ctx;                        /* for decoding (created on first use) */
  pthread_mutex_t mu;                      /* readers may ask from several threads */
  lidx_slot slot[LIDX_SLOTS];
  uint64_t tick;
  int64_t decoded;                         /* blocks decoded so far (a test's counter) */
  int64_t planes_block;                    /* the block last read an entry at a time, or -1 */
  int64_t planes_i, planes_e[2];           /* the entries read so: i, entry i and i + 1 */
  bool planes_next;                        /* planes_e[1] holds entry i + 1 (or -1: none) */
};

void cat_index_lazy_free(cat_lazy_index *lz) {
  if (lz == NULL) return;
  for (int k = 0; k < LIDX_SLOTS; k++) free(lz->slot[k].e);
  caterva_ctx_free(lz->ctx);
  pthread_mutex_destroy(&lz->mu);
  free(lz);
}

bool cat_index_lazy_ok(const caterva_schunk *sc, const uint8_t *chunk, int64_t avail,
                       caterva_chunk_info *ci) {
  caterva_chunk_info tmp;
  if (ci == NULL) ci = &tmp;
  /* a reader's: a local image kept until it is freed (a contiguous file's, a sparse frame's
   * chunks.b2frame), or a remote frame's */
  return !sc->writable && (sc->base_kept || sc->remote != NULL) &&
         sc->nchunks > CAT_INDEX_LAZY_MIN && sc->nchunks <= INT32_MAX / 8 &&
         avail >= CATERVA_CHUNK_HEADER_SIZE &&
         caterva_chunk_info_get(chunk, (size_t)avail, ci) >= 0 &&
         ci->nbytes == (int32_t)(sc->nchunks * 8) && !ci->special && ci->nblocks >= 2 &&
         ci->blocksize > 0 && ci->blocksize % 8 == 0 && ci->blocksize <= LIDX_BLOCK_MAX &&
         ci->cbytes <= avail;
}

int cat_index_lazy_attach(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                          int64_t avail, bool remote) {
  caterva_chunk_info ci;
  cat_lazy_index *lz;
  if (!cat_index_lazy_ok(sc, chunk, avail, &ci)) return 0;
  lz = calloc(1, sizeof *lz);
  if (lz == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  if (pthread_mutex_init(&lz->mu, NULL) != 0) {
    free(lz);
    return cat_error(ctx, CATERVA_E_NOMEM, "offsets index: cannot make a mutex");
  }
  cat_index_lazy_free(sc->lazy_index);
  lz->chunk = chunk;
  lz->cbytes = ci.cbytes;
  lz->blocksize = ci.blocksize;
  lz->per_block = ci.blocksize / 8;
  lz->remote = remote;
  lz->planes_block = -1;
  for (int k = 0; k < LIDX_SLOTS; k++) lz->slot[k].block = -1;
  sc->lazy_index = lz;
  return ci.cbytes;
}

int cat_index_try_lazy(caterva_ctx *ctx, caterva_schunk *sc, int64_t pos, int64_t avail) {
  if (!sc->base_kept) return 0; /* decoded whole (and checked) by cat_frame_parse_index */
  return cat_index_lazy_attach(ctx, sc, sc->base + pos, avail, false);
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

static lidx_slot *find(cat_lazy_index *lz, int64_t b) {
  for (int k = 0; k < LIDX_SLOTS; k++)
    if (lz->slot[k].block == b) return &lz->slot[k];
  return NULL;
}

/* Make block b's bytes present (a remote index fetches them) and lz->ctx ready. */
static int block_ready(caterva_ctx *ctx, const caterva_schunk *sc, cat_lazy_index *lz,
                       int64_t b) {
  int32_t blk = (int32_t)b;
  if (lz->ctx == NULL && caterva_ctx_new(1, &lz->ctx) < 0)
    return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  if (!lz->remote) return CATERVA_OK;
  return cat_remote_bytes_locked(ctx, sc, lz->chunk, lz->cbytes, &blk, 1);
}

/* The first time a block is asked for one entry (and the next): the entries read from its
 * byte planes (cat_chunk_items_planes), without decoding the block into fresh memory, whose
 * first touch costs more than the block's decoding. 1 when done, 0 when the index has another
 * layout or the block was read this way already (decode it then), or a negative error. */
static int entry_planes(caterva_ctx *ctx, const caterva_schunk *sc, cat_lazy_index *lz,
                        int64_t i, int64_t *e, int64_t *next) {
  int64_t b = i / lz->per_block, got[2];
  int32_t n = next != NULL && i + 1 < sc->nchunks && (i + 1) / lz->per_block == b ? 2 : 1;
  uint8_t le[16];
  int rc = CATERVA_OK;
  if (lz->planes_block == b && lz->planes_i == i && (next == NULL || lz->planes_next)) {
    *e = lz->planes_e[0]; /* the same entry again (a chunk's kind, then its bytes) */
    if (next != NULL) *next = lz->planes_e[1];
    return 1;
  }
  if (lz->planes_block == b) return 0;
  CAT_TRY(leave, block_ready(ctx, sc, lz, b));
  rc = cat_chunk_items_planes(lz->ctx, lz->chunk, (size_t)lz->cbytes, (int32_t)i, n, le);
  CAT_CHECK(leave, rc >= 0, rc, "offsets index: block %lld does not decode (%s)", (long long)b,
            caterva_ctx_errmsg(lz->ctx));
  if (rc == 0) goto leave;
  for (int32_t k = 0; k < n; k++) {
    got[k] = (int64_t)cat_le64(le + 8 * k);
    CAT_TRY(leave, cat_frame_check_entry(ctx, sc, i + k, got[k]));
  }
  *e = lz->planes_e[0] = got[0];
  lz->planes_e[1] = n == 2 ? got[1] : -1;
  if (next != NULL) *next = lz->planes_e[1];
  lz->planes_i = i;
  lz->planes_next = next != NULL;
  lz->planes_block = b;
  lz->decoded++;
  rc = 1;
leave:
  return rc;
}

/* Decode block b of the index into a slot (lz->mu held; for a remote index the store's lock
 * too: the block's bytes are fetched first when missing). Its entries are checked when read. */
static int load_block(caterva_ctx *ctx, const caterva_schunk *sc, cat_lazy_index *lz,
                      int64_t b, lidx_slot **out) {
  lidx_slot *s = victim(lz);
  int64_t first = b * lz->per_block;
  int64_t n = sc->nchunks - first < lz->per_block ? sc->nchunks - first : lz->per_block;
  int32_t blk = (int32_t)b;
  int64_t got;
  int rc = CATERVA_OK;
  if (s->e == NULL && (s->e = malloc((size_t)lz->blocksize)) == NULL)
    return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  s->block = -1;
  CAT_TRY(leave, block_ready(ctx, sc, lz, b));
  got = caterva_chunk_decompress_blocks(lz->ctx, lz->chunk, (size_t)lz->cbytes, &blk, 1, s->e,
                                        (size_t)lz->blocksize);
  CAT_CHECK(leave, got == n * 8, got < 0 ? (int)got : CATERVA_E_CORRUPT,
            "offsets index: block %lld does not decode (%s)", (long long)b,
            got < 0 ? caterva_ctx_errmsg(lz->ctx) : "short");
  for (int64_t k = 0; k < n; k++) {
    uint8_t le[8];
    memcpy(le, &s->e[k], 8);
    s->e[k] = (int64_t)cat_le64(le);
  }
  s->block = b;
  lz->decoded++;
  *out = s;
leave:
  return rc;
}

/* Entry i, and in *next entry i + 1 when it lies in the same block (else -1), lz->mu held. */
static int entry_at(caterva_ctx *ctx, const caterva_schunk *sc, cat_lazy_index *lz, int64_t i,
                    int64_t *e, int64_t *next) {
  int64_t b = i / lz->per_block, k = i - b * lz->per_block;
  lidx_slot *s = find(lz, b);
  int rc = CATERVA_OK;
  if (s == NULL) {
    rc = entry_planes(ctx, sc, lz, i, e, next);
    if (rc != 0) return rc < 0 ? rc : CATERVA_OK;
    CAT_TRY(leave, load_block(ctx, sc, lz, b, &s));
  }
  s->used = ++lz->tick;
  *e = s->e[k];
  CAT_TRY(leave, cat_frame_check_entry(ctx, sc, i, *e));
  if (next == NULL) goto leave;
  *next = -1;
  if (k + 1 < lz->per_block && i + 1 < sc->nchunks) {
    *next = s->e[k + 1];
    CAT_TRY(leave, cat_frame_check_entry(ctx, sc, i + 1, *next));
  }
leave:
  return rc;
}

/* The distinct blocks of the entries idx[0, n) not decoded yet, at most max (lz->mu held). */
static int32_t missing_blocks(const caterva_schunk *sc, cat_lazy_index *lz, const int64_t *idx,
                              int n, int32_t *out, int32_t max) {
  int32_t m = 0;
  for (int k = 0; k < n && m < max; k++) {
    int32_t b = (int32_t)(idx[k] / lz->per_block);
    bool dup = idx[k] < 0 || idx[k] >= sc->nchunks || find(lz, b) != NULL;
    for (int32_t q = 0; q < m && !dup; q++) dup = out[q] == b;
    if (!dup) out[m++] = b;
  }
  return m;
}

/* A remote index: the bytes of the blocks idx[0, n) need, in one wave (lz->mu and the
 * store's lock held). */
static int fetch_ahead(caterva_ctx *ctx, const caterva_schunk *sc, cat_lazy_index *lz,
                       const int64_t *idx, int n) {
  int32_t blocks[LIDX_AHEAD_MAX];
  int32_t m = missing_blocks(sc, lz, idx, n, blocks, LIDX_AHEAD_MAX);
  if (!lz->remote || m <= 0) return CATERVA_OK;
  return cat_remote_bytes_locked(ctx, sc, lz->chunk, lz->cbytes, blocks, m);
}

int cat_sc_entries_locked(caterva_ctx *ctx, const caterva_schunk *sc, const int64_t *idx, int n,
                          int64_t *e, int64_t *next) {
  cat_lazy_index *lz = sc->lazy_index;
  int rc = CATERVA_OK;
  if (lz == NULL) {
    for (int k = 0; k < n; k++) {
      e[k] = sc->entries[idx[k]];
      if (next != NULL) next[k] = idx[k] + 1 < sc->nchunks ? sc->entries[idx[k] + 1] : -1;
    }
    return CATERVA_OK;
  }
  pthread_mutex_lock(&lz->mu);
  CAT_TRY(leave, fetch_ahead(ctx, sc, lz, idx, n));
  for (int k = 0; k < n; k++)
    CAT_TRY(leave, entry_at(ctx, sc, lz, idx[k], &e[k], next != NULL ? &next[k] : NULL));
leave:
  pthread_mutex_unlock(&lz->mu);
  return rc;
}

int cat_sc_index_ahead_locked(caterva_ctx *ctx, const caterva_schunk *sc, const int64_t *idx,
                              int n) {
  cat_lazy_index *lz = sc->lazy_index;
  int rc;
  if (lz == NULL || !lz->remote) return CATERVA_OK;
  pthread_mutex_lock(&lz->mu);
  rc = fetch_ahead(ctx, sc, lz, idx, n);
  pthread_mutex_unlock(&lz->mu);
  return rc;
}

int cat_sc_entry(caterva_ctx *ctx, const caterva_schunk *sc, int64_t i, int64_t *e) {
  cat_lazy_index *lz = sc->lazy_index;
  lidx_slot *s;
  int rc = CATERVA_OK;
  if (lz == NULL) {
    *e = sc->entries[i];
    return CATERVA_OK;
  }
  pthread_mutex_lock(&lz->mu);
  s = find(lz, i / lz->per_block);
  if (s != NULL) {
    s->used = ++lz->tick;
    *e = s->e[i % lz->per_block];
    rc = cat_frame_check_entry(ctx, sc, i, *e);
  } else if (!lz->remote) {
    rc = entry_at(ctx, sc, lz, i, e, NULL);
  }
  pthread_mutex_unlock(&lz->mu);
  if (s != NULL || !lz->remote) return rc;
  return cat_remote_entries(ctx, sc, &i, 1, e); /* the store's lock first, then lz->mu */
}

int cat_sc_index_load(caterva_ctx *ctx, caterva_schunk *sc) {
  cat_lazy_index *lz = sc->lazy_index;
  int rc;
  if (lz == NULL) return CATERVA_OK;
  if (lz->remote) {
    rc = cat_remote_bytes(ctx, sc, lz->chunk, lz->cbytes, NULL, -1);
    if (rc < 0) return rc;
  }
  rc = cat_frame_parse_index(ctx, sc, lz->chunk, 0, lz->cbytes);
  if (rc < 0) return rc;
  sc->lazy_index = NULL;
  cat_index_lazy_free(lz);
  return CATERVA_OK;
}

int64_t cat_sc_index_blocks_decoded(const caterva_schunk *sc) {
  return sc->lazy_index != NULL ? sc->lazy_index->decoded : -1;
}

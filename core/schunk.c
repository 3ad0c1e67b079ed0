/*
 * schunk.c -- the super-chunk object: construction, properties, chunk access, chunk edits
 * and (vl)metalayers. Store-specific durability and the reading of stored chunk bytes
 * (cat_file_stored_chunk) live in frame_file.c; frame bytes, including the parsing of a whole
 * contiguous image, in frame_format.c. Neither of those calls back into this file.
 *
 * In memory a super-chunk is its index (one int64 entry per chunk, exactly as in the frame:
 * an offset into the image's chunk section, a sparse chunk file number, or a special code)
 * plus optional per-chunk owned bytes (`data`): chunks added to a memory store, and chunk
 * files of a sparse store once read. Chunks of a memory store opened from a buffer and of a
 * contiguous file are read from the image (the owned copy, or the file's read-only map).
 *
 * Every edit builds the new index on the side, makes it durable for file stores, and only
 * then replaces the old one, so a failed edit leaves the object as it was.
 */
#include "frame_internal.h"

#include <stdio.h>
#include <malloc.h>
#include <stdlib.h>

enum { EDIT_APPEND, EDIT_INSERT, EDIT_UPDATE, EDIT_DELETE };

/* A pending chunk edit. */
typedef struct sc_edit {
  int op;
  int64_t pos;           /* index of the chunk inserted, replaced or deleted */
  const uint8_t *chunk;  /* the new stored chunk, or NULL (special entry, delete) */
  int32_t cbytes;
  int64_t special;       /* the new special entry, or 0 */
  int32_t nb;            /* uncompressed size of the new chunk */
} sc_edit;

caterva_schunk *cat_sc_alloc(int store) {
  caterva_schunk *sc = calloc(1, sizeof *sc);
  if (sc == NULL) return NULL;
  sc->store = store;
  sc->fd = -1;
  sc->rfd = -1;
  sc->syncfd = -1;
  sc->frame_len = -1;
  sc->commit_pack = -1;
  return sc;
}

static void free_vlmeta_items(cat_vlmeta *v, int n) {
  for (int k = 0; k < n; k++) {
    free(v[k].name);
    if (!v[k].lazy && !v[k].mapped) free(v[k].chunk);
    free(v[k].raw);
  }
}

void caterva_schunk_free(caterva_schunk *sc) {
  if (sc == NULL) return;
  if (sc->txn != NULL) (void)caterva_schunk_rollback(NULL, sc);
  cat_file_close(sc);
  if (!sc->base_mapped) free((void *)sc->base);
  if (sc->data_pages != NULL) { /* a sparse reader's: the pages of slots it set */
    for (int64_t i = 0; i < sc->nchunks; i++)
      if (sc->data_pages[i / CAT_DATA_PAGE]) free(sc->data[i]);
      else i += CAT_DATA_PAGE - 1 - i % CAT_DATA_PAGE;
    cat_ztable_free(sc->data);
    free(sc->data_pages);
  } else {
    if (sc->data != NULL)
      for (int64_t i = 0; i < sc->nchunks; i++) free(sc->data[i]);
    free(sc->data);
  }
  free(sc->entries);
  cat_index_lazy_free(sc->lazy_index);
  for (int k = 0; k < sc->nmeta; k++) free(sc->meta[k].content);
  free_vlmeta_items(sc->vlmeta, sc->nvlmeta);
  free(sc->vlmeta);
  free(sc->path);
  caterva_ctx_free(sc->ictx);
  free(sc);
}

/* ---- construction -------------------------------------------------------------------- */

static int check_cparams(caterva_ctx *ctx, const caterva_cparams *cp, int32_t chunksize) {
  if (cp == NULL || chunksize <= 0)
    return cat_error(ctx, CATERVA_E_INVALID, "schunk: cparams and a chunksize > 0 are required");
  if (cp->typesize < 1 || cp->typesize > 255 || cp->clevel < 0 || cp->clevel > 9 ||
      cp->codec < 0 || cp->codec > 255 || cp->blocksize < 0 ||
      cp->splitmode < CATERVA_SPLIT_ALWAYS || cp->splitmode > CATERVA_SPLIT_FORWARD_COMPAT)
    return cat_error(ctx, CATERVA_E_INVALID, "schunk: invalid compression parameters");
  return CATERVA_OK;
}

int caterva_schunk_new(caterva_ctx *ctx, const caterva_cparams *cp, int32_t chunksize, int store,
                       const char *path, caterva_schunk **out) {
  caterva_schunk *sc = NULL;
  int rc;
  if (out == NULL) return cat_error(ctx, CATERVA_E_INVALID, "schunk_new: out is NULL");
  *out = NULL;
  rc = check_cparams(ctx, cp, chunksize);
  if (rc < 0) return rc;
  CAT_CHECK(fail, store >= CATERVA_STORE_MEMORY && store <= CATERVA_STORE_SPARSE,
            CATERVA_E_INVALID, "schunk_new: unknown store %d", store);
  CAT_CHECK(fail, (path != NULL) == (store != CATERVA_STORE_MEMORY), CATERVA_E_INVALID,
            "schunk_new: file stores need a path, memory stores take none");
  sc = cat_sc_alloc(store);
  CAT_CHECK(fail, sc != NULL, CATERVA_E_NOMEM, "out of memory");
  sc->cp = *cp;
  sc->typesize = cp->typesize;
  sc->blocksize = cp->blocksize;
  sc->chunksize = chunksize;
  sc->writable = true;
  CAT_TRY(fail, cat_frame_fixed_init(ctx, sc->fixed, cp, chunksize));
  sc->header_len = cat_frame_header_len(sc);
  if (path != NULL) {
    sc->path = strdup(path);
    CAT_CHECK(fail, sc->path != NULL, CATERVA_E_NOMEM, "out of memory");
    CAT_TRY(fail, cat_file_create(ctx, sc));
  }
  *out = sc;
  return CATERVA_OK;
fail:
  caterva_schunk_free(sc);
  return rc;
}

int caterva_schunk_open(caterva_ctx *ctx, const char *path, int mode, caterva_schunk **out) {
  return caterva_schunk_open_ex(ctx, path, mode, NULL, out);
}

int caterva_schunk_open_ex(caterva_ctx *ctx, const char *path, int mode,
                           const caterva_remote_opts *o, caterva_schunk **out) {
  caterva_schunk *sc = NULL;
  int rc;
  if (out == NULL) return cat_error(ctx, CATERVA_E_INVALID, "schunk_open: out is NULL");
  *out = NULL;
  CAT_CHECK(fail, path != NULL, CATERVA_E_INVALID, "schunk_open: path is NULL");
  CAT_CHECK(fail, mode == CATERVA_OPEN_READ || mode == CATERVA_OPEN_WRITE, CATERVA_E_INVALID,
            "schunk_open: unknown mode %d", mode);
  sc = cat_sc_alloc(CATERVA_STORE_CONTIGUOUS);
  CAT_CHECK(fail, sc != NULL, CATERVA_E_NOMEM, "out of memory");
  if (caterva_path_is_remote(path)) {
    sc->writable = mode == CATERVA_OPEN_WRITE; /* sparse frames in S3 only (frame_remote.c) */
    sc->path = strdup(path);
    CAT_CHECK(fail, sc->path != NULL, CATERVA_E_NOMEM, "out of memory");
    CAT_TRY(fail, cat_remote_open(ctx, sc, path, o));
    *out = sc;
    return CATERVA_OK;
  }
  CAT_TRY(fail, cat_file_open(ctx, sc, path, mode));
  *out = sc;
  return CATERVA_OK;
fail:
  caterva_schunk_free(sc);
  return rc;
}

int caterva_schunk_open_buffer(caterva_ctx *ctx, const void *frame, size_t len,
                               caterva_schunk **out) {
  caterva_schunk *sc = NULL;
  uint8_t *copy;
  int rc;
  if (out == NULL) return cat_error(ctx, CATERVA_E_INVALID, "schunk_open_buffer: out is NULL");
  *out = NULL;
  CAT_CHECK(fail, frame != NULL, CATERVA_E_INVALID, "schunk_open_buffer: frame is NULL");
  sc = cat_sc_alloc(CATERVA_STORE_MEMORY);
  CAT_CHECK(fail, sc != NULL, CATERVA_E_NOMEM, "out of memory");
  copy = malloc(len ? len : 1);
  CAT_CHECK(fail, copy != NULL, CATERVA_E_NOMEM, "out of memory");
  if (len) memcpy(copy, frame, len);
  sc->base = copy;
  sc->base_len = len;
  CAT_TRY(fail, cat_frame_parse_contiguous(ctx, sc, copy, len));
  sc->writable = true;
  sc->frame_len = -1; /* a memory store's frame is what to_buffer would produce */
  *out = sc;
  return CATERVA_OK;
fail:
  caterva_schunk_free(sc);
  return rc;
}

int caterva_schunk_save(caterva_ctx *ctx, caterva_schunk *sc, const char *path, int store) {
  if (sc == NULL || path == NULL)
    return cat_error(ctx, CATERVA_E_INVALID, "schunk_save: NULL argument");
  if (store != CATERVA_STORE_CONTIGUOUS && store != CATERVA_STORE_SPARSE)
    return cat_error(ctx, CATERVA_E_INVALID, "schunk_save: store must be a file store");
  if (caterva_path_is_remote(path)) return caterva_schunk_save_ex(ctx, sc, path, store, NULL);
  return cat_file_save(ctx, sc, path, store);
}

int caterva_schunk_to_buffer(caterva_ctx *ctx, caterva_schunk *sc, uint8_t **out, int64_t *len) {
  if (out != NULL) *out = NULL;
  if (len != NULL) *len = 0;
  if (sc == NULL || out == NULL || len == NULL)
    return cat_error(ctx, CATERVA_E_INVALID, "schunk_to_buffer: NULL argument");
  return cat_frame_to_buffer(ctx, sc, out, len);
}

/* ---- properties ------------------------------------------------------------------------ */

int64_t caterva_schunk_nchunks(const caterva_schunk *sc) { return sc ? sc->nchunks : 0; }
int32_t caterva_schunk_chunksize(const caterva_schunk *sc) { return sc ? sc->chunksize : 0; }
int caterva_schunk_typesize(const caterva_schunk *sc) { return sc ? sc->typesize : 0; }
int caterva_schunk_store(const caterva_schunk *sc) { return sc ? sc->store : 0; }
int64_t caterva_schunk_nbytes(const caterva_schunk *sc) { return sc ? sc->nbytes : 0; }
int64_t caterva_schunk_cbytes(const caterva_schunk *sc) { return sc ? sc->cbytes : 0; }
const caterva_cparams *caterva_schunk_cparams(const caterva_schunk *sc) { return sc ? &sc->cp : NULL; }

int64_t caterva_schunk_frame_len(const caterva_schunk *sc) {
  caterva_schunk *m = (caterva_schunk *)sc; /* the cache is not part of the value */
  int64_t len = -1;
  if (sc == NULL) return 0;
  if (sc->store != CATERVA_STORE_MEMORY || sc->frame_len >= 0) return sc->frame_len;
  if (m->ictx == NULL && caterva_ctx_new(1, &m->ictx) < 0) return -1;
  if (cat_frame_packed_len(m->ictx, m, &len) < 0) return -1;
  m->frame_len = len;
  return len;
}

/* ---- chunk access ------------------------------------------------------------------------ */

/* Uncompressed size chunk i must have: chunksize, or the remainder for the last one. */
static int64_t chunk_nbytes(const caterva_schunk *sc, int64_t i) {
  if (i < sc->nchunks - 1) return sc->chunksize;
  return sc->nbytes - (sc->nchunks - 1) * (int64_t)sc->chunksize;
}

static int check_index(caterva_ctx *ctx, const caterva_schunk *sc, int64_t i, int64_t n) {
  if (sc == NULL) return cat_error(ctx, CATERVA_E_INVALID, "schunk is NULL");
  if (i < 0 || i >= n)
    return cat_error(ctx, CATERVA_E_RANGE, "chunk %lld out of range (%lld chunks)", (long long)i,
                     (long long)sc->nchunks);
  return CATERVA_OK;
}

static int special_slot(int kind) { return kind == CATERVA_SPECIAL_ZERO ? 0 : kind == CATERVA_SPECIAL_NAN ? 1 : 2; }

/* A header-only chunk for a special index entry, made once per kind and size. */
static int special_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, int64_t entry,
                         const uint8_t **chunk, int32_t *cbytes) {
  int kind = (int)(((uint64_t)entry >> 56) & 0x7f);
  int64_t nb = chunk_nbytes(sc, i);
  int k = special_slot(kind), v = nb != sc->chunksize, ts = sc->typesize;
  uint8_t *buf = sc->special[k][v];
  if (!sc->special_ok[k][v]) {
    int32_t rc;
    if (ts > 255 || nb % ts != 0) ts = 1;
    rc = caterva_chunk_make_special(kind, (int32_t)nb, ts, sc->blocksize, NULL, buf,
                                    CATERVA_CHUNK_HEADER_SIZE);
    if (rc < 0)
      return cat_error(ctx, CATERVA_E_CORRUPT,
                       "chunk %lld: special kind %d impossible for typesize %d, %lld bytes",
                       (long long)i, kind, sc->typesize, (long long)nb);
    sc->special_ok[k][v] = true;
  }
  *chunk = buf;
  *cbytes = CATERVA_CHUNK_HEADER_SIZE;
  return CATERVA_OK;
}

int caterva_schunk_chunk_special(const caterva_schunk *sc, int64_t i) {
  int64_t e;
  int rc = check_index(NULL, sc, i, sc ? sc->nchunks : 0);
  if (rc < 0 || (rc = cat_sc_entry(NULL, sc, i, &e)) < 0) return rc;
  if (e >= 0) return CATERVA_SPECIAL_NONE;
  return (int)(((uint64_t)e >> 56) & 0x7f);
}

int cat_sc_stored_uniform(const caterva_schunk *sc, int64_t i, const uint8_t **value,
                          int32_t *vsize) {
  caterva_chunk_info ci;
  const uint8_t *p;
  int32_t cb;
  *value = NULL;
  *vsize = 0;
  if (!cat_file_small_chunk(sc, i, CATERVA_CHUNK_HEADER_SIZE + 255, &p, &cb) ||
      caterva_chunk_info_get(p, (size_t)cb, &ci) < 0 || ci.nbytes != chunk_nbytes(sc, i))
    return CATERVA_SPECIAL_NONE; /* (a chunk that does not read: its readers say why) */
  if (ci.special == CATERVA_SPECIAL_VALUE) {
    *value = p + CATERVA_CHUNK_HEADER_SIZE;
    *vsize = cb - CATERVA_CHUNK_HEADER_SIZE;
  }
  return ci.special;
}

/* ---- remote reads ------------------------------------------------------------------------ */

int cat_sc_is_remote(const caterva_schunk *sc) { return sc != NULL && sc->remote != NULL; }

int cat_sc_prefetch(caterva_ctx *ctx, caterva_schunk *sc, const cat_want *w, int n) {
  return sc->remote != NULL ? cat_remote_prefetch(ctx, sc, w, n) : CATERVA_OK;
}

int cat_sc_get_chunk_blocks(caterva_ctx *ctx, caterva_schunk *sc, int64_t i,
                            const int32_t *blocks, int32_t nblocks, const uint8_t **chunk,
                            int32_t *cbytes) {
  int64_t e = -1;
  int rc;
  if (sc->remote != NULL && i >= 0 && i < sc->nchunks && (rc = cat_sc_entry(ctx, sc, i, &e)) < 0)
    return rc;
  if (e < 0) return caterva_schunk_get_chunk(ctx, sc, i, chunk, cbytes);
  rc = cat_remote_chunk(ctx, sc, i, blocks, nblocks, chunk, cbytes);
  if (rc < 0) return rc;
  if (cat_le32s(*chunk + 4) != chunk_nbytes(sc, i))
    return cat_error(ctx, CATERVA_E_CORRUPT, "chunk %lld holds %d bytes, the frame says %lld",
                     (long long)i, (int)cat_le32s(*chunk + 4), (long long)chunk_nbytes(sc, i));
  cat_remote_pin(sc, i, 1);
  return CATERVA_OK;
}

void cat_sc_unpin(caterva_schunk *sc, int64_t i) {
  if (sc != NULL && sc->remote != NULL) cat_remote_pin(sc, i, -1); /* stored chunks only */
}

void caterva_schunk_remote_stats(const caterva_schunk *sc, caterva_remote_stats *st) {
  cat_remote_stats_of(sc, st);
}

int64_t caterva_schunk_index_blocks(const caterva_schunk *sc) {
  return cat_sc_index_blocks_decoded(sc);
}

int caterva_schunk_get_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i,
                             const uint8_t **chunk, int32_t *cbytes) {
  const uint8_t *p = NULL;
  uint8_t *tmp = NULL;
  int64_t e;
  int32_t cb = 0, nb;
  int rc;
  if (chunk != NULL) *chunk = NULL;
  if (cbytes != NULL) *cbytes = 0;
  CAT_CHECK(fail, chunk != NULL && cbytes != NULL, CATERVA_E_INVALID, "get_chunk: NULL output");
  CAT_TRY(fail, check_index(ctx, sc, i, sc ? sc->nchunks : 0));
  CAT_CHECK(fail, !sc->broken, CATERVA_E_IO, "schunk unusable after a failed file update");
  CAT_TRY(fail, cat_sc_entry(ctx, sc, i, &e));
  if (e < 0) {
    CAT_TRY(fail, special_chunk(ctx, sc, i, e, &p, &cb));
  } else {
    CAT_TRY(fail, cat_file_stored_chunk(ctx, sc, i, true, &p, &cb, &tmp));
    nb = cat_le32s(p + 4);
    CAT_CHECK(fail, nb == chunk_nbytes(sc, i), CATERVA_E_CORRUPT,
              "chunk %lld holds %d bytes, the frame says %lld", (long long)i, (int)nb,
              (long long)chunk_nbytes(sc, i));
  }
  CAT_CHECK(fail, tmp == NULL, CATERVA_E_NOMEM, "out of memory caching chunk %lld", (long long)i);
  *chunk = p;
  *cbytes = cb;
  return CATERVA_OK;
fail:
  free(tmp);
  return rc;
}

int32_t caterva_schunk_decompress_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i,
                                        void *dst, int32_t dstcap) {
  const uint8_t *p;
  int32_t cb;
  int rc = caterva_schunk_get_chunk(ctx, sc, i, &p, &cb);
  if (rc < 0) return rc;
  return caterva_chunk_decompress(ctx, p, (size_t)cb, dst, dstcap);
}

/* ---- chunk edits ----------------------------------------------------------------------- */

static int check_writable(caterva_ctx *ctx, const caterva_schunk *sc) {
  if (sc == NULL) return cat_error(ctx, CATERVA_E_INVALID, "schunk is NULL");
  if (!sc->writable) return cat_error(ctx, CATERVA_E_READONLY, "schunk was opened read-only");
  if (sc->broken)
    return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed file update");
  return CATERVA_OK;
}

/* Validate a chunk handed in by the caller; zero/NaN/uninit header-only chunks become
 * special index entries. */
static int classify_chunk(caterva_ctx *ctx, const void *chunk, int32_t cbytes, sc_edit *e) {
  caterva_chunk_info ci;
  int rc;
  if (chunk == NULL || cbytes < CATERVA_CHUNK_HEADER_SIZE)
    return cat_error(ctx, CATERVA_E_INVALID, "a chunk of at least %d bytes is required",
                     CATERVA_CHUNK_HEADER_SIZE);
  rc = caterva_chunk_info_get(chunk, (size_t)cbytes, &ci);
  if (rc < 0) return cat_error(ctx, rc, "chunk to store: %s", caterva_strerror(rc));
  if (ci.cbytes != cbytes)
    return cat_error(ctx, CATERVA_E_INVALID, "chunk header says %d bytes, %d given",
                     (int)ci.cbytes, (int)cbytes);
  e->nb = ci.nbytes;
  if (ci.special == CATERVA_SPECIAL_ZERO || ci.special == CATERVA_SPECIAL_NAN ||
      ci.special == CATERVA_SPECIAL_UNINIT) {
    e->special = CAT_ENTRY_SPECIAL(ci.special);
    return CATERVA_OK;
  }
  e->chunk = chunk;
  e->cbytes = cbytes;
  return CATERVA_OK;
}

/* All chunks hold chunksize bytes except the last, which may hold fewer. */
static int check_sizes(caterva_ctx *ctx, const caterva_schunk *sc, const sc_edit *e) {
  int64_t n = sc->nchunks, cs = sc->chunksize > 0 ? sc->chunksize : e->nb;
  bool at_end = e->op == EDIT_APPEND || (e->op == EDIT_INSERT && e->pos == n);
  if (e->op == EDIT_DELETE) return CATERVA_OK;
  if (e->nb <= 0 || e->nb > cs)
    return cat_error(ctx, CATERVA_E_INVALID, "chunk of %d bytes, chunksize is %lld", (int)e->nb,
                     (long long)cs);
  if (e->op == EDIT_UPDATE && e->nb != chunk_nbytes(sc, e->pos))
    return cat_error(ctx, CATERVA_E_INVALID, "chunk %lld holds %lld bytes, the new one %d",
                     (long long)e->pos, (long long)chunk_nbytes(sc, e->pos), (int)e->nb);
  if (at_end && n > 0 && chunk_nbytes(sc, n - 1) != cs)
    return cat_error(ctx, CATERVA_E_INVALID, "cannot add a chunk after a short last chunk");
  if (e->op == EDIT_INSERT && !at_end && e->nb != cs)
    return cat_error(ctx, CATERVA_E_INVALID, "only the last chunk may be shorter than chunksize");
  return CATERVA_OK;
}

/* memcpy that accepts empty ranges with NULL pointers (a table shrinking to nothing). */
static void copy_bytes(uint8_t *d, const uint8_t *s, size_t n) {
  if (n > 0) memcpy(d, s, n);
}

/* Copy src (n items) into dst (nn items) with the slot at pos inserted, kept or removed. */
static void shift_copy(void *dst, const void *src, int64_t n, int64_t pos, int op, size_t sz) {
  uint8_t *d = dst;
  const uint8_t *s = src;
  if (n == 0) return;
  if (op == EDIT_UPDATE) {
    copy_bytes(d, s, (size_t)n * sz);
  } else if (op == EDIT_DELETE) {
    copy_bytes(d, s, (size_t)pos * sz);
    copy_bytes(d + (size_t)pos * sz, s + (size_t)(pos + 1) * sz, (size_t)(n - pos - 1) * sz);
  } else {
    copy_bytes(d, s, (size_t)pos * sz);
    copy_bytes(d + (size_t)(pos + 1) * sz, s + (size_t)pos * sz, (size_t)(n - pos) * sz);
  }
}

/* The new index and data arrays of an edit. */
typedef struct sc_next {
  int64_t *entries;
  uint8_t **data;
  int64_t n, nbytes;
  uint8_t *copy;       /* owned copy of the new chunk, kept in data[pos] */
  int64_t removed_cb;  /* stored bytes of the chunk replaced or deleted */
} sc_next;

static int next_arrays(caterva_ctx *ctx, caterva_schunk *sc, const sc_edit *e, sc_next *nx) {
  int64_t n = sc->nchunks;
  /* memory stores own their chunks; file stores read them back from the file on demand */
  bool want_data = sc->data != NULL || (e->chunk != NULL && sc->store == CATERVA_STORE_MEMORY);
  nx->n = n + (e->op == EDIT_APPEND || e->op == EDIT_INSERT) - (e->op == EDIT_DELETE);
  if (nx->n > 0) {
    nx->entries = malloc((size_t)nx->n * sizeof *nx->entries);
    nx->data = want_data ? calloc((size_t)nx->n, sizeof *nx->data) : NULL;
    if (nx->entries == NULL || (want_data && nx->data == NULL))
      return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  }
  shift_copy(nx->entries, sc->entries, n, e->pos, e->op, sizeof *nx->entries);
  if (nx->data != NULL && sc->data != NULL)
    shift_copy(nx->data, sc->data, n, e->pos, e->op, sizeof *nx->data);
  if (e->op == EDIT_DELETE) return CATERVA_OK;
  nx->entries[e->pos] = e->special;
  if (nx->data != NULL) nx->data[e->pos] = NULL;
  if (e->chunk != NULL && nx->data != NULL) {
    nx->copy = malloc((size_t)e->cbytes);
    if (nx->copy == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    memcpy(nx->copy, e->chunk, (size_t)e->cbytes);
    nx->data[e->pos] = nx->copy;
  }
  return CATERVA_OK;
}

static int64_t edit_nbytes(const caterva_schunk *sc, const sc_edit *e) {
  int64_t old = (e->op == EDIT_UPDATE || e->op == EDIT_DELETE) ? chunk_nbytes(sc, e->pos) : 0;
  return sc->nbytes - old + (e->op == EDIT_DELETE ? 0 : e->nb);
}

/* Stored size of chunk i (0 for specials and unreadable chunks). */
static int64_t stored_cbytes(caterva_ctx *ctx, caterva_schunk *sc, int64_t i) {
  const uint8_t *p;
  uint8_t *tmp = NULL;
  int32_t cb = 0;
  char keep[CAT_ERRMSG_SIZE];
  if (sc->entries[i] < 0) return 0;
  snprintf(keep, sizeof keep, "%s", ctx != NULL ? ctx->errmsg : "");
  if (cat_file_stored_chunk(ctx, sc, i, false, &p, &cb, &tmp) < 0) cb = 0;
  free(tmp);
  if (ctx != NULL) snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s", keep);
  return cb;
}

/* Stored size of the chunk an edit removes. */
static int64_t removed_cbytes(caterva_ctx *ctx, caterva_schunk *sc, const sc_edit *e) {
  if (e->op != EDIT_UPDATE && e->op != EDIT_DELETE) return 0;
  return stored_cbytes(ctx, sc, e->pos);
}

static void invalidate_caches(caterva_schunk *sc) {
  memset(sc->special_ok, 0, sizeof sc->special_ok);
  if (sc->store == CATERVA_STORE_MEMORY) sc->frame_len = -1;
}

/* Compact a contiguous file once its dead bytes outweigh the live ones (amortised). */
static void maybe_compact(caterva_ctx *ctx, caterva_schunk *sc) {
  char keep[CAT_ERRMSG_SIZE];
  if (sc->store != CATERVA_STORE_CONTIGUOUS || sc->txn != NULL || sc->no_autocompact ||
      sc->dead <= (1 << 20) ||
      sc->dead <= sc->section - sc->dead)
    return;
  snprintf(keep, sizeof keep, "%s", ctx != NULL ? ctx->errmsg : "");
  (void)cat_file_rewrite(ctx, sc); /* on failure the file stays valid, just larger */
  if (ctx != NULL) snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s", keep);
}

/* Install the new arrays after a successful commit. */
static void edit_install(caterva_schunk *sc, const sc_edit *e, sc_next *nx, int64_t old_entry) {
  if (sc->data != NULL && (e->op == EDIT_UPDATE || e->op == EDIT_DELETE))
    cat_file_retire_bytes(sc, sc->data[e->pos]);
  free(sc->entries);
  free(sc->data);
  sc->entries = nx->entries;
  sc->data = nx->data;
  sc->nchunks = nx->n;
  sc->nbytes = nx->nbytes;
  if (sc->store != CATERVA_STORE_CONTIGUOUS)
    sc->cbytes += (e->chunk != NULL ? e->cbytes : 0) - nx->removed_cb;
  else
    sc->dead += nx->removed_cb;
  /* A transaction keeps replaced files until it commits (a rollback needs them). */
  if (sc->store == CATERVA_STORE_SPARSE && old_entry >= 0 && sc->txn == NULL)
    cat_file_unlink_chunk(sc, old_entry);
  invalidate_caches(sc);
}

void cat_sc_set_edit_hook(caterva_schunk *sc, cat_edit_hook fn, cat_remap_hook remap,
                          void *arg) {
  sc->edit_hook = fn;
  sc->remap_hook = remap;
  sc->edit_arg = arg;
}

/* Tell the hook what an installed edit changed. */
static void notify_edit(caterva_ctx *ctx, caterva_schunk *sc, const sc_edit *e) {
  int op = e->op == EDIT_DELETE ? CAT_EDIT_DELETE
           : e->op == EDIT_UPDATE ? CAT_EDIT_UPDATE : CAT_EDIT_INSERT;
  int special = e->chunk == NULL && e->op != EDIT_DELETE ? (int)((uint64_t)e->special >> 56 & 0x7F)
                                                         : CATERVA_SPECIAL_NONE;
  if (sc->edit_hook != NULL)
    sc->edit_hook(sc->edit_arg, ctx, op, e->pos, e->chunk, e->cbytes, special);
}

/* Room for one more slot in an index-sized array (geometric growth, so that appends are
 * amortised O(1)); p holds n slots of sz bytes. */
static int grow_slots(void **p, int64_t n, size_t sz) {
  void *q;
  size_t want = (size_t)(n + 1) * sz, cap = *p != NULL ? malloc_usable_size(*p) : 0;
  if (want <= cap) return CATERVA_OK;
  q = realloc(*p, (size_t)(n < 32 ? 64 : 2 * n) * sz);
  if (q == NULL) return CATERVA_E_NOMEM;
  *p = q;
  return CATERVA_OK;
}

/* An update or an append inside a transaction (or of a memory store) changes one slot: the
 * transaction's mark already holds the index to roll back to, so the slot is written in
 * place instead of copying the whole index per edit (a growth that rewrote every edge chunk
 * of a 200,000-chunk grid, and the creation of a filled one, copied the index once per
 * chunk: quadratic, found by fuzz_sql as timeouts). Nothing changes when a step fails. */
static int edit_in_place(caterva_ctx *ctx, caterva_schunk *sc, const sc_edit *e) {
  int64_t pos = e->pos, old_entry = -1, entry = e->special, removed = 0;
  bool append = e->op == EDIT_APPEND;
  uint8_t *copy = NULL;
  int rc;
  CAT_TRY(fail, check_sizes(ctx, sc, e));
  if (!append) {
    old_entry = sc->entries[pos];
    removed = removed_cbytes(ctx, sc, e);
  }
  if (e->chunk != NULL && sc->store == CATERVA_STORE_MEMORY && sc->data == NULL &&
      sc->nchunks > 0) {
    sc->data = calloc((size_t)sc->nchunks, sizeof *sc->data);
    CAT_CHECK(fail, sc->data != NULL, CATERVA_E_NOMEM, "out of memory");
  }
  if (append) {
    CAT_CHECK(fail, grow_slots((void **)&sc->entries, sc->nchunks, sizeof *sc->entries) == 0,
              CATERVA_E_NOMEM, "out of memory");
    if (sc->data != NULL || (e->chunk != NULL && sc->store == CATERVA_STORE_MEMORY))
      CAT_CHECK(fail, grow_slots((void **)&sc->data, sc->nchunks, sizeof *sc->data) == 0,
                CATERVA_E_NOMEM, "out of memory");
  }
  if (e->chunk != NULL && sc->data != NULL) {
    copy = malloc((size_t)e->cbytes);
    CAT_CHECK(fail, copy != NULL, CATERVA_E_NOMEM, "out of memory");
    memcpy(copy, e->chunk, (size_t)e->cbytes);
  }
  if (sc->chunksize == 0) sc->chunksize = e->nb;
  if (sc->blocksize == 0 && e->chunk != NULL) sc->blocksize = cat_le32s(e->chunk + 8);
  if (sc->store != CATERVA_STORE_MEMORY && e->chunk != NULL)
    CAT_TRY(fail, cat_file_put_chunk(ctx, sc, e->chunk, e->cbytes, &entry));
  if (sc->data != NULL) {
    if (!append) cat_file_retire_bytes(sc, sc->data[pos]);
    sc->data[pos] = copy;
  }
  sc->entries[pos] = entry;
  if (append) {
    sc->nchunks++;
    sc->nbytes += e->nb;
  }
  if (sc->store != CATERVA_STORE_CONTIGUOUS)
    sc->cbytes += (e->chunk != NULL ? e->cbytes : 0) - removed;
  else
    sc->dead += removed;
  if (sc->store == CATERVA_STORE_SPARSE && old_entry >= 0 && sc->txn == NULL)
    cat_file_unlink_chunk(sc, old_entry);
  invalidate_caches(sc);
  notify_edit(ctx, sc, e);
  return CATERVA_OK;
fail:
  free(copy);
  return rc;
}

static int apply_edit(caterva_ctx *ctx, caterva_schunk *sc, const sc_edit *e) {
  sc_next nx;
  int64_t old_entry = -1, delta;
  int32_t old_cs = sc->chunksize, old_bs = sc->blocksize;
  bool put = false;
  int rc;
  memset(&nx, 0, sizeof nx);
  if ((e->op == EDIT_UPDATE || e->op == EDIT_APPEND) &&
      (sc->txn != NULL || sc->store == CATERVA_STORE_MEMORY))
    return edit_in_place(ctx, sc, e);
  CAT_TRY(fail, check_sizes(ctx, sc, e));
  CAT_TRY(fail, next_arrays(ctx, sc, e, &nx));
  nx.nbytes = edit_nbytes(sc, e);
  nx.removed_cb = removed_cbytes(ctx, sc, e);
  if (e->op == EDIT_UPDATE || e->op == EDIT_DELETE) old_entry = sc->entries[e->pos];
  /* the header records the first chunk's geometry when the schunk had none */
  if (sc->chunksize == 0) sc->chunksize = e->nb;
  if (sc->blocksize == 0 && e->chunk != NULL) sc->blocksize = cat_le32s(e->chunk + 8);
  delta = (e->chunk != NULL ? e->cbytes : 0) - nx.removed_cb;
  if (sc->store != CATERVA_STORE_MEMORY && e->chunk != NULL) {
    CAT_TRY(fail, cat_file_put_chunk(ctx, sc, e->chunk, e->cbytes, &nx.entries[e->pos]));
    put = true;
  }
  /* Inside a transaction the new index stays in memory until caterva_schunk_commit. */
  if (sc->store != CATERVA_STORE_MEMORY && sc->txn == NULL)
    CAT_TRY(fail, cat_file_commit(ctx, sc, nx.entries, nx.n, nx.nbytes, sc->cbytes + delta,
                                  false, true));
  edit_install(sc, e, &nx, old_entry);
  notify_edit(ctx, sc, e);
  maybe_compact(ctx, sc);
  return CATERVA_OK;
fail:
  if (put) cat_file_drop_chunk(sc, nx.entries[e->pos]);
  sc->chunksize = old_cs;
  sc->blocksize = old_bs;
  free(nx.copy);
  free(nx.entries);
  free(nx.data);
  return rc;
}

static bool all_zero(const uint8_t *p, size_t n) {
  return n == 0 || (p[0] == 0 && memcmp(p, p + 1, n - 1) == 0);
}

int64_t caterva_schunk_append_buffer(caterva_ctx *ctx, caterva_schunk *sc, const void *src,
                                     int32_t nbytes) {
  sc_edit e = {EDIT_APPEND, 0, NULL, 0, 0, nbytes};
  uint8_t *buf = NULL;
  int rc = check_writable(ctx, sc);
  if (rc < 0) return rc;
  CAT_CHECK(leave, src != NULL && nbytes > 0 && nbytes <= CATERVA_CHUNK_MAX_NBYTES,
            CATERVA_E_INVALID, "append_buffer: bad source of %d bytes", (int)nbytes);
  e.pos = sc->nchunks;
  /* Refuse a wrong size before spending a compression on it. */
  CAT_TRY(leave, check_sizes(ctx, sc, &e));
  if (all_zero(src, (size_t)nbytes)) {
    e.special = CAT_ENTRY_SPECIAL(CATERVA_SPECIAL_ZERO);
  } else {
    int32_t cb;
    buf = malloc((size_t)nbytes + CATERVA_CHUNK_MAX_OVERHEAD);
    CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
    cb = caterva_chunk_compress(ctx, &sc->cp, src, nbytes, buf,
                                nbytes + CATERVA_CHUNK_MAX_OVERHEAD);
    CAT_TRY(leave, cb);
    CAT_TRY(leave, classify_chunk(ctx, buf, cb, &e));
  }
  rc = apply_edit(ctx, sc, &e);
leave:
  free(buf);
  return rc < 0 ? rc : sc->nchunks;
}

/* Shared body of append/update/insert of a caller's compressed chunk. */
static int chunk_edit(caterva_ctx *ctx, caterva_schunk *sc, int op, int64_t i, const void *chunk,
                      int32_t cbytes) {
  sc_edit e = {op, i, NULL, 0, 0, 0};
  int rc = check_writable(ctx, sc);
  if (rc < 0) return rc;
  if (op == EDIT_APPEND) e.pos = sc->nchunks;
  rc = check_index(ctx, sc, e.pos, sc->nchunks + (op == EDIT_APPEND || op == EDIT_INSERT));
  if (rc < 0) return rc;
  if (op != EDIT_DELETE) {
    rc = classify_chunk(ctx, chunk, cbytes, &e);
    if (rc < 0) return rc;
  }
  return apply_edit(ctx, sc, &e);
}

int64_t caterva_schunk_append_chunk(caterva_ctx *ctx, caterva_schunk *sc, const void *chunk,
                                    int32_t cbytes) {
  int rc = chunk_edit(ctx, sc, EDIT_APPEND, 0, chunk, cbytes);
  return rc < 0 ? rc : sc->nchunks;
}

int caterva_schunk_update_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i,
                                const void *chunk, int32_t cbytes) {
  return chunk_edit(ctx, sc, EDIT_UPDATE, i, chunk, cbytes);
}

int caterva_schunk_insert_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i,
                                const void *chunk, int32_t cbytes) {
  return chunk_edit(ctx, sc, EDIT_INSERT, i, chunk, cbytes);
}

int caterva_schunk_delete_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i) {
  return chunk_edit(ctx, sc, EDIT_DELETE, i, NULL, 0);
}

/* ---- renumbering in one edit (resize) ---------------------------------------------------- */

/* A pending cat_sc_remap. */
typedef struct sc_remap {
  const int64_t *map;
  int64_t n;
  sc_edit fill;       /* the new chunks: a special entry, or stored bytes (fill.chunk) */
  uint8_t *gone;      /* nchunks flags: old chunk removed */
  sc_next nx;         /* new index, data, nbytes, removed_cb */
  int64_t built;      /* new positions filled in so far */
  int64_t added_cb;   /* stored bytes of the new chunks */
  bool put;           /* file store: the stored fill chunks are written */
} sc_remap;

/* map must name old chunks in increasing order, and a short last chunk must stay last. */
static int remap_check(caterva_ctx *ctx, const caterva_schunk *sc, sc_remap *r) {
  int64_t last = -1, nold = sc->nchunks;
  bool short_last = nold > 0 && chunk_nbytes(sc, nold - 1) != sc->chunksize;
  if (r->fill.nb > 0 && sc->chunksize > 0 && r->fill.nb != sc->chunksize)
    return cat_error(ctx, CATERVA_E_INVALID, "remap: fill chunk of %d bytes, chunksize is %d",
                     (int)r->fill.nb, (int)sc->chunksize);
  for (int64_t i = 0; i < r->n; i++) {
    int64_t m = r->map[i];
    if (m < 0 && r->fill.nb == 0)
      return cat_error(ctx, CATERVA_E_INVALID, "remap: new position %lld needs a fill chunk",
                       (long long)i);
    if (m < 0) continue;
    if (m >= nold || m <= last)
      return cat_error(ctx, CATERVA_E_INVALID,
                       "remap: position %lld names chunk %lld (%lld chunks, in increasing order)",
                       (long long)i, (long long)m, (long long)nold);
    if (short_last && m == nold - 1 && i != r->n - 1)
      return cat_error(ctx, CATERVA_E_INVALID, "remap: only the last chunk may be shorter");
    last = m;
  }
  return CATERVA_OK;
}

/* A new position of a memory store holding a fill chunk: a special entry or an owned copy. */
static int remap_fill_memory(caterva_ctx *ctx, sc_remap *r, int64_t i) {
  sc_next *nx = &r->nx;
  nx->entries[i] = r->fill.special;
  if (r->fill.chunk == NULL) return CATERVA_OK;
  nx->data[i] = malloc((size_t)r->fill.cbytes);
  if (nx->data[i] == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  memcpy(nx->data[i], r->fill.chunk, (size_t)r->fill.cbytes);
  return CATERVA_OK;
}

/* The new positions of a file store that hold a stored fill chunk, written in one call. */
static int remap_fill_file(caterva_ctx *ctx, caterva_schunk *sc, sc_remap *r) {
  int rc = cat_file_put_copies(ctx, sc, r->fill.chunk, r->fill.cbytes, r->map, r->n,
                               r->nx.entries);
  if (rc >= 0) r->put = true;
  return rc;
}

/* The new index (and data) in r->nx, and which old chunks go. */
static int remap_build(caterva_ctx *ctx, caterva_schunk *sc, sc_remap *r) {
  sc_next *nx = &r->nx;
  bool want_data = sc->data != NULL || (r->fill.chunk != NULL && sc->store == CATERVA_STORE_MEMORY);
  nx->n = r->n;
  if (sc->nchunks > 0) r->gone = malloc((size_t)sc->nchunks);
  if (r->n > 0) {
    nx->entries = malloc((size_t)r->n * sizeof *nx->entries);
    nx->data = want_data ? calloc((size_t)r->n, sizeof *nx->data) : NULL;
  }
  if ((sc->nchunks > 0 && r->gone == NULL) ||
      (r->n > 0 && (nx->entries == NULL || (want_data && nx->data == NULL))))
    return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  if (sc->nchunks > 0) memset(r->gone, 1, (size_t)sc->nchunks);
  for (; r->built < r->n; r->built++) {
    int64_t i = r->built, m = r->map[i];
    if (m < 0) {
      int rc = sc->store == CATERVA_STORE_MEMORY ? remap_fill_memory(ctx, r, i) : CATERVA_OK;
      nx->entries[i] = r->fill.special;
      nx->nbytes += r->fill.nb;
      if (r->fill.chunk != NULL) r->added_cb += r->fill.cbytes;
      if (rc < 0) return rc;
      continue;
    }
    r->gone[m] = 0;
    nx->entries[i] = sc->entries[m];
    nx->nbytes += chunk_nbytes(sc, m);
    if (nx->data != NULL && sc->data != NULL) nx->data[i] = sc->data[m];
  }
  if (sc->store != CATERVA_STORE_MEMORY && r->fill.chunk != NULL && r->added_cb > 0) {
    int rc = remap_fill_file(ctx, sc, r);
    if (rc < 0) return rc;
  }
  for (int64_t j = 0; j < sc->nchunks; j++)
    if (r->gone[j]) nx->removed_cb += stored_cbytes(ctx, sc, j);
  return CATERVA_OK;
}

/* Undo what remap_build did: the owned copies of the positions before r->built, or the
 * stored fill chunks (sparse: each file, the last first; contiguous: the copies lie in
 * position order, so cutting the file at the first one removes them all). */
static void remap_unbuild(caterva_schunk *sc, sc_remap *r) {
  int64_t first = -1;
  for (int64_t i = 0; i < r->n && r->fill.chunk != NULL; i++) {
    if (r->map[i] >= 0) continue;
    if (sc->store == CATERVA_STORE_MEMORY && i < r->built) free(r->nx.data[i]);
    if (first < 0) first = i;
  }
  if (r->put && sc->store == CATERVA_STORE_CONTIGUOUS)
    cat_file_drop_chunk(sc, r->nx.entries[first]);
  for (int64_t i = r->n - 1; r->put && sc->store == CATERVA_STORE_SPARSE && i >= 0; i--)
    if (r->map[i] < 0) cat_file_drop_chunk(sc, r->nx.entries[i]);
  free(r->nx.entries);
  free(r->nx.data);
}

/* Replace the old index by the new one; the removed chunks' bytes and files go. */
static void remap_install(caterva_schunk *sc, sc_remap *r) {
  for (int64_t j = 0; j < sc->nchunks; j++) {
    if (!r->gone[j]) continue;
    if (sc->data != NULL) cat_file_retire_bytes(sc, sc->data[j]);
    /* A transaction keeps replaced files until it commits (a rollback needs them). */
    if (sc->store == CATERVA_STORE_SPARSE && sc->entries[j] >= 0 && sc->txn == NULL)
      cat_file_unlink_chunk(sc, sc->entries[j]);
  }
  free(sc->entries);
  free(sc->data);
  sc->entries = r->nx.entries;
  sc->data = r->nx.data;
  sc->nchunks = r->nx.n;
  sc->nbytes = r->nx.nbytes;
  if (sc->store != CATERVA_STORE_CONTIGUOUS)
    sc->cbytes += r->added_cb - r->nx.removed_cb;
  else
    sc->dead += r->nx.removed_cb;
  invalidate_caches(sc);
}

int cat_sc_remap(caterva_ctx *ctx, caterva_schunk *sc, const int64_t *map, int64_t n,
                 const void *fill, int32_t fill_bytes) {
  sc_remap r;
  int32_t old_cs = sc != NULL ? sc->chunksize : 0, old_bs = sc != NULL ? sc->blocksize : 0;
  int rc = check_writable(ctx, sc);
  memset(&r, 0, sizeof r);
  if (rc < 0) return rc;
  CAT_CHECK(fail, n >= 0 && (map != NULL || n == 0), CATERVA_E_INVALID, "remap: no map");
  r.map = map;
  r.n = n;
  if (fill != NULL) CAT_TRY(fail, classify_chunk(ctx, fill, fill_bytes, &r.fill));
  CAT_TRY(fail, remap_check(ctx, sc, &r));
  if (sc->chunksize == 0) sc->chunksize = r.fill.nb;
  if (sc->blocksize == 0 && r.fill.chunk != NULL) sc->blocksize = cat_le32s(r.fill.chunk + 8);
  CAT_TRY(fail, remap_build(ctx, sc, &r));
  if (sc->store != CATERVA_STORE_MEMORY && sc->txn == NULL)
    CAT_TRY(fail, cat_file_commit(ctx, sc, r.nx.entries, n, r.nx.nbytes,
                                  sc->cbytes + r.added_cb - r.nx.removed_cb, false, true));
  remap_install(sc, &r);
  free(r.gone);
  if (sc->remap_hook != NULL)
    sc->remap_hook(sc->edit_arg, ctx, map, n, r.fill.chunk, r.fill.cbytes,
                   r.fill.chunk == NULL ? (int)((uint64_t)r.fill.special >> 56 & 0x7F)
                                        : CATERVA_SPECIAL_NONE);
  maybe_compact(ctx, sc);
  return CATERVA_OK;
fail:
  if (sc != NULL) {
    remap_unbuild(sc, &r);
    sc->chunksize = old_cs;
    sc->blocksize = old_bs;
  }
  free(r.gone);
  return rc;
}

/* ---- metalayers ------------------------------------------------------------------------- */

/* Make a header or trailer change durable. meta_changed: metalayer bytes changed. */
static int commit_state(caterva_ctx *ctx, caterva_schunk *sc, bool meta_changed) {
  invalidate_caches(sc);
  if (sc->store == CATERVA_STORE_MEMORY) return CATERVA_OK;
  if (sc->txn != NULL) return cat_txn_note_change(sc, meta_changed);
  if (sc->store == CATERVA_STORE_CONTIGUOUS && meta_changed &&
      (cat_frame_header_len(sc) != sc->header_len || sc->header_len > CAT_ATOMIC_HEADER_MAX))
    return cat_file_rewrite(ctx, sc);
  return cat_file_commit(ctx, sc, sc->entries, sc->nchunks, sc->nbytes, sc->cbytes,
                         meta_changed, true);
}

static int check_name(caterva_ctx *ctx, const char *name) {
  size_t n = name != NULL ? strlen(name) : 0;
  if (n == 0 || n > CATERVA_METALAYER_NAME_MAX)
    return cat_error(ctx, CATERVA_E_INVALID, "metalayer names have 1 to %d bytes",
                     CATERVA_METALAYER_NAME_MAX);
  return CATERVA_OK;
}

static int find_meta(const caterva_schunk *sc, const char *name) {
  for (int k = 0; sc != NULL && name != NULL && k < sc->nmeta; k++)
    if (strcmp(sc->meta[k].name, name) == 0) return k;
  return -1;
}

int caterva_schunk_meta_count(const caterva_schunk *sc) { return sc ? sc->nmeta : 0; }

const char *caterva_schunk_meta_name(const caterva_schunk *sc, int k) {
  return sc != NULL && k >= 0 && k < sc->nmeta ? sc->meta[k].name : NULL;
}

int caterva_schunk_meta_get(const caterva_schunk *sc, const char *name, const uint8_t **content,
                            int32_t *len) {
  int k = find_meta(sc, name);
  if (content != NULL) *content = NULL;
  if (len != NULL) *len = 0;
  if (content == NULL || len == NULL) return CATERVA_E_INVALID;
  if (k < 0) return CATERVA_E_NOTFOUND;
  *content = sc->meta[k].content;
  *len = sc->meta[k].len;
  return CATERVA_OK;
}

int caterva_schunk_meta_add(caterva_ctx *ctx, caterva_schunk *sc, const char *name,
                            const void *content, int32_t len) {
  cat_meta *m;
  int rc = check_writable(ctx, sc);
  if (rc < 0) return rc;
  CAT_TRY(fail, check_name(ctx, name));
  CAT_CHECK(fail, len >= 0 && (content != NULL || len == 0), CATERVA_E_INVALID,
            "meta_add: bad content");
  CAT_CHECK(fail, sc->nchunks == 0, CATERVA_E_INVALID,
            "metalayers can only be added before the first chunk");
  CAT_CHECK(fail, find_meta(sc, name) < 0, CATERVA_E_EXISTS, "metalayer '%s' exists", name);
  CAT_CHECK(fail, sc->nmeta < CATERVA_MAX_METALAYERS, CATERVA_E_INVALID,
            "at most %d metalayers", CATERVA_MAX_METALAYERS);
  m = &sc->meta[sc->nmeta];
  m->content = malloc(len ? (size_t)len : 1);
  CAT_CHECK(fail, m->content != NULL, CATERVA_E_NOMEM, "out of memory");
  if (len) memcpy(m->content, content, (size_t)len);
  m->len = len;
  snprintf(m->name, sizeof m->name, "%s", name);
  sc->nmeta++;
  rc = commit_state(ctx, sc, true);
  if (rc < 0) {
    sc->nmeta--;
    free(m->content);
    memset(m, 0, sizeof *m);
  }
fail:
  return rc;
}

int caterva_schunk_meta_update(caterva_ctx *ctx, caterva_schunk *sc, const char *name,
                               const void *content, int32_t len) {
  uint8_t *old = NULL;
  cat_meta *m;
  int k, rc = check_writable(ctx, sc);
  if (rc < 0) return rc;
  k = find_meta(sc, name);
  CAT_CHECK(leave, k >= 0, CATERVA_E_NOTFOUND, "no metalayer '%s'", name ? name : "(null)");
  m = &sc->meta[k];
  CAT_CHECK(leave, len == m->len && (content != NULL || len == 0), CATERVA_E_INVALID,
            "metalayer '%s' holds %d bytes; updates must keep the length", name, (int)m->len);
  old = malloc(len ? (size_t)len : 1);
  CAT_CHECK(leave, old != NULL, CATERVA_E_NOMEM, "out of memory");
  if (len) {
    memcpy(old, m->content, (size_t)len);
    memcpy(m->content, content, (size_t)len);
  }
  rc = commit_state(ctx, sc, true);
  if (rc < 0 && len) memcpy(m->content, old, (size_t)len);
leave:
  free(old);
  return rc;
}

/* ---- variable-length metalayers ---------------------------------------------------------- */

static int find_vlmeta(const caterva_schunk *sc, const char *name) {
  for (int k = 0; sc != NULL && name != NULL && k < sc->nvlmeta; k++)
    if (strcmp(sc->vlmeta[k].name, name) == 0) return k;
  return -1;
}

int caterva_schunk_vlmeta_count(const caterva_schunk *sc) { return sc ? sc->nvlmeta : 0; }

const char *caterva_schunk_vlmeta_name(const caterva_schunk *sc, int k) {
  return sc != NULL && k >= 0 && k < sc->nvlmeta ? sc->vlmeta[k].name : NULL;
}

int caterva_schunk_vlmeta_get(caterva_ctx *ctx, caterva_schunk *sc, const char *name,
                              uint8_t **content, int32_t *len) {
  caterva_chunk_info ci;
  uint8_t *buf = NULL;
  cat_vlmeta *v;
  int k, rc;
  if (content != NULL) *content = NULL;
  if (len != NULL) *len = 0;
  CAT_CHECK(fail, content != NULL && len != NULL, CATERVA_E_INVALID, "vlmeta_get: NULL output");
  k = find_vlmeta(sc, name);
  CAT_CHECK(fail, k >= 0, CATERVA_E_NOTFOUND, "no vlmetalayer '%s'", name ? name : "(null)");
  v = &sc->vlmeta[k];
  if (v->lazy) CAT_TRY(fail, cat_remote_bytes(ctx, sc, v->chunk, v->cbytes, NULL, -1));
  rc = caterva_chunk_info_get(v->chunk, (size_t)v->cbytes, &ci);
  CAT_CHECK(fail, rc >= 0, rc, "vlmetalayer '%s': %s chunk", name,
            rc == CATERVA_E_UNSUPPORTED ? "unsupported" : "malformed");
  CAT_CHECK(fail, ci.nbytes <= CAT_VLMETA_MAX, CATERVA_E_UNSUPPORTED,
            "vlmetalayer '%s' of %d bytes is too large", name, (int)ci.nbytes);
  buf = malloc(ci.nbytes ? (size_t)ci.nbytes : 1);
  CAT_CHECK(fail, buf != NULL, CATERVA_E_NOMEM, "out of memory");
  rc = caterva_chunk_decompress(ctx, v->chunk, (size_t)v->cbytes, buf, ci.nbytes);
  if (rc < 0) {
    rc = cat_wrap_error(ctx, rc, "vlmetalayer");
    goto fail;
  }
  *content = buf;
  *len = ci.nbytes;
  return CATERVA_OK;
fail:
  free(buf);
  return rc;
}

/* Replace the vlmetalayer list with `next` (n items), commit, and keep whichever list
 * survives; items of the losing list that are not shared are released. */
static int vlmeta_swap(caterva_ctx *ctx, caterva_schunk *sc, cat_vlmeta *next, int n,
                       cat_vlmeta *gone) {
  cat_vlmeta *old = sc->vlmeta;
  int oldn = sc->nvlmeta, rc;
  sc->vlmeta = next;
  sc->nvlmeta = n;
  rc = commit_state(ctx, sc, false);
  if (rc < 0) {
    sc->vlmeta = old;
    sc->nvlmeta = oldn;
    free(next);
    return rc;
  }
  if (gone != NULL) free_vlmeta_items(gone, 1);
  free(old);
  return CATERVA_OK;
}

bool cat_sc_vlmeta_is_lazy(const caterva_schunk *sc, const char *name) {
  int k = find_vlmeta(sc, name);
  return k >= 0 && sc->vlmeta[k].lazy;
}

bool cat_sc_vlmeta_is_mapped(const caterva_schunk *sc, const char *name) {
  int k = find_vlmeta(sc, name);
  return k >= 0 && sc->vlmeta[k].mapped;
}

int cat_sc_vlmeta_chunk(const caterva_schunk *sc, const char *name, const uint8_t **chunk,
                        int32_t *cbytes) {
  int k = find_vlmeta(sc, name);
  if (k < 0) return CATERVA_E_NOTFOUND;
  *chunk = sc->vlmeta[k].chunk;
  *cbytes = sc->vlmeta[k].cbytes;
  return CATERVA_OK;
}

int caterva_schunk_vlmeta_set(caterva_ctx *ctx, caterva_schunk *sc, const char *name,
                              const void *content, int32_t len) {
  return cat_sc_vlmeta_set_max(ctx, sc, name, content, len, CAT_VLMETA_MAX);
}

/* Put item as vlmetalayer k (k < 0: a new one) and commit; item's parts are owned by the
 * list on success and freed on failure. */
static int vlmeta_install(caterva_ctx *ctx, caterva_schunk *sc, int k, cat_vlmeta *item) {
  cat_vlmeta gone, *next = NULL;
  int n = sc->nvlmeta + (k < 0), rc = CATERVA_OK;
  next = malloc((size_t)n * sizeof *next);
  CAT_CHECK(fail, next != NULL, CATERVA_E_NOMEM, "out of memory");
  if (sc->nvlmeta) memcpy(next, sc->vlmeta, (size_t)sc->nvlmeta * sizeof *next);
  if (k >= 0) gone = sc->vlmeta[k];
  next[k >= 0 ? k : n - 1] = *item;
  rc = vlmeta_swap(ctx, sc, next, n, k >= 0 ? &gone : NULL); /* frees next on failure */
  if (rc >= 0) return CATERVA_OK;
  next = NULL;
fail:
  free(next);
  free(item->name);
  free(item->chunk);
  free(item->raw);
  return rc;
}

/* The slot of a vlmetalayer about to be set: its index, or -1 for a new one when there is
 * room; negative error otherwise. */
static int vlmeta_slot(caterva_ctx *ctx, caterva_schunk *sc, const char *name, int *k) {
  int rc = check_writable(ctx, sc);
  if (rc < 0) return rc;
  rc = check_name(ctx, name);
  if (rc < 0) return rc;
  *k = find_vlmeta(sc, name);
  if (*k < 0 && sc->nvlmeta >= CATERVA_MAX_VLMETALAYERS)
    return cat_error(ctx, CATERVA_E_INVALID, "at most %d vlmetalayers", CATERVA_MAX_VLMETALAYERS);
  return CATERVA_OK;
}

int cat_sc_vlmeta_set_max(caterva_ctx *ctx, caterva_schunk *sc, const char *name,
                          const void *content, int32_t len, int32_t max) {
  cat_vlmeta item = {NULL, NULL, 0, NULL, 0, false, false};
  int k, rc = vlmeta_slot(ctx, sc, name, &k);
  if (rc < 0) return rc;
  CAT_CHECK(fail, len >= 0 && len <= max && (content != NULL || len == 0),
            CATERVA_E_INVALID, "vlmeta_set: content must have 0 to %d bytes", (int)max);
  item.name = strdup(name);
  CAT_CHECK(fail, item.name != NULL, CATERVA_E_NOMEM, "out of memory");
  if (k >= 0) /* only the blocks that changed are compressed again */
    CAT_TRY(fail, cat_frame_vlmeta_recompress(ctx, sc->vlmeta[k].chunk, sc->vlmeta[k].cbytes,
                                              sc->vlmeta[k].raw, sc->vlmeta[k].rawlen, content,
                                              len, &item.chunk, &item.cbytes));
  else
    CAT_TRY(fail, cat_frame_vlmeta_compress(ctx, content, len, &item.chunk, &item.cbytes));
  /* large contents are kept decoded beside their chunk for the next set (statistics records
   * rewritten every commit); without memory, the next set decodes the chunk instead */
  if (len >= CAT_VLMETA_KEEP_RAW && (item.raw = malloc((size_t)len)) != NULL) {
    memcpy(item.raw, content, (size_t)len);
    item.rawlen = len;
  }
  return vlmeta_install(ctx, sc, k, &item);
fail:
  free(item.name);
  free(item.chunk);
  return rc;
}

int cat_sc_vlmeta_put(caterva_ctx *ctx, caterva_schunk *sc, const char *name, uint8_t *chunk,
                      int32_t cbytes, int32_t max) {
  cat_vlmeta item = {NULL, chunk, cbytes, NULL, 0, false, false};
  caterva_chunk_info ci;
  int k, rc = vlmeta_slot(ctx, sc, name, &k);
  if (rc < 0) goto fail;
  CAT_CHECK(fail, chunk != NULL && cbytes > 0 &&
                      caterva_chunk_info_get(chunk, (size_t)cbytes, &ci) >= 0 &&
                      ci.cbytes == cbytes && ci.nbytes <= max,
            CATERVA_E_INVALID, "vlmeta_put: not a chunk of 0 to %d bytes", (int)max);
  item.name = strdup(name);
  CAT_CHECK(fail, item.name != NULL, CATERVA_E_NOMEM, "out of memory");
  return vlmeta_install(ctx, sc, k, &item);
fail:
  free(chunk);
  return rc;
}

int caterva_schunk_vlmeta_delete(caterva_ctx *ctx, caterva_schunk *sc, const char *name) {
  cat_vlmeta gone, *next = NULL;
  int k, n, rc = check_writable(ctx, sc);
  if (rc < 0) return rc;
  k = find_vlmeta(sc, name);
  if (k < 0) return cat_error(ctx, CATERVA_E_NOTFOUND, "no vlmetalayer '%s'", name ? name : "(null)");
  n = sc->nvlmeta - 1;
  if (n > 0) {
    next = malloc((size_t)n * sizeof *next);
    if (next == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    memcpy(next, sc->vlmeta, (size_t)k * sizeof *next);
    memcpy(next + k, sc->vlmeta + k + 1, (size_t)(n - k) * sizeof *next);
  }
  gone = sc->vlmeta[k];
  return vlmeta_swap(ctx, sc, next, n, &gone);
}

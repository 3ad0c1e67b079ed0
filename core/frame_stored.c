/*
 * frame_stored.c -- where a stored chunk's bytes are: owned in sc->data (memory store,
 * cached chunk file), a sparse chunk file, a chunk written past the committed section by the
 * open transaction, the image (the owned copy or the file's map), or a remote frame; and
 * copying bytes of the map with pread.
 */
#include "frame_disk_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

/* cbytes of a chunk header at p with avail bytes behind it. A chunk that uses a feature we
 * lack still has its size fields; decompressing it reports the feature. */
static int chunk_cbytes(const uint8_t *p, int64_t avail, int32_t *cbytes) {
  caterva_chunk_info ci;
  int rc = caterva_chunk_info_get(p, (size_t)avail, &ci);
  if (rc == CATERVA_E_UNSUPPORTED && avail >= CATERVA_CHUNK_HEADER_SIZE) {
    int32_t cb = cat_le32s(p + 12);
    if (cb < CATERVA_CHUNK_HEADER_SIZE || cb > avail) return CATERVA_E_CORRUPT;
    *cbytes = cb;
    return CATERVA_OK;
  }
  if (rc < 0) return rc;
  /* A Blosc 1.x chunk (16-byte header) is no chunk of a frame: shorter than a Blosc2 header,
   * it was copied into a frame that then did not read (found by tests/fuzz/fuzz_frame). */
  if (ci.cbytes < CATERVA_CHUNK_HEADER_SIZE) return CATERVA_E_CORRUPT;
  *cbytes = ci.cbytes;
  return CATERVA_OK;
}

/* The table of cached chunks. A sparse reader's touches only the pages of the chunks it
 * reads (a cat_ztable, freed through data_pages); a writer's moves with its edits. */
static int ensure_data(caterva_ctx *ctx, caterva_schunk *sc) {
  if (sc->data != NULL || sc->nchunks == 0) return CATERVA_OK;
  if (!sc->writable && sc->store == CATERVA_STORE_SPARSE) {
    sc->data = cat_ztable_new(sc->nchunks, sizeof *sc->data);
    sc->data_pages = calloc((size_t)(sc->nchunks / CAT_DATA_PAGE + 1), 1);
    if (sc->data == NULL || sc->data_pages == NULL) {
      cat_ztable_free(sc->data);
      free(sc->data_pages);
      sc->data = NULL;
      sc->data_pages = NULL;
    }
  } else {
    sc->data = calloc((size_t)sc->nchunks, sizeof *sc->data);
  }
  if (sc->data == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  return CATERVA_OK;
}

static void keep_data(caterva_schunk *sc, int64_t i, uint8_t *buf) {
  sc->data[i] = buf;
  if (sc->data_pages != NULL) sc->data_pages[i / CAT_DATA_PAGE] = 1;
}

/* A sparse chunk file, read and validated. */
static int load_chunk_file(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, uint8_t **buf,
                           int32_t *cbytes) {
  int32_t len = 0;
  int64_t num;
  int rc = cat_sc_entry(ctx, sc, i, &num);
  if (rc < 0) return rc;
  rc = cat_file_read_chunk(ctx, sc, num, buf, &len);
  if (rc < 0) return rc;
  if (chunk_cbytes(*buf, len, cbytes) < 0) {
    free(*buf);
    *buf = NULL;
    return cat_error(ctx, CATERVA_E_CORRUPT, "chunk %lld (file %08llX.chunk) is malformed",
                     (long long)i, (unsigned long long)num);
  }
  return CATERVA_OK;
}

#define CAT_AHEAD_BYTES (16 * 1024 * 1024)
#define CAT_AHEAD_MAX 64

int cat_file_stored_ahead(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, int64_t *next) {
  cat_want w[CAT_AHEAD_MAX];
  int64_t per = sc->chunksize > 0 ? CAT_AHEAD_BYTES / sc->chunksize : CAT_AHEAD_MAX;
  int n = 0, max = per < 2 ? 2 : per > CAT_AHEAD_MAX ? CAT_AHEAD_MAX : (int)per;
  if (!cat_sc_is_remote(sc) || i < *next) return CATERVA_OK;
  for (*next = i; *next < sc->nchunks && n < max; (*next)++)
    if (sc->entries[*next] >= 0) w[n++] = (cat_want){*next, NULL, -1, NULL};
  return n > 1 ? cat_sc_prefetch(ctx, sc, w, n) : CATERVA_OK;
}

/* Whether a chunk at offset e of the chunk section lies in the committed, mapped section (a
 * chunk the open transaction wrote lies past it). */
static bool in_section(const caterva_schunk *sc, int64_t e) {
  return sc->base != NULL && e >= 0 && e <= sc->section - CATERVA_CHUNK_HEADER_SIZE;
}

int cat_file_small_chunk(const caterva_schunk *sc, int64_t i, int32_t max, const uint8_t **p,
                         int32_t *cbytes) {
  int64_t e, next;
  if (sc->remote != NULL || sc->store != CATERVA_STORE_CONTIGUOUS || i < 0 ||
      i >= sc->nchunks || cat_sc_entry(NULL, sc, i, &e) < 0 || !in_section(sc, e))
    return 0;
  /* how far the next chunk starts: the chunk's size at most (a frame written in order) */
  if (i + 1 == sc->nchunks) next = sc->section;
  else if (cat_sc_entry(NULL, sc, i + 1, &next) < 0 || next <= e || next > sc->section)
    return 0;
  if (next - e > max) return 0;
  *p = sc->base + sc->header_len + e;
  return chunk_cbytes(*p, next - e, cbytes) == CATERVA_OK;
}

int cat_file_stored_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, bool cache,
                          const uint8_t **p, int32_t *cbytes, uint8_t **tmp) {
  uint8_t *buf = NULL;
  int64_t e;
  int rc = CATERVA_OK;
  *tmp = NULL;
  (void)cache;
  if (sc->remote != NULL) return cat_remote_chunk(ctx, sc, i, NULL, -1, p, cbytes);
  if (sc->data != NULL && sc->data[i] != NULL) {
    *p = sc->data[i];
    *cbytes = cat_le32s(sc->data[i] + 12); /* validated when stored */
    return CATERVA_OK;
  }
  if (sc->store == CATERVA_STORE_SPARSE) {
    rc = load_chunk_file(ctx, sc, i, &buf, cbytes);
    if (rc < 0) return rc;
    if (cache && ensure_data(ctx, sc) == CATERVA_OK) keep_data(sc, i, buf);
    else *tmp = buf;
    *p = buf;
    return CATERVA_OK;
  }
  CAT_TRY(leave, cat_sc_entry(ctx, sc, i, &e));
  if (sc->txn != NULL && e >= sc->section) {
    /* written by the open transaction, past the committed section */
    rc = cat_file_read_pending(ctx, sc, e, &buf, cbytes);
    if (rc < 0) return rc;
    if (chunk_cbytes(buf, *cbytes, cbytes) < 0) {
      free(buf);
      return cat_error(ctx, CATERVA_E_CORRUPT, "chunk %lld (uncommitted) is malformed",
                       (long long)i);
    }
    if (cache && ensure_data(ctx, sc) == CATERVA_OK) keep_data(sc, i, buf);
    else *tmp = buf;
    *p = buf;
    return CATERVA_OK;
  }
  if (!in_section(sc, e))
    return cat_error(ctx, CATERVA_E_CORRUPT, "chunk %lld: no bytes behind its index entry",
                     (long long)i);
  *p = sc->base + sc->header_len + e;
  if (chunk_cbytes(*p, sc->section - e, cbytes) < 0)
    return cat_error(ctx, CATERVA_E_CORRUPT,
                     "chunk %lld at offset %lld is malformed or overruns the chunk section",
                     (long long)i, (long long)e);
leave:
  return rc;
}

int cat_file_stored_size(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, int32_t *cbytes) {
  const uint8_t *p;
  uint8_t *tmp;
  int64_t e;
  int rc;
  if (sc->remote == NULL && sc->store == CATERVA_STORE_CONTIGUOUS && sc->txn != NULL &&
      (sc->data == NULL || sc->data[i] == NULL)) {
    if ((rc = cat_sc_entry(ctx, sc, i, &e)) < 0) return rc;
    if (e >= sc->section) return cat_file_pending_size(ctx, sc, e, cbytes);
  }
  rc = cat_file_stored_chunk(ctx, sc, i, false, &p, cbytes, &tmp);
  free(tmp);
  return rc;
}

/*
** A reader that looks at every byte of a chunk once (the statistics' fingerprint check) pays
** less to copy it with pread than to fault in the map's pages: about a quarter of the CPU
** time for a whole file (measured on the demo array).
*/
int cat_file_copy_mapped(caterva_schunk *sc, const uint8_t *p, size_t n, uint8_t *buf) {
  int fd = sc->fd >= 0 ? sc->fd : sc->rfd;
  size_t done = 0;
  if (!sc->base_mapped || fd < 0 || p < sc->base || n > sc->base_len ||
      (size_t)(p - sc->base) > sc->base_len - n)
    return 0;
  while (done < n) {
    ssize_t r = pread(fd, buf + done, n - done, (off_t)(p - sc->base) + (off_t)done);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return 0;
    done += (size_t)r;
  }
  return 1;
}

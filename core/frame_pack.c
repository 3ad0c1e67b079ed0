/*
 * frame_pack.c -- a frame packed anew: its stored chunks in index order behind a new header,
 * index and trailer, into a buffer, a contiguous file replaced atomically (compaction, and
 * rewrites when the header changes size), or a new contiguous file or sparse directory
 * (saving a copy).
 */
#include "frame_disk_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

/* Lay sc out as a new packed frame: stored chunks in index order; contiguous entries become
 * their offsets, sparse entries consecutive file numbers. */
static int plan_build(caterva_ctx *ctx, caterva_schunk *sc, int frame_type, cat_plan *pl) {
  int64_t off = 0, files = 0, ahead = 0;
  int rc0;
  memset(pl, 0, sizeof *pl);
  if ((rc0 = cat_sc_index_load(ctx, sc)) < 0) return rc0;
  if (sc->nchunks > 0) {
    pl->entries = malloc((size_t)sc->nchunks * sizeof *pl->entries);
    if (pl->entries == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  }
  for (int64_t i = 0; i < sc->nchunks; i++) {
    int32_t cb;
    int rc;
    if (sc->entries[i] < 0) {
      pl->entries[i] = sc->entries[i];
      continue;
    }
    if ((rc = cat_file_stored_ahead(ctx, sc, i, &ahead)) < 0) return rc;
    if ((rc = cat_file_stored_size(ctx, sc, i, &cb)) < 0) return rc;
    pl->entries[i] = frame_type == CAT_FRAME_CONTIGUOUS ? off : files++;
    off += cb;
  }
  pl->cbytes = off;
  return cat_plan_finish(ctx, sc, frame_type, pl, sc->nchunks, sc->nbytes);
}

/* Visit the stored chunks of sc in index order. */
typedef int (*chunk_fn)(caterva_ctx *ctx, void *arg, int64_t k, const uint8_t *p, int32_t cb);

static int each_stored(caterva_ctx *ctx, caterva_schunk *sc, chunk_fn fn, void *arg) {
  int64_t k = 0, ahead = 0;
  int rc0 = cat_sc_index_load(ctx, sc);
  if (rc0 < 0) return rc0;
  for (int64_t i = 0; i < sc->nchunks; i++) {
    const uint8_t *p;
    uint8_t *tmp;
    int32_t cb;
    int rc;
    if (sc->entries[i] < 0) continue;
    rc = cat_file_stored_ahead(ctx, sc, i, &ahead);
    if (rc >= 0) rc = cat_file_stored_chunk(ctx, sc, i, false, &p, &cb, &tmp);
    if (rc >= 0) rc = fn(ctx, arg, k++, p, cb);
    free(tmp);
    if (rc < 0) return rc;
  }
  return CATERVA_OK;
}

/* A file about to be synced whole has its writing to the disk started every this many bytes
 * (the sync then waits for less). */
#define CAT_WRITEBACK_STEP (1 << 20)

typedef struct frame_out {
  caterva_schunk *sc;
  const cat_plan *pl;
  int fd;
  const char *path;
  uint8_t *buf;   /* to_buffer: destination */
  int64_t pos;    /* bytes put */
  bool kick;      /* the file will be synced: start writing it back as it grows */
  int64_t kicked; /* bytes whose writing back was started */
} frame_out;

static int put_bytes(caterva_ctx *ctx, frame_out *fo, const void *p, size_t n) {
  int rc;
  if (n == 0) return CATERVA_OK;
  if (fo->buf != NULL) {
    memcpy(fo->buf + fo->pos, p, n);
    fo->pos += (int64_t)n;
    return CATERVA_OK;
  }
  rc = cat_io_write(ctx, fo->fd, p, n, fo->path);
  fo->pos += (int64_t)n;
  if (rc >= 0 && fo->kick && fo->pos - fo->kicked >= CAT_WRITEBACK_STEP) {
    cat_io_start_writeback(fo->fd, fo->kicked, fo->pos - fo->kicked);
    fo->kicked = fo->pos;
  }
  return rc;
}

static int put_chunk(caterva_ctx *ctx, void *arg, int64_t k, const uint8_t *p, int32_t cb) {
  (void)k;
  return put_bytes(ctx, arg, p, (size_t)cb);
}

/* Header | chunks | index | trailer, to fo's file or buffer. */
static int emit_frame_out(caterva_ctx *ctx, frame_out *fo) {
  int rc = put_bytes(ctx, fo, fo->pl->header, (size_t)fo->pl->header_len);
  if (rc >= 0) rc = each_stored(ctx, fo->sc, put_chunk, fo);
  if (rc >= 0) rc = put_bytes(ctx, fo, fo->pl->index, (size_t)fo->pl->index_len);
  if (rc >= 0) rc = put_bytes(ctx, fo, fo->pl->trailer, (size_t)fo->pl->trailer_len);
  return rc;
}

static int emit_frame(caterva_ctx *ctx, void *arg, int fd, const char *path) {
  frame_out *fo = arg;
  fo->fd = fd;
  fo->path = path;
  return emit_frame_out(ctx, fo);
}

int cat_frame_to_buffer(caterva_ctx *ctx, caterva_schunk *sc, uint8_t **out, int64_t *len) {
  cat_plan pl;
  frame_out fo;
  int rc = plan_build(ctx, sc, CAT_FRAME_CONTIGUOUS, &pl);
  memset(&fo, 0, sizeof fo);
  CAT_TRY(leave, rc);
  CAT_CHECK(leave, (uint64_t)pl.frame_len <= SIZE_MAX, CATERVA_E_OVERFLOW, "frame too large");
  fo.sc = sc;
  fo.pl = &pl;
  fo.buf = malloc((size_t)pl.frame_len);
  CAT_CHECK(leave, fo.buf != NULL, CATERVA_E_NOMEM, "out of memory for a %lld-byte frame",
            (long long)pl.frame_len);
  CAT_TRY(leave, emit_frame_out(ctx, &fo));
  *out = fo.buf;
  *len = pl.frame_len;
  fo.buf = NULL;
leave:
  free(fo.buf);
  cat_plan_free(&pl);
  return rc;
}

int cat_frame_packed_len(caterva_ctx *ctx, caterva_schunk *sc, int64_t *len) {
  cat_plan pl;
  int rc = plan_build(ctx, sc, CAT_FRAME_CONTIGUOUS, &pl);
  if (rc >= 0) *len = pl.frame_len;
  cat_plan_free(&pl);
  return rc;
}

/* Rewrite a contiguous file packed (temporary file + rename) and switch to it. */
int cat_pack_rewrite_contiguous(caterva_ctx *ctx, caterva_schunk *sc) {
  cat_plan pl;
  frame_out fo;
  int fd, rc = plan_build(ctx, sc, CAT_FRAME_CONTIGUOUS, &pl);
  memset(&fo, 0, sizeof fo);
  CAT_TRY(leave, rc);
  fo.sc = sc;
  fo.pl = &pl;
  fo.kick = true;
  CAT_TRY(leave, cat_write_atomic(ctx, sc->path, emit_frame, &fo, true));
  /* The new file is in place; from here on a failure leaves sc out of step with it. */
  fd = open(sc->path, O_RDWR);
  if (fd < 0 || cat_contig_remap(ctx, sc, fd) < 0) {
    if (fd >= 0) close(fd);
    sc->broken = true;
    rc = cat_error(ctx, CATERVA_E_IO, "cannot reopen '%s' after rewriting it", sc->path);
    goto leave;
  }
  if (sc->fd >= 0) close(sc->fd);
  sc->fd = fd;
  free(sc->entries);
  sc->entries = pl.entries;
  pl.entries = NULL;
  sc->header_len = pl.header_len;
  sc->frame_len = sc->wend = pl.frame_len;
  cat_contig_pend_free(sc); /* the chunks held are in the new file */
  sc->cbytes = sc->section = pl.cbytes;
  sc->dead = 0;
  sc->header_unsynced = false;
leave:
  cat_plan_free(&pl);
  return rc;
}

/* Save as a sparse directory: chunk files 0, 1, ... then chunks.b2frame. */
typedef struct sparse_out {
  const char *dir;
  int64_t nfiles;
} sparse_out;

static int put_chunk_file(caterva_ctx *ctx, void *arg, int64_t k, const uint8_t *p, int32_t cb) {
  sparse_out *so = arg;
  int rc = cat_sparse_write_chunk(ctx, so->dir, k, p, cb, true);
  if (rc >= 0) so->nfiles = k + 1;
  return rc;
}

static void remove_sparse(const char *dir, int64_t nfiles) {
  char *idx = cat_path_join(dir, CAT_SPARSE_INDEX);
  for (int64_t k = 0; k < nfiles; k++) {
    char *p = cat_sparse_chunk_path(dir, k);
    if (p != NULL) unlink(p);
    free(p);
  }
  if (idx != NULL) unlink(idx);
  free(idx);
  rmdir(dir);
}

static int save_sparse(caterva_ctx *ctx, caterva_schunk *sc, const char *path) {
  cat_plan pl;
  sparse_out so = {path, 0};
  char *idx = NULL;
  int rc;
  memset(&pl, 0, sizeof pl);
  if (mkdir(path, 0777) != 0) return io_fail(ctx, "cannot create directory", path);
  CAT_TRY(fail, plan_build(ctx, sc, CAT_FRAME_SPARSE, &pl));
  CAT_TRY(fail, each_stored(ctx, sc, put_chunk_file, &so));
  idx = cat_path_join(path, CAT_SPARSE_INDEX);
  CAT_CHECK(fail, idx != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(fail, cat_plan_write_sparse(ctx, idx, &pl, true));
  cat_io_sync_parent(path);
  rc = CATERVA_OK;
  goto leave;
fail:
  remove_sparse(path, so.nfiles);
leave:
  free(idx);
  cat_plan_free(&pl);
  return rc;
}

static int save_contiguous(caterva_ctx *ctx, caterva_schunk *sc, const char *path) {
  cat_plan pl;
  frame_out fo;
  int rc, fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
  memset(&pl, 0, sizeof pl);
  memset(&fo, 0, sizeof fo);
  if (fd < 0) return io_fail(ctx, "cannot create", path);
  close(fd);
  CAT_TRY(fail, plan_build(ctx, sc, CAT_FRAME_CONTIGUOUS, &pl));
  fo.sc = sc;
  fo.pl = &pl;
  CAT_TRY(fail, cat_write_atomic(ctx, path, emit_frame, &fo, true));
  rc = CATERVA_OK;
  goto leave;
fail:
  unlink(path);
leave:
  cat_plan_free(&pl);
  return rc;
}

int cat_file_save(caterva_ctx *ctx, caterva_schunk *sc, const char *path, int store) {
  if (sc->broken) return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed update");
  if (store == CATERVA_STORE_SPARSE) return save_sparse(ctx, sc, path);
  return save_contiguous(ctx, sc, path);
}

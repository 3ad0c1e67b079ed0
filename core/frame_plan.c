/*
 * frame_plan.c -- a new version of a frame on disk: the header, offsets index and trailer
 * for given index entries (cat_plan), written as a sparse frame's chunks.b2frame, and the
 * atomic replacement of a file (temporary file in the same directory, synced, renamed).
 * Below the stores (frame_sparse.c, frame_contig.c) and the packing (frame_pack.c); uses
 * frame_format.c for the bytes.
 */
#include "frame_disk_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

char *cat_path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *s = malloc(n);
  if (s != NULL) snprintf(s, n, "%s/%s", dir, name);
  return s;
}

/* Write a complete new version of path: emit() fills a temporary file in the same
 * directory, which is synced and renamed over path. */
int cat_write_atomic(caterva_ctx *ctx, const char *path, cat_emit_fn emit, void *arg, bool sync) {
  static unsigned counter;
  size_t n = strlen(path) + 40;
  char *tmp = malloc(n);
  int fd = -1, rc;
  CAT_CHECK(leave, tmp != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int attempt = 0; fd < 0 && attempt < 100; attempt++) {
    snprintf(tmp, n, "%s.tmp%ld.%u", path, (long)getpid(),
             __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) {
    rc = io_fail(ctx, "cannot create", tmp);
    goto leave;
  }
  CAT_TRY(fail, emit(ctx, arg, fd, tmp));
  if (sync) CAT_TRY(fail, cat_io_fdatasync(ctx, fd, tmp)); /* the rename is synced below */
  close(fd);
  fd = -1;
  CAT_TRY(fail, cat_io_rename(ctx, tmp, path));
  if (sync) cat_io_sync_parent(path);
  rc = CATERVA_OK;
  goto leave;
fail:
  if (fd >= 0) close(fd);
  unlink(tmp);
leave:
  free(tmp);
  return rc;
}

/* Up to four buffers written in sequence. */
typedef struct pieces {
  const uint8_t *p[4];
  size_t n[4];
} pieces;

/* The pieces in one write (a sparse frame's header, index and trailer: small). */
static int emit_pieces(caterva_ctx *ctx, void *arg, int fd, const char *path) {
  pieces *pc = arg;
  size_t total = 0, at = 0;
  uint8_t *buf;
  int rc;
  for (int k = 0; k < 4; k++) total += pc->n[k];
  buf = malloc(total ? total : 1);
  if (buf == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  for (int k = 0; k < 4; k++) {
    if (pc->n[k]) memcpy(buf + at, pc->p[k], pc->n[k]);
    at += pc->n[k];
  }
  rc = total ? cat_io_write(ctx, fd, buf, total, path) : CATERVA_OK;
  free(buf);
  return rc;
}

void cat_plan_free(cat_plan *pl) {
  free(pl->header);
  free(pl->index);
  free(pl->trailer);
  free(pl->entries);
  memset(pl, 0, sizeof *pl);
}

/* Write a sparse frame's chunks.b2frame (header, index, trailer of pl) at path, atomically. */
int cat_plan_write_sparse(caterva_ctx *ctx, const char *path, const cat_plan *pl, bool sync) {
  pieces pc;
  memset(&pc, 0, sizeof pc);
  pc.p[0] = pl->header;
  pc.n[0] = (size_t)pl->header_len;
  pc.p[1] = pl->index;
  pc.n[1] = (size_t)pl->index_len;
  pc.p[2] = pl->trailer;
  pc.n[2] = (size_t)pl->trailer_len;
  return cat_write_atomic(ctx, path, emit_pieces, &pc, sync);
}

/* Index, trailer and header for the given entries; cbytes is the chunk bytes recorded. */
int cat_plan_finish(caterva_ctx *ctx, caterva_schunk *sc, int frame_type, cat_plan *pl,
                    int64_t n, int64_t nbytes) {
  int rc;
  if (n > 0) {
    rc = cat_frame_build_index(ctx, pl->entries, n, &pl->index, &pl->index_len);
    if (rc < 0) return rc;
  }
  rc = cat_frame_build_trailer(ctx, sc, &pl->trailer, &pl->trailer_len);
  if (rc < 0) return rc;
  pl->header_len = cat_frame_header_len(sc);
  pl->frame_len = pl->header_len + (frame_type == CAT_FRAME_CONTIGUOUS ? pl->cbytes : 0) +
                  pl->index_len + pl->trailer_len;
  return cat_frame_build_header(ctx, sc, frame_type, pl->frame_len, nbytes, pl->cbytes,
                                &pl->header, &pl->header_len);
}

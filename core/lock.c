/*
 * lock.c -- the `.b2lock` sidecar protocol that c-blosc2 (3.2 and later; python-blosc2 uses
 * it) follows for frames shared by several processes, so that its writers and ours exclude
 * each other:
 *
 *   <path>.b2lock beside a contiguous frame file, <dir>/.b2lock inside a sparse frame's
 *   directory; created on first use (O_CREAT, mode 0666 less the umask).
 *   flock(LOCK_EX) by a writer, flock(LOCK_SH) by a reader re-reading the index.
 *   Bytes [8, 16): a 64-bit little-endian generation counter. Every exclusive acquisition
 *   reads it and writes it back plus one, so a handle that sees a new value knows the frame
 *   may have changed. A sidecar shorter than 16 bytes reads as 0.
 *
 * flock() locks belong to an open file description: two handles of one process, each with
 * its own descriptor, exclude each other like two processes do. We never wait inside the
 * library (LOCK_NB); CATERVA_E_BUSY lets the caller decide (the SQLite extension retries
 * for the connection's busy timeout).
 */
#include "cat_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAT_LOCK_SEQ_OFFSET 8

struct caterva_lock {
  int fd;        /* the sidecar, open read-write */
  int held;      /* 0, LOCK_SH or LOCK_EX */
  char *path;    /* the sidecar's path */
};

static char *sidecar_path(const char *path) {
  struct stat st;
  const char *suffix = stat(path, &st) == 0 && S_ISDIR(st.st_mode) ? "/.b2lock" : ".b2lock";
  size_t n = strlen(path) + strlen(suffix) + 1;
  char *s = malloc(n);
  if (s != NULL) snprintf(s, n, "%s%s", path, suffix);
  return s;
}

/* Open the sidecar of path: created when missing (writers), or only when it exists (readers,
 * which must leave no file behind: CATERVA_E_NOTFOUND then). A reader without write
 * permission opens it read-only (flock needs no more). */
static int lock_open(caterva_ctx *ctx, const char *path, bool create, caterva_lock **out) {
  caterva_lock *lk = NULL;
  int rc = CATERVA_OK;
  CAT_CHECK(leave, out != NULL && path != NULL, CATERVA_E_INVALID, "lock_open: NULL argument");
  *out = NULL;
  lk = calloc(1, sizeof *lk);
  CAT_CHECK(leave, lk != NULL, CATERVA_E_NOMEM, "out of memory");
  lk->fd = -1;
  lk->path = sidecar_path(path);
  CAT_CHECK(leave, lk->path != NULL, CATERVA_E_NOMEM, "out of memory");
  lk->fd = open(lk->path, O_RDWR | (create ? O_CREAT : 0) | O_CLOEXEC, 0666);
  if (lk->fd < 0 && !create && errno == EACCES) lk->fd = open(lk->path, O_RDONLY | O_CLOEXEC);
  if (lk->fd < 0) {
    rc = cat_io_error(ctx, "cannot open the lock file", lk->path);
    goto leave;
  }
  *out = lk;
  lk = NULL;
leave:
  caterva_lock_free(lk);
  return rc;
}

int caterva_lock_open(caterva_ctx *ctx, const char *path, caterva_lock **out) {
  return lock_open(ctx, path, true, out);
}

int caterva_lock_open_writer(caterva_ctx *ctx, const char *path, caterva_lock **out) {
  struct stat st;
  if (out != NULL) *out = NULL;
  if (path != NULL && stat(path, &st) != 0) return cat_io_error(ctx, "cannot open", path);
  return lock_open(ctx, path, true, out);
}

int caterva_lock_open_existing(caterva_ctx *ctx, const char *path, caterva_lock **out) {
  return lock_open(ctx, path, false, out);
}

void caterva_lock_free(caterva_lock *lk) {
  if (lk == NULL) return;
  if (lk->fd >= 0) close(lk->fd); /* releases the flock */
  free(lk->path);
  free(lk);
}

static int seq_read(caterva_lock *lk, uint64_t *seq) {
  uint8_t b[8];
  ssize_t n = pread(lk->fd, b, sizeof b, CAT_LOCK_SEQ_OFFSET);
  if (n < 0) return -1;
  *seq = n == (ssize_t)sizeof b ? cat_le64(b) : 0;
  return 0;
}

int caterva_lock_generation(caterva_ctx *ctx, caterva_lock *lk, uint64_t *gen) {
  if (lk == NULL || gen == NULL) return cat_error(ctx, CATERVA_E_INVALID, "lock: NULL argument");
  if (seq_read(lk, gen) != 0) return cat_io_error(ctx, "cannot read the lock file", lk->path);
  return CATERVA_OK;
}

static int take(caterva_ctx *ctx, caterva_lock *lk, int how) {
  int r;
  if (lk == NULL) return cat_error(ctx, CATERVA_E_INVALID, "lock: NULL argument");
  if (lk->held == how) return CATERVA_OK;
  do {
    r = flock(lk->fd, how | LOCK_NB);
  } while (r != 0 && errno == EINTR);
  if (r != 0 && errno == EWOULDBLOCK)
    return cat_error(ctx, CATERVA_E_BUSY, "'%s' is locked by another %s", lk->path,
                     how == LOCK_EX ? "reader or writer" : "writer");
  if (r != 0) return cat_io_error(ctx, "cannot lock", lk->path);
  lk->held = how;
  return CATERVA_OK;
}

int caterva_lock_exclusive(caterva_ctx *ctx, caterva_lock *lk, uint64_t *gen) {
  uint64_t seq = 0;
  uint8_t b[8];
  int rc = take(ctx, lk, LOCK_EX);
  if (rc < 0) return rc;
  if (seq_read(lk, &seq) != 0) goto fail;
  cat_put_le64(b, seq + 1);
  if (pwrite(lk->fd, b, sizeof b, CAT_LOCK_SEQ_OFFSET) != (ssize_t)sizeof b) goto fail;
  if (gen != NULL) *gen = seq + 1;
  return CATERVA_OK;
fail:
  rc = cat_io_error(ctx, "cannot update the generation counter of", lk->path);
  (void)caterva_lock_release(lk);
  return rc;
}

int caterva_lock_shared(caterva_ctx *ctx, caterva_lock *lk) { return take(ctx, lk, LOCK_SH); }

int caterva_lock_bump(caterva_ctx *ctx, caterva_lock *lk, uint64_t *gen) {
  uint64_t seq = 0;
  uint8_t b[8];
  if (lk == NULL || lk->held != LOCK_EX)
    return cat_error(ctx, CATERVA_E_INVALID, "lock: the exclusive lock is not held");
  if (seq_read(lk, &seq) != 0) return cat_io_error(ctx, "cannot read the lock file", lk->path);
  cat_put_le64(b, seq + 1);
  if (pwrite(lk->fd, b, sizeof b, CAT_LOCK_SEQ_OFFSET) != (ssize_t)sizeof b)
    return cat_io_error(ctx, "cannot update the generation counter of", lk->path);
  if (gen != NULL) *gen = seq + 1;
  return CATERVA_OK;
}

int caterva_lock_release(caterva_lock *lk) {
  if (lk == NULL || lk->held == 0) return CATERVA_OK;
  lk->held = 0;
  return flock(lk->fd, LOCK_UN) == 0 ? CATERVA_OK : CATERVA_E_IO;
}

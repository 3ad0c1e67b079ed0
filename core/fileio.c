/*
 * fileio.c -- the one layer through which the library changes files: write, pwrite,
 * pread, fsync, ftruncate, rename and unlink, with a test hook that fails the N-th call.
 *
 * Why one layer: the write path promises that a failure at any point (a full disk, an I/O
 * error) leaves the committed state intact. That is only testable if every call that can
 * fail is reachable by a fault injector; tests/unit/test_txn.c walks N over every call of a
 * transaction and checks the file after each injected failure.
 *
 * The hook: caterva_test_fail_io(n, err, sticky), or the environment variable
 * CATERVA_FAIL_IO="n:ENOSPC[:sticky]" (read once, at the first counted call; lets a test
 * inject faults into a process it only drives through SQL). Counted calls are numbered
 * from 1 after the hook is armed; call n fails with errno err without touching the file,
 * and with sticky every later call fails too (a disk that stays full).
 *
 * A second hook, cat_io_observe, reports every successful change in order, so that a test
 * can replay the orders in which a disk may persist them (tests/unit/test_powerloss.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* renameat2 */
#endif
#include "cat_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static int64_t fail_at;     /* 0: hook disarmed */
static int fail_errno;
static int fail_sticky;
static int64_t io_count;    /* counted calls since the hook was armed */
static int env_read;
static cat_io_observer observer;
static void *observer_arg;

void cat_io_observe(cat_io_observer fn, void *arg) {
  observer_arg = arg;
  observer = fn;
}

static void observe(int op, int fd, int64_t off, const void *buf, size_t n) {
  if (observer != NULL) observer(observer_arg, op, fd, off, buf, n);
}

void caterva_test_fail_io(int64_t n, int err, int sticky) {
  __atomic_store_n(&env_read, 1, __ATOMIC_RELAXED);
  fail_at = n;
  fail_errno = err;
  fail_sticky = sticky;
  __atomic_store_n(&io_count, 0, __ATOMIC_RELAXED);
}

int64_t caterva_test_io_calls(void) { return __atomic_load_n(&io_count, __ATOMIC_RELAXED); }

static void read_env(void) {
  const char *s;
  char name[16] = "";
  long long n = 0;
  int sticky = 0;
  if (__atomic_exchange_n(&env_read, 1, __ATOMIC_RELAXED)) return;
  s = getenv("CATERVA_FAIL_IO");
  if (s == NULL || sscanf(s, "%lld:%15[A-Z]", &n, name) < 2 || n <= 0) return;
  sticky = strstr(s, ":sticky") != NULL;
  caterva_test_fail_io(n, strcmp(name, "EIO") == 0 ? EIO : ENOSPC, sticky);
}

/* True when this call must fail (errno set). */
static bool injected(void) {
  int64_t k;
  read_env();
  if (fail_at <= 0) return false;
  k = __atomic_add_fetch(&io_count, 1, __ATOMIC_RELAXED);
  if (k == fail_at || (fail_sticky && k > fail_at)) {
    errno = fail_errno;
    return true;
  }
  return false;
}

int cat_io_error(caterva_ctx *ctx, const char *what, const char *path) {
  int e = errno;
  int rc = e == ENOENT ? CATERVA_E_NOTFOUND : e == EEXIST ? CATERVA_E_EXISTS : CATERVA_E_IO;
  return cat_error(ctx, rc, "%s '%s': %s", what, path, strerror(e));
}

int cat_io_write(caterva_ctx *ctx, int fd, const void *buf, size_t n, const char *path) {
  const uint8_t *p = buf;
  while (n > 0) {
    ssize_t w = injected() ? -1 : write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return cat_io_error(ctx, "cannot write", path);
    if (observer != NULL) observe(CAT_IO_WRITE, fd, (int64_t)lseek(fd, 0, SEEK_CUR) - w, p, (size_t)w);
    p += w;
    n -= (size_t)w;
  }
  return CATERVA_OK;
}

int cat_io_pwrite(caterva_ctx *ctx, int fd, const void *buf, size_t n, int64_t off,
                  const char *path) {
  const uint8_t *p = buf;
  while (n > 0) {
    ssize_t w = injected() ? -1 : pwrite(fd, p, n, (off_t)off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return cat_io_error(ctx, "cannot write", path);
    observe(CAT_IO_WRITE, fd, off, p, (size_t)w);
    p += w;
    n -= (size_t)w;
    off += w;
  }
  return CATERVA_OK;
}

int cat_io_pread_upto(caterva_ctx *ctx, int fd, void *buf, size_t n, int64_t off,
                      const char *path, size_t *got) {
  uint8_t *p = buf;
  *got = 0;
  while (*got < n) {
    ssize_t r = pread(fd, p + *got, n - *got, (off_t)(off + (int64_t)*got)); /* not injected */
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return cat_io_error(ctx, "cannot read", path);
    if (r == 0) break;
    *got += (size_t)r;
  }
  return CATERVA_OK;
}

int cat_io_pread(caterva_ctx *ctx, int fd, void *buf, size_t n, int64_t off, const char *path) {
  size_t got;
  int rc = cat_io_pread_upto(ctx, fd, buf, n, off, path, &got);
  if (rc >= 0 && got < n)
    rc = cat_error(ctx, CATERVA_E_CORRUPT, "'%s' ends before offset %lld", path,
                   (long long)(off + (int64_t)n));
  return rc;
}

int cat_io_fsync(caterva_ctx *ctx, int fd, const char *path) {
  if (injected() || fsync(fd) != 0) return cat_io_error(ctx, "cannot sync", path);
  observe(CAT_IO_SYNC, fd, 0, NULL, 0);
  return CATERVA_OK;
}

void cat_io_start_writeback(int fd, int64_t off, int64_t n) {
#ifdef SYNC_FILE_RANGE_WRITE
  (void)sync_file_range(fd, (off_t)off, (off_t)n, SYNC_FILE_RANGE_WRITE);
#else
  (void)fd;
  (void)off;
  (void)n;
#endif
}

int cat_io_fdatasync(caterva_ctx *ctx, int fd, const char *path) {
  if (injected() || fdatasync(fd) != 0) return cat_io_error(ctx, "cannot sync", path);
  observe(CAT_IO_SYNC, fd, 0, NULL, 0);
  return CATERVA_OK;
}

int cat_io_syncfs(caterva_ctx *ctx, int fd, const char *path) {
  if (injected() || syncfs(fd) != 0) return cat_io_error(ctx, "cannot sync the file system of", path);
  observe(CAT_IO_SYNC, fd, 0, NULL, 0);
  return CATERVA_OK;
}

int cat_io_truncate(caterva_ctx *ctx, int fd, int64_t len, const char *path) {
  if (injected() || ftruncate(fd, (off_t)len) != 0)
    return cat_io_error(ctx, "cannot truncate", path);
  observe(CAT_IO_TRUNCATE, fd, len, NULL, 0);
  return CATERVA_OK;
}

int cat_io_rename(caterva_ctx *ctx, const char *from, const char *to) {
  if (injected() || rename(from, to) != 0) return cat_io_error(ctx, "cannot rename onto", to);
  observe(CAT_IO_RENAME, -1, 0, NULL, 0);
  return CATERVA_OK;
}

int cat_io_rename_noreplace(caterva_ctx *ctx, const char *from, const char *to) {
  if (injected() || renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) != 0)
    return cat_io_error(ctx, "cannot rename to", to);
  return CATERVA_OK;
}

void cat_io_sync_parent(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash == NULL ? strdup(".") : strndup(path, slash == path ? 1 : (size_t)(slash - path));
  int fd;
  if (dir == NULL) return;
  fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    (void)fsync(fd);
    close(fd);
  }
  free(dir);
}

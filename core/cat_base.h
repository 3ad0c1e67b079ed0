/*
 * cat_base.h -- the base every layer of the project builds on: error plumbing (negative
 * CATERVA_E_* codes with a message in the context), little/big-endian accessors, a
 * bounds-checked reader over untrusted bytes, overflow-checked arithmetic, and the file calls
 * that carry the fault-injection hook (fileio.c).
 *
 * Used by core/ and by the converters in io/ (libcaterva-io). Not installed: the cat_error,
 * cat_wrap_error and cat_io_* functions are exported from libcaterva only for libcaterva-io
 * of the same version (see Makefile.am), not as an API for other programs.
 */
#ifndef CAT_BASE_H
#define CAT_BASE_H

#ifdef HAVE_CONFIG_H
#include "config.h"
#endif
#include "caterva.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Size of the message buffer of a context (caterva_ctx_errmsg). */
#define CAT_ERRMSG_SIZE 512

/* ---- errors ------------------------------------------------------------------------ */

/* Record a formatted message in ctx (which may be NULL) and return rc. */
int cat_error(caterva_ctx *ctx, int rc, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Record "what: <the callee's message>" in ctx (the code's text when there is none) and
 * return rc. */
int cat_wrap_error(caterva_ctx *ctx, int rc, const char *what);

/* Jump to the function's exit label with rc set and a message recorded. */
#define CAT_FAIL(label, code, ...)                                                     \
  do {                                                                                 \
    rc = cat_error(ctx, (code), __VA_ARGS__);                                          \
    goto label;                                                                        \
  } while (0)
#define CAT_CHECK(label, cond, code, ...)                                              \
  do {                                                                                 \
    if (!(cond)) CAT_FAIL(label, code, __VA_ARGS__);                                   \
  } while (0)
/* Propagate a negative result of an expression, keeping the callee's message. */
#define CAT_TRY(label, expr)                                                           \
  do {                                                                                 \
    int64_t cat_try_rc_ = (expr);                                                      \
    if (cat_try_rc_ < 0) {                                                             \
      rc = (int)cat_try_rc_;                                                           \
      goto label;                                                                      \
    }                                                                                  \
  } while (0)

/* ---- byte order -------------------------------------------------------------------- */

static inline uint16_t cat_le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t cat_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline int32_t cat_le32s(const uint8_t *p) { return (int32_t)cat_le32(p); }
static inline uint64_t cat_le64(const uint8_t *p) {
  return (uint64_t)cat_le32(p) | (uint64_t)cat_le32(p + 4) << 32;
}
static inline void cat_put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); p[2] = (uint8_t)(v >> 16); p[3] = (uint8_t)(v >> 24);
}
static inline void cat_put_le64(uint8_t *p, uint64_t v) {
  cat_put_le32(p, (uint32_t)v);
  cat_put_le32(p + 4, (uint32_t)(v >> 32));
}
static inline uint16_t cat_be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t cat_be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}
static inline uint64_t cat_be64(const uint8_t *p) {
  return (uint64_t)cat_be32(p) << 32 | (uint64_t)cat_be32(p + 4);
}
static inline void cat_put_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void cat_put_be32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}
static inline void cat_put_be64(uint8_t *p, uint64_t v) {
  cat_put_be32(p, (uint32_t)(v >> 32));
  cat_put_be32(p + 4, (uint32_t)v);
}

/* ---- bounds-checked reader over untrusted bytes ------------------------------------- */

/* A cursor never reads past end; every getter returns false (and reads nothing) when the
 * bytes are not there, so parsers check once per field. */
typedef struct cat_rdr {
  const uint8_t *p;   /* next byte */
  const uint8_t *end; /* one past the last readable byte */
} cat_rdr;

static inline void cat_rdr_init(cat_rdr *r, const void *buf, size_t len) {
  r->p = (const uint8_t *)buf;
  r->end = r->p + len;
}
static inline size_t cat_rdr_left(const cat_rdr *r) { return (size_t)(r->end - r->p); }
static inline bool cat_rdr_skip(cat_rdr *r, size_t n) {
  if (cat_rdr_left(r) < n) return false;
  r->p += n;
  return true;
}
static inline bool cat_rdr_u8(cat_rdr *r, uint8_t *v) {
  if (cat_rdr_left(r) < 1) return false;
  *v = *r->p++;
  return true;
}
static inline bool cat_rdr_le32(cat_rdr *r, int32_t *v) {
  if (cat_rdr_left(r) < 4) return false;
  *v = cat_le32s(r->p);
  r->p += 4;
  return true;
}
static inline bool cat_rdr_bytes(cat_rdr *r, size_t n, const uint8_t **out) {
  if (cat_rdr_left(r) < n) return false;
  *out = r->p;
  r->p += n;
  return true;
}

/* ---- overflow-checked arithmetic ---------------------------------------------------- */

/* Each returns false on overflow (or a negative operand) and leaves *out unspecified. */
static inline bool cat_mul64(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0) return false;
  return !__builtin_mul_overflow(a, b, out);
}
static inline bool cat_add64(int64_t a, int64_t b, int64_t *out) {
  if (a < 0 || b < 0) return false;
  return !__builtin_add_overflow(a, b, out);
}
static inline bool cat_mulsz(size_t a, size_t b, size_t *out) { return !__builtin_mul_overflow(a, b, out); }
static inline bool cat_addsz(size_t a, size_t b, size_t *out) { return !__builtin_add_overflow(a, b, out); }

static inline int64_t cat_ceil_div64(int64_t a, int64_t b) { return a / b + (a % b != 0); }

/* ---- file I/O (fileio.c): every call that changes a file, with a fault-injection hook ---- */

/* Record "what 'path': strerror(errno)" and return the matching code (NOTFOUND, EXISTS, IO). */
int cat_io_error(caterva_ctx *ctx, const char *what, const char *path);
/* Write / positioned write / positioned read of exactly n bytes (EINTR and short transfers
 * retried). A read that meets the end of the file is CATERVA_E_CORRUPT. */
int cat_io_write(caterva_ctx *ctx, int fd, const void *buf, size_t n, const char *path);
int cat_io_pwrite(caterva_ctx *ctx, int fd, const void *buf, size_t n, int64_t off,
                  const char *path);
int cat_io_pread(caterva_ctx *ctx, int fd, void *buf, size_t n, int64_t off, const char *path);
/* Positioned read of at most n bytes, stopping at the end of the file: the bytes read in *got
 * (fewer than n only there). */
int cat_io_pread_upto(caterva_ctx *ctx, int fd, void *buf, size_t n, int64_t off,
                      const char *path, size_t *got);
int cat_io_fsync(caterva_ctx *ctx, int fd, const char *path);
/* fdatasync: the data and what reading it back needs (size, block map), not the times. Enough
 * wherever a file's content matters and its directory entry is synced on its own (a new file
 * before its rename, then the directory) or exists already (a header rewritten in place). */
int cat_io_fdatasync(caterva_ctx *ctx, int fd, const char *path);
/* Start writing bytes [off, off + n) of fd to the disk without waiting for them (Linux's
 * sync_file_range with SYNC_FILE_RANGE_WRITE; nothing elsewhere): a file that will be synced
 * whole has less left to write then. Promises nothing about durability; never fails. */
void cat_io_start_writeback(int fd, int64_t off, int64_t n);
/* syncfs(2) on the file system holding the open fd: everything written there becomes durable,
 * and a write-back error of any file since fd was opened is reported (Linux 5.8 and later). */
int cat_io_syncfs(caterva_ctx *ctx, int fd, const char *path);
int cat_io_truncate(caterva_ctx *ctx, int fd, int64_t len, const char *path);
int cat_io_rename(caterva_ctx *ctx, const char *from, const char *to);
/* rename that fails with CATERVA_E_EXISTS instead of replacing an existing file or directory. */
int cat_io_rename_noreplace(caterva_ctx *ctx, const char *from, const char *to);
/* fsync the directory holding path (best effort), so a rename or creation in it is durable. */
void cat_io_sync_parent(const char *path);

/* Tests (tests/unit/test_powerloss.c): an observer told of every successful change made
 * through this layer, in order -- CAT_IO_WRITE (fd, the offset written at, the bytes),
 * CAT_IO_SYNC (fd: fsync, fdatasync or syncfs), CAT_IO_TRUNCATE (fd, off: the new length),
 * CAT_IO_RENAME (fd -1). Process-wide; NULL removes it. */
enum { CAT_IO_WRITE = 1, CAT_IO_SYNC, CAT_IO_TRUNCATE, CAT_IO_RENAME };
typedef void (*cat_io_observer)(void *arg, int op, int fd, int64_t off, const void *buf,
                                size_t n);
void cat_io_observe(cat_io_observer fn, void *arg);

#endif /* CAT_BASE_H */

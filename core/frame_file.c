/*
 * frame_file.c -- frames on disk: contiguous frame files and sparse frame directories, and
 * where a stored chunk's bytes are (owned, in the image, in a sparse chunk file, or written
 * past the committed section by an open transaction). Uses frame_format.c for the bytes of
 * headers, trailers and indices; never calls into schunk.c.
 *
 * Crash safety (what a process dying at any instant leaves behind):
 *
 *  Contiguous file, chunk edits and vlmetalayer changes ("commit"):
 *    1. the new chunk (if any), then a new offsets index and a new trailer are written
 *       AFTER the current end of the frame; nothing the current header refers to is touched;
 *    2. fsync;
 *    3. the header bytes [15, 69) (frame_len, nbytes, cbytes, vlmeta flag...) are rewritten
 *       in place with one pwrite -- the commit point; they lie inside the first 512-byte
 *       sector, which disks write atomically;
 *    4. fsync -- skipped with CATERVA_SYNC_NORMAL: the header reaches the disk with the next
 *       sync of the file (the next commit's step 2, a compaction, closing the handle), so a
 *       power loss may undo the last commit but never leaves a header naming unsynced bytes
 *       (tests/unit/test_powerloss.c replays every order the disk may persist writes in).
 *    Before step 3 the file holds the old frame followed by garbage beyond its frame_len
 *    (readers ignore bytes past frame_len; opening for writing truncates them). After it
 *    the old index and trailer are unreferenced bytes inside the chunk section ("dead"
 *    bytes: index entries are offsets, so the reference readers accept this). A metalayer
 *    update rewrites the whole header in step 3 when it fits one sector.
 *  Contiguous file, compaction and size-changing header edits (metalayer added): the packed
 *    frame is written to a temporary file in the same directory, fsync'ed and renamed over
 *    the old one (then the directory is fsync'ed). Compaction runs when dead bytes exceed
 *    the live ones (and 1 MiB), and when a writable schunk is freed with dead bytes in a
 *    small file or with much dead space.
 *  Sparse directory: a new or updated chunk goes to a new file number (never overwriting a
 *    referenced file); then chunks.b2frame is replaced through a temporary file + rename;
 *    files no longer referenced are removed afterwards.
 */
#include "frame_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAT_SPARSE_INDEX "chunks.b2frame"
/* Compact on close when the file is this small, whatever the dead fraction. */
#define CAT_COMPACT_SMALL (16 * 1024 * 1024)

/* ---- system call helpers ------------------------------------------------------------- */

#define io_fail cat_io_error

char *cat_path_join(const char *dir, const char *name) {
  size_t n = strlen(dir) + strlen(name) + 2;
  char *s = malloc(n);
  if (s != NULL) snprintf(s, n, "%s/%s", dir, name);
  return s;
}

static char *chunk_file_name(const char *dir, int64_t num) {
  char name[32];
  snprintf(name, sizeof name, "%08llX.chunk", (unsigned long long)num);
  return cat_path_join(dir, name);
}

/* Read a whole regular file of at most maxlen bytes into a new malloc'ed buffer. */
static int read_whole(caterva_ctx *ctx, const char *path, int64_t maxlen, uint8_t **out,
                      size_t *len) {
  struct stat st;
  uint8_t *buf = NULL;
  size_t got = 0;
  int rc = CATERVA_OK, fd = open(path, O_RDONLY);
  if (fd < 0) return io_fail(ctx, "cannot open", path);
  CAT_CHECK(leave, fstat(fd, &st) == 0, CATERVA_E_IO, "cannot stat '%s'", path);
  CAT_CHECK(leave, S_ISREG(st.st_mode) && st.st_size <= maxlen, CATERVA_E_CORRUPT,
            "'%s' is not a regular file of at most %lld bytes", path, (long long)maxlen);
  buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
  while (got < (size_t)st.st_size) {
    ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  CAT_CHECK(leave, got == (size_t)st.st_size, CATERVA_E_IO, "short read of '%s'", path);
  *out = buf;
  *len = got;
  buf = NULL;
leave:
  free(buf);
  close(fd);
  return rc;
}

/* ---- atomic replacement of a file ------------------------------------------------------- */

typedef int (*emit_fn)(caterva_ctx *ctx, void *arg, int fd, const char *path);

/* Write a complete new version of path: emit() fills a temporary file in the same
 * directory, which is synced and renamed over path. */
static int write_atomic(caterva_ctx *ctx, const char *path, emit_fn emit, void *arg, bool sync) {
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

/* ---- layout of a packed frame ----------------------------------------------------------- */

typedef struct plan {
  uint8_t *header, *index, *trailer;
  int64_t header_len;
  int32_t index_len, trailer_len;
  int64_t *entries; /* the new index */
  int64_t cbytes, frame_len;
} plan;

static void plan_free(plan *pl) {
  free(pl->header);
  free(pl->index);
  free(pl->trailer);
  free(pl->entries);
  memset(pl, 0, sizeof *pl);
}

/* Write a sparse frame's chunks.b2frame (header, index, trailer of pl) at path, atomically. */
static int write_sparse_index(caterva_ctx *ctx, const char *path, const plan *pl, bool sync) {
  pieces pc;
  memset(&pc, 0, sizeof pc);
  pc.p[0] = pl->header;
  pc.n[0] = (size_t)pl->header_len;
  pc.p[1] = pl->index;
  pc.n[1] = (size_t)pl->index_len;
  pc.p[2] = pl->trailer;
  pc.n[2] = (size_t)pl->trailer_len;
  return write_atomic(ctx, path, emit_pieces, &pc, sync);
}

/* Index, trailer and header for the given entries; cbytes is the chunk bytes recorded. */
static int plan_finish(caterva_ctx *ctx, caterva_schunk *sc, int frame_type, plan *pl,
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

/* Lay sc out as a new packed frame: stored chunks in index order; contiguous entries become
 * their offsets, sparse entries consecutive file numbers. */
static int plan_build(caterva_ctx *ctx, caterva_schunk *sc, int frame_type, plan *pl) {
  int64_t off = 0, files = 0;
  memset(pl, 0, sizeof *pl);
  if (sc->nchunks > 0) {
    pl->entries = malloc((size_t)sc->nchunks * sizeof *pl->entries);
    if (pl->entries == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  }
  for (int64_t i = 0; i < sc->nchunks; i++) {
    const uint8_t *p;
    uint8_t *tmp;
    int32_t cb;
    int rc;
    if (sc->entries[i] < 0) {
      pl->entries[i] = sc->entries[i];
      continue;
    }
    rc = cat_file_stored_chunk(ctx, sc, i, false, &p, &cb, &tmp);
    free(tmp);
    if (rc < 0) return rc;
    pl->entries[i] = frame_type == CAT_FRAME_CONTIGUOUS ? off : files++;
    off += cb;
  }
  pl->cbytes = off;
  return plan_finish(ctx, sc, frame_type, pl, sc->nchunks, sc->nbytes);
}

/* Visit the stored chunks of sc in index order. */
typedef int (*chunk_fn)(caterva_ctx *ctx, void *arg, int64_t k, const uint8_t *p, int32_t cb);

static int each_stored(caterva_ctx *ctx, caterva_schunk *sc, chunk_fn fn, void *arg) {
  int64_t k = 0;
  for (int64_t i = 0; i < sc->nchunks; i++) {
    const uint8_t *p;
    uint8_t *tmp;
    int32_t cb;
    int rc;
    if (sc->entries[i] < 0) continue;
    rc = cat_file_stored_chunk(ctx, sc, i, false, &p, &cb, &tmp);
    if (rc >= 0) rc = fn(ctx, arg, k++, p, cb);
    free(tmp);
    if (rc < 0) return rc;
  }
  return CATERVA_OK;
}

typedef struct frame_out {
  caterva_schunk *sc;
  const plan *pl;
  int fd;
  const char *path;
  uint8_t *buf;   /* to_buffer: destination */
  int64_t pos;
} frame_out;

static int put_bytes(caterva_ctx *ctx, frame_out *fo, const void *p, size_t n) {
  if (n == 0) return CATERVA_OK;
  if (fo->buf != NULL) {
    memcpy(fo->buf + fo->pos, p, n);
    fo->pos += (int64_t)n;
    return CATERVA_OK;
  }
  return cat_io_write(ctx, fo->fd, p, n, fo->path);
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
  plan pl;
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
  plan_free(&pl);
  return rc;
}

int cat_frame_packed_len(caterva_ctx *ctx, caterva_schunk *sc, int64_t *len) {
  plan pl;
  int rc = plan_build(ctx, sc, CAT_FRAME_CONTIGUOUS, &pl);
  if (rc >= 0) *len = pl.frame_len;
  plan_free(&pl);
  return rc;
}

/* ---- contiguous files ---------------------------------------------------------------------- */

/* Release the map (or, with retain_maps, keep it alive until the schunk is freed: a reader
 * may still hold pointers into it). */
static void unmap(caterva_schunk *sc) {
  cat_map *old;
  if (sc->base_mapped && sc->base != NULL && sc->retain_maps &&
      (old = malloc(sizeof *old)) != NULL) {
    old->p = (void *)sc->base;
    old->n = sc->map_len;
    old->next = sc->retired;
    sc->retired = old;
  } else if (sc->base_mapped && sc->base != NULL) {
    munmap((void *)sc->base, sc->map_len);
  }
  if (sc->base_mapped) {
    sc->base = NULL;
    sc->base_len = sc->map_len = 0;
    sc->base_mapped = false;
  }
}

/* Address space to map for a file of size bytes: room to grow by half (at least 4 MiB), so
 * that the commits appending to it keep their map instead of replacing it (a new map per
 * commit costs the munmap, and a page fault for every page read again). The room past the
 * end of the file is never read: the image is base_len bytes. */
static size_t map_reserve(off_t size) {
  size_t n = (size_t)size, room = n / 2 > ((size_t)4 << 20) ? n / 2 : (size_t)4 << 20;
  return n <= SIZE_MAX - room ? n + room : n;
}

/* Map the whole file behind fd read-only (the previous map, if any, is released). The same
 * file within the map's reservation keeps its map: the map is never written, so its pages
 * are the page cache's and show what was written since; a pointer into it stays valid. */
static int remap(caterva_ctx *ctx, caterva_schunk *sc, int fd) {
  struct stat st;
  void *m;
  size_t len;
  if (fstat(fd, &st) != 0) return io_fail(ctx, "cannot stat", sc->path);
  if (st.st_size < CAT_FH_SIZE)
    return cat_error(ctx, CATERVA_E_CORRUPT, "'%s' is too short (%lld bytes) for a frame",
                     sc->path, (long long)st.st_size);
  if (sc->base_mapped && sc->base != NULL && (uint64_t)st.st_ino == sc->seen_ino &&
      (uint64_t)st.st_size <= sc->map_len) {
    sc->base_len = (size_t)st.st_size;
    return CATERVA_OK;
  }
  unmap(sc);
  len = map_reserve(st.st_size);
  m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
  if (m == MAP_FAILED) return io_fail(ctx, "cannot map", sc->path);
  sc->base = m;
  sc->base_len = (size_t)st.st_size;
  sc->map_len = len;
  sc->base_mapped = true;
  sc->seen_ino = (uint64_t)st.st_ino;
  return CATERVA_OK;
}

/* Bytes of the chunk section no index entry refers to (for compaction decisions). */
static void count_dead(caterva_schunk *sc) {
  int64_t live = 0;
  for (int64_t i = 0; i < sc->nchunks; i++) {
    int64_t e = sc->entries[i];
    if (e >= 0 && e <= sc->section - CATERVA_CHUNK_HEADER_SIZE)
      live += cat_le32s(sc->base + sc->header_len + e + 12);
  }
  sc->dead = live < sc->section ? sc->section - live : 0;
}

/* Map the file at open. A reader may open it without the lock while a writer commits: the
 * header read through the map may then be newer than the size the map was taken with, and
 * name bytes appended since. Those bytes were written before the header, so the file's size
 * taken again covers them; a file that did not grow is left for the parser to report. */
static int map_for_open(caterva_ctx *ctx, caterva_schunk *sc, int fd) {
  int rc = CATERVA_OK;
  for (int tries = 0; tries < 8; tries++) {
    struct stat st;
    CAT_TRY(leave, remap(ctx, sc, fd));
    if (cat_be64(sc->base + CAT_FH_FRAME_LEN) <= (uint64_t)sc->base_len ||
        fstat(fd, &st) != 0 || (uint64_t)st.st_size <= (uint64_t)sc->base_len)
      break;
  }
leave:
  return rc;
}

static int contiguous_open(caterva_ctx *ctx, caterva_schunk *sc) {
  int fd = open(sc->path, sc->writable ? O_RDWR : O_RDONLY);
  int rc;
  if (fd < 0) return io_fail(ctx, "cannot open", sc->path);
  sc->store = CATERVA_STORE_CONTIGUOUS;
  CAT_TRY(fail, map_for_open(ctx, sc, fd));
  CAT_TRY(fail, cat_frame_parse_contiguous(ctx, sc, sc->base, sc->base_len));
  if (sc->writable && (int64_t)sc->base_len > sc->frame_len) {
    /* leftovers of an interrupted commit */
    CAT_TRY(fail, cat_io_truncate(ctx, fd, sc->frame_len, sc->path));
    CAT_TRY(fail, remap(ctx, sc, fd));
  }
  if (sc->writable) sc->fd = fd;
  else sc->rfd = fd;
  sc->wend = sc->frame_len;
  if (sc->writable) count_dead(sc);
  return CATERVA_OK;
fail:
  close(fd);
  return rc;
}

/* Rewrite a contiguous file packed (temporary file + rename) and switch to it. */
static int contiguous_rewrite(caterva_ctx *ctx, caterva_schunk *sc) {
  plan pl;
  frame_out fo;
  int fd, rc = plan_build(ctx, sc, CAT_FRAME_CONTIGUOUS, &pl);
  memset(&fo, 0, sizeof fo);
  CAT_TRY(leave, rc);
  fo.sc = sc;
  fo.pl = &pl;
  CAT_TRY(leave, write_atomic(ctx, sc->path, emit_frame, &fo, true));
  /* The new file is in place; from here on a failure leaves sc out of step with it. */
  fd = open(sc->path, O_RDWR);
  if (fd < 0 || remap(ctx, sc, fd) < 0) {
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
  sc->cbytes = sc->section = pl.cbytes;
  sc->dead = 0;
  sc->header_unsynced = false;
leave:
  plan_free(&pl);
  return rc;
}

/* Write a stored chunk after the end of what is written (never over a committed byte). */
static int contiguous_put(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                          int32_t cbytes, int64_t *entry) {
  int64_t off = sc->wend;
  int rc = cat_io_pwrite(ctx, sc->fd, chunk, (size_t)cbytes, off, sc->path);
  if (rc < 0) {
    (void)!ftruncate(sc->fd, (off_t)off); /* best effort: bytes past frame_len are ignored */
    return rc;
  }
  *entry = off - sc->header_len;
  sc->wend = off + cbytes;
  return CATERVA_OK;
}

/* The in-place commit described at the top of this file, of everything written up to
 * sc->wend: index and trailer after it, sync, then the header bytes. */
static int contiguous_commit(caterva_ctx *ctx, caterva_schunk *sc, int64_t *entries, int64_t n,
                             int64_t nbytes, bool full_header, int sync) {
  plan pl;
  uint8_t fixed[CAT_FH_SIZE], old[CAT_ATOMIC_HEADER_MAX], *tail = NULL;
  int64_t f0 = sc->frame_len, off = sc->wend, section = off - sc->header_len, hlen;
  int rc;
  memset(&pl, 0, sizeof pl);
  pl.entries = entries;
  pl.cbytes = section;
  rc = plan_finish(ctx, sc, CAT_FRAME_CONTIGUOUS, &pl, n, nbytes);
  pl.entries = NULL;
  CAT_TRY(undo, rc);
  /* Only the fixed part is rewritten unless full_header; then the caller has checked that
   * our encoding of the metalayers has the length of the one on disk. */
  CAT_CHECK(undo, !full_header || pl.header_len == sc->header_len, CATERVA_E_INVALID,
            "internal: header length changed in an in-place commit");
  /* index and trailer in one write */
  tail = malloc((size_t)pl.index_len + (size_t)pl.trailer_len + 1);
  CAT_CHECK(undo, tail != NULL, CATERVA_E_NOMEM, "out of memory");
  if (pl.index_len) memcpy(tail, pl.index, (size_t)pl.index_len);
  memcpy(tail + pl.index_len, pl.trailer, (size_t)pl.trailer_len);
  CAT_TRY(undo, cat_io_pwrite(ctx, sc->fd, tail, (size_t)pl.index_len + (size_t)pl.trailer_len,
                              off, sc->path));
  off += pl.index_len + pl.trailer_len;
  if (sync) CAT_TRY(undo, cat_io_fdatasync(ctx, sc->fd, sc->path)); /* size included */
  /* the header as it is, to put back if the commit cannot be made durable */
  hlen = full_header ? pl.header_len : CAT_FH_COMMIT_END;
  CAT_CHECK(undo, hlen <= (int64_t)sizeof old, CATERVA_E_INVALID, "internal: header too long");
  CAT_TRY(undo, cat_io_pread(ctx, sc->fd, old, (size_t)hlen, 0, sc->path));
  /* commit point */
  if (full_header) {
    rc = cat_io_pwrite(ctx, sc->fd, pl.header, (size_t)pl.header_len, 0, sc->path);
  } else {
    cat_frame_fixed_patch(sc, fixed, CAT_FRAME_CONTIGUOUS, sc->header_len, off, nbytes, section);
    rc = cat_io_pwrite(ctx, sc->fd, fixed + CAT_FH_COMMIT_START,
                       CAT_FH_COMMIT_END - CAT_FH_COMMIT_START, CAT_FH_COMMIT_START, sc->path);
  }
  /* A failed header write changed nothing (pwrite of one sector); keep the undo path. */
  CAT_TRY(undo, rc);
  /* NORMAL: the header stays unsynced until the next sync of this file (the next commit's
   * first one, a compaction's rename or closing the handle): a power loss may undo this
   * commit, never tear it, since everything the header names was synced before it. */
  if (sync && sync != CATERVA_SYNC_NORMAL &&
      (rc = cat_io_fdatasync(ctx, sc->fd, sc->path)) < 0) { /* same size: no times */
    /* Not durable: put the old header back, so that the failure leaves the old state, as a
     * failure before the commit point does. If even that fails, the file holds either. */
    char keep[CAT_ERRMSG_SIZE];
    snprintf(keep, sizeof keep, "%s", ctx != NULL ? ctx->errmsg : "");
    if (cat_io_pwrite(ctx, sc->fd, old, (size_t)hlen, 0, sc->path) >= 0 &&
        cat_io_truncate(ctx, sc->fd, f0, sc->path) >= 0 &&
        cat_io_fdatasync(ctx, sc->fd, sc->path) >= 0) {
      if (ctx != NULL) snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s", keep);
      sc->wend = f0;
      goto leave;
    }
    if (ctx != NULL) snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s", keep);
  }
  if (rc >= 0) rc = remap(ctx, sc, sc->fd);
  if (rc < 0) {
    sc->broken = true; /* the file may hold either version now */
    goto leave;
  }
  sc->header_unsynced = sync == CATERVA_SYNC_NORMAL;
  sc->dead += f0 - (sc->header_len + sc->section);
  sc->frame_len = sc->wend = off;
  sc->cbytes = sc->section = section;
  goto leave;
undo:
  (void)!ftruncate(sc->fd, (off_t)f0);
  sc->wend = f0;
leave:
  free(tail);
  plan_free(&pl);
  return rc;
}

/* ---- sparse directories ------------------------------------------------------------------- */

/* Remember which chunks.b2frame this object reflects (it is replaced by rename on every
 * change, so its inode and time tell a newer one). */
static void note_index_file(caterva_schunk *sc) {
  struct stat st;
  char *path = cat_path_join(sc->path, CAT_SPARSE_INDEX);
  if (path != NULL && stat(path, &st) == 0) {
    sc->seen_ino = (uint64_t)st.st_ino;
    sc->seen_mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
  }
  free(path);
}

/* Replace chunks.b2frame: header (frame type 1), offsets index, trailer. */
static int sparse_write_index(caterva_ctx *ctx, caterva_schunk *sc, int64_t *entries, int64_t n,
                              int64_t nbytes, int64_t cbytes, bool sync) {
  plan pl;
  char *path = cat_path_join(sc->path, CAT_SPARSE_INDEX);
  int rc;
  memset(&pl, 0, sizeof pl);
  CAT_CHECK(leave, path != NULL, CATERVA_E_NOMEM, "out of memory");
  pl.entries = entries;
  pl.cbytes = cbytes;
  rc = plan_finish(ctx, sc, CAT_FRAME_SPARSE, &pl, n, nbytes);
  pl.entries = NULL;
  CAT_TRY(leave, rc);
  CAT_TRY(leave, write_sparse_index(ctx, path, &pl, sync));
  sc->header_len = pl.header_len;
  sc->frame_len = pl.frame_len;
  note_index_file(sc);
leave:
  free(path);
  plan_free(&pl);
  return rc;
}

static int write_chunk_file(caterva_ctx *ctx, const char *dir, int64_t num, const uint8_t *chunk,
                            int32_t cbytes, bool sync) {
  char *path = chunk_file_name(dir, num);
  int fd = -1, rc;
  CAT_CHECK(leave, path != NULL, CATERVA_E_NOMEM, "out of memory");
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0) {
    rc = io_fail(ctx, "cannot create", path);
    goto leave;
  }
  rc = cat_io_write(ctx, fd, chunk, (size_t)cbytes, path);
  if (rc >= 0 && sync) rc = cat_io_fdatasync(ctx, fd, path); /* its name: the index's rename */
  if (rc < 0) (void)unlink(path); /* no partial file left behind (a full disk) */
leave:
  if (fd >= 0) close(fd);
  free(path);
  return rc;
}

int cat_file_read_chunk(caterva_ctx *ctx, const caterva_schunk *sc, int64_t num, uint8_t **out,
                        int32_t *len) {
  char *path = chunk_file_name(sc->path, num);
  size_t n = 0;
  int rc;
  if (path == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  rc = read_whole(ctx, path, INT32_MAX, out, &n);
  if (rc == CATERVA_E_NOTFOUND) rc = cat_error(ctx, CATERVA_E_CORRUPT, "sparse frame: missing chunk file '%s'", path);
  free(path);
  if (rc >= 0) *len = (int32_t)n;
  return rc;
}

void cat_file_unlink_chunk(const caterva_schunk *sc, int64_t num) {
  char *path = chunk_file_name(sc->path, num);
  if (path != NULL) (void)unlink(path);
  free(path);
}

/* A writer never reuses the number of a chunk file still present (a reader holding an
 * older index may read it): start above the highest one in the directory. Numbers of files
 * already removed may come back; a reader with an index that old finds its file missing
 * or, rarely, replaced (see README, "Guarantees"). */
static void skip_used_numbers(caterva_schunk *sc) {
  DIR *d = opendir(sc->path);
  struct dirent *de;
  if (d == NULL) return;
  while ((de = readdir(d)) != NULL) {
    int64_t num = cat_file_chunk_number(de->d_name);
    if (num >= sc->next_file) sc->next_file = num + 1;
  }
  closedir(d);
}

int64_t cat_file_chunk_number(const char *name) {
  int64_t v = 0;
  if (strlen(name) != 14 || strcmp(name + 8, ".chunk") != 0) return -1;
  for (int k = 0; k < 8; k++) {
    char ch = name[k];
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

static int cmp_num(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

int cat_file_live_chunks(caterva_ctx *ctx, const caterva_schunk *sc, int64_t **live, int64_t *n) {
  *live = NULL;
  *n = 0;
  if (sc->nchunks > 0 && (*live = malloc((size_t)sc->nchunks * sizeof **live)) == NULL)
    return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  for (int64_t i = 0; i < sc->nchunks; i++)
    if (sc->entries[i] >= 0) (*live)[(*n)++] = sc->entries[i];
  if (*n > 1) qsort(*live, (size_t)*n, sizeof **live, cmp_num);
  return CATERVA_OK;
}

bool cat_file_is_live(const int64_t *live, int64_t n, int64_t num) {
  return n > 0 && bsearch(&num, live, (size_t)n, sizeof num, cmp_num) != NULL;
}

static int sparse_open(caterva_ctx *ctx, caterva_schunk *sc) {
  char *path = cat_path_join(sc->path, CAT_SPARSE_INDEX);
  uint8_t *frame = NULL;
  size_t len = 0;
  int64_t tstart = 0;
  int rc;
  sc->store = CATERVA_STORE_SPARSE;
  CAT_CHECK(leave, path != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, read_whole(ctx, path, INT32_MAX, &frame, &len));
  CAT_TRY(leave, cat_frame_parse_header(ctx, sc, frame, len, CAT_FRAME_SPARSE));
  CAT_TRY(leave, cat_frame_parse_trailer(ctx, sc, frame, sc->header_len, &tstart));
  CAT_TRY(leave, cat_frame_parse_index(ctx, sc, frame, sc->header_len, tstart - sc->header_len));
  rc = CATERVA_OK;
  note_index_file(sc);
  for (int64_t i = 0; i < sc->nchunks; i++)
    if (sc->entries[i] >= sc->next_file) sc->next_file = sc->entries[i] + 1;
  if (sc->writable) skip_used_numbers(sc);
leave:
  free(frame);
  free(path);
  return rc;
}

/* A chunk file written inside a transaction is listed, so that a rollback removes it. */
static int note_written(caterva_ctx *ctx, caterva_schunk *sc, int64_t num) {
  if (sc->nwritten == sc->capwritten) {
    int64_t cap = sc->capwritten ? 2 * sc->capwritten : 64;
    int64_t *p = realloc(sc->written, (size_t)cap * sizeof *p);
    if (p == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    sc->written = p;
    sc->capwritten = cap;
  }
  sc->written[sc->nwritten++] = num;
  return CATERVA_OK;
}

void cat_file_unlink_written(caterva_schunk *sc, int64_t keep) {
  for (int64_t k = keep; k < sc->nwritten; k++) cat_file_unlink_chunk(sc, sc->written[k]);
  if (sc->nwritten > keep) sc->nwritten = keep;
}

void cat_file_forget_written(caterva_schunk *sc) { sc->nwritten = 0; }

/* A stored chunk goes to a new file number, never over a referenced file. */
static int sparse_put(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                      int32_t cbytes, int64_t *entry) {
  int64_t num = sc->next_file;
  int rc = CATERVA_OK;
  CAT_CHECK(leave, num <= 0xffffffffLL, CATERVA_E_OVERFLOW, "sparse frame: out of file numbers");
  CAT_TRY(leave, write_chunk_file(ctx, sc->path, num, chunk, cbytes, !sc->nosync));
  if (sc->txn != NULL && (rc = note_written(ctx, sc, num)) < 0) {
    cat_file_unlink_chunk(sc, num);
    goto leave;
  }
  *entry = num;
  sc->next_file = num + 1;
leave:
  return rc;
}

/* ---- many copies of one chunk (growth with a value fill) ---------------------------------- */

/* The copies of a contiguous file go out in writes of about this many bytes. */
#define CAT_COPIES_WRITE (1 << 20)

static int contiguous_put_copies(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                                 int32_t cbytes, const int64_t *map, int64_t n,
                                 int64_t *entries) {
  int64_t start = sc->wend, off = start, todo = 0, total, per;
  uint8_t *buf = NULL;
  int rc = CATERVA_OK;
  for (int64_t i = 0; i < n; i++) todo += map[i] < 0;
  total = todo;
  per = CAT_COPIES_WRITE / cbytes > 0 ? CAT_COPIES_WRITE / cbytes : 1;
  if (per > todo) per = todo;
  if (per == 0) return CATERVA_OK;
  buf = malloc((size_t)per * (size_t)cbytes);
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int64_t k = 0; k < per; k++) memcpy(buf + k * cbytes, chunk, (size_t)cbytes);
  while (todo > 0) {
    int64_t m = todo < per ? todo : per;
    CAT_TRY(undo, cat_io_pwrite(ctx, sc->fd, buf, (size_t)(m * cbytes), off, sc->path));
    off += m * cbytes;
    todo -= m;
  }
  /* every byte is written: hand out the offsets in position order */
  off = start - sc->header_len;
  for (int64_t i = 0; i < n; i++) {
    if (map[i] >= 0) continue;
    entries[i] = off;
    off += cbytes;
  }
  sc->wend = start + total * cbytes;
  goto leave;
undo:
  (void)!ftruncate(sc->fd, (off_t)start); /* best effort: bytes past frame_len are ignored */
leave:
  free(buf);
  return rc;
}

/* The directory's descriptor for the syncfs of the next commit, opened before the first file
 * it must cover is written (syncfs reports write-back errors since the descriptor's open). */
static int open_syncfd(caterva_ctx *ctx, caterva_schunk *sc) {
  if (sc->syncfd >= 0) return CATERVA_OK;
  sc->syncfd = open(sc->path, O_RDONLY | O_DIRECTORY);
  return sc->syncfd >= 0 ? CATERVA_OK : io_fail(ctx, "cannot open directory", sc->path);
}

/* A million chunk files with an fsync each took 316 s here (a journal commit per file);
 * without, the time of creating the files, and one syncfs at the commit (tens of ms). */
static int sparse_put_copies(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                             int32_t cbytes, const int64_t *map, int64_t n, int64_t *entries) {
  int64_t first = sc->next_file, num = first, keep = sc->nwritten;
  int rc = CATERVA_OK;
  CAT_TRY(undo, open_syncfd(ctx, sc));
  for (int64_t i = 0; i < n; i++) {
    if (map[i] >= 0) continue;
    CAT_CHECK(undo, num <= 0xffffffffLL, CATERVA_E_OVERFLOW, "sparse frame: out of file numbers");
    CAT_TRY(undo, write_chunk_file(ctx, sc->path, num, chunk, cbytes, false));
    num++;
    if (sc->txn != NULL) CAT_TRY(undo, note_written(ctx, sc, num - 1));
  }
  num = first;
  for (int64_t i = 0; i < n; i++)
    if (map[i] < 0) entries[i] = num++;
  sc->next_file = num;
  return CATERVA_OK;
undo:
  for (int64_t k = first; k < num; k++) cat_file_unlink_chunk(sc, k);
  if (sc->nwritten > keep) sc->nwritten = keep;
  return rc;
}

int cat_file_put_copies(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                        int32_t cbytes, const int64_t *map, int64_t n, int64_t *entries) {
  if (sc->broken) return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed update");
  if (sc->store == CATERVA_STORE_SPARSE)
    return sparse_put_copies(ctx, sc, chunk, cbytes, map, n, entries);
  return contiguous_put_copies(ctx, sc, chunk, cbytes, map, n, entries);
}

/* Before the index that names them: the chunk files written without an fsync. */
static int sync_pending(caterva_ctx *ctx, caterva_schunk *sc) {
  int rc;
  if (sc->syncfd < 0) return CATERVA_OK;
  rc = cat_io_syncfs(ctx, sc->syncfd, sc->path);
  if (rc < 0) return rc;
  close(sc->syncfd);
  sc->syncfd = -1;
  return CATERVA_OK;
}

/* ---- stored chunk bytes ------------------------------------------------------------------ */

/* Where chunk i's bytes are: owned in sc->data (memory store, cached chunk file), a sparse
 * chunk file, a chunk written past the committed section by the open transaction, or the
 * image (the owned copy or the file's map). */

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

static int ensure_data(caterva_ctx *ctx, caterva_schunk *sc) {
  if (sc->data != NULL || sc->nchunks == 0) return CATERVA_OK;
  sc->data = calloc((size_t)sc->nchunks, sizeof *sc->data);
  if (sc->data == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  return CATERVA_OK;
}

/* A sparse chunk file, read and validated. */
static int load_chunk_file(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, uint8_t **buf,
                           int32_t *cbytes) {
  int32_t len = 0;
  int rc = cat_file_read_chunk(ctx, sc, sc->entries[i], buf, &len);
  if (rc < 0) return rc;
  if (chunk_cbytes(*buf, len, cbytes) < 0) {
    free(*buf);
    *buf = NULL;
    return cat_error(ctx, CATERVA_E_CORRUPT, "chunk %lld (file %08llX.chunk) is malformed",
                     (long long)i, (unsigned long long)sc->entries[i]);
  }
  return CATERVA_OK;
}

int cat_file_stored_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, bool cache,
                          const uint8_t **p, int32_t *cbytes, uint8_t **tmp) {
  uint8_t *buf = NULL;
  int rc;
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
    if (cache && ensure_data(ctx, sc) == CATERVA_OK) sc->data[i] = buf;
    else *tmp = buf;
    *p = buf;
    return CATERVA_OK;
  }
  if (sc->txn != NULL && sc->entries[i] >= sc->section) {
    /* written by the open transaction, past the committed section */
    rc = cat_file_read_pending(ctx, sc, sc->entries[i], &buf, cbytes);
    if (rc < 0) return rc;
    if (chunk_cbytes(buf, *cbytes, cbytes) < 0) {
      free(buf);
      return cat_error(ctx, CATERVA_E_CORRUPT, "chunk %lld (uncommitted) is malformed",
                       (long long)i);
    }
    if (cache && ensure_data(ctx, sc) == CATERVA_OK) sc->data[i] = buf;
    else *tmp = buf;
    *p = buf;
    return CATERVA_OK;
  }
  if (sc->base == NULL || sc->entries[i] > sc->section - CATERVA_CHUNK_HEADER_SIZE)
    return cat_error(ctx, CATERVA_E_CORRUPT, "chunk %lld: no bytes behind its index entry",
                     (long long)i);
  *p = sc->base + sc->header_len + sc->entries[i];
  if (chunk_cbytes(*p, sc->section - sc->entries[i], cbytes) < 0)
    return cat_error(ctx, CATERVA_E_CORRUPT,
                     "chunk %lld at offset %lld is malformed or overruns the chunk section",
                     (long long)i, (long long)sc->entries[i]);
  return CATERVA_OK;
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

/* ---- entry points ------------------------------------------------------------------------ */

char *cat_file_journal_name(const char *path) {
  size_t n = strlen(path);
  char *s;
  while (n > 1 && path[n - 1] == '/') n--;
  s = malloc(n + sizeof CAT_JOURNAL_SUFFIX);
  if (s != NULL) {
    memcpy(s, path, n);
    memcpy(s + n, CAT_JOURNAL_SUFFIX, sizeof CAT_JOURNAL_SUFFIX);
  }
  return s;
}

/* A writer must not change an array that the journal of an interrupted group commit names
 * (group.c) before that commit is finished: its recovery would undo the change. */
static int check_no_journal(caterva_ctx *ctx, const char *path) {
  struct stat st;
  char *jp = cat_file_journal_name(path);
  int rc = CATERVA_OK;
  CAT_CHECK(leave, jp != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_CHECK(leave, lstat(jp, &st) != 0 && errno == ENOENT, CATERVA_E_BUSY,
            "'%s' is named by '%s', the journal of an interrupted commit of several arrays: "
            "finish it first (caterva_group_recover, or any write through a caterva table)",
            path, jp);
leave:
  free(jp);
  return rc;
}

int cat_file_open(caterva_ctx *ctx, caterva_schunk *sc, const char *path, int mode) {
  struct stat st;
  int rc;
  sc->writable = mode == CATERVA_OPEN_WRITE;
  sc->path = strdup(path);
  if (sc->path == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  if (sc->writable && (rc = check_no_journal(ctx, path)) < 0) return rc;
  if (stat(path, &st) != 0) return io_fail(ctx, "cannot open", path);
  if (S_ISDIR(st.st_mode)) return sparse_open(ctx, sc);
  if (S_ISREG(st.st_mode)) return contiguous_open(ctx, sc);
  return cat_error(ctx, CATERVA_E_INVALID, "'%s' is neither a file nor a directory", path);
}

int cat_file_create(caterva_ctx *ctx, caterva_schunk *sc) {
  int rc, fd;
  if (sc->store == CATERVA_STORE_SPARSE) {
    if (mkdir(sc->path, 0777) != 0) return io_fail(ctx, "cannot create directory", sc->path);
    rc = sparse_write_index(ctx, sc, NULL, 0, 0, 0, true);
    if (rc < 0) rmdir(sc->path);
    return rc;
  }
  /* Claim the name first so an existing file is never replaced. */
  fd = open(sc->path, O_WRONLY | O_CREAT | O_EXCL, 0666);
  if (fd < 0) return io_fail(ctx, "cannot create", sc->path);
  close(fd);
  rc = contiguous_rewrite(ctx, sc);
  if (rc < 0) unlink(sc->path);
  return rc;
}

int cat_file_put_chunk(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                       int32_t cbytes, int64_t *entry) {
  if (sc->broken) return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed update");
  if (sc->store == CATERVA_STORE_SPARSE) return sparse_put(ctx, sc, chunk, cbytes, entry);
  return contiguous_put(ctx, sc, chunk, cbytes, entry);
}

void cat_file_drop_chunk(caterva_schunk *sc, int64_t entry) {
  if (sc->store == CATERVA_STORE_SPARSE) {
    cat_file_unlink_chunk(sc, entry);
    if (entry == sc->next_file - 1) sc->next_file = entry;
  } else if (sc->header_len + entry < sc->wend) {
    sc->wend = sc->header_len + entry;
    (void)!ftruncate(sc->fd, (off_t)sc->wend);
  }
}

int cat_file_commit(caterva_ctx *ctx, caterva_schunk *sc, int64_t *entries, int64_t n,
                    int64_t nbytes, int64_t cbytes, bool full_header, int sync) {
  if (sc->broken) return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed update");
  if (sc->store == CATERVA_STORE_SPARSE) {
    /* NORMAL is FULL here: the replaced chunk files are removed right after the rename, so
     * the rename must be durable first */
    int rc = sync && !sc->nosync ? sync_pending(ctx, sc) : CATERVA_OK;
    if (rc < 0) return rc;
    return sparse_write_index(ctx, sc, entries, n, nbytes, cbytes, sync && !sc->nosync);
  }
  return contiguous_commit(ctx, sc, entries, n, nbytes, full_header, sync);
}

int cat_file_truncate_to(caterva_ctx *ctx, caterva_schunk *sc, int64_t len) {
  if (sc->store != CATERVA_STORE_CONTIGUOUS || sc->fd < 0) return CATERVA_OK;
  sc->wend = len;
  return cat_io_truncate(ctx, sc->fd, len, sc->path);
}

int cat_file_read_pending(caterva_ctx *ctx, caterva_schunk *sc, int64_t entry, uint8_t **out,
                          int32_t *len) {
  uint8_t head[CATERVA_CHUNK_HEADER_SIZE], *buf = NULL;
  int64_t off = sc->header_len + entry, avail = sc->wend - off;
  int32_t cb;
  int rc = CATERVA_OK;
  *out = NULL;
  CAT_CHECK(leave, sc->fd >= 0 && entry >= 0 && avail >= CATERVA_CHUNK_HEADER_SIZE,
            CATERVA_E_CORRUPT, "chunk entry %lld lies past the written end", (long long)entry);
  CAT_TRY(leave, cat_io_pread(ctx, sc->fd, head, sizeof head, off, sc->path));
  cb = cat_le32s(head + 12);
  CAT_CHECK(leave, cb >= CATERVA_CHUNK_HEADER_SIZE && cb <= avail, CATERVA_E_CORRUPT,
            "chunk at offset %lld overruns the written end", (long long)entry);
  buf = malloc((size_t)cb);
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, cat_io_pread(ctx, sc->fd, buf, (size_t)cb, off, sc->path));
  *out = buf;
  *len = cb;
  buf = NULL;
leave:
  free(buf);
  return rc;
}

int cat_file_rewrite(caterva_ctx *ctx, caterva_schunk *sc) {
  if (sc->broken) return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed update");
  if (sc->store == CATERVA_STORE_SPARSE) {
    int rc = !sc->nosync ? sync_pending(ctx, sc) : CATERVA_OK;
    if (rc < 0) return rc;
    return sparse_write_index(ctx, sc, sc->entries, sc->nchunks, sc->nbytes, sc->cbytes, !sc->nosync);
  }
  return contiguous_rewrite(ctx, sc);
}

/* Save as a sparse directory: chunk files 0, 1, ... then chunks.b2frame. */
typedef struct sparse_out {
  const char *dir;
  int64_t nfiles;
} sparse_out;

static int put_chunk_file(caterva_ctx *ctx, void *arg, int64_t k, const uint8_t *p, int32_t cb) {
  sparse_out *so = arg;
  int rc = write_chunk_file(ctx, so->dir, k, p, cb, true);
  if (rc >= 0) so->nfiles = k + 1;
  return rc;
}

static void remove_sparse(const char *dir, int64_t nfiles) {
  char *idx = cat_path_join(dir, CAT_SPARSE_INDEX);
  for (int64_t k = 0; k < nfiles; k++) {
    char *p = chunk_file_name(dir, k);
    if (p != NULL) unlink(p);
    free(p);
  }
  if (idx != NULL) unlink(idx);
  free(idx);
  rmdir(dir);
}

static int save_sparse(caterva_ctx *ctx, caterva_schunk *sc, const char *path) {
  plan pl;
  sparse_out so = {path, 0};
  char *idx = NULL;
  int rc;
  memset(&pl, 0, sizeof pl);
  if (mkdir(path, 0777) != 0) return io_fail(ctx, "cannot create directory", path);
  CAT_TRY(fail, plan_build(ctx, sc, CAT_FRAME_SPARSE, &pl));
  CAT_TRY(fail, each_stored(ctx, sc, put_chunk_file, &so));
  idx = cat_path_join(path, CAT_SPARSE_INDEX);
  CAT_CHECK(fail, idx != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(fail, write_sparse_index(ctx, idx, &pl, true));
  cat_io_sync_parent(path);
  rc = CATERVA_OK;
  goto leave;
fail:
  remove_sparse(path, so.nfiles);
leave:
  free(idx);
  plan_free(&pl);
  return rc;
}

static int save_contiguous(caterva_ctx *ctx, caterva_schunk *sc, const char *path) {
  plan pl;
  frame_out fo;
  int rc, fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0666);
  memset(&pl, 0, sizeof pl);
  memset(&fo, 0, sizeof fo);
  if (fd < 0) return io_fail(ctx, "cannot create", path);
  close(fd);
  CAT_TRY(fail, plan_build(ctx, sc, CAT_FRAME_CONTIGUOUS, &pl));
  fo.sc = sc;
  fo.pl = &pl;
  CAT_TRY(fail, write_atomic(ctx, path, emit_frame, &fo, true));
  rc = CATERVA_OK;
  goto leave;
fail:
  unlink(path);
leave:
  plan_free(&pl);
  return rc;
}

int cat_file_save(caterva_ctx *ctx, caterva_schunk *sc, const char *path, int store) {
  if (sc->broken) return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed update");
  if (store == CATERVA_STORE_SPARSE) return save_sparse(ctx, sc, path);
  return save_contiguous(ctx, sc, path);
}

void cat_file_close(caterva_schunk *sc) {
  cat_remote_close(sc);
  bool compact = sc->store == CATERVA_STORE_CONTIGUOUS && sc->writable && !sc->broken &&
                 !sc->no_autocompact && sc->txn == NULL &&
                 sc->fd >= 0 && sc->dead > 0 &&
                 (sc->frame_len <= CAT_COMPACT_SMALL || sc->dead * 8 >= sc->frame_len);
  if (compact) {
    caterva_ctx *ctx = NULL;
    if (caterva_ctx_new(1, &ctx) == CATERVA_OK) (void)contiguous_rewrite(ctx, sc);
    caterva_ctx_free(ctx);
  }
  if (sc->header_unsynced && sc->fd >= 0) (void)cat_io_fdatasync(NULL, sc->fd, sc->path);
  sc->header_unsynced = false;
  sc->retain_maps = false;
  unmap(sc);
  cat_file_release_retired(sc);
  if (sc->fd >= 0) close(sc->fd);
  sc->fd = -1;
  if (sc->rfd >= 0) close(sc->rfd);
  sc->rfd = -1;
  if (sc->syncfd >= 0) close(sc->syncfd);
  sc->syncfd = -1;
  free(sc->written);
  sc->written = NULL;
  sc->nwritten = sc->capwritten = 0;
}

int cat_file_stale(caterva_ctx *ctx, caterva_schunk *sc) {
  uint8_t disk[CAT_FH_SIZE], mine[CAT_FH_SIZE];
  struct stat st;
  int fd, rc;
  if (sc->remote != NULL) return cat_remote_stale(ctx, sc);
  if (sc->store == CATERVA_STORE_SPARSE) {
    char *path = cat_path_join(sc->path, CAT_SPARSE_INDEX);
    if (path == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    rc = stat(path, &st);
    free(path);
    if (rc != 0) return 1;
    return (uint64_t)st.st_ino != sc->seen_ino ||
           (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec != sc->seen_mtime;
  }
  fd = open(sc->path, O_RDONLY);
  if (fd < 0) return 1; /* gone or replaced: let the reopen report it */
  rc = cat_io_pread(ctx, fd, disk, sizeof disk, 0, sc->path);
  /* a compaction renames a new file over the path */
  if (rc >= 0 && fstat(fd, &st) == 0 && (uint64_t)st.st_ino != sc->seen_ino) rc = -1;
  close(fd);
  if (rc < 0) return 1;
  cat_frame_fixed_patch(sc, mine, CAT_FRAME_CONTIGUOUS, sc->header_len, sc->frame_len, sc->nbytes,
                        sc->cbytes);
  return memcmp(disk + CAT_FH_COMMIT_START, mine + CAT_FH_COMMIT_START,
                CAT_FH_COMMIT_END - CAT_FH_COMMIT_START) != 0;
}

void cat_file_release_retired(caterva_schunk *sc) {
  while (sc->retired != NULL) {
    cat_map *m = sc->retired;
    sc->retired = m->next;
    if (m->n > 0) munmap(m->p, m->n);
    else free(m->p);
    free(m);
  }
}

void cat_file_retire_bytes(caterva_schunk *sc, void *p) {
  cat_map *m;
  if (p == NULL) return;
  if (!sc->retain_maps || (m = malloc(sizeof *m)) == NULL) {
    free(p);
    return;
  }
  m->p = p;
  m->n = 0;
  m->next = sc->retired;
  sc->retired = m;
}

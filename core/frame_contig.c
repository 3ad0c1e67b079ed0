/*
 * frame_contig.c -- contiguous frame files: the read-only map of the file (with room to
 * grow), opening (leftovers of an interrupted commit cut), chunks appended after the written
 * end (the open transaction's last ones held in memory), the in-place commit whose crash
 * order frame_file.c describes, copies of one chunk for a value-fill growth, and reading a
 * chunk the open transaction wrote. The packed rewrite (compaction) is in frame_pack.c.
 */
#include "frame_disk_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Release the map (or, with retain_maps, keep it alive until the schunk is freed: a reader
 * may still hold pointers into it). */
void cat_contig_unmap(caterva_schunk *sc) {
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

/* A reader's small file read whole into memory: a map would cost its mmap, its page fault and
 * its munmap's TLB flush (half of a 1,000-chunk array's open in a process that opened it
 * before). Bytes past the end of a file a writer truncated since the stat (the leftovers of an
 * interrupted commit, past the frame) are not asked for: the image is what the read found, as
 * a map's pages past the end were never read. The copy of an earlier try (map_for_open) is
 * freed first. */
static int read_image(caterva_ctx *ctx, caterva_schunk *sc, int fd, const struct stat *st) {
  uint8_t *b = malloc(st->st_size > 0 ? (size_t)st->st_size : 1);
  size_t got = 0;
  int rc;
  if (b == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  rc = cat_io_pread_upto(ctx, fd, b, (size_t)st->st_size, 0, sc->path, &got);
  if (rc >= 0 && got < CAT_FH_SIZE)
    rc = cat_error(ctx, CATERVA_E_CORRUPT, "'%s' is too short (%zu bytes) for a frame", sc->path,
                   got);
  if (rc < 0) {
    free(b);
    return rc;
  }
  if (!sc->base_mapped) free((void *)sc->base);
  sc->base = b;
  sc->base_len = sc->map_len = got;
  sc->base_mapped = false;
  sc->seen_ino = (uint64_t)st->st_ino;
  return CATERVA_OK;
}

/* Map the whole file behind fd read-only (the previous map, if any, is released). The same
 * file within the map's reservation keeps its map: the map is never written, so its pages
 * are the page cache's and show what was written since; a pointer into it stays valid. */
int cat_contig_remap(caterva_ctx *ctx, caterva_schunk *sc, int fd) {
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
  cat_contig_unmap(sc);
  if (!sc->writable && st.st_size <= CAT_READ_WHOLE_MAX) return read_image(ctx, sc, fd, &st);
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
    CAT_TRY(leave, cat_contig_remap(ctx, sc, fd));
    if (cat_be64(sc->base + CAT_FH_FRAME_LEN) <= (uint64_t)sc->base_len ||
        fstat(fd, &st) != 0 || (uint64_t)st.st_size <= (uint64_t)sc->base_len)
      break;
  }
leave:
  return rc;
}

int cat_contig_open(caterva_ctx *ctx, caterva_schunk *sc) {
  int fd = open(sc->path, sc->writable ? O_RDWR : O_RDONLY);
  int rc;
  if (fd < 0) return io_fail(ctx, "cannot open", sc->path);
  sc->store = CATERVA_STORE_CONTIGUOUS;
  CAT_TRY(fail, map_for_open(ctx, sc, fd));
  sc->base_kept = !sc->writable; /* only writers map again */
  CAT_TRY(fail, cat_frame_parse_contiguous(ctx, sc, sc->base, sc->base_len));
  if (sc->writable && (int64_t)sc->base_len > sc->frame_len) {
    /* leftovers of an interrupted commit */
    CAT_TRY(fail, cat_io_truncate(ctx, fd, sc->frame_len, sc->path));
    CAT_TRY(fail, cat_contig_remap(ctx, sc, fd));
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

/* ---- the open transaction's last chunks, held in memory --------------------------------
 *
 * A transaction's chunks go after the written end, where no committed byte lives. The last of
 * them, up to CAT_PEND_MAX bytes, are held in sc->pend instead of being written at once: they
 * are the file's bytes [pend_off, wend), and the file itself ends at pend_off meanwhile. A
 * commit in place writes them first (pend_spill), in one write; a packed commit reads them
 * from here into the new file, so that a file it replaces never receives them (a slab UPDATE
 * that rewrites a quarter of a file wrote that quarter twice). Nothing of a transaction is
 * durable before its commit, so holding its bytes changes no crash state. */
#define CAT_PEND_MAX ((size_t)8 << 20)

static size_t pend_max = CAT_PEND_MAX;
static int pend_env_read;

void caterva_test_hold_max(int64_t n) {
  __atomic_store_n(&pend_env_read, 1, __ATOMIC_RELAXED);
  __atomic_store_n(&pend_max, n < 0 || n > (int64_t)CAT_PEND_MAX ? CAT_PEND_MAX : (size_t)n,
                   __ATOMIC_RELAXED);
}

/* The room for held chunks: caterva_test_hold_max's, or CATERVA_HOLD_MAX (bytes, read once:
 * a test that drives a process through SQL sets it), else CAT_PEND_MAX. */
static size_t pend_room(void) {
  if (!__atomic_exchange_n(&pend_env_read, 1, __ATOMIC_RELAXED)) {
    const char *s = getenv("CATERVA_HOLD_MAX");
    char *end = NULL;
    long long n = s != NULL ? strtoll(s, &end, 10) : -1;
    if (s != NULL && end != s && *end == '\0' && n >= 0 && n <= (long long)CAT_PEND_MAX)
      __atomic_store_n(&pend_max, (size_t)n, __ATOMIC_RELAXED);
  }
  return __atomic_load_n(&pend_max, __ATOMIC_RELAXED);
}

/* Write the held chunks where they belong. On failure they stay held (the index of the open
 * transaction names them; its statement fails, not the chunks before it). */
static int pend_spill(caterva_ctx *ctx, caterva_schunk *sc) {
  int rc;
  if (sc->pend_len == 0) return CATERVA_OK;
  rc = cat_io_pwrite(ctx, sc->fd, sc->pend, sc->pend_len, sc->pend_off, sc->path);
  if (rc < 0) {
    (void)!ftruncate(sc->fd, (off_t)sc->pend_off); /* best effort: past frame_len, ignored */
    return rc;
  }
  sc->pend_len = 0;
  return CATERVA_OK;
}

void cat_contig_pend_free(caterva_schunk *sc) {
  free(sc->pend);
  sc->pend = NULL;
  sc->pend_len = sc->pend_cap = 0;
}

/* An empty buffer of more than 1 MiB is given back (a file left open after a large
 * transaction keeps no more); a small one stays for the next transaction's chunks. */
static void pend_trim(caterva_schunk *sc) {
  if (sc->pend_len == 0 && sc->pend_cap > ((size_t)1 << 20)) cat_contig_pend_free(sc);
}

/* Hold cbytes bytes of chunk at wend: 1, or 0 when they do not fit (the caller writes them). */
static int pend_hold(caterva_schunk *sc, const uint8_t *chunk, int32_t cbytes) {
  size_t need = sc->pend_len + (size_t)cbytes, max = pend_room();
  if (need > max || (sc->pend_len > 0 && sc->pend_off + (int64_t)sc->pend_len != sc->wend))
    return 0;
  if (need > sc->pend_cap) {
    size_t cap = sc->pend_cap * 2 > need ? sc->pend_cap * 2 : need;
    uint8_t *p;
    if (cap > max) cap = max;
    if ((p = realloc(sc->pend, cap)) == NULL) return 0;
    sc->pend = p;
    sc->pend_cap = cap;
  }
  if (sc->pend_len == 0) sc->pend_off = sc->wend;
  memcpy(sc->pend + sc->pend_len, chunk, (size_t)cbytes);
  sc->pend_len = need;
  return 1;
}

/* The file's bytes [off, off + n) when they are held (a chunk is held whole or not at all). */
static const uint8_t *pend_at(const caterva_schunk *sc, int64_t off, int64_t n) {
  if (sc->pend_len == 0 || off < sc->pend_off || n > (int64_t)sc->pend_len ||
      off - sc->pend_off > (int64_t)sc->pend_len - n)
    return NULL;
  return sc->pend + (off - sc->pend_off);
}

int cat_contig_cut(caterva_ctx *ctx, caterva_schunk *sc, int64_t len) {
  if (sc->pend_len > 0 && len >= sc->pend_off && len <= sc->wend) {
    sc->pend_len = (size_t)(len - sc->pend_off); /* the file already ends at pend_off */
    sc->wend = len;
    pend_trim(sc);
    return CATERVA_OK;
  }
  if (sc->pend_len > 0 && len > sc->wend) {
    int rc = pend_spill(ctx, sc);
    if (rc < 0) return rc;
  }
  sc->pend_len = 0;
  sc->wend = len;
  pend_trim(sc);
  return cat_io_truncate(ctx, sc->fd, len, sc->path);
}

/* Write a stored chunk after the end of what is written (never over a committed byte): held
 * in memory while it fits, else written after the held ones. */
int cat_contig_put(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                   int32_t cbytes, int64_t *entry) {
  int64_t off = sc->wend;
  int rc;
  if (!pend_hold(sc, chunk, cbytes)) {
    CAT_TRY(leave, pend_spill(ctx, sc));
    off = sc->wend;
    rc = cat_io_pwrite(ctx, sc->fd, chunk, (size_t)cbytes, off, sc->path);
    if (rc < 0) {
      (void)!ftruncate(sc->fd, (off_t)off); /* best effort: bytes past frame_len are ignored */
      goto leave;
    }
  }
  *entry = off - sc->header_len;
  sc->wend = off + cbytes;
  rc = CATERVA_OK;
leave:
  return rc;
}

/* The in-place commit described at the top of frame_file.c, of everything written up to
 * sc->wend: index and trailer after it, sync, then the header bytes. */
int cat_contig_commit(caterva_ctx *ctx, caterva_schunk *sc, int64_t *entries, int64_t n,
                      int64_t nbytes, bool full_header, int sync) {
  cat_plan pl;
  uint8_t fixed[CAT_FH_SIZE], old[CAT_ATOMIC_HEADER_MAX], *tail = NULL;
  int64_t f0 = sc->frame_len, off = sc->wend, section = off - sc->header_len, hlen;
  int rc;
  memset(&pl, 0, sizeof pl);
  CAT_TRY(undo, pend_spill(ctx, sc));
  pl.entries = entries;
  pl.cbytes = section;
  rc = cat_plan_finish(ctx, sc, CAT_FRAME_CONTIGUOUS, &pl, n, nbytes);
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
  if (rc >= 0) rc = cat_contig_remap(ctx, sc, sc->fd);
  if (rc < 0) {
    sc->broken = true; /* the file may hold either version now */
    goto leave;
  }
  sc->header_unsynced = sync == CATERVA_SYNC_NORMAL;
  pend_trim(sc);
  sc->dead += f0 - (sc->header_len + sc->section);
  sc->frame_len = sc->wend = off;
  sc->cbytes = sc->section = section;
  goto leave;
undo:
  (void)!ftruncate(sc->fd, (off_t)f0);
  sc->wend = f0;
  sc->pend_len = 0; /* as the bytes written past f0: the transaction is rolled back */
leave:
  free(tail);
  cat_plan_free(&pl);
  return rc;
}

/* The copies of a contiguous file go out in writes of about this many bytes. */
#define CAT_COPIES_WRITE (1 << 20)

int cat_contig_put_copies(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                          int32_t cbytes, const int64_t *map, int64_t n,
                          int64_t *entries) {
  int64_t start, off, todo = 0, total, per;
  uint8_t *buf = NULL;
  int rc = pend_spill(ctx, sc);
  if (rc < 0) return rc;
  start = off = sc->wend;
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

int cat_file_pending_size(caterva_ctx *ctx, caterva_schunk *sc, int64_t entry, int32_t *len) {
  uint8_t head[CATERVA_CHUNK_HEADER_SIZE];
  int64_t off = sc->header_len + entry, avail = sc->wend - off;
  const uint8_t *held;
  int32_t cb;
  int rc = CATERVA_OK;
  CAT_CHECK(leave, sc->fd >= 0 && entry >= 0 && avail >= CATERVA_CHUNK_HEADER_SIZE,
            CATERVA_E_CORRUPT, "chunk entry %lld lies past the written end", (long long)entry);
  if ((held = pend_at(sc, off, sizeof head)) != NULL) memcpy(head, held, sizeof head);
  else CAT_TRY(leave, cat_io_pread(ctx, sc->fd, head, sizeof head, off, sc->path));
  cb = cat_le32s(head + 12);
  CAT_CHECK(leave, cb >= CATERVA_CHUNK_HEADER_SIZE && cb <= avail, CATERVA_E_CORRUPT,
            "chunk at offset %lld overruns the written end", (long long)entry);
  *len = cb;
leave:
  return rc;
}

int cat_file_read_pending(caterva_ctx *ctx, caterva_schunk *sc, int64_t entry, uint8_t **out,
                          int32_t *len) {
  uint8_t *buf = NULL;
  const uint8_t *held;
  int32_t cb = 0;
  int rc = CATERVA_OK;
  *out = NULL;
  CAT_TRY(leave, cat_file_pending_size(ctx, sc, entry, &cb));
  buf = malloc((size_t)cb);
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
  if ((held = pend_at(sc, sc->header_len + entry, cb)) != NULL) memcpy(buf, held, (size_t)cb);
  else CAT_TRY(leave, cat_io_pread(ctx, sc->fd, buf, (size_t)cb, sc->header_len + entry, sc->path));
  *out = buf;
  *len = cb;
  buf = NULL;
leave:
  free(buf);
  return rc;
}

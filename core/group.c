/*
 * group.c -- one atomic commit across several arrays (files or sparse directories), and the
 * recovery of one that a crash interrupted. A single array commits at one commit point
 * (frame_file.c); several arrays commit one after the other, so a journal makes them one:
 *
 *   1. every array's transaction is made ready (cache flushed, statistics stored): all that
 *      can fail before a commit point;
 *   2. the journal is built: for each array its real path and what restores its committed
 *      state -- a contiguous file's inode, committed length and header bytes (its commit
 *      rewrites only bytes of the first sector and appends past that length), a sparse
 *      frame's whole chunks.b2frame (its commit replaces that file; the chunk files the old
 *      index names are kept until step 6, keep_replaced);
 *   3. the journal is written next to every array (`<path>.cvjournal`, identical copies; the
 *      first array in the caller's order is the leader) and synced, with its directory;
 *   4. the arrays commit one by one;
 *   5. the callers' generation counters are incremented once more (readers that started
 *      before step 4 see the change), then the leader's journal is removed and its directory
 *      synced: the group is committed;
 *   6. the other copies are removed; sparse chunk files no index names any more are removed.
 *
 * A crash leaves copies of the journal. Whoever opens one of the arrays for writing next,
 * holding the exclusive locks of all of them, calls caterva_group_recover: when the
 * leader's journal with the same identity still exists, the group did not reach step 5 and
 * every array is put back to its state in the journal (those that had not committed are
 * already there; what lies past a contiguous file's old length is cut); otherwise the group
 * committed and the copy is stale: it is removed. A copy that does not parse was being
 * written in step 3, before any commit: removed too. A failure in step 4 puts the arrays
 * that committed back the same way before returning.
 *
 * Journal bytes (little-endian): "CVGROUP1", a 16-byte identity (pid, time, counter), the
 * number of arrays (u32), then per array: path length (u32), path, store (u8: 1 contiguous,
 * 2 sparse), inode (u64), length (i64), saved length (u32), saved bytes; last an FNV-1a
 * 64-bit hash of everything before it.
 */
#include "array_layer_internal.h"
#include "frame_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define GJ_MAGIC "CVGROUP1"
#define GJ_SPARSE_INDEX "chunks.b2frame"
#define GJ_MAX_BYTES ((int64_t)INT32_MAX)

typedef struct gj_rec {
  char *path;        /* real path of the array */
  int store;         /* CATERVA_STORE_CONTIGUOUS or _SPARSE */
  uint64_t ino;      /* contiguous: the file's inode */
  int64_t len;       /* contiguous: its committed length */
  uint8_t *saved;    /* contiguous: its first header bytes; sparse: chunks.b2frame */
  uint32_t nsaved;
} gj_rec;

typedef struct gj {
  uint8_t id[16];
  uint32_t n;
  gj_rec *rec;
} gj;

static void gj_free(gj *j) {
  for (uint32_t i = 0; j->rec != NULL && i < j->n; i++) {
    free(j->rec[i].path);
    free(j->rec[i].saved);
  }
  free(j->rec);
  memset(j, 0, sizeof *j);
}

/* `<path>.cvjournal` (frame_file.c, whose write opens refuse arrays that have one). */
static char *journal_name(const char *path) { return cat_file_journal_name(path); }

static uint64_t fnv64(const uint8_t *p, size_t n) {
  uint64_t h = 14695981039346656037ULL;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ULL;
  return h;
}

/* ---- encoding -------------------------------------------------------------------------- */

static int gj_encode(caterva_ctx *ctx, const gj *j, uint8_t **out, size_t *len) {
  size_t n = 8 + 16 + 4 + 8, off = 0;
  uint8_t *b;
  for (uint32_t i = 0; i < j->n; i++) n += 4 + strlen(j->rec[i].path) + 1 + 8 + 8 + 4 + j->rec[i].nsaved;
  if ((int64_t)n > GJ_MAX_BYTES) return cat_error(ctx, CATERVA_E_OVERFLOW, "journal too large");
  b = malloc(n);
  if (b == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  memcpy(b, GJ_MAGIC, 8);
  memcpy(b + 8, j->id, 16);
  cat_put_le32(b + 24, j->n);
  off = 28;
  for (uint32_t i = 0; i < j->n; i++) {
    const gj_rec *r = &j->rec[i];
    uint32_t pl = (uint32_t)strlen(r->path);
    cat_put_le32(b + off, pl);
    memcpy(b + off + 4, r->path, pl);
    off += 4 + pl;
    b[off++] = (uint8_t)r->store;
    cat_put_le64(b + off, r->ino);
    cat_put_le64(b + off + 8, (uint64_t)r->len);
    cat_put_le32(b + off + 16, r->nsaved);
    off += 20;
    if (r->nsaved > 0) memcpy(b + off, r->saved, r->nsaved);
    off += r->nsaved;
  }
  cat_put_le64(b + off, fnv64(b, off));
  *out = b;
  *len = off + 8;
  return CATERVA_OK;
}

/* Take n bytes at *off of a buffer of len bytes. */
static bool take(size_t len, size_t *off, size_t n) {
  if (n > len - *off) return false;
  *off += n;
  return true;
}

static int gj_decode(caterva_ctx *ctx, const uint8_t *b, size_t len, gj *j) {
  size_t off = 28;
  int rc = CATERVA_OK;
  memset(j, 0, sizeof *j);
  CAT_CHECK(bad, len >= 36 && memcmp(b, GJ_MAGIC, 8) == 0 &&
                     fnv64(b, len - 8) == cat_le64(b + len - 8), CATERVA_E_CORRUPT, "torn");
  len -= 8;
  memcpy(j->id, b + 8, 16);
  j->n = cat_le32(b + 24);
  CAT_CHECK(bad, j->n >= 1 && j->n <= 4096, CATERVA_E_CORRUPT, "array count");
  j->rec = calloc(j->n, sizeof *j->rec);
  CAT_CHECK(bad, j->rec != NULL, CATERVA_E_NOMEM, "out of memory");
  for (uint32_t i = 0; i < j->n; i++) {
    gj_rec *r = &j->rec[i];
    size_t at = off;
    uint32_t pl;
    CAT_CHECK(bad, take(len, &off, 4), CATERVA_E_CORRUPT, "short");
    pl = cat_le32(b + at);
    CAT_CHECK(bad, pl > 0 && take(len, &off, pl) && memchr(b + at + 4, 0, pl) == NULL,
              CATERVA_E_CORRUPT, "path");
    r->path = cat_strndup((const char *)b + at + 4, pl);
    CAT_CHECK(bad, r->path != NULL, CATERVA_E_NOMEM, "out of memory");
    at = off;
    CAT_CHECK(bad, take(len, &off, 21), CATERVA_E_CORRUPT, "short");
    r->store = b[at];
    r->ino = cat_le64(b + at + 1);
    r->len = (int64_t)cat_le64(b + at + 9);
    r->nsaved = cat_le32(b + at + 17);
    CAT_CHECK(bad, (r->store == CATERVA_STORE_CONTIGUOUS || r->store == CATERVA_STORE_SPARSE) &&
                       r->len >= 0 && take(len, &off, r->nsaved),
              CATERVA_E_CORRUPT, "record");
    r->saved = malloc(r->nsaved ? r->nsaved : 1);
    CAT_CHECK(bad, r->saved != NULL, CATERVA_E_NOMEM, "out of memory");
    if (r->nsaved > 0) memcpy(r->saved, b + at + 21, r->nsaved);
  }
  CAT_CHECK(bad, off == len, CATERVA_E_CORRUPT, "trailing bytes");
  return CATERVA_OK;
bad:
  gj_free(j);
  return rc;
}

/* ---- files ------------------------------------------------------------------------------ */

/* A whole regular file into a new buffer; CATERVA_E_NOTFOUND when it does not exist. */
static int read_all(caterva_ctx *ctx, const char *path, uint8_t **out, size_t *len) {
  struct stat st;
  uint8_t *buf = NULL;
  int rc = CATERVA_OK, fd = open(path, O_RDONLY | O_CLOEXEC);
  *out = NULL;
  *len = 0;
  if (fd < 0) return cat_io_error(ctx, "cannot open", path);
  CAT_CHECK(leave, fstat(fd, &st) == 0, CATERVA_E_IO, "cannot stat '%s'", path);
  CAT_CHECK(leave, S_ISREG(st.st_mode) && st.st_size <= GJ_MAX_BYTES, CATERVA_E_CORRUPT,
            "'%s' is not a regular file of at most 2 GiB", path);
  buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
  if (st.st_size > 0) CAT_TRY(leave, cat_io_pread(ctx, fd, buf, (size_t)st.st_size, 0, path));
  *out = buf;
  *len = (size_t)st.st_size;
  buf = NULL;
leave:
  free(buf);
  close(fd);
  return rc;
}

/* Write path whole (created or truncated), synced with its directory when sync. */
static int write_all(caterva_ctx *ctx, const char *path, const uint8_t *b, size_t n, bool sync) {
  int rc, fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) return cat_io_error(ctx, "cannot create", path);
  rc = cat_io_write(ctx, fd, b, n, path);
  if (rc >= 0 && sync) rc = cat_io_fsync(ctx, fd, path);
  close(fd);
  if (rc >= 0 && sync) cat_io_sync_parent(path);
  return rc;
}

static void unlink_synced(const char *path, bool sync) {
  if (unlink(path) == 0 && sync) cat_io_sync_parent(path);
}

/* Does the copy at jp carry identity id? */
static bool same_id(const char *jp, const uint8_t id[16]) {
  uint8_t *b = NULL;
  size_t len = 0;
  bool same = read_all(NULL, jp, &b, &len) >= 0 && len >= 24 && memcmp(b + 8, id, 16) == 0;
  free(b);
  return same;
}

/* Remove the journal copies of j (the leader's last, or not at all without with_leader);
 * with check, only copies that still carry j's identity. */
static void remove_copies(const gj *j, bool with_leader, bool check, bool sync) {
  for (uint32_t i = j->n; i-- > (with_leader ? 0u : 1u);) {
    char *jp = journal_name(j->rec[i].path);
    if (jp != NULL && (!check || same_id(jp, j->id))) unlink_synced(jp, sync);
    free(jp);
  }
}

/* ---- putting an array back --------------------------------------------------------------- */

/* A contiguous file: its header bytes back, then cut to its committed length. */
static int restore_contiguous(caterva_ctx *ctx, const gj_rec *r) {
  struct stat st;
  uint8_t *cur = NULL;
  int rc = CATERVA_OK, fd = open(r->path, O_RDWR | O_CLOEXEC);
  if (fd < 0) return cat_io_error(ctx, "cannot open", r->path);
  CAT_CHECK(leave, fstat(fd, &st) == 0, CATERVA_E_IO, "cannot stat '%s'", r->path);
  CAT_CHECK(leave, (uint64_t)st.st_ino == r->ino && st.st_size >= r->len &&
                       r->len >= (int64_t)r->nsaved,
            CATERVA_E_CORRUPT,
            "'%s' was replaced or shortened since its interrupted group commit: it cannot be "
            "put back", r->path);
  cur = malloc(r->nsaved ? r->nsaved : 1);
  CAT_CHECK(leave, cur != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, cat_io_pread(ctx, fd, cur, r->nsaved, 0, r->path));
  if (memcmp(cur, r->saved, r->nsaved) != 0) {
    CAT_TRY(leave, cat_io_pwrite(ctx, fd, r->saved, r->nsaved, 0, r->path));
    CAT_TRY(leave, cat_io_fsync(ctx, fd, r->path));
  }
  if (st.st_size > r->len) {
    CAT_TRY(leave, cat_io_truncate(ctx, fd, r->len, r->path));
    CAT_TRY(leave, cat_io_fsync(ctx, fd, r->path));
  }
leave:
  free(cur);
  close(fd);
  return rc;
}

/* A sparse frame: its chunks.b2frame back (temporary file and rename). */
static int restore_sparse(caterva_ctx *ctx, const gj_rec *r) {
  static unsigned counter;
  char *idx = cat_path_join(r->path, GJ_SPARSE_INDEX), *tmp = NULL;
  uint8_t *cur = NULL;
  size_t ncur = 0, n;
  int rc = CATERVA_OK;
  CAT_CHECK(leave, idx != NULL, CATERVA_E_NOMEM, "out of memory");
  if (read_all(ctx, idx, &cur, &ncur) >= 0 && ncur == r->nsaved &&
      memcmp(cur, r->saved, ncur) == 0)
    goto leave;
  n = strlen(idx) + 48;
  tmp = malloc(n);
  CAT_CHECK(leave, tmp != NULL, CATERVA_E_NOMEM, "out of memory");
  /* named like the index replacement of frame_file.c, so that the collector knows it */
  snprintf(tmp, n, "%s.tmp%ld.%u", idx, (long)getpid(),
           __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED) + 1000000u);
  CAT_TRY(leave, write_all(ctx, tmp, r->saved, r->nsaved, true));
  rc = cat_io_rename(ctx, tmp, idx);
  if (rc < 0) {
    unlink(tmp);
    goto leave;
  }
  cat_io_sync_parent(idx);
leave:
  if (rc < 0 && ctx != NULL) {
    char why[CAT_ERRMSG_SIZE];
    snprintf(why, sizeof why, "%s", ctx->errmsg);
    cat_error(ctx, rc, "cannot put back '%s': %s", r->path, why);
  }
  free(cur);
  free(tmp);
  free(idx);
  return rc;
}

static int restore(caterva_ctx *ctx, const gj_rec *r) {
  return r->store == CATERVA_STORE_SPARSE ? restore_sparse(ctx, r) : restore_contiguous(ctx, r);
}

/* Put back every array of j; the first failure is returned after all are tried. */
static int restore_all(caterva_ctx *ctx, const gj *j, uint32_t n) {
  int rc = CATERVA_OK;
  char keep[CAT_ERRMSG_SIZE] = "";
  for (uint32_t i = 0; i < n; i++) {
    int r = restore(ctx, &j->rec[i]);
    if (r < 0 && rc >= 0) {
      rc = r;
      if (ctx != NULL) snprintf(keep, sizeof keep, "%s", ctx->errmsg);
    }
  }
  if (rc < 0 && ctx != NULL) snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s", keep);
  return rc;
}

/* ---- the group commit ------------------------------------------------------------------ */

/* The real path of p (malloc'ed: realpath's own allocation would bypass the library's
 * allocation hooks), or NULL. */
static char *real_path(const char *p) {
  char *b = malloc(PATH_MAX);
  if (b != NULL && realpath(p, b) == NULL) {
    free(b);
    b = NULL;
  }
  return b;
}

/* What restores sc's committed state. */
static int rec_take(caterva_ctx *ctx, caterva_schunk *sc, gj_rec *r) {
  struct stat st;
  char *idx = NULL;
  size_t n = 0;
  int rc = CATERVA_OK;
  r->path = real_path(sc->path);
  CAT_CHECK(leave, r->path != NULL, CATERVA_E_IO, "cannot resolve '%s'", sc->path);
  r->store = sc->store;
  if (sc->store == CATERVA_STORE_SPARSE) {
    idx = cat_path_join(sc->path, GJ_SPARSE_INDEX);
    CAT_CHECK(leave, idx != NULL, CATERVA_E_NOMEM, "out of memory");
    CAT_TRY(leave, read_all(ctx, idx, &r->saved, &n));
    r->nsaved = (uint32_t)n;
    goto leave;
  }
  CAT_CHECK(leave, sc->fd >= 0 && fstat(sc->fd, &st) == 0, CATERVA_E_IO,
            "cannot stat '%s'", sc->path);
  r->ino = (uint64_t)st.st_ino;
  r->len = sc->frame_len;
  r->nsaved = (uint32_t)(sc->header_len < CAT_ATOMIC_HEADER_MAX ? sc->header_len
                                                                 : CAT_ATOMIC_HEADER_MAX);
  r->saved = malloc(r->nsaved);
  CAT_CHECK(leave, r->saved != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, cat_io_pread(ctx, sc->fd, r->saved, r->nsaved, 0, sc->path));
leave:
  free(idx);
  return rc;
}

static void make_id(uint8_t id[16]) {
  static unsigned counter;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  cat_put_le32(id, (uint32_t)getpid());
  cat_put_le32(id + 4, __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED));
  cat_put_le64(id + 8, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
}

/* Steps 1-3: ready transactions, the journal built and written next to every array. */
static int group_prepare(caterva_ctx *ctx, caterva_array **a, int n, bool sync, gj *j) {
  uint8_t *bytes = NULL;
  size_t len = 0;
  int rc = CATERVA_OK, written = 0;
  for (int i = 0; i < n; i++) {
    caterva_schunk *sc = a[i]->sc;
    CAT_CHECK(leave, caterva_schunk_in_txn(sc) && sc->path != NULL && sc->remote == NULL &&
                         (sc->store == CATERVA_STORE_CONTIGUOUS ||
                          sc->store == CATERVA_STORE_SPARSE),
              CATERVA_E_INVALID, "a group commit needs an open transaction on a local file");
    CAT_TRY(leave, cat_array_commit_prepare(ctx, a[i]));
    CAT_CHECK(leave, cat_txn_commit_in_place(sc), CATERVA_E_UNSUPPORTED,
              "'%s': this commit would rewrite the whole file (its metalayers changed "
              "length), which a commit of several arrays cannot undo", sc->path);
  }
  make_id(j->id);
  j->n = (uint32_t)n;
  j->rec = calloc((size_t)n, sizeof *j->rec);
  CAT_CHECK(leave, j->rec != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int i = 0; i < n; i++) CAT_TRY(leave, rec_take(ctx, a[i]->sc, &j->rec[i]));
  for (int i = 0; i < n; i++)
    for (int k = 0; k < i; k++)
      CAT_CHECK(leave, strcmp(j->rec[i].path, j->rec[k].path) != 0, CATERVA_E_INVALID,
                "'%s' is named twice in one group commit", j->rec[i].path);
  CAT_TRY(leave, gj_encode(ctx, j, &bytes, &len));
  for (int i = n - 1; i >= 0; i--) { /* the leader's copy last */
    char *jp = journal_name(j->rec[i].path);
    CAT_CHECK(leave, jp != NULL, CATERVA_E_NOMEM, "out of memory");
    rc = write_all(ctx, jp, bytes, len, sync);
    if (rc < 0) unlink(jp);
    free(jp);
    CAT_TRY(leave, rc);
    written++;
  }
leave:
  if (rc < 0 && written > 0) { /* nothing committed: the copies written go */
    for (int i = n - 1; i >= n - written; i--) {
      char *jp = journal_name(j->rec[i].path);
      if (jp != NULL) unlink(jp);
      free(jp);
    }
  }
  free(bytes);
  return rc;
}

/* Remove the sparse chunk files listed (after the group committed). */
static void drop_replaced(caterva_schunk *sc, const int64_t *nums, int64_t n) {
  for (int64_t k = 0; k < n; k++) cat_file_unlink_chunk(sc, nums[k]);
}

int caterva_array_commit_group(caterva_ctx *ctx, caterva_array **a, int n, int sync,
                               caterva_lock **locks) {
  gj j;
  int64_t *replaced[CATERVA_GROUP_MAX] = {0}, nreplaced[CATERVA_GROUP_MAX] = {0};
  int rc = CATERVA_OK, committed = 0;
  char *leader = NULL;
  memset(&j, 0, sizeof j);
  CAT_CHECK(leave, a != NULL && n >= 1 && n <= CATERVA_GROUP_MAX, CATERVA_E_INVALID,
            "a group commit takes 1 to %d arrays", CATERVA_GROUP_MAX);
  CAT_TRY(leave, group_prepare(ctx, a, n, sync != 0, &j));
  for (int i = 0; i < n; i++) {
    CAT_TRY(undo, cat_txn_replaced(ctx, a[i]->sc, &replaced[i], &nreplaced[i]));
    a[i]->sc->keep_replaced = true;
    a[i]->sc->commit_pack = -1; /* the journal restores a contiguous file's header and length */
  }
  for (; committed < n; committed++) {
    /* each array fully durable before the leader's journal goes (never NORMAL here) */
    rc = cat_array_commit_finish(ctx, a[committed], sync ? CATERVA_SYNC_FULL : CATERVA_SYNC_OFF);
    a[committed]->sc->keep_replaced = false;
    if (rc < 0) {
      if (a[committed]->sc->broken) committed++; /* its file may hold either state */
      goto undo;
    }
  }
  for (int i = 0; locks != NULL && i < n; i++)
    if (locks[i] != NULL) (void)caterva_lock_bump(ctx, locks[i], NULL);
  leader = journal_name(j.rec[0].path);
  CAT_CHECK(leave, leader != NULL, CATERVA_E_NOMEM, "out of memory");
  if (unlink(leader) != 0) {
    rc = cat_io_error(ctx, "cannot remove the journal", leader);
    goto undo;
  }
  if (sync) cat_io_sync_parent(leader); /* the group is committed */
  remove_copies(&j, false, false, sync != 0);
  for (int i = 0; i < n; i++) drop_replaced(a[i]->sc, replaced[i], nreplaced[i]);
  goto leave;
undo : {
  /* put back the arrays that committed; the journal stays for the next writer if that fails */
  char keep[CAT_ERRMSG_SIZE];
  snprintf(keep, sizeof keep, "%s", ctx != NULL ? ctx->errmsg : "");
  for (int i = 0; i < n; i++) a[i]->sc->keep_replaced = false;
  if (restore_all(ctx, &j, (uint32_t)committed) >= 0) remove_copies(&j, true, false, sync != 0);
  if (ctx != NULL) snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s", keep);
}
leave:
  for (int i = 0; i < CATERVA_GROUP_MAX; i++) free(replaced[i]);
  free(leader);
  gj_free(&j);
  return rc;
}

/* ---- recovery --------------------------------------------------------------------------- */

/* The journal copy next to path: CATERVA_GROUP_NONE, _STALE (*j empty when it does not
 * parse) or _PENDING (the leader's copy has the same identity). */
static int journal_state(caterva_ctx *ctx, const char *path, gj *j) {
  char *jp = journal_name(path), *lp = NULL;
  uint8_t *b = NULL;
  size_t len = 0;
  gj lead;
  int rc, state = CATERVA_GROUP_STALE;
  memset(j, 0, sizeof *j);
  memset(&lead, 0, sizeof lead);
  if (jp == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  rc = read_all(ctx, jp, &b, &len);
  if (rc == CATERVA_E_NOTFOUND) {
    state = CATERVA_GROUP_NONE;
    rc = CATERVA_OK;
    if (ctx != NULL) ctx->errmsg[0] = '\0';
    goto leave;
  }
  CAT_TRY(leave, rc);
  rc = gj_decode(ctx, b, len, j);
  if (rc == CATERVA_E_NOMEM) goto leave;
  if (rc < 0) goto stale; /* torn: written before any array committed */
  free(b);
  b = NULL;
  lp = journal_name(j->rec[0].path);
  CAT_CHECK(leave, lp != NULL, CATERVA_E_NOMEM, "out of memory");
  if (read_all(ctx, lp, &b, &len) >= 0 && gj_decode(ctx, b, len, &lead) >= 0 &&
      memcmp(lead.id, j->id, sizeof j->id) == 0)
    state = CATERVA_GROUP_PENDING;
stale:
  rc = CATERVA_OK;
leave:
  gj_free(&lead);
  free(b);
  free(jp);
  free(lp);
  if (rc < 0) gj_free(j);
  return rc < 0 ? rc : state;
}

int caterva_group_journal(caterva_ctx *ctx, const char *path, char ***paths, int *n) {
  gj j;
  int state = journal_state(ctx, path, &j), rc = CATERVA_OK;
  if (paths != NULL) *paths = NULL;
  if (n != NULL) *n = 0;
  if (state < 0 || paths == NULL || n == NULL || j.n == 0) goto leave;
  *paths = calloc(j.n, sizeof **paths);
  CAT_CHECK(leave, *paths != NULL, CATERVA_E_NOMEM, "out of memory");
  for (uint32_t i = 0; i < j.n; i++) {
    (*paths)[i] = j.rec[i].path;
    j.rec[i].path = NULL;
  }
  *n = (int)j.n;
leave:
  gj_free(&j);
  return rc < 0 ? rc : state;
}

void caterva_group_free_paths(char **paths, int n) {
  for (int i = 0; paths != NULL && i < n; i++) free(paths[i]);
  free(paths);
}

int caterva_group_recover(caterva_ctx *ctx, const char *path, int *outcome) {
  gj j;
  char *jp = NULL;
  int state = journal_state(ctx, path, &j), rc = CATERVA_OK;
  if (outcome != NULL) *outcome = CATERVA_GROUP_NONE;
  if (state <= CATERVA_GROUP_NONE) return state;
  if (state == CATERVA_GROUP_PENDING) {
    /* interrupted before its commit point: every array back, then the copies (leader last) */
    CAT_TRY(leave, restore_all(ctx, &j, j.n));
    remove_copies(&j, true, true, true);
  } else if (j.n > 0) {
    remove_copies(&j, false, true, true); /* committed: the copies left are stale */
  }
  jp = journal_name(path); /* a torn copy, or one whose array a caller names otherwise */
  CAT_CHECK(leave, jp != NULL, CATERVA_E_NOMEM, "out of memory");
  unlink_synced(jp, true);
  if (outcome != NULL) *outcome = state;
leave:
  free(jp);
  gj_free(&j);
  return rc;
}

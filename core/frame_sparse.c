/*
 * frame_sparse.c -- sparse frame directories: chunk files (one per stored chunk, never
 * written over a file the index refers to), their numbers, chunks.b2frame (replaced whole
 * through frame_plan.c), the chunk files a transaction wrote, and the syncfs that makes
 * unsynced chunk files durable before the index that names them. The crash order is in
 * frame_file.c. A sparse frame in S3 (sc->remote) keeps its numbers and its transaction's
 * list here, and sends the bytes to frame_s3.c.
 */
#include "frame_disk_internal.h"
#include "frame_s3.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

char *cat_sparse_chunk_path(const char *dir, int64_t num) {
  char name[32];
  snprintf(name, sizeof name, "%08llX.chunk", (unsigned long long)num);
  return cat_path_join(dir, name);
}

/* Read a whole regular file of at most maxlen bytes into a new malloc'ed buffer; the file's
 * stat into *seen when it is not NULL (that of the file read, whatever replaces it after). */
static int read_whole(caterva_ctx *ctx, const char *path, int64_t maxlen, uint8_t **out,
                      size_t *len, struct stat *seen) {
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
  CAT_TRY(leave, cat_io_pread_upto(ctx, fd, buf, (size_t)st.st_size, 0, path, &got));
  CAT_CHECK(leave, got == (size_t)st.st_size, CATERVA_E_IO, "short read of '%s'", path);
  *out = buf;
  *len = got;
  if (seen != NULL) *seen = st;
  buf = NULL;
leave:
  free(buf);
  close(fd);
  return rc;
}

/* Remember which chunks.b2frame this object reflects (it is replaced by rename on every
 * change, so its inode and time tell a newer one): st, the one read. */
static void note_index_file(caterva_schunk *sc, const struct stat *st) {
  sc->seen_ino = (uint64_t)st->st_ino;
  sc->seen_mtime = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

/* Replace chunks.b2frame: header (frame type 1), offsets index, trailer. */
int cat_sparse_write_index(caterva_ctx *ctx, caterva_schunk *sc, int64_t *entries, int64_t n,
                           int64_t nbytes, int64_t cbytes, bool sync) {
  struct stat st;
  cat_plan pl;
  char *path = cat_path_join(sc->path, CAT_SPARSE_INDEX);
  int rc;
  memset(&pl, 0, sizeof pl);
  if (sc->remote != NULL) {
    free(path);
    return cat_s3_commit(ctx, sc, entries, n, nbytes, cbytes);
  }
  CAT_CHECK(leave, path != NULL, CATERVA_E_NOMEM, "out of memory");
  pl.entries = entries;
  pl.cbytes = cbytes;
  rc = cat_plan_finish(ctx, sc, CAT_FRAME_SPARSE, &pl, n, nbytes);
  pl.entries = NULL;
  CAT_TRY(leave, rc);
  CAT_TRY(leave, cat_plan_write_sparse(ctx, path, &pl, sync));
  sc->header_len = pl.header_len;
  sc->frame_len = pl.frame_len;
  if (stat(path, &st) == 0) note_index_file(sc, &st); /* ours: the writer holds the lock */
leave:
  free(path);
  cat_plan_free(&pl);
  return rc;
}

int cat_sparse_write_chunk(caterva_ctx *ctx, const char *dir, int64_t num, const uint8_t *chunk,
                           int32_t cbytes, bool sync) {
  char *path = cat_sparse_chunk_path(dir, num);
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
  char *path = cat_sparse_chunk_path(sc->path, num);
  size_t n = 0;
  int rc;
  if (path == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  rc = read_whole(ctx, path, INT32_MAX, out, &n, NULL);
  if (rc == CATERVA_E_NOTFOUND) rc = cat_error(ctx, CATERVA_E_CORRUPT, "sparse frame: missing chunk file '%s'", path);
  free(path);
  if (rc >= 0) *len = (int32_t)n;
  return rc;
}

void cat_file_unlink_chunk(const caterva_schunk *sc, int64_t num) {
  char *path;
  if (sc->remote != NULL) { /* a pending chunk dropped; uploaded ones stay (see frame_s3.c) */
    cat_s3_forget((caterva_schunk *)sc, num);
    return;
  }
  path = cat_sparse_chunk_path(sc->path, num);
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

static int open_image(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame, size_t len,
                      int64_t *tstart) {
  int rc;
  CAT_TRY(leave, cat_frame_parse_header(ctx, sc, frame, len, CAT_FRAME_SPARSE));
  CAT_TRY(leave, cat_frame_parse_trailer(ctx, sc, frame, sc->header_len, tstart));
  if (frame == sc->base) {
    rc = cat_index_try_lazy(ctx, sc, sc->header_len, *tstart - sc->header_len);
    if (rc != 0) return rc < 0 ? rc : CATERVA_OK;
  }
  rc = cat_frame_parse_index(ctx, sc, frame, sc->header_len, *tstart - sc->header_len);
leave:
  return rc < 0 ? rc : CATERVA_OK;
}

/* A reader's image of chunks.b2frame (sc->base, kept until sc is freed): read whole when it is
 * small, else mapped (a writer replaces the file by rename, never in place, so the map keeps
 * the bytes read). */
static int reader_image(caterva_ctx *ctx, caterva_schunk *sc, const char *path,
                        struct stat *st) {
  void *m;
  int rc = CATERVA_OK, fd = open(path, O_RDONLY);
  if (fd < 0) return io_fail(ctx, "cannot open", path);
  CAT_CHECK(leave, fstat(fd, st) == 0, CATERVA_E_IO, "cannot stat '%s'", path);
  CAT_CHECK(leave, S_ISREG(st->st_mode) && st->st_size <= INT32_MAX, CATERVA_E_CORRUPT,
            "'%s' is not a regular file of at most %lld bytes", path, (long long)INT32_MAX);
  if (st->st_size <= CAT_READ_WHOLE_MAX) {
    close(fd);
    fd = -1;
    /* by path again: a file that replaced it since is read whole, whatever its size */
    CAT_TRY(leave, read_whole(ctx, path, INT32_MAX, (uint8_t **)&sc->base, &sc->base_len, st));
  } else {
    m = mmap(NULL, (size_t)st->st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    CAT_CHECK(leave, m != MAP_FAILED, CATERVA_E_IO, "cannot map '%s'", path);
    sc->base = m;
    sc->base_len = sc->map_len = (size_t)st->st_size;
    sc->base_mapped = true;
  }
  sc->base_kept = true;
leave:
  if (fd >= 0) close(fd);
  return rc;
}

/* chunks.b2frame. A reader keeps it as its image (reader_image): its vlmetalayers are read
 * in it, and its offsets index a block at a time (frame_index.c), as a contiguous file's; a
 * writer reads it whole, decodes the index whole and frees the bytes. */
int cat_sparse_open(caterva_ctx *ctx, caterva_schunk *sc) {
  char *path = cat_path_join(sc->path, CAT_SPARSE_INDEX);
  uint8_t *frame = NULL;
  size_t len = 0;
  int64_t tstart = 0;
  struct stat st;
  int rc = CATERVA_OK;
  sc->store = CATERVA_STORE_SPARSE;
  CAT_CHECK(leave, path != NULL, CATERVA_E_NOMEM, "out of memory");
  if (sc->writable) CAT_TRY(leave, read_whole(ctx, path, INT32_MAX, &frame, &len, &st));
  else CAT_TRY(leave, reader_image(ctx, sc, path, &st));
  CAT_TRY(leave, open_image(ctx, sc, sc->writable ? frame : sc->base,
                            sc->writable ? len : sc->base_len, &tstart));
  note_index_file(sc, &st);
  if (sc->writable) {
    for (int64_t i = 0; i < sc->nchunks; i++)
      if (sc->entries[i] >= sc->next_file) sc->next_file = sc->entries[i] + 1;
    skip_used_numbers(sc);
  }
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
int cat_sparse_put(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                   int32_t cbytes, int64_t *entry) {
  int64_t num = sc->next_file;
  int rc = CATERVA_OK;
  CAT_CHECK(leave, num <= 0xffffffffLL, CATERVA_E_OVERFLOW, "sparse frame: out of file numbers");
  if (sc->remote != NULL)
    CAT_TRY(leave, cat_s3_put(ctx, sc, chunk, cbytes, num));
  else
    CAT_TRY(leave, cat_sparse_write_chunk(ctx, sc->path, num, chunk, cbytes, !sc->nosync));
  if (sc->txn != NULL && (rc = note_written(ctx, sc, num)) < 0) {
    cat_file_unlink_chunk(sc, num);
    goto leave;
  }
  *entry = num;
  sc->next_file = num + 1;
leave:
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
int cat_sparse_put_copies(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                          int32_t cbytes, const int64_t *map, int64_t n, int64_t *entries) {
  int64_t first = sc->next_file, num = first, keep = sc->nwritten;
  int rc = CATERVA_OK;
  if (sc->remote == NULL) CAT_TRY(undo, open_syncfd(ctx, sc));
  for (int64_t i = 0; i < n; i++) {
    if (map[i] >= 0) continue;
    CAT_CHECK(undo, num <= 0xffffffffLL, CATERVA_E_OVERFLOW, "sparse frame: out of file numbers");
    if (sc->remote != NULL)
      CAT_TRY(undo, cat_s3_put(ctx, sc, chunk, cbytes, num));
    else
      CAT_TRY(undo, cat_sparse_write_chunk(ctx, sc->path, num, chunk, cbytes, false));
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

/* Before the index that names them: the chunk files written without an fsync. */
int cat_sparse_sync_pending(caterva_ctx *ctx, caterva_schunk *sc) {
  int rc;
  if (sc->syncfd < 0) return CATERVA_OK;
  rc = cat_io_syncfs(ctx, sc->syncfd, sc->path);
  if (rc < 0) return rc;
  close(sc->syncfd);
  sc->syncfd = -1;
  return CATERVA_OK;
}

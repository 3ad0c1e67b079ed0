/*
 * frame_file.c -- frames on disk, the entry points: open, create, put, commit, rewrite, save
 * and close a frame file or directory, each sent to its store. The layer's files, from the
 * bottom up: frame_plan.c (a new frame version's pieces, atomic file replacement),
 * frame_sparse.c (sparse directories), frame_contig.c (contiguous files), frame_stored.c
 * (where a stored chunk's bytes are), frame_pack.c (packed rewrites and copies), this file.
 * Uses frame_format.c for the bytes of headers, trailers and indices; never calls into
 * schunk.c. What they share is in frame_disk_internal.h.
 *
 * Crash safety (what a process dying at any instant leaves behind):
 *
 *  Contiguous file, chunk edits and vlmetalayer changes ("commit"):
 *    1. the new chunk (if any), then a new offsets index and a new trailer are written
 *       AFTER the current end of the frame; nothing the current header refers to is touched
 *       (a transaction's last chunks, up to 8 MiB, are held in memory until this step and
 *       written in one write: frame_contig.c);
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
 *  Contiguous file, compaction, size-changing header edits (metalayer added) and commits
 *    that would leave more dead bytes than the caller allows (caterva_schunk_set_commit_pack):
 *    the packed frame is written to a temporary file in the same directory, fsync'ed and
 *    renamed over the old one (then the directory is fsync'ed); the old file's committed
 *    bytes are never touched, so a failure before the rename leaves the old state.
 *    Compaction runs when dead bytes exceed the live ones (and 1 MiB), and when a writable
 *    schunk is freed with dead bytes in a small file or with much dead space.
 *  Sparse directory: a new or updated chunk goes to a new file number (never overwriting a
 *    referenced file); then chunks.b2frame is replaced through a temporary file + rename;
 *    files no longer referenced are removed afterwards.
 */
#include "frame_disk_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Compact on close when the file is this small, whatever the dead fraction. */
#define CAT_COMPACT_SMALL (16 * 1024 * 1024)

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
  if (S_ISDIR(st.st_mode)) return cat_sparse_open(ctx, sc);
  if (S_ISREG(st.st_mode)) return cat_contig_open(ctx, sc);
  return cat_error(ctx, CATERVA_E_INVALID, "'%s' is neither a file nor a directory", path);
}

int cat_file_create(caterva_ctx *ctx, caterva_schunk *sc) {
  int rc, fd;
  if (sc->store == CATERVA_STORE_SPARSE) {
    if (mkdir(sc->path, 0777) != 0) return io_fail(ctx, "cannot create directory", sc->path);
    rc = cat_sparse_write_index(ctx, sc, NULL, 0, 0, 0, true);
    if (rc < 0) rmdir(sc->path);
    return rc;
  }
  /* Claim the name first so an existing file is never replaced. */
  fd = open(sc->path, O_WRONLY | O_CREAT | O_EXCL, 0666);
  if (fd < 0) return io_fail(ctx, "cannot create", sc->path);
  close(fd);
  rc = cat_pack_rewrite_contiguous(ctx, sc);
  if (rc < 0) unlink(sc->path);
  return rc;
}

int cat_file_put_chunk(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                       int32_t cbytes, int64_t *entry) {
  if (sc->broken) return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed update");
  if (sc->store == CATERVA_STORE_SPARSE) return cat_sparse_put(ctx, sc, chunk, cbytes, entry);
  return cat_contig_put(ctx, sc, chunk, cbytes, entry);
}

void cat_file_drop_chunk(caterva_schunk *sc, int64_t entry) {
  if (sc->store == CATERVA_STORE_SPARSE) {
    cat_file_unlink_chunk(sc, entry);
    if (entry == sc->next_file - 1) sc->next_file = entry;
  } else if (sc->header_len + entry < sc->wend) {
    (void)cat_contig_cut(NULL, sc, sc->header_len + entry); /* best effort, as before */
  }
}

int cat_file_put_copies(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                        int32_t cbytes, const int64_t *map, int64_t n, int64_t *entries) {
  if (sc->broken) return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed update");
  if (sc->store == CATERVA_STORE_SPARSE)
    return cat_sparse_put_copies(ctx, sc, chunk, cbytes, map, n, entries);
  return cat_contig_put_copies(ctx, sc, chunk, cbytes, map, n, entries);
}

int cat_file_commit(caterva_ctx *ctx, caterva_schunk *sc, int64_t *entries, int64_t n,
                    int64_t nbytes, int64_t cbytes, bool full_header, int sync) {
  if (sc->broken) return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed update");
  if (sc->store == CATERVA_STORE_SPARSE) {
    /* NORMAL is FULL here: the replaced chunk files are removed right after the rename, so
     * the rename must be durable first */
    int rc = sync && !sc->nosync ? cat_sparse_sync_pending(ctx, sc) : CATERVA_OK;
    if (rc < 0) return rc;
    return cat_sparse_write_index(ctx, sc, entries, n, nbytes, cbytes, sync && !sc->nosync);
  }
  return cat_contig_commit(ctx, sc, entries, n, nbytes, full_header, sync);
}

int cat_file_truncate_to(caterva_ctx *ctx, caterva_schunk *sc, int64_t len) {
  if (sc->store != CATERVA_STORE_CONTIGUOUS || sc->fd < 0) return CATERVA_OK;
  return cat_contig_cut(ctx, sc, len);
}

int cat_file_rewrite(caterva_ctx *ctx, caterva_schunk *sc) {
  if (sc->broken) return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed update");
  if (sc->store == CATERVA_STORE_SPARSE) {
    int rc = !sc->nosync ? cat_sparse_sync_pending(ctx, sc) : CATERVA_OK;
    if (rc < 0) return rc;
    return cat_sparse_write_index(ctx, sc, sc->entries, sc->nchunks, sc->nbytes, sc->cbytes,
                                  !sc->nosync);
  }
  return cat_pack_rewrite_contiguous(ctx, sc);
}

void cat_file_close(caterva_schunk *sc) {
  cat_remote_close(sc);
  bool compact = sc->store == CATERVA_STORE_CONTIGUOUS && sc->writable && !sc->broken &&
                 !sc->no_autocompact && sc->txn == NULL &&
                 sc->fd >= 0 && sc->dead > 0 &&
                 (sc->frame_len <= CAT_COMPACT_SMALL || sc->dead * 8 >= sc->frame_len);
  if (compact) {
    caterva_ctx *ctx = NULL;
    if (caterva_ctx_new(1, &ctx) == CATERVA_OK) (void)cat_pack_rewrite_contiguous(ctx, sc);
    caterva_ctx_free(ctx);
  }
  if (sc->header_unsynced && sc->fd >= 0) (void)cat_io_fdatasync(NULL, sc->fd, sc->path);
  sc->header_unsynced = false;
  sc->retain_maps = false;
  cat_contig_unmap(sc);
  cat_file_release_retired(NULL, sc);
  if (sc->fd >= 0) close(sc->fd);
  sc->fd = -1;
  if (sc->rfd >= 0) close(sc->rfd);
  sc->rfd = -1;
  if (sc->syncfd >= 0) close(sc->syncfd);
  sc->syncfd = -1;
  free(sc->written);
  sc->written = NULL;
  sc->nwritten = sc->capwritten = 0;
  cat_contig_pend_free(sc);
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

/* A posted unmap (cat_file_release_retired). */
static void unmap_task(void *arg) {
  cat_map *m = arg;
  munmap(m->p, m->n);
  free(m);
}

void cat_file_release_retired(caterva_ctx *ctx, caterva_schunk *sc) {
  while (sc->retired != NULL) {
    cat_map *m = sc->retired;
    sc->retired = m->next;
    if (m->n > 0 && ctx != NULL && cat_pool_post(ctx->pool, unmap_task, m) == 0) continue;
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

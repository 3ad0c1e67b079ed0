/*
 * frame_collect.c -- removing what killed writers left beside or inside a frame on disk.
 *
 * A writer killed before its commit leaves garbage, never damage (the committed index does
 * not refer to it): the chunk files its transaction wrote into a sparse frame's directory,
 * and the temporary files of an atomic rewrite or of a creation:
 *
 *   <path>.tmp<pid>.<n>                 a contiguous frame rewritten or compacted (file)
 *   <dir>/chunks.b2frame.tmp<pid>.<n>   a sparse frame's index replaced (file)
 *   <path>.creating-<pid>               an array being created (file, or a sparse directory)
 *   <path>.importing-<pid>, <path>.tmp-<pid>   an array being imported (NetCDF, bcolz)
 *
 * Chunk files are collected only by a writer holding the exclusive lock with no transaction
 * open: then no writer is between its first chunk file and its commit. Temporary files are
 * removed only when their process no longer exists on this machine (kill(pid, 0) fails with
 * ESRCH): a live process's file, or one whose pid was reused, is kept.
 */
#include "frame_internal.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CAT_SPARSE_INDEX_NAME "chunks.b2frame"

typedef struct collect {
  caterva_ctx *ctx;
  bool dry_run;
  int64_t count;      /* names removed (or, dry, that would be) */
  int rc;             /* the first failure to remove one */
} collect;

/* Digits at s (at least one, no sign) as a number that fits max; *end after them. */
static bool parse_digits(const char *s, long long max, long long *v, const char **end) {
  long long x = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (x > (max - (*p - '0')) / 10) return false;
    x = x * 10 + (*p - '0');
  }
  *v = x;
  *end = p;
  return p > s;
}

/* The process pid is gone from this machine. */
static bool process_gone(long long pid) {
  return pid > 0 && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Length of the marker at p of a whole-file temporary ("<path><marker><pid>"), or 0. */
static size_t whole_prefix(const char *p) {
  static const char *const marker[] = {".creating-", ".importing-", ".tmp-"};
  for (size_t k = 0; k < sizeof marker / sizeof marker[0]; k++)
    if (strncmp(p, marker[k], strlen(marker[k])) == 0) return strlen(marker[k]);
  return 0;
}

/* name is "<base>.tmp<pid>.<n>" or "<base><marker><pid>" with a process that is gone. */
static bool dead_temporary(const char *name, const char *base) {
  size_t n = strlen(base);
  const char *p, *end;
  long long pid, seq;
  if (strncmp(name, base, n) != 0) return false;
  p = name + n;
  if (strncmp(p, ".tmp", 4) == 0 && p[4] >= '0' && p[4] <= '9') {
    if (!parse_digits(p + 4, INT_MAX, &pid, &end) || *end != '.') return false;
    if (!parse_digits(end + 1, UINT_MAX, &seq, &end) || *end != '\0') return false;
  } else {
    /* "<base><marker><pid>", or a file named after it ("...creating-<pid>.tmp<pid>.<n>":
     * the creation's own atomic write) */
    size_t m = whole_prefix(p);
    if (m == 0 || !parse_digits(p + m, INT_MAX, &pid, &end) || (*end != '\0' && *end != '.'))
      return false;
  }
  return process_gone(pid);
}

static void note_failure(collect *c, const char *path) {
  if (c->rc == CATERVA_OK) c->rc = cat_io_error(c->ctx, "cannot remove", path);
}

/* Remove path: a file, or a directory tree (a sparse frame, or an import's directory) up to
 * depth levels deep; symbolic links are removed, never followed. */
static void remove_tree(collect *c, const char *path, int depth) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode) && depth > 0) {
    DIR *d = opendir(path);
    struct dirent *de;
    while (d != NULL && (de = readdir(d)) != NULL) {
      char *p;
      if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
      if ((p = cat_path_join(path, de->d_name)) != NULL) remove_tree(c, p, depth - 1);
      free(p);
    }
    if (d != NULL) closedir(d);
    if (rmdir(path) != 0 && errno != ENOENT) note_failure(c, path);
  } else if (unlink(path) != 0 && errno != ENOENT) {
    note_failure(c, path);
  }
}

static void remove_entry(collect *c, const char *path) {
  c->count++;
  if (!c->dry_run) remove_tree(c, path, 8);
}

/* Dead temporaries named after base in dir. */
static void collect_temporaries(collect *c, const char *dir, const char *base) {
  DIR *d = opendir(dir);
  struct dirent *de;
  if (d == NULL) return; /* nothing we can list, nothing we can remove */
  while ((de = readdir(d)) != NULL) {
    char *p;
    if (!dead_temporary(de->d_name, base)) continue;
    if ((p = cat_path_join(dir, de->d_name)) == NULL) {
      if (c->rc == CATERVA_OK) c->rc = cat_error(c->ctx, CATERVA_E_NOMEM, "out of memory");
      break;
    }
    remove_entry(c, p);
    free(p);
  }
  closedir(d);
}

/* Sparse: chunk files that the committed index does not refer to. */
static void collect_chunks(collect *c, const caterva_schunk *sc) {
  int64_t *live = NULL, n = 0;
  DIR *d;
  struct dirent *de;
  int r = cat_file_live_chunks(c->ctx, sc, &live, &n);
  if (r < 0) {
    if (c->rc == CATERVA_OK) c->rc = r;
    return;
  }
  if ((d = opendir(sc->path)) != NULL) {
    while ((de = readdir(d)) != NULL) {
      int64_t num = cat_file_chunk_number(de->d_name);
      char *p;
      if (num < 0 || cat_file_is_live(live, n, num)) continue;
      if ((p = cat_path_join(sc->path, de->d_name)) != NULL) remove_entry(c, p);
      free(p);
    }
    closedir(d);
  }
  free(live);
}

/* Split path (no trailing slashes) into its directory and last name, both malloc'ed. */
static int split_path(caterva_ctx *ctx, const char *path, char **dir, char **base) {
  size_t n = strlen(path);
  const char *slash;
  char *p = malloc(n + 1);
  if (p == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  memcpy(p, path, n + 1);
  while (n > 1 && p[n - 1] == '/') p[--n] = '\0';
  slash = strrchr(p, '/');
  *base = malloc(strlen(slash != NULL ? slash + 1 : p) + 1);
  *dir = malloc(slash != NULL ? (size_t)(slash - p) + 2 : 2);
  if (*base == NULL || *dir == NULL) {
    free(p);
    free(*base);
    free(*dir);
    *base = *dir = NULL;
    return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  }
  strcpy(*base, slash != NULL ? slash + 1 : p);
  if (slash == NULL) strcpy(*dir, ".");
  else if (slash == p) strcpy(*dir, "/");
  else snprintf(*dir, (size_t)(slash - p) + 1, "%s", p);
  free(p);
  return CATERVA_OK;
}

int cat_file_collect(caterva_ctx *ctx, caterva_schunk *sc, bool dry_run, int64_t *removed) {
  collect c = {ctx, dry_run, 0, CATERVA_OK};
  char *dir = NULL, *base = NULL;
  int rc;
  if (removed != NULL) *removed = 0;
  CAT_CHECK(leave, sc->path != NULL && sc->remote == NULL &&
                       (sc->store == CATERVA_STORE_CONTIGUOUS || sc->store == CATERVA_STORE_SPARSE),
            CATERVA_E_INVALID, "collect: not a frame on a local disk");
  CAT_CHECK(leave, sc->txn == NULL, CATERVA_E_INVALID,
            "collect: a transaction is open (its chunk files are not garbage)");
  CAT_CHECK(leave, dry_run || sc->writable, CATERVA_E_READONLY,
            "collect: the frame is open read-only");
  /* entries older than the committed index would make its new chunk files look unreferenced */
  CAT_CHECK(leave, cat_file_stale(ctx, sc) == 0, CATERVA_E_BUSY,
            "collect: '%s' changed since this handle read it (reopen it)", sc->path);
  CAT_TRY(leave, cat_sc_index_load(ctx, sc)); /* every entry: a reader's is read lazily */
  CAT_TRY(leave, split_path(ctx, sc->path, &dir, &base));
  collect_temporaries(&c, dir, base);
  if (sc->store == CATERVA_STORE_SPARSE) {
    collect_temporaries(&c, sc->path, CAT_SPARSE_INDEX_NAME);
    collect_chunks(&c, sc);
  }
  rc = c.rc;
  if (removed != NULL) *removed = c.count;
leave:
  free(dir);
  free(base);
  return rc;
}

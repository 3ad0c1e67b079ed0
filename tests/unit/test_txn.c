/*
 * test_txn.c -- super-chunk transactions on both file stores (a contiguous frame file and a
 * sparse frame directory): a rollback leaves every byte as it was; a commit shows all of a
 * transaction's edits at once and none before; savepoints; every counted I/O call of a
 * transaction failed in turn (ENOSPC and EIO, once and sticky); a writer killed by _exit
 * in a forked child; compaction under a reader.
 */
#include "frame_internal.h" /* sc->broken: a failed commit that passed its commit point */
#include "fsutil.h"
#include "tap.h"

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static caterva_ctx *ctx;
static char tmpdir[256];
static const char *store_name[] = {"memory", "contiguous", "sparse"};

/* Whether a contiguous file holds the transaction's last chunks in memory until the commit
 * (the default), or writes each at once (caterva_test_hold_max(0): what chunks past 8 MiB
 * get); the contiguous tests run both ways. */
static int held;

/* The store's name in the test names, with the way chunks are written. */
static const char *sname(int store) {
  if (store != CATERVA_STORE_CONTIGUOUS) return store_name[store];
  return held ? "contiguous (held)" : "contiguous";
}

/* ---- files and snapshots ------------------------------------------------------------------ */

/* Every byte of a frame: one file (name ""), or every file of a sparse directory. */
#define SNAP_MAX 64
typedef struct snap {
  int n;
  char name[SNAP_MAX][256];
  uint8_t *data[SNAP_MAX];
  size_t len[SNAP_MAX];
} snap;

static void snap_free(snap *s) {
  for (int k = 0; k < s->n; k++) free(s->data[k]);
  memset(s, 0, sizeof *s);
}

static int cmp_names(const void *a, const void *b) { return strcmp(a, b); }

static int snap_take(const char *path, snap *s) {
  struct stat st;
  memset(s, 0, sizeof *s);
  if (stat(path, &st) != 0) return 0;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      if (s->n == SNAP_MAX) break;
      snprintf(s->name[s->n++], sizeof s->name[0], "%s", e->d_name);
    }
    if (d != NULL) closedir(d);
    qsort(s->name, (size_t)s->n, sizeof s->name[0], cmp_names);
  } else {
    s->n = 1;
  }
  for (int k = 0; k < s->n; k++) {
    char p[1400];
    snprintf(p, sizeof p, "%s%s%s", path, s->name[k][0] ? "/" : "", s->name[k]);
    s->data[k] = tu_read_file(p, &s->len[k]);
    if (s->data[k] == NULL) return 0;
  }
  return 1;
}

/* Same file names, same bytes; the first difference goes to a diagnostic. */
static int snap_same(const snap *a, const snap *b, const char *what) {
  if (a->n != b->n) {
    if (what) tap_diag("%s: %d files, expected %d", what, b->n, a->n);
    return 0;
  }
  for (int k = 0; k < a->n; k++) {
    if (strcmp(a->name[k], b->name[k]) != 0) {
      if (what) tap_diag("%s: file '%s', expected '%s'", what, b->name[k], a->name[k]);
      return 0;
    }
    if (a->len[k] != b->len[k] || memcmp(a->data[k], b->data[k], a->len[k]) != 0) {
      if (what)
        tap_diag("%s: file '%s' has %zu bytes (expected %zu) or other bytes", what, a->name[k],
                 b->len[k], a->len[k]);
      return 0;
    }
  }
  return 1;
}

/* The frame at path is byte-identical to s. */
static int bytes_equal(const char *path, const snap *s, const char *what) {
  snap cur;
  int ok = snap_take(path, &cur) && snap_same(s, &cur, what);
  snap_free(&cur);
  return ok;
}

/* Put the frame at path back to the bytes of s. */
static int snap_restore(const char *path, int store, const snap *s) {
  tu_rm_tree(path);
  if (store == CATERVA_STORE_CONTIGUOUS)
    return s->n == 1 && tu_write_file(path, s->data[0], s->len[0]) == 0;
  if (mkdir(path, 0777) != 0) return 0;
  for (int k = 0; k < s->n; k++) {
    char p[1400];
    snprintf(p, sizeof p, "%s/%s", path, s->name[k]);
    if (tu_write_file(p, s->data[k], s->len[k]) != 0) return 0;
  }
  return 1;
}

/* ---- the model: what a frame must read as ------------------------------------------------ */

#define CS 4000 /* bytes per chunk: 1000 int32 */
#define MAXC 16
#define NVL 4
#define VLEN 40
#define MLEN 8

typedef struct state {
  int n;
  uint8_t data[MAXC][CS];
  uint8_t meta[MLEN];   /* metalayer "b2nd" */
  int nvl;
  char vlname[NVL][16];
  uint8_t vlval[NVL][VLEN];
} state;

/* Distinct content per seed; seed 0 is all zeros (stored as a special index entry). */
static void fill(uint8_t *p, int seed) {
  for (int i = 0; i < CS / 4; i++) {
    uint32_t v = seed == 0 ? 0 : (uint32_t)seed * 100003u + (uint32_t)i * (uint32_t)(seed % 7 + 1);
    memcpy(p + 4 * i, &v, 4);
  }
}

static void vlfill(uint8_t *p, int seed) {
  for (int k = 0; k < VLEN; k++) p[k] = (uint8_t)(seed * 31 + k * 7);
}

static void metafill(uint8_t *p, int seed) {
  char s[16];
  snprintf(s, sizeof s, "m%07d", seed % 10000000);
  memcpy(p, s, MLEN);
}

static int find_vl(const state *st, const char *name) {
  for (int k = 0; k < st->nvl; k++)
    if (strcmp(st->vlname[k], name) == 0) return k;
  return -1;
}

/* sc reads exactly as st: chunk count, every chunk, the metalayer, every vlmetalayer.
 * what == NULL: quiet. */
static int state_check(caterva_schunk *sc, const state *st, const char *what) {
  uint8_t buf[CS];
  const uint8_t *m;
  int32_t len;
  if (caterva_schunk_nchunks(sc) != st->n) {
    if (what) tap_diag("%s: %lld chunks, expected %d", what, (long long)caterva_schunk_nchunks(sc), st->n);
    return 0;
  }
  for (int i = 0; i < st->n; i++) {
    int32_t r = caterva_schunk_decompress_chunk(ctx, sc, i, buf, CS);
    if (r != CS || memcmp(buf, st->data[i], CS) != 0) {
      if (what) tap_diag("%s: chunk %d: %d (%s)", what, i, (int)r, r == CS ? "other bytes" : caterva_ctx_errmsg(ctx));
      return 0;
    }
  }
  if (caterva_schunk_meta_get(sc, "b2nd", &m, &len) != 0 || len != MLEN || memcmp(m, st->meta, MLEN) != 0) {
    if (what) tap_diag("%s: metalayer differs", what);
    return 0;
  }
  if (caterva_schunk_vlmeta_count(sc) != st->nvl) {
    if (what) tap_diag("%s: %d vlmetalayers, expected %d", what, caterva_schunk_vlmeta_count(sc), st->nvl);
    return 0;
  }
  for (int k = 0; k < st->nvl; k++) {
    uint8_t *v = NULL;
    int ok = caterva_schunk_vlmeta_get(ctx, sc, st->vlname[k], &v, &len) == 0 && len == VLEN &&
             memcmp(v, st->vlval[k], VLEN) == 0;
    free(v);
    if (!ok) {
      if (what) tap_diag("%s: vlmetalayer '%s' differs", what, st->vlname[k]);
      return 0;
    }
  }
  return 1;
}

/* A fresh read-only open of path reads as st. */
static int reopen_check(const char *path, const state *st, const char *what) {
  caterva_schunk *sc = NULL;
  int rc = caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &sc), ok;
  if (rc != 0) {
    if (what) tap_diag("%s: open: %s", what, caterva_ctx_errmsg(ctx));
    return 0;
  }
  ok = state_check(sc, st, what);
  caterva_schunk_free(sc);
  return ok;
}

/* ---- edits, applied to a schunk and to its model ------------------------------------------- */

enum { E_UPDATE, E_APPEND, E_INSERT, E_DELETE, E_VLSET, E_META };

typedef struct edit {
  int op, pos, seed;
  const char *name; /* E_VLSET */
} edit;

static int32_t compress(caterva_schunk *sc, int seed, uint8_t *chunk) {
  uint8_t raw[CS];
  fill(raw, seed);
  return caterva_chunk_compress(ctx, caterva_schunk_cparams(sc), raw, CS, chunk,
                                CS + CATERVA_CHUNK_MAX_OVERHEAD);
}

/* Apply e to sc; on success to st as well. Returns the library's result (< 0 on failure). */
static int do_edit(caterva_schunk *sc, state *st, const edit *e) {
  uint8_t chunk[CS + CATERVA_CHUNK_MAX_OVERHEAD], raw[CS];
  int64_t rc = 0;
  int32_t cb = 0, k;
  if (e->op == E_UPDATE || e->op == E_INSERT) {
    cb = compress(sc, e->seed, chunk);
    if (cb < 0) return cb;
  }
  switch (e->op) {
  case E_UPDATE:
    rc = caterva_schunk_update_chunk(ctx, sc, e->pos, chunk, cb);
    if (rc >= 0) fill(st->data[e->pos], e->seed);
    break;
  case E_APPEND:
    fill(raw, e->seed);
    rc = caterva_schunk_append_buffer(ctx, sc, raw, CS);
    if (rc >= 0) fill(st->data[st->n++], e->seed);
    break;
  case E_INSERT:
    rc = caterva_schunk_insert_chunk(ctx, sc, e->pos, chunk, cb);
    if (rc >= 0) {
      memmove(st->data[e->pos + 1], st->data[e->pos], (size_t)(st->n - e->pos) * CS);
      fill(st->data[e->pos], e->seed);
      st->n++;
    }
    break;
  case E_DELETE:
    rc = caterva_schunk_delete_chunk(ctx, sc, e->pos);
    if (rc >= 0) {
      memmove(st->data[e->pos], st->data[e->pos + 1], (size_t)(st->n - e->pos - 1) * CS);
      st->n--;
    }
    break;
  case E_VLSET:
    vlfill(raw, e->seed);
    rc = caterva_schunk_vlmeta_set(ctx, sc, e->name, raw, VLEN);
    if (rc >= 0) {
      if ((k = find_vl(st, e->name)) < 0) {
        k = st->nvl++;
        snprintf(st->vlname[k], sizeof st->vlname[k], "%s", e->name);
      }
      memcpy(st->vlval[k], raw, VLEN);
    }
    break;
  case E_META:
    metafill(raw, e->seed);
    rc = caterva_schunk_meta_update(ctx, sc, "b2nd", raw, MLEN);
    if (rc >= 0) memcpy(st->meta, raw, MLEN);
    break;
  }
  return rc < 0 ? (int)rc : 0;
}

/* Apply n edits; stop at the first failure (its result is returned). */
static int do_edits(caterva_schunk *sc, state *st, const edit *e, int n) {
  for (int k = 0; k < n; k++) {
    int rc = do_edit(sc, st, &e[k]);
    if (rc < 0) return rc;
  }
  return 0;
}

/* The transaction most tests run: every kind of edit, some on chunks the transaction itself
 * wrote (chunk 0 after the insert), a zero chunk (special entry), both metalayer kinds. */
static const edit mix[] = {
    {E_UPDATE, 1, 101, NULL}, {E_APPEND, 0, 102, NULL},     {E_INSERT, 0, 103, NULL},
    {E_DELETE, 3, 0, NULL},   {E_VLSET, 0, 104, "attrs"},   {E_VLSET, 0, 105, "extra"},
    {E_META, 0, 106, NULL},   {E_APPEND, 0, 0, NULL},       {E_UPDATE, 0, 107, NULL},
};
#define NMIX ((int)(sizeof mix / sizeof mix[0]))

/* A new frame at path: metalayer, one vlmetalayer, five chunks (the third all zeros). */
static int create_frame(const char *path, int store, state *st) {
  static const edit init[] = {{E_APPEND, 0, 1, NULL}, {E_APPEND, 0, 2, NULL}, {E_APPEND, 0, 0, NULL},
                              {E_APPEND, 0, 4, NULL}, {E_APPEND, 0, 5, NULL}, {E_VLSET, 0, 6, "attrs"}};
  caterva_cparams cp;
  caterva_schunk *sc = NULL;
  int ok;
  tu_rm_tree(path);
  memset(st, 0, sizeof *st);
  metafill(st->meta, 0);
  caterva_cparams_init(&cp);
  cp.typesize = 4;
  cp.clevel = 1;
  ok = caterva_schunk_new(ctx, &cp, CS, store, path, &sc) == 0 &&
       caterva_schunk_meta_add(ctx, sc, "b2nd", st->meta, MLEN) == 0 &&
       do_edits(sc, st, init, (int)(sizeof init / sizeof init[0])) == 0;
  if (!ok) tap_diag("create %s: %s", path, caterva_ctx_errmsg(ctx));
  caterva_schunk_free(sc);
  return ok;
}

static void frame_path(char *buf, size_t n, const char *what, int store) {
  snprintf(buf, n, "%s/%s_%s%s.%s", tmpdir, what, store_name[store],
           store == CATERVA_STORE_CONTIGUOUS && held ? "_held" : "",
           store == CATERVA_STORE_SPARSE ? "b2frame" : "b2nd");
}

/* Chunk files of a sparse directory. */
static int count_chunk_files(const char *path) {
  snap s;
  int n = 0;
  if (!snap_take(path, &s)) return -1;
  for (int k = 0; k < s.n; k++) n += strstr(s.name[k], ".chunk") != NULL;
  snap_free(&s);
  return n;
}

static int stored_chunks(caterva_schunk *sc) {
  int n = 0;
  for (int64_t i = 0; i < caterva_schunk_nchunks(sc); i++)
    n += caterva_schunk_chunk_special(sc, i) == CATERVA_SPECIAL_NONE;
  return n;
}

/* No bytes beyond what the frame references: a contiguous file ends at its frame, a sparse
 * directory holds chunks.b2frame and one file per stored chunk. */
static int no_leftovers(const char *path, int store, const char *what) {
  caterva_schunk *sc = NULL;
  int ok = caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &sc) == 0;
  if (ok && store == CATERVA_STORE_CONTIGUOUS) {
    ok = tu_file_size(path) == caterva_schunk_frame_len(sc);
    if (!ok) tap_diag("%s: file of %lld bytes, frame of %lld", what, (long long)tu_file_size(path),
                      (long long)caterva_schunk_frame_len(sc));
  } else if (ok) {
    snap s;
    ok = count_chunk_files(path) == stored_chunks(sc) && snap_take(path, &s) &&
         s.n == stored_chunks(sc) + 1;
    if (!ok) tap_diag("%s: %d chunk files (%d entries in the directory), %d stored chunks", what,
                      count_chunk_files(path), s.n, stored_chunks(sc));
    snap_free(&s);
  }
  caterva_schunk_free(sc);
  return ok;
}

/* ---- 1. rollback is byte-identical --------------------------------------------------------- */

static void test_rollback(int store) {
  const char *sn = sname(store);
  char path[512];
  caterva_schunk *sc = NULL;
  state *old = malloc(sizeof *old), *st = malloc(sizeof *st);
  snap before, during;
  int ok;
  memset(&before, 0, sizeof before);
  frame_path(path, sizeof path, "rollback", store);
  ok = old && st && create_frame(path, store, old) &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0 && snap_take(path, &before);
  if (!tap_ok(ok, "%s: frame created, reopened for writing, %d files snapshotted", sn, before.n)) goto done;
  *st = *old;
  ok = caterva_schunk_begin(ctx, sc) == 0 && caterva_schunk_in_txn(sc) == 1;
  ok = ok && do_edits(sc, st, mix, NMIX) == 0;
  tap_ok(ok, "%s: begin, then %d edits (update, append, insert, delete, vlmeta, meta) (%s)", sn,
         NMIX, ok ? "ok" : caterva_ctx_errmsg(ctx));
  tap_ok(state_check(sc, st, "inside") && caterva_schunk_in_txn(sc) == 1,
         "%s: inside the transaction the object reads its own changes", sn);
  ok = snap_take(path, &during) &&
       !snap_same(&before, &during, NULL) == !(store == CATERVA_STORE_CONTIGUOUS && held);
  if (store == CATERVA_STORE_CONTIGUOUS && held)
    tap_ok(ok, "%s: the transaction's chunks are held: the file is unchanged before the commit",
           sn);
  else
    tap_ok(ok, "%s: the transaction wrote to the store (%d files now)", sn, during.n);
  snap_free(&during);
  ok = caterva_schunk_rollback(ctx, sc) == 0;
  tap_ok(ok && bytes_equal(path, &before, "after rollback"),
         "%s: after rollback every file is byte-identical to before begin", sn);
  tap_ok(caterva_schunk_in_txn(sc) == 0 && state_check(sc, old, "after rollback"),
         "%s: after rollback the object reads the old content", sn);
  tap_ok(reopen_check(path, old, "reopened after rollback"), "%s: a fresh open reads the old content", sn);
  /* the handle still works: the same transaction again, committed */
  *st = *old;
  ok = caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, st, mix, NMIX) == 0 &&
       caterva_schunk_commit(ctx, sc, 1) == 0;
  tap_ok(ok && state_check(sc, st, "writer after commit") && reopen_check(path, st, "after commit"),
         "%s: after the rollback the same handle commits the same edits", sn);
done:
  caterva_schunk_free(sc);
  snap_free(&before);
  free(old);
  free(st);
}

/* ---- 2. commit shows everything at once ------------------------------------------------- */

static void test_commit(int store) {
  const char *sn = sname(store);
  char path[512];
  caterva_schunk *sc = NULL, *rd1 = NULL, *rd2 = NULL;
  state *old = malloc(sizeof *old), *st = malloc(sizeof *st);
  int ok, half = NMIX / 2;
  frame_path(path, sizeof path, "commit", store);
  ok = old && st && create_frame(path, store, old) &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &rd1) == 0 &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0;
  if (!tap_ok(ok, "%s: frame with a reader and a writer", sn)) goto done;
  *st = *old;
  ok = caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, st, mix, half) == 0 &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &rd2) == 0 &&
       do_edits(sc, st, mix + half, NMIX - half) == 0;
  tap_ok(ok, "%s: transaction of %d edits, a second reader opened in its middle", sn, NMIX);
  tap_ok(state_check(rd1, old, "reader opened before begin") &&
             state_check(rd2, old, "reader opened inside") &&
             reopen_check(path, old, "fresh reader before commit"),
         "%s: before commit, readers opened before and during the transaction and a fresh open "
         "read the old content",
         sn);
  ok = caterva_schunk_commit(ctx, sc, 1) == 0;
  tap_ok(ok && caterva_schunk_in_txn(sc) == 0, "%s: commit (%s)", sn, ok ? "ok" : caterva_ctx_errmsg(ctx));
  tap_ok(reopen_check(path, st, "fresh open after commit"),
         "%s: after commit a fresh open reads exactly the new content (%d chunks, %d vlmetalayers)",
         sn, st->n, st->nvl);
  tap_ok(state_check(sc, st, "writer after commit"), "%s: the writer reads the new content", sn);
  if (store == CATERVA_STORE_CONTIGUOUS)
    tap_ok(state_check(rd1, old, "old reader after commit") &&
               state_check(rd2, old, "inside reader after commit"),
           "%s: after commit, the readers opened before it still read their (old) content", sn);
  caterva_schunk_free(sc);
  sc = NULL;
  tap_ok(reopen_check(path, st, "after the writer closed") && no_leftovers(path, store, "after close"),
         "%s: after the writer closed: new content, no leftover bytes or files", sn);
done:
  caterva_schunk_free(rd1);
  caterva_schunk_free(rd2);
  caterva_schunk_free(sc);
  free(old);
  free(st);
}

/* ---- synchronous=off for sparse frames (CATERVA_SC_NOSYNC) ------------------------------- */

/* The counted file calls of a transaction of edits, committed with sync on, or with the
 * schunk's NOSYNC flag and sync off. */
static int64_t commit_calls(const char *path, state *st, int nosync, int *ok) {
  caterva_schunk *sc = NULL;
  int64_t calls = -1;
  *ok = create_frame(path, CATERVA_STORE_SPARSE, st) &&
        caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0;
  if (*ok) {
    caterva_schunk_set_flags(sc, nosync ? CATERVA_SC_NOSYNC : 0);
    caterva_test_fail_io(INT64_MAX, EIO, 0); /* armed far away: counts without failing */
    *ok = caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, st, mix, NMIX) == 0 &&
          caterva_schunk_commit(ctx, sc, !nosync) == 0;
    calls = caterva_test_io_calls();
    caterva_test_fail_io(0, 0, 0);
  }
  caterva_schunk_free(sc);
  return calls;
}

/* Sparse frames honour synchronous=off: the chunk files and chunks.b2frame of a commit are
 * written without fsync (one fewer counted call each), and the content is the same. */
static void test_nosync(void) {
  char path[512];
  state *a = malloc(sizeof *a), *b = malloc(sizeof *b);
  int ok1 = 0, ok2 = 0;
  int64_t with, without, files = 0;
  frame_path(path, sizeof path, "nosync", CATERVA_STORE_SPARSE);
  if (a == NULL || b == NULL) goto done;
  with = commit_calls(path, a, 0, &ok1);
  without = commit_calls(path, b, 1, &ok2);
  for (int i = 0; i < NMIX; i++) files += mix[i].op == E_APPEND || mix[i].op == E_INSERT ||
                                          mix[i].op == E_UPDATE;
  tap_ok(ok1 && ok2 && with - without >= files && without > 0,
         "sparse: synchronous=off skips the fsyncs of a commit (%lld counted calls with sync, "
         "%lld without, %lld chunk files written)", (long long)with, (long long)without,
         (long long)files);
  tap_ok(ok2 && reopen_check(path, b, "after a commit without fsync"),
         "sparse: a commit without fsync reads back the same content");
done:
  free(a);
  free(b);
}

/* ---- 3. savepoints ------------------------------------------------------------------------ */

static void test_savepoints(int store) {
  static const edit A[] = {{E_UPDATE, 1, 201, NULL}, {E_VLSET, 0, 202, "attrs"}};
  static const edit B[] = {{E_APPEND, 0, 203, NULL}, {E_DELETE, 0, 0, NULL}, {E_META, 0, 204, NULL}};
  static const edit C[] = {{E_INSERT, 1, 205, NULL}, {E_VLSET, 0, 206, "extra"}, {E_UPDATE, 2, 207, NULL}};
  static const edit D[] = {{E_APPEND, 0, 208, NULL}, {E_VLSET, 0, 209, "attrs"}, {E_UPDATE, 0, 210, NULL}};
  const char *sn = sname(store);
  char path[512];
  caterva_schunk *sc = NULL;
  state *s0 = malloc(sizeof *s0), *sa = malloc(sizeof *sa), *sb = malloc(sizeof *sb),
        *st = malloc(sizeof *st);
  snap at_begin;
  int ok;
  memset(&at_begin, 0, sizeof at_begin);
  frame_path(path, sizeof path, "savepoint", store);
  ok = s0 && sa && sb && st && create_frame(path, store, s0) &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0;
  if (!tap_ok(ok, "%s: savepoint frame", sn)) goto done;
  *sa = *s0;
  ok = caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, sa, A, 2) == 0 &&
       caterva_schunk_savepoint(ctx, sc, 0) == 0;
  *sb = *sa;
  ok = ok && do_edits(sc, sb, B, 3) == 0 && caterva_schunk_savepoint(ctx, sc, 1) == 0;
  *st = *sb;
  ok = ok && do_edits(sc, st, C, 3) == 0;
  tap_ok(ok && state_check(sc, st, "after C"), "%s: A, savepoint 0, B, savepoint 1, C", sn);
  ok = caterva_schunk_rollback_to(ctx, sc, 1) == 0;
  tap_ok(ok && state_check(sc, sb, "rollback_to 1"), "%s: rollback_to(1) gives the state after B", sn);
  *st = *sb;
  ok = do_edits(sc, st, C, 1) == 0 && caterva_schunk_rollback_to(ctx, sc, 1) == 0;
  tap_ok(ok && state_check(sc, sb, "rollback_to 1 again"),
         "%s: savepoint 1 survives its rollback_to: new edit, rollback_to(1) again, state after B", sn);
  ok = caterva_schunk_rollback_to(ctx, sc, 0) == 0;
  tap_ok(ok && state_check(sc, sa, "rollback_to 0"), "%s: rollback_to(0) gives the state after A", sn);
  *st = *sa;
  ok = caterva_schunk_release(ctx, sc, 0) == 0 && do_edits(sc, st, D, 3) == 0 &&
       caterva_schunk_commit(ctx, sc, 1) == 0;
  tap_ok(ok && state_check(sc, st, "A+D"), "%s: release(0), D, commit", sn);
  tap_ok(reopen_check(path, st, "after commit of A+D") && no_leftovers(path, store, "A+D"),
         "%s: the frame holds A+D only, nothing of B or C left in the %s", sn,
         store == CATERVA_STORE_SPARSE ? "directory" : "file");

  /* a transaction joined at level 3: a rollback to a level below every mark undoes it all */
  *s0 = *st;
  ok = snap_take(path, &at_begin) && caterva_schunk_begin(ctx, sc) == 0 &&
       do_edits(sc, st, A, 2) == 0 && caterva_schunk_savepoint(ctx, sc, 3) == 0 &&
       do_edits(sc, st, B, 3) == 0 && caterva_schunk_rollback_to(ctx, sc, 1) == 0;
  tap_ok(ok && state_check(sc, s0, "rollback_to 1 below mark 3"),
         "%s: savepoint(3), rollback_to(1) gives the state at begin", sn);
  tap_ok(bytes_equal(path, &at_begin, "rollback_to below every mark"),
         "%s: ... and the %s is byte-identical to before begin", sn,
         store == CATERVA_STORE_SPARSE ? "directory" : "file");
  *st = *s0;
  ok = do_edits(sc, st, A, 1) == 0 && caterva_schunk_savepoint(ctx, sc, 0) == 0 &&
       do_edits(sc, st, B, 1) == 0 && caterva_schunk_release(ctx, sc, 0) == 0 &&
       caterva_schunk_rollback_to(ctx, sc, 0) == 0;
  tap_ok(ok && state_check(sc, s0, "released mark"),
         "%s: a released savepoint is gone: rollback_to(0) then undoes everything", sn);
  ok = caterva_schunk_rollback(ctx, sc) == 0;
  tap_ok(ok && bytes_equal(path, &at_begin, "rollback") && state_check(sc, s0, "rollback"),
         "%s: rollback: old content, byte-identical", sn);
done:
  caterva_schunk_free(sc);
  snap_free(&at_begin);
  free(s0);
  free(sa);
  free(sb);
  free(st);
}

/* ---- 4. every I/O call of a transaction failed in turn ------------------------------------- */

typedef struct run {
  int edit_rc, commit_rc; /* first failing edit's result, commit's result */
  int broken;             /* the handle says the commit passed its commit point */
  int64_t calls;          /* counted I/O calls while armed */
  char msg[512];          /* the message of the failure */
} run;

/* Restore the snapshot, open, arm the hook at call n, begin + mix + commit, disarm, roll
 * back what is still open, free. */
static int run_txn(const char *path, int store, const snap *s, const state *old, int64_t n,
                   int err, int sticky, run *r) {
  caterva_schunk *sc = NULL;
  state *st = malloc(sizeof *st);
  memset(r, 0, sizeof *r);
  if (st == NULL || !snap_restore(path, store, s) ||
      caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) != 0) {
    free(st);
    return 0;
  }
  *st = *old;
  caterva_test_fail_io(n, err, sticky);
  r->edit_rc = caterva_schunk_begin(ctx, sc);
  if (r->edit_rc == 0) r->edit_rc = do_edits(sc, st, mix, NMIX);
  if (r->edit_rc == 0) r->commit_rc = caterva_schunk_commit(ctx, sc, 1);
  if (r->edit_rc < 0 || r->commit_rc < 0) snprintf(r->msg, sizeof r->msg, "%s", caterva_ctx_errmsg(ctx));
  r->calls = caterva_test_io_calls();
  caterva_test_fail_io(0, 0, 0);
  r->broken = sc->broken;
  if (caterva_schunk_in_txn(sc)) (void)caterva_schunk_rollback(ctx, sc);
  caterva_schunk_free(sc);
  free(st);
  return 1;
}

/* Which assertions a run falls under. */
enum { K_EDIT, K_BEFORE, K_AFTER, K_NONE, NKIND };

static void sweep(int store, int err, int sticky, const char *path, const snap *s,
                  const state *old, const state *nu, int64_t calls) {
  static const char *kind_text[NKIND] = {
      "a failed edit, then rollback: byte-identical to before begin",
      "a commit failing before its commit point, then rollback: byte-identical",
      "a commit failing after its commit point: a fresh open reads old or new content",
      "no failure: the new content"};
  const char *sn = sname(store), *en = err == ENOSPC ? "ENOSPC" : "EIO";
  int all_msg = 1, all_seen = 1, count[NKIND] = {0}, bad[NKIND] = {0};
  for (int64_t n = 1; n <= calls + 1; n++) {
    run r;
    int failed, ok, is_old, is_new, kind;
    char what[128];
    snprintf(what, sizeof what, "%s %s%s n=%lld", sn, en, sticky ? " sticky" : "", (long long)n);
    if (!run_txn(path, store, s, old, n, err, sticky, &r)) {
      tap_diag("%s: setup failed", what);
      all_seen = 0;
      continue;
    }
    failed = r.edit_rc < 0 || r.commit_rc < 0;
    kind = r.edit_rc < 0 ? K_EDIT : r.commit_rc < 0 ? (r.broken ? K_AFTER : K_BEFORE) : K_NONE;
    count[kind]++;
    if (failed != (n <= calls)) {
      tap_diag("%s: edit %d, commit %d: the failure of call %lld %s", what, r.edit_rc,
               r.commit_rc, (long long)n, failed ? "past the end?" : "went unnoticed");
      all_seen = 0;
    }
    if (failed && strstr(r.msg, strerror(err)) == NULL) {
      tap_diag("%s: message '%s' does not name '%s'", what, r.msg, strerror(err));
      all_msg = 0;
    }
    is_old = reopen_check(path, old, NULL);
    is_new = reopen_check(path, nu, NULL);
    if (kind == K_EDIT || kind == K_BEFORE) ok = is_old && bytes_equal(path, s, what);
    else if (kind == K_AFTER) ok = is_old || is_new;
    else ok = is_new;
    if (!ok) {
      tap_diag("%s: edit %d, commit %d, broken %d, reads old %d, new %d (%s)", what, r.edit_rc,
               r.commit_rc, r.broken, is_old, is_new, r.msg);
      if (!is_old && !is_new) reopen_check(path, failed ? old : nu, what);
      bad[kind]++;
    }
  }
  tap_ok(all_seen, "%s %s%s: each of the %lld calls, failed, fails the transaction", sn, en,
         sticky ? " sticky" : "", (long long)calls);
  tap_ok(all_msg, "%s %s%s: every failure's message says '%s'", sn, en, sticky ? " sticky" : "",
         strerror(err));
  /* held chunks: the edits make no file call, the commit writes them */
  tap_ok((count[K_EDIT] > 0) == !(store == CATERVA_STORE_CONTIGUOUS && held) &&
             count[K_BEFORE] > 0 && count[K_NONE] == 1,
         "%s %s%s: the sweep fails edits (%d runs), commits before (%d) and after (%d) the "
         "commit point",
         sn, en, sticky ? " sticky" : "", count[K_EDIT], count[K_BEFORE], count[K_AFTER]);
  for (int k = 0; k < NKIND; k++)
    if (count[k] > 0)
      tap_ok(bad[k] == 0, "%s %s%s: %s (%d of %d runs wrong)", sn, en, sticky ? " sticky" : "",
             kind_text[k], bad[k], count[k]);
}

/* A rollback whose truncation fails: the object gives up, the file still reads as before and
 * the next writer cuts the leftovers. With the chunks held, a rollback has nothing to cut: it
 * succeeds with every file call failing, and the file is as before. */
static void failed_rollback(const char *path, const snap *s, const state *old) {
  caterva_schunk *sc = NULL;
  state *st = malloc(sizeof *st);
  int ok, rc = 0;
  char msg[512] = "";
  ok = st != NULL && snap_restore(path, CATERVA_STORE_CONTIGUOUS, s) &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0;
  if (ok) {
    *st = *old;
    ok = caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, st, mix, 3) == 0;
    caterva_test_fail_io(1, EIO, 1);
    rc = caterva_schunk_rollback(ctx, sc);
    snprintf(msg, sizeof msg, "%s", caterva_ctx_errmsg(ctx));
    caterva_test_fail_io(0, 0, 0);
    ok = ok && (held ? bytes_equal(path, s, "held rollback")
                     : tu_file_size(path) > (int64_t)s->len[0]);
  }
  if (held)
    tap_ok(ok && rc == 0 && caterva_schunk_in_txn(sc) == 0,
           "contiguous (held): a rollback makes no file call: with every call failing it "
           "succeeds, the file byte-identical (%s)", rc < 0 ? msg : "ok");
  else
    tap_ok(ok && rc < 0 && strstr(msg, strerror(EIO)) != NULL && caterva_schunk_in_txn(sc) == 0,
           "contiguous: a rollback whose truncate fails reports it (%s)", msg);
  caterva_schunk_free(sc);
  sc = NULL;
  tap_ok(reopen_check(path, old, "after a failed rollback"),
         "%s: ... the file still reads as the old content", sname(CATERVA_STORE_CONTIGUOUS));
  ok = caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0 &&
       bytes_equal(path, s, "next writer");
  tap_ok(ok, "%s: ... and the next writer truncates it back to the old bytes",
         sname(CATERVA_STORE_CONTIGUOUS));
  caterva_schunk_free(sc);
  free(st);
}

static void test_faults(int store) {
  const char *sn = sname(store);
  char path[512];
  caterva_schunk *sc = NULL;
  state *old = malloc(sizeof *old), *nu = malloc(sizeof *nu);
  snap s;
  run r;
  int64_t calls = 0;
  int ok;
  memset(&s, 0, sizeof s);
  frame_path(path, sizeof path, "faults", store);
  ok = old && nu && create_frame(path, store, old) &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0;
  caterva_schunk_free(sc); /* opened for writing once: the snapshot is what a writer starts from */
  ok = ok && snap_take(path, &s);
  /* the new content, and the number of counted calls of the transaction */
  if (ok) {
    sc = NULL;
    *nu = *old;
    ok = caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0 &&
         caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, nu, mix, NMIX) == 0;
    caterva_schunk_free(sc); /* rolls back */
    ok = ok && bytes_equal(path, &s, "free rolls back");
    ok = ok && run_txn(path, store, &s, old, INT64_MAX, EIO, 0, &r) && r.edit_rc == 0 &&
         r.commit_rc == 0;
    calls = r.calls;
    ok = ok && calls > 0 && reopen_check(path, nu, "measuring run");
  }
  if (!tap_ok(ok, "%s: a transaction of %d edits makes %lld counted I/O calls", sn, NMIX, (long long)calls))
    goto done;
  for (int sticky = 0; sticky <= 1; sticky++) {
    sweep(store, ENOSPC, sticky, path, &s, old, nu, calls);
    sweep(store, EIO, sticky, path, &s, old, nu, calls);
  }
  if (store == CATERVA_STORE_CONTIGUOUS) failed_rollback(path, &s, old);
done:
  snap_free(&s);
  free(old);
  free(nu);
}

/* ---- 5. a writer that dies --------------------------------------------------------------- */

/* In a child: open, begin, the mix, optionally commit, then _exit without freeing. */
static int crash_child(const char *path, int commit) {
  pid_t pid;
  int status = 0;
  fflush(stdout);
  pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    caterva_ctx *c = NULL; /* the parent's pool threads do not exist here */
    caterva_schunk *sc = NULL;
    state *st = malloc(sizeof *st);
    int ok;
    memset(st, 0, sizeof *st);
    ctx = NULL;
    ok = st != NULL && caterva_ctx_new(1, &c) == 0;
    ctx = c;
    ok = ok && caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0 &&
         caterva_schunk_begin(ctx, sc) == 0;
    if (ok) {
      /* the model's chunk count must follow the file's for inserts and deletes */
      st->n = (int)caterva_schunk_nchunks(sc);
      ok = do_edits(sc, st, mix, NMIX) == 0;
    }
    if (ok && commit) ok = caterva_schunk_commit(ctx, sc, 1) == 0;
    _exit(ok ? 0 : 3);
  }
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Sparse, after a crash before commit: a current writer collects the killed transaction's
 * chunk files; a handle older than the last commit refuses to (it would take the new
 * commit's chunk files for garbage). */
static void test_collect(const char *path, const state *old) {
  static const edit add[] = {{E_APPEND, 0, 7, NULL}};
  caterva_schunk *stale = NULL, *sc = NULL, *w = NULL;
  state *st = malloc(sizeof *st);
  int64_t dry = -1, removed = -1, n_after_commit;
  int garbage = -1, ok;
  ok = st != NULL && caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &stale) == 0 &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0;
  if (ok) garbage = count_chunk_files(path) - stored_chunks(sc);
  ok = ok && caterva_schunk_collect(ctx, sc, 1, &dry) == 0 && dry == garbage &&
       count_chunk_files(path) - stored_chunks(sc) == garbage;
  tap_ok(ok && garbage > 0, "sparse: a dry collection counts the %d leftover chunk files (%lld)",
         garbage, (long long)dry);
  ok = ok && caterva_schunk_collect(ctx, sc, 0, &removed) == 0 && removed == garbage;
  caterva_schunk_free(sc);
  tap_ok(ok && no_leftovers(path, CATERVA_STORE_SPARSE, "collected") &&
             reopen_check(path, old, "after the collection"),
         "sparse: a writer's collection removes them (%lld) and keeps the committed content",
         (long long)removed);
  /* another handle commits a new chunk: `stale` no longer knows its file */
  if (st != NULL) *st = *old;
  ok = st != NULL && caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &w) == 0 &&
       caterva_schunk_begin(ctx, w) == 0 && do_edits(w, st, add, 1) == 0 &&
       caterva_schunk_commit(ctx, w, 1) == 0;
  caterva_schunk_free(w);
  n_after_commit = count_chunk_files(path);
  ok = ok && stale != NULL && caterva_schunk_collect(ctx, stale, 0, &removed) == CATERVA_E_BUSY &&
       count_chunk_files(path) == n_after_commit && reopen_check(path, st, "after a stale collection");
  tap_ok(ok, "sparse: a handle older than the last commit refuses to collect (%s)",
         caterva_ctx_errmsg(ctx));
  ok = caterva_schunk_collect(ctx, stale, 1, NULL) == CATERVA_E_BUSY &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &sc) == 0 &&
       caterva_schunk_collect(ctx, sc, 0, NULL) == CATERVA_E_READONLY;
  caterva_schunk_free(sc);
  caterva_schunk_free(stale);
  tap_ok(ok, "sparse: a read-only handle may count but not collect");
  free(st);
}

static void test_crash(int store) {
  const char *sn = sname(store);
  char path[512];
  caterva_schunk *sc = NULL;
  state *old = malloc(sizeof *old), *nu = malloc(sizeof *nu);
  snap s;
  int ok;
  memset(&s, 0, sizeof s);
  frame_path(path, sizeof path, "crash", store);
  ok = old && nu && create_frame(path, store, old) && snap_take(path, &s);
  if (!tap_ok(ok, "%s: crash frame", sn)) goto done;
  *nu = *old;
  {
    caterva_schunk *m = NULL; /* the model of the new content, built in memory */
    uint8_t *buf = NULL;
    int64_t len = 0;
    ok = caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &sc) == 0 &&
         caterva_schunk_to_buffer(ctx, sc, &buf, &len) == 0 &&
         caterva_schunk_open_buffer(ctx, buf, (size_t)len, &m) == 0 &&
         do_edits(m, nu, mix, NMIX) == 0;
    caterva_schunk_free(m);
    caterva_schunk_free(sc);
    sc = NULL;
    free(buf);
  }
  ok = ok && crash_child(path, 0) == 0;
  tap_ok(ok, "%s: child wrote a transaction and died without commit", sn);
  if (store == CATERVA_STORE_CONTIGUOUS && held) /* nothing reached the file */
    tap_ok(tu_file_size(path) == (int64_t)s.len[0], "%s: ... leaving %lld bytes past the frame",
           sn, (long long)(tu_file_size(path) - (int64_t)s.len[0]));
  else if (store == CATERVA_STORE_CONTIGUOUS)
    tap_ok(tu_file_size(path) > (int64_t)s.len[0], "%s: ... leaving %lld bytes past the frame", sn,
           (long long)(tu_file_size(path) - (int64_t)s.len[0]));
  else
    tap_ok(count_chunk_files(path) > 4, "%s: ... leaving its chunk files (%d in all)", sn,
           count_chunk_files(path));
  tap_ok(reopen_check(path, old, "after a crash before commit"), "%s: the frame reads the old content", sn);
  if (store == CATERVA_STORE_CONTIGUOUS) {
    ok = caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0 &&
         bytes_equal(path, &s, "opened for writing after the crash");
    caterva_schunk_free(sc);
    sc = NULL;
    tap_ok(ok && bytes_equal(path, &s, "closed"),
           "%s: opening for writing truncates the leftovers: byte-identical to the old file", sn);
  } else {
    snap cur;
    int intact = snap_take(path, &cur);
    for (int k = 0, j = 0; intact && k < s.n; k++) {
      while (j < cur.n && strcmp(cur.name[j], s.name[k]) != 0) j++;
      intact = j < cur.n && cur.len[j] == s.len[k] && memcmp(cur.data[j], s.data[k], s.len[k]) == 0;
    }
    snap_free(&cur);
    tap_ok(intact, "%s: every file of the old frame is unchanged", sn);
    test_collect(path, old);
  }
  ok = snap_restore(path, store, &s) && crash_child(path, 1) == 0;
  tap_ok(ok && reopen_check(path, nu, "after a crash after commit"),
         "%s: child committed and died without freeing: the frame reads the new content", sn);
done:
  snap_free(&s);
  free(old);
  free(nu);
}

/* ---- 6. compaction ----------------------------------------------------------------------- */

static void test_compact(int store) {
  static const edit t1[] = {{E_UPDATE, 1, 301, NULL}, {E_APPEND, 0, 302, NULL}};
  static const edit t2[] = {{E_UPDATE, 0, 303, NULL}, {E_DELETE, 2, 0, NULL}, {E_VLSET, 0, 304, "attrs"}};
  static const edit t3[] = {{E_UPDATE, 3, 305, NULL}, {E_INSERT, 1, 306, NULL}};
  const char *sn = sname(store);
  char path[512];
  caterva_schunk *sc = NULL, *rd = NULL;
  state *st = malloc(sizeof *st), *s1 = malloc(sizeof *s1);
  int64_t size0, dead;
  int ok;
  frame_path(path, sizeof path, "compact", store);
  ok = st && s1 && create_frame(path, store, st) &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0;
  if (!tap_ok(ok, "%s: compaction frame", sn)) goto done;
  caterva_schunk_set_flags(sc, CATERVA_SC_NO_AUTOCOMPACT);
  ok = caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, st, t1, 2) == 0 &&
       caterva_schunk_commit(ctx, sc, 1) == 0;
  *s1 = *st;
  /* contiguous: this reader keeps the file as of the first commit; sparse stores remove the
   * replaced chunk files at commit, so its reader is opened after the last one */
  if (store == CATERVA_STORE_CONTIGUOUS) ok = ok && caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &rd) == 0;
  ok = ok && caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, st, t2, 3) == 0 &&
       caterva_schunk_commit(ctx, sc, 1) == 0 && caterva_schunk_begin(ctx, sc) == 0 &&
       do_edits(sc, st, t3, 2) == 0 && caterva_schunk_commit(ctx, sc, 0) == 0;
  if (store == CATERVA_STORE_SPARSE) {
    *s1 = *st;
    ok = ok && caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &rd) == 0;
  }
  dead = caterva_schunk_dead_bytes(sc);
  tap_ok(ok && (store == CATERVA_STORE_SPARSE ? dead == 0 : dead > 0),
         "%s: three committed transactions leave %lld dead bytes", sn, (long long)dead);
  ok = caterva_schunk_begin(ctx, sc) == 0 && caterva_schunk_compact(ctx, sc, 1) == CATERVA_E_INVALID &&
       caterva_schunk_rollback(ctx, sc) == 0;
  tap_ok(ok, "%s: compact refuses to run inside a transaction", sn);
  size0 = tu_file_size(path);
  ok = caterva_schunk_compact(ctx, sc, 1) == 0;
  tap_ok(ok && caterva_schunk_dead_bytes(sc) == 0 && state_check(sc, st, "compacted writer"),
         "%s: compact(force): 0 dead bytes, same content", sn);
  if (store == CATERVA_STORE_CONTIGUOUS)
    tap_ok(tu_file_size(path) == caterva_schunk_frame_len(sc) && tu_file_size(path) < size0,
           "%s: the file shrank by the dead bytes (%lld -> %lld)", sn, (long long)size0,
           (long long)tu_file_size(path));
  tap_ok(reopen_check(path, st, "after compaction") && no_leftovers(path, store, "compacted"),
         "%s: a fresh open reads the same content", sn);
  tap_ok(state_check(rd, s1, "reader opened before compaction"),
         "%s: a reader opened before the compaction still reads its content (%d chunks)", sn, s1->n);
  ok = caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, st, t1, 2) == 0 &&
       caterva_schunk_commit(ctx, sc, 1) == 0;
  tap_ok(ok && reopen_check(path, st, "commit after compaction"), "%s: a commit after compaction", sn);
done:
  caterva_schunk_free(rd);
  caterva_schunk_free(sc);
  free(st);
  free(s1);
}

/* ---- commits that pack the file (caterva_schunk_set_commit_pack) ------------------------ */

/* The edits of t committed on a fresh contiguous frame at path: with pack, as one packed
 * commit; without, in place and then compacted. The counted file calls of both steps in
 * *calls; the old file (an open descriptor on the inode that was at path) in *oldfd. */
/* Chunks past the room for held ones: the held ones are written first. When that write fails,
 * only the edit that needed it fails; the held chunks stay the transaction's, the next edit
 * writes them, and the commit has every edit that succeeded. */
static void test_hold_spill(void) {
  static const edit one = {E_UPDATE, 1, 201, NULL}, two = {E_UPDATE, 2, 202, NULL},
                    three = {E_UPDATE, 3, 203, NULL};
  char path[512];
  caterva_schunk *sc = NULL;
  state *st = malloc(sizeof *st);
  uint8_t *chunk = malloc(CS + CATERVA_CHUNK_MAX_OVERHEAD);
  int32_t cb = -1;
  int ok, failed = 0;
  snap before, during;
  memset(&before, 0, sizeof before);
  memset(&during, 0, sizeof during);
  frame_path(path, sizeof path, "spill", CATERVA_STORE_CONTIGUOUS);
  ok = st != NULL && chunk != NULL && create_frame(path, CATERVA_STORE_CONTIGUOUS, st) &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0 && snap_take(path, &before);
  if (ok) cb = compress(sc, 201, chunk);
  caterva_test_hold_max(cb + cb / 2); /* room for one of these chunks, not two */
  ok = ok && cb > 0 && caterva_schunk_begin(ctx, sc) == 0 && do_edit(sc, st, &one) == 0 &&
       snap_take(path, &during) && snap_same(&before, &during, NULL);
  caterva_test_fail_io(1, EIO, 0);
  failed = ok && do_edit(sc, st, &two) < 0;
  caterva_test_fail_io(0, 0, 0);
  tap_ok(ok && failed && strstr(caterva_ctx_errmsg(ctx), strerror(EIO)) != NULL &&
             state_check(sc, st, "after the failed write of the held chunk"),
         "held chunks: the write of the held chunk fails the edit that needed room (%s); the "
         "transaction still reads the held chunk and not the failed edit",
         caterva_ctx_errmsg(ctx));
  ok = ok && failed && do_edit(sc, st, &three) == 0 && caterva_schunk_commit(ctx, sc, 1) == 0;
  caterva_schunk_free(sc);
  caterva_test_hold_max(-1);
  tap_ok(ok && reopen_check(path, st, "after the commit"),
         "held chunks: the next edit writes them, and the commit has the edits that succeeded");
  snap_free(&before);
  snap_free(&during);
  free(chunk);
  free(st);
}

static int pack_run(const char *path, int pack, const edit *t, int nt, state *st, int64_t *calls,
                    int *oldfd, caterva_schunk **rd) {
  caterva_schunk *sc = NULL;
  int ok = create_frame(path, CATERVA_STORE_CONTIGUOUS, st) &&
           caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, rd) == 0 &&
           caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0 &&
           (*oldfd = open(path, O_RDONLY)) >= 0;
  if (!ok) goto done;
  caterva_schunk_set_flags(sc, CATERVA_SC_NO_AUTOCOMPACT);
  ok = caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, st, t, nt) == 0;
  caterva_schunk_set_commit_pack(sc, pack ? 1 : -1);
  caterva_test_fail_io(INT64_MAX, EIO, 0); /* armed far away: counts without failing */
  ok = ok && caterva_schunk_commit(ctx, sc, 1) == 0 &&
       (pack || caterva_schunk_compact(ctx, sc, 1) == 0);
  *calls = caterva_test_io_calls();
  caterva_test_fail_io(0, 0, 0);
  ok = ok && caterva_schunk_dead_bytes(sc) == 0 && state_check(sc, st, "writer after commit");
done:
  caterva_schunk_free(sc);
  return ok;
}

/* A commit that would leave more dead bytes than the percent set writes the packed file at
 * once: the same bytes as committing in place and compacting, fewer file calls (no sync of
 * the old file's new tail, no header write and its sync), and the old file is left exactly
 * as it was committed (its header too), so that readers of it and a failure before the
 * rename see nothing of the commit. */
static void test_commit_pack(void) {
  static const edit t[] = {{E_UPDATE, 0, 401, NULL}, {E_UPDATE, 1, 402, NULL},
                           {E_UPDATE, 3, 403, NULL}, {E_UPDATE, 1, 404, NULL}};
  char path[512], path2[512];
  state *old = malloc(sizeof *old), *st = malloc(sizeof *st), *st2 = malloc(sizeof *st2);
  caterva_schunk *rd = NULL, *rd2 = NULL;
  snap before, packed, compacted;
  int64_t calls_pack = -1, calls_inplace = -1;
  int fd = -1, fd2 = -1, ok;
  memset(&before, 0, sizeof before);
  memset(&packed, 0, sizeof packed);
  memset(&compacted, 0, sizeof compacted);
  frame_path(path, sizeof path, "pack", CATERVA_STORE_CONTIGUOUS);
  frame_path(path2, sizeof path2, "inplace", CATERVA_STORE_CONTIGUOUS);
  ok = old && st && st2 && create_frame(path, CATERVA_STORE_CONTIGUOUS, old) &&
       snap_take(path, &before);
  if (!tap_ok(ok, "commit pack: frame")) goto done;
  ok = pack_run(path, 1, t, 4, st, &calls_pack, &fd, &rd);
  tap_ok(ok && reopen_check(path, st, "after the packed commit") &&
             no_leftovers(path, CATERVA_STORE_CONTIGUOUS, "packed"),
         "commit pack: the commit leaves 0 dead bytes and a fresh open reads the new content");
  tap_ok(state_check(rd, old, "reader opened before the packed commit"),
         "commit pack: a reader opened before it still reads the old content");
  {
    /* the transaction's chunks were held in memory and went into the new file only: the old
     * file, which a reader may still have open, did not even grow */
    uint8_t *buf = malloc(before.len[0]);
    ssize_t got = buf != NULL ? pread(fd, buf, before.len[0], 0) : -1;
    struct stat fs;
    int st_ok = fstat(fd, &fs) == 0;
    tap_ok(got == (ssize_t)before.len[0] && memcmp(buf, before.data[0], before.len[0]) == 0,
           "commit pack: the old file's committed bytes are all as they were (%zd of %zu; the "
           "header not rewritten)", got, before.len[0]);
    tap_ok(st_ok && fs.st_size == (off_t)before.len[0],
           "commit pack: the replaced file received none of the transaction's chunks (%lld "
           "bytes, %zu before)", (long long)fs.st_size, before.len[0]);
    free(buf);
  }
  ok = pack_run(path2, 0, t, 4, st2, &calls_inplace, &fd2, &rd2) && snap_take(path, &packed) &&
       snap_take(path2, &compacted);
  tap_ok(ok && snap_same(&compacted, &packed, "packed commit against commit + compaction"),
         "commit pack: the packed file is byte-identical to a commit in place compacted after");
  tap_ok(calls_pack > 0 && calls_pack < calls_inplace,
         "commit pack: %lld counted file calls against %lld for the commit in place and the "
         "compaction", (long long)calls_pack, (long long)calls_inplace);
done:
  if (fd >= 0) close(fd);
  if (fd2 >= 0) close(fd2);
  caterva_schunk_free(rd);
  caterva_schunk_free(rd2);
  snap_free(&before);
  snap_free(&packed);
  snap_free(&compacted);
  free(old);
  free(st);
  free(st2);
}

/* Maps in this process of a file at path that was replaced ("path (deleted)" in its maps). */
static int deleted_maps(const char *path) {
  char line[4096], want[600];
  int n = 0;
  FILE *f = fopen("/proc/self/maps", "r");
  snprintf(want, sizeof want, "%s (deleted)", path);
  while (f != NULL && fgets(line, sizeof line, f) != NULL) n += strstr(line, want) != NULL;
  if (f != NULL) fclose(f);
  return n;
}

static int gate;
static pthread_t poster;

/* Posted tasks: one that holds the pool's thread until gate opens, one that notes its thread. */
static void hold_task(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&gate, __ATOMIC_ACQUIRE)) usleep(1000);
}

static int noted;

static void note_task(void *arg) {
  *(pthread_t *)arg = pthread_self();
  __atomic_store_n(&noted, 1, __ATOMIC_RELEASE);
}

/* The maps a packed commit replaced are given back on the context's thread, not the caller's
 * (the kernel frees the old file's pages and blocks when its last map goes): while that thread
 * is held, the old file is still mapped after caterva_schunk_release_maps returns; freeing the
 * context runs what was posted. Without threads, or with no context, they go at once. */
static void test_release_maps_later(void) {
  static const edit t[] = {{E_UPDATE, 0, 501, NULL}, {E_UPDATE, 2, 502, NULL}};
  char path[512];
  state *st = malloc(sizeof *st);
  caterva_schunk *sc = NULL;
  caterva_ctx *c = NULL, *c1 = NULL;
  pthread_t ran = pthread_self();
  int ok, before = -1, held = -1, after = -1;
  frame_path(path, sizeof path, "release", CATERVA_STORE_CONTIGUOUS);
  ok = st != NULL && create_frame(path, CATERVA_STORE_CONTIGUOUS, st) &&
       caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0 &&
       caterva_ctx_new(2, &c) == 0 && caterva_ctx_new(1, &c1) == 0;
  if (!tap_ok(ok, "release maps later: setup")) goto done;
  caterva_schunk_set_flags(sc, CATERVA_SC_NO_AUTOCOMPACT | CATERVA_SC_RETAIN_MAPS);
  ok = caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, st, t, 2) == 0;
  caterva_schunk_set_commit_pack(sc, 1);
  ok = ok && caterva_schunk_commit(ctx, sc, 1) == 0 && state_check(sc, st, "after the commit");
  before = deleted_maps(path);
  gate = 0;
  ok = ok && cat_pool_post(c->pool, hold_task, NULL) == 0;
  caterva_schunk_release_maps(c, sc);
  held = deleted_maps(path);
  __atomic_store_n(&gate, 1, __ATOMIC_RELEASE);
  ok = ok && cat_pool_post(c->pool, note_task, &ran) == 0;
  for (int i = 0; i < 5000 && !__atomic_load_n(&noted, __ATOMIC_ACQUIRE); i++) usleep(1000);
  caterva_ctx_free(c);
  c = NULL;
  after = deleted_maps(path);
  tap_ok(ok && before >= 1 && held == before && after == 0,
         "release maps later: the replaced file's map is kept by the commit (%d), still there "
         "while the context's thread is busy (%d), gone once the context is freed (%d)", before,
         held, after);
  tap_ok(noted && !pthread_equal(ran, poster), "release maps later: a posted task runs on the "
         "pool's thread, not the caller's");
  ok = caterva_schunk_begin(ctx, sc) == 0 && do_edits(sc, st, t, 2) == 0 &&
       caterva_schunk_commit(ctx, sc, 1) == 0 && deleted_maps(path) >= 1;
  caterva_schunk_release_maps(c1, sc);
  tap_ok(ok && cat_pool_post(c1->pool, note_task, &ran) < 0 && deleted_maps(path) == 0,
         "release maps later: a context without threads gives the maps back at once");
done:
  caterva_ctx_free(c);
  caterva_ctx_free(c1);
  caterva_schunk_free(sc);
  free(st);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  snprintf(tmpdir, sizeof tmpdir, "%s/test_txn.XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(tmpdir) == NULL || caterva_ctx_new(2, &ctx) != 0) {
    tap_ok(0, "setup");
    return tap_done();
  }
  for (int run = 0; run < 3; run++) { /* contiguous writing at once, held, then sparse */
    int store = run < 2 ? CATERVA_STORE_CONTIGUOUS : CATERVA_STORE_SPARSE;
    held = run == 1;
    caterva_test_hold_max(held ? -1 : 0);
    test_rollback(store);
    test_commit(store);
    test_savepoints(store);
    test_faults(store);
    test_crash(store);
    test_compact(store);
  }
  held = 1; /* the library's default from here on */
  caterva_test_hold_max(-1);
  test_nosync();
  test_hold_spill();
  test_commit_pack();
  poster = pthread_self();
  test_release_maps_later();
  caterva_ctx_free(ctx);
  tu_rm_tree(tmpdir);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  tap_diag("%.2f s", (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
  return tap_done();
}

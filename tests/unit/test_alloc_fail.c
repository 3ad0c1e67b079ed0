/*
 * test_alloc_fail.c -- allocation failures: the library's and the extension's allocations fail
 * at the N-th call, for every N along a representative workload, and each time the outcome is
 * either the right answer or a clean error (a negative CATERVA_E_* with a message, an SQLite
 * error with a message), never a crash, never a leak, and a write leaves its file unchanged
 * unless it committed.
 *
 * The hook: this program is linked with -Wl,--wrap=malloc,calloc,realloc,strdup,strndup,free,
 * which routes every call of those in the library's objects (and the extension's, linked in
 * here as a static library) through fa_* below; the extension allocates through SQLite's
 * sqlite3_malloc family, which it reaches through the sqlite3_api_routines table handed to
 * sqlite3_caterva_init: the table given here is SQLite's with malloc, malloc64, realloc,
 * realloc64, mprintf and vmprintf replaced by counting wrappers. One counter covers both.
 *
 * Workloads (each run once unarmed to learn its results and its K allocations, then K times
 * with allocation N failing, N = 1..K):
 *   read   open a file array, a slice, the whole array, a block iterator over a box, the
 *          dimension names
 *   write  open for writing, begin, grow both extents, write a box, commit; the file's
 *          bytes are then the original or (committed) the unarmed run's
 *   sql    CREATE VIRTUAL TABLE, SELECTs with constraints, IN, ORDER BY and LIMIT,
 *          caterva_info, caterva_slice and caterva_reduce (the function and a named
 *          table), then UPDATE and DELETE in a
 *          transaction; the results are the unarmed run's up to the first error, after which
 *          the transaction is rolled back and the file is the original or the committed one.
 *   chunkwise  two rows written cell by cell, chunk after chunk, with two threads: the chunks
 *          left written in part go to the write-behind worker, whose allocations fail too
 * Leaks: LeakSanitizer in the sanitizer build; in every build the library's live allocations
 * (counted by the hook) and sqlite3_memory_used() return to their starting values.
 * CATERVA_ALLOC_STRIDE=s tries every s-th N only (default 1: every N).
 */
#include "config.h"

#define SQLITE_CORE 1 /* sqlite3ext.h for the routines table, without its macros */
#include <sqlite3.h>
#include <sqlite3ext.h>

#include "caterva.h"
#include "caterva_array.h"
#include "fsutil.h"
#include "tap.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sqlite3_caterva_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

/* ---- the hook ------------------------------------------------------------------------ */

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);
char *__wrap_strndup(const char *s, size_t n);
void __wrap_free(void *p);

static long fa_calls;   /* allocation calls since fa_arm */
static long fa_fail_at; /* the call that fails (0: none) */
static long fa_failed;  /* 1 once it has failed */
static long fa_live;    /* library allocations not yet freed */

static void fa_arm(long n) {
  __atomic_store_n(&fa_calls, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&fa_failed, 0, __ATOMIC_SEQ_CST);
  __atomic_store_n(&fa_fail_at, n, __ATOMIC_SEQ_CST);
}

static int fa_fail(void) {
  long k = __atomic_add_fetch(&fa_calls, 1, __ATOMIC_SEQ_CST);
  if (k != __atomic_load_n(&fa_fail_at, __ATOMIC_SEQ_CST)) return 0;
  __atomic_store_n(&fa_failed, 1, __ATOMIC_SEQ_CST);
  return 1;
}

static void *fa_count(void *p) {
  if (p != NULL) __atomic_add_fetch(&fa_live, 1, __ATOMIC_SEQ_CST);
  return p;
}

void *__wrap_malloc(size_t n) { return fa_fail() ? NULL : fa_count(__real_malloc(n)); }
void *__wrap_calloc(size_t n, size_t m) { return fa_fail() ? NULL : fa_count(__real_calloc(n, m)); }
char *__wrap_strdup(const char *s) { return fa_fail() ? NULL : fa_count(__real_strdup(s)); }
char *__wrap_strndup(const char *s, size_t n) {
  return fa_fail() ? NULL : fa_count(__real_strndup(s, n));
}
void *__wrap_realloc(void *p, size_t n) {
  void *q;
  if (fa_fail()) return NULL;
  q = __real_realloc(p, n);
  if (p == NULL) return fa_count(q);
  if (q == NULL && n == 0) __atomic_sub_fetch(&fa_live, 1, __ATOMIC_SEQ_CST);
  return q;
}
void __wrap_free(void *p) {
  if (p != NULL) __atomic_sub_fetch(&fa_live, 1, __ATOMIC_SEQ_CST);
  __real_free(p);
}

/* The extension's allocations: SQLite's routines table with counting wrappers. */
static void *w_malloc(int n) { return fa_fail() ? NULL : sqlite3_malloc(n); }
static void *w_malloc64(sqlite3_uint64 n) { return fa_fail() ? NULL : sqlite3_malloc64(n); }
static void *w_realloc(void *p, int n) { return fa_fail() ? NULL : sqlite3_realloc(p, n); }
static void *w_realloc64(void *p, sqlite3_uint64 n) {
  return fa_fail() ? NULL : sqlite3_realloc64(p, n);
}
static char *w_vmprintf(const char *fmt, va_list ap) {
  return fa_fail() ? NULL : sqlite3_vmprintf(fmt, ap);
}
static char *w_mprintf(const char *fmt, ...) {
  va_list ap;
  char *z;
  va_start(ap, fmt);
  z = w_vmprintf(fmt, ap);
  va_end(ap);
  return z;
}

static int init_wrapped(sqlite3 *db, char **pzErr, const sqlite3_api_routines *pApi) {
  static sqlite3_api_routines api;
  api = *pApi;
  api.malloc = w_malloc;
  api.malloc64 = w_malloc64;
  api.realloc = w_realloc;
  api.realloc64 = w_realloc64;
  api.mprintf = w_mprintf;
  api.vmprintf = w_vmprintf;
  return sqlite3_caterva_init(db, pzErr, &api);
}

/* ---- files --------------------------------------------------------------------------- */

static char dir[256];
enum { ROWS = 30, COLS = 40 };

static char *path_of(const char *name) {
  static char buf[2][600];
  static int k;
  k ^= 1;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

static uint8_t *slurp(const char *path, long *len) {
  FILE *f = fopen(path, "rb");
  uint8_t *b = NULL;
  *len = -1;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    b = __real_malloc((size_t)*len + 1);
    if (b != NULL && fread(b, 1, (size_t)*len, f) != (size_t)*len) *len = -1;
  }
  fclose(f);
  return b;
}

static int spit(const char *path, const uint8_t *b, long len) {
  FILE *f = fopen(path, "wb");
  int ok = f != NULL && fwrite(b, 1, (size_t)len, f) == (size_t)len;
  if (f != NULL && fclose(f) != 0) ok = 0;
  return ok;
}

/* Remove every file of dir whose name starts with prefix (the array and its sidecars). */
static void remove_prefixed(const char *prefix) {
  static const char *const sfx[] = {"", ".b2lock", ".journal", "-journal", ".tmp", ".wal"};
  for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
    char name[300];
    snprintf(name, sizeof name, "%s%s", prefix, sfx[i]);
    tu_rm_tree(path_of(name));
  }
}

static uint8_t *orig_bytes;
static long orig_len;

static int make_array(void) {
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  caterva_array_params p;
  double v[ROWS * COLS];
  const char *const names[2] = {"y", "x"};
  int ok;
  for (int i = 0; i < ROWS * COLS; i++) v[i] = (i * 37 % 101) * 0.5 - 7;
  caterva_array_params_init(&p);
  p.ndim = 2;
  p.shape[0] = ROWS;
  p.shape[1] = COLS;
  p.chunkshape[0] = 10;
  p.chunkshape[1] = 16;
  p.blockshape[0] = 5;
  p.blockshape[1] = 8;
  p.dtype = "<f8";
  p.store = CATERVA_STORE_CONTIGUOUS;
  p.path = path_of("orig.b2nd");
  ok = caterva_ctx_new(1, &ctx) == 0 &&
       caterva_array_from_buffer(ctx, &p, v, (int64_t)sizeof v, &a) == 0 &&
       caterva_array_set_dim_names(ctx, a, names) == 0;
  caterva_array_free(a);
  caterva_ctx_free(ctx);
  if (ok) orig_bytes = slurp(path_of("orig.b2nd"), &orig_len);
  return ok && orig_bytes != NULL && orig_len > 0;
}

/* ---- outcomes ------------------------------------------------------------------------ */

/* A workload's transcript: what it computed, one line per step, and how it ended. */
typedef struct result {
  char text[4096];
  size_t len;
  int err;          /* 0, or the first error (library code or SQLite code) */
  char msg[256];    /* its message */
} result;

static void say(result *r, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (r->len < sizeof r->text) {
    int n = vsnprintf(r->text + r->len, sizeof r->text - r->len, fmt, ap);
    if (n > 0) r->len += (size_t)n;
    if (r->len > sizeof r->text) r->len = sizeof r->text;
  }
  va_end(ap);
}

static int lib_fail(result *r, caterva_ctx *ctx, int rc) {
  r->err = rc;
  snprintf(r->msg, sizeof r->msg, "%s", ctx ? caterva_ctx_errmsg(ctx) : caterva_strerror(rc));
  return rc;
}

/* ---- workload: reads through the library ---------------------------------------------- */

static void wl_read(result *r) {
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  caterva_block_iter *it = NULL;
  const caterva_block *blk;
  char **names = NULL;
  static double buf[ROWS * COLS];
  int64_t start[2] = {3, 5}, stop[2] = {27, 33};
  int rc;
  double s = 0;
  if ((rc = caterva_ctx_new(1, &ctx)) < 0) {
    lib_fail(r, NULL, rc);
    return;
  }
  if ((rc = caterva_array_open(ctx, path_of("r.b2nd"), CATERVA_OPEN_READ, &a)) < 0) goto fail;
  if ((rc = caterva_array_get_slice(ctx, a, start, stop, buf, (int64_t)sizeof buf)) < 0) goto fail;
  for (int i = 0; i < 24 * 28; i++) s += buf[i] * (i % 7 + 1);
  say(r, "slice %.17g\n", s);
  if ((rc = caterva_array_to_buffer(ctx, a, buf, (int64_t)sizeof buf)) < 0) goto fail;
  s = 0;
  for (int i = 0; i < ROWS * COLS; i++) s += buf[i] * (i % 5 + 1);
  say(r, "whole %.17g\n", s);
  if ((rc = caterva_block_iter_new(ctx, a, start, stop, 0, &it)) < 0) goto fail;
  int n = 0;
  while ((rc = caterva_block_iter_next(it, &blk)) == 1) n++;
  if (rc < 0) goto fail;
  say(r, "blocks %d\n", n);
  if ((rc = caterva_array_get_dim_names(ctx, a, &names)) < 0) goto fail;
  say(r, "names %s %s\n", names[0], names[1]);
  rc = 0;
fail:
  if (rc < 0) lib_fail(r, ctx, rc);
  caterva_array_free_names(names, 2);
  caterva_block_iter_free(it);
  caterva_array_free(a);
  caterva_ctx_free(ctx);
}

/* ---- workload: a transaction through the library ---------------------------------------- */

static void wl_write(result *r) {
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  static double box[12 * 20];
  int64_t start[2] = {4, 10}, stop[2] = {16, 30}, grown[2] = {ROWS + 8, COLS + 20};
  int rc;
  for (int i = 0; i < 12 * 20; i++) box[i] = i * 0.25;
  if ((rc = caterva_ctx_new(1, &ctx)) < 0) {
    lib_fail(r, NULL, rc);
    return;
  }
  if ((rc = caterva_array_open(ctx, path_of("w.b2nd"), CATERVA_OPEN_WRITE, &a)) < 0) goto fail;
  if ((rc = caterva_array_begin(ctx, a)) < 0) goto fail;
  /* both extents grow: new chunks between the old ones (one renumbering edit) */
  if ((rc = caterva_array_resize(ctx, a, grown)) < 0 ||
      (rc = caterva_array_set_slice(ctx, a, start, stop, box, (int64_t)sizeof box)) < 0) {
    lib_fail(r, ctx, rc);
    (void)caterva_array_rollback(ctx, a);
    goto done;
  }
  if ((rc = caterva_array_commit(ctx, a, 0)) < 0) goto fail;
  say(r, "committed\n");
  rc = 0;
fail:
  if (rc < 0) lib_fail(r, ctx, rc);
done:
  caterva_array_free(a);
  caterva_ctx_free(ctx);
}

/* ---- workload: cells written chunk after chunk, two threads ---------------------------- */

/* Rows 12 and 13 written chunk after chunk over stored chunks, as an UPDATE over a table's scan
 * writes them: each chunk, left written in part, goes to the write-behind worker (wcache.c),
 * whose allocations fail too (the N-th call in whichever thread makes it). */
static void wl_chunkwise(result *r) {
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  static double rows[2 * COLS];
  int64_t start[2] = {12, 0}, stop[2] = {14, COLS};
  int rc;
  if ((rc = caterva_ctx_new(2, &ctx)) < 0) {
    lib_fail(r, NULL, rc);
    return;
  }
  if ((rc = caterva_array_open(ctx, path_of("c.b2nd"), CATERVA_OPEN_WRITE, &a)) < 0) goto fail;
  if ((rc = caterva_array_begin(ctx, a)) < 0) goto fail;
  for (int64_t cx = 0; cx < COLS && rc >= 0; cx += 16)
    for (int64_t y = 12; y < 14 && rc >= 0; y++)
      for (int64_t x = cx; x < cx + 16 && x < COLS && rc >= 0; x++) {
        int64_t c[2] = {y, x};
        double v = (double)(y * 1000 + x) + 0.5;
        rc = caterva_array_set_item(ctx, a, c, &v);
      }
  if (rc < 0) {
    lib_fail(r, ctx, rc);
    (void)caterva_array_rollback(ctx, a);
    goto done;
  }
  if ((rc = caterva_array_commit(ctx, a, 0)) < 0) goto fail;
  if ((rc = caterva_array_get_slice(ctx, a, start, stop, rows, (int64_t)sizeof rows)) < 0)
    goto fail;
  say(r, "committed %.17g %.17g\n", rows[0], rows[2 * COLS - 1]);
  rc = 0;
fail:
  if (rc < 0) lib_fail(r, ctx, rc);
done:
  caterva_array_free(a);
  caterva_ctx_free(ctx);
}

/* ---- workload: SQL ------------------------------------------------------------------- */

static const char *const sql_steps[] = {
    "CREATE VIRTUAL TABLE t USING caterva('%s', synchronous=off)",
    "SELECT count(*), sum(value) FROM t WHERE y BETWEEN 3 AND 17 AND x < 25",
    "SELECT y, x, value FROM t WHERE y = 4 AND x IN (1, 7, 33) ORDER BY x DESC",
    "SELECT x, value FROM t WHERE y > 20 ORDER BY value DESC, x LIMIT 5",
    "SELECT length(caterva_slice('t', '[2,3]', '[12,30]')), "
    "json_extract(caterva_info('t'), '$.shape')",
    "SELECT hex(caterva_slice('%s', '[0,0]', '[2,2]'))",
    "SELECT d0, count, sum, min, max, std FROM caterva_reduce('t', 'stats', 'x') WHERE d0 < 9",
    "CREATE VIRTUAL TABLE r USING caterva_reduce('t', 'mean,min,max', 'x')",
    "SELECT y, mean, min, max, n FROM r WHERE y < 9 AND y_index IN (1, 3, 5)",
    "BEGIN",
    "UPDATE t SET value = value + 1 WHERE y < 5 AND x BETWEEN 10 AND 30",
    "DELETE FROM t WHERE y = 29",
    "SELECT sum(value) FROM t WHERE y < 6",
    "COMMIT",
    "SELECT sum(value), count(*) FROM t",
};

static int sql_step(sqlite3 *db, const char *zSql, result *r) {
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, zSql, -1, &st, NULL);
  while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int c = 0; c < sqlite3_column_count(st); c++) {
      const unsigned char *z = sqlite3_column_text(st, c);
      if (z == NULL && sqlite3_column_type(st, c) != SQLITE_NULL) {
        rc = sqlite3_errcode(db);
        break;
      }
      say(r, "%s%s", c ? "|" : "", z ? (const char *)z : "NULL");
    }
    say(r, "\n");
    rc = rc == SQLITE_ROW ? SQLITE_OK : rc;
  }
  if (rc == SQLITE_DONE) rc = SQLITE_OK;
  if (rc != SQLITE_OK) {
    r->err = rc;
    snprintf(r->msg, sizeof r->msg, "%s", sqlite3_errmsg(db));
  }
  sqlite3_finalize(st);
  return rc;
}

static void wl_sql(result *r) {
  sqlite3 *db = NULL;
  char zSql[512];
  int rc = sqlite3_open(":memory:", &db);
  if (rc != SQLITE_OK) {
    r->err = rc;
    snprintf(r->msg, sizeof r->msg, "%s", db ? sqlite3_errmsg(db) : "open");
  }
  for (size_t i = 0; rc == SQLITE_OK && i < sizeof sql_steps / sizeof *sql_steps; i++) {
    snprintf(zSql, sizeof zSql, sql_steps[i], path_of("s.b2nd"));
    say(r, "> %zu\n", i);
    rc = sql_step(db, zSql, r);
  }
  if (rc != SQLITE_OK && db != NULL && !sqlite3_get_autocommit(db))
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
  if (sqlite3_close(db) != SQLITE_OK) {
    r->err = -1000;
    snprintf(r->msg, sizeof r->msg, "sqlite3_close: statements left open");
  }
}

/* ---- the loop ------------------------------------------------------------------------ */

typedef struct workload {
  const char *name;
  const char *file;   /* the array it works on (a fresh copy of the original each run) */
  int writes;         /* it may change the file */
  void (*run)(result *);
  int threads;        /* two threads allocate: which makes a given call, and how many calls
                       * a run makes (a job run by the worker or by the waiting caller, each
                       * with scratch of its own), vary from run to run */
} workload;

/* Runs w with allocation n failing (0: none) into *r; *failed: whether it failed. */
static void run_once(const workload *w, long n, result *r, long *calls, int *failed) {
  memset(r, 0, sizeof *r);
  remove_prefixed(w->file);
  if (!spit(path_of(w->file), orig_bytes, orig_len)) {
    r->err = -2000;
    snprintf(r->msg, sizeof r->msg, "cannot copy the array");
    return;
  }
  fa_arm(n);
  w->run(r);
  *calls = __atomic_load_n(&fa_calls, __ATOMIC_SEQ_CST);
  *failed = (int)__atomic_load_n(&fa_failed, __ATOMIC_SEQ_CST);
  fa_arm(0);
}

static int file_is(const char *path, const uint8_t *b, long len) {
  long n;
  uint8_t *c = slurp(path, &n);
  int same = c != NULL && n == len && memcmp(c, b, (size_t)len) == 0;
  __real_free(c);
  return same;
}

/* The complete lines of r's transcript are the first lines of ref's. */
static int same_prefix(const result *r, const result *ref) {
  size_t n = r->len;
  while (n > 0 && r->text[n - 1] != '\n') n--;
  return n <= ref->len && memcmp(r->text, ref->text, n) == 0;
}

/* The array's shape and items as a byte string (unarmed; the ROWS x COLS float64 array can
 * only shrink or grow a little here), or len -1 when it does not open. */
typedef struct content {
  long len;
  uint8_t bytes[16 + 2 * ROWS * COLS * 8];
} content;

static void read_content(const char *path, content *c) {
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  c->len = -1;
  if (caterva_ctx_new(1, &ctx) == 0 && caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) == 0 &&
      caterva_array_ndim(a) == 2 && caterva_array_nitems(a) <= 2 * ROWS * COLS) {
    int64_t n = caterva_array_nitems(a) * 8;
    memcpy(c->bytes, caterva_array_shape(a), 16);
    if (caterva_array_to_buffer(ctx, a, c->bytes + 16, n) == 0) c->len = 16 + (long)n;
  }
  caterva_array_free(a);
  caterva_ctx_free(ctx);
}

static int same_content(const content *a, const content *b) {
  return a->len >= 0 && a->len == b->len && memcmp(a->bytes, b->bytes, (size_t)a->len) == 0;
}

static void check_workload(const workload *w, long stride) {
  result ref, r;
  long k = 0, calls, bad = 0, injected = 0, errors = 0;
  long live0 = __atomic_load_n(&fa_live, __ATOMIC_SEQ_CST);
  sqlite3_int64 mem0 = sqlite3_memory_used();
  uint8_t *after = NULL;
  long after_len = 0;
  int failed;
  run_once(w, 0, &ref, &k, &failed);
  tap_ok(ref.err == 0, "%s: the workload runs without failures (%ld allocations)%s%s", w->name,
         k, ref.err ? ": " : "", ref.msg);
  if (ref.err != 0) return;
  static content committed;
  long other_bytes = 0;
  if (w->writes) {
    after = slurp(path_of(w->file), &after_len);
    read_content(path_of(w->file), &committed);
  }
  if (w->writes)
    tap_ok(after != NULL && !file_is(path_of(w->file), orig_bytes, orig_len),
           "%s: the unarmed run changes the file", w->name);
  for (long n = 1; n <= k + 1; n += stride) {
    int ok = 1;
    const char *why = "";
    run_once(w, n, &r, &calls, &failed);
    injected += failed;
    if (r.err != 0) {
      errors++;
      /* a clean error: negative library code or SQLite code, a message, the same steps
       * before it as the unarmed run */
      if (!failed) ok = 0, why = "an error without a failed allocation";
      else if (r.msg[0] == 0) ok = 0, why = "an error without a message";
      else if (r.err == -1000 || r.err == -2000) ok = 0, why = r.msg;
      else if (!same_prefix(&r, &ref))
        ok = 0, why = "different results before the error";
    } else if (r.len != ref.len || memcmp(r.text, ref.text, r.len) != 0) {
      ok = 0, why = "success with different results";
    }
    if (ok && w->writes) {
      /* failed: the file unchanged, byte for byte, or (the failure came after the commit
       * point) holding the committed items; success: the committed items (a compaction
       * that ran out of memory may leave other bytes) */
      static content now;
      read_content(path_of(w->file), &now);
      if (r.err != 0 && !file_is(path_of(w->file), orig_bytes, orig_len) &&
          !same_content(&now, &committed))
        ok = 0, why = "failed, and the file is neither the original nor the committed one";
      else if (r.err == 0 && !same_content(&now, &committed))
        ok = 0, why = "success without the committed items";
      if (r.err == 0 && !file_is(path_of(w->file), after, after_len)) other_bytes++;
    }
    if (ok && __atomic_load_n(&fa_live, __ATOMIC_SEQ_CST) != live0)
      ok = 0, why = "library allocations leaked";
    if (ok && sqlite3_memory_used() != mem0) ok = 0, why = "SQLite memory leaked";
    if (!ok && bad++ < 5)
      tap_diag("%s: allocation %ld failing: %s (error %d: %s)", w->name, n, why, r.err, r.msg);
    live0 = __atomic_load_n(&fa_live, __ATOMIC_SEQ_CST);
    mem0 = sqlite3_memory_used();
  }
  tap_ok(bad == 0, "%s: allocation N failing for every N in 1..%ld%s: %ld clean errors, "
         "%ld right answers, %ld failures", w->name, k,
         stride > 1 ? " (strided)" : "", errors, (k + stride) / stride - errors, bad);
  if (other_bytes > 0)
    tap_diag("%s: %ld successful runs committed the same items in other bytes", w->name,
             other_bytes);
  /* with threads a run may make fewer calls than the unarmed one: some N then fail nothing */
  tap_ok(injected >= (w->threads ? k / stride * 3 / 4 : k / stride),
         "%s: %ld of the runs had an allocation fail", w->name, injected);
  __real_free(after);
}

int main(void) {
  static const workload wls[] = {
      {"read", "r.b2nd", 0, wl_read, 0},
      {"write", "w.b2nd", 1, wl_write, 0},
      {"sql", "s.b2nd", 1, wl_sql, 0},
      {"chunkwise", "c.b2nd", 1, wl_chunkwise, 1},
  };
  const char *st = getenv("CATERVA_ALLOC_STRIDE");
  long stride = st && atol(st) > 0 ? atol(st) : 1;
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/test_alloc_fail.%ld", tmp && *tmp ? tmp : "/tmp", (long)getpid());
  if (mkdir(dir, 0700) != 0) return tap_ok(0, "mkdir %s", dir), tap_done();
  setenv("CATERVA_THREADS", "1", 1); /* the extension's allocations in a repeatable order */
  sqlite3_auto_extension((void (*)(void))init_wrapped);
  if (!tap_ok(make_array(), "write the test array")) goto out;
  {
    /* one connection first: SQLite's lazily allocated global state is not a leak */
    sqlite3 *db = NULL;
    sqlite3_open(":memory:", &db);
    sqlite3_close(db);
  }
  for (size_t i = 0; i < sizeof wls / sizeof *wls; i++) check_workload(&wls[i], stride);
out:
  __real_free(orig_bytes);
  sqlite3_reset_auto_extension();
  tu_rm_tree(dir);
  return tap_done();
}

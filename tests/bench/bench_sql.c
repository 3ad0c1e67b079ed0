/*
 * bench_sql.c -- the caterva virtual table against a plain SQLite table holding the same cells.
 *
 *   bench_sql [-e EXT] [-d DEMO.b2nd] [-m MKDEMO] [-t TMPDIR] [-n N] [-s SQLITE3]
 *
 *   -e  the built extension (default: ../../.libs/caterva.so from this program, tests/bench/)
 *   -d  the demo array (default: written by ../tools/mkdemo from this program into TMPDIR)
 *   -t  scratch directory for the arrays and databases (default /tmp)
 *   -n  extent of the first array, N x N x N float64 (default 200)
 *   -c  the first array only
 *   -k  keep the scratch files
 *   -s  the sqlite3 shell for the second floor (default: sqlite3 on the PATH; "" for none)
 *
 * For each array (an N^3 float64 array written here, and the demo's 365x180x360 float32
 * temperatures) it builds a plain table
 *     CREATE TABLE plain(d0 INTEGER, d1 INTEGER, d2 INTEGER, value REAL,
 *                        PRIMARY KEY(d0, d1, d2)) WITHOUT ROWID
 * in a database file of its own (one transaction, one prepared INSERT, rows in C order), opens
 * the array as a caterva table in the same connection, and times the same queries on both:
 * full-scan sum, a slice on each axis, a 20^3 box, 1000 random point lookups through a join,
 * ORDER BY the dimensions LIMIT 10. Results are compared. The floor for row iteration is
 * sum(value) over a counting virtual table of the same number of rows (generate_series is
 * part of the sqlite3 shell, not of every libsqlite3, so an equivalent lives here). The
 * second floor is the shell itself: in one sqlite3 process, `SELECT sum(value)` over the
 * caterva table and over the shell's generate_series(1, N), alternately, best of 5 each
 * (".timer on" wall times). Last, caterva_slice() through SQL against the library's
 * caterva_array_get_slice() of the same boxes (both best of at least 5, same process).
 *
 * Timing: each query is run at least 3 times (more while under 0.3 s in all) and the best
 * time is kept. The caterva table is dropped and created again before every run, so its
 * block cache starts empty each time: repeated runs are not served from it. The plain
 * table keeps SQLite's page cache (and both keep the OS file cache): warm files for both.
 */
#include "caterva.h"

#include <sqlite3.h>

#include "benchutil.h"
#include "testrng.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* ---- the floor: a counting table, equivalent to generate_series(1, N) ----------------- */

/* SELECT value FROM bench_count WHERE stop = N yields 1..N (one INTEGER column, as
 * generate_series(1, N) does). bench_count(N) is the table-valued-function form. */
typedef struct {
  sqlite3_vtab_cursor base;
  sqlite3_int64 i, stop;
} CountCursor;

static int countConnect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **pp, char **err) {
  sqlite3_vtab *v;
  int rc;
  (void)aux, (void)argc, (void)argv, (void)err;
  rc = sqlite3_declare_vtab(db, "CREATE TABLE x(value INTEGER, stop HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  v = sqlite3_malloc(sizeof(*v));
  if (v == NULL) return SQLITE_NOMEM;
  memset(v, 0, sizeof(*v));
  *pp = v;
  return SQLITE_OK;
}

static int countDisconnect(sqlite3_vtab *v) {
  sqlite3_free(v);
  return SQLITE_OK;
}

static int countBestIndex(sqlite3_vtab *v, sqlite3_index_info *info) {
  int i;
  (void)v;
  for (i = 0; i < info->nConstraint; i++) {
    if (info->aConstraint[i].iColumn == 1 && info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ) {
      if (!info->aConstraint[i].usable) return SQLITE_CONSTRAINT;
      info->aConstraintUsage[i].argvIndex = 1;
      info->aConstraintUsage[i].omit = 1;
      info->estimatedCost = 1000.0;
      info->estimatedRows = 1000;
      return SQLITE_OK;
    }
  }
  return SQLITE_CONSTRAINT;  /* stop= is required */
}

static int countOpen(sqlite3_vtab *v, sqlite3_vtab_cursor **pp) {
  CountCursor *c = sqlite3_malloc(sizeof(*c));
  (void)v;
  if (c == NULL) return SQLITE_NOMEM;
  memset(c, 0, sizeof(*c));
  *pp = &c->base;
  return SQLITE_OK;
}

static int countClose(sqlite3_vtab_cursor *c) {
  sqlite3_free(c);
  return SQLITE_OK;
}

static int countFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                       sqlite3_value **argv) {
  CountCursor *c = (CountCursor *)cur;
  (void)idxNum, (void)idxStr;
  c->i = 1;
  c->stop = argc > 0 ? sqlite3_value_int64(argv[0]) : 0;
  return SQLITE_OK;
}

static int countNext(sqlite3_vtab_cursor *cur) {
  ((CountCursor *)cur)->i++;
  return SQLITE_OK;
}

static int countEof(sqlite3_vtab_cursor *cur) {
  CountCursor *c = (CountCursor *)cur;
  return c->i > c->stop;
}

static int countColumn(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  CountCursor *c = (CountCursor *)cur;
  sqlite3_result_int64(ctx, col == 0 ? c->i : c->stop);
  return SQLITE_OK;
}

static int countRowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = ((CountCursor *)cur)->i;
  return SQLITE_OK;
}

static sqlite3_module countModule = {
    0, 0, countConnect, countBestIndex, countDisconnect, 0, countOpen, countClose,
    countFilter, countNext, countEof, countColumn, countRowid, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* ---- timing ------------------------------------------------------------------------------ */

/* Run sql and return its rows folded into one number (a sum of all columns of all rows) in
 * *result; the time in ms. */
static double run_once(sqlite3 *db, const char *sql, double *result, long long *nrows) {
  sqlite3_stmt *st;
  double t0, acc = 0.0;
  long long n = 0;
  int rc, i;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    bench_die("%s: %s", sql, sqlite3_errmsg(db));
  t0 = bench_now_ms();
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (i = 0; i < sqlite3_column_count(st); i++) acc += sqlite3_column_double(st, i);
    n++;
  }
  t0 = bench_now_ms() - t0;
  if (rc != SQLITE_DONE) bench_die("%s: %s", sql, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  *result = acc;
  *nrows = n;
  return t0;
}

typedef struct {
  const char *cat_create;  /* SQL creating the caterva table, run before every caterva run */
} Setup;

/* Best time of several runs. For the caterva table (setup != NULL) the table is created
 * afresh before each run (not timed). */
static double best_of(sqlite3 *db, const char *sql, const Setup *setup, double *result,
                      long long *nrows) {
  double best = 1e300, total = 0.0, t;
  int k;
  for (k = 0; k < 3 || (total < 300.0 && k < 20); k++) {
    if (setup) {
      bench_exec(db, "DROP TABLE IF EXISTS temp.cat");
      bench_exec(db, setup->cat_create);
    }
    t = run_once(db, sql, result, nrows);
    total += t;
    if (t < best) best = t;
  }
  return best;
}

/* ---- data sets ----------------------------------------------------------------------------- */

typedef struct {
  const char *label;       /* "200^3 float64" */
  char path[4096];         /* the array file */
  char dbpath[4096];       /* the plain table's database */
  const char *dims[3];     /* dimension names */
  int64_t shape[3];
  caterva_array *arr;
} Dataset;

/* Read the whole array and insert it into the plain table in C order. */
static void build_plain(caterva_ctx *ctx, Dataset *d) {
  sqlite3 *db;
  sqlite3_stmt *st;
  char sql[512];
  int64_t n = d->shape[0] * d->shape[1] * d->shape[2], idx = 0;
  int isize = caterva_array_itemsize(d->arr), i, j, k;
  uint8_t *buf = malloc((size_t)(n * isize));
  double t0 = bench_now_ms();
  if (buf == NULL) bench_die("out of memory");
  if (caterva_array_to_buffer(ctx, d->arr, buf, n * isize) < 0)
    bench_die("%s: %s", d->path, caterva_ctx_errmsg(ctx));
  unlink(d->dbpath);
  if (sqlite3_open(d->dbpath, &db) != SQLITE_OK) bench_die("%s: %s", d->dbpath, sqlite3_errmsg(db));
  bench_exec(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA cache_size=-262144");
  snprintf(sql, sizeof(sql),
           "CREATE TABLE plain(%s INTEGER, %s INTEGER, %s INTEGER, value REAL, "
           "PRIMARY KEY(%s, %s, %s)) WITHOUT ROWID",
           d->dims[0], d->dims[1], d->dims[2], d->dims[0], d->dims[1], d->dims[2]);
  bench_exec(db, sql);
  bench_exec(db, "BEGIN");
  if (sqlite3_prepare_v2(db, "INSERT INTO plain VALUES(?1, ?2, ?3, ?4)", -1, &st, NULL) !=
      SQLITE_OK)
    bench_die("prepare: %s", sqlite3_errmsg(db));
  for (i = 0; i < d->shape[0]; i++)
    for (j = 0; j < d->shape[1]; j++)
      for (k = 0; k < d->shape[2]; k++, idx++) {
        double v;
        if (isize == 8) {
          memcpy(&v, buf + idx * 8, 8);
        } else {
          float f;
          memcpy(&f, buf + idx * 4, 4);
          v = f;
        }
        sqlite3_bind_int(st, 1, i);
        sqlite3_bind_int(st, 2, j);
        sqlite3_bind_int(st, 3, k);
        sqlite3_bind_double(st, 4, v);
        if (sqlite3_step(st) != SQLITE_DONE) bench_die("insert: %s", sqlite3_errmsg(db));
        sqlite3_reset(st);
      }
  sqlite3_finalize(st);
  bench_exec(db, "COMMIT");
  sqlite3_close(db);
  free(buf);
  fprintf(stderr, "  plain table of %s: %lld rows inserted in %.1f s\n", d->label, (long long)n,
          (bench_now_ms() - t0) / 1e3);
}

/* The N^3 float64 array: a smooth field, sin(0.05 i) cos(0.07 j) + 0.01 k. */
static void make_cube(caterva_ctx *ctx, Dataset *d, int n) {
  caterva_array_params p;
  size_t total = (size_t)n * n * n, idx = 0;
  double *buf = malloc(total * sizeof(double));
  int i, j, k;
  if (buf == NULL) bench_die("out of memory");
  for (i = 0; i < n; i++)
    for (j = 0; j < n; j++)
      for (k = 0; k < n; k++, idx++) {
        buf[idx] = sin(i * 0.05) * cos(j * 0.07) + 0.01 * k;
      }
  caterva_array_params_init(&p);
  p.ndim = 3;
  for (k = 0; k < 3; k++) p.shape[k] = n;
  p.dtype = "<f8";
  p.store = CATERVA_STORE_CONTIGUOUS;
  p.path = d->path;
  unlink(d->path);
  if (caterva_array_from_buffer(ctx, &p, buf, (int64_t)(total * sizeof(double)), &d->arr) < 0)
    bench_die("%s: %s", d->path, caterva_ctx_errmsg(ctx));
  free(buf);
}

/* ---- the queries ------------------------------------------------------------------------------ */

typedef struct {
  char label[64];
  char sql[512];  /* with %T for the table name */
} Query;

/* sql with every "%T" replaced by table. */
static void subst(char *out, size_t cap, const char *sql, const char *table) {
  size_t o = 0;
  for (; *sql && o + 16 < cap; sql++) {
    if (sql[0] == '%' && sql[1] == 'T') {
      o += (size_t)snprintf(out + o, cap - o, "%s", table);
      sql++;
    } else {
      out[o++] = *sql;
    }
  }
  out[o] = 0;
}

static const char *axis_label(const Dataset *d, int k) {
  (void)d;
  return k == 0 ? "leading" : k == 1 ? "middle" : "last";
}

/* Rows per ms of the floor over n rows. */
static double floor_ms(sqlite3 *db, int64_t n, double *result) {
  char sql[128];
  long long rows;
  snprintf(sql, sizeof(sql), "SELECT sum(value) FROM bench_count(%lld)", (long long)n);
  return best_of(db, sql, NULL, result, &rows);
}

/* ---- the sqlite3 shell as host ------------------------------------------------------------ */

static const char *shell_path = "sqlite3";
static const char *g_ext, *g_dir; /* the extension and the scratch directory */

/* Best "Run Time: real" of the statements alternating in the shell's output: even-numbered
** timings into *pa, odd ones into *pb (ms). 0 when the shell did not give 2 x reps timings. */
static int shell_times(const char *out, int reps, double *pa, double *pb) {
  const char *p = out;
  int n = 0;
  *pa = *pb = 1e300;
  while ((p = strstr(p, "Run Time: real ")) != NULL) {
    double t = strtod(p + 15, NULL) * 1e3;
    if (n % 2 == 0 && t < *pa) *pa = t;
    if (n % 2 == 1 && t < *pb) *pb = t;
    n++;
    p += 15;
  }
  return n == 2 * reps;
}

/* Full scan of the array in the sqlite3 shell against the shell's generate_series. */
static void shell_floor(const char *ext, const char *dir, const Dataset *d, int64_t nitems) {
  char script[4300], cmd[9000];
  static char out[1 << 16];
  FILE *f;
  size_t got;
  double tcat, tser;
  const int reps = 5;
  int i;
  if (shell_path[0] == 0) return;
  snprintf(script, sizeof(script), "%s/scan.sql", dir);
  f = fopen(script, "w");
  if (f == NULL) bench_die("%s: %s", script, strerror(errno));
  fprintf(f, ".load %s\nCREATE VIRTUAL TABLE temp.cat USING caterva('%s');\n.timer on\n", ext,
          d->path);
  for (i = 0; i < reps; i++)
    fprintf(f, "SELECT sum(value) FROM temp.cat;\n"
               "SELECT sum(value) FROM generate_series(1, %lld);\n",
            (long long)nitems);
  fclose(f);
  snprintf(cmd, sizeof(cmd), "'%s' :memory: < '%s' 2>&1", shell_path, script);
  f = popen(cmd, "r");
  if (f == NULL) bench_die("%s: %s", cmd, strerror(errno));
  got = fread(out, 1, sizeof(out) - 1, f);
  out[got] = 0;
  if (pclose(f) != 0 || !shell_times(out, reps, &tcat, &tser)) {
    printf("(the sqlite3 shell floor could not be measured: %.200s)\n\n", out);
    return;
  }
  printf("In the sqlite3 shell (%s), best of %d alternating runs: caterva full scan %.1f ms "
         "(%.1f M rows/s), generate_series(1, %lld) %.1f ms (%.1f M rows/s): %.2fx the "
         "shell's floor.\n\n",
         shell_path, reps, tcat, nitems / tcat / 1e3, (long long)nitems, tser,
         nitems / tser / 1e3, tser / tcat);
}

/* ---- caterva_slice() against the library ---------------------------------------------------- */

/* Best time of caterva_array_get_slice of [start, stop) into buf. */
static double lib_slice_ms(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                           const int64_t *stop, void *buf, int64_t cap) {
  double best = 1e300, total = 0.0;
  for (int k = 0; k < 5 || (total < 200.0 && k < 50); k++) {
    double t = bench_now_ms();
    if (caterva_array_get_slice(ctx, a, start, stop, buf, cap) < 0)
      bench_die("get_slice: %s", caterva_ctx_errmsg(ctx));
    t = bench_now_ms() - t;
    total += t;
    if (t < best) best = t;
  }
  return best;
}

/* Best time of SELECT caterva_slice(path, start, stop), the BLOB fetched. */
static double sql_slice_ms(sqlite3 *db, const char *path, const int64_t *start,
                           const int64_t *stop, int64_t want) {
  char sql[4400];
  sqlite3_stmt *st;
  double best = 1e300, total = 0.0;
  snprintf(sql, sizeof(sql),
           "SELECT caterva_slice('%s', '[%lld,%lld,%lld]', '[%lld,%lld,%lld]')", path,
           (long long)start[0], (long long)start[1], (long long)start[2], (long long)stop[0],
           (long long)stop[1], (long long)stop[2]);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    bench_die("%s: %s", sql, sqlite3_errmsg(db));
  for (int k = 0; k < 5 || (total < 200.0 && k < 50); k++) {
    double t = bench_now_ms();
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_bytes(st, 0) != want)
      bench_die("%s: %s", sql, sqlite3_errmsg(db));
    (void)sqlite3_column_blob(st, 0);
    sqlite3_reset(st);
    t = bench_now_ms() - t;
    total += t;
    if (t < best) best = t;
  }
  sqlite3_finalize(st);
  return best;
}

#define NBOX 1000

/* NBOX 10^3 boxes at pseudo-random places (the same in every run) into lo[NBOX][3]. */
static void box_origins(const Dataset *d, int64_t (*lo)[3]) {
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < NBOX; i++)
    for (int k = 0; k < 3; k++) {
      test_rng_next(&x);
      lo[i][k] = (int64_t)(x % (uint64_t)(d->shape[k] - 10));
    }
}

/* Best time of the library's get_slice of the NBOX boxes, one after the other. */
static double lib_boxes_ms(caterva_ctx *ctx, caterva_array *a, int64_t (*lo)[3], void *buf,
                           int64_t cap) {
  double best = 1e300;
  for (int r = 0; r < 5; r++) {
    double t = bench_now_ms();
    for (int i = 0; i < NBOX; i++) {
      int64_t hi[3] = {lo[i][0] + 10, lo[i][1] + 10, lo[i][2] + 10};
      if (caterva_array_get_slice(ctx, a, lo[i], hi, buf, cap) < 0)
        bench_die("get_slice: %s", caterva_ctx_errmsg(ctx));
    }
    t = bench_now_ms() - t;
    if (t < best) best = t;
  }
  return best;
}

/* Best time of one statement calling caterva_slice() for each of the NBOX boxes (a table of
** their corners as caterva_slice takes them), the BLOBs summed by length. */
static double sql_boxes_ms(sqlite3 *db, const char *path, int64_t (*lo)[3], int64_t want) {
  char sql[4400];
  sqlite3_stmt *st;
  double best = 1e300;
  bench_exec(db, "DROP TABLE IF EXISTS temp.bx; CREATE TEMP TABLE bx(a TEXT, b TEXT)");
  if (sqlite3_prepare_v2(db, "INSERT INTO bx VALUES(?, ?)", -1, &st, NULL) != SQLITE_OK)
    bench_die("insert: %s", sqlite3_errmsg(db));
  for (int i = 0; i < NBOX; i++) {
    char a[96], b[96];
    snprintf(a, sizeof a, "[%lld,%lld,%lld]", (long long)lo[i][0], (long long)lo[i][1],
             (long long)lo[i][2]);
    snprintf(b, sizeof b, "[%lld,%lld,%lld]", (long long)lo[i][0] + 10, (long long)lo[i][1] + 10,
             (long long)lo[i][2] + 10);
    sqlite3_bind_text(st, 1, a, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 2, b, -1, SQLITE_TRANSIENT);
    if (sqlite3_step(st) != SQLITE_DONE) bench_die("insert: %s", sqlite3_errmsg(db));
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  snprintf(sql, sizeof(sql), "SELECT sum(length(caterva_slice('%s', a, b))) FROM bx", path);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    bench_die("%s: %s", sql, sqlite3_errmsg(db));
  for (int r = 0; r < 5; r++) {
    double t = bench_now_ms();
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_int64(st, 0) != want * NBOX)
      bench_die("%s: %s", sql, sqlite3_errmsg(db));
    sqlite3_reset(st);
    t = bench_now_ms() - t;
    if (t < best) best = t;
  }
  sqlite3_finalize(st);
  return best;
}

/* caterva_slice() of a slice on each axis and of a 10^3 box, against the library's; then
** NBOX boxes in one statement. */
static void slice_table(sqlite3 *db, caterva_ctx *ctx, const Dataset *d) {
  int64_t start[3], stop[3], cap = 1000, n; /* items: a 10x10x10 box, or the largest face */
  int k, j, is = caterva_array_itemsize(d->arr);
  uint8_t *buf;
  for (k = 0; k < 3; k++) {
    int64_t face = d->shape[(k + 1) % 3] * d->shape[(k + 2) % 3];
    if (face > cap) cap = face;
  }
  buf = malloc((size_t)(cap * is));
  if (buf == NULL) bench_die("out of memory");
  {
    /* The functions keep arrays open only for files whose last change is over 2 s old
    ** (ext/fn_arrcache.c): a file written moments ago is measured once it has settled. */
    struct stat st;
    if (stat(d->path, &st) == 0 && st.st_ctime + 3 > time(NULL)) sleep(3);
  }
  printf("| caterva_slice, %s | library ms | SQL ms | SQL / library |\n|---|---:|---:|---:|\n",
         d->label);
  for (k = 0; k < 4; k++) {
    char lbl[64];
    double tl, ts;
    n = is;
    for (j = 0; j < 3; j++) {
      start[j] = k < 3 && j != k ? 0 : d->shape[j] / 2;
      stop[j] = k < 3 ? (j != k ? d->shape[j] : start[j] + 1) : start[j] + 10;
      n *= stop[j] - start[j];
    }
    if (k < 3) snprintf(lbl, sizeof(lbl), "slice %s = %lld", d->dims[k], (long long)start[k]);
    else snprintf(lbl, sizeof(lbl), "box 10x10x10");
    tl = lib_slice_ms(ctx, d->arr, start, stop, buf, n);
    ts = sql_slice_ms(db, d->path, start, stop, n);
    printf("| %s | %.3f | %.3f | %.2fx |\n", lbl, tl, ts, ts / tl);
  }
  {
    int64_t (*lo)[3] = malloc(NBOX * sizeof *lo);
    double tl, ts;
    if (lo == NULL) bench_die("out of memory");
    box_origins(d, lo);
    tl = lib_boxes_ms(ctx, d->arr, lo, buf, cap * is);
    ts = sql_boxes_ms(db, d->path, lo, 1000 * (int64_t)is);
    printf("| %d boxes 10x10x10, one statement | %.3f | %.3f | %.2fx |\n", NBOX, tl, ts,
           ts / tl);
    free(lo);
  }
  printf("\n");
  free(buf);
}

/* The queries over dimension columns named nm (the plain table's columns, or the caterva
** table's hidden <dim>_index columns, which hold indices whatever labels the array has). */
static int build_queries(Query *q, const Dataset *d, const char *const *nm) {
  int nq = 0, k;
#define ADDQ(lbl, ...)                                                           \
  do {                                                                           \
    snprintf(q[nq].label, sizeof(q[nq].label), "%s", lbl);                       \
    snprintf(q[nq].sql, sizeof(q[nq].sql), __VA_ARGS__);                          \
    nq++;                                                                        \
  } while (0)
  ADDQ("full scan sum(value)", "SELECT sum(value) FROM %%T");
  for (k = 0; k < 3; k++) {
    char lbl[64];
    snprintf(lbl, sizeof(lbl), "slice %s = %lld (%s axis)", nm[k],
             (long long)(d->shape[k] / 2), axis_label(d, k));
    ADDQ(lbl, "SELECT sum(value), count(*) FROM %%T WHERE %s = %lld", nm[k],
         (long long)(d->shape[k] / 2));
  }
  {
    int64_t lo[3];
    for (k = 0; k < 3; k++) lo[k] = d->shape[k] / 3 + 7;
    ADDQ("box 20x20x20",
         "SELECT sum(value), count(*) FROM %%T WHERE %s BETWEEN %lld AND %lld AND %s BETWEEN "
         "%lld AND %lld AND %s BETWEEN %lld AND %lld",
         nm[0], (long long)lo[0], (long long)lo[0] + 19, nm[1], (long long)lo[1],
         (long long)lo[1] + 19, nm[2], (long long)lo[2], (long long)lo[2] + 19);
  }
  ADDQ("1000 random points (join)",
       "SELECT sum(t.value), count(*) FROM pts JOIN %%T t ON t.%s = pts.i AND t.%s = pts.j "
       "AND t.%s = pts.k",
       nm[0], nm[1], nm[2]);
  /* The same join again on the same table: its blocks are in the table's cache by then. */
  ADDQ("1000 random points (join), blocks cached",
       "SELECT sum(t.value), count(*) FROM pts JOIN %%T t ON t.%s = pts.i AND t.%s = pts.j "
       "AND t.%s = pts.k",
       nm[0], nm[1], nm[2]);
  ADDQ("ORDER BY dims LIMIT 10",
       "SELECT %s, %s, %s, value FROM %%T ORDER BY %s, %s, %s LIMIT 10", nm[0], nm[1], nm[2],
       nm[0], nm[1], nm[2]);
  ADDQ("ORDER BY dims LIMIT 10 OFFSET 5000",
       "SELECT %s, %s, %s, value FROM %%T ORDER BY %s, %s, %s LIMIT 10 OFFSET 5000", nm[0],
       nm[1], nm[2], nm[0], nm[1], nm[2]);
#undef ADDQ
  return nq;
}

static void bench_dataset(sqlite3 *db, caterva_ctx *ctx, Dataset *d) {
  Query q[16], qc_[16];
  char cnm_buf[3][64];
  const char *cnm[3];
  int nq = 0, k, i;
  char create[8192], sql[1024], attach[4200];
  Setup setup;
  int64_t nitems = d->shape[0] * d->shape[1] * d->shape[2];
  double floor_t, floor_r, full_cat = 0.0;
  const int32_t *cs = caterva_array_chunkshape(d->arr), *bs = caterva_array_blockshape(d->arr);
  long long fsize = file_size(d->path), psize;
  unsigned seed = 12345;

  build_plain(ctx, d);
  psize = file_size(d->dbpath);
  snprintf(attach, sizeof(attach), "ATTACH '%s' AS p", d->dbpath);
  bench_exec(db, attach);
  snprintf(create, sizeof(create), "CREATE VIRTUAL TABLE temp.cat USING caterva('%s', dims='%s,%s,%s')",
           d->path, d->dims[0], d->dims[1], d->dims[2]);
  setup.cat_create = create;

  /* 1000 random points, the same for both tables. */
  bench_exec(db, "DROP TABLE IF EXISTS temp.pts");
  bench_exec(db, "CREATE TEMP TABLE pts(i INTEGER, j INTEGER, k INTEGER)");
  bench_exec(db, "BEGIN");
  for (i = 0; i < 1000; i++) {
    int64_t c[3];
    for (k = 0; k < 3; k++) {
      seed = seed * 1103515245u + 12345u;
      c[k] = (int64_t)((seed >> 8) % (uint32_t)d->shape[k]);
    }
    snprintf(sql, sizeof(sql), "INSERT INTO pts VALUES(%lld, %lld, %lld)", (long long)c[0],
             (long long)c[1], (long long)c[2]);
    bench_exec(db, sql);
  }
  bench_exec(db, "COMMIT");
  bench_exec(db, "ANALYZE temp");  /* pts has 1000 rows, not SQLite's default guess of 1M */

  for (k = 0; k < 3; k++) {
    snprintf(cnm_buf[k], sizeof(cnm_buf[k]), "%s_index", d->dims[k]);
    cnm[k] = cnm_buf[k];
  }
  nq = build_queries(q, d, (const char *const *)d->dims);
  build_queries(qc_, d, cnm);

  printf("\n### %s: shape %lldx%lldx%lld, chunks %dx%dx%d, blocks %dx%dx%d (%lld cells)\n\n",
         d->label, (long long)d->shape[0], (long long)d->shape[1], (long long)d->shape[2],
         cs[0], cs[1], cs[2], bs[0], bs[1], bs[2], (long long)nitems);
  printf("| query | caterva ms | plain table ms | plain / caterva |\n");
  printf("|---|---:|---:|---:|\n");
  fflush(stdout);
  for (i = 0; i < nq; i++) {
    char qc[1024], qp[1024];
    double rc_, rp, tc, tp;
    long long nc, np;
    subst(qc, sizeof(qc), qc_[i].sql, "temp.cat");
    subst(qp, sizeof(qp), q[i].sql, "p.plain");
    if (strstr(q[i].label, "blocks cached") != NULL) {
      /* Warm: create the table once and run the query once untimed, then time repeats. */
      bench_exec(db, "DROP TABLE IF EXISTS temp.cat");
      bench_exec(db, setup.cat_create);
      run_once(db, qc, &rc_, &nc);
      tc = best_of(db, qc, NULL, &rc_, &nc);
    } else {
      tc = best_of(db, qc, &setup, &rc_, &nc);
    }
    tp = best_of(db, qp, NULL, &rp, &np);
    if (i == 0) full_cat = tc;
    printf("| %s | %.2f | %.2f | %.1fx |%s\n", q[i].label, tc, tp, tp / tc,
           (nc == np && fabs(rc_ - rp) <= 1e-9 * (fabs(rc_) + fabs(rp) + 1.0))
               ? ""
               : " **results differ**");
    fflush(stdout);
  }
  floor_t = floor_ms(db, nitems, &floor_r);
  printf("| floor: sum(value) over %lld counted rows | %.2f | | |\n\n", (long long)nitems,
         floor_t);
  printf("Full scan: caterva %.1f M rows/s, floor %.1f M rows/s: %.2fx the floor.\n\n",
         nitems / full_cat / 1e3, nitems / floor_t / 1e3, floor_t / full_cat);
  shell_floor(g_ext, g_dir, d, nitems);
  slice_table(db, ctx, d);
  printf("Sizes: raw %.1f MB; caterva file %.1f MB; plain table database %.1f MB (%.1fx the "
         "caterva file).\n",
         nitems * caterva_array_itemsize(d->arr) / 1e6, fsize / 1e6, psize / 1e6,
         (double)psize / (double)fsize);
  fflush(stdout);
  bench_exec(db, "DROP TABLE IF EXISTS temp.cat");
  bench_exec(db, "DETACH p");
}

int main(int argc, char **argv) {
  bench_prog = "bench_sql";
  char ext[4096] = "", mkdemo[4096] = "", tmpdir[1024] = "/tmp", dir[2048], self[2048];
  const char *demo = NULL;
  sqlite3 *db;
  caterva_ctx *ctx;
  char *err = NULL;
  Dataset cube, dem;
  int opt, n = 200, keep = 0, cube_only = 0;
  double t0;
  char *slash;

  snprintf(self, sizeof(self), "%s", argv[0]);
  slash = strrchr(self, '/');
  if (slash) *slash = 0;
  else snprintf(self, sizeof(self), ".");
  snprintf(ext, sizeof(ext), "%s/../../.libs/caterva.so", self);
  snprintf(mkdemo, sizeof(mkdemo), "%s/../tools/mkdemo", self);
  while ((opt = getopt(argc, argv, "e:d:m:t:n:kcs:")) != -1) {
    switch (opt) {
      case 'e': snprintf(ext, sizeof(ext), "%s", optarg); break;
      case 'd': demo = optarg; break;
      case 'm': snprintf(mkdemo, sizeof(mkdemo), "%s", optarg); break;
      case 't': snprintf(tmpdir, sizeof(tmpdir), "%s", optarg); break;
      case 'n': n = atoi(optarg); break;
      case 'k': keep = 1; break;
      case 'c': cube_only = 1; break;
      case 's': shell_path = optarg; break;
      default:
        fprintf(stderr, "usage: bench_sql [-e ext.so] [-d demo.b2nd] [-m mkdemo] [-t tmpdir] "
                        "[-n N] [-k] [-c] [-s sqlite3]\n");
        return 2;
    }
  }
  if (n < 20) bench_die("-n must be at least 20");
  snprintf(dir, sizeof(dir), "%s/bench_sql.XXXXXX", tmpdir);
  if (mkdtemp(dir) == NULL) bench_die("mkdtemp %s: %s", dir, strerror(errno));
  if (caterva_ctx_new(2, &ctx) != CATERVA_OK) bench_die("no context");
  g_ext = ext;
  g_dir = dir;

  memset(&cube, 0, sizeof(cube));
  cube.label = "cube";
  snprintf(cube.path, sizeof(cube.path), "%s/cube.b2nd", dir);
  snprintf(cube.dbpath, sizeof(cube.dbpath), "%s/cube.db", dir);
  cube.dims[0] = "d0", cube.dims[1] = "d1", cube.dims[2] = "d2";
  cube.shape[0] = cube.shape[1] = cube.shape[2] = n;
  fprintf(stderr, "bench_sql: writing the arrays and plain tables in %s\n", dir);
  make_cube(ctx, &cube, n);

  memset(&dem, 0, sizeof(dem));
  dem.label = "demo temperatures (float32)";
  if (cube_only) {
    snprintf(dem.path, sizeof(dem.path), "(not used)");
  } else if (demo == NULL) {
    char cmd[9000];
    snprintf(cmd, sizeof(cmd), "'%s' '%s/demo'", mkdemo, dir);
    t0 = bench_now_ms();
    if (system(cmd) != 0) bench_die("%s failed", cmd);
    fprintf(stderr, "  demo array written by mkdemo in %.1f s\n", (bench_now_ms() - t0) / 1e3);
    snprintf(dem.path, sizeof(dem.path), "%s/demo/temp.b2nd", dir);
  } else {
    snprintf(dem.path, sizeof(dem.path), "%s", demo);
  }
  snprintf(dem.dbpath, sizeof(dem.dbpath), "%s/demo.db", dir);
  dem.dims[0] = "time", dem.dims[1] = "lat", dem.dims[2] = "lon";
  if (!cube_only && caterva_array_open(ctx, dem.path, CATERVA_OPEN_READ, &dem.arr) < 0)
    bench_die("%s: %s", dem.path, caterva_ctx_errmsg(ctx));
  if (!cube_only && caterva_array_ndim(dem.arr) != 3) bench_die("%s: not 3-d", dem.path);
  if (!cube_only) memcpy(dem.shape, caterva_array_shape(dem.arr), sizeof(dem.shape));
  snprintf(self, sizeof(self), "demo temperatures, float32");
  dem.label = "demo temperatures, float32";
  {
    static char cl[64];
    snprintf(cl, sizeof(cl), "%dx%dx%d float64", n, n, n);
    cube.label = cl;
  }

  if (sqlite3_open(":memory:", &db) != SQLITE_OK) bench_die("sqlite3_open");
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, ext, NULL, &err) != SQLITE_OK) bench_die("loading %s: %s", ext, err);
  if (sqlite3_create_module(db, "bench_count", &countModule, NULL) != SQLITE_OK)
    bench_die("bench_count: %s", sqlite3_errmsg(db));
  printf("SQLite %s, caterva extension %s\n", sqlite3_libversion(), ext);
  bench_dataset(db, ctx, &cube);
  if (!cube_only) bench_dataset(db, ctx, &dem);
  {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT sum(value) FROM generate_series(1, 10)", -1, &st, NULL) ==
        SQLITE_OK) {
      double r1, r2;
      long long rows;
      int64_t nn = (int64_t)n * n * n;
      char sql[128];
      sqlite3_finalize(st);
      snprintf(sql, sizeof(sql), "SELECT sum(value) FROM generate_series(1, %lld)", (long long)nn);
      printf("\ngenerate_series(1, %lld): %.2f ms; bench_count: %.2f ms\n", (long long)nn,
             best_of(db, sql, NULL, &r1, &rows), floor_ms(db, nn, &r2));
    } else {
      printf("\n(generate_series is not in this libsqlite3; the floor is bench_count, a "
             "counting virtual table doing the same per-row work)\n");
    }
  }
  sqlite3_close(db);
  caterva_array_free(cube.arr);
  caterva_array_free(dem.arr);
  caterva_ctx_free(ctx);
  if (!keep) {
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "bench_sql: could not remove %s\n", dir);
  } else {
    fprintf(stderr, "bench_sql: kept %s\n", dir);
  }
  return 0;
}

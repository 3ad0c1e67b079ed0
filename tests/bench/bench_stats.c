/*
 * bench_stats.c -- block statistics on the demo array: value thresholds with and without
 * statistics against a plain table, and caterva_reduce() against GROUP BY.
 *
 *   bench_stats [-e EXT] [-d DEMO.b2nd] [-t TMPDIR] [-r RUNS]
 *
 *   -e  the built extension (default: ../../.libs/caterva.so from this program, tests/bench/)
 *   -d  the demo array as mkdemo writes it (default: ../tools/mkdemo from this program writes
 *       it into TMPDIR)
 *   -t  scratch directory (default /tmp)
 *   -r  runs per query, the best kept (default 3)
 *
 * Three copies of the same cells: the demo array with its statistics (as this library writes
 * it), the same file with the statistics removed (as another writer would leave it), and a
 * plain table plain(time, lat, lon, value) WITHOUT ROWID in a database file of its own (the
 * dimensions as indices; the caterva queries give and compare labels or the hidden
 * <dim>_index columns so that the three results can be compared). For
 * each query it prints the blocks decompressed (caterva_blocks_read() before and after), the
 * best wall-clock time of RUNS runs (the caterva table is created again before each run, so
 * neither its block cache nor its checked fingerprints carry over), and checks that the
 * three give the same result.
 */
#include "caterva.h"

#include <sqlite3.h>

#include "benchutil.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long blocks_read(sqlite3 *db) {
  sqlite3_stmt *st;
  long long n = -1;
  if (sqlite3_prepare_v2(db, "SELECT caterva_blocks_read()", -1, &st, NULL) != SQLITE_OK)
    bench_die("%s", sqlite3_errmsg(db));
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return n;
}

/* The result of a query, folded: number of rows and a sum over every column of every row
 * (NULL as 0), so that three implementations can be compared. */
typedef struct result {
  long long rows;
  double sum;
  double first;  /* first column of the first row */
} result;

static double run_once(sqlite3 *db, const char *sql, result *r) {
  sqlite3_stmt *st;
  double t0 = bench_now_ms();
  int rc;
  memset(r, 0, sizeof *r);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) bench_die("%s: %s", sql, sqlite3_errmsg(db));
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    for (int c = 0; c < sqlite3_column_count(st); c++) {
      double v = sqlite3_column_double(st, c);
      if (r->rows == 0 && c == 0) r->first = v;
      r->sum += v;
    }
    r->rows++;
  }
  if (rc != SQLITE_DONE) bench_die("%s: %s", sql, sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return bench_now_ms() - t0;
}

/* Best of runs; the caterva table t over path is created again before each run. */
static double best(sqlite3 *db, int runs, const char *path, const char *sql, result *r,
                   long long *nblk) {
  double bestms = 1e300;
  for (int i = 0; i < runs; i++) {
    char create[4200];
    long long b0;
    double ms;
    bench_exec(db, "DROP TABLE IF EXISTS t");
    if (path != NULL) {
      snprintf(create, sizeof create,
               "CREATE VIRTUAL TABLE t USING caterva('%s', dims='time,lat,lon')", path);
      bench_exec(db, create);
    }
    b0 = blocks_read(db);
    ms = run_once(db, sql, r);
    *nblk = blocks_read(db) - b0;
    if (ms < bestms) bestms = ms;
  }
  return bestms;
}

static int same(const result *a, const result *b) {
  double tol = 1e-9 * (fabs(a->sum) + fabs(b->sum)) + 1e-6;
  return a->rows == b->rows && fabs(a->sum - b->sum) <= tol;
}

typedef struct files {
  const char *with, *without;
  int runs;
} files;

/* A value threshold on the three copies (cond on the caterva table, condp on the plain one). */
static void threshold(sqlite3 *db, const files *f, const char *cond, const char *condp,
                      long long nblocks) {
  char q[512], qp[512];
  result rs, rn, rp;
  long long bs, bn, bp;
  double ts, tn, tp;
  snprintf(q, sizeof q, "SELECT count(*), sum(value) FROM t WHERE %s", cond);
  snprintf(qp, sizeof qp, "SELECT count(*), sum(value) FROM plain WHERE %s",
           condp ? condp : cond);
  ts = best(db, f->runs, f->with, q, &rs, &bs);
  tn = best(db, f->runs, f->without, q, &rn, &bn);
  tp = best(db, f->runs, NULL, qp, &rp, &bp);
  printf("| `%s` | %.0f | %lld (%.1f%%) | %.0f | %lld | %.0f | %.0f | %.1fx | %s |\n", cond,
         rs.first, bs, 100.0 * (double)bs / (double)nblocks, ts, bn, tn, tp, tn / ts,
         same(&rs, &rn) && same(&rs, &rp) ? "yes" : "NO");
  fflush(stdout);
}

/* A reduction against GROUP BY on the caterva table and on the plain table. */
static void reduction(sqlite3 *db, const files *f, const char *label, const char *qr,
                      const char *qg, const char *qgp) {
  result rr, rn, rg, rp;
  long long br, bn, bg, bp;
  double tr, tn, tg, tp;
  tr = best(db, f->runs, f->with, qr, &rr, &br);
  tn = best(db, f->runs, f->without, qr, &rn, &bn);
  tg = best(db, f->runs, f->with, qg, &rg, &bg);
  tp = best(db, f->runs, NULL, qgp, &rp, &bp);
  printf("| %s | %lld | %lld / %.0f | %lld / %.0f | %lld / %.0f | %.0f | %.1fx | %.1fx | %s |\n",
         label, rr.rows, br, tr, bn, tn, bg, tg, tp, tg / tr, tp / tr,
         same(&rr, &rn) && same(&rr, &rg) && same(&rr, &rp) ? "yes" : "NO");
  fflush(stdout);
}

/* A copy of src without the statistics attribute (as another writer's file). */
static void copy_without_stats(const char *src, const char *dst) {
  char cmd[8500];
  caterva_ctx *ctx = NULL;
  caterva_schunk *sc = NULL;
  snprintf(cmd, sizeof cmd, "cp '%s' '%s'", src, dst);
  if (system(cmd) != 0) bench_die("cannot copy %s", src);
  caterva_ctx_new(1, &ctx);
  if (caterva_schunk_open(ctx, dst, CATERVA_OPEN_WRITE, &sc) < 0 ||
      caterva_schunk_vlmeta_delete(ctx, sc, "_caterva_blockstats") < 0)
    bench_die("removing the statistics of %s: %s", dst, caterva_ctx_errmsg(ctx));
  caterva_schunk_free(sc);
  if (caterva_schunk_open(ctx, dst, CATERVA_OPEN_WRITE, &sc) < 0 ||
      caterva_schunk_compact(ctx, sc, 1) < 0)
    bench_die("compacting %s", dst);
  caterva_schunk_free(sc);
  caterva_ctx_free(ctx);
}

int main(int argc, char **argv) {
  bench_prog = "bench_stats";
  char ext[4200] = "", demo[4096] = "", tmp[4096] = "/tmp", nostats[4200], dbpath[4200];
  char dir[4000], cmd[8500], q[8600];
  files f = {NULL, NULL, 3};
  sqlite3 *db;
  char *err = NULL;
  long long nblocks = 0;
  int opt;
  struct stat st;
  snprintf(dir, sizeof dir, "%s", argv[0]);
  if (strrchr(dir, '/')) *strrchr(dir, '/') = '\0';
  else snprintf(dir, sizeof dir, ".");
  snprintf(ext, sizeof ext, "%s/../../.libs/caterva", dir);
  while ((opt = getopt(argc, argv, "e:d:t:r:")) != -1) {
    if (opt == 'e') snprintf(ext, sizeof ext, "%s", optarg);
    else if (opt == 'd') snprintf(demo, sizeof demo, "%s", optarg);
    else if (opt == 't') snprintf(tmp, sizeof tmp, "%s", optarg);
    else if (opt == 'r') f.runs = atoi(optarg) > 0 ? atoi(optarg) : 1;
    else bench_die("usage: bench_stats [-e EXT] [-d DEMO.b2nd] [-t TMPDIR] [-r RUNS]");
  }
  if (demo[0] == '\0') {
    snprintf(demo, sizeof demo, "%s/bench_stats_demo/temp.b2nd", tmp);
    if (stat(demo, &st) != 0) {
      snprintf(cmd, sizeof cmd, "'%s/../tools/mkdemo' '%s/bench_stats_demo' >/dev/null", dir, tmp);
      if (system(cmd) != 0) bench_die("cannot run %s", cmd);
    }
  }
  snprintf(nostats, sizeof nostats, "%s/bench_stats_nostats.b2nd", tmp);
  snprintf(dbpath, sizeof dbpath, "%s/bench_stats_plain.db", tmp);
  remove(nostats);
  copy_without_stats(demo, nostats);
  f.with = demo;
  f.without = nostats;

  if (sqlite3_open(dbpath, &db) != SQLITE_OK) bench_die("cannot open %s", dbpath);
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, ext, NULL, &err) != SQLITE_OK) bench_die("loading %s: %s", ext, err);
  bench_exec(db, "PRAGMA cache_size = -262144");
  {
    sqlite3_stmt *s;
    int have = 0;
    sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'plain'", -1, &s, 0);
    if (sqlite3_step(s) == SQLITE_ROW) have = sqlite3_column_int(s, 0);
    sqlite3_finalize(s);
    if (!have) {
      double t0 = bench_now_ms();
      snprintf(q, sizeof q, "CREATE VIRTUAL TABLE src USING caterva('%s', dims='time,lat,lon')",
               demo);
      bench_exec(db, q);
      bench_exec(db, "CREATE TABLE plain(time INTEGER, lat INTEGER, lon INTEGER, value REAL, "
                   "PRIMARY KEY(time, lat, lon)) WITHOUT ROWID");
      bench_exec(db, "INSERT INTO plain SELECT time_index, lat_index, lon_index, value FROM src");
      bench_exec(db, "DROP TABLE src");
      fprintf(stderr, "plain table built in %.0f s\n", (bench_now_ms() - t0) / 1e3);
    }
  }
  {
    caterva_ctx *ctx = NULL;
    caterva_array *a = NULL;
    caterva_ctx_new(1, &ctx);
    if (caterva_array_open(ctx, demo, CATERVA_OPEN_READ, &a) < 0) bench_die("opening %s", demo);
    nblocks = caterva_schunk_nchunks(caterva_array_schunk(a));
    {
      const int64_t *s = caterva_array_shape(a);
      const int32_t *c = caterva_array_chunkshape(a), *b = caterva_array_blockshape(a);
      /* blocks holding cells (those wholly in the padding of edge chunks do not count) */
      nblocks = 1;
      for (int k = 0; k < caterva_array_ndim(a); k++) {
        long long along = 0;
        for (long long x = 0; x < s[k]; x += c[k])
          along += ((s[k] - x < c[k] ? s[k] - x : c[k]) + b[k] - 1) / b[k];
        nblocks *= along;
      }
      printf("demo array %lld x %lld x %lld float32, chunks %d x %d x %d, blocks %d x %d x %d: "
             "%lld blocks; %d runs per query, best kept\n\n", (long long)s[0], (long long)s[1],
             (long long)s[2], c[0], c[1], c[2], b[0], b[1], b[2], nblocks, f.runs);
    }
    caterva_array_free(a);
    caterva_ctx_free(ctx);
  }

  printf("| predicate | rows | blocks decompressed, stats | ms, stats | blocks, no stats | "
         "ms, no stats | ms, plain table | speed-up | same result |\n"
         "|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
  threshold(db, &f, "value > 31", NULL, nblocks);
  threshold(db, &f, "value > 30", NULL, nblocks);
  threshold(db, &f, "value > 28", NULL, nblocks);
  threshold(db, &f, "value > 25", NULL, nblocks);
  threshold(db, &f, "value > 20", NULL, nblocks);
  threshold(db, &f, "value < -50", NULL, nblocks);
  threshold(db, &f, "value > 30 AND lat BETWEEN -30 AND 30",
            "value > 30 AND lat BETWEEN 60 AND 119", nblocks);
  threshold(db, &f, "value IS NULL", NULL, nblocks);

  printf("\n| reduction | rows | caterva_reduce: blocks / ms | ... no stats: blocks / ms | "
         "GROUP BY on caterva: blocks / ms | GROUP BY on plain: ms | vs GROUP BY caterva | "
         "vs plain | same result |\n|---|---:|---:|---:|---:|---:|---:|---:|---|\n");
  reduction(db, &f, "per-latitude annual mean",
            "SELECT d1_index, value FROM caterva_reduce('t', 'mean', 'time,lon')",
            "SELECT lat_index, avg(value) FROM t GROUP BY lat",
            "SELECT lat, avg(value) FROM plain GROUP BY lat");
  reduction(db, &f, "climatology (mean over time)",
            "SELECT d1_index, d2_index, value FROM caterva_reduce('t', 'mean', 'time')",
            "SELECT lat_index, lon_index, avg(value) FROM t GROUP BY lat, lon",
            "SELECT lat, lon, avg(value) FROM plain GROUP BY lat, lon");
  reduction(db, &f, "whole-array min and max",
            "SELECT (SELECT value FROM caterva_reduce('t', 'min', '')), "
            "(SELECT value FROM caterva_reduce('t', 'max', ''))",
            "SELECT min(value), max(value) FROM t", "SELECT min(value), max(value) FROM plain");
  reduction(db, &f, "daily global sum (per time step)",
            "SELECT d0_index, value FROM caterva_reduce('t', 'sum', 'lat,lon')",
            "SELECT time_index, sum(value) FROM t GROUP BY time",
            "SELECT time, sum(value) FROM plain GROUP BY time");
  reduction(db, &f, "count in a box (first 30 days, tropics)",
            "SELECT value FROM caterva_reduce('t', 'count', '') WHERE d0 BETWEEN '2023-01-01' "
            "AND '2023-01-30' AND d1 BETWEEN -22.5 AND 22.5",
            "SELECT count(value) FROM t WHERE time BETWEEN '2023-01-01' AND '2023-01-30' AND "
            "lat BETWEEN -22.5 AND 22.5",
            "SELECT count(value) FROM plain WHERE time BETWEEN 0 AND 29 AND lat BETWEEN 67 "
            "AND 112");
  sqlite3_close(db);
  remove(nostats);
  return 0;
}

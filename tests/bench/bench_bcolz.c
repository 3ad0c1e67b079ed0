/*
 * bench_bcolz.c -- a bcolz ctable queried through the caterva module against a plain SQLite
 * table holding the same rows.
 *
 *   bench_bcolz [-e EXT] [-m MKBCOLZ] [-t TMPDIR] [-n ROWS] [-k]
 *
 *   -e  the built extension (default: ../../.libs/caterva.so from this program, tests/bench/)
 *   -m  the dataset writer (default: ../tools/mkbcolz from this program; needs libblosc-dev)
 *   -t  scratch directory (default /tmp)
 *   -n  rows (default 10,000,000)
 *   -k  keep the scratch files
 *
 * mkbcolz --bench writes a ctable of ROWS rows (id int64 = row number, price float64,
 * qty int32, flag bool; lz4 clevel 5 with shuffle, as bcolz writes by default, with the
 * chunklens bcolz chooses for 10 M rows) with the real c-blosc 1.x. The plain table
 *     CREATE TABLE plain(id INTEGER PRIMARY KEY, price REAL, qty INTEGER, flag INTEGER)
 * is loaded from it in one transaction (INSERT ... SELECT), in a database file of its own.
 * Then, one run each (the figures are single runs; the machine may be shared, so compare
 * the two columns of one run rather than runs with each other):
 *   - full scan: sum(price), sum(qty), sum(flag) over every row;
 *   - 1 % row range: the same sums over rows [ROWS/2, ROWS/2 + ROWS/100) (rowid range);
 *   - 1000 point lookups by rowid through a join with a table of random row numbers;
 * results are compared (exactly: both sum in rowid order). Also: the blocks the row range
 * decompressed out of the ctable's total, caterva_import() of the ctable into Blosc2 arrays,
 * the full scan and the row range on the converted directory opened as one table, and the sizes on disk of the bcolz directory, the plain database and the converted arrays.
 */
#include <sqlite3.h>

#include "benchutil.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Bytes of a file, or of every file under a directory. */
static long long du(const char *path) {
  struct stat st;
  long long n = 0;
  DIR *d;
  struct dirent *e;
  if (lstat(path, &st) != 0) return 0;
  if (!S_ISDIR(st.st_mode)) return (long long)st.st_size;
  if ((d = opendir(path)) == NULL) return 0;
  while ((e = readdir(d)) != NULL) {
    char sub[4096];
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
    n += du(sub);
  }
  closedir(d);
  return n;
}

static void rm_rf(const char *path) {
  struct stat st;
  DIR *d;
  struct dirent *e;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode) && (d = opendir(path)) != NULL) {
    while ((e = readdir(d)) != NULL) {
      char sub[4096];
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
      rm_rf(sub);
    }
    closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

/* Run one query returning one row of up to 4 columns, as text (exact comparison). */
typedef struct { char v[4][64]; int n; double ms; } result;

static result run(sqlite3 *db, const char *sql) {
  result r;
  sqlite3_stmt *st;
  double t0 = bench_now_ms();
  memset(&r, 0, sizeof r);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) bench_die("%s: %s", sql, sqlite3_errmsg(db));
  if (sqlite3_step(st) == SQLITE_ROW) {
    r.n = sqlite3_column_count(st) < 4 ? sqlite3_column_count(st) : 4;
    for (int k = 0; k < r.n; k++) {
      if (sqlite3_column_type(st, k) == SQLITE_FLOAT)
        snprintf(r.v[k], sizeof r.v[k], "%.17g", sqlite3_column_double(st, k));
      else
        snprintf(r.v[k], sizeof r.v[k], "%s", (const char *)sqlite3_column_text(st, k));
    }
  }
  if (sqlite3_finalize(st) != SQLITE_OK) bench_die("%s: %s", sql, sqlite3_errmsg(db));
  r.ms = bench_now_ms() - t0;
  return r;
}

static long long int_of(sqlite3 *db, const char *sql) {
  result r = run(db, sql);
  return atoll(r.v[0]);
}

static int same(const result *a, const result *b) {
  if (a->n != b->n) return 0;
  for (int k = 0; k < a->n; k++) if (strcmp(a->v[k], b->v[k]) != 0) return 0;
  return 1;
}

/* One row of the table: the query on both tables, with rows/s. */
static int row(sqlite3 *db, const char *what, const char *bz_sql, const char *plain_sql,
               long long nrows) {
  long long b0 = int_of(db, "SELECT caterva_blocks_read()");
  result a = run(db, bz_sql);
  long long b1 = int_of(db, "SELECT caterva_blocks_read()");
  result p = run(db, plain_sql);
  int ok = same(&a, &p);
  printf("| %-26s | %10lld | %9.1f | %7.2f M | %9.1f | %7.2f M | %5.2f | %8lld | %s |\n", what,
         nrows, a.ms, nrows / a.ms / 1e3, p.ms, nrows / p.ms / 1e3, a.ms / p.ms, b1 - b0,
         ok ? "same" : "DIFFERENT");
  if (!ok) fprintf(stderr, "  bcolz %s %s | plain %s %s\n", a.v[0], a.v[1], p.v[0], p.v[1]);
  return ok;
}

static void spawn(const char *prog, const char *a1, const char *a2, const char *a3) {
  pid_t pid = fork();
  int status;
  if (pid < 0) bench_die("fork: %s", strerror(errno));
  if (pid == 0) {
    execl(prog, prog, a1, a2, a3, (char *)NULL);
    _exit(127);
  }
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
    bench_die("%s failed", prog);
}

int main(int argc, char **argv) {
  bench_prog = "bench_bcolz";
  char ext[4096], mk[4096], tmp[1024] = "/tmp", bz[1200], dbpath[1200], conv[1200], sql[8192];
  char self[2048], nrows_s[32];
  long long n = 10000000, lo, hi, total_blocks = 0;
  int keep = 0, opt, ok = 1;
  sqlite3 *db;
  double t0, load_ms, conv_ms;
  char *slash;
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  self[len > 0 ? len : 0] = '\0';
  slash = strrchr(self, '/');
  if (slash) *slash = '\0';
  snprintf(ext, sizeof ext, "%s/../../.libs/caterva", self);
  snprintf(mk, sizeof mk, "%s/../tools/mkbcolz", self);
  while ((opt = getopt(argc, argv, "e:m:t:n:k")) != -1) {
    switch (opt) {
    case 'e': snprintf(ext, sizeof ext, "%s", optarg); break;
    case 'm': snprintf(mk, sizeof mk, "%s", optarg); break;
    case 't': snprintf(tmp, sizeof tmp, "%s", optarg); break;
    case 'n': n = atoll(optarg); break;
    case 'k': keep = 1; break;
    default: bench_die("usage: bench_bcolz [-e EXT] [-m MKBCOLZ] [-t TMPDIR] [-n ROWS] [-k]");
    }
  }
  if (n < 100) bench_die("-n: at least 100 rows");
  snprintf(bz, sizeof bz, "%s/bench_bcolz.%ld.bcolz", tmp, (long)getpid());
  snprintf(dbpath, sizeof dbpath, "%s/bench_bcolz.%ld.db", tmp, (long)getpid());
  snprintf(conv, sizeof conv, "%s/bench_bcolz.%ld.b2nd.d", tmp, (long)getpid());
  snprintf(nrows_s, sizeof nrows_s, "%lld", n);
  t0 = bench_now_ms();
  spawn(mk, "--bench", bz, nrows_s);
  printf("ctable of %lld rows written by c-blosc 1.x in %.0f ms\n", n, bench_now_ms() - t0);

  if (sqlite3_open(dbpath, &db) != SQLITE_OK) bench_die("cannot open %s", dbpath);
  sqlite3_enable_load_extension(db, 1);
  if (sqlite3_load_extension(db, ext, NULL, NULL) != SQLITE_OK) bench_die("cannot load %s", ext);
  snprintf(sql, sizeof sql, "CREATE VIRTUAL TABLE temp.bz USING caterva('%s')", bz);
  bench_exec(db, sql);
  bench_exec(db, "CREATE TABLE plain(id INTEGER PRIMARY KEY, price REAL, qty INTEGER, flag INTEGER)");
  t0 = bench_now_ms();
  bench_exec(db, "BEGIN; INSERT INTO plain SELECT id, price, qty, flag FROM bz; COMMIT");
  load_ms = bench_now_ms() - t0;
  printf("plain table loaded from it (INSERT ... SELECT, one transaction) in %.0f ms\n\n", load_ms);
  {
    /* total blocks: a full scan of every column from a fresh counter */
    long long b0 = int_of(db, "SELECT caterva_blocks_read()");
    (void)run(db, "SELECT sum(length(id)), sum(length(price)), sum(qty), sum(flag) FROM bz");
    total_blocks = int_of(db, "SELECT caterva_blocks_read()") - b0;
  }
  printf("| query                      |       rows | bcolz ms |   rows/s  |  plain ms |   rows/s  | ratio |   blocks | result |\n");
  printf("|----------------------------|-----------:|---------:|----------:|----------:|----------:|------:|---------:|--------|\n");
  ok &= row(db, "full scan, 3 columns", "SELECT sum(price), sum(qty), sum(flag) FROM bz",
            "SELECT sum(price), sum(qty), sum(flag) FROM plain", n);
  ok &= row(db, "full scan, count(*)", "SELECT count(*) FROM bz", "SELECT count(*) FROM plain", n);
  lo = n / 2;
  hi = lo + n / 100;
  snprintf(sql, sizeof sql, "SELECT sum(price), sum(qty), sum(flag) FROM bz WHERE rowid >= %lld "
           "AND rowid < %lld", lo, hi);
  {
    char psql[512];
    snprintf(psql, sizeof psql, "SELECT sum(price), sum(qty), sum(flag) FROM plain WHERE "
             "id >= %lld AND id < %lld", lo, hi);
    ok &= row(db, "1 % row range, 3 columns", sql, psql, hi - lo);
  }
  bench_exec(db, "CREATE TEMP TABLE k(r INTEGER PRIMARY KEY)");
  snprintf(sql, sizeof sql, "WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s "
           "WHERE i < 1000) INSERT OR IGNORE INTO k SELECT abs(random()) %% %lld FROM s", n);
  bench_exec(db, sql);
  bench_exec(db, "ANALYZE temp");
  ok &= row(db, "1000 lookups (join)",
            "SELECT sum(bz.price), sum(bz.qty) FROM k JOIN bz ON bz.rowid = k.r",
            "SELECT sum(plain.price), sum(plain.qty) FROM k JOIN plain ON plain.id = k.r",
            int_of(db, "SELECT count(*) FROM k"));
  printf("\nblocks in the ctable (all columns): %lld\n", total_blocks);
  t0 = bench_now_ms();
  snprintf(sql, sizeof sql, "SELECT caterva_import('%s', '%s')", bz, conv);
  bench_exec(db, sql);
  conv_ms = bench_now_ms() - t0;
  /* the converted directory opens as one table: the same queries on it */
  snprintf(sql, sizeof sql, "CREATE VIRTUAL TABLE temp.cv USING caterva('%s')", conv);
  bench_exec(db, sql);
  printf("\nthe converted directory as one table (caterva('%s'); d0 = the row number), the "
         "same queries (the 'bcolz' columns are the converted table's):\n\n", "<dir>");
  printf("| query                      |       rows |  conv. ms |   rows/s  |  plain ms |   rows/s  | ratio |   blocks | result |\n");
  printf("|----------------------------|-----------:|---------:|----------:|----------:|----------:|------:|---------:|--------|\n");
  ok &= row(db, "converted: full scan", "SELECT sum(price), sum(qty), sum(flag) FROM cv",
            "SELECT sum(price), sum(qty), sum(flag) FROM plain", n);
  {   /* a table of its own: cv's block cache holds what its scan read */
    char psql[512];
    snprintf(sql, sizeof sql, "CREATE VIRTUAL TABLE temp.cv2 USING caterva('%s')", conv);
    bench_exec(db, sql);
    snprintf(sql, sizeof sql, "SELECT sum(price), sum(qty), sum(flag) FROM cv2 WHERE d0 >= %lld "
             "AND d0 < %lld", lo, hi);
    snprintf(psql, sizeof psql, "SELECT sum(price), sum(qty), sum(flag) FROM plain WHERE "
             "id >= %lld AND id < %lld", lo, hi);
    ok &= row(db, "converted: 1 % row range", sql, psql, hi - lo);
  }
  sqlite3_close(db);
  printf("caterva_import of the ctable (zstd 5 + shuffle, chunks of chunklen rows): %.0f ms\n\n",
         conv_ms);
  printf("| storage                                   |     bytes | bytes/row |\n");
  printf("|-------------------------------------------|----------:|----------:|\n");
  printf("| bcolz directory (lz4 5 + shuffle)         | %9lld | %9.2f |\n", du(bz), du(bz) / (double)n);
  printf("| plain SQLite table (database file)        | %9lld | %9.2f |\n", du(dbpath),
         du(dbpath) / (double)n);
  printf("| converted Blosc2 arrays (zstd 5 + shuffle)| %9lld | %9.2f |\n", du(conv),
         du(conv) / (double)n);
  printf("| raw values (8 + 8 + 4 + 1 bytes per row)  | %9lld | %9.2f |\n", 21 * n, 21.0);
  if (!keep) {
    rm_rf(bz);
    rm_rf(conv);
    unlink(dbpath);
  }
  if (!ok) bench_die("results differ");
  return 0;
}

/*
 * bench_write.c -- writing through the caterva virtual table against a plain SQLite table.
 *
 *   bench_write [-e EXT] [-t DIR] [-n NTIME] [-r RUNS] [-c COMMITS] [-K COMMITS] [-i ROUNDS]
 *               [-T ROUNDS] [-g N] [-G N] [-D PCT] [-L CODEC] [-U CODEC] [-k] [-l] [-C] [-S]
 *
 *   -e  the built extension (default: ../../.libs/caterva.so from this program, tests/bench/)
 *   -t  scratch directory (default $TMPDIR, else /tmp); a directory bench_write.XXXXXX is made
 *       in it and removed at the end
 *   -n  extent of the first dimension (default 365: the demo's 365 x 180 x 360; at least 60)
 *   -r  runs of each UPDATE (default 5; the median is reported)
 *   -c  commits timed in each commit measurement (default 21; the median is reported)
 *   -K  commits of one whole chunk timed in section 3 (default 5)
 *   -i  rounds of the interleaved one-cell commits of section 3 (default 101)
 *   -T  rounds of the transposed load, caterva and bench_sink in turn, and of the cube's loads
 *       (default 3; the medians are compared)
 *   -g  new chunks of the fill growths of section 6 (default 1000000)
 *   -G  new chunks of the sparse growth with a value fill (default 100000: a million files
 *       take minutes to create and to remove on ext4; the floor is measured with as many)
 *   -D  max_dead= of the tables whose commits section 3 times, and of -U's (default: the
 *       extension's, 1)
 *   -k  keep the scratch files
 *   -l  the load only (section 1 and the sizes; for profiling)
 *   -C  the commits only (section 3, after loading t and p untimed)
 *   -S  the cube only (sections 5a and 5)
 *   -L  the cube's transposed load with CODEC (zstd or lz4) only, -T times (for profiling)
 *   -U  the cube's slab UPDATE with CODEC (zstd or lz4) only, -r times (for profiling)
 *
 * All figures come from this run on this machine:
 *
 *   1. Load. The same rows, generated in C order by a counting virtual table (bench_grid,
 *      like generate_series but yielding the three coordinates), with a value computed in
 *      SQL from the coordinates, go by one `INSERT INTO ... SELECT` into
 *        (a) a caterva table created here: float32, shape NTIME x 180 x 360, chunks 30x90x90,
 *            blocks 10x15x30, zstd clevel 5 + shuffle (the demo array's layout), and
 *        (b) CREATE TABLE p(time INTEGER, lat INTEGER, lon INTEGER, value REAL,
 *                           PRIMARY KEY(time, lat, lon)) WITHOUT ROWID
 *            in a database file with SQLite's defaults (rollback journal, its default
 *            synchronous, its default page cache).
 *      Where a caterva row's time goes, by difference of rows loaded the same way: the source
 *      alone (the SELECT folded into sum(), without and with the value expression), an
 *      INSERT into bench_sink (a virtual table whose xUpdate reads its arguments and keeps
 *      nothing: SQLite's own cost of writing to a virtual table, the floor the caterva load is
 *      compared with; the same rows are also loaded in a transposed order, time fastest, into
 *      caterva and bench_sink in turn, -T rounds each, and into the plain table once), a
 *      caterva table with clevel=0 (the extension
 *      without compression), and a caterva table loaded with noisy values (compression of data with
 *      the entropy of measurements). Wall time and the process's CPU time are both printed:
 *      on a busy machine the wall time is inflated and only CPU time is comparable.
 *   2. UPDATE t SET value = value + 1 WHERE time = 100 (a time step), and WHERE lat = 90
 *      (a latitude circle), each run in its own autocommit transaction, beside the same
 *      UPDATE of bench_usink (SQLite's own UPDATE of a virtual table: the floor; section 5
 *      times it for the slab too). The virtual tables are in bench_write_vtabs.c.
 *   3. Commits: BEGIN; COMMIT with nothing written; BEGIN; an UPDATE that changes no cell;
 *      COMMIT; BEGIN; one cell updated; COMMIT; BEGIN; one whole chunk (30x90x90) updated;
 *      COMMIT -- for the caterva table t (contiguous) and a sparse copy of it with
 *      synchronous=full, normal and off, and for the plain table with PRAGMA synchronous
 *      FULL, NORMAL and OFF in journal_mode DELETE (rollback journal) and WAL: median, mean,
 *      min, max, and the write-class system calls and syncs per transaction, counted inside
 *      this process (see syscw_now and the fsync wrappers in bench_write_commit.c). Then the one-cell
 *      comparison: one-cell commits of the contiguous, the sparse and the plain table taken
 *      in turn, ROUNDS times, with the plain table in DELETE and then in WAL mode, at each
 *      synchronous level (the disk's sync latency drifts by 2x over minutes: blocks of
 *      commits timed one after another are not comparable, commits taken in turn are).
 *   4. File sizes.
 *   5a. The loads of a 200x200x200 float64 array with the automatic partition (52x100x100,
 *      13x25x25), zstd (the default) and lz4, rows in C order and transposed (a fastest),
 *      against bench_sink's load of the same rows in the same order: -T rounds, the three
 *      loads of each order in turn; medians compared (goal >= 0.8x).
 *   5. UPDATE s SET value = -1 WHERE a = K (K = 17, 18, ...) on a 200x200x200 float64 array
 *      (chunks 52x100x100, blocks 13x25x25) against the same UPDATE of a plain WITHOUT ROWID
 *      table holding the same cells: one slab of 40,000 cells, a quarter of the blocks of
 *      the four chunks it crosses; the array with zstd 5 (the default) and with lz4.
 *   6. Growth with a fill value: one INSERT a million chunks (-g) past the end of a float64
 *      array of 1-item chunks, contiguous and sparse, fill NaN (special index entries) and
 *      fill 3 (a stored repeated-value chunk per new position); time, bytes and files; and
 *      the file system's floor for the sparse case (creating as many 40-byte files).
 *
 * The values are integers times a power of two (VALUE_EXPR, NOISY_EXPR below): exactly
 * representable in float32, so the float32 array and the REAL column hold the same numbers
 * and every sum below is exact.
 * Checks (exit status 1 when one fails): after the load, count(*) and sum(value) of both
 * tables equal the source's; after the UPDATEs and after the commits, the sums of both
 * tables equal the expected ones and a few cells agree.
 *
 * The caterva table lives in a connection of its own (an in-memory main database, so that
 * its transactions write nothing but the array), the plain table in another.
 */
#include "bench_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#ifdef __linux__
#include <sys/vfs.h>
#endif


/* The value of cell (time, lat, lon): smooth (a parabola in latitude, ramps in time and
 * longitude), an integer below 2^14 times 1/128, so exact in float32: the float32 array and
 * the REAL column hold the same numbers and all sums below are exact. */
static const char *const VALUE_EXPR = "(lat*(179 - lat) + time*4 + lon) * 0.0078125";

/* A coarser smooth field (below 2^8) with 16 low bits of noise: a hash of the C-order index
 * (bench_grid's rowid), times 2^-16. Exact in float32 and in sums like the above, but with
 * most of the mantissa random, as in measured data (the demo array, mkdemo's field,
 * compresses to ~70% of the raw bytes): the cost of compressing such data. */
static const char *const NOISY_EXPR =
    "((lat*(179 - lat)/80 + time/4 + lon/8)*65536"
    " + ((rowid % 65521)*(rowid % 65519)*40503/256) % 65536) * 0.0000152587890625";

static int failures = 0;

/* A failed check: reported, and the exit status becomes 1. */
void bw_check(int ok, const char *fmt, ...) {
  va_list ap;
  if (ok) return;
  failures++;
  va_start(ap, fmt);
  fprintf(stderr, "bench_write: CHECK FAILED: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

/* The first two columns of the first row of sql, as doubles (count(*) and sums of values
 * on a 1/128 grid are exact in a double). */
void bw_query2(sqlite3 *db, const char *sql, double *a, double *b) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    bench_die("%s: %s", sql, sqlite3_errmsg(db));
  if (sqlite3_step(st) != SQLITE_ROW) bench_die("%s: %s", sql, sqlite3_errmsg(db));
  *a = sqlite3_column_double(st, 0);
  *b = sqlite3_column_count(st) > 1 ? sqlite3_column_double(st, 1) : 0.0;
  sqlite3_finalize(st);
}

static long long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

static const char *fs_name(const char *dir) {
#ifdef __linux__
  struct statfs s;
  if (statfs(dir, &s) != 0) return "unknown";
  switch ((unsigned long)s.f_type) {
    case 0xEF53UL: return "ext2/3/4";
    case 0x58465342UL: return "xfs";
    case 0x9123683EUL: return "btrfs";
    case 0x01021994UL: return "tmpfs (fsync costs nothing)";
    case 0x794C7630UL: return "overlayfs";
    default: return "other";
  }
#else
  (void)dir;
  return "unknown";
#endif
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}


double bw_median(double *t, int n) {
  qsort(t, (size_t)n, sizeof(double), cmp_double);
  return n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2.0;
}

/* Median, min and max of n wall times, median of the n CPU times (both arrays sorted). */
Stat bw_stat_of(double *wall, double *cpu, int n) {
  Stat s;
  s.med = bw_median(wall, n);
  s.min = wall[0];
  s.max = wall[n - 1];
  s.cpu = bw_median(cpu, n);
  return s;
}

/* ---- the benchmark ------------------------------------------------------------------------ */


static void check_sums(Bench *b, const char *when) {
  double nc, sc, np, sp;
  bw_query2(b->dbc, "SELECT count(*), sum(value) FROM t", &nc, &sc);
  bw_query2(b->dbp, "SELECT count(*), sum(value) FROM p", &np, &sp);
  bw_check(nc == (double)b->ncells, "%s: caterva count(*) = %.0f, expected %lld", when, nc,
        b->ncells);
  bw_check(np == (double)b->ncells, "%s: plain count(*) = %.0f, expected %lld", when, np,
        b->ncells);
  bw_check(sc == b->sum_c, "%s: caterva sum(value) = %.17g, expected %.17g", when, sc, b->sum_c);
  bw_check(sp == b->sum_p, "%s: plain sum(value) = %.17g, expected %.17g", when, sp, b->sum_p);
  bw_check(sc == sp, "%s: sums differ: caterva %.17g, plain %.17g", when, sc, sp);
}

/* A few cells, the same in both tables. */
static void check_cells(Bench *b, const char *when) {
  static const int cells[][3] = {{0, 0, 0}, {100, 90, 0}, {100, 17, 359}, {5, 90, 200},
                                 {364, 179, 359}, {200, 45, 123}};
  size_t i;
  for (i = 0; i < sizeof(cells) / sizeof(cells[0]); i++) {
    char sql[256];
    double vc, vp, dummy;
    if (cells[i][0] >= b->ntime) continue;
    snprintf(sql, sizeof(sql), "SELECT value FROM t WHERE time = %d AND lat = %d AND lon = %d",
             cells[i][0], cells[i][1], cells[i][2]);
    bw_query2(b->dbc, sql, &vc, &dummy);
    snprintf(sql, sizeof(sql), "SELECT value FROM p WHERE time = %d AND lat = %d AND lon = %d",
             cells[i][0], cells[i][1], cells[i][2]);
    bw_query2(b->dbp, sql, &vp, &dummy);
    bw_check(vc == vp, "%s: cell (%d, %d, %d): caterva %.9g, plain %.9g", when, cells[i][0],
          cells[i][1], cells[i][2], vc, vp);
  }
}

const char *bw_max_dead_opt(const Bench *b, char *buf, size_t cap) {
  if (b->max_dead < 0) buf[0] = '\0';
  else snprintf(buf, cap, ", max_dead=%d", b->max_dead);
  return buf;
}

void bw_open_caterva(Bench *b, const char *sync) {
  char sql[2600], md[32];
  snprintf(sql, sizeof(sql),
           "CREATE VIRTUAL TABLE t USING caterva('%s', dims='time,lat,lon', synchronous=%s%s)",
           b->arr, sync, bw_max_dead_opt(b, md, sizeof(md)));
  bench_exec(b->dbc, "DROP TABLE IF EXISTS t");
  bench_exec(b->dbc, sql);
}


Timing bw_timed_sql(sqlite3 *db, const char *sql) {
  Timing t;
  double c0 = bench_cpu_ms(), w0 = bench_now_ms();
  bench_exec(db, sql);
  t.wall = bench_now_ms() - w0;
  t.cpu = bench_cpu_ms() - c0;
  return t;
}

/* Timed SELECT count(*), sum(...): the two results in *n, *s. */
static Timing timed_query(sqlite3 *db, const char *sql, double *n, double *s) {
  Timing t;
  double c0 = bench_cpu_ms(), w0 = bench_now_ms();
  bw_query2(db, sql, n, s);
  t.wall = bench_now_ms() - w0;
  t.cpu = bench_cpu_ms() - c0;
  return t;
}

static void load_row(const Bench *b, const char *label, Timing t) {
  printf("| %s | %.2f | %.2f | %.2f | %.0f |\n", label, t.wall / 1e3, t.cpu / 1e3,
         b->ncells / t.wall / 1e3, t.wall * 1e6 / b->ncells);
}

/* CREATE VIRTUAL TABLE name USING caterva(path, the demo's layout, clevel); then the load
 * from the source with value expression expr, timed; checked against the source's count and
 * sum (n, s). */
static Timing load_caterva(Bench *b, const char *name, const char *path, int clevel,
                           const char *expr, int ord, double n, double s, double *create_ms) {
  char sql[3000], what[64];
  double nc, sc;
  Timing t;
  snprintf(sql, sizeof(sql),
           "CREATE VIRTUAL TABLE %s USING caterva('%s', shape='%d,%d,%d', dtype='float32', "
           "chunks='30,90,90', blocks='10,15,30', codec='zstd', clevel=%d, filters='shuffle', "
           "dims='time,lat,lon')",
           name, path, b->ntime, NLAT, NLON, clevel);
  t = bw_timed_sql(b->dbc, sql);
  if (create_ms) *create_ms = t.wall;
  snprintf(sql, sizeof(sql),
           "INSERT INTO %s(time, lat, lon, value) SELECT time, lat, lon, %s "
           "FROM bench_grid(%d, %d, %d, %d)",
           name, expr, b->ntime, NLAT, NLON, ord);
  t = bw_timed_sql(b->dbc, sql);
  snprintf(sql, sizeof(sql), "SELECT count(*), sum(value) FROM %s", name);
  bw_query2(b->dbc, sql, &nc, &sc);
  snprintf(what, sizeof(what), "caterva table %s", name);
  bw_check(nc == n && sc == s, "%s after the load: count %.0f, sum %.17g; the source: %.0f, %.17g",
        what, nc, sc, n, s);
  return t;
}

/* bench_sink's load of the rows, in C order (ord 0) or time fastest (ord 1), timed. */
static Timing sink_load(Bench *b, int ord) {
  char sql[2600];
  Timing t;
  bench_exec(b->dbc, "CREATE VIRTUAL TABLE temp.sink USING bench_sink");
  snprintf(sql, sizeof(sql),
           "INSERT INTO sink(time, lat, lon, value) SELECT time, lat, lon, %s "
           "FROM bench_grid(%d, %d, %d, %d)", VALUE_EXPR, b->ntime, NLAT, NLON, ord);
  t = bw_timed_sql(b->dbc, sql);
  bw_check(sqlite3_changes(b->dbc) == b->ncells, "bench_sink took %d rows (order %d)",
           sqlite3_changes(b->dbc), ord);
  bench_exec(b->dbc, "DROP TABLE temp.sink");
  return t;
}

/* Median wall and CPU time of n timings (t is left in its order). */
static Timing timing_median(const Timing *t, int n) {
  double w[MAXRUNS], c[MAXRUNS];
  Timing m;
  for (int i = 0; i < n; i++) {
    w[i] = t[i].wall;
    c[i] = t[i].cpu;
  }
  m.wall = bw_median(w, n);
  m.cpu = bw_median(c, n);
  return m;
}

/* 1b. The same load with the rows in a transposed order: time fastest, then lat, then lon
 * (every row lands in another block; the chunks complete only when lon leaves them). The
 * caterva load and bench_sink's are taken in turn, b->trounds times each (either load's time
 * varies by some 5% from run to run on this machine, as much as the ratio's margin to its
 * goal): their medians are compared, every round printed. */
static void bench_load_transposed(Bench *b, double n, double s) {
  char sql[2600];
  Timing sink, cat, plain, sinks[MAXRUNS], cats[MAXRUNS];
  sqlite3 *dbt = NULL;
  char tpath[2300];
  long long tsize = -1;
  for (int r = 0; r < b->trounds; r++) {
    sinks[r] = sink_load(b, 1);
    unlink(b->arrt); /* the file of the round before */
    cats[r] = load_caterva(b, "tt", b->arrt, 5, VALUE_EXPR, 1, n, s, NULL);
    bench_exec(b->dbc, "DROP TABLE tt");
    bw_check(tsize < 0 || file_size(b->arrt) == tsize, "transposed load, round %d: %lld bytes, "
          "round 1: %lld", r + 1, file_size(b->arrt), tsize);
    tsize = file_size(b->arrt);
  }
  sink = timing_median(sinks, b->trounds);
  cat = timing_median(cats, b->trounds);
  /* the plain table in a database of its own (the sizes of section 4 are the C-order one's) */
  snprintf(tpath, sizeof(tpath), "%s/plain_t.db", b->dir);
  if (sqlite3_open(tpath, &dbt) != SQLITE_OK) bench_die("%s: %s", tpath, sqlite3_errmsg(dbt));
  if (sqlite3_create_module(dbt, "bench_grid", &bench_grid_module, NULL) != SQLITE_OK)
    bench_die("bench_grid: %s", sqlite3_errmsg(dbt));
  bench_exec(dbt, "CREATE TABLE pt(time INTEGER, lat INTEGER, lon INTEGER, value REAL, "
                  "PRIMARY KEY(time, lat, lon)) WITHOUT ROWID");
  snprintf(sql, sizeof(sql),
           "INSERT INTO pt(time, lat, lon, value) SELECT time, lat, lon, %s "
           "FROM bench_grid(%d, %d, %d, 1)", VALUE_EXPR, b->ntime, NLAT, NLON);
  plain = bw_timed_sql(dbt, sql);
  sqlite3_close(dbt);
  unlink(tpath);
  printf("\n#### Rows in a transposed order: time fastest, then lat, then lon\n\n");
  printf("| target | s | CPU s | M rows/s | ns/row |\n");
  printf("|---|---:|---:|---:|---:|\n");
  load_row(b, "**caterva table** (the same layout and values; the same chunks in another order; "
              "median of the rounds)", cat);
  load_row(b, "**plain table** (the same table)", plain);
  load_row(b, "`INSERT INTO` bench_sink (median of the rounds)", sink);
  printf("\n%d rounds, bench_sink then caterva in each: caterva s", b->trounds);
  for (int r = 0; r < b->trounds; r++) printf(" %.2f", cats[r].wall / 1e3);
  printf("; bench_sink s");
  for (int r = 0; r < b->trounds; r++) printf(" %.2f", sinks[r].wall / 1e3);
  printf("; caterva / bench_sink in each round");
  for (int r = 0; r < b->trounds; r++) printf(" %.3f", sinks[r].wall / cats[r].wall);
  printf(".\n");
  printf("\ncaterva / bench_sink, transposed order (medians): %.3fx the rows/s (goal >= 0.8x: %s); "
         "caterva / plain: %.2fx. File: %lld bytes (C order: %lld).\n", sink.wall / cat.wall,
         sink.wall / cat.wall >= 0.8 ? "met" : "NOT met", plain.wall / cat.wall, tsize,
         file_size(b->arr));
  fflush(stdout);
}

/* CREATE TABLE p (WITHOUT ROWID) and the rows of section 1 in C order into it, timed. */
static Timing load_plain(Bench *b) {
  char sql[512];
  bench_exec(b->dbp, "CREATE TABLE p(time INTEGER, lat INTEGER, lon INTEGER, value REAL, "
                   "PRIMARY KEY(time, lat, lon)) WITHOUT ROWID");
  snprintf(sql, sizeof(sql),
           "INSERT INTO p(time, lat, lon, value) SELECT time, lat, lon, %s "
           "FROM bench_grid(%d, %d, %d)",
           VALUE_EXPR, b->ntime, NLAT, NLON);
  return bw_timed_sql(b->dbp, sql);
}

/* 1. The load, and where its time goes. */
static void bench_load(Bench *b) {
  char sql[2600];
  Timing floor0, floor1, floor2, sink, cat, cat0, noisy, plain;
  double n, s, n2, s2, dummy, t_create, per[5], cpu[5];
  double rate_c, rate_p;
  int k;
  static const char *const part[5] = {
      "bench_grid's rows (xColumn, xNext) and the VM loop",
      "the value expression",
      "SQLite handing the rows to a virtual table (OP_VUpdate: copies, xUpdate call)",
      "the extension without compression (clevel=0): xUpdate, set_item, storing chunks",
      "compression, zstd 5 + shuffle (part of it in the codec's worker thread)",
  };

  /* The source alone: the rows, then the rows with the value expression. */
  snprintf(sql, sizeof(sql), "SELECT count(*), sum(lon) FROM bench_grid(%d, %d, %d)", b->ntime,
           NLAT, NLON);
  floor0 = timed_query(b->dbc, sql, &n, &dummy);
  snprintf(sql, sizeof(sql), "SELECT count(*), sum(%s) FROM bench_grid(%d, %d, %d)",
           VALUE_EXPR, b->ntime, NLAT, NLON);
  floor1 = timed_query(b->dbc, sql, &n, &s);
  bw_check(n == (double)b->ncells, "source: %.0f rows, expected %lld", n, b->ncells);
  b->sum_c = b->sum_p = s;
  snprintf(sql, sizeof(sql), "SELECT count(*), sum(%s) FROM bench_grid(%d, %d, %d)",
           NOISY_EXPR, b->ntime, NLAT, NLON);
  floor2 = timed_query(b->dbc, sql, &n2, &s2);

  /* The same rows into a virtual table that does nothing with them. */
  sink = sink_load(b, 0);

  /* (a) the caterva table; then the same without compression, and noisy values. */
  cat = load_caterva(b, "t", b->arr, 5, VALUE_EXPR, 0, n, s, &t_create);
  cat0 = load_caterva(b, "t0", b->arr0, 0, VALUE_EXPR, 0, n, s, NULL);
  b->size_c0 = file_size(b->arr0);
  bench_exec(b->dbc, "DROP TABLE t0");
  noisy = load_caterva(b, "tn", b->arrn, 5, NOISY_EXPR, 0, n2, s2, NULL);
  b->size_cn = file_size(b->arrn);
  bench_exec(b->dbc, "DROP TABLE tn");

  /* (b) the plain table */
  plain = load_plain(b);

  check_sums(b, "after the load");
  check_cells(b, "after the load");

  rate_c = b->ncells / cat.wall / 1e3;
  rate_p = b->ncells / plain.wall / 1e3;
  printf("\n### 1. Load: %lld cells (%d x %d x %d), one INSERT INTO ... SELECT, rows in C "
         "order\n\n", b->ncells, b->ntime, NLAT, NLON);
  printf("Source: `SELECT time, lat, lon, %s FROM bench_grid(%d, %d, %d)`.\n\n", VALUE_EXPR,
         b->ntime, NLAT, NLON);
  printf("| target | s | CPU s | M rows/s | ns/row |\n");
  printf("|---|---:|---:|---:|---:|\n");
  load_row(b, "**caterva table** (float32, chunks 30x90x90, blocks 10x15x30, zstd 5 + shuffle)",
           cat);
  load_row(b, "**plain table** (WITHOUT ROWID, file database, SQLite's defaults)", plain);
  load_row(b, "source only: `SELECT count(*), sum(lon) FROM bench_grid(...)`", floor0);
  load_row(b, "source with the value expression: `SELECT count(*), sum(<value>) ...`", floor1);
  load_row(b, "`INSERT INTO` bench_sink (a virtual table whose xUpdate reads its arguments and "
              "keeps nothing)", sink);
  load_row(b, "caterva table, clevel=0 (no compression; the shuffle kept)", cat0);
  load_row(b, "source with the noisy value expression (below)", floor2);
  load_row(b, "caterva table, noisy values (zstd 5 + shuffle)", noisy);
  printf("\nCPU s: the process's CPU time (all threads) during the statement; rows/s and ns/row "
         "are from the wall time (s). CREATE VIRTUAL TABLE of the empty array: %.1f ms, not "
         "included. Noisy values: `%s` (the low 16 of 24 mantissa bits hashed; the file "
         "compresses to %.0f%% of the raw bytes, the smooth one to %.1f%%).\n",
         t_create, NOISY_EXPR, 100.0 * b->size_cn / (b->ncells * 4.0),
         100.0 * file_size(b->arr) / (b->ncells * 4.0));

  per[0] = floor0.wall, cpu[0] = floor0.cpu;
  per[1] = floor1.wall - floor0.wall, cpu[1] = floor1.cpu - floor0.cpu;
  per[2] = sink.wall - floor1.wall, cpu[2] = sink.cpu - floor1.cpu;
  per[3] = cat0.wall - sink.wall, cpu[3] = cat0.cpu - sink.cpu;
  per[4] = cat.wall - cat0.wall, cpu[4] = cat.cpu - cat0.cpu;
  printf("\nWhere a caterva row's time goes: differences of the rows above, in ns per row, of "
         "the wall time and of the CPU time (which other processes do not inflate; it counts "
         "the codec's worker thread too):\n\n");
  printf("| part | wall ns/row | share | CPU ns/row | share |\n");
  printf("|---|---:|---:|---:|---:|\n");
  for (k = 0; k < 5; k++)
    printf("| %s | %.0f | %.0f%% | %.0f | %.0f%% |\n", part[k], per[k] * 1e6 / b->ncells,
           100.0 * per[k] / cat.wall, cpu[k] * 1e6 / b->ncells, 100.0 * cpu[k] / cat.cpu);
  printf("| total | %.0f | | %.0f | |\n", cat.wall * 1e6 / b->ncells, cat.cpu * 1e6 / b->ncells);
  printf("| with noisy values instead: compression | %.0f | | %.0f | |\n",
         (noisy.wall - floor2.wall - (cat0.wall - floor1.wall)) * 1e6 / b->ncells,
         (noisy.cpu - floor2.cpu - (cat0.cpu - floor1.cpu)) * 1e6 / b->ncells);

  printf("\ncaterva / plain: %.2fx the rows/s. Goals: caterva >= 5x the plain table's rows/s: "
         "%s (%.2fx); caterva >= 3 M rows/s: %s (%.2f M rows/s).\n",
         rate_c / rate_p, rate_c >= 5.0 * rate_p ? "met" : "NOT met", rate_c / rate_p,
         rate_c >= 3.0 ? "met" : "NOT met", rate_c);
  printf("Ceiling for this source: bench_sink, which stores nothing, reaches %.2fx the plain "
         "table's rows/s (wall; %.2fx in CPU time); caterva reaches %.2fx in CPU time.\n",
         plain.wall / sink.wall, plain.cpu / sink.cpu, plain.cpu / cat.cpu);
  printf("caterva / bench_sink (the virtual-table floor), C order: %.2fx the rows/s (goal >= "
         "0.8x: %s).\n", sink.wall / cat.wall, sink.wall / cat.wall >= 0.8 ? "met" : "NOT met");
  fflush(stdout);
  bench_load_transposed(b, n, s);
}

/* The median time of runs of sql (a format taking the run number) on a fresh bench_usink. */
Stat bw_usink_runs(sqlite3 *db, const char *create, const char *sql_fmt, int first, int runs,
                       long long cells) {
  double w[MAXRUNS], c[MAXRUNS];
  char sql[512];
  int r;
  bench_exec(db, create);
  for (r = 0; r < runs; r++) {
    Timing t;
    snprintf(sql, sizeof(sql), sql_fmt, first + r);
    t = bw_timed_sql(db, sql);
    w[r] = t.wall, c[r] = t.cpu;
    bw_check(sqlite3_changes(db) == cells, "bench_usink: %s changed %d rows, expected %lld", sql,
          sqlite3_changes(db), cells);
  }
  bench_exec(db, "DROP TABLE temp.us");
  return bw_stat_of(w, c, runs);
}

/* The caterva table t and the plain table p loaded as in section 1, untimed (-C). */
static void load_minimal(Bench *b) {
  char sql[2600];
  double n, s;
  snprintf(sql, sizeof(sql), "SELECT count(*), sum(%s) FROM bench_grid(%d, %d, %d)",
           VALUE_EXPR, b->ntime, NLAT, NLON);
  bw_query2(b->dbc, sql, &n, &s);
  b->sum_c = b->sum_p = s;
  (void)load_caterva(b, "t", b->arr, 5, VALUE_EXPR, 0, n, s, NULL);
  (void)load_plain(b);
  check_sums(b, "after the load");
}

/* Write back what earlier steps left dirty (the loads: hundreds of MB), so that a commit's
 * syncs wait for its own writes only. Not counted: the counters are read around each run. */
void bw_flush_dirty(const Bench *b) {
  int fd = open(b->dir, O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    (void)syscall(SYS_syncfs, fd);
    close(fd);
  }
  /* the disk goes on writing what syncfs handed it: for some 60 ms after it, every fdatasync
   * took 0.9-1.4 ms here instead of 0.2-0.5 (strace), which the first block of commits
   * timed after a flush paid alone */
  usleep(500 * 1000);
}

/* 2. UPDATEs of a time step and of a latitude circle, each run its own transaction. */
static void bench_update(Bench *b) {
  static const struct {
    const char *label, *where;
    long long cells_per_time;  /* cells changed, times ntime when per_time */
    int per_time;
  } u[] = {
      {"time step: WHERE time = 100", "time = 100", (long long)NLAT * NLON, 0},
      {"latitude circle: WHERE lat = 90", "lat = 90", NLON, 1},
  };
  size_t i;
  int r;
  bw_flush_dirty(b); /* the loads' hundreds of MB, not written back during the timed commits */
  printf("\n### 2. UPDATE t SET value = value + 1 WHERE ... (%d runs each, own autocommit "
         "transaction; ms)\n\n", b->runs);
  printf("| update | table | cells | median | min | max | CPU median | plain / caterva |\n");
  printf("|---|---|---:|---:|---:|---:|---:|---:|\n");
  for (i = 0; i < sizeof(u) / sizeof(u[0]); i++) {
    double wc[MAXRUNS], cc[MAXRUNS], wp[MAXRUNS], cp[MAXRUNS];
    char sc[256], sp[256];
    long long cells = u[i].cells_per_time * (u[i].per_time ? b->ntime : 1);
    Stat c, p;
    Timing t;
    if (!u[i].per_time && b->ntime <= 100) continue;
    snprintf(sc, sizeof(sc), "UPDATE t SET value = value + 1 WHERE %s", u[i].where);
    snprintf(sp, sizeof(sp), "UPDATE p SET value = value + 1 WHERE %s", u[i].where);
    for (r = 0; r < b->runs; r++) {
      t = bw_timed_sql(b->dbc, sc);
      wc[r] = t.wall, cc[r] = t.cpu;
      bw_check(sqlite3_changes(b->dbc) == cells, "%s: caterva changed %d cells, expected %lld",
            sc, sqlite3_changes(b->dbc), cells);
      t = bw_timed_sql(b->dbp, sp);
      wp[r] = t.wall, cp[r] = t.cpu;
      bw_check(sqlite3_changes(b->dbp) == cells, "%s: plain changed %d cells, expected %lld", sp,
            sqlite3_changes(b->dbp), cells);
    }
    b->sum_c += (double)cells * b->runs;
    b->sum_p += (double)cells * b->runs;
    c = bw_stat_of(wc, cc, b->runs);
    p = bw_stat_of(wp, cp, b->runs);
    printf("| %s | caterva | %lld | %.1f | %.1f | %.1f | %.1f | |\n", u[i].label, cells, c.med,
           c.min, c.max, c.cpu);
    printf("| | plain | %lld | %.1f | %.1f | %.1f | %.1f | %.2fx (CPU %.2fx) |\n", cells, p.med,
           p.min, p.max, p.cpu, p.med / c.med, p.cpu / c.cpu);
    snprintf(sc, sizeof(sc), "CREATE VIRTUAL TABLE temp.us USING bench_usink(time, lat, lon, %d, "
             "%d, %d)", b->ntime, NLAT, NLON);
    snprintf(sp, sizeof(sp), "UPDATE us SET value = value + 1 WHERE %s AND %%d", u[i].where);
    c = bw_usink_runs(b->dbc, sc, sp, 1, b->runs, cells);
    printf("| | bench_usink (SQLite's floor for a virtual table) | %lld | %.1f | %.1f | %.1f | "
           "%.1f | %.2fx |\n", cells, c.med, c.min, c.max, c.cpu, p.med / c.med);
    fflush(stdout);
  }
  check_sums(b, "after the updates");
  check_cells(b, "after the updates");
}

int main(int argc, char **argv) {
  bench_prog = "bench_write";
  char ext[4096], self[2048], tmpdir[1024];
  const char *env = getenv("TMPDIR");
  char *err = NULL, *slash;
  Bench b;
  int opt, keep = 0, load_only = 0, commits_only = 0, cube_only = 0;
  const char *profile_codec = NULL, *slab_codec = NULL;
  long long size_c_load, size_p_load;

  memset(&b, 0, sizeof(b));
  b.ntime = 365;
  b.runs = 5;
  b.commits = 21;
  b.chunk_commits = 5;
  b.cell_rounds = 101;
  b.trounds = 3;
  b.max_dead = -1;
  b.grow = 1000000;
  b.grow_sparse = 100000;
  snprintf(self, sizeof(self), "%s", argv[0]);
  slash = strrchr(self, '/');
  if (slash) *slash = 0;
  else snprintf(self, sizeof(self), ".");
  snprintf(ext, sizeof(ext), "%s/../../.libs/caterva.so", self);
  snprintf(tmpdir, sizeof(tmpdir), "%s", env && *env ? env : "/tmp");
  while ((opt = getopt(argc, argv, "e:t:n:r:c:K:i:T:g:G:D:L:U:klCS")) != -1) {
    switch (opt) {
      case 'e': snprintf(ext, sizeof(ext), "%s", optarg); break;
      case 't': snprintf(tmpdir, sizeof(tmpdir), "%s", optarg); break;
      case 'n': b.ntime = atoi(optarg); break;
      case 'r': b.runs = atoi(optarg); break;
      case 'c': b.commits = atoi(optarg); break;
      case 'K': b.chunk_commits = atoi(optarg); break;
      case 'i': b.cell_rounds = atoi(optarg); break;
      case 'T': b.trounds = atoi(optarg); break;
      case 'g': b.grow = atoll(optarg); break;
      case 'G': b.grow_sparse = atoll(optarg); break;
      case 'D': b.max_dead = atoi(optarg); break;
      case 'k': keep = 1; break;
      case 'l': load_only = 1; break;
      case 'C': commits_only = 1; break;
      case 'S': cube_only = 1; break;
      case 'L': profile_codec = optarg; break;
      case 'U': slab_codec = optarg; break;
      default:
        fprintf(stderr, "usage: bench_write [-e ext.so] [-t dir] [-n ntime] [-r runs] "
                        "[-c commits] [-K commits] [-i rounds] [-T rounds] [-g chunks] [-G chunks] [-D pct] [-L codec] [-U codec] [-k] [-l] "
                        "[-C] [-S]\n");
        return 2;
    }
  }
  if (b.ntime < 1 || b.ntime > 100000) bench_die("-n must be from 1 to 100000");
  if (b.runs < 1 || b.runs > MAXRUNS) bench_die("-r must be from 1 to %d", MAXRUNS);
  if (b.commits < 1 || b.commits > MAXRUNS) bench_die("-c must be from 1 to %d", MAXRUNS);
  if (b.chunk_commits < 1 || b.chunk_commits > MAXRUNS)
    bench_die("-K must be from 1 to %d", MAXRUNS);
  if (b.cell_rounds < 1 || b.cell_rounds > MAXRUNS) bench_die("-i must be from 1 to %d", MAXRUNS);
  if (b.trounds < 1 || b.trounds > MAXRUNS) bench_die("-T must be from 1 to %d", MAXRUNS);
  if (b.ntime < 60 && !load_only) bench_die("-n must be at least 60 (section 3 writes time 0-59)");
  if (b.grow < 1 || b.grow_sparse < 1) bench_die("-g and -G must be positive");
  b.ncells = (long long)b.ntime * NLAT * NLON;
  snprintf(b.dir, sizeof(b.dir), "%s/bench_write.XXXXXX", tmpdir);
  if (mkdtemp(b.dir) == NULL) bench_die("mkdtemp %s: %s", b.dir, strerror(errno));
  snprintf(b.arr, sizeof(b.arr), "%s/t.b2nd", b.dir);
  snprintf(b.arr0, sizeof(b.arr0), "%s/t0.b2nd", b.dir);
  snprintf(b.arrn, sizeof(b.arrn), "%s/tn.b2nd", b.dir);
  snprintf(b.arrt, sizeof(b.arrt), "%s/tt.b2nd", b.dir);
  snprintf(b.arrs, sizeof(b.arrs), "%s/ts.b2nd", b.dir);
  snprintf(b.plain, sizeof(b.plain), "%s/plain.db", b.dir);

  if (sqlite3_open(":memory:", &b.dbc) != SQLITE_OK) bench_die("sqlite3_open :memory:");
  sqlite3_enable_load_extension(b.dbc, 1);
  if (sqlite3_load_extension(b.dbc, ext, NULL, &err) != SQLITE_OK) bench_die("loading %s: %s", ext, err);
  if (sqlite3_open(b.plain, &b.dbp) != SQLITE_OK) bench_die("%s: %s", b.plain, sqlite3_errmsg(b.dbp));
  if (sqlite3_create_module(b.dbc, "bench_grid", &bench_grid_module, NULL) != SQLITE_OK ||
      sqlite3_create_module(b.dbp, "bench_grid", &bench_grid_module, NULL) != SQLITE_OK ||
      sqlite3_create_module(b.dbc, "bench_sink", &bench_sink_module, NULL) != SQLITE_OK ||
      sqlite3_create_module(b.dbc, "bench_usink", &bench_usink_module, NULL) != SQLITE_OK)
    bench_die("bench_grid: %s", sqlite3_errmsg(b.dbc));

  printf("SQLite %s, caterva extension %s\n", sqlite3_libversion(), ext);
  printf("Scratch directory %s (file system: %s)\n", b.dir, fs_name(b.dir));
  {
    double la[3];
    if (getloadavg(la, 3) == 3)
      printf("Load average at the start: %.2f %.2f %.2f (%ld CPUs online)\n", la[0], la[1],
             la[2], sysconf(_SC_NPROCESSORS_ONLN));
  }

  if (profile_codec != NULL) {
    bench_cube_profile(&b, profile_codec);
    goto done;
  }
  if (slab_codec != NULL) {
    bench_slab_profile(&b, slab_codec);
    goto done;
  }
  if (cube_only) {
    bench_cube_load(&b);
    bench_slab(&b);
    goto done;
  }
  if (commits_only) {
    load_minimal(&b);
    bench_commit(&b);
    goto done;
  }
  bench_load(&b);
  size_c_load = file_size(b.arr);
  size_p_load = file_size(b.plain);
  if (!load_only) {
    bench_update(&b);
    bench_commit(&b);
    bench_cube_load(&b);
    bench_slab(&b);
    bench_fill_growth(&b);
  }

  printf("\n### 4. File sizes\n\n");
  printf("| | after the load, MB | %% of raw | after the updates and commits, MB |\n");
  printf("|---|---:|---:|---:|\n");
  printf("| raw float32 values (%lld x 4 bytes) | %.1f | 100%% | |\n", b.ncells,
         b.ncells * 4 / 1e6);
  printf("| caterva file (zstd 5 + shuffle) | %.1f | %.1f%% | %.1f |\n", size_c_load / 1e6,
         100.0 * size_c_load / (b.ncells * 4.0), file_size(b.arr) / 1e6);
  printf("| caterva file, clevel=0 | %.1f | %.1f%% | |\n", b.size_c0 / 1e6,
         100.0 * b.size_c0 / (b.ncells * 4.0));
  printf("| caterva file, noisy values (zstd 5 + shuffle) | %.1f | %.1f%% | |\n",
         b.size_cn / 1e6, 100.0 * b.size_cn / (b.ncells * 4.0));
  printf("| plain table database | %.1f | %.1f%% | %.1f |\n", size_p_load / 1e6,
         100.0 * size_p_load / (b.ncells * 4.0), file_size(b.plain) / 1e6);
  printf("\nAfter the load the plain database is %.1fx the caterva file.\n",
         (double)size_p_load / (double)size_c_load);
done:
  {
    double la[3];
    if (getloadavg(la, 3) == 3) printf("\nLoad average at the end: %.2f %.2f %.2f.\n", la[0], la[1], la[2]);
  }

  bench_exec(b.dbc, "DROP TABLE IF EXISTS t");
  sqlite3_close(b.dbc);
  sqlite3_close(b.dbp);
  if (!keep) {
    char cmd[4200];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", b.dir);
    if (system(cmd) != 0) fprintf(stderr, "bench_write: could not remove %s\n", b.dir);
  } else {
    fprintf(stderr, "bench_write: kept %s\n", b.dir);
  }
  if (failures) {
    printf("\n%d CHECK(S) FAILED\n", failures);
    return 1;
  }
  printf("\nAll checks passed.\n");
  return 0;
}

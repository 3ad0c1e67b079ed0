/* bench_write_grow.c -- sections 5 and 6 of bench_write (described there): the slab UPDATE of
 * the 200^3 cube, and growth by an INSERT far past the end with a value fill. */
#include "bench_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* 5a. The cube's loads: one INSERT ... SELECT of the 200^3 float64 cells with the automatic
 * partition, in C order and transposed (a fastest), zstd (the default) and lz4, against
 * bench_sink's load of the same rows in the same order. Each round takes bench_sink, zstd and
 * lz4 in turn for each order (loads of a few seconds vary by some 5% from minute to minute
 * here: rounds in turn are comparable, blocks of runs are not); the medians are compared. */
static const char *const CUBE_EXPR = "(time*7 + lat*3 + lon) * 0.25";

static Timing cube_load(Bench *b, const char *codec, int ord, double n, double s) {
  char sql[3000], path[2300];
  double nc, sc;
  Timing t;
  snprintf(path, sizeof(path), "%s/cube_%s.b2nd", b->dir, codec);
  unlink(path);
  snprintf(sql, sizeof(sql), "CREATE VIRTUAL TABLE cube USING caterva('%s', shape='200,200,200', "
           "dtype='float64', codec='%s', dims='a,b,c')", path, codec);
  bench_exec(b->dbc, sql);
  snprintf(sql, sizeof(sql), "INSERT INTO cube(a, b, c, value) SELECT time, lat, lon, %s "
           "FROM bench_grid(200, 200, 200, %d)", CUBE_EXPR, ord);
  t = bw_timed_sql(b->dbc, sql);
  bw_query2(b->dbc, "SELECT count(*), sum(value) FROM cube", &nc, &sc);
  bw_check(nc == n && sc == s, "cube load (%s, order %d): count %.0f, sum %.17g; the source "
           "%.0f, %.17g", codec, ord, nc, sc, n, s);
  bench_exec(b->dbc, "DROP TABLE cube");
  unlink(path);
  return t;
}

static Timing cube_sink(Bench *b, int ord) {
  char sql[600];
  Timing t;
  bench_exec(b->dbc, "CREATE VIRTUAL TABLE temp.sink USING bench_sink");
  snprintf(sql, sizeof(sql), "INSERT INTO sink(time, lat, lon, value) SELECT time, lat, lon, %s "
           "FROM bench_grid(200, 200, 200, %d)", CUBE_EXPR, ord);
  t = bw_timed_sql(b->dbc, sql);
  bw_check(sqlite3_changes(b->dbc) == 8000000, "bench_sink took %d rows of the cube",
           sqlite3_changes(b->dbc));
  bench_exec(b->dbc, "DROP TABLE temp.sink");
  return t;
}

static double wall_median(const Timing *t, int n) {
  double w[MAXRUNS];
  for (int i = 0; i < n; i++) w[i] = t[i].wall;
  return bw_median(w, n);
}

static double cpu_median(const Timing *t, int n) {
  double c[MAXRUNS];
  for (int i = 0; i < n; i++) c[i] = t[i].cpu;
  return bw_median(c, n);
}

void bench_cube_load(Bench *b) {
  static const char *const codec[2] = {"zstd", "lz4"};
  static const char *const order[2] = {"C order (c fastest)", "transposed (a fastest)"};
  Timing sink[2][MAXRUNS], cat[2][2][MAXRUNS];
  char sql[600];
  double n, s;
  snprintf(sql, sizeof(sql), "SELECT count(*), sum(%s) FROM bench_grid(200, 200, 200)", CUBE_EXPR);
  bw_query2(b->dbc, sql, &n, &s);
  for (int r = 0; r < b->trounds; r++)
    for (int o = 0; o < 2; o++) {
      sink[o][r] = cube_sink(b, o);
      for (int c = 0; c < 2; c++) cat[o][c][r] = cube_load(b, codec[c], o, n, s);
    }
  printf("\n### 5a. Load of the 200x200x200 float64 cube (automatic partition 52x100x100 / "
         "13x25x25, shuffle), one INSERT ... SELECT, against bench_sink (%d rounds in turn; "
         "medians, s)\n\n", b->trounds);
  printf("| order | bench_sink | zstd 5 (default) | bench_sink / zstd | lz4 5 | bench_sink / lz4 "
         "| goal >= 0.8x |\n|---|---:|---:|---:|---:|---:|---|\n");
  for (int o = 0; o < 2; o++) {
    double ws = wall_median(sink[o], b->trounds), wz = wall_median(cat[o][0], b->trounds),
           wl = wall_median(cat[o][1], b->trounds);
    printf("| %s | %.3f | %.3f | %.3fx | %.3f | %.3fx | %s |\n", order[o], ws / 1e3, wz / 1e3,
           ws / wz, wl / 1e3, ws / wl, ws / wz >= 0.8 && ws / wl >= 0.8 ? "met" : "NOT met");
  }
  printf("\nEach round's bench_sink / caterva (zstd, lz4):");
  for (int o = 0; o < 2; o++) {
    printf(" %s", o ? "; transposed" : "C order");
    for (int r = 0; r < b->trounds; r++)
      printf(" %.3f/%.3f", sink[o][r].wall / cat[o][0][r].wall, sink[o][r].wall / cat[o][1][r].wall);
  }
  printf(".\n\nThe process's CPU time (both threads), medians, s:");
  for (int o = 0; o < 2; o++)
    printf(" %s bench_sink %.3f, zstd %.3f, lz4 %.3f", o ? "; transposed" : "C order",
           cpu_median(sink[o], b->trounds) / 1e3, cpu_median(cat[o][0], b->trounds) / 1e3,
           cpu_median(cat[o][1], b->trounds) / 1e3);
  printf(".\n");
  fflush(stdout);
}

/* -L: the transposed load with one codec only, -T times, each one's wall and CPU time. */
void bench_cube_profile(Bench *b, const char *codec) {
  char sql[600];
  double n, s;
  if (strcmp(codec, "zstd") != 0 && strcmp(codec, "lz4") != 0) bench_die("-L: zstd or lz4");
  snprintf(sql, sizeof(sql), "SELECT count(*), sum(%s) FROM bench_grid(200, 200, 200)", CUBE_EXPR);
  bw_query2(b->dbc, sql, &n, &s);
  for (int r = 0; r < b->trounds; r++) {
    Timing t = cube_load(b, codec, 1, n, s);
    printf("transposed cube load, %s: %.3f s, CPU %.3f s\n", codec, t.wall / 1e3, t.cpu / 1e3);
  }
}

/* 5. UPDATE t SET value = -1 WHERE a = K on the 200x200x200 float64 array: one slab of
 * 40,000 cells, a quarter of the blocks of the four chunks it crosses (the case); the
 * array with zstd 5 (the default: Zstd level 9 inside, as the reference maps it) and with lz4,
 * whose compression costs little, to show what is compression and what is not. Its sides,
 * each UPDATEd once a round: the caterva tables (SLAB_PLAIN of them), the plain table, and
 * bench_usink without and with the hidden columns. */
enum { SLAB_PLAIN = 3, SLAB_US, SLAB_UH, SLAB_NSIDE };

/* The slab UPDATEs of the tables named table[], the sides taken in turn in each round
 * (K = 17 + round, the same cells in every table), so that a phase in which this machine runs
 * slower hits every side alike rather than the runs of one; st gets each side's median. */
static void slab_rounds(Bench *b, const char *const *table, Stat *st) {
  double w[SLAB_NSIDE][MAXRUNS], c[SLAB_NSIDE][MAXRUNS];
  char sql[256];
  for (int r = 0; r < b->runs; r++)
    for (int i = 0; i < SLAB_NSIDE; i++) {
      sqlite3 *db = i == SLAB_PLAIN ? b->dbp : b->dbc;
      Timing t;
      snprintf(sql, sizeof(sql), "UPDATE %s SET value = -1 WHERE a = %d", table[i], 17 + r);
      t = bw_timed_sql(db, sql);
      w[i][r] = t.wall, c[i][r] = t.cpu;
      bw_check(sqlite3_changes(db) == 40000, "slab: %s changed %d cells", table[i],
               sqlite3_changes(db));
    }
  for (int i = 0; i < SLAB_NSIDE; i++) st[i] = bw_stat_of(w[i], c[i], b->runs);
}

/* With BENCH_PERF_CTL naming the control FIFO of `perf record --control fifo:FIFO -D -1`
 * (which starts with its events disabled), the events are enabled before the UPDATE numbered
 * BENCH_PERF_SKIP (default 0): a profile of the UPDATEs without the load before them, or
 * without the first ones too. */
static void perf_enable(void) {
  const char *fifo = getenv("BENCH_PERF_CTL");
  int fd;
  if (fifo == NULL || (fd = open(fifo, O_WRONLY)) < 0) return;
  if (write(fd, "enable\n", 7) != 7) fprintf(stderr, "BENCH_PERF_CTL: write failed\n");
  close(fd);
}

/* -U: the slab UPDATE alone on a zstd (or lz4) table, -r times, each one's wall and CPU time
 * (for profiling; the first run follows the load). */
void bench_slab_profile(Bench *b, const char *codec) {
  char sql[3000], md[64];
  const char *skip = getenv("BENCH_PERF_SKIP");
  int first = skip != NULL ? atoi(skip) : 0; /* the UPDATE perf_enable comes before */
  if (strcmp(codec, "zstd") != 0 && strcmp(codec, "lz4") != 0) bench_die("-U: zstd or lz4");
  snprintf(sql, sizeof(sql),
           "CREATE VIRTUAL TABLE s USING caterva('%s/s.b2nd', shape='200,200,200', "
           "dtype='float64', chunks='52,100,100', blocks='13,25,25', codec='%s', clevel=5, "
           "dims='a,b,c'%s)", b->dir, codec, bw_max_dead_opt(b, md, sizeof(md)));
  bench_exec(b->dbc, sql);
  snprintf(sql, sizeof(sql), "INSERT INTO s(a, b, c, value) SELECT time, lat, lon, %s "
           "FROM bench_grid(200, 200, 200)", CUBE_EXPR);
  bench_exec(b->dbc, sql);
  sync();
  for (int r = 0; r < b->runs; r++) {
    Timing t;
    if (r == first) perf_enable();
    snprintf(sql, sizeof(sql), "UPDATE s SET value = -1 WHERE a = %d", 17 + r % 180);
    t = bw_timed_sql(b->dbc, sql);
    printf("slab UPDATE, %s: %.2f ms, CPU %.2f ms\n", codec, t.wall, t.cpu);
  }
  bench_exec(b->dbc, "DROP TABLE s");
}

void bench_slab(Bench *b) {
  static const struct { const char *name, *codec, *opt, *label; } arr[] = {
      {"s", "zstd", "", "caterva, zstd 5 + shuffle (the default)"},
      {"s4", "lz4", "", "caterva, lz4 5 + shuffle"},
      {"s50", "zstd", ", max_dead=50", "caterva, zstd 5 + shuffle, max_dead=50 (no compaction "
                                       "at these commits)"}};
  enum { NARR = sizeof(arr) / sizeof(arr[0]) };
  _Static_assert((int)NARR == (int)SLAB_PLAIN, "section 5: caterva's tables, then the plain one");
  const char *const side[SLAB_NSIDE] = {arr[0].name, arr[1].name, arr[2].name, "ps", "us", "uh"};
  const char *expr = CUBE_EXPR;
  char sql[3000];
  double n, sum[NARR], sp, dummy;
  Stat st[SLAB_NSIDE];
  const Stat *p = &st[SLAB_PLAIN], *fl = &st[SLAB_US], *fh = &st[SLAB_UH];
  Timing tl[NARR], tp;
  long long sizes[NARR];
  size_t i;
  for (i = 0; i < NARR; i++) {
    snprintf(sql, sizeof(sql),
             "CREATE VIRTUAL TABLE %s USING caterva('%s/%s.b2nd', shape='200,200,200', "
             "dtype='float64', chunks='52,100,100', blocks='13,25,25', codec='%s', clevel=5, "
             "dims='a,b,c'%s)", arr[i].name, b->dir, arr[i].name, arr[i].codec, arr[i].opt);
    bench_exec(b->dbc, sql);
    snprintf(sql, sizeof(sql), "INSERT INTO %s(a, b, c, value) SELECT time, lat, lon, %s "
             "FROM bench_grid(200, 200, 200)", arr[i].name, expr);
    tl[i] = bw_timed_sql(b->dbc, sql);
  }
  bench_exec(b->dbp, "CREATE TABLE ps(a INTEGER, b INTEGER, c INTEGER, value REAL, "
                   "PRIMARY KEY(a, b, c)) WITHOUT ROWID");
  snprintf(sql, sizeof(sql),
           "INSERT INTO ps(a, b, c, value) SELECT time, lat, lon, %s FROM bench_grid(200, 200, 200)",
           expr);
  tp = bw_timed_sql(b->dbp, sql);
  /* the loads' dirty pages written out first: an fsync on ext4 commits the journal, which
   * would otherwise wait for them (tens of ms, to whichever table syncs first) */
  sync();
  usleep(500 * 1000); /* and the disk left to settle (see flush_dirty) */
  bench_exec(b->dbc, "CREATE VIRTUAL TABLE temp.us USING bench_usink(a, b, c, 200, 200, 200);"
                     "CREATE VIRTUAL TABLE temp.uh USING bench_usink(a, b, c, 200, 200, 200, "
                     "hidden)");
  slab_rounds(b, side, st);
  bench_exec(b->dbc, "DROP TABLE temp.us; DROP TABLE temp.uh");
  for (i = 0; i < NARR; i++) {
    snprintf(sql, sizeof(sql), "SELECT count(*), sum(value) FROM %s", arr[i].name);
    bw_query2(b->dbc, sql, &n, &sum[i]);
    bw_check(n == 8e6, "slab: %s holds %.0f cells", arr[i].name, n);
  }
  bw_query2(b->dbp, "SELECT sum(value) FROM ps", &sp, &dummy);
  for (i = 0; i < NARR; i++) {
    struct stat fst;
    snprintf(sql, sizeof(sql), "%s/%s.b2nd", b->dir, arr[i].name);
    sizes[i] = stat(sql, &fst) == 0 ? (long long)fst.st_size : -1;
  }
  for (i = 0; i < NARR; i++)
    bw_check(sum[i] == sp, "slab: %s sum %.17g; plain %.17g", arr[i].name, sum[i], sp);
  printf("\n### 5. UPDATE s SET value = -1 WHERE a = K: one slab of the 200x200x200 float64 "
         "array (%d rounds, K = 17, 18, ..., each round's UPDATE of every table in turn; own "
         "autocommit transaction; ms)\n\n", b->runs);
  printf("caterva: chunks 52x100x100, blocks 13x25x25, synchronous=full (the default); the slab "
         "crosses 4 chunks and 16 of the 64 blocks of each: 64 blocks of 65 KB re-encoded, 192 "
         "copied. Plain: WITHOUT ROWID table, file database, SQLite's defaults. Loads (not "
         "timed below): caterva zstd %.2f s, lz4 %.2f s, plain %.2f s.\n\n", tl[0].wall / 1e3,
         tl[1].wall / 1e3, tp.wall / 1e3);
  printf("| table | cells | median | min | max | CPU median | plain / caterva |\n");
  printf("|---|---|---:|---:|---:|---:|---:|\n");
  for (i = 0; i < NARR; i++)
    printf("| %s | 40000 | %.1f | %.1f | %.1f | %.1f | %.2fx (CPU %.2fx) |\n", arr[i].label,
           st[i].med, st[i].min, st[i].max, st[i].cpu, p->med / st[i].med, p->cpu / st[i].cpu);
  printf("| plain | 40000 | %.1f | %.1f | %.1f | %.1f | |\n", p->med, p->min, p->max, p->cpu);
  printf("| bench_usink: SQLite's own UPDATE of a virtual table (nothing decoded or stored; "
         "no commit) | 40000 | %.1f | %.1f | %.1f | %.1f | %.2fx |\n", fl->med, fl->min, fl->max,
         fl->cpu, p->med / fl->med);
  printf("| bench_usink with the caterva table's columns (its 3 hidden `<dim>_index` columns too, "
         "coordinates reported unchanged) | 40000 | %.1f | %.1f | %.1f | %.1f | %.2fx |\n",
         fh->med, fh->min, fh->max, fh->cpu, p->med / fh->med);
  printf("\nNo virtual table's UPDATE of these rows can take less than bench_usink's %.1f ms "
         "in this SQLite (%.2fx the plain table's whole UPDATE); caterva's time above that "
         "floor: zstd %.1f ms, lz4 %.1f ms. caterva / bench_usink: zstd %.2fx, lz4 %.2fx, zstd "
         "with max_dead=50 %.2fx (goal <= 2.0x). File bytes after the runs: zstd %lld, lz4 %lld, "
         "max_dead=50 %lld. SQLite's own UPDATE of a table with the caterva table's 7 columns "
         "(bench_usink with hidden) takes %.2fx bench_usink's time; caterva / that: zstd %.2fx, "
         "lz4 %.2fx.\n", fl->med, fl->med / p->med, st[0].med - fl->med, st[1].med - fl->med,
         st[0].med / fl->med, st[1].med / fl->med, st[2].med / fl->med, sizes[0], sizes[1],
         sizes[2], fh->med / fl->med, st[0].med / fh->med, st[1].med / fh->med);
  for (i = 0; i < NARR; i++) {
    snprintf(sql, sizeof(sql), "DROP TABLE %s", arr[i].name);
    bench_exec(b->dbc, sql);
  }
  bench_exec(b->dbp, "DROP TABLE ps");
  fflush(stdout);
}

/* Bytes and files under path (a file, or a sparse frame's directory). */
static void du(const char *path, long long *bytes, long long *files) {
  char cmd[2600], line[128];
  FILE *f;
  *bytes = *files = -1;
  snprintf(cmd, sizeof(cmd), "find '%s' -type f -printf '%%s\\n' | awk '{s+=$1; n++} END "
           "{print s+0, n+0}'", path);
  f = popen(cmd, "r");
  if (f == NULL) return;
  if (fgets(line, sizeof(line), f) != NULL) sscanf(line, "%lld %lld", bytes, files);
  pclose(f);
}

/* The floor of a sparse growth: n files of 40 bytes created in a new directory, then one
 * syncfs (what the growth writes, without SQL, the frame or the index). */
static double files_floor(const char *dir, long long n) {
  char path[2460];
  uint8_t chunk[40];
  double w0 = bench_now_ms();
  int dfd;
  memset(chunk, 7, sizeof(chunk));
  if (mkdir(dir, 0777) != 0) bench_die("mkdir %s: %s", dir, strerror(errno));
  dfd = open(dir, O_RDONLY | O_DIRECTORY);
  for (long long i = 0; i < n; i++) {
    int fd;
    snprintf(path, sizeof(path), "%s/%08llX.chunk", dir, i);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0666);
    if (fd < 0 || write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk))
      bench_die("%s: %s", path, strerror(errno));
    close(fd);
  }
  if (dfd < 0 || syncfs(dfd) != 0) bench_die("syncfs %s: %s", dir, strerror(errno));
  close(dfd);
  return bench_now_ms() - w0;
}

/* 6. Growth by one INSERT far past the end of a float64 array of 1-item chunks: n new chunks
 * holding the fill value (NaN: special index entries; 3: stored repeated-value chunks). */
void bench_fill_growth(Bench *b) {
  static const struct { int sparse; const char *fill; } cases[] = {
      {0, "nan"}, {0, "3"}, {1, "nan"}, {1, "3"}};
  char sql[5000], path[2400];
  size_t i;
  printf("\n### 6. Growth with a fill value: INSERT INTO g VALUES (N, 7) into a float64 array "
         "of shape 1 and chunks of 1 item (autocommit, synchronous=full)\n\n");
  printf("| store | fill | new chunks | s | bytes | files |\n");
  printf("|---|---|---:|---:|---:|---:|\n");
  for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    long long n = cases[i].sparse && strcmp(cases[i].fill, "3") == 0 ? b->grow_sparse : b->grow;
    long long bytes, files;
    double cnt, sum, want;
    Timing t;
    snprintf(path, sizeof(path), "%s/g%zu.b2nd", b->dir, i);
    snprintf(sql, sizeof(sql),
             "CREATE VIRTUAL TABLE g USING caterva('%s', shape='1', dtype='float64', chunks='1', "
             "blocks='1', fill=%s, sparse=%d)", path, cases[i].fill, cases[i].sparse);
    bench_exec(b->dbc, sql);
    snprintf(sql, sizeof(sql), "INSERT INTO g VALUES (%lld, 7)", n);
    bw_flush_dirty(b); /* the growth's syncs wait for its own files only */
    t = bw_timed_sql(b->dbc, sql);
    bw_query2(b->dbc, "SELECT count(*), sum(value) FROM g", &cnt, &sum);
    want = 7 + (strcmp(cases[i].fill, "3") == 0 ? 3.0 * (double)n : 0);
    bw_check(cnt == (double)(n + 1) && sum == want, "growth %s fill %s: %.0f cells, sum %.17g",
          cases[i].sparse ? "sparse" : "contiguous", cases[i].fill, cnt, sum);
    bench_exec(b->dbc, "DROP TABLE g");
    du(path, &bytes, &files);
    printf("| %s | %s | %lld | %.3f | %lld | %lld |\n",
           cases[i].sparse ? "sparse" : "contiguous", cases[i].fill, n, t.wall / 1e3, bytes,
           files);
    fflush(stdout);
    snprintf(sql, sizeof(sql), "rm -rf '%s' '%s.b2lock'", path, path);
    if (system(sql) != 0) fprintf(stderr, "bench_write: could not remove %s\n", path);
  }
  snprintf(path, sizeof(path), "%s/floor", b->dir);
  bw_flush_dirty(b); /* the removal of the growths' files is not the floor's to write back */
  printf("\nThe floor of the sparse value-fill growth on this file system: a C loop creating "
         "%lld files of 40 bytes (open, write, close) and one syncfs: %.3f s.\n",
         b->grow_sparse, files_floor(path, b->grow_sparse) / 1e3);
  snprintf(sql, sizeof(sql), "rm -rf '%s'", path);
  if (system(sql) != 0) fprintf(stderr, "bench_write: could not remove %s\n", path);
  fflush(stdout);
}


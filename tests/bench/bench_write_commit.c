/* bench_write_commit.c -- section 3 of bench_write (described there): what a transaction's
 * commit costs, in time, write-class system calls and syncs. */
#include "bench_write.h"

#include <sys/syscall.h>

/* ---- counting a commit's write-class system calls and syncs -------------------------------
 * Writes: the process's syscw (/proc/self/io: write, pwrite, writev ... calls). Syncs: this
 * program defines fsync, fdatasync and syncfs itself (linked with -export-dynamic), so that
 * the extension's calls and libsqlite3's resolve here first, are counted, and go to the
 * kernel by syscall(2). No LD_PRELOAD, no strace: the counts are the calls, not a sample. */

static long long n_fsync, n_fdatasync, n_syncfs;

int fsync(int fd) {
  n_fsync++;
  return (int)syscall(SYS_fsync, fd);
}

int fdatasync(int fd) {
  n_fdatasync++;
  return (int)syscall(SYS_fdatasync, fd);
}

int syncfs(int fd) {
  n_syncfs++;
  return (int)syscall(SYS_syncfs, fd);
}

/* The process's write-class system calls so far, -1 when /proc/self/io cannot be read. */
static long long syscw_now(void) {
  char line[128];
  long long v = -1;
  FILE *f = fopen("/proc/self/io", "r");
  if (f == NULL) return -1;
  while (fgets(line, sizeof(line), f) != NULL)
    if (sscanf(line, "syscw: %lld", &v) == 1) break;
  fclose(f);
  return v;
}

/* What n transactions cost: times (ms) and calls per transaction. */
typedef struct {
  Stat s;
  double mean;
  double writes, syncs;   /* per transaction; writes < 0 when unknown */
  double fsyncs;          /* of the syncs, fsync and syncfs (the rest fdatasync) */
} CommitCost;

/* n runs of: BEGIN; body (none when body_fmt is NULL); COMMIT, timed from BEGIN to the end
 * of COMMIT. body_fmt takes three numbers, different in each run (kk, see below); the rows
 * changed are added to *changed. The counters are read outside the timed part. */
static CommitCost time_commits(sqlite3 *db, int n, const char *body_fmt, int chunk,
                               long long *changed) {
  double w[MAXRUNS], c[MAXRUNS], sum = 0;
  long long w0c = syscw_now(), f0 = n_fsync + n_syncfs, d0 = n_fdatasync, w1c;
  CommitCost cc;
  int k;
  for (k = 0; k < n; k++) {
    char body[512];
    double w0, c0;
    int kk = k * 37 + 11;
    if (body_fmt && chunk) /* chunk kk of the 2 x 2 x 4 chunks of time 0-59 (30x90x90) */
      snprintf(body, sizeof(body), body_fmt, kk % 2 * 30, kk % 2 * 30 + 30, kk / 2 % 2 * 90,
               kk / 2 % 2 * 90 + 90, kk / 4 % 4 * 90, kk / 4 % 4 * 90 + 90);
    else if (body_fmt)
      snprintf(body, sizeof(body), body_fmt, kk % 60, kk * 7 % NLAT, kk * 13 % NLON);
    c0 = bench_cpu_ms();
    w0 = bench_now_ms();
    bench_exec(db, "BEGIN");
    if (body_fmt) bench_exec(db, body);
    bench_exec(db, "COMMIT");
    w[k] = bench_now_ms() - w0;
    c[k] = bench_cpu_ms() - c0;
    sum += w[k];
    if (body_fmt) *changed += sqlite3_changes(db);
  }
  w1c = syscw_now();
  cc.s = bw_stat_of(w, c, n);
  cc.mean = sum / n;
  cc.writes = w0c < 0 || w1c < 0 ? -1.0 : (double)(w1c - w0c) / n;
  cc.syncs = (double)(n_fsync + n_syncfs - f0 + n_fdatasync - d0) / n;
  cc.fsyncs = (double)(n_fsync + n_syncfs - f0) / n;
  return cc;
}

static void row_commit(const char *table, const char *sync, const char *what, CommitCost c) {
  printf("| %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %.3f |", table, sync, what, c.s.med,
         c.mean, c.s.min, c.s.max, c.s.cpu);
  if (c.writes >= 0) printf(" %.2f |", c.writes);
  else printf(" ? |");
  printf(" %.2f (%.2f fsync) |\n", c.syncs, c.fsyncs);
}

/* 3. Commits. */
enum { C3_CONTIG, C3_SPARSE, C3_DELETE, C3_WAL, C3_TARGETS };
enum { C3_EMPTY, C3_NONE, C3_CELL, C3_CHUNK, C3_KINDS };

/* A caterva table over path under the name, with synchronous=sync. */
static void open_caterva_as(Bench *b, const char *name, const char *path, const char *sync) {
  char sql[2600], md[32];
  snprintf(sql, sizeof(sql), "DROP TABLE IF EXISTS %s", name);
  bench_exec(b->dbc, sql);
  snprintf(sql, sizeof(sql),
           "CREATE VIRTUAL TABLE %s USING caterva('%s', dims='time,lat,lon', synchronous=%s%s)",
           name, path, sync, bw_max_dead_opt(b, md, sizeof(md)));
  bench_exec(b->dbc, sql);
}

/* The sparse copy of t that section 3 also measures: the same layout and cells. */
static void make_sparse_copy(Bench *b) {
  char sql[3000];
  double nc, sc, nt, st;
  snprintf(sql, sizeof(sql),
           "CREATE VIRTUAL TABLE ts USING caterva('%s', shape='%d,%d,%d', dtype='float32', "
           "chunks='30,90,90', blocks='10,15,30', codec='zstd', clevel=5, filters='shuffle', "
           "dims='time,lat,lon', sparse=1)",
           b->arrs, b->ntime, NLAT, NLON);
  bench_exec(b->dbc, sql);
  bench_exec(b->dbc, "INSERT INTO ts(time, lat, lon, value) SELECT time, lat, lon, value FROM t");
  bw_query2(b->dbc, "SELECT count(*), sum(value) FROM ts", &nc, &sc);
  bw_query2(b->dbc, "SELECT count(*), sum(value) FROM t", &nt, &st);
  bw_check(nc == nt && sc == st, "the sparse copy: count %.0f, sum %.17g; t: %.0f, %.17g", nc, sc,
        nt, st);
  b->sum_s = st;
}

static CommitCost commit_kind(Bench *b, int target, int kind, long long *changed) {
  static const char *const cell =
      "UPDATE %s SET value = value + 1 WHERE time = %%d AND lat = %%d AND lon = %%d";
  static const char *const none =
      "UPDATE %s SET value = value + 1 WHERE time = %%d AND lat = %%d AND lon = %%d + 1000";
  static const char *const chunk =
      "UPDATE %s SET value = value + 1 WHERE time >= %%d AND time < %%d AND lat >= %%d AND "
      "lat < %%d AND lon >= %%d AND lon < %%d";
  static const char *const names[C3_TARGETS] = {"t", "ts", "p", "p"};
  sqlite3 *db = target >= C3_DELETE ? b->dbp : b->dbc;
  char fmt[512];
  int n = kind == C3_CHUNK ? b->chunk_commits : b->commits;
  if (kind == C3_EMPTY) return time_commits(db, n, NULL, 0, changed);
  snprintf(fmt, sizeof(fmt), kind == C3_NONE ? none : kind == C3_CELL ? cell : chunk,
           names[target]);
  return time_commits(db, n, fmt, kind == C3_CHUNK, changed);
}

/* The caterva tables t and ts opened with synchronous=level, the plain table's PRAGMA
 * synchronous set to plevel. */
static void sync_level(Bench *b, const char *level, const char *plevel) {
  char sql[64];
  open_caterva_as(b, "t", b->arr, level);
  open_caterva_as(b, "ts", b->arrs, level);
  snprintf(sql, sizeof(sql), "PRAGMA synchronous=%s", plevel);
  bench_exec(b->dbp, sql);
}

/* One-cell commits of the contiguous table, the sparse one and the plain one taken in turn,
 * rounds times, with the plain table in journal mode jmode: the three see the same moments of
 * the disk (whose sync latency drifts by 2x over minutes), which consecutive blocks of
 * commits do not. med[k]: median ms of target k (C3_CONTIG, C3_SPARSE, then the plain). */
static void cell_interleaved(Bench *b, const char *jmode, int rounds, double *med,
                             long long *changed) {
  static const char *const fmt[3] = {
      "UPDATE t SET value = value + 1 WHERE time = %d AND lat = %d AND lon = %d",
      "UPDATE ts SET value = value + 1 WHERE time = %d AND lat = %d AND lon = %d",
      "UPDATE p SET value = value + 1 WHERE time = %d AND lat = %d AND lon = %d"};
  double w[3][MAXRUNS];
  char sql[256];
  snprintf(sql, sizeof(sql), "PRAGMA journal_mode=%s", jmode);
  bench_exec(b->dbp, sql);
  bw_flush_dirty(b);
  for (int r = 0; r < rounds; r++) {
    int kk = r * 41 + 5;
    for (int k = 0; k < 3; k++) {
      sqlite3 *db = k == 2 ? b->dbp : b->dbc;
      double w0;
      snprintf(sql, sizeof(sql), fmt[k], kk % 60, kk * 11 % NLAT, kk * 17 % NLON);
      w0 = bench_now_ms();
      bench_exec(db, "BEGIN");
      bench_exec(db, sql);
      bench_exec(db, "COMMIT");
      w[k][r] = bench_now_ms() - w0;
      changed[k] += sqlite3_changes(db);
    }
  }
  for (int k = 0; k < 3; k++) med[k] = bw_median(w[k], rounds);
}

void bench_commit(Bench *b) {
  static const char *const levels[3] = {"full", "normal", "off"};
  static const char *const plevels[3] = {"FULL", "NORMAL", "OFF"};
  static const char *const tnames[C3_TARGETS] = {
      "caterva, contiguous", "caterva, sparse", "plain, journal_mode=DELETE",
      "plain, journal_mode=WAL"};
  static const char *const knames[C3_KINDS] = {
      "BEGIN; COMMIT", "UPDATE of no cell", "UPDATE of one cell", "UPDATE of one chunk"};
  long long changed[C3_TARGETS];
  double sy, dummy;
  int lv, tg, kd;
  char sql[256];

  memset(changed, 0, sizeof(changed));
  bw_query2(b->dbp, "PRAGMA synchronous", &sy, &dummy);
  /* SQLite's own temporary files (the UPDATE's ephemeral table) are not the commit's */
  bench_exec(b->dbc, "PRAGMA temp_store=MEMORY");
  bench_exec(b->dbp, "PRAGMA temp_store=MEMORY");
  make_sparse_copy(b);
  printf("\n### 3. Commits: time, write-class system calls and syncs per transaction\n\n");
  printf("BEGIN; body; COMMIT, timed from BEGIN to the end of COMMIT; %d transactions each (%d "
         "of one chunk: 243,000 cells). Caterva: the array of section 1 (contiguous) and a "
         "sparse copy of it, `synchronous=` table option; plain: the table of section 1 "
         "(`PRAGMA journal_mode`, `PRAGMA synchronous`); both connections `PRAGMA "
         "temp_store=MEMORY`. Writes: the process's syscw "
         "(/proc/self/io); syncs: fsync + fdatasync + syncfs calls (of which fsync or syncfs). "
         "The file system is synced (syncfs) before each table's rows, then left half a second "
         "to settle, so that the loads' dirty pages are not written back during the timed "
         "commits.\n\n",
         b->commits, b->chunk_commits);
  printf("| table | synchronous | transaction | median ms | mean | min | max | CPU median | "
         "writes | syncs |\n");
  printf("|---|---|---|---:|---:|---:|---:|---:|---:|---|\n");
  for (lv = 0; lv < 3; lv++) {
    sync_level(b, levels[lv], plevels[lv]);
    for (tg = 0; tg < C3_TARGETS; tg++) {
      bw_flush_dirty(b);
      if (tg == C3_DELETE) bench_exec(b->dbp, "PRAGMA journal_mode=DELETE");
      if (tg == C3_WAL) bench_exec(b->dbp, "PRAGMA journal_mode=WAL");
      for (kd = 0; kd < C3_KINDS; kd++) {
        long long ch = 0;
        CommitCost c = commit_kind(b, tg, kd, &ch);
        bw_check(kd == C3_NONE || kd == C3_EMPTY ? ch == 0
                                               : ch == (kd == C3_CELL ? b->commits
                                                                      : 243000LL *
                                                                            b->chunk_commits),
              "commits: %s, %s: %lld cells changed", tnames[tg], knames[kd], ch);
        changed[tg] += ch;
        row_commit(tnames[tg], tg >= C3_DELETE ? plevels[lv] : levels[lv], knames[kd], c);
        fflush(stdout);
      }
    }
    bench_exec(b->dbp, "PRAGMA journal_mode=DELETE");
  }
  printf("\nOne-cell commit, median ms of %d commits of each table taken in turn (contiguous, "
         "sparse, plain; then again with the plain table in WAL mode), caterva against the "
         "plain table at the same synchronous level (goal: at most the plain table's time):\n\n",
         b->cell_rounds);
  printf("| synchronous | plain table's journal | contiguous | sparse | plain | contiguous <= "
         "plain | sparse <= plain |\n");
  printf("|---|---|---:|---:|---:|---|---|\n");
  for (lv = 0; lv < 3; lv++) {
    sync_level(b, levels[lv], plevels[lv]);
    for (int j = 0; j < 2; j++) {
      long long ch[3] = {0, 0, 0};
      double m[3];
      cell_interleaved(b, j ? "WAL" : "DELETE", b->cell_rounds, m, ch);
      bw_check(ch[0] == b->cell_rounds && ch[1] == b->cell_rounds && ch[2] == b->cell_rounds,
            "interleaved commits: %lld, %lld, %lld cells changed", ch[0], ch[1], ch[2]);
      changed[C3_CONTIG] += ch[0];
      changed[C3_SPARSE] += ch[1];
      changed[j ? C3_WAL : C3_DELETE] += ch[2];
      printf("| %s | %s | %.3f | %.3f | %.3f | %s | %s |\n", levels[lv], j ? "WAL" : "DELETE",
             m[0], m[1], m[2], m[0] <= m[2] ? "yes" : "no", m[1] <= m[2] ? "yes" : "no");
      fflush(stdout);
    }
  }
  bench_exec(b->dbp, "PRAGMA journal_mode=DELETE");
  snprintf(sql, sizeof(sql), "PRAGMA synchronous=%d", (int)sy);
  bench_exec(b->dbp, sql);
  bw_open_caterva(b, "full");
  /* each table against its own expected sum (the plain table took both journal modes' writes) */
  b->sum_c += (double)changed[C3_CONTIG];
  b->sum_s += (double)changed[C3_SPARSE];
  b->sum_p += (double)(changed[C3_DELETE] + changed[C3_WAL]);
  {
    double n, s;
    bw_query2(b->dbc, "SELECT count(*), sum(value) FROM t", &n, &s);
    bw_check(s == b->sum_c, "after the commits: caterva sum(value) = %.17g, expected %.17g", s,
          b->sum_c);
    bw_query2(b->dbc, "SELECT count(*), sum(value) FROM ts", &n, &s);
    bw_check(s == b->sum_s, "after the commits: sparse sum(value) = %.17g, expected %.17g", s,
          b->sum_s);
    bw_query2(b->dbp, "SELECT count(*), sum(value) FROM p", &n, &s);
    bw_check(s == b->sum_p, "after the commits: plain sum(value) = %.17g, expected %.17g", s,
          b->sum_p);
  }
  bench_exec(b->dbc, "DROP TABLE ts");
}


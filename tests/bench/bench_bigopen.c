/*
 * bench_bigopen.c -- what opening a big array costs, libcaterva against the reference c-blosc2
 * on the same files (not a test: it prints figures). Built only with configure
 * --with-ref-blosc2=PREFIX; run with `make bench-bigopen`.
 *
 * For each size (chunks of the array, default 10^3, 10^5, 10^6 and 10^7) an array of uint8
 * with chunks and blocks of 10x10x10 is made by libcaterva, mostly fill (zeros, the growth
 * path: create 10x10x10, write one chunk of values, resize to the full shape, write the last
 * chunk): shapes 100x100x100, 100x1000x1000, 1000x1000x1000 and 10000x1000x1000. Then, each
 * in a process of its own (so that its peak RSS is its own), R times alternating the two:
 * open the file (ours: caterva_array_open, read-only; the reference: b2nd_open) and read one
 * cell of the last, written chunk (ours: caterva_array_get_slice; the reference:
 * b2nd_get_slice_cbuffer), each timed, and the process's peak RSS (VmHWM) after both.
 * A process that only starts and exits gives the RSS every process has (printed as "base").
 * Then each child opens, reads the cell and frees the array 5 times more (a worker that
 * opens the array for every task), and "again" is the median of those opens' times. Each
 * size is measured again on a sparse copy of the array (a directory: chunks.b2frame and the
 * two chunk files of values), which the reference opens too.
 * Figures are medians over the R runs; both readers' cells are checked against the value
 * written.
 *
 * Usage: tests/bench/bench_bigopen [DIR [R [CHUNKS...]]]    (defaults: /tmp, 5, the four sizes)
 *        tests/bench/bench_bigopen --measure ours|ref|none PATH i j k   (one run, the child)
 */
#include "config.h"
#include "caterva.h"

#include <b2nd.h>
#include <blosc2.h>

#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MAXRUNS 31
#define CELLVAL(i, j, k) ((uint8_t)(((i) * 7 + (j) * 3 + (k)) % 251 + 1))

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(caterva_ctx *ctx, const char *what, int rc) {
  fprintf(stderr, "bench_bigopen: %s: %s (%s)\n", what, caterva_strerror(rc),
          ctx ? caterva_ctx_errmsg(ctx) : "");
  exit(1);
}

/* The shape of an array of nchunks chunks of 10^3 (nchunks a power of 10 from 10^3). */
static void shape_of(int64_t nchunks, int64_t *shape) {
  int64_t grid[3] = {1, 1, 1};
  for (int k = 0; nchunks > 1; k = (k + 1) % 3, nchunks /= 10) grid[2 - k] *= 10;
  for (int k = 0; k < 3; k++) shape[k] = grid[k] * 10;
}

/* Write chunk box [lo, lo + 10) of values CELLVAL. */
static void write_chunk(caterva_ctx *ctx, caterva_array *a, const int64_t *lo) {
  uint8_t buf[1000];
  int64_t hi[3] = {lo[0] + 10, lo[1] + 10, lo[2] + 10};
  int rc;
  for (int i = 0; i < 10; i++)
    for (int j = 0; j < 10; j++)
      for (int k = 0; k < 10; k++)
        buf[(i * 10 + j) * 10 + k] = CELLVAL(lo[0] + i, lo[1] + j, lo[2] + k);
  rc = caterva_array_set_slice(ctx, a, lo, hi, buf, sizeof buf);
  if (rc < 0) die(ctx, "set_slice", rc);
}

static void make_array(const char *path, int64_t nchunks) {
  caterva_ctx *ctx = NULL;
  caterva_array_params p;
  caterva_array *a = NULL;
  int64_t shape[3], zero[3] = {0, 0, 0}, last[3];
  int rc = caterva_ctx_new(1, &ctx);
  if (rc < 0) die(NULL, "ctx", rc);
  shape_of(nchunks, shape);
  caterva_array_params_init(&p);
  p.ndim = 3;
  for (int k = 0; k < 3; k++) {
    p.shape[k] = 10;
    p.chunkshape[k] = p.blockshape[k] = 10;
    last[k] = shape[k] - 10;
  }
  p.dtype = "uint8";
  p.store = CATERVA_STORE_CONTIGUOUS;
  p.path = path;
  unlink(path);
  rc = caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a);
  if (rc < 0) die(ctx, "create", rc);
  write_chunk(ctx, a, zero);
  rc = caterva_array_resize(ctx, a, shape);
  if (rc < 0) die(ctx, "resize", rc);
  write_chunk(ctx, a, last);
  caterva_array_free(a);
  caterva_ctx_free(ctx);
}

/* This process's peak RSS in KiB (VmHWM: getrusage's ru_maxrss also counts the parent the
 * process was spawned from, which made the arrays). */
static long peak_rss_kb(void) {
  char line[256];
  long kb = -1;
  FILE *f = fopen("/proc/self/status", "r");
  while (f != NULL && fgets(line, sizeof line, f) != NULL)
    if (strncmp(line, "VmHWM:", 6) == 0) kb = atol(line + 6);
  if (f != NULL) fclose(f);
  return kb;
}

/* One round: open (timed), one cell (timed), free. The value read, or -1. */
static int round_ours(caterva_ctx *ctx, const char *path, const int64_t *at, double *t_open,
                      double *t_cell) {
  caterva_array *a = NULL;
  int64_t stop[3] = {at[0] + 1, at[1] + 1, at[2] + 1};
  uint8_t v = 0;
  double t0 = now();
  int rc = caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a);
  *t_open = now() - t0;
  if (rc < 0) die(ctx, "open", rc);
  t0 = now();
  rc = caterva_array_get_slice(ctx, a, at, stop, &v, 1);
  *t_cell = now() - t0;
  if (rc < 0) die(ctx, "get_slice", rc);
  caterva_array_free(a);
  return v;
}

static int round_ref(const char *path, const int64_t *at, double *t_open, double *t_cell) {
  b2nd_array_t *r = NULL;
  int64_t stop[3] = {at[0] + 1, at[1] + 1, at[2] + 1}, one[3] = {1, 1, 1};
  uint8_t v = 0;
  double t0 = now();
  int rc = b2nd_open(path, &r);
  *t_open = now() - t0;
  if (rc < 0) {
    fprintf(stderr, "bench_bigopen: b2nd_open: %d\n", rc);
    exit(1);
  }
  t0 = now();
  rc = b2nd_get_slice_cbuffer(r, at, stop, &v, one, 1);
  *t_cell = now() - t0;
  if (rc < 0) {
    fprintf(stderr, "bench_bigopen: b2nd_get_slice_cbuffer: %d\n", rc);
    exit(1);
  }
  b2nd_free(r);
  return v;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The child: one round, the peak RSS, then AGAIN more rounds in the same process (a worker
 * that opens the array for every task), printed as "open_s cell_s rss_kb value again_s"
 * (again_s: the median of the later opens). */
#define AGAIN 5
static int child(char **argv) {
  int64_t at[3] = {atoll(argv[4]), atoll(argv[5]), atoll(argv[6])};
  double to = 0, tc = 0, again[AGAIN], tc2;
  caterva_ctx *ctx = NULL;
  bool ours = strcmp(argv[2], "ours") == 0, ref = strcmp(argv[2], "ref") == 0;
  long rss;
  int v = 0, rc;
  if (ours && (rc = caterva_ctx_new(1, &ctx)) < 0) die(NULL, "ctx", rc);
  if (ref) blosc2_init();
  if (ours) v = round_ours(ctx, argv[3], at, &to, &tc);
  if (ref) v = round_ref(argv[3], at, &to, &tc);
  rss = peak_rss_kb();
  for (int i = 0; i < AGAIN; i++) {
    again[i] = 0;
    if (ours && round_ours(ctx, argv[3], at, &again[i], &tc2) != v) v = -1;
    if (ref && round_ref(argv[3], at, &again[i], &tc2) != v) v = -1;
  }
  qsort(again, AGAIN, sizeof *again, cmp_d);
  caterva_ctx_free(ctx);
  if (ref) blosc2_destroy();
  printf("%.9f %.9f %ld %d %.9f\n", to, tc, rss, v, again[AGAIN / 2]);
  return 0;
}

typedef struct run {
  double open, cell, again;
  long rss;
  int value;
} run;

/* One child run of who on path, read back through a pipe. */
static run spawn_one(const char *self, const char *who, const char *path, const int64_t *at) {
  char a0[32], a1[32], a2[32], line[256];
  char *args[] = {(char *)self, "--measure", (char *)who, (char *)path, a0, a1, a2, NULL};
  posix_spawn_file_actions_t fa;
  int fd[2], status;
  pid_t pid;
  run r = {0, 0, 0, 0, -1};
  FILE *f;
  snprintf(a0, sizeof a0, "%lld", (long long)at[0]);
  snprintf(a1, sizeof a1, "%lld", (long long)at[1]);
  snprintf(a2, sizeof a2, "%lld", (long long)at[2]);
  if (pipe(fd) != 0) exit(1);
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
  posix_spawn_file_actions_addclose(&fa, fd[0]);
  if (posix_spawn(&pid, self, &fa, NULL, args, environ) != 0) exit(1);
  posix_spawn_file_actions_destroy(&fa);
  close(fd[1]);
  f = fdopen(fd[0], "r");
  if (f == NULL || fgets(line, sizeof line, f) == NULL ||
      sscanf(line, "%lf %lf %ld %d %lf", &r.open, &r.cell, &r.rss, &r.value, &r.again) != 5) {
    fprintf(stderr, "bench_bigopen: the %s run on %s printed nothing\n", who, path);
    exit(1);
  }
  fclose(f);
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) exit(1);
  return r;
}

/* Medians of R runs. */
static run median(const run *rs, int R) {
  double o[MAXRUNS], c[MAXRUNS], m[MAXRUNS], g[MAXRUNS];
  run r = rs[0];
  for (int i = 0; i < R; i++) {
    o[i] = rs[i].open;
    c[i] = rs[i].cell;
    m[i] = (double)rs[i].rss;
    g[i] = rs[i].again;
  }
  qsort(o, (size_t)R, sizeof *o, cmp_d);
  qsort(c, (size_t)R, sizeof *c, cmp_d);
  qsort(m, (size_t)R, sizeof *m, cmp_d);
  qsort(g, (size_t)R, sizeof *g, cmp_d);
  r.open = o[R / 2];
  r.cell = c[R / 2];
  r.rss = (long)m[R / 2];
  r.again = g[R / 2];
  return r;
}

/* A sparse copy of the array at src (the same partitioning: the zero chunks stay index
 * entries, the two chunks of values become chunk files). */
static void make_sparse(const char *src, const char *dst) {
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL, *b = NULL;
  caterva_array_params p;
  int rc = caterva_ctx_new(1, &ctx);
  if (rc < 0) die(NULL, "ctx", rc);
  rc = caterva_array_open(ctx, src, CATERVA_OPEN_READ, &a);
  if (rc < 0) die(ctx, "open", rc);
  caterva_array_params_init(&p);
  p.ndim = 3;
  for (int k = 0; k < 3; k++) p.chunkshape[k] = p.blockshape[k] = 10;
  p.store = CATERVA_STORE_SPARSE;
  p.path = dst;
  rc = caterva_array_copy(ctx, a, &p, &b);
  if (rc < 0) die(ctx, "sparse copy", rc);
  caterva_array_free(b);
  caterva_array_free(a);
  caterva_ctx_free(ctx);
}

/* R runs of each reader on path, alternating, and the row of medians. */
static void bench_path(const char *self, const char *path, const char *label, const int64_t *at,
                       int want, int R) {
  run ours[MAXRUNS], ref[MAXRUNS], mo, mr;
  (void)spawn_one(self, "ours", path, at); /* the file into the page cache */
  (void)spawn_one(self, "ref", path, at);
  for (int i = 0; i < R; i++) {
    ours[i] = spawn_one(self, "ours", path, at);
    ref[i] = spawn_one(self, "ref", path, at);
    if (ours[i].value != want || ref[i].value != want) {
      fprintf(stderr, "bench_bigopen: cell %d (ours) %d (reference), want %d\n", ours[i].value,
              ref[i].value, want);
      exit(1);
    }
  }
  mo = median(ours, R);
  mr = median(ref, R);
  printf("%16s  %9.2f %9.2f %6.2f   %8.1f %8.1f %6.2f   %8.3f %8.3f %6.2f   %8.3f %8.3f %6.2f\n",
         label, mo.open * 1e3, mr.open * 1e3, mo.open / mr.open, mo.rss / 1024.0,
         mr.rss / 1024.0, (double)mo.rss / (double)mr.rss, mo.cell * 1e3, mr.cell * 1e3,
         mo.cell / mr.cell, mo.again * 1e3, mr.again * 1e3, mo.again / mr.again);
  fflush(stdout);
}

static void bench_size(const char *self, const char *dir, int64_t nchunks, int R) {
  char path[4096], spath[4096], label[64], cmd[8300];
  int64_t shape[3], at[3];
  struct stat st;
  double t0;
  int want;
  shape_of(nchunks, shape);
  for (int k = 0; k < 3; k++) at[k] = shape[k] - 3;
  want = CELLVAL(at[0], at[1], at[2]);
  snprintf(path, sizeof path, "%s/bigopen_%lld.b2nd", dir, (long long)nchunks);
  snprintf(spath, sizeof spath, "%s/bigopen_%lld.b2sparse", dir, (long long)nchunks);
  t0 = now();
  make_array(path, nchunks);
  if (stat(path, &st) != 0) exit(1);
  fprintf(stderr, "bench_bigopen: %lld chunks (%lldx%lldx%lld) made in %.1f s, %.1f MB\n",
          (long long)nchunks, (long long)shape[0], (long long)shape[1], (long long)shape[2],
          now() - t0, st.st_size / 1e6);
  snprintf(label, sizeof label, "%lld", (long long)nchunks);
  bench_path(self, path, label, at, want, R);
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", spath);
  if (system(cmd) != 0) exit(1);
  make_sparse(path, spath);
  snprintf(label, sizeof label, "%lld sparse", (long long)nchunks);
  bench_path(self, spath, label, at, want, R);
  unlink(path);
  if (system(cmd) != 0) exit(1);
}

int main(int argc, char **argv) {
  static const int64_t sizes[] = {1000, 100000, 1000000, 10000000};
  const char *dir = argc > 1 ? argv[1] : "/tmp";
  char self[4096];
  ssize_t n;
  int R = argc > 2 ? atoi(argv[2]) : 5;
  run base[MAXRUNS];
  int64_t zero[3] = {0, 0, 0};
  if (argc == 7 && strcmp(argv[1], "--measure") == 0) return child(argv);
  if (R < 1 || R > MAXRUNS) R = 5;
  n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return 1;
  self[n] = '\0';
  for (int i = 0; i < R; i++) base[i] = spawn_one(self, "none", "-", zero);
  printf("bench_bigopen: open and one cell, medians of %d runs, each in a process of its own "
         "(a process that only starts: %.1f MB peak RSS)\n",
         R, median(base, R).rss / 1024.0);
  printf("%16s  %9s %9s %6s   %8s %8s %6s   %8s %8s %6s   %8s %8s %6s\n", "chunks", "open ms",
         "ref", "x", "RSS MB", "ref", "x", "cell ms", "ref", "x", "again ms", "ref", "x");
  if (argc > 3)
    for (int i = 3; i < argc; i++) bench_size(self, dir, atoll(argv[i]), R);
  else
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) bench_size(self, dir, sizes[i], R);
  return 0;
}

/*
 * bench_netcdf.c -- NetCDF import throughput against baselines measured in the same run.
 *
 *   make bench-netcdf                       (CATERVA_BENCH_NC_MB=512 by default)
 *   tests/bench/bench_netcdf [dir]          (dir: where the files go, default /tmp)
 *
 * It writes a NetCDF-4 file like an ERA5 download: float t2m(time, lat=721, lon=1440), one
 * time step per NetCDF chunk, shuffle + deflate level 1, a smooth field with noise rounded to
 * 0.01 K, CATERVA_BENCH_NC_MB megabytes of values. Then, each on the same file (in the page
 * cache after writing it, for all of them alike):
 *   read      nc_get_vara of every time step into memory: what reading the data costs
 *   nccopy    nccopy -k 64-bit-offset to an uncompressed NetCDF file: the floor the issue names
 *   import    caterva_netcdf_import with the defaults (zstd 5 + shuffle, 2 threads)
 * and the same import from the uncompressed NetCDF-3 copy against reading that copy. MB/s are
 * of uncompressed values (MiB = 2^20 bytes). One time step of each array is compared with
 * libnetcdf's values.
 */
#include "caterva_io.h"
#include "fsutil.h"

#include <math.h>
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#define NLAT 721
#define NLON 1440

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* CPU seconds used so far by this process and by its waited-for children (nccopy). */
static double cpu(void) {
  struct rusage a, b;
  getrusage(RUSAGE_SELF, &a);
  getrusage(RUSAGE_CHILDREN, &b);
  return (double)(a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec) +
         (a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec + b.ru_stime.tv_usec) * 1e-6;
}

static int check(int st, const char *what) {
  if (st != NC_NOERR) {
    fprintf(stderr, "bench_netcdf: %s: %s\n", what, nc_strerror(st));
    exit(1);
  }
  return st;
}

static int64_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* A day-like field: a meridional gradient, a seasonal wave, weather noise, 0.01 K steps. */
static void make_step(float *f, int t, unsigned *seed) {
  for (int i = 0; i < NLAT; i++) {
    double lat = -90.0 + 0.25 * i;
    for (int j = 0; j < NLON; j++) {
      double v = 288.0 - 40.0 * sin(lat * M_PI / 180.0) * sin(lat * M_PI / 180.0) +
                 8.0 * sin(2 * M_PI * t / 365.0) * sin(lat * M_PI / 180.0) +
                 3.0 * cos(j * M_PI / 180.0) + ((*seed = *seed * 1103515245u + 12345u) >> 16) % 200 / 100.0;
      f[(size_t)i * NLON + j] = (float)(round(v * 100.0) / 100.0);
    }
  }
}

static void write_file(const char *path, int ntime) {
  int ncid, dims[3], varid;
  size_t chunks[3] = {1, NLAT, NLON}, start[3] = {0, 0, 0}, count[3] = {1, NLAT, NLON};
  float *f = malloc(sizeof(float) * NLAT * NLON);
  unsigned seed = 1;
  check(nc_create(path, NC_CLOBBER | NC_NETCDF4, &ncid), "create");
  check(nc_def_dim(ncid, "time", NC_UNLIMITED, &dims[0]), "dim");
  check(nc_def_dim(ncid, "latitude", NLAT, &dims[1]), "dim");
  check(nc_def_dim(ncid, "longitude", NLON, &dims[2]), "dim");
  check(nc_def_var(ncid, "t2m", NC_FLOAT, 3, dims, &varid), "var");
  check(nc_def_var_chunking(ncid, varid, NC_CHUNKED, chunks), "chunking");
  check(nc_def_var_deflate(ncid, varid, 1, 1, 1), "deflate");
  check(nc_put_att_text(ncid, varid, "units", 1, "K"), "units");
  check(nc_enddef(ncid), "enddef");
  for (int t = 0; t < ntime; t++) {
    start[0] = (size_t)t;
    make_step(f, t, &seed);
    check(nc_put_vara_float(ncid, varid, start, count, f), "put");
  }
  check(nc_close(ncid), "close");
  free(f);
}

/* Read every time step of t2m into memory; returns seconds. */
static double read_all(const char *path, int ntime, double *sum) {
  int ncid, varid;
  size_t start[3] = {0, 0, 0}, count[3] = {1, NLAT, NLON};
  float *f = malloc(sizeof(float) * NLAT * NLON);
  double t0 = now();
  *sum = 0;
  check(nc_open(path, NC_NOWRITE, &ncid), "open");
  check(nc_inq_varid(ncid, "t2m", &varid), "varid");
  for (int t = 0; t < ntime; t++) {
    start[0] = (size_t)t;
    check(nc_get_vara_float(ncid, varid, start, count, f), "get");
    *sum += f[(size_t)t % (NLAT * NLON)];
  }
  nc_close(ncid);
  free(f);
  return now() - t0;
}

/* Import t2m of src into dst; seconds, or -1. Compares time step t with libnetcdf. */
static double import(caterva_ctx *ctx, const char *src, const char *dst, int t, int codec,
                     int64_t *cbytes, int *same) {
  caterva_netcdf_params p;
  caterva_array *a = NULL;
  double t0 = now(), secs;
  int ncid, varid;
  size_t start[3] = {(size_t)t, 0, 0}, count[3] = {1, NLAT, NLON};
  int64_t lo[3] = {t, 0, 0}, hi[3] = {t + 1, NLAT, NLON};
  float *x = malloc(sizeof(float) * NLAT * NLON), *y = malloc(sizeof(float) * NLAT * NLON);
  tu_rm_tree(dst);
  caterva_netcdf_params_init(&p);
  p.variable = "t2m";
  p.array.store = CATERVA_STORE_CONTIGUOUS;
  p.array.path = dst;
  if (codec >= 0) p.array.cparams.codec = codec;
  if (caterva_netcdf_import(ctx, src, &p, NULL, &a) != CATERVA_OK) {
    fprintf(stderr, "bench_netcdf: import: %s\n", caterva_ctx_errmsg(ctx));
    return -1;
  }
  secs = now() - t0;
  *cbytes = file_size(dst);
  check(nc_open(src, NC_NOWRITE, &ncid), "open");
  check(nc_inq_varid(ncid, "t2m", &varid), "varid");
  check(nc_get_vara_float(ncid, varid, start, count, x), "get");
  nc_close(ncid);
  *same = caterva_array_get_slice(ctx, a, lo, hi, y, sizeof(float) * NLAT * NLON) == CATERVA_OK &&
          memcmp(x, y, sizeof(float) * NLAT * NLON) == 0;
  caterva_array_free(a);
  free(x);
  free(y);
  return secs;
}

static double run(const char *cmd) {
  double t0 = now();
  if (system(cmd) != 0) {
    fprintf(stderr, "bench_netcdf: failed: %s\n", cmd);
    return -1;
  }
  return now() - t0;
}

/* One row: wall seconds, MiB/s, CPU seconds, and the time relative to the import's. */
static void row(const char *what, double secs, double cpus, double bytes, double ref) {
  printf("%-52s %8.2f %7.0f %8.2f %10.2f\n", what, secs, bytes / 1048576.0 / secs, cpus,
         ref / secs);
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : "/tmp";
  const char *mbs = getenv("CATERVA_BENCH_NC_MB"), *nccopy = getenv("NCCOPY");
  double mb = mbs ? atof(mbs) : 512, sum, t_write, t_read, t_copy, t_imp, t_read3, t_imp3, t_lz4;
  double c_read, c_copy, c_imp, c_read3, c_imp3, c_lz4, c0;
  int ntime = (int)ceil(mb * 1048576.0 / (4.0 * NLAT * NLON)), same4, same3, samel;
  char src[512], plain[512], dst[512], dst3[512], dstl[512], cmd[2048];
  caterva_ctx *ctx;
  int64_t cb4, cb3, cbl;
  double bytes;
  if (ntime < 1) ntime = 1;
  bytes = 4.0 * NLAT * NLON * ntime;
  snprintf(src, sizeof src, "%s/bench_nc4.nc", dir);
  snprintf(plain, sizeof plain, "%s/bench_nc3.nc", dir);
  snprintf(dst, sizeof dst, "%s/bench_nc4.b2nd", dir);
  snprintf(dst3, sizeof dst3, "%s/bench_nc3.b2nd", dir);
  snprintf(dstl, sizeof dstl, "%s/bench_nc4_lz4.b2nd", dir);
  if (caterva_ctx_new(2, &ctx) != CATERVA_OK) return 1;
  printf("t2m(time=%d, latitude=%d, longitude=%d) float32: %.0f MiB of values\n", ntime, NLAT,
         NLON, bytes / 1048576.0);
  t_write = now();
  write_file(src, ntime);
  t_write = now() - t_write;
  printf("NetCDF-4 source (chunks 1x721x1440, shuffle + deflate 1): %.0f MiB, written in %.1f s\n",
         file_size(src) / 1048576.0, t_write);
  c0 = cpu();
  t_read = read_all(src, ntime, &sum);
  c_read = cpu() - c0;
  snprintf(cmd, sizeof cmd, "'%s' -k 64-bit-offset '%s' '%s'", nccopy && *nccopy ? nccopy : "nccopy",
           src, plain);
  remove(plain);
  c0 = cpu();
  t_copy = run(cmd);
  c_copy = cpu() - c0;
  c0 = cpu();
  t_imp = import(ctx, src, dst, ntime / 2, -1, &cb4, &same4);
  c_imp = cpu() - c0;
  c0 = cpu();
  t_lz4 = import(ctx, src, dstl, ntime / 3, CATERVA_LZ4, &cbl, &samel);
  c_lz4 = cpu() - c0;
  c0 = cpu();
  t_read3 = read_all(plain, ntime, &sum);
  c_read3 = cpu() - c0;
  c0 = cpu();
  t_imp3 = import(ctx, plain, dst3, ntime - 1, -1, &cb3, &same3);
  c_imp3 = cpu() - c0;
  if (t_copy < 0 || t_imp < 0 || t_imp3 < 0 || t_lz4 < 0) return 1;
  printf("\n%-52s %8s %7s %8s %10s\n", "", "seconds", "MiB/s", "CPU s", "vs import");
  row("read NetCDF-4 with nc_get_vara (into memory)", t_read, c_read, bytes, t_imp);
  row("nccopy NetCDF-4 -> uncompressed NetCDF-3 (the floor)", t_copy, c_copy, bytes, t_imp);
  row("caterva_import NetCDF-4 -> b2nd (zstd 5, shuffle)", t_imp, c_imp, bytes, t_imp);
  row("caterva_import NetCDF-4 -> b2nd (lz4 5, shuffle)", t_lz4, c_lz4, bytes, t_imp);
  row("read uncompressed NetCDF-3 with nc_get_vara", t_read3, c_read3, bytes, t_imp3);
  row("caterva_import NetCDF-3 -> b2nd (zstd 5, shuffle)", t_imp3, c_imp3, bytes, t_imp3);
  printf("\n(CPU s: user + system seconds of all threads, and of nccopy for its row; vs import:\n"
         "the default import's seconds over the row's, the NetCDF-3 rows against the NetCDF-3 import)\n");
  printf("import / nccopy: %.2fx the floor's time (import is %s than nccopy); in CPU time %.2fx\n",
         t_imp / t_copy, t_imp < t_copy ? "faster" : "slower", c_imp / c_copy);
  printf("sizes: NetCDF-4 %.0f MiB, NetCDF-3 %.0f MiB, b2nd %.0f MiB (from NetCDF-4, zstd), %.0f MiB "
         "(lz4) and %.0f MiB (from NetCDF-3)\n", file_size(src) / 1048576.0,
         file_size(plain) / 1048576.0, cb4 / 1048576.0, cbl / 1048576.0, cb3 / 1048576.0);
  printf("one time step of each array equals libnetcdf's: %s\n",
         same4 && same3 && samel ? "yes" : "NO");
  remove(src);
  remove(plain);
  tu_rm_tree(dst);
  tu_rm_tree(dst3);
  tu_rm_tree(dstl);
  caterva_ctx_free(ctx);
  return same4 && same3 && samel ? 0 : 1;
}

/*
 * mkbcolz.c -- writes bcolz 1.x datasets for the tests, with the real c-blosc 1.x
 * (Debian's libblosc-dev; test-only, never linked into the library or the extension), in the
 * layout of shared/spec/bcolz-format.md: meta/sizes, meta/storage, __attrs__, data/__<k>.blp
 * (bloscpack header + one Blosc chunk), ctables with __rootdirs__ and one carray per column.
 *
 *   mkbcolz DIR            the test datasets in DIR (which must not exist), and for each
 *                          value array its raw C-order bytes (<name>.raw) and DIR/manifest.json
 *                          (carrays, the ctable "table", the ctable "table_nd" with N-d columns)
 *   mkbcolz --bench DIR N  a ctable of N rows for bench_bcolz (id int64 = the row number,
 *                          price float64, qty int32, flag bool; lz4 clevel 5 with shuffle,
 *                          the chunklens bcolz chooses for 10 M rows)
 *
 * Values are pseudo-random but reproducible (xorshift from a fixed seed), with the special
 * cases a reader must get right: NaN, NaT, uint64 above INT64_MAX, strings with non-ASCII,
 * invalid UTF-8 and embedded NULs, dates before 1970.
 */
#include <blosc.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) {
  uint64_t x = rng_state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  return rng_state = x;
}

static void die(const char *what, const char *path) {
  fprintf(stderr, "mkbcolz: %s %s: %s\n", what, path, strerror(errno));
  exit(1);
}

static void mkdir_p(const char *path) {
  if (mkdir(path, 0755) != 0 && errno != EEXIST) die("cannot create", path);
}

static void write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) die("cannot write", path);
}

static void write_text(const char *path, const char *s) { write_file(path, s, strlen(s)); }

/* ---- one carray ------------------------------------------------------------------------ */

typedef struct spec {
  const char *name;      /* dataset directory (relative to the output dir) */
  const char *bcolz;     /* dtype as bcolz writes it in meta/storage */
  const char *numpy;     /* the same for numpy in the test (byte order explicit) */
  int itemsize, typesize;
  int ndim;
  int64_t shape[4];
  int64_t chunklen;
  const char *cname;     /* NULL: no "cname" key (old files; bcolz reads blosclz) */
  int clevel, shuffle;
  int shuffle_bool;      /* write "shuffle": true/false as the seed doc shows */
  int blocksize;         /* forced Blosc blocksize, 0: automatic as bcolz does */
  const char *attrs;     /* __attrs__ content; NULL: no file */
} spec;

static int64_t nitems_of(const spec *s) {
  int64_t n = 1;
  for (int k = 0; k < s->ndim; k++) n *= s->shape[k];
  return n;
}

/* Write the carray s->name under dir from data (its C-order items). */
static void write_carray(const char *dir, const spec *s, const uint8_t *data) {
  char path[4096], json[1024];
  int64_t rowitems = 1, atom, len = s->shape[0], k, nchunks;
  size_t pos = 0;
  for (int d = 1; d < s->ndim; d++) rowitems *= s->shape[d];
  atom = rowitems * s->itemsize;
  snprintf(path, sizeof path, "%s/%s", dir, s->name);
  mkdir_p(path);
  snprintf(path, sizeof path, "%s/%s/meta", dir, s->name);
  mkdir_p(path);
  snprintf(path, sizeof path, "%s/%s/data", dir, s->name);
  mkdir_p(path);
  pos = (size_t)snprintf(json, sizeof json, "{\"shape\": [");
  for (int d = 0; d < s->ndim; d++)
    pos += (size_t)snprintf(json + pos, sizeof json - pos, "%s%lld", d ? ", " : "",
                            (long long)s->shape[d]);
  snprintf(json + pos, sizeof json - pos, "], \"nbytes\": %lld, \"cbytes\": %lld}\n",
           (long long)(len * atom), (long long)(s->chunklen * atom));
  snprintf(path, sizeof path, "%s/%s/meta/sizes", dir, s->name);
  write_text(path, json);
  pos = (size_t)snprintf(json, sizeof json, "{\"dtype\": \"%s\", \"cparams\": {\"clevel\": %d, "
                         "\"shuffle\": ", s->bcolz, s->clevel);
  if (s->shuffle_bool) pos += (size_t)snprintf(json + pos, sizeof json - pos, "%s",
                                               s->shuffle ? "true" : "false");
  else pos += (size_t)snprintf(json + pos, sizeof json - pos, "%d", s->shuffle);
  if (s->cname) pos += (size_t)snprintf(json + pos, sizeof json - pos, ", \"cname\": \"%s\", "
                                        "\"quantize\": 0", s->cname);
  snprintf(json + pos, sizeof json - pos, "}, \"chunklen\": %lld, \"expectedlen\": %lld, "
           "\"dflt\": 0}\n", (long long)s->chunklen, (long long)len);
  snprintf(path, sizeof path, "%s/%s/meta/storage", dir, s->name);
  write_text(path, json);
  if (s->attrs) {
    snprintf(path, sizeof path, "%s/%s/__attrs__", dir, s->name);
    write_text(path, s->attrs);
  }
  nchunks = len / s->chunklen + (len % s->chunklen != 0);
  for (k = 0; k < nchunks; k++) {
    int64_t rows = len - k * s->chunklen < s->chunklen ? len - k * s->chunklen : s->chunklen;
    size_t nbytes = (size_t)(rows * atom);
    uint8_t *out = malloc(nbytes + BLOSC_MAX_OVERHEAD + 16);
    int c;
    memcpy(out, "blpk\x01\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00", 16);
    /* as bcolz does (chunk.compress_data), with a forced blocksize for some tests */
    c = blosc_compress_ctx(s->clevel, s->shuffle, (size_t)s->typesize, nbytes,
                           data + k * s->chunklen * atom, out + 16, nbytes + BLOSC_MAX_OVERHEAD,
                           s->cname ? s->cname : "blosclz", (size_t)s->blocksize, 1);
    if (c <= 0) {
      fprintf(stderr, "mkbcolz: blosc_compress failed for %s\n", s->name);
      exit(1);
    }
    snprintf(path, sizeof path, "%s/%s/data/__%lld.blp", dir, s->name, (long long)k);
    write_file(path, out, (size_t)c + 16);
    free(out);
  }
}

/* ---- values ------------------------------------------------------------------------------- */

static void swap_items(uint8_t *p, int64_t n, int size) {
  for (int64_t i = 0; i < n; i++, p += size)
    for (int a = 0, b = size - 1; a < b; a++, b--) {
      uint8_t t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

/* Fill n items of kind k ('i' signed, 'u' unsigned, 'f' float, 'b' bool, 'S' bytes,
 * 'U' UCS-4, 'M' datetime ticks around unit scale, 'c' complex64, 'h' float16 bits). */
static void fill(uint8_t *p, int64_t n, char kind, int size, int64_t scale) {
  for (int64_t i = 0; i < n; i++, p += size) {
    uint64_t r = rnd();
    switch (kind) {
    case 'i': case 'u': {
      uint64_t v = (r & 3) == 0 ? rnd() : (uint64_t)(i % 1000) * 3 + (r >> 60);
      if (kind == 'i' && (r & 12) == 4) v = (uint64_t)-(int64_t)(v & 0xffff);
      memcpy(p, &v, (size_t)size);   /* low bytes (little-endian host) */
      break;
    }
    case 'b': p[0] = (uint8_t)(r & 1); break;
    case 'f':
      if (size == 8) {
        double d = (r % 97) == 0 ? NAN : (double)(i % 5000) * 0.25 - (double)(r % 1000) / 7.0;
        memcpy(p, &d, 8);
      } else {
        float f = (r % 89) == 0 ? NAN : (float)(i % 3000) * 0.5f + (float)(r % 100) / 3.0f;
        memcpy(p, &f, 4);
      }
      break;
    case 'h': {
      uint16_t h = (uint16_t)(0x3c00 + (r % 2048) - 1024);
      if (r % 53 == 0) h = 0x7e00;  /* NaN */
      memcpy(p, &h, 2);
      break;
    }
    case 'c': {
      float f[2] = {(float)(r % 1000) / 8.0f, -(float)(i % 77)};
      memcpy(p, f, 8);
      break;
    }
    case 'S': {
      static const char *const pick[] = {"", "a", "bc", "xyz", "\xc3\xa9t\xc3\xa9", "\xff\xfe",
                                         "a\0b", "12345678", "q"};
      const char *s = pick[r % 9];
      size_t len = (r % 9) == 6 ? 3 : strlen(s);
      memset(p, 0, (size_t)size);
      if ((r % 9) != 4 && (r % 9) != 5 && (r % 9) != 6 && (r >> 8) % 3 == 0) {
        /* an ASCII item of random length */
        len = (size_t)((r >> 16) % (uint64_t)(size + 1));
        for (size_t k = 0; k < len; k++) p[k] = (uint8_t)('a' + (rnd() % 26));
      } else {
        memcpy(p, s, len < (size_t)size ? len : (size_t)size);
      }
      break;
    }
    case 'U': {
      static const uint32_t cps[] = {'a', 'Z', '0', 0xe9, 0x4e2d, 0x1f600, ' ', 'k'};
      int nch = size / 4, len = (int)(r % (uint64_t)(nch + 1));
      memset(p, 0, (size_t)size);
      for (int k = 0; k < len; k++) {
        uint32_t c = cps[rnd() % 8];
        memcpy(p + 4 * k, &c, 4);
      }
      break;
    }
    case 'M': {
      int64_t v = (int64_t)(r % (uint64_t)(2 * scale)) - scale / 4;
      if (r % 61 == 0) v = INT64_MIN;  /* NaT */
      memcpy(p, &v, 8);
      break;
    }
    }
  }
}

/* ---- the manifest --------------------------------------------------------------------------- */

static FILE *manifest;
static int nmanifest;

static void manifest_carray(const spec *s, const char *kind, const char *raw) {
  fprintf(manifest, "%s\n  {\"name\": \"%s\", \"kind\": \"%s\", \"dtype\": \"%s\", \"shape\": [",
          nmanifest++ ? "," : "", s->name, kind, s->numpy);
  for (int d = 0; d < s->ndim; d++) fprintf(manifest, "%s%lld", d ? ", " : "", (long long)s->shape[d]);
  fprintf(manifest, "], \"chunklen\": %lld, \"itemsize\": %d, \"blocksize\": %d, "
          "\"codec\": \"%s\", \"clevel\": %d, \"shuffle\": %d, \"raw\": \"%s\"}",
          (long long)s->chunklen, s->itemsize, s->blocksize, s->cname ? s->cname : "blosclz",
          s->clevel, s->shuffle, raw);
}

/* Write a carray with values of kind, and its raw file. */
static void carray(const char *dir, const spec *s, char kind, int64_t scale, int bigendian) {
  int64_t n = nitems_of(s);
  uint8_t *data = malloc((size_t)(n * s->itemsize) + 1);
  char path[4096], raw[512];
  fill(data, n, kind, s->itemsize, scale);
  if (bigendian) swap_items(data, n, s->itemsize);
  write_carray(dir, s, data);
  snprintf(raw, sizeof raw, "%s.raw", s->name);
  snprintf(path, sizeof path, "%s/%s", dir, raw);
  write_file(path, data, (size_t)(n * s->itemsize));
  manifest_carray(s, "carray", raw);
  free(data);
}

#define ATTRS_RICH "{\"units\": \"m/s\", \"scale\": 2.5, \"n\": 3, \"flags\": [true, null], " \
                   "\"nested\": {\"a\": \"\\u00e9\\ud83d\\ude00\"}, \"big\": 12345678901234, " \
                   "\"nan\": NaN}\n"

static void make_carrays(const char *dir) {
  /* Forced blocksizes stay only where c-blosc 1.x does not split (zstd, or typesize > 16):
   * for split codecs it enlarges blocks to >= 64 KB, as in most real bcolz files.
   * name, bcolz dtype, numpy dtype, itemsize, typesize, ndim, shape, chunklen, cname,
   * clevel, shuffle, shuffle_bool, blocksize, attrs */
  static const struct { spec s; char kind; int64_t scale; int be; } t[] = {
    {{"i32_blocks", "int32", "<i4", 4, 4, 1, {100000}, 10000, "zstd", 5, 1, 0, 4096, "{}\n"}, 'i', 0, 0},
    {{"i32_auto", "int32", "<i4", 4, 4, 1, {100000}, 65536, "lz4", 5, 1, 0, 0, ATTRS_RICH}, 'i', 0, 0},
    {{"bool", "bool", "|b1", 1, 1, 1, {30001}, 7000, "zstd", 5, 1, 0, 1024, NULL}, 'b', 0, 0},
    {{"i8", "int8", "|i1", 1, 1, 1, {20000}, 3000, "blosclz", 5, 1, 0, 0, "\n"}, 'i', 0, 0},
    {{"u8", "uint8", "|u1", 1, 1, 1, {20000}, 3000, "zstd", 3, 0, 0, 0, "   \n"}, 'u', 0, 0},
    {{"i16", "int16", "<i2", 2, 2, 1, {20000}, 3001, "zlib", 5, 1, 0, 0, "{}\n"}, 'i', 0, 0},
    {{"u16", "uint16", "<u2", 2, 2, 1, {20000}, 3001, "lz4hc", 5, 2, 0, 0, "{}\n"}, 'u', 0, 0},
    {{"u32", "uint32", "<u4", 4, 4, 1, {20000}, 4096, "snappy", 5, 1, 0, 0, "{}\n"}, 'u', 0, 0},
    {{"i64", "int64", "<i8", 8, 8, 1, {20000}, 4000, "zstd", 5, 1, 0, 2048, "{}\n"}, 'i', 0, 0},
    {{"u64", "uint64", "<u8", 8, 8, 1, {20000}, 4000, "lz4", 9, 2, 0, 0, "{}\n"}, 'u', 0, 0},
    {{"f16", "float16", "<f2", 2, 2, 1, {10000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'h', 0, 0},
    {{"f32", "float32", "<f4", 4, 4, 1, {20000}, 6000, "blosclz", 7, 1, 0, 0, "{}\n"}, 'f', 0, 0},
    {{"f64", "float64", "<f8", 8, 8, 1, {20000}, 6000, "zstd", 1, 1, 0, 0, "{}\n"}, 'f', 0, 0},
    {{"c64", "complex64", "<c8", 8, 8, 1, {5000}, 1000, "lz4", 5, 1, 0, 0, "{}\n"}, 'c', 0, 0},
    {{"be_i4", ">i4", ">i4", 4, 4, 1, {20000}, 5000, "lz4", 5, 1, 0, 0, "{}\n"}, 'i', 0, 1},
    {{"be_u2", ">u2", ">u2", 2, 2, 1, {20000}, 5000, "zlib", 5, 1, 0, 0, "{}\n"}, 'u', 0, 1},
    {{"be_f8", ">f8", ">f8", 8, 8, 1, {20000}, 5000, "zstd", 5, 2, 0, 0, "{}\n"}, 'f', 0, 1},
    {{"be_M8", ">M8[s]", ">M8[s]", 8, 8, 1, {5000}, 1000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 2000000000, 1},
    {{"s5", "|S5", "|S5", 5, 1, 1, {20000}, 3333, "zstd", 5, 1, 0, 512, "{}\n"}, 'S', 0, 0},
    {{"u3", "<U3", "<U3", 12, 4, 1, {20000}, 3000, "zstd", 5, 1, 0, 1000, "{}\n"}, 'U', 0, 0},
    {{"dt_ns", "datetime64[ns]", "<M8[ns]", 8, 8, 1, {20000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 4000000000000000000, 0},
    {{"dt_us", "datetime64[us]", "<M8[us]", 8, 8, 1, {5000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 4000000000000000, 0},
    {{"dt_ms", "datetime64[ms]", "<M8[ms]", 8, 8, 1, {5000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 4000000000000, 0},
    {{"dt_s", "datetime64[s]", "<M8[s]", 8, 8, 1, {5000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 4000000000, 0},
    {{"dt_m", "datetime64[m]", "<M8[m]", 8, 8, 1, {5000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 60000000, 0},
    {{"dt_h", "datetime64[h]", "<M8[h]", 8, 8, 1, {5000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 1000000, 0},
    {{"dt_D", "datetime64[D]", "<M8[D]", 8, 8, 1, {5000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 40000, 0},
    {{"dt_W", "datetime64[W]", "<M8[W]", 8, 8, 1, {5000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 6000, 0},
    {{"dt_M", "datetime64[M]", "<M8[M]", 8, 8, 1, {5000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 1400, 0},
    {{"dt_Y", "datetime64[Y]", "<M8[Y]", 8, 8, 1, {5000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 120, 0},
    {{"td_s", "timedelta64[s]", "<m8[s]", 8, 8, 1, {5000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 100000, 0},
    /* N-d, leftover rows; clevel 0; an old storage file (shuffle true, no cname) */
    {{"nd_f8", "float64", "<f8", 8, 8, 3, {50, 7, 3}, 8, "zstd", 5, 1, 0, 256, "{}\n"}, 'f', 0, 0},
    {{"nd_s5", "|S5", "|S5", 5, 1, 2, {301, 13}, 40, "zstd", 5, 1, 0, 300, "{}\n"}, 'S', 0, 0},
    {{"nd_u3", "<U3", "<U3", 12, 4, 2, {70, 9}, 16, "blosclz", 5, 1, 0, 0, "{}\n"}, 'U', 0, 0},
    {{"clevel0", "float32", "<f4", 4, 4, 1, {10000}, 3000, "lz4", 0, 1, 0, 0, "{}\n"}, 'f', 0, 0},
    {{"old_meta", "int16", "<i2", 2, 2, 1, {10000}, 3000, NULL, 5, 1, 1, 0, NULL}, 'i', 0, 0},
    {{"tiny", "int64", "<i8", 8, 8, 1, {10}, 4, "lz4", 5, 1, 0, 0, "{}\n"}, 'i', 0, 0},
    {{"empty", "float64", "<f8", 8, 8, 1, {0}, 2048, "lz4", 5, 1, 0, 0, "{}\n"}, 'f', 0, 0},
    {{"empty_nd", "int32", "<i4", 4, 4, 2, {0, 5}, 100, "lz4", 5, 1, 0, 0, "{}\n"}, 'i', 0, 0},
    {{"exact", "int32", "<i4", 4, 4, 1, {8000}, 4000, "lz4", 5, 1, 0, 0, "{}\n"}, 'i', 0, 0},
    /* a multiple of a unit: 5-minute ticks */
    {{"dt_5m", "datetime64[5m]", "<M8[5m]", 8, 8, 1, {5000}, 3000, "lz4", 5, 1, 0, 0, "{}\n"}, 'M', 12000000, 0},
  };
  for (size_t k = 0; k < sizeof t / sizeof t[0]; k++) carray(dir, &t[k].s, t[k].kind, t[k].scale, t[k].be);
  /* "exact": a stale leftover file from before a trim (bcolz leaves it): must be ignored */
  {
    char path[4096];
    snprintf(path, sizeof path, "%s/exact/data/__2.blp", dir);
    write_text(path, "stale leftover chunk: never read");
  }
}

/* ---- the ctable ------------------------------------------------------------------------------ */

static void make_ctable(const char *dir, const char *name, int64_t n, int bench) {
  static const struct { spec s; char kind; int64_t scale; } test_cols[] = {
    {{"id", "int64", "<i8", 8, 8, 1, {0}, 3000, "zstd", 5, 1, 0, 2048, "{\"role\": \"key\"}\n"}, 'i', 0},
    {{"price", "float64", "<f8", 8, 8, 1, {0}, 1024, "zstd", 5, 1, 0, 0, "{}\n"}, 'f', 0},
    {{"name", "|S8", "|S8", 8, 1, 1, {0}, 5000, "blosclz", 5, 1, 0, 0, "{}\n"}, 'S', 0},
    {{"when", "datetime64[us]", "<M8[us]", 8, 8, 1, {0}, 777, "lz4hc", 5, 2, 0, 0, "{}\n"}, 'M', 4000000000000000},
    {{"ok", "bool", "|b1", 1, 1, 1, {0}, 4096, "zlib", 5, 0, 0, 0, "{}\n"}, 'b', 0},
  };
  /* bench: bcolz's automatic chunklens for 10 M rows (utils.calc_chunksize) */
  static const struct { spec s; char kind; int64_t scale; } bench_cols[] = {
    {{"id", "int64", "<i8", 8, 8, 1, {0}, 16384, "lz4", 5, 1, 0, 0, "{}\n"}, 'i', 0},
    {{"price", "float64", "<f8", 8, 8, 1, {0}, 16384, "lz4", 5, 1, 0, 0, "{}\n"}, 'f', 0},
    {{"qty", "int32", "<i4", 4, 4, 1, {0}, 32768, "lz4", 5, 1, 0, 0, "{}\n"}, 'i', 0},
    {{"flag", "bool", "|b1", 1, 1, 1, {0}, 131072, "lz4", 5, 1, 0, 0, "{}\n"}, 'b', 0},
  };
  int ncols = bench ? 4 : 5;
  char root[4096], path[4200], rootdirs[512];
  size_t pos;
  snprintf(root, sizeof root, "%s/%s", dir, name);
  mkdir_p(root);
  pos = (size_t)snprintf(rootdirs, sizeof rootdirs, "{\"names\": [");
  for (int c = 0; c < ncols; c++)
    pos += (size_t)snprintf(rootdirs + pos, sizeof rootdirs - pos, "%s\"%s\"", c ? ", " : "",
                            bench ? bench_cols[c].s.name : test_cols[c].s.name);
  snprintf(rootdirs + pos, sizeof rootdirs - pos, "]}\n");
  snprintf(path, sizeof path, "%s/__rootdirs__", root);
  write_text(path, rootdirs);
  snprintf(path, sizeof path, "%s/__attrs__", root);
  write_text(path, "{\"source\": \"mkbcolz\", \"rows\": 1}\n");
  if (!bench) {
    fprintf(manifest, "%s\n  {\"name\": \"%s\", \"kind\": \"ctable\", \"len\": %lld, \"columns\": [",
            nmanifest++ ? "," : "", name, (long long)n);
  }
  for (int c = 0; c < ncols; c++) {
    spec s = bench ? bench_cols[c].s : test_cols[c].s;
    char kind = bench ? bench_cols[c].kind : test_cols[c].kind;
    int64_t scale = bench ? bench_cols[c].scale : test_cols[c].scale;
    uint8_t *data = malloc((size_t)(n * s.itemsize) + 1);
    char sub[600];
    s.shape[0] = n;
    fill(data, n, kind, s.itemsize, scale);
    if (bench && c == 0)   /* ids: the row number */
      for (int64_t i = 0; i < n; i++) memcpy(data + 8 * i, &i, 8);
    snprintf(sub, sizeof sub, "%s/%s", name, s.name);
    s.name = sub;
    write_carray(dir, &s, data);
    if (!bench) {
      snprintf(path, sizeof path, "%s/%s.%s.raw", dir, name, test_cols[c].s.name);
      fprintf(manifest, "%s{\"name\": \"%s\", \"dtype\": \"%s\", \"chunklen\": %lld, "
              "\"raw\": \"%s.%s.raw\"}", c ? ", " : "", test_cols[c].s.name, s.numpy,
              (long long)s.chunklen, name, test_cols[c].s.name);
    }
    if (!bench) write_file(path, data, (size_t)(n * s.itemsize));
    free(data);
  }
  if (!bench) fprintf(manifest, "]}");
}

/* A ctable with N-d columns (each row of such a column is an array of items): manifest kind
 * "ctable_nd", each column with its shape. */
static void make_ctable_nd(const char *dir, const char *name, int64_t n) {
  static const struct { spec s; char kind; } cols[] = {
    {{"id", "int32", "<i4", 4, 4, 1, {0}, 100, "lz4", 5, 1, 0, 0, "{}\n"}, 'i'},
    /* forced 512-byte blocks: a row of 3 float64 straddles blocks now and then */
    {{"vec", "float64", "<f8", 8, 8, 2, {0, 3}, 64, "zstd", 5, 1, 0, 512, "{}\n"}, 'f'},
    {{"tag", "|S3", "|S3", 3, 1, 2, {0, 2}, 200, "zstd", 5, 1, 0, 256, "{}\n"}, 'S'},
    {{"grid", ">i2", ">i2", 2, 2, 3, {0, 2, 2}, 128, "blosclz", 5, 2, 0, 0, "{}\n"}, 'i'},
  };
  int ncols = (int)(sizeof cols / sizeof cols[0]);
  char root[4096], path[4200];
  snprintf(root, sizeof root, "%s/%s", dir, name);
  mkdir_p(root);
  snprintf(path, sizeof path, "%s/__rootdirs__", root);
  write_text(path, "{\"names\": [\"id\", \"vec\", \"tag\", \"grid\"]}\n");
  fprintf(manifest, "%s\n  {\"name\": \"%s\", \"kind\": \"ctable_nd\", \"len\": %lld, "
          "\"columns\": [", nmanifest++ ? "," : "", name, (long long)n);
  for (int c = 0; c < ncols; c++) {
    spec s = cols[c].s;
    int64_t items;
    uint8_t *data;
    char sub[600];
    s.shape[0] = n;
    items = nitems_of(&s);
    data = malloc((size_t)(items * s.itemsize) + 1);
    fill(data, items, cols[c].kind, s.itemsize, 0);
    if (s.bcolz[0] == '>') swap_items(data, items, s.itemsize);
    snprintf(sub, sizeof sub, "%s/%s", name, s.name);
    s.name = sub;
    write_carray(dir, &s, data);
    snprintf(path, sizeof path, "%s/%s.%s.raw", dir, name, cols[c].s.name);
    write_file(path, data, (size_t)(items * s.itemsize));
    fprintf(manifest, "%s{\"name\": \"%s\", \"dtype\": \"%s\", \"shape\": [", c ? ", " : "",
            cols[c].s.name, s.numpy);
    for (int d = 0; d < s.ndim; d++) fprintf(manifest, "%s%lld", d ? ", " : "", (long long)s.shape[d]);
    fprintf(manifest, "], \"chunklen\": %lld, \"raw\": \"%s.%s.raw\"}", (long long)s.chunklen,
            name, cols[c].s.name);
    free(data);
  }
  fprintf(manifest, "]}");
}

int main(int argc, char **argv) {
  char path[4096];
  blosc_init();
  blosc_set_nthreads(1);
  if (argc == 4 && strcmp(argv[1], "--bench") == 0) {
    int64_t n = atoll(argv[3]);
    char *slash = strrchr(argv[2], '/');
    char parent[4096];
    if (slash) {
      snprintf(parent, sizeof parent, "%.*s", (int)(slash - argv[2]), argv[2]);
      make_ctable(parent, slash + 1, n, 1);
    } else {
      make_ctable(".", argv[2], n, 1);
    }
    return 0;
  }
  if (argc != 2) {
    fprintf(stderr, "usage: mkbcolz DIR | mkbcolz --bench DIR NROWS\n");
    return 2;
  }
  if (mkdir(argv[1], 0755) != 0) die("cannot create", argv[1]);
  snprintf(path, sizeof path, "%s/manifest.json", argv[1]);
  manifest = fopen(path, "w");
  if (manifest == NULL) die("cannot create", path);
  fprintf(manifest, "{\"datasets\": [");
  make_carrays(argv[1]);
  make_ctable(argv[1], "table", 25000, 0);
  make_ctable_nd(argv[1], "table_nd", 1000);
  fprintf(manifest, "\n]}\n");
  fclose(manifest);
  blosc_destroy();
  return 0;
}

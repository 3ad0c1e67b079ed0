/*
 * interop_bcolz.c -- bcolz datasets converted by caterva_import (issue 11), for the interop
 * writer test. tests/tools/mkbcolz (built when configure found libblosc-dev) writes bcolz
 * carrays and a ctable with the real c-blosc 1.x into a scratch directory; each chosen one is
 * converted through SQL (caterva_import, default options: chunks of the bcolz chunklen rows,
 * zstd 5 + shuffle) into bz<NN>_<name>.b2nd here, with raw/bz<NN>_<name>.raw its items as
 * stored (big-endian for '>' dtypes), and listed in manifest_bcolz.json (name, file, source,
 * dtype, shape, chunkshape, raw_file, raw_sha256). Checked here: each reopens, carries both
 * metalayers, and reads back equal to the raw bytes.
 */
#define _XOPEN_SOURCE 700
#include "interop.h"

#include "cat_internal.h" /* cat_codec_available: snappy is optional */
#include "fsutil.h"
#include "sha256.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct { const char *src, *col; } BCOLZ_CASES[] = {
    {"i32_blocks", NULL}, {"i32_auto", NULL}, {"bool", NULL},    {"i8", NULL},
    {"u16", NULL},        {"u32", NULL},      {"i64", NULL},     {"u64", NULL},
    {"f16", NULL},        {"f32", NULL},      {"f64", NULL},     {"c64", NULL},
    {"be_i4", NULL},      {"be_f8", NULL},    {"s5", NULL},      {"u3", NULL},
    {"dt_ns", NULL},      {"td_s", NULL},     {"nd_f8", NULL},   {"nd_s5", NULL},
    {"clevel0", NULL},    {"tiny", NULL},     {"empty", NULL},   {"exact", NULL},
    {"table", "id"},      {"table", "price"}, {"table", "name"}, {"table", "when"},
    {"table", "ok"},
};

static int bcolz_has_meta(caterva_array *a, const char *name) {
  const uint8_t *p;
  int32_t n;
  return caterva_schunk_meta_get(caterva_array_schunk(a), name, &p, &n) >= 0;
}

/* A build without libsnappy (configure --without-snappy) refuses the snappy carray u32. */
static int g_bcolz_refused;

/* Convert one case; returns 1 when written and checked (or, for a snappy carray in a build
 * without libsnappy, refused with "built without snappy" and nothing written). */
static int bcolz_case(caterva_ctx *ctx, sqlite3 *db, const char *data, const char *dir, int k,
                      FILE *man) {
  char src[4300], name[200], file[4400], rawsrc[4400], rawdst[4400], sql[9200], hex[65];
  const char *s = BCOLZ_CASES[k].src, *col = BCOLZ_CASES[k].col;
  char *msg = NULL;
  size_t rl = 0;
  uint8_t *raw, *got = NULL;
  caterva_array *a = NULL;
  int ok = 0;
  snprintf(name, sizeof name, "bz%02d_%s%s%s", k + 1, s, col ? "_" : "", col ? col : "");
  snprintf(src, sizeof src, "%s/%s", data, s);
  snprintf(file, sizeof file, "%s/%s.b2nd", dir, name);
  snprintf(rawsrc, sizeof rawsrc, "%s/%s%s%s.raw", data, s, col ? "." : "", col ? col : "");
  snprintf(rawdst, sizeof rawdst, "%s/raw/%s.raw", dir, name);
  snprintf(sql, sizeof sql, "SELECT caterva_import('%s', '%s', %s%s%s)", src, file,
           col ? "'" : "", col ? col : "NULL", col ? "'" : "");
  raw = slurp(rawsrc, &rl);
  if (!cat_codec_available(CATERVA_SNAPPY) && strcmp(s, "u32") == 0) {   /* mkbcolz: snappy */
    ok = raw != NULL && sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK && msg != NULL &&
         strstr(msg, "built without snappy") != NULL && access(file, F_OK) != 0;
    tap_diag("%s: %s", name, msg ? msg : "converted, but this build has no snappy");
    g_bcolz_refused += ok;
    goto leave;
  }
  if (raw == NULL || tu_write_file(rawdst, raw, rl) != 0 ||
      sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    tap_diag("%s: %s", name, msg ? msg : "cannot read or write the raw bytes");
    goto leave;
  }
  if (caterva_array_open(ctx, file, CATERVA_OPEN_READ, &a) != 0) goto leave;
  got = malloc(rl + 1);
  ok = got && bcolz_has_meta(a, "caterva") && bcolz_has_meta(a, "b2nd") &&
       caterva_array_nitems(a) * caterva_array_itemsize(a) == (int64_t)rl &&
       caterva_array_to_buffer(ctx, a, got, (int64_t)rl) == 0 && memcmp(got, raw, rl) == 0;
  if (ok) {
    int nd = caterva_array_ndim(a);
    int64_t v[CATERVA_MAX_DIM];
    cat_sha256_hex(raw, rl, hex);
    fprintf(man, "%s\n  {\"name\": \"%s\", \"file\": \"%s.b2nd\", \"source\": \"bcolz %s%s%s "
            "(mkbcolz, c-blosc 1.x) via caterva_import\", \"dtype\": ", k ? "," : "", name, name,
            s, col ? " column " : "", col ? col : "");
    json_str(man, caterva_array_dtype(a));
    fprintf(man, ", \"shape\": ");
    json_i64s(man, caterva_array_shape(a), nd);
    for (int d = 0; d < nd; d++) v[d] = caterva_array_chunkshape(a)[d];
    fprintf(man, ", \"chunkshape\": ");
    json_i64s(man, v, nd);
    fprintf(man, ", \"raw_file\": \"raw/%s.raw\", \"raw_nbytes\": %zu, \"raw_sha256\": \"%s\"}",
            name, rl, hex);
  }
leave:
  sqlite3_free(msg);
  caterva_array_free(a);
  free(got);
  free(raw);
  return ok;
}

void write_bcolz_cases(caterva_ctx *ctx, const char *dir, const char *argv0) {
  char mk[4096], tmp[] = "/tmp/interop_bcolz.XXXXXX", data[64], path[4200], err[512];
  const char *slash = strrchr(argv0, '/');
  int n = 0, total = (int)(sizeof BCOLZ_CASES / sizeof BCOLZ_CASES[0]), status;
  sqlite3 *db = NULL;
  FILE *man;
  snprintf(mk, sizeof mk, "%.*s/../tools/mkbcolz", slash ? (int)(slash - argv0) : 1,
           slash ? argv0 : ".");
  snprintf(path, sizeof path, "%s/manifest_bcolz.json", dir);
  remove(path);
  if (access(mk, X_OK) != 0) {
    tap_ok(1, "# SKIP bcolz conversions: %s not built (no libblosc-dev)", mk);
    return;
  }
  if (mkdtemp(tmp) == NULL) {
    tap_ok(0, "bcolz conversions: scratch directory");
    return;
  }
  snprintf(data, sizeof data, "%s/data", tmp);
  snprintf(path, sizeof path, "'%s' '%s' >/dev/null", mk, data);
  status = system(path);
  man = NULL;
  if (status == 0 && (db = open_ext_db(err, sizeof err)) != NULL) {
    snprintf(path, sizeof path, "%s/manifest_bcolz.json", dir);
    man = fopen(path, "w");
  }
  if (man != NULL) {
    fprintf(man, "{\n \"generator\": \"caterva-sqlite caterva_import of bcolz datasets written by "
            "tests/tools/mkbcolz\",\n \"byte_order\": \"raw files hold the items as stored: "
            "little-endian, except '>' dtypes\",\n \"cases\": [");
    for (int k = 0; k < total; k++) n += bcolz_case(ctx, db, data, dir, k, man);
    fprintf(man, "\n ]\n}\n");
    fclose(man);
  }
  sqlite3_close(db);
  tap_ok(man != NULL && n == total, "bcolz datasets converted by caterva_import: %d of %d reopen "
         "with both metalayers and equal their raw bytes%s", n - g_bcolz_refused, total,
         g_bcolz_refused ? " (the snappy one refused: this build has no libsnappy)" : "");
  tu_rm_tree(tmp);
}

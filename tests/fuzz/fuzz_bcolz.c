/*
 * fuzz_bcolz.c -- libFuzzer target: arbitrary bytes as the files of a bcolz carray (meta/sizes,
 * meta/storage, __attrs__ and the chunk files), opened and read item by item; and the whole
 * input through the JSON reader, whose output must parse again; the __attrs__ part also as
 * the ctable.json of a converted ctable (caterva_bcolz_converted_names). Any outcome but a
 * crash, a sanitizer report or a hang is fine.
 *
 * Input layout: three parts each prefixed by a u16 LE length (sizes, storage, attrs), then the
 * bytes of data/__0.blp; data/__1.blp and the following are copies of it (a short input that
 * claims many rows reads them all). The files go to a directory of this process under /dev/shm
 * (or $FUZZ_BCOLZ_DIR, else $TMPDIR).
 */
#include "caterva_io.h"
#include "json_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_ITEMS (1 << 20)
#define FUZZ_MAX_CHUNKS 8

static char root[256];

static void put(const char *rel, const uint8_t *p, size_t n) {
  char path[512];
  FILE *f;
  snprintf(path, sizeof path, "%s/%s", root, rel);
  f = fopen(path, "wb");
  if (f == NULL) return;
  if (n) fwrite(p, 1, n, f);
  fclose(f);
}

static void cleanup(void) {
  static const char *const rel[] = {"meta/sizes", "meta/storage", "__attrs__", "ctable.json",
                                      "meta", "data"};
  char path[512];
  for (int k = 0; k < FUZZ_MAX_CHUNKS; k++) {
    snprintf(path, sizeof path, "%s/data/__%d.blp", root, k);
    unlink(path);
  }
  for (size_t k = 0; k < sizeof rel / sizeof rel[0]; k++) {
    snprintf(path, sizeof path, "%s/%s", root, rel[k]);
    if (unlink(path) != 0) rmdir(path);
  }
  rmdir(root);
}

static int setup(void) {
  /* /dev/shm when it exists: eleven files written per input on a disk file system made this
   * target run a hundred inputs a second. FUZZ_BCOLZ_DIR overrides. */
  const char *tmp = getenv("FUZZ_BCOLZ_DIR");
  char path[300];
  if (root[0]) return 0;
  if (tmp == NULL || *tmp == 0) tmp = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : NULL;
  if (tmp == NULL || *tmp == 0) tmp = getenv("TMPDIR");
  snprintf(root, sizeof root, "%s/fuzz_bcolz.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
  if (mkdtemp(root) == NULL) return -1;
  snprintf(path, sizeof path, "%s/meta", root);
  mkdir(path, 0755);
  snprintf(path, sizeof path, "%s/data", root);
  mkdir(path, 0755);
  atexit(cleanup);
  return 0;
}

/* One u16-prefixed part; NULL when the input is too short. */
static const uint8_t *part(const uint8_t **p, size_t *left, size_t *n) {
  const uint8_t *q;
  if (*left < 2) return NULL;
  *n = (size_t)((*p)[0] | (*p)[1] << 8);
  if (*n > *left - 2) *n = *left - 2;
  q = *p + 2;
  *p += 2 + *n;
  *left -= 2 + *n;
  return q;
}

static void read_all(caterva_ctx *ctx, caterva_bcolz *b) {
  for (int c = 0; c < caterva_bcolz_ncols(b); c++) {
    const caterva_bcolz_column *col = caterva_bcolz_column_get(b, c);
    caterva_bcolz_reader *r = NULL;
    int64_t n = 1, i = 0;
    for (int k = 0; k < col->ndim; k++) n = col->shape[k] > FUZZ_MAX_ITEMS ? FUZZ_MAX_ITEMS
                                           : n * col->shape[k];
    if (n > FUZZ_MAX_ITEMS) n = FUZZ_MAX_ITEMS;
    if (caterva_bcolz_reader_new(ctx, b, c, &r) < 0) continue;
    while (i < n) {
      const uint8_t *p;
      int64_t got;
      if (caterva_bcolz_reader_items(ctx, r, i, n - i, &p, &got) < 0) break;
      i += got;
    }
    caterva_bcolz_reader_free(r);
  }
}

static void json_roundtrip(const uint8_t *data, size_t size) {
  cat_json *v = NULL, *w = NULL;
  char *t;
  if (cat_json_parse(NULL, (const char *)data, size, "fuzz", &v) < 0) return;
  t = cat_json_text(v);
  if (t && cat_json_parse(NULL, t, strlen(t), "fuzz", &w) < 0) abort();
  free(t);
  cat_json_free(v);
  cat_json_free(w);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *p = data, *s, *st, *at;
  size_t left = size, ns, nst, nat;
  caterva_ctx *ctx = NULL;
  caterva_bcolz *b = NULL;
  json_roundtrip(data, size);
  if (setup() < 0 || (s = part(&p, &left, &ns)) == NULL || (st = part(&p, &left, &nst)) == NULL ||
      (at = part(&p, &left, &nat)) == NULL)
    return 0;
  put("meta/sizes", s, ns);
  put("meta/storage", st, nst);
  put("__attrs__", at, nat);
  for (int k = 0; k < FUZZ_MAX_CHUNKS; k++) {
    char rel[32];
    snprintf(rel, sizeof rel, "data/__%d.blp", k);
    put(rel, p, left);
  }
  if (caterva_ctx_new(1, &ctx) < 0) return 0;
  if (caterva_bcolz_open(ctx, root, &b) == 0) read_all(ctx, b);
  caterva_bcolz_free(b);
  {   /* the attrs part as a converted ctable's manifest */
    char **names = NULL;
    int n = 0;
    put("ctable.json", at, nat);
    if (caterva_bcolz_converted_names(ctx, root, &names, &n) == 0 && (names == NULL || n < 1))
      abort();
    caterva_bcolz_names_free(names, n);
  }
  caterva_ctx_free(ctx);
  return 0;
}

/*
 * test_zero_extent.c -- arrays whose chunk or block shape has an extent of 0, through the C API.
 *
 * The b2nd and caterva metalayers may say chunkshape or blockshape 0 on an axis of length 0
 * (cat_meta_validate allows it there and nowhere else): such an array holds no item and can
 * never hold one. It opens and reads as the empty array; every write or growth fails with
 * CATERVA_E_READONLY and leaves the file byte-identical; nothing divides by the zero (a
 * malformed file with chunkshape [0, 67108869] used to kill the process with SIGFPE on its
 * first write). A zero extent on an axis of positive length is refused at open.
 *
 * The files are made by creating an empty array with chunks [6, 7] and blocks [3, 5] and
 * setting one extent to 0 in both metalayers, for each axis, part and file store.
 */
#define _XOPEN_SOURCE 700
#include "array_layer_internal.h"
#include "fsutil.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static caterva_ctx *ctx;
static char tmpdir[256];

/* Set element `axis` of every msgpack pair [d2 a, d2 b] equal to (a, b) to 0; returns how
 * many pairs were patched (2: the b2nd and the caterva metalayers). */
static int patch_pair(uint8_t *buf, size_t len, int32_t a, int32_t b, int axis) {
  uint8_t pat[11] = {0x92, 0xd2, 0, 0, 0, (uint8_t)a, 0xd2, 0, 0, 0, (uint8_t)b};
  int n = 0;
  for (size_t i = 0; i + sizeof pat <= len; i++) {
    if (memcmp(buf + i, pat, sizeof pat) != 0) continue;
    memset(buf + i + 2 + 5 * axis, 0, 4);
    n++;
  }
  return n;
}

/* A new empty array at path with shape 0 on axis `zaxis` (10 on the other), then its chunk
 * (part 0) or block (part 1) extent on axis `paxis` set to 0. Returns the metalayer file. */
static int make(const char *path, int store, int zaxis, int part, int paxis, char *meta,
                size_t cap) {
  caterva_array_params p;
  caterva_array *a = NULL;
  uint8_t *buf;
  size_t len = 0;
  int n = -1;
  caterva_array_params_init(&p);
  p.ndim = 2;
  p.itemsize = 4;
  p.dtype = "<f4";
  p.shape[0] = zaxis == 0 ? 0 : 10;
  p.shape[1] = zaxis == 1 ? 0 : 10;
  p.chunkshape[0] = 6, p.chunkshape[1] = 7;
  p.blockshape[0] = 3, p.blockshape[1] = 5;
  p.store = store;
  p.path = path;
  if (caterva_array_create(ctx, &p, 0, NULL, &a) != CATERVA_OK) {
    tap_diag("create: %s", caterva_ctx_errmsg(ctx));
    return -1;
  }
  caterva_array_free(a);
  snprintf(meta, cap, "%s%s", path, store == CATERVA_STORE_SPARSE ? "/chunks.b2frame" : "");
  if ((buf = tu_read_file(meta, &len)) == NULL) return -1;
  n = part == 0 ? patch_pair(buf, len, 6, 7, paxis) : patch_pair(buf, len, 3, 5, paxis);
  if (tu_write_file(meta, buf, len) != 0) n = -1;
  free(buf);
  return n;
}

/* Every write and growth fails cleanly; every read gives the empty array. */
static void drive(caterva_array *a, const char *label) {
  const int64_t *shape = caterva_array_shape(a);
  int64_t start[2] = {0, 0}, stop[2] = {shape[0], shape[1]}, grown[2] = {4, 10};
  int64_t coord[2] = {0, 0};
  float item = 1.5f, buf[40] = {0};
  caterva_block_iter *it = NULL;
  const caterva_block *blk;
  int rc, nblocks = 0;

  tap_ok(caterva_array_nitems(a) == 0, "%s: no items", label);
  tap_ok(caterva_array_to_buffer(ctx, a, buf, sizeof buf) >= 0, "%s: to_buffer", label);
  tap_ok(caterva_array_get_slice(ctx, a, start, stop, buf, sizeof buf) >= 0,
         "%s: get_slice of the whole (empty) array", label);
  rc = caterva_block_iter_new(ctx, a, NULL, NULL, 0, &it);
  while (rc == CATERVA_OK && (rc = caterva_block_iter_next(it, &blk)) == 1) nblocks++;
  tap_ok(rc == 0 && nblocks == 0, "%s: the block iterator visits nothing (rc %d, %d blocks)",
         label, rc, nblocks);
  caterva_block_iter_free(it);

  rc = caterva_array_begin(ctx, a);
  tap_ok(rc == CATERVA_E_READONLY && strstr(caterva_ctx_errmsg(ctx), "extent of 0") != NULL,
         "%s: begin refused: %s", label, caterva_ctx_errmsg(ctx));
  if (rc == CATERVA_OK) caterva_array_rollback(ctx, a);
  if (shape[0] == 0) grown[1] = shape[1];
  else grown[0] = shape[0], grown[1] = 3;
  tap_ok(caterva_array_resize(ctx, a, grown) == CATERVA_E_READONLY, "%s: resize refused",
         label);
  tap_ok(caterva_array_append(ctx, a, buf, 10 * sizeof(float), 0) < 0, "%s: append refused",
         label);
  tap_ok(caterva_array_set_item(ctx, a, coord, &item) < 0, "%s: set_item refused", label);
  tap_ok(caterva_array_set_slice(ctx, a, start, stop, buf, 0) < 0 ||
             caterva_array_nitems(a) == 0,
         "%s: set_slice of the empty box writes nothing", label);
  tap_ok(caterva_array_nitems(a) == 0 && caterva_array_shape(a)[0] == shape[0],
         "%s: still empty, same shape", label);
}

/* A copy with positive partitions is an ordinary array that takes writes. */
static void copy_is_writable(caterva_array *a, const char *label) {
  caterva_array_params p;
  caterva_array *b = NULL;
  int64_t grown[2] = {3, 10}, coord[2] = {2, 9};
  float item = 2.5f, back = 0;
  int ok;
  caterva_array_params_init(&p);
  p.chunkshape[0] = 2, p.chunkshape[1] = 5;
  p.blockshape[0] = 1, p.blockshape[1] = 5;
  p.store = CATERVA_STORE_MEMORY;
  ok = caterva_array_copy(ctx, a, &p, &b) == CATERVA_OK;
  if (ok && caterva_array_shape(b)[0] != 0) grown[0] = caterva_array_shape(b)[0], coord[0] = 0;
  if (ok && caterva_array_shape(b)[1] == 0) grown[1] = 3, coord[1] = 2;
  ok = ok && caterva_array_resize(ctx, b, grown) == CATERVA_OK &&
       caterva_array_set_item(ctx, b, coord, &item) == CATERVA_OK &&
       caterva_array_flush(ctx, b) == CATERVA_OK;
  ok = ok && caterva_array_get_slice(ctx, b, coord, (int64_t[]){coord[0] + 1, coord[1] + 1},
                                     &back, sizeof back) == CATERVA_OK && back == item;
  tap_ok(ok, "%s: a copy with positive chunks and blocks grows and takes a value (%s)", label,
         ok ? "ok" : caterva_ctx_errmsg(ctx));
  caterva_array_free(b);
}

static void one_case(int store, int zaxis, int part) {
  static int counter;
  char path[320], meta[352], label[96];
  uint8_t *before, *after;
  size_t nb = 0, na = 0;
  caterva_array *a = NULL;
  int n;
  snprintf(path, sizeof path, "%s/a%d%s", tmpdir, counter++,
           store == CATERVA_STORE_SPARSE ? ".b2frame" : ".b2nd");
  snprintf(label, sizeof label, "%s, shape %s, %s extent 0 on axis %d",
           store == CATERVA_STORE_SPARSE ? "sparse" : "contiguous",
           zaxis == 0 ? "[0,10]" : "[10,0]", part == 0 ? "chunk" : "block", zaxis);
  n = make(path, store, zaxis, part, zaxis, meta, sizeof meta);
  if (!tap_ok(n == 2, "%s: made (%d metalayers patched)", label, n)) return;
  before = tu_read_file(meta, &nb);
  if (!tap_ok(caterva_array_open(ctx, path, CATERVA_OPEN_WRITE, &a) == CATERVA_OK,
              "%s: opens (%s)", label, caterva_ctx_errmsg(ctx))) {
    free(before);
    return;
  }
  tap_ok((part == 0 ? caterva_array_chunkshape(a) : caterva_array_blockshape(a))[zaxis] == 0,
         "%s: the zero extent is reported", label);
  drive(a, label);
  copy_is_writable(a, label);
  caterva_array_free(a);
  after = tu_read_file(meta, &na);
  tap_ok(before != NULL && after != NULL && na == nb && memcmp(before, after, nb) == 0,
         "%s: the file is byte-identical after the refused writes", label);
  free(before);
  free(after);
}

/* A zero extent on an axis that has items is refused at open. */
static void positive_axis_refused(int store, int part) {
  static int counter;
  char path[320], meta[352];
  caterva_array *a = NULL;
  int n, rc;
  snprintf(path, sizeof path, "%s/p%d%s", tmpdir, counter++,
           store == CATERVA_STORE_SPARSE ? ".b2frame" : ".b2nd");
  n = make(path, store, 0, part, 1, meta, sizeof meta); /* shape [0,10], axis 1 zeroed */
  rc = n == 2 ? caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) : -100;
  tap_ok(rc == CATERVA_E_CORRUPT && strstr(caterva_ctx_errmsg(ctx), "positive") != NULL,
         "%s: %s extent 0 on an axis of length 10 is refused at open (%d: %s)",
         store == CATERVA_STORE_SPARSE ? "sparse" : "contiguous", part == 0 ? "chunk" : "block",
         rc, caterva_ctx_errmsg(ctx));
  caterva_array_free(a);
}

/* A huge extent before a zero one: the array holds no item, but the sizes of boxes, slabs
 * and strides over the huge extent alone do not fit in 63 bits (they used to be multiplied out
 * unchecked: signed overflow, found by fuzz_array). Such a shape is refused when the array is
 * made (and opened: cat_meta_validate); a large one whose extents fit reads whole as 0 bytes and
 * takes no append of a partial slab. */
static void huge_beside_zero(void) {
  caterva_array_params p;
  caterva_array *a = NULL;
  int64_t start[2] = {0, 0}, stop[2] = {(int64_t)1 << 59, 0};
  double buf[1] = {0};
  int rc;
  caterva_array_params_init(&p);
  p.ndim = 2;
  p.shape[0] = (int64_t)1 << 61;
  p.shape[1] = 0;
  p.chunkshape[0] = 4, p.chunkshape[1] = 1;
  p.blockshape[0] = 2, p.blockshape[1] = 1;
  p.dtype = "float64";
  rc = caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a);
  tap_ok(rc == CATERVA_E_OVERFLOW && strstr(caterva_ctx_errmsg(ctx), "2^63") != NULL,
         "shape (2^61, 0) float64 (2^64 bytes along its first extent) refused: %s",
         caterva_ctx_errmsg(ctx));
  caterva_array_free(a);
  a = NULL;
  p.shape[0] = (int64_t)1 << 59;
  rc = caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a);
  if (!tap_ok(rc == 0, "shape (2^59, 0) float64 in memory: created (%s)",
              rc < 0 ? caterva_ctx_errmsg(ctx) : "ok"))
    return;
  tap_ok(caterva_array_get_slice(ctx, a, start, stop, buf, 0) == 0 &&
             caterva_array_to_buffer(ctx, a, buf, 0) == 0,
         "shape (2^59, 0): the whole array reads as 0 bytes");
  rc = caterva_array_append(ctx, a, buf, 8, 1);
  tap_ok(rc == CATERVA_E_INVALID, "shape (2^59, 0): 8 bytes appended along axis 1 (a slab "
                                  "holds 2^62) refused: %s", caterva_ctx_errmsg(ctx));
  caterva_array_free(a);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/test_zero_extent.XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(tmpdir) == NULL) return tap_skip_all("cannot create a temporary directory");
  if (caterva_ctx_new(1, &ctx) != 0) return tap_skip_all("no context");
  for (int store = CATERVA_STORE_CONTIGUOUS; store <= CATERVA_STORE_SPARSE; store++) {
    for (int zaxis = 0; zaxis < 2; zaxis++)
      for (int part = 0; part < 2; part++) one_case(store, zaxis, part);
    for (int part = 0; part < 2; part++) positive_axis_refused(store, part);
  }
  huge_beside_zero();
  caterva_ctx_free(ctx);
  tu_rm_tree(tmpdir);
  return tap_done();
}

/*
 * fuzz_array.c -- libFuzzer target: open arbitrary bytes as an N-d array (frame, then the
 * b2nd/caterva metalayer and its geometry), read it whole, walk a box with the block
 * iterator, and read the dimension names and coordinates (the `_coords` attribute, with a
 * few lookups over its labels). Any outcome but a crash, a sanitizer report or a
 * hang is fine; when both whole reads succeed they must agree on the box.
 */
#include "caterva.h"
#include "caterva_array.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Cap what a lying header can make the target itself allocate. */
#define FUZZ_MAX_BYTES (1 << 24)

static void walk_blocks(caterva_ctx *ctx, caterva_array *a) {
  int nd = caterva_array_ndim(a);
  const int64_t *shape = caterva_array_shape(a);
  int64_t start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM];
  caterva_block_iter *it = NULL;
  const caterva_block *blk;
  int n = 0;
  for (int k = 0; k < nd; k++) {
    start[k] = shape[k] / 3;
    stop[k] = shape[k] - shape[k] / 4;
  }
  if (caterva_block_iter_new(ctx, a, start, stop, 0, &it) < 0) return;
  while (n++ < 4096 && caterva_block_iter_next(it, &blk) == 1) {
  }
  caterva_block_iter_free(it);
}

/* Coordinates: parse each dimension's, and look labels up both ways. */
static void walk_coords(caterva_ctx *ctx, caterva_array *a) {
  const int64_t *shape = caterva_array_shape(a);
  for (int k = 0; k < caterva_array_ndim(a); k++) {
    caterva_coord c;
    caterva_labels l;
    char buf[48];
    int64_t lo, hi;
    if (caterva_array_get_coord(ctx, a, k, &c) < 0 || c.kind == CATERVA_COORD_NONE) continue;
    if (caterva_labels_init(ctx, &l, &c, shape[k]) < 0 || shape[k] == 0) continue;
    (void)caterva_labels_format(&l, shape[k] - 1, buf, sizeof buf);
    caterva_labels_range(&l, CATERVA_CMP_LE, caterva_labels_key(&l, 0), &lo, &hi);
    (void)caterva_labels_nearest(&l, caterva_labels_key(&l, shape[k] - 1) + 0.5);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static caterva_ctx *ctx;
  caterva_schunk *sc = NULL;
  caterva_array *a = NULL;
  char **names = NULL;
  if (ctx == NULL && caterva_ctx_new(1, &ctx) < 0) return 0;
  if (caterva_schunk_open_buffer(ctx, data, size, &sc) < 0) return 0;
  if (caterva_array_from_schunk(ctx, sc, &a) < 0) return 0; /* sc is owned by the call */
  int64_t nitems = caterva_array_nitems(a);
  int64_t bytes = nitems * caterva_array_itemsize(a);
  if (bytes >= 0 && bytes <= FUZZ_MAX_BYTES) {
    uint8_t *buf = malloc((size_t)bytes + 1);
    if (buf != NULL) (void)caterva_array_to_buffer(ctx, a, buf, bytes);
    free(buf);
    walk_blocks(ctx, a);
  }
  if (caterva_array_get_dim_names(ctx, a, &names) == 0)
    caterva_array_free_names(names, caterva_array_ndim(a));
  walk_coords(ctx, a);
  caterva_array_free(a);
  return 0;
}

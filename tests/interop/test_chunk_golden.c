/*
 * test_chunk_golden.c -- decode real chunks written by the reference library.
 *
 * The chunks are cut out of the golden files with the manifest's facts alone (header length
 * from the frame header, the index entries of the first chunks), independent of our frame
 * reader. Each chunk's header must equal the manifest's, whole-chunk decoding must equal
 * block-by-block decoding, and every item must equal the raw file's item at the same array
 * coordinates (N-d geometry of spec §5.2 applied here by hand).
 */
#include "cat_internal.h"
#include "minijson.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct gcase {
  const mj_node *m;
  int ndim, itemsize;
  int64_t shape[16], chunks[16], blocks[16];
  uint8_t *raw;
  size_t rawlen;
} gcase;

static caterva_ctx *ctx;

static int load_dims(const mj_node *arr, int64_t *out) {
  if (arr == NULL || arr->type != MJ_ARR || arr->n > 16) return -1;
  for (size_t i = 0; i < arr->n; i++) out[i] = arr->items[i]->inum;
  return (int)arr->n;
}

static uint8_t *read_all(const char *path, size_t *len) {
  return (uint8_t *)mj_read_file(path, len);
}

/* Check every item of chunk nchunk (decoded into buf) against the raw array. */
static bool check_items(const gcase *g, int64_t nchunk, const uint8_t *buf) {
  int64_t nck[16], cc[16], ext[16], nblk[16], idx[16] = {0};
  int64_t total = 1, blockitems = 1;
  for (int k = 0; k < g->ndim; k++) {
    nck[k] = (g->shape[k] + g->chunks[k] - 1) / g->chunks[k];
    nblk[k] = (g->chunks[k] + g->blocks[k] - 1) / g->blocks[k];
    ext[k] = nblk[k] * g->blocks[k];
    total *= ext[k];
    blockitems *= g->blocks[k];
  }
  int64_t rest = nchunk; /* chunk grid coordinates, C order */
  for (int k = g->ndim - 1; k >= 0; k--) {
    cc[k] = rest % nck[k];
    rest /= nck[k];
  }
  for (int64_t it = 0; it < total; it++) {
    int64_t blin = 0, inb = 0, glin = 0;
    bool pad = false;
    for (int k = 0; k < g->ndim; k++) {
      int64_t gk = cc[k] * g->chunks[k] + idx[k];
      if (idx[k] >= g->chunks[k] || gk >= g->shape[k]) pad = true;
      blin = blin * nblk[k] + idx[k] / g->blocks[k];
      inb = inb * g->blocks[k] + idx[k] % g->blocks[k];
      glin = glin * g->shape[k] + gk;
    }
    if (!pad) {
      size_t off = (size_t)(blin * blockitems + inb) * (size_t)g->itemsize;
      if (memcmp(buf + off, g->raw + (size_t)glin * (size_t)g->itemsize, (size_t)g->itemsize))
        return false;
    }
    for (int k = g->ndim - 1; k >= 0; k--) { /* next in-chunk coordinate */
      if (++idx[k] < ext[k]) break;
      idx[k] = 0;
    }
  }
  return true;
}

/* Decode one chunk both ways and compare with the raw bytes. */
static void check_chunk(const gcase *g, const char *name, int64_t nchunk, const uint8_t *chunk,
                        size_t len, const char *header_hex) {
  caterva_chunk_info ci;
  char hex[65];
  uint8_t *whole = NULL, *blk = NULL;
  bool ok;
  int rc = caterva_chunk_info_get(chunk, len, &ci);
  if (!tap_ok(rc == 0, "%s chunk %lld: header parses (%d)", name, (long long)nchunk, rc)) return;
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", chunk[i]);
  tap_ok(header_hex == NULL || strcmp(hex, header_hex) == 0, "%s chunk %lld: header bytes match",
         name, (long long)nchunk);
  whole = malloc((size_t)ci.nbytes + 1);
  blk = malloc((size_t)ci.blocksize + 1);
  ok = caterva_chunk_decompress(ctx, chunk, len, whole, ci.nbytes) == ci.nbytes;
  tap_ok(ok, "%s chunk %lld: decompresses (%s)", name, (long long)nchunk,
         ok ? "ok" : caterva_ctx_errmsg(ctx));
  if (ok) {
    tap_ok(check_items(g, nchunk, whole), "%s chunk %lld: items equal the raw array", name,
           (long long)nchunk);
    bool same = true;
    for (int32_t j = 0; j < ci.nblocks && ci.special == 0; j++) {
      int64_t r = caterva_chunk_decompress_blocks(ctx, chunk, len, &j, 1, blk, (size_t)ci.blocksize);
      same = same && r > 0 && memcmp(blk, whole + (size_t)j * ci.blocksize, (size_t)r) == 0;
    }
    tap_ok(same, "%s chunk %lld: each of %d blocks alone equals whole-chunk decoding", name,
           (long long)nchunk, ci.nblocks);
  }
  free(whole);
  free(blk);
}

static void run_case(const char *dir, const mj_node *m) {
  gcase g = {.m = m};
  const char *name = mj_getstr(m, "name"), *file = mj_getstr(m, "file");
  const mj_node *fc = mj_get(m, "first_chunks");
  bool sparse = strcmp(mj_getstr(m, "frame_type"), "sparse") == 0;
  char path[4096];
  uint8_t *frame = NULL;
  size_t flen = 0;
  int32_t header_len = 0;

  g.ndim = load_dims(mj_get(m, "shape"), g.shape);
  load_dims(mj_get(m, "chunkshape"), g.chunks);
  load_dims(mj_get(m, "blockshape"), g.blocks);
  g.itemsize = (int)mj_getint(m, "itemsize", 1);
  snprintf(path, sizeof path, "%s/%s", dir, mj_getstr(m, "raw_file"));
  g.raw = read_all(path, &g.rawlen);
  snprintf(path, sizeof path, sparse ? "%s/%s/chunks.b2frame" : "%s/%s", dir, file);
  frame = read_all(path, &flen);
  if (!tap_ok(g.raw != NULL && frame != NULL && flen > 87, "%s: files readable", name)) goto done;
  header_len = (int32_t)cat_be32(frame + 11);
  for (size_t i = 0; fc != NULL && i < fc->n; i++) {
    const mj_node *c = fc->items[i];
    const mj_node *entry = mj_get(c, "index_entry");
    int64_t nchunk = mj_getint(c, "nchunk", -1);
    if (entry == NULL || entry->type != MJ_NUM) continue; /* special entry: no bytes stored */
    if (sparse) {
      size_t clen = 0;
      uint8_t *chunk;
      snprintf(path, sizeof path, "%s/%s/%08llX.chunk", dir, file, (unsigned long long)entry->inum);
      chunk = read_all(path, &clen);
      if (tap_ok(chunk != NULL, "%s: chunk file %s", name, path))
        check_chunk(&g, name, nchunk, chunk, clen, mj_getstr(c, "header_hex"));
      free(chunk);
    } else {
      size_t off = (size_t)header_len + (size_t)entry->inum;
      if (tap_ok(off < flen, "%s: chunk %lld inside the file", name, (long long)nchunk))
        check_chunk(&g, name, nchunk, frame + off, flen - off, mj_getstr(c, "header_hex"));
    }
  }
done:
  free(g.raw);
  free(frame);
}

int main(void) {
  const char *dir = getenv("CATERVA_GOLDEN");
  mj_node *root;
  if (dir == NULL) dir = "../shared/golden";
  const mj_node *cases;
  root = mj_load_manifest(dir, &cases);
  if (root == NULL) return tap_skip_all("golden files not found (set CATERVA_GOLDEN)");
  if (caterva_ctx_new(2, &ctx) < 0) return 1;
  for (size_t i = 0; cases != NULL && i < cases->n; i++) run_case(dir, cases->items[i]);
  tap_ok(cases != NULL && cases->n >= 40, "manifest lists %zu cases", cases ? cases->n : 0);
  mj_free(root);
  caterva_ctx_free(ctx);
  return tap_done();
}

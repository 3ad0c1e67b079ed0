/*
 * test_frame.c -- super-chunks and frames: every golden file (contiguous and sparse, b2nd and
 * caterva) read and checked against manifest.json and the raw bytes; round trips through
 * each store kind with metalayers, vlmetalayers and chunk edits; crash states of contiguous
 * files; malformed frames (truncations, bit flips, lying fields).
 */
#include "frame_internal.h"
#include "minijson.h"
#include "fsutil.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static caterva_ctx *ctx;
static char tmpdir[256];

/* ---- helpers ------------------------------------------------------------------------------ */

static uint8_t *read_all(const char *path, size_t *len) {
  char *s = mj_read_file(path, len);
  return (uint8_t *)s;
}

static size_t unhex(const char *s, uint8_t *out, size_t cap) {
  size_t n = 0;
  while (s[0] && s[1] && n < cap) {
    unsigned v;
    if (sscanf(s, "%2x", &v) != 1) break;
    out[n++] = (uint8_t)v;
    s += 2;
  }
  return n;
}

static int64_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* ---- golden files ------------------------------------------------------------------------- */

typedef struct geom {
  int ndim, itemsize;
  int64_t shape[16], chunk[16], block[16];
} geom;

static int read_dims(const mj_node *c, const char *key, int64_t *out) {
  const mj_node *a = mj_get(c, key);
  if (a == NULL || a->type != MJ_ARR || a->n > 16) return -1;
  for (size_t k = 0; k < a->n; k++) out[k] = a->items[k]->inum;
  return (int)a->n;
}

/* Byte offset of the item with C-order linear index lin inside the decoded chunks
 * (spec 5.2: chunks in C order, blocks in C order inside padded chunks, items in C order
 * inside blocks). */
static int64_t item_offset(const geom *g, int64_t lin, int64_t chunksize) {
  int64_t coord[16], chunk_lin = 0, block_lin = 0, in_lin = 0, blockitems = 1;
  for (int k = g->ndim - 1; k >= 0; k--) {
    coord[k] = lin % g->shape[k];
    lin /= g->shape[k];
  }
  for (int k = 0; k < g->ndim; k++) {
    int64_t nchunks_k = (g->shape[k] + g->chunk[k] - 1) / g->chunk[k];
    int64_t nblocks_k = (g->chunk[k] + g->block[k] - 1) / g->block[k];
    int64_t i = coord[k] % g->chunk[k];
    chunk_lin = chunk_lin * nchunks_k + coord[k] / g->chunk[k];
    block_lin = block_lin * nblocks_k + i / g->block[k];
    in_lin = in_lin * g->block[k] + i % g->block[k];
    blockitems *= g->block[k];
  }
  return chunk_lin * chunksize + (block_lin * blockitems + in_lin) * g->itemsize;
}

static int compare_raw(const geom *g, const uint8_t *chunks, int64_t chunksize,
                       const uint8_t *raw, size_t rawlen) {
  int64_t nitems = (int64_t)rawlen / g->itemsize;
  for (int64_t lin = 0; lin < nitems; lin++) {
    int64_t off = item_offset(g, lin, chunksize);
    if (memcmp(chunks + off, raw + lin * g->itemsize, (size_t)g->itemsize) != 0) {
      tap_diag("item %lld differs", (long long)lin);
      return 0;
    }
  }
  return 1;
}

static int decode_all(caterva_schunk *sc, uint8_t **out) {
  int64_t n = caterva_schunk_nchunks(sc), cs = caterva_schunk_chunksize(sc);
  uint8_t *buf = malloc((size_t)(n * cs) + 1);
  *out = buf;
  if (buf == NULL) return 0;
  for (int64_t i = 0; i < n; i++) {
    int32_t r = caterva_schunk_decompress_chunk(ctx, sc, i, buf + i * cs, (int32_t)cs);
    if (r != cs) {
      tap_diag("chunk %lld: %d (%s)", (long long)i, (int)r, caterva_ctx_errmsg(ctx));
      return 0;
    }
  }
  return 1;
}

static void check_first_chunks(caterva_schunk *sc, const mj_node *c, const char *name) {
  const mj_node *fc = mj_get(c, "first_chunks");
  int ok = fc != NULL && fc->type == MJ_ARR;
  for (size_t k = 0; ok && k < fc->n; k++) {
    const mj_node *e = fc->items[k], *ie = mj_get(e, "index_entry");
    int64_t i = mj_getint(e, "nchunk", -1), want;
    uint8_t hdr[32];
    const uint8_t *p;
    int32_t cb;
    if (ie != NULL && ie->type == MJ_STR) want = (int64_t)strtoull(ie->str, NULL, 16);
    else want = ie != NULL ? ie->inum : -1;
    ok = i >= 0 && i < caterva_schunk_nchunks(sc) && sc->entries[i] == want;
    ok = ok && caterva_schunk_get_chunk(ctx, sc, i, &p, &cb) == 0 &&
         cb == mj_getint(e, "cbytes", -1);
    ok = ok && unhex(mj_getstr(e, "header_hex"), hdr, 32) == 32 && memcmp(p, hdr, 32) == 0;
    ok = ok && (want >= 0) == (caterva_schunk_chunk_special(sc, i) == CATERVA_SPECIAL_NONE);
  }
  tap_ok(ok, "%s: index entries and chunk headers", name);
}

static void check_metas(caterva_schunk *sc, const mj_node *c, const char *name) {
  uint8_t want[1024];
  const uint8_t *got;
  int32_t len;
  const char *hex = mj_getstr(c, "metalayer_hex");
  size_t n = hex ? unhex(hex, want, sizeof want) : 0;
  const mj_node *vl = mj_get(c, "vlmetalayers");
  int ok = caterva_schunk_meta_get(sc, mj_getstr(c, "metalayer"), &got, &len) == 0 &&
           (size_t)len == n && memcmp(got, want, n) == 0;
  tap_ok(ok, "%s: metalayer '%s' bytes", name, mj_getstr(c, "metalayer"));
  ok = vl != NULL && (size_t)caterva_schunk_vlmeta_count(sc) == vl->n;
  for (size_t k = 0; ok && k < vl->n; k++) {
    uint8_t *content = NULL;
    ok = strcmp(caterva_schunk_vlmeta_name(sc, (int)k), vl->items[k]->str) == 0 &&
         caterva_schunk_vlmeta_get(ctx, sc, vl->items[k]->str, &content, &len) == 0 && len > 0;
    free(content);
  }
  tap_ok(ok, "%s: vlmetalayers", name);
}

/* The reference's bytes survive a rewrite: same header (but frame_len), same chunks, same
 * trailer. */
static void check_rewrite(caterva_schunk *sc, const char *path, const char *name) {
  uint8_t *orig, *mine = NULL;
  size_t olen;
  int64_t mlen = 0;
  int ok;
  orig = read_all(path, &olen);
  ok = orig != NULL && caterva_schunk_to_buffer(ctx, sc, &mine, &mlen) == 0;
  if (ok) {
    int64_t hl = sc->header_len, cb = sc->cbytes, tl = cat_be32(orig + olen - 22);
    ok = mlen >= hl + cb + tl && memcmp(orig, mine, 15) == 0 &&
         memcmp(orig + 24, mine + 24, (size_t)(hl - 24)) == 0 &&
         memcmp(orig + hl, mine + hl, (size_t)cb) == 0 &&
         memcmp(orig + olen - tl, mine + mlen - tl, (size_t)tl) == 0;
  }
  tap_ok(ok, "%s: rewritten frame keeps the reference's header, chunks and trailer", name);
  free(orig);
  free(mine);
}

static void golden_case(const char *dir, const mj_node *c) {
  const char *name = mj_getstr(c, "name"), *file = mj_getstr(c, "file");
  const mj_node *s = mj_get(c, "schunk");
  char path[1024], rawpath[1024];
  caterva_schunk *sc = NULL, *sc2 = NULL;
  uint8_t *raw = NULL, *dec = NULL, *buf = NULL;
  size_t rawlen = 0;
  int64_t blen = 0;
  geom g;
  int rc, sparse = mj_get(c, "is_directory")->boolean;

  snprintf(path, sizeof path, "%s/%s", dir, file);
  snprintf(rawpath, sizeof rawpath, "%s/%s", dir, mj_getstr(c, "raw_file"));
  rc = caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &sc);
  if (!tap_ok(rc == 0, "%s: open (%s)", name, rc ? caterva_ctx_errmsg(ctx) : "ok")) return;
  tap_ok(caterva_schunk_store(sc) == (sparse ? CATERVA_STORE_SPARSE : CATERVA_STORE_CONTIGUOUS),
         "%s: store kind", name);
  tap_ok(caterva_schunk_nchunks(sc) == mj_getint(s, "nchunks", -1) &&
             caterva_schunk_chunksize(sc) == mj_getint(s, "chunksize", -1) &&
             caterva_schunk_typesize(sc) == mj_getint(s, "typesize", -1) &&
             caterva_schunk_nbytes(sc) == mj_getint(s, "nbytes", -1) &&
             caterva_schunk_cbytes(sc) == mj_getint(s, "cbytes", -1),
         "%s: nchunks %lld, chunksize, typesize, nbytes, cbytes", name,
         (long long)caterva_schunk_nchunks(sc));
  tap_ok(caterva_schunk_cparams(sc)->codec == mj_getint(s, "compcode", -1) &&
             caterva_schunk_cparams(sc)->clevel == mj_getint(s, "clevel", -1) &&
             caterva_schunk_cparams(sc)->splitmode == mj_getint(s, "splitmode", -1) &&
             caterva_schunk_cparams(sc)->blocksize == mj_getint(s, "blocksize", -1),
         "%s: codec, clevel, splitmode, blocksize", name);
  check_metas(sc, c, name);
  check_first_chunks(sc, c, name);

  memset(&g, 0, sizeof g);
  g.ndim = read_dims(c, "shape", g.shape);
  read_dims(c, "chunkshape", g.chunk);
  read_dims(c, "blockshape", g.block);
  g.itemsize = (int)mj_getint(c, "itemsize", 1);
  raw = read_all(rawpath, &rawlen);
  rc = raw != NULL && decode_all(sc, &dec);
  tap_ok(rc && compare_raw(&g, dec, caterva_schunk_chunksize(sc), raw, rawlen),
         "%s: all %lld chunks decode to the raw bytes", name,
         (long long)caterva_schunk_nchunks(sc));
  free(dec);
  dec = NULL;

  /* through a buffer and back */
  rc = caterva_schunk_to_buffer(ctx, sc, &buf, &blen) == 0 &&
       caterva_schunk_open_buffer(ctx, buf, (size_t)blen, &sc2) == 0 && decode_all(sc2, &dec) &&
       compare_raw(&g, dec, caterva_schunk_chunksize(sc2), raw, rawlen) &&
       caterva_schunk_frame_len(sc2) == blen;
  tap_ok(rc, "%s: to_buffer / open_buffer round trip", name);
  if (!sparse) check_rewrite(sc, path, name);
  free(dec);
  free(buf);
  free(raw);
  caterva_schunk_free(sc2);
  caterva_schunk_free(sc);
}

static void test_golden(void) {
  const char *dir = getenv("CATERVA_GOLDEN");
  mj_node *root;
  const mj_node *cases;
  if (dir == NULL || dir[0] == '\0') {
    tap_diag("CATERVA_GOLDEN not set: golden files skipped");
    return;
  }
  root = mj_load_manifest(dir, &cases);
  if (root == NULL) {
    tap_diag("no manifest in %s: golden files skipped", dir);
    return;
  }
  tap_ok(cases != NULL && cases->n >= 40, "manifest lists %zu cases", cases ? cases->n : 0);
  for (size_t k = 0; cases != NULL && k < cases->n; k++) golden_case(dir, cases->items[k]);
  mj_free(root);
}

/* ---- round trips ---------------------------------------------------------------------------- */

#define RT_CHUNK 4000 /* bytes per chunk: 1000 int32 */
#define RT_MAX 16

/* Expected content of a schunk, chunk by chunk. */
typedef struct model {
  int n;
  uint8_t data[RT_MAX][RT_CHUNK];
  int special[RT_MAX];
} model;

static void fill(uint8_t *p, int kind, int seed) {
  int32_t *v = (int32_t *)(void *)p;
  for (int i = 0; i < RT_CHUNK / 4; i++) {
    switch (kind) {
    case 0: v[i] = 0; break;
    case 1: v[i] = seed * 1000 + i; break;
    case 2: v[i] = (int32_t)((uint32_t)(i + seed) * 2654435761u); break;
    default: v[i] = seed; break;
    }
  }
}

static int model_check(caterva_schunk *sc, const model *m, const char *what) {
  uint8_t buf[RT_CHUNK];
  if (caterva_schunk_nchunks(sc) != m->n) {
    tap_diag("%s: %lld chunks, expected %d", what, (long long)caterva_schunk_nchunks(sc), m->n);
    return 0;
  }
  for (int i = 0; i < m->n; i++) {
    int32_t r = caterva_schunk_decompress_chunk(ctx, sc, i, buf, RT_CHUNK);
    if (r != RT_CHUNK || caterva_schunk_chunk_special(sc, i) != m->special[i]) {
      tap_diag("%s: chunk %d: %d special %d (%s)", what, i, (int)r,
               caterva_schunk_chunk_special(sc, i), caterva_ctx_errmsg(ctx));
      return 0;
    }
    if (m->special[i] == CATERVA_SPECIAL_NAN) {
      for (int k = 0; k < RT_CHUNK / 4; k++)
        if (cat_le32(buf + 4 * k) != 0x7fc00000u) return 0;
    } else if (memcmp(buf, m->data[i], RT_CHUNK) != 0) {
      tap_diag("%s: chunk %d content differs", what, i);
      return 0;
    }
  }
  return 1;
}

static int model_append(caterva_schunk *sc, model *m, int kind, int seed) {
  fill(m->data[m->n], kind, seed);
  m->special[m->n] = kind == 0 ? CATERVA_SPECIAL_ZERO : CATERVA_SPECIAL_NONE;
  m->n++;
  return caterva_schunk_append_buffer(ctx, sc, m->data[m->n - 1], RT_CHUNK) == m->n;
}

static int32_t compress_into(uint8_t *dst, const uint8_t *src, int codec) {
  caterva_cparams cp;
  caterva_cparams_init(&cp);
  cp.typesize = 4;
  cp.codec = codec;
  return caterva_chunk_compress(ctx, &cp, src, RT_CHUNK, dst, RT_CHUNK + 32);
}

static int check_metas_rt(caterva_schunk *sc, const char *what) {
  const uint8_t *p;
  int32_t len;
  uint8_t *v = NULL;
  int ok = caterva_schunk_meta_count(sc) == 2 &&
           strcmp(caterva_schunk_meta_name(sc, 0), "b2nd") == 0 &&
           caterva_schunk_meta_get(sc, "b2nd", &p, &len) == 0 && len == 5 &&
           memcmp(p, "HELLO", 5) == 0 &&
           caterva_schunk_meta_get(sc, "extra", &p, &len) == 0 && len == 0 &&
           caterva_schunk_meta_get(sc, "nope", &p, &len) == CATERVA_E_NOTFOUND;
  ok = ok && caterva_schunk_vlmeta_count(sc) == 1 &&
       caterva_schunk_vlmeta_get(ctx, sc, "attrs", &v, &len) == 0 && len == 100 &&
       v[0] == 0 && v[99] == 99;
  free(v);
  if (!ok) tap_diag("%s: metalayers differ", what);
  return ok;
}

/* Everything an array layer does to a schunk, on one store kind. */
static void roundtrip(int store) {
  static const char *names[] = {"memory", "contiguous", "sparse"};
  const char *sn = names[store];
  char path[512], p2[512], p3[512];
  caterva_cparams cp;
  caterva_schunk *sc = NULL, *re = NULL;
  model *m = calloc(1, sizeof *m);
  uint8_t meta[5] = {'H', 'E', 'L', 'L', 'O'}, attrs[100], chunk[RT_CHUNK + 32], nanc[64];
  uint8_t *buf = NULL;
  int64_t blen = 0;
  int32_t cb;
  int ok;

  snprintf(path, sizeof path, "%s/rt_%s.b2nd", tmpdir, sn);
  snprintf(p2, sizeof p2, "%s/rt_%s_saved.b2nd", tmpdir, sn);
  snprintf(p3, sizeof p3, "%s/rt_%s_saved.b2frame", tmpdir, sn);
  for (int k = 0; k < 100; k++) attrs[k] = (uint8_t)k;
  caterva_cparams_init(&cp);
  cp.typesize = 4;
  cp.codec = store == CATERVA_STORE_SPARSE ? CATERVA_LZ4 : CATERVA_BLOSCLZ;
  cp.blocksize = 1000;
  ok = caterva_schunk_new(ctx, &cp, RT_CHUNK, store, store ? path : NULL, &sc) == 0;
  tap_ok(ok, "%s: new (%s)", sn, ok ? "ok" : caterva_ctx_errmsg(ctx));
  if (!ok) goto done;
  tap_ok(caterva_schunk_new(ctx, &cp, RT_CHUNK, store, store ? path : NULL, &re) ==
                 (store ? CATERVA_E_EXISTS : CATERVA_OK) && (store || re != NULL),
         "%s: new on an existing path fails", sn);
  caterva_schunk_free(re);
  re = NULL;
  ok = caterva_schunk_meta_add(ctx, sc, "b2nd", meta, 5) == 0 &&
       caterva_schunk_meta_add(ctx, sc, "extra", NULL, 0) == 0 &&
       caterva_schunk_meta_add(ctx, sc, "b2nd", meta, 5) == CATERVA_E_EXISTS &&
       caterva_schunk_vlmeta_set(ctx, sc, "attrs", attrs, 100) == 0 &&
       caterva_schunk_vlmeta_set(ctx, sc, "tmp", "x", 1) == 0;
  tap_ok(ok, "%s: metalayers and vlmetalayers added", sn);
  ok = model_append(sc, m, 1, 1) && model_append(sc, m, 0, 0) && model_append(sc, m, 2, 2) &&
       model_append(sc, m, 3, 7) && model_append(sc, m, 1, 5) && model_append(sc, m, 0, 0);
  tap_ok(ok && model_check(sc, m, sn), "%s: 6 chunks appended (2 all-zero)", sn);
  tap_ok(caterva_schunk_chunk_special(sc, 1) == CATERVA_SPECIAL_ZERO &&
             caterva_schunk_chunk_special(sc, 6) == CATERVA_E_RANGE,
         "%s: zero chunks are special index entries", sn);
  tap_ok(caterva_schunk_meta_add(ctx, sc, "late", meta, 5) == CATERVA_E_INVALID &&
             caterva_schunk_meta_update(ctx, sc, "b2nd", meta, 4) == CATERVA_E_INVALID,
         "%s: late meta_add and resizing meta_update refused", sn);

  /* special NaN chunk, update, insert, delete */
  cb = caterva_chunk_make_special(CATERVA_SPECIAL_NAN, RT_CHUNK, 4, 0, NULL, nanc, sizeof nanc);
  ok = caterva_schunk_append_chunk(ctx, sc, nanc, cb) == 7;
  m->special[m->n++] = CATERVA_SPECIAL_NAN;
  fill(m->data[2], 1, 42);
  cb = compress_into(chunk, m->data[2], CATERVA_ZSTD);
  ok = ok && caterva_schunk_update_chunk(ctx, sc, 2, chunk, cb) == 0;
  fill(m->data[RT_MAX - 1], 2, 9);
  cb = compress_into(chunk, m->data[RT_MAX - 1], CATERVA_LZ4);
  ok = ok && caterva_schunk_insert_chunk(ctx, sc, 0, chunk, cb) == 0;
  memmove(m->data[1], m->data[0], (size_t)m->n * RT_CHUNK);
  memmove(m->special + 1, m->special, (size_t)m->n * sizeof m->special[0]);
  memcpy(m->data[0], m->data[RT_MAX - 1], RT_CHUNK);
  m->special[0] = 0;
  m->n++;
  ok = ok && caterva_schunk_delete_chunk(ctx, sc, 4) == 0;
  memmove(m->data[4], m->data[5], (size_t)(m->n - 5) * RT_CHUNK);
  memmove(m->special + 4, m->special + 5, (size_t)(m->n - 5) * sizeof m->special[0]);
  m->n--;
  fill(m->data[2], 0, 0); /* a zero chunk replaces a stored one */
  m->special[2] = CATERVA_SPECIAL_ZERO;
  cb = compress_into(chunk, m->data[2], CATERVA_BLOSCLZ);
  ok = ok && caterva_schunk_update_chunk(ctx, sc, 2, chunk, cb) == 0;
  tap_ok(ok && model_check(sc, m, sn), "%s: append special, update, insert, delete", sn);
  tap_ok(caterva_schunk_update_chunk(ctx, sc, 99, chunk, cb) == CATERVA_E_RANGE &&
             caterva_schunk_insert_chunk(ctx, sc, -1, chunk, cb) == CATERVA_E_RANGE &&
             caterva_schunk_append_chunk(ctx, sc, chunk, cb - 1) < 0 &&
             caterva_schunk_append_buffer(ctx, sc, chunk, RT_CHUNK + 1) < 0,
         "%s: bad edits refused", sn);
  tap_ok(caterva_schunk_nbytes(sc) == (int64_t)m->n * RT_CHUNK, "%s: nbytes", sn);
  ok = caterva_schunk_meta_update(ctx, sc, "b2nd", "WORLD", 5) == 0 &&
       caterva_schunk_meta_update(ctx, sc, "b2nd", meta, 5) == 0 &&
       caterva_schunk_vlmeta_delete(ctx, sc, "tmp") == 0 &&
       caterva_schunk_vlmeta_delete(ctx, sc, "tmp") == CATERVA_E_NOTFOUND &&
       caterva_schunk_vlmeta_set(ctx, sc, "attrs", "zzz", 3) == 0 &&
       caterva_schunk_vlmeta_set(ctx, sc, "attrs", attrs, 100) == 0;
  tap_ok(ok && check_metas_rt(sc, sn), "%s: meta update, vlmeta replace/delete", sn);

  /* serialise, save, reopen */
  ok = caterva_schunk_to_buffer(ctx, sc, &buf, &blen) == 0 &&
       caterva_schunk_open_buffer(ctx, buf, (size_t)blen, &re) == 0;
  tap_ok(ok && model_check(re, m, "buffer") && check_metas_rt(re, "buffer") &&
             caterva_schunk_frame_len(re) == blen,
         "%s: to_buffer / open_buffer", sn);
  if (store == CATERVA_STORE_MEMORY)
    tap_ok(caterva_schunk_frame_len(sc) == blen, "memory: frame_len is the buffer length");
  caterva_schunk_free(re);
  re = NULL;
  ok = caterva_schunk_save(ctx, sc, p2, CATERVA_STORE_CONTIGUOUS) == 0 &&
       caterva_schunk_save(ctx, sc, p2, CATERVA_STORE_CONTIGUOUS) == CATERVA_E_EXISTS &&
       caterva_schunk_open(ctx, p2, CATERVA_OPEN_READ, &re) == 0;
  tap_ok(ok && model_check(re, m, "saved") && check_metas_rt(re, "saved") &&
             file_size(p2) == blen,
         "%s: save contiguous, reopen", sn);
  tap_ok(re != NULL && caterva_schunk_append_buffer(ctx, re, m->data[0], RT_CHUNK) ==
                           CATERVA_E_READONLY,
         "%s: read-only schunk refuses edits", sn);
  caterva_schunk_free(re);
  re = NULL;
  ok = caterva_schunk_save(ctx, sc, p3, CATERVA_STORE_SPARSE) == 0 &&
       caterva_schunk_open(ctx, p3, CATERVA_OPEN_READ, &re) == 0;
  tap_ok(ok && model_check(re, m, "saved sparse") && check_metas_rt(re, "saved sparse"),
         "%s: save sparse, reopen", sn);
  caterva_schunk_free(re);
  re = NULL;
  if (store != CATERVA_STORE_MEMORY) {
    caterva_schunk_free(sc);
    sc = NULL;
    ok = caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0;
    tap_ok(ok && model_check(sc, m, "reopened") && check_metas_rt(sc, "reopened"),
           "%s: reopened file store", sn);
    if (store == CATERVA_STORE_CONTIGUOUS)
      tap_ok(ok && file_size(path) == blen, "contiguous: compacted on close (%lld bytes)",
             (long long)file_size(path));
    ok = ok && model_append(sc, m, 2, 11) && caterva_schunk_delete_chunk(ctx, sc, 0) == 0;
    memmove(m->data[0], m->data[1], (size_t)(m->n - 1) * RT_CHUNK);
    memmove(m->special, m->special + 1, (size_t)(m->n - 1) * sizeof m->special[0]);
    m->n--;
    caterva_schunk_free(sc);
    sc = NULL;
    ok = ok && caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &sc) == 0;
    tap_ok(ok && model_check(sc, m, "edited again"), "%s: edits after reopening persist", sn);
  }
done:
  free(buf);
  caterva_schunk_free(sc);
  free(m);
}

/* ---- crash states of a contiguous file -------------------------------------------------- */

static void test_crash_states(void) {
  char path[512];
  caterva_cparams cp;
  caterva_schunk *sc = NULL;
  uint8_t data[RT_CHUNK], back[RT_CHUNK], *before = NULL, *after = NULL, *mix = NULL;
  size_t blen = 0, alen = 0;
  int ok;
  snprintf(path, sizeof path, "%s/crash.b2nd", tmpdir);
  caterva_cparams_init(&cp);
  cp.typesize = 4;
  ok = caterva_schunk_new(ctx, &cp, RT_CHUNK, CATERVA_STORE_CONTIGUOUS, path, &sc) == 0;
  fill(data, 1, 1);
  ok = ok && caterva_schunk_append_buffer(ctx, sc, data, RT_CHUNK) == 1;
  caterva_schunk_free(sc);
  sc = NULL;
  before = read_all(path, &blen);
  ok = ok && caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0;
  fill(data, 2, 3);
  ok = ok && caterva_schunk_append_buffer(ctx, sc, data, RT_CHUNK) == 2 &&
       caterva_schunk_vlmeta_set(ctx, sc, "a", "b", 1) == 0;
  after = read_all(path, &alen); /* before close: not compacted yet */
  caterva_schunk_free(sc);
  sc = NULL;
  tap_ok(ok && before && after && alen > blen && memcmp(before, after, 15) == 0 &&
             memcmp(before + 69, after + 69, blen - 69) == 0,
         "crash: a commit only appends and rewrites header bytes 15..68");
  /* died before the commit point: old header, new bytes behind the frame */
  mix = malloc(alen);
  if (ok && mix != NULL) {
    memcpy(mix, after, alen);
    memcpy(mix + 15, before + 15, 54);
    ok = tu_write_file(path, mix, alen) == 0 && caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &sc) == 0 &&
         caterva_schunk_nchunks(sc) == 1 && caterva_schunk_vlmeta_count(sc) == 0;
    caterva_schunk_free(sc);
    sc = NULL;
    ok = ok && caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0 &&
         file_size(path) == (int64_t)blen;
    tap_ok(ok, "crash: interrupted commit reads as the previous frame; leftovers truncated");
    caterva_schunk_free(sc);
    sc = NULL;
    /* died after the commit point: the new frame, readable as is */
    ok = tu_write_file(path, after, alen) == 0 &&
         caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &sc) == 0 &&
         caterva_schunk_nchunks(sc) == 2 && caterva_schunk_vlmeta_count(sc) == 1 &&
         caterva_schunk_decompress_chunk(ctx, sc, 1, back, RT_CHUNK) == RT_CHUNK &&
         memcmp(back, data, RT_CHUNK) == 0;
    tap_ok(ok, "crash: committed frame with dead bytes reads as the new frame");
    caterva_schunk_free(sc);
    sc = NULL;
  }
  free(mix);
  free(before);
  free(after);
}

/* ---- malformed frames ------------------------------------------------------------------------ */

/* Opening must fail cleanly or produce something whose every chunk and attribute can be
 * decoded or refused cleanly. */
static int exercise(const uint8_t *p, size_t n) {
  caterva_schunk *sc = NULL;
  int rc = caterva_schunk_open_buffer(ctx, p, n, &sc);
  if (rc < 0) return rc;
  {
    int32_t cs = caterva_schunk_chunksize(sc);
    uint8_t *buf = malloc(cs > 0 ? (size_t)cs : 1);
    for (int64_t i = 0; buf != NULL && i < caterva_schunk_nchunks(sc) && i < 64; i++)
      (void)caterva_schunk_decompress_chunk(ctx, sc, i, buf, cs);
    free(buf);
  }
  for (int k = 0; k < caterva_schunk_vlmeta_count(sc); k++) {
    uint8_t *v = NULL;
    int32_t len;
    (void)caterva_schunk_vlmeta_get(ctx, sc, caterva_schunk_vlmeta_name(sc, k), &v, &len);
    free(v);
  }
  caterva_schunk_free(sc);
  return 0;
}

static uint8_t *small_frame(int64_t *len) {
  caterva_cparams cp;
  caterva_schunk *sc = NULL;
  uint8_t data[256], *buf = NULL;
  caterva_cparams_init(&cp);
  cp.typesize = 2;
  cp.codec = CATERVA_BLOSCLZ;
  for (int i = 0; i < 256; i++) data[i] = (uint8_t)(i * 7 / 5);
  if (caterva_schunk_new(ctx, &cp, 256, CATERVA_STORE_MEMORY, NULL, &sc) == 0 &&
      caterva_schunk_meta_add(ctx, sc, "b2nd", "meta", 4) == 0 &&
      caterva_schunk_vlmeta_set(ctx, sc, "attrs", "\x81\xa1k\x01", 4) == 0 &&
      caterva_schunk_append_buffer(ctx, sc, data, 256) == 1 &&
      caterva_schunk_append_buffer(ctx, sc, (uint8_t[256]){0}, 256) == 2 &&
      caterva_schunk_append_buffer(ctx, sc, data, 200) == 3)
    (void)caterva_schunk_to_buffer(ctx, sc, &buf, len);
  caterva_schunk_free(sc);
  return buf;
}

static void test_empty_frame(void) {
  static const uint8_t empty_trailer[35] = {0x94, 0x01, 0x93, 0xcd, 0x00, 0x06, 0xde, 0x00, 0x00,
                                            0xdc, 0x00, 0x00, 0xce, 0x00, 0x00, 0x00, 0x23, 0xd8};
  caterva_cparams cp;
  caterva_schunk *sc = NULL;
  uint8_t *buf = NULL;
  int64_t len = 0;
  int ok;
  caterva_cparams_init(&cp);
  ok = caterva_schunk_new(ctx, &cp, 800, CATERVA_STORE_MEMORY, NULL, &sc) == 0 &&
       caterva_schunk_to_buffer(ctx, sc, &buf, &len) == 0;
  tap_ok(ok && len == 87 + 10 + 35 && memcmp(buf + len - 35, empty_trailer, 35) == 0 &&
             memcmp(buf + 87, "\x93\xcd\x00\x07\xde\x00\x00\xdc\x00\x00", 10) == 0 &&
             buf[25] == 0x12 && buf[26] == 0 && buf[27] == 0x55 && buf[28] == 3 &&
             cat_be32(buf + 11) == 97 && cat_be64(buf + 16) == (uint64_t)len,
         "empty frame: header, metalayer section and 35-byte trailer as the reference writes");
  free(buf);
  caterva_schunk_free(sc);
}

static void test_malformed(void) {
  int64_t len = 0;
  uint8_t *f = small_frame(&len), *g;
  int all = 1;
  caterva_schunk *sc = NULL;
  if (!tap_ok(f != NULL, "small frame built (%lld bytes)", (long long)len)) return;
  tap_ok(exercise(f, (size_t)len) == 0, "small frame opens");
  g = malloc((size_t)len);
  for (int64_t n = 0; n < len; n++) {
    memcpy(g, f, (size_t)n);
    if (exercise(g, (size_t)n) != CATERVA_E_CORRUPT) all = 0;
  }
  tap_ok(all, "every truncation of the frame is CATERVA_E_CORRUPT");
  for (int64_t k = 0; k < len; k++) {
    for (int bit = 0; bit < 8; bit++) {
      memcpy(g, f, (size_t)len);
      g[k] ^= (uint8_t)(1 << bit);
      (void)exercise(g, (size_t)len);
    }
  }
  tap_ok(1, "every single-bit flip is handled (%lld inputs)", (long long)len * 8);
  /* lying fields */
  memcpy(g, f, (size_t)len);
  cat_put_be32(g + 11, (uint32_t)(len + 5));
  tap_ok(exercise(g, (size_t)len) == CATERVA_E_CORRUPT, "header_len beyond the frame");
  memcpy(g, f, (size_t)len);
  cat_put_be64(g + 16, (uint64_t)len + 1);
  tap_ok(exercise(g, (size_t)len) == CATERVA_E_CORRUPT, "frame_len beyond the buffer");
  memcpy(g, f, (size_t)len);
  cat_put_be64(g + 39, (uint64_t)len);
  tap_ok(exercise(g, (size_t)len) == CATERVA_E_CORRUPT, "cbytes beyond the frame");
  memcpy(g, f, (size_t)len);
  cat_put_be64(g + 30, (uint64_t)1 << 40);
  tap_ok(exercise(g, (size_t)len) < 0, "nbytes claiming 2^32 chunks");
  memcpy(g, f, (size_t)len);
  cat_put_be32(g + len - 22, (uint32_t)len);
  tap_ok(exercise(g, (size_t)len) == CATERVA_E_CORRUPT, "trailer_len beyond the frame");
  /* an index entry pointing past the chunk section: rebuild the index chunk memcpyed */
  if (caterva_schunk_open_buffer(ctx, f, (size_t)len, &sc) == 0) {
    int64_t hl = sc->header_len, cb = sc->cbytes, ent[3];
    caterva_cparams cp;
    uint8_t idx[24 + 32], le[24];
    int32_t icb;
    memcpy(ent, sc->entries, sizeof ent);
    ent[2] = cb + 100;
    for (int i = 0; i < 3; i++) cat_put_le64(le + 8 * i, (uint64_t)ent[i]);
    caterva_cparams_init(&cp);
    cp.clevel = 0;
    icb = caterva_chunk_compress(ctx, &cp, le, 24, idx, sizeof idx);
    memcpy(g, f, (size_t)len);
    if (icb == 56 && hl + cb + 56 <= len) {
      uint8_t orig_idx[32];
      memcpy(orig_idx, f + hl + cb, 32);
      if (cat_le32s(orig_idx + 12) == 56) {
        memcpy(g + hl + cb, idx, 56);
        tap_ok(exercise(g, (size_t)len) == CATERVA_E_CORRUPT, "index entry outside the chunk section");
        ent[2] = (int64_t)0x8300000000000000ULL;
        for (int i = 0; i < 3; i++) cat_put_le64(le + 8 * i, (uint64_t)ent[i]);
        caterva_chunk_compress(ctx, &cp, le, 24, idx, sizeof idx);
        memcpy(g + hl + cb, idx, 56);
        tap_ok(exercise(g, (size_t)len) == CATERVA_E_CORRUPT, "index entry with a bad special kind");
        ent[2] = cb - 40; /* inside the section, but the chunk there overruns it */
        for (int i = 0; i < 3; i++) cat_put_le64(le + 8 * i, (uint64_t)ent[i]);
        caterva_chunk_compress(ctx, &cp, le, 24, idx, sizeof idx);
        memcpy(g + hl + cb, idx, 56);
        caterva_schunk_free(sc);
        sc = NULL;
        {
          const uint8_t *p;
          int32_t pcb;
          int ok = caterva_schunk_open_buffer(ctx, g, (size_t)len, &sc) == 0 &&
                   caterva_schunk_get_chunk(ctx, sc, 2, &p, &pcb) == CATERVA_E_CORRUPT;
          tap_ok(ok, "chunk overrunning the section: %s", caterva_ctx_errmsg(ctx));
        }
      } else {
        tap_diag("index chunk not memcpyed; skipping index rewrites");
      }
    }
    caterva_schunk_free(sc);
  }
  free(g);
  free(f);
}

/* A frame saved by us, read back by byte inspection: fixed markers where the reference
 * expects them. */
static void test_written_layout(void) {
  caterva_cparams cp;
  caterva_schunk *sc = NULL;
  uint8_t *buf = NULL, data[800];
  int64_t len = 0;
  int ok;
  caterva_cparams_init(&cp);
  cp.codec = CATERVA_ZSTD;
  cp.clevel = 1;
  cp.typesize = 8;
  cp.blocksize = 400;
  for (int i = 0; i < 800; i++) data[i] = (uint8_t)(i % 13);
  ok = caterva_schunk_new(ctx, &cp, 800, CATERVA_STORE_MEMORY, NULL, &sc) == 0 &&
       caterva_schunk_meta_add(ctx, sc, "caterva", "12345", 5) == 0 &&
       caterva_schunk_vlmeta_set(ctx, sc, "attrs", data, 38) == 0 &&
       caterva_schunk_append_buffer(ctx, sc, data, 800) == 1 &&
       caterva_schunk_to_buffer(ctx, sc, &buf, &len) == 0;
  if (ok) {
    int64_t tstart = len - cat_be32(buf + len - 22);
    ok = buf[27] == 0x15 && buf[68] == 0xc3 && buf[77] == 5 && cat_be32(buf + 53) == 400 &&
         memcmp(buf + 87, "\x93\xcd\x00\x14\xde\x00\x01\xa7" "caterva\xd2\x00\x00\x00\x6e\xdc\x00\x01\xc6\x00\x00\x00\x05" "12345", 31) == 0 &&
         memcmp(buf + tstart, "\x94\x01\x93\xcd\x00\x11\xde\x00\x01\xa5" "attrs\xd2\x00\x00\x00\x17\xdc\x00\x01\xc6", 24) == 0 &&
         buf[len - 23] == 0xce && buf[len - 18] == 0xd8 && buf[len - 17] == 0;
  }
  tap_ok(ok, "written header and trailer use the reference's markers and offsets");
  free(buf);
  caterva_schunk_free(sc);
}

/* Edit copies of reference-written files: append to a contiguous b2nd and to a sparse
 * directory, reopen, and find the old chunks intact. */
static int copy_file(const char *from, const char *to) {
  size_t n;
  uint8_t *b = read_all(from, &n);
  int rc = b != NULL ? tu_write_file(to, b, n) : -1;
  free(b);
  return rc;
}

static void edit_reference(const char *golden, const char *name, int sparse) {
  char src[1024], dst[1024];
  caterva_schunk *sc = NULL;
  uint8_t *before = NULL, *after = NULL, *extra = NULL;
  int64_t n0 = 0, cs = 0;
  int ok;
  snprintf(src, sizeof src, "%s/%s", golden, name);
  snprintf(dst, sizeof dst, "%s/edit_%s", tmpdir, name);
  if (sparse) {
    DIR *d = opendir(src);
    struct dirent *e;
    ok = d != NULL && mkdir(dst, 0777) == 0;
    while (ok && (e = readdir(d)) != NULL) {
      char a[2400], b[2400];
      if (e->d_name[0] == '.') continue;
      snprintf(a, sizeof a, "%s/%s", src, e->d_name);
      snprintf(b, sizeof b, "%s/%s", dst, e->d_name);
      ok = copy_file(a, b) == 0;
    }
    if (d != NULL) closedir(d);
  } else {
    ok = copy_file(src, dst) == 0;
  }
  ok = ok && caterva_schunk_open(ctx, dst, CATERVA_OPEN_WRITE, &sc) == 0 && decode_all(sc, &before);
  if (ok) {
    n0 = caterva_schunk_nchunks(sc);
    cs = caterva_schunk_chunksize(sc);
    extra = malloc((size_t)cs);
    for (int64_t k = 0; extra != NULL && k < cs; k++) extra[k] = (uint8_t)(k * 31 + 7);
    ok = extra != NULL && caterva_schunk_append_buffer(ctx, sc, extra, (int32_t)cs) == n0 + 1 &&
         caterva_schunk_vlmeta_set(ctx, sc, "note", "edited", 6) == 0;
  }
  caterva_schunk_free(sc);
  sc = NULL;
  ok = ok && caterva_schunk_open(ctx, dst, CATERVA_OPEN_READ, &sc) == 0 &&
       caterva_schunk_nchunks(sc) == n0 + 1 && decode_all(sc, &after) &&
       memcmp(before, after, (size_t)(n0 * cs)) == 0 &&
       memcmp(after + n0 * cs, extra, (size_t)cs) == 0 && caterva_schunk_vlmeta_count(sc) >= 1;
  tap_ok(ok, "reference file %s: append + vlmeta, reopen, old chunks intact", name);
  caterva_schunk_free(sc);
  free(before);
  free(after);
  free(extra);
}

static void test_edit_reference(void) {
  const char *dir = getenv("CATERVA_GOLDEN");
  char probe[1024];
  if (dir == NULL || dir[0] == '\0') return;
  snprintf(probe, sizeof probe, "%s/manifest.json", dir);
  if (file_size(probe) < 0) return;
  edit_reference(dir, "s01_i8_1d_ramp_blosclz.b2nd", 0);
  edit_reference(dir, "s14_f64_2d_zeros.b2nd", 0);
  edit_reference(dir, "c07_i64_2d_caterva_vlmeta.caterva", 0);
  edit_reference(dir, "s04_u16_2d_steps_zlib_bitshuffle_sparse.b2frame", 1);
}

/* Another writer may let several index entries of a contiguous frame share one stored chunk
 * (readers go by offset). Our update of one of them must write the new chunk elsewhere, never
 * over the shared bytes: the other entry keeps its content, in this handle, after reopening
 * and after a compaction. */
static void test_shared_entries(void) {
  char path[512];
  caterva_cparams cp;
  caterva_schunk *sc = NULL;
  uint8_t a[RT_CHUNK], b[RT_CHUNK], back[RT_CHUNK], cb[RT_CHUNK + CATERVA_CHUNK_MAX_OVERHEAD];
  int64_t entries[2];
  int32_t cbytes;
  int ok, same = 0;
  snprintf(path, sizeof path, "%s/shared.b2nd", tmpdir);
  caterva_cparams_init(&cp);
  cp.typesize = 4;
  fill(a, 1, 1);
  fill(b, 1, 2);
  cbytes = caterva_chunk_compress(ctx, &cp, b, RT_CHUNK, cb, (int32_t)sizeof cb);
  ok = caterva_schunk_new(ctx, &cp, RT_CHUNK, CATERVA_STORE_CONTIGUOUS, path, &sc) == 0 &&
       caterva_schunk_append_buffer(ctx, sc, a, RT_CHUNK) == 1 &&
       caterva_schunk_append_buffer(ctx, sc, b, RT_CHUNK) == 2;
  /* commit an index whose two entries name chunk 0's bytes */
  if (ok) {
    entries[0] = entries[1] = sc->entries[0];
    ok = cat_file_commit(ctx, sc, entries, 2, sc->nbytes, sc->cbytes, false, true) == 0;
    caterva_schunk_set_flags(sc, CATERVA_SC_NO_AUTOCOMPACT); /* keep the index as it is */
  }
  caterva_schunk_free(sc);
  sc = NULL;
  ok = ok && caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0;
  same = ok && sc->entries[0] == sc->entries[1] &&
         caterva_schunk_decompress_chunk(ctx, sc, 1, back, RT_CHUNK) == RT_CHUNK &&
         memcmp(back, a, RT_CHUNK) == 0;
  tap_ok(same, "shared entries: an index with two entries on one stored chunk reads both");
  ok = same && cbytes > 0 && caterva_schunk_update_chunk(ctx, sc, 0, cb, cbytes) == 0;
  tap_ok(ok && sc->entries[0] != sc->entries[1] &&
             caterva_schunk_decompress_chunk(ctx, sc, 1, back, RT_CHUNK) == RT_CHUNK &&
             memcmp(back, a, RT_CHUNK) == 0 &&
             caterva_schunk_decompress_chunk(ctx, sc, 0, back, RT_CHUNK) == RT_CHUNK &&
             memcmp(back, b, RT_CHUNK) == 0,
         "shared entries: updating one writes a new chunk; the other still reads its bytes");
  if (sc != NULL) caterva_schunk_set_flags(sc, CATERVA_SC_NO_AUTOCOMPACT);
  caterva_schunk_free(sc);
  sc = NULL;
  ok = ok && caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0 &&
       caterva_schunk_decompress_chunk(ctx, sc, 1, back, RT_CHUNK) == RT_CHUNK &&
       memcmp(back, a, RT_CHUNK) == 0 && caterva_schunk_compact(ctx, sc, 1) == 0 &&
       caterva_schunk_decompress_chunk(ctx, sc, 1, back, RT_CHUNK) == RT_CHUNK &&
       memcmp(back, a, RT_CHUNK) == 0 &&
       caterva_schunk_decompress_chunk(ctx, sc, 0, back, RT_CHUNK) == RT_CHUNK &&
       memcmp(back, b, RT_CHUNK) == 0;
  tap_ok(ok, "shared entries: reopened and compacted, both chunks read right");
  caterva_schunk_free(sc);
}

/* A vlmetalayer set again with a few bytes changed (the block statistics at each commit) is
 * re-encoded from its changed blocks only: the stored chunk must be byte-identical to
 * compressing the new content whole, and read back as the new content; a change of length
 * and an unchanged content too. */
static void test_vlmeta_patch(void) {
  enum { N = 200000 };
  caterva_cparams cp;
  caterva_schunk *sc = NULL;
  uint8_t *v = malloc(N), *whole = NULL, *got = NULL;
  int32_t wcb = 0, len = 0;
  int ok, same = 1, k;
  caterva_cparams_init(&cp);
  ok = v != NULL && caterva_schunk_new(ctx, &cp, 4096, CATERVA_STORE_MEMORY, NULL, &sc) == 0;
  for (int i = 0; ok && i < N; i++) v[i] = (uint8_t)((i / 40) * 7 + (i % 40 < 8 ? i % 8 : 0));
  ok = ok && caterva_schunk_vlmeta_set(ctx, sc, "stats", v, N) == 0;
  for (int round = 0; ok && round < 4; round++) {
    int32_t n = round == 3 ? N - 8 : N; /* round 3: another length (compressed whole) */
    if (round == 1) v[123457] ^= 0x5a, v[N - 3] ^= 1; /* two blocks */
    if (round == 0) v[5] ^= 0xff;                     /* the first block */
    ok = caterva_schunk_vlmeta_set(ctx, sc, "stats", v, n) == 0; /* round 2: unchanged */
    for (k = 0; ok && k < sc->nvlmeta && strcmp(sc->vlmeta[k].name, "stats") != 0; k++) {}
    free(whole);
    whole = NULL;
    ok = ok && k < sc->nvlmeta && cat_frame_vlmeta_compress(ctx, v, n, &whole, &wcb) == 0;
    same &= ok && wcb == sc->vlmeta[k].cbytes && memcmp(whole, sc->vlmeta[k].chunk, (size_t)wcb) == 0;
    ok = ok && caterva_schunk_vlmeta_get(ctx, sc, "stats", &got, &len) >= 0 && len == n &&
         memcmp(got, v, (size_t)n) == 0;
    free(got);
    got = NULL;
  }
  tap_ok(ok, "vlmetalayer set again 4 times (one block changed, two, none, another length) reads back");
  tap_ok(ok && same, "each stored chunk is byte-identical to compressing the content whole");
  free(whole);
  free(v);
  caterva_schunk_free(sc);
}

/* ---- an index read a block at a time (frame_index.c) ---------------------------------- */

/* Chunk i of the big frame: stored (values i) when i % 997 == 0, else a zero special. */
#define BIG_N 600000 /* 4.8 MB of index: 10 blocks of 512 KiB */
#define BIG_CS 64

static int big_stored(int64_t i) { return i % 997 == 0; }

/* A memory schunk of BIG_N chunks built entry by entry (appending them one at a time copies
 * the index each time), saved as a contiguous file at path; bad >= 0: that entry is given a
 * special kind that does not exist (3). */
static int big_frame(const char *path, int64_t bad) {
  caterva_cparams cp;
  caterva_schunk *sc = NULL;
  int32_t v[BIG_CS / 4];
  int rc;
  caterva_cparams_init(&cp);
  cp.typesize = 4;
  rc = caterva_schunk_new(ctx, &cp, BIG_CS, CATERVA_STORE_MEMORY, NULL, &sc);
  if (rc < 0) return rc;
  sc->entries = malloc(BIG_N * sizeof *sc->entries);
  sc->data = calloc(BIG_N, sizeof *sc->data);
  rc = sc->entries != NULL && sc->data != NULL ? 0 : CATERVA_E_NOMEM;
  sc->nchunks = rc == 0 ? BIG_N : 0;
  sc->nbytes = sc->nchunks * BIG_CS;
  sc->frame_len = -1;
  for (int64_t i = 0; rc == 0 && i < BIG_N; i++) {
    int32_t cb;
    if (!big_stored(i)) {
      sc->entries[i] = i == bad ? (int64_t)0x8300000000000000ULL : CAT_ENTRY_SPECIAL(1);
      continue;
    }
    for (int k = 0; k < BIG_CS / 4; k++) v[k] = (int32_t)i;
    sc->data[i] = malloc(BIG_CS + CATERVA_CHUNK_MAX_OVERHEAD);
    cb = sc->data[i] == NULL ? CATERVA_E_NOMEM
                             : caterva_chunk_compress(ctx, &cp, v, BIG_CS, sc->data[i],
                                                      BIG_CS + CATERVA_CHUNK_MAX_OVERHEAD);
    if (cb < 0) rc = cb;
    sc->entries[i] = 0;
    sc->cbytes += cb > 0 ? cb : 0;
  }
  if (rc == 0) rc = caterva_schunk_save(ctx, sc, path, CATERVA_STORE_CONTIGUOUS);
  caterva_schunk_free(sc);
  return rc;
}

/* Chunk i read through sc is what big_frame made. */
static int big_chunk_ok(caterva_schunk *sc, int64_t i) {
  int32_t v[BIG_CS / 4];
  int special = caterva_schunk_chunk_special(sc, i);
  if (caterva_schunk_decompress_chunk(ctx, sc, i, v, BIG_CS) != BIG_CS) return 0;
  for (int k = 0; k < BIG_CS / 4; k++)
    if (v[k] != (big_stored(i) ? (int32_t)i : 0)) return 0;
  return special == (big_stored(i) ? CATERVA_SPECIAL_NONE : CATERVA_SPECIAL_ZERO);
}

static void test_lazy_index(void) {
  char path[512], bad[512], copy[512];
  caterva_schunk *sc = NULL, *sc2 = NULL;
  /* every block of the index twice, in an order that evicts blocks from the cache of 4 */
  static const int64_t order[] = {0, 599999, 65535, 65536, 300000, 131072, 524287, 524288,
                                  196608, 400000, 997 * 100, 0, 599999, 262144, 458752,
                                  393216, 327680, 997 * 600, 1, 65537};
  int ok, lazy0, same = 1;
  int64_t after;
  snprintf(path, sizeof path, "%s/bigindex.b2nd", tmpdir);
  snprintf(bad, sizeof bad, "%s/bigindex_bad.b2nd", tmpdir);
  snprintf(copy, sizeof copy, "%s/bigindex_copy.b2nd", tmpdir);
  ok = big_frame(path, -1) == 0 && caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &sc) == 0;
  tap_ok(ok, "a frame of %d chunks saved and opened read-only", BIG_N);
  if (!ok) return;
  lazy0 = sc->entries == NULL && cat_sc_index_blocks_decoded(sc) == 0;
  tap_ok(lazy0, "the open decodes no block of its index (%lld)",
         (long long)cat_sc_index_blocks_decoded(sc));
  for (size_t k = 0; k < sizeof order / sizeof *order; k++) ok &= big_chunk_ok(sc, order[k]);
  after = cat_sc_index_blocks_decoded(sc);
  tap_ok(ok, "chunks in every block of the index, read in an order that evicts, are right");
  tap_ok(after >= 10 && after <= (int64_t)(sizeof order / sizeof *order),
         "each read decoded at most one block of the index (%lld blocks for %d reads)",
         (long long)after, (int)(sizeof order / sizeof *order));
  /* a copy needs every entry: the whole index is decoded, and the copy is the same */
  ok = caterva_schunk_save(ctx, sc, copy, CATERVA_STORE_CONTIGUOUS) == 0 && sc->entries != NULL &&
       caterva_schunk_open(ctx, copy, CATERVA_OPEN_WRITE, &sc2) == 0;
  for (int64_t i = 0; ok && i < BIG_N; i++) same &= sc2->entries[i] == sc->entries[i];
  for (int64_t i = 0; ok && i < BIG_N; i += 4999) same &= big_chunk_ok(sc, i);
  tap_ok(ok && same, "a copy of it decodes the whole index and holds the same entries");
  caterva_schunk_free(sc2);
  caterva_schunk_free(sc);
  sc = NULL;
  /* a bad entry in block 5: the open succeeds (its block is not read), the reads that use
   * it fail, whether the block is read an entry at a time or decoded, and only those */
  ok = big_frame(bad, 5 * 65536 + 7) == 0 && caterva_schunk_open(ctx, bad, CATERVA_OPEN_READ, &sc) == 0;
  tap_ok(ok, "a frame with a bad entry in block 5 of its index opens read-only");
  if (ok) {
    static const int64_t reads[] = {5 * 65536 + 7, 5 * 65536 + 100, 5 * 65536 + 7,
                                    5 * 65536 + 6, 5 * 65536 + 200, 5 * 65536 + 7};
    char msg[CAT_ERRMSG_SIZE] = "";
    int all = 1;
    for (size_t k = 0; k < sizeof reads / sizeof *reads; k++) {
      int32_t v[BIG_CS / 4];
      int64_t i = reads[k];
      int sp = caterva_schunk_chunk_special(sc, i);
      int32_t got = caterva_schunk_decompress_chunk(ctx, sc, i, v, BIG_CS);
      if (i == 5 * 65536 + 7) {
        all &= got == CATERVA_E_CORRUPT &&
               strstr(caterva_ctx_errmsg(ctx), "bad special entry 327687") != NULL;
        snprintf(msg, sizeof msg, "%s", caterva_ctx_errmsg(ctx));
      } else {
        all &= big_chunk_ok(sc, i);
      }
      all &= i != 5 * 65536 + 7 || sp == CATERVA_E_CORRUPT;
    }
    tap_ok(big_chunk_ok(sc, 3) && all,
           "chunk 3 reads, a read that uses the bad entry fails (%s), the block's other "
           "chunks read, before and after the block is decoded", msg);
  }
  caterva_schunk_free(sc);
  sc = NULL;
  tap_ok(caterva_schunk_open(ctx, bad, CATERVA_OPEN_WRITE, &sc) == CATERVA_E_CORRUPT,
         "opened for writing, the whole index is checked: %s", caterva_ctx_errmsg(ctx));
  caterva_schunk_free(sc);
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/test_frame.XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(tmpdir) == NULL || caterva_ctx_new(2, &ctx) != 0) {
    tap_ok(0, "setup");
    return tap_done();
  }
  test_golden();
  test_empty_frame();
  test_written_layout();
  roundtrip(CATERVA_STORE_MEMORY);
  roundtrip(CATERVA_STORE_CONTIGUOUS);
  roundtrip(CATERVA_STORE_SPARSE);
  test_crash_states();
  test_edit_reference();
  test_shared_entries();
  test_malformed();
  test_vlmeta_patch();
  test_lazy_index();
  caterva_ctx_free(ctx);
  tu_rm_tree(tmpdir);
  return tap_done();
}

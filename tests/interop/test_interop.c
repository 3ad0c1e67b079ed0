/*
 * test_interop.c -- the interop WRITER test: write arrays for other implementations to read.
 *
 * Writes about 40 small arrays into $CATERVA_INTEROP_OUT (default tests/out/interop, relative
 * to the current directory), each with its raw C-order little-endian bytes in raw/<name>.raw,
 * and one manifest.json in the schema of ../shared/golden/manifest.json. The cases cover every
 * codec, every filter (bytedelta as {shuffle, bytedelta}), contiguous files (.b2nd) and sparse
 * directories (.b2frame), 0-d and 1-d to 8-d, every numeric dtype and bool, user attributes,
 * dimension names, shapes that chunks and blocks do not divide, size-1 and zero-length
 * dimensions, all-zero arrays (special-zero index entries), repeated-value and NaN chunks.
 *
 * What is checked here, without the reference library:
 *  - every file reopens through caterva_array_open and to_buffer equals the raw bytes;
 *  - both metalayers (`caterva` for ndim <= 8, `b2nd`) are present, byte for byte as the fact
 *    sheet (§5.1) spells them, from an encoder written independently in this file;
 *  - the frame bytes (§3, §4): magic, header_len, frame_len == file size, flags 0x12, frame
 *    type, codec byte, fixed header fields, metalayer offsets pointing at C6, trailer layout and
 *    length, vlmetalayer chunks; the offsets index right after the chunks (contiguous) or right
 *    after the header (sparse); the stored chunks tile the chunk section exactly (no dead
 *    bytes) or, for sparse frames, are exactly the chunk files of the directory; every chunk
 *    header (version 5, sizes, codec, filters, split flag as the reference decides it);
 *    special-zero entries exactly where a chunk holds only zeros;
 *  - the manifest re-parses (minijson) and every raw_sha256 matches a recomputation
 *    (SHA-256 of tests/lib/sha256.c, itself checked against FIPS 180-4 test vectors).
 *
 * Contiguous files are written either straight to the file store (caterva_array_from_buffer
 * with a path; caterva_array_free compacts the file, which the tiling check proves) or built in
 * memory and written with caterva_array_save; the manifest's "writer" says which.
 *
 * The w42-w45 cases are written THROUGH SQL: the test loads the built SQLite extension
 * ($top_builddir/.libs/caterva, or ../../.libs/caterva from this program; CATERVA_EXT overrides)
 * into an in-memory database and runs CREATE VIRTUAL TABLE ... shape=, an INSERT ... SELECT of
 * every cell from a recursive CTE, an UPDATE of a slab, a statement that must fail (a value the
 * dtype cannot hold), a DELETE of a box (cells back to the fill value) and an INSERT past the
 * first extent (growth along dimension 0), either as autocommit statements or in one
 * BEGIN ... COMMIT with a SAVEPOINT rolled back. The expected content is computed here, in C,
 * from the same formulas (table SQLCASES, interop_sql.c), and the files then go through every
 * check above, with these differences, all following from how the SQL writer legitimately
 * writes:
 *  - the vlmetalayers are `_FillValue` (msgpack float64 or int) and, with dims=,
 *    `_ARRAY_DIMENSIONS`;
 *  - fill-valued chunks may be special index entries (zero, NaN) or repeated-value chunks when
 *    every item of the chunk inside the shape has that value;
 *  - contiguous files may hold DEAD BYTES in the chunk section: a transaction never overwrites
 *    committed bytes (replaced chunks and the old index and trailer stay where they were) and
 *    the extension compacts at commit (and at close) only once dead bytes pass max_dead
 *    percent of the live ones (default 1; w42 is written with 100 to keep some). The
 *    chunk check then requires the stored chunks to be disjoint and inside the section instead
 *    of tiling it, and reports the dead bytes (manifest "dead_bytes"); other readers must cope
 *    with such files, which is what these cases are for;
 *  - the directory of a sparse frame also holds the `.b2lock` sidecar (c-blosc2 puts it there
 *    too); the sidecar's generation counter (bytes 8-15, little-endian) must equal the number
 *    of write transactions run.
 *
 * bcolz datasets converted by caterva_import are added when tests/tools/mkbcolz is built (see
 * interop_bcolz.c).
 *
 * Before writing, the output directory's *.b2nd and *.b2frame entries, raw/ and manifest.json
 * are removed (nothing else: the directory may be one the user named).
 *
 * This file writes and checks each case and runs the whole; interop.h lists the other sources
 * (the case tables, values, the SQL writer, the frame checks, the manifest, bcolz).
 */
#define _XOPEN_SOURCE 700
#define TAP_MAIN /* this source holds the TAP counters (tap.h) */
#include "interop.h"

#include "fsutil.h"
#include "minijson.h"
#include "sha256.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- writing -------------------------------------------------------------------------- */

static int write_case(caterva_ctx *ctx, const icase *c, const char *path, const uint8_t *raw,
                      int64_t rawlen) {
  caterva_array_params p;
  caterva_array *a = NULL;
  int store = c->sparse ? CATERVA_STORE_SPARSE : CATERVA_STORE_CONTIGUOUS;
  int rc;
  caterva_array_params_init(&p);
  p.ndim = c->ndim;
  for (int k = 0; k < c->ndim; k++) {
    p.shape[k] = c->shape[k];
    p.chunkshape[k] = c->chunks[k];
    p.blockshape[k] = c->blocks[k];
  }
  p.dtype = c->dtype;
  p.cparams.codec = c->codec;
  p.cparams.clevel = c->clevel;
  p.cparams.splitmode = c->split;
  for (int k = 0; k < 6; k++) {
    p.cparams.filters[k] = c->filters[k];
    p.cparams.filters_meta[k] = (uint8_t)(int8_t)c->fmeta[k];
  }
  p.store = c->write == W_MEMSAVE ? CATERVA_STORE_MEMORY : store;
  p.path = c->write == W_MEMSAVE ? NULL : path;
  switch (c->write) {
  case W_FULL: rc = caterva_array_create(ctx, &p, CATERVA_FILL_VALUE, raw, &a); break;
  case W_NANFILL: rc = caterva_array_create(ctx, &p, CATERVA_FILL_NAN, NULL, &a); break;
  default: rc = caterva_array_from_buffer(ctx, &p, raw, rawlen, &a); break;
  }
  if (rc == 0 && (c->attrs & A_ATTRS)) {
    msgpack_sbuffer sb;
    pack_attrs(&sb);
    rc = caterva_array_attr_set(ctx, a, "attrs", sb.data, (int32_t)sb.size);
    msgpack_sbuffer_destroy(&sb);
  }
  if (rc == 0 && (c->attrs & A_DIMNAMES)) rc = caterva_array_set_dim_names(ctx, a, DIM_NAMES);
  if (rc == 0 && c->write == W_MEMSAVE) rc = caterva_array_save(ctx, a, path, store);
  caterva_array_free(a);
  return rc;
}

/* ---- per case ------------------------------------------------------------------------- */

/* Put the expected vlmetalayers in the order the frame stores them (the order in which
 * they were first set, which depends on the writer: statistics come with the chunks). */
static void sort_vl_as_stored(caterva_schunk *sc, expected_vl *vl, int nvl) {
  int n = caterva_schunk_vlmeta_count(sc), j = 0;
  for (int i = 0; i < n; i++) {
    const char *nm = caterva_schunk_vlmeta_name(sc, i);
    for (int k = j; k < nvl; k++) {
      if (strcmp(vl[k].name, nm) != 0) continue;
      expected_vl t = vl[j];
      vl[j++] = vl[k];
      vl[k] = t;
      break;
    }
  }
}

static void run_case(caterva_ctx *ctx1, caterva_ctx *ctx2, const char *dir, const icase *c,
                     case_result *res) {
  const dtype_desc *dt = find_dtype(c->dtype);
  caterva_ctx *ctx = c->nthreads > 1 ? ctx2 : ctx1;
  geom g;
  uint8_t *raw = NULL, *buf = NULL, *frame = NULL;
  char path[4096], rawpath[4096], err[512] = "";
  caterva_array *a = NULL;
  msgpack_sbuffer attrs, dims, fillmp;
  expected_vl vl[4];
  uint8_t *bsv = NULL;
  int nvl = 0, ok, ntxn = 0;
  size_t flen = 0;
  const sqlcase *sq = c->write == W_SQL ? find_sql(c->name) : NULL;
  char names[MAXD][32];
  const char *const *want_names = DIM_NAMES;
  const char *sql_names[MAXD];
  memset(res, 0, sizeof *res);
  pack_attrs(&attrs);
  msgpack_sbuffer_init(&fillmp);
  if (sq != NULL) {
    sql_colnames(c, sq, names);
    for (int k = 0; k < c->ndim; k++) sql_names[k] = names[k];
    want_names = sql_names;
    pack_str_array(&dims, sql_names, c->ndim);
  } else {
    pack_dim_names(&dims);
  }
  if (!tap_ok(dt != NULL && (c->write == W_SQL) == (sq != NULL), "%s: dtype %s known", c->name,
              c->dtype))
    goto leave;
  geom_init(c, dt->itemsize, &g);
  if (sq != NULL) pack_sql_fill(dt, sq, &fillmp);
  raw = sq != NULL ? sql_expected(c, dt, &g, sq) : gen_raw(c, dt, &g);
  res->rawlen = g.nitems * dt->itemsize;
  snprintf(path, sizeof path, "%s/%s.%s", dir, c->name, case_ext(c));
  snprintf(rawpath, sizeof rawpath, "%s/raw/%s.raw", dir, c->name);
  ok = raw != NULL && tu_write_file(rawpath, raw, (size_t)res->rawlen) == 0;
  if (ok) cat_sha256_hex(raw, (size_t)res->rawlen, res->sha);
  if (sq != NULL) ok = ok && write_sql_case(c, sq, path, &ntxn, err, sizeof err) == 0;
  else ok = ok && write_case(ctx, c, path, raw, res->rawlen) == 0;
  res->written = ok;
  if (!tap_ok(ok, "%s: written (%lld raw bytes)%s %s", c->name, (long long)res->rawlen,
              sq != NULL ? " through SQL" : "", sq != NULL ? err : caterva_ctx_errmsg(ctx)))
    goto leave;
  if (sq != NULL) res->gen = sidecar_counter(c, path);

  /* Reopen and read back. */
  ok = caterva_array_open(ctx1, path, CATERVA_OPEN_READ, &a) == 0;
  if (!tap_ok(ok, "%s: reopens %s", c->name, caterva_ctx_errmsg(ctx1))) goto leave;
  ok = caterva_array_ndim(a) == c->ndim && caterva_array_itemsize(a) == dt->itemsize &&
       caterva_array_dtype(a) != NULL && strcmp(caterva_array_dtype(a), dt->numpy) == 0;
  for (int k = 0; ok && k < c->ndim; k++)
    ok = caterva_array_shape(a)[k] == c->shape[k] &&
         caterva_array_chunkshape(a)[k] == c->chunks[k] &&
         caterva_array_blockshape(a)[k] == c->blocks[k];
  tap_ok(ok, "%s: shape, partitioning and dtype %s", c->name, dt->numpy);
  buf = malloc(res->rawlen > 0 ? (size_t)res->rawlen : 1);
  ok = buf != NULL && caterva_array_to_buffer(ctx1, a, buf, res->rawlen) == 0 &&
       memcmp(buf, raw, (size_t)res->rawlen) == 0;
  tap_ok(ok, "%s: to_buffer equals the raw bytes %s", c->name, caterva_ctx_errmsg(ctx1));

  /* Metalayers and attributes through the API. */
  {
    caterva_schunk *sc = caterva_array_schunk(a);
    const uint8_t *m;
    int32_t ml;
    uint8_t want[512];
    size_t wl = expected_meta(c, dt->numpy, 1, want);
    ok = caterva_schunk_meta_get(sc, "b2nd", &m, &ml) == 0 && (size_t)ml == wl &&
         memcmp(m, want, wl) == 0;
    if (ok) hexify(m, (size_t)ml, res->meta_hex, sizeof res->meta_hex);
    wl = expected_meta(c, dt->numpy, 0, want);
    ok = ok && (c->ndim > 8 ? caterva_schunk_meta_get(sc, "caterva", &m, &ml) == CATERVA_E_NOTFOUND
                            : caterva_schunk_meta_get(sc, "caterva", &m, &ml) == 0 &&
                                  (size_t)ml == wl && memcmp(m, want, wl) == 0);
    tap_ok(ok, "%s: metalayers 'caterva' and 'b2nd' as the fact sheet encodes them", c->name);

    res->nvl = caterva_schunk_vlmeta_count(sc);
    for (int k = 0; k < res->nvl && k < 4; k++)
      res->vlnames[k] = strdup(caterva_schunk_vlmeta_name(sc, k));
    if (sq != NULL)
      vl[nvl++] = (expected_vl){"_FillValue", (uint8_t *)fillmp.data, fillmp.size};
    if (c->attrs & A_ATTRS) vl[nvl++] = (expected_vl){"attrs", (uint8_t *)attrs.data, attrs.size};
    if (c->attrs & A_DIMNAMES)
      vl[nvl++] = (expected_vl){"_ARRAY_DIMENSIONS", (uint8_t *)dims.data, dims.size};
    /* Numeric and bool arrays carry their block statistics (checked against the data by
     * test_blockstats; here: present exactly for those dtypes, and in the trailer). */
    {
      int32_t bsl = 0;
      int want_bs = caterva_array_stats_type(a) != CATERVA_STATS_NONE;
      int have_bs = caterva_array_attr_get(ctx1, a, "_caterva_blockstats", &bsv, &bsl) == 0;
      tap_ok(want_bs == have_bs && want_bs == caterva_array_has_stats(a),
             "%s: block statistics %s", c->name, want_bs ? "stored" : "absent (no numeric dtype)");
      if (have_bs) vl[nvl++] = (expected_vl){"_caterva_blockstats", bsv, (size_t)bsl};
    }
    sort_vl_as_stored(sc, vl, nvl);
    ok = res->nvl == nvl;
    for (int k = 0; ok && k < nvl; k++) {
      uint8_t *v = NULL;
      int32_t vlen = 0;
      ok = caterva_array_attr_get(ctx1, a, vl[k].name, &v, &vlen) == 0 &&
           (size_t)vlen == vl[k].len && memcmp(v, vl[k].content, vl[k].len) == 0;
      free(v);
    }
    if (ok && (c->attrs & A_DIMNAMES)) {
      char **got = NULL;
      ok = caterva_array_get_dim_names(ctx1, a, &got) == 0;
      for (int k = 0; ok && k < c->ndim; k++) ok = strcmp(got[k], want_names[k]) == 0;
      caterva_array_free_names(got, c->ndim);
    }
    tap_ok(ok, "%s: %d user attribute(s) read back", c->name, nvl);
  }

  /* The bytes on disk. */
  {
    char fp[4200];
    if (c->sparse) snprintf(fp, sizeof fp, "%s/chunks.b2frame", path);
    else snprintf(fp, sizeof fp, "%s", path);
    frame = slurp(fp, &flen);
    ok = frame != NULL &&
         check_frame(ctx1, c, dt, &g, raw, path, frame, flen, vl, nvl, &res->ff, err, sizeof err);
    tap_ok(ok, "%s: %s frame bytes follow the fact sheet%s%s", c->name,
           c->sparse ? "sparse" : "contiguous", ok ? "" : ": ", err);
    if (ok && strcmp(c->name, "w22_i32_2d_attrs_zstd") == 0)
      check_negative(ctx1, c, dt, &g, raw, path, frame, flen, vl, nvl);
    if (ok && sq != NULL && !c->sparse && res->ff.dead > 0)
      check_negative_sql(ctx1, c, dt, &g, raw, path, frame, flen, vl, nvl);
    tap_ok(res->ff.split_mismatch == 0, "%s: split flags follow the reference rule (%d differ)",
           c->name, res->ff.split_mismatch);
    if (c->sparse) {
      DIR *d = opendir(path);
      struct dirent *de;
      res->ff.file_nbytes = 0;
      while (d && (de = readdir(d)) != NULL) {
        char q[4400];
        if (de->d_name[0] == '.') continue;
        snprintf(q, sizeof q, "%s/%s", path, de->d_name);
        res->ff.file_nbytes += tu_file_size(q);
      }
      if (d) closedir(d);
    } else {
      res->ff.file_nbytes = (int64_t)flen;
    }
    tap_diag("%s: %lld chunks (%lld stored, %lld memcpyed, %lld zero, %lld NaN, %lld value), "
             "file %lld bytes",
             c->name, (long long)res->ff.nchunks, (long long)res->ff.n_stored,
             (long long)res->ff.n_memcpy, (long long)res->ff.n_zero, (long long)res->ff.n_nan,
             (long long)res->ff.n_value, (long long)res->ff.file_nbytes);
    if (sq != NULL && !c->sparse)
      tap_diag("%s: %lld dead bytes in the chunk section, as the SQL writer left it", c->name,
               (long long)res->ff.dead);
  }
  if (sq != NULL) {
    /* +1 per exclusive acquisition: each write transaction, and for a contiguous file the
     * extension's check at close (it compacts a written file with dead space under the
     * lock): taken when the dead bytes pass max_dead percent of the live ones
     * (cvCompactWanted), so certainly when the file still has that many. */
    int64_t extra = res->gen - ntxn;
    const char *md = strstr(sq->opts, "max_dead=");
    int64_t pct = md != NULL ? atoi(md + 9) : 1;
    int wanted = res->ff.dead > 0 && res->ff.dead * 100 > pct * (res->ff.file_nbytes - res->ff.dead);
    tap_ok(extra == wanted || (extra == 1 && !c->sparse && res->ff.dead == 0),
           "%s: the .b2lock generation counter is %lld = %d write transactions + %lld "
           "close-time check(s) (%lld dead bytes left)",
           c->name, (long long)res->gen, ntxn, (long long)extra, (long long)res->ff.dead);
  }
leave:
  caterva_array_free(a);
  msgpack_sbuffer_destroy(&attrs);
  msgpack_sbuffer_destroy(&dims);
  msgpack_sbuffer_destroy(&fillmp);
  free(raw);
  free(buf);
  free(frame);
  free(bsv);
}

/* ---- SHA-256 self-test (FIPS 180-4 / NIST example vectors) ------------------------------ */

static void check_sha256(void) {
  static const struct { const char *msg, *hex; } V[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqr"
       "lmnopqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
  };
  char hex[65];
  int ok = 1;
  for (size_t i = 0; i < sizeof V / sizeof V[0]; i++) {
    cat_sha256_hex(V[i].msg, strlen(V[i].msg), hex);
    ok &= strcmp(hex, V[i].hex) == 0;
  }
  tap_ok(ok, "sha256: FIPS 180-4 example vectors");
  {
    /* One million 'a', fed in uneven pieces. */
    static char chunk[1000];
    cat_sha256 s;
    uint8_t d[32];
    size_t fed = 0, piece = 1;
    memset(chunk, 'a', sizeof chunk);
    cat_sha256_init(&s);
    while (fed < 1000000) {
      size_t n = piece < 1000000 - fed ? piece : 1000000 - fed;
      if (n > sizeof chunk) n = sizeof chunk;
      cat_sha256_update(&s, chunk, n);
      fed += n;
      piece = piece * 7 % 997 + 1;
    }
    cat_sha256_final(&s, d);
    for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", d[i]);
    tap_ok(strcmp(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0") == 0,
           "sha256: one million 'a' in uneven pieces");
  }
  {
    /* Agreement with the golden manifest's digests, when the golden set is at hand. */
    const char *g = getenv("CATERVA_GOLDEN");
    char path[4096];
    size_t len, rl;
    char *text;
    mj_node *root;
    const mj_node *cases;
    int n = 0, good = 0;
    if (g == NULL || *g == '\0') return;
    snprintf(path, sizeof path, "%s/manifest.json", g);
    text = mj_read_file(path, &len);
    if (text == NULL) return;
    root = mj_parse(text, len);
    cases = root ? mj_get(root, "cases") : NULL;
    for (size_t i = 0; cases && i < cases->n && i < 6; i++) {
      const char *rf = mj_getstr(cases->items[i], "raw_file");
      const char *sha = mj_getstr(cases->items[i], "raw_sha256");
      uint8_t *raw;
      if (!rf || !sha) continue;
      snprintf(path, sizeof path, "%s/%s", g, rf);
      raw = slurp(path, &rl);
      if (raw == NULL) continue;
      cat_sha256_hex(raw, rl, hex);
      free(raw);
      n++;
      good += strcmp(hex, sha) == 0;
    }
    if (n > 0) tap_ok(good == n, "sha256: agrees with %d golden raw_sha256 values", n);
    mj_free(root);
    free(text);
  }
}

int main(int argc, char **argv) {
  const char *dir = getenv("CATERVA_INTEROP_OUT");
  char raw_dir[4200];
  caterva_ctx *ctx1 = NULL, *ctx2 = NULL;
  case_result *res = calloc(NCASES, sizeof *res);
  if (dir == NULL || *dir == '\0') dir = "tests/out/interop";
  find_extension(argc > 0 ? argv[0] : "tests/interop/test_interop");
  check_sha256();
  check_coverage();
  if (res == NULL || caterva_ctx_new(1, &ctx1) != 0 || caterva_ctx_new(2, &ctx2) != 0)
    return tap_skip_all("no context");
  snprintf(raw_dir, sizeof raw_dir, "%s/raw", dir);
  if (!tap_ok(tu_mkdir_p(dir) == 0, "output directory %s", dir)) return tap_done();
  clean_out(dir);
  tap_ok(tu_mkdir_p(raw_dir) == 0, "raw directory %s", raw_dir);
  for (int i = 0; i < NCASES; i++) run_case(ctx1, ctx2, dir, &CASES[i], &res[i]);
  {
    int dead = 0;
    for (int i = 0; i < NCASES; i++)
      dead += CASES[i].write == W_SQL && !CASES[i].sparse && res[i].written && res[i].ff.dead > 0;
    tap_ok(dead > 0, "%d SQL-written contiguous file(s) keep dead bytes in the chunk section "
           "(readers meet them here)", dead);
  }
  tap_ok(write_manifest(dir, res) == 0, "manifest.json written");
  check_manifest(dir, res);
  write_bcolz_cases(ctx1, dir, argc > 0 ? argv[0] : "tests/interop/test_interop");
  tap_diag("interop files in %s", dir);
  for (int i = 0; i < NCASES; i++)
    for (int k = 0; k < 4; k++) free(res[i].vlnames[k]);
  free(res);
  caterva_ctx_free(ctx1);
  caterva_ctx_free(ctx2);
  return tap_done();
}

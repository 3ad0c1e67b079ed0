/*
 * interop_manifest.c -- manifest.json of the interop writer test, in the schema of
 * ../shared/golden/manifest.json: one entry per case written (file, writer, dtype, shape,
 * partitioning, codec, filters, the values' formula, raw file and its SHA-256, the frame's
 * facts, metalayer bytes, vlmetalayers; for SQL cases the statements run). Then re-read: it
 * must parse and every raw_sha256 must match a recomputation.
 */
#include "interop.h"

#include "minijson.h"
#include "sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The manifest keys only SQL cases have. */
static void write_manifest_sql(FILE *f, const icase *c, const sqlcase *s, const case_result *r) {
  sql_stmt *st = calloc(MAX_SQL_STMTS, sizeof *st);
  const dtype_desc *dt = find_dtype(c->dtype);
  char file[512];
  int64_t shape0[MAXD];
  int n, ntxn = 0;
  for (int k = 0; k < c->ndim; k++) shape0[k] = k ? c->shape[k] : s->shape0;
  fprintf(f, ",\n   \"initial_shape\": ");
  json_i64s(f, shape0, c->ndim);
  if (*s->fill) fprintf(f, ",\n   \"fill_value\": %s", s->fill);
  else if (dt->kind == K_FLOAT) fprintf(f, ",\n   \"fill_value\": \"NaN\"");
  else fprintf(f, ",\n   \"fill_value\": 0");
  fprintf(f, ",\n   \"dead_bytes\": %lld", (long long)r->ff.dead);
  if (*s->dims) {
    char names[MAXD][32];
    sql_colnames(c, s, names);
    fprintf(f, ",\n   \"dim_names\": [");
    for (int k = 0; k < c->ndim; k++) {
      fprintf(f, "%s", k ? ", " : "");
      json_str(f, names[k]);
    }
    fprintf(f, "]");
  }
  if (st == NULL) return;
  snprintf(file, sizeof file, "%s.%s", c->name, case_ext(c));
  n = sql_statements(c, s, file, st, &ntxn);
  fprintf(f, ",\n   \"write_transactions\": %d,\n   \"lock_generation_after_write\": %lld",
          ntxn, (long long)r->gen);
  fprintf(f, ",\n   \"sql\": [");
  for (int i = 0; i < n; i++) {
    fprintf(f, "%s\n    ", i ? "," : "");
    json_str(f, st[i].text);
  }
  fprintf(f, "],\n   \"sql_failing\": [");
  for (int i = 0, first = 1; i < n; i++)
    if (st[i].must_fail) fprintf(f, "%s%d", first ? "" : ", ", i), first = 0;
  fprintf(f, "]");
  free(st);
}

int write_manifest(const char *dir, const case_result *res) {
  char path[4096];
  FILE *f;
  int first = 1;
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  f = fopen(path, "w");
  if (f == NULL) return -1;
  fprintf(f, "{\n \"generator\": \"caterva-sqlite libcaterva (tests/interop/test_interop), "
             "through its public API\",\n");
  fprintf(f, " \"byte_order\": \"all raw files are little-endian C-order (row-major) element "
             "arrays\",\n");
  fprintf(f, " \"cases\": [");
  for (int i = 0; i < NCASES; i++) {
    const icase *c = &CASES[i];
    const case_result *r = &res[i];
    const dtype_desc *dt = find_dtype(c->dtype);
    int64_t v[MAXD];
    char values[1024];
    const char *special = "none";
    const sqlcase *sq = find_sql(c->name);
    if (!r->written || dt == NULL) continue;
    if (sq != NULL) describe_sql(c, sq, values, sizeof values);
    else describe_values(c, dt, values, sizeof values);
    if (c->vkind == V_ZERO && c->ndim > 0 && r->ff.nchunks > 0) special = "all chunks special-zero";
    if (r->ff.nchunks == 0) special = "zero-length dimension";
    if (c->write == W_NANFILL) special = "caterva_array_create NaN fill (special-NaN offsets)";
    if (c->write == W_FULL) special = "caterva_array_create value fill (repeated-value chunks)";
    if (c->attrs) special = "user attributes in vlmetalayers";
    if (sq != NULL)
      special = "written through SQL: fill-valued cells (deleted box, grown rows), attribute "
                "_FillValue, possibly dead bytes (contiguous), growth along dimension 0";
    fprintf(f, "%s\n  {\n", first ? "" : ",");
    first = 0;
    fprintf(f, "   \"name\": ");
    json_str(f, c->name);
    fprintf(f, ",\n   \"file\": \"%s.%s\",\n", c->name, case_ext(c));
    fprintf(f, "   \"is_directory\": %s,\n", c->sparse ? "true" : "false");
    fprintf(f, "   \"frame_type\": \"%s\",\n", c->sparse ? "sparse" : "contiguous");
    fprintf(f, "   \"metalayer\": \"b2nd\",\n");
    fprintf(f, "   \"metalayers\": %s,\n", c->ndim <= 8 ? "[\"caterva\", \"b2nd\"]" : "[\"b2nd\"]");
    fprintf(f, "   \"writer\": \"libcaterva %s\",\n",
            c->write == W_SQL ? "SQLite extension (CREATE VIRTUAL TABLE, INSERT, UPDATE, DELETE, "
                                "growth by INSERT)"
            : c->write == W_MEMSAVE ? "caterva_array_from_buffer (memory) + caterva_array_save"
            : c->write == W_FULL    ? "caterva_array_create CATERVA_FILL_VALUE (on-disk path)"
            : c->write == W_NANFILL ? "caterva_array_create CATERVA_FILL_NAN (on-disk path)"
                                    : "caterva_array_from_buffer (on-disk path)");
    fprintf(f, "   \"dtype\": \"%s\",\n   \"numpy_dtype\": \"%s\",\n   \"itemsize\": %d,\n",
            dt->name, dt->numpy, dt->itemsize);
    fprintf(f, "   \"ndim\": %d,\n   \"shape\": ", c->ndim);
    json_i64s(f, c->shape, c->ndim);
    for (int k = 0; k < c->ndim; k++) v[k] = c->chunks[k];
    fprintf(f, ",\n   \"chunkshape\": ");
    json_i64s(f, v, c->ndim);
    for (int k = 0; k < c->ndim; k++) v[k] = c->blocks[k];
    fprintf(f, ",\n   \"blockshape\": ");
    json_i64s(f, v, c->ndim);
    fprintf(f, ",\n   \"codec\": \"%s\",\n   \"codec_id\": %d,\n   \"clevel\": %d,\n",
            codec_name(c->codec), c->codec, c->clevel);
    fprintf(f, "   \"filters\": [");
    for (int k = 0; k < 6; k++) fprintf(f, "%s\"%s\"", k ? ", " : "", filter_name(c->filters[k]));
    fprintf(f, "],\n   \"filter_ids\": [");
    for (int k = 0; k < 6; k++) fprintf(f, "%s%d", k ? ", " : "", c->filters[k]);
    fprintf(f, "],\n   \"filters_meta\": [");
    for (int k = 0; k < 6; k++) fprintf(f, "%s%d", k ? ", " : "", c->fmeta[k]);
    fprintf(f, "],\n   \"splitmode\": \"%s\",\n", split_name(c->split));
    fprintf(f, "   \"use_dict\": false,\n   \"nthreads_at_write\": %d,\n", c->nthreads);
    fprintf(f, "   \"special\": ");
    json_str(f, special);
    fprintf(f, ",\n   \"optional_feature\": %s,\n   \"values\": ", c->optional ? "true" : "false");
    json_str(f, values);
    fprintf(f, ",\n   \"note\": ");
    json_str(f, c->note);
    fprintf(f, ",\n   \"raw_file\": \"raw/%s.raw\",\n   \"raw_nbytes\": %lld,\n", c->name,
            (long long)r->rawlen);
    fprintf(f, "   \"raw_sha256\": \"%s\",\n   \"file_nbytes\": %lld,\n", r->sha,
            (long long)r->ff.file_nbytes);
    fprintf(f, "   \"schunk\": {\"nchunks\": %lld, \"chunksize\": %d, \"blocksize\": %d, "
               "\"typesize\": %d, \"nbytes\": %lld, \"cbytes\": %lld, \"compcode\": %d, "
               "\"clevel\": %d, \"splitmode\": %d},\n",
            (long long)r->ff.nchunks, r->ff.chunksize, r->ff.blocksize, r->ff.typesize,
            (long long)r->ff.nbytes, (long long)r->ff.cbytes, c->codec, c->clevel, c->split);
    fprintf(f, "   \"metalayer_hex\": \"%s\",\n   \"vlmetalayers\": [", r->meta_hex);
    for (int k = 0; k < r->nvl && k < 4; k++) {
      fprintf(f, "%s", k ? ", " : "");
      json_str(f, r->vlnames[k] ? r->vlnames[k] : "");
    }
    fprintf(f, "]");
    if (c->attrs & A_ATTRS)
      fprintf(f, ",\n   \"attrs\": {\"units\": \"K\", \"scale\": 2.5, \"source\": "
                 "\"caterva-sqlite test_interop\"}");
    if ((c->attrs & A_DIMNAMES) && sq == NULL)
      fprintf(f, ",\n   \"dim_names\": [\"time\", \"lat\", \"lon\"]");
    if (sq != NULL) write_manifest_sql(f, c, sq, r);
    fprintf(f, "\n  }");
  }
  fprintf(f, "\n ]\n}\n");
  return fclose(f) == 0 ? 0 : -1;
}

/* Re-read the manifest and recompute every raw file's digest. */
void check_manifest(const char *dir, const case_result *res) {
  char path[4096];
  size_t len;
  char *text;
  mj_node *root;
  const mj_node *cases;
  int nwritten = 0, bad = 0, seen[NCASES] = {0};
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  text = mj_read_file(path, &len);
  root = text ? mj_parse(text, len) : NULL;
  cases = root ? mj_get(root, "cases") : NULL;
  for (int i = 0; i < NCASES; i++) nwritten += res[i].written;
  tap_ok(root && mj_getstr(root, "generator") && mj_getstr(root, "byte_order") && cases &&
             cases->type == MJ_ARR && (int)cases->n == nwritten,
         "manifest.json parses and lists %d cases", nwritten);
  for (size_t i = 0; cases && i < cases->n; i++) {
    const mj_node *c = cases->items[i];
    const char *name = mj_getstr(c, "name"), *rawf = mj_getstr(c, "raw_file");
    const char *sha = mj_getstr(c, "raw_sha256"), *file = mj_getstr(c, "file");
    char hex[65] = "", p2[4200];
    size_t rl = 0;
    uint8_t *raw;
    struct stat st;
    int j = -1;
    for (int k = 0; k < NCASES && name; k++)
      if (strcmp(CASES[k].name, name) == 0) j = k;
    if (j < 0 || seen[j]++ || !rawf || !sha || !file) {
      bad++;
      continue;
    }
    snprintf(p2, sizeof p2, "%s/%s", dir, rawf);
    raw = slurp(p2, &rl);
    if (raw) cat_sha256_hex(raw, rl, hex);
    free(raw);
    snprintf(p2, sizeof p2, "%s/%s", dir, file);
    if (!raw || strcmp(hex, sha) != 0 || (int64_t)rl != mj_getint(c, "raw_nbytes", -1) ||
        stat(p2, &st) != 0 || !!S_ISDIR(st.st_mode) != (CASES[j].sparse != 0) ||
        mj_getint(c, "ndim", -1) != CASES[j].ndim || !mj_getstr(c, "values") ||
        !mj_get(c, "filters") || mj_get(c, "filters")->n != 6) {
      tap_diag("manifest entry %s does not match its files", name);
      bad++;
    }
  }
  tap_ok(cases && bad == 0, "every manifest entry's raw_sha256 matches a recomputation (%d bad)",
         bad);
  mj_free(root);
  free(text);
}

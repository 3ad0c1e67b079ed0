/*
 * io_bcolz.c -- bcolz 1.x carray and ctable directories: meta files, chunk files, a reader that
 * decompresses only the blocks it serves, and conversion to Blosc2 arrays.
 * (API: caterva_bcolz.h; facts: shared/spec/bcolz-format.md.)
 *
 *   root/__attrs__      JSON object + "\n" (missing, empty or blank: {})
 *   root/meta/sizes     {"shape": [n, ...], "nbytes": ..., "cbytes": ...}    (only shape used)
 *   root/meta/storage   {"dtype": "int32", "cparams": {"clevel": 5, "shuffle": 1,
 *                        "cname": "lz4", "quantize": 0}, "chunklen": 65536, ...}
 *   root/data/__<k>.blp k = 0 .. nchunks-1, nchunks = n / chunklen + (n % chunklen != 0)
 *   ctable: root/__rootdirs__ {"names": ["a", "b"]}, columns in root/a, root/b
 *
 * Why a reader of its own instead of the caterva_array block model: a bcolz chunk is
 * chunklen rows of axis 0, and a Blosc 1.x block is a byte range of that flattened chunk,
 * cut without regard to rows or even items (strings have typesize 1 or 4, so an |S5 item can
 * straddle two blocks). There is no N-d block shape to offer the array iterator, so the
 * reader works on C-order item indices: item i lives in chunk i / (chunklen * rowitems), at
 * byte (i % that) * itemsize, in the block(s) covering those itemsize bytes.
 *
 * The .blp file (bloscpack header, then one Blosc 1.x chunk; file size = 16 + cbytes):
 *
 *   offset 0    4        5     8                16
 *          +----+--------+-----+----------------+---------------------------+
 *          |blpk|version |rsvd |  nchunks int64 |  Blosc chunk, cbytes long |
 *          |    |u8 = 1  |     |  LE, must be 1 |  (caterva_chunk_* decode) |
 *          +----+--------+-----+----------------+---------------------------+
 */
#include "io_internal.h"
#include "json_internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLP_HEADER 16
/* Meta and attribute files larger than this are refused (bcolz writes a few hundred bytes). */
#define META_MAX (16 << 20)
/* Blocks, and bytes, a reader decompresses at once beyond those of the first item. */
#define WINDOW_BLOCKS 16
#define WINDOW_BYTES (4 << 20)

typedef struct bz_col {
  caterva_bcolz_column pub;    /* what caterva_bcolz_column_get returns */
  char *name, *path, *dtype, *bcolz_dtype, *codec, *attrs_text;
  cat_json *attrs;             /* the parsed __attrs__ object */
  int64_t rowitems;            /* items per row: product of shape[1:] */
  int64_t chunkitems;          /* items per full chunk: chunklen * rowitems */
  int64_t nitems;              /* shape[0] * rowitems */
} bz_col;

struct caterva_bcolz {
  char *path;
  int ctable;
  int ncols;
  bz_col *cols;
  char *attrs_text;            /* the root's __attrs__ (for a carray: its column's) */
  cat_json *attrs;
  int64_t len;
  caterva_progress_fn progress; /* conversions report to it (caterva_bcolz_set_progress) */
  void *progress_arg;
  int64_t progress_done, progress_total;
};

void caterva_bcolz_set_progress(caterva_bcolz *b, caterva_progress_fn fn, void *arg) {
  if (b == NULL) return;
  b->progress = fn;
  b->progress_arg = arg;
}

/* Report n more items converted; the callback's non-zero answer as an error code. */
static int bz_report(caterva_ctx *ctx, caterva_bcolz *b, int64_t n) {
  int r;
  if (b->progress == NULL) return CATERVA_OK;
  b->progress_done += n;
  r = b->progress(b->progress_arg, b->progress_done, b->progress_total);
  if (r == 0) return CATERVA_OK;
  return cat_error(ctx, r < 0 ? r : CATERVA_E_INVALID, "stopped by the progress callback");
}

/* Start counting the progress of converting columns [first, last]. */
static void bz_progress_start(caterva_bcolz *b, int first, int last) {
  b->progress_done = 0;
  b->progress_total = 0;
  for (int k = first; k <= last; k++) b->progress_total += b->cols[k].nitems;
}

struct caterva_bcolz_reader {
  caterva_bcolz *b;
  bz_col *c;
  int64_t chunk;               /* chunk held in cbuf, -1 for none */
  uint8_t *cbuf;               /* its Blosc chunk (the file after the bloscpack header) */
  size_t clen, ccap;
  caterva_chunk_info info;     /* its header */
  int64_t cfirst;              /* item index of the chunk's first item */
  int32_t wb0, wb1;            /* window: decompressed blocks [wb0, wb1) of the chunk */
  uint8_t *wbuf;               /* their bytes, contiguous */
  size_t wcap;
  int64_t wfirst, wend;        /* items [wfirst, wend) lie wholly in the window */
};

/* ---- small helpers ---------------------------------------------------------------------- */

static char *bz_strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static char *bz_join(const char *dir, const char *rel) {
  size_t a = strlen(dir), b = strlen(rel);
  char *p = malloc(a + b + 2);
  if (p == NULL) return NULL;
  memcpy(p, dir, a);
  p[a] = '/';
  memcpy(p + a + 1, rel, b + 1);
  return p;
}

static bool bz_exists(const char *dir, const char *rel, bool want_dir) {
  struct stat st;
  char *p = bz_join(dir, rel);
  bool ok = p && stat(p, &st) == 0 && (want_dir ? S_ISDIR(st.st_mode) : S_ISREG(st.st_mode));
  free(p);
  return ok;
}

int caterva_bcolz_kind(const char *path) {
  struct stat st;
  if (path == NULL || stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return CATERVA_BCOLZ_NONE;
  if (bz_exists(path, "__rootdirs__", false)) return CATERVA_BCOLZ_CTABLE;
  if (bz_exists(path, "meta/storage", false)) return CATERVA_BCOLZ_CARRAY;
  return CATERVA_BCOLZ_NONE;
}

/* Read a whole file of at most max bytes into a malloc'ed NUL-terminated buffer. A missing
 * file is CATERVA_E_NOTFOUND with a message naming it. */
static int bz_read_file(caterva_ctx *ctx, const char *path, size_t max, uint8_t **out,
                        size_t *len) {
  int rc = CATERVA_OK, fd;
  struct stat st;
  uint8_t *buf = NULL;
  *out = NULL;
  *len = 0;
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return cat_io_error(ctx, "cannot open", path);
  CAT_CHECK(leave, fstat(fd, &st) == 0, CATERVA_E_IO, "cannot stat '%s': %s", path,
            strerror(errno));
  CAT_CHECK(leave, S_ISREG(st.st_mode), CATERVA_E_CORRUPT, "'%s' is not a regular file", path);
  CAT_CHECK(leave, (uint64_t)st.st_size <= max, CATERVA_E_CORRUPT,
            "'%s' is too large (%lld bytes, at most %lld)", path, (long long)st.st_size,
            (long long)max);
  buf = malloc((size_t)st.st_size + 1);
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory reading '%s'", path);
  if (st.st_size > 0) CAT_TRY(leave, cat_io_pread(ctx, fd, buf, (size_t)st.st_size, 0, path));
  buf[st.st_size] = '\0';
  *out = buf;
  *len = (size_t)st.st_size;
  buf = NULL;
leave:
  free(buf);
  close(fd);
  return rc;
}

/* Read and parse a JSON file dir/rel. */
static int bz_read_json(caterva_ctx *ctx, const char *dir, const char *rel, cat_json **out) {
  int rc;
  uint8_t *text = NULL;
  size_t len;
  char *path = bz_join(dir, rel);
  *out = NULL;
  if (path == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  rc = bz_read_file(ctx, path, META_MAX, &text, &len);
  if (rc >= 0) rc = cat_json_parse(ctx, (const char *)text, len, path, out);
  free(text);
  free(path);
  return rc;
}

/* ---- dtypes ------------------------------------------------------------------------------ */

/* numpy's str(dtype) of a scalar base dtype -> the canonical NumPy type string. Native-order
 * names ("int32") are little-endian here: bcolz files written on big-endian machines would
 * say so only through these names, and bcolz never ran on one in practice. */
static int bz_dtype(caterva_ctx *ctx, const char *path, const char *s, char *buf, size_t cap) {
  static const struct { const char *name, *np; } names[] = {
      {"bool", "|b1"},        {"int8", "|i1"},        {"uint8", "|u1"},
      {"int16", "<i2"},       {"uint16", "<u2"},      {"int32", "<i4"},
      {"uint32", "<u4"},      {"int64", "<i8"},       {"uint64", "<u8"},
      {"float16", "<f2"},     {"float32", "<f4"},     {"float64", "<f8"},
      {"float128", "<f16"},   {"complex64", "<c8"},   {"complex128", "<c16"},
      {"complex256", "<c32"},
  };
  caterva_dtype_info info;
  const char *unit = NULL;
  size_t k;
  for (k = 0; k < sizeof names / sizeof names[0]; k++)
    if (strcmp(s, names[k].name) == 0) {
      snprintf(buf, cap, "%s", names[k].np);
      return CATERVA_OK;
    }
  if (strncmp(s, "datetime64", 10) == 0) unit = s + 10;
  else if (strncmp(s, "timedelta64", 11) == 0) unit = s + 11;
  if (unit != NULL && unit[0] == '[' && strlen(unit) < 16) {
    snprintf(buf, cap, "<%c8%s", s[0] == 'd' ? 'M' : 'm', unit);
  } else if ((s[0] == '<' || s[0] == '>' || s[0] == '|' || s[0] == '=') && strlen(s) < cap) {
    snprintf(buf, cap, "%s", s);
    if (buf[0] == '=') buf[0] = '<';
  } else {
    return cat_error(ctx, s[0] == 'o' || strcmp(s, "|O") == 0 || s[0] == '[' || s[0] == '('
                              ? CATERVA_E_UNSUPPORTED : CATERVA_E_CORRUPT,
                     "%s: unsupported dtype \"%s\" (numeric, bool, S<n>, U<n>, V<n>, "
                     "datetime64 and timedelta64 are read)", path, s);
  }
  if (caterva_dtype_parse(buf, &info) != CATERVA_OK || info.itemsize <= 0)
    return cat_error(ctx, CATERVA_E_UNSUPPORTED, "%s: unsupported dtype \"%s\"", path, s);
  return CATERVA_OK;
}

/* ---- meta files -------------------------------------------------------------------------- */

/* A JSON number that is an integer in [lo, hi]. */
static bool bz_int(const cat_json *v, int64_t lo, int64_t hi, int64_t *out) {
  if (v == NULL || v->type != CAT_JSON_NUMBER || !v->is_int || v->i < lo || v->i > hi)
    return false;
  *out = v->i;
  return true;
}

/* meta/sizes: the shape. */
static int bz_parse_sizes(caterva_ctx *ctx, bz_col *c, const cat_json *root, const char *what) {
  int rc = CATERVA_OK, k = 0;
  const cat_json *shape = cat_json_get(root, "shape");
  CAT_CHECK(leave, shape != NULL && shape->type == CAT_JSON_ARRAY && shape->n >= 1 &&
                       shape->n <= CATERVA_MAX_DIM,
            CATERVA_E_CORRUPT, "%s: \"shape\" must be a list of 1 to %d integers", what,
            CATERVA_MAX_DIM);
  for (const cat_json *e = shape->child; e; e = e->next, k++)
    CAT_CHECK(leave, bz_int(e, 0, INT64_MAX, &c->pub.shape[k]), CATERVA_E_CORRUPT,
              "%s: shape[%d] is not an integer >= 0", what, k);
  c->pub.ndim = k;
leave:
  return rc;
}

/* meta/storage cparams: clevel, shuffle (bool or int), cname (default blosclz). */
static int bz_parse_cparams(caterva_ctx *ctx, bz_col *c, const cat_json *cp, const char *what) {
  int rc = CATERVA_OK;
  int64_t v;
  const cat_json *e;
  c->pub.clevel = 5;
  c->pub.shuffle = 1;
  if (cp == NULL) goto codec;
  CAT_CHECK(leave, cp->type == CAT_JSON_OBJECT, CATERVA_E_CORRUPT,
            "%s: \"cparams\" is not an object", what);
  if ((e = cat_json_get(cp, "clevel")) != NULL) {
    CAT_CHECK(leave, bz_int(e, 0, 9, &v), CATERVA_E_CORRUPT,
              "%s: cparams.clevel is not an integer 0-9", what);
    c->pub.clevel = (int)v;
  }
  if ((e = cat_json_get(cp, "shuffle")) != NULL) {
    if (e->type == CAT_JSON_BOOL) v = e->b;
    else CAT_CHECK(leave, bz_int(e, 0, 2, &v), CATERVA_E_CORRUPT,
                   "%s: cparams.shuffle is not 0, 1, 2 or a boolean", what);
    c->pub.shuffle = (int)v;
  }
codec:
  e = cp ? cat_json_get(cp, "cname") : NULL;
  CAT_CHECK(leave, e == NULL || (e->type == CAT_JSON_STRING && e->len < 16), CATERVA_E_CORRUPT,
            "%s: cparams.cname is not a codec name", what);
  c->codec = bz_strdup(e ? e->str : "blosclz");
  CAT_CHECK(leave, c->codec != NULL, CATERVA_E_NOMEM, "out of memory");
leave:
  return rc;
}

/* meta/storage: dtype, chunklen, cparams. */
static int bz_parse_storage(caterva_ctx *ctx, bz_col *c, const cat_json *root, const char *what) {
  int rc = CATERVA_OK;
  char np[CATERVA_DTYPE_MAX + 1];
  caterva_dtype_info info;
  const cat_json *dt = cat_json_get(root, "dtype");
  CAT_CHECK(leave, root->type == CAT_JSON_OBJECT, CATERVA_E_CORRUPT, "%s: not a JSON object",
            what);
  CAT_CHECK(leave, dt != NULL && dt->type == CAT_JSON_STRING && dt->len == strlen(dt->str),
            CATERVA_E_CORRUPT, "%s: \"dtype\" is missing or not a string", what);
  CAT_CHECK(leave, bz_int(cat_json_get(root, "chunklen"), 1, INT32_MAX, &c->pub.chunklen),
            CATERVA_E_CORRUPT, "%s: \"chunklen\" is missing or not an integer >= 1", what);
  CAT_TRY(leave, bz_dtype(ctx, what, dt->str, np, sizeof np));
  caterva_dtype_parse(np, &info);
  c->pub.itemsize = info.itemsize;
  c->dtype = bz_strdup(np);
  c->bcolz_dtype = bz_strdup(dt->str);
  CAT_CHECK(leave, c->dtype && c->bcolz_dtype, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, bz_parse_cparams(ctx, c, cat_json_get(root, "cparams"), what));
leave:
  return rc;
}

/* __attrs__: missing, empty or blank is {}; otherwise a JSON object. */
static int bz_parse_attrs(caterva_ctx *ctx, const char *dir, cat_json **attrs, char **text) {
  int rc = CATERVA_OK;
  uint8_t *buf = NULL;
  size_t len = 0, k;
  char *path = bz_join(dir, "__attrs__");
  *attrs = NULL;
  *text = NULL;
  CAT_CHECK(leave, path != NULL, CATERVA_E_NOMEM, "out of memory");
  rc = bz_read_file(ctx, path, META_MAX, &buf, &len);
  if (rc == CATERVA_E_NOTFOUND) len = 0, rc = CATERVA_OK;
  CAT_TRY(leave, rc);
  for (k = 0; k < len && (buf[k] == ' ' || buf[k] == '\n' || buf[k] == '\r' || buf[k] == '\t');)
    k++;
  if (k == len) {
    free(buf);
    buf = (uint8_t *)bz_strdup("{}");
    CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
    len = 2;
  }
  CAT_TRY(leave, cat_json_parse(ctx, (const char *)buf, len, path, attrs));
  CAT_CHECK(leave, (*attrs)->type == CAT_JSON_OBJECT, CATERVA_E_CORRUPT,
            "%s: not a JSON object", path);
  *text = cat_json_text(*attrs);
  CAT_CHECK(leave, *text != NULL, CATERVA_E_NOMEM, "out of memory");
leave:
  if (rc < 0) {
    cat_json_free(*attrs);
    *attrs = NULL;
  }
  free(buf);
  free(path);
  return rc;
}

/* Sizes derived from the meta files, overflow-checked: a chunk must fit a Blosc chunk. */
static int bz_derive(caterva_ctx *ctx, bz_col *c) {
  int rc = CATERVA_OK;
  int64_t rowitems = 1, chunkbytes, len = c->pub.shape[0];
  for (int k = 1; k < c->pub.ndim; k++)
    CAT_CHECK(leave, cat_mul64(rowitems, c->pub.shape[k], &rowitems), CATERVA_E_OVERFLOW,
              "%s: the shape overflows", c->path);
  CAT_CHECK(leave, cat_mul64(rowitems, c->pub.chunklen, &c->chunkitems) &&
                       cat_mul64(c->chunkitems, c->pub.itemsize, &chunkbytes) &&
                       chunkbytes <= INT32_MAX && cat_mul64(rowitems, len, &c->nitems) &&
                       cat_mul64(c->nitems, c->pub.itemsize, &chunkbytes),
            CATERVA_E_CORRUPT, "%s: chunklen %lld of %lld-item rows does not fit a Blosc chunk",
            c->path, (long long)c->pub.chunklen, (long long)rowitems);
  c->rowitems = rowitems;
  c->pub.nchunks = len / c->pub.chunklen + (len % c->pub.chunklen != 0);
leave:
  return rc;
}

static void bz_col_clear(bz_col *c) {
  free(c->name);
  free(c->path);
  free(c->dtype);
  free(c->bcolz_dtype);
  free(c->codec);
  free(c->attrs_text);
  cat_json_free(c->attrs);
}

/* Open the carray at dir into c (zeroed by the caller). */
static int bz_open_carray(caterva_ctx *ctx, bz_col *c, const char *dir, const char *name) {
  int rc = CATERVA_OK;
  cat_json *sizes = NULL, *storage = NULL;
  char *wsizes = bz_join(dir, "meta/sizes"), *wstorage = bz_join(dir, "meta/storage");
  c->path = bz_strdup(dir);
  c->name = name ? bz_strdup(name) : NULL;
  CAT_CHECK(leave, wsizes && wstorage && c->path && (c->name || !name), CATERVA_E_NOMEM,
            "out of memory");
  CAT_TRY(leave, bz_read_json(ctx, dir, "meta/sizes", &sizes));
  CAT_TRY(leave, bz_read_json(ctx, dir, "meta/storage", &storage));
  CAT_TRY(leave, bz_parse_sizes(ctx, c, sizes, wsizes));
  CAT_TRY(leave, bz_parse_storage(ctx, c, storage, wstorage));
  CAT_TRY(leave, bz_parse_attrs(ctx, dir, &c->attrs, &c->attrs_text));
  CAT_TRY(leave, bz_derive(ctx, c));
  c->pub.name = c->name;
  c->pub.path = c->path;
  c->pub.dtype = c->dtype;
  c->pub.bcolz_dtype = c->bcolz_dtype;
  c->pub.codec = c->codec;
  c->pub.attrs = c->attrs_text;
leave:
  cat_json_free(sizes);
  cat_json_free(storage);
  free(wsizes);
  free(wstorage);
  return rc;
}

/* A column name must be one path component. */
static bool bz_name_ok(const cat_json *e) {
  return e->type == CAT_JSON_STRING && e->len > 0 && e->len == strlen(e->str) &&
         strchr(e->str, '/') == NULL && strcmp(e->str, ".") != 0 && strcmp(e->str, "..") != 0;
}

/* __rootdirs__ and each column. */
static int bz_open_ctable(caterva_ctx *ctx, caterva_bcolz *b) {
  int rc = CATERVA_OK, k = 0;
  cat_json *root = NULL;
  const cat_json *names;
  char *what = bz_join(b->path, "__rootdirs__");
  CAT_CHECK(leave, what != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, bz_read_json(ctx, b->path, "__rootdirs__", &root));
  names = cat_json_get(root, "names");
  CAT_CHECK(leave, names && names->type == CAT_JSON_ARRAY && names->n >= 1 && names->n <= 32767,
            CATERVA_E_CORRUPT, "%s: \"names\" must be a list of 1 to 32767 column names", what);
  b->cols = calloc((size_t)names->n, sizeof *b->cols);
  CAT_CHECK(leave, b->cols != NULL, CATERVA_E_NOMEM, "out of memory");
  for (const cat_json *e = names->child; e; e = e->next, k++) {
    char *dir;
    CAT_CHECK(leave, bz_name_ok(e), CATERVA_E_CORRUPT, "%s: names[%d] is not a column name",
              what, k);
    for (int j = 0; j < k; j++)
      CAT_CHECK(leave, strcmp(b->cols[j].name, e->str) != 0, CATERVA_E_CORRUPT,
                "%s: column \"%s\" is named twice", what, e->str);
    dir = bz_join(b->path, e->str);
    CAT_CHECK(leave, dir != NULL, CATERVA_E_NOMEM, "out of memory");
    b->ncols = k + 1;
    if (!bz_exists(dir, "meta/storage", false)) {
      rc = cat_error(ctx, CATERVA_E_NOTFOUND, "%s: column \"%s\": '%s' is not a carray "
                     "directory (no meta/storage)", what, e->str, dir);
      free(dir);
      goto leave;
    }
    rc = bz_open_carray(ctx, &b->cols[k], dir, e->str);
    free(dir);
    CAT_TRY(leave, rc);
    CAT_CHECK(leave, b->cols[k].pub.shape[0] == b->cols[0].pub.shape[0], CATERVA_E_CORRUPT,
              "%s: column \"%s\" has %lld rows but column \"%s\" has %lld", b->path, e->str,
              (long long)b->cols[k].pub.shape[0], b->cols[0].name,
              (long long)b->cols[0].pub.shape[0]);
  }
  CAT_TRY(leave, bz_parse_attrs(ctx, b->path, &b->attrs, &b->attrs_text));
leave:
  cat_json_free(root);
  free(what);
  return rc;
}

int caterva_bcolz_open(caterva_ctx *ctx, const char *path, caterva_bcolz **out) {
  int rc = CATERVA_OK, kind;
  caterva_bcolz *b = NULL;
  *out = NULL;
  CAT_CHECK(leave, path != NULL, CATERVA_E_INVALID, "no path");
  kind = caterva_bcolz_kind(path);
  CAT_CHECK(leave, kind != CATERVA_BCOLZ_NONE, CATERVA_E_NOTFOUND,
            "'%s' is not a bcolz directory (no meta/storage or __rootdirs__)", path);
  b = calloc(1, sizeof *b);
  CAT_CHECK(leave, b != NULL, CATERVA_E_NOMEM, "out of memory");
  b->path = bz_strdup(path);
  CAT_CHECK(leave, b->path != NULL, CATERVA_E_NOMEM, "out of memory");
  b->ctable = kind == CATERVA_BCOLZ_CTABLE;
  if (b->ctable) {
    CAT_TRY(leave, bz_open_ctable(ctx, b));
  } else {
    b->cols = calloc(1, sizeof *b->cols);
    CAT_CHECK(leave, b->cols != NULL, CATERVA_E_NOMEM, "out of memory");
    b->ncols = 1;
    CAT_TRY(leave, bz_open_carray(ctx, &b->cols[0], path, NULL));
  }
  b->len = b->cols[0].pub.shape[0];
leave:
  if (rc < 0) caterva_bcolz_free(b);
  else *out = b;
  return rc;
}

void caterva_bcolz_free(caterva_bcolz *b) {
  if (b == NULL) return;
  for (int k = 0; k < b->ncols; k++) bz_col_clear(&b->cols[k]);
  free(b->cols);
  free(b->attrs_text);
  cat_json_free(b->attrs);
  free(b->path);
  free(b);
}

int caterva_bcolz_is_ctable(const caterva_bcolz *b) { return b->ctable; }
int caterva_bcolz_ncols(const caterva_bcolz *b) { return b->ncols; }
int64_t caterva_bcolz_len(const caterva_bcolz *b) { return b->len; }

const caterva_bcolz_column *caterva_bcolz_column_get(const caterva_bcolz *b, int i) {
  return i >= 0 && i < b->ncols ? &b->cols[i].pub : NULL;
}

const char *caterva_bcolz_attrs(const caterva_bcolz *b) {
  return b->ctable ? b->attrs_text : b->cols[0].attrs_text;
}

/* ---- chunk files ------------------------------------------------------------------------- */

/* Rows held by chunk k. */
static int64_t bz_chunk_rows(const bz_col *c, int64_t k) {
  int64_t left = c->pub.shape[0] - k * c->pub.chunklen;
  return left < c->pub.chunklen ? left : c->pub.chunklen;
}

/* Check the bloscpack header and the Blosc header against the meta files. */
static int bz_check_chunk(caterva_ctx *ctx, caterva_bcolz_reader *r, const uint8_t *file,
                          size_t flen, int64_t k, const char *path) {
  int rc = CATERVA_OK, r2;
  int64_t nbytes = bz_chunk_rows(r->c, k) * r->c->rowitems * r->c->pub.itemsize;
  CAT_CHECK(leave, flen >= BLP_HEADER + 16, CATERVA_E_CORRUPT,
            "'%s' is truncated: %zu bytes, shorter than its headers", path, flen);
  CAT_CHECK(leave, memcmp(file, "blpk", 4) == 0, CATERVA_E_CORRUPT,
            "'%s' is not a bloscpack file (magic is not \"blpk\")", path);
  CAT_CHECK(leave, file[4] == 1, CATERVA_E_UNSUPPORTED,
            "'%s': bloscpack format version %d (1 is read)", path, file[4]);
  CAT_CHECK(leave, cat_le64(file + 8) == 1, CATERVA_E_CORRUPT,
            "'%s': bloscpack header says %lld chunks (bcolz writes 1)", path,
            (long long)cat_le64(file + 8));
  CAT_CHECK(leave, cat_le32(file + BLP_HEADER + 12) == flen - BLP_HEADER, CATERVA_E_CORRUPT,
            "'%s' is %s: the Blosc header says %u compressed bytes, the file holds %zu", path,
            cat_le32(file + BLP_HEADER + 12) > flen - BLP_HEADER ? "truncated" : "too long",
            cat_le32(file + BLP_HEADER + 12), flen - BLP_HEADER);
  r2 = caterva_chunk_info_ctx(ctx, file + BLP_HEADER, flen - BLP_HEADER, &r->info);
  if (r2 < 0) {   /* the decoder's reason: malformed, or a codec this build lacks (snappy) */
    rc = cat_wrap_error(ctx, r2, path);
    goto leave;
  }
  CAT_CHECK(leave, r->info.nbytes == nbytes, CATERVA_E_CORRUPT,
            "'%s': the Blosc header says %d bytes, meta/sizes and meta/storage say %lld "
            "(%lld rows)", path, r->info.nbytes, (long long)nbytes,
            (long long)bz_chunk_rows(r->c, k));
  CAT_CHECK(leave, r->info.special == CATERVA_SPECIAL_NONE || nbytes == 0, CATERVA_E_CORRUPT,
            "'%s': not a Blosc 1.x chunk", path);
leave:
  return rc;
}

/* Load chunk k of the reader's column (a no-op when it is held). */
static int bz_load_chunk(caterva_ctx *ctx, caterva_bcolz_reader *r, int64_t k) {
  int rc = CATERVA_OK;
  char rel[48];
  char *path = NULL;
  uint8_t *file = NULL;
  size_t flen;
  if (r->chunk == k) return CATERVA_OK;
  r->chunk = -1;
  r->wb0 = r->wb1 = 0;
  r->wfirst = r->wend = 0;
  snprintf(rel, sizeof rel, "data/__%lld.blp", (long long)k);
  path = bz_join(r->c->path, rel);
  CAT_CHECK(leave, path != NULL, CATERVA_E_NOMEM, "out of memory");
  rc = bz_read_file(ctx, path, (size_t)BLP_HEADER + INT32_MAX, &file, &flen);
  if (rc == CATERVA_E_NOTFOUND)
    CAT_FAIL(leave, CATERVA_E_CORRUPT, "'%s' is missing (meta/sizes says %lld rows, chunklen "
             "%lld)", path, (long long)r->c->pub.shape[0], (long long)r->c->pub.chunklen);
  CAT_TRY(leave, rc);
  CAT_TRY(leave, bz_check_chunk(ctx, r, file, flen, k, path));
  free(r->cbuf);
  r->cbuf = file;
  file = NULL;
  r->clen = flen;
  r->chunk = k;
  r->cfirst = k * r->c->chunkitems;
leave:
  free(file);
  free(path);
  return rc;
}

/* ---- the reader --------------------------------------------------------------------------- */

int caterva_bcolz_reader_new(caterva_ctx *ctx, caterva_bcolz *b, int col,
                             caterva_bcolz_reader **out) {
  caterva_bcolz_reader *r;
  *out = NULL;
  if (b == NULL || col < 0 || col >= b->ncols)
    return cat_error(ctx, CATERVA_E_INVALID, "no column %d", col);
  r = calloc(1, sizeof *r);
  if (r == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  r->b = b;
  r->c = &b->cols[col];
  r->chunk = -1;
  *out = r;
  return CATERVA_OK;
}

void caterva_bcolz_reader_free(caterva_bcolz_reader *r) {
  if (r == NULL) return;
  free(r->cbuf);
  free(r->wbuf);
  free(r);
}

/* Decompress blocks [b0, b1) of the held chunk into r->wbuf + off. */
static int bz_decode(caterva_ctx *ctx, caterva_bcolz_reader *r, int32_t b0, int32_t b1,
                     size_t off) {
  int32_t blocks[WINDOW_BLOCKS * 2 + 8];
  int64_t got;
  int rc = CATERVA_OK;
  while (b0 < b1) {
    int32_t n = b1 - b0 < (int32_t)(sizeof blocks / sizeof blocks[0])
                    ? b1 - b0 : (int32_t)(sizeof blocks / sizeof blocks[0]);
    for (int32_t k = 0; k < n; k++) blocks[k] = b0 + k;
    got = caterva_chunk_decompress_blocks(ctx, r->cbuf + BLP_HEADER, r->clen - BLP_HEADER,
                                          blocks, n, r->wbuf + off, r->wcap - off);
    if (got < 0) {
      char why[CAT_ERRMSG_SIZE];  /* the decoder's message, copied: cat_error rewrites it */
      snprintf(why, sizeof why, "%s", ctx ? caterva_ctx_errmsg(ctx) : "");
      CAT_FAIL(leave, (int)got, "'%s/data/__%lld.blp': %s", r->c->path, (long long)r->chunk,
               why);
    }
    off += (size_t)n * (size_t)r->info.blocksize;
    b0 += n;
  }
leave:
  return rc;
}

/* Move the window to blocks [b0, b1) of the held chunk, keeping blocks it already holds. */
static int bz_window(caterva_ctx *ctx, caterva_bcolz_reader *r, int32_t b0, int32_t b1) {
  int rc = CATERVA_OK;
  size_t bs = (size_t)r->info.blocksize, need = (size_t)(b1 - b0) * bs;
  int32_t keep0 = b0, keep1 = b0;  /* blocks reused from the old window */
  int64_t lo, hi, isz = r->c->pub.itemsize;
  if (need > r->wcap) {
    uint8_t *p = malloc(need);
    CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
    /* the old blocks are still wanted: copy them across */
    if (r->wb0 <= b0 && b0 < r->wb1) memcpy(p, r->wbuf + (size_t)(b0 - r->wb0) * bs,
                                            (size_t)((r->wb1 < b1 ? r->wb1 : b1) - b0) * bs);
    free(r->wbuf);
    r->wbuf = p;
    r->wcap = need;
  } else if (r->wb0 <= b0 && b0 < r->wb1) {
    memmove(r->wbuf, r->wbuf + (size_t)(b0 - r->wb0) * bs,
            (size_t)((r->wb1 < b1 ? r->wb1 : b1) - b0) * bs);
  }
  if (r->wb0 <= b0 && b0 < r->wb1) keep1 = r->wb1 < b1 ? r->wb1 : b1;
  r->wb0 = r->wb1 = 0;
  CAT_TRY(leave, bz_decode(ctx, r, keep1, b1, (size_t)(keep1 - keep0) * bs));
  r->wb0 = b0;
  r->wb1 = b1;
  lo = (int64_t)b0 * (int64_t)bs;
  hi = (int64_t)b1 * (int64_t)bs;
  if (hi > r->info.nbytes) hi = r->info.nbytes;
  r->wfirst = r->cfirst + cat_ceil_div64(lo, isz);
  r->wend = r->cfirst + hi / isz;
leave:
  return rc;
}

int caterva_bcolz_reader_items(caterva_ctx *ctx, caterva_bcolz_reader *r, int64_t i,
                               int64_t want, const uint8_t **p, int64_t *n) {
  int rc = CATERVA_OK;
  int64_t isz = r->c->pub.itemsize, ci = r->c->chunkitems, k, off, last, end, limit;
  int32_t b0, b1;
  *p = NULL;
  *n = 0;
  CAT_CHECK(leave, i >= 0 && i < r->c->nitems, CATERVA_E_RANGE,
            "item %lld is outside the carray's %lld items", (long long)i,
            (long long)r->c->nitems);
  if (!(r->chunk >= 0 && i >= r->wfirst && i < r->wend)) {
    k = i / ci;
    CAT_TRY(leave, bz_load_chunk(ctx, r, k));
    if (want < 1) want = 1;
    end = (k + 1) * ci < r->c->nitems ? (k + 1) * ci : r->c->nitems;
    last = want < end - i ? i + want - 1 : end - 1;  /* last item wanted, in this chunk */
    off = (i - r->cfirst) * isz;
    b0 = (int32_t)(off / r->info.blocksize);
    b1 = (int32_t)(((last - r->cfirst) * isz + isz - 1) / r->info.blocksize) + 1;
    /* beyond the blocks of item i itself, at most WINDOW_BLOCKS blocks and WINDOW_BYTES */
    limit = WINDOW_BYTES / r->info.blocksize;
    if (limit > WINDOW_BLOCKS) limit = WINDOW_BLOCKS;
    limit += (off + isz - 1) / r->info.blocksize + 1;
    if (b1 > limit) b1 = (int32_t)limit;
    CAT_CHECK(leave, b1 <= r->info.nblocks, CATERVA_E_CORRUPT, "block %d past the chunk's %d",
              b1, r->info.nblocks);
    CAT_TRY(leave, bz_window(ctx, r, b0, b1));
  }
  *p = r->wbuf + (size_t)((i - r->cfirst) * isz - (int64_t)r->wb0 * r->info.blocksize);
  *n = r->wend - i;
leave:
  return rc;
}

int caterva_bcolz_read(caterva_ctx *ctx, caterva_bcolz *b, int col, int64_t start,
                       int64_t nitems, void *dst, int64_t cap) {
  int rc = CATERVA_OK;
  caterva_bcolz_reader *r = NULL;
  const uint8_t *p;
  int64_t n, isz, need;
  uint8_t *o = dst;
  CAT_TRY(leave, caterva_bcolz_reader_new(ctx, b, col, &r));
  isz = r->c->pub.itemsize;
  CAT_CHECK(leave, start >= 0 && nitems >= 0 && start <= r->c->nitems &&
                       nitems <= r->c->nitems - start,
            CATERVA_E_RANGE, "items [%lld, %lld) are outside [0, %lld)", (long long)start,
            (long long)(start + nitems), (long long)r->c->nitems);
  CAT_CHECK(leave, cat_mul64(nitems, isz, &need) && cap >= need, CATERVA_E_NOSPACE,
            "the items need %lld bytes, got %lld", (long long)(nitems * isz), (long long)cap);
  while (nitems > 0) {
    CAT_TRY(leave, caterva_bcolz_reader_items(ctx, r, start, nitems, &p, &n));
    if (n > nitems) n = nitems;
    memcpy(o, p, (size_t)(n * isz));
    o += n * isz;
    start += n;
    nitems -= n;
  }
leave:
  caterva_bcolz_reader_free(r);
  return rc;
}

/* ---- conversion ---------------------------------------------------------------------------- */

/* JSON value -> msgpack (integers as integers, other numbers as float64). */
static void bz_pack(msgpack_packer *pk, const cat_json *v) {
  switch (v->type) {
  case CAT_JSON_NULL: msgpack_pack_nil(pk); break;
  case CAT_JSON_BOOL: v->b ? msgpack_pack_true(pk) : msgpack_pack_false(pk); break;
  case CAT_JSON_NUMBER:
    if (v->is_int) msgpack_pack_int64(pk, v->i);
    else msgpack_pack_double(pk, v->num);
    break;
  case CAT_JSON_STRING:
    msgpack_pack_str(pk, v->len);
    msgpack_pack_str_body(pk, v->str, v->len);
    break;
  case CAT_JSON_ARRAY:
    msgpack_pack_array(pk, (size_t)v->n);
    for (const cat_json *c = v->child; c; c = c->next) bz_pack(pk, c);
    break;
  case CAT_JSON_OBJECT:
    msgpack_pack_map(pk, (size_t)v->n);
    for (const cat_json *c = v->child; c; c = c->next) {
      msgpack_pack_str(pk, c->keylen);
      msgpack_pack_str_body(pk, c->key, c->keylen);
      bz_pack(pk, c);
    }
    break;
  }
}

/* Each member of attrs as a user attribute of a. */
static int bz_copy_attrs(caterva_ctx *ctx, caterva_array *a, const cat_json *attrs) {
  int rc = CATERVA_OK;
  for (const cat_json *c = attrs ? attrs->child : NULL; c; c = c->next) {
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    bz_pack(&pk, c);
    if (c->keylen != strlen(c->key)) rc = cat_error(ctx, CATERVA_E_INVALID,
                                                    "__attrs__: a key holds a NUL character");
    else if (sb.size > INT32_MAX) rc = cat_error(ctx, CATERVA_E_INVALID,
                                                 "__attrs__: \"%s\" is too large", c->key);
    else rc = caterva_array_attr_set(ctx, a, c->key, sb.data, (int32_t)sb.size);
    msgpack_sbuffer_destroy(&sb);
    if (rc < 0) {
      rc = cat_wrap_error(ctx, rc, "__attrs__");
      break;
    }
  }
  return rc;
}

/* The array parameters of a converted column. */
static int bz_params(caterva_ctx *ctx, const bz_col *c, const caterva_array_params *p,
                     const char *path, caterva_array_params *q) {
  int rc = CATERVA_OK;
  bool autochunk = true;
  *q = *p;
  q->ndim = c->pub.ndim;
  q->itemsize = c->pub.itemsize;
  q->dtype = c->dtype;
  q->path = path;
  CAT_CHECK(leave, p->store == CATERVA_STORE_CONTIGUOUS || p->store == CATERVA_STORE_SPARSE,
            CATERVA_E_INVALID, "conversion writes a file or a sparse directory");
  for (int k = 0; k < q->ndim; k++) {
    q->shape[k] = c->pub.shape[k];
    autochunk &= p->chunkshape[k] == 0;
  }
  if (autochunk) {
    for (int k = 0; k < q->ndim; k++) {
      int64_t e = k == 0 ? (c->pub.chunklen < c->pub.shape[0] ? c->pub.chunklen : c->pub.shape[0])
                         : c->pub.shape[k];
      CAT_CHECK(leave, e <= INT32_MAX, CATERVA_E_INVALID, "axis %d is too long for a chunk", k);
      q->chunkshape[k] = e > 0 ? (int32_t)e : 1;
      q->blockshape[k] = 0;
    }
  }
leave:
  return rc;
}

/* Copy the column's rows into a, chunklen rows at a time, in one transaction. */
static int bz_copy_rows(caterva_ctx *ctx, caterva_bcolz *b, int col, caterva_array *a) {
  int rc = CATERVA_OK;
  const bz_col *c = &b->cols[col];
  uint8_t *buf = NULL;
  int64_t start[CATERVA_MAX_DIM] = {0}, stop[CATERVA_MAX_DIM];
  if (c->nitems == 0) goto leave;
  buf = malloc((size_t)(c->chunkitems * c->pub.itemsize));
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int k = 1; k < c->pub.ndim; k++) stop[k] = c->pub.shape[k];
  for (int64_t k = 0; k < c->pub.nchunks; k++) {
    int64_t rows = bz_chunk_rows(c, k), n = rows * c->rowitems;
    start[0] = k * c->pub.chunklen;
    stop[0] = start[0] + rows;
    CAT_TRY(leave, caterva_bcolz_read(ctx, b, col, k * c->chunkitems, n, buf,
                                      n * c->pub.itemsize));
    CAT_TRY(leave, caterva_array_set_slice(ctx, a, start, stop, buf, n * c->pub.itemsize));
    CAT_TRY(leave, bz_report(ctx, b, n));
  }
leave:
  free(buf);
  return rc;
}

/* A name beside path for the array being written. */
static char *bz_temp_name(const char *path) {
  size_t n = strlen(path) + 40;
  char *t = malloc(n);
  if (t) snprintf(t, n, "%s.tmp-%ld", path, (long)getpid());
  return t;
}

static void bz_remove_tree(const char *path);

/* Write column col as a new array at path (no temporary name). */
static int bz_convert_to(caterva_ctx *ctx, caterva_bcolz *b, int col,
                         const caterva_array_params *p, const char *const *dim_names,
                         int n_dim_names, const char *path, caterva_array **out) {
  int rc = CATERVA_OK;
  caterva_array_params q;
  caterva_array *a = NULL;
  *out = NULL;
  CAT_CHECK(leave, dim_names == NULL || n_dim_names == b->cols[col].pub.ndim, CATERVA_E_INVALID,
            "%d dimension names for %s%s%s with %d dimensions", n_dim_names,
            b->cols[col].name ? "column \"" : "a carray", b->cols[col].name ? b->cols[col].name : "",
            b->cols[col].name ? "\"" : "", b->cols[col].pub.ndim);
  CAT_TRY(leave, bz_params(ctx, &b->cols[col], p, path, &q));
  CAT_TRY(leave, caterva_array_create(ctx, &q, CATERVA_FILL_UNINIT, NULL, &a));
  CAT_TRY(leave, caterva_array_begin(ctx, a));
  CAT_TRY(leave, bz_copy_rows(ctx, b, col, a));
  CAT_TRY(leave, caterva_array_commit(ctx, a, 1));
  CAT_TRY(leave, bz_copy_attrs(ctx, a, b->cols[col].attrs));
  if (dim_names) CAT_TRY(leave, caterva_array_set_dim_names(ctx, a, dim_names));
  *out = a;
  a = NULL;
leave:
  caterva_array_free(a);
  return rc;
}

int caterva_bcolz_convert(caterva_ctx *ctx, caterva_bcolz *b, int col,
                          const caterva_array_params *p, const char *const *dim_names,
                          int n_dim_names, caterva_array **out) {
  int rc = CATERVA_OK;
  char *tmp = NULL;
  caterva_array *a = NULL;
  struct stat st;
  if (out) *out = NULL;
  CAT_CHECK(leave, b && p && p->path && col >= 0 && col < b->ncols, CATERVA_E_INVALID,
            "conversion needs a dataset, a column and a path");
  CAT_CHECK(leave, stat(p->path, &st) != 0, CATERVA_E_EXISTS, "'%s' exists", p->path);
  tmp = bz_temp_name(p->path);
  CAT_CHECK(leave, tmp != NULL, CATERVA_E_NOMEM, "out of memory");
  bz_remove_tree(tmp);
  bz_progress_start(b, col, col);
  CAT_TRY(leave, bz_convert_to(ctx, b, col, p, dim_names, n_dim_names, tmp, &a));
  caterva_array_free(a);
  a = NULL;
  CAT_TRY(leave, cat_io_rename_noreplace(ctx, tmp, p->path));
  cat_io_sync_parent(p->path);
  if (out) CAT_TRY(leave, caterva_array_open(ctx, p->path, CATERVA_OPEN_READ, out));
leave:
  caterva_array_free(a);
  if (rc < 0 && tmp) bz_remove_tree(tmp);
  free(tmp);
  return rc;
}

/* Append s as a JSON string to text (capacity checked by the caller: 6 bytes per byte + 2). */
static size_t bz_json_str(char *text, size_t n, const char *s) {
  text[n++] = '"';
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') text[n++] = '\\', text[n++] = (char)c;
    else if (c < 0x20) n += (size_t)sprintf(text + n, "\\u%04x", c);
    else text[n++] = (char)c;
  }
  text[n++] = '"';
  return n;
}

/* ctable.json of a converted ctable: {"format":"bcolz-ctable","names":[...],"attrs":{...}}. */
static int bz_write_manifest(caterva_ctx *ctx, caterva_bcolz *b, const char *dir) {
  int rc = CATERVA_OK, fd;
  char *path = bz_join(dir, "ctable.json");
  size_t cap = 128 + strlen(b->attrs_text), n = 0;
  char *text = NULL;
  for (int k = 0; k < b->ncols; k++) cap += 6 * strlen(b->cols[k].name) + 4;
  text = malloc(cap);
  CAT_CHECK(leave, path && text, CATERVA_E_NOMEM, "out of memory");
  n += (size_t)snprintf(text + n, cap - n, "{\"format\":\"bcolz-ctable\",\"names\":[");
  for (int k = 0; k < b->ncols; k++) {
    if (k) text[n++] = ',';
    n = bz_json_str(text, n, b->cols[k].name);
  }
  n += (size_t)snprintf(text + n, cap - n, "],\"attrs\":%s}\n", b->attrs_text);
  fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = cat_io_error(ctx, "cannot create", path);
    goto leave;
  }
  rc = cat_io_write(ctx, fd, text, n, path);
  if (rc >= 0) rc = cat_io_fsync(ctx, fd, path);
  close(fd);
leave:
  free(text);
  free(path);
  return rc;
}

int caterva_bcolz_converted(const char *dir) {
  struct stat st;
  return dir != NULL && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) &&
         bz_exists(dir, "ctable.json", false);
}

void caterva_bcolz_names_free(char **names, int n) {
  if (names == NULL) return;
  for (int k = 0; k < n; k++) free(names[k]);
  free(names);
}

int caterva_bcolz_converted_names(caterva_ctx *ctx, const char *dir, char ***names, int *n) {
  int rc = CATERVA_OK, k = 0, cap = 0;
  cat_json *root = NULL;
  const cat_json *list, *fmt;
  char **out = NULL;
  char *what = dir ? bz_join(dir, "ctable.json") : NULL;
  *names = NULL;
  *n = 0;
  CAT_CHECK(leave, what != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, bz_read_json(ctx, dir, "ctable.json", &root));
  fmt = cat_json_get(root, "format");
  CAT_CHECK(leave, fmt && fmt->type == CAT_JSON_STRING && strcmp(fmt->str, "bcolz-ctable") == 0,
            CATERVA_E_CORRUPT, "%s: \"format\" is not \"bcolz-ctable\"", what);
  list = cat_json_get(root, "names");
  CAT_CHECK(leave, list && list->type == CAT_JSON_ARRAY && list->n >= 1 && list->n <= 32767,
            CATERVA_E_CORRUPT, "%s: \"names\" must be a list of 1 to 32767 column names", what);
  out = calloc((size_t)list->n, sizeof *out);
  CAT_CHECK(leave, out != NULL, CATERVA_E_NOMEM, "out of memory");
  cap = (int)list->n;
  for (const cat_json *e = list->child; e; e = e->next, k++) {
    CAT_CHECK(leave, bz_name_ok(e), CATERVA_E_CORRUPT, "%s: names[%d] is not a column name",
              what, k);
    for (int j = 0; j < k; j++)
      CAT_CHECK(leave, strcmp(out[j], e->str) != 0, CATERVA_E_CORRUPT,
                "%s: column \"%s\" is named twice", what, e->str);
    out[k] = bz_strdup(e->str);
    CAT_CHECK(leave, out[k] != NULL, CATERVA_E_NOMEM, "out of memory");
  }
  *names = out;
  *n = k;
  out = NULL;
leave:
  caterva_bcolz_names_free(out, cap);
  cat_json_free(root);
  free(what);
  return rc;
}

int caterva_bcolz_convert_ctable(caterva_ctx *ctx, caterva_bcolz *b, const char *dir,
                                 const caterva_array_params *p, const char *const *dim_names,
                                 int n_dim_names) {
  int rc = CATERVA_OK;
  char *tmp = NULL;
  struct stat st;
  CAT_CHECK(leave, b && p && dir, CATERVA_E_INVALID, "conversion needs a dataset and a path");
  CAT_CHECK(leave, b->ctable, CATERVA_E_INVALID, "'%s' is not a ctable", b->path);
  CAT_CHECK(leave, stat(dir, &st) != 0, CATERVA_E_EXISTS, "'%s' exists", dir);
  tmp = bz_temp_name(dir);
  CAT_CHECK(leave, tmp != NULL, CATERVA_E_NOMEM, "out of memory");
  bz_remove_tree(tmp);
  if (mkdir(tmp, 0755) != 0) {
    rc = cat_io_error(ctx, "cannot create", tmp);
    goto leave;
  }
  bz_progress_start(b, 0, b->ncols - 1);
  for (int k = 0; k < b->ncols; k++) {
    size_t n = strlen(tmp) + strlen(b->cols[k].name) + 8;
    char *path = malloc(n);
    caterva_array *a = NULL;
    CAT_CHECK(leave, path != NULL, CATERVA_E_NOMEM, "out of memory");
    snprintf(path, n, "%s/%s.b2nd", tmp, b->cols[k].name);
    rc = bz_convert_to(ctx, b, k, p, dim_names, n_dim_names, path, &a);
    caterva_array_free(a);
    free(path);
    CAT_TRY(leave, rc);
  }
  CAT_TRY(leave, bz_write_manifest(ctx, b, tmp));
  CAT_TRY(leave, cat_io_rename_noreplace(ctx, tmp, dir));
  cat_io_sync_parent(dir);
leave:
  if (rc < 0 && tmp) bz_remove_tree(tmp);
  free(tmp);
  return rc;
}

/* Remove a file or a directory tree of our own making (best effort; no symlinks followed). */
static void bz_remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
      char *sub;
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      sub = bz_join(path, e->d_name);
      if (sub) bz_remove_tree(sub);
      free(sub);
    }
    if (d) closedir(d);
    rmdir(path);
  } else {
    unlink(path);
  }
}

/*
 * io_npy.c -- NumPy .npy files: a strict header parser and writer, and streaming import
 * and export of arrays (caterva_npy.h).
 *
 * The file, as NumPy's format description (numpy/lib/format.py, NEP 1) lays it out:
 *
 *   offset  size  field
 *   0       6     magic "\x93NUMPY"
 *   6       1     major version (1, 2 or 3)
 *   7       1     minor version (0)
 *   8       2|4   header length HLEN, little-endian: u16 in 1.0, u32 in 2.0 and 3.0
 *   10|12   HLEN  header: the repr of a Python dict, ASCII (1.0, 2.0) or UTF-8 (3.0),
 *                   {'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }
 *                 padded with spaces and ended by '\n' so the data start 64-byte aligned
 *   ...           the items, prod(shape) of them, in C order or (fortran_order) with the
 *                 first index varying fastest; nothing follows them
 *
 * The header is untrusted text. We do not evaluate Python: the parser below accepts the
 * dict grammar NumPy writes (keys in any order, optional trailing comma, 'L' suffixes of
 * Python 2 integers) and nothing else, and every number is overflow-checked.
 *
 * Streaming: an import never holds the whole array. It is cut into pieces made of whole
 * chunks: ranges of one chunk along the first s axes of the file's order and the full extent
 * along the others, with s the smallest that keeps a piece under CATERVA_NPY_PIECE_BYTES.
 * A piece is read with one pread per contiguous run of the file (a single read when s = 1,
 * the usual case), turned from Fortran to C order when needed, and written with
 * caterva_array_set_slice, which compresses each of its chunks once without reading it.
 * Export cuts the box the same way and writes runs with pwrite.
 */
#include "io_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

/* Whether d is a plain dtype string we know, made of characters that need no quoting. */
static int descr_ok(const char *d) {
  caterva_dtype_info info;
  if (d == NULL || caterva_dtype_parse(d, &info) != CATERVA_OK) return 0;
  if (!(d[0] == '<' || d[0] == '>' || d[0] == '|')) return 0;
  for (; *d; d++)
    if (!((*d >= 'a' && *d <= 'z') || (*d >= 'A' && *d <= 'Z') || (*d >= '0' && *d <= '9') ||
          *d == '<' || *d == '>' || *d == '|' || *d == '[' || *d == ']'))
      return 0;
  return 1;
}

/* ---- header parser --------------------------------------------------------------------- */

/* A cursor over the dict text. */
typedef struct npy_txt {
  const char *p, *start, *end;
  caterva_ctx *ctx;
} npy_txt;

static void txt_ws(npy_txt *t) {
  while (t->p < t->end && (*t->p == ' ' || *t->p == '\t' || *t->p == '\n' || *t->p == '\r'))
    t->p++;
}

/* Consume character c (after blanks); 0 when it is not next. */
static int txt_eat(npy_txt *t, char c) {
  txt_ws(t);
  if (t->p < t->end && *t->p == c) {
    t->p++;
    return 1;
  }
  return 0;
}

static int txt_syntax(npy_txt *t, const char *what) {
  return cat_error(t->ctx, CATERVA_E_CORRUPT, ".npy header: %s at offset %d of the dict",
                   what, (int)(t->p - t->start));
}

/* A Python string literal in ' or " without escapes, into buf (capacity cap). */
static int txt_string(npy_txt *t, char *buf, size_t cap) {
  char q;
  size_t n = 0;
  txt_ws(t);
  if (t->p >= t->end || (*t->p != '\'' && *t->p != '"')) return txt_syntax(t, "expected a string");
  q = *t->p++;
  while (t->p < t->end && *t->p != q) {
    if (*t->p == '\\' || *t->p == '\n') return txt_syntax(t, "escapes and newlines in strings are not accepted");
    if (n + 1 >= cap) return txt_syntax(t, "string too long");
    buf[n++] = *t->p++;
  }
  if (t->p >= t->end) return txt_syntax(t, "unterminated string");
  t->p++;
  buf[n] = '\0';
  return CATERVA_OK;
}

/* True or False. */
static int txt_bool(npy_txt *t, int *v) {
  txt_ws(t);
  if (t->end - t->p >= 4 && memcmp(t->p, "True", 4) == 0) {
    t->p += 4;
    *v = 1;
  } else if (t->end - t->p >= 5 && memcmp(t->p, "False", 5) == 0) {
    t->p += 5;
    *v = 0;
  } else {
    return txt_syntax(t, "fortran_order must be True or False");
  }
  return CATERVA_OK;
}

/* A non-negative decimal integer (a Python 2 'L' suffix allowed). */
static int txt_int(npy_txt *t, int64_t *v) {
  int64_t x = 0;
  int nd = 0;
  txt_ws(t);
  if (t->p < t->end && *t->p == '-') return txt_syntax(t, "negative extent in shape");
  while (t->p < t->end && *t->p >= '0' && *t->p <= '9') {
    if (x > (INT64_MAX - 9) / 10)
      return cat_error(t->ctx, CATERVA_E_CORRUPT, ".npy header: an extent of the shape overflows");
    x = x * 10 + (*t->p++ - '0');
    nd++;
  }
  if (nd == 0) return txt_syntax(t, "expected an integer in shape");
  if (t->p < t->end && (*t->p == 'L' || *t->p == 'l')) t->p++;
  *v = x;
  return CATERVA_OK;
}

/* A tuple of integers: (), (n,), (n, m), (n, m,) ... */
static int txt_shape(npy_txt *t, caterva_npy_header *h) {
  caterva_ctx *ctx = t->ctx;
  int rc = CATERVA_OK, n = 0;
  if (!txt_eat(t, '(')) return txt_syntax(t, "shape must be a tuple");
  while (!txt_eat(t, ')')) {
    CAT_CHECK(leave, n < CATERVA_MAX_DIM, CATERVA_E_UNSUPPORTED,
              ".npy header: more than %d dimensions", CATERVA_MAX_DIM);
    CAT_TRY(leave, txt_int(t, &h->shape[n]));
    n++;
    if (txt_eat(t, ',')) continue;
    if (!txt_eat(t, ')')) CAT_TRY(leave, txt_syntax(t, "expected ',' or ')' in shape"));
    if (n == 1) CAT_TRY(leave, txt_syntax(t, "(n) is not a tuple: write (n,)"));
    break;
  }
  h->ndim = n;
leave:
  return rc;
}

/* The descr value: a plain dtype string; lists (structured dtypes) are refused. */
static int txt_descr(npy_txt *t, caterva_npy_header *h) {
  caterva_ctx *ctx = t->ctx;
  caterva_dtype_info info;
  int rc = CATERVA_OK;
  txt_ws(t);
  if (t->p < t->end && *t->p == '[')
    return cat_error(t->ctx, CATERVA_E_UNSUPPORTED,
                     ".npy header: structured dtypes (a list as descr) are not supported");
  CAT_TRY(leave, txt_string(t, h->descr, sizeof h->descr));
  if (h->descr[0] == '=') h->descr[0] = '<'; /* host order; every host we build on is LE */
  CAT_CHECK(leave, descr_ok(h->descr) && caterva_dtype_parse(h->descr, &info) == CATERVA_OK &&
                       info.itemsize >= 1 && info.itemsize <= 255,
            CATERVA_E_UNSUPPORTED, ".npy header: descr '%s' is not a dtype we support (bool, "
            "int, uint, float, complex, S, V, U, M8, m8 of 1 to 255 bytes)", h->descr);
  h->itemsize = info.itemsize;
leave:
  return rc;
}

/* The dict: exactly the keys descr, fortran_order and shape, each once. */
static int txt_dict(npy_txt *t, caterva_npy_header *h) {
  caterva_ctx *ctx = t->ctx;
  int rc = CATERVA_OK, seen = 0;
  char key[32];
  if (!txt_eat(t, '{')) return txt_syntax(t, "the header is not a dict");
  while (!txt_eat(t, '}')) {
    int bit;
    CAT_TRY(leave, txt_string(t, key, sizeof key));
    if (strcmp(key, "descr") == 0) bit = 1;
    else if (strcmp(key, "fortran_order") == 0) bit = 2;
    else if (strcmp(key, "shape") == 0) bit = 4;
    else CAT_FAIL(leave, CATERVA_E_CORRUPT, ".npy header: unknown key '%s'", key);
    CAT_CHECK(leave, !(seen & bit), CATERVA_E_CORRUPT, ".npy header: key '%s' given twice", key);
    seen |= bit;
    if (!txt_eat(t, ':')) CAT_TRY(leave, txt_syntax(t, "expected ':'"));
    if (bit == 1) CAT_TRY(leave, txt_descr(t, h));
    else if (bit == 2) CAT_TRY(leave, txt_bool(t, &h->fortran_order));
    else CAT_TRY(leave, txt_shape(t, h));
    if (txt_eat(t, ',')) continue;
    if (!txt_eat(t, '}')) CAT_TRY(leave, txt_syntax(t, "expected ',' or '}'"));
    break;
  }
  CAT_CHECK(leave, seen == 7, CATERVA_E_CORRUPT,
            ".npy header: the dict lacks %s", !(seen & 1) ? "'descr'" : !(seen & 2) ?
            "'fortran_order'" : "'shape'");
  txt_ws(t);
  if (t->p != t->end) CAT_TRY(leave, txt_syntax(t, "text after the dict"));
leave:
  return rc;
}

int caterva_npy_parse_header(caterva_ctx *ctx, const void *buf, size_t len,
                             caterva_npy_header *h) {
  int rc = CATERVA_OK;
  const uint8_t *b = buf;
  size_t pre, hlen;
  npy_txt t;
  memset(h, 0, sizeof *h);
  CAT_CHECK(leave, len >= 8 && memcmp(b, npy_magic, 6) == 0, CATERVA_E_CORRUPT,
            "not a .npy file (no \\x93NUMPY magic string)");
  CAT_CHECK(leave, (b[6] == 1 || b[6] == 2 || b[6] == 3) && b[7] == 0, CATERVA_E_UNSUPPORTED,
            ".npy format version %d.%d is not supported (1.0, 2.0 and 3.0 are)", b[6], b[7]);
  h->major = b[6];
  pre = b[6] == 1 ? 10 : 12;
  CAT_CHECK(leave, len >= pre, CATERVA_E_CORRUPT, ".npy file ends inside its preamble");
  hlen = b[6] == 1 ? cat_le16(b + 8) : cat_le32(b + 8);
  CAT_CHECK(leave, hlen <= CATERVA_NPY_MAX_HEADER, CATERVA_E_CORRUPT,
            ".npy header length %zu is larger than the %d bytes accepted", hlen,
            CATERVA_NPY_MAX_HEADER);
  CAT_CHECK(leave, hlen <= len - pre, CATERVA_E_CORRUPT,
            ".npy header length %zu runs past the end of the file (%zu bytes)", hlen, len);
  t.start = t.p = (const char *)b + pre;
  t.end = t.start + hlen;
  t.ctx = ctx;
  CAT_TRY(leave, txt_dict(&t, h));
  h->data_offset = (int64_t)(pre + hlen);
  h->nbytes = h->itemsize;
  for (int k = 0; k < h->ndim; k++)
    CAT_CHECK(leave, cat_mul64(h->nbytes, h->shape[k], &h->nbytes) && h->nbytes <= INT64_MAX / 2,
              CATERVA_E_CORRUPT, ".npy header: the size of shape overflows");
leave:
  return rc;
}

int caterva_npy_read_header(caterva_ctx *ctx, const char *path, caterva_npy_header *h) {
  int rc = CATERVA_OK, fd = -1;
  struct stat st;
  uint8_t *buf = NULL;
  size_t n;
  memset(h, 0, sizeof *h);
  fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 || fstat(fd, &st) != 0) {
    rc = cat_io_error(ctx, "cannot open", path);
    goto leave;
  }
  CAT_CHECK(leave, S_ISREG(st.st_mode), CATERVA_E_INVALID, "'%s' is not a file", path);
  n = (size_t)st.st_size < 12 + CATERVA_NPY_MAX_HEADER ? (size_t)st.st_size
                                                         : 12 + CATERVA_NPY_MAX_HEADER;
  buf = malloc(n ? n : 1);
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, cat_io_pread(ctx, fd, buf, n, 0, path));
  CAT_TRY(leave, caterva_npy_parse_header(ctx, buf, n, h));
  CAT_CHECK(leave, st.st_size - h->data_offset == h->nbytes, CATERVA_E_CORRUPT,
            "'%s' holds %lld bytes of data; its header (shape and dtype %s) says %lld", path,
            (long long)(st.st_size - h->data_offset), h->descr, (long long)h->nbytes);
leave:
  if (fd >= 0) close(fd);
  free(buf);
  return rc;
}

/* ---- header writer --------------------------------------------------------------------- */

int64_t caterva_npy_write_header(const char *descr, int ndim, const int64_t *shape, void *buf,
                                 size_t cap) {
  char dict[CATERVA_DTYPE_MAX + 64 + CATERVA_MAX_DIM * 22];
  size_t n, pre, total;
  uint8_t *b = buf;
  int k;
  if (descr == NULL || strlen(descr) > CATERVA_DTYPE_MAX || ndim < 0 || ndim > CATERVA_MAX_DIM)
    return CATERVA_E_INVALID;
  n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (",
                       descr);
  for (k = 0; k < ndim; k++)
    n += (size_t)snprintf(dict + n, sizeof dict - n, "%lld,%s", (long long)shape[k],
                          k + 1 < ndim ? " " : "");
  n += (size_t)snprintf(dict + n, sizeof dict - n, "), }");
  pre = 10;                               /* version 1.0 unless the header needs more */
  total = (pre + n + 1 + 63) / 64 * 64;   /* + '\n', padded to 64 */
  if (total - pre > 65535) {
    pre = 12;
    total = (pre + n + 1 + 63) / 64 * 64;
  }
  if (total > cap) return CATERVA_E_NOSPACE;
  memcpy(b, npy_magic, 6);
  b[6] = pre == 10 ? 1 : 2;
  b[7] = 0;
  if (pre == 10) {
    b[8] = (uint8_t)(total - pre);
    b[9] = (uint8_t)((total - pre) >> 8);
  } else {
    cat_put_le32(b + 8, (uint32_t)(total - pre));
  }
  memcpy(b + pre, dict, n);
  memset(b + pre + n, ' ', total - pre - n - 1);
  b[total - 1] = '\n';
  return (int64_t)total;
}

/* ---- pieces ---------------------------------------------------------------------------- */

/* How items lie in a file: extents, the order of the axes (slowest first) and the byte
 * stride of each array axis. */
typedef struct npy_layout {
  int ndim, itemsize;
  int64_t shape[CATERVA_MAX_DIM];
  int order[CATERVA_MAX_DIM];     /* order[0] is the array axis that varies slowest */
  int64_t stride[CATERVA_MAX_DIM];
  int64_t base;                   /* offset of the first item */
} npy_layout;

static void layout_init(npy_layout *L, int ndim, const int64_t *shape, int itemsize,
                        int fortran, int64_t base) {
  int64_t s = itemsize;
  L->ndim = ndim;
  L->itemsize = itemsize;
  L->base = base;
  for (int j = 0; j < ndim; j++) {
    L->shape[j] = shape[j];
    L->order[j] = fortran ? ndim - 1 - j : j;
  }
  for (int j = ndim - 1; j >= 0; j--) {
    L->stride[L->order[j]] = s;
    s *= shape[L->order[j]];   /* <= the file's size, checked by the caller */
  }
}

/* Read (or write) the box [lo, hi) of the file from (to) buf, which holds the box in the
 * file's order. Trailing axes the box covers fully are merged into one run. */
static int region_io(caterva_ctx *ctx, int fd, const char *path, const npy_layout *L,
                     const int64_t *lo, const int64_t *hi, uint8_t *buf, int write) {
  int rc = CATERVA_OK, n = L->ndim, j, i;
  int64_t run = L->itemsize, idx[CATERVA_MAX_DIM] = {0};
  if (n == 0) {
    return write ? cat_io_pwrite(ctx, fd, buf, (size_t)run, L->base, path)
                 : cat_io_pread(ctx, fd, buf, (size_t)run, L->base, path);
  }
  for (i = 0; i < n; i++)
    if (hi[i] <= lo[i]) return CATERVA_OK;
  j = n - 1;
  run *= hi[L->order[j]] - lo[L->order[j]];
  while (j > 0 && lo[L->order[j]] == 0 && hi[L->order[j]] == L->shape[L->order[j]]) {
    j--;
    run *= hi[L->order[j]] - lo[L->order[j]];
  }
  for (;;) {
    int64_t off = L->base + lo[L->order[j]] * L->stride[L->order[j]];
    for (i = 0; i < j; i++) off += (lo[L->order[i]] + idx[i]) * L->stride[L->order[i]];
    if (write) CAT_TRY(leave, cat_io_pwrite(ctx, fd, buf, (size_t)run, off, path));
    else CAT_TRY(leave, cat_io_pread(ctx, fd, buf, (size_t)run, off, path));
    buf += run;
    for (i = j - 1; i >= 0; i--) {
      if (++idx[i] < hi[L->order[i]] - lo[L->order[i]]) break;
      idx[i] = 0;
    }
    if (i < 0) break;
  }
leave:
  return rc;
}

/* Copy the box of extents e from Fortran order (src) to C order (dst). */
static void fortran_to_c(int ndim, const int64_t *e, int itemsize, const uint8_t *src,
                         uint8_t *dst) {
  int64_t fst[CATERVA_MAX_DIM], idx[CATERVA_MAX_DIM] = {0}, s = itemsize, step;
  int k;
  if (ndim == 0) {
    memcpy(dst, src, (size_t)itemsize);
    return;
  }
  for (k = 0; k < ndim; k++) {
    if (e[k] == 0) return;
    fst[k] = s;
    s *= e[k];
  }
  step = fst[ndim - 1];
  for (;;) {
    const uint8_t *p = src;
    for (k = 0; k < ndim - 1; k++) p += idx[k] * fst[k];
    for (int64_t i = 0; i < e[ndim - 1]; i++, p += step, dst += itemsize) {
      switch (itemsize) {
      case 1: *dst = *p; break;
      case 2: memcpy(dst, p, 2); break;
      case 4: memcpy(dst, p, 4); break;
      case 8: memcpy(dst, p, 8); break;
      default: memcpy(dst, p, (size_t)itemsize); break;
      }
    }
    for (k = ndim - 2; k >= 0; k--) {
      if (++idx[k] < e[k]) break;
      idx[k] = 0;
    }
    if (k < 0) break;
  }
}

/* Cutting a box [blo, bhi) into pieces of whole chunks (chunk grid c, axes in the order of
 * L), the first `split` axes of that order one chunk at a time. */
typedef struct npy_pieces {
  const npy_layout *L;
  const int32_t *c;
  int64_t blo[CATERVA_MAX_DIM], bhi[CATERVA_MAX_DIM];
  int split;
  int64_t lo[CATERVA_MAX_DIM], hi[CATERVA_MAX_DIM]; /* the current piece */
  int64_t maxbytes;                                   /* of any piece */
} npy_pieces;

static int64_t next_edge(int64_t x, int32_t c, int64_t stop) {
  int64_t e = (x / c + 1) * c;
  return e < stop ? e : stop;
}

/* The piece budget: CATERVA_NPY_PIECE_BYTES, or the environment's CATERVA_NPY_PIECE_BYTES
 * (tests use a small one to exercise pieces cut along several axes). */
static int64_t piece_budget(void) {
  const char *e = getenv("CATERVA_NPY_PIECE_BYTES");
  long long v = e ? atoll(e) : 0;
  return v > 0 ? (int64_t)v : CATERVA_NPY_PIECE_BYTES;
}

static void pieces_init(npy_pieces *P, const npy_layout *L, const int32_t *c,
                        const int64_t *blo, const int64_t *bhi) {
  int n = L->ndim, s, j;
  int64_t budget = piece_budget();
  P->L = L;
  P->c = c;
  for (j = 0; j < n; j++) {
    P->blo[j] = blo[j];
    P->bhi[j] = bhi[j];
  }
  for (s = 0; s <= n; s++) {
    int64_t bytes = L->itemsize;
    for (j = 0; j < n; j++) {
      int a = L->order[j];
      int64_t ext = bhi[a] - blo[a];
      if (j < s && ext > c[a]) ext = c[a];
      bytes = bytes > INT64_MAX / (ext + 1) ? INT64_MAX / 2 : bytes * ext;
    }
    P->maxbytes = bytes;
    if (bytes <= budget) break;
  }
  P->split = s > n ? n : s;
  for (j = 0; j < n; j++) {
    int a = L->order[j];
    P->lo[a] = blo[a];
    P->hi[a] = j < P->split ? next_edge(blo[a], c[a], bhi[a]) : bhi[a];
  }
}

/* Advance to the next piece; 0 after the last. */
static int pieces_next(npy_pieces *P) {
  for (int j = P->split - 1; j >= 0; j--) {
    int a = P->L->order[j];
    if (P->hi[a] < P->bhi[a]) {
      P->lo[a] = P->hi[a];
      P->hi[a] = next_edge(P->lo[a], P->c[a], P->bhi[a]);
      return 1;
    }
    P->lo[a] = P->blo[a];
    P->hi[a] = next_edge(P->blo[a], P->c[a], P->bhi[a]);
  }
  return 0;
}

/* ---- import ---------------------------------------------------------------------------- */

/* Stream the items of the file into a, piece by piece. */
/* The items a piece holds, for progress reports. */
typedef struct npy_progress {
  caterva_progress_fn fn; /* or NULL */
  void *arg;
  int64_t done, total;
} npy_progress;

/* Report bytes more written; the callback's non-zero answer as an error code. */
static int npy_report(caterva_ctx *ctx, npy_progress *pr, int64_t bytes, int32_t itemsize) {
  int r;
  if (pr->fn == NULL) return CATERVA_OK;
  pr->done += bytes / itemsize;
  r = pr->fn(pr->arg, pr->done, pr->total);
  if (r == 0) return CATERVA_OK;
  return cat_error(ctx, r < 0 ? r : CATERVA_E_INVALID, "stopped by the progress callback");
}

static int import_items(caterva_ctx *ctx, int fd, const char *src, const caterva_npy_header *h,
                        caterva_array *a, npy_progress *pr) {
  int rc = CATERVA_OK, n = h->ndim;
  npy_layout L;
  npy_pieces P;
  uint8_t *buf = NULL, *cbuf = NULL;
  int64_t zero[CATERVA_MAX_DIM] = {0}, e[CATERVA_MAX_DIM], bytes;
  if (h->nbytes == 0) return CATERVA_OK;
  layout_init(&L, n, h->shape, h->itemsize, h->fortran_order, h->data_offset);
  pieces_init(&P, &L, caterva_array_chunkshape(a), zero, h->shape);
  buf = malloc((size_t)P.maxbytes);
  if (h->fortran_order && n > 1) cbuf = malloc((size_t)P.maxbytes);
  CAT_CHECK(leave, buf != NULL && (cbuf != NULL || !h->fortran_order || n <= 1),
            CATERVA_E_NOMEM, "out of memory for a piece of %lld bytes", (long long)P.maxbytes);
  do {
    bytes = h->itemsize;
    for (int k = 0; k < n; k++) {
      e[k] = P.hi[k] - P.lo[k];
      bytes *= e[k];
    }
    CAT_TRY(leave, region_io(ctx, fd, src, &L, P.lo, P.hi, buf, 0));
    if (cbuf) fortran_to_c(n, e, h->itemsize, buf, cbuf);
    CAT_TRY(leave, caterva_array_set_slice(ctx, a, P.lo, P.hi, cbuf ? cbuf : buf, bytes));
    CAT_TRY(leave, npy_report(ctx, pr, bytes, h->itemsize));
  } while (pieces_next(&P));
leave:
  free(buf);
  free(cbuf);
  return rc;
}

int caterva_npy_import(caterva_ctx *ctx, const char *src, const caterva_array_params *p,
                       caterva_array **out) {
  return caterva_npy_import_progress(ctx, src, p, NULL, NULL, out);
}

int caterva_npy_import_progress(caterva_ctx *ctx, const char *src, const caterva_array_params *p,
                                caterva_progress_fn progress, void *arg, caterva_array **out) {
  int rc = CATERVA_OK, fd = -1, file = 0;
  caterva_npy_header h;
  caterva_array_params q;
  caterva_array *a = NULL;
  npy_progress pr = {progress, arg, 0, 0};
  *out = NULL;
  CAT_CHECK(leave, src != NULL && p != NULL, CATERVA_E_INVALID, "no source or parameters");
  CAT_TRY(leave, caterva_npy_read_header(ctx, src, &h));
  q = *p;
  q.ndim = h.ndim;
  memcpy(q.shape, h.shape, sizeof q.shape);
  q.itemsize = h.itemsize;
  q.dtype = h.descr;
  fd = open(src, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    rc = cat_io_error(ctx, "cannot open", src);
    goto leave;
  }
  CAT_TRY(leave, caterva_array_create(ctx, &q, CATERVA_FILL_UNINIT, NULL, &a));
  file = q.store != CATERVA_STORE_MEMORY;
  if (file) CAT_TRY(leave, caterva_array_begin(ctx, a));
  pr.total = h.itemsize ? h.nbytes / h.itemsize : 0;
  CAT_TRY(leave, import_items(ctx, fd, src, &h, a, &pr));
  if (file) CAT_TRY(leave, caterva_array_commit(ctx, a, 1));
  file = 0;
leave:
  if (fd >= 0) close(fd);
  if (rc < 0 && file) (void)caterva_array_rollback(ctx, a);
  if (rc < 0) caterva_array_free(a);
  else *out = a;
  return rc;
}

/* ---- export ---------------------------------------------------------------------------- */

static int export_items(caterva_ctx *ctx, caterva_array *a, const int64_t *lo,
                        const int64_t *hi, int fd, const char *path, int64_t base) {
  int rc = CATERVA_OK, n = caterva_array_ndim(a), isz = caterva_array_itemsize(a);
  npy_layout L;
  npy_pieces P;
  int64_t ext[CATERVA_MAX_DIM], rlo[CATERVA_MAX_DIM], rhi[CATERVA_MAX_DIM], bytes;
  uint8_t *buf = NULL;
  for (int k = 0; k < n; k++) {
    ext[k] = hi[k] - lo[k];
    if (ext[k] == 0) return CATERVA_OK;
  }
  layout_init(&L, n, ext, isz, 0, base);
  pieces_init(&P, &L, caterva_array_chunkshape(a), lo, hi);
  buf = malloc((size_t)P.maxbytes);
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory for a piece of %lld bytes",
            (long long)P.maxbytes);
  do {
    bytes = isz;
    for (int k = 0; k < n; k++) {
      rlo[k] = P.lo[k] - lo[k];
      rhi[k] = P.hi[k] - lo[k];
      bytes *= rhi[k] - rlo[k];
    }
    CAT_TRY(leave, caterva_array_get_slice(ctx, a, P.lo, P.hi, buf, bytes));
    CAT_TRY(leave, region_io(ctx, fd, path, &L, rlo, rhi, buf, 1));
  } while (pieces_next(&P));
leave:
  free(buf);
  return rc;
}

int caterva_npy_export(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                       const int64_t *stop, const char *path) {
  int rc = CATERVA_OK, fd = -1, created = 0, n, k;
  int64_t lo[CATERVA_MAX_DIM] = {0}, hi[CATERVA_MAX_DIM] = {0}, ext[CATERVA_MAX_DIM], hlen;
  uint8_t hdr[CATERVA_DTYPE_MAX + 128 + CATERVA_MAX_DIM * 22];
  char descr[CATERVA_DTYPE_MAX + 1];
  CAT_CHECK(leave, a != NULL && path != NULL, CATERVA_E_INVALID, "no array or path");
  n = caterva_array_ndim(a);
  for (k = 0; k < n; k++) {
    lo[k] = start ? start[k] : 0;
    hi[k] = stop ? stop[k] : caterva_array_shape(a)[k];
    CAT_CHECK(leave, 0 <= lo[k] && lo[k] <= hi[k] && hi[k] <= caterva_array_shape(a)[k],
              CATERVA_E_RANGE, "box [%lld, %lld) out of range 0..%lld in dimension %d",
              (long long)lo[k], (long long)hi[k], (long long)caterva_array_shape(a)[k], k);
    ext[k] = hi[k] - lo[k];
  }
  if (descr_ok(caterva_array_dtype(a))) snprintf(descr, sizeof descr, "%s", caterva_array_dtype(a));
  else snprintf(descr, sizeof descr, "|V%d", caterva_array_itemsize(a));
  hlen = caterva_npy_write_header(descr, n, ext, hdr, sizeof hdr);
  CAT_CHECK(leave, hlen > 0, CATERVA_E_INVALID, "cannot write a .npy header for dtype %s", descr);
  fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    rc = cat_io_error(ctx, "cannot create", path);
    goto leave;
  }
  created = 1;
  CAT_TRY(leave, cat_io_pwrite(ctx, fd, hdr, (size_t)hlen, 0, path));
  CAT_TRY(leave, export_items(ctx, a, lo, hi, fd, path, hlen));
  rc = close(fd) == 0 ? CATERVA_OK : cat_io_error(ctx, "cannot write", path);
  fd = -1;
leave:
  if (fd >= 0) close(fd);
  if (rc < 0 && created) unlink(path); /* only the file this call created */
  return rc;
}

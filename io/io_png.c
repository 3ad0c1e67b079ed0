/*
 * io_png.c -- a 2-D slice of an array drawn as a PNG image with a perceptually uniform
 * colour map (caterva_png.h).
 *
 * Steps: check the box and the axes; read the box (caterva_array_get_slice, which
 * decompresses only the blocks it touches); turn the items into doubles; find the range;
 * map each cell to one of 256 colours (NaN to its own colour); draw the optional colour bar
 * with its two labels in a 3x5-pixel font of our own; encode with libpng into memory.
 *
 * The colour map is computed, not tabulated: with t = i / 255, entry i has CIE L* = 18 + 74 t,
 * hue h = 315 - 215 t degrees and chroma C = 42 - 16 sin(pi t) + 50 t^4 in CIELCh(ab) (the
 * chroma dips in the middle, where sRGB holds little at blue-green hues, and rises for the
 * yellow end), reduced by bisection wherever the colour would still fall outside the sRGB
 * gamut (only the last entry); then Lab -> XYZ (D65 white) -> linear sRGB -> the sRGB
 * transfer curve -> 8 bits (the formulas of CIE 15 and IEC 61966-2-1).
 */
#include "io_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#ifdef HAVE_LIBPNG
#include <png.h>
#endif

void caterva_png_params_init(caterva_png_params *p) {
  memset(p, 0, sizeof *p);
  p->row_axis = p->col_axis = -1;
  p->vmin = p->vmax = NAN;
  p->scale = 1;
  p->nan_rgb[0] = p->nan_rgb[1] = p->nan_rgb[2] = 190;
}

/* ---- the colour map ------------------------------------------------------------------- */

/* CIE L*a*b* (D65) to linear sRGB. */
static void lab_to_linear(double L, double a, double b, double rgb[3]) {
  const double d = 6.0 / 29.0;
  double fy = (L + 16.0) / 116.0, fx = fy + a / 500.0, fz = fy - b / 200.0;
  double f[3] = {fx, fy, fz}, xyz[3];
  static const double white[3] = {0.95047, 1.0, 1.08883};
  for (int k = 0; k < 3; k++)
    xyz[k] = white[k] * (f[k] > d ? f[k] * f[k] * f[k] : 3.0 * d * d * (f[k] - 4.0 / 29.0));
  rgb[0] = 3.2406 * xyz[0] - 1.5372 * xyz[1] - 0.4986 * xyz[2];
  rgb[1] = -0.9689 * xyz[0] + 1.8758 * xyz[1] + 0.0415 * xyz[2];
  rgb[2] = 0.0557 * xyz[0] - 0.2040 * xyz[1] + 1.0570 * xyz[2];
}

static int in_gamut(const double rgb[3]) {
  for (int k = 0; k < 3; k++)
    if (rgb[k] < 0.0 || rgb[k] > 1.0) return 0;
  return 1;
}

static uint8_t srgb8(double v) {
  double s = v <= 0.0031308 ? 12.92 * v : 1.055 * pow(v, 1.0 / 2.4) - 0.055;
  long q = lround(s * 255.0);
  return (uint8_t)(q < 0 ? 0 : q > 255 ? 255 : q);
}

void caterva_png_colormap(int i, uint8_t rgb[3]) {
  const double pi = 3.14159265358979323846;
  double t = (i < 0 ? 0 : i > 255 ? 255 : i) / 255.0;
  double L = 18.0 + 74.0 * t, h = (315.0 - 215.0 * t) * pi / 180.0;
  double C = 42.0 - 16.0 * sin(pi * t) + 50.0 * t * t * t * t;
  double lin[3], lo = 0.0, hi = C;
  lab_to_linear(L, C * cos(h), C * sin(h), lin);
  if (!in_gamut(lin)) {
    for (int n = 0; n < 40; n++) {  /* the largest chroma inside the gamut */
      double c = 0.5 * (lo + hi);
      lab_to_linear(L, c * cos(h), c * sin(h), lin);
      if (in_gamut(lin)) lo = c;
      else hi = c;
    }
    lab_to_linear(L, lo * cos(h), lo * sin(h), lin);
  }
  for (int k = 0; k < 3; k++) rgb[k] = srgb8(lin[k]);
}

/* ---- items to doubles ----------------------------------------------------------------- */

/* IEEE 754 binary16 to double. */
static double half_to_double(uint16_t h) {
  int e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m | 0x400, e - 25);
  return (h & 0x8000) ? -v : v;
}

/* Item p (n bytes, big-endian when be) of kind as a double. */
static double item_value(const uint8_t *p, int n, int kind, int be) {
  uint8_t b[8];
  uint64_t u = 0;
  for (int k = 0; k < n; k++) b[k] = be ? p[n - 1 - k] : p[k]; /* to little-endian */
  for (int k = n - 1; k >= 0; k--) u = u << 8 | b[k];
  if (kind == CATERVA_KIND_FLOAT) {
    if (n == 2) return half_to_double((uint16_t)u);
    if (n == 4) {
      float f;
      uint32_t w = (uint32_t)u;
      memcpy(&f, &w, 4);
      return f;
    }
    double d;
    memcpy(&d, &u, 8);
    return d;
  }
  if (kind == CATERVA_KIND_INT && n < 8 && (u >> (8 * n - 1)) & 1) u |= ~(uint64_t)0 << (8 * n);
  if (kind == CATERVA_KIND_INT) return (double)(int64_t)u;
  return (double)u; /* uint, bool */
}

/* ---- drawing -------------------------------------------------------------------------- */

/* A 3x5 font for the colour bar's labels: rows top to bottom, 3 bits each (left = 4). */
static const char font_chars[] = "0123456789-.e+";
static const uint16_t font_bits[] = {
    075557, 026227, 071747, 071717, 055711, 074717, 074757, 071111, 075757, 075717,
    000700, 000002, 003743, 002720,
};

typedef struct png_canvas {
  int w, h;
  uint8_t *rgb;  /* w * h * 3 */
} png_canvas;

static void put_pixel(png_canvas *c, int x, int y, const uint8_t *rgb) {
  if (x < 0 || y < 0 || x >= c->w || y >= c->h) return;
  memcpy(c->rgb + ((size_t)y * (size_t)c->w + (size_t)x) * 3, rgb, 3);
}

/* Draw text at (x, y) in black, each font pixel s x s. */
static void draw_text(png_canvas *c, int x, int y, int s, const char *z) {
  static const uint8_t black[3] = {0, 0, 0};
  for (; *z; z++, x += 4 * s) {
    const char *f = strchr(font_chars, *z);
    if (*z == ' ' || f == NULL) continue;
    uint16_t bits = font_bits[f - font_chars];
    for (int r = 0; r < 5; r++)
      for (int col = 0; col < 3; col++)
        if (bits >> (3 * (4 - r) + (2 - col)) & 1)
          for (int dy = 0; dy < s; dy++)
            for (int dx = 0; dx < s; dx++) put_pixel(c, x + col * s + dx, y + r * s + dy, black);
  }
}

/* Layout of the colour bar beside a field of fw x fh pixels. */
#define BAR_GAP 6
#define BAR_WIDTH 14
#define LABEL_CHARS 10

static void draw_colorbar(png_canvas *c, int fw, int fh, int s, const char *top,
                          const char *bottom) {
  int x0 = fw + BAR_GAP;
  for (int y = 0; y < fh; y++) {
    uint8_t rgb[3];
    caterva_png_colormap(fh > 1 ? (int)lround(255.0 * (fh - 1 - y) / (fh - 1)) : 255, rgb);
    for (int x = 0; x < BAR_WIDTH; x++) put_pixel(c, x0 + x, y, rgb);
  }
  draw_text(c, x0 + BAR_WIDTH + 3, 1, s, top);
  draw_text(c, x0 + BAR_WIDTH + 3, fh - 5 * s - 1, s, bottom);
}

/* Colour index of v in [vmin, vmax]. */
static int color_index(double v, double vmin, double vmax) {
  double t = vmax > vmin ? (v - vmin) / (vmax - vmin) : 0.5;
  if (!(t > 0.0)) t = 0.0;
  if (t > 1.0) t = 1.0;
  return (int)lround(t * 255.0);
}

/* ---- PNG encoding ---------------------------------------------------------------------- */

/* The PNG bytes being written, in memory. */
typedef struct png_sink {
  uint8_t *buf;
  size_t len, cap;
  int nomem;
} png_sink;

#ifdef HAVE_LIBPNG
static void sink_write(png_structp png, png_bytep data, size_t n) {
  png_sink *s = png_get_io_ptr(png);
  if (s->nomem) return;
  if (s->len + n > s->cap) {
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < s->len + n) cap *= 2;
    uint8_t *b = realloc(s->buf, cap);
    if (b == NULL) {
      s->nomem = 1;
      png_error(png, "out of memory");
    }
    s->buf = b;
    s->cap = cap;
  }
  memcpy(s->buf + s->len, data, n);
  s->len += n;
}

static void sink_flush(png_structp png) { (void)png; }

/* Encode the canvas with the range in two tEXt chunks. Nothing that the error path reads
 * changes after setjmp. */
static int encode_png(caterva_ctx *ctx, const png_canvas *c, const char *smin,
                      const char *smax, png_sink *sink) {
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
  png_infop info = png ? png_create_info_struct(png) : NULL;
  png_text text[2];
  if (png == NULL || info == NULL) {
    png_destroy_write_struct(&png, &info);
    return cat_error(ctx, CATERVA_E_NOMEM, "out of memory for libpng");
  }
  memset(text, 0, sizeof text);
  text[0].compression = text[1].compression = PNG_TEXT_COMPRESSION_NONE;
  text[0].key = (char *)"caterva:vmin";
  text[0].text = (char *)smin;
  text[1].key = (char *)"caterva:vmax";
  text[1].text = (char *)smax;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return cat_error(ctx, sink->nomem ? CATERVA_E_NOMEM : CATERVA_E_CODEC,
                     "libpng could not encode the image");
  }
  png_set_write_fn(png, sink, sink_write, sink_flush);
  png_set_IHDR(png, info, (png_uint_32)c->w, (png_uint_32)c->h, 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_text(png, info, text, 2);
  png_write_info(png, info);
  for (int y = 0; y < c->h; y++) png_write_row(png, c->rgb + (size_t)y * (size_t)c->w * 3);
  png_write_end(png, info);
  png_destroy_write_struct(&png, &info);
  return CATERVA_OK;
}
#else
static int encode_png(caterva_ctx *ctx, const png_canvas *c, const char *smin,
                      const char *smax, png_sink *sink) {
  (void)c;
  (void)smin;
  (void)smax;
  (void)sink;
  return cat_error(ctx, CATERVA_E_UNSUPPORTED, "built without libpng");
}
#endif

/* ---- the slice ------------------------------------------------------------------------ */

/* The axes shown and the extents of the box; checks that the box is 2-D. */
static int png_axes(caterva_ctx *ctx, int nd, const int64_t *lo, const int64_t *hi,
                    const caterva_png_params *p, int *r, int *c) {
  int rc = CATERVA_OK, n = 0, k;
  *r = p->row_axis;
  *c = p->col_axis;
  if (*r < 0 && *c < 0) {
    int ax[2] = {-1, -1};
    for (k = 0; k < nd; k++)
      if (hi[k] - lo[k] != 1) {
        if (n < 2) ax[n] = k;
        n++;
      }
    CAT_CHECK(leave, n == 2, CATERVA_E_INVALID, "the box has %d axes longer than 1: give the "
              "two axes to show (the others must have extent 1)", n);
    *r = ax[0];
    *c = ax[1];
  }
  CAT_CHECK(leave, *r >= 0 && *r < nd && *c >= 0 && *c < nd && *r != *c, CATERVA_E_INVALID,
            "axes %d and %d are not two distinct axes of a %d-d array", *r, *c, nd);
  for (k = 0; k < nd; k++)
    CAT_CHECK(leave, k == *r || k == *c || hi[k] - lo[k] == 1, CATERVA_E_INVALID,
              "the box must have extent 1 along axis %d (only axes %d and %d are shown)", k, *r,
              *c);
leave:
  return rc;
}

/* The box's cells as doubles, rows along axis r and columns along axis c. */
static int png_values(caterva_ctx *ctx, caterva_array *a, const int64_t *lo, const int64_t *hi,
                      int r, int c, double *v) {
  int rc = CATERVA_OK, isz = caterva_array_itemsize(a);
  caterva_dtype_info info;
  int64_t nr = hi[r] - lo[r], nc = hi[c] - lo[c];
  uint8_t *buf = NULL;
  const char *dt = caterva_array_dtype(a);
  CAT_CHECK(leave, dt && caterva_dtype_parse(dt, &info) == CATERVA_OK &&
                       (info.kind == CATERVA_KIND_BOOL || info.kind == CATERVA_KIND_INT ||
                        info.kind == CATERVA_KIND_UINT || info.kind == CATERVA_KIND_FLOAT) &&
                       isz <= 8,
            CATERVA_E_UNSUPPORTED, "pictures show bool, integer and float items, not %s",
            dt ? dt : "items without a dtype");
  buf = malloc((size_t)(nr * nc * isz));
  CAT_CHECK(leave, buf != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, caterva_array_get_slice(ctx, a, lo, hi, buf, nr * nc * isz));
  for (int64_t i = 0; i < nr; i++)
    for (int64_t j = 0; j < nc; j++) {
      int64_t off = r < c ? i * nc + j : j * nr + i;  /* the box in C order */
      v[i * nc + j] = item_value(buf + off * isz, isz, info.kind, info.big_endian);
    }
leave:
  free(buf);
  return rc;
}

/* vmin, vmax: given, or the finite extremes of v (0, 0 when none). */
static void png_range(const double *v, int64_t n, const caterva_png_params *p, double *vmin,
                      double *vmax) {
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < n; i++)
    if (isfinite(v[i])) {
      if (v[i] < lo) lo = v[i];
      if (v[i] > hi) hi = v[i];
    }
  if (lo > hi) lo = hi = 0.0;
  *vmin = isnan(p->vmin) ? lo : p->vmin;
  *vmax = isnan(p->vmax) ? hi : p->vmax;
}

/* Paint the field: cell (i, j) at pixel block (j, row of i). */
static void paint_field(png_canvas *cv, const double *v, int64_t nr, int64_t nc,
                        const caterva_png_params *p, double vmin, double vmax) {
  uint8_t map[256][3];
  for (int i = 0; i < 256; i++) caterva_png_colormap(i, map[i]);
  for (int64_t i = 0; i < nr; i++) {
    int64_t row = p->origin_lower ? nr - 1 - i : i;
    for (int64_t j = 0; j < nc; j++) {
      double x = v[i * nc + j];
      const uint8_t *rgb = isnan(x) ? p->nan_rgb : map[color_index(x, vmin, vmax)];
      for (int dy = 0; dy < p->scale; dy++)
        for (int dx = 0; dx < p->scale; dx++)
          put_pixel(cv, (int)(j * p->scale + dx), (int)(row * p->scale + dy), rgb);
    }
  }
}

int caterva_png_slice(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                      const int64_t *stop, const caterva_png_params *p, uint8_t **out,
                      size_t *outlen) {
  int rc = CATERVA_OK, nd, r = 0, c = 0, s;
  int64_t lo[CATERVA_MAX_DIM] = {0}, hi[CATERVA_MAX_DIM] = {0}, nr, nc;
  double *v = NULL, vmin, vmax;
  png_canvas cv = {0, 0, NULL};
  png_sink sink = {NULL, 0, 0, 0};
  char top[32], bottom[32], smin[32], smax[32];
  *out = NULL;
  *outlen = 0;
  CAT_CHECK(leave, a != NULL && p != NULL, CATERVA_E_INVALID, "no array or parameters");
  CAT_CHECK(leave, p->scale >= 1 && p->scale <= 16, CATERVA_E_INVALID, "scale %d not in 1..16",
            p->scale);
  CAT_CHECK(leave, !(p->vmin > p->vmax) && !isinf(p->vmin) && !isinf(p->vmax),
            CATERVA_E_INVALID, "the range must be finite with vmin <= vmax");
  nd = caterva_array_ndim(a);
  for (int k = 0; k < nd; k++) {
    lo[k] = start ? start[k] : 0;
    hi[k] = stop ? stop[k] : caterva_array_shape(a)[k];
    CAT_CHECK(leave, 0 <= lo[k] && lo[k] <= hi[k] && hi[k] <= caterva_array_shape(a)[k],
              CATERVA_E_RANGE, "box [%lld, %lld) out of range 0..%lld in dimension %d",
              (long long)lo[k], (long long)hi[k], (long long)caterva_array_shape(a)[k], k);
  }
  CAT_TRY(leave, png_axes(ctx, nd, lo, hi, p, &r, &c));
  nr = hi[r] - lo[r];
  nc = hi[c] - lo[c];
  CAT_CHECK(leave, nr >= 1 && nc >= 1, CATERVA_E_INVALID, "the box is empty");
  CAT_CHECK(leave, nr <= CATERVA_PNG_MAX_CELLS / nc && nr * p->scale <= CATERVA_PNG_MAX_SIDE &&
                       nc * p->scale <= CATERVA_PNG_MAX_SIDE,
            CATERVA_E_OVERFLOW, "%lld x %lld cells at scale %d: more than a picture takes "
            "(%d pixels a side)", (long long)nr, (long long)nc, p->scale, CATERVA_PNG_MAX_SIDE);
  v = malloc((size_t)(nr * nc) * sizeof *v);
  CAT_CHECK(leave, v != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, png_values(ctx, a, lo, hi, r, c, v));
  png_range(v, nr * nc, p, &vmin, &vmax);
  s = nr * p->scale >= 40 ? 2 : 1;  /* label font size */
  cv.w = (int)(nc * p->scale);
  cv.h = (int)(nr * p->scale);
  if (p->colorbar) {
    cv.w += BAR_GAP + BAR_WIDTH + 3 + LABEL_CHARS * 4 * s;
    if (cv.h < 12 * s) cv.h = 12 * s;
  }
  cv.rgb = malloc((size_t)cv.w * (size_t)cv.h * 3);
  CAT_CHECK(leave, cv.rgb != NULL, CATERVA_E_NOMEM, "out of memory");
  memset(cv.rgb, 255, (size_t)cv.w * (size_t)cv.h * 3);
  paint_field(&cv, v, nr, nc, p, vmin, vmax);
  snprintf(top, sizeof top, "%.4g", vmax);
  snprintf(bottom, sizeof bottom, "%.4g", vmin);
  if (p->colorbar) draw_colorbar(&cv, (int)(nc * p->scale), cv.h, s, top, bottom);
  snprintf(smin, sizeof smin, "%.17g", vmin);
  snprintf(smax, sizeof smax, "%.17g", vmax);
  rc = encode_png(ctx, &cv, smin, smax, &sink);
  if (rc < 0) {
    free(sink.buf);
    goto leave;
  }
  *out = sink.buf;
  *outlen = sink.len;
leave:
  free(v);
  free(cv.rgb);
  return rc;
}

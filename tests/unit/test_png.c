/*
 * test_png.c -- pictures of slices (io/io_png.c), decoded with libpng here and checked
 * pixel by pixel at known cells: the minimum gets the first colour of the map, the maximum
 * the last, NaN its own colour; orientation (origin, axes), scale, a given range, every
 * numeric dtype in both byte orders, the colour bar, errors; and the colour map itself is
 * checked to be perceptually ordered (CIE L* computed here from its sRGB values rises by
 * equal steps).
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "caterva_io.h"
#include "tap.h"

#ifdef HAVE_LIBPNG
#include <png.h>

/* A decoded image: 8-bit RGB. */
typedef struct image {
  int w, h;
  uint8_t *px;
} image;

static int decode(const uint8_t *png, size_t n, image *im) {
  png_image pi;
  memset(&pi, 0, sizeof pi);
  pi.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&pi, png, n)) return 0;
  pi.format = PNG_FORMAT_RGB;
  im->w = (int)pi.width;
  im->h = (int)pi.height;
  im->px = malloc(PNG_IMAGE_SIZE(pi));
  if (im->px == NULL || !png_image_finish_read(&pi, NULL, im->px, 0, NULL)) {
    png_image_free(&pi);
    free(im->px);
    im->px = NULL;
    return 0;
  }
  return 1;
}

static const uint8_t *pixel(const image *im, int x, int y) {
  return im->px + ((size_t)y * (size_t)im->w + (size_t)x) * 3;
}

static int same(const uint8_t *a, const uint8_t *b) { return memcmp(a, b, 3) == 0; }

static caterva_array *make(caterva_ctx *ctx, const char *dtype, int ndim, const int64_t *shape,
                           const void *buf, int64_t len) {
  caterva_array_params p;
  caterva_array *a = NULL;
  caterva_array_params_init(&p);
  p.ndim = ndim;
  for (int k = 0; k < ndim; k++) {
    p.shape[k] = shape[k];
    p.chunkshape[k] = 3;
    p.blockshape[k] = 2;
  }
  p.dtype = dtype;
  if (caterva_array_from_buffer(ctx, &p, buf, len, &a) < 0) return NULL;
  return a;
}

/* Render and decode; NULL px on failure (the rc in *prc). */
static image render(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                    const int64_t *stop, const caterva_png_params *p, int *prc) {
  image im = {0, 0, NULL};
  uint8_t *png = NULL;
  size_t n = 0;
  *prc = caterva_png_slice(ctx, a, start, stop, p, &png, &n);
  if (*prc == CATERVA_OK && !decode(png, n, &im)) *prc = -100;
  free(png);
  return im;
}

static void cmap(int i, uint8_t rgb[3]) { caterva_png_colormap(i, rgb); }

/* Min, max, NaN and a middle value of a 5x7 float32 field, both origins. */
static void test_field(caterva_ctx *ctx) {
  float v[35];
  int64_t shape[2] = {5, 7};
  caterva_png_params p;
  uint8_t c0[3], c255[3], cmid[3];
  int rc;
  for (int i = 0; i < 35; i++) v[i] = 10.0f + (float)(i % 5);
  v[1 * 7 + 2] = 0.0f;    /* the minimum */
  v[3 * 7 + 5] = 100.0f;  /* the maximum */
  v[0] = NAN;
  v[4 * 7 + 6] = 50.0f;   /* the middle of the range: colour 128 (127.5 rounded) */
  caterva_array *a = make(ctx, "<f4", 2, shape, v, sizeof v);
  cmap(0, c0);
  cmap(255, c255);
  cmap(128, cmid);
  caterva_png_params_init(&p);
  image im = render(ctx, a, NULL, NULL, &p, &rc);
  tap_ok(rc == 0 && im.w == 7 && im.h == 5, "a 5x7 field is a 7x5 image (rc %d)", rc);
  if (im.px) {
    tap_ok(same(pixel(&im, 2, 1), c0), "the minimum cell has the first colour of the map");
    tap_ok(same(pixel(&im, 5, 3), c255), "the maximum cell has the last colour");
    tap_ok(pixel(&im, 0, 0)[0] == 190 && pixel(&im, 0, 0)[1] == 190 &&
               pixel(&im, 0, 0)[2] == 190, "NaN is grey #bebebe");
    tap_ok(same(pixel(&im, 6, 4), cmid), "the middle value has colour 128");
  }
  free(im.px);
  p.origin_lower = 1;
  im = render(ctx, a, NULL, NULL, &p, &rc);
  tap_ok(im.px && same(pixel(&im, 2, 3), c0) && same(pixel(&im, 5, 1), c255) &&
             pixel(&im, 0, 4)[0] == 190, "origin=lower puts row 0 at the bottom");
  free(im.px);
  caterva_png_params_init(&p);
  p.vmin = 20.0;
  p.vmax = 40.0;
  p.nan_rgb[0] = 255, p.nan_rgb[1] = 0, p.nan_rgb[2] = 255;
  im = render(ctx, a, NULL, NULL, &p, &rc);
  tap_ok(im.px && same(pixel(&im, 1, 0), c0) && same(pixel(&im, 5, 3), c255) &&
             same(pixel(&im, 6, 4), c255) && pixel(&im, 0, 0)[1] == 0,
         "a given range clamps values outside it to the end colours; nan= colour");
  free(im.px);
  caterva_png_params_init(&p);
  p.scale = 3;
  im = render(ctx, a, NULL, NULL, &p, &rc);
  int ok = im.px && im.w == 21 && im.h == 15;
  for (int dy = 0; ok && dy < 3; dy++)
    for (int dx = 0; dx < 3; dx++) ok &= same(pixel(&im, 2 * 3 + dx, 1 * 3 + dy), c0);
  tap_ok(ok, "scale=3: each cell is 3x3 pixels");
  free(im.px);
  caterva_png_params_init(&p);
  p.colorbar = 1;
  im = render(ctx, a, NULL, NULL, &p, &rc);
  ok = im.px && im.w > 7 + 14 && im.h >= 12;
  if (ok) ok = same(pixel(&im, 7 + 6 + 3, 0), c255) && same(pixel(&im, 7 + 6 + 3, im.h - 1), c0);
  tap_ok(ok, "the colour bar runs from the last colour at the top to the first at the bottom");
  free(im.px);
  caterva_array_free(a);
}

/* A 3-d array: slices along each pair of axes, and rows/columns swapped. */
static void test_axes(caterva_ctx *ctx) {
  int64_t shape[3] = {4, 5, 6};
  double v[120];
  uint8_t c0[3], c255[3];
  caterva_png_params p;
  int rc;
  for (int i = 0; i < 120; i++) v[i] = 1.0;
  v[2 * 30 + 3 * 6 + 4] = -5.0;  /* cell (2, 3, 4) */
  v[2 * 30 + 1 * 6 + 0] = 9.0;   /* cell (2, 1, 0) */
  v[0 * 30 + 3 * 6 + 5] = 7.0;   /* cell (0, 3, 5) */
  caterva_array *a = make(ctx, "<f8", 3, shape, v, sizeof v);
  cmap(0, c0);
  cmap(255, c255);
  caterva_png_params_init(&p);
  int64_t s1[3] = {2, 0, 0}, e1[3] = {3, 5, 6};
  image im = render(ctx, a, s1, e1, &p, &rc);
  tap_ok(im.px && im.w == 6 && im.h == 5 && same(pixel(&im, 4, 3), c0) &&
             same(pixel(&im, 0, 1), c255), "axis 0 fixed: rows along axis 1, columns along 2");
  free(im.px);
  int64_t s2[3] = {0, 3, 0}, e2[3] = {4, 4, 6};
  im = render(ctx, a, s2, e2, &p, &rc);
  tap_ok(im.px && im.w == 6 && im.h == 4 && same(pixel(&im, 4, 2), c0) &&
             same(pixel(&im, 5, 0), c255), "axis 1 fixed: rows along axis 0, columns along 2");
  free(im.px);
  p.row_axis = 2;
  p.col_axis = 1;
  im = render(ctx, a, s1, e1, &p, &rc);
  tap_ok(im.px && im.w == 5 && im.h == 6 && same(pixel(&im, 3, 4), c0) &&
             same(pixel(&im, 1, 0), c255), "axes=2,1 swaps rows and columns");
  free(im.px);
  int64_t s3[3] = {2, 3, 0}, e3[3] = {3, 4, 6};
  p.row_axis = 1;
  p.col_axis = 2;
  im = render(ctx, a, s3, e3, &p, &rc);
  tap_ok(im.px && im.w == 6 && im.h == 1 && same(pixel(&im, 4, 0), c0),
         "a single row with explicit axes");
  free(im.px);
  caterva_png_params_init(&p);
  im = render(ctx, a, NULL, NULL, &p, &rc);
  tap_ok(rc == CATERVA_E_INVALID && !im.px, "a 3-d box is refused (%d): %s", rc,
         caterva_ctx_errmsg(ctx));
  im = render(ctx, a, s3, e3, &p, &rc);
  tap_ok(rc == CATERVA_E_INVALID, "a box with one long axis needs axes= (%s)",
         caterva_ctx_errmsg(ctx));
  p.row_axis = 0;
  p.col_axis = 2;
  im = render(ctx, a, s1, e1, &p, &rc);
  tap_ok(rc == CATERVA_E_INVALID, "axes whose others are not of extent 1 are refused (%s)",
         caterva_ctx_errmsg(ctx));
  caterva_png_params_init(&p);
  p.row_axis = 1;
  p.col_axis = 1;
  im = render(ctx, a, s1, e1, &p, &rc);
  tap_ok(rc == CATERVA_E_INVALID, "equal axes are refused");
  caterva_png_params_init(&p);
  p.scale = 0;
  im = render(ctx, a, s1, e1, &p, &rc);
  tap_ok(rc == CATERVA_E_INVALID, "scale 0 is refused");
  caterva_png_params_init(&p);
  p.vmin = 2;
  p.vmax = 1;
  im = render(ctx, a, s1, e1, &p, &rc);
  tap_ok(rc == CATERVA_E_INVALID, "vmin > vmax is refused");
  int64_t s4[3] = {2, 0, 0}, e4[3] = {3, 5, 7};
  caterva_png_params_init(&p);
  im = render(ctx, a, s4, e4, &p, &rc);
  tap_ok(rc == CATERVA_E_RANGE, "a box outside the shape is refused");
  caterva_array_free(a);
}

/* Every numeric dtype, both byte orders: the min, max and a middle cell. */
static void test_dtypes(caterva_ctx *ctx) {
  static const char *dtypes[] = {"|b1", "|i1", "|u1", "<i2", ">i2", "<u2", ">u2", "<i4", ">i4",
                                 "<u4", ">u4", "<i8", ">i8", "<u8", ">u8", "<f2", ">f2", "<f4",
                                 ">f4", "<f8", ">f8"};
  uint8_t c0[3], c255[3];
  int64_t shape[2] = {3, 4};
  int n_ok = 0, n = (int)(sizeof dtypes / sizeof dtypes[0]);
  cmap(0, c0);
  cmap(255, c255);
  for (int d = 0; d < n; d++) {
    caterva_dtype_info info;
    uint8_t buf[12 * 8];
    caterva_png_params p;
    int rc;
    caterva_dtype_parse(dtypes[d], &info);
    memset(buf, 0, sizeof buf);
    /* item 5 = 1 (max), item 7 = -1 for signed (min) or 0 elsewhere; 1 everywhere else for
     * unsigned/bool is not needed: min is 0 at every other cell then. */
    for (int i = 0; i < 12; i++) {
      uint8_t *it = buf + i * info.itemsize;
      double x = i == 5 ? 1.0 : (i == 7 && info.kind != CATERVA_KIND_UINT &&
                                 info.kind != CATERVA_KIND_BOOL) ? -1.0 : 0.0;
      uint8_t le[8] = {0};
      if (info.kind == CATERVA_KIND_FLOAT) {
        if (info.itemsize == 2) {
          uint16_t h = x == 1.0 ? 0x3c00 : x == -1.0 ? 0xbc00 : 0;
          le[0] = (uint8_t)h, le[1] = (uint8_t)(h >> 8);
        } else if (info.itemsize == 4) {
          float f = (float)x;
          memcpy(le, &f, 4);
        } else {
          memcpy(le, &x, 8);
        }
      } else {
        int64_t iv = (int64_t)x;
        for (int k = 0; k < 8; k++) le[k] = (uint8_t)((uint64_t)iv >> (8 * k));
      }
      for (int k = 0; k < info.itemsize; k++)
        it[k] = info.big_endian ? le[info.itemsize - 1 - k] : le[k];
    }
    caterva_array *a = make(ctx, dtypes[d], 2, shape, buf, 12 * info.itemsize);
    caterva_png_params_init(&p);
    image im = render(ctx, a, NULL, NULL, &p, &rc);
    int signed_ = info.kind == CATERVA_KIND_INT || info.kind == CATERVA_KIND_FLOAT;
    int ok = im.px && same(pixel(&im, 1, 1), c255) &&
             same(pixel(&im, 3, 1), signed_ ? c0 : c0) &&
             (!signed_ || !same(pixel(&im, 0, 0), c0));
    if (!ok) tap_diag("%s: rc %d %s", dtypes[d], rc, caterva_ctx_errmsg(ctx));
    n_ok += ok;
    free(im.px);
    caterva_array_free(a);
  }
  tap_ok(n_ok == n, "%d of %d numeric dtypes (bool, int, uint, float16/32/64, both byte "
         "orders) draw their min and max cells in the end colours", n_ok, n);
  {
    int64_t sh[2] = {2, 2};
    uint8_t b[8] = {0};
    caterva_png_params p;
    int rc;
    caterva_array *a = make(ctx, "|S2", 2, sh, b, 8);
    caterva_png_params_init(&p);
    image im = render(ctx, a, NULL, NULL, &p, &rc);
    tap_ok(rc == CATERVA_E_UNSUPPORTED && !im.px, "bytes items are refused: %s",
           caterva_ctx_errmsg(ctx));
    caterva_array_free(a);
  }
}

/* sRGB 8-bit to CIE L* (D65), computed here independently of the library's code. */
static double lightness(const uint8_t *rgb) {
  double lin[3], y;
  for (int k = 0; k < 3; k++) {
    double s = rgb[k] / 255.0;
    lin[k] = s <= 0.04045 ? s / 12.92 : pow((s + 0.055) / 1.055, 2.4);
  }
  y = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2];
  return y > 216.0 / 24389.0 ? 116.0 * cbrt(y) - 16.0 : y * 24389.0 / 27.0;
}

static void test_colormap(void) {
  uint8_t rgb[3], prev[3];
  double l0, l255, lp = -1, worst = 0;
  int mono = 1, ndistinct = 1, grey = 0;
  cmap(0, rgb);
  l0 = lightness(rgb);
  cmap(255, rgb);
  l255 = lightness(rgb);
  for (int i = 0; i < 256; i++) {
    cmap(i, rgb);
    double l = lightness(rgb), want = l0 + (l255 - l0) * i / 255.0;
    if (fabs(l - want) > worst) worst = fabs(l - want);
    if (i % 4 == 0) {
      if (l <= lp) mono = 0;
      lp = l;
    }
    if (i > 0 && !same(rgb, prev)) ndistinct++;
    if (abs(rgb[0] - rgb[1]) < 8 && abs(rgb[1] - rgb[2]) < 8) grey++;
    memcpy(prev, rgb, 3);
  }
  tap_ok(fabs(l0 - 18) < 1 && fabs(l255 - 92) < 1, "the map's lightness runs from L* %.1f to "
         "%.1f", l0, l255);
  tap_ok(mono && worst < 0.6, "L* rises monotonically and linearly (largest deviation %.2f)",
         worst);
  tap_ok(ndistinct >= 250 && grey == 0, "%d distinct colours (8-bit rounding may merge "
         "neighbours), none of them grey (so NaN's grey stands out)", ndistinct);
}

int main(void) {
  caterva_ctx *ctx = NULL;
  if (caterva_ctx_new(1, &ctx) < 0) return 99;
  test_colormap();
  test_field(ctx);
  test_axes(ctx);
  test_dtypes(ctx);
  caterva_ctx_free(ctx);
  return tap_done();
}
#else
int main(void) { return tap_skip_all("built without libpng"); }
#endif

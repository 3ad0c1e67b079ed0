/*
 * caterva_png.h -- pictures of 2-D slices as PNG images (part of the public interface;
 * include caterva_io.h, which includes this file). Needs libpng at build time: without it,
 * caterva_png_slice returns CATERVA_E_UNSUPPORTED ("built without libpng").
 *
 * The colour map: 256 colours whose CIE L* (perceived lightness) rises linearly from 18 to
 * 92 while the hue turns from violet through blue, teal and green to yellow (CIELCh hue
 * 315 to 100 degrees); where sRGB cannot show the chroma asked for, the chroma is reduced,
 * never the lightness. It is computed from the CIE 1976 L*a*b* and sRGB (IEC 61966-2-1)
 * formulas, not taken from a table: equal steps of value are equal steps of lightness, and
 * the map reads correctly in grey scale and for the common colour-vision deficiencies.
 */
#ifndef CATERVA_PNG_H
#define CATERVA_PNG_H

#ifndef CATERVA_IO_H
#error "include caterva_io.h instead"
#endif

/** @defgroup png PNG pictures of slices
 * @{ */

/** Most cells a picture may show, and most pixels along a side of the image. */
#define CATERVA_PNG_MAX_CELLS ((int64_t)1 << 26)
#define CATERVA_PNG_MAX_SIDE 16384

/** How to draw. Initialise with caterva_png_params_init. */
typedef struct caterva_png_params {
  int row_axis, col_axis;  /**< array axes shown down and across; -1, -1: the two axes of
                                the box whose extent is not 1, in increasing order */
  double vmin, vmax;       /**< values at the ends of the colour map; NaN: the minimum and
                                maximum of the finite values shown. Values beyond are drawn
                                in the end colours */
  int origin_lower;        /**< 0: row index 0 at the top (an image); 1: at the bottom (a
                                map whose first row is the southernmost) */
  int scale;               /**< pixels per cell along each side, 1..16 */
  int colorbar;            /**< 1: a colour bar at the right, labelled with vmin and vmax */
  uint8_t nan_rgb[3];      /**< colour of NaN cells (default grey 190,190,190, which the map
                                never uses: its colours all have chroma) */
} caterva_png_params;

/** Defaults: automatic axes and range, origin at the top, scale 1, no colour bar. */
void caterva_png_params_init(caterva_png_params *p);

/** Colour i (0..255) of the map, as 8-bit sRGB. */
void caterva_png_colormap(int i, uint8_t rgb[3]);

/** Draw the box [start, stop) of a (extent 1 along every axis but the two shown) as a PNG:
 * 8-bit RGB, one cell per scale x scale pixels. The image carries the range used in tEXt
 * chunks "caterva:vmin" and "caterva:vmax" (printf %.17g).
 * @param[in]  a       an array of bool, integer or float (16, 32, 64 bit) items, either
 *                     byte order; other dtypes give CATERVA_E_UNSUPPORTED
 * @param[in]  start, stop  the box (NULL, NULL: the whole array)
 * @param[out] out     malloc'ed PNG bytes, owned by the caller (free); NULL on failure
 * @param[out] outlen  their number
 * @return CATERVA_OK, CATERVA_E_INVALID (axes, a box that is not 2-D, vmin > vmax),
 *         _RANGE (box outside the shape), _OVERFLOW (too many cells or pixels),
 *         _UNSUPPORTED (dtype, or no libpng), _NOMEM, or an error reading the array. */
int caterva_png_slice(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                      const int64_t *stop, const caterva_png_params *p, uint8_t **out,
                      size_t *outlen);
/** @} */

#endif /* CATERVA_PNG_H */

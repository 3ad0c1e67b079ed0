/*
 * caterva_npy.h -- NumPy .npy files in and out of arrays (part of the public interface;
 * include caterva_io.h, which includes this file).
 *
 * A .npy file (format versions 1.0, 2.0 and 3.0) is a magic string, a version, a header
 * length, a header -- the text of a Python dict with the keys 'descr' (a dtype string),
 * 'fortran_order' (True or False) and 'shape' (a tuple of integers) -- padded with spaces
 * and a newline, then the raw items in C or Fortran order. The header is untrusted: it is
 * parsed by a strict bounded parser that accepts exactly that grammar (no other Python).
 *
 * Import and export stream: they never hold the whole array in memory, only pieces made of
 * whole chunks (at most CATERVA_NPY_PIECE_BYTES, or one chunk when a chunk is larger), read
 * and written with positioned I/O.
 */
#ifndef CATERVA_NPY_H
#define CATERVA_NPY_H

#ifndef CATERVA_IO_H
#error "include caterva_io.h instead"
#endif

/** @defgroup npy NumPy .npy files
 * @{ */

/** Largest header accepted (bytes of dict text): numpy's own headers are well below it. */
#define CATERVA_NPY_MAX_HEADER (1 << 20)
/** Memory a piece of an import or export may use (about; one chunk when larger). The
 * environment variable CATERVA_NPY_PIECE_BYTES overrides it (for tests). */
#define CATERVA_NPY_PIECE_BYTES ((int64_t)64 << 20)

/** What a .npy header says. */
typedef struct caterva_npy_header {
  int major, minor;                    /**< format version: 1.0, 2.0 or 3.0 */
  char descr[CATERVA_DTYPE_MAX + 1];   /**< the dtype string ("<f8", "|u1", ">i4", "<U5",
                                            "<M8[ns]"); '=' is rewritten to the host order */
  int fortran_order;                   /**< items are in Fortran (column-major) order */
  int ndim;                            /**< 0 .. CATERVA_MAX_DIM */
  int64_t shape[CATERVA_MAX_DIM];      /**< extents */
  int itemsize;                        /**< bytes per item, 1..255 */
  int64_t data_offset;                 /**< where the items start in the file */
  int64_t nbytes;                      /**< bytes of items: prod(shape) * itemsize */
} caterva_npy_header;

/** Parse the first bytes of a .npy file.
 * @param[in]  ctx  context for the error message (may be NULL)
 * @param[in]  buf  the file's first len bytes (untrusted)
 * @param[in]  len  bytes available; when the header needs more, the result is
 *                  CATERVA_E_CORRUPT ("header ... beyond the end of the file")
 * @param[out] h    filled on success
 * @return CATERVA_OK; CATERVA_E_CORRUPT for a bad magic string, a header length beyond the
 *         data, bad dict syntax, missing, repeated or unknown keys, a bad shape or a shape
 *         whose size overflows; CATERVA_E_UNSUPPORTED for another format version, a
 *         structured or object dtype, or a dtype string we do not know. */
int caterva_npy_parse_header(caterva_ctx *ctx, const void *buf, size_t len,
                             caterva_npy_header *h);

/** Read and parse the header of the .npy file at path, and check that the file holds exactly
 * the data the header describes (CATERVA_E_CORRUPT when shorter or longer).
 * @return CATERVA_OK, the codes of caterva_npy_parse_header, CATERVA_E_NOTFOUND, _IO. */
int caterva_npy_read_header(caterva_ctx *ctx, const char *path, caterva_npy_header *h);

/** Write the header of a .npy file for dtype descr, shape (ndim extents) and C order into
 * buf (capacity cap): version 1.0 when the header fits in its 16-bit length, else 2.0;
 * padded so that the data start at a multiple of 64 bytes.
 * @return the header's length in bytes, or CATERVA_E_NOSPACE, CATERVA_E_INVALID. */
int64_t caterva_npy_write_header(const char *descr, int ndim, const int64_t *shape, void *buf,
                                 size_t cap);

/** Import the .npy file src into a new array.
 * @param[in]  ctx  context
 * @param[in]  src  the .npy file (any version, C or Fortran order)
 * @param[in]  p    partitioning (zero shapes: automatic), compression, store and path of the
 *                  new array; ndim, shape, itemsize and dtype are ignored (they come from
 *                  the file). For a file store, path must not exist.
 * @param[out] out  the new array, owned by the caller (caterva_array_free); its dtype is the
 *                  file's descr, byte order included.
 * File stores are written in one transaction: on failure the array file is left behind
 * incomplete (the caller removes p->path).
 * @return CATERVA_OK or a negative code (the header's, CATERVA_E_IO, _NOMEM, ...). */
int caterva_npy_import(caterva_ctx *ctx, const char *src, const caterva_array_params *p,
                       caterva_array **out);

/** caterva_npy_import, calling progress(arg, items written, items in all) after each piece
 * (progress may be NULL). A non-zero return stops the import (caterva_progress_fn): it fails
 * and nothing is committed. */
int caterva_npy_import_progress(caterva_ctx *ctx, const char *src, const caterva_array_params *p,
                                caterva_progress_fn progress, void *arg, caterva_array **out);

/** Export the box [start, stop) of array a (NULL, NULL: the whole array) to a new .npy file
 * at path, in C order, with the array's dtype as descr ('|V<itemsize>' when the array has
 * none or one numpy would not read as a simple dtype).
 * @return CATERVA_OK, CATERVA_E_EXISTS when path exists (it is never replaced), _RANGE for a
 *         box outside the shape, _IO, _NOMEM. On failure no file is left at path. */
int caterva_npy_export(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                       const int64_t *stop, const char *path);
/** @} */

#endif /* CATERVA_NPY_H */

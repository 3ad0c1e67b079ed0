/*
 * caterva_bcolz.h -- reading bcolz 1.x carray and ctable directories, and converting them to
 * Blosc2 arrays
 * (part of the public interface of libcaterva-io; include caterva_io.h, which includes this
 * file).
 *
 * A bcolz carray is a directory: meta/sizes and meta/storage (JSON), __attrs__ (JSON) and
 * data/__<n>.blp, one file per chunk, each a 16-byte bloscpack header and one Blosc 1.x
 * chunk. A chunk holds `chunklen` rows of axis 0 (a row is every item of the other axes),
 * in C order; the last file, when the length is not a multiple of chunklen, holds only the
 * leftover rows. A ctable is a directory with __rootdirs__ naming its columns, each a carray
 * in a subdirectory of that name. The fact sheet is shared/spec/bcolz-format.md.
 *
 * Reading model: an item is addressed by its C-order index over the whole carray. A Blosc
 * block is a byte range of a chunk, so it need not start or end on an item, let alone a
 * row. A reader (caterva_bcolz_reader) keeps one chunk's compressed bytes and a window of
 * decompressed consecutive blocks of it, and serves items from the window; moving it
 * decompresses only the blocks that the requested items occupy, reusing a block the old
 * window already holds, so a scan in increasing item order decompresses each block once.
 *
 * The length and the number of chunk files come from meta/sizes and meta/storage only,
 * never from listing data/ (bcolz leaves stale files there). Every byte read is untrusted:
 * a malformed meta file, a missing, truncated or inconsistent .blp file is an error whose
 * message names the file.
 */
#ifndef CATERVA_BCOLZ_H
#define CATERVA_BCOLZ_H

#ifndef CATERVA_IO_H
#error "include caterva_io.h instead"
#endif

/** @defgroup bcolz bcolz directories
 * @{ */
typedef struct caterva_bcolz caterva_bcolz;
typedef struct caterva_bcolz_reader caterva_bcolz_reader;

/** What a path is (caterva_bcolz_kind). */
#define CATERVA_BCOLZ_NONE   0  /**< not a bcolz directory */
#define CATERVA_BCOLZ_CARRAY 1  /**< a directory with meta/storage */
#define CATERVA_BCOLZ_CTABLE 2  /**< a directory with __rootdirs__ (checked first, as bcolz does) */

/** One carray (a whole carray, or a ctable's column). Pointers are owned by the
 * caterva_bcolz it came from and valid until caterva_bcolz_free. */
typedef struct caterva_bcolz_column {
  const char *name;                 /**< the ctable's column name; NULL for a carray */
  const char *path;                 /**< the carray's directory */
  int ndim;                         /**< 1 .. CATERVA_MAX_DIM */
  int64_t shape[CATERVA_MAX_DIM];   /**< from meta/sizes; shape[0] is the length */
  const char *dtype;                /**< canonical NumPy string: "<i4", ">f8", "|b1", "|S5",
                                         "<U3", "<M8[ns]", ... */
  const char *bcolz_dtype;          /**< as meta/storage writes it: "int32", "|S5", ... */
  int itemsize;                     /**< bytes per item */
  int64_t chunklen;                 /**< rows of axis 0 per chunk (>= 1) */
  int64_t nchunks;                  /**< chunk files read: len / chunklen, plus one for a
                                         leftover */
  const char *codec;                /**< cparams.cname ("blosclz" when absent) */
  int clevel;                       /**< cparams.clevel */
  int shuffle;                      /**< cparams.shuffle: 0 none, 1 byte, 2 bit */
  const char *attrs;                /**< __attrs__ as compact JSON ("{}" when the file is
                                         missing, empty or blank) */
} caterva_bcolz_column;

/** Classify a path without reading more than directory entries. */
int caterva_bcolz_kind(const char *path);

/** Open a carray or ctable directory: reads and checks every meta file (and, for a ctable,
 * every column's), not the chunk files.
 * @param[out] out  the dataset, owned by the caller (caterva_bcolz_free)
 * @return CATERVA_OK; CATERVA_E_NOTFOUND (not a bcolz directory, a column directory or a
 *         meta file missing), CATERVA_E_CORRUPT (malformed JSON, missing or wrong-typed
 *         keys, columns of different lengths), CATERVA_E_UNSUPPORTED (object or structured
 *         dtypes), CATERVA_E_NOMEM, CATERVA_E_IO. A ctable column may be N-d (shape[0] rows). */
int caterva_bcolz_open(caterva_ctx *ctx, const char *path, caterva_bcolz **out);
/** Release a dataset; its readers must be freed first. NULL accepted. */
void caterva_bcolz_free(caterva_bcolz *b);

/* -- properties (never fail; borrowed pointers valid while b lives) -- */
int caterva_bcolz_is_ctable(const caterva_bcolz *b);
/** Number of columns: 1 for a carray. */
int caterva_bcolz_ncols(const caterva_bcolz *b);
/** Column i in [0, ncols) (for a carray, 0 is the carray itself), or NULL. */
const caterva_bcolz_column *caterva_bcolz_column_get(const caterva_bcolz *b, int i);
/** Rows (shape[0] of every column). */
int64_t caterva_bcolz_len(const caterva_bcolz *b);
/** The dataset's own __attrs__ as compact JSON ("{}" when missing, empty or blank); for a
 * ctable, those of its root, not of its columns. */
const char *caterva_bcolz_attrs(const caterva_bcolz *b);

/* -- reading -- */

/** A reader of column col: holds one chunk and a window of its decompressed blocks.
 * Use it with the ctx it was created for (the blocks counter counts there).
 * @param[out] out  owned by the caller (caterva_bcolz_reader_free) */
int caterva_bcolz_reader_new(caterva_ctx *ctx, caterva_bcolz *b, int col,
                             caterva_bcolz_reader **out);
void caterva_bcolz_reader_free(caterva_bcolz_reader *r);
/** Make item i (C-order index over the column, < its number of items) readable.
 * The window is moved only when it does not hold item i; it then covers the blocks of items
 * [i, i + want) that lie in i's chunk (want >= 1; at most about 16 blocks are decompressed
 * at once beyond the first item's).
 * @param[out] p  item i's bytes (borrowed: valid until the next call on r)
 * @param[out] n  items available consecutively from p (>= 1)
 * @return CATERVA_OK, CATERVA_E_RANGE, or the error of reading the chunk file. */
int caterva_bcolz_reader_items(caterva_ctx *ctx, caterva_bcolz_reader *r, int64_t i,
                               int64_t want, const uint8_t **p, int64_t *n);
/** Copy items [start, start + nitems) of column col into dst (capacity cap bytes),
 * decompressing only the blocks that hold them. */
int caterva_bcolz_read(caterva_ctx *ctx, caterva_bcolz *b, int col, int64_t start,
                       int64_t nitems, void *dst, int64_t cap);

/* -- conversion -- */

/** Conversions of b call fn(arg, items converted, items to convert) after each chunk (fn
 * NULL: none); a non-zero return stops the conversion (caterva_progress_fn), which then
 * leaves nothing at its destination. */
void caterva_bcolz_set_progress(caterva_bcolz *b, caterva_progress_fn fn, void *arg);

/** Convert column col into a new Blosc2 array (both metalayers) at p->path (p->store
 * CATERVA_STORE_CONTIGUOUS or _SPARSE; the path must not exist). The shape and dtype come
 * from the column (p->ndim, shape, itemsize, dtype are ignored); chunk shape 0: chunklen
 * rows (fewer when the array is shorter) by the whole of the other axes; block shape 0:
 * automatic. Each member of __attrs__ becomes a user attribute of that name (msgpack of the
 * JSON value). dim_names (NULL: none) are n_dim_names dimension names stored in the array
 * (caterva_array_set_dim_names); n_dim_names must equal the column's ndim (CATERVA_E_INVALID).
 * The array is written under a temporary name and renamed into place when complete. With out
 * NULL the array is closed; else *out is it, opened for reading. */
int caterva_bcolz_convert(caterva_ctx *ctx, caterva_bcolz *b, int col,
                          const caterva_array_params *p, const char *const *dim_names,
                          int n_dim_names, caterva_array **out);
/** Convert every column of a ctable into directory dir (which must not exist), one array
 * <name>.b2nd per column (p as for caterva_bcolz_convert, path ignored), plus the manifest
 * ctable.json: {"format":"bcolz-ctable","names":[...],"attrs":{...}}, names in the ctable's
 * order (JSON strings), attrs the root's __attrs__; dim_names as for caterva_bcolz_convert,
 * for every column (each must have n_dim_names dimensions). Column k's array is always
 * dir/<names[k]>.b2nd (a name is one path component: no '/', not "." or ".."). Written under
 * a temporary name and renamed into place when complete. */
int caterva_bcolz_convert_ctable(caterva_ctx *ctx, caterva_bcolz *b, const char *dir,
                                 const caterva_array_params *p, const char *const *dim_names,
                                 int n_dim_names);

/* -- converted ctables (a directory written by caterva_bcolz_convert_ctable) -- */

/** Is dir a directory holding a file ctable.json? (Reads directory entries only.) */
int caterva_bcolz_converted(const char *dir);
/** The column names of the converted ctable in dir, in the ctable's order, from its
 * ctable.json (checked: "format" is "bcolz-ctable", 1 to 32767 distinct names, each one path
 * component). The arrays are dir/<name>.b2nd.
 * @param[out] names  malloc'ed array of n malloc'ed strings (caterva_bcolz_names_free);
 *                    NULL on failure
 * @return CATERVA_OK; CATERVA_E_NOTFOUND, CATERVA_E_CORRUPT (message naming the file),
 *         CATERVA_E_NOMEM, CATERVA_E_IO. */
int caterva_bcolz_converted_names(caterva_ctx *ctx, const char *dir, char ***names, int *n);
/** Free what caterva_bcolz_converted_names returned (NULL accepted). */
void caterva_bcolz_names_free(char **names, int n);
/** @} */

#endif /* CATERVA_BCOLZ_H */

/*
 * caterva.h -- compressed N-dimensional arrays on the Blosc2 chunk and frame formats.
 *
 * This is the public interface of libcaterva. It is layered; each layer uses only the
 * ones above it in this file:
 *
 *   errors and contexts   caterva_strerror, caterva_ctx_*
 *   chunks                caterva_chunk_*      one Blosc2 chunk: a compressed buffer of blocks
 *   super-chunks, frames  caterva_schunk_*     (caterva_frame.h) ordered chunks in a frame
 *   arrays                caterva_array_*      (caterva_array.h) N-d arrays over a super-chunk
 *
 * The converters (NumPy .npy, NetCDF, PNG, bcolz directories) are a layer above, in
 * libcaterva-io (caterva_io.h), so that a program using arrays links none of their libraries.
 *
 * Conventions, for every function of the library:
 *  - Functions that can fail return an int (or int32_t/int64_t) that is negative on failure,
 *    one of the CATERVA_E_* codes below. Where a context is passed, a message describing the
 *    failure is left in it (caterva_ctx_errmsg). Library codes never alias errno values.
 *  - Output pointers are set to NULL (or 0) on entry and written only on success.
 *  - Objects returned through an output pointer belong to the caller, who releases them with
 *    the matching *_free function. Every *_free accepts NULL.
 *  - Pointers passed in are borrowed for the duration of the call only, unless stated.
 *  - A context, and every object created with it, must be used by one thread at a time.
 *    Distinct contexts may be used concurrently.
 *  - Input bytes (chunks, frames, files) are untrusted: they are parsed with bounds checks
 *    and overflow-checked arithmetic; malformed input yields CATERVA_E_CORRUPT, never a read
 *    or write out of bounds.
 */
#ifndef CATERVA_H
#define CATERVA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup errors Error codes
 *  @{ */
#define CATERVA_OK              0
#define CATERVA_E_INVALID     (-1)  /**< an argument is invalid */
#define CATERVA_E_NOMEM       (-2)  /**< out of memory */
#define CATERVA_E_CORRUPT     (-3)  /**< input bytes are malformed (chunk, frame, metalayer) */
#define CATERVA_E_UNSUPPORTED (-4)  /**< well-formed but uses a codec, filter or version we lack */
#define CATERVA_E_IO          (-5)  /**< a system call on a file failed */
#define CATERVA_E_NOSPACE     (-6)  /**< the output buffer is too small */
#define CATERVA_E_RANGE       (-7)  /**< an index or coordinate is out of range */
#define CATERVA_E_CODEC       (-8)  /**< a codec library reported an error while compressing */
#define CATERVA_E_NOTFOUND    (-9)  /**< no such file, metalayer or attribute */
#define CATERVA_E_EXISTS     (-10)  /**< the file or metalayer already exists */
#define CATERVA_E_OVERFLOW   (-11)  /**< a size computation overflows */
#define CATERVA_E_THREAD     (-12)  /**< a thread could not be started */
#define CATERVA_E_READONLY   (-13)  /**< the object was opened read-only */
#define CATERVA_E_BUSY       (-14)  /**< another writer holds the array's lock */
#define CATERVA_E_INTERRUPT  (-15)  /**< the caller's interrupt function asked to stop */
#define CATERVA_E_REMOTE     (-16)  /**< a server refused or failed a request (after retries) */
#define CATERVA_E_CHANGED    (-17)  /**< a remote object changed since it was opened: open it
                                         again (nothing of the new version was used) */
#define CATERVA_E_LAST_      (-18)

/** Static English text for an error code; never NULL. */
const char *caterva_strerror(int rc);
/** @} */

/** @defgroup ctx Contexts
 * A context owns a thread pool, scratch memory and the message of the last error.
 * @{ */
typedef struct caterva_ctx caterva_ctx;

/** Create a context.
 * @param[in]  nthreads  threads used to (de)compress blocks in parallel; 1 runs everything in
 *                       the calling thread; values < 1 mean 1.
 * @param[out] out       the new context, owned by the caller (caterva_ctx_free).
 * @return CATERVA_OK, CATERVA_E_NOMEM or CATERVA_E_THREAD. */
int caterva_ctx_new(int nthreads, caterva_ctx **out);

/** Release a context; stops its threads. NULL is accepted. Objects created with the context
 * must be freed first. */
void caterva_ctx_free(caterva_ctx *ctx);

/** Number of threads of the context (>= 1). */
int caterva_ctx_nthreads(const caterva_ctx *ctx);

/** Text of the last error recorded in ctx ("" if none). Owned by ctx; valid until the next
 * call that uses ctx. */
const char *caterva_ctx_errmsg(const caterva_ctx *ctx);

/** Number of blocks decompressed through this context so far (for measuring pushdown). */
int64_t caterva_ctx_blocks_decompressed(const caterva_ctx *ctx);
/** Set the function long operations (remote transfers) call now and then: a non-zero return
 * stops them with CATERVA_E_INTERRUPT. fn may be NULL (never interrupted); arg is borrowed
 * and must stay valid while the context is used. */
void caterva_ctx_set_interrupt(caterva_ctx *ctx, int (*fn)(void *arg), void *arg);
/** @} */

/** @defgroup testhooks Fault injection (tests only)
 * Every call by which the library changes a file (write, pwrite, fsync, ftruncate, rename)
 * goes through one layer that can be told to fail. Process-wide; not thread-safe to arm
 * while other threads write files. The environment variable CATERVA_FAIL_IO="n:ENOSPC" (or
 * "n:EIO", with ":sticky" appended for a disk that stays full) arms it at the first call.
 * @{ */
/** Fail the n-th counted call from now with errno err (ENOSPC, EIO); with sticky, every
 * later call too. n = 0 disarms. */
void caterva_test_fail_io(int64_t n, int err, int sticky);
/** Counted calls since the hook was last armed (to size a sweep over n). */
int64_t caterva_test_io_calls(void);
/** The bytes of an open transaction's last chunks that a contiguous file holds in memory
 * before writing them (default 8 MiB; 0: each chunk written at once, as files bigger than
 * that are), so that tests reach both paths; n < 0 restores the default. Process-wide; set it
 * while no file is written. The environment variable CATERVA_HOLD_MAX (bytes) sets it for a
 * process a test drives through SQL (read once, at the first chunk held). */
void caterva_test_hold_max(int64_t n);
/** @} */

/** @defgroup chunk Blosc2 chunks
 * A chunk holds nbytes uncompressed bytes cut into blocks of blocksize bytes (the last one may
 * be shorter). Each block is filtered (up to 6 filters) and split into streams that are
 * compressed independently, so one block can be decoded without the others.
 * @{ */

/** Codecs, by their Blosc2 compcode (the value stored in frame headers). */
#define CATERVA_BLOSCLZ 0
#define CATERVA_LZ4     1
#define CATERVA_LZ4HC   2
#define CATERVA_ZLIB    4
#define CATERVA_ZSTD    5
/** Snappy (Blosc1 compcode 3): only in Blosc 1.x chunks, decoded when libcaterva was built with
 * libsnappy, never written. */
#define CATERVA_SNAPPY  3

/** Filters, by their Blosc2 id. */
#define CATERVA_NOFILTER    0
#define CATERVA_SHUFFLE     1
#define CATERVA_BITSHUFFLE  2
#define CATERVA_DELTA       3
#define CATERVA_TRUNC_PREC  4
#define CATERVA_BYTEDELTA  35

#define CATERVA_MAX_FILTERS 6

/** Split modes (Blosc2 values). AUTO and FORWARD_COMPAT follow the reference rule: split a block
 * into typesize streams iff the codec is blosclz, lz4 or zstd at clevel <= 5, SHUFFLE is among
 * the filters, typesize <= 16 and blocksize/typesize >= 32. */
#define CATERVA_SPLIT_ALWAYS         1
#define CATERVA_SPLIT_NEVER          2
#define CATERVA_SPLIT_AUTO           3
#define CATERVA_SPLIT_FORWARD_COMPAT 4

/** Special chunk kinds (chunk header blosc2_flags bits 4-6, frame index entries). */
#define CATERVA_SPECIAL_NONE    0
#define CATERVA_SPECIAL_ZERO    1
#define CATERVA_SPECIAL_NAN     2
#define CATERVA_SPECIAL_VALUE   3  /**< every item equals one repeated value */
#define CATERVA_SPECIAL_UNINIT  4

#define CATERVA_CHUNK_HEADER_SIZE 32
/** compress never writes more than nbytes + CATERVA_CHUNK_MAX_OVERHEAD bytes. */
#define CATERVA_CHUNK_MAX_OVERHEAD 32
/** Largest nbytes a chunk can hold (the header stores int32 sizes). */
#define CATERVA_CHUNK_MAX_NBYTES (INT32_MAX - CATERVA_CHUNK_MAX_OVERHEAD)

/** Compression parameters. Initialise with caterva_cparams_init, then change fields. */
typedef struct caterva_cparams {
  int codec;                                /**< CATERVA_BLOSCLZ ... CATERVA_ZSTD */
  int clevel;                               /**< 0 (stored uncompressed) to 9 */
  int typesize;                             /**< item size in bytes, 1..255 */
  int32_t blocksize;                        /**< bytes per block; 0 chooses automatically */
  int splitmode;                            /**< CATERVA_SPLIT_* */
  uint8_t filters[CATERVA_MAX_FILTERS];     /**< pipeline, applied slot 0 to 5 */
  uint8_t filters_meta[CATERVA_MAX_FILTERS];/**< one parameter byte per slot */
} caterva_cparams;

/** Defaults of new arrays: Zstd clevel 5, SHUFFLE in slot 5, typesize 8, automatic blocksize,
 * FORWARD_COMPAT split. */
void caterva_cparams_init(caterva_cparams *cp);

/** What a chunk header says, after validation against the buffer it came from. */
typedef struct caterva_chunk_info {
  int version;          /**< chunk format version (2..5; 2 = Blosc 1.x) */
  int typesize;         /**< header typesize (for repeated-value chunks: the value's size) */
  int32_t nbytes;       /**< uncompressed size */
  int32_t blocksize;    /**< uncompressed size of each block but the last */
  int32_t cbytes;       /**< compressed size including the header */
  int32_t nblocks;      /**< number of blocks */
  int codec;            /**< compcode of the codec (CATERVA_BLOSCLZ...), -1 if not built in */
  int special;          /**< CATERVA_SPECIAL_* */
  int memcpyed;         /**< data stored raw after the header */
  int split;            /**< blocks are split into typesize streams */
  int has_dict;         /**< a zstd/lz4 dictionary follows the block-start table */
  uint8_t filters[CATERVA_MAX_FILTERS];
  uint8_t filters_meta[CATERVA_MAX_FILTERS];
  int header_size;      /**< 32, or 16 for a Blosc 1.x chunk (filters then come from its flags) */
} caterva_chunk_info;

/** Validate a chunk header and describe it.
 * @param[in]  chunk  the chunk bytes (untrusted), at least its header
 * @param[in]  len    bytes available at chunk; must be >= the header's cbytes
 * @param[out] info   filled on success
 * @return CATERVA_OK, CATERVA_E_CORRUPT (with no context to hold a message, see the code) or
 *         CATERVA_E_UNSUPPORTED. */
int caterva_chunk_info_get(const void *chunk, size_t len, caterva_chunk_info *info);
/** The same, with the reason of a failure (which field is malformed, which codec this build
 * lacks) left in ctx. */
int caterva_chunk_info_ctx(caterva_ctx *ctx, const void *chunk, size_t len,
                           caterva_chunk_info *info);

/** Compress nbytes bytes of src into a chunk at dst.
 * @param[in]  ctx     context (threads, scratch, error message)
 * @param[in]  cp      compression parameters
 * @param[in]  src     nbytes bytes; may be NULL when nbytes is 0
 * @param[in]  nbytes  0 .. CATERVA_CHUNK_MAX_NBYTES
 * @param[out] dst     receives the chunk
 * @param[in]  dstcap  capacity of dst; nbytes + CATERVA_CHUNK_MAX_OVERHEAD always suffices
 * @return the chunk size (cbytes, > 0) or a negative error code. Output is identical for any
 *         number of threads. */
int32_t caterva_chunk_compress(caterva_ctx *ctx, const caterva_cparams *cp, const void *src,
                               int32_t nbytes, void *dst, int32_t dstcap);

/** Write a header-only special chunk (zeros, NaN, uninitialised) or a repeated-value chunk.
 * @param[in]  kind       CATERVA_SPECIAL_ZERO, _NAN (typesize 4 or 8), _VALUE or _UNINIT
 * @param[in]  nbytes     logical uncompressed size, a multiple of typesize
 * @param[in]  typesize   1..255 (the repeated value's size for _VALUE)
 * @param[in]  blocksize  recorded in the header; 0 means nbytes
 * @param[in]  value      typesize bytes for _VALUE, otherwise ignored (may be NULL)
 * @param[out] dst        receives 32 bytes (32 + typesize for _VALUE)
 * @param[in]  dstcap     capacity of dst
 * @return cbytes or a negative error code. */
int32_t caterva_chunk_make_special(int kind, int32_t nbytes, int typesize, int32_t blocksize,
                                   const void *value, void *dst, int32_t dstcap);

/** Decompress a whole chunk.
 * @param[in]  chunk   chunk bytes (untrusted); len bytes are readable
 * @param[out] dst     receives nbytes bytes
 * @param[in]  dstcap  capacity of dst
 * @return nbytes or a negative error code (CATERVA_E_NOSPACE if dstcap < nbytes). */
int32_t caterva_chunk_decompress(caterva_ctx *ctx, const void *chunk, size_t len, void *dst,
                                 int32_t dstcap);

/** Decompress a chosen set of blocks of a chunk, leaving the others compressed.
 * Block blocks[i] is written at dst + i * blocksize (its own size for a short last block).
 * Blocks that depend on block 0 (DELTA) are handled: block 0 is decoded as a reference when
 * needed, without being written unless it is listed.
 * @param[in]  blocks   nblocks distinct block numbers, each in [0, info.nblocks)
 * @param[out] dst      receives the blocks
 * @param[in]  dstcap   capacity of dst, at least nblocks * blocksize
 * @return the number of bytes written or a negative error code. */
int64_t caterva_chunk_decompress_blocks(caterva_ctx *ctx, const void *chunk, size_t len,
                                        const int32_t *blocks, int32_t nblocks, void *dst,
                                        size_t dstcap);

/** Copy items [start, start + nitems) of the chunk's uncompressed content into dst,
 * decompressing only the blocks that hold them.
 * @return nitems * typesize or a negative error code. */
int32_t caterva_chunk_getitems(caterva_ctx *ctx, const void *chunk, size_t len, int32_t start,
                               int32_t nitems, void *dst, int32_t dstcap);
/** @} */

/** Progress of an import (NetCDF, .npy): called after each piece written (a hyperslab, a
 * piece of whole chunks) with the items written so far and the total. A non-zero return stops
 * the import, which then fails with that value when it is a negative CATERVA_E_* code, else
 * with CATERVA_E_INVALID. */
typedef int (*caterva_progress_fn)(void *arg, int64_t done, int64_t total);

#include "caterva_storage.h"
#include "caterva_frame.h"
#include "caterva_array.h"
#include "caterva_reduce.h"

#ifdef __cplusplus
}
#endif

#endif /* CATERVA_H */

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
 * from the same formulas (table SQLCASES), and the files then go through every check above,
 * with these differences, all following from how the SQL writer legitimately writes:
 *  - the vlmetalayers are `_FillValue` (msgpack float64 or int) and, with dims=,
 *    `_ARRAY_DIMENSIONS`;
 *  - fill-valued chunks may be special index entries (zero, NaN) or repeated-value chunks when
 *    every item of the chunk inside the shape has that value;
 *  - contiguous files may hold DEAD BYTES in the chunk section: a transaction never overwrites
 *    committed bytes (replaced chunks and the old index and trailer stay where they were) and
 *    the extension compacts at commit only once dead bytes reach a quarter of the file. The
 *    chunk check then requires the stored chunks to be disjoint and inside the section instead
 *    of tiling it, and reports the dead bytes (manifest "dead_bytes"); other readers must cope
 *    with such files, which is what these cases are for;
 *  - the directory of a sparse frame also holds the `.b2lock` sidecar (c-blosc2 puts it there
 *    too); the sidecar's generation counter (bytes 8-15, little-endian) must equal the number
 *    of write transactions run.
 *
 * bcolz datasets converted by caterva_import are added when tests/tools/mkbcolz is built (see
 * write_bcolz_cases).
 *
 * Before writing, the output directory's *.b2nd and *.b2frame entries, raw/ and manifest.json
 * are removed (nothing else: the directory may be one the user named).
 */
#define _XOPEN_SOURCE 700
#include "caterva.h"
#include "cat_internal.h"   /* cat_codec_available: snappy is optional */
#include "minijson.h"
#include "sha256.h"
#include "tap.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <math.h>
#include <msgpack.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAXD 8

/* ---- dtypes --------------------------------------------------------------------------- */

enum { K_INT, K_UINT, K_FLOAT, K_BOOL };

typedef struct dtype_desc {
  const char *name, *numpy;
  int itemsize, kind;
} dtype_desc;

static const dtype_desc DTYPES[] = {
    {"int8", "|i1", 1, K_INT},     {"int16", "<i2", 2, K_INT},    {"int32", "<i4", 4, K_INT},
    {"int64", "<i8", 8, K_INT},    {"uint8", "|u1", 1, K_UINT},   {"uint16", "<u2", 2, K_UINT},
    {"uint32", "<u4", 4, K_UINT},  {"uint64", "<u8", 8, K_UINT},  {"float32", "<f4", 4, K_FLOAT},
    {"float64", "<f8", 8, K_FLOAT}, {"bool", "|b1", 1, K_BOOL},
};

static const dtype_desc *find_dtype(const char *name) {
  for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
    if (strcmp(DTYPES[i].name, name) == 0) return &DTYPES[i];
  return NULL;
}

/* ---- the cases ------------------------------------------------------------------------ */

enum { V_RAMP, V_STEPS, V_SMOOTH, V_HASH, V_ZERO, V_SPARSE, V_CONST, V_NAN, V_SQL };
enum { W_DIRECT, W_MEMSAVE, W_FULL, W_NANFILL, W_SQL };
#define A_ATTRS 1
#define A_DIMNAMES 2

typedef struct icase {
  const char *name;
  int sparse;
  const char *dtype;
  int ndim;
  int64_t shape[MAXD];
  int32_t chunks[MAXD], blocks[MAXD];
  int codec, clevel;
  uint8_t filters[6];
  int fmeta[6];
  int split;
  int vkind;
  double a, b;
  int write, attrs, nthreads, optional;
  const char *note;
} icase;

#define CONT 0
#define SPARSE 1
#define BLZ CATERVA_BLOSCLZ
#define LZ4 CATERVA_LZ4
#define LZ4HC CATERVA_LZ4HC
#define ZLIB CATERVA_ZLIB
#define ZSTD CATERVA_ZSTD
#define F_NONE {0, 0, 0, 0, 0, 0}
#define F_SHUF {0, 0, 0, 0, 0, 1}
#define F_BITSHUF {0, 0, 0, 0, 0, 2}
#define F_DELTA {0, 0, 0, 0, 3, 1}
#define F_TRUNC {0, 0, 0, 0, 4, 1}
#define F_TRUNC_BIT {0, 0, 0, 0, 4, 2}
#define F_BYTEDELTA {0, 0, 0, 0, 1, 35}
#define M0 {0, 0, 0, 0, 0, 0}
#define FC CATERVA_SPLIT_FORWARD_COMPAT

static const icase CASES[] = {
    {"w01_i8_1d_ramp_blosclz", CONT, "int8", 1, {1000}, {300}, {64}, BLZ, 5, F_SHUF, M0, FC,
     V_RAMP, 1, 0, W_DIRECT, 0, 1, 0, "typesize 1; chunks and blocks do not divide the shape"},
    {"w02_u8_1d_hash_lz4_nofilter", CONT, "uint8", 1, {777}, {256}, {100}, LZ4, 5, F_NONE, M0,
     FC, V_HASH, 3, 0, W_DIRECT, 0, 1, 0, "incompressible bytes: memcpyed chunks"},
    {"w03_i16_2d_ramp_lz4hc9", CONT, "int16", 2, {37, 53}, {16, 20}, {5, 7}, LZ4HC, 9, F_SHUF,
     M0, FC, V_RAMP, 3, -100, W_DIRECT, 0, 1, 0, ""},
    {"w04_u16_2d_steps_zlib_bitshuffle_sparse", SPARSE, "uint16", 2, {100, 33}, {32, 32}, {8, 8},
     ZLIB, 5, F_BITSHUF, M0, FC, V_STEPS, 7, 0, W_DIRECT, 0, 1, 0, ""},
    {"w05_i32_2d_smooth_zstd1", CONT, "int32", 2, {57, 61}, {20, 25}, {7, 9}, ZSTD, 1, F_SHUF, M0,
     FC, V_SMOOTH, 1000, 0, W_DIRECT, 0, 1, 0, ""},
    {"w06_u32_3d_ramp_delta_blosclz9", CONT, "uint32", 3, {23, 19, 17}, {10, 10, 10}, {4, 5, 3},
     BLZ, 9, F_DELTA, M0, FC, V_RAMP, 5, 1, W_DIRECT, 0, 1, 0,
     "DELTA with padded edge chunks: the reference b2nd_to_cbuffer mis-reads partial chunks of "
     "DELTA arrays (fact sheet 1.7); whole-chunk decompression gives the raw bytes"},
    {"w07_i64_3d_hash_zstd5_bitshuffle_sparse", SPARSE, "int64", 3, {13, 14, 15}, {5, 6, 7},
     {3, 3, 3}, ZSTD, 5, F_BITSHUF, M0, FC, V_HASH, 17, 0, W_DIRECT, 0, 1, 0, ""},
    {"w08_u64_3d_steps_lz4_1_nofilter", CONT, "uint64", 3, {30, 20, 10}, {16, 8, 10}, {4, 8, 5},
     LZ4, 1, F_NONE, M0, FC, V_STEPS, 13, 0, W_DIRECT, 0, 1, 0, ""},
    {"w09_f32_3d_smooth_blosclz", CONT, "float32", 3, {40, 35, 30}, {16, 16, 16}, {8, 8, 8}, BLZ,
     5, F_SHUF, M0, FC, V_SMOOTH, 10, 0, W_DIRECT, 0, 1, 0, ""},
    {"w10_f64_3d_smooth_zstd3_sparse", SPARSE, "float64", 3, {50, 40, 30}, {25, 20, 16},
     {5, 10, 8}, ZSTD, 3, F_SHUF, M0, FC, V_SMOOTH, 100, 3, W_DIRECT, 0, 1, 0, ""},
    {"w11_f32_4d_smooth_zlib9_truncprec", CONT, "float32", 4, {9, 10, 11, 12}, {4, 5, 6, 7},
     {2, 3, 3, 4}, ZLIB, 9, F_TRUNC, {0, 0, 0, 0, 10, 0}, FC, V_SMOOTH, 10, 0, W_DIRECT, 0, 1, 0,
     "lossy: raw holds the formula values after trunc_prec (keep 10 mantissa bits)"},
    {"w12_f64_4d_smooth_blosclz_truncprec_bitshuffle_sparse", SPARSE, "float64", 4,
     {7, 8, 9, 10}, {4, 4, 4, 4}, {2, 2, 3, 2}, BLZ, 5, F_TRUNC_BIT, {0, 0, 0, 0, -20, 0}, FC,
     V_SMOOTH, 1, 0, W_DIRECT, 0, 1, 0,
     "lossy: raw holds the formula values after trunc_prec (meta -20: zero the 20 lowest "
     "mantissa bits)"},
    {"w13_f32_2d_bytedelta_zstd", CONT, "float32", 2, {100, 120}, {40, 50}, {10, 25}, ZSTD, 5,
     F_BYTEDELTA, {0, 0, 0, 0, 0, 4}, FC, V_SMOOTH, 10, 0, W_DIRECT, 0, 1, 1,
     "OPTIONAL feature: bytedelta filter (id 35, meta = typesize) after shuffle"},
    {"w14_i64_2d_bytedelta_lz4_sparse", SPARSE, "int64", 2, {60, 70}, {32, 32}, {16, 16}, LZ4, 5,
     F_BYTEDELTA, {0, 0, 0, 0, 0, 8}, FC, V_RAMP, -3, 5, W_DIRECT, 0, 1, 1,
     "OPTIONAL feature: bytedelta filter (id 35, meta = typesize) after shuffle"},
    {"w15_i16_5d_ramp_zstd5", CONT, "int16", 5, {5, 6, 4, 3, 7}, {3, 4, 2, 2, 4},
     {2, 2, 1, 2, 3}, ZSTD, 5, F_SHUF, M0, FC, V_RAMP, 1, 0, W_DIRECT, 0, 1, 0, ""},
    {"w16_u8_6d_steps_blosclz_sparse", SPARSE, "uint8", 6, {4, 3, 5, 2, 3, 4},
     {2, 2, 3, 2, 2, 3}, {1, 2, 2, 1, 2, 2}, BLZ, 5, F_SHUF, M0, FC, V_STEPS, 3, 0, W_DIRECT, 0,
     1, 0, ""},
    {"w17_f32_7d_smooth_lz4hc5", CONT, "float32", 7, {3, 4, 2, 3, 2, 3, 4}, {2, 3, 2, 2, 2, 2, 3},
     {1, 2, 1, 2, 1, 2, 2}, LZ4HC, 5, F_SHUF, M0, FC, V_SMOOTH, 5, 0, W_DIRECT, 0, 1, 0, ""},
    {"w18_i16_8d_ramp_zstd3", CONT, "int16", 8, {3, 4, 2, 5, 3, 2, 4, 3},
     {2, 2, 2, 2, 2, 2, 2, 2}, {1, 2, 1, 2, 1, 2, 1, 2}, ZSTD, 3, F_SHUF, M0, FC, V_RAMP, 1, 0,
     W_DIRECT, 0, 1, 0, ""},
    {"w19_f64_8d_smooth_zlib1_sparse", SPARSE, "float64", 8, {2, 3, 2, 3, 2, 3, 2, 3},
     {2, 2, 2, 2, 2, 2, 2, 2}, {1, 1, 2, 1, 2, 1, 2, 2}, ZLIB, 1, F_SHUF, M0, FC, V_SMOOTH, 1, 0,
     W_DIRECT, 0, 1, 0, ""},
    {"w20_f64_2d_zeros", CONT, "float64", 2, {100, 100}, {30, 30}, {10, 10}, BLZ, 5, F_SHUF, M0,
     FC, V_ZERO, 0, 0, W_DIRECT, 0, 1, 0, "all chunks are special-zero index entries"},
    {"w21_i32_2d_zeros_zstd_sparse", SPARSE, "int32", 2, {50, 40}, {20, 20}, {10, 10}, ZSTD, 5,
     F_SHUF, M0, FC, V_ZERO, 0, 0, W_DIRECT, 0, 1, 0,
     "all chunks are special-zero index entries: no chunk files"},
    {"w22_i32_2d_attrs_zstd", CONT, "int32", 2, {64, 48}, {32, 16}, {8, 8}, ZSTD, 5, F_SHUF, M0,
     FC, V_RAMP, 1, 0, W_DIRECT, A_ATTRS, 1, 0, "has vlmetalayer 'attrs' (msgpack map)"},
    {"w23_f32_3d_dimnames_attrs_sparse", SPARSE, "float32", 3, {10, 20, 30}, {5, 8, 16},
     {5, 4, 8}, ZSTD, 5, F_SHUF, M0, FC, V_SMOOTH, 20, -5, W_DIRECT, A_ATTRS | A_DIMNAMES, 1, 0,
     "has vlmetalayers 'attrs' (msgpack map) and '_ARRAY_DIMENSIONS' (msgpack array of str)"},
    {"w24_f32_2d_empty_dim", CONT, "float32", 2, {0, 10}, {4, 5}, {2, 5}, BLZ, 5, F_SHUF, M0, FC,
     V_ZERO, 0, 0, W_DIRECT, 0, 1, 0, "zero-length first dimension: no chunks, no index"},
    {"w25_u16_3d_size1_dim_lz4", CONT, "uint16", 3, {1, 50, 37}, {1, 16, 16}, {1, 8, 8}, LZ4, 5,
     F_SHUF, M0, FC, V_RAMP, 7, 0, W_DIRECT, 0, 1, 0, "size-1 first dimension"},
    {"w26_i32_2d_clevel0_memcpy", CONT, "int32", 2, {50, 40}, {20, 20}, {10, 10}, BLZ, 0, F_SHUF,
     M0, FC, V_RAMP, 7, 0, W_DIRECT, 0, 1, 0, "clevel 0: memcpyed chunks"},
    {"w27_f64_1d_const_lz4", CONT, "float64", 1, {5000}, {1000}, {250}, LZ4, 5, F_SHUF, M0, FC,
     V_CONST, 1.5, 0, W_DIRECT, 0, 1, 0, "every byte stream is a run (csize 0 / run tokens)"},
    {"w28_f32_3d_full_repeatval", CONT, "float32", 3, {10, 11, 12}, {5, 5, 5}, {5, 5, 5}, BLZ, 5,
     F_SHUF, M0, FC, V_CONST, 3.25, 0, W_FULL, 0, 1, 0,
     "written by caterva_array_create(CATERVA_FILL_VALUE): repeated-value chunks"},
    {"w29_f64_2d_nans", CONT, "float64", 2, {30, 40}, {16, 16}, {8, 8}, BLZ, 5, F_SHUF, M0, FC,
     V_NAN, 0, 0, W_NANFILL, 0, 1, 0,
     "written by caterva_array_create(CATERVA_FILL_NAN): special-NaN index entries"},
    {"w30_i32_1d_sparsevals_blosclz", CONT, "int32", 1, {20000}, {1000}, {250}, BLZ, 5, F_SHUF,
     M0, FC, V_SPARSE, 2500, 0, W_DIRECT, 0, 1, 0,
     "mostly zeros: every other chunk is a special-zero index entry"},
    {"w31_i32_2d_split_always_zstd9", CONT, "int32", 2, {80, 90}, {40, 40}, {20, 20}, ZSTD, 9,
     F_SHUF, M0, CATERVA_SPLIT_ALWAYS, V_SMOOTH, 500, 0, W_DIRECT, 0, 1, 0, ""},
    {"w32_i64_2d_split_never_blosclz_sparse", SPARSE, "int64", 2, {80, 90}, {40, 40}, {20, 20},
     BLZ, 5, F_SHUF, M0, CATERVA_SPLIT_NEVER, V_SMOOTH, 500, 0, W_DIRECT, 0, 1, 0, ""},
    {"w33_f32_2d_saved_from_memory_lz4hc9_bitshuffle", CONT, "float32", 2, {300, 200},
     {100, 64}, {25, 32}, LZ4HC, 9, F_BITSHUF, M0, FC, V_SMOOTH, 3, 1, W_MEMSAVE, 0, 1, 0,
     "built in memory then caterva_array_save()"},
    {"w34_bool_2d_hash_zstd", CONT, "bool", 2, {123, 77}, {50, 40}, {10, 20}, ZSTD, 5, F_SHUF, M0,
     FC, V_HASH, 5, 0, W_DIRECT, 0, 1, 0, ""},
    {"w35_bool_3d_steps_blosclz_bitshuffle_sparse", SPARSE, "bool", 3, {20, 21, 22}, {8, 8, 8},
     {4, 4, 4}, BLZ, 5, F_BITSHUF, M0, FC, V_STEPS, 5, 0, W_MEMSAVE, 0, 1, 0,
     "built in memory then caterva_array_save() as a sparse frame"},
    {"w36_u64_1d_ramp_zstd9_delta_even", CONT, "uint64", 1, {4096}, {1024}, {256}, ZSTD, 9,
     F_DELTA, M0, FC, V_RAMP, 3, 1000, W_DIRECT, 0, 1, 0,
     "DELTA with shape, chunks and blocks dividing evenly (no partial chunks)"},
    {"w37_i8_3d_steps_zlib1_delta_sparse", SPARSE, "int8", 3, {21, 22, 23}, {10, 10, 10},
     {5, 5, 5}, ZLIB, 1, F_DELTA, M0, FC, V_STEPS, 3, 0, W_DIRECT, 0, 1, 0,
     "DELTA with partial edge chunks (see w06's note)"},
    {"w38_u32_2d_ramp_lz4hc5_delta", CONT, "uint32", 2, {70, 30}, {32, 16}, {8, 8}, LZ4HC, 5,
     F_DELTA, M0, FC, V_RAMP, 11, 0, W_DIRECT, 0, 1, 0,
     "DELTA with partial edge chunks (see w06's note)"},
    {"w39_f64_3d_smooth_blosclz_nthreads2", CONT, "float64", 3, {60, 50, 40}, {25, 25, 20},
     {10, 5, 10}, BLZ, 5, F_SHUF, M0, FC, V_SMOOTH, 50, 0, W_DIRECT, 0, 2, 0,
     "written with 2 threads (our chunk bytes do not depend on the thread count)"},
    {"w40_f32_1d_smooth_lz4_split", CONT, "float32", 1, {100000}, {30000}, {4096}, LZ4, 5, F_SHUF,
     M0, FC, V_SMOOTH, 1, 0, W_DIRECT, 0, 1, 0, "large split blocks; short edge chunk"},
    {"w41_f64_0d_scalar", CONT, "float64", 0, {0}, {0}, {0}, ZSTD, 5, F_SHUF, M0, FC, V_CONST,
     42.5, 0, W_DIRECT, 0, 1, 1,
     "OPTIONAL: 0-d (scalar) array, one chunk of itemsize bytes (the caterva metalayer has "
     "ndim 0; the caterva C library may not accept 0-d arrays)"},
    /* Written through SQL (see SQLCASES): the shape here is the final one, after growth. */
    {"w42_sql_f32_2d_lz4_nanfill_growth", CONT, "float32", 2, {64, 450}, {5, 150}, {5, 75}, LZ4, 5,
     F_SHUF, M0, FC, V_SQL, 0, 0, W_SQL, A_DIMNAMES, 1, 0,
     "written through SQL, autocommit statements; fill NaN: a deleted whole chunk and grown "
     "rows are NaN (SQL NULL)"},
    {"w43_sql_i32_3d_zstd3_bitshuffle_sparse_txn", SPARSE, "int32", 3, {20, 14, 15}, {5, 7, 8},
     {2, 4, 4}, ZSTD, 3, F_BITSHUF, M0, FC, V_SQL, 0, 0, W_SQL, A_DIMNAMES, 1, 0,
     "written through SQL in one transaction (with a savepoint rolled back and a failed "
     "statement); fill -7"},
    {"w44_sql_f64_3d_blosclz9_zerofill_growth", CONT, "float64", 3, {16, 11, 10}, {4, 6, 5},
     {2, 3, 5}, BLZ, 9, F_SHUF, M0, FC, V_SQL, 0, 0, W_SQL, 0, 1, 0,
     "written through SQL, autocommit statements, no dims= (columns d0, d1, d2); fill 0"},
    {"w45_sql_u16_2d_lz4hc9_nofilter_sparse_txn", SPARSE, "uint16", 2, {41, 37}, {10, 16},
     {5, 8}, LZ4HC, 9, F_NONE, M0, FC, V_SQL, 0, 0, W_SQL, A_DIMNAMES, 1, 0,
     "written through SQL in one transaction; fill 0 (the default of integer dtypes)"},
};
#define NCASES ((int)(sizeof CASES / sizeof CASES[0]))

/* ---- the cases written through SQL ------------------------------------------------------
 * Each runs, on a new table over a new path:
 *   CREATE VIRTUAL TABLE t USING caterva('<path>', shape='<shape0>,...', dtype=, chunks=,
 *       blocks=, <opts>[, dims=][, fill=])
 *   INSERT INTO t(...) WITH RECURSIVE ... every cell of the first shape: v = F(c)
 *   UPDATE t SET value = value*umul + uadd WHERE c0 BETWEEN upd_lo AND upd_hi
 *   UPDATE t SET value = 'not a number' WHERE c0 = 0            (must fail, changes nothing)
 *   DELETE FROM t WHERE c0 BETWEEN .. AND c1 BETWEEN .. ...       (the box reads the fill)
 *   INSERT INTO t(...) ... rows grow_lo..grow_hi, v = F(c)         (growth; rows between the
 *                                                                   old extent and grow_lo and
 *                                                                   other new cells: fill)
 * with F(c) = ((sum_k mul[k]*c_k + add) % mod) * scale + off, evaluated by SQLite in int64
 * and, once scale is REAL, in double; here the same way. The slab and the box lie inside the
 * first shape. With grow_first the growth comes right after the first INSERT: a commit that
 * grows a contiguous array has so far left it compacted (a new file renamed over the path), so
 * ending with the growth leaves no dead bytes, and w42 is meant to keep some (the chunks its
 * UPDATE and DELETE replaced, and the old indexes and trailers). With txn, everything after
 * the first INSERT is one BEGIN ... COMMIT that also holds SAVEPOINT s; UPDATE t SET value =
 * value + 1; INSERT of a row past the final extent; ROLLBACK TO s; RELEASE s (no trace may
 * remain). */
typedef struct sqlcase {
  const char *name;          /* the CASES entry (whose shape is the final one) */
  int64_t shape0;            /* the first extent at CREATE */
  const char *opts;          /* further creation options, verbatim */
  const char *dims;          /* dims= ("" for none: columns d0, d1, ...) */
  const char *fill;          /* fill= ("" for the default: NaN for floats, 0 for integers) */
  int64_t mul[3], add, mod;
  double scale, off;
  int64_t upd_lo, upd_hi;
  double umul, uadd;
  int64_t del_lo[3], del_hi[3];
  int64_t grow_lo, grow_hi;  /* grow_hi + 1 is the final extent */
  int txn, grow_first;
} sqlcase;

static const sqlcase SQLCASES[] = {
    {"w42_sql_f32_2d_lz4_nanfill_growth", 50, "codec=lz4, clevel=5", "y,x", "", {7, 3, 0}, 0,
     1000, 0.25, -20, 10, 14, 2, 1, {20, 0, 0}, {24, 19, 0}, 56, 63, 0, 1},
    {"w43_sql_i32_3d_zstd3_bitshuffle_sparse_txn", 12,
     "codec=zstd, clevel=3, filters='bitshuffle', sparse=1", "t,lat,lon", "-7", {1000, 31, 1},
     5, 100003, 1, -50000, 3, 5, 3, -2, {0, 0, 0}, {4, 6, 7}, 15, 19, 1, 0},
    {"w44_sql_f64_3d_blosclz9_zerofill_growth", 10, "codec=blosclz, clevel=9", "", "0",
     {100, 10, 1}, 0, 997, 0.5, 1, 2, 3, -1, 0.5, {4, 0, 0}, {7, 5, 4}, 12, 15, 0, 0},
    {"w45_sql_u16_2d_lz4hc9_nofilter_sparse_txn", 30,
     "codec=lz4hc, clevel=9, filters=none, sparse=1", "row,col", "", {37, 1, 0}, 11, 60000, 1,
     0, 5, 9, 1, 100, {10, 16, 0}, {19, 31, 0}, 30, 40, 1, 0},
};
#define NSQLCASES ((int)(sizeof SQLCASES / sizeof SQLCASES[0]))

static const sqlcase *find_sql(const char *name) {
  for (int i = 0; i < NSQLCASES; i++)
    if (strcmp(SQLCASES[i].name, name) == 0) return &SQLCASES[i];
  return NULL;
}

/* ---- names ---------------------------------------------------------------------------- */

static const char *codec_name(int c) {
  switch (c) {
  case BLZ: return "blosclz";
  case LZ4: return "lz4";
  case LZ4HC: return "lz4hc";
  case ZLIB: return "zlib";
  case ZSTD: return "zstd";
  default: return "?";
  }
}
/* Chunk flags bits 5-7 (format id) of a codec. */
static int codec_format(int c) {
  return c == BLZ ? 0 : c == LZ4 || c == LZ4HC ? 1 : c == ZLIB ? 3 : 4;
}

static const char *filter_name(int f) {
  switch (f) {
  case 0: return "nofilter";
  case 1: return "shuffle";
  case 2: return "bitshuffle";
  case 3: return "delta";
  case 4: return "trunc_prec";
  case 35: return "bytedelta";
  default: return "?";
  }
}
static const char *split_name(int s) {
  switch (s) {
  case 1: return "ALWAYS_SPLIT";
  case 2: return "NEVER_SPLIT";
  case 3: return "AUTO_SPLIT";
  default: return "FORWARD_COMPAT_SPLIT";
  }
}
static int has_filter(const icase *c, int f) {
  for (int k = 0; k < 6; k++)
    if (c->filters[k] == f) return 1;
  return 0;
}

/* ---- geometry ------------------------------------------------------------------------- */

typedef struct geom {
  int ndim, itemsize;
  int64_t nitems, nchunks, chunksize, blocksize;
  int64_t extchunk[MAXD], grid[MAXD];
} geom;

static void geom_init(const icase *c, int itemsize, geom *g) {
  g->ndim = c->ndim;
  g->itemsize = itemsize;
  g->nitems = 1;
  g->nchunks = 1;
  g->chunksize = itemsize;
  g->blocksize = itemsize;
  for (int k = 0; k < c->ndim; k++) {
    g->extchunk[k] = (c->chunks[k] + c->blocks[k] - 1) / c->blocks[k] * c->blocks[k];
    g->grid[k] = (c->shape[k] + c->chunks[k] - 1) / c->chunks[k];
    g->nitems *= c->shape[k];
    g->nchunks *= g->grid[k];
    g->chunksize *= g->extchunk[k];
    g->blocksize *= c->blocks[k];
  }
}

/* Whether every item of chunk n (inside the shape) is zero in raw; with nan, whether every
 * item is a float NaN (itemsize 4 or 8) instead. */
static int chunk_all(const icase *c, const geom *g, const uint8_t *raw, int64_t n, int nan) {
  int64_t cc[MAXD], lo[MAXD], hi[MAXD], idx[MAXD], rest = n, count = 1;
  for (int k = c->ndim - 1; k >= 0; k--) {
    cc[k] = rest % g->grid[k];
    rest /= g->grid[k];
  }
  for (int k = 0; k < c->ndim; k++) {
    lo[k] = cc[k] * c->chunks[k];
    hi[k] = lo[k] + c->chunks[k] < c->shape[k] ? lo[k] + c->chunks[k] : c->shape[k];
    idx[k] = lo[k];
    count *= hi[k] - lo[k];
  }
  for (int64_t t = 0; t < count; t++) {
    int64_t off = 0;
    for (int k = 0; k < c->ndim; k++) off = off * c->shape[k] + idx[k];
    if (nan) {
      const uint8_t *q = raw + off * g->itemsize;
      uint64_t u = 0;
      for (int b = 0; b < g->itemsize; b++) u |= (uint64_t)q[b] << (8 * b);
      if (g->itemsize == 4 ? (u & 0x7F800000u) != 0x7F800000u || (u & 0x7FFFFFu) == 0
          : g->itemsize != 8 || (u & 0x7FF0000000000000u) != 0x7FF0000000000000u ||
                (u & 0xFFFFFFFFFFFFFu) == 0)
        return 0;
    } else {
      for (int b = 0; b < g->itemsize; b++)
        if (raw[off * g->itemsize + b] != 0) return 0;
    }
    for (int k = c->ndim - 1; k >= 0; k--) {
      if (++idx[k] < hi[k]) break;
      idx[k] = lo[k];
    }
  }
  return 1;
}

static int chunk_all_zero(const icase *c, const geom *g, const uint8_t *raw, int64_t n) {
  return chunk_all(c, g, raw, n, 0);
}

/* ---- values --------------------------------------------------------------------------- */

static uint64_t splitmix64(uint64_t x) {
  uint64_t z = x + 0x9E3779B97F4A7C15u;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9u;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBu;
  return z ^ (z >> 31);
}

static void put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Item i (coordinates cc) of case c into p. */
static void gen_item(const icase *c, const dtype_desc *dt, int64_t i, const int64_t *cc,
                     uint8_t *p) {
  int64_t iv = 0;
  double dv = 0;
  uint64_t h = 0;
  int is_float = dt->kind == K_FLOAT;
  switch (c->vkind) {
  case V_RAMP:
    iv = (int64_t)((uint64_t)(int64_t)c->a * (uint64_t)i + (uint64_t)(int64_t)c->b);
    dv = c->a * (double)i + c->b;
    break;
  case V_STEPS:
    iv = i / (int64_t)c->a + (int64_t)c->b;
    dv = (double)iv;
    break;
  case V_SMOOTH: {
    double s = 0.5 * sin((double)i * 1e-4);
    for (int k = 0; k < c->ndim; k++) s += sin((double)cc[k] * 0.1 / (k + 1));
    dv = c->a * s + c->b;
    iv = (int64_t)dv;
    break;
  }
  case V_HASH:
    h = splitmix64((uint64_t)i + (uint64_t)c->a);
    iv = (int64_t)h;
    break;
  case V_ZERO: break;
  case V_SPARSE:
    iv = i % (int64_t)c->a == 0 ? i / (int64_t)c->a + 1 : 0;
    dv = (double)iv;
    break;
  case V_CONST:
    dv = c->a;
    iv = (int64_t)c->a;
    break;
  case V_NAN: dv = NAN; break;
  }
  if (dt->kind == K_BOOL) {
    p[0] = (uint8_t)(iv & 1);
  } else if (!is_float) {
    put_le(p, (uint64_t)iv, dt->itemsize);
  } else if (dt->itemsize == 8) {
    uint64_t u;
    if (c->vkind == V_HASH) dv = (double)(h >> 11) * 0x1p-53;
    if (c->vkind == V_NAN) u = 0x7FF8000000000000u;
    else memcpy(&u, &dv, 8);
    put_le(p, u, 8);
  } else {
    float f = (float)dv;
    uint32_t u;
    if (c->vkind == V_HASH) f = (float)((double)(h >> 40) * 0x1p-24);
    if (c->vkind == V_NAN) u = 0x7FC00000u;
    else memcpy(&u, &f, 4);
    put_le(p, u, 4);
  }
}

/* The raw bytes of case c (little-endian C order), trunc_prec applied. */
static uint8_t *gen_raw(const icase *c, const dtype_desc *dt, const geom *g) {
  uint8_t *raw = malloc(g->nitems * dt->itemsize > 0 ? (size_t)(g->nitems * dt->itemsize) : 1);
  int64_t cc[MAXD] = {0};
  if (raw == NULL) return NULL;
  for (int64_t i = 0; i < g->nitems; i++) {
    gen_item(c, dt, i, cc, raw + i * dt->itemsize);
    for (int k = c->ndim - 1; k >= 0; k--) {
      if (++cc[k] < c->shape[k]) break;
      cc[k] = 0;
    }
  }
  for (int s = 0; s < 6; s++) {
    if (c->filters[s] != CATERVA_TRUNC_PREC) continue;
    int p = c->fmeta[s], mant = dt->itemsize == 4 ? 23 : 52;
    int zeroed = p >= 0 ? mant - p : -p;
    uint64_t mask = ~((UINT64_C(1) << zeroed) - 1);
    for (int64_t i = 0; i < g->nitems; i++) {
      uint8_t *q = raw + i * dt->itemsize;
      uint64_t u = 0;
      for (int b = 0; b < dt->itemsize; b++) u |= (uint64_t)q[b] << (8 * b);
      put_le(q, u & mask, dt->itemsize);
    }
  }
  return raw;
}

static void describe_values(const icase *c, const dtype_desc *dt, char *out, size_t cap) {
  const char *boolnote = dt->kind == K_BOOL ? "; bool: the low bit of the integer value" : "";
  switch (c->vkind) {
  case V_RAMP:
    snprintf(out, cap,
             "v = %g*i + %g  (i = C-order linear index; integer dtypes: computed as int64 "
             "(int64)(a)*i+(int64)(b), then truncated to the dtype width, two's complement; "
             "floats: computed in double, float32 rounds the double%s)",
             c->a, c->b, boolnote);
    break;
  case V_STEPS:
    snprintf(out, cap, "v = floor(i / %g) + %g  (int64 arithmetic, truncated to dtype width; "
             "floats exact%s)", c->a, c->b, boolnote);
    break;
  case V_SMOOTH:
    snprintf(out, cap,
             "s = sum_k sin(c_k*0.1/(k+1)) + 0.5*sin(i*1e-4)  (c_k = coordinate along axis k); "
             "v = %g*s + %g computed in double (glibc libm); float32 rounds the double; integer "
             "dtypes: (int64) truncation toward zero, then truncated to the dtype width%s",
             c->a, c->b, boolnote);
    break;
  case V_HASH:
    snprintf(out, cap,
             "h = splitmix64(i + %g) (standard splitmix64 finalizer incl. the "
             "+0x9E3779B97F4A7C15 step); integer dtypes: low bytes of h; float64: "
             "(h>>11)*2^-53; float32: (float)((h>>40)*2^-24)%s",
             c->a, boolnote);
    break;
  case V_ZERO: snprintf(out, cap, "v = 0"); break;
  case V_SPARSE:
    snprintf(out, cap, "v = (i %% %g == 0) ? (i / %g + 1) : 0  (int64 arithmetic, truncated to "
             "dtype width)", c->a, c->a);
    break;
  case V_CONST: snprintf(out, cap, "v = %g (constant)", c->a); break;
  case V_NAN:
    snprintf(out, cap, "v = NaN (float32 bits 0x7fc00000, float64 bits 0x7ff8000000000000)");
    break;
  }
}

/* ---- attributes ----------------------------------------------------------------------- */

static const char *const DIM_NAMES[] = {"time", "lat", "lon"};

/* msgpack {"units": "K", "scale": 2.5, "source": "caterva-sqlite test_interop"}. */
static void pack_attrs(msgpack_sbuffer *sb) {
  msgpack_packer pk;
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_map(&pk, 3);
  msgpack_pack_str_with_body(&pk, "units", 5);
  msgpack_pack_str_with_body(&pk, "K", 1);
  msgpack_pack_str_with_body(&pk, "scale", 5);
  msgpack_pack_double(&pk, 2.5);
  msgpack_pack_str_with_body(&pk, "source", 6);
  msgpack_pack_str_with_body(&pk, "caterva-sqlite test_interop", 27);
}

/* The expected msgpack of _ARRAY_DIMENSIONS (for the trailer check). */
static void pack_dim_names(msgpack_sbuffer *sb) {
  msgpack_packer pk;
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 3);
  for (int k = 0; k < 3; k++)
    msgpack_pack_str_with_body(&pk, DIM_NAMES[k], strlen(DIM_NAMES[k]));
}

/* ---- expected metalayers (fact sheet §5.1), encoded here independently ------------------ */

static size_t put_be(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
  return (size_t)n;
}

static size_t expected_meta(const icase *c, const char *numpy, int b2nd, uint8_t *out) {
  size_t n = 0;
  out[n++] = b2nd ? 0x97 : 0x95;
  out[n++] = 0;
  out[n++] = (uint8_t)c->ndim;
  out[n++] = (uint8_t)(0x90 | c->ndim);
  for (int k = 0; k < c->ndim; k++) out[n++] = 0xD3, n += put_be(out + n, (uint64_t)c->shape[k], 8);
  out[n++] = (uint8_t)(0x90 | c->ndim);
  for (int k = 0; k < c->ndim; k++)
    out[n++] = 0xD2, n += put_be(out + n, (uint32_t)c->chunks[k], 4);
  out[n++] = (uint8_t)(0x90 | c->ndim);
  for (int k = 0; k < c->ndim; k++)
    out[n++] = 0xD2, n += put_be(out + n, (uint32_t)c->blocks[k], 4);
  if (b2nd) {
    out[n++] = 0;
    out[n++] = 0xDB;
    n += put_be(out + n, strlen(numpy), 4);
    memcpy(out + n, numpy, strlen(numpy));
    n += strlen(numpy);
  }
  return n;
}

/* ---- files ---------------------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  (void)st; (void)flag; (void)ftw;
  return remove(path);
}
static void rm_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  else remove(path);
}

static int mkdir_p(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char save = buf[i];
      buf[i] = '\0';
      if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
      buf[i] = save;
    }
  }
  return 0;
}

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* Remove what an earlier run left: *.b2nd, *.b2frame (and their *.b2nd.b2lock sidecars), raw/
 * and manifest.json. */
static void clean_out(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4096];
  if (d == NULL) return;
  while ((e = readdir(d)) != NULL) {
    if (ends_with(e->d_name, ".b2nd") || ends_with(e->d_name, ".b2frame") ||
        ends_with(e->d_name, ".b2nd.b2lock") ||
        strcmp(e->d_name, "raw") == 0 || strcmp(e->d_name, "manifest.json") == 0) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      rm_tree(path);
    }
  }
  closedir(d);
}

static int write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  int ok;
  if (f == NULL) return -1;
  ok = (n == 0 || fwrite(p, 1, n, f) == n);
  ok = fclose(f) == 0 && ok;
  return ok ? 0 : -1;
}

/* Whole file into a malloc'ed buffer. */
static uint8_t *slurp(const char *path, size_t *len) {
  return (uint8_t *)mj_read_file(path, len);
}

static int64_t file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

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

/* ---- writing through SQL -------------------------------------------------------------- */

static char g_ext_path[4096]; /* the extension, without .so (sqlite3_load_extension adds it) */

/* The column names of a SQL case: dims= or the extension's default d0, d1, ... */
static void sql_colnames(const icase *c, const sqlcase *s, char names[MAXD][32]) {
  const char *p = s->dims;
  for (int k = 0; k < c->ndim; k++) {
    size_t n = 0;
    if (*p) {
      while (p[n] && p[n] != ',') n++;
      snprintf(names[k], 32, "%.*s", (int)n, p);
      p += n + (p[n] == ',');
    } else {
      snprintf(names[k], 32, "d%d", k);
    }
  }
}

/* F(c) as SQL over the column names (see SQLCASES). */
static void sql_formula(const icase *c, const sqlcase *s, char names[MAXD][32], char *out,
                        size_t cap) {
  size_t n = (size_t)snprintf(out, cap, "((");
  for (int k = 0; k < c->ndim && n < cap; k++)
    n += (size_t)snprintf(out + n, cap - n, "%s * %lld + ", names[k], (long long)s->mul[k]);
  if (n < cap)
    snprintf(out + n, cap - n, "%lld) %% %lld) * %.17g + %.17g", (long long)s->add,
             (long long)s->mod, s->scale, s->off);
}

/* INSERT of every cell with first coordinate lo..hi (the other dimensions whole), v = F. */
static void sql_insert_rows(const icase *c, const sqlcase *s, char names[MAXD][32], int64_t lo,
                            int64_t hi, char *out, size_t cap) {
  char f[512], cols[512] = "", coords[1024] = "";
  int64_t stride = 1, ncells;
  size_t nc = 0, nk = 0;
  for (int k = 1; k < c->ndim; k++) stride *= c->shape[k];
  ncells = (hi - lo + 1) * stride;
  sql_formula(c, s, names, f, sizeof f);
  for (int k = 0; k < c->ndim; k++) {
    int64_t inner = 1;
    for (int j = k + 1; j < c->ndim; j++) inner *= c->shape[j];
    nc += (size_t)snprintf(cols + nc, sizeof cols - nc, "%s, ", names[k]);
    if (k == 0)
      nk += (size_t)snprintf(coords + nk, sizeof coords - nk, "%lld + i / %lld AS %s",
                             (long long)lo, (long long)inner, names[k]);
    else
      nk += (size_t)snprintf(coords + nk, sizeof coords - nk, ", i / %lld %% %lld AS %s",
                             (long long)inner, (long long)c->shape[k], names[k]);
  }
  snprintf(out, cap,
           "INSERT INTO t(%svalue) SELECT %s%s FROM (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL "
           "SELECT i + 1 FROM r WHERE i < %lld) SELECT %s FROM r)",
           cols, cols, f, (long long)(ncells - 1), coords);
}

typedef struct sql_stmt {
  char text[8192];
  int must_fail; /* the statement must fail and change nothing */
} sql_stmt;

#define MAX_SQL_STMTS 16

/* The statements of a SQL case, for the array at path; returns their number. *ntxn: the
 * write transactions they run (each takes the lock once: the sidecar counter's increase). */
static int sql_statements(const icase *c, const sqlcase *s, const char *path, sql_stmt *st,
                          int *ntxn) {
  char names[MAXD][32], shape[256] = "", chunks[256] = "", blocks[256] = "", box[1024] = "";
  size_t a = 0, b = 0, d = 0, x = 0;
  int n = 0;
  const dtype_desc *dt = find_dtype(c->dtype);
  sql_colnames(c, s, names);
  for (int k = 0; k < c->ndim; k++) {
    a += (size_t)snprintf(shape + a, sizeof shape - a, "%s%lld", k ? "," : "",
                          (long long)(k ? c->shape[k] : s->shape0));
    b += (size_t)snprintf(chunks + b, sizeof chunks - b, "%s%d", k ? "," : "", c->chunks[k]);
    d += (size_t)snprintf(blocks + d, sizeof blocks - d, "%s%d", k ? "," : "", c->blocks[k]);
    x += (size_t)snprintf(box + x, sizeof box - x, "%s%s BETWEEN %lld AND %lld", k ? " AND " : "",
                          names[k], (long long)s->del_lo[k], (long long)s->del_hi[k]);
  }
  snprintf(st[n++].text, sizeof st->text,
           "CREATE VIRTUAL TABLE t USING caterva('%s', shape='%s', dtype='%s', chunks='%s', "
           "blocks='%s', %s%s%s%s%s%s)",
           path, shape, dt->name, chunks, blocks, s->opts, *s->dims ? ", dims='" : "", s->dims,
           *s->dims ? "'" : "", *s->fill ? ", fill=" : "", s->fill);
  sql_insert_rows(c, s, names, 0, s->shape0 - 1, st[n++].text, sizeof st->text);
  if (s->grow_first)
    sql_insert_rows(c, s, names, s->grow_lo, s->grow_hi, st[n++].text, sizeof st->text);
  if (s->txn) snprintf(st[n++].text, sizeof st->text, "BEGIN");
  snprintf(st[n++].text, sizeof st->text,
           "UPDATE t SET value = value * %.17g + %.17g WHERE %s BETWEEN %lld AND %lld", s->umul,
           s->uadd, names[0], (long long)s->upd_lo, (long long)s->upd_hi);
  if (s->txn) {
    /* a savepoint whose changes (all cells, and growth past the final extent) vanish */
    snprintf(st[n++].text, sizeof st->text, "SAVEPOINT s");
    snprintf(st[n++].text, sizeof st->text, "UPDATE t SET value = value + 1");
    sql_insert_rows(c, s, names, s->grow_hi + 5, s->grow_hi + 5, st[n++].text, sizeof st->text);
    snprintf(st[n++].text, sizeof st->text, "ROLLBACK TO s");
    snprintf(st[n++].text, sizeof st->text, "RELEASE s");
  }
  snprintf(st[n].text, sizeof st->text,
           "UPDATE t SET value = 'not a number' WHERE %s = 0", names[0]);
  st[n++].must_fail = 1;
  snprintf(st[n++].text, sizeof st->text, "DELETE FROM t WHERE %s", box);
  if (!s->grow_first)
    sql_insert_rows(c, s, names, s->grow_lo, s->grow_hi, st[n++].text, sizeof st->text);
  if (s->txn) snprintf(st[n++].text, sizeof st->text, "COMMIT");
  /* the first INSERT (and the growth with grow_first), then one transaction or every
   * statement after it (the failing one too: it took the lock before it failed) */
  *ntxn = (s->grow_first ? 2 : 1) + (s->txn ? 1 : 4 - s->grow_first);
  return n;
}

/* The SQL value of F at linear coordinates cc, as SQLite computes it. */
static double sql_f(const icase *c, const sqlcase *s, const int64_t *cc, int is_float) {
  int64_t x = s->add;
  for (int k = 0; k < c->ndim; k++) x += s->mul[k] * cc[k];
  x %= s->mod;
  if (is_float) return (double)x * s->scale + s->off;
  return (double)(x * (int64_t)s->scale + (int64_t)s->off);
}

/* Round v to what the column stores (float32 rounds; integers are exact here). */
static double sql_store(const dtype_desc *dt, double v) {
  return dt->kind == K_FLOAT && dt->itemsize == 4 ? (double)(float)v : v;
}

/* The expected content of a SQL case after its statements, in raw form. */
static uint8_t *sql_expected(const icase *c, const dtype_desc *dt, const geom *g,
                             const sqlcase *s) {
  int is_float = dt->kind == K_FLOAT;
  double fill = *s->fill ? strtod(s->fill, NULL) : is_float ? NAN : 0.0;
  double *v = malloc((size_t)g->nitems * sizeof *v);
  uint8_t *raw = malloc((size_t)(g->nitems * dt->itemsize));
  int64_t cc[MAXD] = {0};
  if (v == NULL || raw == NULL) {
    free(v);
    free(raw);
    return NULL;
  }
  for (int64_t i = 0; i < g->nitems; i++) {
    int in_box = 1;
    double x = fill;
    for (int k = 0; k < c->ndim; k++) in_box &= cc[k] >= s->del_lo[k] && cc[k] <= s->del_hi[k];
    if (cc[0] < s->shape0) {
      x = sql_store(dt, sql_f(c, s, cc, is_float));
      if (cc[0] >= s->upd_lo && cc[0] <= s->upd_hi) {
        if (is_float) x = sql_store(dt, x * s->umul + s->uadd);
        else x = (double)((int64_t)x * (int64_t)s->umul + (int64_t)s->uadd);
      }
      if (in_box) x = fill;
    } else if (cc[0] >= s->grow_lo && cc[0] <= s->grow_hi) {
      x = sql_store(dt, sql_f(c, s, cc, is_float));
    }
    v[i] = x;
    for (int k = c->ndim - 1; k >= 0; k--) {
      if (++cc[k] < c->shape[k]) break;
      cc[k] = 0;
    }
  }
  for (int64_t i = 0; i < g->nitems; i++) {
    uint8_t *p = raw + i * dt->itemsize;
    if (dt->kind != K_FLOAT) {
      put_le(p, (uint64_t)(int64_t)v[i], dt->itemsize);
    } else if (dt->itemsize == 8) {
      uint64_t u;
      memcpy(&u, &v[i], 8);
      put_le(p, u, 8);
    } else {
      float f = (float)v[i];
      uint32_t u;
      memcpy(&u, &f, 4);
      put_le(p, u, 4);
    }
  }
  free(v);
  return raw;
}

/* The `_FillValue` attribute the SQL writer stores: a msgpack float64 or integer. */
static void pack_sql_fill(const dtype_desc *dt, const sqlcase *s, msgpack_sbuffer *sb) {
  msgpack_packer pk;
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  if (dt->kind == K_FLOAT) msgpack_pack_double(&pk, *s->fill ? strtod(s->fill, NULL) : NAN);
  else msgpack_pack_int64(&pk, *s->fill ? strtoll(s->fill, NULL, 10) : 0);
}

static void pack_names(msgpack_sbuffer *sb, char names[MAXD][32], int n) {
  msgpack_packer pk;
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, (size_t)n);
  for (int k = 0; k < n; k++) msgpack_pack_str_with_body(&pk, names[k], strlen(names[k]));
}

/* Run the statements of a SQL case on a new connection with the extension loaded, then close
 * it. Statements marked must_fail must fail with the dtype message. */
static int write_sql_case(const icase *c, const sqlcase *s, const char *path, int *ntxn,
                          char *err, size_t errcap) {
  sql_stmt *st = calloc(MAX_SQL_STMTS, sizeof *st);
  sqlite3 *db = NULL;
  char *msg = NULL;
  int n, rc = -1;
  if (st == NULL) return -1;
  n = sql_statements(c, s, path, st, ntxn);
  if (sqlite3_open(":memory:", &db) != SQLITE_OK ||
      sqlite3_enable_load_extension(db, 1) != SQLITE_OK ||
      sqlite3_load_extension(db, g_ext_path, NULL, &msg) != SQLITE_OK) {
    snprintf(err, errcap, "cannot load the extension %.300s: %.150s", g_ext_path,
             msg ? msg : db ? sqlite3_errmsg(db) : "no database");
    goto leave;
  }
  for (int i = 0; i < n; i++) {
    int r = sqlite3_exec(db, st[i].text, NULL, NULL, &msg);
    if (st[i].must_fail ? r == SQLITE_OK || msg == NULL || !strstr(msg, "does not fit")
                        : r != SQLITE_OK) {
      snprintf(err, errcap, "statement %d %s: %.300s: %s", i + 1,
               st[i].must_fail ? "did not fail as it must" : "failed", st[i].text,
               msg ? msg : "(no message)");
      goto leave;
    }
    sqlite3_free(msg);
    msg = NULL;
  }
  rc = 0;
leave:
  sqlite3_free(msg);
  if (db != NULL && sqlite3_close(db) != SQLITE_OK && rc == 0) {
    snprintf(err, errcap, "sqlite3_close: %s", sqlite3_errmsg(db));
    rc = -1;
  }
  free(st);
  return rc;
}

/* The generation counter of the array's `.b2lock` sidecar, or -1. */
static int64_t sidecar_counter(const icase *c, const char *path) {
  char lp[4200];
  size_t len = 0;
  uint8_t *b;
  int64_t v = -1;
  snprintf(lp, sizeof lp, c->sparse ? "%s/.b2lock" : "%s.b2lock", path);
  b = slurp(lp, &len);
  if (b != NULL && len >= 16) {
    uint64_t u = 0;
    for (int i = 0; i < 8; i++) u |= (uint64_t)b[8 + i] << (8 * i);
    v = (int64_t)u;
  }
  free(b);
  return v;
}

/* ---- frame checks --------------------------------------------------------------------- */

typedef struct frame_facts {
  int64_t header_len, frame_len, nbytes, cbytes, nchunks;
  int32_t typesize, blocksize, chunksize;
  int64_t n_zero, n_nan, n_uninit, n_stored, n_value, n_memcpy;
  int64_t file_nbytes;
  int64_t dead; /* bytes of the chunk section no chunk uses (SQL-written contiguous files) */
  int split_mismatch;  /* chunks whose split flag differs from the reference's rule */
} frame_facts;

static uint64_t be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

#define REQ(cond, ...)                                                                        \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      snprintf(err, errcap, __VA_ARGS__);                                                     \
      goto fail;                                                                              \
    }                                                                                         \
  } while (0)

/* The reference's split decision (fact sheet §1.11). */
static int ref_split(const icase *c, int typesize, int32_t blocksize) {
  if (c->split == CATERVA_SPLIT_ALWAYS) return 1;
  if (c->split == CATERVA_SPLIT_NEVER) return 0;
  return (c->codec == BLZ || c->codec == LZ4 || (c->codec == ZSTD && c->clevel <= 5)) &&
         has_filter(c, CATERVA_SHUFFLE) && typesize <= 16 && blocksize / typesize >= 32;
}

/* One stored chunk of the array (bytes ck[0..len)). */
static int check_chunk(caterva_ctx *ctx, const icase *c, const geom *g, const uint8_t *ck,
                       size_t len, frame_facts *ff, char *err, size_t errcap) {
  caterva_chunk_info ci;
  REQ(len >= 32 && caterva_chunk_info_get(ck, len, &ci) == 0, "chunk header invalid");
  REQ(ck[0] == 5 && ck[1] == 1, "chunk version %d/%d, expected 5/1", ck[0], ck[1]);
  REQ(ci.cbytes == (int32_t)len, "chunk cbytes %d, stored length %zu", ci.cbytes, len);
  REQ(ci.nbytes == g->chunksize, "chunk nbytes %d, chunksize %lld", ci.nbytes,
      (long long)g->chunksize);
  REQ(ci.blocksize == g->blocksize, "chunk blocksize %d, expected %lld", ci.blocksize,
      (long long)g->blocksize);
  REQ((ck[2] & 0x05) == 0x05, "chunk flags 0x%02x lack the extended-header bits", ck[2]);
  if (ci.special != CATERVA_SPECIAL_NONE) {
    /* SQL: a chunk the writer filled with the fill value (the reads prove which) */
    REQ(ci.special == CATERVA_SPECIAL_VALUE && (c->write == W_FULL || c->write == W_SQL),
        "unexpected stored special chunk of kind %d", ci.special);
    REQ(len == (size_t)(32 + g->itemsize), "repeated-value chunk of %zu bytes", len);
    ff->n_value++;
    return 1;
  }
  REQ(ck[3] == g->itemsize, "chunk typesize %d", ck[3]);
  REQ(ck[0x16] == c->codec, "chunk byte 0x16 = %d, compcode %d", ck[0x16], c->codec);
  for (int k = 0; k < 6; k++)
    REQ(ck[0x10 + k] == c->filters[k] && ck[0x18 + k] == (uint8_t)(int8_t)c->fmeta[k],
        "chunk filter slot %d: %d/%d", k, ck[0x10 + k], ck[0x18 + k]);
  REQ(ck[0x1E] == 0 && (ck[0x1F] & 0x8F) == 0, "chunk blosc2 flags 0x%02x 0x%02x", ck[0x1E],
      ck[0x1F]);
  if (ci.memcpyed) {
    REQ(len == (size_t)g->chunksize + 32, "memcpyed chunk of %zu bytes", len);
    ff->n_memcpy++;
  } else {
    REQ(c->clevel > 0, "compressed chunk at clevel 0");
    REQ((ck[2] >> 5) == codec_format(c->codec), "chunk format id %d for %s", ck[2] >> 5,
        codec_name(c->codec));
    REQ(!!(ck[2] & 0x08) == has_filter(c, CATERVA_DELTA), "chunk delta bit 0x%02x", ck[2]);
    int split = (ck[2] & 0x10) == 0;
    if (split != ref_split(c, g->itemsize, (int32_t)g->blocksize)) ff->split_mismatch++;
  }
  {
    uint8_t *tmp = malloc((size_t)g->chunksize);
    int32_t got = tmp ? caterva_chunk_decompress(ctx, ck, len, tmp, (int32_t)g->chunksize) : -1;
    free(tmp);
    REQ(got == g->chunksize, "chunk does not decompress: %d", got);
  }
  ff->n_stored++;
  return 1;
fail:
  return 0;
}

typedef struct expected_vl {
  const char *name;
  const uint8_t *content;
  size_t len;
} expected_vl;

/* The frame image f[0..len) (a contiguous file, or a sparse directory's chunks.b2frame). */
static int check_frame(caterva_ctx *ctx, const icase *c, const dtype_desc *dt, const geom *g,
                       const uint8_t *raw, const char *path, const uint8_t *f, size_t len,
                       const expected_vl *vl, int nvl, frame_facts *ff, char *err,
                       size_t errcap) {
  int ftype = c->sparse ? 1 : 0;
  size_t pos;
  int64_t tlen, tstart, *entries = NULL, (*spans)[2] = NULL;
  uint8_t *idx = NULL, *ckbuf = NULL;
  int64_t mo[2] = {0, 0};
  const char *mnames[2] = {"caterva", "b2nd"};
  int nmeta = c->ndim <= 8 ? 2 : 1, first = c->ndim <= 8 ? 0 : 1;
  int ok = 0;
  memset(ff, 0, sizeof *ff);

  /* fixed part (§3.1) */
  REQ(len >= 87 + 23, "frame of %zu bytes", len);
  REQ(f[0] == 0x9E && f[1] == 0xA8 && memcmp(f + 2, "b2frame", 8) == 0, "bad magic");
  REQ(f[10] == 0xD2 && f[15] == 0xCF && f[24] == 0xA4 && f[29] == 0xD3 && f[38] == 0xD3 &&
          f[47] == 0xD2 && f[52] == 0xD2 && f[57] == 0xD2 && f[62] == 0xD1 && f[65] == 0xD1 &&
          f[69] == 0xD8 && f[70] == 6,
      "fixed header markers");
  ff->header_len = (int64_t)be(f + 11, 4);
  ff->frame_len = (int64_t)be(f + 16, 8);
  ff->nbytes = (int64_t)be(f + 30, 8);
  ff->cbytes = (int64_t)be(f + 39, 8);
  ff->typesize = (int32_t)be(f + 48, 4);
  ff->blocksize = (int32_t)be(f + 53, 4);
  ff->chunksize = (int32_t)be(f + 58, 4);
  REQ(ff->frame_len == (int64_t)len, "frame_len %lld, file size %zu", (long long)ff->frame_len,
      len);
  REQ(f[25] == 0x12, "general flags 0x%02x", f[25]);
  REQ(f[26] == ftype, "frame type %d, expected %d", f[26], ftype);
  REQ(f[27] == (uint8_t)(c->codec | c->clevel << 4), "codec byte 0x%02x", f[27]);
  REQ(f[28] == (uint8_t)(c->split - 1), "other flags 0x%02x", f[28]);
  REQ(ff->typesize == dt->itemsize, "typesize %d", ff->typesize);
  REQ(ff->blocksize == g->blocksize, "blocksize %d, expected %lld", ff->blocksize,
      (long long)g->blocksize);
  REQ(ff->chunksize == g->chunksize, "chunksize %d, expected %lld", ff->chunksize,
      (long long)g->chunksize);
  ff->nchunks = g->nitems == 0 ? 0 : g->nchunks;
  REQ(ff->nbytes == ff->nchunks * g->chunksize, "nbytes %lld", (long long)ff->nbytes);
  REQ(f[68] == (nvl > 0 ? 0xC3 : 0xC2), "vlmeta flag 0x%02x", f[68]);
  for (int k = 0; k < 6; k++)
    REQ(f[71 + k] == c->filters[k] && f[79 + k] == (uint8_t)(int8_t)c->fmeta[k],
        "header filter slot %d", k);
  REQ(f[77] == c->codec && f[78] == 0 && f[85] == 0 && f[86] == 0, "header bytes 77-86");

  /* metalayers (§3.2) */
  pos = 87;
  REQ(f[pos] == 0x93 && f[pos + 1] == 0xCD && f[pos + 4] == 0xDE, "metalayer section markers");
  REQ(be(f + pos + 5, 2) == (uint64_t)nmeta, "%d metalayers", (int)be(f + pos + 5, 2));
  {
    size_t isz = (size_t)be(f + pos + 2, 2), start = pos;
    pos += 7;
    for (int k = 0; k < nmeta; k++) {
      const char *nm = mnames[first + k];
      size_t nl = strlen(nm);
      REQ(pos + 1 + nl + 5 < len && f[pos] == (0xA0 | nl) && memcmp(f + pos + 1, nm, nl) == 0,
          "metalayer %d is not '%s'", k, nm);
      pos += 1 + nl;
      REQ(f[pos] == 0xD2, "metalayer offset marker");
      mo[k] = (int64_t)be(f + pos + 1, 4);
      pos += 5;
    }
    REQ(isz == pos - start, "metalayer index size %zu, expected %zu", isz, pos - start);
    REQ(f[pos] == 0xDC && be(f + pos + 1, 2) == (uint64_t)nmeta, "metalayer array header");
    pos += 3;
    for (int k = 0; k < nmeta; k++) {
      uint8_t want[512];
      size_t wl = expected_meta(c, dt->numpy, first + k == 1, want), ml;
      REQ((int64_t)pos == mo[k] && f[pos] == 0xC6, "metalayer %d offset %lld, C6 at %zu", k,
          (long long)mo[k], pos);
      ml = (size_t)be(f + pos + 1, 4);
      REQ(ml == wl && pos + 5 + ml <= len && memcmp(f + pos + 5, want, wl) == 0,
          "metalayer '%s' bytes differ from the fact sheet's encoding", mnames[first + k]);
      pos += 5 + ml;
    }
    REQ((int64_t)pos == ff->header_len, "header_len %lld, metalayers end at %zu",
        (long long)ff->header_len, pos);
  }

  /* trailer (§3.5) */
  REQ(f[len - 23] == 0xCE && f[len - 18] == 0xD8 && f[len - 17] == 0, "trailer tail markers");
  for (int k = 0; k < 16; k++) REQ(f[len - 16 + k] == 0, "fingerprint byte %d", k);
  tlen = (int64_t)be(f + len - 22, 4);
  REQ(tlen >= 35 && tlen <= (int64_t)len - ff->header_len, "trailer_len %lld", (long long)tlen);
  tstart = (int64_t)len - tlen;
  {
    const uint8_t *t = f + tstart;
    int64_t vo[16];
    size_t q = 9;
    REQ(t[0] == 0x94 && t[1] == 0x01 && t[2] == 0x93 && t[3] == 0xCD && t[6] == 0xDE,
        "trailer head markers");
    REQ(be(t + 7, 2) == (uint64_t)nvl, "%d vlmetalayers, expected %d", (int)be(t + 7, 2), nvl);
    for (int k = 0; k < nvl; k++) {
      size_t nl = strlen(vl[k].name);
      REQ(nl < 32 && t[q] == (0xA0 | nl) && memcmp(t + q + 1, vl[k].name, nl) == 0,
          "vlmetalayer %d is not '%s'", k, vl[k].name);
      q += 1 + nl;
      REQ(t[q] == 0xD2, "vlmetalayer offset marker");
      vo[k] = (int64_t)be(t + q + 1, 4);
      q += 5;
    }
    REQ(be(t + 4, 2) == q + 3 - 6, "trailer index size %d", (int)be(t + 4, 2));
    REQ(t[q] == 0xDC && be(t + q + 1, 2) == (uint64_t)nvl, "vlmetalayer array header");
    q += 3;
    for (int k = 0; k < nvl; k++) {
      size_t cl;
      uint8_t *dec;
      int32_t got;
      REQ((int64_t)q == vo[k] && t[q] == 0xC6, "vlmetalayer %d offset %lld, C6 at %zu", k,
          (long long)vo[k], q);
      cl = (size_t)be(t + q + 1, 4);
      REQ((int64_t)(q + 5 + cl) <= tlen - 23, "vlmetalayer %d overruns the trailer", k);
      dec = malloc(vl[k].len + 1);
      got = dec ? caterva_chunk_decompress(ctx, t + q + 5, cl, dec, (int32_t)vl[k].len + 1) : -1;
      ok = got == (int32_t)vl[k].len && memcmp(dec, vl[k].content, vl[k].len) == 0;
      free(dec);
      REQ(ok, "vlmetalayer '%s' is not a chunk of the expected content", vl[k].name);
      ok = 0;
      q += 5 + cl;
    }
    REQ((int64_t)q == tlen - 23, "trailer content ends at %zu, tail at %lld", q,
        (long long)(tlen - 23));
  }

  /* index and chunks (§3.3, §3.4, §4) */
  if (ff->nchunks == 0) {
    REQ(ff->nbytes == 0 && ff->cbytes == 0 && tstart == ff->header_len,
        "no chunks: the trailer must follow the header");
  } else {
    int64_t ioff = c->sparse ? ff->header_len : ff->header_len + ff->cbytes;
    caterva_chunk_info ii;
    int64_t sum = 0;
    REQ(ioff < tstart, "index chunk at %lld, trailer at %lld", (long long)ioff, (long long)tstart);
    REQ(caterva_chunk_info_get(f + ioff, (size_t)(tstart - ioff), &ii) == 0, "index chunk header");
    REQ(ii.cbytes == tstart - ioff, "index chunk of %d bytes between %lld and the trailer %lld",
        ii.cbytes, (long long)ioff, (long long)tstart);
    REQ(f[ioff] == 5 && ii.nbytes == 8 * ff->nchunks && ii.typesize == 8, "index chunk fields");
    entries = malloc((size_t)ff->nchunks * 8);
    idx = malloc((size_t)ff->nchunks * 8);
    spans = malloc((size_t)ff->nchunks * sizeof *spans);
    REQ(entries && idx && spans, "out of memory");
    REQ(caterva_chunk_decompress(ctx, f + ioff, (size_t)ii.cbytes, idx, ii.nbytes) == ii.nbytes,
        "index chunk does not decompress");
    for (int64_t i = 0; i < ff->nchunks; i++) {
      uint64_t u = 0;
      for (int b = 0; b < 8; b++) u |= (uint64_t)idx[8 * i + b] << (8 * b);
      entries[i] = (int64_t)u;
    }
    for (int64_t i = 0; i < ff->nchunks; i++) {
      int64_t e = entries[i];
      int zero = chunk_all_zero(c, g, raw, i);
      if (e < 0) {
        uint64_t u = (uint64_t)e;
        int kind = (int)(u >> 56) & 0x7f;
        REQ((u & 0x00FFFFFFFFFFFFFFu) == 0 && (kind == 1 || kind == 2 || kind == 4),
            "index entry %lld = 0x%016llx", (long long)i, (unsigned long long)u);
        if (kind == 1) ff->n_zero++;
        if (kind == 2) ff->n_nan++;
        if (kind == 4) ff->n_uninit++;
        REQ(kind != 4, "uninitialised chunk %lld", (long long)i);
        REQ(kind != 1 || zero, "chunk %lld is special-zero but holds non-zero items",
            (long long)i);
        REQ(kind != 2 || c->vkind == V_NAN || (c->write == W_SQL && chunk_all(c, g, raw, i, 1)),
            "unexpected NaN chunk %lld", (long long)i);
        spans[i][0] = spans[i][1] = -1;
        continue;
      }
      REQ(!zero || c->write == W_FULL, "chunk %lld holds only zeros but is stored",
          (long long)i);
      if (!c->sparse) {
        int64_t at = ff->header_len + e;
        REQ(e < ff->cbytes && at + 32 <= ioff, "chunk %lld offset %lld outside the section",
            (long long)i, (long long)e);
        {
          int64_t cb = (int64_t)(f[at + 12] | f[at + 13] << 8 | f[at + 14] << 16 |
                                 (uint32_t)f[at + 15] << 24);
          REQ(cb >= 32 && at + cb <= ioff, "chunk %lld of %lld bytes overruns the section",
              (long long)i, (long long)cb);
          if (!check_chunk(ctx, c, g, f + at, (size_t)cb, ff, err, errcap)) goto fail_kept;
          spans[i][0] = e;
          spans[i][1] = cb;
          sum += cb;
        }
      } else {
        char cp[4200];
        size_t cl = 0;
        snprintf(cp, sizeof cp, "%s/%08llX.chunk", path, (unsigned long long)e);
        ckbuf = slurp(cp, &cl);
        REQ(ckbuf != NULL, "chunk file %08llX.chunk missing", (unsigned long long)e);
        if (!check_chunk(ctx, c, g, ckbuf, cl, ff, err, errcap)) goto fail_kept;
        free(ckbuf);
        ckbuf = NULL;
        spans[i][0] = e; /* file number */
        spans[i][1] = (int64_t)cl;
        sum += (int64_t)cl;
      }
    }
    /* SQL-written contiguous files may keep dead bytes (see the top comment) */
    REQ(sum == ff->cbytes || (c->write == W_SQL && !c->sparse && sum < ff->cbytes),
        "stored chunks hold %lld bytes, header cbytes %lld", (long long)sum,
        (long long)ff->cbytes);
    ff->dead = ff->cbytes - sum;
    if (!c->sparse && c->write == W_SQL) {
      /* Dead bytes allowed: the stored chunks are disjoint and inside [0, cbytes). */
      for (int64_t i = 0; i < ff->nchunks; i++)
        for (int64_t j = i + 1; spans[i][1] >= 0 && j < ff->nchunks; j++)
          REQ(spans[j][1] < 0 || spans[i][0] + spans[i][1] <= spans[j][0] ||
                  spans[j][0] + spans[j][1] <= spans[i][0],
              "chunks %lld and %lld overlap", (long long)i, (long long)j);
    } else if (!c->sparse) {
      /* No dead bytes: the stored chunks tile [0, cbytes) exactly (offsets in any order). */
      int64_t at = 0;
      for (;;) {
        int64_t found = -1;
        for (int64_t i = 0; i < ff->nchunks && found < 0; i++)
          if (spans[i][0] == at) found = i;
        if (found < 0) break;
        at += spans[found][1];
      }
      REQ(at == ff->cbytes, "chunk section not packed: chunks tile [0, %lld) of %lld bytes",
          (long long)at, (long long)ff->cbytes);
    } else {
      /* The directory: chunks.b2frame plus exactly the referenced chunk files, no duplicates. */
      DIR *d = opendir(path);
      struct dirent *de;
      int64_t nfiles = 0, nref = 0;
      int stray = 0;
      REQ(d != NULL, "cannot list the directory");
      while ((de = readdir(d)) != NULL) {
        unsigned long long num;
        char tail[16];
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 ||
            strcmp(de->d_name, "chunks.b2frame") == 0 ||
            (c->write == W_SQL && strcmp(de->d_name, ".b2lock") == 0))
          continue;
        nfiles++;
        if (strlen(de->d_name) != 14 || sscanf(de->d_name, "%8llX%15s", &num, tail) != 2 ||
            strcmp(tail, ".chunk") != 0) {
          stray = 1;
          continue;
        }
        {
          int refd = 0;
          for (int64_t i = 0; i < ff->nchunks; i++)
            refd += spans[i][1] >= 0 && spans[i][0] == (int64_t)num;
          if (refd != 1) stray = 1;
        }
      }
      closedir(d);
      for (int64_t i = 0; i < ff->nchunks; i++) nref += spans[i][1] >= 0;
      REQ(!stray && nfiles == nref, "directory holds %lld files for %lld stored chunks%s",
          (long long)nfiles, (long long)nref, stray ? " (or stray/shared names)" : "");
    }
  }
  if (c->vkind == V_ZERO) REQ(ff->n_zero == ff->nchunks, "not all chunks are special-zero");
  if (c->vkind == V_NAN) REQ(ff->n_nan == ff->nchunks, "not all chunks are special-NaN");
  if (c->write == W_FULL) REQ(ff->n_value == ff->nchunks, "not all chunks are repeated-value");
  if (c->clevel == 0) REQ(ff->n_memcpy == ff->n_stored, "clevel 0 chunks not memcpyed");
  ok = 1;
  goto done;
fail:
fail_kept:
  ok = 0;
done:
  free(entries);
  free(idx);
  free(spans);
  free(ckbuf);
  return ok;
}

/* The checker itself must reject frames that break the rules: dead bytes at the end of the
 * chunk section (what an uncompacted file looks like), a wrong codec byte, trailing bytes. */
static void check_negative(caterva_ctx *ctx, const icase *c, const dtype_desc *dt,
                           const geom *g, const uint8_t *raw, const char *path, const uint8_t *f,
                           size_t len, const expected_vl *vl, int nvl) {
  frame_facts ff;
  char err[512];
  uint8_t *m = malloc(len + 64);
  int rejected = 0;
  int64_t hl = (int64_t)be(f + 11, 4), cb = (int64_t)be(f + 39, 8);
  if (m == NULL) return;
  /* 40 dead bytes after the last chunk: cbytes and frame_len grow, offsets stay valid. */
  memcpy(m, f, (size_t)(hl + cb));
  memset(m + hl + cb, 0xAB, 40);
  memcpy(m + hl + cb + 40, f + hl + cb, len - (size_t)(hl + cb));
  put_be(m + 39, (uint64_t)(cb + 40), 8);
  put_be(m + 16, (uint64_t)(len + 40), 8);
  rejected += !check_frame(ctx, c, dt, g, raw, path, m, len + 40, vl, nvl, &ff, err, sizeof err) &&
              (strstr(err, "not packed") != NULL || strstr(err, "header cbytes") != NULL);
  memcpy(m, f, len);
  m[27] ^= 0x01;
  rejected += !check_frame(ctx, c, dt, g, raw, path, m, len, vl, nvl, &ff, err, sizeof err);
  memcpy(m, f, len);
  memset(m + len, 0, 7);
  rejected += !check_frame(ctx, c, dt, g, raw, path, m, len + 7, vl, nvl, &ff, err, sizeof err);
  tap_ok(rejected == 3, "%s: the frame checker rejects dead bytes, a wrong codec byte and "
         "trailing bytes (%d of 3)", c->name, rejected);
  free(m);
}

/* The relaxed check of SQL-written contiguous files must still reject overlapping chunks:
 * the index is rewritten so that the smallest stored chunk also stands for another stored
 * chunk (which is no smaller: the sum of chunk sizes stays <= cbytes, every chunk still
 * decompresses, and only the overlap check can tell). */
static void check_negative_sql(caterva_ctx *ctx, const icase *c, const dtype_desc *dt,
                               const geom *g, const uint8_t *raw, const char *path,
                               const uint8_t *f, size_t len, const expected_vl *vl, int nvl) {
  frame_facts ff;
  char err[512] = "";
  int64_t hl = (int64_t)be(f + 11, 4), cb = (int64_t)be(f + 39, 8), tlen;
  int64_t ioff = hl + cb, nch = g->nchunks, small = -1, other = -1, smallsz = 0;
  caterva_chunk_info ii;
  uint8_t *idx = malloc((size_t)nch * 8), *cidx = malloc((size_t)nch * 8 + 64), *m = NULL;
  int32_t clen = -1;
  int rejected = 0;
  caterva_cparams cp;
  tlen = (int64_t)be(f + len - 22, 4);
  if (idx && cidx && caterva_chunk_info_get(f + ioff, len - (size_t)ioff, &ii) == 0 &&
      caterva_chunk_decompress(ctx, f + ioff, (size_t)ii.cbytes, idx, (int32_t)nch * 8) ==
          nch * 8) {
    for (int64_t i = 0; i < nch; i++) {
      int64_t e = (int64_t)(idx[8 * i] | (uint64_t)idx[8 * i + 1] << 8 |
                            (uint64_t)idx[8 * i + 2] << 16 | (uint64_t)idx[8 * i + 3] << 24 |
                            (uint64_t)idx[8 * i + 4] << 32 | (uint64_t)idx[8 * i + 5] << 40 |
                            (uint64_t)idx[8 * i + 6] << 48 | (uint64_t)idx[8 * i + 7] << 56);
      int64_t sz;
      if (e < 0 || hl + e + 16 > ioff) continue;
      sz = (int64_t)f[hl + e + 12] | (int64_t)f[hl + e + 13] << 8 |
           (int64_t)f[hl + e + 14] << 16 | (int64_t)f[hl + e + 15] << 24;
      if (small < 0 || sz < smallsz) {
        small = i;
        smallsz = sz;
      }
    }
    for (int64_t i = 0; i < nch && small >= 0 && other < 0; i++)
      if (i != small && (idx[8 * i + 7] & 0x80) == 0) other = i;
    caterva_cparams_init(&cp);
    cp.typesize = 8;
    if (small >= 0 && other >= 0) {
      memcpy(idx + 8 * other, idx + 8 * small, 8);
      clen = caterva_chunk_compress(ctx, &cp, idx, (int32_t)nch * 8, cidx, (int32_t)nch * 8 + 64);
    }
  }
  if (clen > 0 && (m = malloc(len + (size_t)clen)) != NULL) {
    size_t n = 0;
    memcpy(m, f, (size_t)ioff);
    n = (size_t)ioff;
    memcpy(m + n, cidx, (size_t)clen);
    n += (size_t)clen;
    memcpy(m + n, f + len - tlen, (size_t)tlen);
    n += (size_t)tlen;
    put_be(m + 16, n, 8);
    rejected = !check_frame(ctx, c, dt, g, raw, path, m, n, vl, nvl, &ff, err, sizeof err) &&
               strstr(err, "overlap") != NULL;
  }
  tap_ok(rejected, "%s: the relaxed (dead bytes allowed) check still rejects overlapping "
         "chunks: %s", c->name, err);
  free(idx);
  free(cidx);
  free(m);
}

/* ---- per case ------------------------------------------------------------------------- */

typedef struct case_result {
  int written;
  int64_t gen; /* SQL cases: the sidecar's generation counter after the connection closed */
  char sha[65];
  int64_t rawlen;
  frame_facts ff;
  char meta_hex[1100];
  char *vlnames[4];
  int nvl;
} case_result;

static void hexify(const uint8_t *p, size_t n, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k + 3 <= cap; i++, k += 2) snprintf(out + k, 3, "%02x", p[i]);
  out[k] = '\0';
}

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
    pack_names(&dims, names, c->ndim);
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
  snprintf(path, sizeof path, "%s/%s.%s", dir, c->name, c->sparse ? "b2frame" : "b2nd");
  snprintf(rawpath, sizeof rawpath, "%s/raw/%s.raw", dir, c->name);
  ok = raw != NULL && write_file(rawpath, raw, (size_t)res->rawlen) == 0;
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
        res->ff.file_nbytes += file_size(q);
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
     * extension's check at close (it compacts a written file with large dead space under the
     * lock): taken when the file had dead bytes, so certainly when it still has some. */
    int64_t extra = res->gen - ntxn;
    tap_ok(extra == (res->ff.dead > 0) || (extra == 1 && !c->sparse && res->ff.dead == 0),
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

/* ---- manifest ------------------------------------------------------------------------- */

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
    else fputc(ch, f);
  }
  fputc('"', f);
}

static void json_i64s(FILE *f, const int64_t *v, int n) {
  fputc('[', f);
  for (int k = 0; k < n; k++) fprintf(f, "%s%lld", k ? ", " : "", (long long)v[k]);
  fputc(']', f);
}

/* The "values" text of a SQL case. */
static void describe_sql(const icase *c, const sqlcase *s, char *out, size_t cap) {
  char names[MAXD][32], f[512], box[512] = "";
  size_t n = 0;
  sql_colnames(c, s, names);
  sql_formula(c, s, names, f, sizeof f);
  for (int k = 0; k < c->ndim; k++)
    n += (size_t)snprintf(box + n, sizeof box - n, "%s%s %lld..%lld", k ? ", " : "", names[k],
                          (long long)s->del_lo[k], (long long)s->del_hi[k]);
  snprintf(out, cap,
           "written through SQL (statements in \"sql\"): every cell with %s < %lld set to v = %s "
           "(c_k = the coordinates; SQLite int64 arithmetic, double once a REAL enters; float32 "
           "rounds the double); then rows %s %lld..%lld: v = v * %g + %g; then the box %s reset "
           "to the fill value %s; then rows %s %lld..%lld (growth) set to v = F as above; every "
           "other cell added by growth holds the fill value",
           names[0], (long long)s->shape0, f, names[0], (long long)s->upd_lo,
           (long long)s->upd_hi, s->umul, s->uadd, box,
           *s->fill                                ? s->fill
           : find_dtype(c->dtype)->kind == K_FLOAT ? "NaN (the default)"
                                                   : "0 (the default)",
           names[0], (long long)s->grow_lo, (long long)s->grow_hi);
  if (s->grow_first) {
    size_t len = strlen(out);
    snprintf(out + len, cap - len, " (the growth statement runs right after the first INSERT)");
  }
}

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
  snprintf(file, sizeof file, "%s.%s", c->name, c->sparse ? "b2frame" : "b2nd");
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

static int write_manifest(const char *dir, const case_result *res) {
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
    fprintf(f, ",\n   \"file\": \"%s.%s\",\n", c->name, c->sparse ? "b2frame" : "b2nd");
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
static void check_manifest(const char *dir, const case_result *res) {
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

/* ---- coverage ------------------------------------------------------------------------- */

static void check_coverage(void) {
  int codecs[6] = {0}, filt[40] = {0}, frames[2] = {0}, dims[MAXD + 1] = {0}, attrs = 0,
      names = 0, uneven = 0, size1 = 0, empty = 0, zeros = 0, ok = 1;
  int dtypes[sizeof DTYPES / sizeof DTYPES[0]] = {0};
  int64_t total = 0;
  for (int i = 0; i < NCASES; i++) {
    const icase *c = &CASES[i];
    const dtype_desc *dt = find_dtype(c->dtype);
    geom g;
    codecs[c->codec]++;
    for (int k = 0; k < 6; k++) filt[c->filters[k]]++;
    frames[c->sparse]++;
    dims[c->ndim]++;
    attrs += !!(c->attrs & A_ATTRS);
    names += !!(c->attrs & A_DIMNAMES);
    zeros += c->vkind == V_ZERO && c->ndim > 0 && c->shape[0] > 0;
    dtypes[dt - DTYPES]++;
    for (int k = 0; k < c->ndim; k++) {
      uneven += c->shape[k] % c->chunks[k] != 0 && c->chunks[k] % c->blocks[k] != 0;
      size1 += c->shape[k] == 1;
      empty += c->shape[k] == 0;
    }
    geom_init(c, dt->itemsize, &g);
    total += g.nitems * dt->itemsize;
    if (g.nitems * dt->itemsize >= 1 << 20) ok = 0;
  }
  for (int k = 0; k < 6; k++) ok &= k == 3 || codecs[k] > 0;
  ok &= filt[1] && filt[2] && filt[3] && filt[4] && filt[35] && frames[0] && frames[1];
  for (int d = 1; d <= MAXD; d++) ok &= dims[d] > 0;
  for (size_t k = 0; k < sizeof dtypes / sizeof dtypes[0]; k++) ok &= dtypes[k] > 0;
  ok &= attrs && names && uneven && size1 && empty && zeros && total < 15 * (1 << 20);
  tap_ok(ok, "coverage: %d cases, every codec, filter, frame kind, 1-d..8-d, dtype; attrs, "
             "dim names, uneven, size-1, empty, all-zero; %lld raw bytes in all",
         NCASES, (long long)total);
  {
    /* the cases written through SQL */
    int n = 0, sframes[2] = {0}, scodecs[6] = {0}, ncodecs = 0, f32 = 0, ints = 0, d2 = 0,
        d3 = 0, grow = 0, txn = 0, auto_ = 0, paired = 1;
    for (int i = 0; i < NCASES; i++) {
      const icase *c = &CASES[i];
      const sqlcase *s = find_sql(c->name);
      const dtype_desc *dt = find_dtype(c->dtype);
      if ((c->write == W_SQL) != (s != NULL)) paired = 0;
      if (s == NULL) continue;
      n++;
      sframes[c->sparse]++;
      ncodecs += scodecs[c->codec]++ == 0;
      f32 += strcmp(c->dtype, "float32") == 0;
      ints += dt->kind == K_INT || dt->kind == K_UINT;
      d2 += c->ndim == 2;
      d3 += c->ndim == 3;
      grow += s->shape0 < c->shape[0] && s->grow_hi + 1 == c->shape[0];
      txn += s->txn;
      auto_ += !s->txn;
    }
    tap_ok(paired && n == NSQLCASES && n >= 4 && sframes[0] && sframes[1] && ncodecs >= 2 &&
               f32 && ints && d2 && d3 && grow == n && txn && auto_,
           "coverage: %d cases written through SQL (contiguous and sparse, %d codecs, float32 "
           "and integer dtypes, 2-d and 3-d, growth along dimension 0, autocommit and one "
           "transaction)", n, ncodecs);
  }
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

/* ---- bcolz datasets converted by caterva_import (issue 11) -----------------------------
 * tests/tools/mkbcolz (built when configure found libblosc-dev) writes bcolz
 * carrays and a ctable with the real c-blosc 1.x into a scratch directory; each chosen one is
 * converted through SQL (caterva_import, default options: chunks of the bcolz chunklen rows,
 * zstd 5 + shuffle) into bz<NN>_<name>.b2nd here, with raw/bz<NN>_<name>.raw its items as
 * stored (big-endian for '>' dtypes), and listed in manifest_bcolz.json (name, file, source,
 * dtype, shape, chunkshape, raw_file, raw_sha256). Checked here: each reopens, carries both
 * metalayers, and reads back equal to the raw bytes. */

static const struct { const char *src, *col; } BCOLZ_CASES[] = {
    {"i32_blocks", NULL}, {"i32_auto", NULL}, {"bool", NULL},    {"i8", NULL},
    {"u16", NULL},        {"u32", NULL},      {"i64", NULL},     {"u64", NULL},
    {"f16", NULL},        {"f32", NULL},      {"f64", NULL},     {"c64", NULL},
    {"be_i4", NULL},      {"be_f8", NULL},    {"s5", NULL},      {"u3", NULL},
    {"dt_ns", NULL},      {"td_s", NULL},     {"nd_f8", NULL},   {"nd_s5", NULL},
    {"clevel0", NULL},    {"tiny", NULL},     {"empty", NULL},   {"exact", NULL},
    {"table", "id"},      {"table", "price"}, {"table", "name"}, {"table", "when"},
    {"table", "ok"},
};

static int bcolz_has_meta(caterva_array *a, const char *name) {
  const uint8_t *p;
  int32_t n;
  return caterva_schunk_meta_get(caterva_array_schunk(a), name, &p, &n) >= 0;
}

/* A build without libsnappy (configure --without-snappy) refuses the snappy carray u32. */
static int g_bcolz_refused;

/* Convert one case; returns 1 when written and checked (or, for a snappy carray in a build
 * without libsnappy, refused with "built without snappy" and nothing written). */
static int bcolz_case(caterva_ctx *ctx, sqlite3 *db, const char *data, const char *dir, int k,
                      FILE *man) {
  char src[4300], name[200], file[4400], rawsrc[4400], rawdst[4400], sql[9200], hex[65];
  const char *s = BCOLZ_CASES[k].src, *col = BCOLZ_CASES[k].col;
  char *msg = NULL;
  size_t rl = 0;
  uint8_t *raw, *got = NULL;
  caterva_array *a = NULL;
  int ok = 0;
  snprintf(name, sizeof name, "bz%02d_%s%s%s", k + 1, s, col ? "_" : "", col ? col : "");
  snprintf(src, sizeof src, "%s/%s", data, s);
  snprintf(file, sizeof file, "%s/%s.b2nd", dir, name);
  snprintf(rawsrc, sizeof rawsrc, "%s/%s%s%s.raw", data, s, col ? "." : "", col ? col : "");
  snprintf(rawdst, sizeof rawdst, "%s/raw/%s.raw", dir, name);
  snprintf(sql, sizeof sql, "SELECT caterva_import('%s', '%s', %s%s%s)", src, file,
           col ? "'" : "", col ? col : "NULL", col ? "'" : "");
  raw = slurp(rawsrc, &rl);
  if (!cat_codec_available(CATERVA_SNAPPY) && strcmp(s, "u32") == 0) {   /* mkbcolz: snappy */
    ok = raw != NULL && sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK && msg != NULL &&
         strstr(msg, "built without snappy") != NULL && access(file, F_OK) != 0;
    tap_diag("%s: %s", name, msg ? msg : "converted, but this build has no snappy");
    g_bcolz_refused += ok;
    goto leave;
  }
  if (raw == NULL || write_file(rawdst, raw, rl) != 0 ||
      sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    tap_diag("%s: %s", name, msg ? msg : "cannot read or write the raw bytes");
    goto leave;
  }
  if (caterva_array_open(ctx, file, CATERVA_OPEN_READ, &a) != 0) goto leave;
  got = malloc(rl + 1);
  ok = got && bcolz_has_meta(a, "caterva") && bcolz_has_meta(a, "b2nd") &&
       caterva_array_nitems(a) * caterva_array_itemsize(a) == (int64_t)rl &&
       caterva_array_to_buffer(ctx, a, got, (int64_t)rl) == 0 && memcmp(got, raw, rl) == 0;
  if (ok) {
    int nd = caterva_array_ndim(a);
    int64_t v[CATERVA_MAX_DIM];
    cat_sha256_hex(raw, rl, hex);
    fprintf(man, "%s\n  {\"name\": \"%s\", \"file\": \"%s.b2nd\", \"source\": \"bcolz %s%s%s "
            "(mkbcolz, c-blosc 1.x) via caterva_import\", \"dtype\": ", k ? "," : "", name, name,
            s, col ? " column " : "", col ? col : "");
    json_str(man, caterva_array_dtype(a));
    fprintf(man, ", \"shape\": ");
    json_i64s(man, caterva_array_shape(a), nd);
    for (int d = 0; d < nd; d++) v[d] = caterva_array_chunkshape(a)[d];
    fprintf(man, ", \"chunkshape\": ");
    json_i64s(man, v, nd);
    fprintf(man, ", \"raw_file\": \"raw/%s.raw\", \"raw_nbytes\": %zu, \"raw_sha256\": \"%s\"}",
            name, rl, hex);
  }
leave:
  sqlite3_free(msg);
  caterva_array_free(a);
  free(got);
  free(raw);
  return ok;
}

static void write_bcolz_cases(caterva_ctx *ctx, const char *dir, const char *argv0) {
  char mk[4096], tmp[] = "/tmp/interop_bcolz.XXXXXX", data[64], path[4200];
  const char *slash = strrchr(argv0, '/');
  int n = 0, total = (int)(sizeof BCOLZ_CASES / sizeof BCOLZ_CASES[0]), status;
  sqlite3 *db = NULL;
  FILE *man;
  snprintf(mk, sizeof mk, "%.*s/../tools/mkbcolz", slash ? (int)(slash - argv0) : 1,
           slash ? argv0 : ".");
  snprintf(path, sizeof path, "%s/manifest_bcolz.json", dir);
  remove(path);
  if (access(mk, X_OK) != 0) {
    tap_ok(1, "# SKIP bcolz conversions: %s not built (no libblosc-dev)", mk);
    return;
  }
  if (mkdtemp(tmp) == NULL) {
    tap_ok(0, "bcolz conversions: scratch directory");
    return;
  }
  snprintf(data, sizeof data, "%s/data", tmp);
  snprintf(path, sizeof path, "'%s' '%s' >/dev/null", mk, data);
  status = system(path);
  man = NULL;
  if (status == 0 && sqlite3_open(":memory:", &db) == SQLITE_OK &&
      sqlite3_enable_load_extension(db, 1) == SQLITE_OK &&
      sqlite3_load_extension(db, g_ext_path, NULL, NULL) == SQLITE_OK) {
    snprintf(path, sizeof path, "%s/manifest_bcolz.json", dir);
    man = fopen(path, "w");
  }
  if (man != NULL) {
    fprintf(man, "{\n \"generator\": \"caterva-sqlite caterva_import of bcolz datasets written by "
            "tests/tools/mkbcolz\",\n \"byte_order\": \"raw files hold the items as stored: "
            "little-endian, except '>' dtypes\",\n \"cases\": [");
    for (int k = 0; k < total; k++) n += bcolz_case(ctx, db, data, dir, k, man);
    fprintf(man, "\n ]\n}\n");
    fclose(man);
  }
  sqlite3_close(db);
  tap_ok(man != NULL && n == total, "bcolz datasets converted by caterva_import: %d of %d reopen "
         "with both metalayers and equal their raw bytes%s", n - g_bcolz_refused, total,
         g_bcolz_refused ? " (the snappy one refused: this build has no libsnappy)" : "");
  rm_tree(tmp);
}

/* Where the extension is: CATERVA_EXT, $top_builddir/.libs/caterva, or ../../.libs/caterva
 * from this program's directory (tests/interop/ of the build tree). */
static void find_extension(const char *argv0) {
  const char *e = getenv("CATERVA_EXT"), *top = getenv("top_builddir");
  if (e != NULL && *e) {
    snprintf(g_ext_path, sizeof g_ext_path, "%s", e);
  } else if (top != NULL && *top) {
    snprintf(g_ext_path, sizeof g_ext_path, "%s/.libs/caterva", top);
  } else {
    const char *slash = strrchr(argv0, '/');
    int n = slash ? (int)(slash - argv0) : 1;
    snprintf(g_ext_path, sizeof g_ext_path, "%.*s/../../.libs/caterva", n, slash ? argv0 : ".");
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
  if (!tap_ok(mkdir_p(dir) == 0, "output directory %s", dir)) return tap_done();
  clean_out(dir);
  tap_ok(mkdir_p(raw_dir) == 0, "raw directory %s", raw_dir);
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

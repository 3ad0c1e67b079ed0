/*
 * interop_cases.c -- the cases of the interop writer test: about 40 arrays written through the
 * library API (CASES) and 4 written through SQL (SQLCASES, each with its CASES entry), the
 * names the manifest gives codecs, filters and split modes, and the check that the tables
 * cover what they are meant to.
 */
#include "interop.h"

#include <string.h>

/* ---- dtypes --------------------------------------------------------------------------- */

static const dtype_desc DTYPES[] = {
    {"int8", "|i1", 1, K_INT},     {"int16", "<i2", 2, K_INT},    {"int32", "<i4", 4, K_INT},
    {"int64", "<i8", 8, K_INT},    {"uint8", "|u1", 1, K_UINT},   {"uint16", "<u2", 2, K_UINT},
    {"uint32", "<u4", 4, K_UINT},  {"uint64", "<u8", 8, K_UINT},  {"float32", "<f4", 4, K_FLOAT},
    {"float64", "<f8", 8, K_FLOAT}, {"bool", "|b1", 1, K_BOOL},
};

const dtype_desc *find_dtype(const char *name) {
  for (size_t i = 0; i < sizeof DTYPES / sizeof DTYPES[0]; i++)
    if (strcmp(DTYPES[i].name, name) == 0) return &DTYPES[i];
  return NULL;
}

/* ---- the cases ------------------------------------------------------------------------ */

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

const icase CASES[] = {
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
    {"w46_sql_f64_2d_zstd1_valuefill_growth", CONT, "float64", 2, {40, 12}, {2, 6}, {1, 3}, ZSTD,
     1, F_SHUF, M0, FC, V_SQL, 0, 0, W_SQL, 0, 1, 0,
     "written through SQL, autocommit statements; fill 2.5: growth from 4 to 40 rows leaves 34 "
     "chunks holding only the fill, each stored as a repeated-value chunk"},
    {"w47_sql_i16_3d_lz4_valuefill_sparse_txn", SPARSE, "int16", 3, {30, 5, 4}, {3, 5, 2},
     {1, 5, 2}, LZ4, 5, F_SHUF, M0, FC, V_SQL, 0, 0, W_SQL, A_DIMNAMES, 1, 0,
     "written through SQL in one transaction; fill -3: growth from 3 to 30 rows leaves 16 "
     "chunk files holding only the fill (repeated-value chunks)"},
};
_Static_assert(sizeof CASES / sizeof CASES[0] == NCASES, "NCASES counts CASES");

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
 * UPDATE and DELETE replaced, and the old indexes and trailers): it is written with
 * max_dead=100 (the default, 1, compacts at nearly every commit). With txn, everything after
 * the first INSERT is one BEGIN ... COMMIT that also holds SAVEPOINT s; UPDATE t SET value =
 * value + 1; INSERT of a row past the final extent; ROLLBACK TO s; RELEASE s (no trace may
 * remain). */
const sqlcase SQLCASES[] = {
    {"w42_sql_f32_2d_lz4_nanfill_growth", 50, "codec=lz4, clevel=5, max_dead=100", "y,x", "", {7, 3, 0}, 0,
     1000, 0.25, -20, 10, 14, 2, 1, {20, 0, 0}, {24, 19, 0}, 56, 63, 0, 1},
    {"w43_sql_i32_3d_zstd3_bitshuffle_sparse_txn", 12,
     "codec=zstd, clevel=3, filters='bitshuffle', sparse=1", "t,lat,lon", "-7", {1000, 31, 1},
     5, 100003, 1, -50000, 3, 5, 3, -2, {0, 0, 0}, {4, 6, 7}, 15, 19, 1, 0},
    {"w44_sql_f64_3d_blosclz9_zerofill_growth", 10, "codec=blosclz, clevel=9", "", "0",
     {100, 10, 1}, 0, 997, 0.5, 1, 2, 3, -1, 0.5, {4, 0, 0}, {7, 5, 4}, 12, 15, 0, 0},
    {"w45_sql_u16_2d_lz4hc9_nofilter_sparse_txn", 30,
     "codec=lz4hc, clevel=9, filters=none, sparse=1", "row,col", "", {37, 1, 0}, 11, 60000, 1,
     0, 5, 9, 1, 100, {10, 16, 0}, {19, 31, 0}, 30, 40, 1, 0},
    {"w46_sql_f64_2d_zstd1_valuefill_growth", 4, "codec=zstd, clevel=1", "", "2.5", {12, 1, 0},
     0, 1000, 0.5, -3, 1, 2, 2, 1, {3, 6, 0}, {3, 11, 0}, 38, 39, 0, 0},
    {"w47_sql_i16_3d_lz4_valuefill_sparse_txn", 3, "codec=lz4, clevel=5, sparse=1", "t,y,x",
     "-3", {20, 4, 1}, 0, 200, 1, -100, 0, 1, 1, 7, {2, 0, 0}, {2, 4, 1}, 28, 29, 1, 0},
};
_Static_assert(sizeof SQLCASES / sizeof SQLCASES[0] == NSQLCASES,
               "NSQLCASES counts SQLCASES");

const sqlcase *find_sql(const char *name) {
  for (int i = 0; i < NSQLCASES; i++)
    if (strcmp(SQLCASES[i].name, name) == 0) return &SQLCASES[i];
  return NULL;
}

const char *case_ext(const icase *c) {
  return c->sparse ? "b2frame" : "b2nd";
}

/* ---- names ---------------------------------------------------------------------------- */

const char *codec_name(int c) {
  switch (c) {
  case BLZ: return "blosclz";
  case LZ4: return "lz4";
  case LZ4HC: return "lz4hc";
  case ZLIB: return "zlib";
  case ZSTD: return "zstd";
  default: return "?";
  }
}
int codec_format(int c) {
  return c == BLZ ? 0 : c == LZ4 || c == LZ4HC ? 1 : c == ZLIB ? 3 : 4;
}

const char *filter_name(int f) {
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
const char *split_name(int s) {
  switch (s) {
  case 1: return "ALWAYS_SPLIT";
  case 2: return "NEVER_SPLIT";
  case 3: return "AUTO_SPLIT";
  default: return "FORWARD_COMPAT_SPLIT";
  }
}
int has_filter(const icase *c, int f) {
  for (int k = 0; k < 6; k++)
    if (c->filters[k] == f) return 1;
  return 0;
}

/* ---- coverage ------------------------------------------------------------------------- */

void check_coverage(void) {
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

/*
 * test_filters.c -- the filter stages of core/filters.c against naive implementations written
 * straight from the formulas of shared/spec/blosc2-formats.md §1.7, round trips, and
 * byte-for-byte agreement of every SIMD level the CPU has with the generic byte shuffle.
 *
 * Every output buffer is followed by guard bytes that must survive each call.
 */
#include "filters.h"

#include "caterva.h"
#include "tap.h"
#include "testrng.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GUARD 32
#define GUARD_BYTE 0xA5

static const int32_t k_typesizes[] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
                                      12, 13, 14, 15, 16, 17, 24, 32, 255};
static const int32_t k_sizes[] = {0, 1, 7, 63, 64, 65, 851, 1000, 4099, 65536 + 13};
#define N_TYPESIZES (int)(sizeof k_typesizes / sizeof k_typesizes[0])
#define N_SIZES (int)(sizeof k_sizes / sizeof k_sizes[0])

/* ---- helpers ------------------------------------------------------------------------- */

static uint64_t rng_state = UINT64_C(0x9E3779B97F4A7C15);

static uint8_t rnd8(void) {
  return (uint8_t)(test_rng_next(&rng_state) >> 24);
}

static void fill_random(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = rnd8();
}

/* An output buffer: n usable bytes, pre-filled with junk, then GUARD guard bytes. */
static uint8_t *out_buf(int32_t n) {
  uint8_t *p = malloc((size_t)n + GUARD);
  if (p == NULL) {
    fprintf(stderr, "out of memory\n");
    exit(2);
  }
  memset(p, 0x5A, (size_t)n);
  memset(p + n, GUARD_BYTE, GUARD);
  return p;
}

static uint8_t *in_buf(int32_t n) {
  uint8_t *p = out_buf(n);
  fill_random(p, (size_t)n);
  return p;
}

static int guard_ok(const uint8_t *p, int32_t n) {
  for (int i = 0; i < GUARD; i++)
    if (p[n + i] != GUARD_BYTE) return 0;
  return 1;
}

/* Equal over n bytes, and the guard of a intact. */
static int same(const uint8_t *a, const uint8_t *b, int32_t n) {
  return guard_ok(a, n) && (n == 0 || memcmp(a, b, (size_t)n) == 0);
}

/* ---- naive references, one line of spec each ---------------------------------------- */

/* SHUFFLE: out[j*q + i] = in[i*ts + j]; the last n % ts bytes copied. */
static void ref_shuffle(int32_t ts, int32_t n, const uint8_t *in, uint8_t *out) {
  int32_t q = n / ts;
  for (int32_t i = 0; i < q; i++)
    for (int32_t j = 0; j < ts; j++) out[j * q + i] = in[i * ts + j];
  for (int32_t b = q * ts; b < n; b++) out[b] = in[b];
}

/* BITSHUFFLE: ne = floor(n/ts) rounded down to a multiple of 8;
 * out[r*(ne/8) + i/8] bit (i%8) = (in[i*ts + j] >> k) & 1 with r = 8j + k. */
static void ref_bitshuffle(int32_t ts, int32_t n, const uint8_t *in, uint8_t *out) {
  int32_t ne = n / ts;
  ne -= ne % 8;
  memset(out, 0, (size_t)ne * (size_t)ts);
  for (int32_t i = 0; i < ne; i++)
    for (int32_t j = 0; j < ts; j++)
      for (int k = 0; k < 8; k++) {
        int bit = (in[i * ts + j] >> k) & 1;
        int32_t r = 8 * j + k;
        out[r * (ne / 8) + i / 8] |= (uint8_t)(bit << (i % 8));
      }
  for (int32_t b = ne * ts; b < n; b++) out[b] = in[b];
}

/* DELTA element width: ts if ts in {1,2,4,8}, else 8 if ts % 8 == 0, else 1. */
static int32_t ref_delta_width(int32_t ts) {
  if (ts == 1 || ts == 2 || ts == 4 || ts == 8) return ts;
  return ts % 8 == 0 ? 8 : 1;
}

/* DELTA encoding, element by element: block 0 XORs each element with the previous one (the
 * first is kept); other blocks XOR with ref. The n % e trailing bytes are copied. */
static void ref_delta_encode(int32_t ts, int block0, const uint8_t *ref, int32_t n,
                             const uint8_t *in, uint8_t *out) {
  int32_t e = ref_delta_width(ts), nel = n / e;
  for (int32_t el = 0; el < nel; el++)
    for (int32_t b = 0; b < e; b++) {
      int32_t at = el * e + b;
      if (block0)
        out[at] = el == 0 ? in[at] : (uint8_t)(in[at] ^ in[at - e]);
      else
        out[at] = (uint8_t)(in[at] ^ ref[at]);
    }
  for (int32_t b = nel * e; b < n; b++) out[b] = in[b];
}

/* BYTEDELTA: L = n/ts; per plane s, out[first] = in[first], out[x] = in[x] - in[x-1] mod 256;
 * the rest copied. */
static void ref_bytedelta(int32_t ts, int32_t n, const uint8_t *in, uint8_t *out) {
  int32_t L = n / ts;
  for (int32_t s = 0; s < ts; s++)
    for (int32_t x = s * L; x < s * L + L; x++)
      out[x] = x == s * L ? in[x] : (uint8_t)(in[x] - in[x - 1]);
  for (int32_t b = L * ts; b < n; b++) out[b] = in[b];
}

/* ---- byte shuffle --------------------------------------------------------------------- */

static const char *level_name(int level) {
  return level == CAT_SIMD_AVX2 ? "avx2" : level == CAT_SIMD_SSE2 ? "sse2" : "generic";
}

static void test_shuffle_one(int32_t ts, int32_t n, int best) {
  uint8_t *in = in_buf(n), *want = out_buf(n), *got = out_buf(n), *back = out_buf(n);

  ref_shuffle(ts, n, in, want);
  for (int level = CAT_SIMD_GENERIC; level <= best; level++) {
    memset(got, 0x5A, (size_t)n);
    cat_shuffle_at(level, ts, n, in, got);
    tap_ok(same(got, want, n), "shuffle %s ts=%d n=%d equals the spec formula",
           level_name(level), ts, n);
    memset(back, 0x5A, (size_t)n);
    cat_unshuffle_at(level, ts, n, want, back);
    tap_ok(same(back, in, n), "unshuffle %s ts=%d n=%d restores the input", level_name(level),
           ts, n);
  }
  memset(got, 0x5A, (size_t)n);
  cat_shuffle(ts, n, in, got);
  memset(back, 0x5A, (size_t)n);
  cat_unshuffle(ts, n, got, back);
  tap_ok(same(got, want, n) && same(back, in, n), "shuffle/unshuffle (dispatched) ts=%d n=%d",
         ts, n);
  free(in), free(want), free(got), free(back);
}

/* Element counts around the vector widths (16 and 32) and their multiples, for the sizes
 * with vector code: every combination of vector groups, scalar elements and tail bytes. */
static void test_shuffle_vector_edges(int best) {
  static const int32_t tss[] = {2, 4, 8, 16};
  int bad = 0, runs = 0;
  for (int t = 0; t < 4; t++)
    for (int32_t q = 0; q <= 100; q++)
      for (int32_t extra = 0; extra < tss[t]; extra += (tss[t] > 4 ? 3 : 1)) {
        int32_t ts = tss[t], n = q * ts + extra;
        uint8_t *in = in_buf(n), *want = out_buf(n), *got = out_buf(n), *back = out_buf(n);
        ref_shuffle(ts, n, in, want);
        for (int level = CAT_SIMD_GENERIC; level <= best; level++) {
          cat_shuffle_at(level, ts, n, in, got);
          cat_unshuffle_at(level, ts, n, want, back);
          bad += !same(got, want, n) || !same(back, in, n);
          runs++;
        }
        free(in), free(want), free(got), free(back);
      }
  tap_ok(bad == 0, "shuffle/unshuffle around vector widths: %d of %d runs wrong", bad, runs);
}

/* The level argument caps the level: asking for more than the CPU has must still work. */
static void test_shuffle_levels(int best) {
  int32_t ts = 8, n = 8 * 77 + 5;
  uint8_t *in = in_buf(n), *want = out_buf(n), *got = out_buf(n);
  ref_shuffle(ts, n, in, want);
  cat_shuffle_at(CAT_SIMD_AVX2 + 5, ts, n, in, got);
  tap_ok(same(got, want, n), "shuffle at a level above AVX2 falls back");
  cat_shuffle_at(-1, ts, n, in, got);
  tap_ok(same(got, want, n), "shuffle at a negative level is generic");
  tap_ok(best >= CAT_SIMD_GENERIC && best <= CAT_SIMD_AVX2, "cat_simd_best() = %d is a level",
         best);
#if defined(__x86_64__)
  tap_ok(best >= CAT_SIMD_SSE2, "x86-64 always has SSE2 (best = %d)", best);
#endif
  free(in), free(want), free(got);
}

/* ---- bit shuffle --------------------------------------------------------------------------- */

static void test_bitshuffle_one(int32_t ts, int32_t n) {
  uint8_t *in = in_buf(n), *want = out_buf(n), *got = out_buf(n), *back = out_buf(n);
  ref_bitshuffle(ts, n, in, want);
  cat_bitshuffle(ts, n, in, got);
  tap_ok(same(got, want, n), "bitshuffle ts=%d n=%d equals the spec formula", ts, n);
  cat_bitunshuffle(ts, n, want, back);
  tap_ok(same(back, in, n), "bitunshuffle ts=%d n=%d restores the input", ts, n);
  free(in), free(want), free(got), free(back);
}

/* A hand-worked case: ts=1, 8 elements whose bit k is set only in element k: the bit-rows
 * are 0x01, 0x02, ... 0x80 (row k holds bit k of the elements, element i at bit i). */
static void test_bitshuffle_known(void) {
  uint8_t in[9] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x77};
  uint8_t want[9] = {0x01, 0x02, 0x04, 0x08, 0x10, 0x20, 0x40, 0x80, 0x77};
  uint8_t in2[8] = {0xFF, 0, 0, 0, 0, 0, 0, 0x01};
  uint8_t want2[8] = {0x81, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01};
  uint8_t got[9];
  cat_bitshuffle(1, 9, in, got);
  tap_ok(memcmp(got, want, 9) == 0, "bitshuffle of a diagonal bit matrix, tail byte kept");
  cat_bitshuffle(1, 8, in2, got);
  tap_ok(memcmp(got, want2, 8) == 0, "bitshuffle puts element i at bit i of each row");
}

/* ---- DELTA ------------------------------------------------------------------------------------ */

static void test_delta_one(int32_t ts, int32_t n) {
  uint8_t *blk0 = in_buf(n), *blk1 = in_buf(n);
  uint8_t *want0 = out_buf(n), *want1 = out_buf(n), *enc0 = out_buf(n), *enc1 = out_buf(n);

  ref_delta_encode(ts, 1, NULL, n, blk0, want0);
  ref_delta_encode(ts, 0, blk0, n, blk1, want1);
  cat_delta_encode(ts, 0, blk0, n, blk0, enc0);
  cat_delta_encode(ts, 3, blk0, n, blk1, enc1);
  tap_ok(same(enc0, want0, n), "delta encode block 0 ts=%d n=%d equals the formula", ts, n);
  tap_ok(same(enc1, want1, n), "delta encode block 3 ts=%d n=%d equals the formula", ts, n);

  /* Decode as the reference does: block 0 first, then block 3 against decoded block 0. */
  cat_delta_decode(ts, 0, NULL, n, enc0);
  cat_delta_decode(ts, 3, enc0, n, enc1);
  tap_ok(same(enc0, blk0, n), "delta decode block 0 ts=%d n=%d restores it", ts, n);
  tap_ok(same(enc1, blk1, n), "delta decode block 3 ts=%d n=%d restores it", ts, n);
  free(blk0), free(blk1), free(want0), free(want1), free(enc0), free(enc1);
}

/* Hand-worked: ts=2 (16-bit elements), n=7: the last byte is not an element and is kept. */
static void test_delta_known(void) {
  const uint8_t in[7] = {0x12, 0x34, 0x13, 0x36, 0xFF, 0x00, 0xAB};
  const uint8_t want[7] = {0x12, 0x34, 0x01, 0x02, 0xEC, 0x36, 0xAB};
  const uint8_t ref[7] = {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF};
  const uint8_t want1[7] = {0xED, 0xCB, 0xEC, 0xC9, 0x00, 0xFF, 0xAB};
  uint8_t got[17];
  cat_delta_encode(2, 0, in, 7, in, got);
  tap_ok(memcmp(got, want, 7) == 0, "delta ts=2 block 0 XORs 16-bit neighbours, tail kept");
  cat_delta_encode(2, 1, ref, 7, in, got);
  tap_ok(memcmp(got, want1, 7) == 0, "delta ts=2 block 1 XORs the reference, tail kept");
  /* ts=12 uses 1-byte elements, ts=24 8-byte ones. */
  const uint8_t in12[3] = {1, 3, 7};
  cat_delta_encode(12, 0, in12, 3, in12, got);
  tap_ok(got[0] == 1 && got[1] == 2 && got[2] == 4, "delta ts=12 works on single bytes");
  uint8_t in24[17];
  for (int i = 0; i < 17; i++) in24[i] = (uint8_t)(i + 1);
  cat_delta_encode(24, 0, in24, 17, in24, got);
  tap_ok(got[7] == 8 && got[8] == (9 ^ 1) && got[15] == (16 ^ 8) && got[16] == 17,
         "delta ts=24 works on 8-byte elements and keeps the 17th byte");
}

/* ---- TRUNC_PREC ------------------------------------------------------------------------------ */

static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint32_t get32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static uint64_t get64(const uint8_t *p) {
  return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void test_trunc_prec(void) {
  uint8_t in[4 * 3 + 2], out[4 * 3 + 2];
  put32(in, 0x3F9E0419u);     /* 1.2345f */
  put32(in + 4, 0xBB23D70Au); /* -2.5e-3f */
  put32(in + 8, 0x7FC00001u); /* a NaN with a low payload bit */
  in[12] = 0xEE, in[13] = 0xFF;

  int rc = cat_trunc_prec(4, 10, 14, in, out);
  tap_ok(rc == CATERVA_OK && get32(out) == 0x3F9E0000u && get32(out + 4) == 0xBB23C000u &&
             get32(out + 8) == 0x7FC00000u,
         "trunc_prec float p=10 keeps 10 mantissa bits (rc=%d, %08x)", rc, get32(out));
  tap_ok(out[12] == 0xEE && out[13] == 0xFF, "trunc_prec copies the 2 leftover bytes");
  rc = cat_trunc_prec(4, 1, 12, in, out);
  tap_ok(rc == CATERVA_OK && get32(out + 4) == 0xBB000000u, "trunc_prec float p=1");
  rc = cat_trunc_prec(4, -3, 12, in, out);
  tap_ok(rc == CATERVA_OK && get32(out) == 0x3F9E0418u && get32(out + 4) == 0xBB23D708u,
         "trunc_prec float p=-3 zeroes 3 bits");
  rc = cat_trunc_prec(4, 23, 12, in, out);
  tap_ok(rc == CATERVA_OK && memcmp(in, out, 12) == 0, "trunc_prec float p=23 is identity");
  rc = cat_trunc_prec(4, -22, 12, in, out);
  tap_ok(rc == CATERVA_OK && get32(out) == 0x3F800000u, "trunc_prec float p=-22 keeps 1 bit");

  uint8_t d[8], dout[8];
  put64(d, UINT64_C(0x400921FB54442D18)); /* pi */
  rc = cat_trunc_prec(8, 20, 8, d, dout);
  tap_ok(rc == CATERVA_OK && get64(dout) == UINT64_C(0x400921FB00000000),
         "trunc_prec double p=20 zeroes 32 bits");
  rc = cat_trunc_prec(8, -8, 8, d, dout);
  tap_ok(rc == CATERVA_OK && get64(dout) == UINT64_C(0x400921FB54442D00),
         "trunc_prec double p=-8 zeroes 8 bits");
  rc = cat_trunc_prec(8, 52, 8, d, dout);
  tap_ok(rc == CATERVA_OK && get64(dout) == get64(d), "trunc_prec double p=52 is identity");

  static const struct {
    int32_t ts;
    int8_t p;
  } bad[] = {{4, 0},  {4, 24}, {4, -23}, {4, -24}, {4, -128}, {4, 127}, {8, 0},
             {8, 53}, {8, -52}, {8, -128}, {2, 5},  {1, 1},    {16, 5},  {0, 5}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    memset(dout, 0x33, sizeof dout);
    rc = cat_trunc_prec(bad[i].ts, bad[i].p, 8, d, dout);
    tap_ok(rc == CATERVA_E_INVALID && dout[0] == 0x33 && dout[7] == 0x33,
           "trunc_prec ts=%d p=%d is rejected without writing (rc=%d)", bad[i].ts, bad[i].p,
           rc);
  }
}

/* ---- BYTEDELTA ----------------------------------------------------------------------------- */

static void test_bytedelta_one(int32_t ts, int32_t n) {
  uint8_t *in = in_buf(n), *want = out_buf(n), *got = out_buf(n), *back = out_buf(n);
  ref_bytedelta(ts, n, in, want);
  cat_bytedelta_encode(ts, n, in, got);
  tap_ok(same(got, want, n), "bytedelta ts=%d n=%d equals the formula", ts, n);
  cat_bytedelta_decode(ts, n, want, back);
  tap_ok(same(back, in, n), "bytedelta decode ts=%d n=%d restores the input", ts, n);
  free(in), free(want), free(got), free(back);
}

static void test_bytedelta_known(void) {
  const uint8_t in[7] = {1, 3, 6, 10, 5, 255, 99};
  const uint8_t want[7] = {1, 2, 3, 10, 251, 250, 99};
  uint8_t got[7];
  cat_bytedelta_encode(2, 7, in, got);
  tap_ok(memcmp(got, want, 7) == 0, "bytedelta ts=2 n=7: planes of 3, wraps mod 256, tail kept");
}

/* ---- main ------------------------------------------------------------------------------------ */

/* cat_unshuffle_planes from planes in separate buffers equals cat_unshuffle of the planes
** laid end to end, for every plane length up to 200 (the vector loop and its tail). */
static void test_unshuffle_planes(void) {
  static const int32_t ts_list[] = {4, 2, 8, 3};
  int ok = 1;
  for (size_t t = 0; t < sizeof ts_list / sizeof ts_list[0]; t++) {
    int32_t ts = ts_list[t];
    for (int32_t q = 0; q <= 200; q++) {
      int32_t n = q * ts;
      uint8_t *joined = malloc((size_t)n + 1), *want = out_buf(n), *got = out_buf(n);
      uint8_t *sep[8];
      const uint8_t *planes[8];
      fill_random(joined, (size_t)n);
      for (int32_t j = 0; j < ts; j++) { /* each plane alone, at an odd address */
        sep[j] = malloc((size_t)q + 1);
        memcpy(sep[j] + 1, joined + (size_t)j * (size_t)q, (size_t)q);
        planes[j] = sep[j] + 1;
      }
      cat_unshuffle(ts, n, joined, want);
      cat_unshuffle_planes(ts, q, planes, got);
      if (memcmp(want, got, (size_t)n) != 0 || !guard_ok(got, n)) ok = 0;
      for (int32_t j = 0; j < ts; j++) free(sep[j]);
      free(joined);
      free(want);
      free(got);
    }
  }
  tap_ok(ok, "unshuffle from separate planes (ts 4, 2, 8, 3; 0..200 items) equals unshuffle "
         "of the planes end to end, nothing written past the end");
}

int main(void) {
  int best = cat_simd_best();
  test_unshuffle_planes();
  tap_diag("best SIMD level on this CPU: %s", level_name(best));

  for (int t = 0; t < N_TYPESIZES; t++)
    for (int s = 0; s < N_SIZES; s++) test_shuffle_one(k_typesizes[t], k_sizes[s], best);
  test_shuffle_vector_edges(best);
  test_shuffle_levels(best);

  test_bitshuffle_known();
  for (int t = 0; t < N_TYPESIZES; t++)
    for (int s = 0; s < N_SIZES; s++) test_bitshuffle_one(k_typesizes[t], k_sizes[s]);

  test_delta_known();
  for (int t = 0; t < N_TYPESIZES; t++)
    for (int s = 0; s < N_SIZES; s++) test_delta_one(k_typesizes[t], k_sizes[s]);

  test_trunc_prec();

  test_bytedelta_known();
  for (int t = 0; t < N_TYPESIZES; t++)
    for (int s = 0; s < N_SIZES; s++) test_bytedelta_one(k_typesizes[t], k_sizes[s]);

  return tap_done();
}

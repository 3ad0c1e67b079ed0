/*
 * filters.c -- the Blosc2 filter stages: byte shuffle (generic, SSE2, AVX2), bit shuffle,
 * DELTA, TRUNC_PREC and BYTEDELTA. Exact transforms: shared/spec/blosc2-formats.md §1.7.
 *
 * Every stage works on one block of n bytes. Bytes beyond the last whole unit a stage
 * understands (element, group of 8 elements, byte plane) pass through unchanged, so every
 * stage writes all of dst[0..n) and nothing else.
 *
 * The byte shuffle is on the hot path of every read, so it has vector versions selected at
 * run time. They are compiled through target attributes (no -mavx2 needed) and must give
 * exactly the bytes of the generic code: vectors cover whole groups of 16 or 32 elements,
 * the remaining elements go through the generic loops, the trailing n % ts bytes are copied.
 */
#include "filters.h"

#include "caterva.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define CAT_HAVE_X86 1
#include <immintrin.h>
#endif

#if defined(__GNUC__)
#define CAT_RESTRICT __restrict__
#define CAT_INLINE inline __attribute__((always_inline))
#else
#define CAT_RESTRICT
#define CAT_INLINE inline
#endif

/* ---- little-endian words ------------------------------------------------------------ */

/* Filters see the stored (little-endian) bytes; these keep word-at-a-time code portable. */
static inline uint64_t ld_le64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  return v;
}

static inline void st_le64(uint8_t *p, uint64_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap64(v);
#endif
  memcpy(p, &v, 8);
}

static inline uint32_t ld_le32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  return v;
}

static inline void st_le32(uint8_t *p, uint32_t v) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  v = __builtin_bswap32(v);
#endif
  memcpy(p, &v, 4);
}

/* Copy the bytes [from, n) that a stage leaves untransformed. */
static inline void copy_tail(size_t from, size_t n, const uint8_t *src, uint8_t *dst) {
  if (n > from) memcpy(dst + from, src + from, n - from);
}

/* XOR a[] and b[] into dst[] over len bytes, a word at a time (XOR needs no byte order).
 * dst may be a. */
static void xor_bytes(uint8_t *dst, const uint8_t *a, const uint8_t *b, size_t len) {
  size_t i = 0;
  for (; len - i >= 8; i += 8) {
    uint64_t x, y;
    memcpy(&x, a + i, 8);
    memcpy(&y, b + i, 8);
    x ^= y;
    memcpy(dst + i, &x, 8);
  }
  for (; i < len; i++) dst[i] = a[i] ^ b[i];
}

/* Exchange the bit blocks of *b selected by m with the blocks of *a s bits higher. */
static CAT_INLINE void swap_blocks(uint64_t *a, uint64_t *b, unsigned s, uint64_t m) {
  uint64_t t = ((*a >> s) ^ *b) & m;
  *b ^= t;
  *a ^= t << s;
}

/* Transpose the 8x8 byte matrix r (byte c of r[k], little-endian, is entry (k, c)): after
 * it, byte c of r[k] is the old byte k of r[c]. Round d swaps d-byte blocks between rows
 * d apart (d = 1, 2, 4). */
static CAT_INLINE void byte_transpose8(uint64_t r[8]) {
  const uint64_t m1 = UINT64_C(0x00FF00FF00FF00FF), m2 = UINT64_C(0x0000FFFF0000FFFF),
                 m4 = UINT64_C(0x00000000FFFFFFFF);
  swap_blocks(&r[0], &r[1], 8, m1);
  swap_blocks(&r[2], &r[3], 8, m1);
  swap_blocks(&r[4], &r[5], 8, m1);
  swap_blocks(&r[6], &r[7], 8, m1);
  swap_blocks(&r[0], &r[2], 16, m2);
  swap_blocks(&r[1], &r[3], 16, m2);
  swap_blocks(&r[4], &r[6], 16, m2);
  swap_blocks(&r[5], &r[7], 16, m2);
  swap_blocks(&r[0], &r[4], 32, m4);
  swap_blocks(&r[1], &r[5], 32, m4);
  swap_blocks(&r[2], &r[6], 32, m4);
  swap_blocks(&r[3], &r[7], 32, m4);
}

/* ---- byte shuffle: generic --------------------------------------------------------- */

/* Elements per tile in the general case: a tile of src (TILE * ts bytes) stays in L1
 * while each of its ts byte planes is written out. */
#define SHUFFLE_TILE 512

/* ts = 4 or 8 (a constant after inlining): 8 elements at a time form an 8 x ts byte
 * matrix (rows zero-padded to 8 bytes) whose transpose holds 8 bytes of each plane.
 * Returns the first element not done. */
static CAT_INLINE size_t shuffle_rows8(const size_t ts, size_t q, size_t i,
                                   const uint8_t *CAT_RESTRICT src, uint8_t *CAT_RESTRICT dst) {
  for (; q - i >= 8; i += 8) {
    uint64_t r[8];
#pragma GCC unroll 8
    for (size_t t = 0; t < 8; t++)
      r[t] = ts == 8 ? ld_le64(src + 8 * (i + t)) : ld_le32(src + 4 * (i + t));
    byte_transpose8(r);
#pragma GCC unroll 8
    for (size_t j = 0; j < ts; j++) st_le64(dst + j * q + i, r[j]);
  }
  return i;
}

static CAT_INLINE size_t unshuffle_rows8(const size_t ts, size_t q, size_t i,
                                     const uint8_t *CAT_RESTRICT src,
                                     uint8_t *CAT_RESTRICT dst) {
  for (; q - i >= 8; i += 8) {
    uint64_t r[8] = {0};
#pragma GCC unroll 8
    for (size_t j = 0; j < ts; j++) r[j] = ld_le64(src + j * q + i);
    byte_transpose8(r);
#pragma GCC unroll 8
    for (size_t t = 0; t < 8; t++) {
      if (ts == 8)
        st_le64(dst + 8 * (i + t), r[t]);
      else
        st_le32(dst + 4 * (i + t), (uint32_t)r[t]);
    }
  }
  return i;
}

/* Shuffle elements [i0, q) of a block holding q elements of ts bytes: byte j of element i
 * goes to dst[j*q + i]. The vector versions finish their blocks with this. */
static void shuffle_elems(size_t ts, size_t q, size_t i0, const uint8_t *CAT_RESTRICT src,
                          uint8_t *CAT_RESTRICT dst) {
  if (ts == 2) {
    for (size_t i = i0; i < q; i++) {
      dst[i] = src[2 * i];
      dst[q + i] = src[2 * i + 1];
    }
    return;
  }
  if (ts == 4) i0 = shuffle_rows8(4, q, i0, src, dst);
  if (ts == 8) i0 = shuffle_rows8(8, q, i0, src, dst);
  for (size_t ib = i0; ib < q; ib += SHUFFLE_TILE) {
    size_t ie = q - ib < SHUFFLE_TILE ? q : ib + SHUFFLE_TILE;
    for (size_t j = 0; j < ts; j++) {
      const uint8_t *s = src + ib * ts + j;
      uint8_t *d = dst + j * q;
      for (size_t i = ib; i < ie; i++, s += ts) d[i] = *s;
    }
  }
}

/* The inverse of shuffle_elems over elements [i0, q). */
static void unshuffle_elems(size_t ts, size_t q, size_t i0, const uint8_t *CAT_RESTRICT src,
                            uint8_t *CAT_RESTRICT dst) {
  if (ts == 2) {
    for (size_t i = i0; i < q; i++) {
      dst[2 * i] = src[i];
      dst[2 * i + 1] = src[q + i];
    }
    return;
  }
  if (ts == 4) i0 = unshuffle_rows8(4, q, i0, src, dst);
  if (ts == 8) i0 = unshuffle_rows8(8, q, i0, src, dst);
  for (size_t ib = i0; ib < q; ib += SHUFFLE_TILE) {
    size_t ie = q - ib < SHUFFLE_TILE ? q : ib + SHUFFLE_TILE;
    for (size_t j = 0; j < ts; j++) {
      const uint8_t *s = src + j * q;
      uint8_t *d = dst + ib * ts + j;
      for (size_t i = ib; i < ie; i++, d += ts) *d = s[i];
    }
  }
}

/* ---- byte shuffle: SSE2 and AVX2 ---------------------------------------------------- *
 *
 * For a power-of-two element size T, a group of V elements (V = 16 for SSE2, 32 for AVX2)
 * occupies T vectors. Viewed as one array of V*T bytes, byte j of element i sits at
 * position p = i*T + j. One "split" round sends the even bytes of each pair of vectors to
 * the first half of the array and the odd bytes to the second half, which rotates the bits
 * of p right by one. After log2(T) rounds p = j*V + i: vector j holds byte plane j of the
 * group, ready to store at dst + j*q + i. Unshuffling runs the inverse round ("merge":
 * interleave vector k with vector k + T/2) the same number of times.
 *
 * SSE2 splits with AND/shift + packus and merges with unpacklo/hi. The AVX2 forms of those
 * instructions work within 128-bit lanes, so each round adds a 64-bit permute (0xD8 swaps
 * the two middle quarters) to make them act on the whole 256-bit register. */

#if defined(CAT_HAVE_X86)

#define CAT_SSE2_FN __attribute__((target("sse2")))
#define CAT_AVX2_FN __attribute__((target("avx2")))

static CAT_INLINE CAT_SSE2_FN void sse2_split(int T, __m128i *v) {
  const __m128i lo = _mm_set1_epi16(0x00FF);
  __m128i t[16];
#pragma GCC unroll 16
  for (int k = 0; k < T / 2; k++) {
    __m128i a = v[2 * k], b = v[2 * k + 1];
    t[k] = _mm_packus_epi16(_mm_and_si128(a, lo), _mm_and_si128(b, lo));
    t[T / 2 + k] = _mm_packus_epi16(_mm_srli_epi16(a, 8), _mm_srli_epi16(b, 8));
  }
#pragma GCC unroll 16
  for (int k = 0; k < T; k++) v[k] = t[k];
}

static CAT_INLINE CAT_SSE2_FN void sse2_merge(int T, __m128i *v) {
  __m128i t[16];
#pragma GCC unroll 16
  for (int k = 0; k < T / 2; k++) {
    t[2 * k] = _mm_unpacklo_epi8(v[k], v[T / 2 + k]);
    t[2 * k + 1] = _mm_unpackhi_epi8(v[k], v[T / 2 + k]);
  }
#pragma GCC unroll 16
  for (int k = 0; k < T; k++) v[k] = t[k];
}

/* Shuffle whole groups of 16 elements from element i0 on; returns the first element left. */
static CAT_INLINE CAT_SSE2_FN size_t sse2_shuffle_T(int T, int logT, size_t q, size_t i0,
                                                   const uint8_t *src, uint8_t *dst) {
  size_t i = i0;
  for (; q - i >= 16; i += 16) {
    __m128i v[16];
#pragma GCC unroll 16
    for (int k = 0; k < T; k++) v[k] = _mm_loadu_si128((const __m128i *)(src + i * T + 16 * k));
#pragma GCC unroll 4
    for (int r = 0; r < logT; r++) sse2_split(T, v);
#pragma GCC unroll 16
    for (int j = 0; j < T; j++) _mm_storeu_si128((__m128i *)(dst + j * q + i), v[j]);
  }
  return i;
}

static CAT_INLINE CAT_SSE2_FN size_t sse2_unshuffle_T(int T, int logT, size_t q, size_t i0,
                                                     const uint8_t *src, uint8_t *dst) {
  size_t i = i0;
  for (; q - i >= 16; i += 16) {
    __m128i v[16];
#pragma GCC unroll 16
    for (int j = 0; j < T; j++) v[j] = _mm_loadu_si128((const __m128i *)(src + j * q + i));
#pragma GCC unroll 4
    for (int r = 0; r < logT; r++) sse2_merge(T, v);
#pragma GCC unroll 16
    for (int k = 0; k < T; k++) _mm_storeu_si128((__m128i *)(dst + i * T + 16 * k), v[k]);
  }
  return i;
}

/* Vector part for ts in {2,4,8,16}; other sizes return i0 (nothing done). */
static CAT_SSE2_FN size_t sse2_shuffle_part(size_t ts, size_t q, size_t i0, const uint8_t *src,
                                            uint8_t *dst) {
  switch (ts) {
  case 2: return sse2_shuffle_T(2, 1, q, i0, src, dst);
  case 4: return sse2_shuffle_T(4, 2, q, i0, src, dst);
  case 8: return sse2_shuffle_T(8, 3, q, i0, src, dst);
  case 16: return sse2_shuffle_T(16, 4, q, i0, src, dst);
  default: return i0;
  }
}

static CAT_SSE2_FN size_t sse2_unshuffle_part(size_t ts, size_t q, size_t i0,
                                              const uint8_t *src, uint8_t *dst) {
  switch (ts) {
  case 2: return sse2_unshuffle_T(2, 1, q, i0, src, dst);
  case 4: return sse2_unshuffle_T(4, 2, q, i0, src, dst);
  case 8: return sse2_unshuffle_T(8, 3, q, i0, src, dst);
  case 16: return sse2_unshuffle_T(16, 4, q, i0, src, dst);
  default: return i0;
  }
}

static CAT_INLINE CAT_AVX2_FN void avx2_split(int T, __m256i *v) {
  const __m256i lo = _mm256_set1_epi16(0x00FF);
  __m256i t[16];
#pragma GCC unroll 16
  for (int k = 0; k < T / 2; k++) {
    __m256i a = v[2 * k], b = v[2 * k + 1];
    __m256i ev = _mm256_packus_epi16(_mm256_and_si256(a, lo), _mm256_and_si256(b, lo));
    __m256i od = _mm256_packus_epi16(_mm256_srli_epi16(a, 8), _mm256_srli_epi16(b, 8));
    t[k] = _mm256_permute4x64_epi64(ev, 0xD8);
    t[T / 2 + k] = _mm256_permute4x64_epi64(od, 0xD8);
  }
#pragma GCC unroll 16
  for (int k = 0; k < T; k++) v[k] = t[k];
}

static CAT_INLINE CAT_AVX2_FN void avx2_merge(int T, __m256i *v) {
  __m256i t[16];
#pragma GCC unroll 16
  for (int k = 0; k < T / 2; k++) {
    __m256i a = _mm256_permute4x64_epi64(v[k], 0xD8);
    __m256i b = _mm256_permute4x64_epi64(v[T / 2 + k], 0xD8);
    t[2 * k] = _mm256_unpacklo_epi8(a, b);
    t[2 * k + 1] = _mm256_unpackhi_epi8(a, b);
  }
#pragma GCC unroll 16
  for (int k = 0; k < T; k++) v[k] = t[k];
}

static CAT_INLINE CAT_AVX2_FN size_t avx2_shuffle_T(int T, int logT, size_t q, size_t i0,
                                                   const uint8_t *src, uint8_t *dst) {
  size_t i = i0;
  for (; q - i >= 32; i += 32) {
    __m256i v[16];
#pragma GCC unroll 16
    for (int k = 0; k < T; k++)
      v[k] = _mm256_loadu_si256((const __m256i *)(src + i * T + 32 * k));
#pragma GCC unroll 4
    for (int r = 0; r < logT; r++) avx2_split(T, v);
#pragma GCC unroll 16
    for (int j = 0; j < T; j++) _mm256_storeu_si256((__m256i *)(dst + j * q + i), v[j]);
  }
  return i;
}

static CAT_INLINE CAT_AVX2_FN size_t avx2_unshuffle_T(int T, int logT, size_t q, size_t i0,
                                                     const uint8_t *src, uint8_t *dst) {
  size_t i = i0;
  for (; q - i >= 32; i += 32) {
    __m256i v[16];
#pragma GCC unroll 16
    for (int j = 0; j < T; j++) v[j] = _mm256_loadu_si256((const __m256i *)(src + j * q + i));
#pragma GCC unroll 4
    for (int r = 0; r < logT; r++) avx2_merge(T, v);
#pragma GCC unroll 16
    for (int k = 0; k < T; k++)
      _mm256_storeu_si256((__m256i *)(dst + i * T + 32 * k), v[k]);
  }
  return i;
}

static CAT_AVX2_FN size_t avx2_shuffle_part(size_t ts, size_t q, size_t i0, const uint8_t *src,
                                            uint8_t *dst) {
  switch (ts) {
  case 2: return avx2_shuffle_T(2, 1, q, i0, src, dst);
  case 4: return avx2_shuffle_T(4, 2, q, i0, src, dst);
  case 8: return avx2_shuffle_T(8, 3, q, i0, src, dst);
  case 16: return avx2_shuffle_T(16, 4, q, i0, src, dst);
  default: return i0;
  }
}

static CAT_AVX2_FN size_t avx2_unshuffle_part(size_t ts, size_t q, size_t i0,
                                              const uint8_t *src, uint8_t *dst) {
  switch (ts) {
  case 2: return avx2_unshuffle_T(2, 1, q, i0, src, dst);
  case 4: return avx2_unshuffle_T(4, 2, q, i0, src, dst);
  case 8: return avx2_unshuffle_T(8, 3, q, i0, src, dst);
  case 16: return avx2_unshuffle_T(16, 4, q, i0, src, dst);
  default: return i0;
  }
}

#endif /* CAT_HAVE_X86 */

/* ---- byte shuffle: dispatch ------------------------------------------------------- */

int cat_simd_best(void) {
#if defined(CAT_HAVE_X86)
  static int best = -1; /* cached; racing first calls store the same value */
  int b = __atomic_load_n(&best, __ATOMIC_RELAXED);
  if (b < 0) {
    __builtin_cpu_init(); /* needed if we run before libgcc's constructor */
    if (__builtin_cpu_supports("avx2"))
      b = CAT_SIMD_AVX2;
    else if (__builtin_cpu_supports("sse2"))
      b = CAT_SIMD_SSE2;
    else
      b = CAT_SIMD_GENERIC;
    __atomic_store_n(&best, b, __ATOMIC_RELAXED);
  }
  return b;
#else
  return CAT_SIMD_GENERIC;
#endif
}

/* Shared by both directions: the vector levels do what they can, from the widest down, and
 * the generic loops finish the block. A level above the CPU's best is lowered to it. */
static void shuffle_dispatch(int level, int unshuffle, int32_t ts, int32_t n,
                             const uint8_t *src, uint8_t *dst) {
  if (n <= 0) return;
  if (ts <= 1 || ts > n) { /* nothing to transpose */
    memcpy(dst, src, (size_t)n);
    return;
  }
  size_t q = (size_t)n / (size_t)ts, i = 0;
  int best = cat_simd_best();
  if (level > best) level = best;
#if defined(CAT_HAVE_X86)
  if (level >= CAT_SIMD_AVX2)
    i = unshuffle ? avx2_unshuffle_part((size_t)ts, q, i, src, dst)
                  : avx2_shuffle_part((size_t)ts, q, i, src, dst);
  if (level >= CAT_SIMD_SSE2)
    i = unshuffle ? sse2_unshuffle_part((size_t)ts, q, i, src, dst)
                  : sse2_shuffle_part((size_t)ts, q, i, src, dst);
#endif
  if (unshuffle)
    unshuffle_elems((size_t)ts, q, i, src, dst);
  else
    shuffle_elems((size_t)ts, q, i, src, dst);
  copy_tail(q * (size_t)ts, (size_t)n, src, dst);
}

void cat_shuffle_at(int level, int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst) {
  shuffle_dispatch(level, 0, ts, n, src, dst);
}

void cat_unshuffle_at(int level, int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst) {
  shuffle_dispatch(level, 1, ts, n, src, dst);
}

void cat_shuffle(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst) {
  shuffle_dispatch(CAT_SIMD_AVX2, 0, ts, n, src, dst);
}

void cat_unshuffle(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst) {
  shuffle_dispatch(CAT_SIMD_AVX2, 1, ts, n, src, dst);
}

#if defined(CAT_HAVE_X86)
/* 4-byte elements, 16 at a time: the planes' bytes interleaved by two rounds of unpacks. */
static CAT_SSE2_FN size_t sse2_unshuffle_planes4(size_t q, const uint8_t *const *pl,
                                                 uint8_t *dst) {
  size_t i = 0;
  for (; i + 16 <= q; i += 16) {
    __m128i a = _mm_loadu_si128((const void *)(pl[0] + i));
    __m128i b = _mm_loadu_si128((const void *)(pl[1] + i));
    __m128i c = _mm_loadu_si128((const void *)(pl[2] + i));
    __m128i d = _mm_loadu_si128((const void *)(pl[3] + i));
    __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
    __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
    uint8_t *o = dst + 4 * i;
    _mm_storeu_si128((void *)o, _mm_unpacklo_epi16(ab0, cd0));
    _mm_storeu_si128((void *)(o + 16), _mm_unpackhi_epi16(ab0, cd0));
    _mm_storeu_si128((void *)(o + 32), _mm_unpacklo_epi16(ab1, cd1));
    _mm_storeu_si128((void *)(o + 48), _mm_unpackhi_epi16(ab1, cd1));
  }
  return i;
}
#endif

void cat_unshuffle_planes(int32_t ts, int32_t q, const uint8_t *const *planes, uint8_t *dst) {
  size_t i = 0;
#if defined(CAT_HAVE_X86)
  if (ts == 4 && cat_simd_best() >= CAT_SIMD_SSE2)
    i = sse2_unshuffle_planes4((size_t)q, planes, dst);
#endif
  for (; i < (size_t)q; i++)
    for (int32_t j = 0; j < ts; j++) dst[i * (size_t)ts + (size_t)j] = planes[j][i];
}

/* ---- bit shuffle ---------------------------------------------------------------------- */

/* Transpose the 8x8 bit matrix held in x, where bit c of byte r is entry (r, c): bit 8r+c
 * moves to bit 8c+r. Three rounds swap ever larger off-diagonal blocks (1x1, 2x2, 4x4).
 * It is its own inverse, so it serves both directions. */
static CAT_INLINE uint64_t bit_transpose8(uint64_t x) {
  uint64_t t;
  t = (x ^ (x >> 7)) & UINT64_C(0x00AA00AA00AA00AA);
  x ^= t ^ (t << 7);
  t = (x ^ (x >> 14)) & UINT64_C(0x0000CCCC0000CCCC);
  x ^= t ^ (t << 14);
  t = (x ^ (x >> 28)) & UINT64_C(0x00000000F0F0F0F0);
  x ^= t ^ (t << 28);
  return x;
}

/* Each group of 8 elements contributes one byte to each of the 8*ts bit-rows (the spec's
 * out[r*(ne/8) + i/8] bit i%8 = bit k of byte j of element i, r = 8j+k). For each byte j
 * the 8 elements' bytes form an 8x8 bit matrix whose transpose holds rows 8j..8j+7.
 *
 * Fast path, for ts <= BITSHUF_MAX_TS: 64 elements at a time are byte-shuffled into a
 * small buffer, so byte j of 8 consecutive elements is one 64-bit load. The 8 bit-matrix
 * transposes of a plane give 8 bytes for each of 8 rows, and a byte transpose turns those
 * into one 8-byte store per row. Groups that do not fill 64 elements go one at a time. */
#define BITSHUF_CHUNK 64
#define BITSHUF_MAX_TS 64

/* One group g of 8 elements, byte at a time (the slow path). */
static void bitshuffle_group(size_t ts, size_t rl, size_t g, const uint8_t *src, uint8_t *dst) {
  const uint8_t *e = src + g * 8 * ts;
  for (size_t j = 0; j < ts; j++) {
    uint64_t x = 0;
    for (size_t t = 0; t < 8; t++) x |= (uint64_t)e[t * ts + j] << (8 * t);
    x = bit_transpose8(x);
    uint8_t *d = dst + 8 * j * rl + g;
    for (size_t k = 0; k < 8; k++) d[k * rl] = (uint8_t)(x >> (8 * k));
  }
}

static void bitunshuffle_group(size_t ts, size_t rl, size_t g, const uint8_t *src,
                               uint8_t *dst) {
  uint8_t *e = dst + g * 8 * ts;
  for (size_t j = 0; j < ts; j++) {
    const uint8_t *s = src + 8 * j * rl + g;
    uint64_t x = 0;
    for (size_t k = 0; k < 8; k++) x |= (uint64_t)s[k * rl] << (8 * k);
    x = bit_transpose8(x);
    for (size_t t = 0; t < 8; t++) e[t * ts + j] = (uint8_t)(x >> (8 * t));
  }
}

void cat_bitshuffle(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst) {
  if (n <= 0) return;
  if (ts <= 0) ts = 1;
  size_t sts = (size_t)ts;
  size_t ne = ((size_t)n / sts) & ~(size_t)7; /* elements transformed */
  size_t rl = ne / 8;                         /* bytes per bit-row */
  size_t g = 0;                               /* next group of 8 elements */

  if (sts <= BITSHUF_MAX_TS) {
    uint8_t planes[BITSHUF_CHUNK * BITSHUF_MAX_TS];
    for (size_t c = 0; c < ne / BITSHUF_CHUNK; c++, g += BITSHUF_CHUNK / 8) {
      cat_shuffle(ts, (int32_t)(BITSHUF_CHUNK * sts), src + c * BITSHUF_CHUNK * sts, planes);
      for (size_t j = 0; j < sts; j++) {
        uint64_t w[8];
        for (size_t h = 0; h < 8; h++)
          w[h] = bit_transpose8(ld_le64(planes + BITSHUF_CHUNK * j + 8 * h));
        byte_transpose8(w);
        for (size_t k = 0; k < 8; k++) st_le64(dst + (8 * j + k) * rl + g, w[k]);
      }
    }
  }
  for (; g < rl; g++) bitshuffle_group(sts, rl, g, src, dst);
  copy_tail(ne * sts, (size_t)n, src, dst);
}

void cat_bitunshuffle(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst) {
  if (n <= 0) return;
  if (ts <= 0) ts = 1;
  size_t sts = (size_t)ts;
  size_t ne = ((size_t)n / sts) & ~(size_t)7;
  size_t rl = ne / 8;
  size_t g = 0;

  if (sts <= BITSHUF_MAX_TS) {
    uint8_t planes[BITSHUF_CHUNK * BITSHUF_MAX_TS];
    for (size_t c = 0; c < ne / BITSHUF_CHUNK; c++, g += BITSHUF_CHUNK / 8) {
      for (size_t j = 0; j < sts; j++) {
        uint64_t w[8];
        for (size_t k = 0; k < 8; k++) w[k] = ld_le64(src + (8 * j + k) * rl + g);
        byte_transpose8(w);
        for (size_t h = 0; h < 8; h++)
          st_le64(planes + BITSHUF_CHUNK * j + 8 * h, bit_transpose8(w[h]));
      }
      cat_unshuffle(ts, (int32_t)(BITSHUF_CHUNK * sts), planes, dst + c * BITSHUF_CHUNK * sts);
    }
  }
  for (; g < rl; g++) bitunshuffle_group(sts, rl, g, src, dst);
  copy_tail(ne * sts, (size_t)n, src, dst);
}

/* ---- DELTA ------------------------------------------------------------------------------- *
 *
 * XOR is bytewise, so XOR-ing e-byte elements equals XOR-ing bytes at distance e; only the
 * block-0 chain (each element against the previous one) depends on the width e.
 *
 * Leftover bytes: c-blosc2's delta_encoder/decoder loop over floor(n/e) whole elements and
 * never touch the n % e bytes after them (on encoding its destination there is whatever
 * its scratch buffer held; on decoding they stay as stored). We copy them unchanged when
 * encoding and leave them as they are when decoding, which agrees with the reference
 * decoder byte for byte. Blocks are multiples of the typesize, hence of e, so this only
 * arises in the last, short block of a chunk whose size is not a multiple of its typesize.
 *
 * Block 0: c-blosc2 takes the "previous element" from the chunk's unfiltered data rather
 * than from the block it was given; the two are the same when DELTA is the first active
 * filter, the only arrangement c-blosc2 itself decodes correctly (spec §1.7). We use the
 * block itself, so ref is not read for block 0. */

static int32_t delta_width(int32_t ts) {
  if (ts == 1 || ts == 2 || ts == 4 || ts == 8) return ts;
  if (ts > 0 && ts % 8 == 0) return 8;
  return 1;
}

void cat_delta_encode(int32_t ts, int32_t block_index, const uint8_t *ref, int32_t n,
                      const uint8_t *src, uint8_t *dst) {
  if (n <= 0) return;
  size_t e = (size_t)delta_width(ts);
  size_t m = (size_t)n - (size_t)n % e; /* bytes in whole elements */

  if (block_index == 0) {
    if (m > 0) {
      memcpy(dst, src, e);
      xor_bytes(dst + e, src + e, src, m - e);
    }
  } else {
    xor_bytes(dst, src, ref, m);
  }
  copy_tail(m, (size_t)n, src, dst);
}

/* Block 0 decoding is a running XOR at distance e. For e <= 8 it runs a 64-bit word at a
 * time: a prefix XOR over the word's e-byte lanes (shifts of 8e, 16e, ... bits), then XOR
 * with the last decoded lane of the previous word copied into every lane. */
static void delta_decode_chain(size_t e, size_t m, uint8_t *buf) {
  static const uint64_t spread[9] = {0, UINT64_C(0x0101010101010101),
                                     UINT64_C(0x0001000100010001), 0,
                                     UINT64_C(0x0000000100000001), 0, 0, 0, 1};
  uint64_t carry = 0; /* last decoded lane of the previous word, in every lane */
  size_t b = 0;

  for (; m - b >= 8; b += 8) {
    uint64_t w = ld_le64(buf + b);
    for (size_t s = 8 * e; s < 64; s *= 2) w ^= w << s;
    w ^= carry;
    st_le64(buf + b, w);
    carry = (e == 8 ? w : (w >> (64 - 8 * e))) * spread[e];
  }
  for (b = b < e ? e : b; b < m; b++) buf[b] ^= buf[b - e];
}

void cat_delta_decode(int32_t ts, int32_t block_index, const uint8_t *ref, int32_t n,
                      uint8_t *buf) {
  if (n <= 0) return;
  size_t e = (size_t)delta_width(ts);
  size_t m = (size_t)n - (size_t)n % e;

  if (block_index == 0) {
    delta_decode_chain(e, m, buf);
  } else {
    xor_bytes(buf, buf, ref, m);
  }
}

/* ---- TRUNC_PREC -------------------------------------------------------------------------- */

#define MANTISSA_BITS_F32 23
#define MANTISSA_BITS_F64 52

/* A positive prec keeps that many mantissa bits, a negative one drops -prec bits. At least
 * one mantissa bit must survive, so NaN stays NaN and infinities stay infinite. */
int cat_trunc_prec(int32_t ts, int8_t prec, int32_t n, const uint8_t *src, uint8_t *dst) {
  int mant, p = prec, zeroed;

  if (ts == 4)
    mant = MANTISSA_BITS_F32;
  else if (ts == 8)
    mant = MANTISSA_BITS_F64;
  else
    return CATERVA_E_INVALID;
  if (p > mant || -p > mant) return CATERVA_E_INVALID;
  zeroed = p >= 0 ? mant - p : -p;
  if (zeroed >= mant) return CATERVA_E_INVALID;
  if (n <= 0) return CATERVA_OK;

  uint64_t mask = ~((UINT64_C(1) << zeroed) - 1);
  size_t ne = (size_t)n / (size_t)ts, i;
  if (ts == 4) {
    for (i = 0; i < ne; i++) st_le32(dst + 4 * i, ld_le32(src + 4 * i) & (uint32_t)mask);
  } else {
    for (i = 0; i < ne; i++) st_le64(dst + 8 * i, ld_le64(src + 8 * i) & mask);
  }
  copy_tail(ne * (size_t)ts, (size_t)n, src, dst);
  return CATERVA_OK;
}

/* ---- BYTEDELTA ----------------------------------------------------------------------------- */

/* a - b in each byte lane, without borrows crossing lanes: subtract with the top bits
 * forced so no lane borrows from its neighbour, then fix the top bits by XOR. */
static CAT_INLINE uint64_t swar_sub8(uint64_t a, uint64_t b) {
  const uint64_t H = UINT64_C(0x8080808080808080);
  return ((a | H) - (b & ~H)) ^ ((a ^ ~b) & H);
}

/* Each of the ts planes of L = n/ts bytes restarts from 0: its first byte is kept as is. */
void cat_bytedelta_encode(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst) {
  if (n <= 0) return;
  if (ts <= 0) ts = 1;
  size_t L = (size_t)n / (size_t)ts;

  for (size_t s = 0; s < (size_t)ts && L > 0; s++) {
    const uint8_t *in = src + s * L;
    uint8_t *out = dst + s * L;
    size_t x = 1;
    out[0] = in[0];
    for (; L - x >= 8; x += 8) { /* 8 independent byte lanes per word */
      uint64_t a, b;
      memcpy(&a, in + x, 8);
      memcpy(&b, in + x - 1, 8);
      a = swar_sub8(a, b);
      memcpy(out + x, &a, 8);
    }
    for (; x < L; x++) out[x] = (uint8_t)(in[x] - in[x - 1]);
  }
  copy_tail(L * (size_t)ts, (size_t)n, src, dst);
}

void cat_bytedelta_decode(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst) {
  if (n <= 0) return;
  if (ts <= 0) ts = 1;
  size_t L = (size_t)n / (size_t)ts;

  for (size_t s = 0; s < (size_t)ts; s++) {
    const uint8_t *in = src + s * L;
    uint8_t *out = dst + s * L;
    uint8_t acc = 0;
    for (size_t x = 0; x < L; x++) out[x] = acc = (uint8_t)(acc + in[x]);
  }
  copy_tail(L * (size_t)ts, (size_t)n, src, dst);
}

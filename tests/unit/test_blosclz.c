/*
 * test_blosclz.c -- round trips and decoder robustness for the BloscLZ codec.
 *
 * Buffers handed to the codec are allocated at their exact size so that AddressSanitizer sees
 * any read or write past an end.  A slow byte-by-byte transcription of the stream description
 * (shared/spec/blosc2-formats.md section 2) serves as a model: the fast decoder must agree with
 * it on every stream, valid or not.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blosclz.h"
#include "caterva.h"
#include "tap.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint32_t rng(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return (uint32_t)((rng_state * 2685821657736338717u) >> 32);
}

static void fill_random(uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)rng();
}

static uint8_t *xmalloc(size_t n) {
  uint8_t *p = malloc(n ? n : 1);
  if (!p) {
    printf("Bail out! out of memory\n");
    exit(1);
  }
  return p;
}

/* An exact-size copy, so that ASan catches reads past the end. */
static uint8_t *dup_exact(const uint8_t *src, size_t n) {
  uint8_t *p = xmalloc(n);
  if (n) memcpy(p, src, n);
  return p;
}

/* The stream description read literally: one byte at a time, every check spelled out.
 * Returns the decoded length (== nout) or -1. */
static int32_t model_decode(const uint8_t *in, int32_t n, uint8_t *out, int32_t nout) {
  int64_t ip = 0, op = 0;
  if (n < 1) return -1;
  int ctrl = in[ip++] & 31;
  for (;;) {
    if (ctrl < 32) {
      int64_t run = ctrl + 1;
      if (ip + run > n || op + run > nout) return -1;
      while (run--) out[op++] = in[ip++];
      if (ip >= n) break;
      ctrl = in[ip++];
    } else {
      int64_t len = (ctrl >> 5) - 1;
      int64_t ofs = (int64_t)(ctrl & 31) << 8;
      int code;
      if (len == 6) {
        do {
          if (ip + 1 >= n) return -1;
          code = in[ip++];
          len += code;
          if (len > nout) return -1;
        } while (code == 255);
      } else if (ip + 1 >= n) {
        return -1;
      }
      code = in[ip++];
      len += 3;
      int64_t dist = ofs + code + 1;
      if (code == 255 && ofs == (31 << 8)) {
        if (ip + 1 >= n) return -1;
        dist = ((int64_t)in[ip] << 8 | in[ip + 1]) + 8192;
        ip += 2;
      }
      if (op + len > nout || dist > op) return -1;
      if (ip >= n) break;
      ctrl = in[ip++];
      for (int64_t i = 0; i < len; i++, op++) out[op] = out[op - dist];
    }
  }
  return op == nout ? (int32_t)op : -1;
}

/* What a stream is made of, for checking that the encoder uses the token kinds we expect. */
typedef struct {
  int tokens, literals, short_near, long_near, far, runs; /* runs: matches with distance 1 */
  int64_t max_len;                                        /* longest match */
  int64_t want_dist;                                      /* find a match at this distance... */
  int64_t want_len;                                       /* ...of at least this length */
  int found;                                              /* such a match was seen */
  int last_is_literal;
} stream_stats;

/* Walk the tokens of a well-formed stream. Returns 0 if the structure is broken. */
static int walk_stream(const uint8_t *s, int32_t n, stream_stats *st) {
  int64_t ip = 1;
  int ctrl = s[0] & 31;
  for (;;) {
    st->tokens++;
    if (ctrl < 32) {
      st->literals++;
      st->last_is_literal = 1;
      ip += ctrl + 1;
      if (ip > n) return 0;
    } else {
      int is_long = (ctrl >> 5) == 7, code;
      int64_t len = is_long ? 9 : (ctrl >> 5) + 2, dist;
      if (is_long) {
        do {
          if (ip >= n) return 0;
          code = s[ip++];
          len += code;
        } while (code == 255);
      }
      if (ip >= n) return 0;
      code = s[ip++];
      dist = ((int64_t)(ctrl & 31) << 8) + code + 1;
      if (code == 255 && (ctrl & 31) == 31) {
        if (ip + 2 > n) return 0;
        dist = ((int64_t)s[ip] << 8 | s[ip + 1]) + 8192;
        ip += 2;
        st->far++;
      } else if (is_long) {
        st->long_near++;
      } else {
        st->short_near++;
      }
      if (dist == 1) st->runs++;
      if (len > st->max_len) st->max_len = len;
      if (dist == st->want_dist && len >= st->want_len) st->found = 1;
      st->last_is_literal = 0;
    }
    if (ip == n) return 1;
    ctrl = s[ip++];
  }
}

/* Compress at clevel into an exact-size buffer of capacity n, check the stream's structure,
 * decode it with both decoders into exact-size buffers and compare.
 * Returns the compressed size (0 = stored raw), or -1 on any failure. */
/* cat_blosclz_bytes_at against a decoding: dec, the stream's output when it decodes, else
 * NULL (bytes_at must then fail too). Positions: both ends and up to 61 spread ones. */
static int at_checks, at_failures;
static void check_bytes_at(const uint8_t *stream, int32_t n, int32_t nout, const uint8_t *dec) {
  int32_t pos[64], np = 0, rc;
  uint8_t got[64];
  size_t cap = CAT_BLOSCLZ_AT_SCRATCH(n);
  void *scratch = xmalloc(cap);
  if (nout <= 0) {
    free(scratch);
    return;
  }
  pos[np++] = 0;
  pos[np++] = nout - 1;
  for (int k = 0; k < 61 && k < nout; k++) pos[np++] = (int32_t)(rng() % (uint32_t)nout);
  rc = cat_blosclz_bytes_at(stream, n, nout, pos, np, got, scratch, cap);
  at_checks++;
  if (dec == NULL ? rc != CATERVA_E_CORRUPT : rc != np) at_failures++;
  for (int k = 0; dec != NULL && rc == np && k < np; k++)
    if (got[k] != dec[pos[k]]) {
      at_failures++;
      break;
    }
  free(scratch);
}

static int32_t roundtrip(int clevel, const uint8_t *src, int32_t n, stream_stats *st) {
  int32_t result = -1;
  uint8_t *in = dup_exact(src, (size_t)n);
  uint8_t *cbuf = xmalloc((size_t)n);
  uint8_t *stream = NULL, *dec = NULL, *dec2 = NULL;
  int32_t csize = cat_blosclz_compress(clevel, in, n, cbuf, n);
  if (csize == 0) {
    result = 0;
    goto leave;
  }
  if (csize < 0 || csize >= n) goto leave;
  stream = dup_exact(cbuf, (size_t)csize);
  stream_stats local = {0};
  if (!st) st = &local;
  if (!walk_stream(stream, csize, st) || !st->last_is_literal) goto leave;
  dec = xmalloc((size_t)n);
  dec2 = xmalloc((size_t)n);
  if (cat_blosclz_decompress(stream, csize, dec, n) != n) goto leave;
  if (model_decode(stream, csize, dec2, n) != n) goto leave;
  if (memcmp(dec, src, (size_t)n) != 0 || memcmp(dec2, src, (size_t)n) != 0) goto leave;
  check_bytes_at(stream, csize, n, dec);
  result = csize;
leave:
  free(in);
  free(cbuf);
  free(stream);
  free(dec);
  free(dec2);
  return result;
}

/* Decode with both decoders; 1 if they agree on the result and, on success, on the bytes. */
static int decoders_agree(const uint8_t *stream, int32_t n, int32_t nout, int32_t *rc_out) {
  uint8_t *s = dup_exact(stream, (size_t)n);
  uint8_t *a = xmalloc((size_t)nout), *b = xmalloc((size_t)nout);
  int32_t ra = cat_blosclz_decompress(s, n, a, nout);
  int32_t rb = model_decode(s, n, b, nout);
  int agree = (ra == nout && rb == nout && memcmp(a, b, (size_t)nout) == 0) ||
              (ra == CATERVA_E_CORRUPT && rb == -1);
  if (n > 0) check_bytes_at(s, n, nout, ra == nout ? a : NULL);
  if (rc_out) *rc_out = ra;
  free(s);
  free(a);
  free(b);
  return agree;
}

/* Byte-plane shuffle of 8-byte elements, as Blosc's SHUFFLE filter does. */
static void shuffle8(const uint8_t *src, uint8_t *dst, size_t nelem) {
  for (size_t j = 0; j < nelem; j++)
    for (size_t b = 0; b < 8; b++) dst[b * nelem + j] = src[j * 8 + b];
}

/* sin(0.001 * i) for i = 0..nelem-1, by rotating a unit vector (keeps the test free of libm). */
static uint8_t *smooth_f64_shuffled(size_t nelem) {
  const double c = 0.99999950000004166666, s = 0.00099999983333334166667; /* cos, sin 0.001 */
  double *v = malloc(nelem * sizeof *v), x = 1.0, y = 0.0;
  uint8_t *out = xmalloc(nelem * 8);
  if (!v) exit(1);
  for (size_t i = 0; i < nelem; i++) {
    double nx = x * c - y * s;
    v[i] = y;
    y = x * s + y * c;
    x = nx;
  }
  shuffle8((const uint8_t *)v, out, nelem);
  free(v);
  return out;
}

/* ---- round trips ------------------------------------------------------------------------ */

static void test_zeros(void) {
  static const int32_t sizes[] = {16, 17, 100, 4096, 1 << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    int32_t n = sizes[k];
    uint8_t *z = calloc((size_t)n, 1);
    for (int cl = 1; cl <= 9; cl++) {
      stream_stats st = {0};
      int32_t c = roundtrip(cl, z, n, &st);
      /* One literal, one run of n-2, one literal: 2 + 2 + (n-11)/255+1 + 2 bytes. */
      tap_ok(c > 0 && c <= 7 + (n - 11) / 255 && st.runs >= 1,
             "zeros n=%d clevel=%d -> %d bytes, %d runs", n, cl, c, st.runs);
    }
    free(z);
  }
}

static void test_random(void) {
  const int32_t n = 65536;
  uint8_t *r = xmalloc((size_t)n);
  fill_random(r, (size_t)n);
  for (int cl = 1; cl <= 9; cl++)
    tap_ok(roundtrip(cl, r, n, NULL) == 0, "random bytes clevel=%d are stored raw", cl);
  free(r);
}

static void test_ramps(void) {
  const int32_t n = 100000;
  uint8_t *a = xmalloc((size_t)n), *b = xmalloc((size_t)n);
  for (int32_t i = 0; i < n; i++) a[i] = (uint8_t)i;
  for (int32_t i = 0; i < n / 4; i++) { /* int32 ramp, byte-shuffled: a ramp, runs, zeros */
    b[i] = (uint8_t)i;
    b[n / 4 + i] = (uint8_t)(i >> 8);
    b[n / 2 + i] = b[3 * n / 4 + i] = 0;
  }
  for (int cl = 1; cl <= 9; cl += 4) {
    stream_stats st = {.want_dist = 256, .want_len = 1000};
    int32_t c = roundtrip(cl, a, n, &st);
    tap_ok(c > 0 && c < n / 50 && st.found, "u8 ramp clevel=%d -> %d bytes, distance-256 match",
           cl, c);
    c = roundtrip(cl, b, n, NULL);
    tap_ok(c > 0 && c < n / 50, "shuffled i32 ramp clevel=%d -> %d bytes", cl, c);
  }
  free(a);
  free(b);
}

static void test_periods(void) {
  const int32_t n = 10000;
  uint8_t *buf = xmalloc((size_t)n);
  int bad = 0, first_bad = 0;
  for (int period = 1; period <= 20; period++) {
    uint8_t pat[20];
    fill_random(pat, sizeof pat);
    for (int32_t i = 0; i < n; i++) buf[i] = pat[i % period];
    for (int cl = 1; cl <= 9; cl++) {
      stream_stats st = {.want_dist = period, .want_len = n / 2};
      int32_t c = roundtrip(cl, buf, n, &st);
      if (!(c > 0 && c < 100 && st.found) && !bad++) first_bad = period * 100 + cl;
    }
  }
  tap_ok(bad == 0, "periods 1..20 x clevel 1..9: one long match at the period (%d failures, "
         "first period*100+clevel=%d)", bad, first_bad);
  free(buf);
}

/* Random data where bytes [0, len) reappear at distance dist. */
static void test_distance(int32_t dist, int32_t len, int expect_found) {
  const int32_t n = dist + len;
  uint8_t *buf = xmalloc((size_t)n);
  fill_random(buf, (size_t)n);
  memcpy(buf + dist, buf, (size_t)len);
  for (int cl = 1; cl <= 9; cl++) {
    stream_stats st = {.want_dist = dist, .want_len = len / 2};
    int32_t c = roundtrip(cl, buf, n, &st);
    if (expect_found && cl >= 4)
      tap_ok(c > 0 && st.found && (dist > 8191 ? st.far > 0 : 1),
             "distance %d clevel=%d -> %d bytes, match found", dist, cl, c);
    else if (expect_found)
      tap_ok(c >= 0, "distance %d clevel=%d -> %d bytes, round trip", dist, cl, c);
    else
      tap_ok(c >= 0 && !st.found, "distance %d clevel=%d too far: round trip without it", dist,
             cl);
  }
  free(buf);
}

static void test_long_match(void) {
  const int32_t n = 5000;
  uint8_t *buf = xmalloc((size_t)n);
  fill_random(buf, 300);
  for (int32_t i = 300; i < n; i++) buf[i] = buf[i - 300];
  for (int cl = 1; cl <= 9; cl++) {
    stream_stats st = {.want_dist = 300, .want_len = 255 * 3 + 10};
    int32_t c = roundtrip(cl, buf, n, &st);
    tap_ok(c > 0 && c < 400 && st.found && st.long_near >= 1 && st.max_len >= n - 302,
           "long match (period 300, %d bytes) clevel=%d -> %d bytes", n - 300, cl, c);
  }
  free(buf);
}

static void test_small_sizes(void) {
  uint8_t pat[64], rnd[64];
  for (int i = 0; i < 64; i++) pat[i] = (uint8_t)"abcd"[i % 4];
  fill_random(rnd, sizeof rnd);
  int bad = 0, first_bad = -1;
  for (int32_t n = 0; n <= 64; n++) {
    for (int cl = 1; cl <= 9; cl++) {
      int32_t cp = roundtrip(cl, pat, n, NULL);
      int32_t cr = roundtrip(cl, rnd, n, NULL);
      int ok = n < 16 ? (cp == 0 && cr == 0) : (cp > 0 && cr == 0);
      if (!ok && !bad++) first_bad = n;
    }
  }
  tap_ok(bad == 0, "sizes 0..64: < 16 stored raw, patterns compress, random stored raw "
         "(%d failures, first n=%d)", bad, first_bad);
}

static void test_mixed_1mib(void) {
  const size_t nelem = (1u << 20) / 8;
  uint8_t *f = smooth_f64_shuffled(nelem);
  for (int cl = 1; cl <= 9; cl++) {
    int32_t c = roundtrip(cl, f, (int32_t)(nelem * 8), NULL);
    /* Five mantissa planes are noise to an LZ coder: about 5/8 + a bit is the floor. */
    tap_ok(c > 0 && c < (int32_t)(nelem * 8) / 5 * 4, "1 MiB shuffled sin() f64 clevel=%d -> %d",
           cl, c);
  }
  /* Text-like data with varied matches and literal runs. */
  const int32_t n = 1 << 20;
  uint8_t *t = xmalloc((size_t)n);
  static const char *words[] = {"caterva ", "blosc ", "sqlite ", "chunk ", "block ", "frame ",
                                "metalayer ", "shuffle ", "the ", "of "};
  int32_t i = 0;
  while (i < n) {
    const char *w = words[rng() % 10];
    for (; *w && i < n; w++) t[i++] = (uint8_t)*w;
    if (rng() % 8 == 0 && i < n) t[i++] = (uint8_t)rng();
  }
  for (int cl = 1; cl <= 9; cl++) {
    int32_t c = roundtrip(cl, t, n, NULL);
    tap_ok(c > 0 && c < n / 2, "1 MiB word soup clevel=%d -> %d", cl, c);
  }
  free(f);
  free(t);
}

/* The encoder never writes past maxout and gives up exactly when the stream does not fit. */
static void test_maxout(void) {
  const int32_t n = 4096;
  uint8_t *src = xmalloc((size_t)n), *big = xmalloc((size_t)n);
  for (int32_t i = 0; i < n; i++) src[i] = (uint8_t)(i % 61 < 30 ? (uint32_t)i % 7 : rng());
  int32_t c = cat_blosclz_compress(5, src, n, big, n);
  tap_ok(c > 0 && c < n, "maxout: reference size %d", c);
  uint8_t *exact = xmalloc((size_t)c), *short1 = xmalloc((size_t)c - 1);
  int32_t ce = cat_blosclz_compress(5, src, n, exact, c);
  tap_ok(ce == c && memcmp(exact, big, (size_t)c) == 0, "maxout == size: same stream (%d)", ce);
  tap_ok(cat_blosclz_compress(5, src, n, short1, c - 1) == 0, "maxout == size-1: not compressed");
  uint8_t *tiny = xmalloc(1);
  tap_ok(cat_blosclz_compress(5, src, n, tiny, 1) == 0, "maxout == 1: not compressed");
  tap_ok(cat_blosclz_compress(0, src, n, big, n) == 0, "clevel 0: not compressed");
  free(src);
  free(big);
  free(exact);
  free(short1);
  free(tiny);
}

/* ---- decoder robustness ----------------------------------------------------------------- */

/* A stream using every token kind, with its output derived by hand token by token. */
static void test_handmade(void) {
  uint8_t s[128];
  int ns = 0;
#define PUT(...)                                                  \
  do {                                                            \
    const uint8_t b_[] = {__VA_ARGS__};                           \
    memcpy(s + ns, b_, sizeof b_);                                \
    ns += (int)sizeof b_;                                         \
  } while (0)
  PUT(0x22, 'a', 'b', 'c'); /* literal of 3, bit 5 set as the reference writer does */
  PUT(0x20, 0x02);          /* short near: length 1+2 = 3, distance 2+1 = 3 -> "abc" */
  PUT(0x60, 0x00);          /* short near: length 3+2 = 5, distance 1 -> "ccccc" */
  PUT(0x01, 'x', 'y');      /* literal of 2 */
  PUT(0xE0, 0xFF, 0x03, 0x01); /* long near: 9+255+3 = 267, distance 2 -> "xyxy...x" */
  PUT(0xE0);                /* long run: 9 + 31*255 + 86 = 8000, distance 1 -> 8000 'x' */
  for (int i = 0; i < 31; i++) PUT(0xFF);
  PUT(0x56, 0x00);
  PUT(0xDF, 0xFF, 0x00, 0x58); /* short far: length 8, distance 8192+0x58 = 8280 -> out[0..8) */
  PUT(0xFF, 0x0B, 0xFF, 0x00, 0x60); /* long far: 9+11 = 20, distance 8192+0x60 = 8288 */
  PUT(0x5F, 0xFE);          /* short near: length 4, distance 31*256+254+1 = 8191 */
  PUT(0x00, '!');           /* closing literal */
#undef PUT

  enum { NOUT = 3 + 3 + 5 + 2 + 267 + 8000 + 8 + 20 + 4 + 1 };
  uint8_t want[NOUT];
  int k = 0;
  memcpy(want + k, "abcabcccccc", 11), k += 11; /* literal, match "abc", run of five 'c' */
  memcpy(want + k, "xy", 2), k += 2;
  for (int i = 0; i < 267; i++) want[k++] = i % 2 ? 'y' : 'x';
  memset(want + k, 'x', 8000), k += 8000;       /* byte 279 (the last of the 267) is 'x' */
  memcpy(want + k, "abcabccc", 8), k += 8;      /* 8280 back from 8280 is byte 0 */
  memcpy(want + k, "abcabccccccxyxyxyxyx", 20), k += 20; /* 8288 back from 8288: byte 0 again */
  memcpy(want + k, "xyxy", 4), k += 4;          /* 8308 - 8191 = 117: odd offset 104 -> 'x' */
  want[k++] = '!';

  uint8_t *in = dup_exact(s, (size_t)ns), *out = xmalloc(NOUT);
  int32_t rc = cat_blosclz_decompress(in, ns, out, NOUT);
  tap_ok(k == NOUT && rc == NOUT && memcmp(out, want, NOUT) == 0,
         "hand-made stream with every token kind decodes to the hand-derived %d bytes", NOUT);
  tap_ok(model_decode(in, ns, out, NOUT) == NOUT && memcmp(out, want, NOUT) == 0,
         "model decoder agrees on the hand-made stream");
  stream_stats st = {0};
  tap_ok(walk_stream(in, ns, &st) && st.literals == 3 && st.short_near == 3 &&
             st.long_near == 2 && st.far == 2 && st.runs == 2,
         "hand-made stream token census");

  /* Every strict prefix is truncated; one byte too few or too many output bytes is an error. */
  int bad = 0;
  for (int len = 0; len < ns; len++) {
    uint8_t *p = dup_exact(s, (size_t)len);
    if (cat_blosclz_decompress(p, len, out, NOUT) != CATERVA_E_CORRUPT) bad++;
    free(p);
  }
  tap_ok(bad == 0, "hand-made stream: all %d truncations rejected (%d accepted)", ns, bad);
  uint8_t *small = xmalloc(NOUT - 1), *large = xmalloc(NOUT + 1);
  tap_ok(cat_blosclz_decompress(in, ns, small, NOUT - 1) == CATERVA_E_CORRUPT,
         "output one byte too small is rejected");
  tap_ok(cat_blosclz_decompress(in, ns, large, NOUT + 1) == CATERVA_E_CORRUPT,
         "output one byte too large is rejected");
  free(in);
  free(out);
  free(small);
  free(large);
}

/* Short streams checked one at a time: expected length or CATERVA_E_CORRUPT. */
static void check_stream(const char *name, const uint8_t *s, int32_t ns, int32_t nout,
                         const char *want) {
  uint8_t *in = dup_exact(s, (size_t)ns), *out = xmalloc((size_t)nout);
  int32_t rc = cat_blosclz_decompress(in, ns, out, nout);
  if (want)
    tap_ok(rc == nout && memcmp(out, want, (size_t)nout) == 0, "%s: decodes (rc=%d)", name, rc);
  else
    tap_ok(rc == CATERVA_E_CORRUPT, "%s: rejected (rc=%d)", name, rc);
  free(in);
  free(out);
}

static void test_malformed(void) {
  static const uint8_t run_ok[] = {0x00, 'a', 0x20, 0x00, 0x00, 'b'};
  static const uint8_t before_start[] = {0x00, 'a', 0x20, 0x01, 0x00, 'b'};
  static const uint8_t far_before[] = {0x00, 'a', 0x3F, 0xFF, 0x00, 0x00, 0x00, 'b'};
  static const uint8_t dist_last[] = {0x00, 'a', 0x20, 0x00};
  static const uint8_t match_last[] = {0x00, 'a', 0x20, 0x00, 0x00, 'b', 0x20, 0x00};
  static const uint8_t ext_last[] = {0x00, 'a', 0xE0, 0x00};
  static const uint8_t lit_short[] = {0x03, 'a', 'b', 'c'};
  static const uint8_t too_long[] = {0x00, 'a', 0xE0, 0xFF, 0xFF, 0x00, 0x00, 0x00, 'b'};
  check_stream("run of distance 1", run_ok, sizeof run_ok, 5, "aaaab");
  check_stream("match referencing before the start", before_start, sizeof before_start, 5, NULL);
  check_stream("far match referencing before the start", far_before, sizeof far_before, 13,
               NULL);
  check_stream("distance byte is the last byte", dist_last, sizeof dist_last, 4, NULL);
  check_stream("stream ends with a match", match_last, sizeof match_last, 8, NULL);
  check_stream("stream ends with a match (short output)", match_last, sizeof match_last, 5,
               NULL);
  check_stream("long match cut after its extension byte", ext_last, sizeof ext_last, 10, NULL);
  check_stream("literal run longer than the input", lit_short, sizeof lit_short, 4, NULL);
  check_stream("match longer than the output", too_long, sizeof too_long, 100, NULL);
  uint8_t one = 0, buf[4];
  tap_ok(cat_blosclz_decompress(&one, 0, buf, 4) == CATERVA_E_CORRUPT, "empty stream rejected");
  tap_ok(cat_blosclz_decompress(NULL, 5, buf, 4) == CATERVA_E_CORRUPT, "NULL stream rejected");
}

/* Truncations and bit flips of encoder output: never a crash, always agreement with the model. */
static void test_fuzz(void) {
  const int32_t n = 20000;
  uint8_t *src = xmalloc((size_t)n), *cbuf = xmalloc((size_t)n);
  /* A mix of runs, short repeats, far repeats and noise, so all token kinds appear. */
  fill_random(src, (size_t)n);
  memset(src + 100, 7, 900);
  for (int32_t i = 2000; i < 4000; i++) src[i] = src[i - 3];
  memcpy(src + 15000, src + 4000, 3000);
  for (int32_t i = 5000; i < 9000; i += 16) memcpy(src + i, "0123456789", 10);
  for (int32_t i = 9000; i < 11000; i += 12) memcpy(src + i, "ABCDEF", 6);
  int32_t c = cat_blosclz_compress(9, src, n, cbuf, n);
  stream_stats st = {0};
  int walked = c > 0 && walk_stream(cbuf, c, &st);
  tap_ok(walked && st.far > 0 && st.runs > 0 && st.long_near > 0 && st.short_near > 0,
         "fuzz seed uses every token kind (%d bytes: %d far, %d runs, %d long near, %d short near)",
         c, st.far, st.runs, st.long_near, st.short_near);

  int bad = 0, accepted = 0;
  for (int32_t len = 0; len < c; len++) {
    int32_t rc;
    if (!decoders_agree(cbuf, len, n, &rc)) bad++;
    if (rc != CATERVA_E_CORRUPT) accepted++;
  }
  tap_ok(bad == 0 && accepted == 0, "all %d truncations rejected (%d disagreements, %d accepted)",
         c, bad, accepted);

  uint8_t *mut = xmalloc((size_t)c);
  bad = 0;
  accepted = 0;
  for (int trial = 0; trial < 3000; trial++) {
    memcpy(mut, cbuf, (size_t)c);
    int flips = 1 + (int)(rng() % 3);
    for (int f = 0; f < flips; f++) mut[rng() % (uint32_t)c] ^= (uint8_t)(1u << (rng() % 8));
    int32_t rc;
    if (!decoders_agree(mut, c, n, &rc)) bad++;
    if (rc == n) accepted++;
  }
  tap_ok(bad == 0, "3000 bit-flipped streams: fast decoder agrees with the model (%d disagree, "
         "%d still decode)", bad, accepted);

  bad = 0;
  for (int trial = 0; trial < 3000; trial++) {
    int32_t len = 1 + (int32_t)(rng() % 64), nout = 1 + (int32_t)(rng() % 300);
    fill_random(mut, (size_t)(len < c ? len : c));
    if (!decoders_agree(mut, len < c ? len : c, nout, NULL)) bad++;
  }
  tap_ok(bad == 0, "3000 random streams: fast decoder agrees with the model (%d disagree)", bad);
  free(src);
  free(cbuf);
  free(mut);
}

int main(void) {
  test_zeros();
  test_random();
  test_ramps();
  test_periods();
  test_distance(8190, 3000, 1);
  test_distance(8191, 3000, 1);
  test_distance(8192, 3000, 1);
  test_distance(8193, 3000, 1);
  test_distance(40000, 3000, 1);
  test_distance(73727, 8000, 1);
  test_distance(73728, 8000, 0);
  test_long_match();
  test_small_sizes();
  test_mixed_1mib();
  test_maxout();
  test_handmade();
  test_malformed();
  test_fuzz();
  tap_ok(at_checks > 1000 && at_failures == 0,
         "bytes read without decoding (cat_blosclz_bytes_at) agree with the decoder on %d "
         "streams, valid and not (%d disagree)", at_checks, at_failures);
  return tap_done();
}

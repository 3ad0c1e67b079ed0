/*
 * blosclz.c -- the BloscLZ codec (Blosc2 compcode 0): our own encoder and decoder, written from
 * the stream description in shared/spec/blosc2-formats.md section 2.
 *
 * The decoder sits on the read path of every query, so it trades a little code for speed:
 * fixed-size copies where the buffers have room, memset for runs, memcpy for matches that do not
 * overlap.  Every read and write is still checked against the ends of both buffers.
 */
#include "blosclz.h"

#include <stddef.h>
#include <stdbool.h>
#include <string.h>

#include "caterva.h"

enum {
  LITERAL_MAX = 32,    /* bytes per literal token (ctrl 0..31 means 1..32 bytes) */
  SHORT_MATCH_MAX = 8, /* longest match without length-extension bytes */
  LONG_MATCH_BASE = 9, /* length of a long match whose extension bytes add up to 0 */
  NEAR_MAX = 8191,     /* largest distance of the near form */
  FAR_BASE = 8192,     /* distance encoded by a far match whose u16 is 0 */
  FAR_MAX = 8192 + 65535,
  FAR_ESCAPE = 31      /* low 5 bits of a far match's control byte (distance byte is 255) */
};

/* Unaligned loads through memcpy: compilers turn these into single moves. */
static inline uint32_t load32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

static inline uint64_t load64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return v;
}

/* ---------------------------------------------------------------------------------------------
 * Decoder
 *
 * A stream is a sequence of tokens, each starting with a control byte `ctrl`:
 *
 *   literal run   ctrl = 000LLLLL                 then L+1 raw bytes                 (1..32 bytes)
 *   short match   ctrl = lllHHHHH, lll in 1..6    then D                  length lll+2 (3..8)
 *   long match    ctrl = 111HHHHH                 then E* e, then D       length 9 + sum(E*) + e
 *                                                 (E* = zero or more 255 bytes, e < 255)
 *   near distance d = (HHHHH << 8 | D) + 1                                              (1..8191)
 *   far distance  HHHHH = 31 and D = 255, then two more bytes hi lo:
 *                 d = (hi << 8 | lo) + 8192                                      (8192..73727)
 *
 *   A match copies `length` bytes from `d` bytes back in the output, one byte at a time in
 *   meaning, so d < length repeats a pattern (d = 1 is a run of one byte).
 *
 * Quirks the reference decoder imposes, reproduced here so that we accept exactly its streams:
 *   - the first control byte is masked with 31: the stream always starts with a literal run
 *     (writers may set bit 5 there as a marker);
 *   - a short or long match needs at least one byte after its distance byte D, and each length
 *     extension byte needs one byte after it; otherwise the stream is truncated;
 *   - a match that ends the input exactly is checked but not executed; the output then comes
 *     up short and the stream is rejected, so a valid stream ends with a literal run;
 *   - the stream must decode to exactly the expected number of bytes.
 * ------------------------------------------------------------------------------------------- */

/* Copy a match of len bytes starting dist bytes back; the caller has checked that
 * op - dist >= out and op + len <= oend. Overlapping matches (dist < len) repeat the
 * pattern, as LZ77 requires.
 *
 * The copy goes in pieces of W bytes (32, 16 or 8, the largest not above dist, so every piece
 * reads bytes that are already final). With 31 bytes of slack after the match the last piece
 * may overshoot (the excess is overwritten later or lies in unused output); otherwise the
 * pieces stop at the last whole one and the tail, shorter than W and so than dist, is one
 * non-overlapping memcpy. Periods 2..7 store 8 bytes at a time from a pattern buffer. */
static inline void copy_match(uint8_t *op, const uint8_t *oend, size_t dist, size_t len) {
  const uint8_t *ref = op - dist;
  bool slack = (size_t)(oend - op) >= len + 31;
  size_t w = dist >= 32 ? 32 : dist >= 16 ? 16 : 8;
  size_t lim = slack ? len + w - 1 : len; /* pieces start while i + w <= lim */
  size_t i = 0;

  if (dist == 1) {
    memset(op, *ref, len);
    return;
  }
  if (dist < 8) {
    uint8_t pat[16];
    size_t phase = 0, step = 8 - dist * (8 / dist); /* 8 % dist */
    memcpy(pat, ref, dist);
    for (size_t k = dist; k < 8 + dist; k++) pat[k] = pat[k - dist];
    for (; i + 8 <= lim; i += 8) {
      memcpy(op + i, pat + phase, 8);
      phase += step;
      if (phase >= dist) phase -= dist;
    }
    for (; i < len; i++) op[i] = ref[i]; /* tail near the end of the output */
    return;
  }
  if (w == 32)
    for (; i + 32 <= lim; i += 32) memcpy(op + i, ref + i, 32);
  else if (w == 16)
    for (; i + 16 <= lim; i += 16) memcpy(op + i, ref + i, 16);
  else
    for (; i + 8 <= lim; i += 8) memcpy(op + i, ref + i, 8);
  if (i < len) memcpy(op + i, ref + i, len - i);
}

/* The match whose control byte ctrl (>= 32) was read, its other bytes at *ipp: its length
 * and distance, with *ipp moved past it. room: output bytes left, done: output bytes made.
 * false when the stream is truncated or the match does not fit. */
static inline bool read_match(unsigned ctrl, const uint8_t **ipp, const uint8_t *iend,
                              size_t room, size_t done, size_t *plen, size_t *pdist) {
  const uint8_t *ip = *ipp;
  size_t len = (ctrl >> 5) - 1; /* 0..5 (+3 below), or 6: a long match */
  size_t dist = (size_t)(ctrl & 31u) << 8;
  unsigned code;
  if (len == 6) {
    do {
      if (iend - ip < 2) return false;
      code = *ip++;
      len += code;
      if (len > room) return false; /* also keeps len from overflowing */
    } while (code == 255);
  } else if (iend - ip < 2) {
    return false;
  }
  code = *ip++;
  len += 3;
  if (code == 255 && dist == ((size_t)FAR_ESCAPE << 8)) {
    if (iend - ip < 2) return false;
    dist = ((size_t)ip[0] << 8 | ip[1]) + FAR_BASE;
    ip += 2;
  } else {
    dist += (size_t)code + 1;
  }
  *ipp = ip;
  *plen = len;
  *pdist = dist;
  return len <= room && dist <= done;
}

int32_t cat_blosclz_decompress(const uint8_t *in, int32_t n, uint8_t *out, int32_t nout) {
  if (in == NULL || out == NULL || n <= 0 || nout <= 0) return CATERVA_E_CORRUPT;

  const uint8_t *ip = in;
  const uint8_t *const iend = in + n;
  uint8_t *op = out;
  uint8_t *const oend = out + nout;
  unsigned ctrl = *ip++ & 31u;

  for (;;) {
    if (ctrl < 32) {
      size_t run = (size_t)ctrl + 1;
      if (run > (size_t)(iend - ip) || run > (size_t)(oend - op)) goto corrupt;
      if (iend - ip >= LITERAL_MAX && oend - op >= LITERAL_MAX)
        memcpy(op, ip, LITERAL_MAX); /* fixed size is faster; the excess is overwritten */
      else
        memcpy(op, ip, run);
      ip += run;
      op += run;
      if (ip == iend) break;
      ctrl = *ip++;
      continue;
    }
    size_t len, dist;
    if (!read_match(ctrl, &ip, iend, (size_t)(oend - op), (size_t)(op - out), &len, &dist))
      goto corrupt;
    if (ip == iend) break; /* the reference decoder does not execute a match that ends the input */
    ctrl = *ip++;
    copy_match(op, oend, dist, len);
    op += len;
  }

  if (op != oend) goto corrupt;
  return nout;

corrupt:
  return CATERVA_E_CORRUPT;
}

/* ---------------------------------------------------------------------------------------------
 * Bytes at some positions of a stream's output, without making the output
 *
 * The stream's tokens are listed (where each starts in the output, its length, and the input
 * offset of a literal run's bytes or a match's distance), checked as the decoder checks them.
 * A position in a literal run is read from the input; one in a match is the byte `dist` back,
 * or for a repeating match (dist < len) the same byte of the pattern's first period, which is
 * before the match: so a position moves strictly back until it lands in a literal run.
 * ------------------------------------------------------------------------------------------- */

typedef struct lz_op {
  int32_t at, len; /* output bytes [at, at + len) */
  int32_t src;     /* literal run: input offset of its bytes; match: -distance */
} lz_op;

/* The tokens of the stream into ops (room for n / 2 + 1); their count, or -1 when the
 * decoder would reject the stream. */
static int32_t list_ops(const uint8_t *in, int32_t n, int32_t nout, lz_op *ops) {
  const uint8_t *ip = in, *const iend = in + n;
  int32_t k = 0, at = 0;
  unsigned ctrl = *ip++ & 31u;
  for (;;) {
    if (ctrl < 32) {
      int32_t run = (int32_t)ctrl + 1;
      if (run > iend - ip || run > nout - at) return -1;
      ops[k++] = (lz_op){at, run, (int32_t)(ip - in)};
      ip += run;
      at += run;
      if (ip == iend) break;
      ctrl = *ip++;
      continue;
    }
    size_t len, dist;
    if (!read_match(ctrl, &ip, iend, (size_t)(nout - at), (size_t)at, &len, &dist)) return -1;
    if (ip == iend) break; /* not executed, as in the decoder */
    ctrl = *ip++;
    ops[k++] = (lz_op){at, (int32_t)len, -(int32_t)dist};
    at += (int32_t)len;
  }
  return at == nout ? k : -1;
}

/* The output byte at x (0 <= x < the output's length) from the listed tokens. */
static uint8_t byte_at(const uint8_t *in, const lz_op *ops, int32_t nops, int32_t x) {
  for (;;) {
    int32_t lo = 0, hi = nops - 1;
    while (lo < hi) { /* the last token starting at or before x */
      int32_t mid = lo + (hi - lo + 1) / 2;
      if (ops[mid].at <= x) lo = mid;
      else hi = mid - 1;
    }
    const lz_op *o = &ops[lo];
    if (o->src >= 0) return in[o->src + (x - o->at)];
    int32_t dist = -o->src;
    x = o->at - dist + (x - o->at) % dist; /* strictly before o->at */
  }
}

int32_t cat_blosclz_bytes_at(const uint8_t *in, int32_t n, int32_t nout, const int32_t *pos,
                             int32_t npos, uint8_t *out, void *scratch, size_t cap) {
  lz_op *ops = scratch;
  int32_t nops;
  if (in == NULL || n <= 0 || nout <= 0 || cap < CAT_BLOSCLZ_AT_SCRATCH(n))
    return CATERVA_E_CORRUPT;
  nops = list_ops(in, n, nout, ops);
  if (nops <= 0) return CATERVA_E_CORRUPT;
  for (int32_t k = 0; k < npos; k++) {
    if (pos[k] < 0 || pos[k] >= nout) return CATERVA_E_CORRUPT;
    out[k] = byte_at(in, ops, nops, pos[k]);
  }
  return npos;
}

/* ---------------------------------------------------------------------------------------------
 * Encoder
 *
 * Greedy LZ77 with a hash table of 4-byte sequences holding the last position of each hash.
 * A candidate is confirmed by comparing bytes, extended forwards (8 bytes at a time) and
 * backwards into pending literals, then emitted as a near or far match.  Positions without a
 * match are skipped faster the longer the current literal run gets, so incompressible input
 * costs little; higher clevels skip later and also look one position ahead for a longer match.
 * Every match ends at least one byte before the end of the input so the stream ends with a
 * literal run; the first position is never searched, so it starts with one.
 * ------------------------------------------------------------------------------------------- */

enum {
  MIN_INPUT = 16,    /* shorter inputs are never compressed */
  MIN_MATCH = 4,     /* shortest match searched for (the format allows 3) */
  FAR_MIN_MATCH = 7, /* a far match costs 4+ bytes, so a shorter one barely pays */
  HASH_LOG_MAX = 14,
  HASH_LOG_MIN = 8
};

typedef struct {
  uint8_t *op;   /* next output byte */
  uint8_t *oend; /* one past the last byte the stream may use */
} sink;

static inline uint32_t hash4(uint32_t seq, unsigned hash_log) {
  return (seq * 2654435761u) >> (32 - hash_log);
}

/* Index of the first differing byte in a nonzero XOR of two 8-byte loads. */
static inline size_t first_diff(uint64_t x) {
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return (size_t)__builtin_ctzll(x) >> 3;
#elif defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  return (size_t)__builtin_clzll(x) >> 3;
#else
  uint8_t b[8];
  size_t i = 0;
  memcpy(b, &x, sizeof b);
  while (b[i] == 0) i++;
  return i;
#endif
}

/* Number of equal bytes at a and b (b < a), stopping at aend. */
static inline size_t count_equal(const uint8_t *a, const uint8_t *b, const uint8_t *aend) {
  const uint8_t *const start = a;
  while (aend - a >= 8) {
    uint64_t x = load64(a) ^ load64(b);
    if (x != 0) return (size_t)(a - start) + first_diff(x);
    a += 8;
    b += 8;
  }
  while (a < aend && *a == *b) {
    a++;
    b++;
  }
  return (size_t)(a - start);
}

/* Emit count (>= 1) literal bytes as runs of at most 32; 0 when the stream would not fit. */
static int put_literals(sink *s, const uint8_t *lit, size_t count) {
  size_t need = count + (count + LITERAL_MAX - 1) / LITERAL_MAX;
  if (need > (size_t)(s->oend - s->op)) return 0;
  uint8_t *op = s->op;
  for (; count > LITERAL_MAX; count -= LITERAL_MAX, lit += LITERAL_MAX) {
    *op++ = LITERAL_MAX - 1;
    memcpy(op, lit, LITERAL_MAX);
    op += LITERAL_MAX;
  }
  *op++ = (uint8_t)(count - 1);
  memcpy(op, lit, count);
  s->op = op + count;
  return 1;
}

/* Emit a match of len >= 3 bytes at distance 1..FAR_MAX; 0 when the stream would not fit. */
static int put_match(sink *s, size_t len, size_t dist) {
  const int far = dist > NEAR_MAX; /* d = 8192 would collide with the far escape: far too */
  const size_t ext = len > SHORT_MATCH_MAX ? (len - LONG_MATCH_BASE) / 255 + 1 : 0;
  if (2 + ext + (far ? 2 : 0) > (size_t)(s->oend - s->op)) return 0;

  const unsigned hi = far ? FAR_ESCAPE : (unsigned)((dist - 1) >> 8);
  const unsigned lo = far ? 255u : (unsigned)((dist - 1) & 255);
  uint8_t *op = s->op;
  if (ext == 0) {
    *op++ = (uint8_t)((len - 2) << 5 | hi);
  } else {
    *op++ = (uint8_t)(7u << 5 | hi);
    memset(op, 255, ext - 1); /* L-9 as a run of 255s closed by a byte < 255 */
    op += ext - 1;
    *op++ = (uint8_t)((len - LONG_MATCH_BASE) - 255 * (ext - 1));
  }
  *op++ = (uint8_t)lo;
  if (far) {
    *op++ = (uint8_t)((dist - FAR_BASE) >> 8);
    *op++ = (uint8_t)((dist - FAR_BASE) & 255);
  }
  s->op = op;
  return 1;
}

/* Search parameters derived from clevel and the input size. */
typedef struct {
  unsigned hash_log;   /* table has 1 << hash_log entries */
  unsigned skip_shift; /* step = 1 + (failed searches since the last match >> skip_shift) */
  int lazy;            /* also try a match starting one byte later */
} params;

static params choose_params(int clevel, size_t n) {
  params p;
  p.hash_log = clevel >= 3 ? HASH_LOG_MAX : clevel == 2 ? 13 : 12;
  /* A table much larger than the input only costs clearing time (small split streams). */
  while (p.hash_log > HASH_LOG_MIN && ((size_t)1 << (p.hash_log - 1)) >= n) p.hash_log--;
  p.skip_shift = clevel <= 1 ? 4 : clevel <= 3 ? 5 : clevel <= 6 ? 6 : 8;
  p.lazy = clevel >= 7;
  return p;
}

/* Length of the match at ip against the table candidate ref, or 0 if there is none worth
 * emitting.  Matches stop at mend so that a literal always follows them. */
static inline size_t match_at(const uint8_t *ip, const uint8_t *ref, const uint8_t *mend) {
  size_t dist = (size_t)(ip - ref);
  if (dist == 0 || dist > FAR_MAX || load32(ip) != load32(ref)) return 0;
  size_t len = MIN_MATCH + count_equal(ip + MIN_MATCH, ref + MIN_MATCH, mend);
  if (dist > NEAR_MAX && len < FAR_MIN_MATCH) return 0;
  return len;
}

int32_t cat_blosclz_compress(int clevel, const uint8_t *in, int32_t n, uint8_t *out,
                             int32_t maxout) {
  if (in == NULL || out == NULL || n < MIN_INPUT || maxout <= 0 || clevel <= 0) return 0;
  if (clevel > 9) clevel = 9;

  /* Positions are kept as offsets from in; zero-initialised entries point at byte 0, which
   * is harmless because every candidate is verified.  64 KiB at most, on the stack (callers
   * must not run this on tiny thread stacks); only the part in use is cleared, so small split
   * streams do not pay for a large table. */
  uint32_t table[1u << HASH_LOG_MAX];
  const params p = choose_params(clevel, (size_t)n);
  memset(table, 0, sizeof(table[0]) << p.hash_log);

  /* The stream must be shorter than the input: stop as soon as it reaches n - 1 bytes. */
  sink s = {out, out + (maxout < n - 1 ? maxout : n - 1)};
  const uint8_t *const iend = in + n;
  const uint8_t *const mend = iend - 1;                 /* matches end here at the latest */
  const uint8_t *const ilimit = mend - MIN_MATCH;       /* last position a match may start */
  const uint8_t *ip = in + 1;                           /* byte 0 is always a literal */
  const uint8_t *anchor = in;                           /* first pending literal */
  size_t misses = 0;                                    /* failed searches since the last match */

  while (ip <= ilimit) {
    uint32_t h = hash4(load32(ip), p.hash_log);
    const uint8_t *ref = in + table[h];
    table[h] = (uint32_t)(ip - in);
    size_t len = match_at(ip, ref, mend);
    if (len == 0) {
      size_t step = 1 + (misses++ >> p.skip_shift);
      if (step > (size_t)(ilimit - ip)) break; /* no pointer beyond the input, even briefly */
      ip += step;
      continue;
    }

    if (p.lazy && ip + 1 <= ilimit) {
      /* Prefer a longer match one byte later: the skipped byte becomes a literal. */
      uint32_t h1 = hash4(load32(ip + 1), p.hash_log);
      const uint8_t *ref1 = in + table[h1];
      table[h1] = (uint32_t)(ip + 1 - in);
      size_t len1 = match_at(ip + 1, ref1, mend);
      if (len1 > len + 1) {
        ip++;
        ref = ref1;
        len = len1;
      }
    }

    /* Grow the match backwards over pending literals (never past byte 0's literal). */
    while (ip > anchor && ref > in && ip[-1] == ref[-1]) {
      ip--;
      ref--;
      len++;
    }

    if (ip > anchor && !put_literals(&s, anchor, (size_t)(ip - anchor))) return 0;
    if (!put_match(&s, len, (size_t)(ip - ref))) return 0;
    ip += len;
    anchor = ip;
    misses = 0;
    /* Seed the table just behind the new position so the next search has fresh candidates. */
    if (ip <= ilimit) table[hash4(load32(ip - 2), p.hash_log)] = (uint32_t)(ip - 2 - in);
  }

  if (!put_literals(&s, anchor, (size_t)(iend - anchor))) return 0;
  return (int32_t)(s.op - out);
}

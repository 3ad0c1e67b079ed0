/*
 * mpread.c -- reading msgpack values from untrusted bytes through a cat_rdr cursor.
 * Used by the frame header and trailer (frame_format.c) and the array metalayers
 * (array_meta.c). Every reader accepts each width msgpack allows for its type, checks that
 * the bytes are there, and returns false (consuming an unspecified part) when they are not.
 */
#include "cat_internal.h"

/* n big-endian bytes as an unsigned integer. */
static bool mp_be(cat_rdr *r, int n, uint64_t *v) {
  const uint8_t *p;
  if (!cat_rdr_bytes(r, (size_t)n, &p)) return false;
  *v = 0;
  for (int i = 0; i < n; i++) *v = *v << 8 | p[i];
  return true;
}

bool cat_mp_int(cat_rdr *r, int64_t *v) {
  uint8_t m;
  uint64_t u;
  if (!cat_rdr_u8(r, &m)) return false;
  if (m <= 0x7f) { *v = m; return true; }
  if (m >= 0xe0) { *v = (int8_t)m; return true; }
  switch (m) {
  case 0xcc: if (!mp_be(r, 1, &u)) return false; *v = (int64_t)u; return true;
  case 0xcd: if (!mp_be(r, 2, &u)) return false; *v = (int64_t)u; return true;
  case 0xce: if (!mp_be(r, 4, &u)) return false; *v = (int64_t)u; return true;
  case 0xcf: if (!mp_be(r, 8, &u) || u > INT64_MAX) return false; *v = (int64_t)u; return true;
  case 0xd0: if (!mp_be(r, 1, &u)) return false; *v = (int8_t)u; return true;
  case 0xd1: if (!mp_be(r, 2, &u)) return false; *v = (int16_t)u; return true;
  case 0xd2: if (!mp_be(r, 4, &u)) return false; *v = (int32_t)u; return true;
  case 0xd3: if (!mp_be(r, 8, &u)) return false; *v = (int64_t)u; return true;
  default: return false;
  }
}

/* A container header; fix_base 0x80 (map) or 0x90 (array), m16/m32 the wider markers. */
static bool mp_container(cat_rdr *r, uint8_t fix_base, uint8_t m16, uint8_t m32, uint32_t *n) {
  uint8_t m;
  uint64_t u;
  if (!cat_rdr_u8(r, &m)) return false;
  if ((m & 0xf0) == fix_base) { *n = m & 0x0f; return true; }
  if (m == m16 && mp_be(r, 2, &u)) { *n = (uint32_t)u; return true; }
  if (m == m32 && mp_be(r, 4, &u)) { *n = (uint32_t)u; return true; }
  return false;
}

bool cat_mp_map(cat_rdr *r, uint32_t *n) { return mp_container(r, 0x80, 0xde, 0xdf, n); }

bool cat_mp_array(cat_rdr *r, uint32_t *n) { return mp_container(r, 0x90, 0xdc, 0xdd, n); }

bool cat_mp_str(cat_rdr *r, const uint8_t **p, uint32_t *n) {
  uint8_t m;
  uint64_t u;
  if (!cat_rdr_u8(r, &m)) return false;
  if ((m & 0xe0) == 0xa0) u = m & 0x1f;
  else if (m == 0xd9) { if (!mp_be(r, 1, &u)) return false; }
  else if (m == 0xda) { if (!mp_be(r, 2, &u)) return false; }
  else if (m == 0xdb) { if (!mp_be(r, 4, &u)) return false; }
  else return false;
  *n = (uint32_t)u;
  return cat_rdr_bytes(r, u, p);
}

bool cat_mp_bin32_len(cat_rdr *r, uint32_t *n) {
  uint8_t m;
  uint64_t u;
  if (!cat_rdr_u8(r, &m) || m != 0xc6 || !mp_be(r, 4, &u)) return false;
  *n = (uint32_t)u;
  return true;
}

bool cat_mp_number(cat_rdr *r, double *v) {
  uint64_t u;
  int64_t i;
  cat_rdr save = *r;
  uint8_t m;
  if (!cat_rdr_u8(r, &m)) return false;
  if (m == 0xca || m == 0xcb) {
    if (!mp_be(r, m == 0xca ? 4 : 8, &u)) return false;
    if (m == 0xca) {
      uint32_t w = (uint32_t)u;
      float f;
      memcpy(&f, &w, sizeof f);
      *v = f;
    } else {
      memcpy(v, &u, sizeof *v);
    }
    return true;
  }
  *r = save;
  if (!cat_mp_int(r, &i)) return false;
  *v = (double)i;
  return true;
}

bool cat_mp_nil(cat_rdr *r) {
  if (cat_rdr_left(r) < 1 || *r->p != 0xc0) return false;
  r->p++;
  return true;
}

/* Payload bytes after a marker m of a str/bin/ext family: returns false for other markers. */
static bool mp_skip_sized(cat_rdr *r, uint8_t m) {
  uint64_t u;
  if ((m & 0xe0) == 0xa0) return cat_rdr_skip(r, m & 0x1f);
  switch (m) {
    case 0xd9: case 0xc4: return mp_be(r, 1, &u) && cat_rdr_skip(r, u);
    case 0xda: case 0xc5: return mp_be(r, 2, &u) && cat_rdr_skip(r, u);
    case 0xdb: case 0xc6: return mp_be(r, 4, &u) && cat_rdr_skip(r, u);
    case 0xd4: return cat_rdr_skip(r, 2);
    case 0xd5: return cat_rdr_skip(r, 3);
    case 0xd6: return cat_rdr_skip(r, 5);
    case 0xd7: return cat_rdr_skip(r, 9);
    case 0xd8: return cat_rdr_skip(r, 17);
    case 0xc7: return mp_be(r, 1, &u) && cat_rdr_skip(r, u + 1);
    case 0xc8: return mp_be(r, 2, &u) && cat_rdr_skip(r, u + 1);
    case 0xc9: return mp_be(r, 4, &u) && cat_rdr_skip(r, u + 1);
    default: return false;
  }
}

bool cat_mp_skip(cat_rdr *r, int depth) {
  static const uint8_t fixed[] = {/* payload bytes of 0xc0..0xd3 */
                                  0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 8, 1, 2, 4, 8, 1, 2, 4, 8};
  cat_rdr save = *r;
  uint32_t n;
  uint8_t m;
  if (depth <= 0 || !cat_rdr_u8(r, &m)) return false;
  if (m <= 0x7f || m >= 0xe0) return true;
  if (m >= 0xc0 && m <= 0xd3 && m != 0xc1 && (m < 0xc4 || m > 0xc9))
    return cat_rdr_skip(r, fixed[m - 0xc0]);
  if (mp_skip_sized(r, m)) return true;
  *r = save;
  if (cat_mp_map(r, &n)) {
    for (uint64_t i = 0; i < 2 * (uint64_t)n; i++)
      if (!cat_mp_skip(r, depth - 1)) return false;
    return true;
  }
  *r = save;
  if (cat_mp_array(r, &n)) {
    for (uint32_t i = 0; i < n; i++)
      if (!cat_mp_skip(r, depth - 1)) return false;
    return true;
  }
  return false;
}

int caterva_msgpack_complete(const void *buf, size_t len) {
  cat_rdr r;
  if (buf == NULL) return 0;
  cat_rdr_init(&r, buf, len);
  return cat_mp_skip(&r, 32);
}

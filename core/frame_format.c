/*
 * frame_format.c -- the bytes of Blosc2 frames: the header (fixed part and metalayers), the
 * trailer (vlmetalayers) and the offsets index chunk, read from untrusted images (one part
 * at a time, or a whole contiguous frame) and built for writing. No file I/O here, and no
 * calls into frame_file.c or schunk.c.
 *
 * Reading goes through a bounds-checked cursor and a small msgpack reader that accepts every
 * integer width (other writers may choose shorter encodings than the reference). msgpack-c's
 * unpacker is not used on untrusted bytes: it allocates objects for an array32/map32 header
 * before checking the elements exist. Writing uses msgpack-c's packer with its fixed-width
 * functions, and explicit bytes where the reference insists on a marker the packer would
 * shorten (map16 DE, array16 DC, bin32 C6).
 */
#include "frame_internal.h"

#include <msgpack.h>
#include <stdlib.h>

/* The bin32 (C6) that a metalayer offset points at, inside [lo, hi) of the frame. */
static bool mp_bin32_at(const uint8_t *frame, int64_t off, int64_t lo, int64_t hi,
                        const uint8_t **p, int32_t *n) {
  cat_rdr r;
  uint32_t u;
  if (off < lo || off >= hi) return false;
  cat_rdr_init(&r, frame + off, (size_t)(hi - off));
  if (!cat_mp_bin32_len(&r, &u) || u > INT32_MAX) return false;
  *n = (int32_t)u;
  return cat_rdr_bytes(&r, u, p);
}

static uint8_t *dup_bytes(const uint8_t *p, size_t n) {
  uint8_t *q = malloc(n ? n : 1);
  if (q != NULL && n) memcpy(q, p, n);
  return q;
}

/* ---- fixed header part --------------------------------------------------------------- */

/*
 * Fixed header part (87 bytes), big-endian msgpack:
 *   0  9E              fixarray(14)
 *   1  A8 "b2frame\0"  magic
 *  10  D2 i32          header_len (header incl. metalayers = offset of the first chunk)
 *  15  CF u64          frame_len (header + chunks + index + trailer)
 *  24  A4 g t c o      general flags (version | offset-size code << 4), frame type,
 *                      compcode | clevel << 4, other flags (splitmode - 1)
 *  29  D3 i64          nbytes (sum of uncompressed chunk sizes)
 *  38  D3 i64          cbytes (chunk section length; index chunk at header_len + cbytes)
 *  47  D2 i32          typesize
 *  52  D2 i32          blocksize
 *  57  D2 i32          chunksize (0: variable, unsupported)
 *  62  D1 i16          nthreads for compression (informational)
 *  65  D1 i16          nthreads for decompression (informational)
 *  68  C2 | C3         has vlmetalayers
 *  69  D8 06           fixext16, ext type = number of filter slots
 *  71  u8[6] filters   77 udcodec   78 codec meta   79 u8[6] filters meta
 *  85  other flags 2 (bit 0: use_dict)   86 reserved
 */
static const struct { uint8_t off, marker; } cat_fh_markers[] = {
    {0, 0x9e}, {1, 0xa8}, {10, 0xd2}, {15, 0xcf}, {24, 0xa4}, {29, 0xd3}, {38, 0xd3},
    {47, 0xd2}, {52, 0xd2}, {57, 0xd2}, {62, 0xd1}, {65, 0xd1}, {69, 0xd8},
};

/* Does the frame's magic -- 9E A8 "b2frame\0", its first 10 bytes -- begin the have bytes at h
** (as far as they go)? */
static bool has_magic(const uint8_t *h, size_t have) {
  static const uint8_t magic[10] = {0x9e, 0xa8, 'b', '2', 'f', 'r', 'a', 'm', 'e', 0};
  return have > 0 && memcmp(h, magic, have < sizeof magic ? have : sizeof magic) == 0;
}

/* The error for bytes that are no Blosc2 frame at all, naming the file or URL (without a
** presigned URL's query string). */
static int not_a_frame(caterva_ctx *ctx, const caterva_schunk *sc) {
  const char *p = sc->path, *q = p != NULL ? strchr(p, '?') : NULL;
  if (p == NULL) return cat_error(ctx, CATERVA_E_CORRUPT, "not a Blosc2 frame");
  return cat_error(ctx, CATERVA_E_CORRUPT,
                   "not a Blosc2 frame: '%.*s%s' does not begin with a frame's magic bytes",
                   q != NULL ? (int)(q - p) : (int)strlen(p), p, q != NULL ? "?..." : "");
}

static int check_fixed_markers(caterva_ctx *ctx, const uint8_t *h) {
  for (size_t k = 0; k < sizeof cat_fh_markers / sizeof cat_fh_markers[0]; k++)
    if (h[cat_fh_markers[k].off] != cat_fh_markers[k].marker)
      return cat_error(ctx, CATERVA_E_CORRUPT, "frame header: byte %d is 0x%02x, expected 0x%02x",
                       cat_fh_markers[k].off, h[cat_fh_markers[k].off], cat_fh_markers[k].marker);
  if (memcmp(h + 2, "b2frame", 8) != 0)
    return cat_error(ctx, CATERVA_E_CORRUPT, "not a Blosc2 frame (bad magic)");
  if (h[CAT_FH_VLMETA] != 0xc2 && h[CAT_FH_VLMETA] != 0xc3)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame header: bad vlmetalayer flag 0x%02x",
                     h[CAT_FH_VLMETA]);
  return CATERVA_OK;
}

static int check_flags(caterva_ctx *ctx, const uint8_t *h, int frame_type) {
  uint8_t g = h[CAT_FH_GENERAL];
  if ((g & 0x0f) > 3)
    return cat_error(ctx, CATERVA_E_UNSUPPORTED, "frame format version %d", g & 0x0f);
  if (((g >> 4) & 3) != 1)
    return cat_error(ctx, CATERVA_E_UNSUPPORTED, "frame offsets are not 64-bit (flags 0x%02x)", g);
  if (g & 0x40) return cat_error(ctx, CATERVA_E_UNSUPPORTED, "frame with variable chunk sizes");
  if ((h[CAT_FH_TYPE] & 0x0f) != frame_type)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame type %d, expected %s", h[CAT_FH_TYPE] & 0x0f,
                     frame_type == CAT_FRAME_SPARSE ? "sparse (1)" : "contiguous (0)");
  return CATERVA_OK;
}

static void cparams_from_fixed(caterva_schunk *sc) {
  const uint8_t *h = sc->fixed;
  caterva_cparams_init(&sc->cp);
  sc->cp.codec = (h[CAT_FH_CODEC] & 0x0f) == 6 ? h[CAT_FH_UDCODEC] : (h[CAT_FH_CODEC] & 0x0f);
  sc->cp.clevel = h[CAT_FH_CODEC] >> 4;
  sc->cp.typesize = sc->typesize;
  sc->cp.blocksize = sc->blocksize;
  sc->cp.splitmode = (h[CAT_FH_OTHER] & 3) + 1;
  memcpy(sc->cp.filters, h + CAT_FH_FILTERS, CATERVA_MAX_FILTERS);
  memcpy(sc->cp.filters_meta, h + CAT_FH_FILTERS_META, CATERVA_MAX_FILTERS);
}

/* Sizes of the fixed part; sc->frame_len/header_len are set, frame_len <= len. */
static int parse_sizes(caterva_ctx *ctx, caterva_schunk *sc, size_t len) {
  const uint8_t *h = sc->fixed;
  int64_t header_len = (int32_t)cat_be32(h + CAT_FH_HEADER_LEN);
  int64_t frame_len = (int64_t)cat_be64(h + CAT_FH_FRAME_LEN);
  int32_t ts = (int32_t)cat_be32(h + CAT_FH_TYPESIZE);
  sc->blocksize = (int32_t)cat_be32(h + CAT_FH_BLOCKSIZE);
  sc->chunksize = (int32_t)cat_be32(h + CAT_FH_CHUNKSIZE);
  sc->nbytes = (int64_t)cat_be64(h + CAT_FH_NBYTES);
  sc->cbytes = (int64_t)cat_be64(h + CAT_FH_CBYTES);
  if (header_len < CAT_FH_SIZE || frame_len < 0 || header_len > frame_len - CAT_TRAILER_MIN)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame header: header_len %lld, frame_len %lld",
                     (long long)header_len, (long long)frame_len);
  if ((uint64_t)frame_len > len)
    return cat_error(ctx, CATERVA_E_CORRUPT,
                     "frame truncated: header says %lld bytes, %zu available",
                     (long long)frame_len, len);
  if (ts < 1 || sc->blocksize < 0 || sc->chunksize < 0 || sc->nbytes < 0 || sc->cbytes < 0)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame header: negative size field");
  if (sc->nbytes > 0 && sc->chunksize == 0)
    return cat_error(ctx, CATERVA_E_UNSUPPORTED, "frame with variable chunk sizes");
  sc->typesize = ts;
  sc->header_len = header_len;
  sc->frame_len = frame_len;
  sc->nchunks = sc->chunksize > 0 ? cat_ceil_div64(sc->nbytes, sc->chunksize) : 0;
  return CATERVA_OK;
}

/*
 * Metalayers, header bytes 87 .. header_len-1:
 *   93                     fixarray(3)
 *   CD u16                 index size (informational)
 *   DE u16 n               map16: n x { A0+len name, D2 i32 offset of the content's C6 }
 *   DC u16 n               array16: n x { C6 u32 len, content bytes (raw) }
 * Contents are located through the map's offsets (from the frame start), like the
 * reference reader does.
 */
static int parse_one_meta(caterva_ctx *ctx, caterva_schunk *sc, cat_rdr *r, const uint8_t *frame) {
  cat_meta *m = &sc->meta[sc->nmeta];
  const uint8_t *name, *content;
  uint32_t nlen;
  int64_t off;
  int32_t clen;
  /* a name is a C string: one holding a NUL byte could not be written back as it was */
  if (!cat_mp_str(r, &name, &nlen) || nlen > CATERVA_METALAYER_NAME_MAX ||
      memchr(name, 0, nlen) != NULL || !cat_mp_int(r, &off))
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame header: bad metalayer entry %d", sc->nmeta);
  if (!mp_bin32_at(frame, off, CAT_FH_SIZE, sc->header_len, &content, &clen))
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame header: metalayer %d content out of bounds",
                     sc->nmeta);
  memcpy(m->name, name, nlen);
  m->name[nlen] = '\0';
  m->content = dup_bytes(content, (size_t)clen);
  if (m->content == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  m->len = clen;
  sc->nmeta++;
  return CATERVA_OK;
}

static int parse_metalayers(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame) {
  cat_rdr r;
  uint32_t n3, n, narr;
  int64_t isize;
  if (sc->header_len == CAT_FH_SIZE) return CATERVA_OK; /* no metalayer section at all */
  cat_rdr_init(&r, frame + CAT_FH_SIZE, (size_t)(sc->header_len - CAT_FH_SIZE));
  if (!cat_mp_array(&r, &n3) || n3 != 3 || !cat_mp_int(&r, &isize) || !cat_mp_map(&r, &n))
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame header: malformed metalayer section");
  if (n > CATERVA_MAX_METALAYERS)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame header: %u metalayers (max %d)", n,
                     CATERVA_MAX_METALAYERS);
  for (uint32_t k = 0; k < n; k++) {
    int rc = parse_one_meta(ctx, sc, &r, frame);
    if (rc < 0) return rc;
  }
  if (!cat_mp_array(&r, &narr) || narr != n)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame header: metalayer array does not match map");
  return CATERVA_OK;
}

int cat_frame_parse_header_part(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame,
                                size_t have, size_t total, int frame_type) {
  int rc;
  if (!has_magic(frame, have)) return not_a_frame(ctx, sc);
  if (have < CAT_FH_SIZE)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame too short (%zu bytes)", have);
  rc = check_fixed_markers(ctx, frame);
  if (rc < 0) return rc;
  rc = check_flags(ctx, frame, frame_type);
  if (rc < 0) return rc;
  memcpy(sc->fixed, frame, CAT_FH_SIZE);
  rc = parse_sizes(ctx, sc, total);
  if (rc < 0) return rc;
  if (sc->header_len > (int64_t)have) return CATERVA_E_NOSPACE; /* the caller fetches more */
  cparams_from_fixed(sc);
  return parse_metalayers(ctx, sc, frame);
}

int cat_frame_parse_header(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame,
                           size_t len, int frame_type) {
  return cat_frame_parse_header_part(ctx, sc, frame, len, len, frame_type);
}

/* ---- trailer ------------------------------------------------------------------------- */

/*
 * Trailer, at frame_len - trailer_len:
 *   94                     fixarray(4)
 *   01                     trailer version
 *   93 CD u16              fixarray(3), index size (informational)
 *   DE u16 n               map16: n x { name, D2 i32 offset (from the trailer start) }
 *   DC u16 n               array16: n x { C6 u32 len, a complete Blosc2 chunk }
 *   CE u32 trailer_len     at frame_len - 23
 *   D8 00 + 16 bytes       fingerprint (none)
 */
/* Whether [p, p + n) lies in a reader's image of its file (sc->base_kept): its bytes stay
 * valid and unchanged until the schunk is freed, so they need no copy. A million-chunk
 * array's block statistics are a vlmetalayer of 0.65 MB. */
static bool in_readonly_map(const caterva_schunk *sc, const uint8_t *p, int32_t n) {
  size_t at;
  if (sc->writable || !sc->base_kept || sc->base == NULL || p < sc->base) return false;
  at = (size_t)(p - sc->base);
  return at <= sc->base_len && (size_t)n <= sc->base_len - at;
}

static int parse_one_vlmeta(caterva_ctx *ctx, caterva_schunk *sc, cat_rdr *r,
                            const uint8_t *t, int64_t tlen) {
  cat_vlmeta *v = &sc->vlmeta[sc->nvlmeta];
  const uint8_t *name, *content;
  uint32_t nlen;
  int64_t off;
  int32_t clen;
  /* a NUL byte in the name (found by tests/fuzz/fuzz_frame): written back as a shorter or empty
   * name, which then did not read */
  if (!cat_mp_str(r, &name, &nlen) || nlen == 0 || nlen > 255 || memchr(name, 0, nlen) != NULL ||
      !cat_mp_int(r, &off))
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame trailer: bad vlmetalayer entry %d",
                     sc->nvlmeta);
  if (!mp_bin32_at(t, off, 0, tlen, &content, &clen) ||
      clen < CATERVA_CHUNK_HEADER_SIZE)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame trailer: vlmetalayer %d out of bounds",
                     sc->nvlmeta);
  v->lazy = sc->lazy_vlmeta != NULL && strlen(sc->lazy_vlmeta) == nlen &&
            memcmp(sc->lazy_vlmeta, name, nlen) == 0;
  v->mapped = !v->lazy && in_readonly_map(sc, content, clen);
  v->name = (char *)dup_bytes(name, nlen + 1);
  v->chunk = v->lazy || v->mapped ? (uint8_t *)content : dup_bytes(content, (size_t)clen);
  if (v->name == NULL || v->chunk == NULL) {
    free(v->name);
    if (!v->lazy && !v->mapped) free(v->chunk);
    v->lazy = v->mapped = false;
    return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  }
  v->name[nlen] = '\0';
  v->cbytes = clen;
  sc->nvlmeta++;
  return CATERVA_OK;
}

static int parse_vlmeta_section(caterva_ctx *ctx, caterva_schunk *sc, cat_rdr *r,
                                const uint8_t *t, int64_t tlen) {
  uint32_t n3, n, narr;
  int64_t isize;
  if (!cat_mp_array(r, &n3) || n3 != 3 || !cat_mp_int(r, &isize) || !cat_mp_map(r, &n))
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame trailer: malformed vlmetalayer section");
  if (n > CATERVA_MAX_VLMETALAYERS)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame trailer: %u vlmetalayers", n);
  if (n > 0) {
    sc->vlmeta = calloc(n, sizeof *sc->vlmeta);
    if (sc->vlmeta == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  }
  for (uint32_t k = 0; k < n; k++) {
    int rc = parse_one_vlmeta(ctx, sc, r, t, tlen);
    if (rc < 0) return rc;
  }
  if (!cat_mp_array(r, &narr) || narr != n)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame trailer: vlmetalayer array does not match");
  return CATERVA_OK;
}

int cat_frame_parse_trailer_at(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *win,
                               int64_t wstart, int64_t min_start, int64_t *start) {
  int64_t tail = sc->frame_len - CAT_TRAILER_TAIL, tlen, version;
  uint32_t n4;
  cat_rdr r;
  if (min_start < wstart || tail < min_start || win[tail - wstart] != 0xce)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame trailer: missing length marker");
  tlen = cat_be32(win + (tail - wstart) + 1);
  if (tlen < CAT_TRAILER_MIN || tlen > sc->frame_len - min_start)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame trailer: bad length %lld", (long long)tlen);
  *start = sc->frame_len - tlen;
  cat_rdr_init(&r, win + (*start - wstart), (size_t)(tail - *start));
  if (!cat_mp_array(&r, &n4) || n4 != 4 || !cat_mp_int(&r, &version) || version < 0)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame trailer: malformed");
  return parse_vlmeta_section(ctx, sc, &r, win + (*start - wstart), tail - *start);
}

int cat_frame_trailer_items(const uint8_t *t, int64_t have, int64_t tlen, cat_trailer_item *it,
                            int max, int *n, int64_t *lead) {
  uint32_t n4, n3, nmap, narr;
  int64_t version, isize;
  cat_rdr r;
  bool full = have >= tlen - CAT_TRAILER_TAIL;
  *n = 0;
  if (have > tlen) have = tlen;
  cat_rdr_init(&r, t, (size_t)have);
  if (!cat_mp_array(&r, &n4) || !cat_mp_int(&r, &version) || !cat_mp_array(&r, &n3) ||
      !cat_mp_int(&r, &isize) || !cat_mp_map(&r, &nmap))
    return full ? -1 : 0;
  if (n4 != 4 || n3 != 3 || nmap > CATERVA_MAX_VLMETALAYERS) return -1;
  for (uint32_t k = 0; k < nmap; k++) {
    const uint8_t *name;
    uint32_t nlen;
    int64_t off;
    if (!cat_mp_str(&r, &name, &nlen) || !cat_mp_int(&r, &off)) return full ? -1 : 0;
    if (off < 0 || off >= tlen) return -1;
    if ((int)k < max) it[(*n)++] = (cat_trailer_item){name, nlen, off};
  }
  if (!cat_mp_array(&r, &narr)) return full ? -1 : 0;
  *lead = r.p - t;
  return 1;
}

int cat_frame_parse_trailer(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame,
                            int64_t min_start, int64_t *start) {
  return cat_frame_parse_trailer_at(ctx, sc, frame, 0, min_start, start);
}

/* ---- offsets index ------------------------------------------------------------------- */

/* An entry is valid if it points inside the chunk section (contiguous; room for at least a
 * chunk header), names an 8-hex-digit file (sparse), or is a zero/NaN/uninit special. */
int cat_frame_check_entry(caterva_ctx *ctx, const caterva_schunk *sc, int64_t i, int64_t e) {
  if (e < 0) {
    uint64_t u = (uint64_t)e, top = u >> 56;
    if ((top != 0x81 && top != 0x82 && top != 0x84) || (u << 8) != 0)
      return cat_error(ctx, CATERVA_E_CORRUPT, "offsets index: bad special entry %lld: 0x%016llx",
                       (long long)i, (unsigned long long)u);
    return CATERVA_OK;
  }
  if (sc->store == CATERVA_STORE_SPARSE) {
    if (e > 0xffffffffLL)
      return cat_error(ctx, CATERVA_E_CORRUPT, "offsets index: chunk file number %lld too large",
                       (long long)e);
    return CATERVA_OK;
  }
  if (e > sc->section - CATERVA_CHUNK_HEADER_SIZE)
    return cat_error(ctx, CATERVA_E_CORRUPT,
                     "offsets index: chunk %lld at offset %lld outside the chunk section "
                     "(%lld bytes)", (long long)i, (long long)e, (long long)sc->section);
  return CATERVA_OK;
}

static int check_index_size(caterva_ctx *ctx, const caterva_schunk *sc,
                            const caterva_chunk_info *ci, int64_t *need) {
  int64_t limit = CAT_INDEX_MAX_FIXED;
  if (!cat_mul64(sc->nchunks, 8, need) || ci->nbytes != *need)
    return cat_error(ctx, CATERVA_E_CORRUPT,
                     "offsets index holds %d bytes, %lld chunks need %lld",
                     (int)ci->nbytes, (long long)sc->nchunks, (long long)sc->nchunks * 8);
  /* A lying header must not make a small frame allocate gigabytes: real indices compress
   * well, but not by more than CAT_INDEX_MAX_RATIO. */
  if (sc->frame_len <= INT64_MAX / CAT_INDEX_MAX_RATIO &&
      sc->frame_len * CAT_INDEX_MAX_RATIO > limit)
    limit = sc->frame_len * CAT_INDEX_MAX_RATIO;
  if (*need > limit)
    return cat_error(ctx, CATERVA_E_UNSUPPORTED, "offsets index of %lld bytes is too large",
                     (long long)*need);
  return CATERVA_OK;
}

int cat_frame_parse_index(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame,
                          int64_t pos, int64_t avail) {
  caterva_chunk_info ci;
  int64_t need = 0;
  int rc;
  if (sc->nchunks == 0) return CATERVA_OK;
  if (avail < CATERVA_CHUNK_HEADER_SIZE ||
      caterva_chunk_info_get(frame + pos, (size_t)avail, &ci) < 0)
    return cat_error(ctx, CATERVA_E_CORRUPT, "offsets index chunk at %lld is malformed",
                     (long long)pos);
  rc = check_index_size(ctx, sc, &ci, &need);
  if (rc < 0) return rc;
  sc->entries = malloc((size_t)need);
  if (sc->entries == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  rc = caterva_chunk_decompress(ctx, frame + pos, (size_t)ci.cbytes, sc->entries, (int32_t)need);
  if (rc < 0) return cat_wrap_error(ctx, rc, "offsets index");
  for (int64_t i = 0; i < sc->nchunks; i++) {
    uint8_t le[8];
    memcpy(le, &sc->entries[i], 8);
    sc->entries[i] = (int64_t)cat_le64(le);
    rc = cat_frame_check_entry(ctx, sc, i, sc->entries[i]);
    if (rc < 0) return rc;
  }
  return ci.cbytes;
}

/* ---- the whole contiguous frame ------------------------------------------------------ */

/* Header, then the trailer (after the chunk section), then the offsets index between them. */
int cat_frame_parse_contiguous(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame,
                               size_t len) {
  int64_t idx, tstart = 0;
  int rc = cat_frame_parse_header(ctx, sc, frame, len, CAT_FRAME_CONTIGUOUS);
  if (rc < 0) return rc;
  if (sc->cbytes > sc->frame_len - sc->header_len - CAT_TRAILER_MIN)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame: chunk section of %lld bytes exceeds the frame",
                     (long long)sc->cbytes);
  sc->section = sc->cbytes;
  idx = sc->header_len + sc->cbytes;
  rc = cat_frame_parse_trailer(ctx, sc, frame, idx, &tstart);
  if (rc < 0) return rc;
  if (frame == sc->base) {
    rc = cat_index_try_lazy(ctx, sc, idx, tstart - idx);
    if (rc != 0) return rc < 0 ? rc : CATERVA_OK;
  }
  rc = cat_frame_parse_index(ctx, sc, frame, idx, tstart - idx);
  return rc < 0 ? rc : CATERVA_OK;
}

/* ---- building ------------------------------------------------------------------------- */

static int sbuf_bytes(msgpack_sbuffer *sb, const void *p, size_t n) {
  return msgpack_sbuffer_write(sb, (const char *)p, n);
}

/* A marker byte followed by a big-endian u16 or u32 (DE/DC u16, C6 u32). */
static int sbuf_marker16(msgpack_sbuffer *sb, uint8_t marker, uint16_t v) {
  uint8_t b[3] = {marker, (uint8_t)(v >> 8), (uint8_t)v};
  return sbuf_bytes(sb, b, 3);
}
static int sbuf_marker32(msgpack_sbuffer *sb, uint8_t marker, uint32_t v) {
  uint8_t b[5] = {marker};
  cat_put_be32(b + 1, v);
  return sbuf_bytes(sb, b, 5);
}

/* Take the packed bytes out of an sbuffer (an empty result is still a valid pointer). */
static int sbuf_take(caterva_ctx *ctx, msgpack_sbuffer *sb, int err, uint8_t **out, size_t *len) {
  if (err != 0 || sb->data == NULL) {
    msgpack_sbuffer_destroy(sb);
    return cat_error(ctx, CATERVA_E_NOMEM, "out of memory while packing a frame");
  }
  *len = sb->size;
  *out = (uint8_t *)msgpack_sbuffer_release(sb);
  return CATERVA_OK;
}

int cat_frame_fixed_init(caterva_ctx *ctx, uint8_t fixed[CAT_FH_SIZE], const caterva_cparams *cp,
                         int32_t chunksize) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  uint8_t flags[4], ext[16] = {0}, *bytes = NULL;
  size_t len = 0;
  int err = 0, rc;
  flags[0] = 0x12; /* frame format version 2, 64-bit offsets */
  flags[1] = CAT_FRAME_CONTIGUOUS;
  flags[2] = (uint8_t)((cp->codec < 16 ? cp->codec : 6) | cp->clevel << 4);
  flags[3] = (uint8_t)((cp->splitmode - 1) & 3);
  memcpy(ext, cp->filters, CATERVA_MAX_FILTERS);
  ext[CAT_FH_UDCODEC - CAT_FH_FILTERS] = (uint8_t)cp->codec;
  memcpy(ext + (CAT_FH_FILTERS_META - CAT_FH_FILTERS), cp->filters_meta, CATERVA_MAX_FILTERS);
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  err |= msgpack_pack_array(&pk, 14);
  err |= msgpack_pack_str_with_body(&pk, "b2frame", 8);
  err |= msgpack_pack_fix_int32(&pk, 0);          /* header_len */
  err |= msgpack_pack_fix_uint64(&pk, 0);         /* frame_len */
  err |= msgpack_pack_str_with_body(&pk, flags, 4);
  err |= msgpack_pack_fix_int64(&pk, 0);          /* nbytes */
  err |= msgpack_pack_fix_int64(&pk, 0);          /* cbytes */
  err |= msgpack_pack_fix_int32(&pk, cp->typesize);
  err |= msgpack_pack_fix_int32(&pk, cp->blocksize);
  err |= msgpack_pack_fix_int32(&pk, chunksize);
  err |= msgpack_pack_fix_int16(&pk, 1);
  err |= msgpack_pack_fix_int16(&pk, 1);
  err |= msgpack_pack_false(&pk);
  err |= msgpack_pack_ext_with_body(&pk, ext, sizeof ext, CATERVA_MAX_FILTERS);
  rc = sbuf_take(ctx, &sb, err, &bytes, &len);
  if (rc < 0) return rc;
  if (len == CAT_FH_SIZE) memcpy(fixed, bytes, CAT_FH_SIZE);
  free(bytes);
  if (len != CAT_FH_SIZE)
    return cat_error(ctx, CATERVA_E_INVALID, "internal: fixed header of %zu bytes", len);
  return CATERVA_OK;
}

void cat_frame_fixed_patch(const caterva_schunk *sc, uint8_t out[CAT_FH_SIZE], int frame_type,
                           int64_t header_len, int64_t frame_len, int64_t nbytes,
                           int64_t cbytes) {
  memcpy(out, sc->fixed, CAT_FH_SIZE);
  cat_put_be32(out + CAT_FH_HEADER_LEN, (uint32_t)header_len);
  cat_put_be64(out + CAT_FH_FRAME_LEN, (uint64_t)frame_len);
  out[CAT_FH_TYPE] = (uint8_t)((out[CAT_FH_TYPE] & 0xf0) | frame_type);
  cat_put_be64(out + CAT_FH_NBYTES, (uint64_t)nbytes);
  cat_put_be64(out + CAT_FH_CBYTES, (uint64_t)cbytes);
  cat_put_be32(out + CAT_FH_TYPESIZE, (uint32_t)sc->typesize);
  cat_put_be32(out + CAT_FH_BLOCKSIZE, (uint32_t)sc->blocksize);
  cat_put_be32(out + CAT_FH_CHUNKSIZE, (uint32_t)sc->chunksize);
  out[CAT_FH_VLMETA] = sc->nvlmeta > 0 ? 0xc3 : 0xc2;
}

/* Encoded size of a msgpack str of n bytes. */
static int64_t mp_str_size(size_t n) { return n < 32 ? 1 + (int64_t)n : n < 256 ? 2 + (int64_t)n : 3 + (int64_t)n; }

/* Metalayers (header) and vlmetalayers (trailer) share one layout after their own lead-in:
 *   DE u16 n {str name, D2 i32 offset-of-its-C6}*n   DC u16 n {C6 u32 len, bytes}*n
 * A section is read through an accessor so both are packed and measured by the same code. */
typedef struct named_bin {
  const char *name;
  const uint8_t *bytes;
  int32_t len;
} named_bin;
typedef named_bin (*bin_at_fn)(const caterva_schunk *sc, int k);

static named_bin meta_at(const caterva_schunk *sc, int k) {
  named_bin b = {sc->meta[k].name, sc->meta[k].content, sc->meta[k].len};
  return b;
}

static named_bin vlmeta_at(const caterva_schunk *sc, int k) {
  named_bin b = {sc->vlmeta[k].name, sc->vlmeta[k].chunk, sc->vlmeta[k].cbytes};
  return b;
}

/* Bytes of a section's lead-in (lead bytes) plus its map and array16 header. */
static int64_t bins_map_len(const caterva_schunk *sc, int n, bin_at_fn at, int64_t lead) {
  int64_t len = lead + 3 + 3;
  for (int k = 0; k < n; k++) len += mp_str_size(strlen(at(sc, k).name)) + 5;
  return len;
}

/* Bytes of a section's contents (each with its C6 marker and length). */
static int64_t bins_data_len(const caterva_schunk *sc, int n, bin_at_fn at) {
  int64_t len = 0;
  for (int k = 0; k < n; k++) len += 5 + (int64_t)at(sc, k).len;
  return len;
}

/* Pack the map and the array of a section; off is where the first C6 byte lands. */
static int pack_bins(msgpack_packer *pk, msgpack_sbuffer *sb, const caterva_schunk *sc, int n,
                     bin_at_fn at, int64_t off) {
  int err = sbuf_marker16(sb, 0xde, (uint16_t)n);
  for (int k = 0; k < n; k++) {
    named_bin b = at(sc, k);
    err |= msgpack_pack_str_with_body(pk, b.name, strlen(b.name));
    err |= msgpack_pack_fix_int32(pk, (int32_t)off);
    off += 5 + b.len;
  }
  err |= sbuf_marker16(sb, 0xdc, (uint16_t)n);
  for (int k = 0; k < n; k++) {
    named_bin b = at(sc, k);
    err |= sbuf_marker32(sb, 0xc6, (uint32_t)b.len);
    if (b.len > 0) err |= sbuf_bytes(sb, b.bytes, (size_t)b.len);
  }
  return err;
}

/* Bytes of the metalayer section before the first C6 (93 CD u16 DE u16 names DC u16). */
static int64_t meta_map_len(const caterva_schunk *sc) {
  return bins_map_len(sc, sc->nmeta, meta_at, 1 + 3);
}

int64_t cat_frame_header_len(const caterva_schunk *sc) {
  return CAT_FH_SIZE + meta_map_len(sc) + bins_data_len(sc, sc->nmeta, meta_at);
}

static int pack_metalayers(const caterva_schunk *sc, msgpack_sbuffer *sb) {
  msgpack_packer pk;
  int err = 0;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  err |= msgpack_pack_array(&pk, 3);
  /* index size: from the 93 byte through the end of the map */
  err |= msgpack_pack_fix_uint16(&pk, (uint16_t)(meta_map_len(sc) - 3));
  err |= pack_bins(&pk, sb, sc, sc->nmeta, meta_at, CAT_FH_SIZE + meta_map_len(sc));
  return err;
}

int cat_frame_build_header(caterva_ctx *ctx, const caterva_schunk *sc, int frame_type,
                           int64_t frame_len, int64_t nbytes, int64_t cbytes, uint8_t **out,
                           int64_t *len) {
  msgpack_sbuffer sb;
  uint8_t fixed[CAT_FH_SIZE];
  int64_t hlen = cat_frame_header_len(sc);
  size_t n = 0;
  int err, rc;
  if (hlen > INT32_MAX) return cat_error(ctx, CATERVA_E_OVERFLOW, "frame header too large");
  cat_frame_fixed_patch(sc, fixed, frame_type, hlen, frame_len, nbytes, cbytes);
  msgpack_sbuffer_init(&sb);
  err = sbuf_bytes(&sb, fixed, CAT_FH_SIZE);
  err |= pack_metalayers(sc, &sb);
  rc = sbuf_take(ctx, &sb, err, out, &n);
  if (rc < 0) return rc;
  if ((int64_t)n != hlen) {
    free(*out);
    *out = NULL;
    return cat_error(ctx, CATERVA_E_INVALID, "internal: header of %zu bytes, expected %lld", n,
                     (long long)hlen);
  }
  *len = hlen;
  return CATERVA_OK;
}

/* Bytes of the trailer from its start to the first C6 (94 01 93 CD u16 DE u16 names DC u16). */
static int64_t vlmeta_map_len(const caterva_schunk *sc) {
  return bins_map_len(sc, sc->nvlmeta, vlmeta_at, 1 + 1 + 1 + 3);
}

static int pack_trailer(const caterva_schunk *sc, msgpack_sbuffer *sb, int64_t total) {
  msgpack_packer pk;
  uint8_t fingerprint[16] = {0};
  int err = 0;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  err |= msgpack_pack_array(&pk, 4);
  err |= msgpack_pack_uint8(&pk, 1); /* trailer version */
  err |= msgpack_pack_array(&pk, 3);
  /* index size as the reference writes it: the map and the array16 header */
  err |= msgpack_pack_fix_uint16(&pk, (uint16_t)(vlmeta_map_len(sc) - 6));
  /* vlmetalayer offsets are relative to the trailer start */
  err |= pack_bins(&pk, sb, sc, sc->nvlmeta, vlmeta_at, vlmeta_map_len(sc));
  err |= msgpack_pack_fix_uint32(&pk, (uint32_t)total);
  err |= msgpack_pack_ext_with_body(&pk, fingerprint, sizeof fingerprint, 0);
  return err;
}

int cat_frame_build_trailer(caterva_ctx *ctx, const caterva_schunk *sc, uint8_t **out,
                            int32_t *len) {
  msgpack_sbuffer sb;
  int64_t total =
      vlmeta_map_len(sc) + bins_data_len(sc, sc->nvlmeta, vlmeta_at) + CAT_TRAILER_TAIL;
  size_t n = 0;
  int err, rc;
  if (total > INT32_MAX) return cat_error(ctx, CATERVA_E_OVERFLOW, "vlmetalayers too large");
  msgpack_sbuffer_init(&sb);
  err = pack_trailer(sc, &sb, total);
  rc = sbuf_take(ctx, &sb, err, out, &n);
  if (rc < 0) return rc;
  if ((int64_t)n != total) {
    free(*out);
    *out = NULL;
    return cat_error(ctx, CATERVA_E_INVALID, "internal: trailer of %zu bytes, expected %lld", n,
                     (long long)total);
  }
  *len = (int32_t)total;
  return CATERVA_OK;
}

/* The reference compresses the index and vlmetalayers with its default parameters. */
static void aux_cparams(caterva_cparams *cp, int typesize) {
  caterva_cparams_init(cp);
  cp->codec = CATERVA_BLOSCLZ;
  cp->clevel = 5;
  cp->typesize = typesize;
}

/* n bytes of src compressed with cp into a new buffer *out (the caller frees it) of *len. */
static int compress_new(caterva_ctx *ctx, const caterva_cparams *cp, const void *src, int32_t n,
                        uint8_t **out, int32_t *len) {
  uint8_t *buf = malloc((size_t)n + CATERVA_CHUNK_MAX_OVERHEAD);
  int32_t cb;
  if (buf == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  cb = caterva_chunk_compress(ctx, cp, src, n, buf, n + CATERVA_CHUNK_MAX_OVERHEAD);
  if (cb < 0) {
    free(buf);
    return cb;
  }
  *out = buf;
  *len = cb;
  return CATERVA_OK;
}

static int compress_aux(caterva_ctx *ctx, const uint8_t *src, int32_t n, int typesize,
                        uint8_t **out, int32_t *len) {
  caterva_cparams cp;
  aux_cparams(&cp, typesize);
  return compress_new(ctx, &cp, src, n, out, len);
}

int cat_frame_build_index(caterva_ctx *ctx, const int64_t *entries, int64_t n, uint8_t **out,
                          int32_t *len) {
  if (n <= 0 || n > (CATERVA_CHUNK_MAX_NBYTES / 8))
    return cat_error(ctx, CATERVA_E_OVERFLOW, "%lld chunks do not fit an offsets index",
                     (long long)n);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* the entries are the index's bytes already: no copy of 8 bytes a chunk (32 MB for an
   * array of 4 million chunks, as a new array's first commit writes it) */
  return compress_aux(ctx, (const uint8_t *)entries, (int32_t)(n * 8), 8, out, len);
#else
  {
    uint8_t *le = malloc((size_t)n * 8);
    int rc;
    if (le == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) cat_put_le64(le + 8 * i, (uint64_t)entries[i]);
    rc = compress_aux(ctx, le, (int32_t)(n * 8), 8, out, len);
    free(le);
    return rc;
  }
#endif
}

/* A vlmetalayer of at least this many bytes (the block statistics of a large array: 40 bytes
 * per block) is cut into blocks of CAT_VLMETA_BLOCK bytes instead of the default's one or
 * two, so that setting it again re-encodes only the blocks that changed. */
#define CAT_VLMETA_LARGE (128 * 1024)
#define CAT_VLMETA_BLOCK (16 * 1024)

static void vlmeta_cparams(caterva_cparams *cp, int32_t len) {
  aux_cparams(cp, len % 8 == 0 ? 8 : 1);
  if (len >= CAT_VLMETA_LARGE) cp->blocksize = CAT_VLMETA_BLOCK;
}

int cat_frame_vlmeta_compress(caterva_ctx *ctx, const void *content, int32_t len, uint8_t **out,
                              int32_t *cbytes) {
  caterva_cparams cp;
  vlmeta_cparams(&cp, len);
  return compress_new(ctx, &cp, content, len, out, cbytes);
}

int cat_frame_vlmeta_build(caterva_ctx *ctx, int32_t len, cat_fill_fn fill, cat_keep_fn keep,
                           void *arg, const uint8_t *old, int32_t oldlen, uint8_t **out,
                           int32_t *cbytes) {
  caterva_cparams cp;
  vlmeta_cparams(&cp, len);
  return cat_chunk_build(ctx, &cp, len, fill, keep, arg, old, oldlen, out, cbytes);
}

/* Which blocks of old's content differ from content: 1 when old was decoded and compared
 * (dirty filled), 0 when it cannot be patched from (then compress whole). */
static int vlmeta_dirty(caterva_ctx *ctx, const uint8_t *old, int32_t oldlen,
                        const uint8_t *oldraw, int32_t oldrawlen, const uint8_t *content,
                        int32_t len, uint8_t **dirty) {
  caterva_chunk_info ci;
  uint8_t *prev = NULL;
  const uint8_t *cmp;
  int rc = 0;
  *dirty = NULL;
  if (old == NULL || caterva_chunk_info_get(old, (size_t)oldlen, &ci) < 0 || ci.nbytes != len ||
      ci.special || ci.memcpyed || ci.blocksize <= 0 || ci.nblocks <= 0)
    return 0;
  *dirty = malloc((size_t)ci.nblocks);
  if (*dirty == NULL) goto leave;
  if (oldraw != NULL && oldrawlen == len) {
    cmp = oldraw; /* what old decodes to, kept beside it */
  } else {
    prev = malloc((size_t)len);
    if (prev == NULL || caterva_chunk_decompress(ctx, old, (size_t)oldlen, prev, len) != len)
      goto leave;
    cmp = prev;
  }
  for (int32_t j = 0; j < ci.nblocks; j++) {
    int64_t at = (int64_t)j * ci.blocksize, n = len - at < ci.blocksize ? len - at : ci.blocksize;
    (*dirty)[j] = n > 0 && memcmp(cmp + at, content + at, (size_t)n) != 0;
  }
  rc = 1;
leave:
  if (rc == 0) {
    free(*dirty);
    *dirty = NULL;
  }
  free(prev);
  return rc;
}

int cat_frame_vlmeta_recompress(caterva_ctx *ctx, const uint8_t *old, int32_t oldlen,
                                const uint8_t *oldraw, int32_t oldrawlen, const void *content,
                                int32_t len, uint8_t **out, int32_t *cbytes) {
  caterva_cparams cp;
  uint8_t *dirty = NULL, *buf = NULL;
  int32_t cb = CATERVA_E_UNSUPPORTED;
  if (len < 32 || !vlmeta_dirty(ctx, old, oldlen, oldraw, oldrawlen, content, len, &dirty))
    return cat_frame_vlmeta_compress(ctx, content, len, out, cbytes);
  vlmeta_cparams(&cp, len);
  buf = malloc((size_t)len + CATERVA_CHUNK_MAX_OVERHEAD);
  if (buf != NULL)
    cb = cat_chunk_patch(ctx, &cp, old, oldlen, content, len, dirty, buf,
                         len + CATERVA_CHUNK_MAX_OVERHEAD);
  free(dirty);
  if (cb < 0) {
    free(buf);
    return cat_frame_vlmeta_compress(ctx, content, len, out, cbytes);
  }
  *out = buf;
  *cbytes = cb;
  return CATERVA_OK;
}

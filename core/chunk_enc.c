/*
 * chunk_enc.c -- the Blosc2 chunk format, writing: compress a buffer into a chunk (the
 * reference's automatic blocksize and split rules), re-encode only some blocks of a chunk, and
 * make special-value chunks. The layout is drawn in chunk.c; shared/spec/blosc2-formats.md §1.
 */
#include "chunk_format_internal.h"
#include "filters.h"

#include <math.h>
#include <stdlib.h>

/* ---- compression ------------------------------------------------------------------------ */

/* The reference's automatic blocksize (spec 1.11). */
static int32_t cat_auto_blocksize(const caterva_cparams *cp, int32_t nbytes, bool split) {
  int64_t bs = nbytes;
  int ts = cp->typesize;
  bool hc = cp->codec == CATERVA_LZ4HC || cp->codec == CATERVA_ZLIB || cp->codec == CATERVA_ZSTD;
  if (nbytes < ts) return 1;
  if (nbytes >= 32 * 1024) {
    bs = 32 * 1024;
    if (hc) bs *= 2;
    switch (cp->clevel) {
    case 0: bs /= 4; break;
    case 1: bs /= 2; break;
    case 2: break;
    case 3: bs *= 2; break;
    case 4: case 5: bs *= 4; break;
    case 6: case 7: case 8: bs *= 8; break;
    default: bs *= hc ? 16 : 8; break;
    }
  }
  if (split && cp->clevel > 0) {
    static const int64_t per_level[10] = {0, 32, 32, 32, 64, 64, 64, 128, 256, 512};
    bs = per_level[cp->clevel] * 1024 * ts;
    if (bs > 4 * 1024 * 1024) bs = 4 * 1024 * 1024;
    if (bs < 32 * 1024) bs = 32 * 1024;
  }
  if (bs > nbytes) bs = nbytes;
  if (bs > ts) bs -= bs % ts;
  return (int32_t)bs;
}

/* The reference's split rule for AUTO and FORWARD_COMPAT (spec 1.11). */
static bool cat_split_wanted(const caterva_cparams *cp, int32_t blocksize) {
  bool codec_ok = cp->codec == CATERVA_BLOSCLZ || cp->codec == CATERVA_LZ4 ||
                  (cp->codec == CATERVA_ZSTD && cp->clevel <= 5);
  switch (cp->splitmode) {
  case CATERVA_SPLIT_ALWAYS: return true;
  case CATERVA_SPLIT_NEVER: return false;
  default:
    return codec_ok && cat_has_filter(cp->filters, CATERVA_SHUFFLE) && cp->typesize <= 16 &&
           blocksize / cp->typesize >= 32;
  }
}

/* The block size caterva_chunk_compress uses for nbytes bytes. */
static int32_t cat_chosen_blocksize(const caterva_cparams *cp, int32_t nbytes) {
  int32_t blocksize = cp->blocksize;
  if (blocksize == 0) blocksize = cat_auto_blocksize(cp, nbytes, cat_split_wanted(cp, nbytes));
  return blocksize > nbytes ? nbytes : blocksize;
}

static int cat_check_cparams(caterva_ctx *ctx, const caterva_cparams *cp) {
  if (cat_codec_format_id(cp->codec) < 0)
    return cat_error(ctx, CATERVA_E_UNSUPPORTED, "unknown codec %d", cp->codec);
  if (cp->clevel < 0 || cp->clevel > 9)
    return cat_error(ctx, CATERVA_E_INVALID, "clevel %d outside 0..9", cp->clevel);
  if (cp->typesize < 1 || cp->typesize > 255)
    return cat_error(ctx, CATERVA_E_INVALID, "typesize %d outside 1..255", cp->typesize);
  if (cp->blocksize < 0) return cat_error(ctx, CATERVA_E_INVALID, "negative blocksize");
  if (cp->splitmode < CATERVA_SPLIT_ALWAYS || cp->splitmode > CATERVA_SPLIT_FORWARD_COMPAT)
    return cat_error(ctx, CATERVA_E_INVALID, "unknown split mode %d", cp->splitmode);
  for (int i = 0; i < CATERVA_MAX_FILTERS; i++) {
    if (!cat_filter_known(cp->filters[i]))
      return cat_error(ctx, CATERVA_E_UNSUPPORTED, "unknown filter %d", cp->filters[i]);
    if (cp->filters[i] == CATERVA_TRUNC_PREC && cp->typesize != 4 && cp->typesize != 8)
      return cat_error(ctx, CATERVA_E_INVALID, "trunc_prec needs typesize 4 or 8");
  }
  return CATERVA_OK;
}

/* Everything compression of one chunk needs, shared by the block tasks. */
typedef struct cat_enc_job {
  caterva_ctx *ctx;
  const caterva_cparams *cp;
  const uint8_t *src;  /* the bytes from src_off on (0 but for cat_chunk_build's batches) */
  int64_t src_off;
  int32_t nbytes, blocksize, nblocks;
  bool split;
  uint8_t *out;        /* per-block output regions of slot bytes each */
  int64_t slot;
  int32_t *outlen;     /* compressed length of each block */
  bool *all_zero;      /* every stream of the block was a zero run */
  const int32_t *which;/* NULL: task t encodes block t; else block which[t] (a patch), its
                        * output in slot t */
} cat_enc_job;

/* A job over nbytes at src (the chunk's content from offset 0) cut into blocks of blocksize:
 * every field but the output regions. */
static void cat_job_init(cat_enc_job *job, caterva_ctx *ctx, const caterva_cparams *cp,
                         const uint8_t *src, int32_t nbytes, int32_t blocksize) {
  memset(job, 0, sizeof *job);
  job->ctx = ctx;
  job->cp = cp;
  job->src = src;
  job->nbytes = nbytes;
  job->blocksize = blocksize;
  job->nblocks = (int32_t)cat_ceil_div64(nbytes, blocksize);
  job->split = cat_split_wanted(cp, blocksize);
  /* Room for a raw block plus every stream's length and token; a multiple of 8 keeps the
   * arrays placed after the block regions aligned. */
  job->slot = ((int64_t)blocksize + 5 * (int64_t)cp->typesize + 8 + 7) & ~(int64_t)7;
}

/* Encode one stream of n bytes at in into out: zero run, byte run, codec, or raw. */
static int32_t cat_encode_stream(cat_scratch *s, const caterva_cparams *cp, const uint8_t *in,
                                 int32_t n, uint8_t *out, bool *zero) {
  int32_t c;
  /* every byte equal to the next, with libc's vectorized compare (the streams of a block a
   * slab UPDATE set to one value are runs, scanned whole: 181 such UPDATEs took 3.87-3.90 s
   * with a byte loop here, 3.75-3.78 s with this) */
  bool same = n <= 1 || memcmp(in, in + 1, (size_t)n - 1) == 0;
  *zero = same && n > 0 && in[0] == 0;
  if (same && n > 0) {
    /* Runs: csize 0 for zeros, else -byte and a token byte with bit 0 set. */
    if (in[0] == 0) {
      cat_put_le32(out, 0);
      return 4;
    }
    cat_put_le32(out, (uint32_t)(-(int32_t)in[0]));
    out[4] = 1;
    return 5;
  }
  /* A codec result of n bytes or more would be read back as raw: keep it below n. */
  c = cat_codec_compress(s, cp->codec, cp->clevel, in, n, out + 4, n - 1);
  if (c < 0) return c;
  if (c == 0) {
    memcpy(out + 4, in, (size_t)n);
    c = n;
  }
  cat_put_le32(out, (uint32_t)c);
  return 4 + c;
}

/* Forward filter pipeline on block j (bsize bytes at in); returns the filtered bytes. */
static const uint8_t *cat_filter_block(cat_enc_job *job, int w, int32_t j, const uint8_t *in,
                                       int32_t bsize, int *rc) {
  const caterva_cparams *cp = job->cp;
  const uint8_t *cur = in;
  uint8_t *a = cat_scratch_get(job->ctx, w, 0, (size_t)bsize);
  uint8_t *b = cat_scratch_get(job->ctx, w, 1, (size_t)bsize);
  *rc = CATERVA_OK;
  if (a == NULL || b == NULL) {
    *rc = CATERVA_E_NOMEM;
    return NULL;
  }
  for (int i = 0; i < CATERVA_MAX_FILTERS; i++) {
    uint8_t f = cp->filters[i], meta = cp->filters_meta[i];
    uint8_t *out = cur == a ? b : a;
    int ts = cp->typesize;
    switch (f) {
    case CATERVA_SHUFFLE: cat_shuffle(meta ? meta : ts, bsize, cur, out); break;
    case CATERVA_BITSHUFFLE: cat_bitshuffle(ts, bsize, cur, out); break;
    case CATERVA_BYTEDELTA: cat_bytedelta_encode(meta ? meta : ts, bsize, cur, out); break;
    case CATERVA_DELTA: cat_delta_encode(ts, j, job->src, bsize, cur, out); break;
    case CATERVA_TRUNC_PREC:
      *rc = cat_trunc_prec(ts, (int8_t)meta, bsize, cur, out);
      if (*rc < 0) return NULL;
      break;
    default: continue;
    }
    cur = out;
  }
  return cur;
}

static int cat_enc_task(void *arg, int64_t t, int w) {
  cat_enc_job *job = arg;
  int32_t j = job->which != NULL ? job->which[t] : (int32_t)t, bsize = job->blocksize, nstreams,
          neblock;
  int64_t off = (int64_t)j * job->blocksize;
  uint8_t *out = job->out + t * job->slot;
  const uint8_t *filtered;
  int32_t len = 0;
  int rc;
  bool zero, all_zero = true;

  if (off + bsize > job->nbytes) bsize = (int32_t)(job->nbytes - off);
  filtered = cat_filter_block(job, w, j, job->src + (off - job->src_off), bsize, &rc);
  if (filtered == NULL) return rc;
  nstreams = (job->split && bsize == job->blocksize && bsize % job->cp->typesize == 0)
                 ? job->cp->typesize : 1;
  neblock = bsize / nstreams;
  for (int32_t s = 0; s < nstreams; s++) {
    int32_t n = cat_encode_stream(&job->ctx->scratch[w], job->cp, filtered + (size_t)s * neblock,
                                  neblock, out + len, &zero);
    if (n < 0) return n;
    len += n;
    all_zero = all_zero && zero;
  }
  job->outlen[t] = len;
  job->all_zero[t] = all_zero;
  return CATERVA_OK;
}

static void cat_write_header(uint8_t *h, const caterva_cparams *cp, int32_t nbytes,
                             int32_t blocksize, int32_t cbytes, bool split, bool memcpyed) {
  uint8_t flags = CAT_F_SHUFFLE_EXT | CAT_F_BITSHUFFLE_EXT;
  flags |= (uint8_t)(cat_codec_format_id(cp->codec) << 5);
  if (!split) flags |= CAT_F_DONT_SPLIT;
  if (memcpyed) flags |= CAT_F_MEMCPYED;
  if (cat_has_filter(cp->filters, CATERVA_DELTA)) flags |= CAT_F_DELTA;
  memset(h, 0, CAT_HDR);
  h[0] = CAT_VERSION_WRITTEN;
  h[1] = 1;
  h[2] = flags;
  h[3] = (uint8_t)cp->typesize;
  cat_put_le32(h + 4, (uint32_t)nbytes);
  cat_put_le32(h + 8, (uint32_t)blocksize);
  cat_put_le32(h + 12, (uint32_t)cbytes);
  memcpy(h + 16, cp->filters, CATERVA_MAX_FILTERS);
  h[22] = (uint8_t)cp->codec;
  memcpy(h + 24, cp->filters_meta, CATERVA_MAX_FILTERS);
}

static int32_t cat_store_memcpyed(caterva_ctx *ctx, const caterva_cparams *cp, const void *src,
                                  int32_t nbytes, int32_t blocksize, bool split, uint8_t *dst,
                                  int32_t dstcap) {
  if ((int64_t)dstcap < (int64_t)nbytes + CAT_HDR)
    return cat_error(ctx, CATERVA_E_NOSPACE, "output buffer too small for %d bytes", (int)nbytes);
  cat_write_header(dst, cp, nbytes, blocksize, nbytes + CAT_HDR, split, true);
  if (nbytes > 0) memcpy(dst + CAT_HDR, src, (size_t)nbytes);
  return nbytes + CAT_HDR;
}

/* Lay the encoded blocks out after the header and block-start table; 0 if it won't fit. */
static int32_t cat_assemble(const cat_enc_job *job, uint8_t *dst, int32_t limit) {
  int64_t pos = CAT_HDR + 4 * (int64_t)job->nblocks;
  if (pos > limit) return 0;
  for (int32_t j = 0; j < job->nblocks; j++) {
    if (pos + job->outlen[j] > limit) return 0;
    cat_put_le32(dst + CAT_HDR + 4 * (size_t)j, (uint32_t)pos);
    memcpy(dst + pos, job->out + j * job->slot, (size_t)job->outlen[j]);
    pos += job->outlen[j];
  }
  return (int32_t)pos;
}

static int cat_run_encode(caterva_ctx *ctx, cat_enc_job *job, int32_t ntasks) {
  if (cat_worth_parallel(ctx, ntasks, job->blocksize))
    return cat_pool_run(ctx->pool, ntasks, cat_enc_task, job);
  for (int32_t j = 0; j < ntasks; j++) {
    int rc = cat_enc_task(job, j, 0);
    if (rc < 0) return rc;
  }
  return CATERVA_OK;
}

static bool cat_all_zero(const cat_enc_job *job) {
  for (int32_t j = 0; j < job->nblocks; j++)
    if (!job->all_zero[j]) return false;
  return true;
}

int32_t caterva_chunk_compress(caterva_ctx *ctx, const caterva_cparams *cp, const void *src,
                               int32_t nbytes, void *dst, int32_t dstcap) {
  cat_enc_job job;
  int32_t blocksize, rc;
  int32_t limit;
  bool split;
  void *mem = NULL;

  rc = cat_check_cparams(ctx, cp);
  if (rc < 0) return rc;
  if (nbytes < 0 || nbytes > CATERVA_CHUNK_MAX_NBYTES || (nbytes > 0 && src == NULL) || dst == NULL)
    return cat_error(ctx, CATERVA_E_INVALID, "bad source buffer of %d bytes", (int)nbytes);
  blocksize = cat_chosen_blocksize(cp, nbytes);
  split = cat_split_wanted(cp, blocksize);
  /* Tiny or clevel-0 chunks are stored as they are, like the reference does. */
  if (cp->clevel == 0 || nbytes < 32 || blocksize <= 0)
    return cat_store_memcpyed(ctx, cp, src, nbytes, blocksize, split, dst, dstcap);

  cat_job_init(&job, ctx, cp, src, nbytes, blocksize);
  mem = malloc((size_t)job.slot * (size_t)job.nblocks +
               (size_t)job.nblocks * (sizeof(int32_t) + sizeof(bool)));
  if (mem == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  job.out = mem;
  job.outlen = (int32_t *)(void *)(job.out + (size_t)job.slot * (size_t)job.nblocks);
  job.all_zero = (bool *)(job.outlen + job.nblocks);
  rc = cat_run_encode(ctx, &job, job.nblocks);
  if (rc < 0) {
    rc = cat_error(ctx, rc, "compression failed (%s)", caterva_strerror(rc));
    goto leave;
  }
  if (cat_all_zero(&job)) {
    rc = caterva_chunk_make_special(CATERVA_SPECIAL_ZERO, nbytes, cp->typesize, blocksize, NULL,
                                    dst, dstcap);
    if (rc < 0) rc = cat_error(ctx, rc, "output buffer too small");
    goto leave;
  }
  /* A chunk may not be larger than its memcpyed form. */
  limit = dstcap < nbytes + CAT_HDR ? dstcap : nbytes + CAT_HDR;
  rc = cat_assemble(&job, dst, limit);
  if (rc > 0) cat_write_header(dst, cp, nbytes, blocksize, rc, split, false);
  else rc = cat_store_memcpyed(ctx, cp, src, nbytes, blocksize, split, dst, dstcap);
leave:
  free(mem);
  return rc;
}

/* ---- re-encoding some blocks of a chunk ---------------------------------------------------
 *
 * A chunk keeps its blocks as independent compressed runs found through the block-start
 * table (spec §1.4), so a chunk whose edit touched some blocks can be rebuilt from the old
 * chunk: the touched blocks compressed anew, the others' bytes copied as they are, the table
 * rewritten for the new layout. That is only the chunk caterva_chunk_compress would write
 * when every copied block was encoded the way cp encodes it: the same block size, typesize,
 * split decision, filters with their meta and codec format (clevel only changes how well a
 * block compresses, not how it decodes). Chunks whose blocks are not independent runs are
 * rebuilt whole by the caller: special chunks (no blocks), memcpyed ones (one raw run),
 * chunks with a zstd/lz4 dictionary (blocks decode against it), DELTA (every block is
 * encoded against block 0's raw bytes), Blosc 1.x and other versions than we write. */

/* True when the blocks of the parsed chunk ck decode as cp would encode them. */
static bool cat_patchable(const cat_chunk *ck, const caterva_cparams *cp, int32_t nbytes,
                          int32_t blocksize) {
  const caterva_chunk_info *ci = &ck->info;
  return ck->hdr == CAT_HDR && ci->version == CAT_VERSION_WRITTEN &&
         ci->special == CATERVA_SPECIAL_NONE && !ci->memcpyed && !ci->has_dict &&
         ci->nbytes == nbytes && ci->blocksize == blocksize && ci->typesize == cp->typesize &&
         ci->split == cat_split_wanted(cp, blocksize) &&
         cat_codec_format_id(ci->codec) == cat_codec_format_id(cp->codec) &&
         memcmp(ci->filters, cp->filters, CATERVA_MAX_FILTERS) == 0 &&
         memcmp(ci->filters_meta, cp->filters_meta, CATERVA_MAX_FILTERS) == 0 &&
         !cat_has_filter(cp->filters, CATERVA_DELTA);
}

/* Old blocks copied, the encoded ones (job slots, in list order) placed; 0 if over limit. */
static int32_t cat_assemble_patch(const cat_enc_job *job, const cat_chunk *old,
                                  const uint8_t *dirty, uint8_t *dst, int32_t limit) {
  int64_t pos = CAT_HDR + 4 * (int64_t)job->nblocks;
  int32_t t = 0;
  for (int32_t j = 0; j < job->nblocks; j++) {
    const uint8_t *from;
    int32_t len;
    if (dirty[j]) {
      from = job->out + t * job->slot;
      len = job->outlen[t++];
    } else {
      int32_t start = cat_le32s(old->p + CAT_HDR + 4 * (size_t)j);
      int32_t end = cat_block_reach(old, j, old->info.cbytes);
      if (end < 0) return -1;
      from = old->p + start;
      len = end - start;
    }
    if (pos + len > limit) return 0;
    cat_put_le32(dst + CAT_HDR + 4 * (size_t)j, (uint32_t)pos);
    memcpy(dst + pos, from, (size_t)len);
    pos += len;
  }
  return (int32_t)pos;
}

/* old parsed into *ck with the block size cp gives nbytes in *blocksize, when cat_chunk_patch
 * can patch it. */
static bool cat_patch_parse(const caterva_cparams *cp, const void *old, int32_t oldlen,
                            int32_t nbytes, cat_chunk *ck, int32_t *blocksize) {
  *blocksize = cat_chosen_blocksize(cp, nbytes);
  return old != NULL && cp->clevel != 0 && nbytes >= 32 && *blocksize > 0 &&
         cat_chunk_parse(old, (size_t)oldlen, ck) >= 0 && cat_patchable(ck, cp, nbytes, *blocksize);
}

bool cat_chunk_patchable(const caterva_cparams *cp, const void *old, int32_t oldlen,
                         int32_t nbytes) {
  cat_chunk ck;
  int32_t blocksize;
  return cat_patch_parse(cp, old, oldlen, nbytes, &ck, &blocksize);
}

int32_t cat_chunk_patch(caterva_ctx *ctx, const caterva_cparams *cp, const void *old,
                        int32_t oldlen, const void *src, int32_t nbytes, const uint8_t *dirty,
                        void *dst, int32_t dstcap) {
  cat_enc_job job;
  cat_chunk ck;
  int32_t *which = NULL, ndirty = 0, limit, rc;
  void *mem = NULL;
  memset(&job, 0, sizeof job);
  rc = cat_check_cparams(ctx, cp);
  if (rc < 0) return rc;
  if (old == NULL || src == NULL || dirty == NULL || dst == NULL || nbytes <= 0)
    return cat_error(ctx, CATERVA_E_INVALID, "chunk_patch: NULL or empty argument");
  if (!cat_patch_parse(cp, old, oldlen, nbytes, &ck, &job.blocksize))
    return CATERVA_E_UNSUPPORTED;
  cat_job_init(&job, ctx, cp, src, nbytes, job.blocksize); /* ck's blocks, as patchable */
  for (int32_t j = 0; j < job.nblocks; j++) ndirty += dirty[j] != 0;
  mem = malloc((size_t)job.slot * (size_t)(ndirty ? ndirty : 1) +
               (size_t)(ndirty ? ndirty : 1) * (2 * sizeof(int32_t) + sizeof(bool)));
  if (mem == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  job.out = mem;
  job.outlen = (int32_t *)(void *)(job.out + (size_t)job.slot * (size_t)(ndirty ? ndirty : 1));
  which = job.outlen + (ndirty ? ndirty : 1);
  job.all_zero = (bool *)(which + (ndirty ? ndirty : 1));
  for (int32_t j = 0, t = 0; j < job.nblocks; j++)
    if (dirty[j]) which[t++] = j;
  job.which = which;
  rc = cat_run_encode(ctx, &job, ndirty);
  if (rc < 0) {
    rc = cat_error(ctx, rc, "compression failed (%s)", caterva_strerror(rc));
    goto leave;
  }
  /* like caterva_chunk_compress: never larger than the memcpyed form (the caller makes it) */
  limit = dstcap < nbytes + CAT_HDR ? dstcap : nbytes + CAT_HDR;
  rc = cat_assemble_patch(&job, &ck, dirty, dst, limit);
  if (rc < 0) rc = cat_error(ctx, CATERVA_E_CORRUPT, "chunk to patch: a block overruns it");
  else if (rc == 0) rc = CATERVA_E_UNSUPPORTED;
  else cat_write_header(dst, cp, nbytes, job.blocksize, rc, job.split, false);
leave:
  free(mem);
  return rc;
}

int32_t caterva_chunk_make_special(int kind, int32_t nbytes, int typesize, int32_t blocksize,
                                   const void *value, void *dst, int32_t dstcap) {
  uint8_t *h = dst;
  int32_t cbytes = CAT_HDR;
  if (kind < CATERVA_SPECIAL_ZERO || kind > CATERVA_SPECIAL_UNINIT || typesize < 1 ||
      typesize > 255 || nbytes < 0 || blocksize < 0 || nbytes % typesize != 0)
    return CATERVA_E_INVALID;
  if (kind == CATERVA_SPECIAL_NAN && typesize != 4 && typesize != 8) return CATERVA_E_INVALID;
  if (kind == CATERVA_SPECIAL_VALUE) {
    if (value == NULL) return CATERVA_E_INVALID;
    cbytes += typesize;
  }
  if (dst == NULL || dstcap < cbytes) return CATERVA_E_NOSPACE;
  memset(h, 0, CAT_HDR);
  h[0] = CAT_VERSION_WRITTEN;
  h[1] = 1;
  h[2] = CAT_F_SHUFFLE_EXT | CAT_F_BITSHUFFLE_EXT;
  h[3] = (uint8_t)typesize;
  cat_put_le32(h + 4, (uint32_t)nbytes);
  cat_put_le32(h + 8, (uint32_t)(blocksize ? blocksize : nbytes));
  cat_put_le32(h + 12, (uint32_t)cbytes);
  h[31] = (uint8_t)(kind << CAT_B2_SPECIAL_SHIFT);
  if (kind == CATERVA_SPECIAL_VALUE) memcpy(h + CAT_HDR, value, (size_t)typesize);
  return cbytes;
}

/* ---- compressing bytes produced a range at a time ------------------------------------------
 *
 * The chunk caterva_chunk_compress makes of nbytes bytes, built from a producer that writes
 * any range of them on demand, a batch of blocks at a time, so that the bytes are never held
 * whole (the block statistics of an array of a million chunks of 32 blocks are 1.3 GB before
 * compression and a few MB after). With a patchable old chunk, blocks the caller says are
 * unchanged are copied from it instead of being produced and compressed again. */

#define CAT_BUILD_BATCH_BYTES (4 << 20) /* raw bytes produced and compressed at a time */

typedef struct cat_build {
  caterva_ctx *ctx;
  const caterva_cparams *cp;
  cat_fill_fn fill;
  cat_keep_fn keep;
  void *arg;
  cat_chunk old;            /* valid when patch */
  bool patch;
  cat_enc_job job;
  uint8_t *raw;             /* one batch of blocks */
  int32_t *which;
  uint8_t *out;             /* header, block-start table, blocks so far */
  int64_t pos, cap;
  bool all_zero;
} cat_build;

/* A kept block whose every stream is a zero run (4 zero bytes each). */
static bool cat_zero_block(const uint8_t *p, int32_t len, int32_t nstreams) {
  if (len != 4 * nstreams) return false;
  for (int32_t i = 0; i < len; i++)
    if (p[i] != 0) return false;
  return true;
}

/* Append len bytes as block j's; 0 when the chunk would exceed its memcpyed form. */
static int cat_build_put(cat_build *b, int32_t j, const uint8_t *p, int32_t len) {
  int64_t limit = (int64_t)b->job.nbytes + CAT_HDR;
  if (b->pos + len > limit) return 0;
  if (b->pos + len > b->cap) {
    int64_t cap = b->cap * 2 < b->pos + len ? b->pos + len : b->cap * 2;
    uint8_t *q;
    if (cap > limit) cap = limit;
    q = realloc(b->out, (size_t)cap);
    if (q == NULL) return cat_error(b->ctx, CATERVA_E_NOMEM, "out of memory");
    b->out = q;
    b->cap = cap;
  }
  cat_put_le32(b->out + CAT_HDR + 4 * (size_t)j, (uint32_t)b->pos);
  memcpy(b->out + b->pos, p, (size_t)len);
  b->pos += len;
  return 1;
}

/* Blocks [j0, j1): the changed ones produced and encoded, then all appended in order. */
static int cat_build_batch(cat_build *b, int32_t j0, int32_t j1) {
  cat_enc_job *job = &b->job;
  int32_t n = 0, t = 0;
  int rc;
  for (int32_t j = j0; j < j1; j++) {
    int64_t off = (int64_t)j * job->blocksize;
    int32_t len = off + job->blocksize > job->nbytes ? (int32_t)(job->nbytes - off)
                                                     : job->blocksize;
    if (b->patch && b->keep(b->arg, off, len)) continue;
    b->fill(b->arg, off, len, b->raw + (off - (int64_t)j0 * job->blocksize));
    b->which[n++] = j;
  }
  job->src = b->raw;
  job->src_off = (int64_t)j0 * job->blocksize;
  job->which = b->which;
  rc = cat_run_encode(b->ctx, job, n);
  if (rc < 0) return cat_error(b->ctx, rc, "compression failed (%s)", caterva_strerror(rc));
  for (int32_t j = j0; j < j1; j++) {
    if (t < n && b->which[t] == j) {
      b->all_zero = b->all_zero && job->all_zero[t];
      rc = cat_build_put(b, j, job->out + t * job->slot, job->outlen[t]);
      t++;
    } else {
      int32_t start = cat_le32s(b->old.p + CAT_HDR + 4 * (size_t)j);
      int32_t end = cat_block_reach(&b->old, j, b->old.info.cbytes);
      if (end < 0) return cat_error(b->ctx, CATERVA_E_CORRUPT, "chunk to patch: a block overruns it");
      b->all_zero = b->all_zero &&
                    cat_zero_block(b->old.p + start, end - start,
                                   cat_block_nstreams(&b->old, cat_block_size(&b->old.info, j)));
      rc = cat_build_put(b, j, b->old.p + start, end - start);
    }
    if (rc <= 0) return rc;
  }
  return 1;
}

/* The whole content produced into a buffer and compressed as caterva_chunk_compress does
 * (tiny, clevel 0, DELTA, or a result no smaller than the memcpyed form). */
static int cat_build_whole(cat_build *b, int32_t nbytes, uint8_t **out, int32_t *cbytes) {
  uint8_t *src = malloc(nbytes > 0 ? (size_t)nbytes : 1);
  uint8_t *dst = malloc((size_t)nbytes + CATERVA_CHUNK_MAX_OVERHEAD);
  int32_t rc = CATERVA_E_NOMEM;
  if (src == NULL || dst == NULL) {
    rc = cat_error(b->ctx, CATERVA_E_NOMEM, "out of memory");
    goto leave;
  }
  if (nbytes > 0) b->fill(b->arg, 0, nbytes, src);
  rc = caterva_chunk_compress(b->ctx, b->cp, src, nbytes, dst, nbytes + CATERVA_CHUNK_MAX_OVERHEAD);
  if (rc >= 0) {
    *out = dst;
    *cbytes = rc;
    dst = NULL;
    rc = CATERVA_OK;
  }
leave:
  free(src);
  free(dst);
  return rc;
}

static int cat_build_init(cat_build *b, int32_t nbytes, const void *old, int32_t oldlen) {
  cat_enc_job *job = &b->job;
  int32_t batch;
  cat_job_init(job, b->ctx, b->cp, NULL, nbytes, cat_chosen_blocksize(b->cp, nbytes));
  b->patch = old != NULL && b->keep != NULL && cat_chunk_parse(old, (size_t)oldlen, &b->old) >= 0 &&
             cat_patchable(&b->old, b->cp, nbytes, job->blocksize);
  batch = CAT_BUILD_BATCH_BYTES / job->blocksize;
  if (batch < 1) batch = 1;
  if (batch > job->nblocks) batch = job->nblocks;
  b->raw = malloc((size_t)batch * (size_t)job->blocksize);
  b->which = malloc((size_t)batch * sizeof *b->which);
  job->out = malloc((size_t)job->slot * (size_t)batch);
  job->outlen = malloc((size_t)batch * sizeof *job->outlen);
  job->all_zero = malloc((size_t)batch * sizeof *job->all_zero);
  b->cap = CAT_HDR + 4 * (int64_t)job->nblocks + 4096;
  b->out = malloc((size_t)b->cap);
  b->pos = CAT_HDR + 4 * (int64_t)job->nblocks;
  b->all_zero = true;
  if (b->raw == NULL || b->which == NULL || job->out == NULL || job->outlen == NULL ||
      job->all_zero == NULL || b->out == NULL)
    return cat_error(b->ctx, CATERVA_E_NOMEM, "out of memory");
  return batch;
}

int cat_chunk_build(caterva_ctx *ctx, const caterva_cparams *cp, int32_t nbytes,
                    cat_fill_fn fill, cat_keep_fn keep, void *arg, const void *old,
                    int32_t oldlen, uint8_t **out, int32_t *cbytes) {
  cat_build b;
  int32_t batch;
  int rc = cat_check_cparams(ctx, cp);
  if (rc < 0) return rc;
  if (nbytes < 0 || nbytes > CATERVA_CHUNK_MAX_NBYTES || fill == NULL || out == NULL)
    return cat_error(ctx, CATERVA_E_INVALID, "chunk_build: bad arguments");
  memset(&b, 0, sizeof b);
  b.ctx = ctx;
  b.cp = cp;
  b.fill = fill;
  b.keep = keep;
  b.arg = arg;
  if (cp->clevel == 0 || nbytes < 32 || cat_chosen_blocksize(cp, nbytes) <= 0 ||
      cat_has_filter(cp->filters, CATERVA_DELTA))
    return cat_build_whole(&b, nbytes, out, cbytes);
  rc = batch = cat_build_init(&b, nbytes, old, oldlen);
  for (int32_t j = 0; rc > 0 && j < b.job.nblocks; j += batch)
    rc = cat_build_batch(&b, j, j + batch < b.job.nblocks ? j + batch : b.job.nblocks);
  if (rc < 0) goto leave;
  if (rc == 0) { /* no smaller than the memcpyed form: stored as that */
    rc = cat_build_whole(&b, nbytes, out, cbytes);
    goto leave;
  }
  if (b.all_zero) {
    rc = caterva_chunk_make_special(CATERVA_SPECIAL_ZERO, nbytes, cp->typesize, b.job.blocksize,
                                    NULL, b.out, (int32_t)b.cap);
    if (rc < 0) goto leave;
    b.pos = rc;
  } else {
    cat_write_header(b.out, cp, nbytes, b.job.blocksize, (int32_t)b.pos, b.job.split, false);
  }
  *out = b.out;
  *cbytes = (int32_t)b.pos;
  b.out = NULL;
  rc = CATERVA_OK;
leave:
  free(b.raw);
  free(b.which);
  free(b.job.out);
  free(b.job.outlen);
  free(b.job.all_zero);
  free(b.out);
  return rc;
}

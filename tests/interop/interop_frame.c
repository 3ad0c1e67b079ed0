/*
 * interop_frame.c -- the bytes on disk of every file the interop writer test writes, checked
 * against the fact sheet without the reference library: the frame (§3: magic, header fields,
 * metalayers, trailer, vlmetalayers, index), every stored chunk (§4), and how the chunks use the
 * chunk section or the sparse directory. The checker is checked too: it must reject frames
 * that break these rules.
 */
#define _XOPEN_SOURCE 700
#include "interop.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
  return (c->codec == CATERVA_BLOSCLZ || c->codec == CATERVA_LZ4 ||
          (c->codec == CATERVA_ZSTD && c->clevel <= 5)) &&
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

int check_frame(caterva_ctx *ctx, const icase *c, const dtype_desc *dt, const geom *g,
                const uint8_t *raw, const char *path, const uint8_t *f, size_t len,
                const expected_vl *vl, int nvl, frame_facts *ff, char *err, size_t errcap) {
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
  ff->header_len = (int64_t)get_be(f + 11, 4);
  ff->frame_len = (int64_t)get_be(f + 16, 8);
  ff->nbytes = (int64_t)get_be(f + 30, 8);
  ff->cbytes = (int64_t)get_be(f + 39, 8);
  ff->typesize = (int32_t)get_be(f + 48, 4);
  ff->blocksize = (int32_t)get_be(f + 53, 4);
  ff->chunksize = (int32_t)get_be(f + 58, 4);
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
  REQ(get_be(f + pos + 5, 2) == (uint64_t)nmeta, "%d metalayers", (int)get_be(f + pos + 5, 2));
  {
    size_t isz = (size_t)get_be(f + pos + 2, 2), start = pos;
    pos += 7;
    for (int k = 0; k < nmeta; k++) {
      const char *nm = mnames[first + k];
      size_t nl = strlen(nm);
      REQ(pos + 1 + nl + 5 < len && f[pos] == (0xA0 | nl) && memcmp(f + pos + 1, nm, nl) == 0,
          "metalayer %d is not '%s'", k, nm);
      pos += 1 + nl;
      REQ(f[pos] == 0xD2, "metalayer offset marker");
      mo[k] = (int64_t)get_be(f + pos + 1, 4);
      pos += 5;
    }
    REQ(isz == pos - start, "metalayer index size %zu, expected %zu", isz, pos - start);
    REQ(f[pos] == 0xDC && get_be(f + pos + 1, 2) == (uint64_t)nmeta, "metalayer array header");
    pos += 3;
    for (int k = 0; k < nmeta; k++) {
      uint8_t want[512];
      size_t wl = expected_meta(c, dt->numpy, first + k == 1, want), ml;
      REQ((int64_t)pos == mo[k] && f[pos] == 0xC6, "metalayer %d offset %lld, C6 at %zu", k,
          (long long)mo[k], pos);
      ml = (size_t)get_be(f + pos + 1, 4);
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
  tlen = (int64_t)get_be(f + len - 22, 4);
  REQ(tlen >= 35 && tlen <= (int64_t)len - ff->header_len, "trailer_len %lld", (long long)tlen);
  tstart = (int64_t)len - tlen;
  {
    const uint8_t *t = f + tstart;
    int64_t vo[16];
    size_t q = 9;
    REQ(t[0] == 0x94 && t[1] == 0x01 && t[2] == 0x93 && t[3] == 0xCD && t[6] == 0xDE,
        "trailer head markers");
    REQ(get_be(t + 7, 2) == (uint64_t)nvl, "%d vlmetalayers, expected %d", (int)get_be(t + 7, 2),
        nvl);
    for (int k = 0; k < nvl; k++) {
      size_t nl = strlen(vl[k].name);
      REQ(nl < 32 && t[q] == (0xA0 | nl) && memcmp(t + q + 1, vl[k].name, nl) == 0,
          "vlmetalayer %d is not '%s'", k, vl[k].name);
      q += 1 + nl;
      REQ(t[q] == 0xD2, "vlmetalayer offset marker");
      vo[k] = (int64_t)get_be(t + q + 1, 4);
      q += 5;
    }
    REQ(get_be(t + 4, 2) == q + 3 - 6, "trailer index size %d", (int)get_be(t + 4, 2));
    REQ(t[q] == 0xDC && get_be(t + q + 1, 2) == (uint64_t)nvl, "vlmetalayer array header");
    q += 3;
    for (int k = 0; k < nvl; k++) {
      size_t cl;
      uint8_t *dec;
      int32_t got;
      REQ((int64_t)q == vo[k] && t[q] == 0xC6, "vlmetalayer %d offset %lld, C6 at %zu", k,
          (long long)vo[k], q);
      cl = (size_t)get_be(t + q + 1, 4);
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
    for (int64_t i = 0; i < ff->nchunks; i++) entries[i] = (int64_t)get_le(idx + 8 * i, 8);
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
          int64_t cb = (int64_t)get_le(f + at + 12, 4); /* the chunk header's cbytes */
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
void check_negative(caterva_ctx *ctx, const icase *c, const dtype_desc *dt, const geom *g,
                    const uint8_t *raw, const char *path, const uint8_t *f, size_t len,
                    const expected_vl *vl, int nvl) {
  frame_facts ff;
  char err[512];
  uint8_t *m = malloc(len + 64);
  int rejected = 0;
  int64_t hl = (int64_t)get_be(f + 11, 4), cb = (int64_t)get_be(f + 39, 8);
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
void check_negative_sql(caterva_ctx *ctx, const icase *c, const dtype_desc *dt, const geom *g,
                        const uint8_t *raw, const char *path, const uint8_t *f, size_t len,
                        const expected_vl *vl, int nvl) {
  frame_facts ff;
  char err[512] = "";
  int64_t hl = (int64_t)get_be(f + 11, 4), cb = (int64_t)get_be(f + 39, 8), tlen;
  int64_t ioff = hl + cb, nch = g->nchunks, small = -1, other = -1, smallsz = 0;
  caterva_chunk_info ii;
  uint8_t *idx = malloc((size_t)nch * 8), *cidx = malloc((size_t)nch * 8 + 64), *m = NULL;
  int32_t clen = -1;
  int rejected = 0;
  caterva_cparams cp;
  tlen = (int64_t)get_be(f + len - 22, 4);
  if (idx && cidx && caterva_chunk_info_get(f + ioff, len - (size_t)ioff, &ii) == 0 &&
      caterva_chunk_decompress(ctx, f + ioff, (size_t)ii.cbytes, idx, (int32_t)nch * 8) ==
          nch * 8) {
    for (int64_t i = 0; i < nch; i++) {
      int64_t e = (int64_t)get_le(idx + 8 * i, 8), sz;
      if (e < 0 || hl + e + 16 > ioff) continue;
      sz = (int64_t)get_le(f + hl + e + 12, 4);
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

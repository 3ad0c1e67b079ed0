/*
 * remote_list.c -- the objects in the directory of an s3:// key (ListObjectsV2, page by page
 * with continuation tokens): their names and modification times, for the collection of a
 * sparse frame's unreferenced objects (frame_s3.c). The pages are GETs of remote.c's waves.
 */
#include "remote.h"

#ifdef HAVE_CURL

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static char *encode_value(const char *v) { return cat_remote_percent_encode(v, 0); }

/* The text between <tag> and </tag> from *pos in body (bounded by end), XML entities decoded,
 * into out; *pos moves past it. 0 when there is none. */
static int xml_next(const char **pos, const char *end, const char *tag, char *out, size_t cap) {
  char open[40], close[40];
  const char *a, *b;
  size_t k = 0;
  snprintf(open, sizeof open, "<%s>", tag);
  snprintf(close, sizeof close, "</%s>", tag);
  if ((a = strstr(*pos, open)) == NULL || a >= end) return 0;
  a += strlen(open);
  if ((b = strstr(a, close)) == NULL || b > end) return 0;
  *pos = b + strlen(close);
  for (const char *p = a; p < b && k + 1 < cap; p++) {
    static const struct { const char *e; char c; } ents[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    char c = *p;
    for (size_t q = 0; q < sizeof ents / sizeof *ents; q++)
      if (strncmp(p, ents[q].e, strlen(ents[q].e)) == 0) {
        c = ents[q].c;
        p += strlen(ents[q].e) - 1;
        break;
      }
    out[k++] = c;
  }
  out[k] = '\0';
  return b - a < (ptrdiff_t)cap ? 1 : -1; /* -1: cut (too long for out) */
}

/* "2026-11-28T19:15:26.000Z" in seconds since the epoch, or -1. */
static int64_t iso_date(const char *s) {
  struct tm tm;
  int y, mo, d, h, mi, sec;
  memset(&tm, 0, sizeof tm);
  if (sscanf(s, "%d-%d-%dT%d:%d:%d", &y, &mo, &d, &h, &mi, &sec) != 6 || y < 1970 || mo < 1 ||
      mo > 12)
    return -1;
  tm.tm_year = y - 1900, tm.tm_mon = mo - 1, tm.tm_mday = d;
  tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = sec;
  return (int64_t)timegm(&tm);
}

/* The objects of one page of a listing (body of len bytes) under prefix, appended to *out. */
static int take_page(caterva_ctx *ctx, const char *body, size_t len, const char *prefix,
                     cat_obj **out, int64_t *n, int64_t *cap) {
  const char *pos = body, *end = body + len, *c;
  size_t np = strlen(prefix);
  char key[1100], when[64];
  while ((c = strstr(pos, "<Contents>")) != NULL && c < end) {
    const char *ce = strstr(c, "</Contents>");
    if (ce == NULL || ce > end) break;
    pos = c;
    if (xml_next(&pos, ce, "Key", key, sizeof key) == 1 && strncmp(key, prefix, np) == 0 &&
        strchr(key + np, '/') == NULL && strlen(key + np) < sizeof (*out)->name) {
      const char *q = c;
      if (*n == *cap) {
        int64_t nc = *cap ? 2 * *cap : 256;
        cat_obj *o = realloc(*out, (size_t)nc * sizeof *o);
        if (o == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
        *out = o;
        *cap = nc;
      }
      snprintf((*out)[*n].name, sizeof (*out)->name, "%s", key + np);
      (*out)[*n].mtime = xml_next(&q, ce, "LastModified", when, sizeof when) == 1
                             ? iso_date(when) : -1;
      (*n)++;
    }
    pos = ce + strlen("</Contents>");
  }
  return CATERVA_OK;
}

int cat_remote_list_dir(caterva_ctx *ctx, cat_remote *rm, cat_obj **out, int64_t *n) {
  char *prefix = NULL, *enc = NULL, *url = NULL, token[1100] = "";
  const char *list_url = NULL, *key = NULL;
  int64_t cap = 0;
  cat_get g;
  int rc = CATERVA_OK;
  *out = NULL;
  *n = 0;
  memset(&g, 0, sizeof g);
  CAT_CHECK(leave, cat_remote_list_target(rm, &list_url, &key), CATERVA_E_UNSUPPORTED,
            "listing needs an s3:// URL");
  prefix = cat_remote_sibling(key, "");
  g.dst = malloc(CAT_REMOTE_SMALL_OBJECT);
  CAT_CHECK(leave, prefix != NULL && g.dst != NULL, CATERVA_E_NOMEM, "out of memory");
  enc = encode_value(prefix);
  CAT_CHECK(leave, enc != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int page = 0; page < 100000; page++) {
    char *tok = token[0] ? encode_value(token) : NULL;
    const char *pos;
    size_t n1 = strlen(list_url) + strlen(enc) + (tok ? strlen(tok) : 0) + 64;
    free(url);
    url = malloc(n1);
    if (url != NULL) /* the query in canonical (sorted) order */
      snprintf(url, n1, "%s?%s%s%slist-type=2&prefix=%s", list_url,
               tok ? "continuation-token=" : "", tok ? tok : "", tok ? "&" : "", enc);
    free(tok);
    CAT_CHECK(leave, url != NULL, CATERVA_E_NOMEM, "out of memory");
    g.url = url;
    g.off = 0;
    g.len = CAT_REMOTE_SMALL_OBJECT;
    g.short_ok = true;
    g.whole = true;
    CAT_TRY(leave, cat_remote_get(ctx, rm, &g, 1));
    CAT_CHECK(leave, g.status == 200, CATERVA_E_REMOTE, "listing: HTTP %ld", g.status);
    g.dst[g.got < g.len ? g.got : g.len - 1] = '\0';
    CAT_TRY(leave, take_page(ctx, (const char *)g.dst, (size_t)g.got, prefix, out, n, &cap));
    pos = (const char *)g.dst;
    if (strstr(pos, "<IsTruncated>true</IsTruncated>") == NULL) break;
    CAT_CHECK(leave, xml_next(&pos, pos + g.got, "NextContinuationToken", token,
                              sizeof token) == 1, CATERVA_E_REMOTE,
              "listing: a truncated page without a continuation token");
  }
leave:
  free(g.dst);
  free(url);
  free(enc);
  free(prefix);
  if (rc < 0) {
    free(*out);
    *out = NULL;
    *n = 0;
  }
  return rc;
}

#endif /* HAVE_CURL */

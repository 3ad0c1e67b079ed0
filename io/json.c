/*
 * json.c -- a JSON reader and writer for untrusted text (see json_internal.h).
 *
 * Recursive descent over a bounded cursor: every read checks the end first, nesting is
 * limited, numbers are converted from a bounded copy, and a failure records the byte offset
 * so that the message can say where a hand-edited meta file went wrong.
 */
#include "json_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct jparser {
  const char *p, *start, *end;
  const char *what;      /* file name for messages */
  const char *err;       /* static description of the first error */
  const char *errat;     /* where it happened */
  bool nomem;
} jparser;

static bool jfail(jparser *jp, const char *msg) {
  if (jp->err == NULL) {
    jp->err = msg;
    jp->errat = jp->p;
  }
  return false;
}

static void jskip_ws(jparser *jp) {
  while (jp->p < jp->end && (*jp->p == ' ' || *jp->p == '\t' || *jp->p == '\n' || *jp->p == '\r'))
    jp->p++;
}

static bool jword(jparser *jp, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(jp->end - jp->p) < n || memcmp(jp->p, w, n) != 0) return false;
  jp->p += n;
  return true;
}

static cat_json *jnew(jparser *jp, cat_json_type t) {
  cat_json *v = calloc(1, sizeof *v);
  if (v == NULL) jp->nomem = true, jfail(jp, "out of memory");
  else v->type = t;
  return v;
}

/* ---- strings ------------------------------------------------------------------------ */

static int jhex(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static bool jhex4(jparser *jp, uint32_t *u) {
  uint32_t v = 0;
  if (jp->end - jp->p < 4) return jfail(jp, "truncated \\u escape");
  for (int k = 0; k < 4; k++) {
    int h = jhex(jp->p[k]);
    if (h < 0) return jfail(jp, "bad \\u escape");
    v = v << 4 | (uint32_t)h;
  }
  jp->p += 4;
  *u = v;
  return true;
}

static size_t jput_utf8(char *o, uint32_t c) {
  if (c < 0x80) { o[0] = (char)c; return 1; }
  if (c < 0x800) { o[0] = (char)(0xC0 | c >> 6); o[1] = (char)(0x80 | (c & 0x3F)); return 2; }
  if (c < 0x10000) {
    o[0] = (char)(0xE0 | c >> 12); o[1] = (char)(0x80 | ((c >> 6) & 0x3F));
    o[2] = (char)(0x80 | (c & 0x3F));
    return 3;
  }
  o[0] = (char)(0xF0 | c >> 18); o[1] = (char)(0x80 | ((c >> 12) & 0x3F));
  o[2] = (char)(0x80 | ((c >> 6) & 0x3F)); o[3] = (char)(0x80 | (c & 0x3F));
  return 4;
}

/* One escape after the backslash: its UTF-8 bytes into o. */
static bool jescape(jparser *jp, char *o, size_t *n) {
  uint32_t u, lo;
  char c;
  if (jp->p >= jp->end) return jfail(jp, "truncated escape");
  c = *jp->p++;
  switch (c) {
  case '"': case '\\': case '/': o[0] = c; *n = 1; return true;
  case 'b': o[0] = '\b'; *n = 1; return true;
  case 'f': o[0] = '\f'; *n = 1; return true;
  case 'n': o[0] = '\n'; *n = 1; return true;
  case 'r': o[0] = '\r'; *n = 1; return true;
  case 't': o[0] = '\t'; *n = 1; return true;
  case 'u': break;
  default: return jfail(jp, "bad escape");
  }
  if (!jhex4(jp, &u)) return false;
  if (u >= 0xD800 && u <= 0xDBFF && jp->end - jp->p >= 6 && jp->p[0] == '\\' && jp->p[1] == 'u') {
    const char *save = jp->p;
    jp->p += 2;
    if (!jhex4(jp, &lo)) return false;
    if (lo >= 0xDC00 && lo <= 0xDFFF) u = 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00);
    else jp->p = save, u = 0xFFFD;
  } else if (u >= 0xD800 && u <= 0xDFFF) {
    u = 0xFFFD;
  }
  *n = jput_utf8(o, u);
  return true;
}

/* Length of the valid UTF-8 sequence at p (< end), or 0. */
static size_t jutf8_len(const unsigned char *p, const unsigned char *end) {
  size_t n;
  uint32_t c;
  if (p[0] < 0x80) return 1;
  if (p[0] >= 0xC2 && p[0] <= 0xDF) n = 2, c = p[0] & 0x1F;
  else if (p[0] >= 0xE0 && p[0] <= 0xEF) n = 3, c = p[0] & 0x0F;
  else if (p[0] >= 0xF0 && p[0] <= 0xF4) n = 4, c = p[0] & 0x07;
  else return 0;
  if ((size_t)(end - p) < n) return 0;
  for (size_t k = 1; k < n; k++) {
    if ((p[k] & 0xC0) != 0x80) return 0;
    c = c << 6 | (p[k] & 0x3F);
  }
  if ((n == 3 && (c < 0x800 || (c >= 0xD800 && c <= 0xDFFF))) || (n == 4 && (c < 0x10000 || c > 0x10FFFF)))
    return 0;
  return n;
}

/* A string at jp->p (on the opening quote): unescaped into a new malloc'ed buffer. The
 * output is never longer than the input (an escape of 6 or 12 bytes gives at most 4). */
static bool jstring(jparser *jp, char **out, size_t *outlen) {
  const char *q;
  char *buf, *o;
  jp->p++;
  for (q = jp->p; q < jp->end && *q != '"'; q++)
    if (*q == '\\') q++;
  if (q >= jp->end) return jfail(jp, "unterminated string");
  buf = malloc((size_t)(q - jp->p) + 1);
  if (buf == NULL) return jp->nomem = true, jfail(jp, "out of memory");
  o = buf;
  while (*jp->p != '"') {
    unsigned char c = (unsigned char)*jp->p;
    size_t n;
    if (c == '\\') {
      jp->p++;
      if (!jescape(jp, o, &n)) goto fail;
      o += n;
      continue;
    }
    if (c < 0x20) { jfail(jp, "control character in a string"); goto fail; }
    n = jutf8_len((const unsigned char *)jp->p, (const unsigned char *)jp->end);
    if (n == 0) { jfail(jp, "invalid UTF-8 in a string"); goto fail; }
    memcpy(o, jp->p, n);
    o += n;
    jp->p += n;
  }
  jp->p++;
  *o = '\0';
  *out = buf;
  *outlen = (size_t)(o - buf);
  return true;
fail:
  free(buf);
  return false;
}

/* ---- numbers ------------------------------------------------------------------------ */

static bool jnumber(jparser *jp, cat_json *v) {
  const char *s = jp->p;
  char tmp[64];
  bool integral = true;
  size_t n;
  if (jword(jp, "NaN")) { v->num = NAN; return true; }
  if (jword(jp, "Infinity")) { v->num = INFINITY; return true; }
  if (jword(jp, "-Infinity")) { v->num = -INFINITY; return true; }
  if (jp->p < jp->end && *jp->p == '-') jp->p++;
  if (jp->p >= jp->end || *jp->p < '0' || *jp->p > '9') return jfail(jp, "unexpected character");
  if (*jp->p == '0') jp->p++;
  else while (jp->p < jp->end && *jp->p >= '0' && *jp->p <= '9') jp->p++;
  if (jp->p < jp->end && *jp->p == '.') {
    integral = false;
    jp->p++;
    if (jp->p >= jp->end || *jp->p < '0' || *jp->p > '9') return jfail(jp, "bad number");
    while (jp->p < jp->end && *jp->p >= '0' && *jp->p <= '9') jp->p++;
  }
  if (jp->p < jp->end && (*jp->p == 'e' || *jp->p == 'E')) {
    integral = false;
    jp->p++;
    if (jp->p < jp->end && (*jp->p == '+' || *jp->p == '-')) jp->p++;
    if (jp->p >= jp->end || *jp->p < '0' || *jp->p > '9') return jfail(jp, "bad number");
    while (jp->p < jp->end && *jp->p >= '0' && *jp->p <= '9') jp->p++;
  }
  n = (size_t)(jp->p - s);
  if (n >= sizeof tmp) {
    /* only very long integers get here; their value as a double is enough */
    if (!integral) return jfail(jp, "number too long");
    v->num = s[0] == '-' ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  memcpy(tmp, s, n);
  tmp[n] = '\0';
  v->num = strtod(tmp, NULL);
  if (integral) {
    char *e;
    long long ll;
    errno = 0;
    ll = strtoll(tmp, &e, 10);
    if (errno == 0 && *e == '\0') v->is_int = true, v->i = ll;
  }
  return true;
}

/* ---- values ------------------------------------------------------------------------- */

static cat_json *jvalue(jparser *jp, int depth);

/* Elements of an array or members of an object, after the opening bracket. */
static bool jcontainer(jparser *jp, cat_json *v, int depth, bool object) {
  cat_json **tail = &v->child;
  char close = object ? '}' : ']';
  jp->p++;
  jskip_ws(jp);
  if (jp->p < jp->end && *jp->p == close) { jp->p++; return true; }
  for (;;) {
    char *key = NULL;
    size_t keylen = 0;
    cat_json *c;
    jskip_ws(jp);
    if (object) {
      if (jp->p >= jp->end || *jp->p != '"') return jfail(jp, "expected a string key");
      if (!jstring(jp, &key, &keylen)) return false;
      jskip_ws(jp);
      if (jp->p >= jp->end || *jp->p != ':') { free(key); return jfail(jp, "expected ':'"); }
      jp->p++;
    }
    c = jvalue(jp, depth + 1);
    if (c == NULL) { free(key); return false; }
    c->key = key;
    c->keylen = keylen;
    *tail = c;
    tail = &c->next;
    v->n++;
    jskip_ws(jp);
    if (jp->p < jp->end && *jp->p == ',') { jp->p++; continue; }
    if (jp->p < jp->end && *jp->p == close) { jp->p++; return true; }
    return jfail(jp, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static cat_json *jvalue(jparser *jp, int depth) {
  cat_json *v = NULL;
  bool ok;
  jskip_ws(jp);
  if (depth > CAT_JSON_MAX_DEPTH) { jfail(jp, "nested too deeply"); return NULL; }
  if (jp->p >= jp->end) { jfail(jp, "unexpected end of text"); return NULL; }
  switch (*jp->p) {
  case '{': case '[':
    if ((v = jnew(jp, *jp->p == '{' ? CAT_JSON_OBJECT : CAT_JSON_ARRAY)) == NULL) return NULL;
    ok = jcontainer(jp, v, depth, v->type == CAT_JSON_OBJECT);
    break;
  case '"':
    if ((v = jnew(jp, CAT_JSON_STRING)) == NULL) return NULL;
    ok = jstring(jp, &v->str, &v->len);
    break;
  case 't': case 'f': case 'n':
    if ((v = jnew(jp, CAT_JSON_BOOL)) == NULL) return NULL;
    if (jword(jp, "true")) ok = true, v->b = true;
    else if (jword(jp, "false")) ok = true;
    else if (jword(jp, "null")) ok = true, v->type = CAT_JSON_NULL;
    else ok = jfail(jp, "unexpected word");
    break;
  default:
    if ((v = jnew(jp, CAT_JSON_NUMBER)) == NULL) return NULL;
    ok = jnumber(jp, v);
    break;
  }
  if (!ok) {
    cat_json_free(v);
    return NULL;
  }
  return v;
}

int cat_json_parse(caterva_ctx *ctx, const char *text, size_t len, const char *what,
                   cat_json **out) {
  jparser jp = {text, text, text + len, what, NULL, NULL, false};
  cat_json *v;
  *out = NULL;
  v = jvalue(&jp, 0);
  if (v != NULL) {
    jskip_ws(&jp);
    if (jp.p != jp.end) {
      jfail(&jp, "text after the value");
      cat_json_free(v);
      v = NULL;
    }
  }
  if (v == NULL) {
    if (jp.nomem) return cat_error(ctx, CATERVA_E_NOMEM, "%s: out of memory", what);
    return cat_error(ctx, CATERVA_E_CORRUPT, "%s: malformed JSON: %s at byte %lld", what, jp.err,
                     (long long)(jp.errat - jp.start));
  }
  *out = v;
  return CATERVA_OK;
}

void cat_json_free(cat_json *v) {
  while (v != NULL) {
    cat_json *next = v->next;
    cat_json_free(v->child);
    free(v->str);
    free(v->key);
    free(v);
    v = next;
  }
}

const cat_json *cat_json_get(const cat_json *obj, const char *key) {
  size_t n = strlen(key);
  if (obj == NULL || obj->type != CAT_JSON_OBJECT) return NULL;
  for (const cat_json *c = obj->child; c; c = c->next)
    if (c->keylen == n && memcmp(c->key, key, n) == 0) return c;
  return NULL;
}

/* ---- writing ------------------------------------------------------------------------ */

typedef struct jbuf {
  char *p;
  size_t n, cap;
  bool nomem;
} jbuf;

static void jb_put(jbuf *b, const char *s, size_t n) {
  if (b->nomem) return;
  if (b->n + n + 1 > b->cap) {
    size_t cap = b->cap ? b->cap : 64;
    char *q;
    while (cap < b->n + n + 1) cap *= 2;
    q = realloc(b->p, cap);
    if (q == NULL) { b->nomem = true; return; }
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = '\0';
}

static void jb_str(jbuf *b, const char *s, size_t n) {
  jb_put(b, "\"", 1);
  for (size_t k = 0; k < n; k++) {
    unsigned char c = (unsigned char)s[k];
    char esc[8];
    if (c == '"' || c == '\\') { esc[0] = '\\'; esc[1] = (char)c; jb_put(b, esc, 2); }
    else if (c < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", c); jb_put(b, esc, 6); }
    else jb_put(b, (const char *)&c, 1);
  }
  jb_put(b, "\"", 1);
}

static void jb_value(jbuf *b, const cat_json *v) {
  char num[40];
  switch (v->type) {
  case CAT_JSON_NULL: jb_put(b, "null", 4); break;
  case CAT_JSON_BOOL: v->b ? jb_put(b, "true", 4) : jb_put(b, "false", 5); break;
  case CAT_JSON_NUMBER:
    if (v->is_int) snprintf(num, sizeof num, "%lld", (long long)v->i);
    else if (isfinite(v->num)) snprintf(num, sizeof num, "%.17g", v->num);
    else snprintf(num, sizeof num, "null");
    jb_put(b, num, strlen(num));
    break;
  case CAT_JSON_STRING: jb_str(b, v->str, v->len); break;
  case CAT_JSON_ARRAY: case CAT_JSON_OBJECT:
    jb_put(b, v->type == CAT_JSON_ARRAY ? "[" : "{", 1);
    for (const cat_json *c = v->child; c; c = c->next) {
      if (c != v->child) jb_put(b, ",", 1);
      if (v->type == CAT_JSON_OBJECT) {
        jb_str(b, c->key, c->keylen);
        jb_put(b, ":", 1);
      }
      jb_value(b, c);
    }
    jb_put(b, v->type == CAT_JSON_ARRAY ? "]" : "}", 1);
    break;
  }
}

char *cat_json_text(const cat_json *v) {
  jbuf b = {NULL, 0, 0, false};
  jb_value(&b, v);
  if (b.nomem) {
    free(b.p);
    return NULL;
  }
  return b.p;
}

/* minijson.c -- see minijson.h. Recursive descent over a bounded buffer. */
#include "minijson.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct mj_in {
  const char *p, *end;
  int depth;
} mj_in;

static mj_node *mj_value(mj_in *in);

static void mj_ws(mj_in *in) {
  while (in->p < in->end && (*in->p == ' ' || *in->p == '\n' || *in->p == '\r' || *in->p == '\t'))
    in->p++;
}

static mj_node *mj_new(mj_type t) {
  mj_node *n = calloc(1, sizeof *n);
  if (n) n->type = t;
  return n;
}

static char *mj_string(mj_in *in) {
  size_t cap = 16, len = 0;
  char *s = malloc(cap);
  if (s == NULL) return NULL;
  in->p++; /* opening quote */
  while (in->p < in->end && *in->p != '"') {
    char c = *in->p++;
    if (c == '\\' && in->p < in->end) {
      char e = *in->p++;
      switch (e) {
      case 'n': c = '\n'; break;
      case 't': c = '\t'; break;
      case 'r': c = '\r'; break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'u': {
        unsigned v = 0;
        if (in->end - in->p < 4 || sscanf(in->p, "%4x", &v) != 1) goto fail;
        in->p += 4;
        c = v < 0x80 ? (char)v : '?';
        break;
      }
      default: c = e; break;
      }
    }
    if (len + 2 > cap) {
      char *t = realloc(s, cap *= 2);
      if (t == NULL) goto fail;
      s = t;
    }
    s[len++] = c;
  }
  if (in->p >= in->end) goto fail;
  in->p++;
  s[len] = 0;
  return s;
fail:
  free(s);
  return NULL;
}

static int mj_push(mj_node *n, mj_node *child, char *key) {
  mj_node **items = realloc(n->items, (n->n + 1) * sizeof *items);
  if (items == NULL) return -1;
  n->items = items;
  if (n->type == MJ_OBJ) {
    char **keys = realloc(n->keys, (n->n + 1) * sizeof *keys);
    if (keys == NULL) return -1;
    n->keys = keys;
    keys[n->n] = key;
  }
  items[n->n++] = child;
  return 0;
}

static mj_node *mj_container(mj_in *in, mj_type t) {
  mj_node *n = mj_new(t);
  char close = t == MJ_ARR ? ']' : '}';
  if (n == NULL || ++in->depth > 64) goto fail;
  in->p++;
  mj_ws(in);
  if (in->p < in->end && *in->p == close) {
    in->p++;
    in->depth--;
    return n;
  }
  for (;;) {
    char *key = NULL;
    mj_node *child;
    mj_ws(in);
    if (t == MJ_OBJ) {
      if (in->p >= in->end || *in->p != '"' || (key = mj_string(in)) == NULL) goto fail;
      mj_ws(in);
      if (in->p >= in->end || *in->p++ != ':') { free(key); goto fail; }
    }
    child = mj_value(in);
    if (child == NULL || mj_push(n, child, key) < 0) { free(key); mj_free(child); goto fail; }
    mj_ws(in);
    if (in->p < in->end && *in->p == ',') { in->p++; continue; }
    if (in->p < in->end && *in->p == close) { in->p++; break; }
    goto fail;
  }
  in->depth--;
  return n;
fail:
  mj_free(n);
  return NULL;
}

static mj_node *mj_literal(mj_in *in) {
  mj_node *n = NULL;
  size_t left = (size_t)(in->end - in->p);
  if (left >= 4 && !memcmp(in->p, "true", 4)) { n = mj_new(MJ_BOOL); if (n) n->boolean = 1; in->p += 4; }
  else if (left >= 5 && !memcmp(in->p, "false", 5)) { n = mj_new(MJ_BOOL); in->p += 5; }
  else if (left >= 4 && !memcmp(in->p, "null", 4)) { n = mj_new(MJ_NULL); in->p += 4; }
  else {
    char buf[64];
    size_t k = 0;
    while (in->p < in->end && k < sizeof buf - 1 && strchr("+-0123456789.eE", *in->p)) buf[k++] = *in->p++;
    buf[k] = 0;
    if (k == 0) return NULL;
    n = mj_new(MJ_NUM);
    if (n) {
      char *e;
      n->num = strtod(buf, &e);
      n->inum = strtoll(buf, NULL, 10);
    }
  }
  return n;
}

static mj_node *mj_value(mj_in *in) {
  mj_ws(in);
  if (in->p >= in->end) return NULL;
  if (*in->p == '{') return mj_container(in, MJ_OBJ);
  if (*in->p == '[') return mj_container(in, MJ_ARR);
  if (*in->p == '"') {
    mj_node *n = mj_new(MJ_STR);
    if (n && (n->str = mj_string(in)) == NULL) { free(n); n = NULL; }
    return n;
  }
  return mj_literal(in);
}

mj_node *mj_parse(const char *text, size_t len) {
  mj_in in = {text, text + len, 0};
  return mj_value(&in);
}

void mj_free(mj_node *n) {
  if (n == NULL) return;
  for (size_t i = 0; i < n->n; i++) {
    mj_free(n->items[i]);
    if (n->keys) free(n->keys[i]);
  }
  free(n->items);
  free(n->keys);
  free(n->str);
  free(n);
}

const mj_node *mj_get(const mj_node *obj, const char *key) {
  if (obj == NULL || obj->type != MJ_OBJ) return NULL;
  for (size_t i = 0; i < obj->n; i++)
    if (strcmp(obj->keys[i], key) == 0) return obj->items[i];
  return NULL;
}

const char *mj_getstr(const mj_node *obj, const char *key) {
  const mj_node *n = mj_get(obj, key);
  return n && n->type == MJ_STR ? n->str : NULL;
}

int64_t mj_getint(const mj_node *obj, const char *key, int64_t def) {
  const mj_node *n = mj_get(obj, key);
  return n && n->type == MJ_NUM ? n->inum : def;
}

char *mj_read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  long sz;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) goto done;
  buf = malloc((size_t)sz + 1);
  if (buf == NULL) goto done;
  if (fread(buf, 1, (size_t)sz, f) != (size_t)sz) { free(buf); buf = NULL; goto done; }
  buf[sz] = 0;
  if (len) *len = (size_t)sz;
done:
  fclose(f);
  return buf;
}

mj_node *mj_load_manifest(const char *dir, const mj_node **cases) {
  char path[4096];
  size_t len = 0;
  char *text;
  mj_node *root;
  *cases = NULL;
  snprintf(path, sizeof path, "%s/manifest.json", dir);
  text = mj_read_file(path, &len);
  if (text == NULL) return NULL;
  root = mj_parse(text, len);
  free(text);
  *cases = mj_get(root, "cases");
  if (*cases != NULL && (*cases)->type != MJ_ARR) *cases = NULL;
  return root;
}

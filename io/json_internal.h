/*
 * json_internal.h -- a JSON reader for untrusted text (json.c), used by the bcolz reader
 * (meta/sizes, meta/storage, __attrs__, __rootdirs__). Not installed; names start with cat_.
 *
 * The text becomes a tree of cat_json nodes. Python's json.dumps writes NaN, Infinity and
 * -Infinity as bare words when a float is not finite (bcolz attributes can hold them), so
 * they are accepted as numbers; everything else follows RFC 8259. Limits: nesting depth
 * CAT_JSON_MAX_DEPTH; strings must be valid UTF-8 once unescaped (lone surrogate escapes
 * become U+FFFD).
 */
#ifndef CAT_JSON_INTERNAL_H
#define CAT_JSON_INTERNAL_H

#include "io_internal.h"

#define CAT_JSON_MAX_DEPTH 64

typedef enum {
  CAT_JSON_NULL, CAT_JSON_BOOL, CAT_JSON_NUMBER, CAT_JSON_STRING, CAT_JSON_ARRAY, CAT_JSON_OBJECT
} cat_json_type;

typedef struct cat_json cat_json;
struct cat_json {
  cat_json_type type;
  bool b;                /* BOOL */
  double num;            /* NUMBER, always */
  bool is_int;           /* NUMBER written as an integer that fits int64 */
  int64_t i;             /* ... and its value */
  char *str;             /* STRING: the value, NUL-terminated (may hold NULs: see len) */
  size_t len;            /* STRING: its length in bytes */
  char *key;             /* member of an OBJECT: its key (NUL-terminated) */
  size_t keylen;
  cat_json *child;       /* ARRAY, OBJECT: first element or member */
  cat_json *next;        /* the following sibling */
  int64_t n;             /* ARRAY, OBJECT: number of children */
};

/* Parse len bytes of text (a single JSON value, surrounded by whitespace only). On failure
 * the message names `what` (a file name) and the byte offset. *out = NULL on failure. */
int cat_json_parse(caterva_ctx *ctx, const char *text, size_t len, const char *what,
                   cat_json **out);
void cat_json_free(cat_json *v);
/* The member named key of an object (first one if repeated), or NULL. */
const cat_json *cat_json_get(const cat_json *obj, const char *key);
/* Compact JSON text of v (malloc'ed, NUL-terminated); non-finite numbers become null.
 * NULL when out of memory. */
char *cat_json_text(const cat_json *v);

#endif /* CAT_JSON_INTERNAL_H */

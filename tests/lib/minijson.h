/*
 * minijson.h -- a small JSON reader for the tests (manifest.json). Not for production use:
 * numbers are kept as double and as int64 when integral; strings are unescaped (\uXXXX
 * below 0x80 only; others become '?').
 */
#ifndef CAT_MINIJSON_H
#define CAT_MINIJSON_H

#include <stddef.h>
#include <stdint.h>

typedef enum { MJ_NULL, MJ_BOOL, MJ_NUM, MJ_STR, MJ_ARR, MJ_OBJ } mj_type;

typedef struct mj_node {
  mj_type type;
  double num;
  int64_t inum;
  int boolean;
  char *str;               /* MJ_STR: value; object members: key in keys[] */
  struct mj_node **items;  /* MJ_ARR, MJ_OBJ: children */
  char **keys;             /* MJ_OBJ: keys, parallel to items */
  size_t n;
} mj_node;

/* Parse text; NULL on a syntax error. Free with mj_free. */
mj_node *mj_parse(const char *text, size_t len);
void mj_free(mj_node *n);
/* Member of an object, or NULL. */
const mj_node *mj_get(const mj_node *obj, const char *key);
/* Convenience accessors; defaults when absent or of another type. */
const char *mj_getstr(const mj_node *obj, const char *key);       /* NULL */
int64_t mj_getint(const mj_node *obj, const char *key, int64_t def);
/* Read and parse DIR/manifest.json (the golden set's schema); *cases is its "cases" array
 * (NULL if missing). Returns the root to free with mj_free, or NULL when the file cannot be
 * read or parsed. */
mj_node *mj_load_manifest(const char *dir, const mj_node **cases);
/* Read a whole file into a NUL-terminated malloc'ed buffer; NULL on error. */
char *mj_read_file(const char *path, size_t *len);

#endif

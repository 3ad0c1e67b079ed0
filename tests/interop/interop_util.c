/*
 * interop_util.c -- helpers of the interop writer test that know nothing of its cases.
 */
#define _XOPEN_SOURCE 700
#include "interop_util.h"

#include "fsutil.h"
#include "minijson.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>

/* ---- byte order ----------------------------------------------------------------------- */

void put_le(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

size_t put_be(uint8_t *p, uint64_t v, int n) {
  for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
  return (size_t)n;
}

uint64_t get_le(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
  return v;
}

uint64_t get_be(const uint8_t *p, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; i++) v = v << 8 | p[i];
  return v;
}

/* ---- msgpack -------------------------------------------------------------------------- */

void mp_start(msgpack_sbuffer *sb, msgpack_packer *pk) {
  msgpack_sbuffer_init(sb);
  msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
}

void pack_str_array(msgpack_sbuffer *sb, const char *const *names, int n) {
  msgpack_packer pk;
  mp_start(sb, &pk);
  msgpack_pack_array(&pk, (size_t)n);
  for (int k = 0; k < n; k++) msgpack_pack_str_with_body(&pk, names[k], strlen(names[k]));
}

/* ---- files ---------------------------------------------------------------------------- */

static int ends_with(const char *s, const char *suffix) {
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

void clean_out(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  char path[4096];
  if (d == NULL) return;
  while ((e = readdir(d)) != NULL) {
    if (ends_with(e->d_name, ".b2nd") || ends_with(e->d_name, ".b2frame") ||
        ends_with(e->d_name, ".b2nd.b2lock") ||
        strcmp(e->d_name, "raw") == 0 || strcmp(e->d_name, "manifest.json") == 0) {
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      tu_rm_tree(path);
    }
  }
  closedir(d);
}

uint8_t *slurp(const char *path, size_t *len) {
  return (uint8_t *)mj_read_file(path, len);
}

/* ---- JSON text ------------------------------------------------------------------------ */

void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\') fprintf(f, "\\%c", ch);
    else if (ch < 0x20) fprintf(f, "\\u%04x", ch);
    else fputc(ch, f);
  }
  fputc('"', f);
}

void json_i64s(FILE *f, const int64_t *v, int n) {
  fputc('[', f);
  for (int k = 0; k < n; k++) fprintf(f, "%s%lld", k ? ", " : "", (long long)v[k]);
  fputc(']', f);
}

void hexify(const uint8_t *p, size_t n, char *out, size_t cap) {
  size_t k = 0;
  for (size_t i = 0; i < n && k + 3 <= cap; i++, k += 2) snprintf(out + k, 3, "%02x", p[i]);
  out[k] = '\0';
}

/* ---- the SQLite extension ------------------------------------------------------------- */

static char g_ext_path[4096]; /* the extension, without .so (sqlite3_load_extension adds it) */

void find_extension(const char *argv0) {
  const char *e = getenv("CATERVA_EXT"), *top = getenv("top_builddir");
  if (e != NULL && *e) {
    snprintf(g_ext_path, sizeof g_ext_path, "%s", e);
  } else if (top != NULL && *top) {
    snprintf(g_ext_path, sizeof g_ext_path, "%s/.libs/caterva", top);
  } else {
    const char *slash = strrchr(argv0, '/');
    int n = slash ? (int)(slash - argv0) : 1;
    snprintf(g_ext_path, sizeof g_ext_path, "%.*s/../../.libs/caterva", n, slash ? argv0 : ".");
  }
}

const char *ext_path(void) {
  return g_ext_path;
}

sqlite3 *open_ext_db(char *err, size_t errcap) {
  sqlite3 *db = NULL;
  char *msg = NULL;
  if (sqlite3_open(":memory:", &db) == SQLITE_OK &&
      sqlite3_enable_load_extension(db, 1) == SQLITE_OK &&
      sqlite3_load_extension(db, g_ext_path, NULL, &msg) == SQLITE_OK)
    return db;
  snprintf(err, errcap, "cannot load the extension %.300s: %.150s", g_ext_path,
           msg ? msg : db ? sqlite3_errmsg(db) : "no database");
  sqlite3_free(msg);
  sqlite3_close(db);
  return NULL;
}

/*
 * interop_util.h -- helpers of the interop writer test that know nothing of its cases: byte
 * order, msgpack buffers, the output directory, JSON text, and the SQLite extension.
 */
#ifndef TESTS_INTEROP_UTIL_H
#define TESTS_INTEROP_UTIL_H

#include <msgpack.h>
#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- byte order ----------------------------------------------------------------------- */

void put_le(uint8_t *p, uint64_t v, int n);
size_t put_be(uint8_t *p, uint64_t v, int n); /* returns n */
uint64_t get_le(const uint8_t *p, int n);
uint64_t get_be(const uint8_t *p, int n);

/* ---- msgpack -------------------------------------------------------------------------- */

/* An empty buffer and a packer writing into it. */
void mp_start(msgpack_sbuffer *sb, msgpack_packer *pk);
/* A msgpack array of n strings into a new buffer. */
void pack_str_array(msgpack_sbuffer *sb, const char *const *names, int n);

/* ---- files ---------------------------------------------------------------------------- */

/* Remove what an earlier run left in dir: *.b2nd, *.b2frame (and their *.b2nd.b2lock
 * sidecars), raw/ and manifest.json; nothing else (dir may be one the user named). */
void clean_out(const char *dir);
/* A whole file in a malloc'ed buffer, or NULL. */
uint8_t *slurp(const char *path, size_t *len);

/* ---- JSON text ------------------------------------------------------------------------ */

void json_str(FILE *f, const char *s);
void json_i64s(FILE *f, const int64_t *v, int n);
void hexify(const uint8_t *p, size_t n, char *out, size_t cap);

/* ---- the SQLite extension ------------------------------------------------------------- */

/* Where the extension is: CATERVA_EXT, $top_builddir/.libs/caterva, or ../../.libs/caterva
 * from the directory of argv0 (tests/interop/ of the build tree). */
void find_extension(const char *argv0);
const char *ext_path(void);
/* A new in-memory database with the extension loaded, or NULL (err says why). */
sqlite3 *open_ext_db(char *err, size_t errcap);

#endif

/*
 * interop.h -- what the sources of the interop writer test (tests/interop/test_interop) share:
 * the cases, their geometry and values, the SQL writer, the frame checks and the manifest.
 * See test_interop.c for what the program writes and checks.
 *
 *   interop_cases.c     the case tables (API and SQL cases), names, the coverage check
 *   interop_values.c    geometry, the values of each case, attributes, expected metalayers
 *   interop_sql.c       the cases written through SQL: statements and expected content
 *   interop_frame.c     the frame and chunk checks (and the checks of the checker)
 *   interop_manifest.c  manifest.json: written, then re-read and re-hashed
 *   interop_bcolz.c     bcolz datasets converted by caterva_import (manifest_bcolz.json)
 *   interop_util.c      byte order, msgpack, files, JSON text, loading the extension
 */
#ifndef TESTS_INTEROP_H
#define TESTS_INTEROP_H

#define TAP_SHARED /* one TAP count for every source of the program (tap.h) */

#include "caterva.h"
#include "interop_util.h"
#include "tap.h"

#include <msgpack.h>
#include <stddef.h>
#include <stdint.h>

#define MAXD 8

/* ---- dtypes (interop_cases.c) --------------------------------------------------------- */

enum { K_INT, K_UINT, K_FLOAT, K_BOOL };

typedef struct dtype_desc {
  const char *name, *numpy;
  int itemsize, kind;
} dtype_desc;

const dtype_desc *find_dtype(const char *name);

/* ---- the cases (interop_cases.c) ------------------------------------------------------ */

enum { V_RAMP, V_STEPS, V_SMOOTH, V_HASH, V_ZERO, V_SPARSE, V_CONST, V_NAN, V_SQL };
enum { W_DIRECT, W_MEMSAVE, W_FULL, W_NANFILL, W_SQL };
#define A_ATTRS 1
#define A_DIMNAMES 2

typedef struct icase {
  const char *name;
  int sparse;
  const char *dtype;
  int ndim;
  int64_t shape[MAXD];
  int32_t chunks[MAXD], blocks[MAXD];
  int codec, clevel;
  uint8_t filters[6];
  int fmeta[6];
  int split;
  int vkind;
  double a, b;
  int write, attrs, nthreads, optional;
  const char *note;
} icase;

/* A case written through SQL (see SQLCASES in interop_cases.c for the statements). */
typedef struct sqlcase {
  const char *name;          /* the CASES entry (whose shape is the final one) */
  int64_t shape0;            /* the first extent at CREATE */
  const char *opts;          /* further creation options, verbatim */
  const char *dims;          /* dims= ("" for none: columns d0, d1, ...) */
  const char *fill;          /* fill= ("" for the default: NaN for floats, 0 for integers) */
  int64_t mul[3], add, mod;
  double scale, off;
  int64_t upd_lo, upd_hi;
  double umul, uadd;
  int64_t del_lo[3], del_hi[3];
  int64_t grow_lo, grow_hi;  /* grow_hi + 1 is the final extent */
  int txn, grow_first;
} sqlcase;

#define NCASES 47    /* entries of CASES (checked where the table is) */
#define NSQLCASES 6  /* entries of SQLCASES */
extern const icase CASES[];
extern const sqlcase SQLCASES[];

const sqlcase *find_sql(const char *name);
/* "b2frame" for a sparse case, "b2nd" for a contiguous one: the name's extension. */
const char *case_ext(const icase *c);

const char *codec_name(int c);
int codec_format(int c);      /* chunk flags bits 5-7 (format id) of a codec */
const char *filter_name(int f);
const char *split_name(int s);
int has_filter(const icase *c, int f);

/* TAP: the tables cover every codec, filter, frame kind, dtype, ... */
void check_coverage(void);

/* ---- geometry and values (interop_values.c) ------------------------------------------- */

typedef struct geom {
  int ndim, itemsize;
  int64_t nitems, nchunks, chunksize, blocksize;
  int64_t extchunk[MAXD], grid[MAXD];
} geom;

void geom_init(const icase *c, int itemsize, geom *g);
/* Step the C-order index idx[0..ndim) through the box [lo, hi); 0 after the last cell. */
int next_in_box(int64_t *idx, const int64_t *lo, const int64_t *hi, int ndim);
/* Whether every item of chunk n (inside the shape) is zero in raw; with nan, whether every
 * item is a float NaN (itemsize 4 or 8) instead. */
int chunk_all(const icase *c, const geom *g, const uint8_t *raw, int64_t n, int nan);
int chunk_all_zero(const icase *c, const geom *g, const uint8_t *raw, int64_t n);

/* A float value as the dtype stores it: float64, or float32 rounded from the double. */
void put_float(uint8_t *p, double v, int itemsize);
/* The raw bytes of case c (little-endian C order), trunc_prec applied; malloc'ed. */
uint8_t *gen_raw(const icase *c, const dtype_desc *dt, const geom *g);
void describe_values(const icase *c, const dtype_desc *dt, char *out, size_t cap);

extern const char *const DIM_NAMES[3];
void pack_attrs(msgpack_sbuffer *sb);
void pack_dim_names(msgpack_sbuffer *sb);
/* The `caterva` (b2nd == 0) or `b2nd` metalayer as the fact sheet (§5.1) spells it. */
size_t expected_meta(const icase *c, const char *numpy, int b2nd, uint8_t *out);

/* ---- writing through SQL (interop_sql.c) ---------------------------------------------- */

typedef struct sql_stmt {
  char text[8192];
  int must_fail; /* the statement must fail and change nothing */
} sql_stmt;

#define MAX_SQL_STMTS 16

void sql_colnames(const icase *c, const sqlcase *s, char names[MAXD][32]);
/* The statements of a SQL case, for the array at path; returns their number. *ntxn: the
 * write transactions they run (each takes the lock once: the sidecar counter's increase). */
int sql_statements(const icase *c, const sqlcase *s, const char *path, sql_stmt *st, int *ntxn);
/* The expected content of a SQL case after its statements, in raw form; malloc'ed. */
uint8_t *sql_expected(const icase *c, const dtype_desc *dt, const geom *g, const sqlcase *s);
/* The `_FillValue` attribute the SQL writer stores: a msgpack float64 or integer. */
void pack_sql_fill(const dtype_desc *dt, const sqlcase *s, msgpack_sbuffer *sb);
/* Run the statements of a SQL case on a new connection with the extension loaded. */
int write_sql_case(const icase *c, const sqlcase *s, const char *path, int *ntxn, char *err,
                   size_t errcap);
/* The generation counter of the array's `.b2lock` sidecar, or -1. */
int64_t sidecar_counter(const icase *c, const char *path);
/* The manifest's "values" text of a SQL case. */
void describe_sql(const icase *c, const sqlcase *s, char *out, size_t cap);

/* ---- frame checks (interop_frame.c) --------------------------------------------------- */

typedef struct frame_facts {
  int64_t header_len, frame_len, nbytes, cbytes, nchunks;
  int32_t typesize, blocksize, chunksize;
  int64_t n_zero, n_nan, n_uninit, n_stored, n_value, n_memcpy;
  int64_t file_nbytes;
  int64_t dead; /* bytes of the chunk section no chunk uses (SQL-written contiguous files) */
  int split_mismatch;  /* chunks whose split flag differs from the reference's rule */
} frame_facts;

typedef struct expected_vl {
  const char *name;
  const uint8_t *content;
  size_t len;
} expected_vl;

/* The frame image f[0..len) (a contiguous file, or a sparse directory's chunks.b2frame):
 * 1 when it follows the fact sheet, else 0 with the reason in err. */
int check_frame(caterva_ctx *ctx, const icase *c, const dtype_desc *dt, const geom *g,
                const uint8_t *raw, const char *path, const uint8_t *f, size_t len,
                const expected_vl *vl, int nvl, frame_facts *ff, char *err, size_t errcap);
/* TAP: check_frame rejects frames that break the rules (dead bytes, a wrong codec byte,
 * trailing bytes), and, for SQL-written contiguous files, overlapping chunks. */
void check_negative(caterva_ctx *ctx, const icase *c, const dtype_desc *dt, const geom *g,
                    const uint8_t *raw, const char *path, const uint8_t *f, size_t len,
                    const expected_vl *vl, int nvl);
void check_negative_sql(caterva_ctx *ctx, const icase *c, const dtype_desc *dt, const geom *g,
                        const uint8_t *raw, const char *path, const uint8_t *f, size_t len,
                        const expected_vl *vl, int nvl);

/* ---- per case and the manifest (test_interop.c, interop_manifest.c) ------------------- */

typedef struct case_result {
  int written;
  int64_t gen; /* SQL cases: the sidecar's generation counter after the connection closed */
  char sha[65];
  int64_t rawlen;
  frame_facts ff;
  char meta_hex[1100];
  char *vlnames[4];
  int nvl;
} case_result;

/* manifest.json for the cases written (res[i] for CASES[i]); 0 or -1. */
int write_manifest(const char *dir, const case_result *res);
/* TAP: manifest.json parses, lists every written case, and every raw_sha256 matches. */
void check_manifest(const char *dir, const case_result *res);

/* ---- bcolz (interop_bcolz.c) ---------------------------------------------------------- */

/* TAP: the bcolz datasets tests/tools/mkbcolz writes, converted into dir (skipped when
 * mkbcolz is not built); argv0 locates it. */
void write_bcolz_cases(caterva_ctx *ctx, const char *dir, const char *argv0);

#endif

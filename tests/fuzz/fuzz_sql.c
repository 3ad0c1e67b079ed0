/*
 * fuzz_sql.c -- libFuzzer target for the SQL surface of the extension, loaded in-process
 * (its objects are linked in; sqlite3_auto_extension registers it on every connection).
 *
 * Input: a u32 LE length n, then n bytes written to a.b2nd in a directory of this process
 * (the array file: seeds hold real frames), then a program: each byte picks a step and the
 * bytes after it its operands.
 *   CREATE VIRTUAL TABLE over the file, a new file (create options) or a fuzzed path, with
 *     fuzzed module arguments and options;
 *   SELECT with fuzzed constraints (=, <, BETWEEN, IN, IS NULL, ...) on the dimension and value
 *     columns, ORDER BY, LIMIT/OFFSET, aggregates;
 *   caterva_info/slice/nearest/set_coords/build_stats/stats_check/reduce/export/png/import
 *     with fuzzed arguments;
 *   INSERT/UPDATE/DELETE in a transaction that commits or rolls back.
 * Strings from the input only ever appear as quoted SQL literals, and every path is the
 * directory's name, '/', and a name without '/', so every file stays in the directory. SQL
 * errors are fine; a crash, a leak or a sanitizer report is a finding. Work per input is
 * bounded: a progress handler stops long statements, result sizes are limited, and
 * whole-array functions run only on arrays of at most 1 MiB (the input's, and at the call
 * the one named: whole()).
 */
#include "config.h"

#include "caterva.h"
#include "caterva_array.h"

#include <sqlite3.h>

#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int sqlite3_caterva_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

#define MAX_STEPS 16          /* program steps per input */
#define MAX_ROWS 256          /* rows stepped per statement */
#define MAX_VM_OPS 60000      /* SQLite VM operations per input (progress handler) */
#define MAX_SMALL_BYTES (1 << 20)
#define NTAB 3
#define MAXCOL 8

typedef struct prog {
  const uint8_t *p, *end;
} prog;

typedef struct tabinfo {
  int ok;                 /* created */
  int ncol;
  char col[MAXCOL][32];
} tabinfo;

typedef struct fz {
  sqlite3 *db;
  prog in;
  int small;              /* the input's array is small enough for whole-array functions */
  int ndim;               /* its number of dimensions (or a guess) */
  int64_t vm_ops;
  tabinfo tab[NTAB];
} fz;

static char dir[256];

/* Speed (this target runs a few thousand SQL statements a second; what made it slow was the
 * setting, not the code under test):
 * - SQLite's page cache comes from a static pool, not from a malloc per page (under ASan each
 *   fresh 4 KiB allocation is filled and faulted in), and SQLite keeps no memory statistics
 *   (a global mutex per allocation). The extension's own memory (sqlite3_malloc,
 *   sqlite3_mprintf, malloc) still goes through ASan.
 * - ASan's quarantine of freed memory is 16 MiB instead of 256 MiB: a use after free within an
 *   input is still caught, and memory is reused instead of faulted in fresh at every input.
 *   ASAN_OPTIONS overrides it.
 * - The files live in /dev/shm when it exists (creating, renaming and unlinking a few dozen
 *   files per input on a disk file system cost more than the rest); FUZZ_SQL_DIR overrides. */
#define PCACHE_PAGES 1024
#define PCACHE_SZ (4096 + 512)
static sqlite3_int64 pcache_pool[PCACHE_PAGES * PCACHE_SZ / 8];

const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "quarantine_size_mb=16"; }

/* Durability is not what this target tests, and an fsync per commit on a busy disk made it
 * run a few inputs a second: this program's fsync (which the library's calls resolve to)
 * does nothing. */
int fsync(int fd);
int fsync(int fd) {
  (void)fd;
  return 0;
}

/* ---- reading the program ------------------------------------------------------------- */

static unsigned byte(prog *in) { return in->p < in->end ? *in->p++ : 0; }
static int more(const prog *in) { return in->p < in->end; }

static int64_t num64(prog *in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v = v << 8 | byte(in);
  return (int64_t)v;
}

/* A fuzzed string of at most 40 bytes, NUL-free; '/' becomes '_' when it may be a path. */
static void fstr(prog *in, char *out, int path) {
  unsigned n = byte(in) % 41, i;
  for (i = 0; i < n && more(in); i++) {
    char c = (char)byte(in);
    if (c == 0) c = ' ';
    if (path && c == '/') c = '_';
    out[i] = c;
  }
  out[i] = 0;
}

/* ---- running SQL --------------------------------------------------------------------- */

static int progress(void *arg) {
  fz *f = arg;
  f->vm_ops += 1000;
  return f->vm_ops > MAX_VM_OPS;
}

/* Prepare and step zSql (freed here), reading every column; errors are fine. */
static void run(fz *f, char *zSql) {
  sqlite3_stmt *st = NULL;
  if (zSql == NULL) return;
  if (f->vm_ops <= MAX_VM_OPS && sqlite3_prepare_v2(f->db, zSql, -1, &st, NULL) == SQLITE_OK &&
      st != NULL) {
    for (int r = 0; r < MAX_ROWS && sqlite3_step(st) == SQLITE_ROW; r++)
      for (int c = 0; c < sqlite3_column_count(st); c++) {
        (void)sqlite3_column_bytes(st, c);
        (void)sqlite3_column_text(st, c);
      }
  }
  sqlite3_finalize(st);
  sqlite3_free(zSql);
}

/* Whether a whole-array function may run on array a (an SQL expression naming a table or a
 * path): the input's array is small and so is a as it is now, its items and its chunks at most
 * MAX_SMALL_BYTES (a table created over a path with shape='2130237051617' holds 4 million
 * fill chunks in a file of a few hundred bytes, and caterva_stats_check serves its 260
 * million blocks: seconds, minutes in this build). An a that caterva_info cannot open is
 * given to the function anyway: its error is cheap and is what is fuzzed. */
static int whole(fz *f, const char *a) {
  sqlite3_stmt *st = NULL;
  char *q = sqlite3_mprintf("SELECT json_extract(i, '$.nbytes'), json_extract(i, '$.itemsize'), "
                            "json_extract(i, '$.chunkshape') FROM (SELECT caterva_info(%s) AS i)",
                            a);
  int ok = f->small;
  if (ok && q != NULL && sqlite3_prepare_v2(f->db, q, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER) {
    const char *cs = (const char *)sqlite3_column_text(st, 2);
    int64_t chunk = sqlite3_column_int64(st, 1);
    ok = sqlite3_column_int64(st, 0) <= MAX_SMALL_BYTES && cs != NULL && chunk > 0;
    while (ok && *cs != 0) { /* "[n0,n1,...]" */
      char *e;
      long long v = strtoll(cs, &e, 10);
      if (e == cs) {
        cs++;
        continue;
      }
      cs = e;
      ok = v > 0 && chunk <= MAX_SMALL_BYTES / v;
      chunk *= v;
    }
  }
  sqlite3_finalize(st);
  sqlite3_free(q);
  return ok;
}

/* ---- generated pieces ---------------------------------------------------------------- */

/* A literal: integers, reals (any bit pattern), text, blob, NULL. */
static char *literal(prog *in) {
  char s[48];
  switch (byte(in) % 8) {
    case 0: return sqlite3_mprintf("%d", (int)(signed char)byte(in));
    case 1: return sqlite3_mprintf("%lld", (long long)num64(in));
    case 2: return sqlite3_mprintf("%.17g", (int)(signed char)byte(in) / 4.0);
    case 3: {
      int64_t v = num64(in);
      double d;
      memcpy(&d, &v, sizeof d);
      if (d != d) return sqlite3_mprintf("(0.0/0.0)");
      return sqlite3_mprintf("%.17g", d);
    }
    case 4: fstr(in, s, 0); return sqlite3_mprintf("%Q", s);
    case 5: return sqlite3_mprintf("x'%02x%02x'", byte(in), byte(in));
    case 6: return sqlite3_mprintf("NULL");
    default: return sqlite3_mprintf("%d", (int)byte(in) % 16);
  }
}

static const char *column(fz *f, int t, prog *in) {
  unsigned k = byte(in);
  if (!f->tab[t].ok || f->tab[t].ncol == 0 || k % 9 == 8) return "rowid";
  return f->tab[t].col[k % (unsigned)f->tab[t].ncol];
}

/* One WHERE term on table t. */
static char *term(fz *f, int t, prog *in) {
  const char *c = column(f, t, in);
  static const char *const ops[] = {"=", "<", "<=", ">", ">=", "!=", "IS", "IS NOT"};
  char *a = NULL, *b = NULL, *z = NULL;
  unsigned op = byte(in) % 11;
  a = literal(in);
  if (op < 8) {
    z = sqlite3_mprintf("\"%w\" %s %s", c, ops[op], a);
  } else if (op == 8) {
    b = literal(in);
    z = sqlite3_mprintf("\"%w\" BETWEEN %s AND %s", c, a, b);
  } else if (op == 9) {
    b = literal(in);
    z = sqlite3_mprintf("\"%w\" IN (%s, %s, %d)", c, a, b, (int)byte(in) % 8);
  } else {
    z = sqlite3_mprintf("\"%w\" IS NULL OR \"%w\" > %s", c, c, a);
  }
  sqlite3_free(a);
  sqlite3_free(b);
  return z;
}

/* " WHERE t1 AND t2 ..." (or "") with 0 to 3 terms. */
static char *where(fz *f, int t, prog *in) {
  char *z = sqlite3_mprintf("");
  unsigned n = byte(in) % 4;
  for (unsigned i = 0; i < n && z != NULL; i++) {
    char *tm = term(f, t, in);
    char *z2 = sqlite3_mprintf("%s%s(%s)", z, i ? " AND " : " WHERE ", tm);
    sqlite3_free(tm);
    sqlite3_free(z);
    z = z2;
  }
  return z;
}

/* A box '[a,b,...]' of ndim small numbers, or a fuzzed string, or NULL. */
static char *box(fz *f, prog *in) {
  char s[48], *z;
  unsigned k = byte(in) % 8;
  if (k == 6) return sqlite3_mprintf("NULL");
  if (k == 7) {
    fstr(in, s, 0);
    return sqlite3_mprintf("%Q", s);
  }
  z = sqlite3_mprintf("'[");
  for (int i = 0; i < f->ndim + (k == 5) && z != NULL; i++) {
    char *z2 = sqlite3_mprintf("%s%s%d", z, i ? "," : "", (int)byte(in) % 12 - (k == 4));
    sqlite3_free(z);
    z = z2;
  }
  if (z != NULL) {
    char *z2 = sqlite3_mprintf("%s]'", z);
    sqlite3_free(z);
    z = z2;
  }
  return z;
}

/* The source argument of a function: a table, the file, or a fuzzed path. */
static char *source(prog *in) {
  char s[48];
  unsigned k = byte(in) % 6;
  if (k < 3) return sqlite3_mprintf("'t%u'", k);
  if (k == 3) return sqlite3_mprintf("'%q/a.b2nd'", dir);
  if (k == 4) return sqlite3_mprintf("'%q/n.b2nd'", dir);
  fstr(in, s, 1);
  return sqlite3_mprintf("'%q/%q'", dir, s);
}

/* ---- steps --------------------------------------------------------------------------- */

static void learn_columns(fz *f, int t) {
  sqlite3_stmt *st = NULL;
  char *z = sqlite3_mprintf("SELECT name FROM pragma_table_info('t%d')", t);
  tabinfo *ti = &f->tab[t];
  ti->ncol = 0;
  if (z != NULL && sqlite3_prepare_v2(f->db, z, -1, &st, NULL) == SQLITE_OK) {
    while (ti->ncol < MAXCOL && sqlite3_step(st) == SQLITE_ROW) {
      const char *n = (const char *)sqlite3_column_text(st, 0);
      snprintf(ti->col[ti->ncol++], sizeof ti->col[0], "%s", n ? n : "");
    }
  }
  sqlite3_finalize(st);
  sqlite3_free(z);
}

static const char *const opt_keys[] = {
    "dims", "value", "dtype", "cache_mb", "synchronous", "lock_reads", "shape", "chunks",
    "blocks", "codec", "clevel", "filters", "fill", "sparse", "coords", "path"};
static const char *const opt_vals[] = {
    "'a,b'", "'x'", "'float64'", "'int32'", "'|S4'", "'uint8'", "0", "1", "'off'", "'full'",
    "'4,3'", "'2,2'", "'1,1'", "'zstd'", "'lz4'", "'blosclz'", "'5'", "'shuffle'",
    "'bitshuffle,delta'", "'nan'", "'7'", "'{\"a\":[1,2,3,4]}'", "'<f4'", "'bool'"};

/* Options added after the first table (remote, range=, max_dead=, gc_grace=, block_checks=):
 * key bytes from 224 pick these, so the older corpus keeps its meaning below 224. */
static const char *const opt_keys2[] = {
    "max_dead", "range", "block_checks", "gc_grace", "endpoint", "region", "path_style",
    "http_connections", "remote_cache_mb", "http_retries", "http_timeout_ms", "remote_fetch",
    "lock_reads", "value", "dims", "coords"};
static const char *const opt_vals2[] = {
    "0", "50", "100", "101", "-1", "'d0:1:3'", "'0:0:2'", "'d1:2:100'", "'x:1:2'", "'0:5:1'",
    "'1:0:1000000'", "'on'", "'off'", "'maybe'", "86400", "'http://127.0.0.1:9'", "'us-east-1'",
    "'1'", "'9999999999999999999'", "'x,y'", "'v'", "'d0:2023-01-01:1 day'",
    "'d0:2000-01-01T06:00:12 hour:noleap'", "'d0:-89.5:1.0:degrees_north,d1:0:2'",
    "'d0:1999-12-30:1 week:360_day'"};

static void step_create(fz *f, prog *in) {
  int t = (int)(byte(in) % NTAB);
  unsigned src = byte(in) % 4, nopt = byte(in) % 5;
  char s[48], *z;
  run(f, sqlite3_mprintf("DROP TABLE IF EXISTS t%d", t));
  if (src == 0) z = sqlite3_mprintf("CREATE VIRTUAL TABLE t%d USING caterva('%q/a.b2nd'", t, dir);
  else if (src == 1) z = sqlite3_mprintf("CREATE VIRTUAL TABLE t%d USING caterva('%q/n.b2nd', "
                                         "shape='%u,%u'", t, dir, byte(in) % 9, byte(in) % 9 + 1);
  else if (src == 2) z = sqlite3_mprintf("CREATE VIRTUAL TABLE t%d USING caterva(path=\"%w/a.b2nd\"",
                                         t, dir);
  else {
    fstr(in, s, 1);
    z = sqlite3_mprintf("CREATE VIRTUAL TABLE t%d USING caterva('%q/%q'", t, dir, s);
  }
  for (unsigned i = 0; i < nopt && z != NULL; i++) {
    unsigned k = byte(in), v = byte(in);
    const char *key = k >= 224 ? opt_keys2[k % (sizeof opt_keys2 / sizeof *opt_keys2)]
                               : opt_keys[k % (sizeof opt_keys / sizeof *opt_keys)];
    char *z2;
    if (v < 200 && k >= 224) {
      z2 = sqlite3_mprintf("%s, %s=%s", z, key,
                           opt_vals2[v % (sizeof opt_vals2 / sizeof *opt_vals2)]);
    } else if (v < 200) {
      z2 = sqlite3_mprintf("%s, %s=%s", z, key, opt_vals[v % (sizeof opt_vals / sizeof *opt_vals)]);
    } else {
      fstr(in, s, 1);
      z2 = v < 250 ? sqlite3_mprintf("%s, %s=%Q", z, key, s) : sqlite3_mprintf("%s, %Q", z, s);
    }
    sqlite3_free(z);
    z = z2;
  }
  if (z != NULL) {
    char *z2 = sqlite3_mprintf("%s)", z);
    sqlite3_free(z);
    z = z2;
  }
  f->tab[t].ok = 0;
  if (z != NULL && sqlite3_exec(f->db, z, NULL, NULL, NULL) == SQLITE_OK) {
    f->tab[t].ok = 1;
    learn_columns(f, t);
  }
  sqlite3_free(z);
}

static void step_select(fz *f, prog *in) {
  int t = (int)(byte(in) % NTAB);
  unsigned shape = byte(in) % 6, lim = byte(in) % 4;
  const char *c = column(f, t, in);
  char *w = where(f, t, in), *order = NULL, *z;
  if (shape == 0) order = sqlite3_mprintf("");
  else order = sqlite3_mprintf(" ORDER BY \"%w\"%s", column(f, t, in), shape & 1 ? " DESC" : "");
  if (shape == 5)
    z = sqlite3_mprintf("SELECT count(*), sum(\"%w\"), min(\"%w\"), max(\"%w\") FROM t%d%s", c, c,
                        c, t, w ? w : "");
  else
    z = sqlite3_mprintf("SELECT *, rowid FROM t%d%s%s", t, w ? w : "", order ? order : "");
  if (z != NULL && lim) {
    char *z2 = lim == 1 ? sqlite3_mprintf("%s LIMIT %d", z, (int)byte(in) % 40)
                        : sqlite3_mprintf("%s LIMIT %d OFFSET %d", z, (int)byte(in) % 40,
                                          (int)(signed char)byte(in));
    sqlite3_free(z);
    z = z2;
  }
  sqlite3_free(w);
  sqlite3_free(order);
  run(f, z);
}

static void step_function(fz *f, prog *in) {
  char *a = source(in), *b = NULL, *c = NULL, s[48], s2[48];
  unsigned which = byte(in) % 12;
  switch (which) {
    case 0: run(f, sqlite3_mprintf("SELECT caterva_info(%s)", a)); break;
    case 1:
      if (whole(f, a)) run(f, sqlite3_mprintf("SELECT length(caterva_slice(%s))", a));
      break;
    case 2:
      b = box(f, in);
      c = box(f, in);
      run(f, sqlite3_mprintf("SELECT hex(caterva_slice(%s, %s, %s))", a, b, c));
      break;
    case 3:
      fstr(in, s, 0);
      b = literal(in);
      run(f, sqlite3_mprintf("SELECT caterva_nearest(%s, %Q, %s)", a,
                             byte(in) & 1 ? s : f->tab[0].ok ? f->tab[0].col[0] : "d0", b));
      break;
    case 4:
      fstr(in, s, 0);
      fstr(in, s2, 0);
      run(f, sqlite3_mprintf("SELECT caterva_set_coords(%s, %Q, %Q%s)", a,
                             byte(in) & 1 ? s : "d0", s2, byte(in) & 1 ? ", 'days since 2000-01-01'" : ""));
      break;
    case 5:
      if (whole(f, a)) run(f, sqlite3_mprintf("SELECT caterva_build_stats(%s)", a));
      break;
    case 6:
      if (whole(f, a)) run(f, sqlite3_mprintf("SELECT caterva_stats_check(%s)", a));
      break;
    case 7: {
      static const char *const ops[] = {"sum", "mean", "min", "max", "count", "std", "x",
                                        "stats"};
      static const char *const groups[] = {":month", ":year", ":season", ":dayofyear",
                                           ":7 days", ":1 month", ":2 years", ":0 days"};
      int g = byte(in);
      fstr(in, s, 0);
      if (whole(f, a))
        run(f, sqlite3_mprintf("SELECT *, count, sum, mean, min, max, std FROM "
                               "caterva_reduce(%s, '%s', '%q%s')", a, ops[byte(in) % 8], s,
                               g & 8 ? groups[g & 7] : ""));
      break;
    }
    case 8:
      b = box(f, in);
      c = box(f, in);
      if (whole(f, a))
        run(f, sqlite3_mprintf("SELECT caterva_export(%s, '%q/out.npy', %s, %s)", a, dir, b, c));
      break;
    case 9:
      b = box(f, in);
      c = box(f, in);
      fstr(in, s, 0);
      if (whole(f, a))
        run(f, sqlite3_mprintf("SELECT length(caterva_png(%s, %s, %s, %Q))", a, b, c, s));
      break;
    case 10: {
      char *npy = sqlite3_mprintf("'%q/out.npy'", dir);
      fstr(in, s, 0);
      if (whole(f, a))
        run(f, sqlite3_mprintf("SELECT caterva_import(%s, '%q/imp%u.b2nd', NULL, %Q)",
                               byte(in) & 1 && npy ? npy : a, dir, byte(in) % 2, s));
      sqlite3_free(npy);
      break;
    }
    default: run(f, sqlite3_mprintf("SELECT caterva_blocks_read(), caterva_version()")); break;
  }
  sqlite3_free(a);
  sqlite3_free(b);
  sqlite3_free(c);
}

static void step_write(fz *f, prog *in) {
  int t = (int)(byte(in) % NTAB);
  unsigned n = byte(in) % 4 + 1, end = byte(in) % 3;
  run(f, sqlite3_mprintf("BEGIN"));
  for (unsigned i = 0; i < n; i++) {
    unsigned kind = byte(in) % 3;
    const char *c = column(f, t, in);
    char *v = literal(in), *w = where(f, t, in);
    if (kind == 0 && f->tab[t].ok && f->tab[t].ncol > 0) {
      /* every column: the dimensions then the value */
      char *cols = sqlite3_mprintf(""), *vals = sqlite3_mprintf("");
      for (int k = 0; k < f->tab[t].ncol && cols && vals; k++) {
        char *l = literal(in);
        char *c2 = sqlite3_mprintf("%s%s\"%w\"", cols, k ? "," : "", f->tab[t].col[k]);
        char *v2 = sqlite3_mprintf("%s%s%s", vals, k ? "," : "", l);
        sqlite3_free(l);
        sqlite3_free(cols);
        sqlite3_free(vals);
        cols = c2;
        vals = v2;
      }
      run(f, sqlite3_mprintf("INSERT INTO t%d(%s) VALUES(%s)", t, cols, vals));
      sqlite3_free(cols);
      sqlite3_free(vals);
    } else if (kind == 1) {
      run(f, sqlite3_mprintf("UPDATE t%d SET \"%w\" = %s%s", t, c, v, w ? w : ""));
    } else {
      run(f, sqlite3_mprintf("DELETE FROM t%d%s", t, w ? w : ""));
    }
    sqlite3_free(v);
    sqlite3_free(w);
  }
  run(f, sqlite3_mprintf(end == 0 ? "ROLLBACK" : "COMMIT"));
  if (!sqlite3_get_autocommit(f->db)) run(f, sqlite3_mprintf("ROLLBACK"));
}

/* ---- steps added after the first four (step bytes from 232) ------------------------------ */

/* A list of statistics: one of them, a list, 'stats', or a fuzzed string. */
static char *op_list(prog *in) {
  static const char *const ops[] = {"count", "sum", "mean", "avg", "min", "max", "std",
                                    "stats", "median", ""};
  char s[48];
  unsigned n = byte(in) % 5;
  char *z = sqlite3_mprintf("");
  if (n == 4) {
    fstr(in, s, 0);
    sqlite3_free(z);
    return sqlite3_mprintf("%Q", s);
  }
  for (unsigned i = 0; i <= n && z != NULL; i++) {
    char *z2 = sqlite3_mprintf("%s%s%s", z, i ? "," : "", ops[byte(in) % 10]);
    sqlite3_free(z);
    z = z2;
  }
  if (z != NULL) {
    char *z2 = sqlite3_mprintf("'%q'", z);
    sqlite3_free(z);
    z = z2;
  }
  return z;
}

/* Axes: dimension names or numbers, some grouped by calendar, or a fuzzed string. */
static char *axes(fz *f, prog *in) {
  static const char *const groups[] = {"", "", ":month", ":year", ":season", ":dayofyear",
                                       ":7 days", ":1 month", ":3 months", ":10 years",
                                       ":1 day", ":0 days", ":100001 days", ":week", ":2 year",
                                       ":"};
  char s[48];
  unsigned n = byte(in) % 4;
  char *z = sqlite3_mprintf("");
  if (n == 3 && byte(in) & 1) {
    fstr(in, s, 0);
    sqlite3_free(z);
    return sqlite3_mprintf("%Q", s);
  }
  for (unsigned i = 0; i < n && z != NULL; i++) {
    unsigned k = byte(in);
    char *z2;
    if (k & 128 && f->tab[0].ok && f->tab[0].ncol > 0)
      z2 = sqlite3_mprintf("%s%s%s%s", z, i ? "," : "", f->tab[0].col[k % (unsigned)f->tab[0].ncol],
                           groups[byte(in) % 16]);
    else if (k & 64)
      z2 = sqlite3_mprintf("%s%s%u%s", z, i ? "," : "", k % 5, groups[byte(in) % 16]);
    else
      z2 = sqlite3_mprintf("%s%sd%u%s", z, i ? "," : "", k % 4, groups[byte(in) % 16]);
    sqlite3_free(z);
    z = z2;
  }
  if (z != NULL) {
    char *z2 = sqlite3_mprintf("'%q'", z);
    sqlite3_free(z);
    z = z2;
  }
  return z;
}

/* A named reduction (CREATE VIRTUAL TABLE ... USING caterva_reduce), queried, written to
 * (read-only), dropped; or the function with lists of statistics and calendar groups. */
static void step_reduce(fz *f, prog *in) {
  char *a = source(in), *ops = op_list(in), *ax = axes(f, in), *w = NULL;
  unsigned how = byte(in) % 4;
  if (!whole(f, a)) goto out;
  if (how == 0) {
    static const char *const cols[] = {"d0", "d1", "d0_index", "d1_index", "value", "n"};
    const char *c = cols[byte(in) % 6];
    char *l = literal(in);
    run(f, sqlite3_mprintf("SELECT *, count, sum, mean, min, max, std FROM caterva_reduce(%s, "
                           "%s, %s) WHERE %s %s %s", a, ops, ax, c, byte(in) & 1 ? ">=" : "=",
                           l));
    sqlite3_free(l);
    goto out;
  }
  run(f, sqlite3_mprintf("DROP TABLE IF EXISTS r"));
  if (how == 1)
    run(f, sqlite3_mprintf("CREATE VIRTUAL TABLE r USING caterva_reduce(%s, %s, %s)", a, ops, ax));
  else if (how == 2)
    run(f, sqlite3_mprintf("CREATE VIRTUAL TABLE r USING caterva_reduce(%s, %s)", a, ops));
  else
    run(f, sqlite3_mprintf("CREATE VIRTUAL TABLE r USING caterva_reduce(%s)", a));
  {
    /* columns of r, then a query with bounds on one of them */
    sqlite3_stmt *st = NULL;
    char col[32] = "n";
    unsigned k = byte(in), i = 0;
    if (sqlite3_prepare_v2(f->db, "SELECT name FROM pragma_table_xinfo('r')", -1, &st, NULL) ==
        SQLITE_OK)
      while (sqlite3_step(st) == SQLITE_ROW) {
        const char *nm = (const char *)sqlite3_column_text(st, 0);
        if (nm != NULL && i++ % 8 == k % 8) snprintf(col, sizeof col, "%s", nm);
      }
    sqlite3_finalize(st);
    char *l = literal(in), *l2 = literal(in);
    switch (byte(in) % 4) {
      case 0: w = sqlite3_mprintf(" WHERE \"%w\" = %s", col, l); break;
      case 1: w = sqlite3_mprintf(" WHERE \"%w\" BETWEEN %s AND %s", col, l, l2); break;
      case 2: w = sqlite3_mprintf(" WHERE \"%w\" IN (%s, %s, 7)", col, l, l2); break;
      default: w = sqlite3_mprintf(" WHERE +\"%w\" > %s", col, l); break;
    }
    sqlite3_free(l);
    sqlite3_free(l2);
    run(f, sqlite3_mprintf("SELECT *, \"%w\" FROM r%s LIMIT 64", col, w ? w : ""));
    if (byte(in) % 4 == 0) run(f, sqlite3_mprintf("DELETE FROM r"));
  }
  run(f, sqlite3_mprintf("DROP TABLE IF EXISTS r"));
out:
  sqlite3_free(a);
  sqlite3_free(ops);
  sqlite3_free(ax);
  sqlite3_free(w);
}

/* caterva_copy to a contiguous file or a sparse directory, maybe opened as a table after. */
static void step_copy(fz *f, prog *in) {
  char *a = source(in);
  unsigned k = byte(in), sp = byte(in) % 3;
  if (whole(f, a)) {
    if (sp == 2)
      run(f, sqlite3_mprintf("SELECT caterva_copy(%s, '%q/cp%u.b2nd')", a, dir, k % 2));
    else
      run(f, sqlite3_mprintf("SELECT caterva_copy(%s, '%q/cp%u.b2nd', %u)", a, dir, k % 2, sp));
  }
  if (k & 4) {
    int t = (int)(byte(in) % NTAB);
    run(f, sqlite3_mprintf("DROP TABLE IF EXISTS t%d", t));
    f->tab[t].ok = 0;
    char *z = sqlite3_mprintf("CREATE VIRTUAL TABLE t%d USING caterva('%q/cp%u.b2nd')", t, dir,
                              k % 2);
    if (z != NULL && sqlite3_exec(f->db, z, NULL, NULL, NULL) == SQLITE_OK) {
      f->tab[t].ok = 1;
      learn_columns(f, t);
    }
    sqlite3_free(z);
  }
  sqlite3_free(a);
}

/* A table over several arrays (the file with a new, copied, imported array, or itself). */
static void step_vars(fz *f, prog *in) {
  static const char *const others[] = {"n.b2nd", "cp0.b2nd", "cp1.b2nd", "imp0.b2nd", "a.b2nd"};
  static const char *const extra[] = {"", ", value='x,y'", ", value='x'", ", dims='p,q'",
                                      ", range='0:1:3'", ", value='a,b,c'"};
  int t = (int)(byte(in) % NTAB);
  unsigned n = byte(in) % 2 + 1;
  char *z = sqlite3_mprintf("CREATE VIRTUAL TABLE t%d USING caterva('%q/a.b2nd'", t, dir);
  run(f, sqlite3_mprintf("DROP TABLE IF EXISTS t%d", t));
  f->tab[t].ok = 0;
  for (unsigned i = 0; i < n && z != NULL; i++) {
    char *z2 = sqlite3_mprintf("%s, '%q/%s'", z, dir, others[byte(in) % 5]);
    sqlite3_free(z);
    z = z2;
  }
  if (z != NULL) {
    char *z2 = sqlite3_mprintf("%s%s)", z, extra[byte(in) % 6]);
    sqlite3_free(z);
    z = z2;
  }
  if (z != NULL && sqlite3_exec(f->db, z, NULL, NULL, NULL) == SQLITE_OK) {
    f->tab[t].ok = 1;
    learn_columns(f, t);
  }
  sqlite3_free(z);
}

/* Writes inside savepoints: SAVEPOINT, writes, ROLLBACK TO or RELEASE, nested, in a
 * transaction that commits or rolls back. */
static void step_savepoints(fz *f, prog *in) {
  int t = (int)(byte(in) % NTAB);
  unsigned n = byte(in) % 6 + 1;
  int depth = 0;
  if (byte(in) & 1) run(f, sqlite3_mprintf("BEGIN"));
  for (unsigned i = 0; i < n; i++) {
    unsigned kind = byte(in) % 6;
    if (kind == 0 || depth == 0) {
      run(f, sqlite3_mprintf("SAVEPOINT s%d", depth++));
    } else if (kind == 1) {
      run(f, sqlite3_mprintf("ROLLBACK TO s%d", (int)(byte(in) % (unsigned)depth)));
    } else if (kind == 2) {
      run(f, sqlite3_mprintf("RELEASE s%d", --depth));
    } else {
      const char *c = column(f, t, in);
      char *v = literal(in), *w = where(f, t, in);
      if (kind == 3)
        run(f, sqlite3_mprintf("UPDATE t%d SET \"%w\" = %s%s", t, c, v, w ? w : ""));
      else if (kind == 4)
        run(f, sqlite3_mprintf("DELETE FROM t%d%s", t, w ? w : ""));
      else
        run(f, sqlite3_mprintf("INSERT INTO t%d SELECT * FROM t%d%s LIMIT 4", t,
                               (t + 1) % NTAB, w ? w : ""));
      sqlite3_free(v);
      sqlite3_free(w);
    }
  }
  run(f, sqlite3_mprintf(byte(in) & 1 ? "ROLLBACK" : "COMMIT"));
  if (!sqlite3_get_autocommit(f->db)) run(f, sqlite3_mprintf("ROLLBACK"));
}

/* Coordinates with units and calendars, then what reads them (nearest, groups, labels). */
static void step_coords(fz *f, prog *in) {
  static const char *const json[] = {"[0,1,2,3,4,5,6,7]", "[\"2023-01-01\",\"2023-02-01\"]",
                                     "[10,5,2.5,-1]", "[]", "[\"1582-10-04\",\"1582-10-15\"]",
                                     "[1,1,2]", "null", "[\"2023-02-30\"]"};
  static const char *const units[] = {"days since 2000-01-01", "hours since 1970-01-01T00:00",
                                      "degrees_north", "months since 2000-01-01",
                                      "seconds since 1582-10-14", ""};
  static const char *const cal[] = {"standard", "noleap", "360_day", "all_leap",
                                    "proleptic_gregorian", "julian", "gregorian", "mars"};
  char *a = source(in), *l = NULL;
  unsigned j = byte(in) % 8, u = byte(in) % 7, c = byte(in) % 9;
  const char *dim = byte(in) & 1 ? "d0" : "d1";
  if (u == 6)
    run(f, sqlite3_mprintf("SELECT caterva_set_coords(%s, '%s', '%q')", a, dim, json[j]));
  else if (c == 8)
    run(f, sqlite3_mprintf("SELECT caterva_set_coords(%s, '%s', '%q', '%q')", a, dim, json[j],
                           units[u]));
  else
    run(f, sqlite3_mprintf("SELECT caterva_set_coords(%s, '%s', '%q', '%q', '%q')", a, dim,
                           json[j], units[u], cal[c]));
  l = literal(in);
  run(f, sqlite3_mprintf("SELECT caterva_nearest(%s, '%s', %s), caterva_info(%s)", a, dim, l, a));
  sqlite3_free(l);
  sqlite3_free(a);
}

static void step_extra(fz *f, prog *in) {
  switch (byte(in) % 6) {
    case 0: step_reduce(f, in); break;
    case 1: step_copy(f, in); break;
    case 2: step_vars(f, in); break;
    case 3: step_savepoints(f, in); break;
    case 4: step_coords(f, in); break;
    default:
      run(f, sqlite3_mprintf("SELECT caterva_blocks_read()"));
      if (f->small) { /* (the byte is read only then, as before whole()) */
        char t[8];
        snprintf(t, sizeof t, "'t%u'", byte(in) % NTAB);
        if (whole(f, t)) run(f, sqlite3_mprintf("SELECT caterva_build_stats(%s)", t));
      }
      break;
  }
}

/* ---- per input ----------------------------------------------------------------------- */

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb;
  (void)flag;
  if (ftw->level > 0) remove(path);
  return 0;
}

static void clean_dir(void) { nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

/* Whether the file's array is small (whole-array functions are then cheap), and its rank. */
static void inspect(fz *f, const uint8_t *p, size_t n) {
  static caterva_ctx *ctx;
  caterva_schunk *sc = NULL;
  caterva_array *a = NULL;
  f->small = 1;
  f->ndim = 2;
  if (ctx == NULL && caterva_ctx_new(1, &ctx) < 0) return;
  if (caterva_schunk_open_buffer(ctx, p, n, &sc) < 0) return;
  if (caterva_array_from_schunk(ctx, sc, &a) < 0) return;
  int64_t bytes = caterva_array_nitems(a) * caterva_array_itemsize(a);
  f->small = bytes >= 0 && bytes <= MAX_SMALL_BYTES &&
             caterva_schunk_chunksize(caterva_array_schunk(a)) <= MAX_SMALL_BYTES;
  f->ndim = caterva_array_ndim(a);
  caterva_array_free(a);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  const char *tmp = getenv("FUZZ_SQL_DIR");
  if (tmp == NULL || *tmp == 0) tmp = access("/dev/shm", W_OK | X_OK) == 0 ? "/dev/shm" : NULL;
  if (tmp == NULL || *tmp == 0) tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/fuzz_sql.%ld", tmp && *tmp ? tmp : "/tmp", (long)getpid());
  if (mkdir(dir, 0700) != 0) abort();
  setenv("CATERVA_THREADS", "1", 1); /* no worker threads started and joined per input */
  /* before sqlite3_auto_extension, which initializes SQLite */
  int hdr = 0;
  if (sqlite3_config(SQLITE_CONFIG_PCACHE_HDRSZ, &hdr) == SQLITE_OK && hdr > 0 &&
      4096 + hdr <= PCACHE_SZ)
    sqlite3_config(SQLITE_CONFIG_PAGECACHE, pcache_pool, PCACHE_SZ, PCACHE_PAGES);
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  sqlite3_auto_extension((void (*)(void))sqlite3_caterva_init);
  return 0;
}

static void cleanup_at_exit(void) {
  clean_dir();
  rmdir(dir);
}

/* FUZZ_SQL_TRACE set: each statement's SQL on stderr as it starts. */
static int trace_stmt(unsigned type, void *ctx, void *p, void *x) {
  (void)type;
  (void)ctx;
  (void)x;
  fprintf(stderr, "fuzz_sql: %s\n", sqlite3_sql((sqlite3_stmt *)p));
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int inited;
  fz f;
  uint32_t n;
  if (!inited) {
    if (dir[0] == 0) LLVMFuzzerInitialize(NULL, NULL);
    atexit(cleanup_at_exit);
    inited = 1;
  }
  memset(&f, 0, sizeof f);
  if (size < 4) return 0;
  n = (uint32_t)data[0] | (uint32_t)data[1] << 8 | (uint32_t)data[2] << 16 | (uint32_t)data[3] << 24;
  if (n > size - 4) n = (uint32_t)(size - 4);
  clean_dir();
  if (n > 0) {
    char path[300];
    FILE *fp;
    snprintf(path, sizeof path, "%s/a.b2nd", dir);
    fp = fopen(path, "wb");
    if (fp == NULL) return 0;
    fwrite(data + 4, 1, n, fp);
    fclose(fp);
  }
  inspect(&f, data + 4, n);
  f.in.p = data + 4 + n;
  f.in.end = data + size;
  if (sqlite3_open(":memory:", &f.db) != SQLITE_OK) {
    sqlite3_close(f.db);
    return 0;
  }
  sqlite3_limit(f.db, SQLITE_LIMIT_LENGTH, 1 << 22);
  sqlite3_progress_handler(f.db, 1000, progress, &f);
  if (getenv("FUZZ_SQL_TRACE") != NULL) /* the statements of an input, to read a finding */
    sqlite3_trace_v2(f.db, SQLITE_TRACE_STMT, trace_stmt, NULL);
  for (int s = 0; s < MAX_STEPS && more(&f.in); s++) {
    unsigned b = byte(&f.in);
    if (b >= 232) { /* the steps added later; below 232 the first four, as before */
      step_extra(&f, &f.in);
      continue;
    }
    switch (b % 4) {
      case 0: step_create(&f, &f.in); break;
      case 1: step_select(&f, &f.in); break;
      case 2: step_function(&f, &f.in); break;
      default: step_write(&f, &f.in); break;
    }
  }
  sqlite3_close(f.db);
  return 0;
}

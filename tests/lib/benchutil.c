/*
 * benchutil.c -- see benchutil.h.
 */
#include "benchutil.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

const char *bench_prog = "bench";

static double ms_of(clockid_t clk) {
  struct timespec ts;
  clock_gettime(clk, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

double bench_now_ms(void) { return ms_of(CLOCK_MONOTONIC); }

double bench_cpu_ms(void) { return ms_of(CLOCK_PROCESS_CPUTIME_ID); }

void bench_die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", bench_prog);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
  exit(1);
}

void bench_exec(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) bench_die("%s: %s", sql, err);
}

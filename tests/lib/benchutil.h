/*
 * benchutil.h -- what the SQL benchmarks share (bench_sql, bench_stats, bench_bcolz,
 * bench_write): clocks, a fatal error naming the program, statements run or fatal.
 */
#ifndef CATERVA_BENCHUTIL_H
#define CATERVA_BENCHUTIL_H

#include <sqlite3.h>

/* The program's name in messages; each main sets it first. */
extern const char *bench_prog;

/* Wall time (CLOCK_MONOTONIC) and CPU time of the process, all threads, in ms. */
double bench_now_ms(void);
double bench_cpu_ms(void);

/* Print "<bench_prog>: <message>" on stderr and exit with status 1. */
void bench_die(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2), noreturn))
#endif
    ;

/* sqlite3_exec(sql), or bench_die with SQLite's message. */
void bench_exec(sqlite3 *db, const char *sql);

#endif

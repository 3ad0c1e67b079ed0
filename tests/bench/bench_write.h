/* bench_write.h -- what the parts of bench_write share: the benchmark's state, timings and
 * checks (bench_write.c), and the sections kept in files of their own: the commits
 * (bench_write_commit.c), the slab UPDATE and the growth with a value fill
 * (bench_write_grow.c). The sections are described in bench_write.c. */
#ifndef BENCH_WRITE_H
#define BENCH_WRITE_H

#define _GNU_SOURCE /* syncfs */
#include <sqlite3.h>

#include "benchutil.h"
#include "bench_write_vtabs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NLAT 180
#define NLON 360
#define MAXRUNS 101

typedef struct {
  double med, min, max;  /* wall time */
  double cpu;            /* median CPU time */
} Stat;

/* One timed statement: wall and process CPU time, ms. */
typedef struct {
  double wall, cpu;
} Timing;

typedef struct {
  sqlite3 *dbc, *dbp;      /* caterva connection, plain table connection */
  char dir[2048], arr[2200], arr0[2200], arrn[2200], arrt[2200], arrs[2200], plain[2200];
  long long size_c0, size_cn;  /* the files of the clevel=0 and the noisy loads */
  int ntime, runs, commits, chunk_commits, cell_rounds, trounds;
  int max_dead;            /* -D: max_dead= of the commit tables t and ts (-1: the default) */
  long long grow, grow_sparse;  /* new chunks of the fill growths (-g; -G: sparse, fill 3) */
  long long ncells;
  double sum_c, sum_p, sum_s; /* expected sum(value) of t, p and section 3's sparse copy */
} Bench;

/* A failed check: reported, and the exit status becomes 1. */
void bw_check(int ok, const char *fmt, ...);
/* The first two columns of the first row of sql, as doubles. */
void bw_query2(sqlite3 *db, const char *sql, double *a, double *b);
/* The median of the n values at t (sorts them). */
double bw_median(double *t, int n);
/* Median, min and max of n wall times, median of the n CPU times (both arrays sorted). */
Stat bw_stat_of(double *wall, double *cpu, int n);
/* One statement, timed. */
Timing bw_timed_sql(sqlite3 *db, const char *sql);
/* ", max_dead=N" when -D was given, else "" (in buf, cap bytes). */
const char *bw_max_dead_opt(const Bench *b, char *buf, size_t cap);
/* The caterva table t over b->arr, opened again with the synchronous= level sync. */
void bw_open_caterva(Bench *b, const char *sync);
/* Write back what earlier steps left dirty, then let the disk settle. */
void bw_flush_dirty(const Bench *b);
/* The median time of runs of sql (a format taking the run number) on a fresh bench_usink. */
Stat bw_usink_runs(sqlite3 *db, const char *create, const char *sql_fmt, int first, int runs,
                   long long cells);

/* 3. Commits (bench_write_commit.c). */
void bench_commit(Bench *b);
/* 5a. The loads of the 200^3 cube against bench_sink (bench_write_grow.c). */
void bench_cube_load(Bench *b);
void bench_cube_profile(Bench *b, const char *codec);
/* 5. The slab UPDATE of the 200^3 cube (bench_write_grow.c). */
void bench_slab(Bench *b);
void bench_slab_profile(Bench *b, const char *codec);
/* 6. Growth with a value fill (bench_write_grow.c). */
void bench_fill_growth(Bench *b);

#endif

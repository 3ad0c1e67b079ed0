/* bench_write_vtabs.h -- the virtual tables of bench_write (bench_write_vtabs.c). */
#ifndef BENCH_WRITE_VTABS_H
#define BENCH_WRITE_VTABS_H

#include <sqlite3.h>

/* bench_grid(n0, n1, n2[, ord]): (time, lat, lon) over n0 x n1 x n2, C order or (ord = 1)
 * time fastest; eponymous. */
extern sqlite3_module bench_grid_module;
/* bench_sink: an xUpdate that reads its arguments and keeps nothing. */
extern sqlite3_module bench_sink_module;
/* bench_usink(d0, d1, d2, n0, n1, n2): a counting grid with pushdown of equalities, whose
 * xUpdate reads its arguments and keeps nothing. */
extern sqlite3_module bench_usink_module;

#endif

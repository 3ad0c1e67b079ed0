/*
 * tap.h -- a minimal TAP producer for the test programs (automake's tap-driver.sh reads it).
 * Usage: tap_ok(cond, "name %d", i); ... return tap_done();
 * Plans are printed at the end ("1..N"), so tests need not count in advance.
 * A test program of several sources defines TAP_SHARED before including this in each of them,
 * and TAP_MAIN as well in the one that holds main(): they then count in one pair of counters.
 */
#ifndef CAT_TAP_H
#define CAT_TAP_H

#include <stdarg.h>
#include <stdio.h>

#ifdef TAP_SHARED
extern int tap_n_, tap_failed_;
#ifdef TAP_MAIN
int tap_n_ = 0, tap_failed_ = 0;
#endif
#else
static int tap_n_ = 0, tap_failed_ = 0;
#endif

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static inline int tap_ok(int cond, const char *fmt, ...) {
  va_list ap;
  tap_n_++;
  if (!cond) tap_failed_++;
  printf("%sok %d - ", cond ? "" : "not ", tap_n_);
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
  fflush(stdout);
  return cond;
}

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static inline void tap_diag(const char *fmt, ...) {
  va_list ap;
  printf("# ");
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  printf("\n");
}

/* Skip the whole program with a reason (e.g. reference data absent). */
static inline int tap_skip_all(const char *why) {
  printf("1..0 # SKIP %s\n", why);
  return 0;
}

static inline int tap_done(void) {
  printf("1..%d\n", tap_n_);
  if (tap_failed_) tap_diag("%d of %d failed", tap_failed_, tap_n_);
  return tap_failed_ ? 1 : 0;
}

#endif /* CAT_TAP_H */

/*
 * testrng.h -- the C tests' pseudo-random numbers: Marsaglia's xorshift64 (shifts 13, 7,
 * 17). Each test keeps its own state with a fixed seed, so every run draws the same
 * sequence and a failure reproduces.
 */
#ifndef CATERVA_TESTRNG_H
#define CATERVA_TESTRNG_H

#include <stdint.h>

/* Advance *state (never 0) and return the new value. */
static inline uint64_t test_rng_next(uint64_t *state) {
  uint64_t x = *state;
  x ^= x << 13;
  x ^= x >> 7;
  x ^= x << 17;
  *state = x;
  return x;
}

#endif

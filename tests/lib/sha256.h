/*
 * sha256.h -- SHA-256 (FIPS 180-4) for the tests: checksums of raw files in manifests.
 */
#ifndef CAT_SHA256_H
#define CAT_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct cat_sha256 {
  uint32_t h[8];      /* intermediate hash value */
  uint64_t nbits;     /* message length so far, in bits */
  uint8_t block[64];  /* pending input */
  size_t used;        /* bytes in block */
} cat_sha256;

void cat_sha256_init(cat_sha256 *s);
void cat_sha256_update(cat_sha256 *s, const void *data, size_t len);
/* Pad, finish and write the 32-byte digest. s must be re-initialised before reuse. */
void cat_sha256_final(cat_sha256 *s, uint8_t digest[32]);
/* One-shot: the digest of data as 64 lowercase hex digits and a NUL. */
void cat_sha256_hex(const void *data, size_t len, char hex[65]);

#endif

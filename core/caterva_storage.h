/*
 * caterva_storage.h -- where arrays live: files on the local disk, or objects on HTTP(S)
 * servers and in S3 (part of the public interface; include caterva.h, which includes this
 * file).
 *
 * Every function that takes a path takes a URL too: `http://host/dir/a.b2nd`,
 * `https://...`, or `s3://bucket/key`. A contiguous frame is one object; a sparse frame is a
 * "directory" prefix holding `chunks.b2frame` and one object per chunk, as on disk. Sparse
 * frames in S3 open for writing (CATERVA_OPEN_WRITE): a transaction's chunks are uploaded
 * under new numbers at its commit, then `chunks.b2frame` is replaced with `If-Match: <the
 * ETag it started from>`; another writer's commit in between gives CATERVA_E_BUSY, with
 * nothing of the transaction visible (docs/guarantees.md). Contiguous frames in S3 and
 * everything under http(s):// are read-only. Reads fetch byte ranges: opening a contiguous frame costs at most
 * two sequential requests (its header, then its index and trailer); a read of a box fetches
 * the touched chunks' headers and block offsets, then only the blocks it needs (whole chunks
 * when most of their blocks are needed or they are small), each wave concurrently.
 *
 * S3: requests are signed with AWS Signature Version 4 when AWS_ACCESS_KEY_ID and
 * AWS_SECRET_ACCESS_KEY are set (AWS_SESSION_TOKEN too when set) and AWS_NO_SIGN_REQUEST is
 * not YES; the region comes from the options, AWS_REGION or AWS_DEFAULT_REGION (default
 * us-east-1); the endpoint from the options or AWS_ENDPOINT_URL (default AWS's), addressed
 * path-style for a custom endpoint. TLS peers are verified (CURL_CA_BUNDLE or the ca_file
 * option name another CA bundle); proxies come from the usual environment variables.
 * Credentials never appear in a message.
 */
#ifndef CATERVA_STORAGE_H
#define CATERVA_STORAGE_H

#ifndef CATERVA_H
#error "include caterva.h instead"
#endif

/** @defgroup storage Local and remote storage
 * @{ */

/** Options of remote access. Zero / NULL fields take the defaults below. */
typedef struct caterva_remote_opts {
  const char *endpoint;   /**< S3 endpoint URL; default AWS_ENDPOINT_URL, else AWS's */
  const char *region;     /**< S3 region; default AWS_REGION, AWS_DEFAULT_REGION, us-east-1 */
  int path_style;         /**< S3 addressing: 1 path style, 0 virtual host; default (-1):
                               path style with a custom endpoint */
  int connections;        /**< concurrent connections per array, default 8 (at most 64) */
  int64_t cache_bytes;    /**< bytes of fetched ranges kept for later reads, default 64 MiB */
  int retries;            /**< retries of a failed request, default 4 */
  int timeout_ms;         /**< limit for one request, default 30000 */
  const char *ca_file;    /**< CA bundle for TLS; default CURL_CA_BUNDLE, else the system's */
  int whole_chunks;       /**< 1: fetch whole chunks, never single blocks (for comparisons) */
  int64_t gc_grace_s;     /**< writes to S3: chunk objects no index names are deleted by a
                               writer once older than this many seconds; 0: 3600; < 0: never */
  int block_checks;       /**< CATERVA_CHECKS_* for the opened array, local ones too
                               (caterva_array_open_ex; default: on) */
} caterva_remote_opts;

/** Fill o with the defaults (all zero / NULL, path_style -1). */
void caterva_remote_opts_init(caterva_remote_opts *o);

/** 1 when path is a URL this library reads remotely (http://, https://, s3://), else 0. */
int caterva_path_is_remote(const char *path);

/** 1 when this build reads remote arrays (it was built with libcurl), else 0. */
int caterva_remote_available(void);

/** What a remote super-chunk has fetched so far (all 0 for local ones). */
typedef struct caterva_remote_stats {
  int64_t waves;      /**< sequential rounds of concurrent requests */
  int64_t requests;   /**< HTTP requests sent, retries included */
  int64_t retries;    /**< requests sent again after a transient failure */
  int64_t bytes;      /**< body bytes received */
  int64_t needed;     /**< bytes of chunk data the reads needed (chunk headers and block
                           offsets, then the blocks' bytes, or whole chunks): bytes / needed
                           is the overhead of merging close ranges */
} caterva_remote_stats;

/** @} */

#endif /* CATERVA_STORAGE_H */

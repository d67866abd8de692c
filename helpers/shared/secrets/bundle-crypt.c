/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* bundle-crypt.c: the bundle file format (bundle-crypt.h): sealing a fresh secretstream key to the worker,
 * then chunked authenticated encryption, and the reverse, one chunk in memory at a time. Every byte of the
 * file is hashed as it passes (the job's input_sha). Key material lives only in sodium_malloc'd memory. */
#include <inttypes.h>
#include <sodium.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/jobid.h"
#include "secrets/bundle-crypt.h"
#include "secrets/seal.h"

#define SS_ABYTES crypto_secretstream_xchacha20poly1305_ABYTES
#define SS_HEADERBYTES crypto_secretstream_xchacha20poly1305_HEADERBYTES
#define SS_KEYBYTES crypto_secretstream_xchacha20poly1305_KEYBYTES
#define SS_TAG_MESSAGE crypto_secretstream_xchacha20poly1305_TAG_MESSAGE
#define SS_TAG_FINAL crypto_secretstream_xchacha20poly1305_TAG_FINAL
#define CHUNK_CIPHER_MAX (BUNDLE_CHUNK_SIZE + SS_ABYTES)

typedef crypto_secretstream_xchacha20poly1305_state StreamState;

struct BundleSealer {
        int fd;
        StreamState *state;          /* sodium_malloc: derived from the key */
        crypto_hash_sha256_state sha;
        uint8_t *header;             /* the bytes before the first chunk: its additional data */
        size_t header_len;
        uint8_t *buf;                /* plaintext waiting to become a chunk */
        size_t len;
        uint8_t *out;                /* length prefix + ciphertext of one chunk */
};

struct BundleOpener {
        int fd;
        uint64_t max_bytes, total;
        StreamState *state;
        crypto_hash_sha256_state sha;
        uint8_t *header;
        size_t header_len;
        uint64_t chunks;
        uint8_t *in, *out;
        bool final;
};

static void put_be32(uint8_t *p, uint32_t v) {
        p[0] = (uint8_t) (v >> 24);
        p[1] = (uint8_t) (v >> 16);
        p[2] = (uint8_t) (v >> 8);
        p[3] = (uint8_t) v;
}

static uint32_t get_be32(const uint8_t *p) {
        return (uint32_t) p[0] << 24 | (uint32_t) p[1] << 16 | (uint32_t) p[2] << 8 | p[3];
}

static void *mfree(void *p) {
        free(p);
        return NULL;
}

static void sha_hex(crypto_hash_sha256_state *sha, char ret[SHA256_HEX_SIZE]) {
        uint8_t d[SHA256_SIZE];

        crypto_hash_sha256_final(sha, d);
        hex_encode(d, sizeof d, ret);
}

BundleSealer *bundle_sealer_free(BundleSealer *s) {
        if (!s)
                return NULL;
        if (s->state)
                sodium_free(s->state);
        free(s->header);
        free(s->buf);
        free(s->out);
        free(s);
        return NULL;
}

static int sealer_output(BundleSealer *s, const uint8_t *p, size_t n) {
        crypto_hash_sha256_update(&s->sha, p, n);
        return write_all(s->fd, p, n);
}

static int sealer_emit(BundleSealer *s, uint8_t tag) {
        unsigned long long clen;

        if (crypto_secretstream_xchacha20poly1305_push(s->state, s->out + 4, &clen, s->buf, s->len, s->header,
                                                       s->header_len, tag) < 0)
                return -EIO;
        /* Only the first chunk authenticates the header. */
        s->header = mfree(s->header);
        s->header_len = 0;
        s->len = 0;
        put_be32(s->out, (uint32_t) clen);
        return sealer_output(s, s->out, 4 + (size_t) clen);
}

/* The header: magic, sealed key, stream header; also kept as the first chunk's additional data. */
static int sealer_start(BundleSealer *s, const uint8_t *pk, const char *job_id) {
        _cleanup_sodium_ uint8_t *key = NULL;
        _cleanup_free_ uint8_t *sealed = NULL;
        size_t sealed_len;
        int r;

        key = sodium_malloc(SS_KEYBYTES);
        if (!key)
                return -ENOMEM;
        crypto_secretstream_xchacha20poly1305_keygen(key);
        r = seal_bound(pk, SEAL_KIND_BUNDLE_KEY, job_id, key, SS_KEYBYTES, &sealed, &sealed_len);
        if (r < 0)
                return r;
        s->header_len = BUNDLE_MAGIC_SIZE + 4 + sealed_len + SS_HEADERBYTES;
        s->header = malloc(s->header_len);
        if (!s->header)
                return -ENOMEM;
        memcpy(s->header, BUNDLE_MAGIC, BUNDLE_MAGIC_SIZE);
        put_be32(s->header + BUNDLE_MAGIC_SIZE, (uint32_t) sealed_len);
        memcpy(s->header + BUNDLE_MAGIC_SIZE + 4, sealed, sealed_len);
        if (crypto_secretstream_xchacha20poly1305_init_push(s->state, s->header + s->header_len - SS_HEADERBYTES,
                                                            key) < 0)
                return -EIO;
        return sealer_output(s, s->header, s->header_len);
}

int bundle_sealer_new(int out_fd, const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const char *job_id,
                      BundleSealer **ret) {
        _cleanup_(bundle_sealer_freep) BundleSealer *s = NULL;
        int r;

        if (sodium_init() < 0)
                return -EIO;
        s = calloc(1, sizeof *s);
        if (!s)
                return -ENOMEM;
        s->fd = out_fd;
        s->state = sodium_malloc(sizeof *s->state);
        s->buf = malloc(BUNDLE_CHUNK_SIZE);
        s->out = malloc(4 + CHUNK_CIPHER_MAX);
        if (!s->state || !s->buf || !s->out)
                return -ENOMEM;
        crypto_hash_sha256_init(&s->sha);
        r = sealer_start(s, worker_pk, job_id);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

int bundle_sealer_write(BundleSealer *s, const void *p, size_t n) {
        const uint8_t *q = p;
        int r;

        while (n > 0) {
                /* A full buffer becomes a chunk only once more data comes: the last one is then FINAL. */
                if (s->len == BUNDLE_CHUNK_SIZE) {
                        r = sealer_emit(s, SS_TAG_MESSAGE);
                        if (r < 0)
                                return r;
                }
                size_t k = BUNDLE_CHUNK_SIZE - s->len < n ? BUNDLE_CHUNK_SIZE - s->len : n;
                memcpy(s->buf + s->len, q, k);
                s->len += k;
                q += k;
                n -= k;
        }
        return 0;
}

int bundle_sealer_finish(BundleSealer *s, char ret_sha[SHA256_HEX_SIZE]) {
        int r = sealer_emit(s, SS_TAG_FINAL);
        if (r < 0)
                return r;
        sha_hex(&s->sha, ret_sha);
        return 0;
}

int bundle_encrypt_fd(int in_fd, int out_fd, const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const char *job_id,
                      char ret_sha[SHA256_HEX_SIZE]) {
        _cleanup_(bundle_sealer_freep) BundleSealer *s = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        int r;

        buf = malloc(BUNDLE_CHUNK_SIZE);
        if (!buf)
                return -ENOMEM;
        r = bundle_sealer_new(out_fd, worker_pk, job_id, &s);
        if (r < 0)
                return r;
        for (;;) {
                ssize_t n = loop_read(in_fd, buf, BUNDLE_CHUNK_SIZE);
                if (n <= 0) {
                        if (n < 0)
                                return (int) n;
                        break;
                }
                r = bundle_sealer_write(s, buf, (size_t) n);
                if (r < 0)
                        return r;
        }
        return bundle_sealer_finish(s, ret_sha);
}

BundleOpener *bundle_opener_free(BundleOpener *o) {
        if (!o)
                return NULL;
        if (o->state)
                sodium_free(o->state);
        free(o->header);
        free(o->in);
        free(o->out);
        free(o);
        return NULL;
}

/* Reads up to n bytes (fewer only at EOF), hashing them; -E2BIG past the size cap. */
static ssize_t opener_read_exact(BundleOpener *o, uint8_t *p, size_t n, char **ret_error) {
        size_t got = 0;

        while (got < n) {
                ssize_t k = read(o->fd, p + got, n - got);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return error_set(ret_error, negative_errno(), "bundle: read failed: %m");
                if (k == 0)
                        break;
                crypto_hash_sha256_update(&o->sha, p + got, (size_t) k);
                got += (size_t) k;
                o->total += (uint64_t) k;
                if (o->total > o->max_bytes)
                        return error_set(ret_error, -E2BIG, "bundle: larger than %" PRIu64 " bytes",
                                         o->max_bytes);
        }
        return (ssize_t) got;
}

static int opener_read_header(BundleOpener *o, uint8_t *first, char **ret_error) {
        uint8_t *sealed_len_p = first + BUNDLE_MAGIC_SIZE;
        ssize_t n;

        n = opener_read_exact(o, first, BUNDLE_MAGIC_SIZE + 4, ret_error);
        if (n < 0)
                return (int) n;
        if (n < BUNDLE_MAGIC_SIZE + 4 || memcmp(first, BUNDLE_MAGIC, BUNDLE_MAGIC_SIZE) != 0)
                return error_set(ret_error, -EBADMSG, "bundle: not a pond bundle (no \"POND-BUNDLE-1\" magic)");
        uint32_t sealed_len = get_be32(sealed_len_p);
        if (sealed_len <= crypto_box_SEALBYTES || sealed_len > crypto_box_SEALBYTES + SEAL_HEADER_SIZE +
                                                                JOB_ID_MAX + SS_KEYBYTES)
                return error_set(ret_error, -EBADMSG, "bundle: sealed key of %" PRIu32 " bytes", sealed_len);
        o->header_len = BUNDLE_MAGIC_SIZE + 4 + sealed_len + SS_HEADERBYTES;
        o->header = malloc(o->header_len);
        if (!o->header)
                return -ENOMEM;
        memcpy(o->header, first, BUNDLE_MAGIC_SIZE + 4);
        n = opener_read_exact(o, o->header + BUNDLE_MAGIC_SIZE + 4, sealed_len + SS_HEADERBYTES, ret_error);
        if (n < 0)
                return (int) n;
        if ((size_t) n < sealed_len + SS_HEADERBYTES)
                return error_set(ret_error, -EBADMSG, "bundle: truncated in its header");
        return 0;
}

static int opener_start(BundleOpener *o, const uint8_t *pk, const uint8_t *sk, const char *job_id,
                        char **ret_error) {
        _cleanup_sodium_ uint8_t *key = NULL;
        uint8_t first[BUNDLE_MAGIC_SIZE + 4];
        size_t key_len = 0;
        int r;

        r = opener_read_header(o, first, ret_error);
        if (r < 0)
                return r;
        r = unseal_bound(pk, sk, SEAL_KIND_BUNDLE_KEY, job_id, o->header + BUNDLE_MAGIC_SIZE + 4,
                         o->header_len - BUNDLE_MAGIC_SIZE - 4 - SS_HEADERBYTES, &key, &key_len, ret_error);
        if (r < 0)
                return r;
        if (key_len != SS_KEYBYTES)
                return error_set(ret_error, -EBADMSG, "bundle: sealed key of %zu bytes, expected %u", key_len,
                                 SS_KEYBYTES);
        if (crypto_secretstream_xchacha20poly1305_init_pull(o->state, o->header + o->header_len - SS_HEADERBYTES,
                                                            key) < 0)
                return error_set(ret_error, -EBADMSG, "bundle: invalid stream header");
        return 0;
}

int bundle_opener_new(int fd, const uint8_t worker_pk[KEY_SEAL_PUBLIC_SIZE], const uint8_t *worker_sk,
                      const char *job_id, uint64_t max_bytes, BundleOpener **ret, char **ret_error) {
        _cleanup_(bundle_opener_freep) BundleOpener *o = NULL;
        int r;

        if (sodium_init() < 0)
                return -EIO;
        o = calloc(1, sizeof *o);
        if (!o)
                return -ENOMEM;
        o->fd = fd;
        o->max_bytes = max_bytes;
        o->state = sodium_malloc(sizeof *o->state);
        o->in = malloc(CHUNK_CIPHER_MAX);
        o->out = malloc(BUNDLE_CHUNK_SIZE);
        if (!o->state || !o->in || !o->out)
                return -ENOMEM;
        crypto_hash_sha256_init(&o->sha);
        r = opener_start(o, worker_pk, worker_sk, job_id, ret_error);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(o);
        return 0;
}

/* After FINAL the file must end: anything appended is refused, not ignored, since it is hashed. */
static int opener_expect_eof(BundleOpener *o, char **ret_error) {
        uint8_t b;
        ssize_t n = opener_read_exact(o, &b, 1, ret_error);

        if (n < 0)
                return (int) n;
        if (n > 0)
                return error_set(ret_error, -EBADMSG, "bundle: bytes after the final chunk");
        return 0;
}

ssize_t bundle_opener_read(void *opener, const void **ret_buf, char **ret_error) {
        BundleOpener *o = opener;
        unsigned long long mlen;
        uint8_t lenbuf[4], tag;
        ssize_t n;

        if (o->final)
                return 0;
        n = opener_read_exact(o, lenbuf, 4, ret_error);
        if (n < 0)
                return n;
        if (n < 4)
                return error_set(ret_error, -EBADMSG, "bundle: truncated (ends before its final chunk)");
        uint32_t m = get_be32(lenbuf);
        if (m < SS_ABYTES || m > CHUNK_CIPHER_MAX)
                return error_set(ret_error, -EBADMSG, "bundle: chunk of %" PRIu32 " bytes", m);
        n = opener_read_exact(o, o->in, m, ret_error);
        if (n < 0)
                return n;
        if ((size_t) n < m)
                return error_set(ret_error, -EBADMSG, "bundle: truncated (ends inside a chunk)");
        if (crypto_secretstream_xchacha20poly1305_pull(o->state, o->out, &mlen, &tag, o->in, m, o->header,
                                                       o->header_len) < 0)
                return error_set(ret_error, -EBADMSG, "bundle: chunk %" PRIu64 " does not authenticate "
                                 "(altered, reordered, or from another bundle)", o->chunks);
        o->header = mfree(o->header);
        o->header_len = 0;
        o->chunks++;
        if (tag == SS_TAG_FINAL) {
                o->final = true;
                int r = opener_expect_eof(o, ret_error);
                if (r < 0)
                        return r;
        } else if (tag != SS_TAG_MESSAGE || mlen == 0)
                return error_set(ret_error, -EBADMSG, "bundle: chunk %" PRIu64 " with tag %u and %llu bytes",
                                 o->chunks - 1, tag, mlen);
        *ret_buf = o->out;
        return (ssize_t) mlen;
}

int bundle_opener_finish(BundleOpener *o, char ret_sha[SHA256_HEX_SIZE], char **ret_error) {
        const void *p;

        while (!o->final) {
                ssize_t n = bundle_opener_read(o, &p, ret_error);
                if (n < 0)
                        return (int) n;
        }
        sha_hex(&o->sha, ret_sha);
        return 0;
}

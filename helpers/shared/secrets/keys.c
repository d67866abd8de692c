/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* keys.c: generation, atomic storage and loading of the worker's signing (Ed25519) and sealing (X25519) keys,
 * and their fingerprints. Every buffer that ever held secret bytes (binary or base64) is wiped before it is
 * released, on every path. */
#include <fcntl.h>
#include <sodium.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "hash/hash.h"
#include "secrets/keys.h"

/* Large enough for the base64 of a 64-byte key plus newline, small enough to refuse anything else early. */
#define KEY_TEXT_MAX 256

void secret_free(uint8_t *key) {
        if (key)
                sodium_free(key); /* wipes before unmapping, also for read-only memory */
}

static void wipe_text(char (*t)[KEY_TEXT_MAX]) {
        sodium_memzero(*t, sizeof *t);
}
#define _cleanup_wipe_text_ _cleanup_(wipe_text)

/* Writes one line "base64(key)\n" to dir/name: to a temp file first, fsync'd, then link(2)ed into place,
 * which (unlike rename) fails with EEXIST instead of replacing a key. */
static int key_write(int dirfd, const char *name, const uint8_t *key, size_t size, mode_t mode) {
        _cleanup_wipe_text_ char text[KEY_TEXT_MAX] = {};
        _cleanup_close_ int fd = -EBADF;
        char tmp[64];
        uint8_t rnd[8];
        int r = 0;

        if (sodium_base64_ENCODED_LEN(size, sodium_base64_VARIANT_ORIGINAL) + 1 > sizeof text)
                return -EINVAL;
        sodium_bin2base64(text, sizeof text, key, size, sodium_base64_VARIANT_ORIGINAL);
        size_t len = strlen(text);
        text[len++] = '\n';

        randombytes_buf(rnd, sizeof rnd);
        char hex[2 * sizeof rnd + 1];
        hex_encode(rnd, sizeof rnd, hex);
        snprintf(tmp, sizeof tmp, ".%s.%s.tmp", name, hex);

        fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
        if (fd < 0)
                return negative_errno();
        if (fchmod(fd, mode) < 0 || write(fd, text, len) != (ssize_t) len || fsync(fd) < 0)
                r = errno > 0 ? -errno : -EIO;
        else if (linkat(dirfd, tmp, dirfd, name, 0) < 0)
                r = negative_errno();
        (void) unlinkat(dirfd, tmp, 0);
        return r;
}

static int keys_refuse_existing(int dirfd) {
        static const char * const names[] = {
                KEY_SIGN_SECRET_FILE, KEY_SIGN_PUBLIC_FILE, KEY_SEAL_SECRET_FILE, KEY_SEAL_PUBLIC_FILE,
        };
        struct stat st;

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                if (fstatat(dirfd, names[i], &st, AT_SYMLINK_NOFOLLOW) >= 0)
                        return -EEXIST;
                if (errno != ENOENT)
                        return negative_errno();
        }
        return 0;
}

static int keys_write_all(int dirfd, const uint8_t *sign_sk, const uint8_t *sign_pk, const uint8_t *seal_sk,
                          const uint8_t *seal_pk) {
        int r;

        /* Secrets first: a crash half way leaves an incomplete set that the next run refuses (-EEXIST),
         * never a public key whose secret is lost. */
        r = key_write(dirfd, KEY_SIGN_SECRET_FILE, sign_sk, KEY_SIGN_SECRET_SIZE, 0600);
        if (r >= 0)
                r = key_write(dirfd, KEY_SEAL_SECRET_FILE, seal_sk, KEY_SEAL_SECRET_SIZE, 0600);
        if (r >= 0)
                r = key_write(dirfd, KEY_SIGN_PUBLIC_FILE, sign_pk, KEY_SIGN_PUBLIC_SIZE, 0644);
        if (r >= 0)
                r = key_write(dirfd, KEY_SEAL_PUBLIC_FILE, seal_pk, KEY_SEAL_PUBLIC_SIZE, 0644);
        if (r >= 0 && fsync(dirfd) < 0)
                r = negative_errno();
        return r;
}

int keys_generate(const char *dir) {
        _cleanup_secret_ uint8_t *sign_sk = NULL, *seal_sk = NULL;
        _cleanup_close_ int dirfd = -EBADF;
        uint8_t sign_pk[KEY_SIGN_PUBLIC_SIZE], seal_pk[KEY_SEAL_PUBLIC_SIZE];
        int r;

        if (sodium_init() < 0)
                return -EIO;
        /* 0755: the public keys (0644) are everyone's to verify results with; the secrets are 0600. */
        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return negative_errno();
        dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0)
                return negative_errno();
        r = keys_refuse_existing(dirfd);
        if (r < 0)
                return r;

        sign_sk = sodium_malloc(KEY_SIGN_SECRET_SIZE);
        seal_sk = sodium_malloc(KEY_SEAL_SECRET_SIZE);
        if (!sign_sk || !seal_sk)
                return -ENOMEM;
        if (crypto_sign_ed25519_keypair(sign_pk, sign_sk) < 0 || crypto_box_keypair(seal_pk, seal_sk) < 0)
                return -EIO;
        return keys_write_all(dirfd, sign_sk, sign_pk, seal_sk, seal_pk);
}

/* Reads the one-line base64 text of a key into text (NUL-terminated, newline stripped). */
static int key_read_text(const char *path, bool secret, char text[KEY_TEXT_MAX]) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;
        ssize_t n;
        size_t len;

        fd = open(path, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return negative_errno();
        if (fstat(fd, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if (secret && ((st.st_mode & 0077) || st.st_uid != geteuid()))
                return -EPERM;
        n = loop_read(fd, text, KEY_TEXT_MAX - 1);
        if (n < 0)
                return (int) n;
        len = (size_t) n;
        if (len >= KEY_TEXT_MAX - 1)
                return -EBADMSG;
        text[len] = 0;
        if (len > 0 && text[len - 1] == '\n')
                text[--len] = 0;
        return 0;
}

static int key_decode(const char *text, uint8_t *key, size_t size) {
        size_t n;

        if (sodium_base642bin(key, size, text, strlen(text), NULL, &n, NULL,
                              sodium_base64_VARIANT_ORIGINAL) < 0 ||
            n != size)
                return -EBADMSG;
        return 0;
}

int key_check_secret_file(const char *path) {
        struct stat st;

        if (lstat(path, &st) < 0)
                return negative_errno();
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        if ((st.st_mode & 0077) || st.st_uid != geteuid())
                return -EPERM;
        return 0;
}

int key_load_secret(const char *path, size_t size, uint8_t **ret_key) {
        _cleanup_wipe_text_ char text[KEY_TEXT_MAX] = {};
        _cleanup_secret_ uint8_t *key = NULL;
        int r;

        if (sodium_init() < 0)
                return -EIO;
        r = key_read_text(path, true, text);
        if (r < 0)
                return r;
        key = sodium_malloc(size);
        if (!key)
                return -ENOMEM;
        r = key_decode(text, key, size);
        if (r < 0)
                return r;
        if (sodium_mprotect_readonly(key) < 0)
                return -EIO;
        *ret_key = TAKE_PTR(key);
        return 0;
}

int key_load_public(const char *path, size_t size, uint8_t *ret_key) {
        char text[KEY_TEXT_MAX];
        uint8_t buf[KEY_TEXT_MAX];
        int r;

        if (size > sizeof buf)
                return -EINVAL;
        r = key_read_text(path, false, text);
        if (r < 0)
                return r;
        r = key_decode(text, buf, size);
        if (r < 0)
                return r;
        memcpy(ret_key, buf, size);
        return 0;
}

static int key_load_in(const char *dir, const char *name, size_t size, bool secret, uint8_t **ret_sk,
                       uint8_t *ret_pk) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/%s", dir, name) < 0)
                return -ENOMEM;
        return secret ? key_load_secret(path, size, ret_sk) : key_load_public(path, size, ret_pk);
}

int keys_load_sign_secret(const char *dir, uint8_t **ret_sk) {
        return key_load_in(dir, KEY_SIGN_SECRET_FILE, KEY_SIGN_SECRET_SIZE, true, ret_sk, NULL);
}

int keys_load_sign_public(const char *dir, uint8_t ret_pk[KEY_SIGN_PUBLIC_SIZE]) {
        return key_load_in(dir, KEY_SIGN_PUBLIC_FILE, KEY_SIGN_PUBLIC_SIZE, false, NULL, ret_pk);
}

int keys_load_seal_secret(const char *dir, uint8_t **ret_sk) {
        return key_load_in(dir, KEY_SEAL_SECRET_FILE, KEY_SEAL_SECRET_SIZE, true, ret_sk, NULL);
}

int keys_load_seal_public(const char *dir, uint8_t ret_pk[KEY_SEAL_PUBLIC_SIZE]) {
        return key_load_in(dir, KEY_SEAL_PUBLIC_FILE, KEY_SEAL_PUBLIC_SIZE, false, NULL, ret_pk);
}

void key_fingerprint(const uint8_t *pk, size_t len, char ret[KEY_FINGERPRINT_SIZE]) {
        uint8_t d[SHA256_SIZE];

        crypto_hash_sha256(d, pk, len);
        hex_encode(d, 16, ret);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* keys.h: the worker's long-term keys: Ed25519 for signing results (sign.key/sign.pub) and X25519 for sealed
 * secrets (seal.key/seal.pub), each one line of standard base64 (sodium ORIGINAL variant, padded) plus "\n".
 * Secret keys live only in sodium_malloc'd, read-only memory; every other copy is wiped. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "basic/macro.h"

#define KEY_SIGN_SECRET_SIZE 64 /* crypto_sign_ed25519_SECRETKEYBYTES: seed || public key */
#define KEY_SIGN_PUBLIC_SIZE 32
#define KEY_SEAL_SECRET_SIZE 32 /* crypto_box_SECRETKEYBYTES */
#define KEY_SEAL_PUBLIC_SIZE 32
#define KEY_FINGERPRINT_SIZE 33 /* 32 hex digits + NUL */

#define KEY_SIGN_SECRET_FILE "sign.key"
#define KEY_SIGN_PUBLIC_FILE "sign.pub"
#define KEY_SEAL_SECRET_FILE "seal.key"
#define KEY_SEAL_PUBLIC_FILE "seal.pub"

/* Creates dir (0700) if missing and writes the four files: secrets 0600, publics 0644, each atomically (temp
 * file, fsync, link(2) into place: never an overwrite) and then fsyncs dir. -EEXIST if any of the four exists:
 * keys are pinned at enrollment, replacing them is an explicit operator act (remove, then generate). */
int keys_generate(const char *dir);

/* Loads a secret key of exactly size bytes from path into sodium_malloc'd memory, then made read-only.
 * Refuses a file that is not regular, or readable/writable by group or others or owned by another user
 * than the caller (-EPERM), or that does not decode to exactly size bytes (-EBADMSG). Free with
 * secret_free(). */
int key_load_secret(const char *path, size_t size, uint8_t **ret_key);
/* The same checks of mode and owner on a secret key file that is not read here: the source of a copy
 * systemd made (LoadCredential=), whose own mode says nothing of the source's. */
int key_check_secret_file(const char *path);
/* Loads a public key of exactly size bytes from path into ret_key. */
int key_load_public(const char *path, size_t size, uint8_t *ret_key);

/* The same for the files keys_generate() writes, by directory. */
int keys_load_sign_secret(const char *dir, uint8_t **ret_sk);
int keys_load_sign_public(const char *dir, uint8_t ret_pk[KEY_SIGN_PUBLIC_SIZE]);
int keys_load_seal_secret(const char *dir, uint8_t **ret_sk);
int keys_load_seal_public(const char *dir, uint8_t ret_pk[KEY_SEAL_PUBLIC_SIZE]);

/* Fingerprint of a public key: lowercase hex of the first 16 bytes of sha256(public key bytes). */
void key_fingerprint(const uint8_t *pk, size_t len, char ret[KEY_FINGERPRINT_SIZE]);

/* sodium_free() (which wipes) of a key from key_load_secret(); NULL is fine. */
void secret_free(uint8_t *key);
/* The one cleanup helper for anything sodium_malloc'd (keys, plaintexts, buffers): wiped and freed. */
static inline void sodium_freep(void *p) {
        secret_free(*(uint8_t **) p);
}
#define _cleanup_sodium_ _cleanup_(sodium_freep)
#define _cleanup_secret_ _cleanup_sodium_

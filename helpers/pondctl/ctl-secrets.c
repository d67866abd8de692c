/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-secrets.c: the verbs that seal secrets and make and open encrypted source bundles. A secret is read from
 * a file or standard input, never from argv (visible in /proc and shell history), into sodium_malloc'd
 * memory that is wiped on every path. */
#include <fcntl.h>
#include <getopt.h>
#include <sodium.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/jobid.h"
#include "ctl-options.h"
#include "ctl-secrets.h"
#include "ctl.h"
#include "secrets/bundle.h"
#include "secrets/seal.h"

/* --to: a public key file (seal.pub) or, when no such file exists, the key itself in base64. */
static int load_worker_pub(const char *arg, uint8_t ret_pk[KEY_SEAL_PUBLIC_SIZE]) {
        uint8_t pk[KEY_SEAL_PUBLIC_SIZE];
        size_t n;
        int r;

        r = key_load_public(arg, KEY_SEAL_PUBLIC_SIZE, ret_pk);
        if (r != -ENOENT)
                return r < 0 ? log_error_errno(r, "--to: cannot load the worker's public key %s: %m", arg) : 0;
        if (sodium_init() < 0 ||
            sodium_base642bin(pk, sizeof pk, arg, strlen(arg), NULL, &n, NULL,
                              sodium_base64_VARIANT_ORIGINAL) < 0 || n != sizeof pk)
                return log_error_errno(ENOENT, "--to: '%s' is neither a key file nor a base64 X25519 key.", arg);
        memcpy(ret_pk, pk, sizeof pk);
        return 0;
}

/* The whole of fd, at most SEAL_SECRET_MAX bytes, one trailing newline ("\n" or "\r\n") removed. */
static int read_secret(int fd, uint8_t **ret, size_t *ret_len) {
        _cleanup_sodium_ uint8_t *buf = NULL;
        size_t len = 0;

        if (sodium_init() < 0)
                return log_error_errno(EIO, "Cannot initialize libsodium.");
        buf = sodium_malloc(SEAL_SECRET_MAX + 1);
        if (!buf)
                return log_oom();
        while (len <= SEAL_SECRET_MAX) {
                ssize_t n = read(fd, buf + len, SEAL_SECRET_MAX + 1 - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return log_error_errno(errno, "Cannot read the secret: %m");
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        if (len > SEAL_SECRET_MAX)
                return log_error_errno(E2BIG, "The secret is longer than %u bytes.", SEAL_SECRET_MAX);
        if (len > 0 && buf[len - 1] == '\n')
                len--;
        if (len > 0 && buf[len - 1] == '\r')
                len--;
        if (len == 0)
                return log_error_errno(ENODATA, "The secret is empty.");
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

static int open_input(const char *in) {
        int fd;

        if (!in || streq(in, "-"))
                return STDIN_FILENO;
        fd = open(in, O_RDONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "--in: cannot open %s: %m", in);
        return fd;
}

int ctl_verb_seal(int argc, char *argv[]) {
        _cleanup_sodium_ uint8_t *secret = NULL;
        _cleanup_free_ char *b64 = NULL;
        const char *to = NULL, *job_id = NULL, *in = NULL;
        const CtlOption options[] = {
                { "to", .value = &to }, CTL_OPTION_JOB_ID(&job_id), { "in", .value = &in }, {}
        };
        uint8_t pk[KEY_SEAL_PUBLIC_SIZE];
        size_t len = 0;
        int fd, r;

        if (ctl_options_parse(argc, argv, options, NULL) < 0)
                return CTL_EXIT_USAGE;
        if (!to || !job_id || optind != argc)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl seal --to WORKER_PUB --job-id ID [--in FILE|-]");
        if (!job_id_is_valid(job_id))
                return ctl_fail(CTL_EXIT_USAGE, "--job-id: '%s' is not a valid job id.", job_id);
        if (load_worker_pub(to, pk) < 0)
                return CTL_EXIT_ERROR;
        fd = open_input(in);
        if (fd < 0)
                return CTL_EXIT_ERROR;
        if (isatty(fd))
                log_info("Reading the secret from the terminal; end it with Ctrl-D.");
        r = read_secret(fd, &secret, &len);
        if (fd != STDIN_FILENO)
                safe_close(fd);
        if (r < 0)
                return CTL_EXIT_ERROR;
        r = seal_credential(pk, job_id, secret, len, &b64);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot seal the secret: %m");
        puts(b64);
        return 0;
}

static int bundle_create_verb(int argc, char *argv[]) {
        _cleanup_free_ char *err = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *to = NULL, *job_id = NULL, *out = NULL;
        const CtlOption options[] = {
                { "to", .value = &to }, CTL_OPTION_JOB_ID(&job_id), { "output", 'o', .value = &out }, {}
        };
        uint8_t pk[KEY_SEAL_PUBLIC_SIZE];
        char sha[SHA256_HEX_SIZE];
        int r;

        if (ctl_options_parse(argc, argv, options, NULL) < 0)
                return CTL_EXIT_USAGE;
        if (!to || !job_id || !out || optind != argc - 1)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl bundle create --to WORKER_PUB --job-id ID DIR -o FILE");
        if (load_worker_pub(to, pk) < 0)
                return CTL_EXIT_ERROR;
        fd = open(out, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, errno, "-o: cannot create %s: %m", out);
        r = bundle_create(argv[optind], pk, job_id, fd, NULL, sha, &err);
        if (r >= 0 && fsync(fd) < 0)
                r = negative_errno();
        if (r < 0) {
                (void) unlink(out);
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "Cannot bundle %s: %s", argv[optind], err ?: strerror(-r));
        }
        /* The input_sha the worker will report for this bundle. */
        printf("%s\n", sha);
        return 0;
}

static int bundle_extract_verb(int argc, char *argv[]) {
        _cleanup_secret_ uint8_t *sk = NULL;
        _cleanup_close_ int fd = -EBADF, dest = -EBADF;
        _cleanup_free_ char *err = NULL;
        const char *key_dir = pond_dir(POND_DIR_KEY), *job_id = NULL;
        const CtlOption options[] = { { "key-dir", .value = &key_dir }, CTL_OPTION_JOB_ID(&job_id), {} };
        uint8_t pk[KEY_SEAL_PUBLIC_SIZE];
        char sha[SHA256_HEX_SIZE];
        int r;

        if (ctl_options_parse(argc, argv, options, NULL) < 0)
                return CTL_EXIT_USAGE;
        if (!job_id || optind != argc - 2)
                return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl bundle extract [--key-dir DIR] --job-id ID FILE DEST");
        r = keys_load_seal_public(key_dir, pk);
        if (r >= 0)
                r = keys_load_seal_secret(key_dir, &sk);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Cannot load the sealing keys in %s: %m", key_dir);
        fd = open(argv[optind], O_RDONLY | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, errno, "Cannot open %s: %m", argv[optind]);
        /* Always a fresh private directory: nothing in it can predate the bundle. */
        if (mkdir(argv[optind + 1], 0700) < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, errno, "Cannot create %s (it must not exist): %m",
                                      argv[optind + 1]);
        dest = open(argv[optind + 1], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        r = dest < 0 ? negative_errno() : bundle_extract(fd, pk, sk, job_id, dest, NULL, sha, &err);
        if (r < 0) {
                (void) rm_rf_at(AT_FDCWD, argv[optind + 1]);
                /* err may quote a name from inside the bundle */
                return ctl_fail_untrusted(CTL_EXIT_ERROR, "Refused %s: %s", argv[optind], err ?: strerror(-r));
        }
        printf("%s\n", sha);
        return 0;
}

int ctl_verb_bundle(int argc, char *argv[]) {
        if (argc >= 2 && streq(argv[1], "create"))
                return bundle_create_verb(argc - 1, argv + 1);
        if (argc >= 2 && streq(argv[1], "extract"))
                return bundle_extract_verb(argc - 1, argv + 1);
        return ctl_fail(CTL_EXIT_USAGE, "Usage: pondctl bundle create|extract ...; see pondctl --help.");
}

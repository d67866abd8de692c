/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-accept-bundle.c: jobs whose source arrives as an encrypted bundle. Before anything runs, the
 * supervisor opens the bundle with the worker's sealing key (a systemd credential) for exactly this job,
 * decrypting while extracting into a fresh private checkout under the job's spool; the checkout is then
 * staged like any other, and the job's input_sha is the hash of the bundle exactly as issued. A bundle
 * for another worker or job, altered, truncated, or carrying anything hostile is a refusal. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "config.h"
#include "job.h"
#include "secrets/bundle.h"
#include "secrets/keys.h"
#include "stage/ns-open.h"

static int load_seal_keys(uint8_t **ret_sk, uint8_t pk[KEY_SEAL_PUBLIC_SIZE]) {
        _cleanup_free_ char *skp = job_worker_key_path("seal.key"), *pkp = job_worker_key_path("seal.pub");
        int r;

        if (!skp || !pkp)
                return -ENOMEM;
        r = job_check_key_source(KEY_SEAL_SECRET_FILE);
        if (r < 0)
                return r;
        r = key_load_secret(skp, KEY_SEAL_SECRET_SIZE, ret_sk);
        if (r < 0)
                return log_error_errno(r, "Cannot load the sealing key %s: %m", skp);
        r = key_load_public(pkp, KEY_SEAL_PUBLIC_SIZE, pk);
        if (r < 0)
                return log_error_errno(r, "Cannot load the sealing public key %s: %m", pkp);
        return 0;
}

int job_accept_bundle(Job *j, char **ret_error) {
        _cleanup_free_ char *dest = strdup(j->paths.checkout), *err = NULL;
        JobSpec *spec = j->input.spec;
        _cleanup_close_ int bfd = -EBADF, dfd = -EBADF;
        _cleanup_secret_ uint8_t *sk = NULL;
        uint8_t pk[KEY_SEAL_PUBLIC_SIZE];
        int r;

        if (!spec->bundle)
                return 0;
        if (!dest)
                return -ENOMEM;
        r = load_seal_keys(&sk, pk);
        if (r < 0)
                return error_set(ret_error, r, "bundle: this worker's sealing key is not available");
        /* A host path, as the service manager's namespace sees it (ours hides /home, /tmp and /var/tmp). */
        r = ns_open(NS_MANAGER_MNT, spec->bundle, O_RDONLY | O_NOCTTY | O_NOFOLLOW, &bfd);
        if (r < 0)
                return error_set(ret_error, r, "bundle: cannot open %s: %s", spec->bundle, strerror(-r));
        r = job_check_submitter_owns(j, bfd, spec->bundle, &err);
        if (r < 0)
                return error_set(ret_error, r, "bundle: %s", err ?: strerror(-r));
        /* A leftover from an earlier, interrupted run of this job is never reused. */
        (void) rm_rf_at(AT_FDCWD, dest);
        if (mkdir(dest, 0700) < 0)
                return error_set(ret_error, -errno, "bundle: cannot create %s: %s", dest, strerror(errno));
        dfd = open(dest, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
        if (dfd < 0)
                r = -errno;
        else
                r = bundle_extract(bfd, pk, sk, j->paths.id, dfd, NULL, j->input_hash.hex, &err);
        if (r < 0) {
                j->input_hash.hex[0] = 0;
                (void) rm_rf_at(AT_FDCWD, dest);
                return error_set(ret_error, r, "bundle: refused: %s", err ?: strerror(-r));
        }
        /* input_sha is the hash of the bundle exactly as issued, known now. */
        job_input_hash_fix(&j->input_hash);
        free(spec->checkout);
        spec->checkout = TAKE_PTR(dest);
        /* Staged from this fd, opened in our namespace: the extraction's path is never resolved again. */
        safe_close(j->input.checkout_fd);
        j->input.checkout_fd = TAKE_FD(dfd);
        j->input.checkout_ns = NULL;
        return 0;
}

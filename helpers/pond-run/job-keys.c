/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-keys.c: the worker's keys as a job gets them: the signing key loaded, and a key's source in the key
 * directory checked (root's, 0600 or stricter) when it arrives as a systemd credential. */
#include <stdlib.h>

#include "basic/dirs.h"
#include "basic/log.h"
#include "job.h"
#include "secrets/keys.h"

/* The signing key arrives as a systemd credential; outside a unit (tests, the demo) from the key dir. The
 * credential is a 0400 copy whatever the source's mode: the source in the key dir is checked too, so that a
 * key others could read (and so sign with) is refused, as docs/operations.md promises. */
int job_check_key_source(const char *file) {
        _cleanup_free_ char *source = NULL;
        int r;

        if (!getenv("CREDENTIALS_DIRECTORY"))
                return 0; /* read from the key dir itself: key_load_secret() checks it */
        if (asprintf(&source, "%s/%s", pond_dir(POND_DIR_KEY), file) < 0)
                return -ENOMEM;
        r = key_check_secret_file(source);
        if (r < 0)
                return log_error_errno(r, "Refusing the key %s: %s: %m", source,
                                       r == -EPERM ? "it must be root's and 0600 or stricter" : "not a regular file");
        return 0;
}

int job_load_signing_key(Job *j) {
        _cleanup_free_ char *path = job_worker_key_path("sign.key");
        int r;

        if (!path)
                return -ENOMEM;
        r = job_check_key_source(KEY_SIGN_SECRET_FILE);
        if (r < 0)
                return r;
        r = key_load_secret(path, KEY_SIGN_SECRET_SIZE, &j->sign_sk);
        if (r < 0)
                return log_error_errno(r, "Cannot load the signing key %s: %m", path);
        return 0;
}

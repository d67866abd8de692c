/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* fuzz-bundle.c: libFuzzer target for bundle_extract_stream(), the validated extractor behind bundle_extract(),
 * fed arbitrary bytes as the decrypted tar stream (the encryption layer is bypassed: anyone holding a
 * worker's public key can make a bundle, so its plaintext is attacker-controlled). No input may crash,
 * leak, write outside the destination or be refused without a reason; the destination is removed after each
 * input. The first input byte picks the block size the source hands out, to vary libarchive's buffering. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/macro.h"
#include "secrets/bundle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct Source {
        const uint8_t *p;
        size_t left, block;
} Source;

static ssize_t source_read(void *userdata, const void **ret_buf, char **ret_error) {
        Source *s = userdata;
        size_t n = s->left < s->block ? s->left : s->block;

        *ret_buf = s->p;
        s->p += n;
        s->left -= n;
        return (ssize_t) n;
}

/* base/ holds dest/ (extracted into, then removed) and sentinel/ (must stay empty) and nothing else. */
static char base[64];
static int base_fd = -EBADF;

static void teardown(void) {
        (void) rm_rf_at(AT_FDCWD, base);
}

static void setup(void) {
        const char *tmp = getenv("TMPDIR") ?: "/tmp";

        snprintf(base, sizeof base, "%.32s/pond-fuzz-bundle-XXXXXX", tmp);
        if (!mkdtemp(base))
                abort();
        base_fd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (base_fd < 0 || mkdirat(base_fd, "sentinel", 0700) < 0 || atexit(teardown) != 0)
                abort();
}

static size_t count_entries(int dirfd) {
        _cleanup_closedir_ DIR *d = fdopendir(fcntl(dirfd, F_DUPFD_CLOEXEC, 3));
        size_t n = 0;

        if (!d)
                abort();
        rewinddir(d); /* the dup shares its offset with dirfd, which an earlier call read to the end */
        for (struct dirent *de; (de = readdir(d));)
                if (!streq(de->d_name, ".") && !streq(de->d_name, ".."))
                        n++;
        return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        BundleLimits limits = { .max_bytes = 1 << 20, .max_entries = 256, .max_path = 1024,
                                .max_bundle_bytes = UINT64_MAX };
        _cleanup_free_ char *error = NULL;
        _cleanup_close_ int dest = -EBADF, sentinel = -EBADF;
        Source s;
        int r;

        if (base_fd < 0)
                setup();
        if (size < 1)
                return 0;
        s = (Source) { .p = data + 1, .left = size - 1, .block = (size_t) data[0] * 37 + 1 };
        if (mkdirat(base_fd, "dest", 0700) < 0)
                abort();
        dest = openat(base_fd, "dest", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dest < 0)
                abort();
        r = bundle_extract_stream(source_read, &s, dest, &limits, &error);
        if (r < 0 && r != -ENOMEM && !error)
                abort(); /* every refusal says why */
        if (r < 0 && r != -EBADMSG && r != -E2BIG && r != -ENOMEM && r != -ENOSPC) {
                fprintf(stderr, "refused with %d: %s\n", r, error);
                abort(); /* an input is refused as malformed or too big, never with a stray errno */
        }
        sentinel = openat(base_fd, "sentinel", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (sentinel < 0 || count_entries(sentinel) != 0 || count_entries(base_fd) != 2)
                abort(); /* something was written outside dest */
        if (rm_rf_at(base_fd, "dest") < 0)
                abort(); /* the supervisor must always be able to remove a partial checkout */
        return 0;
}

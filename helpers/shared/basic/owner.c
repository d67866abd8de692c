/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* owner.c: a job's owner record (owner.h): created once, atomically and durably, never replaced. */
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "basic/fileio.h"
#include "basic/owner.h"

#define OWNER_NAME_MAX 256

/* The directory of the record, made 0755 whatever the umask if it is missing (tmpfiles makes it): polkitd
 * reads it. */
static int owners_dir_open(const JobPaths *p, const char **ret_name) {
        _cleanup_free_ char *dir = strdup(p->owner);
        char *slash;

        if (!dir)
                return -ENOMEM;
        slash = strrchr(dir, '/');
        if (!slash)
                return -EINVAL;
        *slash = 0;
        if (mkdir(dir, 0755) >= 0) {
                if (chmod(dir, 0755) < 0)
                        return -errno;
        } else if (errno != EEXIST)
                return -errno;
        *ret_name = strrchr(p->owner, '/') + 1;
        return RET_NERRNO(open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW));
}

int owner_record_create(const JobPaths *p, const char *user) {
        _cleanup_free_ char *line = NULL;
        _cleanup_close_ int fd = -EBADF;
        const char *name = NULL;

        if (!user || !*user || strchr(user, '\n') || strchr(user, '/') || asprintf(&line, "%s\n", user) < 0)
                return user ? -ENOMEM : -EINVAL;
        fd = owners_dir_open(p, &name);
        if (fd < 0)
                return fd;
        return write_file_new_at(fd, name, line, strlen(line), 0644);
}

int owner_record_read(const JobPaths *p, char **ret_user) {
        _cleanup_free_ char *line = NULL;
        size_t len;
        int r;

        r = read_full_file(p->owner, OWNER_NAME_MAX, &line, &len);
        if (r < 0)
                return r;
        if (len < 2 || line[len - 1] != '\n' || memchr(line, '\n', len - 1) || memchr(line, 0, len))
                return -EBADMSG;
        line[len - 1] = 0;
        *ret_user = TAKE_PTR(line);
        return 0;
}

int owner_record_remove(const JobPaths *p) {
        return RET_NERRNO(unlink(p->owner));
}

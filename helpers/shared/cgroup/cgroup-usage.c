/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cgroup-usage.c: a cgroup's resource use from the kernel's counters, on a v1 (legacy, hybrid) or v2
 * layout: parsers of each file's format, and the reader that picks each figure's file. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "basic/fileio.h"
#include "cgroup/cgroup-usage.h"

#define CGROUP_FILE_MAX (64 * 1024)

static int parse_number(const char *s, char **end, uint64_t *ret) {
        unsigned long long v;

        if (*s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoull(s, end, 10);
        if (errno != 0)
                return -EINVAL;
        *ret = (uint64_t) v;
        return 0;
}

int cgroup_parse_u64(const char *text, uint64_t *ret) {
        char *end;
        uint64_t v;

        if (!text || parse_number(text, &end, &v) < 0)
                return -EINVAL;
        if (*end == '\n')
                end++;
        if (*end != '\0')
                return -EINVAL;
        *ret = v;
        return 0;
}

/* Lines "KEY VALUE": the value of key, -ENOENT if there is no such line. */
static int keyed_value(const char *text, const char *key, uint64_t *ret) {
        size_t klen = strlen(key);

        for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                if (strncmp(line, key, klen) == 0 && line[klen] == ' ') {
                        char *end;
                        if (parse_number(line + klen + 1, &end, ret) < 0 || (*end != '\n' && *end != '\0'))
                                return -EINVAL;
                        return 0;
                }
        return -ENOENT;
}

int cgroup_parse_cpu_stat(const char *text, uint64_t *ret_user_usec, uint64_t *ret_system_usec) {
        uint64_t u, s;
        int r;

        if (!text)
                return -EINVAL;
        r = keyed_value(text, "user_usec", &u);
        if (r >= 0)
                r = keyed_value(text, "system_usec", &s);
        if (r < 0)
                return -EINVAL;
        *ret_user_usec = u;
        *ret_system_usec = s;
        return 0;
}

static int add(uint64_t *sum, uint64_t v) {
        if (__builtin_add_overflow(*sum, v, sum))
                return -EOVERFLOW;
        return 0;
}

/* "MAJ:MIN rbytes=N wbytes=N rios=N ..." per device. */
int cgroup_parse_io_stat(const char *text, uint64_t *ret_read, uint64_t *ret_write) {
        uint64_t rd = 0, wr = 0;
        const char *line = text;

        if (!text)
                return -EINVAL;
        while (*line) {
                const char *eol = strchrnul(line, '\n');
                unsigned maj, min;
                int n = 0;

                if (sscanf(line, "%u:%u%n", &maj, &min, &n) != 2 || n == 0)
                        return -EINVAL;
                for (const char *p = line + n; p < eol;) {
                        char *end;
                        uint64_t v;

                        while (p < eol && *p == ' ')
                                p++;
                        if (p >= eol)
                                break;
                        if (strncmp(p, "rbytes=", 7) == 0 || strncmp(p, "wbytes=", 7) == 0) {
                                bool read = *p == 'r';
                                if (parse_number(p + 7, &end, &v) < 0 || add(read ? &rd : &wr, v) < 0)
                                        return -EINVAL;
                                p = end;
                        } else
                                p = strchrnul(p, ' ') < eol ? strchrnul(p, ' ') : eol;
                }
                line = *eol ? eol + 1 : eol;
        }
        *ret_read = rd;
        *ret_write = wr;
        return 0;
}

/* "MAJ:MIN Read N", "MAJ:MIN Write N", ... per device, then "Total N" over all of them and all kinds. */
int cgroup_parse_blkio_bytes(const char *text, uint64_t *ret_read, uint64_t *ret_write) {
        uint64_t rd = 0, wr = 0;
        const char *line = text;

        if (!text)
                return -EINVAL;
        while (*line) {
                const char *eol = strchrnul(line, '\n');
                char kind[16];
                unsigned maj, min;
                uint64_t v;
                int n = 0;

                if (strncmp(line, "Total ", 6) == 0) {
                        if (sscanf(line + 6, "%" SCNu64, &v) != 1)
                                return -EINVAL;
                } else if (sscanf(line, "%u:%u %15s %" SCNu64 "%n", &maj, &min, kind, &v, &n) == 4 &&
                           line + n == eol) {
                        if ((streq(kind, "Read") && add(&rd, v) < 0) || (streq(kind, "Write") && add(&wr, v) < 0))
                                return -EINVAL;
                } else if (eol != line)
                        return -EINVAL;
                line = *eol ? eol + 1 : eol;
        }
        *ret_read = rd;
        *ret_write = wr;
        return 0;
}

static int read_text(const char *root, const char *sub, const char *cgroup, const char *file, char **ret) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s%s%s/%s", root, sub, cgroup, file) < 0)
                return -ENOMEM;
        return read_full_file(path, CGROUP_FILE_MAX, ret, NULL);
}

static int read_u64(const char *root, const char *sub, const char *cgroup, const char *file, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_text(root, sub, cgroup, file, &text);
        return r < 0 ? r : cgroup_parse_u64(text, ret);
}

typedef struct Places {
        const char *root, *cgroup;
        bool v1;
        const char *v2;         /* "" (unified), "/unified" (hybrid) or NULL (legacy) */
} Places;

static void read_cpu(const Places *p, CgroupUsage *u) {
        _cleanup_free_ char *text = NULL;
        uint64_t user, sys;

        /* v1: nanoseconds. */
        if (p->v1 && read_u64(p->root, "/cpuacct", p->cgroup, "cpuacct.usage_user", &user) >= 0 &&
            read_u64(p->root, "/cpuacct", p->cgroup, "cpuacct.usage_sys", &sys) >= 0) {
                u->cpu_user_usec = user / 1000;
                u->cpu_system_usec = sys / 1000;
                return;
        }
        /* v2 keeps cpu.stat's times in every cgroup, with the cpu controller or without it. */
        if (p->v2 && read_text(p->root, p->v2, p->cgroup, "cpu.stat", &text) >= 0 &&
            cgroup_parse_cpu_stat(text, &user, &sys) >= 0) {
                u->cpu_user_usec = user;
                u->cpu_system_usec = sys;
        }
}

static void read_memory(const Places *p, CgroupUsage *u) {
        uint64_t v;

        if (p->v1 && read_u64(p->root, "/memory", p->cgroup, "memory.max_usage_in_bytes", &v) >= 0)
                u->memory_peak_bytes = v;
        else if (p->v2 && read_u64(p->root, p->v2, p->cgroup, "memory.peak", &v) >= 0)
                u->memory_peak_bytes = v;
}

static void read_io(const Places *p, CgroupUsage *u) {
        _cleanup_free_ char *v1 = NULL, *v2 = NULL;
        uint64_t rd, wr;

        if (p->v1 && read_text(p->root, "/blkio", p->cgroup, "blkio.throttle.io_service_bytes_recursive", &v1) >= 0 &&
            cgroup_parse_blkio_bytes(v1, &rd, &wr) >= 0) {
                u->io_read_bytes = rd;
                u->io_write_bytes = wr;
        } else if (p->v2 && read_text(p->root, p->v2, p->cgroup, "io.stat", &v2) >= 0 &&
                   cgroup_parse_io_stat(v2, &rd, &wr) >= 0) {
                u->io_read_bytes = rd;
                u->io_write_bytes = wr;
        }
}

static void read_tasks(const Places *p, CgroupUsage *u) {
        uint64_t v;

        if (p->v1 && read_u64(p->root, "/pids", p->cgroup, "pids.peak", &v) >= 0)
                u->tasks_peak = v;
        else if (p->v2 && read_u64(p->root, p->v2, p->cgroup, "pids.peak", &v) >= 0)
                u->tasks_peak = v;
}

static bool has_dotdot(const char *path) {
        for (const char *p = strstr(path, "/.."); p; p = strstr(p + 1, "/.."))
                if (p[3] == '/' || p[3] == '\0')
                        return true;
        return false;
}

int cgroup_usage_read_at(const char *root, CgroupLayout layout, const char *cgroup, CgroupUsage *ret) {
        Places p = {
                .root = root,
                .cgroup = cgroup,
                .v1 = cgroup_layout_has_v1(layout),
                .v2 = layout == CGROUP_LAYOUT_UNIFIED ? "" : layout == CGROUP_LAYOUT_HYBRID ? "/unified" : NULL,
        };
        CgroupUsage u = CGROUP_USAGE_NULL;

        if (!cgroup || cgroup[0] != '/' || has_dotdot(cgroup))
                return -EINVAL;
        read_cpu(&p, &u);
        read_memory(&p, &u);
        read_io(&p, &u);
        read_tasks(&p, &u);
        *ret = u;
        if (u.cpu_user_usec == CGROUP_USAGE_UNKNOWN && u.memory_peak_bytes == CGROUP_USAGE_UNKNOWN &&
            u.io_read_bytes == CGROUP_USAGE_UNKNOWN && u.tasks_peak == CGROUP_USAGE_UNKNOWN)
                return -ENOENT;
        return 0;
}

int cgroup_usage_read(const char *cgroup, CgroupUsage *ret) {
        return cgroup_usage_read_at(CGROUP_ROOT, cgroup_layout_detect(CGROUP_ROOT), cgroup, ret);
}

static json_object *figure(uint64_t v) {
        return v == CGROUP_USAGE_UNKNOWN ? NULL : json_object_new_uint64(v);
}

json_object *cgroup_usage_to_json(const CgroupUsage *u) {
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "cpu_user_ms", figure(u->cpu_user_usec == CGROUP_USAGE_UNKNOWN ?
                                                        u->cpu_user_usec : u->cpu_user_usec / 1000));
        json_object_object_add(o, "cpu_system_ms", figure(u->cpu_system_usec == CGROUP_USAGE_UNKNOWN ?
                                                          u->cpu_system_usec : u->cpu_system_usec / 1000));
        json_object_object_add(o, "memory_peak_bytes", figure(u->memory_peak_bytes));
        json_object_object_add(o, "io_read_bytes", figure(u->io_read_bytes));
        json_object_object_add(o, "io_write_bytes", figure(u->io_write_bytes));
        json_object_object_add(o, "tasks_peak", figure(u->tasks_peak));
        return o;
}

bool cgroup_usage_pin(const char *cgroup, pid_t pid) {
        static const char *const controllers[] = { CGROUP_USAGE_V1_CONTROLLERS };
        bool pids = false;

        if (pid <= 0 || !cgroup_layout_has_v1(cgroup_layout_detect(CGROUP_ROOT)))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(controllers); i++) {
                _cleanup_free_ char *dir = NULL;

                if (cgroup_v1_path(CGROUP_ROOT, controllers[i], cgroup, &dir) < 0)
                        continue;
                if (cgroup_procs_add(dir, pid) >= 0 && streq(controllers[i], "pids"))
                        pids = true;
        }
        return pids;
}

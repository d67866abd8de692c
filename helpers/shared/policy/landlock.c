/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* landlock.c: a profile's Landlock field, the job's decision, pond-init's command line (landlock.h). */
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "basic/errmsg.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "basic/string-util.h"
#include "basic/strv.h"
#include "policy/home.h"
#include "policy/landlock.h"
#include "runtime/runtime.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#endif
#define LANDLOCK_CREATE_RULESET_VERSION_FLAG (1U << 0)

static const char *const mode_table[_LANDLOCK_MODE_MAX] = {
        [LANDLOCK_OFF] = "off",
        [LANDLOCK_BEST_EFFORT] = "best-effort",
        [LANDLOCK_REQUIRED] = "required",
};

const char *landlock_mode_to_string(LandlockMode m) {
        return m >= 0 && m < _LANDLOCK_MODE_MAX ? mode_table[m] : NULL;
}

LandlockMode landlock_mode_from_string(const char *s) {
        for (size_t i = 0; s && i < _LANDLOCK_MODE_MAX; i++)
                if (streq(mode_table[i], s))
                        return (LandlockMode) i;
        return _LANDLOCK_MODE_INVALID;
}

/* Where execution is allowed by default: the system's programs and libraries (the dynamic loader is
 * executed too), and what a job builds and runs: its workspace, /tmp and its home. */
static const char *const exec_default_system[] = {
        "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt",
};

/* The device files a shell and a pty need: read, write, ioctl, nothing made beside them. The places a job
 * may write besides them are its config's read-write mounts (LandlockPaths.writable). */
static const char *const dev_files[] = {
        "/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx", "/dev/pts",
};

typedef struct LandlockFields {
        char *mode;
        char *tcp_connect;
        unsigned min_abi;
        json_object *exec_allow;
        bool mqueue;
} LandlockFields;

static const char *exec_path_check(const char *s) {
        if (s[0] != '/')
                return "must be an absolute path";
        for (const char *p = s; (p = strstr(p, "..")); p += 2)
                if ((p == s || p[-1] == '/') && (p[2] == '/' || p[2] == '\0'))
                        return "must not contain \"..\"";
        return NULL;
}

static const char *tcp_connect_check(const char *s) {
        return streq(s, "sidecars") || streq(s, "any") ? NULL : "must be \"sidecars\" or \"any\"";
}

static const char *mode_check(const char *s) {
        return landlock_mode_from_string(s) < 0 ? "must be \"off\", \"best-effort\" or \"required\"" : NULL;
}

int landlock_profile_parse(json_object *o, const char *where, LandlockProfile *ret, char **ret_error) {
        static const JsonField fields[] = {
                { "mode", JSON_STRING, .offset = offsetof(LandlockFields, mode), .flags = JSON_MANDATORY,
                  .min = 1, .max = 16, .check = mode_check },
                { "min_abi", JSON_UNSIGNED, .offset = offsetof(LandlockFields, min_abi), .min = 1,
                  .max = LANDLOCK_ABI_MAX },
                { "exec_allow", JSON_ARRAY, .offset = offsetof(LandlockFields, exec_allow), .min = 1,
                  .max = LANDLOCK_EXEC_ALLOW_MAX },
                { "tcp_connect", JSON_STRING, .offset = offsetof(LandlockFields, tcp_connect), .min = 1, .max = 16,
                  .check = tcp_connect_check },
                { "mqueue", JSON_BOOL, .offset = offsetof(LandlockFields, mqueue) },
                {}
        };
        LandlockFields f = { .min_abi = 1 };
        _cleanup_strv_free_ char **allow = NULL;
        int r;

        *ret = (LandlockProfile) { .mode = LANDLOCK_OFF };
        if (!o)
                return 0;
        r = json_dispatch(o, where, fields, &f, ret_error);
        if (r >= 0) {
                ret->mode = landlock_mode_from_string(f.mode);
                ret->connect_any = f.tcp_connect && streq(f.tcp_connect, "any");
        }
        free(f.mode);
        free(f.tcp_connect);
        if (r < 0)
                return r;
        for (size_t i = 0; f.exec_allow && i < json_object_array_length(f.exec_allow); i++) {
                json_object *e = json_object_array_get_idx(f.exec_allow, i);
                const char *s = json_object_is_type(e, json_type_string) ? json_object_get_string(e) : NULL;
                const char *why = !s ? "must be a string" : strlen(s) > 1024 ? "is too long" : exec_path_check(s);

                if (why)
                        return error_set(ret_error, -EINVAL, "%s.exec_allow[%zu]: %s", where, i, why);
                if (strv_push(&allow, strdup(s)) < 0)
                        return -ENOMEM;
        }
        ret->min_abi = f.min_abi;
        ret->mqueue = f.mqueue;
        ret->exec_allow = TAKE_PTR(allow);
        return 0;
}

void landlock_profile_done(LandlockProfile *p) {
        strv_freep(&p->exec_allow);
        *p = (LandlockProfile) {};
}

unsigned landlock_host_abi(const char **ret_reason) {
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION_FLAG);

        if (abi > 0) {
                *ret_reason = NULL;
                return (unsigned) abi;
        }
        *ret_reason = errno == ENOSYS ? "the kernel has no Landlock (ENOSYS)"
                : errno == EOPNOTSUPP ? "Landlock is built in but disabled (lsm= on the kernel command line)"
                : "landlock_create_ruleset failed";
        return 0;
}

int landlock_decide(const LandlockProfile *p, const char *backend, unsigned host_abi, const char *host_reason,
                    LandlockDecision *ret, char **ret_error) {
        LandlockDecision d = { .decided = true, .mode = p->mode };
        const RuntimeProvider *provider;

        if (p->mode == LANDLOCK_OFF) {
                *ret = d;
                return 0;
        }
        provider = backend ? runtime_provider_find(backend) : NULL;
        if (provider && !provider->landlock_absent) {
                d.abi = MIN(host_abi, (unsigned) LANDLOCK_ABI_MAX);
                d.reason = host_abi == 0 ? host_reason ?: "the kernel has no Landlock"
                        : host_abi > LANDLOCK_ABI_MAX ? "the kernel's ABI is newer than pond-init's" : NULL;
        } else
                d.reason = provider ? provider->landlock_absent : "the backend is not known";
        if (p->mode == LANDLOCK_REQUIRED && d.abi < p->min_abi) {
                if (d.abi == 0)
                        return error_set(ret_error, -EOPNOTSUPP, "landlock: the profile requires Landlock ABI "
                                         ">= %u, not available with backend %s: %s", p->min_abi,
                                         backend ?: "?", d.reason);
                return error_set(ret_error, -EOPNOTSUPP, "landlock: the profile requires Landlock ABI >= %u, "
                                 "this worker's kernel has ABI %u", p->min_abi, d.abi);
        }
        *ret = d;
        return 0;
}

static int push2(char ***l, const char *opt, const char *value) {
        if (strv_push(l, strdup(opt)) < 0 || strv_push(l, strdup(value)) < 0)
                return -ENOMEM;
        return 0;
}

/* A writable path from the job's config: absolute, without "..", and none of these (a rule beneath one
 * would open /proc's writable files, /dev/mqueue or devices, which the ruleset closes or grants one by one). */
static bool writable_is_valid(const char *s) {
        static const char *const never[] = { "/", "/dev", "/proc", "/sys" };

        if (exec_path_check(s))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(never); i++)
                if (streq(s, never[i]))
                        return false;
        return true;
}

static int push_exec(char ***l, const LandlockProfile *p, const LandlockPaths *paths) {
        int r = 0;

        if (p->exec_allow) {
                for (size_t i = 0; r >= 0 && p->exec_allow[i]; i++)
                        r = push2(l, "--exec", p->exec_allow[i]);
                return r;
        }
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(exec_default_system); i++)
                r = push2(l, "--exec", exec_default_system[i]);
        if (r >= 0)
                r = push2(l, "--exec", "/tmp");
        if (r >= 0 && paths->home)
                r = push2(l, "--exec", HOME_DIR);
        if (r >= 0 && paths->workspace)
                r = push2(l, "--exec", "/workspace");
        return r;
}

int landlock_init_argv(const LandlockDecision *d, const LandlockProfile *p, const LandlockPaths *paths,
                       char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        char num[16];
        int r;

        if (!d->decided || d->abi == 0 || d->abi > LANDLOCK_ABI_MAX)
                return -EINVAL;
        for (size_t i = 0; paths->writable && paths->writable[i]; i++)
                if (!writable_is_valid(paths->writable[i]))
                        return -EINVAL;
        snprintf(num, sizeof num, "%u", d->abi);
        r = strv_push(&l, strdup(LANDLOCK_INIT_PATH));
        if (r >= 0)
                r = push2(&l, "--abi", num);
        if (r >= 0)
                r = push2(&l, "--read", "/");
        for (size_t i = 0; r >= 0 && paths->writable && paths->writable[i]; i++)
                r = push2(&l, "--rw", paths->writable[i]);
        if (r >= 0 && p->mqueue)
                r = push2(&l, "--rw", LANDLOCK_MQUEUE_PATH);
        for (size_t i = 0; r >= 0 && i < ELEMENTSOF(dev_files); i++)
                r = push2(&l, "--dev", dev_files[i]);
        if (r >= 0)
                r = push_exec(&l, p, paths);
        if (r >= 0 && p->connect_any)
                r = push2(&l, "--connect", "any");
        for (size_t i = 0; r >= 0 && !p->connect_any && i < paths->n_ports; i++) {
                snprintf(num, sizeof num, "%u", (unsigned) paths->ports[i]);
                r = push2(&l, "--connect", num);
        }
        if (r >= 0)
                r = strv_push(&l, strdup("--"));
        if (r < 0)
                return r;
        *ret = TAKE_PTR(l);
        return 0;
}

json_object *landlock_decision_to_json(const LandlockDecision *d, const LandlockProfile *p) {
        json_object *o, *a = NULL;

        if (!d->decided || d->mode == LANDLOCK_OFF)
                return NULL;
        o = json_object_new_object();
        if (!o)
                return NULL;
        json_object_object_add(o, "mode", json_object_new_string(landlock_mode_to_string(d->mode)));
        json_object_object_add(o, "abi", json_object_new_int((int) d->abi));
        json_object_object_add(o, "applied", json_object_new_boolean(d->abi > 0));
        json_object_object_add(o, "reason", d->reason ? json_object_new_string(d->reason) : NULL);
        if (p->exec_allow) {
                a = json_object_new_array();
                for (size_t i = 0; a && p->exec_allow[i]; i++)
                        json_object_array_add(a, json_object_new_string(p->exec_allow[i]));
        }
        json_object_object_add(o, "exec_allow", a);
        json_object_object_add(o, "tcp_connect", json_object_new_string(p->connect_any ? "any" : "sidecars"));
        json_object_object_add(o, "mqueue", json_object_new_boolean(p->mqueue));
        return o;
}

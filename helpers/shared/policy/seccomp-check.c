/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* seccomp-check.c: owns the invariant on policy/seccomp.json: fail-closed default, known actions,
 * operators, architectures and syscall names, the forbidden list never allowed, argument filters where
 * an allow is only safe with them, errnos every backend can return, and a filter libseccomp really compiles
 * (exported, never loaded). */
#include <fcntl.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/json-util.h"
#include "basic/macro.h"
#include "policy/seccomp-check.h"

/* Namespace creation, mounts, keyrings, kernel programs and modules, the clock, swap, reboot,
 * other processes' memory, handle-based opens (container escapes), kernel logs and io_uring (a large
 * kernel surface with a history of privilege escalations). docs/threat-model.md says why each. */
const char *const seccomp_forbidden_syscalls[] = {
        "unshare", "setns", "clone3",
        "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsmount",
        "fsconfig", "fspick", "mount_setattr",
        "keyctl", "add_key", "request_key",
        "bpf", "perf_event_open", "userfaultfd", "lookup_dcookie", "fanotify_init",
        "io_uring_setup", "io_uring_enter", "io_uring_register",
        "init_module", "finit_module", "delete_module", "create_module", "kexec_load", "kexec_file_load",
        "clock_settime", "clock_settime64", "clock_adjtime", "clock_adjtime64", "settimeofday", "adjtimex",
        "stime",
        "swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "syslog", "vhangup",
        "sethostname", "setdomainname",
        "ptrace", "process_vm_readv", "process_vm_writev", "process_madvise", "kcmp", "pidfd_getfd",
        "name_to_handle_at", "open_by_handle_at",
        "iopl", "ioperm", "modify_ldt", "nfsservctl", "uselib", "ustat", "sysfs", "_sysctl",
        NULL,
};

#define CLONE_NAMESPACE_FLAGS 0x7E020000ULL /* NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET */

/* personality(2) values Docker allows: Linux, with/without ADDR_NO_RANDOMIZE-free UNAME26, and query. */
static const uint64_t safe_personalities[] = { 0x0, 0x8, 0x20000, 0x20008, 0xffffffff };
/* AF_UNIX, AF_INET, AF_INET6, AF_NETLINK: what a build, a test run and a resolver need. */
static const uint64_t safe_families[] = { 1, 2, 10, 16 };

typedef struct ActionInfo {
        const char *name;
        uint32_t action;    /* SCMP_ACT_ERRNO gets its errno or'ed in */
        bool permits;       /* the syscall runs */
        bool takes_errno;
} ActionInfo;

/* SCMP_ACT_TRACE and SCMP_ACT_NOTIFY are left out: they hand the decision to a tracer or a listener
 * outside this file's invariant. */
static const ActionInfo actions[] = {
        { "SCMP_ACT_KILL", SCMP_ACT_KILL, false, false },
        { "SCMP_ACT_KILL_THREAD", SCMP_ACT_KILL_THREAD, false, false },
        { "SCMP_ACT_KILL_PROCESS", SCMP_ACT_KILL_PROCESS, false, false },
        { "SCMP_ACT_TRAP", SCMP_ACT_TRAP, false, false },
        { "SCMP_ACT_ERRNO", SCMP_ACT_ERRNO(0), false, true },
        { "SCMP_ACT_LOG", SCMP_ACT_LOG, true, false },
        { "SCMP_ACT_ALLOW", SCMP_ACT_ALLOW, true, false },
};

static const struct {
        const char *name;
        enum scmp_compare op;
} operators[] = {
        { "SCMP_CMP_NE", SCMP_CMP_NE }, { "SCMP_CMP_LT", SCMP_CMP_LT },
        { "SCMP_CMP_LE", SCMP_CMP_LE }, { "SCMP_CMP_EQ", SCMP_CMP_EQ },
        { "SCMP_CMP_GE", SCMP_CMP_GE }, { "SCMP_CMP_GT", SCMP_CMP_GT },
        { "SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ },
};

/* s390 is absent on purpose: clone's flags are its second argument there, and the clone rule is not. */
static const struct {
        const char *name;
        uint32_t arch;
} architectures[] = {
        { "SCMP_ARCH_X86_64", SCMP_ARCH_X86_64 }, { "SCMP_ARCH_X86", SCMP_ARCH_X86 },
        { "SCMP_ARCH_X32", SCMP_ARCH_X32 },       { "SCMP_ARCH_AARCH64", SCMP_ARCH_AARCH64 },
        { "SCMP_ARCH_ARM", SCMP_ARCH_ARM },
};

typedef struct Rule {
        const char *where; /* "syscalls[3]" */
        const ActionInfo *action;
        uint32_t scmp_action;
        struct scmp_arg_cmp args[6];
        unsigned n_args;
} Rule;

DEFINE_TRIVIAL_CLEANUP_FUNC(scmp_filter_ctx, seccomp_release);

#define fail(ret_error, ...) error_set((ret_error), -EINVAL, __VA_ARGS__)

static bool is_forbidden(const char *name) {
        for (const char *const *f = seccomp_forbidden_syscalls; *f; f++)
                if (streq(*f, name))
                        return true;
        return false;
}

static bool value_in(uint64_t v, const uint64_t *set, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (set[i] == v)
                        return true;
        return false;
}

/* Some syscalls are only safe to allow with an argument filter: clone without namespace flags,
 * personality with a known-safe persona, socket for the families pond expects. */
static int check_guarded(const char *name, const Rule *rule, char **ret_error) {
        const struct scmp_arg_cmp *a = rule->n_args > 0 ? &rule->args[0] : NULL;

        if (streq(name, "clone")) {
                if (rule->n_args != 1 || a->arg != 0 || a->op != SCMP_CMP_MASKED_EQ ||
                    (a->datum_a & CLONE_NAMESPACE_FLAGS) != CLONE_NAMESPACE_FLAGS || a->datum_b != 0)
                        return fail(ret_error, "%s: clone may only be allowed with args [{index 0, "
                                    "SCMP_CMP_MASKED_EQ, value covering 0x%llx, valueTwo 0}]",
                                    rule->where, CLONE_NAMESPACE_FLAGS);
        } else if (streq(name, "personality")) {
                if (rule->n_args != 1 || a->arg != 0 || a->op != SCMP_CMP_EQ ||
                    !value_in(a->datum_a, safe_personalities, ELEMENTSOF(safe_personalities)))
                        return fail(ret_error, "%s: personality may only be allowed for one of 0x0, 0x8, "
                                    "0x20000, 0x20008, 0xffffffff (SCMP_CMP_EQ on index 0)", rule->where);
        } else if (streq(name, "socket")) {
                if (rule->n_args != 1 || a->arg != 0 || a->op != SCMP_CMP_EQ ||
                    !value_in(a->datum_a, safe_families, ELEMENTSOF(safe_families)))
                        return fail(ret_error, "%s: socket may only be allowed for AF_UNIX, AF_INET, "
                                    "AF_INET6 or AF_NETLINK (SCMP_CMP_EQ on index 0)", rule->where);
        }
        return 0;
}

static const ActionInfo *lookup_action(json_object *o, const char *key) {
        const char *s = json_get_str(o, key);

        if (!s)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(actions); i++)
                if (streq(actions[i].name, s))
                        return &actions[i];
        return NULL;
}

static int parse_action(json_object *o, const char *action_key, const char *errno_key, const char *where,
                        const ActionInfo **ret_info, uint32_t *ret_action, char **ret_error) {
        const ActionInfo *info = lookup_action(o, action_key);
        uint64_t e = 0;
        bool set;
        int r;

        if (!info)
                return fail(ret_error, "%s.%s: must be one of SCMP_ACT_ALLOW, SCMP_ACT_ERRNO, SCMP_ACT_LOG, "
                            "SCMP_ACT_KILL, SCMP_ACT_KILL_THREAD, SCMP_ACT_KILL_PROCESS, SCMP_ACT_TRAP",
                            where, action_key);
        r = json_get_u64(o, where, errno_key, 0, 4095, &e, ret_error);
        if (r < 0)
                return r;
        set = r > 0;
        if (set && !info->takes_errno)
                return fail(ret_error, "%s.%s: only valid with SCMP_ACT_ERRNO", where, errno_key);
        /* errno 0 would make a refused syscall look like it succeeded; and runsc can only say EPERM and
         * ENOSYS (runsc-seccomp.c), so a profile every backend applies as written uses no other. */
        if (set && e != EPERM && e != ENOSYS)
                return fail(ret_error, "%s.%s: must be 1 (EPERM) or 38 (ENOSYS), the errnos every backend "
                            "can return", where, errno_key);
        *ret_info = info;
        *ret_action = info->takes_errno ? SCMP_ACT_ERRNO(set ? (uint16_t) e : EPERM) : info->action;
        return 0;
}

static int parse_arg(json_object *a, const char *where, struct scmp_arg_cmp *ret, char **ret_error) {
        static const char *const keys[] = { "index", "value", "valueTwo", "op", NULL };
        const char *op = json_get_str(a, "op");
        uint64_t index = 0, value = 0, value_two = 0;
        int r, set_index, set_value;

        r = json_check_object(a, where, ret_error);
        if (r >= 0)
                r = json_check_keys(a, where, keys, ret_error);
        if (r < 0)
                return r;
        set_index = r = json_get_u64(a, where, "index", 0, 5, &index, ret_error);
        if (r >= 0)
                set_value = r = json_get_u64(a, where, "value", 0, UINT64_MAX, &value, ret_error);
        if (r >= 0)
                r = json_get_u64(a, where, "valueTwo", 0, UINT64_MAX, &value_two, ret_error);
        if (r < 0)
                return r;
        if (!set_index || !set_value)
                return fail(ret_error, "%s: index and value are required", where);
        for (size_t i = 0; op && i < ELEMENTSOF(operators); i++)
                if (streq(operators[i].name, op)) {
                        /* as runc: for MASKED_EQ value is the mask, valueTwo the datum */
                        *ret = (struct scmp_arg_cmp) { (unsigned) index, operators[i].op, value, value_two };
                        return 0;
                }
        return fail(ret_error, "%s.op: must be one of SCMP_CMP_NE, _LT, _LE, _EQ, _GE, _GT, _MASKED_EQ",
                    where);
}

static int parse_args(json_object *args, Rule *rule, char **ret_error) {
        char where[64];
        int r;

        if (!args)
                return 0;
        if (!json_object_is_type(args, json_type_array) || json_object_array_length(args) > 6)
                return fail(ret_error, "%s.args: must be an array of at most 6 conditions", rule->where);
        for (size_t i = 0; i < json_object_array_length(args); i++) {
                snprintf(where, sizeof where, "%s.args[%zu]", rule->where, i);
                r = parse_arg(json_object_array_get_idx(args, i), where, &rule->args[i], ret_error);
                if (r < 0)
                        return r;
                rule->n_args = (unsigned) i + 1;
        }
        return 0;
}

static int add_name(scmp_filter_ctx ctx, uint32_t default_action, const Rule *rule, const char *name,
                    char **ret_error) {
        int nr, r;

        /* The name table is arch-independent (other arches' syscalls resolve to pseudo numbers), so asking
         * for x86_64 gives the same verdict on every build host. runc silently skips unknown names: a
         * typo here would be an allow that never happens or a deny that never happens. */
        if (seccomp_syscall_resolve_name_arch(SCMP_ARCH_X86_64, name) == __NR_SCMP_ERROR)
                return fail(ret_error, "%s: unknown syscall \"%s\"", rule->where, name);
        if (rule->action->permits && is_forbidden(name))
                return fail(ret_error, "%s: \"%s\" is forbidden and must not be allowed", rule->where, name);
        if (rule->action->permits) {
                r = check_guarded(name, rule, ret_error);
                if (r < 0)
                        return r;
        }
        /* runc ignores rules whose action is the default one; libseccomp refuses them */
        if (rule->scmp_action == default_action)
                return 0;
        nr = seccomp_syscall_resolve_name(name);
        r = seccomp_rule_add_array(ctx, rule->scmp_action, nr, rule->n_args, rule->args);
        if (r < 0)
                return fail(ret_error, "%s: libseccomp refuses the rule for \"%s\": %s", rule->where, name,
                            strerror(-r));
        return 0;
}

static int add_rule(scmp_filter_ctx ctx, uint32_t default_action, json_object *o, size_t idx,
                    char **ret_error) {
        static const char *const keys[] = { "names", "action", "errnoRet", "args", NULL };
        char where[32];
        Rule rule = { .where = where };
        json_object *names;
        int r;

        snprintf(where, sizeof where, "syscalls[%zu]", idx);
        r = json_check_object(o, where, ret_error);
        if (r >= 0)
                r = json_check_keys(o, where, keys, ret_error);
        if (r >= 0)
                r = parse_action(o, "action", "errnoRet", where, &rule.action, &rule.scmp_action, ret_error);
        if (r >= 0)
                r = parse_args(json_get(o, "args"), &rule, ret_error);
        if (r < 0)
                return r;
        names = json_get(o, "names");
        if (!names || !json_object_is_type(names, json_type_array) || json_object_array_length(names) == 0)
                return fail(ret_error, "%s.names: must be a non-empty array of syscall names", where);
        for (size_t i = 0; i < json_object_array_length(names); i++) {
                json_object *n = json_object_array_get_idx(names, i);
                if (!json_object_is_type(n, json_type_string))
                        return fail(ret_error, "%s.names[%zu]: must be a string", where, i);
                r = add_name(ctx, default_action, &rule, json_object_get_string(n), ret_error);
                if (r < 0)
                        return r;
        }
        return 0;
}

const char *seccomp_native_arch_name(void) {
        uint32_t native = seccomp_arch_native();

        for (size_t k = 0; k < ELEMENTSOF(architectures); k++)
                if (architectures[k].arch == native)
                        return architectures[k].name;
        return NULL;
}

/* Every name must be known, and this host's native architecture listed; only the native one is compiled,
 * since that is the only one a job's filter carries (oci.c): syscalls of any other ABI, 32-bit compat
 * included, hit the filter's bad-architecture action and kill the caller. */
static int add_architectures(scmp_filter_ctx ctx, json_object *a, char **ret_error) {
        const char *native = seccomp_native_arch_name();
        bool has_native = false;

        if (!a || !json_object_is_type(a, json_type_array) || json_object_array_length(a) == 0)
                return fail(ret_error, "architectures: must be a non-empty array");
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                json_object *n = json_object_array_get_idx(a, i);
                const char *s = json_object_is_type(n, json_type_string) ? json_object_get_string(n) : "";
                size_t k;
                int r;

                for (k = 0; k < ELEMENTSOF(architectures); k++)
                        if (streq(architectures[k].name, s))
                                break;
                if (k == ELEMENTSOF(architectures))
                        return fail(ret_error, "architectures[%zu]: must be one of SCMP_ARCH_X86_64, "
                                    "SCMP_ARCH_X86, SCMP_ARCH_X32, SCMP_ARCH_AARCH64, SCMP_ARCH_ARM", i);
                if (!native || !streq(native, s))
                        continue;
                has_native = true;
                r = seccomp_arch_add(ctx, architectures[k].arch);
                if (r < 0 && r != -EEXIST)
                        return fail(ret_error, "architectures[%zu]: libseccomp refuses %s: %s", i, s,
                                    strerror(-r));
        }
        if (!has_native)
                return fail(ret_error, "architectures: this host's native architecture (%s) is not listed",
                            native ?: "unsupported");
        return 0;
}

/* Compiling to BPF is where libseccomp finds conflicts between rules; the program goes nowhere. */
static int export_filter(scmp_filter_ctx ctx, char **ret_error) {
        _cleanup_close_ int fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
        int r;

        if (fd < 0)
                return -errno;
        r = seccomp_export_bpf(ctx, fd);
        if (r < 0)
                return fail(ret_error, "seccomp: libseccomp cannot compile the filter: %s", strerror(-r));
        return 0;
}

int seccomp_policy_check(json_object *seccomp, char **ret_error) {
        static const char *const keys[] = {
                "defaultAction", "defaultErrnoRet", "architectures", "syscalls", NULL,
        };
        _cleanup_(seccomp_releasep) scmp_filter_ctx ctx = NULL;
        const ActionInfo *def;
        uint32_t default_action;
        json_object *syscalls;
        int r;

        r = json_check_object(seccomp, "seccomp", ret_error);
        if (r >= 0)
                r = json_check_keys(seccomp, "seccomp", keys, ret_error);
        if (r < 0)
                return r;
        def = lookup_action(seccomp, "defaultAction");
        if (def && def->permits)
                return fail(ret_error, "seccomp.defaultAction: must refuse (SCMP_ACT_ERRNO or a kill "
                            "action), not %s: the profile is an allowlist", def->name);
        r = parse_action(seccomp, "defaultAction", "defaultErrnoRet", "seccomp", &def, &default_action,
                         ret_error);
        if (r < 0)
                return r;
        ctx = seccomp_init(default_action);
        if (!ctx)
                return -ENOMEM;
        r = add_architectures(ctx, json_get(seccomp, "architectures"), ret_error);
        if (r < 0)
                return r;
        syscalls = json_get(seccomp, "syscalls");
        if (!syscalls || !json_object_is_type(syscalls, json_type_array))
                return fail(ret_error, "seccomp.syscalls: must be an array");
        for (size_t i = 0; i < json_object_array_length(syscalls); i++) {
                r = add_rule(ctx, default_action, json_object_array_get_idx(syscalls, i), i, ret_error);
                if (r < 0)
                        return r;
        }
        return export_filter(ctx, ret_error);
}

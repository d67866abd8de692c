/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ruleset.c: pond-init's Landlock ruleset from its command line, and the rights per ABI (ruleset.h). */
#include <errno.h>
#include "landlock-uapi.h"
#include <stdlib.h>
#include <string.h>

#include "ruleset.h"

/* The rights each ABI added (Documentation/userspace-api/landlock.rst); 7 added logging flags, no rights. */
#define FS_ABI1 (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | \
                 LL_FS_READ_DIR | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | \
                 LL_FS_MAKE_CHAR | LL_FS_MAKE_DIR | LL_FS_MAKE_REG | \
                 LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK | \
                 LL_FS_MAKE_SYM)
#define FS_FILE (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | \
                 LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)
#define FS_READ (LL_FS_READ_FILE | LL_FS_READ_DIR)

uint64_t ruleset_handled_fs(unsigned abi) {
        uint64_t a = 0;

        if (abi >= 1)
                a |= FS_ABI1;
        if (abi >= 2)
                a |= LL_FS_REFER;
        if (abi >= 3)
                a |= LL_FS_TRUNCATE;
        if (abi >= 5)
                a |= LL_FS_IOCTL_DEV;
        return a;
}

/* Connect only: binding a port inside the job's own network namespace reaches nothing outside it, and test
 * suites listen on ports of their own. */
uint64_t ruleset_handled_net(unsigned abi) {
        return abi >= 4 ? LL_NET_CONNECT_TCP : 0;
}

uint64_t ruleset_scoped(unsigned abi) {
        return abi >= 6 ? LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL : 0;
}

uint64_t ruleset_rule_access(RuleKind kind, unsigned abi, bool is_dir) {
        uint64_t a;

        switch (kind) {
        case RULE_READ:
                a = FS_READ;
                break;
        case RULE_RW:
                a = ruleset_handled_fs(abi) & ~LL_FS_EXECUTE;
                break;
        case RULE_DEV:
                a = LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_TRUNCATE |
                    LL_FS_IOCTL_DEV | (is_dir ? LL_FS_READ_DIR : 0);
                break;
        case RULE_EXEC:
                a = LL_FS_EXECUTE;
                break;
        default:
                return 0;
        }
        a &= ruleset_handled_fs(abi);
        return is_dir ? a : a & FS_FILE;
}

static bool path_ok(const char *p) {
        size_t n = strlen(p);

        if (p[0] != '/' || n >= 4096)
                return false;
        for (const char *s = p; (s = strstr(s, "..")); s += 2)
                if ((s == p || s[-1] == '/') && (s[2] == '/' || s[2] == '\0'))
                        return false;
        return true;
}

static int parse_uint(const char *s, unsigned long max, unsigned long *ret) {
        char *end;
        unsigned long v;

        if (!s || *s < '0' || *s > '9')
                return -EINVAL;
        errno = 0;
        v = strtoul(s, &end, 10);
        if (errno || *end || v > max)
                return -EINVAL;
        *ret = v;
        return 0;
}

int ruleset_parse(int argc, char **argv, Ruleset *ret, const char **ret_error) {
        static const struct {
                const char *opt;
                RuleKind kind;
        } path_opts[] = {
                { "--read", RULE_READ }, { "--rw", RULE_RW }, { "--dev", RULE_DEV }, { "--exec", RULE_EXEC },
        };
        Ruleset rs = { .channel = -1 };
        int i;

        for (i = 1; i < argc; i++) {
                const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
                unsigned long n;
                bool matched = false;

                if (strcmp(o, "--") == 0)
                        break;
                if (!v)
                        return *ret_error = "an option without its value", -EINVAL;
                i++;
                if (strcmp(o, "--abi") == 0) {
                        if (parse_uint(v, RULESET_ABI_MAX, &n) < 0 || n == 0)
                                return *ret_error = "--abi: not an ABI this pond-init knows", -EINVAL;
                        rs.abi = (unsigned) n;
                        continue;
                }
                if (strcmp(o, "--channel") == 0) {
                        if (parse_uint(v, 1023, &n) < 0 || rs.channel >= 0)
                                return *ret_error = "--channel: not a file descriptor", -EINVAL;
                        rs.channel = (int) n;
                        continue;
                }
                if (strcmp(o, "--connect") == 0 && strcmp(v, "any") == 0) {
                        rs.connect_any = true;
                        continue;
                }
                if (strcmp(o, "--connect") == 0) {
                        if (parse_uint(v, 65535, &n) < 0 || n == 0)
                                return *ret_error = "--connect: not a TCP port", -EINVAL;
                        if (rs.n_ports >= RULESET_PORTS_MAX)
                                return *ret_error = "--connect: too many ports", -EINVAL;
                        rs.ports[rs.n_ports++] = (uint16_t) n;
                        continue;
                }
                for (size_t k = 0; k < sizeof path_opts / sizeof path_opts[0]; k++)
                        if (strcmp(o, path_opts[k].opt) == 0) {
                                if (!path_ok(v))
                                        return *ret_error = "a path must be absolute and without \"..\"", -EINVAL;
                                if (rs.n_rules >= RULESET_PATHS_MAX)
                                        return *ret_error = "too many paths", -EINVAL;
                                rs.rules[rs.n_rules++] = (Rule) { .kind = path_opts[k].kind, .path = v };
                                matched = true;
                        }
                if (!matched)
                        return *ret_error = "unknown option", -EINVAL;
        }
        if (rs.abi == 0 && (rs.n_rules > 0 || rs.n_ports > 0 || rs.connect_any))
                return *ret_error = "--abi is required with rules", -EINVAL;
        if (rs.connect_any && rs.n_ports > 0)
                return *ret_error = "--connect any and ports together", -EINVAL;
        if (i >= argc || i + 1 >= argc)
                return *ret_error = "no command after \"--\"", -EINVAL;
        rs.argv = argv + i + 1;
        *ret = rs;
        return 0;
}

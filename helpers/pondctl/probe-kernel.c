/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* probe-kernel.c: the kernel and host features a sandbox leans on, each checked by using it rather than
 * by reading a version number: KVM (the API answers), Landlock (the ABI the syscall reports), seccomp
 * (filter mode and its actions), user namespaces (a child really unshares one), nftables (nft lists the
 * ruleset) and systemd (the manager answers on the system bus). */
#include <fcntl.h>
#include <linux/kvm.h>
#include <linux/landlock.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>

#include "basic/fileio.h"
#include "basic/process-util.h"
#include "basic/string-util.h"
#include "probe.h"
#include "runtime/runtime.h"

static void feature_ok(ProbeFeature *f, char *detail) {
        f->available = true;
        f->detail = detail;
}

static void feature_absent(ProbeFeature *f, char *reason) {
        f->available = false;
        f->reason = reason ?: strdup("(out of memory)");
}

void probe_kvm(ProbeFeature *ret) {
        _cleanup_close_ int fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
        int v;

        *ret = (ProbeFeature) {};
        if (fd < 0)
                return feature_absent(ret, strdupf("/dev/kvm: %s", strerror(errno)));
        v = ioctl(fd, KVM_GET_API_VERSION, 0);
        if (v != KVM_API_VERSION)
                return feature_absent(ret, strdupf("/dev/kvm answers KVM_GET_API_VERSION with %d", v));
        feature_ok(ret, strdupf("%d", v));
}

void probe_landlock(unsigned *ret_abi, char **ret_reason) {
        long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

        *ret_abi = 0;
        *ret_reason = NULL;
        if (abi > 0) {
                *ret_abi = (unsigned) abi;
                return;
        }
        if (errno == ENOSYS)
                *ret_reason = strdup("the kernel has no Landlock (ENOSYS)");
        else if (errno == EOPNOTSUPP)
                *ret_reason = strdup("Landlock is built in but disabled (lsm= on the kernel command line)");
        else
                *ret_reason = strdupf("landlock_create_ruleset: %s", strerror(errno));
}

/* Filter mode needs both the prctl interface and the actions pond's profile uses. */
void probe_seccomp(ProbeFeature *ret) {
        _cleanup_free_ char *actions = NULL;
        size_t len;
        int mode, r;

        *ret = (ProbeFeature) {};
        mode = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
        if (mode < 0)
                return feature_absent(ret, strdupf("prctl(PR_GET_SECCOMP): %s", strerror(errno)));
        r = read_full_file("/proc/sys/kernel/seccomp/actions_avail", 4096, &actions, &len);
        if (r < 0)
                return feature_absent(ret, strdupf("/proc/sys/kernel/seccomp/actions_avail: %s",
                                                         strerror(-r)));
        actions[strcspn(actions, "\n")] = 0;
        if (!strstr(actions, "errno") || !strstr(actions, "kill_process"))
                return feature_absent(ret, strdupf("filter actions errno and kill_process needed, "
                                                         "the kernel has: %s", actions));
        feature_ok(ret, TAKE_PTR(actions));
}

void probe_userns(ProbeFeature *ret) {
        _cleanup_(sigkill_waitp) PidRef child = PIDREF_NULL;
        _cleanup_free_ char *max = NULL;
        siginfo_t si;
        size_t len;
        int r;

        *ret = (ProbeFeature) {};
        if (read_full_file("/proc/sys/user/max_user_namespaces", 64, &max, &len) < 0)
                return feature_absent(ret, strdup("/proc/sys/user/max_user_namespaces is unreadable"));
        max[strcspn(max, "\n")] = 0;
        if (strtoull(max, NULL, 10) == 0)
                return feature_absent(ret, strdup("user.max_user_namespaces is 0"));
        /* A multi-threaded process cannot unshare a user namespace; a fresh child can, if anyone can. */
        r = safe_fork("(pond-userns)", FORK_RESET_SIGNALS | FORK_DEATHSIG | FORK_CLOSE_ALL_FDS, &child);
        if (r < 0)
                return feature_absent(ret, strdupf("fork: %s", strerror(-r)));
        if (r == 0)
                _exit(unshare(CLONE_NEWUSER) < 0 ? (errno & 0x7f) ?: 1 : 0);
        r = pidref_wait(&child, USEC_INFINITY, &si);
        if (r < 0)
                return feature_absent(ret, strdupf("waitpid: %s", strerror(-r)));
        if (!siginfo_exited_ok(&si))
                return feature_absent(ret, strdupf("unshare(CLONE_NEWUSER): %s",
                                                         si.si_code == CLD_EXITED ? strerror(si.si_status)
                                                                                  : "child killed"));
        feature_ok(ret, strdupf("max_user_namespaces=%s", max));
}

/* pond loads its rules through the same netlink interface nft uses; listing the ruleset proves the
 * nf_tables subsystem answers and that this process may talk to it. */
void probe_nftables(ProbeFeature *ret) {
        _cleanup_free_ char *path = NULL, *version = NULL, *out = NULL;
        int r;

        *ret = (ProbeFeature) {};
        if (find_binary("nft", &path) < 0)
                return feature_absent(ret, strdup("nft is not installed"));
        char *vargv[] = { path, (char *) "--version", NULL };
        if (runtime_exec_output(vargv, 10 * 1000 * 1000, &version) == 0)
                version[strcspn(version, "\n")] = 0;
        char *largv[] = { path, (char *) "list", (char *) "tables", NULL };
        r = runtime_exec_output(largv, 10 * 1000 * 1000, &out);
        if (r != 0) {
                if (out)
                        out[strcspn(out, "\n")] = 0;
                return feature_absent(ret, strdupf(
                        "`nft list tables` failed (%s): %s", r < 0 ? strerror(-r) : "non-zero exit",
                        out && *out ? out : geteuid() != 0 ? "not root" : "?"));
        }
        feature_ok(ret, TAKE_PTR(version) ?: strdup("nft"));
}

void probe_systemd(ProbeFeature *ret) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        sd_bus_error error = SD_BUS_ERROR_NULL;
        char *version = NULL;
        int r;

        *ret = (ProbeFeature) {};
        if (sd_booted() <= 0)
                return feature_absent(ret, strdup("no systemd as PID 1"));
        r = sd_bus_open_system(&bus);
        if (r < 0)
                return feature_absent(ret, strdupf(
                        "systemd is PID 1 but the system bus is unreachable: %s", strerror(-r)));
        r = sd_bus_get_property_string(bus, "org.freedesktop.systemd1", "/org/freedesktop/systemd1",
                                       "org.freedesktop.systemd1.Manager", "Version", &error, &version);
        if (r < 0) {
                feature_absent(ret, strdupf("the manager's Version property: %s",
                                                  error.message ?: strerror(-r)));
                sd_bus_error_free(&error);
                return;
        }
        feature_ok(ret, version);
}

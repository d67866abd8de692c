/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-probe.c: `pondctl probe [--json]`: runs the host probe and prints what this host can really enforce
 * and the capabilities it would advertise (text, or the JSON document dispatch-check --worker reads). */
#include <getopt.h>

#include "ctl.h"
#include "ctl-probe.h"
#include "probe.h"

int ctl_verb_probe(int argc, char *argv[]) {
        static const struct option options[] = {
                { "json", no_argument, NULL, 'j' },
                {}
        };
        _cleanup_(host_probe_freep) HostProbe *p = NULL;
        _cleanup_json_ json_object *o = NULL;
        bool json = false;
        int c, r;

        optind = 0;
        while ((c = getopt_long(argc, argv, "", options, NULL)) >= 0)
                switch (c) {
                case 'j': json = true; break;
                default: return CTL_EXIT_ERROR;
                }
        if (optind != argc)
                return ctl_fail(CTL_EXIT_ERROR, "probe takes no arguments; see pondctl --help.");
        /* Trivial containers, nft and the cgroup checks need root; without it they report absent, which is
         * honest but not what this host could do. */
        if (geteuid() != 0)
                log_warning("Not running as root: backends, nftables and cgroups will likely show as "
                            "unusable.");
        r = host_probe(NULL, &p);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Failed to probe the host: %m");
        if (!json) {
                host_probe_print(p, stdout);
                return CTL_EXIT_OK;
        }
        r = host_probe_to_json(p, &o);
        if (r < 0)
                return ctl_fail_errno(CTL_EXIT_ERROR, r, "Failed to format the probe: %m");
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
        return CTL_EXIT_OK;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* job-egress.c: what is particular to the job's CONNECT proxy, pond-egress@ID.service (allowlist posture
 * only): its configuration, the policy's defaults (policy/egress.json: allow_hosts, allowed_ports) plus
 * the job's allow_hosts, checked with the proxy's own parser (egress-job-config.h). The contract it
 * shares with the broker is job-sidecar.c's. */
#include <string.h>

#include "basic/dirs.h"
#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "job.h"
#include "policy/policy-file.h"
#include "sidecar/egress-job-config.h"

/* The operator's SYSCONFDIR/pond/egress.json (the site's real registries and git hosts) replaces the
 * shipped policy/egress.json, which names placeholders only (policy-file.h). */
static int load_policy(json_object **ret, char **ret_error) {
        _cleanup_free_ char *path = NULL, *buf = NULL, *err = NULL;
        size_t len;
        int r;

        r = policy_file("egress.json", &path);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return error_set(ret_error, r, "egress policy: cannot look in %s: %s", pond_dir(POND_DIR_CONFIG),
                                 strerror(-r));
        r = read_full_file(path, JSON_STRICT_MAX_BYTES, &buf, &len);
        if (r < 0)
                return error_set(ret_error, r, "egress policy: cannot read %s: %s", path, strerror(-r));
        r = json_parse_strict(buf, len, JSON_STRICT_MAX_BYTES, 4, ret, &err);
        if (r >= 0 && !json_object_is_type(*ret, json_type_object))
                r = -EINVAL;
        if (r < 0)
                return error_set(ret_error, r, "egress policy %s: %s", path, err ?: "not a JSON object");
        return 0;
}

/* The proxy's hosts: the policy's defaults first, then the job's. */
static int allow_hosts(json_object *policy, char *const *job_hosts, json_object **ret) {
        _cleanup_json_ json_object *hosts = json_object_new_array();
        json_object *defaults = NULL;

        if (!hosts)
                return -ENOMEM;
        if (json_object_object_get_ex(policy, "allow_hosts", &defaults))
                for (size_t i = 0; i < json_object_array_length(defaults); i++)
                        if (json_object_array_add(hosts, json_object_get(json_object_array_get_idx(defaults, i))) < 0)
                                return -ENOMEM;
        for (size_t i = 0; job_hosts && job_hosts[i]; i++)
                if (json_object_array_add(hosts, json_object_new_string(job_hosts[i])) < 0)
                        return -ENOMEM;
        *ret = TAKE_PTR(hosts);
        return 0;
}

int job_egress_config(const Job *j, json_object **ret, char **ret_error) {
        _cleanup_json_ json_object *policy = NULL, *c = NULL, *hosts = NULL;
        json_object *ports = NULL;
        int r;

        *ret = NULL;
        if (j->input.resolved->net != NET_ALLOWLIST)
                return 0;
        r = load_policy(&policy, ret_error);
        if (r < 0)
                return r;
        /* The allowed ports are the policy's, never the job's. */
        if (!json_object_object_get_ex(policy, "allowed_ports", &ports))
                return error_set(ret_error, -EINVAL, "egress policy: 'allowed_ports' is required.");
        r = allow_hosts(policy, j->input.spec->sandbox.allow_hosts, &hosts);
        if (r < 0)
                return r;
        c = json_object_new_object();
        if (!c ||
            json_object_object_add(c, "job_id", json_object_new_string(j->paths.id)) < 0 ||
            json_object_object_add(c, "allow_hosts", TAKE_PTR(hosts)) < 0 ||
            json_object_object_add(c, "allowed_ports", json_object_get(ports)) < 0 ||
            json_object_object_add(c, "stats_file",
                                   json_object_new_string(j->paths.sidecars[POND_SIDECAR_EGRESS].stats)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

int job_egress_check(const char *text, size_t len, char **ret_error) {
        EgressJobConfig parsed = {};
        int r;

        r = egress_job_config_parse(text, len, &parsed, ret_error);
        egress_job_config_done(&parsed);
        return r;
}

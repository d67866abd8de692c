/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nft.c: the job's nftables table through libnftables: the template (nft/job.nft) rendered with the job's
 * names, addresses and ports, loaded as one transaction (all rules or none), and deleted with the job. */
#include <arpa/inet.h>
#include <nftables/libnftables.h>
#include <string.h>

#include "basic/errmsg.h"
#include "basic/fileio.h"
#include "basic/log.h"
#include "net/net.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct nft_ctx *, nft_ctx_free);

/* Replaces every @KEY@ in *text by value (keys and values are pond's own, never job input). */
static int substitute(char **text, const char *key, const char *value) {
        char *out = NULL, *p;
        size_t n = 0;
        FILE *f = open_memstream(&out, &n);

        if (!f)
                return -ENOMEM;
        for (p = *text; *p;) {
                char *hit = strstr(p, key);
                if (!hit) {
                        fputs(p, f);
                        break;
                }
                fwrite(p, 1, (size_t) (hit - p), f);
                fputs(value, f);
                p = hit + strlen(key);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        free(*text);
        *text = out;
        return 0;
}

static int run(const char *cmd, char **ret_error) {
        _cleanup_(nft_ctx_freep) struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);

        if (!nft)
                return -ENOMEM;
        if (nft_ctx_buffer_output(nft) < 0 || nft_ctx_buffer_error(nft) < 0)
                return -ENOMEM;
        if (nft_run_cmd_from_buffer(nft, cmd) != 0)
                return error_set(ret_error, -EIO, "nftables refused the job's rules: %s",
                                 nft_ctx_get_error_buffer(nft));
        return 0;
}

int nft_job_load(const char *template_path, const JobNet *net, const uint16_t *ports, size_t n_ports,
                 char **ret_error) {
        _cleanup_free_ char *text = NULL;
        char host[INET_ADDRSTRLEN], job[INET_ADDRSTRLEN], list[128] = "";
        int r;

        if (n_ports > 8)
                return error_set(ret_error, -E2BIG, "too many ports to allow");
        r = read_full_file(template_path, 64 * 1024, &text, NULL);
        if (r < 0)
                return error_set(ret_error, r, "cannot read %s: %s", template_path, strerror(-r));
        inet_ntop(AF_INET, &net->lease.host_addr, host, sizeof host);
        inet_ntop(AF_INET, &net->lease.job_addr, job, sizeof job);
        for (size_t i = 0; i < n_ports; i++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%u", i ? ", " : "", ports[i]);
        if ((r = substitute(&text, "@TABLE@", net->table)) < 0 ||
            (r = substitute(&text, "@IFNAME@", net->host_ifname)) < 0 ||
            (r = substitute(&text, "@HOST_ADDR@", host)) < 0 || (r = substitute(&text, "@JOB_ADDR@", job)) < 0)
                return r;
        /* No sidecar, no port: the set stays empty and the job reaches nothing at all. */
        if (n_ports > 0) {
                _cleanup_free_ char *all = NULL;
                if (asprintf(&all, "%s\nadd element inet %s sidecar_ports { %s }\n", text, net->table, list) < 0)
                        return -ENOMEM;
                free(text);
                text = TAKE_PTR(all);
        }
        return run(text, ret_error);
}

int nft_job_remove(const char *table) {
        _cleanup_free_ char *cmd = NULL;
        _cleanup_(nft_ctx_freep) struct nft_ctx *nft = nft_ctx_new(NFT_CTX_DEFAULT);

        if (!nft || asprintf(&cmd, "delete table inet %s", table) < 0)
                return -ENOMEM;
        if (nft_ctx_buffer_output(nft) < 0 || nft_ctx_buffer_error(nft) < 0)
                return -ENOMEM;
        /* A table that is not there is what we want: only other failures count. */
        if (nft_run_cmd_from_buffer(nft, cmd) != 0 && !strstr(nft_ctx_get_error_buffer(nft), "No such file"))
                return log_debug_errno(EIO, "Cannot delete nft table %s: %s", table, nft_ctx_get_error_buffer(nft));
        return 0;
}

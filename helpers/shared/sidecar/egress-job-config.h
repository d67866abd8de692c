/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* egress-job-config.h: pond-egress's per-job configuration, one JSON object (docs/egress.md). The
 * supervisor builds it once, checks it with this parser at acceptance and again before writing it; the
 * proxy gets the file as its credential config.json and reads it with the same parser. */
#pragma once

#include <stdint.h>

#include "sidecar/egress-allow.h"

#define EGRESS_JOB_PORTS_MAX 32
#define EGRESS_JOB_CONFIG_MAX_BYTES (1024 * 1024)

typedef struct EgressJobConfig {
        char *job_id;
        char *listen;           /* "ADDR:PORT"; NULL until the supervisor knows the job's address */
        EgressAllow allow;      /* allow_hosts: the policy's defaults and the job's own */
        uint16_t ports[EGRESS_JOB_PORTS_MAX]; /* allowed_ports: the policy's; default 443 */
        size_t n_ports;
        bool allow_ip_literals;
        char *stats_file;       /* absolute; NULL: none */
} EgressJobConfig;

/* Strict: unknown keys, duplicate keys, wrong types and values out of bounds are refused with a message
 * naming the field; every allow_hosts entry must be a host name or *.domain wildcard. On failure *ret is
 * untouched. */
int egress_job_config_parse(const char *text, size_t len, EgressJobConfig *ret, char **ret_error);
int egress_job_config_load(const char *path, EgressJobConfig *ret, char **ret_error);
void egress_job_config_done(EgressJobConfig *c);

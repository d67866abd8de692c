/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-probe.h: `pondctl probe`, what this host can really enforce (ctl-probe.c, on probe.h). */
#pragma once

#include <json-c/json.h>

int ctl_verb_probe(int argc, char *argv[]);
/* The imported images present here, [{digest, names}] (never NULL but for lack of memory). */
json_object *ctl_probe_images_json(void);
/* The tags this worker carries, as pond-run checks them (worker.json's "tags", or the default when it has
 * none): a JSON array of strings; an unreadable worker.json is logged and carries none. */
json_object *ctl_probe_tags_json(void);

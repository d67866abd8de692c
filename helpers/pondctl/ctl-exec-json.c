/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* ctl-exec-json.c: `pondctl exec --json` (docs/man/pondctl.1.md): the call's stdout and stderr are kept
 * instead of written through, and one JSON object on stdout says all of it: the command, its exit status
 * (128 + N for signal N), whether it timed out or its output was cut at the cap, both streams (text where
 * they are UTF-8, else base64 under stdout_base64 / stderr_base64), the call's duration as pondctl saw it,
 * or why there is no status (refused: true where pond refused the call; false where the job ended under
 * it). */
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "basic/string-util.h"
#include "basic/macro.h"
#include "console/console.h"
#include "ctl.h"

int ctl_exec_capture_add(CtlExecCapture *c, int stream, const char *buf, size_t n) {
        char *p;

        if (n == 0)
                return 0;
        p = realloc(c->data[stream], c->len[stream] + n);
        if (!p)
                return -ENOMEM;
        memcpy(p + c->len[stream], buf, n);
        c->data[stream] = p;
        c->len[stream] += n;
        return 0;
}

void ctl_exec_capture_done(CtlExecCapture *c) {
        for (int i = 0; i < 2; i++)
                free(c->data[i]);
        *c = (CtlExecCapture) {};
}

static int add_stream(json_object *o, const char *name, const char *data, size_t len) {
        _cleanup_free_ char *b64 = NULL, *key = NULL;
        size_t size;

        if (utf8_valid_prefix(data ?: "", len) == len)
                return json_object_object_add(o, name, json_object_new_string_len(data ?: "", (int) len));
        size = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
        b64 = malloc(size);
        key = strdupf("%s_base64", name);
        if (!b64 || !key)
                return -ENOMEM;
        sodium_bin2base64(b64, size, (const unsigned char *) data, len, sodium_base64_VARIANT_ORIGINAL);
        return json_object_object_add(o, key, json_object_new_string(b64));
}

int ctl_exec_json_print(const CtlExecCapture *c, const char *id, char **argv, const CtlExecEnd *end) {
        _cleanup_json_ json_object *o = json_object_new_object(), *args = json_object_new_array();
        uint64_t ms = (clock_usec(CLOCK_MONOTONIC) - c->started_usec) / 1000;

        if (!o || !args)
                return -ENOMEM;
        for (char **a = argv; *a; a++)
                json_object_array_add(args, json_object_new_string(*a));
        json_object_object_add(o, "job_id", json_object_new_string(id));
        json_object_object_add(o, "argv", json_object_get(args));
        if (end->reason) {
                json_object_object_add(o, "exit_status", NULL);
                json_object_object_add(o, "refused", json_object_new_boolean(end->refused));
                json_object_object_add(o, "reason", json_object_new_string(end->reason));
        } else {
                json_object_object_add(o, "exit_status", json_object_new_int(end->status));
                json_object_object_add(o, "timed_out",
                                       json_object_new_boolean(!!(end->flags & CONSOLE_EXIT_TIMED_OUT)));
                json_object_object_add(o, "truncated",
                                       json_object_new_boolean(!!(end->flags & CONSOLE_EXIT_TRUNCATED)));
        }
        if (add_stream(o, "stdout", c->data[0], c->len[0]) < 0 || add_stream(o, "stderr", c->data[1], c->len[1]) < 0)
                return -ENOMEM;
        json_object_object_add(o, "duration_ms", json_object_new_uint64(ms));
        ctl_json_print(o);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* probe-backend.c: whether each backend really runs a container here. For every runtime provider: its
 * binary (the provider's locate()), the first line of its --version, and a trivial `true` container run
 * by the provider's probe() in a scratch directory of its own (runtime-probe.c, runsc.c, kata.c). */
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/string-util.h"
#include "probe.h"
#include "runtime/runtime.h"

#define PROBE_DEFAULT_TIMEOUT_USEC (30ULL * 1000 * 1000)
#define PROBE_VERSION_USEC (10ULL * 1000 * 1000)

static void backend_version(ProbeBackendResult *r) {
        _cleanup_free_ char *out = NULL;
        char *argv[] = { r->path, (char *) "--version", NULL };

        if (runtime_exec_output(argv, PROBE_VERSION_USEC, &out) == 0)
                r->version = runtime_output_line(out, false);
}

static int backend_locate(const RuntimeProvider *provider, const ProbeOptions *o, ProbeBackendResult *r) {
        if (!o->binary)
                return provider->locate(&r->path, &r->reason);
        if (find_binary(o->binary, &r->path) >= 0)
                return 0;
        r->reason = strdupf("%s not found or not executable", o->binary);
        return -ENOENT;
}

void probe_backend(const RuntimeProvider *provider, const ProbeOptions *o, ProbeBackendResult *r) {
        _cleanup_(runtime_probe_done) RuntimeProbe run = {};
        uint64_t timeout = o->timeout_usec ?: PROBE_DEFAULT_TIMEOUT_USEC;
        char tmp[] = "/tmp/pond-probe.XXXXXX";

        *r = (ProbeBackendResult) { .name = provider->name };
        if (backend_locate(provider, o, r) < 0)
                return;
        r->present = true;
        backend_version(r);
        if (!mkdtemp(tmp)) {
                r->reason = strdupf("cannot create a temporary directory: %s", strerror(errno));
                return;
        }
        provider->probe(r->path, tmp, timeout, &run);
        r->works = run.works;
        r->platform = TAKE_PTR(run.platform);
        r->reason = TAKE_PTR(run.reason);
        if (rm_rf_at(AT_FDCWD, tmp) < 0)
                log_debug("probe: could not remove %s", tmp);
}

void probe_backend_done(ProbeBackendResult *r) {
        free(r->path);
        free(r->version);
        free(r->platform);
        free(r->reason);
        *r = (ProbeBackendResult) { .name = r->name };
}

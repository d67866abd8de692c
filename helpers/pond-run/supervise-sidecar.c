/* supervise-sidecar.c: what the job's sidecar units (pond-egress@ID, pond-broker@ID) have in common: they
 * start while the runtime creates the container, the payload waits for them (fail closed), and at the end
 * they are stopped (SIGTERM: they write their totals), their totals read, their directories removed. */
#include <fcntl.h>
#include <string.h>

#include "fileio.h"
#include "json-strict.h"
#include "log.h"
#include "supervise-launch.h"

int sidecar_wait(Job *j, UnitStart **starting, const char *what) {
        int r;

        if (!*starting)
                return 0;
        r = unit_start_finish(j->bus, TAKE_PTR(*starting));
        if (r < 0) {
                free(j->reason);
                if (asprintf(&j->reason, "the %s did not start (see the journal of its unit)", what) < 0)
                        j->reason = NULL;
                return log_error_errno(r, "The %s of %s did not start: %m", what, j->id);
        }
        return 0;
}

int sidecar_stop(sd_bus *bus, const char *unit, const char *runtime_dir, const char *config_dir,
                 json_object **ret_stats) {
        _cleanup_free_ char *stats = NULL, *buf = NULL;
        size_t len;
        int r;

        if (asprintf(&stats, "%s/stats.json", runtime_dir) < 0)
                return -ENOMEM;
        r = bus ? unit_stop(bus, unit) : -ENOTCONN;
        if (ret_stats && read_full_file(stats, 64 * 1024, &buf, &len) >= 0)
                (void) json_parse_strict(buf, len, 64 * 1024, 4, ret_stats, NULL);
        (void) rm_rf_at(AT_FDCWD, runtime_dir);
        (void) rm_rf_at(AT_FDCWD, config_dir);
        return r;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* broker-server.c: the life of pond-broker: libmicrohttpd on the listening socket (its own threads), an
 * sd-event loop in the main thread for SIGTERM/SIGINT and the cost ceiling, and the stats file. The
 * ceiling protocol: the stats file is rewritten with "ceiling_hit": true, sd_notify STATUS= says why,
 * a broker-ceiling record goes to the journal, requests keep getting 402 for ceiling_grace_sec, then the
 * broker exits with BROKER_EXIT_CEILING (3) so the supervisor cancels the job. */
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "basic/fileio.h"
#include "basic/log.h"
#include "basic/signal-util.h"
#include "broker-internal.h"

int broker_stats_format(const char *job_id, uint64_t max_cost_cents, const BrokerStats *s, char **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        const char *text;
        char *copy;
        int fail = 0;

        if (!o)
                return -ENOMEM;
        fail |= json_object_object_add(o, "job_id", json_object_new_string(job_id ?: ""));
        fail |= json_object_object_add(o, "requests", json_object_new_uint64(s->requests));
        fail |= json_object_object_add(o, "refused", json_object_new_uint64(s->refused));
        fail |= json_object_object_add(o, "forwarded", json_object_new_uint64(s->forwarded));
        fail |= json_object_object_add(o, "input_tokens", json_object_new_uint64(s->input_tokens));
        fail |= json_object_object_add(o, "output_tokens", json_object_new_uint64(s->output_tokens));
        fail |= json_object_object_add(o, "cost_cents",
                                       json_object_new_double((double) s->cost / BROKER_NANOCENTS_PER_CENT));
        fail |= json_object_object_add(o, "cost_nanocents", json_object_new_uint64(s->cost));
        fail |= json_object_object_add(o, "max_cost_cents", json_object_new_uint64(max_cost_cents));
        fail |= json_object_object_add(o, "bytes_up", json_object_new_uint64(s->bytes_up));
        fail |= json_object_object_add(o, "bytes_down", json_object_new_uint64(s->bytes_down));
        fail |= json_object_object_add(o, "ceiling_hit", json_object_new_boolean(s->ceiling_hit));
        if (s->ceiling_hit)
                fail |= json_object_object_add(o, "ceiling_reason", json_object_new_string(s->ceiling_reason));
        if (fail)
                return -ENOMEM;
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
        if (!text || asprintf(&copy, "%s\n", text) < 0)
                return -ENOMEM;
        *ret = copy;
        return 0;
}

static int write_stats(BrokerServer *s) {
        const char *path = s->options->stats_file, *slash;
        _cleanup_free_ char *text = NULL, *dir = NULL;
        _cleanup_close_ int dfd = -EBADF;
        BrokerStats copy;
        int r;

        if (!path)
                return 0;
        pthread_mutex_lock(&s->lock);
        copy = s->stats;
        pthread_mutex_unlock(&s->lock);
        r = broker_stats_format(s->options->config->job_id, s->options->config->max_cost_cents, &copy, &text);
        if (r < 0)
                return r;
        slash = strrchr(path, '/');
        dir = slash ? strndup(path, (size_t) (slash - path) + 1) : strdup(".");
        if (!dir)
                return -ENOMEM;
        dfd = open(dir, O_DIRECTORY | O_CLOEXEC | O_RDONLY);
        if (dfd < 0)
                return -errno;
        return write_file_atomic_at(dfd, slash ? slash + 1 : path, text, strlen(text), 0644);
}

void broker_server_ceiling_locked(BrokerServer *s, const char *reason) {
        uint64_t one = 1;

        s->stats.ceiling_hit = true;
        snprintf(s->stats.ceiling_reason, sizeof s->stats.ceiling_reason, "%s", reason);
        (void) broker_audit(BROKER_EVENT_CEILING, &(BrokerAuditRecord) {
                .job_id = s->options->config->job_id, .reason = reason, .cost = s->budget.spent });
        (void) !write(s->ceiling_fd, &one, sizeof one);
}

static int on_exit_timer(sd_event_source *es, uint64_t usec, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(es), 0);
}

static int on_ceiling(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        BrokerServer *s = userdata;
        uint64_t v, now;
        int r;

        if (read(fd, &v, sizeof v) != sizeof v)
                return 0;
        r = write_stats(s);
        if (r < 0)
                log_warning_errno(r, "Failed to write the stats file: %m");
        pthread_mutex_lock(&s->lock);
        (void) sd_notifyf(false, "STATUS=" BROKER_STATUS_CEILING ": %s", s->stats.ceiling_reason);
        pthread_mutex_unlock(&s->lock);
        (void) sd_event_source_set_enabled(es, SD_EVENT_OFF);
        r = sd_event_now(sd_event_source_get_event(es), CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;
        return sd_event_add_time(sd_event_source_get_event(es), NULL, CLOCK_MONOTONIC,
                                 now + (uint64_t) s->options->ceiling_grace_sec * 1000000ULL, 0, on_exit_timer, s);
}

static int on_signal(sd_event_source *es, const struct signalfd_siginfo *si, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(es), 0);
}

static struct MHD_Daemon *start_daemon(BrokerServer *s) {
        const BrokerOptions *o = s->options;

        return MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL,
                                0, NULL, NULL, broker_http_handle, s,
                                MHD_OPTION_LISTEN_SOCKET, (MHD_socket) o->listen_fd,
                                MHD_OPTION_URI_LOG_CALLBACK, broker_http_uri_log, s,
                                MHD_OPTION_NOTIFY_COMPLETED, broker_http_completed, s,
                                MHD_OPTION_CONNECTION_LIMIT, (unsigned) o->config->max_connections,
                                MHD_OPTION_CONNECTION_TIMEOUT, (unsigned) 120,
                                MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t) (64 * 1024),
                                MHD_OPTION_END);
}

static int run_loop(BrokerServer *s, sd_event *e) {
        int r;

        r = sd_event_add_signal(e, NULL, SIGTERM, on_signal, s);
        if (r >= 0)
                r = sd_event_add_signal(e, NULL, SIGINT, on_signal, s);
        if (r >= 0)
                r = sd_event_add_io(e, NULL, s->ceiling_fd, EPOLLIN, on_ceiling, s);
        if (r >= 0) {
                (void) sd_notify(false, "READY=1\nSTATUS=serving");
                r = sd_event_loop(e);
        }
        return r;
}

static void finish(BrokerServer *s) {
        char summary[256];
        int r;

        snprintf(summary, sizeof summary, "%" PRIu64 " requests, %" PRIu64 " refused, %" PRIu64 "+%" PRIu64
                 " tokens%s", s->stats.requests, s->stats.refused, s->stats.input_tokens, s->stats.output_tokens,
                 s->stats.ceiling_hit ? ", cost ceiling reached" : "");
        (void) broker_audit(BROKER_EVENT_STATS, &(BrokerAuditRecord) {
                .job_id = s->options->config->job_id, .reason = summary, .cost = s->stats.cost,
                .input_tokens = s->stats.input_tokens, .output_tokens = s->stats.output_tokens,
                .bytes_up = s->stats.bytes_up, .bytes_down = s->stats.bytes_down });
        r = write_stats(s);
        if (r < 0)
                log_error_errno(r, "Failed to write the stats file '%s': %m", s->options->stats_file);
}

int broker_server_run(const BrokerOptions *o) {
        BrokerServer s = { .options = o, .ceiling_fd = -EBADF };
        struct MHD_Daemon *d = NULL;
        sd_event *e = NULL;
        int r;

        /* Blocked before libmicrohttpd starts its threads, which inherit the mask: only the event loop's
         * signalfd may take SIGTERM, never a default action in a connection thread. */
        r = sigprocmask_many(SIG_BLOCK, NULL, SIGTERM, SIGINT, -1);
        if (r < 0)
                return r;
        signal(SIGPIPE, SIG_IGN);
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return -EIO;
        pthread_mutex_init(&s.lock, NULL);
        broker_budget_init(&s.budget, o->config->max_cost_cents);
        s.ceiling_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        r = s.ceiling_fd < 0 ? -errno : sd_event_new(&e);
        if (r >= 0) {
                d = start_daemon(&s);
                r = d ? 0 : -EADDRNOTAVAIL;
        }
        if (r >= 0)
                r = run_loop(&s, e);
        atomic_store(&s.stopping, true);
        if (d)
                MHD_stop_daemon(d);     /* joins the connection threads: every request is settled */
        finish(&s);
        sd_event_unref(e);
        safe_close(s.ceiling_fd);
        pthread_mutex_destroy(&s.lock);
        curl_global_cleanup();
        if (r < 0)
                return r;
        return s.stats.ceiling_hit ? BROKER_EXIT_CEILING : 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* test-broker-e2e.c: pond-broker end to end on loopback: a fake model API over HTTPS (python3 ssl, a CA
 * made with openssl for this test and trusted by the broker only through --ca-file), the broker binary
 * ($POND_BROKER) in front of it with a real key from a test-only secret file, and a urllib client holding
 * only the dummy key. Checks: the upstream sees the real key and the client never does; allowlist, key,
 * path and TLS-verification refusals; SSE arrives incrementally; usage metered from JSON and SSE; the cost
 * ceiling refuses with 402 before it is crossed and afterwards; stats file and exit status 3; the key is
 * in no log. Each test has its own CA, upstream and broker (the fixture), so each can run alone
 * (TEST_FILTER) and none depends on another's requests. Unprivileged; SKIP without python3, openssl or
 * the binary. */
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>

#include "basic/fileio.h"
#include "basic/json-strict.h"
#include "broker-server.h"
#include "tests.h"

TEST_MAIN();

#define REAL_KEY "sk-ant-REAL-0123456789abcdefSECRET"
#define DUMMY_KEY "pond-dummy-anthropic-7f3a9c2e"
#define DUMMY_OPENAI "pond-dummy-openai-1b2c3d4e5f"
#define JOB "job-broker-e2e"

/* One upstream and one broker in a directory of their own, per test. */
FIXTURE(e2e) {
        char dir[64];
        pid_t server, broker;
        int up_port, br_port;
        int calls;
};
typedef FIXTURE_DATA(e2e) E2e;

static int sh(const char *fmt, ...) _printf_(1, 2);
static int sh(const char *fmt, ...) {
        char cmd[4096];
        va_list ap;
        int r;

        va_start(ap, fmt);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
        vsnprintf(cmd, sizeof cmd, fmt, ap);
#pragma GCC diagnostic pop
        va_end(ap);
        r = system(cmd);
        return WIFEXITED(r) ? WEXITSTATUS(r) : 128;
}

static void write_text(const E2e *e, const char *name, const char *text) {
        char p[256];
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", e->dir, name);
        f = fopen(p, "we");
        if (f) {
                fputs(text, f);
                fclose(f);
        }
}

static char *read_text(const E2e *e, const char *name) {
        char p[256], *t = NULL;
        size_t n;

        snprintf(p, sizeof p, "%s/%s", e->dir, name);
        return read_full_file(p, 16 << 20, &t, &n) < 0 ? NULL : t;
}

/* Prints a log of the fixture as TAP comments: why the broker or upstream did not come up. */
static void show(const E2e *e, const char *name) {
        _cleanup_free_ char *text = read_text(e, name);

        TEST_LOG("--- %s ---\n%s", name, text ?: "(none)");
}

static pid_t spawn(const E2e *e, char *const argv[], const char *log) {
        pid_t pid;

        fflush(stdout);         /* what the test printed must not be written twice */
        pid = fork();

        if (pid == 0) {
                char p[256];
                snprintf(p, sizeof p, "%s/%s", e->dir, log);
                /* not "e": these must survive the exec */
                if (!freopen(p, "w", stderr) || !freopen("/dev/null", "w", stdout))
                        _exit(126);
                setenv("POND_BROKER_TEST", "1", 1);
                execvp(argv[0], argv);
                _exit(127);
        }
        return pid;
}

static bool wait_port(int port) {
        for (int i = 0; i < 100; i++) {
                if (sh("python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", %d), 1)' 2>/dev/null",
                       port) == 0)
                        return true;
                usleep(100 * 1000);
        }
        return false;
}

static int make_certs(const E2e *e) {
        return sh("cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
                  "-subj /CN=pond-test-ca >/dev/null 2>&1 && "
                  "openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 "
                  ">/dev/null 2>&1 && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ext && "
                  "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem "
                  "-days 2 -extfile ext >/dev/null 2>&1", e->dir);
}

static void write_config(const E2e *e) {
        char c[4096];

        snprintf(c, sizeof c,
                 "{\"job_id\": \"" JOB "\", \"listen\": \"127.0.0.1:%d\", \"max_cost_cents\": 5,\n"
                 " \"prices\": \"%s/prices.json\",\n"
                 " \"credentials\": [\n"
                 "  {\"name\": \"anthropic\", \"upstream\": \"https://127.0.0.1:%d\",\n"
                 "   \"inject\": {\"header\": \"x-api-key\", \"format\": \"{key}\"},\n"
                 "   \"allow\": [\"POST /v1/messages\", \"GET /v1/models\", \"GET /v1/models/*\"],\n"
                 "   \"dummy_key\": \"" DUMMY_KEY "\",\n"
                 "   \"env\": {\"key\": \"ANTHROPIC_API_KEY\", \"base_url\": \"ANTHROPIC_BASE_URL\"}},\n"
                 "  {\"name\": \"openai\", \"upstream\": \"https://127.0.0.1:%d/\",\n"
                 "   \"inject\": {\"header\": \"Authorization\", \"format\": \"Bearer {key}\"},\n"
                 "   \"allow\": [\"POST /v1/chat/completions\"],\n"
                 "   \"dummy_key\": \"" DUMMY_OPENAI "\",\n"
                 "   \"env\": {\"key\": \"OPENAI_API_KEY\", \"base_url\": \"OPENAI_BASE_URL\"}},\n"
                 "  {\"name\": \"wronghost\", \"upstream\": \"https://127.0.0.2:%d\",\n"
                 "   \"inject\": {\"header\": \"x-api-key\", \"format\": \"{key}\"},\n"
                 "   \"allow\": [\"GET /v1/models\"], \"dummy_key\": \"" DUMMY_KEY "\",\n"
                 "   \"env\": {\"key\": \"X_API_KEY\", \"base_url\": \"X_BASE_URL\"}}]}\n",
                 e->br_port, e->dir, e->up_port, e->up_port, e->up_port);
        write_text(e, "broker.json", c);
        write_text(e, "prices.json", "{\"input_bytes_per_token\": 1, \"input_overhead_tokens\": 0,\n"
                   " \"default\": {\"input\": 100000, \"output\": 100000},\n"
                   " \"models\": {\"test-model\": {\"input\": 1000, \"output\": 10000}}}\n");
        write_text(e, "real.key", REAL_KEY "\n");
}

static void start_upstream(E2e *e) {
        char a[5][300];

        snprintf(a[0], sizeof a[0], "%s/tests/unit/broker-e2e-upstream.py", POND_SOURCE_ROOT);
        snprintf(a[1], sizeof a[1], "%d", e->up_port);
        snprintf(a[2], sizeof a[2], "%s/srv.pem", e->dir);
        snprintf(a[3], sizeof a[3], "%s/srv.key", e->dir);
        snprintf(a[4], sizeof a[4], "%s/upstream.log", e->dir);
        e->server = spawn(e, (char *[]) { (char *) "python3", a[0], a[1], a[2], a[3], a[4], NULL }, "server.err");
}

static void start_broker(E2e *e, const char *broker) {
        char a[6][300];

        snprintf(a[0], sizeof a[0], "--config=%s/broker.json", e->dir);
        snprintf(a[1], sizeof a[1], "--ca-file=%s/ca.pem", e->dir);
        snprintf(a[2], sizeof a[2], "--stats-file=%s/stats.json", e->dir);
        snprintf(a[3], sizeof a[3], "--secret=anthropic=%s/real.key", e->dir);
        snprintf(a[4], sizeof a[4], "--secret=openai=%s/real.key", e->dir);
        snprintf(a[5], sizeof a[5], "--secret=wronghost=%s/real.key", e->dir);
        e->broker = spawn(e, (char *[]) { (char *) broker, a[0], a[1], a[2], a[3], a[4], a[5],
                                          (char *) "--ceiling-grace=60", (char *) "--debug", NULL }, "broker.err");
}

FIXTURE_SETUP(e2e) {
        const char *broker = getenv("POND_BROKER");

        self->server = self->broker = -1;       /* never kill(0) or kill(-1) in the teardown */
        if (!broker || access(broker, X_OK) < 0)
                TEST_SKIP("POND_BROKER (the pond-broker binary) not set");
        if (sh("python3 -c 'import ssl' 2>/dev/null") != 0 || sh("openssl version >/dev/null 2>&1") != 0)
                TEST_SKIP("needs python3 with ssl and openssl");
        snprintf(self->dir, sizeof self->dir, "/tmp/test-broker-e2e.XXXXXX");
        if (!mkdtemp(self->dir)) {
                self->dir[0] = 0;
                TEST_FAIL_("mkdtemp: %m");
        }
        /* The test's own pid: each test (a process of its own) gets its own ports. */
        self->up_port = 20000 + getpid() % 20000;
        self->br_port = self->up_port + 1;
        ASSERT_EQ(0, make_certs(self));
        write_config(self);
        start_upstream(self);
        start_broker(self, broker);
        ASSERT_TRUE(self->server > 0 && self->broker > 0);
        if (!wait_port(self->up_port) || !wait_port(self->br_port)) {
                show(self, "server.err");
                show(self, "broker.err");
                TEST_FAIL_("the upstream or the broker did not start");
        }
}

FIXTURE_TEARDOWN(e2e) {
        if (self->broker > 0) {
                kill(self->broker, SIGKILL);
                waitpid(self->broker, NULL, 0);
        }
        if (self->server > 0) {
                kill(self->server, SIGKILL);
                waitpid(self->server, NULL, 0);
        }
        if (self->dir[0] && !getenv("POND_TEST_KEEP"))
                (void) sh("rm -rf %s", self->dir);
}

/* One request through the broker; the client's JSON output, parsed. */
static json_object *call(E2e *e, const char *method, const char *path, const char *header, const char *value,
                         const char *body) {
        char out[64], *text;
        json_object *o = NULL;

        snprintf(out, sizeof out, "client-%d.json", ++e->calls);
        if (sh("python3 %s/tests/unit/broker-e2e-client.py '%s' 'http://127.0.0.1:%d%s' '%s' '%s' '%s' > %s/%s",
               POND_SOURCE_ROOT, method, e->br_port, path, header, value, body, e->dir, out) != 0)
                return NULL;
        text = read_text(e, out);
        if (text)
                (void) json_parse_strict(text, strlen(text), 16 << 20, 32, &o, NULL);
        free(text);
        return o;
}

static int status_of(json_object *o) {
        json_object *v;
        return o && json_object_object_get_ex(o, "status", &v) ? json_object_get_int(v) : -1;
}

static const char *body_of(json_object *o) {
        json_object *v;
        return o && json_object_object_get_ex(o, "body", &v) ? json_object_get_string(v) : "";
}

/* One call whose status is all that matters here. */
static int call_status(E2e *e, const char *method, const char *path, const char *header, const char *value,
                       const char *body) {
        _cleanup_json_ json_object *o = call(e, method, path, header, value, body);
        return status_of(o);
}

/* SIGTERM, as systemd stops the unit; the exit status (or -1). */
static int stop_broker(E2e *e) {
        int status = 0;

        if (e->broker <= 0 || kill(e->broker, SIGTERM) < 0 || waitpid(e->broker, &status, 0) != e->broker)
                return -1;
        e->broker = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

#define MSG_BODY(max, stream) "{\"model\": \"test-model\", \"max_tokens\": " max ", " stream \
        "\"messages\": [{\"role\": \"user\", \"content\": \"hello\"}]}"

TEST_F(e2e, messages_json) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *log = NULL;

        o = call(self, "POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY, MSG_BODY("100", ""));
        ASSERT_EQ(200, status_of(o));
        ASSERT_CONTAINS("\"input_tokens\": 100", body_of(o));
        ASSERT_TRUE(!strstr(json_object_to_json_string(o), REAL_KEY));
        ASSERT_TRUE(!strstr(json_object_to_json_string(o), "session=upstream"));    /* Set-Cookie not passed */
        log = read_text(self, "upstream.log");
        ASSERT_CONTAINS("\"x-api-key\": \"" REAL_KEY "\"", log);
        ASSERT_TRUE(!strstr(log, DUMMY_KEY));
        ASSERT_CONTAINS("\"host\": \"127.0.0.1:", log);
}

TEST_F(e2e, messages_sse_incremental) {
        _cleanup_json_ json_object *o = NULL;
        json_object *times;
        double first, last;
        size_t n;

        o = call(self, "POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY, MSG_BODY("100", "\"stream\": true,"));
        ASSERT_EQ(200, status_of(o));
        ASSERT_CONTAINS("message_delta", body_of(o));
        ASSERT_TRUE(json_object_object_get_ex(o, "times", &times));
        n = json_object_array_length(times);
        ASSERT_EQ(5, n);
        first = json_object_get_double(json_object_array_get_idx(times, 0));
        last = json_object_get_double(json_object_array_get_idx(times, n - 1));
        printf("# SSE data lines arrived over %.2f s (server: 5 events, 0.4 s apart)\n", last - first);
        ASSERT_TRUE(last - first >= 1.2);
}

TEST_F(e2e, openai_sse_usage) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *log = NULL;

        o = call(self, "POST", "/openai/v1/chat/completions", "Authorization", "Bearer " DUMMY_OPENAI,
                 "{\"model\": \"test-model\", \"max_tokens\": 100, \"stream\": true, "
                 "\"stream_options\": {\"include_usage\": true}, \"messages\": []}");
        ASSERT_EQ(200, status_of(o));
        ASSERT_CONTAINS("[DONE]", body_of(o));
        log = read_text(self, "upstream.log");
        ASSERT_CONTAINS("\"authorization\": \"Bearer " REAL_KEY "\"", log);
}

TEST_F(e2e, models_and_echo_scrubbed) {
        _cleanup_json_ json_object *o = NULL, *e = NULL;

        o = call(self, "GET", "/anthropic/v1/models", "x-api-key", DUMMY_KEY, "");
        ASSERT_EQ(200, status_of(o));
        e = call(self, "GET", "/anthropic/v1/models/echo", "x-api-key", DUMMY_KEY, "");
        ASSERT_EQ(200, status_of(e));
        ASSERT_CONTAINS("\"seen_key\": \"****", body_of(e));
        ASSERT_TRUE(!strstr(body_of(e), REAL_KEY));
}

TEST_F(e2e, refusals) {
        struct {
                const char *method, *path, *header, *value;
                int status;
        } cases[] = {
                { "POST", "/anthropic/v1/complete", "x-api-key", DUMMY_KEY, 403 },
                { "DELETE", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY, 403 },
                { "POST", "/anthropic/v1/messages", "x-api-key", "pond-dummy-anthropic-WRONG00", 401 },
                { "POST", "/anthropic/v1/messages", "Authorization", "Bearer " DUMMY_KEY, 401 },
                { "GET", "/anthropic/v1/models/../messages", "x-api-key", DUMMY_KEY, 400 },
                { "GET", "/nosuch/v1/models", "x-api-key", DUMMY_KEY, 404 },
        };
        _cleanup_free_ char *log = NULL;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_json_ json_object *o = call(self, cases[i].method, cases[i].path, cases[i].header,
                                                     cases[i].value, cases[i].status == 400 ? "" : MSG_BODY("1", ""));
                EXPECT_EQ(cases[i].status, status_of(o));
                EXPECT_CONTAINS("pond_broker", body_of(o));
        }
        /* None of them reached the upstream. */
        log = read_text(self, "upstream.log");
        ASSERT_TRUE(log == NULL || *log == 0);
}

TEST_F(e2e, tls_verification) {
        _cleanup_json_ json_object *o = NULL;

        /* 127.0.0.2 serves the same certificate, whose name is 127.0.0.1 only. */
        o = call(self, "GET", "/wronghost/v1/models", "x-api-key", DUMMY_KEY, "");
        ASSERT_EQ(502, status_of(o));
        ASSERT_TRUE(!strstr(body_of(o), REAL_KEY));
}

TEST_F(e2e, ceiling) {
        _cleanup_json_ json_object *big = NULL;
        _cleanup_free_ char *stats = NULL;

        /* Spent 0.6 of 5 cents; the worst case of max_tokens 1000 is 10+ cents: refused before crossing. */
        ASSERT_EQ(200, call_status(self, "POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY,
                                   MSG_BODY("10", "")));
        big = call(self, "POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY, MSG_BODY("1000", ""));
        ASSERT_EQ(402, status_of(big));
        ASSERT_CONTAINS("cost ceiling", body_of(big));
        /* And afterwards, even the request that passed a moment ago, and one that costs nothing. */
        ASSERT_EQ(402, call_status(self, "POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY,
                                   MSG_BODY("10", "")));
        ASSERT_EQ(402, call_status(self, "GET", "/anthropic/v1/models", "x-api-key", DUMMY_KEY, ""));
        usleep(300 * 1000);
        stats = read_text(self, "stats.json");
        ASSERT_CONTAINS("\"ceiling_hit\":true", stats);
}

static int64_t stat_of(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_int64(v) : -1;
}

/* Usage metered from a JSON answer and from both SSE dialects; refusals counted; exit 3 at the ceiling. */
TEST_F(e2e, stats_and_exit_at_ceiling) {
        _cleanup_free_ char *stats = NULL;
        _cleanup_json_ json_object *o = NULL;
        json_object *v;

        ASSERT_EQ(200, call_status(self, "POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY,
                                   MSG_BODY("100", "")));
        ASSERT_EQ(200, call_status(self, "POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY,
                                   MSG_BODY("100", "\"stream\": true,")));
        ASSERT_EQ(200, call_status(self, "POST", "/openai/v1/chat/completions", "Authorization",
                                   "Bearer " DUMMY_OPENAI,
                                   "{\"model\": \"test-model\", \"max_tokens\": 100, \"stream\": true, "
                                   "\"stream_options\": {\"include_usage\": true}, \"messages\": []}"));
        ASSERT_EQ(200, call_status(self, "GET", "/anthropic/v1/models", "x-api-key", DUMMY_KEY, ""));
        ASSERT_EQ(403, call_status(self, "POST", "/anthropic/v1/complete", "x-api-key", DUMMY_KEY,
                                   MSG_BODY("1", "")));
        ASSERT_EQ(402, call_status(self, "POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY,
                                   MSG_BODY("1000", "")));
        ASSERT_EQ(BROKER_EXIT_CEILING, stop_broker(self));
        stats = read_text(self, "stats.json");
        ASSERT_TRUE(stats && json_parse_strict(stats, strlen(stats), 1 << 20, 4, &o, NULL) >= 0);
        TEST_LOG("%s", stats);
        EXPECT_EQ(6, stat_of(o, "requests"));
        EXPECT_EQ(2, stat_of(o, "refused"));
        EXPECT_EQ(300, stat_of(o, "input_tokens"));
        EXPECT_EQ(150, stat_of(o, "output_tokens"));
        EXPECT_EQ(1800000000, stat_of(o, "cost_nanocents"));
        ASSERT_TRUE(json_object_object_get_ex(o, "ceiling_hit", &v));
        ASSERT_TRUE(json_object_get_boolean(v));
}

TEST_F(e2e, exit_zero_below_ceiling) {
        _cleanup_free_ char *stats = NULL;

        ASSERT_EQ(200, call_status(self, "POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY,
                                   MSG_BODY("100", "")));
        ASSERT_EQ(0, stop_broker(self));
        stats = read_text(self, "stats.json");
        ASSERT_CONTAINS("\"ceiling_hit\":false", stats);
        ASSERT_CONTAINS("\"requests\":1", stats);
}

TEST_F(e2e, key_in_no_log) {
        _cleanup_free_ char *err = NULL, *stats = NULL;

        ASSERT_EQ(200, call_status(self, "POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY,
                                   MSG_BODY("10", "")));
        ASSERT_EQ(200, call_status(self, "GET", "/anthropic/v1/models/echo", "x-api-key", DUMMY_KEY, ""));
        ASSERT_EQ(402, call_status(self, "POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY,
                                   MSG_BODY("1000", "")));
        ASSERT_EQ(BROKER_EXIT_CEILING, stop_broker(self));
        err = read_text(self, "broker.err");
        stats = read_text(self, "stats.json");
        ASSERT_TRUE(err && stats);
        ASSERT_TRUE(strstr(err, "broker-request") == NULL);   /* MESSAGE form, not field names */
        ASSERT_CONTAINS("-> 200", err);
        ASSERT_CONTAINS("-> 402: cost ceiling", err);
        ASSERT_TRUE(!strstr(err, REAL_KEY) && !strstr(stats, REAL_KEY));
        /* And the journal, where there is one. */
        if (sh("journalctl -q -n1 >/dev/null 2>&1") == 0)
                ASSERT_TRUE(sh("journalctl -q -o export POND_JOB_ID=" JOB " 2>/dev/null | grep -q '" REAL_KEY "'")
                            != 0);
}

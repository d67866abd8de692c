/* test-broker-e2e.c: pond-broker end to end on loopback: a fake model API over HTTPS (python3 ssl, a CA
 * made with openssl for this test and trusted by the broker only through --ca-file), the broker binary
 * ($POND_BROKER) in front of it with a real key from a test-only secret file, and a urllib client holding
 * only the dummy key. Checks: the upstream sees the real key and the client never does; allowlist, key,
 * path and TLS-verification refusals; SSE arrives incrementally; usage metered from JSON and SSE; the cost
 * ceiling refuses with 402 before it is crossed and afterwards; stats file and exit status 3; the key is
 * in no log. Unprivileged; SKIP without python3, openssl or the binary. */
#include <signal.h>
#include <stdarg.h>
#include <sys/wait.h>

#include "broker-server.h"
#include "fileio.h"
#include "json-strict.h"
#include "tests.h"

TEST_MAIN();

#define REAL_KEY "sk-ant-REAL-0123456789abcdefSECRET"
#define DUMMY_KEY "pond-dummy-anthropic-7f3a9c2e"
#define DUMMY_OPENAI "pond-dummy-openai-1b2c3d4e5f"
#define JOB "job-broker-e2e"

static char dir_[] = "/tmp/test-broker-e2e.XXXXXX";
static pid_t server_ = -1, broker_ = -1;
static int up_port_, br_port_;
static const char *skip_;

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

static void write_text(const char *name, const char *text) {
        char p[256];
        FILE *f;

        snprintf(p, sizeof p, "%s/%s", dir_, name);
        f = fopen(p, "we");
        if (f) {
                fputs(text, f);
                fclose(f);
        }
}

static char *read_text(const char *name) {
        char p[256], *t = NULL;
        size_t n;

        snprintf(p, sizeof p, "%s/%s", dir_, name);
        return read_full_file(p, 16 << 20, &t, &n) < 0 ? NULL : t;
}

static pid_t spawn(char *const argv[], const char *log) {
        pid_t pid;

        fflush(stdout);         /* the TAP plan must not be written twice */
        pid = fork();

        if (pid == 0) {
                char p[256];
                snprintf(p, sizeof p, "%s/%s", dir_, log);
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

static void make_certs(void) {
        if (sh("cd %s && openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2 "
               "-subj /CN=pond-test-ca >/dev/null 2>&1 && "
               "openssl req -newkey rsa:2048 -nodes -keyout srv.key -out srv.csr -subj /CN=127.0.0.1 "
               ">/dev/null 2>&1 && printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\\n' > ext && "
               "openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out srv.pem "
               "-days 2 -extfile ext >/dev/null 2>&1", dir_) != 0)
                skip_ = "openssl could not make the test CA";
}

static void write_config(void) {
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
                 br_port_, dir_, up_port_, up_port_, up_port_);
        write_text("broker.json", c);
        write_text("prices.json", "{\"input_bytes_per_token\": 1, \"input_overhead_tokens\": 0,\n"
                   " \"default\": {\"input\": 100000, \"output\": 100000},\n"
                   " \"models\": {\"test-model\": {\"input\": 1000, \"output\": 10000}}}\n");
        write_text("real.key", REAL_KEY "\n");
}

static void setup(void) {
        const char *broker = getenv("POND_BROKER");
        char a[6][300];

        if (!broker || access(broker, X_OK) < 0)
                return (void) (skip_ = "POND_BROKER (the pond-broker binary) not set");
        if (sh("python3 -c 'import ssl' 2>/dev/null") != 0 || sh("openssl version >/dev/null 2>&1") != 0)
                return (void) (skip_ = "needs python3 with ssl and openssl");
        if (!mkdtemp(dir_))
                return (void) (skip_ = "mkdtemp failed");
        up_port_ = 20000 + getpid() % 20000;
        br_port_ = up_port_ + 1;
        make_certs();
        if (skip_)
                return;
        write_config();
        snprintf(a[0], sizeof a[0], "%s/tests/unit/broker-e2e-upstream.py", POND_SOURCE_ROOT);
        snprintf(a[1], sizeof a[1], "%d", up_port_);
        snprintf(a[2], sizeof a[2], "%s/srv.pem", dir_);
        snprintf(a[3], sizeof a[3], "%s/srv.key", dir_);
        snprintf(a[4], sizeof a[4], "%s/upstream.log", dir_);
        server_ = spawn((char *[]) { (char *) "python3", a[0], a[1], a[2], a[3], a[4], NULL }, "server.err");
        snprintf(a[0], sizeof a[0], "--config=%s/broker.json", dir_);
        snprintf(a[1], sizeof a[1], "--ca-file=%s/ca.pem", dir_);
        snprintf(a[2], sizeof a[2], "--stats-file=%s/stats.json", dir_);
        snprintf(a[3], sizeof a[3], "--secret=anthropic=%s/real.key", dir_);
        snprintf(a[4], sizeof a[4], "--secret=openai=%s/real.key", dir_);
        snprintf(a[5], sizeof a[5], "--secret=wronghost=%s/real.key", dir_);
        broker_ = spawn((char *[]) { (char *) broker, a[0], a[1], a[2], a[3], a[4], a[5],
                                     (char *) "--ceiling-grace=60", (char *) "--debug", NULL }, "broker.err");
        if (!wait_port(up_port_) || !wait_port(br_port_))
                skip_ = "the upstream or the broker did not start (see broker.err)";
}

/* One request through the broker; the client's JSON output, parsed. */
static json_object *call(const char *method, const char *path, const char *header, const char *value,
                         const char *body) {
        char out[64], *text;
        json_object *o = NULL;
        static int n;

        snprintf(out, sizeof out, "client-%d.json", ++n);
        if (sh("python3 %s/tests/unit/broker-e2e-client.py '%s' 'http://127.0.0.1:%d%s' '%s' '%s' '%s' > %s/%s",
               POND_SOURCE_ROOT, method, br_port_, path, header, value, body, dir_, out) != 0)
                return NULL;
        text = read_text(out);
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

#define MSG_BODY(max, stream) "{\"model\": \"test-model\", \"max_tokens\": " max ", " stream \
        "\"messages\": [{\"role\": \"user\", \"content\": \"hello\"}]}"

#define CHECK_SETUP()                                   \
        do {                                            \
                if (skip_)                              \
                        TEST_SKIP(skip_);               \
        } while (0)

TEST(a_setup) {
        setup();
        CHECK_SETUP();
}

TEST(b_messages_json) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *log = NULL;

        CHECK_SETUP();
        o = call("POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY, MSG_BODY("100", ""));
        ASSERT_EQ(200, status_of(o));
        ASSERT_CONTAINS("\"input_tokens\": 100", body_of(o));
        ASSERT_TRUE(!strstr(json_object_to_json_string(o), REAL_KEY));
        ASSERT_TRUE(!strstr(json_object_to_json_string(o), "session=upstream"));    /* Set-Cookie not passed */
        log = read_text("upstream.log");
        ASSERT_CONTAINS("\"x-api-key\": \"" REAL_KEY "\"", log);
        ASSERT_TRUE(!strstr(log, DUMMY_KEY));
        ASSERT_CONTAINS("\"host\": \"127.0.0.1:", log);
}

TEST(c_messages_sse_incremental) {
        _cleanup_json_ json_object *o = NULL;
        json_object *times;
        double first, last;
        size_t n;

        CHECK_SETUP();
        o = call("POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY, MSG_BODY("100", "\"stream\": true,"));
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

TEST(d_openai_sse_usage) {
        _cleanup_json_ json_object *o = NULL;
        _cleanup_free_ char *log = NULL;

        CHECK_SETUP();
        o = call("POST", "/openai/v1/chat/completions", "Authorization", "Bearer " DUMMY_OPENAI,
                 "{\"model\": \"test-model\", \"max_tokens\": 100, \"stream\": true, "
                 "\"stream_options\": {\"include_usage\": true}, \"messages\": []}");
        ASSERT_EQ(200, status_of(o));
        ASSERT_CONTAINS("[DONE]", body_of(o));
        log = read_text("upstream.log");
        ASSERT_CONTAINS("\"authorization\": \"Bearer " REAL_KEY "\"", log);
}

TEST(e_models_and_echo_scrubbed) {
        _cleanup_json_ json_object *o = NULL, *e = NULL;

        CHECK_SETUP();
        o = call("GET", "/anthropic/v1/models", "x-api-key", DUMMY_KEY, "");
        ASSERT_EQ(200, status_of(o));
        e = call("GET", "/anthropic/v1/models/echo", "x-api-key", DUMMY_KEY, "");
        ASSERT_EQ(200, status_of(e));
        ASSERT_CONTAINS("\"seen_key\": \"****", body_of(e));
        ASSERT_TRUE(!strstr(body_of(e), REAL_KEY));
}

TEST(f_refusals) {
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

        CHECK_SETUP();
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_json_ json_object *o = call(cases[i].method, cases[i].path, cases[i].header,
                                                     cases[i].value, cases[i].status == 400 ? "" : MSG_BODY("1", ""));
                ASSERT_EQ(cases[i].status, status_of(o));
                ASSERT_CONTAINS("pond_broker", body_of(o));
        }
}

TEST(g_tls_verification) {
        _cleanup_json_ json_object *o = NULL;

        CHECK_SETUP();
        /* 127.0.0.2 serves the same certificate, whose name is 127.0.0.1 only. */
        o = call("GET", "/wronghost/v1/models", "x-api-key", DUMMY_KEY, "");
        ASSERT_EQ(502, status_of(o));
        ASSERT_TRUE(!strstr(body_of(o), REAL_KEY));
}

TEST(h_ceiling) {
        _cleanup_json_ json_object *big = NULL, *small = NULL, *models = NULL;
        _cleanup_free_ char *stats = NULL;

        CHECK_SETUP();
        /* Spent 1.8 of 5 cents; worst case of max_tokens 1000 is 10+ cents: refused before crossing. */
        big = call("POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY, MSG_BODY("1000", ""));
        ASSERT_EQ(402, status_of(big));
        ASSERT_CONTAINS("cost ceiling", body_of(big));
        small = call("POST", "/anthropic/v1/messages", "x-api-key", DUMMY_KEY, MSG_BODY("10", ""));
        ASSERT_EQ(402, status_of(small));
        models = call("GET", "/anthropic/v1/models", "x-api-key", DUMMY_KEY, "");
        ASSERT_EQ(402, status_of(models));
        usleep(300 * 1000);
        stats = read_text("stats.json");
        ASSERT_CONTAINS("\"ceiling_hit\":true", stats);
}

TEST(i_stats_and_exit) {
        _cleanup_free_ char *stats = NULL;
        _cleanup_json_ json_object *o = NULL;
        json_object *v;
        int status = 0;

        CHECK_SETUP();
        kill(broker_, SIGTERM);
        ASSERT_EQ(broker_, waitpid(broker_, &status, 0));
        broker_ = -1;
        ASSERT_TRUE(WIFEXITED(status));
        ASSERT_EQ(BROKER_EXIT_CEILING, WEXITSTATUS(status));
        stats = read_text("stats.json");
        ASSERT_TRUE(stats && json_parse_strict(stats, strlen(stats), 1 << 20, 4, &o, NULL) >= 0);
        for (char *l = strtok(stats, "\n"); l; l = strtok(NULL, "\n"))
                printf("# %s\n", l);
        free(TAKE_PTR(stats));
        ASSERT_TRUE(json_object_object_get_ex(o, "requests", &v));
        ASSERT_EQ(15, json_object_get_int(v));
        ASSERT_TRUE(json_object_object_get_ex(o, "refused", &v));
        ASSERT_EQ(9, json_object_get_int(v));
        ASSERT_TRUE(json_object_object_get_ex(o, "input_tokens", &v));
        ASSERT_EQ(300, json_object_get_int(v));
        ASSERT_TRUE(json_object_object_get_ex(o, "output_tokens", &v));
        ASSERT_EQ(150, json_object_get_int(v));
        ASSERT_TRUE(json_object_object_get_ex(o, "cost_nanocents", &v));
        ASSERT_EQ(1800000000, json_object_get_int64(v));
        ASSERT_TRUE(json_object_object_get_ex(o, "ceiling_hit", &v));
        ASSERT_TRUE(json_object_get_boolean(v));
}

TEST(j_key_in_no_log) {
        _cleanup_free_ char *err = NULL, *stats = NULL;

        CHECK_SETUP();
        err = read_text("broker.err");
        stats = read_text("stats.json");
        ASSERT_TRUE(err && strstr(err, "broker-request") == NULL);   /* MESSAGE form, not field names */
        ASSERT_CONTAINS("-> 200", err);
        ASSERT_CONTAINS("-> 402: cost ceiling", err);
        ASSERT_TRUE(!strstr(err, REAL_KEY) && !strstr(stats, REAL_KEY));
        /* And the journal, where there is one. */
        if (sh("journalctl -q -n1 >/dev/null 2>&1") == 0)
                ASSERT_TRUE(sh("journalctl -q -o export POND_JOB_ID=" JOB " 2>/dev/null | grep -q '" REAL_KEY "'")
                            != 0);
}

TEST(z_cleanup) {
        if (broker_ > 0) {
                kill(broker_, SIGKILL);
                waitpid(broker_, NULL, 0);
        }
        if (server_ > 0) {
                kill(server_, SIGKILL);
                waitpid(server_, NULL, 0);
        }
        if (dir_[strlen(dir_) - 1] != 'X' && !getenv("POND_TEST_KEEP"))
                (void) sh("rm -rf %s", dir_);
}
